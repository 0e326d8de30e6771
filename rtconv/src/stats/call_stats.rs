//! One function's figures accumulated call by call, and merged across dumps.

use hdrhistogram::Histogram;

use super::Row;

/// One function's figures as they accumulate, call by call; accumulators of
/// several dumps merge exactly (the histograms too).
///
/// A call costs a few additions: durations below 2048 ns — most
/// calls of a hot function — are counted in a plain array, and their share
/// of the extremes, sums and histogram is added per distinct duration when
/// the figures are read. Sums are integers, so the result
/// does not depend on the order of the calls.
///
/// Small: about 150 bytes until a function's seventh call (the first six
/// durations are kept as they are), a histogram (16 KiB) only then, so a
/// dump of a million rare functions costs a million small accumulators.
#[derive(Debug)]
pub struct CallStats {
    calls: u64,
    /// Calls left without their exit (a `longjmp`): they end where the recorder noticed.
    unwound: u64,
    /// Calls that began before the oldest span their ring kept: children
    /// they had before it were overwritten, so their self time is too high.
    missing_children: u64,
    total: u64,
    self_ns: u64,
    /// Shortest and longest of the calls settled so far (`u64::MAX`, 0 before any).
    min: u64,
    max: u64,
    /// Sum of the settled calls' durations and of their squares (saturating).
    sum: u128,
    sum_sq: u128,
    hist: Option<Box<Histogram<u64>>>,
    /// The first calls' durations, not yet settled (`first_len` of them).
    first: [u64; FIRST_CALLS],
    first_len: u8,
    /// Calls per duration below [`EXACT_BELOW`] ns, not yet settled.
    short: Option<Box<[u64; EXACT_BELOW as usize]>>,
    /// Every call's start and duration (kept only with `--clean`).
    durations: Option<Vec<(i64, u64)>>,
}

impl Default for CallStats {
    fn default() -> Self {
        CallStats {
            calls: 0,
            unwound: 0,
            missing_children: 0,
            total: 0,
            self_ns: 0,
            min: u64::MAX,
            max: 0,
            sum: 0,
            sum_sq: 0,
            hist: None,
            first: [0; FIRST_CALLS],
            first_len: 0,
            short: None,
            durations: None,
        }
    }
}

/// A histogram of 3 significant digits holds every value below 2048
/// exactly, so counting such durations in an array first and adding the
/// counts later (`record_n`) makes the same histogram.
const EXACT_BELOW: u64 = 2048;

/// Calls whose durations an accumulator keeps before it makes its histogram.
const FIRST_CALLS: usize = 6;

/// Calls an accumulator takes before it allocates the array (16 KiB): rare
/// functions do without.
const SHORT_ARRAY_AFTER: u64 = 256;

impl CallStats {
    /// An empty accumulator; with `keep_durations`, it keeps every call's
    /// duration too, for outlier cleaning (`rtconv stats --clean`).
    pub fn new(keep_durations: bool) -> Self {
        CallStats { durations: keep_durations.then(Vec::new), ..CallStats::default() }
    }

    /// Calls added so far.
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// Notes how the call just [`add`](Self::add)ed is incomplete: it was
    /// unwound, or it began before the oldest span its ring kept.
    #[inline(always)]
    pub fn note(&mut self, unwound: bool, missing_children: bool) {
        self.unwound += u64::from(unwound);
        self.missing_children += u64::from(missing_children);
    }

    /// Takes a child call's duration out of this function's self time (when
    /// calls are added as they start, before their children are known).
    pub fn take_child_time(&mut self, duration: u64) {
        self.self_ns = self.self_ns.wrapping_sub(duration);
    }

