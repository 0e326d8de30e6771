//! `rtconv convert` and `rtconv stats`: read one dump, name its keys, render it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::budget::{self, Choice, Layout, Plan};
use crate::io::FileBytes;
use crate::model::{
    self, Anomalies, Cut, Filter, Filtered, LoadError, MAX_DEPTH, Names, Timebase, TimebaseError, Timeline, Trace,
};
use crate::render;
use crate::stats::{self, View};
use crate::symbolize;

/// Naming problems listed one per line for a dump; beyond, one line counts the rest.
const MAX_PROBLEM_LINES: usize = 20;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Per-function statistics (`rtconv stats`).
    Stats(crate::stats::Options),
    /// Chrome trace event JSON for Perfetto.
    Chrome(render::chrome::Options),
    /// Collapsed stacks weighted by self time (flamegraph.pl, inferno).
    Folded,
    /// The kernel function_graph tracer's text.
    Ftrace,
    /// Systrace text: `tracing_mark_write` begin/end lines.
    Systrace,
    /// A flame graph SVG of self time.
    Flamegraph,
    /// Perfetto's protobuf trace (TrackEvent slices).
    Perfetto,
    /// pprof's gzipped profile.proto.
    Pprof,
    /// The Firefox Profiler's processed profile JSON.
    Firefox,
}

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// What the user asked for, said back (what a filter left out).
    Note,
    /// Worth knowing; the output is complete for what the dump holds.
    Warning,
    /// Data or names the dump should have given are missing from the output.
    Error,
}

/// One line for the user about something the conversion could not do perfectly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// How serious.
    pub level: Level,
    /// The line, naming the file.
    pub message: String,
}

impl Diagnostic {
    /// Data or names missing from the output, or an input skipped.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Error, message: message.into() }
    }

    /// Worth knowing; nothing is missing.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Warning, message: message.into() }
    }
}

impl std::fmt::Display for Diagnostic {
    /// As rtconv prints it: `rtconv: error: …` or `rtconv: warning: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let level = match self.level {
            Level::Note => "note",
            Level::Warning => "warning",
            Level::Error => "error",
        };
        write!(f, "rtconv: {level}: {}", self.message)
    }
}

/// What a conversion did, and what it could not do.
#[derive(Debug, Default)]
pub struct Report {
    /// Spans written.
    pub spans: u64,
    /// Threads written.
    pub threads: usize,
    /// Spans the recorder wrote but the dump does not hold (ring overwrote or dropped them).
    pub lost_spans: u64,
    /// What the filter kept and left out (zero without one).
    pub filtered: Filtered,
    /// One line each: data damaged, names missing, anomalies.
    pub diagnostics: Vec<Diagnostic>,
    /// What an output budget did, if there was one.
    pub budget: Option<BudgetOutcome>,
}

/// What an output budget did ([`convert_within`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BudgetOutcome {
    /// What it left out, if anything.
    pub cut: Option<Cut>,
    /// The bytes the format's size model gave the output (uncompressed; see [`crate::budget`]).
    pub predicted: u64,
    /// The bytes the output took (compressed, for a `.gz` output).
    pub written: u64,
    /// The bytes the output would take with every span the filters keep (uncompressed).
    pub whole: u64,
}

impl Report {
    /// True when the output lacks something the dump should have given: a
    /// damaged dump or unnamed keys. The output is still written.
    pub fn degraded(&self) -> bool {
        self.diagnostics.iter().any(|d| d.level == Level::Error)
    }

    fn push(&mut self, level: Level, message: String) {
        self.diagnostics.push(Diagnostic { level, message });
    }

    /// Adds an error if the file `bytes` came from shrank while it was read ([`shrinking`]).
    pub fn note_shrinking(&mut self, path: &Path, bytes: &FileBytes) {
        self.diagnostics.extend(shrinking(path, bytes));
    }
}

