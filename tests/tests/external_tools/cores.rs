//! Rings read out of core files, checked against gdb reading the same core:
//! a real C program (Lua) aborted deep in its own calls, its core written by
//! the kernel; a multi-threaded Rust program stopped by `gcore`, and cut
//! short by `RLIMIT_CORE`; the same program built for aarch64, aborting under
//! `qemu-aarch64`, whose guest core qemu-user writes; and the Lua crash built
//! for aarch64 with the cross compiler, aborting under `qemu-aarch64`.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use object::{Object, ObjectSymbol};
use ringtrace_tests::{build_aarch64_sample, convert, rtconv, scratch, static_library_aarch64, tool, workspace_root};

use crate::longjmp::link;

/// A frame of a gdb backtrace.
#[derive(Debug)]
struct Frame {
    function: String,
    /// The source file gdb gives, if any.
    file: String,
}

/// Every thread's backtrace in `core` as gdb prints it (`thread apply all bt`), by thread id,
/// innermost frame first.
fn gdb_backtraces(exe: &Path, core: &Path) -> BTreeMap<u64, Vec<Frame>> {
    gdb_backtraces_with("gdb", exe, core)
}

/// As [`gdb_backtraces`], with the gdb program `gdb` (`gdb-multiarch` for another architecture's core).
fn gdb_backtraces_with(gdb: &str, exe: &Path, core: &Path) -> BTreeMap<u64, Vec<Frame>> {
    let out = tool(gdb).args(["-batch", "-nx", "-ex", "thread apply all bt"]).arg(exe).arg(core).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let thread = regex::Regex::new(r"^Thread \d+ \(.*LWP (\d+)").unwrap();
    let frame = regex::Regex::new(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(.*?\)(?: at (\S+):\d+)?").unwrap();
    let mut out: BTreeMap<u64, Vec<Frame>> = BTreeMap::new();
    let mut current = None;
    for line in text.lines() {
        if let Some(c) = thread.captures(line) {
            current = Some(c[1].parse().unwrap());
        } else if let (Some(tid), Some(c)) = (current, frame.captures(line)) {
            let file = c.get(2).map_or("", |m| m.as_str()).to_string();
            out.entry(tid).or_default().push(Frame { function: c[1].to_string(), file });
        }
    }
    assert!(!out.is_empty(), "gdb printed no backtrace:\n{text}");
    out
}

/// The kernel's core file pattern must name a file in the crashing process's directory.
fn kernel_writes_core_files() {
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap();
    assert!(
        !pattern.starts_with('|') && !pattern.contains('/'),
        "the kernel hands cores to `{}` (/proc/sys/kernel/core_pattern), not to a file in the crashing \
         program's directory: set it to `core` to run this test",
        pattern.trim()
    );
}

/// The one file named `core` or `core.*` in `dir`.
fn core_in(dir: &Path) -> PathBuf {
    let cores: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with("core"))
        .collect();
    assert_eq!(cores.len(), 1, "one core in {}: {cores:?}", dir.display());
    cores[0].clone()
}

/// Completed spans' names of a Chrome trace, by thread, in the order they ended (a child before a
/// parent ending on the same nanosecond): the ring's order.
fn completed(json: &str) -> Vec<(u64, Vec<String>)> {
    let mut spans: Vec<_> = ringtrace_tests::parse_chrome(json).events.into_iter().filter(|e| !e.open).collect();
    spans.sort_by(|a, b| (a.tid, a.end_ns(), -a.ts_ns, &a.name).cmp(&(b.tid, b.end_ns(), -b.ts_ns, &b.name)));
    let mut out: Vec<(u64, Vec<String>)> = Vec::new();
    for e in spans {
        match out.last_mut() {
            Some((t, names)) if *t == e.tid => names.push(e.name),
            _ => out.push((e.tid, vec![e.name])),
        }
    }
    out
}

/// Starts the `stuck` sample through `command` and waits for its `ready` line: every thread is
/// inside its spans. Its stdin stays open (closing it lets the sample end).
fn ready(mut command: Command) -> std::process::Child {
    let mut child = command.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    child
}

fn info_json(path: &Path) -> serde_json::Value {
    let out = rtconv().args(["info", "--format", "json"]).arg(path).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()[0].clone()
}

