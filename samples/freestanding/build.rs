//! Links without the C runtime and libc: `_start` is ours, the binary static and not position-independent.
fn main() {
    for arg in ["-nostartfiles", "-nostdlib", "-static", "-no-pie"] {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}
