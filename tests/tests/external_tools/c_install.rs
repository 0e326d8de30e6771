//! The C library as C and C++ users take it: `recorder/capi/install PREFIX`,
//! then a program built through `pkg-config --cflags --libs ringtrace` and
//! one through CMake's `find_package(ringtrace)`, each traced whole with the
//! exact call counts of `samples/c/whole.c`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use ringtrace_tests::{convert, parse_chrome, scratch, tool, workspace_root};

/// Installs the library into `dir/prefix` with the script the README names.
fn install(dir: &Path) -> PathBuf {
    let prefix = dir.join("prefix");
    let out = Command::new(workspace_root().join("recorder/capi/install")).arg(&prefix).output().unwrap();
    assert!(out.status.success(), "install failed: {}", String::from_utf8_lossy(&out.stderr));
    prefix
}

/// Runs `whole 3 12` with its dump in `dir` and checks every function's call count.
fn check_whole(exe: &Path, dir: &Path) {
    let dump = dir.join("whole.rtd");
    let out = Command::new(exe).args(["3", "12"]).env("RINGTRACE_DUMP", &dump).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.stdout, b"3\n");
    let (code, json, stderr) = convert(&dump, &[]);
    assert_eq!((code, stderr.len()), (0, 0), "{stderr:?}");
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in parse_chrome(&json).events {
        *counts.entry(e.name).or_default() += 1;
    }
    // fib(12) makes 465 calls; see samples/c/whole.c for the rest.
    let expected: BTreeMap<String, usize> = [
        ("fib", 3 * 465),
        ("work", 3),
        ("worker", 3),
        ("leaf_add", 3 * 3 + 1),
        ("leaf_mul", 3 * 3),
        ("main", 2),
        ("spawn and join", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(counts, expected);
}

#[test]
fn a_c_program_builds_through_pkg_config() {
    let dir = scratch("pkg-config");
    let prefix = install(&dir);
    let out = tool("pkg-config")
        .args(["--cflags", "--libs", "ringtrace"])
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let flags = String::from_utf8(out.stdout).unwrap();
    let exe = dir.join("whole");
    let status = tool("cc")
        .args(["-g", "-O1", "-finstrument-functions", "-o"])
        .arg(&exe)
        .arg(workspace_root().join("samples/c/whole.c"))
        .args(flags.split_whitespace())
        .status()
        .unwrap();
    assert!(status.success(), "cc with `{}` failed", flags.trim());
    check_whole(&exe, &dir);
}

#[test]
fn a_c_program_builds_through_cmake_find_package() {
    let dir = scratch("cmake");
    let prefix = install(&dir);
    // The installed prefix is relocatable: use it from somewhere else.
    let moved = dir.join("moved");
    std::fs::rename(&prefix, &moved).unwrap();
    let project = dir.join("project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(workspace_root().join("samples/c/whole.c"), project.join("whole.c")).unwrap();
    std::fs::write(
        project.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\n\
         project(whole C)\n\
         find_package(ringtrace 0.1 REQUIRED)\n\
         add_executable(whole whole.c)\n\
         target_compile_options(whole PRIVATE -g -O1 -finstrument-functions)\n\
         target_link_libraries(whole PRIVATE ringtrace::ringtrace)\n",
    )
    .unwrap();
    let build = dir.join("build");
    let configure = tool("cmake")
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(&build)
        .arg(format!("-DCMAKE_PREFIX_PATH={}", moved.display()))
        .output()
        .unwrap();
    assert!(configure.status.success(), "cmake configure: {}", String::from_utf8_lossy(&configure.stderr));
    let made = tool("cmake").arg("--build").arg(&build).output().unwrap();
    assert!(made.status.success(), "cmake --build: {}", String::from_utf8_lossy(&made.stdout));
    check_whole(&build.join("whole"), &dir);
    // A version it is not compatible with is refused.
    std::fs::write(
        project.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.16)\nproject(whole C)\nfind_package(ringtrace 1.0 REQUIRED)\n",
    )
    .unwrap();
    let refused = tool("cmake")
        .arg("-S")
        .arg(&project)
        .arg("-B")
        .arg(dir.join("build-1.0"))
        .arg(format!("-DCMAKE_PREFIX_PATH={}", moved.display()))
        .output()
        .unwrap();
    assert!(!refused.status.success(), "find_package(ringtrace 1.0) must refuse 0.1.0");
}
