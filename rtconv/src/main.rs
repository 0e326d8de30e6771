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

fn main() -> ExitCode {
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
