//! Small ELF core files built by hand: a process image holding a ring
//! directory laid out as the recorder lays it out (FORMAT.md, "The ring
//! directory"), for the hostile-core shapes and the core fuzzer's seeds.
//! Real cores (gcore, the kernel) are made by the tests that need them; these
//! are for the shapes no real program leaves.

use ringtrace_format::Record;
use ringtrace_format::directory::{DIR_WORDS, ENTRY_WORDS, MAGIC, STATE_LIVE, dir, entry};

/// Where the image's one segment starts.
pub const BASE: u64 = 0x7000_0000;

/// A ring to lay out: thread id, name, capacity, records written (the last
/// `capacity` of them are in the slots, record `n` in slot `n % capacity`).
pub struct RingSpec<'a> {
    pub tid: u64,
    pub name: &'a str,
    pub capacity: u64,
    pub records: &'a [Record],
    /// Open spans (key, enter), outermost first.
    pub open: &'a [(u64, u64)],
}

/// A process image: the directory at [`BASE`], then each ring's entry,
/// counters, open spans, name and slots. `entries[i]` and `slots[i]` are the
/// byte offsets of ring `i`'s entry and slots, for shapes that bend them.
pub struct Image {
    pub bytes: Vec<u8>,
    pub entries: Vec<usize>,
    pub slots: Vec<usize>,
}

