//! `rtconv batch` and `rtconv stats` over many dumps: every input expanded
//! (`inputs`), dumps converted in parallel on a rayon pool of `jobs`
//! threads with one symbolization cache for the whole batch (keyed by
//! build-id), and a failed dump reported and skipped. What a batch has to
//! say while it runs — each dump's diagnostics, how far it has read — goes
//! to the caller's [`Observer`] as it happens (the command line draws a
//! progress bar and prints the lines); nothing is printed here.
//!
//! Memory: the reading thread keeps at most `jobs` dumps queued, and each
//! worker converts one, so the batch holds about `2 × jobs + 1` dumps and
//! `jobs` conversions (bounded by the largest ring, see [`crate::model`])
//! whatever the size of the archives.

mod inputs;
mod naming;

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rayon::iter::{ParallelBridge, ParallelIterator};

use crate::convert::{self, Diagnostic, Format, Input};
#[cfg(feature = "parquet")]
use crate::export;
use crate::io::{AtomicFile, Counted};
use crate::symbolize;

pub use inputs::{Compression, archive_kind, dumps_in_archive};

/// How a batch runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// How keys are named.
    pub symbols: symbolize::Options,
    /// The spans kept.
    pub filter: crate::model::Filter,
    /// The largest dump read from an archive, in bytes; a larger one is
    /// reported and skipped.
    pub max_dump_size: u64,
    /// Each output's budget in bytes (`--max-bytes`; timeline formats), if any.
    pub max_bytes: Option<u64>,
}

/// The default [`Options::max_dump_size`]: 4 GiB.
pub const MAX_DUMP_SIZE: u64 = 4 << 30;

/// What a batch did.
#[derive(Debug, Default)]
pub struct Summary {
    /// Dumps converted completely.
    pub converted: u64,
    /// Dumps converted with something missing (damaged, names missing).
    pub salvaged: u64,
    /// Dumps (or archives) that could not be converted at all.
    pub failed: u64,
    /// The largest output written (`batch` into a timeline format) and its bytes.
    pub largest: Option<(PathBuf, u64)>,
    /// Outputs larger than a viewer of their format opens ([`crate::viewers`]).
    pub past_viewers: u64,
}

/// What a batch tells its caller while it runs. Every method is called
/// from the batch's threads, one call at a time.
pub trait Observer: Sync {
    /// The batch starts: its inputs on disk add up to `total_bytes`.
    fn start(&self, total_bytes: u64) {
        let _ = total_bytes;
    }

    /// A line about one input or output: an error (the dump or part is
    /// skipped or lost), a warning, a note.
    fn diagnostic(&self, diagnostic: Diagnostic);

    /// `consumed_bytes` of the inputs are read, and `summary` is what the
    /// batch did so far.
    fn advance(&self, consumed_bytes: u64, summary: &Summary) {
        let _ = (consumed_bytes, summary);
    }

    /// The batch is done with its inputs.
    fn finish(&self) {}
}

/// Diagnostics kept in order, for a caller that reads them afterwards.
impl Observer for Mutex<Vec<Diagnostic>> {
    fn diagnostic(&self, diagnostic: Diagnostic) {
        self.lock().unwrap_or_else(|e| e.into_inner()).push(diagnostic);
    }
}

/// The inputs' total size on disk, for the observer's start.
fn total_bytes(inputs: &[inputs::Input]) -> u64 {
    inputs.iter().filter_map(|i| std::fs::metadata(i.path()).ok()).map(|m| m.len()).sum()
}

