//! Columnar export: a dump's spans, per-function figures and metadata as
//! Apache Parquet tables, for the engines a fleet's data goes to (DuckDB,
//! Spark, pandas, Polars).
//!
//! Design constraints:
//! - Three tables, each a directory of part files (`spans/`, `functions/`,
//!   `dumps/`), one part per worker of a batch: every engine reads a
//!   directory of parts as one table, and workers never share a writer.
//! - Streamed: spans are handed to the writer [`spans::BATCH_ROWS`] at a time
//!   and row groups are flushed at [`ROW_GROUP_ROWS`], so memory is bounded
//!   by those, not by the dump.
//! - Repeated strings (dump, host, program, build, thread, function, file)
//!   are dictionary-encoded; columns are Snappy-compressed.
//! - The layout is versioned ([`schema::SCHEMA_VERSION`] in each file's
//!   key-value metadata) and documented in formats/PARQUET.md.
//!
//! ```no_run
//! use std::path::Path;
//! use rtconv::export::{Host, Parts};
//! use rtconv::{convert, model, symbolize};
//!
//! let path = Path::new("trace.rtd");
//! let bytes = model::open(path)?;
//! let mut parts = Parts::new(Path::new("tables"), 0)?; // tables/spans/part-0.parquet, ...
//! let opts = symbolize::Options::default();
//! let (cache, filter) = (symbolize::Cache::default(), model::Filter::default());
//! let (written, _report) = convert::with_timeline(path, &bytes, &opts, &filter, &cache, false, |tl| {
//!     match parts.dump(tl, "trace.rtd", Host(Some("web-17"))) {
//!         Ok(found) => (Ok(()), found),
//!         Err(e) => (Err(e), model::Anomalies::default()),
//!     }
//! })?;
//! written?;
//! parts.finish()?; // footers written, files renamed into place
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod schema;
pub mod spans;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::{
    Array, ArrayRef, DictionaryArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;

use crate::io::AtomicFile;
use crate::model::{Anomalies, Timeline};

/// Rows per row group: large enough for a scan to read long runs, small
/// enough to bound a writer's memory (it holds a row group's encoded
/// columns: about 16 bytes a span, docs/PERFORMANCE.md).
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// Why an export failed.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The Parquet writer refused the data.
    #[error("parquet: {0}")]
    Parquet(#[from] parquet::errors::ParquetError),
    /// A batch did not fit its schema (a bug).
    #[error("arrow: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
}

/// The host the dumps were taken on, when given (dumps do not record it).
#[derive(Clone, Copy, Debug)]
pub struct Host<'h>(pub Option<&'h str>);

/// The columns every table's rows of one dump share.
pub struct DumpColumns {
    dump: Arc<StringArray>,
    host: Arc<StringArray>,
    program: Arc<StringArray>,
    build_id: Arc<StringArray>,
    pid: u32,
}

impl DumpColumns {
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
        DumpColumns {
            dump: Arc::new(StringArray::from(vec![name])),
            host: Arc::new(StringArray::from(vec![host.0])),
            program: Arc::new(StringArray::from(vec![program])),
            build_id: Arc::new(StringArray::from(vec![build_id])),
            pid: trace.process.pid,
        }
    }

    /// The shared columns for `n` rows: each a dictionary of one value.
    fn columns(&self, n: usize) -> Vec<ArrayRef> {
        let one = |values: &Arc<StringArray>| -> ArrayRef {
            let keys: Int32Array = if values.is_null(0) { vec![None; n].into() } else { vec![0; n].into() };
            Arc::new(DictionaryArray::<Int32Type>::new(keys, values.clone()))
        };
        vec![
            one(&self.dump),
            one(&self.host),
            one(&self.program),
            one(&self.build_id),
            Arc::new(UInt32Array::from(vec![self.pid; n])),
        ]
    }
}

/// One writer's part of each table: `DIR/spans/part-N.parquet`,
/// `DIR/functions/part-N.parquet`, `DIR/dumps/part-N.parquet`, each written
/// beside its name and renamed into place by [`finish`](Self::finish).
pub struct Parts {
    spans: Table,
    functions: Table,
    dumps: Table,
}

struct Table {
    path: PathBuf,
    writer: ArrowWriter<AtomicFile>,
}

impl Table {
    fn new(dir: &Path, table: &str, part: usize, schema: arrow_schema::SchemaRef) -> Result<Table, ExportError> {
        let dir = dir.join(table);
        std::fs::create_dir_all(&dir).map_err(|source| ExportError::Io { path: dir.clone(), source })?;
        let path = dir.join(format!("part-{part}.parquet"));
        let file = AtomicFile::create(&path).map_err(|source| ExportError::Io { path: path.clone(), source })?;
        let mut props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_size(ROW_GROUP_ROWS)
            .set_key_value_metadata(Some(vec![
                KeyValue::new("ringtrace.schema_version".into(), schema::SCHEMA_VERSION.to_string()),
                KeyValue::new("ringtrace.table".into(), table.to_string()),
                KeyValue::new("ringtrace.producer".into(), format!("rtconv {}", env!("CARGO_PKG_VERSION"))),
            ]));
        // Columns of distinct values: a dictionary would only be thrown away.
        for column in ["span_id", "parent_span_id", "start_ns", "duration_ns", "self_ns"] {
            props = props.set_column_dictionary_enabled(ColumnPath::from(column), false);
        }
        let writer = ArrowWriter::try_new(file, schema, Some(props.build()))?;
        Ok(Table { path, writer })
    }

