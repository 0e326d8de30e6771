//! `rtconv convert` and `stats` of a live capture: a wire stream from a TCP
//! socket (`tcp://HOST:PORT`: a probe's RTT server, QEMU's `-serial tcp:`), from
//! standard input (`-`), or from a file that is still growing (`--follow`).
//!
//! The bytes are read on a thread of their own and handed over a channel, so
//! the conversion writes a part at least every [`PART_EVERY`] while bytes
//! come, and stops at once on Ctrl-C (SIGINT), when the stream ends (every
//! track's end frame), or when the source closes — leaving complete outputs
//! and saying what was received and lost.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rtconv::convert::{Format, writes_parts};
use rtconv::live::Live;
use rtconv::model::Filter;
use rtconv::symbolize;

use super::output::{self, Sink};
use super::{diag, exit};

/// How often a part is written while bytes come.
const PART_EVERY: Duration = Duration::from_millis(250);
/// How long a wait for bytes lasts before Ctrl-C is looked at again.
const TICK: Duration = Duration::from_millis(50);
/// How long a followed file is left before it is read again at its end.
const FOLLOW_EVERY: Duration = Duration::from_millis(50);

/// How the summary says the user stopped the capture.
const INTERRUPTED_BY_USER: &str = "interrupted (Ctrl-C)";

/// Set by the SIGINT handler.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Where a live capture comes from.
enum Source {
    Tcp(String),
    Stdin,
    Follow(PathBuf),
}

/// The live source `dumps` and `follow` name, if they name one: `tcp://HOST:PORT`, `-`, or
/// with `follow` a file. `Err`: a usage error.
pub fn source_of(dumps: &[PathBuf], follow: bool) -> Result<Option<PathBuf>, String> {
    let live = |p: &PathBuf| p.as_os_str() == "-" || p.to_str().is_some_and(|s| s.starts_with("tcp://"));
    match dumps {
        [one] if follow || live(one) => Ok(Some(one.clone())),
        _ if follow => Err("--follow reads one growing stream file: give one".into()),
        _ if dumps.iter().any(live) => Err("a live capture (`-` or tcp://HOST:PORT) is read alone".into()),
        _ => Ok(None),
    }
}

/// Converts the live capture `from` into `format`, to `output` or stdout.
pub fn run(
    from: &Path,
    follow: bool,
    format: Format,
    output: Option<&Path>,
    opts: symbolize::Options,
    filter: &Filter,
) -> ExitCode {
    let source = match from.to_str() {
        Some("-") if !follow => Source::Stdin,
        Some(s) if s.starts_with("tcp://") => Source::Tcp(s["tcp://".len()..].to_string()),
        _ => Source::Follow(from.to_path_buf()),
    };
    let bytes = match start(source) {
        Ok(bytes) => bytes,
        Err(e) => {
            diag::error(&format!("{}: {e}", from.display()));
            return ExitCode::FAILURE;
        }
    };
    // A part is flushed to the file as it is written; a format written at the end goes to
    // its file when complete, as every other output does.
    let mut out: Box<dyn Write> = match output::file(output) {
        // (A `.gz` name is compressed by the sink, its parts complete at the end.)
        Some(path) if writes_parts(format) && path.extension().is_none_or(|e| e != "gz") => {
            match create_in_place(path) {
                Ok(f) => Box::new(std::io::BufWriter::with_capacity(1 << 16, f)),
                Err(e) => return output::cannot_create(output, &e),
            }
        }
        _ => match Sink::open_as(output, format != Format::Pprof) {
            Ok(sink) => Box::new(FinishOnDrop(Some(sink))),
            Err(e) => return output::cannot_create(output, &e),
        },
    };
    // SAFETY: `on_interrupt` only stores to an atomic, which is async-signal-safe; SA_RESETHAND
    // gives a second Ctrl-C its default action, so a stuck run can still be stopped.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_interrupt as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESETHAND;
        libc::sigaction(libc::SIGINT, &action, std::ptr::null_mut());
    }
    let mut live = Live::new(from.to_path_buf(), format, &opts, filter);
    let mut last_part = Instant::now();
    let how = loop {
        if INTERRUPTED.load(Ordering::Relaxed) {
            break INTERRUPTED_BY_USER;
        }
        match bytes.recv_timeout(TICK) {
            Ok(chunk) => live.feed(&chunk),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break "the source closed",
        }
        if live.ended() {
            break "the stream ended";
        }
        if last_part.elapsed() >= PART_EVERY {
            if let Err(e) = live.flush(&mut out) {
                return failed(from, output, &e);
            }
            last_part = Instant::now();
        }
    };
    let summary = live.summary();
    let report = match live
        .finish(how == INTERRUPTED_BY_USER, &mut out)
        .and_then(|r| out.flush().map(|()| r).map_err(rtconv::convert::ConvertError::Output))
    {
        Ok(report) => report,
        Err(e) => return failed(from, output, &e),
    };
    drop(out);
    for d in &report.diagnostics {
        diag::print(d);
    }
    eprintln!("rtconv: {}: {how}: {summary} -> {}", from.display(), output::name(output));
    if report.degraded() { ExitCode::from(exit::DEGRADED) } else { ExitCode::SUCCESS }
}

