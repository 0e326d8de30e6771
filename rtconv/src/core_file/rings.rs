//! The ring directory in a snapshot (a core, RAM images), and the rings it lists.

use std::collections::{BTreeMap, HashSet};

use object::{Endianness, Object, ObjectSection, ObjectSymbol};
use ringtrace_format::directory::{
    self, DirectoryError, ENTRY_WORDS, MAGIC, MAX_ENTRIES, OPEN_DEPTH_BITS, STATE_EXITED, dir, entry,
};
use ringtrace_format::layout::{RING_FLAG_STOP_WHEN_FULL, RING_FLAG_THREAD_EXITED};
use ringtrace_format::{Anchor, ClockInfo, Record, RingInfo};

use super::memory::{Memory, word_in};
use super::modules::{CoreModule, Files};

/// The memory a ring directory is read from, and what to call it in messages.
#[derive(Clone, Copy)]
pub(crate) struct Snapshot<'m, 'a> {
    pub memory: &'m Memory<'a>,
    pub endian: Endianness,
    /// "the core", "the memory images".
    pub called: &'static str,
}

impl<'a> Snapshot<'_, 'a> {
    fn read(&self, address: u64, len: u64) -> Option<&'a [u8]> {
        self.memory.read(address, len)
    }

    fn word(&self, address: u64, width: u64) -> Option<u64> {
        self.memory.word(address, width, self.endian)
    }
}

/// The largest ring a recorder makes (2^28 records), and a thread name's longest.
const MAX_CAPACITY: u64 = 1 << 28;
const MAX_NAME: u64 = 4096;
const MAX_OPEN: u64 = 4096;
const MAX_SITES: u64 = 64 << 20;

/// How the directory was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Through the `ringtrace_directory` symbol of a mapped file with the core's build-id.
    Symbol,
    /// By its magic, scanning the core's memory.
    Scan,
}

/// The directory's address: by symbol, else by scanning.
pub(crate) fn find_directory(snap: Snapshot<'_, '_>, modules: &[CoreModule], files: Files) -> Option<(u64, Found)> {
    let mut ordered: Vec<&CoreModule> = modules.iter().collect();
    ordered.sort_by_key(|m| !m.is_main);
    for m in ordered {
        let Some(bytes) = files.map(&m.path) else { continue };
        let Ok(file) = object::File::parse(&*bytes) else { continue };
        if file.build_id().ok().flatten().unwrap_or_default() != m.build_id.as_slice() {
            continue; // another build than the one that ran
        }
        if let Some(address) = symbol(&file).map(|a| a.wrapping_add(m.bias))
            && snap.read(address, 8) == Some(&MAGIC[..])
        {
            return Some((address, Found::Symbol));
        }
    }
    scan(snap).map(|a| (a, Found::Scan))
}

/// The address of `ringtrace_directory` in `file`'s symbol tables.
pub(crate) fn symbol(file: &object::File<'_>) -> Option<u64> {
    let mut all = file.symbols().chain(file.dynamic_symbols());
    all.find(|s| s.name() == Ok(directory::SYMBOL)).map(|s| s.address())
}

/// The 4-aligned place holding the magic and layout version 1 (in a 4- or 8-byte word) whose
/// recording had begun (its start anchor set), else the first such place: a firmware's flash
/// holds the directory's initial image too (the `.data` values copied to RAM at reset).
pub(crate) fn scan(snap: Snapshot<'_, '_>) -> Option<u64> {
    let mut first = None;
    for (base, bytes) in snap.memory.regions() {
        let mut at = 0;
        while let Some(i) = memchr::memmem::find(&bytes[at..], &MAGIC) {
            let offset = at + i;
            let address = base.wrapping_add(offset as u64);
            if address.is_multiple_of(4)
                && let Some(w) = word_bytes(snap, address)
            {
                let start_set = address.checked_add(8 + w * dir::START_SET as u64).and_then(|a| snap.word(a, w));
                if start_set == Some(1) {
                    return Some(address);
                }
                first = first.or(Some(address));
            }
            at = offset + 1;
        }
    }
    first
}

/// The directory's word size, from its version and word-size words: 4 or 8; `None` if
/// neither reads as layout version 1.
fn word_bytes(snap: Snapshot<'_, '_>, address: u64) -> Option<u64> {
    let at = |offset: u64, width| address.checked_add(offset).and_then(|a| snap.word(a, width));
    if at(8, 4) == Some(directory::VERSION) && at(12, 4) == Some(4) {
        Some(4)
    } else if at(8, 8) == Some(directory::VERSION) {
        Some(8)
    } else {
        None
    }
}

