//! rtconv's DWARF names agree with llvm-symbolizer's, and its file:line with
//! GNU addr2line's, on the workload's real keys (a PIE, so the load bias matters).
//!
//! llvm-symbolizer is the reference because it names the innermost inlined
//! function first, as rtconv does; GNU addr2line 2.40 prints the enclosing
//! symbol's name against the innermost line instead.

use std::collections::BTreeMap;

use ringtrace_tests::{binary, record_workload_with, run, scratch, without_rust_hash};
use rtconv::model::{Location, Source, locate};
use rtconv::symbolize::symbolize;

#[test]
fn code_address_names_match_llvm_symbolizer() {
    let dir = scratch("addr2line");
    let exe = binary("workload");
    let dump = record_workload_with(&exe, &dir, "w.rtd", &[]);
    let bytes = rtconv::model::open(&dump).unwrap();
    let trace = rtconv::model::decode(&dump, &bytes).unwrap();
    let naming = symbolize(&trace, &Default::default(), &Default::default());
    assert!(naming.problems.is_empty(), "{:?}", naming.problems);
    let symbols = naming.names;

    // Every code-address key, by the address its ELF file uses.
    let mut ours: BTreeMap<u64, (String, String)> = BTreeMap::new();
    for &key in &trace.keys {
        if let Location::Module { file_address, .. } = locate(&trace, key) {
            let name = symbols.get(key).unwrap();
            assert_eq!(name.source, Source::Dwarf, "{name:?}");
            let line = format!("{}:{}", name.file.as_deref().unwrap(), name.line.unwrap());
            ours.insert(file_address, (name.name.clone(), line));
        }
    }
    // fib, tokenize and checksum each have one span!() call site.
    assert_eq!(ours.len(), 3, "{ours:?}");

    // One block per address, innermost frame first: function, then "file:line:column"; blank line between.
    let mut args = vec![format!("--obj={}", exe.display())];
    args.extend(ours.keys().map(|a| format!("{a:#x}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run("llvm-symbolizer".as_ref(), &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let theirs: Vec<(String, String)> = text
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let mut lines = block.lines();
            let function = without_rust_hash(lines.next().unwrap());
            let location = lines.next().unwrap();
            let file_line = location.rsplit_once(':').unwrap().0; // drop the column
            (function.to_string(), file_line.to_string())
        })
        .collect();
    // GNU addr2line agrees on every innermost file:line (its function names for
    // inlined frames in line-tables-only builds are the enclosing symbol's, so
    // names are checked against llvm-symbolizer above).
    let mut gnu_args = vec!["-e".to_string(), exe.display().to_string()];
    gnu_args.extend(ours.keys().map(|a| format!("{a:#x}")));
    let gnu_args: Vec<&str> = gnu_args.iter().map(String::as_str).collect();
    let gnu = run("addr2line".as_ref(), &gnu_args);
    assert!(gnu.status.success());
    let gnu_lines: Vec<String> =
        String::from_utf8(gnu.stdout).unwrap().lines().map(|l| l.split(" (").next().unwrap().to_string()).collect();
    let ours: Vec<(String, String)> = ours.into_values().collect();
    let our_lines: Vec<String> = ours.iter().map(|o| o.1.clone()).collect();
    assert_eq!(our_lines, gnu_lines);
    assert_eq!(ours, theirs);
}
