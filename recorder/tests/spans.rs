//! A span longer than its ring's worth of inner spans is still recorded
//! whole; a manual span may end on another thread; an unbalanced manual span
//! is caught in debug builds.
//!
//! The tests share the process's registry and each dumps, and a dump frees
//! the rings of exited threads, so every thread here stays alive until its
//! test has dumped.

use std::sync::mpsc;

use ringtrace::{Mode, RingConfig};
use ringtrace_format::{Dump, Record, SectionData};

/// Runs `work` on a thread named `name`, dumps while the thread is still
/// alive, and returns that thread's records from the dump.
fn records_of_thread(name: &str, work: impl FnOnce() + Send + 'static) -> (u64, Vec<Record>) {
    let (done_tx, done_rx) = mpsc::channel();
    let (dumped_tx, dumped_rx) = mpsc::channel::<()>();
    let thread = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            work();
            done_tx.send(()).unwrap();
            dumped_rx.recv().unwrap();
        })
        .unwrap();
    done_rx.recv().unwrap();
    let mut bytes = Vec::new();
    ringtrace::dump_to_writer(&mut bytes).unwrap();
    dumped_tx.send(()).unwrap();
    thread.join().unwrap();
    let dump = Dump::parse(&bytes).unwrap();
    dump.sections()
        .filter_map(|s| match s.unwrap().decode().unwrap() {
            SectionData::Ring(info, records, _) if info.name == name.as_bytes() => {
                Some((info.written, records.iter().collect()))
            }
            _ => None,
        })
        .next()
        .unwrap_or((0, Vec::new()))
}

#[test]
fn a_span_outliving_its_ring_is_recorded_whole() {
    let (written, records) = records_of_thread("long", || {
        ringtrace::set_thread_ring(RingConfig { records: 16, mode: Mode::Overwrite }).unwrap();
        let _outer = ringtrace::span!("outer");
        for _ in 0..100 {
            let _inner = ringtrace::span!("inner");
        }
    });
    // 101 spans into 16 slots. The thread is alive at the dump, so the dump
    // keeps all but the two slots a live writer may be filling: the newest
    // 14, the outer span last, its record spanning every inner one.
    assert_eq!((written, records.len()), (101, 14));
    let (outer, inner) = records.split_last().unwrap();
    assert!(inner.iter().all(|i| outer.enter <= i.enter && i.exit <= outer.exit));
    assert!(inner.iter().all(|i| i.key == inner[0].key && i.key != outer.key));
}

#[test]
fn a_manual_span_can_end_on_another_thread_and_lands_there() {
    let token = ringtrace::enter!("handed over");
    let (_, records) = records_of_thread("finisher", move || ringtrace::exit(token));
    assert_eq!(records.len(), 1, "the ending thread's ring holds the span");
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "dropped without ringtrace::exit()")]
fn an_unbalanced_manual_span_panics_in_debug_builds() {
    let _forgotten = ringtrace::enter!("never exited");
}
