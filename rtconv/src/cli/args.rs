//! The command line's types: every clap argument, group and value, and how
//! each becomes the library's options — with the defaults a command line
//! decides (the environment's symbol index and debuginfod caches).

use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand, ValueEnum};
use rtconv::convert::Format;
use rtconv::model::{Filter, NamePattern, Source, TimeRange, parse_duration_ns};
use rtconv::stats::{Column, Output};
use rtconv::symbolize::{self, DwarfReader};

use super::diag::When;

/// The version line: the tool's version and the dump format versions it reads.
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (reads dump format versions 1.x)");
const _: () = assert!(
    ringtrace_format::layout::SUPPORTED_MAJORS.0 == 1 && ringtrace_format::layout::SUPPORTED_MAJORS.1 == 1,
    "update VERSION when the supported dump format versions change"
);

#[derive(Parser)]
#[command(
    name = "rtconv",
    version = VERSION,
    about = "Convert ringtrace dumps into traces you can read",
    after_help = "Wherever a dump is read, so is an ELF core file of a program that recorded with ringtrace: its rings \
                  as the process left them, the spans open at the crash shown open (rtconv info names the thread \
                  that took the fatal signal). `rtconv pack CORE` writes CORE.rtd and leaves the core as it is."
)]
pub(crate) struct Cli {
    /// When to color tables and diagnostics: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub(crate) color: ColorArg,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ColorArg {
    Auto,
    Always,
    Never,
}

impl ColorArg {
    pub(crate) fn when(self) -> When {
        match self {
            ColorArg::Auto => When::Auto,
            ColorArg::Always => When::Always,
            ColorArg::Never => When::Never,
        }
    }
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Convert a dump into a trace (Chrome JSON for Perfetto), collapsed stacks or a flame graph.
    Convert(ConvertArgs),
    /// Per-function statistics: calls, total, self, min, mean, p50, p90, p99, max, stddev,
    /// of one dump, or merged over many (files, directories, globs, archives) per build-id.
    Stats(StatsArgs),
    /// Convert many dumps (files, directories, glob patterns, .tar/.tar.gz/.tar.zst archives)
    /// in parallel, one output per dump in --out-dir.
    Batch(BatchArgs),
    /// Write dumps (files, directories, globs, archives) as Apache Parquet tables for data
    /// engines (DuckDB, Spark, pandas): spans, per-function figures, per-dump metadata.
    Export(ExportArgs),
    /// Compare two sets of dumps per function: calls, self, total, p50, p99 and their changes,
    /// by impact, with a significance test (Mann-Whitney U) telling change from noise;
    /// --fail-on gates a CI job; -f flamegraph draws a differential flame graph.
    Diff(DiffArgs),
    /// Describe a dump: process, clock, modules, threads, losses, and how its keys were named.
    Info(InfoArgs),
    /// Name a dump's keys here, where its binaries are, and append the names to the dump, so it
    /// converts anywhere without them. Packing a packed dump changes nothing.
    Pack(PackArgs),
    /// Name addresses in a binary, a drop-in for GNU addr2line (`-a -f -i -C -e -p -s -j`) and
    /// llvm-symbolizer (`--obj`, `--no-inlines`, `--functions`, `--relative-address`, `--adjust-vma`,
    /// `--output-style=LLVM|GNU|JSON`, `CODE`/`DATA` lines), with either tool's defaults (`--style`).
    /// Addresses from the command line, or queries read from stdin and answered as they come. Run
    /// under the tool's name, rtconv is that tool (for the sanitizers' ASAN_SYMBOLIZER_PATH, perf):
    /// `ln -s "$(command -v rtconv)" ~/.local/bin/llvm-symbolizer`, likewise `addr2line`.
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
pub(crate) struct ConvertArgs {
    /// The dump(s) to convert; several are merged into one Chrome trace, aligned by their realtime anchors.
    /// A live capture: `-` (standard input), `tcp://HOST:PORT`, or a file with --follow.
    #[arg(required_unless_present = "memory", conflicts_with = "memory")]
    pub(crate) dumps: Vec<PathBuf>,
    /// Read a wire stream file live, as it grows (as `tail -f` does), until the stream ends
    /// (each track's end frame), or Ctrl-C. A live capture needs no flag from standard input
    /// (`-`) or a TCP socket (`tcp://HOST:PORT`: a probe's RTT server, a serial port's TCP
    /// bridge, QEMU's `-serial tcp:`). Perfetto and ftrace outputs are written as spans arrive.
    #[arg(long)]
    pub(crate) follow: bool,
    /// Output format (default: what the -o name's extension says, else chrome).
    #[arg(short = 'f', long, value_enum)]
    pub(crate) format: Option<FormatArg>,
    /// Write the output here instead of to stdout (`-` is stdout). The name picks the format:
    /// .json chrome, .svg flamegraph, .folded folded, .ftrace.txt or .txt ftrace, .systrace.txt
    /// systrace; a further .gz compresses it.
    #[arg(short = 'o', long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) chrome: ChromeArgs,
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) memory: MemoryArgs,
}

