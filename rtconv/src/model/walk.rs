//! Walks over every span in pre-order, parents before children, straight
//! from the file when a ring nests: the call-tree walk that reports each
//! span when it closes ([`Timeline::walk`]), and the cheaper one that
//! reports it when it opens ([`Timeline::arrivals`]).

use super::filter::Gate;
use super::timeline::{Anomalies, MAX_DEPTH, RecorderCost, Timeline, deeper};

/// One span as [`Timeline::walk`] reports it, when it closes.
pub struct Visit<'p> {
    /// Index of its thread in `Trace::threads`.
    pub thread: usize,
    /// Key indices from the thread's root to the span (its own last).
    pub path: &'p [u32],
    /// Its start, monotonic ns.
    pub enter_ns: i64,
    /// Its duration, clamped into its parent (a child never counts beyond its parent's end).
    pub duration: u64,
    /// That duration less its direct children's.
    pub self_ns: u64,
    /// No span around it has the same key (a recursive call's outermost entry).
    pub outermost: bool,
    /// Left without its exit hook (a `longjmp`): it ends where the recorder noticed.
    pub unwound: bool,
    /// Children of it are missing (see [`LostChildren`]).
    pub missing_children: bool,
}

/// Which of a thread's spans lost children its ring did not keep, so their
/// self time includes the children's:
/// - in a ring that overwrote spans, those that began before the end of the
///   oldest span it kept (children that ended before then were overwritten):
///   that span and its callers. Where the records state their depths (and
///   nest), these are found by the ring's order — the oldest record, then the
///   first record after it at each shallower depth, then the open spans
///   shallower still — so a counter too coarse to order their times (one
///   that stamps a call and its callers with the same tick) marks the same
///   spans as a fine one; elsewhere, by comparing start times with that end;
/// - in a ring that dropped spans once full, those still open at the dump
///   (what they called after the ring filled was dropped; a span that ended
///   after that was dropped itself).
#[derive(Clone, Copy, Debug)]
pub struct LostChildren<'t> {
    /// Spans that began before this (monotonic ns) lost children (`None` where `by_depth`
    /// marks them).
    began_before_ns: Option<i64>,
    /// [`ThreadTrace::lost_by_depth`](super::ThreadTrace::lost_by_depth), where the ring overwrote spans.
    by_depth: &'t [u32],
    /// Open spans lost children.
    open: bool,
}

impl LostChildren<'_> {
    /// Whether decoded span `s` lost children (by the mark the decoding gave it, where the
    /// ring's order decides: see [`LostChildren`]).
    #[inline]
    pub fn of(&self, s: &super::SpanNs) -> bool {
        s.began_before_oldest_end()
            || self.began_before_ns.is_some_and(|before| s.enter_ns < before)
            || (s.open() && self.open)
    }

    /// Whether `s` is [`plain`](super::SpanNs::plain) and lost no children: what most spans
    /// are, checked at once.
    #[inline(always)]
    pub fn plain_and_whole(&self, s: &super::SpanNs) -> bool {
        s.bare() && self.began_before_ns.is_none_or(|before| s.enter_ns >= before)
    }

    /// [`of`](Self::of) for a span read from the ring at `position` (depth tag `depth`), that
    /// began at `enter_ns` and was open at the dump if `open`.
    #[inline(always)]
    fn of_record(&self, position: usize, depth: u8, enter_ns: i64, open: bool) -> bool {
        self.began_before_ns.is_some_and(|before| enter_ns < before)
            || began_before_oldest_end(self.by_depth, position, depth)
            || (open && self.open)
    }
}

impl Timeline<'_> {
    /// The rule for thread `t`'s spans: see [`LostChildren`].
    pub fn lost_children<'t>(&self, t: &'t super::ThreadTrace<'_>) -> LostChildren<'t> {
        // `lost_by_depth` is empty where the ring overwrote nothing.
        let by_depth = t.lost_by_depth.as_slice();
        let began_before_ns = t
            .oldest_exit
            .filter(|_| t.overwritten() > 0 && by_depth.is_empty())
            .map(|w| self.span_ns(w, w, &mut Anomalies::default()).0);
        LostChildren { began_before_ns, by_depth, open: t.dropped > 0 }
    }
}

/// Whether the span at `position` of a ring, depth tag `depth`, is the one `by_depth`
/// ([`ThreadTrace::lost_by_depth`](super::ThreadTrace::lost_by_depth)) names at its depth.
#[inline(always)]
pub(super) fn began_before_oldest_end(by_depth: &[u32], position: usize, depth: u8) -> bool {
    by_depth.get(usize::from(depth)).is_some_and(|&p| p as usize == position)
}

