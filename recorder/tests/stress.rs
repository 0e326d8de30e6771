//! Many threads start, record and exit while another thread keeps dumping.
//! Every dump must be valid and free of torn records, and every span must
//! be accounted for: each thread's spans appear, complete, in the dump that
//! first sees it exited (which then frees its ring), and nowhere after.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};

use ringtrace::{Mode, RingConfig};
use ringtrace_format::layout::RING_FLAG_THREAD_EXITED;
use ringtrace_format::{Dump, SectionData};

const WAVES: usize = 6;
const THREADS: usize = 4;
const SPANS: u64 = 3000;

/// Spans each thread records before it waits at the wave's barrier, mid-run.
const HALF: u64 = SPANS / 2;

#[derive(Default)]
struct Seen {
    /// Dumps in which the thread was still running.
    running: usize,
    /// Spans in the dump that saw it exited (there must be exactly one).
    exited: Vec<u64>,
}

fn check_dump(bytes: &[u8], seen: &mut HashMap<String, Seen>) {
    let dump = Dump::parse(bytes).expect("valid header");
    for section in dump.sections() {
        let section = section.expect("no damaged section");
        if let SectionData::Ring(info, records, _) = section.decode().expect("decodes") {
            let name = String::from_utf8_lossy(info.name).into_owned();
            if !name.starts_with("stress-") {
                continue;
            }
            let mut kept = 0;
            for r in records.iter() {
                assert!(r.exit >= r.enter, "torn or reversed record {r:?} on {name}");
                kept += 1;
            }
            // Rings are large enough never to overwrite: everything written
            // by the time the dump began copying is in it.
            assert_eq!(info.dropped, 0);
            assert_eq!(kept, info.written, "{name}");
            let entry = seen.entry(name).or_default();
            if info.flags & RING_FLAG_THREAD_EXITED != 0 {
                assert_eq!(info.written, SPANS);
                entry.exited.push(kept);
            } else {
                entry.running += 1;
            }
        }
    }
}

#[test]
fn threads_come_and_go_while_dumps_are_taken() {
    ringtrace::set_default_ring(RingConfig { records: 4096, mode: Mode::Overwrite });
    ringtrace::start(); // so dumps need not wait for the anchors to be 20 ms apart
    let done = Arc::new(AtomicBool::new(false));
    let dumper = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut dumps = Vec::new();
            while !done.load(Ordering::Acquire) {
                let mut bytes = Vec::new();
                ringtrace::dump_to_writer(&mut bytes).expect("dump");
                dumps.push(bytes);
            }
            dumps
        })
    };
    // Each wave's threads record half their spans and wait at a barrier; the
    // main thread dumps while they all wait (so every dump of a wave catches
    // its threads mid-run, however the machine schedules them), then lets
    // them finish. The dumper thread races all of this.
    let mut mid_run = Vec::new();
    for wave in 0..WAVES {
        let (halfway, resume) = (Arc::new(Barrier::new(THREADS + 1)), Arc::new(Barrier::new(THREADS + 1)));
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let (halfway, resume) = (halfway.clone(), resume.clone());
                std::thread::Builder::new()
                    .name(format!("stress-{wave}-{i}"))
                    .spawn(move || {
                        for n in 0..SPANS {
                            if n == HALF {
                                halfway.wait();
                                resume.wait();
                            }
                            let _span = ringtrace::span!("stress");
                        }
                    })
                    .unwrap()
            })
            .collect();
        halfway.wait();
        let mut bytes = Vec::new();
        ringtrace::dump_to_writer(&mut bytes).expect("dump");
        mid_run.push((wave, bytes));
        resume.wait();
        for t in threads {
            t.join().unwrap();
        }
    }
    done.store(true, Ordering::Release);
    let mut dumps = dumper.join().unwrap();
    // A last dump, after every thread has exited, collects what is left.
    let mut last = Vec::new();
    ringtrace::dump_to_writer(&mut last).unwrap();
    dumps.push(last);

    let mut seen = HashMap::new();
    for d in dumps.iter().chain(mid_run.iter().map(|(_, d)| d)) {
        check_dump(d, &mut seen);
    }
    assert_eq!(seen.len(), WAVES * THREADS, "every thread appears");
    for (name, s) in &seen {
        assert_eq!(s.exited, [SPANS], "{name}: complete exactly once, once exited ({} running sightings)", s.running);
    }
    // The dumps taken at the barrier saw each of their wave's threads running, with exactly half its spans.
    for (wave, bytes) in &mid_run {
        let mut halfway = Vec::new();
        for section in Dump::parse(bytes).unwrap().sections() {
            if let SectionData::Ring(info, _, _) = section.unwrap().decode().unwrap() {
                let name = String::from_utf8_lossy(info.name).into_owned();
                if name.starts_with(&format!("stress-{wave}-")) {
                    assert_eq!(info.flags & RING_FLAG_THREAD_EXITED, 0, "{name} waits at the barrier");
                    halfway.push((name, info.written));
                }
            }
        }
        halfway.sort();
        let want: Vec<_> = (0..THREADS).map(|i| (format!("stress-{wave}-{i}"), HALF)).collect();
        assert_eq!(halfway, want, "wave {wave}'s dump at the barrier");
    }
}
