//! Spans in start order, one thread at a time and a batch at a time:
//! found in closed form for a ring that nests, sorted and clamped for one
//! that does not.

use super::decoded::{Chunk, Chunks};
use super::filter::Gate;
use super::ring_access::{RingSpans, RingVisitor};
use super::streamed::Streamed;
use super::timeline::{Anomalies, MAX_DEPTH, SpanNs, Timeline, deeper};
use super::trace::ThreadTrace;
use super::walk::began_before_oldest_end;

/// Cuts every span that outlives its parent at the parent's end, in a
/// thread's spans sorted by (start, longer first). Returns how many were cut
/// and how many lie deeper than [`MAX_DEPTH`].
fn clamp_into_parents(spans: &mut [SpanNs]) -> (u64, u64) {
    let (mut cut, mut deep) = (0, 0);
    let mut open: Vec<SpanNs> = Vec::new();
    for s in spans.iter_mut() {
        while open.last().is_some_and(|o| !o.encloses(s)) {
            open.pop();
        }
        if let Some(parent) = open.last()
            && s.exit_ns > parent.exit_ns
        {
            s.clamp_to(parent.exit_ns);
            cut += 1;
        }
        open.push(*s);
        if open.len() > MAX_DEPTH {
            deep += 1;
        }
    }
    (cut, deep)
}

/// One thread's spans, lent by [`Threads::next`] in batches
/// ([`next_batch`](Self::next_batch)): in nanoseconds, sorted by start,
/// longer first on ties (so a parent precedes the children that start with
/// it), children cut at their parent's end.
pub struct ThreadSpans<'x, 't, 'a> {
    /// Index into `Trace::threads`.
    pub thread: usize,
    threads: &'x mut Threads<'t, 'a>,
    source: Source<'t>,
    /// The next place in start order.
    next: usize,
    last_key: Option<(u64, u32)>,
}

/// Where a thread's spans come from.
#[derive(Clone, Copy)]
enum Source<'t> {
    /// A ring that nests: decoded batch by batch in `order`.
    Placed,
    /// Decoded and sorted at once into `sorted`.
    Sorted,
    /// Decoded before, kept in the timeline (`Timeline::decode_all`): the chunk being read,
    /// those after it, and the duration each span lasts at least (ns). A batch never spans two
    /// chunks; a window's walk, whose counts go by batch, is of a decode of every span, which
    /// keeps each thread in one chunk (as the rings decode, `BATCH` at a time).
    Kept(&'t [SpanNs], &'t [Chunk], u64),
    /// Decoded on another thread as this one walks them ([`Threads::streamed`]).
    Streamed,
}

/// Spans per batch: 512 KiB, so a batch is still in the cache when it is rendered.
pub(super) const BATCH: usize = 16 * 1024;

/// What [`ThreadSpans::next_kept`] found in a chunk of spans decoded before.
enum Kept<'t> {
    /// Spans lent where they are.
    Lent(&'t [SpanNs]),
    /// Spans gathered into the batch.
    Gathered,
}

impl<'t> ThreadSpans<'_, 't, '_> {
    /// The next spans in start order, or `None` when the thread has no more.
    pub fn next_batch(&mut self) -> Option<&[SpanNs]> {
        let Some(window) = self.threads.timeline.window else { return self.next_unclipped() };
        // A part of a split output: the spans overlapping its window, cut to it. A thread's
        // spans after the window's end are not decoded.
        loop {
            let mut clipped = std::mem::take(&mut self.threads.clipped);
            clipped.clear();
            let past = self.next_unclipped().map(|batch| {
                clipped.extend(batch.iter().filter_map(|s| s.within(window)));
                batch.first().is_some_and(|s| s.enter_ns >= window.1)
            });
            self.threads.clipped = clipped;
            let past = past?;
            if past {
                self.next = usize::MAX;
                return None;
            }
            if !self.threads.clipped.is_empty() {
                return Some(&self.threads.clipped);
            }
        }
    }