/// The key index that stands, in a [capped path](Visit::capped_path), for
/// every level deeper than [`MAX_DEPTH`]; [`Timeline::name`] calls it
/// `[deeper]`.
pub const DEEPER: u32 = u32::MAX;

impl Visit<'_> {
    /// The path for a summary that keeps one entry per distinct path
    /// (collapsed stacks, the call tree): the key indices of its first
    /// [`MAX_DEPTH`] levels, then [`DEEPER`] for a span nested deeper — so
    /// all of a path's deeper spans merge into one entry, and the entries'
    /// size stays linear in the spans however deep the nesting.
    #[inline] // once per span
    pub fn capped_path(&self) -> Vec<u32> {
        match self.path.get(..=MAX_DEPTH) {
            None => self.path.to_vec(),
            Some(_) => deeper_path(self.path),
        }
    }
}

/// `path` cut at [`MAX_DEPTH`] levels, then [`DEEPER`].
#[cold]
#[inline(never)]
fn deeper_path(path: &[u32]) -> Vec<u32> {
    let mut capped = Vec::with_capacity(MAX_DEPTH + 1);
    capped.extend_from_slice(&path[..MAX_DEPTH.min(path.len())]);
    capped.push(DEEPER);
    capped
}

/// One span as [`Timeline::arrivals`] reports it: at its start, before the spans inside it.
pub struct Arrival {
    /// Index of its thread in `Trace::threads`.
    pub thread: usize,
    /// Its key index.
    pub key_index: u32,
    /// The key index of the span around it, if any.
    pub parent: Option<u32>,
    /// Its start, monotonic ns.
    pub enter_ns: i64,
    /// Its duration, clamped into its parent (as in [`Visit::duration`], uncalibrated).
    pub duration: u64,
    /// No span around it has the same key.
    pub outermost: bool,
    /// Left without its exit hook (a `longjmp`): it ends where the recorder noticed.
    pub unwound: bool,
    /// Children of it are missing (see [`LostChildren`]).
    pub missing_children: bool,
}

/// Whether a span that starts at `enter` (depth tag `depth`) lies outside
/// the open span `open_enter..open_end` (tag `open_depth`), which came before
/// it in a walk. Where both tags state a depth, it is outside unless it is
/// deeper, whatever the times ([`SpanNs::encloses`](super::SpanNs::encloses)).
/// Otherwise by time: newest first (a nested ring read backwards) a span
/// ended no later than every open span, so it is inside each one it does not
/// start before — one starting at an open span's end is its zero-length last
/// child. In start order, a span starting at or after an open span's end
/// follows it.
#[inline(always)]
pub(super) fn outside(open: (i64, i64, u8), enter: i64, depth: u8, newest_first: bool) -> bool {
    let (open_enter, open_end, open_depth) = open;
    deeper(open_depth, depth).map_or(enter < open_enter || (!newest_first && open_end <= enter), |d| !d)
}

/// How a span is incomplete, as [`Visit`] and [`Arrival`] say, and its depth tag.
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    unwound: bool,
    missing_children: bool,
    /// Depth + 1 where its ring states it, else 0.
    depth: u8,
}

/// What [`Timeline::pre_order`] feeds: every thread's spans in pre-order
/// (parents before children), children right to left when a nested ring is
/// read newest first, else left to right.
trait PreOrderSink {
    /// Thread `index` begins.
    fn thread(&mut self, index: usize);
    /// The next span; `NEWEST_FIRST` tells which order they come in (see [`outside`]).
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32, marks: Marks);
    /// The thread is done: how many of its spans lay deeper than [`MAX_DEPTH`].
    fn end(&mut self) -> u64;
}

/// The call-tree walk behind [`Timeline::walk`]: each span is reported to
/// `visit` when it closes.
struct ClosingWalk<F> {
    thread: usize,
    cost: Option<RecorderCost>,
    stack: Vec<WalkFrame>,
    path: Vec<u32>,
    /// How many spans of each key are open: a span is its key's outermost when it is the only one.
    active: Vec<u32>,
    too_deep: u64,
    visit: F,
}

/// A span the walk has opened and not yet closed.
struct WalkFrame {
    enter: i64,
    end: i64,
    /// Its measured duration, cut at its parent's end.
    own: u64,
    /// Its children's reported (with calibration: calibrated) durations, added up.
    children: u64,
    /// Its children's measured durations, added up.
    measured_children: u64,
    /// How many children it has.
    direct: u64,
    marks: Marks,
}

