//! Conversion speed on dumps of more than a million spans.
//!
//! `cargo bench -p rtconv --bench convert`. Two dumps:
//! - `fib`: recorded in-process by the real recorder (two threads of
//!   recursive `fib`, 1,271,242 spans of one function), so keys resolve
//!   through this bench binary's own DWARF;
//! - `interpreter`: written with the format crate in an interpreter's shape
//!   — a stream of 2,000 chunks of uneven size, 1,000,000 spans of 480
//!   functions called in turn (a few hot, most rare, as the Lua trace of
//!   `vs_uftrace.sh lua` has them), nesting 2 to 40 deep; its keys are not
//!   named (a stream's own cost, not DWARF's).
//!
//! `RTCONV_BENCH_DUMPS_TO=DIR` also copies the two dumps there (`fib.rtd`, `interpreter.rtd`).
//!
//! Reported as spans per second for reading alone (the floor) and for the
//! whole conversion to Chrome JSON, Perfetto, ftrace text and statistics, in
//! the same run; then what an output budget (`--max-bytes`) adds: its pass
//! alone, and the conversion within a tenth of the whole output's size.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group};
use rtconv::budget::{Layout, Plan};
use rtconv::convert::{Budget, Format, Input, convert, convert_within};

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

/// The `interpreter` dump (see the crate docs): its path and spans.
fn interpreter_dump() -> (PathBuf, u64) {
    use ringtrace_format::test_util::{DumpBuilder, XorShift};
    use ringtrace_format::{Record, RingInfo};
    const SPANS: u64 = 1_000_000;
    const FUNCTIONS: u64 = 480;
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut next = move |m: u64| rng.below(m);
    // A call tree walked depth first: each step enters a function (a few hot ones most
    // often: the square of a uniform draw) or returns; spans in the order they end.
    let (mut now, mut open, mut ended) = (1_000u64, Vec::<(u64, u64)>::new(), Vec::new());
    while (ended.len() as u64) < SPANS {
        now += 1 + next(40);
        if open.len() < 2 || (open.len() < 40 && next(2) == 0) {
            let r = next(FUNCTIONS);
            open.push((0x40_0000 + r * r / FUNCTIONS * 64, now));
        } else if let Some((key, enter)) = open.pop() {
            ended.push(Record { key, enter, exit: now });
        }
    }
    let (mut w, _) = DumpBuilder::new("interpreter").dumped_at(now).start();
    let info = RingInfo { tid: 1, capacity: 1 << 16, written: 0, dropped: 0, aux: 0, flags: 0, name: b"interpreter" };
    let mut first = 0u64;
    for chunk in ended.chunks(250).collect::<Vec<_>>().chunks(4) {
        // 2,000 chunks of 250 to 1,000 records: stream chunks are what the drain found.
        let take = 1 + next(4) as usize;
        for part in [chunk[..take.min(chunk.len())].concat(), chunk[take.min(chunk.len())..].concat()] {
            if part.is_empty() {
                continue;
            }
            let written = first + part.len() as u64;
            w.ring_chunk(&RingInfo { written, ..info }, 1, first, &part, &[]).expect("chunk");
            first = written;
        }
    }
    let path = std::env::temp_dir().join(format!("rtconv-bench-interpreter-{}.rtd", std::process::id()));
    std::fs::write(&path, w.finish().expect("dump").0).expect("dump written");
    (path, SPANS)
}

fn conversion(c: &mut Criterion) {
    let (path, spans) = record_dump();
    keep(&path, "fib.rtd");
    bench_dump(c, "convert", &path, spans);
    std::fs::remove_file(&path).ok();
    let (path, spans) = interpreter_dump();
    keep(&path, "interpreter.rtd");
    bench_dump(c, "convert interpreter", &path, spans);
    std::fs::remove_file(&path).ok();
}

