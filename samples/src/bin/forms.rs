//! Every instrumentation form once, with counts known exactly, for the tests.
//!
//! `forms --out PATH`. Spans (thread `main` unless said otherwise):
//!
//! | form | name in the trace | count |
//! |---|---|---|
//! | `#[trace]` free fn | `forms::free_fn` | 3 |
//! | `#[trace]` generic fn | `forms::generic` | 2 |
//! | `#[trace]` on a generic impl | `forms::Stack::push`, `forms::Stack::pop` | 4, 2 |
//! | `#[trace(addr)]` | `forms::by_address` (DWARF) | 5 |
//! | `#[trace(arg = n)]` | `forms::with_arg`, args 10, 20, 30 | 3 |
//! | `span!("outer")` around all of the above | `outer` | 1 |
//! | `span!(clock = Ordered)`, `span!(clock = Serialized, "serialized")` | `forms::main` (DWARF), `serialized` | 1, 1 |
//! | `enter!("manual")` … `exit` | `manual` | 2 |
//! | `timed!(expr)`, `timed!("timed place", &mut v[0])` | `forms::main` (DWARF), `timed place` | 1, 1 |
//! | `pulse!("tick")`, 6 passes | `tick` | 5 |
//! | `span!("hidden")` with the thread, then the process, switched off | — | 0 |
//! | thread `stop-16`: stop-when-full ring of 16, 40 × `span!("stop mode")` | `stop mode` | 16 kept, 24 dropped |
//! | thread `overwrite-16`: overwriting ring of 16, 40 × `span!("overwrite mode")` | `overwrite mode` | 16 kept, 24 lost |
//! | `span!("open at dump")` still running when the dump is written | `open at dump`, marked open | 1 |

use std::fmt::Debug;
use std::hint::black_box;

use ringtrace::clock::{Ordered, Serialized};
use ringtrace::{Mode, RingConfig};

#[ringtrace::trace]
fn free_fn() -> u32 {
    black_box(7)
}

#[ringtrace::trace]
fn generic<T: Debug>(value: T) -> String {
    format!("{value:?}")
}

struct Stack<T> {
    items: Vec<T>,
}

#[ringtrace::trace]
impl<T: Clone> Stack<T> {
    fn push(&mut self, item: T) {
        self.items.push(item);
    }

    fn pop(&mut self) -> Option<T> {
        self.items.pop()
    }
}

#[ringtrace::trace(addr)]
#[inline(never)]
fn by_address(x: u64) -> u64 {
    black_box(x.wrapping_mul(31))
}

#[ringtrace::trace(arg = n)]
fn with_arg(n: usize) -> usize {
    black_box(n + 1)
}

fn spans_on_a_thread(name: &str, mode: Mode, label_stop: bool) -> std::thread::JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            ringtrace::set_thread_ring(RingConfig { records: 16, mode }).expect("before the first span");
            for _ in 0..40 {
                if label_stop {
                    let _s = ringtrace::span!("stop mode");
                } else {
                    let _s = ringtrace::span!("overwrite mode");
                }
            }
        })
        .expect("spawn")
}

fn main() {
    let out = match std::env::args().skip_while(|a| a != "--out").nth(1) {
        Some(out) => out,
        None => {
            eprintln!("usage: forms --out PATH");
            std::process::exit(2);
        }
    };
    ringtrace::start();
    {
        let _outer = ringtrace::span!("outer");
        for _ in 0..3 {
            free_fn();
        }
        generic(1);
        generic("two");
        let mut stack = Stack { items: Vec::new() };
        for i in 0..4 {
            stack.push(i);
        }
        stack.pop();
        stack.pop();
        for i in 0..5 {
            by_address(i);
        }
        for n in [10, 20, 30] {
            with_arg(n);
        }
    }
    {
        let _ordered = ringtrace::span!(clock = Ordered);
        let _serialized = ringtrace::span!(clock = Serialized, "serialized");
    }
    let first = ringtrace::enter!("manual");
    let second = ringtrace::enter!("manual");
    ringtrace::exit(first);
    ringtrace::exit(second);

    let mut v = [1u64, 2, 3];
    let sum: u64 = ringtrace::timed!(v.iter().sum());
    *ringtrace::timed!("timed place", &mut v[0]) += sum;
    assert_eq!(v[0], 7);

    for pass in 0..6 {
        ringtrace::pulse!("tick");
        black_box(pass);
    }

    ringtrace::set_thread_enabled(false);
    drop(ringtrace::span!("hidden"));
    ringtrace::set_thread_enabled(true);
    ringtrace::set_enabled(false);
    drop(ringtrace::span!("hidden"));
    ringtrace::set_enabled(true);

    for t in [
        spans_on_a_thread("stop-16", Mode::StopWhenFull, true),
        spans_on_a_thread("overwrite-16", Mode::Overwrite, false),
    ] {
        t.join().expect("thread");
    }
    let _open = ringtrace::span!("open at dump");
    match ringtrace::dump_to_file(&out) {
        Ok(stats) => eprintln!("forms: wrote {out} ({} spans, {} lost)", stats.records, stats.lost),
        Err(e) => {
            eprintln!("forms: cannot write {out}: {e}");
            std::process::exit(1);
        }
    }
}