    /// [`next_batch`](Self::next_batch) without a window.
    fn next_unclipped(&mut self) -> Option<&[SpanNs]> {
        match self.source {
            Source::Placed => {}
            Source::Streamed => {
                // Past the thread's end, nothing is taken from the next thread's messages.
                if self.next == usize::MAX {
                    return None;
                }
                let threads = &mut *self.threads;
                match threads.stream.as_ref().and_then(|rx| rx.recv().ok()) {
                    Some(Streamed::Spans(chunk)) => {
                        return Some(threads.received.insert(chunk).as_slice());
                    }
                    Some(Streamed::End(found)) => threads.found += found,
                    // The decode stopped (over its memory): the walk is cut short, and not used.
                    None => {}
                }
                self.next = usize::MAX;
                return None;
            }
            Source::Sorted => {
                let threads = &*self.threads;
                let batch = threads.sorted.get(self.next..).filter(|rest| !rest.is_empty())?;
                self.next = threads.sorted.len();
                return Some(batch);
            }
            Source::Kept(mut spans, mut rest, at_least_ns) => loop {
                match self.next_kept(spans, at_least_ns) {
                    Some(Kept::Lent(batch)) => return Some(batch),
                    Some(Kept::Gathered) => return Some(&self.threads.batch),
                    // The chunk is read: the next one, if any.
                    None => {
                        let (chunk, after) = rest.split_first()?;
                        (spans, rest) = (chunk, after);
                        self.source = Source::Kept(spans, rest, at_least_ns);
                        self.next = 0;
                    }
                }
            },
        }
        self.decode_next()?;
        let threads = &mut *self.threads;
        if let Some(gate) = threads.gate.as_mut() {
            threads.batch.retain(|s| gate.keep_cut(s));
        }
        Some(&threads.batch)
    }

