//! What systrace text takes, span by span, as [`crate::render::systrace`] writes it: a begin and an
//! end line each, the end at the span's end cut to its parent's. Exact.

use super::Costs;
use crate::model::{Filtered, SpanNs, Threads, Timeline};
use crate::render::systrace::{self, MARK, time_len};

/// What `tl` takes as systrace text (the header aside: [`fixed`]), and what its filters kept and left out.
pub fn costs(tl: &Timeline<'_>, mut threads: Threads<'_, '_>, costs: &mut Costs) -> Filtered {
    let pid = tl.trace.process.pid;
    let begins: Vec<usize> =
        (0..tl.keys.len()).map(|k| format!("{MARK}B|{pid}|{}\n", systrace::name(tl, k)).len()).collect();
    let end = format!("{MARK}E|{pid}\n").len();
    let mut open: Vec<SpanNs> = Vec::new();
    while let Some(mut t) = threads.next() {
        let task = systrace::task(tl, t.thread).len();
        open.clear();
        while let Some(batch) = t.next_batch() {
            for s in batch {
                while open.last().is_some_and(|top| !top.encloses(s)) {
                    open.pop();
                }
                costs.at(s.enter_ns);
                let exit = open.last().map_or(s.exit_ns, |parent| s.exit_ns.min(parent.exit_ns));
                let begin = task + time_len(s.enter_ns) + begins.get(s.key_index as usize).copied().unwrap_or(0);
                let bytes = begin + task + time_len(exit) + end;
                costs.span(s.duration_ns(), bytes);
                let mut s = *s;
                s.exit_ns = exit;
                open.push(s);
            }
        }
    }
    threads.anomalies().filtered
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s systrace text: its begin and
/// end lines at the shortest times, on the thread with the shortest task column.
pub fn least_span(tl: &Timeline<'_>) -> Vec<u64> {
    let pid = tl.trace.process.pid;
    let task = (0..tl.trace.threads.len()).map(|i| systrace::task(tl, i).len()).min().unwrap_or(0);
    let end = format!("{MARK}E|{pid}\n").len();
    let begin = |k: usize| format!("{MARK}B|{pid}|{}\n", systrace::name(tl, k)).len();
    (0..tl.keys.len()).map(|k| (2 * (task + time_len(0)) + begin(k) + end) as u64).collect()
}

/// What the header takes for `tl` (filtered and cut as it will be written), `kept` spans in it.
pub fn fixed(tl: &Timeline<'_>, kept: u64) -> u64 {
    systrace::header(tl, usize::try_from(kept * 2).unwrap_or(usize::MAX)).len() as u64
}
