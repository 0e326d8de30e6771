//! What the fuzz targets (tests/fuzz, by `#[path]`) and the suite that
//! replays their corpus (tests/tests/fuzz_regressions.rs) share, as this one
//! source file: the checksum fixer and the formats every input goes through.

/// The input with the file header's checksum and each section's made right,
/// walking the sections by their length fields. Little-endian only (the
/// byte order of the seeds).
pub fn with_checksums_fixed(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    if out.len() < 32 {
        return out;
    }
    let crc = crc32fast::hash(&out[..28]);
    out[28..32].copy_from_slice(&crc.to_le_bytes());
    let header_size = usize::from(u16::from_le_bytes([out[18], out[19]])).max(32);
    let mut pos = header_size;
    while let Some(header) = out.get(pos..pos + 16) {
        let len = u64::from_le_bytes(header[8..16].try_into().unwrap_or_default());
        let Some(end) = usize::try_from(len).ok().and_then(|l| pos.checked_add(16)?.checked_add(l)) else { break };
        if out.len() < end.saturating_add(4) {
            break;
        }
        let crc = crc32fast::hash(&out[pos..end]);
        out[end..end + 4].copy_from_slice(&crc.to_le_bytes());
        pos = (end + 4).next_multiple_of(8);
    }
    out
}

/// Every output rtconv renders, each way a user can ask for it.
pub fn formats() -> Vec<rtconv::convert::Format> {
    use rtconv::convert::Format;
    vec![
        Format::Chrome(Default::default()),
        Format::Chrome(rtconv::render::chrome::Options { begin_end: true, args: true }),
        Format::Ftrace,
        Format::Systrace,
        Format::Folded,
        Format::Firefox,
        Format::Stats(rtconv::stats::Options {
            sort: rtconv::stats::Column::Total,
            per_thread: true,
            output: rtconv::stats::Output::Csv,
            view: rtconv::stats::View::Functions,
            calibrated: true,
            clean: true,
            color: false,
        }),
    ]
}

/// The dump in `bytes` converted within small budgets (`--max-bytes`, also compressed) and split
/// into parts by size and by duration, into memory: how many of them converted.
pub fn budgets_and_parts(
    path: &std::path::Path,
    bytes: &[u8],
    opts: &rtconv::symbolize::Options,
    cache: &rtconv::symbolize::Cache,
) -> usize {
    use rtconv::convert::{Budget, Format, Input, Split, convert_split, convert_within};
    let filter = rtconv::model::Filter::default();
    let input = Input::new(path, bytes, opts, &filter, cache);
    let timelines = [Format::Chrome(Default::default()), Format::Perfetto, Format::Ftrace, Format::Systrace];
    let mut converted = 0;
    for format in timelines {
        for budget in [Budget { max_bytes: 4096, gzip: false }, Budget { max_bytes: 2048, gzip: true }] {
            let mut out = Vec::new();
            converted += usize::from(convert_within(input, format, budget, &mut out).is_ok());
        }
    }
    for format in [Format::Chrome(Default::default()), Format::Perfetto] {
        for split in [Split::Size(8192), Split::Duration(1_000_000)] {
            let mut write = |_: u32, _: &[u8]| Ok(());
            converted += usize::from(convert_split(input, format, split, &mut write).is_ok());
        }
    }
    converted
}

/// `rtconv export`'s three tables of the dump in `bytes`, built in memory,
/// checked against their fields and dropped (nothing written): what the
/// export does with a hostile dump.
pub fn export_tables(
    path: &std::path::Path,
    bytes: &[u8],
    opts: &rtconv::symbolize::Options,
    cache: &rtconv::symbolize::Cache,
) -> Result<(), rtconv::convert::ConvertError> {
    use rtconv::export::columns::check;
    use rtconv::export::{DumpColumns, Host, dump_row, functions_and_durations, schema, spans};
    let filter = rtconv::model::Filter::default();
    let input = rtconv::convert::Input::new(path, bytes, opts, &filter, cache);
    let (fit, _) = rtconv::convert::with_timeline(input, false, |tl| {
        let dump = DumpColumns::new(tl, &path.to_string_lossy(), Host(None));
        let (spans_fields, functions_fields, dumps_fields) = (schema::spans(), schema::functions(), schema::dumps());
        let fit = spans::write(tl, &dump, &mut |batch| check(&spans_fields, batch)).and_then(|found| {
            let (functions, durations) = functions_and_durations(tl, &dump);
            check(&functions_fields, &functions)?;
            check(&schema::durations(), &durations)?;
            check(&dumps_fields, &dump_row(tl, &dump, &found))?;
            Ok(found)
        });
        let found = fit.as_ref().copied().unwrap_or_default();
        (fit.map(drop), found)
    })?;
    if let Err(unfit) = fit {
        panic!("a table that does not fit its fields: {}: {unfit}", path.display());
    }
    Ok(())
}

/// A core file's rings, read with no file it names opened, converted into
/// every output format: `None` if rtconv refused it as a core, else how many
/// formats converted (the others were refused with an error).
pub fn convert_core(bytes: &[u8]) -> Option<usize> {
    use rtconv::core_file::{Files, to_dump};
    convert_made(&to_dump(bytes, None, Files::Ignore).ok()?)
}

/// `bytes` read as a wire stream (`rtconv::wire_file`) and converted into every output format;
/// how many formats converted, `None` if the stream yields no dump. Also read live
/// ([`rtconv::live::Live`]), arriving in pieces (their size from the first byte), into the
/// formats written in parts, a part after each piece.
pub fn convert_wire(bytes: &[u8]) -> Option<usize> {
    let piece = usize::from(bytes.first().copied().unwrap_or(1)).max(1);
    let opts = rtconv::symbolize::Options {
        order: Some(vec![rtconv::model::Source::Site]),
        ..rtconv::symbolize::Options::default()
    };
    let filter = rtconv::model::Filter::default();
    for format in [rtconv::convert::Format::Perfetto, rtconv::convert::Format::Ftrace] {
        let mut live = rtconv::live::Live::new("fuzz-live".into(), format, &opts, &filter);
        for chunk in bytes.chunks(piece) {
            live.feed(chunk);
            let _ = live.flush(&mut std::io::sink());
        }
        let _ = live.finish(false, &mut std::io::sink());
    }
    convert_made(&rtconv::wire_file::to_dump(bytes).ok()?)
}

/// A dump rtconv made (from a core, a stream) converted into every output format: how many converted.
fn convert_made(core: &[u8]) -> Option<usize> {
    let opts = rtconv::symbolize::Options {
        order: Some(vec![rtconv::model::Source::Site]),
        ..rtconv::symbolize::Options::default()
    };
    let cache = rtconv::symbolize::Cache::default();
    let filter = rtconv::model::Filter::default();
    let input = rtconv::convert::Input::new(std::path::Path::new("fuzz.core"), core, &opts, &filter, &cache);
    let converted = formats()
        .into_iter()
        .filter(|&format| rtconv::convert::convert_bytes(input, format, &mut std::io::sink()).is_ok())
        .count();
    Some(converted)
}
