//! Symbolization against independent truth: llvm-symbolizer on many
//! addresses, a dlopen'ed library's own DWARF, a stripped binary whose debug
//! file is found by build-id or .gnu_debuglink, an external addr2line.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ringtrace_tests::{
    binary, convert, copy_executable, must_run, parse_chrome, record_workload_with, rtconv_ok, run, scratch,
    without_rust_hash,
};

fn names(json: &str) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for e in parse_chrome(json).events {
        *c.entry(e.name).or_default() += 1;
    }
    c
}

/// samples/c/demo.c built in `dir` as `libdemo.so` with the system C compiler, with `extra` flags.
pub(crate) fn demo_library(dir: &Path, extra: &[&str]) -> PathBuf {
    let lib = dir.join("libdemo.so");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let source = ringtrace_tests::workspace_root().join("samples/c/demo.c");
    let mut cmd = Command::new(cc);
    must_run(cmd.current_dir(dir).args(["-shared", "-fPIC", "-g", "-O1"]).args(extra).arg("-o").arg(&lib).arg(source));
    lib
}

#[test]
fn a_dlopened_library_is_named_from_its_own_file() {
    let dir = scratch("dlopen");
    let lib = demo_library(&dir, &[]);
    let dump = dir.join("d.rtd");
    let out = run(&binary("dlopen"), &["--lib", lib.to_str().unwrap(), "--out", dump.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let expected: BTreeMap<String, usize> = [("demo_work".into(), 5), ("demo_other".into(), 3)].into();
    assert_eq!(names(&json), expected);
}

/// A copy of the workload stripped of DWARF and symbols, its debug file
/// elsewhere; returns (stripped binary, debug file).
fn stripped_workload(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("workload");
    let debug = dir.join("workload.debug");
    copy_executable(&binary("workload"), &bin);
    must_run(ringtrace_tests::tool("objcopy").arg("--only-keep-debug").arg(&bin).arg(&debug));
    must_run(ringtrace_tests::tool("objcopy").arg("--strip-all").arg(&bin));
    (bin, debug)
}

#[test]
fn a_stripped_binary_is_named_from_its_debug_file_found_by_build_id() {
    let dir = scratch("stripped");
    let (bin, debug) = stripped_workload(&dir);
    let dump = record_workload_with(&bin, &dir, "w.rtd", &[]);
    // Without the debug file: only the dump's own tables name anything.
    let (_, json, _) = convert(&dump, &[]);
    assert!(!names(&json).contains_key("workload::fib"));
    // A symbol directory laid out as .build-id/xx/rest.debug.
    let id = must_run(ringtrace_tests::tool("readelf").arg("-n").arg(&debug));
    let id = id.lines().find_map(|l| l.trim().strip_prefix("Build ID: ")).unwrap().trim().to_string();
    let tree = dir.join("syms/.build-id").join(&id[..2]);
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::rename(&debug, tree.join(format!("{}.debug", &id[2..]))).unwrap();
    let (code, json, stderr) = convert(&dump, &["--sym-dir", dir.join("syms").to_str().unwrap()]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let names = names(&json);
    assert_eq!(names.get("workload::fib"), Some(&(2 * 465)), "{names:?}"); // fib(12): 465 calls per thread
    assert!(names.contains_key("tokenize"));
}

#[test]
fn a_stripped_binary_is_named_from_its_gnu_debuglink() {
    let dir = scratch("debuglink");
    let (bin, debug) = stripped_workload(&dir);
    // objcopy records the debug file's name and CRC; rtconv looks for it next to the binary.
    let linked = dir.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    let linked_bin = linked.join("workload");
    copy_executable(&bin, &linked_bin);
    let link_target = linked.join("workload.debug");
    std::fs::rename(&debug, &link_target).unwrap();
    let mut cmd = ringtrace_tests::tool("objcopy");
    must_run(cmd.current_dir(&linked).arg("--add-gnu-debuglink=workload.debug").arg(&linked_bin));
    let dump = record_workload_with(&linked_bin, &dir, "w.rtd", &[]);
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert_eq!(names(&json).get("workload::fib"), Some(&(2 * 465)));
}

#[test]
fn an_external_addr2line_names_as_the_dwarf_backend_does() {
    let dir = scratch("external");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (_, ours, _) = convert(&dump, &["--symbolizer", "sites,dwarf"]);
    let (code, external, stderr) =
        convert(&dump, &["--symbolizer", "sites,addr2line", "--addr2line", "llvm-addr2line"]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let strip = |m: BTreeMap<String, usize>| -> BTreeMap<String, usize> {
        m.into_iter().map(|(k, v)| (without_rust_hash(&k).to_string(), v)).collect()
    };
    assert_eq!(strip(names(&external)), names(&ours));
}

#[test]
fn no_demangle_keeps_mangled_names() {
    let dir = scratch("no-demangle");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (_, json, _) = convert(&dump, &["--no-demangle"]);
    let names = names(&json);
    // Legacy mangling (stable's default) or v0 (nightly's, and a stable compiler's under
    // RUSTC_BOOTSTRAP=1): `fib` of crate `workload`, left mangled either way.
    let mangled = |n: &str| n.starts_with("_ZN8workload3fib") || (n.starts_with("_R") && n.ends_with("8workload3fib"));
    assert!(names.keys().any(|n| mangled(n)), "{names:?}");
}

#[test]
fn compressed_debug_sections_are_read() {
    let dir = scratch("compressed");
    let bin = dir.join("workload");
    copy_executable(&binary("workload"), &bin);
    must_run(ringtrace_tests::tool("objcopy").arg("--compress-debug-sections=zlib").arg(&bin));
    let sections = must_run(ringtrace_tests::tool("readelf").arg("-S").arg("-W").arg(&bin));
    assert!(sections.lines().any(|l| l.contains(".debug_line") && l.contains(" C ")), "not compressed");
    let dump = record_workload_with(&bin, &dir, "w.rtd", &[]);
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert_eq!(names(&json).get("tokenize"), Some(&80)); // an inlined function: needs .debug_info and .debug_line
}

#[test]
fn info_reports_how_keys_were_named() {
    let dir = scratch("info");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let text = rtconv_ok(&["info", dump.to_str().unwrap()]);
    // 4 site keys (sleeper round, sleep, parse_batch, main done), 3 code keys (fib, tokenize, checksum).
    assert!(
        text.contains(
            "keys       7 distinct, named by: packed 0, sites 4, dwarf 3, symtab 0, dladdr 0, addr2line 0, unknown 0"
        ),
        "{text}"
    );
    // fib(12) twice (2 × 465), 5 rounds of parse_batch + 8 tokenize + 8 checksum on two threads (170),
    // 5 × 2 sleeper spans, main's one: 1111.
    assert!(text.contains("threads    6, 1111 spans (0 open at dump), 0 overwritten, 0 dropped"), "{text}");
    assert!(text.contains("(with DWARF)"), "{text}");
}

/// (address, mangled name) of the first `count` global text symbols of `bin` whose names start with `prefix`
/// and contain `part`.
fn text_symbols(bin: &Path, prefix: &str, part: &str, count: usize) -> Vec<(u64, String)> {
    must_run(ringtrace_tests::tool("nm").arg("--defined-only").arg(bin))
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [addr, "T" | "W", name] if name.starts_with(prefix) && name.contains(part) => {
                Some((u64::from_str_radix(addr, 16).ok()?, name.to_string()))
            }
            _ => None,
        })
        .take(count)
        .collect()
}

/// Names of the symbols at `symbols` per `rtconv symbolize --symbolizer symtab`, and per c++filt.
fn demangled_both_ways(bin: &Path, symbols: &[(u64, String)]) -> (Vec<String>, Vec<String>) {
    let addresses: Vec<String> = symbols.iter().map(|(a, _)| format!("{a:#x}")).collect();
    let mut cmd = ringtrace_tests::rtconv();
    let ours = must_run(cmd.args(["symbolize", "-f", "-C", "--symbolizer", "symtab", "-e"]).arg(bin).args(&addresses));
    let ours: Vec<String> = ours.lines().step_by(2).map(str::to_owned).collect();
    let mangled: Vec<&str> = symbols.iter().map(|(_, n)| n.as_str()).collect();
    let theirs = must_run(ringtrace_tests::tool("c++filt").args(&mangled));
    (ours, theirs.lines().map(str::to_owned).collect())
}

#[test]
fn rust_v0_names_are_demangled_as_cxxfilt_does() {
    let dir = scratch("v0");
    let source = dir.join("v0.rs");
    std::fs::write(&source, "fn main() { println!(\"{}\", std::env::args().count()); }\n").unwrap();
    let bin = dir.join("v0bin");
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    must_run(Command::new(rustc).args(["-C", "symbol-mangling-version=v0", "-o"]).arg(&bin).arg(&source));
    let symbols = text_symbols(&bin, "_R", "", 50);
    assert!(symbols.len() >= 10, "{symbols:?}");
    let (ours, theirs) = demangled_both_ways(&bin, &symbols);
    // c++filt names each crate with its disambiguator (`core[c1f1a4ba060b9bfa]`);
    // rtconv, like rustc-demangle's alternate form, leaves it out.
    let theirs: Vec<String> = theirs.iter().map(|n| without_disambiguators(n)).collect();
    assert_eq!(ours, theirs);
}

/// `core[c1f1a4ba060b9bfa]::x` to `core::x`.
fn without_disambiguators(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let close = rest[open..].find(']').map(|c| open + c);
        match close {
            Some(close) if close > open + 1 && rest[open + 1..close].bytes().all(|b| b.is_ascii_hexdigit()) => {
                out.push_str(&rest[..open]);
                rest = &rest[close + 1..];
            }
            _ => {
                out.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn cxx_names_are_demangled_as_cxxfilt_does() {
    let dir = scratch("cxx");
    let source = dir.join("lib.cpp");
    std::fs::write(
        &source,
        "namespace demo { int work(int n) { return n * 2; }\n\
         template <typename T> T twice(T x) { return x + x; }\n\
         struct Box { long get(long x) const { return twice(x); } };\n\
         long use() { Box b; return b.get(3) + twice<short>(1) + work(1); } }\n",
    )
    .unwrap();
    let lib = dir.join("libcxx.so");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    must_run(Command::new(cxx).args(["-shared", "-fPIC", "-g", "-O0", "-o"]).arg(&lib).arg(&source));
    let symbols = text_symbols(&lib, "_Z", "4demo", 10);
    assert!(symbols.len() >= 4, "{symbols:?}");
    let (ours, theirs) = demangled_both_ways(&lib, &symbols);
    assert_eq!(ours, theirs);
    assert!(ours.iter().any(|n| n == "demo::Box::get(long) const"), "{ours:?}");
}

#[test]
fn dumps_of_one_build_share_a_cache_keyed_by_build_id() {
    let dir = scratch("cache");
    let first = record_workload_with(&binary("workload"), &dir, "a.rtd", &[]);
    let second = record_workload_with(&binary("workload"), &dir, "b.rtd", &["--fib", "10"]);
    let (first_bytes, second_bytes) = (rtconv::model::open(&first).unwrap(), rtconv::model::open(&second).unwrap());
    let first = rtconv::model::decode(&first, &first_bytes).unwrap();
    let second = rtconv::model::decode(&second, &second_bytes).unwrap();
    let opts = rtconv::symbolize::Options::default();
    let cache = rtconv::symbolize::Cache::default();
    rtconv::symbolize::symbolize(&first, &opts, &cache);
    assert_eq!(cache.hits(), 0);
    let b = rtconv::symbolize::symbolize(&second, &opts, &cache);
    assert!(b.problems.is_empty());
    // The two processes loaded the executable at different addresses (PIE), so
    // only the cache's build-id + file-address key can match: fib, tokenize, checksum.
    assert_eq!(cache.hits(), 3);
    assert!(b.files.is_empty(), "the binary was not opened again");
    let uncached = rtconv::symbolize::symbolize(&second, &opts, &Default::default());
    assert!(!second.keys.is_empty());
    for &key in &second.keys {
        assert_eq!(b.names.get(key), uncached.names.get(key));
    }
}

#[test]
fn a_binary_replaced_while_running_is_found_at_its_path() {
    let dir = scratch("replaced");
    let bin = dir.join("workload");
    copy_executable(&binary("workload"), &bin);
    let dump = dir.join("w.rtd");
    let mut child = Command::new(&bin)
        .args(["--out", dump.to_str().unwrap(), "--fib", "12", "--rounds", "2", "--hold"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Once it has recorded (it says `ready` and waits for a line before it dumps), the
    // file is deleted and the same build put back: Linux now names the running
    // executable "…/workload (deleted)".
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
    assert_eq!(ready, "ready\n");
    std::fs::remove_file(&bin).unwrap();
    copy_executable(&binary("workload"), &bin);
    child.stdin.take().unwrap().write_all(b"dump\n").unwrap();
    assert!(child.wait().unwrap().success());
    let info = must_run(ringtrace_tests::rtconv().arg("info").arg(&dump));
    assert!(info.contains("workload (deleted)"), "{info}");
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    assert_eq!(names(&json).get("workload::fib"), Some(&(2 * 465)));
}

/// Regression: a failing backend was dropped silently (`.ok()`), its keys left `??`
/// or named by the next backend with no word said. Now each failure is one error
/// line naming the backend and the file, and the next backend still names the keys.
#[test]
fn a_failing_addr2line_program_is_reported_and_dwarf_names_the_keys() {
    let dir = scratch("broken-addr2line");
    let dump = record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    let (code, json, stderr) = convert(&dump, &["--addr2line", "false"]);
    assert_eq!(code, 3, "a backend failed: the output is degraded");
    assert_eq!(stderr.len(), 1, "{stderr:?}");
    assert!(
        stderr[0].contains("the addr2line backend failed on")
            && stderr[0].contains("false exited with exit status: 1")
            && stderr[0].contains("0 distinct span key(s) left unnamed, 3 named by dwarf"),
        "{stderr:?}"
    );
    assert_eq!(names(&json).get("workload::fib"), Some(&(2 * 465)));
    // rtconv symbolize says so too, and exits 3.
    let out = run(
        &binary("rtconv"),
        &[
            "symbolize",
            "-e",
            binary("workload").to_str().unwrap(),
            "--addr2line",
            "false",
            "--symbolizer",
            "addr2line",
            "0x10",
        ],
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the addr2line backend failed on"));
    // And so does a query read from a pipe, answered as it comes (a session of its own).
    let mut child = ringtrace_tests::rtconv()
        .args(["symbolize", "-e", binary("workload").to_str().unwrap(), "--addr2line", "false"])
        .args(["--symbolizer", "addr2line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"0x10\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!((out.status.code(), String::from_utf8_lossy(&out.stdout).as_ref()), (Some(3), "??:0\n"), "{stderr}");
    assert!(stderr.contains("the addr2line backend failed on") && stderr.contains("false exited"), "{stderr}");
}
