//! Helpers for the end-to-end tests: build the real binaries once, run them,
//! and read Chrome JSON back into plain spans.

pub mod core_image;
pub mod fuzz_support;
pub mod wall_clock;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// Runs `cargo build --release --locked ARGS` in the workspace and returns
/// cargo's JSON messages about the artifacts it built.
pub fn cargo_build(args: &[&str]) -> Vec<serde_json::Value> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--release", "--locked"])
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .current_dir(workspace_root())
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "cargo build {args:?} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().filter_map(|line| serde_json::from_str(line).ok()).collect()
}

/// Paths of the release binaries of `samples` and `rtconv`, built on first
/// use with the same cargo that runs the tests, each package alone — as the
/// README builds them (`cargo run --release -p samples`, `-p rtconv`), so a
/// dump recorded by following the README names its keys here too. rtconv
/// has the `parquet` feature, as the fleet documentation installs it (the
/// README's quick start leaves it out; nothing else differs).
pub fn binary(name: &str) -> PathBuf {
    static BINARIES: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    let all = BINARIES.get_or_init(|| {
        let mut all = executables(&cargo_build(&["-p", "samples", "--bins"]));
        all.extend(executables(&cargo_build(&["-p", "rtconv", "--bins", "--features", "parquet"])));
        all
    });
    all.get(name).unwrap_or_else(|| panic!("no binary named {name} was built")).clone()
}

/// Target name to executable path, from cargo's artifact messages.
pub fn executables(messages: &[serde_json::Value]) -> HashMap<String, PathBuf> {
    messages
        .iter()
        .filter_map(|msg| {
            Some((msg["target"]["name"].as_str()?.to_string(), PathBuf::from(msg["executable"].as_str()?)))
        })
        .collect()
}

/// The workspace's top folder.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// `libringtrace.a`, the C ABI (`recorder/capi`, a workspace of its own),
/// built on first use in release mode into `target/capi`, as `recorder/capi/install` builds it.
pub fn static_library() -> PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| build_side_workspace("recorder/capi/Cargo.toml", "capi", None, "libringtrace.a")).clone()
}

/// `libringtrace.a` for aarch64 Linux (glibc), built on first use in release mode into
/// `target/capi-aarch64`, for C programs cross-compiled with `aarch64-linux-gnu-gcc`.
pub fn static_library_aarch64() -> PathBuf {
    static LIBRARY: OnceLock<PathBuf> = OnceLock::new();
    LIBRARY.get_or_init(|| static_library_for("aarch64-unknown-linux-gnu", "capi-aarch64")).clone()
}

/// `libringtrace.a` for another Linux `target`, built in release mode into `target/TARGET_DIR`.
fn static_library_for(target: &str, target_dir: &str) -> PathBuf {
    let dir = workspace_root().join("target").join(target_dir);
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--locked", "--target", target, "--manifest-path"])
        .arg(workspace_root().join("recorder/capi/Cargo.toml"))
        .arg("--target-dir")
        .arg(&dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("cargo runs");
    assert!(out.status.success(), "building the C library for {target}:\n{}", String::from_utf8_lossy(&out.stderr));
    dir.join(target).join("release").join("libringtrace.a")
}

/// A 32-bit Linux the suite builds for (`tests/setup` installs its C compiler, its loader and
/// Rust's target): its programs run natively (i686) or under `qemu-arm` (armv7).
#[derive(Clone, Copy, Debug)]
pub struct Linux32 {
    /// Rust's target.
    pub target: &'static str,
    /// The C compiler (and Rust's linker) for it.
    pub cc: &'static str,
    /// What runs its programs here: nothing (natively), or QEMU with the target's libraries.
    pub runner: &'static [&'static str],
}

/// 32-bit x86, run natively (the x86_64 kernel runs i386 programs; Debian's `libc6-i386`).
pub const I686: Linux32 = Linux32 { target: "i686-unknown-linux-gnu", cc: "i686-linux-gnu-gcc", runner: &[] };

