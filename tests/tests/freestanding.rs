//! The recorder with no OS at all: `samples/freestanding` (no std, no libc,
//! its own `_start`, raw `write`/`exit` system calls) records with a counter
//! of its own and writes its dump to stdout; rtconv converts it with names
//! from the site section and from DWARF. Its simulated 32-bit counter makes
//! every time exact and wraps mid-run (compact records, unwrapped by rtconv). Also measures what instrumenting a
//! function adds to its size, against the same program built with `off`.

use std::path::PathBuf;
use std::process::Command;

use object::{Object, ObjectSymbol};
use ringtrace_tests::{build_side_workspace, parse_chrome, rtconv_run, scratch};

fn build(off: bool) -> PathBuf {
    let target = if off { "freestanding-off" } else { "freestanding" };
    build_side_workspace("samples/freestanding/Cargo.toml", target, off.then_some("off"), "freestanding")
}

/// Sizes of the sample's two instrumented functions, by symbol.
fn function_sizes(exe: &std::path::Path) -> (u64, u64) {
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let size = |name: &str| {
        file.symbols()
            .find(|s| s.name().is_ok_and(|n| rustc_demangle::demangle(n).to_string().starts_with(name)))
            .map(|s| s.size())
            .unwrap_or_else(|| panic!("no symbol {name} in {}", exe.display()))
    };
    (size("freestanding::leaf"), size("freestanding::outer"))
}

#[test]
fn a_program_without_an_os_records_and_dumps_through_a_byte_sink() {
    let exe = build(false);
    // Nothing from an OS but the kernel: static, no interpreter, no shared library.
    let data = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    assert!(file.section_by_name(".interp").is_none() && file.section_by_name(".dynamic").is_none());
    assert!(file.section_by_name("ringtrace_sites").is_some());

    let out = Command::new(&exe).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = scratch("freestanding");
    let dump = dir.join("fs.rtd");
    std::fs::write(&dump, &out.stdout).unwrap();

    // Compact records of the 32-bit counter, which wrapped during the run.
    let parsed = ringtrace_format::Dump::parse(&out.stdout).unwrap();
    let rings: Vec<Vec<ringtrace_format::Record>> = parsed
        .sections()
        .filter_map(|s| match s.unwrap().decode().unwrap() {
            ringtrace_format::SectionData::Ring(_, records, _) => {
                assert!(records.compact(), "a 32-bit counter's dump holds compact records");
                Some(records.iter().collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(rings.len(), 1);
    assert!(rings[0].windows(2).any(|w| w[1].exit < w[0].exit), "the counter wrapped between two records");

    let (code, json, stderr) = rtconv_run(&["convert", dump.to_str().unwrap(), "--exe", exe.to_str().unwrap()]);
    assert!(code == 0 && stderr.is_empty(), "{stderr:?}");
    let trace = parse_chrome(&json);
    let events: Vec<(&str, i64, i64)> = trace.events.iter().map(|e| (e.name.as_str(), e.ts_ns, e.dur_ns)).collect();
    // Four rounds: the pulse interval ending at the next pass (none after the last), the
    // named span, and its three leaves named from DWARF; 100 ns per counter read.
    let mut expected = Vec::new();
    for round in 0..4i64 {
        let t = round * 900;
        if round < 3 {
            expected.push(("loop", t, 900));
        }
        expected.push(("outer", t + 100, 700));
        for leaf in 0..3 {
            expected.push(("freestanding::leaf", t + 200 + leaf * 200, 100));
        }
    }
    // Switched off: no counter read, no record; on again, a leaf in the interrupt's track (the
    // sample checks it), then this one.
    expected.push(("freestanding::leaf", 3_800, 100));
    assert_eq!(events, expected);
    assert_eq!(trace.thread_names.values().collect::<Vec<_>>(), ["main"]);
    assert_eq!(trace.process_name.as_deref(), Some("freestanding"));
}

#[test]
fn instrumenting_a_function_adds_a_measured_number_of_bytes() {
    let (on, off) = (function_sizes(&build(false)), function_sizes(&build(true)));
    // Printed for docs/PERFORMANCE.md (cargo test -p ringtrace-tests --test e2e -- freestanding:: --nocapture).
    println!("leaf: {} -> {} bytes; outer: {} -> {} bytes", off.0, on.0, off.1, on.1);
    assert!(on.0 > off.0 && on.1 > off.1, "instrumented functions are larger: {on:?} vs {off:?}");
}
