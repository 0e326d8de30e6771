//! The recorder on aarch64 Linux, run under `qemu-aarch64` (user-mode QEMU):
//! the workload sample built for `aarch64-unknown-linux-musl` (static, linked
//! by rust-lld), so its code-address keys (`adr`) and its clock (`CNTVCT_EL0`,
//! at the rate `CNTFRQ_EL0` states) are checked on the real ISA, against the
//! sample's known call counts and the sleeps it measured itself.

use ringtrace_tests::{at_least, at_most, build_aarch64_sample, parse_chrome, scratch, tool};

#[test]
fn an_aarch64_program_under_qemu_user_keys_spans_by_code_address_and_times_them_by_cntvct() {
    let exe = build_aarch64_sample("workload");

    let dir = scratch("aarch64");
    let dump = dir.join("w.rtd");
    let run = tool("timeout")
        .args(["-s", "KILL", "300", "qemu-aarch64"])
        .arg(&exe)
        .args(["--fib", "12", "--out"])
        .arg(&dump)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // The sleeper's rounds as the program measured them outside its spans.
    let outside: Vec<u64> = stderr
        .lines()
        .find_map(|l| l.strip_prefix("workload: sleeper rounds (ns): "))
        .unwrap_or_else(|| panic!("no sleeper line in {stderr}"))
        .split_whitespace()
        .map(|n| n.parse().unwrap())
        .collect();

    let info = ringtrace_tests::rtconv().arg("info").arg(&dump).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    assert!(info.contains("CNTVCT_EL0"), "{info}");
    assert!(info.contains("unknown 0"), "every key named: {info}");
    let out = ringtrace_tests::rtconv().arg("convert").arg(&dump).args(["-o", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = parse_chrome(&String::from_utf8(out.stdout).unwrap());
    let count = |name: &str| trace.events.iter().filter(|e| e.name == name).count();
    // fib(12) makes 2·F(13) − 1 = 465 calls, on each of two threads; named from the binary's DWARF.
    assert_eq!(count("workload::fib"), 2 * 465);
    assert_eq!(count("workload::parse_batch"), 10);
    // Each sleeper round: at least its 20 ms sleep, at most what the program measured around it.
    let rounds: Vec<_> = trace.events.iter().filter(|e| e.name == "sleeper round").collect();
    assert_eq!(rounds.len(), outside.len());
    for (span, &outside) in rounds.iter().zip(&outside) {
        let ns = span.dur_ns as u64;
        assert!(at_least(20_000_000) <= ns && ns <= at_most(outside), "{ns} ns, measured outside {outside}");
    }
}
