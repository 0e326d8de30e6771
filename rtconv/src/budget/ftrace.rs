//! What ftrace's function_graph text takes, span by span, as [`crate::render::ftrace`] writes it:
//! a span with kept children is an entry line and a closing line, one without them a single
//! leaf line — so a span's lines change once its longest child is left out. Exact.

use super::Costs;
use crate::model::{Filtered, SpanNs, Threads, Timeline, inside};
use crate::render::ftrace::{self, close_texts, duration_column_len, entry_text, indent_len, leaf_texts};

/// A span entered and not yet closed, in the walk: what its lines take once its children are known.
struct Open {
    enter_ns: i64,
    exit_ns: i64,
    /// Its duration, ns.
    ns: u64,
    /// Its longest child's duration, if it has a child.
    longest_child: Option<u64>,
    key_index: u32,
    /// Its depth in the walk (its indent).
    depth: u32,
    /// Its depth tag ([`crate::model::SpanNs::encloses`]).
    tag: u8,
    unwound: bool,
}

/// What a thread's lines take beside a span's own: its key's texts, its heads.
struct Texts<'a> {
    entries: &'a [usize],
    leaves: &'a [[usize; 2]],
    close: [usize; 2],
    head: usize,
    entry_head: usize,
}

impl Texts<'_> {
    /// Adds `open`'s lines to `costs`: a leaf line, or, while its longest child is kept, an
    /// entry and a closing line. `PROFILED`: the costs are
    /// [`profiled_in_time`](Costs::profiled_in_time).
    #[inline(always)]
    fn close<const PROFILED: bool>(&self, open: &Open, costs: &mut Costs) {
        if PROFILED {
            costs.at(open.enter_ns);
        }
        let depth = open.depth as usize;
        let exit_line = self.head + duration_column_len(open.ns) + indent_len(depth);
        let k = open.key_index as usize;
        let unwound = usize::from(open.unwound);
        let leaf = exit_line + self.leaves.get(k).map_or(0, |l| l[unwound]);
        costs.add_span::<PROFILED>(open.ns, leaf);
        if let Some(longest_child) = open.longest_child {
            let entry = self.entry_head + indent_len(depth) + self.entries.get(k).copied().unwrap_or(0);
            let parent = entry + exit_line + self.close[unwound];
            costs.while_kept(longest_child, parent as i64 - leaf as i64);
        }
    }

    /// Adds the spans of `batch` (the thread's next in start order) to `stack`, and the lines
    /// of those it closes to `costs`; `PROFILED` as in [`close`](Self::close).
    #[inline(always)]
    fn walk<const PROFILED: bool>(&self, batch: &[SpanNs], stack: &mut Vec<Open>, costs: &mut Costs) {
        for s in batch {
            while let Some(top) = stack.last() {
                if inside(top.tag, top.exit_ns, s.depth_tag(), s.enter_ns) {
                    break;
                }
                self.close::<PROFILED>(top, costs);
                stack.pop();
            }
            let ns = s.duration_ns();
            if let Some(parent) = stack.last_mut() {
                parent.longest_child = Some(parent.longest_child.map_or(ns, |l| l.max(ns)));
            }
            stack.push(Open {
                enter_ns: s.enter_ns,
                exit_ns: s.exit_ns,
                ns,
                longest_child: None,
                key_index: s.key_index,
                depth: stack.len() as u32,
                tag: s.depth_tag(),
                unwound: s.unwound(),
            });
        }
    }
}

/// What `tl` takes as ftrace text (the header aside: [`fixed`]), and what its filters kept and left out.
pub fn costs(tl: &Timeline<'_>, mut threads: Threads<'_, '_>, costs: &mut Costs) -> Filtered {
    let entries: Vec<usize> = (0..tl.keys.len()).map(|k| entry_text(tl.name(k)).len()).collect();
    let leaves: Vec<[usize; 2]> = (0..tl.keys.len()).map(|k| leaf_texts(tl.name(k)).map(|l| l.len())).collect();
    let close = close_texts().map(|c| c.len());
    let mut previous: Option<String> = None;
    let mut stack: Vec<Open> = Vec::new();
    while let Some(mut t) = threads.next() {
        let task = ftrace::task(&tl.trace.threads[t.thread]);
        costs.always(ftrace::switch_block(previous.as_deref(), &task).len());
        let (head, entry_head) = ftrace::heads(&task);
        let texts = Texts { entries: &entries, leaves: &leaves, close, head: head.len(), entry_head: entry_head.len() };
        stack.clear();
        let profiled = costs.profiled_in_time();
        while let Some(batch) = t.next_batch() {
            if profiled {
                texts.walk::<true>(batch, &mut stack, costs);
            } else {
                texts.walk::<false>(batch, &mut stack, costs);
            }
        }
        while let Some(open) = stack.pop() {
            if profiled {
                texts.close::<true>(&open, costs);
            } else {
                texts.close::<false>(&open, costs);
            }
        }
        previous = Some(task);
    }
    threads.anomalies().filtered
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s ftrace text: its lines (a
/// leaf line, or an entry and a closing line if it has children) without their indent, on the
/// thread with the shortest name. Its depth adds [`least_indent`].
pub fn least_span(tl: &Timeline<'_>) -> Vec<u64> {
    let heads = tl.trace.threads.iter().map(|t| ftrace::heads(&ftrace::task(t)));
    let (head, entry_head) = heads.map(|(h, e)| (h.len(), e.len())).min().unwrap_or((0, 0));
    let exit_line = head + duration_column_len(0);
    let per_key = (0..tl.keys.len()).map(|k| {
        let name = tl.name(k);
        let text = leaf_texts(name)[0].len().min(entry_head + entry_text(name).len() + close_texts()[0].len());
        (exit_line + text) as u64
    });
    per_key.collect()
}

/// What the indent of a kept span's lines adds to [`least_span`], at least, for its depth tag
/// (depth + 1, or 0 if not known): a span's depth in the output is its depth in the ring, as
/// every span around it lasts at least as long and is kept too (unless a full ring dropped them:
/// then this may be too much, and a floor it puts too high is refused, as any is).
pub fn least_indent(depth_tag: u8) -> u64 {
    depth_tag.checked_sub(1).map_or(0, |depth| indent_len(usize::from(depth)) as u64)
}

/// What the header takes for `tl` (filtered and cut as it will be written).
pub fn fixed(tl: &Timeline<'_>) -> u64 {
    ftrace::header(tl).len() as u64
}
