//! Output budgets (`--max-bytes`): every timeline format stays within its budget, its size model
//! gives the bytes actually written, what is left out is exactly what `-t` at the chosen
//! threshold leaves out, and that threshold is the smallest that fits.

use std::path::Path;

use ringtrace_tests::{binary, convert, record_workload_with, rtconv_run, scratch};
use rtconv::convert::{Budget, BudgetOutcome, Format};
use rtconv::io::{Once, StartOver};
use rtconv::model::Filter;
use rtconv::render::chrome;

/// The timeline formats, with the name a test gives each.
fn formats() -> Vec<(&'static str, Format)> {
    let be = chrome::Options { begin_end: true, args: true };
    vec![
        ("chrome", Format::Chrome(chrome::Options::default())),
        ("chrome-be-args", Format::Chrome(be)),
        ("perfetto", Format::Perfetto),
        ("ftrace", Format::Ftrace),
        ("systrace", Format::Systrace),
    ]
}

/// Converts `dump` into `format` within `max_bytes` (uncompressed), in process: the output, what
/// the budget did, and the spans the render's threshold left out. Converted twice: to an output
/// that can start over (every span is written first where a sample says they fit) and to one
/// that cannot (as a pipe: the size model alone), which must write the same bytes; the outcome
/// is the first's, its `predicted` the model's.
fn within(dump: &Path, format: Format, filter: &Filter, max_bytes: u64) -> (Vec<u8>, BudgetOutcome, u64) {
    let bytes = std::fs::read(dump).unwrap();
    let budget = Budget { max_bytes, gzip: false };
    let opts = rtconv::symbolize::Options::default();
    let cache = rtconv::symbolize::Cache::default();
    let convert = |out: &mut dyn StartOver| {
        let input = rtconv::convert::Input::new(dump, &bytes, &opts, filter, &cache);
        let report =
            rtconv::convert::convert_within(input, format, budget, out).unwrap_or_else(|e| panic!("{max_bytes}: {e}"));
        assert!(!report.degraded(), "{:?}", report.diagnostics);
        report
    };
    let (mut first, mut model) = (Vec::new(), Once(Vec::new()));
    let (tried, said) = (convert(&mut first), convert(&mut model));
    assert!(first == model.0, "{format:?} at {max_bytes}: the same output either way");
    assert_eq!(tried.filtered, said.filtered, "{format:?} at {max_bytes}");
    let (outcome, by_model) = (tried.budget.expect("a budget outcome"), said.budget.expect("a budget outcome"));
    assert_eq!((outcome.cut, outcome.written), (by_model.cut, by_model.written), "{format:?} at {max_bytes}");
    (first, BudgetOutcome { predicted: by_model.predicted, ..outcome }, tried.filtered.duration)
}

/// As [`within`], without a budget, keeping what `filter` keeps.
fn filtered(dump: &Path, format: Format, filter: &Filter) -> Vec<u8> {
    let bytes = std::fs::read(dump).unwrap();
    let mut out = Vec::new();
    let (opts, cache) = (rtconv::symbolize::Options::default(), rtconv::symbolize::Cache::default());
    rtconv::convert::convert_bytes(rtconv::convert::Input::new(dump, &bytes, &opts, filter, &cache), format, &mut out)
        .unwrap();
    out
}

/// What an output says beyond its header and metadata: its span events or lines, for comparing
/// a cut output with a `-t` one.
fn spans_of(name: &str, output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    match name {
        n if n.starts_with("chrome") => {
            let json: serde_json::Value = serde_json::from_slice(output).unwrap();
            json["traceEvents"].to_string()
        }
        _ => text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n"),
    }
}

