//! Where a command's output goes: stdout (no path, or `-`), a file, or a
//! gzip-compressed file (a path ending in `.gz`).
//!
//! A file is written under a temporary name beside it and renamed into
//! place when complete ([`AtomicFile`]), so a failed conversion or a full
//! disk never leaves a partial output, and a hard link at the path is
//! replaced rather than written through. A symbolic link is followed to the
//! file it names, which is replaced the same way. A path that names a device
//! or a FIFO (`/dev/null`, `/dev/stdout` on a pipe) is written to directly.

use std::fs::File;
use std::io::{self, BufWriter, Stdout, Write};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::ExitCode;

use flate2::write::GzEncoder;
use rtconv::io::{AtomicFile, StartOver};

use super::diag;

/// An open output. Call [`Sink::finish`] to complete it.
pub enum Sink {
    /// Standard output.
    Stdout(BufWriter<Stdout>),
    /// A device or FIFO the user named.
    Device(BufWriter<File>),
    /// A plain file.
    File(BufWriter<AtomicFile>),
    /// A gzip-compressed file.
    Gzip(GzEncoder<BufWriter<AtomicFile>>),
}

/// The file an output path names: `None` for standard output (no path, or `-`).
pub fn file(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| p.as_os_str() != "-")
}

impl Sink {
    /// Opens stdout (`None` or `-`) or creates the file at `path`, compressed when it ends in `.gz`.
    pub fn open(path: Option<&Path>) -> io::Result<Self> {
        Self::open_as(path, true)
    }

    /// As [`open`](Self::open), compressing a `.gz` file only when `gzip_by_name`
    /// (a format that is compressed already, pprof's, is not compressed twice).
    pub fn open_as(path: Option<&Path>, gzip_by_name: bool) -> io::Result<Self> {
        let Some(path) = file(path) else {
            return Ok(Sink::Stdout(BufWriter::with_capacity(1 << 16, io::stdout())));
        };
        let special = std::fs::metadata(path).is_ok_and(|m| {
            let kind = m.file_type();
            kind.is_char_device() || kind.is_block_device() || kind.is_fifo() || kind.is_socket()
        });
        if special {
            return Ok(Sink::Device(BufWriter::with_capacity(1 << 16, File::create(path)?)));
        }
        // A symbolic link you name is followed: the file it points to is replaced, the link
        // stays (so `-o /dev/stdout` or a link into another directory writes where it points).
        let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
        let target = if is_link { std::fs::canonicalize(path)? } else { path.to_path_buf() };
        let file = BufWriter::with_capacity(1 << 16, AtomicFile::create(&target)?);
        Ok(match gzip_by_name && path.extension().is_some_and(|e| e == "gz") {
            true => Sink::Gzip(GzEncoder::new(file, flate2::Compression::default())),
            false => Sink::File(file),
        })
    }

    /// Flushes everything (and writes the gzip trailer) and puts the file in
    /// place. On failure nothing is left under the output's name.
    pub fn finish(self) -> io::Result<()> {
        match self {
            Sink::Stdout(mut w) => w.flush(),
            Sink::Device(mut w) => w.flush(),
            Sink::File(w) => w.into_inner().map_err(io::IntoInnerError::into_error)?.commit(),
            Sink::Gzip(w) => w.finish()?.into_inner().map_err(io::IntoInnerError::into_error)?.commit(),
        }
    }

    /// Gives up on the output: a file is not put in place.
    pub fn discard(self) {
        drop(self);
    }
}

impl Sink {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Sink::Stdout(w) => w,
            Sink::Device(w) => w,
            Sink::File(w) => w,
            Sink::Gzip(w) => w,
        }
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.writer().write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.writer().write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }
}

/// A file written under a temporary name starts over; standard output, a device or a FIFO, and
/// a compressed file do not.
impl StartOver for Sink {
    fn can_start_over(&self) -> bool {
        matches!(self, Sink::File(_))
    }

    fn start_over(&mut self) -> io::Result<()> {
        match self {
            Sink::File(w) => w.start_over(),
            _ => Err(io::Error::new(io::ErrorKind::Unsupported, "this output cannot be started over")),
        }
    }
}

/// How messages name an output: its path, or `stdout`.
pub fn name(path: Option<&Path>) -> String {
    match file(path) {
        Some(p) => p.display().to_string(),
        None => "stdout".to_string(),
    }
}

/// A write to `what` that failed: a closed pipe ends quietly (`rtconv … | head`), anything
/// else is one error line.
pub fn write_failed(e: &io::Error, what: &str) -> ExitCode {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return ExitCode::SUCCESS;
    }
    diag::error(&format!("writing {what}: {e}"));
    ExitCode::FAILURE
}

/// An output that could not be created: one error line.
pub fn cannot_create(path: Option<&Path>, e: &io::Error) -> ExitCode {
    diag::error(&format!("cannot create {}: {e}", name(path)));
    ExitCode::FAILURE
}
