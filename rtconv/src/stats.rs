//! `rtconv stats`: per-function figures over a dump, per thread or over all
//! threads, as an aligned table, CSV or JSON.
//!
//! For each function (span name): calls; total time (inclusive, counting a
//! recursive call only at its outermost entry so time is not counted twice);
//! self time (exclusive of children); min, mean, p50, p90, p99, max and
//! standard deviation of a call's inclusive duration; and its share of the
//! scope's time (self time ÷ the top-level spans' total, so shares add up to
//! 100%). Percentiles come from an HDR histogram with 3 significant digits.

use std::collections::HashMap;
use std::io::{self, Write};

use hdrhistogram::Histogram;

use crate::timeline::Timeline;

/// A column to sort by (descending, except `Name`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// Function name, ascending.
    Name,
    /// Number of calls.
    Calls,
    /// Total (inclusive) time.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// An aligned table with human units.
    Table,
    /// CSV, times in integer nanoseconds.
    Csv,
    /// JSON, times in integer nanoseconds.
    Json,
}

/// What `rtconv stats` computes and how it writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Sort rows by.
    pub sort: Column,
    /// One table per thread instead of one over all threads.
    pub per_thread: bool,
    /// Output form.
    pub output: Output,
    /// The call tree instead of the per-function table.
    pub tree: bool,
    /// Take the recorder's measured cost out of every span (see `Timeline::walk`).
    pub calibrated: bool,
    /// Leave outlying calls out of the distribution figures (see [`crate::clean`]).
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
    /// With `--calibrated`: the recorder's cost taken out, (ns per span, ns per nested span).
    pub calibration: Option<(u64, u64)>,
    /// With `--clean`: outlying calls were left out of the distribution figures.
    pub cleaned: bool,
}

/// One function's figures as they accumulate, call by call; accumulators of
/// several dumps merge exactly (the histograms too).
///
/// A call costs a few additions: durations below 2048 ns — most
/// calls of a hot function — are counted in a plain array, and their share
/// of the extremes, sums and histogram is added per distinct duration when
/// the figures are read. Sums are integers, so the result
/// does not depend on the order of the calls.
#[derive(Debug)]
pub struct Acc {
    calls: u64,
    total: u64,
    self_ns: u64,
    /// Shortest and longest of the calls settled so far (`u64::MAX`, 0 before any).
    min: u64,
    max: u64,
    /// Sum of the settled calls' durations and of their squares (saturating).
    sum: u128,
    sum_sq: u128,
    hist: Option<Histogram<u64>>,
    /// Calls per duration below [`EXACT_BELOW`] ns, not yet settled.
    short: Option<Box<[u64; EXACT_BELOW as usize]>>,
    /// Every call's start and duration (kept only with `--clean`).
    durations: Option<Vec<(i64, u64)>>,
}

impl Default for Acc {
    fn default() -> Self {
        Acc {
            calls: 0,
            total: 0,
            self_ns: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            hist: None,
            short: None,
            durations: None,
        }
    }
}

/// A histogram of 3 significant digits holds every value below 2048
/// exactly, so counting such durations in an array first and adding the
/// counts later (`record_n`) makes the same histogram.
const EXACT_BELOW: u64 = 2048;

/// Calls an accumulator takes before it allocates the array (16 KiB): rare
/// functions do without.
const SHORT_ARRAY_AFTER: u64 = 256;

impl Acc {
    /// One call: its start, inclusive duration, and what it adds to the
    /// function's self time; `outermost` when no call of the same function
    /// is around it (only those count towards the total).
    #[inline(always)] // once per span
    fn add(&mut self, enter_ns: i64, duration: u64, self_ns: u64, outermost: bool) {
        if let Some(all) = &mut self.durations {
            all.push((enter_ns, duration));
        }
        self.calls += 1;
        self.self_ns = self.self_ns.wrapping_add(self_ns);
        if outermost {
            self.total += duration;
        }
        if let Some(short) = &mut self.short
            && let Some(count) = short.get_mut(duration as usize)
        {
            *count += 1;
            return;
        }
        if self.calls == SHORT_ARRAY_AFTER {
            self.short = Some(Box::new([0; EXACT_BELOW as usize]));
        }
        self.settle_calls(duration, 1);
    }

    /// Adds `count` calls of `duration` to the extremes, sums and histogram.
    #[inline(never)] // for the long calls only: `add` stays small
    fn settle_calls(&mut self, duration: u64, count: u64) {
        self.min = self.min.min(duration);
        self.max = self.max.max(duration);
        let (d, n) = (u128::from(duration), u128::from(count));
        self.sum = self.sum.saturating_add(d * n);
        self.sum_sq = self.sum_sq.saturating_add((d * d).saturating_mul(n));
        if self.hist.is_none() {
            // 3 significant digits (creation fails only above 5); it grows to any value it is given.
            self.hist = Histogram::new(3).ok();
        }
        if let Some(hist) = &mut self.hist {
            let _ = hist.record_n(duration.max(1), count);
        }
    }

