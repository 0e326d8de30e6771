//! `rtconv stats`: per-function figures over a dump, per thread or over all
//! threads, as an aligned table, CSV or JSON.
//!
//! For each function (span name): calls; total time (inclusive, counting a
//! recursive call only at its outermost entry so time is not counted twice);
//! self time (exclusive of children); min, mean, p50, p90, p99, max and
//! standard deviation of a call's inclusive duration; and its share of the
//! scope's time (self time ÷ the top-level spans' total, so shares add up to
//! 100%). Percentiles come from an HDR histogram with 3 significant digits.
//! Or, instead, the call tree ([`call_tree`]): every distinct call path.
//!
//! The figures are data ([`Scope`], [`Tree`]); `render::stats_table` and
//! `render::call_tree` write them.

use std::collections::HashMap;

use crate::model::{Anomalies, Arrival, Losses, RecorderCost, Timeline};

mod call_stats;
mod call_tree;
pub(crate) mod clean;

pub use call_stats::CallStats;
pub use call_tree::{Node, Tree, call_tree};

/// A column to sort by (descending, except `Name`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Column {
    /// Function name, ascending.
    Name,
    /// Number of calls.
    Calls,
    /// Total (inclusive) time.
    #[default]
    Total,
    /// Self (exclusive) time.
    SelfTime,
    /// Shortest call.
    Min,
    /// Mean call.
    Mean,
    /// Median call.
    P50,
    /// 90th percentile call.
    P90,
    /// 99th percentile call.
    P99,
    /// Longest call.
    Max,
    /// Standard deviation of calls.
    Stddev,
}

/// How stats are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Output {
    /// An aligned table with human units.
    #[default]
    Table,
    /// CSV, times in integer nanoseconds.
    Csv,
    /// JSON, times in integer nanoseconds.
    Json,
}

/// What `rtconv stats` shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum View {
    /// One row per function ([`compute`]).
    #[default]
    Functions,
    /// The call tree ([`call_tree`]).
    CallTree,
}

/// What `rtconv stats` computes and how it writes it (by default: every
/// function over all threads, by total time, as a table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Sort rows by.
    pub sort: Column,
    /// One table per thread instead of one over all threads.
    pub per_thread: bool,
    /// Output form.
    pub output: Output,
    /// Per-function rows, or the call tree.
    pub view: View,
    /// Take the recorder's measured cost out of every span (see [`Timeline::walk`]).
    pub calibrated: bool,
    /// Leave outlying calls out of the distribution figures (see `clean::fence`).
    pub clean: bool,
    /// Bold headings in the table form (ANSI escapes), for a terminal.
    pub color: bool,
}

/// One function's figures in one scope.
#[derive(Clone, Debug)]
pub struct Row {
    /// Function or label.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// Inclusive time, recursion counted once.
    pub total_ns: u64,
    /// Exclusive time.
    pub self_ns: u64,
    /// Self time ÷ the scope's top-level time.
    pub share: f64,
    /// Shortest call.
    pub min_ns: u64,
    /// Mean call.
    pub mean_ns: f64,
    /// Median call.
    pub p50_ns: u64,
    /// 90th percentile.
    pub p90_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// Longest call.
    pub max_ns: u64,
    /// Standard deviation of a call's duration.
    pub stddev_ns: f64,
    /// With `--clean`: calls left out of min..stddev as outliers.
    pub outliers: u64,
    /// Over many dumps: how many of them have the function.
    pub dumps: Option<u64>,
    /// Calls left without their exit (a `longjmp`, an exception through C
    /// frames): they end where the recorder noticed.
    pub unwound: u64,
    /// Calls that began before the oldest span their ring kept, in a ring
    /// that overwrote spans: children they had before it are lost, so their
    /// self time counts those children's time.
    pub missing_children: u64,
}

/// The rows of one scope: a thread, or all threads.
#[derive(Clone, Debug)]
pub struct Scope {
    /// `all threads`, or the thread's name (or `thread TID`).
    pub name: String,
    /// Total time of the top-level spans in the scope.
    pub total_ns: u64,
    /// One row per function.
    pub rows: Vec<Row>,
    /// With `--calibrated`: the recorder's cost taken out of every span.
    pub calibration: Option<RecorderCost>,
    /// With `--clean`: outlying calls were left out of the distribution figures.
    pub cleaned: bool,
    /// What the scope's threads did not record whole.
    pub losses: Losses,
    /// With filters: the options, and what they kept and left out (of the whole dump).
    pub filter: Option<(String, crate::model::Filtered)>,
}

