//! `--max-bytes`: a conversion within a byte budget, the threshold from the format's size model
//! ([`crate::budget`]); for a gzip-compressed output, tries measured by compressing.
//!
//! Where a sample of the rings estimates that every span fits, and the output can start over (a
//! file, not a pipe: [`StartOver`]), they are written first, stopping at the budget: where they
//! fit, that is the output, and no size model runs (a budget given as a safety net, above what
//! the dump takes, then costs what the conversion without it does); where they do not, the
//! output starts over and the model chooses the cut.
//!
//! Perfetto's and ftrace's models walk the spans above a floor (those a sample shows the budget
//! surely leaves out are not decoded) on a second thread, as this one decodes them into memory
//! for the render ([`crate::model`]'s streamed spans): their walks cost a quarter to a half of
//! the decode, so, where a core is free, the budget adds to the conversion's time mostly the
//! spans' round trip through memory.

use std::io::{self, Write};
use std::sync::Arc;

use super::{
    BudgetOutcome, ConvertError, Format, Input, KEPT_MAX_BYTES, Level, Prepared, Report, check_timeline, prepare,
    render,
};
use crate::budget::{self, Choice, Layout, Plan};
use crate::io::{Counted, StartOver};
use crate::model::{self, Anomalies, Filter, Threads, Timeline};

/// An output budget (`--max-bytes`): the output stays at or under `max_bytes`, leaving out the
/// shortest spans first (see [`crate::budget`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    /// The output's largest size, in bytes.
    pub max_bytes: u64,
    /// The output is gzip-compressed (a `.gz` name): the budget is of its compressed bytes, and
    /// the conversion compresses it (it writes gzip's bytes to an output that does not).
    pub gzip: bool,
}

/// The layout a budget costs `format` in, if it is a timeline format a budget applies to.
pub fn budget_layout(format: Format) -> Option<Layout> {
    match format {
        Format::Chrome(opts) => Some(Layout::Chrome(opts)),
        Format::Ftrace => Some(Layout::Ftrace),
        Format::Systrace => Some(Layout::Systrace),
        Format::Perfetto => Some(Layout::Perfetto),
        _ => None,
    }
}

