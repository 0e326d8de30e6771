//! Dumps without an operating system: the installed track, through any
//! byte [`Sink`] (a UART, semihosting, RTT, a buffer), with no allocation.
//! The dump holds compact 12-byte records when the counter has at most 32
//! bits, and always on targets without 64-bit atomics (32-bit
//! microcontrollers), whose ring words are 32 bits.
//!
//! A program without `std` says what a hosted recorder finds out itself:
//! its name, its counter ([`ClockInfo`]) and time anchors, and where its
//! code is loaded ([`Module`]s, so `rtconv` can name code addresses from the
//! ELF file given with `--exe`). Named spans need nothing: the
//! `ringtrace_sites` section goes into every dump.
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

use ringtrace_format::layout::{COMPACT_RECORD_SIZE, RING_FLAG_STOP_WHEN_FULL};
use ringtrace_format::{
    Anchor, ClockInfo, CompactRecord, DumpReason, MetaInfo, Module, Record, RingInfo, Sink, WriteError, Writer,
};

use crate::open::OPEN_DEPTH;
use crate::ring::{Mode, Word};
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
    let mut w = Writer::new(sink, core::mem::size_of::<usize>() as u8)?;
    w.meta(&MetaInfo {
        pid: 0,
        reason: DumpReason::Requested,
        producer: b"ringtrace",
        producer_version: env!("CARGO_PKG_VERSION").as_bytes(),
        process_name: target.process_name,
    })?;
    // Compact records where the recorder's words are 32 bits (so are the
    // counter readings it kept), or where the counter is 32 bits or fewer.
    let compact = core::mem::size_of::<Word>() == 4 || target.clock.counter_bits <= 32;
    let mut clock = target.clock;
    if compact {
        clock.counter_bits = clock.counter_bits.min(32);
    }
    w.clock(&clock, target.anchors)?;
    w.modules(target.modules)?;
    let (base, bytes) = crate::sites::section();
    w.sites(base, bytes)?;
    // Open spans first, then finished ones: a span ending in between is in
    // both (rtconv drops the open copy), never in neither.
    let mut open = [(0u64, 0u64); OPEN_DEPTH];
    let open_count = track.open().snapshot(&mut open).unwrap_or(0);
    let ring = track.ring();
    let snap = ring.snapshot(scratch, true);
    let info = RingInfo {
        tid: 0,
        capacity: ring.capacity() as u64,
        written: snap.written,
        dropped: snap.dropped,
        aux: snap.aux,
        flags: if ring.mode() == Mode::StopWhenFull { RING_FLAG_STOP_WHEN_FULL } else { 0 },
        name: target.thread_name,
    };
    let records = &scratch[..snap.copied];
    if compact {
        w.begin_ring_sized(&info, COMPACT_RECORD_SIZE, records.len() as u64, open_count as u64)?;
        for r in records {
            // Truncation keeps what the 32-bit slots held (an argument key stays 0xFFFFFFFF).
            let (key, enter, exit) = (r.key as u32, r.enter as u32, r.exit as u32);
            w.compact_record(&CompactRecord { key, enter, exit })?;
        }
        for &(key, enter) in &open[..open_count] {
            w.open_span(key, enter)?;
        }
        w.end_section()?;
    } else {
        w.ring(&info, records, &open[..open_count])?;
    }
    w.finish()
}