/// Computes the scopes of `tl`: one over all threads, or one per thread;
/// and what its spans had wrong with them.
pub fn compute(tl: &Timeline<'_>, opts: &Options) -> (Vec<Scope>, Anomalies) {
    let calibration = if opts.calibrated { tl.recorder_cost() } else { None };
    let (scopes, found) = accumulate(tl, opts.per_thread, opts.calibrated, opts.clean);
    let scopes = scopes
        .into_iter()
        .enumerate()
        .map(|(i, scope)| {
            let total_ns = scope.total_ns;
            let mut rows: Vec<Row> = scope
                .functions
                .into_iter()
                .map(|(key, stats)| stats.row(tl.name(key as usize).to_string(), total_ns))
                .collect();
            sort(&mut rows, opts.sort);
            let losses = if opts.per_thread { tl.trace.thread_losses(i) } else { tl.trace.losses() };
            let filter = tl.selection.as_ref().map(|s| (s.filter.describe(), found.filtered));
            Scope { name: scope.name, total_ns, rows, calibration, cleaned: opts.clean, losses, filter }
        })
        .collect();
    (scopes, found)
}

/// One scope's accumulators: the functions it called, by key index.
struct ScopeStats {
    name: String,
    /// Time of its top-level spans.
    total_ns: u64,
    /// Functions with at least one call, in key-index order.
    functions: Vec<(u32, CallStats)>,
}

/// The accumulators of the scope being walked, one per key index; moved
/// into its [`ScopeStats`] (only those with calls) when its thread is done.
/// So per-thread figures cost one accumulator per key plus one per
/// function a thread called — not threads × keys.
struct Filling {
    /// The scope being filled.
    scope: usize,
    /// Its top-level time so far.
    total_ns: u64,
    dense: Vec<CallStats>,
    /// Key indices that got their first call.
    touched: Vec<u32>,
    clean: bool,
}

impl Filling {
    /// One call of key `key` (see [`CallStats::add`]).
    #[inline(always)] // once per span
    fn add(&mut self, key: u32, enter_ns: i64, duration: u64, self_ns: u64, outermost: bool) {
        if let Some(stats) = self.dense.get_mut(key as usize) {
            if stats.calls() == 0 {
                self.touched.push(key);
            }
            stats.add(enter_ns, duration, self_ns, outermost);
        }
    }

    #[cold]
    fn note(&mut self, key: u32, unwound: bool, missing_children: bool) {
        if let Some(stats) = self.dense.get_mut(key as usize) {
            stats.note(unwound, missing_children);
        }
    }

    /// One span as it starts: its duration counts for its key and is taken
    /// from its parent's self time (see [`accumulate`]).
    #[inline(always)] // once per span
    fn arrival(&mut self, a: &Arrival, per_thread: bool, scopes: &mut [ScopeStats]) {
        if per_thread && a.thread != self.scope {
            self.switch(a.thread, scopes);
        }
        if a.parent.is_none() {
            self.total_ns += a.duration;
        }
        self.add(a.key_index, a.enter_ns, a.duration, a.duration, a.outermost);
        if a.unwound || a.missing_children {
            self.note(a.key_index, a.unwound, a.missing_children);
        }
        if let Some(parent) = a.parent.and_then(|p| self.dense.get_mut(p as usize)) {
            // It arrived before its children, so its self time never goes below zero.
            parent.take_child_time(a.duration);
        }
    }

    /// Moves what was filled into its scope, and starts filling scope `next`.
    #[cold]
    #[inline(never)] // once per thread: the per-span code stays small enough to inline
    fn switch(&mut self, next: usize, scopes: &mut [ScopeStats]) {
        self.touched.sort_unstable();
        if let Some(scope) = scopes.get_mut(self.scope) {
            scope.total_ns += self.total_ns;
            scope.functions.reserve_exact(self.touched.len());
            for &key in &self.touched {
                if let Some(stats) = self.dense.get_mut(key as usize) {
                    scope.functions.push((key, std::mem::replace(stats, CallStats::new(self.clean))));
                }
            }
        }
        self.touched.clear();
        (self.scope, self.total_ns) = (next, 0);
    }
}

