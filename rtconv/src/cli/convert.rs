//! `rtconv convert`, and `rtconv stats` of one dump (of many: [`super::batch`]).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rtconv::convert::{self, ConvertError, Format, Input};
use rtconv::model::Filter;
use rtconv::stats::Output;
use rtconv::symbolize;

use super::args::{ConvertArgs, FormatArg, MemoryArgs, StatsArgs, StatsFormatArg, choose_format, format_of};
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

/// What a command reads: dump files, or a firmware's memory images read as one.
pub enum Inputs<'a> {
    /// Dumps (and cores), by path.
    Dumps(&'a [PathBuf]),
    /// A dump made of memory images: named after the first image in messages.
    Memory(PathBuf, Vec<u8>),
}

impl Inputs<'_> {
    /// The inputs' names, for messages.
    fn names(&self) -> String {
        match self {
            Inputs::Dumps(dumps) => dumps.iter().map(|d| d.display().to_string()).collect::<Vec<_>>().join(", "),
            Inputs::Memory(name, _) => name.display().to_string(),
        }
    }
}

/// The dump the memory images of `memory` hold, with the firmware `elf`: (the first image's
/// path, the dump); `None` if no image is given. An image or ELF that cannot be read, or holds
/// no rings, is said in one line and ends the command (exit 1).
pub fn memory_dump(memory: &MemoryArgs, elf: Option<&Path>) -> Result<Option<(PathBuf, Vec<u8>)>, ExitCode> {
    let (Some((first, _)), Some(elf)) = (memory.memory.first(), elf) else { return Ok(None) }; // clap requires --elf
    let read = |path: &Path| std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()));
    let made = (|| {
        let elf_bytes = read(elf)?;
        let files: Vec<(u64, Vec<u8>)> =
            memory.memory.iter().map(|(path, address)| Ok((*address, read(path)?))).collect::<Result<_, String>>()?;
        let images: Vec<rtconv::core_file::Image<'_>> =
            files.iter().map(|(address, bytes)| rtconv::core_file::Image { address: *address, bytes }).collect();
        rtconv::core_file::memory_to_dump(elf, &elf_bytes, &images, memory.counter_hz)
            .map_err(|e| format!("{} (with {}): {e}", first.display(), elf.display()))
    })();
    match made {
        Ok(dump) => Ok(Some((first.clone(), dump))),
        Err(e) => {
            diag::error(&e);
            Err(ExitCode::FAILURE)
        }
    }
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
    let max_bytes = args.budget.max_bytes;
    if max_bytes.is_some() && convert::budget_layout(format).is_none() {
        return usage(&ConvertError::BudgetFormat.to_string());
    }
    if let Some(split) = args.budget.split {
        if !matches!(format, Format::Chrome(_) | Format::Perfetto | Format::Ftrace) {
            return usage(&ConvertError::SplitFormat.to_string());
        }
        let Some(output) = output::file(args.output.as_deref()) else {
            return usage("--split writes files: give -o NAME.EXT (the parts are NAME-0001.EXT, …)");
        };
        let [dump] = args.dumps.as_slice() else {
            return usage("--split converts one dump: give one");
        };
        if args.follow || super::live::source_of(&args.dumps, false).is_ok_and(|s| s.is_some()) {
            return usage("--split needs the whole capture: save it to a file, then convert the file");
        }
        return convert_split(dump, format, output, args.symbols.options(), &args.filter.filter(), split);
    }
    match super::live::source_of(&args.dumps, args.follow) {
        Ok(Some(_)) if max_bytes.is_some() => {
            return usage(
                "--max-bytes needs every span before it writes one: save the capture to a file, then convert the \
                 file with --max-bytes",
            );
        }
        Ok(Some(from)) => {
            let output = args.output.as_deref();
            return super::live::run(&from, args.follow, format, output, args.symbols.options(), &args.filter.filter());
        }
        Ok(None) => {}
        Err(e) => return usage(&e),
    }
    let inputs = match memory_dump(&args.memory, args.symbols.exe.as_deref()) {
        Ok(Some((name, dump))) => Inputs::Memory(name, dump),
        Ok(None) => Inputs::Dumps(&args.dumps),
        Err(code) => return code,
    };
    if max_bytes.is_some() && matches!(inputs, Inputs::Dumps(d) if d.len() > 1) {
        return usage("--max-bytes converts one dump at a time: give one, or use `rtconv batch --max-bytes`");
    }
    let output = args.output.as_deref();
    let filter = args.filter.filter();
    match max_bytes {
        Some(max_bytes) => convert_within(&inputs, format, output, args.symbols.options(), &filter, max_bytes),
        None => convert_to(&inputs, format, output, args.symbols.options(), &filter),
    }
}

/// The name of part `index` (from 0) of a split output named `output`: `trace.json` gives
/// `trace-0001.json`, `trace.json.gz` `trace-0001.json.gz`.
pub fn part_name(output: &Path, index: u32) -> PathBuf {
    let name = output.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let (stem, ext) = match name.find('.') {
        Some(dot) if dot > 0 => name.split_at(dot),
        _ => (name.as_str(), ""),
    };
    output.with_file_name(format!("{stem}-{:04}{ext}", u64::from(index) + 1))
}

