//! Perfetto's native trace format (`-f perfetto`, `.perfetto-trace`,
//! `.pftrace`): a `Trace` protobuf, written packet by packet as the spans
//! stream past, so memory holds one thread's open spans.
//!
//! - The process track is described on sequence 1; each ring (a thread, or
//!   an interrupt context on firmware) has its own track, a child of the
//!   process's with its thread descriptor (pid, tid, name), and its own
//!   packet sequence (`trusted_packet_sequence_id` 2, 3, …). A sequence's
//!   first packet clears its incremental state
//!   (`SEQ_INCREMENTAL_STATE_CLEARED`) and sets the track as the default of
//!   its events (`trace_packet_defaults`); every later packet of a track
//!   event says it needs that state (`SEQ_NEEDS_INCREMENTAL_STATE`): it
//!   takes its track and clock from the defaults, its time from the clock,
//!   and (begins) its name and place from the interned data.
//! - Each span is a `TYPE_SLICE_BEGIN` and a `TYPE_SLICE_END` track event,
//!   nested as every output nests them. Times are nanoseconds since the
//!   dump's earliest span, as Chrome JSON's `ts`, written as deltas: the
//!   sequence's first packet defines an incremental clock (sequence-scoped
//!   clock 64, in a `ClockSnapshot` with `BOOTTIME` at the same 0) and makes
//!   it the sequence's default (`timestamp_clock_id`), so each packet's
//!   `timestamp` is the time since the sequence's previous one — one to
//!   three varint bytes instead of five, as the Perfetto SDK writes track
//!   events. A packet whose time is before its predecessor's (only spans a
//!   damaged ring placed out of order) gives its `BOOTTIME` time instead and
//!   leaves the clock where it was. Names are interned per sequence
//!   (`event_names`) on their first use, and so are source locations
//!   (`source_locations`: function, file, line) where the names have them.
//! - A span still open at the dump, one left without its exit (`longjmp`)
//!   and one whose children the ring lost carry a debug annotation saying
//!   so (`open`, `unwound`, `missing_children`), as do recorded arguments
//!   (`arg`) and, in a part of a split output, a span the part's window cut
//!   (`clipped`: 1 its start, 2 its end, 3 both).
//! - An output budget (`--max-bytes`) that left spans out says so in an
//!   instant event at the trace's start on the process track, named with it.
//!
//! Field numbers are those of perfetto's `protos/perfetto/trace/*.proto`;
//! the suite decodes every packet with the `perfetto` Python package's
//! `perfetto_trace_pb2` and compares the slices with the Chrome JSON's.

use std::io::{self, Write};

use super::protobuf::{Message, push_varint};
use crate::model::{Anomalies, SpanNs, Timeline};

