//! What the recorder asks of the operating system: thread ids, clocks,
//! process names and the map of loaded modules. Linux (glibc or musl).

use std::ffi::CStr;
use std::path::PathBuf;
use std::string::String;
use std::vec::Vec;

use ringtrace_format::Anchor;

/// The kernel's id of the calling thread.
pub fn thread_id() -> u64 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u64 }
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; the clock ids used here always exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64).wrapping_mul(1_000_000_000).wrapping_add(ts.tv_nsec as u64)
}

/// The monotonic clock in nanoseconds.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Tries per anchor: each a counter read, a clock read and a counter read,
/// about 0.1 µs; the tightest is kept, so a stall or an interrupt during
/// some of them does not move the anchor.
const ANCHOR_TRIES: usize = 16;

/// One instant on the span counter and both OS clocks, to about the width of
/// the tightest of [`ANCHOR_TRIES`] (counter, monotonic clock, counter)
/// triples — ~50 ns on x86 — and the realtime clock placed on the monotonic
/// one by the tightest of as many (monotonic, realtime, monotonic) triples.
///
/// The counter reads are ordered ([`Serialized`](crate::clock::Serialized):
/// `lfence; rdtsc; lfence` on x86), so neither the clock read nor the
/// other counter read moves across them; the anchor's tick is the midpoint
/// of the two. Both clocks are read a few times first: a process's first
/// `clock_gettime` faults the vDSO's data in and costs microseconds, which
/// an unwarmed anchor splits unevenly (docs/PERFORMANCE.md, the clock).
pub fn anchor() -> Anchor {
    use crate::clock::{Clock, Serialized};
    for _ in 0..4 {
        core::hint::black_box((Serialized::now(), monotonic_ns(), clock_ns(libc::CLOCK_REALTIME)));
    }
    let (mut width, mut ticks, mut mono_ns) = (u64::MAX, 0, 0);
    for _ in 0..ANCHOR_TRIES {
        let before = Serialized::now();
        let mono = monotonic_ns();
        let after = Serialized::now();
        let w = after.wrapping_sub(before);
        if w < width {
            (width, ticks, mono_ns) = (w, before.wrapping_add(w / 2), mono);
        }
    }
    let (mut width, mut real_minus_mono) = (u64::MAX, 0u64);
    for _ in 0..ANCHOR_TRIES {
        let before = monotonic_ns();
        let real = clock_ns(libc::CLOCK_REALTIME);
        let after = monotonic_ns();
        let w = after.wrapping_sub(before);
        if w < width {
            (width, real_minus_mono) = (w, real.wrapping_sub(before.wrapping_add(w / 2)));
        }
    }
    Anchor { ticks, mono_ns, real_ns: mono_ns.wrapping_add(real_minus_mono) }
}

/// The process's name as the kernel shows it (`/proc/self/comm`).
pub fn process_name() -> String {
    std::fs::read_to_string("/proc/self/comm").map(|s| s.trim_end().into()).unwrap_or_default()
}

/// The calling thread's name as the kernel shows it (`/proc/thread-self/comm`).
pub fn thread_name() -> String {
    std::fs::read_to_string("/proc/thread-self/comm").map(|s| s.trim_end().into()).unwrap_or_default()
}

/// What `dladdr` says about a code address.
#[derive(Debug)]
pub struct Resolved {
    pub key: u64,
    pub symbol_address: u64,
    pub module: Vec<u8>,
    pub symbol: Vec<u8>,
}

/// `dladdr(key)`: the module and the nearest dynamic symbol, if the loader knows the address.
pub fn dladdr(key: u64) -> Option<Resolved> {
    // SAFETY: `info` is plain data dladdr fills in; dladdr accepts any address.
    let mut info: libc::Dl_info = unsafe { core::mem::zeroed() };
    // SAFETY: as above; the strings it returns are owned by the loader and copied at once.
    if unsafe { libc::dladdr(key as usize as *const libc::c_void, &mut info) } == 0 {
        return None;
    }
    let copy = |p: *const libc::c_char| {
        // SAFETY: a non-null pointer from dladdr is a NUL-terminated string.
        if p.is_null() { Vec::new() } else { unsafe { CStr::from_ptr(p) }.to_bytes().to_vec() }
    };
    Some(Resolved {
        key,
        symbol_address: info.dli_saddr as usize as u64,
        module: copy(info.dli_fname),
        symbol: copy(info.dli_sname),
    })
}

