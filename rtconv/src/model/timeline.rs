//! A trace ready to render: the decoded dump with its names and timebase,
//! spans in nanoseconds, and the span type every walk hands out.

use super::decoded::Decoded;
use super::filter::{Cut, Filter, Filtered, Selection};
use super::names::Names;
use super::timebase::Timebase;
use super::trace::Trace;

/// Nesting deeper than this is reported: viewers (Perfetto among them) stop drawing or slow down.
pub const MAX_DEPTH: usize = 512;

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
    /// Its depth tag: depth + 1 when the ring states it, 0 when not (see [`SpanNs::encloses`]).
    depth: u8,
}

const HAS_ARG: u8 = 1;
const OPEN: u8 = 2;
const UNWOUND: u8 = 4;
const CLAMPED: u8 = 8;
const CLIPPED_START: u8 = 16;
const CLIPPED_END: u8 = 32;
const BEGAN_BEFORE_OLDEST_END: u8 = 64;

/// How a span's time ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    /// Its exit was recorded.
    Returned,
    /// It was still running at dump time: it ends at the dump.
    Open,
    /// It was left without its exit hook (a `longjmp`, an exception through C
    /// frames): it ends where the recorder noticed.
    Unwound,
}

impl SpanNs {
    /// A span of key `key_index` from `enter_ns` to `exit_ns`.
    pub fn new(enter_ns: i64, exit_ns: i64, key_index: u32, arg: Option<u64>, ending: Ending) -> Self {
        Self::at_depth(enter_ns, exit_ns, key_index, arg, ending, 0)
    }

    /// As [`new`](Self::new), with its depth tag: depth + 1, or 0 if not known.
    pub fn at_depth(enter_ns: i64, exit_ns: i64, key_index: u32, arg: Option<u64>, ending: Ending, depth: u8) -> Self {
        let ending = match ending {
            Ending::Returned => 0,
            Ending::Open => OPEN,
            Ending::Unwound => UNWOUND,
        };
        let flags = if arg.is_some() { HAS_ARG } else { 0 } | ending;
        SpanNs { enter_ns, exit_ns, arg: arg.unwrap_or(0), key_index, flags, depth }
    }

    /// Whether `next`, which comes after this span in start order while this
    /// one is the innermost still open, lies inside it. By depth where both
    /// spans' rings state it (ties of timestamps from a coarse counter then
    /// cannot reorder the tree), else by time: it starts before this one ends.
    /// Every renderer nests spans by this rule.
    #[inline(always)]
    pub fn encloses(&self, next: &SpanNs) -> bool {
        inside(self.depth, self.exit_ns, next.depth, next.enter_ns)
    }

    /// How long it lasts, ns, as `-t` reads it (0 for an exit before its enter).
    #[inline(always)]
    pub fn duration_ns(&self) -> u64 {
        self.exit_ns.saturating_sub(self.enter_ns).max(0) as u64
    }

    /// The depth tag (depth + 1, or 0 if not known).
    #[inline(always)]
    pub fn depth_tag(&self) -> u8 {
        self.depth
    }

    /// Left without its exit hook; `exit_ns` is where the recorder noticed.
    pub fn unwound(&self) -> bool {
        self.flags & UNWOUND != 0
    }

    /// Carries nothing a renderer marks: no argument, not open, unwound or clipped.
    #[inline(always)]
    pub fn plain(&self) -> bool {
        self.flags & (HAS_ARG | OPEN | UNWOUND | CLIPPED_START | CLIPPED_END) == 0
    }

    /// [`plain`](Self::plain), and not marked as [`began_before_oldest_end`](Self::began_before_oldest_end):
    /// what most spans are, checked at once.
    #[inline(always)]
    pub(crate) fn bare(&self) -> bool {
        self.flags & (HAS_ARG | OPEN | UNWOUND | CLIPPED_START | CLIPPED_END | BEGAN_BEFORE_OLDEST_END) == 0
    }

    /// The integer argument recorded with the span.
    pub fn arg(&self) -> Option<u64> {
        (self.flags & HAS_ARG != 0).then_some(self.arg)
    }

    /// Still running at dump time; `exit_ns` is the dump time.
    pub fn open(&self) -> bool {
        self.flags & OPEN != 0
    }

    /// Outlived its parent in a ring whose spans did not nest, and was cut at the parent's end.
    pub fn clamped(&self) -> bool {
        self.flags & CLAMPED != 0
    }

