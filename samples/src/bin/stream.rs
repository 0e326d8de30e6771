//! Streaming capture, for the end-to-end tests: `stream MODE PATH`.
//!
//! - `whole THREADS CALLS`: streams to PATH; THREADS threads each make CALLS
//!   calls of `step` (a `span!()`, each inside the thread's `span!("thread")`),
//!   then the stream is finished. Prints nothing.
//! - `killed CALLS`: streams to PATH; makes CALLS calls of `before`, syncs
//!   the stream, prints `synced`, then calls `after` until it is killed.

use std::hint::black_box;
use std::path::PathBuf;

#[inline(never)]
fn step(i: u64) -> u64 {
    let _span = ringtrace::span!();
    black_box(i.wrapping_mul(31))
}

#[inline(never)]
fn before(i: u64) -> u64 {
    let _span = ringtrace::span!("before");
    black_box(i)
}

#[inline(never)]
fn after(i: u64) -> u64 {
    let _span = ringtrace::span!("after");
    black_box(i)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!("usage: stream whole THREADS CALLS PATH | stream killed CALLS PATH");
        std::process::exit(2);
    };
    let number = |s: &String| s.parse::<u64>().unwrap_or_else(|_| usage());
    match args.as_slice() {
        [mode, threads, calls, path] if mode == "whole" => {
            let stream = ringtrace::stream_to(PathBuf::from(path)).expect("stream starts");
            let calls = number(calls);
            let workers: Vec<_> = (0..number(threads))
                .map(|t| {
                    std::thread::Builder::new()
                        .name(format!("worker-{t}"))
                        .spawn(move || {
                            let _span = ringtrace::span!("thread");
                            (0..calls).map(step).fold(0, u64::wrapping_add)
                        })
                        .expect("thread starts")
                })
                .collect();
            for w in workers {
                black_box(w.join().expect("worker runs"));
            }
            stream.finish().expect("stream completes");
        }
        [mode, calls, path] if mode == "killed" => {
            let _stream = ringtrace::stream_to(PathBuf::from(path)).expect("stream starts");
            black_box((0..number(calls)).map(before).fold(0, u64::wrapping_add));
            ringtrace::stream_sync().expect("stream syncs");
            println!("synced");
            use std::io::Write;
            std::io::stdout().flush().expect("stdout");
            let mut i = 0;
            loop {
                black_box(after(i));
                i += 1;
            }
        }
        _ => usage(),
    }
}
