//! A validating, zero-copy dump reader that never panics.
//!
//! [`Dump::parse`] checks the file header; [`Dump::sections`] walks the
//! sections, checking each one's bounds and CRC before handing out its
//! payload; [`Section::decode`] checks every length inside a payload against
//! the bytes that are really there. Nothing is allocated, so no length read
//! from the file can make the reader allocate.

use crate::error::ReadError;
use crate::layout::*;
use crate::model::{
    Anchor, Calibration, ClockInfo, DladdrEntry, MetaInfo, Module, NameFrame, Record, RingInfo, Unbalanced,
};

/// The byte order of a dump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first.
    Little,
    /// Most significant byte first.
    Big,
}

impl Endian {
    /// Reads a `u16` from exactly two bytes.
    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }
    /// Reads a `u32` from exactly four bytes.
    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
    /// Reads a `u64` from exactly eight bytes.
    #[inline]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
    /// The `u32` at byte `at` of `b` (0 if `b` ends before it: callers pass fixed-size entries).
    #[inline(always)]
    pub fn u32_at(self, b: &[u8], at: usize) -> u32 {
        self.u32(b.get(at..).and_then(|b| b.first_chunk()).copied().unwrap_or_default())
    }
    /// The `u64` at byte `at` of `b` (0 if `b` ends before it: callers pass fixed-size entries).
    #[inline(always)]
    pub fn u64_at(self, b: &[u8], at: usize) -> u64 {
        self.u64(b.get(at..).and_then(|b| b.first_chunk()).copied().unwrap_or_default())
    }
}

/// A validated file header over the dump's bytes.
#[derive(Clone, Copy, Debug)]
pub struct Dump<'a> {
    bytes: &'a [u8],
    /// Byte order of every integer in the file.
    pub endian: Endian,
    /// Major format version.
    pub major: u16,
    /// Minor format version.
    pub minor: u16,
    /// Target pointer width in bytes.
    pub pointer_width: u8,
    /// Where the first section starts.
    pub header_size: usize,
}

fn array<const N: usize>(bytes: &[u8], at: usize) -> Option<[u8; N]> {
    bytes.get(at..at.checked_add(N)?)?.try_into().ok()
}

impl<'a> Dump<'a> {
    /// Checks the file header.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, ReadError> {
        let head = &bytes[..bytes.len().min(8)];
        if head != &MAGIC[..head.len()] || bytes.is_empty() {
            let mut found = [0u8; 8];
            found[..head.len()].copy_from_slice(head);
            return Err(ReadError::NotADump { found, len: head.len() });
        }
        let truncated = |needed: usize| ReadError::Truncated {
            offset: 0,
            what: "file header",
            needed: needed as u64,
            available: bytes.len() as u64,
        };
        let probe = array::<4>(bytes, 8).ok_or(truncated(FILE_HEADER_SIZE))?;
        let endian = match (u32::from_le_bytes(probe), u32::from_be_bytes(probe)) {
            (ENDIAN_PROBE, _) => Endian::Little,
            (_, ENDIAN_PROBE) => Endian::Big,
            (found, _) => return Err(ReadError::BadEndianProbe { found }),
        };
        let header = array::<FILE_HEADER_SIZE>(bytes, 0).ok_or(truncated(FILE_HEADER_SIZE))?;
        let major = endian.u16([header[12], header[13]]);
        let minor = endian.u16([header[14], header[15]]);
        // Version first: a newer major may have changed everything after it.
        if major > SUPPORTED_MAJORS.1 || major < SUPPORTED_MAJORS.0 {
            return Err(ReadError::UnsupportedVersion { major, minor });
        }
        let stored = endian.u32([header[28], header[29], header[30], header[31]]);
        let computed = crate::crc::hash(&header[..28]);
        if stored != computed {
            return Err(ReadError::Checksum { offset: 0, section: None, stored, computed });
        }
        let pointer_width = header[16];
        if pointer_width != 4 && pointer_width != 8 {
            return Err(ReadError::BadField {
                offset: 16,
                field: "pointer_width",
                expected: "4 or 8",
                found: pointer_width.into(),
            });
        }
        let header_size = endian.u16([header[18], header[19]]) as usize;
        if header_size < FILE_HEADER_SIZE || !header_size.is_multiple_of(SECTION_ALIGN) {
            return Err(ReadError::BadField {
                offset: 18,
                field: "header_size",
                expected: "a multiple of 8, at least 32",
                found: header_size as u64,
            });
        }
        if bytes.len() < header_size {
            return Err(truncated(header_size));
        }
        Ok(Dump { bytes, endian, major, minor, pointer_width, header_size })
    }

    /// The sections in file order. The iterator ends after the end marker;
    /// it yields one error and then ends if the file is cut short or damaged.
    pub fn sections(&self) -> Sections<'a> {
        Sections { bytes: self.bytes, endian: self.endian, pos: self.header_size, done: false }
    }

    /// The whole file.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }
}

