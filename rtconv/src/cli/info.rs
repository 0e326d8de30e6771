//! `rtconv info`: each dump described, as text or one JSON array.

use std::io::Write;
use std::process::ExitCode;

use super::args::{InfoArgs, InfoFormat, choose_format};
use super::output::{self, Sink};
use super::{diag, exit, usage};

/// `rtconv info`.
pub fn run(args: InfoArgs) -> ExitCode {
    let form = match choose_format(
        args.format,
        args.output.as_deref(),
        |name| name.ends_with(".json").then_some(InfoFormat::Json),
        InfoFormat::Text,
    ) {
        Ok(form) => form,
        Err(e) => return usage(&e),
    };
    let memory = match super::convert::memory_dump(&args.memory, args.symbols.exe.as_deref()) {
        Ok(memory) => memory,
        Err(code) => return code,
    };
    let opts = args.symbols.options();
    let mut out = match Sink::open(args.output.as_deref()) {
        Ok(out) => out,
        Err(e) => return output::cannot_create(args.output.as_deref(), &e),
    };
    let (mut described, mut salvaged, mut failed, mut json) = (0, 0, 0, Vec::new());
    let mut written = Ok(());
    let mut said = std::collections::HashSet::new();
    // The dumps, or the one dump the memory images make.
    let descriptions: Box<dyn Iterator<Item = _>> = match &memory {
        Some((name, bytes)) => Box::new(std::iter::once(rtconv::info::describe_bytes(name, bytes, &opts))),
        None => Box::new(args.dumps.iter().map(|dump| rtconv::info::describe(dump, &opts))),
    };
    for description in descriptions {
        match description {
            Ok(d) => {
                for warning in d.warnings.iter().filter(|w| said.insert(w.to_string())) {
                    diag::emit(&format!("rtconv: warning: {warning}"));
                }
                // A core some of whose rings could not be read is described with them named: exit 3.
                if d.crash.as_ref().is_some_and(|c| !c.losses.is_empty()) {
                    salvaged += 1;
                }
                if form == InfoFormat::Json {
                    json.push(d.to_json());
                } else {
                    // One blank line between the reports of several dumps.
                    if written.is_ok() && described > 0 {
                        written = writeln!(out);
                    }
                    if written.is_ok() {
                        written = d.write_text(&mut out);
                    }
                }
            }
            Err(e) => {
                diag::error(&e.to_string());
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
    if let Err(e) = written.and_then(|()| out.finish()) {
        return output::write_failed(&e, &output::name(args.output.as_deref()));
    }
    let summary = rtconv::batch::Summary { converted: described - salvaged, salvaged, failed, ..Default::default() };
    ExitCode::from(exit::of_summary(&summary))
}
