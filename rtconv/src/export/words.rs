//! A row group's column of repeated strings as a Parquet column chunk,
//! encoded straight from the keys its rows hold: a dictionary page of the
//! words the rows use (PLAIN) and data pages of their keys (RLE_DICTIONARY),
//! as the `parquet` crate's own writer lays such a chunk out.
//!
//! The crate's writers take a string a row and hash each into their dictionary
//! and compare it for the statistics (half of an export's CPU, for eight such
//! columns); here each word is looked at once a row group.

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescPtr;

use super::chunk::{Pages, Zstd, page_ranges};
use super::rle;

/// The column chunk of `descr` for rows whose values are `words[keys[i]]`, or no value where
/// `valid` says so (`None`: every row has one): its bytes, and what `append_column` takes.
pub fn chunk(
    descr: ColumnDescPtr,
    words: &[ByteArray],
    keys: &[u32],
    valid: Option<&[bool]>,
    zstd: &mut Zstd,
) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
    let rows = keys.len();
    let mut pages = Pages::new(descr, Some(zstd));
    pages.check(rows, valid)?;
    // A column whose every row has the same word (a dump's name, host, build) is one run, found
    // without the per-row pass `dictionary` makes.
    let same = match (valid, keys.first()) {
        (None, Some(&k)) if rle::all_equal(keys, k) => words.get(k as usize),
        _ => None,
    };
    let (used, values) = match same {
        Some(word) => (vec![word], Vec::new()),
        None => match dictionary(words, keys, valid) {
            Some(d) => d,
            None => return pages.wrong("keys within its words"),
        },
    };
    let mut plain = Vec::new();
    for w in &used {
        plain.extend_from_slice(&(w.len() as u32).to_le_bytes());
        plain.extend_from_slice(w.data());
    }
    pages.dictionary(&plain, used.len())?;
    let width = rle::width(used.len().saturating_sub(1) as u32);
    let mut done = 0;
    for range in page_ranges(rows) {
        let valid = valid.map(|v| &v[range.clone()]);
        let present = valid.map_or(range.len(), |v| v.iter().filter(|&&v| v).count());
        let keys = values.get(done..done + present);
        done += present;
        pages.data(range.len(), valid, Encoding::RLE_DICTIONARY, |page| {
            page.push(width);
            match keys {
                Some(keys) if same.is_none() => rle::encode(keys, width, page),
                // Every row is the dictionary's one word.
                _ => rle::encode_same(0, present, width, page),
            }
        })?;
    }
    let min = used.iter().min_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
    let max = used.iter().max_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
    let nulls = (rows - done) as u64;
    pages.finish(rows, Encoding::RLE_DICTIONARY, Statistics::byte_array(min, max, None, Some(nulls), false))
}

/// The words the rows with a value use, in the order they first come (the chunk's dictionary),
/// and each such row's index in it; `None` if a key is not one of `words`.
fn dictionary<'w>(
    words: &'w [ByteArray],
    keys: &[u32],
    valid: Option<&[bool]>,
) -> Option<(Vec<&'w ByteArray>, Vec<u32>)> {
    let mut slot = vec![u32::MAX; words.len()];
    let (mut used, mut values) = (Vec::new(), Vec::with_capacity(keys.len()));
    let mut add = |k: u32| -> Option<()> {
        let s = slot.get_mut(k as usize)?;
        if *s == u32::MAX {
            *s = used.len() as u32;
            used.push(&words[k as usize]);
        }
        values.push(*s);
        Some(())
    };
    match valid {
        None => keys.iter().try_for_each(|&k| add(k))?,
        Some(valid) => keys.iter().zip(valid).filter(|(_, v)| **v).try_for_each(|(&k, _)| add(k))?,
    }
    Some((used, values))
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
    fn round_trip(words: &[&str], rows: &[(u32, Option<u32>)], groups: usize) -> Vec<(String, Option<String>)> {
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
        let words: Vec<ByteArray> = words.iter().map(|&w| ByteArray::from(w)).collect();
        let mut zstd = Zstd::new(3).unwrap();
        for part in rows.chunks(rows.len().div_ceil(groups)) {
            let a: Vec<u32> = part.iter().map(|r| r.0).collect();
            let b: Vec<u32> = part.iter().map(|r| r.1.unwrap_or(0)).collect();
            let valid: Vec<bool> = part.iter().map(|r| r.1.is_some()).collect();
            let mut group = file.next_row_group().unwrap();
            let (bytes, close) = chunk(descrs[0].clone(), &words, &a, None, &mut zstd).unwrap();
            group.append_column(&bytes, close).unwrap();
            let (bytes, close) = chunk(descrs[1].clone(), &words, &b, Some(&valid), &mut zstd).unwrap();
            group.append_column(&bytes, close).unwrap();
            group.close().unwrap();
        }
        let bytes = Bytes::from(file.into_inner().unwrap());
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
        assert_eq!(round_trip(words, rows, groups), expected);
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
        let words = [ByteArray::from("x")];
        let mut zstd = Zstd::new(3).unwrap();
        assert!(chunk(descr.clone(), &words, &[0, 1], None, &mut zstd).is_err());
        assert!(chunk(descr, &words, &[0, 0], Some(&[true, false]), &mut zstd).is_err(), "a null where none may be");
    }
}
