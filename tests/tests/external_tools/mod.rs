//! The tests that need tools beyond Rust and a C compiler — emulators, a
//! browser, Python's data engines, Go, LLVM, gdb, groff, CMake, zstd — which
//! `tests/setup` installs. Leave them out with `--skip external_tools::`.

mod aarch64;
mod budget;
mod c_install;
mod cli;
mod cores;
mod diff;
mod export;
mod firmware;
mod firmware_ram;
mod firmware_stream;
mod fleet;
mod hostile;
mod linux32;
mod nesting;
mod perfetto;
mod pprof;
mod symbolize;
mod symbolize_callers;
mod symbolize_compat;
mod symbols;
mod viewer;
