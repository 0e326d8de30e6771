//! The persistent symbol index (`rtconv/src/symbolize/index.rs`): a second
//! run answers from it without the DWARF, `convert` uses it as `symbolize`
//! does, and a cache file that is corrupt, planted or shared is refused
//! with one line saying why — and the names stay right.
//!
//! Proof that a run answered from the index and not from the DWARF: the
//! binary's `.debug_info` is overwritten with zeros (same size, same
//! build-id) after the first run; with the index off the same run then
//! loses its names.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ringtrace_tests::{
    Scratch, build_id, copy_executable, must_run, scratch, spread_addresses, symbolize_subject, tool,
};

/// `rtconv ARGS` with its index under `root` (`None`: off).
fn indexed(root: Option<&Path>, args: &[&str]) -> Command {
    let mut cmd = ringtrace_tests::rtconv();
    cmd.args(args);
    if let Some(root) = root {
        cmd.env("RTCONV_SYMBOL_INDEX", root);
    }
    cmd
}

fn output(cmd: &mut Command) -> (String, String) {
    let out: Output = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

/// `cmd`'s stdout, which must say on stderr that the DWARF could not be read (exit 3: names lost).
fn without_dwarf(cmd: &mut Command) -> String {
    let out: Output = cmd.stdin(Stdio::null()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{cmd:?}: {stderr}");
    assert!(stderr.contains("the dwarf backend failed"), "{stderr}");
    String::from_utf8(out.stdout).unwrap()
}

/// `rtconv symbolize -f -i -C -e BIN ADDRESSES...`: (stdout, stderr).
fn symbolize(root: Option<&Path>, bin: &Path, addresses: &[String]) -> (String, String) {
    output(indexed(root, &["symbolize", "-f", "-i", "-C", "-e"]).arg(bin).args(addresses))
}

/// Overwrites `bin`'s `.debug_info` with zeros of the same size: its build-id stays.
fn zero_debug_info(bin: &Path) {
    let headers = must_run(tool("readelf").args(["-S", "-W"]).arg(bin));
    let size = headers
        .lines()
        .find_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            let at = fields.iter().position(|f| *f == ".debug_info")?;
            usize::from_str_radix(fields.get(at + 4)?, 16).ok()
        })
        .expect("a .debug_info section");
    let zeros = bin.with_extension("zeros");
    std::fs::write(&zeros, vec![0u8; size]).unwrap();
    let mut update = std::ffi::OsString::from(".debug_info=");
    update.push(&zeros);
    must_run(tool("objcopy").arg("--update-section").arg(update).arg(bin));
}

/// The subject, its addresses, the index root, and the index file of the subject's names.
struct Setup {
    dir: Scratch,
    exe: PathBuf,
    addresses: Vec<String>,
    root: PathBuf,
    file: PathBuf,
}

fn setup(test: &str) -> Setup {
    let dir = scratch(test);
    let exe = symbolize_subject(&dir);
    let addresses = spread_addresses(&exe, 200);
    let root = dir.join("index");
    let file = root.join(build_id(&exe)).join("names-demangled.v2");
    Setup { dir, exe, addresses, root, file }
}

