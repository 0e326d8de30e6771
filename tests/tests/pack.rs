//! `rtconv pack`: a dump packed where its binary is converts the same
//! without it — to the byte — keeps every byte it had before its end marker,
//! and packing it again changes nothing; `batch --pack` does it over a
//! directory and says which inputs it cannot pack in place.

use std::path::Path;

use ringtrace_tests::{binary, convert, copy_executable, record_workload_with, rtconv_ok, rtconv_run, scratch};

/// The workload, run from a copy in `dir`, so the dump names a binary the test can take away.
fn record_from_copy(dir: &Path, name: &str) -> std::path::PathBuf {
    let exe = dir.join("workload");
    if !exe.exists() {
        copy_executable(&binary("workload"), &exe);
    }
    record_workload_with(&exe, dir, name, &[])
}

#[test]
fn a_packed_dump_converts_the_same_without_its_binary() {
    let dir = scratch("pack");
    let dump = record_from_copy(&dir, "w.rtd");
    let d = dump.to_str().unwrap();
    let original = std::fs::read(&dump).unwrap();
    let mut before = Vec::new();
    for args in [&[][..], &["--args"], &["--no-demangle"], &["-f", "ftrace"]] {
        let (code, out, err) = convert(&dump, args);
        assert_eq!((code, err.len()), (0, 0), "{err:?}");
        before.push(out);
    }

    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dump, std::fs::Permissions::from_mode(0o640)).unwrap();
    let (code, _, packed) = rtconv_run(&["pack", d]);
    let packed = packed.join("\n");
    assert_eq!(code, 0, "{packed}");
    assert_eq!(std::fs::metadata(&dump).unwrap().permissions().mode() & 0o777, 0o640, "permissions kept");
    assert!(packed.contains("packed 3 names"), "fib, tokenize, checksum: {packed}");
    let bytes = std::fs::read(&dump).unwrap();
    // Everything before the old end marker (24 bytes) is as it was.
    assert_eq!(bytes[..original.len() - 24], original[..original.len() - 24]);
    assert!(bytes.len() > original.len());

    // Packing again is a no-op.
    let (code, _, again) = rtconv_run(&["pack", d]);
    assert!(code == 0 && again.join("\n").contains("packed already"), "{again:?}");
    assert_eq!(std::fs::read(&dump).unwrap(), bytes);

    // Without the binary, every output is what it was with it.
    std::fs::remove_file(dir.join("workload")).unwrap();
    for (args, want) in [&[][..], &["--args"], &["--no-demangle"], &["-f", "ftrace"]].iter().zip(&before) {
        let (code, out, err) = convert(&dump, args);
        assert_eq!((code, err.len()), (0, 0), "{args:?}: {err:?}");
        assert_eq!(&out, want, "{args:?}");
    }
    let info = rtconv_ok(&["info", d]);
    assert!(info.contains("packed     3 names in the dump (rtconv pack), found by: dwarf 3"), "{info}");
    assert!(info.contains("named by: packed 3, sites 4,"), "{info}");
    // The unpacked dump, for comparison, has lost its names.
    std::fs::write(dir.join("orig.rtd"), &original).unwrap();
    let (code, _, err) = convert(&dir.join("orig.rtd"), &[]);
    assert_eq!(code, 3);
    assert!(err.iter().any(|l| l.contains("not found") && l.contains("rtconv pack")), "{err:?}");
}

#[test]
fn batch_packs_every_dump_file_and_refuses_archives() {
    let dir = scratch("batch-pack");
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(&fleet).unwrap();
    let a = record_from_copy(&dir, "fleet/a.rtd");
    let b = record_from_copy(&dir, "fleet/b.rtd");
    let mut tar = tar::Builder::new(Vec::new());
    tar.append_path_with_name(&a, "a.rtd").unwrap();
    std::fs::write(dir.join("fleet.tar"), tar.into_inner().unwrap()).unwrap();

    let (code, _, err) =
        rtconv_run(&["batch", "--pack", fleet.to_str().unwrap(), dir.join("fleet.tar").to_str().unwrap()]);
    let err = err.join("\n");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("fleet.tar: dumps inside an archive cannot be packed in place"), "{err}");
    assert!(err.contains("2 packed, 0 packed with keys left unnamed, 1 failed"), "{err}");
    std::fs::remove_file(dir.join("workload")).unwrap();
    for dump in [a, b] {
        let (code, json, err) = convert(&dump, &[]);
        assert_eq!((code, err.len()), (0, 0), "{err:?}");
        assert!(json.contains("\"workload::fib\""));
    }
}