/// `tests/c/lua_crash.c`'s `exe` run through `launcher` in `dir` (where its core and its dump,
/// `lua.rtd`, land), core files unlimited, in `mode` (`abort` or `write`) on `tests/c/crash.lua`.
fn lua_crash(launcher: &str, exe: &Path, dir: &Path, mode: &str) -> Command {
    let mut command = Command::new("sh");
    command
        .args(["-c", &format!("ulimit -c unlimited && exec {launcher} \"$@\""), "sh"])
        .arg(exe)
        .arg(workspace_root().join("tests/c/crash.lua"))
        .arg(mode)
        .arg(dir.join("lua.rtd"))
        .current_dir(dir);
    command
}

#[test]
fn lua_aborted_deep_in_its_calls_leaves_a_core_whose_open_spans_are_gdbs_backtrace() {
    kernel_writes_core_files();
    let dir = scratch("cores-lua");
    let lib = PathBuf::from(env!("RINGTRACE_TESTS_LUA_LIB_DIR")).join("liblua5.4.a");
    let include = format!("-I{}", env!("RINGTRACE_TESTS_LUA_INCLUDE_DIR"));
    let driver = workspace_root().join("tests/c/lua_crash.c");
    let exe = link(&dir, "lua_crash", &[driver, lib], &[&include, "-finstrument-functions"], true);

    // Twice, with the same arguments' lengths and environment and no address randomisation, so
    // both runs make the same calls: once aborting (a core), once writing a dump instead.
    let run = |mode: &str| {
        lua_crash("setarch -R", &exe, &dir, mode)
            .env("REFERENCE_HOOKS_ON_SIGNAL", "1")
            .env("REFERENCE_HOOKS_OUT", dir.join(format!("counts.{mode}")))
            .output()
            .unwrap()
    };
    let aborted = run("abort");
    assert_eq!(aborted.status.signal(), Some(libc::SIGABRT), "{}", String::from_utf8_lossy(&aborted.stderr));
    let core = core_in(&dir);
    let written = run("write");
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));

    // The call path at the crash: the thread's open spans, outermost first, are gdb's frames.
    let info = info_json(&core);
    assert_eq!(info["process"]["reason"], "core file");
    let threads = info["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    // The thread that took the signal, as the kernel's NT_PRSTATUS note says and the process knew it.
    assert_eq!(info["crash"]["signal_name"], "SIGABRT", "{}", info["crash"]);
    assert_eq!(info["crash"]["tid"], threads[0]["tid"]);
    let open: Vec<String> = threads[0]["open"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().into()).collect();
    // gdb's frames of the program's own functions: defined in it, and not the reference hooks'
    // (never instrumented), outermost first.
    let data = std::fs::read(&exe).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let defined: BTreeSet<String> =
        file.symbols().filter(|s| s.is_definition()).filter_map(|s| s.name().ok().map(str::to_string)).collect();
    let backtraces = gdb_backtraces(&exe, &core);
    assert_eq!(backtraces.len(), 1, "{backtraces:?}");
    let frames: Vec<String> = backtraces
        .into_values()
        .next()
        .unwrap()
        .into_iter()
        .rev()
        .filter(|f| defined.contains(&f.function) && f.function != "_start" && !f.file.ends_with("reference_hooks.c"))
        .map(|f| f.function)
        .collect();
    assert_eq!(open, frames, "open spans against gdb's backtrace (outermost first)");
    assert_eq!(open.last().map(String::as_str), Some("crash"));

    // Every call that returned before the crash, by the reference hooks' count (written from the
    // SIGABRT): in the ring, or overwritten; the ring keeps its capacity less the two oldest slots
    // a record being written may have torn.
    let counts = std::fs::read_to_string(dir.join("counts.abort")).unwrap();
    let exits: u64 = counts
        .lines()
        .filter_map(|l| l.strip_prefix("fn "))
        .map(|l| l.split(' ').nth(2).unwrap().parse::<u64>().unwrap())
        .sum();
    let losses = &threads[0]["losses"];
    let kept = threads[0]["spans"].as_u64().unwrap() - open.len() as u64;
    assert_eq!(kept, 65_536 - 2);
    assert_eq!(losses["overwritten"].as_u64().unwrap(), exits - kept, "{losses}");

    // The completed spans are the last of the identical run's, which wrote a dump where this one died.
    let (code, core_json, stderr) = convert(&core, &["-o", "-"]);
    assert_eq!(code, 0, "{stderr:?}");
    let (code, dump_json, stderr) = convert(&dir.join("lua.rtd"), &["-o", "-"]);
    assert_eq!(code, 0, "{stderr:?}");
    let (from_core, from_dump) = (completed(&core_json), completed(&dump_json));
    assert_eq!(from_core.len(), 1);
    let (core_names, dump_names) = (&from_core[0].1, &from_dump[0].1);
    assert_eq!(core_names.len() as u64, kept);
    assert_eq!(dump_names.len(), 65_536);
    assert!(dump_names.ends_with(core_names), "the core's spans are the dump's last {kept}");

    // Packed, the core's rings travel without the binary; the core itself is left as it was.
    let before = std::fs::read(&core).unwrap();
    let out = rtconv().arg("pack").arg(&core).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read(&core).unwrap(), before, "pack leaves a core as it is");
    let mut packed = core.clone().into_os_string();
    packed.push(".rtd");
    let out = rtconv().args(["info", "--format", "json", "--symbolizer", "packed"]).arg(&packed).output().unwrap();
    let packed_info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(packed_info[0]["threads"][0]["open"], threads[0]["open"], "named from the packed names alone");
    assert_eq!(packed_info[0]["crash"], info["crash"]);
}

