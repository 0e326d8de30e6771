//! A streaming dump writer that needs neither `std` nor `alloc`.
//!
//! Every section declares its payload length up front, so the writer never
//! buffers: bytes go straight to the [`Sink`], the CRC-32 is computed on the
//! way and written after the payload. Integers are written in the target's
//! native byte order; the file header's probe tells readers which one it is.

use crate::crc::Hasher;

use crate::error::WriteError;
use crate::layout::*;
use crate::model::{
    Anchor, Calibration, ClockInfo, CompactRecord, DladdrEntry, MetaInfo, Module, NameEntry, Record, RingInfo,
    Unbalanced,
};

/// Where dump bytes go: a file, a socket, a UART, a buffer.
pub trait Sink {
    /// What the sink reports when it cannot take bytes.
    type Error;
    /// Take all of `bytes`, or fail.
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Self::Error>;
}

/// A sink that writes into a fixed byte slice (no allocation).
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    len: usize,
}

/// The slice given to a [`SliceSink`] is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceFull;

impl core::fmt::Display for SliceFull {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the output buffer is full")
    }
}

impl<'a> SliceSink<'a> {
    /// A sink that fills `buf` from its start.
    pub fn new(buf: &'a mut [u8]) -> Self {
        SliceSink { buf, len: 0 }
    }

    /// The bytes written so far.
    pub fn written(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Sink for SliceSink<'_> {
    type Error = SliceFull;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), SliceFull> {
        let end = self.len.checked_add(bytes.len()).ok_or(SliceFull)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(SliceFull)?;
        dst.copy_from_slice(bytes);
        self.len = end;
        Ok(())
    }
}

#[cfg(feature = "std")]
/// Any `std::io::Write` is a sink.
pub struct IoSink<W>(pub W);

#[cfg(feature = "std")]
impl<W: std::io::Write> Sink for IoSink<W> {
    type Error = std::io::Error;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), std::io::Error> {
        self.0.write_all(bytes)
    }
}

type WResult<T, E> = Result<T, WriteError<E>>;

/// Writes one dump: the header on creation, then sections, then the end marker.
pub struct Writer<S: Sink> {
    sink: S,
    /// Bytes written since the start of the file.
    pos: u64,
    /// CRC of the open section.
    crc: Hasher,
    /// Payload bytes the open section still expects.
    remaining: u64,
    /// Payload bytes the open section declared.
    declared: u64,
}

impl<S: Sink> Writer<S> {
    /// Starts a dump: writes the file header. `pointer_width` is the target's
    /// pointer size in bytes (4 or 8).
    pub fn new(sink: S, pointer_width: u8) -> WResult<Self, S::Error> {
        let mut w = Writer { sink, pos: 0, crc: Hasher::new(), remaining: 0, declared: 0 };
        let mut h = [0u8; FILE_HEADER_SIZE];
        h[0..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&ENDIAN_PROBE.to_ne_bytes());
        h[12..14].copy_from_slice(&VERSION_MAJOR.to_ne_bytes());
        h[14..16].copy_from_slice(&VERSION_MINOR.to_ne_bytes());
        h[16] = pointer_width;
        h[17] = 0;
        h[18..20].copy_from_slice(&(FILE_HEADER_SIZE as u16).to_ne_bytes());
        // 20..24 flags, 24..28 reserved: zero.
        let crc = crate::crc::hash(&h[..28]);
        h[28..32].copy_from_slice(&crc.to_ne_bytes());
        w.raw(&h)?;
        Ok(w)
    }

    /// Continues a dump whose first `position` bytes the sink already holds, up to and
    /// without its end marker (a multiple of 8 bytes, as every section ends there): appends
    /// sections to a finished dump, as `rtconv pack` does, without writing a header.
    pub fn resume(sink: S, position: u64) -> Self {
        Writer { sink, pos: position, crc: Hasher::new(), remaining: 0, declared: 0 }
    }

