//! Symbolization speed against GNU addr2line, llvm-symbolizer, the addr2line
//! crate's CLI and blazecli, on the same addresses, in the same run.
//!
//! `cargo bench -p rtconv --bench symbolize`
//!
//! The subject is rtconv itself built with full DWARF (`--profile symbench`,
//! 43 MB). The addresses are 1,000 and 10,000 distinct addresses inside its
//! functions that have at least two inlined frames. Every tool is run as a
//! process per iteration, addresses on stdin (blazecli: as arguments), so
//! start-up and loading are counted for all alike. Peers not found (PATH, or
//! `ADDR2LINE_CRATE_CLI` / `BLAZECLI` for the two cargo-installed ones) are
//! skipped with a note. Before timing, each peer's innermost function name
//! is compared with rtconv's on every address and the agreement printed
//! (after demangling every tool's names the same way; llvm-symbolizer runs
//! with `--no-demangle`, since LLVM 14 demangles Rust names only partly).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use criterion::{Criterion, criterion_group};
use object::{Object, ObjectSymbol};

mod support;

/// Builds rtconv with full DWARF and the release rtconv that does the work.
fn build() -> (PathBuf, PathBuf) {
    let mut target = PathBuf::new();
    for profile in ["symbench", "release"] {
        target = support::cargo_build(&["-p", "rtconv", "--bin", "rtconv", "--profile", profile], "rtconv");
    }
    (target.join("symbench/rtconv"), target.join("release/rtconv"))
}

/// Distinct addresses inside the subject's functions with at least two inlined frames.
fn inline_addresses(subject: &Path, count: usize) -> Vec<u64> {
    let data = std::fs::read(subject).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut candidates: Vec<u64> = file
        .symbols()
        .filter(|s| s.kind() == object::SymbolKind::Text && s.size() > 0)
        .flat_map(|s| (s.address()..s.address() + s.size()).step_by(7))
        .collect();
    candidates.sort_unstable();
    candidates.dedup();
    // A fixed pseudo-random spread over the whole binary.
    let mut rng = ringtrace_format::test_util::XorShift(0x9e37_79b9_7f4a_7c15);
    let mut pick = Vec::new();
    while pick.len() < count * 3 && !candidates.is_empty() {
        pick.push(candidates.swap_remove(rng.below(candidates.len() as u64) as usize));
    }
    let dwarf_only = rtconv::symbolize::Options {
        order: Some(vec![rtconv::model::Source::Dwarf]),
        index: None,
        ..Default::default()
    };
    let (names, failures) = rtconv::symbolize::resolve_addresses(subject, &pick, &dwarf_only).unwrap();
    assert!(failures.is_empty(), "{failures:?}");
    let mut chosen: Vec<u64> = pick
        .into_iter()
        .zip(names)
        .filter(|(_, n)| n.as_ref().is_some_and(|n| n.inlined_into.len() >= 2))
        .map(|(a, _)| a)
        .take(count)
        .collect();
    assert_eq!(chosen.len(), count, "not enough addresses with inline frames");
    chosen.sort_unstable();
    chosen
}

struct Tool {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    /// Addresses as arguments instead of on stdin.
    in_args: bool,
}

impl Tool {
    fn run(&self, addresses: &[String]) -> String {
        let mut cmd = Command::new(&self.program);
        // Cold: rtconv's persistent symbol index off (its warm figures: benches/symbolize_peers.py).
        cmd.args(&self.args).env("RTCONV_SYMBOL_INDEX", "off").stdout(Stdio::piped()).stderr(Stdio::null());
        if self.in_args {
            cmd.args(addresses);
        }
        cmd.stdin(Stdio::piped());
        let mut child = cmd.spawn().expect("tool starts");
        let mut stdin = child.stdin.take().unwrap();
        let input = if self.in_args { String::new() } else { addresses.join("\n") + "\n" };
        let writer = std::thread::spawn(move || std::io::Write::write_all(&mut stdin, input.as_bytes()));
        let out = child.wait_with_output().expect("tool runs");
        writer.join().unwrap().ok();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The innermost function named for each address, in order.
    fn innermost(&self, output: &str, count: usize) -> Vec<String> {
        let strip = |n: &str| format!("{:#}", rustc_demangle::demangle(n.trim()));
        let names: Vec<String> = match self.name {
            // blazecli: "0xADDR: outer @ ..." then indented inlined frames, innermost last.
            "blazecli" => {
                let mut names = Vec::new();
                for line in output.lines() {
                    let frame = line.split(" @ ").next().unwrap_or("");
                    match frame.split_once(": ") {
                        Some((addr, name)) if addr.starts_with("0x") => names.push(strip(name)),
                        _ => {
                            if let Some(last) = names.last_mut() {
                                *last = strip(frame);
                            }
                        }
                    }
                }
                names
            }
            // llvm-symbolizer: blocks of (function, place) pairs separated by blank lines.
            "llvm-symbolizer" => output
                .split("\n\n")
                .filter(|b| !b.trim().is_empty())
                .map(|b| strip(b.lines().next().unwrap()))
                .collect(),
            // addr2line style with -a: "0x..." then (function, place) pairs.
            _ => {
                let lines: Vec<&str> = output.lines().collect();
                lines
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| l.starts_with("0x"))
                    .map(|(i, _)| strip(lines.get(i + 1).unwrap_or(&"??")))
                    .collect()
            }
        };
        assert_eq!(names.len(), count, "{} answered {} of {count} addresses", self.name, names.len());
        names
    }
}

