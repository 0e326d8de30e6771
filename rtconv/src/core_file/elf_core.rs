//! An ELF core file's memory and notes: its loaded segments as an address
//! space, its threads (`NT_PRSTATUS`), its process (`NT_PRPSINFO`), its
//! mapped files (`NT_FILE`) and its auxiliary vector (`NT_AUXV`).
//!
//! 64-bit cores only (x86_64, aarch64). Nothing here trusts the file: every
//! read is bounds-checked, and a note that does not parse is skipped.

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endian, Endianness};

/// One loaded segment at `vaddr`, of which the first `present` bytes are in
/// the file at `offset` (none of a read-only file mapping the kernel left
/// out; fewer than declared when the core was cut short).
#[derive(Clone, Copy, Debug)]
struct Segment {
    vaddr: u64,
    offset: usize,
    present: u64,
}

/// A thread of the core, in note order: the kernel writes the thread that
/// took the fatal signal first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CoreThread {
    pub tid: u32,
    /// The signal it was stopped by (`pr_cursig`), 0 if none.
    pub signal: u16,
}

/// A file mapping from `NT_FILE`.
#[derive(Clone, Debug)]
pub(crate) struct Mapping {
    pub start: u64,
    pub end: u64,
    /// Offset in the file, in bytes.
    pub offset: u64,
    pub path: Vec<u8>,
}

/// A parsed core.
pub(crate) struct Core<'a> {
    bytes: &'a [u8],
    pub endian: Endianness,
    segments: Vec<Segment>,
    pub threads: Vec<CoreThread>,
    pub pid: u32,
    pub name: Vec<u8>,
    pub mappings: Vec<Mapping>,
    /// `AT_ENTRY`: the main program's entry point, 0 if unknown.
    pub entry: u64,
    /// `AT_PHDR`: where the main program's program headers are in memory, 0 if unknown.
    pub phdr: u64,
    /// `AT_EXECFN`: the address of the main program's path in memory, 0 if unknown.
    pub execfn: u64,
    /// Bytes the segments say the file holds but it does not: the core was cut short.
    pub cut_bytes: u64,
}

/// The first 8 bytes of `b` (at least 8 long) as a `u64` in `endian`.
pub(crate) fn u64_in(endian: Endianness, b: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&b[..8]);
    endian.read_u64(word)
}

/// Whether `bytes` start like an ELF core file (of any class): `e_type` is `ET_CORE`.
pub(crate) fn is_core(bytes: &[u8]) -> bool {
    let Some(e_type) = bytes.get(16..18) else { return false };
    let e_type = match bytes.get(5) {
        Some(1) => u16::from_le_bytes([e_type[0], e_type[1]]),
        Some(2) => u16::from_be_bytes([e_type[0], e_type[1]]),
        _ => return false,
    };
    bytes.starts_with(b"\x7fELF") && e_type == elf::ET_CORE.0
}

/// Why a core cannot be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CoreFormatError {
    /// A 32-bit core.
    #[error("a 32-bit core; rtconv reads 64-bit cores (x86_64, aarch64)")]
    Elf32,
    /// The ELF headers do not parse.
    #[error("its ELF headers do not parse ({0})")]
    Headers(object::Error),
}

const NT_PRSTATUS: u32 = elf::NT_PRSTATUS.0;
const NT_PRPSINFO: u32 = elf::NT_PRPSINFO.0;
const NT_FILE: u32 = elf::NT_FILE.0;
const NT_AUXV: u32 = elf::NT_AUXV.0;
const AT_PHDR: u64 = 3;
const AT_ENTRY: u64 = 9;
const AT_EXECFN: u64 = 31;

