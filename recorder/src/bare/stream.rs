//! Spans streamed while the firmware runs, in the wire encoding
//! (`ringtrace_format::wire`), to any [`Link`]: an RTT up-channel
//! ([`super::rtt`]), a UART ([`UartLink`]).
//!
//! Design constraints:
//! - Nothing changes where spans are recorded: each context (the main loop,
//!   each interrupt level) writes its own track as before; give streamed
//!   tracks stop-when-full rings (`Track::with_mode(&SLOTS, Mode::StopWhenFull)`),
//!   so when the link does not keep up a span is dropped and counted by its
//!   ring, exactly, never overwritten unseen.
//! - Never blocks: [`Streamer::poll`] hands the link what it takes now and
//!   returns; a frame the link took in part is finished on a later call. Call
//!   it from one context — the main loop's idle time, or a timer interrupt of
//!   the lowest priority that records.
//! - Self-describing: an info frame (program, clock, anchor, tracks, code) and
//!   the site descriptors go first and again every [`INFO_EVERY`] frames, so a
//!   reader that joins late can read on; [`Streamer::end`] sends each track's
//!   totals, so the reader knows what it lost even of the last frames.
//!
//! ```
//! use ringtrace::bare::stream::{Link, Streamer};
//! use ringtrace::bare::Dumper;
//! use ringtrace::ring::{Mode, Slot};
//! use ringtrace::Track;
//!
//! static SLOTS: [Slot; 64] = [const { Slot::new() }; 64];
//! static MAIN: Track = Track::with_mode(&SLOTS, Mode::StopWhenFull);
//! static TRACKS: [(&[u8], &Track); 1] = [(b"main", &MAIN)];
//!
//! /// A link that takes everything: a buffer here, a UART or RTT on a target.
//! struct Captured(Vec<u8>);
//! impl Link for Captured {
//!     fn write(&mut self, bytes: &[u8]) -> usize {
//!         self.0.extend_from_slice(bytes);
//!         bytes.len()
//!     }
//! }
//!
//! let dumper = Dumper::new::<ringtrace::clock::Fast>(b"firmware").tracks(&TRACKS);
//! let mut streamer = Streamer::<_, 1>::new(dumper, Captured(Vec::new()));
//! MAIN.ring().push(0x0800_0100, 10, 20);
//! while !streamer.end() {}
//! assert!(!streamer.link().0.is_empty());
//! ```

use ringtrace_format::wire::{self, Info, SpanEncoder};
use ringtrace_format::{Anchor, Record, SliceSink};

use super::Dumper;

/// Bytes of a spans frame before COBS: about 100 spans of the samples' workload, so a frame's
/// header, key definitions and CRC cost under a byte a span.
pub const FRAME: usize = 512;
/// A frame COBS-encoded, with its delimiter, at most.
const PENDING: usize = FRAME + FRAME / 254 + 2;
/// The most tracks a stream lists.
pub const MAX_TRACKS: usize = 8;
/// Spans frames between repeats of the info frame.
pub const INFO_EVERY: u32 = 64;

/// Where a stream's bytes go, without waiting: an RTT up-channel, a UART's transmit FIFO.
pub trait Link {
    /// Takes what it can of `bytes` now and returns how many it took (0 when it is full).
    fn write(&mut self, bytes: &[u8]) -> usize;
}

/// A [`Link`] that offers each byte to a closure, which returns whether it took it: a UART
/// whose transmit FIFO has room. `UartLink(|b| if tx_full() { false } else { put(b); true })`.
#[derive(Debug)]
pub struct UartLink<F: FnMut(u8) -> bool>(pub F);

impl<F: FnMut(u8) -> bool> Link for UartLink<F> {
    fn write(&mut self, bytes: &[u8]) -> usize {
        bytes.iter().take_while(|&&b| (self.0)(b)).count()
    }
}

/// What the stream sends when the link has room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Next {
    Info,
    /// The piece of the site descriptors that starts at this offset.
    Sites(usize),
    Spans,
    /// The end frame of this track index.
    End(usize),
}

/// Streams the tracks of a [`Dumper`] (`T` of them) to a [`Link`].
#[derive(Debug)]
pub struct Streamer<'a, L: Link, const T: usize> {
    dumper: Dumper<'a>,
    link: L,
    encoders: [SpanEncoder<FRAME>; T],
    /// A span taken from a track's ring that did not fit the frame then being built.
    carry: [Option<Record>; T],
    /// The frame being handed to the link: bytes `at..len` are still to go.
    pending: [u8; PENDING],
    len: usize,
    at: usize,
    next: Next,
    /// Spans frames sent, for the info frame's repeats.
    frames: u32,
    /// The track whose spans are taken first next time (so none starves another).
    turn: usize,
    ending: bool,
}

impl<'a, L: Link, const T: usize> Streamer<'a, L, T> {
    /// A stream of `dumper`'s tracks (thread 1, 2, … as in its dumps) to `link`, starting with
    /// the info frame.
    ///
    /// # Panics
    /// If `T` is not the number of the dumper's tracks, or more than [`MAX_TRACKS`].
    pub fn new(dumper: Dumper<'a>, link: L) -> Self {
        assert!(T == dumper.tracks.len() && T <= MAX_TRACKS, "a Streamer's T is its Dumper's track count");
        let bits = stream_bits((dumper.clock)().counter_bits);
        Streamer {
            dumper,
            link,
            encoders: core::array::from_fn(|i| SpanEncoder::new(i as u64 + 1, bits)),
            carry: [None; T],
            // A delimiter first: the first frame is found whatever the link or a probe's server
            // put before it (J-Link's RTT telnet banner, a UART's power-on noise).
            pending: [0; PENDING],
            len: 1,
            at: 0,
            next: Next::Info,
            frames: 0,
            turn: 0,
            ending: false,
        }
    }