    /// One call: its start, inclusive duration, and what it adds to the
    /// function's self time; `outermost` when no call of the same function
    /// is around it (only those count towards the total).
    #[inline(always)] // once per span
    pub fn add(&mut self, enter_ns: i64, duration: u64, self_ns: u64, outermost: bool) {
        if let Some(all) = &mut self.durations {
            all.push((enter_ns, duration));
        }
        self.calls += 1;
        self.self_ns = self.self_ns.wrapping_add(self_ns);
        if outermost {
            self.total += duration;
        }
        if let Some(short) = &mut self.short
            && let Some(count) = short.get_mut(duration as usize)
        {
            *count += 1;
            return;
        }
        if self.calls == SHORT_ARRAY_AFTER {
            self.short = Some(Box::new([0; EXACT_BELOW as usize]));
        }
        self.settle_one(duration);
    }

    /// One call's duration: kept among the first calls while there is room
    /// and no histogram yet, otherwise added to the extremes, sums and histogram.
    #[inline(always)] // once per long call
    fn settle_one(&mut self, duration: u64) {
        if self.hist.is_none() {
            if let Some(slot) = self.first.get_mut(usize::from(self.first_len)) {
                *slot = duration;
                self.first_len += 1;
                return;
            }
            self.settle_first();
        }
        self.settle_calls(duration, 1);
    }

    /// Moves the first calls' durations into the extremes, sums and histogram.
    #[cold]
    #[inline(never)] // once per function: `add` stays small
    fn settle_first(&mut self) {
        let first = self.first;
        for &duration in &first[..usize::from(self.first_len)] {
            self.settle_calls(duration, 1);
        }
        self.first_len = 0;
    }

    /// Adds `count` calls of `duration` to the extremes, sums and histogram.
    #[inline(never)] // for the long calls only: `add` stays small
    fn settle_calls(&mut self, duration: u64, count: u64) {
        self.min = self.min.min(duration);
        self.max = self.max.max(duration);
        let (d, n) = (u128::from(duration), u128::from(count));
        self.sum = self.sum.saturating_add(d * n);
        self.sum_sq = self.sum_sq.saturating_add((d * d).saturating_mul(n));
        if self.hist.is_none() {
            // 3 significant digits (creation fails only above 5); it grows to any value it is given.
            self.hist = Histogram::new(3).ok().map(Box::new);
        }
        if let Some(hist) = &mut self.hist {
            let _ = hist.record_n(duration.max(1), count);
        }
    }

    /// Moves the first calls and the counted short durations into the extremes, sums and histogram.
    fn settle(&mut self) {
        self.settle_first();
        self.settle_short();
    }

    /// Moves the counted short durations into the extremes, sums and histogram.
    fn settle_short(&mut self) {
        let Some(short) = self.short.take() else { return };
        for (duration, &count) in short.iter().enumerate().filter(|&(_, &count)| count > 0) {
            self.settle_calls(duration as u64, count);
        }
    }

    /// The row with the distribution figures recomputed from the calls no longer than `fence`.
    fn cleaned_row(&self, name: String, scope_total: u64, all: &[u64], fence: u64) -> Row {
        let mut kept = CallStats::default();
        for &d in all.iter().filter(|&&d| d <= fence) {
            kept.add(0, d, 0, false);
        }
        let kept_calls = kept.calls;
        let mut row = kept.row(name, scope_total);
        row.calls = self.calls;
        row.total_ns = self.total;
        row.self_ns = self.self_ns;
        row.share = if scope_total == 0 { 0.0 } else { self.self_ns as f64 / scope_total as f64 };
        row.outliers = self.calls - kept_calls;
        row
    }

