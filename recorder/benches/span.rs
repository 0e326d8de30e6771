//! Per-span cost of every instrumentation form and clock, the disabled path,
//! and the same empty span in peer tracers, all in one run, against the bare
//! counter pair.
//!
//! First, robust to a noisy machine, the ratios that matter: chunks of 4096
//! bare counter pairs and chunks of 4096 spans of each form (each around a
//! `black_box(j)`), interleaved in one process, each chunk timed with the
//! counter; medians of 400 chunks each, in 3 rounds. Then how far each
//! clock's stamps run early: an enter stamp taken right after a chain of
//! cache-missing loads, against an `lfence`d read just inside the span; an
//! exit stamp right after such a chain, against one just after it. Then
//! criterion's own measurement of every form and of the peers.
//!
//! `cargo bench -p ringtrace --bench span`; the ratios to the bare pair are
//! what docs/PERFORMANCE.md reports. `-- --smoke` runs each part briefly
//! (CI, as a check that it runs; no figure is asserted).

use std::hint::black_box;
use std::time::{Duration, Instant};

#[path = "common/cpu_model.rs"]
mod cpu_model;

use criterion::{Criterion, criterion_group};
use ringtrace::clock::{Clock, Fast, Fenced, Ordered, Serialized};

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

/// Spans (or bare pairs) per interleaved chunk.
const CHUNK: u64 = 4096;

/// A chunk of `CHUNK` spans of one form, each around `black_box(j)`.
macro_rules! chunk_of {
    ($span:expr) => {
        &|| {
            let span = $span;
            for j in 0..CHUNK {
                span(j);
            }
        }
    };
}

fn bare_around<C: Clock>(j: u64) {
    let enter = C::enter_now();
    black_box(j);
    let exit = C::now();
    black_box((enter, exit));
}

/// The least any recorder does per span, for reference: a thread-local ring
/// of {key, enter, exit} records with a head, no open-span stack, no off
/// switch, no protocol for a reader on another thread.
mod minimal {
    use std::cell::Cell;

    const RING: usize = 1 << 16;

    pub struct Ring {
        head: Cell<usize>,
        slots: Cell<*mut [u64; 3]>,
    }

    std::thread_local! {
        pub static RING_OF_THREAD: Ring = const { Ring { head: Cell::new(0), slots: Cell::new(std::ptr::null_mut()) } };
    }

    /// Gives the calling thread its ring.
    pub fn setup() {
        let slots = Box::leak(vec![[0u64; 3]; RING].into_boxed_slice());
        RING_OF_THREAD.with(|r| r.slots.set(slots.as_mut_ptr()));
    }

    #[inline(always)]
    pub fn record(key: u64, enter: u64, exit: u64) {
        RING_OF_THREAD.with(|r| {
            let h = r.head.get();
            r.head.set(h + 1);
            // SAFETY: `setup` gave this thread a ring of `RING` records; the index is masked.
            unsafe { *r.slots.get().add(h & (RING - 1)) = [key, enter, exit] };
        });
    }
}

fn minimal_span(j: u64) {
    let enter = Fast::now();
    black_box(j);
    let exit = Fast::now();
    minimal::record(0x5ca1_ab1e, enter, exit);
}

/// (name, chunk, index of the bare pair it is compared with).
type Variant<'a> = (&'static str, &'a dyn Fn(), usize);

