//! The persistent symbol index: what DWARF answered for each address asked
//! of a build, kept per build-id so later runs answer without parsing DWARF.
//!
//! One file per build, naming style and format version, `ROOT/BUILD-ID/names.v2`
//! (or `names-demangled.v2`; a newer rtconv's format has a name of its own, so
//! runs of two versions never replace each other's file); ROOT is [`Options::index`](super::Options::index),
//! which the command line and the Python package set to [`user_root`]
//! (`$RTCONV_SYMBOL_INDEX`, else the user's cache directory).
//! It grows with what is asked: a run looks every address up in the file,
//! parses DWARF only for the ones it lacks, and writes the union back. The
//! build-id is trusted as debuginfod and perf's build-id cache trust it: a
//! file with the same build-id is the same build.
//!
//! The file is untrusted input all the same. The directories must be the
//! user's own and writable by no one else; the file is opened without
//! following a symbolic link, must be a regular file with one link, owned by
//! the user, and is checked field by field (`index_format.rs`). A file
//! that fails is said (a warning handed back, not printed) and replaced.
//! Writers never write in place: each writes a new file and renames it over
//! the old one, so concurrent runs leave one complete file (the last), never
//! a mix; what a concurrent run added and the last one did not see is parsed
//! again later.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::SpanName;
use super::index_format::{self, Contents, View};

/// The largest index file read or written.
pub(crate) const MAX_BYTES: u64 = 256 << 20;

/// The index root a user's run of rtconv keeps its index in, for a program
/// to put in [`Options::index`](super::Options::index) (`rtconv` and the
/// Python package do): `$RTCONV_SYMBOL_INDEX` (`off` or empty: no index),
/// else `$XDG_CACHE_HOME/ringtrace`, else `$HOME/.cache/ringtrace` (each
/// only if absolute); `None` when there is nowhere to put it.
pub fn user_root() -> Option<PathBuf> {
    if let Some(v) = std::env::var_os("RTCONV_SYMBOL_INDEX") {
        return (v != "off" && !v.is_empty()).then(|| PathBuf::from(v));
    }
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .and_then(absolute)
        .or_else(|| std::env::var_os("HOME").and_then(absolute).map(|home| home.join(".cache")))?;
    Some(cache.join("ringtrace"))
}

/// One build's index, loaded, with what this run adds.
#[derive(Debug)]
pub(crate) struct Index {
    file: PathBuf,
    build_id: Vec<u8>,
    demangled: bool,
    /// The file as it was read.
    file_view: Option<View>,
    /// What this run added.
    added: HashMap<u64, Option<SpanName>>,
}

impl Index {
    /// The index of the build in `debug` (by its build-id) under `root`, with
    /// what its file holds; `None` when the file has no build-id or the index
    /// cannot be used there (said in `warnings`).
    pub(crate) fn open(root: &Path, debug: &Path, demangled: bool, warnings: &mut Vec<String>) -> Option<Index> {
        let build_id = build_id(debug)?;
        let dir = root.join(super::hex(&build_id));
        if let Err(why) = own_directory(root).and_then(|()| own_directory(&dir)) {
            warnings.push(format!(
                "symbol index not used: {why}; remove it, or pass --no-symbol-index (RTCONV_SYMBOL_INDEX=off)"
            ));
            return None;
        }
        let style = if demangled { "names-demangled" } else { "names" };
        let name = format!("{style}.v{}", index_format::VERSION);
        let mut index = Index { file: dir.join(name), build_id, demangled, file_view: None, added: HashMap::new() };
        index.file_view = index.read(warnings);
        Some(index)
    }

    /// DWARF's answer at `address` if the index has it (`Some(None)`: DWARF names nothing there).
    pub(crate) fn get(&self, address: u64) -> Option<Option<SpanName>> {
        self.added.get(&address).cloned().or_else(|| self.file_view.as_ref()?.get(address))
    }

