//! The decoded dump: its process, clock, modules and one [`ThreadTrace`] per
//! ring, whose records stay in the file's bytes until a walk reads them.

use std::collections::HashMap;
use std::path::PathBuf;

use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY, SPAN_FLAG_UNWOUND, WRAP_KEY};
use ringtrace_format::read::Records;
use ringtrace_format::{Anchor, Calibration, ClockInfo, DumpReason, Endian, ReadError, Record};

/// A dump, decoded: every section but the rings, which stay in the file's
/// bytes and are decoded one at a time by the walks of a
/// [`Timeline`](super::Timeline), so memory is bounded by the largest ring,
/// not by the dump.
#[derive(Debug)]
pub struct Trace<'a> {
    /// The file it came from.
    pub path: PathBuf,
    /// Byte order of the target (site descriptors use it too).
    pub endian: Endian,
    /// Process id, name and producer.
    pub process: Process,
    /// The clock section, if it was read.
    pub clock: Option<Clock>,
    /// The module table, in the dump's order.
    pub modules: Vec<ModuleEntry>,
    /// The modules' address ranges, sorted for lookups ([`locate`](super::locate)).
    pub(crate) module_ranges: super::address::ModuleRanges,
    /// One entry per ring.
    pub threads: Vec<ThreadTrace<'a>>,
    /// Every distinct span key of every ring, sorted.
    pub keys: Vec<u64>,
    /// The site section, copied.
    pub(crate) sites: Option<SiteTable>,
    /// The recorder's measured per-span costs, per clock mode.
    pub calibration: Vec<Calibration>,
    /// What `dladdr` said about each code-address key at dump time.
    pub(crate) dladdr: HashMap<u64, DladdrName>,
    /// Names packed into the dump by `rtconv pack`, by key.
    pub(crate) packed: HashMap<u64, PackedKey>,
    /// Per thread, spans the `-finstrument-functions` hooks could not record.
    pub unbalanced: Vec<ringtrace_format::Unbalanced>,
    /// Set when the file is damaged or cut short: everything from its offset on is lost.
    pub damage: Option<ReadError>,
    /// Section kinds this reader did not know and skipped.
    pub skipped_sections: Vec<u32>,
    /// How the process ended, for a dump read out of a core.
    pub crash: Option<Crash>,
}

/// How a process whose rings were read out of its core ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Crash {
    /// The thread that took the fatal signal (0 if none did: a core `gcore` took).
    pub tid: u64,
    /// The signal's number, 0 if none.
    pub signal: u32,
    /// What reading the core had to estimate, one line each.
    pub notes: Vec<String>,
    /// What the core lacks or could not be read, one line each.
    pub losses: Vec<String>,
}

impl Crash {
    /// The signal's name (`SIGSEGV`), if it is one Linux defines.
    pub fn signal_name(&self) -> Option<&'static str> {
        const NAMES: [&str; 32] = [
            "",
            "SIGHUP",
            "SIGINT",
            "SIGQUIT",
            "SIGILL",
            "SIGTRAP",
            "SIGABRT",
            "SIGBUS",
            "SIGFPE",
            "SIGKILL",
            "SIGUSR1",
            "SIGSEGV",
            "SIGUSR2",
            "SIGPIPE",
            "SIGALRM",
            "SIGTERM",
            "SIGSTKFLT",
            "SIGCHLD",
            "SIGCONT",
            "SIGSTOP",
            "SIGTSTP",
            "SIGTTIN",
            "SIGTTOU",
            "SIGURG",
            "SIGXCPU",
            "SIGXFSZ",
            "SIGVTALRM",
            "SIGPROF",
            "SIGWINCH",
            "SIGIO",
            "SIGPWR",
            "SIGSYS",
        ];
        NAMES.get(self.signal as usize).copied().filter(|n| !n.is_empty())
    }
}

/// The clock section: what the counter is and where it stood against the
/// system clocks.
#[derive(Debug, Clone)]
pub struct Clock {
    /// Counter kind, width and rate.
    pub info: ClockInfo,
    /// Counter readings paired with monotonic and realtime ns; the last one
    /// is the dump time. A narrow counter keeps only that one, unwrapped.
    pub anchors: Vec<Anchor>,
}

/// The site section: the recorder's static call-site descriptors.
#[derive(Debug, Clone)]
pub(crate) struct SiteTable {
    /// The runtime address of the first descriptor.
    pub base: u64,
    /// The descriptors' bytes, in the target's byte order.
    pub bytes: Vec<u8>,
}

/// One `dladdr` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DladdrName {
    /// Module path.
    pub module: PathBuf,
    /// Mangled symbol name, empty if the loader knew none.
    pub symbol: String,
    /// The symbol's runtime address.
    pub symbol_address: u64,
}

