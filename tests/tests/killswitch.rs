//! The compile-time kill switch: with ringtrace's `off` feature, a program
//! using every instrumentation form still compiles and runs, and its binary
//! holds no recorder code, no site section and no counter read. The same
//! program built without `off` holds all three, so the check can fail.

use std::path::{Path, PathBuf};

use object::{Object, ObjectSymbol};
use ringtrace_tests::{build_side_workspace, run, scratch};

fn build(off: bool) -> PathBuf {
    let target = if off { "killswitch-off" } else { "killswitch-on" };
    build_side_workspace("tests/killswitch/Cargo.toml", target, off.then_some("ringtrace/off"), "killswitch")
}

/// (has a ringtrace_sites section, ringtrace symbols, counter-read instructions)
fn traces_of_the_recorder(binary: &Path) -> (bool, usize, usize) {
    let data = std::fs::read(binary).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let sites = file.section_by_name("ringtrace_sites").is_some();
    let symbols =
        file.symbols().filter_map(|s| s.name().ok().map(demangled)).filter(|n| n.contains("ringtrace")).count();
    // Counter reads, by disassembly (a byte search would match inside other instructions).
    let out = run("objdump".as_ref(), &["-d", "--no-show-raw-insn", binary.to_str().unwrap()]);
    assert!(out.status.success());
    let rdtsc = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.split_whitespace().nth(1).is_some_and(|op| op == "rdtsc" || op == "rdtscp"))
        .count();
    (sites, symbols, rdtsc)
}

fn demangled(name: &str) -> String {
    rustc_demangle::demangle(name).to_string()
}

#[test]
fn off_leaves_no_recorder_code() {
    let dir = scratch("killswitch");
    let dump = dir.join("on.rtd");
    let on = build(false);
    let out = run(&on, &[dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dump.exists());
    let (sites, symbols, rdtsc) = traces_of_the_recorder(&on);
    assert!(sites && symbols > 0 && rdtsc > 0, "control build: sites {sites}, symbols {symbols}, rdtsc {rdtsc}");

    let dump = dir.join("off.rtd");
    let off = build(true);
    let out = run(&off, &[dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // v[0] = 1 + 3 bumps, 3 bumps, 0 spans dumped.
    assert_eq!(String::from_utf8_lossy(&out.stdout), "4 3 0\n");
    assert!(!dump.exists(), "with off, dump_to_file writes nothing");
    assert_eq!(traces_of_the_recorder(&off), (false, 0, 0));
}
