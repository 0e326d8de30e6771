//! The wire stream read as its bytes arrive: whole frames decoded, a
//! partial one kept for the next bytes, each track's spans unwrapped across
//! frames and handed out in batches, every loss counted.
//!
//! Design constraints:
//! - Bounded: a run of bytes with no frame delimiter longer than a frame can
//!   be is dropped (counted as a damaged frame), and the frames that come
//!   before the first info frame (nothing yet says how to read them) are
//!   kept up to [`EARLY_MAX`] bytes, then counted lost.
//! - Exact losses: a gap in a track's `sent` is lost on the link; its
//!   `dropped` is what the target could not buffer; an end frame states
//!   both totals, so even a track's last frames are accounted for.

use std::collections::BTreeMap;

use ringtrace_format::wire::{EndFrame, FRAME_MAX, Frame, InfoFrame, SpansFrame, WireError, frames};
use ringtrace_format::{Anchor, ClockInfo, Record};

/// The most bytes of frames kept while no info frame has come.
pub const EARLY_MAX: usize = 16 << 20;
/// The most bytes with no delimiter kept: a frame this long cannot be whole.
const PARTIAL_MAX: usize = FRAME_MAX + FRAME_MAX / 254 + 8;

/// The info frame's contents, owned.
#[derive(Clone, Debug)]
pub struct Info {
    /// The program's name.
    pub process_name: Vec<u8>,
    /// The counter the spans were timed with (its width as the target sent it).
    pub clock: ClockInfo,
    /// The anchor as sent (its reading modulo the counter's width).
    pub anchor: Anchor,
    /// (track id, ring flags, name) of each track.
    pub tracks: Vec<(u64, u32, Vec<u8>)>,
    /// (start, end, path) of the firmware's code.
    pub code: Option<(u64, u64, Vec<u8>)>,
}

impl Info {
    fn of(frame: &InfoFrame<'_>) -> Self {
        Info {
            process_name: frame.process_name.to_vec(),
            clock: frame.clock,
            anchor: frame.anchor,
            tracks: frame.tracks().map(|(id, flags, name)| (id, flags, name.to_vec())).collect(),
            code: frame.code.map(|(start, end, path)| (start, end, path.to_vec())),
        }
    }

    /// The mask of the counter's width.
    pub fn mask(&self) -> u64 {
        let bits = self.clock.counter_bits;
        if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 }
    }
}

/// One track's state.
#[derive(Debug, Default)]
pub struct TrackState {
    /// Spans read since the last [`WireReader::take`].
    pub records: Vec<Record>,
    /// Spans read in all.
    pub received: u64,
    /// The last exit, unwrapped.
    last_exit: Option<u64>,
    /// The `sent` the next frame should state.
    next_sent: Option<u64>,
    /// Spans the link lost: gaps in `sent` (and, at the end frame, what its total says).
    pub lost: u64,
    /// Spans the target dropped, as its latest frame says.
    pub dropped: u64,
    /// Its end frame came.
    pub ended: bool,
}

/// A wire stream being read.
#[derive(Debug)]
pub struct WireReader {
    /// Bytes after the last delimiter: a frame still arriving.
    partial: Vec<u8>,
    /// The stream offset of `partial`'s first byte.
    offset: u64,
    scratch: Vec<u8>,
    info: Option<Info>,
    /// Frames (encoded, with their offsets) that came before any info frame.
    early: Vec<(u64, Vec<u8>)>,
    early_bytes: usize,
    tracks: BTreeMap<u64, TrackState>,
    /// The site descriptors: (base, bytes, which bytes came), from the first section stated.
    sites: Option<(u64, Vec<u8>, Vec<bool>)>,
    damaged: u64,
    damaged_at: Option<u64>,
    /// The stream's first bytes, when they were no frame: how many.
    head: Option<u64>,
    /// Frames read whole.
    pub frames: u64,
    /// What the reading found wrong, one line each (besides the counts).
    notes: Vec<String>,
    /// The anchor placed on the unwrapped counter, once the first span came.
    anchor: Option<Anchor>,
}

impl Default for WireReader {
    fn default() -> Self {
        Self::new()
    }
}

impl WireReader {
    /// A reader at the start of a stream.
    pub fn new() -> Self {
        WireReader {
            partial: Vec::new(),
            offset: 0,
            scratch: vec![0; FRAME_MAX + 8],
            info: None,
            early: Vec::new(),
            early_bytes: 0,
            tracks: BTreeMap::new(),
            sites: None,
            damaged: 0,
            damaged_at: None,
            head: None,
            frames: 0,
            notes: Vec::new(),
            anchor: None,
        }
    }

