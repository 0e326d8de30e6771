//! A timeline's spans decoded once and kept in memory, for work that walks
//! them more than once: an output budget's size model, then its render
//! ([`crate::convert::convert_within`]), which would otherwise decode every
//! ring twice.
//!
//! A decode through a `-t` gate keeps each thread's spans in chunks of up to
//! [`CHUNK`] spans, each shared, once filled, with a walk on another thread
//! ([`Tap`]) without a copy; a decode of every span keeps each thread's in one.

use std::sync::Arc;

use super::filter::{Filter, Gate, Selection};
use super::start_order::{BATCH, Threads};
use super::streamed::Tap;
use super::timeline::{Anomalies, SpanNs, Timeline};

/// A run of a thread's decoded spans, in start order: shared by the timeline holding them and,
/// while it walks them, a walk on another thread.
pub(crate) type Chunk = Arc<Vec<SpanNs>>;

/// Spans a chunk of a decode through a gate holds at most: 2 MiB, four batches. A chunk is
/// closed where the next batch's spans might not fit, so each but a thread's last holds more
/// than three batches: its memory is at most a third more than its spans take.
const CHUNK: usize = 4 * BATCH;

/// Every thread's spans in start order, as [`Timeline::threads`] decodes
/// them without a filter, and what decoding each thread found wrong. A
/// timeline holding it hands these out instead of decoding its rings, through
/// its own filter, window and batches, so a traversal sees what it would
/// have decoded.
#[derive(Debug)]
pub(crate) struct Decoded {
    /// Per thread of the trace; `None`: left out whole by the filter, not decoded.
    threads: Vec<Option<(Vec<Chunk>, Anomalies)>>,
    /// Every span lasts at least this long (ns): those shorter were left out by the decode.
    at_least_ns: u64,
}

impl Decoded {
    /// Thread `index`'s spans (in chunks) and what decoding them found, if decoded.
    pub(super) fn thread(&self, index: usize) -> Option<(&[Chunk], Anomalies)> {
        let (chunks, found) = self.threads.get(index)?.as_ref()?;
        Some((chunks, *found))
    }

    /// The duration every span lasts at least (ns).
    pub(super) fn at_least_ns(&self) -> u64 {
        self.at_least_ns
    }

    /// The index of each decoded thread.
    pub(crate) fn thread_indices(&self) -> impl Iterator<Item = usize> {
        self.threads.iter().enumerate().filter_map(|(i, t)| t.as_ref().map(|_| i))
    }

    /// Every span, thread after thread.
    pub(crate) fn spans(&self) -> impl Iterator<Item = &SpanNs> {
        self.threads.iter().flatten().flat_map(|(chunks, _)| chunks.iter().flat_map(|chunk| chunk.iter()))
    }

    /// How many spans.
    pub(crate) fn len(&self) -> u64 {
        self.threads.iter().flatten().flat_map(|(chunks, _)| chunks.iter().map(|c| c.len() as u64)).sum()
    }
}

/// A thread's spans as a decode appends them: the chunks filled, and the one it fills.
pub(super) struct Chunks<'t> {
    filled: Vec<Chunk>,
    filling: Vec<SpanNs>,
    /// Spans a chunk holds at most (`usize::MAX`: one chunk, growing as a `Vec` does).
    per_chunk: usize,
    /// Where each chunk goes as soon as it is filled.
    tap: Option<&'t Tap>,
}

impl<'t> Chunks<'t> {
    /// Chunks of `per_chunk` spans, the first with room for `reserve`.
    fn new(per_chunk: usize, reserve: usize, tap: Option<&'t Tap>) -> Self {
        Chunks { filled: Vec::new(), filling: Vec::with_capacity(reserve), per_chunk, tap }
    }

    /// Where `n` more spans go, all in one chunk (the one filling, or a new one).
    pub(super) fn room(&mut self, n: usize) -> &mut Vec<SpanNs> {
        if self.per_chunk != usize::MAX && self.filling.capacity() - self.filling.len() < n {
            self.close();
            self.filling.reserve_exact(self.per_chunk.max(n));
        }
        &mut self.filling
    }

    /// The spans appended so far.
    pub(super) fn len(&self) -> usize {
        self.filled.iter().map(|chunk| chunk.len()).sum::<usize>() + self.filling.len()
    }

    /// The chunk filling is full: shared with the tap, and a new one begins.
    fn close(&mut self) {
        if self.filling.is_empty() {
            return;
        }
        let chunk = Arc::new(std::mem::take(&mut self.filling));
        if let Some(tap) = self.tap {
            tap.spans(Arc::clone(&chunk));
        }
        self.filled.push(chunk);
    }

    /// Every chunk, the last one closed.
    fn finish(mut self) -> Vec<Chunk> {
        self.close();
        self.filled
    }
}

