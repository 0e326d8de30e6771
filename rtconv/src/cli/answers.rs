//! Writing `rtconv symbolize`'s answers: GNU addr2line's lines, or
//! llvm-symbolizer's lines or JSON.

use std::io::{self, Write};

use rtconv::model::SpanName;
use rtconv::symbolize::{DataSymbol, Query};

/// Whose layout the answers have.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    /// GNU addr2line's: function and `file:line` lines, nothing between answers.
    #[default]
    Gnu,
    /// llvm-symbolizer's: function and `file:line:column` lines, a blank line after each answer.
    Llvm,
    /// llvm-symbolizer's JSON (`--output-style=JSON`).
    Json,
}

/// What is printed for each address.
#[derive(Clone, Copy, Debug, Default)]
pub struct Style {
    /// The address first (`-a`).
    pub addresses: bool,
    /// Function names (`-f`).
    pub functions: bool,
    /// Function names without their scope and parameters (llvm's `--functions=short`).
    pub short: bool,
    /// The functions the innermost one was inlined into (`-i`).
    pub inlines: bool,
    /// One line per frame: `function at file:line` (`-p`).
    pub pretty: bool,
    /// File names without their directories (`-s`).
    pub basenames: bool,
    /// Whose layout.
    pub layout: Layout,
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

/// One frame as printed: function, file, line, column.
type Shown<'a> = (&'a str, &'a Option<String>, Option<u32>, Option<u32>);

/// The frames to print, innermost first.
fn frames(name: Option<&SpanName>, style: Style) -> impl Iterator<Item = Shown<'_>> {
    const NONE: Option<String> = None;
    let short = style.short;
    // Without the chain, GNU names the innermost function, llvm-symbolizer the one the code is
    // in (the outermost); both place it where the innermost is.
    let outermost = matches!(style.layout, Layout::Llvm | Layout::Json) && !style.inlines;
    let first = name.map_or(("??", &NONE, None, None), |n| {
        let function = if outermost { n.inlined_into.last().map_or(&n.name, |f| &f.function) } else { &n.name };
        (shown_name(function, short), &n.file, n.line, n.column)
    });
    let inlined = name.filter(|_| style.inlines).map_or(&[][..], |n| &n.inlined_into[..]);
    std::iter::once(first)
        .chain(inlined.iter().map(move |f| (shown_name(&f.function, short), &f.file, f.line, f.column)))
}

/// A function's name as shown: whole, or `short` (see [`short_name`]).
fn shown_name(name: &str, short: bool) -> &str {
    if short { short_name(name) } else { name }
}

/// A function's name without its scope, template arguments' scopes aside, and parameters
/// (`ns::Class::method(int) const` → `method`), as llvm-symbolizer's `--functions=short` shows
/// DWARF's `DW_AT_name`.
fn short_name(name: &str) -> &str {
    let mut depth = 0i32;
    let (mut start, mut end) = (0, name.len());
    let bytes = name.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            b'(' if depth == 0 && i > 0 => {
                end = i;
                break;
            }
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => start = i + 2,
            _ => {}
        }
    }
    // Angle brackets that do not pair (`operator<`, `operator->`): not taken apart.
    if depth != 0 {
        return name;
    }
    name.get(start..end).filter(|s| !s.is_empty()).unwrap_or(name)
}