fn interleaved(rounds: usize, chunks: usize) {
    drop(ringtrace::span!());
    minimal::setup();
    let variants: [Variant; 9] = [
        ("bare counter pair (Fast)", chunk_of!(bare_around::<Fast>), 0),
        ("reference: minimal recording (Fast)", chunk_of!(minimal_span), 0),
        (
            "span!()",
            chunk_of!(|j| {
                let _s = ringtrace::span!();
                black_box(j);
            }),
            0,
        ),
        (
            "enter!() + exit()",
            chunk_of!(|j| {
                let e = ringtrace::enter!();
                black_box(j);
                ringtrace::exit(e);
            }),
            0,
        ),
        ("bare pair, Fenced (lfence; rdtsc / rdtsc)", chunk_of!(bare_around::<Fenced>), 4),
        (
            "span!(clock = Fenced)",
            chunk_of!(|j| {
                let _s = ringtrace::span!(clock = Fenced);
                black_box(j);
            }),
            4,
        ),
        ("bare pair, Ordered (rdtscp)", chunk_of!(bare_around::<Ordered>), 6),
        (
            "span!(clock = Ordered)",
            chunk_of!(|j| {
                let _s = ringtrace::span!(clock = Ordered);
                black_box(j);
            }),
            6,
        ),
        ("bare pair, Serialized", chunk_of!(bare_around::<Serialized>), 8),
    ];
    for round in 1..=rounds {
        let mut ticks = vec![Vec::with_capacity(chunks); variants.len()];
        for _ in 0..chunks {
            for (i, (_, chunk, _)) in variants.iter().enumerate() {
                let t0 = Fast::now();
                chunk();
                ticks[i].push(Fast::now() - t0);
            }
        }
        let medians: Vec<f64> = ticks
            .iter_mut()
            .map(|t| {
                t.sort_unstable();
                t[chunks / 2] as f64 / CHUNK as f64
            })
            .collect();
        println!("interleaved, round {round} (median ticks per span of {chunks} chunks of {CHUNK}):");
        for ((name, _, base), m) in variants.iter().zip(&medians) {
            println!(
                "  {name:<44} {m:>6.1}  {:.3}x its bare pair, {:.3}x the Fast pair",
                m / medians[*base],
                m / medians[0]
            );
        }
    }
}

/// A random cycle through `len` slots: each load misses the cache.
fn pointer_cycle(len: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    let mut rng = ringtrace_format::test_util::XorShift(0x9E37_79B9_7F4A_7C15);
    for i in (1..len).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut next = vec![0; len];
    for w in 0..len {
        next[order[w]] = order[(w + 1) % len];
    }
    next
}

/// `steps` dependent loads along the cycle from `at`.
#[inline(always)]
fn chase(next: &[usize], mut at: usize, steps: usize) -> usize {
    for _ in 0..steps {
        at = next[at];
    }
    at
}

/// Ticks by which clock `C`'s enter stamp precedes an `lfence`d read right
/// after it, and its exit stamp an `lfence`d read right after the work it
/// ends, each following a chain of cache-missing loads: (enter, exit) samples.
fn early<C: Clock>(next: &[usize], samples: usize) -> (Vec<i64>, Vec<i64>) {
    let (mut enter_early, mut exit_early) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    let mut at = 0;
    for _ in 0..samples {
        at = chase(next, at, 64);
        // The chain's result is not an input of the read: out of order, it may run ahead.
        let enter = C::enter_now();
        let inside = Serialized::now();
        black_box(at);
        enter_early.push(inside.wrapping_sub(enter) as i64);
        at = chase(next, at, 64);
        let exit = C::now();
        black_box(at);
        let after = Serialized::now();
        exit_early.push(after.wrapping_sub(exit) as i64);
    }
    (enter_early, exit_early)
}

fn percentile(v: &mut [i64], p: usize) -> i64 {
    v.sort_unstable();
    v[(v.len() - 1) * p / 100]
}

fn stamps_run_early(samples: usize) {
    let next = pointer_cycle(1 << 23); // 64 MiB: far past the caches
    println!("how far stamps run early after 64 cache-missing loads, ticks (median / p90 / max of {samples}):");
    fn line<C: Clock>(name: &str, next: &[usize], samples: usize) {
        let (mut e, mut x) = early::<C>(next, samples);
        let (e50, e90, e100) = (percentile(&mut e, 50), percentile(&mut e, 90), percentile(&mut e, 100));
        let (x50, x90, x100) = (percentile(&mut x, 50), percentile(&mut x, 90), percentile(&mut x, 100));
        println!("  {name:<12} enter {e50:>6} / {e90:>6} / {e100:>7}   exit {x50:>6} / {x90:>6} / {x100:>7}");
    }
    line::<Fast>("Fast", &next, samples);
    line::<Fenced>("Fenced", &next, samples);
    line::<Ordered>("Ordered", &next, samples);
    line::<Serialized>("Serialized", &next, samples);
    println!("  (an lfence'd read's own cost is in every figure: compare with Serialized's)");
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--smoke");
    println!("{}", cpu_model::cpu_model());
    if smoke {
        interleaved(1, 10);
        stamps_run_early(100);
        return;
    }
    interleaved(3, 400);
    stamps_run_early(10_000);
    benches();
    Criterion::default().configure_from_args().final_summary();
}
