"""What the fleet-scale tests share: one query of per-function figures over a
`spans` table (DuckDB SQL, or the same by Spark), and the check that its
answer is `rtconv stats`' merged figures over the same dumps.

`rtconv stats` keeps durations in an HDR histogram of 3 significant digits:
values below 2048 ns exactly, larger ones in buckets of 2^(bits - 11) ns,
each percentile reported as the highest value of the bucket holding the
call at rank ceil(q × calls), kept within the exact min and max. The query
takes the exact call at that rank; the check maps it to its bucket's
highest value the same way, so the two must agree exactly, not
approximately.
"""

import json

QUANTILES = {"p50_ns": 0.50, "p90_ns": 0.90, "p99_ns": 0.99}


def per_function_sql(spans):
    """Per function over `spans` (a table or `read_parquet(...)`): calls, total
    (recursive calls counted once: their outermost call), self, min, max, and
    the call at each percentile's rank."""
    ranks = ", ".join(
        f"list_sort(list(duration_ns))[greatest(1, ceil({q} * count(*)))::bigint] AS {name}"
        for name, q in QUANTILES.items()
    )
    return f"""
        SELECT function,
               count(*) AS calls,
               coalesce(sum(duration_ns) FILTER (WHERE NOT recursive), 0) AS total_ns,
               sum(self_ns) AS self_ns,
               min(duration_ns) AS min_ns,
               max(duration_ns) AS max_ns,
               {ranks}
        FROM {spans}
        GROUP BY function
        ORDER BY function
    """


def highest_equivalent(ns):
    """The highest value of the bucket of a 3-significant-digit HDR histogram holding `ns`."""
    ns = int(ns)
    if ns < 2048:
        return ns
    shift = ns.bit_length() - 11
    return ((ns >> shift) << shift) + (1 << shift) - 1


def check_against_stats(rows, stats_json):
    """`rows` (dicts as per_function_sql gives them) against `rtconv stats -f json`'s
    merged table. Returns the number of functions compared; raises on any difference."""
    merged = json.loads(stats_json)[0]["functions"]
    expected = {f["function"]: f for f in merged}
    got = {r["function"]: r for r in rows}
    assert set(got) == set(expected), f"functions differ: {sorted(set(got) ^ set(expected))}"
    for name, r in got.items():
        e = expected[name]
        for column in ("calls", "total_ns", "self_ns", "min_ns", "max_ns"):
            assert int(r[column]) == e[column], f"{name} {column}: query {r[column]}, stats {e[column]}"
        for column in QUANTILES:
            bucket_top = min(max(highest_equivalent(r[column]), int(r["min_ns"])), int(r["max_ns"]))
            assert bucket_top == e[column], f"{name} {column}: query {r[column]} (as stats: {bucket_top}), stats {e[column]}"

    return len(got)