    /// The next spans of `spans`, a chunk decoded before (each lasting at least `at_least_ns`),
    /// as [`next_unclipped`](Self::next_unclipped) gives them; `None` past the chunk's last.
    fn next_kept(&mut self, spans: &'t [SpanNs], at_least_ns: u64) -> Option<Kept<'t>> {
        let from = self.next;
        let batch = spans.get(from..spans.len().min(from.saturating_add(BATCH))).filter(|b| !b.is_empty())?;
        let windowed = self.threads.timeline.window.is_some();
        let threads = &mut *self.threads;
        let gate = match threads.gate.as_mut() {
            Some(gate) if windowed || !gate.keeps_all_lasting(at_least_ns) => gate,
            // No gate, or one that keeps every span here (a `-t` no longer than the
            // decode's): lent whole.
            lent => {
                if let Some(gate) = lent {
                    gate.counts.kept += batch.len() as u64;
                }
                self.next = from + batch.len();
                return Some(Kept::Lent(batch));
            }
        };
        if windowed {
            // A window stops at a batch's first span past its end: the gate sees whole
            // batches, as where the rings are decoded, and counts the same spans.
            self.next = from + batch.len();
            threads.batch.clear();
            threads.batch.extend_from_slice(batch);
            threads.batch.retain(|s| gate.keep_cut(s));
            return Some(Kept::Gathered);
        }
        if let Some(min) = gate.duration_alone() {
            // `-t` alone: the spans lasting at least `min` of the next `BATCH` (or more, to
            // find one), gathered, each span counted once; where short spans come between
            // the kept ones, runs lent in place would be a few spans each.
            let mut from = from;
            threads.batch.clear();
            while threads.batch.is_empty() && from < spans.len() {
                let end = spans.len().min(from.saturating_add(BATCH));
                gate.keep_lasting::<false>(&spans[from..end], min, &mut threads.batch);
                from = end;
            }
            self.next = from;
            return (!threads.batch.is_empty()).then_some(Kept::Gathered);
        }
        // Through a gate: the next run of spans it keeps, lent where they are (each span
        // is put to the gate once, in order).
        let mut at = from;
        while at < spans.len() && !gate.keep_cut(&spans[at]) {
            at += 1;
        }
        let first = at;
        let end = spans.len().min(first.saturating_add(BATCH));
        at = end.min(at + 1); // past the first kept, if any
        while at < end {
            if !gate.keep_cut(&spans[at]) {
                self.next = at + 1;
                return spans.get(first..at).map(Kept::Lent);
            }
            at += 1;
        }
        self.next = at;
        spans.get(first..at).filter(|run| !run.is_empty()).map(Kept::Lent)
    }

    /// Decodes the next batch of a ring placed in start order into `threads.batch`, through no
    /// gate; `None` past its last span.
    fn decode_next(&mut self) -> Option<()> {
        let threads = &mut *self.threads;
        let order = &threads.buffers.order;
        let from = self.next;
        let to = order.len().min(from.saturating_add(BATCH));
        if from >= to {
            return None;
        }
        self.next = to;
        let tl = threads.timeline;
        let t = tl.trace.threads.get(self.thread)?;
        let out = &mut threads.batch;
        out.clear();
        let (last_key, lost_by_depth) = (&mut self.last_key, t.lost_by_depth.as_slice());
        threads.found += t.with_spans(DecodeBatch { tl, order, from, to, out, last_key, lost_by_depth });
        Some(())
    }

    /// Appends all the remaining spans to `into`: decoded straight into it where nothing filters
    /// or cuts them (no copy through a batch), through a gate batch by batch (the spans it keeps
    /// copied once), else as [`next_batch`](Self::next_batch) lends them; stopping (`None`) once
    /// it holds more than `cap` (checked after each batch: a filter's spans are not counted before).
    /// `NEAR`: the gate counts the spans it leaves out near its `-t` ([`Gate::counting`]). Each
    /// batch's spans go to one of `into`'s chunks.
    pub(super) fn append_to<const NEAR: bool>(mut self, into: &mut Chunks<'_>, cap: usize) -> Option<()> {
        let plain = self.threads.gate.is_none() && self.threads.timeline.window.is_none();
        if plain && matches!(self.source, Source::Placed) {
            let threads = &mut *self.threads;
            let order = &threads.buffers.order;
            let (from, to) = (self.next, order.len());
            self.next = to;
            let tl = threads.timeline;
            if let Some(t) = tl.trace.threads.get(self.thread).filter(|_| from < to) {
                threads.found += t.with_spans(DecodeBatch {
                    tl,
                    order,
                    from,
                    to,
                    out: into.room(to - from),
                    last_key: &mut self.last_key,
                    lost_by_depth: &t.lost_by_depth,
                });
            }
            return (into.len() <= cap).then_some(());
        }
        if self.threads.timeline.window.is_none() && matches!(self.source, Source::Placed) {
            // Through a gate: each batch copied once, the spans it keeps.
            while self.decode_next().is_some() {
                let threads = &mut *self.threads;
                let Some(gate) = threads.gate.as_mut() else { break };
                if let Some(min) = gate.duration_alone() {
                    // `-t` alone: each span written where the next kept one goes (no branch on
                    // each span's duration).
                    gate.keep_lasting::<NEAR>(&threads.batch, min, into.room(threads.batch.len()));
                    if into.len() > cap {
                        return None;
                    }
                    continue;
                }
                into.room(threads.batch.len()).extend(
                    threads.batch.iter().filter(|s| if NEAR { gate.keep_cut_counting(s) } else { gate.keep_cut(s) }),
                );
                if into.len() > cap {
                    return None;
                }
            }
            return Some(());
        }
        while let Some(batch) = self.next_batch() {
            into.room(batch.len()).extend_from_slice(batch);
            if into.len() > cap {
                return None;
            }
        }
        Some(())
    }

    /// All the remaining spans, in one vector (for tests and small rings).
    pub fn to_vec(mut self) -> Vec<SpanNs> {
        let mut all = Vec::new();
        while let Some(batch) = self.next_batch() {
            all.extend_from_slice(batch);
        }
        all
    }
}

/// Buffers reused from one thread to the next by [`place_nested`].
#[derive(Default)]
struct StartOrderBuffers {
    /// The spans around the one being placed, outermost first: (enter
    /// ticks, position, depth tag).
    path: Vec<(u64, u32, u8)>,
    /// Per place in start order: the span's position.
    order: Vec<u32>,
}

/// Start order, longer first on ties, then shallower first (a parent and a
/// child that a coarse counter made equal): how a ring that does not nest is
/// sorted.
fn start_order(s: &SpanNs) -> (i64, std::cmp::Reverse<i64>, u8) {
    (s.enter_ns, std::cmp::Reverse(s.exit_ns), s.depth_tag())
}

/// Finds the start order of a ring known to nest, as positions in
/// `buffers.order`, without reading the records out of order ([`DecodeBatch`]
/// then decodes them in that order, a batch at a time).
///
/// A ring is its thread's call tree in end order: every span follows the
/// spans inside it. Read backwards, it is the tree in pre-order, children
/// right to left, so one backward pass over the records with a stack of the
/// spans around the current one (as deep as the tree, not as wide) finds
/// every span's depth and, when its subtree is complete — when the first
/// span outside it is read, or the ring ends — its place in start order.
/// The spans that start after a span are its descendants and the spans
/// that lie wholly after it; those that end after it are its ancestors and,
/// again, those wholly after it. So when the pass pops a span of depth `d`
/// after reading `seen` spans (it, its descendants and everything read
/// before it), `seen - 1 - d` spans start after it: its place is
/// `spans - seen + d`.
///
/// Then only the decoding reads records out of order, and those reads are
/// independent (the CPU overlaps their misses, and they are prefetched);
/// spans are written front to back. (Placing each span straight into a
/// buffer of them would scatter 32-byte stores over all of it; see
/// docs/PERFORMANCE.md.)
fn place_nested(t: &ThreadTrace<'_>, buffers: &mut StartOrderBuffers) -> Anomalies {
    const NONE: u32 = u32::MAX;
    let StartOrderBuffers { path, order } = buffers;
    // Positions fit u32 (checked by the caller), and so does the span count.
    let spans = t.span_count() as usize;
    order.clear();
    order.resize(spans, NONE);
    path.clear();
    let mut found = Anomalies::default();
    let mut seen = 0usize;
    // The span on top of `path` is complete: it goes to its place.
    let mut place = |path: &mut Vec<(u64, u32, u8)>, seen: usize| {
        if let Some((_, position, _)) = path.pop()
            && let Some(slot) = (spans + path.len()).checked_sub(seen).and_then(|p| order.get_mut(p))
        {
            *slot = position;
        }
    };
    t.span_starts_rev(|i, enter, depth| {
        // The spans around that this one is not inside (it ended before they
        // started, by depth where both state it) are complete: the rule of
        // `walk::outside` newest first, in ticks.
        while let Some(&(around_enter, _, around_depth)) = path.last() {
            if deeper(around_depth, depth).unwrap_or(enter >= around_enter) {
                break;
            }
            place(path, seen);
        }
        if path.len() >= MAX_DEPTH {
            found.too_deep += 1;
        }
        path.push((enter, i as u32, depth));
        seen += 1;
    });
    while !path.is_empty() {
        place(path, seen);
    }
    found
}

/// How many spans ahead [`DecodeBatch`] finds the records it will read and
/// asks for them: far enough for a cache miss to complete
/// (docs/PERFORMANCE.md). A power of two (a ring of them is indexed by it).
const PREFETCH_AHEAD: usize = 32;

/// Decodes the spans at places `from..to` of `order` into `out`.
struct DecodeBatch<'x, 'a> {
    tl: &'x Timeline<'a>,
    order: &'x [u32],
    from: usize,
    to: usize,
    out: &'x mut Vec<SpanNs>,
    last_key: &'x mut Option<(u64, u32)>,
    /// [`ThreadTrace::lost_by_depth`]: the spans marked as having begun before the oldest kept one ended.
    lost_by_depth: &'x [u32],
}

impl RingVisitor for DecodeBatch<'_, '_> {
    type Out = Anomalies;
    fn run<S: RingSpans>(self, t: &S) -> Anomalies {
        // A ring that overwrote nothing (or states no depths) marks no span by its order:
        // a loop without the check.
        if self.lost_by_depth.is_empty() { self.decode::<S, false>(t) } else { self.decode::<S, true>(t) }
    }
}

impl DecodeBatch<'_, '_> {
    /// [`run`](RingVisitor::run), marking the spans `lost_by_depth` names where `MARK`. Once per
    /// batch. Inlined into `next_batch`, its loop compiled to more instructions per span
    /// (docs/PERFORMANCE.md).
    #[inline(never)]
    fn decode<S: RingSpans, const MARK: bool>(self, t: &S) -> Anomalies {
        let DecodeBatch { tl, order, from, to, out, last_key, lost_by_depth } = self;
        let mut found = Anomalies::default();
        let mut last = *last_key;
        // Records are read out of file order here: each is found (its chunk, its bytes) and
        // asked for `PREFETCH_AHEAD` spans early, and read from where it was found.
        let mut ahead = [S::Loc::default(); PREFETCH_AHEAD];
        let places = order.get(from..to).unwrap_or_default();
        for (slot, &i) in ahead.iter_mut().zip(places) {
            *slot = t.locate(i as usize);
        }
        let later = order.get(from + PREFETCH_AHEAD..).unwrap_or_default();
        for (k, &i) in places.iter().enumerate() {
            let slot = &mut ahead[k % PREFETCH_AHEAD];
            let loc = *slot;
            if let Some(&next) = later.get(k) {
                *slot = t.locate(next as usize);
            }
            let Some(r) = t.span_located(i as usize, loc) else { continue };
            let (enter_ns, exit_ns) = tl.span_ns(r.enter, r.exit, &mut found);
            let key_index = tl.key_index(r.key, &mut last);
            let mut span = SpanNs::at_depth(enter_ns, exit_ns, key_index, r.arg, r.ending(), r.depth);
            if MARK && began_before_oldest_end(lost_by_depth, i as usize, r.depth) {
                span.mark_began_before_oldest_end();
            }
            out.push(span);
        }
        *last_key = last;
        found
    }
}

/// Decodes a timeline's threads one at a time into buffers it reuses, so
/// memory holds, for a ring that nests, a `u32` per span (its start order)
/// and a batch of spans; for one that does not, all its spans, to sort them.
/// `while let Some(mut t) = threads.next() { while let Some(batch) = t.next_batch() { … } }`.
pub struct Threads<'t, 'a> {
    timeline: &'t Timeline<'a>,
    next: usize,
    buffers: StartOrderBuffers,
    batch: Vec<SpanNs>,
    sorted: Vec<SpanNs>,
    /// A batch cut to the timeline's window.
    clipped: Vec<SpanNs>,
    /// What the spans decoded so far had wrong with them.
    found: Anomalies,
    /// The timeline's filter, if it has one.
    gate: Option<Gate<'t>>,
    /// Where the spans come from as another thread decodes them ([`streamed`](Self::streamed)).
    stream: Option<std::sync::mpsc::Receiver<Streamed>>,
    /// The chunk of spans last received from there.
    received: Option<Chunk>,
}

impl<'t, 'a> Threads<'t, 'a> {
    /// The next thread's spans; what was wrong with them is added to
    /// [`anomalies`](Self::anomalies) as they are decoded.
    #[allow(clippy::should_implement_trait)] // lends its buffers: not an `Iterator`
    pub fn next(&mut self) -> Option<ThreadSpans<'_, 't, 'a>> {
        // Threads the filter leaves out are skipped whole.
        while let Some(spans) = self.timeline.thread_left_out(self.next) {
            self.found.filtered.thread += spans;
            self.next += 1;
        }
        let index = self.next;
        self.next += 1;
        self.decode(index)
    }

