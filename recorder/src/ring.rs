//! A single-writer ring of span records that any thread can snapshot.
//!
//! # Protocol
//!
//! `head` counts records ever written. The owning thread writes record `n`
//! into slot `n & mask` and then publishes `head = n + 1`:
//!
//! ```text
//! writer:  slot.{key,enter,exit}.store(Release); head.store(n + 1, Release)
//! reader:  h1 = head.load(Acquire); copy slots [h1 - cap, h1) (Relaxed); fence(Acquire); h2 = head.load(Relaxed)
//! ```
//!
//! In stop-when-full mode the writer never overwrites: once `head` reaches
//! `drained` plus the capacity it counts each further span in `dropped`
//! instead, and a reader keeps every record below `head`. `drained` stays 0
//! unless one consumer drains the ring ([`Ring::drain`], a stream's writer):
//! it copies records `[drained, head)` and then publishes `drained = head`
//! (release), and the writer loads `drained` (acquire) before it reuses a
//! slot, so a slot is never rewritten while the consumer may still read it.
//!
//! Each slot store is a release store, so everything the writer did before
//! it, including publishing `head = m` after the previous record, happens
//! before any reader that saw the store and then ran its acquire fence. So if
//! the reader's copy saw any field of record `m`, then `h2 >= m`: every record the writer may have been writing during the copy
//! has index `<= h2`, and it lives in the slot of the record `cap` earlier.
//! The reader therefore keeps only records with index `>= h2 + 1 - cap`
//! and counts the rest as lost. A span with an argument is published as two
//! records by one `head` store, so the reader allows for two records in
//! flight and keeps records `>= h2 + 2 - cap`. When the writer cannot be running (the reader
//! is the writer, or the thread has exited) it keeps everything from
//! `h2 - cap` on. All slot accesses are atomic, so a race loses records but
//! is never undefined behaviour; on x86_64 every one of these operations is
//! a plain `mov` (release stores and acquire loads are free under TSO).

use core::sync::atomic::Ordering;

use crate::order::{consume, fence, publish};

/// The recorder's storage word: 64 bits where the target has 64-bit
/// atomics; otherwise 32 (32-bit microcontrollers), and then a record takes
/// 12 bytes, keys are 32-bit addresses, and counters are kept to 32 bits
/// (written as compact records; `rtconv` unwraps them).
#[cfg(any(loom, target_has_atomic = "64"))]
pub type Word = u64;
/// See [`Word`].
#[cfg(all(not(loom), not(target_has_atomic = "64")))]
pub type Word = u32;
/// The atomic form of [`Word`].
#[cfg(all(not(loom), target_has_atomic = "64"))]
pub type AtomicWord = core::sync::atomic::AtomicU64;
/// The atomic form of [`Word`].
#[cfg(all(not(loom), not(target_has_atomic = "64")))]
pub type AtomicWord = core::sync::atomic::AtomicU32;
/// The atomic form of [`Word`].
#[cfg(loom)]
pub type AtomicWord = loom::sync::atomic::AtomicU64;

/// A [`Word`] as a `u64`.
#[inline(always)]
#[allow(clippy::useless_conversion)] // a no-op where `Word` is `u64`
pub fn wide(x: Word) -> u64 {
    u64::from(x)
}

/// A value as a [`Word`]: the same on 64-bit targets, its low 32 bits on the others.
#[inline(always)]
#[allow(clippy::unnecessary_cast)] // a no-op where `Word` is `u64`
pub const fn word(x: u64) -> Word {
    x as Word
}

/// Reads an atomic that only the calling thread ever writes (the writer's
/// own `head`, `dropped`, `aux`, `state`). A relaxed load in production;
/// under loom its `unsync_load`, which states exactly that, and keeps loom's
/// partial-order reduction from losing interleavings (tokio-rs/loom#166).
#[inline(always)]
pub(crate) fn own_load(a: &AtomicWord) -> u64 {
    #[cfg(not(loom))]
    {
        wide(a.load(Ordering::Relaxed))
    }
    #[cfg(loom)]
    // SAFETY: called only by the one thread that stores to `a`.
    unsafe {
        a.unsync_load()
    }
}

use ringtrace_format::Record;

/// One record's storage.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Slot {
    key: AtomicWord,
    enter: AtomicWord,
    exit: AtomicWord,
}

