//! A row group's column of integers or booleans as a Parquet column chunk,
//! encoded here at once: PLAIN (little-endian values, booleans a bit each) or
//! DELTA_BINARY_PACKED (blocks of 128 deltas from their least, in 4 miniblocks
//! of 32 packed in the bits their largest needs), as the format's
//! `Encodings.md` defines them.

use parquet::basic::{Encoding, Type as Physical};
use parquet::errors::ParquetError;
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnDescPtr;

use super::chunk::{Finished, Packing, Pages, Zstd};
use super::columns::Values;
use super::rle;

/// A column's values, a value per row (a placeholder where a row has none).
#[derive(Clone, Copy)]
pub enum Numbers<'v> {
    /// `INT32` annotated unsigned: stored as their bits.
    U32(&'v [u32]),
    /// `INT64` annotated unsigned: stored as their bits.
    U64(&'v [u64]),
    /// `INT64`.
    I64(&'v [i64]),
    /// `BOOLEAN` (PLAIN only).
    Bool(&'v [bool]),
}

impl<'v> Numbers<'v> {
    /// `values` as numbers, if they are integers or booleans.
    fn of(values: &'v Values) -> Option<Numbers<'v>> {
        match values {
            Values::U32(v) => Some(Numbers::U32(v)),
            Values::U64(v) => Some(Numbers::U64(v)),
            Values::I64(v) => Some(Numbers::I64(v)),
            Values::Bool(v) => Some(Numbers::Bool(v)),
            Values::Words { .. } | Values::Text(_) | Values::F64(_) => None,
        }
    }

    /// Rows `range` of them.
    #[cfg(test)]
    fn slice(self, range: std::ops::Range<usize>) -> Numbers<'v> {
        match self {
            Numbers::U32(v) => Numbers::U32(&v[range]),
            Numbers::U64(v) => Numbers::U64(&v[range]),
            Numbers::I64(v) => Numbers::I64(&v[range]),
            Numbers::Bool(v) => Numbers::Bool(&v[range]),
        }
    }

    fn len(self) -> usize {
        match self {
            Numbers::U32(v) => v.len(),
            Numbers::U64(v) => v.len(),
            Numbers::I64(v) => v.len(),
            Numbers::Bool(v) => v.len(),
        }
    }
}

/// An integer type of a column: its bits as Parquet stores them, ordered as its statistics are.
trait Int: Copy + Ord {
    /// The bits of the physical type (`INT32` or `INT64`).
    const WIDTH: u32;
    fn bits(self) -> u64;
}

impl Int for u32 {
    const WIDTH: u32 = 32;
    fn bits(self) -> u64 {
        u64::from(self)
    }
}

impl Int for u64 {
    const WIDTH: u32 = 64;
    fn bits(self) -> u64 {
        self
    }
}

impl Int for i64 {
    const WIDTH: u32 = 64;
    fn bits(self) -> u64 {
        self as u64
    }
}

/// A row group's column of integers or booleans as its pages are encoded: PLAIN or
/// DELTA_BINARY_PACKED (booleans PLAIN), with the statistics of all its pages.
pub struct Chunk {
    pages: Pages,
    encoding: Encoding,
    bounds: Bounds,
    nulls: u64,
}

/// The least and greatest values of a chunk's pages so far, in its column's order (unsigned
/// columns unsigned); booleans as whether any was false and any true.
#[derive(Clone, Copy, Debug)]
enum Bounds {
    None,
    U32(u32, u32),
    U64(u64, u64),
    I64(i64, i64),
    Bool { any_false: bool, any_true: bool },
}

impl Bounds {
    /// These and a page's bounds together.
    fn and(self, page: Bounds) -> Bounds {
        use Bounds::*;
        match (self, page) {
            (None, p) => p,
            (b, None) => b,
            (U32(l, m), U32(pl, pm)) => U32(l.min(pl), m.max(pm)),
            (U64(l, m), U64(pl, pm)) => U64(l.min(pl), m.max(pm)),
            (I64(l, m), I64(pl, pm)) => I64(l.min(pl), m.max(pm)),
            (Bool { any_false: f, any_true: t }, Bool { any_false: pf, any_true: pt }) => {
                Bool { any_false: f | pf, any_true: t | pt }
            }
            // A chunk's pages are of its column's one kind (`Chunk::page` checks).
            (b, _) => b,
        }
    }

    /// The chunk's statistics, of a column of `physical` type with `nulls` rows without a value.
    /// Unsigned columns' bounds are their bits, as the physical (signed) type holds them.
    fn statistics(self, physical: Physical, nulls: u64) -> Statistics {
        match (self, physical) {
            (Bounds::U32(l, m), _) => Statistics::int32(Some(l as i32), Some(m as i32), None, Some(nulls), false),
            (Bounds::U64(l, m), _) => Statistics::int64(Some(l as i64), Some(m as i64), None, Some(nulls), false),
            (Bounds::I64(l, m), _) => Statistics::int64(Some(l), Some(m), None, Some(nulls), false),
            (Bounds::Bool { any_false, any_true }, _) if any_false || any_true => {
                Statistics::boolean(Some(!any_false), Some(any_true), None, Some(nulls), false)
            }
            (_, Physical::INT32) => Statistics::int32(None, None, None, Some(nulls), false),
            (_, Physical::BOOLEAN) => Statistics::boolean(None, None, None, Some(nulls), false),
            _ => Statistics::int64(None, None, None, Some(nulls), false),
        }
    }
}

impl Chunk {
    /// The chunk of `descr`, its pages in `encoding` (PLAIN or DELTA_BINARY_PACKED; booleans
    /// PLAIN whatever it says), compressed as `packing` says, written into `buffer`.
    pub fn new(
        descr: ColumnDescPtr,
        encoding: Encoding,
        packing: Packing,
        buffer: Vec<u8>,
    ) -> Result<Chunk, ParquetError> {
        let boolean = descr.physical_type() == Physical::BOOLEAN;
        let pages = Pages::new(descr, packing, buffer);
        let encoding = match encoding {
            _ if boolean => Encoding::PLAIN,
            Encoding::PLAIN | Encoding::DELTA_BINARY_PACKED => encoding,
            _ => return pages.wrong("PLAIN or DELTA_BINARY_PACKED"),
        };
        Ok(Chunk { pages, encoding, bounds: Bounds::None, nulls: 0 })
    }

    /// The rows of its pages so far.
    pub fn rows(&self) -> usize {
        self.pages.rows()
    }

    /// A data page of `values`, but no value where `valid` says so (`None`: every row has one),
    /// compressed by `zstd` as the chunk's pages are.
    pub fn page(&mut self, zstd: &mut Zstd, values: Numbers<'_>, valid: Option<&[bool]>) -> Result<(), ParquetError> {
        self.pages.check(values.len(), valid)?;
        let physical = self.pages.physical();
        let bounds = match values {
            Numbers::U32(v) if physical == Physical::INT32 => {
                self.ints(zstd, v, valid)?.map(|(l, m)| Bounds::U32(l, m))
            }
            Numbers::U64(v) if physical == Physical::INT64 => {
                self.ints(zstd, v, valid)?.map(|(l, m)| Bounds::U64(l, m))
            }
            Numbers::I64(v) if physical == Physical::INT64 => {
                self.ints(zstd, v, valid)?.map(|(l, m)| Bounds::I64(l, m))
            }
            Numbers::Bool(v) if physical == Physical::BOOLEAN => Some(self.bools(zstd, v, valid)?),
            _ => return self.pages.wrong("values of its physical type"),
        };
        self.bounds = self.bounds.and(bounds.unwrap_or(Bounds::None));
        Ok(())
    }

    /// A data page of a batch's `values` (see [`page`](Self::page)), if they are integers or
    /// booleans.
    pub fn page_of(&mut self, zstd: &mut Zstd, values: &Values, valid: Option<&[bool]>) -> Result<(), ParquetError> {
        match Numbers::of(values) {
            Some(values) => self.page(zstd, values, valid),
            None => self.pages.wrong("integers or booleans"),
        }
    }

    /// The chunk written into `buffer` ([`Pages::finish`]).
    pub fn finish(self, zstd: &mut Zstd, buffer: Vec<u8>) -> Result<Finished, ParquetError> {
        let statistics = self.bounds.statistics(self.pages.physical(), self.nulls);
        self.pages.finish(zstd, None, self.encoding, statistics, buffer)
    }

    /// A page of integers; their least and greatest, if any.
    fn ints<T: Int>(
        &mut self,
        zstd: &mut Zstd,
        values: &[T],
        valid: Option<&[bool]>,
    ) -> Result<Option<(T, T)>, ParquetError> {
        let mut kept = Vec::new();
        let page = present(values, valid, &mut kept);
        self.nulls += (values.len() - page.len()) as u64;
        let (encoding, mut bounds) = (self.encoding, None);
        self.pages.data(zstd, values.len(), valid, encoding, |out| {
            bounds = match encoding {
                Encoding::DELTA_BINARY_PACKED => delta(page, out),
                _ => plain(page, out),
            }
        })?;
        Ok(bounds)
    }

    /// A page of booleans, PLAIN; whether any was false and any true.
    fn bools(&mut self, zstd: &mut Zstd, values: &[bool], valid: Option<&[bool]>) -> Result<Bounds, ParquetError> {
        let mut kept = Vec::new();
        let page = present(values, valid, &mut kept);
        self.nulls += (values.len() - page.len()) as u64;
        self.pages.data(zstd, values.len(), valid, Encoding::PLAIN, |out| rle::pack_bools(page, out))?;
        Ok(Bounds::Bool { any_false: page.contains(&false), any_true: page.contains(&true) })
    }
}

/// The column chunk of `descr` for `values`, but no value where `valid` says so (`None`: every
/// row has one), in pages of `page` rows in `encoding`, compressed by `zstd`:
/// its bytes, and what `append_column` takes.
#[cfg(test)]
pub fn chunk(
    descr: ColumnDescPtr,
    values: Numbers<'_>,
    valid: Option<&[bool]>,
    encoding: Encoding,
    zstd: &mut Zstd,
    page: usize,
) -> Result<(bytes::Bytes, parquet::column::writer::ColumnCloseResult), ParquetError> {
    let mut chunk = Chunk::new(descr, encoding, Packing::Zstd, Vec::new())?;
    for range in super::chunk::page_ranges(values.len(), page) {
        let valid = valid.map(|v| &v[range.clone()]);
        chunk.page(zstd, values.slice(range), valid)?;
    }
    chunk.finish(zstd, Vec::new()).map(|(bytes, close, _)| (bytes, close))
}

/// The values of the rows that have one: `values` itself when every row has one, else those copied
/// into `kept`.
fn present<'a, T: Copy>(values: &'a [T], valid: Option<&[bool]>, kept: &'a mut Vec<T>) -> &'a [T] {
    match valid {
        None => values,
        Some(valid) => {
            kept.clear();
            kept.extend(values.iter().zip(valid).filter(|(_, v)| **v).map(|(&x, _)| x));
            kept
        }
    }
}

/// The least and the greatest of `values`, if any.
fn least_and_most<T: Ord + Copy>(values: &[T]) -> Option<(T, T)> {
    let (&first, rest) = values.split_first()?;
    Some(rest.iter().fold((first, first), |(l, m), &x| (Ord::min(l, x), Ord::max(m, x))))
}

/// `values` PLAIN: little-endian, in their type's width; returns their least and greatest.
fn plain<T: Int>(values: &[T], out: &mut Vec<u8>) -> Option<(T, T)> {
    let bytes = T::WIDTH as usize / 8;
    let start = out.len();
    out.resize(start + values.len() * bytes, 0);
    for (to, &v) in out[start..].chunks_exact_mut(bytes).zip(values) {
        to.copy_from_slice(&v.bits().to_le_bytes()[..bytes]);
    }
    least_and_most(values)
}

/// Deltas a block holds.
const BLOCK: usize = 128;
/// Deltas a miniblock holds: a block's a quarter.
const MINIBLOCK: usize = 32;

/// `values` DELTA_BINARY_PACKED: a header (block size, miniblocks a block, count, first value),
/// then per block the least delta and its miniblocks' bit widths and deltas from the least.
/// Deltas wrap at the type's width, as readers add them. Returns the least and greatest value.
fn delta<T: Int>(values: &[T], out: &mut Vec<u8>) -> Option<(T, T)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, which is all `delta_avx2` assumes of it.
        return unsafe { delta_avx2(values, out) };
    }
    delta_in(values, out)
}

/// [`delta`] compiled for AVX2, whose 64-bit comparisons let the blocks' least and greatest be
/// taken four values at a time.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn delta_avx2<T: Int>(values: &[T], out: &mut Vec<u8>) -> Option<(T, T)> {
    delta_in(values, out)
}

