//! Properties of the format over random dumps (proptest): random rings,
//! threads and sections read back exactly as written; a cut at any offset
//! yields exactly the sections that end before it; any single bit flip in a
//! section is caught at that section's offset — by its checksum, except
//! where the flip changes the section's length field (then as truncation).

use proptest::prelude::*;
use ringtrace_format::layout::*;
use ringtrace_format::*;

mod common;

use common::VecSink;

#[derive(Clone, Debug, PartialEq)]
struct RingSpec {
    tid: u64,
    name: Vec<u8>,
    records: Vec<(u64, u64, u64)>,
    open: Vec<(u64, u64)>,
    extra_written: u64,
    dropped: u64,
    compact: bool,
}

#[derive(Clone, Debug, PartialEq)]
struct DumpSpec {
    pid: u32,
    process: Vec<u8>,
    anchors: Vec<(u64, u64, u64)>,
    modules: Vec<(u64, u64, Vec<u8>, Vec<u8>)>,
    rings: Vec<RingSpec>,
    unbalanced: Vec<(u64, u64, u64)>,
}

fn ring() -> impl Strategy<Value = RingSpec> {
    (
        any::<u64>(),
        proptest::collection::vec(any::<u8>(), 0..20),
        proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 0..40),
        proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5),
        0u64..1000,
        any::<u64>(),
        any::<bool>(),
    )
        .prop_map(|(tid, name, records, open, extra_written, dropped, compact)| {
            // Compact records hold 32-bit values (and widen their two special keys).
            let records = if compact {
                records.into_iter().map(|(k, e, x)| (k & 0xFFFF_FFF0, e & 0xFFFF_FFFF, x & 0xFFFF_FFFF)).collect()
            } else {
                records
            };
            RingSpec { tid, name, records, open, extra_written, dropped, compact }
        })
}

fn dump() -> impl Strategy<Value = DumpSpec> {
    (
        any::<u32>(),
        proptest::collection::vec(any::<u8>(), 0..16),
        proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 1..4),
        proptest::collection::vec(
            (
                any::<u64>(),
                any::<u64>(),
                proptest::collection::vec(any::<u8>(), 0..20),
                proptest::collection::vec(any::<u8>(), 1..30),
            ),
            0..4,
        ),
        proptest::collection::vec(ring(), 0..5),
        proptest::collection::vec((any::<u64>(), any::<u64>(), any::<u64>()), 0..3),
    )
        .prop_map(|(pid, process, anchors, modules, rings, unbalanced)| DumpSpec {
            pid,
            process,
            anchors,
            modules,
            rings,
            unbalanced,
        })
}

/// (start, end) of every section of a well-formed dump, padding excluded.
fn bounds(bytes: &[u8]) -> Vec<(u64, u64)> {
    let dump = Dump::parse(bytes).unwrap();
    dump.sections()
        .map(|s| s.unwrap())
        .map(|s| (s.offset, s.offset + (SECTION_HEADER_SIZE + s.payload.len() + SECTION_CRC_SIZE) as u64))
        .collect()
}

/// The dump's bytes.
fn write(spec: &DumpSpec) -> Vec<u8> {
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    let meta = MetaInfo {
        pid: spec.pid,
        reason: DumpReason::Requested,
        producer: b"prop",
        producer_version: b"1",
        process_name: &spec.process,
    };
    w.meta(&meta).unwrap();
    let clock =
        ClockInfo { counter: CounterKind::User, counter_bits: 64, nominal_hz: 1, rate_source: RateSource::User };
    let anchors: Vec<Anchor> =
        spec.anchors.iter().map(|&(ticks, mono_ns, real_ns)| Anchor { ticks, mono_ns, real_ns }).collect();
    w.clock(&clock, &anchors).unwrap();
    let modules: Vec<Module<'_>> = spec
        .modules
        .iter()
        .map(|(start, bias, id, path)| Module {
            start: *start,
            end: start.saturating_add(1),
            bias: *bias,
            flags: 0,
            build_id: id,
            path,
        })
        .collect();
    w.modules(&modules).unwrap();
    for r in &spec.rings {
        let written = r.records.len() as u64 + r.extra_written;
        let info = RingInfo { tid: r.tid, capacity: 64, written, dropped: r.dropped, aux: 0, flags: 0, name: &r.name };
        if r.compact {
            let records: Vec<CompactRecord> = r
                .records
                .iter()
                .map(|&(key, enter, exit)| CompactRecord { key: key as u32, enter: enter as u32, exit: exit as u32 })
                .collect();
            w.compact_ring(&info, &records, &r.open).unwrap();
        } else {
            let records: Vec<Record> =
                r.records.iter().map(|&(key, enter, exit)| Record { key, enter, exit }).collect();
            w.ring(&info, &records, &r.open).unwrap();
        }
    }
    let unbalanced: Vec<Unbalanced> =
        spec.unbalanced.iter().map(|&(tid, too_deep, abandoned)| Unbalanced { tid, too_deep, abandoned }).collect();
    w.unbalanced(&unbalanced).unwrap();
    w.finish().unwrap().0
}

