//! Which spans an output keeps: uftrace's filters (`-F`, `-N`, `--tid`,
//! `--time-range`, `-D`, `-t`), applied as the spans stream past, one
//! decision per span from the path of spans around it.
//!
//! A span is kept when all of these hold, and every span it lies in is
//! visible to the rules about its callers:
//! - its thread is one asked for (`--tid`, `--thread`), if any were;
//! - with `-F`, it or a span around it is of a matching function;
//! - with `-N`, neither it nor a span around it is;
//! - with `-D N`, at most N−1 spans around it count towards depth: those
//!   within a `-F` match (or all, without `-F`), so the matched function is at depth 1;
//! - with `--time-range`, it overlaps the range;
//! - with `-t DUR`, it lasts at least DUR.
//!
//! The spans left out are as if they had not been recorded: a kept span's
//! self time includes the time of its children left out. What was left out
//! is counted per rule ([`Filtered`]), the first rule that failed.

use regex::Regex;

use super::timeline::{SpanNs, Timeline};
use super::walk::outside;

/// The filters asked for; the default keeps everything.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// `-F`: keep these functions and what they call.
    pub functions: Vec<NamePattern>,
    /// `-N`: leave out these functions and what they call.
    pub excluded: Vec<NamePattern>,
    /// `--tid`: keep these threads (by thread id).
    pub tids: Vec<u64>,
    /// `--thread`: keep these threads (by name).
    pub thread_names: Vec<String>,
    /// `--time-range`: keep spans overlapping this range.
    pub time_range: Option<TimeRange>,
    /// `-D`: keep spans at most this deep (1: the outermost kept).
    pub depth: Option<u32>,
    /// `-t`: keep spans lasting at least this many ns.
    pub min_duration_ns: Option<u64>,
}

impl Filter {
    /// Whether this keeps every span.
    pub fn is_none(&self) -> bool {
        self.functions.is_empty()
            && self.excluded.is_empty()
            && self.tids.is_empty()
            && self.thread_names.is_empty()
            && self.time_range.is_none()
            && self.depth.is_none()
            && self.min_duration_ns.is_none()
    }

    /// The filters as options would give them (`-F main -D 2`), for a report.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        parts.extend(self.functions.iter().map(|p| format!("-F {}", p.text)));
        parts.extend(self.excluded.iter().map(|p| format!("-N {}", p.text)));
        parts.extend(self.tids.iter().map(|t| format!("--tid {t}")));
        parts.extend(self.thread_names.iter().map(|t| format!("--thread {t}")));
        if let Some(r) = &self.time_range {
            parts.push(format!("--time-range {}", r.text));
        }
        if let Some(d) = self.depth {
            parts.push(format!("-D {d}"));
        }
        if let Some(t) = self.min_duration_ns {
            parts.push(format!("-t {t}ns"));
        }
        parts.join(" ")
    }
}

/// A function name pattern (`-F`, `-N`): a regular expression matched
/// against the whole name, where the name's leading path (`ns::`,
/// `crate::module::`) and trailing parameter list (`(int, char)`) may be
/// left out — `-F fib` matches `fib`, `workload::fib` and `fib(int)`, not
/// `fibonacci`; `-F 'parse_.*'` matches `json::parse_value`.
#[derive(Clone, Debug)]
pub struct NamePattern {
    text: String,
    regex: Regex,
}

impl NamePattern {
    /// The pattern `text`; an error says what is wrong with the expression.
    pub fn new(text: &str) -> Result<Self, String> {
        // Checked as given first, so an error shows the user's pattern, not the anchored one.
        Regex::new(text).map_err(|e| format!("{text:?} is not a regular expression: {e}"))?;
        let anchored = format!(r"^(?:.*::)?(?:{text})(?:\(.*\).*)?$");
        let regex = Regex::new(&anchored).map_err(|e| format!("{text:?} is not a regular expression: {e}"))?;
        Ok(NamePattern { text: text.to_string(), regex })
    }

    /// Whether `name` matches.
    pub fn matches(&self, name: &str) -> bool {
        self.regex.is_match(name)
    }
}

/// `--time-range START..END`.
#[derive(Clone, Debug)]
pub struct TimeRange {
    text: String,
    start: Option<TimePoint>,
    end: Option<TimePoint>,
}

