//! The bytes of a symbol index file: what DWARF answered for each address
//! asked of one build, in a form that is read back without trusting it.
//!
//! Layout (little-endian), version 2 (version 1 had no columns; its files, `names.v1`, are
//! left as they are):
//!
//! ```text
//! magic      8   b"RTSYMIX\0"
//! version    u32 2
//! flags      u32 bit 0: names are demangled
//! build-id   u32 length (≤ 64), then the bytes
//! strings    u32 count, then each: u32 length, UTF-8 bytes
//! entries    u32 count, then each, by strictly increasing address:
//!            u64 address, u32 frames (0: DWARF names nothing there),
//!            then per frame, innermost first: u32 function (string id),
//!            u32 file (string id, or u32::MAX for none), u32 line + 1 (0 for none),
//!            u32 column + 1 (0 for none)
//! checksum   u32 CRC-32 of every byte before it
//! ```
//!
//! Every count is checked against the bytes that remain before anything is
//! allocated for it, so a hostile file costs at most its own size.

use crate::model::{Frame, Source, SpanName};

/// The first bytes of an index file.
pub const MAGIC: &[u8; 8] = b"RTSYMIX\0";
/// The version this code writes and reads.
pub const VERSION: u32 = 2;
/// The longest inline chain kept (deeper chains are not indexed).
pub const MAX_FRAMES: usize = 1024;
/// No file in a frame.
const NO_FILE: u32 = u32::MAX;
/// The bytes of a frame: function, file, line and column, a `u32` each.
const FRAME_BYTES: usize = 16;

/// What an index file holds.
#[derive(Debug, Default, PartialEq)]
pub struct Contents {
    /// The build the answers are for.
    pub build_id: Vec<u8>,
    /// Whether names were demangled.
    pub demangled: bool,
    /// Address to DWARF's answer there, by address.
    pub entries: Vec<(u64, Option<SpanName>)>,
}

/// Why an index file was not used: the field, where it is, what was expected.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} at offset {offset}: {problem}")]
pub struct FormatError {
    /// The field being read.
    pub field: &'static str,
    /// Its byte offset in the file.
    pub offset: usize,
    /// What was wrong.
    pub problem: String,
}

/// Encodes `contents` (entries sorted by address, distinct).
pub fn encode(contents: &Contents) -> Vec<u8> {
    let mut strings: Vec<&str> = Vec::new();
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    // Two passes: first the string table, then the entries that refer to it.
    for (_, answer) in &contents.entries {
        for (function, file, ..) in frames(answer.as_ref()) {
            for text in [Some(function), file].into_iter().flatten() {
                if !ids.contains_key(text) {
                    ids.insert(text, strings.len() as u32);
                    strings.push(text);
                }
            }
        }
    }
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&u32::from(contents.demangled).to_le_bytes());
    out.extend_from_slice(&(contents.build_id.len() as u32).to_le_bytes());
    out.extend_from_slice(&contents.build_id);
    out.extend_from_slice(&(strings.len() as u32).to_le_bytes());
    for s in &strings {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    out.extend_from_slice(&(contents.entries.len() as u32).to_le_bytes());
    for (address, answer) in &contents.entries {
        out.extend_from_slice(&address.to_le_bytes());
        let chain = frames(answer.as_ref());
        out.extend_from_slice(&(chain.len() as u32).to_le_bytes());
        for (function, file, line, column) in chain {
            out.extend_from_slice(&ids[function].to_le_bytes());
            out.extend_from_slice(&file.map_or(NO_FILE, |f| ids[f]).to_le_bytes());
            out.extend_from_slice(&line.map_or(0, |l| l.saturating_add(1)).to_le_bytes());
            out.extend_from_slice(&column.map_or(0, |c| c.saturating_add(1)).to_le_bytes());
        }
    }
    let checksum = crc32fast::hash(&out);
    out.extend_from_slice(&checksum.to_le_bytes());
    out
}

/// A frame as stored: function, file, line, column.
type Stored<'a> = (&'a str, Option<&'a str>, Option<u32>, Option<u32>);

/// The frames of an answer, innermost first.
fn frames(answer: Option<&SpanName>) -> Vec<Stored<'_>> {
    let Some(n) = answer else { return Vec::new() };
    let mut out = vec![(n.name.as_str(), n.file.as_deref(), n.line, n.column)];
    out.extend(n.inlined_into.iter().map(|f| (f.function.as_str(), f.file.as_deref(), f.line, f.column)));
    out
}

/// Whether an answer fits the format (an inline chain no deeper than
/// [`MAX_FRAMES`], no line or column that cannot be stored).
pub fn storable(answer: Option<&SpanName>) -> bool {
    answer.is_none_or(|n| {
        n.inlined_into.len() < MAX_FRAMES
            && frames(Some(n)).iter().all(|&(_, _, line, column)| line != Some(u32::MAX) && column != Some(u32::MAX))
    })
}

