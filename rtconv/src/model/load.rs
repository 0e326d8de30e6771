//! Reading a dump file into the decoded model, salvaging what a damaged file still holds.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY, RING_FLAG_KEY_DEPTH, SPAN_FLAG_UNWOUND, WRAP_KEY};
use ringtrace_format::read::{OpenSpans, Records};
use ringtrace_format::{Anchor, Dump, ReadError, RingInfo, SectionData};

use super::counter_unwrap::CounterUnwrap;
use super::nest_check::{DepthCheck, DepthRuns, NestingCheck};
use super::trace::{
    Clock, DladdrName, KeyDepth, ModuleEntry, OpenSpan, PackedFrame, PackedKey, Process, RecordSource, SiteTable,
    ThreadTrace, Trace, depth_tag, is_span_record,
};
use crate::io::{FileBytes, Pages, map_file};

/// The depth tag of the open span at `index` of the open stack (outermost first): the same
/// tag the recorder would give it when it ends (depths past 254 are not stated).
fn depth_of_open(index: usize) -> u8 {
    u8::try_from(index + 1).unwrap_or(0)
}

/// The counter at dump time: the last anchor, if the clock section came first.
fn dump_ticks(clock: Option<&Clock>) -> u64 {
    clock.and_then(|c| c.anchors.last()).map_or(0, |a| a.ticks)
}

/// Reads a ring section's records once (see [`scan`]).
fn scan_ring<'a>(
    info: RingInfo<'a>,
    records: Records<'a>,
    open: OpenSpans<'a>,
    dump_ticks: u64,
    unwrap: Option<CounterUnwrap>,
    keys: &mut rustc_hash::FxHashSet<u64>,
) -> ThreadTrace<'a> {
    let compact = records.compact();
    let (records, open, dump_ticks, after_anchor): (RecordSource<'a>, Vec<OpenSpan>, u64, u64) = match unwrap {
        Some(u) => {
            let (records, after) = u.records(&records);
            let open = open.iter().map(|(key, enter)| OpenSpan { key, enter: u.before_dump(enter), depth: 0 });
            (RecordSource::Unwrapped(records), open.collect(), u.dump_ticks(), after)
        }
        None => (
            RecordSource::File(records),
            open.iter().map(|(key, enter)| OpenSpan { key, enter, depth: 0 }).collect(),
            dump_ticks,
            0,
        ),
    };
    let mut thread = scan(info, records, open, dump_ticks, compact, keys);
    thread.after_anchor = after_anchor;
    thread
}

/// A streamed ring as its chunks arrive: the last chunk's counts and open
/// spans are the ring's.
struct Stream<'a> {
    info: RingInfo<'a>,
    records: super::chunked::ChunkedRecords<'a>,
    open: OpenSpans<'a>,
}

/// What [`scan`] gathers from a ring's records, one record at a time.
struct RingScan<'k> {
    tagged: KeyDepth,
    keys: &'k mut rustc_hash::FxHashSet<u64>,
    /// Start ticks of the spans open at the dump.
    open_enters: &'k rustc_hash::FxHashSet<u64>,
    /// (key, start) of finished spans that started when an open one did.
    ended_while_dumping: rustc_hash::FxHashSet<(u64, u64)>,
    finished: u64,
    first_enter: u64,
    unwound: u64,
    /// The flags record's value, for the span record after it.
    flags: u64,
    /// The first span's end (meaningful once `finished > 0`).
    oldest_exit: u64,
    /// Nesting by time, for a ring whose keys state no depth.
    nesting: NestingCheck,
    /// Nesting by depth and time, for one whose keys do.
    runs: DepthRuns,
    /// The keys added lately, direct-mapped by hash; [`NO_KEY`] in a slot never filled.
    seen: [u64; 256],
    prefixed: bool,
    /// Whether any span is open at the dump (`open_enters` is not empty).
    any_open: bool,
    /// Records read so far that are not spans (flags, argument and wrap records): with
    /// `finished`, the next record's position.
    others: u64,
    /// Where keys carry depth: the oldest span record's (depth tag, position), then the first
    /// after it at each shallower depth — it and its callers (see `ThreadTrace::lost_by_depth`).
    oldest_and_callers: Vec<(u8, u64)>,
    /// The depth tag of the last of `oldest_and_callers` (256 before the first).
    shallowest: u16,
}

/// A key no span has: a record's key once its depth tag is off is never an argument record's.
const NO_KEY: u64 = ARG_KEY;

