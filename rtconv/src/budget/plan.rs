//! A budget applied to one timeline in one format: its model's costs, the threshold chosen for
//! a size, and the timeline cut at it.

use super::{Choice, Costs, cut_timeline};
use crate::model::{Cut, Filter, Filtered, Timeline};
use crate::render::chrome;

/// The timeline formats a budget applies to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Chrome JSON, written with these options.
    Chrome(chrome::Options),
    /// ftrace's function_graph text.
    Ftrace,
    /// Systrace text.
    Systrace,
    /// Perfetto's protobuf.
    Perfetto,
}

/// A timeline's costs in one layout.
pub struct Plan<'t, 'a> {
    tl: &'t Timeline<'a>,
    filter: &'t Filter,
    layout: Layout,
    costs: Costs,
    /// What the filters kept and left out, every span counted.
    found: Filtered,
}

impl<'t, 'a> Plan<'t, 'a> {
    /// Walks `tl` (its spans those `filter` keeps) to cost it in `layout`.
    pub fn new(tl: &'t Timeline<'a>, filter: &'t Filter, layout: Layout) -> Self {
        Self::with(tl, filter, layout, Costs::default())
    }

    /// As [`new`](Self::new), also keeping where in time the bytes go: `slices` slices from
    /// `start` to `end` (ns; see [`Costs::profiled`]).
    pub fn profiled(
        tl: &'t Timeline<'a>,
        filter: &'t Filter,
        layout: Layout,
        (start, end): (i64, i64),
        slices: usize,
    ) -> Self {
        Self::with(tl, filter, layout, Costs::profiled(start, end, slices))
    }

    fn with(tl: &'t Timeline<'a>, filter: &'t Filter, layout: Layout, mut costs: Costs) -> Self {
        let mut found = match layout {
            Layout::Chrome(opts) => super::chrome::costs(tl, &opts, &mut costs),
            Layout::Ftrace => super::ftrace::costs(tl, &mut costs),
            Layout::Systrace => super::systrace::costs(tl, &mut costs),
            Layout::Perfetto => super::perfetto::costs(tl, &mut costs),
        };
        if tl.selection.is_none() {
            // Without a filter nothing is counted: it kept every span.
            found.kept = costs.spans();
        }
        Plan { tl, filter, layout, costs, found }
    }

    /// Where the bytes go in time, if [`profiled`](Self::profiled).
    pub fn profile(&self) -> &super::Profile {
        self.costs.profile()
    }

    /// What the output takes with every span the filters keep.
    pub fn whole(&self) -> u64 {
        self.costs.whole(|cut| self.fixed(cut, 0))
    }

    /// The smallest threshold at which the output takes at most `fit` bytes, its metadata
    /// stating a budget of `max_bytes` (the same, unless the budget is of compressed bytes);
    /// `Err(bytes)`: not even an output without spans fits, it takes `bytes`.
    pub fn choose(&self, fit: u64, max_bytes: u64) -> Result<Choice, u64> {
        self.costs.choose(fit, |cut| self.fixed(cut, max_bytes))
    }

    /// The cut `choice` makes for a budget of `max_bytes`, if it leaves out anything.
    pub fn cut(&self, choice: &Choice, max_bytes: u64) -> Option<Cut> {
        choice.threshold_ns.map(|threshold_ns| Cut { max_bytes, threshold_ns, left_out: choice.left_out })
    }

    /// The timeline as it is written with `cut`.
    pub fn timeline(&self, cut: Option<Cut>) -> Timeline<'a> {
        cut_timeline(self.tl, self.filter, cut)
    }

    /// What the output's metadata takes with a cut at `cut` (threshold, spans left out) of a
    /// budget of `max_bytes`.
    fn fixed(&self, cut: Option<(u64, u64)>, max_bytes: u64) -> u64 {
        let cut = cut.map(|(threshold_ns, left_out)| Cut { max_bytes, threshold_ns, left_out });
        let tl = cut_timeline(self.tl, self.filter, cut);
        let mut found = self.found;
        if let Some(c) = cut {
            found.kept = found.kept.saturating_sub(c.left_out);
            found.duration += c.left_out;
        }
        match self.layout {
            Layout::Chrome(_) => super::chrome::fixed(&tl, found),
            Layout::Ftrace => super::ftrace::fixed(&tl),
            Layout::Systrace => super::systrace::fixed(&tl, found.kept),
            Layout::Perfetto => super::perfetto::fixed(&tl),
        }
    }
}
