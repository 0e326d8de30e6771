//! `rtconv batch`'s archive reader on arbitrary bytes, as a plain tar, a
//! gzip and a zstd stream: entries, the streaming dump extent, the size cap
//! and multi-frame decompression; every dump found is then converted from
//! the dump's own tables. It may refuse; it must never panic, hang or
//! allocate by a length the input claims.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rtconv::batch::{Compression, dumps_in_archive};
use rtconv::convert::{Format, Input, convert_bytes};
use rtconv::model::Source;
use rtconv::symbolize::{Cache, Options};

fuzz_target!(|data: &[u8]| {
    let opts = Options { order: Some(vec![Source::Site, Source::Dladdr]), ..Options::default() };
    let cache = Cache::default();
    for kind in [Compression::None, Compression::Gzip, Compression::Zstd] {
        for (name, dump) in dumps_in_archive(data, kind, 1 << 20) {
            if let Ok(bytes) = dump {
                let format = Format::Chrome(Default::default());
                let filter = Default::default();
                let _ = convert_bytes(
                    Input::new(name.as_ref(), &bytes, &opts, &filter, &cache),
                    format,
                    &mut std::io::sink(),
                );
            }
        }
    }
});
