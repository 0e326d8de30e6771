//! Streaming capture: every thread's spans, the whole run, with memory
//! bounded per thread.
//!
//! Each thread records into a small stop-when-full ring, drained into the
//! dump file as ring chunks (FORMAT.md, "Stream chunks"): by the recording
//! thread itself when its ring is half full (the default: nothing is lost,
//! the thread pays for the write and waits for a slow disk), and by a writer
//! thread every millisecond
//! (all a thread gets with `RINGTRACE_STREAM_DRAIN=writer`: it never writes,
//! and loses what the writer cannot keep up with). Each drain is flushed to
//! the kernel; an anchor section follows at least every 20 ms while spans
//! arrive, and at every [`stream_sync`]. The file is a valid dump at
//! every section boundary, so a killed program leaves everything drained up
//! to its last round. A ring that fills before the writer drains it counts
//! the spans it could not take as dropped, exactly. Finishing the stream
//! (at exit, or by dropping the [`Stream`]) drains the rings a last time,
//! with their open spans, and writes the dump's tail.
//!
//! Started by [`stream_to`], `ringtrace_stream_to_path` (C), or the
//! environment variable [`STREAM_ENV`] at the process's first span. Threads
//! that recorded before it started keep their flight-recorder rings, written
//! whole at the end.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use std::vec::Vec;

use ringtrace_format::layout::RING_FLAG_THREAD_EXITED;
use ringtrace_format::{Anchor, DumpReason, Record, RingInfo, Unbalanced};

use crate::dump::{DumpWriter, SiteRange, io_error, write_head, write_ring, write_tail};
use crate::open::OPEN_DEPTH;
use crate::{os, thread};

/// Environment variable: stream every thread's spans to this file from the first span on.
pub const STREAM_ENV: &str = "RINGTRACE_STREAM";
/// Environment variable: `writer` leaves draining to the writer thread alone.
pub const STREAM_DRAIN_ENV: &str = "RINGTRACE_STREAM_DRAIN";

/// How often the writer drains the rings.
const ROUND: Duration = Duration::from_millis(1);
/// Anchors at least this often while spans arrive (the rate of a file cut
/// short comes from its first and last anchors).
const ANCHOR_EVERY_NS: u64 = 20_000_000;

/// Whether a stream runs: new threads then get stop-when-full rings that it drains.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether recording threads drain their own rings (see the module docs).
static OWN_DRAIN: AtomicBool = AtomicBool::new(true);
/// The running stream's writer thread, taken by whoever finishes it.
static RUNNING: Mutex<Option<Writer>> = Mutex::new(None);
/// The stream's file and what it needs: whoever drains holds it.
static DRAIN: Mutex<Option<Drain>> = Mutex::new(None);

/// Whether a stream is running.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Acquire)
}

/// The hook a streamed ring calls when half full, if recording threads drain their own.
pub(crate) fn own_drain() -> Option<fn(&crate::ring::Ring)> {
    OWN_DRAIN.load(Ordering::Relaxed).then_some(drain_own as fn(&crate::ring::Ring))
}

