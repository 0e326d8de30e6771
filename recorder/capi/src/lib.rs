//! `libringtrace.a`: the recorder's C ABI for C and C++ programs.
//!
//! Everything lives in `ringtrace::capi` (feature `c-api`); this crate only
//! makes the static library. Declarations: `recorder/include/ringtrace.h`.
//! `install` builds it and installs it with a pkg-config file and a CMake
//! package (`dist/`):
//!
//! ```sh
//! recorder/capi/install ~/.local
//! cc -g -finstrument-functions app.c $(pkg-config --cflags --libs ringtrace)
//! ```
//!
//! A workspace of its own, so the `c-api` feature never reaches the main
//! workspace's build (see the top-level `Cargo.toml`).

pub use ringtrace::capi::*;
