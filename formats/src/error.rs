//! Everything that can be wrong with a dump, as a small `no_std` enum.

use core::fmt;

use crate::layout::SectionKind;

/// Why a dump, or part of one, cannot be read.
///
/// Every variant carries the byte offset in the file where the problem was
/// found, and `Display` says what was expected, what was found and what to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The file does not start with the ringtrace magic.
    NotADump {
        /// The first bytes of the file (fewer if it is shorter).
        found: [u8; 8],
        /// How many of `found` are real.
        len: usize,
    },
    /// The file ends inside something that has a declared size.
    Truncated {
        /// Where the cut part starts.
        offset: u64,
        /// What was being read.
        what: &'static str,
        /// Bytes it needed.
        needed: u64,
        /// Bytes the file still had.
        available: u64,
    },
    /// The byte-order probe is neither little- nor big-endian `0x01020304`.
    BadEndianProbe {
        /// The probe as read in little-endian order.
        found: u32,
    },
    /// The dump's major version is newer than this reader.
    UnsupportedVersion {
        /// The dump's major version.
        major: u16,
        /// The dump's minor version.
        minor: u16,
    },
    /// A header field holds a value the format does not allow.
    BadField {
        /// Offset of the field.
        offset: u64,
        /// Name of the field.
        field: &'static str,
        /// What the format allows.
        expected: &'static str,
        /// What the file holds.
        found: u64,
    },
    /// A checksum does not match the bytes it covers.
    Checksum {
        /// Offset of the header or section whose bytes are damaged.
        offset: u64,
        /// The section kind, or `None` for the file header.
        section: Option<SectionKind>,
        /// The CRC-32 stored in the file.
        stored: u32,
        /// The CRC-32 of the bytes as read.
        computed: u32,
    },
    /// A section's payload is inconsistent with its own declared sizes.
    Malformed {
        /// Offset of the offending field.
        offset: u64,
        /// The section it is in.
        section: SectionKind,
        /// Name of the field.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl ReadError {
    /// The byte offset the error refers to.
    pub fn offset(&self) -> u64 {
        match *self {
            ReadError::NotADump { .. } => 0,
            ReadError::BadEndianProbe { .. } => 8,
            ReadError::UnsupportedVersion { .. } => 12,
            ReadError::Truncated { offset, .. }
            | ReadError::BadField { offset, .. }
            | ReadError::Checksum { offset, .. }
            | ReadError::Malformed { offset, .. } => offset,
        }
    }

    /// True when the error means the data simply stops: everything before
    /// `offset()` is intact.
    pub fn is_truncation(&self) -> bool {
        matches!(self, ReadError::Truncated { .. })
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ReadError::NotADump { found, len } => {
                write!(f, "offset 0: not a ringtrace dump: expected magic \"RNGTRACE\", found ")?;
                for b in &found[..len] {
                    write!(f, "{b:02x}")?;
                }
                if len == 0 {
                    write!(f, "an empty file")?;
                }
                write!(f, "; pass a file written by the ringtrace recorder")
            }
            ReadError::Truncated { offset, what, needed, available } => write!(
                f,
                "offset {offset}: truncated {what}: needs {needed} bytes, the file has {available}; \
                 the dump was cut short (copy it again, or let the program finish writing it)"
            ),
            ReadError::BadEndianProbe { found } => write!(
                f,
                "offset 8: byte-order probe is {found:#010x}, expected 0x01020304 in either byte order; \
                 the file header is damaged"
            ),
            ReadError::UnsupportedVersion { major, minor } => {
                let (oldest, newest) = crate::layout::SUPPORTED_MAJORS;
                write!(f, "offset 12: dump format version {major}.{minor} is newer than this rtconv, which reads ")?;
                if oldest == newest {
                    write!(f, "versions {oldest}.x")?;
                } else {
                    write!(f, "versions {oldest}.x to {newest}.x")?;
                }
                write!(f, "; upgrade rtconv")
            }
            ReadError::BadField { offset, field, expected, found } => write!(
                f,
                "offset {offset}: header field {field} is {found}, expected {expected}; the file header is damaged"
            ),
            ReadError::Checksum { offset, section, stored, computed } => {
                match section {
                    Some(kind) => write!(f, "offset {offset}: {} section", kind.name())?,
                    None => write!(f, "offset {offset}: file header")?,
                }
                write!(
                    f,
                    " fails its CRC-32 check (stored {stored:#010x}, computed {computed:#010x}); \
                     the bytes are damaged, nothing from here on can be trusted"
                )
            }
            ReadError::Malformed { offset, section, field, reason } => {
                write!(f, "offset {offset}: {} section field {field}: {reason}; the section is damaged", section.name())
            }
        }
    }
}

impl core::error::Error for ReadError {}

/// Why a write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError<E> {
    /// The sink refused the bytes.
    Sink(E),
    /// A length does not fit the field the format gives it.
    TooLarge {
        /// Which field.
        field: &'static str,
    },
    /// The caller wrote a different number of bytes or records than it declared.
    CountMismatch {
        /// Declared count.
        declared: u64,
        /// Count actually written.
        written: u64,
    },
}

impl<E: fmt::Display> fmt::Display for WriteError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Sink(e) => write!(f, "writing the dump failed: {e}"),
            WriteError::TooLarge { field } => write!(f, "{field} is too large for the dump format"),
            WriteError::CountMismatch { declared, written } => {
                write!(f, "declared {declared} records or bytes but wrote {written}")
            }
        }
    }
}

impl<E: fmt::Debug + fmt::Display> core::error::Error for WriteError<E> {}
