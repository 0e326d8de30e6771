//! Parquet's RLE / bit-packing hybrid encoding of small unsigned integers
//! (dictionary keys, definition levels), as the format's `Encodings.md`
//! defines it: runs of one repeated value, and groups of eight values packed
//! in `width` bits each, least significant bit first ([`pack`]); and PLAIN
//! booleans, a bit each in the same order ([`pack_bools`]).

/// Repeats shorter than this go into bit-packed groups.
const MIN_REPEAT: usize = 8;

/// Groups in one bit-packed run at most: its header then fits in one byte, as the reference
/// writers (parquet-cpp, parquet-mr) keep it.
const MAX_GROUPS: usize = 63;

/// Appends `values`, each below 2^`width` (1 ≤ `width` ≤ 32), to `out`; the last group is padded
/// with zeros, which a reader leaves out by the page's count of values.
pub fn encode<T: Copy + PartialEq + Into<u64>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=32).contains(&width));
    // The start of the values not written yet, and of the run of equal values before `i`.
    let (mut literal, mut run) = (0, 0);
    let repeat = |run: usize, end: usize, literal: &mut usize, out: &mut Vec<u8>| {
        if end - run >= MIN_REPEAT {
            // The values before the repeat go out in whole groups: the repeat lends the last group
            // its first values.
            let lent = (8 - (run - *literal) % 8) % 8;
            bit_packed(&values[*literal..run + lent], width, out);
            repeated(values[run].into(), end - run - lent, width, out);
            *literal = end;
        }
    };
    for (i, &v) in values.iter().enumerate().skip(1) {
        if v != values[run] {
            repeat(run, i, &mut literal, out);
            run = i;
        }
    }
    repeat(run, values.len(), &mut literal, out);
    bit_packed(&values[literal..], width, out);
}

/// `values` as bit-packed runs; all but the last group of the last run whole.
fn bit_packed<T: Copy + Into<u64>>(values: &[T], width: u8, out: &mut Vec<u8>) {
    for run in values.chunks(MAX_GROUPS * 8) {
        let groups = run.len().div_ceil(8);
        varint((groups as u64) << 1 | 1, out);
        pack(run, groups * 8, width, out);
    }
}

/// `values`, then zeros up to `count` values, each in `width` bits (1 to 32), least significant
/// bit first, as Parquet packs bits; `count * width` a multiple of 8.
fn pack<T: Copy + Into<u64>>(values: &[T], count: usize, width: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=32).contains(&width));
    let width = u32::from(width);
    let end = out.len() + count * width as usize / 8;
    // Fewer than 32 bits wait at a time, so a value fits beside them in 64; they go out 4 bytes at
    // a time.
    let (mut bits, mut pending) = (0u64, 0u32);
    for &v in &values[..values.len().min(count)] {
        bits |= v.into() << pending;
        pending += width;
        if pending >= 32 {
            out.extend_from_slice(&(bits as u32).to_le_bytes());
            bits >>= 32;
            pending -= 32;
        }
    }
    out.extend_from_slice(&(bits as u32).to_le_bytes()[..pending.div_ceil(8) as usize]);
    // The zeros after the values, as the bytes they make.
    out.resize(end, 0);
}

