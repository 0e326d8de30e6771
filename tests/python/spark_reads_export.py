"""Reads `rtconv export`'s tables with Spark's own Parquet reader and with DuckDB, and checks they
agree (tests/tests/external_tools/export.rs): per dump and function, the count and sum of every
`spans` column, and every row of the other tables. rtconv writes most column chunks itself
(rtconv/src/export/chunk.rs); Spark's vectorized reader is the strictest of the engines.

    spark_reads_export.py PARQUET_DIR

Prints `spark agrees: N spans, M functions rows`.
"""

import sys

import duckdb
from pyspark.sql import SparkSession

out = sys.argv[1]
spark = (
    SparkSession.builder.master("local[1]")
    .config("spark.ui.enabled", "false")
    .config("spark.sql.session.timeZone", "UTC")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
con = duckdb.connect()

numbers = ["pid", "tid", "line", "depth", "span_id", "parent_span_id", "start_ns", "duration_ns", "self_ns"]
flags = ["recursive", "open", "unwound", "clamped", "missing_children"]
words = ["host", "program", "build_id", "thread_name", "file"]
columns = (
    ["dump", "function", "count(*)"]
    + [f"count({c})" for c in numbers + words]
    + [f"sum(cast({c} AS DECIMAL(38, 0)))" for c in numbers]
    + [f"sum(cast({c} AS INT))" for c in flags]
    + [f"min({c})" for c in words]
    + [f"max({c})" for c in words]
)
query = "SELECT " + ", ".join(columns) + " FROM spans GROUP BY dump, function ORDER BY dump, function"

spark.read.parquet(f"{out}/spans").createOrReplaceTempView("spans")
by_spark = [tuple(None if v is None else str(v) for v in row) for row in spark.sql(query).collect()]
con.execute(f"CREATE VIEW spans AS SELECT * FROM read_parquet('{out}/spans/*.parquet')")
by_duckdb = [tuple(None if v is None else str(v) for v in row) for row in con.execute(query).fetchall()]
assert by_spark == by_duckdb, f"spans: Spark {by_spark[:3]} ... DuckDB {by_duckdb[:3]} ..."

rows = 0
for table in ["functions", "durations", "dumps"]:
    frame = spark.read.parquet(f"{out}/{table}")
    names = frame.columns
    spark_rows = sorted(tuple(str(v) for v in row) for row in frame.collect())
    duck = con.execute(f"SELECT {', '.join(names)} FROM read_parquet('{out}/{table}/*.parquet')").fetchall()
    # Spark reads unsigned 64-bit integers as decimals, DuckDB as integers: compare their text.
    duck_rows = sorted(tuple(str(v) for v in row) for row in duck)
    assert spark_rows == duck_rows, f"{table}: Spark {spark_rows[:2]} DuckDB {duck_rows[:2]}"
    rows += len(spark_rows) if table == "functions" else 0

spans = sum(int(row[2]) for row in by_spark)
assert spans > 0
print(f"spark agrees: {spans} spans, {rows} functions rows")
