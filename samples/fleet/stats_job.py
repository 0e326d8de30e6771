"""Per build-id and function figures over raw ringtrace dumps, on Spark: the
dumps are listed as files (`binaryFile`), read and decoded in the executors by
the `ringtrace` Python package (`mapInArrow`: rtconv's own reader, naming and
statistics in native code, Arrow batches out: each dump's per-function
figures and duration histograms, a few thousand rows however many spans it
holds), and merged — calls, total, self, min, p50, p90, p99, max — exactly
as `rtconv stats` merges them over the same dumps.

    spark-submit --master 'local[2]' samples/fleet/stats_job.py DUMPS OUT \
        [--spans SPANS_OUT] [--through-spark]

Each executor reads its dumps itself, through pyarrow's filesystems (local
paths, `hdfs://`, `s3://`/`s3a://`): the JVM only lists them, so a dump's
bytes are read once, by the process that decodes them. With
--through-spark the JVM reads them (`binaryFile`'s content) and hands them
over, for a filesystem only Hadoop reaches — 3 to 19 times the time a dump
in docs/PERFORMANCE.md's two runs.

DUMPS is a directory or prefix searched recursively for `*.rtd` (a local
path, `hdfs://…`, `s3a://…` — whatever Hadoop reads); OUT receives the
figures as Parquet, one row per (build_id, function); with --spans, every
span goes to SPANS_OUT as Parquet too (the `spans` table of
formats/PARQUET.md, strings plain). On a cluster, the executors need the
`ringtrace` wheel (`pip install` it on the nodes, or `--archives` a venv
holding it and set `spark.pyspark.python`), and the dumps' binaries — or
dumps packed with `rtconv pack`, which carry their names.

Partitioning: each dump is one row of the `binaryFile` source and is
decoded whole by one task; files are packed into partitions of up to
`spark.sql.files.maxPartitionBytes` (128 MB by default), so the work
spreads over as many cores as there are dumps (or partitions), and the
aggregation shuffles one partial row per (build_id, function) and task.
"""

import argparse

from pyspark.sql import SparkSession
from pyspark.sql import Window
from pyspark.sql import functions as F

# The spans table's columns, strings plain (Spark has no dictionary type).
SPANS = (
    "dump string, host string, program string, build_id string, pid long, tid decimal(20,0), "
    "thread_name string, function string, file string, line long, depth long, span_id decimal(20,0), "
    "parent_span_id decimal(20,0), start_ns long, duration_ns long, self_ns long, recursive boolean, "
    "open boolean, unwound boolean, clamped boolean, missing_children boolean"
)


def dumps_of(batch):
    """A `binaryFile` batch's dumps: (path, bytes) each, the bytes from its `content` column
    where the JVM read them, else read here through pyarrow's filesystems."""
    import pyarrow.fs

    paths = batch.column("path")
    contents = batch.column("content") if "content" in batch.schema.names else None
    for i in range(batch.num_rows):
        path = paths[i].as_py()
        if contents is not None:
            yield path, contents[i].as_py()
            continue
        # Hadoop's spellings as pyarrow's: file:/x is file:///x, s3a:// is s3://.
        uri = path
        if uri.startswith("file:/") and not uri.startswith("file://"):
            uri = "file://" + uri[len("file:"):]
        elif uri.startswith("s3a://"):
            uri = "s3://" + uri[len("s3a://"):]
        filesystem, inner = pyarrow.fs.FileSystem.from_uri(uri)
        with filesystem.open_input_file(inner) as f:
            yield path, f.read()


