//! Record the sample workload, convert its dump to Chrome JSON, and check the
//! result against what the workload is known to do.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ringtrace_tests::{
    ChromeTrace, Event, at_least, at_most, binary, fib_calls, parse_chrome, record_workload_timed, rtconv_ok, scratch,
};

const FIB_N: u32 = 18;
const ROUNDS: u32 = 4;
const LINES: u32 = 6;
const SLEEP_MS: u64 = 50;

/// Records the workload and converts its dump; also returns how long each
/// sleeper round took, timed by the workload around the round's spans.
fn record_and_convert(test: &str) -> (ChromeTrace, Vec<u64>) {
    let dir = scratch(test);
    let (fib, rounds, lines, sleep) = (FIB_N.to_string(), ROUNDS.to_string(), LINES.to_string(), SLEEP_MS.to_string());
    let args = ["--fib", &fib, "--rounds", &rounds, "--lines", &lines, "--sleep-ms", &sleep];
    let (dump, rounds) = record_workload_timed(&binary("workload"), &dir, "workload.rtd", &args);
    let json = dir.join("workload.json");
    rtconv_ok(&["convert", dump.to_str().unwrap(), "-f", "chrome", "-o", json.to_str().unwrap()]);
    (parse_chrome(&std::fs::read_to_string(&json).unwrap()), rounds)
}

#[test]
fn fib_calls_matches_the_recurrence() {
    assert_eq!([fib_calls(0), fib_calls(1), fib_calls(2), fib_calls(3), fib_calls(4)], [1, 1, 3, 5, 9]);
}

#[test]
fn workload_converts_with_exact_counts_nesting_names_and_durations() {
    let (trace, rounds) = record_and_convert("workload");

    // Exact span count per name. `fib`, `tokenize` and `checksum` are named
    // from DWARF (the last two are inlined into `parse_batch`, so they carry
    // DWARF's unqualified inline names); the others from the site section.
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for e in &trace.events {
        *counts.entry(e.name.as_str()).or_default() += 1;
    }
    let parse_calls = 2 * u64::from(ROUNDS);
    let expected: BTreeMap<&str, u64> = [
        ("workload::fib", 2 * fib_calls(FIB_N.into())),
        ("tokenize", parse_calls * u64::from(LINES)),
        ("checksum", parse_calls * u64::from(LINES)),
        ("workload::parse_batch", parse_calls),
        ("sleeper round", u64::from(ROUNDS)),
        ("sleep", u64::from(ROUNDS)),
        ("main done", 1),
    ]
    .into();
    assert_eq!(counts, expected);

    // Thread names, and the recursive function's call count per thread.
    let names: BTreeSet<&str> = trace.thread_names.values().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(["main", "fib-0", "fib-1", "sleeper", "parser-0", "parser-1"]));
    assert_eq!(trace.process_name.as_deref(), Some("workload"));
    let mut per_thread: HashMap<u64, Vec<&Event>> = HashMap::new();
    for e in &trace.events {
        per_thread.entry(e.tid).or_default().push(e);
    }
    for (tid, events) in &per_thread {
        let thread = &trace.thread_names[tid];
        if thread.starts_with("fib-") {
            assert_eq!(events.len() as u64, fib_calls(FIB_N.into()), "fib calls on {thread}");
        }
    }

    // Nesting: within a thread, every span lies inside the span enclosing its
    // start, and each kind of span has the parent the code gives it.
    for (tid, events) in &per_thread {
        let mut stack: Vec<&Event> = Vec::new();
        let mut max_fib_depth = 0;
        for e in events {
            while stack.last().is_some_and(|top| top.ended_before(e)) {
                stack.pop();
            }
            if let Some(parent) = stack.last() {
                assert!(e.end_ns() <= parent.end_ns(), "{e:?} partially overlaps {parent:?}");
            }
            let parent = stack.last().map(|p| p.name.as_str());
            match e.name.as_str() {
                "workload::fib" => {
                    assert!(parent.is_none() || parent == Some("workload::fib"), "fib inside {parent:?}");
                    max_fib_depth = max_fib_depth.max(stack.len() + 1);
                }
                "tokenize" | "checksum" => assert_eq!(parent, Some("workload::parse_batch")),
                "sleep" => assert_eq!(parent, Some("sleeper round")),
                other => assert_eq!(parent, None, "{other} on thread {tid} should be top level"),
            }
            stack.push(e);
        }
        if trace.thread_names[tid].starts_with("fib-") {
            // fib(n) recurses n levels deep below the outermost call: depth n.
            assert_eq!(max_fib_depth, FIB_N as usize, "fib depth");
        }
    }

    // Sleep spans last their known length: never less than the request, and
    // no more than the round the workload timed around them with `Instant`
    // (a loaded machine wakes a sleeper late; a wrong rate or unit is off by far more).
    let sleeps: Vec<i64> = trace.events.iter().filter(|e| e.name == "sleep").map(|e| e.dur_ns).collect();
    assert_eq!(sleeps.len(), rounds.len());
    for (dur, outside) in sleeps.iter().zip(&rounds) {
        let (least, most) = (at_least(SLEEP_MS * 1_000_000), at_most(*outside));
        assert!((least as i64..=most as i64).contains(dur), "sleep span lasted {dur} ns, want {least}..={most}");
    }

    // Nothing was lost, so no loss markers.
    assert!(trace.instants.is_empty(), "{:?}", trace.instants);
    // Timestamps are relative to the first event.
    assert_eq!(trace.events.iter().map(|e| e.ts_ns).min(), Some(0));
}

