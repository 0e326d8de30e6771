//! Per-span cost of the recorder against the bare counter pair, in one run.
//!
//! `cargo bench -p ringtrace --bench span`; the ratio to `bare rdtsc pair`
//! is the number that matters (see docs/PERFORMANCE.md).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};

fn spans(c: &mut Criterion) {
    let mut g = c.benchmark_group("per span");
    g.bench_function("bare counter pair", |b| {
        b.iter(|| {
            let enter = ringtrace::clock::now();
            let exit = ringtrace::clock::now();
            black_box((enter, exit));
        })
    });
    // Make sure the thread's ring exists before timing: the first span allocates it.
    drop(ringtrace::span!());
    g.bench_function("span!()", |b| {
        b.iter(|| {
            let _span = ringtrace::span!();
        })
    });
    g.bench_function("span!(\"label\")", |b| {
        b.iter(|| {
            let _span = ringtrace::span!("label");
        })
    });
    g.finish();
}

criterion_group!(benches, spans);
criterion_main!(benches);
