//! Random access to a ring's spans by position, over whichever storage its
//! records are in (the mapped file, or unwrapped into memory): what the
//! start-order decoder reads records out of file order with.

use ringtrace_format::Record;
use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY, SPAN_FLAG_UNWOUND};
use ringtrace_format::read::Records;

use super::trace::{OpenSpan, RecordSource, SpanRecord, ThreadTrace, is_span_record};

/// Random access to a ring's spans by position — its records (argument
/// records and wrap markers give `None`), then its open spans — for one
/// kind of record storage, so a caller reading every position dispatches on
/// the storage once per ring, not once per record ([`ThreadTrace::with_spans`]).
pub(super) trait RingSpans {
    /// The span at `position`, in [`ThreadTrace::spans`]' order.
    fn span_at(&self, position: usize) -> Option<SpanRecord>;
    /// Starts loading what [`span_at`](Self::span_at)`(position)` reads
    /// into the cache, for a caller that knows its positions ahead.
    fn prefetch(&self, position: usize);
}

/// What [`ThreadTrace::with_spans`] hands its random access to: a trait,
/// not a closure, because the code must be generic over the storage
/// ([`RingSpans`] implementations) and closures cannot be.
pub(super) trait RingVisitor {
    /// What it gives back.
    type Out;
    /// Runs with the ring's spans.
    fn run<S: RingSpans>(self, spans: &S) -> Self::Out;
}

/// Records by index, from the file or unwrapped.
trait RecordAt {
    fn count(&self) -> usize;
    fn at(&self, index: usize) -> Option<Record>;
    /// Starts loading records `first..=last` into the cache.
    fn prefetch(&self, first: usize, last: usize);
}

impl RecordAt for Records<'_> {
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index)
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        super::prefetch::records(self, first, last);
    }
}

impl RecordAt for super::chunked::ChunkedRecords<'_> {
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index)
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        super::chunked::ChunkedRecords::prefetch(self, first, last);
    }
}

impl RecordAt for [Record] {
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index).copied()
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        if let Some(records) = self.get(first..=last) {
            super::prefetch::range(records);
        }
    }
}

/// A ring's spans over one kind of record storage.
struct Positioned<'t, R: ?Sized> {
    records: &'t R,
    open: &'t [OpenSpan],
    dump_ticks: u64,
    key_depth: super::trace::KeyDepth,
    /// [`ThreadTrace::prefixed`].
    prefixed: bool,
}

impl<R: RecordAt + ?Sized> RingSpans for Positioned<'_, R> {
    #[inline(always)] // once per record, in the decoder's inner loops
    fn span_at(&self, position: usize) -> Option<SpanRecord> {
        match position.checked_sub(self.records.count()) {
            None => {
                let r = self.records.at(position)?;
                if !is_span_record(r.key) {
                    return None;
                }
                let span = SpanRecord::of_record(r, self.key_depth);
                if !self.prefixed {
                    return Some(span);
                }
                // A flags record, then an argument record, may come before the span.
                let mut before = position.checked_sub(1).and_then(|p| self.records.at(p));
                let mut unwound = false;
                if let Some(b) = before.filter(|b| b.key == FLAGS_KEY) {
                    unwound = b.enter & SPAN_FLAG_UNWOUND != 0;
                    before = position.checked_sub(2).and_then(|p| self.records.at(p));
                }
                let arg = before.filter(|b| b.key == ARG_KEY).map(|b| b.enter);
                Some(SpanRecord { arg, unwound, ..span })
            }
            Some(j) => Some(self.open.get(j)?.at_dump(self.dump_ticks)),
        }
    }

    #[inline(always)]
    fn prefetch(&self, position: usize) {
        // The record, and the two before it where those may be flags and argument records.
        let first = if self.prefixed { position.saturating_sub(2) } else { position };
        self.records.prefetch(first, position);
    }
}

impl ThreadTrace<'_> {
    /// Positions of the ring's spans: its records, then its open spans.
    pub(super) fn positions(&self) -> usize {
        self.records.len() + self.open.len()
    }

    /// Runs `v` with random access to the ring's spans ([`RingSpans`]).
    pub(super) fn with_spans<V: RingVisitor>(&self, v: V) -> V::Out {
        let (open, dump_ticks, key_depth, prefixed) =
            (self.open.as_slice(), self.dump_ticks, self.key_depth, self.prefixed);
        match &self.records {
            RecordSource::File(records) => v.run(&Positioned { records, open, dump_ticks, key_depth, prefixed }),
            RecordSource::Unwrapped(records) => {
                v.run(&Positioned { records: records.as_slice(), open, dump_ticks, key_depth, prefixed })
            }
            RecordSource::Chunks(records) => v.run(&Positioned { records, open, dump_ticks, key_depth, prefixed }),
        }
    }
}
