//! Cost of one call's `-finstrument-functions` hooks, against the bare
//! counter pair in the same run.
//!
//! On x86_64 the calls are made as GCC compiles an instrumented function
//! (`child` below is its code at `-O1`: the enter hook with the function's
//! address and its return address after the prologue, the exit hook before
//! the epilogue), from an instrumented `parent` whose frame is on the shadow
//! stack — so every call takes the hooks' full path: the caller's stack
//! pointer and return address checked against the top frame, the open-span
//! stack, the ring record. Elsewhere the hooks are called from Rust.
//!
//! First, the ratios that matter, robust to a noisy machine: chunks of 1000
//! bare counter pairs and chunks of 1000 instrumented calls through each kind
//! of hooks — two references (see `reference`: the counter reads alone, and
//! minimal recording hooks) and ringtrace's — interleaved in one process, each
//! chunk timed with the counter; the medians of 400 chunks each, and their
//! ratios to the bare pair. Then criterion's own measurement of the bare pair
//! and ringtrace's hooks.
//!
//! `cargo bench -p ringtrace --features c-api --bench hooks`; docs/PERFORMANCE.md has the ratio.
//! `-- --smoke` runs the interleaved part briefly (CI: a check that it runs; no figure is asserted).

use std::hint::black_box;

#[path = "common/cpu_model.rs"]
mod cpu_model;

use criterion::{Criterion, criterion_group};
use ringtrace::clock::{Clock, Fast};

/// Calls per `parent` run: the bench divides its time by this.
const CALLS: u64 = 1000;

/// An instrumented `child` and `parent` as GCC compiles them, calling the given hooks.
#[cfg(target_arch = "x86_64")]
macro_rules! instrumented {
    ($module:ident, $enter:path, $exit:path) => {
        pub mod $module {
            /// An empty function as `gcc -O1 -finstrument-functions` compiles it.
            #[unsafe(naked)]
            pub extern "C" fn child() {
                core::arch::naked_asm!(
                    "push rbx",
                    "mov rsi, [rsp + 8]",
                    "lea rdi, [rip + {child}]",
                    "call {enter}",
                    "mov rsi, [rsp + 8]",
                    "lea rdi, [rip + {child}]",
                    "call {exit}",
                    "pop rbx",
                    "ret",
                    child = sym child,
                    enter = sym $enter,
                    exit = sym $exit,
                )
            }

            /// An instrumented function that calls `child` `n` times.
            #[unsafe(naked)]
            pub extern "C" fn parent(n: u64) {
                core::arch::naked_asm!(
                    "push rbx",
                    "push r12",
                    "push r13",
                    "mov r12, rdi",
                    "mov rsi, [rsp + 24]",
                    "lea rdi, [rip + {parent}]",
                    "call {enter}",
                    "2:",
                    "test r12, r12",
                    "jz 3f",
                    "call {child}",
                    "dec r12",
                    "jmp 2b",
                    "3:",
                    "mov rsi, [rsp + 24]",
                    "lea rdi, [rip + {parent}]",
                    "call {exit}",
                    "pop r13",
                    "pop r12",
                    "pop rbx",
                    "ret",
                    parent = sym parent,
                    child = sym child,
                    enter = sym $enter,
                    exit = sym $exit,
                )
            }
        }
    };
}

/// Reference hooks, to tell what any recorder's hooks cost from what
/// ringtrace's guarantees add: `counter` hooks only read the counter (the
/// calls and the two reads: the floor); `minimal` hooks also keep the enter
/// stamp on a per-thread stack and write {key, enter, exit} into a
/// per-thread ring — with no open-span stack a dump could read, no check for
/// a `longjmp`, no off switch, no torn-record protocol.
#[cfg(target_arch = "x86_64")]
mod reference {
    use std::cell::Cell;
    use std::ffi::c_void;
    use std::hint::black_box;

    use ringtrace::clock::{Clock, Fast};

    pub extern "C" fn counter_enter(_: *mut c_void, _: *mut c_void) {
        black_box(Fast::now());
    }

    pub extern "C" fn counter_exit(_: *mut c_void, _: *mut c_void) {
        black_box(Fast::now());
    }

    const RING: usize = 1 << 16;

    struct Minimal {
        depth: Cell<usize>,
        stamps: [Cell<u64>; 256],
        head: Cell<usize>,
        ring: Cell<*mut [u64; 3]>,
    }

    std::thread_local! {
        static MINIMAL: Minimal = const {
            Minimal {
                depth: Cell::new(0),
                stamps: [const { Cell::new(0) }; 256],
                head: Cell::new(0),
                ring: Cell::new(std::ptr::null_mut()),
            }
        };
    }

    /// Gives the calling thread its ring; before any `minimal` hook runs.
    pub fn minimal_setup() {
        let ring = Box::leak(vec![[0u64; 3]; RING].into_boxed_slice());
        MINIMAL.with(|m| m.ring.set(ring.as_mut_ptr()));
    }

    pub extern "C" fn minimal_enter(_: *mut c_void, _: *mut c_void) {
        let now = Fast::now();
        MINIMAL.with(|m| {
            let d = m.depth.get();
            m.stamps[d & 255].set(now);
            m.depth.set(d + 1);
        });
    }

