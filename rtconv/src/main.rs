//! The `rtconv` command line: parses the arguments and hands each command to
//! its module in [`cli`], which runs the library and reports what it did.

/// mimalloc, not the C library's allocator: `rtconv symbolize` spends less
/// in malloc and free and takes fewer page faults with it (docs/PERFORMANCE.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;
use cli::args::{Cli, Command};

mod cli;

/// Has mimalloc keep the memory a conversion frees for the next batch or dump, where by default it
/// returns it to the system 10 ms later and the next allocation takes it back a page fault at a
/// time, each page zeroed again: `rtconv export` of a 3.5 M-span dump took 1.23× the CPU with it
/// (0.835 against 0.662 CPU-s, the difference all system time; docs/PERFORMANCE.md). `MIMALLOC_PURGE_DELAY`, when set, still decides.
fn keep_freed_memory() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // mimalloc.h's `mi_option_purge_delay` (the same in its versions 2 and 3); -1: never purge.
    const PURGE_DELAY: std::ffi::c_int = 15;
    unsafe extern "C" {
        fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
    }
    // SAFETY: mimalloc's own function, in the library the global allocator above links; it stores
    // the option's value and reads no memory of ours.
    unsafe { mi_option_set(PURGE_DELAY, -1) }
}

fn main() -> ExitCode {
    keep_freed_memory();
    // Run as `llvm-symbolizer` or `addr2line` (a link or a copy), rtconv is that tool.
    if let Some(tool) = cli::personality::of_program() {
        return cli::personality::run(tool);
    }
    let cli = Cli::parse();
    let color = cli.color.when();
    cli::diag::set_color(color);
    // A dump cut short by another process while it is read is converted up to the cut, not a crash.
    if let Err(e) = rtconv::io::guard_shrinking_files() {
        cli::diag::emit(&format!("rtconv: warning: a file cut short while it is read will end rtconv: {e}"));
    }
    match cli.command {
        Command::Convert(args) => cli::convert::run(args),
        Command::Stats(args) => cli::convert::run_stats(args, color),
        Command::Batch(args) => cli::batch::run(args),
        Command::Export(args) => cli::batch::run_export(args),
        Command::Diff(args) => cli::diff::run(args),
        Command::Info(args) => cli::info::run(args),
        Command::Pack(args) => cli::batch::run_pack(args),
        Command::Symbolize(args) => cli::symbolize::run(args),
        Command::Completions { shell } => cli::man::completions(shell),
        Command::Man { out_dir } => cli::man::run(out_dir.as_deref()),
    }
}
