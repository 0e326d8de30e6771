//! A single-writer ring of span records that any thread can snapshot.
//!
//! # Protocol
//!
//! `head` counts records ever written. The owning thread writes record `n`
//! into slot `n & mask` and then publishes `head = n + 1`:
//!
//! ```text
//! writer:  fence(Release); slot.{key,enter,exit}.store(Relaxed); head.store(n + 1, Release)
//! reader:  h1 = head.load(Acquire); copy slots [h1 - cap, h1); fence(Acquire); h2 = head.load(Relaxed)
//! ```
//!
//! The release fence at the start of each write orders the previous
//! `head` store before this record's slot stores. So if the reader's copy saw
//! any byte of record `m`, its fence makes `head >= m` visible, i.e.
//! `h2 >= m`: every record the writer may have been writing during the copy
//! has index `<= h2`, and it lives in the slot of the record `cap` earlier.
//! The reader therefore keeps only records with index `>= h2 + 1 - cap`
//! and counts the rest as lost. When the writer cannot be running (the reader
//! is the writer, or the thread has exited) it keeps everything from
//! `h2 - cap` on. All slot accesses are atomic, so a race loses records but
//! is never undefined behaviour; on x86_64 every one of these operations is
//! a plain `mov`.

use core::sync::atomic::{AtomicU64, Ordering, fence};

use ringtrace_format::Record;

/// One record's storage.
#[repr(C)]
#[derive(Debug, Default)]
pub struct Slot {
    key: AtomicU64,
    enter: AtomicU64,
    exit: AtomicU64,
}

impl Slot {
    /// An empty slot, for rings in `static` storage.
    pub const fn new() -> Self {
        Slot { key: AtomicU64::new(0), enter: AtomicU64::new(0), exit: AtomicU64::new(0) }
    }
}

/// A ring of span records with a power-of-two capacity.
#[derive(Debug)]
pub struct Ring {
    slots: &'static [Slot],
    mask: u64,
    head: AtomicU64,
}

/// What a snapshot could take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// Records ever written when the snapshot finished.
    pub written: u64,
    /// Records copied to the output, oldest first.
    pub copied: usize,
}

impl Ring {
    /// A ring over `slots`, whose length must be a power of two.
    ///
    /// # Panics
    /// If `slots.len()` is not a power of two.
    pub const fn new(slots: &'static [Slot]) -> Self {
        assert!(slots.len().is_power_of_two(), "ring capacity must be a power of two");
        Ring { slots, mask: slots.len() as u64 - 1, head: AtomicU64::new(0) }
    }

    /// Capacity in records.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Records ever written.
    pub fn written(&self) -> u64 {
        self.head.load(Ordering::Acquire)
    }

    /// Appends one record, overwriting the oldest when full. Must only be
    /// called by the ring's one writer; a second concurrent writer loses
    /// records but causes no undefined behaviour.
    #[inline(always)]
    pub fn push(&self, key: u64, enter: u64, exit: u64) {
        let n = self.head.load(Ordering::Relaxed);
        // SAFETY: `slots.len()` is a power of two and `mask == slots.len() - 1`
        // (checked in `new`, never changed), so `n & mask < slots.len()`.
        let slot = unsafe { self.slots.get_unchecked((n & self.mask) as usize) };
        fence(Ordering::Release);
        slot.key.store(key, Ordering::Relaxed);
        slot.enter.store(enter, Ordering::Relaxed);
        slot.exit.store(exit, Ordering::Relaxed);
        self.head.store(n.wrapping_add(1), Ordering::Release);
    }

    /// Copies the retained records, oldest first, into `out` (which must hold
    /// at least `capacity()` records). `writer_may_run` says whether the
    /// owning thread may be writing concurrently (see the module docs).
    pub fn snapshot(&self, out: &mut [Record], writer_may_run: bool) -> Snapshot {
        let cap = self.slots.len() as u64;
        let h1 = self.head.load(Ordering::Acquire);
        let first = h1.saturating_sub(cap);
        let n = ((h1 - first) as usize).min(out.len());
        let first = h1 - n as u64;
        for (i, rec) in out[..n].iter_mut().enumerate() {
            let slot = &self.slots[((first + i as u64) & self.mask) as usize];
            *rec = Record {
                key: slot.key.load(Ordering::Relaxed),
                enter: slot.enter.load(Ordering::Relaxed),
                exit: slot.exit.load(Ordering::Relaxed),
            };
        }
        fence(Ordering::Acquire);
        let h2 = self.head.load(Ordering::Relaxed);
        let safe_from = if writer_may_run { (h2 + 1).saturating_sub(cap) } else { h2.saturating_sub(cap) };
        let skip = safe_from.saturating_sub(first).min(n as u64) as usize;
        out.copy_within(skip..n, 0);
        Snapshot { written: h2, copied: n - skip }
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
    fn keeps_the_newest_capacity_records_in_order() {
        let ring = Ring::new(leak(8));
        for i in 0..20u64 {
            ring.push(i, i * 10, i * 10 + 1);
        }
        let mut out = [Record::default(); 8];
        let snap = ring.snapshot(&mut out, false);
        assert_eq!(snap, Snapshot { written: 20, copied: 8 });
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
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                ring.push(n, n.wrapping_mul(3), n.wrapping_mul(7));
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
            for (i, r) in kept.iter().enumerate() {
                assert_eq!((r.enter, r.exit), (r.key.wrapping_mul(3), r.key.wrapping_mul(7)), "torn record");
                if i > 0 {
                    assert_eq!(r.key, kept[i - 1].key + 1, "gap in a snapshot");
                }
            }
            if let Some(last) = kept.last() {
                assert!(last.key < snap.written, "record beyond what was published");
            }
        }
        stop.store(true, Ordering::Relaxed);
        writer.join().unwrap();
        assert_eq!(overlapped, 1_000, "only {overlapped} snapshots ran while the writer wrote");
    }

    #[test]
    fn a_live_writer_costs_the_oldest_slot_of_a_full_ring_only() {
        let ring = Ring::new(leak(4));
        for i in 0..3u64 {
            ring.push(i, 0, 0);
        }
        let mut out = [Record::default(); 4];
        // Not yet full: nothing can be overwritten, nothing is dropped.
        assert_eq!(ring.snapshot(&mut out, true).copied, 3);
        ring.push(3, 0, 0);
        ring.push(4, 0, 0);
        let snap = ring.snapshot(&mut out, true);
        assert_eq!(snap, Snapshot { written: 5, copied: 3 });
        assert_eq!(out[0].key, 2);
    }
}
