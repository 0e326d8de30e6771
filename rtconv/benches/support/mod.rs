//! What the benches that run rtconv as a program share: building the
//! workspace's binaries with the cargo that runs the bench.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `cargo build -q --locked ARGS` in the workspace (a failure ends the
/// bench, naming `what`) and returns the target directory.
pub fn cargo_build(args: &[&str], what: &str) -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("rtconv sits in the workspace");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let ok = Command::new(&cargo)
        .args(["build", "-q", "--locked"])
        .args(args)
        .current_dir(workspace)
        .status()
        .expect("cargo runs")
        .success();
    assert!(ok, "building {what} failed");
    std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| workspace.join("target"))
}
