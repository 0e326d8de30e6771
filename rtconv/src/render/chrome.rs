//! Chrome trace event JSON (object format), as Perfetto and chrome://tracing load it.
//!
//! - One complete (`X`) event per span — or, with `--chrome-events be`, a
//!   `B` and an `E` event per span, the name and args on both, never mixed
//!   with `X` — with `args.arg` when the span
//!   recorded an integer argument, `args.open` when it was still running
//!   at dump time (it then ends at the dump), and `args.unwound` when it was
//!   left by a `longjmp` or an exception without its exit (it ends where the
//!   recorder noticed), and `args.missing_children` when children of it were
//!   overwritten or dropped (its duration is whole; its children in the trace
//!   are not all it had), and `args.clipped` (`start`, `end`, `both`) where a
//!   part of a split output cut it; `ts` is microseconds since the
//!   earliest span with exactly three decimals, computed from integer
//!   nanoseconds, and `dur` is `exit_ns - enter_ns` in the same unit.
//! - Events of a thread are sorted by start, longer first, so parents come
//!   before the children that start with them.
//! - `process_name` and `thread_name` metadata events name the tracks; a
//!   thread that lost spans gets instant events saying how many: spans
//!   overwritten at its first span, spans dropped at the end of its last;
//!   and the top-level `metadata` object carries the absolute start time,
//!   where the trace came from, the losses of all its threads and, with
//!   filters, what they kept and left out (`filter`).

use std::io::{self, Write};

use super::text::{Piece, Pieces, Short, Text};
use crate::model::{Anomalies, LostChildren, SpanNs, Timeline};

/// What stands between an `X` event's start and its duration.
pub(crate) const DUR_TEXT: &[u8] = b",\"dur\":";
const DUR: Short = Short::new(DUR_TEXT);

/// How to write Chrome JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// A `B` and an `E` event per span instead of one `X` event.
    pub begin_end: bool,
    /// Add each span's source place (`at`), inline chain (`inlined_into`) and
    /// module path (`module`) to its args.
    pub args: bool,
}

/// Writes `tl` as Chrome trace JSON to `out`; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, opts: &Options, out: &mut dyn Write) -> io::Result<Anomalies> {
    let found = write_many(&[tl], opts, out)?;
    Ok(found.into_iter().next().unwrap_or_default())
}

