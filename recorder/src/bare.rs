//! Dumps without an operating system, with no allocation, through any byte
//! [`Sink`]: a UART ([`ByteSink`]), semihosting (`semihosting::HostFile`
//! on Cortex-M and RISC-V), RTT, a buffer ([`SliceSink`]).
//!
//! A program without `std` says what a hosted recorder finds out itself:
//! its name, its counter (a [`Clock`]), its tracks (the main context and each
//! interrupt level that records), and where its code is ([`image`], so
//! `rtconv --exe firmware.elf` names code-address keys from the ELF's DWARF).
//! [`Dumper`] puts that together once and writes every track into one dump,
//! straight from the rings; [`write_dump`] writes one track through a copy,
//! for a dump taken while another core may still record. Named spans need
//! nothing: the `ringtrace_sites` section goes into every dump. The dump
//! holds compact 12-byte records when the counter has at most 32 bits, and
//! always on targets without 64-bit atomics (32-bit microcontrollers), whose
//! ring words are 32 bits.
//!
//! A firmware that runs for hours streams instead of dumping at the end:
//! [`stream::Streamer`] sends the same tracks, while it runs, to an RTT
//! up-channel ([`rtt::Rtt`]) or a UART, a few bytes a span.
//!
//! ```
//! use ringtrace::bare::{Target, write_dump};
//! use ringtrace::ring::Slot;
//! use ringtrace_format::{Anchor, ClockInfo, CounterKind, RateSource, Record, SliceSink};
//!
//! static SLOTS: [Slot; 64] = [const { Slot::new() }; 64];
//! static TRACK: ringtrace::Track = ringtrace::Track::new(&SLOTS);
//!
//! let clock = ClockInfo { counter: CounterKind::User, counter_bits: 32, nominal_hz: 64_000_000, rate_source: RateSource::User };
//! let target = Target { process_name: b"firmware", thread_name: b"main", clock, anchors: &[Anchor::default()], modules: &[] };
//! let mut out = [0u8; 4096];
//! let mut scratch = [Record::default(); 64];
//! let sink = write_dump(SliceSink::new(&mut out), &TRACK, &mut scratch, &target).unwrap();
//! assert!(ringtrace_format::Dump::parse(sink.written()).is_ok());
//! ```

use ringtrace_format::layout::COMPACT_RECORD_SIZE;
/// What a firmware needs of the format crate, so the recorder is its one dependency.
pub use ringtrace_format::{Anchor, ClockInfo, CounterKind, Module, RateSource, Record, Sink, SliceSink, WriteError};
use ringtrace_format::{CompactRecord, DumpReason, MetaInfo, RingInfo, Writer};

pub mod rtt;
#[cfg(all(target_os = "none", any(target_arch = "arm", target_arch = "riscv32", target_arch = "riscv64")))]
pub mod semihosting;
pub mod stream;

use crate::clock::Clock;
use crate::open::OPEN_DEPTH;
use crate::ring::Word;
use crate::track::Track;

/// What a program without an OS tells its dump about itself.
#[derive(Clone, Copy, Debug)]
pub struct Target<'a> {
    /// The program's name.
    pub process_name: &'a [u8],
    /// The name of the one track's context ("main", a task name).
    pub thread_name: &'a [u8],
    /// The counter the spans were timed with (see [`crate::clock::Clock::info`]).
    pub clock: ClockInfo,
    /// Time anchors: at least one, and with `nominal_hz` unknown, two apart in time.
    pub anchors: &'a [Anchor],
    /// Where code is loaded; empty if keys are only site descriptors.
    pub modules: &'a [Module<'a>],
}

/// Writes a complete dump of `track` to `sink` and returns the sink. The
/// ring is copied into `scratch` first (records beyond its length are left
/// out, counted as lost); spans may keep being recorded meanwhile, from
/// interrupts too, and any record overwritten during the copy is counted as
/// lost, never written torn.
pub fn write_dump<S: Sink>(
    sink: S,
    track: &Track,
    scratch: &mut [Record],
    target: &Target<'_>,
) -> Result<S, WriteError<S::Error>> {
    let (mut w, compact) = begin(sink, target.process_name, target.clock, target.anchors, target.modules)?;
    // Open spans first, then finished ones: a span ending in between is in
    // both (rtconv drops the open copy), never in neither.
    let mut open = [(0u64, 0u64); OPEN_DEPTH];
    let open_count = track.open().snapshot(&mut open).unwrap_or(0);
    let snap = track.ring().snapshot(scratch, true);
    let info = ring_info(track, &snap, 0, target.thread_name);
    let records = scratch[..snap.copied].iter().copied();
    ring_section(&mut w, &info, compact, snap.copied, records, &open[..open_count])?;
    w.finish()
}

