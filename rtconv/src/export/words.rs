//! A row group's column of repeated strings as a Parquet column chunk,
//! encoded straight from the keys its rows hold: a dictionary page of the
//! words the rows use (PLAIN) and data pages of their keys (RLE_DICTIONARY),
//! as the `parquet` crate's own writer lays such a chunk out.
//!
//! The crate's writers take a string a row and hash each into their dictionary
//! and compare it for the statistics (half of an export's CPU, for eight such
//! columns); here each word is looked at once a row group. The chunk goes
//! into the file through `SerializedRowGroupWriter::append_column`.

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::data_type::ByteArray;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::rle;

/// Rows a data page holds at most: a row group's, in one page as the crate's writers are set to
/// write the other columns (`export/parquet.rs`).
pub const PAGE_ROWS: usize = super::ROW_GROUP_ROWS;

/// Compresses pages with zstd at one level, reusing its context.
pub struct Zstd {
    level: i32,
    compressor: zstd::bulk::Compressor<'static>,
}

impl Zstd {
    /// A compressor at `level`.
    pub fn new(level: i32) -> Result<Zstd, ParquetError> {
        let compressor = zstd::bulk::Compressor::new(level).map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(Zstd { level, compressor })
    }

    fn compress(&mut self, data: &[u8]) -> Result<Bytes, ParquetError> {
        Ok(self.compressor.compress(data).map_err(|e| ParquetError::External(Box::new(e)))?.into())
    }

    /// The codec as a chunk's metadata names it.
    pub fn codec(&self) -> Result<Compression, ParquetError> {
        Ok(Compression::ZSTD(ZstdLevel::try_new(self.level)?))
    }
}

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
    let nullable = descr.max_def_level() > 0;
    let wrong = |what: String| Err(ParquetError::General(format!("{}: {what}", descr.name())));
    if valid.is_some_and(|v| v.len() != rows) {
        return wrong("a validity per row".into());
    }
    if !nullable && valid.is_some_and(|v| v.contains(&false)) {
        return wrong("a value in every row".into());
    }
    let Some((used, values)) = dictionary(words, keys, valid) else {
        return wrong(format!("keys within its {} words", words.len()));
    };
    let mut pages = Pages::new();

    let mut plain = Vec::new();
    for w in &used {
        plain.extend_from_slice(&(w.len() as u32).to_le_bytes());
        plain.extend_from_slice(w.data());
    }
    let dictionary = Page::DictionaryPage {
        buf: zstd.compress(&plain)?,
        num_values: used.len() as u32,
        encoding: Encoding::PLAIN,
        is_sorted: false,
    };
    pages.write(CompressedPage::new(dictionary, plain.len()))?;

    let width = rle::width(used.len().saturating_sub(1) as u32);
    let (mut page, mut done) = (Vec::new(), 0);
    // At least one page, if empty: a chunk has one.
    for start in (0..rows.max(1)).step_by(PAGE_ROWS) {
        let end = (start + PAGE_ROWS).min(rows);
        page.clear();
        let mut present = end - start;
        if nullable {
            // Version 1 pages: the definition levels' length, then the levels.
            let levels: Vec<u32> = (start..end).map(|i| u32::from(valid.is_none_or(|v| v[i]))).collect();
            present = levels.iter().filter(|&&l| l == 1).count();
            page.extend_from_slice(&[0; 4]);
            rle::encode(&levels, 1, &mut page);
            let len = (page.len() - 4) as u32;
            page[..4].copy_from_slice(&len.to_le_bytes());
        }
        page.push(width);
        rle::encode(&values[done..done + present], width, &mut page);
        done += present;
        let data = Page::DataPage {
            buf: zstd.compress(&page)?,
            num_values: (end - start) as u32,
            encoding: Encoding::RLE_DICTIONARY,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        pages.write(CompressedPage::new(data, page.len()))?;
        pages.offsets.append_row_count((end - start) as i64);
    }

    let min = used.iter().min_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
    let max = used.iter().max_by(|a, b| a.data().cmp(b.data())).map(|w| (*w).clone());
    let nulls = (rows - values.len()) as u64;
    let mut encodings = vec![Encoding::PLAIN, Encoding::RLE_DICTIONARY];
    if nullable {
        encodings.push(Encoding::RLE);
    }
    let metadata = ColumnChunkMetaData::builder(descr)
        .set_encodings(encodings)
        .set_page_encoding_stats(vec![
            PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 },
            PageEncodingStats {
                page_type: PageType::DATA_PAGE,
                encoding: Encoding::RLE_DICTIONARY,
                count: pages.data_pages,
            },
        ])
        .set_compression(zstd.codec()?)
        .set_num_values(rows as i64)
        .set_total_compressed_size(pages.compressed)
        .set_total_uncompressed_size(pages.uncompressed)
        .set_dictionary_page_offset(Some(0))
        .set_data_page_offset(pages.first_data.unwrap_or(pages.compressed))
        .set_statistics(Statistics::byte_array(min, max, None, Some(nulls), false))
        .build()?;
    let close = ColumnCloseResult {
        bytes_written: pages.sink.bytes_written() as u64,
        rows_written: rows as u64,
        metadata,
        bloom_filter: None,
        column_index: None,
        offset_index: Some(pages.offsets.build()),
    };
    Ok((Bytes::from(pages.sink.into_inner()?), close))
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
    for (i, &k) in keys.iter().enumerate() {
        if valid.is_some_and(|v| !v[i]) {
            continue;
        }
        let s = slot.get_mut(k as usize)?;
        if *s == u32::MAX {
            *s = used.len() as u32;
            used.push(&words[k as usize]);
        }
        values.push(*s);
    }
    Some((used, values))
}

/// A column chunk's pages as they are written: their bytes, sizes, and where its data pages are.
struct Pages {
    sink: TrackedWrite<Vec<u8>>,
    compressed: i64,
    uncompressed: i64,
    first_data: Option<i64>,
    data_pages: i32,
    /// Where each data page is: the file's other columns have this index, and a file has it for
    /// every column or none.
    offsets: OffsetIndexBuilder,
}

impl Pages {
    fn new() -> Pages {
        Pages {
            sink: TrackedWrite::new(Vec::new()),
            compressed: 0,
            uncompressed: 0,
            first_data: None,
            data_pages: 0,
            offsets: OffsetIndexBuilder::new(),
        }
    }

    fn write(&mut self, page: CompressedPage) -> Result<(), ParquetError> {
        let data = page.compressed_page().is_data_page();
        let spec = SerializedPageWriter::new(&mut self.sink).write_page(page)?;
        self.compressed += spec.compressed_size as i64;
        self.uncompressed += spec.uncompressed_size as i64;
        if data {
            self.first_data.get_or_insert(spec.offset as i64);
            self.offsets.append_offset_and_size(spec.offset as i64, spec.compressed_size as i32);
            self.data_pages += 1;
        }
        Ok(())
    }
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
