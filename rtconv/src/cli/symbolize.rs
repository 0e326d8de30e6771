//! `rtconv symbolize`: addresses named as GNU addr2line and llvm-symbolizer
//! name them — from the command line all at once, or read from stdin and
//! answered as they come.

use std::collections::HashSet;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;

use rtconv::symbolize::{Lookup, Query, Session, name_batch};

use super::answers::{Style, write_answer};
use super::args::{OutputStyle, SymbolizeArgs, default_search};
use super::queries::{parse_query, query_lines, read_query_line};
use super::{diag, exit, output};

/// Warnings said once each, and whether any was (the exit status then says names were lost).
struct Warnings {
    said: HashSet<String>,
    any: bool,
}

impl Warnings {
    /// Names were lost (the exit status says so).
    fn warn(&mut self, text: &str) {
        self.any = true;
        self.note(text);
    }

    /// Nothing was lost (the symbol index could not be used).
    fn note(&mut self, text: &str) {
        if self.said.insert(text.to_string()) {
            diag::emit(&format!("rtconv: warning: {text}"));
        }
    }
}

/// `rtconv symbolize`.
pub fn run(args: SymbolizeArgs) -> ExitCode {
    let search = rtconv::symbolize::Search { sym_dirs: args.sym_dir.clone(), ..default_search() };
    let mut opts = args.naming.options(search);
    // GNU addr2line's default: names as the file has them; -C demangles.
    opts.demangle = args.demangle && opts.demangle;
    let style = Style {
        addresses: args.addresses_too,
        functions: args.functions,
        inlines: args.inlines && !args.no_inlines,
        pretty: args.pretty_print,
        basenames: args.basenames,
        json: args.output_style == OutputStyle::Json,
    };
    let lookup = Lookup { section: args.section.clone(), relative: args.relative_address, adjust_vma: args.adjust_vma };
    if let Some(exe) = &args.exe {
        if !exe.is_file() {
            diag::error(&format!("{}: no such file; pass the binary with -e", exe.display()));
            return ExitCode::FAILURE;
        }
        if let Err(e) = opts.search.files_for(exe) {
            diag::error(&e.to_string());
            return ExitCode::FAILURE;
        }
    }
    // Each warning once (a module that cannot be read is said of its first query only).
    let mut warnings = Warnings { said: HashSet::new(), any: false };
    let exe = args.exe.as_deref();
    // What a line that is not a query is answered for: an unknown address.
    let unparsed = || Query { module: exe.map(Path::to_path_buf).unwrap_or_default(), address: 0 };
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let stdin = io::stdin();
    // Answered as they come when read from a terminal or a pipe; a file, or arguments, all at once.
    let interactive = args.addresses.is_empty() && !stdin_is_regular_file();
    let written = if interactive {
        let mut session = Session::new(opts, lookup);
        let written = (|| -> io::Result<()> {
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
                            warnings.warn(&format!("{}: {e}", q.module.display()));
                            None
                        });
                        (q, name)
                    }
                    Err(e) => {
                        warnings.warn(&e);
                        (unparsed(), None)
                    }
                };
                for w in session.warnings.drain(..) {
                    warnings.warn(&w);
                }
                for n in session.notes.drain(..) {
                    warnings.note(&n);
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
        })();
        for n in session.finish() {
            warnings.note(&n);
        }
        written
    } else {
        let texts = if args.addresses.is_empty() {
            match query_lines(stdin.lock()) {
                Ok(lines) => lines,
                Err(e) => return input_failed(&e),
            }
        } else {
            args.addresses.clone()
        };
        let parsed: Vec<Result<Query, String>> = texts.iter().map(|t| parse_query(t, exe)).collect();
        let queries: Vec<Query> = parsed.iter().filter_map(|q| q.as_ref().ok().cloned()).collect();
        let (names, said) = name_batch(&queries, &opts, &lookup);
        for w in &said.warnings {
            warnings.warn(w);
        }
        for n in &said.notes {
            warnings.note(n);
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
                            warnings.warn(&format!("{}: {e}", q.module.display()));
                            (q, None)
                        }
                        None => (q, None),
                    },
                    Err(e) => {
                        warnings.warn(e);
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
        // freed answer by answer (docs/PERFORMANCE.md measures it).
        std::mem::forget((names, parsed, queries, texts));
        written
    };
    match written {
        Ok(()) if warnings.any => ExitCode::from(exit::DEGRADED),
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