/// A dump of several tracks — the main context and each interrupt level
/// that records — in one file, written straight from the rings with no
/// scratch copy. Recording is paused while it writes (and then resumed as it
/// was), so on a single core no writer runs meanwhile; spans that would
/// start during the dump are not recorded. Build it once, as a `const` or
/// `static` if you like, and write it whenever a dump is wanted:
///
/// ```
/// use ringtrace::bare::{Dumper, SliceSink};
/// use ringtrace::clock::Clock;
/// use ringtrace::ring::Slot;
/// use ringtrace::Track;
///
/// static MAIN_SLOTS: [Slot; 64] = [const { Slot::new() }; 64];
/// static MAIN: Track = Track::new(&MAIN_SLOTS);
/// static IRQ_SLOTS: [Slot; 16] = [const { Slot::new() }; 16];
/// static IRQ: Track = Track::new(&IRQ_SLOTS);
/// static TRACKS: [(&[u8], &Track); 2] = [(b"main", &MAIN), (b"SysTick", &IRQ)];
///
/// let dumper = Dumper::new::<ringtrace::clock::Fast>(b"firmware").tracks(&TRACKS);
/// let mut out = [0u8; 4096];
/// let sink = dumper.write(SliceSink::new(&mut out)).unwrap();
/// let dump = ringtrace_format::Dump::parse(sink.written()).unwrap();
/// assert_eq!(dump.sections().filter(|s| s.as_ref().unwrap().kind == ringtrace_format::SectionKind::Ring).count(), 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Dumper<'a> {
    process_name: &'a [u8],
    /// The clock's description and its reading, taken when the dump is written.
    clock: fn() -> ClockInfo,
    now: fn() -> u64,
    anchors: &'a [Anchor],
    modules: &'a [Module<'a>],
    tracks: &'a [(&'a [u8], &'a Track)],
}

impl<'a> Dumper<'a> {
    /// A dump of the program `process_name`, whose spans were timed by the
    /// clock `C` (`ringtrace::clock::SysTick`, or your own).
    pub const fn new<C: Clock>(process_name: &'a [u8]) -> Self {
        Dumper { process_name, clock: C::info, now: C::now, anchors: &[], modules: &[], tracks: &[] }
    }

    /// Time anchors. Without any, the dump gets one taken as it is written
    /// (the counter's reading, at time 0), which with the clock's nominal rate
    /// places every span: time then counts back from the dump.
    pub const fn anchors(self, anchors: &'a [Anchor]) -> Self {
        Dumper { anchors, ..self }
    }

    /// Where the code is, so `rtconv --exe firmware.elf` names code-address keys from its DWARF
    /// (see [`image`]).
    pub const fn modules(self, modules: &'a [Module<'a>]) -> Self {
        Dumper { modules, ..self }
    }

    /// The tracks, each with the name its context is shown under; the first is the main one.
    /// Each becomes a thread of the dump (tid 1, 2, …), all in one process.
    pub const fn tracks(self, tracks: &'a [(&'a [u8], &'a Track)]) -> Self {
        Dumper { tracks, ..self }
    }

    /// Lists the tracks in the ring directory (the exported `ringtrace_directory`), with the
    /// clock and an anchor taken now, so a debugger's RAM image or a whole-machine core read
    /// at any later instant — a HardFault, a watchdog, a lock-up — converts with `rtconv
    /// convert --elf firmware.elf --memory ram.bin@0x20000000`, no dump written. Call it once,
    /// at start-up, from one context, once the clock is configured (spans may already be
    /// recording): it is not safe against itself (a track already listed is left as it is).
    /// Each track is thread 1, 2, … as in [`write`](Self::write)'s dumps. It costs nothing
    /// later: spans write what they wrote.
    pub fn publish(&self)
    where
        'a: 'static,
    {
        let clock = (self.clock)();
        let anchor = match self.anchors {
            [first, ..] => *first,
            [] => Anchor { ticks: (self.now)(), mono_ns: 0, real_ns: 0 },
        };
        crate::directory::set_clock(&clock, anchor);
        for (tid, &(name, track)) in (1u64..).zip(self.tracks) {
            crate::directory::link(track, tid, name);
        }
    }

    /// Writes the dump to `sink` and returns the sink.
    pub fn write<S: Sink>(&self, sink: S) -> Result<S, WriteError<S::Error>> {
        let was = crate::enabled();
        crate::set_enabled(false);
        let written = self.write_paused(sink);
        crate::set_enabled(was);
        written
    }

    fn write_paused<S: Sink>(&self, sink: S) -> Result<S, WriteError<S::Error>> {
        let at_dump = [Anchor { ticks: (self.now)(), mono_ns: 0, real_ns: 0 }];
        let anchors = if self.anchors.is_empty() { &at_dump[..] } else { self.anchors };
        let (mut w, compact) = begin(sink, self.process_name, (self.clock)(), anchors, self.modules)?;
        for (tid, &(name, track)) in (1u64..).zip(self.tracks) {
            let mut open = [(0u64, 0u64); OPEN_DEPTH];
            let open_count = track.open().snapshot(&mut open).unwrap_or(0);
            let (snap, records) = track.ring().quiescent();
            let info = ring_info(track, &snap, tid, name);
            ring_section(&mut w, &info, compact, snap.copied, records, &open[..open_count])?;
        }
        w.finish()
    }
}

