//! Golden files for the text outputs, from a synthetic dump whose every
//! tick is chosen: `-f ftrace`, `-f folded` and `rtconv stats --format csv`.
//! Rewrite the files after an intended change with `BLESS=1 cargo test -p ringtrace-tests --test e2e -- golden::`.

use std::path::Path;

use ringtrace_format::layout::RING_FLAG_THREAD_EXITED;
use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::{IoSink, Record, RingInfo, Writer};
use ringtrace_tests::{convert, run, scratch};

const BASE: u64 = 0x10_0000;
const LABELS: [&str; 4] = ["handle request", "parse", "read line", "wait"];

/// Starts a dump with a ns clock and the site section for [`LABELS`]; returns the writer and the keys.
fn dump_start() -> (Writer<IoSink<Vec<u8>>>, Vec<u64>) {
    let descriptors: Vec<(&str, &str, u32)> =
        LABELS.iter().enumerate().map(|(i, &label)| (label, "src/server.rs", 10 + i as u32)).collect();
    DumpBuilder::new("server").pid(7).sites(BASE, &descriptors).start()
}

fn ring(w: &mut Writer<IoSink<Vec<u8>>>, tid: u64, name: &[u8], records: &[Record]) {
    let n = records.len() as u64;
    let info = RingInfo { tid, capacity: 1024, written: n, dropped: 0, aux: 0, flags: RING_FLAG_THREAD_EXITED, name };
    w.ring(&info, records, &[]).unwrap();
}

fn r(key: u64, enter: u64, exit: u64) -> Record {
    Record { key, enter, exit }
}

/// A dump of two threads with nested named spans; ticks are nanoseconds.
fn synthetic_dump(path: &Path) {
    let (mut w, keys) = dump_start();
    let [request, parse, read, wait] = [keys[0], keys[1], keys[2], keys[3]];
    // Thread 1: a request with two parses (each reading lines) and a wait; durations cross every mark.
    let worker = [
        r(read, 1_000, 11_001),   // 10.001 µs: '+'
        r(read, 12_000, 112_001), // 100.001 µs: '!'
        r(parse, 500, 200_000),
        r(read, 300_000, 1_300_001), // 1.000001 ms: '#'
        r(parse, 250_000, 1_400_000),
        r(wait, 1_500_000, 11_500_001), // '*'
        r(request, 0, 12_000_000),
    ];
    ring(&mut w, 101, b"worker", &worker);
    ring(&mut w, 102, b"slow", &[r(wait, 20_000_000, 120_000_001), r(wait, 200_000_000, 1_200_000_001)]); // '@', '$'
    std::fs::write(path, w.finish().unwrap().0).unwrap();
}

#[test]
fn a_child_outliving_its_parent_is_cut_at_the_parents_end() {
    let dir = scratch("clamp");
    let dump = dir.join("overlap.rtd");
    let (mut w, keys) = dump_start();
    // parse [1000, 3000] ends after its parent request [0, 2000].
    ring(&mut w, 1, b"t", &[r(keys[1], 1_000, 3_000), r(keys[0], 0, 2_000)]);
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!(code, 0);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(stderr[0].contains("1 span(s) ended after their parent and were cut"), "{stderr:?}");
    let events = ringtrace_tests::parse_chrome(&json).events;
    let parse = events.iter().find(|e| e.name == "parse").unwrap();
    assert_eq!((parse.ts_ns, parse.dur_ns), (1_000, 1_000));
}

