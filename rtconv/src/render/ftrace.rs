//! The kernel `function_graph` tracer's text layout (`-f ftrace`), as
//! `cat /sys/kernel/tracing/trace` prints it with `funcgraph-proc` and
//! `funcgraph-overhead` on.
//!
//! - The header (`# tracer: function_graph`, the column titles and bars).
//! - One line per span edge: `name() {` on entry and `}` with the duration on
//!   exit for a span with children, `name();` with the duration for a leaf;
//!   two spaces of indentation per level.
//! - CPU column `0` (the recorder does not know CPUs) and the task column
//!   `name-tid`, centred in 14 characters as the kernel does.
//! - Durations in µs with nanosecond digits, never more than 7 digits
//!   (`12345.67 us`), after the kernel's overhead mark: `$` over 1 s, `@`
//!   over 100 ms, `*` over 10 ms, `#` over 1 ms, `!` over 100 µs, `+` over
//!   10 µs (strictly greater).
//! - Threads one after another, each introduced by the kernel's context
//!   switch block (`prev-pid => next-pid` between dashed lines).

use std::io::{self, Write};

use crate::timeline::{SpanNs, Timeline};

/// Writes `tl` as function_graph text.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<()> {
    // A concrete buffered writer: the several writes per line are inlined copies.
    let mut out = io::BufWriter::with_capacity(1 << 16, out);
    write_threads(tl, &mut out)?;
    out.flush()
}

fn write_threads<W: Write>(tl: &Timeline<'_>, out: &mut W) -> io::Result<()> {
    out.write_all(b"# tracer: function_graph\n#\n")?;
    out.write_all(b"# CPU  TASK/PID         DURATION                  FUNCTION CALLS\n")?;
    out.write_all(b"# |     |    |           |   |                     |   |   |   |\n")?;
    let names: Vec<&str> = (0..tl.keys.len()).map(|k| tl.name(k)).collect();
    // Each key's entry and leaf text, with the line's end: one copy per line.
    let entries: Vec<Vec<u8>> = names.iter().map(|name| format!("{name}() {{\n").into_bytes()).collect();
    let leaves: Vec<Vec<u8>> = names.iter().map(|name| format!("{name}();\n").into_bytes()).collect();
    let mut previous: Option<String> = None;
    let mut threads = tl.threads();
    while let Some(t) = threads.next() {
        let thread = &tl.trace.threads[t.thread];
        let comm = if thread.name.is_empty() { "<...>" } else { thread.name.as_str() };
        let task = proc_column(comm, thread.tid);
        out.write_all(b" ------------------------------------------\n")?;
        writeln!(out, " 0) {} => {}", previous.as_deref().unwrap_or(&proc_column("<idle>", 0)), task)?;
        out.write_all(b" ------------------------------------------\n\n")?;
        let head = format!(" 0) {task} | ");
        // Open spans: (span, depth). A span is a leaf when the next span does not start inside it.
        let mut stack: Vec<&SpanNs> = Vec::new();
        for (i, s) in t.spans.iter().enumerate() {
            while let Some(top) = stack.last() {
                if top.exit_ns > s.enter_ns {
                    break;
                }
                let top = stack.pop().unwrap_or(s);
                line(out, &head, Some(top.exit_ns.saturating_sub(top.enter_ns)), stack.len(), b"}\n")?;
            }
            let has_child = t.spans.get(i + 1).is_some_and(|next| next.enter_ns < s.exit_ns);
            if has_child {
                line(out, &head, None, stack.len(), &entries[s.key_index as usize])?;
                stack.push(s);
            } else {
                line(
                    out,
                    &head,
                    Some(s.exit_ns.saturating_sub(s.enter_ns)),
                    stack.len(),
                    &leaves[s.key_index as usize],
                )?;
            }
        }
        while let Some(top) = stack.pop() {
            line(out, &head, Some(top.exit_ns.saturating_sub(top.enter_ns)), stack.len(), b"}\n")?;
        }
        previous = Some(task);
    }
    Ok(())
}

/// One line: `head` (CPU and task), the duration column (or its blank),
/// indentation, then `text` (which ends the line). Four copies: this runs
/// once per span edge.
fn line<W: Write>(out: &mut W, head: &str, duration_ns: Option<i64>, depth: usize, text: &[u8]) -> io::Result<()> {
    const SPACES: [u8; 128] = [b' '; 128];
    out.write_all(head.as_bytes())?;
    match duration_ns {
        Some(ns) => out.write_all(duration_column(ns.max(0) as u64).as_bytes())?,
        None => out.write_all(b"              |  ")?,
    }
    let mut indent = depth * 2;
    while indent > 0 {
        let n = indent.min(SPACES.len());
        out.write_all(&SPACES[..n])?;
        indent -= n;
    }
    out.write_all(text)
}

