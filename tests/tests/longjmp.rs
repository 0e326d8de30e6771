//! Whole C programs whose calls do not all return: Lua (built from the
//! `lua-src` crate's sources by `tests/build.rs`) raising errors and yielding
//! coroutines with `_longjmp`, `siglongjmp` out of a signal handler,
//! `longjmp` under `_FORTIFY_SOURCE` (`__longjmp_chk`), and a C++ exception
//! crossing C frames. Each runs with a second pair of hooks
//! (`tests/c/reference_hooks.c`) that counts every enter and exit per
//! function and every call per call site, and hands the calls on to
//! ringtrace's; the dump's call tree must agree exactly: every entered call
//! is a span, the calls that never exited are the unwound ones, and every
//! span's parent is the function its call site lies in.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use ringtrace_tests::{convert, scratch, static_library, tool, workspace_root};

/// What a run's call tree says: per function, (calls, unwound calls); per
/// (parent function or none, function), calls.
#[derive(Debug, Default, PartialEq, Eq)]
struct Tree {
    functions: BTreeMap<String, (u64, u64)>,
    edges: BTreeMap<(Option<String>, String), u64>,
}

/// The tree of a dump's spans read from Chrome JSON's begin and end events
/// (`--chrome-events be`), which nest as the recorder's records do: a span
/// that starts when its parent ends (a call of 0 ns, timed by a 10 ns clock,
/// after which the parent's exit came in the same tick) is still its child,
/// where parents found from complete events' times would be a guess.
fn tree_of_dump(json: &str) -> Tree {
    let doc: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut tree = Tree::default();
    let mut stacks: HashMap<u64, Vec<String>> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let stack = stacks.entry(e["tid"].as_u64().unwrap_or(0)).or_default();
        let name = e["name"].as_str().unwrap_or_default();
        match e["ph"].as_str() {
            Some("B") => {
                let f = tree.functions.entry(name.to_string()).or_default();
                f.0 += 1;
                f.1 += u64::from(e["args"]["unwound"] == true);
                *tree.edges.entry((stack.last().cloned(), name.to_string())).or_default() += 1;
                stack.push(name.to_string());
            }
            Some("E") => assert_eq!(stack.pop().as_deref(), Some(name), "end events close the innermost span"),
            _ => {}
        }
    }
    tree
}

/// Function symbols of an executable: (start, end, name), sorted.
fn functions(exe: &Path) -> Vec<(u64, u64, String)> {
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut out: Vec<(u64, u64, String)> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .filter_map(|s| Some((s.address(), s.address() + s.size(), s.name().ok()?.to_string())))
        .collect();
    out.sort();
    out
}

/// The tree the reference hooks counted, named from the symbol table:
/// a call's parent is the function its call site lies in, when that
/// function is traced (its hooks ran), else none.
fn tree_of_reference(counts: &str, exe: &Path) -> Tree {
    let symbols = functions(exe);
    let mut lines = counts.lines();
    // The first line places the program: `anchor ADDRESS` of the reference's own `write_counts`.
    let anchor = lines.next().and_then(|l| l.strip_prefix("anchor ")).map(|a| u64::from_str_radix(a, 16).unwrap());
    let file_anchor = symbols.iter().find(|s| s.2 == "write_counts").map(|s| s.0).unwrap();
    let bias = anchor.unwrap().wrapping_sub(file_anchor);
    let name_at = |runtime: u64| -> Option<String> {
        let a = runtime.wrapping_sub(bias);
        let i = symbols.partition_point(|s| s.0 <= a).checked_sub(1)?;
        (a < symbols[i].1).then(|| demangle(&symbols[i].2))
    };
    let mut tree = Tree::default();
    let mut calls = Vec::new();
    for line in lines {
        let f: Vec<&str> = line.split(' ').collect();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        match f[0] {
            "fn" => {
                let (enters, exits): (u64, u64) = (f[2].parse().unwrap(), f[3].parse().unwrap());
                let name = name_at(hex(f[1])).unwrap();
                let e = tree.functions.entry(name).or_default();
                e.0 += enters;
                e.1 += enters - exits;
            }
            "call" => calls.push((hex(f[1]), hex(f[2]), f[3].parse::<u64>().unwrap())),
            _ => panic!("unexpected line {line:?}"),
        }
    }
    for (site, callee, n) in calls {
        // The call instruction ends just before its return address (which, after a call to a
        // function that never returns, may lie past the caller's end).
        let caller = name_at(site - 1).filter(|c| tree.functions.contains_key(c));
        *tree.edges.entry((caller, name_at(callee).unwrap())).or_default() += n;
    }
    tree
}

