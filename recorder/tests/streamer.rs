//! The firmware streamer (`bare::stream::Streamer`) on the host, over a link
//! that takes a few bytes a call and sometimes none: every span pushed is
//! either in the stream, in ring order and with its times, or counted as
//! dropped by its ring — the count the end frame carries — and the frames,
//! decoded with the format crate's reader, say so exactly.

use ringtrace::Track;
use ringtrace::bare::Dumper;
use ringtrace::bare::stream::{Link, Streamer};
use ringtrace::ring::{Mode, Slot};
use ringtrace_format::Record;
use ringtrace_format::wire::{FRAME_MAX, Frame, frames};

static MAIN_SLOTS: [Slot; 64] = [const { Slot::new() }; 64];
static MAIN: Track = Track::with_mode(&MAIN_SLOTS, Mode::StopWhenFull);
static IRQ_SLOTS: [Slot; 16] = [const { Slot::new() }; 16];
static IRQ: Track = Track::with_mode(&IRQ_SLOTS, Mode::StopWhenFull);
static TRACKS: [(&[u8], &Track); 2] = [(b"main", &MAIN), (b"irq", &IRQ)];

/// A slow link: call `n` takes up to `n % 7 * 3` bytes (none every seventh call).
struct Slow {
    taken: Vec<u8>,
    calls: usize,
}

impl Link for Slow {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.calls += 1;
        let n = (self.calls % 7 * 3).min(bytes.len());
        self.taken.extend_from_slice(&bytes[..n]);
        n
    }
}

#[test]
fn every_span_is_streamed_or_counted_dropped_over_a_slow_link() {
    let dumper = Dumper::new::<ringtrace::clock::Fast>(b"host-firmware").tracks(&TRACKS);
    let mut streamer = Streamer::<_, 2>::new(dumper, Slow { taken: Vec::new(), calls: 0 });
    // What each ring accepted, in order (a stop-when-full ring drops a span when full).
    let mut accepted: [Vec<Record>; 2] = [Vec::new(), Vec::new()];
    let mut t = 1_000u64;
    for i in 0..20_000u64 {
        let (track, which) = if i % 5 == 4 { (&IRQ, 1) } else { (&MAIN, 0) };
        let r = Record { key: 0x1000 + i % 9, enter: t, exit: t + 10 + i % 300 };
        t += 400 + i % 1000;
        let before = track.ring().dropped();
        track.ring().push(r.key, r.enter, r.exit);
        if track.ring().dropped() == before {
            accepted[which].push(r);
        }
        if i % 3 == 0 {
            streamer.poll();
        }
    }
    while !streamer.end() {}
    let dropped = [MAIN.ring().dropped(), IRQ.ring().dropped()];
    assert!(dropped.iter().all(|&d| d > 0), "a link this slow makes both rings drop: {dropped:?}");

    // Read back: each track's spans unwrapped from its frames' bases, the end frames' totals.
    let stream = std::mem::take(&mut streamer.link().taken);
    let mut scratch = vec![0u8; FRAME_MAX + 8];
    let mut got: [Vec<Record>; 2] = [Vec::new(), Vec::new()];
    let mut ends = [None, None];
    let mut info = 0;
    for (_, frame) in frames(&stream) {
        match Frame::decode(frame.unwrap(), &mut scratch).unwrap() {
            Frame::Spans(spans) => {
                let i = spans.track as usize - 1;
                assert_eq!(spans.sent, got[i].len() as u64, "no frame lost or repeated");
                got[i].extend(spans.records().map(Result::unwrap));
            }
            Frame::End(end) => ends[end.track as usize - 1] = Some((end.sent, end.dropped)),
            Frame::Info(_) => info += 1,
            Frame::Sites(_) => {}
        }
    }
    assert!(info >= 2, "the info frame first and again every so often");
    for i in 0..2 {
        let first_difference = got[i].iter().zip(&accepted[i]).position(|(a, b)| a != b);
        assert_eq!(
            (first_difference, got[i].len()),
            (None, accepted[i].len()),
            "track {}: every span its ring accepted, in order",
            i + 1
        );
        assert_eq!(ends[i], Some((accepted[i].len() as u64, dropped[i])), "track {}'s end frame", i + 1);
    }
    // Nothing after the end.
    assert!(streamer.end());
    assert!(streamer.link().taken.is_empty());
}
