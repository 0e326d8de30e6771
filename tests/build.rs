//! Builds the Lua interpreter library (Lua 5.4, from the `lua-src` crate's
//! sources) with `-finstrument-functions`, for the whole-program tracing tests
//! (`tests/tests/longjmp.rs`): a real C program nobody here wrote, whose
//! errors and coroutines leave C frames with `_longjmp`.
//!
//! `-O1 -fno-inline`: every call the hooks see is a call in the machine code,
//! so a call site names its caller (the tests' independent truth).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // cc reads CFLAGS for flags beyond the crate's own; nothing else in this build script compiles C.
    // SAFETY: the build script is single-threaded here.
    unsafe { std::env::set_var("CFLAGS", "-finstrument-functions -fno-inline -g") };
    let artifacts = lua_src::Build::new().opt_level("1").debug(true).build(lua_src::Lua54);
    println!("cargo:rustc-env=RINGTRACE_TESTS_LUA_LIB_DIR={}", artifacts.lib_dir().display());
    println!("cargo:rustc-env=RINGTRACE_TESTS_LUA_INCLUDE_DIR={}", artifacts.include_dir().display());
}
