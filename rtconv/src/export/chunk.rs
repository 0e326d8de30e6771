//! A Parquet column chunk assembled here, page by page, for
//! `SerializedRowGroupWriter::append_column`: the pages' bytes (through the
//! `parquet` crate's page writer, which writes their headers), their sizes,
//! where its data pages are, and its metadata.
//!
//! The crate's column writers take a value at a time (hashing, comparing and
//! encoding each) and compress each page with a zstd context of their own;
//! `words` and `numbers` encode a row group's column at once from what the
//! rows already hold, and compress with one reused context.

use bytes::Bytes;
use parquet::basic::{Compression, Encoding, PageType, ZstdLevel};
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::metadata::{ColumnChunkMetaData, OffsetIndexBuilder, PageEncodingStats};
use parquet::file::statistics::Statistics;
use parquet::file::writer::{SerializedPageWriter, TrackedWrite};
use parquet::schema::types::ColumnDescPtr;

use super::rle;

/// Rows a data page holds at most: a row group's, in one page.
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

    fn codec(&self) -> Result<Compression, ParquetError> {
        Ok(Compression::ZSTD(ZstdLevel::try_new(self.level)?))
    }
}

/// A column chunk's pages as they are written.
pub struct Pages<'z> {
    descr: ColumnDescPtr,
    /// `None`: the pages are not compressed.
    zstd: Option<&'z mut Zstd>,
    sink: TrackedWrite<Vec<u8>>,
    compressed: i64,
    uncompressed: i64,
    dictionary: bool,
    first_data: Option<i64>,
    data_pages: i32,
    /// Where each data page is: the file's other columns have this index, and a file has it for
    /// every column or none.
    offsets: OffsetIndexBuilder,
    /// The page being encoded.
    page: Vec<u8>,
}

impl<'z> Pages<'z> {
    /// The pages of a chunk of `descr`, compressed by `zstd` (`None`: not compressed).
    pub fn new(descr: ColumnDescPtr, zstd: Option<&'z mut Zstd>) -> Pages<'z> {
        Pages {
            descr,
            zstd,
            sink: TrackedWrite::new(Vec::new()),
            compressed: 0,
            uncompressed: 0,
            dictionary: false,
            first_data: None,
            data_pages: 0,
            offsets: OffsetIndexBuilder::new(),
            page: Vec::new(),
        }
    }

    /// An error about this column: `what` it should have had.
    pub fn wrong<T>(&self, what: &str) -> Result<T, ParquetError> {
        Err(ParquetError::General(format!("{}: {what}", self.descr.name())))
    }

    /// Checks that `valid` (`None`: every row has a value) says of each of `rows` rows whether it
    /// has one, and leaves none without where the column needs one.
    pub fn check(&self, rows: usize, valid: Option<&[bool]>) -> Result<(), ParquetError> {
        if valid.is_some_and(|v| v.len() != rows) {
            return self.wrong("a validity per row");
        }
        if !self.nullable() && valid.is_some_and(|v| v.contains(&false)) {
            return self.wrong("a value in every row");
        }
        Ok(())
    }

    /// Whether a row may have no value.
    pub fn nullable(&self) -> bool {
        self.descr.max_def_level() > 0
    }

    /// The dictionary page: `count` values, PLAIN-encoded in `plain`. Written first.
    pub fn dictionary(&mut self, plain: &[u8], count: usize) -> Result<(), ParquetError> {
        let buf = self.compress(plain)?;
        let page = Page::DictionaryPage { buf, num_values: count as u32, encoding: Encoding::PLAIN, is_sorted: false };
        self.dictionary = true;
        self.write(CompressedPage::new(page, plain.len()))
    }

    /// A version 1 data page of `rows` rows, whose rows with a value `valid` gives (`None`: every
    /// row), of values `encoding` encodes by `values`.
    pub fn data(
        &mut self,
        rows: usize,
        valid: Option<&[bool]>,
        encoding: Encoding,
        values: impl FnOnce(&mut Vec<u8>),
    ) -> Result<(), ParquetError> {
        let mut page = std::mem::take(&mut self.page);
        page.clear();
        if self.nullable() {
            // The definition levels' length, then the levels.
            page.extend_from_slice(&[0; 4]);
            match valid {
                Some(valid) => rle::encode(valid, 1, &mut page),
                None => rle::run(1, rows, 1, &mut page),
            }
            let len = (page.len() - 4) as u32;
            page[..4].copy_from_slice(&len.to_le_bytes());
        }
        values(&mut page);
        let data = Page::DataPage {
            buf: self.compress(&page)?,
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let uncompressed = page.len();
        self.page = page;
        self.offsets.append_row_count(rows as i64);
        self.write(CompressedPage::new(data, uncompressed))
    }

    fn compress(&mut self, data: &[u8]) -> Result<Bytes, ParquetError> {
        match self.zstd.as_mut() {
            Some(zstd) => zstd.compress(data),
            None => Ok(Bytes::copy_from_slice(data)),
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

    /// The chunk of `rows` rows, its data pages in `encoding`, with `statistics`: its bytes, and
    /// what `append_column` takes.
    pub fn finish(
        self,
        rows: usize,
        encoding: Encoding,
        statistics: Statistics,
    ) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
        let mut encodings = vec![encoding];
        let mut stats = Vec::new();
        if self.dictionary {
            encodings.push(Encoding::PLAIN);
            stats.push(PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 });
        }
        stats.push(PageEncodingStats { page_type: PageType::DATA_PAGE, encoding, count: self.data_pages });
        if self.nullable() {
            encodings.push(Encoding::RLE);
        }
        let metadata = ColumnChunkMetaData::builder(self.descr)
            .set_encodings(encodings)
            .set_page_encoding_stats(stats)
            .set_compression(self.zstd.as_ref().map_or(Ok(Compression::UNCOMPRESSED), |z| z.codec())?)
            .set_num_values(rows as i64)
            .set_total_compressed_size(self.compressed)
            .set_total_uncompressed_size(self.uncompressed)
            .set_dictionary_page_offset(self.dictionary.then_some(0))
            .set_data_page_offset(self.first_data.unwrap_or(self.compressed))
            .set_statistics(statistics)
            .build()?;
        let close = ColumnCloseResult {
            bytes_written: self.sink.bytes_written() as u64,
            rows_written: rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(self.offsets.build()),
        };
        Ok((Bytes::from(self.sink.into_inner()?), close))
    }
}

/// The row ranges of a chunk of `rows` rows' data pages: at least one, if empty.
pub fn page_ranges(rows: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..rows.max(1)).step_by(PAGE_ROWS).map(move |start| start..(start + PAGE_ROWS).min(rows))
}
