//! A multi-threaded workload whose spans are known exactly, for tests and demos.
//!
//! `workload --out PATH [--fib N] [--sleep-ms MS] [--rounds R] [--lines L] [--hold]`
//!
//! Threads (all named):
//! - `main` spawns the workers, then dumps.
//! - `fib-0`, `fib-1`: `fib(N)` once each, a recursive function traced with
//!   `span!()` (named from DWARF), called `2*F(N+1)-1` times per run.
//! - `sleeper`: `R` rounds of a `span!("sleep")` around a sleep of MS ms,
//!   nested inside `span!("sleeper round")`.
//! - `parser-0`, `parser-1`: `R` rounds of `parse_batch` (`#[trace]`), each
//!   calling `tokenize` and `checksum` (`span!()`) once per line.
//!
//! Defaults: N = 20, MS = 20, R = 5, L = 8. Prints what it recorded to stderr,
//! and how long each sleeper round took as measured by `Instant` *outside* its
//! spans (`workload: sleeper rounds (ns): …`): an upper bound on each span's
//! duration that holds however loaded the machine is. With `--hold` it prints
//! `ready` on stdout once the workers are done and waits for a line on stdin
//! before it dumps (for tests that change the world while it runs).

use std::io::BufRead;
use std::path::PathBuf;
use std::process::ExitCode;
use std::thread;
use std::time::{Duration, Instant};

struct Args {
    out: PathBuf,
    fib: u32,
    sleep_ms: u64,
    rounds: u32,
    lines: usize,
    hold: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args { out: PathBuf::new(), fib: 20, sleep_ms: 20, rounds: 5, lines: 8, hold: false };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--out" => args.out = value()?.into(),
            "--fib" => args.fib = value()?.parse().map_err(|e| format!("--fib: {e}"))?,
            "--sleep-ms" => args.sleep_ms = value()?.parse().map_err(|e| format!("--sleep-ms: {e}"))?,
            "--rounds" => args.rounds = value()?.parse().map_err(|e| format!("--rounds: {e}"))?,
            "--lines" => args.lines = value()?.parse().map_err(|e| format!("--lines: {e}"))?,
            "--hold" => args.hold = true,
            other => return Err(format!("unknown argument {other}")),
        }
    }
    if args.out.as_os_str().is_empty() {
        return Err("--out PATH is required".into());
    }
    Ok(args)
}

/// The naive recursive Fibonacci: one span per call.
fn fib(n: u32) -> u64 {
    let _span = ringtrace::span!();
    if n < 2 { u64::from(n) } else { fib(n - 1) + fib(n - 2) }
}

fn tokenize(line: &str) -> usize {
    let _span = ringtrace::span!();
    line.split_whitespace().count()
}

fn checksum(line: &str) -> u64 {
    let _span = ringtrace::span!();
    line.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

#[ringtrace::trace]
fn parse_batch(lines: &[String]) -> u64 {
    lines.iter().map(|l| tokenize(l) as u64 ^ checksum(l)).fold(0, u64::wrapping_add)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("workload: {e}");
            eprintln!("usage: workload --out PATH [--fib N] [--sleep-ms MS] [--rounds R] [--lines L] [--hold]");
            return ExitCode::from(2);
        }
    };
    ringtrace::start();
    let lines: Vec<String> = (0..args.lines).map(|i| format!("line {i} of the batch with some words")).collect();

    let mut workers = Vec::new();
    for i in 0..2 {
        let n = args.fib;
        workers.push(thread::Builder::new().name(format!("fib-{i}")).spawn(move || std::hint::black_box(fib(n))));
    }
    let (rounds, sleep) = (args.rounds, Duration::from_millis(args.sleep_ms));
    let (measured_tx, measured) = std::sync::mpsc::channel();
    workers.push(thread::Builder::new().name("sleeper".into()).spawn(move || {
        for _ in 0..rounds {
            let outside = Instant::now();
            {
                let _round = ringtrace::span!("sleeper round");
                let _sleep = ringtrace::span!("sleep");
                thread::sleep(sleep);
            }
            let _ = measured_tx.send(outside.elapsed().as_nanos());
        }
        0
    }));
    for i in 0..2 {
        let lines = lines.clone();
        workers.push(
            thread::Builder::new()
                .name(format!("parser-{i}"))
                .spawn(move || (0..rounds).map(|_| parse_batch(&lines)).fold(0, u64::wrapping_add)),
        );
    }
    for w in workers {
        match w.map(|h| h.join()) {
            Ok(Ok(_)) => {}
            _ => {
                eprintln!("workload: a worker thread failed");
                return ExitCode::FAILURE;
            }
        }
    }
    {
        let _span = ringtrace::span!("main done");
    }
    let rounds: Vec<String> = measured.try_iter().map(|ns| ns.to_string()).collect();
    eprintln!("workload: sleeper rounds (ns): {}", rounds.join(" "));
    if args.hold {
        println!("ready");
        let _ = std::io::stdin().lock().read_line(&mut String::new());
    }
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty())
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("workload: cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    match ringtrace::dump_to_file(&args.out) {
        Ok(stats) => {
            eprintln!(
                "workload: wrote {} ({} rings, {} spans, {} lost, {} bytes)",
                args.out.display(),
                stats.rings,
                stats.records,
                stats.lost,
                stats.bytes
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("workload: cannot write {}: {e}", args.out.display());
            ExitCode::FAILURE
        }
    }
}