impl Slot {
    /// An empty slot, for rings in `static` storage.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Slot { key: AtomicWord::new(0), enter: AtomicWord::new(0), exit: AtomicWord::new(0) }
    }

    /// An empty slot (loom's atomics cannot be made in `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Slot { key: AtomicWord::new(0), enter: AtomicWord::new(0), exit: AtomicWord::new(0) }
    }

    /// Stores a record, each field published (see the module docs).
    #[inline(always)]
    fn publish(&self, key: u64, enter: u64, exit: u64) {
        publish!(self.key, word(key));
        publish!(self.enter, word(enter));
        publish!(self.exit, word(exit));
    }

    /// The record stored here (the reader's copy; its consistency is the head's to check).
    fn read(&self) -> Record {
        Record {
            key: wide(self.key.load(Ordering::Relaxed)),
            enter: wide(self.enter.load(Ordering::Relaxed)),
            exit: wide(self.exit.load(Ordering::Relaxed)),
        }
    }
}

/// What a ring does when it is full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// Overwrite the oldest record: a flight recorder that keeps the latest spans.
    #[default]
    Overwrite,
    /// Keep the first records and count every later span as dropped.
    StopWhenFull,
}

/// One body for the `const` and the loom constructors of a ring.
macro_rules! ring_with_mode {
    ($slots:expr, $mode:expr) => {
        Ring {
            slots: $slots,
            mask: $slots.len() as u64 - 1,
            stop_when_full: matches!($mode, Mode::StopWhenFull),
            limit: $slots.len() as u64,
            on_half: None,
            head: AtomicWord::new(0),
            dropped: AtomicWord::new(0),
            aux: AtomicWord::new(0),
            drained: AtomicWord::new(0),
        }
    };
}

/// A ring of span records with a power-of-two capacity.
#[derive(Debug)]
pub struct Ring {
    slots: &'static [Slot],
    mask: u64,
    stop_when_full: bool,
    /// Records a stop-when-full ring holds before a push needs more than a
    /// store ([`try_push`](Self::try_push)): its capacity, or half of it with
    /// a drain hook.
    limit: u64,
    /// Called by the writer when its stop-when-full ring is half full (a
    /// stream whose recording threads drain their own rings).
    on_half: Option<fn(&Ring)>,
    head: AtomicWord,
    dropped: AtomicWord,
    aux: AtomicWord,
    /// Records a consumer has copied out (stop-when-full rings only): the
    /// writer may fill up to `drained + capacity`.
    drained: AtomicWord,
}

/// The addresses of a ring's slots and counters (see [`Ring::addresses`]).
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingAddresses {
    pub slots: usize,
    pub head: usize,
    pub dropped: usize,
    pub aux: usize,
    pub drained: usize,
}

/// What a [`Ring::drain`] copied: records `first..first + copied` of the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Drained {
    /// The ring's ordinal of the first record copied.
    pub first: u64,
    /// Records copied.
    pub copied: usize,
    /// Spans dropped so far because the ring was full.
    pub dropped: u64,
    /// Of the records ever written, the argument and flags records.
    pub aux: u64,
}

/// What a snapshot could take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Records ever written when the snapshot began: the copy is of these.
    pub written: u64,
    /// Spans not written because the ring was full (stop-when-full mode).
    pub dropped: u64,
    /// Of `written`, the argument and flags records (not spans).
    pub aux: u64,
    /// Records copied to the output, oldest first.
    pub copied: usize,
}

impl Ring {
    /// An overwriting ring over `slots`, whose length must be a power of two.
    ///
    /// # Panics
    /// If `slots.len()` is not a power of two.
    #[cfg(not(loom))]
    pub const fn new(slots: &'static [Slot]) -> Self {
        Self::with_mode(slots, Mode::Overwrite)
    }

    /// A ring over `slots` (a power of two long) that behaves as `mode` says when full.
    ///
    /// # Panics
    /// If `slots.len()` is not a power of two.
    #[cfg(not(loom))]
    pub const fn with_mode(slots: &'static [Slot], mode: Mode) -> Self {
        assert!(slots.len().is_power_of_two(), "ring capacity must be a power of two");
        ring_with_mode!(slots, mode)
    }

    /// A ring over `slots` (a power of two long) that behaves as `mode` says when full.
    #[cfg(loom)]
    pub fn with_mode(slots: &'static [Slot], mode: Mode) -> Self {
        assert!(slots.len().is_power_of_two(), "ring capacity must be a power of two");
        ring_with_mode!(slots, mode)
    }