impl RingScan<'_> {
    /// Takes the next record. Inlined into each storage's loop (a call per
    /// record otherwise).
    #[inline(always)]
    fn add(&mut self, r: ringtrace_format::Record) {
        if r.key == FLAGS_KEY {
            (self.flags, self.prefixed, self.others) = (r.enter, true, self.others + 1);
            return;
        }
        if r.key == ARG_KEY || r.key == WRAP_KEY {
            self.prefixed |= r.key == ARG_KEY;
            self.others += 1;
            return;
        }
        let (key, depth) = depth_tag(r.key, self.tagged);
        self.oldest_exit = if self.finished == 0 { r.exit } else { self.oldest_exit };
        self.finished += 1;
        self.unwound += u64::from(core::mem::take(&mut self.flags) & SPAN_FLAG_UNWOUND != 0);
        self.first_enter = self.first_enter.min(r.enter);
        if self.tagged == KeyDepth::Used {
            self.runs.add(depth, r.enter, r.exit);
            if u16::from(depth) < self.shallowest {
                self.shallowest_span(depth);
            }
        } else {
            self.nesting.add(r.enter, r.exit);
        }
        // Keys alternate (an interpreter's hundreds, called in turn): a small
        // direct-mapped table of the keys added spares most set lookups.
        let slot = &mut self.seen[(key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize];
        if *slot != key {
            self.keys.insert(key);
            *slot = key;
        }
        if self.any_open && self.open_enters.contains(&r.enter) {
            self.ended_while_dumping.insert((key, r.enter));
        }
    }

    /// The span record just counted is shallower than every one before it: the oldest, or a
    /// caller of it (at most 256 times a ring).
    #[cold]
    fn shallowest_span(&mut self, depth: u8) {
        self.oldest_and_callers.push((depth, self.finished - 1 + self.others));
        self.shallowest = u16::from(depth);
    }
}

/// Reads a ring's records once: counts its spans, notes its earliest start,
/// adds its keys to `keys`, and keeps the open spans that did not also end
/// while the dump was taken (a finished span with the same key and start).
fn scan<'a>(
    info: RingInfo<'a>,
    records: RecordSource<'a>,
    open: Vec<OpenSpan>,
    dump_ticks: u64,
    compact: bool,
    keys: &mut rustc_hash::FxHashSet<u64>,
) -> ThreadTrace<'a> {
    // Keys that carry depth (24-byte records only): the tag comes off before anything uses the key.
    let tagged = if info.flags & RING_FLAG_KEY_DEPTH != 0 && !compact { KeyDepth::Used } else { KeyDepth::Untagged };
    let open_enters: rustc_hash::FxHashSet<u64> = open.iter().map(|o| o.enter).collect();
    let mut scan = RingScan {
        tagged,
        keys,
        open_enters: &open_enters,
        ended_while_dumping: Default::default(),
        finished: 0,
        first_enter: u64::MAX,
        unwound: 0,
        flags: 0,
        oldest_exit: 0,
        nesting: NestingCheck::default(),
        runs: DepthRuns::default(),
        seen: [NO_KEY; 256],
        prefixed: false,
        any_open: !open_enters.is_empty(),
        others: 0,
        oldest_and_callers: Vec::new(),
        shallowest: 256,
    };
    records.for_each(
        false,
        #[inline(always)] // into each storage's loop: a call per record otherwise
        |r| scan.add(r),
    );
    let RingScan {
        keys,
        ended_while_dumping,
        finished,
        mut first_enter,
        unwound,
        oldest_exit,
        mut nesting,
        mut runs,
        prefixed,
        oldest_and_callers,
        ..
    } = scan;
    // An open span's depth is its place in the open stack (outermost first), where keys carry depth.
    let open: Vec<OpenSpan> = open
        .into_iter()
        .enumerate()
        .map(|(i, o)| OpenSpan { depth: if tagged == KeyDepth::Used { depth_of_open(i) } else { 0 }, ..o })
        .collect();
    // Innermost first: each open span then takes the spans inside it as children.
    let open: Vec<OpenSpan> =
        open.into_iter().rev().filter(|o| !ended_while_dumping.contains(&(o.key, o.enter))).collect();
    for o in &open {
        keys.insert(o.key);
        first_enter = first_enter.min(o.enter);
        match tagged {
            KeyDepth::Used => runs.add_open(o.depth, o.enter, dump_ticks.max(o.enter)),
            _ => nesting.add(o.enter, dump_ticks.max(o.enter)),
        }
    }
    let (nested, depths_fit) = match tagged {
        KeyDepth::Used if runs.failed => check_again(&records, tagged, &open, dump_ticks),
        KeyDepth::Used => (true, true),
        _ => (!nesting.broken, true),
    };
    let key_depth = match tagged {
        KeyDepth::Used if !depths_fit => KeyDepth::Ignored,
        kd => kd,
    };
    let count = records.len() as u64;
    let mut trace = ThreadTrace {
        tid: info.tid,
        name: lossy(info.name),
        written: info.written,
        dropped: info.dropped,
        aux: info.aux,
        finished,
        unwound,
        oldest_exit: (finished > 0).then_some(oldest_exit),
        first_enter: (finished > 0 || !open.is_empty()).then_some(first_enter),
        records,
        prefixed,
        open,
        lost_by_depth: Vec::new(),
        nested,
        key_depth,
        dump_ticks,
        compact,
        after_anchor: 0,
    };
    if key_depth == KeyDepth::Used && nested && trace.overwritten() > 0 {
        trace.lost_by_depth = lost_by_depth(&oldest_and_callers, &trace.open, count);
    }
    trace
}

