//! `rtconv completions` and `rtconv man`: the shell completions and man
//! pages, made from the argument types.

use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use clap::CommandFactory;

use super::args::Cli;
use super::output;

/// Writes the completion script for `shell` to stdout.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    clap_complete::generate(shell, &mut Cli::command(), "rtconv", &mut io::stdout().lock());
    ExitCode::SUCCESS
}

/// Writes rtconv(1) to stdout, or every page into `out_dir`.
pub fn run(out_dir: Option<&Path>) -> ExitCode {
    let written = match out_dir {
        Some(dir) => std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(Cli::command(), dir)),
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            clap_mangen::Man::new(Cli::command()).render(&mut out).and_then(|()| out.flush())
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => output::write_failed(&e, "the man pages"),
    }
}