/// One end of a [`TimeRange`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TimePoint {
    /// Since the dump's first span, ns (`10ms`).
    Elapsed(i64),
    /// On the dump's monotonic clock, ns (`12345.678901`, seconds, as ftrace output shows it).
    Absolute(i64),
}

impl TimeRange {
    /// Parses `START..END` (either may be left out): a time with a unit
    /// (`ns`, `us`, `µs`, `ms`, `s`) counts from the dump's first span; a
    /// bare number is a timestamp in seconds on the dump's monotonic clock,
    /// as ftrace output prints it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some((start, end)) = text.split_once("..") else {
            return Err(format!(
                "{text:?}: give START..END, e.g. 10ms..20ms or 12345.6..12346 (either may be left out)"
            ));
        };
        let point = |s: &str| -> Result<Option<TimePoint>, String> {
            let s = s.trim();
            if s.is_empty() {
                return Ok(None);
            }
            let bad = || {
                format!(
                    "{s:?} in --time-range: give a time with a unit (10ms, 250us) from the dump's first span, \
                     or a timestamp in seconds (12345.678901)"
                )
            };
            if s.ends_with(|c: char| c.is_ascii_digit()) {
                parse_seconds_ns(s).map(|ns| Some(TimePoint::Absolute(ns))).ok_or_else(bad)
            } else {
                let ns = parse_duration_ns(s).map_err(|_| bad())?;
                Ok(Some(TimePoint::Elapsed(i64::try_from(ns).unwrap_or(i64::MAX))))
            }
        };
        Ok(TimeRange { text: text.to_string(), start: point(start)?, end: point(end)? })
    }

    /// The range in monotonic ns, for a dump whose first span starts at `origin_ns`.
    fn resolve(&self, origin_ns: i64) -> (i64, i64) {
        let at = |p: TimePoint| match p {
            TimePoint::Elapsed(ns) => origin_ns.saturating_add(ns),
            TimePoint::Absolute(ns) => ns,
        };
        (self.start.map_or(i64::MIN, at), self.end.map_or(i64::MAX, at))
    }
}

/// A duration: a number with a unit (`ns`, `us`, `µs`, `ms`, `s`; a bare
/// number is ns), fractions allowed (`1.5ms`).
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale: u64 = match unit.trim() {
        "" | "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(format!("{text:?}: give a duration such as 500ns, 10us, 1.5ms or 2s")),
    };
    let bad = || format!("{text:?}: give a duration such as 500ns, 10us, 1.5ms or 2s");
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| bad())? };
    let mut ns = whole.checked_mul(scale).ok_or_else(bad)?;
    // The fraction's digits, as far as the unit resolves them.
    let mut place = scale;
    for digit in fraction.chars() {
        let d = digit.to_digit(10).ok_or_else(bad)?;
        place /= 10;
        ns = ns.checked_add(u64::from(d) * place).ok_or_else(bad)?;
    }
    Ok(ns)
}

/// Seconds with up to nine decimals (`12345.678901`) in ns.
fn parse_seconds_ns(text: &str) -> Option<i64> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if whole.is_empty() || fraction.len() > 9 || !fraction.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let whole: i64 = whole.parse().ok()?;
    let fraction: i64 = if fraction.is_empty() { 0 } else { format!("{fraction:0<9}").parse().ok()? };
    whole.checked_mul(1_000_000_000)?.checked_add(fraction)
}

/// Spans left out, by the first rule they failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Filtered {
    /// Spans kept.
    pub kept: u64,
    /// On threads not asked for.
    pub thread: u64,
    /// Of functions outside `-F`, or within `-N`.
    pub function: u64,
    /// Deeper than `-D`.
    pub depth: u64,
    /// Outside `--time-range`.
    pub time: u64,
    /// Shorter than `-t`.
    pub duration: u64,
}

impl Filtered {
    /// Spans left out.
    pub fn left_out(&self) -> u64 {
        self.thread + self.function + self.depth + self.time + self.duration
    }

