//! The span guard, manual enter/exit pairs, and the instrumentation macros.

use core::marker::PhantomData;

use crate::clock::{Clock, DefaultClock};
use crate::sink;
use crate::track::Track;

/// A running span: reads the counter when created and writes one record
/// into the calling thread's ring when dropped; while it runs, a dump shows
/// it as open. When recording is switched off it reads no counter and
/// writes nothing.
#[must_use = "a span ends when this guard is dropped; bind it: `let _span = span!();`"]
#[derive(Debug)]
pub struct Span<C: Clock = DefaultClock> {
    /// `None` when recording was off at entry.
    track: Option<&'static Track>,
    key: u64,
    enter: u64,
    token: u64,
    clock: PhantomData<C>,
}

impl<C: Clock> Span<C> {
    /// Starts a span with `key` (a code address or a site descriptor's address).
    #[inline(always)]
    pub fn enter(key: u64) -> Self {
        let Some(track) = sink::current() else {
            return Span { track: None, key, enter: 0, token: 0, clock: PhantomData };
        };
        let enter = C::enter_now();
        let token = track.begin(key, enter);
        Span { track: Some(track), key, enter, token, clock: PhantomData }
    }
}

impl<C: Clock> Drop for Span<C> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(track) = self.track {
            let exit = C::now();
            track.end(self.token, self.key, self.enter, exit);
        }
    }
}

/// A span that also records one integer argument (`#[trace(arg = n)]`).
#[must_use = "a span ends when this guard is dropped"]
#[derive(Debug)]
pub struct ArgSpan<C: Clock = DefaultClock> {
    span: Span<C>,
    arg: u64,
}

impl<C: Clock> ArgSpan<C> {
    /// Starts a span with `key` that records `arg` with it.
    #[inline(always)]
    pub fn enter(key: u64, arg: u64) -> Self {
        ArgSpan { span: Span::enter(key), arg }
    }
}

impl<C: Clock> Drop for ArgSpan<C> {
    #[inline(always)]
    fn drop(&mut self) {
        // Taken, so the inner guard does not write the span a second time.
        if let Some(track) = self.span.track.take() {
            let exit = C::now();
            track.end_with_arg(self.span.token, self.arg, self.span.key, self.span.enter, exit);
        }
    }
}

/// A span begun with [`enter`] that must be ended with [`exit`], for spans
/// that do not fit a scope (begun in one callback, ended in another). It
/// need not nest with other spans, so a dump does not show it as open.
///
/// In debug builds with `std`, dropping it without calling [`exit`] panics,
/// so an unbalanced pair is found in tests.
#[must_use = "end the span with ringtrace::exit(token)"]
#[derive(Debug)]
#[cfg_attr(feature = "off", allow(dead_code))]
pub struct Entered<C: Clock = DefaultClock> {
    /// Whether recording was on when it began.
    began: bool,
    key: u64,
    enter: u64,
    clock: PhantomData<C>,
}

/// Begins a manual span with `key`; end it with [`exit`]. Prefer the
/// [`enter!`](macro@crate::enter) macro, which makes the key.
#[inline(always)]
pub fn enter<C: Clock>(key: u64) -> Entered<C> {
    let began = sink::current().is_some();
    let enter = if began { C::enter_now() } else { 0 };
    Entered { began, key, enter, clock: PhantomData }
}

/// Ends a span begun with [`enter`], on any thread: the record goes to the
/// ring of the thread that ends it (each ring has one writer), and is
/// dropped if recording was off when it began.
#[cfg(not(feature = "off"))]
#[inline(always)]
pub fn exit<C: Clock>(mut entered: Entered<C>) {
    if entered.began
        && let Some(track) = sink::current()
    {
        let exit = C::now();
        track.ring().push(entered.key, entered.enter, exit);
    }
    entered.began = false;
    #[allow(clippy::forget_non_drop)] // `Entered` has a Drop impl only in debug builds with std
    core::mem::forget(entered);
}

/// Compiled out by the `off` feature: `enter!()` is `()`, and so is this.
#[cfg(feature = "off")]
#[inline(always)]
pub fn exit(_entered: ()) {}

#[cfg(all(debug_assertions, feature = "std"))]
impl<C: Clock> Drop for Entered<C> {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("ringtrace: a span begun with enter!() was dropped without ringtrace::exit()");
        }
    }
}

/// Times the passes of a loop: each pass records the interval since the
/// previous pass, with one counter read per pass.
#[derive(Debug)]
pub struct Pulse<C: Clock = DefaultClock> {
    key: u64,
    last: u64,
    clock: PhantomData<C>,
}

impl<C: Clock> Pulse<C> {
    /// A pulse whose intervals are recorded under `key`.
    pub const fn new(key: u64) -> Self {
        Self::resume(key, 0)
    }

    /// A pulse whose previous pass was at counter reading `last` (0: none yet).
    pub const fn resume(key: u64, last: u64) -> Self {
        Pulse { key, last, clock: PhantomData }
    }

    /// The counter reading at the latest pass (0 if none, or recording is off).
    pub fn last_pass(&self) -> u64 {
        self.last
    }

    /// Marks a pass: records the interval from the previous pass to now.
    #[inline(always)]
    pub fn pass(&mut self) {
        let Some(track) = sink::current() else {
            self.last = 0;
            return;
        };
        let now = C::now();
        if self.last != 0 {
            track.ring().push(self.key, self.last, now);
        }
        self.last = now;
    }
}

/// Storage for one site descriptor: its bytes, 8-byte aligned.
#[repr(C, align(8))]
#[derive(Debug)]
pub struct SiteDescriptor<const N: usize>(pub [u8; N]);
