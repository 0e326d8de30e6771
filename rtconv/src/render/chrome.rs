//! Chrome trace event JSON (object format), as Perfetto and chrome://tracing load it.
//!
//! - One complete (`X`) event per span — or, with `--chrome-events be`, a
//!   `B` and an `E` event per span, the name on both, never mixed with `X`
//!   — with `args.arg` when the span
//!   recorded an integer argument, `args.open` when it was still running
//!   at dump time (it then ends at the dump), and `args.unwound` when it was
//!   left by a `longjmp` or an exception without its exit (it ends where the
//!   recorder noticed); `ts` is microseconds since the
//!   earliest span with exactly three decimals, computed from integer
//!   nanoseconds, and `dur` is `exit_ns - enter_ns` in the same unit.
//! - Events of a thread are sorted by start, longer first, so parents come
//!   before the children that start with them.
//! - `process_name` and `thread_name` metadata events name the tracks; a
//!   thread that lost spans gets instant events saying how many: spans
//!   overwritten at its first span, spans dropped at the end of its last;
//!   and the top-level `metadata` object carries the absolute start time,
//!   where the trace came from, and the losses of all its threads.

use std::io::{self, Write};

use super::text::{Piece, Pieces, Text};
use crate::model::{Anomalies, SpanNs, Timeline};

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

fn write_all_dumps(timelines: &[&Timeline<'_>], opts: &Options, out: &mut Text<'_>) -> io::Result<Vec<Anomalies>> {
    // Each dump's first span in realtime ns; the earliest is the trace's zero.
    let starts: Vec<i128> = timelines.iter().map(|tl| tl.timebase.realtime_ns(i128::from(tl.origin_ns))).collect();
    let zero = starts.iter().copied().min().unwrap_or(0);
    let mut pids: Vec<u64> = Vec::new();
    let mut found = Vec::with_capacity(timelines.len());
    out.write_all(b"{\"traceEvents\":[\n")?;
    for (i, tl) in timelines.iter().enumerate() {
        let mut pid = u64::from(tl.trace.process.pid);
        while pids.contains(&pid) {
            pid += 1_000_000;
        }
        pids.push(pid);
        // ts = monotonic ns + shift: this dump's zero is its offset from the earliest.
        let offset = i64::try_from(starts[i] - zero).unwrap_or(i64::MAX);
        let shift = offset.saturating_sub(tl.origin_ns);
        found.push(write_process(tl, opts, pid, shift, i == 0, out)?);
    }
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
    }
    if timelines.len() > 1 {
        out.write_all(b",\"dumps\":[")?;
        for (i, tl) in timelines.iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            write!(
                out,
                "{sep}{{\"dump\":{},\"pid\":{},\"start_realtime_ns\":{}}}",
                json_string(&tl.trace.path.to_string_lossy()),
                pids[i],
                starts[i]
            )?;
        }
        out.write_all(b"]")?;
    }
    out.write_all(b"}}}\n")?;
    Ok(found)
}

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
            pieces.push(format!(",\n{{\"ph\":\"{ph}\",\"name\":{},\"ts\":", json_string(tl.name(k))).as_bytes());
        }
        pieces
    };
    let (x_heads, b_heads, e_heads) = if opts.begin_end {
        (Pieces::default(), heads("B"), heads("E"))
    } else {
        (heads("X"), Pieces::default(), Pieces::default())
    };
    let process_name = if trace.process.name.is_empty() { "process" } else { &trace.process.name };
    if !first {
        out.write_all(b",\n")?;
    }
    write!(
        out,
        "{{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{pid},\"args\":{{\"name\":{}}}}}",
        json_string(process_name)
    )?;
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &trace.threads[t.thread];
        let tid = thread.tid;
        let name = if thread.name.is_empty() { format!("thread {tid}") } else { thread.name.clone() };
        write!(
            out,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            json_string(&name)
        )?;
        // The fixed part of every event of this thread, written once.
        let tail = Piece::new(format!(",\"pid\":{pid},\"tid\":{tid}}}").as_bytes());
        let dur = Piece::new(b",\"dur\":");
        // Losses, where they happened: overwritten spans before the first one kept, dropped ones after the last.
        let loss = |count: u64, what: &str, at: Option<i64>, out: &mut Text<'_>| -> io::Result<()> {
            if count == 0 {
                return Ok(());
            }
            write!(out, ",\n{{\"name\":\"ringtrace: {count} {what}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":")?;
            out.us(at.map_or(0, |at| at.saturating_add(shift)))?;
            write!(
                out,
                ",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"spans_in_dump\":{},\"overwritten\":{},\"dropped\":{}}}}}",
                thread.span_count(),
                thread.overwritten(),
                thread.dropped
            )
        };
        let (mut first_enter, mut last_exit): (Option<i64>, Option<i64>) = (None, None);
        let mut open: Vec<SpanNs> = Vec::new();
        while let Some(batch) = t.next_batch() {
            if first_enter.is_none() {
                first_enter = batch.first().map(|s| s.enter_ns);
                loss(thread.overwritten(), "earlier span(s) overwritten", first_enter, out)?;
            }
            if thread.dropped > 0 {
                last_exit = last_exit.max(batch.iter().map(|s| s.exit_ns).max());
            }
            if opts.begin_end {
                write_begin_end(shift, batch, &mut open, (&b_heads, &e_heads), &places, &tail, out)?;
                continue;
            }
            for s in batch {
                let key = s.key_index as usize;
                out.piece_at(&x_heads, key)?;
                out.us(s.enter_ns.saturating_add(shift))?;
                out.piece(&dur)?;
                out.us(s.exit_ns.saturating_sub(s.enter_ns))?;
                let place = places.get(key).map_or("", String::as_str);
                if s.arg().is_some() || s.open() || s.unwound() || !place.is_empty() {
                    write_args(s, place, out)?;
                }
                out.piece(&tail)?;
            }
        }
        // The `E` events of the spans still open: the thread's last span is in.
        write_begin_end(shift, &[], &mut open, (&b_heads, &e_heads), &places, &tail, out)?;
        if first_enter.is_none() {
            loss(thread.overwritten(), "earlier span(s) overwritten", None, out)?;
        }
        loss(thread.dropped, "later span(s) dropped (ring full)", last_exit, out)?;
    }
    Ok(threads.anomalies())
}

