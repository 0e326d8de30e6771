//! The decoded model every output draws from: a dump read into a [`Trace`]
//! (its process, clock, modules, and one [`ThreadTrace`] per ring, whose
//! records stay in the file), and a [`Timeline`] over it that hands out
//! spans in nanoseconds — in start order, a thread and a batch at a time
//! ([`Timeline::threads`]), or as a call tree walked straight from the file
//! ([`Timeline::walk`], [`Timeline::arrivals`]).
//!
//! Every traversal reports what it found wrong with the spans
//! ([`Anomalies`]) as its result: a span that ends before it starts, a span
//! cut at its parent's end, nesting deeper than viewers draw.

mod address;
mod chunked;
mod counter_unwrap;
mod decoded;
mod filter;
mod load;
mod losses;
mod names;
mod nest_check;
mod prefetch;
mod ring_access;
mod sample;
mod start_order;
mod streamed;
mod timebase;
mod timeline;
mod trace;
mod walk;

#[cfg(test)]
pub(crate) mod test_dumps;

pub(crate) use address::module_of;
pub use address::{Location, locate};
pub(crate) use decoded::Decoded;
pub use filter::{Cut, Filter, Filtered, NamePattern, Selection, TimeRange, parse_duration_ns};
pub(crate) use load::not_a_dump_hint;
pub use load::{ConvertError, LoadError, decode, dump_of, is_converted_file, is_core_file, open};
pub use losses::Losses;
pub use names::{Frame, Names, Source, SpanName};
pub use start_order::{ThreadSpans, Threads};
pub(crate) use streamed::{Tap, stream};
pub use timebase::{RateOrigin, Timebase, TimebaseError};
pub(crate) use timeline::inside;
pub use timeline::{Anomalies, Ending, MAX_DEPTH, RecorderCost, SpanNs, Timeline};
pub use trace::{Clock, Crash, ModuleEntry, Process, ThreadTrace, Trace};
pub use walk::{Arrival, DEEPER, LostChildren, Visit};
