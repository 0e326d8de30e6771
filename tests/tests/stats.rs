//! `rtconv stats` on the workload: exact call counts, sleep durations between
//! the request and what the program measured around them, shares adding up, self times equal to the folded stacks', and the
//! same numbers in table, CSV and JSON.

use std::collections::BTreeMap;

use ringtrace_tests::{
    at_least, at_most, binary, convert, record_workload_timed, record_workload_with, rtconv_ok, scratch, workload_calls,
};

fn stats(dump: &std::path::Path, args: &[&str]) -> String {
    let mut all = vec!["stats", dump.to_str().unwrap()];
    all.extend_from_slice(args);
    rtconv_ok(&all)
}

#[test]
fn stats_match_what_the_workload_did() {
    let dir = scratch("stats");
    let (dump, rounds) =
        record_workload_timed(&binary("workload"), &dir, "w.rtd", &["--rounds", "4", "--sleep-ms", "30"]);
    let json: serde_json::Value = serde_json::from_str(&stats(&dump, &["--format", "json"])).unwrap();
    let scope = &json[0];
    assert_eq!(scope["scope"], "all threads");
    let rows: BTreeMap<String, &serde_json::Value> = scope["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["function"].as_str().unwrap().to_string(), r))
        .collect();
    let calls: BTreeMap<String, u64> = rows.iter().map(|(k, v)| (k.clone(), v["calls"].as_u64().unwrap())).collect();
    assert_eq!(calls, workload_calls(4));

    // A sleep never ends early, and no sleep span lasts longer than the round the
    // workload timed around it (however late a loaded machine woke it).
    let sleep = rows["sleep"];
    let (least, most) = (at_least(30_000_000), at_most(*rounds.iter().max().unwrap()));
    for field in ["min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"] {
        let v = sleep[field].as_u64().unwrap();
        assert!((least..=most).contains(&v), "sleep {field} = {v}, want {least}..={most}");
    }
    let total = sleep["total_ns"].as_u64().unwrap();
    assert!((4 * least..=at_most(rounds.iter().sum())).contains(&total), "sleep total {total}, rounds {rounds:?}");
    // Recursion is counted once in total: fib's total is its two root calls, not the sum over all depths.
    let fib = rows["workload::fib"];
    assert_eq!(fib["total_ns"], fib["self_ns"], "fib's self time is all of its (outermost) total");

    // Self shares add up to 100% of the top-level time, and match the folded stacks' self times.
    let share: f64 = rows.values().map(|r| r["self_share"].as_f64().unwrap()).sum();
    assert!((share - 1.0).abs() < 1e-6, "shares add up to {share}");
    let (_, folded, _) = convert(&dump, &["-f", "folded"]);
    let mut folded_self: BTreeMap<String, u64> = BTreeMap::new();
    for line in folded.lines() {
        let (path, weight) = line.rsplit_once(' ').unwrap();
        *folded_self.entry(path.rsplit(';').next().unwrap().to_string()).or_default() += weight.parse::<u64>().unwrap();
    }
    for (name, row) in &rows {
        assert_eq!(row["self_ns"].as_u64().unwrap(), folded_self.get(name).copied().unwrap_or(0), "{name}");
    }

    // CSV carries the same numbers, and the table shows them in human units, sorted as asked.
    let csv = stats(&dump, &["--format", "csv"]);
    let sleep_csv = csv.lines().find(|l| l.starts_with("all threads,sleep,")).unwrap();
    assert!(sleep_csv.starts_with(&format!("all threads,sleep,4,{},", sleep["total_ns"])), "{sleep_csv}");
    let table = stats(&dump, &["--sort", "calls"]);
    let order: Vec<&str> = table.lines().skip(2).map(|l| l.split("  ").next().unwrap().trim()).collect();
    assert_eq!(order[0], "workload::fib", "{table}");
    assert!(table.contains(" ms "), "human units: {table}");
}

#[test]
fn per_thread_stats_have_one_scope_per_thread() {
    let dir = scratch("stats-threads");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let json: serde_json::Value = serde_json::from_str(&stats(&dump, &["--per-thread", "--format", "json"])).unwrap();
    let mut scopes: Vec<&str> = json.as_array().unwrap().iter().map(|s| s["scope"].as_str().unwrap()).collect();
    scopes.sort_unstable();
    assert_eq!(scopes, ["fib-0", "fib-1", "main", "parser-0", "parser-1", "sleeper"]);
    // A thread whose spans all lasted 0 ns (main's one span may) has no time to share out.
    for scope in json.as_array().unwrap().iter().filter(|s| s["total_ns"] != 0) {
        let share: f64 = scope["functions"].as_array().unwrap().iter().map(|r| r["self_share"].as_f64().unwrap()).sum();
        assert!((share - 1.0).abs() < 1e-6, "{}: {share}", scope["scope"]);
    }
}

/// Calls of the naive `fib(n)` at recursion depth `d` (1 = the outermost call).
fn fib_calls_at_depth(n: u32, d: u32) -> u64 {
    match (n, d) {
        (_, 0) => 0,
        (_, 1) => 1,
        (0 | 1, _) => 0,
        _ => fib_calls_at_depth(n - 1, d - 1) + fib_calls_at_depth(n - 2, d - 1),
    }
}

#[test]
fn the_call_tree_has_every_path_with_exact_calls() {
    let dir = scratch("tree");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "3", "--lines", "5"]);
    let json: serde_json::Value = serde_json::from_str(&stats(&dump, &["--tree", "--format", "json"])).unwrap();
    let roots = json[0]["calls"].as_array().unwrap();
    let by_name = |nodes: &[serde_json::Value], name: &str| -> serde_json::Value {
        nodes.iter().find(|n| n["function"] == name).cloned().unwrap_or_else(|| panic!("no {name}"))
    };
    // Totals add up: a node's self time is its total less its children's totals.
    fn check(node: &serde_json::Value) {
        let children = node["children"].as_array().unwrap();
        let inner: u64 = children.iter().map(|c| c["total_ns"].as_u64().unwrap()).sum();
        assert_eq!(
            node["self_ns"].as_u64().unwrap() + inner,
            node["total_ns"].as_u64().unwrap(),
            "{}",
            node["function"]
        );
        children.iter().for_each(check);
    }
    roots.iter().for_each(check);

    // parse_batch → tokenize and checksum, once per line, on two threads.
    let batch = by_name(roots, "workload::parse_batch");
    assert_eq!(batch["calls"], 2 * 3);
    let children = batch["children"].as_array().unwrap();
    assert_eq!(by_name(children, "tokenize")["calls"], 2 * 3 * 5);
    assert_eq!(by_name(children, "checksum")["calls"], 2 * 3 * 5);
    assert_eq!(by_name(&by_name(roots, "sleeper round")["children"].as_array().unwrap()[..], "sleep")["calls"], 3);

    // fib(12) on two threads: the path of d nested fibs has exactly 2 × calls_at_depth(12, d) calls.
    let mut node = by_name(roots, "workload::fib");
    for depth in 1..=12 {
        assert_eq!(node["calls"].as_u64().unwrap(), 2 * fib_calls_at_depth(12, depth), "depth {depth}");
        let next = node["children"].as_array().unwrap().first().cloned();
        match next {
            Some(child) => node = child,
            None => {
                assert_eq!(depth, 12, "the recursion is 12 deep");
                break;
            }
        }
    }
    // And the table form shows the nesting by indentation.
    let table = stats(&dump, &["--tree"]);
    assert!(table.lines().any(|l| l.ends_with("    tokenize")), "{table}");
}