/// How large a timeline output may be.
#[derive(clap::Args)]
pub(crate) struct BudgetArgs {
    /// Keep the output at or under SIZE (bytes, or with K, M or G: powers of 1024; of the
    /// compressed bytes for a .gz name) by leaving out the shortest spans first: the duration
    /// threshold is found from the spans' durations before writing, and their time counts in
    /// their callers' self time, as with -t. Where a sample says every span fits, an output file
    /// gets them all first, without the size model, and starts over if they do not. Timeline
    /// formats (chrome, perfetto, ftrace, systrace); the threshold and the spans left out are
    /// stated on stderr and in the output.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub(crate) max_bytes: Option<u64>,
    /// Write the output as a series of parts, NAME-0001.EXT, NAME-0002.EXT and so on (from -o NAME.EXT),
    /// each a whole trace that opens alone: by DURATION (10ms, 1s: each part that much of the
    /// run), or by SIZE (bytes, or with K, M or G; before compression). A span crossing a cut
    /// is in each part it covers, cut and marked `clipped`. Chrome JSON, Perfetto and ftrace.
    #[arg(long, value_name = "DURATION|SIZE", value_parser = parse_split, conflicts_with = "max_bytes")]
    pub(crate) split: Option<rtconv::convert::Split>,
}

/// `--split`: a duration (with a time unit) or a size.
fn parse_split(text: &str) -> Result<rtconv::convert::Split, String> {
    let unit = text.trim().trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
    if ["ns", "us", "µs", "ms", "s"].contains(&unit) {
        let ns = rtconv::model::parse_duration_ns(text)?;
        return if ns == 0 {
            Err(format!("{text:?}: give a duration longer than 0"))
        } else {
            Ok(rtconv::convert::Split::Duration(ns))
        };
    }
    match parse_size(text) {
        Ok(0) => Err(format!("{text:?}: give a size larger than 0")),
        Ok(bytes) => Ok(rtconv::convert::Split::Size(bytes)),
        Err(_) => Err(format!("{text:?}: give a duration (10ms, 1s) or a size (64M, 1G)")),
    }
}

/// A firmware's RAM, read by a debugger, in place of a dump.
#[derive(clap::Args)]
pub(crate) struct MemoryArgs {
    /// Read the rings out of a raw memory image instead of a dump: FILE@ADDRESS (e.g.
    /// ram.bin@0x20000000), as a debugger saves it with the target halted; repeatable, one per
    /// region. Needs --elf FIRMWARE.elf, which places the ring directory and supplies flash.
    #[arg(long, value_name = "FILE@ADDR", value_parser = parse_image, requires = "exe")]
    pub(crate) memory: Vec<(PathBuf, u64)>,
    /// With --memory: the counter's rate in Hz, where the firmware did not state it.
    #[arg(long, value_name = "HZ", requires = "memory", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) counter_hz: Option<u64>,
}

/// `--memory FILE@ADDRESS`: the address in hex with `0x`, or decimal.
fn parse_image(text: &str) -> Result<(PathBuf, u64), String> {
    let (file, address) = text
        .rsplit_once('@')
        .ok_or_else(|| format!("{text:?}: give FILE@ADDRESS, the address the image starts at (ram.bin@0x20000000)"))?;
    Ok((PathBuf::from(file), parse_offset(address)?))
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ChromeEventsArg {
    X,
    Be,
}

#[derive(clap::Args)]
pub(crate) struct BatchArgs {
    /// Dumps, directories (searched for *.rtd and archives), glob patterns, tar archives.
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Output format; `parquet` writes the tables of `rtconv export` into --out-dir.
    #[arg(short = 'f', long, value_enum, default_value_t = BatchFormatArg::Trace(FormatArg::Chrome))]
    pub(crate) format: BatchFormatArg,
    /// With `-f parquet`: the host the dumps were taken on, for the tables' `host` column.
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,
    /// Where the outputs go, one per dump, named after it.
    #[arg(short = 'o', long, value_name = "DIR", required_unless_present = "pack")]
    pub(crate) out_dir: Option<PathBuf>,
    /// Instead of converting, pack every dump file in place (see `rtconv pack`).
    #[arg(long, conflicts_with = "out_dir")]
    pub(crate) pack: bool,
    #[command(flatten)]
    pub(crate) chrome: ChromeArgs,
    #[command(flatten)]
    pub(crate) budget: BudgetArgs,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
}

/// `rtconv batch -f`: a trace format (one output per dump), or Parquet tables.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchFormatArg {
    Trace(FormatArg),
    Parquet,
}

