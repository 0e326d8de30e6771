//! The command line behaves like its neighbours': `-o -` is stdout, the
//! output's extension picks the format (and a `.gz` compresses it, read back
//! by gzip itself), a `-f` that contradicts it is refused, the short flags
//! mean the same everywhere, wrong inputs get a hint naming what to use,
//! `info` takes several dumps and speaks JSON, `--color` and `NO_COLOR` are
//! obeyed, and shell completions and man pages are what bash and groff accept.

use std::path::Path;
use std::process::Output;

use ringtrace_tests::{binary, record_workload_with, scratch, tool};

pub(crate) fn rtconv_in(dir: &Path, args: &[&str]) -> Output {
    ringtrace_tests::rtconv().args(args).current_dir(dir).output().unwrap()
}

pub(crate) fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A dump in a fresh folder, and the folder.
fn dump(test: &str) -> ringtrace_tests::Scratch {
    let dir = scratch(test);
    record_workload_with(&binary("workload"), &dir, "w.rtd", &[]);
    dir
}

#[test]
fn the_output_name_picks_the_format_and_gz_compresses() {
    let dir = dump("cli-output");
    let plain = rtconv_in(&dir, &["convert", "w.rtd"]);
    assert!(plain.status.success());
    // `-o -` is stdout, and no file named `-` appears.
    let dash = rtconv_in(&dir, &["convert", "w.rtd", "-o", "-"]);
    assert_eq!(dash.stdout, plain.stdout);
    assert!(!dir.join("-").exists());
    // The extension picks the format; the same output as with -f.
    // The endings batch gives its outputs, and .txt for ftrace.
    let names = [
        ("t.json", "chrome"),
        ("t.svg", "flamegraph"),
        ("t.folded", "folded"),
        ("t.ftrace.txt", "ftrace"),
        ("t.systrace.txt", "systrace"),
        ("t.txt", "ftrace"),
    ];
    for (name, format) in names {
        let by_name = rtconv_in(&dir, &["convert", "w.rtd", "-o", name]);
        assert!(by_name.status.success(), "{name}: {}", text(&by_name.stderr));
        let by_flag = rtconv_in(&dir, &["convert", "w.rtd", "-f", format]);
        assert_eq!(std::fs::read(dir.join(name)).unwrap(), by_flag.stdout, "{name}");
        // Saying the same twice is fine.
        assert!(rtconv_in(&dir, &["convert", "w.rtd", "-f", format, "-o", name]).status.success());
    }
    assert!(std::fs::read_to_string(dir.join("t.svg")).unwrap().starts_with("<?xml"));
    assert!(std::fs::read_to_string(dir.join("t.txt")).unwrap().contains("function_graph"));
    // .gz: gzip itself decompresses it to the same trace.
    let gz = rtconv_in(&dir, &["convert", "w.rtd", "-o", "t.json.gz"]);
    assert!(gz.status.success(), "{}", text(&gz.stderr));
    let unzipped = tool("gzip").arg("-dc").arg(dir.join("t.json.gz")).output().unwrap();
    assert!(unzipped.status.success());
    assert_eq!(unzipped.stdout, plain.stdout);
    // A -f that contradicts the name is refused, and nothing is written.
    let refused = rtconv_in(&dir, &["convert", "w.rtd", "-f", "ftrace", "-o", "x.json"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        text(&refused.stderr).contains("-f ftrace contradicts the output name x.json"),
        "{}",
        text(&refused.stderr)
    );
    assert!(!dir.join("x.json").exists());
    // stats: -f like convert, and the name picks CSV or JSON.
    let json = rtconv_in(&dir, &["stats", "w.rtd", "-f", "json"]);
    assert_eq!(json.stdout, rtconv_in(&dir, &["stats", "w.rtd", "--format", "json"]).stdout);
    assert!(rtconv_in(&dir, &["stats", "w.rtd", "-o", "s.csv"]).status.success());
    assert!(std::fs::read_to_string(dir.join("s.csv")).unwrap().starts_with("scope,function,calls,"));
    // batch: -o is its output directory.
    let batch = rtconv_in(&dir, &["batch", "w.rtd", "-o", "out", "-q"]);
    assert!(batch.status.success(), "{}", text(&batch.stderr));
    assert_eq!(std::fs::read(dir.join("out/w.json")).unwrap(), plain.stdout);
}

#[test]
fn wrong_inputs_say_what_to_use_instead() {
    let dir = dump("cli-hints");
    let mut tar = Vec::new();
    {
        let mut builder = tar::Builder::new(&mut tar);
        builder.append_path_with_name(dir.join("w.rtd"), "w.rtd").unwrap();
        builder.finish().unwrap();
    }
    std::fs::write(dir.join("fleet.tar"), &tar).unwrap();
    std::fs::write(dir.join("fleet.bin"), &tar).unwrap();
    let cases: [(&str, &str); 4] = [
        (".", "is a directory: convert takes dump files; use `rtconv batch . -o OUT_DIR`"),
        ("fleet.tar", "is an archive: convert takes dump files; use `rtconv batch fleet.tar -o OUT_DIR`"),
        ("fleet.bin", "(this is a tar archive: `rtconv batch` and `rtconv stats` read archives of dumps)"),
        (
            "workload",
            "(this is an ELF binary: give the dump to convert, and the binary it was recorded from with --exe)",
        ),
    ];
    ringtrace_tests::copy_executable(&binary("workload"), &dir.join("workload"));
    for (input, hint) in cases {
        let out = rtconv_in(&dir, &["convert", input]);
        assert_ne!(out.status.code(), Some(0), "{input}");
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(hint), "{input}: {err}");
    }
}