/// The module of a statically linked firmware image loaded where its ELF
/// file says (bias 0): from the linker's symbols for its code, e.g.
/// `image(&raw const __stext, &raw const __etext, b"firmware.elf")` with
/// cortex-m-rt, or `_stext`/`_etext` with riscv-rt.
pub fn image<'a>(start: *const u8, end: *const u8, path: &'a [u8]) -> Module<'a> {
    let (start, end) = (start as usize as u64, end as usize as u64);
    Module { start, end, bias: 0, flags: ringtrace_format::layout::MODULE_FLAG_MAIN, build_id: &[], path }
}

/// Starts a dump: meta, clock (narrowed to 32 bits where records are compact), modules and sites.
/// Returns the writer and whether records are compact.
fn begin<S: Sink>(
    sink: S,
    process_name: &[u8],
    clock: ClockInfo,
    anchors: &[Anchor],
    modules: &[Module<'_>],
) -> Result<(Writer<S>, bool), WriteError<S::Error>> {
    let mut w = Writer::new(sink, core::mem::size_of::<usize>() as u8)?;
    w.meta(&MetaInfo {
        pid: 0,
        reason: DumpReason::Requested,
        producer: b"ringtrace",
        producer_version: env!("CARGO_PKG_VERSION").as_bytes(),
        process_name,
    })?;
    // Compact records where the recorder's words are 32 bits (so are the
    // counter readings it kept), or where the counter is 32 bits or fewer.
    let compact = ringtrace_format::layout::records_compact(core::mem::size_of::<Word>(), clock.counter_bits);
    let mut clock = clock;
    if compact {
        clock.counter_bits = clock.counter_bits.min(32);
    }
    w.clock(&clock, anchors)?;
    w.modules(modules)?;
    let (base, bytes) = crate::sites::section();
    w.sites(base, bytes)?;
    Ok((w, compact))
}

fn ring_info<'n>(track: &Track, snap: &crate::ring::Snapshot, tid: u64, name: &'n [u8]) -> RingInfo<'n> {
    let ring = track.ring();
    RingInfo {
        tid,
        capacity: ring.capacity() as u64,
        written: snap.written,
        dropped: snap.dropped,
        aux: snap.aux,
        flags: ring.flags(),
        name,
    }
}

/// One ring section of `count` records, compact or full, then its open spans.
fn ring_section<S: Sink>(
    w: &mut Writer<S>,
    info: &RingInfo<'_>,
    compact: bool,
    count: usize,
    records: impl Iterator<Item = Record>,
    open: &[(u64, u64)],
) -> Result<(), WriteError<S::Error>> {
    if compact {
        w.begin_ring_sized(info, COMPACT_RECORD_SIZE, count as u64, open.len() as u64)?;
        for r in records.take(count) {
            // Truncation keeps what the 32-bit slots held (an argument key stays 0xFFFFFFFF).
            w.compact_record(&CompactRecord { key: r.key as u32, enter: r.enter as u32, exit: r.exit as u32 })?;
        }
    } else {
        w.begin_ring(info, count as u64, open.len() as u64)?;
        for r in records.take(count) {
            w.record(&r)?;
        }
    }
    for &(key, enter) in open {
        w.open_span(key, enter)?;
    }
    w.end_section()
}

/// A [`Sink`] that hands each byte to a closure: a UART's transmit
/// register, an RTT channel, a buffer. `ByteSink(|b| uart.write(b))`.
#[derive(Debug)]
pub struct ByteSink<F: FnMut(u8)>(pub F);

impl<F: FnMut(u8)> Sink for ByteSink<F> {
    type Error = core::convert::Infallible;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        bytes.iter().for_each(|&b| (self.0)(b));
        Ok(())
    }
}
