//! A floor under the threshold a budget will choose, estimated before anything is decoded, so that
//! the spans below it need not be decoded, kept or costed at all.
//!
//! Each kept span adds at least the fewest bytes a span of its key (and, in ftrace, its depth) can
//! take in the format (its event or lines with the shortest numbers: `least_span` in each model),
//! so where the spans
//! lasting at least some duration take more than `max_bytes` at that, the threshold lies above
//! it. A sample of the rings' spans (every n-th record, read in place) estimates the longest
//! such duration, with a margin for the sample's error. The spans at or above it are decoded
//! through a `-t` gate (`Timeline::decode_above`) and costed exactly
//! ([`Plan::above`](super::Plan::above)): no span below the floor is kept at any threshold above
//! it, so no delta, leaf line or interned name there depends on one.
//!
//! The same sample names a *ceiling*: the duration above which the spans take
//! `CEILING_SHARE` (0.8) of the budget at their fewest bytes, so that the threshold is estimated to
//! lie below it. Perfetto's model sizes the output at thresholds from the floor to the ceiling, 1
//! ns apart where that is 65,535 ns or less; where none of them fits, it walks again past them.
//!
//! Perfetto's model walks every span it is given, so its floor also leaves out the spans as long
//! as the floor where the sample shows them over the budget at the fewest bytes of any span
//! ([`Floor::ties_out`]): the decode counts them as it leaves them out ([`decode_above`]), and
//! where the spans lasting at least the floor then take more than the budget at those bytes, no
//! threshold up to it fits — the floor a nanosecond above it is *proven*. On a clock that ticks
//! in steps the durations come in a few values, and the count so proves the floor right under
//! the threshold: on a whole-program Lua trace (this VM's clock reads in steps of 10 ns), 756,378
//! spans of 30 ns, the most common duration but one, are the floor's ties and left out of memory,
//! and every span above them fits (`Plan::above` then sizes no threshold).
//!
//! The estimate is checked, not trusted: the plan is exact only if the floor is proven or the
//! spans above it do not all fit ([`Plan::exact`](super::Plan::exact)) — then no shorter
//! threshold fits either, as
//! each span more it keeps adds more bytes than the cut's statement spares with its smaller
//! numbers. Where they do fit, the conversion decodes every span as before.

use super::Layout;
use crate::model::{Decoded, Tap, Timeline};

/// Spans sampled: enough for a count of thousands to be within a few percent.
const SAMPLES: usize = 1 << 15;

/// A sample of a timeline's spans read straight from its rings (see
/// [`Timeline::sample_spans`](crate::model::Timeline)), each with the fewest bytes it takes in a
/// layout: what a floor and the estimate of a whole output are found from.
#[derive(Clone, Debug)]
pub struct Sample {
    layout: Layout,
    /// Each sampled span's duration (ns) and fewest bytes (its key's, and its indent's), longest first.
    spans: Vec<(u64, u64)>,
    /// How many spans each stands for.
    stride: u64,
    /// The fewest bytes of a span of any key.
    fewest: u64,
}

impl Sample {
    /// About 32,768 spans of `tl`, spread evenly over its rings, costed in `layout`; its filter is
    /// not applied.
    pub fn of(tl: &Timeline<'_>, layout: Layout) -> Self {
        let least = match layout {
            Layout::Chrome(opts) => super::chrome::least_span(tl, &opts),
            Layout::Ftrace => super::ftrace::least_span(tl),
            Layout::Systrace => super::systrace::least_span(tl),
            Layout::Perfetto => super::perfetto::least_span(tl),
        };
        // ftrace indents a span's lines by its depth, which a ring may state (a tag of depth + 1).
        let indent = |tag: u8| match layout {
            Layout::Ftrace => super::ftrace::least_indent(tag),
            _ => 0,
        };
        let (sampled, stride) = tl.sample_spans(SAMPLES);
        let mut spans: Vec<(u64, u64)> = sampled
            .into_iter()
            .map(|(ns, key, tag)| (ns, least.get(key as usize).copied().unwrap_or(0) + indent(tag)))
            .collect();
        spans.sort_unstable_by_key(|&(ns, _)| std::cmp::Reverse(ns));
        Sample { layout, spans, stride, fewest: least.iter().copied().min().unwrap_or(0) }
    }

