//! Per-thread rings, their configuration, the runtime switches, and the
//! registry that lets a dump see every ring.
//!
//! A thread's ring is created on its first span (the only allocation the
//! thread ever makes for recording) and registered in a global list. When
//! the thread exits, its ring is marked exited and stays registered until a
//! dump has written it; that dump then frees it.

use std::boxed::Box;
use std::cell::Cell;
use std::string::String;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::vec::Vec;

use ringtrace_format::Anchor;

use crate::ring::{Mode, Slot};
use crate::track::Track;
use crate::{directory, os};

/// Default ring capacity in records (24 bytes each): 1.5 MiB per thread.
pub const DEFAULT_RING_RECORDS: usize = 1 << 16;
/// The smallest ring: 16 records, 384 bytes.
pub const MIN_RING_RECORDS: usize = 16;
/// The largest ring: 2^28 records, 6 GiB.
pub const MAX_RING_RECORDS: usize = 1 << 28;
/// Environment variable: ring capacity in records (rounded up to a power of two).
pub const RING_RECORDS_ENV: &str = "RINGTRACE_RING_RECORDS";
/// Environment variable: `overwrite` (default) or `stop` (stop when full).
pub const RING_MODE_ENV: &str = "RINGTRACE_RING_MODE";

/// How a thread's ring is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Capacity in records; rounded up to a power of two and clamped to
    /// [`MIN_RING_RECORDS`]..=[`MAX_RING_RECORDS`].
    pub records: usize,
    /// What the ring does when full.
    pub mode: Mode,
}

impl Default for RingConfig {
    fn default() -> Self {
        RingConfig { records: DEFAULT_RING_RECORDS, mode: Mode::Overwrite }
    }
}

impl RingConfig {
    fn records_rounded(&self) -> usize {
        self.records.clamp(MIN_RING_RECORDS, MAX_RING_RECORDS).next_power_of_two()
    }
}

/// The calling thread already has a ring; its configuration can no longer change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AlreadyRecording;

impl core::fmt::Display for AlreadyRecording {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("this thread has already recorded a span; configure its ring before its first span")
    }
}

impl std::error::Error for AlreadyRecording {}

/// One thread's ring and what a dump needs to know about the thread.
#[derive(Debug)]
pub(crate) struct ThreadRing {
    pub track: Track,
    pub tid: u64,
    pub name: String,
    pub exited: AtomicBool,
    /// Unique in the process (thread ids are reused): a stream's chunks name their ring by it.
    pub id: u64,
    /// Drained by the running stream (made while one ran).
    pub streamed: bool,
}

/// The next [`ThreadRing::id`].
fn next_ring_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl Drop for ThreadRing {
    /// Runs only under the registry lock: a ring is dropped by its removal from the registry.
    fn drop(&mut self) {
        directory::unlink(&self.track);
        let slots: *const [Slot] = self.track.ring().slots();
        // SAFETY: the slots were allocated as a `Box<[Slot]>` and leaked in
        // `current_thread_ring`; the ring, their only user, is being dropped.
        drop(unsafe { Box::from_raw(slots.cast_mut()) });
    }
}

/// Where spans go once their thread's ring is gone (during thread teardown):
/// a one-slot ring that keeps nothing after its first record.
static DISCARD: Track = Track::with_mode(&DISCARD_SLOTS, Mode::StopWhenFull);
static DISCARD_SLOTS: [Slot; 1] = [Slot::new()];

/// The registry: every ring a dump must see. Owned boxes, freed by the dump
/// that writes an exited thread's ring.
#[expect(clippy::vec_box, reason = "threads point into their ThreadRing; a box keeps it in place as the Vec grows")]
static REGISTRY: Mutex<Vec<Box<ThreadRing>>> = Mutex::new(Vec::new());
static START: OnceLock<Anchor> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(true);
/// Process default ring size and mode; 0 / `u8::MAX` mean "not set by the program".
static DEFAULT_RECORDS: AtomicUsize = AtomicUsize::new(0);
static DEFAULT_MODE: AtomicU8 = AtomicU8::new(u8::MAX);