    /// Thread `index`'s spans, as [`next`](Self::next) gives them.
    pub(super) fn decode(&mut self, index: usize) -> Option<ThreadSpans<'_, 't, 'a>> {
        let tl = self.timeline;
        let t = tl.trace.threads.get(index)?;
        if let Some(gate) = self.gate.as_mut() {
            gate.reset();
        }
        if self.stream.is_some() {
            return Some(ThreadSpans {
                thread: index,
                threads: self,
                source: Source::Streamed,
                next: 0,
                last_key: None,
            });
        }
        // Decoded before: what decoding found wrong is the whole thread's, said at its start.
        if let Some(decoded) = tl.decoded.as_deref()
            && let Some((chunks, found)) = decoded.thread(index)
        {
            let (spans, rest) =
                chunks.split_first().map_or((&[][..], &[][..]), |(first, rest)| (first.as_slice(), rest));
            self.found += found;
            return Some(ThreadSpans {
                thread: index,
                threads: self,
                source: Source::Kept(spans, rest, decoded.at_least_ns()),
                next: 0,
                last_key: None,
            });
        }
        let placed = t.nested && u32::try_from(t.positions()).is_ok();
        if placed {
            self.found += place_nested(t, &mut self.buffers);
        } else {
            let spans = &mut self.sorted;
            spans.clear();
            // The count comes from the ring's bytes in the mapped file: no larger than the file.
            spans.reserve(usize::try_from(t.span_count()).unwrap_or(0));
            let mut found = Anomalies::default();
            let mut last: Option<(u64, u32)> = None;
            t.spans(|r| {
                let (enter_ns, exit_ns) = tl.span_ns(r.enter, r.exit, &mut found);
                let key_index = tl.key_index(r.key, &mut last);
                spans.push(SpanNs::at_depth(enter_ns, exit_ns, key_index, r.arg, r.ending(), r.depth));
            });
            // Damaged or out of order: spans that overlap without nesting are sorted, then cut.
            spans.sort_unstable_by_key(start_order);
            let (clamped, too_deep) = clamp_into_parents(spans);
            self.found += Anomalies { clamped, too_deep, ..found };
            if let Some(gate) = self.gate.as_mut() {
                spans.retain(|s| gate.keep_cut(s));
            }
        }
        let source = if placed { Source::Placed } else { Source::Sorted };
        Some(ThreadSpans { thread: index, threads: self, source, next: 0, last_key: None })
    }

    /// As [`Timeline::threads`], without the timeline's filter: every span of a thread.
    pub(super) fn ungated(timeline: &'t Timeline<'a>) -> Self {
        Threads { gate: None, ..timeline.threads() }
    }

    /// As [`Timeline::threads`], through `gate` instead of the timeline's filter.
    pub(super) fn gated(timeline: &'t Timeline<'a>, gate: Gate<'t>) -> Self {
        Threads { gate: Some(gate), ..timeline.threads() }
    }

    /// As [`Timeline::threads`] for a timeline without a filter or window, its spans those another
    /// thread decodes and sends on `stream` as this walks them (see [`Tap`]): each thread's
    /// spans lasting at least what that decode keeps.
    pub(crate) fn streamed(timeline: &'t Timeline<'a>, stream: std::sync::mpsc::Receiver<Streamed>) -> Self {
        debug_assert!(timeline.selection.is_none() && timeline.window.is_none());
        Threads { gate: None, stream: Some(stream), ..timeline.threads() }
    }

    /// The spans the gate left out that last at least its `near_ns`, so far.
    pub(super) fn near(&self) -> u64 {
        self.gate.as_ref().map_or(0, |gate| gate.near)
    }

    /// What was found wrong since the last call, or since the start, and what the gate kept
    /// and left out in that time.
    pub(super) fn take_anomalies(&mut self) -> Anomalies {
        let mut found = std::mem::take(&mut self.found);
        if let Some(gate) = self.gate.as_mut() {
            found.filtered += std::mem::take(&mut gate.counts);
        }
        found
    }

    /// What the spans decoded so far had wrong with them: after the last
    /// thread's last batch, everything the dump's spans had wrong.
    pub fn anomalies(&self) -> Anomalies {
        let mut found = self.found;
        if let Some(gate) = &self.gate {
            found.filtered += gate.counts;
        }
        found
    }
}

