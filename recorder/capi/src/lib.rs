//! `libringtrace.a`: the recorder's C ABI for C and C++ programs.
//!
//! Everything lives in `ringtrace::capi` (feature `c-api`); this crate only
//! makes the static library. Declarations: `recorder/include/ringtrace.h`.
//! Link it after the program's objects, with the system libraries Rust's
//! standard library needs:
//!
//! ```sh
//! cargo build --release -p ringtrace-capi
//! cc -g -finstrument-functions -Irecorder/include app.c \
//!    target/release/libringtrace.a -lpthread -ldl -lm -lrt -lgcc_s
//! ```

pub use ringtrace::capi::*;
