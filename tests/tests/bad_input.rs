//! Bad input gets one clear line naming the file and the problem, a non-zero
//! exit status and no panic; whatever can be salvaged is still converted.

use std::collections::BTreeMap;
use std::path::Path;

use ringtrace_tests::{binary, convert, copy_executable, parse_chrome, record_workload_with, scratch};

const EXIT_ERROR: i32 = 1;
const EXIT_DEGRADED: i32 = 3;

fn counts(json: &str) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for e in parse_chrome(json).events {
        *c.entry(e.name).or_default() += 1;
    }
    c
}

/// Every line is one `rtconv:` diagnostic naming `file`; none is a panic.
fn assert_diagnostics(stderr: &[String], file: &Path, must_contain: &[&str]) {
    assert!(!stderr.is_empty(), "expected a diagnostic");
    let all = stderr.join("\n");
    assert!(!all.contains("panicked"), "{all}");
    for line in stderr {
        assert!(line.starts_with("rtconv: "), "not a diagnostic line: {line}");
        assert!(line.contains(&file.display().to_string()), "does not name {}: {line}", file.display());
    }
    for needle in must_contain {
        assert!(all.contains(needle), "expected {needle:?} in:\n{all}");
    }
}

fn workload_dump(test: &str) -> (ringtrace_tests::Scratch, std::path::PathBuf) {
    let dir = scratch(test);
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    (dir, dump)
}

#[test]
fn a_file_that_is_not_a_dump() {
    let dir = scratch("not-a-dump");
    for (name, bytes) in [("text.rtd", &b"hello, world\n"[..]), ("empty.rtd", &b""[..])] {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        let (code, stdout, stderr) = convert(&path, &[]);
        assert_eq!(code, EXIT_ERROR);
        assert!(stdout.is_empty());
        assert_eq!(stderr.len(), 1, "{stderr:?}");
        assert_diagnostics(&stderr, &path, &["not a ringtrace dump", "expected magic"]);
    }
    let (code, _, stderr) = convert(&dir.join("absent.rtd"), &[]);
    assert_eq!(code, EXIT_ERROR);
    assert_diagnostics(&stderr, &dir.join("absent.rtd"), &["cannot read"]);
}

#[test]
fn a_dump_of_a_newer_major_version() {
    let (dir, dump) = workload_dump("newer-version");
    let mut bytes = std::fs::read(&dump).unwrap();
    bytes[12..14].copy_from_slice(&2u16.to_le_bytes());
    bytes[14..16].copy_from_slice(&0u16.to_le_bytes());
    let newer = dir.join("newer.rtd");
    std::fs::write(&newer, bytes).unwrap();
    let (code, stdout, stderr) = convert(&newer, &[]);
    assert_eq!(code, EXIT_ERROR);
    assert!(stdout.is_empty());
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_diagnostics(&stderr, &newer, &["version 2.0 is newer", "reads versions 1.x;", "upgrade rtconv"]);
}

#[test]
fn a_truncated_dump_converts_its_complete_rings_and_says_what_was_lost() {
    let (dir, dump) = workload_dump("truncated");
    let (code, full_json, _) = convert(&dump, &[]);
    assert_eq!(code, 0);
    let full = parse_chrome(&full_json);
    let bytes = std::fs::read(&dump).unwrap();
    let cut = dir.join("cut.rtd");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();

    let (code, json, stderr) = convert(&cut, &[]);
    assert_eq!(code, EXIT_DEGRADED);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_diagnostics(&stderr, &cut, &["truncated", "the rest of the file is lost", "ring(s) before offset"]);
    let salvaged = parse_chrome(&json);
    assert!(!salvaged.events.is_empty(), "complete rings before the cut are converted");
    assert!(salvaged.events.len() < full.events.len());
    // Every salvaged thread is complete: the same spans as in the full conversion.
    for tid in salvaged.thread_names.keys() {
        let of = |t: &ringtrace_tests::ChromeTrace| t.events.iter().filter(|e| e.tid == *tid).count();
        assert_eq!(of(&salvaged), of(&full), "thread {tid}");
    }
}