/// Converts a dump in memory into `format` on `out`, as [`convert_bytes`](super::convert_bytes),
/// within `budget`: where the whole output would be larger, the spans shorter than a threshold
/// found from their durations are left out (their time counts in their callers' self time), and
/// a note says how many and below what duration.
pub fn convert_within(
    input: Input<'_>,
    format: Format,
    budget: Budget,
    out: &mut dyn StartOver,
) -> Result<Report, ConvertError> {
    let layout = budget_layout(format).ok_or(ConvertError::BudgetFormat)?;
    let Input { path, filter, .. } = input;
    let Prepared { trace, names, timebase, mut report } = prepare(input)?;
    let max = budget.max_bytes;
    let timeline = || Timeline::new(&trace, &names, timebase).filtered(filter);
    let shown = path.display();
    // Where a sample says every span fits with room, they are written first, stopping at the
    // budget: where they fit, that is the output, found without a size model; where they do not,
    // the output starts over.
    let sample = (!budget.gzip).then(|| budget::Sample::of(&timeline(), layout));
    let tried = sample.as_ref().is_some_and(|s| out.can_start_over() && whole_may_fit(s, max));
    if tried && let Some((found, written)) = whole_within(&timeline(), format, max, out)? {
        let outcome =
            BudgetOutcome { cut: None, predicted: written, written, whole: written, floor_ns: None, rewound: false };
        report.push(Level::Note, outcome.describe(&shown, budget));
        report.budget = Some(outcome);
        check_timeline(&timeline(), found, false, &mut report);
        return Ok(report);
    }
    // Decoded once: the size model walks the spans, then the render (or each try of a `.gz`).
    // The spans a sample shows the budget surely leaves out are not decoded (`budget::floor`),
    // unless the spans above that floor turn out to fit: then all of them are. Those above it
    // are walked on a second thread as they decode, where the model's walk is worth it
    // ([`decode_walking`]).
    let floor = sample.and_then(|s| budget::floor(&timeline(), max, &s));
    let walked = timeline();
    let beside = walks_beside_the_decode(layout);
    let decoding = floor.and_then(|floor| decode_walking(timeline(), &walked, filter, layout, floor, beside));
    let (above, walk) = match decoding {
        Some((tl, floor, walk)) => (Some((tl, floor)), walk),
        None => (None, None),
    };
    // The plan above the floor, and its choice where that holds for all the spans.
    let floored = above.as_ref().and_then(|(tl, floor)| {
        let plan = match walk {
            Some(walk) => walk.above_floor(tl, *floor),
            None => Plan::above(tl, filter, layout, *floor),
        };
        let choice = plan.choose(max, max).ok().filter(|choice| plan.exact(choice))?;
        Some((plan, choice))
    });
    let full;
    let (plan, chosen) = match floored {
        Some((plan, choice)) => (plan, Some(choice)),
        None => {
            let mut tl = timeline();
            tl.decoded = tl.decode_all(KEPT_MAX_BYTES).map(Arc::new);
            full = tl;
            (Plan::new(&full, filter, layout), None)
        }
    };
    let over = |least| ConvertError::Budget { path: path.into(), max_bytes: max, least };
    let (choice, found, written) = if budget.gzip {
        let (choice, found, gz) = compressed_within(&plan, format, max).map_err(|e| match e {
            Squeeze::Output(e) => ConvertError::Output(e),
            Squeeze::Least(least) => over(least),
        })?;
        out.write_all(&gz).and_then(|()| out.flush()).map_err(ConvertError::Output)?;
        (choice, found, gz.len() as u64)
    } else {
        let choice = chosen.map_or_else(|| plan.choose(max, max), Ok).map_err(over)?;
        let mut counted = Counted::new(out);
        let found = render(&plan.timeline(plan.cut(&choice, max)), format, &mut counted)
            .and_then(|found| counted.flush().map(|()| found));
        (choice, found.map_err(ConvertError::Output)?, counted.bytes)
    };
    let cut = plan.cut(&choice, max);
    let outcome = BudgetOutcome {
        cut,
        predicted: choice.bytes,
        written,
        whole: plan.whole(),
        floor_ns: plan.floor(),
        rewound: tried,
    };
    report.push(Level::Note, outcome.describe(&shown, budget));
    report.budget = Some(outcome);
    if written > max {
        report.push(
            Level::Error,
            format!(
                "{shown}: the output took {written} bytes, more than --max-bytes {max}: rtconv's size model for this \
                 format is wrong (please report it); convert with a smaller --max-bytes"
            ),
        );
    }
    let tl = plan.timeline(cut);
    check_timeline(&tl, found, false, &mut report);
    Ok(report)
}

/// `tl`'s spans above `floor` decoded into it on this thread, while another walks them for the
/// size model as they come (through `walked`, a timeline as `tl` is before the decode), if
/// `beside` (as [`walks_beside_the_decode`] says; else no walk yet): a walk of
/// a quarter to a half of the decode's time so adds little to the conversion's where a core is
/// free. The timeline decoded, the floor as the decode found it, and the walk (none where no
/// thread could be started); `None` where the spans above the floor take more memory than
/// `KEPT_MAX_BYTES`.
fn decode_walking<'w, 'a>(
    mut tl: Timeline<'a>,
    walked: &'w Timeline<'a>,
    filter: &'w Filter,
    layout: Layout,
    floor: budget::Floor,
    beside: bool,
) -> Option<(Timeline<'a>, budget::Floor, Option<Plan<'w, 'a>>)> {
    if !beside {
        let (decoded, floor) = budget::decode_above(&tl, layout, floor, KEPT_MAX_BYTES, None)?;
        tl.decoded = Some(Arc::new(decoded));
        return Some((tl, floor, None));
    }
    let (tap, spans) = model::stream();
    let (walk, decoded) = std::thread::scope(|scope| {
        let threads = Threads::streamed(walked, spans);
        let walker = std::thread::Builder::new()
            .name("rtconv-walk".into())
            .spawn_scoped(scope, move || Plan::walk_decoding(walked, filter, layout, &floor, threads));
        // Where no thread can be had, the decode sends nothing and the walk comes after it.
        let tap = walker.is_ok().then_some(tap);
        let decoded = budget::decode_above(&tl, layout, floor, KEPT_MAX_BYTES, tap.as_ref());
        // The walk's last message: it ends once it has every thread's.
        drop(tap);
        (walker.map(|walker| walker.join()), decoded)
    });
    let walk = match walk {
        Ok(Ok(walk)) => Some(walk),
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => None,
    };
    let (decoded, floor) = decoded?;
    tl.decoded = Some(Arc::new(decoded));
    Some((tl, floor, walk))
}

