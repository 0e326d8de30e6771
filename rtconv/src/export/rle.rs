//! Parquet's RLE / bit-packing hybrid encoding of small unsigned integers
//! (dictionary keys, definition levels), as the format's `Encodings.md`
//! defines it: runs of one repeated value, and groups of eight values packed
//! in `width` bits each, least significant bit first — the packing
//! DELTA_BINARY_PACKED's miniblocks and PLAIN booleans share ([`pack`]).

/// Repeats shorter than this go into bit-packed groups.
const MIN_REPEAT: usize = 8;

/// Groups in one bit-packed run at most: its header then fits in one byte, as the reference
/// writers (parquet-cpp, parquet-mr) keep it.
const MAX_GROUPS: usize = 63;

/// Appends `values`, each below 2^`width` (1 ≤ `width` ≤ 32), to `out`; the last group is padded
/// with zeros, which a reader leaves out by the page's count of values.
pub fn encode(values: &[u32], width: u8, out: &mut Vec<u8>) {
    debug_assert!((1..=32).contains(&width));
    // The start of the values not written yet.
    let mut literal = 0;
    let mut i = 0;
    while let Some(&v) = values.get(i) {
        let end = i + values[i..].iter().take_while(|&&x| x == v).count();
        if end - i >= MIN_REPEAT {
            // The values before the repeat go out in whole groups: the repeat lends the last group
            // its first values.
            let lent = (8 - (i - literal) % 8) % 8;
            bit_packed(&values[literal..i + lent], width, out);
            repeated(v, end - i - lent, width, out);
            literal = end;
        }
        i = end;
    }
    bit_packed(&values[literal..], width, out);
}

/// `values` as bit-packed runs; all but the last group of the last run whole.
fn bit_packed(values: &[u32], width: u8, out: &mut Vec<u8>) {
    for run in values.chunks(MAX_GROUPS * 8) {
        let groups = run.len().div_ceil(8);
        varint((groups as u64) << 1 | 1, out);
        pack(run, groups * 8, width, out);
    }
}

/// `values`, then zeros up to `count` values, each in `width` bits (0 to 64), least significant
/// bit first, as Parquet packs bits; `count * width` a multiple of 8.
pub fn pack<T: Copy + Into<u64>>(values: &[T], count: usize, width: u8, out: &mut Vec<u8>) {
    let width = u32::from(width);
    let values = &values[..values.len().min(count)];
    let end = out.len() + count * width as usize / 8;
    match width {
        // Deltas that are all their least (ids, a thread's constant columns) take no bits.
        0 => {}
        1 => {
            for group in values.chunks(8) {
                out.push(group.iter().enumerate().fold(0u8, |byte, (k, &v)| byte | ((v.into() as u8 & 1) << k)));
            }
        }
        2..=32 => {
            // Fewer than 32 bits wait at a time, so a value fits beside them in 64; they go out 4
            // bytes at a time.
            let (mut bits, mut pending) = (0u64, 0u32);
            for &v in values {
                bits |= v.into() << pending;
                pending += width;
                if pending >= 32 {
                    out.extend_from_slice(&(bits as u32).to_le_bytes());
                    bits >>= 32;
                    pending -= 32;
                }
            }
            out.extend_from_slice(&(bits as u32).to_le_bytes()[..pending.div_ceil(8) as usize]);
        }
        _ => {
            let (mut bits, mut pending) = (0u128, 0u32);
            for &v in values {
                bits |= u128::from(v.into()) << pending;
                pending += width;
                if pending >= 64 {
                    out.extend_from_slice(&(bits as u64).to_le_bytes());
                    bits >>= 64;
                    pending -= 64;
                }
            }
            out.extend_from_slice(&(bits as u64).to_le_bytes()[..pending.div_ceil(8) as usize]);
        }
    }
    // The zeros after the values, as the bytes they make.
    out.resize(end, 0);
}

/// `count` repeats of `value`: the count, then the value in whole bytes.
fn repeated(value: u32, count: usize, width: u8, out: &mut Vec<u8>) {
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