    /// Began before the window of a part of a split output ([`Timeline::window`]): its start is the window's.
    pub fn clipped_start(&self) -> bool {
        self.flags & CLIPPED_START != 0
    }

    /// Ended after the window of a part of a split output: its end is the window's.
    pub fn clipped_end(&self) -> bool {
        self.flags & CLIPPED_END != 0
    }

    /// Where a part's window cut it, as the outputs mark it: `start`, `end` or `both` (`None`: not cut).
    #[inline(always)]
    pub fn clipped(&self) -> Option<&'static str> {
        match (self.clipped_start(), self.clipped_end()) {
            (false, false) => None,
            (true, false) => Some("start"),
            (false, true) => Some("end"),
            (true, true) => Some("both"),
        }
    }

    /// The span within `start..end` (the part of it there, flagged where cut), if it overlaps
    /// it: it ends after `start` (or starts there) and starts before `end`.
    pub(crate) fn within(mut self, (start, end): (i64, i64)) -> Option<Self> {
        if self.enter_ns >= end || (self.exit_ns <= start && self.enter_ns < start) {
            return None;
        }
        if self.enter_ns < start {
            self.enter_ns = start;
            self.flags |= CLIPPED_START;
        }
        if self.exit_ns > end {
            self.exit_ns = end;
            self.flags |= CLIPPED_END;
        }
        Some(self)
    }

    /// Began before the oldest span its ring kept ended, by the ring's order (see
    /// [`LostChildren`](super::LostChildren)): it may have lost children.
    pub(crate) fn began_before_oldest_end(&self) -> bool {
        self.flags & BEGAN_BEFORE_OLDEST_END != 0
    }

    /// Marks it as [`began_before_oldest_end`](Self::began_before_oldest_end).
    pub(crate) fn mark_began_before_oldest_end(&mut self) {
        self.flags |= BEGAN_BEFORE_OLDEST_END;
    }

    /// Cuts the span at `exit_ns`, its parent's end (see [`clamped`](Self::clamped)).
    pub(crate) fn clamp_to(&mut self, exit_ns: i64) {
        self.exit_ns = exit_ns;
        self.flags |= CLAMPED;
    }
}

/// Whether a span with depth tag `inner` lies deeper than one with tag
/// `outer`, where both tags state a depth; `None` where either does not (the
/// caller then compares times). The one rule every nesting decision starts from.
#[inline(always)]
pub(crate) fn deeper(outer: u8, inner: u8) -> Option<bool> {
    (outer != 0 && inner != 0).then_some(inner > outer)
}

/// Whether a span with depth tag `next_depth` starting at `next_enter`,
/// coming after an open span (tag `open_depth`, ending at `open_end`) in start
/// order, lies inside it: see [`SpanNs::encloses`].
#[inline(always)]
pub(crate) fn inside(open_depth: u8, open_end: i64, next_depth: u8, next_enter: i64) -> bool {
    deeper(open_depth, next_depth).unwrap_or(next_enter < open_end)
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
    /// What the timeline's filter kept and left out (all kept, uncounted, without one).
    pub filtered: Filtered,
}

impl std::ops::AddAssign for Anomalies {
    fn add_assign(&mut self, other: Anomalies) {
        self.backwards += other.backwards;
        self.clamped += other.clamped;
        self.too_deep += other.too_deep;
        self.filtered += other.filtered;
    }
}

/// What the recorder adds to the spans it measures, in ns, from the dump's
/// calibration: what `--calibrated` figures take out (see [`Timeline::walk`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecorderCost {
    /// What an empty span measures of itself: one counter read's worth.
    pub read_ns: u64,
    /// What one nested span adds to the measured duration of the span around it.
    pub span_ns: u64,
}

