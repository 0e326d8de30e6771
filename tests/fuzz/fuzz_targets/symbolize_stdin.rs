//! `rtconv symbolize`'s stdin on arbitrary bytes: lines read with their
//! length bound, parsed as queries for this fuzzer's own binary, and named
//! by DWARF and the symbol table. It may refuse the input; it must never
//! panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtconv::model::Source;
use rtconv::symbolize::{Lookup, Options, name_batch};

/// The command line's query reader, compiled as it is (it depends on std and `Query` only).
#[path = "../../../rtconv/src/cli/queries.rs"]
#[allow(dead_code)]
mod queries;
use queries::{parse_query, query_lines};

fuzz_target!(|data: &[u8]| {
    let Ok(lines) = query_lines(data) else { return };
    let Ok(exe) = std::env::current_exe() else { return };
    let queries: Vec<_> = lines.iter().filter_map(|l| parse_query(l, Some(&exe)).ok()).collect();
    let opts = Options { order: Some(vec![Source::Dwarf, Source::Symtab]), index: None, ..Options::default() };
    let _ = name_batch(&queries, &opts, &Lookup::default());
});
