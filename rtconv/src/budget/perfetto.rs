//! What Perfetto's protobuf takes, span by span, as [`crate::render::perfetto`] writes it: a begin
//! and an end packet each, whose times are varint deltas from the previous packet of the
//! thread's sequence — so a packet's size depends on which spans before it are kept.
//!
//! The packet before a span's begin is the end of its latest earlier sibling that is kept, or
//! else its parent's begin (for a thread's outermost spans: the sequence's clock at 0); the
//! packet before its end is the end of its latest child kept, or else its own begin. The delta
//! reaches a varint's next length `b` (2^7, 2^14, …) unless a sibling (or child) ending within
//! `b` of it is kept — that is, unless the threshold is at most the longest of those. So a span
//! is one step for its two packets' bytes (and one span), and each packet one byte less per
//! length the nearby siblings keep it under, each while the threshold is at most the longest of
//! them. The siblings seen so far are kept as a stack of suffix maxima (each longer than every
//! later one), found by binary search.
//!
//! Exact, but where stated: a key's first span on a sequence carries its interned name (and
//! place) whatever span that is, its packet's length counted as if the time took ten bytes (one
//! byte high at most); and a thread whose spans come out of order (a damaged ring, its packets
//! then on BOOTTIME) counts each packet's time at twelve bytes.

use super::{Costs, varint_len};
use crate::model::{Filtered, SpanNs, Timeline};
use crate::render::perfetto::{self, SPAN_FRAMING, fields_len, packet_len};

/// A span entered and not yet ended, in the walk: what its end needs.
struct Open {
    span: SpanNs,
    /// Its duration, as the threshold compares it.
    duration: u64,
    /// Its begin's and its end's times on the sequence's clock (ns since the origin).
    begin: u64,
    end: u64,
    /// Its begin packet's bytes, counted with its end's (one step per span).
    begin_bytes: usize,
    /// Where its children's stack starts in the walk's `children`.
    children: usize,
}

/// A finished child in a stack of suffix maxima: its end's time and its duration.
#[derive(Clone, Copy)]
struct Child {
    end: u64,
    duration: u64,
}

/// A packet's `timestamp` field at its longest: its key and a ten-byte varint.
const LONGEST_TIME: usize = 1 + 10;

/// The debug annotations of a span's begin at their longest: five, each a field key and length,
/// a name iid field (2 bytes) and a value (an int: up to 11 bytes).
const LONGEST_ANNOTATIONS: usize = 5 * (2 + 2 + 11);

/// The varint lengths' thresholds: a value of at least `LENGTHS[i]` takes more than `i + 1` bytes.
const LENGTHS: [u64; 9] = [1 << 7, 1 << 14, 1 << 21, 1 << 28, 1 << 35, 1 << 42, 1 << 49, 1 << 56, 1 << 63];

/// What `tl` takes as a Perfetto trace (the budget's note aside: [`fixed`]), and what its
/// filters kept and left out.
pub fn costs(tl: &Timeline<'_>, costs: &mut Costs) -> Filtered {
    costs.always(packet_len(perfetto::process_packet(tl, 0).len()));
    let placed = perfetto::placed(tl);
    let interned: Vec<(usize, bool)> = (0..tl.keys.len())
        .map(|k| {
            let (bytes, located) = perfetto::interned_data(tl, k, placed[k]);
            (bytes.len(), located)
        })
        .collect();
    let mut open: Vec<Open> = Vec::new();
    let mut children: Vec<Child> = Vec::new();
    // Per key index, the longest span of it on the thread (its name is interned while kept).
    let mut longest: Vec<Option<u64>> = vec![None; tl.keys.len()];
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let sequence = t.thread as u64 + 2;
        for packet in perfetto::thread_packets(tl, t.thread, sequence, sequence) {
            costs.always(packet_len(packet.len()));
        }
        let end_fields = fields_len(sequence, None);
        let begin_fields: Vec<usize> =
            (0..tl.keys.len()).map(|k| fields_len(sequence, Some((k, interned[k].1)))).collect();
        let lost = tl.lost_children(&tl.trace.threads[t.thread]);
        let mut walk = Walk { costs: &mut *costs, children: &mut children, in_order: true, origin: tl.origin_ns };
        walk.children.clear();
        open.clear();
        longest.iter_mut().for_each(|l| *l = None);
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while open.last().is_some_and(|top| !top.span.encloses(s)) {
                    let top = open.pop().expect("a top");
                    walk.costs.at(top.span.enter_ns);
                    walk.end(&top, end_fields);
                }
                let d = duration(s);
                let k = s.key_index as usize;
                walk.costs.at(s.enter_ns);
                if let Some(l) = longest.get_mut(k) {
                    *l = Some(l.map_or(d, |l| l.max(d)));
                }
                let (parent_begin, siblings) = open.last().map_or((0, 0), |p| (p.begin, p.children));
                let (begin, end) = (walk.time(s.enter_ns), walk.time(s.exit_ns));
                let annotations =
                    if s.plain() && !lost.of(s) { 0 } else { perfetto::annotations_len(s, perfetto::marks(s, &lost)) };
                let fields = begin_fields.get(k).copied().unwrap_or(0) + annotations;
                let begin_bytes = walk.packet(d, begin, parent_begin, siblings, fields);
                // Now a child of its parent: an earlier sibling for the spans after it.
                walk.push_child(siblings, Child { end, duration: d });
                open.push(Open { span: *s, duration: d, begin, end, begin_bytes, children: walk.children.len() });
            }
        }
        while let Some(top) = open.pop() {
            walk.costs.at(top.span.enter_ns);
            walk.end(&top, end_fields);
        }
        // Each key's interned name, while any span of it is kept, its packet's length (a
        // one-byte length otherwise) counted for the longest body it can have.
        for (k, l) in longest.iter().enumerate() {
            if let Some(l) = *l {
                let (bytes, _) = interned[k];
                let body = LONGEST_TIME + begin_fields[k] + LONGEST_ANNOTATIONS + bytes;
                costs.while_kept(l, (bytes + varint_len(body as u64) - 1) as i64);
            }
        }
    }
    threads.anomalies().filtered
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s Perfetto trace: its two
/// packets with one-byte times and no annotations, on the sequence with the shortest id.
pub fn least_span(tl: &Timeline<'_>) -> Vec<u64> {
    let placed = perfetto::placed(tl);
    // Sequence ids start at 2 (the first thread's). A begin names its place where its key's
    // interned data has one, as `costs` counts it.
    let end = SPAN_FRAMING + 2 + fields_len(2, None);
    let begin = |k: usize| {
        let (_, located) = perfetto::interned_data(tl, k, placed[k]);
        SPAN_FRAMING + 2 + fields_len(2, Some((k, located)))
    };
    (0..tl.keys.len()).map(|k| (begin(k) + end) as u64).collect()
}