/// One ring read out of a snapshot; its records stay in the snapshot's bytes.
pub(crate) struct CoreRing<'a> {
    pub tid: u64,
    name: Vec<u8>,
    capacity: u64,
    written: u64,
    dropped: u64,
    aux: u64,
    flags: u32,
    /// The ring's slots, as the snapshot holds them.
    slots: &'a [u8],
    endian: Endianness,
    /// Bytes in a record word: 8 (24-byte records) or 4 (12-byte compact records).
    pub word_bytes: u64,
    /// The first record kept.
    first: u64,
    pub open: Vec<(u64, u64)>,
    pub too_deep: u64,
    pub abandoned: u64,
}

impl CoreRing<'_> {
    pub(crate) fn info(&self) -> RingInfo<'_> {
        RingInfo {
            tid: self.tid,
            capacity: self.capacity,
            written: self.written,
            dropped: self.dropped,
            aux: self.aux,
            flags: self.flags,
            name: &self.name,
        }
    }

    /// Record `n` of the ring (`first <= n < written`).
    fn record(&self, n: u64) -> Record {
        let w = self.word_bytes as usize;
        let at = (n & (self.capacity - 1)) as usize * 3 * w;
        let word = |i: usize| word_in(self.endian, &self.slots[at + w * i..at + w * (i + 1)]);
        Record { key: word(0), enter: word(1), exit: word(2) }
    }

    /// How many records are kept.
    pub(crate) fn kept(&self) -> u64 {
        self.written - self.first
    }

    /// The records kept, oldest first.
    pub(crate) fn records(&self) -> impl Iterator<Item = Record> + '_ {
        (self.first..self.written).map(|n| self.record(n))
    }

    /// The latest counter reading in the ring: its last exits or its innermost open span's entry.
    pub(crate) fn last_ticks(&self) -> Option<u64> {
        let last = self.written.saturating_sub(4).max(self.first)..self.written;
        last.map(|n| self.record(n).exit).chain(self.open.last().map(|o| o.1)).max()
    }
}

/// What the directory holds.
pub(crate) struct Rings<'a> {
    pub clock: ClockInfo,
    pub start: Option<Anchor>,
    pub latest: Option<Anchor>,
    /// The site section's (address, length).
    pub sites: (u64, u64),
    /// Bytes in a record word: 8, or 4 (a 32-bit target's rings).
    pub record_word_bytes: u64,
    /// Bytes in the target's pointers: 8 or 4.
    pub pointer_bytes: u64,
    pub rings: Vec<CoreRing<'a>>,
    /// What could not be read, one line each.
    pub losses: Vec<String>,
}

/// Reads the directory at `address` and every ring it lists.
pub(crate) fn read<'a>(snap: Snapshot<'_, 'a>, address: u64) -> Result<Rings<'a>, DirectoryError> {
    let pw = word_bytes(snap, address).unwrap_or(8);
    let word = |i: usize| address.checked_add(8 + pw * i as u64).and_then(|a| snap.word(a, pw));
    let magic: [u8; 8] = snap.read(address, 8).and_then(|b| b.try_into().ok()).unwrap_or_default();
    let header = directory::header(magic, word)?;
    if header.pointer_bytes != pw {
        return Err(DirectoryError::BadField { field: "pointer size", found: header.pointer_bytes });
    }
    let w = |i: usize| word(i).unwrap_or(0);
    let clock = super::clock_info(w(dir::COUNTER), w(dir::COUNTER_BITS), w(dir::NOMINAL_HZ), w(dir::RATE_SOURCE));
    let start = (w(dir::START_SET) == 1).then(|| Anchor {
        ticks: w(dir::START_TICKS),
        mono_ns: w(dir::START_MONO_NS),
        real_ns: w(dir::START_REAL_NS),
    });
    let seq = w(dir::LATEST_SEQ);
    let latest = (seq != 0 && seq.is_multiple_of(2)).then(|| Anchor {
        ticks: w(dir::LATEST_TICKS),
        mono_ns: w(dir::LATEST_MONO_NS),
        real_ns: w(dir::LATEST_REAL_NS),
    });
    let mut out = Rings {
        clock,
        start,
        latest,
        sites: (w(dir::SITES), w(dir::SITES_LEN)),
        record_word_bytes: header.record_word_bytes,
        pointer_bytes: pw,
        rings: Vec::new(),
        losses: Vec::new(),
    };
    let mut seen = HashSet::new();
    let mut taken = Taken::new();
    let mut next = w(dir::FIRST);
    while next != 0 {
        if seen.len() >= MAX_ENTRIES || !seen.insert(next) {
            out.losses.push(format!("the ring directory's list loops back to the entry at {next:#x}: stopped there"));
            break;
        }
        let e: Vec<Option<u64>> =
            (0..ENTRY_WORDS).map(|i| next.checked_add(pw * i as u64).and_then(|a| snap.word(a, pw))).collect();
        let Some(e) = e.into_iter().collect::<Option<Vec<u64>>>() else {
            out.losses.push(format!(
                "the ring directory's entry at {next:#x} is not in {}: the rings after it are lost",
                snap.called
            ));
            break;
        };
        match ring(snap, &e, header.record_word_bytes).and_then(|r| apart(r, &mut taken)) {
            Ok(r) => out.rings.push(r),
            Err(why) => {
                out.losses.push(format!("thread {}'s ring (entry at {next:#x}): {why}; left out", e[entry::TID]))
            }
        }
        next = e[entry::NEXT];
    }
    // The recorder links each ring first: the list is newest first; a dump lists rings oldest first.
    out.rings.reverse();
    Ok(out)
}