    /// A stop-when-full ring over `slots` (a power of two long) whose writer
    /// calls `on_half` when the ring is half full, before the record that
    /// would make it so: the consumer of a stream that the recording thread
    /// runs itself.
    #[cfg(not(loom))]
    pub const fn drained_by(slots: &'static [Slot], on_half: fn(&Ring)) -> Self {
        let mut ring = Self::with_mode(slots, Mode::StopWhenFull);
        ring.on_half = Some(on_half);
        ring.limit = slots.len() as u64 / 2;
        ring
    }

    /// The dump format's flags for this ring's section: stop-when-full, and
    /// (where records hold 64-bit keys) keys that carry their span's depth —
    /// [`Track`](crate::Track) tags each key it ends a span with; 32-bit
    /// records have no room for the tag.
    pub fn flags(&self) -> u32 {
        use ringtrace_format::layout::{RING_FLAG_KEY_DEPTH, RING_FLAG_STOP_WHEN_FULL};
        let depth = if core::mem::size_of::<Word>() == 8 { RING_FLAG_KEY_DEPTH } else { 0 };
        depth | if self.stop_when_full { RING_FLAG_STOP_WHEN_FULL } else { 0 }
    }

    /// What the ring does when full.
    pub fn mode(&self) -> Mode {
        if self.stop_when_full { Mode::StopWhenFull } else { Mode::Overwrite }
    }

