//! Layout pins, round trips and truncation behaviour of format version 1.

use core::mem::size_of;

use ringtrace_format::layout::*;
use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::*;

mod common;

use common::VecSink;

#[test]
fn on_disk_sizes_are_pinned() {
    assert_eq!(size_of::<Record>(), 24);
    assert_eq!(RECORD_SIZE, 24);
    assert_eq!(size_of::<Anchor>(), 24);
    assert_eq!(ANCHOR_SIZE, 24);
    assert_eq!(FILE_HEADER_SIZE, 32);
    assert_eq!(SECTION_HEADER_SIZE, 16);
    assert_eq!(SECTION_CRC_SIZE, 4);
    assert_eq!(SITE_HEADER_SIZE, 16);
    assert_eq!(RING_FIXED_SIZE, 48);
    assert_eq!(CALIBRATION_ENTRY_SIZE, 24);
    // An empty dump is the header plus the end marker (16 + 4 bytes, padded to 24).
    assert_eq!(END_SECTION_SIZE, 24);
    let w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    assert_eq!(w.finish().unwrap().0.len(), FILE_HEADER_SIZE + END_SECTION_SIZE);
}

fn ring_records(thread: u64, n: u64) -> Vec<Record> {
    (0..n).map(|i| Record { key: 0x4000 + thread * 16 + i % 5, enter: i * 100, exit: i * 100 + 50 + thread }).collect()
}

const SITE_LABEL: &str = "parse request";
const SITE_FILE: &str = "src/server.rs";

/// A dump with every section kind, `rings` rings and one unknown section.
fn sample_dump(rings: u64) -> Vec<u8> {
    let clock = ClockInfo {
        counter: CounterKind::X86Tsc,
        counter_bits: 64,
        nominal_hz: 2_100_000_000,
        rate_source: RateSource::Cpuid,
    };
    let anchors = [
        Anchor { ticks: 1_000, mono_ns: 5_000, real_ns: 1_700_000_000_000_000_000 },
        Anchor { ticks: 2_100_001_000, mono_ns: 1_000_005_000, real_ns: 1_700_000_001_000_000_000 },
    ];
    let (mut w, _) = DumpBuilder::new("server").pid(4242).producer("ringtrace", "0.1.0").clock(clock, &anchors).start();
    w.modules(&[
        Module {
            start: 0x1000,
            end: 0x9000,
            bias: 0x1000,
            flags: MODULE_FLAG_MAIN,
            build_id: &[0xab; 20],
            path: b"/bin/server",
        },
        Module {
            start: 0x7f00_0000,
            end: 0x7f10_0000,
            bias: 0x7f00_0000,
            flags: 0,
            build_id: b"",
            path: b"/lib/libc.so.6",
        },
    ])
    .unwrap();
    // An unknown kind, as a newer minor version might write it.
    w.begin_section(SectionKind::Unknown(77), 3).unwrap();
    w.payload(b"new").unwrap();
    w.end_section().unwrap();
    for t in 0..rings {
        let name = format!("worker-{t}");
        let records = ring_records(t, 10 + t);
        let info = RingInfo {
            tid: 100 + t,
            capacity: 64,
            written: 10 + t + t * 1000,
            dropped: t,
            aux: t / 2,
            flags: 0,
            name: name.as_bytes(),
        };
        w.ring(&info, &records, &[(0x4000 + t, 7 * t)][..(t % 2) as usize]).unwrap();
    }
    const N: usize = site_len(SITE_LABEL, SITE_FILE);
    let site: [u8; N] = encode_site(SITE_LABEL, SITE_FILE, 42);
    w.sites(0x5000, &site).unwrap();
    w.calibration(&[
        Calibration { mode: ClockMode::Fast, samples: 1001, span_cost: 40, read_cost: 30 },
        Calibration { mode: ClockMode::Serialized, samples: 1001, span_cost: 90, read_cost: 70 },
    ])
    .unwrap();
    w.dladdr(&[DladdrEntry { key: 0x1234, symbol_address: 0x1200, module: b"/bin/server", symbol: b"handle" }])
        .unwrap();
    w.unbalanced(&[Unbalanced { tid: 101, too_deep: 45, abandoned: 6 }]).unwrap();
    w.crash(101, 11, b"a note\nanother", b"a loss").unwrap();
    w.finish().unwrap().0
}