    /// The link, to read or configure.
    pub fn link(&mut self) -> &mut L {
        &mut self.link
    }

    /// Sends whole frames while the link takes them; a frame not yet full waits for more
    /// spans. Returns whether everything ready was sent (`false`: the link is full for now).
    pub fn poll(&mut self) -> bool {
        self.run(false)
    }

    /// As [`poll`](Self::poll), and frames not yet full are sent too: call it when the link is
    /// otherwise idle, or before a pause, so the reader sees recent spans soon.
    pub fn flush(&mut self) -> bool {
        self.run(true)
    }

    /// Sends every span recorded so far, then each track's end frame (its totals sent and
    /// dropped). Call it until it returns `true`; stop recording first (spans recorded later
    /// are not sent). Later calls send nothing.
    pub fn end(&mut self) -> bool {
        self.ending = true;
        self.run(true)
    }

    fn run(&mut self, partial: bool) -> bool {
        loop {
            if self.at < self.len {
                let taken = self.link.write(&self.pending[self.at..self.len]);
                self.at += taken.min(self.len - self.at);
                if self.at < self.len {
                    return false;
                }
            }
            (self.at, self.len) = (0, 0);
            if !self.produce(partial) {
                return true;
            }
        }
    }

    /// Puts the next frame in `pending`; `false` if there is none.
    fn produce(&mut self, partial: bool) -> bool {
        let mut sink = SliceSink::new(&mut self.pending);
        match self.next {
            Next::Info => {
                let mut tracks = [(0u64, 0u32, &[][..]); MAX_TRACKS];
                for (slot, (id, &(name, track))) in tracks.iter_mut().zip((1u64..).zip(self.dumper.tracks)) {
                    *slot = (id, track.ring().flags(), name);
                }
                let d = &self.dumper;
                let mut clock = (d.clock)();
                clock.counter_bits = stream_bits(clock.counter_bits);
                let anchor = d.anchors.first().copied().unwrap_or(Anchor { ticks: (d.now)(), mono_ns: 0, real_ns: 0 });
                let code = d.modules.first().map(|m| (m.start, m.end, m.path));
                let info = Info { process_name: d.process_name, clock, anchor, tracks: &tracks[..T], code };
                // Too long for a frame (a name of hundreds of bytes): the stream goes without it.
                let _ = info.write(&mut [0u8; FRAME], &mut sink);
                self.next = if crate::sites::section().1.is_empty() { Next::Spans } else { Next::Sites(0) };
            }
            Next::Sites(offset) => {
                let (base, bytes) = crate::sites::section();
                let next =
                    wire::write_sites_piece(base, bytes, offset, &mut [0u8; FRAME], &mut sink).unwrap_or(usize::MAX);
                self.next = if next >= bytes.len() { Next::Spans } else { Next::Sites(next) };
            }
            Next::Spans => {
                let found = (0..T).map(|k| (self.turn + k) % T).find(|&i| {
                    let track = self.dumper.tracks[i].1;
                    fill(&mut self.encoders[i], &mut self.carry[i], track, partial, &mut sink)
                });
                match found {
                    Some(i) => {
                        self.turn = (i + 1) % T;
                        self.frames = self.frames.wrapping_add(1);
                        if self.frames.is_multiple_of(INFO_EVERY) {
                            self.next = Next::Info;
                        }
                    }
                    None if self.ending => {
                        self.next = Next::End(0);
                        return self.produce(partial);
                    }
                    None => return false,
                }
            }
            Next::End(i) if i < T => {
                let dropped = self.dumper.tracks[i].1.ring().dropped();
                let encoder = &self.encoders[i];
                // PENDING holds an end frame's 39 bytes.
                let _ = wire::write_end(encoder.track(), encoder.sent(), dropped, &mut sink);
                self.next = Next::End(i + 1);
            }
            Next::End(_) => return false,
        }
        self.len = sink.written().len();
        self.len > 0 || self.produce(partial)
    }
}

/// Fills `encoder`'s frame from `track`'s ring (after `carry`, a span taken before); when it is
/// full (or, if `partial`, when the ring is empty and it holds spans) finishes it into `sink`.
/// Whether a frame was finished.
fn fill<const N: usize>(
    encoder: &mut SpanEncoder<N>,
    carry: &mut Option<Record>,
    track: &crate::Track,
    partial: bool,
    sink: &mut SliceSink<'_>,
) -> bool {
    let ring = track.ring();
    loop {
        let record = match carry.take() {
            Some(r) => r,
            None => {
                let mut one = [Record::default()];
                if ring.drain(&mut one).copied == 0 {
                    break;
                }
                one[0]
            }
        };
        if encoder.count() == 0 {
            encoder.begin(ring.dropped());
        }
        if !encoder.push(&record) {
            *carry = Some(record);
            // A frame of FRAME bytes fits `pending` COBS-encoded.
            let _ = encoder.finish(sink);
            return true;
        }
    }
    if partial && encoder.count() > 0 {
        let _ = encoder.finish(sink);
        return true;
    }
    false
}

/// The counter width a stream states: as the ring keeps readings (32 bits where its words are).
fn stream_bits(bits: u32) -> u32 {
    if ringtrace_format::layout::records_compact(core::mem::size_of::<crate::ring::Word>(), bits) {
        bits.min(32)
    } else {
        bits
    }
}
