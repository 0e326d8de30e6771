//! Inputs shaped to hurt rather than random ones: a decompression bomb,
//! archives as `pzstd` and concatenation make them, archives with nothing
//! in them, and special files where a dump should be. Each run of rtconv is
//! bounded (`RLIMIT_AS`), must end with a status (no signal death, no hang:
//! a FIFO is never waited on) and must name the input it refused.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Output, Stdio};

use ringtrace_tests::{binary, record_workload_with, scratch, tool};

use crate::shapes;

/// The address space rtconv may use in these tests.
const ADDRESS_SPACE: u64 = 1 << 30;

/// rtconv with `args`, stdin closed, its address space capped at
/// [`ADDRESS_SPACE`], killed if it runs for ten minutes (a hang).
pub(crate) fn bounded_rtconv(args: &[&str]) -> Output {
    rtconv_reading(args, Stdio::null())
}

/// [`rtconv`] with `stdin` as its standard input.
fn rtconv_reading(args: &[&str], stdin: Stdio) -> Output {
    let mut command = timed(args);
    command.stdin(stdin);
    bounded(command, None)
}

/// rtconv with `args` under `timeout`, which kills it after ten minutes (a hang).
fn timed(args: &[&str]) -> std::process::Command {
    let mut command = tool("timeout");
    command
        .args(["-s", "KILL", "600"])
        .arg(binary("rtconv"))
        .env(ringtrace_tests::NO_INDEX.0, ringtrace_tests::NO_INDEX.1)
        .args(args)
        .stdin(Stdio::null());
    command
}

/// Runs `command` (from [`timed`]) with its address space capped at [`ADDRESS_SPACE`]
/// and, with `max_file`, its files limited to that many bytes (`RLIMIT_FSIZE`, with
/// `SIGXFSZ` ignored so a write past it fails as on a full disk instead of killing).
/// It must end with a status: no signal death, no kill for hanging.
fn bounded(mut command: std::process::Command, max_file: Option<u64>) -> Output {
    // SAFETY: between fork and exec only signal and setrlimit, which are async-signal-safe, run.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, bytes: u64| {
                let limit = libc::rlimit { rlim_cur: bytes, rlim_max: bytes };
                match libc::setrlimit(resource, &limit) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            };
            set(libc::RLIMIT_AS, ADDRESS_SPACE)?;
            if let Some(bytes) = max_file {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN); // kept across exec
                set(libc::RLIMIT_FSIZE, bytes)?;
            }
            Ok(())
        });
    }
    let out = command.output().unwrap();
    // `timeout` exits 137 when it had to kill; a signal death of rtconv shows as 128 + the signal.
    assert!(out.status.code().is_some_and(|c| c < 128), "rtconv died or hung: {:?}\n{}", out.status, stderr(&out));
    out
}

pub(crate) fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub(crate) fn dump(dir: &Path) -> Vec<u8> {
    dump_of_fib(dir, 10)
}

/// A real dump of the workload computing fib(`n`) on two threads.
fn dump_of_fib(dir: &Path, n: u32) -> Vec<u8> {
    let n = n.to_string();
    std::fs::read(record_workload_with(&binary("workload"), dir, "w.rtd", &["--fib", &n])).unwrap()
}

/// `data` through a real compressor (`gzip -1`, `zstd`, `pzstd`...) into `out`.
pub(crate) fn compress(program: &str, args: &[&str], mut data: impl Read, out: &Path) {
    let mut child =
        tool(program).args(args).stdin(Stdio::piped()).stdout(std::fs::File::create(out).unwrap()).spawn().unwrap();
    std::io::copy(&mut data, child.stdin.as_mut().unwrap()).unwrap();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success(), "{program} failed");
}