impl<F: FnMut(&Visit<'_>)> ClosingWalk<F> {
    #[inline]
    fn close(&mut self) {
        let (Some(o), Some(&key)) = (self.stack.pop(), self.path.last()) else { return };
        // Calibrated, a span's self time loses what the recorder added to it: `read` (what
        // an empty span measures of itself) and, per child, what the child cost beyond what
        // the child measures of itself (`span - read`). Its duration is then its self time
        // plus its children's calibrated durations — so self times never exceed durations,
        // and add up to the outermost span's duration, however the costs compare.
        let (duration, self_ns) = match self.cost {
            Some(RecorderCost { read_ns: read, span_ns: span }) => {
                // read + direct × (span − read), never below zero.
                let cost =
                    read.saturating_add(span.saturating_mul(o.direct)).saturating_sub(read.saturating_mul(o.direct));
                let self_ns = o.own.saturating_sub(o.measured_children).saturating_sub(cost);
                (self_ns.saturating_add(o.children), self_ns)
            }
            None => (o.own, o.own.saturating_sub(o.children)),
        };
        let count = self.active.get(key as usize).copied().unwrap_or(1);
        (self.visit)(&Visit {
            thread: self.thread,
            path: &self.path,
            enter_ns: o.enter,
            duration,
            self_ns,
            outermost: count == 1,
            unwound: o.marks.unwound,
            missing_children: o.marks.missing_children,
        });
        if let Some(c) = self.active.get_mut(key as usize) {
            *c = c.saturating_sub(1);
        }
        self.path.pop();
        if let Some(parent) = self.stack.last_mut() {
            parent.children += duration;
            parent.measured_children += o.own;
            parent.direct += 1;
        }
    }
}

impl<F: FnMut(&Visit<'_>)> PreOrderSink for ClosingWalk<F> {
    fn thread(&mut self, index: usize) {
        self.thread = index;
    }

    /// Closes the open spans the span lies [`outside`] of, then opens it
    /// inside the innermost one left, cut at that one's end.
    #[inline]
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32, marks: Marks) {
        while self
            .stack
            .last()
            .is_some_and(|o| outside((o.enter, o.end, o.marks.depth), enter, marks.depth, NEWEST_FIRST))
        {
            self.close();
        }
        let end = self.stack.last().map_or(exit, |o| exit.min(o.end));
        let own = end.saturating_sub(enter).max(0) as u64;
        self.stack.push(WalkFrame { enter, end, own, children: 0, measured_children: 0, direct: 0, marks });
        self.path.push(key_index);
        if self.stack.len() > MAX_DEPTH {
            self.too_deep += 1;
        }
        // Key indices come from `keys.binary_search`, so they are in range.
        if let Some(count) = self.active.get_mut(key_index as usize) {
            *count += 1;
        }
    }

    /// Closes every open span.
    fn end(&mut self) -> u64 {
        while !self.stack.is_empty() {
            self.close();
        }
        std::mem::take(&mut self.too_deep)
    }
}

/// The open path behind [`Timeline::arrivals`]: each span is reported to
/// `visit` when it opens, and nothing is done when it closes.
struct OpenPath<F> {
    thread: usize,
    /// The open spans, outermost first: (enter, end, key index, depth tag).
    frames: Vec<(i64, i64, u32, u8)>,
    /// Per key index: the depth of the outermost open span of that key, when
    /// one is open (otherwise any value; see [`OpenPath::span`]).
    outer: Vec<u32>,
    too_deep: u64,
    visit: F,
}

impl<F: FnMut(&Arrival)> PreOrderSink for OpenPath<F> {
    fn thread(&mut self, index: usize) {
        self.thread = index;
        self.frames.clear();
    }

    /// Leaves the open spans the span lies [`outside`] of, then opens it
    /// inside the innermost one left, cut at that one's end. Whether a key
    /// is open further out is one lookup, since `outer[key]` is right
    /// whenever the frame at that depth still has that key (the outermost
    /// frame of a key goes only with every frame inside it).
    #[inline(always)] // once per span
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32, marks: Marks) {
        let mut depth = self.frames.len();
        while let Some(&(open_enter, open_end, _, open_depth)) = self.frames.get(depth.wrapping_sub(1)) {
            if !outside((open_enter, open_end, open_depth), enter, marks.depth, NEWEST_FIRST) {
                break;
            }
            depth -= 1;
        }
        self.frames.truncate(depth);
        let (end, parent) = match self.frames.last() {
            Some(&(_, open_end, key, _)) => (exit.min(open_end), Some(key)),
            None => (exit, None),
        };
        let Some(outer) = self.outer.get_mut(key_index as usize) else { return };
        let open_further_out = self.frames.get(*outer as usize).is_some_and(|f| f.2 == key_index);
        if !open_further_out {
            *outer = depth as u32;
        }
        self.frames.push((enter, end, key_index, marks.depth));
        if depth >= MAX_DEPTH {
            self.too_deep += 1;
        }
        (self.visit)(&Arrival {
            thread: self.thread,
            key_index,
            parent,
            enter_ns: enter,
            duration: end.saturating_sub(enter).max(0) as u64,
            outermost: !open_further_out,
            unwound: marks.unwound,
            missing_children: marks.missing_children,
        });
    }

    fn end(&mut self) -> u64 {
        std::mem::take(&mut self.too_deep)
    }
}

