//! Semihosting: files and the console of the debugging host (a debug probe,
//! or QEMU with `-semihosting-config enable=on`), reached by a trap the
//! debugger catches — slow, but it needs no peripheral, so a first dump can
//! be written before any UART is set up.
//!
//! ```no_run
//! use ringtrace::bare::semihosting::{HostFile, exit};
//! # fn dump(_: HostFile) {}
//! if let Some(file) = HostFile::create(c"firmware.rtd") {
//!     dump(file); // `Dumper::write(file)`: a `Sink`
//! }
//! exit(true); // ends the QEMU run (or stops at the debugger)
//! ```
//!
//! Cortex-M (`bkpt 0xAB`) and RISC-V (the `slli`/`ebreak`/`srai` sequence);
//! calling it with no debugger attached stops the core (a HardFault on
//! Cortex-M, a breakpoint exception on RISC-V).

use ringtrace_format::Sink;

const SYS_OPEN: usize = 0x01;
const SYS_WRITE: usize = 0x05;
const SYS_EXIT: usize = 0x18;
/// `fopen` mode "wb".
const MODE_WRITE_BINARY: usize = 5;
/// `fopen` mode "w": for the console, `:tt`.
const MODE_WRITE: usize = 4;

/// One semihosting call: operation `op` with its argument (a pointer to a parameter block).
///
/// # Safety
///
/// A debugger that implements semihosting is attached; `arg` is what `op` takes.
#[cfg(target_arch = "arm")]
unsafe fn call(op: usize, arg: usize) -> usize {
    let ret: usize;
    // SAFETY: the caller attaches a debugger; it reads the parameter block and sets r0.
    unsafe { core::arch::asm!("bkpt 0xAB", inout("r0") op => ret, in("r1") arg, options(nostack, preserves_flags)) };
    ret
}

/// One semihosting call (see the Arm one). The three instructions must be
/// uncompressed and in one page: the debugger recognises them together.
#[cfg(any(target_arch = "riscv32", target_arch = "riscv64"))]
unsafe fn call(op: usize, arg: usize) -> usize {
    let ret: usize;
    // SAFETY: the caller attaches a debugger; it reads the parameter block and sets a0.
    unsafe {
        core::arch::asm!(
            ".option push", ".option norvc", ".balign 16",
            "slli x0, x0, 0x1f", "ebreak", "srai x0, x0, 7",
            ".option pop",
            inout("a0") op => ret, in("a1") arg, options(nostack, preserves_flags)
        )
    };
    ret
}

/// A file of the debugging host, open for writing: a [`Sink`] for dumps,
/// and `core::fmt::Write` for text (the console is the file `:tt`).
#[derive(Debug)]
pub struct HostFile(usize);

impl HostFile {
    /// Creates (or truncates) `path` on the host, relative to the
    /// debugger's working directory; `None` if the host refuses.
    pub fn create(path: &core::ffi::CStr) -> Option<Self> {
        let mode = if path.to_bytes() == b":tt" { MODE_WRITE } else { MODE_WRITE_BINARY };
        let block = [path.as_ptr() as usize, mode, path.to_bytes().len()];
        // SAFETY: SYS_OPEN takes {name, mode, name length}; the block lives across the call.
        let fd = unsafe { call(SYS_OPEN, block.as_ptr() as usize) };
        (fd as isize >= 0).then_some(HostFile(fd))
    }

    /// The host's console (its standard output).
    pub fn console() -> Option<Self> {
        Self::create(c":tt")
    }
}

impl Sink for HostFile {
    /// Bytes the host did not write.
    type Error = usize;
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), usize> {
        let block = [self.0, bytes.as_ptr() as usize, bytes.len()];
        // SAFETY: SYS_WRITE takes {handle, data, length} and returns how many bytes it did not write.
        match unsafe { call(SYS_WRITE, block.as_ptr() as usize) } {
            0 => Ok(()),
            left => Err(left),
        }
    }
}

impl core::fmt::Write for HostFile {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.write_all(s.as_bytes()).map_err(|_| core::fmt::Error)
    }
}

/// Ends the run: QEMU exits with status 0 (`success`) or 1.
pub fn exit(success: bool) {
    // ADP_Stopped_ApplicationExit, or ADP_Stopped_RunTimeErrorUnknown.
    let reason: usize = if success { 0x20026 } else { 0x20023 };
    // On 64-bit targets the argument is a block {reason, status}; on 32-bit, the reason itself.
    let block = [reason, usize::from(!success)];
    let arg = if usize::BITS == 64 { block.as_ptr() as usize } else { reason };
    // SAFETY: SYS_EXIT takes the reason (a block on 64-bit targets), which lives across the call.
    unsafe { call(SYS_EXIT, arg) };
}