impl<'a> Core<'a> {
    /// Parses the headers and notes of a 64-bit core.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, CoreFormatError> {
        if bytes.get(4) == Some(&elf::ELFCLASS32.0) {
            return Err(CoreFormatError::Elf32);
        }
        let header = elf::FileHeader64::<Endianness>::parse(bytes).map_err(CoreFormatError::Headers)?;
        let endian = header.endian().map_err(CoreFormatError::Headers)?;
        let headers = header.program_headers(endian, bytes).map_err(CoreFormatError::Headers)?;
        let mut core = Core {
            bytes,
            endian,
            segments: Vec::new(),
            threads: Vec::new(),
            pid: 0,
            name: Vec::new(),
            mappings: Vec::new(),
            entry: 0,
            phdr: 0,
            execfn: 0,
            cut_bytes: 0,
        };
        for ph in headers {
            if ph.p_type(endian) == elf::PT_LOAD {
                // A segment's memory past `p_filesz` was left out by design (read-only file pages,
                // coredump_filter); past the file's end, by a cut (RLIMIT_CORE, a full disk).
                let (offset, filesz) = (ph.p_offset(endian), ph.p_filesz(endian));
                let in_file = (bytes.len() as u64).saturating_sub(offset).min(filesz);
                core.cut_bytes = core.cut_bytes.saturating_add(filesz - in_file);
                core.segments.push(Segment {
                    vaddr: ph.p_vaddr(endian),
                    offset: usize::try_from(offset).unwrap_or(usize::MAX),
                    present: in_file,
                });
            } else if let Ok(Some(mut notes)) = ph.notes(endian, bytes) {
                while let Ok(Some(note)) = notes.next() {
                    core.note(note.name(), note.n_type(endian).0, note.desc());
                }
            }
        }
        core.segments.sort_by_key(|s| s.vaddr);
        Ok(core)
    }

    fn note(&mut self, name: &[u8], kind: u32, desc: &[u8]) {
        if name != b"CORE" {
            return;
        }
        let u16_at = |at: usize| desc.get(at..at + 2).map(|b| self.endian.read_u16([b[0], b[1]]));
        let u32_at = |at: usize| desc.get(at..at + 4).map(|b| self.endian.read_u32([b[0], b[1], b[2], b[3]]));
        match kind {
            NT_PRSTATUS => {
                if let (Some(signal), Some(tid)) = (u16_at(12), u32_at(32)) {
                    self.threads.push(CoreThread { tid, signal });
                }
            }
            NT_PRPSINFO => {
                if let Some(pid) = u32_at(24) {
                    self.pid = pid;
                }
                if let Some(name) = desc.get(40..56) {
                    self.name = name.split(|&b| b == 0).next().unwrap_or_default().to_vec();
                }
            }
            NT_FILE => self.mappings = self.parse_files(desc).unwrap_or_default(),
            NT_AUXV => {
                for pair in desc.chunks_exact(16) {
                    let value = self.endian_u64(&pair[8..]);
                    match self.endian_u64(&pair[..8]) {
                        AT_ENTRY => self.entry = value,
                        AT_PHDR => self.phdr = value,
                        AT_EXECFN => self.execfn = value,
                        _ => {}
                    }
                }
            }
            _ => {}
        }
    }

    /// `NT_FILE`: count, page size, count × (start, end, page offset), count names.
    fn parse_files(&self, desc: &[u8]) -> Option<Vec<Mapping>> {
        let word = |i: usize| desc.get(i * 8..i * 8 + 8).map(|b| self.endian_u64(b));
        let count = usize::try_from(word(0)?).ok()?;
        let page = word(1)?;
        let names_at = count.checked_mul(24)?.checked_add(16)?;
        let mut names = desc.get(names_at..)?.split(|&b| b == 0);
        let mut out = Vec::with_capacity(count.min(desc.len() / 24));
        for i in 0..count {
            let (start, end, pages) = (word(2 + 3 * i)?, word(3 + 3 * i)?, word(4 + 3 * i)?);
            out.push(Mapping { start, end, offset: pages.saturating_mul(page), path: names.next()?.to_vec() });
        }
        Some(out)
    }

    /// The first 8 bytes of `b` as a `u64` in the core's byte order.
    pub(crate) fn endian_u64(&self, b: &[u8]) -> u64 {
        u64_in(self.endian, b)
    }

    /// `len` bytes of memory at `addr`, if the core holds all of them.
    pub(crate) fn read(&self, addr: u64, len: u64) -> Option<&'a [u8]> {
        let i = self.segments.partition_point(|s| s.vaddr <= addr).checked_sub(1)?;
        let s = self.segments[i];
        let within = addr - s.vaddr;
        if within.checked_add(len)? > s.present {
            return None;
        }
        let start = s.offset.checked_add(usize::try_from(within).ok()?)?;
        self.bytes.get(start..start.checked_add(usize::try_from(len).ok()?)?)
    }

    /// At most `max` bytes of memory from `addr`: as many as the core holds there.
    pub(crate) fn read_up_to(&self, addr: u64, max: u64) -> Option<&'a [u8]> {
        let i = self.segments.partition_point(|s| s.vaddr <= addr).checked_sub(1)?;
        let s = self.segments[i];
        let within = addr - s.vaddr;
        self.read(addr, s.present.checked_sub(within)?.min(max))
    }

    /// The 64-bit word at `addr`.
    pub(crate) fn word(&self, addr: u64) -> Option<u64> {
        self.read(addr, 8).map(|b| self.endian_u64(b))
    }

    /// Each segment's present bytes with its address, for a scan.
    pub(crate) fn present(&self) -> impl Iterator<Item = (u64, &'a [u8])> + '_ {
        self.segments.iter().filter_map(|s| {
            let bytes = self.bytes.get(s.offset..s.offset.checked_add(usize::try_from(s.present).ok()?)?)?;
            Some((s.vaddr, bytes))
        })
    }
}
