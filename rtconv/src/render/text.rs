//! An output buffer for text formats that write millions of short pieces.
//!
//! A Chrome event or an ftrace line is five or six pieces of 3 to 40 bytes.
//! Through `BufWriter` each piece is a length check and a `memcpy` call
//! whose length the CPU cannot know ahead. Here a piece known in advance (a
//! key's event head, a thread's tail) is stored padded to whole 32-byte
//! blocks and copied block by block into room kept at the buffer's end,
//! then the write position advances by its true length; numbers are
//! formatted in place, in room kept the same way. Every copy is a
//! fixed-size move, every index is bounds-checked, and the only branch per
//! piece is whether the buffer needs flushing.

use std::io::{self, Write};

/// The unit pieces are padded to and copied in.
const BLOCK: usize = 32;

/// Bytes written out at once: more than the 64 KiB of a `BufWriter` the
/// caller may have, which then passes them through instead of copying them.
const CAPACITY: usize = 1 << 17;

/// A piece of text known before writing, padded for block copies.
#[derive(Clone, Debug)]
pub struct Piece {
    blocks: Vec<[u8; BLOCK]>,
    len: usize,
}

impl Piece {
    /// `bytes`, ready to be written many times.
    pub fn new(bytes: &[u8]) -> Self {
        let mut blocks = Vec::new();
        padded(bytes, &mut blocks);
        Piece { blocks, len: bytes.len() }
    }
}

/// Appends `bytes` to `blocks`, padded with zeros to whole blocks.
fn padded(bytes: &[u8], blocks: &mut Vec<[u8; BLOCK]>) {
    blocks.extend(bytes.chunks(BLOCK).map(|chunk| {
        let mut block = [0; BLOCK];
        block[..chunk.len()].copy_from_slice(chunk);
        block
    }));
}

/// Many pieces in one allocation, by index (a piece per key): 8 bytes of
/// index and the padded text per piece, where a `Vec` of [`Piece`]s would
/// cost two allocations' headers and a heap block each.
#[derive(Clone, Debug, Default)]
pub struct Pieces {
    blocks: Vec<[u8; BLOCK]>,
    /// Each piece's first block and true length.
    index: Vec<(u32, u32)>,
}

impl Pieces {
    /// Adds `bytes` as the next piece. A piece that would start past 2^32
    /// blocks (128 GiB), or is longer than 4 GiB, is added empty.
    pub fn push(&mut self, bytes: &[u8]) {
        match (u32::try_from(self.blocks.len()), u32::try_from(bytes.len())) {
            (Ok(start), Ok(len)) => {
                padded(bytes, &mut self.blocks);
                self.index.push((start, len));
            }
            _ => self.index.push((0, 0)),
        }
    }

    /// How many pieces there are.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.index.len()
    }

    /// Piece `i`: its blocks and true length (none past the end).
    #[inline(always)]
    fn get(&self, i: usize) -> (&[[u8; BLOCK]], usize) {
        let Some(&(start, len)) = self.index.get(i) else { return (&[], 0) };
        let (start, len) = (start as usize, len as usize);
        (self.blocks.get(start..start + len.div_ceil(BLOCK)).unwrap_or_default(), len)
    }
}

