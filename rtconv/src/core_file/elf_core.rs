//! An ELF core file's memory and notes: its loaded segments as an address
//! space, its threads (`NT_PRSTATUS`), its process (`NT_PRPSINFO`), its
//! mapped files (`NT_FILE`) and its auxiliary vector (`NT_AUXV`).
//!
//! Both classes: a 64-bit process's core (x86_64, aarch64), and a whole
//! machine's (QEMU's `dump-guest-memory`: 32-bit for a Cortex-M, 64-bit for
//! rv64), which has no process, no mapped files and no auxiliary vector.
//! Nothing here trusts the file: every read is bounds-checked, and a note
//! that does not parse is skipped.

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader};
use object::{Endian, Endianness};

use super::memory::{Memory, word_in};

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
    pub endian: Endianness,
    /// Bytes in the core's words and pointers: 4 (ELF32) or 8.
    pub word_bytes: u64,
    pub memory: Memory<'a>,
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
    /// Whether it describes a process (`NT_PRPSINFO`): the kernel, gdb and qemu-user write one
    /// for a process; QEMU's `dump-guest-memory` and gdb's `gcore` of a bare-metal target none.
    has_process: bool,
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
    /// Parses the headers and notes of a core of either class.
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<Self, CoreFormatError> {
        match bytes.get(4) {
            Some(&c) if c == elf::ELFCLASS32.0 => Self::parse_as::<elf::FileHeader32<Endianness>>(bytes, 4),
            _ => Self::parse_as::<elf::FileHeader64<Endianness>>(bytes, 8),
        }
    }

    fn parse_as<H: FileHeader<Endian = Endianness>>(bytes: &'a [u8], word_bytes: u64) -> Result<Self, CoreFormatError> {
        let header = H::parse(bytes).map_err(CoreFormatError::Headers)?;
        let endian = header.endian().map_err(CoreFormatError::Headers)?;
        let headers = header.program_headers(endian, bytes).map_err(CoreFormatError::Headers)?;
        let mut core = Core {
            endian,
            word_bytes,
            memory: Memory::default(),
            threads: Vec::new(),
            pid: 0,
            name: Vec::new(),
            mappings: Vec::new(),
            entry: 0,
            phdr: 0,
            execfn: 0,
            cut_bytes: 0,
            has_process: false,
        };
        for ph in headers {
            if ph.p_type(endian) == elf::PT_LOAD {
                // A segment's memory past `p_filesz` was left out by design (read-only file pages,
                // coredump_filter); past the file's end, by a cut (RLIMIT_CORE, a full disk).
                let (offset, filesz) = (ph.p_offset(endian).into(), ph.p_filesz(endian).into());
                let in_file = (bytes.len() as u64).saturating_sub(offset).min(filesz);
                core.cut_bytes = core.cut_bytes.saturating_add(filesz - in_file);
                // `in_file` bytes from `offset` are in the file: both fit a usize.
                let present = &bytes[offset.min(bytes.len() as u64) as usize..][..in_file as usize];
                core.memory.add(ph.p_vaddr(endian).into(), present);
            } else if let Ok(Some(mut notes)) = ph.notes(endian, bytes) {
                while let Ok(Some(note)) = notes.next() {
                    core.note(note.name(), note.n_type(endian).0, note.desc());
                }
            }
        }
        Ok(core)
    }

    fn note(&mut self, name: &[u8], kind: u32, desc: &[u8]) {
        if name != b"CORE" {
            return;
        }
        let endian = self.endian;
        let u16_at = |at: usize| desc.get(at..at + 2).map(|b| endian.read_u16([b[0], b[1]]));
        let u32_at = |at: usize| desc.get(at..at + 4).map(|b| word_in(endian, b) as u32);
        let wide = self.word_bytes == 8;
        match kind {
            NT_PRSTATUS => {
                // pr_cursig after the 12-byte siginfo; pr_pid after two signal masks of a word each.
                let pid_at = if wide { 32 } else { 24 };
                if let (Some(signal), Some(tid)) = (u16_at(12), u32_at(pid_at)) {
                    self.threads.push(CoreThread { tid, signal });
                }
            }
            NT_PRPSINFO => {
                self.has_process = true;
                // After 4 bytes of state, pr_flag (a word), uid and gid (4 bytes each on 64-bit
                // Linux, 2 on 32-bit), four ids, then the 16-byte name.
                let (pid_at, name_at) = if wide { (24, 40) } else { (12, 28) };
                if let Some(pid) = u32_at(pid_at) {
                    self.pid = pid;
                }
                if let Some(name) = desc.get(name_at..name_at + 16) {
                    self.name = name.split(|&b| b == 0).next().unwrap_or_default().to_vec();
                }
            }
            NT_FILE => self.mappings = self.parse_files(desc).unwrap_or_default(),
            NT_AUXV => {
                let w = self.word_bytes as usize;
                for pair in desc.chunks_exact(2 * w) {
                    let value = word_in(endian, &pair[w..]);
                    match word_in(endian, &pair[..w]) {
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

    /// `NT_FILE`: count, page size, count × (start, end, page offset), count names; in words.
    fn parse_files(&self, desc: &[u8]) -> Option<Vec<Mapping>> {
        let w = self.word_bytes as usize;
        let word = |i: usize| desc.get(i * w..i * w + w).map(|b| word_in(self.endian, b));
        let count = usize::try_from(word(0)?).ok()?;
        let page = word(1)?;
        let names_at = count.checked_mul(3 * w)?.checked_add(2 * w)?;
        let mut names = desc.get(names_at..)?.split(|&b| b == 0);
        let mut out = Vec::with_capacity(count.min(desc.len() / (3 * w)));
        for i in 0..count {
            let (start, end, pages) = (word(2 + 3 * i)?, word(3 + 3 * i)?, word(4 + 3 * i)?);
            out.push(Mapping { start, end, offset: pages.saturating_mul(page), path: names.next()?.to_vec() });
        }
        Some(out)
    }

    /// `len` bytes of memory at `addr`, if the core holds all of them.
    pub(crate) fn read(&self, addr: u64, len: u64) -> Option<&'a [u8]> {
        self.memory.read(addr, len)
    }

    /// At most `max` bytes of memory from `addr`: as many as the core holds there.
    pub(crate) fn read_up_to(&self, addr: u64, max: u64) -> Option<&'a [u8]> {
        self.memory.read_up_to(addr, max)
    }

    /// Whether this is a whole machine's core (QEMU's `dump-guest-memory`, a debugger's `gcore`
    /// of a bare-metal target) rather than a process's: no process note, no mapped files, no
    /// auxiliary vector.
    pub(crate) fn is_machine(&self) -> bool {
        !self.has_process && self.mappings.is_empty() && self.entry == 0 && self.phdr == 0
    }
}