/// Writes several dumps as one Chrome trace, aligned by their realtime
/// anchors: `ts` counts from the earliest span of them all, each dump is
/// its own process (a pid seen before gets `1_000_000 × n` added). Returns
/// what each timeline's spans had wrong, in the order given.
pub fn write_many(timelines: &[&Timeline<'_>], opts: &Options, out: &mut dyn Write) -> io::Result<Vec<Anomalies>> {
    let mut out = Text::new(out);
    let found = write_all_dumps(timelines, opts, &mut out)?;
    out.flush()?;
    Ok(found)
}

/// Where each of several dumps goes in one trace: each dump's first span in realtime ns, the
/// earliest of them (the trace's zero), and each dump's pid (a pid seen before gets
/// `1_000_000 × n` added).
pub(crate) struct Layout {
    starts: Vec<i128>,
    zero: i128,
    pids: Vec<u64>,
}

impl Layout {
    pub(crate) fn new(timelines: &[&Timeline<'_>]) -> Self {
        let starts: Vec<i128> = timelines.iter().map(|tl| tl.timebase.realtime_ns(i128::from(tl.origin_ns))).collect();
        let zero = starts.iter().copied().min().unwrap_or(0);
        let mut pids: Vec<u64> = Vec::new();
        for tl in timelines {
            let mut pid = u64::from(tl.trace.process.pid);
            while pids.contains(&pid) {
                pid += 1_000_000;
            }
            pids.push(pid);
        }
        Layout { starts, zero, pids }
    }

    /// Dump `i`'s pid, and what its monotonic ns get added to become `ts` (its zero's offset
    /// from the earliest, less its origin).
    pub(crate) fn place(&self, i: usize, tl: &Timeline<'_>) -> (u64, i64) {
        let offset = i64::try_from(self.starts[i] - self.zero).unwrap_or(i64::MAX);
        (self.pids[i], offset.saturating_sub(tl.origin_ns))
    }
}

/// What the trace begins with.
pub(crate) const HEADER: &[u8] = b"{\"traceEvents\":[\n";

fn write_all_dumps(timelines: &[&Timeline<'_>], opts: &Options, out: &mut Text<'_>) -> io::Result<Vec<Anomalies>> {
    let layout = Layout::new(timelines);
    let mut found = Vec::with_capacity(timelines.len());
    out.write_all(HEADER)?;
    for (i, tl) in timelines.iter().enumerate() {
        let (pid, shift) = layout.place(i, tl);
        found.push(write_process(tl, opts, pid, shift, i == 0, out)?);
    }
    let filtered: Vec<crate::model::Filtered> = found.iter().map(|f| f.filtered).collect();
    write_metadata(timelines, &layout, &filtered, out)?;
    Ok(found)
}

/// The trace's end: the event list closed, then the metadata object — where the trace came
/// from, its start, losses, and what the filters (`filtered`: each dump's counts) and an
/// output budget left out.
pub(crate) fn write_metadata(
    timelines: &[&Timeline<'_>],
    layout: &Layout,
    filtered: &[crate::model::Filtered],
    out: &mut dyn Write,
) -> io::Result<()> {
    let zero = layout.zero;
    out.write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"ringtrace\":{")?;
    let first = timelines.first();
    if let Some(tl) = first {
        let trace = tl.trace;
        write!(out, "\"dump\":{}", json_string(&trace.path.to_string_lossy()))?;
        write!(out, ",\"producer\":{}", json_string(&trace.process.producer))?;
        if let Some(reason) = trace.process.reason {
            write!(out, ",\"dump_reason\":\"{}\"", reason.label())?;
        }
        write!(out, ",\"start_realtime_ns\":{zero}")?;
        write!(out, ",\"start_monotonic_ns\":{}", tl.origin_ns)?;
        write!(out, ",\"counter_hz\":{:.0}", tl.timebase.hz())?;
        let mut losses = crate::model::Losses::default();
        for tl in timelines {
            losses += tl.trace.losses();
        }
        write!(out, ",\"losses\":{}", losses.to_json())?;
        if let Some(selection) = &tl.selection {
            let mut all = crate::model::Filtered::default();
            for f in filtered {
                all += *f;
            }
            write!(out, ",\"filter\":{}", all.to_json(&selection.filter.describe()))?;
        }
        if let Some(cut) = &tl.cut {
            write!(out, ",\"budget\":{}", cut.to_json())?;
        }
    }
    if timelines.len() > 1 {
        out.write_all(b",\"dumps\":[")?;
        for (i, tl) in timelines.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(
                out,
                "{sep}{{\"dump\":{},\"pid\":{},\"start_realtime_ns\":{}}}",
                json_string(&tl.trace.path.to_string_lossy()),
                layout.pids[i],
                layout.starts[i]
            )?;
        }
        out.write_all(b"]")?;
    }
    out.write_all(b"}}}\n")
}

/// What every event of key index `k` has before its time (`ph` its phase), its name escaped.
pub(crate) fn head(tl: &Timeline<'_>, ph: &str, k: usize) -> String {
    format!(",\n{{\"ph\":\"{ph}\",\"name\":{},\"ts\":", json_string(tl.name(k)))
}

/// What every span event of a thread ends with.
pub(crate) fn tail(pid: u64, tid: u64) -> String {
    format!(",\"pid\":{pid},\"tid\":{tid}}}")
}

/// The process's metadata event (`first`: the trace's first event, no comma before it).
pub(crate) fn process_event(tl: &Timeline<'_>, pid: u64, first: bool) -> String {
    let name = &tl.trace.process.name;
    let name = if name.is_empty() { "process" } else { name };
    let comma = if first { "" } else { ",\n" };
    format!(
        "{comma}{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{pid},\"args\":{{\"name\":{}}}}}",
        json_string(name)
    )
}

/// A thread's metadata event.
pub(crate) fn thread_event(thread: &crate::model::ThreadTrace, pid: u64) -> String {
    let tid = thread.tid;
    let name = if thread.name.is_empty() { format!("thread {tid}") } else { thread.name.clone() };
    format!(
        ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
        json_string(&name)
    )
}

/// A thread's loss marker, `count` spans (none if 0), as the text before and after its time.
pub(crate) fn loss_marker(
    thread: &crate::model::ThreadTrace,
    pid: u64,
    count: u64,
    what: &str,
) -> Option<(String, String)> {
    (count > 0).then(|| {
        let before = format!(",\n{{\"name\":\"ringtrace: {count} {what}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":");
        let after = format!(
            ",\"pid\":{pid},\"tid\":{},\"args\":{{\"spans_in_dump\":{},\"overwritten\":{},\"dropped\":{}}}}}",
            thread.tid,
            thread.span_count(),
            thread.overwritten(),
            thread.dropped
        );
        (before, after)
    })
}

/// The loss markers' texts: spans overwritten before the first span kept, dropped after the last.
pub(crate) const OVERWRITTEN: &str = "earlier span(s) overwritten";
/// See [`OVERWRITTEN`].
pub(crate) const DROPPED: &str = "later span(s) dropped (ring full)";

/// One dump's process: its metadata, loss markers and span events.
fn write_process(
    tl: &Timeline<'_>,
    opts: &Options,
    pid: u64,
    shift: i64,
    first: bool,
    out: &mut Text<'_>,
) -> io::Result<Anomalies> {
    let trace = tl.trace;
    // With `args`, each key's place, escaped once (none without).
    let places: Vec<String> =
        if opts.args { tl.keys.iter().map(|&key| key_args(tl, key)).collect() } else { Vec::new() };
    // What every event of a key has before its time, its name escaped once: one piece per key.
    let heads = |ph: &str| -> Pieces {
        let mut pieces = Pieces::default();
        for k in 0..tl.keys.len() {
            pieces.push(head(tl, ph, k).as_bytes());
        }
        pieces
    };
    let (x_heads, b_heads, e_heads) = if opts.begin_end {
        (Pieces::default(), heads("B"), heads("E"))
    } else {
        (heads("X"), Pieces::default(), Pieces::default())
    };
    out.write_all(process_event(tl, pid, first).as_bytes())?;
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &trace.threads[t.thread];
        out.write_all(thread_event(thread, pid).as_bytes())?;
        // The fixed part of every event of this thread, written once.
        let tail = Piece::new(tail(pid, thread.tid).as_bytes());
        // Losses, where they happened: overwritten spans before the first one kept, dropped ones after the last.
        let loss = |count: u64, what: &str, at: Option<i64>, out: &mut Text<'_>| -> io::Result<()> {
            let Some((before, after)) = loss_marker(thread, pid, count, what) else { return Ok(()) };
            out.write_all(before.as_bytes())?;
            out.us(at.map_or(0, |at| at.saturating_add(shift)))?;
            out.write_all(after.as_bytes())
        };
        let (mut first_enter, mut last_exit): (Option<i64>, Option<i64>) = (None, None);
        let mut open: Vec<SpanNs> = Vec::new();
        let args = Args { places: &places, lost: tl.lost_children(thread) };
        while let Some(batch) = t.next_batch() {
            if first_enter.is_none() {
                first_enter = batch.first().map(|s| s.enter_ns);
                loss(thread.overwritten(), OVERWRITTEN, first_enter, out)?;
            }
            if thread.dropped > 0 {
                last_exit = last_exit.max(batch.iter().map(|s| s.exit_ns).max());
            }
            if opts.begin_end {
                write_begin_end(shift, batch, &mut open, (&b_heads, &e_heads), &args, &tail, out)?;
                continue;
            }
            for s in batch {
                let key = s.key_index as usize;
                let (ts, dur) = (s.enter_ns.saturating_add(shift), s.exit_ns.saturating_sub(s.enter_ns));
                out.piece_us_us(&x_heads, key, ts, &DUR, dur)?;
                args.write(s, out)?;
                out.piece(&tail)?;
            }
        }
        // The `E` events of the spans still open: the thread's last span is in.
        write_begin_end(shift, &[], &mut open, (&b_heads, &e_heads), &args, &tail, out)?;
        if first_enter.is_none() {
            loss(thread.overwritten(), OVERWRITTEN, None, out)?;
        }
        loss(thread.dropped, DROPPED, last_exit, out)?;
    }
    Ok(threads.anomalies())
}

/// `"at":"file:line","inlined_into":"a < b","module":"/path"` for a key, as far as known.
pub(crate) fn key_args(tl: &Timeline<'_>, key: u64) -> String {
    let mut fields = Vec::new();
    if let Some(name) = tl.names.get(key) {
        if let Some(file) = &name.file {
            let at = match name.line {
                Some(line) => format!("{file}:{line}"),
                None => file.clone(),
            };
            fields.push(format!("\"at\":{}", json_string(&at)));
        }
        if !name.inlined_into.is_empty() {
            let chain: Vec<&str> = name.inlined_into.iter().map(|f| f.function.as_str()).collect();
            fields.push(format!("\"inlined_into\":{}", json_string(&chain.join(" < "))));
        }
    }
    if let Some(module) = crate::model::module_of(tl.trace, key) {
        fields.push(format!("\"module\":{}", json_string(&module.path.to_string_lossy())));
    }
    fields.join(",")
}

/// What a span's `args` say: its key's place (with `--args`), its recorded
/// argument, whether it was still open at the dump, whether it was unwound,
/// and whether children of it are missing from the ring
/// (`missing_children`, see [`LostChildren`]).
struct Args<'x> {
    places: &'x [String],
    lost: LostChildren<'x>,
}

