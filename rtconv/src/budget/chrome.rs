//! What Chrome JSON takes, span by span, as [`crate::render::chrome`] writes it: a span's `X` event
//! (or its `B` and `E` events) — its key's head, its times' digits, its args, its thread's
//! tail. Exact, but for the loss markers (a thread's overwritten and dropped spans), whose
//! time is counted with the digits of the thread's latest time: at most 20 bytes high each.

use super::Costs;
use crate::io::Counted;
use crate::model::{Ending, Filtered, LostChildren, SpanNs, Threads, Timeline};
use crate::render::chrome::{self, DROPPED, DUR_TEXT, Layout, OVERWRITTEN, Options};
use crate::render::text::{UsLen, us_len};

/// What `tl` takes as Chrome JSON written with `opts`, and what its filters kept and left out.
pub fn costs(tl: &Timeline<'_>, mut threads: Threads<'_, '_>, opts: &Options, costs: &mut Costs) -> Filtered {
    let layout = Layout::new(&[tl]);
    let (pid, shift) = layout.place(0, tl);
    costs.always(chrome::HEADER.len());
    costs.always(chrome::process_event(tl, pid, true).len());
    let places: Vec<String> =
        if opts.args { tl.keys.iter().map(|&key| chrome::key_args(tl, key)).collect() } else { Vec::new() };
    let place = |k: usize| places.get(k).map_or("", String::as_str);
    let heads = |ph: &str| -> Vec<usize> { (0..tl.keys.len()).map(|k| chrome::head(tl, ph, k).len()).collect() };
    let (begins, ends) = if opts.begin_end { (heads("B"), heads("E")) } else { (heads("X"), Vec::new()) };
    // A span without marks (most): its args are its key's place alone.
    let bare = SpanNs::new(0, 0, 0, None, Ending::Returned);
    let plain_args: Vec<usize> = (0..tl.keys.len()).map(|k| chrome::args_len(&bare, place(k), false)).collect();
    while let Some(mut t) = threads.next() {
        let thread = &tl.trace.threads[t.thread];
        costs.always(chrome::thread_event(thread, pid).len());
        let tail = chrome::tail(pid, thread.tid).len();
        let mut events = Events {
            // Per key, what an `X` event of a plain span takes but for its numbers (none where
            // every span is a `B` and an `E` event).
            plain: if opts.begin_end {
                Vec::new()
            } else {
                (0..tl.keys.len()).map(|k| begins[k] + plain_args[k] + tail + DUR_TEXT.len()).collect()
            },
            begins: &begins,
            ends: &ends,
            places: &places,
            begin_end: opts.begin_end,
            tail,
            shift,
            lost: tl.lost_children(thread),
            enter_len: UsLen::default(),
            exit_len: UsLen::default(),
        };
        let mut latest = 0i64;
        let profiled = costs.profiled_in_time();
        while let Some(batch) = t.next_batch() {
            if let Some(last) = batch.iter().map(|s| s.exit_ns).max() {
                latest = latest.max(last.saturating_add(shift));
            }
            if profiled {
                events.add::<true>(batch, costs);
            } else {
                events.add::<false>(batch, costs);
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

/// What a thread's events take, per key and span.
struct Events<'k, 't> {
    /// Per key index, a plain span's `X` event but for its numbers (empty: `B` and `E` events).
    plain: Vec<usize>,
    /// Per key index, its `X` (or `B`) event's head, and its `E` event's (if written).
    begins: &'k [usize],
    ends: &'k [usize],
    /// Per key index, its place's args (if written).
    places: &'k [String],
    begin_end: bool,
    /// The thread's tail.
    tail: usize,
    /// What the trace's times are shifted by.
    shift: i64,
    lost: LostChildren<'t>,
    /// The digits of the spans' starts and ends, since the trace's start: their lengths change at
    /// powers of ten only.
    enter_len: UsLen,
    exit_len: UsLen,
}

impl Events<'_, '_> {
    /// Adds the spans of `batch` to `costs`; `PROFILED`: at their times too.
    #[inline(always)]
    fn add<const PROFILED: bool>(&mut self, batch: &[SpanNs], costs: &mut Costs) {
        for s in batch {
            if PROFILED {
                costs.at(s.enter_ns);
            }
            let k = s.key_index as usize;
            let duration = s.duration_ns();
            let enter = self.enter_len.of(s.enter_ns.saturating_add(self.shift));
            let bytes = match self.plain.get(k) {
                Some(&fixed) if self.lost.plain_and_whole(s) => fixed + enter + us_len(duration as i64),
                _ => self.marked(s, enter, duration),
            };
            costs.add_span::<PROFILED>(duration, bytes);
        }
    }

    /// What a span's events take where they are not a plain `X` event's, `enter` its start's
    /// digits.
    #[inline(never)]
    fn marked(&mut self, s: &SpanNs, enter: usize, duration: u64) -> usize {
        let k = s.key_index as usize;
        let place = self.places.get(k).map_or("", String::as_str);
        let args = chrome::args_len(s, place, self.lost.of(s));
        let begin = self.begins.get(k).copied().unwrap_or(0) + enter + args + self.tail;
        let end = if self.begin_end {
            self.ends.get(k).copied().unwrap_or(0)
                + self.exit_len.of(s.exit_ns.saturating_add(self.shift))
                + args
                + self.tail
        } else {
            DUR_TEXT.len() + us_len(duration as i64)
        };
        begin + end
    }
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s Chrome JSON written with
/// `opts`: its event (or events) with the shortest numbers, no marks, on the thread with the
/// shortest tail.
pub fn least_span(tl: &Timeline<'_>, opts: &Options) -> Vec<u64> {
    let layout = Layout::new(&[tl]);
    let (pid, _) = layout.place(0, tl);
    let tail = tl.trace.threads.iter().map(|t| chrome::tail(pid, t.tid).len()).min().unwrap_or(0);
    let bare = SpanNs::new(0, 0, 0, None, Ending::Returned);
    let number = us_len(0);
    let per_key = tl.keys.iter().enumerate().map(|(k, &key)| {
        let place = if opts.args { chrome::key_args(tl, key) } else { String::new() };
        let args = chrome::args_len(&bare, &place, false);
        let bytes = if opts.begin_end {
            chrome::head(tl, "B", k).len() + chrome::head(tl, "E", k).len() + 2 * (number + args + tail)
        } else {
            chrome::head(tl, "X", k).len() + number + args + tail + DUR_TEXT.len() + number
        };
        bytes as u64
    });
    per_key.collect()
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
