//! rtconv as a library, used as the crate docs show a binding would: a real
//! dump of the workload opened, named, walked three ways, summarised and
//! rendered, each checked against the call counts the workload is known to
//! make.

use std::collections::BTreeMap;

use ringtrace_tests::{binary, fib_calls, parse_chrome, record_workload_with, scratch};
use rtconv::model::{self, Anomalies, Timeline};
use rtconv::{render, stats, symbolize};

const FIB_N: u64 = 12;
const ROUNDS: u64 = 2;
const LINES: u64 = 3;

#[test]
fn the_documented_flow_counts_every_call_the_workload_made() {
    let dir = scratch("library");
    let args = ["--fib", "12", "--rounds", "2", "--lines", "3", "--sleep-ms", "1"];
    let path = record_workload_with(&binary("workload"), &dir, "w.rtd", &args);

    let bytes = model::open(&path).unwrap();
    let trace = model::decode(&path, &bytes).unwrap();
    assert!(trace.damage.is_none());
    assert_eq!(trace.process.name, "workload");
    let naming = symbolize::symbolize(&trace, &symbolize::Options::default(), &symbolize::Cache::default());
    assert!(naming.problems.is_empty(), "{:?}", naming.problems);
    let names = naming.names;
    let (timebase, _) = trace.timebase().unwrap();
    let timeline = Timeline::new(&trace, &names, timebase);

    let parse_calls = 2 * ROUNDS;
    let expected: BTreeMap<String, u64> = [
        ("workload::fib", 2 * fib_calls(FIB_N)),
        ("tokenize", parse_calls * LINES),
        ("checksum", parse_calls * LINES),
        ("workload::parse_batch", parse_calls),
        ("sleeper round", ROUNDS),
        ("sleep", ROUNDS),
        ("main done", 1),
    ]
    .into_iter()
    .map(|(name, calls)| (name.to_string(), calls))
    .collect();

    // Start order, a thread and a batch at a time.
    let mut by_batches: BTreeMap<String, u64> = BTreeMap::new();
    let mut threads = timeline.threads();
    let mut seen_threads = 0;
    while let Some(mut thread) = threads.next() {
        seen_threads += 1;
        let mut last_start = i64::MIN;
        while let Some(batch) = thread.next_batch() {
            for span in batch {
                assert!(span.enter_ns >= last_start, "start order");
                assert!(span.exit_ns >= span.enter_ns);
                last_start = span.enter_ns;
                *by_batches.entry(timeline.name(span.key_index as usize).to_string()).or_default() += 1;
            }
        }
    }
    assert_eq!(seen_threads, trace.threads.len());
    assert_eq!(threads.anomalies(), Anomalies::default());
    assert_eq!(by_batches, expected);

    // The call-tree walk and the arrivals see the same spans, and say nothing is wrong.
    let mut walked: BTreeMap<String, u64> = BTreeMap::new();
    let found = timeline.walk(None, |v| {
        *walked.entry(timeline.name(*v.path.last().unwrap() as usize).to_string()).or_default() += 1;
    });
    assert_eq!((found, &walked), (Anomalies::default(), &expected));
    let mut arrived: BTreeMap<String, u64> = BTreeMap::new();
    let found =
        timeline.arrivals(|a| *arrived.entry(timeline.name(a.key_index as usize).to_string()).or_default() += 1);
    assert_eq!((found, &arrived), (Anomalies::default(), &expected));

    // The statistics, and the CSV writer over them.
    let (scopes, found) = stats::compute(&timeline, &stats::Options::default());
    assert_eq!(found, Anomalies::default());
    let rows: BTreeMap<String, u64> = scopes[0].rows.iter().map(|r| (r.name.clone(), r.calls)).collect();
    assert_eq!(rows, expected);
    let mut csv = Vec::new();
    render::stats_table::write(&scopes, stats::Output::Csv, false, &mut csv).unwrap();
    let csv = String::from_utf8(csv).unwrap();
    assert!(csv.contains(&format!("all threads,workload::fib,{},", 2 * fib_calls(FIB_N))), "{csv}");

    // Chrome JSON into memory, read back.
    let mut json = Vec::new();
    let found = render::chrome::write(&timeline, &render::chrome::Options::default(), &mut json).unwrap();
    assert_eq!(found, Anomalies::default());
    let chrome = parse_chrome(std::str::from_utf8(&json).unwrap());
    let mut events: BTreeMap<String, u64> = BTreeMap::new();
    for e in &chrome.events {
        *events.entry(e.name.clone()).or_default() += 1;
    }
    assert_eq!(events, expected);
}
