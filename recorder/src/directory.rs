//! The ring directory at the exported symbol `ringtrace_directory`, through
//! which `rtconv` finds every ring in a core file or a RAM image.
//!
//! Its layout is the format's ([`ringtrace_format::directory`], FORMAT.md
//! "The ring directory"): a magic, then pointer-sized words — the counter,
//! the start anchor, the latest anchor, the first entry of a linked list with
//! one entry per registered ring. An entry holds the addresses of the ring's
//! own counters (`head`, `dropped`, …), so the hot path writes nothing more
//! than it did: the directory changes only when a thread registers or exits,
//! when a ring is freed, and when an anchor is taken.
//!
//! A hosted program links each thread's ring as the thread registers; a
//! firmware links its tracks once, at start-up
//! ([`Dumper::publish`](crate::bare::Dumper::publish)).
//!
//! # Consistent at every instant
//!
//! Entries are linked and unlinked only under the registry lock (a
//! firmware: by its one start-up call), each by one release store of a
//! `next` or `FIRST` word, after the entry's own words are written: a
//! snapshot taken at any instant sees the list without the entry or with it
//! whole. The latest anchor is written under a sequence
//! count (odd while it is being written). A core holds the memory as the
//! stopped threads left it; on x86_64 stores become visible in program
//! order, and release stores give the same on aarch64; a halted
//! single-core microcontroller's RAM holds every store it made.

use core::sync::atomic::{AtomicUsize, Ordering};

use ringtrace_format::directory::{DIR_WORDS, ENTRY_WORDS, MAGIC, STATE_LIVE, VERSION, dir, entry};
use ringtrace_format::{Anchor, ClockInfo};

use crate::ring::Word;
use crate::track::Track;

/// The directory: [`MAGIC`], then [`DIR_WORDS`] words.
#[repr(C)]
pub struct Directory {
    magic: [u8; 8],
    words: [AtomicUsize; DIR_WORDS],
}

/// The one directory, at the symbol rtconv looks up (with `off`, nothing records: no directory is
/// exported, and the linker drops it with the rest of the recorder).
#[cfg_attr(not(feature = "off"), unsafe(export_name = "ringtrace_directory"))]
pub static DIRECTORY: Directory = Directory::new();

impl Directory {
    const fn new() -> Self {
        let mut initial = [0usize; DIR_WORDS];
        initial[dir::VERSION] = VERSION as usize;
        initial[dir::POINTER_BYTES] = core::mem::size_of::<usize>();
        initial[dir::RECORD_WORD_BYTES] = core::mem::size_of::<Word>();
        initial[dir::ENTRY_WORDS] = ENTRY_WORDS;
        let mut words = [const { AtomicUsize::new(0) }; DIR_WORDS];
        let mut i = 0;
        while i < DIR_WORDS {
            words[i] = AtomicUsize::new(initial[i]);
            i += 1;
        }
        Directory { magic: MAGIC, words }
    }

    fn set(&self, index: usize, value: u64) {
        self.words[index].store(value as usize, Ordering::Release);
    }
}

/// One ring's entry, kept in its [`Track`].
#[repr(C)]
#[derive(Debug)]
pub(crate) struct Entry {
    words: [AtomicUsize; ENTRY_WORDS],
}

impl Entry {
    /// An entry not yet filled in: [`link`] fills it once its ring is in place.
    pub(crate) const fn new() -> Self {
        Entry { words: [const { AtomicUsize::new(0) }; ENTRY_WORDS] }
    }

    fn set(&self, index: usize, value: usize) {
        self.words[index].store(value, Ordering::Release);
    }

    /// Marks the entry's thread exited: its ring is whole from now on.
    #[cfg(feature = "std")]
    pub(crate) fn mark_exited(&self) {
        self.set(entry::STATE, ringtrace_format::directory::STATE_EXITED as usize);
    }
}

/// States the counter, its rate and the start anchor: at the first span (a firmware: at
/// [`Dumper::publish`](crate::bare::Dumper::publish)).
pub(crate) fn set_clock(info: &ClockInfo, start: Anchor) {
    let d = &DIRECTORY;
    d.set(dir::COUNTER, u64::from(info.counter.code()));
    d.set(dir::COUNTER_BITS, u64::from(info.counter_bits));
    d.set(dir::NOMINAL_HZ, info.nominal_hz);
    d.set(dir::RATE_SOURCE, u64::from(info.rate_source.code()));
    d.set(dir::START_TICKS, start.ticks);
    d.set(dir::START_MONO_NS, start.mono_ns);
    d.set(dir::START_REAL_NS, start.real_ns);
    let (sites, bytes) = crate::sites::section();
    d.set(dir::SITES, sites);
    d.set(dir::SITES_LEN, bytes.len() as u64);
    d.set(dir::START_SET, 1);
}

