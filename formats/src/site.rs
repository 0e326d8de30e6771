//! Site descriptors: per-call-site statics that name a span without pointers.
//!
//! A descriptor is built at compile time by [`encode_site`] and placed by the
//! recorder in the `ringtrace_sites` linker section; its address is the span's
//! key. Because it holds its label and file inline, the whole section can be
//! copied into a dump and decoded by [`decode_site`] with no binary at hand.
//!
//! Layout (target byte order), aligned to 8 bytes:
//! `magic u32 | line u32 | label_len u16 | file_len u16 | column u32 | label | file | zero padding`.

use crate::layout::{SITE_ALIGN, SITE_HEADER_SIZE, SITE_MAGIC};
use crate::read::Endian;

/// The name of the linker section that holds site descriptors.
pub const SITE_SECTION: &str = "ringtrace_sites";

/// Size in bytes of the descriptor for `label` and `file`, padding included.
pub const fn site_len(label: &str, file: &str) -> usize {
    let raw = SITE_HEADER_SIZE + clamp16(label.len()) + clamp16(file.len());
    raw.next_multiple_of(SITE_ALIGN)
}

const fn clamp16(n: usize) -> usize {
    if n > u16::MAX as usize { u16::MAX as usize } else { n }
}

/// The bytes of a site descriptor. `N` must be `site_len(label, file)`;
/// labels and file names longer than 65535 bytes are cut.
pub const fn encode_site<const N: usize>(label: &str, file: &str, line: u32) -> [u8; N] {
    assert!(N == site_len(label, file), "site descriptor size does not match site_len");
    let mut out = [0u8; N];
    let label_len = clamp16(label.len());
    let file_len = clamp16(file.len());
    put(&mut out, 0, &SITE_MAGIC.to_ne_bytes());
    put(&mut out, 4, &line.to_ne_bytes());
    put(&mut out, 8, &(label_len as u16).to_ne_bytes());
    put(&mut out, 10, &(file_len as u16).to_ne_bytes());
    // 12..16: column, not recorded by format version 1.
    copy(&mut out, SITE_HEADER_SIZE, label.as_bytes(), label_len);
    copy(&mut out, SITE_HEADER_SIZE + label_len, file.as_bytes(), file_len);
    out
}

const fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    copy(out, at, bytes, bytes.len())
}

const fn copy(out: &mut [u8], at: usize, bytes: &[u8], len: usize) {
    let mut i = 0;
    while i < len {
        out[at + i] = bytes[i];
        i += 1;
    }
}

/// A decoded site descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Site<'a> {
    /// The span's label.
    pub label: &'a [u8],
    /// Source file of the call site.
    pub file: &'a [u8],
    /// Source line of the call site.
    pub line: u32,
}

/// Decodes the descriptor at `offset` in a copied site section, or `None`
/// if there is no well-formed descriptor there.
pub fn decode_site(section: &[u8], offset: usize, endian: Endian) -> Option<Site<'_>> {
    let h = section.get(offset..offset.checked_add(SITE_HEADER_SIZE)?)?;
    if endian.u32(h[0..4].try_into().ok()?) != SITE_MAGIC {
        return None;
    }
    let line = endian.u32(h[4..8].try_into().ok()?);
    let label_len = endian.u16(h[8..10].try_into().ok()?) as usize;
    let file_len = endian.u16(h[10..12].try_into().ok()?) as usize;
    let label_at = offset + SITE_HEADER_SIZE;
    let label = section.get(label_at..label_at + label_len)?;
    let file = section.get(label_at + label_len..label_at + label_len + file_len)?;
    Some(Site { label, file, line })
}