/// A ring as read back: tid, name, written, dropped, records.
type SeenRing = (u64, Vec<u8>, u64, u64, Vec<Record>);

/// A stream chunk: (stream id, first record, records written by then, records, open spans).
type SeenChunk = (u64, u64, u64, Vec<Record>, Vec<(u64, u64)>);

#[derive(Debug, Default, PartialEq)]
struct Seen {
    kinds: Vec<SectionKind>,
    chunks: Vec<SeenChunk>,
    rings: Vec<SeenRing>,
    aux: Vec<u64>,
    open: Vec<Vec<(u64, u64)>>,
    modules: Vec<(u64, Vec<u8>, Vec<u8>)>,
    anchors: Vec<Anchor>,
    pid: Option<u32>,
    site: Option<(Vec<u8>, Vec<u8>, u32)>,
    calibration: Vec<Calibration>,
    dladdr: Vec<(u64, u64, Vec<u8>, Vec<u8>)>,
    unbalanced: Vec<Unbalanced>,
    crash: Option<(u64, u32, Vec<u8>, Vec<u8>)>,
}

fn read_all(bytes: &[u8]) -> (Seen, Option<ReadError>) {
    let dump = match Dump::parse(bytes) {
        Ok(d) => d,
        Err(e) => return (Seen::default(), Some(e)),
    };
    let mut seen = Seen::default();
    for s in dump.sections() {
        let s = match s {
            Ok(s) => s,
            Err(e) => return (seen, Some(e)),
        };
        seen.kinds.push(s.kind);
        match s.decode().unwrap() {
            SectionData::Meta(m) => seen.pid = Some(m.pid),
            SectionData::Clock(_, a) => seen.anchors = a.iter().collect(),
            SectionData::Modules(m) => {
                seen.modules = m.iter().map(|m| (m.bias, m.build_id.to_vec(), m.path.to_vec())).collect()
            }
            SectionData::Ring(info, recs, open) => {
                seen.aux.push(info.aux);
                seen.open.push(open.iter().collect());
                seen.rings.push((info.tid, info.name.to_vec(), info.written, info.dropped, recs.iter().collect()))
            }
            SectionData::Sites { base, bytes } => {
                let site = decode_site(bytes, (0x5000 - base) as usize, dump.endian).unwrap();
                seen.site = Some((site.label.to_vec(), site.file.to_vec(), site.line));
            }
            SectionData::Calibration(c) => seen.calibration = c.iter().collect(),
            SectionData::Dladdr(d) => {
                seen.dladdr =
                    d.iter().map(|e| (e.key, e.symbol_address, e.module.to_vec(), e.symbol.to_vec())).collect()
            }
            SectionData::Unbalanced(u) => seen.unbalanced = u.iter().collect(),
            SectionData::Crash { tid, signal, notes, losses } => {
                seen.crash = Some((tid, signal, notes.to_vec(), losses.to_vec()))
            }
            SectionData::RingChunk(info, chunk, recs, open) => seen.chunks.push((
                chunk.stream,
                chunk.first,
                info.written,
                recs.iter().collect(),
                open.iter().collect(),
            )),
            SectionData::Anchor(a) => seen.anchors.push(a),
            SectionData::Names(_) | SectionData::End | SectionData::Unknown(_) => {}
        }
    }
    (seen, None)
}

