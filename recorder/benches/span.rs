//! Per-span cost of every instrumentation form and clock, the disabled path,
//! and the same empty span in peer tracers, all in one run, against the bare
//! counter pair.
//!
//! `cargo bench -p ringtrace --bench span`; the ratios to the bare pair are
//! what docs/PERFORMANCE.md reports.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ringtrace::clock::{Clock, Fast, Ordered, Serialized};

fn bare_pair<C: Clock>() {
    let enter = C::now();
    let exit = C::now();
    black_box((enter, exit));
}

#[ringtrace::trace]
#[inline(never)]
fn traced() {}

#[ringtrace::trace(arg = n)]
#[inline(never)]
fn traced_with_arg(n: u64) {
    black_box(n);
}

#[inline(never)]
fn empty() {}

fn ringtrace_forms(c: &mut Criterion) {
    let mut g = c.benchmark_group("ringtrace");
    // Make sure the thread's ring exists before timing: the first span allocates it.
    drop(ringtrace::span!());
    g.bench_function("bare counter pair (Fast: rdtsc)", |b| b.iter(bare_pair::<Fast>));
    g.bench_function("bare counter pair (Ordered: rdtscp)", |b| b.iter(bare_pair::<Ordered>));
    g.bench_function("bare counter pair (Serialized: lfence; rdtsc)", |b| b.iter(bare_pair::<Serialized>));
    g.bench_function("span!()", |b| b.iter(|| drop(ringtrace::span!())));
    g.bench_function("span!(\"label\")", |b| b.iter(|| drop(ringtrace::span!("label"))));
    g.bench_function("span!(clock = Ordered)", |b| b.iter(|| drop(ringtrace::span!(clock = Ordered))));
    g.bench_function("span!(clock = Serialized)", |b| b.iter(|| drop(ringtrace::span!(clock = Serialized))));
    g.bench_function("call of an empty fn (baseline for #[trace])", |b| b.iter(empty));
    g.bench_function("#[trace] fn", |b| b.iter(traced));
    g.bench_function("#[trace(arg = n)] fn", |b| b.iter(|| traced_with_arg(black_box(7))));
    g.bench_function("timed!(expr)", |b| b.iter(|| ringtrace::timed!(black_box(1u64))));
    g.bench_function("enter!() + exit()", |b| b.iter(|| ringtrace::exit(ringtrace::enter!())));
    g.bench_function("pulse!() (one pass)", |b| b.iter(|| ringtrace::pulse!()));
    ringtrace::set_enabled(false);
    g.bench_function("span!() switched off at run time", |b| b.iter(|| drop(ringtrace::span!())));
    ringtrace::set_enabled(true);
    g.finish();
}

/// fastrace's reporter gets every span; this one drops them.
struct DropReporter;

impl fastrace::collector::Reporter for DropReporter {
    fn report(&mut self, spans: Vec<fastrace::prelude::SpanRecord>) {
        black_box(spans);
    }
}

/// A tracing layer that does nothing: the cost of tracing's own machinery.
struct NoopLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for NoopLayer {}

fn peers(c: &mut Criterion) {
    use tracing_subscriber::layer::SubscriberExt;

    let mut g = c.benchmark_group("peers");
    g.bench_function("bare counter pair (Fast: rdtsc)", |b| b.iter(bare_pair::<Fast>));

    fastrace::set_reporter(DropReporter, fastrace::collector::Config::default());
    g.bench_function("fastrace LocalSpan (in a root span, reporter on)", |b| {
        // A root span of 1,000 local spans at a time: fastrace stops keeping
        // spans past 10,240 per root, and would then measure nothing.
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for chunk in 0..iters.div_ceil(1_000) {
                let n = (iters - chunk * 1_000).min(1_000);
                let root = fastrace::Span::root("root", fastrace::prelude::SpanContext::random());
                let parent = root.set_local_parent();
                let start = Instant::now();
                for _ in 0..n {
                    drop(fastrace::local::LocalSpan::enter_with_local_parent("span"));
                }
                total += start.elapsed();
                drop(parent);
                drop(root);
            }
            total
        })
    });
    fastrace::flush();

    puffin::set_scopes_on(true);
    g.bench_function("puffin profile_scope! (scopes on, in a frame)", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            // Frames of 10,000 scopes; closing a frame is not timed.
            for chunk in 0..iters.div_ceil(10_000) {
                let n = (iters - chunk * 10_000).min(10_000);
                let start = Instant::now();
                for _ in 0..n {
                    puffin::profile_scope!("span");
                }
                total += start.elapsed();
                puffin::GlobalProfiler::lock().new_frame();
            }
            total
        })
    });
    puffin::set_scopes_on(false);

    let noop = tracing_subscriber::registry().with(NoopLayer);
    tracing::subscriber::with_default(noop, || {
        g.bench_function("tracing span (registry + no-op layer)", |b| {
            b.iter(|| drop(tracing::info_span!("span").entered()))
        });
    });

    let (chrome, flush_guard) = tracing_chrome::ChromeLayerBuilder::new().file("/dev/null").build();
    let chrome = tracing_subscriber::registry().with(chrome);
    tracing::subscriber::with_default(chrome, || {
        g.bench_function("tracing-chrome span (to /dev/null)", |b| {
            b.iter(|| drop(tracing::info_span!("span").entered()))
        });
    });
    drop(flush_guard);
    g.finish();
}

criterion_group!(benches, ringtrace_forms, peers);
criterion_main!(benches);
