//! `rtconv pack`: names a dump's keys here, where the binaries are, and
//! appends the names to the dump as a names section, so later conversions
//! anywhere need no binary (what uftrace's `.sym` files and `perf archive`
//! do, inside the one file).
//!
//! Design constraints:
//! - Every byte before the old end marker stays as it was; the names section
//!   and a new end marker replace the end marker (FORMAT.md, format 1.2), so
//!   readers of 1.0 and 1.1 still read a packed dump (they skip the section).
//! - Only names the dump cannot give itself are packed: those from DWARF, the
//!   symbol tables or an external addr2line (site descriptors and the dladdr
//!   table are in the dump already). Function names are stored as the
//!   backends give them, undemangled, so `--no-demangle` still applies.
//! - Packing a packed dump changes nothing. The new file is written beside
//!   the dump and renamed over it, so a failure leaves the dump as it was.
//!
//! ```no_run
//! let report = rtconv::pack::pack(std::path::Path::new("trace.rtd"), &Default::default()).unwrap();
//! println!("{} names packed", report.packed);
//! ```

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ringtrace_format::layout::END_SECTION_SIZE;
use ringtrace_format::{Dump, NameEntry, NameFrame, NameSource, SectionKind, Writer};

use crate::model::{self, Source};
use crate::symbolize::{self, Options, Problem};

/// What packing one dump did.
#[derive(Debug)]
pub struct Report {
    /// Names written into the dump (0 when it was packed already).
    pub packed: usize,
    /// The dump had a names section already: nothing was changed.
    pub already: bool,
    /// Code-address keys no backend could name here (they stay unnamed in the dump).
    pub unnamed: usize,
    /// Modules whose binaries could not be used.
    pub problems: Vec<Problem>,
    /// What naming found worth saying that lost nothing (the symbol index could not be used).
    pub warnings: Vec<String>,
    /// Where the packed dump went when it is not the input: a core stays as it is, and its rings,
    /// packed, go to `CORE.rtd` beside it.
    pub written_to: Option<PathBuf>,
}

/// Why a dump could not be packed.
#[derive(Debug, thiserror::Error)]
pub enum PackError {
    /// It could not be read or its header is unusable.
    #[error(transparent)]
    Load(#[from] model::LoadError),
    /// The dump is cut short or damaged, so there is no end marker to append after.
    #[error(
        "{}: {damage}; pack appends to complete dumps only (convert this one where its binaries are)",
        path.display()
    )]
    Incomplete {
        /// The dump.
        path: PathBuf,
        /// Where and how it is damaged.
        damage: ringtrace_format::ReadError,
    },
    /// The packed dump could not be written.
    #[error("{}: cannot write the packed dump ({what}): {source}; the dump is unchanged", path.display())]
    Write {
        /// The dump.
        path: PathBuf,
        /// What was being done.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
}

