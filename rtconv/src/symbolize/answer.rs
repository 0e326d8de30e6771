//! Answering addr2line's and llvm-symbolizer's queries: `rtconv symbolize`.
//!
//! A query is an address for the binary given with `-e`/`--obj`, or —
//! without one — a module and an address, as llvm-symbolizer reads them
//! (`"/path/lib.so" 0x1d59f`; the module may be unquoted, and a leading
//! `CODE` is skipped). Addresses are hexadecimal, with or without `0x`, as
//! GNU addr2line reads them. A line that is not a query is answered as an
//! unknown address would be (`??`), with a warning on stderr naming it.
//!
//! Queries read one at a time ([`Session`]) keep each module's DWARF
//! context and symbol table open between them, so a caller that asks and
//! waits (a debugger, a log filter) gets each answer at once. Batches go
//! through the backends' parallel resolvers ([`super::resolve_module_files`]).

use std::collections::HashMap;
use std::io::{self, BufRead, Read, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::index::Index;
use super::{ModuleFiles, Options, Source, SpanName, dwarf, symtab};

/// How the addresses asked are read before they are looked up.
#[derive(Clone, Debug, Default)]
pub struct Lookup {
    /// Addresses are offsets into this section (`-j`).
    pub section: Option<String>,
    /// Addresses are relative to the image base, the lowest address a
    /// loadable segment asks for (`--relative-address`).
    pub relative: bool,
    /// Subtracted from every address before it is looked up, as if the file
    /// had been loaded that much higher (`--adjust-vma`).
    pub adjust_vma: u64,
}

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

/// Line `number` of `input` as text, whatever its bytes (a line that is not
/// a query is answered `??`); `None` at the end. A line longer than
/// [`MAX_ADDRESS_LINE`](super::MAX_ADDRESS_LINE) bytes is an error
/// (`InvalidData`, naming the line), so endless input without newlines is
/// refused rather than read forever.
pub fn read_query_line(input: &mut impl BufRead, line: &mut Vec<u8>, number: usize) -> io::Result<Option<String>> {
    line.clear();
    let limit = super::MAX_ADDRESS_LINE as u64 + 1;
    if input.take(limit).read_until(b'\n', line)? == 0 {
        return Ok(None);
    }
    if line.len() > super::MAX_ADDRESS_LINE && line.last() != Some(&b'\n') {
        let message = format!("line {number}: longer than {} bytes", super::MAX_ADDRESS_LINE);
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

/// One query: the module and the address as asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Query {
    /// The binary (or debug file) the address is in.
    pub module: PathBuf,
    /// The address as asked (see [`Lookup`] for how it is placed in the file).
    pub address: u64,
}

/// An address as GNU addr2line reads one: hexadecimal, `0x` optional.
pub fn parse_address(text: &str) -> Option<u64> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
    if digits.is_empty() || digits.len() > 16 {
        return None;
    }
    u64::from_str_radix(digits, 16).ok()
}

/// One query line: an address for `default`, or `[CODE] MODULE ADDRESS`.
pub fn parse_query(line: &str, default: Option<&Path>) -> Result<Query, String> {
    let line = line.trim();
    let bad = || format!("{line:?} is not a query; give a hex address like 0x1d59f, or \"MODULE\" 0x1d59f");
    if let Some(module) = default {
        return parse_address(line).map(|address| Query { module: module.to_path_buf(), address }).ok_or_else(bad);
    }
    let rest = line.strip_prefix("CODE ").map_or(line, str::trim_start);
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

/// What a module's file says about placing addresses in it.
#[derive(Debug, Default)]
struct Layout {
    /// The lowest virtual address of a loadable segment.
    image_base: u64,
    /// Section name to its address.
    sections: HashMap<String, u64>,
}

impl Layout {
    fn read(path: &Path) -> Layout {
        use object::{Object, ObjectSection, ObjectSegment};
        let Ok(bytes) = crate::model::map_file(path, crate::model::Pages::OnDemand) else { return Layout::default() };
        let Ok(file) = object::File::parse(&*bytes) else { return Layout::default() };
        let image_base = file.segments().map(|s| s.address()).min().unwrap_or(0);
        let sections =
            file.sections().filter_map(|s| Some((s.name().ok()?.to_string(), s.address()))).collect::<HashMap<_, _>>();
        Layout { image_base, sections }
    }

    /// The file address `lookup` makes of `address`, or why there is none.
    fn file_address(&self, lookup: &Lookup, address: u64) -> Result<u64, String> {
        let mut a = address;
        if let Some(name) = &lookup.section {
            let start = self.sections.get(name).ok_or_else(|| format!("no section {name:?}"))?;
            a = a.wrapping_add(*start);
        }
        if lookup.relative {
            a = a.wrapping_add(self.image_base);
        }
        Ok(a.wrapping_sub(lookup.adjust_vma))
    }
}

/// A module's DWARF context, and its code's address ranges.
type OpenDwarf = (dwarf::Worker, Option<Vec<Range<u64>>>);

/// One module, opened on its first query; its DWARF and symbols are read
/// on the first address its index cannot answer.
struct Module {
    files: ModuleFiles,
    layout: Layout,
    index: Option<Index>,
    /// Not yet opened; opened (`None`: it could not be).
    dwarf: Option<Option<OpenDwarf>>,
    symtab: Option<Option<symtab::Table>>,
}

/// Queries answered one at a time, each module's lookup state kept between
/// them. What DWARF answers is added to each build's index when the session
/// ends (dropped).
pub struct Session {
    opts: Options,
    lookup: Lookup,
    modules: HashMap<PathBuf, Result<Module, String>>,
    /// Why a module or a backend failed, to be said once each.
    pub warnings: Vec<String>,
}

impl Session {
    /// A session naming with `opts`' backends (those that read files), addresses read as `lookup` says.
    pub fn new(opts: Options, lookup: Lookup) -> Self {
        Session { opts, lookup, modules: HashMap::new(), warnings: Vec::new() }
    }

    /// The name of `query`'s address, or why it cannot be looked up.
    pub fn name(&mut self, query: &Query) -> Result<Option<SpanName>, String> {
        if !self.modules.contains_key(&query.module) {
            let opened = self.open(&query.module);
            self.modules.insert(query.module.clone(), opened);
        }
        let (opts, warnings) = (&self.opts, &mut self.warnings);
        let module = match self.modules.get_mut(&query.module) {
            Some(Ok(m)) => m,
            Some(Err(e)) => return Err(e.clone()),
            None => return Ok(None),
        };
        let address = module.layout.file_address(&self.lookup, query.address)?;
        for backend in opts.backends() {
            let name = match backend {
                Source::Dwarf => module.dwarf_name(address, opts, warnings),
                Source::Symtab => {
                    let debug = module.files.debug.as_deref().unwrap_or(&module.files.binary);
                    let table = module.symtab.get_or_insert_with(|| {
                        symtab::Table::open(debug).map_err(|e| warnings.push(e.to_string())).ok()
                    });
                    table.as_ref().and_then(|t| t.name(address, opts.demangle))
                }
                Source::Addr2line => opts.addr2line.as_ref().and_then(|program| {
                    let debug = module.files.debug.as_ref().unwrap_or(&module.files.binary);
                    super::external::resolve(program, debug, &[address], opts.demangle).ok()?.pop().flatten()
                }),
                _ => None,
            };
            if name.is_some() {
                return Ok(name);
            }
        }
        Ok(None)
    }

    fn open(&mut self, path: &Path) -> Result<Module, String> {
        let files = self.opts.search.files_for(path).map_err(|e| e.to_string())?;
        let wants_dwarf = self.opts.backends().contains(&Source::Dwarf);
        let index = match (&files.debug, &self.opts.index) {
            (Some(debug), Some(root)) if wants_dwarf => Index::open(root, debug, self.opts.demangle),
            _ => None,
        };
        Ok(Module { layout: Layout::read(&files.binary), files, index, dwarf: None, symtab: None })
    }
}

impl Module {
    /// DWARF's name at `address`: from the index, else from the DWARF
    /// (opened on first use), then kept in the index.
    fn dwarf_name(&mut self, address: u64, opts: &Options, warnings: &mut Vec<String>) -> Option<SpanName> {
        if let Some(known) = self.index.as_ref().and_then(|ix| ix.get(address)) {
            return known;
        }
        let debug = self.files.debug.as_deref()?;
        let opened = self.dwarf.get_or_insert_with(|| match dwarf::Worker::open(debug, opts.demangle) {
            Ok(w) => {
                let missing = super::split_units_missing(debug);
                if !missing.is_empty() {
                    // Answers without the split units are poorer than the build's: not kept.
                    self.index = None;
                }
                warnings.extend(missing.iter().map(ToString::to_string));
                Some((w, dwarf::code_ranges(debug)))
            }
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        });
        let (worker, code) = opened.as_mut()?;
        let name = worker.name(code.as_deref(), address);
        if let Some(ix) = &mut self.index {
            ix.add(address, name.as_ref());
        }
        name
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for module in self.modules.values_mut().filter_map(|m| m.as_mut().ok()) {
            if let Some(ix) = &mut module.index {
                ix.save();
            }
        }
    }
}

/// A batch's answers: per query, its name or why its address could not be looked up.
pub type Named = Vec<Result<Option<SpanName>, String>>;

/// Names a batch of queries at once, module by module, with the backends'
/// parallel resolvers: one answer per query, and warnings (a backend that failed).
pub fn name_batch(queries: &[Query], opts: &Options, lookup: &Lookup) -> (Named, Vec<String>) {
    let mut out: Named = vec![Ok(None); queries.len()];
    let mut warnings = Vec::new();
    let mut by_module: HashMap<&Path, Vec<usize>> = HashMap::new();
    for (i, q) in queries.iter().enumerate() {
        by_module.entry(&q.module).or_default().push(i);
    }
    for (module, indices) in by_module {
        let files = match opts.search.files_for(module) {
            Ok(files) => files,
            Err(e) => {
                for &i in &indices {
                    out[i] = Err(e.to_string());
                }
                continue;
            }
        };
        let layout = Layout::read(&files.binary);
        let mut placed = Vec::new();
        for &i in &indices {
            match layout.file_address(lookup, queries[i].address) {
                Ok(a) => placed.push((i, a)),
                Err(e) => out[i] = Err(e),
            }
        }
        let addresses: Vec<u64> = placed.iter().map(|p| p.1).collect();
        let (names, failures) = super::resolve_module_files(&files, &addresses, opts);
        warnings.extend(failures.iter().map(ToString::to_string));
        for ((i, _), name) in placed.into_iter().zip(names) {
            out[i] = Ok(name);
        }
    }
    (out, warnings)
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