/// Whether the size model of `layout` walks the spans on a second thread as they decode:
/// Perfetto's and ftrace's, whose walks cost a quarter and a sixth of a conversion that keeps
/// about half the output (on the whole-program Lua trace, 512 M and 288 M instructions against
/// `-t`'s 1.95 G); not Chrome JSON's or systrace's, a fifteenth and a twentieth, too little to
/// win back handing the spans to another thread (Chrome JSON's budget took no less time that
/// way, and more CPU, measured when each batch was copied to the walk: docs/PERFORMANCE.md, "The
/// size model beside the decode"). And only where a core
/// may be free: not in a `batch` whose workers are as many as the cores (each converting a dump),
/// where a second thread would add its CPU to the batch's time.
fn walks_beside_the_decode(layout: Layout) -> bool {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let busy = rayon::current_thread_index().is_some() && rayon::current_num_threads() >= cores;
    matches!(layout, Layout::Perfetto | Layout::Ftrace) && cores > 1 && !busy
}

impl BudgetOutcome {
    /// The note on what the budget did, for the dump shown as `shown`.
    fn describe(&self, shown: &impl std::fmt::Display, budget: Budget) -> String {
        let (max, written, whole) = (budget.max_bytes, self.written, self.whole);
        let what = if budget.gzip { "compressed bytes" } else { "bytes" };
        match &self.cut {
            Some(c) => format!(
                "{shown}: {}; {written} {what} written (all the spans would take {}{whole} bytes{})",
                c.describe(),
                if self.floor_ns.is_some() { "more than " } else { "" },
                if budget.gzip { " before compression" } else { "" }
            ),
            None => format!("{shown}: every span fits --max-bytes {max}: {written} {what} written"),
        }
    }
}

/// Every span of `tl` written in `format` to `out`, stopping at `max` bytes: what the render
/// found and the bytes written where they fit; `None` where they do not, `out` started over.
fn whole_within(
    tl: &Timeline<'_>,
    format: Format,
    max: u64,
    out: &mut dyn StartOver,
) -> Result<Option<(Anomalies, u64)>, ConvertError> {
    let mut capped = Capped::new(&mut *out, max);
    match render(tl, format, &mut capped).and_then(|found| capped.flush().map(|()| found)) {
        Ok(found) if !capped.over => Ok(Some((found, capped.bytes))),
        Err(e) if !capped.over => Err(ConvertError::Output(e)),
        // Past the budget (a write refused, whatever the render made of it).
        _ => out.start_over().map(|()| None).map_err(ConvertError::Output),
    }
}

/// Whether `sample` estimates that every span fits in `max` bytes, with room ([`overshoot`]).
fn whole_may_fit(sample: &budget::Sample, max: u64) -> bool {
    sample.fewest_whole() as f64 * overshoot(sample.layout()) <= max as f64
}

