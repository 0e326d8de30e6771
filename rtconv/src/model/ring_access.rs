//! Random access to a ring's spans by position, over whichever storage its
//! records are in (the mapped file, or unwrapped into memory): what the
//! start-order decoder reads records out of file order with.

use ringtrace_format::Record;
use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY, SPAN_FLAG_UNWOUND};
use ringtrace_format::read::{RecordRef, Records};

use super::trace::{OpenSpan, RecordSource, SpanRecord, ThreadTrace, is_span_record};

/// Random access to a ring's spans by position — its records (argument
/// records and wrap markers give `None`), then its open spans — for one
/// kind of record storage, so a caller reading every position dispatches on
/// the storage once per ring, not once per record ([`ThreadTrace::with_spans`]).
pub(super) trait RingSpans {
    /// Where a span's record lies, as [`locate`](Self::locate) found it.
    type Loc: Copy + Default;
    /// The span at `position`, in [`ThreadTrace::spans`]' order.
    fn span_at(&self, position: usize) -> Option<SpanRecord>;
    /// Finds where [`span_at`](Self::span_at)`(position)` reads and starts
    /// loading it into the cache, for a caller that knows its positions
    /// ahead: [`span_located`](Self::span_located) then reads it without
    /// finding it again.
    fn locate(&self, position: usize) -> Self::Loc;
    /// [`span_at`](Self::span_at)`(position)`, where `loc` is what
    /// [`locate`](Self::locate)`(position)` gave.
    fn span_located(&self, position: usize, loc: Self::Loc) -> Option<SpanRecord>;
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
    /// Where a record lies ([`locate`](Self::locate)).
    type Loc: Copy + Default;
    fn at(&self, index: usize) -> Option<Record>;
    /// Starts loading records `first..=last` into the cache.
    fn prefetch(&self, first: usize, last: usize);
    /// Finds record `index` and starts loading it into the cache.
    fn locate(&self, index: usize) -> Self::Loc;
    /// The record [`locate`](Self::locate) found.
    fn at_located(&self, loc: Self::Loc) -> Option<Record>;
}

/// [`RecordAt::locate`] of records in the file's bytes: the record's bytes,
/// asked for.
#[inline(always)]
fn fetched(found: Option<RecordRef<'_>>) -> Option<RecordRef<'_>> {
    if let Some(r) = found {
        super::prefetch::range(r.as_bytes());
    }
    found
}

impl<'a> RecordAt for Records<'a> {
    type Loc = Option<RecordRef<'a>>;
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index)
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        super::prefetch::records(self, first, last);
    }
    #[inline(always)]
    fn locate(&self, index: usize) -> Self::Loc {
        fetched(Records::locate(self, index))
    }
    #[inline(always)]
    fn at_located(&self, loc: Self::Loc) -> Option<Record> {
        loc.map(RecordRef::record)
    }
}

impl<'a> RecordAt for super::chunked::ChunkedRecords<'a> {
    type Loc = Option<RecordRef<'a>>;
    #[inline(always)]
    fn at(&self, index: usize) -> Option<Record> {
        self.get(index)
    }
    #[inline(always)]
    fn prefetch(&self, first: usize, last: usize) {
        super::chunked::ChunkedRecords::prefetch(self, first, last);
    }
    #[inline(always)]
    fn locate(&self, index: usize) -> Self::Loc {
        fetched(super::chunked::ChunkedRecords::locate(self, index))
    }
    #[inline(always)]
    fn at_located(&self, loc: Self::Loc) -> Option<Record> {
        loc.map(RecordRef::record)
    }
}

impl RecordAt for [Record] {
    /// The index: unwrapped records are found as cheaply as they are read.
    type Loc = usize;
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
    #[inline(always)]
    fn locate(&self, index: usize) -> usize {
        self.prefetch(index, index);
        index
    }
    #[inline(always)]
    fn at_located(&self, index: usize) -> Option<Record> {
        self.get(index).copied()
    }
}

/// A ring's spans over one kind of record storage.
struct Positioned<'t, R: ?Sized> {
    records: &'t R,
    /// How many records there are, counted once (a division, for records in the file).
    count: usize,
    open: &'t [OpenSpan],
    dump_ticks: u64,
    key_depth: super::trace::KeyDepth,
    /// [`ThreadTrace::prefixed`].
    prefixed: bool,
}

impl<R: ?Sized> Positioned<'_, R> {
    /// Record `r` as a finished span on its own, if it is a span record.
    #[inline(always)]
    fn finished(&self, r: Record) -> Option<SpanRecord> {
        is_span_record(r.key).then(|| SpanRecord::of_record(r, self.key_depth))
    }
}

impl<R: RecordAt + ?Sized> RingSpans for Positioned<'_, R> {
    type Loc = R::Loc;

    #[inline(always)] // once per record, in the decoder's inner loops
    fn span_at(&self, position: usize) -> Option<SpanRecord> {
        match position.checked_sub(self.count) {
            None => {
                let span = self.finished(self.records.at(position)?)?;
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
    fn locate(&self, position: usize) -> R::Loc {
        if position >= self.count {
            return R::Loc::default();
        }
        if self.prefixed {
            // The record and the two before it (flags and argument records), read by `span_at`.
            self.records.prefetch(position.saturating_sub(2), position);
            return R::Loc::default();
        }
        self.records.locate(position)
    }

    #[inline(always)]
    fn span_located(&self, position: usize, loc: R::Loc) -> Option<SpanRecord> {
        if self.prefixed || position >= self.count {
            return self.span_at(position);
        }
        self.finished(self.records.at_located(loc)?)
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
        let count = self.records.len();
        match &self.records {
            RecordSource::File(records) => v.run(&Positioned { records, count, open, dump_ticks, key_depth, prefixed }),
            RecordSource::Unwrapped(records) => {
                v.run(&Positioned { records: records.as_slice(), count, open, dump_ticks, key_depth, prefixed })
            }
            RecordSource::Chunks(records) => {
                v.run(&Positioned { records, count, open, dump_ticks, key_depth, prefixed })
            }
        }
    }
}