impl Image {
    /// Lays out `rings` (the counter a 1 GHz ns counter, one anchor 1 s after another).
    pub fn new(rings: &[RingSpec<'_>]) -> Image {
        let mut b = vec![0u8; 8 + DIR_WORDS * 8];
        b[..8].copy_from_slice(&MAGIC);
        let mut image = Image { bytes: b, entries: Vec::new(), slots: Vec::new() };
        let words: [(usize, u64); 14] = [
            (dir::VERSION, 1),
            (dir::POINTER_BYTES, 8),
            (dir::RECORD_WORD_BYTES, 8),
            (dir::ENTRY_WORDS, ENTRY_WORDS as u64),
            (dir::COUNTER, 3),
            (dir::COUNTER_BITS, 64),
            (dir::NOMINAL_HZ, 1_000_000_000),
            (dir::RATE_SOURCE, 4),
            (dir::START_SET, 1),
            (dir::START_TICKS, 1_000),
            (dir::START_MONO_NS, 1_000),
            (dir::LATEST_SEQ, 2),
            (dir::LATEST_TICKS, 1_000_001_000),
            (dir::LATEST_MONO_NS, 1_000_001_000),
        ];
        for (i, v) in words {
            image.set_dir(i, v);
        }
        let mut previous: Option<usize> = None;
        for r in rings {
            let at = image.push(&[0; ENTRY_WORDS * 8]);
            image.entries.push(at);
            let counters = image.push(&[0; 8 * 8]);
            let open = image.push(&vec![0; 64 * 16]);
            let name = image.push(r.name.as_bytes());
            image.align();
            let slots = image.push(&vec![0; r.capacity as usize * 24]);
            image.slots.push(slots);
            let written = r.records.len() as u64;
            for (n, rec) in r.records.iter().enumerate().skip(r.records.len().saturating_sub(r.capacity as usize)) {
                let s = slots + (n % r.capacity as usize) * 24;
                image.put(s, rec.key);
                image.put(s + 8, rec.enter);
                image.put(s + 16, rec.exit);
            }
            for (i, &(key, enter)) in r.open.iter().enumerate() {
                image.put(open + 16 * i, key);
                image.put(open + 16 * i + 8, enter);
            }
            image.put(counters, written); // head
            image.put(counters + 32, r.open.len() as u64); // open state: no pops, depth
            let address = |offset: usize| BASE + offset as u64;
            let e: [(usize, u64); 16] = [
                (entry::STATE, STATE_LIVE),
                (entry::TID, r.tid),
                (entry::NAME, address(name)),
                (entry::NAME_LEN, r.name.len() as u64),
                (entry::SLOTS, address(slots)),
                (entry::CAPACITY, r.capacity),
                (entry::FLAGS, 0),
                (entry::HEAD, address(counters)),
                (entry::DROPPED, address(counters + 8)),
                (entry::AUX, address(counters + 16)),
                (entry::DRAINED, address(counters + 24)),
                (entry::OPEN_STATE, address(counters + 32)),
                (entry::OPEN_ENTRIES, address(open)),
                (entry::OPEN_CAPACITY, 64),
                (entry::TOO_DEEP, address(counters + 40)),
                (entry::ABANDONED, address(counters + 48)),
            ];
            for (i, v) in e {
                image.put(at + 8 * i, v);
            }
            // Linked first, as the recorder links each new ring: the list is newest first.
            if let Some(p) = previous {
                image.put(at + 8 * entry::NEXT, image.address(p));
            }
            image.set_dir(dir::FIRST, address(at));
            previous = Some(at);
        }
        image
    }

    fn push(&mut self, bytes: &[u8]) -> usize {
        self.align();
        let at = self.bytes.len();
        self.bytes.extend_from_slice(bytes);
        at
    }

    fn align(&mut self) {
        while !self.bytes.len().is_multiple_of(8) {
            self.bytes.push(0);
        }
    }

    /// Sets the word at byte offset `at`.
    pub fn put(&mut self, at: usize, value: u64) {
        self.bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }

    /// Sets directory word `i`.
    pub fn set_dir(&mut self, i: usize, value: u64) {
        self.put(8 + 8 * i, value);
    }

    /// Sets word `i` of ring `ring`'s entry.
    pub fn set_entry(&mut self, ring: usize, i: usize, value: u64) {
        self.put(self.entries[ring] + 8 * i, value);
    }

    /// The address of byte offset `at`.
    pub fn address(&self, at: usize) -> u64 {
        BASE + at as u64
    }

    /// An x86_64 ELF core of this image: one `PT_LOAD` segment at [`BASE`],
    /// and notes naming thread `tid` stopped by `signal` and the process `name`.
    pub fn core(&self, tid: u32, signal: u16, name: &str) -> Vec<u8> {
        core_file(&[(BASE, &self.bytes)], tid, signal, name)
    }
}

/// An x86_64 ELF core of `segments` (address, bytes), with an `NT_PRSTATUS`
/// for thread `tid` stopped by `signal` and an `NT_PRPSINFO` for `name`.
pub fn core_file(segments: &[(u64, &[u8])], tid: u32, signal: u16, name: &str) -> Vec<u8> {
    fn note(out: &mut Vec<u8>, kind: u32, desc: &[u8]) {
        out.extend_from_slice(&5u32.to_le_bytes());
        out.extend_from_slice(&(desc.len() as u32).to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(b"CORE\0\0\0\0");
        out.extend_from_slice(desc);
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
    let mut notes = Vec::new();
    let mut prstatus = vec![0u8; 336];
    prstatus[12..14].copy_from_slice(&signal.to_le_bytes());
    prstatus[32..36].copy_from_slice(&tid.to_le_bytes());
    note(&mut notes, 1, &prstatus);
    let mut prpsinfo = vec![0u8; 136];
    prpsinfo[24..28].copy_from_slice(&tid.to_le_bytes());
    let n = name.len().min(15);
    prpsinfo[40..40 + n].copy_from_slice(&name.as_bytes()[..n]);
    note(&mut notes, 3, &prpsinfo);

    let phnum = 1 + segments.len();
    let mut offset = 64 + 56 * phnum as u64;
    let mut out = Vec::new();
    let mut ident = [0u8; 16];
    ident[..4].copy_from_slice(b"\x7fELF");
    (ident[4], ident[5], ident[6]) = (2, 1, 1);
    out.extend_from_slice(&ident);
    out.extend_from_slice(&4u16.to_le_bytes()); // ET_CORE
    out.extend_from_slice(&62u16.to_le_bytes()); // x86_64
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&0u64.to_le_bytes()); // entry
    out.extend_from_slice(&64u64.to_le_bytes()); // phoff
    out.extend_from_slice(&0u64.to_le_bytes()); // shoff
    out.extend_from_slice(&0u32.to_le_bytes()); // flags
    for v in [64u16, 56, phnum as u16, 64, 0, 0] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut phdr = |kind: u32, flags: u32, off: u64, vaddr: u64, size: u64, align: u64| {
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        for v in [off, vaddr, 0, size, size, align] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    };
    phdr(4, 0, offset, 0, notes.len() as u64, 4);
    offset += notes.len() as u64;
    let mut placed = Vec::new();
    for &(vaddr, bytes) in segments {
        offset = offset.next_multiple_of(4096);
        phdr(1, 6, offset, vaddr, bytes.len() as u64, 4096);
        placed.push(offset);
        offset += bytes.len() as u64;
    }
    out.extend_from_slice(&notes);
    for (&(_, bytes), &at) in segments.iter().zip(&placed) {
        out.resize(at as usize, 0);
        out.extend_from_slice(bytes);
    }
    out
}
