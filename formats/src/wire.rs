//! The wire encoding: spans streamed from a target over a slow link (a UART,
//! an RTT up-channel), a few bytes each, in frames a reader can pick up
//! mid-stream and that state every loss exactly.
//!
//! Design constraints:
//! - Self-synchronising: each frame is COBS-encoded and ends with a `0x00`
//!   byte, which appears nowhere else; a reader that starts mid-stream, or
//!   meets a corrupted frame (its CRC-32 fails), skips to the next `0x00`.
//! - Every frame decodes alone: its keys are defined in it (the first use of
//!   a key in a frame carries the key; later uses, its index in the frame),
//!   and its first span is timed from a base stated in the frame.
//! - Losses are exact: a spans frame states how many spans of its track were
//!   sent before it and how many the target dropped before it (its buffer
//!   full), so a reader counts what the link lost (a gap in `sent`) apart
//!   from what the target dropped.
//! - Records are a track's, in the order its ring wrote them (exit order):
//!   each span is its key, its exit less the previous span's exit, and its
//!   duration, as LEB128 varints — about 5 bytes a span for spans of
//!   thousands of ticks. Differences are taken modulo the counter's width, so
//!   the reader unwraps a 32-bit counter by adding them up.
//! - `no_std`, no allocation: the [`SpanEncoder`] fills a frame in a buffer
//!   of its own and writes it, COBS-encoded, to any [`Sink`].
//!
//! FORMAT.md, "The wire encoding", is the specification.
//!
//! # Example
//!
//! ```
//! use ringtrace_format::wire::{Frame, SpanEncoder, frames};
//! use ringtrace_format::{Record, SliceSink};
//!
//! let mut enc = SpanEncoder::<256>::new(1, 32);
//! let mut out = [0u8; 256];
//! let mut sink = SliceSink::new(&mut out);
//! enc.begin(0);
//! enc.send(&Record { key: 0x0800_0101, enter: 1010, exit: 1500 }, &mut sink).unwrap();
//! enc.send(&Record { key: 0x0800_0101, enter: 1600, exit: 2000 }, &mut sink).unwrap();
//! enc.finish(&mut sink).unwrap();
//!
//! let mut scratch = [0u8; 256];
//! let (_, frame) = frames(sink.written()).next().unwrap();
//! let Ok(Frame::Spans(spans)) = Frame::decode(frame.unwrap(), &mut scratch) else { panic!() };
//! let records: Vec<Record> = spans.records().map(Result::unwrap).collect();
//! assert_eq!(records[1], Record { key: 0x0800_0101, enter: 1600, exit: 2000 });
//! ```

use core::fmt;

use crate::write::Sink;
use crate::{Anchor, ClockInfo, CounterKind, RateSource, Record};

/// The largest frame payload, before COBS: a reader refuses a longer frame.
pub const FRAME_MAX: usize = 1024;
/// Frame kinds: the first byte of a frame's payload. A track's spans.
pub const KIND_SPANS: u8 = 1;
/// An info frame: the program, its counter, its tracks and its code (see [`Info`]).
pub const KIND_INFO: u8 = 2;
/// A piece of the program's site descriptors (see [`write_sites`]).
pub const KIND_SITES: u8 = 3;
/// The end of a track's stream: how many spans it sent and dropped in all (see [`write_end`]).
pub const KIND_END: u8 = 4;
/// The info frame's layout version.
pub const INFO_VERSION: u64 = 1;
/// The most bytes of site descriptors a stream carries.
pub const SITES_MAX: u64 = 1 << 20;
/// The most keys one frame defines.
pub const FRAME_KEYS: usize = 32;

/// Why a frame cannot be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// The COBS encoding is broken (a block runs past the frame's end).
    Cobs,
    /// The frame is longer than [`FRAME_MAX`] or the reader's buffer.
    TooLong(usize),
    /// The frame's CRC-32 does not match its bytes.
    Crc,
    /// A varint runs past the frame's end or past 64 bits.
    Varint,
    /// A frame kind this reader does not know.
    Kind(u8),
    /// A span names a key index the frame has not defined.
    KeyIndex(u64),
    /// A frame defines more than [`FRAME_KEYS`] keys.
    TooManyKeys,
    /// An item tag this reader does not know.
    Tag(u64),
    /// An info frame of a layout this reader does not know.
    InfoVersion(u64),
    /// A sites frame whose piece lies outside the section it states (or one over [`SITES_MAX`]).
    Sites,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Cobs => write!(f, "broken COBS framing"),
            WireError::TooLong(n) => write!(f, "a frame of {n} bytes, longer than the {FRAME_MAX} allowed"),
            WireError::Crc => write!(f, "the frame's CRC-32 does not match its bytes"),
            WireError::Varint => write!(f, "a varint runs past the frame's end or past 64 bits"),
            WireError::Kind(k) => write!(f, "frame kind {k}, which this reader does not know"),
            WireError::KeyIndex(i) => write!(f, "key index {i}, not defined in the frame"),
            WireError::TooManyKeys => write!(f, "more than {FRAME_KEYS} keys defined in one frame"),
            WireError::Tag(t) => write!(f, "item tag {t}, which this reader does not know"),
            WireError::Sites => write!(f, "a sites frame whose piece lies outside its section"),
            WireError::InfoVersion(v) => {
                write!(f, "an info frame of layout {v}, this reader reads {INFO_VERSION}; use a newer rtconv")
            }
        }
    }
}

