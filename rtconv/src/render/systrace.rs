//! Systrace text (`-f systrace`): the kernel's trace layout with
//! `tracing_mark_write` begin/end markers, as `atrace` writes them, for
//! Perfetto's systrace importer and Catapult's.
//!
//! `# tracer: nop` and the kernel's comment header, then one line per span
//! edge, all threads merged in time order:
//!
//! ```text
//!           worker-101     (      7) [000] ....    12.000500: tracing_mark_write: B|7|parse
//!           worker-101     (      7) [000] ....    12.200000: tracing_mark_write: E|7
//! ```
//!
//! Task `name-tid` (the thread), TGID the process id, CPU `000` (the
//! recorder does not know CPUs), flags `....`, and monotonic seconds with 6
//! decimals. A parent's begin precedes its children's and its end follows
//! theirs, also at equal timestamps.
//!
//! Merging threads in time order needs every span edge at once (24 bytes
//! each): unlike the other formats, this one's memory grows with the dump.

use std::io::{self, Write};

use crate::model::{Anomalies, SpanNs, Timeline};

/// What every line has between its time and its marker.
pub(crate) const MARK: &str = ": tracing_mark_write: ";

/// The header, for `edges` lines: the kernel's comment lines (and an output budget's).
pub(crate) fn header(tl: &Timeline<'_>, edges: usize) -> String {
    let mut text = String::from("# tracer: nop\n#\n");
    if let Some(cut) = &tl.cut {
        text += &format!("# ringtrace budget: {}\n#\n", cut.describe());
    }
    text += &format!("# entries-in-buffer/entries-written: {edges}/{edges}   #P:1\n#\n");
    text += "#                                      _-----=> irqs-off\n\
             #                                     / _----=> need-resched\n\
             #                                    | / _---=> hardirq/softirq\n\
             #                                    || / _--=> preempt-depth\n\
             #                                    ||| /     delay\n\
             #           TASK-PID    TGID   CPU#  ||||    TIMESTAMP  FUNCTION\n\
             #              | |        |      |   ||||       |         |\n";
    text
}

/// What thread `index`'s lines begin with: its task, the process, CPU and flags.
pub(crate) fn task(tl: &Timeline<'_>, index: usize) -> String {
    let pid = tl.trace.process.pid;
    let thread = &tl.trace.threads[index];
    let name = if thread.name.is_empty() { "<...>".to_string() } else { thread.name.replace(' ', "_") };
    format!("{name:>16}-{:<7} ({pid:>7}) [000] .... ", thread.tid)
}

/// A line's time: monotonic seconds with 6 decimals.
fn write_time(ns: i64, out: &mut dyn Write) -> io::Result<()> {
    let ns = ns.max(0) as u64;
    write!(out, "{:>5}.{:06}", ns / 1_000_000_000, ns % 1_000_000_000 / 1000)
}

/// What [`write_time`] writes for `ns`.
pub(crate) fn time_len(ns: i64) -> usize {
    let seconds = ns.max(0) as u64 / 1_000_000_000;
    seconds.checked_ilog10().map_or(1, |l| l as usize + 1).max(5) + 7
}

/// A key's name as its begin lines give it (no line breaks).
pub(crate) fn name(tl: &Timeline<'_>, k: usize) -> String {
    tl.name(k).replace(['\n', '\r'], " ")
}

/// Writes `tl` as systrace text; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    let pid = tl.trace.process.pid;
    let names: Vec<String> = (0..tl.keys.len()).map(|k| name(tl, k)).collect();
    // Edges: (ns, thread, sequence within the thread, begin key index or None for an end).
    let mut edges: Vec<(i64, usize, usize, Option<u32>)> = Vec::new();
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let ti = t.thread;
        let mut seq = 0;
        let mut push = |ns: i64, key: Option<u32>, edges: &mut Vec<_>| {
            edges.push((ns, ti, seq, key));
            seq += 1;
        };
        // The open spans, their ends clamped into their parents' so ends stay nested.
        let mut open: Vec<SpanNs> = Vec::new();
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while let Some(top) = open.last() {
                    if top.encloses(s) {
                        break;
                    }
                    push(top.exit_ns, None, &mut edges);
                    open.pop();
                }
                push(s.enter_ns, Some(s.key_index), &mut edges);
                let mut s = *s;
                s.exit_ns = open.last().map_or(s.exit_ns, |parent| s.exit_ns.min(parent.exit_ns));
                open.push(s);
            }
        }
        while let Some(end) = open.pop().map(|s| s.exit_ns) {
            push(end, None, &mut edges);
        }
    }
    let found = threads.anomalies();
    edges.sort_unstable_by_key(|&(ns, thread, seq, _)| (ns, thread, seq));

    out.write_all(header(tl, edges.len()).as_bytes())?;
    let tasks: Vec<String> = (0..tl.trace.threads.len()).map(|i| task(tl, i)).collect();
    for (ns, thread, _, key) in edges {
        out.write_all(tasks[thread].as_bytes())?;
        write_time(ns, out)?;
        match key {
            Some(k) => writeln!(out, "{MARK}B|{pid}|{}", names[k as usize])?,
            None => writeln!(out, "{MARK}E|{pid}")?,
        }
    }
    Ok(found)
}
