//! The tables written as Apache Parquet part files, through the `parquet`
//! crate's file writer (no Arrow in between).
//!
//! A writer gathers a row group's rows as columns, dumps after dumps, and
//! encodes them when it holds [`ROW_GROUP_ROWS`] or is finished; the
//! dictionaries of repeated strings are merged as the dumps come. Strings
//! that repeat, integers and booleans are encoded here, a column chunk at a
//! time (`words`, `numbers`: the crate's column writers took a value at a
//! time, two thirds of an export's CPU), and appended to the row group whole;
//! text and floating point go through the crate's column writers.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::{ColumnDescPtr, Type};

use super::chunk::Zstd;
use super::columns::{Batch, Column, Field, Kind, Values};
use super::numbers::{self, Numbers};
use super::words;
use super::{DumpColumns, Host, ROW_GROUP_ROWS, dump_row, functions_and_durations_of, schema, spans};
use crate::io::AtomicFile;
use crate::model::{Anomalies, Timeline};

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
}

/// One writer's part of each table: `DIR/spans/part-N.parquet`,
/// `DIR/functions/part-N.parquet`, `DIR/durations/part-N.parquet`, `DIR/dumps/part-N.parquet`, each written
/// beside its name and renamed into place by [`finish`](Self::finish).
///
/// ```no_run
/// use std::path::Path;
/// use rtconv::export::{Host, Parts};
/// use rtconv::{convert, model, symbolize};
///
/// let path = Path::new("trace.rtd");
/// let bytes = model::open(path)?;
/// let mut parts = Parts::new(Path::new("tables"), 0)?; // tables/spans/part-0.parquet, ...
/// let opts = symbolize::Options::default();
/// let (cache, filter) = (symbolize::Cache::default(), model::Filter::default());
/// let input = convert::Input::new(path, &bytes, &opts, &filter, &cache);
/// let (written, _report) = convert::with_timeline(input, false, |tl| {
///     match parts.dump(tl, "trace.rtd", Host(Some("web-17"))) {
///         Ok(found) => (Ok(()), found),
///         Err(e) => (Err(e), model::Anomalies::default()),
///     }
/// })?;
/// written?;
/// parts.finish()?; // footers written, files renamed into place
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Parts {
    spans: Table,
    functions: Table,
    durations: Table,
    dumps: Table,
}

impl Parts {
    /// Part `part` of the four tables under `dir` (created if needed).
    pub fn new(dir: &Path, part: usize) -> Result<Parts, ExportError> {
        Ok(Parts {
            spans: Table::new(dir, "spans", part, schema::spans())?,
            functions: Table::new(dir, "functions", part, schema::functions())?,
            durations: Table::new(dir, "durations", part, schema::durations())?,
            dumps: Table::new(dir, "dumps", part, schema::dumps())?,
        })
    }

    /// Adds one dump: its spans, its functions' `rtconv stats` figures and
    /// duration histograms, its row of metadata. Returns what its spans had wrong.
    pub fn dump(&mut self, tl: &Timeline<'_>, name: &str, host: Host<'_>) -> Result<Anomalies, ExportError> {
        let dump = DumpColumns::new(tl, name, host);
        let (found, totals) = spans::write_and_total(tl, &dump, &mut |batch| self.spans.add(batch))?;
        let (functions, durations) = functions_and_durations_of(totals, &dump);
        self.functions.add(functions)?;
        self.durations.add(durations)?;
        self.dumps.add(dump_row(tl, &dump, &found))?;
        Ok(found)
    }

    /// Writes the files' last row groups and footers and puts them in place.
    pub fn finish(self) -> Result<(), ExportError> {
        self.spans.finish()?;
        self.functions.finish()?;
        self.durations.finish()?;
        self.dumps.finish()
    }
}

/// The zstd level of every column.
const ZSTD_LEVEL: i32 = 3;

