//! The Chrome JSON in a real viewer: speedscope (its npm release build) in
//! headless Chromium loads the sample's trace, and what it imported —
//! per-thread and per-function total and self time — equals `rtconv stats`.
//!
//! Needs Chromium, Node and `tests/viewer/node_modules`: `tests/setup`
//! installs them.

use std::collections::BTreeMap;

use ringtrace_tests::{at_least, at_most, binary, convert, record_workload_timed, scratch, workspace_root};
use serde_json::Value;

/// (thread name, function) to (total ns, self ns).
pub(super) type Totals = BTreeMap<(String, String), (u64, u64)>;

pub(super) fn speedscope(trace: &std::path::Path, args: &[&str]) -> Value {
    let viewer = workspace_root().join("tests/viewer");
    assert!(
        viewer.join("node_modules/speedscope").is_dir() && viewer.join("node_modules/puppeteer-core").is_dir(),
        "speedscope is not installed in tests/viewer: run tests/setup (Chromium, Node, npm ci)"
    );
    let out = ringtrace_tests::tool("node")
        .arg(viewer.join("speedscope.mjs"))
        .arg(trace)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run node ({e}): run tests/setup"));
    assert!(out.status.success(), "speedscope run failed:\n{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("speedscope.mjs prints JSON")
}

/// What speedscope shows of `trace` (Chrome JSON of `dump`) and what `rtconv stats
/// --per-thread STATS_ARGS` says of `dump`: per (thread, function), (total, self) ns, with the
/// per-thread totals under the function "" — both leaving out what lasts 0 ns (speedscope's
/// export has no time for it). speedscope must import it without a warning.
pub(super) fn speedscope_and_stats(
    trace: &std::path::Path,
    dump: &std::path::Path,
    stats_args: &[&str],
) -> (Totals, Totals) {
    let seen = speedscope(trace, &[]);
    assert_eq!(seen["warnings"], Value::Array(vec![]), "speedscope complained while importing");
    // speedscope names a thread's profile "process (pid P), thread (tid T)" and keeps microseconds as doubles.
    let mut ours = Totals::new();
    let mut theirs = Totals::new();
    let ns = |us: &Value| (us.as_f64().unwrap() * 1000.0).round() as u64;
    for profile in seen["profiles"].as_array().unwrap() {
        let name = profile["name"].as_str().unwrap();
        let thread = name.split(", ").nth(1).and_then(|t| t.split(" (tid").next()).unwrap().to_string();
        theirs.insert((thread.clone(), String::new()), (ns(&profile["total_us"]), 0));
        for (function, f) in profile["functions"].as_object().unwrap() {
            theirs.insert((thread.clone(), function.clone()), (ns(&f["total_us"]), ns(&f["self_us"])));
        }
    }
    let stats = ringtrace_tests::rtconv()
        .args(["stats", "--per-thread", "--format", "json"])
        .arg(dump)
        .args(stats_args)
        .output()
        .unwrap();
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    for scope in stats.as_array().unwrap() {
        let thread = scope["scope"].as_str().unwrap().to_string();
        ours.insert((thread.clone(), String::new()), (scope["total_ns"].as_u64().unwrap(), 0));
        for f in scope["functions"].as_array().unwrap() {
            let key = (thread.clone(), f["function"].as_str().unwrap().to_string());
            ours.insert(key, (f["total_ns"].as_u64().unwrap(), f["self_ns"].as_u64().unwrap()));
        }
    }
    ours.retain(|_, &mut (total, _)| total > 0);
    theirs.retain(|_, &mut (total, _)| total > 0);
    (theirs, ours)
}

#[test]
fn speedscope_shows_the_same_per_thread_and_per_function_totals_as_rtconv_stats() {
    let dir = scratch("viewer");
    // Sleeps of a known length, recursion (fib) and nesting three deep (parser).
    let (dump, rounds) = record_workload_timed(&binary("workload"), &dir, "w.rtd", &["--sleep-ms", "20"]);
    let (code, json, stderr) = convert(&dump, &["--chrome-events", "be"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let trace = dir.join("w.json");
    std::fs::write(&trace, json).unwrap();
    let (theirs, ours) = speedscope_and_stats(&trace, &dump, &[]);
    assert_eq!(theirs, ours, "per-function (total, self) ns: speedscope, then rtconv stats");
    // Every thread and function of the workload took part in the comparison.
    let expected = [
        ("fib-0", "workload::fib"),
        ("fib-1", "workload::fib"),
        ("parser-0", "checksum"),
        ("parser-0", "tokenize"),
        ("parser-0", "workload::parse_batch"),
        ("parser-1", "checksum"),
        ("parser-1", "tokenize"),
        ("parser-1", "workload::parse_batch"),
        ("sleeper", "sleep"),
        ("sleeper", "sleeper round"),
    ];
    let mut compared: Vec<(&str, &str)> =
        ours.keys().filter(|(_, f)| !f.is_empty()).map(|(t, f)| (t.as_str(), f.as_str())).collect();
    // "main done" is an empty span: 0 ns or a few, so present or not.
    compared.retain(|&k| k != ("main", "main done"));
    assert_eq!(compared, expected);
    // The known sleeps are there: 5 rounds of 20 ms on the sleeper thread, no longer than the workload timed them.
    let (sleep_total, _) = ours[&("sleeper".to_string(), "sleep".to_string())];
    let (least, most) = (at_least(5 * 20_000_000), at_most(rounds.iter().sum()));
    assert!((least..=most).contains(&sleep_total), "{sleep_total}, want {least}..={most}");
}
