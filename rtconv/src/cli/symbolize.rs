//! `rtconv symbolize`: addresses named as GNU addr2line and llvm-symbolizer
//! name them, with either tool's defaults and layout — from the command line
//! all at once, or read from stdin and answered as they come.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use rtconv::model::SpanName;
use rtconv::symbolize::{Lookup, Query, Session, name_batch};

use super::answers::{Layout, Style, write_answer, write_data, write_echo, write_error};
use super::args::{FunctionsArg, OutputStyle, SymbolizeArgs, ToolStyle, default_search};
use super::queries::{is_data, parse_query, query_lines, read_query_line};
use super::{diag, exit, output};

/// Warnings said once each, and whether any was (the exit status then says names were lost).
struct Warnings {
    said: HashSet<String>,
    any: bool,
    /// Run as another tool, which says none of these.
    quiet: bool,
}

impl Warnings {
    /// Names were lost (the exit status says so).
    fn warn(&mut self, text: &str) {
        self.any = true;
        self.note(text);
    }

    /// Nothing was lost (the symbol index could not be used).
    fn note(&mut self, text: &str) {
        if !self.quiet && self.said.insert(text.to_string()) {
            diag::emit(&format!("rtconv: warning: {text}"));
        }
    }
}

/// `rtconv symbolize`.
pub fn run(args: SymbolizeArgs) -> ExitCode {
    run_as(args, false)
}

/// The settings a tool's defaults and the flags given make.
struct Settings {
    style: Style,
    demangle: bool,
    /// llvm-symbolizer's answers: `DATA` queries, lines that are not queries echoed.
    llvm: bool,
}

fn settings(args: &SymbolizeArgs) -> Settings {
    let llvm = args.tool() == ToolStyle::Llvm;
    let functions = match (args.functions, llvm) {
        (Some(kind), _) => kind != FunctionsArg::None,
        (None, llvm) => llvm,
    };
    // llvm-symbolizer shows inline chains unless told not to; GNU addr2line with -i.
    let inlines = match args.inlining {
        Some(on) => on,
        None => (llvm || args.inlines) && !args.no_inlines,
    };
    let layout = match (args.output_style, llvm) {
        (Some(OutputStyle::Gnu), _) | (None, false) => Layout::Gnu,
        (Some(OutputStyle::Llvm), _) | (None, true) => Layout::Llvm,
        (Some(OutputStyle::Json), _) => Layout::Json,
    };
    let style = Style {
        addresses: args.addresses_too,
        functions,
        short: args.functions == Some(FunctionsArg::Short),
        inlines,
        pretty: args.pretty_print,
        basenames: args.basenames,
        layout,
    };
    // GNU addr2line's names as the file has them unless -C; llvm-symbolizer's demangled unless
    // --no-demangle.
    let demangle = (llvm || args.demangle) && !args.naming.no_demangle;
    Settings { style, demangle, llvm }
}