    /// Moves the counted short durations into the extremes, sums and histogram.
    fn settle(&mut self) {
        let Some(short) = self.short.take() else { return };
        for (duration, &count) in short.iter().enumerate().filter(|&(_, &count)| count > 0) {
            self.settle_calls(duration as u64, count);
        }
    }

    /// The row with the distribution figures recomputed from the calls no longer than `fence`.
    fn cleaned_row(&self, name: String, scope_total: u64, all: &[u64], fence: u64) -> Row {
        let mut kept = Acc::default();
        for &d in all.iter().filter(|&&d| d <= fence) {
            kept.add(0, d, 0, false);
        }
        let kept_calls = kept.calls;
        let mut row = kept.row(name, scope_total);
        row.calls = self.calls;
        row.total_ns = self.total;
        row.self_ns = self.self_ns;
        row.share = if scope_total == 0 { 0.0 } else { self.self_ns as f64 / scope_total as f64 };
        row.outliers = self.calls - kept_calls;
        row
    }

    /// Adds `other`'s calls to these.
    fn merge(&mut self, mut other: Acc) {
        if other.calls == 0 {
            return;
        }
        self.settle();
        other.settle();
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.calls += other.calls;
        self.total += other.total;
        self.self_ns = self.self_ns.wrapping_add(other.self_ns);
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        match (&mut self.hist, other.hist) {
            (Some(mine), Some(theirs)) => {
                // Both grow to any value; adding cannot fail for histograms made by `Histogram::new`.
                let _ = mine.add(&theirs);
            }
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        if let (Some(mine), Some(theirs)) = (&mut self.durations, other.durations) {
            mine.extend(theirs);
        }
    }

    fn row(mut self, name: String, scope_total: u64) -> Row {
        self.settle();
        if let Some(calls) = &self.durations {
            // In the order the calls started.
            let mut calls = calls.clone();
            calls.sort_unstable();
            let all: Vec<u64> = calls.iter().map(|&(_, d)| d).collect();
            if let Some(fence) = crate::clean::fence(&all) {
                return self.cleaned_row(name, scope_total, &all, fence);
            }
        }
        let n = self.calls.max(1) as f64;
        let mean = self.sum as f64 / n;
        let min = self.min.min(self.max); // 0 without calls
        // The histogram answers with its bucket's upper bound: keep it within the calls seen.
        let q = |p: f64| self.hist.as_ref().map_or(0, |h| h.value_at_quantile(p)).clamp(min, self.max);
        Row {
            name,
            calls: self.calls,
            total_ns: self.total,
            self_ns: self.self_ns,
            share: if scope_total == 0 { 0.0 } else { self.self_ns as f64 / scope_total as f64 },
            min_ns: min,
            mean_ns: mean,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            max_ns: self.max,
            stddev_ns: (self.sum_sq as f64 / n - mean * mean).max(0.0).sqrt(),
            outliers: 0,
            dumps: None,
        }
    }
}

/// Computes the scopes of `tl`: one over all threads, or one per thread.
pub fn compute(tl: &Timeline<'_>, opts: &Options) -> Vec<Scope> {
    let calibration = if opts.calibrated { tl.recorder_costs() } else { None };
    accumulate(tl, opts.per_thread, opts.calibrated, opts.clean)
        .into_iter()
        .map(|(name, total_ns, accs)| {
            let mut rows: Vec<Row> = accs
                .into_iter()
                .enumerate()
                .filter(|(_, acc)| acc.calls > 0)
                .map(|(key, acc)| acc.row(tl.name(key).to_string(), total_ns))
                .collect();
            sort(&mut rows, opts.sort);
            Scope { name, total_ns, rows, calibration, cleaned: opts.clean }
        })
        .collect()
}

/// Walks `tl` into its scopes ([`Timeline::scope_names`]): each with its
/// top-level time and one accumulator per key index (zero calls for keys
/// the scope never saw).
///
/// Without calibration every span is added as it starts
/// ([`Timeline::arrivals`]): its duration counts towards its own key's self
/// time and is taken from its parent's, so no span needs closing. With it,
/// a span's duration depends on how many spans it holds, known when it
/// closes ([`Timeline::walk`]).
fn accumulate(tl: &Timeline<'_>, per_thread: bool, calibrated: bool, clean: bool) -> Vec<(String, u64, Vec<Acc>)> {
    let fresh =
        || -> Vec<Acc> { tl.keys.iter().map(|_| Acc { durations: clean.then(Vec::new), ..Acc::default() }).collect() };
    let mut scopes: Vec<(String, u64, Vec<Acc>)> =
        tl.scope_names(per_thread).into_iter().map(|name| (name, 0, fresh())).collect();
    let scope = |thread: usize| if per_thread { thread } else { 0 };
    match calibrated.then(|| tl.recorder_costs()).flatten() {
        None => tl.arrivals(|a| {
            let Some((_, total, accs)) = scopes.get_mut(scope(a.thread)) else { return };
            if a.parent.is_none() {
                *total += a.duration;
            }
            if let Some(acc) = accs.get_mut(a.key_index as usize) {
                acc.add(a.enter_ns, a.duration, a.duration, a.outermost);
            }
            if let Some(parent) = a.parent.and_then(|p| accs.get_mut(p as usize)) {
                // It arrived before its children, so its self time never goes below zero.
                parent.self_ns = parent.self_ns.wrapping_sub(a.duration);
            }
        }),
        costs => tl.walk(costs, |v| {
            let Some((_, total, accs)) = scopes.get_mut(scope(v.thread)) else { return };
            if v.path.len() == 1 {
                *total += v.duration;
            }
            if let Some(acc) = accs.get_mut(v.path.last().copied().unwrap_or_default() as usize) {
                acc.add(v.enter_ns, v.duration, v.self_ns, v.outermost);
            }
        }),
    }
    scopes
}

/// One dump's per-function accumulators over all its threads, by function
/// name, and its top-level time: what [`Merged`] adds up.
#[derive(Debug)]
pub struct DumpTotals {
    /// Time of the top-level spans, over all threads.
    pub total_ns: u64,
    /// Per function name (keys of the same name merged).
    pub functions: Vec<(String, Acc)>,
}

/// The accumulators of `tl` over all its threads (see [`DumpTotals`]).
pub fn totals(tl: &Timeline<'_>, calibrated: bool, clean: bool) -> DumpTotals {
    let Some((_, total_ns, accs)) = accumulate(tl, false, calibrated, clean).pop() else {
        return DumpTotals { total_ns: 0, functions: Vec::new() };
    };
    let mut by_name: HashMap<String, Acc> = HashMap::new();
    for (key, acc) in accs.into_iter().enumerate().filter(|(_, acc)| acc.calls > 0) {
        by_name.entry(tl.name(key).to_string()).or_default().merge(acc);
    }
    DumpTotals { total_ns, functions: by_name.into_iter().collect() }
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
    functions: HashMap<String, (Acc, u64)>,
}

impl Merged {
    /// Adds one dump.
    pub fn add(&mut self, dump: DumpTotals) {
        self.dumps += 1;
        self.total_ns += dump.total_ns;
        for (name, acc) in dump.functions {
            let (mine, dumps) = self.functions.entry(name).or_default();
            mine.merge(acc);
            *dumps += 1;
        }
    }

