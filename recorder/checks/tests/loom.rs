//! Model-checks the lock-free protocols with loom: every interleaving of a
//! writer and a concurrent reader (the open-stack model up to 3 preemptions).
//!
//! `RUSTFLAGS="--cfg loom" cargo test -p ringtrace-checks --test loom --release`
//! (run by .ci/run with its own target directory).
#![cfg(loom)]

use loom::thread;
use ringtrace::open::{OPEN_DEPTH, OpenStack};
use ringtrace::ring::{Mode, Ring, Slot};
use ringtrace_format::Record;
use ringtrace_format::layout::ARG_KEY;

fn leak_ring(capacity: usize, mode: Mode) -> &'static Ring {
    let slots: &'static [Slot] = Box::leak((0..capacity).map(|_| Slot::new()).collect());
    Box::leak(Box::new(Ring::with_mode(slots, mode)))
}

/// Span n: key n, enter 10n, exit 10n + 1; span 2 carries the argument 42.
fn write_spans(ring: &Ring, n: u64) {
    for i in 1..=n {
        if i == 2 {
            ring.push_with_arg(42, i, 10 * i, 10 * i + 1);
        } else {
            ring.push(i, 10 * i, 10 * i + 1);
        }
    }
}

fn check_snapshot(kept: &[Record], written: u64) {
    let mut last_span = 0;
    for (i, r) in kept.iter().enumerate() {
        if r.key == ARG_KEY {
            assert_eq!((r.enter, r.exit), (42, 0), "torn argument record");
            if let Some(next) = kept.get(i + 1) {
                assert_eq!(next.key, 2, "argument not followed by its span");
            }
            continue;
        }
        assert_eq!((r.enter, r.exit), (10 * r.key, 10 * r.key + 1), "torn record {r:?}");
        assert!(r.key > last_span, "out of order");
        if last_span != 0 {
            assert_eq!(r.key, last_span + 1, "gap");
        }
        last_span = r.key;
    }
    assert!(kept.len() as u64 <= written);
}

#[test]
fn ring_snapshot_races_an_overwriting_writer() {
    loom::model(|| {
        let ring = leak_ring(4, Mode::Overwrite);
        let writer = thread::spawn(move || write_spans(ring, 4)); // 5 records into 4 slots
        let mut out = [Record::default(); 4];
        let snap = ring.snapshot(&mut out, true);
        check_snapshot(&out[..snap.copied], snap.written);
        writer.join().unwrap();
        let snap = ring.snapshot(&mut out, false);
        assert_eq!((snap.written, snap.copied), (5, 4));
        check_snapshot(&out[..4], 5);
    });
}

#[test]
fn ring_snapshot_races_a_stopping_writer() {
    loom::model(|| {
        let ring = leak_ring(2, Mode::StopWhenFull);
        let writer = thread::spawn(move || {
            for i in 1..=3 {
                ring.push(i, 10 * i, 10 * i + 1);
            }
        });
        let mut out = [Record::default(); 2];
        let snap = ring.snapshot(&mut out, true);
        check_snapshot(&out[..snap.copied], snap.written);
        writer.join().unwrap();
        let snap = ring.snapshot(&mut out, true);
        assert_eq!((snap.written, snap.dropped, snap.copied), (2, 1, 2));
    });
}

#[test]
fn open_stack_snapshot_races_pushes_and_pops() {
    // Bounded at 3 preemptions: unbounded, the writer's steps against a
    // retrying reader over 129 atomics exhaust memory. Three preemptions
    // already found the bug this test was written for (a relaxed store of `state`).
    let mut model = loom::model::Builder::new();
    model.preemption_bound = Some(3);
    model.check(|| {
        let stack: &'static OpenStack = Box::leak(Box::new(OpenStack::new()));
        let writer = thread::spawn(move || {
            let outer = stack.push(1, 100);
            let inner = stack.push(2, 200);
            stack.pop(inner);
            let sibling = stack.push(3, 300);
            stack.pop(sibling);
            stack.pop(outer);
        });
        let mut out = [(0, 0); OPEN_DEPTH];
        if let Some(n) = stack.snapshot(&mut out) {
            // Whatever it saw is a state the stack really was in.
            let seen = &out[..n];
            let states: [&[(u64, u64)]; 4] = [&[], &[(1, 100)], &[(1, 100), (2, 200)], &[(1, 100), (3, 300)]];
            assert!(states.contains(&seen), "impossible open stack {seen:?}");
        }
        writer.join().unwrap();
        assert_eq!(stack.snapshot(&mut out), Some(0));
    });
}

/// A stream's consumer drains a stop-when-full ring while its writer laps
/// it: every record comes out once, whole and in order, or is counted as
/// dropped — the consumer never reads a slot the writer is reusing.
#[test]
fn ring_drain_races_its_writer() {
    loom::model(|| {
        let ring = leak_ring(2, Mode::StopWhenFull);
        let writer = thread::spawn(move || {
            for i in 1..=4u64 {
                ring.push(i, 10 * i, 10 * i + 1);
            }
        });
        let mut seen = Vec::new();
        let mut out = [Record::default(); 2];
        for _ in 0..2 {
            let d = ring.drain(&mut out);
            assert_eq!(d.first, seen.len() as u64, "a drain starts where the last one stopped");
            seen.extend_from_slice(&out[..d.copied]);
        }
        writer.join().unwrap();
        let d = ring.drain(&mut out);
        seen.extend_from_slice(&out[..d.copied]);
        for (i, r) in seen.iter().enumerate() {
            assert_eq!((r.enter, r.exit), (10 * r.key, 10 * r.key + 1), "torn record {r:?}");
            assert!(i == 0 || r.key > seen[i - 1].key, "out of order");
        }
        // Kept and dropped add up to every span.
        assert_eq!(seen.len() as u64 + ring.dropped(), 4);
    });
}