/// `--calibrated` on a deep recursion (fib(20): 21,891 calls 20 deep on each
/// of two threads, spans of a few ns each, where the recorder's cost is most
/// of what is measured): every self time is at most its total, per function
/// and per call path; self times add up to exactly the calibrated top-level
/// time; no duration is below zero or above its uncalibrated value, and the
/// percentiles are real durations, not a clamping floor.
#[test]
fn calibrated_stats_keep_self_within_total_on_a_deep_recursion() {
    let dir = scratch("calibrated");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--fib", "20"]);
    let json = |args: &[&str]| -> serde_json::Value { serde_json::from_str(&stats(&dump, args)).unwrap() };
    let raw = json(&["--format", "json"]);
    let cal = json(&["--format", "json", "--calibrated"]);
    assert!(cal[0]["calibration"]["per_span_ns"].as_u64().is_some(), "the dump carries calibration");
    let rows = |v: &serde_json::Value| -> BTreeMap<String, serde_json::Value> {
        v[0]["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["function"].as_str().unwrap().to_string(), r.clone()))
            .collect()
    };
    let (raw_rows, cal_rows) = (rows(&raw), rows(&cal));
    let n = |r: &serde_json::Value, f: &str| r[f].as_u64().unwrap_or_else(|| panic!("{f} in {r}"));
    let mut self_sum = 0;
    for (name, r) in &cal_rows {
        assert!(n(r, "self_ns") <= n(r, "total_ns"), "{name}: self > total: {r}");
        for f in ["total_ns", "self_ns", "min_ns", "p50_ns", "p90_ns", "p99_ns", "max_ns"] {
            assert!(n(r, f) <= n(&raw_rows[name], f), "{name}: calibrated {f} above the measured one");
        }
        assert!(
            n(r, "min_ns") <= n(r, "p50_ns") && n(r, "p50_ns") <= n(r, "p90_ns") && n(r, "p90_ns") <= n(r, "max_ns")
        );
        self_sum += n(r, "self_ns");
    }
    assert_eq!(self_sum, cal[0]["total_ns"].as_u64().unwrap(), "self times add up to the top-level time");
    // fib: 2 × 21,891 calls; the median call (a leaf or near one) still measures more than nothing.
    let fib = &cal_rows["workload::fib"];
    assert_eq!(n(fib, "calls"), 2 * 21_891);
    assert!(n(fib, "p50_ns") > 0 && n(fib, "total_ns") > 0, "{fib}");
    assert!(n(fib, "total_ns") < n(&raw_rows["workload::fib"], "total_ns"), "the recorder's cost was taken out");

    // Per call path too: self ≤ total, and a node's total is its self plus its children's totals.
    let tree = json(&["--tree", "--format", "json", "--calibrated"]);
    fn check(node: &serde_json::Value) {
        let children = node["children"].as_array().unwrap();
        let inner: u64 = children.iter().map(|c| c["total_ns"].as_u64().unwrap()).sum();
        let (own, total) = (node["self_ns"].as_u64().unwrap(), node["total_ns"].as_u64().unwrap());
        assert!(own <= total, "{}: self {own} > total {total}", node["function"]);
        assert_eq!(own + inner, total, "{}", node["function"]);
        children.iter().for_each(check);
    }
    tree[0]["calls"].as_array().unwrap().iter().for_each(check);
}