/// As rtconv names C++ functions from DWARF: demangled, with parameters.
fn demangle(name: &str) -> String {
    let out = tool("c++filt").arg(name).output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// `libringtrace.a` with its `-finstrument-functions` hooks weak, so the
/// reference hooks take their place and chain to `ringtrace_func_enter/exit`.
fn library_with_weak_hooks(dir: &Path) -> PathBuf {
    let weak = dir.join("libringtrace-weak.a");
    let status = tool("objcopy")
        .args(["--weaken-symbol=__cyg_profile_func_enter", "--weaken-symbol=__cyg_profile_func_exit"])
        .arg(static_library())
        .arg(&weak)
        .status()
        .unwrap();
    assert!(status.success());
    weak
}

/// Links `objects` (sources or archives) with the C library: with the
/// reference hooks in front of it, or (`reference` false) alone.
pub(crate) fn link(dir: &Path, out: &str, objects: &[PathBuf], flags: &[&str], reference: bool) -> PathBuf {
    let exe = dir.join(out);
    let cpp = objects.iter().any(|o| o.extension().is_some_and(|e| e == "cpp"));
    let mut cmd = tool(if cpp { "c++" } else { "cc" });
    cmd.args(["-g", "-O1"]).args(flags).arg("-I").arg(workspace_root().join("recorder/include"));
    cmd.arg("-o").arg(&exe).args(objects);
    if reference {
        cmd.arg(workspace_root().join("tests/c/reference_hooks.c")).arg(library_with_weak_hooks(dir));
    } else {
        cmd.arg(static_library());
    }
    let status = cmd.args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s"]).status().unwrap();
    assert!(status.success(), "linking {out} failed");
    exe
}

/// Runs `exe args` recording every span, and returns (stdout, the dump's
/// call tree, the reference hooks' tree if they were linked in).
fn record(exe: &Path, args: &[&str], reference: bool) -> (String, Tree, Option<Tree>) {
    record_with(exe, args, reference, &[("RINGTRACE_RING_RECORDS", "1048576")], "RINGTRACE_DUMP")
}

/// As [`record`], with `env`, the dump's path given in the variable `output`.
fn record_with(
    exe: &Path,
    args: &[&str],
    reference: bool,
    env: &[(&str, &str)],
    output: &str,
) -> (String, Tree, Option<Tree>) {
    let dir = exe.parent().unwrap();
    let name = exe.file_name().unwrap().to_str().unwrap();
    let (dump, counts) = (dir.join(format!("{name}.rtd")), dir.join(format!("{name}.counts")));
    let out = Command::new(exe)
        .args(args)
        .env(output, &dump)
        .envs(env.iter().copied())
        .env("REFERENCE_HOOKS_OUT", &counts)
        .output()
        .unwrap();
    assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
    let (code, json, stderr) = convert(&dump, &["--chrome-events", "be"]);
    assert_eq!(code, 0, "{stderr:?}");
    let reference = reference.then(|| tree_of_reference(&std::fs::read_to_string(&counts).unwrap(), exe));
    (String::from_utf8(out.stdout).unwrap(), tree_of_dump(&json), reference)
}

/// Where two maps differ, as lines.
fn diff<K: Ord + std::fmt::Debug, V: PartialEq + std::fmt::Debug>(
    a: &BTreeMap<K, V>,
    b: &BTreeMap<K, V>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in a {
        if b.get(k) != Some(v) {
            out.push(format!("{k:?}: dump {v:?}, reference {:?}", b.get(k)));
        }
    }
    for (k, v) in b {
        if !a.contains_key(k) {
            out.push(format!("{k:?}: dump none, reference {v:?}"));
        }
    }
    out
}

/// Asserts two trees equal, naming the first differences.
fn assert_same(dump: &Tree, reference: &Tree) {
    let functions = diff(&dump.functions, &reference.functions);
    assert!(functions.is_empty(), "calls per function differ:\n{}", functions[..functions.len().min(20)].join("\n"));
    let edges = diff(&dump.edges, &reference.edges);
    assert!(edges.is_empty(), "calls per parent differ:\n{}", edges[..edges.len().min(20)].join("\n"));
}

fn lua_interpreter(dir: &Path, reference: bool) -> PathBuf {
    let lib = PathBuf::from(env!("RINGTRACE_TESTS_LUA_LIB_DIR")).join("liblua5.4.a");
    let include = format!("-I{}", env!("RINGTRACE_TESTS_LUA_INCLUDE_DIR"));
    let driver = workspace_root().join("tests/c/lua_driver.c");
    let name = if reference { "lua-reference" } else { "lua" };
    link(dir, name, &[driver, lib], &[&include], reference)
}

#[test]
fn lua_errors_and_coroutines_keep_the_call_tree_a_second_pair_of_hooks_counts() {
    let dir = scratch("longjmp-lua");
    let script = workspace_root().join("tests/c/errors.lua");
    let exe = lua_interpreter(&dir, true);
    let (stdout, dump, reference) = record(&exe, &[script.to_str().unwrap()], true);
    assert_eq!(stdout.split('\t').next(), Some("160"), "every error caught: {stdout}");
    let reference = reference.unwrap();
    assert_same(&dump, &reference);
    // What the first recorder got wrong: functions that only ever end by a jump are there, unwound.
    for f in ["luaD_throw", "luaG_errormsg", "luaB_error"] {
        let (calls, unwound) = dump.functions[f];
        assert!(calls > 0 && calls == unwound, "{f}: {calls} calls, {unwound} unwound");
    }
    assert!(!dump.edges.contains_key(&(Some("luaD_rawrunprotected".into()), "luaG_addinfo".into())));
}

#[test]
fn lua_streamed_through_a_small_ring_keeps_the_same_call_tree() {
    // RINGTRACE_STREAM: every span of the run through a 4096-record ring (100 laps), the
    // unwound ones too, drained as the interpreter runs.
    let dir = scratch("longjmp-lua-stream");
    let script = workspace_root().join("tests/c/errors.lua");
    let exe = lua_interpreter(&dir, true);
    let env = [("RINGTRACE_RING_RECORDS", "4096")];
    let (stdout, dump, reference) = record_with(&exe, &[script.to_str().unwrap()], true, &env, "RINGTRACE_STREAM");
    assert_eq!(stdout.split('\t').next(), Some("160"), "{stdout}");
    assert_same(&dump, &reference.unwrap());
}

#[test]
fn lua_with_the_real_hooks_unwinds_what_the_errors_skip() {
    // The hooks as a program gets them (the x86_64 trampolines), on the same interpreter: the
    // counts of a second run differ only where Lua's string hashing is seeded by time and address,
    // so the tree is checked for what holds in every run.
    let dir = scratch("longjmp-lua-real");
    let script = workspace_root().join("tests/c/errors.lua");
    let exe = lua_interpreter(&dir, false);
    let (stdout, dump, _) = record(&exe, &[script.to_str().unwrap()], false);
    assert_eq!(stdout.split('\t').next(), Some("160"), "{stdout}");
    for f in ["luaD_throw", "luaG_errormsg", "luaB_error"] {
        let (calls, unwound) = dump.functions[f];
        assert!(calls > 0 && calls == unwound, "{f}: {calls} calls, {unwound} unwound");
    }
    // 40 rounds of: error(), a runtime error, an error object, an inner and an outer error in one
    // pcall: 200 throws, each through luaD_throw; and 40 × 4 resumes of a coroutine that yields 3 times.
    assert_eq!(dump.functions["luaB_error"].0, 40 * 4, "error() calls (the runtime error is not one)");
    assert_eq!(dump.functions["luaD_throw"].0, 40 * 5 + 40 * 3, "200 errors and 120 yields");
}

/// The symbols `exe` takes from the C library whose names contain `jmp`.
fn jump_imports(exe: &Path) -> Vec<String> {
    let data = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut names: Vec<String> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.is_undefined())
        .filter_map(|s| s.name().ok().map(|n| n.split('@').next().unwrap_or(n).to_string()))
        .filter(|n| n.contains("jmp"))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The program with the reference hooks, then with the real ones (a deterministic program: both
/// runs make the same calls): both dumps' trees equal the reference's.
fn check_against_reference(dir: &Path, name: &str, objects: &[PathBuf], flags: &[&str], stdout: &str) -> Tree {
    let reference_exe = link(dir, &format!("{name}-reference"), objects, flags, true);
    let (out, dump, reference) = record(&reference_exe, &[], true);
    assert_eq!(out, stdout);
    let mut reference = reference.unwrap();
    // A signal handler's return address is the C library's signal trampoline, in no traced
    // function: it nests in the call it interrupted (jumps.c's handler interrupts interrupted_inner).
    if let Some(n) = reference.edges.remove(&(None, "on_signal".to_string())) {
        reference.edges.insert((Some("interrupted_inner".into()), "on_signal".into()), n);
    }
    assert_same(&dump, &reference);
    let exe = link(dir, name, objects, flags, false);
    let (out, dump, _) = record(&exe, &[], false);
    assert_eq!(out, stdout);
    assert_same(&dump, &reference);
    dump
}

#[test]
fn siglongjmp_from_a_handler_longjmp_and_longjmp_chk_keep_the_call_tree() {
    let dir = scratch("longjmp-jumps");
    let source = workspace_root().join("samples/c/jumps.c");
    let flags = ["-finstrument-functions"];
    let plain = check_against_reference(&dir, "jumps", std::slice::from_ref(&source), &flags, "36\n");
    assert_eq!(jump_imports(&dir.join("jumps")), ["__sigsetjmp", "_longjmp", "_setjmp", "longjmp", "siglongjmp"]);
    // What the program does, three rounds: the handler and the two calls it interrupted, the
    // recursion (5 calls), and the loop's three passes (loop_body and leave_loop each) never exit.
    let expected_unwound =
        [("on_signal", 3), ("interrupted_inner", 3), ("interrupted_outer", 3), ("recurse", 15), ("loop_body", 9)];
    for (f, n) in expected_unwound.into_iter().chain([("leave_loop", 9)]) {
        assert_eq!(plain.functions[f], (n, n), "{f}");
    }
    // The larger frame called after the jump is the sigsetjmp caller's child, not the handler's.
    assert_eq!(plain.edges[&(Some("guarded_by_sigsetjmp".into()), "after_signal".into())], 3);
    let fortified = check_against_reference(
        &dir,
        "jumps-fortified",
        std::slice::from_ref(&source),
        &["-finstrument-functions", "-D_FORTIFY_SOURCE=2"],
        "36\n",
    );
    assert_eq!(jump_imports(&dir.join("jumps-fortified")), ["__longjmp_chk", "__sigsetjmp", "_setjmp"]);
    assert_eq!(fortified, plain);
    // At -O2 GCC calls many exit hooks as tail calls, after the epilogue, from the caller's stack pointer.
    let optimized = check_against_reference(
        &dir,
        "jumps-o2",
        std::slice::from_ref(&source),
        &["-finstrument-functions", "-O2"],
        "36\n",
    );
    assert_eq!(optimized, plain);
}

#[test]
fn a_cpp_exception_through_c_frames_unwinds_them_and_keeps_the_call_tree() {
    let dir = scratch("longjmp-exceptions");
    // The C frames are compiled as C, without -fexceptions: no cleanups, so no exit hooks.
    let c_frames = dir.join("c_frames.o");
    let status = tool("cc")
        .args(["-c", "-g", "-O1", "-finstrument-functions", "-o"])
        .arg(&c_frames)
        .arg(workspace_root().join("samples/c/c_frames.c"))
        .status()
        .unwrap();
    assert!(status.success());
    let objects = [workspace_root().join("samples/c/exceptions.cpp"), c_frames];
    let tree = check_against_reference(&dir, "exceptions", &objects, &["-finstrument-functions"], "-2\n");
    // x = 1 and 3 throw (x * 2 % 4 == 2): c_outer and c_inner are left twice, the C++ frames exit.
    assert_eq!(tree.functions["c_outer"], (3, 2));
    assert_eq!(tree.functions["c_inner"], (3, 2));
    assert_eq!(tree.functions["thrower(int)"], (3, 0));
    assert_eq!(tree.edges[&(Some("catcher(int)".into()), "recover(int)".into())], 2);
}

/// `rtconv stats` and `info` tell the whole story: unwound calls per function, and per thread what
/// was lost; with a ring too small for the run, the calls whose children were overwritten.
#[test]
fn stats_and_info_report_unwound_calls_and_what_the_ring_lost() {
    let dir = scratch("longjmp-stats");
    let exe = link(&dir, "jumps", &[workspace_root().join("samples/c/jumps.c")], &["-finstrument-functions"], false);
    for (records, dump) in [("1048576", "all.rtd"), ("16", "small.rtd")] {
        let dump = dir.join(dump);
        let out =
            Command::new(&exe).env("RINGTRACE_DUMP", &dump).env("RINGTRACE_RING_RECORDS", records).output().unwrap();
        assert!(out.status.success());
        let stats = ringtrace_tests::rtconv().arg("stats").arg(&dump).args(["--format", "json"]).output().unwrap();
        let json: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
        let scope = &json[0];
        let row = |f: &str| scope["functions"].as_array().unwrap().iter().find(|r| r["function"] == f).cloned();
        let info = ringtrace_tests::rtconv().arg("info").arg(&dump).args(["--format", "json"]).output().unwrap();
        let info: serde_json::Value = serde_json::from_slice(&info.stdout).unwrap();
        if records == "1048576" {
            // 3 rounds: on_signal, interrupted_inner, interrupted_outer 3 each, recurse 15, loop_body and leave_loop 9 each.
            assert_eq!(scope["losses"]["unwound"], 42, "{scope}");
            assert_eq!(scope["losses"]["overwritten"], 0);
            assert_eq!(row("recurse").unwrap()["losses"]["unwound"], 15);
            assert!(row("main").unwrap().get("losses").is_none());
            assert_eq!(info[0]["losses"]["unwound"], 42);
            assert_eq!(info[0]["threads"][0]["losses"]["unwound"], 42);
            let table = ringtrace_tests::rtconv().arg("stats").arg(&dump).output().unwrap();
            let table = String::from_utf8(table.stdout).unwrap();
            assert!(
                table.contains("losses: 42 unwound") && table.lines().nth(2).unwrap().contains("unwound"),
                "{table}"
            );
        } else {
            // 16 records keep the last calls: main began long before, and lost the children it had then.
            assert!(scope["losses"]["overwritten"].as_u64().unwrap() > 0, "{scope}");
            assert_eq!(row("main").unwrap()["losses"]["calls_missing_children"], 1, "{scope}");
            assert_eq!(info[0]["losses"]["overwritten"], scope["losses"]["overwritten"]);
            // The same span marked in the table's column and in its Chrome event.
            let table = ringtrace_tests::rtconv().arg("stats").arg(&dump).output().unwrap();
            let table = String::from_utf8(table.stdout).unwrap();
            let header = table.lines().find(|l| l.starts_with("function")).unwrap();
            let main = table.lines().find(|l| l.starts_with("main ")).unwrap();
            assert!(header.trim_end().ends_with("lost children") && main.trim_end().ends_with(" 1"), "{table}");
            let (code, json, _) = ringtrace_tests::convert(&dump, &["-f", "chrome"]);
            assert_eq!(code, 0);
            let trace: serde_json::Value = serde_json::from_str(&json).unwrap();
            let main = trace["traceEvents"].as_array().unwrap().iter().find(|e| e["name"] == "main").unwrap();
            assert_eq!(main["args"]["missing_children"], true, "{main}");
        }
    }
}
