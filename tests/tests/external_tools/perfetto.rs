//! `-f perfetto`: every packet decoded with the official schema (the
//! `perfetto` Python package's `perfetto_trace_pb2`, in tests/.venv), the
//! sequences' incremental state used as Perfetto requires, and the slices
//! rebuilt from the begin/end events equal to the Chrome JSON's of the same
//! dump; with the bytes per span of both.
//!
//! Packet times are resolved as trace_processor resolves them
//! (`ProtoTraceReader::TimestampTokenizeAndPushToSorter` and `ClockTracker`
//! in perfetto's src/trace_processor): a packet's `timestamp_clock_id`, else
//! its sequence's default, else `BOOTTIME`; a sequence-scoped incremental
//! clock adds each packet's `timestamp` to its value, which its last
//! `ClockSnapshot` set, and converts to `BOOTTIME` through that snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ringtrace_format::test_util::DumpBuilder;
use ringtrace_format::{Record, RingInfo};
use ringtrace_tests::{binary, convert, parse_chrome, record_workload_with, rtconv_ok, scratch, venv};

/// Decodes a Perfetto trace, checks how it uses sequences and interning,
/// and prints one JSON line per slice: [tid, name, ts, dur, depth, file, line, annotations].
const CHECK: &str = r#"
import json, sys
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
trace = pb.Trace()
trace.ParseFromString(open(sys.argv[1], "rb").read())
P = pb.TracePacket
BOOTTIME = pb.BUILTIN_CLOCK_BOOTTIME
tracks, process_uuid, pid = {}, None, None
state = {}   # sequence -> {"names", "locations", "annotations", "track", "clock", "clocks"}
open_slices, out = {}, []

def packet_time(p, seq):
    "The packet's time on BOOTTIME, the trace's clock."
    d = state.get(seq, {}).get("clock")
    clock = p.timestamp_clock_id if p.HasField("timestamp_clock_id") else d or BOOTTIME
    if clock == BOOTTIME:
        return p.timestamp
    assert 64 <= clock < 128, f"clock {clock} is not sequence-scoped"
    c = state[seq]["clocks"][clock]
    c["value"] = c["value"] + p.timestamp if c["incremental"] else p.timestamp
    return c["value"] + c["to_boottime"]

for i, p in enumerate(trace.packet):
    seq = p.trusted_packet_sequence_id
    assert seq > 0, f"packet {i} has no sequence"
    if p.sequence_flags & P.SEQ_INCREMENTAL_STATE_CLEARED:
        state[seq] = {"names": {}, "locations": {}, "annotations": {}, "track": None, "clock": None, "clocks": {}}
    if p.HasField("trace_packet_defaults"):
        d = p.trace_packet_defaults
        state[seq]["track"] = d.track_event_defaults.track_uuid
        state[seq]["clock"] = d.timestamp_clock_id if d.HasField("timestamp_clock_id") else None
    if p.HasField("clock_snapshot"):
        clocks = {c.clock_id: c for c in p.clock_snapshot.clocks}
        assert BOOTTIME in clocks, "a snapshot relates its clocks to the trace's"
        for c in clocks.values():
            assert c.unit_multiplier_ns in (0, 1), c
            if 64 <= c.clock_id < 128:
                state[seq]["clocks"][c.clock_id] = {"incremental": c.is_incremental, "value": c.timestamp,
                                                    "to_boottime": clocks[BOOTTIME].timestamp - c.timestamp}
    # A clock snapshot's own timestamp moves no clock (trace_processor parses the snapshot and stops).
    ts = packet_time(p, seq) if p.HasField("timestamp") and not p.HasField("clock_snapshot") else None
    # A track event takes its track (and maybe its clock) from the defaults; a time on a sequence's
    # clock is the clock's; interned data adds to the state: all need the sequence's incremental state.
    on_sequence_clock = p.HasField("timestamp") and not p.HasField("timestamp_clock_id") and state.get(seq, {}).get("clock")
    uses_state = p.HasField("interned_data") or p.HasField("track_event") or on_sequence_clock
    if uses_state and not p.sequence_flags & P.SEQ_INCREMENTAL_STATE_CLEARED:
        assert p.sequence_flags & P.SEQ_NEEDS_INCREMENTAL_STATE, f"packet {i} needs the incremental state but has no flag"
        assert seq in state, f"packet {i}: sequence {seq} has no cleared state"
    if p.HasField("interned_data"):
        d = p.interned_data
        for n in d.event_names: state[seq]["names"][n.iid] = n.name
        for l in d.source_locations: state[seq]["locations"][l.iid] = (l.file_name, l.line_number, l.function_name)
        for a in d.debug_annotation_names: state[seq]["annotations"][a.iid] = a.name
    if p.HasField("track_descriptor"):
        t = p.track_descriptor
        if t.HasField("process"):
            process_uuid, pid = t.uuid, t.process.pid
        else:
            assert t.parent_uuid == process_uuid and t.thread.pid == pid, t
            tracks[t.uuid] = t.thread.tid
            assert state[seq]["track"] == t.uuid, "each thread's events default to its track"
    if p.HasField("track_event"):
        e = p.track_event
        track = e.track_uuid if e.HasField("track_uuid") else state[seq]["track"]
        stack = open_slices.setdefault(track, [])
        if e.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            name = state[seq]["names"][e.name_iid]
            loc = state[seq]["locations"].get(e.source_location_iid, ("", 0, "")) if e.source_location_iid else ("", 0, "")
            if e.source_location_iid: assert loc[2] == name, (loc, name)
            notes = sorted(state[seq]["annotations"][a.name_iid] for a in e.debug_annotations)
            stack.append((name, ts, loc, notes))
        else:
            assert e.type == pb.TrackEvent.TYPE_SLICE_END
            name, begin, loc, notes = stack.pop()
            assert ts >= begin
            out.append([tracks[track], name, begin, ts - begin, len(stack), loc[0], loc[1], notes])