/// [`delta`]'s body: a block's work in simple passes over fixed arrays, which the compiler
/// turns into vector instructions.
#[inline(always)]
fn delta_in<T: Int>(values: &[T], out: &mut Vec<u8>) -> Option<(T, T)> {
    let mask = u64::MAX >> (64 - T::WIDTH);
    // A value of the type's width, sign-extended.
    let signed = |v: u64| ((v << (64 - T::WIDTH)) as i64) >> (64 - T::WIDTH);
    let zigzag = |v: i64| ((v << 1) ^ (v >> 63)) as u64;
    rle::varint(BLOCK as u64, out);
    rle::varint((BLOCK / MINIBLOCK) as u64, out);
    rle::varint(values.len() as u64, out);
    let Some(&first) = values.first() else {
        rle::varint(0, out);
        return None;
    };
    rle::varint(zigzag(signed(first.bits())), out);
    let (mut lowest, mut highest) = (first, first);
    if let Some(step) = steady(values, mask) {
        // Every block's deltas are its least: no miniblock has bits (ids, a dump's constant columns).
        for _ in (1..values.len()).step_by(BLOCK) {
            rle::varint(zigzag(signed(step)), out);
            out.extend_from_slice(&[0; BLOCK / MINIBLOCK]);
        }
        lowest = values.iter().copied().fold(lowest, Ord::min);
        highest = values.iter().copied().fold(highest, Ord::max);
        return Some((lowest, highest));
    }
    // A block's deltas, then their excess over the least (padded with zeros).
    let mut deltas = [0i64; BLOCK];
    let mut above = [0u64; BLOCK];
    // Each block: its values and the one before them.
    for start in (1..values.len()).step_by(BLOCK) {
        let block = &values[start - 1..(start + BLOCK).min(values.len())];
        let n = block.len() - 1;
        for (d, pair) in deltas.iter_mut().zip(block.windows(2)) {
            *d = signed(pair[1].bits().wrapping_sub(pair[0].bits()) & mask);
        }
        let least = deltas[..n].iter().copied().fold(i64::MAX, i64::min);
        lowest = block[1..].iter().copied().fold(lowest, Ord::min);
        highest = block[1..].iter().copied().fold(highest, Ord::max);
        deltas[n..].fill(least);
        rle::varint(zigzag(least), out);
        for (a, &d) in above.iter_mut().zip(&deltas) {
            *a = (d.wrapping_sub(least) as u64) & mask;
        }
        // Miniblocks past the block's values (all padding: width 0) have a width but no bits.
        let minis = n.div_ceil(MINIBLOCK);
        let mut widths = [0u8; BLOCK / MINIBLOCK];
        for (w, mini) in widths.iter_mut().zip(above.chunks_exact(MINIBLOCK)) {
            *w = (64 - mini.iter().fold(0, |any, &a| any | a).leading_zeros()) as u8;
        }
        out.extend_from_slice(&widths);
        for (mini, &w) in above.chunks_exact(MINIBLOCK).zip(&widths).take(minis) {
            pack_miniblock(mini.try_into().expect("a miniblock's length"), w, out);
        }
    }
    Some((lowest, highest))
}

