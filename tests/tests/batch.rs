//! `rtconv batch` and `rtconv stats` over many dumps, on real archives of
//! real dumps: a directory, a glob, a .tar.gz and a .tar.zst whose entries
//! include `../x.rtd` and `/x.rtd`, a corrupt dump and a truncated one.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;

use ringtrace_tests::{Scratch, binary, parse_chrome, record_workload_with, rtconv_run, scratch};

/// Per dump of the workload with these settings: fib(12) on two threads (465 calls each).
const FIB_CALLS: usize = 2 * ringtrace_tests::fib_calls(12) as usize;

/// A tar entry with exactly this name, whatever it says (the tar crate would refuse `..`).
fn raw_entry(tar: &mut tar::Builder<impl Write>, name: &str, bytes: &[u8]) {
    let mut header = tar::Header::new_old();
    header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    tar.append(&header, bytes).unwrap();
}

fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, bytes) in entries {
        raw_entry(&mut tar, name, bytes);
    }
    tar.into_inner().unwrap()
}

fn files_in(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect()
}

struct Fleet {
    root: Scratch,
    dump: Vec<u8>,
}

/// dumps/host1/app.rtd, dumps/host2/app.rtd (same name: a collision), a
/// corrupt and a truncated dump, fleet.tar.gz (../x.rtd, /x.rtd, notes.txt)
/// and fleet.tar.zst (a/app.rtd).
fn fleet(test: &str) -> Fleet {
    let root = scratch(test);
    let dumps = root.join("dumps");
    for host in ["host1", "host2"] {
        std::fs::create_dir_all(dumps.join(host)).unwrap();
        record_workload_with(&binary("workload"), &dumps.join(host), "app.rtd", &[]);
    }
    let dump = std::fs::read(dumps.join("host1/app.rtd")).unwrap();
    std::fs::write(dumps.join("corrupt.rtd"), b"RNGTRACE but nothing after it").unwrap();
    std::fs::write(dumps.join("truncated.rtd"), &dump[..dump.len() / 2]).unwrap();
    let tar = tar_of(&[("../x.rtd", &dump), ("/x.rtd", &dump), ("notes.txt", b"not a dump")]);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&tar).unwrap();
    std::fs::write(root.join("fleet.tar.gz"), gz.finish().unwrap()).unwrap();
    let tar = tar_of(&[("a/app.rtd", &dump)]);
    let zst = ruzstd::encoding::compress_to_vec(&tar[..], ruzstd::encoding::CompressionLevel::Fastest);
    std::fs::write(root.join("fleet.tar.zst"), zst).unwrap();
    Fleet { root, dump }
}

#[test]
fn a_batch_converts_every_dump_once_inside_the_output_directory_and_isolates_failures() {
    let f = fleet("batch");
    let out = f.root.join("out");
    let (dumps, gz, zst, pattern) = (
        f.root.join("dumps"),
        f.root.join("fleet.tar.gz"),
        f.root.join("fleet.tar.zst"),
        f.root.join("dumps/host1/*.rtd"),
    );
    let before = files_in(&f.root);
    let mut args = vec!["batch", "--jobs", "2", "--out-dir", out.to_str().unwrap()];
    args.extend([dumps.to_str().unwrap(), gz.to_str().unwrap(), zst.to_str().unwrap(), pattern.to_str().unwrap()]);
    let (code, stdout, stderr) = rtconv_run(&args);
    assert_eq!(code, 3, "some dumps failed: {stderr:?}");
    assert!(stdout.is_empty());
    // Nothing appeared outside the output directory (../x.rtd, /x.rtd).
    let mut after = files_in(&f.root);
    after.remove("out");
    assert_eq!(after, before);
    assert!(!Path::new("/x.json").exists());

    // One output per dump: dumps/ (corrupt, host1, host2, truncated), the archives, the glob.
    let expected: BTreeSet<String> =
        ["app.json", "app-2.json", "app-3.json", "app-4.json", "truncated.json", "x.json", "x-2.json"]
            .into_iter()
            .map(String::from)
            .collect();
    assert_eq!(files_in(&out), expected);
    for name in expected.iter().filter(|n| *n != "truncated.json") {
        let trace = parse_chrome(&std::fs::read_to_string(out.join(name)).unwrap());
        let fib = trace.events.iter().filter(|e| e.name == "workload::fib").count();
        assert_eq!(fib, FIB_CALLS, "{name}");
    }
    // Every line on stderr is a diagnostic (no progress bar: not a terminal), and the summary counts.
    assert!(stderr.iter().all(|l| l.starts_with("rtconv: ")), "{stderr:?}");
    assert!(stderr.iter().any(|l| l.contains("corrupt.rtd") && l.contains("skipped")), "{stderr:?}");
    assert!(stderr.iter().any(|l| l.contains("truncated.rtd") && l.contains("cut short")), "{stderr:?}");
    assert_eq!(
        stderr.last().unwrap(),
        &format!("rtconv: batch: 6 converted, 1 salvaged (converted with losses), 1 failed -> {}", out.display())
    );
    let _ = f.dump;
}