/// The error for a file that shrank while it was read (another process cut
/// it short), if `bytes`, read from `path`, did.
pub fn shrinking(path: &Path, bytes: &FileBytes) -> Option<Diagnostic> {
    bytes.shrank().then(|| Diagnostic {
        level: Level::Error,
        message: format!(
            "{}: the file was cut short by another process while it was read; what was lost read as zeros, \
             so the output is not the dump's; convert a copy that is not being written",
            path.display()
        ),
    })
}

/// Why nothing could be converted.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The dump could not be read.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// Ticks cannot be turned into time.
    #[error("{}: {source}; the dump is unusable without it", path.display())]
    Timebase {
        /// The dump.
        path: PathBuf,
        /// Why.
        source: TimebaseError,
    },
    /// Writing the output failed.
    #[error("writing the output: {0}")]
    Output(#[source] io::Error),
    /// Not even an output without spans fits the budget.
    #[error(
        "{}: --max-bytes {max_bytes} is less than the output takes without any span ({least} bytes: \
         its header, process and thread records, metadata); give at least {least}",
        path.display()
    )]
    Budget {
        /// The dump.
        path: PathBuf,
        /// The budget.
        max_bytes: u64,
        /// What the output takes without spans.
        least: u64,
    },
    /// A split was asked of a format it does not apply to.
    #[error("--split writes parts of the viewers' formats, chrome and perfetto; convert to one of them")]
    SplitFormat,
    /// A split would write too many parts.
    #[error("{}: --split {what} would write {parts} parts, more than {MAX_PARTS}; give a longer duration or a larger size", path.display())]
    SplitParts {
        /// The dump.
        path: PathBuf,
        /// The split, as given.
        what: String,
        /// The parts it would write.
        parts: u64,
    },
    /// A budget was given for a format it does not apply to.
    #[error(
        "--max-bytes applies to the timeline formats (chrome, perfetto, ftrace, systrace); the summaries \
         (stats, folded, flamegraph, pprof) are as large as their functions, not their spans"
    )]
    BudgetFormat,
    /// Several dumps were given for a format that does not merge them.
    #[error("only -f chrome merges several dumps into one output; convert them one at a time for other formats")]
    MergeFormat,
}

/// A dump read, timed and named, and what was wrong with it so far.
struct Prepared<'a> {
    trace: Trace<'a>,
    names: Names,
    timebase: Timebase,
    report: Report,
}

/// Reads, times and names the dump at `path`, whose bytes are `bytes` (names through `cache`).
fn prepare<'a>(
    path: &Path,
    bytes: &'a [u8],
    opts: &symbolize::Options,
    cache: &symbolize::Cache,
) -> Result<Prepared<'a>, ConvertError> {
    let trace = model::decode(path, bytes)?;
    let mut report = Report::default();
    let shown = path.display();
    if let Some(damage) = &trace.damage {
        let streamed = trace.process.reason == Some(ringtrace_format::DumpReason::Stream);
        let message = if streamed && damage.is_truncation() {
            // A stream ends this way when its program is killed: not damage, the end of what it wrote.
            format!(
                "{shown}: a stream cut short at offset {} (its program was killed, or is still running): \
                 converted the {} thread(s) it had written, up to their last chunk; spans recorded later are not \
                 in the file",
                damage.offset(),
                trace.threads.len()
            )
        } else {
            format!(
                "{shown}: {damage}; converted the {} ring(s) before offset {}, the rest of the file is lost",
                trace.threads.len(),
                damage.offset()
            )
        };
        report.push(Level::Error, message);
    }
    if let Some(crash) = &trace.crash {
        for note in &crash.notes {
            report.push(Level::Warning, format!("{shown}: {note}"));
        }
        for loss in &crash.losses {
            report.push(Level::Error, format!("{shown}: {loss}"));
        }
    }
    for t in trace.threads.iter().filter(|t| t.after_anchor > 0) {
        report.push(
            Level::Warning,
            format!(
                "{shown}: thread {} {:?}: {} span(s) ended after the dump's counter anchor was read (recorded while \
                 the dump was taken); placed after the anchor, not a counter period before it",
                t.tid, t.name, t.after_anchor
            ),
        );
    }
    if !trace.skipped_sections.is_empty() {
        report.push(
            Level::Warning,
            format!(
                "{shown}: skipped {} section(s) of kinds unknown to this rtconv ({:?}); a newer rtconv may show more",
                trace.skipped_sections.len(),
                trace.skipped_sections
            ),
        );
    }
    let (timebase, _) = trace.timebase().map_err(|source| ConvertError::Timebase { path: path.into(), source })?;
    let symbolize::Naming { names, problems, warnings, .. } = symbolize::symbolize(&trace, opts, cache);
    for w in warnings {
        report.push(Level::Warning, w);
    }
    for p in problems.iter().take(MAX_PROBLEM_LINES) {
        report.push(Level::Error, format!("{shown}: {p}"));
    }
    if problems.len() > MAX_PROBLEM_LINES {
        let more = problems.len() - MAX_PROBLEM_LINES;
        report.push(Level::Error, format!("{shown}: {more} more module(s) could not name their keys (as above)"));
    }
    Ok(Prepared { trace, names, timebase, report })
}