// TracePacket fields.
const PACKET: u32 = 1; // Trace.packet
const CLOCK_SNAPSHOT: u32 = 6;
const TIMESTAMP: u32 = 8;
const SEQUENCE_ID: u32 = 10;
const TRACK_EVENT: u32 = 11;
const INTERNED_DATA: u32 = 12;
const SEQUENCE_FLAGS: u32 = 13;
const PACKET_DEFAULTS: u32 = 59;
const TRACK_DESCRIPTOR: u32 = 60;
const TIMESTAMP_CLOCK_ID: u32 = 58; // in TracePacket and TracePacketDefaults
// TracePacketDefaults, TrackEventDefaults.
const DEFAULTS_TRACK_EVENT: u32 = 11;
const DEFAULTS_TRACK_UUID: u32 = 11;
// ClockSnapshot, ClockSnapshot.Clock; the clocks.
const CLOCKS: u32 = 1;
const CLOCK_ID: u32 = 1;
const CLOCK_TIMESTAMP: u32 = 2;
const CLOCK_IS_INCREMENTAL: u32 = 3;
const BOOTTIME: u64 = 6; // BuiltinClock.BUILTIN_CLOCK_BOOTTIME, the trace's clock
const SEQUENCE_CLOCK: u64 = 64; // the first sequence-scoped clock id
// TracePacket.sequence_flags.
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
// TrackDescriptor, ProcessDescriptor, ThreadDescriptor.
const TRACK_UUID: u32 = 1;
const TRACK_NAME: u32 = 2;
const TRACK_PROCESS: u32 = 3;
const TRACK_THREAD: u32 = 4;
const TRACK_PARENT: u32 = 5;
const PROCESS_PID: u32 = 1;
const PROCESS_NAME: u32 = 6;
const THREAD_PID: u32 = 1;
const THREAD_TID: u32 = 2;
const THREAD_NAME: u32 = 5;
// TrackEvent.
const EVENT_DEBUG_ANNOTATIONS: u32 = 4;
const EVENT_TYPE: u32 = 9;
const EVENT_NAME_IID: u32 = 10;
const EVENT_TRACK_UUID: u32 = 11;
const EVENT_NAME: u32 = 23;
const EVENT_SOURCE_LOCATION_IID: u32 = 34;
const TYPE_SLICE_BEGIN: u64 = 1;
const TYPE_SLICE_END: u64 = 2;
const TYPE_INSTANT: u64 = 3;
// InternedData, EventName, SourceLocation, DebugAnnotationName, DebugAnnotation.
const INTERNED_EVENT_NAMES: u32 = 2;
const INTERNED_ANNOTATION_NAMES: u32 = 3;
const INTERNED_SOURCE_LOCATIONS: u32 = 4;
const IID: u32 = 1;
const NAME: u32 = 2;
const LOCATION_FILE: u32 = 2;
const LOCATION_FUNCTION: u32 = 3;
const LOCATION_LINE: u32 = 4;
const ANNOTATION_NAME_IID: u32 = 1;
const ANNOTATION_BOOL: u32 = 2;
const ANNOTATION_INT: u32 = 4;

/// What a sequence has interned for a key: nothing yet, its name, its name and source place.
const NOT_INTERNED: u8 = 0;
const NAME_ONLY: u8 = 1;
const NAME_AND_PLACE: u8 = 2;

/// The debug annotations a span may carry, by interned iid.
const ANNOTATIONS: [&str; 5] = ["arg", "open", "unwound", "missing_children", "clipped"];

/// Writes packets, each as `Trace.packet`, and knows what the current
/// sequence has interned.
struct Packets<'o> {
    out: &'o mut dyn Write,
    /// Packets not yet written to `out`: `buf[..pos]` (the rest is room for the next).
    buf: Vec<u8>,
    pos: usize,
    /// The current sequence.
    sequence: u64,
    /// Per key index, what the sequence has interned for it (iid = index + 1):
    /// [`NOT_INTERNED`], [`NAME_ONLY`] or [`NAME_AND_PLACE`].
    interned: Vec<u8>,
    /// Per key index, whether its name has a source place.
    placed: Vec<bool>,
    /// Per key index, the fields of its slice begin on this sequence (once interned).
    begin: Vec<Fields>,
    /// The fields of a slice end on this sequence.
    end: Fields,
    /// Nanoseconds since the dump's earliest span: what is subtracted.
    origin_ns: i64,
    /// The sequence's incremental clock: the time (since `origin_ns`) of its
    /// latest packet that had one.
    clock: u64,
}

/// Packets are written to the output in chunks of about this many bytes:
/// more than the 64 KiB of a `BufWriter` the caller may have, which then
/// passes them through instead of copying them (as `render::text` does).
const CHUNK: usize = 1 << 17;

/// Room a span's packet is built in, in place at the end of the buffer.
const SPAN_ROOM: usize = 64;

