//! The ring directory: the in-memory half of the format, through which a
//! reader finds every ring in a snapshot of a recording program's memory (a
//! core file, a RAM image read while the target is halted).
//!
//! The recorder keeps one [`Directory`](self) at the exported symbol
//! [`SYMBOL`]: an 8-byte [`MAGIC`], then [`DIR_WORDS`] words, then nothing
//! else. Every word is one target pointer wide (4 or 8 bytes, as stated by
//! [`dir::POINTER_BYTES`]) in the target's byte order. The directory's
//! `FIRST` word points at the first [`entry`] of a singly linked list, one
//! entry per ring. The list and the entries stay consistent at every
//! instant (see FORMAT.md, "The ring directory"), so a snapshot taken at any
//! moment reads whole; the rings themselves follow the recorder's ring
//! protocol, under which at most the two oldest slots of an overwriting ring
//! whose writer may have been running can be half rewritten: a reader leaves
//! them out ([`kept_from`]) and counts them as lost.

use core::fmt;

/// The directory's first 8 bytes.
pub const MAGIC: [u8; 8] = *b"RTRINGS\x01";
/// The layout version this crate writes and reads.
pub const VERSION: u64 = 1;
/// The exported symbol the directory lives at.
pub const SYMBOL: &str = "ringtrace_directory";
/// Words after the magic.
pub const DIR_WORDS: usize = dir::SITES_LEN + 1;
/// Words in an entry of [`VERSION`] 1 (a later version may add words at the end: see [`dir::ENTRY_WORDS`]).
pub const ENTRY_WORDS: usize = entry::DRAINED + 1;
/// The most entries a reader follows: a longer list is a cycle or garbage.
pub const MAX_ENTRIES: usize = 1 << 20;

/// Word indices in the directory, after the magic.
pub mod dir {
    /// Layout version ([`super::VERSION`]).
    pub const VERSION: usize = 0;
    /// Bytes in a word and a pointer: 4 or 8.
    pub const POINTER_BYTES: usize = 1;
    /// Bytes in a record word (8: 24-byte records; 4: 12-byte compact records).
    pub const RECORD_WORD_BYTES: usize = 2;
    /// Words in each entry: a reader reads this many and uses those it knows.
    pub const ENTRY_WORDS: usize = 3;
    /// The counter's [`CounterKind`](crate::CounterKind) code.
    pub const COUNTER: usize = 4;
    /// The counter's significant bits.
    pub const COUNTER_BITS: usize = 5;
    /// The nominal rate in Hz, 0 if unknown.
    pub const NOMINAL_HZ: usize = 6;
    /// Where the nominal rate came from ([`RateSource`](crate::RateSource) code).
    pub const RATE_SOURCE: usize = 7;
    /// 1 once the start anchor below is whole, else 0.
    pub const START_SET: usize = 8;
    /// The start anchor's counter ticks.
    pub const START_TICKS: usize = 9;
    /// The start anchor's monotonic nanoseconds.
    pub const START_MONO_NS: usize = 10;
    /// The start anchor's realtime nanoseconds.
    pub const START_REAL_NS: usize = 11;
    /// A sequence count for the latest anchor: odd while it is being written, 0 if none.
    pub const LATEST_SEQ: usize = 12;
    /// The latest anchor's counter ticks.
    pub const LATEST_TICKS: usize = 13;
    /// The latest anchor's monotonic nanoseconds.
    pub const LATEST_MONO_NS: usize = 14;
    /// The latest anchor's realtime nanoseconds.
    pub const LATEST_REAL_NS: usize = 15;
    /// The address of the first entry, 0 if none.
    pub const FIRST: usize = 16;
    /// The address of the program's site descriptors (its `ringtrace_sites` section).
    pub const SITES: usize = 17;
    /// Their length in bytes.
    pub const SITES_LEN: usize = 18;
}

/// Word indices in a ring's entry. "Address of" words point at one word of
/// the ring's state, which the recorder updates in place.
pub mod entry {
    /// The address of the next entry, 0 at the end.
    pub const NEXT: usize = 0;
    /// [`super::STATE_LIVE`] or [`super::STATE_EXITED`].
    pub const STATE: usize = 1;
    /// The thread id (a context track's: 2^30 and up).
    pub const TID: usize = 2;
    /// The address of the thread's name (UTF-8, not terminated).
    pub const NAME: usize = 3;
    /// The name's length in bytes.
    pub const NAME_LEN: usize = 4;
    /// The address of the ring's slots: `CAPACITY` records of three record words.
    pub const SLOTS: usize = 5;
    /// The ring's capacity in records, a power of two.
    pub const CAPACITY: usize = 6;
    /// The ring's flags as in its dump section (stop-when-full, key depth).
    pub const FLAGS: usize = 7;
    /// Address of: records ever written (`head`).
    pub const HEAD: usize = 8;
    /// Address of: spans dropped because the ring was full.
    pub const DROPPED: usize = 9;
    /// Address of: of the records written, argument and flags records.
    pub const AUX: usize = 10;
    /// Address of: the open-span stack's state, `pops << 8 | depth`.
    pub const OPEN_STATE: usize = 11;
    /// The address of the open-span stack's entries: {key, enter ticks} record-word pairs.
    pub const OPEN_ENTRIES: usize = 12;
    /// How many open spans the stack holds at most.
    pub const OPEN_CAPACITY: usize = 13;
    /// Address of: calls not recorded because they nested too deep.
    pub const TOO_DEEP: usize = 14;
    /// Address of: spans whose end never came (a `longjmp` past them).
    pub const ABANDONED: usize = 15;
    /// Address of: records a stream copied out of a stop-when-full ring (0 for other rings).
    pub const DRAINED: usize = 16;
}