/// Runs `work` on every dump of `args` on `opts.jobs` threads; `work` gets
/// the dump's name, what `label` made of that name (called in input order,
/// so labels do not depend on scheduling), and its bytes, and says how it
/// went. Arguments naming nothing and unreadable dumps count as failed.
fn run<L: Send>(
    args: &[PathBuf],
    opts: &Options,
    observer: &dyn Observer,
    mut label: impl FnMut(&str) -> L + Send,
    work: impl Fn(&str, L, &[u8]) -> Outcome + Sync,
) -> Summary {
    let (inputs, problems) = inputs::expand(args);
    observer.start(total_bytes(&inputs));
    let summary = Mutex::new(Summary::default());
    for p in problems {
        observer.diagnostic(Diagnostic::error(p));
        summary.lock().unwrap_or_else(|e| e.into_inner()).failed += 1;
    }
    let consumed = Arc::new(AtomicU64::new(0));
    // No more workers than dumps, where their number is known (no archive to read through).
    let known = inputs.iter().all(|i| matches!(i, inputs::Input::File(_)));
    let jobs = if known { opts.jobs.min(inputs.len()).max(1) } else { opts.jobs.max(1) };
    let count = inputs.len();
    // The reading thread starts first, so a pool that takes what threads are left cannot keep it from starting.
    let items = match inputs::items(inputs, consumed.clone(), jobs, opts.max_dump_size) {
        Ok(items) => items,
        Err(e) => {
            observer.diagnostic(Diagnostic::error(format!(
                "cannot start the thread that reads the inputs ({e}); {count} input(s) not read"
            )));
            let mut summary = summary.into_inner().unwrap_or_else(|e| e.into_inner());
            summary.failed += count as u64;
            observer.finish();
            return summary;
        }
    };
    // Workers as asked; where that many cannot start (too little address space for their stacks),
    // one per CPU, then none but this thread.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = |n: usize| rayon::ThreadPoolBuilder::new().num_threads(n).thread_name(|i| format!("rtconv-{i}")).build();
    let pool = match pool(jobs) {
        Ok(pool) => Some(pool),
        Err(e) => {
            let fewer = if cpus < jobs { pool(cpus).ok() } else { None };
            let instead = fewer.as_ref().map_or("converting on one".to_string(), |_| format!("using {cpus}"));
            observer.diagnostic(Diagnostic::warning(format!("cannot start {jobs} workers ({e}); {instead}")));
            fewer
        }
    };
    // Each dump labelled in input order; an unreadable one carries its reason.
    let items = items.map(move |item| match item {
        inputs::Item::Dump { name, bytes, note } => {
            let label = label(&name);
            Ok(Labelled { name, bytes, label, note })
        }
        inputs::Item::Unreadable { name, reason } => Err((name, reason)),
    });
    let each = |item: Result<Labelled<L>, (String, String)>| {
        let outcome = match item {
            Ok(Labelled { name, bytes, label, note }) => {
                if let Some(note) = note {
                    observer.diagnostic(Diagnostic::warning(note));
                }
                let outcome = work(&name, label, &bytes);
                match (outcome, convert::shrinking(Path::new(&name), &bytes)) {
                    (Outcome::Converted, Some(d)) => {
                        observer.diagnostic(d);
                        Outcome::Salvaged
                    }
                    _ => outcome,
                }
            }
            Err((name, reason)) => {
                observer.diagnostic(Diagnostic::error(format!("{name}: {reason}; skipped")));
                Outcome::Failed
            }
        };
        let mut s = summary.lock().unwrap_or_else(|e| e.into_inner());
        s.count(outcome);
        observer.advance(consumed.load(Ordering::Relaxed), &s);
    };
    match pool {
        Some(pool) => pool.install(|| items.par_bridge().for_each(each)),
        None => items.for_each(each),
    }
    observer.finish();
    summary.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// A dump of the batch, as a worker gets it.
struct Labelled<L> {
    name: String,
    bytes: inputs::Bytes,
    /// What the batch's `label` made of its name.
    label: L,
    /// A warning about how it was read.
    note: Option<String>,
}

/// How one dump went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Converted,
    Salvaged,
    Failed,
}

impl Summary {
    fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Converted => self.converted += 1,
            Outcome::Salvaged => self.salvaged += 1,
            Outcome::Failed => self.failed += 1,
        }
    }
}

/// Hands a conversion's diagnostics to `observer` and says how it went.
fn outcome(report: convert::Report, observer: &dyn Observer) -> Outcome {
    let degraded = report.degraded();
    for d in report.diagnostics {
        observer.diagnostic(d);
    }
    if degraded { Outcome::Salvaged } else { Outcome::Converted }
}

/// The file extension of a format's output.
pub fn extension(format: Format) -> &'static str {
    match format {
        Format::Chrome(_) => "json",
        Format::Folded => "folded",
        Format::Flamegraph => "svg",
        Format::Ftrace => "ftrace.txt",
        Format::Systrace => "systrace.txt",
        Format::Perfetto => "perfetto-trace",
        Format::Pprof => "pb.gz",
        Format::Firefox => "firefox.json",
        Format::Stats(_) => "stats.txt",
    }
}

