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

/// Buffers of chunks written, for the next row group's to be written into: memory already touched,
/// where fresh memory is zeroed by the system first (most of the export's system time).
#[derive(Default)]
pub struct Spare(Vec<Vec<u8>>);

impl Spare {
    /// An empty buffer.
    pub fn take(&mut self) -> Vec<u8> {
        let mut buffer = self.0.pop().unwrap_or_default();
        buffer.clear();
        buffer
    }

    /// `buffer` back, to be taken again.
    pub fn give(&mut self, buffer: Vec<u8>) {
        self.0.push(buffer);
    }

    /// The buffer of `bytes` back, if nothing else holds them.
    pub fn give_bytes(&mut self, bytes: Bytes) {
        if let Ok(bytes) = bytes.try_into_mut() {
            self.give(bytes.into());
        }
    }
}

/// How a chunk's pages are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Packing {
    /// Not at all.
    None,
    /// By zstd at the table's level.
    Zstd,
    /// By zstd at its fastest positive level (1), where the default level's extra search finds
    /// little.
    FastZstd,
}

/// Compresses pages with zstd, reusing its contexts (one a level) and its output buffer (a fresh
/// one for each page is memory the system zeroes first).
pub struct Zstd {
    level: i32,
    compressor: zstd::bulk::Compressor<'static>,
    fast: zstd::bulk::Compressor<'static>,
    out: Vec<u8>,
}

impl Zstd {
    /// A compressor at `level` (and, for [`Packing::FastZstd`], at 1).
    pub fn new(level: i32) -> Result<Zstd, ParquetError> {
        let compressor = |level| zstd::bulk::Compressor::new(level).map_err(|e| ParquetError::External(Box::new(e)));
        Ok(Zstd { level, compressor: compressor(level)?, fast: compressor(1)?, out: Vec::new() })
    }

    /// `data` as `packing` packs it.
    pub fn compress(&mut self, data: &[u8], packing: Packing) -> Result<Bytes, ParquetError> {
        let compressor = match packing {
            Packing::None => return Ok(Bytes::copy_from_slice(data)),
            Packing::Zstd => &mut self.compressor,
            Packing::FastZstd => &mut self.fast,
        };
        self.out.clear();
        self.out.reserve(zstd::zstd_safe::compress_bound(data.len()));
        compressor.compress_to_buffer(data, &mut self.out).map_err(|e| ParquetError::External(Box::new(e)))?;
        Ok(Bytes::copy_from_slice(&self.out))
    }

    /// The codec the metadata of a chunk packed by `packing` names (a zstd frame says its own
    /// parameters: the level is not in the file).
    pub fn codec(&self, packing: Packing) -> Result<Compression, ParquetError> {
        Ok(match packing {
            Packing::None => Compression::UNCOMPRESSED,
            Packing::Zstd => Compression::ZSTD(ZstdLevel::try_new(self.level)?),
            Packing::FastZstd => Compression::ZSTD(ZstdLevel::try_new(1)?),
        })
    }
}

/// A column chunk's pages as they are written: its data pages as they come, its dictionary page
/// (which goes first) when it is finished.
pub struct Pages {
    descr: ColumnDescPtr,
    /// How its pages are compressed.
    packing: Packing,
    /// The data pages, headers and all.
    sink: TrackedWrite<Vec<u8>>,
    compressed_bytes: i64,
    uncompressed_bytes: i64,
    /// Per data page: where it is in `sink`, its size and its rows.
    data_pages: Vec<(i64, i32, i64)>,
    /// The page being encoded.
    page: Vec<u8>,
    rows: usize,
}

impl Pages {
    /// The pages of a chunk of `descr`, compressed as `packing` says, written into `buffer`
    /// (emptied first).
    pub fn new(descr: ColumnDescPtr, packing: Packing, mut buffer: Vec<u8>) -> Pages {
        buffer.clear();
        Pages {
            descr,
            packing,
            sink: TrackedWrite::new(buffer),
            compressed_bytes: 0,
            uncompressed_bytes: 0,
            data_pages: Vec::new(),
            page: Vec::new(),
            rows: 0,
        }
    }

