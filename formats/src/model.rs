//! The values a dump carries, shared by the writer and the reader.
//!
//! Strings are byte slices: the recorder writes what the OS gave it, and
//! readers decide how to show bytes that are not UTF-8.

use crate::layout::{CounterKind, DumpReason, RateSource};

/// One finished span: its key and the counter at entry and exit.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Record {
    /// A code address or the address of a site descriptor.
    pub key: u64,
    /// Counter ticks when the span began.
    pub enter: u64,
    /// Counter ticks when the span ended.
    pub exit: u64,
}

/// One time anchor: the same instant on the span counter and the OS clocks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anchor {
    /// Span counter ticks.
    pub ticks: u64,
    /// Monotonic clock, nanoseconds.
    pub mono_ns: u64,
    /// Realtime (wall) clock, nanoseconds since the Unix epoch.
    pub real_ns: u64,
}

/// The meta section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetaInfo<'a> {
    /// Process id.
    pub pid: u32,
    /// Why the dump was written.
    pub reason: DumpReason,
    /// Name of the program that wrote the dump (normally "ringtrace").
    pub producer: &'a [u8],
    /// Its version.
    pub producer_version: &'a [u8],
    /// The recorded process's name.
    pub process_name: &'a [u8],
}

/// The clock section, less its anchors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockInfo {
    /// Which counter produced the ticks.
    pub counter: CounterKind,
    /// Significant bits of the counter (64, or 32 for a wrapping counter).
    pub counter_bits: u32,
    /// Nominal rate in ticks per second; 0 when unknown.
    pub nominal_hz: u64,
    /// Where `nominal_hz` came from.
    pub rate_source: RateSource,
}

/// The recorder's measured cost for one clock mode, in counter ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Calibration {
    /// Which counter read.
    pub mode: crate::layout::ClockMode,
    /// Samples behind each median.
    pub samples: u32,
    /// Median ticks an empty span adds to the span around it: what to
    /// subtract from a parent for each child.
    pub span_cost: u64,
    /// Median ticks between two back-to-back counter reads: what an empty
    /// span itself measures, to subtract from each span's own duration.
    pub read_cost: u64,
}

/// What `dladdr` said about one code-address key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DladdrEntry<'a> {
    /// The key (a runtime code address).
    pub key: u64,
    /// Runtime address of the nearest symbol at or below the key, 0 if none.
    pub symbol_address: u64,
    /// Path of the module holding the key.
    pub module: &'a [u8],
    /// The symbol's (mangled) name, empty if none.
    pub symbol: &'a [u8],
}

/// One frame of a packed name: a function, and where in its source the key is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameFrame<'a> {
    /// The function's name as the backend gave it (mangled or not), or a span's label.
    pub function: &'a [u8],
    /// Source file, empty if unknown.
    pub file: &'a [u8],
    /// Source line, 0 if unknown.
    pub line: u32,
}

/// A key's name, for [`Writer::names`](crate::Writer::names): its frames,
/// innermost first (the function the key is in, then those it was inlined into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NameEntry<'a> {
    /// The span key.
    pub key: u64,
    /// Which way of naming found it.
    pub source: crate::layout::NameSource,
    /// At least one frame, innermost first.
    pub frames: &'a [NameFrame<'a>],
}

/// One loaded module (executable or shared library).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Module<'a> {
    /// Lowest runtime address of its loaded segments.
    pub start: u64,
    /// One past the highest runtime address of its loaded segments.
    pub end: u64,
    /// Load bias: runtime address minus the ELF virtual address.
    pub bias: u64,
    /// `MODULE_FLAG_*` bits.
    pub flags: u32,
    /// GNU build-id note contents, empty if the module has none.
    pub build_id: &'a [u8],
    /// Path of the file it was loaded from.
    pub path: &'a [u8],
}

impl Module<'_> {
    /// Whether `addr` lies in this module's loaded range.
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

/// A ring section's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingInfo<'a> {
    /// OS thread id.
    pub tid: u64,
    /// Capacity in records.
    pub capacity: u64,
    /// Records ever written to the ring.
    pub written: u64,
    /// Spans not written because the ring was full (stop-when-full mode).
    pub dropped: u64,
    /// Of `written`, the records that are not spans (argument records).
    pub aux: u64,
    /// `RING_FLAG_*` bits.
    pub flags: u32,
    /// Thread name, empty if it had none.
    pub name: &'a [u8],
}

/// Spans of one thread that the `-finstrument-functions` hooks could not record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unbalanced {
    /// OS thread id.
    pub tid: u64,
    /// Calls nested deeper than the hooks' shadow stack: not recorded.
    pub too_deep: u64,
    /// Spans whose exit hook never ran (a `longjmp` past them): not recorded.
    pub abandoned: u64,
}

/// One compact span record (12 bytes, since 1.1), for 32-bit targets with a
/// counter of at most 32 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompactRecord {
    /// Code address or site descriptor address; `u32::MAX` marks an argument record.
    pub key: u32,
    /// Counter at entry.
    pub enter: u32,
    /// Counter at exit.
    pub exit: u32,
}