/// `ThreadTrace::lost_by_depth` of a ring that nests and overwrote spans: the oldest span
/// record and its callers (`oldest_and_callers`, as the scan found them in the ring's order),
/// then the open spans shallower than all of them (innermost first, after the `count` records).
/// Empty where a depth is not stated (past 254) or the ring's positions do not fit 32 bits (its
/// spans are then sorted, not placed, and marked by their times).
fn lost_by_depth(oldest_and_callers: &[(u8, u64)], open: &[OpenSpan], count: u64) -> Vec<u32> {
    let Some(&(shallowest, _)) = oldest_and_callers.last() else { return Vec::new() };
    if u32::try_from(count.saturating_add(open.len() as u64)).is_err() {
        return Vec::new();
    }
    let open_callers = open.iter().enumerate().filter(|(_, o)| o.depth < shallowest);
    let open_callers = open_callers.map(|(j, o)| (o.depth, count + j as u64));
    let mut by_depth = vec![u32::MAX; 256];
    for (depth, position) in oldest_and_callers.iter().copied().chain(open_callers) {
        if depth == 0 {
            return Vec::new();
        }
        // Below `count + open.len()`, which fits.
        by_depth[usize::from(depth)] = position as u32;
    }
    by_depth
}

/// Whether a ring whose keys state depths nests by time, and whether its
/// depths fit the order its spans ended in, from the stack checks: for a
/// ring [`DepthRuns`] did not pass (damaged, or deeper than 254 levels).
#[cold]
#[inline(never)]
fn check_again(records: &RecordSource<'_>, tagged: KeyDepth, open: &[OpenSpan], dump_ticks: u64) -> (bool, bool) {
    let (mut nesting, mut depths) = (NestingCheck::default(), DepthCheck::default());
    records.for_each(false, |r| {
        if is_span_record(r.key) {
            nesting.add(r.enter, r.exit);
            depths.add(depth_tag(r.key, tagged).1);
        }
    });
    for o in open {
        nesting.add(o.enter, dump_ticks.max(o.enter));
        depths.add_open(o.depth);
    }
    (!nesting.broken, !depths.broken)
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
    /// A core file or a wire stream without readable rings.
    #[error("{}: {source}", path.display())]
    Converted {
        /// The file.
        path: PathBuf,
        /// Why no rings were read.
        source: ConvertError,
    },
    /// The file header is unusable, so nothing can be salvaged.
    #[error("{}: {source}{hint}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        source: ReadError,
        /// What the file looks like instead, when that is known (an ELF
        /// binary, an archive, compressed data), and what to give instead.
        hint: &'static str,
    },
}

/// Maps the dump at `path` (a regular file; anything else is refused);
/// [`decode`] then reads it.
///
/// An ELF core file is read for the rings it holds ([`crate::core_file`])
/// and yields them as a dump; so is a wire stream ([`crate::wire_file`]).
pub fn open(path: &Path) -> Result<FileBytes, LoadError> {
    let io = |source| LoadError::Io { path: path.into(), source };
    // A dump's every page is read (populated up front); a core's few (its rings), as touched.
    let core = peek_core(path).map_err(io)?;
    let bytes = map_file(path, if core { Pages::OnDemand } else { Pages::Populate }).map_err(io)?;
    let file_time = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    dump_of(bytes, file_time).map_err(|source| LoadError::Converted { path: path.into(), source })
}

