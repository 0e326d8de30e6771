//! rtconv as the symbolizer other programs run by name: a link called `llvm-symbolizer` under
//! Clang's AddressSanitizer, a link called `addr2line` under `perf report`, and both links
//! against the real tools, address by address.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Command;

use ringtrace_tests::{
    NO_INDEX, binary, build_id, must_run, scratch, spread_addresses, symbolize_subject, tool, workspace_root,
};

/// A link to rtconv named `name` in `dir` (rtconv is then that tool).
fn personality(dir: &Path, name: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let link = dir.join(name);
    symlink(binary("rtconv"), &link).unwrap();
    link
}

/// A shell script at `path` that appends `tag` and its arguments to `log`, then runs `program`
/// with `extra` arguments before its own: what a caller runs, and a record that it ran.
fn logging_wrapper(path: &Path, tag: &str, log: &Path, program: &Path, extra: &[&str]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\necho \"{tag} $*\" >> '{}'\nexec '{}' {} \"$@\"\n",
        log.display(),
        program.display(),
        extra.iter().map(|a| format!("'{a}'")).collect::<Vec<_>>().join(" ")
    );
    std::fs::write(path, script).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Where `name` is on PATH.
fn on_path(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file()).unwrap_or_else(|| {
        panic!("{name} is not on PATH: run tests/setup, which installs what the tests use");
    })
}

/// The frames of an AddressSanitizer report that lie in `source`: (function, file:line:column),
/// the addresses left out (they move with ASLR).
fn frames_in(report: &str, source: &str) -> Vec<(String, String)> {
    report
        .lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?;
            // `#N 0xADDRESS in FUNCTION FILE:LINE:COLUMN`
            let mut words = rest.split_whitespace().skip(2);
            let (_in, function, place) = (words.next()?, words.next()?, words.next()?);
            place.contains(source).then(|| (function.to_string(), place.to_string()))
        })
        .collect()
}