#[test]
fn a_second_run_answers_from_the_index_without_the_dwarf() {
    let s = setup("index-warm");
    let (cold, stderr) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    assert!(stderr.is_empty(), "{stderr}");
    assert!(s.file.is_file(), "the first run wrote {}", s.file.display());
    assert!(cold.contains("main"), "{cold}");
    zero_debug_info(&s.exe);
    // Without the index the DWARF is gone: the names are poorer.
    let without = without_dwarf(indexed(None, &["symbolize", "-f", "-i", "-C", "-e"]).arg(&s.exe).args(&s.addresses));
    assert_ne!(without, cold, "zeroing .debug_info did not change the names: the test proves nothing");
    // With it: the same answers, as arguments and as queries piped one by one.
    let (warm, stderr) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    assert_eq!(warm, cold);
    assert!(stderr.is_empty(), "{stderr}");
    let mut child = indexed(Some(&s.root), &["symbolize", "-f", "-i", "-C", "-e"])
        .arg(&s.exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, (s.addresses.join("\n") + "\n").as_bytes()).unwrap();
    drop(stdin);
    let piped = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8(piped.stdout).unwrap(), cold);
    // --no-symbol-index: neither read nor written.
    let other = s.dir.join("other");
    let off = without_dwarf(
        indexed(Some(&other), &["symbolize", "--no-symbol-index", "-f", "-i", "-C", "-e"])
            .arg(&s.exe)
            .args(&s.addresses),
    );
    assert_eq!(off, without);
    assert!(!other.exists(), "--no-symbol-index made {}", other.display());
}

#[test]
fn the_index_grows_with_what_is_asked() {
    let s = setup("index-grow");
    let (first, second) = s.addresses.split_at(s.addresses.len() / 2);
    let (all_cold, _) = symbolize(None, &s.exe, &s.addresses);
    symbolize(Some(&s.root), &s.exe, first);
    let size = std::fs::metadata(&s.file).unwrap().len();
    symbolize(Some(&s.root), &s.exe, second);
    assert!(std::fs::metadata(&s.file).unwrap().len() > size, "the second run's answers were added");
    zero_debug_info(&s.exe);
    assert_eq!(symbolize(Some(&s.root), &s.exe, &s.addresses).0, all_cold);
}

#[test]
fn convert_names_a_dump_from_the_index_of_its_build() {
    let dir = scratch("index-convert");
    let exe = dir.join("workload");
    copy_executable(&ringtrace_tests::binary("workload"), &exe);
    let dump = ringtrace_tests::record_workload_with(&exe, &dir, "w", &[]);
    let root = dir.join("index");
    let chrome = |root: Option<&Path>| {
        let mut cmd = indexed(root, &["convert", "-o", "-"]);
        cmd.arg(&dump);
        let json = if root.is_some() { output(&mut cmd).0 } else { without_dwarf(&mut cmd) };
        let mut names: Vec<String> = ringtrace_tests::parse_chrome(&json).events.into_iter().map(|e| e.name).collect();
        names.sort_unstable();
        names.dedup();
        names
    };
    let cold = chrome(Some(&root));
    assert!(cold.iter().any(|n| n == "workload::fib"), "{cold:?}");
    assert!(root.join(build_id(&exe)).join("names-demangled.v2").is_file());
    zero_debug_info(&exe);
    assert_ne!(chrome(None), cold, "zeroing .debug_info did not change the names: the test proves nothing");
    assert_eq!(chrome(Some(&root)), cold);
}

/// A warm run over a tampered index: one warning naming the file and the
/// reason, the right names all the same (parsed again), and a sound index after.
fn refused(s: &Setup, cold: &str, reason: &str) {
    let (names, stderr) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    assert_eq!(names, cold);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].starts_with("rtconv: warning: symbol index"), "{stderr}");
    assert!(lines[0].contains(reason), "{reason:?} in {stderr}");
}

