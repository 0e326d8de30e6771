//! The hostile corpus: dumps that are valid but shaped to blow up memory or
//! time, archives that are bombs or split into frames, and special files
//! where a dump should be — one builder per class, so `tests/tests/hostile.rs`
//! and the `hostile-corpus` program (which writes them all to a folder, to
//! try a build of rtconv by hand) make the same inputs.
//!
//! Every dump here is written with the format crate's writer, so CRCs and
//! lengths are right: what hurts is the shape, not damage.

use std::io::Read;
use std::path::{Path, PathBuf};

use ringtrace_format::{Module, Record, RingInfo};

use ringtrace_format::test_util::DumpBuilder;

/// One thread whose `n` spans each hold the next: nesting `n` deep, two keys
/// alternating (no modules: the keys stay unnamed addresses).
pub fn nested(n: u64) -> Vec<u8> {
    let (mut w, _) = DumpBuilder::new("deep").start();
    // In the order they ended: the innermost first.
    let records: Vec<Record> = (0..n)
        .rev()
        .map(|depth| Record { key: 0x10_0000 + (depth % 2) * 16, enter: depth, exit: 4 * n - depth })
        .collect();
    let info = RingInfo { tid: 1, capacity: n, written: n, dropped: 0, aux: 0, flags: 0, name: b"main" };
    w.ring(&info, &records, &[]).unwrap();
    w.finish().unwrap().0
}

/// `threads` rings of `keys_per_thread` spans each, every span with a key of
/// its own (`threads × keys_per_thread` distinct keys, one call each).
pub fn many_keys(threads: u64, keys_per_thread: u64) -> Vec<u8> {
    let (mut w, _) = DumpBuilder::new("keys").start();
    for t in 0..threads {
        let records: Vec<Record> = (0..keys_per_thread)
            .map(|i| Record { key: 0x10_0000 + (t * keys_per_thread + i) * 16, enter: i * 10, exit: i * 10 + 5 })
            .collect();
        let n = keys_per_thread;
        let info = RingInfo { tid: t + 1, capacity: n, written: n, dropped: 0, aux: 0, flags: 0, name: b"" };
        w.ring(&info, &records, &[]).unwrap();
    }
    w.finish().unwrap().0
}

/// A streamed dump of `streams` rings of `chunks` chunks each, one span a
/// chunk, chunks of the rings interleaved: many chunks to gather per ring,
/// and many rings to tell apart.
pub fn many_stream_chunks(streams: u64, chunks: u64) -> Vec<u8> {
    let (mut w, _) = DumpBuilder::new("chunks").start();
    for c in 0..chunks {
        for s in 0..streams {
            let record = Record { key: 0x10_0000 + s * 16, enter: c * 10, exit: c * 10 + 5 };
            let info = RingInfo { tid: s + 1, capacity: 16, written: c + 1, dropped: 0, aux: 0, flags: 2, name: b"" };
            w.ring_chunk(&info, s + 1, c, &[record], &[]).unwrap();
        }
    }
    w.finish().unwrap().0
}

/// `n` modules whose binaries do not exist (`/nonexistent/lib{i}.so`), listed
/// in descending address order, one span at offset 0x40 in each.
pub fn many_modules(n: u64) -> Vec<u8> {
    let (mut w, _) = DumpBuilder::new("modules").start();
    let paths: Vec<String> = (0..n).map(|i| format!("/nonexistent/lib{i}.so")).collect();
    let base = |i: u64| 0x1000_0000 + i * 0x1_0000;
    let modules: Vec<Module<'_>> = (0..n)
        .rev()
        .map(|i| Module {
            start: base(i),
            end: base(i) + 0x8000,
            bias: base(i),
            flags: 0,
            build_id: &[0xab; 20],
            path: paths[i as usize].as_bytes(),
        })
        .collect();
    w.modules(&modules).unwrap();
    let records: Vec<Record> =
        (0..n).map(|i| Record { key: base(i) + 0x40, enter: i * 10, exit: i * 10 + 5 }).collect();
    let info = RingInfo { tid: 1, capacity: n, written: n, dropped: 0, aux: 0, flags: 0, name: b"main" };
    w.ring(&info, &records, &[]).unwrap();
    w.finish().unwrap().0
}