/// One part file of one table.
struct Table {
    path: PathBuf,
    fields: Vec<Field>,
    /// Per field: whether its pages are compressed ([`compressed`]).
    compressed: Vec<bool>,
    /// Per field: its column in the file's schema.
    columns: Vec<ColumnDescPtr>,
    /// The compressor of the column chunks encoded here (`words`, `numbers`).
    zstd: Zstd,
    writer: SerializedFileWriter<AtomicFile>,
    /// The rows of the row group not yet written, a column per field.
    pending: Vec<Pending>,
}

impl Table {
    fn new(dir: &Path, table: &str, part: usize, fields: Vec<Field>) -> Result<Table, ExportError> {
        let dir = dir.join(table);
        std::fs::create_dir_all(&dir).map_err(|source| ExportError::Io { path: dir.clone(), source })?;
        let path = dir.join(format!("part-{part}.parquet"));
        let file = AtomicFile::create(&path).map_err(|source| ExportError::Io { path: path.clone(), source })?;
        // The crate's column writers write only the text and floating-point columns (the
        // `dumps` table's few); the rest are encoded here (`chunk`).
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(ZSTD_LEVEL)?))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("ringtrace.schema_version".into(), schema::SCHEMA_VERSION.to_string()),
                KeyValue::new("ringtrace.table".into(), table.to_string()),
                KeyValue::new("ringtrace.producer".into(), format!("rtconv {}", env!("CARGO_PKG_VERSION"))),
            ]));
        let writer = SerializedFileWriter::new(file, message(table, &fields)?, Arc::new(props.build()))?;
        let columns = writer.schema_descr().columns().to_vec();
        let pending = fields.iter().map(|f| Pending::new(f.kind)).collect();
        let compressed = fields.iter().map(|f| compressed(table, f.name)).collect();
        Ok(Table { path, fields, compressed, columns, zstd: Zstd::new(ZSTD_LEVEL)?, writer, pending })
    }

    /// Adds `batch`'s rows (a column per field), writing row groups as they fill.
    fn add(&mut self, batch: Batch) -> Result<(), ExportError> {
        debug_assert_eq!(batch.len(), self.fields.len());
        for (pending, column) in self.pending.iter_mut().zip(batch) {
            pending.extend(column);
        }
        if self.rows() >= ROW_GROUP_ROWS {
            self.write_row_group()?;
        }
        Ok(())
    }

    /// The rows of the row group not yet written.
    fn rows(&self) -> usize {
        self.pending.first().map_or(0, |p| p.rows)
    }

    fn write_row_group(&mut self) -> Result<(), ExportError> {
        let mut group = self.writer.next_row_group()?;
        let columns = self.pending.iter_mut().zip(&self.fields).zip(&self.columns).zip(&self.compressed);
        for (((pending, field), descr), &compressed) in columns {
            let pending = std::mem::replace(pending, Pending::new(field.kind));
            let valid = pending.valid.as_deref();
            let chunk = match &pending.values {
                Gathered::Words { words, keys, .. } => {
                    Some(words::chunk(descr.clone(), words, keys, valid, &mut self.zstd))
                }
                Gathered::Plain(Some(values)) => Numbers::of(values).map(|values| {
                    let zstd = compressed.then_some(&mut self.zstd);
                    numbers::chunk(descr.clone(), values, valid, encoding(field.name), zstd)
                }),
                Gathered::Plain(None) => None,
            };
            let Some(chunk) = chunk else {
                let Some(mut column) = group.next_column()? else {
                    unreachable!("the file's schema has a column per field")
                };
                pending.write(&mut column, field.nullable)?;
                column.close()?;
                continue;
            };
            let (bytes, close) = chunk?;
            group.append_column(&bytes, close)?;
        }
        group.close()?;
        Ok(())
    }

    fn finish(mut self) -> Result<(), ExportError> {
        if self.rows() > 0 {
            self.write_row_group()?;
        }
        let path = self.path;
        let file = self.writer.into_inner()?;
        file.commit().map_err(|source| ExportError::Io { path, source })
    }
}

