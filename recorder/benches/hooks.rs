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
//! First, the ratio that matters, robust to a noisy machine: chunks of 1000
//! bare counter pairs and chunks of 1000 instrumented calls, interleaved in
//! one process, each chunk timed with the counter; the medians of 400 chunks
//! each, and their ratio. Then criterion's own measurement of each.
//!
//! `cargo bench -p ringtrace --features c-api --bench hooks`; docs/PERFORMANCE.md has the ratio.

use std::hint::black_box;

use criterion::{Criterion, criterion_group};
use ringtrace::clock::{Clock, Fast};

/// Calls per `parent` run: the bench divides its time by this.
const CALLS: u64 = 1000;

#[cfg(target_arch = "x86_64")]
mod instrumented {
    use ringtrace::capi::{__cyg_profile_func_enter, __cyg_profile_func_exit};

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
            enter = sym __cyg_profile_func_enter,
            exit = sym __cyg_profile_func_exit,
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
            enter = sym __cyg_profile_func_enter,
            exit = sym __cyg_profile_func_exit,
        )
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod instrumented {
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

fn hooks(c: &mut Criterion) {
    let mut g = c.benchmark_group("hooks");
    // The thread's ring and the exit dump are set up by the first call, outside the timing.
    instrumented::parent(1);
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
        b.iter(|| instrumented::parent(black_box(CALLS)))
    });
    g.finish();
    // The exit dump the hooks arranged goes nowhere useful from a bench.
    // SAFETY: `setenv` before exit, on the only thread that touches the environment here.
    unsafe { std::env::set_var(ringtrace::capi::DUMP_ENV, "/dev/null") };
}

/// Median ticks of a chunk of [`CALLS`] bare counter pairs and of [`CALLS`]
/// instrumented calls, chunks interleaved.
fn interleaved(chunks: usize) -> (u64, u64) {
    let (mut bare, mut hooked) = (Vec::with_capacity(chunks), Vec::with_capacity(chunks));
    for _ in 0..chunks {
        let t0 = Fast::now();
        for _ in 0..CALLS {
            let enter = Fast::now();
            let exit = Fast::now();
            black_box((enter, exit));
        }
        let t1 = Fast::now();
        instrumented::parent(black_box(CALLS));
        let t2 = Fast::now();
        bare.push(t1 - t0);
        hooked.push(t2 - t1);
    }
    bare.sort_unstable();
    hooked.sort_unstable();
    (bare[chunks / 2], hooked[chunks / 2])
}

criterion_group!(benches, hooks);

fn main() {
    instrumented::parent(1);
    for round in 1..=3 {
        let (bare, hooked) = interleaved(400);
        println!(
            "interleaved, round {round}: bare pair {:.1} ticks/call, instrumented call {:.1} ticks/call: {:.3}x",
            bare as f64 / CALLS as f64,
            hooked as f64 / CALLS as f64,
            hooked as f64 / bare as f64
        );
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
