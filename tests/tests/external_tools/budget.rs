//! Output budgets and splits with the real consumers, on a whole-program trace of a real C
//! program: Lua (the `lua-src` crate's sources, built with `-finstrument-functions`) streamed
//! by the recorder while it runs a script, about 2 M spans. Its whole Chrome JSON is past what
//! speedscope was measured opening, and `rtconv` says so with the options that fit; cut by
//! `--max-bytes` it opens in speedscope (headless Chromium) with the per-thread and
//! per-function totals of `rtconv stats -t THRESHOLD`; its `--split` parts each open; and the
//! Perfetto parts decode with Perfetto's own schema, their slices summed equal to the whole's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ringtrace_tests::{binary, record_workload_with, rtconv_run, scratch, workspace_root};

use super::perfetto::slices;
use super::viewer::{speedscope, speedscope_and_stats};

/// Streams the instrumented Lua running `tests/c/budget.lua` into `dir/lua.rtd`.
fn record_lua(dir: &Path) -> PathBuf {
    let lib = PathBuf::from(env!("RINGTRACE_TESTS_LUA_LIB_DIR")).join("liblua5.4.a");
    let include = format!("-I{}", env!("RINGTRACE_TESTS_LUA_INCLUDE_DIR"));
    let driver = workspace_root().join("tests/c/lua_driver.c");
    let exe = crate::longjmp::link(dir, "lua", &[driver, lib], &[&include], false);
    let dump = dir.join("lua.rtd");
    let out = Command::new(&exe)
        .arg(workspace_root().join("tests/c/budget.lua"))
        .env("RINGTRACE_STREAM", &dump)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    dump
}

/// `rtconv ARGS`, which must succeed: its stderr lines.
fn rtconv_ok_stderr(args: &[&str]) -> Vec<String> {
    let (code, _, stderr) = rtconv_run(args);
    assert_eq!(code, 0, "rtconv {args:?}: {stderr:?}");
    stderr
}