#[test]
fn a_rust_program_stopped_by_gcore_shows_every_thread_inside_its_spans_as_gdb_does() {
    let dir = scratch("cores-gcore");
    let exe = ringtrace_tests::binary("stuck");
    let mut command = Command::new(&exe);
    command.arg("3");
    let mut child = ready(command);
    let core = dir.join("core");
    let status = tool("gcore").arg("-o").arg(dir.join("core")).arg(child.id().to_string()).output().unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let core = core.with_extension(child.id().to_string());
    child.kill().unwrap();
    child.wait().unwrap();

    let info = info_json(&core);
    // gcore stops a live process: no thread took a fatal signal.
    assert_eq!(info["crash"]["signal"], serde_json::Value::Null, "{}", info["crash"]);
    check_stuck_threads(&info, &gdb_backtraces(&exe, &core));
}

#[test]
fn a_core_cut_short_by_rlimit_core_gives_the_rings_it_holds_and_names_the_others() {
    kernel_writes_core_files();
    let dir = scratch("cores-rlimit");
    let exe = ringtrace_tests::binary("stuck");
    // 3 MB: the program's data and the first thread's ring fit; its three rings (1.5 MiB each),
    // its thread stacks and its libraries do not all.
    let mut command = Command::new("sh");
    command.args(["-c", "ulimit -c 3000 && exec \"$0\" 3"]).arg(&exe).current_dir(&*dir);
    let mut child = ready(command);
    // SAFETY: a plain kill(2) of the child this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGABRT) }, 0);
    assert_eq!(child.wait().unwrap().signal(), Some(libc::SIGABRT));
    let core = core_in(&dir);

    let (code, json, stderr) = convert(&core, &["-o", "-"]);
    assert_eq!(code, 3, "losses stated: {stderr:?}");
    assert!(stderr.iter().any(|l| l.contains("the core is cut short")), "{stderr:?}");
    let lost: Vec<&String> = stderr.iter().filter(|l| l.contains("are not (all) in the core; left out")).collect();
    // Where the cut also took a thread's heap arena, the directory's list breaks at the entry kept
    // there, and the rings after it go unnamed (one line says so): which memory the kernel writes
    // first follows the address layout, which changes from run to run.
    let list_cut = stderr.iter().filter(|l| l.contains("is not in the core: the rings after it are lost")).count();
    let converted = ringtrace_tests::span_tids(&json);
    assert!(!lost.is_empty() || list_cut == 1, "3 MB cannot hold three 1.5 MiB rings: {stderr:?}");
    let accounted = converted.len() + lost.len();
    match list_cut {
        0 => assert_eq!(accounted, 3, "every recording thread converted or named: {stderr:?}"),
        _ => assert!(accounted < 3, "a broken list leaves a ring unnamed: {stderr:?}"),
    }
    // `info` describes what is there, names what is not in the crash section, and exits 3 too.
    let out = rtconv().args(["info", "--format", "json"]).arg(&core).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let losses = info[0]["crash"]["losses"].as_array().unwrap().len();
    assert_eq!(losses, 1 + lost.len() + list_cut, "{}", info[0]["crash"]);
}