impl Args<'_> {
    #[inline]
    fn write(&self, s: &SpanNs, out: &mut Text<'_>) -> io::Result<()> {
        let place = self.places.get(s.key_index as usize).map_or("", String::as_str);
        let missing_children = self.lost.of(s);
        if s.arg().is_none()
            && !s.open()
            && !s.unwound()
            && !missing_children
            && place.is_empty()
            && !s.clipped_start()
            && !s.clipped_end()
        {
            return Ok(());
        }
        write_args(s, place, missing_children, out)
    }
}

/// The length of what [`Args::write`] writes for `s` (`place`: its key's place text).
pub(crate) fn args_len(s: &SpanNs, place: &str, missing_children: bool) -> usize {
    let items = [
        (!place.is_empty()).then_some(place.len()),
        s.arg().map(|arg| "\"arg\":".len() + signed_len(arg as i64)),
        s.open().then_some("\"open\":true".len()),
        s.unwound().then_some("\"unwound\":true".len()),
        missing_children.then_some("\"missing_children\":true".len()),
        s.clipped().map(|c| "\"clipped\":\"\"".len() + c.len()),
    ];
    let (count, len) = items.iter().flatten().fold((0, 0), |(n, l), i| (n + 1, l + i));
    if count == 0 { 0 } else { ",\"args\":{".len() + len + (count - 1) + 1 }
}