std::thread_local! {
    // Const-initialised and without destructors: reading them is one TLS load each.
    static CURRENT: Cell<*const Track> = const { Cell::new(std::ptr::null()) };
    static THREAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static THREAD_CONFIG: Cell<Option<RingConfig>> = const { Cell::new(None) };
    // Retires the ring when the thread exits; touched only on the first span.
    static EXIT: ExitMark = const { ExitMark(Cell::new(std::ptr::null())) };
}

struct ExitMark(Cell<*const ThreadRing>);

impl Drop for ExitMark {
    fn drop(&mut self) {
        // Spans recorded by later TLS destructors go nowhere, so the ring is
        // never written again once marked exited.
        let _ = CURRENT.try_with(|c| c.set(&DISCARD));
        // SAFETY: the pointer, if set, is a registered ThreadRing; it is freed
        // only by a dump after it sees `exited`, which is set just below.
        if let Some(t) = unsafe { self.0.get().as_ref() } {
            t.track.entry().mark_exited();
            t.exited.store(true, Ordering::Release);
        }
    }
}

/// Whether spans are recorded on this thread now (global and thread switch both on).
#[inline(always)]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed) && THREAD_ENABLED.with(Cell::get)
}

/// The calling thread's track if recording is on (creating it on first use).
#[inline(always)]
pub fn current() -> Option<&'static Track> {
    if !enabled() {
        return None;
    }
    let current = CURRENT.with(Cell::get);
    // SAFETY: CURRENT holds null, `&DISCARD`, or the track of a registered
    // ThreadRing, which is not freed while its thread runs (see ExitMark).
    match unsafe { current.as_ref() } {
        Some(track) => Some(track),
        None => Some(register_current_thread()),
    }
}

/// The calling thread's track if it has one and recording is on (never
/// creating one: the hooks' fast path, which leaves that to its slow path).
#[cfg(feature = "c-api")]
#[inline(always)]
pub(crate) fn registered() -> Option<&'static Track> {
    if !enabled() {
        return None;
    }
    // SAFETY: as in `current`.
    unsafe { CURRENT.with(Cell::get).as_ref() }
}

/// The recorder's cost, measured on a scratch ring as large as the largest
/// ring registered (at least 64 records, at most 2^22: 96 MiB), made for the
/// measurement and freed after it: see [`crate::calibrate`]. The default
/// clock's spans write the whole ring once, as a program's spans do; the
/// other clocks' only 4096.
pub(crate) fn calibration() -> [ringtrace_format::Calibration; 3] {
    use crate::calibrate::measure;
    use crate::clock::{Clock, DEFAULT_MODE, DefaultClock, Fast, Ordered, Serialized};
    use ringtrace_format::{Calibration, ClockMode};
    /// Mode `mode`'s entry: the default clock's through the whole ring, the others' 4096 spans.
    fn entry<C: Clock>(mode: ClockMode, scratch: &Track, records: usize) -> Calibration {
        if mode == DEFAULT_MODE {
            measure::<DefaultClock>(mode, scratch, records.max(4096))
        } else {
            measure::<C>(mode, scratch, 4096)
        }
    }
    let largest = lock_registry().iter().map(|t| t.track.ring().capacity()).max().unwrap_or(64);
    let records = largest.next_power_of_two().clamp(64, 1 << 22);
    let slots = allocate_ring(records);
    // The scratch track lives only in this block: the ring is freed after it.
    let calibration = {
        let scratch = Track::new(slots);
        [
            entry::<Fast>(ClockMode::Fast, &scratch, records),
            entry::<Ordered>(ClockMode::Ordered, &scratch, records),
            entry::<Serialized>(ClockMode::Serialized, &scratch, records),
        ]
    };
    free_ring(slots);
    calibration
}

/// Frees a ring [`allocate_ring`] made, once nothing refers to it.
fn free_ring(slots: &'static [Slot]) {
    // SAFETY: `slots` came from `Box::leak` in `allocate_ring`, and the only track made over it
    // was dropped by the caller: nothing else refers to it.
    drop(unsafe { Box::from_raw(slots as *const [Slot] as *mut [Slot]) });
}