fn check_round_trip(rings: u64) {
    let bytes = sample_dump(rings);
    let (seen, err) = read_all(&bytes);
    assert_eq!(err, None);
    assert_eq!(seen.pid, Some(4242));
    assert_eq!(seen.anchors.len(), 2);
    assert_eq!(seen.anchors[1].ticks, 2_100_001_000);
    assert_eq!(seen.modules[0], (0x1000, vec![0xab; 20], b"/bin/server".to_vec()));
    assert_eq!(seen.modules[1].2, b"/lib/libc.so.6");
    assert_eq!(seen.rings.len() as u64, rings);
    assert_eq!(seen.aux, (0..rings).map(|t| t / 2).collect::<Vec<_>>());
    // Odd-numbered rings have one open span.
    let open: Vec<Vec<(u64, u64)>> =
        (0..rings).map(|t| if t % 2 == 1 { vec![(0x4000 + t, 7 * t)] } else { vec![] }).collect();
    assert_eq!(seen.open, open);
    for (t, ring) in seen.rings.iter().enumerate() {
        let t = t as u64;
        assert_eq!(ring.0, 100 + t);
        assert_eq!(ring.1, format!("worker-{t}").into_bytes());
        assert_eq!((ring.2, ring.3), (10 + t + t * 1000, t));
        assert_eq!(ring.4, ring_records(t, 10 + t));
    }
    assert_eq!(seen.site, Some((SITE_LABEL.as_bytes().to_vec(), SITE_FILE.as_bytes().to_vec(), 42)));
    assert_eq!(seen.calibration.len(), 2);
    assert_eq!(
        seen.calibration[1],
        Calibration { mode: ClockMode::Serialized, samples: 1001, span_cost: 90, read_cost: 70 }
    );
    assert_eq!(seen.dladdr, [(0x1234, 0x1200, b"/bin/server".to_vec(), b"handle".to_vec())]);
    assert_eq!(seen.unbalanced, [Unbalanced { tid: 101, too_deep: 45, abandoned: 6 }]);
    assert_eq!(seen.crash, Some((101, 11, b"a note\nanother".to_vec(), b"a loss".to_vec())));
    assert_eq!(seen.kinds.first(), Some(&SectionKind::Meta));
    assert!(seen.kinds.contains(&SectionKind::Unknown(77)), "unknown sections are passed over, not fatal");
    assert_eq!(seen.kinds.last(), Some(&SectionKind::End));
}

#[test]
fn round_trip_one_ring() {
    check_round_trip(1);
}

#[test]
fn round_trip_eight_rings() {
    check_round_trip(8);
}

/// Cutting the file anywhere yields exactly the sections that end before the
/// cut, then a truncation error at the start of the cut section; a cut inside
/// the file header is a clean error.
#[test]
fn truncation_at_every_offset_salvages_complete_sections() {
    let full = sample_dump(8);
    let (all, _) = read_all(&full);
    // Section boundaries: where each section's header starts.
    let dump = Dump::parse(&full).unwrap();
    let bounds: Vec<(u64, u64)> = dump
        .sections()
        .map(|s| s.unwrap())
        .map(|s| (s.offset, s.offset + (SECTION_HEADER_SIZE + s.payload.len() + SECTION_CRC_SIZE) as u64))
        .collect();
    for cut in 0..full.len() {
        let (seen, err) = read_all(&full[..cut]);
        if cut as u64 >= bounds.last().unwrap().1 {
            // Only the padding after the end marker is gone: nothing is lost.
            assert_eq!(err, None);
            assert_eq!(seen, all);
            continue;
        }
        let err = err.unwrap_or_else(|| panic!("cut at {cut} read as complete"));
        if cut < FILE_HEADER_SIZE {
            assert!(seen.kinds.is_empty());
            assert!(matches!(err, ReadError::NotADump { .. } | ReadError::Truncated { offset: 0, .. }), "{cut}: {err}");
            continue;
        }
        assert!(err.is_truncation(), "cut at {cut}: {err}");
        // A cut inside the padding after a section still keeps that section.
        let complete = bounds.iter().filter(|&&(_, end)| end <= cut as u64).count();
        assert_eq!(seen.kinds.len(), complete, "cut at {cut}");
        assert_eq!(seen.kinds[..], all.kinds[..complete]);
        assert_eq!(err.offset(), bounds[complete].0.min(cut as u64), "cut at {cut}: {err}");
        assert!(err.to_string().contains("truncated"), "{err}");
    }
}

#[test]
fn every_single_bit_flip_in_a_section_is_caught() {
    let full = sample_dump(1);
    let dump = Dump::parse(&full).unwrap();
    let ring = dump.sections().map(|s| s.unwrap()).find(|s| s.kind == SectionKind::Ring).unwrap();
    let start = ring.offset as usize;
    let end = start + SECTION_HEADER_SIZE + ring.payload.len() + SECTION_CRC_SIZE;
    for byte in start..end {
        for bit in 0..8 {
            let mut bad = full.clone();
            bad[byte] ^= 1 << bit;
            let (_, err) = read_all(&bad);
            let err = err.unwrap_or_else(|| panic!("flip at {byte}.{bit} not detected"));
            // A flip in the length field may also show as truncation; both name the section start.
            assert_eq!(err.offset(), start as u64, "flip at {byte}.{bit}: {err}");
        }
    }
}

