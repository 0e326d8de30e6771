//! Writes the hostile corpus (the end-to-end tests' `shapes`) into a folder, to
//! try a build of rtconv on it by hand:
//!
//! ```text
//! cargo run --release -p ringtrace-tests --example hostile-corpus -- DIR [SEED.rtd] [--small]
//! ```
//!
//! `SEED.rtd` is the real dump the archives carry (default: a small synthetic
//! one); `--small` writes the shapes at the sizes the tests use instead of the
//! sizes issue 14 reported. Each file is printed with what it is.

#[path = "../tests/shapes.rs"]
mod shapes;

use shapes::{Scale, many_keys, write_corpus};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let small = args.iter().any(|a| a == "--small");
    let paths: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let Some(dir) = paths.first() else {
        eprintln!("usage: hostile-corpus DIR [SEED.rtd] [--small]");
        std::process::exit(2);
    };
    let seed = match paths.get(1) {
        Some(path) => std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}")),
        None => many_keys(2, 100),
    };
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    let scale = if small { Scale::SMALL } else { Scale::REPORTED };
    for (path, what) in write_corpus(std::path::Path::new(dir), &seed, scale) {
        println!("{}\t{what}", path.display());
    }
}