    /// The layout it is costed in.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// About what every span takes at its fewest bytes. The timeline's filter and window are not
    /// applied: a filtered output's spans take less.
    pub fn fewest_whole(&self) -> u64 {
        self.spans.iter().map(|&(_, bytes)| bytes).sum::<u64>().saturating_mul(self.stride)
    }
}

/// A floor under a budget's threshold, and what the sample says of the spans above it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Floor {
    /// The spans shorter than this (ns) are estimated to be left out.
    pub ns: u64,
    /// About how many spans last at least `ns` (for the memory to decode them into).
    pub spans: u64,
    /// The spans at least this long (ns) are estimated to take 0.8 of the budget at their fewest
    /// bytes, so to fit: the threshold is estimated to lie below it.
    pub ceiling: u64,
    /// The budget it is for.
    pub max_bytes: u64,
    /// About how many spans last longer than `ns`, where the sample shows the spans lasting at
    /// least `ns` take more than the budget surely at the fewest bytes of any span (not only of
    /// their keys): the spans as long as the floor may then be left out too, once counted
    /// (`decode_above`).
    pub ties_out: Option<u64>,
    /// The spans shorter than `ns` are known, not estimated, to be left out: those at least
    /// `ns - 1` long were counted and take more than the budget at their fewest bytes.
    pub proven: bool,
    /// The fewest bytes the spans at least as long as the first floor take (0: not counted).
    pub least: u64,
    /// The spans above a proven floor take at most `ROOM` of the budget at their fewest bytes:
    /// they may all fit, so Perfetto's model sizes no threshold first. Before the decode
    /// ([`floor`]), as the sample estimates it: the spans longer than the floor, where it shows
    /// them as its ties' ([`ties_out`](Self::ties_out)); the decode then knows it
    /// (`decode_above`).
    pub may_all_fit: bool,
}

impl Floor {
    /// The shortest duration the decode above the floor keeps (ns; `decode_above`): past the
    /// floor where its ties are left out, else the floor.
    pub fn decoded_from(&self) -> u64 {
        match self.ties_out {
            Some(_) => self.ns.saturating_add(1),
            None => self.ns,
        }
    }
}

/// The share of the budget the spans above a proven floor take at most at their fewest bytes
/// for Perfetto's model to try them all first: a sixteenth spare, where those of the
/// whole-program Lua trace take 4.7 % more than their fewest.
const ROOM: f64 = 15.0 / 16.0;

/// The share of the budget the spans above a floor's ceiling take at their fewest bytes: they
/// fit unless they take more than 1 / 0.8 (1.25) times that, a byte more a packet being a tenth.
const CEILING_SHARE: f64 = 0.8;

/// The floor for `tl` within `max_bytes`, from `sample` (of `tl`, in the layout the floor is
/// for): a duration below which a budget of `max_bytes` is estimated to leave out every span;
/// `None` where no estimate is made (a filter, whose spans the sample does not see; a window) or
/// where the sample does not show that more spans than fit last at least some duration.
pub fn floor(tl: &Timeline<'_>, max_bytes: u64, sample: &Sample) -> Option<Floor> {
    if tl.selection.is_some() || tl.window.is_some() {
        return None;
    }
    let Sample { layout, spans: ref sample, stride, fewest } = *sample;
    let fewest = fewest as f64;
    // Three standard deviations of a count of `n` sampled spans, as a share.
    let error = |n: usize| 3.0 / (n.max(1) as f64).sqrt();
    // The floor at `ns`, the first `at_least` spans of the sample lasting at least that long.
    let found = |ns: u64, at_least: usize, ceiling: u64| {
        let surely_over = at_least as f64 * stride as f64 * fewest >= max_bytes as f64 * (1.0 + error(at_least));
        let ties_out = (layout == Layout::Perfetto && surely_over)
            .then(|| sample.partition_point(|&(d, ..)| d > ns) as u64 * stride);
        let may_all_fit = ties_out.is_some_and(|longer| longer as f64 * fewest <= max_bytes as f64 * ROOM);
        let spans = at_least as u64 * stride;
        Floor { ns, spans, ceiling, max_bytes, ties_out, proven: false, least: 0, may_all_fit }
    };
    // Longest first, until the sampled spans' fewest bytes, each standing for `stride` spans, pass
    // the budget by three standard deviations of the sample's count: the spans lasting at least
    // that long then do not fit, but for bad luck.
    let mut bytes = 0.0;
    let mut floor: Option<u64> = None;
    let mut ceiling = u64::MAX;
    for (i, &(ns, least)) in sample.iter().enumerate() {
        match floor {
            // The spans as long as the floor's (ties) lie above it too.
            Some(f) if ns < f => return (f > 0).then(|| found(f, i, ceiling)),
            Some(_) => continue,
            None => {}
        }
        bytes += least as f64 * stride as f64;
        // Where the count is uncertain, the ceiling errs high (fewer bytes above it).
        let error = error(i + 1);
        if ceiling == u64::MAX && bytes >= max_bytes as f64 * CEILING_SHARE * (1.0 - error.min(0.5)) {
            ceiling = ns;
        }
        if bytes >= max_bytes as f64 * (1.0 + error) {
            floor = Some(ns);
        }
    }
    floor.filter(|&ns| ns > 0).map(|ns| found(ns, sample.len(), ceiling))
}

