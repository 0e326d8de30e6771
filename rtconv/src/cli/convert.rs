//! `rtconv convert`, and `rtconv stats` of one dump (of many: [`super::batch`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rtconv::convert::{self, ConvertError, Format};
use rtconv::model::Filter;
use rtconv::stats::Output;
use rtconv::symbolize;

use super::args::{ConvertArgs, FormatArg, StatsArgs, StatsFormatArg, choose_format, format_of};
use super::args::{stats_format_of, trace_format_of};
use super::diag::{self, When};
use super::output::{self, Sink};
use super::{exit, usage};

/// A directory or an archive given where one dump file is expected: what to use instead.
fn not_a_dump_file(path: &Path) -> Option<String> {
    let what = if path.is_dir() {
        "a directory"
    } else if rtconv::batch::archive_kind(path).is_some() {
        "an archive"
    } else {
        return None;
    };
    Some(format!(
        "{} is {what}: convert takes dump files; use `rtconv batch {} -o OUT_DIR` (one output per dump) or \
         `rtconv stats {}` (figures merged over its dumps)",
        path.display(),
        path.display(),
        path.display()
    ))
}

/// `rtconv convert`.
pub fn run(args: ConvertArgs) -> ExitCode {
    if let Some(hint) = args.dumps.iter().find_map(|d| not_a_dump_file(d)) {
        return usage(&hint);
    }
    let format = match choose_format(args.format, args.output.as_deref(), trace_format_of, FormatArg::Chrome) {
        Ok(format) => format,
        Err(e) => return usage(&e),
    };
    let format = format_of(format, &args.chrome);
    convert_to(&args.dumps, format, args.output.as_deref(), args.symbols.options(), &args.filter.filter())
}

/// `rtconv stats`: one dump's tables, or figures merged over many.
pub fn run_stats(args: StatsArgs, color: When) -> ExitCode {
    let output = match choose_format(args.format, args.output.as_deref(), stats_format_of, StatsFormatArg::Table) {
        Ok(output) => Output::from(output),
        Err(e) => return usage(&e),
    };
    let opts = rtconv::stats::Options {
        sort: args.sort.into(),
        per_thread: args.per_thread,
        output,
        view: if args.tree { rtconv::stats::View::CallTree } else { rtconv::stats::View::Functions },
        calibrated: args.calibrated,
        clean: args.clean,
        color: output == Output::Table && output::file(args.output.as_deref()).is_none() && color.stdout(),
    };
    // One dump file (or one path that is no directory: refused as a dump, by name): its own
    // tables. Anything else: merged over every dump.
    if let [dump] = args.dumps.as_slice()
        && dump.exists()
        && !dump.is_dir()
        && rtconv::batch::archive_kind(dump).is_none()
    {
        return convert_to(
            std::slice::from_ref(dump),
            Format::Stats(opts),
            args.output.as_deref(),
            args.symbols.options(),
            &args.filter.filter(),
        );
    }
    if args.tree || args.per_thread {
        return usage("--tree and --per-thread show one dump; over many dumps, figures are merged per build-id");
    }
    super::batch::stats_all(&args.dumps, opts, &args.run, args.symbols.options(), args.filter.filter(), args.output)
}

/// Converts `dumps` into `format`, to `output` or stdout, and reports as `rtconv convert` does.
pub fn convert_to(
    dumps: &[PathBuf],
    format: Format,
    output: Option<&Path>,
    opts: symbolize::Options,
    filter: &Filter,
) -> ExitCode {
    // pprof's profiles are gzipped by their writer: `x.pb.gz` is not compressed again.
    let mut out = match Sink::open_as(output, format != Format::Pprof) {
        Ok(out) => out,
        Err(e) => return output::cannot_create(output, &e),
    };
    let result = convert::convert_many(dumps, format, &opts, filter, &mut out);
    let result = match result {
        Ok(report) => out.finish().map(|()| report).map_err(ConvertError::Output),
        Err(e) => {
            out.discard();
            Err(e)
        }
    };
    let names = || dumps.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", ");
    match result {
        Ok(report) => {
            for d in &report.diagnostics {
                diag::print(d);
            }
            if output::file(output).is_some() {
                eprintln!(
                    "rtconv: {}: {} spans on {} threads -> {}",
                    names(),
                    report.spans,
                    report.threads,
                    output::name(output)
                );
            }
            if report.degraded() { ExitCode::from(exit::DEGRADED) } else { ExitCode::SUCCESS }
        }
        Err(ConvertError::Output(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(ConvertError::Output(e)) => {
            // Nothing was put under the output's name (see `output`).
            diag::error(&format!("{} (from {}): {e}; nothing written", output::name(output), names()));
            ExitCode::FAILURE
        }
        Err(e) => {
            diag::error(&e.to_string());
            ExitCode::FAILURE
        }
    }
}
