//! Rings out of a firmware's RAM, read by a debugger while the target was
//! halted (`dump binary memory ram.bin 0x20000000 0x20010000` in gdb,
//! `savebin` in OpenOCD, `probe-rs read`): one or more raw images at their
//! addresses, and the firmware's ELF file, whose loaded sections supply what
//! lives in flash (track names, site descriptors) and whose symbol table
//! places the ring directory.

use std::path::Path;

use object::{Object, ObjectSegment};

use super::memory::Memory;
use super::modules::{CoreModule, Files};
use super::rings::{self, Found, Snapshot};
use super::{CoreError, Process, Said};

/// A raw memory image: `bytes` as they were at `address`.
#[derive(Clone, Copy, Debug)]
pub struct Image<'a> {
    /// The address of its first byte.
    pub address: u64,
    /// Its bytes.
    pub bytes: &'a [u8],
}

/// Reads the rings of the firmware `elf` (its path and bytes) out of
/// `images`, and writes them as a dump (reason `core`): its tracks as
/// threads 1, 2, …, the spans open at the snapshot shown open. The counter's
/// rate is the one the firmware stated, or `counter_hz`.
pub fn memory_to_dump(
    elf_path: &Path,
    elf: &[u8],
    images: &[Image<'_>],
    counter_hz: Option<u64>,
) -> Result<Vec<u8>, CoreError> {
    let file = object::File::parse(elf).map_err(|e| CoreError::Elf(e.to_string()))?;
    let endian = if file.is_little_endian() { object::Endianness::Little } else { object::Endianness::Big };
    let mut memory = Memory::default();
    for image in images {
        memory.add(image.address, image.bytes);
    }
    // What the images leave out, as the ELF file loads it: flash, and initial values in RAM.
    for segment in file.segments() {
        if let Ok(data) = segment.data() {
            memory.add(segment.address(), data);
        }
    }
    let snap = Snapshot { memory: &memory, endian, called: "the memory images" };
    let mut said = Said::default();
    let (address, how) = match rings::symbol(&file) {
        Some(a) => (a, Found::Symbol),
        None => (rings::scan(snap).ok_or(CoreError::NoDirectory)?, Found::Scan),
    };
    // The directory's fixed part (its magic and words, 4 bytes each at the least) must come from
    // an image: the ELF file holds only its initial values, which list no ring.
    let fixed = 8 + 4 * ringtrace_format::directory::DIR_WORDS as u64;
    let in_an_image = images
        .iter()
        .any(|i| address.checked_sub(i.address).is_some_and(|at| at.saturating_add(fixed) <= i.bytes.len() as u64));
    if !in_an_image {
        return Err(CoreError::NotInImages { address });
    }
    if how == Found::Scan {
        said.notes.push(format!(
            "{} has no `ringtrace_directory` symbol; found the directory by its magic at {address:#x}",
            elf_path.display()
        ));
    }
    // The code: the file's executable segments, loaded where it says (none: an empty range).
    let code = || file.segments().filter(is_code);
    let start = code().map(|s| s.address()).min().unwrap_or(0);
    let end = code().map(|s| s.address().saturating_add(s.size())).max().unwrap_or(0);
    let module = CoreModule {
        start,
        end,
        bias: 0,
        build_id: file.build_id().ok().flatten().unwrap_or_default().to_vec(),
        path: elf_path.as_os_str().as_encoded_bytes().to_vec(),
        is_main: true,
    };
    let name = elf_path.file_stem().unwrap_or_default().as_encoded_bytes();
    let process = Process { pid: 0, name, fatal: (0, 0), file_time: None };
    super::write(snap, address, &[module], Files::Ignore, &process, counter_hz, said)
}

/// Whether an ELF segment holds code (executable).
fn is_code(segment: &object::Segment<'_, '_>) -> bool {
    match segment.flags() {
        object::SegmentFlags::Elf { p_flags, .. } => p_flags.0 & object::elf::PF_X.0 != 0,
        _ => false,
    }
}