/// The label [`control_names`] gives its one site: SOH, ESC, `;` and a line feed.
pub const CONTROL_LABEL: &str = "a\u{1}b\u{1b}[31m;c\nd";

/// One span of a site labelled [`CONTROL_LABEL`], on a thread named `t` + BEL.
pub fn control_names() -> Vec<u8> {
    let (mut w, keys) = DumpBuilder::new("ctl").sites(0x1000, &[(CONTROL_LABEL, "x.rs", 1)]).start();
    let info = RingInfo { tid: 1, capacity: 1, written: 1, dropped: 0, aux: 0, flags: 0, name: b"t\x07" };
    w.ring(&info, &[Record { key: keys[0], enter: 10, exit: 20 }], &[]).unwrap();
    w.finish().unwrap().0
}

/// Makes `module` a sparse file of `size` bytes and returns a dump whose one
/// module is recorded at that path, with one span at offset 0x40 in it.
pub fn huge_module(module: &Path, size: u64) -> Vec<u8> {
    std::fs::File::create(module).unwrap().set_len(size).unwrap();
    let (mut w, _) = DumpBuilder::new("huge").start();
    let path = module.to_str().unwrap().as_bytes();
    w.modules(&[Module { start: 0x10_0000, end: 0x20_0000, bias: 0x10_0000, flags: 0, build_id: &[], path }]).unwrap();
    let info = RingInfo { tid: 1, capacity: 1, written: 1, dropped: 0, aux: 0, flags: 0, name: b"main" };
    w.ring(&info, &[Record { key: 0x10_0040, enter: 1, exit: 2 }], &[]).unwrap();
    w.finish().unwrap().0
}

/// A tar entry header for a regular file `name` of `size` bytes.
pub fn tar_header(name: &str, size: u64) -> tar::Header {
    let mut header = tar::Header::new_gnu();
    header.set_path(name).unwrap();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    header.set_cksum();
    header
}

/// A tar archive of regular files, each (name, bytes); a name over 100 bytes
/// takes a GNU long-name entry before its own.
pub fn tar_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for (name, bytes) in entries {
        let mut header = tar_header("x", bytes.len() as u64);
        tar.append_data(&mut header, name, *bytes).unwrap();
    }
    tar.into_inner().unwrap()
}

/// The uncompressed stream of a tar bomb: one entry `name` holding `dump`
/// and then `zeros` zero bytes, its padding and the end-of-archive blocks.
/// Compressed, the zeros cost next to nothing (768 MiB: 3.5 MB with `gzip -1`).
pub fn dump_then_zeros<'a>(name: &str, dump: &'a [u8], zeros: u64) -> impl Read + 'a {
    let size = dump.len() as u64 + zeros;
    let head = tar_header(name, size).as_bytes().to_vec();
    let padding = (512 - size % 512) % 512;
    std::io::Cursor::new(head).chain(dump).chain(std::io::repeat(0).take(zeros + padding + 1024))
}

/// A tar archive holding a directory and a symbolic link named like a dump
/// (to `/etc/passwd`), and no dump.
pub fn links_only_tar() -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    let mut dir = tar::Header::new_gnu();
    dir.set_path("d/").unwrap();
    dir.set_entry_type(tar::EntryType::Directory);
    dir.set_size(0);
    dir.set_cksum();
    tar.append(&dir, &[][..]).unwrap();
    let mut link = tar::Header::new_gnu();
    link.set_entry_type(tar::EntryType::Symlink);
    link.set_size(0);
    tar.append_link(&mut link, "d/x.rtd", "/etc/passwd").unwrap();
    tar.into_inner().unwrap()
}

/// Where a [`tar_of`] archive whose first entry holds `first` splits after
/// that entry (its header and padded data).
pub fn after_first_entry(first: &[u8]) -> usize {
    512 + first.len().next_multiple_of(512)
}