/// Why a core file or a wire stream yields no dump.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The core's rings could not be read.
    #[error(transparent)]
    Core(#[from] crate::core_file::CoreError),
    /// The stream's spans could not be read.
    #[error(transparent)]
    Wire(#[from] crate::wire_file::WireFileError),
}

/// A file's `bytes` as a dump: a core's rings ([`crate::core_file`]) or a wire stream's spans
/// ([`crate::wire_file`]) written as one, a dump as it is. `file_time` dates a core's crash.
pub fn dump_of(bytes: FileBytes, file_time: Option<std::time::SystemTime>) -> Result<FileBytes, ConvertError> {
    if crate::core_file::is_core(&bytes) {
        let dump = crate::core_file::to_dump(&bytes, file_time, crate::core_file::Files::Read)?;
        return Ok(FileBytes::from_vec(dump));
    }
    if crate::wire_file::is_wire(&bytes) {
        return Ok(FileBytes::from_vec(crate::wire_file::to_dump(&bytes)?));
    }
    Ok(bytes)
}

/// Whether the file at `path` is read as something else than the dump it is not: a core file or
/// a wire stream (see [`open`]).
pub fn is_converted_file(path: &Path) -> bool {
    let mut head = Vec::new();
    let read = crate::io::open_regular(path)
        .and_then(|f| std::io::Read::read_to_end(&mut std::io::Read::take(f, 64 << 10), &mut head));
    is_core_file(path) || (read.is_ok() && crate::wire_file::is_wire(&head))
}

/// Whether the file at `path` starts as an ELF core file (its rings are read as a dump by [`open`]).
pub fn is_core_file(path: &Path) -> bool {
    peek_core(path).unwrap_or(false)
}

/// Whether the regular file at `path` starts as an ELF core file (its first 64 bytes read).
fn peek_core(path: &Path) -> std::io::Result<bool> {
    let mut head = [0u8; 64];
    let n = std::io::Read::read(&mut crate::io::open_regular(path)?, &mut head)?;
    Ok(crate::core_file::is_core(&head[..n]))
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
        module_ranges: Default::default(),
        threads: Vec::new(),
        keys: Vec::new(),
        sites: None,
        calibration: Vec::new(),
        dladdr: HashMap::new(),
        packed: HashMap::new(),
        unbalanced: Vec::new(),
        damage: None,
        skipped_sections: Vec::new(),
        crash: None,
    };
    let mut keys = rustc_hash::FxHashSet::default();
    let mut unwrap: Option<CounterUnwrap> = None;
    // Streamed rings by stream id, in the order they first appear.
    let mut streams: Vec<Stream<'a>> = Vec::new();
    let mut stream_index: rustc_hash::FxHashMap<u64, usize> = Default::default();
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
                    let u = CounterUnwrap::new(info.counter_bits, last.ticks);
                    unwrap = Some(u);
                    trace.clock = Some(Clock { info, anchors: std::vec![Anchor { ticks: u.dump_ticks(), ..*last }] });
                } else {
                    trace.clock = Some(Clock { info, anchors });
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
                        // Dumps of static musl programs recorded before the flag was set for them name
                        // the main program /proc/self/exe, as musl's dl_iterate_phdr does.
                        is_main: m.flags & ringtrace_format::layout::MODULE_FLAG_MAIN != 0
                            || m.path == b"/proc/self/exe",
                    })
                    .collect();
                trace.module_ranges = super::address::ModuleRanges::new(&trace.modules);
            }
            SectionData::Ring(info, records, open) => {
                // Compact records hold 32-bit counter readings whatever the clock section says.
                if unwrap.is_none()
                    && records.compact()
                    && let Some(clock) = &mut trace.clock
                    && let Some(last) = clock.anchors.last().copied()
                {
                    let u = CounterUnwrap::new(32, last.ticks);
                    unwrap = Some(u);
                    clock.anchors = std::vec![Anchor { ticks: u.dump_ticks(), ..last }];
                }
                trace.threads.push(scan_ring(info, records, open, dump_ticks(trace.clock.as_ref()), unwrap, &mut keys))
            }
            SectionData::RingChunk(info, chunk, records, open) => {
                match stream_index.get(&chunk.stream).and_then(|&i| streams.get_mut(i)) {
                    Some(s) => {
                        s.records.push(records);
                        (s.info, s.open) = (info, open);
                    }
                    None => {
                        let mut chunks = super::chunked::ChunkedRecords::default();
                        chunks.push(records);
                        stream_index.insert(chunk.stream, streams.len());
                        streams.push(Stream { info, records: chunks, open });
                    }
                }
            }
            SectionData::Anchor(anchor) => {
                // A wide counter's later anchors (a narrow counter is placed by the last one only).
                if let Some(clock) = &mut trace.clock
                    && unwrap.is_none()
                {
                    clock.anchors.push(anchor);
                }
            }
            SectionData::Crash { tid, signal, notes, losses } => {
                let lines = |b: &[u8]| lossy(b).lines().map(str::to_owned).collect();
                trace.crash = Some(super::Crash { tid, signal, notes: lines(notes), losses: lines(losses) });
            }
            SectionData::Sites { base, bytes } => trace.sites = Some(SiteTable { base, bytes: bytes.to_vec() }),
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
    let ticks = dump_ticks(trace.clock.as_ref());
    for s in streams {
        let open = s.open.iter().map(|(key, enter)| OpenSpan { key, enter, depth: 0 }).collect();
        trace.threads.push(scan(s.info, RecordSource::Chunks(s.records), open, ticks, false, &mut keys));
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
pub(crate) fn not_a_dump_hint(error: &ReadError, bytes: &[u8]) -> &'static str {
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
