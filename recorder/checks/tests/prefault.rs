//! A thread's ring is written whole when it is made, so recording through it
//! takes no page fault (a lazily mapped ring took one every 170 records).
//! Only an optimized build can tell: there the allocator's zeroed memory is
//! mapped lazily. `.ci/run` runs this file with `--release` too
//! (`cargo test -p ringtrace-checks --test prefault --release`).

/// Minor page faults of the calling thread so far.
fn thread_faults() -> i64 {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_THREAD is the calling thread.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) }, 0);
    usage.ru_minflt
}

#[test]
fn the_first_lap_through_a_ring_takes_no_page_faults() {
    const RECORDS: usize = 1 << 18; // 6 MiB: 1,536 pages
    let faults = std::thread::spawn(|| {
        ringtrace::set_thread_ring(ringtrace::RingConfig { records: RECORDS, mode: ringtrace::Mode::Overwrite })
            .unwrap();
        drop(ringtrace::span!("first")); // makes the ring
        let before = thread_faults();
        for _ in 0..RECORDS {
            drop(ringtrace::span!("lap"));
        }
        thread_faults() - before
    })
    .join()
    .unwrap();
    // A handful at most (the stack, the allocator), not one per page of the ring.
    assert!(faults < 64, "{faults} page faults during the first lap");
}