impl ValueEnum for BatchFormatArg {
    fn value_variants<'a>() -> &'a [Self] {
        const ALL: [BatchFormatArg; 9] = [
            BatchFormatArg::Trace(FormatArg::Chrome),
            BatchFormatArg::Trace(FormatArg::Folded),
            BatchFormatArg::Trace(FormatArg::Flamegraph),
            BatchFormatArg::Trace(FormatArg::Ftrace),
            BatchFormatArg::Trace(FormatArg::Systrace),
            BatchFormatArg::Trace(FormatArg::Perfetto),
            BatchFormatArg::Trace(FormatArg::Pprof),
            BatchFormatArg::Trace(FormatArg::Firefox),
            BatchFormatArg::Parquet,
        ];
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        match self {
            BatchFormatArg::Trace(format) => format.to_possible_value(),
            BatchFormatArg::Parquet => Some(
                clap::builder::PossibleValue::new("parquet")
                    .help("Apache Parquet tables (spans, functions, dumps) in --out-dir, as `rtconv export` writes"),
            ),
        }
    }
}

/// `rtconv export`: dumps into Parquet tables.
#[derive(clap::Args)]
pub(crate) struct ExportArgs {
    /// Dumps, directories (searched for *.rtd and archives), glob patterns, tar archives.
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Output format (Apache Parquet, the only one).
    #[arg(short = 'f', long, value_enum, default_value_t = ExportFormatArg::Parquet)]
    pub(crate) format: ExportFormatArg,
    /// The directory the tables go in: DIR/spans/, DIR/functions/, DIR/dumps/, one part file per
    /// worker in each (formats/PARQUET.md).
    #[arg(short = 'o', long, value_name = "DIR")]
    pub(crate) out_dir: PathBuf,
    /// The host the dumps were taken on, for the tables' `host` column (dumps do not record it).
    #[arg(long, value_name = "NAME")]
    pub(crate) host: Option<String>,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
}

/// `rtconv export -f`.
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum ExportFormatArg {
    /// Apache Parquet.
    Parquet,
}

/// How work over many dumps runs.
#[derive(clap::Args)]
pub(crate) struct RunArgs {
    /// Worker threads, 1 to 1024 (default: one per core).
    #[arg(short = 'j', long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub(crate) jobs: Option<u64>,
    /// No progress bar (it shows only when stderr is a terminal anyway).
    #[arg(short = 'q', long)]
    pub(crate) quiet: bool,
    /// The largest dump read from an archive: bytes, or with a K, M or G suffix (powers of 1024).
    /// A larger one is reported and skipped.
    #[arg(long, value_name = "SIZE", default_value = "4G", value_parser = parse_size)]
    pub(crate) max_dump_size: u64,
}

impl RunArgs {
    pub(crate) fn options(&self, symbols: symbolize::Options, filter: Filter) -> rtconv::batch::Options {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let jobs = self.jobs.map_or(cores, |j| usize::try_from(j).unwrap_or(1));
        rtconv::batch::Options { jobs, symbols, filter, max_dump_size: self.max_dump_size, max_bytes: None }
    }
}

/// A size (`--max-dump-size`, `--max-bytes`): `123`, `64K`, `512M`, `4G` (powers of 1024; `KB`,
/// `KiB` and so on alike, as `du -h` counts).
fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || format!("{text:?}: give bytes, or a number with K, M or G (powers of 1024)");
    let trimmed = text.trim();
    let digits_end = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(digits_end);
    let shift = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return Err(bad()),
    };
    let n: u64 = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).ok_or_else(|| format!("{text:?} is too large"))
}

