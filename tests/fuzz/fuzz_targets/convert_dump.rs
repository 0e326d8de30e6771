//! rtconv's whole decode path on arbitrary bytes: load (with narrow-counter
//! unwrapping), names from the dump's own tables only (no file is opened
//! for paths the input names), the timeline, every renderer to a sink,
//! `rtconv export`'s three tables (built in memory, not written), and the
//! timeline formats within small budgets and split into parts.
//! It may report damage; it must never panic, hang or allocate by a length
//! the input claims. Each input is tried as it is and with its checksums
//! made right (see the lib).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtconv::convert::{Input, convert_bytes};
use rtconv::model::Source;
use rtconv::symbolize::{Cache, Options};

fuzz_target!(|data: &[u8]| {
    let opts = Options { order: Some(vec![Source::Site, Source::Dladdr]), ..Options::default() };
    let cache = Cache::default();
    let path = std::path::Path::new("fuzz.rtd");
    let fixed = ringtrace_fuzz::with_checksums_fixed(data);
    for (data, format) in
        [data, &fixed[..]].into_iter().flat_map(|d| ringtrace_fuzz::formats().into_iter().map(move |f| (d, f)))
    {
        let filter = Default::default();
        let _ = convert_bytes(Input::new(path, data, &opts, &filter, &cache), format, &mut std::io::sink());
    }
    for data in [data, &fixed[..]] {
        let _ = ringtrace_fuzz::export_tables(path, data, &opts, &cache);
        let _ = ringtrace_fuzz::budgets_and_parts(path, data, &opts, &cache);
    }
});
