//! The decoded model every renderer draws from: spans in nanoseconds, one
//! thread at a time, parents before children.

use std::cell::Cell;

use crate::load::{SpanAt, Trace, WithSpans};
use crate::symbolize::Symbols;
use crate::timebase::Timebase;

/// Nesting deeper than this is reported: viewers (Perfetto among them) stop drawing or slow down.
pub const MAX_DEPTH: usize = 512;

/// Cuts every span that outlives its parent at the parent's end, in a
/// thread's spans sorted by (start, longer first). Returns how many were cut
/// and how many lie deeper than [`MAX_DEPTH`].
fn clamp_into_parents(spans: &mut [SpanNs]) -> (u64, u64) {
    let (mut cut, mut deep) = (0, 0);
    let mut ends: Vec<i64> = Vec::new();
    for s in spans.iter_mut() {
        while ends.last().is_some_and(|&end| end <= s.enter_ns) {
            ends.pop();
        }
        if let Some(&parent_end) = ends.last()
            && s.exit_ns > parent_end
        {
            s.exit_ns = parent_end;
            cut += 1;
        }
        ends.push(s.exit_ns);
        if ends.len() > MAX_DEPTH {
            deep += 1;
        }
    }
    (cut, deep)
}

/// One span in monotonic nanoseconds (32 bytes: a ring's worth is held at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanNs {
    /// Start, monotonic ns.
    pub enter_ns: i64,
    /// End, monotonic ns; never before `enter_ns`.
    pub exit_ns: i64,
    arg: u64,
    /// The span's key as an index into [`Timeline::keys`].
    pub key_index: u32,
    flags: u8,
}

const HAS_ARG: u8 = 1;
const OPEN: u8 = 2;

impl SpanNs {
    /// A span of key `key_index` from `enter_ns` to `exit_ns`.
    pub fn new(enter_ns: i64, exit_ns: i64, key_index: u32, arg: Option<u64>, open: bool) -> Self {
        let flags = if arg.is_some() { HAS_ARG } else { 0 } | if open { OPEN } else { 0 };
        SpanNs { enter_ns, exit_ns, arg: arg.unwrap_or(0), key_index, flags }
    }

    /// The integer argument recorded with the span.
    pub fn arg(&self) -> Option<u64> {
        (self.flags & HAS_ARG != 0).then_some(self.arg)
    }

    /// Still running at dump time; `exit_ns` is the dump time.
    pub fn open(&self) -> bool {
        self.flags & OPEN != 0
    }
}

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
}

/// One thread's spans, lent by [`Threads::next`] in batches
/// ([`next_batch`](Self::next_batch)): in nanoseconds, sorted by start,
/// longer first on ties (so a parent precedes the children that start with
/// it), children cut at their parent's end.
pub struct ThreadSpans<'x, 't, 'a> {
    /// Index into `Trace::threads`.
    pub thread: usize,
    threads: &'x mut Threads<'t, 'a>,
    /// Whether the spans are decoded batch by batch in `order` (a ring that
    /// nests) or were decoded and sorted at once into `sorted`.
    placed: bool,
    /// The next place in start order.
    next: usize,
    last_key: Option<(u64, u32)>,
}

/// Spans per batch: 512 KiB, so a batch is still in the cache when it is rendered.
const BATCH: usize = 16 * 1024;

impl ThreadSpans<'_, '_, '_> {
    /// The next spans in start order, or `None` when the thread has no more.
    pub fn next_batch(&mut self) -> Option<&[SpanNs]> {
        let threads = &mut *self.threads;
        if !self.placed {
            let batch = threads.sorted.get(self.next..).filter(|rest| !rest.is_empty())?;
            self.next = threads.sorted.len();
            return Some(batch);
        }
        let order = &threads.scratch.order;
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
        let found = t.with_spans(Fill { tl, order, from, to, out, last_key: &mut self.last_key });
        tl.add_anomalies(found);
        Some(&threads.batch)
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

/// What decoding the threads found wrong with their spans.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Anomalies {
    /// Spans whose exit counter reading was before their enter reading.
    pub backwards: u64,
    /// Spans that ended after their parent and were cut at the parent's end
    /// (no track shows partial overlaps).
    pub clamped: u64,
    /// Spans nested deeper than [`MAX_DEPTH`].
    pub too_deep: u64,
}