    /// The slot storage, for its owner to free.
    #[cfg(all(feature = "std", not(loom)))]
    pub(crate) fn slots(&self) -> &'static [Slot] {
        self.slots
    }

    /// Where the ring's state lives, for the ring directory.
    #[cfg(not(loom))]
    pub(crate) fn addresses(&self) -> RingAddresses {
        RingAddresses {
            slots: self.slots.as_ptr() as usize,
            head: &self.head as *const AtomicWord as usize,
            dropped: &self.dropped as *const AtomicWord as usize,
            aux: &self.aux as *const AtomicWord as usize,
            drained: &self.drained as *const AtomicWord as usize,
        }
    }

    /// Capacity in records.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Records ever written.
    pub fn written(&self) -> u64 {
        wide(consume!(self.head))
    }

    /// Spans dropped because the ring was full (stop-when-full mode).
    pub fn dropped(&self) -> u64 {
        wide(self.dropped.load(Ordering::Relaxed))
    }

    /// Appends one record; when full, overwrites the oldest or counts the span
    /// as dropped, as the mode says. Must only be called by the ring's one
    /// writer; a second concurrent writer loses records but causes no
    /// undefined behaviour.
    #[inline(always)]
    pub fn push(&self, key: u64, enter: u64, exit: u64) {
        if !self.try_push(key, enter, exit) {
            self.push_at_limit(key, enter, exit);
        }
    }

    /// Appends one record if the ring takes it without its drain hook or a
    /// drop: an overwriting ring always; a stop-when-full one below half full
    /// where it has a drain hook, below full where it has none. Otherwise
    /// returns `false` having changed nothing, for
    /// [`push_at_limit`](Self::push_at_limit) — so the common path makes no
    /// call and its callers save no registers for one.
    #[inline(always)]
    pub(crate) fn try_push(&self, key: u64, enter: u64, exit: u64) -> bool {
        let n = own_load(&self.head);
        if self.stop_when_full && n.wrapping_sub(wide(consume!(self.drained))) >= self.limit {
            return false;
        }
        self.store(n, key, enter, exit);
        true
    }

    /// [`push`](Self::push) where [`try_push`](Self::try_push) declined: runs
    /// the drain hook, then stores the record or counts it dropped.
    #[cold]
    #[inline(never)]
    pub(crate) fn push_at_limit(&self, key: u64, enter: u64, exit: u64) {
        let n = own_load(&self.head);
        if self.full(n, 0) {
            self.dropped.store(word(own_load(&self.dropped) + 1), Ordering::Relaxed);
            return;
        }
        self.store(n, key, enter, exit);
    }

    /// Writes record `n` and publishes it.
    #[inline(always)]
    fn store(&self, n: u64, key: u64, enter: u64, exit: u64) {
        // SAFETY: `slots.len()` is a power of two and `mask == slots.len() - 1`
        // (checked in `new`, never changed), so `n & mask < slots.len()`.
        let slot = unsafe { self.slots.get_unchecked((n & self.mask) as usize) };
        slot.publish(key, enter, exit);
        publish!(self.head, word(n.wrapping_add(1)));
    }

    /// Whether a stop-when-full ring cannot take records `n..=n + extra`;
    /// first, at half full, its drain hook runs, if it has one.
    #[inline(always)]
    fn full(&self, n: u64, extra: u64) -> bool {
        let used = n.wrapping_sub(wide(consume!(self.drained)));
        if let Some(on_half) = self.on_half
            && used >= self.slots.len() as u64 / 2
        {
            on_half(self);
            return (n + extra).wrapping_sub(wide(consume!(self.drained))) > self.mask;
        }
        used + extra > self.mask
    }

    /// Appends a span with an integer argument: an argument record (key
    /// [`ARG_KEY`](ringtrace_format::layout::ARG_KEY)) then the span record,
    /// published together.
    #[inline(always)]
    pub fn push_with_arg(&self, arg: u64, key: u64, enter: u64, exit: u64) {
        self.push_pair(ringtrace_format::layout::ARG_KEY, arg, key, enter, exit);
    }

    /// Appends a span with flags ([`SPAN_FLAG_UNWOUND`](ringtrace_format::layout::SPAN_FLAG_UNWOUND)):
    /// a flags record (key [`FLAGS_KEY`](ringtrace_format::layout::FLAGS_KEY)) then the span
    /// record, published together.
    #[inline]
    pub fn push_with_flags(&self, flags: u64, key: u64, enter: u64, exit: u64) {
        self.push_pair(ringtrace_format::layout::FLAGS_KEY, flags, key, enter, exit);
    }

    /// A record that is not a span (`marker`, holding `value`) and the span
    /// it qualifies, published by one `head` store.
    #[inline(always)]
    fn push_pair(&self, marker: u64, value: u64, key: u64, enter: u64, exit: u64) {
        let n = own_load(&self.head);
        if self.stop_when_full && self.full(n, 1) {
            self.dropped.store(word(own_load(&self.dropped) + 1), Ordering::Relaxed);
            return;
        }
        for (i, (k, a, b)) in [(marker, value, 0), (key, enter, exit)].into_iter().enumerate() {
            // SAFETY: as in `push`: the index is masked to the power-of-two length.
            let slot = unsafe { self.slots.get_unchecked((n.wrapping_add(i as u64) & self.mask) as usize) };
            slot.publish(k, a, b);
        }
        self.aux.store(word(own_load(&self.aux) + 1), Ordering::Relaxed);
        publish!(self.head, word(n.wrapping_add(2)));
    }

    /// Copies the records written since the last drain, oldest first, into
    /// `out` (as many as fit), and frees their slots for the writer: the
    /// consumer side of a stop-when-full ring that a stream empties. One
    /// consumer at a time; the writer may run meanwhile.
    pub fn drain(&self, out: &mut [Record]) -> Drained {
        let first = wide(self.drained.load(Ordering::Relaxed));
        let head = wide(consume!(self.head));
        let copied = (head.wrapping_sub(first) as usize).min(out.len()).min(self.slots.len());
        for (i, rec) in out[..copied].iter_mut().enumerate() {
            *rec = self.slots[((first + i as u64) & self.mask) as usize].read();
        }
        // Release: the copies above are done before the writer can see the slots free.
        publish!(self.drained, word(first + copied as u64));
        Drained { first, copied, dropped: self.dropped(), aux: wide(self.aux.load(Ordering::Relaxed)) }
    }

    /// The retained records, oldest first, read straight from the slots, and
    /// the counts a snapshot gives: for a dump written while no writer can
    /// run (recording paused on a single core), which then needs no copy.
    /// Records a writer stores meanwhile may be read torn: use
    /// [`snapshot`](Self::snapshot) wherever one can.
    pub fn quiescent(&self) -> (Snapshot, impl Iterator<Item = Record> + '_) {
        let cap = self.slots.len() as u64;
        let head = wide(consume!(self.head));
        let first = head.saturating_sub(cap);
        let snap = Snapshot {
            written: head,
            dropped: self.dropped(),
            aux: wide(self.aux.load(Ordering::Relaxed)),
            copied: (head - first) as usize,
        };
        let records = (first..head).map(move |i| self.slots[(i & self.mask) as usize].read());
        (snap, records)
    }

    /// Copies the retained records, oldest first, into `out` (which must hold
    /// at least `capacity()` records). `writer_may_run` says whether the
    /// owning thread may be writing concurrently (see the module docs).
    pub fn snapshot(&self, out: &mut [Record], writer_may_run: bool) -> Snapshot {
        let cap = self.slots.len() as u64;
        let h1 = wide(consume!(self.head));
        let first = h1.saturating_sub(cap);
        let n = ((h1 - first) as usize).min(out.len());
        let first = h1 - n as u64;
        for (i, rec) in out[..n].iter_mut().enumerate() {
            *rec = self.slots[((first + i as u64) & self.mask) as usize].read();
        }
        fence(Ordering::Acquire);
        let h2 = wide(self.head.load(Ordering::Relaxed));
        let safe_from = if self.stop_when_full || !writer_may_run {
            // Nothing in [first, h1) can have been overwritten.
            h2.saturating_sub(cap).min(first)
        } else {
            (h2 + 2).saturating_sub(cap)
        };
        let skip = safe_from.saturating_sub(first).min(n as u64) as usize;
        out.copy_within(skip..n, 0);
        // The snapshot is of the ring as it was at `h1`: records written
        // during the copy belong to the next dump, not to this one's losses.
        Snapshot { written: h1, dropped: self.dropped(), aux: wide(self.aux.load(Ordering::Relaxed)), copied: n - skip }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leak(n: usize) -> &'static [Slot] {
        extern crate std;
        std::boxed::Box::leak((0..n).map(|_| Slot::new()).collect())
    }

    #[test]
    fn stop_when_full_keeps_the_first_records_and_counts_the_rest() {
        let ring = Ring::with_mode(leak(4), Mode::StopWhenFull);
        for i in 0..10u64 {
            ring.push(i, 0, 0);
        }
        let mut out = [Record::default(); 4];
        let snap = ring.snapshot(&mut out, true);
        assert_eq!(snap, Snapshot { written: 4, dropped: 6, aux: 0, copied: 4 });
        assert_eq!(out.map(|r| r.key), [0, 1, 2, 3]);
    }

    /// A ring with a drain hook calls it before the record that would make it half full, each
    /// time, and drops nothing while the hook drains; one whose hook does not drain fills up and
    /// then counts what it cannot take, calling the hook before each.
    #[test]
    fn the_drain_hook_runs_at_half_full_and_a_full_ring_counts_its_drops() {
        extern crate std;
        use core::sync::atomic::AtomicUsize;
        static CALLS: AtomicUsize = AtomicUsize::new(0);
        static KEYS: [AtomicWord; 64] = [const { AtomicWord::new(0) }; 64];
        static KEPT: AtomicUsize = AtomicUsize::new(0);
        fn drain(ring: &Ring) {
            CALLS.fetch_add(1, Ordering::Relaxed);
            let mut out = [Record::default(); 8];
            let drained = ring.drain(&mut out);
            for r in &out[..drained.copied] {
                KEYS[KEPT.fetch_add(1, Ordering::Relaxed)].store(word(r.key), Ordering::Relaxed);
            }
        }
        let ring = Ring::drained_by(leak(8), drain);
        for i in 0..20u64 {
            ring.push(i, 0, 0);
        }
        // Half full (4 of 8) before records 4, 8, 12 and 16: drained each time.
        assert_eq!(CALLS.load(Ordering::Relaxed), 4);
        assert_eq!(ring.dropped(), 0);
        let kept: std::vec::Vec<u64> =
            KEYS[..KEPT.load(Ordering::Relaxed)].iter().map(|k| wide(k.load(Ordering::Relaxed))).collect();
        assert_eq!(kept, (0..16).collect::<std::vec::Vec<u64>>());

        fn ignore(_: &Ring) {
            CALLS.fetch_add(1, Ordering::Relaxed);
        }
        CALLS.store(0, Ordering::Relaxed);
        let ring = Ring::drained_by(leak(8), ignore);
        for i in 0..11u64 {
            ring.push(i, 0, 0);
        }
        // The hook runs before each record from the fourth on; the last three do not fit.
        assert_eq!((CALLS.load(Ordering::Relaxed), ring.written(), ring.dropped()), (7, 8, 3));
    }

    #[test]
    fn keeps_the_newest_capacity_records_in_order() {
        let ring = Ring::new(leak(8));
        for i in 0..20u64 {
            ring.push(i, i * 10, i * 10 + 1);
        }
        let mut out = [Record::default(); 8];
        let snap = ring.snapshot(&mut out, false);
        assert_eq!(snap, Snapshot { written: 20, dropped: 0, aux: 0, copied: 8 });
        let keys: [u64; 8] = core::array::from_fn(|i| out[i].key);
        assert_eq!(keys, [12, 13, 14, 15, 16, 17, 18, 19]);
        assert_eq!(out[0].exit, 121);
    }

    /// A reader snapshotting while the writer runs never sees a torn record
    /// and never a gap: what it keeps is a run of consecutive, whole records.
    #[test]
    fn snapshots_during_writes_are_never_torn() {
        extern crate std;
        use std::sync::atomic::AtomicBool;
        use std::vec;

        let ring: &'static Ring = std::boxed::Box::leak(std::boxed::Box::new(Ring::new(leak(64))));
        let stop: &'static AtomicBool = std::boxed::Box::leak(std::boxed::Box::new(AtomicBool::new(false)));
        let writer = std::thread::spawn(move || {
            // Span n has enter 3n and exit 7n; every fourth carries the argument 5n.
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if n % 4 == 3 {
                    ring.push_with_arg(n * 5, n, n * 3, n * 7);
                } else {
                    ring.push(n, n * 3, n * 7);
                }
                n += 1;
            }
            n
        });
        let mut out = vec![Record::default(); 64];
        while ring.written() == 0 {
            std::thread::yield_now();
        }
        // Snapshot until 1,000 snapshots have raced the writer lapping the
        // 64-slot ring (bounded, in case the writer is starved of CPU).
        let mut overlapped = 0;
        let mut previous = 0;
        for _ in 0..10_000_000 {
            if overlapped == 1_000 {
                break;
            }
            let snap = ring.snapshot(&mut out, true);
            if snap.written > previous + 1 {
                overlapped += 1;
            }
            previous = snap.written;
            let kept = &out[..snap.copied];
            let mut previous_span: Option<u64> = None;
            for (i, r) in kept.iter().enumerate() {
                if r.key == ringtrace_format::layout::ARG_KEY {
                    assert_eq!(r.exit, 0, "torn argument record");
                    if let Some(span) = kept.get(i + 1) {
                        assert_eq!(span.key * 5, r.enter, "argument not followed by its span");
                    }
                    continue;
                }
                assert_eq!((r.enter, r.exit), (r.key * 3, r.key * 7), "torn record");
                if let Some(p) = previous_span {
                    assert_eq!(r.key, p + 1, "gap in a snapshot");
                }
                previous_span = Some(r.key);
            }
            if let Some(last) = previous_span {
                assert!(last < snap.written, "record beyond what was published");
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(overlapped, 1_000, "only {overlapped} snapshots ran while the writer wrote");
    }

    #[test]
    fn a_live_writer_costs_the_two_slots_it_may_be_writing() {
        let ring = Ring::new(leak(4));
        ring.push(0, 0, 0);
        ring.push(1, 0, 0);
        let mut out = [Record::default(); 4];
        // Records 2 and 3 (a span with an argument) would go to empty slots: nothing at risk.
        assert_eq!(ring.snapshot(&mut out, true).copied, 2);
        ring.push(2, 0, 0);
        // Records 3 and 4 may be in flight; record 4 reuses record 0's slot.
        let snap = ring.snapshot(&mut out, true);
        assert_eq!((snap.written, snap.copied, out[0].key), (3, 2, 1));
        // The writer's own snapshot, or one after it exited, keeps everything.
        assert_eq!(ring.snapshot(&mut out, false).copied, 3);
    }

    #[test]
    fn an_argument_record_precedes_its_span() {
        let ring = Ring::new(leak(8));
        ring.push(1, 10, 11);
        ring.push_with_arg(42, 2, 20, 21);
        let mut out = [Record::default(); 8];
        let snap = ring.snapshot(&mut out, false);
        assert_eq!((snap.written, snap.aux, snap.copied), (3, 1, 3));
        assert_eq!(out[1], Record { key: ringtrace_format::layout::ARG_KEY, enter: 42, exit: 0 });
        assert_eq!(out[2], Record { key: 2, enter: 20, exit: 21 });
    }
}