/// How the integers of column `name` are encoded. Columns of distinct values take no dictionary
/// (it would only be thrown away), and nor do the others here: in start order ids, starts and
/// parents grow by small steps, which delta encoding stores in a few bits; durations are small
/// numbers, which it packs in their few significant bits, so a scan decompresses a fifth of their
/// plain bytes (plain, zstd finds a loop's repeats and they take 40 % less, but DuckDB's sums over
/// them took 3× as long: docs/PERFORMANCE.md); process, thread, depth and line change seldom or by
/// little. (Parents plain took 0.3 bytes a span less after zstd, for twice the zstd time.)
/// The small tables' figures are plain.
fn encoding(name: &str) -> Encoding {
    match name {
        "span_id" | "parent_span_id" | "start_ns" | "duration_ns" | "self_ns" | "pid" | "tid" | "depth" | "line" => {
            Encoding::DELTA_BINARY_PACKED
        }
        _ => Encoding::PLAIN,
    }
}

/// Whether the pages of column `name` of `table` are compressed: all but the spans' durations',
/// whose packed bits zstd takes down by a third at most (docs/PERFORMANCE.md: on the Lua trace it
/// spent 0.45 G of the export's 6.1 G instructions on them for 0.76 bytes a span).
fn compressed(table: &str, name: &str) -> bool {
    !(table == "spans" && matches!(name, "duration_ns" | "self_ns"))
}

/// The Parquet schema of a table's fields: strings as UTF-8 byte arrays,
/// unsigned integers annotated as such (engines read them as unsigned).
fn message(table: &str, fields: &[Field]) -> Result<Arc<Type>, ExportError> {
    let columns = fields
        .iter()
        .map(|f| {
            let (physical, logical) = match f.kind {
                Kind::Words | Kind::Text => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
                Kind::U32 => (Physical::INT32, Some(LogicalType::Integer { bit_width: 32, is_signed: false })),
                Kind::U64 => (Physical::INT64, Some(LogicalType::Integer { bit_width: 64, is_signed: false })),
                Kind::I64 => (Physical::INT64, None),
                Kind::F64 => (Physical::DOUBLE, None),
                Kind::Bool => (Physical::BOOLEAN, None),
            };
            let repetition = if f.nullable { Repetition::OPTIONAL } else { Repetition::REQUIRED };
            let column =
                Type::primitive_type_builder(f.name, physical).with_repetition(repetition).with_logical_type(logical);
            Ok(Arc::new(column.build()?))
        })
        .collect::<Result<Vec<_>, ExportError>>()?;
    Ok(Arc::new(Type::group_type_builder(table).with_fields(columns).build()?))
}

/// A row group's rows of one column, gathered across batches.
struct Pending {
    values: Gathered,
    /// Per row: whether it has a value; `None` while every row gathered so far has one.
    valid: Option<Vec<bool>>,
    rows: usize,
}

/// The values of a [`Pending`] column.
enum Gathered {
    /// Strings as keys into the row group's own dictionary of them.
    Words {
        words: Vec<ByteArray>,
        index: HashMap<String, u32>,
        /// The last batch's words and where each went in `words`.
        last: Option<(Arc<[String]>, Vec<u32>)>,
        keys: Vec<u32>,
    },
    /// Any other kind, as the batches had it.
    Plain(Option<Values>),
}

impl Pending {
    fn new(kind: Kind) -> Pending {
        let values = match kind {
            Kind::Words => Gathered::Words { words: Vec::new(), index: HashMap::new(), last: None, keys: Vec::new() },
            _ => Gathered::Plain(None),
        };
        Pending { values, valid: None, rows: 0 }
    }

