"""Per build-id and function figures over raw ringtrace dumps, on Spark: the
dumps are read as files (`binaryFile`), decoded in the executors by the
`ringtrace` Python package (`mapInArrow`: rtconv's own reader and naming,
Arrow batches in and out), and aggregated — calls, total, self, min, p50,
p90, p99, max — as `rtconv stats` gives them over the same dumps.

    spark-submit --master 'local[2]' samples/fleet/stats_job.py DUMPS OUT [--spans SPANS_OUT]

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
from pyspark.sql import functions as F

# The spans table's columns, strings plain (Spark has no dictionary type).
SPANS = (
    "dump string, host string, program string, build_id string, pid long, tid decimal(20,0), "
    "thread_name string, function string, file string, line long, depth long, span_id decimal(20,0), "
    "parent_span_id decimal(20,0), start_ns long, duration_ns long, self_ns long, recursive boolean, "
    "open boolean, unwound boolean, clamped boolean, missing_children boolean"
)


def decode(batches):
    """mapInArrow: each (path, content) row a dump, decoded into spans batches."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import ringtrace

    for batch in batches:
        paths, contents = batch.column("path"), batch.column("content")
        for i in range(batch.num_rows):
            spans = ringtrace.open(contents[i].as_py(), name=paths[i].as_py()).spans()
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dumps")
    parser.add_argument("out")
    parser.add_argument("--spans", help="also write every span here (Parquet)")
    args = parser.parse_args()

    spark = SparkSession.builder.appName("ringtrace-fleet-stats").getOrCreate()
    files = (
        spark.read.format("binaryFile")
        .option("pathGlobFilter", "*.rtd")
        .option("recursiveFileLookup", "true")
        .load(args.dumps)
        .select("path", "content")
    )
    spans = files.mapInArrow(decode, SPANS)
    if args.spans:
        spans.write.mode("overwrite").parquet(args.spans)
        spans = spark.read.parquet(args.spans)

    def percentile(q):
        # The call at rank ceil(q × calls), as rtconv stats' histogram ranks it.
        return F.expr(f"percentile_disc({q}) WITHIN GROUP (ORDER BY duration_ns)").cast("long")

    figures = spans.groupBy("build_id", "function").agg(
        F.count("*").alias("calls"),
        F.coalesce(F.sum(F.when(~F.col("recursive"), F.col("duration_ns"))), F.lit(0)).alias("total_ns"),
        F.sum("self_ns").alias("self_ns"),
        F.min("duration_ns").alias("min_ns"),
        F.max("duration_ns").alias("max_ns"),
        percentile(0.5).alias("p50_ns"),
        percentile(0.9).alias("p90_ns"),
        percentile(0.99).alias("p99_ns"),
        F.countDistinct("dump").alias("dumps"),
    )
    figures.write.mode("overwrite").parquet(args.out)
    spark.stop()


if __name__ == "__main__":
    main()
