//! rtconv's core-file reader on arbitrary bytes: the ELF headers and notes,
//! the ring directory and its entries, the rings, written as a dump and then
//! converted into every output. It reads nothing but the input (no file a
//! core names is opened). It may refuse the input or report losses; it must
//! never panic, hang, read outside the input or allocate by a length the
//! input claims.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ringtrace_fuzz::convert_core(data);
});
