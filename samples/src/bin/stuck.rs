//! Threads stopped inside nested spans, for the core-file tests: `stuck THREADS`.
//!
//! Thread `i` (named `stuck-i`) calls the traced `outer`, which calls the
//! traced `middle` `i` levels deep, which calls the traced `inner`, which
//! waits there. Once every thread waits, the program prints `ready` and
//! waits for its standard input to close (a test takes a core with `gcore`
//! and kills it). No dump is written: the rings are read from the core.

use std::io::Read;
use std::sync::{Arc, Barrier, mpsc};

#[ringtrace::trace]
#[inline(never)]
fn inner(all_in: &Barrier, release: &mpsc::Receiver<()>) {
    all_in.wait();
    let _ = release.recv(); // never sent: the sender stays in main until the process ends
}

#[ringtrace::trace]
#[inline(never)]
fn middle(levels: usize, all_in: &Barrier, release: &mpsc::Receiver<()>) {
    if levels > 1 {
        middle(levels - 1, all_in, release);
    } else {
        inner(all_in, release);
    }
}

#[ringtrace::trace]
#[inline(never)]
fn outer(levels: usize, all_in: &Barrier, release: &mpsc::Receiver<()>) {
    // Some finished spans first, so every ring holds records too.
    for _ in 0..levels * 10 {
        std::hint::black_box(finished(levels));
    }
    middle(levels, all_in, release);
}

#[ringtrace::trace]
#[inline(never)]
fn finished(n: usize) -> usize {
    n * 2
}

fn main() {
    let threads: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(3);
    let all_in = Arc::new(Barrier::new(threads + 1));
    let mut senders = Vec::new();
    for i in 0..threads {
        let (send, release) = mpsc::channel::<()>();
        senders.push(send);
        let all_in = Arc::clone(&all_in);
        std::thread::Builder::new()
            .name(format!("stuck-{i}"))
            .spawn(move || outer(i + 1, &all_in, &release))
            .expect("thread starts");
    }
    all_in.wait();
    println!("ready");
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(senders);
}