/// Writes one answer in `style.layout`: GNU addr2line's lines, llvm-symbolizer's, or one
/// llvm-symbolizer JSON object (without a newline).
pub fn write_answer(out: &mut dyn Write, style: Style, query: &Query, name: Option<&SpanName>) -> io::Result<()> {
    match style.layout {
        Layout::Json => return write_json(out, query, name, style),
        Layout::Llvm => return write_llvm(out, query, name, style),
        Layout::Gnu => {}
    }
    let frames = frames(name, style);
    if style.pretty {
        if style.addresses {
            write_address(out, query.address)?;
            out.write_all(b": ")?;
        }
        for (i, (function, file, line, _)) in frames.enumerate() {
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
    for (function, file, line, _) in frames {
        if style.functions {
            out.write_all(function.as_bytes())?;
            out.write_all(b"\n")?;
        }
        write_place(out, file, line, name.is_some(), style)?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// Writes one answer as llvm-symbolizer does: per frame the function (unless `--functions=none`)
/// and `file:line:column` (`??:0:0` where nothing is known), or with `-p` one line per frame; then
/// a blank line.
fn write_llvm(out: &mut dyn Write, query: &Query, name: Option<&SpanName>, style: Style) -> io::Result<()> {
    if style.addresses {
        write!(out, "{:#x}", query.address)?;
        out.write_all(if style.pretty { b": " } else { b"\n" })?;
    }
    for (i, (function, file, line, column)) in frames(name, style).enumerate() {
        if style.pretty && i > 0 {
            out.write_all(b" (inlined by) ")?;
        }
        if style.functions {
            out.write_all(function.as_bytes())?;
            out.write_all(if style.pretty { b" at " } else { b"\n" })?;
        }
        out.write_all(file.as_deref().map_or("??", |f| shown_file(f, style)).as_bytes())?;
        out.write_all(b":")?;
        out.write_all(decimal(line.unwrap_or(0), &mut [0; 10]))?;
        out.write_all(b":")?;
        out.write_all(decimal(column.unwrap_or(0), &mut [0; 10]))?;
        out.write_all(b"\n")?;
    }
    out.write_all(b"\n")
}

/// Writes a `DATA` query's answer as llvm-symbolizer does: the symbol's name, then its start
/// and size in decimal (`??` and `0 0` for none), a blank line; in JSON, a `Data` object.
pub fn write_data(out: &mut dyn Write, style: Style, query: &Query, data: Option<&DataSymbol>) -> io::Result<()> {
    let (name, start, size) = data.map_or(("", 0, 0), |d| (d.name.as_str(), d.start, d.size));
    if style.layout == Layout::Json {
        let value = serde_json::json!({
            "Address": format!("{:#x}", query.address),
            "Data": { "Name": name, "Size": format!("{size:#x}"), "Start": format!("{start:#x}") },
            "ModuleName": query.module.to_string_lossy(),
        });
        return serde_json::to_writer(&mut *out, &value).map_err(io::Error::from);
    }
    if style.addresses {
        writeln!(out, "{:#x}", query.address)?;
    }
    writeln!(out, "{}\n{start} {size}\n", if name.is_empty() { "??" } else { name })
}

/// What llvm-symbolizer writes for a line that is not a query: the line itself (in JSON, an
/// error object naming it and `module`).
pub fn write_echo(out: &mut dyn Write, style: Style, line: &str, module: &str) -> io::Result<()> {
    if style.layout == Layout::Json {
        let message = format!("unable to parse arguments: {line}");
        let value = serde_json::json!({ "Error": { "Message": message }, "ModuleName": module });
        return serde_json::to_writer(&mut *out, &value).map_err(io::Error::from);
    }
    writeln!(out, "{line}")
}

/// What llvm-symbolizer writes for an address in a module it cannot read: `??` (in JSON, an error
/// object with the reason).
pub fn write_error(out: &mut dyn Write, style: Style, query: &Query, message: &str) -> io::Result<()> {
    if style.layout == Layout::Json {
        let value = serde_json::json!({
            "Address": format!("{:#x}", query.address),
            "Error": { "Message": message },
            "ModuleName": query.module.to_string_lossy(),
        });
        return serde_json::to_writer(&mut *out, &value).map_err(io::Error::from);
    }
    write_answer(out, style, query, None)
}

/// llvm-symbolizer's JSON object for one address. Discriminators and a function's start are not
/// known here: 0 and empty.
fn write_json(out: &mut dyn Write, query: &Query, name: Option<&SpanName>, style: Style) -> io::Result<()> {
    let symbol = |function: &str, file: &Option<String>, line: Option<u32>, column: Option<u32>| {
        serde_json::json!({
            "Column": column.unwrap_or(0), "Discriminator": 0,
            "FileName": file.as_deref().map_or("", |f| shown_file(f, style)),
            "FunctionName": if style.functions { function } else { "" }, "Line": line.unwrap_or(0),
            "StartAddress": "", "StartFileName": "", "StartLine": 0,
        })
    };
    let symbols: Vec<serde_json::Value> = match name {
        None => vec![symbol("", &None, None, None)],
        Some(_) => frames(name, style).map(|(f, file, line, column)| symbol(f, file, line, column)).collect(),
    };
    let value = serde_json::json!({
        "Address": format!("{:#x}", query.address),
        "ModuleName": query.module.to_string_lossy(),
        "Symbol": symbols,
    });
    serde_json::to_writer(&mut *out, &value).map_err(io::Error::from)
}

#[cfg(test)]
mod tests {
    use super::short_name;

    #[test]
    fn a_short_name_is_the_function_without_its_scope_and_parameters() {
        assert_eq!(short_name("subject::Stats::add(std::string const&, double)"), "add");
        assert_eq!(short_name("std::vector<ns::T, std::allocator<ns::T> >::push_back(ns::T&&)"), "push_back");
        assert_eq!(short_name("workload::fib"), "fib");
        assert_eq!(short_name("main"), "main");
        // Names it cannot take apart are shown whole.
        assert_eq!(short_name("bool std::operator< <char>(a, b)"), "bool std::operator< <char>(a, b)");
    }
}
