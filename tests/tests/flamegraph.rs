//! Collapsed stacks and flame graphs: each thread's self times add up to
//! exactly its top-level spans' time in the Chrome output of the same dump;
//! known sleeps and recursion depths show up where they must.

use std::collections::{BTreeMap, BTreeSet};

use ringtrace_tests::{
    at_least, at_most, binary, convert, parse_chrome, record_workload_timed, record_workload_with, scratch,
};

const ROUNDS: u64 = 4;
const SLEEP_MS: u64 = 30;
const FIB_N: usize = 12;

#[test]
fn folded_stacks_account_for_every_nanosecond() {
    let dir = scratch("folded");
    let args = ["--rounds", "4", "--sleep-ms", "30"];
    let (dump, rounds) = record_workload_timed(&binary("workload"), &dir, "w.rtd", &args);
    let (code, json, _) = convert(&dump, &[]);
    assert_eq!(code, 0);
    let (code, folded, stderr) = convert(&dump, &["-f", "folded"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");

    // Per thread: the total of top-level spans, from the Chrome output.
    let chrome = parse_chrome(&json);
    let mut top_level: BTreeMap<String, i64> = BTreeMap::new();
    let mut by_thread: BTreeMap<u64, Vec<&ringtrace_tests::Event>> = BTreeMap::new();
    for e in &chrome.events {
        by_thread.entry(e.tid).or_default().push(e);
    }
    for (tid, events) in by_thread {
        let mut end = i64::MIN;
        let mut total = 0;
        for e in events {
            if e.ts_ns >= end {
                total += e.dur_ns;
                end = e.end_ns();
            }
        }
        top_level.insert(chrome.thread_names[&tid].clone(), total);
    }

    // Per thread: the folded weights.
    let mut weights: BTreeMap<String, i64> = BTreeMap::new();
    let mut fib_depths: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    let mut sleep_ns = 0;
    for line in folded.lines() {
        let (path, weight) = line.rsplit_once(' ').expect("path and weight");
        let weight: i64 = weight.parse().expect("integer weight");
        let frames: Vec<&str> = path.split(';').collect();
        *weights.entry(frames[0].to_string()).or_default() += weight;
        if frames[1..].iter().all(|f| *f == "workload::fib") {
            fib_depths.entry(frames[0].to_string()).or_default().insert(frames.len() - 1);
        }
        if frames[1..] == ["sleeper round", "sleep"] {
            sleep_ns = weight;
        }
    }
    // A thread whose spans all lasted 0 ns (within the counter's resolution) has no folded line.
    top_level.retain(|_, total| *total != 0);
    assert_eq!(weights, top_level, "self times add up to the threads' top-level time");
    // Recursion paths 1 to N frames deep. The deepest hold a call or two that may
    // last 0 ns at the counter's resolution, and zero weights are not written.
    for thread in ["fib-0", "fib-1"] {
        let depths = &fib_depths[thread];
        assert!(depths.contains(&1) && depths.iter().all(|&d| d <= FIB_N), "{thread}: {depths:?}");
        assert!(depths.len() >= FIB_N - 2, "{thread}: {depths:?}");
    }
    // Sleeps never end early, and last no longer than the rounds the workload timed around them.
    let (least, most) = (at_least(ROUNDS * SLEEP_MS * 1_000_000), at_most(rounds.iter().sum()));
    assert!((least as i64..=most as i64).contains(&sleep_ns), "sleep self time {sleep_ns} ns, want {least}..={most}");
}

#[test]
fn flamegraph_is_an_svg_of_the_stacks() {
    let dir = scratch("flamegraph");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (code, svg, stderr) = convert(&dump, &["-f", "flamegraph"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert!(svg.starts_with("<?xml") && svg.trim_end().ends_with("</svg>"));
    for name in ["workload::fib", "sleeper round", "tokenize", "fib-0"] {
        assert!(svg.contains(name), "{name} missing from the flame graph");
    }
}