/// Each thread's open spans in `info` against its backtrace in `backtraces`: the sample's own
/// traced functions (its closures are not traced), outermost first.
fn check_stuck_threads(info: &serde_json::Value, backtraces: &BTreeMap<u64, Vec<Frame>>) {
    let threads = info["threads"].as_array().unwrap();
    let names: BTreeSet<&str> = threads.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, BTreeSet::from(["stuck-0", "stuck-1", "stuck-2"]), "every recording thread");
    for t in threads {
        let tid = t["tid"].as_u64().unwrap();
        let open: Vec<&str> = t["open"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let frames: Vec<String> = backtraces[&tid]
            .iter()
            .rev()
            .filter(|f| f.file.ends_with("stuck.rs") && f.function.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .map(|f| format!("stuck::{}", f.function))
            .collect();
        assert_eq!(open, frames, "thread {tid}: open spans against gdb's backtrace");
        let levels = t["name"].as_str().unwrap()["stuck-".len()..].parse::<usize>().unwrap() + 1;
        assert_eq!(open.len(), levels + 2, "outer, {levels} × middle, inner");
        // Before descending, outer made 10 finished spans per level.
        assert_eq!(t["spans"].as_u64().unwrap(), (10 * levels + open.len()) as u64);
    }
}

#[test]
fn an_aarch64_program_aborting_under_qemu_user_leaves_a_guest_core_read_as_gdb_reads_it() {
    let exe = build_aarch64_sample("stuck");
    let dir = scratch("cores-aarch64");
    // Thread stuck-2 aborts from inside its spans once all three are in place; qemu-user writes the
    // guest's core (qemu_stuck_DATE_PID.core: aarch64, no NT_FILE) into the working directory.
    let run = Command::new("sh")
        .args(["-c", "ulimit -c unlimited && exec timeout -s KILL 300 qemu-aarch64 \"$0\" 3 abort"])
        .arg(&exe)
        .current_dir(&*dir)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(run.status.signal(), Some(libc::SIGABRT), "{}", String::from_utf8_lossy(&run.stderr));
    let cores: Vec<PathBuf> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("qemu_stuck_"))
        .collect();
    assert_eq!(cores.len(), 1, "{cores:?}");
    let info = info_json(&cores[0]);
    assert_eq!(info["clock"]["counter"], "CNTVCT_EL0");
    let stuck_2 = info["threads"].as_array().unwrap().iter().find(|t| t["name"] == "stuck-2").unwrap();
    assert_eq!(info["crash"]["tid"], stuck_2["tid"], "{}", info["crash"]);
    assert_eq!(info["crash"]["signal_name"], "SIGABRT");
    // The program was found from the core's auxiliary vector (qemu-user lists no mapped files).
    assert_eq!(info["modules_loaded"], 1, "{}", info["modules"]);
    check_stuck_threads(&info, &gdb_backtraces_with("gdb-multiarch", &exe, &cores[0]));
}