    /// The sink, to flush it between sections (a stream does after each round).
    pub fn sink_mut(&mut self) -> &mut S {
        &mut self.sink
    }

    fn raw(&mut self, bytes: &[u8]) -> WResult<(), S::Error> {
        self.sink.write_all(bytes).map_err(WriteError::Sink)?;
        self.pos += bytes.len() as u64;
        Ok(())
    }

    /// Opens a section whose payload will be exactly `len` bytes.
    pub fn begin_section(&mut self, kind: SectionKind, len: u64) -> WResult<(), S::Error> {
        let mut h = [0u8; SECTION_HEADER_SIZE];
        h[0..4].copy_from_slice(&kind.code().to_ne_bytes());
        h[8..16].copy_from_slice(&len.to_ne_bytes());
        self.crc = Hasher::new();
        self.crc.update(&h);
        self.remaining = len;
        self.declared = len;
        self.raw(&h)
    }

    /// Writes part of the open section's payload.
    pub fn payload(&mut self, bytes: &[u8]) -> WResult<(), S::Error> {
        let n = bytes.len() as u64;
        if n > self.remaining {
            return Err(WriteError::CountMismatch {
                declared: self.declared,
                written: self.declared - self.remaining + n,
            });
        }
        self.remaining -= n;
        self.crc.update(bytes);
        self.raw(bytes)
    }

    fn u32(&mut self, v: u32) -> WResult<(), S::Error> {
        self.payload(&v.to_ne_bytes())
    }

    fn u64(&mut self, v: u64) -> WResult<(), S::Error> {
        self.payload(&v.to_ne_bytes())
    }

    fn bytes(&mut self, v: &[u8]) -> WResult<(), S::Error> {
        let len = u32::try_from(v.len()).map_err(|_| WriteError::TooLarge { field: "string" })?;
        self.u32(len)?;
        self.payload(v)
    }

    /// Closes the open section: checks its length, writes its CRC and padding.
    pub fn end_section(&mut self) -> WResult<(), S::Error> {
        if self.remaining != 0 {
            return Err(WriteError::CountMismatch { declared: self.declared, written: self.declared - self.remaining });
        }
        let crc = core::mem::replace(&mut self.crc, Hasher::new()).finalize();
        self.raw(&crc.to_ne_bytes())?;
        let pad = (SECTION_ALIGN as u64 - self.pos % SECTION_ALIGN as u64) % SECTION_ALIGN as u64;
        self.raw(&[0u8; SECTION_ALIGN][..pad as usize])
    }

    /// Writes the meta section.
    pub fn meta(&mut self, m: &MetaInfo<'_>) -> WResult<(), S::Error> {
        let len = 8 + str_len(m.producer) + str_len(m.producer_version) + str_len(m.process_name);
        self.begin_section(SectionKind::Meta, len)?;
        self.u32(m.pid)?;
        self.u32(m.reason.code())?;
        self.bytes(m.producer)?;
        self.bytes(m.producer_version)?;
        self.bytes(m.process_name)?;
        self.end_section()
    }

    /// Writes the clock section with its anchors in chronological order.
    pub fn clock(&mut self, c: &ClockInfo, anchors: &[Anchor]) -> WResult<(), S::Error> {
        let n = u32::try_from(anchors.len()).map_err(|_| WriteError::TooLarge { field: "anchors" })?;
        let len = 24 + u64::from(n) * ANCHOR_SIZE as u64;
        self.begin_section(SectionKind::Clock, len)?;
        self.u32(c.counter.code())?;
        self.u32(c.counter_bits)?;
        self.u64(c.nominal_hz)?;
        self.u32(c.rate_source.code())?;
        self.u32(n)?;
        for a in anchors {
            self.u64(a.ticks)?;
            self.u64(a.mono_ns)?;
            self.u64(a.real_ns)?;
        }
        self.end_section()
    }