assert all(not s for s in open_slices.values()), "every slice ends"
for s in out: print(json.dumps(s))
"#;

/// The slices of a Perfetto trace, as [`CHECK`] prints them.
pub(super) fn slices(trace: &Path) -> Vec<serde_json::Value> {
    let out = Command::new(venv("python")).arg("-c").arg(CHECK).arg(trace).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn convert_to(dump: &Path, to: &Path) {
    rtconv_ok(&["convert", dump.to_str().unwrap(), "-o", to.to_str().unwrap()]);
}

#[test]
fn perfetto_slices_are_the_chrome_traces() {
    let dir = scratch("perfetto-workload");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &["--rounds", "5"]);
    let trace: PathBuf = dir.join("w.perfetto-trace");
    convert_to(&dump, &trace);
    let got = slices(&trace);
    let (code, json, _) = convert(&dump, &["-f", "chrome", "--args"]);
    assert_eq!(code, 0);
    let chrome = parse_chrome(&json);
    // (tid, name, ts, dur) of every span, in both.
    let mut from_perfetto: Vec<(u64, String, i64, i64)> = got
        .iter()
        .map(|s| {
            (s[0].as_u64().unwrap(), s[1].as_str().unwrap().to_string(), s[2].as_i64().unwrap(), s[3].as_i64().unwrap())
        })
        .collect();
    let mut from_chrome: Vec<(u64, String, i64, i64)> =
        chrome.events.iter().map(|e| (e.tid, e.name.clone(), e.ts_ns, e.dur_ns)).collect();
    from_perfetto.sort();
    from_chrome.sort();
    assert_eq!(
        from_perfetto.len(),
        5 * 2 * 17 + 2 * 465 + 5 * 2 + 1,
        "5 rounds of parse_batch (1 + 8 + 8) on 2 threads, fib(12) twice, 5 sleeper rounds, main done"
    );
    assert_eq!(from_perfetto, from_chrome);
    // Nesting: fib's recursion is as deep in Perfetto as the call tree (fib(12): 11 levels under the first).
    let deepest = got.iter().filter(|s| s[1] == "workload::fib").map(|s| s[4].as_u64().unwrap()).max();
    assert_eq!(deepest, Some(11));
    // Source locations: the Chrome args' `at` of the same function.
    let at: BTreeMap<String, String> = chrome.json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e["args"]["at"].as_str()?.to_string())))
        .collect();
    let fib = got.iter().find(|s| s[1] == "workload::fib").unwrap();
    assert_eq!(format!("{}:{}", fib[5].as_str().unwrap(), fib[6]), at["workload::fib"]);
    // Bytes per span against Chrome JSON's.
    let chrome_path = dir.join("w.json");
    convert_to(&dump, &chrome_path);
    let size = |p: &Path| std::fs::metadata(p).unwrap().len() as f64;
    let spans = from_chrome.len() as f64;
    let (perfetto_bytes, chrome_bytes) = (size(&trace) / spans, size(&chrome_path) / spans);
    eprintln!("bytes per span: perfetto {perfetto_bytes:.1}, chrome json {chrome_bytes:.1}");
    assert!(perfetto_bytes <= chrome_bytes / 2.0, "perfetto {perfetto_bytes:.1} B/span, chrome {chrome_bytes:.1}");
}