/// Adds what rendering the timeline found (`anomalies`), its losses and its
/// counts to `report`. `calibrated`: the figures were to be calibrated.
fn check_timeline(timeline: &Timeline<'_>, anomalies: Anomalies, calibrated: bool, report: &mut Report) {
    let trace = timeline.trace;
    let shown = trace.path.display();
    if anomalies.backwards > 0 {
        report.push(
            Level::Warning,
            format!(
                "{shown}: {} span(s) end before they start (counter went backwards); shown with zero length",
                anomalies.backwards
            ),
        );
    }
    if anomalies.clamped > 0 {
        report.push(
            Level::Warning,
            format!(
                "{shown}: {} span(s) ended after their parent and were cut at the parent's end \
                 (a counter read out of order, or a span dropped without nesting)",
                anomalies.clamped
            ),
        );
    }
    if anomalies.too_deep > 0 {
        report.push(
            Level::Warning,
            format!(
                "{shown}: {} span(s) are nested deeper than {} levels; viewers may not draw them",
                anomalies.too_deep, MAX_DEPTH
            ),
        );
    }
    if calibrated && timeline.recorder_cost().is_none() {
        report.push(
            Level::Warning,
            format!("{shown}: the dump holds no calibration (an older recorder?); the figures are not calibrated"),
        );
    }
    for u in trace.unbalanced.iter().filter(|u| u.too_deep > 0 || u.abandoned > 0) {
        let thread = trace.threads.iter().find(|t| t.tid == u.tid).map_or("", |t| t.name.as_str());
        report.push(
            Level::Warning,
            format!(
                "{shown}: thread {} {thread:?}: {} call(s) nested deeper than the -finstrument-functions hooks' \
                 shadow stack and {} span(s) left without their exit (a longjmp past them) were not recorded",
                u.tid, u.too_deep, u.abandoned
            ),
        );
    }
    let unwound: u64 = trace.threads.iter().map(|t| t.unwound).sum();
    if unwound > 0 {
        report.push(
            Level::Warning,
            format!(
                "{shown}: {unwound} span(s) were left without their exit (a longjmp, or an exception through C \
                 frames); they are marked unwound and end where the recorder noticed the jump"
            ),
        );
    }
    if let Some(selection) = &timeline.selection {
        let f = anomalies.filtered;
        report.filtered += f;
        report.push(
            Level::Note,
            format!(
                "{shown}: the filters ({}) kept {} of {} spans; left out: {} on other threads, {} by function, \
                 {} by depth, {} outside the time range, {} shorter than -t",
                selection.filter.describe(),
                f.kept,
                f.kept + f.left_out(),
                f.thread,
                f.function,
                f.depth,
                f.time,
                f.duration
            ),
        );
    }
    report.spans += if timeline.selection.is_some() { anomalies.filtered.kept } else { timeline.span_count() };
    report.threads += trace.threads.len();
    let lost: u64 = trace.threads.iter().map(|t| t.lost()).fold(0, u64::saturating_add);
    report.lost_spans = report.lost_spans.saturating_add(lost);
    if lost > 0 {
        let overwritten: u64 = trace.threads.iter().map(|t| t.overwritten()).fold(0, u64::saturating_add);
        let dropped: u64 = trace.threads.iter().map(|t| t.dropped).fold(0, u64::saturating_add);
        report.push(
            Level::Warning,
            format!(
                "{shown}: {lost} span(s) were recorded but are not in the dump ({overwritten} overwritten by full \
                 rings, {dropped} dropped by full stop-when-full rings); raise RINGTRACE_RING_RECORDS to keep more"
            ),
        );
    }
}