    /// Adds everything `other` holds.
    pub fn merge(&mut self, other: Merged) {
        self.dumps += other.dumps;
        self.total_ns += other.total_ns;
        for (name, (acc, dumps)) in other.functions {
            let (mine, count) = self.functions.entry(name).or_default();
            mine.merge(acc);
            *count += dumps;
        }
    }

    /// The table of it, named `name`.
    pub fn scope(self, name: String, sort_by: Column, clean: bool) -> Scope {
        let total_ns = self.total_ns;
        let mut rows: Vec<Row> = self
            .functions
            .into_iter()
            .map(|(function, (acc, dumps))| Row { dumps: Some(dumps), ..acc.row(function, total_ns) })
            .collect();
        sort(&mut rows, sort_by);
        Scope { name, total_ns, rows, calibration: None, cleaned: clean }
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

/// Nanoseconds in the largest unit that keeps the number at least 1: ns, µs, ms, s, min.
pub fn human(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns < 60e9 {
        format!("{:.2} s", ns / 1e9)
    } else {
        format!("{:.2} min", ns / 60e9)
    }
}

const HEADERS: [&str; 12] =
    ["function", "calls", "total", "self", "self %", "min", "mean", "p50", "p90", "p99", "max", "stddev"];

/// Writes `scopes` in the chosen form.
pub fn write(scopes: &[Scope], output: Output, color: bool, out: &mut dyn Write) -> io::Result<()> {
    match output {
        Output::Table => write_table(scopes, color, out),
        Output::Csv => write_csv(scopes, out),
        Output::Json => write_json(scopes, out),
    }
}

fn write_table(scopes: &[Scope], color: bool, out: &mut dyn Write) -> io::Result<()> {
    let (bold, plain) = if color { ("\x1b[1m", "\x1b[0m") } else { ("", "") };
    for (i, scope) in scopes.iter().enumerate() {
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{bold}{} — {} in top-level spans{plain}", scope.name, human(scope.total_ns as f64))?;
        if let Some((read, span)) = scope.calibration {
            writeln!(out, "calibrated: {read} ns taken out of every span, and {span} ns for each span nested in it")?;
        }
        if scope.cleaned {
            let outliers: u64 = scope.rows.iter().map(|r| r.outliers).sum();
            writeln!(
                out,
                "cleaned: {outliers} call(s) above Q3 + 1.5 IQR of bucket maxima left out of min..stddev \
                 (calls, total and self keep them)"
            )?;
        }
        let with_dumps = scope.rows.iter().any(|r| r.dumps.is_some());
        let mut headers: Vec<&str> = HEADERS.to_vec();
        if with_dumps {
            headers.push("dumps");
        }
        let cells: Vec<Vec<String>> = scope
            .rows
            .iter()
            .map(|r| {
                let mut row = vec![
                    r.name.clone(),
                    r.calls.to_string(),
                    human(r.total_ns as f64),
                    human(r.self_ns as f64),
                    format!("{:.1}%", r.share * 100.0),
                    human(r.min_ns as f64),
                    human(r.mean_ns),
                    human(r.p50_ns as f64),
                    human(r.p90_ns as f64),
                    human(r.p99_ns as f64),
                    human(r.max_ns as f64),
                    human(r.stddev_ns),
                ];
                if with_dumps {
                    row.push(r.dumps.unwrap_or(0).to_string());
                }
                row
            })
            .collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|c| cells.iter().map(|row| row[c].chars().count()).chain([headers[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |cols: Vec<&str>, out: &mut dyn Write| -> io::Result<()> {
            for (c, text) in cols.iter().enumerate() {
                let pad = widths[c] - text.chars().count();
                if c == 0 {
                    write!(out, "{text}{}", " ".repeat(pad))?;
                } else {
                    write!(out, "  {}{text}", " ".repeat(pad))?;
                }
            }
            writeln!(out)
        };
        write!(out, "{bold}")?;
        line(headers, out)?;
        write!(out, "{plain}")?;
        for row in &cells {
            line(row.iter().map(String::as_str).collect(), out)?;
        }
    }
    Ok(())
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

fn write_csv(scopes: &[Scope], out: &mut dyn Write) -> io::Result<()> {
    let with_dumps = scopes.iter().flat_map(|s| &s.rows).any(|r| r.dumps.is_some());
    writeln!(
        out,
        "scope,function,calls,total_ns,self_ns,self_share,min_ns,mean_ns,p50_ns,p90_ns,p99_ns,max_ns,stddev_ns{}",
        if with_dumps { ",dumps" } else { "" }
    )?;
    for scope in scopes {
        for r in &scope.rows {
            writeln!(
                out,
                "{},{},{},{},{},{:.6},{},{:.0},{},{},{},{},{:.0}{}",
                csv_field(&scope.name),
                csv_field(&r.name),
                r.calls,
                r.total_ns,
                r.self_ns,
                r.share,
                r.min_ns,
                r.mean_ns,
                r.p50_ns,
                r.p90_ns,
                r.p99_ns,
                r.max_ns,
                r.stddev_ns,
                r.dumps.map_or(String::new(), |d| format!(",{d}"))
            )?;
        }
    }
    Ok(())
}

fn write_json(scopes: &[Scope], out: &mut dyn Write) -> io::Result<()> {
    let value: Vec<serde_json::Value> = scopes
        .iter()
        .map(|s| {
            let rows: Vec<serde_json::Value> = s
                .rows
                .iter()
                .map(|r| {
                    let mut row = serde_json::json!({
                        "function": r.name, "calls": r.calls, "total_ns": r.total_ns, "self_ns": r.self_ns,
                        "self_share": r.share, "min_ns": r.min_ns, "mean_ns": r.mean_ns.round() as u64,
                        "p50_ns": r.p50_ns, "p90_ns": r.p90_ns, "p99_ns": r.p99_ns, "max_ns": r.max_ns,
                        "stddev_ns": r.stddev_ns.round() as u64, "outliers": r.outliers,
                    });
                    if let Some(dumps) = r.dumps {
                        row["dumps"] = dumps.into();
                    }
                    row
                })
                .collect();
            let calibration =
                s.calibration.map(|(read, span)| serde_json::json!({"per_span_ns": read, "per_nested_span_ns": span}));
            serde_json::json!({
                "scope": s.name, "total_ns": s.total_ns, "calibration": calibration, "cleaned": s.cleaned,
                "functions": rows,
            })
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &value).map_err(io::Error::from)?; // keeps an I/O error's kind (a closed pipe)
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::human;

    #[test]
    fn human_units() {
        assert_eq!(human(999.0), "999 ns");
        assert_eq!(human(1_500.0), "1.50 µs");
        assert_eq!(human(20_000_000.0), "20.00 ms");
        assert_eq!(human(2_500_000_000.0), "2.50 s");
        assert_eq!(human(90e9), "1.50 min");
    }
}
