//! The `rtconv` command line.

use std::fs::File;
use std::io::{self, BufRead, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use rtconv::convert::{self, ConvertError, Format, Level};
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
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Convert a dump into a trace (Chrome JSON for Perfetto), collapsed stacks or a flame graph.
    Convert(ConvertArgs),
    /// Per-function statistics: calls, total, self, min, mean, p50, p90, p99, max, stddev —
    /// of one dump, or merged over many (files, directories, globs, archives) per build-id.
    Stats(StatsArgs),
    /// Convert many dumps — files, directories, glob patterns, .tar/.tar.gz/.tar.zst archives —
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
}

#[derive(clap::Args)]
struct ConvertArgs {
    /// The dump(s) to convert; several are merged into one Chrome trace, aligned by their realtime anchors.
    #[arg(required = true)]
    dumps: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = FormatArg::Chrome)]
    format: FormatArg,
    /// Write the output here instead of to stdout.
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
    #[arg(long, value_name = "DIR", required_unless_present = "pack")]
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
    /// Output form: an aligned table with human units, or CSV/JSON in nanoseconds.
    #[arg(long = "format", value_enum, default_value_t = Output::Table)]
    format: Output,
    /// Write the output here instead of to stdout.
    #[arg(short = 'o', long, value_name = "PATH")]
    output: Option<PathBuf>,
    #[command(flatten)]
    run: RunArgs,
    #[command(flatten)]
    symbols: SymbolArgs,
}

#[derive(clap::Args)]
struct InfoArgs {
    /// The dump to describe.
    dump: PathBuf,
    #[command(flatten)]
    symbols: SymbolArgs,
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

#[derive(Clone, Copy, ValueEnum)]
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
    match cli.command {
        Command::Convert(args) => run_convert(args),
        Command::Stats(args) => run_stats(args),
        Command::Batch(args) => run_batch(args),
        Command::Info(args) => run_info(args),
        Command::Pack(args) => run_pack(args),
        Command::Symbolize(args) => run_symbolize(args),
    }
}

fn run_stats(args: StatsArgs) -> ExitCode {
    let opts = rtconv::stats::Options {
        sort: args.sort,
        per_thread: args.per_thread,
        output: args.format,
        tree: args.tree,
        calibrated: args.calibrated,
        clean: args.clean,
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
        eprintln!(
            "rtconv: error: --tree and --per-thread show one dump; over many dumps, figures are merged per build-id"
        );
        return ExitCode::from(2);
    }
    let batch = args.run.options(args.symbols.options());
    let result = match &args.output {
        Some(path) => match File::create(path) {
            Ok(file) => rtconv::batch::stats_all(&args.dumps, opts, &batch, &mut BufWriter::new(file)),
            Err(e) => {
                eprintln!("rtconv: error: cannot create {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => rtconv::batch::stats_all(&args.dumps, opts, &batch, &mut BufWriter::new(io::stdout().lock())),
    };
    match result {
        Ok(summary) => ExitCode::from(summary.exit_code()),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtconv: error: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
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
                    eprintln!("{line}");
                }
                if report.unnamed > 0 { summary.salvaged += 1 } else { summary.converted += 1 }
            }
            Err(e) => {
                eprintln!("rtconv: error: {e}");
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
    let format = format_of(args.format, args.chrome_events, args.args);
    convert_to(&args.dumps, format, args.output.as_deref(), args.symbols.options())
}

/// Converts `dumps` into `format`, to `output` or stdout, and reports as `rtconv convert` does.
fn convert_to(
    dumps: &[PathBuf],
    format: Format,
    output: Option<&std::path::Path>,
    opts: symbolize::Options,
) -> ExitCode {
    let result = match output {
        Some(path) => match File::create(path) {
            Ok(file) => convert::convert_many(dumps, format, &opts, &mut BufWriter::with_capacity(1 << 16, file)),
            Err(e) => {
                eprintln!("rtconv: error: cannot create {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
        None => {
            convert::convert_many(dumps, format, &opts, &mut BufWriter::with_capacity(1 << 16, io::stdout().lock()))
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
            if let Some(path) = output {
                eprintln!(
                    "rtconv: {}: {} spans on {} threads -> {}",
                    dumps.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
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

fn run_info(args: InfoArgs) -> ExitCode {
    let opts = args.symbols.options();
    let mut out = BufWriter::new(io::stdout().lock());
    match rtconv::info::info(&args.dump, &opts, &mut out)
        .and_then(|()| out.flush().map_err(rtconv::info::InfoError::Output))
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(rtconv::info::InfoError::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtconv: error: {e}");
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
                eprintln!("rtconv: error: {text:?} is not a hex address; give addresses like 0x1d59f");
                return ExitCode::from(2);
            }
        }
    }
    if !args.exe.is_file() {
        eprintln!("rtconv: error: {}: no such file; pass the binary with -e", args.exe.display());
        return ExitCode::FAILURE;
    }
    if let Err(e) = symbolize::files::check_object(&args.exe) {
        eprintln!("rtconv: error: {e}");
        return ExitCode::FAILURE;
    }
    let files = ModuleFiles { binary: args.exe.clone(), debug: Some(args.exe.clone()) };
    let mut names: Vec<Option<symbolize::SpanName>> = vec![None; addresses.len()];
    for backend in opts.backends() {
        let pending: Vec<usize> = (0..addresses.len()).filter(|&i| names[i].is_none()).collect();
        if pending.is_empty() {
            break;
        }
        let wanted: Vec<u64> = pending.iter().map(|&i| addresses[i]).collect();
        if let Some(found) = symbolize::resolve_file(&files, &wanted, backend, &opts) {
            for (i, name) in pending.into_iter().zip(found) {
                names[i] = name;
            }
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
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rtconv: error: writing the output: {e}");
            ExitCode::FAILURE
        }
    }
}