#[test]
fn every_timeline_format_stays_within_its_budget_as_its_size_model_says() {
    let dir = scratch("budget");
    // Six threads: recursion, nesting three deep, sleeps; spans with arguments.
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--fib", "17"]);
    let none = Filter::default();
    for (name, format) in formats() {
        let (whole_out, whole, _) = within(&dump, format, &none, u64::MAX);
        assert_eq!((whole.cut, whole.written), (None, whole_out.len() as u64), "{name}: a budget it fits");
        // Exact: Perfetto's model may count a byte more per key and thread (a first use's length).
        let slack = if name == "perfetto" { 6 * 40 } else { 0 };
        assert!(
            whole.predicted >= whole.written && whole.predicted - whole.written <= slack,
            "{name}: the model said {} bytes for the whole output, {} were written",
            whole.predicted,
            whole.written
        );
        assert_eq!(whole_out, filtered(&dump, format, &none), "{name}: a budget it fits changes nothing");
        // Every span's duration, from the whole Chrome JSON (its `dur` in ns): the thresholds a
        // budget can choose between.
        let durations: Vec<i64> = {
            let whole_json = filtered(&dump, Format::Chrome(chrome::Options::default()), &none);
            ringtrace_tests::parse_chrome(std::str::from_utf8(&whole_json).unwrap())
                .events
                .iter()
                .map(|e| e.dur_ns)
                .collect()
        };
        let (mut thresholds, mut floors) = (Vec::new(), 0);
        for fraction in [0.9, 0.6, 0.3, 0.1, 0.03, 0.005] {
            let max = (whole.written as f64 * fraction) as u64;
            let (out, outcome, left_by_t) = within(&dump, format, &none, max);
            let cut = outcome.cut.unwrap_or_else(|| panic!("{name} at {max}: something left out"));
            // The count the output and the note state is the spans the threshold left out.
            assert_eq!(cut.left_out, left_by_t, "{name} at {max}: spans left out");
            assert_eq!(outcome.written, out.len() as u64, "{name} at {max}");
            assert!(outcome.written <= max, "{name}: {} bytes written for a budget of {max}", outcome.written);
            assert!(
                outcome.predicted >= outcome.written && outcome.predicted - outcome.written <= slack,
                "{name} at {max}: the model said {} bytes, {} were written",
                outcome.predicted,
                outcome.written
            );
            // What was left out is what `-t` at the threshold leaves out.
            let t = Filter { min_duration_ns: Some(cut.threshold_ns), ..Filter::default() };
            let by_t = filtered(&dump, format, &t);
            if name == "perfetto" {
                let note = format!("ringtrace: {}", cut.describe());
                assert!(out.windows(note.len()).any(|w| w == note.as_bytes()), "{name}: the note");
                assert!(
                    out.len() > by_t.len() && out.len() - by_t.len() < note.len() + 32,
                    "{name}: only the note added"
                );
            } else {
                assert_eq!(spans_of(name, &out), spans_of(name, &by_t), "{name} at {max}: the spans -t keeps");
            }
            // The smallest threshold that fits: keeping the next shorter duration too would not.
            // Its output would take at most `more`: the `-t` output at that duration and the cut's
            // statement as it is at this threshold (at a shorter one, with fewer left out, its
            // numbers have no more digits). Perfetto's model may err high by its slack.
            let statement = out.len() as i64 - by_t.len() as i64;
            if let Some(&shorter) = durations.iter().filter(|&&d| (d as u64) < cut.threshold_ns).max() {
                let t = Filter { min_duration_ns: Some(shorter as u64), ..Filter::default() };
                let more = filtered(&dump, format, &t).len() as i64 + statement;
                assert!(
                    more + slack as i64 > max as i64,
                    "{name} at {max}: keeping the spans of {shorter} ns too takes at most {more} bytes, which fits; \
                     the threshold chosen, {} ns, is not the smallest",
                    cut.threshold_ns
                );
            }
            // Spans under a floor were not costed: the threshold lies above it, or at it where the
            // spans' fewest bytes proved every shorter one out (Perfetto's raised floor).
            if let Some(floor) = outcome.floor_ns {
                assert!(floor <= cut.threshold_ns, "{name} at {max}: a floor of {floor} ns, {cut:?}");
                floors += 1;
            }
            thresholds.push(cut.threshold_ns);
        }
        assert!(thresholds.windows(2).all(|w| w[0] <= w[1]), "{name}: a smaller budget, a longer threshold");
        assert!(floors >= 2, "{name}: the smaller budgets decode only the spans above a floor");
    }
}