/// `rtconv batch`: converts every dump of `args` into `format`, one output
/// per dump in `out_dir` (created if needed), named after it. `Err`: the
/// directory cannot be made (nothing was read).
pub fn convert_all(
    args: &[PathBuf],
    format: Format,
    out_dir: &Path,
    opts: &Options,
    observer: &dyn Observer,
) -> std::io::Result<Summary> {
    std::fs::create_dir_all(out_dir)?;
    let cache = symbolize::Cache::default();
    let mut namer = naming::Namer::default();
    let label = move |name: &str| namer.name(name, extension(format));
    // Each output's size, for the note on what its viewers open.
    let opens = crate::viewers::of(format).iter().map(|v| v.max_bytes).min().unwrap_or(u64::MAX);
    let largest: Mutex<Option<(PathBuf, u64)>> = Mutex::new(None);
    let past_viewers = AtomicU64::new(0);
    let mut summary = run(args, opts, observer, label, |name, file_name, bytes| {
        // Written beside its name and renamed into place when complete: whatever
        // is planted under that name (a hard link, a FIFO, a symbolic link) is replaced.
        let target = out_dir.join(&file_name);
        let file = match AtomicFile::create(&target) {
            Ok(file) => file,
            Err(e) => {
                observer.diagnostic(Diagnostic::error(format!(
                    "{} (from {name}): cannot create: {e}; skipped",
                    target.display()
                )));
                return Outcome::Failed;
            }
        };
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let input = Input::new(Path::new(name), bytes, &opts.symbols, &opts.filter, &cache);
        let mut counted = Counted::new(&mut out);
        let converted = match opts.max_bytes {
            Some(max_bytes) => {
                convert::convert_within(input, format, convert::Budget { max_bytes, gzip: false }, &mut counted)
            }
            None => convert::convert_bytes(input, format, &mut counted),
        };
        let size = counted.bytes;
        let written = match converted {
            Ok(report) => out
                .into_inner()
                .map_err(std::io::IntoInnerError::into_error)
                .and_then(AtomicFile::commit)
                .map(|()| report)
                .map_err(convert::ConvertError::Output),
            Err(e) => Err(e),
        };
        match written {
            Ok(report) => {
                if size > opens {
                    past_viewers.fetch_add(1, Ordering::Relaxed);
                }
                let mut largest = largest.lock().unwrap_or_else(|e| e.into_inner());
                if largest.as_ref().is_none_or(|(_, b)| size > *b) {
                    *largest = Some((target, size));
                }
                drop(largest);
                outcome(report, observer)
            }
            Err(convert::ConvertError::Output(e)) => {
                observer.diagnostic(Diagnostic::error(format!(
                    "{} (from {name}): {e}; nothing written, skipped",
                    target.display()
                )));
                Outcome::Failed
            }
            Err(e) => {
                observer.diagnostic(Diagnostic::error(format!("{e}; skipped")));
                Outcome::Failed
            }
        }
    });
    summary.largest = largest.into_inner().unwrap_or_else(|e| e.into_inner());
    summary.past_viewers = past_viewers.into_inner();
    Ok(summary)
}

