//! Narrow counters: synthetic dumps whose counter wraps many times — a
//! 16-bit counter in full-size records, and compact 12-byte records of a
//! 32-bit counter — convert to the true times, which the test knows because
//! it made them. Also the documented limit: a gap of a whole period needs a
//! wrap marker.

use ringtrace_format::layout::{COMPACT_ARG_KEY, COMPACT_WRAP_KEY, RING_FLAG_THREAD_EXITED};
use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::{Anchor, ClockInfo, CompactRecord, CounterKind, IoSink, RateSource, Record, RingInfo, Writer};
use ringtrace_tests::{convert, parse_chrome, scratch};

const SITES_BASE: u64 = 0x1000;

/// A dump with a `bits`-bit counter at `hz`, the dump-time reading `dump_ticks` (already narrow).
fn start(bits: u32, hz: u64, dump_ticks: u64, labels: &[&str]) -> (Writer<IoSink<Vec<u8>>>, Vec<u64>) {
    let clock =
        ClockInfo { counter: CounterKind::User, counter_bits: bits, nominal_hz: hz, rate_source: RateSource::User };
    let descriptors: Vec<(&str, &str, u32)> = labels.iter().map(|&label| (label, "w.rs", 1)).collect();
    DumpBuilder::new("mcu")
        .pointer_width(4)
        .clock(clock, &[Anchor { ticks: dump_ticks, mono_ns: 0, real_ns: 0 }])
        .sites(SITES_BASE, &descriptors)
        .start()
}

fn info(records: u64, aux: u64) -> RingInfo<'static> {
    RingInfo {
        tid: 1,
        capacity: 1 << 20,
        written: records,
        dropped: 0,
        aux,
        flags: RING_FLAG_THREAD_EXITED,
        name: b"main",
    }
}

/// (name, start, duration) of every span, in ns from the first start.
fn events(dump: &std::path::Path) -> Vec<(String, i64, i64)> {
    let (code, json, stderr) = convert(dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    parse_chrome(&json).events.into_iter().map(|e| (e.name, e.ts_ns, e.dur_ns)).collect()
}

#[test]
fn a_16_bit_counter_wrapping_a_hundred_times_converts_to_the_true_times() {
    // 1 MHz: a tick is 1 µs, the counter wraps every 65.536 ms. A "poll" every
    // 40,000 ticks holding a "read" of 3,000 ticks: 160 polls, 97 wraps.
    let period = 1u64 << 16;
    let mut truth = Vec::new();
    let mut records = Vec::new();
    let (mut w, keys) = {
        let end = 160 * 40_000 + 10_000;
        start(16, 1_000_000, end % period, &["poll", "read"])
    };
    for i in 0..160u64 {
        let t = i * 40_000 + 1_000;
        records.push(Record { key: keys[1], enter: (t + 100) % period, exit: (t + 3_100) % period });
        records.push(Record { key: keys[0], enter: t % period, exit: (t + 5_000) % period });
        truth.push(("poll".to_string(), t, 5_000));
        truth.push(("read".to_string(), t + 100, 3_000));
    }
    w.ring(&info(records.len() as u64, 0), &records, &[]).unwrap();
    let dir = scratch("wrap16");
    let dump = dir.join("w.rtd");
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let first = truth[0].1;
    let expected: Vec<(String, i64, i64)> =
        truth.into_iter().map(|(n, t, d)| (n, ((t - first) * 1000) as i64, (d * 1000) as i64)).collect();
    assert_eq!(events(&dump), expected);
}

#[test]
fn compact_records_of_a_32_bit_counter_wrapping_many_times_convert_to_the_true_times() {
    // 1 GHz: the counter wraps every 4.29 s; spans every 3 s over 60 spans (41 wraps),
    // each with an argument record; halfway, a 7 s gap bridged by a wrap marker.
    let period = 1u64 << 32;
    let mut truth = Vec::new();
    let mut records = Vec::new();
    let mut t = 500u64;
    let mut markers = 0;
    for i in 0..60u64 {
        if i == 30 {
            // The span before ended 3 s ago; the marker comes at 3.5 s, the next span 3.5 s later.
            t += 500_000_000;
            records.push(CompactRecord {
                key: COMPACT_WRAP_KEY,
                enter: (t % period) as u32,
                exit: (t % period) as u32,
            });
            markers += 1;
            t += 3_500_000_000;
        }
        records.push(CompactRecord { key: COMPACT_ARG_KEY, enter: i as u32, exit: 0 });
        records.push(CompactRecord {
            key: SITES_BASE as u32,
            enter: (t % period) as u32,
            exit: ((t + 250) % period) as u32,
        });
        truth.push((t, 250, i));
        t += 3_000_000_000;
    }
    let (mut w, _) = start(32, 1_000_000_000, t % period, &["tick"]);
    let aux = 60 + markers;
    w.compact_ring(&info(records.len() as u64, aux), &records, &[]).unwrap();
    let dir = scratch("wrap32");
    let dump = dir.join("c.rtd");
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();

    let first = truth[0].0;
    let expected: Vec<(String, i64, i64)> =
        truth.iter().map(|&(t, d, _)| ("tick".to_string(), (t - first) as i64, d as i64)).collect();
    assert_eq!(events(&dump), expected);
    // The arguments came through the compact argument records.
    let (_, json, _) = convert(&dump, &[]);
    let trace = parse_chrome(&json);
    let args: Vec<u64> = trace.json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["args"]["arg"].as_u64().unwrap())
        .collect();
    assert_eq!(args, (0..60).collect::<Vec<_>>());
}

#[test]
fn a_gap_of_a_whole_period_without_a_wrap_marker_is_lost_as_documented() {
    // Two 10-tick spans 70,000 ticks apart on a 16-bit counter: with a marker
    // between them the gap is right; without, it comes out one period short.
    let period = 1u64 << 16;
    let spans = [(100u64, 110u64), (70_100, 70_110)];
    let gap = |with_marker: bool| {
        let (mut w, keys) = start(16, 1_000_000, 70_200 % period, &["s"]);
        let mut records = vec![Record { key: keys[0], enter: spans[0].0, exit: spans[0].1 }];
        if with_marker {
            let m = 35_000 % period;
            records.push(Record { key: ringtrace_format::layout::WRAP_KEY, enter: m, exit: m });
        }
        records.push(Record { key: keys[0], enter: spans[1].0 % period, exit: spans[1].1 % period });
        w.ring(&info(records.len() as u64, u64::from(with_marker)), &records, &[]).unwrap();
        let dir = scratch(if with_marker { "marker" } else { "no-marker" });
        let dump = dir.join("g.rtd");
        std::fs::write(&dump, w.finish().unwrap().0).unwrap();
        let e = events(&dump);
        e[1].1 - e[0].1
    };
    assert_eq!(gap(true), 70_000_000);
    assert_eq!(gap(false), 70_000_000 - 65_536_000);
}
