//! Collapsed stacks (`-f folded`), the input of `flamegraph.pl` and inferno,
//! and flame graph SVGs made from them (`-f flamegraph`, through inferno).
//!
//! One line per distinct call path: `thread;outer;…;inner SELF_NS`, where
//! the root frame is the thread's name (or `thread TID`) and the weight is
//! the path's self time in nanoseconds — its spans' durations less their
//! direct children's, summed. A child that outlives its parent is clamped
//! into it, so every thread's weights add up to exactly its top-level spans'
//! total time. Lines are sorted, so the output is the same for the same dump.
//! Spans nested deeper than 512 levels are merged into a `[deeper]` frame
//! under their ancestors, so the output stays linear in the spans.

use std::collections::HashMap;
use std::io::{self, Write};

use crate::model::{Anomalies, Timeline};

/// The collapsed stacks of `tl`, one `(path, self_ns)` per distinct path,
/// sorted; and what its spans had wrong.
pub(crate) fn stacks(tl: &Timeline<'_>) -> (Vec<(String, u64)>, Anomalies) {
    let names: Vec<String> = (0..tl.keys.len()).map(|k| frame(tl.name(k))).collect();
    // Self time per thread and path of key indices (capped: see `Visit::capped_path`).
    let mut self_ns: HashMap<(usize, Vec<u32>), u64> = HashMap::new();
    let found = tl.walk(None, |v| {
        *self_ns.entry((v.thread, v.capped_path())).or_default() += v.self_ns;
    });
    let roots: Vec<String> = tl
        .trace
        .threads
        .iter()
        .map(|t| if t.name.is_empty() { format!("thread {}", t.tid) } else { frame(&t.name) })
        .collect();
    let mut lines = Vec::new();
    for ((thread, path), weight) in self_ns {
        if weight == 0 {
            continue;
        }
        let mut line = roots[thread].clone();
        for &k in &path {
            line.push(';');
            line.push_str(names.get(k as usize).map_or(tl.name(k as usize), String::as_str));
        }
        lines.push((line, weight));
    }
    lines.sort_unstable();
    (lines, found)
}

/// A name as a folded frame: `;` separates frames and the weight follows
/// the last space of a line, so `;` and line breaks are replaced, and so
/// are the other control characters (XML, hence a flame graph's SVG, has
/// no way to hold them).
fn frame(name: &str) -> String {
    name.chars().map(|c| if c == ';' || c.is_control() { '_' } else { c }).collect()
}

/// Writes `-f folded`; returns what the spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    let (lines, found) = stacks(tl);
    for (path, weight) in lines {
        writeln!(out, "{path} {weight}")?;
    }
    Ok(found)
}

/// Writes `-f flamegraph`: an interactive SVG, widths proportional to self
/// time; returns what the spans had wrong.
pub fn write_svg(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    let (stacks, found) = stacks(tl);
    let lines: Vec<String> = stacks.into_iter().map(|(path, weight)| format!("{path} {weight}")).collect();
    let mut options = inferno::flamegraph::Options::default();
    options.title = format!("{} (self time)", tl.trace.path.display());
    options.count_name = "ns".into();
    inferno::flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), out)?;
    Ok(found)
}
