//! A track: one ring of finished spans plus the stack of open ones. Each
//! thread has one (with `std`); a program without `std` installs one.

use core::sync::atomic::Ordering;

use ringtrace_format::layout::key_depth_tag;

use crate::directory::Entry;
use crate::open::OpenStack;
use crate::ring::{AtomicWord, Mode, Ring, Slot, Word, own_load, wide, word};

/// Where one thread's spans go: finished ones into the ring, open ones onto the stack.
#[derive(Debug)]
pub struct Track {
    ring: Ring,
    open: OpenStack,
    /// Calls the `-finstrument-functions` hooks did not record: nested too deep.
    too_deep: AtomicWord,
    /// Spans whose exit hook never ran (a `longjmp` past them).
    abandoned: AtomicWord,
    /// Its entry in the ring directory: filled and linked once the track is in place (a thread's
    /// registration, a firmware's [`Dumper::publish`](crate::bare::Dumper::publish)).
    entry: Entry,
}

impl Track {
    /// An overwriting track over `slots` (a power of two long).
    pub const fn new(slots: &'static [Slot]) -> Self {
        Self::with_mode(slots, Mode::Overwrite)
    }

    /// A track over `slots` (a power of two long) whose ring behaves as `mode` says when full.
    pub const fn with_mode(slots: &'static [Slot], mode: Mode) -> Self {
        Track {
            ring: Ring::with_mode(slots, mode),
            open: OpenStack::new(),
            too_deep: AtomicWord::new(0),
            abandoned: AtomicWord::new(0),
            entry: Entry::new(),
        }
    }

    /// A track whose stop-when-full ring over `slots` calls `on_half` when
    /// half full (see [`Ring::drained_by`]).
    pub const fn drained_by(slots: &'static [Slot], on_half: fn(&Ring)) -> Self {
        Track {
            ring: Ring::drained_by(slots, on_half),
            open: OpenStack::new(),
            too_deep: AtomicWord::new(0),
            abandoned: AtomicWord::new(0),
            entry: Entry::new(),
        }
    }

    /// The ring of finished spans.
    pub fn ring(&self) -> &Ring {
        &self.ring
    }

    /// The stack of open spans.
    pub fn open(&self) -> &OpenStack {
        &self.open
    }

    /// Counts spans the owning thread could not record: `too_deep` calls
    /// nested past a hook's shadow stack, `abandoned` spans whose end never
    /// came. Only the owning thread calls this.
    pub fn note_unrecorded(&self, too_deep: u64, abandoned: u64) {
        self.too_deep.store(word(own_load(&self.too_deep).wrapping_add(too_deep)), Ordering::Relaxed);
        self.abandoned.store(word(own_load(&self.abandoned).wrapping_add(abandoned)), Ordering::Relaxed);
    }

    /// (too deep, abandoned) so far: see [`note_unrecorded`](Self::note_unrecorded).
    pub fn unrecorded(&self) -> (u64, u64) {
        (wide(self.too_deep.load(Ordering::Relaxed)), wide(self.abandoned.load(Ordering::Relaxed)))
    }

    /// The addresses of the (too deep, abandoned) counts, for the ring directory.
    pub(crate) fn unrecorded_addresses(&self) -> (usize, usize) {
        (&self.too_deep as *const AtomicWord as usize, &self.abandoned as *const AtomicWord as usize)
    }

    /// Its entry in the ring directory.
    pub(crate) fn entry(&self) -> &Entry {
        &self.entry
    }

    /// A span began: note it as open. Returns the token for [`end`](Self::end).
    #[inline(always)]
    pub fn begin(&self, key: u64, enter: u64) -> u64 {
        self.open.push(key, enter)
    }

    /// A span ended: write its record, then stop showing it as open (in that
    /// order, so a dump in between sees it twice rather than not at all).
    /// The record's key carries the span's depth, which `token` is (see
    /// [`Ring::flags`]).
    #[inline(always)]
    pub fn end(&self, token: u64, key: u64, enter: u64, exit: u64) {
        let key = key | key_depth_tag(token);
        if self.ring.try_push(key, enter, exit) {
            self.open.pop(token);
        } else {
            self.end_at_limit(token as u8, word(key), word(enter), word(exit));
        }
    }

    /// [`end`](Self::end) where the ring is at its drain hook's mark or full:
    /// out of line, so that `end` makes no call on its common path. Its
    /// arguments are what the ring and the stack keep of them (a token is a
    /// depth of at most 255), so that they fit in argument registers and the
    /// call can be a jump.
    #[cold]
    #[inline(never)]
    fn end_at_limit(&self, token: u8, key: Word, enter: Word, exit: Word) {
        self.ring.push_at_limit(wide(key), wide(enter), wide(exit));
        self.open.pop(u64::from(token));
    }

    /// As [`end`](Self::end), for a span with an integer argument.
    #[inline(always)]
    pub fn end_with_arg(&self, token: u64, arg: u64, key: u64, enter: u64, exit: u64) {
        self.ring.push_with_arg(arg, key | key_depth_tag(token), enter, exit);
        self.open.pop(token);
    }

    /// Records a span whose function was left without its exit (a
    /// `longjmp` skipped it), flagged unwound; its key tagged as
    /// [`end`](Self::end) tags one. It stays open on the stack: the caller
    /// pops the outermost of the spans it unwinds.
    #[cfg(feature = "c-api")]
    pub(crate) fn end_unwound(&self, token: u64, key: u64, enter: u64, exit: u64) {
        use ringtrace_format::layout::SPAN_FLAG_UNWOUND;
        self.ring.push_with_flags(SPAN_FLAG_UNWOUND, key | key_depth_tag(token), enter, exit);
    }
}