/// Drains the calling thread's ring into the file (its half-full hook).
fn drain_own(ring: &crate::ring::Ring) {
    let Some(t) = thread::current_thread_ring().filter(|t| core::ptr::eq(t.track.ring(), ring)) else { return };
    std::thread_local! {
        static DRAINING: core::cell::Cell<bool> = const { core::cell::Cell::new(false) };
    }
    // A signal handler's span that interrupted this thread's own drain must not wait for it:
    // the next span past half full tries again. Otherwise wait (for the writer thread's round).
    if DRAINING.with(|d| d.replace(true)) {
        return;
    }
    if let Some(d) = lock(&DRAIN).as_mut() {
        let result = d.chunk(t, false).and_then(|_| d.flush());
        if let Err(e) = result {
            d.error.get_or_insert(e);
        }
    }
    DRAINING.with(|d| d.set(false));
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A running stream; dropping it finishes the file (errors go to stderr).
#[must_use = "the stream's file is completed when this is dropped or finished"]
#[derive(Debug)]
pub struct Stream(());

impl Stream {
    /// Stops the writer, drains every ring a last time and completes the file.
    pub fn finish(self) -> io::Result<()> {
        core::mem::forget(self);
        finish()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let Err(e) = finish() {
            std::eprintln!("ringtrace: cannot complete the stream: {e}");
        }
    }
}

/// Streams every thread's spans to the file at `path` from now on (see the
/// module docs). Call it before the threads that should stream record their
/// first span. Fails if a stream already runs.
pub fn stream_to(path: impl AsRef<Path>) -> io::Result<Stream> {
    start(path.as_ref())?;
    Ok(Stream(()))
}

/// Drains every streamed ring into the file now and flushes it to the
/// kernel: everything recorded before the call survives the program being
/// killed after it. Does nothing without a running stream.
pub fn stream_sync() -> io::Result<()> {
    let running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    let Some(writer) = running.as_ref() else { return Ok(()) };
    let (lock, done) = (&writer.shared.stop, &writer.shared.synced);
    let mut state = lock.lock().unwrap_or_else(|p| p.into_inner());
    let wanted = state.sync_requests + 1;
    state.sync_requests = wanted;
    writer.shared.wake.notify_one();
    while state.syncs_done < wanted && !state.stop {
        state = done.wait(state).unwrap_or_else(|p| p.into_inner());
    }
    match state.sync_error.take() {
        Some(e) => Err(io::Error::other(e)),
        None => Ok(()),
    }
}

/// Starts streaming to `path`; the stream is finished by [`finish`].
pub(crate) fn start(path: &Path) -> io::Result<()> {
    let mut running = RUNNING.lock().unwrap_or_else(|p| p.into_inner());
    if running.is_some() {
        return Err(io::Error::other("a stream is already running"));
    }
    thread::start();
    let start = thread::start_anchor().unwrap_or_else(os::anchor);
    let file = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let (w, sites) = write_head(file, DumpReason::Stream, &[start])?;
    let shared =
        Arc::new(Shared { stop: Mutex::new(Control::default()), wake: Condvar::new(), synced: Condvar::new() });
    *lock(&DRAIN) = Some(Drain {
        w,
        sites,
        code_keys: BTreeSet::new(),
        buf: Vec::new(),
        last_anchor_ns: start.mono_ns,
        error: None,
    });
    let writer_only = std::env::var(STREAM_DRAIN_ENV).is_ok_and(|v| v.trim() == "writer");
    OWN_DRAIN.store(!writer_only, Ordering::Relaxed);
    ACTIVE.store(true, Ordering::Release);
    let thread_shared = Arc::clone(&shared);
    let handle = std::thread::Builder::new().name("ringtrace-stream".into()).spawn(move || {
        // The writer records nothing itself.
        thread::set_thread_enabled(false);
        run(&thread_shared)
    })?;
    *running = Some(Writer { shared, handle });
    Ok(())
}

/// Finishes the running stream, if one runs (see [`Stream::finish`]).
pub(crate) fn finish() -> io::Result<()> {
    let Some(writer) = RUNNING.lock().unwrap_or_else(|p| p.into_inner()).take() else { return Ok(()) };
    writer.shared.stop.lock().unwrap_or_else(|p| p.into_inner()).stop = true;
    writer.shared.wake.notify_one();
    writer.handle.join().map_err(|_| io::Error::other("the stream's writer panicked"))??;
    ACTIVE.store(false, Ordering::Release);
    let Some(state) = lock(&DRAIN).take() else { return Ok(()) };
    state.finish()
}

struct Writer {
    shared: Arc<Shared>,
    handle: JoinHandle<io::Result<()>>,
}

struct Shared {
    stop: Mutex<Control>,
    /// Wakes the writer early: to stop, or to sync.
    wake: Condvar,
    /// Tells [`stream_sync`] callers a round they asked for is done.
    synced: Condvar,
}

/// What the writer is asked to do, besides its rounds.
#[derive(Default)]
struct Control {
    stop: bool,
    sync_requests: u64,
    syncs_done: u64,
    sync_error: Option<std::string::String>,
}

/// The writer's side: the file and what the tail will need.
struct Drain {
    w: DumpWriter<BufWriter<File>>,
    sites: SiteRange,
    /// Every code-address key written, for the tail's `dladdr` names.
    code_keys: BTreeSet<u64>,
    buf: Vec<Record>,
    last_anchor_ns: u64,
    /// The first write that failed in a recording thread's drain, reported at the end.
    error: Option<io::Error>,
}

fn run(shared: &Shared) -> io::Result<()> {
    let mut busy = false;
    loop {
        let (stop, syncs, synced) = {
            let mut control = shared.stop.lock().unwrap_or_else(|p| p.into_inner());
            // A round that found a ring a quarter full or more goes again at once.
            if !busy {
                control = shared.wake.wait_timeout(control, ROUND).unwrap_or_else(|p| p.into_inner()).0;
            }
            (control.stop, control.sync_requests, control.syncs_done)
        };
        if stop {
            shared.synced.notify_all();
            return Ok(());
        }
        let result = match lock(&DRAIN).as_mut() {
            Some(state) => state.round(syncs > synced, false),
            None => Ok(false),
        };
        busy = matches!(result, Ok(true));
        let mut control = shared.stop.lock().unwrap_or_else(|p| p.into_inner());
        if control.syncs_done < syncs {
            control.syncs_done = syncs;
            control.sync_error = result.as_ref().err().map(|e| std::format!("{e}"));
            shared.synced.notify_all();
        }
        drop(control);
        result?;
    }
}

impl Drain {
    /// Writes a chunk for every streamed ring with new records (every one,
    /// with its open spans, when `last`); frees the rings of exited threads
    /// once drained; an anchor when one is due or `anchor` asks. Returns
    /// whether a ring was a quarter full or more.
    fn round(&mut self, anchor: bool, last: bool) -> io::Result<bool> {
        let (mut wrote, mut busy) = (false, false);
        let mut rings = thread::lock_registry();
        let mut drained_exited = Vec::new();
        for (i, t) in rings.iter().enumerate() {
            if !t.streamed {
                continue;
            }
            let Some((copied, exited)) = self.chunk(t, last)? else { continue };
            wrote = true;
            busy |= copied >= t.track.ring().capacity() / 4;
            // Exited before the drain began: nothing more can come.
            if exited {
                drained_exited.push(i);
            }
        }
        // An exited thread writes no more: its ring was drained whole just now.
        for i in drained_exited.into_iter().rev() {
            rings.swap_remove(i);
        }
        drop(rings);
        let now = os::anchor();
        if anchor || last || (wrote && now.mono_ns.saturating_sub(self.last_anchor_ns) >= ANCHOR_EVERY_NS) {
            self.anchor(now)?;
            wrote = true;
        }
        if wrote {
            self.flush()?;
        }
        Ok(busy)
    }

    /// Drains `t`'s ring into one chunk, with the spans open now: if it has
    /// new records, or the thread exited, or always (`last`). Returns the
    /// records written and whether the thread had exited before the drain
    /// (so the chunk is its last), or `None` if no chunk was written.
    fn chunk(&mut self, t: &thread::ThreadRing, last: bool) -> io::Result<Option<(usize, bool)>> {
        let mut open = [(0u64, 0u64); OPEN_DEPTH];
        let ring = t.track.ring();
        // Open spans first, then records: a span ending in between is in both, never in neither.
        let open_count = t.track.open().snapshot(&mut open).unwrap_or(0);
        let exited = t.exited.load(Ordering::Acquire);
        self.buf.resize(ring.capacity(), Record::default());
        let d = ring.drain(&mut self.buf);
        if d.copied == 0 && !last && !exited {
            return Ok(None);
        }
        // A streamed ring stops when full: its flags say so.
        let flags = ring.flags() | if exited { RING_FLAG_THREAD_EXITED } else { 0 };
        let records = &self.buf[..d.copied];
        let written = d.first + d.copied as u64;
        let info = RingInfo {
            tid: t.tid,
            capacity: ring.capacity() as u64,
            written,
            dropped: d.dropped,
            aux: d.aux.min(written),
            flags,
            name: t.name.as_bytes(),
        };
        self.w.ring_chunk(&info, t.id, d.first, records, &open[..open_count]).map_err(io_error)?;
        let sites = self.sites;
        let keys = records.iter().map(|r| r.key).chain(open[..open_count].iter().map(|o| o.0));
        self.code_keys.extend(keys.filter_map(|k| sites.code(k)));
        Ok(Some((d.copied, exited)))
    }

    fn anchor(&mut self, a: Anchor) -> io::Result<()> {
        self.last_anchor_ns = a.mono_ns;
        self.w.anchor(&a).map_err(io_error)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.sink_mut().0.flush()
    }

    /// The last round, the rings that were never streamed, and the tail.
    fn finish(mut self) -> io::Result<()> {
        let earlier = self.error.take();
        let calibration = thread::calibration();
        self.round(true, true)?;
        let mut unbalanced = Vec::new();
        let rings = thread::lock_registry();
        for t in rings.iter() {
            let (too_deep, abandoned) = t.track.unrecorded();
            if too_deep + abandoned > 0 {
                unbalanced.push(Unbalanced { tid: t.tid, too_deep, abandoned });
            }
            // A ring that recorded before the stream began: written whole.
            if !t.streamed {
                write_ring(&mut self.w, t, &mut self.buf, self.sites, &mut self.code_keys)?;
            }
        }
        drop(rings);
        let (out, _) = write_tail(self.w, &calibration, &unbalanced, self.code_keys)?;
        // Flushed to the kernel, as every dump: a killed program keeps it; a machine crash needs fsync.
        out.into_inner().map_err(|e| e.into_error())?;
        earlier.map_or(Ok(()), Err)
    }
}
