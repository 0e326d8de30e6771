//! Many threads start, record and exit while another thread keeps dumping.
//! Every dump must be valid and free of torn records, and every span must
//! be accounted for: each thread's spans appear, complete, in the dump that
//! first sees it exited (which then frees its ring), and nowhere after.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ringtrace::{Mode, RingConfig};
use ringtrace_format::layout::RING_FLAG_THREAD_EXITED;
use ringtrace_format::{Dump, SectionData};

const WAVES: usize = 6;
const THREADS: usize = 4;
const SPANS: u64 = 3000;

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
    for wave in 0..WAVES {
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                std::thread::Builder::new()
                    .name(format!("stress-{wave}-{i}"))
                    .spawn(|| {
                        for n in 0..SPANS {
                            let _span = ringtrace::span!("stress");
                            // Pauses, so dumps catch the thread mid-run.
                            if n % 500 == 0 {
                                std::thread::sleep(std::time::Duration::from_millis(1));
                            }
                        }
                    })
                    .unwrap()
            })
            .collect();
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
    for d in &dumps {
        check_dump(d, &mut seen);
    }
    assert_eq!(seen.len(), WAVES * THREADS, "every thread appears");
    for (name, s) in &seen {
        assert_eq!(s.exited, [SPANS], "{name}: complete exactly once, once exited ({} running sightings)", s.running);
    }
    let running_sightings: usize = seen.values().map(|s| s.running).sum();
    assert!(running_sightings > WAVES, "dumps caught threads running only {running_sightings} times");
}
