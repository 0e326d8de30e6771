//! The decoded model every renderer draws from: spans in nanoseconds, per
//! thread, parents before children.

use crate::load::Trace;
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

/// One span in monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanNs {
    /// Start, monotonic ns.
    pub enter_ns: i64,
    /// End, monotonic ns; never before `enter_ns`.
    pub exit_ns: i64,
    /// The span's key as an index into [`Timeline::keys`].
    pub key_index: u32,
    /// The integer argument recorded with the span.
    pub arg: Option<u64>,
    /// Still running at dump time; `exit_ns` is the dump time.
    pub open: bool,
}

/// One thread's spans, sorted by start, longer first on ties (so a parent
/// precedes the children that start with it).
#[derive(Debug)]
pub struct ThreadSpans {
    /// Index into `Trace::threads`.
    pub thread: usize,
    /// The spans.
    pub spans: Vec<SpanNs>,
}

/// A trace ready to render.
pub struct Timeline<'a> {
    /// The dump.
    pub trace: &'a Trace,
    /// Names of its keys.
    pub symbols: &'a Symbols,
    /// Tick to time conversion.
    pub timebase: Timebase,
    /// Per-thread spans, in dump order.
    pub threads: Vec<ThreadSpans>,
    /// Every distinct key, sorted; spans refer to them by index.
    pub keys: Vec<u64>,
    /// Earliest span start, monotonic ns (0 if there are no spans).
    pub origin_ns: i64,
    /// Spans whose exit counter reading was before their enter reading.
    pub backwards: u64,
    /// Spans that ended after their parent and were cut at the parent's end
    /// (no track shows partial overlaps).
    pub clamped: u64,
    /// Spans nested deeper than [`MAX_DEPTH`].
    pub too_deep: u64,
}

impl<'a> Timeline<'a> {
    /// Converts and sorts every record of `trace`.
    pub fn new(trace: &'a Trace, symbols: &'a Symbols, timebase: Timebase) -> Self {
        let mut keys: Vec<u64> = trace.threads.iter().flat_map(|t| t.spans.iter().map(|r| r.key)).collect();
        keys.sort_unstable();
        keys.dedup();
        // Nanoseconds since the monotonic clock's epoch fit i64 for 292 years.
        let ns = |ticks: u64| timebase.ns(ticks).clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        let mut backwards = 0;
        let (mut clamped, mut too_deep) = (0, 0);
        let mut origin = i64::MAX;
        let threads = trace
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut spans: Vec<SpanNs> = t
                    .spans
                    .iter()
                    .map(|r| {
                        let enter_ns = ns(r.enter);
                        let mut exit_ns = ns(r.exit);
                        if exit_ns < enter_ns {
                            backwards += 1;
                            exit_ns = enter_ns;
                        }
                        origin = origin.min(enter_ns);
                        // Every key is in `keys`, which has fewer than 2^32 entries (one per record at most).
                        let key_index = keys.binary_search(&r.key).unwrap_or_default() as u32;
                        SpanNs { enter_ns, exit_ns, key_index, arg: r.arg, open: r.open }
                    })
                    .collect();
                spans.sort_unstable_by_key(|s| (s.enter_ns, std::cmp::Reverse(s.exit_ns)));
                let (cut, deep) = clamp_into_parents(&mut spans);
                clamped += cut;
                too_deep += deep;
                ThreadSpans { thread: i, spans }
            })
            .collect();
        let origin_ns = if origin == i64::MAX { 0 } else { origin };
        Timeline { trace, symbols, timebase, threads, keys, origin_ns, backwards, clamped, too_deep }
    }

    /// Walks one thread's spans as a call tree and calls `visit` once per
    /// span, when it closes, with the path of key indices from the thread's
    /// root to it, its duration clamped into its parent (a child never
    /// counts beyond its parent's end), and its self time (that duration
    /// less its direct children's).
    pub fn walk(&self, thread: &ThreadSpans, visit: impl FnMut(&[u32], &SpanNs, u64, u64)) {
        self.walk_calibrated(thread, None, visit);
    }

    /// As [`walk`](Self::walk), with the recorder's own cost taken out when
    /// `costs` is `Some((read_ns, span_ns))`: each span's duration loses
    /// `read_ns` (what an empty span measures of itself) and `span_ns` for
    /// every span nested in it (what each adds to those around it); self
    /// times are then the calibrated duration less the children's.
    pub fn walk_calibrated(
        &self,
        thread: &ThreadSpans,
        costs: Option<(u64, u64)>,
        mut visit: impl FnMut(&[u32], &SpanNs, u64, u64),
    ) {
        struct Open<'s> {
            span: &'s SpanNs,
            end: i64,
            own: u64,
            children: u64,
            descendants: u64,
        }
        let mut stack: Vec<Open<'_>> = Vec::new();
        let mut path: Vec<u32> = Vec::new();
        let mut close = |stack: &mut Vec<Open<'_>>, path: &mut Vec<u32>| {
            if let Some(o) = stack.pop() {
                let own = match costs {
                    Some((read, span)) => o.own.saturating_sub(read.saturating_add(span.saturating_mul(o.descendants))),
                    None => o.own,
                };
                visit(path, o.span, own, own.saturating_sub(o.children));
                path.pop();
                if let Some(parent) = stack.last_mut() {
                    parent.children += own;
                    parent.descendants += 1 + o.descendants;
                }
            }
        };
        for s in &thread.spans {
            while stack.last().is_some_and(|o| o.end <= s.enter_ns) {
                close(&mut stack, &mut path);
            }
            let end = stack.last().map_or(s.exit_ns, |o| s.exit_ns.min(o.end));
            let own = end.saturating_sub(s.enter_ns).max(0) as u64;
            stack.push(Open { span: s, end, own, children: 0, descendants: 0 });
            path.push(s.key_index);
        }
        while !stack.is_empty() {
            close(&mut stack, &mut path);
        }
    }

    /// The recorder's cost per span in ns, from the dump's calibration for
    /// the Fast clock (the default): (read, span), or `None` if the dump has none.
    pub fn recorder_costs(&self) -> Option<(u64, u64)> {
        let c = self.trace.calibration.iter().find(|c| c.mode == ringtrace_format::ClockMode::Fast)?;
        let ns = |ticks: u64| (self.timebase.ns(ticks) - self.timebase.ns(0)).max(0) as u64;
        Some((ns(c.read_cost), ns(c.span_cost)))
    }

    /// Total spans.
    pub fn span_count(&self) -> usize {
        self.threads.iter().map(|t| t.spans.len()).sum()
    }
}