/// A key's name from the dump's names section (`rtconv pack`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackedKey {
    /// How it was named where it was packed.
    pub source: ringtrace_format::NameSource,
    /// At least one frame, innermost first.
    pub frames: Vec<PackedFrame>,
}

/// One frame of a [`PackedKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PackedFrame {
    /// Function name as the backend gave it (possibly mangled), or a label.
    pub function: String,
    /// Source file, when known.
    pub file: Option<String>,
    /// Source line, when known.
    pub line: Option<u32>,
}

/// The meta section.
#[derive(Debug, Default, Clone)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Process name.
    pub name: String,
    /// Recorder name and version.
    pub producer: String,
    /// Why the dump was written.
    pub reason: Option<DumpReason>,
}

/// One module of the module table.
#[derive(Debug, Clone)]
pub struct ModuleEntry {
    /// Lowest runtime address.
    pub start: u64,
    /// One past the highest runtime address.
    pub end: u64,
    /// Runtime address minus ELF virtual address.
    pub bias: u64,
    /// GNU build-id, empty if none.
    pub build_id: Vec<u8>,
    /// File path as the target saw it.
    pub path: PathBuf,
    /// Whether this is the main executable.
    pub is_main: bool,
}

/// One thread's ring, still in the file's bytes.
#[derive(Debug)]
pub struct ThreadTrace<'a> {
    /// OS thread id.
    pub tid: u64,
    /// Thread name, possibly empty.
    pub name: String,
    /// Records ever written to the ring.
    pub written: u64,
    /// Spans dropped because the ring was full.
    pub dropped: u64,
    /// Of `written`, the records that were not spans (argument records).
    pub aux: u64,
    /// Finished spans the ring still holds.
    pub finished: u64,
    /// Of `finished`, those flagged unwound (left by a `longjmp` or an exception without their exit hook).
    pub unwound: u64,
    /// Counter at the earliest span start, if the ring holds any span.
    pub first_enter: Option<u64>,
    /// Counter at the end of the oldest span the ring holds (records are in
    /// the order spans ended): spans that began before it lost the children
    /// they had before it, when the ring overwrote any.
    pub oldest_exit: Option<u64>,
    pub(super) records: RecordSource<'a>,
    /// Whether any record is an argument or flags record (each belongs to the
    /// span record after it): without them a span is read from its record alone.
    pub(super) prefixed: bool,
    /// Spans open at dump time and not also among the finished ones, innermost first.
    pub(super) open: Vec<OpenSpan>,
    /// Where the ring overwrote spans and its records state their depths and nest: per depth
    /// tag, the position of the span there that began before the oldest kept span ended (that
    /// span and its callers, see [`LostChildren`](super::LostChildren)), `u32::MAX` at depths
    /// without one; empty otherwise.
    pub(super) lost_by_depth: Vec<u32>,
    /// The spans nest without partial overlaps, in the order they ended, so
    /// the ring read backwards is its call tree in pre-order; false for a
    /// damaged or out-of-order ring (its spans are then sorted and clamped).
    pub nested: bool,
    /// Whether its span records' keys carry their depth (format 1.4), and
    /// whether nesting follows it.
    pub(crate) key_depth: KeyDepth,
    /// The counter at dump time: where open spans end.
    pub(super) dump_ticks: u64,
    /// The ring's records are compact: 12 bytes, 32-bit keys and counter readings
    /// (a 32-bit target's, or a counter of 32 bits or fewer), unwrapped when read.
    pub compact: bool,
    /// Spans of a narrow counter's ring that ended after the dump's anchor was read (recorded
    /// while the dump was being taken): placed after it.
    pub after_anchor: u64,
}

/// A span still running at dump time: its key and start.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct OpenSpan {
    pub key: u64,
    pub enter: u64,
    /// Its depth tag (see [`SpanRecord::depth`]): its place in the open stack, when the ring's keys carry depth.
    pub depth: u8,
}

impl OpenSpan {
    /// As a span ending at the dump (or at its own start, if it began after the dump's anchor).
    #[inline]
    pub fn at_dump(self, dump_ticks: u64) -> SpanRecord {
        SpanRecord {
            key: self.key,
            enter: self.enter,
            exit: dump_ticks.max(self.enter),
            arg: None,
            open: true,
            unwound: false,
            depth: self.depth,
        }
    }
}