/// Converts the dump at `path` into `format` on `out`.
pub fn convert(
    path: &Path,
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    let bytes = model::open(path)?;
    let mut report = convert_bytes(path, &bytes, format, opts, filter, &symbolize::Cache::default(), out)?;
    report.note_shrinking(path, &bytes);
    Ok(report)
}

/// Converts a dump already in memory (`bytes`, named `path` in messages),
/// naming keys through `cache` (shared by the dumps of a batch), keeping the
/// spans `filter` keeps.
pub fn convert_bytes(
    path: &Path,
    bytes: &[u8],
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    cache: &symbolize::Cache,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    let calibrated = matches!(format, Format::Stats(o) if o.calibrated);
    let (written, report) = with_timeline(path, bytes, opts, filter, cache, calibrated, |timeline| {
        let rendered = render(timeline, format, out).and_then(|found| out.flush().map(|()| found));
        match rendered {
            Ok(found) => (Ok(()), found),
            // Nothing more is reported for a failed output.
            Err(e) => (Err(e), Anomalies::default()),
        }
    })?;
    written.map_err(ConvertError::Output)?;
    Ok(report)
}

/// Where a conversion written part by part stands: the part to write next, and the origin
/// every part's times count from (set by the first).
#[derive(Debug, Default)]
pub struct Parts {
    /// The next part's number.
    pub next: u32,
    origin_ns: Option<i64>,
}

/// How far before the first part's earliest span the parts' times count from: a span that
/// arrives later but began earlier (a parent, an interrupted span) keeps its time, up to this.
const PART_LEAD_NS: i64 = 3_600_000_000_000;

/// Whether `format` can be written part by part, as a live capture arrives (Perfetto's
/// protobuf, ftrace text); the others are written once, at its end.
pub fn writes_parts(format: Format) -> bool {
    matches!(format, Format::Perfetto | Format::Ftrace)
}

/// Writes the dump in `bytes` (a live capture's spans that came since the last part) as the
/// next part of `format` (one that [`writes_parts`]) to `out`, times counted from the first
/// part's origin.
#[allow(clippy::too_many_arguments)]
pub fn convert_part(
    path: &Path,
    bytes: &[u8],
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    cache: &symbolize::Cache,
    parts: &mut Parts,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    let Prepared { trace, names, timebase, mut report } = prepare(path, bytes, opts, cache)?;
    let mut timeline = Timeline::new(&trace, &names, timebase).filtered(filter);
    timeline.origin_ns = *parts.origin_ns.get_or_insert(timeline.origin_ns.saturating_sub(PART_LEAD_NS));
    let part = parts.next;
    parts.next = parts.next.saturating_add(1);
    let written = match format {
        Format::Ftrace => render::ftrace::write_part(&timeline, part == 0, out),
        _ => render::perfetto::write_part(&timeline, part, out),
    };
    let found = written.and_then(|found| out.flush().map(|()| found)).map_err(ConvertError::Output)?;
    check_timeline(&timeline, found, false, &mut report);
    Ok(report)
}

