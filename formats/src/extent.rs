//! Where a dump ends in a stream: a reader that gets a dump from a pipe or
//! an archive entry reads exactly up to its end marker, a section at a time,
//! and never by a length it has not checked against the data that arrived.
//!
//! Only the framing is read (file header, then each section's kind and
//! length); nothing is validated beyond it: [`Dump::parse`](crate::Dump::parse)
//! does that once the bytes are in.
//!
//! ```
//! use ringtrace_format::extent::{DumpExtent, Step};
//!
//! # fn read_more(_: &mut Vec<u8>, _: u64) -> bool { false }
//! let mut bytes = Vec::new();
//! let mut extent = DumpExtent::default();
//! loop {
//!     match extent.step(&bytes) {
//!         // Read until `bytes` holds `total` bytes (or the stream ends) and step again.
//!         Step::Need(total) => if !read_more(&mut bytes, total) { break },
//!         // The dump is `bytes[..len]`; anything after it is not part of it.
//!         Step::End(len) => { bytes.truncate(len); break }
//!     }
//! }
//! ```

use crate::layout::{ENDIAN_PROBE, FILE_HEADER_SIZE, MAGIC, SECTION_ALIGN, SECTION_CRC_SIZE, SECTION_HEADER_SIZE};
use crate::{Endian, SectionKind};

/// What a stream reader does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Read until the buffer holds this many bytes in all (or the stream
    /// ends: the dump is then cut short, and the reader says so), then step again.
    Need(u64),
    /// The dump is the first this many bytes: the end of its end marker (and
    /// its padding), or
    /// as far as its framing could be read (a file that is not a dump, a bad
    /// header), which is enough for the reader to report what is wrong.
    End(usize),
}

/// The framing read so far. See the [module docs](self).
#[derive(Clone, Debug, Default)]
pub struct DumpExtent {
    /// Byte order and where the next section starts, once the file header was read.
    next: Option<(Endian, usize)>,
}

impl DumpExtent {
    /// The next step, given the bytes read so far (the same buffer, grown, each call).
    pub fn step(&mut self, bytes: &[u8]) -> Step {
        let (endian, mut pos) = match self.next {
            Some(next) => next,
            None => {
                let Some(header) = bytes.first_chunk::<FILE_HEADER_SIZE>() else {
                    return Step::Need(FILE_HEADER_SIZE as u64);
                };
                if header[..8] != MAGIC {
                    return Step::End(FILE_HEADER_SIZE);
                }
                let probe = [header[8], header[9], header[10], header[11]];
                let endian = match (u32::from_le_bytes(probe), u32::from_be_bytes(probe)) {
                    (ENDIAN_PROBE, _) => Endian::Little,
                    (_, ENDIAN_PROBE) => Endian::Big,
                    _ => return Step::End(FILE_HEADER_SIZE),
                };
                let header_size = usize::from(endian.u16([header[18], header[19]]));
                if header_size < FILE_HEADER_SIZE || !header_size.is_multiple_of(SECTION_ALIGN) {
                    return Step::End(FILE_HEADER_SIZE);
                }
                (endian, header_size)
            }
        };
        // Past every section that is in whole, to the first one that is not.
        loop {
            self.next = Some((endian, pos));
            let Some(header) = bytes.get(pos..).and_then(|b| b.first_chunk::<SECTION_HEADER_SIZE>()) else {
                return Step::Need(pos as u64 + SECTION_HEADER_SIZE as u64);
            };
            let kind = SectionKind::from_code(endian.u32([header[0], header[1], header[2], header[3]]));
            let len = endian.u64_at(header, 8);
            let end = (pos as u64)
                .saturating_add(SECTION_HEADER_SIZE as u64)
                .saturating_add(len)
                .saturating_add(SECTION_CRC_SIZE as u64);
            // Sections, the end marker too, are padded to the alignment.
            let padded = end.saturating_add(SECTION_ALIGN as u64 - 1) / SECTION_ALIGN as u64 * SECTION_ALIGN as u64;
            match usize::try_from(padded) {
                Ok(next) if next <= bytes.len() && kind == SectionKind::End => return Step::End(next),
                Ok(next) if next <= bytes.len() => pos = next,
                // A stream that ends inside the padding is the reader's to report (or accept).
                _ => return Step::Need(padded),
            }
        }
    }
}
