//! The end-to-end tests, one binary: record with the samples (and real C
//! programs), convert with rtconv, check the outputs against what is known
//! independently. Each module covers one subject (its first doc line says
//! which).
//!
//! The tests that need more than Rust and a C compiler (QEMU, a browser,
//! Python with DuckDB, Spark, scipy and Perfetto's schema, Go, LLVM's
//! symbolizer, groff, CMake, the zstd tools; `tests/setup` installs them all)
//! are in [`external_tools`], so a contributor's fast loop can leave them out:
//!
//! ```sh
//! cargo test --workspace -- --skip external_tools::
//! ```

/// Hostile inputs, shaped for the tests (and written out by the `hostile-corpus` example).
pub mod shapes;

mod bad_input;
mod batch;
mod budget;
mod c_api;
mod cli;
mod clock;
mod diff;
mod external_tools;
mod filters;
mod firefox;
mod fixtures;
mod flamegraph;
mod forms;
mod freestanding;
mod fuzz_regressions;
mod golden;
mod hostile;
mod killswitch;
mod library;
mod longjmp;
mod nesting;
mod one_build;
mod pack;
mod stats;
mod stream;
mod symbol_index;
mod symbolize;
mod symbolize_compat;
mod systrace;
mod triggers;
mod workload;
mod wrap;
