//! The `rtconv` command line: parses the arguments ([`cli`]) and runs the
//! command on the library, one `run_*` function each.

/// mimalloc, not the C library's allocator: symbolizing 10,000 addresses of
/// ripgrep took 8 % less CPU (the C library's spent 6 % in malloc and free,
/// and 10,800 page faults where mimalloc takes 830), docs/PERFORMANCE.md.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use cli::{
    BatchArgs, BatchFormatArg, Cli, Command, ConvertArgs, DiffArgs, DiffFormatArg, ExportArgs, ExportFormatArg,
    FormatArg, InfoArgs, InfoFormat, PackArgs, StatsArgs, StatsFormatArg, SymbolizeArgs, choose_format, format_of,
    stats_format_of, trace_format_of,
};
use output::Output as Sink;
use rtconv::convert::{self, ConvertError, EXIT_DEGRADED, Format};
use rtconv::diag::{When, emit};
use rtconv::stats::Output;
use rtconv::symbolize;

mod cli;
mod output;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = cli.color.when();
    rtconv::diag::set_color(color);
    match cli.command {
        Command::Convert(args) => run_convert(args),
        Command::Stats(args) => run_stats(args, color),
        Command::Batch(args) => run_batch(args),
        Command::Export(args) => run_export(args),
        Command::Diff(args) => run_diff(args),
        Command::Info(args) => run_info(args),
        Command::Pack(args) => run_pack(args),
        Command::Symbolize(args) => run_symbolize(args),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "rtconv", &mut io::stdout().lock());
            ExitCode::SUCCESS
        }
        Command::Man { out_dir } => run_man(out_dir.as_deref()),
    }
}

/// Exit status 2 with one line: the command line asks for something impossible.
fn usage(message: &str) -> ExitCode {
    emit(&format!("rtconv: error: {message}"));
    ExitCode::from(2)
}

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

fn run_stats(args: StatsArgs, color: When) -> ExitCode {
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
    let batch = args.run.options(args.symbols.options(), args.filter.filter());
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return cannot_create(args.output.as_deref(), &e),
    };
    let result = rtconv::batch::stats_all(&args.dumps, opts, &batch, &mut out);
    match result.and_then(|summary| out.finish().map(|()| summary)) {
        Ok(summary) => ExitCode::from(summary.exit_code()),
        Err(e) => write_failed(&e, &output_name(args.output.as_deref())),
    }
}

/// How messages name an output: its path, or `stdout`.
fn output_name(path: Option<&Path>) -> String {
    match output::file(path) {
        Some(p) => p.display().to_string(),
        None => "stdout".to_string(),
    }
}

/// A write to `what` that failed: a closed pipe ends quietly (`rtconv … | head`), anything
/// else is one error line.
fn write_failed(e: &io::Error, what: &str) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    emit(&format!("rtconv: error: writing {what}: {e}"));
    ExitCode::FAILURE
}

fn cannot_create(path: Option<&Path>, e: &io::Error) -> ExitCode {
    emit(&format!("rtconv: error: cannot create {}: {e}", output_name(path)));
    ExitCode::FAILURE
}

fn run_batch(args: BatchArgs) -> ExitCode {
    let opts = args.run.options(args.symbols.options(), args.filter.filter());
    let summary = match (args.out_dir, args.format) {
        (Some(out_dir), BatchFormatArg::Parquet) => {
            rtconv::batch::export_all(&args.inputs, &out_dir, args.host.as_deref(), &opts)
        }
        (Some(out_dir), BatchFormatArg::Trace(format)) => {
            rtconv::batch::convert_all(&args.inputs, format_of(format, &args.chrome), &out_dir, &opts)
        }
        (None, _) => rtconv::batch::pack_all(&args.inputs, &opts),
    };
    ExitCode::from(summary.exit_code())
}

fn run_export(args: ExportArgs) -> ExitCode {
    let ExportFormatArg::Parquet = args.format;
    let opts = args.run.options(args.symbols.options(), args.filter.filter());
    ExitCode::from(rtconv::batch::export_all(&args.inputs, &args.out_dir, args.host.as_deref(), &opts).exit_code())
}

