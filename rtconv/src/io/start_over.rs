//! Outputs that can be started over: what a conversion within a budget writes every span to
//! first, where a sample says they fit, and starts again where they do not
//! ([`crate::convert::convert_within`]).

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};

/// A writer that can discard everything written to it and start again.
pub trait StartOver: Write {
    /// Whether [`start_over`](Self::start_over) can start the output over (a pipe cannot).
    fn can_start_over(&self) -> bool;

    /// Discards everything written so far: the next byte written is the output's first.
    fn start_over(&mut self) -> io::Result<()>;
}

impl StartOver for Vec<u8> {
    fn can_start_over(&self) -> bool {
        true
    }

    fn start_over(&mut self) -> io::Result<()> {
        self.clear();
        Ok(())
    }
}

impl StartOver for File {
    /// A regular file can (not a device or a FIFO, which does not seek).
    fn can_start_over(&self) -> bool {
        self.metadata().is_ok_and(|m| m.is_file())
    }

    fn start_over(&mut self) -> io::Result<()> {
        self.set_len(0)?;
        self.seek(SeekFrom::Start(0)).map(|_| ())
    }
}

impl<W: StartOver> StartOver for BufWriter<W> {
    fn can_start_over(&self) -> bool {
        self.get_ref().can_start_over()
    }

    /// What is buffered is written first, then discarded with the rest.
    fn start_over(&mut self) -> io::Result<()> {
        self.flush()?;
        self.get_mut().start_over()
    }
}

impl<R: StartOver + ?Sized> StartOver for &mut R {
    fn can_start_over(&self) -> bool {
        (**self).can_start_over()
    }

    fn start_over(&mut self) -> io::Result<()> {
        (**self).start_over()
    }
}

/// A writer that cannot start over (standard output, a pipe), as a [`StartOver`] that says so.
pub struct Once<W>(pub W);

impl<W: Write> Write for Once<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<W: Write> StartOver for Once<W> {
    fn can_start_over(&self) -> bool {
        false
    }

    fn start_over(&mut self) -> io::Result<()> {
        Err(io::Error::new(io::ErrorKind::Unsupported, "this output cannot be started over"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_written_through_a_buffer_starts_over_empty() {
        let dir = std::env::temp_dir().join(format!("rtconv-start-over-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("out");
        let mut out =
            BufWriter::new(File::options().read(true).write(true).create(true).truncate(true).open(&path).unwrap());
        assert!(out.can_start_over());
        out.write_all(&[b'x'; 100_000]).unwrap();
        out.write_all(b"buffered").unwrap();
        out.start_over().unwrap();
        out.write_all(b"again").unwrap();
        out.flush().unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"again");
        std::fs::remove_dir_all(&dir).unwrap();
        // A device does not start over.
        assert!(!File::options().write(true).open("/dev/null").unwrap().can_start_over());
        let mut once = Once(Vec::new());
        assert!(!once.can_start_over() && once.start_over().is_err());
    }
}
