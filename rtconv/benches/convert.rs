//! Conversion speed on a real dump of more than a million spans.
//!
//! `cargo bench -p rtconv --bench convert`. The dump is recorded in-process
//! by the real recorder (two threads of recursive `fib`, 1,271,242 spans),
//! so keys resolve through this bench binary's own DWARF. Reported as spans
//! per second for reading alone (the floor) and for the whole conversion
//! to Chrome JSON, to ftrace text and to statistics, in the same run.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group};
use rtconv::convert::{Format, convert};

const FIB_N: u32 = 27;

fn fib(n: u32) -> u64 {
    let _span = ringtrace::span!();
    if n < 2 { u64::from(n) } else { fib(n - 1) + fib(n - 2) }
}

fn record_dump() -> (PathBuf, u64) {
    let path = std::env::temp_dir().join(format!("rtconv-bench-{}.rtd", std::process::id()));
    ringtrace::start();
    let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(|| black_box(fib(FIB_N)))).collect();
    for t in threads {
        t.join().expect("fib thread");
    }
    let stats = ringtrace::dump_to_file(&path).expect("dump written");
    assert_eq!(stats.lost, 0, "ring too small for the bench dump");
    (path, stats.records)
}

fn conversion(c: &mut Criterion) {
    let (path, spans) = record_dump();
    let mut g = c.benchmark_group("convert");
    g.throughput(Throughput::Elements(spans));
    g.sample_size(10);
    g.bench_function("map, validate and scan the dump (floor)", |b| {
        b.iter(|| {
            let bytes = rtconv::model::open(&path).expect("readable");
            black_box(rtconv::model::decode(&path, &bytes).expect("readable").keys.len())
        })
    });
    let stats = rtconv::stats::Options {
        sort: rtconv::stats::Column::SelfTime,
        per_thread: false,
        output: rtconv::stats::Output::Table,
        view: rtconv::stats::View::Functions,
        calibrated: false,
        clean: false,
        color: false,
    };
    let formats = [
        ("dump to chrome json", Format::Chrome(Default::default())),
        ("dump to ftrace text", Format::Ftrace),
        ("dump to stats", Format::Stats(stats)),
    ];
    for (name, format) in formats {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut out = std::io::sink();
                let report =
                    convert(&path, format, &Default::default(), &Default::default(), &mut out).expect("converts");
                assert_eq!(report.spans, spans);
            })
        });
    }
    g.finish();
    std::fs::remove_file(&path).ok();
}

fn setup() {
    // SAFETY: called first thing in `main`, before any other thread exists.
    unsafe { std::env::set_var(ringtrace::RING_RECORDS_ENV, (1u64 << 20).to_string()) };
}

criterion_group!(benches, conversion);

fn main() {
    setup();
    benches();
    Criterion::default().configure_from_args().final_summary();
}
