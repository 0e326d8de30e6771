//! Where finished spans go: the calling thread's ring (with `std`), or the
//! one ring installed for the whole program (without it).

#[cfg(feature = "std")]
pub use crate::thread::{enabled, record, record_with_arg};

#[cfg(not(feature = "std"))]
mod global {
    use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    use crate::ring::Ring;

    static RING: AtomicPtr<Ring> = AtomicPtr::new(core::ptr::null_mut());
    static ENABLED: AtomicBool = AtomicBool::new(true);

    /// Sends every span of the program to `ring` (single-threaded targets).
    pub fn install(ring: &'static Ring) {
        RING.store(ring as *const Ring as *mut Ring, Ordering::Release);
    }

    /// Turns recording on or off.
    pub fn set_enabled(on: bool) {
        ENABLED.store(on, Ordering::Relaxed);
    }

    /// Whether spans are recorded now.
    #[inline(always)]
    pub fn enabled() -> bool {
        ENABLED.load(Ordering::Relaxed)
    }

    /// Writes one finished span; dropped if no ring is installed.
    #[inline(always)]
    pub fn record(key: u64, enter: u64, exit: u64) {
        if let Some(ring) = ring() {
            ring.push(key, enter, exit);
        }
    }

    /// Writes one finished span with an argument.
    #[inline(always)]
    pub fn record_with_arg(arg: u64, key: u64, enter: u64, exit: u64) {
        if let Some(ring) = ring() {
            ring.push_with_arg(arg, key, enter, exit);
        }
    }

    #[inline(always)]
    fn ring() -> Option<&'static Ring> {
        let ring = RING.load(Ordering::Acquire);
        // SAFETY: only `install` stores here, always from a `&'static Ring`.
        unsafe { ring.as_ref() }
    }
}

#[cfg(not(feature = "std"))]
pub use global::{enabled, install, record, record_with_arg, set_enabled};
