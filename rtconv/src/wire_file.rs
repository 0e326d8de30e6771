//! A file of the wire encoding (`ringtrace_format::wire`: what a firmware
//! streams over a UART or RTT, captured to a file) read as a dump.
//!
//! Design constraints:
//! - One model: the stream's spans are written as an ordinary dump (in
//!   memory, reason "streamed"), which every command then reads as it reads
//!   a dump; what the reading lost is in its crash section's losses (thread
//!   0, no signal), so `convert` states it and exits 3.
//! - Untrusted input: frames that fail their CRC are skipped and counted;
//!   the spans the link lost are the gaps in each track's `sent`, the spans
//!   the target dropped its `dropped`; a last frame without its delimiter
//!   (a capture cut, or still being written) is left out and said.
//! - The counter is unwrapped across frames, taking less than one counter
//!   period between a track's frames.

use std::collections::BTreeMap;

use ringtrace_format::layout::{MODULE_FLAG_MAIN, RING_FLAG_STOP_WHEN_FULL};
use ringtrace_format::wire::{FRAME_MAX, Frame, InfoFrame, frames};
use ringtrace_format::{Anchor, ClockInfo, DumpReason, IoSink, MetaInfo, Module, Record, RingInfo, Writer};

/// How far into a file a frame is looked for, to tell a stream from other files.
const SNIFF: usize = 64 << 10;

/// Whether `bytes` look like a wire stream: not a dump or an ELF file, and a frame with a good
/// CRC among their first 64 KiB.
pub fn is_wire(bytes: &[u8]) -> bool {
    if bytes.starts_with(b"RNGTRACE") || bytes.starts_with(b"\x7fELF") {
        return false;
    }
    let head = &bytes[..bytes.len().min(SNIFF)];
    let mut scratch = vec![0u8; FRAME_MAX + 8];
    frames(head).any(|(_, f)| f.is_ok_and(|f| Frame::decode(f, &mut scratch).is_ok()))
}

/// Why a stream yields no dump.
#[derive(Debug, thiserror::Error)]
pub enum WireFileError {
    /// Spans but nothing saying how to read them.
    #[error(
        "a wire stream with no info frame: nothing says which counter timed its spans (a target sends one at its start and every so often); capture from the target's start, or for longer"
    )]
    NoInfo,
    /// The in-memory dump could not be written (cannot happen with a `Vec`).
    #[error("cannot write the dump: {0}")]
    Write(String),
}

/// One track's spans as read so far.
#[derive(Default)]
struct Track {
    records: Vec<Record>,
    /// The last exit, unwrapped.
    last_exit: Option<u64>,
    /// The `sent` the next frame should state.
    next_sent: Option<u64>,
    /// Spans the link lost: gaps in `sent`.
    lost: u64,
    /// Spans the target dropped, as its last frame says.
    dropped: u64,
}

