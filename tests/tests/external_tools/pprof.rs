//! `-f pprof` read by `go tool pprof` (Debian's golang-go): per function,
//! flat self time, cumulative time and flat calls equal `rtconv stats`';
//! every trace (`-traces`) is a collapsed stack of `-f folded` with its
//! weight; the mapping carries the build-id.

use std::collections::BTreeMap;
use std::path::Path;

use ringtrace_tests::{binary, convert, record_workload_with, rtconv_ok, scratch, stats_rows, tool};

/// `go tool pprof ARGS PROFILE`'s stdout.
fn pprof(profile: &Path, args: &[&str]) -> String {
    let out = tool("go").arg("tool").arg("pprof").args(args).arg(profile).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// `-top` rows: function -> (flat, cum), in the sample type's unit (`-unit=ns` for times).
fn top(profile: &Path, sample: &str) -> BTreeMap<String, (u64, u64)> {
    let text = pprof(
        profile,
        &["-top", "-nodefraction=0", "-nodecount=10000", "-unit=ns", &format!("-sample_index={sample}")],
    );
    let number = |s: &str| s.trim_end_matches("ns").parse::<u64>().unwrap();
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[5..].join(" "), (number(f[0]), number(f[3])))
        })
        .collect()
}

#[test]
fn go_tool_pprof_reads_what_stats_says() {
    let dir = scratch("pprof");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "4", "--sleep-ms", "2"]);
    let profile = dir.join("w.pb.gz");
    rtconv_ok(&["convert", dump.to_str().unwrap(), "-o", profile.to_str().unwrap()]);
    assert_eq!(&std::fs::read(&profile).unwrap()[..2], [0x1f, 0x8b], "gzipped once");
    let (rows, _) = stats_rows(&dump, &[]);
    let times = top(&profile, "self");
    let calls = top(&profile, "calls");
    // `-top` leaves out a node whose flat and cum are both 0 in the sample index shown: a span
    // that took 0 ns (the workload's empty `main done` scope, when its two reads fall in one
    // tick) is among the calls and not among the times.
    let timed = |name: &&String| rows[*name]["total_ns"].as_u64().unwrap() > 0;
    assert_eq!(times.keys().collect::<Vec<_>>(), rows.keys().filter(timed).collect::<Vec<_>>());
    assert_eq!(calls.keys().collect::<Vec<_>>(), rows.keys().collect::<Vec<_>>());
    for (name, row) in &rows {
        let (flat, cum) = times.get(name).copied().unwrap_or((0, 0));
        assert_eq!(flat, row["self_ns"].as_u64().unwrap(), "{name} self");
        assert_eq!(cum, row["total_ns"].as_u64().unwrap(), "{name} total");
        assert_eq!(calls[name].0, row["calls"].as_u64().unwrap(), "{name} calls");
    }
    // -traces: each sample a thread's call path with its self time, as the collapsed stacks have them.
    let traces = pprof(&profile, &["-traces", "-sample_index=self", "-unit=ns"]);
    let mut from_pprof: Vec<String> = Vec::new();
    for block in traces.split("-----------+-------------------------------------------------------").skip(1) {
        let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
        let Some(thread) = lines.first().and_then(|l| l.trim().strip_prefix("thread:")) else { continue };
        // "8328120ns   sleep", or "0   main done": pprof prints a zero without its unit.
        let (weight, leaf) = lines[1].trim().split_once(char::is_whitespace).unwrap();
        let weight = weight.trim_end_matches("ns");
        // A path of 0 ns self time is a sample of pprof's; the collapsed stacks leave it out.
        if weight == "0" {
            continue;
        }
        let mut frames: Vec<&str> = vec![leaf.trim()];
        frames.extend(lines[2..].iter().map(|l| l.trim()));
        frames.push(thread.trim());
        frames.reverse();
        from_pprof.push(format!("{} {}", frames.join(";"), weight));
    }
    from_pprof.sort();
    let (_, folded, _) = convert(&dump, &["-f", "folded"]);
    let mut from_folded: Vec<String> = folded.lines().map(str::to_owned).collect();
    from_folded.sort();
    assert_eq!(from_pprof, from_folded);
    // The mapping: the program's build-id, as `rtconv info` has it.
    let raw = pprof(&profile, &["-raw"]);
    let info: serde_json::Value =
        serde_json::from_str(&rtconv_ok(&["info", dump.to_str().unwrap(), "-f", "json"])).unwrap();
    let main = info[0]["modules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == binary("workload").to_str().unwrap())
        .unwrap();
    let build_id = main["build_id"].as_str().unwrap();
    assert!(!build_id.is_empty() && raw.contains(build_id), "{build_id} in\n{raw}");
}
