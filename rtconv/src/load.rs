//! Reading a dump file into the decoded model, salvaging what a damaged file still holds.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};

use ringtrace_format::layout::{ARG_KEY, WRAP_KEY};
use ringtrace_format::read::{OpenSpans, Records};
use ringtrace_format::{
    Anchor, Calibration, ClockInfo, Dump, DumpReason, Endian, ReadError, Record, RingInfo, SectionData,
};

/// A dump, decoded: every section but the rings, which stay in the file's
/// bytes and are decoded one at a time ([`ThreadTrace::spans`]), so memory
/// is bounded by the largest ring, not by the dump.
#[derive(Debug)]
pub struct Trace<'a> {
    /// The file it came from.
    pub path: PathBuf,
    /// Byte order of the target (site descriptors use it too).
    pub endian: Endian,
    /// Process id, name and producer.
    pub process: Process,
    /// Counter description and anchors, if the clock section was read.
    pub clock: Option<(ClockInfo, Vec<Anchor>)>,
    /// The module table.
    pub modules: Vec<ModuleEntry>,
    /// One entry per ring.
    pub threads: Vec<ThreadTrace<'a>>,
    /// Every distinct span key of every ring, sorted.
    pub keys: Vec<u64>,
    /// The copied site section: its runtime address and bytes.
    pub sites: Option<(u64, Vec<u8>)>,
    /// The recorder's measured per-span costs, per clock mode.
    pub calibration: Vec<Calibration>,
    /// What `dladdr` said about each code-address key at dump time.
    pub dladdr: HashMap<u64, DladdrName>,
    /// Names packed into the dump by `rtconv pack`, by key.
    pub packed: HashMap<u64, PackedKey>,
    /// Per thread, spans the `-finstrument-functions` hooks could not record.
    pub unbalanced: Vec<ringtrace_format::Unbalanced>,
    /// Set when the file is damaged or cut short: everything from its offset on is lost.
    pub damage: Option<ReadError>,
    /// Section kinds this reader did not know and skipped.
    pub skipped_sections: Vec<u32>,
}

/// One `dladdr` result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DladdrName {
    /// Module path.
    pub module: PathBuf,
    /// Mangled symbol name, empty if the loader knew none.
    pub symbol: String,
    /// The symbol's runtime address.
    pub symbol_address: u64,
}

/// A key's name from the dump's names section (`rtconv pack`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedKey {
    /// How it was named where it was packed.
    pub source: ringtrace_format::NameSource,
    /// At least one frame, innermost first.
    pub frames: Vec<PackedFrame>,
}

/// One frame of a [`PackedKey`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackedFrame {
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
    /// Counter at the earliest span start, if the ring holds any span.
    pub first_enter: Option<u64>,
    records: RecordSource<'a>,
    /// Spans open at dump time and not also among the finished ones, innermost first.
    open: Vec<(u64, u64)>,
    /// The spans nest without partial overlaps, in the order they ended (see
    /// [`ThreadTrace::spans_rev`]); false for a damaged or out-of-order ring.
    pub nested: bool,
    /// The counter at dump time: where open spans end.
    dump_ticks: u64,
}

/// One span as recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanRecord {
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
}

/// A ring's records: in the mapped file, or — for a counter narrower than
/// 64 bits — unwrapped into 64-bit ticks (see [`Unwrap`]).
#[derive(Debug)]
enum RecordSource<'a> {
    File(Records<'a>),
    Unwrapped(Vec<Record>),
}

impl RecordSource<'_> {
    fn len(&self) -> usize {
        match self {
            RecordSource::File(r) => r.len(),
            RecordSource::Unwrapped(v) => v.len(),
        }
    }

    /// Calls `f` with every record, in file order or (`newest_first`) reversed.
    #[inline]
    fn for_each(&self, newest_first: bool, f: impl FnMut(Record)) {
        match (self, newest_first) {
            (RecordSource::File(r), false) => r.iter().for_each(f),
            (RecordSource::File(r), true) => r.iter().rev().for_each(f),
            (RecordSource::Unwrapped(v), false) => v.iter().copied().for_each(f),
            (RecordSource::Unwrapped(v), true) => v.iter().rev().copied().for_each(f),
        }
    }
}

/// Unwrapping a counter of `bits` < 64 bits. Going back from the dump-time
/// anchor, each record's exit is placed before the next newer one by their
/// difference modulo 2^bits, and its enter before its exit likewise. This
/// assumes no two consecutive records (nor the newest and the dump) are a
/// whole wrap period or more apart — the recorder writes a wrap marker at
/// least once per period to keep it so — and that no span lasts a period.
/// Unwrapped ticks count from 2^62, so none goes below zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unwrap {
    mask: u64,
    dump_narrow: u64,
    dump_wide: u64,
}

