//! The call tree under qemu-aarch64, whose counter moves in coarse steps.

use ringtrace_tests::{build_aarch64_sample, scratch, tool};

use crate::nesting::check_every_output;

#[test]
fn under_qemu_aarch64_the_tree_is_the_same() {
    let exe = build_aarch64_sample("tree");
    let dir = scratch("nesting-aarch64");
    for clock in ["fine", "coarse"] {
        let dump = dir.join(format!("{clock}.rtd"));
        let run = tool("timeout")
            .args(["-s", "KILL", "300", "qemu-aarch64"])
            .arg(&exe)
            .arg(clock)
            .arg(&dump)
            .output()
            .unwrap();
        assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
        check_every_output(&dump, &format!("aarch64 {clock}"));
    }
}
