//! Which track a span goes to: the calling thread's (with `std`), or the
//! one installed for the whole program (without it).

#[cfg(feature = "std")]
pub use crate::thread::{current, enabled};

#[cfg(not(feature = "std"))]
mod global {
    use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    use crate::track::Track;

    static TRACK: AtomicPtr<Track> = AtomicPtr::new(core::ptr::null_mut());
    static ENABLED: AtomicBool = AtomicBool::new(true);

    /// Sends every span of the program to `track` (single-threaded targets).
    pub fn install(track: &'static Track) {
        TRACK.store(track as *const Track as *mut Track, Ordering::Release);
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

    /// The installed track, if recording is on and one is installed.
    #[inline(always)]
    pub fn current() -> Option<&'static Track> {
        if !enabled() {
            return None;
        }
        // SAFETY: only `install` stores here, always from a `&'static Track`.
        unsafe { TRACK.load(Ordering::Acquire).as_ref() }
    }
}

#[cfg(not(feature = "std"))]
pub use global::{current, enabled, install, set_enabled};