/// Iterator over a dump's sections. See [`Dump::sections`].
#[derive(Clone, Debug)]
pub struct Sections<'a> {
    bytes: &'a [u8],
    endian: Endian,
    pos: usize,
    done: bool,
}

/// One section whose bounds and CRC have been checked.
#[derive(Clone, Copy, Debug)]
pub struct Section<'a> {
    /// What it holds.
    pub kind: SectionKind,
    /// Offset of its header in the file.
    pub offset: u64,
    /// Its payload.
    pub payload: &'a [u8],
    endian: Endian,
}

impl<'a> Iterator for Sections<'a> {
    type Item = Result<Section<'a>, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let result = self.read_one();
        match &result {
            Ok(s) if s.kind == SectionKind::End => self.done = true,
            Ok(_) => {}
            Err(_) => self.done = true,
        }
        Some(result)
    }
}

impl<'a> Sections<'a> {
    fn read_one(&mut self) -> Result<Section<'a>, ReadError> {
        let start = self.pos;
        let available = self.bytes.len().saturating_sub(start) as u64;
        if available == 0 {
            return Err(ReadError::Truncated {
                offset: start.min(self.bytes.len()) as u64,
                what: "dump (no end marker)",
                needed: (SECTION_HEADER_SIZE + SECTION_CRC_SIZE) as u64,
                available: 0,
            });
        }
        let header = array::<SECTION_HEADER_SIZE>(self.bytes, start).ok_or(ReadError::Truncated {
            offset: start as u64,
            what: "section header",
            needed: SECTION_HEADER_SIZE as u64,
            available,
        })?;
        let e = self.endian;
        let kind = SectionKind::from_code(e.u32([header[0], header[1], header[2], header[3]]));
        let len = e.u64_at(&header, 8);
        let needed = (SECTION_HEADER_SIZE + SECTION_CRC_SIZE) as u64;
        let total = len.checked_add(needed).filter(|&t| t <= available).ok_or(ReadError::Truncated {
            offset: start as u64,
            what: section_what(kind),
            needed: len.saturating_add(needed),
            available,
        })?;
        // `total <= available <= usize::MAX`, so these casts are exact.
        let payload_start = start + SECTION_HEADER_SIZE;
        let crc_at = start + total as usize - SECTION_CRC_SIZE;
        let payload = &self.bytes[payload_start..crc_at];
        let stored = e.u32(array::<4>(self.bytes, crc_at).unwrap_or_default());
        let mut hasher = crate::crc::Hasher::new();
        hasher.update(&header);
        hasher.update(payload);
        let computed = hasher.finalize();
        if stored != computed {
            return Err(ReadError::Checksum { offset: start as u64, section: Some(kind), stored, computed });
        }
        let end = start + total as usize;
        // Skip the padding; a cut inside it is reported at the end of the file.
        self.pos = end.next_multiple_of(SECTION_ALIGN);
        Ok(Section { kind, offset: start as u64, payload, endian: e })
    }
}

fn section_what(kind: SectionKind) -> &'static str {
    match kind {
        SectionKind::Meta => "meta section",
        SectionKind::Clock => "clock section",
        SectionKind::Modules => "modules section",
        SectionKind::Ring => "ring section",
        SectionKind::Sites => "sites section",
        SectionKind::Calibration => "calibration section",
        SectionKind::Unbalanced => "unbalanced section",
        SectionKind::Dladdr => "dladdr section",
        SectionKind::Names => "names section",
        SectionKind::Anchor => "anchor section",
        SectionKind::Crash => "crash section",
        SectionKind::End => "end marker",
        SectionKind::Unknown(_) => "section of unknown kind",
    }
}