#[test]
fn the_command_line_states_the_cut_in_the_output_and_on_stderr() {
    let dir = scratch("budget-cli");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--fib", "15"]);
    let (code, whole, _) = convert(&dump, &[]);
    assert_eq!(code, 0);
    let max = whole.len() / 5;
    let out = dir.join("cut.json");
    let (code, _, stderr) =
        rtconv_run(&["convert", dump.to_str().unwrap(), "-o", out.to_str().unwrap(), "--max-bytes", &max.to_string()]);
    assert_eq!(code, 0, "{stderr:?}");
    let written = std::fs::read(&out).unwrap();
    assert!(written.len() <= max);
    let json: serde_json::Value = serde_json::from_slice(&written).unwrap();
    let budget = &json["metadata"]["ringtrace"]["budget"];
    assert_eq!(budget["max_bytes"], max as u64);
    let threshold = budget["threshold_ns"].as_u64().unwrap();
    let left_out = budget["left_out"].as_u64().unwrap();
    let note = stderr.iter().find(|l| l.contains("--max-bytes")).expect("a note");
    assert!(
        note.starts_with("rtconv: note: ")
            && note.contains(&format!("left out {left_out} span(s) shorter than {threshold} ns")),
        "{note}"
    );
    // The spans kept and left out add up to the dump's.
    let kept = json["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count() as u64;
    let all = ringtrace_tests::parse_chrome(&whole).events.len() as u64;
    assert_eq!(kept + left_out, all);
    // A budget it fits: a file gets every span at once (no size model), stdout through the model;
    // both are the conversion without a budget, and say so.
    let fits = dir.join("fits.json");
    let big = (2 * whole.len()).to_string();
    let (code, _, stderr) =
        rtconv_run(&["convert", dump.to_str().unwrap(), "-o", fits.to_str().unwrap(), "--max-bytes", &big]);
    assert_eq!(code, 0, "{stderr:?}");
    assert!(std::fs::read(&fits).unwrap() == whole.as_bytes(), "the file");
    assert!(stderr.iter().any(|l| l.contains(&format!("every span fits --max-bytes {big}: {} bytes", whole.len()))));
    let (code, piped, stderr) = rtconv_run(&["convert", dump.to_str().unwrap(), "--max-bytes", &big]);
    assert_eq!((code, piped == whole), (0, true), "{stderr:?}");
    // Compressed: the budget is of the .gz file's bytes.
    let gz = dir.join("cut.json.gz");
    let small = whole.len() / 40;
    let (code, _, stderr) =
        rtconv_run(&["convert", dump.to_str().unwrap(), "-o", gz.to_str().unwrap(), "--max-bytes", &small.to_string()]);
    assert_eq!(code, 0, "{stderr:?}");
    let compressed = std::fs::read(&gz).unwrap();
    assert!(compressed.len() <= small, "{} > {small}", compressed.len());
    let mut text = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&compressed[..]), &mut text).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["metadata"]["ringtrace"]["budget"]["max_bytes"], small as u64);
    // batch: each dump's output within the budget.
    let out_dir = dir.join("batch");
    let (code, _, stderr) = rtconv_run(&[
        "batch",
        dump.to_str().unwrap(),
        "-o",
        out_dir.to_str().unwrap(),
        "-f",
        "perfetto",
        "--max-bytes",
        &max.to_string(),
        "-q",
    ]);
    assert_eq!(code, 0, "{stderr:?}");
    let batch_out = std::fs::read(out_dir.join("w.perfetto-trace")).unwrap();
    assert!(!batch_out.is_empty() && batch_out.len() <= max, "{} bytes", batch_out.len());
    // Within a budget it fits, each output is the conversion without one.
    let (code, _, stderr) =
        rtconv_run(&["batch", dump.to_str().unwrap(), "-o", out_dir.to_str().unwrap(), "--max-bytes", &big, "-q"]);
    assert_eq!(code, 0, "{stderr:?}");
    assert!(std::fs::read(out_dir.join("w.json")).unwrap() == whole.as_bytes(), "batch, every span fitting");
    // Too small for even the headers: one line, exit 1.
    let (code, _, stderr) = rtconv_run(&["convert", dump.to_str().unwrap(), "--max-bytes", "100"]);
    assert_eq!((code, stderr.len()), (1, 1), "{stderr:?}");
    assert!(stderr[0].contains("--max-bytes 100 is less than the output takes without any span"), "{stderr:?}");
    // A summary format has no budget.
    let (code, _, stderr) = rtconv_run(&["convert", dump.to_str().unwrap(), "-f", "folded", "--max-bytes", "1M"]);
    assert_eq!(code, 2, "{stderr:?}");
    // Systrace text cannot mark a span cut at a part's edge: no split, and why, in one line.
    let parts = dir.join("s.systrace.txt");
    let (code, _, stderr) =
        rtconv_run(&["convert", dump.to_str().unwrap(), "-o", parts.to_str().unwrap(), "--split", "1M"]);
    assert_eq!((code, stderr.len()), (2, 1), "{stderr:?}");
    assert!(stderr[0].contains("systrace text has no place to mark a span cut"), "{stderr:?}");
    assert!(!parts.exists() && !dir.join("s.systrace-0001.txt").exists());
}

