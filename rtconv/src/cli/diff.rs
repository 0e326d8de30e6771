//! `rtconv diff`: two sides merged and compared, the comparison written,
//! its one-line summary and the `--fail-on` crossings reported.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rtconv::batch::Summary;
use rtconv::diff::Verdict;
use rtconv::stats::Output;

use super::args::{DiffArgs, DiffFormatArg, choose_format, diff_format_of};
use super::output::{self, Sink};
use super::progress::Progress;
use super::{diag, exit, usage};

/// The error for a side of which no dump could be read (nothing to compare), if any.
fn unread_side(sides: &[PathBuf; 2], summaries: [&Summary; 2]) -> Option<String> {
    let at = summaries.iter().position(|s| s.converted + s.salvaged == 0)?;
    Some(format!(
        "diff: {} ({}) has no dump that could be read; nothing compared",
        ["BASE", "NEW"][at],
        sides[at].display()
    ))
}

/// `rtconv diff`.
pub fn run(args: DiffArgs) -> ExitCode {
    let format = match choose_format(args.format, args.output.as_deref(), diff_format_of, DiffFormatArg::Table) {
        Ok(format) => format,
        Err(e) => return usage(&e),
    };
    let opts = args.run.options(args.symbols.options(), args.filter.filter());
    let progress = Progress::new(args.run.quiet);
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return output::cannot_create(args.output.as_deref(), &e),
    };
    let sides = [args.base.clone(), args.new.clone()];
    let (written, summaries, crossed) = if format == DiffFormatArg::Flamegraph {
        let (base, base_summary) = rtconv::batch::stacks_all(&sides[..1], &opts, &progress);
        let (new, new_summary) = rtconv::batch::stacks_all(&sides[1..], &opts, &progress);
        if let Some(side) = unread_side(&sides, [&base_summary, &new_summary]) {
            out.discard();
            diag::error(&side);
            return ExitCode::FAILURE;
        }
        let title = format!("{} → {} (self time; red: more, blue: less)", sides[0].display(), sides[1].display());
        let written = rtconv::render::diff::write_flamegraph(&base, &new, &title, &mut out);
        (written, [base_summary, new_summary], Vec::new())
    } else {
        let merge = |side: &Path| {
            let (groups, summary) =
                rtconv::batch::merge_all(&[side.to_path_buf()], args.calibrated, false, &opts, &progress);
            let mut all = rtconv::stats::Merged::default();
            for (_, merged) in groups {
                all.merge(merged);
            }
            (all, summary)
        };
        let ((base, base_summary), (new, new_summary)) = (merge(&sides[0]), merge(&sides[1]));
        if let Some(side) = unread_side(&sides, [&base_summary, &new_summary]) {
            out.discard();
            diag::error(&side);
            return ExitCode::FAILURE;
        }
        let (base_dumps, new_dumps) = (base.dumps, new.dumps);
        let changes = rtconv::diff::compare(base, new);
        let output = match format {
            DiffFormatArg::Csv => Output::Csv,
            DiffFormatArg::Json => Output::Json,
            _ => Output::Table,
        };
        let written = rtconv::render::diff::write(&changes, output, &mut out);
        let count = |v: Verdict| changes.iter().filter(|c| c.verdict() == v).count();
        eprintln!(
            "rtconv: diff: {base_dumps} base and {new_dumps} new dumps, {} functions: {} slower, {} faster, {} new, \
             {} gone, {} without a significant change (p < {})",
            changes.len(),
            count(Verdict::Slower),
            count(Verdict::Faster),
            count(Verdict::Added),
            count(Verdict::Removed),
            count(Verdict::Same),
            rtconv::diff::ALPHA
        );
        let crossed: Vec<String> = rtconv::diff::crossed(&changes, &args.fail_on)
            .into_iter()
            .map(|(c, t)| {
                let (base, new) = c.values(t.metric);
                let relative = c.relative(t.metric).map_or("new".to_string(), |r| format!("{:+.1}%", r * 100.0));
                let p = c.shift.map_or(String::new(), |s| format!(", p = {:.2e}", s.p_value));
                format!(
                    "{}: {} {base} -> {new} ({relative}{p}) crosses --fail-on {}",
                    c.function,
                    t.metric.name(),
                    t.text
                )
            })
            .collect();
        (written, [base_summary, new_summary], crossed)
    };
    if let Err(e) = written.and_then(|()| out.finish()) {
        return output::write_failed(&e, &output::name(args.output.as_deref()));
    }
    for line in &crossed {
        diag::error(line);
    }
    // Both sides converted something (see `unread_side`): 0, or 3 where some dumps were lost.
    if crossed.is_empty() {
        ExitCode::from(summaries.iter().map(exit::of_summary).max().unwrap_or(0))
    } else {
        ExitCode::from(exit::THRESHOLD)
    }
}
