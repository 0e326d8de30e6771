//! Writing a complete dump of every thread's ring.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::vec::Vec;

use ringtrace_format::layout::{
    ARG_KEY, END_SECTION_SIZE, FLAGS_KEY, MODULE_FLAG_MAIN, RING_FLAG_THREAD_EXITED, split_key,
};
use ringtrace_format::{
    DladdrEntry, DumpReason, IoSink, MetaInfo, Module, Record, RingInfo, Unbalanced, WriteError, Writer,
};

use crate::open::OPEN_DEPTH;
use crate::ring::Snapshot;
use crate::thread;
use crate::thread::ThreadRing;
use crate::{clock, os, sites};

/// What a dump contained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Rings written (one per thread that recorded a span).
    pub rings: usize,
    /// Spans written.
    pub records: u64,
    /// Spans recorded by the threads but not in the dump: overwritten in a
    /// full ring, being overwritten while the dump copied the ring, or
    /// dropped by a full stop-when-full ring.
    pub lost: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes a dump of every thread's ring to the file at `path`.
///
/// With the `off` feature it writes nothing and returns empty stats.
pub fn dump_to_file(path: impl AsRef<Path>) -> io::Result<DumpStats> {
    dump_to_file_for(path.as_ref(), DumpReason::Requested)
}

pub(crate) fn dump_to_file_for(path: &Path, reason: DumpReason) -> io::Result<DumpStats> {
    if cfg!(feature = "off") {
        return Ok(DumpStats::default());
    }
    let file = File::create(path)?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let stats = dump(&mut out, reason)?;
    out.flush()?;
    Ok(stats)
}

/// Writes a dump of every thread's ring to `out`. Threads may keep
/// recording meanwhile; records they overwrite during the copy are counted
/// as lost, never written torn. The rings of threads that have exited are
/// freed once written.
///
/// With the `off` feature it writes nothing and returns empty stats.
pub fn dump_to_writer<W: Write>(out: W) -> io::Result<DumpStats> {
    if cfg!(feature = "off") {
        return Ok(DumpStats::default());
    }
    dump(out, DumpReason::Requested)
}

/// A dump's writer over `out`.
pub(crate) type DumpWriter<W> = Writer<IoSink<W>>;

/// Starts a dump on `out`: the file header, then everything needed to name
/// and time spans — meta, clock (with `anchors`), modules, sites — so a dump
/// cut short loses rings, never the means to read the others. Returns the
/// writer and the site section's range (keys in it are not code addresses).
pub(crate) fn write_head<W: Write>(
    out: W,
    reason: DumpReason,
    anchors: &[ringtrace_format::Anchor],
) -> io::Result<(DumpWriter<W>, SiteRange)> {
    let mut w = Writer::new(IoSink(out), core::mem::size_of::<usize>() as u8).map_err(io_error)?;
    let process_name = os::process_name();
    w.meta(&MetaInfo {
        pid: std::process::id(),
        reason,
        producer: b"ringtrace",
        producer_version: env!("CARGO_PKG_VERSION").as_bytes(),
        process_name: process_name.as_bytes(),
    })
    .map_err(io_error)?;
    w.clock(&clock::info(), anchors).map_err(io_error)?;

    let modules = os::loaded_modules();
    let table: Vec<Module<'_>> = modules
        .iter()
        .map(|m| Module {
            start: m.start,
            end: m.end,
            bias: m.bias,
            flags: if m.is_main { MODULE_FLAG_MAIN } else { 0 },
            build_id: &m.build_id,
            path: &m.path,
        })
        .collect();
    w.modules(&table).map_err(io_error)?;

    let (base, bytes) = sites::section();
    w.sites(base, bytes).map_err(io_error)?;
    Ok((w, SiteRange { base, len: bytes.len() as u64 }))
}

/// Where the site descriptors are: keys in it are sites, the others code addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SiteRange {
    base: u64,
    len: u64,
}

impl SiteRange {
    /// The code address a record's key names (its depth tag taken off), if
    /// it names one: not a site, not an argument or flags record.
    pub(crate) fn code(&self, raw: u64) -> Option<u64> {
        if raw == ARG_KEY || raw == FLAGS_KEY {
            return None;
        }
        let key = split_key(raw).0;
        (key.wrapping_sub(self.base) >= self.len).then_some(key)
    }
}

/// Ends a dump: the recorder's measured cost, what the hooks could not
/// record, `dladdr` names for `code_keys`, the end marker. Returns the sink
/// and the dump's length in bytes.
pub(crate) fn write_tail<W: Write>(
    mut w: DumpWriter<W>,
    calibration: &[ringtrace_format::Calibration],
    unbalanced: &[Unbalanced],
    code_keys: BTreeSet<u64>,
) -> io::Result<(W, u64)> {
    w.calibration(calibration).map_err(io_error)?;
    if !unbalanced.is_empty() {
        w.unbalanced(unbalanced).map_err(io_error)?;
    }
    let resolved: Vec<_> = code_keys.into_iter().filter_map(os::dladdr).collect();
    let table: Vec<DladdrEntry<'_>> = resolved
        .iter()
        .map(|d| DladdrEntry { key: d.key, symbol_address: d.symbol_address, module: &d.module, symbol: &d.symbol })
        .collect();
    w.dladdr(&table).map_err(io_error)?;
    let bytes = w.position() + END_SECTION_SIZE as u64;
    w.finish().map(|sink| (sink.0, bytes)).map_err(io_error)
}