impl core::error::Error for WireError {}

/// Item tags: the low 2 bits of an item's first varint (its head). A span of a key defined
/// earlier in the frame: the head's other bits are its index.
const TAG_SPAN: u64 = 0;
/// A span of a key new to the frame (it takes the next index): the head's other bits are the
/// key's top byte, a varint after the head its low 56 bits.
const TAG_SPAN_NEW_KEY: u64 = 1;
/// A key's low 56 bits.
const LOW_56: u64 = (1 << 56) - 1;

/// Appends `v` as an LEB128 varint to `out` at `at`; the new length, or `None` if it does not fit.
fn put_varint(out: &mut [u8], mut at: usize, mut v: u64) -> Option<usize> {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        *out.get_mut(at)? = if v == 0 { byte } else { byte | 0x80 };
        at += 1;
        if v == 0 {
            return Some(at);
        }
    }
}

/// Reads an LEB128 varint from `b` at `*at`, moving `*at` past it.
fn get_varint(b: &[u8], at: &mut usize) -> Result<u64, WireError> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at).ok_or(WireError::Varint)?;
        *at += 1;
        v |= u64::from(byte & 0x7f).checked_shl(shift).ok_or(WireError::Varint)?;
        if byte & 0x80 == 0 {
            if shift == 63 && byte > 1 {
                return Err(WireError::Varint);
            }
            return Ok(v);
        }
    }
    Err(WireError::Varint)
}

/// Builds spans frames of one track into a buffer of `N` bytes and writes
/// each, COBS-encoded, to a sink. One encoder per track; not shared between
/// contexts.
#[derive(Debug)]
pub struct SpanEncoder<const N: usize> {
    buf: [u8; N],
    len: usize,
    keys: [u64; FRAME_KEYS],
    key_count: usize,
    track: u64,
    /// The counter's width mask: differences are taken modulo it.
    mask: u64,
    last_exit: u64,
    /// Spans in the current frame.
    count: u64,
    /// Spans in the frames finished before it.
    sent: u64,
    /// The target's dropped count the current frame states.
    dropped: u64,
}

impl<const N: usize> SpanEncoder<N> {
    /// The largest a header (41 bytes), a span (30) and the CRC (4) take: any span fits an
    /// empty frame of this many bytes.
    pub const MIN_BUFFER: usize = 96;

    /// An encoder for `track`, whose counter has `counter_bits` significant bits; its frames
    /// begin with [`begin`](Self::begin).
    pub const fn new(track: u64, counter_bits: u32) -> Self {
        const { assert!(N >= Self::MIN_BUFFER && N <= FRAME_MAX, "a frame buffer of 96 to FRAME_MAX bytes") };
        let mask = if counter_bits >= 64 { u64::MAX } else { (1u64 << counter_bits) - 1 };
        SpanEncoder {
            buf: [0; N],
            len: 0,
            keys: [0; FRAME_KEYS],
            key_count: 0,
            track,
            mask,
            last_exit: 0,
            count: 0,
            sent: 0,
            dropped: 0,
        }
    }

    /// Starts a frame, the target having dropped `dropped` spans of this track before it. Its
    /// first span's exit is taken from the previous frame's last (0 before the first frame).
    pub fn begin(&mut self, dropped: u64) {
        self.key_count = 0;
        self.count = 0;
        self.dropped = dropped;
        self.buf[0] = KIND_SPANS;
        let mut at = Some(1);
        for v in [self.track, self.sent, dropped, self.last_exit] {
            at = at.and_then(|a| put_varint(&mut self.buf, a, v));
        }
        // N is at least MIN_BUFFER (checked in `new`): the header fits.
        self.len = at.unwrap_or(N);
    }