/// `"at":"file:line","inlined_into":"a < b","module":"/path"` for a key, as far as known.
fn key_args(tl: &Timeline<'_>, key: u64) -> String {
    let mut fields = Vec::new();
    if let Some(name) = tl.symbols.get(key) {
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

/// The span's `args`: its key's place (with `--args`), its recorded argument,
/// whether it was still open at the dump, and whether it was unwound.
fn write_args(s: &SpanNs, place: &str, out: &mut Text<'_>) -> io::Result<()> {
    if s.arg().is_none() && !s.open() && !s.unwound() && place.is_empty() {
        return Ok(());
    }
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
    out.write_all(b"}")
}

/// A batch of a thread's spans as `B`/`E` pairs: each span's `B` at its
/// start, its `E` (with the name too) at its end, in nesting order. `open`
/// holds the spans begun and not yet ended, from batch to batch; an empty
/// batch ends them all.
fn write_begin_end(
    shift: i64,
    batch: &[SpanNs],
    open: &mut Vec<SpanNs>,
    (b_heads, e_heads): (&Pieces, &Pieces),
    places: &[String],
    tail: &Piece,
    out: &mut Text<'_>,
) -> io::Result<()> {
    let end = |s: &SpanNs, out: &mut Text<'_>| -> io::Result<()> {
        out.piece_at(e_heads, s.key_index as usize)?;
        out.us(s.exit_ns.saturating_add(shift))?;
        out.piece(tail)
    };
    for s in batch {
        while let Some(top) = open.last() {
            if top.exit_ns > s.enter_ns {
                break;
            }
            end(top, out)?;
            open.pop();
        }
        out.piece_at(b_heads, s.key_index as usize)?;
        out.us(s.enter_ns.saturating_add(shift))?;
        write_args(s, places.get(s.key_index as usize).map_or("", String::as_str), out)?;
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
