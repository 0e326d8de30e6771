//! The `-finstrument-functions` hooks (feature `c-api`) that trace a whole C
//! or C++ program.
//!
//! GCC and Clang call `__cyg_profile_func_enter(this_fn, call_site)` at the
//! start of every function compiled with `-finstrument-functions` and
//! `__cyg_profile_func_exit` at its end, also when a C++ exception unwinds
//! through it. Each thread keeps a shadow stack of the calls it has entered
//! ([`SHADOW_DEPTH`] deep; deeper calls are counted, not recorded): an exit
//! that matches the top records the span. When control leaves frames
//! without their exit hooks — `longjmp`, `_longjmp`, `siglongjmp`,
//! `__longjmp_chk`, or a C++ exception crossing C frames — the next hook
//! sees it, from the caller's stack pointer and return address, and closes
//! each skipped frame then, as a span flagged **unwound** (see
//! `hooks/shadow.rs` for the evidence it uses). Spans still running at a
//! dump (an `exit()` from deep inside the program, a thread that ended
//! mid-call) are in it as open spans. The recorder is Rust, which
//! `-finstrument-functions` never instruments.
//!
//! On x86_64 the hooks are two-instruction trampolines that add the caller's
//! stack pointer to the arguments; on other targets only exits that match a
//! frame below the top reveal a jump (the skipped frames then end at that
//! exit). A program with hooks of its own chains to these through
//! [`ringtrace_func_enter`] and [`ringtrace_func_exit`].
//!
//! The first hook call arranges a dump at exit to `$RINGTRACE_DUMP`, or
//! `ringtrace-PID.rtd` in the working directory.

mod shadow;
mod stack;

use core::ffi::c_void;

pub use shadow::SHADOW_DEPTH;
use shadow::Shadow;
use stack::ThreadStack;

use crate::clock::{Clock, DefaultClock};
use crate::sink;

/// A thread's shadow stack and its stack's bounds: one thread-local, one lookup per hook.
struct HookState {
    shadow: Shadow,
    stack: ThreadStack,
}

std::thread_local! {
    static STATE: HookState = const { HookState { shadow: Shadow::new(), stack: ThreadStack::new() } };
}

/// Called by code built with `-finstrument-functions` on entry to every function.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    // The caller's stack pointer before the call: just above the return address.
    core::arch::naked_asm!("lea rdx, [rsp + 8]", "jmp {hook}", hook = sym ringtrace_func_enter)
}

/// Called by code built with `-finstrument-functions` on exit from every
/// function, also when an exception unwinds through it.
#[cfg(target_arch = "x86_64")]
#[unsafe(naked)]
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, call_site: *mut c_void) {
    core::arch::naked_asm!("lea rdx, [rsp + 8]", "jmp {hook}", hook = sym ringtrace_func_exit)
}

/// Called by code built with `-finstrument-functions` on entry to every function.
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_enter(this_fn: *mut c_void, call_site: *mut c_void) {
    ringtrace_func_enter(this_fn, call_site, core::ptr::null());
}

/// Called by code built with `-finstrument-functions` on exit from every
/// function, also when an exception unwinds through it.
#[cfg(not(target_arch = "x86_64"))]
#[unsafe(no_mangle)]
pub extern "C" fn __cyg_profile_func_exit(this_fn: *mut c_void, call_site: *mut c_void) {
    ringtrace_func_exit(this_fn, call_site, core::ptr::null());
}

/// The enter hook's work, for hooks of a program's own that chain to
/// ringtrace: `frame` is the instrumented function's stack pointer when it
/// called the hook — in a C hook, `__builtin_dwarf_cfa()` (GCC, Clang) —
/// or null if unknown.
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_func_enter(this_fn: *mut c_void, call_site: *mut c_void, frame: *const c_void) {
    let (key, site, frame) = (this_fn as usize as u64, call_site as usize as u64, frame as usize as u64);
    // The common case inline, with no call before it returns (so no registers to save); all
    // else — a thread's first call, a call past the shadow stack, a jump to settle — in one
    // tail call.
    let done = crate::thread::registered().is_some_and(|track| {
        STATE
            .try_with(|HookState { shadow, stack }| {
                shadow.enter_nested(track, (key, site, frame), stack, DefaultClock::enter_now)
            })
            .unwrap_or(true)
    });
    if !done {
        enter_slow(key, site, frame);
    }
}

#[cold]
#[inline(never)]
extern "C" fn enter_slow(key: u64, site: u64, frame: u64) {
    let Some(track) = sink::current() else { return };
    let _ = STATE.try_with(|HookState { shadow, stack }| {
        if shadow.depth() == 0 {
            // A thread's outermost call: the first hook call of all is one.
            crate::capi::arrange_exit_dump();
            stack.ensure_known();
        }
        shadow.enter(track, key, site, frame, DefaultClock::enter_now(), stack);
    });
}

/// The exit hook's work, for hooks of a program's own that chain to
/// ringtrace; `frame` as for [`ringtrace_func_enter`].
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_func_exit(this_fn: *mut c_void, call_site: *mut c_void, frame: *const c_void) {
    let now = DefaultClock::now();
    let (key, site, frame) = (this_fn as usize as u64, call_site as usize as u64, frame as usize as u64);
    let done = crate::thread::registered().is_some_and(|track| {
        STATE.try_with(|state| state.shadow.exit_top(track, key, site, frame, now)).unwrap_or(true)
    });
    if !done {
        exit_slow(key, site, frame, now);
    }
}

#[cold]
#[inline(never)]
extern "C" fn exit_slow(key: u64, site: u64, frame: u64, now: u64) {
    let Some(track) = sink::current() else { return };
    let _ = STATE.try_with(|state| state.shadow.exit(track, key, site, frame, now));
}