    /// Adds `other`'s calls to these.
    pub fn merge(&mut self, mut other: CallStats) {
        if other.calls == 0 {
            return;
        }
        // The short arrays are settled; the first calls of a rare function stay unsettled (a
        // histogram only once it has more), so merging many dumps' rare functions stays small.
        self.settle_short();
        other.settle_short();
        let (first, first_len) = (other.first, usize::from(other.first_len));
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.calls += other.calls;
        self.unwound += other.unwound;
        self.missing_children += other.missing_children;
        self.total += other.total;
        self.self_ns = self.self_ns.wrapping_add(other.self_ns);
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        match (&mut self.hist, other.hist) {
            (Some(mine), Some(theirs)) => {
                // Both grow to any value; adding cannot fail for histograms made by `Histogram::new`.
                let _ = mine.add(theirs.as_ref());
            }
            (mine @ None, theirs) => *mine = theirs,
            (Some(_), None) => {}
        }
        if let (Some(mine), Some(theirs)) = (&mut self.durations, other.durations) {
            mine.extend(theirs);
        }
        for &duration in &first[..first_len] {
            self.settle_one(duration);
        }
    }

    /// The calls' durations as (duration, calls) pairs, ascending: exact
    /// below 2048 ns, within 0.1 % above (the histogram's buckets, each at
    /// its highest value).
    pub fn distribution(&mut self) -> Vec<(u64, u64)> {
        self.settle();
        let Some(hist) = &self.hist else { return Vec::new() };
        hist.iter_recorded().map(|v| (v.value_iterated_to(), v.count_at_value())).collect()
    }

    /// The figures, as the row `name` of a scope whose top-level time is `scope_total`.
    pub fn row(mut self, name: String, scope_total: u64) -> Row {
        self.settle();
        if let Some(calls) = &self.durations {
            // In the order the calls started.
            let mut calls = calls.clone();
            calls.sort_unstable();
            let all: Vec<u64> = calls.iter().map(|&(_, d)| d).collect();
            if let Some(fence) = super::clean::fence(&all) {
                return self.cleaned_row(name, scope_total, &all, fence);
            }
        }
        let n = self.calls.max(1) as f64;
        let mean = self.sum as f64 / n;
        let min = self.min.min(self.max); // 0 without calls
        // The histogram answers with its bucket's upper bound: keep it within the calls seen.
        let q = |p: f64| self.hist.as_ref().map_or(0, |h| h.value_at_quantile(p)).clamp(min, self.max);
        Row {
            name,
            calls: self.calls,
            total_ns: self.total,
            self_ns: self.self_ns,
            share: if scope_total == 0 { 0.0 } else { self.self_ns as f64 / scope_total as f64 },
            min_ns: min,
            mean_ns: mean,
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            max_ns: self.max,
            stddev_ns: (self.sum_sq as f64 / n - mean * mean).max(0.0).sqrt(),
            outliers: 0,
            dumps: None,
            unwound: self.unwound,
            missing_children: self.missing_children,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CallStats;

    /// What a row says, as comparable integers.
    fn figures(stats: CallStats) -> [u64; 10] {
        let r = stats.row("f".into(), 1_000_000);
        [
            r.calls,
            r.total_ns,
            r.self_ns,
            r.min_ns,
            r.mean_ns as u64,
            r.p50_ns,
            r.p90_ns,
            r.p99_ns,
            r.max_ns,
            r.stddev_ns as u64,
        ]
    }

    #[test]
    fn merged_accumulators_say_what_one_accumulator_of_all_the_calls_says() {
        let mut rng = crate::model::test_dumps::XorShift(88_172_645_463_325_252u64);
        let mut next = move || rng.next();
        // Parts of 0 to 9 calls (rare functions, kept unsettled) and of 300 (short array and histogram).
        for sizes in [&[1usize, 2, 3][..], &[6, 6, 6], &[0, 7, 1], &[300, 2, 5, 300], &[5, 300, 1]] {
            let mut whole = CallStats::new(false);
            let mut merged = CallStats::new(false);
            for &size in sizes {
                let mut part = CallStats::new(false);
                for _ in 0..size {
                    let d = next() % if next() % 2 == 0 { 3_000 } else { 5_000_000 };
                    whole.add(0, d, d / 2, true);
                    part.add(0, d, d / 2, true);
                }
                merged.merge(part);
            }
            assert_eq!(figures(merged), figures(whole), "{sizes:?}");
        }
    }
}