#[test]
fn calibrated_stats_take_the_recorders_cost_out() {
    let dir = scratch("calibrated");
    let dump = dir.join("calibrated.rtd");
    let (mut w, keys) = dump_start();
    // A request [0, 1000] with two parses of 100 ns; the recorder measured 10 ns per
    // empty span and 30 ns added to a parent per nested span (1 tick = 1 ns).
    ring(&mut w, 1, b"t", &[r(keys[1], 100, 200), r(keys[1], 300, 400), r(keys[0], 0, 1_000)]);
    w.calibration(&[ringtrace_format::Calibration {
        mode: ringtrace_format::ClockMode::Fast,
        samples: 1001,
        span_cost: 30,
        read_cost: 10,
    }])
    .unwrap();
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let out =
        run(&ringtrace_tests::binary("rtconv"), &["stats", dump.to_str().unwrap(), "--calibrated", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let row =
        |name: &str| json[0]["functions"].as_array().unwrap().iter().find(|f| f["function"] == name).unwrap().clone();
    // request: 1000 - 10 - 2 × 30 = 930 inclusive; its children 2 × (100 - 10) = 180; self 750.
    assert_eq!(
        (row("handle request")["total_ns"].as_u64(), row("handle request")["self_ns"].as_u64()),
        (Some(930), Some(750))
    );
    assert_eq!((row("parse")["total_ns"].as_u64(), row("parse")["self_ns"].as_u64()), (Some(180), Some(180)));
    assert_eq!(json[0]["calibration"]["per_span_ns"], 10);
    // Without --calibrated the raw figures stand.
    let out = run(&ringtrace_tests::binary("rtconv"), &["stats", dump.to_str().unwrap(), "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let raw =
        json[0]["functions"].as_array().unwrap().iter().find(|f| f["function"] == "handle request").unwrap().clone();
    assert_eq!((raw["total_ns"].as_u64(), raw["self_ns"].as_u64()), (Some(1_000), Some(800)));
}

#[test]
fn clean_leaves_outlying_calls_out_of_the_distribution() {
    let dir = scratch("clean");
    let dump = dir.join("clean.rtd");
    let (mut w, keys) = dump_start();
    // 100 reads of 1 µs, two of them 1 ms and 2 ms.
    let records: Vec<Record> = (0..100u64)
        .map(|i| {
            let start = i * 10_000_000;
            let length = match i {
                10 => 1_000_000,
                90 => 2_000_000,
                _ => 1_000,
            };
            r(keys[2], start, start + length)
        })
        .collect();
    ring(&mut w, 1, b"t", &records);
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let read = |extra: &[&str]| {
        let mut args = vec!["stats", dump.to_str().unwrap(), "--format", "json"];
        args.extend_from_slice(extra);
        let out = run(&ringtrace_tests::binary("rtconv"), &args);
        assert!(out.status.success());
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json[0]["functions"][0].clone()
    };
    let raw = read(&[]);
    assert_eq!(
        (raw["calls"].as_u64(), raw["max_ns"].as_u64(), raw["outliers"].as_u64()),
        (Some(100), Some(2_000_000), Some(0))
    );
    let cleaned = read(&["--clean"]);
    // Calls and total keep every call; the distribution leaves the two out.
    assert_eq!(cleaned["calls"].as_u64(), Some(100));
    assert_eq!(cleaned["total_ns"], raw["total_ns"]);
    assert_eq!(cleaned["outliers"].as_u64(), Some(2));
    assert_eq!(
        (cleaned["max_ns"].as_u64(), cleaned["p99_ns"].as_u64(), cleaned["mean_ns"].as_u64()),
        (Some(1_000), Some(1_000), Some(1_000))
    );
}

#[test]
fn nesting_deeper_than_512_is_reported() {
    let dir = scratch("deep");
    let dump = dir.join("deep.rtd");
    let (mut w, keys) = dump_start();
    let records: Vec<Record> = (0..600u64).rev().map(|i| r(keys[1], i, 10_000 - i)).collect();
    ring(&mut w, 1, b"t", &records);
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let (code, _, stderr) = convert(&dump, &[]);
    assert_eq!(code, 0);
    assert!(stderr.iter().any(|l| l.contains("88 span(s) are nested deeper than 512 levels")), "{stderr:?}");
}

fn check(name: &str, actual: &str) {
    ringtrace_tests::golden(&Path::new("tests/golden").join(name), actual);
}

#[test]
fn text_outputs_match_their_golden_files() {
    let dir = scratch("golden");
    let dump = dir.join("synthetic.rtd");
    synthetic_dump(&dump);
    for (format, golden) in [("ftrace", "ftrace.txt"), ("folded", "folded.txt")] {
        let (code, text, stderr) = convert(&dump, &["-f", format]);
        assert_eq!((code, stderr.len()), (0, 0), "{format}: {stderr:?}");
        check(golden, &text);
    }
    let out =
        run(&ringtrace_tests::binary("rtconv"), &["stats", dump.to_str().unwrap(), "--format", "csv", "--per-thread"]);
    assert!(out.status.success());
    check("stats.csv", &String::from_utf8(out.stdout).unwrap());
}

#[test]
fn outputs_are_the_same_whether_a_ring_nests_in_the_file_or_must_be_sorted() {
    // A random call tree over the four labels (recursion included), as a ring
    // holds it (in the order spans ended) on thread "file", and the same
    // spans shuffled on thread "sorted": rtconv walks the first straight from
    // the dump and must sort the second.
    let dir = scratch("walk-paths");
    let dump = dir.join("paths.rtd");
    let (mut w, keys) = dump_start();
    let mut rng = ringtrace_format::test_util::XorShift(0x2545_F491_4F6C_DD1Du64);
    let mut next = move |m: u64| rng.below(m);
    let (mut now, mut open, mut ended) = (0u64, Vec::new(), Vec::new());
    while ended.len() < 5_000 {
        now += 1 + next(50);
        if open.is_empty() || (next(2) == 0 && open.len() < 30) {
            open.push((keys[next(4) as usize], now));
        } else {
            let (key, enter) = open.pop().unwrap();
            ended.push(r(key, enter, now));
        }
    }
    let mut shuffled = ended.clone();
    for i in (1..shuffled.len()).rev() {
        shuffled.swap(i, next(i as u64 + 1) as usize);
    }
    ring(&mut w, 1, b"file", &ended);
    ring(&mut w, 2, b"sorted", &shuffled);
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();

    let out =
        run(&ringtrace_tests::binary("rtconv"), &["stats", "--per-thread", "--format", "json", dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let scopes: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (file, sorted) = (&scopes[0], &scopes[1]);
    assert_eq!((file["scope"].as_str(), sorted["scope"].as_str()), (Some("file"), Some("sorted")));
    assert_eq!(file["functions"].as_array().unwrap().len(), 4);
    assert_eq!(file["functions"], sorted["functions"]);
    assert_eq!(file["total_ns"], sorted["total_ns"]);
    // And the call trees.
    let out = run(
        &ringtrace_tests::binary("rtconv"),
        &["stats", "--tree", "--per-thread", "--format", "json", dump.to_str().unwrap()],
    );
    let trees: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(trees[0]["calls"], trees[1]["calls"]);
    assert!(!trees[0]["calls"].as_array().unwrap().is_empty());
    // And the Chrome events: both threads in start order, the same spans.
    let (code, json, _) = convert(&dump, &[]);
    assert_eq!(code, 0);
    let events = ringtrace_tests::parse_chrome(&json).events;
    let thread = |tid: u64| {
        events.iter().filter(|e| e.tid == tid).map(|e| (e.name.clone(), e.ts_ns, e.dur_ns)).collect::<Vec<_>>()
    };
    let (file, sorted) = (thread(1), thread(2));
    assert_eq!(file.len(), 5_000);
    assert!(file.windows(2).all(|w| w[0].1 <= w[1].1), "start order");
    assert_eq!(file, sorted);
}

#[test]
fn an_exit_before_its_enter_is_reported_and_the_rest_still_converts() {
    let dir = scratch("backwards");
    let dump = dir.join("backwards.rtd");
    let (mut w, keys) = dump_start();
    // parse's counter went back (exit 900 < enter 1000); read and request are sound.
    ring(&mut w, 1, b"t", &[r(keys[2], 100, 200), r(keys[1], 1_000, 900), r(keys[0], 0, 5_000)]);
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    for format in [&["-f", "chrome"][..], &["-f", "ftrace"], &["-f", "folded"], &["-f", "systrace"]] {
        let (code, _, stderr) = convert(&dump, format);
        assert_eq!((code, stderr.len()), (0, 1), "{format:?}: {stderr:?}");
        assert!(stderr[0].contains("1 span(s) end before they start (counter went backwards)"), "{stderr:?}");
    }
    let (_, json, _) = convert(&dump, &[]);
    let events = ringtrace_tests::parse_chrome(&json).events;
    let span = |name: &str| events.iter().find(|e| e.name == name).map(|e| (e.ts_ns, e.dur_ns)).unwrap();
    assert_eq!(span("parse"), (1_000, 0), "shown with zero length");
    assert_eq!((span("read line"), span("handle request")), ((100, 100), (0, 5_000)));
}