/// 32-bit Arm with hardware floating point (Raspberry Pi OS 32-bit, armhf), under `qemu-arm`.
pub const ARMV7: Linux32 = Linux32 {
    target: "armv7-unknown-linux-gnueabihf",
    cc: "arm-linux-gnueabihf-gcc",
    runner: &["qemu-arm", "-L", "/usr/arm-linux-gnueabihf"],
};

impl Linux32 {
    /// The samples binary `bin`, built in release mode (linked by the C compiler) into
    /// `target/linux32`.
    pub fn sample(&self, bin: &str) -> PathBuf {
        let root = workspace_root();
        let target_dir = root.join("target").join("linux32");
        let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .args(["build", "--release", "--locked", "-p", "samples", "--bin", bin, "--target", self.target])
            .args(["--config", &format!("target.{}.linker=\"{}\"", self.target, self.cc)])
            .arg("--target-dir")
            .arg(&target_dir)
            .current_dir(&root)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("cargo runs");
        assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
        target_dir.join(self.target).join("release").join(bin)
    }

    /// `libringtrace.a` for this target, built on first use into `target/capi-TARGET`.
    pub fn static_library(&self) -> PathBuf {
        static LIBRARIES: std::sync::Mutex<Vec<(&'static str, PathBuf)>> = std::sync::Mutex::new(Vec::new());
        let mut built = LIBRARIES.lock().unwrap();
        if let Some((_, path)) = built.iter().find(|(t, _)| *t == self.target) {
            return path.clone();
        }
        let path = static_library_for(self.target, &format!("capi-{}", self.target));
        built.push((self.target, path.clone()));
        path
    }

    /// Compiles C with `-g -O1` and `flags` against `recorder/include`, linked with this target's
    /// [`static_library`](Self::static_library) (a PIE, as the compiler makes by default).
    pub fn compile_c(&self, source: &Path, out: &Path, flags: &[&str]) -> PathBuf {
        compile_with(self.cc, &self.static_library(), source, out, flags)
    }

    /// A command running `program` here.
    pub fn command(&self, program: &Path) -> Command {
        match self.runner.split_first() {
            None => Command::new(program),
            Some((runner, args)) => {
                let mut cmd = tool(runner);
                cmd.args(args).arg(program);
                cmd
            }
        }
    }
}

/// Compiles C (`cc`) or C++ (`c++`, for a `.cpp` source) with `-g` and
/// `flags`, against `recorder/include`, linked with [`static_library`];
/// returns the executable.
pub fn compile_c(source: &Path, out: &Path, flags: &[&str]) -> PathBuf {
    let cpp = source.extension().is_some_and(|e| e == "cpp");
    compile_with(if cpp { "c++" } else { "cc" }, &static_library(), source, out, flags)
}

/// Compiles `source` with `compiler`, `-g -O1`, warnings as errors and `flags`, against
/// `recorder/include`, linked with `library`; returns the executable `out`.
fn compile_with(compiler: &str, library: &Path, source: &Path, out: &Path, flags: &[&str]) -> PathBuf {
    let status = tool(compiler)
        .args(["-g", "-O1", "-Wall", "-Wextra", "-Werror"])
        .args(flags)
        .arg("-I")
        .arg(workspace_root().join("recorder/include"))
        .arg("-o")
        .arg(out)
        .arg(source)
        .arg(library)
        // What Rust's standard library needs from the system (rustc --print native-static-libs).
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lgcc_s"])
        .status()
        .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(status.success(), "{compiler} failed on {}", source.display());
    out.to_path_buf()
}

/// Builds the program of a workspace of its own (`manifest`, relative to
/// the workspace root) in release mode into `target/TARGET_DIR`, with
/// `features` if any, and returns its executable `bin`.
pub fn build_side_workspace(manifest: &str, target_dir: &str, features: Option<&str>, bin: &str) -> PathBuf {
    let root = workspace_root();
    let target = root.join("target").join(target_dir);
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "--release", "--locked", "--manifest-path"])
        .arg(root.join(manifest))
        .arg("--target-dir")
        .arg(&target);
    if let Some(features) = features {
        cmd.args(["--features", features]);
    }
    let out = cmd.stdin(std::process::Stdio::null()).output().expect("cargo runs");
    assert!(out.status.success(), "building {manifest} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    target.join("release").join(bin)
}