/// A span's duration, as the threshold compares it.
fn duration(s: &SpanNs) -> u64 {
    s.exit_ns.saturating_sub(s.enter_ns).max(0) as u64
}

/// One thread's walk: where its steps go, and the finished children of every open span.
struct Walk<'c> {
    costs: &'c mut Costs,
    children: &'c mut Vec<Child>,
    /// No packet came before its predecessor so far.
    in_order: bool,
    origin: i64,
}

impl Walk<'_> {
    /// A packet's time on the sequence's clock.
    fn time(&self, ns: i64) -> u64 {
        ns.saturating_sub(self.origin).max(0) as u64
    }

    /// A span's end packet: the span's step, both its packets' bytes.
    #[inline(always)]
    fn end(&mut self, span: &Open, fields: usize) {
        let end_bytes = self.packet(span.duration, span.end, span.begin, span.children, fields);
        self.costs.span(span.duration, span.begin_bytes + end_bytes);
        self.children.truncate(span.children);
    }

    /// The bytes of a packet at `at` of a span lasting `d` (kept while the threshold is at most
    /// `d`), after `before` (the packet before it when none of the children from `from` on in
    /// the stack is kept), `fields` bytes after its time; the bytes that kept children spare it
    /// are counted here, its own by the caller (in the span's step).
    #[inline(always)]
    fn packet(&mut self, d: u64, at: u64, before: u64, from: usize, fields: usize) -> usize {
        let stack = &self.children[from..];
        if !self.in_order || at < before || stack.last().is_some_and(|c| c.end > at) {
            // This packet, or one before it, on BOOTTIME (the sequence's clock stays behind):
            // from here on each packet's time at its longest, with the clock's id.
            self.in_order = false;
            return SPAN_FRAMING + 10 + 2 + fields + 1;
        }
        // The varint lengths the delta from `before` passes: its length less one.
        let lengths = varint_len(at - before) - 1;
        if stack.is_empty() {
            // No child to spare it a byte (a leaf's end; a first child's begin).
            return SPAN_FRAMING + 1 + lengths + fields;
        }
        for &b in &LENGTHS[..lengths] {
            // The children ending within `b` of the packet: the first in the stack is the longest.
            let near = stack.partition_point(|c| c.end <= at - b);
            if let Some(c) = stack.get(near) {
                self.costs.while_kept(c.duration.min(d), -1);
            }
        }
        SPAN_FRAMING + 1 + lengths + fields
    }

    /// Adds `child` to the stack of suffix maxima starting at `from`.
    #[inline(always)]
    fn push_child(&mut self, from: usize, child: Child) {
        while self.children.len() > from && self.children.last().is_some_and(|c| c.duration <= child.duration) {
            self.children.pop();
        }
        self.children.push(child);
    }
}

/// What the budget's note takes for `tl` (cut as it will be written).
pub fn fixed(tl: &Timeline<'_>) -> u64 {
    perfetto::note_packet(tl, 0).map_or(0, |p| packet_len(p.len()) as u64)
}