def decode(batches):
    """mapInArrow: each `binaryFile` row a dump, decoded into spans batches."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import ringtrace

    for batch in batches:
        for path, data in dumps_of(batch):
            (spans,) = ringtrace.tables(data, "spans", name=path)
            # Dictionary strings to plain ones, unsigned to the types Spark has.
            columns = []
            for field, column in zip(spans.schema, spans.columns):
                if pa.types.is_dictionary(field.type):
                    column = pc.cast(column, pa.string())
                elif field.type == pa.uint64():
                    column = pc.cast(column, pa.decimal128(20, 0))
                elif field.type == pa.uint32():
                    column = pc.cast(column, pa.int64())
                columns.append(column)
            yield from pa.Table.from_arrays(columns, names=spans.schema.names).to_batches()


# Per dump and function, its figures (a row with no `duration_ns`) and its histogram (a row per
# duration bucket, its calls in `bucket_calls`): what the figures over many dumps are made of.
FIGURES = (
    "dump string, build_id string, function string, calls long, total_ns long, self_ns long, "
    "min_ns long, max_ns long, duration_ns long, bucket_calls long"
)


def decode_figures(batches):
    """mapInArrow: each `binaryFile` row a dump, decoded in native code into its `functions`
    and `durations` tables (rtconv stats' figures and histograms): a few thousand rows a dump,
    whatever its spans."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import ringtrace

    names = FIGURES.replace(",", "").split()[::2]
    strings = ("dump", "build_id", "function")
    for batch in batches:
        for path, data in dumps_of(batch):
            functions, durations = ringtrace.tables(data, "functions", "durations", name=path)
            # Each table's columns under FIGURES' names; the other table's columns null.
            for table, taken in (
                (functions, {n: n for n in names[:8]}),
                (durations, {"dump": "dump", "build_id": "build_id", "function": "function",
                             "duration_ns": "duration_ns", "bucket_calls": "calls"}),
            ):
                arrays = []
                for name in names:
                    kind = pa.string() if name in strings else pa.int64()
                    source = taken.get(name)
                    arrays.append(pc.cast(table.column(source), kind) if source else pa.nulls(table.num_rows, kind))
                yield from pa.Table.from_arrays(arrays, names=names).to_batches()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps")
    parser.add_argument("out")
    parser.add_argument("--spans", help="also write every span here (Parquet)")
    parser.add_argument(
        "--through-spark", action="store_true", help="the JVM reads the dumps and hands their bytes over"
    )
    args = parser.parse_args()

    spark = SparkSession.builder.appName("ringtrace-fleet-stats").getOrCreate()
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.rtd")
        .option("recursiveFileLookup", "true")
        .load(args.dumps)
        # Without the content column the JVM lists the files and reads none of them.
        .select("path", *(["content"] if args.through_spark else []))
    )
    if args.spans:
        files.mapInArrow(decode, SPANS).write.mode("overwrite").parquet(args.spans)

    rows = files.mapInArrow(decode_figures, FIGURES).cache()
    key = ["build_id", "function"]
    sums = (
        rows.where(F.col("duration_ns").isNull())
        .groupBy(*key)
        .agg(
            F.sum("calls").alias("calls"),
            F.sum("total_ns").alias("total_ns"),
            F.sum("self_ns").alias("self_ns"),
            F.min("min_ns").alias("min_ns"),
            F.max("max_ns").alias("max_ns"),
            F.countDistinct("dump").alias("dumps"),
        )
    )
    # The histograms merged: each percentile is the bucket holding the call at rank
    # max(1, ceil(q × calls)), as rtconv stats ranks its merged histogram.
    buckets = (
        rows.where(F.col("duration_ns").isNotNull())
        .groupBy(*key, "duration_ns")
        .agg(F.sum("bucket_calls").alias("n"))
    )
    upward = Window.partitionBy(*key).orderBy("duration_ns").rowsBetween(Window.unboundedPreceding, 0)
    ranked = buckets.withColumn("up_to", F.sum("n").over(upward)).withColumn(
        "all_calls", F.sum("n").over(Window.partitionBy(*key))
    )

    def percentile(q):
        rank = F.greatest(F.lit(1), F.ceil(F.lit(q) * F.col("all_calls")))
        return F.min(F.when(F.col("up_to") >= rank, F.col("duration_ns")))

    quantiles = ranked.groupBy(*key).agg(
        percentile(0.5).alias("p50"), percentile(0.9).alias("p90"), percentile(0.99).alias("p99")
    )
    joined = sums.join(
        quantiles.withColumnRenamed("build_id", "q_build").withColumnRenamed("function", "q_function"),
        sums.build_id.eqNullSafe(F.col("q_build")) & (sums.function == F.col("q_function")),
    )

    def clamped(name):
        # Within the calls' shortest and longest, as stats clamps its percentiles.
        return F.least(F.greatest(F.col(name), F.col("min_ns")), F.col("max_ns"))

    figures = joined.select(
        "build_id", "function", "calls", "total_ns", "self_ns", "min_ns", "max_ns",
        clamped("p50").alias("p50_ns"), clamped("p90").alias("p90_ns"), clamped("p99").alias("p99_ns"), "dumps",
    )
    figures.write.mode("overwrite").parquet(args.out)
    spark.stop()


if __name__ == "__main__":
    main()
