//! The tables written as Apache Parquet part files, through the `parquet`
//! crate's file writer (no Arrow in between).
//!
//! A writer encodes a data page of each column when [`PAGE_ROWS`] rows have
//! come (straight from the batch where one holds them, else gathered across
//! batches, dumps after dumps), and writes a row group of its columns' pages
//! when it holds [`ROW_GROUP_ROWS`] or is finished; the dictionaries of
//! repeated strings are merged as the dumps come. Strings that repeat,
//! integers and booleans are encoded here (`words`, `numbers`: the crate's
//! column writers took a value at a time, two thirds of an export's CPU) and
//! each column chunk appended to the row group whole; text and floating
//! point go through the crate's column writers at the row group's end.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::{Compression, Encoding, LogicalType, Repetition, Type as Physical, ZstdLevel};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::types::{ColumnDescPtr, Type};

use super::chunk::{Packing, Spare, Zstd};
use super::columns::{Batch, Column, Field, Kind, Values};
use super::numbers;
use super::words;
use super::{DumpColumns, Host, PAGE_ROWS, ROW_GROUP_ROWS, dump_row, functions_and_durations_of, schema, spans};
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
        let (mut functions, mut durations) = functions_and_durations_of(totals, &dump);
        self.functions.add(&mut functions)?;
        self.durations.add(&mut durations)?;
        self.dumps.add(&mut dump_row(tl, &dump, &found))?;
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
    /// Per field: its row group's column chunk so far, and its rows not yet in a page.
    columns: Vec<(Chunk, Pending)>,
    /// The rows of the row group not yet in a page.
    pending: usize,
    /// Rows a page ([`PAGE_ROWS`]) and a row group ([`ROW_GROUP_ROWS`]) take.
    page_rows: usize,
    group_rows: usize,
    /// The compressor of the column chunks encoded here (`words`, `numbers`).
    zstd: Zstd,
    /// Buffers of the row group's chunks written, for the next's.
    spare: Spare,
    writer: SerializedFileWriter<AtomicFile>,
}

/// A column's chunk of the row group being written.
enum Chunk {
    /// Repeated strings, a page encoded at a time.
    Words(words::Chunk),
    /// Integers and booleans, a page encoded at a time.
    Numbers(numbers::Chunk),
    /// Text and floating point numbers: their rows are gathered for the crate's column writer.
    Gathered,
}

