//! Rings out of a core file: a process that died without writing a dump
//! (killed, aborted, crashed where no handler could run, stopped with
//! `gcore`) still held its rings in memory, and its core holds that memory.
//! So does a whole machine's core (QEMU's `dump-guest-memory`, gdb's `gcore`
//! of a bare-metal target), and a firmware's RAM saved by a debugger
//! ([`memory_to_dump`]).
//!
//! Design constraints:
//! - One model: the core's rings are written as an ordinary dump (in
//!   memory), which every command then reads as it reads a dump. Its reason
//!   is `core`; the spans open at the crash end at the core's last timestamp.
//! - The recorder's ring directory (`ringtrace_format::directory`) is found
//!   through the `ringtrace_directory` symbol of a mapped file whose build-id
//!   matches the core's, at its load bias; without such a file, by scanning
//!   the core's memory for the directory's magic.
//! - The core is untrusted: an address is read only if one of the core's
//!   segments holds all of it, lengths are checked against the ring limits
//!   before anything is sized by them, the entry list is followed at most
//!   [`MAX_ENTRIES`](ringtrace_format::directory::MAX_ENTRIES) steps and never
//!   through an entry twice.
//!
//! # Example
//!
//! ```no_run
//! let bytes = std::fs::read("core")?;
//! if rtconv::core_file::is_core(&bytes) {
//!     let dump = rtconv::core_file::to_dump(&bytes, None, rtconv::core_file::Files::Read)?;
//!     let trace = rtconv::model::decode(std::path::Path::new("core"), &dump)?;
//!     println!("{} threads", trace.threads.len());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod elf_core;
mod firmware;
mod memory;
mod modules;
mod rings;

use std::time::SystemTime;

use ringtrace_format::layout::COMPACT_RECORD_SIZE;
use ringtrace_format::{
    Anchor, ClockInfo, CompactRecord, CounterKind, DumpReason, IoSink, MetaInfo, Module, RateSource, Writer,
};

use elf_core::Core;
pub use elf_core::CoreFormatError;
pub use firmware::{Image, memory_to_dump};
use modules::CoreModule;
pub use modules::Files;
use rings::Snapshot;

/// Whether `bytes` are an ELF core file.
pub fn is_core(bytes: &[u8]) -> bool {
    elf_core::is_core(bytes)
}

/// Whether a file's name is one cores are given: `core`, `core.PID`, `NAME.core`.
pub fn is_core_name(name: &str) -> bool {
    name == "core" || name.starts_with("core.") || name.ends_with(".core")
}

/// Why a core yields no rings at all.
#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    /// The core's ELF structure is unusable.
    #[error("{0}")]
    Format(#[from] CoreFormatError),
    /// No ring directory: the program did not link ringtrace, or the page holding it is not in the core.
    #[error(
        "no ringtrace ring directory in this core: the program does not link ringtrace (or links one older than the ring directory), or the core leaves out its data pages (/proc/PID/coredump_filter bit 0); give its dump instead, or a core of a program linked with this ringtrace"
    )]
    NoDirectory,
    /// The memory images leave out the ring directory.
    #[error(
        "the ring directory (at {address:#x}, `ringtrace_directory`) is not in the memory images: give an image of the RAM that holds it (--memory FILE@ADDRESS)"
    )]
    NotInImages {
        /// Where the firmware keeps it.
        address: u64,
    },
    /// A firmware's ELF file does not parse.
    #[error("the firmware's ELF file does not parse ({0}); give the ELF the firmware was built as")]
    Elf(String),
    /// The directory is there but unreadable.
    #[error("the ring directory at {address:#x}: {source}")]
    Directory {
        /// Where it was found.
        address: u64,
        /// What is wrong.
        source: ringtrace_format::directory::DirectoryError,
    },
    /// The in-memory dump could not be written (cannot happen with a `Vec`; kept for the types).
    #[error("cannot write the dump: {0}")]
    Write(String),
}

