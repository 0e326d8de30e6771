//! The recorder on 32-bit Linux: the workload sample and a C program traced whole by
//! `-finstrument-functions`, built for i686 (run natively) and for armv7 with hardware floating
//! point (run under `qemu-arm`), both position-independent executables as their compilers make
//! them. Each gives the sample's known call counts, names from the binary's DWARF (so its load
//! bias was applied to every key), and the C program the same call tree as its x86_64 build.

use std::collections::BTreeMap;
use std::path::Path;

use ringtrace_tests::{
    ARMV7, I686, Linux32, compile_c, convert, fib_calls, parse_chrome, rtconv_run, scratch, sleeper_rounds,
    workspace_root,
};

/// `rtconv info -f json` of `dump`: its one object.
fn info(dump: &Path) -> serde_json::Value {
    let (code, out, stderr) = rtconv_run(&[Path::new("info"), Path::new("-f"), Path::new("json"), dump]);
    assert_eq!(code, 0, "{stderr:?}");
    serde_json::from_str::<serde_json::Value>(&out).unwrap()[0].clone()
}

/// Whether `exe` is a position-independent executable (ELF type `ET_DYN`, 32-bit class).
fn is_32_bit_pie(exe: &Path) -> bool {
    let bytes = std::fs::read(exe).unwrap();
    bytes.get(4) == Some(&1) && bytes.get(16..18) == Some(&3u16.to_le_bytes()[..])
}

/// Every key named from DWARF: none from the symbol table, `dladdr` or not at all.
fn assert_named_by_dwarf(info: &serde_json::Value) {
    let keys = &info["keys"];
    assert!(keys["dwarf"].as_u64().unwrap() >= 3, "{keys}");
    for source in ["unknown", "symtab", "dladdr", "addr2line"] {
        assert_eq!(keys[source], 0, "{source}: {keys}");
    }
}

fn workload(linux: Linux32, counter: &str) {
    let exe = linux.sample("workload");
    assert!(is_32_bit_pie(&exe), "{}", exe.display());
    let dir = scratch(&format!("linux32-workload-{}", linux.target));
    let dump = dir.join("w.rtd");
    let run = linux.command(&exe).args(["--fib", "12", "--out"]).arg(&dump).output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    let outside = sleeper_rounds(&stderr);

    let info = info(&dump);
    assert_eq!(info["clock"]["counter"], counter, "{}", info["clock"]);
    assert_named_by_dwarf(&info);
    let (code, json, stderr) = convert(&dump, &["-o", "-"]);
    assert_eq!(code, 0, "{stderr:?}");
    let trace = parse_chrome(&json);
    let count = |name: &str| trace.events.iter().filter(|e| e.name == name).count();
    assert_eq!(count("workload::fib"), 2 * fib_calls(12) as usize);
    assert_eq!(count("workload::parse_batch"), 10);
    assert_eq!(count("tokenize"), 80);
    // Each sleeper round: at least its 20 ms sleep, at most what the program measured around it.
    let rounds: Vec<_> = trace.events.iter().filter(|e| e.name == "sleeper round").collect();
    assert_eq!(rounds.len(), outside.len());
    for (span, &outside) in rounds.iter().zip(&outside) {
        let ns = span.dur_ns as u64;
        let (least, most) = (ringtrace_tests::at_least(20_000_000), ringtrace_tests::at_most(outside));
        assert!(least <= ns && ns <= most, "{ns} ns, measured outside {outside}");
    }
}

#[test]
fn the_workload_built_for_i686_keeps_its_calls_and_names_and_times_them_by_the_tsc() {
    workload(I686, "x86 TSC");
}

#[test]
fn the_workload_built_for_armv7_under_qemu_arm_keeps_its_calls_and_names() {
    workload(ARMV7, "monotonic ns");
}

/// The call tree of `whole.c`'s trace: per (function, its caller), the calls.
fn call_tree(dump: &Path) -> BTreeMap<(String, Option<String>), usize> {
    let (code, json, stderr) = convert(dump, &["-o", "-"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let trace = parse_chrome(&json);
    let mut tree = BTreeMap::new();
    let mut tids: Vec<u64> = trace.events.iter().map(|e| e.tid).collect();
    tids.sort_unstable();
    tids.dedup();
    for tid in tids {
        let mut open: Vec<&ringtrace_tests::Event> = Vec::new();
        for e in trace.events.iter().filter(|e| e.tid == tid) {
            while open.last().is_some_and(|p| p.ended_before(e)) {
                open.pop();
            }
            *tree.entry((e.name.clone(), open.last().map(|p| p.name.clone()))).or_default() += 1;
            open.push(e);
        }
    }
    tree
}

fn whole_program(linux: Linux32) {
    let dir = scratch(&format!("linux32-whole-{}", linux.target));
    let source = workspace_root().join("samples/c/whole.c");
    let native = compile_c(&source, &dir.join("whole-x86_64"), &["-finstrument-functions"]);
    let exe = linux.compile_c(&source, &dir.join("whole"), &["-finstrument-functions"]);
    assert!(is_32_bit_pie(&exe), "{}", exe.display());
    let run = |cmd: &mut std::process::Command, dump: &Path| {
        let out = cmd.args(["3", "12"]).env("RINGTRACE_DUMP", dump).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8_lossy(&out.stdout), "3\n");
    };
    let (dump, native_dump) = (dir.join("whole.rtd"), dir.join("whole-x86_64.rtd"));
    run(&mut linux.command(&exe), &dump);
    run(&mut std::process::Command::new(&native), &native_dump);
    assert_named_by_dwarf(&info(&dump));

    let tree = call_tree(&dump);
    let calls = |name: &str| tree.iter().filter(|((n, _), _)| n == name).map(|(_, c)| c).sum::<usize>();
    assert_eq!(calls("fib"), 3 * fib_calls(12) as usize);
    assert_eq!((calls("work"), calls("worker"), calls("leaf_mul")), (3, 3, 9));
    assert_eq!((calls("leaf_add"), calls("main"), calls("spawn and join")), (10, 2, 1));
    assert_eq!(tree, call_tree(&native_dump), "the call tree on {} against x86_64's", linux.target);
}

#[test]
fn a_c_program_built_for_i686_is_traced_whole_with_the_call_tree_of_its_x86_64_build() {
    whole_program(I686);
}

#[test]
fn a_c_program_built_for_armv7_under_qemu_arm_is_traced_whole_with_the_call_tree_of_its_x86_64_build() {
    whole_program(ARMV7);
}