impl Packets<'_> {
    fn write(&mut self, packet: &[u8]) -> io::Result<()> {
        let mut head = Vec::with_capacity(20);
        push_varint(&mut head, u64::from(PACKET) << 3 | 2);
        push_varint(&mut head, packet.len() as u64);
        for part in [&head[..], packet] {
            self.room(part.len())?;
            self.buf[self.pos..self.pos + part.len()].copy_from_slice(part);
            self.pos += part.len();
        }
        Ok(())
    }

    /// Makes sure `n` bytes fit after `pos`, passing the buffer on when they would not.
    #[inline(always)]
    fn room(&mut self, n: usize) -> io::Result<()> {
        if self.pos + n > self.buf.len() { self.drain(n) } else { Ok(()) }
    }

    #[cold]
    fn drain(&mut self, n: usize) -> io::Result<()> {
        self.out.write_all(&self.buf[..self.pos])?;
        self.pos = 0;
        if n > self.buf.len() {
            self.buf.resize(n, 0);
        }
        Ok(())
    }

    /// The time of a packet at `ns` (the dump's nanoseconds): `Ok(delta)` on
    /// the sequence's incremental clock, which moves to it; or `Err(time)`,
    /// the time since the origin, for a packet before the clock's time.
    #[inline(always)]
    fn tick(&mut self, ns: i64) -> Result<u64, u64> {
        let t = ns.saturating_sub(self.origin_ns).max(0) as u64;
        let delta = t.checked_sub(self.clock).ok_or(t)?;
        self.clock = t;
        Ok(delta)
    }

    /// Appends a span's packet: `Trace.packet { timestamp, REST }`, REST
    /// the packet's fields after its timestamp, encoded ahead (they are the
    /// same for every span of a key on a sequence); built where it goes in
    /// the buffer, its length in one byte.
    #[inline(always)]
    fn span_packet(&mut self, ns: i64, rest: &Fields) -> io::Result<()> {
        let delta = match self.tick(ns) {
            Ok(delta) => delta,
            Err(time) => return self.span_packet_before(time, rest),
        };
        self.room(SPAN_ROOM)?;
        let Some(bytes) = self.buf[self.pos..].first_chunk_mut::<SPAN_ROOM>() else { return Ok(()) };
        bytes[2] = (TIMESTAMP << 3) as u8;
        let mut len = 3 + varint_at(delta, bytes, 3);
        if let Some(to) = bytes.get_mut(len..).and_then(|b| b.first_chunk_mut::<FIELDS>()) {
            *to = rest.bytes;
            len += rest.len;
        }
        bytes[0] = (PACKET << 3 | 2) as u8;
        bytes[1] = (len - 2) as u8;
        self.pos += len;
        Ok(())
    }

    /// A span's packet at `time` since the origin, before the sequence
    /// clock's time: on `BOOTTIME`, which the clock snapshot set equal to it.
    #[cold]
    #[inline(never)]
    fn span_packet_before(&mut self, time: u64, rest: &Fields) -> io::Result<()> {
        let mut packet = Message::default();
        on_boottime(&mut packet, time);
        packet.0.extend_from_slice(&rest.bytes[..rest.len]);
        self.write(&packet.0)
    }

    /// Adds `timestamp` (and, if needed, `timestamp_clock_id`) for a packet at `ns`.
    fn stamp(&mut self, packet: &mut Message, ns: i64) {
        match self.tick(ns) {
            Ok(delta) => packet.uint(TIMESTAMP, delta),
            Err(time) => on_boottime(packet, time),
        }
    }

    fn finish(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf[..self.pos])?;
        self.pos = 0;
        self.out.flush()
    }
}

/// A packet's time, `time` since the origin, on `BOOTTIME` rather than the sequence's clock.
fn on_boottime(packet: &mut Message, time: u64) {
    packet.uint(TIMESTAMP, time);
    packet.uint(TIMESTAMP_CLOCK_ID, BOOTTIME);
}

/// Writes `v` as a varint at `at` in `bytes`; returns its length (at most
/// 10 bytes).
#[inline(always)]
fn varint_at(mut v: u64, bytes: &mut [u8; SPAN_ROOM], mut at: usize) -> usize {
    let start = at;
    while v >= 0x80 {
        bytes[at] = v as u8 | 0x80;
        at += 1;
        v >>= 7;
    }
    bytes[at] = v as u8;
    at + 1 - start
}

/// Bytes of encoded fields a span's packet ends with.
const FIELDS: usize = 32;

/// A span packet's fields after its timestamp, encoded once per key and
/// sequence: `trusted_packet_sequence_id`, the sequence flags (it needs the
/// sequence's incremental state), and the track event (its type, name iid
/// and place iid).
#[derive(Clone, Copy, Debug)]
struct Fields {
    bytes: [u8; FIELDS],
    len: usize,
}

