//! Finding the file that names a module's addresses, and checking it is the
//! build that was recorded.
//!
//! Candidates, in order: the path recorded in the dump; every `--sym-dir` (an index of the ELF files under it by
//! build-id, and the `.build-id/xx/rest.debug` layout); the system debug
//! directory `/usr/lib/debug/.build-id/xx/rest.debug`. For the main
//! executable, `--exe` replaces them all. A candidate whose
//! build-id differs from the recorded one is refused (unless
//! `--allow-mismatch`). When the file found has no DWARF, its
//! `.gnu_debuglink` and the build-id directories are searched for a
//! separate debug file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use object::{Object, ObjectSection};

use crate::io::{Pages, map_file};
use crate::model::ModuleEntry;

/// Why a module's addresses cannot be named from its files.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModuleError {
    /// A backend failed on the module's file (see [`super::BackendError`]).
    #[error(transparent)]
    Backend(#[from] super::BackendError),
    /// No candidate file exists.
    #[error(
        "binary {} not found; pass --exe PATH (the file the dump was recorded from) or --sym-dir DIR, or run \
         `rtconv pack` on the dump where the binary is",
        path.display()
    )]
    Missing {
        /// The recorded path.
        path: PathBuf,
    },
    /// The file is there but could not be read or parsed.
    #[error("binary {} cannot be read: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// No chosen backend reads binaries (`--symbolizer` without dwarf, symtab, addr2line).
    #[error("binary {} not read: the chosen --symbolizer backends read only the dump", path.display())]
    NotRead {
        /// The recorded path.
        path: PathBuf,
    },
    /// The file is a different build from the one that was recorded.
    #[error(
        "binary {} has build-id {found} but the dump recorded {expected}; pass the right build with --exe or \
         --sym-dir, run `rtconv pack` on the dump where that build is (then it converts anywhere), or \
         --allow-mismatch to use this one anyway",
        path.display()
    )]
    BuildIdMismatch {
        /// The file.
        path: PathBuf,
        /// Build-id in the dump.
        expected: String,
        /// Build-id of the file.
        found: String,
    },
}

/// Where to look for binaries.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// The main executable to use instead of the recorded path.
    pub exe: Option<PathBuf>,
    /// Directories of binaries and debug files, found by build-id.
    pub sym_dirs: Vec<PathBuf>,
    /// Roots holding `.build-id/xx/rest.debug` trees (normally `/usr/lib/debug`).
    pub debug_roots: Vec<PathBuf>,
    /// debuginfod clients' caches, holding `BUILD-ID/debuginfo` and `BUILD-ID/executable`
    /// (see [`debuginfod_caches`]).
    pub debuginfod_caches: Vec<PathBuf>,
    /// Use a file whose build-id differs from the recorded one.
    pub allow_mismatch: bool,
}

/// The files that name one module's addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleFiles {
    /// The binary (its symbol table, and DWARF if it has it).
    pub binary: PathBuf,
    /// The file with the DWARF: the binary itself or a separate debug file.
    pub debug: Option<PathBuf>,
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `path` is an object file this crate can read, and why not.
pub fn check_object(path: &Path) -> Result<(), ModuleError> {
    inspect(path).map(|_| ())
}

/// What one candidate file is.
struct Inspected {
    build_id: Vec<u8>,
    has_dwarf: bool,
    debuglink: Option<String>,
}

fn inspect(path: &Path) -> Result<Inspected, ModuleError> {
    let unreadable = |reason: String| ModuleError::Unreadable { path: path.into(), reason };
    let bytes = map_file(path, Pages::OnDemand).map_err(|e| unreadable(e.to_string()))?;
    let file = object::File::parse(&*bytes).map_err(|e| unreadable(e.to_string()))?;
    let build_id = file.build_id().ok().flatten().unwrap_or_default().to_vec();
    let has_dwarf = file.section_by_name(".debug_info").is_some_and(|s| s.size() > 0);
    let debuglink = file.gnu_debuglink().ok().flatten().map(|(name, _crc)| String::from_utf8_lossy(name).into_owned());
    Ok(Inspected { build_id, has_dwarf, debuglink })
}

impl Search {
    /// The files for `module`.
    pub fn find(&self, module: &ModuleEntry) -> Result<ModuleFiles, ModuleError> {
        let recorded = &module.build_id;
        let mut first_error = None;
        // `--exe` is the user's word for the main executable: the only candidate.
        let candidates: Vec<PathBuf> = match (&self.exe, module.is_main) {
            (Some(exe), true) => vec![exe.clone()],
            _ => {
                let by_id = if recorded.is_empty() { Vec::new() } else { self.by_build_id(recorded) };
                // A path under /proc names a file of the recording process (musl records the main
                // program as /proc/self/exe): here it would be rtconv's own. Never a candidate.
                let recorded_path = Some(module.path.clone()).filter(|p| !p.starts_with("/proc"));
                recorded_path.into_iter().chain(recorded_path_renamed(&module.path)).chain(by_id).collect()
            }
        };
        for candidate in &candidates {
            if !candidate.is_file() {
                continue;
            }
            let inspected = match inspect(candidate) {
                Ok(i) => i,
                Err(e) => {
                    first_error.get_or_insert(e);
                    continue;
                }
            };
            if !recorded.is_empty()
                && !inspected.build_id.is_empty()
                && inspected.build_id != *recorded
                && !self.allow_mismatch
            {
                first_error.get_or_insert(ModuleError::BuildIdMismatch {
                    path: candidate.clone(),
                    expected: hex(recorded),
                    found: hex(&inspected.build_id),
                });
                continue;
            }
            return Ok(self.files_of(candidate, recorded, &inspected));
        }
        let wanted = candidates.first().cloned().unwrap_or_else(|| module.path.clone());
        Err(first_error.unwrap_or(ModuleError::Missing { path: wanted }))
    }