fn run_pack(args: PackArgs) -> ExitCode {
    let opts = rtconv::batch::Options {
        jobs: 1,
        quiet: true,
        symbols: args.symbols.options(),
        filter: rtconv::model::Filter::default(),
        max_dump_size: rtconv::batch::MAX_DUMP_SIZE,
    };
    ExitCode::from(rtconv::batch::pack_all(&args.dumps, &opts).exit_code())
}

fn run_convert(args: ConvertArgs) -> ExitCode {
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

/// Converts `dumps` into `format`, to `output` or stdout, and reports as `rtconv convert` does.
fn convert_to(
    dumps: &[PathBuf],
    format: Format,
    output: Option<&Path>,
    opts: symbolize::Options,
    filter: &rtconv::model::Filter,
) -> ExitCode {
    // pprof's profiles are gzipped by their writer: `x.pb.gz` is not compressed again.
    let mut out = match Sink::open_as(output, format != Format::Pprof) {
        Ok(out) => out,
        Err(e) => return cannot_create(output, &e),
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
                emit(&d.to_string());
            }
            if output::file(output).is_some() {
                eprintln!(
                    "rtconv: {}: {} spans on {} threads -> {}",
                    names(),
                    report.spans,
                    report.threads,
                    output_name(output)
                );
            }
            if report.degraded() { ExitCode::from(EXIT_DEGRADED) } else { ExitCode::SUCCESS }
        }
        Err(ConvertError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(ConvertError::Output(e)) => {
            // Nothing was put under the output's name (see `output`).
            emit(&format!("rtconv: error: {} (from {}): {e}; nothing written", output_name(output), names()));
            ExitCode::FAILURE
        }
        Err(e) => {
            emit(&format!("rtconv: error: {e}"));
            ExitCode::FAILURE
        }
    }
}

/// The error for a side of `rtconv diff` of which no dump could be read (nothing to compare), if any.
fn unread_side(sides: &[PathBuf; 2], summaries: [&rtconv::batch::Summary; 2]) -> Option<String> {
    let at = summaries.iter().position(|s| s.converted + s.salvaged == 0)?;
    Some(format!(
        "rtconv: error: diff: {} ({}) has no dump that could be read; nothing compared",
        ["BASE", "NEW"][at],
        sides[at].display()
    ))
}

/// rtconv's exit status when `rtconv diff --fail-on` found a change over its limit.
const EXIT_THRESHOLD: u8 = 4;

fn run_diff(args: DiffArgs) -> ExitCode {
    let format = match choose_format(args.format, args.output.as_deref(), cli::diff_format_of, DiffFormatArg::Table) {
        Ok(format) => format,
        Err(e) => return usage(&e),
    };
    let opts = args.run.options(args.symbols.options(), args.filter.filter());
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return cannot_create(args.output.as_deref(), &e),
    };
    let sides = [args.base.clone(), args.new.clone()];
    let (written, summaries, crossed) = if format == DiffFormatArg::Flamegraph {
        let (base, base_summary) = rtconv::batch::stacks_all(&sides[..1], &opts);
        let (new, new_summary) = rtconv::batch::stacks_all(&sides[1..], &opts);
        if let Some(side) = unread_side(&sides, [&base_summary, &new_summary]) {
            out.discard();
            emit(&side);
            return ExitCode::FAILURE;
        }
        let title = format!("{} → {} (self time; red: more, blue: less)", sides[0].display(), sides[1].display());
        let written = rtconv::render::diff::write_flamegraph(&base, &new, &title, &mut out);
        (written, [base_summary, new_summary], Vec::new())
    } else {
        let merge = |side: &Path| {
            let (groups, summary) = rtconv::batch::merge_all(&[side.to_path_buf()], args.calibrated, false, &opts);
            let mut all = rtconv::stats::Merged::default();
            for (_, merged) in groups {
                all.merge(merged);
            }
            (all, summary)
        };
        let ((base, base_summary), (new, new_summary)) = (merge(&sides[0]), merge(&sides[1]));
        if let Some(side) = unread_side(&sides, [&base_summary, &new_summary]) {
            out.discard();
            emit(&side);
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
        let count = |v: rtconv::diff::Verdict| changes.iter().filter(|c| c.verdict() == v).count();
        use rtconv::diff::Verdict;
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
                    "rtconv: error: {}: {} {base} -> {new} ({relative}{p}) crosses --fail-on {}",
                    c.function,
                    t.metric.name(),
                    t.text
                )
            })
            .collect();
        (written, [base_summary, new_summary], crossed)
    };
    if let Err(e) = written.and_then(|()| out.finish()) {
        return write_failed(&e, &output_name(args.output.as_deref()));
    }
    for line in &crossed {
        emit(line);
    }
    // Both sides converted something (see `unread_side`): 0, or 3 where some dumps were lost.
    if crossed.is_empty() {
        ExitCode::from(summaries.map(|s| s.exit_code()).into_iter().max().unwrap_or(0))
    } else {
        ExitCode::from(EXIT_THRESHOLD)
    }
}

