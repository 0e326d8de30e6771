//! Threads stopped inside nested spans, for the core-file tests:
//! `stuck THREADS [abort]`.
//!
//! Thread `i` (named `stuck-i`) calls the traced `outer`, which calls the
//! traced `middle` `i + 1` levels deep, which calls the traced `inner`, which
//! waits there. Once every thread waits, the program prints `ready` and
//! waits for its standard input to close (a test takes a core with `gcore`
//! and kills it) — or, with `abort`, the last thread aborts the process from
//! inside its `inner` (a core of a crash). No dump is written: the rings are
//! read from the core.

use std::io::Read;
use std::sync::{Arc, Barrier, mpsc};

#[ringtrace::trace]
#[inline(never)]
fn inner(all_in: &Barrier, release: &mpsc::Receiver<()>, abort: bool) {
    all_in.wait();
    if abort {
        // After main saw every thread in place (it waits on the barrier too).
        std::process::abort();
    }
    let _ = release.recv(); // never sent: the sender stays in main until the process ends
}

#[ringtrace::trace]
#[inline(never)]
fn middle(levels: usize, all_in: &Barrier, release: &mpsc::Receiver<()>, abort: bool) {
    if levels > 1 {
        middle(levels - 1, all_in, release, abort);
    } else {
        inner(all_in, release, abort);
    }
}

#[ringtrace::trace]
#[inline(never)]
fn outer(levels: usize, all_in: &Barrier, release: &mpsc::Receiver<()>, abort: bool) {
    // Some finished spans first, so every ring holds records too.
    for _ in 0..levels * 10 {
        std::hint::black_box(finished(levels));
    }
    middle(levels, all_in, release, abort);
}

#[ringtrace::trace]
#[inline(never)]
fn finished(n: usize) -> usize {
    n * 2
}

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(3);
    let abort = std::env::args().nth(2).as_deref() == Some("abort");
    let all_in = Arc::new(Barrier::new(threads + 1));
    let mut senders = Vec::new();
    for i in 0..threads {
        let (send, release) = mpsc::channel::<()>();
        senders.push(send);
        let all_in = Arc::clone(&all_in);
        std::thread::Builder::new()
            .name(format!("stuck-{i}"))
            .spawn(move || outer(i + 1, &all_in, &release, abort && i + 1 == threads))
            .expect("thread starts");
    }
    all_in.wait();
    if abort {
        // The last thread is aborting the process: hold every other thread where it is.
        loop {
            std::thread::park();
        }
    }
    println!("ready");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(senders);
}
