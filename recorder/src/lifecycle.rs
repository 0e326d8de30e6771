//! When dumps happen besides explicit calls: at exit, on panic, on a signal.

use std::boxed::Box;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::vec::Vec;

use ringtrace_format::DumpReason;

use crate::dump::dump_to_file_for;

/// Dumps to its path when dropped: create it at the top of `main`.
///
/// ```no_run
/// let _dump = ringtrace::dump_on_exit("trace.rtd");
/// // ... the rest of main: the dump is written when `_dump` goes out of
/// // scope, also when main returns early.
/// ```
#[must_use = "the dump is written when this guard is dropped; bind it for the whole of main"]
#[derive(Debug)]
pub struct DumpOnExit {
    path: PathBuf,
}

/// A guard that dumps to `path` when dropped (errors go to stderr).
pub fn dump_on_exit(path: impl Into<PathBuf>) -> DumpOnExit {
    DumpOnExit { path: path.into() }
}

impl Drop for DumpOnExit {
    fn drop(&mut self) {
        if let Err(e) = dump_to_file_for(&self.path, DumpReason::Exit) {
            std::eprintln!("ringtrace: cannot write {}: {e}", self.path.display());
        }
    }
}

/// Installs a panic hook that dumps to `path` on the first panic, then runs
/// the hook that was installed before (normally the one printing the message).
pub fn dump_on_panic(path: impl Into<PathBuf>) {
    static DUMPED: AtomicBool = AtomicBool::new(false);
    let path = path.into();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !DUMPED.swap(true, Ordering::AcqRel)
            && let Err(e) = dump_to_file_for(&path, DumpReason::Panic)
        {
            std::eprintln!("ringtrace: cannot write {}: {e}", path.display());
        }
        previous(info);
    }));
}

/// The write end of the self-pipe the signal handler writes to; -1 until set up.
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);
/// Which path each signal dumps to.
static SIGNAL_PATHS: Mutex<Vec<(i32, PathBuf)>> = Mutex::new(Vec::new());

/// Dumps to `path` each time the process receives `signal` (e.g. `libc::SIGUSR1`).
///
/// Async-signal-safe by doing nothing in the handler but `write(2)` of one
/// byte to a pipe (and saving `errno` around it). A background thread named
/// `ringtrace-dump`, started by the first call, reads the pipe and writes
/// the dump in ordinary thread context, where taking locks and allocating
/// is allowed. The thread records no spans.
pub fn dump_on_signal(signal: i32, path: impl AsRef<Path>) -> io::Result<()> {
    static STARTED: OnceLock<io::Result<()>> = OnceLock::new();
    let started = STARTED.get_or_init(start_signal_thread);
    if let Err(e) = started {
        return Err(io::Error::new(e.kind(), std::format!("cannot start the dump thread: {e}")));
    }
    SIGNAL_PATHS.lock().unwrap_or_else(|p| p.into_inner()).push((signal, path.as_ref().into()));
    // SAFETY: `action` is fully initialised; `on_signal` is async-signal-safe (see above).
    unsafe {
        let mut action: libc::sigaction = core::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        if libc::sigaction(signal, &action, core::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: only async-signal-safe calls: errno access, write(2), atomics.
    unsafe {
        let errno = *libc::__errno_location();
        let byte = signal as u8;
        libc::write(SIGNAL_PIPE.load(Ordering::Relaxed), (&byte as *const u8).cast(), 1);
        *libc::__errno_location() = errno;
    }
}

fn start_signal_thread() -> io::Result<()> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, write_end] = fds;
    SIGNAL_PIPE.store(write_end, Ordering::Relaxed);
    std::thread::Builder::new().name("ringtrace-dump".into()).spawn(move || {
        let mut byte = 0u8;
        loop {
            // SAFETY: reads one byte into a valid local.
            let n = unsafe { libc::read(read_end, (&mut byte as *mut u8).cast(), 1) };
            if n != 1 {
                if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            let path = SIGNAL_PATHS
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .rev()
                .find(|(s, _)| *s as u8 == byte)
                .map(|(_, p)| p.clone());
            if let Some(path) = path
                && let Err(e) = dump_to_file_for(&path, DumpReason::Signal)
            {
                std::eprintln!("ringtrace: cannot write {}: {e}", path.display());
            }
        }
    })?;
    Ok(())
}