/// An index file read and checked, its answers decoded only when asked
/// for: a run that asks a few thousand addresses of a large index reads
/// those, not the rest.
#[derive(Debug)]
pub struct View {
    bytes: Vec<u8>,
    /// The build the answers are for.
    pub build_id: Vec<u8>,
    /// Whether names were demangled.
    pub demangled: bool,
    /// Every string, one after another (each checked to be UTF-8).
    text: String,
    /// Each string's byte range in `text`.
    strings: Vec<std::ops::Range<usize>>,
    /// Each entry's address and the offset of its frame count, by address.
    entries: Vec<(u64, usize)>,
}

impl View {
    /// Reads an index file's bytes, checking every field.
    pub fn parse(bytes: Vec<u8>) -> Result<View, FormatError> {
        let body_len = bytes.len().checked_sub(4).ok_or_else(|| FormatError {
            field: "file",
            offset: 0,
            problem: format!("{} bytes, shorter than any index", bytes.len()),
        })?;
        let (body, tail) = bytes.split_at(body_len);
        let mut r = Reader { bytes: body, at: 0 };
        let magic = r.take("magic", 8)?;
        if magic != MAGIC {
            let problem = format!("{magic:02x?}, expected {MAGIC:02x?} (not a ringtrace symbol index)");
            return Err(r.error("magic", 0, problem));
        }
        let version = r.u32("version")?;
        if version != VERSION {
            return Err(r.error("version", 8, format!("{version}, expected {VERSION}")));
        }
        let stored = u32::from_le_bytes(tail.try_into().unwrap_or_default());
        let computed = crc32fast::hash(body);
        if stored != computed {
            let problem = format!("{stored:#010x}, expected {computed:#010x} (a corrupt or truncated file)");
            return Err(r.error("checksum", body_len, problem));
        }
        let flags = r.u32("flags")?;
        let length = r.count("build-id length", 1, 64)?;
        let build_id = r.take("build-id", length)?.to_vec();
        let count = r.count("string count", 4, usize::MAX)?;
        let (mut strings, mut text) = (Vec::with_capacity(count), String::new());
        for _ in 0..count {
            let length = r.count("string length", 1, usize::MAX)?;
            let at = r.at;
            let string = std::str::from_utf8(r.take("string", length)?)
                .map_err(|e| r.error("string", at, format!("not UTF-8 ({e})")))?;
            strings.push(text.len()..text.len() + length);
            text.push_str(string);
        }
        let count = r.count("entry count", 12, usize::MAX)?;
        let mut entries: Vec<(u64, usize)> = Vec::with_capacity(count);
        for _ in 0..count {
            let at = r.at;
            let address = r.u64("address")?;
            if entries.last().is_some_and(|(last, _)| *last >= address) {
                return Err(r.error("address", at, format!("{address:#x}, not above the entry before it")));
            }
            entries.push((address, r.at));
            let depth = r.count("frame count", FRAME_BYTES, MAX_FRAMES)?;
            for _ in 0..depth {
                for field in ["function", "file"] {
                    let id = r.u32(field)?;
                    if (id as usize) >= strings.len() && !(field == "file" && id == NO_FILE) {
                        let problem = format!("string {id}, but the file has {}", strings.len());
                        return Err(r.error(field, r.at - 4, problem));
                    }
                }
                r.u32("line")?;
                r.u32("column")?;
            }
        }
        if r.at != body.len() {
            return Err(r.error("end", r.at, format!("{} bytes after the last entry", body.len() - r.at)));
        }
        Ok(View { bytes, build_id, demangled: flags & 1 != 0, text, strings, entries })
    }

    /// The answer at `address`, if the file has one (`Some(None)`: DWARF names nothing there).
    pub fn get(&self, address: u64) -> Option<Option<SpanName>> {
        let i = self.entries.binary_search_by_key(&address, |e| e.0).ok()?;
        Some(self.answer(self.entries[i].1))
    }

    /// Every entry, decoded, by address.
    pub fn entries(&self) -> impl Iterator<Item = (u64, Option<SpanName>)> + '_ {
        self.entries.iter().map(|&(address, at)| (address, self.answer(at)))
    }

    /// The answer whose frame count is at `at` (checked by [`View::parse`]).
    fn answer(&self, at: usize) -> Option<SpanName> {
        let word = |i: usize| {
            let b = self.bytes.get(at + 4 * i..at + 4 * i + 4).unwrap_or(&[0; 4]);
            u32::from_le_bytes(b.try_into().unwrap_or_default())
        };
        let text = |id: u32| Some(self.text.get(self.strings.get(id as usize)?.clone())?.to_owned());
        let mut chain: Vec<Frame> = (0..word(0) as usize)
            .map(|f| Frame {
                function: text(word(1 + 4 * f)).unwrap_or_default(),
                file: text(word(2 + 4 * f)),
                line: word(3 + 4 * f).checked_sub(1),
                column: word(4 + 4 * f).checked_sub(1),
            })
            .collect();
        (!chain.is_empty()).then(|| {
            let innermost = chain.remove(0);
            SpanName {
                name: innermost.function,
                file: innermost.file,
                line: innermost.line,
                column: innermost.column,
                source: Source::Dwarf,
                inlined_into: chain,
            }
        })
    }
}

