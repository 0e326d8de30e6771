//! Output budgets (`--max-bytes`): the duration below which spans are left out so that a
//! timeline output stays within a size, found from the spans' durations before a byte is
//! written.
//!
//! Each timeline format has a cost model here that walks the spans as its renderer does. The
//! text formats and Chrome JSON state what every span adds to the output as a function of the
//! threshold T (a span is kept when it lasts at least T, as with `-t T`): the bytes of its own
//! events or lines, and what it changes in others' (a ftrace span is one leaf line once its
//! children are all left out). Each such amount is a *step*, present while T ≤ some duration
//! ([`Costs`]); their sum is the output's size at every T at once, and [`Costs::choose`] takes
//! the smallest T whose size fits. In Perfetto's protobuf a packet's time is a delta from the
//! packet before it, so what a span spares depends on its neighbours: there each byte of a
//! packet's time is present from the threshold past the longest span with a packet in its
//! window of time to the packet's own span's duration, and the model sums those ranges over an
//! array of thresholds, walking again where they do not tell ([`perfetto::Packets`]).
//!
//! A span never outlasts its parent (every renderer cuts a child at its parent's end), so at
//! any T the kept spans are the whole upper part of each call tree: a kept span keeps its
//! depth and callers, and what is left out counts in its caller's self time, as with `-t`.
//! Ties at the threshold are resolved by leaving out every span of the threshold's duration
//! or less when keeping them would not fit. Each model is exact, or errs high by the few
//! bytes it states (a marker's timestamp digits), so the budget always holds.
//!
//! ```
//! use rtconv::budget::Costs;
//! let mut costs = Costs::default();
//! costs.always(100); // headers
//! for (ns, bytes) in [(5_000, 60), (20, 50), (20, 50), (7, 50)] {
//!     costs.span(ns, bytes);
//! }
//! // 310 bytes in all: 260 leave out the 7 ns span; 250, both 20 ns spans as well.
//! let choice = costs.choose(260, |_| 0).unwrap();
//! assert_eq!((choice.threshold_ns, choice.left_out, choice.bytes), (Some(20), 1, 260));
//! let choice = costs.choose(250, |_| 0).unwrap();
//! assert_eq!((choice.threshold_ns, choice.left_out, choice.bytes), (Some(5_000), 3, 160));
//! ```

pub mod chrome;
mod floor;
pub mod ftrace;
pub mod perfetto;
mod plan;
pub mod systrace;

pub(crate) use floor::decode_above;
pub use floor::{Floor, Sample, floor};
pub use plan::{Layout, Plan};

use rustc_hash::FxHashMap;

use crate::model::{Cut, Filter, Timeline};

/// Durations below this many ns are counted in an array, the rest in a map.
const DENSE: u64 = 1 << 16;

/// Bytes, and spans, present while the threshold is at most one duration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Step {
    bytes: i64,
    spans: u64,
}

/// An output's size as a function of the duration threshold: bytes always written, and
/// steps, each present while the threshold is at most its duration.
#[derive(Clone, Debug)]
pub struct Costs {
    always: u64,
    dense: Vec<Step>,
    sparse: FxHashMap<u64, Step>,
    spans: u64,
    profile: Profile,
}

/// Where in the trace's time the bytes of the spans go, with every span kept (for a split by
/// size): bytes per slice of time.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// The first slice's start, monotonic ns.
    pub start: i64,
    /// Each slice's length, ns (0: no profile).
    pub width: u64,
    /// Bytes per slice.
    pub bytes: Vec<i64>,
    /// The slice the bytes added now go to (the current span's start).
    now: usize,
}

impl Profile {
    /// A profile of `slices` slices of time from `start` to `end` (ns).
    pub fn new(start: i64, end: i64, slices: usize) -> Self {
        let slices = slices.max(1);
        let span = end.saturating_sub(start).max(1) as u64;
        let width = span.div_ceil(slices as u64).max(1);
        Profile { start, width, bytes: vec![0; slices], now: 0 }
    }

    /// The bytes added from now on belong to a span starting at `ns`.
    #[inline(always)]
    pub fn at(&mut self, ns: i64) {
        if self.width == 0 {
            return; // no profile kept: nothing to place
        }
        let slice = (ns.saturating_sub(self.start).max(0) as u64) / self.width;
        self.now = (slice as usize).min(self.bytes.len().saturating_sub(1));
    }