struct Peer {
    name: &'static str,
    program: &'static str,
    /// A variable naming the program's path (for cargo-installed peers).
    env: Option<&'static str>,
    args: Vec<String>,
    in_args: bool,
}

fn find(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
}

fn bench(c: &mut Criterion) {
    let (subject, rtconv) = build();
    let subject_arg = subject.display().to_string();
    let mut tools = vec![Tool {
        name: "rtconv symbolize",
        program: rtconv,
        args: ["symbolize", "-a", "-f", "-i", "-C", "-e", &subject_arg].map(String::from).to_vec(),
        in_args: false,
    }];
    let a2l_args = || ["-a", "-f", "-i", "-C", "-e", &subject_arg].map(String::from).to_vec();
    // (name, program on PATH, variable naming its path instead, arguments, addresses as arguments)
    let peers = [
        Peer { name: "GNU addr2line -f -i -C", program: "addr2line", env: None, args: a2l_args(), in_args: false },
        Peer {
            name: "llvm-symbolizer",
            program: "llvm-symbolizer",
            env: None,
            // LLVM 14 demangles Rust names only partly (`_$LT$...$GT$::f::h0123...`); it runs
            // with --no-demangle and its names are demangled here, as everyone's are.
            args: vec!["--no-demangle".into(), format!("--obj={subject_arg}")],
            in_args: false,
        },
        Peer {
            name: "addr2line crate CLI",
            program: "addr2line",
            env: Some("ADDR2LINE_CRATE_CLI"),
            args: a2l_args(),
            in_args: false,
        },
        Peer {
            name: "blazecli",
            program: "blazecli",
            env: Some("BLAZECLI"),
            args: ["symbolize", "elf", "--path", &subject_arg].map(String::from).to_vec(),
            in_args: true,
        },
    ];
    for peer in peers {
        // Without its variable, "addr2line" on PATH would be GNU's, already measured.
        let found = match peer.env {
            Some(var) => std::env::var_os(var).map(PathBuf::from),
            None => find(peer.program),
        };
        match found {
            Some(program) => tools.push(Tool { name: peer.name, program, args: peer.args, in_args: peer.in_args }),
            None => eprintln!("symbolize bench: {} not found; skipped (set {})", peer.name, peer.env.unwrap_or("PATH")),
        }
    }
    for count in [1_000usize, 10_000] {
        let addresses: Vec<String> = inline_addresses(&subject, count).iter().map(|a| format!("{a:#x}")).collect();
        let ours = tools[0].innermost(&tools[0].run(&addresses), count);
        for tool in &tools[1..] {
            let theirs = tool.innermost(&tool.run(&addresses), count);
            let same = ours.iter().zip(&theirs).filter(|(a, b)| a == b).count();
            eprintln!(
                "symbolize bench: {count} addresses: {} names the innermost function as rtconv does on {same} ({:.2}%)",
                tool.name,
                same as f64 * 100.0 / count as f64
            );
        }
        let mut g = c.benchmark_group(format!("symbolize {count} inline addresses"));
        g.sample_size(10);
        for tool in &tools {
            g.bench_function(tool.name, |b| b.iter(|| tool.run(&addresses)));
        }
        g.finish();
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