/// A decoded section.
#[derive(Clone, Debug)]
pub enum SectionData<'a> {
    /// See [`MetaInfo`].
    Meta(MetaInfo<'a>),
    /// See [`ClockInfo`]; anchors oldest first.
    Clock(ClockInfo, Anchors<'a>),
    /// The module table.
    Modules(Modules<'a>),
    /// One ring: its finished spans and the spans open at dump time.
    Ring(RingInfo<'a>, Records<'a>, OpenSpans<'a>),
    /// One chunk of a streamed ring (since 1.3): a ring section with
    /// [`RING_FLAG_STREAM_CHUNK`], whose records continue the earlier chunks
    /// of the same stream id; its counts are as of the chunk's end.
    RingChunk(RingInfo<'a>, StreamChunk, Records<'a>, OpenSpans<'a>),
    /// One more time anchor, taken while a stream ran (since 1.3).
    Anchor(Anchor),
    /// The site section: the address of its first byte in the target, and its bytes.
    Sites {
        /// Runtime address of `bytes[0]`.
        base: u64,
        /// The raw linker section.
        bytes: &'a [u8],
    },
    /// The recorder's measured costs.
    Calibration(Calibrations<'a>),
    /// See [`Unbalanced`] (since 1.1).
    Unbalanced(UnbalancedEntries<'a>),
    /// `dladdr` results for code-address keys.
    Dladdr(DladdrTable<'a>),
    /// Names of keys, packed by `rtconv pack` (since 1.2).
    Names(NamesTable<'a>),
    /// How the process ended (since 1.5): the thread that took the fatal
    /// signal, the signal (0: none, as for a core `gcore` took), what
    /// reading the core had to estimate, and what it could not read.
    Crash {
        /// The thread that took the signal (0 if none did).
        tid: u64,
        /// The signal's number, 0 if none.
        signal: u32,
        /// What was estimated or assumed, UTF-8 lines.
        notes: &'a [u8],
        /// What the core lacks or could not be read (lost rings, a cut), UTF-8 lines.
        losses: &'a [u8],
    },
    /// The end marker.
    End,
    /// A section kind this reader does not know; skip it.
    Unknown(u32),
}

/// Where a stream chunk's records belong (see [`SectionData::RingChunk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamChunk {
    /// The streamed ring it belongs to (unique in the file; a thread id may be reused).
    pub stream: u64,
    /// The ring's ordinal of the chunk's first record: the records of one
    /// stream, chunk after chunk, are consecutive.
    pub first: u64,
}

/// A bounds-checked cursor over one section payload.
struct Cur<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// Where the field read last (or being read) starts: errors name it.
    field_start: usize,
    offset: u64,
    endian: Endian,
    kind: SectionKind,
}

impl<'a> Cur<'a> {
    fn malformed(&self, field: &'static str, reason: &'static str) -> ReadError {
        ReadError::Malformed {
            offset: self.offset + SECTION_HEADER_SIZE as u64 + self.field_start as u64,
            section: self.kind,
            field,
            reason,
        }
    }

    fn take(&mut self, n: usize, field: &'static str) -> Result<&'a [u8], ReadError> {
        self.field_start = self.pos;
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let end = end.ok_or_else(|| self.malformed(field, "runs past the end of the section"))?;
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, ReadError> {
        let b = self.take(4, field)?;
        Ok(self.endian.u32(b.try_into().unwrap_or_default()))
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, ReadError> {
        let b = self.take(8, field)?;
        Ok(self.endian.u64(b.try_into().unwrap_or_default()))
    }

    fn str(&mut self, field: &'static str) -> Result<&'a [u8], ReadError> {
        let len = self.u32(field)? as usize;
        self.take(len, field)
    }

    /// A count of `size`-byte items that must fit in the rest of the payload.
    fn items(&mut self, count: u64, size: usize, field: &'static str) -> Result<&'a [u8], ReadError> {
        let n = count
            .checked_mul(size as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| self.malformed(field, "count overflows"))?;
        self.take(n, field)
    }
}

impl<'a> Section<'a> {
    fn cur(&self) -> Cur<'a> {
        Cur { bytes: self.payload, pos: 0, field_start: 0, offset: self.offset, endian: self.endian, kind: self.kind }
    }

    /// Decodes the payload, checking every length against the bytes present.
    /// Bytes after the known fields are ignored: later minor versions append there.
    pub fn decode(&self) -> Result<SectionData<'a>, ReadError> {
        let mut c = self.cur();
        Ok(match self.kind {
            SectionKind::Meta => SectionData::Meta(MetaInfo {
                pid: c.u32("pid")?,
                reason: DumpReason::from_code(c.u32("reason")?),
                producer: c.str("producer")?,
                producer_version: c.str("producer_version")?,
                process_name: c.str("process_name")?,
            }),
            SectionKind::Clock => {
                let info = ClockInfo {
                    counter: CounterKind::from_code(c.u32("counter_kind")?),
                    counter_bits: c.u32("counter_bits")?,
                    nominal_hz: c.u64("nominal_hz")?,
                    rate_source: RateSource::from_code(c.u32("rate_source")?),
                };
                if info.counter_bits == 0 || info.counter_bits > 64 {
                    return Err(c.malformed("counter_bits", "must be 1 to 64"));
                }
                let n = c.u32("anchor_count")?;
                let bytes = c.items(n.into(), ANCHOR_SIZE, "anchors")?;
                SectionData::Clock(info, Anchors { bytes, endian: self.endian })
            }
            SectionKind::Modules => {
                let count = c.u32("module_count")?;
                // Validate every entry now so iteration cannot fail later.
                let start = c.pos;
                for _ in 0..count {
                    c.take(28, "module")?;
                    c.str("build_id")?;
                    c.str("path")?;
                }
                SectionData::Modules(Modules { bytes: &self.payload[start..c.pos], count, endian: self.endian })
            }
            SectionKind::Ring => {
                let tid = c.u64("tid")?;
                let capacity = c.u64("capacity")?;
                let written = c.u64("written")?;
                let dropped = c.u64("dropped")?;
                let aux = c.u64("aux")?;
                if aux > written {
                    return Err(c.malformed("aux", "exceeds the count of records ever written"));
                }
                let flags = c.u32("flags")?;
                let record_size = c.u32("record_size")? as usize;
                if record_size != RECORD_SIZE && record_size != COMPACT_RECORD_SIZE {
                    return Err(c.malformed("record_size", "must be 24, or 12 for compact records (format 1.1)"));
                }
                let name = c.str("thread_name")?;
                let count = c.u64("record_count")?;
                if count > written {
                    return Err(c.malformed("record_count", "exceeds the count of records ever written"));
                }
                let open_count = c.u64("open_count")?;
                let bytes = c.items(count, record_size, "records")?;
                let open = c.items(open_count, OPEN_SPAN_SIZE, "open spans")?;
                let info = RingInfo { tid, capacity, written, dropped, aux, flags, name };
                let (records, open) = (
                    Records { bytes, endian: self.endian, size: record_size },
                    OpenSpans { bytes: open, endian: self.endian },
                );
                if flags & RING_FLAG_STREAM_CHUNK != 0 {
                    if record_size != RECORD_SIZE {
                        return Err(c.malformed("record_size", "must be 24 in a stream chunk (format 1.3)"));
                    }
                    let chunk = StreamChunk { stream: c.u64("stream_id")?, first: c.u64("first_record")? };
                    if chunk.first.checked_add(count).is_none_or(|end| end > written) {
                        return Err(c.malformed("first_record", "puts the chunk's records past those ever written"));
                    }
                    SectionData::RingChunk(info, chunk, records, open)
                } else {
                    SectionData::Ring(info, records, open)
                }
            }
            SectionKind::Crash => {
                let tid = c.u64("tid")?;
                let signal = c.u32("signal")?;
                let notes = c.str("notes")?;
                let losses = c.str("losses")?;
                SectionData::Crash { tid, signal, notes, losses }
            }
            SectionKind::Sites => {
                let base = c.u64("base")?;
                let len = c.u64("length")?;
                let bytes = c.items(len, 1, "site bytes")?;
                SectionData::Sites { base, bytes }
            }
            SectionKind::Calibration => {
                let n = c.u32("entry_count")?;
                let bytes = c.items(n.into(), CALIBRATION_ENTRY_SIZE, "entries")?;
                SectionData::Calibration(Calibrations { bytes, endian: self.endian })
            }
            SectionKind::Unbalanced => {
                let n = c.u32("entry_count")?;
                let bytes = c.items(n.into(), UNBALANCED_ENTRY_SIZE, "entries")?;
                SectionData::Unbalanced(UnbalancedEntries { bytes, endian: self.endian })
            }
            SectionKind::Dladdr => {
                let count = c.u32("entry_count")?;
                let start = c.pos;
                for _ in 0..count {
                    c.take(16, "entry")?;
                    c.str("module")?;
                    c.str("symbol")?;
                }
                SectionData::Dladdr(DladdrTable { bytes: &self.payload[start..c.pos], count, endian: self.endian })
            }
            SectionKind::Names => {
                let count = c.u32("entry_count")?;
                let start = c.pos;
                for _ in 0..count {
                    c.take(12, "entry")?;
                    let frames = c.u32("frame_count")?;
                    if frames == 0 {
                        return Err(c.malformed("frame_count", "must be at least 1"));
                    }
                    for _ in 0..frames {
                        c.take(4, "line")?;
                        c.str("function")?;
                        c.str("file")?;
                    }
                }
                SectionData::Names(NamesTable { bytes: &self.payload[start..c.pos], count, endian: self.endian })
            }
            SectionKind::Anchor => SectionData::Anchor(Anchor {
                ticks: c.u64("ticks")?,
                mono_ns: c.u64("monotonic_ns")?,
                real_ns: c.u64("realtime_ns")?,
            }),
            SectionKind::End => SectionData::End,
            SectionKind::Unknown(code) => SectionData::Unknown(code),
        })
    }
}

/// The anchors of a clock section, oldest first.
#[derive(Clone, Copy, Debug)]
pub struct Anchors<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> Anchors<'a> {
    /// How many anchors there are.
    pub fn len(&self) -> usize {
        self.bytes.len() / ANCHOR_SIZE
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The anchors in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Anchor> + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(ANCHOR_SIZE).map(move |c| Anchor {
            ticks: e.u64_at(c, 0),
            mono_ns: e.u64_at(c, 8),
            real_ns: e.u64_at(c, 16),
        })
    }
}

/// The records of a ring section, oldest first, decoded on the fly. Compact
/// (12-byte) records come out widened: their argument and wrap-marker keys
/// as [`ARG_KEY`], [`WRAP_KEY`] and [`FLAGS_KEY`], their counter values as read (not unwrapped).
#[derive(Clone, Copy, Debug)]
pub struct Records<'a> {
    bytes: &'a [u8],
    endian: Endian,
    size: usize,
}

impl<'a> Records<'a> {
    /// How many records there are.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.size
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The records' bytes, as in the file.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }
    /// Bytes per record: 24, or 12 for compact records.
    pub fn record_size(&self) -> usize {
        self.size
    }
    /// Whether these are compact 12-byte records (32-bit keys and counter values).
    pub fn compact(&self) -> bool {
        self.size == COMPACT_RECORD_SIZE
    }

    #[inline]
    fn decode(e: Endian, c: &[u8]) -> Record {
        // As arrays, whose fixed ranges need no checks, not `u32_at`/`u64_at`:
        // this runs once per record (measured: docs/PERFORMANCE.md).
        match (<&[u8; COMPACT_RECORD_SIZE]>::try_from(c), <&[u8; RECORD_SIZE]>::try_from(c)) {
            (Ok(c), _) => Self::decode_compact(e, c),
            (_, Ok(c)) => Self::decode_wide(e, c),
            // Never: chunks are of the records' size.
            _ => Record::default(),
        }
    }

    #[inline(always)]
    fn decode_compact(e: Endian, c: &[u8; COMPACT_RECORD_SIZE]) -> Record {
        let [k0, k1, k2, k3, n0, n1, n2, n3, x0, x1, x2, x3] = *c;
        let key = match e.u32([k0, k1, k2, k3]) {
            COMPACT_ARG_KEY => ARG_KEY,
            COMPACT_WRAP_KEY => WRAP_KEY,
            COMPACT_FLAGS_KEY => FLAGS_KEY,
            key => u64::from(key),
        };
        Record { key, enter: e.u32([n0, n1, n2, n3]).into(), exit: e.u32([x0, x1, x2, x3]).into() }
    }

    #[inline(always)]
    fn decode_wide(e: Endian, c: &[u8; RECORD_SIZE]) -> Record {
        // Constant ranges of an array: no checks left.
        let word = |at: usize| e.u64(c[at..at + 8].try_into().unwrap_or_default());
        Record { key: word(0), enter: word(8), exit: word(16) }
    }

    /// The record at `index` in file order.
    #[inline]
    pub fn get(&self, index: usize) -> Option<Record> {
        // Not through `locate`: its two branches cost a prefixed ring's decoding more
        // instructions (three reads a span; docs/PERFORMANCE.md).
        let size = if self.compact() { COMPACT_RECORD_SIZE } else { RECORD_SIZE };
        let at = index.checked_mul(size)?;
        let c = self.bytes.get(at..at.checked_add(size)?)?;
        Some(Self::decode(self.endian, c))
    }

    /// Where the record at `index` lies, for a caller that finds records
    /// ahead of reading them (to start loading them into the cache).
    #[inline]
    pub fn locate(&self, index: usize) -> Option<RecordRef<'a>> {
        let endian = self.endian;
        if self.compact() {
            let at = index.checked_mul(COMPACT_RECORD_SIZE)?;
            let bytes = self.bytes.get(at..)?.first_chunk()?;
            Some(RecordRef { bytes: RecordBytes::Compact(bytes), endian })
        } else {
            let at = index.checked_mul(RECORD_SIZE)?;
            let bytes = self.bytes.get(at..)?.first_chunk()?;
            Some(RecordRef { bytes: RecordBytes::Wide(bytes), endian })
        }
    }

    /// The bytes of the records from `first` to `last` (inclusive), if both exist.
    #[inline]
    pub fn bytes_between(&self, first: usize, last: usize) -> Option<&'a [u8]> {
        let size = if self.compact() { COMPACT_RECORD_SIZE } else { RECORD_SIZE };
        self.bytes.get(first.checked_mul(size)?..last.checked_add(1)?.checked_mul(size)?)
    }

    /// The records in file order (or, reversed, newest first).
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Record> + DoubleEndedIterator + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(self.size).map(move |c| Self::decode(e, c))
    }
}

/// One record of a [`Records`], found by [`Records::locate`] and decoded
/// by [`record`](Self::record) without another bounds check.
#[derive(Clone, Copy, Debug)]
pub struct RecordRef<'a> {
    bytes: RecordBytes<'a>,
    endian: Endian,
}

/// A record's bytes, by size.
#[derive(Clone, Copy, Debug)]
enum RecordBytes<'a> {
    Wide(&'a [u8; RECORD_SIZE]),
    Compact(&'a [u8; COMPACT_RECORD_SIZE]),
}

impl<'a> RecordRef<'a> {
    /// The record.
    #[inline]
    pub fn record(self) -> Record {
        match self.bytes {
            RecordBytes::Wide(c) => Records::decode_wide(self.endian, c),
            RecordBytes::Compact(c) => Records::decode_compact(self.endian, c),
        }
    }

    /// Its bytes, as in the file.
    #[inline]
    pub fn as_bytes(self) -> &'a [u8] {
        match self.bytes {
            RecordBytes::Wide(b) => b,
            RecordBytes::Compact(b) => b,
        }
    }
}

/// The calibration entries.
#[derive(Clone, Copy, Debug)]
pub struct Calibrations<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> Calibrations<'a> {
    /// The entries in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Calibration> + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(CALIBRATION_ENTRY_SIZE).map(move |c| Calibration {
            mode: ClockMode::from_code(e.u32_at(c, 0)),
            samples: e.u32_at(c, 4),
            span_cost: e.u64_at(c, 8),
            read_cost: e.u64_at(c, 16),
        })
    }
}

