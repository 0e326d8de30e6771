//! Writing `rtconv symbolize`'s answers: GNU addr2line's lines, or
//! llvm-symbolizer's JSON.

use std::io::{self, Write};

use rtconv::model::SpanName;
use rtconv::symbolize::Query;

/// What is printed for each address.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// The address first (`-a`).
    pub addresses: bool,
    /// Function names (`-f`).
    pub functions: bool,
    /// The functions the innermost one was inlined into (`-i`).
    pub inlines: bool,
    /// One line per frame: `function at file:line` (`-p`).
    pub pretty: bool,
    /// File names without their directories (`-s`).
    pub basenames: bool,
    /// llvm-symbolizer's JSON (`--output-style=JSON`).
    pub json: bool,
}

/// `file` as `-s` shows it: its last component.
fn shown_file(file: &str, style: Style) -> &str {
    if style.basenames { file.rsplit('/').next().unwrap_or(file) } else { file }
}

/// Writes `file:line` as GNU addr2line prints a place: `??:0` for an address it knows nothing of,
/// `??:?` for one in a known function without a line, `file:?` for a file without a line.
fn write_place(
    out: &mut dyn Write,
    file: &Option<String>,
    line: Option<u32>,
    known: bool,
    style: Style,
) -> io::Result<()> {
    match (file, line) {
        (None, _) if known => out.write_all(b"??:?"),
        (None, _) => out.write_all(b"??:0"),
        (Some(f), None) => {
            out.write_all(shown_file(f, style).as_bytes())?;
            out.write_all(b":?")
        }
        (Some(f), Some(l)) => {
            out.write_all(shown_file(f, style).as_bytes())?;
            out.write_all(b":")?;
            out.write_all(decimal(l, &mut [0; 10]))
        }
    }
}

/// `value` in decimal, in `buffer` (answers are written by the hundred thousand: no formatting machinery).
fn decimal(mut value: u32, buffer: &mut [u8; 10]) -> &[u8] {
    let mut at = buffer.len();
    loop {
        at -= 1;
        buffer[at] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            return &buffer[at..];
        }
    }
}

/// `0x` and `value` in 16 hex digits, as addr2line prints an address.
fn write_address(out: &mut dyn Write, value: u64) -> io::Result<()> {
    let mut text = *b"0x0000000000000000";
    for (i, digit) in text[2..].iter_mut().enumerate() {
        *digit = b"0123456789abcdef"[(value >> (60 - 4 * i)) as usize & 0xf];
    }
    out.write_all(&text)
}

/// The frames to print, innermost first: (function, file, line).
fn frames(name: Option<&SpanName>, style: Style) -> impl Iterator<Item = (&str, &Option<String>, Option<u32>)> {
    const NONE: Option<String> = None;
    let first = name.map_or(("??", &NONE, None), |n| (n.name.as_str(), &n.file, n.line));
    let inlined = name.filter(|_| style.inlines).map_or(&[][..], |n| &n.inlined_into[..]);
    std::iter::once(first).chain(inlined.iter().map(|f| (f.function.as_str(), &f.file, f.line)))
}

/// Writes one answer as GNU addr2line does (or, with `style.json`, as one
/// llvm-symbolizer JSON object, without a newline).
pub fn write_answer(out: &mut dyn Write, style: Style, query: &Query, name: Option<&SpanName>) -> io::Result<()> {
    if style.json {
        return write_json(out, query, name, style);
    }
    let frames = frames(name, style);
    if style.pretty {
        if style.addresses {
            write_address(out, query.address)?;
            out.write_all(b": ")?;
        }
        for (i, (function, file, line)) in frames.enumerate() {
            if i > 0 {
                out.write_all(b" (inlined by) ")?;
            }
            if style.functions {
                out.write_all(function.as_bytes())?;
                out.write_all(b" at ")?;
            }
            write_place(out, file, line, name.is_some(), style)?;
            out.write_all(b"\n")?;
        }
        return Ok(());
    }
    if style.addresses {
        write_address(out, query.address)?;
        out.write_all(b"\n")?;
    }
    for (function, file, line) in frames {
        if style.functions {
            out.write_all(function.as_bytes())?;
            out.write_all(b"\n")?;
        }
        write_place(out, file, line, name.is_some(), style)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// llvm-symbolizer's JSON object for one address. Columns, discriminators
/// and a function's start are not known here: 0 and empty.
fn write_json(out: &mut dyn Write, query: &Query, name: Option<&SpanName>, style: Style) -> io::Result<()> {
    let symbol = |function: &str, file: &Option<String>, line: Option<u32>| {
        serde_json::json!({
            "Column": 0, "Discriminator": 0,
            "FileName": file.as_deref().map_or("", |f| shown_file(f, style)),
            "FunctionName": function, "Line": line.unwrap_or(0),
            "StartAddress": "", "StartFileName": "", "StartLine": 0,
        })
    };
    let symbols: Vec<serde_json::Value> = match name {
        None => vec![symbol("", &None, None)],
        Some(_) => frames(name, style).map(|(f, file, line)| symbol(f, file, line)).collect(),
    };
    let value = serde_json::json!({
        "Address": format!("{:#x}", query.address),
        "ModuleName": query.module.to_string_lossy(),
        "Symbol": symbols,
    });
    serde_json::to_writer(&mut *out, &value).map_err(io::Error::from)
}
