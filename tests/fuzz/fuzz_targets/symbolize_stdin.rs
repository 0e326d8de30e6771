//! `rtconv symbolize`'s stdin on arbitrary bytes: lines read with their
//! length bound, parsed as hex addresses, and named from this fuzzer's own
//! binary by DWARF and the symbol table. It may refuse a line; it must never
//! panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtconv::symbolize::{Options, Source, address_lines, resolve_addresses};

fuzz_target!(|data: &[u8]| {
    let Ok(lines) = address_lines(data) else { return };
    let addresses: Vec<u64> = lines
        .iter()
        .filter_map(|l| u64::from_str_radix(l.trim_start_matches("0x").trim_start_matches("0X"), 16).ok())
        .collect();
    let opts = Options { order: Some(vec![Source::Dwarf, Source::Symtab]), ..Options::default() };
    if let Ok(exe) = std::env::current_exe() {
        let _ = resolve_addresses(&exe, &addresses, &opts);
    }
});