/// The unbalanced section's entries.
#[derive(Clone, Copy, Debug)]
pub struct UnbalancedEntries<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> UnbalancedEntries<'a> {
    /// The entries in file order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Unbalanced> + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(UNBALANCED_ENTRY_SIZE).map(move |c| Unbalanced {
            tid: e.u64_at(c, 0),
            too_deep: e.u64_at(c, 8),
            abandoned: e.u64_at(c, 16),
        })
    }
}

/// The dladdr table, validated on decode.
#[derive(Clone, Copy, Debug)]
pub struct DladdrTable<'a> {
    bytes: &'a [u8],
    count: u32,
    endian: Endian,
}

impl<'a> DladdrTable<'a> {
    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The entries in file order.
    pub fn iter(&self) -> impl Iterator<Item = DladdrEntry<'a>> + 'a {
        let mut c = Cur {
            bytes: self.bytes,
            pos: 0,
            field_start: 0,
            offset: 0,
            endian: self.endian,
            kind: SectionKind::Dladdr,
        };
        // Every entry was bounds-checked by `Section::decode`.
        (0..self.count).map_while(move |_| {
            Some(DladdrEntry {
                key: c.u64("key").ok()?,
                symbol_address: c.u64("symbol_address").ok()?,
                module: c.str("module").ok()?,
                symbol: c.str("symbol").ok()?,
            })
        })
    }
}

