//! Helpers for the fuzz targets: the checksum fixer, shared as one source
//! file with the suite that replays the corpus.

#[path = "../../src/checksums.rs"]
mod checksums;

pub use checksums::with_checksums_fixed;