/// Reads the wire stream `bytes` and writes its spans as a dump.
pub fn to_dump(bytes: &[u8]) -> Result<Vec<u8>, WireFileError> {
    let mut scratch = vec![0u8; FRAME_MAX + 8];
    let mut losses = Vec::new();
    // The first info frame tells how to read every spans frame, those before it too.
    let mut probe = vec![0u8; FRAME_MAX + 8];
    let mut is_info = |f: &[u8]| matches!(Frame::decode(f, &mut probe), Ok(Frame::Info(_)));
    let info_bytes = frames(bytes).find_map(|(_, f)| f.ok().filter(|f| is_info(f))).ok_or(WireFileError::NoInfo)?;
    let mut info_scratch = vec![0u8; FRAME_MAX + 8];
    let Ok(Frame::Info(info)) = Frame::decode(info_bytes, &mut info_scratch) else { return Err(WireFileError::NoInfo) };
    let bits = info.clock.counter_bits;
    let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits) - 1 };

    let mut tracks: BTreeMap<u64, Track> = BTreeMap::new();
    // The site descriptors, from the first section stated: (base, bytes, which bytes came).
    let mut sites: Option<(u64, Vec<u8>, Vec<bool>)> = None;
    let (mut damaged, mut damaged_at) = (0u64, None);
    let mut all = frames(bytes);
    for (offset, frame) in all.by_ref() {
        let spans = match frame.and_then(|f| Frame::decode(f, &mut scratch)) {
            Ok(Frame::Spans(spans)) => spans,
            Ok(Frame::Info(_)) => continue,
            Ok(Frame::Sites(piece)) => {
                // Bounded by SITES_MAX, checked when the frame was decoded.
                let len = piece.len as usize;
                let (base, bytes, came) = sites.get_or_insert_with(|| (piece.base, vec![0; len], vec![false; len]));
                if *base == piece.base && bytes.len() == len {
                    let range = piece.offset as usize..piece.offset as usize + piece.bytes.len();
                    bytes[range.clone()].copy_from_slice(piece.bytes);
                    came[range].fill(true);
                }
                continue;
            }
            Err(_) => {
                damaged += 1;
                damaged_at.get_or_insert(offset);
                continue;
            }
        };
        let t = tracks.entry(spans.track).or_default();
        // A track's first frame read counts from 0: spans sent before it were lost on the link, or
        // sent before the capture began.
        let next = t.next_sent.unwrap_or(0);
        if spans.sent > next {
            t.lost = t.lost.saturating_add(spans.sent - next);
        } else if spans.sent < next {
            losses.push(format!(
                "track {}: a frame at byte {offset} restarts at span {} after {next}: the target restarted; its spans follow the earlier ones",
                spans.track, spans.sent
            ));
        }
        let mut frame = spans;
        frame.base = match t.last_exit {
            Some(last) => last.wrapping_add(spans.base.wrapping_sub(last) & mask),
            None => spans.base,
        };
        let before = t.records.len();
        for r in frame.records() {
            match r {
                Ok(r) => t.records.push(r),
                Err(e) => {
                    losses.push(format!(
                        "track {}: the frame at byte {offset} stops reading at a bad item ({e}); its later spans are lost",
                        spans.track
                    ));
                    break;
                }
            }
        }
        let read = (t.records.len() - before) as u64;
        t.last_exit = t.records.last().map(|r| r.exit).or(t.last_exit);
        t.next_sent = Some(spans.sent.saturating_add(read));
        t.dropped = t.dropped.max(spans.dropped);
    }
    if damaged > 0 {
        losses.push(format!(
            "{damaged} damaged frame(s) skipped, the first at byte {}: their spans are counted as lost on the link",
            damaged_at.unwrap_or(0)
        ));
    }
    let tail = bytes.len() - all.rest();
    if tail > 0 {
        losses.push(format!(
            "the stream ends inside a frame: its last {tail} bytes are not a whole frame (the capture was cut, or is still being written)"
        ));
    }
    for (id, t) in &tracks {
        if t.lost > 0 {
            losses.push(format!(
                "track {id}: {} span(s) lost on the link (frames missing or damaged, or sent before the capture began)",
                t.lost
            ));
        }
    }
    // Pieces sent again with each info frame fill the same bytes: whole once every byte came.
    let whole = |came: &[bool]| came.iter().all(|&c| c);
    if sites.as_ref().is_some_and(|(_, _, came)| !whole(came)) {
        losses.push("the site descriptors are not all in the stream: named spans they name show as ?? (0x…)".into());
    }
    let sites = sites.filter(|(_, _, came)| whole(came)).map(|(base, bytes, _)| (base, bytes));
    write(&info, mask, &tracks, sites.as_ref(), &losses).map_err(|e| WireFileError::Write(e.to_string()))
}