    /// What the output's metadata says of a filter given as `options`:
    /// `{"options":…,"kept":…,"left_out":{"thread":…,"function":…,"depth":…,"time_range":…,"duration":…}}`.
    pub fn to_json(&self, options: &str) -> serde_json::Value {
        serde_json::json!({
            "options": options,
            "kept": self.kept,
            "left_out": {
                "thread": self.thread, "function": self.function, "depth": self.depth,
                "time_range": self.time, "duration": self.duration,
            },
        })
    }
}

impl std::ops::AddAssign for Filtered {
    fn add_assign(&mut self, o: Filtered) {
        self.kept += o.kept;
        self.thread += o.thread;
        self.function += o.function;
        self.depth += o.depth;
        self.time += o.time;
        self.duration += o.duration;
    }
}

/// What an output budget (`--max-bytes`) left out: every span shorter than
/// `threshold_ns` beyond what the filters left out, so the output fits `max_bytes`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cut {
    /// The budget, bytes.
    pub max_bytes: u64,
    /// Spans shorter than this many ns were left out (`-t` of the output).
    pub threshold_ns: u64,
    /// Spans the budget left out (the filters kept them).
    pub left_out: u64,
}

impl Cut {
    /// What the output's metadata says of it: `{"max_bytes":…,"threshold_ns":…,"left_out":…}`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "max_bytes": self.max_bytes, "threshold_ns": self.threshold_ns, "left_out": self.left_out,
        })
    }

    /// The line a text output's header and `rtconv`'s note give it.
    pub fn describe(&self) -> String {
        format!(
            "--max-bytes {}: left out {} span(s) shorter than {} ns (their time counts in their callers' self time)",
            self.max_bytes, self.left_out, self.threshold_ns
        )
    }
}

const MATCHES_FUNCTION: u8 = 1;
const MATCHES_EXCLUDED: u8 = 2;

/// A [`Filter`] applied to one timeline: what it says of each key and thread.
#[derive(Clone, Debug)]
pub struct Selection {
    /// The filter, as given.
    pub filter: Filter,
    /// Per key index: `MATCHES_*` bits.
    keys: Vec<u8>,
    /// Per thread index: kept.
    threads: Vec<bool>,
    /// The time range in monotonic ns, `[start, end)`.
    range: (i64, i64),
}

impl Selection {
    /// `filter` over `tl`'s keys (each name matched once) and threads.
    pub fn new(filter: &Filter, tl: &Timeline<'_>) -> Self {
        let keys = (0..tl.keys.len())
            .map(|k| {
                let name = tl.name(k);
                let mut bits = 0;
                if filter.functions.iter().any(|p| p.matches(name)) {
                    bits |= MATCHES_FUNCTION;
                }
                if filter.excluded.iter().any(|p| p.matches(name)) {
                    bits |= MATCHES_EXCLUDED;
                }
                bits
            })
            .collect();
        let any_thread = filter.tids.is_empty() && filter.thread_names.is_empty();
        let threads = tl
            .trace
            .threads
            .iter()
            .map(|t| any_thread || filter.tids.contains(&t.tid) || filter.thread_names.contains(&t.name))
            .collect();
        let range = filter.time_range.as_ref().map_or((i64::MIN, i64::MAX), |r| r.resolve(tl.origin_ns));
        Selection { filter: filter.clone(), keys, threads, range }
    }

    /// Whether thread `index` is kept.
    pub fn thread(&self, index: usize) -> bool {
        self.threads.get(index).copied().unwrap_or(false)
    }
}

/// A span the gate has seen and that is still open.
#[derive(Clone, Copy)]
struct Open {
    enter: i64,
    end: i64,
    depth_tag: u8,
    /// Within a `-F` match (always, without `-F`).
    in_scope: bool,
    /// Within a `-N` match.
    excluded: bool,
    /// Spans within the `-F` scope on its path, itself included.
    depth: u32,
}

/// Decides, span by span in pre-order, which spans of one thread a
/// [`Selection`] keeps; counts the rest.
pub(crate) struct Gate<'s> {
    selection: &'s Selection,
    open: Vec<Open>,
    pub(crate) counts: Filtered,
    /// No rule looks at a span's callers (no `-F`, `-N` or `-D`): spans already cut at their
    /// parents' end need no stack ([`keep_cut`](Self::keep_cut)).
    callers_unread: bool,
    /// The spans [`keep_cut_counting`](Self::keep_cut_counting) left out that last at least
    /// `near_ns`.
    pub(crate) near: u64,
    near_ns: u64,
}

