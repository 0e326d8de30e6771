//! Names from an external addr2line-compatible program (GNU `addr2line`,
//! `llvm-addr2line`, `arm-none-eabi-addr2line`, …), run once per module with
//! every address on its standard input, never through a shell.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use super::BackendError;
use crate::model::{Frame, Source, SpanName};

/// Runs `program -a -f -i [-C] -e file` on `file_addresses`; one entry per address.
pub fn resolve(
    program: &Path,
    file: &Path,
    file_addresses: &[u64],
    demangle: bool,
) -> Result<Vec<Option<SpanName>>, BackendError> {
    let failed = |reason: String| BackendError { backend: Source::Addr2line, path: file.into(), reason };
    let mut cmd = Command::new(program);
    cmd.args(["-a", "-f", "-i"]);
    if demangle {
        cmd.arg("-C");
    }
    cmd.arg("-e").arg(file).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| failed(format!("cannot run {}: {e}", program.display())))?;
    let mut stdin = child.stdin.take().ok_or_else(|| failed("no stdin".into()))?;
    let input: String = file_addresses.iter().map(|a| format!("{a:#x}\n")).collect();
    // Written from another thread, so a program that answers as it reads cannot deadlock us.
    let writer = std::thread::spawn(move || {
        let result = stdin.write_all(input.as_bytes());
        drop(stdin);
        result
    });
    let stdout = child.stdout.take().ok_or_else(|| failed("no stdout".into()))?;
    let mut blocks: Vec<Vec<String>> = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.map_err(|e| failed(format!("reading from {}: {e}", program.display())))?;
        if line.starts_with("0x") {
            blocks.push(Vec::new());
        } else if let Some(block) = blocks.last_mut() {
            block.push(line);
        }
    }
    let status = child.wait().map_err(|e| failed(e.to_string()))?;
    let _ = writer.join();
    if !status.success() {
        return Err(failed(format!("{} exited with {status}", program.display())));
    }
    if blocks.len() != file_addresses.len() {
        return Err(failed(format!(
            "{} answered {} of {} addresses",
            program.display(),
            blocks.len(),
            file_addresses.len()
        )));
    }
    Ok(blocks.into_iter().map(parse_block).collect())
}

/// One address's lines: (function, file:line) pairs, innermost first.
fn parse_block(lines: Vec<String>) -> Option<SpanName> {
    let mut frames = lines.chunks(2).map(|pair| {
        let function = pair[0].trim().to_string();
        let (file, line) = parse_location(pair.get(1).map(String::as_str).unwrap_or("??:0"));
        Frame { function, file, line, column: None }
    });
    let innermost = frames.next()?;
    if innermost.function == "??" {
        return None;
    }
    Some(SpanName {
        name: innermost.function,
        file: innermost.file,
        line: innermost.line,
        column: None,
        source: Source::Addr2line,
        inlined_into: frames.collect(),
    })
}

/// `path:12`, `path:12 (discriminator 3)`, `??:0`, `??:?`.
fn parse_location(text: &str) -> (Option<String>, Option<u32>) {
    let text = text.split(" (").next().unwrap_or(text);
    let Some((file, line)) = text.rsplit_once(':') else { return (None, None) };
    let file = (file != "??").then(|| file.to_string());
    (file, line.parse().ok().filter(|&l| l != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_as_gnu_and_llvm_print_them() {
        assert_eq!(parse_location("/src/a.rs:56"), (Some("/src/a.rs".into()), Some(56)));
        assert_eq!(parse_location("/src/a.rs:61 (discriminator 2)"), (Some("/src/a.rs".into()), Some(61)));
        assert_eq!(parse_location("??:0"), (None, None));
        assert_eq!(parse_location("??:?"), (None, None));
    }
}
