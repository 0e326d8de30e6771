//! Version skew: a committed dump of every released format version
//! (`tests/fixtures/vMAJOR.MINOR/*.rtd`, each written by the recorder of
//! that version) is read by this rtconv, and its statistics and collapsed
//! stacks match the expected outputs committed beside it. Names come from
//! the dumps alone (`--symbolizer packed,sites,dladdr`: a 1.2 dump is packed), so the outputs do not
//! depend on which binaries this machine has. Rewrite the expected files
//! after an intended change with `BLESS=1 cargo test -p ringtrace-tests --test e2e -- fixtures::`.

use std::path::Path;

use ringtrace_tests::workspace_root;

/// What rtconv printed for one fixture: exit status, stdout and stderr of stats and of folded stacks.
fn outputs(fixture: &str) -> String {
    let mut text = String::new();
    for args in [&["stats", "--format", "csv"][..], &["convert", "-f", "folded"][..]] {
        let out = ringtrace_tests::rtconv()
            .args(args)
            .args(["--symbolizer", "packed,sites,dladdr", fixture])
            .current_dir(workspace_root())
            .output()
            .unwrap();
        text.push_str(&format!("$ rtconv {} --symbolizer packed,sites,dladdr {fixture}\n", args.join(" ")));
        text.push_str(&format!("exit {}\n", out.status.code().unwrap()));
        text.push_str(&String::from_utf8(out.stdout).unwrap());
        text.push_str("--- stderr\n");
        text.push_str(&String::from_utf8(out.stderr).unwrap());
    }
    text
}

#[test]
fn every_released_format_version_is_read_and_converts_as_committed() {
    let root = workspace_root().join("tests/fixtures");
    let mut checked = Vec::new();
    let mut versions: Vec<_> = std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).collect();
    versions.sort();
    for dir in versions {
        let version = dir.file_name().unwrap().to_string_lossy().trim_start_matches('v').to_string();
        let (major, minor) = version.split_once('.').unwrap();
        let mut dumps: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "rtd"))
            .collect();
        dumps.sort();
        assert!(!dumps.is_empty(), "{} holds no dump", dir.display());
        for dump in dumps {
            // The fixture is of the version its folder names.
            let bytes = std::fs::read(&dump).unwrap();
            let header = ringtrace_format::Dump::parse(&bytes).unwrap();
            assert_eq!((header.major.to_string(), header.minor.to_string()), (major.into(), minor.into()));
            let relative = dump.strip_prefix(workspace_root()).unwrap().to_string_lossy().into_owned();
            let actual = outputs(&relative);
            ringtrace_tests::golden(Path::new(&relative).with_extension("expected").as_path(), &actual);
            checked.push(version.clone());
        }
    }
    // Every released version is covered.
    for version in ["1.0", "1.1", "1.2"] {
        assert!(checked.contains(&version.to_string()), "no {version} fixture: {checked:?}");
    }
}
