//! `rtconv convert` and `rtconv stats`: read one dump, name its keys, render it — whole, within
//! a byte budget ([`convert_within`]), or as parts ([`convert_split`]).

mod split;
mod within;

pub use split::{MAX_PARTS, Part, Split, convert_split};
pub use within::{Budget, budget_layout, convert_within};

use std::io::{self, Write};
use std::path::{Path, PathBuf};

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

    /// What was done, or what would do better; nothing is wrong.
    pub fn note(message: impl Into<String>) -> Self {
        Diagnostic { level: Level::Note, message: message.into() }
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
    /// The bytes the output would take with every span the filters keep (uncompressed); with a
    /// floor, with every span at or above it (less than all would take).
    pub whole: u64,
    /// The spans shorter than this (ns) were not decoded: a sample of their durations showed the
    /// budget leaves them out ([`crate::budget::floor`]).
    pub floor_ns: Option<u64>,
    /// Every span was written first, a sample estimating they fit, and they did not: the output
    /// started over, cut as the size model chose.
    pub rewound: bool,
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
    #[error(
        "--split writes parts of chrome, perfetto and ftrace (systrace text has no place to mark a span cut at a \
         part's edge); convert to one of them"
    )]
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

/// A dump to convert, and how: its bytes, the options its keys are named with, the names
/// already found, the spans to keep.
#[derive(Clone, Copy)]
pub struct Input<'a> {
    /// What messages call the dump: its path, or `archive:member`.
    pub path: &'a Path,
    /// The dump's bytes.
    pub bytes: &'a [u8],
    /// How its keys are named.
    pub opts: &'a symbolize::Options,
    /// The spans kept.
    pub filter: &'a Filter,
    /// Names already found, shared by the dumps of a batch.
    pub cache: &'a symbolize::Cache,
}

impl<'a> Input<'a> {
    /// The dump in `bytes`, named `path` in messages, its keys named with `opts` through
    /// `cache`, the spans `filter` keeps.
    pub fn new(
        path: &'a Path,
        bytes: &'a [u8],
        opts: &'a symbolize::Options,
        filter: &'a Filter,
        cache: &'a symbolize::Cache,
    ) -> Self {
        Input { path, bytes, opts, filter, cache }
    }
}

/// The spans a conversion that walks them more than once (a budget's size model, then its
/// render; a split's parts) keeps in memory, at most (32 bytes each: 33.5 M spans; a budget's
/// chunks may reserve up to a third more room than their spans fill); more are decoded again for
/// each walk.
const KEPT_MAX_BYTES: u64 = 1 << 30;

/// A dump read, timed and named, and what was wrong with it so far.
struct Prepared<'a> {
    trace: Trace<'a>,
    names: Names,
    timebase: Timebase,
    report: Report,
}

/// Reads, times and names the dump of `input` (its filter is the caller's to apply).
fn prepare<'a>(input: Input<'a>) -> Result<Prepared<'a>, ConvertError> {
    let Input { path, bytes, opts, cache, .. } = input;
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
    let cache = symbolize::Cache::default();
    let mut report = convert_bytes(Input::new(path, &bytes, opts, filter, &cache), format, out)?;
    report.note_shrinking(path, &bytes);
    Ok(report)
}

/// Converts a dump already in memory into `format` on `out`.
pub fn convert_bytes(input: Input<'_>, format: Format, out: &mut dyn Write) -> Result<Report, ConvertError> {
    let calibrated = matches!(format, Format::Stats(o) if o.calibrated);
    let (written, report) = with_timeline(input, calibrated, |timeline| {
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

/// Writes the dump of `input` (a live capture's spans that came since the last part) as the
/// next part of `format` (one that [`writes_parts`]) to `out`, times counted from the first
/// part's origin.
pub fn convert_part(
    input: Input<'_>,
    format: Format,
    parts: &mut Parts,
    out: &mut dyn Write,
) -> Result<Report, ConvertError> {
    let Prepared { trace, names, timebase, mut report } = prepare(input)?;
    let mut timeline = Timeline::new(&trace, &names, timebase).filtered(input.filter);
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
/// the spans its filter keeps) to `f` (a renderer, or a computation, which
/// gives back a value and what the spans it read had wrong), and returns
/// that value with what was wrong with the dump; `calibrated` says `f`
/// wanted calibrated figures.
pub fn with_timeline<T>(
    input: Input<'_>,
    calibrated: bool,
    f: impl FnOnce(&Timeline<'_>) -> (T, Anomalies),
) -> Result<(T, Report), ConvertError> {
    let Prepared { trace, names, timebase, mut report } = prepare(input)?;
    let timeline = Timeline::new(&trace, &names, timebase).filtered(input.filter);
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
    let prepared: Vec<Prepared<'_>> = paths
        .iter()
        .zip(&files)
        .map(|(p, bytes)| prepare(Input::new(p, bytes, opts, filter, &cache)))
        .collect::<Result<_, _>>()?;
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