impl Fields {
    /// The fields of a span's `kind` event on `sequence`, naming key index
    /// `name` (interned; with its place, if `located`).
    fn new(sequence: u64, kind: u64, name: Option<(u64, bool)>) -> Self {
        let mut event = Message::default();
        event.uint(EVENT_TYPE, kind);
        let mut m = Message::default();
        m.uint(SEQUENCE_ID, sequence);
        m.uint(SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        if let Some((iid, located)) = name {
            event.uint(EVENT_NAME_IID, iid);
            if located {
                event.uint(EVENT_SOURCE_LOCATION_IID, iid);
            }
        }
        m.message(TRACK_EVENT, &event);
        // At most 1 + 10 (sequence) + 2 (flags) + 2 (event's key and length) + 2 (type)
        // + 1 + 5 (name iid below 2^32) + 2 + 5 (place iid): 30 bytes.
        let mut bytes = [0; FIELDS];
        let len = m.0.len().min(FIELDS);
        bytes[..len].copy_from_slice(&m.0[..len]);
        Fields { bytes, len }
    }
}

/// Writes `tl` as a Perfetto trace to `out`; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    write_trace(tl, None, out)
}

/// Writes `tl` as part `part` (0, 1, …) of a trace written as a live capture arrives: the parts
/// one after another are one trace. Each part's packets are on sequences of their own (the
/// part's number in the high bits of their ids), each thread's track keeps its uuid (its tid
/// plus 2) in every part, and times count from the same origin (`tl.origin_ns`, which the
/// caller keeps); trace_processor orders the packets by time.
pub fn write_part(tl: &Timeline<'_>, part: u32, out: &mut dyn Write) -> io::Result<Anomalies> {
    write_trace(tl, Some(part), out)
}

fn write_trace(tl: &Timeline<'_>, part: Option<u32>, out: &mut dyn Write) -> io::Result<Anomalies> {
    // Sequence ids are 32 bits: a part's in the high 16 (parts past 65,535 reuse ids, each
    // sequence starting with its state cleared).
    let sequence_base = part.map_or(0, |p| u64::from(p % 0xffff + 1) << 16);
    let trace = tl.trace;
    let mut packets = Packets {
        out,
        buf: vec![0; CHUNK],
        pos: 0,
        sequence: 1,
        interned: vec![NOT_INTERNED; tl.keys.len()],
        placed: placed(tl),
        begin: vec![Fields::new(1, TYPE_SLICE_BEGIN, None); tl.keys.len()],
        end: Fields::new(1, TYPE_SLICE_END, None),
        origin_ns: tl.origin_ns,
        clock: 0,
    };
    // Sequence 1: the process track, and what an output budget left out.
    packets.write(&process_packet(tl, sequence_base))?;
    if let Some(note) = note_packet(tl, sequence_base) {
        packets.write(&note)?;
    }
    let mut threads = tl.threads();
    let mut open: Vec<SpanNs> = Vec::new();
    let mut scratch = Message::default();
    while let Some(mut t) = threads.next() {
        let thread = &trace.threads[t.thread];
        let (uuid, sequence) = match part {
            Some(_) => (thread.tid.saturating_add(2), sequence_base + (t.thread as u64 + 2) % 0xffff),
            None => (t.thread as u64 + 2, t.thread as u64 + 2),
        };
        packets.start_sequence(sequence);
        for packet in thread_packets(tl, t.thread, uuid, sequence) {
            packets.write(&packet)?;
        }
        let lost = tl.lost_children(thread);
        open.clear();
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while let Some(top) = open.last() {
                    if top.encloses(s) {
                        break;
                    }
                    slice_end(&mut packets, top.exit_ns)?;
                    open.pop();
                }
                let marks = marks(s, &lost);
                slice_begin(&mut packets, &mut scratch, tl, s, marks)?;
                open.push(*s);
            }
        }
        while let Some(top) = open.pop() {
            slice_end(&mut packets, top.exit_ns)?;
        }
    }
    packets.finish()?;
    Ok(threads.anomalies())
}