#[test]
fn an_address_sanitizer_report_through_the_llvm_symbolizer_link_names_what_llvm_symbolizer_does() {
    let dir = scratch("asan-symbolizer");
    let source = workspace_root().join("tests/c/asan_overflow.c");
    let prog = dir.join("prog");
    must_run(
        tool("clang")
            .args(["-g", "-O1", "-fsanitize=address", "-fno-omit-frame-pointer", "-Wl,--build-id", "-o"])
            .arg(&prog)
            .arg(&source),
    );
    // The DWARF only in a separate file, found by build-id under a debug directory: the
    // sanitizer's own fallback (the symbol table) cannot give a file or a line.
    let id = build_id(&prog);
    let debug_dir = dir.join("debug");
    let by_id = debug_dir.join(".build-id").join(&id[..2]);
    std::fs::create_dir_all(&by_id).unwrap();
    must_run(tool("objcopy").arg("--only-keep-debug").arg(&prog).arg(by_id.join(format!("{}.debug", &id[2..]))));
    let stripped = dir.join("stripped");
    must_run(tool("objcopy").arg("--strip-debug").arg(&prog).arg(&stripped));
    let sections = must_run(tool("readelf").arg("-S").arg(&stripped));
    assert!(!sections.contains(".debug_info"), "the program keeps no DWARF:\n{sections}");
    // Each symbolizer behind a wrapper named llvm-symbolizer (the name the sanitizer speaks
    // llvm-symbolizer's protocol to) that logs its arguments and adds the debug directory.
    let log = dir.join("invocations");
    let debug_flag = format!("--debug-file-directory={}", debug_dir.display());
    let ours = personality(&dir.join("link"), "llvm-symbolizer");
    logging_wrapper(&dir.join("ours/llvm-symbolizer"), "ours", &log, &ours, &[&debug_flag]);
    // Also with the debug file anywhere under a --sym-dir (rtconv's own flag; found by build-id).
    let sym_dir = dir.join("symbols");
    std::fs::create_dir_all(sym_dir.join("nested")).unwrap();
    must_run(tool("objcopy").arg("--only-keep-debug").arg(&prog).arg(sym_dir.join("nested/prog.dbg")));
    let sym_flag = format!("--sym-dir={}", sym_dir.display());
    logging_wrapper(&dir.join("ours-sym-dir/llvm-symbolizer"), "ours-sym-dir", &log, &ours, &[&sym_flag]);
    logging_wrapper(&dir.join("real/llvm-symbolizer"), "real", &log, &on_path("llvm-symbolizer"), &[&debug_flag]);
    let report = |who: &str| {
        let out = Command::new(&stripped)
            .env("ASAN_SYMBOLIZER_PATH", dir.join(who).join("llvm-symbolizer"))
            .env(NO_INDEX.0, NO_INDEX.1)
            .output()
            .unwrap();
        assert!(!out.status.success(), "ASan stops the program");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let (theirs, ours, ours_sym_dir) = (report("real"), report("ours"), report("ours-sym-dir"));
    let invocations = std::fs::read_to_string(&log).unwrap();
    for who in ["ours ", "ours-sym-dir ", "real "] {
        assert!(invocations.lines().any(|l| l.starts_with(who)), "{who}was run: {invocations}");
    }
    let (ours_frames, their_frames) = (frames_in(&ours, "asan_overflow.c"), frames_in(&theirs, "asan_overflow.c"));
    assert_eq!(ours_frames, their_frames, "ours:\n{ours}\nllvm-symbolizer's:\n{theirs}");
    assert_eq!(frames_in(&ours_sym_dir, "asan_overflow.c"), their_frames, "with --sym-dir:\n{ours_sym_dir}");
    // The overflow's stack, named and placed to the column, then the block's allocation.
    let names: Vec<&str> = ours_frames.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["deep", "mid", "outer", "main", "outer", "main"], "{ours}");
    // The read past the block, `p[i]` on the source's line 5.
    let text = std::fs::read_to_string(&source).unwrap();
    let column = text.lines().nth(4).and_then(|l| l.find("p[i]")).unwrap() + 1;
    assert!(ours_frames[0].1.ends_with(&format!("asan_overflow.c:5:{column}")), "{:?}", ours_frames[0]);
    assert!(ours.contains("heap-buffer-overflow"), "{ours}");
}

#[test]
fn perf_report_through_the_addr2line_link_shows_the_source_lines_gnu_addr2line_gives() {
    let dir = scratch("perf-addr2line");
    let prog = dir.join("hot");
    must_run(tool("cc").args(["-O1", "-g", "-o"]).arg(&prog).arg(workspace_root().join("tests/c/perf_hot.c")));
    // perf keeps its build-id cache under $HOME: the test's own.
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let data = dir.join("perf.data");
    let record = tool("perf")
        .env("HOME", &home)
        .args(["record", "-q", "-e", "cpu-clock", "-g", "-o"])
        .arg(&data)
        .arg(&prog)
        .output()
        .unwrap();
    assert!(
        record.status.success(),
        "perf record cannot sample here (kernel.perf_event_paranoid, a container without perf events?): {}",
        String::from_utf8_lossy(&record.stderr)
    );
    // perf (built without libbfd, as Debian's is) runs the `addr2line` on PATH through a pipe.
    let log = dir.join("invocations");
    let ours = personality(&dir.join("link"), "addr2line");
    logging_wrapper(&dir.join("ours/addr2line"), "ours", &log, &ours, &[]);
    logging_wrapper(&dir.join("real/addr2line"), "real", &log, &on_path("addr2line"), &[]);
    let report = |who: &str| {
        let path = format!("{}:/usr/bin:/bin", dir.join(who).display());
        must_run(
            tool("perf")
                .env("HOME", &home)
                .env("PATH", path)
                .env(NO_INDEX.0, NO_INDEX.1)
                .args(["report", "--stdio", "-s", "sym,srcline", "--no-children", "-g", "none", "-i"])
                .arg(&data),
        )
    };
    let (theirs, ours) = (report("real"), report("ours"));
    let invocations = std::fs::read_to_string(&log).unwrap();
    assert!(invocations.lines().any(|l| l.starts_with("ours -e ")), "perf ran the addr2line link: {invocations}");
    let rows = |text: &str| text.lines().filter(|l| l.contains("perf_hot.c")).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(rows(&ours), rows(&theirs), "ours:\n{ours}\nGNU addr2line's:\n{theirs}");
    assert!(rows(&ours).iter().any(|l| l.contains("deep") && l.contains("perf_hot.c:7")), "{ours}");
    // Lines of other code (the C library's, the dynamic loader's) may name another frame of an
    // inline chain (the differences symbolize_compat lists): few.
    let (o, t): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    let differ = o.iter().zip(&t).filter(|(a, b)| a != b).count();
    assert_eq!(o.len(), t.len(), "ours:\n{ours}\nGNU addr2line's:\n{theirs}");
    assert!(differ * 10 <= o.len(), "{differ} of {} lines differ:\nours:\n{ours}\nGNU's:\n{theirs}", o.len());
}