#[test]
fn lua_built_for_aarch64_aborting_under_qemu_user_leaves_a_core_whose_open_spans_are_gdbs_backtrace() {
    let lua = env!("RINGTRACE_TESTS_LUA_AARCH64_LIB_DIR");
    assert!(
        !lua.is_empty(),
        "no aarch64-linux-gnu-gcc when the tests were built: run tests/setup, then build them again"
    );
    let dir = scratch("cores-lua-aarch64");
    // Statically linked, so qemu-user and gdb need no aarch64 sysroot.
    let exe = dir.join("lua_crash");
    let status = tool("aarch64-linux-gnu-gcc")
        .args(["-g", "-O1", "-finstrument-functions", "-static"])
        .arg(format!("-I{}", Path::new(lua).parent().unwrap().join("include").display()))
        .arg("-I")
        .arg(workspace_root().join("recorder/include"))
        .arg("-o")
        .arg(&exe)
        .arg(workspace_root().join("tests/c/lua_crash.c"))
        .arg(Path::new(lua).join("liblua5.4.a"))
        .arg(static_library_aarch64())
        .args(["-lpthread", "-ldl", "-lm", "-lrt"])
        .stderr(std::process::Stdio::null()) // glibc's warnings about getaddrinfo & co. when static
        .status()
        .unwrap();
    assert!(status.success(), "cross-linking lua_crash failed");
    // Twice, as on x86_64 (see lua_crash.c): once aborting (qemu-user writes the guest's core,
    // qemu_lua_crash_DATE_PID.core), once writing a dump where the first died.
    let launcher = "setarch -R timeout -s KILL 300 qemu-aarch64";
    let run = |mode: &str| lua_crash(launcher, &exe, &dir, mode).stdin(std::process::Stdio::null()).output().unwrap();
    let aborted = run("abort");
    assert_eq!(aborted.status.signal(), Some(libc::SIGABRT), "{}", String::from_utf8_lossy(&aborted.stderr));
    let written = run("write");
    assert_eq!(written.status.code(), Some(0), "{}", String::from_utf8_lossy(&written.stderr));
    let cores: Vec<PathBuf> = std::fs::read_dir(&*dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("qemu_lua_crash_"))
        .collect();
    assert_eq!(cores.len(), 1, "{cores:?}");
    let core = &cores[0];

    let info = info_json(core);
    assert_eq!(info["crash"]["signal_name"], "SIGABRT", "{}", info["crash"]);
    let threads = info["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 1);
    assert_eq!(info["crash"]["tid"], threads[0]["tid"]);
    let open: Vec<String> = threads[0]["open"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().into()).collect();
    // gdb's frames with a source file (the static C library's have none), outermost first.
    let backtraces = gdb_backtraces_with("gdb-multiarch", &exe, core);
    let frames: Vec<String> = backtraces
        .into_values()
        .next()
        .unwrap()
        .into_iter()
        .rev()
        .filter(|f| !f.file.is_empty())
        .map(|f| f.function)
        .collect();
    assert_eq!(open, frames, "open spans against gdb's backtrace (outermost first)");
    assert_eq!(open.last().map(String::as_str), Some("crash"));

    // The identical run's dump holds the same calls: as many written (kept + overwritten), and the
    // core's completed spans are its last.
    let dump_info = info_json(&dir.join("lua.rtd"));
    let total = |t: &serde_json::Value| t["spans"].as_u64().unwrap() + t["losses"]["overwritten"].as_u64().unwrap();
    assert_eq!(total(&threads[0]), total(&dump_info["threads"][0]));
    let kept = threads[0]["spans"].as_u64().unwrap() - open.len() as u64;
    assert_eq!(kept, 65_536 - 2);
    let (code, core_json, stderr) = convert(core, &["-o", "-"]);
    assert_eq!(code, 0, "{stderr:?}");
    let (code, dump_json, stderr) = convert(&dir.join("lua.rtd"), &["-o", "-"]);
    assert_eq!(code, 0, "{stderr:?}");
    // Under qemu-user the counter moves in 1 µs steps (QEMU derives it from the host's clock), so
    // many spans end at the same tick and their order is not in the times: per function, the core
    // keeps as many as the dump or fewer, 2 fewer in all (the two oldest slots it leaves out).
    let counts = |json: &str| {
        let mut by_name: BTreeMap<String, u64> = BTreeMap::new();
        for name in completed(json).remove(0).1 {
            *by_name.entry(name).or_default() += 1;
        }
        by_name
    };
    let (from_core, from_dump) = (counts(&core_json), counts(&dump_json));
    assert_eq!(from_core.values().sum::<u64>(), kept);
    assert_eq!(from_dump.values().sum::<u64>(), kept + 2);
    for (name, n) in &from_core {
        assert!(*n <= from_dump.get(name).copied().unwrap_or(0), "{name}: {n} in the core, more than the dump's");
    }
}
