//! Columnar export: a dump's spans, per-function figures and metadata as
//! tables, for the engines a fleet's data goes to (DuckDB, Spark, pandas,
//! Polars): written as Apache Parquet files (feature `parquet`), handed to
//! pyarrow by the Python package.
//!
//! Design constraints:
//! - Four tables, each a directory of part files (`spans/`, `functions/`,
//!   `durations/`, `dumps/`), one part per worker of a batch: every engine reads a
//!   directory of parts as one table, and workers never share a writer.
//! - Streamed: spans are handed on [`spans::BATCH_ROWS`] at a time, in one
//!   batch whose buffers are refilled, and encoded a page of [`PAGE_ROWS`]
//!   at a time, so memory is bounded by a page (and a row group's encoded
//!   pages), not by the dump.
//! - The tables are plain columns ([`columns`]): Arrow and Parquet are the
//!   writers' business, so the library, and the Python package, build
//!   without Parquet, and rtconv's Parquet without Arrow.
//! - Repeated strings (dump, host, program, build, thread, function, file)
//!   are dictionary-encoded; spans are written in their start order, ids and
//!   starts delta-encoded; columns are zstd-compressed.
//! - The layout is versioned ([`schema::SCHEMA_VERSION`] in each file's
//!   key-value metadata) and documented in formats/PARQUET.md.
//!
//! A dump's `functions` table, in memory (the `spans` table comes a batch
//! at a time from [`spans::write`]; `Parts` writes all three as Parquet):
//!
//! ```no_run
//! use std::path::Path;
//! use rtconv::export::{DumpColumns, Host, columns, functions, schema};
//! use rtconv::{convert, model, symbolize};
//!
//! let path = Path::new("trace.rtd");
//! let bytes = model::open(path)?;
//! let opts = symbolize::Options::default();
//! let (cache, filter) = (symbolize::Cache::default(), model::Filter::default());
//! let input = convert::Input::new(path, &bytes, &opts, &filter, &cache);
//! let (table, _report) = convert::with_timeline(input, false, |tl| {
//!     let dump = DumpColumns::new(tl, "trace.rtd", Host(Some("web-17")));
//!     (functions(tl, &dump), model::Anomalies::default())
//! })?;
//! columns::check(&schema::functions(), &table)?; // a column per field, in order
//! println!("{} functions", columns::rows(&table));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "parquet")]
mod chunk;
pub mod columns;
#[cfg(feature = "parquet")]
mod numbers;
#[cfg(feature = "parquet")]
mod parquet;
#[cfg(feature = "parquet")]
mod rle;
pub mod schema;
pub mod spans;
#[cfg(feature = "parquet")]
mod words;

#[cfg(feature = "parquet")]
pub use parquet::{ExportError, Parts};

use std::sync::Arc;

use columns::{Batch, Column, Values};

use crate::model::{Anomalies, Timeline};

/// Rows per row group: large enough for a scan to read long runs (and for
/// zstd to find a loop's repeats across its pages).
pub const ROW_GROUP_ROWS: usize = 1 << 18;

/// Rows per data page: a writer holds a page's rows as columns (about 60
/// bytes a span by their widths) until they are encoded, and the pages of a
/// row group encoded, so that its memory, and the cache it works in, are a
/// page's, not a row group's.
pub const PAGE_ROWS: usize = 1 << 16;

/// The host the dumps were taken on, when given (dumps do not record it).
#[derive(Clone, Copy, Debug)]
pub struct Host<'h>(pub Option<&'h str>);

/// The columns every table's rows of one dump share.
pub struct DumpColumns {
    /// `dump`, `host`, `program`, `build_id`: each a dictionary of its one word, or of none where
    /// the dump has no value.
    words: [Arc<[String]>; 4],
    pid: u32,
}

impl DumpColumns {
    /// The columns every table's rows of a dump begin with: `dump`, `host`, `program`,
    /// `build_id`, `pid`.
    pub const SHARED: usize = 5;

    /// The dump `name` (its path, or `archive:member`) of `tl`, taken on `host`.
    pub fn new(tl: &Timeline<'_>, name: &str, host: Host<'_>) -> Self {
        let trace = tl.trace;
        let main = trace.modules.iter().find(|m| m.is_main);
        let build_id = main.filter(|m| !m.build_id.is_empty()).map(|m| crate::symbolize::hex(&m.build_id));
        let program = if trace.process.name.is_empty() {
            main.map_or_else(String::new, |m| m.path.to_string_lossy().into_owned())
        } else {
            trace.process.name.clone()
        };
        let words = |word: Option<String>| word.into_iter().collect();
        DumpColumns {
            words: [
                words(Some(name.to_owned())),
                words(host.0.map(str::to_owned)),
                words(Some(program)),
                words(build_id),
            ],
            pid: trace.process.pid,
        }
    }

