//! A writer that counts what passes through it.

use std::io::{self, Write};

/// Counts the bytes written through it to `out` (before any compression `out` does).
pub struct Counted<'o> {
    /// Where the bytes go.
    pub out: &'o mut dyn Write,
    /// Bytes written so far.
    pub bytes: u64,
}

impl<'o> Counted<'o> {
    /// A count from 0 of what is written to `out`.
    pub fn new(out: &'o mut dyn Write) -> Self {
        Counted { out, bytes: 0 }
    }
}

impl Write for Counted<'_> {
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