impl Packets<'_> {
    /// Starts sequence `id`: nothing is interned on it yet, its clock at 0.
    fn start_sequence(&mut self, id: u64) {
        self.sequence = id;
        self.clock = 0;
        self.interned.iter_mut().for_each(|n| *n = NOT_INTERNED);
        self.end = Fields::new(id, TYPE_SLICE_END, None);
    }
}

/// The process track's descriptor packet (on sequence 1 of the trace or part).
pub(crate) fn process_packet(tl: &Timeline<'_>, sequence_base: u64) -> Vec<u8> {
    let trace = tl.trace;
    let mut process = Message::default();
    process.uint(PROCESS_PID, u64::from(trace.process.pid));
    let process_name = if trace.process.name.is_empty() { "process" } else { &trace.process.name };
    process.bytes(PROCESS_NAME, process_name.as_bytes());
    let mut track = Message::default();
    track.uint(TRACK_UUID, PROCESS_UUID);
    track.message(TRACK_PROCESS, &process);
    let mut first = Message::default();
    first.uint(SEQUENCE_ID, sequence_base + 1);
    first.message(TRACK_DESCRIPTOR, &track);
    first.0
}

/// The process track's uuid.
const PROCESS_UUID: u64 = 1;

/// What an output budget left out, if one did: an instant event on the process track at the
/// trace's start, named with it (sequence 1 of the trace).
pub(crate) fn note_packet(tl: &Timeline<'_>, sequence_base: u64) -> Option<Vec<u8>> {
    let cut = tl.cut.as_ref()?;
    let mut event = Message::default();
    event.uint(EVENT_TYPE, TYPE_INSTANT);
    event.uint(EVENT_TRACK_UUID, PROCESS_UUID);
    event.bytes(EVENT_NAME, format!("ringtrace: {}", cut.describe()).as_bytes());
    let mut packet = Message::default();
    packet.uint(TIMESTAMP, 0);
    packet.uint(SEQUENCE_ID, sequence_base + 1);
    packet.message(TRACK_EVENT, &event);
    Some(packet.0)
}

/// Thread `index`'s first two packets on its own `sequence`: the sequence's state cleared, its
/// defaults (the track `uuid`, the clock), the annotations' names and the clock at 0 on
/// BOOTTIME's 0; then the track's descriptor.
pub(crate) fn thread_packets(tl: &Timeline<'_>, index: usize, uuid: u64, sequence: u64) -> [Vec<u8>; 2] {
    let thread = &tl.trace.threads[index];
    let mut descriptor = Message::default();
    descriptor.uint(THREAD_PID, u64::from(tl.trace.process.pid));
    descriptor.uint(THREAD_TID, thread.tid);
    let name = if thread.name.is_empty() { format!("thread {}", thread.tid) } else { thread.name.clone() };
    descriptor.bytes(THREAD_NAME, name.as_bytes());
    let mut track = Message::default();
    track.uint(TRACK_UUID, uuid);
    track.uint(TRACK_PARENT, PROCESS_UUID);
    track.bytes(TRACK_NAME, name.as_bytes());
    track.message(TRACK_THREAD, &descriptor);
    let mut event_defaults = Message::default();
    event_defaults.uint(DEFAULTS_TRACK_UUID, uuid);
    let mut defaults = Message::default();
    defaults.message(DEFAULTS_TRACK_EVENT, &event_defaults);
    defaults.uint(TIMESTAMP_CLOCK_ID, SEQUENCE_CLOCK);
    let mut interned = Message::default();
    for (i, name) in ANNOTATIONS.iter().enumerate() {
        let mut entry = Message::default();
        entry.uint(IID, i as u64 + 1);
        entry.bytes(NAME, name.as_bytes());
        interned.message(INTERNED_ANNOTATION_NAMES, &entry);
    }
    let mut snapshot = Message::default();
    for (id, incremental) in [(BOOTTIME, false), (SEQUENCE_CLOCK, true)] {
        let mut clock = Message::default();
        clock.uint(CLOCK_ID, id);
        clock.uint(CLOCK_TIMESTAMP, 0);
        if incremental {
            clock.uint(CLOCK_IS_INCREMENTAL, 1);
        }
        snapshot.message(CLOCKS, &clock);
    }
    let mut first = Message::default();
    first.uint(SEQUENCE_ID, sequence);
    first.uint(SEQUENCE_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED);
    first.message(PACKET_DEFAULTS, &defaults);
    first.message(INTERNED_DATA, &interned);
    first.message(CLOCK_SNAPSHOT, &snapshot);
    let mut second = Message::default();
    second.uint(SEQUENCE_ID, sequence);
    second.message(TRACK_DESCRIPTOR, &track);
    [first.0, second.0]
}