/// The names section (since 1.2), validated on decode.
#[derive(Clone, Copy, Debug)]
pub struct NamesTable<'a> {
    bytes: &'a [u8],
    count: u32,
    endian: Endian,
}

/// One entry of a [`NamesTable`]: a key, the way it was named, and its frames.
#[derive(Clone, Copy, Debug)]
pub struct PackedName<'a> {
    /// The span key.
    pub key: u64,
    /// Which way of naming found it.
    pub source: NameSource,
    frames: &'a [u8],
    frame_count: u32,
    endian: Endian,
}

impl<'a> PackedName<'a> {
    /// Its frames, innermost first (at least one).
    pub fn frames(&self) -> impl Iterator<Item = NameFrame<'a>> + 'a {
        let mut c = Cur {
            bytes: self.frames,
            pos: 0,
            field_start: 0,
            offset: 0,
            endian: self.endian,
            kind: SectionKind::Names,
        };
        // Every frame was bounds-checked by `Section::decode`.
        (0..self.frame_count).map_while(move |_| {
            let line = c.u32("line").ok()?;
            Some(NameFrame { line, function: c.str("function").ok()?, file: c.str("file").ok()? })
        })
    }
}

impl<'a> NamesTable<'a> {
    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The entries in file order.
    pub fn iter(&self) -> impl Iterator<Item = PackedName<'a>> + 'a {
        let mut c =
            Cur { bytes: self.bytes, pos: 0, field_start: 0, offset: 0, endian: self.endian, kind: SectionKind::Names };
        let (endian, bytes) = (self.endian, self.bytes);
        (0..self.count).map_while(move |_| {
            let key = c.u64("key").ok()?;
            let source = NameSource::from_code(c.u32("source").ok()?);
            let frame_count = c.u32("frame_count").ok()?;
            let start = c.pos;
            for _ in 0..frame_count {
                c.take(4, "line").ok()?;
                c.str("function").ok()?;
                c.str("file").ok()?;
            }
            Some(PackedName { key, source, frames: bytes.get(start..c.pos)?, frame_count, endian })
        })
    }
}