    fn extend(&mut self, column: Column) {
        let n = column.len();
        match (&mut self.valid, column.valid) {
            (None, None) => {}
            (None, Some(batch)) => self.valid = Some([vec![true; self.rows], batch].concat()),
            (Some(valid), Some(batch)) => valid.extend(batch),
            (Some(valid), None) => valid.resize(self.rows + n, true),
        }
        self.rows += n;
        match (&mut self.values, column.values) {
            (Gathered::Words { words, index, last, keys }, Values::Words { words: batch_words, keys: batch_keys }) => {
                // A dump's batches share their dictionaries: map each dictionary once.
                let fresh = last.as_ref().is_none_or(|(w, _)| !Arc::ptr_eq(w, &batch_words));
                if fresh {
                    let map = batch_words
                        .iter()
                        .map(|w| {
                            *index.entry(w.clone()).or_insert_with(|| {
                                words.push(ByteArray::from(w.as_str()));
                                (words.len() - 1) as u32
                            })
                        })
                        .collect();
                    *last = Some((batch_words, map));
                }
                let map = last.as_ref().map_or(&[][..], |(_, m)| &m[..]);
                match map {
                    // A dump's constant columns (its name, host, build; a thread's name).
                    &[only] => keys.resize(keys.len() + n, only),
                    // A row group's first batch, whose words were the first in it.
                    _ if keys.is_empty() && map.iter().enumerate().all(|(i, &k)| k as usize == i) => {
                        *keys = batch_keys
                    }
                    _ => keys.extend(batch_keys.iter().map(|&k| map.get(k as usize).copied().unwrap_or(0))),
                }
            }
            (Gathered::Plain(values), batch) => match (values.as_mut(), batch) {
                (None, batch) => *values = Some(batch),
                (Some(Values::Text(a)), Values::Text(b)) => a.extend(b),
                (Some(Values::U32(a)), Values::U32(b)) => a.extend(b),
                (Some(Values::U64(a)), Values::U64(b)) => a.extend(b),
                (Some(Values::I64(a)), Values::I64(b)) => a.extend(b),
                (Some(Values::F64(a)), Values::F64(b)) => a.extend(b),
                (Some(Values::Bool(a)), Values::Bool(b)) => a.extend(b),
                (Some(_), _) => unreachable!("a table's batches have its fields' kinds"),
            },
            (Gathered::Words { .. }, _) => unreachable!("a table's batches have its fields' kinds"),
        }
    }

    /// Writes the rows of a column of text or floating point numbers (the others are encoded by
    /// [`words::chunk`] and [`numbers::chunk`]) through the crate's column writer: the values of
    /// the rows that have one, and (for a nullable column) a definition level per row.
    fn write(self, column: &mut SerializedColumnWriter<'_>, nullable: bool) -> Result<(), ExportError> {
        let valid = self.valid.as_deref();
        let levels: Option<Vec<i16>> = nullable.then(|| match valid {
            Some(valid) => valid.iter().map(|&v| i16::from(v)).collect(),
            None => vec![1; self.rows],
        });
        let levels = levels.as_deref();
        // Only the rows with a value: a placeholder is never written.
        fn kept<'v, T: Clone>(values: &'v [T], valid: Option<&[bool]>) -> Cow<'v, [T]> {
            match valid {
                None => Cow::Borrowed(values),
                Some(valid) => values.iter().zip(valid).filter(|(_, v)| **v).map(|(x, _)| x.clone()).collect(),
            }
        }
        match self.values {
            Gathered::Words { .. } => unreachable!("words are written as chunks of their own"),
            Gathered::Plain(None) => {}
            Gathered::Plain(Some(values)) => match values {
                Values::Text(v) => {
                    let v: Vec<ByteArray> = kept(&v, valid).iter().map(|s| ByteArray::from(s.as_str())).collect();
                    column.typed::<ByteArrayType>().write_batch(&v, levels, None)?;
                }
                Values::F64(v) => {
                    column.typed::<DoubleType>().write_batch(&kept(&v, valid), levels, None)?;
                }
                _ => unreachable!("words, integers and booleans are encoded as chunks of their own"),
            },
        }
        Ok(())
    }
}
