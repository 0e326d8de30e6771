//! A known call tree, for the nesting test: `tree fine|coarse OUT`.
//!
//! Records, with a counter that is either the default one (`fine`) or the
//! same counter cut to steps of 2^20 ticks (`coarse`: 0.5 ms at 2 GHz, 1 ms
//! at the 1 GHz of `qemu-aarch64` 10), so that most spans start and end on
//! the same tick:
//!
//! - on the main thread, 50 times: `root` calling `a` 3 times (each calling
//!   `b` twice, each calling `c` twice), then `d`, which recurses 3 levels;
//! - on thread `loop-16` (an overwriting ring of 16), 40 calls of `tick`,
//!   one after the other: it keeps the last 16;
//! - on thread `nest-16` (an overwriting ring of 16), `outer` calling `mid`
//!   20 times, each calling `leaf` twice: of the 61 spans it keeps the last 16
//!   (`outer`, the last 5 `mid` and their 10 `leaf`), the oldest a `leaf` that
//!   lost nothing but `outer` and its `mid` having lost earlier calls.
//!
//! Then dumps to OUT. The tree is the same however coarse the counter.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};

use ringtrace::clock::{Clock, Fast};
use ringtrace::{Mode, RingConfig};

static COARSE: AtomicBool = AtomicBool::new(false);

/// The default counter, or (`coarse`) the same counter cut to steps of 2^20 ticks.
struct Stepped;

impl Clock for Stepped {
    const KIND: ringtrace::__format::CounterKind = Fast::KIND;
    const BITS: u32 = Fast::BITS;
    #[inline(always)]
    fn now() -> u64 {
        let ticks = Fast::now();
        if COARSE.load(Ordering::Relaxed) { ticks & !((1 << 20) - 1) } else { ticks }
    }
}

#[inline(never)]
fn c() {
    let _s = ringtrace::span!(clock = Stepped, "c");
    black_box(0);
}

#[inline(never)]
fn b() {
    let _s = ringtrace::span!(clock = Stepped, "b");
    c();
    c();
}

#[inline(never)]
fn a() {
    let _s = ringtrace::span!(clock = Stepped, "a");
    b();
    b();
}

#[inline(never)]
fn d(n: u32) {
    let _s = ringtrace::span!(clock = Stepped, "d");
    if n > 0 {
        d(n - 1);
    }
}

#[inline(never)]
fn mid() {
    let _s = ringtrace::span!(clock = Stepped, "mid");
    for _ in 0..2 {
        let _s = ringtrace::span!(clock = Stepped, "leaf");
        black_box(0);
    }
}

/// Runs `body` on a new thread `name` with an overwriting ring of 16 records, to its end.
fn on_a_ring_of_16(name: &str, body: fn()) {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            ringtrace::set_thread_ring(RingConfig { records: 16, mode: Mode::Overwrite })
                .expect("before the first span");
            body();
        })
        .expect("spawn")
        .join()
        .expect("the thread runs");
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [clock, out] = args.as_slice() else {
        eprintln!("usage: tree fine|coarse OUT");
        std::process::exit(2);
    };
    COARSE.store(clock == "coarse", Ordering::Relaxed);
    on_a_ring_of_16("loop-16", || {
        for _ in 0..40 {
            let _s = ringtrace::span!(clock = Stepped, "tick");
        }
    });
    on_a_ring_of_16("nest-16", || {
        let _s = ringtrace::span!(clock = Stepped, "outer");
        for _ in 0..20 {
            mid();
        }
    });
    for _ in 0..50 {
        let _root = ringtrace::span!(clock = Stepped, "root");
        for _ in 0..3 {
            a();
        }
        d(3);
    }
    if let Err(e) = ringtrace::dump_to_file(out) {
        eprintln!("tree: cannot dump to {out}: {e}");
        std::process::exit(1);
    }
}