/// A copy of the dump at `path` as `name` in `RTCONV_BENCH_DUMPS_TO`, if set: the same dumps for
/// the command line (docs/PERFORMANCE.md measures budgets on `interpreter.rtd` so).
fn keep(path: &std::path::Path, name: &str) {
    if let Some(dir) = std::env::var_os("RTCONV_BENCH_DUMPS_TO") {
        std::fs::copy(path, PathBuf::from(dir).join(name)).expect("dump copied");
    }
}

fn bench_dump(c: &mut Criterion, group: &str, path: &std::path::Path, spans: u64) {
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(spans));
    g.sample_size(10);
    g.bench_function("map, validate and scan the dump (floor)", |b| {
        b.iter(|| {
            let bytes = rtconv::model::open(path).expect("readable");
            black_box(rtconv::model::decode(path, &bytes).expect("readable").keys.len())
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
        ("dump to perfetto", Format::Perfetto),
        ("dump to ftrace text", Format::Ftrace),
        ("dump to stats", Format::Stats(stats)),
    ];
    for (name, format) in formats {
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut out = std::io::sink();
                let report =
                    convert(path, format, &Default::default(), &Default::default(), &mut out).expect("converts");
                assert_eq!(report.spans, spans);
            })
        });
    }
    // Budgets (`--max-bytes`): the spans decoded in start order and nothing else (what the budget
    // pass repeats), the budget pass alone (the size model and the threshold), and the conversion
    // within a tenth of the whole output's size.
    let (opts, filter) = (rtconv::symbolize::Options::default(), rtconv::model::Filter::default());
    let cache = rtconv::symbolize::Cache::default();
    let bytes = rtconv::model::open(path).expect("readable");
    let input = Input::new(path, &bytes, &opts, &filter, &cache);
    g.bench_function("spans decoded in start order (what a budget pass repeats)", |b| {
        b.iter(|| {
            let (n, _) = rtconv::convert::with_timeline(input, false, |tl| {
                let (mut n, mut threads) = (0, tl.threads());
                while let Some(mut t) = threads.next() {
                    while let Some(batch) = t.next_batch() {
                        n += batch.len();
                    }
                }
                (n, threads.anomalies())
            })
            .expect("converts");
            assert_eq!(n as u64, spans);
        })
    });
    g.bench_function("spans in pre-order (arrivals)", |b| {
        b.iter(|| {
            let (n, _) = rtconv::convert::with_timeline(input, false, |tl| {
                let mut n = 0u64;
                let found = tl.arrivals(|a| n += a.duration & 1);
                (n, found)
            })
            .expect("converts");
            black_box(n);
        })
    });
    g.bench_function("prepare only", |b| {
        b.iter(|| {
            let (n, _) = rtconv::convert::with_timeline(input, false, |tl| (tl.keys.len(), Default::default()))
                .expect("converts");
            black_box(n);
        })
    });
    let layouts = [
        ("chrome json", Format::Chrome(Default::default()), Layout::Chrome(Default::default())),
        ("perfetto", Format::Perfetto, Layout::Perfetto),
        ("ftrace text", Format::Ftrace, Layout::Ftrace),
    ];
    for (name, format, layout) in layouts {
        let plan_whole = |tl: &rtconv::model::Timeline<'_>| Plan::new(tl, &filter, layout).whole();
        let (whole, _) =
            rtconv::convert::with_timeline(input, false, |tl| (plan_whole(tl), Default::default())).expect("converts");
        g.bench_function(format!("budget pass for {name} (size model, threshold)"), |b| {
            b.iter(|| {
                let (choice, _) = rtconv::convert::with_timeline(input, false, |tl| {
                    let plan = Plan::new(tl, &filter, layout);
                    (plan.choose(whole / 10, whole / 10), Default::default())
                })
                .expect("converts");
                black_box(choice.expect("fits"));
            })
        });
        g.bench_function(format!("dump to {name} within a tenth of its size"), |b| {
            b.iter(|| {
                let budget = Budget { max_bytes: whole / 10, gzip: false };
                let mut out = rtconv::io::Once(std::io::sink());
                let report = convert_within(input, format, budget, &mut out).expect("converts");
                assert!(report.budget.expect("a budget").written <= whole / 10);
            })
        });
    }
    g.finish();
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