    /// Spans in the current frame.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Spans in the frames finished so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// The track the frames are of.
    pub fn track(&self) -> u64 {
        self.track
    }

    /// Adds `r` to the frame; `false` (the frame unchanged) if it does not fit: finish the
    /// frame and begin the next one with this span.
    pub fn push(&mut self, r: &Record) -> bool {
        let known = self.keys[..self.key_count].iter().position(|&k| k == r.key);
        if known.is_none() && self.key_count == FRAME_KEYS {
            return false;
        }
        let exit = r.exit & self.mask;
        let delta = exit.wrapping_sub(self.last_exit) & self.mask;
        let duration = r.exit.wrapping_sub(r.enter) & self.mask;
        // Room for the CRC after the items.
        let room = N.saturating_sub(4);
        let written = match known {
            Some(i) => put_varint(&mut self.buf[..room], self.len, (i as u64) << 2 | TAG_SPAN),
            // A new key takes the next index; its top byte (a depth tag) rides in the head.
            None => put_varint(&mut self.buf[..room], self.len, (r.key >> 56) << 2 | TAG_SPAN_NEW_KEY)
                .and_then(|a| put_varint(&mut self.buf[..room], a, r.key & LOW_56)),
        }
        .and_then(|a| put_varint(&mut self.buf[..room], a, delta))
        .and_then(|a| put_varint(&mut self.buf[..room], a, duration));
        let Some(end) = written else { return false };
        if known.is_none() {
            self.keys[self.key_count] = r.key;
            self.key_count += 1;
        }
        self.len = end;
        self.last_exit = exit;
        self.count += 1;
        true
    }

    /// Adds `r` to the frame; when it is full, writes it to `sink` and begins the next (stating
    /// the same dropped count) with `r`.
    pub fn send<S: Sink>(&mut self, r: &Record, sink: &mut S) -> Result<(), S::Error> {
        if !self.push(r) {
            self.finish(sink)?;
            self.begin(self.dropped);
            let pushed = self.push(r);
            debug_assert!(pushed, "a span fits an empty frame of MIN_BUFFER bytes");
        }
        Ok(())
    }

    /// Ends the frame: its CRC-32, COBS-encoded, then the `0x00` delimiter, to `sink`. A frame
    /// without spans writes nothing.
    pub fn finish<S: Sink>(&mut self, sink: &mut S) -> Result<(), S::Error> {
        if self.count == 0 {
            return Ok(());
        }
        let crc = crate::crc::hash(&self.buf[..self.len]);
        self.buf[self.len..self.len + 4].copy_from_slice(&crc.to_le_bytes());
        let frame = &self.buf[..self.len + 4];
        cobs_write(frame, sink)?;
        self.sent += self.count;
        self.count = 0;
        Ok(())
    }
}

/// What a reader needs besides the spans, sent in an info frame at the start of a stream and
/// again every so often (a reader that joins mid-stream waits for the next): the program's
/// name, its counter, an anchor, its tracks' names and where its code is.
#[derive(Clone, Copy, Debug)]
pub struct Info<'a> {
    /// The program's name.
    pub process_name: &'a [u8],
    /// The counter the spans were timed with.
    pub clock: ClockInfo,
    /// A reading of the counter and the time it stands for (0: no wall clock).
    pub anchor: Anchor,
    /// (track id, ring flags as in a dump's ring section, name) of each track that streams.
    pub tracks: &'a [(u64, u32, &'a [u8])],
    /// (start, end, path) of the code: a firmware's image, loaded where its ELF file says.
    pub code: Option<(u64, u64, &'a [u8])>,
}

/// Why an info frame could not be written.
#[derive(Debug)]
pub enum InfoError<E> {
    /// It does not fit the scratch buffer (or [`FRAME_MAX`]).
    TooLong,
    /// The sink failed.
    Sink(E),
}