/// `fib(20)` on each fib thread: 21,891 spans, more than rtconv decodes at
/// once (16,384), so state carried from batch to batch is checked too.
const ACROSS_BATCHES: &[&str] = &["--fib", "20"];

#[test]
fn begin_end_events_describe_the_same_spans_as_complete_events() {
    let dir = scratch("begin-end");
    let dump = ringtrace_tests::record_workload_with(&binary("workload"), &dir, "w.rtd", ACROSS_BATCHES);
    let (code, x, _) = ringtrace_tests::convert(&dump, &[]);
    assert_eq!(code, 0);
    let (code, be, _) = ringtrace_tests::convert(&dump, &["--chrome-events", "be"]);
    assert_eq!(code, 0);
    assert!(!be.contains("\"ph\":\"X\""), "never mixed with X events");
    // In file order, each thread's `B`/`E` events go forward in time.
    let doc: serde_json::Value = serde_json::from_str(&be).unwrap();
    let mut last_ts: HashMap<u64, f64> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "B" || e["ph"] == "E") {
        let (tid, ts) = (e["tid"].as_u64().unwrap(), e["ts"].as_f64().unwrap());
        let last = last_ts.entry(tid).or_insert(ts);
        assert!(ts >= *last, "thread {tid}: {e} after ts {last}");
        *last = ts;
    }
    let sorted = |text: &str| {
        let mut events: Vec<_> =
            parse_chrome(text).events.into_iter().map(|e| (e.tid, e.ts_ns, e.dur_ns, e.name)).collect();
        events.sort();
        events
    };
    assert_eq!(sorted(&x), sorted(&be));
}