/// The slot ranges of the rings accepted so far: start → (end, thread id). Disjoint, so the one
/// with the greatest start below a new range's end is the only one that can overlap it.
type Taken = BTreeMap<usize, (usize, u64)>;

/// `r`, if its slots share no byte with those of the rings read before it (noted in `taken`).
fn apart<'a>(r: CoreRing<'a>, taken: &mut Taken) -> Result<CoreRing<'a>, String> {
    let start = r.slots.as_ptr() as usize;
    let end = start + r.slots.len();
    if let Some((_, &(before_end, tid))) = taken.range(..end).next_back()
        && before_end > start
    {
        return Err(format!("its slots overlap those of thread {tid}'s ring"));
    }
    taken.insert(start, (end, r.tid));
    Ok(r)
}

/// One entry's ring (of `rw`-byte record words), or why it cannot be read.
fn ring<'a>(snap: Snapshot<'_, 'a>, e: &[u64], rw: u64) -> Result<CoreRing<'a>, String> {
    let at = |i: usize, what: &str| {
        snap.word(e[i], rw).ok_or_else(|| format!("its {what} at {:#x} is not in {}", e[i], snap.called))
    };
    let capacity = e[entry::CAPACITY];
    if !capacity.is_power_of_two() || capacity > MAX_CAPACITY {
        return Err(format!("its capacity {capacity} is not a power of two up to 2^28"));
    }
    let name_len = e[entry::NAME_LEN].min(MAX_NAME);
    let name = snap.read(e[entry::NAME], name_len).map(<[u8]>::to_vec).unwrap_or_default();
    let head = at(entry::HEAD, "record count")?;
    let aux = at(entry::AUX, "argument count")?;
    if aux > head {
        return Err(format!("it counts {aux} argument records of {head} written"));
    }
    let drained = at(entry::DRAINED, "drained count")?;
    let flags = e[entry::FLAGS] as u32;
    let exited = e[entry::STATE] == STATE_EXITED;
    let stop = flags & RING_FLAG_STOP_WHEN_FULL != 0;
    let first = directory::kept_from(head, capacity, drained, stop, !exited);
    let slots = snap
        .read(e[entry::SLOTS], capacity * 3 * rw)
        .ok_or_else(|| format!("its {capacity} slots at {:#x} are not (all) in {}", e[entry::SLOTS], snap.called))?;
    let open_state = at(entry::OPEN_STATE, "open-span state")?;
    let depth = (open_state & ((1 << OPEN_DEPTH_BITS) - 1)).min(e[entry::OPEN_CAPACITY]).min(MAX_OPEN);
    let pair = 2 * rw as usize;
    let open = match snap.read(e[entry::OPEN_ENTRIES], depth * 2 * rw) {
        Some(b) => b
            .chunks_exact(pair)
            .map(|p| (word_in(snap.endian, &p[..pair / 2]), word_in(snap.endian, &p[pair / 2..])))
            .collect(),
        None => Vec::new(),
    };
    Ok(CoreRing {
        tid: e[entry::TID],
        name,
        capacity,
        written: head,
        dropped: at(entry::DROPPED, "dropped count")?,
        aux,
        flags: flags | if exited { RING_FLAG_THREAD_EXITED } else { 0 },
        slots,
        endian: snap.endian,
        word_bytes: rw,
        first,
        open,
        too_deep: at(entry::TOO_DEEP, "too-deep count").unwrap_or(0),
        abandoned: at(entry::ABANDONED, "abandoned count").unwrap_or(0),
    })
}

/// The site descriptors: from the snapshot, else from the file that maps them (their `ringtrace_sites` section).
pub(crate) fn sites(
    snap: Snapshot<'_, '_>,
    modules: &[CoreModule],
    (base, len): (u64, u64),
    files: Files,
) -> Option<(u64, Vec<u8>)> {
    if base == 0 || len == 0 || len > MAX_SITES {
        return None;
    }
    if let Some(b) = snap.read(base, len) {
        return Some((base, b.to_vec()));
    }
    let m = modules.iter().find(|m| (m.start..m.end).contains(&base))?;
    let bytes = files.map(&m.path)?;
    let file = object::File::parse(&*bytes).ok()?;
    let section = file.section_by_name("ringtrace_sites")?;
    let data = section.data().ok()?;
    let skip = usize::try_from(base.wrapping_sub(m.bias).checked_sub(section.address())?).ok()?;
    Some((base, data.get(skip..skip.checked_add(usize::try_from(len).ok()?)?)?.to_vec()))
}
