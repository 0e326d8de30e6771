//! `triggers` exports its symbols to the dynamic table (`-rdynamic`), as C
//! programs often do, so its dumps carry dladdr names the tests can check.
fn main() {
    println!("cargo:rustc-link-arg-bin=triggers=-rdynamic");
}
