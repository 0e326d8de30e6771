//! A timeline's spans handed, as they are decoded, from the thread decoding them to another that
//! walks them: an output budget's size model so walks the spans on a second core while the rings
//! decode into memory, instead of after ([`crate::convert::convert_within`]).
//!
//! The decode sends each thread's spans in start order, a batch at a time, then what decoding the
//! thread found wrong; the walk reads them through [`Threads::streamed`](super::Threads::streamed),
//! as it would read spans decoded before. A bounded channel holds a few batches, so memory holds
//! no second copy of the spans; a walk that stops early (or a decode that does) only ends the
//! other's messages.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::timeline::{Anomalies, SpanNs};

/// What a decode tells a walk, thread by thread in the trace's order.
pub(crate) enum Streamed {
    /// The thread's next spans, in start order.
    Spans(Vec<SpanNs>),
    /// The thread has no more: what decoding it found wrong.
    End(Anomalies),
}

/// Batches in flight between the decode and the walk at most.
const IN_FLIGHT: usize = 4;

/// The decode's end of a stream.
pub(crate) struct Tap(SyncSender<Streamed>);

/// A stream's two ends.
pub(crate) fn stream() -> (Tap, Receiver<Streamed>) {
    let (tx, rx) = sync_channel(IN_FLIGHT);
    (Tap(tx), rx)
}

impl Tap {
    /// Sends a copy of `spans`, the current thread's next.
    pub(crate) fn spans(&self, spans: &[SpanNs]) {
        if !spans.is_empty() {
            // A walk that stopped wants no more.
            let _ = self.0.send(Streamed::Spans(spans.to_vec()));
        }
    }

    /// The current thread has no more spans; decoding it found `found`.
    pub(crate) fn end(&self, found: Anomalies) {
        let _ = self.0.send(Streamed::End(found));
    }
}