/// The duration column: overhead mark, a space, [`duration`], `|  `.
fn duration_column(ns: u64) -> DurationText {
    let text = duration(ns);
    let mut column = DurationText { bytes: [b' '; 32], len: 0 };
    let mut mark_buf = [0u8; 4];
    column.push(mark(ns).encode_utf8(&mut mark_buf).as_bytes());
    column.push(b" ");
    column.push(text.as_bytes());
    column.push(b"|  ");
    column
}

/// The kernel's overhead mark for a duration in ns (strictly greater than each threshold).
pub fn mark(ns: u64) -> char {
    const MARKS: [(u64, char); 6] =
        [(1_000_000_000, '$'), (100_000_000, '@'), (10_000_000, '*'), (1_000_000, '#'), (100_000, '!'), (10_000, '+')];
    MARKS.iter().find(|&&(limit, _)| ns > limit).map_or(' ', |&(_, c)| c)
}

/// The duration column's text, built without allocating (it is written once per span).
pub struct DurationText {
    bytes: [u8; 32],
    len: usize,
}

impl DurationText {
    /// The text.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    fn push(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
}

/// `trace_print_graph_duration`: µs, then as many ns digits as keep the
/// number within 7 digits, then ` us ` and padding to 12 characters.
pub fn duration(ns: u64) -> DurationText {
    let mut num = itoa::Buffer::new();
    let us = num.format(ns / 1000); // at most 17 digits
    let mut text = DurationText { bytes: [b' '; 32], len: 0 };
    text.push(us.as_bytes());
    if us.len() < 7 {
        // snprintf("%03lu") into a buffer of min(5, 8 - len) bytes keeps that many minus one digits.
        let digits = (5.min(8 - us.len()) - 1).min(3);
        let frac = ns % 1000;
        let all = [b'0' + (frac / 100) as u8, b'0' + (frac / 10 % 10) as u8, b'0' + (frac % 10) as u8];
        text.push(b".");
        text.push(&all[..digits]);
    }
    let len = text.len;
    text.push(b" us ");
    // Padding to 8 before " us ": the array is pre-filled with spaces.
    text.len += 8usize.saturating_sub(len);
    text
}

/// `print_graph_proc`: `comm-pid` cut to 14 characters and centred in them.
fn proc_column(comm: &str, tid: u64) -> String {
    let pid = tid.to_string();
    let comm: String = comm.chars().take(14usize.saturating_sub(pid.len() + 1)).collect();
    let text = format!("{comm}-{pid}");
    let spaces = 14usize.saturating_sub(text.chars().count());
    format!("{}{text}{}", " ".repeat(spaces / 2), " ".repeat(spaces - spaces / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_the_kernel_prints_them() {
        assert_eq!(std::str::from_utf8(duration(1_382).as_bytes()).unwrap(), "1.382 us    ");
        assert_eq!(std::str::from_utf8(duration(10_123).as_bytes()).unwrap(), "10.123 us   ");
        assert_eq!(std::str::from_utf8(duration(123_456).as_bytes()).unwrap(), "123.456 us  ");
        assert_eq!(std::str::from_utf8(duration(1_234_567).as_bytes()).unwrap(), "1234.567 us ");
        assert_eq!(std::str::from_utf8(duration(12_345_678).as_bytes()).unwrap(), "12345.67 us ");
        assert_eq!(std::str::from_utf8(duration(123_456_789).as_bytes()).unwrap(), "123456.7 us ");
        assert_eq!(std::str::from_utf8(duration(1_234_567_890).as_bytes()).unwrap(), "1234567 us  ");
        assert_eq!(std::str::from_utf8(duration(12_345_678_901).as_bytes()).unwrap(), "12345678 us ");
    }

    #[test]
    fn marks_use_strict_thresholds() {
        assert_eq!(mark(10_000), ' ');
        assert_eq!(mark(10_001), '+');
        assert_eq!(mark(100_001), '!');
        assert_eq!(mark(1_000_000), '!');
        assert_eq!(mark(1_000_001), '#');
        assert_eq!(mark(10_000_001), '*');
        assert_eq!(mark(100_000_001), '@');
        assert_eq!(mark(1_000_000_001), '$');
    }

    #[test]
    fn task_column_is_centred_in_14() {
        assert_eq!(proc_column("bash", 4269), "  bash-4269   ");
        assert_eq!(proc_column("<idle>", 0), "   <idle>-0   ");
        assert_eq!(proc_column("a-very-long-thread-name", 12345).len(), 14);
    }
}