/// Writes `timeline` in `format`; returns what its spans had wrong.
fn render(timeline: &Timeline<'_>, format: Format, out: &mut dyn Write) -> io::Result<Anomalies> {
    match format {
        Format::Chrome(opts) => render::chrome::write(timeline, &opts, out),
        Format::Folded => render::folded::write(timeline, out),
        Format::Ftrace => render::ftrace::write(timeline, out),
        Format::Systrace => render::systrace::write(timeline, out),
        Format::Flamegraph => render::folded::write_svg(timeline, out),
        Format::Perfetto => render::perfetto::write(timeline, out),
        Format::Pprof => render::pprof::write(timeline, out),
        Format::Firefox => render::firefox::write(timeline, out),
        Format::Stats(opts) => match opts.view {
            View::CallTree => {
                let (trees, found) = stats::call_tree(timeline, opts.per_thread, opts.calibrated);
                render::call_tree::write(&trees, opts.output, out)?;
                Ok(found)
            }
            View::Functions => {
                let (scopes, found) = stats::compute(timeline, &opts);
                render::stats_table::write(&scopes, opts.output, opts.color, out)?;
                Ok(found)
            }
        },
    }
}

/// Reads, times and names a dump in memory, hands its timeline (with only
/// the spans `filter` keeps) to `f` (a renderer, or a computation, which
/// gives back a value and what the spans it read had wrong), and returns
/// that value with what was wrong with the dump; `calibrated` says `f`
/// wanted calibrated figures.
pub fn with_timeline<T>(
    path: &Path,
    bytes: &[u8],
    opts: &symbolize::Options,
    filter: &Filter,
    cache: &symbolize::Cache,
    calibrated: bool,
    f: impl FnOnce(&Timeline<'_>) -> (T, Anomalies),
) -> Result<(T, Report), ConvertError> {
    let Prepared { trace, names, timebase, mut report } = prepare(path, bytes, opts, cache)?;
    let timeline = Timeline::new(&trace, &names, timebase).filtered(filter);
    let (value, found) = f(&timeline);
    check_timeline(&timeline, found, calibrated, &mut report);
    Ok((value, report))
}

/// Converts several dumps into one Chrome trace, aligned by their realtime
/// anchors (one dump: as [`convert`]). Dumps of one build share their names.
pub fn convert_many(
    paths: &[PathBuf],
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    if let [path] = paths {
        return convert(path, format, opts, filter, out);
    }
    let Format::Chrome(chrome) = format else { return Err(ConvertError::MergeFormat) };
    let cache = symbolize::Cache::default();
    let files: Vec<FileBytes> = paths.iter().map(|p| model::open(p)).collect::<Result<_, _>>()?;
    let prepared: Vec<Prepared<'_>> =
        paths.iter().zip(&files).map(|(p, bytes)| prepare(p, bytes, opts, &cache)).collect::<Result<_, _>>()?;
    let timelines: Vec<Timeline<'_>> =
        prepared.iter().map(|p| Timeline::new(&p.trace, &p.names, p.timebase).filtered(filter)).collect();
    let refs: Vec<&Timeline<'_>> = timelines.iter().collect();
    let found = render::chrome::write_many(&refs, &chrome, out).map_err(ConvertError::Output)?;
    out.flush().map_err(ConvertError::Output)?;
    let mut report = Report::default();
    for ((p, timeline), found) in prepared.iter().zip(&timelines).zip(found) {
        report.diagnostics.extend(p.report.diagnostics.iter().cloned());
        check_timeline(timeline, found, false, &mut report);
    }
    for (path, bytes) in paths.iter().zip(&files) {
        report.note_shrinking(path, bytes);
    }
    Ok(report)
}

/// An output budget (`--max-bytes`): the output stays at or under `max_bytes`, leaving out the
/// shortest spans first (see [`crate::budget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The output's largest size, in bytes.
    pub max_bytes: u64,
    /// The output is gzip-compressed (a `.gz` name): the budget is of its compressed bytes, and
    /// the conversion compresses it (it writes gzip's bytes to an output that does not).
    pub gzip: bool,
}

/// The layout a budget costs `format` in, if it is a timeline format a budget applies to.
pub fn budget_layout(format: Format) -> Option<Layout> {
    match format {
        Format::Chrome(opts) => Some(Layout::Chrome(opts)),
        Format::Ftrace => Some(Layout::Ftrace),
        Format::Systrace => Some(Layout::Systrace),
        Format::Perfetto => Some(Layout::Perfetto),
        _ => None,
    }
}

