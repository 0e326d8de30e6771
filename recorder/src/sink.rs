//! Where finished spans go: the calling thread's ring (with `std`), or the
//! one ring installed for the whole program (without it).

#[cfg(feature = "std")]
pub use crate::thread::record;

#[cfg(not(feature = "std"))]
mod global {
    use core::sync::atomic::{AtomicPtr, Ordering};

    use crate::ring::Ring;

    static RING: AtomicPtr<Ring> = AtomicPtr::new(core::ptr::null_mut());

    /// Sends every span of the program to `ring` (single-threaded targets).
    pub fn install(ring: &'static Ring) {
        RING.store(ring as *const Ring as *mut Ring, Ordering::Release);
    }

    /// Writes one finished span; dropped if no ring is installed.
    #[inline(always)]
    pub fn record(key: u64, enter: u64, exit: u64) {
        let ring = RING.load(Ordering::Acquire);
        // SAFETY: only `install` stores here, always from a `&'static Ring`.
        if let Some(ring) = unsafe { ring.as_ref() } {
            ring.push(key, enter, exit);
        }
    }
}

#[cfg(not(feature = "std"))]
pub use global::{install, record};