/// Per key index, whether its name has a source place (interned with it).
pub(crate) fn placed(tl: &Timeline<'_>) -> Vec<bool> {
    tl.keys.iter().map(|&k| tl.names.get(k).is_some_and(|n| n.file.is_some())).collect()
}

/// The `interned_data` field a key's first span on a sequence carries: its name, and its place
/// if `placed`; and whether it has the place.
pub(crate) fn interned_data(tl: &Timeline<'_>, key: usize, placed: bool) -> (Vec<u8>, bool) {
    let mut interned = Message::default();
    let mut entry = Message::default();
    entry.uint(IID, key as u64 + 1);
    entry.bytes(NAME, tl.name(key).as_bytes());
    interned.message(INTERNED_EVENT_NAMES, &entry);
    let place = tl.keys.get(key).and_then(|&k| tl.names.get(k)).filter(|_| placed);
    if let Some(name) = place {
        let mut entry = Message::default();
        entry.uint(IID, key as u64 + 1);
        entry.bytes(LOCATION_FILE, name.file.as_deref().unwrap_or_default().as_bytes());
        entry.bytes(LOCATION_FUNCTION, name.name.as_bytes());
        if let Some(line) = name.line {
            entry.uint(LOCATION_LINE, u64::from(line));
        }
        interned.message(INTERNED_SOURCE_LOCATIONS, &entry);
    }
    let mut field = Message::default();
    field.message(INTERNED_DATA, &interned);
    (field.0, place.is_some())
}

/// The marks a span's begin carries as debug annotations: `arg`, `open`, `unwound`,
/// `missing_children`, `clipped` (a split output's part cut it: 1 its start, 2 its end, 3 both).
pub(crate) fn marks(s: &SpanNs, lost: &crate::model::LostChildren<'_>) -> [bool; 5] {
    let clipped = s.clipped_start() || s.clipped_end();
    [s.arg().is_some(), s.open(), s.unwound(), lost.of(s), clipped]
}

/// What the debug annotations of `s` with `marks` take in its event.
pub(crate) fn annotations_len(s: &SpanNs, marks: [bool; 5]) -> usize {
    let mut event = Message::default();
    annotate(&mut event, s, marks);
    event.0.len()
}

/// What the fields after a span packet's timestamp take on `sequence`: a begin's of key index
/// `key` (`located`: with its place iid), or an end's (`None`).
pub(crate) fn fields_len(sequence: u64, begin: Option<(usize, bool)>) -> usize {
    match begin {
        Some((key, located)) => Fields::new(sequence, TYPE_SLICE_BEGIN, Some((key as u64 + 1, located))).len,
        None => Fields::new(sequence, TYPE_SLICE_END, None).len,
    }
}

/// A span packet's timestamp field and framing beyond its time's varint and its fields: the
/// `Trace.packet` key, a one-byte length, the `timestamp` key.
pub(crate) const SPAN_FRAMING: usize = 3;

/// What a packet of `body` bytes takes as `Trace.packet`.
pub(crate) fn packet_len(body: usize) -> usize {
    1 + crate::budget::varint_len(body as u64) + body
}

