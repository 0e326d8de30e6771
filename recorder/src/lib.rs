//! Records function-level spans into per-thread rings at the cost of two
//! counter reads, and dumps the raw rings for `rtconv` to convert offline.
//!
//! Design constraints:
//! - `#![no_std]` always. The hot path reads the counter, writes one 24-byte
//!   record {key, enter, exit} into the calling thread's ring and bumps an
//!   index: no locks, no read-modify-write atomics, no strings, no allocation
//!   after a thread's first span.
//! - Keys are addresses. `span!()` records the program counter of the call
//!   site, named offline from DWARF; `span!("label")` records the address of a
//!   per-call-site descriptor in the `ringtrace_sites` linker section, which
//!   every dump carries, so named spans resolve without the binary.
//! - Time is raw counter ticks; the dump carries anchors pairing ticks with
//!   the OS clocks, and `rtconv` derives the rate over the whole run.
//! - Feature `std` (default): one ring per thread, created on its first span,
//!   registered so a dump sees every thread including exited ones, and
//!   [`dump_to_file`]. Without `std`, spans go to one ring the program
//!   installs with `install`.
//!
//! The ring's publish/snapshot protocol is described in [`ring`].
//!
//! # Example
//!
//! ```
//! fn fib(n: u32) -> u64 {
//!     let _span = ringtrace::span!();
//!     if n < 2 { n as u64 } else { fib(n - 1) + fib(n - 2) }
//! }
//!
//! {
//!     let _span = ringtrace::span!("compute");
//!     assert_eq!(fib(10), 55);
//! }
//! let path = std::env::temp_dir().join("ringtrace-doc-example.rtd");
//! let stats = ringtrace::dump_to_file(&path).unwrap();
//! assert!(stats.records >= 178); // 177 calls of fib, one "compute"
//! # std::fs::remove_file(path).ok();
//! ```
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "std")]
#[doc(hidden)]
pub extern crate std;

pub mod clock;
mod macros;
pub mod open;
pub mod ring;
mod sink;
mod span;
mod track;

pub mod calibrate;
#[cfg(feature = "std")]
mod dump;
#[cfg(feature = "std")]
mod lifecycle;
#[cfg(feature = "std")]
mod os;
#[cfg(feature = "std")]
mod sites;
#[cfg(feature = "std")]
mod thread;

#[cfg(feature = "std")]
pub use dump::{DumpStats, dump_to_file, dump_to_writer};
#[cfg(feature = "std")]
pub use lifecycle::{DumpOnExit, dump_on_exit, dump_on_panic, dump_on_signal};
pub use ring::Mode;
#[cfg(feature = "macros")]
pub use ringtrace_macros::trace;
pub use sink::enabled;
#[cfg(not(feature = "std"))]
pub use sink::{install, set_enabled};
pub use span::{ArgSpan, Entered, Pulse, SiteDescriptor, Span, enter, exit};
#[cfg(feature = "std")]
pub use thread::{
    AlreadyRecording, DEFAULT_RING_RECORDS, MAX_RING_RECORDS, MIN_RING_RECORDS, RING_MODE_ENV, RING_RECORDS_ENV,
    RingConfig, set_default_ring, set_enabled, set_thread_enabled, set_thread_ring, start,
};
pub use track::Track;

#[doc(hidden)]
pub use ringtrace_format as __format;
#[cfg(feature = "std")]
#[doc(hidden)]
pub use std as __std;
