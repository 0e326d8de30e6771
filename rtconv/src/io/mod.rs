//! Files in and out, safely: a file's bytes mapped read-only from a
//! descriptor checked to be a regular file ([`FileBytes`]), a guard that
//! survives a mapped file shrinking under the mapping (switched on by the
//! program, [`guard_shrinking_files`]), outputs put in place only when
//! complete ([`AtomicFile`]), a writer that counts ([`Counted`]), and outputs that can start
//! over ([`StartOver`]).

mod atomic_file;
mod counted;
mod file_bytes;
mod shrink_guard;
mod start_over;

pub use atomic_file::{AtomicFile, NAME_MAX};
pub use counted::Counted;
pub use file_bytes::FileBytes;
pub(crate) use file_bytes::{Pages, map_file, open_regular};
pub use shrink_guard::guard_shrinking_files;
pub use start_over::{Once, StartOver};
