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
//! - Read whole ([`to_dump`]) or as it arrives ([`WireReader`], whose batches
//!   [`dump_of`] writes as dumps: `rtconv convert --follow`, stdin, TCP).

mod reader;

use std::collections::BTreeMap;

use ringtrace_format::layout::{MODULE_FLAG_MAIN, RING_FLAG_STOP_WHEN_FULL};
use ringtrace_format::wire::{FRAME_MAX, Frame, frames};
use ringtrace_format::{Anchor, ClockInfo, DumpReason, IoSink, MetaInfo, Module, Record, RingInfo, Writer};

pub use reader::{Info, TrackState, WireReader};

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

/// Reads the wire stream `bytes` and writes its spans as a dump.
pub fn to_dump(bytes: &[u8]) -> Result<Vec<u8>, WireFileError> {
    let mut reader = WireReader::new();
    reader.feed(bytes);
    let tracks = reader.take();
    dump_of(&reader, &tracks, &reader.losses(), true)
}

/// The dump of `tracks`' spans (each track's, by id: a batch taken from `reader`), read with
/// the info `reader` has, stating `losses` (none: no crash section) and, if `whole` (the dump of
/// everything read, not a part of a live capture), what each track's target dropped and the
/// reader's notes.
pub fn dump_of(
    reader: &WireReader,
    tracks: &BTreeMap<u64, Vec<Record>>,
    losses: &[String],
    whole: bool,
) -> Result<Vec<u8>, WireFileError> {
    let info = reader.info().ok_or(WireFileError::NoInfo)?;
    let anchor = reader.anchor().unwrap_or(info.anchor);
    write(info, anchor, reader, tracks, losses, whole).map_err(|e| WireFileError::Write(e.to_string()))
}

/// The dump of `tracks`, read with `info`.
fn write(
    info: &Info,
    anchor: Anchor,
    reader: &WireReader,
    tracks: &BTreeMap<u64, Vec<Record>>,
    losses: &[String],
    whole: bool,
) -> Result<Vec<u8>, ringtrace_format::WriteError<std::io::Error>> {
    let mut w = Writer::new(IoSink(Vec::new()), 8)?;
    w.meta(&MetaInfo {
        pid: 0,
        reason: DumpReason::Stream,
        producer: b"ringtrace",
        producer_version: b"(read from a wire stream by rtconv)",
        process_name: &info.process_name,
    })?;
    // The exits are unwrapped: a 64-bit counter from here on, the anchor placed on it.
    let clock = ClockInfo { counter_bits: 64, ..info.clock };
    w.clock(&clock, &[anchor])?;
    let module = info.code.as_ref().map(|(start, end, path)| Module {
        start: *start,
        end: *end,
        bias: 0,
        flags: MODULE_FLAG_MAIN,
        build_id: &[],
        path,
    });
    w.modules(module.as_slice())?;
    if let Some((base, bytes)) = reader.sites() {
        w.sites(base, bytes)?;
    }
    let named: BTreeMap<u64, (u32, &[u8])> =
        info.tracks.iter().map(|(id, flags, name)| (*id, (*flags, name.as_slice()))).collect();
    for (id, records) in tracks {
        let (flags, name) = named.get(id).copied().unwrap_or((0, b""));
        let dropped = reader.tracks().get(id).filter(|_| whole).map_or(0, |t| t.dropped);
        let count = records.len() as u64;
        let ring = RingInfo {
            tid: *id,
            capacity: count.next_power_of_two().max(1),
            written: count,
            dropped,
            aux: 0,
            // The target's buffer drops what the link cannot take: a stop-when-full ring's way.
            flags: flags | RING_FLAG_STOP_WHEN_FULL,
            name,
        };
        w.ring(&ring, records, &[])?;
    }
    let notes = if whole { reader.notes() } else { Vec::new() };
    if !losses.is_empty() || !notes.is_empty() {
        w.crash(0, 0, notes.join("\n").as_bytes(), losses.join("\n").as_bytes())?;
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

    #[test]
    fn a_stream_fed_a_byte_at_a_time_reads_as_it_does_whole_and_its_end_frame_counts_the_cut_tail() {
        let records: Vec<Record> =
            (0..300u64).map(|i| Record { key: 1 + i % 5, enter: i * 100, exit: i * 100 + 40 + i % 7 }).collect();
        let mut bytes = stream(&records, 32);
        ringtrace_format::wire::write_end(1, records.len() as u64, 9, &mut IoSink(&mut bytes)).unwrap();
        let mut reader = WireReader::new();
        let mut got = Vec::new();
        for b in &bytes {
            assert!(!reader.ended());
            reader.feed(std::slice::from_ref(b));
            got.extend(reader.take().into_values().flatten());
        }
        assert!(reader.ended(), "the end frame of the info frame's one track came");
        assert_eq!(got, records);
        assert!(reader.losses().is_empty(), "{:?}", reader.losses());
        assert_eq!((reader.tracks()[&1].received, reader.tracks()[&1].dropped), (300, 9));

        // The last spans frame lost: the end frame's total counts its spans.
        let ends: Vec<usize> = bytes.iter().enumerate().filter(|(_, b)| **b == 0).map(|(i, _)| i + 1).collect();
        let (from, to) = (ends[ends.len() - 3], ends[ends.len() - 2]);
        let mut cut = bytes[..from].to_vec();
        cut.extend_from_slice(&bytes[to..]);
        let mut reader = WireReader::new();
        reader.feed(&cut);
        let kept = reader.tracks()[&1].received;
        assert!(kept < 300);
        let said = format!(
            "track 1: {} span(s) lost on the link (frames missing or damaged, or sent before the capture began)",
            300 - kept
        );
        assert_eq!(reader.losses(), vec![said]);
    }

    #[test]
    fn a_servers_greeting_before_the_stream_is_skipped_and_said_not_counted_as_damage() {
        let records: Vec<Record> = (0..50u64).map(|i| Record { key: 3, enter: i * 10, exit: i * 10 + 4 }).collect();
        let banner = b"SEGGER J-Link V7.94e - Real time terminal output\r\nProcess: JLinkGDBServerCLExe\r\n";
        let mut bytes = banner.to_vec();
        bytes.push(0); // a capture begun mid-frame ends its first piece at a delimiter too
        bytes.extend(stream(&records, 32));
        let mut reader = WireReader::new();
        reader.feed(&bytes);
        assert_eq!(reader.take()[&1], records);
        assert!(reader.losses().is_empty(), "{:?}", reader.losses());
        assert_eq!(reader.notes().len(), 1);
        assert!(reader.notes()[0].starts_with(&format!("the stream's first {} bytes are no frame", banner.len())));
        // Without the delimiter the banner runs into the info frame, which is lost with it: damage.
        let mut joined = banner.to_vec();
        joined.extend(stream(&records, 32));
        assert!(matches!(to_dump(&joined), Err(WireFileError::NoInfo)));
    }
}