/// The dump of `tracks`, read with `info`.
fn write(
    info: &InfoFrame<'_>,
    mask: u64,
    tracks: &BTreeMap<u64, Track>,
    sites: Option<&(u64, Vec<u8>)>,
    losses: &[String],
) -> Result<Vec<u8>, ringtrace_format::WriteError<std::io::Error>> {
    let mut w = Writer::new(IoSink(Vec::new()), 8)?;
    w.meta(&MetaInfo {
        pid: 0,
        reason: DumpReason::Stream,
        producer: b"ringtrace",
        producer_version: b"(read from a wire stream by rtconv)",
        process_name: info.process_name,
    })?;
    // The exits are unwrapped: a 64-bit counter from here on. The anchor's reading is unwrapped
    // to the one nearest the first span.
    let clock = ClockInfo { counter_bits: 64, ..info.clock };
    let first = tracks.values().filter_map(|t| t.records.first()).map(|r| r.exit).min();
    let anchor = match first {
        Some(first) => {
            let ahead = info.anchor.ticks.wrapping_sub(first) & mask;
            let ticks =
                if ahead <= mask / 2 { first.wrapping_add(ahead) } else { first.wrapping_sub(mask - ahead + 1) };
            Anchor { ticks, ..info.anchor }
        }
        None => info.anchor,
    };
    w.clock(&clock, &[anchor])?;
    let module = info.code.map(|(start, end, path)| Module {
        start,
        end,
        bias: 0,
        flags: MODULE_FLAG_MAIN,
        build_id: &[],
        path,
    });
    w.modules(module.as_slice())?;
    if let Some((base, bytes)) = sites {
        w.sites(*base, bytes)?;
    }
    let named: BTreeMap<u64, (u32, &[u8])> = info.tracks().map(|(id, flags, name)| (id, (flags, name))).collect();
    for (id, t) in tracks {
        let (flags, name) = named.get(id).copied().unwrap_or((0, b""));
        let count = t.records.len() as u64;
        let ring = RingInfo {
            tid: *id,
            capacity: count.next_power_of_two().max(1),
            written: count,
            dropped: t.dropped,
            aux: 0,
            // The target's buffer drops what the link cannot take: a stop-when-full ring's way.
            flags: flags | RING_FLAG_STOP_WHEN_FULL,
            name,
        };
        w.ring(&ring, &t.records, &[])?;
    }
    if !losses.is_empty() {
        w.crash(0, 0, b"", losses.join("\n").as_bytes())?;
    }
    Ok(w.finish()?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_format::wire::{Info, SpanEncoder};
    use ringtrace_format::{CounterKind, RateSource};

    fn stream(records: &[Record], bits: u32) -> Vec<u8> {
        let mut sink = IoSink(Vec::new());
        let clock = ClockInfo {
            counter: CounterKind::User,
            counter_bits: bits,
            nominal_hz: 1_000_000,
            rate_source: RateSource::User,
        };
        let info = Info {
            process_name: b"fw",
            clock,
            anchor: Anchor { ticks: records[0].enter, mono_ns: 0, real_ns: 0 },
            tracks: &[(1, 0, b"main")],
            code: None,
        };
        info.write(&mut [0u8; 256], &mut sink).unwrap();
        let mut enc = SpanEncoder::<128>::new(1, bits);
        enc.begin(0);
        for r in records {
            enc.send(r, &mut sink).unwrap();
        }
        enc.finish(&mut sink).unwrap();
        sink.0
    }

    fn rings(dump: &[u8]) -> (Vec<Record>, Vec<String>) {
        let dump = ringtrace_format::Dump::parse(dump).unwrap();
        let (mut records, mut losses) = (Vec::new(), Vec::new());
        for s in dump.sections() {
            match s.unwrap().decode().unwrap() {
                ringtrace_format::SectionData::Ring(_, r, _) => records.extend(r.iter()),
                ringtrace_format::SectionData::Crash { losses: l, .. } => {
                    losses.extend(String::from_utf8_lossy(l).lines().map(str::to_string))
                }
                _ => {}
            }
        }
        (records, losses)
    }

    #[test]
    fn a_32_bit_stream_reads_unwrapped_across_frames_and_a_lost_frame_is_counted() {
        let start = u64::from(u32::MAX) - 40_000;
        let records: Vec<Record> = (0..200u64)
            .map(|i| Record { key: 7 + i % 3, enter: start + i * 1000, exit: start + i * 1000 + 600 })
            .collect();
        let narrow: Vec<Record> = records
            .iter()
            .map(|r| Record { key: r.key, enter: r.enter & 0xffff_ffff, exit: r.exit & 0xffff_ffff })
            .collect();
        let bytes = stream(&narrow, 32);
        assert!(is_wire(&bytes));
        let (got, losses) = rings(&to_dump(&bytes).unwrap());
        assert_eq!(got, records, "unwrapped past 2^32");
        assert!(losses.is_empty(), "{losses:?}");

        // The second spans frame removed whole: its spans are lost on the link, exactly.
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == 0).map(|(i, _)| i + 1).collect();
        let (from, to) = (ends[1], ends[2]); // info, first spans frame, then this one
        let mut cut = bytes[..from].to_vec();
        cut.extend_from_slice(&bytes[to..]);
        let (got, losses) = rings(&to_dump(&cut).unwrap());
        let lost = records.len() - got.len();
        assert!(lost > 0);
        let said = format!(
            "track 1: {lost} span(s) lost on the link (frames missing or damaged, or sent before the capture began)"
        );
        assert!(losses.contains(&said), "{losses:?}");
        assert!(records.ends_with(&got[got.len() - 10..]), "the frames after the gap stay unwrapped");
    }

    #[test]
    fn no_info_frame_is_one_clear_error_and_other_files_are_not_streams() {
        let bytes = stream(&[Record { key: 1, enter: 5, exit: 9 }], 64);
        let first = bytes.iter().position(|&b| b == 0).unwrap() + 1;
        assert!(matches!(to_dump(&bytes[first..]), Err(WireFileError::NoInfo)));
        assert!(!is_wire(b"RNGTRACE and the rest"));
        assert!(!is_wire(&[0x41; 5000]));
    }
}