/// Builds the samples binary `bin` for aarch64 Linux (`aarch64-unknown-linux-musl`,
/// static, linked by rust-lld) in `target/aarch64`, for `qemu-aarch64`; returns its path.
pub fn build_aarch64_sample(bin: &str) -> PathBuf {
    const TARGET: &str = "aarch64-unknown-linux-musl";
    let root = workspace_root();
    let target_dir = root.join("target").join("aarch64");
    let built = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--release", "--locked", "-p", "samples", "--bin", bin, "--target", TARGET])
        .args(["--config", &format!("target.{TARGET}.linker=\"rust-lld\"")])
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&root)
        .output()
        .expect("cargo runs");
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    target_dir.join(TARGET).join("release").join(bin)
}

/// Builds the firmware `package` of `samples/firmware` (a workspace of its
/// own) for `target` in release mode, with `features` if any, into
/// `target/firmware` (`target/firmware-FEATURES` with features), and
/// returns its ELF file.
pub fn build_firmware(package: &str, target: &str, features: Option<&str>) -> PathBuf {
    let root = workspace_root();
    let dir = root.join("target").join(features.map_or("firmware".to_string(), |f| format!("firmware-{f}")));
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.args(["build", "--release", "--locked", "-p", package, "--target", target, "--manifest-path"])
        .arg(root.join("samples/firmware/Cargo.toml"))
        .arg("--target-dir")
        .arg(&dir);
    if let Some(features) = features {
        cmd.args(["--features", features]);
    }
    let out = cmd.stdin(std::process::Stdio::null()).output().expect("cargo runs");
    assert!(out.status.success(), "building {package} for {target} failed:\n{}", String::from_utf8_lossy(&out.stderr));
    dir.join(target).join("release").join(package)
}

/// A fresh, empty folder for one test: see [`Scratch`].
pub fn scratch(test: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("ringtrace-e2e-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir is writable");
    Scratch(dir)
}

/// A test's folder in the temporary directory, removed when the test
/// passes and kept (its path said on stderr) when it fails, for a look
/// inside. Without the removal every run left its dumps, builds and
/// wheels behind — 200 MB a run for the fleet test alone — until a
/// machine's disk filled.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.0.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the failed test's folder: {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// Copies an executable for a test to run. The copy is made by `cp`, not
/// `std::fs::copy`: a descriptor open for writing in this (multi-threaded)
/// test process would be inherited by any child another test forks at that
/// moment, and exec'ing the copy while such a child still holds it fails
/// with ETXTBSY ("Text file busy").
pub fn copy_executable(from: &Path, to: &Path) {
    let status = Command::new("cp").arg(from).arg(to).status().expect("cp runs");
    assert!(status.success(), "cp {} {} failed", from.display(), to.display());
}

/// Runs `cmd`, which must succeed, and returns its stdout.
pub fn must_run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// The C++ program the symbolizer is compared on (`tests/c/symbolize_subject.cpp`,
/// `g++ -O2 -g`: mangled names, inline chains, discriminators), built in `dir`.
pub fn symbolize_subject(dir: &Path) -> PathBuf {
    let exe = dir.join("subject");
    let source = workspace_root().join("tests/c/symbolize_subject.cpp");
    must_run(tool("c++").args(["-O2", "-g", "-o"]).arg(&exe).arg(source));
    exe
}

/// About `count` addresses (`0x…`) spread evenly over the bytes of every function of `bin`.
pub fn spread_addresses(bin: &Path, count: usize) -> Vec<String> {
    let nm = must_run(tool("nm").args(["--defined-only", "-S"]).arg(bin));
    let functions: Vec<(u64, u64)> = nm
        .lines()
        .filter_map(|l| match l.split_whitespace().collect::<Vec<_>>()[..] {
            [a, s, "t" | "T", _] => Some((u64::from_str_radix(a, 16).ok()?, u64::from_str_radix(s, 16).ok()?)),
            _ => None,
        })
        .collect();
    let bytes: u64 = functions.iter().map(|f| f.1).sum();
    let step = (bytes / count as u64).max(1);
    functions.iter().flat_map(|&(a, s)| (a..a + s).step_by(step as usize)).map(|a| format!("{a:#x}")).collect()
}