    /// Reads `bytes`, the stream's next: every frame they complete.
    pub fn feed(&mut self, bytes: &[u8]) {
        let mut data = std::mem::take(&mut self.partial);
        data.extend_from_slice(bytes);
        let mut all = frames(&data);
        let mut list = Vec::new();
        for (at, frame) in all.by_ref() {
            list.push((self.offset + at as u64, frame.map(<[u8]>::to_vec)));
        }
        let used = all.rest();
        for (offset, frame) in list {
            match frame {
                Ok(frame) => self.frame(offset, &frame),
                Err(e) => self.damage(offset, if let WireError::TooLong(n) = e { n } else { 0 }),
            }
        }
        self.offset += used as u64;
        data.drain(..used);
        if data.len() > PARTIAL_MAX {
            // No delimiter where one must have been: what came is no frame.
            self.damage(self.offset, data.len());
            self.offset += data.len() as u64;
            data.clear();
        }
        self.partial = data;
    }

    /// What came at `offset` (`len` bytes) is no frame: damage — unless it is the stream's start,
    /// where a capture begun mid-frame, or a server's greeting before the target's bytes (J-Link's
    /// RTT telnet banner), leaves bytes that are no frame: skipped, and said as a note.
    fn damage(&mut self, offset: u64, len: usize) {
        if offset == 0 {
            self.head = Some(len as u64);
            return;
        }
        self.damaged += 1;
        self.damaged_at.get_or_insert(offset);
    }

    /// One encoded frame at `offset`.
    fn frame(&mut self, offset: u64, encoded: &[u8]) {
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut replay = false;
        match Frame::decode(encoded, &mut scratch) {
            Ok(Frame::Info(info)) => {
                self.frames += 1;
                if self.info.is_none() {
                    self.info = Some(Info::of(&info));
                    replay = true;
                }
            }
            Ok(Frame::Sites(piece)) => {
                self.frames += 1;
                // Bounded by SITES_MAX, checked when the frame was decoded.
                let len = piece.len as usize;
                let (base, bytes, came) =
                    self.sites.get_or_insert_with(|| (piece.base, vec![0; len], vec![false; len]));
                if *base == piece.base && bytes.len() == len {
                    let range = piece.offset as usize..piece.offset as usize + piece.bytes.len();
                    bytes[range.clone()].copy_from_slice(piece.bytes);
                    came[range].fill(true);
                }
            }
            Ok(Frame::Spans(_) | Frame::End(_)) if self.info.is_none() => {
                if self.early_bytes + encoded.len() <= EARLY_MAX {
                    self.early_bytes += encoded.len();
                    self.early.push((offset, encoded.to_vec()));
                } else {
                    self.damage(offset, encoded.len());
                }
            }
            Ok(Frame::Spans(spans)) => {
                self.frames += 1;
                self.spans(offset, spans);
            }
            Ok(Frame::End(end)) => {
                self.frames += 1;
                self.end(end);
            }
            Err(_) => self.damage(offset, encoded.len()),
        }
        self.scratch = scratch;
        if replay {
            // The frames before the first info frame are read with it now.
            self.early_bytes = 0;
            for (at, early) in std::mem::take(&mut self.early) {
                self.frame(at, &early);
            }
        }
    }

    fn spans(&mut self, offset: u64, spans: SpansFrame<'_>) {
        let mask = self.info.as_ref().map_or(u64::MAX, Info::mask);
        let t = self.tracks.entry(spans.track).or_default();
        // A track's first frame read counts from 0: spans sent before it were lost on the link,
        // or sent before the capture began.
        let next = t.next_sent.unwrap_or(0);
        if spans.sent > next {
            t.lost = t.lost.saturating_add(spans.sent - next);
        } else if spans.sent < next {
            self.notes.push(format!(
                "track {}: a frame at byte {offset} restarts at span {} after {next}: the target restarted; its spans follow the earlier ones",
                spans.track, spans.sent
            ));
        }
        let mut frame = spans;
        frame.base = match t.last_exit {
            Some(last) => last.wrapping_add(spans.base.wrapping_sub(last) & mask),
            None => spans.base,
        };
        let mut read = 0u64;
        for r in frame.records() {
            match r {
                Ok(r) => {
                    t.last_exit = Some(r.exit);
                    t.records.push(r);
                    read += 1;
                }
                Err(e) => {
                    self.notes.push(format!(
                        "track {}: the frame at byte {offset} stops reading at a bad item ({e}); its later spans are lost",
                        spans.track
                    ));
                    break;
                }
            }
        }
        t.received = t.received.saturating_add(read);
        t.next_sent = Some(spans.sent.saturating_add(read));
        t.dropped = t.dropped.max(spans.dropped);
        if self.anchor.is_none()
            && let (Some(info), Some(first)) = (&self.info, t.records.first())
        {
            // The anchor's reading, unwrapped to the one nearest the first span.
            let ahead = info.anchor.ticks.wrapping_sub(first.exit) & mask;
            let ticks = if ahead <= mask / 2 {
                first.exit.wrapping_add(ahead)
            } else {
                first.exit.wrapping_sub(mask - ahead + 1)
            };
            self.anchor = Some(Anchor { ticks, ..info.anchor });
        }
    }

