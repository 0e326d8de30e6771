//! Names from a module's ELF symbol tables (`.symtab`, else `.dynsym`): the
//! function whose symbol covers the address, without file or line.

use std::path::Path;

use object::{Object, ObjectSymbol};

use super::{BackendError, demangled};
use crate::io::{Pages, map_file};
use crate::model::{Source, SpanName};

/// Names `file_addresses` from the symbols of `binary`, one entry per address.
pub fn resolve(binary: &Path, file_addresses: &[u64], demangle: bool) -> Result<Vec<Option<SpanName>>, BackendError> {
    let failed = |reason: String| BackendError { backend: Source::Symtab, path: binary.into(), reason };
    let bytes = map_file(binary, Pages::OnDemand).map_err(|e| failed(e.to_string()))?;
    let file = object::File::parse(&*bytes).map_err(|e| failed(e.to_string()))?;
    // The names borrowed from the mapped file: only the ones asked for are copied.
    let symbols = function_symbols(&file);
    Ok(file_addresses.iter().map(|&a| covering(&symbols, a).map(|s| symbol_name(s.2, demangle))).collect())
}

/// `file`'s function symbols with a size, by address (the first by size, then name, where
/// several start at one address), names as the file has them.
fn function_symbols<'data>(file: &object::File<'data>) -> Vec<(u64, u64, &'data str)> {
    // 32-bit Arm sets bit 0 of a Thumb function's symbol value: its code starts one byte before.
    let thumb_bit = u64::from(file.architecture() == object::Architecture::Arm);
    // Function symbols with a size; an address past a symbol's end is not in it.
    let mut symbols: Vec<(u64, u64, &str)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == object::SymbolKind::Text && s.is_definition() && s.size() > 0)
        .filter_map(|s| Some((s.address() & !thumb_bit, s.size(), s.name().ok()?)))
        .filter(|&(_, _, name)| !super::is_local_label(name))
        .collect();
    symbols.sort_unstable();
    symbols.dedup_by_key(|s| s.0);
    symbols
}

/// The symbol (address, size, name) covering `address` in `symbols` (sorted, one per address).
fn covering<N>(symbols: &[(u64, u64, N)], address: u64) -> Option<&(u64, u64, N)> {
    let i = symbols.partition_point(|s| s.0 <= address).checked_sub(1)?;
    let symbol = &symbols[i];
    (address < symbol.0 + symbol.1).then_some(symbol)
}

fn symbol_name(name: &str, demangle: bool) -> SpanName {
    SpanName {
        name: demangled(name, demangle),
        file: None,
        line: None,
        column: None,
        source: Source::Symtab,
        inlined_into: Vec::new(),
    }
}

/// A binary's function symbols with a size, by address; its data symbols read on first use.
pub(crate) struct Table {
    symbols: Vec<(u64, u64, String)>,
    path: std::path::PathBuf,
    data: Option<Vec<(u64, u64, String)>>,
}

/// A symbol's name, address and size (a `DATA` query's answer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSymbol {
    /// As the file has it, demangled if asked.
    pub name: String,
    /// Its address.
    pub start: u64,
    /// Its size.
    pub size: u64,
}

impl Table {
    pub(crate) fn open(binary: &Path) -> Result<Self, BackendError> {
        let failed = |reason: String| BackendError { backend: Source::Symtab, path: binary.into(), reason };
        let bytes = map_file(binary, Pages::OnDemand).map_err(|e| failed(e.to_string()))?;
        let file = object::File::parse(&*bytes).map_err(|e| failed(e.to_string()))?;
        let symbols = function_symbols(&file).into_iter().map(|(a, s, n)| (a, s, n.to_string())).collect();
        Ok(Table { symbols, path: binary.into(), data: None })
    }

    /// The data object whose symbol covers `address` (a global, a static, thread-local data), as
    /// llvm-symbolizer answers a `DATA` query from the symbol table.
    pub(crate) fn data(&mut self, address: u64, demangle: bool) -> Option<DataSymbol> {
        let path = &self.path;
        let data = self.data.get_or_insert_with(|| {
            let Ok(bytes) = map_file(path, Pages::OnDemand) else { return Vec::new() };
            let Ok(file) = object::File::parse(&*bytes) else { return Vec::new() };
            let mut symbols: Vec<(u64, u64, String)> = file
                .symbols()
                .chain(file.dynamic_symbols())
                .filter(|s| matches!(s.kind(), object::SymbolKind::Data | object::SymbolKind::Tls))
                .filter(|s| s.is_definition() && s.size() > 0)
                .filter_map(|s| Some((s.address(), s.size(), s.name().ok()?.to_string())))
                .collect();
            symbols.sort_unstable();
            symbols.dedup_by_key(|s| s.0);
            symbols
        });
        let (start, size, name) = covering(data, address)?;
        Some(DataSymbol { name: demangled(name, demangle), start: *start, size: *size })
    }

    /// The function whose symbol covers `address`.
    pub(crate) fn name(&self, address: u64, demangle: bool) -> Option<SpanName> {
        covering(&self.symbols, address).map(|s| symbol_name(&s.2, demangle))
    }
}