impl<'a> Timeline<'a> {
    /// Every thread's spans in start order, decoded one thread at a time
    /// (see [`Threads`]), with what was wrong with them
    /// ([`Threads::anomalies`]).
    pub fn threads(&self) -> Threads<'_, 'a> {
        Threads {
            timeline: self,
            next: 0,
            buffers: StartOrderBuffers::default(),
            batch: Vec::with_capacity(BATCH),
            sorted: Vec::new(),
            clipped: Vec::new(),
            found: Anomalies::default(),
            gate: self.selection.as_ref().map(Gate::new),
            stream: None,
            received: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_dumps::{decoded, nested, span};
    use super::*;

    #[test]
    fn nested_spans_in_end_order_come_out_in_start_order() {
        let times = |v: &[SpanNs]| v.iter().map(|s| (s.enter_ns, s.exit_ns)).collect::<Vec<_>>();
        // Small rings, and one decoded in several batches.
        for (seed, n) in (1..30).map(|seed| (seed, 2_000)).chain([(31, 3 * BATCH + 7)]) {
            let spans = nested(seed, n, false);
            let mut expected = spans.clone();
            expected.sort_by_key(start_order);
            assert_eq!(times(&decoded(&spans)), times(&expected), "seed {seed}");
        }
        // With ties, spans that touch keep the order they were recorded in: still by start, the same spans.
        for seed in 1..30 {
            let spans = nested(seed, 2_000, true);
            let out = decoded(&spans);
            assert!(out.windows(2).all(|w| w[0].enter_ns <= w[1].enter_ns), "seed {seed}");
            let (mut a, mut b) = (times(&out), times(&spans));
            a.sort_unstable();
            b.sort_unstable();
            assert_eq!(a, b, "seed {seed}");
        }
    }

    #[test]
    fn overlapping_spans_are_sorted_and_then_cut_into_their_parent() {
        // b starts inside a and ends after it; c lies inside both.
        let mut spans = vec![span(20, 25), span(0, 30), span(10, 40)];
        spans.sort_unstable_by_key(start_order);
        assert_eq!(spans, vec![span(0, 30), span(10, 40), span(20, 25)]);
        assert_eq!(clamp_into_parents(&mut spans), (1, 0));
        assert_eq!((spans[1].enter_ns, spans[1].exit_ns), (10, 30));
        assert_eq!(spans.iter().map(SpanNs::clamped).collect::<Vec<_>>(), [false, true, false]);
    }
}