/// Reads the rings of the core `bytes` (`file_time`, the
/// core's modification time, dates the crash when nothing better does) and
/// writes them as a dump, whose crash section says how the process ended and what the reading
/// estimated or left out.
pub fn to_dump(bytes: &[u8], file_time: Option<SystemTime>, files: Files) -> Result<Vec<u8>, CoreError> {
    let core = Core::parse(bytes)?;
    let mut said = Said::default();
    if core.cut_bytes > 0 {
        said.losses.push(format!(
            "the core is cut short: {} bytes of memory it declares are not in the file (RLIMIT_CORE, or a full disk)",
            core.cut_bytes
        ));
    }
    let snap = Snapshot { memory: &core.memory, endian: core.endian, called: "the core" };
    let modules = if core.is_machine() {
        said.notes
            .push("a whole machine's core (no process, no mapped files): name its code with --exe FIRMWARE.elf".into());
        vec![machine_module(&core)]
    } else {
        modules::of(&core, files)
    };
    let (address, how) = rings::find_directory(snap, &modules, files).ok_or(CoreError::NoDirectory)?;
    if how == rings::Found::Scan && !core.is_machine() {
        said.notes.push(format!(
            "no file with the core's build-id names `ringtrace_directory`; found the directory by its magic at {address:#x}"
        ));
    }
    // The kernel writes the thread that took the signal first (every thread carries the signal);
    // qemu-user gives the signal to that thread alone. A machine's "threads" are its CPUs.
    let fatal = core.threads.iter().find(|t| t.signal != 0).filter(|_| !core.is_machine());
    let process = Process {
        pid: core.pid,
        name: &core.name,
        fatal: fatal.map_or((0, 0), |t| (u64::from(t.tid), u32::from(t.signal))),
        file_time,
    };
    write(snap, address, &modules, files, &process, None, said)
}

/// The one module of a whole machine's core: its code, loaded where its ELF file says (bias 0),
/// anywhere in the address space (the whole 32-bit space; on a 64-bit machine, the core's memory).
fn machine_module(core: &Core<'_>) -> CoreModule {
    let end = if core.word_bytes == 4 { 1 << 32 } else { core.memory.span().map_or(0, |(_, end)| end) };
    CoreModule { start: 0, end, bias: 0, build_id: Vec::new(), path: Vec::new(), is_main: true }
}

/// What the reading estimated (notes) and could not read (losses), one line each.
#[derive(Default)]
struct Said {
    notes: Vec<String>,
    losses: Vec<String>,
}

/// The process a snapshot is of.
struct Process<'n> {
    pid: u32,
    name: &'n [u8],
    /// The thread that took the fatal signal, and the signal; (0, 0) if none.
    fatal: (u64, u32),
    /// When the snapshot was taken, if known (a core file's modification time).
    file_time: Option<SystemTime>,
}

/// Reads the directory at `address` of `snap` and writes its rings as a dump.
fn write(
    snap: Snapshot<'_, '_>,
    address: u64,
    modules: &[CoreModule],
    files: Files,
    process: &Process<'_>,
    counter_hz: Option<u64>,
    mut said: Said,
) -> Result<Vec<u8>, CoreError> {
    let found = rings::read(snap, address).map_err(|source| CoreError::Directory { address, source })?;
    said.losses.extend(found.losses.iter().cloned());
    let mut clock = found.clock;
    if let Some(hz) = counter_hz {
        clock.nominal_hz = hz;
        clock.rate_source = RateSource::User;
    }
    // As a firmware's own dump: compact 12-byte records where the ring words are 32 bits, or the
    // counter is.
    let compact = ringtrace_format::layout::records_compact(found.record_word_bytes as usize, clock.counter_bits);
    if compact {
        clock.counter_bits = clock.counter_bits.min(32);
    }

    let last_ticks = found.rings.iter().filter_map(|r| r.last_ticks()).max();
    let anchors = anchors(&clock, found.start, found.latest, last_ticks, process.file_time, &mut said.notes);

    let mut w = Writer::new(IoSink(Vec::new()), found.pointer_bytes as u8).map_err(write_error)?;
    w.meta(&MetaInfo {
        pid: process.pid,
        reason: DumpReason::Core,
        producer: b"ringtrace",
        producer_version: b"(read from memory by rtconv)",
        process_name: process.name,
    })
    .map_err(write_error)?;
    w.clock(&clock, &anchors).map_err(write_error)?;
    let table: Vec<Module<'_>> = modules
        .iter()
        .map(|m| Module {
            start: m.start,
            end: m.end,
            bias: m.bias,
            flags: if m.is_main { ringtrace_format::layout::MODULE_FLAG_MAIN } else { 0 },
            build_id: &m.build_id,
            path: &m.path,
        })
        .collect();
    w.modules(&table).map_err(write_error)?;
    if let Some((base, sites)) = rings::sites(snap, modules, found.sites, files) {
        w.sites(base, &sites).map_err(write_error)?;
    }
    let mut unbalanced = Vec::new();
    for ring in &found.rings {
        if compact {
            w.begin_ring_sized(&ring.info(), COMPACT_RECORD_SIZE, ring.kept(), ring.open.len() as u64)
                .map_err(write_error)?;
            for r in ring.records() {
                // Truncation keeps what 32-bit slots held, as the firmware's own dump does.
                let c = CompactRecord { key: r.key as u32, enter: r.enter as u32, exit: r.exit as u32 };
                w.compact_record(&c).map_err(write_error)?;
            }
        } else {
            w.begin_ring(&ring.info(), ring.kept(), ring.open.len() as u64).map_err(write_error)?;
            for r in ring.records() {
                w.record(&r).map_err(write_error)?;
            }
        }
        for &(key, enter) in &ring.open {
            w.open_span(key, enter).map_err(write_error)?;
        }
        w.end_section().map_err(write_error)?;
        if ring.too_deep > 0 || ring.abandoned > 0 {
            unbalanced.push(ringtrace_format::Unbalanced {
                tid: ring.tid,
                too_deep: ring.too_deep,
                abandoned: ring.abandoned,
            });
        }
    }
    if !unbalanced.is_empty() {
        w.unbalanced(&unbalanced).map_err(write_error)?;
    }
    let (tid, signal) = process.fatal;
    w.crash(tid, signal, said.notes.join("\n").as_bytes(), said.losses.join("\n").as_bytes()).map_err(write_error)?;
    Ok(w.finish().map_err(write_error)?.0)
}