/// Lines that differ between two outputs of as many lines.
fn differing(ours: &str, theirs: &str) -> Vec<String> {
    let (o, t): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(o.len(), t.len(), "as many lines:\n{ours}\n---\n{theirs}");
    o.iter().zip(&t).filter(|(a, b)| a != b).map(|(a, b)| format!("{a} | {b}")).collect()
}

/// How many of the lines of `llvm-symbolizer --obj BIN FLAGS ADDRESSES` differ between the
/// `llvm-symbolizer` link to rtconv and the real one, of how many (blank lines aside).
fn llvm_differences(ours: &Path, bin: &Path, flags: &[&str], hex: &[String]) -> (Vec<String>, usize) {
    let run = |program: &Path| {
        must_run(Command::new(program).env(NO_INDEX.0, NO_INDEX.1).arg("--obj").arg(bin).args(flags).args(hex))
    };
    let (o, t) = (run(ours), run(&on_path("llvm-symbolizer")));
    let differ = differing(&o, &t);
    for d in differ.iter().take(3) {
        println!("  {}", d.chars().take(200).collect::<String>());
    }
    let lines = o.lines().filter(|l| !l.is_empty()).count();
    println!("{} {flags:?}: {} of {lines} lines differ", bin.display(), differ.len());
    (differ, lines)
}

#[test]
fn the_llvm_symbolizer_link_answers_every_address_as_llvm_symbolizer_does() {
    let dir = scratch("llvm-personality");
    let cpp = symbolize_subject(&dir);
    let ours = personality(&dir.join("link"), "llvm-symbolizer");
    // The C++ subject (GCC's DWARF 5, inline chains): with names as the file has them, every
    // line is llvm-symbolizer's — functions, inline chains, files, lines and columns — in each
    // layout, and without the chain (the function the code is in, placed where the innermost is).
    let hex = spread_addresses(&cpp, 600);
    for flags in [
        &["--no-demangle"][..],
        &["--no-demangle", "--no-inlines"],
        &["--no-demangle", "-p", "-a"],
        &["--functions=none", "-s"],
    ] {
        let (differ, lines) = llvm_differences(&ours, &cpp, flags, &hex);
        assert!(lines > hex.len() && differ.is_empty(), "{flags:?}: {differ:#?}");
    }
    // Demangled, the names differ where the demanglers write C++ differently: LLVM's
    // `'lambda'(...)`, `&&` parameters, ` (.isra.0)` clones and `operator< <` where rtconv's
    // (cpp_demangle, GNU's style) writes `{lambda(...)#1}`, `[clone .isra.0]` — and drops a
    // template's `&&` (measured: 714 of 6430 lines, 11 %).
    let (differ, lines) = llvm_differences(&ours, &cpp, &[], &hex);
    assert!(differ.len() * 100 <= lines * 12, "{} of {lines}: {differ:#?}", differ.len());
    // A Rust program with full DWARF (the workload sample): the differences are a row of line 0's
    // column (llvm prints it, rtconv 0, as the addr2line crate reads such a row), a `.llvm.N`
    // suffix (LLVM's demangler keeps it, rustc-demangle drops it), legacy Rust names LLVM 14
    // leaves half-escaped or with their hash (`_$LT$alloc..vec..Vec...::h3096...`, which rtconv
    // demangles as rustc-demangle does) and, among
    // functions folded into one, which symbol names the code (measured: 475 of 5440 lines, 9 %).
    let workload = binary("workload");
    let hex = spread_addresses(&workload, 600);
    // (With -p a frame's function and place share a line: twice the share of lines.)
    for (flags, percent) in [(&[][..], 10), (&["-p", "-a"], 20)] {
        let (differ, lines) = llvm_differences(&ours, &workload, flags, &hex);
        let hash =
            |d: &str| d.split("::h").skip(1).any(|h| h.len() >= 16 && h[..16].bytes().all(|b| b.is_ascii_hexdigit()));
        let explained = |d: &&String| {
            [":0:", ".llvm.", "marker::Leaf", "$LT$", "$u20$"].iter().any(|known| d.contains(known)) || hash(d)
        };
        assert!(differ.len() * 100 <= lines * percent, "{flags:?}: {} of {lines}: {differ:#?}", differ.len());
        assert!(differ.iter().filter(|d| !explained(d)).count() * 100 <= lines, "{flags:?}: {differ:#?}");
    }
}