/// Booleans a bit each, least significant bit first, the last byte padded with zeros: PLAIN
/// booleans, eight to a multiplication.
pub fn pack_bools(values: &[bool], out: &mut Vec<u8>) {
    let mut groups = values.chunks_exact(8);
    for group in &mut groups {
        let bytes: [u8; 8] = std::array::from_fn(|k| u8::from(group[k]));
        // Byte k (0 or 1) of the word lands on bit 56 + k of the product, and nothing else does.
        out.push((u64::from_le_bytes(bytes).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8);
    }
    let rest = groups.remainder();
    if !rest.is_empty() {
        out.push(rest.iter().enumerate().fold(0, |byte, (k, &v)| byte | (u8::from(v) << k)));
    }
}

/// `count` repeats of `value` as one run (nothing if `count` is 0).
pub fn run(value: u64, count: usize, width: u8, out: &mut Vec<u8>) {
    if count > 0 {
        repeated(value, count, width, out);
    }
}

/// `count` repeats of `value`: the count, then the value in whole bytes.
fn repeated(value: u64, count: usize, width: u8, out: &mut Vec<u8>) {
    varint((count as u64) << 1, out);
    out.extend_from_slice(&value.to_le_bytes()[..usize::from(width).div_ceil(8)]);
}

/// ULEB128, as run headers are written.
pub fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The bits a value up to `max` takes, at least one.
pub fn width(max: u32) -> u8 {
    (32 - max.leading_zeros()).max(1) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of `count` in an RLE / bit-packed hybrid stream of `width`-bit values, read as
    /// the format's Encodings.md describes it.
    fn decode(bytes: &[u8], width: u8, count: usize) -> Vec<u64> {
        let width = usize::from(width);
        let (mut at, mut values) = (0, Vec::new());
        while values.len() < count {
            let (mut header, mut shift) = (0u64, 0);
            loop {
                let b = bytes[at];
                at += 1;
                header |= u64::from(b & 0x7f) << shift;
                shift += 7;
                if b < 0x80 {
                    break;
                }
            }
            if header & 1 == 1 {
                // Groups of 8 values, `width` bits each, least significant bit first.
                let n = (header >> 1) as usize * 8;
                let bit = |i: usize| u64::from(bytes[at + i / 8] >> (i % 8) & 1);
                values.extend((0..n).map(|k| (0..width).fold(0, |v, b| v | bit(k * width + b) << b)));
                at += n * width / 8;
            } else {
                // A repeat: its count, then its value in whole bytes.
                let mut le = [0u8; 8];
                le[..width.div_ceil(8)].copy_from_slice(&bytes[at..at + width.div_ceil(8)]);
                values.extend(std::iter::repeat_n(u64::from_le_bytes(le), (header >> 1) as usize));
                at += width.div_ceil(8);
            }
        }
        assert_eq!(at, bytes.len(), "the stream ends with its values");
        values.truncate(count);
        values
    }

    #[test]
    fn the_hybrid_holds_the_values_with_repeats_as_runs() {
        // Repeats of every length around the shortest that is a run, after literals of every
        // length around a group, and one repeat after another.
        let mut values: Vec<u32> = Vec::new();
        for literals in [0, 1, 7, 8, 9, 15] {
            for repeat in [1, 7, 8, 9, 30] {
                values.extend((0..literals).map(|k| k % 5));
                values.extend(std::iter::repeat_n(6, repeat));
            }
        }
        values.extend(std::iter::repeat_n(2, 20));
        for width in [3, 9, 32] {
            let mut out = Vec::new();
            encode(&values, width, &mut out);
            let expected: Vec<u64> = values.iter().map(|&v| u64::from(v)).collect();
            assert_eq!(decode(&out, width, values.len()), expected, "width {width}");
        }
        // A repeat long enough is one run: its header and value, not its values' bits.
        let (mut long, mut short) = (Vec::new(), Vec::new());
        encode(&[1u32; 1000], 9, &mut long);
        encode(&[1u32; 7], 9, &mut short);
        assert_eq!(long, [0xd0, 0x0f, 1, 0], "1000 repeats: (1000 << 1) as a varint, then 1 in two bytes");
        assert_eq!(short[0], 0b11, "7 values are one bit-packed group");
    }

    #[test]
    fn booleans_pack_as_one_bit_each_does() {
        // Every byte's pattern, then a part group.
        let values: Vec<bool> = (0..256 * 8 + 5).map(|i| (i / 8) >> (i % 8) & 1 == 1 || i >= 256 * 8 + 3).collect();
        let (mut fast, mut bitwise) = (Vec::new(), Vec::new());
        pack_bools(&values, &mut fast);
        pack(
            &values.iter().map(|&b| u8::from(b)).collect::<Vec<_>>(),
            values.len().next_multiple_of(8),
            1,
            &mut bitwise,
        );
        assert_eq!(fast, bitwise);
        assert_eq!(fast[..256], (0..=255).collect::<Vec<u8>>());
        assert_eq!(fast[256], 0b11000);
    }
}
