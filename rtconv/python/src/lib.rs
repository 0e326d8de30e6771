//! The `ringtrace` Python package's native part: a dump's bytes in, one of
//! `rtconv export`'s tables out, as an Arrow IPC stream that pyarrow reads
//! without copying (`python/ringtrace/__init__.py` wraps it).
//!
//! Design constraints: the same code as the CLI (rtconv's loader, naming
//! backends and `export` tables), so a table here is the table `rtconv
//! export` writes for the same dump; the GIL is released while a dump is
//! decoded, so threads (and Spark's Python workers) run side by side; a
//! dump that cannot be read raises `ValueError` with rtconv's one-line
//! message, and what a salvaged dump lost comes back as warnings.
//!
//! ```text
//! >>> import ringtrace
//! >>> d = ringtrace.open("trace.rtd")
//! >>> d.functions().to_pandas()
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::types::{Float64Type, Int32Type, Int64Type, UInt64Type};
use arrow_array::{ArrayRef, BooleanArray, DictionaryArray, PrimitiveArray, RecordBatch, StringArray, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rtconv::convert;
use rtconv::export::columns::Batch;
use rtconv::export::columns::{Column, Field, Kind, Values};
use rtconv::export::{DumpColumns, Host, dump_row, functions_and_durations, schema, spans};
use rtconv::model::{Anomalies, Filter, Source, Timeline};
use rtconv::symbolize;

/// Which table to make.
#[derive(Clone, Copy)]
enum Table {
    Spans,
    Functions,
    Durations,
    Dumps,
}

impl Table {
    fn named(name: &str) -> PyResult<Table> {
        Ok(match name {
            "spans" => Table::Spans,
            "functions" => Table::Functions,
            "durations" => Table::Durations,
            "dumps" => Table::Dumps,
            other => {
                return Err(PyValueError::new_err(format!("no table {other:?}: spans, functions, durations or dumps")));
            }
        })
    }
}

/// Tables of the dump in `data` (named `name` in messages and in the
/// tables' `dump` column), each as an Arrow IPC stream, from one decode, and
/// the diagnostics of reading it. `symbolizer`: backends in order (`packed`,
/// `sites`, `dwarf`, `symtab`, `dladdr`), else the automatic order.
#[pyfunction]
#[pyo3(signature = (data, name, tables, host=None, sym_dirs=Vec::new(), symbolizer=None, demangle=true, symbol_index=true))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments
fn tables<'py>(
    py: Python<'py>,
    data: &[u8],
    name: &str,
    tables: Vec<String>,
    host: Option<&str>,
    sym_dirs: Vec<PathBuf>,
    symbolizer: Option<Vec<String>>,
    demangle: bool,
    symbol_index: bool,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Vec<String>)> {
    let which = tables.iter().map(|t| Table::named(t)).collect::<PyResult<Vec<_>>>()?;
    let mut opts = symbolize::Options::default();
    opts.search.sym_dirs = sym_dirs;
    opts.search.debuginfod_caches = symbolize::debuginfod_caches();
    opts.demangle = demangle;
    if symbol_index {
        opts.index = symbolize::index_user_root();
    }
    if let Some(order) = symbolizer {
        opts.order = Some(order.iter().map(|s| backend(s)).collect::<PyResult<_>>()?);
    }
    let made = py.detach(|| ipc(data, name, &which, host, &opts));
    let (streams, diagnostics) = made.map_err(PyValueError::new_err)?;
    Ok((streams.iter().map(|s| PyBytes::new(py, s)).collect(), diagnostics))
}

/// A backend by its name; `addr2line` is not one here (it needs a program to run).
fn backend(name: &str) -> PyResult<Source> {
    Source::from_name(name)
        .filter(|&s| s != Source::Addr2line)
        .ok_or_else(|| PyValueError::new_err(format!("no symbolizer {name:?}: packed, sites, dwarf, symtab or dladdr")))
}

/// The tables as IPC streams, with the reading's diagnostics (one line each).
fn ipc(
    data: &[u8],
    name: &str,
    which: &[Table],
    host: Option<&str>,
    opts: &symbolize::Options,
) -> Result<(Vec<Vec<u8>>, Vec<String>), String> {
    let cache = symbolize::Cache::default();
    let filter = Filter::default();
    let input = convert::Input::new(Path::new(name), data, opts, &filter, &cache);
    let written = convert::with_timeline(input, false, |tl| {
        let (mut found, mut figures) = (Anomalies::default(), None);
        let streams = which
            .iter()
            .map(|&w| {
                stream(tl, name, w, host, &mut figures).map(|(bytes, f)| {
                    // What the spans had wrong, found by the tables that walk them (spans, dumps).
                    if f != Anomalies::default() {
                        found = f;
                    }
                    bytes
                })
            })
            .collect::<Result<Vec<_>, _>>();
        (streams, found)
    });
    let (streams, report) = written.map_err(|e| e.to_string())?;
    let streams = streams.map_err(|e| format!("{name}: {e}"))?;
    Ok((streams, report.diagnostics.iter().map(ToString::to_string).collect()))
}