/// A C program with globals of each kind (initialized, zeroed, static, thread-local, read-only),
/// built with DWARF in `dir`.
fn with_globals(dir: &Path) -> PathBuf {
    let source = dir.join("globals.c");
    std::fs::write(
        &source,
        "int counter = 3;\nstatic int table[16];\n__thread int per_thread;\nconst char *const names[4] = {\"a\"};\n\
         int use(int i) { return counter + table[i & 15] + per_thread + names[i & 3][0]; }\n\
         int main(int argc, char **argv) { (void)argv; table[argc] = argc; return use(argc); }\n",
    )
    .unwrap();
    let exe = dir.join("globals");
    must_run(tool("cc").args(["-O1", "-g", "-o"]).arg(&exe).arg(&source));
    exe
}

#[test]
fn code_and_data_lines_read_from_a_pipe_are_answered_as_llvm_symbolizer_answers_them() {
    let dir = scratch("llvm-protocol");
    let exe = with_globals(&dir);
    let ours = personality(&dir.join("link"), "llvm-symbolizer");
    let nm = must_run(tool("nm").args(["--defined-only", "-S"]).arg(&exe));
    let symbol = |name: &str| {
        nm.lines()
            .find_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
                [a, _, _, n] if n == name => u64::from_str_radix(a, 16).ok(),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{name} in the symbol table:\n{nm}"))
    };
    let module = exe.display();
    let mut lines = Vec::new();
    for (name, offset) in [("counter", 0), ("counter", 3), ("table", 0), ("table", 40), ("names", 8), ("per_thread", 0)]
    {
        lines.push(format!("DATA \"{module}\" {:#x}", symbol(name) + offset));
    }
    lines.push(format!("DATA {module} 0x1"));
    lines.push(format!("CODE \"{module}\" {:#x}", symbol("use") + 4));
    lines.push(format!("\"{module}\" {:#x}", symbol("main")));
    lines.push(format!("{module} {:#x}", symbol("use")));
    lines.push(format!("CODE \"{module}\" 0x0"));
    // Not queries: echoed as they are, blank lines too.
    lines.extend(["0x1234".to_string(), "not a query".to_string(), String::new()]);
    lines.push(format!("CODE \"{}\" 0x10", dir.join("missing").display()));
    let input = lines.join("\n") + "\n";
    let answer = |program: &Path, flags: &[&str]| {
        use std::io::Write;
        let mut child = Command::new(program)
            .env(NO_INDEX.0, NO_INDEX.1)
            .args(flags)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let real = on_path("llvm-symbolizer");
    for flags in [&[][..], &["-a"]] {
        let (o, t) = (answer(&ours, flags), answer(&real, flags));
        assert_eq!(o, t, "{flags:?}, asked:\n{input}");
    }
    // JSON: the same objects, but for the function's start (its entry, declaration file and
    // line), which rtconv leaves empty.
    let without_start = |(code, text): (Option<i32>, String)| {
        let objects: Vec<serde_json::Value> = text
            .lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                for frame in v.get_mut("Symbol").and_then(|s| s.as_array_mut()).into_iter().flatten() {
                    for key in ["StartAddress", "StartFileName", "StartLine"] {
                        frame.as_object_mut().unwrap().remove(key);
                    }
                }
                v
            })
            .collect();
        (code, objects)
    };
    let json = ["--output-style=JSON"];
    assert_eq!(without_start(answer(&ours, &json)), without_start(answer(&real, &json)), "asked:\n{input}");
    let (_, text) = answer(&ours, &[]);
    assert!(text.starts_with(&format!("counter\n{} 4\n\n", symbol("counter"))), "{text}");
    // `rtconv symbolize` itself takes llvm's defaults where an llvm-only flag is given.
    let args = [format!("{:#x}", symbol("use") + 4), format!("{:#x}", symbol("main"))];
    let via_rtconv = must_run(ringtrace_tests::rtconv().arg("symbolize").arg("--obj").arg(&exe).args(&args));
    let theirs = must_run(Command::new(&real).arg("--obj").arg(&exe).args(&args));
    assert_eq!(via_rtconv, theirs);
    let styled = must_run(ringtrace_tests::rtconv().args(["symbolize", "--style", "llvm", "-e"]).arg(&exe).args(&args));
    assert_eq!(styled, theirs);
}

