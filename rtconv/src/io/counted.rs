//! A writer that counts what passes through it.

use std::io::{self, Write};

/// Counts the bytes written through it to `out` (before any compression `out` does).
pub struct Counted<W> {
    /// Where the bytes go.
    pub out: W,
    /// Bytes written so far.
    pub bytes: u64,
}

impl<W: Write> Counted<W> {
    /// A count from 0 of what is written to `out`.
    pub fn new(out: W) -> Self {
        Counted { out, bytes: 0 }
    }
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.out.write_all(buf)?;
        self.bytes += buf.len() as u64;
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl<W: super::StartOver> super::StartOver for Counted<W> {
    fn can_start_over(&self) -> bool {
        self.out.can_start_over()
    }

    /// The count starts over too.
    fn start_over(&mut self) -> io::Result<()> {
        self.out.start_over()?;
        self.bytes = 0;
        Ok(())
    }
}