/// The `functions` and `durations` rows of one dump, made by one statistics pass and each taken
/// once, when either table is asked for.
type Figures = Option<(Option<Batch>, Option<Batch>)>;

fn stream(
    tl: &Timeline<'_>,
    name: &str,
    which: Table,
    host: Option<&str>,
    figures: &mut Figures,
) -> Result<(Vec<u8>, Anomalies), ArrowError> {
    let dump = DumpColumns::new(tl, name, Host(host));
    let fields = match which {
        Table::Spans => schema::spans(),
        Table::Functions => schema::functions(),
        Table::Durations => schema::durations(),
        Table::Dumps => schema::dumps(),
    };
    let schema = Arc::new(schema_of(&fields));
    let mut out = Vec::new();
    let mut writer = arrow_ipc::writer::StreamWriter::try_new(&mut out, &schema)?;
    let mut write = |batch: Vec<Column>| -> Result<(), ArrowError> {
        let columns = batch.into_iter().map(array).collect::<Result<Vec<_>, _>>()?;
        writer.write(&RecordBatch::try_new(schema.clone(), columns)?)
    };
    let found = match which {
        Table::Spans => spans::write(tl, &dump, &mut |batch: &mut Batch| write(std::mem::take(batch)))?,
        Table::Functions | Table::Durations => {
            let (functions, durations) = figures.get_or_insert_with(|| {
                let (functions, durations) = functions_and_durations(tl, &dump);
                (Some(functions), Some(durations))
            });
            let rows = if matches!(which, Table::Functions) { functions.take() } else { durations.take() };
            // Asked twice in one call: made again.
            let rows = rows.unwrap_or_else(|| {
                let made = functions_and_durations(tl, &dump);
                if matches!(which, Table::Functions) { made.0 } else { made.1 }
            });
            write(rows)?;
            Anomalies::default()
        }
        Table::Dumps => {
            // What the spans had wrong (spans cut at their parent's end) takes a pass over them.
            let mut threads = tl.threads();
            while let Some(mut t) = threads.next() {
                while t.next_batch().is_some() {}
            }
            let found = threads.anomalies();
            write(dump_row(tl, &dump, &found))?;
            found
        }
    };
    writer.finish()?;
    drop(writer);
    Ok((out, found))
}

/// A table's fields as an Arrow schema: repeated strings as `dictionary<int32, utf8>`.
fn schema_of(fields: &[Field]) -> Schema {
    let fields: Vec<arrow_schema::Field> = fields
        .iter()
        .map(|f| {
            let kind = match f.kind {
                Kind::Words => DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                Kind::Text => DataType::Utf8,
                Kind::U32 => DataType::UInt32,
                Kind::U64 => DataType::UInt64,
                Kind::I64 => DataType::Int64,
                Kind::F64 => DataType::Float64,
                Kind::Bool => DataType::Boolean,
            };
            arrow_schema::Field::new(f.name, kind, f.nullable)
        })
        .collect();
    Schema::new(fields)
}

/// A column as an Arrow array (its numbers moved into it, not copied).
fn array(column: Column) -> Result<ArrayRef, ArrowError> {
    let nulls = column.valid.map(NullBuffer::from);
    Ok(match column.values {
        Values::Words { words, keys } => {
            let keys: Vec<i32> = keys.into_iter().map(|k| k as i32).collect();
            let keys = PrimitiveArray::<Int32Type>::new(ScalarBuffer::from(keys), nulls);
            let words = StringArray::from_iter_values(words.iter());
            Arc::new(DictionaryArray::try_new(keys, Arc::new(words))?)
        }
        Values::Text(v) => {
            let nulls = nulls.as_ref();
            Arc::new(
                v.iter()
                    .enumerate()
                    .map(|(i, s)| nulls.is_none_or(|n| n.is_valid(i)).then_some(s))
                    .collect::<StringArray>(),
            )
        }
        Values::U32(v) => Arc::new(UInt32Array::new(ScalarBuffer::from(v), nulls)),
        Values::U64(v) => Arc::new(PrimitiveArray::<UInt64Type>::new(ScalarBuffer::from(v), nulls)),
        Values::I64(v) => Arc::new(PrimitiveArray::<Int64Type>::new(ScalarBuffer::from(v), nulls)),
        Values::F64(v) => Arc::new(PrimitiveArray::<Float64Type>::new(ScalarBuffer::from(v), nulls)),
        Values::Bool(v) => Arc::new(BooleanArray::new(v.into(), nulls)),
    })
}

#[pymodule]
#[pyo3(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(tables, m)?)?;
    m.add("SCHEMA_VERSION", schema::SCHEMA_VERSION)?;
    Ok(())
}