/// The GNU build-id of `bin`, in hex, as `readelf -n` prints it.
pub fn build_id(bin: &Path) -> String {
    let notes = must_run(tool("readelf").arg("-n").arg(bin));
    notes.lines().find_map(|l| l.trim().strip_prefix("Build ID: ")).expect("a build-id note").trim().to_string()
}

/// The environment that keeps rtconv off the persistent symbol index: every
/// test names from the files it built, never from what an earlier run (or
/// another test) left in the user's cache. The index's own tests point
/// `RTCONV_SYMBOL_INDEX` at a folder of their own.
pub const NO_INDEX: (&str, &str) = ("RTCONV_SYMBOL_INDEX", "off");

/// A command running the release `rtconv`, without the symbol index ([`NO_INDEX`]).
pub fn rtconv() -> Command {
    let mut command = Command::new(binary("rtconv"));
    command.env(NO_INDEX.0, NO_INDEX.1);
    command
}

/// Runs a program (rtconv without the symbol index, see [`NO_INDEX`]) and
/// returns its output, panicking if it cannot start.
pub fn run(program: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(program);
    command.args(args).env(NO_INDEX.0, NO_INDEX.1);
    command.output().unwrap_or_else(|e| panic!("cannot run {}: {e}", program.display()))
}

/// One `X` event read back from Chrome JSON, in integer nanoseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// Span name.
    pub name: String,
    /// Thread id.
    pub tid: u64,
    /// Start, ns since the trace start.
    pub ts_ns: i64,
    /// Duration, ns.
    pub dur_ns: i64,
    /// Still open when the dump was taken (`args.open`).
    pub open: bool,
}

impl Event {
    /// End, ns since the trace start.
    pub fn end_ns(&self) -> i64 {
        self.ts_ns + self.dur_ns
    }

    /// Whether this span, still on a thread's stack when `next` (later in start order) begins,
    /// has ended by then, so is not `next`'s parent: it ended before `next` began, or as `next`
    /// began and `next` takes time. A call of 0 ns in the tick its caller returns is the
    /// caller's child, as rtconv nests spans by their ticks (and writes parents first).
    pub fn ended_before(&self, next: &Event) -> bool {
        self.end_ns() < next.ts_ns || (self.end_ns() == next.ts_ns && next.dur_ns > 0)
    }
}

/// A parsed Chrome trace: its events and the thread names.
pub struct ChromeTrace {
    /// Complete events in file order.
    pub events: Vec<Event>,
    /// Thread id to name, from `thread_name` metadata.
    pub thread_names: HashMap<u64, String>,
    /// The `process_name` metadata.
    pub process_name: Option<String>,
    /// Instant events' names.
    pub instants: Vec<String>,
    /// The whole document.
    pub json: serde_json::Value,
}

/// Microseconds (three decimals, checked on the text by [`parse_chrome`]) to integer nanoseconds.
/// Exact: a trace's microsecond values stay far below 2^53 / 1000.
fn us_to_ns(v: &serde_json::Value) -> i64 {
    (v.as_f64().unwrap_or_else(|| panic!("{v} is not a number")) * 1000.0).round() as i64
}

/// A span as ftrace's function_graph text (`-f ftrace`) shows it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FtraceSpan {
    /// Its thread, from the task column (`name-tid`).
    pub tid: u64,
    /// Its function.
    pub name: String,
    /// Its duration as printed (see [`as_printed`]), ns.
    pub ns: i64,
    /// Its depth: the indentation, two spaces a level.
    pub depth: usize,
    /// Where a part's window cut it (`/* clipped: start */`, `end`, `both`), if it did.
    pub clipped: Option<String>,
}

