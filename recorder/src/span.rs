//! What the instrumentation macros (`macros.rs`) expand to: the span guards, manual
//! enter/exit pairs, the loop pulse, and the storage of a call site's descriptor.

use core::marker::PhantomData;

use crate::clock::{Clock, DefaultClock};
use crate::ring::{Word, wide, word};
use crate::sink;
use crate::track::Track;

/// A running span: reads the counter when created and writes one record
/// into the calling thread's ring when dropped; while it runs, a dump shows
/// it as open. When recording is switched off it reads no counter and
/// writes nothing.
#[must_use = "a span ends when this guard is dropped; bind it: `let _span = span!();`"]
#[derive(Debug)]
pub struct Span<C: Clock = DefaultClock> {
    /// `None` when recording was off at entry (then nothing else is kept: the
    /// off switch's path sets no fields).
    running: Option<Running>,
    clock: PhantomData<C>,
}

/// What a span that records keeps until its end, each in one register on
/// 32-bit targets where it fits one: its track; its key, an address
/// (`usize`); its open-span token, a depth of at most 255; and its entry
/// ticks in the ring's word (all the record keeps of them: 32 bits on
/// firmware, 64 on 32-bit Linux).
#[derive(Clone, Copy, Debug)]
struct Running {
    track: &'static Track,
    key: usize,
    enter: Word,
    token: usize,
}

impl<C: Clock> Span<C> {
    /// Starts a span with `key` (a code address or a site descriptor's address).
    #[inline(always)]
    pub fn enter(key: u64) -> Self {
        let running = sink::current().map(|track| {
            let enter = C::enter_now();
            let token = track.begin(key, enter);
            Running { track, key: key as usize, enter: word(enter), token: token as usize }
        });
        Span { running, clock: PhantomData }
    }
}

impl<C: Clock> Drop for Span<C> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(Running { track, key, enter, token }) = self.running {
            end::<C>(track, key, enter, token);
        }
    }
}

/// A span's end: the exit read and the record. Inline with `std`; without it
/// (firmware, built for size) one call with its arguments in registers, so
/// that an instrumented function holds the entry and the off switch's check
/// and shares the rest.
#[cfg_attr(feature = "std", inline(always))]
#[cfg_attr(not(feature = "std"), inline(never))]
fn end<C: Clock>(track: &Track, key: usize, enter: Word, token: usize) {
    let exit = C::now();
    track.end(token as u64, key as u64, wide(enter), exit);
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
        if let Some(Running { track, key, enter, token }) = self.span.running.take() {
            let exit = C::now();
            track.end_with_arg(token as u64, self.arg, key as u64, wide(enter), exit);
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
