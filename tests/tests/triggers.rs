//! Dumps written at exit, on panic and on a signal; and names from the
//! dump's dladdr table when the binary is gone.

use std::collections::BTreeMap;

use ringtrace_tests::{binary, convert, copy_executable, parse_chrome, run, scratch};

fn names(json: &str) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for e in parse_chrome(json).events {
        *c.entry(e.name).or_default() += 1;
    }
    c
}

#[test]
fn exit_panic_and_signal_each_write_a_dump() {
    let dir = scratch("triggers");
    for (mode, status) in [("exit", 0), ("panic", 101), ("signal", 0)] {
        let dump = dir.join(format!("{mode}.rtd"));
        let out = run(&binary("triggers"), &[mode, dump.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(status), "{mode}: {}", String::from_utf8_lossy(&out.stderr));
        let (code, json, stderr) = convert(&dump, &[]);
        assert_eq!((code, stderr.len()), (0, 0), "{mode}: {stderr:?}");
        let expected: BTreeMap<String, usize> = [("work".into(), 3), ("exported_work".into(), 3)].into();
        assert_eq!(names(&json), expected, "{mode}");
        let trace = parse_chrome(&json);
        assert_eq!(trace.json["metadata"]["ringtrace"]["dump_reason"], mode, "{mode}");
    }
}

#[test]
fn the_dladdr_table_names_exported_functions_without_the_binary() {
    let dir = scratch("dladdr");
    let copy = dir.join("triggers");
    copy_executable(&binary("triggers"), &copy);
    let dump = dir.join("t.rtd");
    let out = run(&copy, &["exit", dump.to_str().unwrap()]);
    assert!(out.status.success());
    std::fs::remove_file(&copy).unwrap();

    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!(code, 3, "the binary is missing: degraded");
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].contains("0 distinct span key(s) left unnamed, 1 named from the dump's dladdr table"),
        "{stderr:?}"
    );
    assert_eq!(names(&json).get("exported_work"), Some(&3));
}
