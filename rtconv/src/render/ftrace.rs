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
//! - A span left by a `longjmp` or an exception without its exit (unwound)
//!   ends its line with the comment `/* unwound */`, as the kernel comments
//!   its own events; a span cut at a part's window (`--split`), with
//!   `/* clipped: start */` (`end`, `both`) — its line's duration is the part's.
//! - Threads one after another, each introduced by the kernel's context
//!   switch block (`prev-pid => next-pid` between dashed lines).

use std::io::{self, Write};

use super::text::{DECIMALS, LINE_SPACES, NUMBER, Piece, Pieces, Text, digits, four_digits};
use crate::model::{Anomalies, SpanNs, Timeline};

/// Writes `tl` as function_graph text; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    write_part(tl, true, out)
}

/// Writes `tl` as one part of a text written as a live capture arrives: the header only with
/// the first part; each part's threads introduced by their context switch blocks.
pub fn write_part(tl: &Timeline<'_>, first: bool, out: &mut dyn Write) -> io::Result<Anomalies> {
    let mut out = Text::new(out);
    let found = write_threads(tl, first, &mut out)?;
    out.flush()?;
    Ok(found)
}

/// The text's header: the tracer, what the filters and an output budget left out, the column titles.
pub(crate) fn header(tl: &Timeline<'_>) -> String {
    let mut text = String::from("# tracer: function_graph\n#\n");
    if let Some(selection) = &tl.selection {
        text += &format!("# filter: {}\n#\n", selection.filter.describe());
    }
    if let Some(cut) = &tl.cut {
        text += &format!("# budget: {}\n#\n", cut.describe());
    }
    text += "# CPU  TASK/PID         DURATION                  FUNCTION CALLS\n";
    text += "# |     |    |           |   |                     |   |   |   |\n";
    text
}

/// A thread's task column (`name-tid`, centred).
pub(crate) fn task(thread: &crate::model::ThreadTrace<'_>) -> String {
    let comm = if thread.name.is_empty() { "<...>" } else { thread.name.as_str() };
    proc_column(comm, thread.tid)
}

/// The context switch block that introduces a thread (`task`), after `previous` (`None`: the first).
pub(crate) fn switch_block(previous: Option<&str>, task: &str) -> String {
    format!(
        " ------------------------------------------\n 0) {} => {task}\n ------------------------------------------\n\n",
        previous.unwrap_or(&proc_column("<idle>", 0))
    )
}

/// The columns before an exit or leaf line's duration, and before an entry line's function.
pub(crate) fn heads(task: &str) -> (String, String) {
    (format!(" 0) {task} | "), format!(" 0) {task} |               |  "))
}

/// A key's entry line's text, its leaf line's (returned, unwound), and the closing lines' (returned, unwound).
pub(crate) fn entry_text(name: &str) -> String {
    format!("{name}() {{\n")
}

/// See [`entry_text`].
pub(crate) fn leaf_texts(name: &str) -> [String; 2] {
    [format!("{name}();\n"), format!("{name}(); {UNWOUND}\n")]
}

/// See [`entry_text`].
pub(crate) fn close_texts() -> [String; 2] {
    ["}\n".to_string(), format!("}} {UNWOUND}\n")]
}

/// What a line's indentation at `depth` takes (see [`line_start`]).
pub(crate) fn indent_len(depth: usize) -> usize {
    if depth <= INDENTED_LEVELS { depth * 2 } else { INDENTED_LEVELS * 2 + format!("/* depth {depth} */ ").len() }
}