/// A ring's slots, every page already written, so the first lap pays no
/// page fault (one every 170 records otherwise). Rings of 2 MiB and more are
/// offered to transparent huge pages before they are written (where the
/// kernel gives them: fewer faults and TLB misses).
fn allocate_ring(records: usize) -> &'static [Slot] {
    let mut slots = Box::<[Slot]>::new_uninit_slice(records);
    let bytes = core::mem::size_of_val(&*slots);
    if bytes >= 2 << 20 {
        // SAFETY: advice on memory this process owns and has not written yet; it changes no
        // contents, and failure is harmless.
        unsafe { libc::madvise(slots.as_mut_ptr().cast(), bytes, libc::MADV_HUGEPAGE) };
    }
    for slot in slots.iter_mut() {
        slot.write(Slot::new());
    }
    // SAFETY: every slot was written just above.
    Box::leak(unsafe { slots.assume_init() })
}

/// Thread ids of [`context_track`]s count from here (above any Linux tid, below 2^32).
pub const CONTEXT_TID_BASE: u64 = 1 << 30;

/// A track of its own for an interrupting context — a signal handler, or
/// any code that may run in the middle of another span's recording on the
/// same thread — registered so dumps include it (as thread
/// `CONTEXT_TID_BASE + n`, named `name`). Use it with [`interrupt`].
pub fn context_track(name: &str) -> &'static Track {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    start();
    let config = process_default();
    let slots = allocate_ring(config.records_rounded());
    let tid = CONTEXT_TID_BASE + NEXT.fetch_add(1, Ordering::Relaxed) as u64;
    let t = Box::new(ThreadRing {
        track: Track::with_mode(slots, config.mode),
        tid,
        name: name.into(),
        exited: AtomicBool::new(false),
        id: next_ring_id(),
        streamed: false,
    });
    let track: *const Track = &t.track;
    register(t);
    // SAFETY: the ThreadRing is boxed (it does not move) and registered; a
    // dump frees only rings marked exited, which this one never is.
    unsafe { &*track }
}

/// While alive, the calling thread's spans go to another track: see [`interrupt`].
#[must_use = "spans go to the interrupt's track only while this guard lives"]
#[derive(Debug)]
pub struct Interrupt {
    previous: *const Track,
}

/// Sends the calling thread's spans to `track` until the returned guard is
/// dropped: the first thing an interrupting context (a signal handler) does.
/// Spans already begun end in their own track. Contexts nest — a handler
/// finishes before the code it interrupted resumes — so the switch is a
/// save and restore of one thread-local pointer: async-signal-safe, no lock,
/// no atomic read-modify-write.
pub fn interrupt(track: &'static Track) -> Interrupt {
    Interrupt { previous: CURRENT.with(|c| c.replace(track)) }
}

impl Drop for Interrupt {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Turns recording on or off for every thread. Spans already running finish normally.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Turns recording on or off for the calling thread.
pub fn set_thread_enabled(on: bool) {
    THREAD_ENABLED.with(|c| c.set(on));
}

/// Sets the ring size and mode for threads that have not recorded yet.
/// Overrides the environment variables [`RING_RECORDS_ENV`] and [`RING_MODE_ENV`].
pub fn set_default_ring(config: RingConfig) {
    DEFAULT_RECORDS.store(config.records_rounded(), Ordering::Relaxed);
    DEFAULT_MODE.store(config.mode as u8, Ordering::Relaxed);
}

/// Sets the calling thread's ring size and mode; must come before its first span.
pub fn set_thread_ring(config: RingConfig) -> Result<(), AlreadyRecording> {
    if !CURRENT.with(Cell::get).is_null() {
        return Err(AlreadyRecording);
    }
    THREAD_CONFIG.with(|c| c.set(Some(config)));
    Ok(())
}

/// Creates and registers the calling thread's track.
#[cold]
#[inline(never)]
fn register_current_thread() -> &'static Track {
    start();
    stream_from_env();
    let mut config = THREAD_CONFIG.with(Cell::get).unwrap_or_else(process_default);
    // While a stream runs, a thread's ring is one it drains: it never overwrites.
    let streamed = crate::stream::active();
    if streamed {
        config.mode = Mode::StopWhenFull;
    }
    let slots = allocate_ring(config.records_rounded());
    // A Rust thread's name, else the kernel's (threads made by C, unnamed Rust threads).
    let name = std::thread::current().name().map(String::from).unwrap_or_else(os::thread_name);
    let track = match crate::stream::own_drain() {
        Some(drain) if streamed => Track::drained_by(slots, drain),
        _ => Track::with_mode(slots, config.mode),
    };
    let t = Box::new(ThreadRing {
        track,
        tid: os::thread_id(),
        name,
        exited: AtomicBool::new(false),
        id: next_ring_id(),
        streamed,
    });
    let track: *const Track = &t.track;
    let ptr: *const ThreadRing = &*t;
    register(t);
    CURRENT.with(|c| c.set(track));
    // During thread teardown the mark may already be gone: the ring then is
    // never marked exited and stays registered (no use-after-free, one leak).
    let _ = EXIT.try_with(|m| m.0.set(ptr));
    // SAFETY: the box now lives in the registry, which frees it only after
    // this thread has exited (see ExitMark).
    unsafe { &*track }
}

