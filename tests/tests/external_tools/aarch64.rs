//! The recorder on aarch64 Linux, run under `qemu-aarch64` (user-mode QEMU):
//! the workload sample built for `aarch64-unknown-linux-musl` (static, linked
//! by rust-lld), so its code-address keys (`adr`) and its clock (`CNTVCT_EL0`)
//! are checked on the real ISA, against the sample's known call counts and the
//! sleeps it measured itself. QEMU 10.0 reads `CNTFRQ_EL0` as 0 in user mode
//! (QEMU issue 3159), so the rate is the anchors'; its counter follows the
//! host's wall clock, whose steps the test watches ([`WallClockWatch`]).

use ringtrace_tests::wall_clock::WallClockWatch;
use ringtrace_tests::{at_least, at_most, build_aarch64_sample, parse_chrome, scratch, sleeper_rounds, tool};

#[test]
fn an_aarch64_program_under_qemu_user_keys_spans_by_code_address_and_times_them_by_cntvct() {
    let exe = build_aarch64_sample("workload");

    let dir = scratch("aarch64");
    let dump = dir.join("w.rtd");
    let watch = WallClockWatch::start();
    let run = tool("timeout")
        .args(["-s", "KILL", "300", "qemu-aarch64"])
        .arg(&exe)
        .args(["--fib", "12", "--out"])
        .arg(&dump)
        .output()
        .unwrap();
    let stepped = watch.stop();
    let stderr = String::from_utf8_lossy(&run.stderr).into_owned();
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    // The sleeper's rounds as the program measured them outside its spans.
    let outside = sleeper_rounds(&stderr);

    let info = ringtrace_tests::rtconv().arg("info").arg(&dump).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout).into_owned();
    assert!(info.contains("CNTVCT_EL0"), "{info}");
    assert!(info.contains("unknown 0"), "every key named: {info}");
    let anchors_ns: f64 = info
        .split_once("from anchors ")
        .and_then(|(_, rest)| rest.split_once(" s apart"))
        .and_then(|(seconds, _)| seconds.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no anchor gap in {info}"))
        * 1e9;
    let out = ringtrace_tests::rtconv().arg("convert").arg(&dump).args(["-o", "-"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = parse_chrome(&String::from_utf8(out.stdout).unwrap());
    let count = |name: &str| trace.events.iter().filter(|e| e.name == name).count();
    // fib(12) makes 2·F(13) − 1 = 465 calls, on each of two threads; named from the binary's DWARF.
    assert_eq!(count("workload::fib"), 2 * 465);
    assert_eq!(count("workload::parse_batch"), 10);
    // Each sleeper round: at least its 20 ms sleep, at most what the program measured around it —
    // give or take the host's wall-clock steps during the run (none, on a host that took none): a
    // step inside a span moves it by the step, and one between the anchors moves the rate by
    // step / gap.
    let slack = |ns: u64| stepped + (ns as f64 * stepped as f64 / anchors_ns) as u64;
    let rounds: Vec<_> = trace.events.iter().filter(|e| e.name == "sleeper round").collect();
    assert_eq!(rounds.len(), outside.len());
    for (span, &outside) in rounds.iter().zip(&outside) {
        let ns = span.dur_ns as u64;
        let (least, most) = (at_least(20_000_000) - slack(20_000_000), at_most(outside) + slack(outside));
        assert!(least <= ns && ns <= most, "{ns} ns, measured outside {outside}; the wall clock stepped {stepped} ns");
    }
}
