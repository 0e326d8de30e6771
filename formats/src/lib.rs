//! The ringtrace dump format: every byte a recorder writes and `rtconv` reads.
//!
//! Design constraints:
//! - `#![no_std]` and no `alloc`: the [`Writer`] streams into a [`Sink`]
//!   (a UART, a file, a fixed buffer) and the [`read`] side works zero-copy
//!   over a byte slice, so the same crate serves a microcontroller and a
//!   workstation.
//! - The reader trusts nothing: every length is checked against the bytes
//!   present before use, every section's CRC-32 is checked before its payload
//!   is handed out, and no length read from a file ever sizes an allocation.
//!   It never panics.
//! - Sections are length-prefixed, so readers skip kinds they do not know and
//!   a truncated dump still yields every complete section before the cut.
//!
//! `FORMAT.md` next to this crate is the specification.
//!
//! # Example
//!
//! ```
//! use ringtrace_format::{Dump, Record, RingInfo, SectionData, SliceSink, Writer};
//!
//! let mut buf = [0u8; 512];
//! let mut w = Writer::new(SliceSink::new(&mut buf), 8).unwrap();
//! let ring = RingInfo { tid: 7, capacity: 4, written: 1, dropped: 0, aux: 0, flags: 0, name: b"main" };
//! w.ring(&ring, &[Record { key: 0x1000, enter: 10, exit: 20 }], &[]).unwrap();
//! let sink = w.finish().unwrap();
//!
//! let dump = Dump::parse(sink.written()).unwrap();
//! for section in dump.sections() {
//!     if let SectionData::Ring(info, records, _open) = section.unwrap().decode().unwrap() {
//!         assert_eq!(info.name, b"main");
//!         assert_eq!(records.iter().next().unwrap().exit, 20);
//!     }
//! }
//! ```
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod crc;
pub mod directory;
mod error;
pub mod extent;
pub mod layout;
mod model;
pub mod read;
pub mod site;
#[cfg(feature = "test-util")]
pub mod test_util;
pub mod wire;
mod write;

pub use error::{ReadError, WriteError};
pub use layout::{ClockMode, CounterKind, DumpReason, NameSource, RateSource, SectionKind};
pub use model::{
    Anchor, Calibration, ClockInfo, CompactRecord, DladdrEntry, MetaInfo, Module, NameEntry, NameFrame, Record,
    RingInfo, Unbalanced,
};
pub use read::{Dump, Endian, Section, SectionData, StreamChunk};
pub use site::{Site, decode_site, encode_site, site_len};
#[cfg(feature = "std")]
pub use write::IoSink;
pub use write::{Sink, SliceFull, SliceSink, Writer};
