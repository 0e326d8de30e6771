//! Survives a mapped file shrinking under us: another process truncating a
//! dump while it is converted makes reads of the lost pages raise SIGBUS,
//! which would end the process. A handler, installed once, maps a zero page
//! over each lost page of a *registered* mapping and notes that the mapping
//! lost data; the read then completes (with zeros) and the conversion
//! reports the file as damaged. A SIGBUS anywhere else is left to kill the
//! process as before.
//!
//! Registration is lock-free (the handler cannot take locks): a fixed table
//! of slots; a mapping that finds no free slot is not mapped but read.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Mappings guarded at once: a batch maps about two per worker.
const SLOTS: usize = 256;

struct Slot {
    start: AtomicUsize,
    len: AtomicUsize,
    shrank: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)] // a template for the array below, never used by reference
const EMPTY: Slot = Slot { start: AtomicUsize::new(0), len: AtomicUsize::new(0), shrank: AtomicBool::new(false) };
static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// A registered mapping; unregisters it when dropped (before the mapping goes).
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Guards `bytes` (a file mapping), or `None` if the handler could not be
    /// installed or every slot is taken: the caller then reads the file instead.
    pub(crate) fn register(bytes: &[u8]) -> Option<Guard> {
        INSTALL.call_once(install);
        if !INSTALLED.load(Ordering::Acquire) || bytes.is_empty() {
            return None;
        }
        for (slot, entry) in TABLE.iter().enumerate() {
            // Claimed by setting its length; `start` is written before the length is, and read after.
            if entry.len.compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire).is_ok() {
                entry.shrank.store(false, Ordering::Relaxed);
                entry.start.store(bytes.as_ptr() as usize, Ordering::Release);
                entry.len.store(bytes.len(), Ordering::Release);
                return Some(Guard { slot });
            }
        }
        None
    }

    /// Whether a read of the mapping found pages the file no longer had.
    pub(crate) fn shrank(&self) -> bool {
        TABLE[self.slot].shrank.load(Ordering::Acquire)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        TABLE[self.slot].len.store(0, Ordering::Release);
    }
}

fn install() {
    // SAFETY: a zeroed `sigaction` is a valid "no flags, empty mask" value; the
    // handler has the SA_SIGINFO signature, and `sigaction` only reads `action`.
    let installed = unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) == 0
    };
    INSTALLED.store(installed, Ordering::Release);
}

extern "C" fn on_sigbus(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler;
    // SIGBUS fills in the faulting address.
    let address = unsafe { (*info).si_addr() } as usize;
    for entry in &TABLE {
        let len = entry.len.load(Ordering::Acquire);
        let start = entry.start.load(Ordering::Acquire);
        if len == 0 || len == usize::MAX || address < start || address - start >= len {
            continue;
        }
        // SAFETY: `sysconf` and `mmap` are plain system calls. The page lies
        // inside a live read-only mapping of ours (registered, not yet
        // unregistered), so replacing it with a zero page changes no other
        // memory; the faulting read then completes with zeros.
        let replaced = unsafe {
            let page = libc::sysconf(libc::_SC_PAGESIZE).max(1) as usize;
            let at = (address / page * page) as *mut libc::c_void;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
            libc::mmap(at, page, libc::PROT_READ, flags, -1, 0) != libc::MAP_FAILED
        };
        if replaced {
            entry.shrank.store(true, Ordering::Release);
            return;
        }
        break;
    }
    // Not ours (or not mendable; or sent by `kill`): the default action, which ends the process.
    // SAFETY: `signal` and `raise` are async-signal-safe.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
        libc::raise(libc::SIGBUS);
    }
}