impl Info<'_> {
    /// Writes the info frame, built in `scratch`, to `sink`.
    pub fn write<S: Sink>(&self, scratch: &mut [u8], sink: &mut S) -> Result<(), InfoError<S::Error>> {
        let limit = scratch.len().min(FRAME_MAX).saturating_sub(4);
        let buf = &mut scratch[..limit];
        let bytes = |buf: &mut [u8], at: Option<usize>, b: &[u8]| {
            let at = put_varint(buf, at?, b.len() as u64)?;
            buf.get_mut(at..at + b.len())?.copy_from_slice(b);
            Some(at + b.len())
        };
        let mut at = buf.first_mut().map(|k| *k = KIND_INFO).map(|()| 1);
        let c = &self.clock;
        let words = [
            INFO_VERSION,
            u64::from(c.counter.code()),
            u64::from(c.counter_bits),
            c.nominal_hz,
            u64::from(c.rate_source.code()),
            self.anchor.ticks,
            self.anchor.mono_ns,
            self.anchor.real_ns,
        ];
        for w in words {
            at = at.and_then(|a| put_varint(buf, a, w));
        }
        at = bytes(buf, at, self.process_name);
        at = at.and_then(|a| put_varint(buf, a, self.tracks.len() as u64));
        for &(id, flags, name) in self.tracks {
            at = at.and_then(|a| put_varint(buf, a, id)).and_then(|a| put_varint(buf, a, u64::from(flags)));
            at = bytes(buf, at, name);
        }
        at = at.and_then(|a| put_varint(buf, a, u64::from(self.code.is_some())));
        if let Some((start, end, path)) = self.code {
            at = at.and_then(|a| put_varint(buf, a, start)).and_then(|a| put_varint(buf, a, end));
            at = bytes(buf, at, path);
        }
        let len = at.ok_or(InfoError::TooLong)?;
        let crc = crate::crc::hash(&scratch[..len]);
        scratch[len..len + 4].copy_from_slice(&crc.to_le_bytes());
        cobs_write(&scratch[..len + 4], sink).map_err(InfoError::Sink)
    }
}

/// A byte string: its length as a varint, then its bytes.
fn get_bytes<'a>(b: &'a [u8], at: &mut usize) -> Result<&'a [u8], WireError> {
    let len = usize::try_from(get_varint(b, at)?).map_err(|_| WireError::Varint)?;
    let out = b.get(*at..at.checked_add(len).ok_or(WireError::Varint)?).ok_or(WireError::Varint)?;
    *at += len;
    Ok(out)
}

/// A decoded info frame (see [`Info`]).
#[derive(Clone, Copy, Debug)]
pub struct InfoFrame<'a> {
    /// The program's name.
    pub process_name: &'a [u8],
    /// The counter the spans were timed with.
    pub clock: ClockInfo,
    /// A reading of the counter and the time it stands for.
    pub anchor: Anchor,
    /// The tracks' entries, checked: see [`tracks`](Self::tracks).
    tracks: &'a [u8],
    track_count: u64,
    /// (start, end, path) of the code, if stated.
    pub code: Option<(u64, u64, &'a [u8])>,
}

impl<'a> InfoFrame<'a> {
    /// Parses an info frame's body (after its kind byte).
    fn parse(body: &'a [u8]) -> Result<Self, WireError> {
        let mut at = 0;
        let version = get_varint(body, &mut at)?;
        if version != INFO_VERSION {
            return Err(WireError::InfoVersion(version));
        }
        let mut words = [0u64; 7];
        for w in &mut words {
            *w = get_varint(body, &mut at)?;
        }
        let clock = ClockInfo {
            counter: CounterKind::from_code(words[0] as u32),
            counter_bits: words[1].clamp(1, 64) as u32,
            nominal_hz: words[2],
            rate_source: RateSource::from_code(words[3] as u32),
        };
        let anchor = Anchor { ticks: words[4], mono_ns: words[5], real_ns: words[6] };
        let process_name = get_bytes(body, &mut at)?;
        let track_count = get_varint(body, &mut at)?;
        let tracks_at = at;
        for _ in 0..track_count {
            get_varint(body, &mut at)?;
            get_varint(body, &mut at)?;
            get_bytes(body, &mut at)?;
        }
        let tracks = &body[tracks_at..at];
        let code = match get_varint(body, &mut at)? {
            0 => None,
            _ => Some((get_varint(body, &mut at)?, get_varint(body, &mut at)?, get_bytes(body, &mut at)?)),
        };
        Ok(InfoFrame { process_name, clock, anchor, tracks, track_count, code })
    }