#[test]
fn a_budgeted_whole_program_trace_opens_in_speedscope_with_the_totals_of_stats_at_its_threshold() {
    let dir = scratch("budget-lua");
    let dump = record_lua(&dir);
    let d = dump.to_str().unwrap();
    // The whole trace: past what speedscope opens, and rtconv says what would fit.
    let whole = dir.join("whole.json");
    let stderr = rtconv_ok_stderr(&["convert", d, "-o", whole.to_str().unwrap(), "--chrome-events", "be"]);
    let whole_bytes = std::fs::metadata(&whole).unwrap().len();
    assert!(whole_bytes > rtconv::viewers::SPEEDSCOPE.max_bytes, "{whole_bytes} bytes: a trace past speedscope's");
    let note = stderr.iter().find(|l| l.contains("more than speedscope opens")).unwrap_or_else(|| panic!("{stderr:?}"));
    assert!(note.starts_with("rtconv: note: ") && note.contains("--max-bytes 85M") && note.contains("--split 85M"));
    std::fs::remove_file(&whole).unwrap();
    // A batch of it and of a small dump, within a budget every span fits, says so once, naming the
    // largest output, its command with the budget that fits in place of the one given (no --split in batch).
    let small = record_workload_with(&binary("workload"), &dir, "small.rtd", &[]);
    let out_dir = dir.join("batch");
    let (o, s) = (out_dir.to_str().unwrap(), small.to_str().unwrap());
    let args = ["batch", d, s, "-o", o, "-f", "chrome", "--chrome-events", "be", "--max-bytes", "200M", "-q"];
    let stderr = rtconv_ok_stderr(&args);
    let notes: Vec<&String> = stderr.iter().filter(|l| l.contains("more than speedscope opens")).collect();
    let largest = out_dir.join("lua.json");
    let line = "rtconv: note: 1 output(s) take more than speedscope opens about 85M";
    assert!(notes.len() == 1 && notes[0].starts_with(line), "{stderr:?}");
    let bytes = std::fs::metadata(&largest).unwrap().len();
    assert!(notes[0].contains(&format!("the largest, {}, takes {bytes} bytes", largest.display())), "{notes:?}");
    let command = format!("`rtconv batch {d} {s} -o {o} -f chrome --chrome-events be -q --max-bytes 85M` keeps");
    assert!(notes[0].contains(&command) && !notes[0].contains("--split"), "{notes:?}");
    std::fs::remove_dir_all(&out_dir).unwrap();
    // Cut to 1 MiB: speedscope opens it, and shows what stats shows with -t at the threshold.
    let cut = dir.join("cut.json");
    let stderr =
        rtconv_ok_stderr(&["convert", d, "-o", cut.to_str().unwrap(), "--chrome-events", "be", "--max-bytes", "1M"]);
    assert!(std::fs::metadata(&cut).unwrap().len() <= 1 << 20);
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&cut).unwrap()).unwrap();
    let threshold = json["metadata"]["ringtrace"]["budget"]["threshold_ns"].as_u64().expect("a threshold");
    assert!(stderr.iter().any(|l| l.contains(&format!("shorter than {threshold} ns"))), "{stderr:?}");
    let (theirs, ours) = speedscope_and_stats(&cut, &dump, &["-t", &format!("{threshold}ns")]);
    assert!(ours.len() > 20, "functions compared: {ours:?}");
    assert_eq!(theirs, ours, "per thread and function (total, self) ns: speedscope, then rtconv stats -t");
    // The spans of 2 µs and more, split in three or more parts: the first and the last each open alone.
    let filtered = dir.join("filtered.json");
    rtconv_ok_stderr(&["convert", d, "-o", filtered.to_str().unwrap(), "--chrome-events", "be", "-t", "2us"]);
    let size = std::fs::metadata(&filtered).unwrap().len() / 3;
    let parts = dir.join("parts.json");
    let split = size.to_string();
    rtconv_ok_stderr(&[
        "convert",
        d,
        "-o",
        parts.to_str().unwrap(),
        "--chrome-events",
        "be",
        "--split",
        &split,
        "-t",
        "2us",
    ]);
    let names: Vec<PathBuf> =
        (1..).map(|i| dir.join(format!("parts-{i:04}.json"))).take_while(|p| p.exists()).collect();
    assert!(names.len() >= 3, "{names:?}");
    for part in [names.first().unwrap(), names.last().unwrap()] {
        assert!(std::fs::metadata(part).unwrap().len() <= size);
        let seen = speedscope(part, &["--load-only"]);
        assert_eq!(seen["warnings"], serde_json::Value::Array(vec![]), "{}", part.display());
        assert!(seen["loaded_ms"].is_u64(), "{}: {seen}", part.display());
    }
}

#[test]
fn perfetto_parts_decode_with_perfetto_and_sum_to_the_whole() {
    let dir = scratch("budget-lua-perfetto");
    let dump = record_lua(&dir);
    let d = dump.to_str().unwrap();
    // The spans of 2 µs and more (Python decodes every packet): whole, and in parts of a fifth.
    let whole = dir.join("whole.perfetto-trace");
    rtconv_ok_stderr(&["convert", d, "-o", whole.to_str().unwrap(), "-t", "2us"]);
    let size = std::fs::metadata(&whole).unwrap().len() / 5;
    let parts = dir.join("parts.perfetto-trace");
    rtconv_ok_stderr(&["convert", d, "-o", parts.to_str().unwrap(), "-t", "2us", "--split", &size.to_string()]);
    let sum = |slices: &[serde_json::Value], into: &mut BTreeMap<(u64, String), i64>| {
        for s in slices {
            *into.entry((s[0].as_u64().unwrap(), s[1].as_str().unwrap().to_string())).or_default() +=
                s[3].as_i64().unwrap();
        }
    };
    let mut expected = BTreeMap::new();
    sum(&slices(&whole), &mut expected);
    let mut got = BTreeMap::new();
    let mut count = 0;
    for i in 1.. {
        let part = dir.join(format!("parts-{i:04}.perfetto-trace"));
        if !part.exists() {
            break;
        }
        assert!(std::fs::metadata(&part).unwrap().len() <= size, "{}", part.display());
        sum(&slices(&part), &mut got);
        count += 1;
    }
    assert!(count >= 3 && expected.len() > 10, "{count} parts, {} functions", expected.len());
    assert_eq!(got, expected, "per thread and function, the parts' slices last as long as the whole's");
}