/// The `TYPE_SLICE_BEGIN` of `s` (`interned`: room for the data it interns).
#[inline]
fn slice_begin(
    packets: &mut Packets<'_>,
    interned: &mut Message,
    tl: &Timeline<'_>,
    s: &SpanNs,
    marks: [bool; 5],
) -> io::Result<()> {
    let key = s.key_index as usize;
    let state = packets.interned.get(key).copied().unwrap_or(NOT_INTERNED);
    if state == NOT_INTERNED || marks.contains(&true) {
        return slice_begin_slow(packets, interned, tl, s, marks);
    }
    match packets.begin.get(key) {
        Some(fields) => {
            let fields = *fields;
            packets.span_packet(s.enter_ns, &fields)
        }
        None => Ok(()),
    }
}

/// A `TYPE_SLICE_BEGIN` that interns its name or place, or has marks.
#[cold]
#[inline(never)]
fn slice_begin_slow(
    packets: &mut Packets<'_>,
    packet: &mut Message,
    tl: &Timeline<'_>,
    s: &SpanNs,
    marks: [bool; 5],
) -> io::Result<()> {
    let key = s.key_index as usize;
    packet.0.clear();
    packets.stamp(packet, s.enter_ns);
    packet.uint(SEQUENCE_ID, packets.sequence);
    // The name (and its place) interned on first use.
    let Some(state) = packets.interned.get_mut(key) else { return Ok(()) };
    if *state == NOT_INTERNED {
        let (interned, located) = interned_data(tl, key, packets.placed[key]);
        *state = if located { NAME_AND_PLACE } else { NAME_ONLY };
        packet.0.extend_from_slice(&interned);
    }
    let located = *state == NAME_AND_PLACE;
    if let Some(fields) = packets.begin.get_mut(key) {
        *fields = Fields::new(packets.sequence, TYPE_SLICE_BEGIN, Some((key as u64 + 1, located)));
    }
    packet.uint(SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
    let mut event = Message::default();
    event.uint(EVENT_TYPE, TYPE_SLICE_BEGIN);
    event.uint(EVENT_NAME_IID, key as u64 + 1);
    if located {
        event.uint(EVENT_SOURCE_LOCATION_IID, key as u64 + 1);
    }
    if marks.contains(&true) {
        annotate(&mut event, s, marks);
    }
    packet.message(TRACK_EVENT, &event);
    packets.write(&packet.0)
}

/// The debug annotations of a span that has a mark.
#[cold]
fn annotate(event: &mut Message, s: &SpanNs, marks: [bool; 5]) {
    for i in (0..marks.len()).filter(|&i| marks[i]) {
        let mut annotation = Message::default();
        annotation.uint(ANNOTATION_NAME_IID, i as u64 + 1);
        match (i, s.arg()) {
            // Shown signed: arguments are recorded as `value as u64`, so a negative one wraps.
            (0, Some(arg)) => annotation.uint(ANNOTATION_INT, arg),
            (4, _) => annotation.uint(ANNOTATION_INT, u64::from(s.clipped_start()) | u64::from(s.clipped_end()) << 1),
            _ => annotation.uint(ANNOTATION_BOOL, 1),
        }
        event.message(EVENT_DEBUG_ANNOTATIONS, &annotation);
    }
}

/// A `TYPE_SLICE_END` at `exit_ns` (on the sequence's default track; no interned data).
#[inline]
fn slice_end(packets: &mut Packets<'_>, exit_ns: i64) -> io::Result<()> {
    let fields = packets.end;
    packets.span_packet(exit_ns, &fields)
}

#[cfg(test)]
mod tests {
    use super::super::protobuf::push_varint;
    use super::*;

    #[test]
    fn varints_in_place_match_the_protobuf_encoding() {
        let mut rng = crate::model::test_dumps::XorShift(0x2545_F491_4F6C_DD1D);
        let powers = (0..64).flat_map(|p| {
            let x = 1u64 << p;
            [x - 1, x, x + 1]
        });
        for v in powers.chain([0, u64::MAX]).chain((0..50_000).map(|_| rng.next() >> (rng.next() % 64))) {
            let mut expected = Vec::new();
            push_varint(&mut expected, v);
            let mut bytes = [0xAA; SPAN_ROOM];
            let len = varint_at(v, &mut bytes, 3);
            assert_eq!(&bytes[3..3 + len], &expected[..], "{v:#x}");
        }
    }
}