impl Unwrap {
    /// For a counter of `bits` bits whose dump-time reading was `dump_ticks`.
    pub fn new(bits: u32, dump_ticks: u64) -> Self {
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits.max(1)) - 1 };
        let dump_narrow = dump_ticks & mask;
        Unwrap { mask, dump_narrow, dump_wide: (1u64 << 62) | dump_narrow }
    }

    /// The dump time, unwrapped.
    pub fn dump_ticks(&self) -> u64 {
        self.dump_wide
    }

    /// A reading `ticks` taken at most one period before the dump, unwrapped.
    fn before_dump(&self, ticks: u64) -> u64 {
        self.dump_wide.wrapping_sub(self.dump_narrow.wrapping_sub(ticks) & self.mask)
    }

    /// The ring's records with their ticks unwrapped (argument records as they are).
    fn records(&self, records: &Records<'_>) -> Vec<Record> {
        let mut out = Vec::with_capacity(records.len()); // bounded by the file
        let (mut newer_wide, mut newer_narrow) = (self.dump_wide, self.dump_narrow);
        for r in records.iter().rev() {
            if r.key == ARG_KEY {
                out.push(r);
                continue;
            }
            let exit = newer_wide.wrapping_sub(newer_narrow.wrapping_sub(r.exit) & self.mask);
            let enter = exit.wrapping_sub(r.exit.wrapping_sub(r.enter) & self.mask);
            (newer_wide, newer_narrow) = (exit, r.exit & self.mask);
            out.push(Record { key: r.key, enter, exit });
        }
        out.reverse();
        out
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

    /// Calls `f` with every span, finished ones in the order they ended (each
    /// argument record attached to the span after it), then the open ones,
    /// innermost first, ending at the dump (or at their own start, if they
    /// began after the dump's anchor).
    pub fn spans(&self, mut f: impl FnMut(SpanRecord)) {
        let mut arg = None;
        self.records.for_each(false, |r| match r.key {
            ARG_KEY => arg = Some(r.enter),
            WRAP_KEY => {}
            _ => f(SpanRecord { key: r.key, enter: r.enter, exit: r.exit, arg: arg.take(), open: false }),
        });
        for &(key, enter) in &self.open {
            f(SpanRecord { key, enter, exit: self.dump_ticks.max(enter), arg: None, open: true });
        }
    }
}

/// Random access to a ring's spans by position — its records (argument
/// records and wrap markers give `None`), then its open spans — for one
/// kind of record storage, so a caller reading every position dispatches on
/// the storage once per ring, not once per record ([`ThreadTrace::with_spans`]).
pub trait SpanAt {
    /// Positions: records, then open spans.
    fn positions(&self) -> usize;
    /// The span at `position`, in [`ThreadTrace::spans`]' order.
    fn span_at(&self, position: usize) -> Option<SpanRecord>;
    /// Starts loading what [`span_at`](Self::span_at)`(position)` reads
    /// into the cache, for a caller that knows its positions ahead.
    fn prefetch(&self, position: usize);
}

/// What [`ThreadTrace::with_spans`] hands its random access to.
pub trait WithSpans {
    /// What it gives back.
    type Out;
    /// Runs with the ring's spans.
    fn run<S: SpanAt>(self, spans: &S) -> Self::Out;
}

/// Records by index, from the file or unwrapped.
trait RecordAt {
    fn count(&self) -> usize;
    fn at(&self, index: usize) -> Option<Record>;
    /// Starts loading records `first..=last` into the cache.
    fn prefetch(&self, first: usize, last: usize);
}

impl RecordAt for Records<'_> {
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index)
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        if let Some(bytes) = self.bytes_between(first, last) {
            crate::prefetch::range(bytes);
        }
    }
}

impl RecordAt for [Record] {
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index).copied()
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        if let Some(records) = self.get(first..=last) {
            crate::prefetch::range(records);
        }
    }
}

/// A ring's spans over one kind of record storage.
struct Positioned<'t, R: ?Sized> {
    records: &'t R,
    open: &'t [(u64, u64)],
    dump_ticks: u64,
}

