//! Names from DWARF: the innermost function at an address (inlined or
//! not), its file and line, and the chain of functions it was inlined into.
//!
//! A module's addresses are sorted and split into one run per worker
//! thread; each worker builds its own `addr2line` context over the same
//! mapped file and parses only the compilation units its run touches, so
//! the work divides across cores instead of being repeated.

use std::path::Path;

use rayon::prelude::*;

use super::{Frame, Source, SpanName, demangled};

/// Fewer addresses than this per worker are not worth a second context.
const MIN_PER_WORKER: usize = 256;

/// Names `file_addresses` (ELF virtual addresses, sorted or not) from the
/// DWARF in `debug`. Returns one entry per address, in order.
pub fn resolve(debug: &Path, file_addresses: &[u64], demangle: bool) -> Result<Vec<Option<SpanName>>, String> {
    let mut order: Vec<usize> = (0..file_addresses.len()).collect();
    order.sort_unstable_by_key(|&i| file_addresses[i]);
    let workers = rayon::current_num_threads().clamp(1, file_addresses.len().div_ceil(MIN_PER_WORKER).max(1));
    let chunk = order.len().div_ceil(workers).max(1);
    let resolved: Vec<Vec<(usize, Option<SpanName>)>> = order
        .par_chunks(chunk)
        .map(|run| {
            let loader = addr2line::Loader::new(debug).map_err(|e| e.to_string())?;
            Ok(run.iter().map(|&i| (i, lookup(&loader, file_addresses[i], demangle))).collect())
        })
        .collect::<Result<_, String>>()?;
    let mut out = vec![None; file_addresses.len()];
    for (i, name) in resolved.into_iter().flatten() {
        out[i] = name;
    }
    Ok(out)
}

/// One address. Outside inlined code the innermost frame is the function
/// the symbol table names, and the symbol's (demangled) name is used: it has
/// the full path and generic arguments, which `line-tables-only` DWARF
/// omits (`fib` there, `workload::fib` in the symbol table), as GNU
/// addr2line and llvm-symbolizer do.
fn lookup(loader: &addr2line::Loader, address: u64, demangle: bool) -> Option<SpanName> {
    let mut frames = loader.find_frames(address).ok()?;
    let mut chain: Vec<Frame> = Vec::new();
    while let Ok(Some(frame)) = frames.next() {
        let function = frame.function.as_ref().and_then(|f| {
            if demangle { f.demangle().ok().map(|n| n.into_owned()) } else { f.raw_name().ok().map(|n| n.into_owned()) }
        });
        let location = frame.location.as_ref();
        chain.push(Frame {
            function: function.unwrap_or_else(|| "??".into()),
            file: location.and_then(|l| l.file).map(str::to_owned),
            line: location.and_then(|l| l.line),
        });
    }
    if chain.first().is_none_or(|f| f.function == "??") {
        // Line info without function entries (code from a crate built with
        // line tables only): the symbol's name with the line table's place.
        let location = loader.find_location(address).ok().flatten()?;
        let name = demangled(loader.find_symbol(address)?, demangle);
        let (file, line) = (location.file.map(str::to_owned), location.line);
        return Some(SpanName { name, file, line, source: Source::Dwarf, inlined_into: Vec::new() });
    }
    let innermost = chain.remove(0);
    let name = match (chain.is_empty(), loader.find_symbol(address)) {
        (true, Some(symbol)) => demangled(symbol, demangle),
        _ => innermost.function,
    };
    Some(SpanName { name, file: innermost.file, line: innermost.line, source: Source::Dwarf, inlined_into: chain })
}
