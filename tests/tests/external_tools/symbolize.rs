//! Symbolization against llvm-symbolizer: many addresses of rtconv itself, and an inlined
//! function in split DWARF.

use std::path::{Path, PathBuf};

use ringtrace_tests::{binary, must_run, scratch};

use crate::symbolize::demo_library;

/// A raw name as rustc-demangle shows it without the hash (LLVM 14 leaves
/// Rust's `$LT$`-style escapes in place, so llvm-symbolizer runs with
/// `--no-demangle` and its names are demangled here).
fn demangled(raw: &str) -> String {
    format!("{:#}", rustc_demangle::demangle(raw))
}

/// Addresses inside the binary's functions: each function's start and a few bytes in.
fn function_addresses(bin: &Path, limit: usize) -> Vec<u64> {
    let nm = must_run(ringtrace_tests::tool("nm").args(["--defined-only", "-S"]).arg(bin));
    let mut addresses = Vec::new();
    for line in nm.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if let [addr, size, kind, _name] = fields[..]
            && (kind == "t" || kind == "T")
        {
            let (addr, size) = (u64::from_str_radix(addr, 16).unwrap(), u64::from_str_radix(size, 16).unwrap());
            addresses.extend([addr, addr + size / 2].into_iter().filter(|&a| a < addr + size.max(1)));
        }
    }
    addresses.sort_unstable();
    addresses.dedup();
    let step = addresses.len().div_ceil(limit).max(1);
    addresses.into_iter().step_by(step).collect()
}

/// One address's frames, innermost first: (function, "file:line").
type Frames = Vec<(String, String)>;

fn blocks(text: &str, pairs_after_address: bool) -> Vec<Frames> {
    let mut out: Vec<Frames> = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if pairs_after_address {
            if lines[i].starts_with("0x") {
                out.push(Vec::new());
                i += 1;
                continue;
            }
        } else if lines[i].is_empty() {
            i += 1;
            continue;
        } else if i == 0 || lines[i - 1].is_empty() {
            out.push(Vec::new());
        }
        let function = if pairs_after_address { lines[i].to_string() } else { demangled(lines[i]) };
        let location = lines.get(i + 1).copied().unwrap_or("??:0");
        // llvm-symbolizer adds ":column"; GNU-style output may add " (discriminator N)".
        let location = location.split(" (").next().unwrap();
        let mut location = if pairs_after_address { location.to_string() } else { drop_column(location) };
        // GNU addr2line (and rtconv) print `??:?` for a known function without a file, `??:0` for nothing.
        if !pairs_after_address && location == "??:0" && function != "??" {
            location = "??:?".to_string();
        }
        out.last_mut().unwrap().push((function, location));
        i += 2;
    }
    out
}

/// llvm-symbolizer's `file:line:column` as GNU addr2line prints it:
/// `file:line`, with line 0 (no line) as `?` and no file as `??:0` (`??:?` in a known
/// function: see `blocks`).
fn drop_column(location: &str) -> String {
    match location.rsplitn(3, ':').collect::<Vec<_>>()[..] {
        [_col, "0", "??"] => "??:0".to_string(),
        [_col, "0", file] => format!("{file}:?"),
        [_col, line, file] => format!("{file}:{line}"),
        _ => location.to_string(),
    }
}

#[test]
fn rtconv_symbolize_agrees_with_llvm_symbolizer() {
    let bin = binary("rtconv"); // the largest binary here with line tables and inlining
    let addresses = function_addresses(&bin, 1000);
    assert!(addresses.len() >= 500, "{} addresses", addresses.len());
    let hex: Vec<String> = addresses.iter().map(|a| format!("{a:#x}")).collect();
    let ours =
        must_run(ringtrace_tests::rtconv().args(["symbolize", "-a", "-f", "-i", "-C", "-e"]).arg(&bin).args(&hex));
    let theirs = must_run(
        ringtrace_tests::tool("llvm-symbolizer")
            .arg("--no-demangle")
            .arg(format!("--obj={}", bin.display()))
            .args(&hex),
    );
    let (ours, theirs) = (blocks(&ours, true), blocks(&theirs, false));
    assert_eq!((ours.len(), theirs.len()), (addresses.len(), addresses.len()));
    let mut name_differences = Vec::new();
    let mut chain_differences = Vec::new();
    for ((a, o), t) in addresses.iter().zip(&ours).zip(&theirs) {
        if o[0].0 != t[0].0 {
            name_differences.push(format!("{a:#x}: rtconv {:?}, llvm-symbolizer {:?}", o[0], t[0]));
        }
        if o.len() != t.len() || o.iter().zip(t).any(|(x, y)| x.1 != y.1) {
            chain_differences.push(format!("{a:#x}: rtconv {o:?}, llvm-symbolizer {t:?}"));
        }
    }
    let agree = addresses.len() - name_differences.len();
    assert!(
        agree * 100 >= addresses.len() * 99,
        "innermost names agree on {agree} of {} addresses:\n{}",
        addresses.len(),
        name_differences.join("\n")
    );
    // Known difference: for a function with DWARF but no line for the address,
    // GNU addr2line and llvm-symbolizer print the compilation unit's name as
    // the file (`crate.hash-cgu.0:?`), rtconv prints `??:?` (~1.3% here).
    assert!(
        chain_differences.len() * 100 <= addresses.len() * 2,
        "{} of {} inline chains differ in file:line:\n{}",
        chain_differences.len(),
        addresses.len(),
        chain_differences.join("\n")
    );
}

#[test]
fn split_dwarf_is_found_through_the_skeleton() {
    let dir = scratch("split-dwarf");
    // -gsplit-dwarf leaves the function DWARF in a .dwo beside the build; the .so keeps a skeleton.
    let lib = demo_library(&dir, &["-gsplit-dwarf"]);
    let dwo: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "dwo"))
        .collect();
    assert_eq!(dwo.len(), 1, "one .dwo written");

    // An address in demo_work's loop where llvm-symbolizer sees the inlined `square`.
    let nm = must_run(ringtrace_tests::tool("nm").arg(&lib));
    let start = nm.lines().find(|l| l.ends_with(" T demo_work")).unwrap();
    let start = u64::from_str_radix(start.split_whitespace().next().unwrap(), 16).unwrap();
    let obj = format!("--obj={}", lib.display());
    let inlined = (start..start + 64)
        .find(|a| {
            must_run(ringtrace_tests::tool("llvm-symbolizer").arg(&obj).arg(format!("{a:#x}"))).starts_with("square\n")
        })
        .expect("an address inside the inlined square");
    let rtconv = || {
        ringtrace_tests::rtconv()
            .args(["symbolize", "-f", "-i", "--symbolizer", "dwarf", "-e"])
            .arg(&lib)
            .arg(format!("{inlined:#x}"))
            .output()
            .unwrap()
    };
    let names = |out: &std::process::Output| -> Vec<String> {
        String::from_utf8_lossy(&out.stdout).lines().step_by(2).map(str::to_owned).collect()
    };
    let with_dwo = rtconv();
    assert_eq!((with_dwo.status.code(), names(&with_dwo)), (Some(0), vec!["square".into(), "demo_work".into()]));
    // Without the .dwo only the skeleton's line table is left: no inline chain, and it is said.
    std::fs::remove_file(&dwo[0]).unwrap();
    let without = rtconv();
    assert_eq!(names(&without), ["demo_work"]);
    let stderr = String::from_utf8_lossy(&without.stderr);
    assert_eq!(without.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains(&format!("its split DWARF unit {} is missing", dwo[0].display())),
        "the missing .dwo is named: {stderr}"
    );
}
