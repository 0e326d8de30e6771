//! The core's module table: its mapped ELF files (`NT_FILE`), each with its
//! address range, load bias and build-id, read from the ELF headers the core
//! holds (the kernel dumps every ELF file's first page) or from the file.

use std::collections::HashMap;

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endianness, Object};

use super::elf_core::Core;

/// A mapped ELF file.
#[derive(Clone, Debug)]
pub(crate) struct CoreModule {
    pub start: u64,
    pub end: u64,
    pub bias: u64,
    pub build_id: Vec<u8>,
    pub path: Vec<u8>,
    pub is_main: bool,
}

/// The ELF headers of a file's first page: (lowest PT_LOAD address rounded
/// down to its alignment, build-id if its note lies in the page).
fn headers(page: &[u8]) -> Option<(u64, Vec<u8>)> {
    let header = elf::FileHeader64::<Endianness>::parse(page).ok()?;
    let endian = header.endian().ok()?;
    let phdrs = header.program_headers(endian, page).ok()?;
    let lowest = phdrs
        .iter()
        .filter(|p| p.p_type(endian) == elf::PT_LOAD)
        .map(|p| p.p_vaddr(endian) & !(p.p_align(endian).max(4096) - 1))
        .min()?;
    let mut build_id = Vec::new();
    for p in phdrs {
        if let Ok(Some(mut notes)) = p.notes(endian, page) {
            while let Ok(Some(note)) = notes.next() {
                if note.name() == b"GNU" && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                    build_id = note.desc().to_vec();
                }
            }
        }
    }
    Some((lowest, build_id))
}

/// The module table: one entry per mapped ELF file, the main program marked
/// (the file whose range holds `AT_ENTRY`).
pub(crate) fn of(core: &Core<'_>, files: Files) -> Vec<CoreModule> {
    let mut out: Vec<CoreModule> = Vec::new();
    // Each path's module, by index into `out`: a core may list very many mappings.
    let mut by_path: HashMap<&[u8], usize> = HashMap::new();
    for m in &core.mappings {
        if let Some(existing) = by_path.get(m.path.as_slice()).and_then(|&i| out.get_mut(i)) {
            existing.start = existing.start.min(m.start);
            existing.end = existing.end.max(m.end);
            continue;
        }
        if m.offset != 0 {
            continue; // a file's later mappings join its first (offset 0) one above
        }
        let from_core = core.read(m.start, 4096.min(m.end.saturating_sub(m.start))).and_then(headers);
        let from_file = || {
            let bytes = files.map(&m.path)?;
            let (lowest, _) = headers(bytes.get(..4096.min(bytes.len()))?)?;
            let id = object::File::parse(&*bytes).ok()?.build_id().ok().flatten().unwrap_or_default().to_vec();
            Some((lowest, id))
        };
        let Some((lowest, mut build_id)) = from_core.or_else(from_file) else { continue };
        if build_id.is_empty()
            && let Some((_, id)) = from_file()
        {
            build_id = id;
        }
        by_path.insert(&m.path, out.len());
        out.push(CoreModule {
            start: m.start,
            end: m.end,
            bias: m.start.wrapping_sub(lowest),
            build_id,
            path: m.path.clone(),
            is_main: false,
        });
    }
    if out.is_empty() {
        // A core without NT_FILE (qemu-user writes none): the main program, from the auxiliary vector.
        out.extend(main_from_auxv(core, files));
    }
    if let Some(main) = out.iter_mut().find(|m| (m.start..m.end).contains(&core.entry)) {
        main.is_main = true;
    }
    out
}

/// The main program of a core that lists no mapped files: its path (`AT_EXECFN`, a string in the
/// core's memory) and, from that file's program headers, its load bias (where `AT_PHDR` put them)
/// and its range.
fn main_from_auxv(core: &Core<'_>, files: Files) -> Option<CoreModule> {
    let path = core.read_up_to(core.execfn, 4096)?.split(|&c| c == 0).next()?.to_vec();
    let bytes = files.map(&path)?;
    let header = elf::FileHeader64::<Endianness>::parse(&*bytes).ok()?;
    let endian = header.endian().ok()?;
    let phdrs = header.program_headers(endian, &*bytes).ok()?;
    let loads: Vec<_> = phdrs.iter().filter(|p| p.p_type(endian) == elf::PT_LOAD).collect();
    // Where the headers are at link time: the PT_PHDR entry, else the first segment's offset plus e_phoff.
    let linked = match phdrs.iter().find(|p| p.p_type(endian) == elf::PT_PHDR) {
        Some(p) => p.p_vaddr(endian),
        None => {
            let first = loads.iter().find(|p| p.p_offset(endian) == 0)?;
            first.p_vaddr(endian).checked_add(header.e_phoff(endian))?
        }
    };
    let bias = core.phdr.wrapping_sub(linked);
    let start = loads.iter().map(|p| p.p_vaddr(endian)).min()?.wrapping_add(bias);
    let end = loads.iter().map(|p| p.p_vaddr(endian).saturating_add(p.p_memsz(endian))).max()?.wrapping_add(bias);
    let build_id = object::File::parse(&*bytes).ok()?.build_id().ok().flatten().unwrap_or_default().to_vec();
    Some(CoreModule { start, end, bias, build_id, path, is_main: true })
}

/// Whether the files a core names are read (its modules' ELF headers when the
/// core lacks them, the directory's symbol, the site section), and how: mapped,
/// regular files only, so a path naming a device or a FIFO is refused unread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Files {
    /// Read them.
    Read,
    /// Read nothing but the core (the fuzzer; a core from elsewhere).
    Ignore,
}

impl Files {
    /// The file at `path`, mapped, if files are read and it is a regular file.
    pub(crate) fn map(self, path: &[u8]) -> Option<crate::io::FileBytes> {
        match self {
            Files::Read => crate::io::map_file(path_of(path), crate::io::Pages::OnDemand).ok(),
            Files::Ignore => None,
        }
    }
}

/// A path's bytes as a path.
pub(crate) fn path_of(b: &[u8]) -> &std::path::Path {
    use std::os::unix::ffi::OsStrExt;
    std::path::Path::new(std::ffi::OsStr::from_bytes(b))
}