impl<R: RecordAt + ?Sized> SpanAt for Positioned<'_, R> {
    fn positions(&self) -> usize {
        self.records.count() + self.open.len()
    }

    #[inline(always)] // once per record, in the decoder's inner loops
    fn span_at(&self, position: usize) -> Option<SpanRecord> {
        match position.checked_sub(self.records.count()) {
            None => {
                let r = self.records.at(position)?;
                if r.key == ARG_KEY || r.key == WRAP_KEY {
                    return None;
                }
                let before = position.checked_sub(1).and_then(|p| self.records.at(p));
                let arg = before.filter(|b| b.key == ARG_KEY).map(|b| b.enter);
                Some(SpanRecord { key: r.key, enter: r.enter, exit: r.exit, arg, open: false })
            }
            Some(j) => {
                let &(key, enter) = self.open.get(j)?;
                Some(SpanRecord { key, enter, exit: self.dump_ticks.max(enter), arg: None, open: true })
            }
        }
    }

    #[inline(always)]
    fn prefetch(&self, position: usize) {
        // The record and the one before it (an argument record, maybe).
        self.records.prefetch(position.saturating_sub(1), position);
    }
}

impl ThreadTrace<'_> {
    /// Positions of the ring's spans: its records, then its open spans.
    pub fn positions(&self) -> usize {
        self.records.len() + self.open.len()
    }

    /// Runs `v` with random access to the ring's spans ([`SpanAt`]).
    pub fn with_spans<V: WithSpans>(&self, v: V) -> V::Out {
        let (open, dump_ticks) = (self.open.as_slice(), self.dump_ticks);
        match &self.records {
            RecordSource::File(records) => v.run(&Positioned { records, open, dump_ticks }),
            RecordSource::Unwrapped(records) => v.run(&Positioned { records: records.as_slice(), open, dump_ticks }),
        }
    }

    /// Calls `f` with every span in the reverse of [`spans`](Self::spans)'
    /// order: open spans outermost first, then finished ones newest first.
    /// When the ring is [`nested`](Self::nested), this is the call tree in
    /// pre-order, each parent before its children, children right to left.
    #[inline]
    pub fn spans_rev(&self, mut f: impl FnMut(SpanRecord)) {
        for &(key, enter) in self.open.iter().rev() {
            f(SpanRecord { key, enter, exit: self.dump_ticks.max(enter), arg: None, open: true });
        }
        // An argument record belongs to the span record after it.
        let mut pending: Option<SpanRecord> = None;
        self.records.for_each(true, |r| match r.key {
            ARG_KEY => {
                if let Some(mut span) = pending.take() {
                    span.arg = Some(r.enter);
                    f(span);
                }
            }
            WRAP_KEY => {}
            _ => {
                if let Some(span) =
                    pending.replace(SpanRecord { key: r.key, enter: r.enter, exit: r.exit, arg: None, open: false })
                {
                    f(span);
                }
            }
        });
        if let Some(span) = pending {
            f(span);
        }
    }
}

/// Checks, span by span in the order they ended, that spans nest: each span
/// contains every earlier span that started within it, and the one before
/// those ended before it started. Holds the start of each span not yet
/// inside another.
#[derive(Default)]
struct NestingCheck {
    roots: Vec<(u64, u64)>,
    broken: bool,
}

impl NestingCheck {
    #[inline]
    fn add(&mut self, enter: u64, exit: u64) {
        if self.broken {
            return;
        }
        let exit = exit.max(enter); // a counter that went backwards: zero length
        let mut inner_end = None;
        while let Some(&(e, x)) = self.roots.last() {
            if e < enter {
                break;
            }
            self.roots.pop();
            inner_end = Some(inner_end.unwrap_or(x));
        }
        let overlaps_before = self.roots.last().is_some_and(|&(_, x)| x > enter);
        if overlaps_before || inner_end.is_some_and(|x| x > exit) {
            self.broken = true;
            self.roots = Vec::new();
            return;
        }
        self.roots.push((enter, exit));
    }
}

/// The counter at dump time: the last anchor, if the clock section came first.
fn dump_ticks(clock: &Option<(ClockInfo, Vec<Anchor>)>) -> u64 {
    clock.as_ref().and_then(|(_, anchors)| anchors.last()).map_or(0, |a| a.ticks)
}