/// `rtconv export` and `rtconv batch -f parquet`: every dump of `args` into
/// the Parquet tables under `out_dir` ([`crate::export`]), one part file per
/// worker in use, each dump's rows in one part.
#[cfg(feature = "parquet")]
pub fn export_all(
    args: &[PathBuf],
    out_dir: &Path,
    host: Option<&str>,
    opts: &Options,
    observer: &dyn Observer,
) -> Summary {
    let cache = symbolize::Cache::default();
    // Parts not in use, with the dumps written to each, and how many were made: a worker takes
    // one (or makes the next) only for a dump that loaded, so every part holds a dump.
    let free: Mutex<Vec<(export::Parts, u64)>> = Mutex::new(Vec::new());
    let made = AtomicU64::new(0);
    let mut summary = run(
        args,
        opts,
        observer,
        |name| name.to_string(),
        |name, _, bytes| {
            let input = Input::new(Path::new(name), bytes, &opts.symbols, &opts.filter, &cache);
            let written = convert::with_timeline(input, false, |tl| {
                let taken = free.lock().unwrap_or_else(|e| e.into_inner()).pop();
                let (mut part, dumps) = match taken {
                    Some(part) => part,
                    None => match export::Parts::new(out_dir, made.fetch_add(1, Ordering::Relaxed) as usize) {
                        Ok(part) => (part, 0),
                        Err(e) => return (Err(format!("{e} (for {name}); skipped")), Default::default()),
                    },
                };
                match part.dump(tl, name, export::Host(host)) {
                    Ok(found) => {
                        free.lock().unwrap_or_else(|e| e.into_inner()).push((part, dumps + 1));
                        (Ok(()), found)
                    }
                    // Part of this dump's rows may be in the part: the part is dropped, not kept.
                    Err(e) => {
                        let lost = if dumps > 0 {
                            format!("; the {dumps} dump(s) written to the same part file are lost")
                        } else {
                            String::new()
                        };
                        (Err(format!("{name}: {e}{lost}")), Default::default())
                    }
                }
            });
            match written {
                Ok((Ok(()), report)) => outcome(report, observer),
                Ok((Err(line), _)) => {
                    observer.diagnostic(Diagnostic::error(line));
                    Outcome::Failed
                }
                Err(e) => {
                    observer.diagnostic(Diagnostic::error(format!("{e}; skipped")));
                    Outcome::Failed
                }
            }
        },
    );
    for (part, dumps) in free.into_inner().unwrap_or_else(|e| e.into_inner()) {
        if let Err(e) = part.finish() {
            observer.diagnostic(Diagnostic::error(format!("{e}; the {dumps} dump(s) of that part are not written")));
            summary.failed += dumps;
            summary.converted = summary.converted.saturating_sub(dumps);
        }
    }
    summary
}

/// What packing one dump file did.
#[derive(Debug)]
pub struct Packed {
    /// The dump.
    pub path: PathBuf,
    /// What was appended, or why nothing was.
    pub result: Result<crate::pack::Report, crate::pack::PackError>,
}

/// `rtconv pack` and `rtconv batch --pack`: packs every dump file the inputs
/// name, in place, on `opts.jobs` threads ([`crate::pack`]); returns what
/// became of each, in input order. Dumps inside archives cannot be packed in
/// place: each archive counts as failed, with a line saying so.
pub fn pack_all(args: &[PathBuf], opts: &Options, observer: &dyn Observer) -> (Summary, Vec<Packed>) {
    use rayon::iter::IntoParallelRefIterator;
    let (inputs, problems) = inputs::expand(args);
    let mut summary = Summary { failed: problems.len() as u64, ..Summary::default() };
    for problem in problems {
        observer.diagnostic(Diagnostic::error(problem));
    }
    let files: Vec<&Path> = inputs
        .iter()
        .filter_map(|input| match input {
            inputs::Input::File(path) => Some(path.as_path()),
            inputs::Input::Archive(path, _) => {
                observer.diagnostic(Diagnostic::error(format!(
                    "{}: dumps inside an archive cannot be packed in place; unpack it and pack the files, or \
                     convert it where the binaries are with --out-dir",
                    path.display()
                )));
                summary.failed += 1;
                None
            }
        })
        .collect();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.jobs).build();
    let pack_one = |path: &&Path| Packed { path: path.to_path_buf(), result: crate::pack::pack(path, &opts.symbols) };
    let packed: Vec<Packed> = match pool {
        Ok(pool) => pool.install(|| files.par_iter().map(pack_one).collect()),
        Err(_) => files.iter().map(pack_one).collect(),
    };
    for p in &packed {
        summary.count(match &p.result {
            Ok(report) if report.unnamed > 0 => Outcome::Salvaged,
            Ok(_) => Outcome::Converted,
            Err(_) => Outcome::Failed,
        });
    }
    (summary, packed)
}

