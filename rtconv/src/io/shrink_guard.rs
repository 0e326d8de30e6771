//! Survives a mapped file shrinking under us: another process truncating a
//! dump while it is converted makes reads of the lost pages raise SIGBUS,
//! which would end the process. A handler maps a zero page over each lost
//! page of a *registered* mapping and notes that the mapping lost data; the
//! read then completes (with zeros) and the conversion reports the file as
//! damaged.
//!
//! The handler is the whole process's, so the library never installs it by
//! itself: the program does, once ([`guard_shrinking_files`]; `rtconv`'s
//! `main` does). It keeps the handler that was there before and passes it
//! every SIGBUS that is not a registered mapping's — a fault elsewhere, a
//! signal sent with `kill` — as if it were not there; with no handler
//! before, such a SIGBUS ends the process as it always would. Without the
//! guard, files are mapped unguarded (a file cut short under the mapping
//! then ends the process, as it does any program that maps files).
//!
//! Registration is lock-free (the handler cannot take locks): a fixed table
//! of slots; a mapping that finds no free slot is not mapped but read.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
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
/// Set once the handler is installed (and `PREVIOUS` and `PAGE` written).
static INSTALLED: AtomicBool = AtomicBool::new(false);
/// The page size, read before the handler is installed (`sysconf` is not async-signal-safe).
static PAGE: AtomicUsize = AtomicUsize::new(0);
/// The SIGBUS action before ours, which every SIGBUS that is not ours goes to.
static PREVIOUS: Previous = Previous(UnsafeCell::new(MaybeUninit::uninit()));

struct Previous(UnsafeCell<MaybeUninit<libc::sigaction>>);

// SAFETY: written once, inside `INSTALL`, before the handler that reads it is installed and before
// `INSTALLED` is set (Release); read only after `INSTALLED` is seen set (Acquire) or from the handler
// (installed after the write). Never written again.
unsafe impl Sync for Previous {}

/// Switches the guard on for the whole process: mappings made from now on
/// survive their file shrinking (see the module docs). Call it once, early,
/// from the program (not from a library); later calls do nothing. Fails if
/// the handler cannot be installed; files are then mapped unguarded.
pub fn guard_shrinking_files() -> std::io::Result<()> {
    let mut result = Ok(());
    INSTALL.call_once(|| result = install());
    match (result, INSTALLED.load(Ordering::Acquire)) {
        (Err(e), _) => Err(e),
        (Ok(()), true) => Ok(()),
        (Ok(()), false) => Err(std::io::Error::other("the SIGBUS handler could not be installed")),
    }
}

/// Whether the guard is on.
pub(crate) fn is_on() -> bool {
    INSTALLED.load(Ordering::Acquire)
}

/// A registered mapping; unregisters it when dropped (before the mapping goes).
#[derive(Debug)]
pub(crate) struct Guard {
    slot: usize,
}

