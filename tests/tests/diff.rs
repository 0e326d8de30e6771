//! `rtconv diff`: a real slowdown (the workload's sleeps, 1 ms against 10 ms)
//! is called one and gates `--fail-on`; a dump against itself changes
//! nothing; the significance test's p-values equal scipy's on hand-built
//! dumps of known durations; the differential flame graph colours what grew
//! red and what shrank blue.

use std::path::Path;

use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::{IoSink, Record, RingInfo, Writer};
use ringtrace_tests::{binary, record_workload_with, rtconv_run, scratch};

/// `rtconv diff BASE NEW ARGS…`: exit status, stdout, stderr.
pub(crate) fn diff(base: &Path, new: &Path, args: &[&str]) -> (i32, String, String) {
    let mut all = vec!["diff", base.to_str().unwrap(), new.to_str().unwrap()];
    all.extend_from_slice(args);
    let (code, stdout, stderr) = rtconv_run(&all);
    (code, stdout, stderr.join("\n"))
}

/// The JSON rows by function.
pub(crate) fn rows(json: &str) -> std::collections::BTreeMap<String, serde_json::Value> {
    let all: Vec<serde_json::Value> = serde_json::from_str(json).unwrap();
    all.into_iter().map(|r| (r["function"].as_str().unwrap().to_string(), r)).collect()
}

