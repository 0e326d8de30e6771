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
    /// Per block of 2^[`BLOCK_SHIFT`] records, the part holding the block's first
    /// record: a record's part is found from its block's in a step or two,
    /// not by a search over every part (a stream has thousands, and a span
    /// decoded out of order looks three or four records up).
    blocks: Vec<u32>,
    /// The blocks are not kept (too many parts): parts are searched.
    searched: bool,
}

/// Log2 of the records per entry of [`ChunkedRecords::blocks`].
const BLOCK_SHIFT: u32 = 6;

impl<'a> ChunkedRecords<'a> {
    /// Appends the next chunk's records.
    pub fn push(&mut self, part: Records<'a>) {
        if part.is_empty() {
            return;
        }
        let number = self.parts.len();
        self.starts.push(self.len);
        self.len += part.len();
        self.parts.push(part);
        // The blocks not yet indexed start in this part. (More than 2^32 parts — 96 GiB of
        // chunks — are searched instead.)
        match u32::try_from(number) {
            Ok(number) if !self.searched => self.blocks.resize(self.len.div_ceil(1 << BLOCK_SHIFT), number),
            _ => self.searched = true,
        }
    }

    /// The part holding record `index` (if `index` is in range).
    #[inline(always)]
    fn part_of(&self, index: usize) -> Option<usize> {
        if index >= self.len {
            return None;
        }
        let first = match self.blocks.get(index >> BLOCK_SHIFT) {
            Some(&first) if !self.searched => first,
            _ => return self.starts.partition_point(|&s| s <= index).checked_sub(1),
        };
        let mut part = first as usize;
        while self.starts.get(part + 1).is_some_and(|&next| next <= index) {
            part += 1;
        }
        Some(part)
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The record at `index`.
    #[inline]
    pub fn get(&self, index: usize) -> Option<Record> {
        let part = self.part_of(index)?;
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
        let Some(part) = self.part_of(first) else { return };
        let base = self.starts[part];
        if let Some(bytes) = self.parts.get(part).and_then(|p| p.bytes_between(first - base, last - base)) {
            super::prefetch::range(bytes);
        }
    }
}