/// A zstd skippable frame of `payload`, as `pzstd` puts before each frame it makes.
pub fn zstd_skippable_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = 0x184D_2A50u32.to_le_bytes().to_vec();
    frame.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes());
    frame.extend_from_slice(payload);
    frame
}

/// Makes a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", path.display());
}

/// How big the shapes of [`write_corpus`] are.
#[derive(Clone, Copy, Debug)]
pub struct Scale {
    /// Zero bytes after the dump in the tar bombs.
    pub bomb_zeros: u64,
    /// Depth of the nested dump.
    pub depth: u64,
    /// Distinct keys of the many-keys dump.
    pub keys: u64,
    /// Threads (one span each) of the many-threads dump.
    pub threads: u64,
    /// Modules of the many-modules dump.
    pub modules: u64,
    /// Size of the sparse module file.
    pub module_file: u64,
}

impl Scale {
    /// The figures issue 14 reported them at.
    pub const REPORTED: Scale = Scale {
        bomb_zeros: 2 << 30,
        depth: 1_000_000,
        keys: 10_000_000,
        threads: 150_000,
        modules: 100_000,
        module_file: 2 << 30,
    };
    /// Small enough for a test to convert each in a second or two.
    pub const SMALL: Scale = Scale {
        bomb_zeros: 64 << 20,
        depth: 5_000,
        keys: 20_000,
        threads: 5_000,
        modules: 5_000,
        module_file: 1 << 30,
    };
}

/// Writes one file (or FIFO, or link) of every class into `dir`, built
/// around the real dump `seed`, and returns each path with what it is.
/// Archives are compressed in this process (flate2, ruzstd), each part on its
/// own where the class is "many frames".
pub fn write_corpus(dir: &Path, seed: &[u8], scale: Scale) -> Vec<(PathBuf, &'static str)> {
    use flate2::{Compression, write::GzEncoder};
    use ruzstd::encoding::{CompressionLevel, compress_to_vec};
    use std::io::Write;
    let gzip = |data: &mut dyn Read| {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        std::io::copy(data, &mut encoder).unwrap();
        encoder.finish().unwrap()
    };
    let zstd = |data: &[u8]| compress_to_vec(data, CompressionLevel::Fastest);
    let mut corpus = Vec::new();
    let mut put = |name: &str, bytes: &[u8], what: &'static str| {
        let path = dir.join(name);
        std::fs::File::create(&path).unwrap().write_all(bytes).unwrap();
        corpus.push((path, what));
    };
    put("bomb.tar.gz", &gzip(&mut dump_then_zeros("big.rtd", seed, scale.bomb_zeros)), "a dump followed by zeros");
    let three = tar_of(&[("a.rtd", seed), ("b.rtd", seed), ("c.rtd", seed)]);
    let (first, rest) = three.split_at(after_first_entry(seed));
    put("frames.tar.gz", &[gzip(&mut &*first), gzip(&mut &*rest)].concat(), "two gzip members");
    put("frames.tar.zst", &[zstd(first), zstd(rest)].concat(), "two zstd frames");
    let skippable = [zstd_skippable_frame(b"pzstd"), zstd(first), zstd_skippable_frame(b"pzstd"), zstd(rest)];
    put("pzstd.tar.zst", &skippable.concat(), "zstd frames after skippable frames");
    put("empty.tar", b"", "an empty archive");
    put("links.tar", &links_only_tar(), "an archive of a directory and a link");
    let long = format!("{}.rtd", "n".repeat(250));
    put("long-name.tar", &tar_of(&[(&long, seed)]), "an entry name longer than NAME_MAX");
    put("deep.rtd", &nested(scale.depth), "deep nesting");
    put("keys.rtd", &many_keys(1, scale.keys), "many distinct keys");
    put("threads.rtd", &many_keys(scale.threads, 1), "many threads");
    put("chunks.rtd", &many_stream_chunks(scale.threads, 2), "a stream of many rings in chunks");
    put("modules.rtd", &many_modules(scale.modules), "many modules");
    put("control.rtd", &control_names(), "names with control characters");
    put("huge-module.rtd", &huge_module(&dir.join("libhuge.so"), scale.module_file), "a huge module file");
    for (name, bytes, what) in cores::all() {
        put(name, &bytes, what);
    }
    let fifo = dir.join("fifo.rtd");
    mkfifo(&fifo);
    corpus.push((fifo, "a FIFO named like a dump"));
    let device = dir.join("random.rtd");
    std::os::unix::fs::symlink("/dev/urandom", &device).unwrap();
    corpus.push((device, "a link to a device"));
    corpus
}

