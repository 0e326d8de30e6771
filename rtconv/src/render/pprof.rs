//! pprof's profile (`-f pprof`, `.pb.gz`): a gzipped `profile.proto`, as
//! `go tool pprof`, Pyroscope, Grafana and the OpenTelemetry profiles
//! format read it.
//!
//! - One sample per distinct call path and thread (the paths `-f folded`
//!   has), labelled `thread` with the thread's name, with two values:
//!   `calls` (count: the spans with that path) and `self` (nanoseconds:
//!   their self time) — so pprof's flat figures per function are
//!   `rtconv stats`' calls and self time, and its cumulative time is the
//!   function's total (recursion counted once, as `stats` counts it). The
//!   default sample type is `self`.
//! - One location and one function per key: the function's name, file and
//!   line; the location's address is the key (the code address, for keys
//!   that are addresses) in the mapping of the module holding it.
//! - One mapping per loaded module: its address range, path and GNU build-id.
//! - `time_nanos` is the realtime of the earliest span, `duration_nanos` the
//!   time to the last span's end.
//!
//! Field numbers are those of `github.com/google/pprof/proto/profile.proto`;
//! the suite reads the output with `go tool pprof -top` and `-traces`.

use std::collections::HashMap;
use std::io::{self, Write};

use super::protobuf::Message;
use crate::model::{Anomalies, DEEPER, Timeline};

// Profile fields.
const SAMPLE_TYPE: u32 = 1;
const SAMPLE: u32 = 2;
const MAPPING: u32 = 3;
const LOCATION: u32 = 4;
const FUNCTION: u32 = 5;
const STRING_TABLE: u32 = 6;
const TIME_NANOS: u32 = 9;
const DURATION_NANOS: u32 = 10;
const DEFAULT_SAMPLE_TYPE: u32 = 14;

/// The profile's string table: index 0 is "".
struct Strings {
    index: HashMap<String, u64>,
    table: Vec<String>,
}

impl Strings {
    fn new() -> Self {
        Strings { index: HashMap::from([(String::new(), 0)]), table: vec![String::new()] }
    }

    fn id(&mut self, s: &str) -> u64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as u64;
        self.index.insert(s.to_string(), i);
        self.table.push(s.to_string());
        i
    }
}

/// Writes `tl` as a gzipped pprof profile to `out`; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    // Per (thread, capped path): calls and self ns.
    let mut paths: HashMap<(usize, Vec<u32>), (u64, u64)> = HashMap::new();
    let mut last_end = tl.origin_ns;
    let found = tl.walk(None, |v| {
        let entry = paths.entry((v.thread, v.capped_path())).or_default();
        entry.0 += 1;
        entry.1 += v.self_ns;
        last_end = last_end.max(v.enter_ns.saturating_add(v.duration as i64));
    });
    let trace = tl.trace;
    let mut strings = Strings::new();
    let mut profile = Message::default();
    for (kind, unit) in [("calls", "count"), ("self", "nanoseconds")] {
        let mut value_type = Message::default();
        value_type.uint(1, strings.id(kind));
        value_type.uint(2, strings.id(unit));
        profile.message(SAMPLE_TYPE, &value_type);
    }
    // Mappings: one per module (id = index + 1).
    for (i, module) in trace.modules.iter().enumerate() {
        let mut mapping = Message::default();
        mapping.uint(1, i as u64 + 1);
        mapping.uint(2, module.start);
        mapping.uint(3, module.end);
        mapping.uint(5, strings.id(&module.path.to_string_lossy()));
        mapping.uint(6, strings.id(&crate::symbolize::hex(&module.build_id)));
        mapping.uint(7, 1); // has_functions
        mapping.uint(8, 1); // has_filenames
        mapping.uint(9, 1); // has_line_numbers
        profile.message(MAPPING, &mapping);
    }
    // Locations and functions: one per key index used (id = index + 1), `[deeper]` last.
    let mut used: Vec<u32> = paths.keys().flat_map(|(_, path)| path.iter().copied()).collect();
    used.sort_unstable();
    used.dedup();
    for &k in &used {
        let id = location_id(tl, k);
        let name = tl.name(k as usize);
        let place = tl.keys.get(k as usize).and_then(|&key| tl.names.get(key));
        let mut function = Message::default();
        function.uint(1, id);
        function.uint(2, strings.id(name));
        function.uint(3, strings.id(name));
        function.uint(4, strings.id(place.and_then(|p| p.file.as_deref()).unwrap_or_default()));
        let line = place.and_then(|p| p.line).map_or(0, u64::from);
        function.uint(5, line);
        profile.message(FUNCTION, &function);
        let mut location = Message::default();
        location.uint(1, id);
        if let Some(&key) = tl.keys.get(k as usize) {
            let module = trace.modules.iter().position(|m| (m.start..m.end).contains(&key));
            location.uint(2, module.map_or(0, |i| i as u64 + 1));
            location.uint(3, key);
        }
        let mut entry = Message::default();
        entry.uint(1, id);
        entry.uint(2, line);
        location.message(4, &entry);
        profile.message(LOCATION, &location);
    }
    // Samples, in a fixed order: by thread, then path.
    let thread_key = strings.id("thread");
    let thread_names: Vec<u64> = trace
        .threads
        .iter()
        .map(|t| strings.id(&if t.name.is_empty() { format!("thread {}", t.tid) } else { t.name.clone() }))
        .collect();
    let mut samples: Vec<_> = paths.into_iter().collect();
    samples.sort_unstable();
    for ((thread, path), (calls, self_ns)) in samples {
        let mut sample = Message::default();
        // Leaf first, as pprof stores stacks.
        sample.packed(1, path.iter().rev().map(|&k| location_id(tl, k)));
        sample.packed(2, [calls, self_ns]);
        let mut label = Message::default();
        label.uint(1, thread_key);
        label.uint(2, thread_names.get(thread).copied().unwrap_or(0));
        sample.message(3, &label);
        profile.message(SAMPLE, &sample);
    }
    let start = tl.timebase.realtime_ns(i128::from(tl.origin_ns));
    profile.uint(TIME_NANOS, u64::try_from(start).unwrap_or(0));
    profile.uint(DURATION_NANOS, last_end.saturating_sub(tl.origin_ns).max(0) as u64);
    profile.uint(DEFAULT_SAMPLE_TYPE, strings.id("self"));
    for s in &strings.table {
        profile.bytes(STRING_TABLE, s.as_bytes());
    }
    let mut gz = flate2::write::GzEncoder::new(out, flate2::Compression::default());
    gz.write_all(&profile.0)?;
    gz.finish()?.flush()?;
    Ok(found)
}

/// The location (and function) id of key index `k`: `k + 1`, and one past the keys for `[deeper]`.
fn location_id(tl: &Timeline<'_>, k: u32) -> u64 {
    if k == DEEPER { tl.keys.len() as u64 + 1 } else { u64::from(k) + 1 }
}