/// Converts a dump in memory (`bytes`, named `path` in messages) into `format` on `out`, as
/// [`convert_bytes`], within `budget`: where the whole output would be larger, the spans
/// shorter than a threshold found from their durations are left out (their time counts in
/// their callers' self time), and a note says how many and below what duration.
#[allow(clippy::too_many_arguments)]
pub fn convert_within(
    path: &Path,
    bytes: &[u8],
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    cache: &symbolize::Cache,
    budget: Budget,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    let layout = budget_layout(format).ok_or(ConvertError::BudgetFormat)?;
    let Prepared { trace, names, timebase, mut report } = prepare(path, bytes, opts, cache)?;
    let full = Timeline::new(&trace, &names, timebase).filtered(filter);
    let plan = Plan::new(&full, filter, layout);
    let max = budget.max_bytes;
    let over = |least| ConvertError::Budget { path: path.into(), max_bytes: max, least };
    let (choice, found, written) = if budget.gzip {
        let (choice, found, gz) = compressed_within(&plan, format, max).map_err(|e| match e {
            Squeeze::Output(e) => ConvertError::Output(e),
            Squeeze::Least(least) => over(least),
        })?;
        out.write_all(&gz).and_then(|()| out.flush()).map_err(ConvertError::Output)?;
        (choice, found, gz.len() as u64)
    } else {
        let choice = plan.choose(max, max).map_err(over)?;
        let mut counted = Counted { out, n: 0 };
        let found = render(&plan.timeline(plan.cut(&choice, max)), format, &mut counted)
            .and_then(|found| counted.flush().map(|()| found));
        (choice, found.map_err(ConvertError::Output)?, counted.n)
    };
    let cut = plan.cut(&choice, max);
    let shown = path.display();
    let whole = plan.whole();
    report.budget = Some(BudgetOutcome { cut, predicted: choice.bytes, written, whole });
    let what = if budget.gzip { "compressed bytes" } else { "bytes" };
    let message = match &cut {
        Some(c) => format!(
            "{shown}: {}; {written} {what} written (all the spans would take {whole} bytes{})",
            c.describe(),
            if budget.gzip { " before compression" } else { "" }
        ),
        None => format!("{shown}: every span fits --max-bytes {max}: {written} {what} written"),
    };
    report.push(Level::Note, message);
    if written > max {
        report.push(
            Level::Error,
            format!(
                "{shown}: the output took {written} bytes, more than --max-bytes {max}: rtconv's size model for this \
                 format is wrong (please report it); convert with a smaller --max-bytes"
            ),
        );
    }
    let tl = plan.timeline(cut);
    check_timeline(&tl, found, false, &mut report);
    Ok(report)
}

/// Why a budget of compressed bytes could not be met.
enum Squeeze {
    /// Writing failed.
    Output(io::Error),
    /// Not even an output without spans fits; it takes this many bytes.
    Least(u64),
}