/// `rtconv symbolize`, or rtconv run as the tool `args.style` names (`as_tool`: its exit
/// statuses — 0 whatever the answers, GNU's 1 for a binary that is not there — its default
/// binary `a.out` for GNU, and no rtconv warnings for what the tool answers silently).
pub fn run_as(args: SymbolizeArgs, as_tool: bool) -> ExitCode {
    let Settings { style, demangle, llvm } = settings(&args);
    let mut search = rtconv::symbolize::Search { sym_dirs: args.sym_dir.clone(), ..default_search() };
    search.debug_roots.extend(args.debug_file_directory.iter().cloned());
    let mut opts = args.naming.options(search);
    opts.demangle = demangle && opts.demangle;
    let lookup = Lookup {
        section: args.section.clone(),
        relative: args.relative_address,
        adjust_vma: args.adjust_vma.unwrap_or(0),
    };
    let default_exe = (as_tool && !llvm).then(|| std::path::PathBuf::from("a.out"));
    let exe_arg = args.exe.clone().or_else(|| args.obj.clone()).or(default_exe);
    // llvm-symbolizer answers `??` for a binary it cannot read, and goes on.
    let mut unreadable = false;
    if let Some(exe) = &exe_arg {
        let missing = if exe.is_file() {
            opts.search.files_for(exe).err().map(|e| e.to_string())
        } else if as_tool && !llvm {
            Some(format!("'{}': No such file", exe.display()))
        } else if llvm {
            Some("No such file or directory".to_string())
        } else {
            Some(format!("{}: no such file; pass the binary with -e", exe.display()))
        };
        if let Some(message) = missing {
            if !llvm {
                // GNU addr2line names itself as it was run.
                let tool = if as_tool { std::env::args().next().unwrap_or_default() } else { "rtconv".into() };
                diag::emit(&format!("{tool}: {message}"));
                return ExitCode::FAILURE;
            }
            if args.output_style != Some(OutputStyle::Json) {
                diag::emit(&format!("LLVMSymbolizer: error reading file: {message}"));
            }
            unreadable = true;
        }
    }
    // Each warning once (a module that cannot be read is said of its first query only). As the
    // tool, only what the tool itself would say.
    let mut warnings = Warnings { said: HashSet::new(), any: false, quiet: as_tool || unreadable };
    let exe = exe_arg.as_deref();
    // What a line that is not a query is answered for: an unknown address.
    let unparsed = || Query { module: exe.map(Path::to_path_buf).unwrap_or_default(), address: 0 };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let stdin = io::stdin();
    // Answered as they come when read from a terminal or a pipe; a file, or arguments, all at once
    // (in llvm's answers, a file line by line too: its blank lines are echoed).
    let one_by_one = args.addresses.is_empty() && (llvm || !stdin_is_regular_file());
    let json_array = style.layout == Layout::Json && !args.addresses.is_empty();
    let mut session = Session::new(opts.clone(), lookup.clone());
    // One line's answer: `parsed` is the line read as a query; `name` its code address's name,
    // if already looked up.
    let answer = |out: &mut dyn Write,
                  warnings: &mut Warnings,
                  session: &mut Session,
                  text: &str,
                  parsed: &Result<Query, String>,
                  name: Option<Result<Option<SpanName>, String>>| {
        // llvm-symbolizer's JSON names a line's module even where the line is no query: its
        // first word.
        let module = exe.map_or_else(
            || text.split_whitespace().next().unwrap_or("").to_string(),
            |e| e.to_string_lossy().into_owned(),
        );
        let written = match parsed {
            Err(_) if llvm => write_echo(out, style, text.trim(), &module),
            Err(e) => {
                warnings.warn(e);
                write_answer(out, style, &unparsed(), None)
            }
            Ok(q) if llvm && is_data(text) => {
                let data = if unreadable { Ok(None) } else { session.data(q) };
                let data = data.unwrap_or_else(|e| {
                    warnings.warn(&format!("{}: {e}", q.module.display()));
                    None
                });
                write_data(out, style, q, data.as_ref())
            }
            Ok(q) => {
                let name = match name {
                    _ if unreadable => Err("No such file or directory".to_string()),
                    Some(given) => given,
                    None => session.name(q),
                };
                match name {
                    Ok(name) => write_answer(out, style, q, name.as_ref()),
                    Err(e) if llvm => {
                        // As llvm-symbolizer: the file's error said (once per module), `??` answered.
                        let message = if q.module.exists() { e } else { "No such file or directory".to_string() };
                        // (In JSON the error is in the answer only.)
                        let said = style.layout == Layout::Json || unreadable;
                        if as_tool && !said && warnings.said.insert(q.module.display().to_string()) {
                            diag::emit(&format!("LLVMSymbolizer: error reading file: {message}"));
                        }
                        warnings.warn(&format!("{}: {message}", q.module.display()));
                        write_error(out, style, q, &message)
                    }
                    Err(e) => {
                        warnings.warn(&format!("{}: {e}", q.module.display()));
                        write_answer(out, style, q, None)
                    }
                }
            }
        };
        for w in session.warnings.drain(..) {
            warnings.warn(&w);
        }
        for n in session.notes.drain(..) {
            warnings.note(&n);
        }
        written
    };
    let written = if one_by_one {
        (|| -> io::Result<()> {
            let mut input = io::BufReader::new(stdin.lock());
            let mut line = Vec::new();
            for number in 1.. {
                let Some(text) = read_query_line(&mut input, &mut line, number)? else { break };
                let text = text.trim_end_matches(['\n', '\r']);
                if text.trim().is_empty() && !llvm {
                    continue;
                }
                answer(&mut out, &mut warnings, &mut session, text, &parse_query(text, exe), None)?;
                if style.layout == Layout::Json {
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
                Err(e) => return input_failed(&e),
            }
        } else {
            args.addresses.clone()
        };
        // Each line read once; its code queries named at once, through the backends' parallel
        // resolvers.
        let parsed: Vec<Result<Query, String>> = texts.iter().map(|t| parse_query(t, exe)).collect();
        let is_code = |i: usize| parsed[i].is_ok() && !(llvm && is_data(&texts[i]));
        let code: Vec<Query> =
            (0..texts.len()).filter(|&i| is_code(i)).filter_map(|i| parsed[i].as_ref().ok().cloned()).collect();
        let (names, said) =
            if unreadable { (Vec::new(), Default::default()) } else { name_batch(&code, &opts, &lookup) };
        for w in &said.warnings {
            warnings.warn(w);
        }
        for n in &said.notes {
            warnings.note(n);
        }
        let written = (|| -> io::Result<()> {
            let mut names = names.into_iter();
            if json_array {
                out.write_all(b"[")?;
            }
            for (i, text) in texts.iter().enumerate() {
                if json_array && i > 0 {
                    out.write_all(b",")?;
                }
                let name = is_code(i).then(|| names.next().unwrap_or(Ok(None)));
                answer(&mut out, &mut warnings, &mut session, text, &parsed[i], name)?;
                if style.layout == Layout::Json && !json_array {
                    out.write_all(b"\n")?;
                }
            }
            if json_array {
                out.write_all(b"]\n")?;
            }
            out.flush()
        })();
        // The process ends next: its memory goes back to the system whole, sooner than
        // freed answer by answer (docs/PERFORMANCE.md measures it).
        std::mem::forget((code, parsed, texts));
        written
    };
    for n in session.finish() {
        warnings.note(&n);
    }
    match written {
        Ok(()) if warnings.any && !as_tool => ExitCode::from(exit::DEGRADED),
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.kind() == io::ErrorKind::InvalidData => input_failed(&e),
        Err(e) => output::write_failed(&e, "the names"),
    }
}

/// An input `rtconv symbolize` cannot read on from: exit 2.
fn input_failed(e: &io::Error) -> ExitCode {
    diag::error(&format!("stdin {e}"));
    ExitCode::from(exit::USAGE)
}

/// Whether stdin is a regular file (`< file`), which is read whole rather than answered line by line.
fn stdin_is_regular_file() -> bool {
    use std::os::fd::AsFd;
    let Ok(fd) = io::stdin().as_fd().try_clone_to_owned() else { return false };
    std::fs::File::from(fd).metadata().is_ok_and(|m| m.is_file())
}