/// An entry's state: its thread runs (its ring's writer may have been mid-record).
pub const STATE_LIVE: u64 = 1;
/// An entry's state: its thread has exited (its ring is whole).
pub const STATE_EXITED: u64 = 2;

/// The open-span state's depth bits (`pops << DEPTH_BITS | depth`).
pub const OPEN_DEPTH_BITS: u32 = 8;

/// The directory's fixed words, read from a snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Bytes in a word and a pointer.
    pub pointer_bytes: u64,
    /// Bytes in a record word.
    pub record_word_bytes: u64,
    /// Words in each entry.
    pub entry_words: u64,
}

/// Why a ring directory cannot be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectoryError {
    /// The bytes at the directory's address are not [`MAGIC`].
    BadMagic([u8; 8]),
    /// A directory word could not be read (outside the snapshot).
    Unreadable(&'static str),
    /// The layout version is not one this reader knows.
    Version(u64),
    /// A word holds a value the layout does not allow.
    BadField {
        /// Name of the word.
        field: &'static str,
        /// What it holds.
        found: u64,
    },
}

impl core::error::Error for DirectoryError {}

impl fmt::Display for DirectoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirectoryError::BadMagic(found) => {
                write!(f, "the ring directory's magic is {found:02x?}, expected {MAGIC:02x?} (\"RTRINGS\\x01\")")
            }
            DirectoryError::Unreadable(what) => write!(f, "the ring directory's {what} is not in the snapshot"),
            DirectoryError::Version(v) => write!(
                f,
                "ring directory layout {v}, this rtconv reads layout {VERSION}; use the rtconv of the recorder's release"
            ),
            DirectoryError::BadField { field, found } => {
                write!(f, "the ring directory's {field} is {found}, not a valid value")
            }
        }
    }
}

/// Checks a directory's magic and fixed words: its version, its word and
/// record sizes, its entry size. `words` reads word `i` after the magic.
pub fn header(magic: [u8; 8], mut words: impl FnMut(usize) -> Option<u64>) -> Result<Header, DirectoryError> {
    if magic != MAGIC {
        return Err(DirectoryError::BadMagic(magic));
    }
    let mut word = |i, what| words(i).ok_or(DirectoryError::Unreadable(what));
    let version = word(dir::VERSION, "version")?;
    if version != VERSION {
        return Err(DirectoryError::Version(version));
    }
    let pointer_bytes = word(dir::POINTER_BYTES, "pointer size")?;
    let record_word_bytes = word(dir::RECORD_WORD_BYTES, "record word size")?;
    let entry_words = word(dir::ENTRY_WORDS, "entry size")?;
    if !matches!(pointer_bytes, 4 | 8) {
        return Err(DirectoryError::BadField { field: "pointer size", found: pointer_bytes });
    }
    if !matches!(record_word_bytes, 4 | 8) || record_word_bytes > pointer_bytes {
        return Err(DirectoryError::BadField { field: "record word size", found: record_word_bytes });
    }
    if !(ENTRY_WORDS as u64..=256).contains(&entry_words) {
        return Err(DirectoryError::BadField { field: "entry size", found: entry_words });
    }
    Ok(Header { pointer_bytes, record_word_bytes, entry_words })
}

/// The first record a reader keeps of a ring with `capacity` slots, `head`
/// records written and `drained` copied out by a stream. A stop-when-full
/// ring's writer rewrites only slots of drained records, so its records from
/// `drained` on are whole. An overwriting ring keeps its last `capacity`
/// when the writer cannot have been running (`writer_may_run` false: the
/// thread had exited), else all but the two oldest, which a record being
/// written (a span with an argument is two) may have half rewritten.
pub const fn kept_from(head: u64, capacity: u64, drained: u64, stop_when_full: bool, writer_may_run: bool) -> u64 {
    let oldest = head.saturating_sub(capacity);
    if stop_when_full {
        // A drained count past `head` is not the recorder's: keep nothing rather than read past it.
        let drained = if drained < head { drained } else { head };
        return if drained > oldest { drained } else { oldest };
    }
    if writer_may_run { head.saturating_sub(capacity.saturating_sub(2)) } else { oldest }
}