/// The largest rendering of `plan` in `format` whose gzip takes at most `max` bytes: its cut,
/// what its spans had wrong, and its compressed bytes. A compressed size is not known before
/// compressing: each try renders at the threshold the last try's compression ratio points to
/// (first a tenth: text traces compress 8 to 15 times), stopping as soon as the compressed bytes
/// pass `max`, and keeps the largest that fits; at most [`TRIES`] tries, the last at a size
/// that fits uncompressed.
fn compressed_within(plan: &Plan<'_, '_>, format: Format, max: u64) -> Result<(Choice, Anomalies, Vec<u8>), Squeeze> {
    let mut best: Option<(Choice, Anomalies, Vec<u8>)> = None;
    let mut target = plan.whole().min(max.saturating_mul(10));
    for attempt in 0..TRIES {
        if attempt == TRIES - 1 && best.is_none() {
            target = target.min(max);
        }
        let choice = match plan.choose(target, max) {
            Ok(choice) => choice,
            Err(least) if best.is_none() && least > max => return Err(Squeeze::Least(least)),
            Err(_) => break,
        };
        let cut = plan.cut(&choice, max);
        let mut gz = flate2::write::GzEncoder::new(
            Capped { buf: Vec::new(), cap: max, over: false },
            flate2::Compression::default(),
        );
        let mut counted = Counted { out: &mut gz, n: 0 };
        let rendered =
            render(&plan.timeline(cut), format, &mut counted).and_then(|found| counted.flush().map(|()| found));
        let uncompressed = counted.n;
        let finished = rendered.and_then(|found| gz.try_finish().map(|()| found));
        let capped = gz.get_ref();
        match finished {
            Ok(found) if !capped.over => {
                let compressed = capped.buf.len() as u64;
                let keeps_more = best.as_ref().is_none_or(|b| choice.bytes > b.0.bytes);
                let done = cut.is_none() || compressed >= max - max / 50;
                let next = (choice.bytes as f64 * max as f64 / compressed.max(1) as f64 * 0.99) as u64;
                if keeps_more {
                    best = Some((choice, found, gz.finish().map_err(Squeeze::Output)?.buf));
                }
                if done || next <= choice.bytes {
                    break;
                }
                target = next;
            }
            Err(e) if !capped.over => return Err(Squeeze::Output(e)),
            // Past the budget after `uncompressed` bytes: what fitted is about the size to aim for.
            _ => {
                let next = uncompressed - uncompressed / 32;
                if best.as_ref().is_some_and(|b| next <= b.0.bytes) {
                    break;
                }
                target = next;
            }
        }
    }
    best.ok_or(Squeeze::Least(max.saturating_add(1)))
}

/// Tries [`compressed_within`] makes at most.
const TRIES: usize = 5;

/// A writer into memory that stops taking bytes once it would hold more than `cap`.
struct Capped {
    buf: Vec<u8>,
    cap: u64,
    over: bool,
}

impl Write for Capped {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.buf.len() as u64 + bytes.len() as u64 > self.cap {
            self.over = true;
            return Err(io::Error::other("over the budget"));
        }
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Counts what passes through to `out`.
struct Counted<'o> {
    out: &'o mut dyn Write,
    n: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let n = self.out.write(bytes)?;
        self.n += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes)?;
        self.n += bytes.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// How `--split` cuts an output into parts, each a whole trace of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Parts covering this many ns of the trace each, from its first span.
    Duration(u64),
    /// Parts of at most this many bytes each (before compression).
    Size(u64),
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Split::Duration(ns) => write!(f, "{ns}ns"),
            Split::Size(bytes) => write!(f, "{bytes} bytes"),
        }
    }
}

/// A part of a split output, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The part's window, monotonic ns: its spans are those overlapping `start_ns..end_ns`, cut to it.
    pub start_ns: i64,
    /// See [`start_ns`](Self::start_ns).
    pub end_ns: i64,
    /// Its bytes.
    pub bytes: u64,
}

/// Parts a split writes at most.
pub const MAX_PARTS: u64 = 10_000;

/// Slices of time a split by size weighs the output's bytes in.
const SIZE_SLICES: usize = 1 << 14;