impl<'s> Gate<'s> {
    pub(crate) fn new(selection: &'s Selection) -> Self {
        let f = &selection.filter;
        let callers_unread = f.functions.is_empty() && f.excluded.is_empty() && f.depth.is_none();
        Gate { selection, open: Vec::new(), counts: Filtered::default(), callers_unread, near: 0, near_ns: u64::MAX }
    }

    /// As [`new`](Self::new), for [`keep_cut_counting`](Self::keep_cut_counting) to count the
    /// spans it leaves out that last at least `near_ns`.
    pub(crate) fn counting(selection: &'s Selection, near_ns: u64) -> Self {
        Gate { near_ns, ..Self::new(selection) }
    }

    /// Whether it keeps every span lasting at least `ns`, whatever else it is: no rule but
    /// `-t`, and that no longer.
    pub(crate) fn keeps_all_lasting(&self, ns: u64) -> bool {
        self.callers_unread
            && self.selection.range == (i64::MIN, i64::MAX)
            && self.selection.filter.min_duration_ns.is_none_or(|min| min <= ns)
    }

    /// The shortest duration it keeps, where that is its only rule (no callers read, no time
    /// range): a span is kept exactly when it lasts at least this long.
    pub(crate) fn duration_alone(&self) -> Option<u64> {
        let alone = self.callers_unread && self.selection.range == (i64::MIN, i64::MAX);
        alone.then_some(self.selection.filter.min_duration_ns).flatten()
    }

    /// Appends to `into` the spans of `spans` lasting at least `min`, its
    /// [`duration_alone`](Self::duration_alone), counting them (and those left out, `NEAR`: also
    /// in `near`) as [`keep_cut_counting`](Self::keep_cut_counting) would. Each span is written
    /// where the next kept one goes, whether it is kept or not: no branch on its duration.
    pub(crate) fn keep_lasting<const NEAR: bool>(&mut self, spans: &[SpanNs], min: u64, into: &mut Vec<SpanNs>) {
        into.reserve(spans.len());
        let room = &mut into.spare_capacity_mut()[..spans.len()];
        let (mut kept, mut near) = (0, 0);
        for s in spans {
            let d = s.duration_ns();
            // `kept` is at most the spans seen before this one, so within `room`.
            if let Some(slot) = room.get_mut(kept) {
                slot.write(*s);
            }
            kept += usize::from(d >= min);
            if NEAR {
                near += u64::from(d >= self.near_ns && d < min);
            }
        }
        let len = into.len() + kept;
        // SAFETY: `len` is within the capacity reserved (`kept` ≤ `spans.len()`), and the `kept`
        // slots past the old length were each written (above) before `kept` passed them.
        unsafe { into.set_len(len) };
        self.counts.kept += kept as u64;
        self.counts.duration += (spans.len() - kept) as u64;
        self.near += near;
    }

    /// A new thread begins.
    pub(crate) fn reset(&mut self) {
        self.open.clear();
    }

    /// Whether the next span (in pre-order, `NEWEST_FIRST` as the walks
    /// say) is kept. Every span passes through here, kept or not.
    #[inline]
    pub(crate) fn keep<const NEWEST_FIRST: bool>(
        &mut self,
        enter: i64,
        exit: i64,
        key_index: u32,
        depth_tag: u8,
    ) -> bool {
        while self.open.last().is_some_and(|o| outside((o.enter, o.end, o.depth_tag), enter, depth_tag, NEWEST_FIRST)) {
            self.open.pop();
        }
        let filter = &self.selection.filter;
        let bits = self.selection.keys.get(key_index as usize).copied().unwrap_or(0);
        let parent = self.open.last().copied();
        let in_scope =
            filter.functions.is_empty() || bits & MATCHES_FUNCTION != 0 || parent.is_some_and(|p| p.in_scope);
        let excluded = bits & MATCHES_EXCLUDED != 0 || parent.is_some_and(|p| p.excluded);
        let depth = if in_scope { parent.map_or(0, |p| p.depth) + 1 } else { 0 };
        let end = parent.map_or(exit, |p| exit.min(p.end));
        self.open.push(Open { enter, end, depth_tag, in_scope, excluded, depth });
        if excluded || !in_scope {
            self.counts.function += 1;
            false
        } else if filter.depth.is_some_and(|max| depth > max) {
            self.counts.depth += 1;
            false
        } else {
            self.keep_in_time::<false>(enter, end)
        }
    }

