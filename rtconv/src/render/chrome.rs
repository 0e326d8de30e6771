//! Chrome trace event JSON (object format), as Perfetto and chrome://tracing load it.
//!
//! - One complete (`X`) event per span — or, with `--chrome-events be`, a
//!   `B` and an `E` event per span, the name on both, never mixed with `X`
//!   — with `args.arg` when the span
//!   recorded an integer argument and `args.open` when it was still running
//!   at dump time (it then ends at the dump); `ts` is microseconds since the
//!   earliest span with exactly three decimals, computed from integer
//!   nanoseconds, and `dur` is `exit_ns - enter_ns` in the same unit.
//! - Events of a thread are sorted by start, longer first, so parents come
//!   before the children that start with them.
//! - `process_name` and `thread_name` metadata events name the tracks; a
//!   thread that lost spans gets an instant event at its first span saying
//!   how many, and the top-level `metadata` object carries the absolute
//!   start time and where the trace came from.

use std::io::{self, Write};

use crate::timeline::{SpanNs, ThreadSpans, Timeline};

/// How to write Chrome JSON.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// A `B` and an `E` event per span instead of one `X` event.
    pub begin_end: bool,
    /// Add each span's source place (`at`), inline chain (`inlined_into`) and
    /// module path (`module`) to its args.
    pub args: bool,
}

/// Writes `tl` as Chrome trace JSON to `out`.
pub fn write(tl: &Timeline<'_>, opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    write_many(&[tl], opts, out)
}

