//! The recorder's checks that need a build of their own, apart from the recorder so that those
//! builds compile none of its benchmark peers: `tests/loom.rs` model-checks the lock-free
//! protocols on loom's atomics, and `tests/prefault.rs` counts the page faults of a ring's
//! first lap, which only an optimized build shows.
//!
//! ```sh
//! RUSTFLAGS="--cfg loom" cargo test -p ringtrace-checks --test loom --release --target-dir target/loom
//! cargo test -p ringtrace-checks --test prefault --release
//! ```