#[derive(clap::Args)]
pub(crate) struct StatsArgs {
    /// The dump to summarize; with several, or a directory, glob or archive, the figures are
    /// merged over all of them, one table per program build-id. A live capture: `-` (standard
    /// input), `tcp://HOST:PORT`, or a file with --follow.
    #[arg(required_unless_present = "memory", conflicts_with = "memory")]
    pub(crate) dumps: Vec<PathBuf>,
    /// Read a wire stream file live, as it grows (as `tail -f` does), until the stream ends
    /// (each track's end frame), or Ctrl-C. A live capture needs no flag from standard input
    /// (`-`) or a TCP socket (`tcp://HOST:PORT`: a probe's RTT server, a serial port's TCP
    /// bridge, QEMU's `-serial tcp:`). Perfetto and ftrace outputs are written as spans arrive.
    #[arg(long)]
    pub(crate) follow: bool,
    /// One table per thread instead of one over all threads.
    #[arg(long)]
    pub(crate) per_thread: bool,
    /// The call tree: every call path with its calls, total, self and share.
    #[arg(long)]
    pub(crate) tree: bool,
    /// Take the recorder's own cost, measured at dump time, out of every span.
    #[arg(long)]
    pub(crate) calibrated: bool,
    /// Leave outlying calls (above Q3 + 1.5 IQR of bucket maxima) out of min..stddev.
    #[arg(long)]
    pub(crate) clean: bool,
    /// Sort by this column (descending; name ascending).
    #[arg(long, value_enum, default_value_t = SortArg::Total)]
    pub(crate) sort: SortArg,
    /// Output form: an aligned table with human units, or CSV/JSON in nanoseconds (default: what
    /// the -o name's extension says: .json, .csv, .txt; else table).
    #[arg(short = 'f', long = "format", value_enum)]
    pub(crate) format: Option<StatsFormatArg>,
    /// Write the output here instead of to stdout (`-` is stdout; a further .gz compresses it).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) memory: MemoryArgs,
}

#[derive(clap::Args)]
pub(crate) struct DiffArgs {
    /// The base: a dump, a directory, a glob pattern or an archive (all its dumps merged).
    pub(crate) base: PathBuf,
    /// The new side, as the base.
    pub(crate) new: PathBuf,
    /// Output form: a table, CSV or JSON (times in ns), or a differential flame graph SVG of self
    /// time (red: more in NEW, blue: less) (default: what the -o name's extension says: .json,
    /// .csv, .svg, .txt; else table).
    #[arg(short = 'f', long = "format", value_enum)]
    pub(crate) format: Option<DiffFormatArg>,
    /// Write the output here instead of to stdout (`-` is stdout; a further .gz compresses it).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    /// Exit with status 4 when a function's METRIC grows by more than LIMIT and its calls got
    /// significantly slower (p < 0.01): self>5%, p99>10%, total>2ms, calls>1000 (calls need
    /// no test). METRIC: calls, total, self, mean, p50, p90, p99, max. Repeatable.
    #[arg(long, value_name = "METRIC>LIMIT", value_parser = rtconv::diff::Threshold::parse)]
    pub(crate) fail_on: Vec<rtconv::diff::Threshold>,
    /// Take the recorder's own cost, measured at dump time, out of every span on both sides.
    #[arg(long)]
    pub(crate) calibrated: bool,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) run: RunArgs,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
}

/// `rtconv diff -f`.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DiffFormatArg {
    /// An aligned table with human units.
    Table,
    /// CSV, times in integer nanoseconds.
    Csv,
    /// JSON, times in integer nanoseconds.
    Json,
    /// A differential flame graph SVG of self time.
    Flamegraph,
}

/// The `diff` format an output's file name asks for.
pub(crate) fn diff_format_of(file_name: &str) -> Option<DiffFormatArg> {
    let endings = [
        (".json", DiffFormatArg::Json),
        (".csv", DiffFormatArg::Csv),
        (".svg", DiffFormatArg::Flamegraph),
        (".txt", DiffFormatArg::Table),
    ];
    by_ending(file_name, &endings)
}

#[derive(clap::Args)]
pub(crate) struct InfoArgs {
    /// The dumps to describe.
    #[arg(required_unless_present = "memory", conflicts_with = "memory")]
    pub(crate) dumps: Vec<PathBuf>,
    /// Output form: text, or a JSON array with one object per dump (default: what the -o name's
    /// extension says, else text).
    #[arg(short = 'f', long, value_enum)]
    pub(crate) format: Option<InfoFormat>,
    /// Write the output here instead of to stdout (`-` is stdout).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub(crate) output: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
    #[command(flatten)]
    pub(crate) memory: MemoryArgs,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum InfoFormat {
    Text,
    Json,
}

#[derive(clap::Args)]
pub(crate) struct PackArgs {
    /// The dumps to pack, each in place (a directory or glob: every dump file in it).
    #[arg(required = true)]
    pub(crate) dumps: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) symbols: SymbolArgs,
}