/// Names the keys of the dump at `path` with `opts` and appends the names to it. A core file is
/// left as it is: its rings, packed, are written to `PATH.rtd` beside it.
pub fn pack(path: &Path, opts: &Options) -> Result<Report, PackError> {
    // Only a regular file opens (one descriptor, checked with fstat); the packed dump keeps its mode.
    let bytes = model::open(path)?;
    let from_core = model::is_converted_file(path);
    let target = match from_core {
        true => {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(".rtd");
            path.with_file_name(name)
        }
        false => path.to_path_buf(),
    };
    let permissions =
        std::fs::metadata(path).map_err(|source| model::LoadError::Io { path: path.into(), source })?.permissions();
    let trace = model::decode(path, &bytes)?;
    if let Some(damage) = trace.damage {
        return Err(PackError::Incomplete { path: path.into(), damage });
    }
    // Where the end marker starts (the reader ends after it), and whether names are there already.
    let dump = Dump::parse(&bytes).map_err(|source| model::LoadError::Header {
        path: path.into(),
        hint: model::not_a_dump_hint(&source, &bytes),
        source,
    })?;
    let (mut end, mut already) = (None, false);
    for section in dump.sections().flatten() {
        match section.kind {
            SectionKind::End => end = Some(section.offset as usize),
            SectionKind::Names => already = true,
            _ => {}
        }
    }
    let Some(end) = end else {
        // decode() reported no damage, so the end marker was read.
        return Err(PackError::Incomplete {
            path: path.into(),
            damage: ringtrace_format::ReadError::Truncated {
                offset: bytes.len() as u64,
                what: "dump (no end marker)",
                needed: END_SECTION_SIZE as u64,
                available: 0,
            },
        });
    };
    if already {
        let (problems, warnings) = (Vec::new(), Vec::new());
        return Ok(Report { packed: 0, already: true, unnamed: 0, problems, warnings, written_to: None });
    }

    let raw = Options { demangle: false, ..opts.clone() };
    let naming = symbolize::symbolize(&trace, &raw, &symbolize::Cache::default());
    let mut names = Vec::new();
    let mut unnamed = 0;
    for &key in &trace.keys {
        let Some(name) = naming.names.get(key) else { continue };
        let source = match name.source {
            Source::Dwarf => NameSource::Dwarf,
            Source::Symtab => NameSource::Symtab,
            Source::Addr2line => NameSource::Addr2line,
            Source::Unknown => {
                unnamed +=
                    usize::from(matches!(crate::model::locate(&trace, key), crate::model::Location::Module { .. }));
                continue;
            }
            Source::Packed | Source::Site | Source::Dladdr => continue,
        };
        names.push((key, source, name));
    }
    let frames: Vec<Vec<NameFrame>> = names
        .iter()
        .map(|(_, _, n)| {
            let mut frames = vec![frame(&n.name, &n.file, n.line)];
            frames.extend(n.inlined_into.iter().map(|f| frame(&f.function, &f.file, f.line)));
            frames
        })
        .collect();
    let entries: Vec<NameEntry> =
        names.iter().zip(&frames).map(|(&(key, source, _), frames)| NameEntry { key, source, frames }).collect();
    write_beside(&target, &bytes, &bytes[..end], &entries, permissions)?;
    Ok(Report {
        packed: entries.len(),
        already: false,
        unnamed,
        problems: naming.problems,
        warnings: naming.warnings,
        written_to: from_core.then_some(target),
    })
}

/// One frame as the format stores it: no file is empty, no line is 0.
fn frame<'a>(function: &'a str, file: &'a Option<String>, line: Option<u32>) -> NameFrame<'a> {
    NameFrame { function: function.as_bytes(), file: file.as_deref().unwrap_or("").as_bytes(), line: line.unwrap_or(0) }
}

/// Writes `kept` + the names section + an end marker to a new file beside
/// `path` with the dump's `permissions`, then renames it over `path` (the
/// dump, or the packed dump of a core's rings).
fn write_beside(
    path: &Path,
    source: &crate::io::FileBytes,
    kept: &[u8],
    entries: &[NameEntry],
    permissions: std::fs::Permissions,
) -> Result<(), PackError> {
    let fail = |what, source| PackError::Write { path: path.into(), what, source };
    let file_name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = path.with_file_name(format!(".{file_name}.pack-{}", std::process::id()));
    // A new file (never one planted under that name), with the dump's permissions.
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(&temp)
        .map_err(|e| fail("creating a file beside it", e))?;
    let written = (|| -> std::io::Result<()> {
        file.set_permissions(permissions)?;
        let mut out = std::io::BufWriter::new(&file);
        out.write_all(kept)?;
        let mut w = Writer::resume(ringtrace_format::IoSink(&mut out), kept.len() as u64);
        let io = |e: ringtrace_format::WriteError<std::io::Error>| match e {
            ringtrace_format::WriteError::Sink(e) => e,
            other => std::io::Error::other(other.to_string()),
        };
        w.names(entries).map_err(io)?;
        w.finish().map_err(io)?;
        out.flush()?;
        drop(out);
        file.sync_all()
    })();
    // A dump cut short while it was copied has zeros where the lost bytes were: not put in place.
    let intact = written.and_then(|()| match source.shrank() {
        true => Err(std::io::Error::other("another process cut the dump short while it was read")),
        false => Ok(()),
    });
    let renamed = intact.and_then(|()| std::fs::rename(&temp, path));
    if let Err(e) = renamed {
        let _ = std::fs::remove_file(&temp);
        return Err(fail("writing it", e));
    }
    Ok(())
}