/// A trace ready to render. Threads are decoded one at a time and in
/// batches ([`threads`](Self::threads)), so memory holds a few bytes per
/// record of one ring at most — unless a conversion that walks the spans
/// twice (a budget, a split) kept them all decoded (32 bytes a span, up to
/// a limit).
pub struct Timeline<'a> {
    /// The dump.
    pub trace: &'a Trace<'a>,
    /// Names of its keys.
    pub names: &'a Names,
    /// Tick to time conversion.
    pub timebase: Timebase,
    /// Every distinct key, sorted; spans refer to them by index.
    pub keys: &'a [u64],
    /// Earliest span start, monotonic ns (0 if there are no spans).
    pub origin_ns: i64,
    /// The spans every traversal keeps, if filtered ([`Timeline::filtered`]).
    pub selection: Option<Selection>,
    /// What an output budget left out, if one did (its threshold is in the selection's `-t`):
    /// for the output's metadata.
    pub cut: Option<Cut>,
    /// A part of a split output: only the spans overlapping `start..end` (monotonic ns), each
    /// cut to it ([`SpanNs::clipped_start`], [`SpanNs::clipped_end`]), in every start-order
    /// traversal ([`threads`](Self::threads)).
    pub window: Option<(i64, i64)>,
    /// Key to index, for most keys in one probe ([`KeyTable`]).
    pub(super) key_table: KeyTable,
    /// Its spans decoded before, handed out instead of decoding the rings again.
    pub(crate) decoded: Option<std::sync::Arc<Decoded>>,
}

/// Key to key index in one probe for most keys: a direct-mapped table of
/// (key, index), four slots per key, filled once; a key whose slot another
/// took goes to the slot beside it, if free (in the same cache line; looked
/// at only after a miss), and otherwise is found by binary search. A trace
/// of an interpreter calls hundreds of functions in turn, so the last key
/// asked rarely helps, and a binary search per span was a large part of
/// `stats`' time (docs/PERFORMANCE.md, "the figures behind the code").
#[derive(Clone, Debug, Default)]
pub(super) struct KeyTable {
    slots: Vec<(u64, u32)>,
    shift: u32,
}

impl KeyTable {
    fn new(keys: &[u64]) -> Self {
        let len = (keys.len() * 4).clamp(16, 1 << 20).next_power_of_two();
        let shift = 64 - len.trailing_zeros();
        // Empty slots hold a key that never maps to them (u64::MAX maps to its own slot,
        // which it fills first if it is a key).
        let mut slots = vec![(u64::MAX, u32::MAX); len];
        for (i, &key) in keys.iter().enumerate().take(u32::MAX as usize) {
            let home = Self::slot(key, shift);
            // `len` is a power of two of 16 and up: `home ^ 1` is in the table too.
            if let Some(slot) = [home, home ^ 1].into_iter().find(|&s| slots[s].1 == u32::MAX) {
                slots[slot] = (key, i as u32);
            }
        }
        KeyTable { slots, shift }
    }

    #[inline(always)]
    fn slot(key: u64, shift: u32) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> shift) as usize
    }

    #[inline(always)]
    fn get(&self, key: u64) -> Option<u32> {
        self.in_slot(Self::slot(key, self.shift), key)
    }

    /// [`get`](Self::get) in the slot beside the key's own, where a key
    /// whose own was taken goes.
    fn get_beside(&self, key: u64) -> Option<u32> {
        self.in_slot(Self::slot(key, self.shift) ^ 1, key)
    }

    /// `key`'s index if slot `slot` holds it.
    #[inline(always)]
    fn in_slot(&self, slot: usize, key: u64) -> Option<u32> {
        let &(k, i) = self.slots.get(slot)?;
        (k == key && i != u32::MAX).then_some(i)
    }
}

impl<'a> Timeline<'a> {
    /// A timeline over `trace`; nothing is decoded yet.
    pub fn new(trace: &'a Trace<'a>, names: &'a Names, timebase: Timebase) -> Self {
        let first = trace.threads.iter().filter_map(|t| t.first_enter).min();
        // Nanoseconds since the monotonic clock's epoch fit i64 for 292 years.
        let origin_ns = first.map_or(0, |ticks| timebase.ns_i64(ticks));
        let key_table = KeyTable::new(&trace.keys);
        Timeline {
            trace,
            names,
            timebase,
            keys: &trace.keys,
            origin_ns,
            selection: None,
            cut: None,
            window: None,
            key_table,
            decoded: None,
        }
    }

    /// This timeline with only the spans `filter` keeps, in every traversal
    /// (see [`Filter`]); what it left out is counted in their [`Anomalies`].
    pub fn filtered(mut self, filter: &Filter) -> Self {
        self.selection = (!filter.is_none()).then(|| Selection::new(filter, &self));
        self
    }

    /// The spans of thread `index` when the filter leaves the whole thread
    /// out (`None` when it is kept, or there is no filter).
    pub(super) fn thread_left_out(&self, index: usize) -> Option<u64> {
        let selection = self.selection.as_ref()?;
        let t = self.trace.threads.get(index)?;
        (!selection.thread(index)).then(|| t.span_count())
    }

