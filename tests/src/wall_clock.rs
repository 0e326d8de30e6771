//! Watching the host's wall clock step while a program runs.
//!
//! `qemu-aarch64` (user mode) derives the guest's `CNTVCT_EL0` from the host's
//! wall clock (`gettimeofday`, so `CLOCK_REALTIME`), not from its monotonic
//! clock. When the host steps its wall clock during a run (a time-sync agent's
//! correction: one failed CI run's dump holds anchors 145.36 ms apart on the
//! counter and the wall clock and 144.86 ms apart on the monotonic clock, a
//! step of exactly 0.5 ms), the guest's spans and the rate `rtconv` derives
//! from the anchors move with it. A test that times emulated spans against
//! the monotonic clock allows what [`WallClockWatch`] saw, and nothing more
//! when it saw nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A thread sampling `CLOCK_REALTIME − CLOCK_MONOTONIC` every millisecond
/// until [`stop`](Self::stop), adding up the steps it sees.
pub struct WallClockWatch {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<u64>,
}

/// The least change of the offset counted as a step, in ns: above a tight
/// sample's error (under 1 µs) and the emulated counter's 1 µs steps.
const STEP_NS: u64 = 5_000;

impl WallClockWatch {
    /// Starts watching.
    pub fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut last = offset();
            let mut steps = 0;
            while !flag.load(Ordering::Relaxed) {
                // A sampling period, not a wait for another thread: the loop ends on the flag.
                std::thread::sleep(Duration::from_millis(1));
                let Some(now) = offset() else { continue };
                if let Some(before) = last {
                    let moved = now.abs_diff(before);
                    if moved >= STEP_NS {
                        steps += moved;
                    }
                }
                last = Some(now);
            }
            steps
        });
        WallClockWatch { stop, thread }
    }

    /// Stops watching: the steps of the wall clock against the monotonic
    /// clock since [`start`](Self::start), added up as magnitudes, in ns.
    pub fn stop(self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("the wall-clock watch does not panic")
    }
}

fn read(clock: libc::clockid_t) -> i64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `t` is a valid, writable timespec; both clocks exist on Linux.
    unsafe { libc::clock_gettime(clock, &mut t) };
    t.tv_sec * 1_000_000_000 + t.tv_nsec
}

/// The wall clock minus the monotonic clock, from the tightest of 8
/// (monotonic, wall, monotonic) triples under 2 µs wide; `None` if the thread
/// was preempted in every one.
fn offset() -> Option<i64> {
    (0..8)
        .filter_map(|_| {
            let before = read(libc::CLOCK_MONOTONIC);
            let wall = read(libc::CLOCK_REALTIME);
            let after = read(libc::CLOCK_MONOTONIC);
            let width = after - before;
            (width < 2_000).then_some((width, wall - before - width / 2))
        })
        .min_by_key(|&(width, _)| width)
        .map(|(_, offset)| offset)
}