#[test]
fn header_errors_name_what_is_wrong() {
    let full = sample_dump(1);
    let err = Dump::parse(b"ELF\x7f....................................").unwrap_err();
    assert!(err.to_string().contains("not a ringtrace dump"), "{err}");

    let mut newer = full.clone();
    newer[12..14].copy_from_slice(&2u16.to_le_bytes());
    newer[14..16].copy_from_slice(&0u16.to_le_bytes());
    let err = Dump::parse(&newer).unwrap_err();
    assert_eq!(err, ReadError::UnsupportedVersion { major: 2, minor: 0 });
    assert!(err.to_string().contains("version 2.0 is newer"), "{err}");

    let mut damaged = full.clone();
    damaged[16] = 8 ^ 0x40;
    assert!(matches!(Dump::parse(&damaged).unwrap_err(), ReadError::Checksum { offset: 0, section: None, .. }));
}

#[test]
fn writer_rejects_a_wrong_record_count() {
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    let info = RingInfo { tid: 1, capacity: 4, written: 2, dropped: 0, aux: 0, flags: 0, name: b"" };
    w.begin_ring(&info, 2, 0).unwrap();
    w.record(&Record::default()).unwrap();
    assert!(matches!(w.end_section(), Err(WriteError::CountMismatch { .. })));
}

#[test]
fn stream_chunks_and_anchors_read_back_in_order() {
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    let records: Vec<Record> = (0..5).map(|i| Record { key: 0x40 + i, enter: 10 * i, exit: 10 * i + 5 }).collect();
    let info = |written| RingInfo { tid: 9, capacity: 4, written, dropped: 1, aux: 0, flags: 2, name: b"w" };
    w.ring_chunk(&info(3), 77, 0, &records[..3], &[(0x99, 1)]).unwrap();
    let anchor = Anchor { ticks: 123, mono_ns: 456, real_ns: 789 };
    w.anchor(&anchor).unwrap();
    w.ring_chunk(&info(5), 77, 3, &records[3..], &[]).unwrap();
    let bytes = w.finish().unwrap().0;
    let (seen, err) = read_all(&bytes);
    assert_eq!(err, None);
    assert_eq!(seen.kinds, [SectionKind::Ring, SectionKind::Anchor, SectionKind::Ring, SectionKind::End]);
    assert_eq!(seen.anchors, [anchor]);
    assert_eq!(
        seen.chunks,
        [(77, 0, 3, records[..3].to_vec(), vec![(0x99, 1)]), (77, 3, 5, records[3..].to_vec(), vec![])]
    );
    // A chunk whose records would lie past those ever written is refused.
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    w.ring_chunk(&info(3), 77, 1, &records[..3], &[]).unwrap();
    let bytes = w.finish().unwrap().0;
    let dump = Dump::parse(&bytes).unwrap();
    let err = dump.sections().next().unwrap().and_then(|s| s.decode()).unwrap_err();
    assert!(err.to_string().contains("first_record"), "{err}");
}

#[test]
fn slice_sink_reports_full() {
    let mut buf = [0u8; 40];
    let w = Writer::new(SliceSink::new(&mut buf), 8).unwrap();
    assert!(matches!(w.finish(), Err(WriteError::Sink(SliceFull))));
}

#[test]
fn names_appended_after_a_finished_dump_read_back_and_leave_it_byte_identical() {
    let original = sample_dump(2);
    // Everything up to the end marker stays; a names section and a new end marker follow.
    let kept = original.len() - END_SECTION_SIZE;
    let frames = [
        NameFrame { function: b"inner", file: b"src/a.rs", line: 7 },
        NameFrame { function: b"outer", file: b"", line: 0 },
    ];
    let entries = [
        NameEntry { key: 0x4000, source: NameSource::Dwarf, frames: &frames },
        NameEntry { key: 0x4001, source: NameSource::Symtab, frames: &frames[1..] },
    ];
    let mut w = Writer::resume(VecSink(original[..kept].to_vec()), kept as u64);
    w.names(&entries).unwrap();
    let packed = w.finish().unwrap().0;
    assert_eq!(packed[..kept], original[..kept]);
    assert_eq!(packed.len() % SECTION_ALIGN, 0);

    let dump = Dump::parse(&packed).unwrap();
    let sections: Vec<Section> = dump.sections().collect::<Result<_, _>>().unwrap();
    assert_eq!(sections.last().unwrap().kind, SectionKind::End, "the new end marker is last");
    let names = sections.iter().find_map(|s| match s.decode().unwrap() {
        SectionData::Names(t) => Some(t),
        _ => None,
    });
    let names = names.expect("a names section");
    assert_eq!(names.len(), 2);
    let read: Vec<(u64, NameSource, Vec<NameFrame>)> =
        names.iter().map(|n| (n.key, n.source, n.frames().collect())).collect();
    assert_eq!(
        read,
        [(0x4000, NameSource::Dwarf, frames.to_vec()), (0x4001, NameSource::Symtab, frames[1..].to_vec())]
    );
    // Every other section reads as before.
    let (before, damage) = read_all(&original);
    let (mut after, damage_after) = read_all(&packed);
    assert!(damage.is_none() && damage_after.is_none());
    let names_at = after.kinds.len() - 2;
    assert_eq!(after.kinds.remove(names_at), SectionKind::Names);
    assert_eq!(format!("{before:?}"), format!("{after:?}"));
}