#[test]
fn open_spans_are_annotated_and_times_count_from_the_first_span() {
    // One thread: `outer` still open at the dump, `inner` closed within it; a second thread
    // with `inner` alone.
    let dir = scratch("perfetto-marks");
    let (mut w, keys) =
        DumpBuilder::new("marks").sites(0x20_000, &[("outer", "src/a.rs", 3), ("inner", "src/a.rs", 9)]).start();
    let info = |tid, name: &'static [u8]| RingInfo { tid, capacity: 4, written: 1, dropped: 0, aux: 0, flags: 0, name };
    w.ring(&info(1, b"one"), &[Record { key: keys[1], enter: 2_000, exit: 3_000 }], &[(keys[0], 1_000)]).unwrap();
    w.ring(&info(2, b"two"), &[Record { key: keys[1], enter: 1_500, exit: 1_700 }], &[]).unwrap();
    let dump = dir.join("marks.rtd");
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let trace = dir.join("marks.pftrace");
    convert_to(&dump, &trace);
    let got = slices(&trace);
    let by: BTreeMap<(u64, String), &serde_json::Value> =
        got.iter().map(|s| ((s[0].as_u64().unwrap(), s[1].as_str().unwrap().to_string()), s)).collect();
    let outer = by[&(1, "outer".to_string())];
    assert_eq!(outer[7], serde_json::json!(["open"]));
    assert_eq!((outer[5].as_str(), outer[6].as_u64()), (Some("src/a.rs"), Some(3)));
    let inner = by[&(1, "inner".to_string())];
    assert_eq!(inner[4], 1, "inner lies in outer");
    // Timestamps count from the earliest span (outer's start at 1 µs), as Chrome's ts.
    assert_eq!((inner[2].as_i64(), inner[3].as_i64()), (Some(1_000), Some(1_000)));
    assert_eq!(by[&(2, "inner".to_string())][2].as_i64(), Some(500));
}

#[test]
fn a_span_placed_before_its_predecessors_time_keeps_its_time() {
    // Spans that a depth-tagged ring says are siblings (all at depth 0) though they
    // overlap in pairs: `first` ends (3 µs) after `second` begins (2 µs), so the begin
    // packet of `second` comes after a later one on its sequence and cannot be a delta on
    // the incremental clock; twice, so that both ways of writing a begin (the one that
    // interns the name, and the one after) meet it.
    use ringtrace_format::layout::{RING_FLAG_KEY_DEPTH, key_depth_tag};
    let dir = scratch("perfetto-before");
    let (mut w, keys) =
        DumpBuilder::new("before").sites(0x20_000, &[("first", "src/b.rs", 1), ("second", "src/b.rs", 2)]).start();
    let info = RingInfo { tid: 7, capacity: 4, written: 4, dropped: 0, aux: 0, flags: RING_FLAG_KEY_DEPTH, name: b"t" };
    let tag = key_depth_tag(0);
    let records = [
        Record { key: keys[0] | tag, enter: 1_000, exit: 3_000 },
        Record { key: keys[1] | tag, enter: 2_000, exit: 4_000 },
        Record { key: keys[0] | tag, enter: 5_000, exit: 7_000 },
        Record { key: keys[1] | tag, enter: 6_000, exit: 8_000 },
    ];
    w.ring(&info, &records, &[]).unwrap();
    let dump = dir.join("before.rtd");
    std::fs::write(&dump, w.finish().unwrap().0).unwrap();
    let trace = dir.join("before.pftrace");
    convert_to(&dump, &trace);
    let mut got: Vec<(String, i64, i64)> = slices(&trace)
        .iter()
        .map(|s| (s[1].as_str().unwrap().to_string(), s[2].as_i64().unwrap(), s[3].as_i64().unwrap()))
        .collect();
    got.sort();
    let (code, json, _) = convert(&dump, &["-f", "chrome"]);
    assert_eq!(code, 0);
    let mut chrome: Vec<(String, i64, i64)> =
        parse_chrome(&json).events.iter().map(|e| (e.name.clone(), e.ts_ns, e.dur_ns)).collect();
    chrome.sort();
    assert_eq!(
        chrome,
        [
            ("first".into(), 0, 2_000),
            ("first".into(), 4_000, 2_000),
            ("second".into(), 1_000, 2_000),
            ("second".into(), 5_000, 2_000)
        ],
        "the spans as recorded, times from the first"
    );
    assert_eq!(got, chrome);
}