#[test]
fn ftrace_lines_describe_the_same_spans_as_complete_events() {
    let dir = scratch("ftrace-spans");
    let dump = ringtrace_tests::record_workload_with(&binary("workload"), &dir, "w.rtd", ACROSS_BATCHES);
    let (code, x, _) = ringtrace_tests::convert(&dump, &[]);
    assert_eq!(code, 0);
    let (code, text, _) = ringtrace_tests::convert(&dump, &["-f", "ftrace"]);
    assert_eq!(code, 0);
    // Per thread, from the Chrome events (in start order): each span's
    // (name, duration, depth), a span's parent being the last one still running when it starts.
    let mut expected: BTreeMap<u64, Vec<(String, i64, usize)>> = BTreeMap::new();
    let mut running: HashMap<u64, Vec<Event>> = HashMap::new();
    for e in parse_chrome(&x).events {
        let stack = running.entry(e.tid).or_default();
        while stack.last().is_some_and(|top| top.ended_before(&e)) {
            stack.pop();
        }
        expected.entry(e.tid).or_default().push((e.name.clone(), ringtrace_tests::as_printed(e.dur_ns), stack.len()));
        stack.push(e);
    }
    // From the ftrace lines (`parse_ftrace` checks their layout: the indentation is the depth).
    let mut got: BTreeMap<u64, Vec<(String, i64, usize)>> = BTreeMap::new();
    for s in ringtrace_tests::parse_ftrace(&text) {
        got.entry(s.tid).or_default().push((s.name, s.ns, s.depth));
    }
    for spans in expected.values_mut().chain(got.values_mut()) {
        spans.sort();
    }
    let fib_thread = expected.values().map(Vec::len).max().unwrap();
    assert!(fib_thread > 16_384, "{fib_thread} spans on the largest thread");
    assert_eq!(got, expected);
}

/// The 1-based line of the first line of the workload's source containing `needle` after `after`.
fn source_line(after: &str, needle: &str) -> usize {
    let source =
        std::fs::read_to_string(ringtrace_tests::workspace_root().join("samples/src/bin/workload.rs")).unwrap();
    let start = source.lines().position(|l| l.contains(after)).expect("anchor line");
    start + 1 + source.lines().skip(start).position(|l| l.contains(needle)).expect("needle line")
}

