//! Names packed into the dump by `rtconv pack`: resolved where the binaries
//! were, so the dump converts anywhere without them.
//!
//! Function names are stored as their backend gave them and demangled here,
//! so `--no-demangle` applies to them as to names read from a binary.

use super::demangled;
use crate::model::{Frame, Source, SpanName, Trace};

/// The packed name of `key`, if the dump has one.
pub fn resolve(trace: &Trace, key: u64, demangle: bool) -> Option<SpanName> {
    let packed = trace.packed.get(&key)?;
    let (first, rest) = packed.frames.split_first()?;
    Some(SpanName {
        name: demangled(&first.function, demangle),
        file: first.file.clone(),
        line: first.line,
        column: None,
        source: Source::Packed,
        inlined_into: rest
            .iter()
            .map(|f| Frame {
                function: demangled(&f.function, demangle),
                file: f.file.clone(),
                line: f.line,
                column: None,
            })
            .collect(),
    })
}