/// What a whole output takes, at most, over its spans' fewest bytes as a sample estimates them
/// ([`budget::Sample::fewest_whole`]), for a conversion to try it first: measured on the
/// whole-program Lua trace (3.5 M spans) and the workload sample, Perfetto 1.00 and 1.05, Chrome
/// JSON 1.02 to 1.06 (with its options), systrace 1.00; ftrace 1.41 and 1.32 (its lines' indents
/// and durations are wider than their fewest). Where an output takes more, the try stops at the budget and the size
/// model runs after all.
fn overshoot(layout: Layout) -> f64 {
    match layout {
        Layout::Ftrace => 1.5,
        Layout::Chrome(_) | Layout::Systrace | Layout::Perfetto => 1.1,
    }
}

/// Why a budget of compressed bytes could not be met.
enum Squeeze {
    /// Writing failed.
    Output(io::Error),
    /// Not even an output without spans fits; it takes this many bytes.
    Least(u64),
}

/// The largest rendering of `plan` in `format` whose gzip takes at most `max` bytes: its cut,
/// what its spans had wrong, and its compressed bytes. A compressed size is not known before
/// compressing: each try renders at the threshold the last try's compression ratio points to
/// (first a tenth: text traces compress 8 to 15 times), stopping as soon as the compressed bytes
/// pass `max`, and keeps the largest that fits; at most [`TRIES`] tries, the last at a size
/// that fits uncompressed.
fn compressed_within(plan: &Plan<'_, '_>, format: Format, max: u64) -> Result<(Choice, Anomalies, Vec<u8>), Squeeze> {
    let mut best: Option<(Choice, Anomalies, Vec<u8>)> = None;
    let mut target = plan.whole().min(max.saturating_mul(10));
    for attempt in 0..TRIES {
        if attempt == TRIES - 1 && best.is_none() {
            target = target.min(max);
        }
        let choice = match plan.choose(target, max) {
            Ok(choice) => choice,
            Err(least) if best.is_none() && least > max => return Err(Squeeze::Least(least)),
            Err(_) => break,
        };
        let cut = plan.cut(&choice, max);
        let mut gz = flate2::write::GzEncoder::new(Capped::new(Vec::new(), max), flate2::Compression::default());
        let mut counted = Counted::new(&mut gz);
        let rendered =
            render(&plan.timeline(cut), format, &mut counted).and_then(|found| counted.flush().map(|()| found));
        let uncompressed = counted.bytes;
        let finished = rendered.and_then(|found| gz.try_finish().map(|()| found));
        let capped = gz.get_ref();
        match finished {
            Ok(found) if !capped.over => {
                let compressed = capped.bytes;
                let keeps_more = best.as_ref().is_none_or(|b| choice.bytes > b.0.bytes);
                let done = cut.is_none() || compressed >= max - max / 50;
                let next = (choice.bytes as f64 * max as f64 / compressed.max(1) as f64 * 0.99) as u64;
                if keeps_more {
                    best = Some((choice, found, gz.finish().map_err(Squeeze::Output)?.out));
                }
                if done || next <= choice.bytes {
                    break;
                }
                target = next;
            }
            Err(e) if !capped.over => return Err(Squeeze::Output(e)),
            // Past the budget after `uncompressed` bytes: what fitted is about the size to aim for.
            _ => {
                let next = uncompressed - uncompressed / 32;
                if best.as_ref().is_some_and(|b| next <= b.0.bytes) {
                    break;
                }
                target = next;
            }
        }
    }
    best.ok_or(Squeeze::Least(max.saturating_add(1)))
}

/// Tries [`compressed_within`] makes at most.
const TRIES: usize = 5;

/// A writer that stops taking bytes once `out` would hold more than `cap`.
struct Capped<W> {
    out: W,
    /// Bytes written.
    bytes: u64,
    cap: u64,
    /// A write was refused.
    over: bool,
}

impl<W: Write> Capped<W> {
    fn new(out: W, cap: u64) -> Self {
        Capped { out, bytes: 0, cap, over: false }
    }
}