#[test]
fn a_names_entry_without_frames_is_refused() {
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    w.names(&[NameEntry { key: 1, source: NameSource::Dwarf, frames: &[] }]).unwrap();
    let bytes = w.finish().unwrap().0;
    let dump = Dump::parse(&bytes).unwrap();
    let section = dump.sections().next().unwrap().unwrap();
    assert!(matches!(
        section.decode(),
        Err(ReadError::Malformed { field: "frame_count", section: SectionKind::Names, .. })
    ));
}

/// Feeds `stream` to a [`DumpExtent`] `chunk` bytes at a time, as a pipe
/// reader would; returns where it says the dump ends (`None` if the stream
/// ran out first) and how many bytes it had read by then.
fn extent_of(stream: &[u8], chunk: usize) -> (Option<usize>, usize) {
    use ringtrace_format::extent::{DumpExtent, Step};
    let (mut have, mut extent) = (0usize, DumpExtent::default());
    loop {
        match extent.step(&stream[..have]) {
            Step::End(len) => return (Some(len), have),
            Step::Need(total) => {
                assert!(total > have as u64, "a step always asks for more");
                if have == stream.len() {
                    return (None, have);
                }
                let want = usize::try_from(total).unwrap_or(usize::MAX) - have;
                have += want.min(chunk).min(stream.len() - have);
            }
        }
    }
}

#[test]
fn a_stream_is_read_to_the_end_marker_and_no_further() {
    for rings in [0, 1, 3] {
        let dump = sample_dump(rings);
        let mut stream = dump.clone();
        stream.extend(std::iter::repeat_n(0u8, 1 << 16));
        for chunk in [1, 7, 4096, usize::MAX] {
            let (end, read) = extent_of(&stream, chunk);
            assert_eq!(end, Some(dump.len()), "{rings} rings, chunks of {chunk}");
            assert_eq!(read, dump.len(), "nothing after the end marker is read");
        }
        // Cut short: the stream runs out while the extent still asks for more.
        assert_eq!(extent_of(&dump[..dump.len() - 10], 4096).0, None);
    }
    // Not a dump: the header is enough to say so.
    assert_eq!(extent_of(&[b'x'; 100], 4096), (Some(32), 32));
    // A section claiming 2^64 - 1 bytes asks for them (saturating), and a reader bounds what it reads.
    let mut lying = sample_dump(1);
    let header_size = usize::from(u16::from_le_bytes([lying[18], lying[19]]));
    lying[header_size + 8..header_size + 16].copy_from_slice(&[0xff; 8]);
    use ringtrace_format::extent::{DumpExtent, Step};
    assert!(matches!(DumpExtent::default().step(&lying), Step::Need(n) if n > u64::MAX - 8));
}

/// A key's depth tag: exact for depths 0..=254, "not stated" at 255 (where a recorder's depth saturates); the
/// key comes back whole, and untagged keys (older rings) state no depth.
#[test]
fn keys_carry_their_depth_in_the_top_byte() {
    let key = 0x0000_7f12_3456_789a_u64;
    for depth in [0u64, 1, 63, 254] {
        assert_eq!(split_key(key | key_depth_tag(depth)), (key, Some(depth as u8)));
    }
    assert_eq!(split_key(key | key_depth_tag(255)), (key, None));
    assert_eq!(split_key(key), (key, None));
    assert_eq!(RING_FLAG_KEY_DEPTH & (RING_FLAG_THREAD_EXITED | RING_FLAG_STOP_WHEN_FULL | RING_FLAG_STREAM_CHUNK), 0);
}
