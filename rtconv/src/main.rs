//! The `rtconv` command line.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use rtconv::convert::{self, ConvertError, Format, Level};
use rtconv::symbolize;

/// Exit status: a conversion wrote its output but lost data or names on the way.
const EXIT_DEGRADED: u8 = 3;

/// The version line: the tool's version and the dump format versions it reads.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (reads dump format versions 1.x)");
const _: () = assert!(
    ringtrace_format::layout::SUPPORTED_MAJORS.0 == 1 && ringtrace_format::layout::SUPPORTED_MAJORS.1 == 1,
    "update VERSION when the supported dump format versions change"
);

#[derive(Parser)]
#[command(name = "rtconv", version = VERSION, about = "Convert ringtrace dumps into traces you can read")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert a dump into a trace (Chrome JSON for Perfetto).
    Convert(ConvertArgs),
}

#[derive(clap::Args)]
struct ConvertArgs {
    /// The dump to convert.
    dump: PathBuf,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Chrome)]
    format: FormatArg,
    /// Write the output here instead of to stdout.
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    binaries: BinaryArgs,
}

/// Where the recorded binaries are.
#[derive(clap::Args)]
struct BinaryArgs {
    /// The main executable, when it is not at the path recorded in the dump.
    #[arg(long, value_name = "PATH")]
    exe: Option<PathBuf>,
    /// Use binaries whose build-id differs from the one recorded (names may be wrong).
    #[arg(long)]
    allow_mismatch: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum FormatArg {
    /// Chrome trace event JSON (object format), for Perfetto and chrome://tracing.
    Chrome,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Convert(args) => run_convert(args),
    }
}

fn run_convert(args: ConvertArgs) -> ExitCode {
    let opts = symbolize::Options { exe: args.binaries.exe, allow_mismatch: args.binaries.allow_mismatch };
    let format = match args.format {
        FormatArg::Chrome => Format::Chrome,
    };
    let result = match &args.output {
        Some(path) => match File::create(path) {
            Ok(file) => convert::convert(&args.dump, format, &opts, &mut BufWriter::with_capacity(1 << 16, file)),
            Err(e) => {
                eprintln!("rtconv: error: cannot create {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => {
            convert::convert(&args.dump, format, &opts, &mut BufWriter::with_capacity(1 << 16, io::stdout().lock()))
        }
    };
    match result {
        Ok(report) => {
            for d in &report.diagnostics {
                let level = match d.level {
                    Level::Warning => "warning",
                    Level::Error => "error",
                };
                eprintln!("rtconv: {level}: {}", d.message);
            }
            if let Some(path) = &args.output {
                eprintln!(
                    "rtconv: {}: {} spans on {} threads -> {}",
                    args.dump.display(),
                    report.spans,
                    report.threads,
                    path.display()
                );
            }
            if report.degraded() { ExitCode::from(EXIT_DEGRADED) } else { ExitCode::SUCCESS }
        }
        Err(ConvertError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            let _ = io::stdout().flush();
            eprintln!("rtconv: error: {e}");
            ExitCode::FAILURE
        }
    }
}