/// Reads every section back into a spec; the error where reading stopped, if any.
fn read(bytes: &[u8]) -> (DumpSpec, usize, Option<ReadError>) {
    let mut spec =
        DumpSpec { pid: 0, process: vec![], anchors: vec![], modules: vec![], rings: vec![], unbalanced: vec![] };
    let dump = match Dump::parse(bytes) {
        Ok(d) => d,
        Err(e) => return (spec, 0, Some(e)),
    };
    let mut sections = 0;
    for s in dump.sections() {
        let data = match s.and_then(|s| s.decode()) {
            Ok(d) => d,
            Err(e) => return (spec, sections, Some(e)),
        };
        sections += 1;
        match data {
            SectionData::Meta(m) => (spec.pid, spec.process) = (m.pid, m.process_name.to_vec()),
            SectionData::Clock(_, a) => spec.anchors = a.iter().map(|a| (a.ticks, a.mono_ns, a.real_ns)).collect(),
            SectionData::Modules(m) => {
                spec.modules = m.iter().map(|m| (m.start, m.bias, m.build_id.to_vec(), m.path.to_vec())).collect()
            }
            SectionData::Ring(info, records, open) => spec.rings.push(RingSpec {
                tid: info.tid,
                name: info.name.to_vec(),
                records: {
                    // Read in sequence, and found one by one: the same records, and none past the end.
                    let in_order: Vec<Record> = records.iter().collect();
                    let found: Vec<Record> =
                        (0..records.len()).filter_map(|i| records.locate(i).map(|r| r.record())).collect();
                    assert_eq!(found, in_order);
                    assert!(records.locate(records.len()).is_none());
                    in_order.iter().map(|r| (r.key, r.enter, r.exit)).collect()
                },
                open: open.iter().collect(),
                extra_written: info.written - records.len() as u64,
                dropped: info.dropped,
                compact: records.compact(),
            }),
            SectionData::Unbalanced(u) => {
                spec.unbalanced = u.iter().map(|u| (u.tid, u.too_deep, u.abandoned)).collect()
            }
            _ => {}
        }
    }
    (spec, sections, None)
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(200) })]

    #[test]
    fn random_dumps_read_back_as_written(spec in dump()) {
        let bytes = write(&spec);
        let (seen, _, err) = read(&bytes);
        prop_assert_eq!(err, None);
        prop_assert_eq!(seen, spec);
    }

    #[test]
    fn a_cut_anywhere_keeps_exactly_the_sections_before_it(spec in dump(), at in any::<prop::sample::Index>()) {
        let bytes = write(&spec);
        let bounds = bounds(&bytes);
        // Cut anywhere before the end marker's last byte.
        let cut = FILE_HEADER_SIZE + at.index(bounds.last().unwrap().1 as usize - FILE_HEADER_SIZE);
        let (_, sections, err) = read(&bytes[..cut]);
        let complete = bounds.iter().filter(|&&(_, end)| end <= cut as u64).count();
        prop_assert_eq!(sections, complete);
        let err = err.expect("a cut dump never reads as complete");
        prop_assert!(err.is_truncation(), "{}", err);
        prop_assert_eq!(err.offset(), bounds[complete].0.min(cut as u64));
    }

    #[test]
    fn a_flipped_bit_in_a_section_is_caught_at_that_section(spec in dump(), at in any::<prop::sample::Index>(), bit in 0u8..8) {
        let bytes = write(&spec);
        let byte = FILE_HEADER_SIZE + at.index(bytes.len() - FILE_HEADER_SIZE);
        let Some(&(start, _)) = bounds(&bytes).iter().find(|&&(start, end)| start <= byte as u64 && (byte as u64) < end) else {
            return Ok(()); // padding between sections: covered by no checksum, read by nobody
        };
        let mut bad = bytes.clone();
        bad[byte] ^= 1 << bit;
        let (_, _, err) = read(&bad);
        let err = err.expect("a flipped bit is caught");
        prop_assert_eq!(err.offset(), start, "{}", err);
        let in_length_field = (start as usize + 8..start as usize + 16).contains(&byte);
        if !in_length_field {
            prop_assert!(matches!(err, ReadError::Checksum { .. }), "{}", err);
        }
    }
}

/// A ring whose record count (under a valid checksum) claims 2^60 records:
/// refused by a bounds check, never trusted for a size.
#[test]
fn a_huge_count_under_a_valid_checksum_is_refused_not_trusted() {
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    let info = RingInfo { tid: 1, capacity: 4, written: 3, dropped: 0, aux: 0, flags: 0, name: b"" };
    let records = [Record { key: 1, enter: 2, exit: 3 }; 3];
    w.ring(&info, &records, &[]).unwrap();
    let mut bytes = w.finish().unwrap().0;
    let ring = bounds(&bytes)[0];
    let (start, end) = (ring.0 as usize, ring.1 as usize);
    // record count 3, open count 0, then the three records: the count field is right before them.
    let records_at = bytes[start..end]
        .windows(24)
        .position(|w| w == [1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0])
        .unwrap();
    let count_at = start + records_at - 16;
    assert_eq!(bytes[count_at..count_at + 8], 3u64.to_le_bytes());
    bytes[count_at..count_at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let crc_at = end - SECTION_CRC_SIZE;
    let crc = crc32fast::hash(&bytes[start..crc_at]);
    bytes[crc_at..end].copy_from_slice(&crc.to_le_bytes());
    let (_, sections, err) = read(&bytes);
    assert_eq!(sections, 0);
    let err = err.unwrap();
    assert_eq!(err.offset(), count_at as u64, "the error names the field's own offset: {err}");
    assert!(err.to_string().contains("record_count"), "{err}");
}