    /// The rows of its data pages.
    pub fn rows(&self) -> usize {
        self.rows
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

    /// The physical type of its values.
    pub fn physical(&self) -> parquet::basic::Type {
        self.descr.physical_type()
    }

    /// Whether a row may have no value.
    pub fn nullable(&self) -> bool {
        self.descr.max_def_level() > 0
    }

    /// A version 1 data page of `rows` rows, whose rows with a value `valid` gives (`None`: every
    /// row), of values `encoding` encodes by `values`; compressed by `zstd` as the chunk's pages are.
    pub fn data(
        &mut self,
        zstd: &mut Zstd,
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
            buf: zstd.compress(&page, self.packing)?,
            num_values: rows as u32,
            encoding,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let uncompressed = page.len();
        self.page = page;
        let spec = SerializedPageWriter::new(&mut self.sink).write_page(CompressedPage::new(data, uncompressed))?;
        self.compressed_bytes += spec.compressed_size as i64;
        self.uncompressed_bytes += spec.uncompressed_size as i64;
        self.data_pages.push((spec.offset as i64, spec.compressed_size as i32, rows as i64));
        self.rows += rows;
        Ok(())
    }

    /// The chunk, its data pages in `encoding`, with `statistics` and its `dictionary` page (the
    /// count of its values and their PLAIN encoding) first if it has one, written into `buffer`
    /// (emptied first): its bytes, what `append_column` takes, and the buffer its data pages were
    /// written into.
    pub fn finish(
        self,
        zstd: &mut Zstd,
        dictionary: Option<(usize, &[u8])>,
        encoding: Encoding,
        statistics: Statistics,
        mut buffer: Vec<u8>,
    ) -> Result<Finished, ParquetError> {
        let (mut compressed, mut uncompressed) = (self.compressed_bytes, self.uncompressed_bytes);
        buffer.clear();
        let mut chunk = TrackedWrite::new(buffer);
        let mut encodings = vec![encoding];
        let mut stats = Vec::new();
        if let Some((count, plain)) = dictionary {
            let page = Page::DictionaryPage {
                buf: zstd.compress(plain, self.packing)?,
                num_values: count as u32,
                encoding: Encoding::PLAIN,
                is_sorted: false,
            };
            let spec = SerializedPageWriter::new(&mut chunk).write_page(CompressedPage::new(page, plain.len()))?;
            compressed += spec.compressed_size as i64;
            uncompressed += spec.uncompressed_size as i64;
            encodings.push(Encoding::PLAIN);
            stats.push(PageEncodingStats { page_type: PageType::DICTIONARY_PAGE, encoding: Encoding::PLAIN, count: 1 });
        }
        // The data pages follow the dictionary's.
        let before = chunk.bytes_written() as i64;
        let mut offsets = OffsetIndexBuilder::new();
        for &(offset, size, rows) in &self.data_pages {
            offsets.append_row_count(rows);
            offsets.append_offset_and_size(before + offset, size);
        }
        stats.push(PageEncodingStats { page_type: PageType::DATA_PAGE, encoding, count: self.data_pages.len() as i32 });
        if self.nullable() {
            encodings.push(Encoding::RLE);
        }
        let codec = zstd.codec(self.packing)?;
        let metadata = ColumnChunkMetaData::builder(self.descr.clone())
            .set_encodings(encodings)
            .set_page_encoding_stats(stats)
            .set_compression(codec)
            .set_num_values(self.rows as i64)
            .set_total_compressed_size(compressed)
            .set_total_uncompressed_size(uncompressed)
            .set_dictionary_page_offset(dictionary.is_some().then_some(0))
            .set_data_page_offset(before)
            .set_statistics(statistics)
            .build()?;
        let mut bytes = chunk.into_inner()?;
        let data = self.sink.into_inner()?;
        bytes.extend_from_slice(&data);
        let close = ColumnCloseResult {
            bytes_written: bytes.len() as u64,
            rows_written: self.rows as u64,
            metadata,
            bloom_filter: None,
            column_index: None,
            offset_index: Some(offsets.build()),
        };
        Ok((Bytes::from(bytes), close, data))
    }
}

/// A chunk written: its bytes, what `append_column` takes, and a buffer to reuse.
pub type Finished = (Bytes, ColumnCloseResult, Vec<u8>);

#[cfg(test)]
/// The row ranges of a chunk of `rows` rows' data pages of `page` rows: at least one, if empty.
pub fn page_ranges(rows: usize, page: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    (0..rows.max(1)).step_by(page).map(move |start| start..(start + page).min(rows))
}