/// `0000` to `9999`: four decimal digits by value (40 KiB).
static DIGITS4: [[u8; 4]; 10_000] = {
    let mut table = [[0; 4]; 10_000];
    let mut i = 0;
    while i < 10_000 {
        table[i] =
            [b'0' + (i / 1000) as u8, b'0' + (i / 100 % 10) as u8, b'0' + (i / 10 % 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    table
};

/// `n` (below 10^8) as eight ASCII digits, leading zeros included, the
/// most significant in the lowest byte (first in memory): two table
/// entries. Working the digits out in lanes of a `u64` took six
/// multiplications a number, and the multiplier was the text writers'
/// bottleneck; this takes two (docs/PERFORMANCE.md).
#[inline(always)]
fn eight_digits(n: u32) -> u64 {
    let (high, low) = (n / 10_000, n % 10_000);
    let four = |v: u32| DIGITS4.get(v as usize).map_or(0, |d| u64::from(u32::from_le_bytes(*d)));
    four(high) | four(low) << 32
}

/// The decimal digits of `v` (below 10^4) as little-endian bytes, the most
/// significant first in memory, and how many there are (1 to 4); `None`
/// from 10^4 up.
#[inline(always)]
pub fn four_digits(v: u32) -> Option<(u32, u32)> {
    let len = decimal_len4(v);
    DIGITS4.get(v as usize).map(|d| (u32::from_le_bytes(*d) >> (8 * (4 - len)), len))
}

/// How many digits `v` (below 10^4) has, 0 counting as one.
#[inline(always)]
fn decimal_len4(v: u32) -> u32 {
    1 + u32::from(v >= 10) + u32::from(v >= 100) + u32::from(v >= 1000)
}

/// Writes the decimal digits of `n` at the start of `out`; returns their
/// count. Writes 8 bytes at least (what follows the digits is the caller's
/// to write over): `out` needs 20 bytes for any `u64`, 8 below 10^8.
#[inline(always)]
pub fn digits(n: u64, out: &mut [u8]) -> usize {
    if n >= 100_000_000 {
        return digits_long(n, out);
    }
    let n = n as u32; // below 10^8
    let high = n / 10_000;
    let len = if high == 0 { decimal_len4(n) } else { 4 + decimal_len4(high) };
    if let Some(to) = out.first_chunk_mut::<8>() {
        // Leading zeros are the low bytes.
        *to = (eight_digits(n) >> (8 * (8 - len))).to_le_bytes();
    }
    len as usize
}

/// [`digits`] of a number of 10^8 and up: the digits above the last eight, then those eight.
#[cold]
#[inline(never)]
fn digits_long(n: u64, out: &mut [u8]) -> usize {
    let len = digits(n / 100_000_000, out);
    let low = (n % 100_000_000) as u32; // below 10^8
    if let Some(to) = out.get_mut(len..).and_then(|to| to.first_chunk_mut::<8>()) {
        *to = eight_digits(low).to_le_bytes();
    }
    len + 8
}

/// `.000` to `.999`: a microsecond count's three decimals, by nanoseconds.
pub static DECIMALS: [[u8; 4]; 1000] = {
    let mut table = [[0; 4]; 1000];
    let mut i = 0;
    while i < 1000 {
        table[i] = [b'.', b'0' + (i / 100) as u8, b'0' + (i / 10 % 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    table
};

/// Writes `ns` as microseconds with exactly three decimals (negative counts
/// as `0.000`) at the start of `to`; returns the length (at most 21 bytes).
#[inline(always)]
fn microseconds(ns: i64, to: &mut [u8; NUMBER]) -> usize {
    let ns = ns.max(0) as u64;
    // Under 10 ms (most durations): the digits in one store, the decimals in another.
    if let Some((us, len)) = u32::try_from(ns / 1000).ok().and_then(four_digits) {
        let len = len as usize;
        to[..4].copy_from_slice(&us.to_le_bytes());
        if let Some(decimals) = to.get_mut(len..len + 4) {
            decimals.copy_from_slice(&DECIMALS[(ns % 1000) as usize]);
        }
        return len + 4;
    }
    // At most 17 integer digits (8 more bytes written past them), then the point and three decimals.
    let len = digits(ns / 1000, to);
    if let Some(decimals) = to.get_mut(len..len + 4) {
        decimals.copy_from_slice(&DECIMALS[(ns % 1000) as usize]);
    }
    len + 4
}

/// The length of `ns` written as [`Text::us`] writes it.
#[inline(always)]
pub fn us_len(ns: i64) -> usize {
    // The integer digits (at least one), the point and three decimals: counted, not written.
    let ns = ns.max(0) as u64;
    if ns < 10_000 {
        return 5; // under 10 µs (most spans): "9.999"
    }
    if ns < 10_000_000 {
        // Under 10 ms: two to four digits. The first comparison always holds past the line
        // above; written without it, ftrace's `-t` took 4.8 M instructions more on the Lua trace
        // (the compiler laid the branches out otherwise).
        return 5 + usize::from(ns >= 10_000) + usize::from(ns >= 100_000) + usize::from(ns >= 1_000_000);
    }
    (ns / 1000).checked_ilog10().map_or(1, |log| log as usize + 1) + 4
}

/// [`us_len`] of times that mostly stay within a power of ten (a thread's starts, in start
/// order; its ends): the length kept for the range of times that share it, found anew only
/// past its ends.
#[derive(Clone, Copy, Debug, Default)]
pub struct UsLen {
    /// The times `from..to` take `len` bytes (empty until the first time).
    from: i64,
    to: i64,
    len: usize,
}

impl UsLen {
    /// [`us_len`]`(ns)`.
    #[inline(always)]
    pub fn of(&mut self, ns: i64) -> usize {
        if ns < self.from || ns >= self.to {
            self.len = us_len(ns);
            // Every time of `len` bytes: from 10^(digits-1) µs (0 for one digit) up to 10^digits µs.
            let digits = (self.len - 4) as u32;
            let power = |d: u32| 10i64.checked_pow(d).and_then(|p| p.checked_mul(1000)).unwrap_or(i64::MAX);
            self.from = if digits == 1 { i64::MIN } else { power(digits - 1) };
            self.to = power(digits);
        }
        self.len
    }
}

/// Copies `blocks` to `to` (as long as they are): a piece of one or two
/// blocks (most are) as fixed-size moves, without a loop.
#[inline(always)]
fn copy_blocks(to: &mut [u8], blocks: &[[u8; BLOCK]]) {
    let (room, _) = to.as_chunks_mut::<BLOCK>();
    match (room, blocks) {
        ([to], [from]) => *to = *from,
        ([to, to2], [from, from2]) => (*to, *to2) = (*from, *from2),
        (room, blocks) => room.iter_mut().zip(blocks).for_each(|(to, from)| *to = *from),
    }
}

/// Spaces written at once.
const SPACES: [u8; 64] = [b' '; 64];

/// The most spaces [`Text::line_start`] writes.
pub const LINE_SPACES: usize = 256;

/// Room kept for a formatted number.
pub const NUMBER: usize = 32;

/// Bytes in a [`Short`] piece.
const SHORT: usize = 8;

/// A piece of text of at most 8 bytes, written as one 8-byte store.
#[derive(Clone, Copy, Debug)]
pub struct Short {
    bytes: [u8; SHORT],
    len: usize,
}

impl Short {
    /// `text` (its first 8 bytes).
    pub const fn new(text: &[u8]) -> Self {
        let mut bytes = [0; SHORT];
        let mut len = 0;
        while len < text.len() && len < SHORT {
            bytes[len] = text[len];
            len += 1;
        }
        Short { bytes, len }
    }
}

/// A write buffer for many short pieces (see the module documentation).
pub struct Text<'w> {
    buf: Vec<u8>,
    pos: usize,
    out: &'w mut dyn Write,
}

impl<'w> Text<'w> {
    /// A buffer writing to `out` in writes of about 128 KiB.
    pub fn new(out: &'w mut dyn Write) -> Self {
        Text { buf: vec![0; CAPACITY + 4 * BLOCK], pos: 0, out }
    }

    /// Makes sure `n` bytes fit after the write position.
    #[inline(always)]
    fn room(&mut self, n: usize) -> io::Result<()> {
        if self.pos + n > self.buf.len() { self.flush_for(n) } else { Ok(()) }
    }

    #[cold]
    fn flush_for(&mut self, n: usize) -> io::Result<()> {
        self.drain()?;
        if n > self.buf.len() {
            self.buf.resize(n, 0);
        }
        Ok(())
    }

    /// Writes `piece`.
    #[inline(always)]
    pub fn piece(&mut self, piece: &Piece) -> io::Result<()> {
        self.blocks(&piece.blocks, piece.len)
    }

    /// Writes piece `i` of `pieces` (nothing if there is no such piece).
    #[inline(always)]
    pub fn piece_at(&mut self, pieces: &Pieces, i: usize) -> io::Result<()> {
        let (blocks, len) = pieces.get(i);
        self.blocks(blocks, len)
    }

    /// Copies `blocks` whole and advances by `len`, their text's true length.
    #[inline(always)]
    fn blocks(&mut self, blocks: &[[u8; BLOCK]], len: usize) -> io::Result<()> {
        let padded = blocks.len() * BLOCK;
        self.room(padded)?;
        copy_blocks(&mut self.buf[self.pos..self.pos + padded], blocks);
        self.pos += len;
        Ok(())
    }

    /// Ends the line just written with `end` instead of its newline (a rare comment on a line of
    /// pieces); `end` carries its own newline.
    pub fn end_line_with(&mut self, end: &[u8]) -> io::Result<()> {
        if self.pos > 0 && self.buf[self.pos - 1] == b'\n' {
            self.pos -= 1;
        }
        self.bytes(end)
    }

    /// Writes `bytes` (for text not known in advance, or rare).
    pub fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.room(bytes.len())?;
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
        Ok(())
    }

    /// The next `N` bytes of the buffer, to format text in place: bytes
    /// stored one by one and then copied as a block would stall on store
    /// forwarding. The caller advances `pos` by what it wrote.
    #[inline(always)]
    fn next<const N: usize>(&mut self) -> io::Result<Option<&mut [u8; N]>> {
        self.room(N)?;
        Ok(self.buf[self.pos..].first_chunk_mut::<N>())
    }

    /// Writes a nanosecond count as microseconds with exactly three
    /// decimals (negative counts as `0.000`).
    #[inline(always)]
    pub fn us(&mut self, ns: i64) -> io::Result<()> {
        if let Some(to) = self.next::<32>()? {
            self.pos += microseconds(ns, to);
        }
        Ok(())
    }

    /// Writes piece `i` of `pieces`, the nanosecond count `a` as
    /// microseconds, `between`, then `b` as microseconds — a Chrome event's
    /// head and two times — with one check for room, not four.
    #[inline(always)]
    pub fn piece_us_us(&mut self, pieces: &Pieces, i: usize, a: i64, between: &Short, b: i64) -> io::Result<()> {
        let (blocks, len) = pieces.get(i);
        let padded = blocks.len() * BLOCK;
        // Each number takes up to 32 bytes of room (21 written, the rest written over).
        self.room(padded + 2 * NUMBER + SHORT)?;
        let mut pos = self.pos;
        copy_blocks(&mut self.buf[pos..pos + padded], blocks);
        pos += len;
        if let Some(to) = self.buf[pos..].first_chunk_mut::<NUMBER>() {
            pos += microseconds(a, to);
        }
        if let Some(to) = self.buf[pos..].first_chunk_mut::<SHORT>() {
            *to = between.bytes;
            pos += between.len;
        }
        if let Some(to) = self.buf[pos..].first_chunk_mut::<NUMBER>() {
            pos += microseconds(b, to);
        }
        self.pos = pos;
        Ok(())
    }

    /// Writes `n` spaces.
    #[inline]
    pub fn spaces(&mut self, mut n: usize) -> io::Result<()> {
        while n > 0 {
            self.room(SPACES.len())?;
            if let Some(to) = self.buf[self.pos..].first_chunk_mut::<{ SPACES.len() }>() {
                *to = SPACES;
            }
            let step = n.min(SPACES.len());
            self.pos += step;
            n -= step;
        }
        Ok(())
    }

    /// Writes `head`, what `f` formats in place (up to 32 bytes; it returns
    /// how many), then `n` spaces (at most [`LINE_SPACES`]): the start of a
    /// text line, with one check for room, not three.
    #[inline(always)]
    pub fn line_start(&mut self, head: &Piece, f: impl FnOnce(&mut [u8; NUMBER]) -> usize, n: usize) -> io::Result<()> {
        let padded = head.blocks.len() * BLOCK;
        self.room(padded + NUMBER + LINE_SPACES + SPACES.len())?;
        let mut pos = self.pos;
        copy_blocks(&mut self.buf[pos..pos + padded], &head.blocks);
        pos += head.len;
        if let Some(to) = self.buf[pos..].first_chunk_mut::<NUMBER>() {
            pos += f(to).min(NUMBER);
        }
        let mut left = n.min(LINE_SPACES);
        while let Some(to) = self.buf[pos..].first_chunk_mut::<{ SPACES.len() }>() {
            *to = SPACES;
            let step = left.min(SPACES.len());
            pos += step;
            left -= step;
            if left == 0 {
                break;
            }
        }
        self.pos = pos;
        Ok(())
    }

    /// Hands what is buffered to the writer.
    fn drain(&mut self) -> io::Result<()> {
        self.out.write_all(&self.buf[..self.pos])?;
        self.pos = 0;
        Ok(())
    }

    /// Writes out what is buffered and flushes the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.drain()?;
        self.out.flush()
    }
}

impl Write for Text<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.bytes(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Text::flush(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Text<'_>) -> io::Result<()>) -> String {
        let mut out = Vec::new();
        let mut text = Text::new(&mut out);
        f(&mut text).unwrap();
        text.flush().unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn numbers_match_std_formatting() {
        let mut samples = vec![0, 1, 9, 10, 99, 100, 101, 999, 1000, u64::MAX, u64::MAX - 1];
        samples.extend((0..20).flat_map(|p| {
            let x = 10u64.pow(p);
            [x - 1, x, x + 1]
        }));
        samples.extend((0..10_000u64).map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (i % 64)));
        for n in samples {
            let mut text = [0; 20];
            let len = digits(n, &mut text);
            assert_eq!(std::str::from_utf8(&text[..len]).unwrap(), n.to_string());
            let ns = n as i64;
            let expected = if ns < 0 { "0.000".to_string() } else { format!("{}.{:03}", ns / 1000, ns % 1000) };
            assert_eq!(written(|t| t.us(ns)), expected, "{ns} ns");
            assert_eq!(us_len(ns), expected.len(), "{ns} ns");
        }
        assert_eq!(written(|t| t.us(i64::MAX)), "9223372036854775.807");
        assert_eq!((us_len(i64::MAX), us_len(i64::MIN)), (20, 5));
    }

    #[test]
    fn lengths_kept_for_a_range_equal_those_counted_anew() {
        let mut kept = UsLen::default();
        let mut times: Vec<i64> = (0..19).flat_map(|p| [-1, 0, 1].map(|d| 10i64.pow(p) + d)).collect();
        times.extend([i64::MIN, -1, 0, i64::MAX, 999, 1000, 9_999_999, 10_000_000]);
        let mut rng = crate::model::test_dumps::XorShift(0x9E37_79B9_7F4A_7C15);
        times.extend((0..10_000).map(|i| (rng.next() >> (i % 64)) as i64));
        // Rising, falling and at random: each answer that of `us_len`.
        let mut rising = times.clone();
        rising.sort_unstable();
        for ns in rising.iter().chain(rising.iter().rev()).chain(&times) {
            assert_eq!(kept.of(*ns), us_len(*ns), "{ns} ns");
        }
    }

    #[test]
    fn pieces_spaces_and_bytes_keep_their_order_across_flushes() {
        let pieces: Vec<Piece> = [&b""[..], b"a", &[b'x'; 31], &[b'y'; 32], &[b'z'; 33], &[b'w'; 200]]
            .iter()
            .map(|b| Piece::new(b))
            .collect();
        let mut expected = String::new();
        let got = written(|t| {
            // Several times the buffer's size, so flushes fall between pieces of every kind.
            for i in 0..20_000usize {
                let p = &pieces[i % pieces.len()];
                t.piece(p)?;
                expected.push_str(std::str::from_utf8(&p.blocks.concat()[..p.len]).unwrap());
                t.spaces(i % 150)?;
                expected.push_str(&" ".repeat(i % 150));
                t.us(i as i64)?;
                expected.push_str(&format!("{}.{:03}", i / 1000, i % 1000));
                t.bytes(b"|")?;
                expected.push('|');
            }
            Ok(())
        });
        assert_eq!(got, expected);
        // The same pieces from one table, by index, and an index past its end writes nothing.
        let mut table = Pieces::default();
        for b in [&b""[..], b"a", &[b'x'; 31], &[b'y'; 32], &[b'z'; 33], &[b'w'; 200]] {
            table.push(b);
        }
        assert_eq!(table.len(), pieces.len());
        let from_table = written(|t| (0..=table.len()).try_for_each(|i| t.piece_at(&table, i)));
        let from_pieces = written(|t| pieces.iter().try_for_each(|p| t.piece(p)));
        assert_eq!(from_table, from_pieces);
        // A piece longer than the whole buffer still goes out whole.
        let long = Piece::new(&vec![b'q'; CAPACITY * 2 + 5]);
        assert_eq!(written(|t| t.piece(&long)), "q".repeat(CAPACITY * 2 + 5));
    }
}