    /// (track id, ring flags, name) of each track.
    pub fn tracks(&self) -> impl Iterator<Item = (u64, u32, &'a [u8])> + 'a {
        let (tracks, mut at) = (self.tracks, 0);
        // Checked by `parse`: every entry reads.
        (0..self.track_count).map_while(move |_| {
            let id = get_varint(tracks, &mut at).ok()?;
            let flags = get_varint(tracks, &mut at).ok()? as u32;
            Some((id, flags, get_bytes(tracks, &mut at).ok()?))
        })
    }
}

/// Writes the program's site descriptors (its `ringtrace_sites` section: `bytes` at `base`, what
/// names its named spans and pulses) in sites frames of at most [`FRAME_MAX`] bytes, built in
/// `scratch`: the section's address and length, then a piece's offset and bytes. Sent after the
/// info frame, and again with it.
pub fn write_sites<S: Sink>(
    base: u64,
    bytes: &[u8],
    scratch: &mut [u8],
    sink: &mut S,
) -> Result<(), InfoError<S::Error>> {
    let mut offset = 0;
    loop {
        offset = write_sites_piece(base, bytes, offset, scratch, sink)?;
        if offset >= bytes.len() {
            return Ok(());
        }
    }
}

/// Writes the one sites frame of `bytes` (at `base`) that starts at `offset`, as much as
/// `scratch` holds; returns where the next piece starts (`bytes.len()` after the last).
pub fn write_sites_piece<S: Sink>(
    base: u64,
    bytes: &[u8],
    offset: usize,
    scratch: &mut [u8],
    sink: &mut S,
) -> Result<usize, InfoError<S::Error>> {
    let limit = scratch.len().min(FRAME_MAX).saturating_sub(4);
    let offset = offset.min(bytes.len());
    let mut at = scratch.first_mut().map(|k| *k = KIND_SITES).map(|()| 1);
    for v in [base, bytes.len() as u64, offset as u64] {
        at = at.and_then(|a| put_varint(&mut scratch[..limit], a, v));
    }
    let at = at.ok_or(InfoError::TooLong)?;
    let piece = (limit - at).min(bytes.len() - offset);
    if piece == 0 && offset < bytes.len() {
        return Err(InfoError::TooLong);
    }
    scratch[at..at + piece].copy_from_slice(&bytes[offset..offset + piece]);
    let len = at + piece;
    let crc = crate::crc::hash(&scratch[..len]);
    scratch[len..len + 4].copy_from_slice(&crc.to_le_bytes());
    cobs_write(&scratch[..len + 4], sink).map_err(InfoError::Sink)?;
    Ok(offset + piece)
}

/// Writes the end frame of `track`: it sent `sent` spans in all and dropped `dropped` (its
/// buffer full). A reader that meets it knows the track's last frames came or were lost, and
/// that nothing more of the track follows (the end of a live capture once every track ended).
pub fn write_end<S: Sink>(track: u64, sent: u64, dropped: u64, sink: &mut S) -> Result<(), S::Error> {
    let mut buf = [0u8; 1 + 3 * 10 + 4];
    buf[0] = KIND_END;
    let mut at = Some(1);
    for v in [track, sent, dropped] {
        at = at.and_then(|a| put_varint(&mut buf, a, v));
    }
    // Three varints of at most 10 bytes each fit.
    let len = at.unwrap_or(1);
    let crc = crate::crc::hash(&buf[..len]);
    buf[len..len + 4].copy_from_slice(&crc.to_le_bytes());
    cobs_write(&buf[..len + 4], sink)
}

/// An end frame: a track's totals (see [`write_end`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EndFrame {
    /// The track.
    pub track: u64,
    /// Spans it sent in all.
    pub sent: u64,
    /// Spans it dropped in all.
    pub dropped: u64,
}

/// A piece of the site descriptors.
#[derive(Clone, Copy, Debug)]
pub struct SitesFrame<'a> {
    /// The section's address in the target.
    pub base: u64,
    /// The section's length in bytes (at most [`SITES_MAX`]).
    pub len: u64,
    /// Where this piece starts in it.
    pub offset: u64,
    /// The piece (within `len` from `offset`).
    pub bytes: &'a [u8],
}

impl<'a> SitesFrame<'a> {
    fn parse(body: &'a [u8]) -> Result<Self, WireError> {
        let mut at = 0;
        let (base, len, offset) = (get_varint(body, &mut at)?, get_varint(body, &mut at)?, get_varint(body, &mut at)?);
        let bytes = &body[at..];
        if len > SITES_MAX || offset.checked_add(bytes.len() as u64).is_none_or(|end| end > len) {
            return Err(WireError::Sites);
        }
        Ok(SitesFrame { base, len, offset, bytes })
    }
}

