//! Reading `rtconv symbolize`'s queries, as addr2line and llvm-symbolizer
//! read theirs: an address for the binary given with `-e`/`--obj`, or —
//! without one — a module and an address (`"/path/lib.so" 0x1d59f`; the
//! module may be unquoted). A leading `CODE` or `DATA` (llvm-symbolizer's:
//! a code address, or a global's) is read by [`is_data`] and skipped. Addresses are
//! hexadecimal, with or without `0x`, as GNU addr2line reads them. A line
//! that is not a query is answered as an unknown address would be (`??`),
//! with a warning naming it.
//!
//! Depends on nothing but `std` and the library's `Query`: the fuzzer
//! (`tests/fuzz`) compiles this file as it is.

use std::io::{self, BufRead, Read};
use std::path::Path;

use rtconv::symbolize::Query;

/// The longest query line read (an address needs 18 bytes).
pub const MAX_LINE: usize = 4096;

/// Line `number` of `input` as text, whatever its bytes (a line that is not
/// a query is answered `??`); `None` at the end. A line longer than
/// [`MAX_LINE`] bytes is an error
/// (`InvalidData`, naming the line), so endless input without newlines is
/// refused rather than read forever.
pub fn read_query_line(input: &mut impl BufRead, line: &mut Vec<u8>, number: usize) -> io::Result<Option<String>> {
    line.clear();
    let limit = MAX_LINE as u64 + 1;
    if input.take(limit).read_until(b'\n', line)? == 0 {
        return Ok(None);
    }
    if line.len() > MAX_LINE && line.last() != Some(&b'\n') {
        let message = format!("line {number}: longer than {} bytes", MAX_LINE);
        return Err(io::Error::new(io::ErrorKind::InvalidData, message));
    }
    Ok(Some(String::from_utf8_lossy(line).into_owned()))
}

/// The non-blank lines of `input`, trimmed (see [`read_query_line`]).
pub fn query_lines(mut input: impl BufRead) -> io::Result<Vec<String>> {
    let (mut lines, mut line) = (Vec::new(), Vec::new());
    for number in 1.. {
        match read_query_line(&mut input, &mut line, number)? {
            Some(text) if !text.trim().is_empty() => lines.push(text.trim().to_string()),
            Some(_) => {}
            None => break,
        }
    }
    Ok(lines)
}

/// An address as GNU addr2line reads one: hexadecimal, `0x` optional.
pub fn parse_address(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// Whether a query line asks for a global (`DATA ...`, llvm-symbolizer's) rather than code.
pub fn is_data(line: &str) -> bool {
    line.trim_start().starts_with("DATA ")
}

/// One query line: `[CODE|DATA] ADDRESS` for `default`, or `[CODE|DATA] MODULE ADDRESS`.
pub fn parse_query(line: &str, default: Option<&Path>) -> Result<Query, String> {
    let line = line.trim();
    let bad = || format!("{line:?} is not a query; give a hex address like 0x1d59f, or \"MODULE\" 0x1d59f");
    let rest = line.strip_prefix("CODE ").or_else(|| line.strip_prefix("DATA ")).map_or(line, str::trim_start);
    if let Some(module) = default {
        return parse_address(rest).map(|address| Query { module: module.to_path_buf(), address }).ok_or_else(bad);
    }
    let (module, address) = match rest.strip_prefix('"') {
        Some(quoted) => {
            let (module, after) = quoted.split_once('"').ok_or_else(bad)?;
            (module, after.trim())
        }
        None => rest.rsplit_once(char::is_whitespace).map(|(m, a)| (m.trim(), a.trim())).ok_or_else(bad)?,
    };
    let address = parse_address(address).ok_or_else(bad)?;
    if module.is_empty() {
        return Err(bad());
    }
    Ok(Query { module: module.into(), address })
}
