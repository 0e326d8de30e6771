//! `rtconv export` and `rtconv batch -f parquet`: the Parquet tables read by
//! a real engine (DuckDB, pyarrow, in tests/.venv) — per-function figures
//! equal `rtconv stats` merged over the same dumps, parents and self times
//! consistent, metadata and encodings as formats/PARQUET.md says; Spark's
//! reader agreeing with DuckDB's on every column — and a bad dump named while
//! the others are exported.

use std::path::Path;
use std::process::Command;

use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::{Record, RingInfo};
use ringtrace_tests::{binary, record_workload_with, rtconv_ok, rtconv_run, run, scratch, venv, workspace_root};

fn python() -> Command {
    Command::new(venv("python"))
}

/// `tests/python/check_export.py`, which must pass: its summary line.
fn check(tables: &Path, stats_of: &Path, dumps: usize) -> String {
    let stats = rtconv_ok(&["stats", stats_of.to_str().unwrap(), "-f", "json", "-q"]);
    let json = tables.with_extension("stats.json");
    std::fs::write(&json, stats).unwrap();
    let out = python()
        .arg(workspace_root().join("tests/python/check_export.py"))
        .arg(tables)
        .arg(&json)
        .arg(dumps.to_string())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// DuckDB's answer to `sql` (one row, columns joined by spaces).
fn duckdb(sql: &str) -> String {
    let code = format!("import duckdb; print(' '.join(map(str, duckdb.connect().execute({sql:?}).fetchone())))");
    let out = python().arg("-c").arg(code).output().unwrap();
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn duckdb_over_the_tables_answers_as_stats_merged() {
    let dir = scratch("export-duckdb");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    for (name, rounds) in [("a.rtd", "2"), ("b.rtd", "3"), ("c.rtd", "4")] {
        record_workload_with(&binary("workload"), &dumps, name, &["--rounds", rounds]);
    }
    // A directory on two workers: two part files per table.
    let tables = dir.join("tables");
    let out = run(
        &binary("rtconv"),
        &["export", dumps.to_str().unwrap(), "-o", tables.to_str().unwrap(), "-j", "2", "-q", "--host", "h1"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = check(&tables, &dumps, 3);
    eprintln!("export: {summary}");
    let spans = format!("read_parquet('{}/spans/*.parquet')", tables.display());
    // fib(12) on each of a dump's two threads: 465 calls, one of them outermost.
    assert_eq!(
        duckdb(&format!(
            "SELECT count(DISTINCT dump), count(*) / count(DISTINCT dump), \
             count(*) FILTER (WHERE NOT recursive) / count(DISTINCT dump), min(host), max(host) \
             FROM {spans} WHERE function = 'workload::fib'"
        )),
        "3 930.0 2.0 h1 h1"
    );
    // The functions table holds each dump's own stats figures.
    let per_dump = rtconv_ok(&["stats", dumps.join("b.rtd").to_str().unwrap(), "-f", "json", "-q"]);
    let json: serde_json::Value = serde_json::from_str(&per_dump).unwrap();
    let fib = json[0]["functions"].as_array().unwrap().iter().find(|f| f["function"] == "workload::fib").unwrap();
    assert_eq!(
        duckdb(&format!(
            "SELECT calls, total_ns, self_ns, p99_ns FROM read_parquet('{}/functions/*.parquet') \
             WHERE function = 'workload::fib' AND dump LIKE '%b.rtd'",
            tables.display()
        )),
        format!("{} {} {} {}", fib["calls"], fib["total_ns"], fib["self_ns"], fib["p99_ns"])
    );

    // The same dumps in a gzipped tar, through `batch -f parquet`.
    let archive = dir.join("dumps.tar.gz");
    let tar = Command::new("tar").arg("czf").arg(&archive).arg("-C").arg(&dumps).arg(".").status().unwrap();
    assert!(tar.success());
    let from_archive = dir.join("from-archive");
    let out = run(
        &binary("rtconv"),
        &["batch", archive.to_str().unwrap(), "-f", "parquet", "-o", from_archive.to_str().unwrap(), "-q"],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(check(&from_archive, &dumps, 3).split(" bytes").next(), summary.split(" bytes").next());
}

#[test]
fn spark_reads_the_tables_as_duckdb_does() {
    // rtconv encodes most column chunks itself; Spark's own Parquet reader must read them as
    // DuckDB does: two dumps with a host, files and lines, and nulls (the outermost spans' parents).
    let dir = scratch("export-spark");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    for (name, rounds) in [("a.rtd", "2"), ("b.rtd", "3")] {
        record_workload_with(&binary("workload"), &dumps, name, &["--rounds", rounds]);
    }
    let tables = dir.join("tables");
    rtconv_ok(&["export", dumps.to_str().unwrap(), "-o", tables.to_str().unwrap(), "-q", "--host", "h1"]);
    let out = python()
        .env("PYSPARK_PYTHON", venv("python"))
        .arg(workspace_root().join("tests/python/spark_reads_export.py"))
        .arg(&tables)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = String::from_utf8(out.stdout).unwrap();
    assert!(summary.starts_with("spark agrees: "), "{summary}");
    eprintln!("{summary}");
}

#[test]
fn a_bad_dump_is_named_and_the_others_are_exported() {
    let dir = scratch("export-bad");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let good = record_workload_with(&binary("workload"), &dumps, "good.rtd", &["--rounds", "2"]);
    std::fs::write(dumps.join("bad.rtd"), b"not a ringtrace dump at all").unwrap();
    let tables = dir.join("tables");
    let (code, _, stderr) = rtconv_run(&["export", dumps.to_str().unwrap(), "-o", tables.to_str().unwrap(), "-q"]);
    let stderr = stderr.join("\n");
    assert_eq!(code, 3, "some converted, one failed: {stderr}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("rtconv: error:")).collect();
    assert_eq!(errors.len(), 1, "{stderr}");
    assert!(errors[0].contains("bad.rtd"), "{stderr}");
    assert!(stderr.contains("1 converted, 0 salvaged (converted with losses), 1 failed"), "{stderr}");
    check(&tables, &good, 1);
}

#[test]
fn a_span_cut_at_its_parents_end_and_an_open_one_are_flagged() {
    // One ring whose spans do not nest: `inner` (10..40 ticks) starts inside `outer` (0..30) and
    // ends after it; plus `outer` open on a second thread at dump time.
    let dir = scratch("export-flags");
    let (mut w, keys) =
        DumpBuilder::new("flags").sites(0x20_000, &[("outer", "src/a.rs", 3), ("inner", "src/a.rs", 9)]).start();
    let info = |tid, name: &'static [u8]| RingInfo { tid, capacity: 4, written: 2, dropped: 0, aux: 0, flags: 0, name };
    let records =
        [Record { key: keys[0], enter: 1_000, exit: 3_000 }, Record { key: keys[1], enter: 2_000, exit: 4_000 }];
    w.ring(&info(1, b"one"), &records, &[]).unwrap();
    w.ring(&info(2, b"two"), &[], &[(keys[0], 1_500)]).unwrap();
    let dump = dir.join("flags.rtd");
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let tables = dir.join("tables");
    rtconv_ok(&["export", dump.to_str().unwrap(), "-o", tables.to_str().unwrap(), "-q"]);
    let spans = format!("read_parquet('{}/spans/*.parquet')", tables.display());
    let row = |tid: u32, function: &str| {
        duckdb(&format!(
            "SELECT depth, parent_span_id IS NULL, clamped, open, file, line, start_ns + duration_ns FROM {spans} \
             WHERE tid = {tid} AND function = '{function}'"
        ))
    };
    let outer = row(1, "outer");
    let outer_end = outer.rsplit(' ').next().unwrap().to_string();
    assert!(outer.starts_with("0 True False False src/a.rs 3 "), "{outer}");
    // Cut at outer's end: its end is outer's.
    assert_eq!(row(1, "inner"), format!("1 False True False src/a.rs 9 {outer_end}"));
    assert!(row(2, "outer").starts_with("0 True False True src/a.rs 3 "), "{}", row(2, "outer"));
    assert_eq!(
        duckdb(&format!("SELECT spans, spans_clamped FROM read_parquet('{}/dumps/*.parquet')", tables.display())),
        "3 1"
    );
}
