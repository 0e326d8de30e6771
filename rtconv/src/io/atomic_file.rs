//! An output file written under a temporary name beside its target and
//! renamed over the target only when complete.
//!
//! So nothing partial ever sits under an output's name (a full disk, a
//! failed conversion, a killed process leave at most a hidden temporary
//! file, removed on the way out when the process can), and whatever was
//! planted under the target's name — a hard link to a file elsewhere, a
//! FIFO, a symbolic link — is replaced, never written through: the
//! temporary file is always a new one (`O_CREAT | O_EXCL`, `O_NOFOLLOW`),
//! and `rename(2)` replaces the directory entry, not what it pointed to.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Longest file name most file systems take (`NAME_MAX`).
pub const NAME_MAX: usize = 255;

/// A file being written; [`commit`](Self::commit) puts it in place.
#[derive(Debug)]
pub struct AtomicFile {
    file: File,
    temp: PathBuf,
    target: PathBuf,
    committed: bool,
}

impl AtomicFile {
    /// Starts writing `target`: creates a new, hidden file in its directory.
    pub fn create(target: &Path) -> io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the output path names no file"))?;
        let dir = target.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let unique = format!(".rtconv-{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        // `.NAME.rtconv-PID-N`, the name cut so the whole fits NAME_MAX.
        let name = name.to_string_lossy();
        let temp = dir.join(format!(".{}{unique}", shortened(&name, NAME_MAX - 1 - unique.len())));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o666) // less the umask, as for any new file
            .open(&temp)?;
        Ok(AtomicFile { file, temp, target: target.into(), committed: false })
    }

    /// The file that will be replaced.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the written file over the target. On failure the temporary
    /// file is removed and the target is as it was.
    pub fn commit(mut self) -> io::Result<()> {
        std::fs::rename(&self.temp, &self.target)?;
        self.committed = true;
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.file.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl super::StartOver for AtomicFile {
    fn can_start_over(&self) -> bool {
        true
    }

    fn start_over(&mut self) -> io::Result<()> {
        super::StartOver::start_over(&mut self.file)
    }
}

impl Drop for AtomicFile {
    /// Not committed: the temporary file goes.
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

/// `name` cut to at most `max` bytes on a character boundary.
fn shortened(name: &str, max: usize) -> &str {
    if name.len() <= max {
        return name;
    }
    let mut end = max;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hard_link_under_the_target_name_is_replaced_not_written_through() {
        let dir = std::env::temp_dir().join(format!("rtconv-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let outside = dir.join("outside.txt");
        std::fs::write(&outside, b"keep me").unwrap();
        let target = dir.join("out.json");
        std::fs::hard_link(&outside, &target).unwrap();
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"new").unwrap();
        // Not yet committed: the target still has its old content.
        assert_eq!(std::fs::read(&target).unwrap(), b"keep me");
        file.commit().unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        assert_eq!(std::fs::read(&outside).unwrap(), b"keep me");
        // Dropped without a commit: nothing left behind, the target untouched.
        let mut file = AtomicFile::create(&target).unwrap();
        file.write_all(b"partial").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 2, "{names:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn names_are_shortened_on_character_boundaries() {
        assert_eq!(shortened("abc", 5), "abc");
        assert_eq!(shortened("abcdef", 3), "abc");
        assert_eq!(shortened("aé", 2), "a");
        let long = "x".repeat(300);
        let dir = std::env::temp_dir();
        // A 255-byte target name still gets a temporary name that fits.
        let file = AtomicFile::create(&dir.join(shortened(&long, NAME_MAX))).unwrap();
        drop(file);
    }
}
