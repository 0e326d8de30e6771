//! The filters (`-F -N --tid --thread --time-range -D -t`) on the workload,
//! whose call tree is known: fib(12) on two threads (465 calls each, the
//! outermost one calling fib(11) and fib(10)), parse_batch rounds on two
//! threads (each calling tokenize and checksum 8 times), sleeper rounds of
//! one sleep each, and `main done`. Counts against that tree; times against
//! the unfiltered Chrome trace of the same dump.

use std::collections::BTreeMap;
use std::path::Path;

use ringtrace_tests::{
    binary, convert, parse_chrome, record_workload_with, rtconv_ok, run, scratch, stats_rows, workload_calls,
};

/// Calls per function from `rtconv stats --format json` with `args`, and its stderr.
fn calls(dump: &Path, args: &[&str]) -> (BTreeMap<String, u64>, String) {
    let (rows, stderr) = stats_rows(dump, args);
    (rows.into_iter().map(|(name, r)| (name, r["calls"].as_u64().unwrap())).collect(), stderr)
}

fn expect(pairs: &[(&str, u64)]) -> BTreeMap<String, u64> {
    pairs.iter().map(|&(k, v)| (k.to_string(), v)).collect()
}

#[test]
fn filters_keep_what_the_call_tree_says() {
    let dir = scratch("filters-counts");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "4", "--sleep-ms", "1"]);
    let all = workload_calls(4);
    assert_eq!(calls(&dump, &[]).0, all);
    // -F: the function and what it calls; -D counts from the match.
    let batch = expect(&[("workload::parse_batch", 8), ("tokenize", 64), ("checksum", 64)]);
    assert_eq!(calls(&dump, &["-F", "parse_batch"]).0, batch);
    assert_eq!(calls(&dump, &["--function", "workload::parse_batch"]).0, batch);
    assert_eq!(calls(&dump, &["-F", "parse_batch", "-D", "1"]).0, expect(&[("workload::parse_batch", 8)]));
    assert_eq!(calls(&dump, &["-F", "fib", "-D", "2"]).0, expect(&[("workload::fib", 6)]));
    assert_eq!(calls(&dump, &["-F", "tokenize", "-F", "sleep"]).0, expect(&[("tokenize", 64), ("sleep", 4)]));
    // A plain name matches whole names only.
    assert_eq!(calls(&dump, &["-F", "fi"]).0, expect(&[]));
    // -N: the function and what it calls are left out.
    let (without, stderr) = calls(&dump, &["-N", "parse_batch"]);
    assert_eq!(without, expect(&[("workload::fib", 930), ("sleeper round", 4), ("sleep", 4), ("main done", 1)]));
    assert!(
        stderr.contains(
            "the filters (-N parse_batch) kept 939 of 1075 spans; left out: 0 on other threads, 136 by function"
        ),
        "{stderr}"
    );
    assert_eq!(
        calls(&dump, &["-F", "parse_batch", "-N", "checksum"]).0,
        expect(&[("workload::parse_batch", 8), ("tokenize", 64)])
    );
    // -D alone: the outermost spans of each thread, then one level more.
    assert_eq!(
        calls(&dump, &["-D", "1"]).0,
        expect(&[("workload::fib", 2), ("workload::parse_batch", 8), ("sleeper round", 4), ("main done", 1)])
    );
    // Two levels hold every function, and fib's outermost call with its two children.
    let mut two_levels = all.clone();
    two_levels.insert("workload::fib".into(), 6);
    assert_eq!(calls(&dump, &["-D", "2"]).0, two_levels);
    // Threads by name and by id (the ids from `rtconv info`).
    assert_eq!(calls(&dump, &["--thread", "sleeper"]).0, expect(&[("sleeper round", 4), ("sleep", 4)]));
    assert_eq!(
        calls(&dump, &["--thread", "fib-0", "--thread", "main"]).0,
        expect(&[("workload::fib", 465), ("main done", 1)])
    );
    let info: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["info", dump.to_str().unwrap(), "-f", "json"])).unwrap();
    let tids: Vec<String> = info[0]["threads"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("parser"))
        .map(|t| t["tid"].to_string())
        .collect();
    assert_eq!(tids.len(), 2);
    assert_eq!(calls(&dump, &["--tid", &tids.join(",")]).0, batch);
    assert_eq!(
        calls(&dump, &["--tid", &tids[0]]).0,
        expect(&[("workload::parse_batch", 4), ("tokenize", 32), ("checksum", 32)])
    );
}

#[test]
fn left_out_children_count_in_their_parents_self_time() {
    let dir = scratch("filters-self");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "3"]);
    let row = |args: &[&str], name: &str| -> (u64, u64) {
        let r = &stats_rows(&dump, args).0[name];
        (r["total_ns"].as_u64().unwrap(), r["self_ns"].as_u64().unwrap())
    };
    let (batch_total, batch_self) = row(&[], "workload::parse_batch");
    let (tokenize_total, _) = row(&[], "tokenize");
    assert_eq!(row(&["-N", "tokenize"], "workload::parse_batch"), (batch_total, batch_self + tokenize_total));
    assert_eq!(row(&["-N", "tokenize", "-N", "checksum"], "workload::parse_batch"), (batch_total, batch_total));
}

