//! The loom model check of ringtrace's lock-free protocols, apart from the recorder so that
//! `--cfg loom` builds none of the recorder's benchmark peers; the check is `tests/loom.rs`:
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p ringtrace-loom --release --target-dir target/loom
//! ```
