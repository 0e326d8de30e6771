//! Properties of the wire encoding (proptest): random spans of a track come
//! back exactly as they went, whatever the counter's width and the frames'
//! size; arbitrary bytes, and a stream with any byte changed, never panic the
//! reader, and a changed frame is refused, not misread.

use proptest::prelude::*;
use ringtrace_format::Record;
use ringtrace_format::wire::{FRAME_MAX, Frame, SpanEncoder, frames};

mod common;

use common::VecSink;

/// Spans in exit order: (key, gap before the exit, duration), on a counter of `bits`.
fn spans(bits: u32) -> impl Strategy<Value = Vec<Record>> {
    prop::collection::vec((0u64..40, 0u64..5_000_000, 0u64..2_000_000), 1..400).prop_map(move |items| {
        let mask = if bits == 64 { u64::MAX } else { (1 << bits) - 1 };
        let mut exit = 1u64 << 40;
        items
            .into_iter()
            .map(|(key, gap, duration)| {
                exit += gap;
                let key = (key % 5) << 56 | (0x0800_0000 + key * 0x30);
                Record { key, enter: (exit - duration) & mask, exit: exit & mask }
            })
            .collect()
    })
}

fn encode<const N: usize>(records: &[Record], bits: u32) -> Vec<u8> {
    let mut sink = VecSink(Vec::new());
    let mut enc = SpanEncoder::<N>::new(9, bits);
    enc.begin(0);
    for r in records {
        enc.send(r, &mut sink).unwrap();
    }
    enc.finish(&mut sink).unwrap();
    sink.0
}

fn decode(stream: &[u8]) -> Vec<Record> {
    let mut scratch = vec![0u8; FRAME_MAX + 8];
    let mut out = Vec::new();
    for (_, frame) in frames(stream) {
        if let Ok(Frame::Spans(spans)) = frame.and_then(|f| Frame::decode(f, &mut scratch)) {
            out.extend(spans.records().map_while(Result::ok));
        }
    }
    out
}

proptest! {
    #[test]
    fn spans_come_back_exactly(bits in prop::sample::select(vec![24u32, 32, 64]), records in spans(64)) {
        let mask = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
        let narrowed: Vec<Record> =
            records.iter().map(|r| Record { key: r.key, enter: r.enter & mask, exit: r.exit & mask }).collect();
        for stream in [encode::<96>(&narrowed, bits), encode::<1024>(&narrowed, bits)] {
            let back = decode(&stream);
            prop_assert_eq!(back.len(), narrowed.len());
            for (b, r) in back.iter().zip(&narrowed) {
                prop_assert_eq!((b.key, b.enter & mask, b.exit & mask), (r.key, r.enter, r.exit));
            }
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..3000)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn a_changed_byte_loses_at_most_its_frame(records in spans(64), at in any::<prop::sample::Index>(), flip in 1u8..) {
        let mut stream = encode::<256>(&records, 64);
        let whole = decode(&stream).len();
        let i = at.index(stream.len());
        stream[i] ^= flip;
        let back = decode(&stream);
        // What is still read is a run of the original spans (a changed frame is refused, and its
        // neighbours may merge with it when the change hit a delimiter), never a span made up.
        prop_assert!(back.len() <= whole);
        for r in &back {
            prop_assert!(records.contains(r), "{:?} is not a span that was sent", r);
        }
    }
}