#[test]
fn args_carry_each_spans_source_place_inline_chain_and_module() {
    let dir = scratch("args");
    let dump = ringtrace_tests::record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (code, json, _) = ringtrace_tests::convert(&dump, &["--args"]);
    assert_eq!(code, 0);
    let trace = parse_chrome(&json);
    let first =
        |name: &str| trace.json["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == name).cloned().unwrap();
    // A named span: its place from the site descriptor; a code address: from DWARF.
    let sleep_line = source_line("\"sleeper\".into()", "span!(\"sleep\")");
    assert!(first("sleep")["args"]["at"].as_str().unwrap().ends_with(&format!("workload.rs:{sleep_line}")));
    let tokenize_line = source_line("fn tokenize", "span!()");
    let tokenize = first("tokenize");
    assert!(tokenize["args"]["at"].as_str().unwrap().ends_with(&format!("workload.rs:{tokenize_line}")), "{tokenize}");
    // tokenize is inlined into parse_batch (through iterator closures): the chain ends there.
    let chain = tokenize["args"]["inlined_into"].as_str().unwrap();
    assert!(chain.rsplit(" < ").next().unwrap().ends_with("parse_batch"), "{chain}");
    // Both lie in the workload executable: the module is the file that ran.
    let exe = binary("workload").canonicalize().unwrap();
    for span in [first("sleep"), tokenize] {
        let module = std::path::Path::new(span["args"]["module"].as_str().unwrap());
        assert_eq!(module.canonicalize().unwrap(), exe, "{span}");
    }
    // Without --args there are none.
    let (_, plain, _) = ringtrace_tests::convert(&dump, &[]);
    assert!(!plain.contains("\"at\":"));
}

#[test]
fn several_dumps_merge_into_one_timeline_aligned_by_realtime() {
    let dir = scratch("merge");
    let first = ringtrace_tests::record_workload_with(&binary("workload"), &dir, "a.rtd", &[]);
    let second = ringtrace_tests::record_workload_with(&binary("workload"), &dir, "b.rtd", &[]);
    let single = |dump: &std::path::Path| {
        let (code, json, _) = ringtrace_tests::convert(dump, &[]);
        assert_eq!(code, 0);
        parse_chrome(&json)
    };
    let (a, b) = (single(&first), single(&second));
    let start =
        |t: &ringtrace_tests::ChromeTrace| t.json["metadata"]["ringtrace"]["start_realtime_ns"].as_i64().unwrap();
    let (code, merged, stderr) = ringtrace_tests::convert(&first, &[second.to_str().unwrap()]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let merged = parse_chrome(&merged);
    let pid_of = |t: &ringtrace_tests::ChromeTrace| {
        t.json["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "process_name").unwrap()["pid"]
            .as_u64()
            .unwrap()
    };
    let (pid_a, pid_b) = (pid_of(&a), pid_of(&b));
    assert_ne!(pid_a, pid_b);
    let events_of = |pid: u64| -> Vec<i64> {
        let tids: Vec<u64> = merged.json["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == pid)
            .map(|e| e["tid"].as_u64().unwrap())
            .collect();
        merged.events.iter().filter(|e| tids.contains(&e.tid)).map(|e| e.ts_ns).collect()
    };
    let (ts_a, ts_b) = (events_of(pid_a), events_of(pid_b));
    assert_eq!((ts_a.len(), ts_b.len()), (a.events.len(), b.events.len()));
    // The first dump starts the trace; the second starts as much later as its first span did in real time.
    assert_eq!(ts_a.iter().min(), Some(&0));
    assert_eq!(*ts_b.iter().min().unwrap(), start(&b) - start(&a));
    assert!(start(&b) > start(&a), "the second run began later");
}

#[test]
fn ring_variables_size_the_rings_and_a_value_that_is_not_one_is_said_on_stderr() {
    let dir = scratch("ring_variables");
    // The workload at --fib 12: 465 calls of fib on each of its two fib threads.
    let fib = fib_calls(12);
    let record = |name: &str, env: &[(&str, &str)]| {
        let dump = dir.join(name);
        let mut command = std::process::Command::new(binary("workload"));
        command.args(["--out", dump.to_str().unwrap(), "--fib", "12", "--sleep-ms", "1"]).envs(env.iter().copied());
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let warned: Vec<String> = stderr.lines().filter(|l| l.starts_with("ringtrace: ")).map(String::from).collect();
        let info: serde_json::Value =
            serde_json::from_str(&rtconv_ok(&["info", dump.to_str().unwrap(), "-f", "json"])).unwrap();
        let count = |what: &str| info[0][what].as_u64().unwrap();
        (warned, count("spans"), count("overwritten"), count("dropped"))
    };
    // The workload's spans, all kept in the default rings of 65,536 records.
    let (warned, all, overwritten, dropped) = record("default.rtd", &[]);
    assert_eq!((warned.len(), overwritten, dropped), (0, 0, 0), "{warned:?}");
    assert!(all > 2 * fib, "{all}");

    // Not a number, not a mode: said, one line each, and the defaults used (every span kept, overwriting).
    let (warned, spans, overwritten, dropped) =
        record("bad.rtd", &[("RINGTRACE_RING_RECORDS", "1M"), ("RINGTRACE_RING_MODE", "keep")]);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[0].starts_with("ringtrace: RINGTRACE_RING_RECORDS=1M is not a number"), "{}", warned[0]);
    assert!(warned[0].ends_with("recording with 65536"), "{}", warned[0]);
    assert!(warned[1].starts_with("ringtrace: RINGTRACE_RING_MODE=keep is neither"), "{}", warned[1]);
    assert_eq!((spans, overwritten, dropped), (all, 0, 0));

    // Below the smallest ring: said, and rings of 16 records that overwrite (the mode not understood).
    let (warned, spans, overwritten, dropped) =
        record("small.rtd", &[("RINGTRACE_RING_RECORDS", "4"), ("RINGTRACE_RING_MODE", "keep")]);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(warned[0].ends_with("recording with 16"), "{}", warned[0]);
    assert_eq!((spans + overwritten, dropped), (all, 0));
    assert!(spans <= 6 * 16, "{spans} spans in six rings of 16");

    // Understood values: nothing said; `stop` keeps the first 16 of each thread and drops the rest.
    let (warned, spans, overwritten, dropped) =
        record("stop.rtd", &[("RINGTRACE_RING_RECORDS", "16"), ("RINGTRACE_RING_MODE", "stop")]);
    assert!(warned.is_empty(), "{warned:?}");
    assert_eq!((spans + dropped, overwritten), (all, 0));
    assert!(spans <= 6 * 16, "{spans} spans in six rings of 16");
}