fn write_error(e: ringtrace_format::WriteError<std::io::Error>) -> CoreError {
    CoreError::Write(e.to_string())
}

/// The dump's anchors: the start anchor, the latest one if later, and one at
/// the core's last timestamp (where the spans open at the crash end), placed
/// by the best rate known — the anchors', else the nominal one, else the
/// run's ticks over its wall-clock time up to the core file's time.
fn anchors(
    clock: &ClockInfo,
    start: Option<Anchor>,
    latest: Option<Anchor>,
    last_ticks: Option<u64>,
    file_time: Option<SystemTime>,
    notes: &mut Vec<String>,
) -> Vec<Anchor> {
    let Some(start) = start else {
        notes.push("the core has no time anchor: spans are placed by counter ticks only".into());
        return Vec::new();
    };
    let mut out = vec![start];
    if let Some(l) = latest.filter(|l| l.mono_ns >= start.mono_ns.saturating_add(1_000_000) && l.ticks > start.ticks) {
        out.push(l);
    }
    let Some(last) = last_ticks.filter(|&t| t > out.last().map_or(0, |a| a.ticks)) else { return out };
    // Nanoseconds per tick, as (ns, ticks).
    let rate = if let [first, l] = out[..] {
        Some((l.mono_ns - first.mono_ns, l.ticks - first.ticks))
    } else if clock.nominal_hz > 0 {
        Some((1_000_000_000, clock.nominal_hz))
    } else {
        let file_ns = file_time
            .and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_nanos()).ok());
        let estimate = file_ns.filter(|&ns| ns > start.real_ns).map(|ns| (ns - start.real_ns, last - start.ticks));
        if estimate.is_some() {
            notes.push(
                "the counter's rate is estimated from the run's ticks and the core file's time (the recorder took one anchor only): durations may be off by the time the core took to write".into(),
            );
        }
        estimate
    };
    let Some((ns, ticks)) = rate.filter(|&(ns, ticks)| ns > 0 && ticks > 0) else { return out };
    let base = *out.last().unwrap_or(&start);
    let elapsed = (u128::from(last - base.ticks) * u128::from(ns) / u128::from(ticks)) as u64;
    // A firmware states no wall-clock time (realtime 0): none is made up.
    let real_ns = if base.real_ns == 0 { 0 } else { base.real_ns.saturating_add(elapsed) };
    out.push(Anchor { ticks: last, mono_ns: base.mono_ns.saturating_add(elapsed), real_ns });
    out
}

/// The clock section of a directory's words.
pub(crate) fn clock_info(counter: u64, bits: u64, nominal_hz: u64, source: u64) -> ClockInfo {
    ClockInfo {
        counter: CounterKind::from_code(counter as u32),
        counter_bits: bits.clamp(1, 64) as u32,
        nominal_hz,
        rate_source: RateSource::from_code(source as u32),
    }
}
