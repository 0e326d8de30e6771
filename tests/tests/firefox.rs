//! The Firefox Profiler's processed profile (`-f firefox`): its structure as the profiler's
//! published format has it, and its call tree's totals equal `rtconv stats`'s.

use std::collections::BTreeMap;

use ringtrace_tests::{binary, convert, record_workload_with, scratch, stats_rows};
use serde_json::Value;

/// Per function: (running ns, self ns) over every thread of a processed profile, from its
/// samples as the profiler's call tree counts them (weight × interval; a function's running
/// time counts once however deep it recurses).
fn call_tree_totals(profile: &Value) -> BTreeMap<String, (u64, u64)> {
    let interval_ns = profile["meta"]["interval"].as_f64().unwrap() * 1e6;
    assert_eq!(interval_ns.round(), 1.0, "traced: a sample's weight is ns");
    let mut totals: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for thread in profile["threads"].as_array().unwrap() {
        let strings = thread["stringArray"].as_array().unwrap();
        let (stacks, frames, funcs) = (&thread["stackTable"], &thread["frameTable"], &thread["funcTable"]);
        let name_of_stack = |s: usize| {
            let func = frames["func"][stacks["frame"][s].as_u64().unwrap() as usize].as_u64().unwrap() as usize;
            strings[funcs["name"][func].as_u64().unwrap() as usize].as_str().unwrap().to_string()
        };
        let samples = &thread["samples"];
        for (i, stack) in samples["stack"].as_array().unwrap().iter().enumerate() {
            let Some(mut s) = stack.as_u64().map(|s| s as usize) else { continue };
            let weight = samples["weight"][i].as_u64().unwrap();
            totals.entry(name_of_stack(s)).or_default().1 += weight;
            let mut seen = std::collections::BTreeSet::new();
            loop {
                let name = name_of_stack(s);
                if seen.insert(name.clone()) {
                    totals.entry(name).or_default().0 += weight;
                }
                match stacks["prefix"][s].as_u64() {
                    Some(p) => s = p as usize,
                    None => break,
                }
            }
        }
    }
    totals
}

#[test]
fn a_firefox_profile_has_the_published_tables_and_the_totals_of_rtconv_stats() {
    let dir = scratch("firefox");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--fib", "14"]);
    let (code, json, stderr) = convert(&dump, &["-f", "firefox"]);
    assert_eq!(code, 0, "{stderr:?}");
    let profile: Value = serde_json::from_str(&json).unwrap();
    // The processed profile format (firefox-devtools/profiler, docs-developer/
    // processed-profile-format.md): the meta versions, and each thread's tables, each with
    // its columns as long as its `length`.
    let meta = &profile["meta"];
    assert!(meta["version"].as_u64().is_some_and(|v| v >= 24), "{meta}");
    assert!(meta["preprocessedProfileVersion"].as_u64().is_some_and(|v| v >= 47), "{meta}");
    assert!(meta["startTime"].as_f64().is_some_and(|t| t > 1.6e12), "wall-clock start, ms since the epoch");
    let threads = profile["threads"].as_array().unwrap();
    let names: Vec<&str> = threads.iter().map(|t| t["name"].as_str().unwrap()).collect();
    // One per ring (the main thread is shown by the process's name).
    assert_eq!(threads.len(), 6, "{names:?}");
    for name in ["fib-0", "fib-1", "sleeper", "parser-0", "parser-1"] {
        assert!(names.contains(&name), "thread {name} in {names:?}");
    }
    for thread in threads {
        for (table, columns) in [
            ("samples", &["stack", "timeDeltas", "weight"][..]),
            ("stackTable", &["frame", "prefix"][..]),
            ("frameTable", &["func", "address", "inlineDepth", "category"][..]),
            ("funcTable", &["name", "isJS", "resource", "fileName"][..]),
            ("markers", &["name", "startTime", "endTime", "phase", "category", "data"][..]),
        ] {
            let t = &thread[table];
            let length = t["length"].as_u64().unwrap_or_else(|| panic!("{table}.length"));
            for column in columns {
                assert_eq!(t[*column].as_array().map(Vec::len), Some(length as usize), "{table}.{column}");
            }
        }
        assert_eq!(thread["samples"]["weightType"], "samples");
    }
    // The call tree's totals: rtconv stats's, to the nanosecond.
    let (rows, _) = stats_rows(&dump, &[]);
    let ours: BTreeMap<String, (u64, u64)> = rows
        .iter()
        .filter(|(_, r)| r["total_ns"].as_u64().unwrap() > 0)
        .map(|(f, r)| (f.clone(), (r["total_ns"].as_u64().unwrap(), r["self_ns"].as_u64().unwrap())))
        .collect();
    assert_eq!(call_tree_totals(&profile), ours, "per function (running, self) ns: the profile's, then stats'");
}