/// One span as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SpanRecord {
    /// Code address or site descriptor address.
    pub key: u64,
    /// Counter at entry.
    pub enter: u64,
    /// Counter at exit.
    pub exit: u64,
    /// The integer argument recorded with it, if any.
    pub arg: Option<u64>,
    /// Still running when the dump was taken: `exit` is the dump time.
    pub open: bool,
    /// Left without its exit hook (a `longjmp`): `exit` is where the recorder noticed.
    pub unwound: bool,
    /// Its nesting depth plus one, when the ring states it (format 1.4 keys
    /// that carry depth; see [`depth_tag`]); 0 when not. Nesting follows it
    /// where two spans both have one, and their times otherwise.
    pub depth: u8,
}

/// Whether a ring's keys carry their span's depth (format 1.4), and whether nesting follows it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyDepth {
    /// Keys as they are, no depth: nesting follows times.
    #[default]
    Untagged,
    /// Keys carry a depth tag, taken off; nesting follows it.
    Used,
    /// Keys carry a depth tag, taken off but not followed: the depths
    /// contradict the ring's order (a damaged ring).
    Ignored,
}

/// A record's key and depth tag (see [`SpanRecord::depth`]) as the ring's [`KeyDepth`] says.
#[inline(always)]
pub(crate) fn depth_tag(raw_key: u64, kd: KeyDepth) -> (u64, u8) {
    use ringtrace_format::layout::key_and_tag;
    match kd {
        KeyDepth::Untagged => (raw_key, 0),
        KeyDepth::Used => key_and_tag(raw_key),
        KeyDepth::Ignored => (key_and_tag(raw_key).0, 0),
    }
}

/// A ring's records: in the mapped file, or — for a counter narrower than
/// 64 bits — unwrapped into 64-bit ticks (see [`CounterUnwrap`](super::counter_unwrap::CounterUnwrap)).
#[derive(Debug)]
pub(super) enum RecordSource<'a> {
    File(Records<'a>),
    Unwrapped(Vec<Record>),
    /// A streamed ring: its chunks, in the file.
    Chunks(super::chunked::ChunkedRecords<'a>),
}

/// Whether a record with this raw key is a span's (not an argument, flags or wrap record).
#[inline(always)]
pub(crate) fn is_span_record(raw_key: u64) -> bool {
    raw_key != ARG_KEY && raw_key != FLAGS_KEY && raw_key != WRAP_KEY
}

impl SpanRecord {
    /// The finished span of span record `r` on its own (no argument, not unwound).
    #[inline(always)]
    pub(crate) fn of_record(r: Record, kd: KeyDepth) -> Self {
        let (key, depth) = depth_tag(r.key, kd);
        SpanRecord { key, enter: r.enter, exit: r.exit, arg: None, open: false, unwound: false, depth }
    }

    /// How its time ended.
    #[inline(always)]
    pub fn ending(&self) -> super::Ending {
        match (self.open, self.unwound) {
            (true, _) => super::Ending::Open,
            (false, true) => super::Ending::Unwound,
            (false, false) => super::Ending::Returned,
        }
    }
}

impl RecordSource<'_> {
    pub fn len(&self) -> usize {
        match self {
            RecordSource::File(r) => r.len(),
            RecordSource::Unwrapped(v) => v.len(),
            RecordSource::Chunks(c) => c.len(),
        }
    }

    /// Calls `f` with every record, in file order or (`newest_first`) reversed.
    #[inline]
    pub fn for_each(&self, newest_first: bool, f: impl FnMut(Record)) {
        match (self, newest_first) {
            (RecordSource::File(r), false) => r.iter().for_each(f),
            (RecordSource::File(r), true) => r.iter().rev().for_each(f),
            (RecordSource::Unwrapped(v), false) => v.iter().copied().for_each(f),
            (RecordSource::Unwrapped(v), true) => v.iter().rev().copied().for_each(f),
            (RecordSource::Chunks(c), newest_first) => c.for_each(newest_first, f),
        }
    }
}