#[test]
fn a_real_slowdown_is_called_one_and_fails_the_gate() {
    let dir = scratch("diff-workload");
    let base = record_workload_with(&binary("workload"), &dir, "base.rtd", &["--rounds", "12", "--sleep-ms", "1"]);
    // Ten times as long: a loaded machine wakes a 1 ms sleep late, by 3 ms and more (a CI run saw
    // 4.06 ms), so the two sides' sleeps must lie far enough apart not to mingle.
    let new = record_workload_with(&binary("workload"), &dir, "new.rtd", &["--rounds", "12", "--sleep-ms", "10"]);
    let (code, out, stderr) = diff(&base, &new, &["-f", "json"]);
    assert_eq!(code, 0, "{stderr}");
    let by_name = rows(&out);
    let sleep = &by_name["sleep"];
    assert_eq!(sleep["change"], "slower", "{sleep}");
    assert!(sleep["p_value"].as_f64().unwrap() < 1e-3, "{sleep}");
    assert_eq!((sleep["base"]["calls"].as_u64(), sleep["new"]["calls"].as_u64()), (Some(12), Some(12)));
    // Each new sleep lasted at least 10 ms, each base one at least 1 ms.
    assert!(
        sleep["new"]["p50_ns"].as_u64().unwrap() >= 10_000_000
            && sleep["base"]["p50_ns"].as_u64().unwrap() >= 1_000_000
    );
    // The largest change in self time comes first.
    let order: Vec<String> = serde_json::from_str::<Vec<serde_json::Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["function"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(order[0], "sleep");
    // Calls did not change anywhere: the same work on both sides.
    assert!(by_name.values().all(|r| r["delta"]["calls"]["delta"] == 0), "{by_name:?}");
    // The gate: the sleeps' median grew by far more than half, and significantly.
    let (code, _, stderr) = diff(&base, &new, &["--fail-on", "p50>50%", "--fail-on", "calls>0"]);
    assert_eq!(code, 4, "{stderr}");
    assert!(stderr.contains("rtconv: error: sleep: p50 ") && stderr.contains("crosses --fail-on p50>50%"), "{stderr}");
    assert!(!stderr.contains("calls>0"), "{stderr}");
    // Filters apply to both sides.
    let (_, out, _) = diff(&base, &new, &["-f", "json", "-F", "sleep"]);
    assert_eq!(rows(&out).keys().collect::<Vec<_>>(), ["sleep"]);
    // A dump against a copy of itself: nothing changed, nothing fails.
    let copy = dir.join("copy.rtd");
    std::fs::copy(&base, &copy).unwrap();
    let (code, out, stderr) = diff(&base, &copy, &["-f", "json", "--fail-on", "self>0%", "--fail-on", "calls>0"]);
    assert_eq!(code, 0, "{stderr}");
    for (name, row) in rows(&out) {
        assert_eq!(row["change"], "~", "{name}");
        assert_eq!(row["p_value"], 1.0, "{name}");
    }
    // A side with no dump that can be read: one line naming it, no table, exit 1.
    let missing = dir.join("missing.rtd");
    let (code, out, stderr) = diff(&missing, &new, &["-q"]);
    assert_eq!((code, out.as_str()), (1, ""), "{stderr}");
    assert!(stderr.contains("diff: BASE (") && stderr.contains("has no dump that could be read"), "{stderr}");
    // The table and CSV say the same.
    let (_, table, _) = diff(&base, &new, &[]);
    let sleep_line = table.lines().find(|l| l.starts_with("sleep ")).unwrap();
    assert!(sleep_line.ends_with("slower (p < 0.001)"), "{sleep_line}");
    let (_, csv, _) = diff(&base, &new, &["-f", "csv"]);
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let line: Vec<&str> = csv.lines().find(|l| l.starts_with("sleep,")).unwrap().split(',').collect();
    let field = |name: &str| line[header.iter().position(|h| *h == name).unwrap()];
    assert_eq!(field("change"), "slower");
    assert_eq!(field("new_p50").parse::<u64>().unwrap(), sleep["new"]["p50_ns"].as_u64().unwrap());
}

/// A dump of one thread whose spans (all of the function `work`) last `durations` ns, back to back.
pub(crate) fn dump_of(path: &Path, durations: &[u64]) {
    let (mut w, keys): (Writer<IoSink<Vec<u8>>>, Vec<u64>) =
        DumpBuilder::new("bench").sites(0x10_000, &[("work", "src/work.rs", 1)]).start();
    let mut at = 1_000;
    let records: Vec<Record> = durations
        .iter()
        .map(|&d| {
            let r = Record { key: keys[0], enter: at, exit: at + d };
            at += d + 10;
            r
        })
        .collect();
    let n = records.len() as u64;
    let info =
        RingInfo { tid: 1, capacity: n.next_power_of_two(), written: n, dropped: 0, aux: 0, flags: 0, name: b"main" };
    w.ring(&info, &records, &[]).unwrap();
    std::fs::write(path, w.finish().unwrap().0).unwrap();
}

/// Durations below 2048 ns (which the histograms hold exactly), seeded.
pub(crate) fn durations(seed: u64, n: usize, low: u64, spread: u64) -> Vec<u64> {
    let mut rng = ringtrace_format::test_util::XorShift(seed | 1);
    (0..n).map(|_| low + rng.below(spread)).collect()
}

#[test]
fn the_differential_flame_graph_colours_growth_red_and_shrinkage_blue() {
    let dir = scratch("diff-flamegraph");
    let slow = record_workload_with(&binary("workload"), &dir, "slow.rtd", &["--rounds", "4", "--sleep-ms", "4"]);
    let fast = record_workload_with(&binary("workload"), &dir, "fast.rtd", &["--rounds", "4", "--sleep-ms", "1"]);
    // The fill of the `sleep` frame: (red, blue).
    let fill = |svg: &str| -> (u32, u32) {
        let at = svg.find("<title>sleep (").expect("a sleep frame");
        let rest = &svg[at..];
        let rgb = &rest[rest.find("fill=\"rgb(").unwrap() + 10..];
        let parts: Vec<u32> = rgb[..rgb.find(')').unwrap()].split(',').map(|p| p.trim().parse().unwrap()).collect();
        (parts[0], parts[2])
    };
    let svg = dir.join("grew.svg");
    let (code, _, stderr) = diff(&fast, &slow, &["-o", svg.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<?xml") && text.trim_end().ends_with("</svg>"));
    let (red, blue) = fill(&text);
    assert!(red > blue, "sleep grew: rgb({red}, _, {blue})");
    let (_, text, _) = diff(&slow, &fast, &["-f", "flamegraph"]);
    let (red, blue) = fill(&text);
    assert!(blue > red, "sleep shrank: rgb({red}, _, {blue})");
}