    pub extern "C" fn minimal_exit(this_fn: *mut c_void, _: *mut c_void) {
        let now = Fast::now();
        MINIMAL.with(|m| {
            let d = m.depth.get().wrapping_sub(1);
            m.depth.set(d);
            let h = m.head.get();
            m.head.set(h + 1);
            // SAFETY: `minimal_setup` gave this thread a ring of `RING` records; the index is masked.
            unsafe { *m.ring.get().add(h & (RING - 1)) = [this_fn as u64, m.stamps[d & 255].get(), now] };
        });
    }
}

#[cfg(target_arch = "x86_64")]
mod instrumented {
    instrumented!(counter, crate::reference::counter_enter, crate::reference::counter_exit);
    instrumented!(minimal, crate::reference::minimal_enter, crate::reference::minimal_exit);
    instrumented!(ringtrace, ringtrace::capi::__cyg_profile_func_enter, ringtrace::capi::__cyg_profile_func_exit);
}

#[cfg(not(target_arch = "x86_64"))]
mod instrumented {
    pub mod ringtrace {
        use std::ffi::c_void;

        use ringtrace::capi::{__cyg_profile_func_enter, __cyg_profile_func_exit};

        #[inline(never)]
        pub extern "C" fn child() {
            let f = child as *const () as *mut c_void;
            __cyg_profile_func_enter(f, std::ptr::null_mut());
            __cyg_profile_func_exit(f, std::ptr::null_mut());
        }

        #[inline(never)]
        pub extern "C" fn parent(n: u64) {
            let f = parent as *const () as *mut c_void;
            __cyg_profile_func_enter(f, std::ptr::null_mut());
            for _ in 0..n {
                child();
            }
            __cyg_profile_func_exit(f, std::ptr::null_mut());
        }
    }
}

fn hooks(c: &mut Criterion) {
    let mut g = c.benchmark_group("hooks");
    g.bench_function("bare counter pair (Fast: rdtsc), per call", |b| {
        b.iter(|| {
            for _ in 0..CALLS {
                let enter = Fast::now();
                let exit = Fast::now();
                black_box((enter, exit));
            }
        })
    });
    g.bench_function("one instrumented call's enter + exit hooks, per call", |b| {
        b.iter(|| instrumented::ringtrace::parent(black_box(CALLS)))
    });
    g.finish();
}

/// Ticks of one chunk of [`CALLS`] bare counter pairs.
fn bare_chunk() -> u64 {
    let t0 = Fast::now();
    for _ in 0..CALLS {
        let enter = Fast::now();
        let exit = Fast::now();
        black_box((enter, exit));
    }
    Fast::now() - t0
}

/// Ticks of one `parent` run of [`CALLS`] instrumented calls.
fn chunk(parent: extern "C" fn(u64)) -> u64 {
    let t0 = Fast::now();
    parent(black_box(CALLS));
    Fast::now() - t0
}

/// What the interleaved rounds measure: the bare pair, then each kind of hooks.
fn variants() -> Vec<(&'static str, Option<extern "C" fn(u64)>)> {
    let mut v: Vec<(&'static str, Option<extern "C" fn(u64)>)> = vec![("bare counter pair", None)];
    #[cfg(target_arch = "x86_64")]
    v.extend([
        ("reference hooks: counter reads only", Some(instrumented::counter::parent as extern "C" fn(u64))),
        ("reference hooks: minimal recording", Some(instrumented::minimal::parent as extern "C" fn(u64))),
    ]);
    v.push(("ringtrace hooks", Some(instrumented::ringtrace::parent as extern "C" fn(u64))));
    v
}

/// Median ticks per call of each variant over `chunks` chunks, interleaved.
fn interleaved(chunks: usize) -> Vec<f64> {
    let variants = variants();
    let mut ticks: Vec<Vec<u64>> = vec![Vec::with_capacity(chunks); variants.len()];
    for _ in 0..chunks {
        for (i, (_, parent)) in variants.iter().enumerate() {
            ticks[i].push(match parent {
                None => bare_chunk(),
                Some(parent) => chunk(*parent),
            });
        }
    }
    ticks
        .iter_mut()
        .map(|t| {
            t.sort_unstable();
            t[chunks / 2] as f64 / CALLS as f64
        })
        .collect()
}

criterion_group!(benches, hooks);

fn main() {
    println!("{}", cpu_model::cpu_model());
    #[cfg(target_arch = "x86_64")]
    reference::minimal_setup();
    // The thread's ring and the exit dump are set up by the first call, outside the timing.
    instrumented::ringtrace::parent(1);
    let smoke = std::env::args().any(|a| a == "--smoke");
    let names: Vec<_> = variants().into_iter().map(|(name, _)| name).collect();
    for round in 1..=if smoke { 1 } else { 3 } {
        let medians = interleaved(if smoke { 10 } else { 400 });
        let line: Vec<String> =
            names.iter().zip(&medians).map(|(name, m)| format!("{name} {m:.1} ({:.3}x)", m / medians[0])).collect();
        println!("interleaved, round {round}, ticks/call: {}", line.join(", "));
    }
    if !smoke {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    // The exit dump the hooks arranged goes nowhere useful from a bench.
    // SAFETY: `setenv` before exit, on the only thread that touches the environment here.
    unsafe { std::env::set_var(ringtrace::capi::DUMP_ENV, "/dev/null") };
}