/// Per (thread, function): the spans' summed duration in ns and their count, from Chrome JSON.
fn durations(json: &[u8]) -> std::collections::BTreeMap<(u64, String), (i64, u64)> {
    let json: serde_json::Value = serde_json::from_slice(json).unwrap();
    let mut sums = std::collections::BTreeMap::new();
    for e in json["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X") {
        let ns = (e["dur"].as_f64().unwrap() * 1000.0).round() as i64;
        let entry = sums.entry((e["tid"].as_u64().unwrap(), e["name"].as_str().unwrap().to_string())).or_insert((0, 0));
        entry.0 += ns;
        entry.1 += u64::from(e["args"]["clipped"].is_null());
    }
    sums
}

#[test]
fn split_parts_each_open_alone_and_together_hold_every_span_once() {
    let dir = scratch("budget-split");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--fib", "16"]);
    let (code, whole, _) = convert(&dump, &[]);
    assert_eq!(code, 0);
    let whole_sums = durations(whole.as_bytes());
    for split in [format!("{}", whole.len() / 7), "3ms".to_string()] {
        let out = dir.join(format!("parts-{split}.json"));
        let (code, _, stderr) =
            rtconv_run(&["convert", dump.to_str().unwrap(), "-o", out.to_str().unwrap(), "--split", &split]);
        assert_eq!(code, 0, "{stderr:?}");
        let mut sums: std::collections::BTreeMap<(u64, String), (i64, u64)> = Default::default();
        let mut parts = 0;
        let mut clipped = 0;
        for i in 1.. {
            let Ok(part) = std::fs::read(dir.join(format!("parts-{split}-{i:04}.json"))) else { break };
            parts += 1;
            if !split.ends_with("ms") {
                assert!(part.len() <= whole.len() / 7, "part {i}: {} bytes", part.len());
            }
            // Each part alone: its own process and thread records.
            let json: serde_json::Value = serde_json::from_slice(&part).unwrap();
            let events = json["traceEvents"].as_array().unwrap();
            assert!(events.iter().any(|e| e["name"] == "process_name"), "part {i}: process record");
            let tids: std::collections::BTreeSet<_> =
                events.iter().filter(|e| e["ph"] == "X").map(|e| e["tid"].as_u64().unwrap()).collect();
            for tid in tids {
                assert!(events.iter().any(|e| e["name"] == "thread_name" && e["tid"] == tid), "part {i}: thread {tid}");
            }
            clipped += events.iter().filter(|e| !e["args"]["clipped"].is_null()).count();
            for (k, (ns, unclipped)) in durations(&part) {
                let s = sums.entry(k).or_insert((0, 0));
                s.0 += ns;
                s.1 += unclipped;
            }
        }
        assert!(parts > 2 && clipped > 0, "{split}: {parts} parts, {clipped} clipped spans");
        // Every span's time once: summed over the parts, each function's time on each thread is
        // the whole's; a span no cut crossed is in one part whole.
        let expect: std::collections::BTreeMap<_, _> = whole_sums.iter().map(|(k, v)| (k.clone(), v.0)).collect();
        let got: std::collections::BTreeMap<_, _> = sums.iter().map(|(k, v)| (k.clone(), v.0)).collect();
        assert_eq!(got, expect, "{split}: per thread and function, the parts' time is the whole's");
        for (k, (_, whole_count)) in &whole_sums {
            assert!(sums[k].1 <= *whole_count, "{k:?}");
        }
    }
    // ftrace text: by duration, each part holds the spans of the Chrome JSON part of the same
    // window, clipped the same (`/* clipped: start */`); by size, each part fits.
    let whole_spans = ringtrace_tests::parse_ftrace(&convert(&dump, &["-f", "ftrace"]).1).len();
    let chrome_part = |split: &str, i: usize| std::fs::read(dir.join(format!("parts-{split}-{i:04}.json"))).ok();
    for split in [format!("{}", whole.len() / 10), "3ms".to_string()] {
        let out = dir.join(format!("parts-{split}.txt"));
        let (code, _, stderr) = rtconv_run(&[
            "convert",
            dump.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--split",
            &split,
            "-f",
            "ftrace",
        ]);
        assert_eq!(code, 0, "{stderr:?}");
        let (mut parts, mut clipped, mut spans) = (0, 0, 0);
        for i in 1.. {
            let Ok(part) = std::fs::read_to_string(dir.join(format!("parts-{split}-{i:04}.txt"))) else { break };
            parts += 1;
            assert!(part.starts_with("# tracer: function_graph\n"), "{split} part {i}: its own header");
            let got = ringtrace_tests::parse_ftrace(&part);
            clipped += got.iter().filter(|s| s.clipped.is_some()).count();
            spans += got.len();
            if split.ends_with("ms") {
                let json: serde_json::Value = serde_json::from_slice(&chrome_part(&split, i).unwrap()).unwrap();
                let mut expected: Vec<_> = json["traceEvents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|e| e["ph"] == "X")
                    .map(|e| {
                        let ns = ringtrace_tests::as_printed((e["dur"].as_f64().unwrap() * 1000.0).round() as i64);
                        let how = e["args"]["clipped"].as_str().map(str::to_string);
                        (e["tid"].as_u64().unwrap(), e["name"].as_str().unwrap().to_string(), ns, how)
                    })
                    .collect();
                expected.sort();
                let mut got: Vec<_> = got.into_iter().map(|s| (s.tid, s.name, s.ns, s.clipped)).collect();
                got.sort();
                assert_eq!(got, expected, "{split} part {i}: the Chrome JSON part's spans");
            } else {
                assert!(part.len() <= whole.len() / 10, "{split} part {i}: {} bytes", part.len());
            }
        }
        if split.ends_with("ms") {
            assert!(chrome_part(&split, parts + 1).is_none(), "{split}: as many parts as the Chrome JSON");
        }
        assert!(parts > 2 && clipped > 0 && spans >= whole_spans, "{split}: {parts} parts, {clipped} clipped");
    }
}