impl Chunk {
    /// Empty chunks of the columns `writer`'s file has for `fields`, written into buffers of
    /// `spare`.
    fn empty(
        writer: &SerializedFileWriter<AtomicFile>,
        fields: &[Field],
        spare: &mut Spare,
    ) -> Result<Vec<Chunk>, ExportError> {
        let schema = writer.schema_descr();
        let table = schema.root_schema().name();
        let mut chunk = |field: &Field, descr: &ColumnDescPtr| -> Result<Chunk, ExportError> {
            let packing = packing(table, field.name);
            Ok(match field.kind {
                Kind::Words => Chunk::Words(words::Chunk::new(descr.clone(), packing, spare.take())),
                Kind::U32 | Kind::U64 | Kind::I64 | Kind::Bool => {
                    Chunk::Numbers(numbers::Chunk::new(descr.clone(), encoding(field.name), packing, spare.take())?)
                }
                Kind::Text | Kind::F64 => Chunk::Gathered,
            })
        };
        fields.iter().zip(schema.columns()).map(|(field, descr)| chunk(field, descr)).collect()
    }
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
        let mut spare = Spare::default();
        let chunks = Chunk::empty(&writer, &fields, &mut spare)?;
        let columns = chunks.into_iter().zip(&fields).map(|(chunk, field)| (chunk, Pending::new(field.kind))).collect();
        Ok(Table {
            path,
            fields,
            columns,
            pending: 0,
            page_rows: PAGE_ROWS,
            group_rows: ROW_GROUP_ROWS,
            zstd: Zstd::new(ZSTD_LEVEL)?,
            spare,
            writer,
        })
    }

    /// Adds `batch`'s rows (a column per field), encoding a page of each column when
    /// [`PAGE_ROWS`] have come and writing row groups as they fill. A page's rows come in one batch
    /// where a dump has them (its spans), and are encoded from it, whose buffers are left to be
    /// refilled.
    fn add(&mut self, batch: &mut Batch) -> Result<(), ExportError> {
        debug_assert_eq!(batch.len(), self.fields.len());
        let n = super::columns::rows(batch);
        if self.pending == 0 && n >= self.page_rows {
            for ((chunk, pending), column) in self.columns.iter_mut().zip(batch.iter()) {
                let valid = column.valid.as_deref();
                match (chunk, &column.values) {
                    (Chunk::Words(c), Values::Words { words, keys }) => {
                        c.page_of_batch(&mut self.zstd, words, keys, valid)?
                    }
                    (Chunk::Numbers(c), values) => c.page_of(&mut self.zstd, values, valid)?,
                    (chunk, _) => pending.extend(column, chunk),
                }
            }
        } else {
            for ((chunk, pending), column) in self.columns.iter_mut().zip(batch.iter()) {
                pending.extend(column, chunk);
            }
            self.pending += n;
            if self.pending >= self.page_rows {
                self.page()?;
            }
        }
        if self.rows() >= self.group_rows {
            self.write_row_group()?;
        }
        Ok(())
    }

    /// The rows of the row group not yet written.
    fn rows(&self) -> usize {
        let paged = self.columns.iter().find_map(|(chunk, _)| match chunk {
            Chunk::Words(c) => Some(c.rows()),
            Chunk::Numbers(c) => Some(c.rows()),
            Chunk::Gathered => None,
        });
        paged.unwrap_or(0) + self.pending
    }

    /// Encodes the rows not yet in a page as a page of each column (but those gathered for the
    /// crate's column writers).
    fn page(&mut self) -> Result<(), ExportError> {
        for (chunk, pending) in &mut self.columns {
            let valid = pending.valid.as_deref();
            match (chunk, &pending.values) {
                (Chunk::Words(c), Gathered::Keys(keys)) => c.page(&mut self.zstd, keys, valid)?,
                (Chunk::Numbers(c), Gathered::Plain(Some(values))) => c.page_of(&mut self.zstd, values, valid)?,
                _ => continue,
            }
            *pending = Pending::new(pending.kind);
        }
        self.pending = 0;
        Ok(())
    }

    fn write_row_group(&mut self) -> Result<(), ExportError> {
        if self.pending > 0 {
            self.page()?;
        }
        let mut group = self.writer.next_row_group()?;
        for ((chunk, pending), field) in self.columns.iter_mut().zip(&self.fields) {
            let chunk = std::mem::replace(chunk, Chunk::Gathered);
            let pending = std::mem::replace(pending, Pending::new(field.kind));
            let (bytes, close, data) = match chunk {
                Chunk::Words(c) => c.finish(&mut self.zstd, self.spare.take())?,
                Chunk::Numbers(c) => c.finish(&mut self.zstd, self.spare.take())?,
                Chunk::Gathered => {
                    let Some(mut column) = group.next_column()? else {
                        unreachable!("the file's schema has a column per field")
                    };
                    pending.write(&mut column, field.nullable)?;
                    column.close()?;
                    continue;
                }
            };
            group.append_column(&bytes, close)?;
            self.spare.give(data);
            self.spare.give_bytes(bytes);
        }
        group.close()?;
        let chunks = Chunk::empty(&self.writer, &self.fields, &mut self.spare)?;
        for ((chunk, _), empty) in self.columns.iter_mut().zip(chunks) {
            *chunk = empty;
        }
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

/// How the pages of column `name` of `table` are compressed: the spans' durations and parents
/// not at all (zstd takes their packed bits down by a fifth to a third at most: docs/PERFORMANCE.md,
/// on the Lua trace the durations' zstd was 0.45 G of the export's 6.1 G instructions for 0.76
/// bytes a span, the parents' 0.25 G of 4.23 G and 7 % of the CPU for 0.42); their starts at zstd's
/// level 1 (level 3 took 0.19 G more of 4.47 G, 5 % of the CPU, for 0.26 bytes a span); the rest at
/// the table's level, where its search finds a loop's repeats at little cost.
fn packing(table: &str, name: &str) -> Packing {
    match (table, name) {
        ("spans", "duration_ns" | "self_ns" | "parent_span_id") => Packing::None,
        ("spans", "start_ns") => Packing::FastZstd,
        _ => Packing::Zstd,
    }
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

/// A column's rows not yet in a page (or, for text and floating point, not yet written), gathered
/// across batches.
struct Pending {
    kind: Kind,
    values: Gathered,
    /// Per row: whether it has a value; `None` while every row gathered so far has one.
    valid: Option<Vec<bool>>,
    rows: usize,
}

/// The values of a [`Pending`] column.
enum Gathered {
    /// Strings as keys into their chunk's words ([`words::Chunk::keys_of`]).
    Keys(Vec<u32>),
    /// Any other kind, as the batches had it.
    Plain(Option<Values>),
}

impl Pending {
    fn new(kind: Kind) -> Pending {
        let values = match kind {
            Kind::Words => Gathered::Keys(Vec::new()),
            _ => Gathered::Plain(None),
        };
        Pending { kind, values, valid: None, rows: 0 }
    }

    /// Adds `column`'s rows; repeated strings as keys into `chunk`'s words.
    fn extend(&mut self, column: &Column, chunk: &mut Chunk) {
        let n = column.len();
        match (&mut self.valid, &column.valid) {
            (None, None) => {}
            (None, Some(batch)) => self.valid = Some([&vec![true; self.rows][..], batch].concat()),
            (Some(valid), Some(batch)) => valid.extend_from_slice(batch),
            (Some(valid), None) => valid.resize(self.rows + n, true),
        }
        self.rows += n;
        match (&mut self.values, &column.values, chunk) {
            (Gathered::Keys(keys), Values::Words { words, keys: batch }, Chunk::Words(chunk)) => {
                chunk.append_keys(words, batch, keys)
            }
            (Gathered::Plain(values), batch, _) => match (values.as_mut(), batch) {
                (None, batch) => *values = Some(batch.clone()),
                (Some(Values::Text(a)), Values::Text(b)) => a.extend_from_slice(b),
                (Some(Values::U32(a)), Values::U32(b)) => a.extend_from_slice(b),
                (Some(Values::U64(a)), Values::U64(b)) => a.extend_from_slice(b),
                (Some(Values::I64(a)), Values::I64(b)) => a.extend_from_slice(b),
                (Some(Values::F64(a)), Values::F64(b)) => a.extend_from_slice(b),
                (Some(Values::Bool(a)), Values::Bool(b)) => a.extend_from_slice(b),
                (Some(_), _) => unreachable!("a table's batches have its fields' kinds"),
            },
            _ => unreachable!("a table's batches have its fields' kinds"),
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
            Gathered::Keys(_) => unreachable!("words are written as chunks of their own"),
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

#[cfg(test)]
mod tests {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field as Cell;

    use super::*;
    use crate::export::columns::rows;
    use crate::model::test_dumps::{TestRing, nested, records, with_rings};

    /// Each row of `batch` as its cells' text, `null` where it has no value.
    fn texts(batch: &[Column]) -> Vec<String> {
        (0..rows(batch)).map(|i| batch.iter().map(|c| c.text(i)).collect::<Vec<_>>().join(" ")).collect()
    }

    #[test]
    fn pages_from_batches_and_from_dumps_gathered_read_back_as_the_rows_handed_in() {
        let dir = std::env::temp_dir().join(format!("rtconv-pages-{}", std::process::id()));
        let mut table = Table::new(&dir, "spans", 0, schema::spans()).unwrap();
        // Pages of 100 rows, row groups of 450: a small dump's rows gathered for a page with the
        // next dump's, batches of a page encoded straight from the batch, a batch's words mapped to
        // a row group's dictionary that an earlier dump's words began, row groups of whole pages.
        (table.page_rows, table.group_rows) = (100, 450);
        let mut handed = Vec::new();
        for (seed, spans, first_key) in [(3, 30, 0), (4, 1_000, 2), (5, 700, 0)] {
            let mut spans = nested(seed, spans, false);
            for (i, s) in spans.iter_mut().enumerate() {
                s.key_index = first_key + (i % 5) as u32;
            }
            let ring = TestRing { records: records(&spans), written: spans.len() as u64, dropped: 0, open: Vec::new() };
            with_rings(&[ring], 1 << 40, |tl| {
                let dump = DumpColumns::new(tl, &format!("dump-{seed}"), Host(None));
                spans::walk::<ExportError>(tl, &dump, 100, &mut |batch| {
                    handed.extend(texts(batch));
                    table.add(batch)
                })
                .unwrap();
            });
        }
        table.finish().unwrap();
        let path = dir.join("spans/part-0.parquet");
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = reader.metadata().row_groups().iter().map(|g| g.num_rows()).collect();
        // Pages: the first dump's 30 rows with the second's first batch (130), then the batches;
        // a row group closes at the page that takes it to 450 rows or more.
        assert_eq!(groups, [530, 500, 500, 200]);
        let read: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                let cell = |f: &Cell| match f {
                    Cell::Str(s) => s.clone(),
                    Cell::Null => "null".to_owned(),
                    other => other.to_string(),
                };
                row.get_column_iter().map(|(_, f)| cell(f)).collect::<Vec<_>>().join(" ")
            })
            .collect();
        assert_eq!(read.len(), 1_730);
        assert_eq!(read, handed);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