impl<'a> Timeline<'a> {
    /// Every span, thread after thread, as it starts (see [`Arrival`]):
    /// what [`walk`](Self::walk) gives without calibration, for a caller
    /// that needs neither the path nor a span's children at its end — each
    /// span is one lookup and one push, where a walk also closes it. Rings
    /// are read as [`walk`](Self::walk) reads them.
    /// Returns what the dump's spans had wrong with them.
    pub fn arrivals(&self, visit: impl FnMut(&Arrival)) -> Anomalies {
        let keys = self.keys.len();
        self.pre_order(&mut OpenPath { thread: 0, frames: Vec::new(), outer: vec![u32::MAX; keys], too_deep: 0, visit })
    }

    /// Feeds every thread's spans to `p` in pre-order. A ring whose spans
    /// nest ([`ThreadTrace::nested`](super::ThreadTrace::nested)) is
    /// read straight from the file, newest span first (parents before
    /// children, siblings right to left); others are decoded, sorted and
    /// clamped first. Each thread is decoded once; returns what their spans
    /// had wrong with them.
    fn pre_order(&self, p: &mut impl PreOrderSink) -> Anomalies {
        let mut decoder = self.threads();
        let mut found = Anomalies::default();
        let mut gate = self.selection.as_ref().map(Gate::new);
        for (index, t) in self.trace.threads.iter().enumerate() {
            if let Some(spans) = self.thread_left_out(index) {
                found.filtered.thread += spans;
                continue;
            }
            p.thread(index);
            let lost = self.lost_children(t);
            if t.nested {
                // Without a filter, no decision per span (`keep` inlines to nothing).
                match gate.as_mut() {
                    Some(gate) => {
                        gate.reset();
                        self.feed_nested(t, p, lost, &mut found, |e, x, k, d| gate.keep::<true>(e, x, k, d));
                    }
                    None => self.feed_nested(t, p, lost, &mut found, |_, _, _, _| true),
                }
                found.too_deep += p.end();
            } else if let Some(mut decoded) = decoder.decode(index) {
                while let Some(batch) = decoded.next_batch() {
                    for s in batch {
                        let missing_children = lost.of(s);
                        p.span::<false>(
                            s.enter_ns,
                            s.exit_ns,
                            s.key_index,
                            Marks { unwound: s.unwound(), missing_children, depth: s.depth_tag() },
                        );
                    }
                }
                p.end(); // too deep: counted by the decoder
            }
        }
        found += decoder.anomalies();
        if let Some(gate) = gate {
            found.filtered += gate.counts;
        }
        found
    }

    /// Feeds the spans of `t`, a ring that nests, to `p` newest first — those
    /// `keep` (enter, exit, key index, depth tag) keeps.
    #[inline(always)]
    fn feed_nested(
        &self,
        t: &super::ThreadTrace<'_>,
        p: &mut impl PreOrderSink,
        lost: LostChildren,
        found: &mut Anomalies,
        mut keep: impl FnMut(i64, i64, u32, u8) -> bool,
    ) {
        let mut last: Option<(u64, u32)> = None;
        // Positions only where the ring's order marks spans (see `LostChildren`).
        t.spans_rev(
            !lost.by_depth.is_empty(),
            #[inline(always)] // into each storage's loop: a call per span otherwise
            |r, position| {
                let (enter_ns, exit_ns) = self.span_ns(r.enter, r.exit, found);
                let key_index = self.key_index(r.key, &mut last);
                if keep(enter_ns, exit_ns, key_index, r.depth) {
                    let missing_children = lost.of_record(position, r.depth, enter_ns, r.open);
                    let marks = Marks { unwound: r.unwound, missing_children, depth: r.depth };
                    p.span::<true>(enter_ns, exit_ns, key_index, marks);
                }
            },
        );
    }

