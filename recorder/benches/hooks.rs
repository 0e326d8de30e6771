//! Cost of one call's `-finstrument-functions` hooks (enter + exit, called
//! as compiled C code calls them: through a function call), against the bare
//! counter pair in the same run.
//!
//! `cargo bench -p ringtrace --features c-api --bench hooks`; docs/PERFORMANCE.md has the ratio.

use std::ffi::c_void;
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use ringtrace::capi::{__cyg_profile_func_enter, __cyg_profile_func_exit};
use ringtrace::clock::{Clock, Fast};

#[inline(never)]
fn instrumented() {}

fn hooks(c: &mut Criterion) {
    let mut g = c.benchmark_group("hooks");
    let this_fn = instrumented as *const () as *mut c_void;
    // The thread's ring and the exit dump are set up by the first call, outside the timing.
    __cyg_profile_func_enter(this_fn, std::ptr::null_mut());
    __cyg_profile_func_exit(this_fn, std::ptr::null_mut());
    g.bench_function("bare counter pair (Fast: rdtsc)", |b| {
        b.iter(|| {
            let enter = Fast::now();
            let exit = Fast::now();
            black_box((enter, exit));
        })
    });
    g.bench_function("__cyg_profile_func_enter + __cyg_profile_func_exit", |b| {
        b.iter(|| {
            __cyg_profile_func_enter(black_box(this_fn), std::ptr::null_mut());
            __cyg_profile_func_exit(black_box(this_fn), std::ptr::null_mut());
        })
    });
    g.finish();
    // The exit dump the hooks arranged goes nowhere useful from a bench.
    // SAFETY: `setenv` before exit, on the only thread that touches the environment here.
    unsafe { std::env::set_var(ringtrace::capi::DUMP_ENV, "/dev/null") };
}

criterion_group!(benches, hooks);
criterion_main!(benches);
