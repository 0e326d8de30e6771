//! A streamed ring's records: its chunks, each still in the file's bytes,
//! read as one sequence (see FORMAT.md, "Stream chunks").

use ringtrace_format::Record;
use ringtrace_format::read::Records;

/// A ring's records spread over chunk sections, in order.
#[derive(Debug, Default)]
pub(crate) struct ChunkedRecords<'a> {
    parts: Vec<Records<'a>>,
    /// Index of each part's first record; ascending.
    starts: Vec<usize>,
    len: usize,
}

impl<'a> ChunkedRecords<'a> {
    /// Appends the next chunk's records.
    pub fn push(&mut self, part: Records<'a>) {
        if part.is_empty() {
            return;
        }
        self.starts.push(self.len);
        self.len += part.len();
        self.parts.push(part);
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The record at `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<Record> {
        let part = self.starts.partition_point(|&s| s <= index).checked_sub(1)?;
        self.parts.get(part)?.get(index - self.starts[part])
    }

    /// Every record, oldest first, or (`newest_first`) newest first.
    #[inline]
    pub fn for_each(&self, newest_first: bool, mut f: impl FnMut(Record)) {
        if newest_first {
            self.parts.iter().rev().for_each(|p| p.iter().rev().for_each(&mut f));
        } else {
            self.parts.iter().for_each(|p| p.iter().for_each(&mut f));
        }
    }

    /// Starts loading records `first..=last` of one part into the cache (a
    /// range across parts is left alone: the walks read nearby records).
    pub fn prefetch(&self, first: usize, last: usize) {
        let Some(part) = self.starts.partition_point(|&s| s <= first).checked_sub(1) else { return };
        let base = self.starts[part];
        if let Some(bytes) = self.parts.get(part).and_then(|p| p.bytes_between(first - base, last - base)) {
            super::prefetch::range(bytes);
        }
    }
}
