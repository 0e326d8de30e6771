//! Writing a complete dump of every thread's ring.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::vec::Vec;

use ringtrace_format::layout::{END_SECTION_SIZE, MODULE_FLAG_MAIN, RING_FLAG_THREAD_EXITED};
use ringtrace_format::{DumpReason, IoSink, MetaInfo, Module, Record, RingInfo, WriteError, Writer};

use crate::thread::{self, ThreadRing};
use crate::{clock, os, sites};

/// What a dump contained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DumpStats {
    /// Rings written (one per thread that recorded a span).
    pub rings: usize,
    /// Records written.
    pub records: u64,
    /// Records written by the threads but not in the dump: overwritten in a
    /// full ring, or being overwritten while the dump copied the ring.
    pub lost: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Writes a dump of every thread's ring to the file at `path`.
pub fn dump_to_file(path: impl AsRef<Path>) -> io::Result<DumpStats> {
    let file = File::create(path)?;
    let mut out = BufWriter::with_capacity(1 << 16, file);
    let stats = dump_to_writer(&mut out)?;
    out.flush()?;
    Ok(stats)
}

/// Writes a dump of every thread's ring to `out`. Threads may keep
/// recording meanwhile; records they overwrite during the copy are counted
/// as lost, never written torn.
pub fn dump_to_writer<W: Write>(out: W) -> io::Result<DumpStats> {
    let mut w = Writer::new(IoSink(out), core::mem::size_of::<usize>() as u8).map_err(io_error)?;
    let process_name = os::process_name();
    w.meta(&MetaInfo {
        pid: std::process::id(),
        reason: DumpReason::Requested,
        producer: b"ringtrace",
        producer_version: env!("CARGO_PKG_VERSION").as_bytes(),
        process_name: process_name.as_bytes(),
    })
    .map_err(io_error)?;

    // Everything needed to name and time spans goes before the rings, so a
    // dump cut short loses rings, never the means to read the others.
    let now = os::anchor();
    let anchors: Vec<_> = thread::start_anchor().into_iter().chain([now]).collect();
    w.clock(&clock::info(), &anchors).map_err(io_error)?;

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

    let mut stats = DumpStats::default();
    let rings: Vec<&'static ThreadRing> = thread::lock_registry().clone();
    let mut buf: Vec<Record> = Vec::new();
    for t in rings {
        buf.clear();
        buf.resize(t.ring.capacity(), Record::default());
        let exited = t.exited.load(core::sync::atomic::Ordering::Acquire);
        let writer_may_run = !exited && !thread::is_current(t);
        let snap = t.ring.snapshot(&mut buf, writer_may_run);
        let info = RingInfo {
            tid: t.tid,
            capacity: t.ring.capacity() as u64,
            written: snap.written,
            dropped: 0,
            flags: if exited { RING_FLAG_THREAD_EXITED } else { 0 },
            name: t.name.as_bytes(),
        };
        w.ring(&info, &buf[..snap.copied]).map_err(io_error)?;
        stats.rings += 1;
        stats.records += snap.copied as u64;
        stats.lost += snap.written - snap.copied as u64;
    }

    stats.bytes = w.position() + END_SECTION_SIZE as u64;
    w.finish().map_err(io_error)?;
    Ok(stats)
}

fn io_error(e: WriteError<io::Error>) -> io::Error {
    match e {
        WriteError::Sink(e) => e,
        other => io::Error::other(std::format!("{other}")),
    }
}