/// Starts the stream `RINGTRACE_STREAM` names, once, at the process's
/// first span; it is finished at exit.
fn stream_from_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let Some(path) = std::env::var_os(crate::stream::STREAM_ENV).filter(|p| !p.is_empty()) else { return };
        match crate::stream::start(std::path::Path::new(&path)) {
            Ok(()) => {
                extern "C" fn finish_at_exit() {
                    if let Err(e) = crate::stream::finish() {
                        std::eprintln!("ringtrace: cannot complete the stream: {e}");
                    }
                }
                // SAFETY: registers a plain extern "C" function with no arguments.
                unsafe { libc::atexit(finish_at_exit) };
            }
            Err(e) => std::eprintln!("ringtrace: cannot stream to {}: {e}", std::path::Path::new(&path).display()),
        }
    });
}

fn process_default() -> RingConfig {
    static FROM_ENV: OnceLock<RingConfig> = OnceLock::new();
    let env = *FROM_ENV.get_or_init(|| {
        let (records, mode) = (std::env::var_os(RING_RECORDS_ENV), std::env::var_os(RING_MODE_ENV));
        config_from_env(records.as_deref(), mode.as_deref(), |line| {
            use std::io::Write;
            // Not `eprintln!`, which panics where stderr cannot be written: a line lost is no harm.
            let _ = std::writeln!(std::io::stderr(), "ringtrace: {line}");
        })
    });
    let records = match DEFAULT_RECORDS.load(Ordering::Relaxed) {
        0 => env.records,
        n => n,
    };
    let mode = match DEFAULT_MODE.load(Ordering::Relaxed) {
        m if m == Mode::Overwrite as u8 => Mode::Overwrite,
        m if m == Mode::StopWhenFull as u8 => Mode::StopWhenFull,
        _ => env.mode,
    };
    RingConfig { records, mode }
}