/// Writes several dumps as one Chrome trace, aligned by their realtime
/// anchors: `ts` counts from the earliest span of them all, each dump is
/// its own process (a pid seen before gets `1_000_000 × n` added).
pub fn write_many(timelines: &[&Timeline<'_>], opts: &Options, out: &mut dyn Write) -> io::Result<()> {
    // A concrete buffered writer: the many small writes per event are
    // inlined copies, not dynamic calls.
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    write_all_dumps(timelines, opts, &mut out)?;
    out.flush()
}

fn write_all_dumps<W: Write>(timelines: &[&Timeline<'_>], opts: &Options, out: &mut W) -> io::Result<()> {
    // Each dump's first span in realtime ns; the earliest is the trace's zero.
    let starts: Vec<i128> = timelines.iter().map(|tl| tl.timebase.realtime_ns(i128::from(tl.origin_ns))).collect();
    let zero = starts.iter().copied().min().unwrap_or(0);
    let mut pids: Vec<u64> = Vec::new();
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
        write_process(tl, opts, pid, shift, i == 0, out)?;
    }
    out.write_all(b"\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":{\"ringtrace\":{")?;
    let first = timelines.first();
    if let Some(tl) = first {
        let trace = tl.trace;
        write!(out, "\"dump\":{}", json_string(&trace.path.to_string_lossy()))?;
        write!(out, ",\"producer\":{}", json_string(&trace.process.producer))?;
        if let Some(reason) = trace.process.reason {
            write!(out, ",\"dump_reason\":\"{}\"", reason_name(reason))?;
        }
        write!(out, ",\"start_realtime_ns\":{zero}")?;
        write!(out, ",\"start_monotonic_ns\":{}", tl.origin_ns)?;
        write!(out, ",\"counter_hz\":{:.0}", tl.timebase.hz())?;
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
    out.write_all(b"}}}\n")
}

/// One dump's process: its metadata, loss markers and span events.
fn write_process<W: Write>(
    tl: &Timeline<'_>,
    opts: &Options,
    pid: u64,
    shift: i64,
    first: bool,
    out: &mut W,
) -> io::Result<()> {
    let trace = tl.trace;
    // Each distinct name, and with `args` each key's place, is escaped once.
    let names: Vec<String> = (0..tl.keys.len()).map(|k| json_string(tl.name(k))).collect();
    let places: Vec<String> =
        tl.keys.iter().map(|&key| if opts.args { key_args(tl, key) } else { String::new() }).collect();
    // Everything of an `X` event before its start time, per key: one copy per event.
    let x_heads: Vec<Vec<u8>> =
        names.iter().map(|name| format!(",\n{{\"ph\":\"X\",\"name\":{name},\"ts\":").into_bytes()).collect();
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
    while let Some(t) = threads.next() {
        let thread = &trace.threads[t.thread];
        let tid = thread.tid;
        let name = if thread.name.is_empty() { format!("thread {tid}") } else { thread.name.clone() };
        write!(
            out,
            ",\n{{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"name\":{}}}}}",
            json_string(&name)
        )?;
        // Losses, where they happened: overwritten spans before the first
        // one kept, dropped spans after the last one.
        let losses = [
            (thread.overwritten(), "earlier span(s) overwritten", t.spans.first().map(|s| s.enter_ns)),
            (thread.dropped, "later span(s) dropped (ring full)", t.spans.iter().map(|s| s.exit_ns).max()),
        ];
        for (count, what, at) in losses {
            if count == 0 {
                continue;
            }
            write!(out, ",\n{{\"name\":\"ringtrace: {count} {what}\",\"ph\":\"i\",\"s\":\"t\",\"ts\":")?;
            write_us(out, at.map_or(0, |at| at.saturating_add(shift)))?;
            write!(
                out,
                ",\"pid\":{pid},\"tid\":{tid},\"args\":{{\"spans_in_dump\":{},\"overwritten\":{},\"dropped\":{}}}}}",
                thread.span_count(),
                thread.overwritten(),
                thread.dropped
            )?;
        }
        // The fixed part of every event of this thread, written once.
        let tail = format!(",\"pid\":{pid},\"tid\":{tid}}}");
        if opts.begin_end {
            write_begin_end(shift, t, &names, &places, &tail, out)?;
            continue;
        }
        let mut buf = [0u8; 24];
        for s in &t.spans {
            out.write_all(&x_heads[s.key_index as usize])?;
            out.write_all(us_text(s.enter_ns.saturating_add(shift), &mut buf))?;
            out.write_all(b",\"dur\":")?;
            out.write_all(us_text(s.exit_ns.saturating_sub(s.enter_ns), &mut buf))?;
            write_args(s, &places[s.key_index as usize], out)?;
            out.write_all(tail.as_bytes())?;
        }
    }
    Ok(())
}

fn reason_name(reason: ringtrace_format::DumpReason) -> &'static str {
    use ringtrace_format::DumpReason::*;
    match reason {
        Unspecified => "unspecified",
        Requested => "requested",
        Exit => "exit",
        Signal => "signal",
        RingFull => "ring full",
        Panic => "panic",
        Other(_) => "other",
    }
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
    if let Some(module) = crate::address::module_of(tl.trace, key) {
        fields.push(format!("\"module\":{}", json_string(&module.path.to_string_lossy())));
    }
    fields.join(",")
}

/// The span's `args`: its key's place (with `--args`), its recorded argument,
/// and whether it was still open at the dump.
fn write_args<W: Write>(s: &SpanNs, place: &str, out: &mut W) -> io::Result<()> {
    if s.arg().is_none() && !s.open() && place.is_empty() {
        return Ok(());
    }
    out.write_all(b",\"args\":{")?;
    let mut first = true;
    let mut sep = |out: &mut W| -> io::Result<()> {
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
    out.write_all(b"}")
}

/// One thread as `B`/`E` pairs: each span's `B` at its start, its `E` (with
/// the name too) at its end, in nesting order.
fn write_begin_end<W: Write>(
    shift: i64,
    t: &ThreadSpans,
    names: &[String],
    places: &[String],
    tail: &str,
    out: &mut W,
) -> io::Result<()> {
    let mut open: Vec<&SpanNs> = Vec::new();
    let end = |s: &SpanNs, out: &mut W| -> io::Result<()> {
        out.write_all(b",\n{\"ph\":\"E\",\"name\":")?;
        out.write_all(names[s.key_index as usize].as_bytes())?;
        out.write_all(b",\"ts\":")?;
        write_us(out, s.exit_ns.saturating_add(shift))?;
        out.write_all(tail.as_bytes())
    };
    for s in &t.spans {
        while let Some(top) = open.last() {
            if top.exit_ns > s.enter_ns {
                break;
            }
            end(top, out)?;
            open.pop();
        }
        out.write_all(b",\n{\"ph\":\"B\",\"name\":")?;
        out.write_all(names[s.key_index as usize].as_bytes())?;
        out.write_all(b",\"ts\":")?;
        write_us(out, s.enter_ns.saturating_add(shift))?;
        write_args(s, &places[s.key_index as usize], out)?;
        out.write_all(tail.as_bytes())?;
        open.push(s);
    }
    while let Some(top) = open.pop() {
        end(top, out)?;
    }
    Ok(())
}

/// A non-negative nanosecond count as microseconds with three decimals, in `buf`.
fn us_text(ns: i64, buf: &mut [u8; 24]) -> &[u8] {
    let mut n = ns.max(0) as u64;
    let mut i = buf.len();
    // u64::MAX has 20 digits: with the point, 21 bytes.
    for _ in 0..3 {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    i -= 1;
    buf[i] = b'.';
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Writes a non-negative nanosecond count as microseconds with three decimals.
fn write_us<W: Write>(out: &mut W, ns: i64) -> io::Result<()> {
    out.write_all(us_text(ns, &mut [0; 24]))
}

fn json_string(s: &str) -> String {
    // Serialising a &str cannot fail.
    serde_json::to_string(s).unwrap_or_else(|_| "\"?\"".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(ns: i64) -> String {
        String::from_utf8(us_text(ns, &mut [0; 24]).to_vec()).unwrap()
    }

    #[test]
    fn microseconds_have_exactly_three_decimals() {
        assert_eq!(us(0), "0.000");
        assert_eq!(us(7), "0.007");
        assert_eq!(us(1_234), "1.234");
        assert_eq!(us(20_000_050), "20000.050");
        assert_eq!(us(-5), "0.000");
        assert_eq!(us(i64::MAX), "9223372036854775.807");
    }
}