fn write_threads(tl: &Timeline<'_>, header_too: bool, out: &mut Text<'_>) -> io::Result<Anomalies> {
    if header_too {
        out.write_all(header(tl).as_bytes())?;
    }
    // Each key's entry and leaf text, with the line's end: one copy per line.
    let (mut entries, mut leaves, mut unwound_leaves) = (Pieces::default(), Pieces::default(), Pieces::default());
    for k in 0..tl.keys.len() {
        entries.push(entry_text(tl.name(k)).as_bytes());
        let [leaf, unwound] = leaf_texts(tl.name(k));
        leaves.push(leaf.as_bytes());
        unwound_leaves.push(unwound.as_bytes());
    }
    let close = close_texts().map(|c| Piece::new(c.as_bytes()));
    let mut previous: Option<String> = None;
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &tl.trace.threads[t.thread];
        let task = task(thread);
        out.write_all(switch_block(previous.as_deref(), &task).as_bytes())?;
        // The CPU and task columns; for entry lines, also the duration column's blank.
        let (head, entry_head) = heads(&task);
        let mut graph = Graph {
            head: Piece::new(head.as_bytes()),
            entry_head: Piece::new(entry_head.as_bytes()),
            entries: &entries,
            leaves: [&leaves, &unwound_leaves],
            close: &close,
            stack: Vec::new(),
            pending: None,
        };
        while let Some(batch) = t.next_batch() {
            for s in batch {
                graph.step(Some(s), out)?;
            }
        }
        graph.step(None, out)?;
        previous = Some(task);
    }
    Ok(threads.anomalies())
}

/// The comment after an unwound span's line.
const UNWOUND: &str = "/* unwound */";

/// One thread's lines, span by span. A span is a leaf when the next span
/// does not start inside it, so each span's line waits for the next span.
struct Graph<'p> {
    /// The CPU and task columns.
    head: Piece,
    /// The CPU and task columns and the duration column's blank, for entry lines.
    entry_head: Piece,
    entries: &'p Pieces,
    /// Leaf lines: returned, unwound.
    leaves: [&'p Pieces; 2],
    /// Closing lines: returned, unwound.
    close: &'p [Piece; 2],
    /// Spans entered and not yet closed.
    stack: Vec<SpanNs>,
    /// The span before `next`, not yet written.
    pending: Option<SpanNs>,
}

impl Graph<'_> {
    /// Writes the pending span's line, knowing the span after it (`None`
    /// at the thread's end), then closes the spans that end before it starts.
    #[inline(always)] // once per span
    fn step(&mut self, next: Option<&SpanNs>, out: &mut Text<'_>) -> io::Result<()> {
        if let Some(s) = self.pending.take() {
            if next.is_some_and(|next| s.encloses(next)) {
                line_start(out, &self.entry_head, None, self.stack.len())?;
                out.piece_at(self.entries, s.key_index as usize)?;
                self.stack.push(s);
            } else {
                exit_line(out, &self.head, &s, self.stack.len())?;
                out.piece_at(self.leaves[usize::from(s.unwound())], s.key_index as usize)?;
                if let Some(how) = s.clipped() {
                    out.end_line_with(format!(" /* clipped: {how} */\n").as_bytes())?;
                }
            }
        }
        while let Some(top) = self.stack.last() {
            if next.is_some_and(|next| top.encloses(next)) {
                break;
            }
            let top = *top;
            self.stack.pop();
            exit_line(out, &self.head, &top, self.stack.len())?;
            out.piece(&self.close[usize::from(top.unwound())])?;
            if let Some(how) = top.clipped() {
                out.end_line_with(format!(" /* clipped: {how} */\n").as_bytes())?;
            }
        }
        self.pending = next.copied();
        Ok(())
    }
}

/// The start of a line with a duration: `head` (CPU and task), the
/// duration column and indentation; the caller writes the text that ends it.
#[inline(always)]
fn exit_line(out: &mut Text<'_>, head: &Piece, span: &SpanNs, depth: usize) -> io::Result<()> {
    let ns = span.duration_ns();
    line_start(out, head, Some(ns), depth)
}