#[cfg(test)]
/// Reads an index file's bytes, checking every field, and decodes them all.
#[cfg(test)]
pub fn decode(bytes: &[u8]) -> Result<Contents, FormatError> {
    let view = View::parse(bytes.to_vec())?;
    let entries = view.entries().collect();
    Ok(Contents { build_id: view.build_id, demangled: view.demangled, entries })
}

/// A cursor over the bytes, every read bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn error(&self, field: &'static str, offset: usize, problem: String) -> FormatError {
        FormatError { field, offset, problem }
    }

    fn take(&mut self, field: &'static str, length: usize) -> Result<&'a [u8], FormatError> {
        let rest = self.bytes.len() - self.at;
        if length > rest {
            return Err(self.error(field, self.at, format!("{length} bytes, but {rest} remain (a truncated file)")));
        }
        let taken = &self.bytes[self.at..self.at + length];
        self.at += length;
        Ok(taken)
    }

    fn u32(&mut self, field: &'static str) -> Result<u32, FormatError> {
        Ok(u32::from_le_bytes(self.take(field, 4)?.try_into().unwrap_or_default()))
    }

    fn u64(&mut self, field: &'static str) -> Result<u64, FormatError> {
        Ok(u64::from_le_bytes(self.take(field, 8)?.try_into().unwrap_or_default()))
    }

    /// A count of items at least `min_bytes` each, at most `max`: refused when
    /// the bytes left cannot hold that many, before anything is allocated.
    fn count(&mut self, field: &'static str, min_bytes: usize, max: usize) -> Result<usize, FormatError> {
        let at = self.at;
        let count = self.u32(field)? as usize;
        let fits = (self.bytes.len() - self.at) / min_bytes;
        if count > max.min(fits) {
            let limit = if count > max { format!("at most {max}") } else { format!("the {fits} the file can hold") };
            return Err(self.error(field, at, format!("{count}, expected {limit}")));
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Contents {
        let frame = |f: &str, file: Option<&str>, line, column| Frame {
            function: f.into(),
            file: file.map(Into::into),
            line,
            column,
        };
        Contents {
            build_id: vec![0xab; 20],
            demangled: true,
            entries: vec![
                (0x1000, None),
                (
                    0x1004,
                    Some(SpanName {
                        name: "inner".into(),
                        file: Some("/src/a.rs".into()),
                        line: Some(0),
                        column: Some(0),
                        source: Source::Dwarf,
                        inlined_into: vec![
                            frame("outer", Some("/src/a.rs"), Some(7), Some(12)),
                            frame("main", None, None, None),
                        ],
                    }),
                ),
                (
                    0x2000,
                    Some(SpanName {
                        name: "outer".into(),
                        file: None,
                        line: None,
                        column: None,
                        source: Source::Dwarf,
                        inlined_into: vec![],
                    }),
                ),
            ],
        }
    }

    #[test]
    fn what_is_written_reads_back() {
        let contents = sample();
        assert_eq!(decode(&encode(&contents)).unwrap(), contents);
    }

    #[test]
    fn every_truncation_and_every_flipped_bit_is_refused() {
        let bytes = encode(&sample());
        for cut in 0..bytes.len() {
            assert!(decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for bit in 0..bytes.len() * 8 {
            let mut bad = bytes.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&bad).is_err(), "bit {bit}");
        }
    }

    /// A file with a valid checksum that claims more than it holds.
    fn resealed(mut body: Vec<u8>) -> Vec<u8> {
        let checksum = crc32fast::hash(&body);
        body.extend_from_slice(&checksum.to_le_bytes());
        body
    }

    #[test]
    fn counts_larger_than_the_file_are_refused_before_allocating() {
        let bytes = encode(&sample());
        let body = &bytes[..bytes.len() - 4];
        // The string count sits after magic, version, flags, build-id length and 20 build-id bytes.
        let at = 8 + 4 + 4 + 4 + 20;
        let mut huge = body.to_vec();
        huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = decode(&resealed(huge)).unwrap_err();
        assert_eq!((e.field, e.offset), ("string count", at), "{e}");
        assert!(e.problem.contains("4294967295, expected the"), "{e}");
    }

    #[test]
    fn references_past_the_string_table_and_unsorted_addresses_are_refused() {
        let mut contents = sample();
        contents.entries.swap(0, 2);
        let e = decode(&encode(&contents)).unwrap_err();
        assert_eq!(e.field, "address", "{e}");
        let bytes = encode(&sample());
        let mut body = bytes[..bytes.len() - 4].to_vec();
        // The last frame's function id is the 16th byte from the end of the body.
        let at = body.len() - 16;
        body[at..at + 4].copy_from_slice(&99u32.to_le_bytes());
        let e = decode(&resealed(body)).unwrap_err();
        assert_eq!((e.field, e.offset), ("function", at), "{e}");
    }
}