#[test]
fn a_corrupt_truncated_or_foreign_index_is_refused_and_replaced() {
    let s = setup("index-corrupt");
    let (cold, _) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    let good = std::fs::read(&s.file).unwrap();
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 0x40;
    for (bytes, reason) in [
        (flipped, "checksum at offset"),
        (good[..good.len() - 9].to_vec(), "checksum at offset"),
        (b"RTSYMIX\0\x07\0\0\0\0\0\0\0".to_vec(), "version at offset 8: 7, expected 2"),
        (vec![0; 3], "file at offset 0: 3 bytes"),
    ] {
        std::fs::write(&s.file, &bytes).unwrap();
        refused(&s, &cold, reason);
        // Replaced by a sound one: the next run says nothing.
        let (again, stderr) = symbolize(Some(&s.root), &s.exe, &s.addresses);
        assert_eq!((again.as_str(), stderr.as_str()), (cold.as_str(), ""), "after {reason}");
    }
    // Another build's index under this build's id.
    let other = s.dir.join("other.cpp");
    std::fs::write(&other, "int main() { return 0; }\n").unwrap();
    let other_exe = s.dir.join("other");
    must_run(tool("c++").args(["-g", "-o"]).arg(&other_exe).arg(&other));
    let other_root = s.dir.join("other-index");
    symbolize(Some(&other_root), &other_exe, &["0x1000".to_string()]);
    let other_file = other_root.join(build_id(&other_exe)).join("names-demangled.v2");
    std::fs::copy(other_file, &s.file).unwrap();
    refused(&s, &cold, "build-id field is");
}

#[test]
fn planted_links_fifos_and_open_directories_are_not_trusted() {
    let s = setup("index-planted");
    let (cold, _) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    let good = std::fs::read(&s.file).unwrap();
    // A symbolic link to a file elsewhere: not followed, not written through.
    let outside = s.dir.join("outside");
    std::fs::write(&outside, &good).unwrap();
    std::fs::remove_file(&s.file).unwrap();
    std::os::unix::fs::symlink(&outside, &s.file).unwrap();
    refused(&s, &cold, "a symbolic link");
    assert_eq!(std::fs::read(&outside).unwrap(), good);
    assert!(!std::fs::symlink_metadata(&s.file).unwrap().is_symlink(), "replaced by a file of its own");
    // A hard link to a file elsewhere (a valid index!): refused, and the other file untouched.
    std::fs::remove_file(&s.file).unwrap();
    std::fs::hard_link(&outside, &s.file).unwrap();
    refused(&s, &cold, "2 hard links, expected 1");
    assert_eq!(std::fs::read(&outside).unwrap(), good);
    // A FIFO: no hang (the run is under the suite's hang guard), refused.
    std::fs::remove_file(&s.file).unwrap();
    must_run(tool("mkfifo").arg(&s.file));
    let mut guarded = tool("timeout");
    guarded.args(["-s", "KILL", "600"]).arg(ringtrace_tests::binary("rtconv"));
    guarded.args(["symbolize", "-f", "-i", "-C", "-e"]).arg(&s.exe).args(&s.addresses);
    let (names, stderr) = output(guarded.env("RTCONV_SYMBOL_INDEX", &s.root));
    assert_eq!(names, cold);
    assert!(stderr.contains("not a regular file"), "{stderr}");
    // A directory others can write to: the index is not used at all.
    use std::os::unix::fs::PermissionsExt;
    let build_dir = s.file.parent().unwrap();
    std::fs::set_permissions(build_dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let before = std::fs::read(&s.file).unwrap();
    refused(&s, &cold, "is writable by others (mode 777)");
    assert_eq!(std::fs::read(&s.file).unwrap(), before, "nothing written there");
}

#[test]
fn concurrent_writers_leave_one_sound_index() {
    let s = setup("index-concurrent");
    let (cold, _) = symbolize(None, &s.exe, &s.addresses);
    // Four runs at once, each on its own quarter of the addresses.
    let quarter = s.addresses.len().div_ceil(4);
    let children: Vec<_> = s
        .addresses
        .chunks(quarter)
        .map(|part| {
            indexed(Some(&s.root), &["symbolize", "-f", "-i", "-C", "-e"])
                .arg(&s.exe)
                .args(part)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Whatever interleaving: the file is sound (no warning), and answers what it has rightly.
    let (names, stderr) = symbolize(Some(&s.root), &s.exe, &s.addresses);
    assert_eq!((names.as_str(), stderr.as_str()), (cold.as_str(), ""));
    let leftovers: Vec<_> =
        std::fs::read_dir(s.file.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "only the index, no temporary files: {leftovers:?}");
}
