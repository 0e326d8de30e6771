//! Streaming capture (`ringtrace::stream_to`, `RINGTRACE_STREAM`): a small
//! ring per thread drained into the file while the program runs keeps every
//! span of a run many times the ring's size, counts exactly what it cannot
//! keep, and leaves a file that converts after the program is killed.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use ringtrace_tests::{binary, convert, parse_chrome, scratch};

/// `rtconv stats --format json --per-thread` of `dump`: per thread name, per function, calls;
/// and the per-thread losses.
fn stats(dump: &Path) -> (BTreeMap<String, BTreeMap<String, u64>>, BTreeMap<String, serde_json::Value>) {
    let out =
        ringtrace_tests::rtconv().arg("stats").arg(dump).args(["--format", "json", "--per-thread"]).output().unwrap();
    // 3: converted, with data missing (a stream cut short); anything else is a failure.
    assert!(out.status.success() || out.status.code() == Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (mut calls, mut losses) = (BTreeMap::new(), BTreeMap::new());
    for scope in json.as_array().unwrap() {
        let name = scope["scope"].as_str().unwrap().to_string();
        let functions = scope["functions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f["function"].as_str().unwrap().to_string(), f["calls"].as_u64().unwrap()))
            .collect();
        calls.insert(name.clone(), functions);
        losses.insert(name, scope["losses"].clone());
    }
    (calls, losses)
}

fn run_stream(args: &[&str], env: &[(&str, &str)]) {
    let out = Command::new(binary("stream")).args(args).envs(env.iter().copied()).output().unwrap();
    assert!(out.status.success(), "stream {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_stream_keeps_every_span_of_a_run_many_times_its_ring() {
    let dir = scratch("stream-whole");
    let dump = dir.join("whole.rtd");
    // 4096-record rings; each thread writes 300,001 spans: 73 laps.
    run_stream(&["whole", "2", "300000", dump.to_str().unwrap()], &[("RINGTRACE_RING_RECORDS", "4096")]);
    let (calls, losses) = stats(&dump);
    for t in ["worker-0", "worker-1"] {
        assert_eq!(calls[t]["stream::step"], 300_000, "{t}");
        assert_eq!(calls[t]["thread"], 1, "{t}");
        let l = &losses[t];
        assert_eq!((l["dropped"].as_u64(), l["overwritten"].as_u64(), l["open"].as_u64()), (Some(0), Some(0), Some(0)));
    }
    let info = ringtrace_tests::rtconv().arg("info").arg(&dump).output().unwrap();
    let info = String::from_utf8(info.stdout).unwrap();
    assert!(info.contains("reason: stream"), "{info}");

    // Nesting survives the chunks: every step is inside its thread's span.
    let small = dir.join("small.rtd");
    run_stream(&["whole", "2", "20000", small.to_str().unwrap()], &[("RINGTRACE_RING_RECORDS", "1024")]);
    let (code, json, stderr) = convert(&small, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let trace = parse_chrome(&json);
    let mut threads: BTreeMap<u64, (i64, i64)> = BTreeMap::new();
    for e in trace.events.iter().filter(|e| e.name == "thread") {
        threads.insert(e.tid, (e.ts_ns, e.end_ns()));
    }
    assert_eq!(threads.len(), 2);
    let steps: Vec<_> = trace.events.iter().filter(|e| e.name == "stream::step").collect();
    assert_eq!(steps.len(), 40_000);
    for e in steps {
        let (start, end) = threads[&e.tid];
        assert!(e.ts_ns >= start && e.end_ns() <= end, "a step outside its thread's span");
    }
}

#[test]
fn with_the_writer_thread_alone_what_it_cannot_keep_is_counted_exactly() {
    let dir = scratch("stream-writer");
    let dump = dir.join("writer.rtd");
    run_stream(
        &["whole", "2", "300000", dump.to_str().unwrap()],
        &[("RINGTRACE_RING_RECORDS", "1024"), ("RINGTRACE_STREAM_DRAIN", "writer")],
    );
    let (calls, losses) = stats(&dump);
    for t in ["worker-0", "worker-1"] {
        let kept: u64 = calls[t].values().sum();
        let dropped = losses[t]["dropped"].as_u64().unwrap();
        // However the writer was scheduled: every span is kept or counted as dropped, once.
        assert_eq!(kept + dropped, 300_001, "{t}: {kept} kept, {dropped} dropped");
    }
}

#[test]
fn a_killed_stream_converts_with_everything_synced_before_the_kill() {
    let dir = scratch("stream-killed");
    let dump = dir.join("killed.rtd");
    let mut child = Command::new(binary("stream"))
        .args(["killed", "50000", dump.to_str().unwrap()])
        .env("RINGTRACE_RING_RECORDS", "4096")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line, "synced\n");
    child.kill().unwrap(); // SIGKILL: no exit handler runs
    child.wait().unwrap();
    let (calls, _) = stats(&dump);
    let main = calls.values().next().unwrap();
    assert_eq!(main["before"], 50_000);
    // What convert says about a file without its end: cut short, everything before converted.
    let (code, _, stderr) = convert(&dump, &["-f", "ftrace"]);
    assert!(code == 0 || code == 3, "{code}: {stderr:?}");
    assert!(stderr.iter().any(|l| l.contains("a stream cut short")), "{stderr:?}");
}