/// The length of `v` in decimal, its sign included (as `write!` writes it).
fn signed_len(v: i64) -> usize {
    usize::from(v < 0) + v.unsigned_abs().checked_ilog10().map_or(1, |log| log as usize + 1)
}

#[cold]
#[inline(never)]
fn write_args(s: &SpanNs, place: &str, missing_children: bool, out: &mut Text<'_>) -> io::Result<()> {
    out.write_all(b",\"args\":{")?;
    let mut first = true;
    let mut sep = |out: &mut Text<'_>| -> io::Result<()> {
        if !std::mem::take(&mut first) {
            out.write_all(b",")?;
        }
        Ok(())
    };
    if !place.is_empty() {
        sep(out)?;
        out.write_all(place.as_bytes())?;
    }
    if let Some(arg) = s.arg() {
        sep(out)?;
        // Shown signed: arguments are recorded as `value as u64`, so a negative one wraps.
        write!(out, "\"arg\":{}", arg as i64)?;
    }
    if s.open() {
        sep(out)?;
        out.write_all(b"\"open\":true")?;
    }
    if s.unwound() {
        sep(out)?;
        out.write_all(b"\"unwound\":true")?;
    }
    if missing_children {
        sep(out)?;
        out.write_all(b"\"missing_children\":true")?;
    }
    if let Some(c) = s.clipped() {
        sep(out)?;
        write!(out, "\"clipped\":\"{c}\"")?;
    }
    out.write_all(b"}")
}

