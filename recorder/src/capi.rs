//! The C ABI (feature `c-api`), declared in `recorder/include/ringtrace.h`
//! and built as a static library by `recorder/capi`: spans keyed by code
//! address or by site descriptor, configuration and dumps. The
//! `-finstrument-functions` hooks are in [`hooks`](crate::hooks).

use core::ffi::{c_char, c_int, c_void};
use std::ffi::CStr;
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::clock::{Clock, DefaultClock};
use crate::ring::Mode;
use crate::sink;
use crate::track::Track;

pub use crate::hooks::{__cyg_profile_func_enter, __cyg_profile_func_exit, SHADOW_DEPTH};

/// Environment variable: where the hooks' dump at exit goes.
pub const DUMP_ENV: &str = "RINGTRACE_DUMP";

/// A span begun from C: pass it to [`ringtrace_exit`] on the same thread.
#[repr(C)]
#[derive(Debug)]
pub struct RingtraceSpan {
    track: *const Track,
    key: u64,
    enter: u64,
    token: u64,
}

/// Begins a span keyed by `key`: a code address (named from DWARF) or the
/// address of a site descriptor in the `ringtrace_sites` section.
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_enter(key: *const c_void) -> RingtraceSpan {
    let key = key as usize as u64;
    match sink::current() {
        Some(track) => {
            let enter = DefaultClock::enter_now();
            let token = track.begin(key, enter);
            RingtraceSpan { track, key, enter, token }
        }
        None => RingtraceSpan { track: core::ptr::null(), key, enter: 0, token: 0 },
    }
}

/// Ends a span begun by [`ringtrace_enter`] (a second call does nothing).
///
/// # Safety
///
/// `span` is null or points to a span begun on the calling thread.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ringtrace_exit(span: *mut RingtraceSpan) {
    let exit = DefaultClock::now();
    // SAFETY: the caller passes null or a valid, exclusive span.
    let Some(span) = (unsafe { span.as_mut() }) else { return };
    // SAFETY: a non-null track came from `sink::current()` on this thread,
    // whose track lives while the thread runs.
    if let Some(track) = unsafe { span.track.as_ref() } {
        track.end(span.token, span.key, span.enter, exit);
    }
    span.track = core::ptr::null();
}

/// Turns recording on (non-zero) or off for the whole process.
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_set_enabled(on: c_int) {
    crate::set_enabled(on != 0);
}

/// Sets the ring of threads that have not recorded yet: `records` (rounded
/// up to a power of two) and whether it stops when full instead of
/// overwriting. Environment variables still win (see the crate docs).
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_set_default_ring(records: usize, stop_when_full: c_int) {
    let mode = if stop_when_full != 0 { Mode::StopWhenFull } else { Mode::Overwrite };
    crate::set_default_ring(crate::RingConfig { records, mode });
}

/// Writes a dump of every thread to `path`. Returns 0, or -1 with a message on stderr.
///
/// # Safety
///
/// `path` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ringtrace_dump_to_path(path: *const c_char) -> c_int {
    if path.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
    report(crate::dump_to_file(&path).map(|_| ()), &std::format!("{}", path.display()))
}

/// Streams every thread's spans to the file at `path` until exit (see
/// [`stream_to`](crate::stream_to)): threads that record their first span
/// afterwards keep everything, with memory bounded per thread. Returns 0, or
/// -1 with a message on stderr.
///
/// # Safety
///
/// `path` is a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ringtrace_stream_to_path(path: *const c_char) -> c_int {
    if path.is_null() {
        return -1;
    }
    // SAFETY: the caller passes a NUL-terminated string.
    let path = PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
    let started = crate::stream::start(&path);
    if started.is_ok() {
        arrange_exit_dump(); // completes the stream at exit
    }
    report(started, &std::format!("{} (stream)", path.display()))
}

/// Writes a dump of every thread to the open file descriptor `fd` (left open).
/// Returns 0, or -1 with a message on stderr.
#[unsafe(no_mangle)]
pub extern "C" fn ringtrace_dump_to_fd(fd: c_int) -> c_int {
    if fd < 0 {
        std::eprintln!("ringtrace: cannot write a dump to descriptor {fd}: not a descriptor");
        return -1;
    }
    // SAFETY: `fd` is not negative and the caller owns it; ManuallyDrop keeps it open
    // afterwards (a closed descriptor fails the writes with EBADF, which is reported).
    let file = core::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(fd) });
    report(crate::dump_to_writer(std::io::BufWriter::new(&*file)).map(|_| ()), &std::format!("descriptor {fd}"))
}

fn report(result: std::io::Result<()>, target: &str) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => {
            std::eprintln!("ringtrace: cannot write a dump to {target}: {e}");
            -1
        }
    }
}

/// The path [`ringtrace_dump_at_exit`] chose.
static EXIT_PATH: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

/// Writes a dump when the program exits (returns from `main` or calls
/// `exit`): to `$RINGTRACE_DUMP` if set, else to `path`, else (`path` null)
/// to `ringtrace-PID.rtd`. The hooks arrange this themselves.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ringtrace_dump_at_exit(path: *const c_char) {
    if !path.is_null() {
        // SAFETY: the caller passes a NUL-terminated string.
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(unsafe { CStr::from_ptr(path) }.to_bytes()));
        *EXIT_PATH.lock().unwrap_or_else(|p| p.into_inner()) = Some(path);
    }
    arrange_exit_dump();
}

/// Registers the dump at exit once.
pub(crate) fn arrange_exit_dump() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        extern "C" fn dump_at_exit() {
            let chosen = EXIT_PATH.lock().map(|p| p.clone()).unwrap_or(None);
            let path = std::env::var_os(DUMP_ENV)
                .map(PathBuf::from)
                .or(chosen)
                .unwrap_or_else(|| std::format!("ringtrace-{}.rtd", std::process::id()).into());
            // A running stream is the dump: it is completed instead.
            if crate::stream::active() {
                if let Err(e) = crate::stream::finish() {
                    std::eprintln!("ringtrace: cannot complete the stream: {e}");
                }
                return;
            }
            if let Err(e) = crate::dump::dump_to_file_for(&path, ringtrace_format::DumpReason::Exit) {
                std::eprintln!("ringtrace: cannot write {}: {e}", path.display());
            }
        }
        // SAFETY: registers a plain extern "C" function with no arguments.
        unsafe { libc::atexit(dump_at_exit) };
    });
}