/// Reads a ring's records once: counts its spans, notes its earliest start,
/// adds its keys to `keys`, and keeps the open spans that did not also end
/// while the dump was taken (a finished span with the same key and start).
fn scan_ring<'a>(
    info: RingInfo<'a>,
    records: Records<'a>,
    open: OpenSpans<'a>,
    dump_ticks: u64,
    unwrap: Option<Unwrap>,
    keys: &mut rustc_hash::FxHashSet<u64>,
) -> ThreadTrace<'a> {
    let (records, open, dump_ticks): (RecordSource<'a>, Vec<(u64, u64)>, u64) = match unwrap {
        Some(u) => (
            RecordSource::Unwrapped(u.records(&records)),
            open.iter().map(|(key, enter)| (key, u.before_dump(enter))).collect(),
            u.dump_ticks(),
        ),
        None => (RecordSource::File(records), open.iter().collect(), dump_ticks),
    };
    let open_enters: rustc_hash::FxHashSet<u64> = open.iter().map(|o| o.1).collect();
    let mut ended_while_dumping = rustc_hash::FxHashSet::default();
    let (mut finished, mut first_enter, mut last_key) = (0, u64::MAX, None);
    let mut nesting = NestingCheck::default();
    records.for_each(false, |r| {
        if r.key == ARG_KEY || r.key == WRAP_KEY {
            return;
        }
        finished += 1;
        first_enter = first_enter.min(r.enter);
        nesting.add(r.enter, r.exit);
        if last_key != Some(r.key) {
            keys.insert(r.key);
            last_key = Some(r.key);
        }
        if !open_enters.is_empty() && open_enters.contains(&r.enter) {
            ended_while_dumping.insert((r.key, r.enter));
        }
    });
    // Innermost first: each open span then takes the spans inside it as children.
    let open: Vec<(u64, u64)> = open.into_iter().rev().filter(|o| !ended_while_dumping.contains(o)).collect();
    for &(key, enter) in &open {
        keys.insert(key);
        first_enter = first_enter.min(enter);
        nesting.add(enter, dump_ticks.max(enter));
    }
    ThreadTrace {
        tid: info.tid,
        name: lossy(info.name),
        written: info.written,
        dropped: info.dropped,
        aux: info.aux,
        finished,
        first_enter: (finished > 0 || !open.is_empty()).then_some(first_enter),
        records,
        open,
        nested: !nesting.broken,
        dump_ticks,
    }
}

/// Why a dump could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be opened or read.
    #[error("{}: cannot read: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file header is unusable, so nothing can be salvaged.
    #[error("{}: {source}{hint}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: ReadError,
        /// What the file looks like instead, when that is known (see [`not_a_dump_hint`]).
        hint: &'static str,
    },
}

/// The bytes of a file: mapped when possible, read otherwise.
pub enum FileBytes {
    /// A read-only mapping.
    Mapped(memmap2::Mmap),
    /// A copy (empty files and files that cannot be mapped).
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            FileBytes::Mapped(m) => m,
            FileBytes::Read(v) => v,
        }
    }
}

/// Maps `path` read-only, or reads it if it cannot be mapped.
pub fn map_file(path: &Path) -> std::io::Result<FileBytes> {
    let file = File::open(path)?;
    // SAFETY: the mapping is read-only and private to this process. If another
    // process truncates the file while we read it, we may fault (as every
    // mmap-based tool does); dumps are written once and not modified after.
    // Populated up front: every page is read anyway, and faulting them in
    // one call costs a fraction of a fault per page.
    match unsafe { memmap2::MmapOptions::new().populate().map(&file) } {
        Ok(map) => Ok(FileBytes::Mapped(map)),
        Err(_) => std::fs::read(path).map(FileBytes::Read),
    }
}

/// Maps the dump at `path`; [`decode`] then reads it.
pub fn open(path: &Path) -> Result<FileBytes, LoadError> {
    map_file(path).map_err(|source| LoadError::Io { path: path.into(), source })
}