/// `convert --split`: `dump` into `format` as parts named after `output`.
fn convert_split(
    dump: &Path,
    format: Format,
    output: &Path,
    opts: symbolize::Options,
    filter: &Filter,
    split: convert::Split,
) -> ExitCode {
    let cache = symbolize::Cache::default();
    let mut names = Vec::new();
    let mut write_part = |index: u32, bytes: &[u8]| -> std::io::Result<()> {
        let name = part_name(output, index);
        let mut sink = Sink::open(Some(&name))?;
        std::io::Write::write_all(&mut sink, bytes)?;
        sink.finish()?;
        names.push(name);
        Ok(())
    };
    let result = rtconv::model::open(dump).map_err(ConvertError::from).and_then(|bytes| {
        let (mut report, parts) =
            convert::convert_split(Input::new(dump, &bytes, &opts, filter, &cache), format, split, &mut write_part)?;
        report.note_shrinking(dump, &bytes);
        Ok((report, parts))
    });
    match result {
        Ok((report, parts)) => {
            for d in &report.diagnostics {
                diag::print(d);
            }
            let (first, last) = (names.first(), names.last());
            let shown = |n: Option<&PathBuf>| n.map_or(String::new(), |n| n.display().to_string());
            let largest = parts.iter().map(|p| p.bytes).max().unwrap_or(0);
            eprintln!(
                "rtconv: {}: split by {split} into {} part(s), the largest {largest} bytes -> {} … {}",
                dump.display(),
                parts.len(),
                shown(first),
                shown(last)
            );
            if report.degraded() { ExitCode::from(exit::DEGRADED) } else { ExitCode::SUCCESS }
        }
        Err(e) => {
            diag::error(&e.to_string());
            ExitCode::FAILURE
        }
    }
}

/// Converts one dump (`inputs`) into `format` within `max_bytes`, to `output` or stdout: a `.gz`
/// output is compressed by the conversion (its budget is of compressed bytes).
fn convert_within(
    inputs: &Inputs<'_>,
    format: Format,
    output: Option<&Path>,
    opts: symbolize::Options,
    filter: &Filter,
    max_bytes: u64,
) -> ExitCode {
    let gzip = output.and_then(|o| o.extension()).is_some_and(|e| e == "gz");
    let budget = convert::Budget { max_bytes, gzip };
    let mut out = match Sink::open_as(output, false) {
        Ok(out) => out,
        Err(e) => return output::cannot_create(output, &e),
    };
    let cache = symbolize::Cache::default();
    let result = match inputs {
        Inputs::Dumps([path]) => rtconv::model::open(path).map_err(ConvertError::from).and_then(|bytes| {
            let input = Input::new(path, &bytes, &opts, filter, &cache);
            let mut report = convert::convert_within(input, format, budget, &mut out)?;
            report.note_shrinking(path, &bytes);
            Ok(report)
        }),
        Inputs::Dumps(_) => Err(ConvertError::MergeFormat),
        Inputs::Memory(name, dump) => {
            convert::convert_within(Input::new(name, dump, &opts, filter, &cache), format, budget, &mut out)
        }
    };
    finish(inputs, output, out, result)
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
    match super::live::source_of(&args.dumps, args.follow) {
        Ok(Some(from)) => {
            let (symbols, filter) = (args.symbols.options(), args.filter.filter());
            return super::live::run(&from, args.follow, Format::Stats(opts), args.output.as_deref(), symbols, &filter);
        }
        Ok(None) => {}
        Err(e) => return usage(&e),
    }
    match memory_dump(&args.memory, args.symbols.exe.as_deref()) {
        Ok(Some((name, dump))) => {
            let (symbols, filter) = (args.symbols.options(), args.filter.filter());
            let output = args.output.as_deref();
            return convert_to(&Inputs::Memory(name, dump), Format::Stats(opts), output, symbols, &filter);
        }
        Ok(None) => {}
        Err(code) => return code,
    }
    // One dump file (or one path that is no directory: refused as a dump, by name): its own
    // tables. Anything else: merged over every dump.
    if let [dump] = args.dumps.as_slice()
        && dump.exists()
        && !dump.is_dir()
        && rtconv::batch::archive_kind(dump).is_none()
    {
        return convert_to(
            &Inputs::Dumps(std::slice::from_ref(dump)),
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

/// Converts `inputs` into `format`, to `output` or stdout, and reports as `rtconv convert` does.
pub fn convert_to(
    inputs: &Inputs<'_>,
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
    let mut counted = rtconv::io::Counted::new(&mut out);
    let mut result = match inputs {
        Inputs::Dumps(dumps) => convert::convert_many(dumps, format, &opts, filter, &mut counted),
        Inputs::Memory(name, dump) => {
            let cache = symbolize::Cache::default();
            convert::convert_bytes(Input::new(name, dump, &opts, filter, &cache), format, &mut counted)
        }
    };
    let bytes = counted.bytes;
    if let Ok(report) = result.as_mut()
        && let Some(line) =
            rtconv::viewers::note(format, &output::name(output), bytes, &diag::command_line(&["--max-bytes"]))
    {
        report.diagnostics.push(convert::Diagnostic::note(line));
    }
    finish(inputs, output, out, result)
}

/// Completes `out` with what a conversion of `inputs` to `output` gave, and reports it.
fn finish(
    inputs: &Inputs<'_>,
    output: Option<&Path>,
    out: Sink,
    result: Result<convert::Report, ConvertError>,
) -> ExitCode {
    let result = match result {
        Ok(report) => out.finish().map(|()| report).map_err(ConvertError::Output),
        Err(e) => {
            out.discard();
            Err(e)
        }
    };
    let names = || inputs.names();
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
