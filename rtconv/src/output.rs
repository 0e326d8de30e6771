//! Where a command's output goes: stdout (no path, or `-`), a file, or a
//! gzip-compressed file (a path ending in `.gz`).
//!
//! A regular file that could not be written whole is removed, so a failed
//! conversion never leaves a truncated output behind; anything else named
//! as the output (a device such as `/dev/null`, a FIFO, a symbolic link) is
//! never removed.

use std::fs::File;
use std::io::{self, BufWriter, Stdout, Write};
use std::path::{Path, PathBuf};

use flate2::write::GzEncoder;

/// An open output. Call [`Output::finish`] to complete it.
pub enum Output {
    /// Standard output.
    Stdout(BufWriter<Stdout>),
    /// A plain file.
    File(PathBuf, BufWriter<File>),
    /// A gzip-compressed file.
    Gzip(PathBuf, GzEncoder<BufWriter<File>>),
}

/// The file an output path names: `None` for standard output (no path, or `-`).
pub fn file(path: Option<&Path>) -> Option<&Path> {
    path.filter(|p| p.as_os_str() != "-")
}

impl Output {
    /// Opens stdout (`None` or `-`) or creates the file at `path`, compressed when it ends in `.gz`.
    pub fn open(path: Option<&Path>) -> io::Result<Self> {
        let Some(path) = file(path) else {
            return Ok(Output::Stdout(BufWriter::with_capacity(1 << 16, io::stdout())));
        };
        let file = BufWriter::with_capacity(1 << 16, File::create(path)?);
        Ok(match path.extension().is_some_and(|e| e == "gz") {
            true => Output::Gzip(path.into(), GzEncoder::new(file, flate2::Compression::default())),
            false => Output::File(path.into(), file),
        })
    }

    /// The file written, or `None` for stdout.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Output::Stdout(_) => None,
            Output::File(path, _) | Output::Gzip(path, _) => Some(path),
        }
    }

    /// Flushes everything (and writes the gzip trailer). On failure a file is removed.
    pub fn finish(self) -> io::Result<()> {
        let (path, result) = match self {
            Output::Stdout(mut w) => return w.flush(),
            Output::File(path, mut w) => {
                let result = w.flush();
                (path, result)
            }
            Output::Gzip(path, w) => {
                let result = w.finish().and_then(|mut w| w.flush());
                (path, result)
            }
        };
        if result.is_err() {
            remove_partial(&path);
        }
        result
    }

    /// Gives up on the output: a regular file is removed.
    pub fn discard(self) {
        if let Some(path) = self.path().map(Path::to_path_buf) {
            drop(self);
            remove_partial(&path);
        }
    }
}

/// Removes a partly written output if it is a regular file (not a device, FIFO or link).
fn remove_partial(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file()) {
        let _ = std::fs::remove_file(path);
    }
}

impl Output {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Output::Stdout(w) => w,
            Output::File(_, w) => w,
            Output::Gzip(_, w) => w,
        }
    }
}

impl Write for Output {
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
