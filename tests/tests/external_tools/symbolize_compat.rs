//! `rtconv symbolize` against llvm-symbolizer: its JSON and module lines, offsets and sections.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use ringtrace_tests::{must_run, scratch, spread_addresses as addresses, symbolize_subject as subject, tool};

use crate::symbolize_compat::{differences, ours, without_discriminators};

/// (function, file, line) of every frame of every answer in llvm-symbolizer's JSON lines.
fn json_frames(text: &str) -> Vec<Vec<(String, String, u64)>> {
    text.lines()
        .flat_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v {
                serde_json::Value::Array(a) => a,
                one => vec![one],
            }
        })
        .map(|a| {
            a["Symbol"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    let function = s["FunctionName"].as_str().unwrap();
                    // llvm-symbolizer names an address in no function by the nearest symbol before it.
                    let function = if s["FileName"] == "" { "" } else { function };
                    (function.to_string(), s["FileName"].as_str().unwrap().to_string(), s["Line"].as_u64().unwrap())
                })
                .collect()
        })
        .collect()
}

#[test]
fn json_and_module_lines_answer_as_llvm_symbolizer_does() {
    let dir = scratch("symbolize-json");
    let exe = subject(&dir);
    let hex = addresses(&exe, 200);
    // Addresses as arguments: one JSON array.
    let theirs = must_run(
        tool("llvm-symbolizer")
            .args(["--no-demangle", "--output-style=JSON"])
            .arg(format!("--obj={}", exe.display()))
            .args(&hex),
    );
    let ours = must_run(
        ringtrace_tests::rtconv().args(["symbolize", "-i", "--output-style=JSON", "--obj"]).arg(&exe).args(&hex),
    );
    let (o, t) = (json_frames(&ours), json_frames(&theirs));
    assert_eq!(o.len(), t.len());
    let differ: Vec<String> = o
        .iter()
        .zip(&t)
        .zip(&hex)
        .filter(|((a, b), _)| a != b)
        .map(|((a, b), h)| format!("{h}: {a:?} | {b:?}"))
        .collect();
    println!("JSON: {} of {} differ", differ.len(), hex.len());
    println!(
        "{}",
        differ.iter().take(5).map(|d| d.chars().take(300).collect::<String>()).collect::<Vec<_>>().join("\n")
    );
    // "MODULE" ADDRESS lines on stdin, no --obj: one object per line.
    let lines: String = hex.iter().map(|h| format!("\"{}\" {h}\n", exe.display())).collect();
    let feed = |cmd: &mut Command| {
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
        child.stdin.take().unwrap().write_all(lines.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let theirs = feed(tool("llvm-symbolizer").args(["--no-demangle", "--output-style=JSON"]));
    let ours = feed(ringtrace_tests::rtconv().args(["symbolize", "-i", "--output-style=json"]));
    assert_eq!(json_frames(&ours).len(), hex.len());
    assert_eq!(json_frames(&ours), o, "the same answers from module lines as from --obj");
    assert_eq!(json_frames(&theirs), t);
}

#[test]
fn offsets_sections_and_a_stripped_binary_are_looked_up_as_the_references_do() {
    let dir = scratch("symbolize-offsets");
    let exe = subject(&dir);
    let hex = addresses(&exe, 50);
    let plain = ours(&["-f"], &exe, &hex);
    // --adjust-vma: the file looked up as if loaded 0x10000 higher (llvm-symbolizer's meaning).
    let moved: Vec<String> =
        hex.iter().map(|h| format!("{:#x}", u64::from_str_radix(&h[2..], 16).unwrap() + 0x10000)).collect();
    let adjusted = ours(&["-f", "--adjust-vma", "0x10000"], &exe, &moved);
    assert_eq!(adjusted, plain);
    let llvm = must_run(
        tool("llvm-symbolizer")
            .args(["--no-demangle", "--output-style=GNU", "--no-inlines", "--adjust-vma=0x10000", "-e"])
            .arg(&exe)
            .args(&moved),
    );
    assert!(
        differences(&adjusted, &without_discriminators(&drop_columns(&llvm))).len() * 100 <= hex.len() * 2 * 3,
        "{adjusted}\n---\n{llvm}"
    );
    // -j .text: addresses as offsets into the section, as GNU addr2line reads them.
    let objdump = must_run(tool("objdump").args(["-h"]).arg(&exe));
    let text = objdump.lines().find(|l| l.split_whitespace().nth(1) == Some(".text")).unwrap();
    let text_start = u64::from_str_radix(text.split_whitespace().nth(3).unwrap(), 16).unwrap();
    let offsets: Vec<String> = hex
        .iter()
        .map(|h| u64::from_str_radix(&h[2..], 16).unwrap())
        .filter(|&a| a >= text_start)
        .map(|a| format!("{:#x}", a - text_start))
        .collect();
    let absolute: Vec<String> =
        offsets.iter().map(|o| format!("{:#x}", u64::from_str_radix(&o[2..], 16).unwrap() + text_start)).collect();
    let gnu = |args: &[&str], bin: &Path, addresses: &[String]| {
        must_run(tool("addr2line").args(args).arg("-e").arg(bin).args(addresses))
    };
    assert_eq!(ours(&["-f", "-j", ".text"], &exe, &offsets), ours(&["-f"], &exe, &absolute));
    assert_eq!(gnu(&["-f", "-j", ".text"], &exe, &offsets), gnu(&["-f"], &exe, &absolute), "GNU reads -j so too");
    // A stripped binary with a .gnu_debuglink: both follow the link to the debug file beside it.
    let debug = dir.join("subject.debug");
    let stripped = dir.join("stripped");
    must_run(tool("objcopy").arg("--only-keep-debug").arg(&exe).arg(&debug));
    must_run(
        tool("objcopy")
            .arg("--strip-all")
            .arg(format!("--add-gnu-debuglink={}", debug.display()))
            .arg(&exe)
            .arg(&stripped),
    );
    assert_eq!(ours(&["-f"], &stripped, &hex), plain, "named from the debug file the link names");
    assert_eq!(gnu(&["-f"], &stripped, &hex), gnu(&["-f"], &exe, &hex), "GNU follows the link too");
}

/// llvm-symbolizer's GNU style keeps `:column`; GNU addr2line's has none.
fn drop_columns(text: &str) -> String {
    text.lines()
        .map(|l| match l.rsplitn(3, ':').collect::<Vec<_>>()[..] {
            [col, line, file]
                if col.bytes().all(|b| b.is_ascii_digit()) && line.bytes().all(|b| b.is_ascii_digit()) =>
            {
                if line == "0" { format!("{file}:?") } else { format!("{file}:{line}") }
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