impl<W: Write> Write for Capped<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.bytes + bytes.len() as u64 > self.cap {
            self.over = true;
            return Err(io::Error::other("over the budget"));
        }
        self.out.write_all(bytes)?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufWriter;
    use std::sync::Arc;

    use super::{Budget, Input, KEPT_MAX_BYTES, convert_within, render};
    use crate::budget::{self, Plan};
    use crate::convert::Format;
    use crate::io::{AtomicFile, Once, StartOver};
    use crate::model::test_dumps::{TestRing, dump_of, nested, records, with_rings};
    use crate::model::{Filter, Timeline};
    use crate::render::chrome;

    /// The timeline formats a budget applies to.
    fn formats() -> [Format; 5] {
        [
            Format::Chrome(chrome::Options::default()),
            Format::Chrome(chrome::Options { begin_end: true, args: true }),
            Format::Perfetto,
            Format::Ftrace,
            Format::Systrace,
        ]
    }

    /// Two threads of random call trees, one with ties of start and end times.
    fn rings() -> Vec<TestRing> {
        [(3, false), (4, true)]
            .map(|(seed, ties)| {
                let spans = records(&nested(seed, 15_000, ties));
                TestRing { written: spans.len() as u64, records: spans, dropped: 0, open: Vec::new() }
            })
            .into()
    }

    #[test]
    fn every_span_is_written_first_where_a_sample_says_they_fit_and_started_over_where_they_do_not() {
        let dump = dump_of(&rings(), 1 << 40);
        let none = Filter::default();
        let (opts, cache) = (crate::symbolize::Options::default(), crate::symbolize::Cache::default());
        let input = || Input::new("t.rtd".as_ref(), &dump, &opts, &none, &cache);
        // The timeline as the conversion reads and names it.
        let super::Prepared { trace, names, timebase, .. } = super::prepare(input()).unwrap();
        let tl = Timeline::new(&trace, &names, timebase);
        // Converted to an output that can start over, and to one that cannot (the size model
        // alone, as for a pipe): the output and what the budget did.
        let convert = |format, max_bytes, out: &mut dyn StartOver| {
            let report = convert_within(input(), format, Budget { max_bytes, gzip: false }, out).unwrap();
            report.budget.unwrap()
        };
        let dir = std::env::temp_dir().join(format!("rtconv-first-try-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut rewound = 0;
        for format in formats() {
            let layout = super::budget_layout(format).unwrap();
            let mut whole = Vec::new();
            render(&tl, format, &mut whole).unwrap();
            let whole = whole.len() as u64;
            // The budget a sample's estimate just admits, and budgets around the whole.
            let sample = budget::Sample::of(&tl, layout);
            let admitted = (sample.fewest_whole() as f64 * super::overshoot(layout)).ceil() as u64;
            for max in [admitted, whole - 1, whole, u64::MAX] {
                let (mut first, mut model) = (Vec::new(), Once(Vec::new()));
                let tried = convert(format, max, &mut first);
                let said = convert(format, max, &mut model);
                assert!(first == model.0, "{format:?} at {max}: the same output either way");
                assert_eq!((tried.cut, tried.written), (said.cut, said.written), "{format:?} at {max}");
                assert!(!said.rewound, "{format:?} at {max}: an output that cannot start over is not tried");
                // Tried where the sample admits the budget; started over where the whole does not fit.
                let admits = super::whole_may_fit(&sample, max);
                assert_eq!(admits, max >= admitted, "{format:?} at {max}");
                assert_eq!(tried.rewound, admits && whole > max, "{format:?} at {max}: {tried:?}");
                assert_eq!(tried.cut.is_none(), whole <= max, "{format:?} at {max}");
                if tried.cut.is_none() {
                    // Found without the model: what was written is what it says.
                    assert_eq!((tried.predicted, tried.whole), (whole, whole), "{format:?} at {max}");
                }
                if tried.rewound {
                    // A file written under a temporary name (as the command line writes one)
                    // starts over the same way: what it holds is what the size model wrote.
                    let target = dir.join(format!("out-{rewound}"));
                    let mut file = BufWriter::new(AtomicFile::create(&target).unwrap());
                    assert!(convert(format, max, &mut file).rewound);
                    file.into_inner().unwrap().commit().unwrap();
                    assert!(std::fs::read(&target).unwrap() == first, "{format:?} at {max}: the file");
                }
                rewound += usize::from(tried.rewound);
            }
        }
        // These trees take more than their fewest bytes by more than the room the estimate
        // gives in some format (ftrace's indents: the rings state no depths).
        assert!(rewound >= 1, "a budget admitted that the whole output does not fit");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_model_walks_beside_the_decode_only_where_a_core_may_be_free() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let beside = |layout| super::walks_beside_the_decode(layout);
        assert_eq!(beside(budget::Layout::Perfetto), cores > 1);
        assert_eq!(beside(budget::Layout::Ftrace), cores > 1);
        assert!(!beside(budget::Layout::Systrace));
        // A batch's workers, as many as the cores: each has a dump of its own to convert.
        let pool = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap();
        assert!(!pool(cores).install(|| beside(budget::Layout::Perfetto)));
        if cores > 1 {
            assert!(pool(cores - 1).install(|| beside(budget::Layout::Perfetto)));
        }
    }

    #[test]
    fn a_floor_chooses_and_writes_what_decoding_every_span_does() {
        let formats = formats();
        let rings = rings();
        let none = Filter::default();
        with_rings(&rings, 1 << 40, |tl| {
            let timeline = || Timeline::new(tl.trace, tl.names, tl.timebase).filtered(&none);
            let mut all = timeline();
            all.decoded = all.decode_all(KEPT_MAX_BYTES).map(Arc::new);
            for format in formats {
                let layout = super::budget_layout(format).unwrap();
                let full = Plan::new(&all, &none, layout);
                let (mut floored, mut exact, mut proven, mut all_fit) = (0, 0, 0, 0);
                // Walks as the spans decode that sized no threshold, where the floor was not proven
                // and where the spans above it did not all fit.
                let (mut unsized_unproven, mut unsized_over) = (0, 0);
                for fraction in [0.5, 0.2, 0.1, 0.03, 0.01, 0.002] {
                    let max = (full.whole() as f64 * fraction) as u64;
                    let expected = full.choose(max, max);
                    let Some(floor) = budget::floor(&timeline(), max, &budget::Sample::of(&timeline(), layout)) else {
                        continue;
                    };
                    let (floor_ns, first) = (floor.ns, floor);
                    floored += 1;
                    let mut above = timeline();
                    // As the conversion does: Perfetto's floor past the spans as long as it where
                    // their count proves it.
                    let (decoded, floor) = budget::decode_above(&above, layout, floor, KEPT_MAX_BYTES, None).unwrap();
                    proven += usize::from(floor.proven);
                    all_fit += usize::from(floor.may_all_fit);
                    above.decoded = Some(Arc::new(decoded));
                    let plan = Plan::above(&above, &none, layout, floor);
                    let choice = plan.choose(max, max);
                    // Walked as the spans decode (as the conversion does), from the floor as
                    // the sample estimates it, sized or not whatever the estimate: the same choice,
                    // exact or not, and the same whole.
                    let other = budget::Floor { may_all_fit: !first.may_all_fit, ..first };
                    for estimate in if layout == budget::Layout::Perfetto { vec![first, other] } else { vec![first] } {
                        let walked = timeline();
                        let (tl, decoding, walk) =
                            super::decode_walking(timeline(), &walked, &none, layout, estimate, true).unwrap();
                        assert_eq!(decoding, floor, "{format:?} at {max}");
                        let walk = walk.unwrap();
                        unsized_unproven += usize::from(estimate.may_all_fit && !floor.proven);
                        unsized_over += usize::from(estimate.may_all_fit && floor.proven && !floor.may_all_fit);
                        let streamed = walk.above_floor(&tl, decoding);
                        let streamed_choice = streamed.choose(max, max);
                        assert_eq!(
                            streamed_choice, choice,
                            "{format:?} at {max}: walked as they decode, {estimate:?} {floor:?}"
                        );
                        assert_eq!(
                            streamed_choice.map(|c| streamed.exact(&c)),
                            choice.map(|c| plan.exact(&c)),
                            "{format:?} at {max}"
                        );
                        assert_eq!(streamed.whole(), plan.whole(), "{format:?} at {max}");
                    }
                    if !choice.is_ok_and(|c| plan.exact(&c)) {
                        continue;
                    }
                    exact += 1;
                    assert_eq!(choice, expected, "{format:?} at {max}: floor {floor_ns} ns");
                    let Ok(choice) = choice else { continue };
                    let written = |plan: &Plan<'_, '_>| {
                        let mut out = Vec::new();
                        let found = render(&plan.timeline(plan.cut(&choice, max)), format, &mut out).unwrap();
                        (out, found)
                    };
                    assert!(written(&plan) == written(&full), "{format:?} at {max}: floor {floor_ns} ns");
                }
                // The floor is found and holds for the smaller budgets at least.
                assert!(floored >= 4 && exact >= 4, "{format:?}: {floored} floors, {exact} exact");
                if format == Format::Perfetto {
                    // Both of Perfetto's ways above a proven floor: every span tried first, or not.
                    assert!(proven >= 2 && all_fit >= 1 && all_fit < proven, "{format:?}: {proven} proven, {all_fit}");
                    assert!(unsized_over >= 1, "{unsized_over}");
                }
                // Its spans are kept within the memory given, whatever was expected of them.
                assert!(timeline().decode_above(32 * 1000, 1, 10, None).is_none(), "{format:?}");
                // A floor too high (a twentieth's): everything above it fits, which is not exact.
                let max = full.whole() / 10;
                let high = budget::floor(&timeline(), max / 20, &budget::Sample::of(&timeline(), layout)).unwrap();
                let mut above = timeline();
                above.decoded = above.decode_above(KEPT_MAX_BYTES, high.ns, 0, None).map(Arc::new);
                let plan = Plan::above(&above, &none, layout, high);
                if layout == budget::Layout::Perfetto {
                    // Walked as the spans decode, sized or not: what the floor's plan chooses (for
                    // the budget chosen at, the floor unproven).
                    let high = budget::Floor { max_bytes: max, ..high };
                    let mut decoded = timeline();
                    let (spans, floor) = budget::decode_above(&decoded, layout, high, KEPT_MAX_BYTES, None).unwrap();
                    assert!(!floor.proven);
                    decoded.decoded = Some(Arc::new(spans));
                    let expected = Plan::above(&decoded, &none, layout, floor);
                    for may_all_fit in [false, true] {
                        let walked = timeline();
                        let estimate = budget::Floor { may_all_fit, ..high };
                        let (tl, decoding, walk) =
                            super::decode_walking(timeline(), &walked, &none, layout, estimate, true).unwrap();
                        let walk = walk.unwrap();
                        unsized_unproven += usize::from(may_all_fit && !decoding.proven);
                        let streamed = walk.above_floor(&tl, decoding);
                        let choice = streamed.choose(max, max);
                        assert_eq!(choice, expected.choose(max, max), "{may_all_fit}");
                        assert!(!streamed.exact(&choice.unwrap()), "{may_all_fit}");
                        // Where the spans above the floor do not all fit: a threshold above it.
                        let less = expected.whole() / 2;
                        let choice = streamed.choose(less, less);
                        assert_eq!(choice, expected.choose(less, less), "{may_all_fit}");
                        assert!(streamed.exact(&choice.unwrap()), "{may_all_fit}");
                    }
                    assert_eq!(unsized_unproven, 1);
                }
                let high = high.ns;
                let choice = plan.choose(max, max).unwrap();
                assert_eq!(choice.threshold_ns, Some(high), "{format:?}");
                assert!(!plan.exact(&choice), "{format:?}: a floor of {high} ns at {max}");
                assert!(full.choose(max, max).unwrap().threshold_ns < Some(high), "{format:?}");
            }
        });
    }
}