/// A trace ready to render. Threads are decoded one at a time and in
/// batches ([`threads`](Self::threads)), so memory holds a few bytes per
/// record of one ring at most.
pub struct Timeline<'a> {
    /// The dump.
    pub trace: &'a Trace<'a>,
    /// Names of its keys.
    pub symbols: &'a Symbols,
    /// Tick to time conversion.
    pub timebase: Timebase,
    /// Every distinct key, sorted; spans refer to them by index.
    pub keys: &'a [u64],
    /// Earliest span start, monotonic ns (0 if there are no spans).
    pub origin_ns: i64,
    anomalies: Cell<Anomalies>,
}

/// Nanoseconds since the monotonic clock's epoch fit i64 for 292 years.
fn ns(timebase: &Timebase, ticks: u64) -> i64 {
    timebase.ns_i64(ticks)
}

/// Buffers reused from one thread to the next by [`place_nested`].
#[derive(Default)]
struct Scratch {
    /// Finished subtrees not yet inside a parent: (position, first span index, enter ticks).
    roots: Vec<(u32, u32, u64)>,
    /// Per position: the position of the span around it (`NONE` for a root).
    parent: Vec<u32>,
    /// Per position: the end-order index of its subtree's first span, then,
    /// once placed, its depth (`NONE` where a position holds no span).
    first: Vec<u32>,
    /// Per place in start order: the span's position.
    order: Vec<u32>,
}

/// Start order, longer first on ties: how a ring that does not nest is sorted.
fn start_order(s: &SpanNs) -> (i64, std::cmp::Reverse<i64>) {
    (s.enter_ns, std::cmp::Reverse(s.exit_ns))
}

/// Finds the start order of a ring known to nest, as positions in
/// `scratch.order`, without reading the records out of order ([`Fill`]
/// then decodes them in that order, a batch at a time).
///
/// A ring is its thread's call tree in end order: every span follows the
/// spans inside it. A span's place in start order is the number of spans
/// that start before it: those that ended before its subtree's first span
/// (that span's end-order index) plus its ancestors (its depth). Two
/// passes, each reading or writing its large arrays in sequence:
/// 1. forward over the records: each span's parent and its subtree's first
///    index, from a stack of finished subtrees;
/// 2. backward over those two arrays (parents before children): each span's
///    depth from its parent's, so its place, noted in `order`.
///
/// Then only the decoding reads records out of order, and those reads are
/// independent (the CPU overlaps their misses, and they are prefetched);
/// spans are written front to back. Placing each span straight into a
/// buffer of them scatters 32-byte stores over all of it: measured slower.
fn place_nested<S: SpanAt>(t: &S, scratch: &mut Scratch) -> Anomalies {
    const NONE: u32 = u32::MAX;
    let n = t.positions();
    let Scratch { roots, parent, first, order } = scratch;
    // Every position a span holds is written before it is read; the rest are never read.
    parent.resize(n, NONE);
    first.resize(n, NONE);
    roots.clear();
    // Positions fit u32 (checked by the caller), and so does the span count.
    let mut spans = 0u32;
    for i in 0..n {
        let Some(r) = t.span_at(i) else {
            first[i] = NONE; // not a span
            continue;
        };
        let mut subtree_first = spans;
        while let Some(&(top, top_first, enter)) = roots.last() {
            if enter < r.enter {
                break;
            }
            roots.pop();
            parent[top as usize] = i as u32;
            subtree_first = top_first;
        }
        parent[i] = NONE;
        first[i] = subtree_first;
        roots.push((i as u32, subtree_first, r.enter));
        spans += 1;
    }
    let mut found = Anomalies::default();
    order.clear();
    order.resize(spans as usize, NONE);
    for i in (0..n).rev() {
        if first[i] == NONE {
            continue; // not a span
        }
        // The parent (a later position) was placed already and left its depth in `first`.
        let depth = match parent[i] {
            NONE => 0,
            p => first[p as usize].saturating_add(1),
        };
        if let Some(place) = order.get_mut(first[i].saturating_add(depth) as usize) {
            *place = i as u32;
        }
        first[i] = depth;
        if depth as usize >= MAX_DEPTH {
            found.too_deep += 1;
        }
    }
    found
}

/// [`place_nested`] over whichever storage a ring's records are in.
struct Place<'x>(&'x mut Scratch);

impl WithSpans for Place<'_> {
    type Out = Anomalies;
    fn run<S: SpanAt>(self, spans: &S) -> Anomalies {
        place_nested(spans, self.0)
    }
}

