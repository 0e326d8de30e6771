//! Dumps for tests and benchmarks, the one way every crate of the workspace
//! builds them (feature `test-util`): a [`DumpBuilder`] that writes the
//! sections every hand-built dump starts with, a site section written byte
//! by byte from `FORMAT.md` ([`site_section`]), and the seeded generator the
//! tests draw from ([`XorShift`]).
//!
//! ```
//! use ringtrace_format::test_util::DumpBuilder;
//! let (mut w, keys) = DumpBuilder::new("server").sites(0x1000, &[("parse", "a.rs", 3)]).start();
//! let ring = ringtrace_format::RingInfo { tid: 1, capacity: 4, written: 0, dropped: 0, aux: 0, flags: 0, name: b"t" };
//! w.ring(&ring, &[], &[]).unwrap();
//! let bytes = w.finish().unwrap().0;
//! assert_eq!(keys, [0x1000]);
//! assert!(ringtrace_format::Dump::parse(&bytes).is_ok());
//! ```

use std::string::String;
use std::vec::Vec;

use crate::{Anchor, ClockInfo, CounterKind, DumpReason, IoSink, MetaInfo, RateSource, Writer};

/// A nanosecond counter, exact: ticks are nanoseconds.
pub fn ns_clock() -> ClockInfo {
    ClockInfo {
        counter: CounterKind::MonotonicNs,
        counter_bits: 64,
        nominal_hz: 1_000_000_000,
        rate_source: RateSource::Exact,
    }
}

/// The start every hand-built dump shares: a meta section, a clock section
/// and a site section. Defaults: 8-byte pointers, pid 1, producer
/// `ringtrace-tests`, a nanosecond clock ([`ns_clock`]) with anchors at 0 and
/// 5 s, no sites.
pub struct DumpBuilder {
    process: String,
    pid: u32,
    producer: (&'static str, &'static str),
    pointer_width: u8,
    clock: ClockInfo,
    anchors: Vec<Anchor>,
    sites: Option<Sites>,
}

/// A site section made by [`site_section`]: its runtime address, bytes and keys.
struct Sites {
    base: u64,
    bytes: Vec<u8>,
    keys: Vec<u64>,
}

impl DumpBuilder {
    /// A dump of the process named `process`, with the defaults above.
    pub fn new(process: &str) -> Self {
        DumpBuilder {
            process: process.into(),
            pid: 1,
            producer: ("ringtrace-tests", "1"),
            pointer_width: 8,
            clock: ns_clock(),
            anchors: std::vec![
                Anchor { ticks: 0, mono_ns: 0, real_ns: 1_800_000_000_000_000_000 },
                Anchor { ticks: 5_000_000_000, mono_ns: 5_000_000_000, real_ns: 1_800_000_005_000_000_000 },
            ],
            sites: None,
        }
    }

    /// The process id.
    pub fn pid(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// The producer's name and version in the meta section.
    pub fn producer(mut self, name: &'static str, version: &'static str) -> Self {
        self.producer = (name, version);
        self
    }

    /// The target's pointer size in bytes (4 or 8).
    pub fn pointer_width(mut self, bytes: u8) -> Self {
        self.pointer_width = bytes;
        self
    }

    /// The clock section.
    pub fn clock(mut self, clock: ClockInfo, anchors: &[Anchor]) -> Self {
        self.clock = clock;
        self.anchors = anchors.to_vec();
        self
    }

    /// A nanosecond clock ([`ns_clock`]) anchored at 0 and at `dump_ns`, on
    /// every clock alike: a dump taken `dump_ns` after its counter started.
    pub fn dumped_at(self, dump_ns: u64) -> Self {
        let dump = Anchor { ticks: dump_ns, mono_ns: dump_ns, real_ns: dump_ns };
        self.clock(ns_clock(), &[Anchor::default(), dump])
    }

    /// A site section at runtime address `base` with one descriptor per (label, file, line).
    pub fn sites(mut self, base: u64, sites: &[(&str, &str, u32)]) -> Self {
        let (bytes, keys) = site_section(base, sites);
        self.sites = Some(Sites { base, bytes, keys });
        self
    }

    /// Writes meta, clock and sites; returns the writer, for the rest of the
    /// dump and its end marker, and each site's key in the order given.
    pub fn start(self) -> (Writer<IoSink<Vec<u8>>>, Vec<u64>) {
        let mut w = Writer::new(IoSink(Vec::new()), self.pointer_width).expect("a writer into memory");
        let meta = MetaInfo {
            pid: self.pid,
            reason: DumpReason::Requested,
            producer: self.producer.0.as_bytes(),
            producer_version: self.producer.1.as_bytes(),
            process_name: self.process.as_bytes(),
        };
        w.meta(&meta).expect("the meta section");
        w.clock(&self.clock, &self.anchors).expect("the clock section");
        match self.sites {
            Some(sites) => {
                w.sites(sites.base, &sites.bytes).expect("the site section");
                (w, sites.keys)
            }
            None => (w, Vec::new()),
        }
    }
}

/// A site section for synthetic dumps, written by hand from FORMAT.md
/// (little-endian: magic, line, label length, file length, column 0,
/// label, file, zero padding to 8) — not by this crate's encoder, which it
/// checks: one descriptor per (label, file, line), and each one's key when
/// the section starts at `base`.
pub fn site_section(base: u64, sites: &[(&str, &str, u32)]) -> (Vec<u8>, Vec<u64>) {
    let (mut bytes, mut keys) = (Vec::new(), Vec::new());
    for (label, file, line) in sites {
        keys.push(base + bytes.len() as u64);
        bytes.extend_from_slice(&0x5349_5445u32.to_le_bytes());
        bytes.extend_from_slice(&line.to_le_bytes());
        bytes.extend_from_slice(&(label.len() as u16).to_le_bytes());
        bytes.extend_from_slice(&(file.len() as u16).to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(label.as_bytes());
        bytes.extend_from_slice(file.as_bytes());
        bytes.resize(bytes.len().next_multiple_of(8), 0);
    }
    (bytes, keys)
}

/// A xorshift64 generator for seeded draws: the same sequence for the same
/// (non-zero) seed.
#[derive(Clone, Debug)]
pub struct XorShift(pub u64);

impl XorShift {
    /// The next draw.
    #[allow(clippy::should_implement_trait)] // a generator, not an iterator
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A draw below `m` (which must not be 0).
    pub fn below(&mut self, m: u64) -> u64 {
        self.next() % m
    }
}