/// Decodes the dump in `bytes` (read from `path`). A damaged or truncated
/// file still yields every complete section before the damage, with
/// `damage` saying where it starts.
pub fn decode<'a>(path: &Path, bytes: &'a [u8]) -> Result<Trace<'a>, LoadError> {
    let dump = Dump::parse(bytes).map_err(|source| LoadError::Header {
        path: path.into(),
        hint: not_a_dump_hint(&source, bytes),
        source,
    })?;
    let mut trace = Trace {
        path: path.into(),
        endian: dump.endian,
        process: Process::default(),
        clock: None,
        modules: Vec::new(),
        threads: Vec::new(),
        keys: Vec::new(),
        sites: None,
        calibration: Vec::new(),
        dladdr: HashMap::new(),
        packed: HashMap::new(),
        unbalanced: Vec::new(),
        damage: None,
        skipped_sections: Vec::new(),
    };
    let mut keys = rustc_hash::FxHashSet::default();
    let mut unwrap: Option<Unwrap> = None;
    for section in dump.sections() {
        let data = match section.and_then(|s| s.decode()) {
            Ok(data) => data,
            Err(e) => {
                trace.damage = Some(e);
                break;
            }
        };
        match data {
            SectionData::Meta(m) => {
                trace.process = Process {
                    pid: m.pid,
                    name: lossy(m.process_name),
                    producer: format!("{} {}", lossy(m.producer), lossy(m.producer_version)),
                    reason: Some(m.reason),
                }
            }
            SectionData::Clock(info, anchors) => {
                let anchors: Vec<Anchor> = anchors.iter().collect();
                if info.counter_bits < 64
                    && let Some(last) = anchors.last()
                {
                    // A narrow counter: only the dump-time anchor places the ticks; the rate is the nominal one.
                    let u = Unwrap::new(info.counter_bits, last.ticks);
                    unwrap = Some(u);
                    trace.clock = Some((info, std::vec![Anchor { ticks: u.dump_ticks(), ..*last }]));
                } else {
                    trace.clock = Some((info, anchors));
                }
            }
            SectionData::Modules(mods) => {
                trace.modules = mods
                    .iter()
                    .map(|m| ModuleEntry {
                        start: m.start,
                        end: m.end,
                        bias: m.bias,
                        build_id: m.build_id.to_vec(),
                        path: path_from_bytes(m.path),
                        is_main: m.flags & ringtrace_format::layout::MODULE_FLAG_MAIN != 0,
                    })
                    .collect()
            }
            SectionData::Ring(info, records, open) => {
                // Compact records hold 32-bit counter readings whatever the clock section says.
                if unwrap.is_none()
                    && records.compact()
                    && let Some((_, anchors)) = &mut trace.clock
                    && let Some(last) = anchors.last().copied()
                {
                    let u = Unwrap::new(32, last.ticks);
                    unwrap = Some(u);
                    *anchors = std::vec![Anchor { ticks: u.dump_ticks(), ..last }];
                }
                trace.threads.push(scan_ring(info, records, open, dump_ticks(&trace.clock), unwrap, &mut keys))
            }
            SectionData::Sites { base, bytes } => trace.sites = Some((base, bytes.to_vec())),
            SectionData::Calibration(c) => trace.calibration = c.iter().collect(),
            SectionData::Dladdr(table) => {
                trace.dladdr = table
                    .iter()
                    .map(|e| {
                        let name = DladdrName {
                            module: path_from_bytes(e.module),
                            symbol: lossy(e.symbol),
                            symbol_address: e.symbol_address,
                        };
                        (e.key, name)
                    })
                    .collect()
            }
            SectionData::Unbalanced(entries) => trace.unbalanced = entries.iter().collect(),
            SectionData::Names(table) => trace.packed = packed_names(table),
            SectionData::End => {}
            SectionData::Unknown(code) => trace.skipped_sections.push(code),
        }
    }
    trace.keys = keys.into_iter().collect();
    trace.keys.sort_unstable();
    Ok(trace)
}

/// The names section as owned names by key. Out of line: it runs once per
/// dump, and kept apart it leaves the ring loop of [`decode`] as it is.
#[cold]
#[inline(never)]
fn packed_names(table: ringtrace_format::read::NamesTable<'_>) -> HashMap<u64, PackedKey> {
    table
        .iter()
        .map(|n| {
            let frames = n
                .frames()
                .map(|f| PackedFrame {
                    function: lossy(f.function),
                    file: (!f.file.is_empty()).then(|| lossy(f.file)),
                    line: (f.line != 0).then_some(f.line),
                })
                .collect();
            (n.key, PackedKey { source: n.source, frames })
        })
        .collect()
}

/// For a file that is not a dump, what it looks like and what to do with it
/// (an ELF binary, an archive, compressed data); empty otherwise.
pub fn not_a_dump_hint(error: &ReadError, bytes: &[u8]) -> &'static str {
    if !matches!(error, ReadError::NotADump { .. }) {
        return "";
    }
    if bytes.starts_with(b"\x7fELF") {
        " (this is an ELF binary: give the dump to convert, and the binary it was recorded from with --exe)"
    } else if bytes.starts_with(&[0x1f, 0x8b]) || bytes.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
        " (this is gzip or zstd data: `rtconv batch` and `rtconv stats` read .tar.gz and .tar.zst archives of dumps)"
    } else if bytes.get(257..262) == Some(b"ustar") {
        " (this is a tar archive: `rtconv batch` and `rtconv stats` read archives of dumps)"
    } else {
        ""
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn path_from_bytes(b: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::OsStr::from_bytes(b).into()
}