/// Walks `tl` into its scopes ([`Timeline::scope_names`]).
///
/// Without calibration every span is added as it starts
/// ([`Timeline::arrivals`]): its duration counts towards its own key's self
/// time and is taken from its parent's, so no span needs closing. With it,
/// a span's duration depends on how many spans it holds, known when it
/// closes ([`Timeline::walk`]). Both walk thread after thread, so one
/// [`Filling`] serves every scope in turn.
fn accumulate(tl: &Timeline<'_>, per_thread: bool, calibrated: bool, clean: bool) -> (Vec<ScopeStats>, Anomalies) {
    let mut scopes: Vec<ScopeStats> = tl
        .scope_names(per_thread)
        .into_iter()
        .map(|name| ScopeStats { name, total_ns: 0, functions: Vec::new() })
        .collect();
    let dense = tl.keys.iter().map(|_| CallStats::new(clean)).collect();
    let mut filling = Filling { scope: 0, total_ns: 0, dense, touched: Vec::new(), clean };
    // The closures are inlined into the walks' per-span loops.
    let found = match calibrated.then(|| tl.recorder_cost()).flatten() {
        None => tl.arrivals(
            #[inline(always)]
            |a| filling.arrival(a, per_thread, &mut scopes),
        ),
        cost => tl.walk(
            cost,
            #[inline(always)]
            |v| {
                if per_thread && v.thread != filling.scope {
                    filling.switch(v.thread, &mut scopes);
                }
                if v.path.len() == 1 {
                    filling.total_ns += v.duration;
                }
                let key = v.path.last().copied().unwrap_or_default();
                filling.add(key, v.enter_ns, v.duration, v.self_ns, v.outermost);
                if v.unwound || v.missing_children {
                    filling.note(key, v.unwound, v.missing_children);
                }
            },
        ),
    };
    filling.switch(0, &mut scopes);
    (scopes, found)
}

/// One dump's per-function accumulators over all its threads, by function
/// name, and its top-level time: what [`Merged`] adds up.
#[derive(Debug)]
pub struct DumpTotals {
    /// Time of the top-level spans, over all threads.
    pub total_ns: u64,
    /// Per function name (keys of the same name merged).
    pub functions: Vec<(String, CallStats)>,
    /// What its threads did not record whole.
    pub losses: Losses,
}

/// The accumulators of `tl` over all its threads (see [`DumpTotals`]), and
/// what its spans had wrong with them.
pub fn totals(tl: &Timeline<'_>, calibrated: bool, clean: bool) -> (DumpTotals, Anomalies) {
    let (scopes, found) = accumulate(tl, false, calibrated, clean);
    (by_name(tl, scopes), found)
}

/// The one scope of `scopes` (over all threads) as a [`DumpTotals`], keys of a name merged.
fn by_name(tl: &Timeline<'_>, mut scopes: Vec<ScopeStats>) -> DumpTotals {
    let Some(all) = scopes.pop() else {
        return DumpTotals { total_ns: 0, functions: Vec::new(), losses: tl.trace.losses() };
    };
    let mut by_name: HashMap<String, CallStats> = HashMap::new();
    for (key, stats) in all.functions {
        by_name.entry(tl.name(key as usize).to_string()).or_default().merge(stats);
    }
    let functions = by_name.into_iter().collect();
    DumpTotals { total_ns: all.total_ns, functions, losses: tl.trace.losses() }
}

/// [`totals`] (uncalibrated, not cleaned) for a caller that walks the spans itself, handing each
/// over as it starts (`export` does, as it writes its rows): the same figures without a second walk.
pub struct Totals {
    filling: Filling,
    scopes: Vec<ScopeStats>,
}

impl Totals {
    /// Accumulators for `tl`'s functions, none called yet.
    pub fn new(tl: &Timeline<'_>) -> Totals {
        let scopes = tl
            .scope_names(false)
            .into_iter()
            .map(|name| ScopeStats { name, total_ns: 0, functions: Vec::new() })
            .collect();
        let dense = tl.keys.iter().map(|_| CallStats::new(false)).collect();
        Totals { filling: Filling { scope: 0, total_ns: 0, dense, touched: Vec::new(), clean: false }, scopes }
    }