    /// The shared columns for `n` rows in `columns` ([`SHARED`](Self::SHARED)), refilled in their
    /// own buffers.
    fn refill(&self, columns: &mut [Column], n: usize) {
        let [dump, host, program, build_id, pid] = columns else {
            unreachable!("five columns every table's rows of a dump share")
        };
        for (column, words) in [dump, host, program, build_id].into_iter().zip(&self.words) {
            let valid = words.is_empty().then(|| std::iter::repeat_n(false, n));
            if !column.holds_same(words, n, valid.is_some()) {
                column.refill_words(words).resize(n, 0);
                column.set_valid(valid);
            }
        }
        if !matches!(&pid.values, Values::U32(v) if v.len() == n && columns::all_equal(v, self.pid)) {
            pid.refill::<u32>().resize(n, self.pid);
        }
    }

    /// The shared columns for `n` rows: each a dictionary of one value.
    fn columns(&self, n: usize) -> Batch {
        let mut columns = columns::placeholders(Self::SHARED);
        self.refill(&mut columns, n);
        columns
    }
}

/// The `functions` rows of a dump: `rtconv stats`' figures, per function name.
pub fn functions(tl: &Timeline<'_>, dump: &DumpColumns) -> Batch {
    functions_and_durations(tl, dump).0
}

/// The `functions` rows of a dump ([`functions`]) and its `durations` rows: per function, its
/// calls' durations as `stats` keeps them (exact below 2048 ns, within 0.1 % above: each bucket
/// at its highest value), from which a fleet's percentiles are exactly `stats`' merged ones.
pub fn functions_and_durations(tl: &Timeline<'_>, dump: &DumpColumns) -> (Batch, Batch) {
    functions_and_durations_of(crate::stats::totals(tl, false, false).0, dump)
}

/// [`functions_and_durations`] of a dump whose `totals` are at hand ([`spans::write_and_total`]).
pub fn functions_and_durations_of(totals: crate::stats::DumpTotals, dump: &DumpColumns) -> (Batch, Batch) {
    let (mut rows, mut buckets): (Vec<crate::stats::Row>, Vec<(String, u64, u64)>) = (Vec::new(), Vec::new());
    for (name, mut stats) in totals.functions {
        buckets.extend(stats.distribution().into_iter().map(|(ns, calls)| (name.clone(), ns, calls)));
        rows.push(stats.row(name, totals.total_ns));
    }
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    buckets.sort_unstable();
    (function_rows(&rows, dump), duration_rows(&buckets, dump))
}

/// The `durations` rows of (function, bucket, calls).
fn duration_rows(buckets: &[(String, u64, u64)], dump: &DumpColumns) -> Batch {
    let mut names: Vec<String> = Vec::new();
    let keys = buckets
        .iter()
        .map(|(name, ..)| {
            if names.last() != Some(name) {
                names.push(name.clone());
            }
            (names.len() - 1) as u32
        })
        .collect();
    let mut columns = dump.columns(buckets.len());
    columns.extend([
        Column::new(Values::Words { words: names.into(), keys }),
        Column::new(Values::U64(buckets.iter().map(|b| b.1).collect())),
        Column::new(Values::U64(buckets.iter().map(|b| b.2).collect())),
    ]);
    columns
}

/// The `functions` rows of `rows` (sorted by name).
fn function_rows(rows: &[crate::stats::Row], dump: &DumpColumns) -> Batch {
    let column = |f: fn(&crate::stats::Row) -> u64| Column::new(Values::U64(rows.iter().map(f).collect()));
    let mut columns = dump.columns(rows.len());
    columns.push(Column::new(Values::Words {
        words: rows.iter().map(|r| r.name.clone()).collect(),
        keys: (0..rows.len() as u32).collect(),
    }));
    columns.extend([
        column(|r| r.calls),
        column(|r| r.total_ns),
        column(|r| r.self_ns),
        column(|r| r.min_ns),
        column(|r| r.p50_ns),
        column(|r| r.p90_ns),
        column(|r| r.p99_ns),
        column(|r| r.max_ns),
    ]);
    columns
}

/// The `dumps` row of a dump.
pub fn dump_row(tl: &Timeline<'_>, dump: &DumpColumns, found: &Anomalies) -> Batch {
    let trace = tl.trace;
    let losses = trace.losses();
    let start = i64::try_from(tl.timebase.realtime_ns(i128::from(tl.origin_ns))).ok();
    let named_by: std::collections::BTreeMap<&str, usize> =
        tl.names.counts().into_iter().map(|(source, keys)| (source.name(), keys)).collect();
    let named = named_by.values().sum::<usize>() as u64;
    let spans: u64 = trace.threads.iter().map(|t| t.span_count()).sum();
    let one = |v: u64| Column::new(Values::U64(vec![v]));
    let mut columns = dump.columns(1);
    columns.extend([
        Column::new(Values::Text(vec![trace.process.producer.clone()])),
        Column::options(&[trace.process.reason.map(|r| r.label())], |v| {
            Values::Text(v.into_iter().map(str::to_owned).collect())
        }),
        Column::options(&[start], Values::I64),
        Column::new(Values::F64(vec![tl.timebase.hz()])),
        Column::new(Values::U32(vec![u32::try_from(trace.threads.len()).unwrap_or(u32::MAX)])),
        one(spans),
        one(losses.overwritten),
        one(losses.dropped),
        one(found.clamped),
        one(found.filtered.left_out()),
        one(tl.keys.len() as u64),
        one(named),
        Column::new(Values::Text(vec![serde_json::to_string(&named_by).unwrap_or_default()])),
    ]);
    columns
}