    /// The rules on a span's own times (the range, then `-t`), its end cut at its parent's:
    /// counts it where it is kept or left out (`NEAR`: also in `near`, where `-t` leaves it out
    /// and it lasts at least `near_ns`).
    #[inline(always)]
    fn keep_in_time<const NEAR: bool>(&mut self, enter: i64, end: i64) -> bool {
        let (start, stop) = self.selection.range;
        let min = self.selection.filter.min_duration_ns;
        let counts = &mut self.counts;
        let counter = if !(enter < stop && (end > start || enter >= start)) {
            &mut counts.time
        } else if min.is_some_and(|min| (end.saturating_sub(enter).max(0) as u64) < min) {
            if NEAR {
                self.near += u64::from(end.saturating_sub(enter).max(0) as u64 >= self.near_ns);
            }
            &mut counts.duration
        } else {
            counts.kept += 1;
            return true;
        };
        *counter += 1;
        false
    }

    /// Whether it counts the spans it leaves out near its `-t` ([`counting`](Self::counting)).
    pub(crate) fn counts_near(&self) -> bool {
        self.near_ns != u64::MAX
    }

    /// [`keep_cut`](Self::keep_cut), counting in `near` the spans left out that last at least
    /// `near_ns` ([`counting`](Self::counting)).
    #[inline]
    pub(crate) fn keep_cut_counting(&mut self, s: &SpanNs) -> bool {
        if self.callers_unread {
            return self.keep_in_time::<true>(s.enter_ns, s.exit_ns);
        }
        let keep = self.keep::<false>(s.enter_ns, s.exit_ns, s.key_index, s.depth_tag());
        if !keep {
            self.near += u64::from(s.duration_ns() >= self.near_ns);
        }
        keep
    }

