//! The spans a thread has begun and not yet ended, readable by a dump.
//!
//! A span's record is written when it ends; without this stack a dump could
//! not show what a thread was doing when it was taken. Each thread keeps the
//! key and entry ticks of its outermost [`OPEN_DEPTH`] open spans.
//!
//! # Protocol
//!
//! One atomic `state` holds `pops << 8 | depth` (pops ever made, current
//! depth). The owning thread pushes by storing the entry, then `state` with
//! the depth bumped; it pops by storing `state` with `pops` bumped and the
//! depth lowered. Every store is a release store. A reader loads `state`,
//! copies the entries below its depth, and loads `state` again after an
//! acquire fence: if `pops` did not change, no entry it copied can have been
//! rewritten — an entry is rewritten only by a push at its depth, which
//! comes after a pop to that depth — and the entries below the smaller of the
//! two depths are still open. A reader that saw an entry's new value
//! synchronises, through its fence, with that store, so its second load sees
//! the pop before it. One store of `state` per push and one per pop.
//!
//! Model-checked with loom (`recorder/checks/tests/loom.rs`), which found (of an
//! earlier protocol that counted pushes) that every store of `state` must be
//! a release store, and fails if the pop does not count.

use core::sync::atomic::Ordering;

use crate::order::{consume, fence, publish};

use crate::ring::{AtomicWord, own_load, wide, word};

/// How many nested open spans a thread tracks; deeper ones are not shown as open.
pub const OPEN_DEPTH: usize = 64;
const DEPTH_BITS: u32 = 8;
const DEPTH_MASK: u64 = (1 << DEPTH_BITS) - 1;

/// The addresses of an open-span stack's state (see [`OpenStack::addresses`]).
#[cfg(not(loom))]
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenAddresses {
    pub state: usize,
    pub entries: usize,
    pub capacity: usize,
}

/// One open span: {key, enter ticks}, two record words (the directory's layout).
#[repr(C)]
#[derive(Debug)]
struct Entry {
    key: AtomicWord,
    enter: AtomicWord,
}

/// A thread's stack of open spans.
#[derive(Debug)]
pub struct OpenStack {
    state: AtomicWord,
    entries: [Entry; OPEN_DEPTH],
}

impl Default for OpenStack {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenStack {
    /// An empty stack.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        OpenStack {
            state: AtomicWord::new(0),
            entries: [const { Entry { key: AtomicWord::new(0), enter: AtomicWord::new(0) } }; OPEN_DEPTH],
        }
    }

    /// An empty stack (loom's atomics cannot be made in `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        OpenStack {
            state: AtomicWord::new(0),
            entries: core::array::from_fn(|_| Entry { key: AtomicWord::new(0), enter: AtomicWord::new(0) }),
        }
    }

    /// Records that a span began; returns the token to pass to [`pop`](Self::pop).
    /// Owner thread only.
    #[inline(always)]
    pub fn push(&self, key: u64, enter: u64) -> u64 {
        let state = own_load(&self.state);
        let depth = state & DEPTH_MASK;
        // Release stores: the entry is whole before any reader sees a depth covering it.
        if let Some(entry) = self.entries.get(depth as usize) {
            publish!(entry.key, word(key));
            publish!(entry.enter, word(enter));
        }
        // Saturate rather than carry into `pops` (depth 255 is far past OPEN_DEPTH).
        publish!(self.state, word(state + u64::from(depth < DEPTH_MASK)));
        depth
    }

    /// Records that the span whose [`push`](Self::push) returned `depth`
    /// ended (with every span opened inside it).
    #[inline(always)]
    pub fn pop(&self, depth: u64) {
        let state = own_load(&self.state);
        // Release: a reader that saw an entry a later push rewrites sees this pop.
        publish!(self.state, word(((state >> DEPTH_BITS) + 1) << DEPTH_BITS | depth));
    }

    /// Where the stack's state and entries live, for the ring directory:
    /// (state, entries, how many entries).
    #[cfg(not(loom))]
    pub(crate) fn addresses(&self) -> OpenAddresses {
        OpenAddresses {
            state: &self.state as *const AtomicWord as usize,
            entries: self.entries.as_ptr() as usize,
            capacity: OPEN_DEPTH,
        }
    }

    /// Copies the open spans, outermost first, into `out`; returns how many,
    /// or `None` if the owner kept pushing so no consistent copy was had.
    pub fn snapshot(&self, out: &mut [(u64, u64); OPEN_DEPTH]) -> Option<usize> {
        for _ in 0..8 {
            let before = wide(consume!(self.state));
            let depth = ((before & DEPTH_MASK) as usize).min(OPEN_DEPTH);
            for (slot, entry) in out.iter_mut().zip(&self.entries[..depth]) {
                *slot = (wide(entry.key.load(Ordering::Relaxed)), wide(entry.enter.load(Ordering::Relaxed)));
            }
            fence(Ordering::Acquire);
            let after = wide(self.state.load(Ordering::Relaxed));
            if before >> DEPTH_BITS == after >> DEPTH_BITS {
                return Some(depth.min((after & DEPTH_MASK) as usize));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_what_is_open_outermost_first() {
        let stack = OpenStack::new();
        let outer = stack.push(1, 100);
        let inner = stack.push(2, 200);
        let mut out = [(0, 0); OPEN_DEPTH];
        assert_eq!(stack.snapshot(&mut out), Some(2));
        assert_eq!(&out[..2], &[(1, 100), (2, 200)]);
        stack.pop(inner);
        let sibling = stack.push(3, 300);
        assert_eq!(stack.snapshot(&mut out), Some(2));
        assert_eq!(&out[..2], &[(1, 100), (3, 300)]);
        stack.pop(sibling);
        stack.pop(outer);
        assert_eq!(stack.snapshot(&mut out), Some(0));
    }

    #[test]
    fn deeper_than_tracked_is_counted_but_not_shown() {
        let stack = OpenStack::new();
        let tokens: [u64; 70] = core::array::from_fn(|i| stack.push(i as u64, 0));
        let mut out = [(0, 0); OPEN_DEPTH];
        assert_eq!(stack.snapshot(&mut out), Some(OPEN_DEPTH));
        for &t in tokens.iter().rev() {
            stack.pop(t);
        }
        assert_eq!(stack.snapshot(&mut out), Some(0));
    }
}