    /// Writes the module table.
    pub fn modules(&mut self, modules: &[Module<'_>]) -> WResult<(), S::Error> {
        let n = u32::try_from(modules.len()).map_err(|_| WriteError::TooLarge { field: "modules" })?;
        let len = 4 + modules.iter().map(|m| 28 + str_len(m.build_id) + str_len(m.path)).sum::<u64>();
        self.begin_section(SectionKind::Modules, len)?;
        self.u32(n)?;
        for m in modules {
            self.u64(m.start)?;
            self.u64(m.end)?;
            self.u64(m.bias)?;
            self.u32(m.flags)?;
            self.bytes(m.build_id)?;
            self.bytes(m.path)?;
        }
        self.end_section()
    }

    /// Opens a ring section that will hold exactly `record_count` records,
    /// oldest first, then `open_count` open spans, outermost first. Write them
    /// with [`Writer::record`] and [`Writer::open_span`], then call
    /// [`Writer::end_section`].
    pub fn begin_ring(&mut self, ring: &RingInfo<'_>, record_count: u64, open_count: u64) -> WResult<(), S::Error> {
        self.begin_ring_sized(ring, RECORD_SIZE, record_count, open_count)
    }

    /// As [`begin_ring`](Self::begin_ring), for records of `record_size` bytes
    /// ([`RECORD_SIZE`], or [`COMPACT_RECORD_SIZE`] for [`compact_record`](Self::compact_record)s).
    pub fn begin_ring_sized(
        &mut self,
        ring: &RingInfo<'_>,
        record_size: usize,
        record_count: u64,
        open_count: u64,
    ) -> WResult<(), S::Error> {
        self.begin_ring_with_tail(ring, record_size, record_count, open_count, 0)
    }

    /// As [`begin_ring_sized`](Self::begin_ring_sized), for a payload that
    /// ends with `tail` more bytes after the open spans (a stream chunk's).
    fn begin_ring_with_tail(
        &mut self,
        ring: &RingInfo<'_>,
        record_size: usize,
        record_count: u64,
        open_count: u64,
        tail: u64,
    ) -> WResult<(), S::Error> {
        let body = record_count
            .checked_mul(record_size as u64)
            .and_then(|r| r.checked_add(open_count.checked_mul(OPEN_SPAN_SIZE as u64)?))
            .ok_or(WriteError::TooLarge { field: "record count" })?;
        let len = RING_FIXED_SIZE as u64 + str_len(ring.name) + 16 + body + tail;
        self.begin_section(SectionKind::Ring, len)?;
        self.u64(ring.tid)?;
        self.u64(ring.capacity)?;
        self.u64(ring.written)?;
        self.u64(ring.dropped)?;
        self.u64(ring.aux)?;
        self.u32(ring.flags)?;
        self.u32(record_size as u32)?;
        self.bytes(ring.name)?;
        self.u64(record_count)?;
        self.u64(open_count)
    }

    /// Writes one open span (key, enter ticks) into the open ring section, after its records.
    pub fn open_span(&mut self, key: u64, enter: u64) -> WResult<(), S::Error> {
        let mut b = [0u8; OPEN_SPAN_SIZE];
        b[0..8].copy_from_slice(&key.to_ne_bytes());
        b[8..16].copy_from_slice(&enter.to_ne_bytes());
        self.payload(&b)
    }

    /// Writes records into the open ring section, encoded a block at a time
    /// (the sink and the checksum then see large writes, not 24-byte ones).
    pub fn records(&mut self, records: &[Record]) -> WResult<(), S::Error> {
        const PER_BLOCK: usize = 21; // 504 bytes: little stack on a microcontroller
        let mut block = [0u8; PER_BLOCK * RECORD_SIZE];
        for group in records.chunks(PER_BLOCK) {
            for (r, b) in group.iter().zip(block.chunks_exact_mut(RECORD_SIZE)) {
                encode_record(r, b);
            }
            self.payload(&block[..group.len() * RECORD_SIZE])?;
        }
        Ok(())
    }

    /// Writes one record into the open ring section.
    pub fn record(&mut self, r: &Record) -> WResult<(), S::Error> {
        let mut b = [0u8; RECORD_SIZE];
        encode_record(r, &mut b);
        self.payload(&b)
    }

    /// Writes one compact record into a ring section begun with [`COMPACT_RECORD_SIZE`].
    pub fn compact_record(&mut self, r: &CompactRecord) -> WResult<(), S::Error> {
        let mut b = [0u8; COMPACT_RECORD_SIZE];
        b[0..4].copy_from_slice(&r.key.to_ne_bytes());
        b[4..8].copy_from_slice(&r.enter.to_ne_bytes());
        b[8..12].copy_from_slice(&r.exit.to_ne_bytes());
        self.payload(&b)
    }

    /// Writes a whole ring section of compact records (since 1.1), then its open spans.
    pub fn compact_ring(
        &mut self,
        ring: &RingInfo<'_>,
        records: &[CompactRecord],
        open: &[(u64, u64)],
    ) -> WResult<(), S::Error> {
        self.begin_ring_sized(ring, COMPACT_RECORD_SIZE, records.len() as u64, open.len() as u64)?;
        for r in records {
            self.compact_record(r)?;
        }
        for &(key, enter) in open {
            self.open_span(key, enter)?;
        }
        self.end_section()
    }

    /// Writes a whole ring section: its records, then its open spans (key, enter ticks).
    pub fn ring(&mut self, ring: &RingInfo<'_>, records: &[Record], open: &[(u64, u64)]) -> WResult<(), S::Error> {
        self.begin_ring(ring, records.len() as u64, open.len() as u64)?;
        self.records(records)?;
        for &(key, enter) in open {
            self.open_span(key, enter)?;
        }
        self.end_section()
    }

    /// Writes one chunk of a streamed ring (since 1.3): a ring section with
    /// [`RING_FLAG_STREAM_CHUNK`] whose records continue stream `stream`'s
    /// earlier chunks from the ring's record ordinal `first`; `ring` counts as
    /// of the chunk's end, `open` the spans open then.
    pub fn ring_chunk(
        &mut self,
        ring: &RingInfo<'_>,
        stream: u64,
        first: u64,
        records: &[Record],
        open: &[(u64, u64)],
    ) -> WResult<(), S::Error> {
        let ring = RingInfo { flags: ring.flags | RING_FLAG_STREAM_CHUNK, ..*ring };
        let (count, open_count) = (records.len() as u64, open.len() as u64);
        self.begin_ring_with_tail(&ring, RECORD_SIZE, count, open_count, STREAM_CHUNK_TAIL_SIZE as u64)?;
        self.records(records)?;
        for &(key, enter) in open {
            self.open_span(key, enter)?;
        }
        self.u64(stream)?;
        self.u64(first)?;
        self.end_section()
    }

    /// Writes one more time anchor (since 1.3): what a stream appends as it
    /// runs, so a file cut short still has a recent one.
    pub fn anchor(&mut self, a: &Anchor) -> WResult<(), S::Error> {
        self.begin_section(SectionKind::Anchor, ANCHOR_SIZE as u64)?;
        self.u64(a.ticks)?;
        self.u64(a.mono_ns)?;
        self.u64(a.real_ns)?;
        self.end_section()
    }

    /// Writes the site section: `bytes` is a copy of the site-descriptor
    /// linker section, which starts at address `base` in the target.
    pub fn sites(&mut self, base: u64, bytes: &[u8]) -> WResult<(), S::Error> {
        self.begin_section(SectionKind::Sites, 16 + bytes.len() as u64)?;
        self.u64(base)?;
        self.u64(bytes.len() as u64)?;
        self.payload(bytes)?;
        self.end_section()
    }

    /// Writes the calibration section.
    pub fn calibration(&mut self, entries: &[Calibration]) -> WResult<(), S::Error> {
        let n = u32::try_from(entries.len()).map_err(|_| WriteError::TooLarge { field: "calibration" })?;
        self.begin_section(SectionKind::Calibration, 4 + u64::from(n) * CALIBRATION_ENTRY_SIZE as u64)?;
        self.u32(n)?;
        for e in entries {
            self.u32(e.mode.code())?;
            self.u32(e.samples)?;
            self.u64(e.span_cost)?;
            self.u64(e.read_cost)?;
        }
        self.end_section()
    }

    /// Writes the unbalanced section (since 1.1).
    pub fn unbalanced(&mut self, entries: &[Unbalanced]) -> WResult<(), S::Error> {
        let n = u32::try_from(entries.len()).map_err(|_| WriteError::TooLarge { field: "unbalanced" })?;
        self.begin_section(SectionKind::Unbalanced, 4 + u64::from(n) * UNBALANCED_ENTRY_SIZE as u64)?;
        self.u32(n)?;
        for e in entries {
            self.u64(e.tid)?;
            self.u64(e.too_deep)?;
            self.u64(e.abandoned)?;
        }
        self.end_section()
    }

    /// Writes the crash section (since 1.5): the thread that took the fatal
    /// signal, the signal (0: none), what was estimated and what was lost,
    /// each as lines.
    pub fn crash(&mut self, tid: u64, signal: u32, notes: &[u8], losses: &[u8]) -> WResult<(), S::Error> {
        self.begin_section(SectionKind::Crash, 8 + 4 + str_len(notes) + str_len(losses))?;
        self.u64(tid)?;
        self.u32(signal)?;
        self.bytes(notes)?;
        self.bytes(losses)?;
        self.end_section()
    }

    /// Writes the dladdr table.
    pub fn dladdr(&mut self, entries: &[DladdrEntry<'_>]) -> WResult<(), S::Error> {
        let n = u32::try_from(entries.len()).map_err(|_| WriteError::TooLarge { field: "dladdr" })?;
        let len = 4 + entries.iter().map(|e| 16 + str_len(e.module) + str_len(e.symbol)).sum::<u64>();
        self.begin_section(SectionKind::Dladdr, len)?;
        self.u32(n)?;
        for e in entries {
            self.u64(e.key)?;
            self.u64(e.symbol_address)?;
            self.bytes(e.module)?;
            self.bytes(e.symbol)?;
        }
        self.end_section()
    }

    /// Writes a names section (since 1.2): each entry's key, source and frames.
    pub fn names(&mut self, entries: &[NameEntry<'_>]) -> WResult<(), S::Error> {
        let n = u32::try_from(entries.len()).map_err(|_| WriteError::TooLarge { field: "names" })?;
        let mut len = 4u64;
        for e in entries {
            u32::try_from(e.frames.len()).map_err(|_| WriteError::TooLarge { field: "name frames" })?;
            len += NAME_ENTRY_FIXED_SIZE as u64;
            len += e.frames.iter().map(|f| 4 + str_len(f.function) + str_len(f.file)).sum::<u64>();
        }
        self.begin_section(SectionKind::Names, len)?;
        self.u32(n)?;
        for e in entries {
            self.u64(e.key)?;
            self.u32(e.source.code())?;
            self.u32(e.frames.len() as u32)?;
            for f in e.frames {
                self.u32(f.line)?;
                self.bytes(f.function)?;
                self.bytes(f.file)?;
            }
        }
        self.end_section()
    }

    /// Writes the end marker and returns the sink.
    pub fn finish(mut self) -> WResult<S, S::Error> {
        self.begin_section(SectionKind::End, 0)?;
        self.end_section()?;
        Ok(self.sink)
    }

    /// Bytes written so far.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

fn str_len(s: &[u8]) -> u64 {
    4 + s.len() as u64
}

/// A record's 24 bytes, in the writer's byte order, into `b`.
fn encode_record(r: &Record, b: &mut [u8]) {
    b[0..8].copy_from_slice(&r.key.to_ne_bytes());
    b[8..16].copy_from_slice(&r.enter.to_ne_bytes());
    b[16..24].copy_from_slice(&r.exit.to_ne_bytes());
}
