//! Interrupt safety, on the host: a thread records nested spans in a tight
//! loop while a timer interrupts it with a signal every 20 µs — landing,
//! over thousands of signals, at every instruction of the recording path —
//! and the signal handler records a span of its own through
//! `ringtrace::interrupt`. Neither ring may lose or garble a record.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ringtrace::{RingConfig, Track};
use ringtrace_format::{Dump, Record, SectionData};

static HANDLER_TRACK: AtomicPtr<Track> = AtomicPtr::new(std::ptr::null_mut());
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_signal(_: libc::c_int) {
    // SAFETY: set before the handler is installed, to a registered 'static track.
    let Some(track) = (unsafe { HANDLER_TRACK.load(Ordering::Acquire).as_ref() }) else { return };
    let _context = ringtrace::interrupt(track);
    let _span = ringtrace::span!("in handler");
    HANDLED.fetch_add(1, Ordering::Relaxed);
}

/// Signals to aim for, and the fewest that still interrupt every point of the
/// recording path many times over (it is a few dozen instructions).
const SIGNALS: u64 = 20_000;
const ENOUGH_SIGNALS: u64 = 2_000;
/// Iterations that fit the ring (two records each): on a loaded machine
/// signals arrive slower, and the loop stops here rather than fill it.
const MAX_ITERATIONS: u64 = 1_500_000;

#[test]
fn a_signal_handler_recording_mid_span_corrupts_neither_ring() {
    ringtrace::set_default_ring(RingConfig { records: 1 << 22, mode: ringtrace::Mode::StopWhenFull });
    HANDLER_TRACK.store(ringtrace::context_track("signal handler") as *const Track as *mut Track, Ordering::Release);
    // SAFETY: the handler only switches this thread's track and records a span: no lock, no allocation.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()), 0);
    }
    let main = std::thread::Builder::new()
        .name("recorder".into())
        .spawn(|| {
            drop(ringtrace::span!("warm up")); // the ring exists before any signal
            // A timer that signals this thread every 20 µs: the signal lands
            // wherever the thread is, also right after it was scheduled back in.
            // SAFETY: plain calls with a zeroed, then filled, sigevent and itimerspec.
            let timer = unsafe {
                let mut event: libc::sigevent = std::mem::zeroed();
                event.sigev_notify = libc::SIGEV_THREAD_ID;
                event.sigev_signo = libc::SIGUSR1;
                event.sigev_notify_thread_id = libc::gettid();
                let mut timer: libc::timer_t = std::mem::zeroed();
                assert_eq!(libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer), 0);
                let every = libc::timespec { tv_sec: 0, tv_nsec: 20_000 };
                let spec = libc::itimerspec { it_interval: every, it_value: every };
                assert_eq!(libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()), 0);
                timer
            };
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut iterations = 0u64;
            while HANDLED.load(Ordering::Relaxed) < SIGNALS && iterations < MAX_ITERATIONS && Instant::now() < deadline
            {
                for _ in 0..64 {
                    let _outer = ringtrace::span!("outer");
                    let _inner = ringtrace::span!("inner");
                    iterations += 1;
                }
            }
            // SAFETY: deletes the timer made above, then blocks its signal on this thread (the
            // one it targets), so one still pending stays pending: none lands after the count.
            unsafe {
                libc::timer_delete(timer);
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                libc::sigaddset(&mut set, libc::SIGUSR1);
                assert_eq!(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()), 0);
            }
            let handled = HANDLED.load(Ordering::Relaxed);
            let mut out = Vec::new();
            ringtrace::dump_to_writer(&mut out).unwrap();
            (iterations, handled, out)
        })
        .unwrap();
    let (iterations, handled, dump) = main.join().unwrap();
    assert!(handled >= ENOUGH_SIGNALS, "only {handled} signals were handled");
    println!("{handled} signals handled during {iterations} iterations");

    let dump = Dump::parse(&dump).unwrap();
    let mut rings: Vec<(Vec<u8>, Vec<Record>, u64)> = Vec::new();
    for section in dump.sections() {
        if let SectionData::Ring(info, records, _) = section.unwrap().decode().unwrap() {
            rings.push((info.name.to_vec(), records.iter().collect(), info.dropped));
        }
    }
    let ring = |name: &str| rings.iter().find(|r| r.0 == name.as_bytes()).unwrap_or_else(|| panic!("no ring {name}"));

    // The recording thread: "warm up", then inner and outer per iteration, in that
    // order, inner inside outer, time never going back, nothing dropped.
    let (_, records, dropped) = ring("recorder");
    assert_eq!(*dropped, 0);
    assert_eq!(records.len() as u64, 1 + 2 * iterations, "a record was lost or added");
    let (inner_key, outer_key) = (records[1].key, records[2].key);
    assert_ne!(inner_key, outer_key);
    for (i, pair) in records[1..].chunks(2).enumerate() {
        let (inner, outer) = (pair[0], pair[1]);
        assert_eq!((inner.key, outer.key), (inner_key, outer_key), "iteration {i}: garbled keys");
        assert!(outer.enter <= inner.enter && inner.enter <= inner.exit && inner.exit <= outer.exit, "iteration {i}");
    }
    for w in records[1..].windows(2) {
        assert!(w[0].exit <= w[1].exit, "exits in order");
    }

    // The handler's track: exactly one span per handled signal, each well formed.
    let (_, records, dropped) = ring("signal handler");
    assert_eq!(*dropped, 0);
    assert_eq!(records.len() as u64, handled);
    let key = records[0].key;
    assert!(records.iter().all(|r| r.key == key && r.enter <= r.exit));
    assert!(key != inner_key && key != outer_key);
}