#[test]
fn info_describes_several_dumps_as_text_or_json() {
    let dir = dump("cli-info");
    record_workload_with(&binary("workload"), &dir, "v.rtd", &["--fib", "5"]);
    let text_out = rtconv_in(&dir, &["info", "w.rtd", "v.rtd"]);
    assert!(text_out.status.success());
    let report = text(&text_out.stdout);
    assert_eq!(report.matches("\ndump       ").count() + usize::from(report.starts_with("dump ")), 2, "{report}");
    let json_out = rtconv_in(&dir, &["info", "w.rtd", "v.rtd", "-f", "json"]);
    assert!(json_out.status.success(), "{}", text(&json_out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    let dumps = json.as_array().unwrap();
    assert_eq!(dumps.len(), 2);
    // fib(12) twice + 5 × 2 sleeper spans + 5 × 2 × 17 parser spans + main's one; fib(5) makes 15 calls.
    assert_eq!(dumps[0]["spans"], 2 * 465 + 10 + 170 + 1);
    assert_eq!(dumps[1]["spans"], 2 * 15 + 10 + 170 + 1);
    assert_eq!(dumps[0]["dump"], "w.rtd");
    assert_eq!(dumps[0]["keys"]["dwarf"], 3);
    assert_eq!(dumps[0]["threads"].as_array().unwrap().len(), 6);
    // -o NAME.json means JSON; a missing dump fails alone (exit 3), the others are described.
    let mixed = rtconv_in(&dir, &["info", "w.rtd", "missing.rtd", "-o", "i.json"]);
    assert_eq!(mixed.status.code(), Some(3), "{}", text(&mixed.stderr));
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("i.json")).unwrap()).unwrap();
    assert_eq!(json.as_array().unwrap().len(), 1);
}