/// Hand-made core files (see `ringtrace_tests::core_image`): a good one of
/// two rings, and the ways a core can lie, each with what rtconv must say.
pub mod cores {
    use ringtrace_format::Record;
    use ringtrace_format::directory::{dir, entry};
    use ringtrace_tests::core_image::{Image, RingSpec};

    /// Two rings: thread 1's (16 slots) has written 20 spans, 2 open; thread 2's 5.
    pub fn two_rings() -> Image {
        let spans = |n: u64, key: u64| -> Vec<Record> {
            (0..n).map(|i| Record { key: key + (i % 3) * 16, enter: 2_000 + i * 100, exit: 2_050 + i * 100 }).collect()
        };
        let (a, b) = (spans(20, 0x40_1000), spans(5, 0x40_2000));
        Image::new(&[
            RingSpec {
                tid: 1,
                name: "main",
                capacity: 16,
                records: &a,
                open: &[(0x40_3000, 1_500), (0x40_3010, 1_900)],
            },
            RingSpec { tid: 2, name: "worker", capacity: 16, records: &b, open: &[] },
        ])
    }

    /// Every shape: file name, core bytes, what it is.
    pub fn all() -> Vec<(&'static str, Vec<u8>, &'static str)> {
        let core = |image: &Image| image.core(1, 6, "hand-made");
        let good = two_rings();
        let mut out = vec![("good.core", core(&good), "a core of two rings")];
        let zeros = vec![0u8; 4096];
        out.push((
            "no-ringtrace.core",
            ringtrace_tests::core_image::core_file(&[(0x1000, &zeros)], 1, 11, "plain"),
            "a core of a program without ringtrace",
        ));
        let whole = core(&good);
        let cut = whole.len() - 16 * 24 / 2; // inside thread 2's slots, the image's last bytes
        out.push(("cut.core", whole[..cut].to_vec(), "a core cut short"));
        let mut outside = two_rings();
        outside.set_dir(dir::FIRST, 0xdead_0000);
        out.push(("outside.core", core(&outside), "a directory pointing outside the core"));
        let mut cycle = two_rings();
        // The list is newest first (thread 2, then 1): thread 1's entry points back at thread 2's.
        let first = cycle.address(cycle.entries[1]);
        cycle.set_entry(0, entry::NEXT, first);
        out.push(("cycle.core", core(&cycle), "a list of entries that loops"));
        let mut capacity = two_rings();
        capacity.set_entry(0, entry::CAPACITY, 1 << 27);
        out.push(("capacity.core", core(&capacity), "a capacity that lies"));
        let mut overlap = two_rings();
        let slots = overlap.address(overlap.slots[0]);
        overlap.set_entry(1, entry::SLOTS, slots);
        out.push(("overlap.core", core(&overlap), "two rings over the same slots"));
        let mut counts = two_rings();
        let aux = counts.entries[0] + 8 * entry::AUX;
        let aux_at = u64::from_le_bytes(counts.bytes[aux..aux + 8].try_into().unwrap());
        counts.put((aux_at - ringtrace_tests::core_image::BASE) as usize, 1 << 40);
        out.push(("counts.core", core(&counts), "a ring whose counts contradict each other"));
        let mut name = two_rings();
        name.set_entry(0, entry::NAME_LEN, 1 << 40);
        out.push(("name.core", core(&name), "a thread name's length that lies"));
        out
    }
}