    /// Walks every thread's spans as a call tree, thread after thread, and
    /// calls `visit` once per span, when it closes (see [`Visit`]); with
    /// `cost = Some(RecorderCost { read_ns, span_ns })` the recorder's own cost is taken
    /// out: each span's self time loses `read_ns` (what an empty span
    /// measures of itself) and `span_ns - read_ns` per child (what each
    /// child adds to it beyond what the child measures of itself), never
    /// going below zero; its duration is its self time plus its children's
    /// calibrated durations. Without clamping this is the span's duration
    /// less `read_ns` and `span_ns` per span nested in it at any depth.
    ///
    /// A ring whose spans nest ([`ThreadTrace::nested`](super::ThreadTrace::nested))
    /// is walked straight from the file, newest span first (parents before
    /// children, siblings right to left), holding only the open path;
    /// others are decoded, sorted and clamped first. Each thread is decoded
    /// once. Returns what the dump's spans had wrong with them.
    pub fn walk(&self, cost: Option<RecorderCost>, visit: impl FnMut(&Visit<'_>)) -> Anomalies {
        let active = vec![0; self.keys.len()];
        self.pre_order(&mut ClosingWalk {
            thread: 0,
            cost,
            stack: Vec::new(),
            path: Vec::new(),
            active,
            too_deep: 0,
            visit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_dumps::{nested_tree, records, with_dump};

    #[test]
    fn arrivals_report_what_the_walk_reports() {
        // A random tree over three keys (recursion included) as a ring holds
        // it, and the same spans shuffled: walked straight from the file and sorted.
        let (mut spans, parents) = nested_tree(7, 3_000, true);
        for (i, s) in spans.iter_mut().enumerate() {
            s.key_index = (i as u32).wrapping_mul(2_654_435_761) % 3;
        }
        // Self time per key, from the tree as it was built.
        let mut true_self = std::collections::BTreeMap::new();
        for (s, parent) in spans.iter().zip(&parents) {
            let duration = s.exit_ns - s.enter_ns;
            *true_self.entry(s.key_index).or_insert(0) += duration;
            if let Some(p) = *parent {
                *true_self.entry(spans[p].key_index).or_insert(0) -= duration;
            }
        }
        let mut shuffled = spans.clone();
        shuffled.reverse();
        shuffled.swap(10, 2_000);
        let rings = [records(&spans), records(&shuffled)];
        let (walked, arrived) = with_dump(&rings, |tl| {
            assert_eq!((tl.trace.threads[0].nested, tl.trace.threads[1].nested), (true, false));
            // Each span: (thread, key, start, duration, outermost, parent's key); self time per (thread, key).
            let (mut walked, mut walked_self) = (Vec::new(), std::collections::BTreeMap::new());
            tl.walk(None, |v| {
                let key = *v.path.last().unwrap();
                let parent = v.path.len().checked_sub(2).map(|i| v.path[i]);
                walked.push((v.thread, key, v.enter_ns, v.duration, v.outermost, parent));
                *walked_self.entry((v.thread, key)).or_insert(0u64) += v.self_ns;
            });
            let (mut arrived, mut arrived_self) = (Vec::new(), std::collections::BTreeMap::new());
            tl.arrivals(|a| {
                arrived.push((a.thread, a.key_index, a.enter_ns, a.duration, a.outermost, a.parent));
                // As stats adds them up: a span's duration to its key, taken from its parent's.
                let own = arrived_self.entry((a.thread, a.key_index)).or_insert(0u64);
                *own = own.wrapping_add(a.duration);
                if let Some(parent) = a.parent {
                    let entry = arrived_self.entry((a.thread, parent)).or_insert(0u64);
                    *entry = entry.wrapping_sub(a.duration);
                }
            });
            walked.sort_unstable();
            arrived.sort_unstable();
            ((walked, walked_self), (arrived, arrived_self))
        });
        assert_eq!(walked.0.len(), 6_000);
        assert!(walked.0.iter().any(|w| !w.4), "recursion: some spans are not their key's outermost");
        assert!(walked.0.iter().any(|w| w.3 == 0), "zero-length spans");
        // The ring's order settles ties: a zero-length span at its parent's
        // end is inside it, and none of its earlier siblings' time counts
        // twice. (Shuffled, spans with the same start and end cannot be told
        // apart: which is the parent is a guess.)
        assert!(spans.iter().zip(&parents).any(|(s, p)| p.is_some_and(|p| s.enter_ns == spans[p].exit_ns)));
        let got: std::collections::BTreeMap<u32, i64> =
            walked.1.iter().filter(|((t, _), _)| *t == 0).map(|(&(_, k), &v)| (k, v as i64)).collect();
        assert_eq!(got, true_self);
        assert_eq!(arrived.1, walked.1, "self times");
        assert!(arrived.0 == walked.0, "arrivals differ from the walk's spans");
    }
}