    /// One span as it starts, with its parent's key index (`None` at the top) and whether no span
    /// around it has its key; its duration clamped into its parent's, as every walk hands it out.
    #[inline(always)] // once per span
    pub fn span(&mut self, span: &crate::model::SpanNs, parent: Option<u32>, outermost: bool, missing_children: bool) {
        let arrival = Arrival {
            thread: 0,
            key_index: span.key_index,
            parent,
            enter_ns: span.enter_ns,
            duration: span.duration_ns(),
            outermost,
            unwound: span.unwound(),
            missing_children,
        };
        self.filling.arrival(&arrival, false, &mut self.scopes);
    }

    /// What [`totals`] gives of the spans handed over.
    pub fn finish(mut self, tl: &Timeline<'_>) -> DumpTotals {
        self.filling.switch(0, &mut self.scopes);
        by_name(tl, self.scopes)
    }
}

/// Per-function figures merged over many dumps: calls, times and histograms
/// add up (percentiles come from the merged histogram, never averaged), and
/// each function counts the dumps it appears in.
#[derive(Debug, Default)]
pub struct Merged {
    /// Dumps added.
    pub dumps: u64,
    /// Their top-level time, summed.
    pub total_ns: u64,
    /// What their threads did not record whole, summed.
    pub losses: Losses,
    /// What the filter kept and left out of them, summed.
    pub filtered: crate::model::Filtered,
    functions: HashMap<String, (CallStats, u64)>,
}

impl Merged {
    /// Adds one dump.
    pub fn add(&mut self, dump: DumpTotals) {
        self.dumps += 1;
        self.total_ns += dump.total_ns;
        self.losses += dump.losses;
        for (name, stats) in dump.functions {
            let (mine, dumps) = self.functions.entry(name).or_default();
            mine.merge(stats);
            *dumps += 1;
        }
    }

    /// Adds everything `other` holds.
    pub fn merge(&mut self, other: Merged) {
        self.dumps += other.dumps;
        self.total_ns += other.total_ns;
        self.losses += other.losses;
        self.filtered += other.filtered;
        for (name, (stats, dumps)) in other.functions {
            let (mine, count) = self.functions.entry(name).or_default();
            mine.merge(stats);
            *count += dumps;
        }
    }

    /// Per function: its row and its calls' durations ([`CallStats::distribution`]).
    pub fn functions(self) -> Vec<(Row, Vec<(u64, u64)>)> {
        let total_ns = self.total_ns;
        self.functions
            .into_iter()
            .map(|(function, (mut stats, dumps))| {
                let distribution = stats.distribution();
                (Row { dumps: Some(dumps), ..stats.row(function, total_ns) }, distribution)
            })
            .collect()
    }

    /// The table of it, named `name`.
    pub fn scope(self, name: String, sort_by: Column, clean: bool) -> Scope {
        let total_ns = self.total_ns;
        let mut rows: Vec<Row> = self
            .functions
            .into_iter()
            .map(|(function, (stats, dumps))| Row { dumps: Some(dumps), ..stats.row(function, total_ns) })
            .collect();
        sort(&mut rows, sort_by);
        Scope { name, total_ns, rows, calibration: None, cleaned: clean, losses: self.losses, filter: None }
    }
}

fn sort(rows: &mut [Row], column: Column) {
    let by = |r: &Row| -> f64 {
        match column {
            Column::Name => 0.0,
            Column::Calls => r.calls as f64,
            Column::Total => r.total_ns as f64,
            Column::SelfTime => r.self_ns as f64,
            Column::Min => r.min_ns as f64,
            Column::Mean => r.mean_ns,
            Column::P50 => r.p50_ns as f64,
            Column::P90 => r.p90_ns as f64,
            Column::P99 => r.p99_ns as f64,
            Column::Max => r.max_ns as f64,
            Column::Stddev => r.stddev_ns,
        }
    };
    if column == Column::Name {
        rows.sort_by(|a, b| a.name.cmp(&b.name));
    } else {
        rows.sort_by(|a, b| by(b).total_cmp(&by(a)).then_with(|| a.name.cmp(&b.name)));
    }
}
