//! Names from the dump's dladdr table: what the target's dynamic loader knew.
//!
//! Only dynamic symbols are there (exported functions; everything in a
//! program linked with `-rdynamic`), so this names fewer keys than DWARF,
//! but it needs no binary at all.

use super::demangled;
use crate::model::{Source, SpanName, Trace};

/// The function the loader found for `key`, if it found one.
pub fn resolve(trace: &Trace, key: u64, demangle: bool) -> Option<SpanName> {
    let entry = trace.dladdr.get(&key)?;
    if entry.symbol.is_empty() {
        return None;
    }
    let name = demangled(&entry.symbol, demangle);
    Some(SpanName { name, file: None, line: None, column: None, source: Source::Dladdr, inlined_into: Vec::new() })
}
