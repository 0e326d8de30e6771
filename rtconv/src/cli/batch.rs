//! The commands over many dumps — `rtconv batch`, `export`, `pack`, and
//! `stats` merged over dumps — with their progress and summary lines.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rtconv::batch::{Options, Summary};
use rtconv::model::Filter;
use rtconv::symbolize;

use super::args::{BatchArgs, BatchFormatArg, ExportArgs, ExportFormatArg, PackArgs, RunArgs, format_of};
use super::output::{self, Sink};
use super::progress::Progress;
use super::{diag, exit};

/// `rtconv batch`: one output per dump in `--out-dir`, Parquet tables, or every dump packed.
pub fn run(args: BatchArgs) -> ExitCode {
    if args.budget.split.is_some() {
        return super::usage("--split is for `rtconv convert` of one dump; batch writes one output per dump");
    }
    let mut opts = args.run.options(args.symbols.options(), args.filter.filter());
    opts.max_bytes = args.budget.max_bytes;
    let progress = Progress::new(args.run.quiet);
    match (&args.out_dir, args.format) {
        (Some(_), BatchFormatArg::Parquet) if opts.max_bytes.is_some() => {
            super::usage("--max-bytes applies to the timeline formats; Parquet tables keep every span")
        }
        (Some(out_dir), BatchFormatArg::Parquet) => {
            export(&args.inputs, out_dir, args.host.as_deref(), &opts, &progress)
        }
        (Some(out_dir), BatchFormatArg::Trace(format)) => {
            let format = format_of(format, &args.chrome);
            if opts.max_bytes.is_some() && rtconv::convert::budget_layout(format).is_none() {
                return super::usage(&rtconv::convert::ConvertError::BudgetFormat.to_string());
            }
            match rtconv::batch::convert_all(&args.inputs, format, out_dir, &opts, &progress) {
                Ok(summary) => {
                    say_converted("batch", &summary, out_dir);
                    if let Some((name, bytes)) = &summary.largest
                        && let Some(line) = rtconv::viewers::batch_note(
                            format,
                            summary.past_viewers,
                            &name.display().to_string(),
                            *bytes,
                            &diag::command_line(&["--max-bytes"]),
                        )
                    {
                        diag::print(&rtconv::convert::Diagnostic::note(line));
                    }
                    ExitCode::from(exit::of_summary(&summary))
                }
                Err(e) => {
                    diag::error(&format!("cannot create {}: {e}", out_dir.display()));
                    ExitCode::FAILURE
                }
            }
        }
        (None, _) => pack(&args.inputs, &opts),
    }
}

/// `rtconv export`.
pub fn run_export(args: ExportArgs) -> ExitCode {
    let ExportFormatArg::Parquet = args.format;
    let opts = args.run.options(args.symbols.options(), args.filter.filter());
    export(&args.inputs, &args.out_dir, args.host.as_deref(), &opts, &Progress::new(args.run.quiet))
}

#[cfg(feature = "parquet")]
fn export(inputs: &[PathBuf], out_dir: &Path, host: Option<&str>, opts: &Options, progress: &Progress) -> ExitCode {
    let summary = rtconv::batch::export_all(inputs, out_dir, host, opts, progress);
    say_converted("export", &summary, out_dir);
    ExitCode::from(exit::of_summary(&summary))
}

/// Without the `parquet` feature: how to get an rtconv that exports.
#[cfg(not(feature = "parquet"))]
fn export(_: &[PathBuf], _: &Path, _: Option<&str>, _: &Options, _: &Progress) -> ExitCode {
    super::usage(WITHOUT_PARQUET)
}

/// What `rtconv export` says when this build has no Parquet writer.
#[cfg(not(feature = "parquet"))]
pub const WITHOUT_PARQUET: &str = "this rtconv was built without Parquet export (the `parquet` feature); \
     install one that has it: cargo install --locked --path rtconv --features parquet";

/// `rtconv pack`.
pub fn run_pack(args: PackArgs) -> ExitCode {
    let opts = Options {
        jobs: 1,
        symbols: args.symbols.options(),
        filter: Filter::default(),
        max_dump_size: rtconv::batch::MAX_DUMP_SIZE,
        max_bytes: None,
    };
    pack(&args.dumps, &opts)
}

fn pack(inputs: &[PathBuf], opts: &Options) -> ExitCode {
    let (summary, packed) = rtconv::batch::pack_all(inputs, opts, &Progress::new(true));
    for p in &packed {
        let path = p.path.display();
        match &p.result {
            Ok(report) => {
                for problem in &report.problems {
                    diag::emit(&format!("rtconv: warning: {path}: {problem}"));
                }
                for warning in &report.warnings {
                    diag::emit(&format!("rtconv: warning: {warning}"));
                }
                if let Some(to) = &report.written_to {
                    eprintln!(
                        "rtconv: {path}: a core, left as it is; its rings with {} names packed -> {}",
                        report.packed,
                        to.display()
                    );
                } else if report.already {
                    eprintln!("rtconv: {path}: packed already; unchanged");
                } else if report.unnamed > 0 {
                    eprintln!(
                        "rtconv: {path}: packed {} names; {} code keys could not be named here and stay unnamed",
                        report.packed, report.unnamed
                    );
                } else {
                    eprintln!("rtconv: {path}: packed {} names; it converts without its binaries now", report.packed);
                }
            }
            Err(e) => diag::error(&e.to_string()),
        }
    }
    eprintln!(
        "rtconv: pack: {} packed, {} packed with keys left unnamed, {} failed",
        summary.converted, summary.salvaged, summary.failed
    );
    ExitCode::from(exit::of_summary(&summary))
}

/// `rtconv stats` over many dumps: one table per build-id, to `output` or stdout.
pub fn stats_all(
    dumps: &[PathBuf],
    stats: rtconv::stats::Options,
    run: &RunArgs,
    symbols: symbolize::Options,
    filter: Filter,
    output: Option<PathBuf>,
) -> ExitCode {
    let opts = run.options(symbols, filter);
    let mut out = match Sink::open(output.as_deref()) {
        Ok(out) => out,
        Err(e) => return output::cannot_create(output.as_deref(), &e),
    };
    let written = rtconv::batch::stats_all(dumps, stats, &opts, &Progress::new(run.quiet), &mut out);
    let summary = match written {
        Ok(summary) => summary,
        Err(e) => return output::write_failed(&e, &output::name(output.as_deref())),
    };
    eprintln!(
        "rtconv: stats: {} dumps merged ({} with losses), {} failed",
        summary.converted + summary.salvaged,
        summary.salvaged,
        summary.failed
    );
    match out.finish() {
        Ok(()) => ExitCode::from(exit::of_summary(&summary)),
        Err(e) => output::write_failed(&e, &output::name(output.as_deref())),
    }
}

/// The summary line of `batch` and `export`.
fn say_converted(command: &str, summary: &Summary, out_dir: &Path) {
    eprintln!(
        "rtconv: {command}: {} converted, {} salvaged (converted with losses), {} failed -> {}",
        summary.converted,
        summary.salvaged,
        summary.failed,
        out_dir.display()
    );
}