#[test]
fn a_corrupted_ring_is_caught_by_its_checksum() {
    let (dir, dump) = workload_dump("corrupt");
    let mut bytes = std::fs::read(&dump).unwrap();
    // A byte in the middle of the last ring's payload.
    let last_ring = ringtrace_format::Dump::parse(&bytes)
        .unwrap()
        .sections()
        .map(Result::unwrap)
        .filter(|s| s.kind == ringtrace_format::SectionKind::Ring)
        .last()
        .unwrap();
    let at = last_ring.offset as usize + 16 + last_ring.payload.len() / 2;
    bytes[at] ^= 0x10;
    let bad = dir.join("bad.rtd");
    std::fs::write(&bad, bytes).unwrap();
    let (code, json, stderr) = convert(&bad, &[]);
    assert_eq!(code, EXIT_DEGRADED);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_diagnostics(&stderr, &bad, &["ring section fails its CRC-32 check", "the rest of the file is lost"]);
    assert!(!parse_chrome(&json).events.is_empty());
}

#[test]
fn a_missing_binary_leaves_code_addresses_unnamed_but_sites_named() {
    let dir = scratch("missing-binary");
    let copy = dir.join("workload");
    copy_executable(&binary("workload"), &copy);
    let dump = record_workload_with(&copy, &dir, "w.rtd", &[]);
    std::fs::remove_file(&copy).unwrap();

    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!(code, EXIT_DEGRADED);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_diagnostics(&stderr, &dump, &["not found", "pass --exe PATH", "left unnamed"]);
    let names = counts(&json);
    assert!(names.contains_key("sleep") && names.contains_key("workload::parse_batch"), "{names:?}");
    assert!(names.keys().any(|n| n.starts_with("?? (workload+0x")), "{names:?}");
    assert!(!names.contains_key("workload::fib"));

    // The same build elsewhere, passed with --exe, names everything.
    let (code, json, stderr) = convert(&dump, &["--exe", binary("workload").to_str().unwrap()]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert!(counts(&json).contains_key("workload::fib"));
}

#[test]
fn a_build_id_mismatch_is_refused_unless_allowed() {
    let (_dir, dump) = workload_dump("mismatch");
    let other = binary("rtconv");
    let (code, json, stderr) = convert(&dump, &["--exe", other.to_str().unwrap()]);
    assert_eq!(code, EXIT_DEGRADED);
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert_diagnostics(&stderr, &dump, &["has build-id", "but the dump recorded", "rtconv pack", "--allow-mismatch"]);
    assert!(counts(&json).keys().any(|n| n.starts_with("?? (workload+0x")));

    let (code, _, stderr) = convert(&dump, &["--exe", other.to_str().unwrap(), "--allow-mismatch"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
}

/// Damaged payloads whose checksums were fixed up (so the reader trusts the
/// section and decodes it), converted in-process: every one must give a
/// result or a clean error, never a panic or a hang.
#[test]
fn payloads_damaged_behind_a_valid_checksum_never_panic() {
    let (dir, dump) = workload_dump("fixed-crc");
    let bytes = std::fs::read(&dump).unwrap();
    let sections: Vec<(usize, usize)> = ringtrace_format::Dump::parse(&bytes)
        .unwrap()
        .sections()
        .map(Result::unwrap)
        .map(|s| (s.offset as usize, s.payload.len()))
        .collect();
    let mut rng = ringtrace_format::test_util::XorShift(0x2545_f491_4f6c_dd1d);
    let mut next = || rng.next();
    let path = dir.join("damaged.rtd");
    let mut outcomes = std::collections::BTreeMap::new();
    for &(offset, len) in &sections {
        for _ in 0..20 {
            if len == 0 {
                break;
            }
            let mut damaged = bytes.clone();
            // One to four bytes of the payload (or of the section header's length) set at random.
            for _ in 0..1 + next() % 4 {
                let at = offset + 8 + (next() as usize % (len + 8));
                damaged[at] = next() as u8;
            }
            let crc_at = offset + 16 + len;
            if crc_at + 4 <= damaged.len() {
                let crc = crc32fast::hash(&damaged[offset..crc_at]);
                damaged[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
            }
            std::fs::write(&path, &damaged).unwrap();
            let result = rtconv::convert::convert(
                &path,
                rtconv::convert::Format::Chrome(Default::default()),
                &Default::default(),
                &Default::default(),
                &mut std::io::sink(),
            );
            let outcome = match result {
                Ok(report) if report.degraded() => "converted with losses",
                Ok(_) => "converted",
                Err(_) => "refused",
            };
            *outcomes.entry(outcome).or_insert(0) += 1;
        }
    }
    assert!(outcomes.values().sum::<i32>() >= 200, "{outcomes:?}");
}