#[test]
fn a_dump_followed_by_768_mib_of_zeros_is_read_to_its_end_marker_only() {
    let dir = scratch("hostile-bomb");
    let dump = dump(&dir);
    let zeros = 768u64 << 20;
    // One entry: the dump, then zeros, as one file of the archive (3.5 MB compressed).
    let stream = shapes::dump_then_zeros("big.rtd", &dump, zeros);
    let bomb = dir.join("bomb.tar.gz");
    compress("gzip", &["-1", "-c"], stream, &bomb);
    assert!(std::fs::metadata(&bomb).unwrap().len() < 8 << 20);

    let out_dir = dir.join("out");
    let out = bounded_rtconv(&["batch", bomb.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("big.rtd: the bytes after the dump's end marker were ignored"), "{err}");
    assert!(out_dir.join("big.json").is_file(), "{err}");
}

#[test]
fn a_dump_larger_than_max_dump_size_is_skipped_and_named() {
    let dir = scratch("hostile-max-size");
    let dump = dump(&dir);
    let archive = dir.join("two.tar");
    std::fs::write(&archive, shapes::tar_of(&[("a.rtd", &dump), ("b.rtd", &dump)])).unwrap();
    let out_dir = dir.join("out");
    let limit = (dump.len() - 1).to_string();
    let args = ["batch", archive.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap(), "--max-dump-size", &limit];
    let out = bounded_rtconv(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "nothing converted: {err}");
    assert_eq!(err.matches("is larger than --max-dump-size").count(), 2, "{err}");
    assert!(err.contains("two.tar!a.rtd") && err.contains("two.tar!b.rtd"), "{err}");
    // At its exact size it fits.
    let limit = dump.len().to_string();
    let args = ["batch", archive.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap(), "--max-dump-size", &limit];
    assert_eq!(bounded_rtconv(&args).status.code(), Some(0));
}

#[test]
fn an_archive_with_no_dump_is_a_named_failure() {
    let dir = scratch("hostile-empty");
    let empty = dir.join("empty.tar");
    std::fs::write(&empty, b"").unwrap();
    let links = dir.join("links.tar");
    std::fs::write(&links, shapes::links_only_tar()).unwrap();
    for archive in [&empty, &links] {
        let out = bounded_rtconv(&["batch", archive.to_str().unwrap(), "--out-dir", dir.join("out").to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let line = format!("rtconv: error: {}: holds no dump", archive.display());
        assert!(err.contains(&line), "{err}");
    }
}

#[test]
fn fifos_and_devices_are_refused_without_waiting() {
    let dir = scratch("hostile-special");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    std::fs::write(dumps.join("good.rtd"), dump(&dir)).unwrap();
    let fifo = dumps.join("fifo.rtd");
    shapes::mkfifo(&fifo);
    std::os::unix::fs::symlink("/dev/urandom", dumps.join("random.rtd")).unwrap();

    // Named directly: each refused with what it is (and the FIFO not waited on for a writer).
    for (file, what) in [(&fifo, "a FIFO"), (&dumps.join("random.rtd"), "a character device")] {
        let out = bounded_rtconv(&["convert", file.to_str().unwrap(), "-o", dir.join("x.json").to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("{}: cannot read: {what}, not a regular file", file.display())), "{err}");
    }
    // Inside a directory of a batch: refused, the good dump still converted.
    let out_dir = dir.join("out");
    let out = bounded_rtconv(&["batch", dumps.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("fifo.rtd: cannot read: a FIFO, not a regular file"), "{err}");
    assert!(err.contains("random.rtd: cannot read: a character device, not a regular file"), "{err}");
    assert!(out_dir.join("good.json").is_file());
    // And the archive itself must be a regular file.
    let fake = dir.join("pipe.tar");
    shapes::mkfifo(&fake);
    let out = bounded_rtconv(&["batch", fake.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
    assert!(stderr(&out).contains("pipe.tar: cannot read: a FIFO, not a regular file"), "{}", stderr(&out));
}

/// rtconv with `args` in `dir`, its files limited to `max_file` bytes (see [`bounded`]).
fn rtconv_with_file_limit(dir: &Path, max_file: u64, args: &[&str]) -> Output {
    let mut command = timed(args);
    command.current_dir(dir);
    bounded(command, Some(max_file))
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn a_full_disk_leaves_no_partial_output_and_names_output_and_dump() {
    let dir = scratch("hostile-full");
    std::fs::write(dir.join("d.rtd"), dump(&dir)).unwrap();
    std::fs::remove_file(dir.join("w.rtd")).unwrap();
    // The output already exists: a failed conversion leaves it as it was.
    std::fs::write(dir.join("x.json"), b"previous").unwrap();
    let out = rtconv_with_file_limit(&dir, 4 << 10, &["convert", "d.rtd", "-o", "x.json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rtconv: error: x.json (from d.rtd): File too large"), "{err}");
    assert_eq!(std::fs::read(dir.join("x.json")).unwrap(), b"previous");
    assert_eq!(names_in(&dir), ["d.rtd", "x.json"], "no temporary file left behind");
    // A batch says which dump's output failed, and leaves nothing under its name.
    let out = rtconv_with_file_limit(&dir, 4 << 10, &["batch", "d.rtd", "--out-dir", "out"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("rtconv: error: out/d.json (from d.rtd): File too large"), "{err}");
    assert!(names_in(&dir.join("out")).is_empty(), "{:?}", names_in(&dir.join("out")));
}

#[test]
fn links_and_fifos_planted_in_the_output_directory_are_replaced_not_written_through() {
    let dir = scratch("hostile-planted");
    std::fs::write(dir.join("a.rtd"), dump(&dir)).unwrap();
    std::fs::copy(dir.join("a.rtd"), dir.join("b.rtd")).unwrap();
    let out_dir = dir.join("out");
    std::fs::create_dir_all(&out_dir).unwrap();
    let secret = dir.join("secret.txt");
    std::fs::write(&secret, b"not yours").unwrap();
    std::fs::hard_link(&secret, out_dir.join("a.json")).unwrap();
    shapes::mkfifo(&out_dir.join("b.json"));
    let (a, b) = (dir.join("a.rtd"), dir.join("b.rtd"));
    let out =
        bounded_rtconv(&["batch", a.to_str().unwrap(), b.to_str().unwrap(), "--out-dir", out_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(std::fs::read(&secret).unwrap(), b"not yours");
    for name in ["a.json", "b.json"] {
        let meta = std::fs::symlink_metadata(out_dir.join(name)).unwrap();
        assert!(meta.file_type().is_file(), "{name} is a regular file now");
        assert!(std::fs::read_to_string(out_dir.join(name)).unwrap().starts_with("{\"traceEvents\""));
    }
}

#[test]
fn a_dump_cut_short_while_mapped_reads_as_zeros_and_is_reported_not_a_crash() {
    let dir = scratch("hostile-shrink");
    let path = dir.join("w.rtd");
    std::fs::write(&path, dump_of_fib(&dir, 16)).unwrap();
    // As rtconv's main does (the library never installs a signal handler by itself).
    rtconv::io::guard_shrinking_files().unwrap();
    let bytes = rtconv::model::open(&path).unwrap();
    assert!(bytes.len() > 64 << 10, "spans several pages");
    assert!(!bytes.shrank());
    // Another process truncates it: every page after the first is gone from the mapping.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(100).unwrap();
    let tail: u64 = bytes[bytes.len() - 4096..].iter().map(|&b| u64::from(b)).sum(); // would be SIGBUS
    assert_eq!(tail, 0, "lost bytes read as zeros");
    assert!(bytes.shrank());
    let mut report = rtconv::convert::Report::default();
    report.note_shrinking(&path, &bytes);
    assert!(report.degraded());
    assert!(report.diagnostics[0].to_string().contains("w.rtd: the file was cut short by another process"));
    // Converting what is left ends in an error or a damaged conversion, never a signal.
    let mut out = Vec::new();
    let opts = rtconv::symbolize::Options::default();
    let cache = rtconv::symbolize::Cache::default();
    let format = rtconv::convert::Format::Chrome(Default::default());
    let filter = Default::default();
    let input = rtconv::convert::Input::new(&path, &bytes, &opts, &filter, &cache);
    let _ = rtconv::convert::convert_bytes(input, format, &mut out);
}

#[test]
fn a_hundred_thousand_modules_are_looked_up_by_address_and_reported_in_a_few_lines() {
    let dir = scratch("hostile-modules");
    let path = dir.join("m.rtd");
    std::fs::write(&path, shapes::many_modules(100_000)).unwrap();
    let out = bounded_rtconv(&["convert", path.to_str().unwrap(), "-f", "folded"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "names missing: {err}");
    assert!(err.lines().count() <= 25, "{} lines:\n{err}", err.lines().count());
    assert!(err.contains("99980 more module(s) could not name their keys"), "{err}");
    // Every key was found in its module: unnamed keys show module+offset.
    let folded = String::from_utf8(out.stdout).unwrap();
    assert_eq!(folded.lines().count(), 100_000);
    assert!(folded.contains("lib99999.so+0x40"), "{}", &folded[..folded.len().min(500)]);
}

#[test]
fn a_stream_of_many_rings_in_many_chunks_is_gathered_whole() {
    let dir = scratch("hostile-chunks");
    let path = dir.join("chunks.rtd");
    // 50,000 rings of 2 one-span chunks each, interleaved: 100,000 sections.
    std::fs::write(&path, shapes::many_stream_chunks(50_000, 2)).unwrap();
    let out = bounded(timed(&["stats", path.to_str().unwrap(), "--format", "json"]), None);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls: u64 = json[0]["functions"].as_array().unwrap().iter().map(|f| f["calls"].as_u64().unwrap()).sum();
    assert_eq!(calls, 100_000);
    assert_eq!(json[0]["losses"]["overwritten"], 0);
}

#[test]
fn stats_over_many_keys_and_many_threads_keep_small_accumulators() {
    let dir = scratch("hostile-keys");
    // 200,000 distinct keys, one call each; then 50,000 threads of one span, each its own key.
    for (name, threads, keys, args) in
        [("keys.rtd", 1, 200_000, &[][..]), ("threads.rtd", 50_000, 1, &["--per-thread"][..])]
    {
        let path = dir.join(name);
        std::fs::write(&path, shapes::many_keys(threads, keys)).unwrap();
        let mut all = vec!["stats", path.to_str().unwrap(), "--format", "csv", "--symbolizer", "dladdr"];
        all.extend(args);
        let out = bounded_rtconv(&all);
        let err = stderr(&out);
        assert!(out.status.code().is_some_and(|c| c == 0 || c == 3), "{err}");
        let csv = String::from_utf8(out.stdout).unwrap();
        // One row per (scope, function), each one call.
        assert_eq!(csv.lines().count() as u64, 1 + threads * keys, "{name}");
        assert!(csv.lines().skip(1).all(|l| l.split(',').nth(2) == Some("1")), "{name}");
        // Peak memory within the README's stated bound, for stats and for the timeline outputs.
        let (code, peak) = peak_rss_kib(&all);
        assert_eq!(code, 0);
        let dump_bytes = std::fs::metadata(&path).unwrap().len();
        let bound = within_stated_bound(dump_bytes, threads * keys, threads, STATS_KEY_BYTES);
        assert!(peak < bound, "{name}: stats took {peak} KiB, the bound is {bound} KiB");
        for format in ["chrome", "ftrace"] {
            let (code, peak) = peak_rss_kib(&[
                "convert",
                path.to_str().unwrap(),
                "-f",
                format,
                "--symbolizer",
                "dladdr",
                "-o",
                "/dev/null",
            ]);
            assert_eq!(code, 0);
            let bound = within_stated_bound(dump_bytes, threads * keys, threads, TIMELINE_KEY_BYTES);
            assert!(peak < bound, "{name}: -f {format} took {peak} KiB, the bound is {bound} KiB");
        }
    }
}

/// Memory per distinct key the README states for `stats`, and for `-f chrome`/`-f ftrace`;
/// per thread; and what any run may take besides (the program, its buffers: 16 MiB), as
/// rtconv's own peak (see [`peak_rss_kib`]; measured: 32–115 MiB against bounds of 126–221).
const STATS_KEY_BYTES: u64 = 1024;
const TIMELINE_KEY_BYTES: u64 = 600;
const THREAD_BYTES: u64 = 1536;
const BASE_KIB: u64 = 16 << 10;

/// The README's bound in KiB for a dump of `dump_bytes` (mapped) with `keys` distinct keys on
/// `threads` threads.
fn within_stated_bound(dump_bytes: u64, keys: u64, threads: u64, key_bytes: u64) -> u64 {
    BASE_KIB + (dump_bytes + keys * key_bytes + threads * THREAD_BYTES) / 1024
}

#[test]
fn ftrace_text_of_deep_nesting_grows_with_the_spans_not_with_the_square_of_the_depth() {
    let dir = scratch("hostile-deep");
    let n = 20_000u64;
    let path = dir.join("deep.rtd");
    std::fs::write(&path, shapes::nested(n)).unwrap();
    let out = bounded_rtconv(&["convert", path.to_str().unwrap(), "-f", "ftrace", "--symbolizer", "dladdr"]);
    let err = stderr(&out);
    assert!(out.status.code().is_some_and(|c| c == 0 || c == 3), "{err}");
    assert!(err.contains("nested deeper than 512 levels"), "{err}");
    let text = String::from_utf8(out.stdout).unwrap();
    // An entry line and an exit line per span (the innermost is a leaf: one line), at most ~300 bytes
    // each (200 spaces of indentation).
    assert_eq!(text.lines().filter(|l| l.ends_with('{')).count() as u64, n - 1);
    assert!((text.len() as u64) < 2 * n * 300, "{} bytes", text.len());
    assert!(text.contains(&format!("/* depth {} */ ", n - 1)));
    let deepest_indent = text.lines().map(|l| l.split('|').nth(2).map_or(0, |f| f.len() - f.trim_start().len())).max();
    assert!(deepest_indent.is_some_and(|i| i <= 2 + 200 + 2), "{deepest_indent:?}");
}

#[test]
fn symbolize_refuses_an_endless_line_and_answers_a_line_that_is_not_text() {
    let exe = binary("workload");
    let args = ["symbolize", "-e", exe.to_str().unwrap()];
    let endless = rtconv_reading(&args, Stdio::from(std::fs::File::open("/dev/zero").unwrap()));
    assert_eq!(endless.status.code(), Some(2), "{}", stderr(&endless));
    assert!(stderr(&endless).contains("rtconv: error: stdin line 1: longer than 4096 bytes"), "{}", stderr(&endless));
    let dir = scratch("hostile-symbolize");
    let input = dir.join("in.txt");
    // A line that is not text is answered as an unknown address, with a warning, and reading goes on.
    std::fs::write(&input, b"0x1000\n0x\xff\xfe\n0x1000\n").unwrap();
    let binary_line = rtconv_reading(&args, Stdio::from(std::fs::File::open(&input).unwrap()));
    assert_eq!(binary_line.status.code(), Some(3), "{}", stderr(&binary_line));
    assert!(stderr(&binary_line).contains("is not a query"), "{}", stderr(&binary_line));
    assert_eq!(String::from_utf8_lossy(&binary_line.stdout).lines().count(), 3, "one answer a line");
}

#[test]
fn names_with_control_characters_still_make_well_formed_svg_and_folded_lines() {
    let dir = scratch("hostile-control");
    let path = dir.join("ctl.rtd");
    std::fs::write(&path, shapes::control_names()).unwrap();
    let svg = bounded_rtconv(&["convert", path.to_str().unwrap(), "-f", "flamegraph"]);
    assert_eq!(svg.status.code(), Some(0), "{}", stderr(&svg));
    // XML 1.0 allows no control character but tab, line feed and carriage return.
    let text = String::from_utf8(svg.stdout).unwrap();
    assert!(text.chars().all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r')), "control characters in the SVG");
    assert!(text.contains("a_b_[31m_c_d"), "the name is there, its control characters replaced");
    let folded = bounded_rtconv(&["convert", path.to_str().unwrap(), "-f", "folded"]);
    assert_eq!(String::from_utf8(folded.stdout).unwrap(), "t_;a_b_[31m_c_d 10\n");
}

#[test]
fn stacks_and_trees_of_deep_nesting_merge_what_lies_below_512_levels() {
    let dir = scratch("hostile-deep-stacks");
    let n = 20_000u64;
    let path = dir.join("deep.rtd");
    std::fs::write(&path, shapes::nested(n)).unwrap();
    let dump = path.to_str().unwrap();
    let folded = bounded_rtconv(&["convert", dump, "-f", "folded", "--symbolizer", "dladdr"]);
    assert!(folded.status.code().is_some_and(|c| c == 0 || c == 3), "{}", stderr(&folded));
    let text = String::from_utf8(folded.stdout).unwrap();
    // One line per depth down to 512, one for everything below; the weights still add up to
    // the outermost span's duration (4n ns).
    assert_eq!(text.lines().count(), 513, "{} lines", text.lines().count());
    let weights: u64 = text.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum();
    assert_eq!(weights, 4 * n);
    let deepest = text.lines().find(|l| l.contains(";[deeper] ")).expect("a [deeper] frame");
    assert_eq!(deepest.split(';').count(), 1 + 512 + 1, "thread, 512 levels, [deeper]");
    let tree = bounded_rtconv(&["stats", dump, "--tree", "-f", "csv", "--symbolizer", "dladdr"]);
    assert!(tree.status.code().is_some_and(|c| c == 0 || c == 3), "{}", stderr(&tree));
    let csv = String::from_utf8(tree.stdout).unwrap();
    assert_eq!(csv.lines().count(), 1 + 513);
    let merged = csv.lines().find(|l| l.contains(";[deeper],")).expect("a [deeper] node");
    assert_eq!(merged.split(',').nth(2), Some(&*(n - 512).to_string()), "every deeper span, merged: {merged}");
    let svg = bounded_rtconv(&["convert", dump, "-f", "flamegraph", "--symbolizer", "dladdr"]);
    assert!(svg.status.code().is_some_and(|c| c == 0 || c == 3), "{}", stderr(&svg));
}

#[test]
fn a_module_recorded_as_a_2_gib_sparse_file_is_inspected_not_read_whole() {
    let dir = scratch("hostile-huge-module");
    let dump = dir.join("huge.rtd");
    std::fs::write(&dump, shapes::huge_module(&dir.join("libhuge.so"), 2 << 30)).unwrap();
    // Inspecting it touches a few pages; its size must not show in memory.
    let (code, peak) = peak_rss_kib(&["convert", dump.to_str().unwrap(), "-f", "folded"]);
    assert_eq!(code, 3);
    assert!(peak < 256 << 10, "peak RSS {peak} KiB");
    // Under the 1 GiB address space, a 2 GiB file can be neither mapped nor read whole.
    let out = bounded_rtconv(&["convert", dump.to_str().unwrap(), "-f", "folded"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("libhuge.so"), "the module is named: {err}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "main;?? (libhuge.so+0x40) 1\n");
}

/// rtconv with `args` (no address-space cap, output discarded): its exit
/// status and peak resident memory in KiB, from `wait4(2)`.
#[allow(clippy::zombie_processes)] // reaped by the wait4 below, which std's `wait` cannot replace
fn peak_rss_kib(args: &[&str]) -> (i32, u64) {
    // GNU time between `timeout` and rtconv reports rtconv's own peak: `ru_maxrss` of a process
    // forked from this one starts at this process's size (Linux keeps the old address space's
    // peak at `exec`), which other tests of this binary raise; `time` is small when it forks.
    let report = std::env::temp_dir().join(format!("rtconv-peak-{}-{}", std::process::id(), unique()));
    let mut command = tool("timeout");
    command.args(["-s", "KILL", "600", "/usr/bin/time", "-f", "%M", "-o"]).arg(&report).arg(binary("rtconv"));
    command.env(ringtrace_tests::NO_INDEX.0, ringtrace_tests::NO_INDEX.1).args(args).stdin(Stdio::null());
    let status = command.stdout(Stdio::null()).stderr(Stdio::null()).status().unwrap();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    let peak = text.lines().last().and_then(|l| l.trim().parse().ok());
    let peak = peak.unwrap_or_else(|| panic!("rtconv died or hung ({status}): time reported {text:?}"));
    (status.code().unwrap_or(-1), peak)
}

/// A number no other call in this process has had.
fn unique() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

#[test]
fn a_symbolic_link_named_with_o_is_followed_and_stays_a_link() {
    let dir = scratch("hostile-o-link");
    std::fs::write(dir.join("d.rtd"), dump(&dir)).unwrap();
    std::fs::create_dir_all(dir.join("elsewhere")).unwrap();
    std::fs::write(dir.join("elsewhere/real.json"), b"old").unwrap();
    std::os::unix::fs::symlink("elsewhere/real.json", dir.join("link.json")).unwrap();
    let (d, link) = (dir.join("d.rtd"), dir.join("link.json"));
    let out = bounded_rtconv(&["convert", d.to_str().unwrap(), "-o", link.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert!(std::fs::read_to_string(dir.join("elsewhere/real.json")).unwrap().starts_with("{\"traceEvents\""));
    assert_eq!(names_in(&dir.join("elsewhere")), ["real.json"], "no temporary file left");
}

#[test]
fn the_last_address_and_discarded_code_at_zero_are_unnamed() {
    // u64::MAX was found by the symbolize_stdin fuzzer: addr2line looks up `[address, address + 1)`.
    // 0 is where the DWARF of code the linker discarded says it is; GNU addr2line, the reference,
    // names neither.
    let workload = binary("workload");
    let reference =
        tool("addr2line").arg("-f").arg("-e").arg(&workload).args(["0x0", "0xffffffffffffffff"]).output().unwrap();
    assert_eq!(String::from_utf8_lossy(&reference.stdout).lines().filter(|l| l.starts_with("??")).count(), 4);
    let opts = rtconv::symbolize::Options {
        order: Some(vec![rtconv::model::Source::Dwarf, rtconv::model::Source::Symtab]),
        index: None,
        ..Default::default()
    };
    let (names, failures) = rtconv::symbolize::resolve_addresses(&workload, &[0, u64::MAX], &opts).unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    assert_eq!(names, [None, None]);
}

/// Every file a directory tree holds, relative to `root`.
fn tree(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            found.push(path.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            if std::fs::symlink_metadata(&path).unwrap().is_dir() {
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn every_class_of_the_hostile_corpus_ends_with_a_status_and_a_line_naming_the_input() {
    let dir = scratch("hostile-corpus");
    let corpus = dir.join("corpus");
    std::fs::create_dir_all(&corpus).unwrap();
    let seed = dump(&dir);
    std::fs::remove_file(dir.join("w.rtd")).unwrap();
    let files = shapes::write_corpus(&corpus, &seed, shapes::Scale::SMALL);
    let corpus_files = tree(&corpus);
    let out = dir.join("out");
    for (path, what) in &files {
        let name = path.file_name().unwrap().to_str().unwrap();
        let file = path.to_str().unwrap();
        let to = out.join(name);
        let to = to.to_str().unwrap();
        let json = format!("{to}.json");
        let runs: Vec<Vec<&str>> = if name.contains(".tar") {
            vec![vec!["batch", file, "--out-dir", to]]
        } else {
            vec![
                vec!["convert", file, "-o", &json],
                vec!["convert", file, "-f", "ftrace", "-o", &json],
                vec!["stats", file, "--per-thread"],
                vec!["stats", file, "--tree"],
                vec!["batch", file, "--out-dir", to],
            ]
        };
        for args in runs {
            let run = bounded_rtconv(&args); // ends with a status (no signal, no hang) within the address-space cap
            let (code, err) = (run.status.code().unwrap(), stderr(&run));
            let named = err.lines().any(|l| l.starts_with("rtconv: ") && l.contains(name));
            assert!(code == 0 || named, "{what}: {args:?} exit {code} without a line naming {name}:\n{err}");
        }
    }
    // The long entry name makes an output name that fits NAME_MAX.
    let long = tree(&out.join("long-name.tar"));
    assert!(long.len() == 1 && long[0].len() <= 255 && long[0].ends_with(".json"), "{long:?}");
    // All of it as one batch: the FIFO and the device refused, the rest converted; nothing
    // written outside the out dir, nothing changed in the corpus.
    let all = dir.join("all");
    let run = bounded_rtconv(&["batch", corpus.to_str().unwrap(), "--out-dir", all.to_str().unwrap()]);
    assert_eq!(run.status.code(), Some(3), "{}", stderr(&run));
    assert_eq!(tree(&corpus), corpus_files);
    assert_eq!(names_in(&dir), ["all", "corpus", "out"]);
}

#[test]
fn jobs_are_capped_and_no_more_workers_start_than_there_are_dumps() {
    let dir = scratch("hostile-jobs");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).unwrap();
    for name in ["a.rtd", "b.rtd", "c.rtd"] {
        std::fs::write(dumps.join(name), shapes::control_names()).unwrap();
    }
    let (d, out) = (dumps.to_str().unwrap(), dir.join("out"));
    let too_many = bounded_rtconv(&["batch", d, "--out-dir", out.to_str().unwrap(), "-j", "100000"]);
    assert_eq!(too_many.status.code(), Some(2));
    assert!(stderr(&too_many).contains("100000 is not in 1..=1024"), "{}", stderr(&too_many));
    // 1024 workers' stacks (2 MiB each) would not fit the 1 GiB cap; three dumps need three.
    let most = bounded_rtconv(&["batch", d, "--out-dir", out.to_str().unwrap(), "-j", "1024"]);
    let err = stderr(&most);
    assert_eq!(most.status.code(), Some(0), "{err}");
    assert!(!err.contains("cannot start"), "{err}");
    assert_eq!(names_in(&out), ["a.json", "b.json", "c.json"]);
}

#[test]
fn cores_that_lie_lose_only_what_they_lie_about_each_with_one_line() {
    let dir = scratch("hostile-cores");
    // (shape, exit status, the one error line's words, threads converted)
    let expected: [(&str, i32, &str, usize); 9] = [
        ("good.core", 0, "", 2),
        ("name.core", 0, "", 2),
        ("no-ringtrace.core", 1, "no ringtrace ring directory in this core", 0),
        ("cut.core", 3, "thread 2's ring (entry at 0x", 1),
        ("outside.core", 3, "the ring directory's entry at 0xdead0000 is not in the core", 0),
        ("cycle.core", 3, "the ring directory's list loops back", 2),
        ("capacity.core", 3, "its 134217728 slots at 0x", 1),
        ("overlap.core", 3, "its slots overlap those of thread 2's ring", 1),
        ("counts.core", 3, "argument records of 20 written", 1),
    ];
    let shapes = shapes::cores::all();
    assert_eq!(shapes.len(), expected.len());
    for (name, status, words, threads) in expected {
        let bytes = &shapes.iter().find(|s| s.0 == name).unwrap().1;
        let core = dir.join(name);
        std::fs::write(&core, bytes).unwrap();
        let json = dir.join(format!("{name}.json"));
        let out = bounded_rtconv(&["convert", core.to_str().unwrap(), "-o", json.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(status), "{name}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("rtconv: error:")).collect();
        let ring_errors: Vec<&&str> = errors.iter().filter(|l| !l.contains("the core is cut short")).collect();
        if words.is_empty() {
            assert!(errors.is_empty(), "{name}: {err}");
        } else {
            assert_eq!(ring_errors.len(), 1, "{name}: one line for what it lies about: {err}");
            assert!(ring_errors[0].contains(name) && ring_errors[0].contains(words), "{name}: {err}");
        }
        if status != 1 {
            let tids = ringtrace_tests::span_tids(&std::fs::read_to_string(&json).unwrap());
            assert_eq!(tids.len(), threads, "{name}: the rings it does not lie about are converted: {err}");
        }
    }
    // The good core's rings, as laid out: thread 1 kept 16 - 2 slots of its 20 spans (the two oldest may
    // be torn by a writer that was running) and shows its two open spans; thread 2 all 5.
    let info = bounded_rtconv(&["info", "--format", "json", dir.join("good.core").to_str().unwrap()]);
    let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
    let threads = info[0]["threads"].as_array().unwrap();
    assert_eq!(threads[0]["spans"], 14 + 2);
    assert_eq!(threads[0]["losses"]["overwritten"], 6);
    assert_eq!(threads[0]["open"].as_array().unwrap().len(), 2);
    assert_eq!(threads[1]["spans"], 5);
    assert_eq!(info[0]["crash"]["signal_name"], "SIGABRT");
}

#[test]
fn cores_in_directories_and_archives_are_batched_like_dumps() {
    let dir = scratch("hostile-core-batch");
    let good = shapes::cores::two_rings().core(1, 6, "hand-made");
    let fleet = dir.join("fleet");
    std::fs::create_dir_all(fleet.join("host-a")).unwrap();
    std::fs::write(fleet.join("host-a/core.1234"), &good).unwrap();
    std::fs::write(fleet.join("host-a/app.core"), &good).unwrap();
    std::fs::write(fleet.join("host-a/notes.txt"), b"not a core").unwrap();
    let archive = dir.join("fleet.tar");
    std::fs::write(&archive, shapes::tar_of(&[("host-b/core", &good), ("host-b/readme", b"skipped")])).unwrap();
    let out_dir = dir.join("out");
    let out = bounded_rtconv(&[
        "batch",
        fleet.to_str().unwrap(),
        archive.to_str().unwrap(),
        "--out-dir",
        out_dir.to_str().unwrap(),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("3 converted"), "{err}");
    let mut names: Vec<String> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names.len(), 3, "{names:?}");
    for name in names {
        let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(out_dir.join(&name)).unwrap()).unwrap();
        let spans = trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").count();
        assert_eq!(spans, 14 + 2 + 5, "{name}: both rings, the open spans too");
    }
}
