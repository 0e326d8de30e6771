//! A budget applied to one timeline in one format: its model's costs, the threshold chosen for
//! a size, and the timeline cut at it.

use super::perfetto::{Packets, Thresholds};
use super::{Choice, Costs, Floor, Profile, cut_timeline};
use crate::model::{Cut, Filter, Filtered, Threads, Timeline};
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
    model: Model,
    /// What the filters kept and left out, every span counted.
    found: Filtered,
    /// The floor of a plan [`above`](Self::above) one: the threshold, and the spans below it.
    floor: Option<(u64, u64)>,
    /// The floor is proven, not estimated ([`Floor::proven`]).
    proven: bool,
    /// The fewest bytes the spans above the first floor take ([`Floor::least`]).
    least: u64,
}

impl<'t, 'a> Plan<'t, 'a> {
    /// Walks `tl` (its spans those `filter` keeps) to cost it in `layout`.
    pub fn new(tl: &'t Timeline<'a>, filter: &'t Filter, layout: Layout) -> Self {
        // Perfetto's thresholds from 0 (walked again where the threshold lies between two).
        let thresholds = (layout == Layout::Perfetto).then(|| Thresholds::from_zero(tl));
        Self::with(tl, filter, layout, thresholds, Profile::default())
    }

    /// As [`new`](Self::new), also keeping where in time the bytes go: `slices` slices from
    /// `start` to `end` (ns; see [`Profile::new`]).
    pub fn profiled(
        tl: &'t Timeline<'a>,
        filter: &'t Filter,
        layout: Layout,
        (start, end): (i64, i64),
        slices: usize,
    ) -> Self {
        // For a size alone: no Perfetto thresholds.
        Self::with(tl, filter, layout, None, Profile::new(start, end, slices))
    }

    /// As [`new`](Self::new), for a timeline without a filter whose decoded spans are those lasting
    /// at least what the decode above `floor` kept ([`Floor::decoded_from`]; see [`super::floor`]):
    /// its choices and cuts count the spans below the floor as left out, and are
    /// [`exact`](Self::exact) only where the floor is proven or the spans above it do not all fit.
    pub fn above(tl: &'t Timeline<'a>, filter: &'t Filter, layout: Layout, floor: Floor) -> Self {
        // Perfetto's thresholds: from the floor to its ceiling. Above a proven floor whose spans
        // may all fit, at none first: where they do, that is the choice (the count proves the
        // floor right under the threshold where a clock ticks in steps, as this machine's does).
        let sized = (!floor.may_all_fit).then(|| Thresholds::covering(floor.ns, floor.ceiling));
        Self::walking(tl, filter, layout, sized, Profile::default(), tl.threads()).above_floor(tl, floor)
    }

    /// The walk of [`above`](Self::above) over `threads`, the spans of `tl` a decode above `floor`
    /// (as the sample estimates it, before the decode) sends as it goes
    /// ([`Threads::streamed`]): it sizes Perfetto's output from the first duration decoded, or at
    /// none where the sample estimates every span above the floor fits. Its plan is
    /// [`above_floor`](Self::above_floor), once the decode has found the floor.
    pub(crate) fn walk_decoding(
        tl: &'t Timeline<'a>,
        filter: &'t Filter,
        layout: Layout,
        floor: &Floor,
        threads: Threads<'_, 'a>,
    ) -> Self {
        let sized = (!floor.may_all_fit).then(|| Thresholds::covering(floor.decoded_from(), floor.ceiling));
        Self::walking(tl, filter, layout, sized, Profile::default(), threads)
    }

    /// The plan of a walk of the spans above `floor` (as `decode_above` found it), for `tl`,
    /// which holds them decoded: see [`above`](Self::above). A Perfetto walk that sized no
    /// threshold (the sample estimated that every span above the floor fits) is done again, sized,
    /// where the decode did not prove the floor: a threshold above it may then be the choice.
    pub(crate) fn above_floor<'u>(self, tl: &'u Timeline<'a>, floor: Floor) -> Plan<'u, 'a>
    where
        't: 'u,
    {
        let thresholds = Thresholds::covering(floor.ns, floor.ceiling);
        let model = match self.model {
            Model::Packets(packets) if floor.proven => Model::Packets(packets.shorter_left_out(thresholds)),
            Model::Packets(packets) if !packets.sized() => {
                Model::Packets(Packets::new(tl, Some(thresholds), Profile::default()).0)
            }
            model => model,
        };
        Plan {
            tl,
            filter: self.filter,
            model,
            proven: floor.proven,
            least: floor.least,
            // The decode counted the spans below the floor as left out by duration.
            floor: Some((floor.ns, self.found.duration)),
            ..self
        }
    }

    /// `thresholds`: those Perfetto's model sizes the output at first.
    fn with(
        tl: &'t Timeline<'a>,
        filter: &'t Filter,
        layout: Layout,
        thresholds: Option<Thresholds>,
        profile: Profile,
    ) -> Self {
        Self::walking(tl, filter, layout, thresholds, profile, tl.threads())
    }

