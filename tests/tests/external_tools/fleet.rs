//! Fleet scale on the engines people run (issue 20): the `ringtrace` Python
//! package — its wheel built here by maturin from `rtconv/python` — decodes
//! raw dumps into pyarrow tables equal to `rtconv export`'s; DuckDB over
//! those tables answers as `rtconv stats` merged; and the Spark job of
//! `samples/fleet` in local mode decodes the dumps in its executors and
//! aggregates them to the same figures. Needs tests/setup (Java, the
//! Python packages in tests/.venv).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ringtrace_tests::{binary, record_workload_with, rtconv_ok, scratch, venv, workspace_root};

/// The `ringtrace` package, built once per test run and installed into a
/// directory of its own (not the shared venv): the directory to put on PYTHONPATH.
fn package() -> &'static Path {
    static SITE: OnceLock<PathBuf> = OnceLock::new();
    SITE.get_or_init(|| {
        let root = workspace_root();
        let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        // In the target directory, replaced by each run: a scratch folder would outlive this
        // static (never dropped) and leave 200 MB behind every run.
        let dir = target.join("fleet-package");
        let _ = std::fs::remove_dir_all(&dir);
        let wheels = dir.join("wheels");
        let built = Command::new(venv("maturin"))
            .args(["build", "--locked", "--quiet", "-m"])
            .arg(root.join("rtconv/python/Cargo.toml"))
            .arg("--target-dir")
            .arg(&target)
            .arg("-o")
            .arg(&wheels)
            .output()
            .unwrap();
        assert!(built.status.success(), "maturin: {}", String::from_utf8_lossy(&built.stderr));
        let wheel = std::fs::read_dir(&wheels).unwrap().next().unwrap().unwrap().path();
        assert!(wheel.to_string_lossy().ends_with(".whl"), "{}", wheel.display());
        let site = dir.join("site");
        let installed = Command::new(venv("pip"))
            .args(["install", "--quiet", "--no-deps", "--disable-pip-version-check", "--target"])
            .arg(&site)
            .arg(&wheel)
            .output()
            .unwrap();
        assert!(installed.status.success(), "pip: {}", String::from_utf8_lossy(&installed.stderr));
        site
    })
}

/// A command of the venv with the package importable.
fn with_package(tool: &str) -> Command {
    let mut cmd = Command::new(venv(tool));
    cmd.env("PYTHONPATH", package()).env("PYSPARK_PYTHON", venv("python"));
    cmd
}

/// Three workload dumps of one build, and `rtconv stats` merged over them (JSON, in a file).
fn dumps(dir: &Path) -> (PathBuf, Vec<PathBuf>, PathBuf) {
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    let files = [("a.rtd", "2"), ("b.rtd", "3"), ("c.rtd", "4")]
        .iter()
        .map(|(name, rounds)| record_workload_with(&binary("workload"), &dumps, name, &["--rounds", rounds]))
        .collect();
    let stats = rtconv_ok(&["stats", dumps.to_str().unwrap(), "-f", "json", "-q"]);
    let json = dir.join("stats.json");
    std::fs::write(&json, stats).unwrap();
    (dumps, files, json)
}

#[test]
fn the_python_reader_gives_the_export_tables_and_duckdb_answers_as_stats() {
    let dir = scratch("fleet-reader");
    let (dumps, files, stats) = dumps(&dir);
    let exported = dir.join("exported");
    rtconv_ok(&["export", dumps.to_str().unwrap(), "-o", exported.to_str().unwrap(), "-q"]);
    let checked = with_package("python")
        .arg(workspace_root().join("tests/python/check_reader.py"))
        .arg(&stats)
        .arg(&exported)
        .args(&files)
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", String::from_utf8_lossy(&checked.stderr));
    eprintln!("reader: {}", String::from_utf8_lossy(&checked.stdout));
}

#[test]
fn the_spark_job_decodes_raw_dumps_in_its_executors_and_agrees_with_stats() {
    let dir = scratch("fleet-spark");
    let (dumps, _, stats) = dumps(&dir);
    // The executors read the dumps themselves (every span written too), or the JVM hands them over.
    let spans = dir.join("spans");
    for (mode, extra) in
        [("read", vec!["--spans".as_ref(), spans.as_os_str()]), ("through-spark", vec!["--through-spark".as_ref()])]
    {
        let out = dir.join(format!("figures-{mode}"));
        let job = with_package("spark-submit")
            .args(["--master", "local[2]", "--conf", "spark.ui.enabled=false"])
            .arg(workspace_root().join("samples/fleet/stats_job.py"))
            .arg(&dumps)
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(job.status.success(), "spark-submit ({mode}): {}", String::from_utf8_lossy(&job.stderr));
        // The figures Spark wrote, read back with DuckDB and compared with stats.
        let spans_count = if mode == "read" {
            format!("con.execute(\"SELECT count(*) FROM read_parquet('{}/*.parquet')\").fetchone()[0]", spans.display())
        } else {
            "None".into()
        };
        let compare = format!(
            r#"
import duckdb, json, sys
sys.path.insert(0, {python_dir:?})
import fleet
con = duckdb.connect()
cur = con.execute("SELECT * FROM read_parquet('{out}/*.parquet') ORDER BY function")
rows = [dict(zip([c[0] for c in cur.description], r)) for r in cur.fetchall()]
assert len({{r["build_id"] for r in rows}}) == 1 and all(r["dumps"] == 3 for r in rows), rows
print("{mode}: functions", fleet.check_against_stats(rows, open({stats:?}).read()), "spans", {spans_count})
"#,
            python_dir = workspace_root().join("tests/python"),
            out = out.display(),
            stats = stats,
        );
        let checked = with_package("python").arg("-c").arg(compare).output().unwrap();
        assert!(checked.status.success(), "{mode}: {}", String::from_utf8_lossy(&checked.stderr));
        eprintln!("spark: {}", String::from_utf8_lossy(&checked.stdout));
    }
}

#[test]
fn the_python_package_leaves_the_programs_own_sigbus_handler_in_place() {
    // A library loaded into someone else's process installs no signal handler: the process's own
    // SIGBUS handler, set before the package names a dump from its binary's DWARF (mapping the
    // binary), still gets a SIGBUS afterwards. (rtconv's command line switches its guard on, which
    // passes such a signal on: `io::shrink_guard`'s test.)
    let dir = scratch("fleet-sigbus");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let program = r#"
import os, signal, sys
seen = []
signal.signal(signal.SIGBUS, lambda number, frame: seen.append(number))
import ringtrace
functions = ringtrace.open(sys.argv[1], symbol_index=False).functions().column("function").to_pylist()
assert "workload::fib" in functions, functions  # named from the binary's DWARF: the binary was mapped
os.kill(os.getpid(), signal.SIGBUS)
assert seen == [signal.SIGBUS], seen
print("the program's handler ran")
"#;
    let out = with_package("python").arg("-c").arg(program).arg(&dump).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "the program's handler ran", "{stderr}");
}
