//! The `rtconv` command line.

use std::io::{self, BufRead, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use rtconv::convert::{self, ConvertError, Format, Level};
use rtconv::diag::{When, emit};
use rtconv::output::Output as Sink;
use rtconv::stats::{Column, Output};
use rtconv::symbolize::{self, ModuleFiles, Source};

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
    /// When to color tables and diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    color: ColorArg,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

impl ColorArg {
    fn when(self) -> When {
        match self {
            ColorArg::Auto => When::Auto,
            ColorArg::Always => When::Always,
            ColorArg::Never => When::Never,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Convert a dump into a trace (Chrome JSON for Perfetto), collapsed stacks or a flame graph.
    Convert(ConvertArgs),
    /// Per-function statistics: calls, total, self, min, mean, p50, p90, p99, max, stddev,
    /// of one dump, or merged over many (files, directories, globs, archives) per build-id.
    Stats(StatsArgs),
    /// Convert many dumps (files, directories, glob patterns, .tar/.tar.gz/.tar.zst archives)
    /// in parallel, one output per dump in --out-dir.
    Batch(BatchArgs),
    /// Describe a dump: process, clock, modules, threads, losses, and how its keys were named.
    Info(InfoArgs),
    /// Name a dump's keys here, where its binaries are, and append the names to the dump, so it
    /// converts anywhere without them. Packing a packed dump changes nothing.
    Pack(PackArgs),
    /// Name addresses in a binary, as `addr2line -f -i -C` does (addresses from the
    /// command line, or one per line on stdin).
    Symbolize(SymbolizeArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell) to stdout.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the man pages: rtconv(1) to stdout, or one page per command into --out-dir.
    Man {
        /// Write rtconv.1 and rtconv-COMMAND.1 here instead.
        #[arg(short = 'o', long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct ConvertArgs {
    /// The dump(s) to convert; several are merged into one Chrome trace, aligned by their realtime anchors.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// Output format (default: what the -o name's extension says, else chrome).
    #[arg(short = 'f', long, value_enum)]
    format: Option<FormatArg>,
    /// Write the output here instead of to stdout (`-` is stdout). The extension picks the format:
    /// .json chrome, .svg flamegraph, .folded folded, .txt ftrace, .systrace systrace; a further .gz
    /// compresses it.
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    /// Chrome events: one complete event per span (x, smaller), or a begin and an end event (be;
    /// use it for speedscope, whose float `ts + dur` can misorder back-to-back spans).
    #[arg(long, value_enum, default_value_t = ChromeEventsArg::X)]
    chrome_events: ChromeEventsArg,
    /// Chrome: add each span's source place, inline chain and module to its args.
    #[arg(long)]
    args: bool,
    #[command(flatten)]
    symbols: SymbolArgs,
}

#[derive(Clone, Copy, ValueEnum)]
enum ChromeEventsArg {
    X,
    Be,
}

#[derive(clap::Args)]
struct BatchArgs {
    /// Dumps, directories (searched for *.rtd and archives), glob patterns, tar archives.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Chrome)]
    format: FormatArg,
    /// Where the outputs go, one per dump, named after it.
    #[arg(short = 'o', long, value_name = "DIR", required_unless_present = "pack")]
    out_dir: Option<PathBuf>,
    /// Instead of converting, pack every dump file in place (see `rtconv pack`).
    #[arg(long, conflicts_with = "out_dir")]
    pack: bool,
    /// Chrome events: x or be (see `rtconv convert --help`).
    #[arg(long, value_enum, default_value_t = ChromeEventsArg::X)]
    chrome_events: ChromeEventsArg,
    /// Chrome: add each span's source place, inline chain and module to its args.
    #[arg(long)]
    args: bool,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    symbols: SymbolArgs,
}

/// How work over many dumps runs.
#[derive(clap::Args)]
struct RunArgs {
    /// Worker threads (default: one per core).
    #[arg(short = 'j', long, value_name = "N")]
    jobs: Option<usize>,
    /// No progress bar (it shows only when stderr is a terminal anyway).
    #[arg(short = 'q', long)]
    quiet: bool,
}

impl RunArgs {
    fn options(&self, symbols: symbolize::Options) -> rtconv::batch::Options {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rtconv::batch::Options { jobs: self.jobs.unwrap_or(cores).max(1), quiet: self.quiet, symbols }
    }
}

#[derive(clap::Args)]
struct StatsArgs {
    /// The dump to summarize; with several, or a directory, glob or archive, the figures are
    /// merged over all of them, one table per program build-id.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// One table per thread instead of one over all threads.
    #[arg(long)]
    per_thread: bool,
    /// The call tree: every call path with its calls, total, self and share.
    #[arg(long)]
    tree: bool,
    /// Take the recorder's own cost, measured at dump time, out of every span.
    #[arg(long)]
    calibrated: bool,
    /// Leave outlying calls (above Q3 + 1.5 IQR of bucket maxima) out of min..stddev.
    #[arg(long)]
    clean: bool,
    /// Sort by this column (descending; name ascending).
    #[arg(long, value_enum, default_value_t = Column::Total)]
    sort: Column,
    /// Output form: an aligned table with human units, or CSV/JSON in nanoseconds (default: what
    /// the -o name's extension says: .json, .csv, .txt; else table).
    #[arg(short = 'f', long = "format", value_enum)]
    format: Option<Output>,
    /// Write the output here instead of to stdout (`-` is stdout; a further .gz compresses it).
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    symbols: SymbolArgs,
}

#[derive(clap::Args)]
struct InfoArgs {
    /// The dumps to describe.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// Output form: text, or a JSON array with one object per dump (default: what the -o name's
    /// extension says, else text).
    #[arg(short = 'f', long, value_enum)]
    format: Option<InfoFormat>,
    /// Write the output here instead of to stdout (`-` is stdout).
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    symbols: SymbolArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum InfoFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
struct PackArgs {
    /// The dumps to pack, each in place.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    #[command(flatten)]
    symbols: SymbolArgs,
}

#[derive(clap::Args)]
struct SymbolizeArgs {
    /// The binary (or debug file) the addresses are in.
    #[arg(short = 'e', long, value_name = "BIN")]
    exe: PathBuf,
    /// Addresses as the file sees them (ELF virtual addresses), hex with or without 0x.
    addresses: Vec<String>,
    /// Print each address before its names, as `addr2line -a` does.
    #[arg(short = 'a', long)]
    addresses_too: bool,
    #[command(flatten)]
    naming: NamingArgs,
}

/// Where the recorded binaries are, and how to name.
#[derive(clap::Args)]
struct SymbolArgs {
    /// The main executable, when it is not at the path recorded in the dump.
    #[arg(long, value_name = "PATH")]
    exe: Option<PathBuf>,
    /// A directory of binaries and debug files, found by build-id (repeatable).
    #[arg(long, value_name = "DIR")]
    sym_dir: Vec<PathBuf>,
    /// Use binaries whose build-id differs from the one recorded (names may be wrong).
    #[arg(long)]
    allow_mismatch: bool,
    #[command(flatten)]
    naming: NamingArgs,
}

#[derive(clap::Args)]
struct NamingArgs {
    /// Backends to name keys with, in order (default: packed, sites, addr2line if given, dwarf, symtab, dladdr).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "BACKEND,...")]
    symbolizer: Vec<BackendArg>,
    /// An addr2line-compatible program (GNU addr2line, llvm-addr2line, arm-none-eabi-addr2line, ...).
    #[arg(long, value_name = "CMD")]
    addr2line: Option<PathBuf>,
    /// Keep Rust and C++ names mangled.
    #[arg(long)]
    no_demangle: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum BackendArg {
    /// The dump's names section (`rtconv pack`).
    Packed,
    /// The dump's site section (named spans, #[trace]).
    Sites,
    /// DWARF line and inline info.
    Dwarf,
    /// ELF symbol tables.
    Symtab,
    /// The dump's dladdr table.
    Dladdr,
    /// The program given with --addr2line.
    Addr2line,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// Chrome trace event JSON (object format), for Perfetto and chrome://tracing.
    Chrome,
    /// Collapsed stacks weighted by self time in ns (flamegraph.pl, inferno), root frame = thread.
    Folded,
    /// A flame graph SVG of self time (through inferno).
    Flamegraph,
    /// The kernel function_graph tracer's text layout.
    Ftrace,
    /// Systrace text (tracing_mark_write B/E lines) for Perfetto and Catapult.
    Systrace,
}

impl NamingArgs {
    fn options(self, search: symbolize::Search) -> symbolize::Options {
        let order = (!self.symbolizer.is_empty()).then(|| {
            self.symbolizer
                .iter()
                .map(|b| match b {
                    BackendArg::Packed => Source::Packed,
                    BackendArg::Sites => Source::Site,
                    BackendArg::Dwarf => Source::Dwarf,
                    BackendArg::Symtab => Source::Symtab,
                    BackendArg::Dladdr => Source::Dladdr,
                    BackendArg::Addr2line => Source::Addr2line,
                })
                .collect()
        });
        symbolize::Options { search, order, addr2line: self.addr2line, demangle: !self.no_demangle }
    }
}

impl SymbolArgs {
    fn options(self) -> symbolize::Options {
        let defaults = symbolize::Options::default();
        let search = symbolize::Search {
            exe: self.exe,
            sym_dirs: self.sym_dir,
            allow_mismatch: self.allow_mismatch,
            ..defaults.search
        };
        self.naming.options(search)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let color = cli.color.when();
    rtconv::diag::set_color(color);
    match cli.command {
        Command::Convert(args) => run_convert(args),
        Command::Stats(args) => run_stats(args, color),
        Command::Batch(args) => run_batch(args),
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

/// The output format: `-f` if given, else what the output's extension says (a trailing `.gz`
/// aside), else `default`. A `-f` that contradicts the extension is an error.
fn choose_format<T: ValueEnum + Copy + PartialEq>(
    given: Option<T>,
    output: Option<&Path>,
    by_extension: impl Fn(&str) -> Option<T>,
    default: T,
) -> Result<T, String> {
    let name = |v: T| v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default();
    let path = output.filter(|p| !rtconv::output::is_stdout(Some(p)));
    let extension = path.and_then(|p| {
        let file = p.file_name()?.to_str()?;
        let file = file.strip_suffix(".gz").unwrap_or(file);
        Some(Path::new(file).extension()?.to_str()?.to_ascii_lowercase())
    });
    let implied = extension.as_deref().and_then(&by_extension);
    match (given, implied) {
        (Some(f), Some(i)) if f != i => Err(format!(
            "-f {} contradicts the output name {} (its extension means -f {}); drop -f or rename the output",
            name(f),
            path.map(|p| p.display().to_string()).unwrap_or_default(),
            name(i)
        )),
        (Some(f), _) => Ok(f),
        (None, Some(i)) => Ok(i),
        (None, None) => Ok(default),
    }
}

fn trace_format_of(extension: &str) -> Option<FormatArg> {
    match extension {
        "json" => Some(FormatArg::Chrome),
        "svg" | "svgz" => Some(FormatArg::Flamegraph),
        "folded" => Some(FormatArg::Folded),
        "txt" | "ftrace" => Some(FormatArg::Ftrace),
        "systrace" => Some(FormatArg::Systrace),
        _ => None,
    }
}

fn stats_format_of(extension: &str) -> Option<Output> {
    match extension {
        "json" => Some(Output::Json),
        "csv" => Some(Output::Csv),
        "txt" => Some(Output::Table),
        _ => None,
    }
}

/// A directory or an archive given where one dump file is expected: what to use instead.
fn not_a_dump_file(path: &Path) -> Option<String> {
    let what = if path.is_dir() {
        "a directory"
    } else if rtconv::batch::inputs::archive_kind(path).is_some() {
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
    let output = match choose_format(args.format, args.output.as_deref(), stats_format_of, Output::Table) {
        Ok(output) => output,
        Err(e) => return usage(&e),
    };
    let opts = rtconv::stats::Options {
        sort: args.sort,
        per_thread: args.per_thread,
        output,
        tree: args.tree,
        calibrated: args.calibrated,
        clean: args.clean,
        color: output == Output::Table && rtconv::output::is_stdout(args.output.as_deref()) && color.stdout(),
    };
    // One dump file: its own tables. Anything else: merged over every dump.
    if let [dump] = args.dumps.as_slice()
        && dump.is_file()
        && rtconv::batch::inputs::archive_kind(dump).is_none()
    {
        return convert_to(
            std::slice::from_ref(dump),
            Format::Stats(opts),
            args.output.as_deref(),
            args.symbols.options(),
        );
    }
    if args.tree || args.per_thread {
        return usage("--tree and --per-thread show one dump; over many dumps, figures are merged per build-id");
    }
    let batch = args.run.options(args.symbols.options());
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return cannot_create(args.output.as_deref(), &e),
    };
    let result = rtconv::batch::stats_all(&args.dumps, opts, &batch, &mut out);
    match result.and_then(|summary| out.finish().map(|()| summary)) {
        Ok(summary) => ExitCode::from(summary.exit_code()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            emit(&format!("rtconv: error: writing {}: {e}", output_name(args.output.as_deref())));
            ExitCode::FAILURE
        }
    }
}

/// How messages name an output: its path, or `stdout`.
fn output_name(path: Option<&Path>) -> String {
    match path.filter(|p| !rtconv::output::is_stdout(Some(p))) {
        Some(p) => p.display().to_string(),
        None => "stdout".to_string(),
    }
}

fn cannot_create(path: Option<&Path>, e: &io::Error) -> ExitCode {
    emit(&format!("rtconv: error: cannot create {}: {e}", output_name(path)));
    ExitCode::FAILURE
}

fn run_batch(args: BatchArgs) -> ExitCode {
    let format = format_of(args.format, args.chrome_events, args.args);
    let opts = args.run.options(args.symbols.options());
    match args.out_dir {
        Some(out_dir) => ExitCode::from(rtconv::batch::convert_all(&args.inputs, format, &out_dir, &opts).exit_code()),
        None => ExitCode::from(rtconv::batch::pack_all(&args.inputs, &opts).exit_code()),
    }
}

fn run_pack(args: PackArgs) -> ExitCode {
    let opts = args.symbols.options();
    let mut summary = rtconv::batch::Summary::default();
    for dump in &args.dumps {
        match rtconv::pack::pack(dump, &opts) {
            Ok(report) => {
                for line in rtconv::batch::pack_lines(dump, &report) {
                    emit(&line);
                }
                if report.unnamed > 0 { summary.salvaged += 1 } else { summary.converted += 1 }
            }
            Err(e) => {
                emit(&format!("rtconv: error: {e}"));
                summary.failed += 1;
            }
        }
    }
    ExitCode::from(summary.exit_code())
}

fn format_of(format: FormatArg, events: ChromeEventsArg, args: bool) -> Format {
    match format {
        FormatArg::Chrome => {
            Format::Chrome(rtconv::render::chrome::Options { begin_end: matches!(events, ChromeEventsArg::Be), args })
        }
        FormatArg::Folded => Format::Folded,
        FormatArg::Flamegraph => Format::Flamegraph,
        FormatArg::Ftrace => Format::Ftrace,
        FormatArg::Systrace => Format::Systrace,
    }
}

fn run_convert(args: ConvertArgs) -> ExitCode {
    if let Some(hint) = args.dumps.iter().find_map(|d| not_a_dump_file(d)) {
        return usage(&hint);
    }
    let format = match choose_format(args.format, args.output.as_deref(), trace_format_of, FormatArg::Chrome) {
        Ok(format) => format,
        Err(e) => return usage(&e),
    };
    let format = format_of(format, args.chrome_events, args.args);
    convert_to(&args.dumps, format, args.output.as_deref(), args.symbols.options())
}

/// Converts `dumps` into `format`, to `output` or stdout, and reports as `rtconv convert` does.
fn convert_to(dumps: &[PathBuf], format: Format, output: Option<&Path>, opts: symbolize::Options) -> ExitCode {
    let mut out = match Sink::open(output) {
        Ok(out) => out,
        Err(e) => return cannot_create(output, &e),
    };
    let result = convert::convert_many(dumps, format, &opts, &mut out);
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
                let level = match d.level {
                    Level::Warning => "warning",
                    Level::Error => "error",
                };
                emit(&format!("rtconv: {level}: {}", d.message));
            }
            if !rtconv::output::is_stdout(output) {
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
            emit(&format!("rtconv: error: {}: writing {}: {e}", names(), output_name(output)));
            ExitCode::FAILURE
        }
        Err(e) => {
            emit(&format!("rtconv: error: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn run_info(args: InfoArgs) -> ExitCode {
    let form = match choose_format(
        args.format,
        args.output.as_deref(),
        |e| (e == "json").then_some(InfoFormat::Json),
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
    let (mut described, mut failed) = (Vec::new(), 0);
    let mut written = Ok(());
    for dump in &args.dumps {
        match rtconv::info::describe(dump, &opts) {
            Ok(d) if form == InfoFormat::Json => described.push(d.to_json()),
            Ok(d) => {
                // One blank line between the reports of several dumps.
                if written.is_ok() && !described.is_empty() {
                    written = writeln!(out);
                }
                if written.is_ok() {
                    written = d.write_text(&mut out);
                }
                described.push(serde_json::Value::Null);
            }
            Err(e) => {
                emit(&format!("rtconv: error: {e}"));
                failed += 1;
            }
        }
    }
    if form == InfoFormat::Json {
        written = written.and_then(|()| {
            serde_json::to_writer_pretty(&mut out, &described)?;
            writeln!(out)
        });
    }
    match written.and_then(|()| out.finish()) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return ExitCode::SUCCESS,
        Err(e) => {
            emit(&format!("rtconv: error: writing {}: {e}", output_name(args.output.as_deref())));
            return ExitCode::FAILURE;
        }
    }
    let summary = rtconv::batch::Summary { converted: described.len() as u64, failed, ..Default::default() };
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
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            emit(&format!("rtconv: error: writing the man pages: {e}"));
            ExitCode::FAILURE
        }
    }
}

fn run_symbolize(args: SymbolizeArgs) -> ExitCode {
    let opts = args.naming.options(symbolize::Search::default());
    let mut texts = args.addresses;
    if texts.is_empty() {
        texts = io::stdin().lock().lines().map_while(Result::ok).filter(|l| !l.trim().is_empty()).collect();
    }
    let mut addresses = Vec::with_capacity(texts.len());
    for text in &texts {
        let digits = text.trim().trim_start_matches("0x").trim_start_matches("0X");
        match u64::from_str_radix(digits, 16) {
            Ok(a) => addresses.push(a),
            Err(_) => {
                emit(&format!("rtconv: error: {text:?} is not a hex address; give addresses like 0x1d59f"));
                return ExitCode::from(2);
            }
        }
    }
    if !args.exe.is_file() {
        emit(&format!("rtconv: error: {}: no such file; pass the binary with -e", args.exe.display()));
        return ExitCode::FAILURE;
    }
    if let Err(e) = symbolize::files::check_object(&args.exe) {
        emit(&format!("rtconv: error: {e}"));
        return ExitCode::FAILURE;
    }
    let files = ModuleFiles { binary: args.exe.clone(), debug: Some(args.exe.clone()) };
    let mut names: Vec<Option<symbolize::SpanName>> = vec![None; addresses.len()];
    let mut failed = false;
    for backend in opts.backends() {
        let pending: Vec<usize> = (0..addresses.len()).filter(|&i| names[i].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let wanted: Vec<u64> = pending.iter().map(|&i| addresses[i]).collect();
        match symbolize::resolve_file(&files, &wanted, backend, &opts) {
            Some(Ok(found)) => {
                for (i, name) in pending.into_iter().zip(found) {
                    names[i] = name;
                }
            }
            Some(Err(e)) => {
                failed = true;
                emit(&format!("rtconv: error: {e}"));
            }
            None => {}
        }
    }
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let written = (|| -> io::Result<()> {
        // As GNU addr2line prints a place: `??:0` for none, `file:?` for no line.
        fn place(out: &mut impl Write, file: &Option<String>, line: Option<u32>) -> io::Result<()> {
            match (file, line) {
                (None, _) => out.write_all(b"??:0\n"),
                (Some(f), None) => writeln!(out, "{f}:?"),
                (Some(f), Some(l)) => writeln!(out, "{f}:{l}"),
            }
        }
        for (address, name) in addresses.iter().zip(&names) {
            if args.addresses_too {
                writeln!(out, "{address:#018x}")?;
            }
            match name {
                Some(n) => {
                    out.write_all(n.name.as_bytes())?;
                    out.write_all(b"\n")?;
                    place(&mut out, &n.file, n.line)?;
                    for f in &n.inlined_into {
                        out.write_all(f.function.as_bytes())?;
                        out.write_all(b"\n")?;
                        place(&mut out, &f.file, f.line)?;
                    }
                }
                None => out.write_all(b"??\n??:0\n")?,
            }
        }
        out.flush()
    })();
    // The process ends next: let the OS reclaim the names rather than free them one by one.
    std::mem::forget(names);
    match written {
        Ok(()) if failed => ExitCode::from(EXIT_DEGRADED),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            emit(&format!("rtconv: error: writing the output: {e}"));
            ExitCode::FAILURE
        }
    }
}