/// Keeps `anchor` as the latest: at each thread's first span and each dump.
/// Callers hold the registry lock, so writers never overlap.
#[cfg(feature = "std")]
pub(crate) fn set_latest(anchor: Anchor) {
    let d = &DIRECTORY;
    let seq = d.words[dir::LATEST_SEQ].load(Ordering::Relaxed);
    d.words[dir::LATEST_SEQ].store(seq | 1, Ordering::Release);
    d.set(dir::LATEST_TICKS, anchor.ticks);
    d.set(dir::LATEST_MONO_NS, anchor.mono_ns);
    d.set(dir::LATEST_REAL_NS, anchor.real_ns);
    d.words[dir::LATEST_SEQ].store((seq | 1) + 1, Ordering::Release);
}

/// Fills `track`'s entry — thread `tid`, named `name`, [`STATE_LIVE`] — and links it first
/// in the list, unless it is linked already. The
/// track and the name stay where they are for as long as the entry is linked (a
/// registered, boxed `ThreadRing`; a firmware's statics), and no other link or
/// unlink runs meanwhile (the registry lock; a firmware's one start-up call).
pub(crate) fn link(track: &Track, tid: u64, name: &[u8]) {
    let e = track.entry();
    if e.words[entry::STATE].load(Ordering::Relaxed) != 0 {
        return; // linked: a second link would make the list a cycle
    }
    let ring = track.ring().addresses();
    let open = track.open().addresses();
    let (too_deep, abandoned) = track.unrecorded_addresses();
    e.set(entry::TID, tid as usize);
    e.set(entry::NAME, name.as_ptr() as usize);
    e.set(entry::NAME_LEN, name.len());
    e.set(entry::SLOTS, ring.slots);
    e.set(entry::CAPACITY, track.ring().capacity());
    e.set(entry::FLAGS, track.ring().flags() as usize);
    e.set(entry::HEAD, ring.head);
    e.set(entry::DROPPED, ring.dropped);
    e.set(entry::AUX, ring.aux);
    e.set(entry::DRAINED, ring.drained);
    e.set(entry::OPEN_STATE, open.state);
    e.set(entry::OPEN_ENTRIES, open.entries);
    e.set(entry::OPEN_CAPACITY, open.capacity);
    e.set(entry::TOO_DEEP, too_deep);
    e.set(entry::ABANDONED, abandoned);
    e.set(entry::STATE, STATE_LIVE as usize);
    let first = &DIRECTORY.words[dir::FIRST];
    e.set(entry::NEXT, first.load(Ordering::Relaxed));
    first.store(e as *const Entry as usize, Ordering::Release);
}

/// Takes `track`'s entry out of the list, before its ring is freed. The
/// caller holds the registry lock.
#[cfg(feature = "std")]
pub(crate) fn unlink(track: &Track) {
    let target = track.entry() as *const Entry as usize;
    let next = track.entry().words[entry::NEXT].load(Ordering::Relaxed);
    let mut link = &DIRECTORY.words[dir::FIRST];
    loop {
        let at = link.load(Ordering::Relaxed);
        if at == 0 {
            return; // never linked
        }
        if at == target {
            link.store(next, Ordering::Release);
            return;
        }
        // SAFETY: every address in the list is the entry of a ThreadRing still in the registry
        // (entries leave the list before their ring is freed), and the caller holds its lock.
        link = unsafe { &(*(at as *const Entry)).words[entry::NEXT] };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_the_formats() {
        assert_eq!(core::mem::offset_of!(Directory, words), 8);
        assert_eq!(core::mem::size_of::<Directory>(), 8 + DIR_WORDS * core::mem::size_of::<usize>());
        assert_eq!(core::mem::size_of::<Entry>(), ENTRY_WORDS * core::mem::size_of::<usize>());
        assert_eq!(DIRECTORY.magic, MAGIC);
        assert_eq!(DIRECTORY.words[dir::VERSION].load(Ordering::Relaxed), 1);
    }
}
