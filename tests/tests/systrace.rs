//! Every systrace line parses with the line grammars of Perfetto's systrace
//! importer (systrace_line_tokenizer.cc) and Catapult's ftrace importer
//! (lineREWithTGID), and the begin/end markers nest per thread.

use std::collections::BTreeMap;

use regex::Regex;
use ringtrace_tests::{binary, convert, record_workload_with, scratch};

#[test]
fn every_line_parses_as_perfetto_and_catapult_read_it() {
    let dir = scratch("systrace");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (code, text, stderr) = convert(&dump, &["-f", "systrace"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert!(text.starts_with("# tracer: nop\n") && text.ends_with('\n'));

    // Perfetto: regex_search; the task is the prefix, the arguments the suffix.
    let perfetto =
        Regex::new(r"-(\d+)\s+\(?\s*(\d+|-+)?\)?\s?\[(\d+)\]\s*[a-zA-Z0-9.]{0,4}\s+(\d+\.\d+):\s+(\S+):").unwrap();
    // Catapult: a whole-line match.
    let catapult = Regex::new(
        r"^\s*(.+)-(\d+)\s+\(\s*(\d+|-+)\)\s\[(\d+)\]\s+[dX.][N.][Hhs.][0-9a-f.]\s+(\d+\.\d+):\s+(\S+):\s(.*)$",
    )
    .unwrap();
    let mut depth: BTreeMap<String, i64> = BTreeMap::new();
    let (mut begins, mut ends, mut last_ts) = (0, 0, 0.0f64);
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let p = perfetto.captures(line).unwrap_or_else(|| panic!("Perfetto rejects: {line}"));
        let c = catapult.captures(line).unwrap_or_else(|| panic!("Catapult rejects: {line}"));
        let task = line[..p.get(0).unwrap().start()].trim();
        assert_eq!(task, &c[1], "{line}");
        assert_eq!((&p[1], &p[5]), (&c[2], "tracing_mark_write"));
        let ts: f64 = c[5].parse().unwrap();
        assert!(ts >= last_ts, "time goes backwards at {line}");
        last_ts = ts;
        let details = &c[7];
        let d = depth.entry(format!("{}-{}", &c[1], &c[2])).or_default();
        if let Some(name) = details.strip_prefix(&format!("B|{}|", &c[3])) {
            assert!(!name.is_empty());
            *d += 1;
            begins += 1;
        } else {
            assert_eq!(details, format!("E|{}", &c[3]));
            *d -= 1;
            ends += 1;
            assert!(*d >= 0, "an end without a begin: {line}");
        }
    }
    assert!(depth.values().all(|&d| d == 0), "{depth:?}");
    // fib(12) twice (930), 5 rounds × (1 + 8 + 8) on two threads (170), 10 sleeper spans, main's one.
    assert_eq!((begins, ends), (1111, 1111));
    let tasks: Vec<&str> = depth.keys().map(|k| k.rsplit_once('-').unwrap().0).collect();
    assert_eq!(tasks, ["fib-0", "fib-1", "main", "parser-0", "parser-1", "sleeper"]);
}