    /// Adds `bytes` (negative: takes them away) to the slice of now.
    #[inline(always)]
    pub fn add(&mut self, bytes: i64) {
        if let Some(slice) = self.bytes.get_mut(self.now) {
            *slice += bytes;
        }
    }
}

impl Default for Costs {
    fn default() -> Self {
        Costs {
            always: 0,
            dense: vec![Step::default(); DENSE as usize],
            sparse: FxHashMap::default(),
            spans: 0,
            profile: Profile::default(),
        }
    }
}

/// What [`Costs::choose`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// Keep spans lasting at least this many ns (`None`: everything fits).
    pub threshold_ns: Option<u64>,
    /// Spans left out.
    pub left_out: u64,
    /// The output's size, as the model states it.
    pub bytes: u64,
}

impl Costs {
    /// Costs that also keep `profile`.
    pub fn profiled(profile: Profile) -> Self {
        Costs { profile, ..Costs::default() }
    }

    /// The bytes added from now on belong to a span starting at `ns` (for the profile).
    #[inline(always)]
    pub fn at(&mut self, ns: i64) {
        self.profile.at(ns);
    }

    /// The profile kept ([`profiled`](Self::profiled)).
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// Adds bytes written whatever the threshold.
    pub fn always(&mut self, bytes: usize) {
        self.always = self.always.saturating_add(bytes as u64);
    }

    /// Adds a span lasting `duration_ns` whose own events take `bytes` while it is kept.
    #[inline]
    pub fn span(&mut self, duration_ns: u64, bytes: usize) {
        // The profile takes nothing where it has no slices.
        self.add_span::<true>(duration_ns, bytes);
    }

    /// Whether the bytes are kept in time too ([`profiled`](Self::profiled) with slices): then
    /// each span's start is given first ([`at`](Self::at)).
    pub(crate) fn profiled_in_time(&self) -> bool {
        self.profile.width > 0
    }

    /// [`span`](Self::span), knowing whether the costs are [`profiled_in_time`](Self::profiled_in_time).
    #[inline(always)]
    pub(crate) fn add_span<const PROFILED: bool>(&mut self, duration_ns: u64, bytes: usize) {
        if PROFILED {
            self.on_profile(bytes as i64);
        }
        let step = self.step(duration_ns);
        step.bytes += bytes as i64;
        step.spans += 1;
        self.spans += 1;
    }

    /// Adds `bytes` (negative: takes them away) while the threshold is at most `duration_ns`.
    #[inline]
    pub fn while_kept(&mut self, duration_ns: u64, bytes: i64) {
        self.on_profile(bytes);
        self.step(duration_ns).bytes += bytes;
    }

    #[inline(always)]
    fn on_profile(&mut self, bytes: i64) {
        self.profile.add(bytes);
    }

    #[inline(always)]
    fn step(&mut self, duration_ns: u64) -> &mut Step {
        match self.dense.get_mut(duration_ns as usize) {
            Some(step) if duration_ns < DENSE => step,
            _ => self.sparse.entry(duration_ns).or_default(),
        }
    }

    /// Spans added.
    pub fn spans(&self) -> u64 {
        self.spans
    }

    /// The steps, by duration, shortest first.
    fn sorted(&self) -> Vec<(u64, Step)> {
        let dense = (0..DENSE).zip(self.dense.iter().copied()).filter(|(_, s)| *s != Step::default());
        let mut steps: Vec<(u64, Step)> = dense.chain(self.sparse.iter().map(|(&d, &s)| (d, s))).collect();
        steps.sort_unstable_by_key(|&(d, _)| d);
        steps
    }

