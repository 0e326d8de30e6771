//! Converts ringtrace dumps into timelines people can read, offline.
//!
//! Design constraints:
//! - Dumps are untrusted: they are read through `ringtrace-format`'s
//!   validating reader; a damaged dump converts up to the damage and the loss
//!   is reported, never a panic, never an allocation from an unchecked length.
//! - Each distinct span key is named once ([`symbolize`]): from the dump's
//!   site section, or from the recorded module's DWARF, found by the path in
//!   the dump and checked by build-id. Names are plain data of the model
//!   ([`model::Names`]).
//! - One decoded model ([`model::Timeline`]) feeds every output; renderers
//!   stream to any `io::Write`, produce the same bytes for the same dump, and
//!   return what they found wrong with the spans ([`model::Anomalies`]).
//! - Memory is bounded by the largest ring, not the dump: the file stays
//!   mapped and rings are decoded one at a time ([`model::Threads`]) or
//!   walked straight from the file ([`model::Timeline::walk`]).
//! - A core file is a dump too: [`model::open`] reads the rings out of an
//!   ELF core through the recorder's ring directory ([`core_file`]) and hands
//!   them on as a dump, so every command reads cores as it reads dumps.
//! - A library: it prints nothing and changes nothing in the process it is
//!   loaded into. What went wrong comes back as values ([`convert::Report`],
//!   [`symbolize::Naming`], a [`batch::Observer`]); the one process-wide
//!   handler, for files cut short while mapped, is the program's to switch on
//!   ([`io::guard_shrinking_files`]); the `rtconv` command line is the
//!   binary's own code, behind the `cli` feature.
//!
//! The flow, step by step: open and decode a dump, name its keys, put it on
//! a timebase, then walk its spans, accumulate statistics, or render it.
//!
//! ```no_run
//! use rtconv::model::{self, Timeline};
//! use rtconv::{render, stats, symbolize};
//!
//! let path = std::path::Path::new("trace.rtd");
//! let bytes = model::open(path)?; // mapped, not copied
//! let trace = model::decode(path, &bytes)?; // a damaged file still gives what precedes the damage
//! println!("{} (pid {}): {} threads", trace.process.name, trace.process.pid, trace.threads.len());
//!
//! let naming = symbolize::symbolize(&trace, &symbolize::Options::default(), &symbolize::Cache::default());
//! let problems: Vec<String> = naming.problems.iter().map(ToString::to_string).collect(); // a module not found, ...
//! let (timebase, _) = trace.timebase()?;
//! let timeline = Timeline::new(&trace, &naming.names, timebase);
//!
//! // Spans in start order, a thread and a batch at a time.
//! let mut threads = timeline.threads();
//! while let Some(mut thread) = threads.next() {
//!     while let Some(batch) = thread.next_batch() {
//!         for span in batch {
//!             println!("{} {} ns", timeline.name(span.key_index as usize), span.exit_ns - span.enter_ns);
//!         }
//!     }
//! }
//! let clamped = threads.anomalies().clamped; // spans cut at their parent's end
//!
//! // Per-function statistics, and the same dump as Chrome JSON.
//! let (scopes, _) = stats::compute(&timeline, &stats::Options::default());
//! render::stats_table::write(&scopes, stats::Output::Csv, false, &mut std::io::stdout())?;
//! let mut json = std::fs::File::create("trace.json")?;
//! render::chrome::write(&timeline, &render::chrome::Options::default(), &mut json)?;
//! # let _ = (problems, clamped);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`convert::convert`] does all of it in one call, and reports what was
//! lost ([`convert::Report`]); [`batch`] runs it over directories and
//! archives of dumps in parallel; [`export`] makes dumps into tables for
//! data engines, and writes them as Parquet (feature `parquet`).
#![warn(missing_docs)]

pub mod batch;
pub mod budget;
pub mod convert;
pub mod core_file;
pub mod diff;
pub mod export;
pub mod info;
pub mod io;
pub mod live;
pub mod model;
pub mod pack;
pub mod render;
pub mod stats;
pub mod symbolize;
pub mod viewers;
pub mod wire_file;
