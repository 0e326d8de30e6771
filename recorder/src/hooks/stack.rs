//! The calling thread's stack as the hooks see it: its bounds, and the
//! return address a frame's last call left below it.

use core::cell::Cell;

use super::shadow::StackView;

/// Whether a `call` on this target pushes the return address just below
/// the caller's stack pointer (x86); elsewhere it goes to a register.
const CALL_PUSHES_RETURN_ADDRESS: bool = cfg!(any(target_arch = "x86_64", target_arch = "x86"));

/// The calling thread's stack bounds, `[low, high)`, looked up on its first hook.
pub(crate) struct ThreadStack {
    low: Cell<u64>,
    high: Cell<u64>,
}

impl ThreadStack {
    pub(crate) const fn new() -> Self {
        ThreadStack { low: Cell::new(0), high: Cell::new(0) }
    }

    /// Looks the bounds up, once per thread.
    #[inline(always)]
    pub(crate) fn ensure_known(&self) {
        if self.high.get() == 0 {
            self.look_up();
        }
    }

    #[cold]
    #[inline(never)]
    fn look_up(&self) {
        // Known as unknown (an empty range, so nothing is read) while the lookup runs: it may
        // call into instrumented code (a program's own malloc), whose hooks must not look again.
        self.high.set(1);
        let (low, high) = bounds().unwrap_or((0, 1));
        self.low.set(low);
        self.high.set(high);
    }

    #[inline(always)]
    fn contains(&self, address: u64) -> bool {
        address >= self.low.get() && address < self.high.get()
    }
}

impl StackView for ThreadStack {
    #[inline(always)]
    fn return_address(&self, frame: u64, now: u64) -> Option<u64> {
        if !CALL_PUSHES_RETURN_ADDRESS {
            return None;
        }
        let slot = frame.wrapping_sub(core::mem::size_of::<usize>() as u64);
        // `low <= now <= slot < high`: both on this thread's stack, the slot in the part in use.
        if now < self.low.get() || slot < now || slot >= self.high.get() {
            return Some(0); // not on this stack now: no call site is 0
        }
        // SAFETY: `now` (the caller's stack pointer) and the slot are on this
        // thread's stack with `now <= slot`, so the word is in the part of
        // the stack the thread has in use, mapped and aligned (stack pointers
        // at a call are word-aligned on x86). Other frames' data: read as a
        // plain value, never as a reference.
        Some(unsafe { core::ptr::read(slot as usize as *const usize) } as u64)
    }

    #[inline(always)]
    fn same_stack(&self, frame: u64, now: u64) -> bool {
        self.contains(frame) && self.contains(now)
    }
}

/// The calling thread's stack range from `pthread_getattr_np`.
fn bounds() -> Option<(u64, u64)> {
    // SAFETY: a zeroed attribute object is initialised by `pthread_getattr_np`
    // before use and destroyed after; the out-pointers are valid locals.
    unsafe {
        let mut attr: libc::pthread_attr_t = core::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = core::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        let low = addr as usize as u64;
        (ok && size > 0).then(|| (low, low + size as u64))
    }
}