/// The spans of function_graph text, in the order their lines end them: a leaf `name();`
/// carries its duration, an entry `name() {` gets it from the `}` at its depth. Asserts the
/// layout: the indentation is the depth, a duration has the decimals its size leaves, an entry
/// line has none.
pub fn parse_ftrace(text: &str) -> Vec<FtraceSpan> {
    let mut spans = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for line in text.lines().filter(|l| l.starts_with(" 0) ") && !l.contains("=>")) {
        let (task, rest) = line[4..].split_once(" | ").unwrap();
        let tid: u64 = task.trim().rsplit_once('-').unwrap().1.parse().unwrap();
        let (duration, call) = rest.split_once("|  ").unwrap();
        let indent = call.len() - call.trim_start().len();
        let mut call = call.trim_start();
        let mut clipped = None;
        if let Some((before, how)) = call.split_once(" /* clipped: ") {
            clipped = Some(how.strip_suffix(" */").unwrap().to_string());
            call = before;
        }
        let call = call.strip_suffix(" /* unwound */").unwrap_or(call);
        // A `}` is at the depth of the span it closes.
        let depth = if call == "}" { open.len().saturating_sub(1) } else { open.len() };
        assert_eq!(indent, depth * 2, "{line:?}");
        let ns = || -> i64 {
            let us = duration[1..].trim().strip_suffix(" us").unwrap();
            let (whole, frac) = us.split_once('.').unwrap_or((us, ""));
            assert_eq!(frac.len(), decimals(whole.len()), "{line:?}");
            let scale = 10i64.pow(3 - frac.len() as u32);
            whole.parse::<i64>().unwrap() * 1000 + frac.parse::<i64>().unwrap_or(0) * scale
        };
        let (name, ns) = if let Some(name) = call.strip_suffix("() {") {
            assert_eq!((duration.trim(), &clipped), ("", &None), "{line:?}");
            open.push(name.to_string());
            continue;
        } else if let Some(name) = call.strip_suffix("();") {
            (name.to_string(), ns())
        } else {
            assert_eq!(call, "}", "{line:?}");
            (open.pop().unwrap(), ns())
        };
        spans.push(FtraceSpan { tid, name, ns, depth, clipped });
    }
    assert!(open.is_empty(), "every entry line closed");
    spans
}

/// Decimals the kernel's function_graph prints for a duration of `us_digits` whole microseconds:
/// seven digits in all, at most three decimals.
pub fn decimals(us_digits: usize) -> usize {
    if us_digits < 7 { (5.min(8 - us_digits) - 1).min(3) } else { 0 }
}

/// `ns` as function_graph prints it: cut to the decimals its size leaves.
pub fn as_printed(ns: i64) -> i64 {
    let digits = (ns / 1000).max(1).to_string().len();
    let unit = 10i64.pow(3 - decimals(digits) as u32);
    ns - ns % unit
}