#[test]
fn time_range_and_duration_keep_what_the_unfiltered_trace_says() {
    let dir = scratch("filters-time");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "6", "--sleep-ms", "2"]);
    let chrome = |args: &[&str]| {
        let mut all = vec!["-f", "chrome"];
        all.extend_from_slice(args);
        let (code, out, stderr) = convert(&dump, &all);
        assert_eq!(code, 0, "{stderr:?}");
        parse_chrome(&out)
    };
    let full = chrome(&[]);
    let key = |e: &ringtrace_tests::Event| (e.tid, e.ts_ns, e.dur_ns, e.name.clone());
    let mut events: Vec<_> = full.events.iter().map(key).collect();
    events.sort();
    let end = full.events.iter().map(|e| e.end_ns()).max().unwrap();
    // A window in the middle of the trace, by times from its first span.
    let (start, stop) = (end / 3, end / 2);
    let window = format!("{start}ns..{stop}ns");
    let expected: Vec<_> =
        events.iter().filter(|(_, ts, dur, _)| *ts < stop && (ts + dur > start || *ts >= start)).cloned().collect();
    assert!(!expected.is_empty() && expected.len() < events.len());
    let windowed = chrome(&["--time-range", &window]);
    let mut got: Vec<_> = windowed.events.iter().map(key).collect();
    got.sort();
    assert_eq!(got, expected);
    let meta = &windowed.json["metadata"]["ringtrace"]["filter"];
    assert_eq!(meta["options"], format!("--time-range {window}"));
    assert_eq!(meta["kept"], expected.len());
    assert_eq!(meta["left_out"]["time_range"], events.len() - expected.len());
    // The same range with its end left out, and as absolute timestamps (seconds on the monotonic clock).
    let origin = full.json["metadata"]["ringtrace"]["start_monotonic_ns"].as_i64().unwrap();
    let seconds = |ns: i64| format!("{}.{:09}", (origin + ns) / 1_000_000_000, (origin + ns) % 1_000_000_000);
    let mut absolute: Vec<_> =
        chrome(&["-r", &format!("{}..{}", seconds(start), seconds(stop))]).events.iter().map(key).collect();
    absolute.sort();
    assert_eq!(absolute, expected);
    let open_ended: Vec<_> =
        events.iter().filter(|(_, ts, dur, _)| ts + dur > start || *ts >= start).cloned().collect();
    let mut got: Vec<_> = chrome(&["-r", &format!("{start}ns..")]).events.iter().map(key).collect();
    got.sort();
    assert_eq!(got, open_ended);
    // -t: the spans lasting at least the median duration, exactly.
    let mut durations: Vec<i64> = events.iter().map(|e| e.2).collect();
    durations.sort();
    let median = durations[durations.len() / 2];
    let long: Vec<_> = events.iter().filter(|e| e.2 >= median).cloned().collect();
    let mut got: Vec<_> = chrome(&["-t", &format!("{median}ns")]).events.iter().map(key).collect();
    got.sort();
    assert_eq!(got, long);
}

#[test]
fn batch_and_every_output_apply_the_filters() {
    let dir = scratch("filters-batch");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    for name in ["a.rtd", "b.rtd"] {
        record_workload_with(&binary("workload"), &dumps, name, &["--rounds", "2"]);
    }
    let out = dir.join("out");
    let status = run(
        &binary("rtconv"),
        &["batch", dumps.to_str().unwrap(), "-f", "chrome", "-o", out.to_str().unwrap(), "-q", "-F", "tokenize"],
    );
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    for name in ["a.json", "b.json"] {
        let trace = parse_chrome(&std::fs::read_to_string(out.join(name)).unwrap());
        assert_eq!(trace.events.len(), 32, "{name}: 2 rounds × 2 threads × 8 tokenize");
        assert!(trace.events.iter().all(|e| e.name == "tokenize"));
    }
    // Merged stats over both dumps.
    let merged = rtconv_ok(&["stats", dumps.to_str().unwrap(), "-f", "json", "-q", "-N", "fib"]);
    let json: serde_json::Value = serde_json::from_str(&merged).unwrap();
    let names: Vec<&str> =
        json[0]["functions"].as_array().unwrap().iter().map(|r| r["function"].as_str().unwrap()).collect();
    assert!(!names.is_empty() && !names.contains(&"workload::fib"), "{names:?}");
    // Both dumps' fib calls (fib(12) on two threads: 930 each) are counted as left out.
    assert_eq!(json[0]["filter"]["options"], "-N fib");
    assert_eq!(json[0]["filter"]["left_out"]["function"], 2 * 930);
    // ftrace says its filter in its header; folded and systrace keep only the matches.
    let dump = dumps.join("a.rtd");
    let (_, ftrace, _) = convert(&dump, &["-f", "ftrace", "-F", "checksum"]);
    assert!(ftrace.contains("# filter: -F checksum\n"));
    assert_eq!(ftrace.matches("checksum();").count(), 32);
    assert!(!ftrace.contains("tokenize"));
    let (_, folded, note) = convert(&dump, &["-f", "folded", "-N", "fib", "-N", "parse_batch", "-N", "sleeper round"]);
    let stacks: Vec<&str> = folded.lines().map(|l| l.rsplit_once(' ').unwrap().0).collect();
    // The thread, then its one span left: `main done`, an empty span, whose line the format leaves
    // out when its two clock reads fell within the same nanosecond (a weight of 0).
    assert!(stacks.iter().all(|s| *s == "main;main done") && stacks.len() <= 1, "{stacks:?}");
    assert!(note.join("\n").contains("kept 1 of"), "{note:?}");
    // A bad pattern, duration or range is one line naming the option.
    for (args, says) in [
        (vec!["-F", "("], "is not a regular expression"),
        (vec!["-t", "10 minutes"], "give a duration"),
        (vec!["--time-range", "10ms"], "START..END"),
    ] {
        let (code, _, stderr) = convert(&dump, &args);
        assert_eq!(code, 2, "{args:?}");
        assert!(stderr.join("\n").contains(says), "{args:?}: {stderr:?}");
    }
}
