//! Narrow counters (32-bit compact records, 24-bit SysTick and the like)
//! unwrapped into 64-bit ticks.

use ringtrace_format::Record;
use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY};
use ringtrace_format::read::Records;

/// Unwrapping a counter of `bits` < 64 bits. Going back from the dump-time
/// anchor, each record's exit is placed before the next newer one by their
/// difference modulo 2^bits, and its enter before its exit likewise. This
/// assumes no two consecutive records (nor the newest and the dump) are a
/// whole wrap period or more apart — the recorder writes a wrap marker at
/// least once per period to keep it so — and that no span lasts a period.
/// Unwrapped ticks count from 2^62, so none goes below zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct CounterUnwrap {
    mask: u64,
    dump_narrow: u64,
    dump_wide: u64,
}

impl CounterUnwrap {
    /// For a counter of `bits` bits whose dump-time reading was `dump_ticks`.
    pub fn new(bits: u32, dump_ticks: u64) -> Self {
        let mask = if bits >= 64 { u64::MAX } else { (1u64 << bits.max(1)) - 1 };
        let dump_narrow = dump_ticks & mask;
        CounterUnwrap { mask, dump_narrow, dump_wide: (1u64 << 62) | dump_narrow }
    }

    /// The dump time, unwrapped.
    pub fn dump_ticks(&self) -> u64 {
        self.dump_wide
    }

    /// A reading `ticks` taken at most one period before the dump, unwrapped.
    pub fn before_dump(&self, ticks: u64) -> u64 {
        self.dump_wide.wrapping_sub(self.dump_narrow.wrapping_sub(ticks) & self.mask)
    }

    /// The ring's records with their ticks unwrapped (argument and flags records as they are).
    pub fn records(&self, records: &Records<'_>) -> Vec<Record> {
        let mut out = Vec::with_capacity(records.len()); // bounded by the file
        let (mut newer_wide, mut newer_narrow) = (self.dump_wide, self.dump_narrow);
        for r in records.iter().rev() {
            if r.key == ARG_KEY || r.key == FLAGS_KEY {
                out.push(r);
                continue;
            }
            let exit = newer_wide.wrapping_sub(newer_narrow.wrapping_sub(r.exit) & self.mask);
            let enter = exit.wrapping_sub(r.exit.wrapping_sub(r.enter) & self.mask);
            (newer_wide, newer_narrow) = (exit, r.exit & self.mask);
            out.push(Record { key: r.key, enter, exit });
        }
        out.reverse();
        out
    }
}
