"""Checks `rtconv export`'s Parquet tables with DuckDB and pyarrow (tests/tests/external_tools/export.rs):

    check_export.py PARQUET_DIR STATS_JSON DUMPS

- DuckDB's per-function figures over the `spans` parts equal `rtconv stats`
  merged over the same dumps (STATS_JSON; see fleet.py);
- every span's parent is a span of the same dump and thread, one level up,
  starting no later and ending no earlier, and self = duration − children's;
- each function's percentiles from the `durations` table alone, merged over the dumps, equal
  `rtconv stats`' merged ones;
- the `dumps` table has DUMPS rows whose span (and clamped span) counts add up to the spans table's;
- every file carries the schema version and the table's name, and the repeated
  strings are dictionary-encoded; every column but the durations (`duration_ns`, `self_ns`) is
  zstd-compressed, those two not at all; `span_id`, `parent_span_id`, `start_ns` and the durations delta-encoded, and the spans of each dump come in their start order but where a span outlasts
  its batch of 262,144 (formats/PARQUET.md). (Bytes a span are measured on large traces in
  docs/PERFORMANCE.md: on these small dumps the files' own records weigh more than the spans.)
Prints `functions N spans M bytes_per_span B`.
"""

import glob
import json
import os
import sys

import duckdb
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402

out, stats_json, dumps = sys.argv[1], open(sys.argv[2]).read(), int(sys.argv[3])
spans = f"read_parquet('{out}/spans/*.parquet')"
con = duckdb.connect()

rows = [dict(zip([d[0] for d in c.description], r)) for c in [con.execute(fleet.per_function_sql(spans))] for r in c.fetchall()]
functions = fleet.check_against_stats(rows, stats_json)

# The `durations` table: each percentile over all the dumps from the merged buckets alone (the
# query formats/PARQUET.md shows, over every build at once), exactly `stats`' merged one.
percentiles = ", ".join(
    f"min(duration_ns) FILTER (WHERE up_to >= greatest(1, ceil({q} * all_calls))) AS {name}"
    for name, q in fleet.QUANTILES.items()
)
from_durations = con.execute(f"""
    WITH b AS (SELECT function, duration_ns, sum(calls) AS calls
               FROM read_parquet('{out}/durations/*.parquet') GROUP BY ALL),
         r AS (SELECT *, sum(calls) OVER (PARTITION BY function ORDER BY duration_ns) AS up_to,
                      sum(calls) OVER (PARTITION BY function) AS all_calls FROM b),
         q AS (SELECT function, any_value(all_calls) AS calls, {percentiles} FROM r GROUP BY ALL),
         m AS (SELECT function, min(min_ns) AS lo, max(max_ns) AS hi
               FROM read_parquet('{out}/functions/*.parquet') GROUP BY ALL)
    SELECT function, calls, {", ".join(f"least(greatest({n}, lo), hi) AS {n}" for n in fleet.QUANTILES)}
    FROM q JOIN m USING (function)
""").fetchall()
merged = {f["function"]: f for f in json.loads(stats_json)[0]["functions"]}
assert len(from_durations) == len(merged), (len(from_durations), len(merged))
for function, calls, *quantiles in from_durations:
    e = merged[function]
    assert calls == e["calls"], (function, calls, e["calls"])
    for name, value in zip(fleet.QUANTILES, quantiles):
        assert value == e[name], f"{function} {name}: durations {value}, stats {e[name]}"

bad_parents = con.execute(f"""
    SELECT count(*) FROM {spans} c LEFT JOIN {spans} p
      ON c.dump = p.dump AND c.parent_span_id = p.span_id
    WHERE c.parent_span_id IS NOT NULL AND (
        p.span_id IS NULL OR p.tid <> c.tid OR p.depth + 1 <> c.depth
        OR p.start_ns > c.start_ns OR p.start_ns + p.duration_ns < c.start_ns + c.duration_ns)
""").fetchone()[0]
assert bad_parents == 0, f"{bad_parents} spans whose parent is wrong"
bad_self = con.execute(f"""
    SELECT count(*) FROM {spans} p LEFT JOIN (
        SELECT dump, parent_span_id, sum(duration_ns) AS children FROM {spans}
        WHERE parent_span_id IS NOT NULL GROUP BY ALL) c
      ON p.dump = c.dump AND p.span_id = c.parent_span_id
    WHERE p.self_ns <> p.duration_ns - coalesce(c.children, 0)
""").fetchone()[0]
assert bad_self == 0, f"{bad_self} spans whose self time is not duration minus children"
roots_recursive = con.execute(f"SELECT count(*) FROM {spans} WHERE depth = 0 AND recursive").fetchone()[0]
assert roots_recursive == 0, "a span with nothing around it is called recursive"

total, clamped = con.execute(f"SELECT count(*), count(*) FILTER (WHERE clamped) FROM {spans}").fetchone()
listed, listed_spans, listed_clamped = con.execute(
    f"SELECT count(*), sum(spans), sum(spans_clamped) FROM read_parquet('{out}/dumps/*.parquet')").fetchone()
assert listed_clamped == clamped, f"dumps table says {listed_clamped} spans clamped, spans table flags {clamped}"
assert listed == dumps, f"dumps table: {listed} rows, {dumps} dumps exported"
assert listed_spans == total, f"dumps table says {listed_spans} spans, spans table has {total}"

size = 0
for path in glob.glob(f"{out}/*/*.parquet"):
    size += os.path.getsize(path) if "/spans/" in path else 0
    meta = pq.read_metadata(path)
    kv = meta.metadata
    assert kv[b"ringtrace.schema_version"] == b"1", path
    assert kv[b"ringtrace.table"].decode() == os.path.basename(os.path.dirname(path)), path
    if "/spans/" in path:
        names = [meta.schema.column(i).name for i in range(meta.num_columns)]
        for column in ("dump", "host", "build_id", "thread_name", "function", "file"):
            chunk = meta.row_group(0).column(names.index(column))
            assert "RLE_DICTIONARY" in chunk.encodings or "PLAIN_DICTIONARY" in chunk.encodings, (column, chunk.encodings)
        for column in ("span_id", "parent_span_id", "start_ns", "duration_ns", "self_ns"):
            chunk = meta.row_group(0).column(names.index(column))
            assert "DELTA_BINARY_PACKED" in chunk.encodings, (column, chunk.encodings)
    for group in range(meta.num_row_groups):
        for column in range(meta.num_columns):
            name = meta.schema.column(column).name
            codec = "UNCOMPRESSED" if "/spans/" in path and name in ("duration_ns", "self_ns", "parent_span_id") else "ZSTD"
            assert meta.row_group(group).column(column).compression == codec, (path, name)

# Start order: within a dump, a span id lower than the one before it only where a span (its row
# written with the batch it ended in) outlasted the batches before.
steps_back = con.execute(
    f"SELECT count(*) FROM (SELECT span_id < lag(span_id) OVER (PARTITION BY dump ORDER BY file_row_number) AS back "
    f"FROM read_parquet('{out}/spans/*.parquet', file_row_number = true)) WHERE back"
).fetchone()[0]
outlasting = con.execute(
    f"SELECT count(*) FROM read_parquet('{out}/spans/*.parquet') WHERE duration_ns > 0 AND depth < 2"
).fetchone()[0]
assert steps_back <= outlasting, f"{steps_back} steps back in span_id, {outlasting} outermost spans"

print(f"functions {functions} spans {total} bytes_per_span {size / total:.1f}")