impl ThreadTrace<'_> {
    /// Spans the ring recorded and later overwrote (or lost while the dump copied it).
    pub fn overwritten(&self) -> u64 {
        self.written.saturating_sub(self.aux).saturating_sub(self.finished)
    }

    /// Spans recorded but not in the dump: overwritten or dropped.
    pub fn lost(&self) -> u64 {
        self.overwritten().saturating_add(self.dropped)
    }

    /// Spans in the dump: finished ones and those still open at dump time.
    pub fn span_count(&self) -> u64 {
        self.finished + self.open.len() as u64
    }

    /// Spans still open at dump time.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// The keys of the spans open at dump time, outermost first: the thread's call path then.
    pub fn open_keys(&self) -> impl Iterator<Item = u64> + '_ {
        self.open.iter().rev().map(|o| o.key)
    }

    /// Calls `f` with every span, finished ones in the order they ended (each
    /// argument record attached to the span after it), then the open ones,
    /// innermost first, ending at the dump (or at their own start, if they
    /// began after the dump's anchor).
    pub(crate) fn spans(&self, mut f: impl FnMut(SpanRecord)) {
        let (mut arg, mut flags) = (None, 0);
        let kd = self.key_depth;
        self.records.for_each(false, |r| match r.key {
            ARG_KEY => arg = Some(r.enter),
            FLAGS_KEY => flags = r.enter,
            WRAP_KEY => {}
            _ => f(SpanRecord {
                arg: arg.take(),
                unwound: core::mem::take(&mut flags) & SPAN_FLAG_UNWOUND != 0,
                ..SpanRecord::of_record(r, kd)
            }),
        });
        for open in &self.open {
            f(open.at_dump(self.dump_ticks));
        }
    }
}

impl ThreadTrace<'_> {
    /// Calls `f(position, enter, depth tag)` for every span in the reverse
    /// of position order — its open spans outermost first, then its records
    /// newest first — reading the records in sequence: what finding the
    /// start order needs of each span, without random access.
    #[inline]
    pub(super) fn span_starts_rev(&self, mut f: impl FnMut(usize, u64, u8)) {
        let kd = self.key_depth;
        let mut position = self.positions();
        for open in self.open.iter().rev() {
            position -= 1;
            f(position, open.enter, open.depth);
        }
        self.records.for_each(
            true,
            #[inline(always)]
            |r| {
                position -= 1;
                if is_span_record(r.key) {
                    f(position, r.enter, depth_tag(r.key, kd).1);
                }
            },
        );
    }
}

impl ThreadTrace<'_> {
    /// Calls `f` with every span, and its position where `positions` (else the ring's length),
    /// in the reverse of [`spans`](Self::spans)' order: open spans outermost first, then
    /// finished ones newest first. When the ring is [`nested`](Self::nested), this is the
    /// call tree in pre-order, each parent before its children, children right to left.
    #[inline]
    pub(crate) fn spans_rev(&self, positions: bool, f: impl FnMut(SpanRecord, usize)) {
        // Two loops: counting positions costs a few instructions a span, paid only when asked.
        if positions { self.spans_rev_counting::<true>(f) } else { self.spans_rev_counting::<false>(f) }
    }

    /// [`spans_rev`](Self::spans_rev), counting positions where `POSITIONS`.
    #[inline(always)]
    fn spans_rev_counting<const POSITIONS: bool>(&self, mut f: impl FnMut(SpanRecord, usize)) {
        let count = self.records.len();
        for (j, open) in self.open.iter().enumerate().rev() {
            f(open.at_dump(self.dump_ticks), count + j);
        }
        let kd = self.key_depth;
        let mut position = count;
        if !self.prefixed {
            // No argument or flags records: each span record is a span.
            self.records.for_each(true, |r| {
                position -= usize::from(POSITIONS);
                if r.key != WRAP_KEY {
                    f(SpanRecord::of_record(r, kd), position);
                }
            });
            return;
        }
        // Argument and flags records belong to the span record after them
        // (an argument record comes first), so the span waits for them here.
        let mut pending: Option<(SpanRecord, usize)> = None;
        self.records.for_each(true, |r| {
            position -= usize::from(POSITIONS);
            match r.key {
                ARG_KEY => {
                    if let Some((mut span, at)) = pending.take() {
                        span.arg = Some(r.enter);
                        f(span, at);
                    }
                }
                FLAGS_KEY => {
                    if let Some((span, _)) = &mut pending {
                        span.unwound = r.enter & SPAN_FLAG_UNWOUND != 0;
                    }
                }
                WRAP_KEY => {}
                _ => {
                    if let Some((span, at)) = pending.replace((SpanRecord::of_record(r, kd), position)) {
                        f(span, at);
                    }
                }
            }
        });
        if let Some((span, at)) = pending {
            f(span, at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{KeyDepth, depth_tag};
    use ringtrace_format::layout::split_key;

    #[test]
    fn a_keys_depth_tag_is_what_split_key_states() {
        for top in 0..=255u64 {
            let raw = top << 56 | 0x0012_3456_789a;
            let (key, depth) = split_key(raw);
            let stated = depth.map_or(0, |d| d.saturating_add(1));
            assert_eq!(depth_tag(raw, KeyDepth::Used), (key, stated), "top byte {top}");
            assert_eq!(depth_tag(raw, KeyDepth::Ignored), (key, 0));
            assert_eq!(depth_tag(raw, KeyDepth::Untagged), (raw, 0));
        }
    }
}