/// How many spans ahead [`Fill`] asks for the records it will read
/// (16 to 64 measured alike on 7 M-span rings; 8 a little slower).
const PREFETCH_AHEAD: usize = 32;

/// Decodes the spans at places `from..to` of `order` into `out`.
struct Fill<'x, 'a> {
    tl: &'x Timeline<'a>,
    order: &'x [u32],
    from: usize,
    to: usize,
    out: &'x mut Vec<SpanNs>,
    last_key: &'x mut Option<(u64, u32)>,
}

impl WithSpans for Fill<'_, '_> {
    type Out = Anomalies;
    fn run<S: SpanAt>(self, t: &S) -> Anomalies {
        let Fill { tl, order, from, to, out, last_key } = self;
        let mut found = Anomalies::default();
        for (k, &i) in order.iter().enumerate().take(to).skip(from) {
            // Records are read out of file order here: ask for them early.
            if let Some(&ahead) = order.get(k + PREFETCH_AHEAD) {
                t.prefetch(ahead as usize);
            }
            let Some(r) = t.span_at(i as usize) else { continue };
            let (enter_ns, exit_ns) = tl.span_ns(r.enter, r.exit, &mut found);
            let key_index = tl.key_index(r.key, last_key);
            out.push(SpanNs::new(enter_ns, exit_ns, key_index, r.arg, r.open));
        }
        found
    }
}

/// Decodes a timeline's threads one at a time into buffers it reuses, so
/// memory holds, for a ring that nests, three `u32` per record (while its
/// start order is found and while it is decoded) and a batch of spans; for
/// one that does not, all its spans, to sort them.
/// `while let Some(mut t) = threads.next() { while let Some(batch) = t.next_batch() { … } }`.
pub struct Threads<'t, 'a> {
    timeline: &'t Timeline<'a>,
    next: usize,
    scratch: Scratch,
    batch: Vec<SpanNs>,
    sorted: Vec<SpanNs>,
}

impl<'t, 'a> Threads<'t, 'a> {
    /// The next thread's spans; what was wrong with them is added to
    /// [`Timeline::anomalies`] as they are decoded.
    #[allow(clippy::should_implement_trait)] // lends its buffers: not an `Iterator`
    pub fn next(&mut self) -> Option<ThreadSpans<'_, 't, 'a>> {
        let index = self.next;
        self.next += 1;
        self.decode(index)
    }

    /// Thread `index`'s spans, as [`next`](Self::next) gives them.
    fn decode(&mut self, index: usize) -> Option<ThreadSpans<'_, 't, 'a>> {
        let tl = self.timeline;
        let t = tl.trace.threads.get(index)?;
        let placed = t.nested && u32::try_from(t.positions()).is_ok();
        if placed {
            tl.add_anomalies(t.with_spans(Place(&mut self.scratch)));
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
                spans.push(SpanNs::new(enter_ns, exit_ns, key_index, r.arg, r.open));
            });
            // Damaged or out of order: spans that overlap without nesting are sorted, then cut.
            spans.sort_unstable_by_key(start_order);
            let (clamped, too_deep) = clamp_into_parents(spans);
            tl.add_anomalies(Anomalies { clamped, too_deep, ..found });
        }
        Some(ThreadSpans { thread: index, threads: self, placed, next: 0, last_key: None })
    }
}

/// Whether a span that starts at `enter` lies outside the open span
/// `open_enter..open_end`, which came before it in a walk. Newest first (a
/// nested ring read backwards) a span ended no later than every open span,
/// so it is inside each one it does not start before — one starting at an
/// open span's end is its zero-length last child. In start order, a span
/// starting at or after an open span's end follows it.
#[inline(always)]
fn outside(open_enter: i64, open_end: i64, enter: i64, newest_first: bool) -> bool {
    enter < open_enter || (!newest_first && open_end <= enter)
}

/// What [`Timeline::pre_order`] feeds: every thread's spans in pre-order
/// (parents before children), children right to left when a nested ring is
/// read newest first, else left to right.
trait PreOrder {
    /// Thread `index` begins.
    fn thread(&mut self, index: usize);
    /// The next span; `NEWEST_FIRST` tells which order they come in (see [`outside`]).
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32);
    /// The thread is done: how many of its spans lay deeper than [`MAX_DEPTH`].
    fn end(&mut self) -> u64;
}

