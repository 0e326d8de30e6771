//! Puts the board's memory map where cortex-m-rt's link.x finds it (as
//! memory.x), and links with link.x: `mps2-an385.x` for Armv7-M,
//! `microbit.x` (a Cortex-M0) for Armv6-M.
fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let board = if std::env::var("TARGET").unwrap().starts_with("thumbv6m") { "microbit.x" } else { "mps2-an385.x" };
    std::fs::copy(board, out.join("memory.x")).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed={board}");
    println!("cargo:rustc-link-arg=-Tlink.x");
}
