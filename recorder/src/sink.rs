//! Which track a span goes to: the calling thread's (with `std`), or the
//! one installed for the whole program (without it).

#[cfg(feature = "std")]
pub use crate::thread::{current, enabled};

#[cfg(not(feature = "std"))]
mod global {
    use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

    use crate::order::{consume, publish};
    use crate::track::Track;

    /// The installed track (or an interrupt's), whether recording is on or not.
    static TRACK: AtomicPtr<Track> = AtomicPtr::new(core::ptr::null_mut());
    static ENABLED: AtomicBool = AtomicBool::new(true);
    /// Where spans go now: `TRACK` while recording is on, null while it is off — so a span's
    /// entry reads one word, and the off switch costs one load and one branch. Stored after
    /// each store of `TRACK` or `ENABLED`, by the code that stored them.
    static SINK: AtomicPtr<Track> = AtomicPtr::new(core::ptr::null_mut());

    /// `SINK` from `TRACK` and `ENABLED`. On a single core an interrupt handler that switches
    /// tracks between these loads and the store restores both before the code it interrupted
    /// resumes, so the store is what `TRACK` and `ENABLED` say.
    fn update() {
        let track = if ENABLED.load(Ordering::Relaxed) { consume!(TRACK) } else { core::ptr::null_mut() };
        publish!(SINK, track);
    }

    /// Sends every span of the program to `track` (single-threaded targets).
    pub fn install(track: &'static Track) {
        publish!(TRACK, track as *const Track as *mut Track);
        update();
    }

    /// While alive, spans go to another track: see [`interrupt`].
    #[must_use = "spans go to the interrupt's track only while this guard lives"]
    #[derive(Debug)]
    pub struct Interrupt {
        previous: *mut Track,
    }

    /// Sends spans to `track` until the returned guard is dropped: the first
    /// thing an interrupt handler does, with a track of its own (one per
    /// priority level that records). Handlers nest — each finishes before the
    /// code it interrupted resumes — so the switch is a save and restore of
    /// one pointer, with no atomic read-modify-write and no masking.
    pub fn interrupt(track: &'static Track) -> Interrupt {
        let previous = consume!(TRACK);
        publish!(TRACK, track as *const Track as *mut Track);
        update();
        Interrupt { previous }
    }

    impl Drop for Interrupt {
        fn drop(&mut self) {
            publish!(TRACK, self.previous);
            update();
        }
    }

    /// Turns recording on or off.
    pub fn set_enabled(on: bool) {
        ENABLED.store(on, Ordering::Relaxed);
        update();
    }

    /// Whether spans are recorded now.
    #[inline(always)]
    pub fn enabled() -> bool {
        ENABLED.load(Ordering::Relaxed)
    }

    /// The installed track, if recording is on and one is installed.
    #[inline(always)]
    pub fn current() -> Option<&'static Track> {
        let track = consume!(SINK);
        // SAFETY: `update` stores here only null or what `install` and `interrupt` stored in
        // `TRACK`, always from a `&'static Track`.
        unsafe { track.as_ref() }
    }
}

#[cfg(not(feature = "std"))]
pub use global::{Interrupt, current, enabled, install, interrupt, set_enabled};
