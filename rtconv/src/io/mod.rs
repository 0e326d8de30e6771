//! Files in and out, safely: a file's bytes mapped read-only from a
//! descriptor checked to be a regular file ([`FileBytes`]), a guard that
//! survives a mapped file shrinking under the mapping (switched on by the
//! program, [`guard_shrinking_files`]), outputs put in place only when
//! complete ([`AtomicFile`]), and a writer that counts ([`Counted`]).

mod atomic_file;
mod counted;
mod file_bytes;
mod shrink_guard;

pub use atomic_file::{AtomicFile, NAME_MAX};
pub use counted::Counted;
pub use file_bytes::FileBytes;
pub(crate) use file_bytes::{Pages, map_file, open_regular};
pub use shrink_guard::guard_shrinking_files;
