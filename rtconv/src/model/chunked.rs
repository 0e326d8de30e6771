//! A streamed ring's records: its chunks, each still in the file's bytes,
//! read as one sequence (see FORMAT.md, "Stream chunks").

use ringtrace_format::Record;
use ringtrace_format::read::{RecordRef, Records};

/// One chunk's records and where they fall in the sequence.
#[derive(Debug)]
struct Part<'a> {
    /// Index of its first record.
    start: usize,
    /// Index past its last record.
    end: usize,
    records: Records<'a>,
}

/// A ring's records spread over chunk sections, in order.
#[derive(Debug, Default)]
pub(crate) struct ChunkedRecords<'a> {
    parts: Vec<Part<'a>>,
    len: usize,
    /// Per block of 2^[`BLOCK_SHIFT`] records, the part holding the block's first
    /// record: a record's part is found from its block's in a step or two,
    /// not by a search over every part (a stream has hundreds to thousands,
    /// and the start-order decoder reads every record out of order).
    blocks: Vec<u32>,
    /// The blocks are not kept (too many parts): parts are searched.
    searched: bool,
}

/// Log2 of the records per entry of [`ChunkedRecords::blocks`].
const BLOCK_SHIFT: u32 = 6;

impl<'a> ChunkedRecords<'a> {
    /// Appends the next chunk's records.
    pub fn push(&mut self, records: Records<'a>) {
        if records.is_empty() {
            return;
        }
        let number = self.parts.len();
        let start = self.len;
        self.len += records.len();
        self.parts.push(Part { start, end: self.len, records });
        // The blocks not yet indexed start in this part. (More than 2^32 parts — 96 GiB of
        // chunks — are searched instead.)
        match u32::try_from(number) {
            Ok(number) if !self.searched => self.blocks.resize(self.len.div_ceil(1 << BLOCK_SHIFT), number),
            _ => self.searched = true,
        }
    }

    /// The part holding record `index`, if `index` is in range.
    #[inline(always)]
    fn part_of(&self, index: usize) -> Option<&Part<'a>> {
        let first = match self.blocks.get(index >> BLOCK_SHIFT) {
            Some(&first) if !self.searched => first as usize,
            _ => return self.searched_part_of(index),
        };
        // Parts are in order and cover every index below `len`: the walk ends at the holder
        // (or past the last part, for an index out of range).
        let mut i = first;
        loop {
            let part = self.parts.get(i)?;
            if index < part.end {
                return Some(part);
            }
            i += 1;
        }
    }

    #[cold]
    fn searched_part_of(&self, index: usize) -> Option<&Part<'a>> {
        let i = self.parts.partition_point(|p| p.end <= index);
        self.parts.get(i).filter(|p| p.start <= index)
    }

    /// How many records there are.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The record at `index`.
    #[inline(always)]
    pub fn get(&self, index: usize) -> Option<Record> {
        self.locate(index).map(RecordRef::record)
    }

    /// Where record `index` lies.
    #[inline(always)]
    pub fn locate(&self, index: usize) -> Option<RecordRef<'a>> {
        let part = self.part_of(index)?;
        part.records.locate(index - part.start)
    }

    /// Every record, oldest first, or (`newest_first`) newest first.
    #[inline]
    #[allow(clippy::redundant_closure)] // `&mut f` is what was not inlined
    pub fn for_each(&self, newest_first: bool, mut f: impl FnMut(Record)) {
        // Each part's loop calls `f` itself: through `&mut f` handed on, the
        // call was not always inlined (a call per record).
        if newest_first {
            for part in self.parts.iter().rev() {
                part.records.iter().rev().for_each(|r| f(r));
            }
        } else {
            for part in &self.parts {
                part.records.iter().for_each(|r| f(r));
            }
        }
    }

    /// Starts loading records `first..=last` into the cache. A hint, so
    /// the part is the one the index names for the block of `first`,
    /// without the walk to a later one, and the address is not checked:
    /// prefetching never faults.
    #[inline(always)]
    pub fn prefetch(&self, first: usize, last: usize) {
        if let Some(part) = self.blocks.get(first >> BLOCK_SHIFT).and_then(|&p| self.parts.get(p as usize)) {
            super::prefetch::records(&part.records, first.wrapping_sub(part.start), last.wrapping_sub(part.start));
        }
    }
}

#[cfg(test)]
mod tests {
    use ringtrace_format::{Record, RingInfo};

    use super::super::test_dumps::{XorShift, writer};
    use super::super::trace::RecordSource;

    #[test]
    fn every_record_is_found_in_its_chunk() {
        // Chunks of one record (many in a block of the index), of a few, and of more than a block.
        let mut rng = XorShift(7);
        let mut w = writer(1 << 40);
        let info = RingInfo { tid: 1, capacity: 1 << 20, written: 0, dropped: 0, aux: 0, flags: 0, name: b"t" };
        let mut all = Vec::new();
        for chunk in 0..400 {
            let len = match chunk % 3 {
                0 => 1,
                1 => 1 + rng.below(10) as usize,
                _ => 1 + rng.below(300) as usize,
            };
            let first = all.len() as u64;
            let records: Vec<Record> =
                (0..len as u64).map(|i| Record { key: 100 + first + i, enter: first + i, exit: first + i }).collect();
            all.extend_from_slice(&records);
            w.ring_chunk(&RingInfo { written: all.len() as u64, ..info }, 9, first, &records, &[]).unwrap();
        }
        let bytes = w.finish().unwrap().0;
        let trace = super::super::decode("t.rtd".as_ref(), &bytes).unwrap();
        let RecordSource::Chunks(chunks) = &trace.threads[0].records else { panic!("not read as chunks") };
        assert_eq!(chunks.len(), all.len());
        for (i, r) in all.iter().enumerate() {
            assert_eq!(chunks.get(i), Some(*r), "record {i}");
            chunks.prefetch(i, i);
        }
        assert_eq!(chunks.get(all.len()), None);
        assert_eq!(chunks.get(all.len() + 1000), None);
    }
}