/// Parses Chrome JSON text. Every `ts` and `dur` must have exactly three decimals (whole ns).
pub fn parse_chrome(text: &str) -> ChromeTrace {
    let json: serde_json::Value = serde_json::from_str(text).expect("output is valid JSON");
    let number = regex::Regex::new(r#""(ts|dur)":(-?[0-9.eE+-]+)"#).unwrap();
    for c in number.captures_iter(text) {
        let (int, frac) = c[2].split_once('.').unwrap_or_else(|| panic!("{} has no decimals", &c[0]));
        assert!(
            int.bytes().all(|b| b.is_ascii_digit() || b == b'-') && frac.len() == 3,
            "{} must have three decimals",
            &c[0]
        );
    }
    let mut trace = ChromeTrace {
        events: Vec::new(),
        thread_names: HashMap::new(),
        process_name: None,
        instants: Vec::new(),
        json,
    };
    let mut open: HashMap<u64, Vec<(String, i64)>> = HashMap::new();
    for e in trace.json["traceEvents"].as_array().expect("traceEvents is an array") {
        let name = e["name"].as_str().expect("every event has a name").to_string();
        match e["ph"].as_str() {
            Some("X") => trace.events.push(Event {
                name,
                tid: e["tid"].as_u64().expect("numeric tid"),
                ts_ns: us_to_ns(&e["ts"]),
                dur_ns: us_to_ns(&e["dur"]),
                open: e["args"]["open"] == true,
            }),
            Some("M") if name == "thread_name" => {
                let tid = e["tid"].as_u64().expect("numeric tid");
                trace.thread_names.insert(tid, e["args"]["name"].as_str().unwrap().to_string());
            }
            Some("M") if name == "process_name" => {
                trace.process_name = Some(e["args"]["name"].as_str().unwrap().to_string())
            }
            Some("i") => trace.instants.push(name),
            // B/E pairs become complete events; an E must close the innermost B of its thread, by name.
            Some("B") => {
                open.entry(e["tid"].as_u64().expect("numeric tid")).or_default().push((name, us_to_ns(&e["ts"])))
            }
            Some("E") => {
                let tid = e["tid"].as_u64().expect("numeric tid");
                let (begun, ts_ns) = open.get_mut(&tid).and_then(Vec::pop).expect("an E closes a B");
                assert_eq!(begun, name, "E names the span it ends");
                let end = us_to_ns(&e["ts"]);
                let open = e["args"]["open"] == true;
                trace.events.push(Event { name, tid, ts_ns, dur_ns: end - ts_ns, open });
            }
            other => panic!("unexpected event phase {other:?}"),
        }
    }
    assert!(open.values().all(Vec::is_empty), "every B has its E");
    trace
}

/// Runs the workload (small settings plus `args`) writing `dir/name`, and returns the dump's path.
pub fn record_workload_with(program: &Path, dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    record_workload_timed(program, dir, name, args).0
}

/// As [`record_workload_with`], and also how long each sleeper round took, in ns, as the
/// workload measured it with `Instant` around the round's spans: an upper bound on each of
/// them that holds however loaded the machine is.
pub fn record_workload_timed(program: &Path, dir: &Path, name: &str, args: &[&str]) -> (PathBuf, Vec<u64>) {
    let dump = dir.join(name);
    let mut all = vec!["--out", dump.to_str().expect("UTF-8 temp path"), "--fib", "12", "--sleep-ms", "1"];
    all.extend_from_slice(args);
    let out = run(program, &all);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "workload failed: {stderr}");
    (dump, sleeper_rounds(&stderr))
}

/// How long each of the workload's sleeper rounds took, in ns, as it says on stderr (measured
/// with `Instant` around the round's spans).
pub fn sleeper_rounds(stderr: &str) -> Vec<u64> {
    let rounds = stderr
        .lines()
        .find_map(|l| l.strip_prefix("workload: sleeper rounds (ns):"))
        .unwrap_or_else(|| panic!("the workload says how long its sleeper rounds took: {stderr}"));
    rounds.split_whitespace().map(|n| n.parse().unwrap()).collect()
}

/// The thread ids that have spans in a Chrome JSON trace.
pub fn span_tids(json: &str) -> std::collections::BTreeSet<u64> {
    parse_chrome(json).events.iter().map(|e| e.tid).collect()
}

/// The most a span measured inside an interval of `outside_ns` (by the
/// monotonic clock) can show: the counter rate rtconv derives from a short
/// run's anchors may be off by a few hundred ppm, and each time converts to
/// whole nanoseconds. A wrong rate or unit is off by far more.
pub fn at_most(outside_ns: u64) -> u64 {
    outside_ns + outside_ns / 200 + 2_000
}

/// The least a span around a sleep of `sleep_ns` can show: a sleep never ends
/// early; the same rate margin as [`at_most`].
pub fn at_least(sleep_ns: u64) -> u64 {
    sleep_ns - sleep_ns / 200
}