#[derive(clap::Args)]
pub(crate) struct SymbolizeArgs {
    /// Whose defaults and layout: `gnu` (GNU addr2line: file:line, names with -f, inline chains
    /// with -i), or `llvm` (llvm-symbolizer: demangled function names, inline chains,
    /// file:line:column, a blank line after each answer). Default: gnu, or llvm where an
    /// llvm-only flag is given (--obj, --output-style, --inlining, ...). Run as `llvm-symbolizer`
    /// or `addr2line` (a link to rtconv), rtconv is that tool.
    #[arg(long, value_enum, value_name = "TOOL")]
    pub(crate) style: Option<ToolStyle>,
    /// The binary (or debug file) the addresses are in; without it, each query line names its module
    /// (`"MODULE" 0xADDR`, llvm-symbolizer's input).
    #[arg(short = 'e', long = "exe", value_name = "BIN")]
    pub(crate) exe: Option<PathBuf>,
    /// As -e, llvm-symbolizer's name for it.
    #[arg(long = "obj", value_name = "BIN", conflicts_with = "exe")]
    pub(crate) obj: Option<PathBuf>,
    /// Addresses as the file sees them (ELF virtual addresses), hex with or without 0x; none: read
    /// queries from stdin, answering each as it comes.
    pub(crate) addresses: Vec<String>,
    /// Print each address before its names (`addr2line -a`, `llvm-symbolizer --print-address`).
    #[arg(short = 'a', long = "addresses", visible_alias = "print-address")]
    pub(crate) addresses_too: bool,
    /// Print function names (`-f`; llvm's `--functions=none|short|linkage`, linkage by default).
    #[arg(
        short = 'f',
        long,
        value_enum,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "linkage",
        value_name = "KIND"
    )]
    pub(crate) functions: Option<FunctionsArg>,
    /// Print the functions an inlined one was inlined into (`-i`).
    #[arg(short = 'i', long)]
    pub(crate) inlines: bool,
    /// Only the innermost frame (llvm-symbolizer's `--no-inlines`; the default without -i in gnu style).
    #[arg(long, conflicts_with = "inlines")]
    pub(crate) no_inlines: bool,
    /// llvm-symbolizer's `--inlining=true|false`.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", value_name = "BOOL")]
    pub(crate) inlining: Option<bool>,
    /// Demangle C++ and Rust names (`addr2line -C`; llvm style's default).
    #[arg(short = 'C', long)]
    pub(crate) demangle: bool,
    /// One line per frame: `function at file:line` (`addr2line -p`).
    #[arg(short = 'p', long)]
    pub(crate) pretty_print: bool,
    /// File names without their directories (`addr2line -s`).
    #[arg(short = 's', long)]
    pub(crate) basenames: bool,
    /// Addresses are offsets into this section (`addr2line -j`).
    #[arg(short = 'j', long, value_name = "NAME")]
    pub(crate) section: Option<String>,
    /// Addresses are relative to the image base, the lowest loadable segment's address.
    #[arg(long)]
    pub(crate) relative_address: bool,
    /// Look addresses up as if the file were loaded OFFSET higher (OFFSET is subtracted; 0x for hex).
    #[arg(long, value_name = "OFFSET", value_parser = parse_offset)]
    pub(crate) adjust_vma: Option<u64>,
    /// `GNU` (addr2line's layout), `LLVM` (llvm-symbolizer's) or `JSON` (llvm-symbolizer's).
    #[arg(long, value_enum, ignore_case = true, value_name = "STYLE")]
    pub(crate) output_style: Option<OutputStyle>,
    /// A directory of binaries and debug files, found by build-id (repeatable).
    #[arg(long, value_name = "DIR")]
    pub(crate) sym_dir: Vec<PathBuf>,
    /// A root of `.build-id/xx/rest.debug` debug files (llvm-symbolizer's; repeatable).
    #[arg(long, value_name = "DIR")]
    pub(crate) debug_file_directory: Vec<PathBuf>,
    /// Accepted for llvm-symbolizer's callers (the sanitizers pass it); the file says its architecture.
    #[arg(long, value_name = "ARCH", hide = true)]
    pub(crate) default_arch: Option<String>,
    /// Accepted for llvm-symbolizer's callers: the symbol table is always used.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", hide = true)]
    pub(crate) use_symbol_table: Option<bool>,
    #[command(flatten)]
    pub(crate) naming: NamingArgs,
}