/// `head`, the duration column (for a duration) and the indentation of
/// `depth`: two spaces per level, up to [`INDENTED_LEVELS`]; deeper lines
/// keep that indentation and say their depth (`/* depth 600 */ f() {`), so
/// a dump of a million nested spans makes output linear in its spans, not
/// quadratic.
#[inline(always)]
fn line_start(out: &mut Text<'_>, head: &Piece, duration: Option<u64>, depth: usize) -> io::Result<()> {
    let indented = depth <= INDENTED_LEVELS;
    out.line_start(
        head,
        // Inlined: a call per line otherwise.
        #[inline(always)]
        |to| duration.map_or(0, |ns| duration_column(ns, to)),
        if indented { depth * 2 } else { 0 },
    )?;
    if indented { Ok(()) } else { deep_indent(out, depth) }
}

/// Levels indented: the depth of the kernel's function_graph return stack
/// (`FTRACE_RETFUNC_DEPTH`), beyond which the kernel traces no deeper call.
const INDENTED_LEVELS: usize = 100;

// The indentation of the deepest indented line fits one line start.
const _: () = assert!(INDENTED_LEVELS * 2 <= LINE_SPACES);

#[cold]
#[inline(never)]
fn deep_indent(out: &mut Text<'_>, depth: usize) -> io::Result<()> {
    out.spaces(INDENTED_LEVELS * 2)?;
    write!(out, "/* depth {depth} */ ")
}

/// The kernel's overhead mark for a duration in ns (strictly greater than each threshold).
#[inline(always)]
pub(crate) fn mark(ns: u64) -> char {
    // Most spans are short: one comparison for them, not six.
    if ns <= 10_000 {
        return ' ';
    }
    const MARKS: [(u64, char); 6] =
        [(1_000_000_000, '$'), (100_000_000, '@'), (10_000_000, '*'), (1_000_000, '#'), (100_000, '!'), (10_000, '+')];
    MARKS.iter().find(|&&(limit, _)| ns > limit).map_or(' ', |&(_, c)| c)
}

/// The duration column — overhead mark, a space, the duration as
/// `trace_print_graph_duration` prints it, `|  ` — written at the start of
/// `to`; returns its length (17 bytes, more only for durations of 10^8 µs and up).
///
/// The duration: µs, then as many ns digits as keep the number within 7
/// digits, then ` us ` and padding to 12 characters.
#[inline(always)]
pub(crate) fn duration_column(ns: u64, to: &mut [u8; NUMBER]) -> usize {
    // Under 10 ms (most spans): 1 to 4 digits of µs and always three decimals, so the column is
    // 17 bytes, written in stores at fixed places and one after the digits. The general way
    // checks bounds at each of its variable offsets (docs/PERFORMANCE.md measures the difference).
    let Some((us, len)) = u32::try_from(ns / 1000).ok().and_then(four_digits) else {
        return duration_column_long(ns, to);
    };
    *to = [b' '; NUMBER];
    to[0] = mark(ns) as u8; // the marks are ASCII
    // The digits (what follows them is written over), then `.ddd us ` after them.
    if let Some(digits) = to.get_mut(2..6) {
        digits.copy_from_slice(&us.to_le_bytes());
    }
    let point = u64::from(u32::from_le_bytes(DECIMALS[(ns % 1000) as usize]));
    let tail = point | u64::from(u32::from_le_bytes(*b" us ")) << 32;
    if let Some(after) = to.get_mut(2 + len as usize..).and_then(|after| after.first_chunk_mut::<8>()) {
        *after = tail.to_le_bytes();
    }
    to[14..17].copy_from_slice(b"|  ");
    17
}

/// The length of [`duration_column`] for `ns`: 17 bytes under 10 ms; from 10 ms on, found by
/// writing the column.
#[inline(always)]
pub(crate) fn duration_column_len(ns: u64) -> usize {
    if ns < 10_000_000 { 17 } else { duration_column_long(ns, &mut [0; NUMBER]) }
}

