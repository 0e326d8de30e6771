//! Per-thread rings and the registry that lets a dump see all of them.
//!
//! A thread's ring is created on its first span (the only allocation it
//! ever makes), registered in a global list, and never freed, so a dump sees
//! the rings of threads that have already exited.

use std::boxed::Box;
use std::cell::Cell;
use std::string::String;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

use ringtrace_format::Anchor;

use crate::os;
use crate::ring::{Ring, Slot};

/// Default ring capacity in records (24 bytes each): 1.5 MiB per thread.
pub const DEFAULT_RING_RECORDS: usize = 1 << 16;
/// Environment variable that sets the ring capacity in records (rounded up to a power of two).
pub const RING_RECORDS_ENV: &str = "RINGTRACE_RING_RECORDS";

/// One thread's ring and what a dump needs to know about the thread.
#[derive(Debug)]
pub(crate) struct ThreadRing {
    pub ring: Ring,
    pub tid: u64,
    pub name: String,
    pub exited: AtomicBool,
}

static REGISTRY: Mutex<Vec<&'static ThreadRing>> = Mutex::new(Vec::new());
static START: OnceLock<Anchor> = OnceLock::new();

std::thread_local! {
    // Const-initialised and without a destructor: reading it is one TLS load.
    static CURRENT: Cell<*const ThreadRing> = const { Cell::new(std::ptr::null()) };
    // Marks the ring as belonging to an exited thread; touched only on the first span.
    static EXIT: ExitMark = const { ExitMark(Cell::new(std::ptr::null())) };
}

struct ExitMark(Cell<*const ThreadRing>);

impl Drop for ExitMark {
    fn drop(&mut self) {
        // SAFETY: the pointer, if set, came from a leaked `Box<ThreadRing>` that is never freed.
        if let Some(t) = unsafe { self.0.get().as_ref() } {
            t.exited.store(true, Ordering::Release);
        }
    }
}

/// Writes one finished span into the calling thread's ring.
#[inline(always)]
pub fn record(key: u64, enter: u64, exit: u64) {
    let current = CURRENT.with(Cell::get);
    // SAFETY: CURRENT only ever holds null or a leaked, never-freed `ThreadRing`.
    match unsafe { current.as_ref() } {
        Some(t) => t.ring.push(key, enter, exit),
        None => record_first(key, enter, exit),
    }
}

#[cold]
#[inline(never)]
fn record_first(key: u64, enter: u64, exit: u64) {
    current_thread_ring().ring.push(key, enter, exit);
}

/// The calling thread's ring, created and registered on first use.
pub(crate) fn current_thread_ring() -> &'static ThreadRing {
    let current = CURRENT.with(Cell::get);
    // SAFETY: as in `record`.
    if let Some(t) = unsafe { current.as_ref() } {
        return t;
    }
    start();
    let capacity = ring_records();
    let slots: &'static [Slot] = Box::leak((0..capacity).map(|_| Slot::new()).collect());
    let thread = std::thread::current();
    let name = match thread.name() {
        Some(name) => name.into(),
        None => String::new(),
    };
    let t: &'static ThreadRing = Box::leak(Box::new(ThreadRing {
        ring: Ring::new(slots),
        tid: os::thread_id(),
        name,
        exited: AtomicBool::new(false),
    }));
    CURRENT.with(|c| c.set(t));
    // During thread teardown the mark may already be gone; the ring then stays "running".
    let _ = EXIT.try_with(|m| m.0.set(t));
    lock_registry().push(t);
    t
}

pub(crate) fn lock_registry() -> std::sync::MutexGuard<'static, Vec<&'static ThreadRing>> {
    // A panic while holding the lock cannot leave the list half-updated (push is the only mutation).
    REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Takes the start-of-recording time anchor now, if it was not taken yet.
/// Called implicitly by the first span of the process; call it earlier to
/// make the rate derivation span the whole run.
pub fn start() {
    START.get_or_init(os::anchor);
}

pub(crate) fn start_anchor() -> Option<Anchor> {
    START.get().copied()
}

fn ring_records() -> usize {
    static RECORDS: OnceLock<usize> = OnceLock::new();
    *RECORDS.get_or_init(|| {
        std::env::var(RING_RECORDS_ENV)
            .ok()
            .and_then(|v| v.trim().parse::<usize>().ok())
            .map(|n| n.clamp(16, 1 << 28).next_power_of_two())
            .unwrap_or(DEFAULT_RING_RECORDS)
    })
}

/// Whether `t` is the calling thread's ring.
pub(crate) fn is_current(t: &ThreadRing) -> bool {
    std::ptr::eq(CURRENT.with(Cell::get), t)
}
