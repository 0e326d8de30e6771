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
    // The start of the values not written yet.
    let mut literal = 0;
    let mut i = 0;
    while let Some(&v) = values.get(i) {
        let end = run_end(values, i);
        if end - i >= MIN_REPEAT {
            // The values before the repeat go out in whole groups: the repeat lends the last group
            // its first values.
            let lent = (8 - (i - literal) % 8) % 8;
            bit_packed(&values[literal..i + lent], width, out);
            repeated(v.into(), end - i - lent, width, out);
            literal = end;
        }
        i = end;
    }
    bit_packed(&values[literal..], width, out);
}

/// The end of the run of values equal to `values[i]` that starts at `i`.
fn run_end<T: Copy + PartialEq>(values: &[T], i: usize) -> usize {
    let v = values[i];
    let mut end = i + 1;
    // Long runs (a dump's constant columns, a thread's) sixteen values at a time.
    while let Some(next) = values.get(end..end + 16) {
        if !next.iter().all(|&x| x == v) {
            break;
        }
        end += 16;
    }
    end + values[end..].iter().position(|&x| x != v).unwrap_or(values.len() - end)
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

    #[test]
    fn runs_end_where_their_value_changes() {
        let values: Vec<u32> = [vec![3; 40], vec![4], vec![3; 16], vec![5; 17]].concat();
        assert_eq!(run_end(&values, 0), 40);
        assert_eq!(run_end(&values, 5), 40);
        assert_eq!(run_end(&values, 40), 41);
        assert_eq!(run_end(&values, 41), 57);
        assert_eq!(run_end(&values, 57), 74);
        assert_eq!(run_end(&values, 73), 74);
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