/// `rtconv ARGS...` (without the symbol index) with its output captured: (exit code, stdout,
/// stderr lines). The one runner of the suite; [`rtconv()`] gives the command itself, for a run
/// that needs more (an environment, a working directory, stdin).
pub fn rtconv_run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> (i32, String, Vec<String>) {
    let out = rtconv().args(args).output().unwrap_or_else(|e| panic!("cannot run rtconv: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).lines().map(str::to_owned).collect();
    (
        out.status.code().expect("rtconv exited, not killed"),
        String::from_utf8(out.stdout).expect("UTF-8 output"),
        stderr,
    )
}

/// The stdout of `rtconv ARGS...`, which must succeed (exit 0).
pub fn rtconv_ok<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> String {
    let (code, stdout, stderr) = rtconv_run(args);
    assert_eq!(code, 0, "rtconv {:?}: {}", args.iter().map(AsRef::as_ref).collect::<Vec<_>>(), stderr.join("\n"));
    stdout
}

/// `rtconv convert DUMP ARGS...` with its output captured, as [`rtconv_run`].
pub fn convert(dump: &Path, args: &[&str]) -> (i32, String, Vec<String>) {
    let mut all = vec!["convert", dump.to_str().expect("UTF-8 temp path")];
    all.extend_from_slice(args);
    rtconv_run(&all)
}

/// `rtconv stats DUMP --format json ARGS…`, which must succeed: the first
/// table's rows by function name, and what it said on stderr.
pub fn stats_rows(dump: &Path, args: &[&str]) -> (std::collections::BTreeMap<String, serde_json::Value>, String) {
    let mut all = vec!["stats", dump.to_str().expect("UTF-8 temp path"), "--format", "json"];
    all.extend_from_slice(args);
    let out = run(&binary("rtconv"), &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
    let rows = json[0]["functions"].as_array().expect("a table of functions");
    (rows.iter().map(|r| (r["function"].as_str().expect("a name").to_string(), r.clone())).collect(), stderr)
}

/// Compares `actual` with the committed file at `path` (relative to the
/// workspace root); with `BLESS` set in the environment, writes it there
/// instead. The one golden-file switch of the suite.
pub fn golden(path: &Path, actual: &str) {
    let path = workspace_root().join(path);
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected =
        std::fs::read_to_string(&path).unwrap_or_else(|_| panic!("{} missing; run with BLESS=1", path.display()));
    assert!(expected == actual, "{} differs; if intended, run with BLESS=1:\n{actual}", path.display());
}

/// A command for the external tool `name` (nm, readelf, llvm-symbolizer, …), or a
/// failure that says how to get it: the tests never skip for want of a tool.
pub fn tool(name: &str) -> Command {
    let found =
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
    assert!(found, "{name} is not on PATH: run tests/setup, which installs what the tests use");
    Command::new(name)
}

/// Calls made by the naive recursive `fib(n)` (the samples' and the C programs'): C(n) = 1 +
/// C(n-1) + C(n-2), C(0) = C(1) = 1 — for fib(12), 465.
pub const fn fib_calls(n: u64) -> u64 {
    let (mut a, mut b, mut i) = (1u64, 1u64, 1);
    while i < n {
        (a, b) = (b, 1 + a + b);
        i += 1;
    }
    if n == 0 { a } else { b }
}

/// The workload sample's calls per function with `--fib 12` (as [`record_workload_with`] runs it)
/// and `--rounds ROUNDS`, known from its code: fib(12) on two threads, 465 calls each; per round,
/// parse_batch on two threads, each calling tokenize and checksum 8 times; one sleeper round of one
/// sleep; and `main done` once.
pub fn workload_calls(rounds: u64) -> std::collections::BTreeMap<String, u64> {
    [
        ("workload::fib", 2 * fib_calls(12)),
        ("workload::parse_batch", 2 * rounds),
        ("tokenize", 2 * 8 * rounds),
        ("checksum", 2 * 8 * rounds),
        ("sleeper round", rounds),
        ("sleep", rounds),
        ("main done", 1),
    ]
    .into_iter()
    .map(|(name, calls)| (name.to_string(), calls))
    .collect()
}

/// A tool of the Python virtual environment tests/setup makes (`python`, `pip`, `maturin`,
/// `spark-submit`), which must be there.
pub fn venv(tool: &str) -> PathBuf {
    let path = workspace_root().join("tests/.venv/bin").join(tool);
    assert!(path.exists(), "{}: run tests/setup", path.display());
    path
}
/// `path::name::h0123456789abcdef` to `path::name` (LLVM 14 keeps legacy Rust hashes).
pub fn without_rust_hash(name: &str) -> &str {
    match name.rsplit_once("::h") {
        Some((path, hash)) if hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => path,
        _ => name,
    }
}
