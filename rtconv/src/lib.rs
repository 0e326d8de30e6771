//! Converts ringtrace dumps into timelines people can read, offline.
//!
//! Design constraints:
//! - Dumps are untrusted: they are read through `ringtrace-format`'s
//!   validating reader; a damaged dump converts up to the damage and the loss
//!   is reported, never a panic, never an allocation from an unchecked length.
//! - Each distinct span key is named once ([`symbolize`]): from the dump's
//!   site section, or from the recorded module's DWARF, found by the path in
//!   the dump and checked by build-id.
//! - One decoded model ([`timeline::Timeline`]) feeds every renderer; renderers
//!   stream to a `Write` and produce the same bytes for the same dump.
//! - Memory is bounded by the largest ring, not the dump: the file stays
//!   mapped and rings are decoded one at a time ([`timeline::Threads`]) or
//!   walked straight from the file ([`timeline::Timeline::walk`]).
//!
//! # Example
//!
//! ```no_run
//! use rtconv::convert::{Format, convert};
//!
//! let mut out = std::io::stdout().lock();
//! let report = convert("trace.rtd".as_ref(), Format::Chrome(Default::default()), &Default::default(), &mut out)?;
//! eprintln!("{} spans on {} threads", report.spans, report.threads);
//! # Ok::<(), rtconv::convert::ConvertError>(())
//! ```
#![warn(missing_docs)]

pub mod address;
pub mod batch;
pub mod calltree;
pub mod clean;
pub mod convert;
pub mod diag;
pub mod info;
pub mod load;
pub mod output;
pub mod pack;
mod prefetch;
pub mod render;
pub mod stats;
pub mod symbolize;
pub mod timebase;
pub mod timeline;