    /// A span's ticks in ns; an exit before the enter (counted in `found`) becomes a zero-length span.
    #[inline]
    pub(super) fn span_ns(&self, enter: u64, exit: u64, found: &mut Anomalies) -> (i64, i64) {
        let enter_ns = self.timebase.ns_i64(enter);
        let mut exit_ns = self.timebase.ns_i64(exit);
        if exit_ns < enter_ns {
            found.backwards += 1;
            exit_ns = enter_ns;
        }
        (enter_ns, exit_ns)
    }

    /// The index of `key` in [`keys`](Self::keys), remembering the last one asked.
    #[inline(always)]
    pub(super) fn key_index(&self, key: u64, last: &mut Option<(u64, u32)>) -> u32 {
        match *last {
            Some((k, index)) if k == key => index,
            _ => {
                let index = match self.key_table.get(key) {
                    Some(index) => index,
                    None => self.key_index_searched(key),
                };
                *last = Some((key, index));
                index
            }
        }
    }

    /// The index of `key` whose own slot another key took: in the slot
    /// beside it, or by binary search.
    #[cold]
    #[inline(never)]
    fn key_index_searched(&self, key: u64) -> u32 {
        if let Some(index) = self.key_table.get_beside(key) {
            return index;
        }
        // Every key is in `keys`, which has fewer than 2^32 entries (one per record at most).
        self.keys.binary_search(&key).unwrap_or_default() as u32
    }

    /// The recorder's cost per span, from the dump's calibration for the
    /// Fast clock (the default), or `None` if the dump has none.
    pub fn recorder_cost(&self) -> Option<RecorderCost> {
        let c = self.trace.calibration.iter().find(|c| c.mode == ringtrace_format::ClockMode::Fast)?;
        let ns = |ticks: u64| (self.timebase.ns(ticks) - self.timebase.ns(0)).max(0) as u64;
        Some(RecorderCost { read_ns: ns(c.read_cost), span_ns: ns(c.span_cost) })
    }

    /// The name of the key at `key_index` in [`keys`](Self::keys), or `??`
    /// (`[deeper]` for [`DEEPER`](super::DEEPER)).
    pub fn name(&self, key_index: usize) -> &str {
        if key_index == super::DEEPER as usize {
            return "[deeper]";
        }
        self.keys.get(key_index).and_then(|&k| self.names.get(k)).map_or("??", |n| n.name.as_str())
    }

    /// The scopes of a summary: one per thread (its name, or `thread TID`)
    /// with `per_thread`, else one named `all threads` (none without rings).
    /// A span of thread `t` belongs to scope `t`, or to scope 0.
    pub fn scope_names(&self, per_thread: bool) -> Vec<String> {
        let threads = &self.trace.threads;
        if per_thread {
            threads
                .iter()
                .map(|t| if t.name.is_empty() { format!("thread {}", t.tid) } else { t.name.clone() })
                .collect()
        } else {
            threads.first().map(|_| "all threads".to_string()).into_iter().collect()
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

    #[test]
    fn the_key_table_answers_only_with_the_right_index() {
        let mut rng = super::super::test_dumps::XorShift(0x853C_49E6_748F_EA9B);
        for n in [0, 1, 2, 7, 100, 482, 5_000] {
            // Random keys, and keys that all share one home slot (every answer there is a collision).
            let mut random: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            let shift = KeyTable::new(&random).shift;
            let mut crowded: Vec<u64> =
                (0..u64::MAX).filter(|&k| KeyTable::slot(k, shift) == 3).take(n.min(50)).collect();
            for keys in [&mut random, &mut crowded] {
                keys.sort_unstable();
                keys.dedup();
                let table = KeyTable::new(keys);
                let mut answered = 0;
                for (i, &key) in keys.iter().enumerate() {
                    for found in [table.get(key), table.get_beside(key)].into_iter().flatten() {
                        assert_eq!(found, i as u32, "key {key:#x}");
                        answered += 1;
                    }
                }
                // Two slots for keys sharing one home; one each, mostly, for random keys.
                assert!(answered >= keys.len().min(2), "{answered} of {} keys in the table", keys.len());
                assert_eq!(table.get(u64::MAX - 1), keys.binary_search(&(u64::MAX - 1)).ok().map(|i| i as u32));
            }
        }
    }
}
