//! What Chrome JSON takes, span by span, as [`crate::render::chrome`] writes it: a span's `X` event
//! (or its `B` and `E` events) — its key's head, its times' digits, its args, its thread's
//! tail. Exact, but for the loss markers (a thread's overwritten and dropped spans), whose
//! time is counted with the digits of the thread's latest time: at most 20 bytes high each.

use super::Costs;
use crate::io::Counted;
use crate::model::{Filtered, Timeline};
use crate::render::chrome::{self, DROPPED, DUR_TEXT, Layout, OVERWRITTEN, Options};
use crate::render::text::us_len;

/// What `tl` takes as Chrome JSON written with `opts`, and what its filters kept and left out.
pub fn costs(tl: &Timeline<'_>, opts: &Options, costs: &mut Costs) -> Filtered {
    let layout = Layout::new(&[tl]);
    let (pid, shift) = layout.place(0, tl);
    costs.always(chrome::HEADER.len());
    costs.always(chrome::process_event(tl, pid, true).len());
    let places: Vec<String> =
        if opts.args { tl.keys.iter().map(|&key| chrome::key_args(tl, key)).collect() } else { Vec::new() };
    let heads = |ph: &str| -> Vec<usize> { (0..tl.keys.len()).map(|k| chrome::head(tl, ph, k).len()).collect() };
    let (begins, ends) = if opts.begin_end { (heads("B"), heads("E")) } else { (heads("X"), Vec::new()) };
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &tl.trace.threads[t.thread];
        costs.always(chrome::thread_event(thread, pid).len());
        let tail = chrome::tail(pid, thread.tid).len();
        let lost = tl.lost_children(thread);
        let mut latest = 0i64;
        while let Some(batch) = t.next_batch() {
            for s in batch {
                costs.at(s.enter_ns);
                let k = s.key_index as usize;
                let place = places.get(k).map_or("", String::as_str);
                let args = chrome::args_len(s, place, lost.of(s.enter_ns, s.open()));
                let begin =
                    begins.get(k).copied().unwrap_or(0) + us_len(s.enter_ns.saturating_add(shift)) + args + tail;
                let end = if opts.begin_end {
                    ends.get(k).copied().unwrap_or(0) + us_len(s.exit_ns.saturating_add(shift)) + args + tail
                } else {
                    DUR_TEXT.len() + us_len(s.exit_ns.saturating_sub(s.enter_ns))
                };
                costs.span(s.exit_ns.saturating_sub(s.enter_ns).max(0) as u64, begin + end);
                latest = latest.max(s.exit_ns.saturating_add(shift));
            }
        }
        for (count, what) in [(thread.overwritten(), OVERWRITTEN), (thread.dropped, DROPPED)] {
            if let Some((before, after)) = chrome::loss_marker(thread, pid, count, what) {
                costs.always(before.len() + us_len(latest) + after.len());
            }
        }
    }
    threads.anomalies().filtered
}

/// What the metadata at the end takes for `tl` (filtered and cut as it will be written), its
/// filters' counts `found`.
pub fn fixed(tl: &Timeline<'_>, found: Filtered) -> u64 {
    let mut sink = std::io::sink();
    let mut n = Counted::new(&mut sink);
    // A sink takes every byte.
    let _ = chrome::write_metadata(&[tl], &Layout::new(&[tl]), &[found], &mut n);
    n.bytes
}