/// The ring configuration [`RING_RECORDS_ENV`] and [`RING_MODE_ENV`] ask for, given their values
/// (unset or empty: the default). Each value not understood is passed to `warn` as one line naming
/// the variable, what it expects and what is used instead (the default, or the nearest size in range).
fn config_from_env(
    records: Option<&std::ffi::OsStr>,
    mode: Option<&std::ffi::OsStr>,
    mut warn: impl FnMut(core::fmt::Arguments<'_>),
) -> RingConfig {
    let mut config = RingConfig::default();
    if let Some(value) = records.map(|v| v.to_string_lossy()).filter(|v| !v.trim().is_empty()) {
        match value.trim().parse::<usize>() {
            Ok(n) => {
                config.records = n.clamp(MIN_RING_RECORDS, MAX_RING_RECORDS);
                if config.records != n {
                    let what = if n > MAX_RING_RECORDS { "more than the largest" } else { "less than the smallest" };
                    let used = config.records;
                    warn(format_args!(
                        "{RING_RECORDS_ENV}={value} is {what} ring, {used} records; recording with {used}"
                    ));
                }
            }
            Err(_) => warn(format_args!(
                "{RING_RECORDS_ENV}={value} is not a number of records (a whole number from {MIN_RING_RECORDS} \
                 to {MAX_RING_RECORDS}, rounded up to a power of two); recording with {DEFAULT_RING_RECORDS}"
            )),
        }
    }
    if let Some(value) = mode.map(|v| v.to_string_lossy()) {
        match value.trim() {
            "stop" => config.mode = Mode::StopWhenFull,
            "overwrite" | "" => config.mode = Mode::Overwrite,
            _ => warn(format_args!(
                "{RING_MODE_ENV}={value} is neither `overwrite` (keep the latest spans) nor `stop` (keep the \
                 first); recording with overwrite"
            )),
        }
    }
    config
}

/// Adds `t` to the registry and its entry to the ring directory, with a
/// fresh latest anchor (a few µs, once per thread), so a core of a run whose
/// threads came and went has the counter's rate.
fn register(t: Box<ThreadRing>) {
    let anchor = os::anchor();
    let mut rings = lock_registry();
    rings.push(t);
    if let Some(t) = rings.last() {
        directory::link(&t.track, t.tid, t.name.as_bytes());
    }
    directory::set_latest(anchor);
}

#[expect(clippy::vec_box, reason = "see REGISTRY")]
pub(crate) fn lock_registry() -> MutexGuard<'static, Vec<Box<ThreadRing>>> {
    // A panic while holding the lock cannot leave the list half-updated.
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes the start-of-recording time anchor now, if it was not taken yet.
/// Called implicitly by the first span of the process; call it earlier to
/// make the rate derivation span the whole run.
pub fn start() {
    START.get_or_init(|| {
        let anchor = os::anchor();
        directory::set_clock(&crate::clock::info(), anchor);
        anchor
    });
}

pub(crate) fn start_anchor() -> Option<Anchor> {
    START.get().copied()
}

/// The calling thread's ring, if it has one.
pub(crate) fn current_thread_ring() -> Option<&'static ThreadRing> {
    let ptr = EXIT.try_with(|m| m.0.get()).ok()?;
    // SAFETY: the pointer, if set, is this thread's registered ThreadRing, freed only after the
    // thread has exited (see ExitMark); the thread asking is running.
    unsafe { ptr.as_ref() }
}

/// Whether `t` is the calling thread's ring.
pub(crate) fn is_current(t: &ThreadRing) -> bool {
    std::ptr::eq(CURRENT.with(Cell::get), &t.track)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::string::ToString;
    use std::vec;

    /// The configuration the two variables' values give, and the lines warned.
    fn from_env(records: Option<&str>, mode: Option<&str>) -> (RingConfig, Vec<String>) {
        let mut lines = Vec::new();
        let config = config_from_env(records.map(OsStr::new), mode.map(OsStr::new), |l| lines.push(l.to_string()));
        (config, lines)
    }

    #[test]
    fn ring_variables_are_read_and_a_value_that_is_not_one_is_said_with_what_is_used() {
        let default = RingConfig::default();
        assert_eq!(from_env(None, None), (default, vec![]));
        let stop = RingConfig { records: 1000, mode: Mode::StopWhenFull };
        assert_eq!(from_env(Some(" 1000 "), Some("stop")), (stop, vec![]));
        assert_eq!(from_env(None, Some("overwrite")), (default, vec![]));
        assert_eq!(from_env(Some(""), Some("")), (default, vec![]));

        let (config, lines) = from_env(Some("1M"), Some("keep"));
        assert_eq!(config, default);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].starts_with("RINGTRACE_RING_RECORDS=1M is not a number of records"), "{}", lines[0]);
        assert!(lines[0].ends_with("recording with 65536"), "{}", lines[0]);
        assert!(lines[1].starts_with("RINGTRACE_RING_MODE=keep is neither `overwrite`"), "{}", lines[1]);
        assert!(lines[1].ends_with("recording with overwrite"), "{}", lines[1]);

        let (config, lines) = from_env(Some("4"), None);
        assert_eq!((config.records, config.records_rounded()), (16, 16));
        assert!(lines[0].ends_with("recording with 16"), "{lines:?}");
        let (config, lines) = from_env(Some("1000000000"), None);
        assert_eq!(config.records_rounded(), 1 << 28);
        assert!(lines[0].contains("more than the largest ring"), "{lines:?}");
    }
}
