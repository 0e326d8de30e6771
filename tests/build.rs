//! Builds the Lua interpreter library (Lua 5.4, from the `lua-src` crate's
//! sources) with `-finstrument-functions`, for the whole-program tracing tests
//! (`tests/tests/longjmp.rs`): a real C program nobody here wrote, whose
//! errors and coroutines leave C frames with `_longjmp`.
//!
//! `-O1 -fno-inline`: every call the hooks see is a call in the machine code,
//! so a call site names its caller (the tests' independent truth).
//!
//! Where `tests/setup` installed the aarch64 cross compiler
//! (`aarch64-linux-gnu-gcc`), the same library for aarch64 Linux too, for the
//! core test under `qemu-aarch64`; without it the variable is empty and that
//! test says to run `tests/setup`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // cc reads CFLAGS for flags beyond the crate's own; nothing else in this build script compiles C.
    // SAFETY: the build script is single-threaded here.
    unsafe { std::env::set_var("CFLAGS", "-finstrument-functions -fno-inline -g") };
    let artifacts = lua_src::Build::new().opt_level("1").debug(true).build(lua_src::Lua54);
    println!("cargo:rustc-env=RINGTRACE_TESTS_LUA_LIB_DIR={}", artifacts.lib_dir().display());
    println!("cargo:rustc-env=RINGTRACE_TESTS_LUA_INCLUDE_DIR={}", artifacts.include_dir().display());

    let cross = "aarch64-linux-gnu-gcc";
    let path: Vec<std::path::PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()).collect();
    let found = path.iter().map(|dir| dir.join(cross)).find(|c| c.is_file());
    println!("cargo:rerun-if-env-changed=PATH");
    // Built again when the compiler comes or goes: tests/setup may install it after a first build
    // (`cargo clippy` runs before the tests). A missing file watched keeps this script running at
    // every build until the compiler is there.
    match &found {
        Some(compiler) => println!("cargo:rerun-if-changed={}", compiler.display()),
        None => path.iter().for_each(|dir| println!("cargo:rerun-if-changed={}", dir.join(cross).display())),
    }
    let has_cross = found.is_some();
    let aarch64 = has_cross.then(|| {
        // Under qemu-user the heap's and stack's addresses vary from run to run, so Lua's string
        // hash seed (made from them) is fixed here: two runs make the same calls.
        // SAFETY: the build script is single-threaded here.
        unsafe {
            std::env::set_var(
                "CFLAGS_aarch64_unknown_linux_gnu",
                "-finstrument-functions -fno-inline -g -Dluai_makeseed(L)=1u",
            )
        };
        let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("lua-aarch64");
        let host = std::env::var("HOST").unwrap();
        let built = lua_src::Build::new()
            .target("aarch64-unknown-linux-gnu")
            .host(&host)
            .out_dir(&out)
            .opt_level("1")
            .debug(true)
            .build(lua_src::Lua54);
        built.lib_dir().display().to_string()
    });
    println!("cargo:rustc-env=RINGTRACE_TESTS_LUA_AARCH64_LIB_DIR={}", aarch64.unwrap_or_default());
}
