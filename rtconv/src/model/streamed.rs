//! A timeline's spans handed, as they are decoded, from the thread decoding them to another that
//! walks them: an output budget's size model so walks the spans on a second core while the rings
//! decode into memory, instead of after ([`crate::convert::convert_within`]).
//!
//! The decode sends each thread's spans in start order, a chunk at a time as it fills one (the
//! chunk the decode keeps, shared: not a copy), then what decoding the thread found wrong; the
//! walk reads them through [`Threads::streamed`](super::Threads::streamed), as it would read
//! spans decoded before. The decode never waits for the walk: what the channel holds are the
//! decode's own chunks. A walk that stops early (or a decode that does) only ends the other's
//! messages.

use std::sync::mpsc::{Receiver, Sender, channel};

use super::decoded::Chunk;
use super::timeline::Anomalies;

/// What a decode tells a walk, thread by thread in the trace's order.
pub(crate) enum Streamed {
    /// The thread's next spans, in start order.
    Spans(Chunk),
    /// The thread has no more: what decoding it found wrong.
    End(Anomalies),
}

/// The decode's end of a stream.
pub(crate) struct Tap(Sender<Streamed>);

/// A stream's two ends.
pub(crate) fn stream() -> (Tap, Receiver<Streamed>) {
    let (tx, rx) = channel();
    (Tap(tx), rx)
}

impl Tap {
    /// Sends `spans`, the current thread's next.
    pub(crate) fn spans(&self, spans: Chunk) {
        if !spans.is_empty() {
            // A walk that stopped wants no more.
            let _ = self.0.send(Streamed::Spans(spans));
        }
    }

    /// The current thread has no more spans; decoding it found `found`.
    pub(crate) fn end(&self, found: Anomalies) {
        let _ = self.0.send(Streamed::End(found));
    }
}
