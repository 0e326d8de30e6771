//! A row group's column of repeated strings as a Parquet column chunk,
//! encoded straight from the keys its rows hold: data pages of their keys
//! (RLE_DICTIONARY) as the rows come, then a dictionary page of the words
//! the rows used (PLAIN), which goes first, as the `parquet` crate's own
//! writer lays such a chunk out.
//!
//! The crate's writers take a string a row and hash each into their dictionary
//! and compare it for the statistics (half of an export's CPU, for eight such
//! columns); here each word is looked at once a row group.

use std::collections::HashMap;
use std::sync::Arc;

use parquet::basic::Encoding;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescPtr;

use super::chunk::{Finished, Packing, Pages, Zstd};
use super::rle;

/// A row group's column of repeated strings as its pages are encoded.
pub struct Chunk {
    pages: Pages,
    /// The words of the batches the row group's rows came in, each once.
    words: Vec<ByteArray>,
    index: HashMap<String, u32>,
    /// The last batch's words, and where each is in `words`: a dump's batches share them.
    last: Option<(Arc<[String]>, Vec<u32>)>,
    /// Per word of `words`: its place in the dictionary page, `u32::MAX` until a row has it.
    slot: Vec<u32>,
    /// The dictionary page's words (indices into `words`): those the rows have, in the order
    /// they first come.
    used: Vec<u32>,
    /// The page's keys into the dictionary page.
    values: Vec<u32>,
    /// A batch's keys mapped to the row group's words ([`page_of_batch`](Self::page_of_batch)).
    mapped: Vec<u32>,
    nulls: u64,
}

impl Chunk {
    /// The chunk of `descr`, compressed as `packing` says, written into `buffer`.
    pub fn new(descr: ColumnDescPtr, packing: Packing, buffer: Vec<u8>) -> Chunk {
        Chunk {
            pages: Pages::new(descr, packing, buffer),
            words: Vec::new(),
            index: HashMap::new(),
            last: None,
            slot: Vec::new(),
            used: Vec::new(),
            values: Vec::new(),
            mapped: Vec::new(),
            nulls: 0,
        }
    }

    /// The rows of its pages so far.
    pub fn rows(&self) -> usize {
        self.pages.rows()
    }

    /// Per word of a batch's `words`: its key in the row group's (what [`page`](Self::page) takes).
    pub fn keys_of(&mut self, words: &Arc<[String]>) -> &[u32] {
        let fresh = self.last.as_ref().is_none_or(|(w, _)| !Arc::ptr_eq(w, words));
        if fresh {
            let map = words
                .iter()
                .map(|w| {
                    *self.index.entry(w.clone()).or_insert_with(|| {
                        self.words.push(ByteArray::from(w.as_str()));
                        self.slot.push(u32::MAX);
                        (self.words.len() - 1) as u32
                    })
                })
                .collect();
            self.last = Some((words.clone(), map));
        }
        self.last.as_ref().map_or(&[], |(_, map)| &map[..])
    }

    /// Appends `keys` into a batch's `words` to `to` as keys into the row group's words.
    pub fn append_keys(&mut self, words: &Arc<[String]>, keys: &[u32], to: &mut Vec<u32>) {
        map_keys(self.keys_of(words), keys, to);
    }

    /// A data page of rows whose words are a batch's `words[keys[i]]` (see [`page`](Self::page)):
    /// the keys mapped to the row group's words where the batch's are not its first.
    pub fn page_of_batch(
        &mut self,
        zstd: &mut Zstd,
        words: &Arc<[String]>,
        keys: &[u32],
        valid: Option<&[bool]>,
    ) -> Result<(), ParquetError> {
        let mut mapped = std::mem::take(&mut self.mapped);
        mapped.clear();
        let map = self.keys_of(words);
        let paged = if map.iter().enumerate().all(|(i, &k)| k as usize == i) {
            self.page(zstd, keys, valid)
        } else {
            map_keys(map, keys, &mut mapped);
            self.page(zstd, &mapped, valid)
        };
        self.mapped = mapped;
        paged
    }