impl Timeline<'_> {
    /// Its spans decoded into memory, if they take at most `max_bytes` there
    /// (32 bytes a span); `None` if more, or for a window's timeline.
    pub(crate) fn decode_all(&self, max_bytes: u64) -> Option<Decoded> {
        self.decode_kept(max_bytes, None, None).map(|(decoded, _)| decoded)
    }

    /// As [`decode_all`](Self::decode_all), for a timeline without a filter, keeping only the
    /// spans lasting at least `threshold_ns` (as `-t` keeps them), about `expected` of them;
    /// `None` once those kept take more than `max_bytes`, or for a timeline with a filter. Each
    /// thread's anomalies count those left out as [`Filtered::duration`](super::Filtered::duration),
    /// so a walk through a filter with a longer threshold counts every span a decode of all of
    /// them would. `tap` (if any) gets each thread's spans as they are decoded, and what decoding
    /// it found, as `Decoded` will hold them.
    pub(crate) fn decode_above(
        &self,
        max_bytes: u64,
        threshold_ns: u64,
        expected: u64,
        tap: Option<&Tap>,
    ) -> Option<Decoded> {
        self.decode_above_counting(max_bytes, threshold_ns, expected, u64::MAX, tap).map(|(decoded, _)| decoded)
    }

    /// As [`decode_above`](Self::decode_above), also counting the spans it leaves out that last
    /// at least `near_ns` (those between it and the threshold).
    pub(crate) fn decode_above_counting(
        &self,
        max_bytes: u64,
        threshold_ns: u64,
        expected: u64,
        near_ns: u64,
        tap: Option<&Tap>,
    ) -> Option<(Decoded, u64)> {
        let filter = Filter { min_duration_ns: Some(threshold_ns), ..Filter::default() };
        let selection = Selection::new(&filter, self);
        let gate = Gate::counting(&selection, near_ns);
        let (decoded, near) =
            self.selection.is_none().then(|| self.decode_kept(max_bytes, Some((gate, expected)), tap))??;
        Some((Decoded { at_least_ns: threshold_ns, ..decoded }, near))
    }

    /// Decodes every thread the filter keeps, through `gate` if given (with the spans it is
    /// expected to keep, checked against `max_bytes` first), in chunks; else each thread in one,
    /// its memory reserved; and the spans the gate counted as near. `tap` as in
    /// [`decode_above`](Self::decode_above).
    fn decode_kept(&self, max_bytes: u64, gate: Option<(Gate<'_>, u64)>, tap: Option<&Tap>) -> Option<(Decoded, u64)> {
        if self.window.is_some() {
            return None;
        }
        let kept = |index: usize| self.thread_left_out(index).is_none();
        let rings = &self.trace.threads;
        let all: u64 = rings.iter().enumerate().filter(|&(i, _)| kept(i)).map(|(_, t)| t.span_count()).sum();
        // Through a gate, the spans it is expected to keep, a twentieth more: checked against
        // `max_bytes` before, and what it keeps as it goes.
        let counting = gate.as_ref().is_some_and(|(gate, _)| gate.counts_near());
        let gated = gate.is_some();
        let (mut decoder, expected) = match gate {
            Some((gate, expected)) => (Threads::gated(self, gate), all.min(expected.saturating_add(expected / 20))),
            None => (Threads::ungated(self), all),
        };
        let limit = max_bytes / size_of::<SpanNs>() as u64;
        if expected > limit {
            return None;
        }
        let mut threads = Vec::with_capacity(rings.len());
        let mut room = usize::try_from(limit).unwrap_or(usize::MAX);
        for (index, ring) in rings.iter().enumerate() {
            if !kept(index) {
                threads.push(None);
                continue;
            }
            decoder.take_anomalies();
            // The thread's share of the spans expected (no more than the file holds).
            let share = (u128::from(expected) * u128::from(ring.span_count()) / u128::from(all.max(1))) as u64;
            let share = usize::try_from(share).unwrap_or(0);
            // Through a gate, chunks filled as the spans decode; else one, as large as the thread.
            let mut spans = if gated { Chunks::new(CHUNK, 0, tap) } else { Chunks::new(usize::MAX, share, tap) };
            if let Some(t) = decoder.decode(index) {
                if counting {
                    t.append_to::<true>(&mut spans, room)?;
                } else {
                    t.append_to::<false>(&mut spans, room)?;
                }
            }
            room -= spans.len();
            let spans = spans.finish();
            let mut found = decoder.take_anomalies();
            // The kept spans are counted again by the walks that keep them.
            found.filtered.kept = 0;
            if let Some(tap) = tap {
                tap.end(found);
            }
            threads.push(Some((spans, found)));
        }
        Some((Decoded { threads, at_least_ns: 0 }, decoder.near()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ringtrace_format::Record;

    use super::super::filter::Filter;
    use super::super::streamed::stream;
    use super::super::test_dumps::{TestRing, nested, records, with_rings};
    use super::*;

    /// Every traversal in start order, as (per thread: its spans; what was found wrong).
    fn walked(tl: &Timeline<'_>) -> (Vec<Vec<SpanNs>>, Anomalies) {
        let mut threads = tl.threads();
        let mut all = Vec::new();
        while let Some(t) = threads.next() {
            all.push(t.to_vec());
        }
        (all, threads.anomalies())
    }

    #[test]
    fn kept_spans_walk_as_the_rings_decode_through_any_filter_and_window() {
        // A ring that nests (two chunks and more), one that overlaps without nesting (sorted and
        // cut), and one with an exit before its enter; the middle one has open spans.
        let ring = |records: Vec<Record>, open: Vec<(u64, u64)>| TestRing {
            written: records.len() as u64,
            records,
            dropped: 0,
            open,
        };
        let overlapping = vec![
            Record { key: 1, enter: 20, exit: 25 },
            Record { key: 2, enter: 0, exit: 30 },
            Record { key: 3, enter: 10, exit: 40 },
        ];
        let backwards = vec![Record { key: 1, enter: 50, exit: 40 }, Record { key: 2, enter: 60, exit: 70 }];
        let rings = [
            ring(records(&nested(7, 150_000, false)), Vec::new()),
            ring(overlapping, vec![(4, 5)]),
            ring(backwards, Vec::new()),
        ];
        let filters = [
            Filter::default(),
            Filter { min_duration_ns: Some(5), ..Filter::default() },
            Filter { depth: Some(3), tids: vec![1, 2], ..Filter::default() },
            Filter { tids: vec![2], ..Filter::default() },
        ];
        with_rings(&rings, 100_000, |tl| {
            for filter in &filters {
                for window in [None, Some((1_000, 30_000))] {
                    let plain = || {
                        let mut t = Timeline::new(tl.trace, tl.names, tl.timebase).filtered(filter);
                        t.window = window;
                        t
                    };
                    let expected = walked(&plain());
                    let decoded = Timeline { window: None, ..plain() }.decode_all(u64::MAX).expect("fits");
                    let mut kept = plain();
                    kept.decoded = Some(Arc::new(decoded));
                    assert_eq!(walked(&kept), expected, "{filter:?} {window:?}");
                    if window.is_none() {
                        // Decoded in chunks, as a budget decodes (through a `-t` gate, here one
                        // that keeps every span), then walked through the filter.
                        let chunked = Timeline::new(tl.trace, tl.names, tl.timebase);
                        let chunked = chunked.decode_above(u64::MAX, 0, 0, None).expect("fits");
                        let chunks = chunked.thread(0).map(|(chunks, _)| chunks.len());
                        assert!(chunks > Some(2), "{chunks:?}");
                        kept.decoded = Some(Arc::new(chunked));
                        assert_eq!(walked(&kept), expected, "in chunks: {filter:?}");
                    }
                }
            }
            assert!(tl.decode_all(32 * 10).is_none(), "more than ten spans");
        });
    }

    #[test]
    fn spans_streamed_as_they_decode_walk_as_those_decoded_before() {
        // A ring of many chunks, one sorted and cut, and one with an exit before its enter.
        let ring =
            |records: Vec<Record>| TestRing { written: records.len() as u64, records, dropped: 0, open: Vec::new() };
        let overlapping = vec![
            Record { key: 1, enter: 20, exit: 25 },
            Record { key: 2, enter: 0, exit: 30 },
            Record { key: 3, enter: 10, exit: 40 },
        ];
        let backwards = vec![Record { key: 1, enter: 50, exit: 40 }, Record { key: 2, enter: 60, exit: 70 }];
        let rings = [ring(records(&nested(7, 150_000, false))), ring(overlapping), ring(backwards)];
        with_rings(&rings, 100_000, |tl| {
            // Walked on another thread as the spans decode, and walked once they are decoded.
            let both = |max_bytes: u64, threshold_ns: u64| {
                let (tap, spans) = stream();
                std::thread::scope(|scope| {
                    let walker = scope.spawn(|| {
                        let mut threads = Threads::streamed(tl, spans);
                        let mut all = Vec::new();
                        while let Some(t) = threads.next() {
                            all.push(t.to_vec());
                        }
                        (all, threads.anomalies())
                    });
                    let decoded = tl.decode_above(max_bytes, threshold_ns, 0, Some(&tap));
                    drop(tap);
                    (walker.join().unwrap(), decoded)
                })
            };
            for threshold_ns in [0, 5, 300, u64::MAX] {
                let (streamed, decoded) = both(u64::MAX, threshold_ns);
                let decoded = decoded.expect("fits");
                let chunks = decoded.thread(0).map(|(chunks, _)| chunks.len());
                assert!(threshold_ns > 0 || chunks > Some(2), "{chunks:?}");
                let mut kept = Timeline::new(tl.trace, tl.names, tl.timebase);
                kept.decoded = Some(Arc::new(decoded));
                assert_eq!(streamed, walked(&kept), "at {threshold_ns} ns");
            }
            // A decode that stops for want of memory ends the walk, short: the walk has the chunks
            // filled before the decode went past 100,000 spans (at most a batch past).
            let (streamed, decoded) = both(32 * 100_000, 0);
            assert!(decoded.is_none());
            let walked = streamed.0.iter().map(Vec::len).sum::<usize>();
            assert!((CHUNK - BATCH..=100_000 + BATCH).contains(&walked), "{walked}: {:?}", streamed.1);
        });
    }
}
