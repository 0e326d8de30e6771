//! rtconv's wire-stream reader on arbitrary bytes: COBS framing, CRCs,
//! info, sites and spans frames, per-track unwrapping and loss counting,
//! written as a dump and then converted into every output. It may refuse the
//! input or report losses; it must never panic, hang or allocate by a length
//! the input claims beyond the bounds the format sets.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = ringtrace_fuzz::convert_wire(data);
});