/// The spans a ring's thread had open at dump time, outermost first: (key, enter ticks).
#[derive(Clone, Copy, Debug)]
pub struct OpenSpans<'a> {
    bytes: &'a [u8],
    endian: Endian,
}

impl<'a> OpenSpans<'a> {
    /// How many there are.
    pub fn len(&self) -> usize {
        self.bytes.len() / OPEN_SPAN_SIZE
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    /// The open spans, outermost first.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (u64, u64)> + 'a {
        let e = self.endian;
        self.bytes.chunks_exact(OPEN_SPAN_SIZE).map(move |c| (e.u64_at(c, 0), e.u64_at(c, 8)))
    }
}

/// The module table, validated on decode.
#[derive(Clone, Copy, Debug)]
pub struct Modules<'a> {
    bytes: &'a [u8],
    count: u32,
    endian: Endian,
}

impl<'a> Modules<'a> {
    /// How many modules there are.
    pub fn len(&self) -> usize {
        self.count as usize
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
    /// The modules in file order.
    pub fn iter(&self) -> impl Iterator<Item = Module<'a>> + 'a {
        let mut c = Cur {
            bytes: self.bytes,
            pos: 0,
            field_start: 0,
            offset: 0,
            endian: self.endian,
            kind: SectionKind::Modules,
        };
        // Every entry was bounds-checked by `Section::decode`; `ok()?` only ends early on a bug.
        (0..self.count).map_while(move |_| {
            Some(Module {
                start: c.u64("start").ok()?,
                end: c.u64("end").ok()?,
                bias: c.u64("bias").ok()?,
                flags: c.u32("flags").ok()?,
                build_id: c.str("build_id").ok()?,
                path: c.str("path").ok()?,
            })
        })
    }
}