/// The one delta (wrapped by `mask`) between every value of `values` and the next, if there is
/// one: blocks at a time, each a vectorized pass, stopping at the first that has another.
#[inline(always)]
fn steady<T: Int>(values: &[T], mask: u64) -> Option<u64> {
    let step = values.get(1)?.bits().wrapping_sub(values[0].bits()) & mask;
    let (before, after) = (&values[..values.len() - 1], &values[1..]);
    let steady = before.chunks(BLOCK).zip(after.chunks(BLOCK)).all(|(before, after)| {
        before.iter().zip(after).fold(true, |same, (&b, &a)| same & (a.bits().wrapping_sub(b.bits()) & mask == step))
    });
    steady.then_some(step)
}

/// 32 values below 2^`width` (0 to 64), in `width` bits each, least significant bit first: the
/// width known at compile time, so the shifts are.
fn pack_miniblock(values: &[u64; MINIBLOCK], width: u8, out: &mut Vec<u8>) {
    macro_rules! by_width {
        ($($w:literal)*) => {
            match width {
                $($w => pack_in::<$w>(values, out),)*
                _ => {}
            }
        };
    }
    by_width!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31 32
        33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63 64);
}

/// [`pack_miniblock`] for width `W`.
#[inline(always)]
fn pack_in<const W: u32>(values: &[u64; MINIBLOCK], out: &mut Vec<u8>) {
    let mut words = [0u64; MINIBLOCK];
    // Value k's bits go at bit k × W: a constant for each k (the loop unrolled by hand).
    macro_rules! put {
        ($($k:literal)*) => {$(
            let at = $k * W;
            let (word, shift) = ((at / 64) as usize, at % 64);
            words[word] |= values[$k] << shift;
            if shift + W > 64 {
                words[word + 1] |= values[$k] >> (64 - shift);
            }
        )*};
    }
    put!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
    // 4 × W bytes: whole words, and half of one where W is odd.
    let whole = W as usize / 2;
    for word in &words[..whole] {
        out.extend_from_slice(&word.to_le_bytes());
    }
    if W % 2 == 1 {
        out.extend_from_slice(&words[whole].to_le_bytes()[..4]);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use parquet::basic::{LogicalType, Repetition, Type as Physical};
    use parquet::file::properties::WriterProperties;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::types::Type;

    use super::*;

    /// Each column of `rows` written as a chunk of its own encoding, read back by the crate's
    /// reader, in `groups` row groups; with the statistics of the first row group.
    fn round_trip(
        rows: &[(u32, i64, u64, Option<u64>, bool)],
        groups: usize,
        page: usize,
    ) -> (Vec<String>, Vec<String>) {
        let column = |name, physical, unsigned: Option<i8>, repetition| {
            let logical = unsigned.map(|bits| LogicalType::Integer { bit_width: bits, is_signed: false });
            Arc::new(
                Type::primitive_type_builder(name, physical)
                    .with_repetition(repetition)
                    .with_logical_type(logical)
                    .build()
                    .unwrap(),
            )
        };
        let fields = vec![
            column("u32", Physical::INT32, Some(32), Repetition::REQUIRED),
            column("i64", Physical::INT64, None, Repetition::REQUIRED),
            column("u64", Physical::INT64, Some(64), Repetition::REQUIRED),
            column("opt", Physical::INT64, Some(64), Repetition::OPTIONAL),
            column("bool", Physical::BOOLEAN, None, Repetition::REQUIRED),
        ];
        let schema = Arc::new(Type::group_type_builder("t").with_fields(fields).build().unwrap());
        let mut file = SerializedFileWriter::new(Vec::new(), schema, Arc::new(WriterProperties::default())).unwrap();
        let descrs = file.schema_descr().columns().to_vec();
        let mut zstd = Zstd::new(3).unwrap();
        for part in rows.chunks(rows.len().div_ceil(groups)) {
            let a: Vec<u32> = part.iter().map(|r| r.0).collect();
            let b: Vec<i64> = part.iter().map(|r| r.1).collect();
            let c: Vec<u64> = part.iter().map(|r| r.2).collect();
            let d: Vec<u64> = part.iter().map(|r| r.3.unwrap_or(0)).collect();
            let valid: Vec<bool> = part.iter().map(|r| r.3.is_some()).collect();
            let e: Vec<bool> = part.iter().map(|r| r.4).collect();
            let mut group = file.next_row_group().unwrap();
            for (i, (values, valid, encoding)) in [
                (Numbers::U32(&a), None, Encoding::DELTA_BINARY_PACKED),
                (Numbers::I64(&b), None, Encoding::DELTA_BINARY_PACKED),
                (Numbers::U64(&c), None, Encoding::PLAIN),
                (Numbers::U64(&d), Some(&valid[..]), Encoding::DELTA_BINARY_PACKED),
                (Numbers::Bool(&e), None, Encoding::PLAIN),
            ]
            .into_iter()
            .enumerate()
            {
                let (bytes, close) = chunk(descrs[i].clone(), values, valid, encoding, &mut zstd, page).unwrap();
                group.append_column(&bytes, close).unwrap();
            }
            group.close().unwrap();
        }
        let reader = SerializedFileReader::new(bytes::Bytes::from(file.into_inner().unwrap())).unwrap();
        let stats = reader.metadata().row_group(0).columns().iter().map(|c| format!("{:?}", c.statistics())).collect();
        let read = reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                row.get_column_iter().map(|(_, f)| f.to_string()).collect::<Vec<_>>().join(" ")
            })
            .collect();
        (read, stats)
    }

    fn expected(rows: &[(u32, i64, u64, Option<u64>, bool)]) -> Vec<String> {
        rows.iter()
            .map(|r| format!("{} {} {} {} {}", r.0, r.1, r.2, r.3.map_or("null".to_owned(), |v| v.to_string()), r.4))
            .collect()
    }

    #[test]
    fn the_crate_reads_back_what_the_chunks_hold() {
        // Deltas that wrap at the type's width (u32::MAX to 0, i64::MIN to i64::MAX), deltas of
        // every width to 64 bits, a block and a miniblock left part full, nulls, one row.
        let mut rows: Vec<(u32, i64, u64, Option<u64>, bool)> = Vec::new();
        for i in 0..300u64 {
            let wide = if i % 2 == 0 { 1u64 << (i % 64) } else { u64::MAX >> (i % 64) };
            let a = if i % 7 == 0 { u32::MAX } else { (i * 2_654_435_761) as u32 };
            let b = match i % 5 {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => (i as i64 - 150) * 1_000_003,
            };
            rows.push((a, b, wide, (i % 3 != 1).then_some(wide ^ i), i % 11 == 0));
        }
        for groups in [1, 3] {
            let (read, _) = round_trip(&rows, groups, 1 << 16);
            assert_eq!(read, expected(&rows), "{groups} row groups");
            // Pages of 37 rows: each page's values, the chunk's statistics.
            let (read, stats) = round_trip(&rows, groups, 37);
            assert_eq!(read, expected(&rows), "{groups} row groups, pages of 37 rows");
            assert_eq!(stats, round_trip(&rows, groups, 1 << 16).1, "the statistics of all its pages");
        }
        // Deltas all their least (a miniblock of no bits), as ids and constant columns have.
        let steady: Vec<_> = (0..200u32).map(|i| (i, 5 - 3 * i64::from(i), 9, Some(7), false)).collect();
        assert_eq!(round_trip(&steady, 1, 1 << 16).0, expected(&steady));
        let one = [(7, -3, 9, None, true)];
        assert_eq!(round_trip(&one, 1, 1 << 16).0, expected(&one));
    }

    #[test]
    fn the_avx2_build_of_delta_encodes_as_the_plain_one() {
        // `delta` takes the AVX2 build where the CPU has it; the round trips above check it.
        let mut rng = crate::model::test_dumps::XorShift(0x2545_F491_4F6C_DD1D);
        let wide: Vec<u64> = (0..1_000).map(|i| rng.below(1 << (i % 64)) ^ (i << 40)).collect();
        let signed: Vec<i64> = wide.iter().map(|&v| v as i64).collect();
        let narrow: Vec<u32> = wide.iter().map(|&v| v as u32).collect();
        for n in [0, 1, 2, 129, 1_000] {
            let (mut plain, mut chosen) = (Vec::new(), Vec::new());
            assert_eq!(delta_in(&wide[..n], &mut plain), delta(&wide[..n], &mut chosen));
            assert_eq!(delta_in(&signed[..n], &mut plain), delta(&signed[..n], &mut chosen));
            assert_eq!(delta_in(&narrow[..n], &mut plain), delta(&narrow[..n], &mut chosen));
            assert_eq!(plain, chosen, "{n} values");
        }
    }

    #[test]
    fn statistics_order_unsigned_columns_as_unsigned_and_signed_as_signed() {
        let rows =
            [(u32::MAX, -5, u64::MAX, Some(3), false), (1, 4, 2, None, false), (9, i64::MIN, 8, Some(u64::MAX), false)];
        // A page a row: the null row's page has no values, the chunk's statistics all of theirs.
        let (_, stats) = round_trip(&rows, 1, 1);
        let bounds = |s: &str| s.split(", distinct_count").next().unwrap_or(s).to_owned();
        assert!(
            stats[0].contains("min: Some(1)") && stats[0].contains(&format!("max: Some({})", u32::MAX as i32)),
            "{}",
            bounds(&stats[0])
        );
        assert!(
            stats[1].contains(&format!("min: Some({})", i64::MIN)) && stats[1].contains("max: Some(4)"),
            "{}",
            bounds(&stats[1])
        );
        assert!(stats[3].contains("null_count: Some(1)"), "{}", stats[3]);
        assert!(stats[4].contains("min: Some(false)") && stats[4].contains("max: Some(false)"), "{}", stats[4]);
    }
}