    fn end(&mut self, end: EndFrame) {
        let t = self.tracks.entry(end.track).or_default();
        let next = t.next_sent.unwrap_or(0);
        t.lost = t.lost.saturating_add(end.sent.saturating_sub(next));
        t.next_sent = Some(end.sent.max(next));
        t.dropped = t.dropped.max(end.dropped);
        t.ended = true;
    }

    /// The info frame, once one came.
    pub fn info(&self) -> Option<&Info> {
        self.info.as_ref()
    }

    /// The anchor on the unwrapped counter (the sent one before any span came).
    pub fn anchor(&self) -> Option<Anchor> {
        self.anchor.or(self.info.as_ref().map(|i| i.anchor))
    }

    /// The tracks read so far, by id.
    pub fn tracks(&self) -> &BTreeMap<u64, TrackState> {
        &self.tracks
    }

    /// Each track's spans read since the last call, by track id.
    pub fn take(&mut self) -> BTreeMap<u64, Vec<Record>> {
        self.tracks.iter_mut().map(|(&id, t)| (id, std::mem::take(&mut t.records))).collect()
    }

    /// Whether the stream said it ended: an info frame came, and an end frame for each of its
    /// tracks.
    pub fn ended(&self) -> bool {
        self.info
            .as_ref()
            .is_some_and(|info| info.tracks.iter().all(|(id, _, _)| self.tracks.get(id).is_some_and(|t| t.ended)))
    }

    /// The site descriptors, when every byte of them came.
    pub fn sites(&self) -> Option<(u64, &[u8])> {
        let (base, bytes, came) = self.sites.as_ref()?;
        came.iter().all(|&c| c).then_some((*base, bytes.as_slice()))
    }

    /// Bytes read, whole frames or not.
    pub fn bytes(&self) -> u64 {
        self.offset + self.partial.len() as u64
    }

    /// What is worth knowing but lost nothing the stream says it sent, one line each: the
    /// stream's first bytes skipped.
    pub fn notes(&self) -> Vec<String> {
        self.head
            .map(|n| {
                format!(
                    "the stream's first {n} bytes are no frame (a capture begun in the middle of one, or a \
                     server's greeting such as J-Link's RTT banner): skipped"
                )
            })
            .into_iter()
            .collect()
    }

    /// What was lost or wrong, one line each, at the end of the stream (or where it stops
    /// being read): damaged frames, a cut last frame, each track's spans lost on the link,
    /// missing site descriptors, frames with no info frame to read them by.
    pub fn losses(&self) -> Vec<String> {
        let mut losses = self.notes.clone();
        if self.damaged > 0 {
            losses.push(format!(
                "{} damaged frame(s) skipped, the first at byte {}: their spans are counted as lost on the link",
                self.damaged,
                self.damaged_at.unwrap_or(0)
            ));
        }
        if !self.partial.is_empty() {
            losses.push(format!(
                "the stream ends inside a frame: its last {} bytes are not a whole frame (the capture was cut, or is still being written)",
                self.partial.len()
            ));
        }
        if !self.early.is_empty() {
            losses.push(format!(
                "{} frame(s) came with no info frame to read them by (the target sends one at its start and every so often)",
                self.early.len()
            ));
        }
        for (id, t) in &self.tracks {
            if t.lost > 0 {
                losses.push(format!(
                    "track {id}: {} span(s) lost on the link (frames missing or damaged, or sent before the capture began)",
                    t.lost
                ));
            }
        }
        if self.sites.as_ref().is_some_and(|(_, _, came)| !came.iter().all(|&c| c)) {
            losses
                .push("the site descriptors are not all in the stream: named spans they name show as ?? (0x…)".into());
        }
        losses
    }
}