/// The call-tree walk behind [`Timeline::walk`]: each span is reported to
/// `visit` when it closes.
struct Walker<F> {
    thread: usize,
    costs: Option<(u64, u64)>,
    stack: Vec<Open>,
    path: Vec<u32>,
    /// How many spans of each key are open: a span is its key's outermost when it is the only one.
    active: Vec<u32>,
    too_deep: u64,
    visit: F,
}

struct Open {
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
}

impl<F: FnMut(&Visit<'_>)> Walker<F> {
    #[inline]
    fn close(&mut self) {
        let (Some(o), Some(&key)) = (self.stack.pop(), self.path.last()) else { return };
        // Calibrated, a span's self time loses what the recorder added to it: `read` (what
        // an empty span measures of itself) and, per child, what the child cost beyond what
        // the child measures of itself (`span - read`). Its duration is then its self time
        // plus its children's calibrated durations — so self times never exceed durations,
        // and add up to the outermost span's duration, however the costs compare.
        let (duration, self_ns) = match self.costs {
            Some((read, span)) => {
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

impl<F: FnMut(&Visit<'_>)> PreOrder for Walker<F> {
    fn thread(&mut self, index: usize) {
        self.thread = index;
    }

    /// Closes the open spans the span lies [`outside`] of, then opens it
    /// inside the innermost one left, cut at that one's end.
    #[inline]
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32) {
        while self.stack.last().is_some_and(|o| outside(o.enter, o.end, enter, NEWEST_FIRST)) {
            self.close();
        }
        let end = self.stack.last().map_or(exit, |o| exit.min(o.end));
        let own = end.saturating_sub(enter).max(0) as u64;
        self.stack.push(Open { enter, end, own, children: 0, measured_children: 0, direct: 0 });
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
struct Path<F> {
    thread: usize,
    /// The open spans, outermost first: (enter, end, key index).
    frames: Vec<(i64, i64, u32)>,
    /// Per key index: the depth of the outermost open span of that key, when
    /// one is open (otherwise any value; see [`Path::span`]).
    outer: Vec<u32>,
    too_deep: u64,
    visit: F,
}

impl<F: FnMut(&Arrival)> PreOrder for Path<F> {
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
    fn span<const NEWEST_FIRST: bool>(&mut self, enter: i64, exit: i64, key_index: u32) {
        let mut depth = self.frames.len();
        while let Some(&(open_enter, open_end, _)) = self.frames.get(depth.wrapping_sub(1)) {
            if !outside(open_enter, open_end, enter, NEWEST_FIRST) {
                break;
            }
            depth -= 1;
        }
        self.frames.truncate(depth);
        let (end, parent) = match self.frames.last() {
            Some(&(_, open_end, key)) => (exit.min(open_end), Some(key)),
            None => (exit, None),
        };
        let Some(outer) = self.outer.get_mut(key_index as usize) else { return };
        let open_further_out = self.frames.get(*outer as usize).is_some_and(|f| f.2 == key_index);
        if !open_further_out {
            *outer = depth as u32;
        }
        self.frames.push((enter, end, key_index));
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
    pub fn arrivals(&self, visit: impl FnMut(&Arrival)) {
        let keys = self.keys.len();
        self.pre_order(&mut Path { thread: 0, frames: Vec::new(), outer: vec![u32::MAX; keys], too_deep: 0, visit });
    }

    /// Feeds every thread's spans to `p` in pre-order. A ring whose spans
    /// nest ([`ThreadTrace::nested`](crate::load::ThreadTrace::nested)) is
    /// read straight from the file, newest span first (parents before
    /// children, siblings right to left); others are decoded, sorted and
    /// clamped first. Each thread is decoded once, and its anomalies counted.
    fn pre_order(&self, p: &mut impl PreOrder) {
        let mut decoder = self.threads();
        for (index, t) in self.trace.threads.iter().enumerate() {
            p.thread(index);
            if t.nested {
                let mut found = Anomalies::default();
                let mut last: Option<(u64, u32)> = None;
                t.spans_rev(|r| {
                    let (enter_ns, exit_ns) = self.span_ns(r.enter, r.exit, &mut found);
                    let key_index = self.key_index(r.key, &mut last);
                    p.span::<true>(enter_ns, exit_ns, key_index);
                });
                found.too_deep = p.end();
                self.add_anomalies(found);
            } else if let Some(mut decoded) = decoder.decode(index) {
                while let Some(batch) = decoded.next_batch() {
                    for s in batch {
                        p.span::<false>(s.enter_ns, s.exit_ns, s.key_index);
                    }
                }
                p.end(); // too deep: counted by the decoder
            }
        }
    }

    /// A timeline over `trace`; nothing is decoded yet.
    pub fn new(trace: &'a Trace<'a>, symbols: &'a Symbols, timebase: Timebase) -> Self {
        let first = trace.threads.iter().filter_map(|t| t.first_enter).min();
        let origin_ns = first.map_or(0, |ticks| ns(&timebase, ticks));
        Timeline { trace, symbols, timebase, keys: &trace.keys, origin_ns, anomalies: Cell::default() }
    }

    /// Every thread's spans, decoded one thread at a time (see [`Threads`]).
    /// Decode each thread once: anomalies are counted as threads are decoded.
    pub fn threads(&self) -> Threads<'_, 'a> {
        Threads {
            timeline: self,
            next: 0,
            scratch: Scratch::default(),
            batch: Vec::with_capacity(BATCH),
            sorted: Vec::new(),
        }
    }

    /// What the threads decoded so far had wrong with them.
    pub fn anomalies(&self) -> Anomalies {
        self.anomalies.get()
    }

    /// Walks every thread's spans as a call tree, thread after thread, and
    /// calls `visit` once per span, when it closes (see [`Visit`]); with
    /// `costs = Some((read_ns, span_ns))` the recorder's own cost is taken
    /// out: each span's self time loses `read_ns` (what an empty span
    /// measures of itself) and `span_ns - read_ns` per child (what each
    /// child adds to it beyond what the child measures of itself), never
    /// going below zero; its duration is its self time plus its children's
    /// calibrated durations. Without clamping this is the span's duration
    /// less `read_ns` and `span_ns` per span nested in it at any depth.
    ///
    /// A ring whose spans nest ([`ThreadTrace::nested`](crate::load::ThreadTrace::nested))
    /// is walked straight from the file, newest span first (parents before
    /// children, siblings right to left), holding only the open path;
    /// others are decoded, sorted and clamped first. Each thread is decoded
    /// once, and its anomalies counted.
    pub fn walk(&self, costs: Option<(u64, u64)>, visit: impl FnMut(&Visit<'_>)) {
        let active = vec![0; self.keys.len()];
        self.pre_order(&mut Walker {
            thread: 0,
            costs,
            stack: Vec::new(),
            path: Vec::new(),
            active,
            too_deep: 0,
            visit,
        });
    }

    /// A span's ticks in ns; an exit before the enter (counted in `found`) becomes a zero-length span.
    #[inline]
    fn span_ns(&self, enter: u64, exit: u64, found: &mut Anomalies) -> (i64, i64) {
        let enter_ns = ns(&self.timebase, enter);
        let mut exit_ns = ns(&self.timebase, exit);
        if exit_ns < enter_ns {
            found.backwards += 1;
            exit_ns = enter_ns;
        }
        (enter_ns, exit_ns)
    }

    /// The index of `key` in [`keys`](Self::keys), remembering the last one asked.
    fn key_index(&self, key: u64, last: &mut Option<(u64, u32)>) -> u32 {
        match *last {
            Some((k, index)) if k == key => index,
            _ => {
                // Every key is in `keys`, which has fewer than 2^32 entries (one per record at most).
                let index = self.keys.binary_search(&key).unwrap_or_default() as u32;
                *last = Some((key, index));
                index
            }
        }
    }

    fn add_anomalies(&self, found: Anomalies) {
        let mut total = self.anomalies.get();
        total.backwards += found.backwards;
        total.clamped += found.clamped;
        total.too_deep += found.too_deep;
        self.anomalies.set(total);
    }

    /// The recorder's cost per span in ns, from the dump's calibration for
    /// the Fast clock (the default): (read, span), or `None` if the dump has none.
    pub fn recorder_costs(&self) -> Option<(u64, u64)> {
        let c = self.trace.calibration.iter().find(|c| c.mode == ringtrace_format::ClockMode::Fast)?;
        let ns = |ticks: u64| (self.timebase.ns(ticks) - self.timebase.ns(0)).max(0) as u64;
        Some((ns(c.read_cost), ns(c.span_cost)))
    }

    /// The name of the key at `key_index` in [`keys`](Self::keys), or `??`.
    pub fn name(&self, key_index: usize) -> &str {
        self.keys.get(key_index).and_then(|&k| self.symbols.get(k)).map_or("??", |n| n.name.as_str())
    }

    /// The scopes of a summary: one per thread (its name, or `thread TID`)
    /// with `per_thread`, else one named `all threads` (none without rings).
    /// A span of thread `t` belongs to scope `t`, or to scope 0.
    pub fn scope_names(&self, per_thread: bool) -> Vec<String> {
        let threads = &self.trace.threads;
        match per_thread {
            true => threads
                .iter()
                .map(|t| if t.name.is_empty() { format!("thread {}", t.tid) } else { t.name.clone() })
                .collect(),
            false => threads.first().map(|_| "all threads".to_string()).into_iter().collect(),
        }
    }

    /// Spans in the dump, over all threads.
    pub fn span_count(&self) -> u64 {
        self.trace.threads.iter().map(|t| t.span_count()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(enter_ns: i64, exit_ns: i64) -> SpanNs {
        SpanNs::new(enter_ns, exit_ns, 0, None, false)
    }

    /// A random call tree's spans in the order they ended, as a ring holds
    /// them; `ties` lets spans start or end at the same ns.
    fn nested(seed: u64, n: usize, ties: bool) -> Vec<SpanNs> {
        nested_tree(seed, n, ties).0
    }

    /// [`nested`], with each span's parent (an index into the spans).
    fn nested_tree(seed: u64, n: usize, ties: bool) -> (Vec<SpanNs>, Vec<Option<usize>>) {
        let mut x = seed | 1;
        let mut next = move |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        // Open spans: their start and the children they have so far.
        let (mut now, mut open, mut ended, mut parents) =
            (0i64, Vec::<(i64, Vec<usize>)>::new(), Vec::new(), Vec::new());
        while ended.len() < n {
            now += next(3) as i64 + i64::from(!ties);
            if open.is_empty() || (next(2) == 0 && open.len() < 40) {
                open.push((now, Vec::new()));
            } else {
                let (enter, children) = open.pop().unwrap();
                let index = ended.len();
                for child in children {
                    parents[child] = Some(index);
                }
                ended.push(span(enter, now));
                parents.push(None);
                if let Some(parent) = open.last_mut() {
                    parent.1.push(index);
                }
            }
        }
        (ended, parents)
    }

    /// `rings` (records with ticks = ns) written as a real dump, one thread
    /// each, read back, and handed to `f` as a timeline.
    fn with_dump<T>(rings: &[Vec<ringtrace_format::Record>], f: impl FnOnce(&Timeline<'_>) -> T) -> T {
        use ringtrace_format::{Anchor, ClockInfo, CounterKind, IoSink, RateSource, RingInfo, Writer};
        let mut w = Writer::new(IoSink(Vec::new()), 8).unwrap();
        let clock = ClockInfo {
            counter: CounterKind::MonotonicNs,
            counter_bits: 64,
            nominal_hz: 1_000_000_000,
            rate_source: RateSource::Exact,
        };
        w.clock(&clock, &[Anchor::default()]).unwrap();
        for (i, records) in rings.iter().enumerate() {
            let n = records.len() as u64;
            let info =
                RingInfo { tid: i as u64 + 1, capacity: n, written: n, dropped: 0, aux: 0, flags: 0, name: b"t" };
            w.ring(&info, records, &[]).unwrap();
        }
        let bytes = w.finish().unwrap().0;
        let trace = crate::load::decode("t.rtd".as_ref(), &bytes).unwrap();
        let (info, anchors) = trace.clock.as_ref().unwrap();
        let (timebase, _) = Timebase::new(info, anchors).unwrap();
        let symbols = Symbols::default();
        f(&Timeline::new(&trace, &symbols, timebase))
    }

    fn records(spans: &[SpanNs]) -> Vec<ringtrace_format::Record> {
        let record = |s: &SpanNs| ringtrace_format::Record {
            key: u64::from(s.key_index) + 1,
            enter: s.enter_ns as u64,
            exit: s.exit_ns as u64,
        };
        spans.iter().map(record).collect()
    }

    /// `spans` written as one ring of a real dump, read back, and decoded as renderers see it.
    fn decoded(spans: &[SpanNs]) -> Vec<SpanNs> {
        with_dump(&[records(spans)], |tl| {
            assert!(tl.trace.threads[0].nested);
            let mut threads = tl.threads();
            threads.next().unwrap().to_vec()
        })
    }

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
        assert_eq!(spans[1], span(10, 30));
    }
}
