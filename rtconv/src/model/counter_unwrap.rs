//! Narrow counters (32-bit compact records, 24-bit SysTick and the like)
//! unwrapped into 64-bit ticks.

use ringtrace_format::Record;
use ringtrace_format::layout::{ARG_KEY, FLAGS_KEY};
use ringtrace_format::read::Records;

/// A reading at most 1/`AHEAD` of a counter period past the anchor was taken after the anchor.
pub(super) const AHEAD: u64 = 16;

/// Unwrapping a counter of `bits` < 64 bits. Going back from the dump-time
/// anchor, each record's exit is placed before the next newer one by their
/// difference modulo 2^bits, and its enter before its exit likewise. This
/// assumes no two consecutive records (nor the newest and the dump) are a
/// whole wrap period or more apart — the recorder writes a wrap marker at
/// least once per period to keep it so — and that no span lasts a period.
/// Unwrapped ticks count from 2^62, so none goes below zero.
///
/// A reading less than [`AHEAD`] of a period past the anchor was taken after
/// it — an interrupt that recorded between the anchor's reading and the
/// dump's copy of its ring — and is placed after it, not a period earlier
/// (which put a firmware's interrupt track 343 s, one 32-bit period at
/// 12.5 MHz, before its main track).
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

    /// A reading `ticks` taken at most one period before the dump (or just after it: see
    /// [`AHEAD`]), unwrapped.
    pub fn before_dump(&self, ticks: u64) -> u64 {
        match ticks.wrapping_sub(self.dump_narrow) & self.mask {
            ahead if ahead <= self.mask / AHEAD => self.dump_wide + ahead,
            _ => self.dump_wide.wrapping_sub(self.dump_narrow.wrapping_sub(ticks) & self.mask),
        }
    }

    /// The ring's records with their ticks unwrapped (argument and flags records as they are),
    /// and how many of them ended after the anchor (see [`AHEAD`]).
    pub fn records(&self, records: &Records<'_>) -> (Vec<Record>, u64) {
        let mut out = Vec::with_capacity(records.len()); // bounded by the file
        let mut newer: Option<(u64, u64)> = None;
        let mut after = 0;
        for r in records.iter().rev() {
            if r.key == ARG_KEY || r.key == FLAGS_KEY {
                out.push(r);
                continue;
            }
            let exit = match newer {
                Some((wide, narrow)) => wide.wrapping_sub(narrow.wrapping_sub(r.exit) & self.mask),
                // The newest record, against the anchor.
                None => self.before_dump(r.exit),
            };
            after += u64::from(exit > self.dump_wide);
            let enter = exit.wrapping_sub(r.exit.wrapping_sub(r.enter) & self.mask);
            newer = Some((exit, r.exit & self.mask));
            out.push(Record { key: r.key, enter, exit });
        }
        out.reverse();
        (out, after)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_format::layout::COMPACT_RECORD_SIZE;
    use ringtrace_format::{CompactRecord, Dump, IoSink, RingInfo, SectionData, Writer};

    /// Records of a 32-bit counter, their ring read back from a dump.
    fn unwrapped(records: &[Record], anchor: u64) -> (Vec<Record>, u64) {
        let mut w = Writer::new(IoSink(Vec::new()), 4).unwrap();
        let info =
            RingInfo { tid: 1, capacity: 64, written: records.len() as u64, dropped: 0, aux: 0, flags: 0, name: b"" };
        w.begin_ring_sized(&info, COMPACT_RECORD_SIZE, records.len() as u64, 0).unwrap();
        for r in records {
            w.compact_record(&CompactRecord { key: r.key as u32, enter: r.enter as u32, exit: r.exit as u32 }).unwrap();
        }
        w.end_section().unwrap();
        let bytes = w.finish().unwrap().0;
        let dump = Dump::parse(&bytes).unwrap();
        let ring = dump.sections().find_map(|s| match s.unwrap().decode().unwrap() {
            SectionData::Ring(_, records, _) => Some(records),
            _ => None,
        });
        CounterUnwrap::new(32, anchor).records(&ring.unwrap())
    }

    #[test]
    fn a_record_just_newer_than_the_anchor_is_placed_after_it_not_a_period_earlier() {
        let anchor = 1_000_000u64;
        let before = Record { key: 1, enter: anchor - 500, exit: anchor - 100 };
        // An interrupt recorded after the anchor was read: 50 ticks past it.
        let after = Record { key: 2, enter: anchor + 20, exit: anchor + 50 };
        let (got, count) = unwrapped(&[before, after], anchor);
        let wide = (1u64 << 62) | anchor;
        assert_eq!(count, 1);
        assert_eq!((got[0].enter, got[0].exit), (wide - 500, wide - 100));
        assert_eq!((got[1].enter, got[1].exit), (wide + 20, wide + 50));
        // Far past the anchor (more than 1/16 of a period): read as a period earlier, as before.
        let old = Record { key: 3, enter: anchor + (1 << 31), exit: anchor + (1 << 31) + 10 };
        let (got, count) = unwrapped(&[old], anchor);
        assert_eq!(count, 0);
        assert_eq!(got[0].exit, wide + (1 << 31) + 10 - (1 << 32));
    }
}
