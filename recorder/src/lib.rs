//! Records function-level spans into per-thread rings at the cost of two
//! counter reads, and dumps the raw rings for `rtconv` to convert offline.
//!
//! Design constraints:
//! - `#![no_std]` always. The hot path reads the counter, notes the span
//!   open, and at its end writes one 24-byte record {key, enter, exit} into
//!   the calling thread's ring: no locks, no read-modify-write atomics, no
//!   strings, no allocation after a thread's first span. Its cost against
//!   the bare counter pair is measured in docs/PERFORMANCE.md.
//! - Keys are addresses: a code address (named offline from DWARF), or the
//!   address of a per-call-site descriptor in the `ringtrace_sites` linker
//!   section, which every dump carries, so named spans resolve without the
//!   binary.
//! - Time is raw counter ticks ([`clock`]); the dump carries anchors pairing
//!   ticks with the OS clocks, and `rtconv` derives the rate over the run.
//! - With `std` (default): each thread gets its own [`Track`] (ring plus
//!   open-span stack) on its first span; dumps see every thread, including
//!   exited ones, whose rings they free once written. Without `std`, spans
//!   go to one track the program installs with `install`.
//!
//! # Instrumentation forms
//!
//! | form | key | notes |
//! |---|---|---|
//! | `let _s = span!();` | code address | no string in the binary |
//! | `let _s = span!("label");` | site descriptor | named without debug info |
//! | `span!(clock = Ordered)`, `span!(clock = Serialized, "label")` | as above | another [`clock::Clock`] |
//! | `#[trace]` on a fn, a method, or a whole `impl` block | site: `module::Type::fn` | generic fns and impls too; `async fn` is refused |
//! | `#[trace(addr)]` | code address | names from DWARF only |
//! | `#[trace(arg = n)]` | site | also records the integer `n` |
//! | `let t = enter!("x"); … exit(t);` | as `span!` | need not nest; ends on any thread |
//! | `timed!(expr)`, `timed!("label", expr)` | as `span!` | returns the value; `timed!(&mut v[i])` keeps the place |
//! | `pulse!()` / `pulse!("label")` in a loop | as `span!` | one counter read per pass |
//!
//! # Switches and dumps
//!
//! - Compile time: the additive `off` feature turns every form into nothing.
//! - Run time: [`set_enabled`] (process) and [`set_thread_enabled`]; a
//!   switched-off span costs two predictable branches.
//! - Rings: [`set_default_ring`], [`set_thread_ring`], or the environment
//!   variables `RINGTRACE_RING_RECORDS` and `RINGTRACE_RING_MODE=stop` (a value
//!   not understood is said on stderr, with what is used instead);
//!   overwrite-oldest (default) or stop-when-full, losses counted exactly.
//! - Dumps: [`dump_to_file`], [`dump_to_writer`], [`dump_on_exit`],
//!   [`dump_on_panic`], [`dump_on_signal`]; or the whole run, streamed into
//!   the file as it happens: [`stream_to`] or `RINGTRACE_STREAM`. Every dump also carries the
//!   recorder's measured cost per span ([`calibrate`]) and `dladdr` names for
//!   its code addresses.
//!
//! The lock-free protocols are described in [`ring`] and [`open`], and
//! model-checked with loom.
//!
//! For firmware ([`bare`]): the `single-core` feature turns the rings'
//! release/acquire barriers into compiler fences (one core records and
//! dumps: no `dmb` per store), and `small-crc` checksums dumps with a 1 KiB
//! table instead of crc32fast's 16 KiB.
//!
//! # Interrupts and signal handlers
//!
//! A ring has one writer. Code that can run in the middle of another span's
//! recording on the same core or thread — an interrupt handler, a signal
//! handler — records into a track of its own: it begins with
//! `let _ctx = ringtrace::interrupt(&TRACK);` ([`context_track`] makes and
//! registers one with `std`; without `std`, a `static` [`Track`], one per
//! priority level that records). Handlers nest: each finishes before the code
//! it interrupted resumes, so switching tracks is a save and restore of one
//! pointer, and the interrupted span's record, written half before and half
//! after the handler, is never touched by it. No atomic read-modify-write, no
//! interrupt masking. `recorder/tests/interrupts.rs` interrupts a recording
//! thread with tens of thousands of signals whose handler records, and
//! requires both rings exact; without the switch it loses records.
//!
//! # Without an operating system
//!
//! `ringtrace::install` a `static` [`Track`] (built without `std`), give spans a [`clock::Clock`] (on
//! Cortex-M3/M4/M7/M33 the DWT cycle counter is built in), and write dumps
//! with [`bare::write_dump`] through any byte sink. Where the target lacks
//! 64-bit atomics the ring stores 32-bit words: 12-byte records, compact
//! dumps, counters `rtconv` unwraps. `samples/freestanding` is a complete
//! program with no std and no libc.
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
// on loom's atomics, for the model check (`recorder/checks/`); the rest needs `const` atomics.
pub mod open;
pub mod ring;

#[cfg(not(loom))]
pub mod bare;
#[cfg(not(loom))]
pub mod calibrate;
#[cfg(all(feature = "c-api", not(loom)))]
pub mod capi;
#[cfg(not(loom))]
pub mod clock;
#[cfg(not(loom))]
mod directory;
#[cfg(all(feature = "std", not(loom)))]
mod dump;
#[cfg(all(feature = "c-api", not(loom)))]
pub mod hooks;
#[cfg(all(feature = "std", not(loom)))]
mod lifecycle;
#[cfg(not(loom))]
mod macros;
mod order;
#[cfg(all(feature = "std", not(loom)))]
mod os;
#[cfg(not(loom))]
mod sink;
#[cfg(not(loom))]
mod sites;
#[cfg(not(loom))]
mod span;
#[cfg(all(feature = "std", not(loom)))]
mod stream;
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
pub use sink::{Interrupt, install, interrupt, set_enabled};
#[cfg(not(loom))]
pub use span::{ArgSpan, Entered, Pulse, SiteDescriptor, Span, enter, exit};
#[cfg(all(feature = "std", not(loom)))]
pub use stream::{STREAM_DRAIN_ENV, STREAM_ENV, Stream, stream_sync, stream_to};
#[cfg(all(feature = "std", not(loom)))]
pub use thread::{
    AlreadyRecording, CONTEXT_TID_BASE, DEFAULT_RING_RECORDS, Interrupt, MAX_RING_RECORDS, MIN_RING_RECORDS,
    RING_MODE_ENV, RING_RECORDS_ENV, RingConfig, context_track, interrupt, set_default_ring, set_enabled,
    set_thread_enabled, set_thread_ring, start,
};
#[cfg(not(loom))]
pub use track::Track;

#[doc(hidden)]
pub use ringtrace_format as __format;
#[cfg(feature = "std")]
#[doc(hidden)]
pub use std as __std;