    fn finish(self) -> Result<(), ExportError> {
        let path = self.path;
        let file = self.writer.into_inner()?;
        file.commit().map_err(|source| ExportError::Io { path, source })
    }
}

impl Parts {
    /// Part `part` of the three tables under `dir` (created if needed).
    pub fn new(dir: &Path, part: usize) -> Result<Parts, ExportError> {
        Ok(Parts {
            spans: Table::new(dir, "spans", part, schema::spans())?,
            functions: Table::new(dir, "functions", part, schema::functions())?,
            dumps: Table::new(dir, "dumps", part, schema::dumps())?,
        })
    }

    /// Adds one dump: its spans, its functions' `rtconv stats` figures, its
    /// row of metadata. Returns what its spans had wrong.
    pub fn dump(&mut self, tl: &Timeline<'_>, name: &str, host: Host<'_>) -> Result<Anomalies, ExportError> {
        let dump = DumpColumns::new(tl, name, host);
        let spans = &mut self.spans.writer;
        let found = spans::write(tl, &dump, &mut |batch| Ok(spans.write(&batch)?))?;
        self.functions.writer.write(&functions(tl, &dump)?)?;
        self.dumps.writer.write(&dump_row(tl, &dump, &found)?)?;
        Ok(found)
    }

    /// Writes the files' footers and puts them in place.
    pub fn finish(self) -> Result<(), ExportError> {
        self.spans.finish()?;
        self.functions.finish()?;
        self.dumps.finish()
    }
}

/// The `functions` rows of a dump: `rtconv stats`' figures, per function name.
pub fn functions(tl: &Timeline<'_>, dump: &DumpColumns) -> Result<RecordBatch, ExportError> {
    let (totals, _) = crate::stats::totals(tl, false, false);
    let mut rows: Vec<crate::stats::Row> =
        totals.functions.into_iter().map(|(name, stats)| stats.row(name, totals.total_ns)).collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    let column =
        |f: fn(&crate::stats::Row) -> u64| -> ArrayRef { Arc::new(rows.iter().map(f).collect::<UInt64Array>()) };
    let names: StringArray = rows.iter().map(|r| Some(r.name.as_str())).collect();
    let mut columns = dump.columns(rows.len());
    columns.push(Arc::new(dictionary(names)));
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
    Ok(RecordBatch::try_new(schema::functions(), columns)?)
}

/// Distinct strings as a dictionary array (one key per value: the function names of a dump).
fn dictionary(values: StringArray) -> DictionaryArray<Int32Type> {
    let keys: Int32Array = (0..values.len() as i32).map(Some).collect();
    DictionaryArray::new(keys, Arc::new(values))
}

/// The `dumps` row of a dump.
pub fn dump_row(tl: &Timeline<'_>, dump: &DumpColumns, found: &Anomalies) -> Result<RecordBatch, ExportError> {
    let trace = tl.trace;
    let losses = trace.losses();
    let start = i64::try_from(tl.timebase.realtime_ns(i128::from(tl.origin_ns))).ok();
    let named_by: std::collections::BTreeMap<&str, usize> =
        tl.names.counts().into_iter().map(|(source, keys)| (source.name(), keys)).collect();
    let named = named_by.values().sum::<usize>() as u64;
    let spans: u64 = trace.threads.iter().map(|t| t.span_count()).sum();
    let mut columns = dump.columns(1);
    columns.extend([
        Arc::new(StringArray::from(vec![trace.process.producer.as_str()])) as ArrayRef,
        Arc::new(StringArray::from(vec![trace.process.reason.map(|r| r.label())])),
        Arc::new(Int64Array::from(vec![start])),
        Arc::new(Float64Array::from(vec![tl.timebase.hz()])),
        Arc::new(UInt32Array::from(vec![u32::try_from(trace.threads.len()).unwrap_or(u32::MAX)])),
        Arc::new(UInt64Array::from(vec![spans])),
        Arc::new(UInt64Array::from(vec![losses.overwritten])),
        Arc::new(UInt64Array::from(vec![losses.dropped])),
        Arc::new(UInt64Array::from(vec![found.clamped])),
        Arc::new(UInt64Array::from(vec![found.filtered.left_out()])),
        Arc::new(UInt64Array::from(vec![tl.keys.len() as u64])),
        Arc::new(UInt64Array::from(vec![named])),
        Arc::new(StringArray::from(vec![serde_json::to_string(&named_by).unwrap_or_default()])),
    ]);
    Ok(RecordBatch::try_new(schema::dumps(), columns)?)
}