    /// A data page of rows whose words are those of `keys` (from [`keys_of`](Self::keys_of)), or
    /// none where `valid` says so (`None`: every row has one), compressed by `zstd` if the
    /// chunk's pages are.
    pub fn page(&mut self, zstd: &mut Zstd, keys: &[u32], valid: Option<&[bool]>) -> Result<(), ParquetError> {
        let rows = keys.len();
        self.pages.check(rows, valid)?;
        // A page whose every row has the same word (a dump's name, host, build) is one run, found
        // without a pass that looks each row's word up.
        let same = match (valid, keys.first()) {
            (None, Some(&k)) if super::columns::all_equal(keys, k) => Some(k),
            _ => None,
        };
        let mut values = std::mem::take(&mut self.values);
        values.clear();
        let mut add = |k: u32| self.slot_of(k).map(|s| values.push(s));
        let all = match (same, valid) {
            (Some(k), _) => add(k),
            (None, None) => keys.iter().try_for_each(|&k| add(k)),
            (None, Some(valid)) => keys.iter().zip(valid).filter(|(_, v)| **v).try_for_each(|(&k, _)| add(k)),
        };
        if all.is_none() {
            return self.pages.wrong("keys within its row group's words");
        }
        let present = if same.is_some() { rows } else { values.len() };
        self.nulls += (rows - present) as u64;
        let width = rle::width(self.used.len().saturating_sub(1) as u32);
        self.pages.data(zstd, rows, valid, Encoding::RLE_DICTIONARY, |page| {
            page.push(width);
            match same {
                None => rle::encode(&values, width, page),
                Some(_) => rle::run(values[0].into(), present, width, page),
            }
        })?;
        self.values = values;
        Ok(())
    }

    /// The place in the dictionary page of word `k`, given it if a row has it first; `None` if
    /// it is not one of the row group's words.
    #[inline(always)]
    fn slot_of(&mut self, k: u32) -> Option<u32> {
        let s = self.slot.get_mut(k as usize)?;
        if *s == u32::MAX {
            *s = self.used.len() as u32;
            self.used.push(k);
        }
        Some(*s)
    }

    /// The chunk written into `buffer`, its dictionary page first ([`Pages::finish`]).
    pub fn finish(self, zstd: &mut Zstd, buffer: Vec<u8>) -> Result<Finished, ParquetError> {
        let used: Vec<&ByteArray> = self.used.iter().map(|&k| &self.words[k as usize]).collect();
        let mut plain = Vec::new();
        for w in &used {
            plain.extend_from_slice(&(w.len() as u32).to_le_bytes());
            plain.extend_from_slice(w.data());
        }
        let min = used.iter().min_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
        let max = used.iter().max_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
        let statistics = Statistics::byte_array(min, max, None, Some(self.nulls), false);
        self.pages.finish(zstd, Some((used.len(), &plain)), Encoding::RLE_DICTIONARY, statistics, buffer)
    }
}

/// Appends `keys` (into a batch's words) to `to` as keys into a row group's, by `map` (from
/// [`Chunk::keys_of`]); a key outside the batch's words as one outside the row group's.
fn map_keys(map: &[u32], keys: &[u32], to: &mut Vec<u32>) {
    match map {
        // A dump's constant columns (its name, host, build; a thread's name).
        &[only] if super::columns::all_equal(keys, 0) => to.resize(to.len() + keys.len(), only),
        _ => to.extend(keys.iter().map(|&k| map.get(k as usize).copied().unwrap_or(u32::MAX))),
    }
}

