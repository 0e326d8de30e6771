//! Spans for the model's unit tests: random call trees as a ring holds
//! them, written as real dumps (by the format crate's `test_util`, as every
//! test of the workspace writes them) and read back.

pub(crate) use ringtrace_format::test_util::XorShift;

use super::Names;
use super::timeline::{SpanNs, Timeline};

pub(super) fn span(enter_ns: i64, exit_ns: i64) -> SpanNs {
    SpanNs::new(enter_ns, exit_ns, 0, None, super::Ending::Returned)
}

/// A random call tree's spans in the order they ended, as a ring holds
/// them; `ties` lets spans start or end at the same ns.
pub(crate) fn nested(seed: u64, n: usize, ties: bool) -> Vec<SpanNs> {
    nested_tree(seed, n, ties).0
}

/// [`nested`], with each span's parent (an index into the spans).
pub(super) fn nested_tree(seed: u64, n: usize, ties: bool) -> (Vec<SpanNs>, Vec<Option<usize>>) {
    let mut rng = XorShift(seed | 1);
    let mut next = move |m: u64| rng.below(m);
    // Open spans: their start and the children they have so far.
    let (mut now, mut open, mut ended, mut parents) = (0i64, Vec::<(i64, Vec<usize>)>::new(), Vec::new(), Vec::new());
    while ended.len() < n {
        now += next(3) as i64 + i64::from(!ties);
        if open.is_empty() || (next(2) == 0 && open.len() < 40) {
            open.push((now, Vec::new()));
        } else {
            let (enter, children) = open.pop().unwrap();
            let index = ended.len();
            for child in children {
                parents[child] = Some(index);
            }
            ended.push(span(enter, now));
            parents.push(None);
            if let Some(parent) = open.last_mut() {
                parent.1.push(index);
            }
        }
    }
    (ended, parents)
}

/// `rings` (records with ticks = ns) written as a real dump, one thread
/// each, read back, and handed to `f` as a timeline.
pub(super) fn with_dump<T>(rings: &[Vec<ringtrace_format::Record>], f: impl FnOnce(&Timeline<'_>) -> T) -> T {
    let rings: Vec<TestRing> = rings
        .iter()
        .map(|r| TestRing { records: r.clone(), written: r.len() as u64, dropped: 0, open: Vec::new() })
        .collect();
    with_rings(&rings, 0, f)
}

/// A ring as [`with_rings`] writes it.
pub(crate) struct TestRing {
    /// What it kept (ticks = ns).
    pub records: Vec<ringtrace_format::Record>,
    /// Records ever written (more than kept: the rest were overwritten).
    pub written: u64,
    /// Spans dropped because it was full.
    pub dropped: u64,
    /// (key, enter) of the spans open at the dump, outermost first.
    pub open: Vec<(u64, u64)>,
}

/// A dump writer with its meta and clock sections written: a nanosecond
/// counter, anchored at 0 and at the dump, `dump_ticks`.
pub(super) fn writer(dump_ticks: u64) -> ringtrace_format::Writer<ringtrace_format::IoSink<Vec<u8>>> {
    ringtrace_format::test_util::DumpBuilder::new("t").dumped_at(dump_ticks).start().0
}

/// `rings` written as a real dump taken at `dump_ticks` (ns), one thread
/// each, read back, and handed to `f` as a timeline.
pub(crate) fn with_rings<T>(rings: &[TestRing], dump_ticks: u64, f: impl FnOnce(&Timeline<'_>) -> T) -> T {
    let bytes = dump_of(rings, dump_ticks);
    let trace = super::decode("t.rtd".as_ref(), &bytes).unwrap();
    let (timebase, _) = trace.timebase().unwrap();
    let names = Names::default();
    f(&Timeline::new(&trace, &names, timebase))
}

/// `rings` written as a real dump taken at `dump_ticks` (ns), one thread each: its bytes.
pub(crate) fn dump_of(rings: &[TestRing], dump_ticks: u64) -> Vec<u8> {
    use ringtrace_format::RingInfo;
    let mut w = writer(dump_ticks);
    for (i, r) in rings.iter().enumerate() {
        let info = RingInfo {
            tid: i as u64 + 1,
            capacity: r.records.len().next_power_of_two() as u64,
            written: r.written,
            dropped: r.dropped,
            aux: 0,
            flags: 0,
            name: b"t",
        };
        w.ring(&info, &r.records, &r.open).unwrap();
    }
    w.finish().unwrap().0
}

pub(crate) fn records(spans: &[SpanNs]) -> Vec<ringtrace_format::Record> {
    let record = |s: &SpanNs| ringtrace_format::Record {
        key: u64::from(s.key_index) + 1,
        enter: s.enter_ns as u64,
        exit: s.exit_ns as u64,
    };
    spans.iter().map(record).collect()
}

/// `spans` written as one ring of a real dump, read back, and decoded as renderers see it.
pub(super) fn decoded(spans: &[SpanNs]) -> Vec<SpanNs> {
    with_dump(&[records(spans)], |tl| {
        assert!(tl.trace.threads[0].nested);
        let mut threads = tl.threads();
        threads.next().unwrap().to_vec()
    })
}