/// `rtconv stats` over many dumps: per-function figures merged across them
/// (histograms merged, not percentiles averaged), one table per build-id of
/// the dumps' main executable, with the number of dumps each function is in.
pub fn stats_all(
    args: &[PathBuf],
    stats: crate::stats::Options,
    opts: &Options,
    observer: &dyn Observer,
    out: &mut dyn Write,
) -> std::io::Result<Summary> {
    let (groups, summary) = merge_all(args, stats.calibrated, stats.clean, opts, observer);
    let scopes: Vec<crate::stats::Scope> = groups
        .into_iter()
        .map(|((program, build_id), merged)| {
            let id = if build_id.is_empty() { "no build-id".to_string() } else { format!("build-id {build_id}") };
            let name = format!("{} ({id}), {} dumps", if program.is_empty() { "?" } else { &program }, merged.dumps);
            let filtered = merged.filtered;
            let mut scope = merged.scope(name, stats.sort, stats.clean);
            if !opts.filter.is_none() {
                scope.filter = Some((opts.filter.describe(), filtered));
            }
            scope
        })
        .collect();
    crate::render::stats_table::write(&scopes, stats.output, stats.color, out)?;
    out.flush()?;
    Ok(summary)
}

/// Runs `compute` on the timeline of every dump `args` name (on `opts.jobs`
/// workers), and hands each result with its dump's report to `take`; a dump
/// that cannot be read is reported and skipped.
fn each_timeline<T>(
    args: &[PathBuf],
    opts: &Options,
    observer: &dyn Observer,
    calibrated: bool,
    compute: impl Fn(&crate::model::Timeline<'_>) -> (T, crate::model::Anomalies) + Sync,
    take: impl Fn(T, &convert::Report) + Sync,
) -> Summary {
    let cache = symbolize::Cache::default();
    run(
        args,
        opts,
        observer,
        |_| (),
        |name, (), bytes| {
            let input = Input::new(Path::new(name), bytes, &opts.symbols, &opts.filter, &cache);
            let computed = convert::with_timeline(input, calibrated, &compute);
            match computed {
                Ok((value, report)) => {
                    take(value, &report);
                    outcome(report, observer)
                }
                Err(e) => {
                    observer.diagnostic(Diagnostic::error(format!("{e}; skipped")));
                    Outcome::Failed
                }
            }
        },
    )
}

/// Per-function figures, merged over dumps, by (program, build-id of its main executable).
pub type MergedByBuild = std::collections::BTreeMap<(String, String), crate::stats::Merged>;

/// Per-function figures of every dump `args` name, merged per (program,
/// build-id of its main executable) — what `rtconv stats` prints for many
/// dumps and `rtconv diff` compares; `calibrated` takes the recorder's cost
/// out, `clean` keeps every call's duration for outlier cleaning.
pub fn merge_all(
    args: &[PathBuf],
    calibrated: bool,
    clean: bool,
    opts: &Options,
    observer: &dyn Observer,
) -> (MergedByBuild, Summary) {
    let groups: Mutex<MergedByBuild> = Mutex::default();
    let summary = each_timeline(
        args,
        opts,
        observer,
        calibrated,
        |tl| {
            let main = tl.trace.modules.iter().find(|m| m.is_main);
            let build_id = main.map_or(String::new(), |m| symbolize::hex(&m.build_id));
            let program = tl.trace.process.name.clone();
            let (totals, found) = crate::stats::totals(tl, calibrated, clean);
            (((program, build_id), totals), found)
        },
        |(group, totals), report| {
            let mut groups = groups.lock().unwrap_or_else(|e| e.into_inner());
            let merged = groups.entry(group).or_default();
            merged.add(totals);
            merged.filtered += report.filtered;
        },
    );
    (groups.into_inner().unwrap_or_else(|e| e.into_inner()), summary)
}

/// The collapsed stacks (`-f folded`'s, path and self ns) of every dump
/// `args` name, added up path by path: a differential flame graph's side.
pub fn stacks_all(args: &[PathBuf], opts: &Options, observer: &dyn Observer) -> (Vec<(String, u64)>, Summary) {
    let merged: Mutex<std::collections::HashMap<String, u64>> = Mutex::default();
    let summary = each_timeline(args, opts, observer, false, crate::render::folded::stacks, |stacks, _| {
        let mut merged = merged.lock().unwrap_or_else(|e| e.into_inner());
        for (path, weight) in stacks {
            *merged.entry(path).or_default() += weight;
        }
    });
    let mut stacks: Vec<(String, u64)> = merged.into_inner().unwrap_or_else(|e| e.into_inner()).into_iter().collect();
    stacks.sort_unstable();
    (stacks, summary)
}