    /// [`keep`](Self::keep) for the next span in start order, cut at its parent's end as
    /// [`ThreadSpans`](super::start_order::ThreadSpans) lends them: where no rule looks at its
    /// callers, decided from its own times alone, with no stack.
    #[inline]
    pub(crate) fn keep_cut(&mut self, s: &SpanNs) -> bool {
        if self.callers_unread {
            self.keep_in_time::<false>(s.enter_ns, s.exit_ns)
        } else {
            self.keep::<false>(s.enter_ns, s.exit_ns, s.key_index, s.depth_tag())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::start_order::Threads;
    use super::super::test_dumps::{nested, nested_tree, records, with_dump};
    use super::*;

    #[test]
    fn every_walk_keeps_the_spans_the_rules_say() {
        // A random call tree over four keys: 1 is -F's, 2 is -N's; also a depth, a
        // duration and a time range. What each span's ancestors make of it, worked out
        // from the tree as it was built, against what the walks and the start-order
        // decoding keep (a ring read newest first, and the same spans shuffled).
        let (mut spans, parents) = nested_tree(11, 4_000, false);
        // Keys 1 (-F) and 2 (-N) one span in sixteen each.
        for (i, s) in spans.iter_mut().enumerate() {
            s.key_index = match (i as u32).wrapping_mul(2_654_435_761) % 16 {
                0 => 1,
                1 => 2,
                k => k % 2 * 3,
            };
        }
        let chain = |mut i: usize| {
            let mut up = vec![i];
            while let Some(p) = parents[i] {
                up.push(p);
                i = p;
            }
            up
        };
        let in_scope = |i: usize| chain(i).iter().any(|&j| spans[j].key_index == 1);
        let origin = spans.iter().map(|s| s.enter_ns).min().unwrap();
        let (lo, hi) = (origin + 1_000, origin + 12_000);
        let expected: std::collections::BTreeSet<(i64, i64, u32)> = (0..spans.len())
            .filter(|&i| {
                let s = &spans[i];
                let depth = chain(i).into_iter().filter(|&j| in_scope(j)).count();
                in_scope(i)
                    && !chain(i).iter().any(|&j| spans[j].key_index == 2)
                    && depth <= 4
                    && s.enter_ns < hi
                    && s.exit_ns > lo
                    && s.exit_ns - s.enter_ns >= 3
            })
            .map(|i| (spans[i].enter_ns, spans[i].exit_ns, spans[i].key_index))
            .collect();
        assert!(expected.len() > 50 && expected.len() < spans.len() / 4, "{} kept", expected.len());
        let mut shuffled = spans.clone();
        shuffled.reverse();
        shuffled.swap(10, 2_000);
        let pattern = |text| NamePattern::new(text).unwrap();
        let filter = Filter {
            functions: vec![pattern("f")],
            excluded: vec![pattern("n")],
            depth: Some(4),
            min_duration_ns: Some(3),
            ..Filter::default()
        };
        for ring in [records(&spans), records(&shuffled)] {
            with_dump(&[ring], |tl| {
                let selection = Selection {
                    filter: filter.clone(),
                    keys: vec![0, MATCHES_FUNCTION, MATCHES_EXCLUDED, 0],
                    threads: vec![true],
                    range: (lo, hi),
                };
                let tl = Timeline { selection: Some(selection), key_table: tl.key_table.clone(), decoded: None, ..*tl };
                let mut arrived = std::collections::BTreeSet::new();
                let found = tl.arrivals(|a| {
                    arrived.insert((a.enter_ns, a.enter_ns + a.duration as i64, a.key_index));
                });
                assert_eq!(arrived, expected, "arrivals (nested ring: {})", tl.trace.threads[0].nested);
                assert_eq!(found.filtered.kept, expected.len() as u64);
                assert_eq!(found.filtered.kept + found.filtered.left_out(), spans.len() as u64);
                let mut walked = std::collections::BTreeSet::new();
                tl.walk(None, |v| {
                    walked.insert((v.enter_ns, v.enter_ns + v.duration as i64, *v.path.last().unwrap()));
                });
                assert_eq!(walked, expected, "walk");
                let mut threads = tl.threads();
                let decoded: std::collections::BTreeSet<_> = threads
                    .next()
                    .unwrap()
                    .to_vec()
                    .into_iter()
                    .map(|s| (s.enter_ns, s.exit_ns, s.key_index))
                    .collect();
                assert_eq!(decoded, expected, "start order");
                assert_eq!(threads.anomalies().filtered, found.filtered);
            });
        }
    }

    #[test]
    fn without_caller_rules_the_gate_keeps_cut_spans_as_its_stack_would() {
        // A ring that nests, and one whose children outlive their parents (sorted and cut
        // when decoded): in start order, each span ends by the end of the span around it, and
        // with only -t and a time range the gate that reads a span alone keeps and counts
        // exactly what the stacked gate does, which is what the rules say of each span.
        let (spans, parents) = nested_tree(5, 4_000, false);
        let mut outliving = spans.clone();
        for (i, s) in outliving.iter_mut().enumerate() {
            if let Some(p) = parents[i].filter(|_| i % 7 == 0) {
                s.exit_ns = spans[p].exit_ns + 5;
            }
        }
        let origin = spans.iter().map(|s| s.enter_ns).min().unwrap();
        let (lo, hi) = (origin + 1_000, origin + 12_000);
        for (ring, nests) in [(&spans, true), (&outliving, false)] {
            with_dump(&[records(ring)], |tl| {
                assert_eq!(tl.trace.threads[0].nested, nests);
                let filter = Filter { min_duration_ns: Some(3), ..Filter::default() };
                let selection = Selection { filter, keys: vec![0], threads: vec![true], range: (lo, hi) };
                let mut all = Threads::ungated(tl);
                let all = all.next().unwrap().to_vec();
                assert_eq!(all.len(), ring.len());
                assert_eq!(all.iter().filter(|s| s.clamped()).count() > 100, !nests);
                let mut around: Vec<&SpanNs> = Vec::new();
                for s in &all {
                    while around.last().is_some_and(|o| !o.encloses(s)) {
                        around.pop();
                    }
                    assert!(around.last().is_none_or(|o| s.exit_ns <= o.exit_ns), "{s:?} outlives {around:?}");
                    around.push(s);
                }
                let (mut alone, mut stacked) = (Gate::new(&selection), Gate::new(&selection));
                assert!(alone.callers_unread);
                let mut kept = 0;
                for s in &all {
                    let keep = alone.keep_cut(s);
                    assert_eq!(keep, stacked.keep::<false>(s.enter_ns, s.exit_ns, s.key_index, s.depth_tag()));
                    assert_eq!(keep, s.enter_ns < hi && s.exit_ns > lo && s.exit_ns - s.enter_ns >= 3, "{s:?}");
                    kept += u64::from(keep);
                }
                assert_eq!(alone.counts, stacked.counts);
                assert_eq!((alone.counts.kept, alone.counts.kept + alone.counts.left_out()), (kept, ring.len() as u64));
                assert!(kept > 50 && alone.counts.time > 0 && alone.counts.duration > 0, "{:?}", alone.counts);
            });
        }
    }

    #[test]
    fn keeping_spans_by_duration_alone_keeps_and_counts_what_the_gate_does_span_by_span() {
        // A random call tree (with ties), its spans appended in uneven runs, at every threshold
        // around its durations, near spans counted from below.
        let spans = nested(9, 5_000, true);
        with_dump(&[records(&spans)], |tl| {
            let all = Threads::ungated(tl).next().unwrap().to_vec();
            let mut durations: Vec<u64> = all.iter().map(SpanNs::duration_ns).collect();
            durations.sort_unstable();
            for min in [0, 1, durations[1_000], durations[2_500], durations[4_900], u64::MAX] {
                let filter = Filter { min_duration_ns: Some(min), ..Filter::default() };
                let selection = Selection::new(&filter, tl);
                let near_ns = min / 2;
                let (mut one_by_one, mut at_once) =
                    (Gate::counting(&selection, near_ns), Gate::counting(&selection, near_ns));
                assert_eq!(at_once.duration_alone(), Some(min));
                let expected: Vec<SpanNs> = all.iter().filter(|s| one_by_one.keep_cut_counting(s)).copied().collect();
                let mut kept = vec![all[0]]; // something there before, kept as it is
                for run in all.chunks(777) {
                    at_once.keep_lasting::<true>(run, min, &mut kept);
                }
                assert_eq!(kept[0], all[0]);
                assert_eq!(kept[1..], expected[..], "at {min} ns");
                assert_eq!((at_once.counts, at_once.near), (one_by_one.counts, one_by_one.near), "at {min} ns");
                assert!(min == 0 || min == u64::MAX || (expected.len() > 50 && one_by_one.near > 0), "{min}");
            }
        });
    }

    #[test]
    fn durations_and_timestamps_parse_as_written() {
        assert_eq!(parse_duration_ns("500"), Ok(500));
        assert_eq!(parse_duration_ns("10us"), Ok(10_000));
        assert_eq!(parse_duration_ns("10µs"), Ok(10_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns(".25s"), Ok(250_000_000));
        for bad in ["", "ms", "1.2.3ms", "10 minutes", "-5ms", "99999999999999999999s"] {
            assert!(parse_duration_ns(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_seconds_ns("12345.678901"), Some(12_345_678_901_000));
        assert_eq!(parse_seconds_ns("7"), Some(7_000_000_000));
        let r = TimeRange::parse("10ms..").unwrap();
        assert_eq!((r.start, r.end), (Some(TimePoint::Elapsed(10_000_000)), None));
        assert_eq!(r.resolve(1_000), (10_001_000, i64::MAX));
        let r = TimeRange::parse("12.5..13").unwrap();
        assert_eq!(r.resolve(0), (12_500_000_000, 13_000_000_000));
        assert!(TimeRange::parse("10ms").is_err());
        assert!(TimeRange::parse("soon..later").is_err());
    }

    #[test]
    fn name_patterns_match_whole_names_with_or_without_their_path() {
        let fib = NamePattern::new("fib").unwrap();
        for name in ["fib", "workload::fib", "fib(int)", "ns::fib(int) const"] {
            assert!(fib.matches(name), "{name}");
        }
        for name in ["fibonacci", "my_fib", "fib::inner", "workload::fib2"] {
            assert!(!fib.matches(name), "{name}");
        }
        assert!(NamePattern::new("parse_.*").unwrap().matches("json::parse_value"));
        assert!(NamePattern::new("(").is_err());
    }
}