/// Writes `data` COBS-encoded, then `0x00`, to `sink`, a block at a time: up to 254 bytes
/// without a zero behind a code byte of their count + 1, the zero that ends them implied (code
/// 255: 254 bytes, no zero).
fn cobs_write<S: Sink>(data: &[u8], sink: &mut S) -> Result<(), S::Error> {
    let mut rest = data;
    loop {
        match rest.iter().take(254).position(|&b| b == 0) {
            Some(run) => {
                sink.write_all(&[run as u8 + 1])?;
                sink.write_all(&rest[..run])?;
                rest = &rest[run + 1..];
                if rest.is_empty() {
                    sink.write_all(&[1])?; // the data's last byte was that zero: one more (empty) block
                    break;
                }
            }
            None if rest.len() >= 254 => {
                sink.write_all(&[255])?;
                sink.write_all(&rest[..254])?;
                rest = &rest[254..];
                if rest.is_empty() {
                    break;
                }
            }
            None => {
                sink.write_all(&[rest.len() as u8 + 1])?;
                sink.write_all(rest)?;
                break;
            }
        }
    }
    sink.write_all(&[0])
}

/// Decodes the COBS frame `encoded` (without its `0x00`) into `out`; its length.
fn cobs_decode(encoded: &[u8], out: &mut [u8]) -> Result<usize, WireError> {
    let (mut at, mut len) = (0, 0);
    while at < encoded.len() {
        let code = encoded[at] as usize;
        let block = encoded.get(at + 1..at + code).ok_or(WireError::Cobs)?;
        out.get_mut(len..len + block.len()).ok_or(WireError::TooLong(encoded.len()))?.copy_from_slice(block);
        len += block.len();
        at += code;
        if code < 255 && at < encoded.len() {
            *out.get_mut(len).ok_or(WireError::TooLong(encoded.len()))? = 0;
            len += 1;
        }
    }
    Ok(len)
}

/// The frames of `stream`, split at each `0x00`: (the offset of the frame's first byte, its
/// COBS bytes, or the error of an over-long one). A last frame without its `0x00` (the stream
/// cut, or still being written) is not yielded: [`rest`](Frames::rest) gives it.
pub fn frames(stream: &[u8]) -> Frames<'_> {
    Frames { stream, at: 0 }
}

/// See [`frames`].
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    stream: &'a [u8],
    at: usize,
}

impl Frames<'_> {
    /// Where the bytes not yet framed start: a frame still incomplete.
    pub fn rest(&self) -> usize {
        self.at
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = (usize, Result<&'a [u8], WireError>);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let from = self.at;
            let end = from + self.stream.get(from..)?.iter().position(|&b| b == 0)?;
            self.at = end + 1;
            if end == from {
                continue; // delimiters back to back: an empty frame, skipped
            }
            let frame = &self.stream[from..end];
            let too_long = frame.len() > FRAME_MAX + FRAME_MAX / 254 + 2;
            return Some((from, if too_long { Err(WireError::TooLong(frame.len())) } else { Ok(frame) }));
        }
    }
}

/// One decoded frame.
#[derive(Clone, Copy, Debug)]
pub enum Frame<'a> {
    /// A track's spans.
    Spans(SpansFrame<'a>),
    /// The program, its counter, tracks and code.
    Info(InfoFrame<'a>),
    /// A piece of the site descriptors.
    Sites(SitesFrame<'a>),
    /// A track's end, with its totals.
    End(EndFrame),
}

impl<'a> Frame<'a> {
    /// Decodes the COBS frame `encoded` into `scratch` (at least [`FRAME_MAX`] + 4 bytes) and
    /// checks its CRC.
    pub fn decode(encoded: &[u8], scratch: &'a mut [u8]) -> Result<Frame<'a>, WireError> {
        let len = cobs_decode(encoded, scratch)?;
        if len > FRAME_MAX + 4 {
            return Err(WireError::TooLong(len));
        }
        let payload = &scratch[..len];
        let (body, crc) = payload.split_at_checked(len.checked_sub(4).ok_or(WireError::Crc)?).ok_or(WireError::Crc)?;
        if crate::crc::hash(body).to_le_bytes() != crc {
            return Err(WireError::Crc);
        }
        match body.first() {
            Some(&KIND_SPANS) => {
                let mut at = 1;
                let track = get_varint(body, &mut at)?;
                let sent = get_varint(body, &mut at)?;
                let dropped = get_varint(body, &mut at)?;
                let base = get_varint(body, &mut at)?;
                Ok(Frame::Spans(SpansFrame { track, sent, dropped, base, items: &body[at..] }))
            }
            Some(&KIND_INFO) => InfoFrame::parse(&body[1..]).map(Frame::Info),
            Some(&KIND_SITES) => SitesFrame::parse(&body[1..]).map(Frame::Sites),
            Some(&KIND_END) => {
                let mut at = 1;
                let track = get_varint(body, &mut at)?;
                let sent = get_varint(body, &mut at)?;
                let dropped = get_varint(body, &mut at)?;
                Ok(Frame::End(EndFrame { track, sent, dropped }))
            }
            Some(&k) => Err(WireError::Kind(k)),
            None => Err(WireError::Crc),
        }
    }
}

/// A spans frame: a track's spans, in ring order.
#[derive(Clone, Copy, Debug)]
pub struct SpansFrame<'a> {
    /// The track (thread id) the spans are of.
    pub track: u64,
    /// Spans of the track sent before this frame.
    pub sent: u64,
    /// Spans the target dropped before this frame (its buffer full).
    pub dropped: u64,
    /// The exit the first span's is taken from (modulo the counter's width).
    pub base: u64,
    items: &'a [u8],
}

impl<'a> SpansFrame<'a> {
    /// The spans, with exits as the sum of the differences from `base` (so a narrow counter
    /// comes out unwrapped within the frame); stops at the first error.
    pub fn records(&self) -> SpanRecords<'a> {
        SpanRecords { items: self.items, at: 0, keys: [0; FRAME_KEYS], key_count: 0, exit: self.base, failed: false }
    }
}

/// See [`SpansFrame::records`].
#[derive(Clone, Debug)]
pub struct SpanRecords<'a> {
    items: &'a [u8],
    at: usize,
    keys: [u64; FRAME_KEYS],
    key_count: usize,
    exit: u64,
    failed: bool,
}