impl Guard {
    /// Guards `bytes` (a file mapping; the guard is on), or `None` if every
    /// slot is taken.
    pub(crate) fn register(bytes: &[u8]) -> Option<Guard> {
        if bytes.is_empty() {
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

fn install() -> std::io::Result<()> {
    // SAFETY: `sysconf` has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    PAGE.store(usize::try_from(page).unwrap_or(4096).max(1), Ordering::Relaxed);
    // SAFETY: `sigaction` with a null new action only writes the current one into PREVIOUS, which
    // nothing reads yet (see `Previous`); a zeroed `sigaction` is a valid "no flags, empty mask"
    // value, and the handler has the SA_SIGINFO signature.
    unsafe {
        if libc::sigaction(libc::SIGBUS, std::ptr::null(), (*PREVIOUS.0.get()).as_mut_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_sigbus as *const () as usize;
        action.sa_flags = libc::SA_SIGINFO;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    INSTALLED.store(true, Ordering::Release);
    Ok(())
}

extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler;
    // SIGBUS fills in the faulting address (and a `kill` leaves it 0, which no mapping holds).
    let address = unsafe { (*info).si_addr() } as usize;
    for entry in &TABLE {
        let len = entry.len.load(Ordering::Acquire);
        let start = entry.start.load(Ordering::Acquire);
        if len == 0 || len == usize::MAX || address < start || address - start >= len {
            continue;
        }
        let page = PAGE.load(Ordering::Relaxed);
        // SAFETY: `mmap` is not on POSIX's list of async-signal-safe functions, but glibc's and
        // musl's are the bare system call: no lock, no state but errno, which is saved and put
        // back (the interrupted code may be reading it). The page lies inside a live read-only
        // mapping of ours (registered, not yet unregistered), so replacing it with a zero page
        // changes no other memory; the faulting read then completes with zeros.
        let replaced = unsafe {
            let errno = *libc::__errno_location();
            let at = (address / page * page) as *mut libc::c_void;
            let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
            let replaced = libc::mmap(at, page, libc::PROT_READ, flags, -1, 0) != libc::MAP_FAILED;
            *libc::__errno_location() = errno;
            replaced
        };
        if replaced {
            entry.shrank.store(true, Ordering::Release);
            return;
        }
        break;
    }
    pass_on(signal, info, context);
}

/// Hands a SIGBUS that is not ours to the action before ours.
fn pass_on(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    // SAFETY: the handler runs only after `install` wrote PREVIOUS (see `Previous`).
    let previous = unsafe { (*PREVIOUS.0.get()).assume_init_ref() };
    let handler = previous.sa_sigaction;
    // SAFETY: the kernel passes a valid siginfo.
    let sent = unsafe { (*info).si_code } <= 0; // by kill, tgkill or sigqueue; above 0: a fault
    if handler == libc::SIG_IGN && sent {
        // Ignored, as it would have been without us.
    } else if handler == libc::SIG_DFL || handler == libc::SIG_IGN {
        // The default action (a fault cannot be ignored: it would repeat forever).
        default_action(signal);
    } else if previous.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: an SA_SIGINFO action's handler has this signature; it gets what the kernel gave us.
        let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(handler) };
        handler(signal, info, context);
    } else {
        // SAFETY: a plain action's handler takes the signal number.
        let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
        handler(signal);
    }
}

/// Ends the process as an unhandled SIGBUS does: the default action back,
/// then the signal again (a fault repeats when the handler returns; a sent
/// signal is raised, and arrives once the handler returns).
fn default_action(signal: libc::c_int) {
    // SAFETY: `sigaction` and `raise` are async-signal-safe; a zeroed action is SIG_DFL with no flags.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &action, std::ptr::null_mut());
        libc::raise(signal);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// SIGBUS signals the handler installed before the guard saw, and the mapping it mends.
    static PREVIOUS_CALLS: AtomicUsize = AtomicUsize::new(0);
    static FOREIGN_START: AtomicUsize = AtomicUsize::new(0);
    static FOREIGN_LEN: AtomicUsize = AtomicUsize::new(0);

    /// The program's own SIGBUS handler, there before the guard: counts, and mends a fault in the
    /// mapping it owns (as a program that maps files itself would) with a zero page.
    extern "C" fn previous(_signal: libc::c_int, info: *mut libc::siginfo_t, _context: *mut libc::c_void) {
        PREVIOUS_CALLS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
        let address = unsafe { (*info).si_addr() } as usize;
        let (start, len) = (FOREIGN_START.load(Ordering::SeqCst), FOREIGN_LEN.load(Ordering::SeqCst));
        if address >= start && address < start + len {
            let page = super::PAGE.load(Ordering::Relaxed);
            // SAFETY: the page is inside the test's own read-only mapping, which outlives the read.
            unsafe {
                let flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED;
                libc::mmap((address / page * page) as *mut libc::c_void, page, libc::PROT_READ, flags, -1, 0);
            }
        }
    }

    /// A file of two pages of 0xAB, and the path of it.
    fn two_pages(dir: &std::path::Path, name: &str) -> (std::fs::File, std::path::PathBuf) {
        let path = dir.join(name);
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(&vec![0xAB; 2 << 16]).unwrap();
        (file, path)
    }

    #[test]
    fn a_sigbus_not_of_a_guarded_mapping_goes_to_the_handler_that_was_there_before() {
        let dir = std::env::temp_dir().join(format!("rtconv-sigbus-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // SAFETY: a zeroed sigaction with the SA_SIGINFO handler above and an empty mask is valid.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = previous as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut()), 0);
        }
        super::guard_shrinking_files().unwrap();
        assert!(super::is_on());

        // A mapping of the program's own, cut short: the fault is the program's handler's.
        let (foreign_file, path) = two_pages(&dir, "foreign");
        // SAFETY: read-only; the file is cut below, which is the point (its handler mends the fault).
        let foreign = unsafe { memmap2::Mmap::map(&std::fs::File::open(&path).unwrap()) }.unwrap();
        FOREIGN_START.store(foreign.as_ptr() as usize, Ordering::SeqCst);
        FOREIGN_LEN.store(foreign.len(), Ordering::SeqCst);
        foreign_file.set_len(0).unwrap();
        let byte = std::hint::black_box(&foreign[..])[1 << 16];
        assert_eq!((byte, PREVIOUS_CALLS.load(Ordering::SeqCst)), (0, 1), "the program's handler mended its own fault");

        // A SIGBUS sent with kill goes there too.
        // SAFETY: raise has no preconditions; the handler returns.
        unsafe { libc::raise(libc::SIGBUS) };
        assert_eq!(PREVIOUS_CALLS.load(Ordering::SeqCst), 2);

        // A guarded mapping cut short reads as zeros and says so; the program's handler is not called.
        let (guarded_file, path) = two_pages(&dir, "guarded");
        let bytes = super::super::map_file(&path, super::super::Pages::OnDemand).unwrap();
        assert!(!bytes.shrank());
        guarded_file.set_len(0).unwrap();
        assert_eq!(std::hint::black_box(&bytes[..])[(1 << 16) + 5], 0);
        assert!(bytes.shrank());
        assert_eq!(PREVIOUS_CALLS.load(Ordering::SeqCst), 2);
        drop((bytes, foreign));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
