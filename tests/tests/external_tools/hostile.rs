//! Archives made by the zstd tools people use (multi-frame, pzstd).

use ringtrace_tests::scratch;

use crate::hostile::{bounded_rtconv, compress, dump, stderr};
use crate::shapes;

#[test]
fn every_frame_of_a_concatenated_or_pzstd_archive_is_read() {
    let dir = scratch("hostile-frames");
    let dump = dump(&dir);
    let tar = shapes::tar_of(&[("a.rtd", &dump), ("b.rtd", &dump), ("c.rtd", &dump)]);
    // Split after the first entry, each part compressed on its own.
    let (first, rest) = tar.split_at(shapes::after_first_entry(&dump));
    for (program, ending) in [("zstd", "tar.zst"), ("gzip", "tar.gz")] {
        let (one, two) = (dir.join(format!("one.{ending}")), dir.join(format!("two.{ending}")));
        compress(program, &["-c"], first, &one);
        compress(program, &["-c"], rest, &two);
        let joined = dir.join(format!("joined.{ending}"));
        let mut bytes = std::fs::read(&one).unwrap();
        bytes.extend(std::fs::read(&two).unwrap());
        std::fs::write(&joined, bytes).unwrap();
        let out_dir = dir.join(format!("out-{program}"));
        let out = bounded_rtconv(&["batch", joined.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        for name in ["a.json", "b.json", "c.json"] {
            assert!(out_dir.join(name).is_file(), "{program}: {name} missing: {}", stderr(&out));
        }
    }
    // pzstd writes a skippable frame before each frame it makes.
    let pz = dir.join("p.tar.zst");
    compress("pzstd", &["-q", "-c", "-p", "2"], &tar[..], &pz);
    let skippable = std::fs::read(&pz).unwrap();
    assert_eq!(&skippable[..4], &[0x50, 0x2a, 0x4d, 0x18], "pzstd starts with a skippable frame");
    let out_dir = dir.join("out-pzstd");
    let out = bounded_rtconv(&["batch", pz.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 3);
}