impl SpanRecords<'_> {
    fn next_record(&mut self) -> Result<Record, WireError> {
        let head = get_varint(self.items, &mut self.at)?;
        let key = match head & 3 {
            TAG_SPAN => *self.keys[..self.key_count].get((head >> 2) as usize).ok_or(WireError::KeyIndex(head >> 2))?,
            TAG_SPAN_NEW_KEY => {
                let top = head >> 2;
                let low = get_varint(self.items, &mut self.at)?;
                if top > 0xff || low > LOW_56 {
                    return Err(WireError::Varint);
                }
                let key = top << 56 | low;
                *self.keys.get_mut(self.key_count).ok_or(WireError::TooManyKeys)? = key;
                self.key_count += 1;
                key
            }
            tag => return Err(WireError::Tag(tag)),
        };
        let delta = get_varint(self.items, &mut self.at)?;
        let duration = get_varint(self.items, &mut self.at)?;
        self.exit = self.exit.wrapping_add(delta);
        Ok(Record { key, enter: self.exit.wrapping_sub(duration), exit: self.exit })
    }
}

impl Iterator for SpanRecords<'_> {
    type Item = Result<Record, WireError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.at >= self.items.len() {
            return None;
        }
        let r = self.next_record();
        self.failed = r.is_err();
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::{vec, vec::Vec};

    use super::*;
    use crate::SliceSink;

    /// `records` encoded in 300-byte frames: (bytes written, the buffer).
    fn roundtrip(records: &[Record], bits: u32) -> (usize, [u8; 8192]) {
        let mut out = [0u8; 8192];
        let mut sink = SliceSink::new(&mut out);
        let mut enc = SpanEncoder::<300>::new(3, bits);
        enc.begin(0);
        for r in records {
            enc.send(r, &mut sink).unwrap();
        }
        enc.finish(&mut sink).unwrap();
        let n = sink.written().len();
        (n, out)
    }

    #[test]
    fn spans_come_back_as_they_went_frame_after_frame() {
        let records: Vec<Record> = (0..1000u64)
            .map(|i| Record {
                key: (i % 3) << 56 | (0x0800_0000 + (i % 7) * 0x40),
                enter: i * 1500 + 10,
                exit: i * 1500 + 10 + 1472,
            })
            .collect();
        let (n, out) = roundtrip(&records, 64);
        let (mut got, mut scratch) = (Vec::new(), [0u8; FRAME_MAX + 8]);
        let mut frame_count = 0;
        for (_, frame) in frames(&out[..n]) {
            let Ok(Frame::Spans(spans)) = Frame::decode(frame.unwrap(), &mut scratch) else { panic!("not spans") };
            assert_eq!((spans.track, spans.sent), (3, got.len() as u64));
            got.extend(spans.records().map(Result::unwrap));
            frame_count += 1;
        }
        assert!(frame_count > 10, "{frame_count} frames");
        assert_eq!(got.len(), records.len());
        assert_eq!(got[..], records[..]);
    }

    #[test]
    fn a_32_bit_counter_unwraps_and_a_reader_resyncs_after_garbage() {
        let start = u64::from(u32::MAX) - 3000;
        let records: Vec<Record> =
            (0..10u64).map(|i| Record { key: 5, enter: start + i * 1000, exit: start + i * 1000 + 900 }).collect();
        let wrapped: Vec<Record> = records
            .iter()
            .map(|r| Record { key: r.key, enter: r.enter & 0xffff_ffff, exit: r.exit & 0xffff_ffff })
            .collect();
        let (n, out) = roundtrip(&wrapped, 32);
        // Joined mid-frame: the tail of an earlier frame, its delimiter, then whole frames.
        let mut stream = vec![0x55, 0x13, 0x07, 0x00];
        stream.extend_from_slice(&out[..n]);
        let mut decoded = Vec::new();
        let mut scratch = [0u8; FRAME_MAX + 8];
        for (_, frame) in frames(&stream) {
            if let Ok(Frame::Spans(spans)) = frame.and_then(|f| Frame::decode(f, &mut scratch)) {
                decoded.extend(spans.records().map(Result::unwrap));
            }
        }
        // The exits add up past 2^32: unwrapped, as the original counter read them.
        assert_eq!(decoded.len(), 10);
        assert_eq!(decoded[9].exit - decoded[0].exit, records[9].exit - records[0].exit);
        assert!(decoded[9].exit > u64::from(u32::MAX));
    }

    #[test]
    fn an_info_frame_comes_back_as_it_went() {
        let clock = ClockInfo {
            counter: CounterKind::from_code(7),
            counter_bits: 32,
            nominal_hz: 25_000_000,
            rate_source: RateSource::from_code(3),
        };
        let info = Info {
            process_name: b"fw",
            clock,
            anchor: Anchor { ticks: 99, mono_ns: 0, real_ns: 0 },
            tracks: &[(1, 8, b"main"), (2, 0, b"SysTick")],
            code: Some((0x400, 0x3000, b"fw.elf")),
        };
        let (mut scratch, mut out) = ([0u8; 256], [0u8; 256]);
        let mut sink = SliceSink::new(&mut out);
        info.write(&mut scratch, &mut sink).unwrap();
        let written = sink.written();
        let mut back = [0u8; FRAME_MAX + 8];
        let Ok(Frame::Info(got)) = Frame::decode(&written[..written.len() - 1], &mut back) else { panic!() };
        assert_eq!((got.process_name, got.clock, got.anchor, got.code), (&b"fw"[..], clock, info.anchor, info.code));
        assert_eq!(got.tracks().collect::<Vec<_>>(), vec![(1, 8, &b"main"[..]), (2, 0, &b"SysTick"[..])]);
        let mut tiny = [0u8; 20];
        assert!(matches!(info.write(&mut tiny, &mut sink), Err(InfoError::TooLong)));
    }

    #[test]
    fn cobs_survives_zeros_and_long_runs() {
        for data in [vec![0u8; 3], vec![1u8; 600], (0..=255u8).cycle().take(1000).collect::<Vec<_>>(), vec![]] {
            let mut out = [0u8; 4096];
            let mut sink = SliceSink::new(&mut out);
            cobs_write(&data, &mut sink).unwrap();
            let written = sink.written();
            assert_eq!(written.iter().filter(|&&b| b == 0).count(), 1);
            let mut back = [0u8; 2048];
            let n = cobs_decode(&written[..written.len() - 1], &mut back).unwrap();
            assert_eq!(&back[..n], &data[..]);
        }
    }

    #[test]
    fn a_damaged_frame_fails_its_crc() {
        let records = [Record { key: 1, enter: 0, exit: 10 }];
        let (n, mut out) = roundtrip(&records, 64);
        out[3] ^= 0x04;
        let mut scratch = [0u8; FRAME_MAX + 8];
        let (_, frame) = frames(&out[..n]).next().unwrap();
        assert!(matches!(Frame::decode(frame.unwrap(), &mut scratch), Err(WireError::Crc | WireError::Cobs)));
    }
}
#[cfg(test)]
mod cobs_shapes {
    extern crate std;
    use super::*;
    use crate::SliceSink;

    #[test]
    fn every_place_of_a_zero_in_frames_up_to_300_bytes_comes_back() {
        for len in 1..300usize {
            for zero in 0..len {
                let mut data = std::vec![7u8; len];
                data[zero] = 0;
                let mut out = [0u8; 1024];
                let mut sink = SliceSink::new(&mut out);
                cobs_write(&data, &mut sink).unwrap();
                let w = sink.written();
                let mut back = [0u8; 1024];
                let n = cobs_decode(&w[..w.len() - 1], &mut back).unwrap();
                assert_eq!(&back[..n], &data[..], "len {len} zero {zero}");
            }
        }
    }
}
