//! Whether `rtconv stats --calibrated` takes out what the recorder really
//! cost: a parent of N empty children (`samples/src/bin/children.rs`: ~100 ns
//! of the parent's own work per child, the children back to back) against
//! the same parent without them, calibrated and not, for N = 1 k, 50 k, 1 M.
//!
//! A timing comparison, so a bench rather than a test: on a loaded machine
//! the children's cost moves by ±50 % between runs, calibration or not.
//! docs/PERFORMANCE.md records the figures.
//!
//! `cargo bench -p rtconv --bench calibration` (`-- --smoke`: N = 1 k, one run).

use std::path::{Path, PathBuf};
use std::process::Command;

mod support;

/// Builds the release `children` sample and `rtconv`; returns their paths.
fn build() -> (PathBuf, PathBuf) {
    let args = ["--release", "-p", "samples", "--bin", "children", "-p", "rtconv", "--bin", "rtconv"];
    let target = support::cargo_build(&args, "the children sample and rtconv");
    (target.join("release/children"), target.join("release/rtconv"))
}

/// (least `with` parent, least `without` parent) over the sample's three rounds, ns.
fn parents(rtconv: &Path, dump: &Path, calibrated: bool) -> (u64, u64) {
    let mut cmd = Command::new(rtconv);
    cmd.arg("stats").arg(dump).args(["-f", "json"]);
    if calibrated {
        cmd.arg("--calibrated");
    }
    let out = cmd.output().expect("rtconv runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stats JSON");
    let total = |name: &str| {
        json[0]["functions"].as_array().and_then(|f| f.iter().find(|f| f["function"] == name)).expect(name)["total_ns"]
            .as_u64()
            .expect("total_ns")
    };
    let min = |prefix: &str| (0..3).map(|r| total(&format!("{prefix}-{r}"))).min().expect("three rounds");
    (min("with"), min("without"))
}

fn main() {
    let smoke = std::env::args().any(|a| a == "--smoke");
    let (children, rtconv) = build();
    let dir = std::env::temp_dir().join(format!("ringtrace-calibration-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let sizes: &[u64] = if smoke { &[1_000] } else { &[1_000, 50_000, 1_000_000] };
    for &n in sizes {
        let dump = dir.join(format!("children-{n}.rtd"));
        let mut runs = Vec::new();
        for _ in 0..if smoke { 1 } else { 3 } {
            let ok = Command::new(&children).arg(n.to_string()).arg(&dump).status().expect("the sample runs").success();
            assert!(ok, "children {n} failed");
            let (raw_with, raw_without) = parents(&rtconv, &dump, false);
            let (with, without) = parents(&rtconv, &dump, true);
            runs.push(format!(
                "uncalibrated {:.3}, calibrated {:.3}",
                raw_with as f64 / raw_without as f64,
                with as f64 / without as f64
            ));
        }
        println!("N = {n}: with ÷ without parent: {}", runs.join("; "));
    }
    std::fs::remove_dir_all(&dir).ok();
}
