//! Dump triggers, one per run: `triggers exit|panic|signal PATH`.
//!
//! Each run records 3 × `span!("work")`, each around one `exported_work`
//! (`span!()`, an exported symbol), on the main thread, then:
//! - `exit`: returns from main; the `dump_on_exit` guard writes the dump.
//! - `panic`: panics; the `dump_on_panic` hook writes the dump (exit status 101).
//! - `signal`: sends itself SIGUSR1; the `dump_on_signal` thread writes the
//!   dump; main waits for the file (at most 10 s) and exits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

fn work() {
    for _ in 0..3 {
        let _span = ringtrace::span!("work");
        exported_work();
    }
}

/// In the dynamic symbol table, so `dladdr` names its `span!()` at dump time.
#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn exported_work() {
    let _span = ringtrace::span!();
    std::hint::black_box(0);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(mode), Some(path)) = (args.next(), args.next().map(PathBuf::from)) else {
        eprintln!("usage: triggers exit|panic|signal PATH");
        std::process::exit(2);
    };
    match mode.as_str() {
        "exit" => {
            let _dump = ringtrace::dump_on_exit(&path);
            work();
        }
        "panic" => {
            ringtrace::dump_on_panic(&path);
            work();
            panic!("deliberate panic after 3 spans");
        }
        "signal" => {
            ringtrace::dump_on_signal(libc::SIGUSR1, &path).expect("signal handler installed");
            work();
            // SAFETY: raise has no preconditions; the handler only writes to a pipe.
            unsafe { libc::raise(libc::SIGUSR1) };
            let deadline = Instant::now() + Duration::from_secs(10);
            while !ringtrace_format_complete(&path) {
                assert!(Instant::now() < deadline, "no dump after SIGUSR1");
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        other => {
            eprintln!("triggers: unknown mode {other}");
            std::process::exit(2);
        }
    }
}

/// Whether the dump at `path` is complete: it ends with the end marker.
fn ringtrace_format_complete(path: &std::path::Path) -> bool {
    std::fs::read(path).is_ok_and(|b| b.len() >= 24 && b[b.len() - 24..b.len() - 20] == [0xff; 4])
}
