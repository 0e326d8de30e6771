//! A sample of a timeline's span durations read straight from its rings, without placing or
//! decoding them: what an output budget estimates its threshold from before it decodes
//! ([`crate::budget::floor`]).

use super::ring_access::{RingSpans, RingVisitor};
use super::timeline::{Anomalies, Timeline};

/// The durations, key indexes and depth tags of one ring's spans at every `stride`-th position
/// from `first`.
struct EveryNth<'x, 'a> {
    tl: &'x Timeline<'a>,
    first: usize,
    stride: usize,
    positions: usize,
    out: &'x mut Vec<(u64, u32, u8)>,
}

impl RingVisitor for EveryNth<'_, '_> {
    type Out = ();
    fn run<S: RingSpans>(self, spans: &S) {
        let mut found = Anomalies::default();
        let mut last = None;
        for position in (self.first..self.positions).step_by(self.stride) {
            // Argument records and wrap markers hold no span.
            if let Some(r) = spans.span_at(position) {
                let (enter, exit) = self.tl.span_ns(r.enter, r.exit, &mut found);
                let key_index = self.tl.key_index(r.key, &mut last);
                self.out.push((exit.saturating_sub(enter).max(0) as u64, key_index, r.depth));
            }
        }
    }
}

impl Timeline<'_> {
    /// The durations (ns), key indexes and depth tags of about `samples` spans spread evenly over
    /// every ring — each `stride`-th span of the trace, rings one after the other — and the
    /// stride: how many spans each stands for. A span's duration is as its ring recorded it (a
    /// span outliving its parent in a ring that does not nest is not cut at the parent's end
    /// here), and the timeline's filter is not applied.
    pub(crate) fn sample_spans(&self, samples: usize) -> (Vec<(u64, u32, u8)>, u64) {
        let rings = &self.trace.threads;
        let total: usize = rings.iter().map(|t| t.positions()).sum();
        let stride = (total / samples.max(1)).max(1);
        let mut out = Vec::with_capacity(total / stride + rings.len());
        // Where the next ring's first sample is: the stride runs on across rings.
        let mut first = stride / 2;
        for t in rings {
            let positions = t.positions();
            if first < positions {
                t.with_spans(EveryNth { tl: self, first, stride, positions, out: &mut out });
                first += (positions - first).div_ceil(stride) * stride;
            }
            first -= positions;
        }
        (out, stride as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_dumps::{TestRing, with_rings};

    #[test]
    fn every_stride_th_span_of_the_trace_is_sampled_across_rings() {
        // Three rings of 1000, 10 and 2500 spans: every span's duration is its ring's index
        // times 1000 plus its place in the ring, so the sample says which spans it read.
        let ring = |index: u64, n: u64| {
            let spans: Vec<_> = (0..n)
                .map(|i| ringtrace_format::Record { key: 1, enter: 10 * i, exit: 10 * i + index * 1000 + i })
                .collect();
            TestRing { written: n, records: spans, dropped: 0, open: Vec::new() }
        };
        let rings = [ring(0, 1000), ring(1, 10), ring(2, 2500)];
        // Ticks are ns; the dump after the last exit.
        with_rings(&rings, 1_000_000, |tl| {
            let (all, stride) = tl.sample_spans(usize::MAX);
            assert_eq!(stride, 1);
            assert_eq!(all.len(), 3510);
            let (sample, stride) = tl.sample_spans(351);
            assert_eq!(stride, 10);
            // Positions 5, 15, … of the trace: the 100th is ring 1's fifth, then ring 2's fifth.
            let expected: Vec<u64> =
                (0..100).map(|i| 5 + 10 * i).chain([1_005]).chain((0..250).map(|i| 2_005 + 10 * i)).collect();
            assert_eq!(sample.iter().map(|s| s.0).collect::<Vec<_>>(), expected);
            assert!(sample.iter().all(|s| (s.1, s.2) == (sample[0].1, 0)), "one key, no depth tags");
        });
    }
}