/// [`duration_column`] of a span of 10 ms or more.
#[inline(never)]
fn duration_column_long(ns: u64, to: &mut [u8; NUMBER]) -> usize {
    *to = [b' '; NUMBER];
    to[0] = mark(ns) as u8; // the marks are ASCII
    let us = ns / 1000;
    // At most 17 digits: the column is at most 2 + 17 + 4 + 3 = 26 bytes.
    let us_len = digits(us, &mut to[2..]);
    let mut end = 2 + us_len;
    to[end..end + 8].copy_from_slice(&[b' '; 8]); // what `digits` wrote past the number
    if us_len < 7 {
        // snprintf("%03lu") into a buffer of min(5, 8 - len) bytes keeps that many minus one digits:
        // the point and `keep` decimals, the rest of the four bytes left blank (one 4-byte store, not a
        // copy of variable length).
        let keep = (5.min(8 - us_len) - 1).min(3);
        let kept = (1u64 << (8 * (1 + keep))) - 1;
        let decimals = u64::from(u32::from_le_bytes(DECIMALS[(ns % 1000) as usize]));
        let blank = u64::from(u32::from_le_bytes([b' '; 4]));
        let bytes = ((decimals & kept) | (blank & !kept)) as u32;
        to[end..end + 4].copy_from_slice(&bytes.to_le_bytes());
        end += 1 + keep;
    }
    // " us " after the number, then spaces to make up a number shorter than 8
    // (the array is filled with spaces).
    to[end + 1..end + 3].copy_from_slice(b"us");
    end += 4 + 8usize.saturating_sub(end - 2);
    to[end..end + 3].copy_from_slice(b"|  ");
    end + 3
}

/// `print_graph_proc`: `comm-pid` cut to 14 characters and centred in them.
pub(crate) fn proc_column(comm: &str, tid: u64) -> String {
    let pid = tid.to_string();
    let comm: String = comm.chars().take(14usize.saturating_sub(pid.len() + 1)).collect();
    let text = format!("{comm}-{pid}");
    let spaces = 14usize.saturating_sub(text.chars().count());
    format!("{}{text}{}", " ".repeat(spaces / 2), " ".repeat(spaces - spaces / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(ns: u64) -> String {
        let mut to = [0; 32];
        let len = duration_column(ns, &mut to);
        String::from_utf8(to[..len].to_vec()).unwrap()
    }

    #[test]
    fn durations_as_the_kernel_prints_them() {
        assert_eq!(column(1_382), "  1.382 us    |  ");
        assert_eq!(column(10_123), "+ 10.123 us   |  ");
        assert_eq!(column(123_456), "! 123.456 us  |  ");
        assert_eq!(column(1_234_567), "# 1234.567 us |  ");
        assert_eq!(column(12_345_678), "* 12345.67 us |  ");
        assert_eq!(column(123_456_789), "@ 123456.7 us |  ");
        assert_eq!(column(1_234_567_890), "$ 1234567 us  |  ");
        assert_eq!(column(12_345_678_901), "$ 12345678 us |  ");
        assert_eq!(column(0), "  0.000 us    |  ");
        assert_eq!(column(u64::MAX), "$ 18446744073709551 us |  ");
    }

    #[test]
    fn the_short_way_writes_what_the_general_way_does() {
        let general = |ns: u64| {
            let mut to = [0; 32];
            let len = duration_column_long(ns, &mut to);
            String::from_utf8(to[..len].to_vec()).unwrap()
        };
        let mut rng = crate::model::test_dumps::XorShift(0x9E37_79B9_7F4A_7C15);
        let edges = [0, 1, 999, 1_000, 9_999, 10_000, 10_001, 99_999, 100_000, 100_001, 999_999, 1_000_000];
        let more = [1_000_001, 9_999_999, 10_000_000, 10_000_001, u64::MAX];
        for ns in edges.into_iter().chain(more).chain((0..100_000).map(|_| rng.next() % 12_000_000)) {
            assert_eq!(column(ns), general(ns), "{ns} ns");
            assert_eq!(duration_column_len(ns), general(ns).len(), "{ns} ns");
        }
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
