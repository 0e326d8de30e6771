//! `rtconv batch` on 200 real dumps with one worker and with two, in the
//! same run: the parallel speed-up (issue 7's target: at least 1.8× on two
//! cores).
//!
//! `cargo bench -p rtconv --bench batch`. One dump is recorded in-process
//! by the real recorder (two threads of recursive `fib(20)`, 43,784 spans,
//! 1 MB, named from this bench's DWARF) and copied 200 times; each iteration
//! converts all of them into a new directory: to collapsed stacks (mostly
//! CPU) and to Chrome JSON (1.9 GB of files written per iteration, so the
//! file system's share shows).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group};
use rtconv::batch::{Options, convert_all};
use rtconv::convert::Format;

const DUMPS: usize = 200;

fn fib(n: u32) -> u64 {
    let _span = ringtrace::span!();
    if n < 2 { u64::from(n) } else { fib(n - 1) + fib(n - 2) }
}

fn fleet() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rtconv-batch-bench-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("in")).expect("temp dir");
    ringtrace::start();
    let threads: Vec<_> = (0..2).map(|_| std::thread::spawn(|| black_box(fib(20)))).collect();
    for t in threads {
        t.join().expect("fib thread");
    }
    let first = dir.join("in/host-0.rtd");
    ringtrace::dump_to_file(&first).expect("dump written");
    for i in 1..DUMPS {
        std::fs::copy(&first, dir.join(format!("in/host-{i}.rtd"))).expect("copy");
    }
    dir
}

fn batch(c: &mut Criterion) {
    let dir = fleet();
    let mut g = c.benchmark_group("batch");
    g.throughput(Throughput::Elements(DUMPS as u64));
    g.sample_size(10);
    let formats = [("folded", Format::Folded), ("chrome json", Format::Chrome(Default::default()))];
    for (label, format) in formats {
        for jobs in [1, 2] {
            g.bench_function(format!("{DUMPS} dumps to {label}, {jobs} worker(s)"), |b| {
                let opts = Options {
                    jobs,
                    // Cold: names from the files each time, not from the persistent index.
                    symbols: rtconv::symbolize::Options { index: None, ..Default::default() },
                    filter: Default::default(),
                    max_dump_size: rtconv::batch::MAX_DUMP_SIZE,
                    max_bytes: None,
                };
                // Into a new, empty directory each time (as a batch usually runs); clearing it is not timed.
                b.iter_batched(
                    || drop(std::fs::remove_dir_all(dir.join("out"))),
                    |()| {
                        let said = std::sync::Mutex::new(Vec::new());
                        let summary =
                            convert_all(&[dir.join("in")], format, &dir.join("out"), &opts, &said).expect("out dir");
                        assert_eq!(summary.converted, DUMPS as u64, "{said:?}");
                    },
                    criterion::BatchSize::PerIteration,
                )
            });
        }
    }
    g.finish();
    std::fs::remove_dir_all(&dir).ok();
}

criterion_group!(benches, batch);

fn main() {
    benches();
    criterion::Criterion::default().configure_from_args().final_summary();
}
