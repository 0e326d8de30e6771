//! `rtconv diff BASE NEW`: per function, what changed between two sets of
//! dumps, whether the change is more than noise, and whether it crosses the
//! thresholds a CI job gates on.
//!
//! Each side is every dump its arguments name (files, directories, globs,
//! archives), merged as `rtconv stats` merges them (histograms added, never
//! percentiles averaged), whatever their build-ids: comparing two builds is
//! the point. Functions are matched by name. A change is *significant* when
//! the Mann–Whitney U test ([`significance`]) on the two sides' call
//! durations gives p < [`ALPHA`]; its direction is the probability that a
//! new call outlasts a base call. measureme's `summarize diff` and
//! uftrace's `report --diff` show the same columns (calls, total, self) with
//! their changes; the test is what tells noise from a regression.

pub mod significance;
mod threshold;

pub use significance::{Shift, mann_whitney};
pub use threshold::{Metric, Threshold};

use crate::stats::{Merged, Row};

/// A change is significant below this p-value.
pub const ALPHA: f64 = 0.01;

/// One function on both sides.
#[derive(Clone, Debug)]
pub struct Change {
    /// Its name.
    pub function: String,
    /// Its figures in the base dumps (`None`: not called there).
    pub base: Option<Row>,
    /// Its figures in the new dumps (`None`: not called there).
    pub new: Option<Row>,
    /// The test on its call durations, when it was called on both sides.
    pub shift: Option<Shift>,
}

/// What a change amounts to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Its calls got longer, significantly.
    Slower,
    /// Its calls got shorter, significantly.
    Faster,
    /// No significant shift in its calls' durations.
    Same,
    /// Called only in the new dumps.
    Added,
    /// Called only in the base dumps.
    Removed,
}

impl Verdict {
    /// As the table and CSV show it.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Slower => "slower",
            Verdict::Faster => "faster",
            Verdict::Same => "~",
            Verdict::Added => "new",
            Verdict::Removed => "gone",
        }
    }
}

impl Change {
    /// `metric` on the base and new side (0 where the function was not called).
    pub fn values(&self, metric: Metric) -> (u64, u64) {
        let of = |row: &Option<Row>| row.as_ref().map_or(0, |r| metric.of(r));
        (of(&self.base), of(&self.new))
    }

    /// The new value less the base one.
    pub fn delta(&self, metric: Metric) -> i128 {
        let (base, new) = self.values(metric);
        i128::from(new) - i128::from(base)
    }

    /// The change relative to the base value, if it has one.
    pub fn relative(&self, metric: Metric) -> Option<f64> {
        let (base, new) = self.values(metric);
        (base > 0).then(|| (new as f64 - base as f64) / base as f64)
    }

    /// What the change amounts to.
    pub fn verdict(&self) -> Verdict {
        match (&self.base, &self.new, self.shift) {
            (None, _, _) => Verdict::Added,
            (_, None, _) => Verdict::Removed,
            (_, _, Some(s)) if s.p_value < ALPHA && s.slower > 0.5 => Verdict::Slower,
            (_, _, Some(s)) if s.p_value < ALPHA && s.slower < 0.5 => Verdict::Faster,
            _ => Verdict::Same,
        }
    }
}

/// A function's figures on one side and its calls' durations.
type Side = Option<(Row, Vec<(u64, u64)>)>;

/// The changes between `base` and `new`, by impact: the largest change in
/// self time first (the time the program spends differently), then by name.
pub fn compare(base: Merged, new: Merged) -> Vec<Change> {
    let mut sides: std::collections::BTreeMap<String, [Side; 2]> = Default::default();
    for (i, merged) in [base, new].into_iter().enumerate() {
        for (row, durations) in merged.functions() {
            let name = row.name.clone();
            sides.entry(name).or_default()[i] = Some((row, durations));
        }
    }
    let mut changes: Vec<Change> = sides
        .into_iter()
        .map(|(function, [base, new])| {
            let shift = match (&base, &new) {
                (Some((_, a)), Some((_, b))) => mann_whitney(a, b),
                _ => None,
            };
            Change { function, base: base.map(|b| b.0), new: new.map(|n| n.0), shift }
        })
        .collect();
    changes.sort_by(|a, b| {
        b.delta(Metric::SelfTime)
            .unsigned_abs()
            .cmp(&a.delta(Metric::SelfTime).unsigned_abs())
            .then_with(|| a.function.cmp(&b.function))
    });
    changes
}

/// The changes that cross `thresholds`, with the threshold each crossed.
pub fn crossed<'c>(changes: &'c [Change], thresholds: &'c [Threshold]) -> Vec<(&'c Change, &'c Threshold)> {
    changes.iter().flat_map(|c| thresholds.iter().filter(|t| t.crossed_by(c)).map(move |t| (c, t))).collect()
}
