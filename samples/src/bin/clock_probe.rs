//! Spans of known times against `CLOCK_MONOTONIC`, for the clock fidelity
//! test: `clock_probe RUN_NS MARKS PATH`.
//!
//! Takes the start anchor first (`ringtrace::start()`, before the process
//! has read any clock) and one span `warm` (the thread's first, which makes
//! its ring), then at MARKS times evenly spaced over RUN_NS nanoseconds
//! records four short spans named `mark`, each between two reads of
//! `CLOCK_MONOTONIC`, and dumps to PATH. Prints one line per mark: the
//! monotonic nanoseconds read before and after it.

use std::time::Duration;

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [run_ns, marks, path] = args.as_slice() else {
        eprintln!("usage: clock_probe RUN_NS MARKS PATH");
        std::process::exit(2);
    };
    let (Ok(run_ns), Ok(marks)) = (run_ns.parse::<u64>(), marks.parse::<u64>()) else {
        eprintln!("clock_probe: RUN_NS and MARKS are whole numbers");
        std::process::exit(2);
    };
    ringtrace::start();
    // The thread's first span makes its ring: not inside a bracket.
    drop(ringtrace::span!("warm"));
    let mut brackets = Vec::new();
    let mut first = None;
    for i in 0..marks.max(2) {
        let before = monotonic_ns();
        let start = *first.get_or_insert(before);
        let due = start + run_ns * i / (marks.max(2) - 1);
        if due > before {
            std::thread::sleep(Duration::from_nanos(due - before));
        }
        // A few back to back: the first after a sleep runs cold and its bracket is wide.
        for _ in 0..4 {
            let before = monotonic_ns();
            drop(ringtrace::span!("mark"));
            let after = monotonic_ns();
            brackets.push((before, after));
        }
    }
    if let Err(e) = ringtrace::dump_to_file(path) {
        eprintln!("clock_probe: cannot dump to {path}: {e}");
        std::process::exit(1);
    }
    for (before, after) in brackets {
        println!("{before} {after}");
    }
}
