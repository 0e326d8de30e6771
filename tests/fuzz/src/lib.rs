//! Helpers for the fuzz targets, shared as one source file with the suite
//! that replays the corpus.

#[path = "../../src/fuzz_support.rs"]
mod fuzz_support;

pub use fuzz_support::{budgets_and_parts, convert_core, convert_wire, export_tables, formats, with_checksums_fixed};