/// A loaded module as `dl_iterate_phdr` reports it.
#[derive(Debug)]
pub struct LoadedModule {
    pub path: Vec<u8>,
    pub build_id: Vec<u8>,
    pub bias: u64,
    pub start: u64,
    pub end: u64,
    pub is_main: bool,
}

/// Every module loaded in the process, main executable first, with its real path.
pub fn loaded_modules() -> Vec<LoadedModule> {
    let mut modules: Vec<LoadedModule> = Vec::new();
    // SAFETY: the callback only reads the `dl_phdr_info` it is given, during the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut modules as *mut Vec<LoadedModule>).cast()) };
    let exe: Option<PathBuf> = std::env::current_exe().ok();
    for (i, m) in modules.iter_mut().enumerate() {
        // The main executable comes first, with an empty name (glibc) or as /proc/self/exe
        // (musl's static dl_iterate_phdr), which names nothing outside this process.
        if i == 0 && (m.path.is_empty() || m.path == b"/proc/self/exe") {
            m.is_main = true;
            if let Some(exe) = &exe {
                m.path = exe.as_os_str().as_encoded_bytes().to_vec();
            }
        }
    }
    modules
}

/// The loader's program headers: the ELF class of the process's own word size.
#[cfg(target_pointer_width = "64")]
type ProgramHeader = libc::Elf64_Phdr;
#[cfg(target_pointer_width = "32")]
type ProgramHeader = libc::Elf32_Phdr;

/// An ELF address or size of either class, widened.
fn wide(value: impl Into<u64>) -> u64 {
    value.into()
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _size: libc::size_t, data: *mut libc::c_void) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info pointer and our `data` for the duration of the call.
    let (info, modules) = unsafe { (&*info, &mut *data.cast::<Vec<LoadedModule>>()) };
    let bias = wide(info.dlpi_addr);
    let phdrs: &[ProgramHeader] = if info.dlpi_phdr.is_null() {
        &[]
    } else {
        // SAFETY: the loader guarantees dlpi_phnum headers at dlpi_phdr.
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) }
    };
    let mut start = u64::MAX;
    let mut end = 0u64;
    let mut build_id = Vec::new();
    for ph in phdrs {
        match ph.p_type {
            libc::PT_LOAD => {
                start = start.min(bias.wrapping_add(wide(ph.p_vaddr)));
                end = end.max(bias.wrapping_add(wide(ph.p_vaddr)).wrapping_add(wide(ph.p_memsz)));
            }
            libc::PT_NOTE if build_id.is_empty() => {
                // SAFETY: PT_NOTE segments are mapped and readable for p_memsz bytes at bias + p_vaddr.
                let notes = unsafe {
                    std::slice::from_raw_parts(
                        bias.wrapping_add(wide(ph.p_vaddr)) as usize as *const u8,
                        ph.p_memsz as usize,
                    )
                };
                if let Some(id) = gnu_build_id(notes) {
                    build_id = id.to_vec();
                }
            }
            _ => {}
        }
    }
    let path = if info.dlpi_name.is_null() {
        Vec::new()
    } else {
        // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
        unsafe { CStr::from_ptr(info.dlpi_name) }.to_bytes().to_vec()
    };
    if start < end {
        modules.push(LoadedModule { path, build_id, bias, start, end, is_main: false });
    }
    0
}

/// The descriptor of the `NT_GNU_BUILD_ID` note in a run of ELF notes.
fn gnu_build_id(mut notes: &[u8]) -> Option<&[u8]> {
    const NT_GNU_BUILD_ID: u32 = 3;
    let word = |b: &[u8], at: usize| -> Option<u32> { Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?)) };
    while notes.len() >= 12 {
        let namesz = word(notes, 0)? as usize;
        let descsz = word(notes, 4)? as usize;
        let kind = word(notes, 8)?;
        let name_end = 12usize.checked_add(namesz)?;
        let desc_start = name_end.next_multiple_of(4);
        let desc_end = desc_start.checked_add(descsz)?;
        let name = notes.get(12..name_end)?;
        let desc = notes.get(desc_start..desc_end)?;
        if kind == NT_GNU_BUILD_ID && name == b"GNU\0" {
            return Some(desc);
        }
        notes = notes.get(desc_end.next_multiple_of(4)..)?;
    }
    None
}