    /// The files for a binary named by path (`rtconv symbolize -e`): the
    /// binary, and its DWARF — its own, else a debug file found as for a
    /// recorded module (by build-id under the sym-dirs and debug roots, then
    /// by its `.gnu_debuglink`).
    pub fn files_for(&self, binary: &Path) -> Result<ModuleFiles, ModuleError> {
        let inspected = inspect(binary)?;
        Ok(self.files_of(binary, &inspected.build_id, &inspected))
    }

    /// The files for `binary` (inspected), its DWARF its own or, failing
    /// that, a debug file of build-id `id`.
    fn files_of(&self, binary: &Path, id: &[u8], inspected: &Inspected) -> ModuleFiles {
        let debug = if inspected.has_dwarf {
            Some(binary.to_path_buf())
        } else {
            self.separate_debug_file(binary, id, inspected.debuglink.as_deref())
        };
        ModuleFiles { binary: binary.to_path_buf(), debug }
    }

    /// Files whose build-id is `id`: in the sym-dirs (indexed) and the `.build-id` trees.
    fn by_build_id(&self, id: &[u8]) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for dir in &self.sym_dirs {
            if let Some(paths) = sym_dir_index(dir).get(id) {
                found.extend(paths.iter().cloned());
            }
        }
        found.extend(self.build_id_tree_paths(id));
        found
    }

    fn build_id_tree_paths(&self, id: &[u8]) -> Vec<PathBuf> {
        let Some((first, rest)) = id.split_first() else { return Vec::new() };
        let relative = Path::new(".build-id").join(format!("{first:02x}")).join(format!("{}.debug", hex(rest)));
        let trees = self.sym_dirs.iter().chain(&self.debug_roots).map(|root| root.join(&relative));
        let cached = self
            .debuginfod_caches
            .iter()
            .flat_map(|cache| ["debuginfo", "executable"].map(|kind| cache.join(hex(id)).join(kind)));
        trees.chain(cached).filter(|p| p.is_file()).collect()
    }

    /// A debug file for a binary without DWARF: by build-id, then by its
    /// `.gnu_debuglink` next to it, in `.debug/` beside it, and under each
    /// debug root at the binary's own directory.
    fn separate_debug_file(&self, binary: &Path, id: &[u8], debuglink: Option<&str>) -> Option<PathBuf> {
        let has_dwarf = |p: &Path| inspect(p).is_ok_and(|i| i.has_dwarf && (id.is_empty() || i.build_id == id));
        if !id.is_empty()
            && let Some(p) = self.build_id_tree_paths(id).into_iter().find(|p| has_dwarf(p))
        {
            return Some(p);
        }
        if !id.is_empty()
            && let Some(p) = self
                .sym_dirs
                .iter()
                .flat_map(|d| sym_dir_index(d).get(id).cloned().unwrap_or_default())
                .find(|p| has_dwarf(p))
        {
            return Some(p);
        }
        let link = debuglink?;
        let dir = binary.parent().unwrap_or(Path::new("."));
        let mut candidates = vec![dir.join(link), dir.join(".debug").join(link)];
        for root in &self.debug_roots {
            let absolute = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
            candidates.push(root.join(absolute.strip_prefix("/").unwrap_or(&absolute)).join(link));
        }
        candidates.into_iter().find(|p| p.as_path() != binary && p.is_file() && has_dwarf(p))
    }
}

/// Where debuginfod clients (elfutils' `debuginfod-find`, gdb, perf) cache
/// what they fetched: `$DEBUGINFOD_CACHE_PATH`, else
/// `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`.
/// rtconv fetches nothing; it reads what is there.
pub fn debuginfod_caches() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = var("DEBUGINFOD_CACHE_PATH") {
        return vec![path];
    }
    let cache_home = var("XDG_CACHE_HOME").or_else(|| var("HOME").map(|home| home.join(".cache")));
    cache_home.map(|c| c.join("debuginfod_client")).into_iter().collect()
}

/// ELF files by build-id.
type BuildIdIndex = HashMap<Vec<u8>, Vec<PathBuf>>;

/// Every ELF file under `dir` (recursively), by build-id; built once per
/// directory and kept for the life of the process (one CLI run).
fn sym_dir_index(dir: &Path) -> &'static BuildIdIndex {
    static INDEXES: OnceLock<std::sync::Mutex<HashMap<PathBuf, &'static BuildIdIndex>>> = OnceLock::new();
    let indexes = INDEXES.get_or_init(Default::default);
    let mut indexes = indexes.lock().unwrap_or_else(|p| p.into_inner());
    indexes.entry(dir.to_path_buf()).or_insert_with(|| {
        let mut index = BuildIdIndex::new();
        let mut pending = vec![dir.to_path_buf()];
        while let Some(d) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else { continue };
            for entry in entries.flatten() {
                let path = entry.path();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => pending.push(path),
                    Ok(t) if t.is_file() => {
                        if let Ok(i) = inspect(&path)
                            && !i.build_id.is_empty()
                        {
                            index.entry(i.build_id).or_default().push(path);
                        }
                    }
                    _ => {}
                }
            }
        }
        Box::leak(Box::new(index))
    })
}

/// Linux names a running executable replaced on disk `PATH (deleted)`; the
/// file now at `PATH` is a candidate too (its build-id tells whether it is
/// still the same build).
fn recorded_path_renamed(path: &Path) -> Option<PathBuf> {
    let text = path.to_str()?;
    Some(PathBuf::from(text.strip_suffix(" (deleted)")?))
}