/// Which tool `rtconv symbolize` answers as.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ToolStyle {
    /// GNU addr2line.
    Gnu,
    /// llvm-symbolizer.
    Llvm,
}

/// llvm-symbolizer's `--functions`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum FunctionsArg {
    /// No function names.
    None,
    /// Function names without their parameters.
    Short,
    /// Function names as the symbol or DWARF has them (demangled unless --no-demangle).
    Linkage,
}

/// How `rtconv symbolize` prints its answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputStyle {
    /// GNU addr2line's lines.
    Gnu,
    /// llvm-symbolizer's lines: function, file:line:column, a blank line after each answer.
    Llvm,
    /// llvm-symbolizer's JSON: an array for addresses given as arguments, an object per line read.
    Json,
}

impl SymbolizeArgs {
    /// The tool answered as: `--style`, else llvm where an llvm-only flag is given, else gnu.
    pub(crate) fn tool(&self) -> ToolStyle {
        let llvm_only = self.obj.is_some()
            || self.output_style.is_some()
            || self.inlining.is_some()
            || !self.debug_file_directory.is_empty()
            || self.default_arch.is_some()
            || matches!(self.functions, Some(FunctionsArg::None | FunctionsArg::Short));
        self.style.unwrap_or(if llvm_only { ToolStyle::Llvm } else { ToolStyle::Gnu })
    }
}

/// An offset in decimal, or hex with `0x`.
fn parse_offset(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("{text:?} is not an offset; give one like 0x1000 or 4096"))
}

/// Where the recorded binaries are, and how to name.
#[derive(clap::Args)]
pub(crate) struct SymbolArgs {
    /// The main executable, when it is not at the path recorded in the dump; a firmware's ELF file.
    #[arg(long, visible_alias = "elf", value_name = "PATH")]
    pub(crate) exe: Option<PathBuf>,
    /// A directory of binaries and debug files, found by build-id (repeatable).
    #[arg(long, value_name = "DIR")]
    pub(crate) sym_dir: Vec<PathBuf>,
    /// Use binaries whose build-id differs from the one recorded (names may be wrong).
    #[arg(long)]
    pub(crate) allow_mismatch: bool,
    #[command(flatten)]
    pub(crate) naming: NamingArgs,
}

