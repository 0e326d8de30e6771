//! The README's commands and the workspace build link the same sample binary.
//!
//! Cargo unifies features over the packages one invocation builds. A feature
//! that only some member turns on (a test-only one, or the C library's
//! `c-api`) would make `cargo build --release --workspace` relink the
//! `workload` that `cargo run --release -p samples` (the README's quick
//! start) built, and the dump recorded by the first would no longer match the
//! second's build-id: rtconv would refuse it, and the names would be lost.

use ringtrace_tests::{binary, build_id, cargo_build, executables};

#[test]
fn the_workspace_build_does_not_relink_what_the_readme_built() {
    // Built as the README builds them: `-p samples`, then `-p rtconv` (with `parquet`, which the
    // tests' own dependency on rtconv turns on in a workspace build too).
    let (workload, rtconv) = (binary("workload"), binary("rtconv"));
    let before = (build_id(&workload), build_id(&rtconv));
    // `cargo build --release --workspace`, bins only (the same features are unified).
    let messages = cargo_build(&["--workspace", "--bins"]);
    let fresh = |name: &str| {
        messages
            .iter()
            .find(|m| m["target"]["name"] == name && m["reason"] == "compiler-artifact")
            .unwrap_or_else(|| panic!("cargo reports no artifact for {name}"))["fresh"]
            .as_bool()
    };
    assert_eq!(fresh("workload"), Some(true), "the workspace build relinked the sample: its features differ");
    assert_eq!(fresh("rtconv"), Some(true), "the workspace build relinked rtconv: its features differ");
    let built = executables(&messages);
    assert_eq!((build_id(&built["workload"]), build_id(&built["rtconv"])), before);
}