fn run_info(args: InfoArgs) -> ExitCode {
    let form = match choose_format(
        args.format,
        args.output.as_deref(),
        |name| name.ends_with(".json").then_some(InfoFormat::Json),
        InfoFormat::Text,
    ) {
        Ok(form) => form,
        Err(e) => return usage(&e),
    };
    let opts = args.symbols.options();
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return cannot_create(args.output.as_deref(), &e),
    };
    let (mut described, mut failed, mut json) = (0, 0, Vec::new());
    let mut written = Ok(());
    for dump in &args.dumps {
        match rtconv::info::describe(dump, &opts) {
            Ok(d) if form == InfoFormat::Json => json.push(d.to_json()),
            // One blank line between the reports of several dumps.
            Ok(d) => {
                if written.is_ok() && described > 0 {
                    written = writeln!(out);
                }
                if written.is_ok() {
                    written = d.write_text(&mut out);
                }
            }
            Err(e) => {
                emit(&format!("rtconv: error: {e}"));
                failed += 1;
                continue;
            }
        }
        described += 1;
    }
    if form == InfoFormat::Json {
        written = written.and_then(|()| {
            serde_json::to_writer_pretty(&mut out, &json)?;
            writeln!(out)
        });
    }
    match written.and_then(|()| out.finish()) {
        Ok(()) => {}
        Err(e) => return write_failed(&e, &output_name(args.output.as_deref())),
    }
    let summary = rtconv::batch::Summary { converted: described, failed, ..Default::default() };
    ExitCode::from(summary.exit_code())
}

/// Writes rtconv(1) to stdout, or every page into `out_dir`.
fn run_man(out_dir: Option<&Path>) -> ExitCode {
    let written = match out_dir {
        Some(dir) => std::fs::create_dir_all(dir).and_then(|()| clap_mangen::generate_to(Cli::command(), dir)),
        None => {
            let mut out = BufWriter::new(io::stdout().lock());
            clap_mangen::Man::new(Cli::command()).render(&mut out).and_then(|()| out.flush())
        }
    };
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => write_failed(&e, "the man pages"),
    }
}

