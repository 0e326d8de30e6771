//! The three tables' Arrow schemas, as formats/PARQUET.md describes them.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

/// The version of the tables' layout, in every file's key-value metadata
/// (`ringtrace.schema_version`): raised when a column changes meaning or goes.
pub const SCHEMA_VERSION: u32 = 1;

/// A dictionary-encoded string column (repeated strings: hosts, builds, functions).
fn words(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)), nullable)
}

/// What identifies a dump's rows in every table: the dump, its host, program and build.
fn dump_columns() -> Vec<Field> {
    vec![
        words("dump", false),
        words("host", true),
        words("program", false),
        words("build_id", true),
        Field::new("pid", DataType::UInt32, false),
    ]
}

/// One row per span.
pub fn spans() -> SchemaRef {
    let mut fields = dump_columns();
    fields.extend([
        Field::new("tid", DataType::UInt64, false),
        words("thread_name", false),
        words("function", false),
        words("file", true),
        Field::new("line", DataType::UInt32, true),
        Field::new("depth", DataType::UInt32, false),
        Field::new("span_id", DataType::UInt64, false),
        Field::new("parent_span_id", DataType::UInt64, true),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("duration_ns", DataType::Int64, false),
        Field::new("self_ns", DataType::Int64, false),
        Field::new("recursive", DataType::Boolean, false),
        Field::new("open", DataType::Boolean, false),
        Field::new("unwound", DataType::Boolean, false),
        Field::new("clamped", DataType::Boolean, false),
        Field::new("missing_children", DataType::Boolean, false),
    ]);
    Arc::new(Schema::new(fields))
}

/// One row per dump and function: the figures of `rtconv stats`.
pub fn functions() -> SchemaRef {
    let mut fields = dump_columns();
    fields.push(words("function", false));
    for name in ["calls", "total_ns", "self_ns", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"] {
        fields.push(Field::new(name, DataType::UInt64, false));
    }
    Arc::new(Schema::new(fields))
}

/// One row per dump: where it came from, its clock, what it lost, how its keys were named.
pub fn dumps() -> SchemaRef {
    let mut fields = dump_columns();
    fields.extend([
        Field::new("producer", DataType::Utf8, false),
        Field::new("dump_reason", DataType::Utf8, true),
        Field::new("start_realtime_ns", DataType::Int64, true),
        Field::new("counter_hz", DataType::Float64, false),
        Field::new("threads", DataType::UInt32, false),
        Field::new("spans", DataType::UInt64, false),
        Field::new("spans_overwritten", DataType::UInt64, false),
        Field::new("spans_dropped", DataType::UInt64, false),
        Field::new("spans_clamped", DataType::UInt64, false),
        Field::new("spans_filtered_out", DataType::UInt64, false),
        Field::new("keys", DataType::UInt64, false),
        Field::new("keys_named", DataType::UInt64, false),
        Field::new("named_by", DataType::Utf8, false),
    ]);
    Arc::new(Schema::new(fields))
}