fn dump<W: Write>(out: W, reason: DumpReason) -> io::Result<DumpStats> {
    // Measured before taking the registry lock, on this thread's clock reads.
    let calibration = thread::calibration();
    let anchors: Vec<_> = match thread::start_anchor() {
        Some(start) => std::vec![start, dump_anchor(start)],
        None => std::vec![os::anchor()],
    };
    let (mut w, sites) = write_head(out, reason, &anchors)?;

    let mut stats = DumpStats::default();
    // Held for the whole dump: dumps are serialised, and a thread starting
    // its first span waits (once) until this one is written.
    let mut rings = thread::lock_registry();
    if let Some(&latest) = anchors.last() {
        crate::directory::set_latest(latest);
    }
    let mut buf: Vec<Record> = Vec::new();
    let mut written_exited = Vec::new();
    let mut code_keys = BTreeSet::new();
    let mut unbalanced = Vec::new();
    for (i, t) in rings.iter().enumerate() {
        let (too_deep, abandoned) = t.track.unrecorded();
        if too_deep + abandoned > 0 {
            unbalanced.push(Unbalanced { tid: t.tid, too_deep, abandoned });
        }
        let (snap, exited) = write_ring(&mut w, t, &mut buf, sites, &mut code_keys)?;
        stats.rings += 1;
        let spans_kept = buf[..snap.copied].iter().filter(|r| r.key != ARG_KEY && r.key != FLAGS_KEY).count() as u64;
        stats.records += spans_kept;
        stats.lost += (snap.written - snap.aux).saturating_sub(spans_kept) + snap.dropped;
        // A streamed ring is freed by its stream, once drained.
        if exited && !t.streamed {
            written_exited.push(i);
        }
    }

    stats.bytes = write_tail(w, &calibration, &unbalanced, code_keys)?.1;
    // Rings of exited threads have been written: free them.
    for i in written_exited.into_iter().rev() {
        rings.swap_remove(i);
    }
    Ok(stats)
}

/// Writes `t`'s ring whole, with the spans open now, copied through `buf`
/// (which then holds the records written); adds its code-address keys to
/// `code_keys`. Returns the snapshot and whether the thread had exited.
pub(crate) fn write_ring<W: Write>(
    w: &mut DumpWriter<W>,
    t: &ThreadRing,
    buf: &mut Vec<Record>,
    sites: SiteRange,
    code_keys: &mut BTreeSet<u64>,
) -> io::Result<(Snapshot, bool)> {
    let ring = t.track.ring();
    // Open spans first, then finished ones: a span ending in between is
    // then in both (rtconv drops the open copy), never in neither.
    let mut open = [(0u64, 0u64); OPEN_DEPTH];
    let open_count = t.track.open().snapshot(&mut open).unwrap_or(0);
    buf.clear();
    buf.resize(ring.capacity(), Record::default());
    let exited = t.exited.load(core::sync::atomic::Ordering::Acquire);
    let writer_may_run = !exited && !thread::is_current(t);
    let snap = ring.snapshot(buf, writer_may_run);
    let flags = ring.flags() | if exited { RING_FLAG_THREAD_EXITED } else { 0 };
    let info = RingInfo {
        tid: t.tid,
        capacity: ring.capacity() as u64,
        written: snap.written,
        dropped: snap.dropped,
        aux: snap.aux,
        flags,
        name: t.name.as_bytes(),
    };
    w.ring(&info, &buf[..snap.copied], &open[..open_count]).map_err(io_error)?;
    let keys = buf[..snap.copied].iter().map(|r| r.key).chain(open[..open_count].iter().map(|o| o.0));
    code_keys.extend(keys.filter_map(|k| sites.code(k)));
    Ok((snap, exited))
}

/// Anchors closer together than this give too coarse a rate.
const MIN_ANCHOR_SPAN_NS: u64 = 20_000_000;

/// The dump-time anchor. A dump taken less than 20 ms after recording began
/// waits out the rest, so the two anchors give the counter rate to about
/// one part in 10^5 even on CPUs that do not report their TSC rate.
fn dump_anchor(start: ringtrace_format::Anchor) -> ringtrace_format::Anchor {
    let now = os::anchor();
    let elapsed = now.mono_ns.saturating_sub(start.mono_ns);
    if elapsed >= MIN_ANCHOR_SPAN_NS {
        return now;
    }
    std::thread::sleep(core::time::Duration::from_nanos(MIN_ANCHOR_SPAN_NS - elapsed));
    os::anchor()
}

pub(crate) fn io_error(e: WriteError<io::Error>) -> io::Error {
    match e {
        WriteError::Sink(e) => e,
        other => io::Error::other(std::format!("{other}")),
    }
}