/// Converts a dump in memory (`bytes`, named `path` in messages) into `format` (Chrome JSON or
/// Perfetto) as a series of parts, each a whole trace of its own (its process and thread
/// records, names, clock) covering one window of time, handed in order to `write_part`
/// (numbered from 0) — one part in memory at a time. A span crossing a cut is in every part it
/// covers, cut to each and marked (`clipped`: its start, its end, or both), so the parts'
/// spans, summed, last as long as the whole's. By [`Split::Size`], the windows come from where
/// the spans' bytes lie in time (the format's size model); a part that still comes out too
/// large is halved until it fits.
#[allow(clippy::too_many_arguments)]
pub fn convert_split(
    path: &Path,
    bytes: &[u8],
    format: Format,
    opts: &symbolize::Options,
    filter: &Filter,
    cache: &symbolize::Cache,
    split: Split,
    write_part: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
) -> Result<(Report, Vec<Part>), ConvertError> {
    let layout = match format {
        Format::Chrome(_) | Format::Perfetto => budget_layout(format).ok_or(ConvertError::SplitFormat)?,
        _ => return Err(ConvertError::SplitFormat),
    };
    let Prepared { trace, names, timebase, mut report } = prepare(path, bytes, opts, cache)?;
    let full = Timeline::new(&trace, &names, timebase).filtered(filter);
    let origin = full.origin_ns;
    // The trace's end, and what its spans have wrong (said once, not per part).
    let mut end = origin;
    let found = full.arrivals(|a| end = end.max(a.enter_ns.saturating_add(a.duration as i64)));
    check_timeline(&full, found, false, &mut report);
    // Windows end past the last span's end, so a span starting there is in the last.
    let last = end.saturating_add(1);
    let too_many = |parts: u64| ConvertError::SplitParts { path: path.into(), what: split.to_string(), parts };
    let mut windows: Vec<(i64, i64)> = match split {
        Split::Duration(ns) => {
            let ns = i64::try_from(ns).unwrap_or(i64::MAX).max(1);
            let parts = (last.saturating_sub(origin).max(1) as u64).div_ceil(ns as u64);
            if parts > MAX_PARTS {
                return Err(too_many(parts));
            }
            let at = |k: i64| origin.saturating_add(k.saturating_mul(ns)).min(last);
            (0..parts as i64).map(|k| (at(k), at(k + 1))).collect()
        }
        Split::Size(max) => {
            let plan = Plan::profiled(&full, filter, layout, (origin, last), SIZE_SLICES);
            // Each part has the whole's fixed records; its spans get the rest, less a tenth
            // for the spans that cross into it again.
            let fixed = plan.whole().saturating_sub(plan.profile().bytes.iter().sum::<i64>().max(0) as u64);
            let room = max.saturating_sub(fixed) / 10 * 9;
            size_windows(plan.profile(), room, last)
        }
    };
    if windows.len() as u64 > MAX_PARTS {
        return Err(too_many(windows.len() as u64));
    }
    windows.reverse();
    let mut parts = Vec::new();
    let mut out = Vec::new();
    while let Some(window) = windows.pop() {
        let mut tl = Timeline::new(&trace, &names, timebase).filtered(filter);
        tl.origin_ns = origin;
        tl.window = Some(window);
        out.clear();
        render(&tl, format, &mut out).map_err(ConvertError::Output)?;
        if let Split::Size(max) = split
            && out.len() as u64 > max
            && window.1.saturating_sub(window.0) > 1
        {
            // Too large: its halves, in order.
            let middle = window.0 + window.1.saturating_sub(window.0) / 2;
            windows.push((middle, window.1));
            windows.push((window.0, middle));
            if (parts.len() + windows.len()) as u64 > MAX_PARTS {
                return Err(too_many((parts.len() + windows.len()) as u64));
            }
            continue;
        }
        if let Split::Size(max) = split
            && out.len() as u64 > max
        {
            report.push(
                Level::Error,
                format!(
                    "{}: part {} takes {} bytes, more than --split {max}: its spans all start within 1 ns",
                    path.display(),
                    parts.len() + 1,
                    out.len()
                ),
            );
        }
        write_part(parts.len() as u32, &out).map_err(ConvertError::Output)?;
        parts.push(Part { start_ns: window.0, end_ns: window.1, bytes: out.len() as u64 });
    }
    Ok((report, parts))
}

/// Windows of `profile`'s slices whose bytes add up to at most `room` each (a slice larger
/// than that alone), the last ending at `last`.
fn size_windows(profile: &budget::Profile, room: u64, last: i64) -> Vec<(i64, i64)> {
    let width = profile.width.max(1) as i64;
    let mut windows = Vec::new();
    let (mut start, mut bytes) = (profile.start, 0i64);
    for (i, &b) in profile.bytes.iter().enumerate() {
        let slice_start = profile.start.saturating_add((i as i64).saturating_mul(width)).min(last);
        if bytes > 0 && (bytes + b) as u64 > room {
            windows.push((start, slice_start));
            (start, bytes) = (slice_start, 0);
        }
        bytes += b;
    }
    windows.push((start, last.max(start.saturating_add(1))));
    windows
}
