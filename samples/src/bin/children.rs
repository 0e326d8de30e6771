//! A parent of N empty children against the same parent without them, for
//! the calibration test: `children N OUT`.
//!
//! Three rounds on the main thread, each `without-R` (a fixed amount of work
//! of its own, about 100 ns a child here) then `with-R` (the same work,
//! then N empty `child` spans back to back). The main thread's ring holds
//! every span. Calibrated (`rtconv stats --calibrated`), each `with` should
//! take what its `without` takes.

use std::hint::black_box;

use ringtrace::{Mode, RingConfig};

/// Work of the parent's own: `n` dependent multiply-adds.
#[inline(never)]
fn work(n: u64) -> u64 {
    let mut x = black_box(1u64);
    for i in 0..n {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
    }
    black_box(x)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [n, out] = args.as_slice() else {
        eprintln!("usage: children N OUT");
        std::process::exit(2);
    };
    let Ok(n) = n.parse::<u64>() else {
        eprintln!("children: N is a whole number");
        std::process::exit(2);
    };
    let records = (3 * (n as usize + 2)).next_power_of_two();
    ringtrace::set_thread_ring(RingConfig { records, mode: Mode::Overwrite }).expect("before the first span");
    macro_rules! round {
        ($without:literal, $with:literal) => {{
            {
                let _p = ringtrace::span!($without);
                work(n * 512);
            }
            {
                let _p = ringtrace::span!($with);
                work(n * 512);
                for _ in 0..n {
                    let _c = ringtrace::span!("child");
                }
            }
        }};
    }
    round!("without-0", "with-0");
    round!("without-1", "with-1");
    round!("without-2", "with-2");
    if let Err(e) = ringtrace::dump_to_file(out) {
        eprintln!("children: cannot dump to {out}: {e}");
        std::process::exit(1);
    }
}