    /// The size with every span kept, `fixed` the bytes that depend on the cut (None: no cut).
    pub fn whole(&self, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> u64 {
        let steps: i64 = self.dense.iter().chain(self.sparse.values()).map(|s| s.bytes).sum();
        (self.always as i64 + steps).max(0) as u64 + fixed(None)
    }

    /// The smallest threshold at which the output takes at most `max_bytes`; `fixed(cut)` is
    /// what the output's metadata takes when spans shorter than `cut.0` ns are left out, `cut.1`
    /// of them (`None`: none left out). `Err(bytes)`: not even an output without spans fits; it
    /// takes `bytes`.
    pub fn choose(&self, max_bytes: u64, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> Result<Choice, u64> {
        let whole = self.whole(&fixed);
        if whole <= max_bytes {
            return Ok(Choice { threshold_ns: None, left_out: 0, bytes: whole });
        }
        let steps = self.sorted();
        let total: i64 = steps.iter().map(|(_, s)| s.bytes).sum();
        // The metadata at its shortest: what a cut's numbers cannot go below.
        let least_fixed = fixed(Some((0, 0)));
        let (mut left_bytes, mut left_spans) = (0i64, 0u64);
        for i in 1..=steps.len() {
            // Threshold: the i-th shortest duration (keeps it and longer), or past the longest.
            left_bytes += steps[i - 1].1.bytes;
            left_spans += steps[i - 1].1.spans;
            let threshold = steps.get(i).map_or(steps[i - 1].0.saturating_add(1), |s| s.0);
            let size = (self.always as i64 + total - left_bytes).max(0) as u64;
            if size.saturating_add(least_fixed) > max_bytes {
                continue;
            }
            let bytes = size + fixed(Some((threshold, left_spans)));
            if bytes <= max_bytes {
                return Ok(Choice { threshold_ns: Some(threshold), left_out: left_spans, bytes });
            }
        }
        let last = steps.last().map_or(0, |s| s.0.saturating_add(1));
        Err(self.always + fixed(Some((last, self.spans))))
    }
}

/// The filter that keeps what `filter` keeps and spans lasting at least `threshold_ns`.
pub fn with_threshold(filter: &Filter, threshold_ns: u64) -> Filter {
    let mut f = filter.clone();
    f.min_duration_ns = Some(f.min_duration_ns.map_or(threshold_ns, |t| t.max(threshold_ns)));
    f
}

/// `tl` as a renderer would see it after a cut at `cut` (`None`: `tl`'s filter alone): the
/// selection with the threshold, the cut stated. For the models' `fixed` parts.
pub(crate) fn cut_timeline<'a>(tl: &Timeline<'a>, filter: &Filter, cut: Option<Cut>) -> Timeline<'a> {
    let filter = match cut {
        Some(c) => with_threshold(filter, c.threshold_ns),
        None => filter.clone(),
    };
    let mut cut_tl = Timeline::new(tl.trace, tl.names, tl.timebase).filtered(&filter);
    cut_tl.origin_ns = tl.origin_ns;
    cut_tl.cut = cut;
    cut_tl.decoded = tl.decoded.clone();
    cut_tl
}

/// The bytes of a varint of `v`.
#[inline(always)]
pub(crate) fn varint_len(v: u64) -> usize {
    VARINT_LEN[(v | 1).leading_zeros() as usize] as usize
}

/// A varint's bytes by its value's leading zeros: 7 bits a byte.
const VARINT_LEN: [u8; 64] = {
    let mut len = [0; 64];
    let mut zeros = 0;
    while zeros < 64 {
        len[zeros] = (64 - zeros).div_ceil(7) as u8;
        zeros += 1;
    }
    len
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_threshold_that_fits_is_chosen_and_ties_are_left_out_together() {
        let mut costs = Costs::default();
        costs.always(10);
        for d in [1u64, 2, 2, 3, 100_000] {
            costs.span(d, 10);
        }
        // A step of a longer span's that goes once its children go (a leaf line is shorter).
        costs.while_kept(2, 5);
        let pick = |max| costs.choose(max, |_| 0);
        assert_eq!(pick(65), Ok(Choice { threshold_ns: None, left_out: 0, bytes: 65 }));
        assert_eq!(pick(64), Ok(Choice { threshold_ns: Some(2), left_out: 1, bytes: 55 }));
        // 54 bytes: both 2 ns spans go (and the step), not one of them.
        assert_eq!(pick(54), Ok(Choice { threshold_ns: Some(3), left_out: 3, bytes: 30 }));
        assert_eq!(pick(20), Ok(Choice { threshold_ns: Some(100_000), left_out: 4, bytes: 20 }));
        assert_eq!(pick(19), Ok(Choice { threshold_ns: Some(100_001), left_out: 5, bytes: 10 }));
        assert_eq!(pick(9), Err(10));
        // Metadata that grows with the numbers it states is part of the size.
        let digits =
            |cut: Option<(u64, u64)>| cut.map_or(0, |(t, n)| (t.to_string().len() + n.to_string().len()) as u64);
        assert_eq!(costs.choose(56, digits), Ok(Choice { threshold_ns: Some(3), left_out: 3, bytes: 32 }));
    }

    #[test]
    fn varint_lengths() {
        for (v, len) in [(0, 1), (127, 1), (128, 2), (16_383, 2), (16_384, 3), (u64::MAX, 10)] {
            assert_eq!(varint_len(v), len, "{v}");
        }
    }
}