#[test]
fn color_follows_the_flag_no_color_and_the_terminal() {
    let dir = dump("cli-color");
    // A dump whose binary is gone: a warning-free error line about the binary.
    ringtrace_tests::copy_executable(&binary("workload"), &dir.join("wl"));
    record_workload_with(&dir.join("wl"), &dir, "gone.rtd", &[]);
    std::fs::remove_file(dir.join("wl")).unwrap();
    let red = "\x1b[1;31merror:\x1b[0m";
    let always = rtconv_in(&dir, &["--color", "always", "convert", "gone.rtd", "-o", "x.json"]);
    assert!(text(&always.stderr).contains(red), "{:?}", text(&always.stderr));
    let never = rtconv_in(&dir, &["convert", "gone.rtd", "-o", "x.json", "--color", "never"]);
    assert!(!text(&never.stderr).contains('\x1b') && text(&never.stderr).contains("rtconv: error:"));
    // auto: not a terminal here, so no color.
    let auto = rtconv_in(&dir, &["convert", "gone.rtd", "-o", "x.json"]);
    assert!(!text(&auto.stderr).contains('\x1b'));
    // On a terminal (`script` gives one): color, unless NO_COLOR is set. The table's headings too.
    let on_terminal = |no_color: bool| {
        let command = format!(
            "{} stats gone.rtd; {} convert gone.rtd -o x.json",
            binary("rtconv").display(),
            binary("rtconv").display()
        );
        let mut script = tool("script");
        script.env(ringtrace_tests::NO_INDEX.0, ringtrace_tests::NO_INDEX.1);
        // Nothing to type: `script` relays its stdin to the terminal it makes.
        script.args(["-qec", &command, "/dev/null"]).stdin(std::process::Stdio::null());
        script.current_dir(&dir).env_remove("NO_COLOR").env("TERM", "xterm");
        if no_color {
            script.env("NO_COLOR", "1");
        }
        text(&script.output().unwrap().stdout)
    };
    let colored = on_terminal(false);
    assert!(colored.contains(red) && colored.contains("\x1b[1mall threads"), "{colored:?}");
    let plain = on_terminal(true);
    assert!(!plain.contains('\x1b') && plain.contains("rtconv: error:"), "{plain:?}");
}

#[test]
fn bash_completes_subcommands_and_flags_from_the_generated_script() {
    let dir = scratch("cli-completions");
    let script = rtconv_in(&dir, &["completions", "bash"]);
    assert!(script.status.success());
    std::fs::write(dir.join("rtconv.bash"), &script.stdout).unwrap();
    // bash loads the script and its completion function answers as bash would ask it.
    let complete = |words: &str| -> String {
        let program = format!(
            "source ./rtconv.bash; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             COMP_LINE=\"${{COMP_WORDS[*]}}\"; COMP_POINT=${{#COMP_LINE}}; _rtconv rtconv \"${{COMP_WORDS[-1]}}\" \
             \"${{COMP_WORDS[-2]}}\"; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = tool("bash").args(["-c", &program]).current_dir(&dir).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let subcommands = complete("rtconv ''");
    for name in ["convert", "stats", "batch", "info", "pack", "symbolize", "completions", "man"] {
        assert!(subcommands.lines().any(|l| l == name), "{name} not offered: {subcommands}");
    }
    let formats = complete("rtconv convert -f ''");
    for name in ["chrome", "folded", "flamegraph", "ftrace", "systrace"] {
        assert!(formats.lines().any(|l| l == name), "{name} not offered: {formats}");
    }
}

/// Regression: a failed write removed its output path, and `-o /dev/null` (whose
/// sync failed) deleted the device node. Only a regular file rtconv wrote is removed.
#[test]
fn a_failed_conversion_removes_only_a_regular_output_file() {
    use std::os::unix::fs::FileTypeExt;
    let dir = dump("cli-remove");
    let ok = rtconv_in(&dir, &["convert", "w.rtd", "-o", "/dev/null"]);
    assert!(ok.status.success(), "{}", text(&ok.stderr));
    assert!(std::fs::metadata("/dev/null").unwrap().file_type().is_char_device(), "/dev/null is still a device");
    std::fs::write(dir.join("bad.rtd"), b"RNGTRACE but nothing after").unwrap();
    // A regular file that could not be written whole is removed.
    let failed = rtconv_in(&dir, &["convert", "bad.rtd", "-o", "partial.json"]);
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    assert!(!dir.join("partial.json").exists());
    // A symbolic link named as the output stays.
    std::fs::write(dir.join("real.json"), b"").unwrap();
    std::os::unix::fs::symlink("real.json", dir.join("link.json")).unwrap();
    let failed = rtconv_in(&dir, &["convert", "bad.rtd", "-o", "link.json"]);
    assert_eq!(failed.status.code(), Some(1));
    assert!(std::fs::symlink_metadata(dir.join("link.json")).unwrap().file_type().is_symlink());
    assert!(dir.join("real.json").exists());
}
