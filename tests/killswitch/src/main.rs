//! Uses every instrumentation form; with `off` they must all vanish.

use std::hint::black_box;

#[ringtrace::trace]
fn named(x: u64) -> u64 {
    black_box(x + 1)
}

#[ringtrace::trace(addr, arg = x)]
fn by_address(x: u64) -> u64 {
    black_box(x * 2)
}

struct Counter(u64);

#[ringtrace::trace]
impl Counter {
    fn bump(&mut self) {
        self.0 += 1;
    }
}

fn main() {
    let _a = ringtrace::span!();
    let _b = ringtrace::span!("label");
    let _c = ringtrace::span!(clock = ringtrace::clock::Serialized, "serialized");
    let token = ringtrace::enter!("manual");
    let mut counter = Counter(0);
    for i in 0..3 {
        ringtrace::pulse!("loop");
        counter.bump();
        black_box(named(i) + by_address(i));
    }
    ringtrace::exit(token);
    let mut v = [1u64, 2];
    *ringtrace::timed!("place", &mut v[0]) += ringtrace::timed!(counter.0);
    let path = std::env::args().nth(1).expect("usage: killswitch DUMP");
    let stats = ringtrace::dump_to_file(path).expect("dump written (or, with off, nothing)");
    println!("{} {} {}", v[0], counter.0, stats.records);
}