/// The spans of `tl` above `floor` decoded, within `max_memory` bytes, and the floor they lie
/// above. Perfetto's model walks every span it is given, so where the sample says so
/// ([`Floor::ties_out`]) the spans as long as the floor are left out too, counted as the decode
/// leaves them out; and where the spans lasting at least T take more than the budget at the
/// fewest bytes of any span, no threshold up to T fits, so the floor is the first T the count
/// of the spans does not so rule out, proven. The spans between the first floor and that one
/// stay in memory: a walk that saw them as they decoded, and one after (`Packets::choose` walks
/// again where it must), then see the same spans, each left out at every threshold sized.
///
/// `tap` (if any) gets the spans decoded as they are, and each thread's end
/// ([`Plan::walk_decoding`](super::Plan::walk_decoding) walks them).
pub(crate) fn decode_above(
    tl: &Timeline<'_>,
    layout: Layout,
    floor: Floor,
    max_memory: u64,
    tap: Option<&Tap>,
) -> Option<(Decoded, Floor)> {
    if layout != Layout::Perfetto {
        return Some((tl.decode_above(max_memory, floor.ns, floor.spans, tap)?, floor));
    }
    // Decoded from `from`; `ties` the spans a nanosecond shorter, left out.
    let from = floor.decoded_from();
    let (decoded, ties) = match floor.ties_out {
        Some(longer) => tl.decode_above_counting(max_memory, from, longer, floor.ns, tap)?,
        None => (tl.decode_above(max_memory, from, floor.spans, tap)?, 0),
    };
    let fewest = super::perfetto::fewest(tl, &decoded);
    let over = |spans: u64| spans.saturating_mul(fewest) > floor.max_bytes;
    let kept = decoded.len();
    // The first threshold not ruled out, and the spans lasting at least that long.
    let (ns, at_least) = if !over(kept) {
        if ties > 0 && over(kept + ties) { (from, kept) } else { (floor.ns, kept + ties) }
    } else {
        // Per duration from `from`, 1 ns apart, the spans kept (the last: that long or longer).
        let mut counts = vec![0u64; COUNTED + 1];
        for s in decoded.spans() {
            counts[(s.duration_ns().saturating_sub(from)).min(COUNTED as u64) as usize] += 1;
        }
        let (mut ns, mut at_least) = (from, kept);
        for &n in &counts[..COUNTED] {
            if !over(at_least) {
                break;
            }
            (ns, at_least) = (ns.saturating_add(1), at_least - n);
        }
        (ns, at_least)
    };
    let proven = ns > floor.ns;
    let may_all_fit = proven && at_least.saturating_mul(fewest) as f64 <= floor.max_bytes as f64 * ROOM;
    let least = (kept + ties).saturating_mul(fewest);
    Some((decoded, Floor { ns: ns.max(from), proven, least, may_all_fit, ..floor }))
}

/// Durations counted from a floor to prove a higher one: a ceiling's worth at most.
const COUNTED: usize = 1 << 16;
