//! The decoded model every renderer draws from: spans in nanoseconds, per
//! thread, parents before children.

use crate::load::Trace;
use crate::symbolize::Symbols;
use crate::timebase::Timebase;

/// One span in monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanNs {
    /// The span's key (look its name up in `Symbols`).
    pub key: u64,
    /// Start, monotonic ns.
    pub enter_ns: i128,
    /// End, monotonic ns; never before `enter_ns`.
    pub exit_ns: i128,
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
    /// Earliest span start, monotonic ns (0 if there are no spans).
    pub origin_ns: i128,
    /// Spans whose exit counter reading was before their enter reading.
    pub backwards: u64,
}

impl<'a> Timeline<'a> {
    /// Converts and sorts every record of `trace`.
    pub fn new(trace: &'a Trace, symbols: &'a Symbols, timebase: Timebase) -> Self {
        let mut backwards = 0;
        let mut origin = i128::MAX;
        let threads = trace
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let mut spans: Vec<SpanNs> = t
                    .spans
                    .iter()
                    .map(|r| {
                        let enter_ns = timebase.ns(r.enter);
                        let mut exit_ns = timebase.ns(r.exit);
                        if exit_ns < enter_ns {
                            backwards += 1;
                            exit_ns = enter_ns;
                        }
                        origin = origin.min(enter_ns);
                        SpanNs { key: r.key, enter_ns, exit_ns, arg: r.arg, open: r.open }
                    })
                    .collect();
                spans.sort_unstable_by(|a, b| a.enter_ns.cmp(&b.enter_ns).then(b.exit_ns.cmp(&a.exit_ns)));
                ThreadSpans { thread: i, spans }
            })
            .collect();
        let origin_ns = if origin == i128::MAX { 0 } else { origin };
        Timeline { trace, symbols, timebase, threads, origin_ns, backwards }
    }

    /// Total spans.
    pub fn span_count(&self) -> usize {
        self.threads.iter().map(|t| t.spans.len()).sum()
    }
}
