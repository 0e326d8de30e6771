"""Checks the `ringtrace` Python package (tests/tests/external_tools/fleet.rs):

    check_reader.py STATS_JSON EXPORTED_DIR DUMP...

- each dump's `spans()` and `functions()` equal the rows `rtconv export` wrote for it
  (EXPORTED_DIR, read with pyarrow), and its `metadata` the `dumps` row;
- DuckDB over the readers' pyarrow tables (no file in between) answers as `rtconv stats`
  merged over the dumps (STATS_JSON; fleet.py);
- a file that is not a dump raises ValueError naming it.
Prints `functions N spans M`.
"""

import os
import sys

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import ringtrace

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402

stats_json, exported, dumps = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3:]


def plain(table):
    """Rows as plain Python values, sorted (dictionary columns decoded)."""
    return sorted(table.to_pylist(), key=lambda r: tuple(str(v) for v in r.values()))


tables = {name: pq.read_table(f"{exported}/{name}") for name in ("spans", "functions", "dumps")}
readers = []
for i, path in enumerate(dumps):
    # Half from paths, half from bytes named as the path: both ways in.
    d = ringtrace.open(path) if i % 2 == 0 else ringtrace.open(open(path, "rb").read(), name=path)
    readers.append(d)
    for name, got in (("spans", d.spans()), ("functions", d.functions())):
        want = tables[name].filter(pa.compute.equal(tables[name]["dump"].cast(pa.string()), path))
        assert plain(got) == plain(want.cast(got.schema)), f"{path}: {name} differs from rtconv export's"
    want_meta = plain(tables["dumps"].filter(pa.compute.equal(tables["dumps"]["dump"].cast(pa.string()), path)))
    assert [d.metadata] == want_meta, (d.metadata, want_meta)

spans = pa.concat_tables([d.spans() for d in readers])
con = duckdb.connect()
con.register("spans", spans)
rows = [dict(zip([c[0] for c in cur.description], r)) for cur in [con.execute(fleet.per_function_sql("spans"))] for r in cur.fetchall()]
functions = fleet.check_against_stats(rows, stats_json)

try:
    ringtrace.open(b"not a ringtrace dump", name="junk.rtd")
    raise AssertionError("junk was read")
except ValueError as e:
    assert "junk.rtd" in str(e) and "not a ringtrace dump" in str(e), e

print(f"functions {functions} spans {spans.num_rows}")