fn write_begin_end(
    shift: i64,
    batch: &[SpanNs],
    open: &mut Vec<SpanNs>,
    (b_heads, e_heads): (&Pieces, &Pieces),
    args: &Args<'_>,
    tail: &Piece,
    out: &mut Text<'_>,
) -> io::Result<()> {
    // An `E` carries its `B`'s args: speedscope matches the two by name and args.
    let end = |s: &SpanNs, out: &mut Text<'_>| -> io::Result<()> {
        out.piece_at(e_heads, s.key_index as usize)?;
        out.us(s.exit_ns.saturating_add(shift))?;
        args.write(s, out)?;
        out.piece(tail)
    };
    for s in batch {
        while let Some(top) = open.last() {
            if top.encloses(s) {
                break;
            }
            end(top, out)?;
            open.pop();
        }
        out.piece_at(b_heads, s.key_index as usize)?;
        out.us(s.enter_ns.saturating_add(shift))?;
        args.write(s, out)?;
        out.piece(tail)?;
        open.push(*s);
    }
    if batch.is_empty() {
        while let Some(top) = open.pop() {
            end(&top, out)?;
        }
    }
    Ok(())
}

fn json_string(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

#[cfg(test)]
mod tests {
    use ringtrace_format::Record;

    use super::*;
    use crate::model::test_dumps::{TestRing, with_rings};

    #[test]
    fn an_arguments_length_is_that_of_its_decimal_text() {
        for v in [0, 1, 9, 10, 99, 100, -1, -9, -10, 12_345, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(signed_len(v), v.to_string().len(), "{v}");
        }
    }

    /// (name, ts, args) of every span event.
    fn spans(rings: &[TestRing], dump_ticks: u64) -> Vec<(String, i64, serde_json::Value)> {
        let json = with_rings(rings, dump_ticks, |tl| {
            let mut out = Vec::new();
            write(tl, &Options::default(), &mut out).unwrap();
            out
        });
        let json: serde_json::Value = serde_json::from_slice(&json).unwrap();
        json["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (e["name"].as_str().unwrap().to_string(), (e["ts"].as_f64().unwrap() * 1e3) as i64, e["args"].clone())
            })
            .collect()
    }

    fn missing(events: &[(String, i64, serde_json::Value)]) -> Vec<i64> {
        events.iter().filter(|e| e.2["missing_children"] == true).map(|e| e.1).collect()
    }

    /// A ring of 4 that overwrote 3 spans: it kept a parent (0..100) and
    /// three of its children (40..50, 60..70, 80..90); the children before
    /// 40 are gone. The parent is marked, and so is the oldest kept span
    /// (children of its own would have ended just before it, in the part
    /// overwritten); nothing that began after that span's end (50) is.
    #[test]
    fn a_parent_of_overwritten_children_is_marked() {
        let r = |key, enter, exit| Record { key, enter, exit };
        let ring = TestRing {
            records: vec![r(2, 40, 50), r(2, 60, 70), r(2, 80, 90), r(1, 0, 100)],
            written: 7,
            dropped: 0,
            open: Vec::new(),
        };
        assert_eq!(missing(&spans(&[ring], 200)), vec![0, 40]);
    }

    /// A stop-when-full ring that kept two spans and dropped 5: the span
    /// still open at the dump lost what it called after the ring filled.
    #[test]
    fn an_open_span_of_a_ring_that_dropped_spans_is_marked() {
        let r = |key, enter, exit| Record { key, enter, exit };
        let full = TestRing { records: vec![r(2, 10, 20), r(2, 30, 40)], written: 2, dropped: 5, open: vec![(1, 0)] };
        let events = spans(&[full], 500);
        assert_eq!(events.len(), 3);
        assert_eq!(missing(&events), vec![0]);
        // The same ring without drops: nothing is marked.
        let whole = TestRing { records: vec![r(2, 10, 20), r(2, 30, 40)], written: 2, dropped: 0, open: vec![(1, 0)] };
        assert!(missing(&spans(&[whole], 500)).is_empty());
    }
}