fn failed(from: &Path, output: Option<&Path>, e: &rtconv::convert::ConvertError) -> ExitCode {
    match e {
        rtconv::convert::ConvertError::Output(io) => output::write_failed(io, &output::name(output)),
        e => {
            diag::error(&format!("{} (live): {e}", from.display()));
            ExitCode::FAILURE
        }
    }
}

/// Creates the file a live output grows in, at `path`: as every output, a symbolic link is
/// followed and a file there is replaced, never written through (a hard link to it elsewhere
/// keeps its bytes); a device or FIFO is written to.
fn create_in_place(path: &Path) -> std::io::Result<std::fs::File> {
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let target = if is_link { std::fs::canonicalize(path)? } else { path.to_path_buf() };
    if std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_file()) {
        std::fs::remove_file(&target)?;
    }
    std::fs::File::create(target)
}

/// A [`Sink`] completed (put in place) when the conversion is done with it.
struct FinishOnDrop(Option<Sink>);

impl Write for FinishOnDrop {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.as_mut().map_or(Ok(buf.len()), |s| s.write(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for FinishOnDrop {
    fn drop(&mut self) {
        if let Some(sink) = self.0.take()
            && let Err(e) = sink.finish()
            && e.kind() != std::io::ErrorKind::BrokenPipe
        {
            diag::error(&format!("writing the output: {e}"));
        }
    }
}

/// Starts reading `source` on a thread of its own; its bytes come over the channel, which
/// closes when the source does.
fn start(source: Source) -> std::io::Result<mpsc::Receiver<Vec<u8>>> {
    let (tx, rx) = mpsc::channel();
    let reader: Box<dyn Read + Send> = match &source {
        Source::Tcp(address) => Box::new(std::net::TcpStream::connect(address.as_str()).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot connect: {e} (is the probe's RTT server or the serial bridge listening?)"),
            )
        })?),
        Source::Stdin => Box::new(std::io::stdin()),
        Source::Follow(path) => {
            Box::new(std::fs::File::open(path).map_err(|e| std::io::Error::new(e.kind(), format!("cannot read: {e}")))?)
        }
    };
    let follow = matches!(source, Source::Follow(_));
    std::thread::spawn(move || pump(reader, follow, &tx));
    Ok(rx)
}

/// Sends what `reader` gives until it ends (a followed file: never; it is read again at its end).
fn pump(mut reader: Box<dyn Read + Send>, follow: bool, tx: &mpsc::Sender<Vec<u8>>) {
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match reader.read(&mut buf) {
            Ok(0) if follow => std::thread::sleep(FOLLOW_EVERY),
            Ok(0) => return,
            Ok(n) => {
                if tx.send(buf[..n].to_vec()).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                diag::error(&format!("reading the live capture: {e}; what came before is converted"));
                return;
            }
        }
    }
}