fn run_symbolize(args: SymbolizeArgs) -> ExitCode {
    use symbolize::answer::{
        Lookup, Query, Session, Style, name_batch, parse_query, query_lines, read_query_line, write_answer,
    };
    let search = symbolize::Search { sym_dirs: args.sym_dir.clone(), ..symbolize::Options::default().search };
    let mut opts = args.naming.options(search);
    // GNU addr2line's default: names as the file has them; -C demangles.
    opts.demangle = args.demangle && opts.demangle;
    let style = Style {
        addresses: args.addresses_too,
        functions: args.functions,
        inlines: args.inlines && !args.no_inlines,
        pretty: args.pretty_print,
        basenames: args.basenames,
        json: args.output_style == cli::OutputStyle::Json,
    };
    let lookup = Lookup { section: args.section.clone(), relative: args.relative_address, adjust_vma: args.adjust_vma };
    if let Some(exe) = &args.exe {
        if !exe.is_file() {
            emit(&format!("rtconv: error: {}: no such file; pass the binary with -e", exe.display()));
            return ExitCode::FAILURE;
        }
        if let Err(e) = opts.search.files_for(exe) {
            emit(&format!("rtconv: error: {e}"));
            return ExitCode::FAILURE;
        }
    }
    // Each warning once (a module that cannot be read is said of its first query only).
    let (mut degraded, mut said) = (false, std::collections::HashSet::new());
    let mut warn = |text: &str| {
        degraded = true;
        if said.insert(text.to_string()) {
            emit(&format!("rtconv: warning: {text}"));
        }
    };
    let exe = args.exe.as_deref();
    // What a line that is not a query is answered for: an unknown address.
    let unparsed = || Query { module: exe.map(Path::to_path_buf).unwrap_or_default(), address: 0 };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let stdin = io::stdin();
    // Answered as they come when read from a terminal or a pipe; a file, or arguments, all at once.
    let interactive = args.addresses.is_empty() && !stdin_is_regular_file();
    let written = if interactive {
        (|| -> io::Result<()> {
            let mut session = Session::new(opts, lookup);
            let mut input = io::BufReader::new(stdin.lock());
            let mut line = Vec::new();
            for number in 1.. {
                let Some(text) = read_query_line(&mut input, &mut line, number)? else { break };
                if text.trim().is_empty() {
                    continue;
                }
                let (query, name) = match parse_query(&text, exe) {
                    Ok(q) => {
                        let name = session.name(&q).unwrap_or_else(|e| {
                            warn(&format!("{}: {e}", q.module.display()));
                            None
                        });
                        (q, name)
                    }
                    Err(e) => {
                        warn(&e);
                        (unparsed(), None)
                    }
                };
                for w in session.warnings.drain(..) {
                    warn(&w);
                }
                write_answer(&mut out, style, &query, name.as_ref())?;
                if style.json {
                    out.write_all(b"\n")?;
                }
                // Nothing more waiting: the asker may be waiting for this answer.
                if input.buffer().is_empty() {
                    out.flush()?;
                }
            }
            out.flush()
        })()
    } else {
        let texts = if args.addresses.is_empty() {
            match query_lines(stdin.lock()) {
                Ok(lines) => lines,
                Err(e) => return symbolize_input_failed(&e),
            }
        } else {
            args.addresses.clone()
        };
        let parsed: Vec<Result<Query, String>> = texts.iter().map(|t| parse_query(t, exe)).collect();
        let queries: Vec<Query> = parsed.iter().filter_map(|q| q.as_ref().ok().cloned()).collect();
        let (names, warnings) = name_batch(&queries, &opts, &lookup);
        for w in &warnings {
            warn(w);
        }
        let nothing = unparsed();
        let written = (|| -> io::Result<()> {
            let mut names = names.iter();
            let json_array = style.json && !args.addresses.is_empty();
            if json_array {
                out.write_all(b"[")?;
            }
            for (i, q) in parsed.iter().enumerate() {
                let (query, name) = match q {
                    Ok(q) => match names.next() {
                        Some(Ok(name)) => (q, name.as_ref()),
                        Some(Err(e)) => {
                            warn(&format!("{}: {e}", q.module.display()));
                            (q, None)
                        }
                        None => (q, None),
                    },
                    Err(e) => {
                        warn(e);
                        (&nothing, None)
                    }
                };
                if json_array && i > 0 {
                    out.write_all(b",")?;
                }
                write_answer(&mut out, style, query, name)?;
                if style.json && !json_array {
                    out.write_all(b"\n")?;
                }
            }
            if json_array {
                out.write_all(b"]\n")?;
            }
            out.flush()
        })();
        // The process ends next: its memory goes back to the system whole, sooner than
        // freed answer by answer (a tenth of the time of a run named from the index).
        std::mem::forget((names, parsed, queries, texts));
        written
    };
    match written {
        Ok(()) if degraded => ExitCode::from(EXIT_DEGRADED),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => symbolize_input_failed(&e),
        Err(e) => write_failed(&e, "the names"),
    }
}

/// An input `rtconv symbolize` cannot read on from: exit 2.
fn symbolize_input_failed(e: &io::Error) -> ExitCode {
    emit(&format!("rtconv: error: stdin {e}"));
    ExitCode::from(2)
}

/// Whether stdin is a regular file (`< file`), which is read whole rather than answered line by line.
fn stdin_is_regular_file() -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else { return false };
    std::fs::File::from(fd).metadata().is_ok_and(|m| m.is_file())
}