    /// As [`with`](Self::with), walking `threads` (`tl`'s spans).
    fn walking(
        tl: &'t Timeline<'a>,
        filter: &'t Filter,
        layout: Layout,
        thresholds: Option<Thresholds>,
        profile: Profile,
        threads: Threads<'_, 'a>,
    ) -> Self {
        let (model, mut found) = match layout {
            Layout::Perfetto => {
                let (packets, found) = Packets::walk(tl, threads, thresholds, profile);
                (Model::Packets(packets), found)
            }
            Layout::Chrome(_) | Layout::Ftrace | Layout::Systrace => {
                let mut costs = Costs::profiled(profile);
                let found = match layout {
                    Layout::Chrome(opts) => super::chrome::costs(tl, threads, &opts, &mut costs),
                    Layout::Ftrace => super::ftrace::costs(tl, threads, &mut costs),
                    _ => super::systrace::costs(tl, threads, &mut costs),
                };
                (Model::Steps(costs), found)
            }
        };
        if tl.selection.is_none() {
            // Without a filter nothing is counted: it kept every span.
            found.kept = model.spans();
        }
        Plan { tl, filter, layout, model, found, floor: None, proven: false, least: 0 }
    }

    /// Where the bytes go in time, if [`profiled`](Self::profiled).
    pub fn profile(&self) -> &super::Profile {
        self.model.profile()
    }

    /// What the output takes with every span the filters keep; above a floor, with every span
    /// above it (less than all would take).
    pub fn whole(&self) -> u64 {
        self.model.whole(|cut| self.fixed(self.with_floor(cut), 0)).max(self.least)
    }

    /// The floor the plan's spans lie above ([`above`](Self::above)), ns.
    pub fn floor(&self) -> Option<u64> {
        self.floor.map(|(threshold_ns, _)| threshold_ns)
    }

    /// The smallest threshold at which the output takes at most `fit` bytes, its metadata
    /// stating a budget of `max_bytes` (the same, unless the budget is of compressed bytes);
    /// `Err(bytes)`: not even an output without spans fits, it takes `bytes`. Above a floor, the
    /// smallest above it; see [`exact`](Self::exact).
    pub fn choose(&self, fit: u64, max_bytes: u64) -> Result<Choice, u64> {
        let below = self.floor.map_or(0, |(_, below)| below);
        let fixed = |cut| self.fixed(self.with_floor(cut), max_bytes);
        let choice = match &self.model {
            Model::Steps(costs) => costs.choose(fit, fixed)?,
            Model::Packets(packets) => packets.choose(self.tl, fit, fixed)?,
        };
        Ok(Choice {
            threshold_ns: choice.threshold_ns.or(self.floor()),
            left_out: choice.left_out + below,
            bytes: choice.bytes,
        })
    }

    /// Whether `choice` is the smallest threshold over all the spans: always, but above a floor
    /// not proven where every span above it fits (a shorter threshold might fit too; the floor
    /// was too high).
    pub fn exact(&self, choice: &Choice) -> bool {
        self.floor.is_none() || self.proven || choice.threshold_ns != self.floor()
    }

    /// A cut of the spans the plan holds as a cut of all of them: the floor's spans left out too.
    fn with_floor(&self, cut: Option<(u64, u64)>) -> Option<(u64, u64)> {
        match (cut, self.floor) {
            (Some((threshold_ns, left_out)), Some((_, below))) => Some((threshold_ns, left_out + below)),
            (None, floor) => floor,
            (cut, None) => cut,
        }
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
            // Above a floor, `found` counts the spans below it as left out already.
            let more = c.left_out.saturating_sub(self.floor.map_or(0, |(_, below)| below));
            found.kept = found.kept.saturating_sub(more);
            found.duration += more;
        }
        match self.layout {
            Layout::Chrome(_) => super::chrome::fixed(&tl, found),
            Layout::Ftrace => super::ftrace::fixed(&tl),
            Layout::Systrace => super::systrace::fixed(&tl, found.kept),
            Layout::Perfetto => super::perfetto::fixed(&tl),
        }
    }
}

/// A layout's size model: steps of bytes by duration, or Perfetto's packets.
enum Model {
    Steps(Costs),
    Packets(Packets),
}

impl Model {
    fn spans(&self) -> u64 {
        match self {
            Model::Steps(costs) => costs.spans(),
            Model::Packets(packets) => packets.spans(),
        }
    }

    fn profile(&self) -> &Profile {
        match self {
            Model::Steps(costs) => costs.profile(),
            Model::Packets(packets) => packets.profile(),
        }
    }

    fn whole(&self, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> u64 {
        match self {
            Model::Steps(costs) => costs.whole(fixed),
            Model::Packets(packets) => packets.whole(fixed),
        }
    }
}
