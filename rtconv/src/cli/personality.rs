//! rtconv run under another tool's name: as `llvm-symbolizer` or `addr2line` (a link or a copy),
//! it is `rtconv symbolize` with that tool's defaults, flags and exit statuses, so the programs
//! that run a symbolizer by its file name (the sanitizers, perf) get rtconv's answers.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

use super::args::{SymbolizeArgs, ToolStyle, VERSION};

/// The tool whose name the program was run under, if it is one rtconv answers as.
pub fn of_program() -> Option<(ToolStyle, String)> {
    let argv0 = std::env::args_os().next()?;
    let name = Path::new(&argv0).file_name()?.to_string_lossy().into_owned();
    tool_named(&name).map(|tool| (tool, name))
}

/// `llvm-symbolizer` (also `llvm-symbolizer-14`), or an `addr2line` (also a cross one, such as
/// `arm-none-eabi-addr2line`, but not `llvm-addr2line`, whose answers are llvm's in GNU's layout).
fn tool_named(name: &str) -> Option<ToolStyle> {
    if name.starts_with("llvm-symbolizer") {
        Some(ToolStyle::Llvm)
    } else if name.ends_with("addr2line") && !name.starts_with("llvm-") {
        Some(ToolStyle::Gnu)
    } else {
        None
    }
}

#[derive(Parser)]
#[command(version = VERSION, about = "Name addresses in binaries (rtconv symbolize)")]
struct AsTool {
    #[command(flatten)]
    args: SymbolizeArgs,
}

/// Runs as `tool` (its name as run), with the process's arguments.
pub fn run((tool, name): (ToolStyle, String)) -> ExitCode {
    let args = std::env::args_os().skip(1);
    let args: Vec<OsString> = match tool {
        ToolStyle::Llvm => args.map(double_dashed).collect(),
        ToolStyle::Gnu => args.collect(),
    };
    // The name clap's messages give: the process's, kept for its life (it ends after this run).
    let name: &'static str = Box::leak(name.into_boxed_str());
    let command = AsTool::command().name(name).bin_name(name);
    let parsed = command
        .try_get_matches_from(std::iter::once(OsString::from("symbolize")).chain(args))
        .and_then(|m| AsTool::from_arg_matches(&m));
    match parsed {
        Ok(AsTool { mut args }) => {
            args.style = Some(tool);
            super::symbolize::run_as(args, true)
        }
        Err(e) => {
            let _ = e.print();
            // Both tools exit 1 on a bad argument; help and version are not errors.
            ExitCode::from(if e.use_stderr() { 1 } else { 0 })
        }
    }
}

/// llvm-symbolizer's long options as its parser takes them, with one dash too (`-obj=x`,
/// `-inlining=false`, `-demangle`): given two, as clap reads them. Short options stay.
fn double_dashed(arg: OsString) -> OsString {
    const LONG: &[&str] = &[
        "addresses",
        "adjust-vma",
        "basenames",
        "debug-file-directory",
        "default-arch",
        "demangle",
        "exe",
        "functions",
        "inlines",
        "inlining",
        "no-demangle",
        "no-inlines",
        "obj",
        "output-style",
        "pretty-print",
        "print-address",
        "relative-address",
        "use-symbol-table",
    ];
    let Some(text) = arg.to_str() else { return arg };
    let Some(rest) = text.strip_prefix('-').filter(|r| !r.starts_with('-')) else { return arg };
    let option = rest.split('=').next().unwrap_or(rest);
    if LONG.contains(&option) { OsString::from(format!("-{text}")) } else { arg }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_are_known_by_their_file_names() {
        assert_eq!(tool_named("llvm-symbolizer"), Some(ToolStyle::Llvm));
        assert_eq!(tool_named("llvm-symbolizer-14"), Some(ToolStyle::Llvm));
        assert_eq!(tool_named("addr2line"), Some(ToolStyle::Gnu));
        assert_eq!(tool_named("arm-none-eabi-addr2line"), Some(ToolStyle::Gnu));
        assert_eq!(tool_named("llvm-addr2line"), None);
        assert_eq!(tool_named("rtconv"), None);
    }

    #[test]
    fn single_dash_long_options_are_read_as_llvm_reads_them() {
        let d = |a: &str| double_dashed(a.into()).into_string().unwrap();
        assert_eq!(d("-obj=/bin/x"), "--obj=/bin/x");
        assert_eq!(d("-inlining=false"), "--inlining=false");
        assert_eq!(d("-demangle"), "--demangle");
        assert_eq!(d("--demangle"), "--demangle");
        assert_eq!(d("-f"), "-f");
        assert_eq!(d("-iCfe"), "-iCfe");
        assert_eq!(d("0x1234"), "0x1234");
    }
}