#[test]
fn the_addr2line_link_answers_as_gnu_addr2line_and_exits_as_it_does() {
    let dir = scratch("gnu-personality");
    let exe = symbolize_subject(&dir);
    let ours = personality(&dir.join("link"), "addr2line");
    let hex = spread_addresses(&exe, 300);
    let run = |program: &Path, flags: &[&str], input: Option<&str>| {
        let mut cmd = Command::new(program);
        cmd.env(NO_INDEX.0, NO_INDEX.1).args(flags).arg("-e").arg(&exe);
        match input {
            None => must_run(cmd.args(&hex)),
            Some(text) => {
                use std::io::Write;
                let child = cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
                let mut child = child.spawn().unwrap();
                child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
                let out = child.wait_with_output().unwrap();
                assert!(out.status.success());
                String::from_utf8(out.stdout).unwrap()
            }
        }
    };
    let gnu = on_path("addr2line");
    // Its defaults (no names, no chain, no column), its flags clustered as perf and the
    // sanitizers pass them, and a pipe with perf's `,` sentinel (answered as address 0, silently).
    for flags in [&[][..], &["-iCf"], &["-a", "-p", "-f"]] {
        let (o, t) = (run(&ours, flags, None), run(&gnu, flags, None));
        let differ = differing(&o, &crate::symbolize_compat::without_discriminators(&t));
        assert!(differ.len() * 100 <= o.lines().count() * 12, "{flags:?}: {differ:#?}");
    }
    let piped = format!("{}\n,\n", hex[0].trim_start_matches("0x"));
    let (o, t) = (run(&ours, &["-i", "-f"], Some(&piped)), run(&gnu, &["-i", "-f"], Some(&piped)));
    assert_eq!(o, crate::symbolize_compat::without_discriminators(&t) + "\n");
    assert!(o.ends_with("??\n??:0\n"), "{o}");
    // A missing binary: GNU's message (after the program's name as run) and status.
    let missing = |program: &Path| {
        let out = Command::new(program).args(["-e", "/nonexistent/prog", "0x10"]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), stderr.strip_prefix(&format!("{}: ", program.display())).map(str::to_string))
    };
    assert_eq!(missing(&ours), missing(&gnu));
    assert_eq!(missing(&ours), (Some(1), Some("'/nonexistent/prog': No such file\n".to_string())));
}
