//! A file's bytes, mapped read-only (or read, where mapping fails), from one
//! open descriptor that is checked to be a regular file first: a FIFO, a
//! device or a socket — named directly or through a symbolic link — is
//! refused before a byte is read, and opening a FIFO never waits for a writer.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use super::shrink_guard::Guard;

/// The bytes of a file: mapped when possible, read otherwise.
pub struct FileBytes(Held);

enum Held {
    /// A read-only mapping, guarded against the file shrinking under it
    /// when the guard is on ([`super::guard_shrinking_files`]).
    Mapped {
        /// Unregisters the mapping; declared first, so it goes before the mapping does.
        guard: Option<Guard>,
        map: memmap2::Mmap,
    },
    /// A copy (empty files, files that cannot be mapped or guarded, archive entries).
    Read(Vec<u8>),
}

impl std::ops::Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            Held::Mapped { map, .. } => map,
            Held::Read(v) => v,
        }
    }
}

impl FileBytes {
    /// Bytes read into memory.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        FileBytes(Held::Read(bytes))
    }

    /// Whether the file shrank while it was mapped (another process
    /// truncated it): the bytes it lost read as zeros, so what was read from
    /// them is not the file's.
    pub fn shrank(&self) -> bool {
        match &self.0 {
            Held::Mapped { guard, .. } => guard.as_ref().is_some_and(Guard::shrank),
            Held::Read(_) => false,
        }
    }
}

/// The largest file read into memory when it cannot be mapped.
const MAX_READ: u64 = 256 << 20;

/// Whether a mapping's pages are faulted in up front.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pages {
    /// All of them, in one call: for a dump, whose every page is read anyway
    /// (cheaper than a fault per page).
    Populate,
    /// As they are touched: for a binary, of which a symbolizer reads a few
    /// sections.
    OnDemand,
}

/// Opens `path` for reading if it is a regular file; anything else is an
/// `InvalidInput` error saying what it is.
pub(crate) fn open_regular(path: &Path) -> io::Result<File> {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a
    // writer (it is then refused); reads of a regular file ignore the flag.
    let file = OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let kind = file.metadata()?.file_type(); // fstat of this descriptor: what was opened, not what the path names now
    let what = if kind.is_file() {
        return Ok(file);
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    };
    Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{what}, not a regular file; give a file")))
}

/// Maps `path` (a regular file) read-only, or reads it through the same
/// descriptor if it cannot be mapped.
pub(crate) fn map_file(path: &Path, pages: Pages) -> io::Result<FileBytes> {
    let mut file = open_regular(path)?;
    let mut options = memmap2::MmapOptions::new();
    if pages == Pages::Populate {
        options.populate();
    }
    // SAFETY: the mapping is read-only and private to this process. If another
    // process truncates the file while we read it, the lost pages fault: with
    // the guard on, the guard registered here turns that into zeros and
    // `shrank()` (see `shrink_guard`), and where it has no slot free the file
    // is read instead; with the guard off, the fault ends the process, as
    // the program that left it off chose.
    let mapped = unsafe { options.map(&file) }.ok().and_then(|map| {
        let guard = if super::shrink_guard::is_on() { Some(Guard::register(&map)?) } else { None };
        Some(FileBytes(Held::Mapped { guard, map }))
    });
    match mapped {
        Some(bytes) => Ok(bytes),
        None => {
            // Read instead (a file system that cannot map, no guard slot free), up to a bound:
            // what cannot be mapped is not copied whole into memory either.
            let mut bytes = Vec::new();
            (&mut file).take(MAX_READ + 1).read_to_end(&mut bytes)?; // sized by the data, not by a length
            if bytes.len() as u64 > MAX_READ {
                let e = format!("cannot be mapped, and is larger than the {} MiB rtconv reads instead", MAX_READ >> 20);
                return Err(io::Error::new(io::ErrorKind::OutOfMemory, e));
            }
            Ok(FileBytes::from_vec(bytes))
        }
    }
}
