//! The `rtconv` command line: its arguments ([`args`]), where its output
//! goes ([`output`]), how it prints diagnostics ([`diag`]) and progress
//! ([`progress`]), its exit statuses ([`exit`]), and one module per command
//! that runs the library and reports what it did.

pub mod answers;
pub mod args;
pub mod batch;
pub mod convert;
pub mod diag;
pub mod diff;
pub mod exit;
pub mod info;
pub mod live;
pub mod man;
pub mod output;
pub mod personality;
pub mod progress;
pub mod queries;
pub mod symbolize;

use std::process::ExitCode;

/// Exit status 2 with one line: the command line asks for something impossible.
pub fn usage(message: &str) -> ExitCode {
    diag::error(message);
    ExitCode::from(exit::USAGE)
}