#[derive(clap::Args)]
pub(crate) struct NamingArgs {
    /// Backends to name keys with, in order (default: packed, sites, addr2line if given, dwarf, symtab, dladdr).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "BACKEND,...")]
    pub(crate) symbolizer: Vec<BackendArg>,
    /// An addr2line-compatible program (GNU addr2line, llvm-addr2line, arm-none-eabi-addr2line, ...).
    #[arg(long, value_name = "CMD")]
    addr2line: Option<PathBuf>,
    /// Keep Rust and C++ names mangled.
    #[arg(long)]
    pub(crate) no_demangle: bool,
    /// Neither read nor write the persistent symbol index (kept per build-id in
    /// $XDG_CACHE_HOME/ringtrace; RTCONV_SYMBOL_INDEX=off does the same, =DIR moves it).
    #[arg(long)]
    pub(crate) no_symbol_index: bool,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum BackendArg {
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
pub(crate) enum FormatArg {
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
    /// Perfetto's native protobuf trace (TrackEvent slices), smaller than Chrome JSON.
    Perfetto,
    /// pprof's profile (gzipped profile.proto): call paths with calls and self time, for go tool
    /// pprof, Pyroscope, Grafana.
    Pprof,
    /// The Firefox Profiler's processed profile (profiler.firefox.com; Perfetto imports it):
    /// traced timing, so call tree, flame graph and stack chart show exact totals.
    Firefox,
}

impl NamingArgs {
    pub(crate) fn options(self, search: symbolize::Search) -> symbolize::Options {
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
        let index = if self.no_symbol_index { None } else { symbolize::index_user_root() };
        // A knob for comparing the two DWARF readers (tests/tests/symbolize_compat.rs), not an option.
        let dwarf_reader = match std::env::var_os("RTCONV_DWARF_READER") {
            Some(v) if v == "addr2line" => DwarfReader::Addr2line,
            _ => DwarfReader::Sweep,
        };
        symbolize::Options {
            search,
            order,
            addr2line: self.addr2line,
            demangle: !self.no_demangle,
            index,
            dwarf_reader,
        }
    }
}

/// Where binaries are looked for by default: the system's debug directory, and what
/// debuginfod clients have cached (`$DEBUGINFOD_CACHE_PATH`, `$XDG_CACHE_HOME/debuginfod_client`).
pub(crate) fn default_search() -> symbolize::Search {
    symbolize::Search { debuginfod_caches: symbolize::debuginfod_caches(), ..symbolize::Options::default().search }
}

impl SymbolArgs {
    pub(crate) fn options(self) -> symbolize::Options {
        let search = symbolize::Search {
            exe: self.exe,
            sym_dirs: self.sym_dir,
            allow_mismatch: self.allow_mismatch,
            ..default_search()
        };
        self.naming.options(search)
    }
}

/// The output format: `-f` if given, else what the output's file name says (`by_name` gets it
/// in lowercase, a trailing `.gz` removed), else `default`. A `-f` that contradicts the name is
/// an error.
pub(crate) fn choose_format<T: ValueEnum + Copy + PartialEq>(
    given: Option<T>,
    output: Option<&Path>,
    by_name: impl Fn(&str) -> Option<T>,
    default: T,
) -> Result<T, String> {
    let name = |v: T| v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default();
    let path = super::output::file(output);
    let file_name = path.and_then(|p| p.file_name()?.to_str()).map(str::to_ascii_lowercase);
    let implied = file_name.as_deref().and_then(|n| by_name(n.strip_suffix(".gz").unwrap_or(n)));
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

/// The format a `convert` output's file name asks for: the endings `rtconv batch` gives its
/// outputs ([`rtconv::batch::extension`]: `.json`, `.svg`, `.folded`, `.ftrace.txt`,
/// `.systrace.txt`, `.perfetto-trace`, `.pb.gz`), the longest that fits; else `.systrace`,
/// `.ftrace` or `.txt` (ftrace), `.pftrace` (Perfetto), `.pb` or `.pprof` (pprof).
pub(crate) fn trace_format_of(file_name: &str) -> Option<FormatArg> {
    let plain = ChromeArgs { chrome_events: ChromeEventsArg::X, args: false };
    let ending = |arg: FormatArg| format!(".{}", rtconv::batch::extension(format_of(arg, &plain)));
    let by_batch = FormatArg::value_variants()
        .iter()
        .copied()
        .filter(|&arg| file_name.ends_with(&ending(arg)))
        .max_by_key(|&arg| ending(arg).len());
    let aliases = [
        (".systrace", FormatArg::Systrace),
        (".ftrace", FormatArg::Ftrace),
        (".txt", FormatArg::Ftrace),
        (".pftrace", FormatArg::Perfetto),
        (".pb", FormatArg::Pprof),
        (".pprof", FormatArg::Pprof),
    ];
    by_batch.or_else(|| by_ending(file_name, &aliases))
}

/// The form a `stats` output's file name asks for: `.json`, `.csv`, or `.txt` (a table).
pub(crate) fn stats_format_of(file_name: &str) -> Option<StatsFormatArg> {
    by_ending(
        file_name,
        &[(".json", StatsFormatArg::Json), (".csv", StatsFormatArg::Csv), (".txt", StatsFormatArg::Table)],
    )
}

/// The value of the first `(ending, value)` that `file_name` ends with.
fn by_ending<T: Copy>(file_name: &str, endings: &[(&str, T)]) -> Option<T> {
    endings.iter().find(|(end, _)| file_name.ends_with(end)).map(|&(_, value)| value)
}

/// Which spans to keep, as uftrace's filters (see `rtconv::model::Filter`).
#[derive(clap::Args)]
#[command(next_help_heading = "Filters")]
pub(crate) struct FilterArgs {
    /// Keep only spans of functions matching REGEX and what they call (repeatable). The whole
    /// name must match, its leading `path::` and trailing `(params)` may be left out: `-F fib`
    /// matches `workload::fib`, not `fibonacci`.
    #[arg(short = 'F', long = "function", value_name = "REGEX", value_parser = NamePattern::new)]
    pub(crate) functions: Vec<NamePattern>,
    /// Leave out spans of functions matching REGEX and what they call (repeatable).
    #[arg(short = 'N', long = "exclude", value_name = "REGEX", value_parser = NamePattern::new)]
    pub(crate) excluded: Vec<NamePattern>,
    /// Keep only these threads, by thread id (repeatable, or comma-separated).
    #[arg(long, value_name = "TID", value_delimiter = ',')]
    pub(crate) tid: Vec<u64>,
    /// Keep only threads of this name (repeatable).
    #[arg(long = "thread", value_name = "NAME")]
    pub(crate) threads: Vec<String>,
    /// Keep spans overlapping START..END: times with a unit (10ms..25ms) count from the dump's
    /// first span, bare numbers are timestamps in seconds as ftrace output shows them; either
    /// end may be left out.
    #[arg(short = 'r', long, value_name = "START..END", value_parser = TimeRange::parse, allow_hyphen_values = true)]
    pub(crate) time_range: Option<TimeRange>,
    /// Keep spans at most N deep: 1 is the outermost span (with -F, the function it matched).
    #[arg(short = 'D', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) depth: Option<u32>,
    /// Keep spans lasting at least DUR (500ns, 10us, 1.5ms, 2s; a bare number is ns).
    #[arg(short = 't', long, value_name = "DUR", value_parser = parse_duration_ns)]
    pub(crate) min_duration: Option<u64>,
}

impl FilterArgs {
    pub(crate) fn filter(&self) -> Filter {
        Filter {
            functions: self.functions.clone(),
            excluded: self.excluded.clone(),
            tids: self.tid.clone(),
            thread_names: self.threads.clone(),
            time_range: self.time_range.clone(),
            depth: self.depth,
            min_duration_ns: self.min_duration,
        }
    }
}

/// How Chrome JSON is written, in `convert` and `batch`.
#[derive(clap::Args)]
pub(crate) struct ChromeArgs {
    /// Chrome events: one complete event per span (x, smaller), or a begin and an end event (be;
    /// use it for speedscope, whose float `ts + dur` can misorder back-to-back spans).
    #[arg(long, value_enum, default_value_t = ChromeEventsArg::X)]
    pub(crate) chrome_events: ChromeEventsArg,
    /// Chrome: add each span's source place, inline chain and module to its args.
    #[arg(long)]
    pub(crate) args: bool,
}

/// The library's format for a `-f` value.
pub(crate) fn format_of(format: FormatArg, chrome: &ChromeArgs) -> Format {
    match format {
        FormatArg::Chrome => Format::Chrome(rtconv::render::chrome::Options {
            begin_end: matches!(chrome.chrome_events, ChromeEventsArg::Be),
            args: chrome.args,
        }),
        FormatArg::Folded => Format::Folded,
        FormatArg::Flamegraph => Format::Flamegraph,
        FormatArg::Ftrace => Format::Ftrace,
        FormatArg::Systrace => Format::Systrace,
        FormatArg::Perfetto => Format::Perfetto,
        FormatArg::Pprof => Format::Pprof,
        FormatArg::Firefox => Format::Firefox,
    }
}

/// `stats --sort`: a column to sort by (descending, except `name`).
#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum SortArg {
    /// Function name, ascending.
    Name,
    /// Number of calls.
    Calls,
    /// Total (inclusive) time.
    Total,
    /// Self (exclusive) time.
    #[value(name = "self")]
    SelfTime,
    /// Shortest call.
    Min,
    /// Mean call.
    Mean,
    /// Median call.
    P50,
    /// 90th percentile call.
    P90,
    /// 99th percentile call.
    P99,
    /// Longest call.
    Max,
    /// Standard deviation of calls.
    Stddev,
}

impl From<SortArg> for Column {
    fn from(sort: SortArg) -> Column {
        match sort {
            SortArg::Name => Column::Name,
            SortArg::Calls => Column::Calls,
            SortArg::Total => Column::Total,
            SortArg::SelfTime => Column::SelfTime,
            SortArg::Min => Column::Min,
            SortArg::Mean => Column::Mean,
            SortArg::P50 => Column::P50,
            SortArg::P90 => Column::P90,
            SortArg::P99 => Column::P99,
            SortArg::Max => Column::Max,
            SortArg::Stddev => Column::Stddev,
        }
    }
}

/// `stats -f`: how the figures are written.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum StatsFormatArg {
    /// An aligned table with human units.
    Table,
    /// CSV, times in integer nanoseconds.
    Csv,
    /// JSON, times in integer nanoseconds.
    Json,
}

impl From<StatsFormatArg> for Output {
    fn from(format: StatsFormatArg) -> Output {
        match format {
            StatsFormatArg::Table => Output::Table,
            StatsFormatArg::Csv => Output::Csv,
            StatsFormatArg::Json => Output::Json,
        }
    }
}