#[test]
fn one_worker_and_two_give_the_same_outputs_and_a_clean_batch_exits_zero() {
    let f = fleet("batch-jobs");
    let inputs = [f.root.join("dumps/host1"), f.root.join("dumps/host2"), f.root.join("fleet.tar.zst")];
    let mut outputs = Vec::new();
    for jobs in ["1", "2"] {
        let out = f.root.join(format!("out{jobs}"));
        let mut args = vec!["batch", "-f", "folded", "--jobs", jobs, "--out-dir", out.to_str().unwrap()];
        args.extend(inputs.iter().map(|p| p.to_str().unwrap()));
        let (code, _, stderr) = rtconv_run(&args);
        assert_eq!(code, 0, "{stderr:?}");
        let files: Vec<(String, u32)> = files_in(&out)
            .into_iter()
            .map(|n| (n.clone(), crc32fast::hash(&std::fs::read(out.join(&n)).unwrap())))
            .collect();
        assert_eq!(files.len(), 3);
        outputs.push(files);
    }
    assert_eq!(outputs[0], outputs[1], "(output, CRC-32) with 1 and 2 workers");
    // Nothing to convert at all: exit 1.
    let (code, _, stderr) =
        rtconv_run(&["batch", "--out-dir", f.root.join("none").to_str().unwrap(), "/nonexistent/*.rtd"]);
    assert_eq!(code, 1, "{stderr:?}");
    assert!(stderr[0].contains("the pattern matches no file"), "{stderr:?}");
}

#[test]
fn stats_over_many_dumps_merge_calls_histograms_and_count_dumps() {
    let f = fleet("batch-stats");
    let one = f.root.join("dumps/host1/app.rtd");
    let json = |args: &[&str]| -> serde_json::Value {
        let (code, stdout, stderr) = rtconv_run(args);
        assert!(code == 0 || code == 3, "{stderr:?}");
        serde_json::from_str(&stdout).unwrap()
    };
    let single = json(&["stats", "--format", "json", one.to_str().unwrap()]);
    let merged = json(&[
        "stats",
        "--format",
        "json",
        f.root.join("dumps/host1").to_str().unwrap(),
        f.root.join("dumps/host2").to_str().unwrap(),
        f.root.join("fleet.tar.gz").to_str().unwrap(),
    ]);
    // One program build: one table, over the four dumps.
    let scopes = merged.as_array().unwrap();
    assert_eq!(scopes.len(), 1);
    assert!(scopes[0]["scope"].as_str().unwrap().ends_with("4 dumps"), "{}", scopes[0]["scope"]);
    let find = |v: &serde_json::Value, name: &str| {
        v["functions"].as_array().unwrap().iter().find(|r| r["function"] == name).cloned().unwrap()
    };
    let (a, m) = (find(&single[0], "workload::fib"), find(&scopes[0], "workload::fib"));
    assert_eq!(m["calls"].as_u64().unwrap(), 4 * FIB_CALLS as u64);
    assert_eq!(m["dumps"], 4);
    // Three of the four dumps are byte-for-byte this one: min and max over all are within theirs and host2's.
    assert!(m["min_ns"].as_u64() <= a["min_ns"].as_u64() && m["max_ns"].as_u64() >= a["max_ns"].as_u64());
    let sleep = find(&scopes[0], "sleep");
    assert_eq!((sleep["calls"].as_u64(), sleep["dumps"].as_u64()), (Some(4 * 5), Some(4)));
    // --tree is for one dump.
    let (code, _, stderr) = rtconv_run(&["stats", "--tree", f.root.join("dumps").to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr:?}");
}

#[test]
fn progress_shows_on_a_terminal_and_not_with_quiet() {
    let f = fleet("batch-pty");
    let dumps = f.root.join("dumps/host1");
    // `script` gives rtconv a pseudo-terminal for stdout and stderr (util-linux).
    let on_terminal = |extra: &str| {
        let out_dir = f.root.join(format!("out{}", extra.len()));
        let command = format!(
            "{} batch {} --out-dir {} -j 1 {extra}",
            binary("rtconv").display(),
            dumps.display(),
            out_dir.display()
        );
        let out = ringtrace_tests::tool("script")
            .env(ringtrace_tests::NO_INDEX.0, ringtrace_tests::NO_INDEX.1)
            .args(["-qec", &command, "/dev/null"])
            // Nothing to type: `script` relays its stdin to the terminal it makes.
            .stdin(std::process::Stdio::null())
            .output()
            .expect("script (util-linux) runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let shown = on_terminal("");
    assert!(shown.contains("ETA") && shown.contains("1 dumps, 0 failed"), "{shown:?}");
    assert!(shown.contains("rtconv: batch: 1 converted"), "{shown:?}");
    let quiet = on_terminal("--quiet");
    assert!(!quiet.contains("ETA") && quiet.contains("rtconv: batch: 1 converted"), "{quiet:?}");
}
