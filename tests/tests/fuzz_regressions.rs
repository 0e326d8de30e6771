//! Replays what fuzzing found (`tests/fuzz/regressions/`): the 200
//! smallest inputs of the fuzzing corpus (`corpus-*.rtd`, 907 inputs after
//! `cargo fuzz cmin`, 2,532 coverage edges), and any input that ever made a
//! target crash (`crash-WHAT.rtd`; none so far), and the core reader's seeds
//! and findings (`*.core`) and the wire-stream reader's (`*.rtw`), which
//! convert through them. Every dump, as it is and with its checksums made right (as the fuzz targets try them), goes
//! through rtconv's decode path into every output format and `rtconv
//! export`'s tables. None may panic; each either converts or is refused with
//! an error.

use ringtrace_tests::fuzz_support::{convert_core, convert_wire, export_tables, formats, with_checksums_fixed};
use ringtrace_tests::workspace_root;
use rtconv::convert::{Input, convert_bytes};
use rtconv::model::Source;
use rtconv::symbolize::{Cache, Options};

#[test]
fn every_fuzzing_finding_converts_or_is_refused_without_a_panic() {
    let dir = workspace_root().join("tests/fuzz/regressions");
    let mut inputs: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{} holds the corpus", dir.display());
    let opts = Options { order: Some(vec![Source::Site, Source::Dladdr]), ..Options::default() };
    let cache = Cache::default();
    let (mut converted, mut refused) = (0, 0);
    for input in &inputs {
        let raw = std::fs::read(input).unwrap();
        if input.extension().is_some_and(|e| e == "rtw") {
            // A seed of the wire-stream reader (read_wire) converts; a finding only must not panic.
            let outcome = convert_wire(&raw);
            if input.file_name().unwrap().to_string_lossy().starts_with("stream-") {
                assert!(outcome.is_some_and(|n| n > 0), "{}: a stream that converts", input.display());
            }
            continue;
        }
        if input.extension().is_some_and(|e| e == "core") {
            // A seed of the core-file reader (read_core) converts; a finding only must not panic.
            let outcome = convert_core(&raw);
            if input.file_name().unwrap().to_string_lossy().starts_with("core-") {
                assert!(outcome.is_some_and(|n| n > 0), "{}: a core that converts", input.display());
            }
            continue;
        }
        for bytes in [raw.clone(), with_checksums_fixed(&raw)] {
            for format in formats() {
                let filter = Default::default();
                match convert_bytes(Input::new(input, &bytes, &opts, &filter, &cache), format, &mut std::io::sink()) {
                    Ok(_) => converted += 1,
                    Err(_) => refused += 1,
                }
            }
            // And `rtconv export`'s tables, in memory; budgets and split parts.
            let _ = export_tables(input, &bytes, &opts, &cache);
            let _ = ringtrace_tests::fuzz_support::budgets_and_parts(input, &bytes, &opts, &cache);
        }
    }
    // The corpus reaches past the checksums: some inputs convert, some are refused.
    assert!(converted > 0 && refused > 0, "{converted} converted, {refused} refused");
}
