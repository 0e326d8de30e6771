//! Golden files for the text outputs, from a synthetic dump whose every
//! tick is chosen: `-f ftrace`, `-f folded` and `rtconv stats --format csv`.
//! Rewrite the files after an intended change with `BLESS=1 cargo test --test golden`.

use std::path::{Path, PathBuf};

use ringtrace_format::layout::RING_FLAG_THREAD_EXITED;
use ringtrace_format::{
    Anchor, ClockInfo, CounterKind, DumpReason, MetaInfo, RateSource, Record, RingInfo, Sink, Writer,
};
use ringtrace_tests::{convert, run, scratch, workspace_root};

struct VecSink(Vec<u8>);

impl Sink for VecSink {
    type Error = std::convert::Infallible;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), Self::Error> {
        self.0.extend_from_slice(bytes);
        Ok(())
    }
}

const BASE: u64 = 0x10_0000;
const LABELS: [&str; 4] = ["handle request", "parse", "read line", "wait"];

/// A dump of two threads with nested named spans; ticks are nanoseconds.
fn synthetic_dump(path: &Path) {
    // Site descriptors written by hand from FORMAT.md (little-endian): magic,
    // line, label length, file length, column, label, file, zero padding to 8.
    let mut sites: Vec<u8> = Vec::new();
    let mut keys = Vec::new();
    for (i, label) in LABELS.iter().enumerate() {
        keys.push(BASE + sites.len() as u64);
        let file = "src/server.rs";
        sites.extend_from_slice(&0x5349_5445u32.to_le_bytes());
        sites.extend_from_slice(&(10 + i as u32).to_le_bytes());
        sites.extend_from_slice(&(label.len() as u16).to_le_bytes());
        sites.extend_from_slice(&(file.len() as u16).to_le_bytes());
        sites.extend_from_slice(&0u32.to_le_bytes());
        sites.extend_from_slice(label.as_bytes());
        sites.extend_from_slice(file.as_bytes());
        sites.resize(sites.len().next_multiple_of(8), 0);
    }
    let [request, parse, read, wait] = [keys[0], keys[1], keys[2], keys[3]];
    let mut w = Writer::new(VecSink(Vec::new()), 8).unwrap();
    w.meta(&MetaInfo {
        pid: 7,
        reason: DumpReason::Requested,
        producer: b"golden",
        producer_version: b"1",
        process_name: b"server",
    })
    .unwrap();
    let clock = ClockInfo {
        counter: CounterKind::MonotonicNs,
        counter_bits: 64,
        nominal_hz: 1_000_000_000,
        rate_source: RateSource::Exact,
    };
    let anchors = [
        Anchor { ticks: 0, mono_ns: 0, real_ns: 1_800_000_000_000_000_000 },
        Anchor { ticks: 5_000_000_000, mono_ns: 5_000_000_000, real_ns: 1_800_000_005_000_000_000 },
    ];
    w.clock(&clock, &anchors).unwrap();
    w.sites(BASE, &sites).unwrap();
    // Thread 1: a request with two parses (each reading lines) and a wait; durations cross every mark.
    let r = |key, enter, exit| Record { key, enter, exit };
    let worker = [
        r(read, 1_000, 11_001),   // 10.001 µs: '+'
        r(read, 12_000, 112_001), // 100.001 µs: '!'
        r(parse, 500, 200_000),
        r(read, 300_000, 1_300_001), // 1.000001 ms: '#'
        r(parse, 250_000, 1_400_000),
        r(wait, 1_500_000, 11_500_001), // '*'
        r(request, 0, 12_000_000),
    ];
    let info = RingInfo {
        tid: 101,
        capacity: 16,
        written: 7,
        dropped: 0,
        aux: 0,
        flags: RING_FLAG_THREAD_EXITED,
        name: b"worker",
    };
    w.ring(&info, &worker, &[]).unwrap();
    let slow = [r(wait, 20_000_000, 120_000_001), r(wait, 200_000_000, 1_200_000_001)]; // '@', '$'
    let info = RingInfo { tid: 102, capacity: 16, written: 2, dropped: 0, aux: 0, flags: 0, name: b"slow" };
    w.ring(&info, &slow, &[]).unwrap();
    std::fs::write(path, w.finish().unwrap().0).unwrap();
}

fn check(name: &str, actual: &str) {
    let path: PathBuf = workspace_root().join("tests/golden").join(name);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} missing; run with BLESS=1", path.display()));
    assert!(expected == actual, "{name} differs from {}; if intended, BLESS=1:\n{actual}", path.display());
}

#[test]
fn text_outputs_match_their_golden_files() {
    let dir = scratch("golden");
    let dump = dir.join("synthetic.rtd");
    synthetic_dump(&dump);
    for (format, golden) in [("ftrace", "ftrace.txt"), ("folded", "folded.txt")] {
        let (code, text, stderr) = convert(&dump, &["-f", format]);
        assert_eq!((code, stderr.len()), (0, 0), "{format}: {stderr:?}");
        check(golden, &text);
    }
    let out =
        run(&ringtrace_tests::binary("rtconv"), &["stats", dump.to_str().unwrap(), "--format", "csv", "--per-thread"]);
    assert!(out.status.success());
    check("stats.csv", &String::from_utf8(out.stdout).unwrap());
}
