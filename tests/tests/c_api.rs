//! C and C++ programs traced whole with `-finstrument-functions` and the
//! static library: exact call counts, demangled names from DWARF, nesting;
//! and calls that never return normally (exit, pthread_exit, longjmp,
//! recursion past the shadow stack).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use ringtrace_tests::{ChromeTrace, Event, compile_c, convert, fib_calls, parse_chrome, scratch, workspace_root};

fn source(name: &str) -> PathBuf {
    workspace_root().join("samples/c").join(name)
}

/// Runs `program args` with the hooks' dump going to `dump`.
fn record(program: &Path, args: &[&str], dump: &Path) -> String {
    let out = Command::new(program).args(args).env("RINGTRACE_DUMP", dump).output().unwrap();
    assert!(out.status.success(), "{}: {}", program.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn counts(trace: &ChromeTrace) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for e in &trace.events {
        *c.entry(e.name.clone()).or_default() += 1;
    }
    c
}

/// Each event's enclosing event's name on its thread (None at the top).
fn parents(trace: &ChromeTrace) -> Vec<(&Event, Option<&str>)> {
    let mut by_thread: HashMap<u64, Vec<&Event>> = HashMap::new();
    for e in &trace.events {
        by_thread.entry(e.tid).or_default().push(e);
    }
    let mut out = Vec::new();
    for events in by_thread.values() {
        let mut stack: Vec<&Event> = Vec::new();
        for &e in events {
            while stack.last().is_some_and(|p| p.ended_before(e)) {
                stack.pop();
            }
            if let Some(p) = stack.last() {
                assert!(e.end_ns() <= p.end_ns(), "{} overlaps {}", e.name, p.name);
            }
            out.push((e, stack.last().map(|p| p.name.as_str())));
            stack.push(e);
        }
    }
    out
}

#[test]
fn a_c_program_is_traced_whole_with_exact_counts_and_nesting() {
    let dir = scratch("c-whole");
    let exe = compile_c(&source("whole.c"), &dir.join("whole"), &["-finstrument-functions"]);
    let dump = dir.join("whole.rtd");
    assert_eq!(record(&exe, &["3", "12"], &dump), "3\n");
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let trace = parse_chrome(&json);
    let expected: BTreeMap<String, usize> = [
        ("fib", 3 * fib_calls(12) as usize),
        ("work", 3),
        ("worker", 3),
        ("leaf_add", 3 * 3 + 1),
        ("leaf_mul", 3 * 3),
        ("main", 2), // the function, and RINGTRACE_SCOPE() inside it (a code address in main)
        ("spawn and join", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(counts(&trace), expected);
    assert_eq!(trace.thread_names.len(), 4, "main and three workers");
    for (e, parent) in parents(&trace) {
        let ok = match e.name.as_str() {
            "fib" => matches!(parent, Some("fib" | "work")),
            "work" => parent == Some("worker"),
            "worker" => parent.is_none(),
            "leaf_add" => matches!(parent, Some("work" | "main")),
            "leaf_mul" => parent == Some("work"),
            "spawn and join" => parent == Some("main"),
            "main" => parent.is_none() || parent == Some("main"),
            _ => false,
        };
        assert!(ok, "{} inside {parent:?}", e.name);
    }
}

#[test]
fn a_cpp_program_gets_demangled_names_and_exceptions_keep_the_nesting() {
    let dir = scratch("cpp-whole");
    let exe = compile_c(&source("whole.cpp"), &dir.join("whole"), &["-finstrument-functions"]);
    let dump = dir.join("whole.rtd");
    assert_eq!(record(&exe, &[], &dump), "28 6 2 10 3\n");
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let trace = parse_chrome(&json);
    let c = counts(&trace);
    let total_area = "double total_area<Shape>(std::vector<Shape const*, std::allocator<Shape const*> > const&)";
    for (name, n) in [
        ("Square::area() const", 2),
        ("Circle::area() const", 2),
        (total_area, 1),
        ("int sum<int>(std::vector<int, std::allocator<int> > const&)", 1),
        ("double sum<double>(std::vector<double, std::allocator<double> > const&)", 1),
        ("main::{lambda(int)#1}::operator()(int) const", 4),
        ("thrower(int)", 3),
        ("catcher()", 1),
        ("main", 1),
    ] {
        assert_eq!(c.get(name), Some(&n), "{name}: {c:#?}");
    }
    for (e, parent) in parents(&trace) {
        match e.name.as_str() {
            // Each throw unwinds through thrower's exit hook: it still ends inside catcher.
            "thrower(int)" => assert_eq!(parent, Some("catcher()")),
            "catcher()" => assert_eq!(parent, Some("main")),
            "Square::area() const" | "Circle::area() const" => assert_eq!(parent, Some(total_area)),
            "main::{lambda(int)#1}::operator()(int) const" => {
                assert!(parent.is_some_and(|p| p.contains("std::for_each")), "{parent:?}")
            }
            _ => {}
        }
    }
}

#[test]
fn calls_that_never_return_leave_a_valid_dump_that_says_so() {
    let dir = scratch("c-unbalanced");
    let exe = compile_c(&source("unbalanced.c"), &dir.join("unbalanced"), &["-finstrument-functions"]);
    let run = |mode: &str| {
        let dump = dir.join(format!("{mode}.rtd"));
        record(&exe, &[mode], &dump);
        let (code, json, stderr) = convert(&dump, &[]);
        assert_eq!(code, 0, "{mode}: {stderr:?}");
        (parse_chrome(&json), stderr)
    };
    let open_spans = |trace: &ChromeTrace| -> Vec<String> {
        let events = trace.json["traceEvents"].as_array().unwrap();
        let mut open: Vec<String> =
            events.iter().filter(|e| e["args"]["open"] == true).map(|e| e["name"].as_str().unwrap().into()).collect();
        open.sort();
        open
    };

    // exit() from inside inner(): main, outer and inner are open at the dump.
    let (trace, stderr) = run("exit");
    assert!(stderr.is_empty(), "{stderr:?}");
    assert_eq!(open_spans(&trace), ["inner", "main", "outer"]);

    // A thread ends inside inner(): its two spans stay open; main finishes and calls after().
    let (trace, stderr) = run("thread");
    assert!(stderr.is_empty(), "{stderr:?}");
    assert_eq!(open_spans(&trace), ["inner", "outer", "thread_main"]);
    assert_eq!(counts(&trace).get("after"), Some(&1));

    // Three longjmps out of inner(): outer and inner never exit; they are recorded, unwound, and main too.
    let (trace, stderr) = run("longjmp");
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(stderr[0].contains("6 span(s) were left without their exit"), "{stderr:?}");
    let expected = [("after", 1), ("inner", 3), ("main", 1), ("outer", 3)];
    assert_eq!(counts(&trace), expected.map(|(k, v)| (k.to_string(), v)).into());
    let events = trace.json["traceEvents"].as_array().unwrap();
    let unwound: Vec<&str> =
        events.iter().filter(|e| e["args"]["unwound"] == true).map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(unwound.len(), 6);
    assert!(unwound.iter().all(|n| *n == "inner" || *n == "outer"));
    for (e, parent) in parents(&trace) {
        let expected = match e.name.as_str() {
            "inner" => Some("outer"),
            "outer" | "after" => Some("main"),
            _ => None,
        };
        assert_eq!(parent, expected, "{}", e.name);
    }

    // 300 nested calls under main: the shadow stack holds 256 frames, so 45 calls are counted, not recorded.
    let (trace, stderr) = run("deep");
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(stderr[0].contains("45 call(s) nested deeper"), "{stderr:?}");
    assert_eq!(counts(&trace).get("deep"), Some(&255));
    // Each recorded deep() call is inside the one before: main, then 255 levels.
    let nested = parents(&trace).iter().filter(|(e, p)| e.name == "deep" && *p == Some("deep")).count();
    assert_eq!(nested, 254);
}

#[test]
fn the_c_api_by_hand_scopes_configures_and_dumps_to_a_path_and_a_descriptor() {
    let dir = scratch("c-manual");
    let exe = compile_c(&source("manual.c"), &dir.join("manual"), &[]);
    let (by_path, by_fd) = (dir.join("path.rtd"), dir.join("fd.rtd"));
    let out = Command::new(&exe).arg(&by_path).arg(&by_fd).output().unwrap();
    assert!(out.status.success());
    // 0+2+4+6+8; both dumps written; the impossible path and descriptor reported, not fatal.
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "20 0 0 -1 -1\n");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("cannot write a dump to /nonexistent/dir/x.rtd"), "{stderr}");
    assert!(stderr.contains("cannot write a dump to descriptor -1"), "{stderr}");
    for dump in [&by_path, &by_fd] {
        let (code, json, stderr) = convert(dump, &[]);
        assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
        let trace = parse_chrome(&json);
        let expected: BTreeMap<String, usize> = [("load".to_string(), 1), ("step".to_string(), 5)].into();
        assert_eq!(counts(&trace), expected);
        for (e, parent) in parents(&trace) {
            assert_eq!(parent, if e.name == "step" { Some("load") } else { None }, "{}", e.name);
        }
    }
    // The ring is the 16-record stop-when-full one asked for.
    let bytes = std::fs::read(&by_path).unwrap();
    let dump = ringtrace_format::Dump::parse(&bytes).unwrap();
    let rings: Vec<(u64, u32)> = dump
        .sections()
        .filter_map(|s| match s.unwrap().decode().unwrap() {
            ringtrace_format::SectionData::Ring(info, _, _) => Some((info.capacity, info.flags)),
            _ => None,
        })
        .collect();
    use ringtrace_format::layout::{RING_FLAG_KEY_DEPTH, RING_FLAG_STOP_WHEN_FULL};
    assert_eq!(rings, [(16, RING_FLAG_STOP_WHEN_FULL | RING_FLAG_KEY_DEPTH)]);
}
