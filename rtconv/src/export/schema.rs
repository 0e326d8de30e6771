//! The four tables' columns, as formats/PARQUET.md describes them.

use super::columns::{Field, Kind};

/// The version of the tables' layout, in every file's key-value metadata
/// (`ringtrace.schema_version`): raised when a column changes meaning or goes.
pub const SCHEMA_VERSION: u32 = 1;

/// What identifies a dump's rows in every table: the dump, its host, program and build.
const DUMP: [Field; 5] = [
    Field::new("dump", Kind::Words),
    Field::nullable("host", Kind::Words),
    Field::new("program", Kind::Words),
    Field::nullable("build_id", Kind::Words),
    Field::new("pid", Kind::U32),
];

/// One row per span.
pub fn spans() -> Vec<Field> {
    [
        &DUMP[..],
        &[
            Field::new("tid", Kind::U64),
            Field::new("thread_name", Kind::Words),
            Field::new("function", Kind::Words),
            Field::nullable("file", Kind::Words),
            Field::nullable("line", Kind::U32),
            Field::new("depth", Kind::U32),
            Field::new("span_id", Kind::U64),
            Field::nullable("parent_span_id", Kind::U64),
            Field::new("start_ns", Kind::I64),
            Field::new("duration_ns", Kind::I64),
            Field::new("self_ns", Kind::I64),
            Field::new("recursive", Kind::Bool),
            Field::new("open", Kind::Bool),
            Field::new("unwound", Kind::Bool),
            Field::new("clamped", Kind::Bool),
            Field::new("missing_children", Kind::Bool),
        ],
    ]
    .concat()
}

/// One row per dump and function: the figures of `rtconv stats`.
pub fn functions() -> Vec<Field> {
    [
        &DUMP[..],
        &[
            Field::new("function", Kind::Words),
            Field::new("calls", Kind::U64),
            Field::new("total_ns", Kind::U64),
            Field::new("self_ns", Kind::U64),
            Field::new("min_ns", Kind::U64),
            Field::new("p50_ns", Kind::U64),
            Field::new("p90_ns", Kind::U64),
            Field::new("p99_ns", Kind::U64),
            Field::new("max_ns", Kind::U64),
        ],
    ]
    .concat()
}

/// One row per dump, function and duration bucket: how many of the function's calls in the dump
/// lasted that long (`stats`' histogram: exact below 2048 ns, each bucket at its highest value).
pub fn durations() -> Vec<Field> {
    [
        &DUMP[..],
        &[Field::new("function", Kind::Words), Field::new("duration_ns", Kind::U64), Field::new("calls", Kind::U64)],
    ]
    .concat()
}

/// One row per dump: where it came from, its clock, what it lost, how its keys were named.
pub fn dumps() -> Vec<Field> {
    [
        &DUMP[..],
        &[
            Field::new("producer", Kind::Text),
            Field::nullable("dump_reason", Kind::Text),
            Field::nullable("start_realtime_ns", Kind::I64),
            Field::new("counter_hz", Kind::F64),
            Field::new("threads", Kind::U32),
            Field::new("spans", Kind::U64),
            Field::new("spans_overwritten", Kind::U64),
            Field::new("spans_dropped", Kind::U64),
            Field::new("spans_clamped", Kind::U64),
            Field::new("spans_filtered_out", Kind::U64),
            Field::new("keys", Kind::U64),
            Field::new("keys_named", Kind::U64),
            Field::new("named_by", Kind::Text),
        ],
    ]
    .concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_starts_with_the_dump_columns_and_names_each_column_once() {
        for table in [spans(), functions(), durations(), dumps()] {
            let names: Vec<&str> = table.iter().map(|f| f.name).collect();
            assert_eq!(names[..5], ["dump", "host", "program", "build_id", "pid"]);
            let mut unique = names.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), names.len(), "{names:?}");
            assert!(names.iter().all(|n| !n.is_empty()), "{names:?}");
        }
    }
}
