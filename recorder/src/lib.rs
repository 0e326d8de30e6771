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

// With `--cfg loom`, only the lock-free protocols (`open`, `ring`) are built,
// on loom's atomics, for the model-checking test; the rest needs `const` atomics.
pub mod open;
pub mod ring;

#[cfg(not(loom))]
pub mod calibrate;
#[cfg(not(loom))]
pub mod clock;
#[cfg(all(feature = "std", not(loom)))]
mod dump;
#[cfg(all(feature = "std", not(loom)))]
mod lifecycle;
#[cfg(not(loom))]
mod macros;
#[cfg(all(feature = "std", not(loom)))]
mod os;
#[cfg(not(loom))]
mod sink;
#[cfg(all(feature = "std", not(loom)))]
mod sites;
#[cfg(not(loom))]
mod span;
#[cfg(all(feature = "std", not(loom)))]
mod thread;
#[cfg(not(loom))]
mod track;

#[cfg(all(feature = "std", not(loom)))]
pub use dump::{DumpStats, dump_to_file, dump_to_writer};
#[cfg(all(feature = "std", not(loom)))]
pub use lifecycle::{DumpOnExit, dump_on_exit, dump_on_panic, dump_on_signal};
pub use ring::Mode;
#[cfg(feature = "macros")]
pub use ringtrace_macros::trace;
#[cfg(not(loom))]
pub use sink::enabled;
#[cfg(all(not(feature = "std"), not(loom)))]
pub use sink::{install, set_enabled};
#[cfg(not(loom))]
pub use span::{ArgSpan, Entered, Pulse, SiteDescriptor, Span, enter, exit};
#[cfg(all(feature = "std", not(loom)))]
pub use thread::{
    AlreadyRecording, DEFAULT_RING_RECORDS, MAX_RING_RECORDS, MIN_RING_RECORDS, RING_MODE_ENV, RING_RECORDS_ENV,
    RingConfig, set_default_ring, set_enabled, set_thread_enabled, set_thread_ring, start,
};
#[cfg(not(loom))]
pub use track::Track;

#[doc(hidden)]
pub use ringtrace_format as __format;
#[cfg(feature = "std")]
#[doc(hidden)]
pub use std as __std;