    /// Adds DWARF's answer at `address`.
    pub(crate) fn add(&mut self, address: u64, answer: Option<&SpanName>) {
        if index_format::storable(answer) && self.get(address).is_none() {
            self.added.insert(address, answer.cloned());
        }
    }

    /// Writes what was added, with whatever the file gained meanwhile; a
    /// failure is said in `warnings` (the names are unaffected).
    pub(crate) fn save(&mut self, warnings: &mut Vec<String>) {
        if self.added.is_empty() {
            return;
        }
        // The file now (another run may have replaced it since this one read it), and what this run added.
        let mut all: HashMap<u64, Option<SpanName>> = self.read(warnings).iter().flat_map(View::entries).collect();
        all.extend(self.added.iter().map(|(a, n)| (*a, n.clone())));
        let mut entries: Vec<(u64, Option<SpanName>)> = all.into_iter().collect();
        entries.sort_unstable_by_key(|e| e.0);
        let contents = Contents { build_id: self.build_id.clone(), demangled: self.demangled, entries };
        let bytes = index_format::encode(&contents);
        let written = if bytes.len() as u64 > MAX_BYTES {
            Err(std::io::Error::other(format!("{} bytes, over the {MAX_BYTES}-byte limit", bytes.len())))
        } else {
            crate::io::AtomicFile::create(&self.file).and_then(|mut f| {
                f.write_all(&bytes)?;
                f.commit()
            })
        };
        match written {
            Ok(()) => self.added.clear(),
            Err(e) => warnings.push(format!("symbol index {} not written: {e}", self.file.display())),
        }
    }

    /// The file's contents, if it is there and sound; a file that is not is said in `warnings`.
    fn read(&self, warnings: &mut Vec<String>) -> Option<View> {
        let mut refuse = |why: String| {
            warnings.push(format!(
                "symbol index {}: {why}; not used, and replaced by what this run parses",
                self.file.display()
            ));
            None
        };
        let mut file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&self.file)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return refuse("a symbolic link".into()),
            Err(e) => return refuse(e.to_string()),
        };
        let meta = match file.metadata() {
            Ok(m) => m,
            Err(e) => return refuse(e.to_string()),
        };
        if !meta.is_file() {
            return refuse("not a regular file".into());
        }
        if meta.uid() != effective_uid() {
            return refuse(format!("owned by uid {}, not this user", meta.uid()));
        }
        if meta.nlink() != 1 {
            return refuse(format!("{} hard links, expected 1", meta.nlink()));
        }
        if meta.len() > MAX_BYTES {
            return refuse(format!("{} bytes, over the {MAX_BYTES}-byte limit", meta.len()));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        if let Err(e) = (&mut file).take(MAX_BYTES + 1).read_to_end(&mut bytes) {
            return refuse(e.to_string());
        }
        match View::parse(bytes) {
            Ok(c) if c.build_id != self.build_id => refuse(format!(
                "build-id field is {}, expected {} (the directory's)",
                super::hex(&c.build_id),
                super::hex(&self.build_id)
            )),
            Ok(c) if c.demangled != self.demangled => refuse("flags field: the other naming style".into()),
            Ok(c) => Some(c),
            Err(e) => refuse(e.to_string()),
        }
    }
}

/// The build-id of the ELF file at `path`.
fn build_id(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let bytes = crate::io::map_file(path, crate::io::Pages::OnDemand).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    file.build_id().ok().flatten().filter(|id| !id.is_empty()).map(<[u8]>::to_vec)
}

/// Makes `dir` (mode 0700) if it is not there, then checks it is a directory
/// of this user's that no one else can write to.
fn own_directory(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) => return Err(format!("{} cannot be made: {e}", dir.display())),
    }
    let meta = std::fs::symlink_metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !meta.is_dir() {
        return Err(format!("{} is not a directory (a symbolic link?)", dir.display()));
    }
    if meta.uid() != effective_uid() {
        return Err(format!("{} is owned by uid {}, not this user", dir.display(), meta.uid()));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(format!("{} is writable by others (mode {:o})", dir.display(), meta.mode() & 0o7777));
    }
    Ok(())
}

fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}