/// The column chunk of `descr` for rows whose values are `words[keys[i]]`, or no value where
/// `valid` says so (`None`: every row has one), in pages of `page` rows: its bytes, and what
/// `append_column` takes.
#[cfg(test)]
pub fn chunk(
    descr: ColumnDescPtr,
    words: &[&str],
    keys: &[u32],
    valid: Option<&[bool]>,
    zstd: &mut Zstd,
    page: usize,
) -> Result<(bytes::Bytes, parquet::column::writer::ColumnCloseResult), ParquetError> {
    let mut chunk = Chunk::new(descr, Packing::Zstd, Vec::new());
    let words: Arc<[String]> = words.iter().map(|&w| w.to_owned()).collect();
    for range in super::chunk::page_ranges(keys.len(), page) {
        chunk.page_of_batch(zstd, &words, &keys[range.clone()], valid.map(|v| &v[range]))?;
    }
    chunk.finish(zstd, Vec::new()).map(|(bytes, close, _)| (bytes, close))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::basic::{LogicalType, Repetition, Type as Physical};
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::record::Field;
    use parquet::schema::types::Type;

    use super::*;

    /// Rows of (required word, optional word) written as chunks, read back by the crate's reader.
    fn round_trip(
        words: &[&str],
        rows: &[(u32, Option<u32>)],
        groups: usize,
        page: usize,
    ) -> Vec<(String, Option<String>)> {
        let column = |name, repetition| {
            Arc::new(
                Type::primitive_type_builder(name, Physical::BYTE_ARRAY)
                    .with_repetition(repetition)
                    .with_logical_type(Some(LogicalType::String))
                    .build()
                    .unwrap(),
            )
        };
        let schema = Arc::new(
            Type::group_type_builder("t")
                .with_fields(vec![column("a", Repetition::REQUIRED), column("b", Repetition::OPTIONAL)])
                .build()
                .unwrap(),
        );
        let mut file = SerializedFileWriter::new(Vec::new(), schema, Arc::new(WriterProperties::default())).unwrap();
        let descrs = file.schema_descr().columns().to_vec();
        let mut zstd = Zstd::new(3).unwrap();
        for part in rows.chunks(rows.len().div_ceil(groups)) {
            let a: Vec<u32> = part.iter().map(|r| r.0).collect();
            let b: Vec<u32> = part.iter().map(|r| r.1.unwrap_or(0)).collect();
            let valid: Vec<bool> = part.iter().map(|r| r.1.is_some()).collect();
            let mut group = file.next_row_group().unwrap();
            let (bytes, close) = chunk(descrs[0].clone(), words, &a, None, &mut zstd, page).unwrap();
            group.append_column(&bytes, close).unwrap();
            let (bytes, close) = chunk(descrs[1].clone(), words, &b, Some(&valid), &mut zstd, page).unwrap();
            group.append_column(&bytes, close).unwrap();
            group.close().unwrap();
        }
        let bytes = bytes::Bytes::from(file.into_inner().unwrap());
        let reader = SerializedFileReader::new(bytes).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                let mut fields = row.get_column_iter().map(|(_, f)| match f {
                    Field::Str(s) => Some(s.clone()),
                    Field::Null => None,
                    other => panic!("{other:?}"),
                });
                (fields.next().flatten().unwrap(), fields.next().flatten())
            })
            .collect()
    }

    fn check(words: &[&str], rows: &[(u32, Option<u32>)], groups: usize) {
        let expected: Vec<(String, Option<String>)> = rows
            .iter()
            .map(|&(a, b)| (words[a as usize].to_owned(), b.map(|b| words[b as usize].to_owned())))
            .collect();
        // A page a row group, and pages of 97 rows: the dictionary grows from page to page, and
        // with it the width of its keys.
        assert_eq!(round_trip(words, rows, groups, 1 << 16), expected);
        assert_eq!(round_trip(words, rows, groups, 97), expected, "pages of 97 rows");
    }

    #[test]
    fn the_crate_reads_back_what_the_chunks_hold() {
        let words: Vec<String> = (0..300).map(|i| format!("f{i}")).collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        // Repeats after literals that are no whole group (the repeat lends them values), runs of
        // literals longer than one bit-packed run, a word at a time and every word (9 bits).
        let mut rows: Vec<(u32, Option<u32>)> = Vec::new();
        for i in 0..3 {
            rows.push((i, Some(i)));
        }
        rows.extend(std::iter::repeat_n((7, None), 20));
        rows.extend((0..1200u32).map(|i| ((i * 7919) % 300, (i % 3 != 0).then_some(i % 300))));
        rows.extend(std::iter::repeat_n((299, Some(5)), 9));
        rows.push((1, None));
        check(&words, &rows, 1);
        check(&words, &rows, 3);
        check(&words[..1], &[(0, None); 5], 1);
        check(&words[..2], &[(1, Some(0)), (0, Some(1)), (1, None)], 1);
    }

    #[test]
    fn a_key_outside_the_words_is_an_error_not_a_panic() {
        let column = Type::primitive_type_builder("a", Physical::BYTE_ARRAY).build().unwrap();
        let descr = Arc::new(parquet::schema::types::ColumnDescriptor::new(
            Arc::new(column),
            0,
            0,
            parquet::schema::types::ColumnPath::from("a"),
        ));
        let words = ["x"];
        let mut zstd = Zstd::new(3).unwrap();
        assert!(chunk(descr.clone(), &words, &[0, 1], None, &mut zstd, 10).is_err());
        assert!(
            chunk(descr, &words, &[0, 0], Some(&[true, false]), &mut zstd, 10).is_err(),
            "a null where none may be"
        );
    }
}
