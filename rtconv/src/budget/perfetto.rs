//! What Perfetto's protobuf takes as [`crate::render::perfetto`] writes it, and which spans to
//! leave out for a size.
//!
//! A span is a begin and an end packet, and a packet's time is a varint delta from the packet
//! before it on the thread's sequence, so what a packet takes depends on which spans before it
//! are kept. One walk over the spans, as the renderer writes them, sums what every packet takes
//! ([`Packets::new`]) and keeps the packets of the spans that may be left out — the
//! *candidates*, those shorter than a duration the caller names — in runs, each between the
//! packets around it. A size is then met by taking candidates out shortest first
//! ([`Packets::choose`]): each of a span's two packets goes, the packet after it counts its delta
//! from the one before it, and once no span of a key is left on a thread its interned name goes
//! too. After each duration's spans are out the size is known exactly, so the first that fits is
//! the threshold. The work is the walk and one step per span left out; the memory, the
//! candidates'. Where even every candidate out does not fit, the caller walks again with every
//! span a candidate ([`Over::Candidates`]).
//!
//! Exact, but where stated: a key's first span on a sequence carries its interned name (and
//! place) whatever span that is, its packet's length counted as if the time took ten bytes (one
//! byte high at most); and a thread whose spans come out of order (a damaged ring, its packets
//! then on BOOTTIME) counts each packet's time from there on at twelve bytes.

use super::{Choice, Profile, varint_len};
use crate::model::{Filtered, LostChildren, SpanNs, ThreadSpans, Timeline, inside};
use crate::render::perfetto::{self, SPAN_FRAMING, fields_len, packet_len};

/// No span, no packet.
const NONE: u32 = u32::MAX;

/// The time of a packet on BOOTTIME (its thread's packets came out of order), counted at its
/// longest; also the time of the packet after a thread's last (there is none).
const ABSOLUTE: u64 = u64::MAX;

/// What a time on BOOTTIME takes at its longest: a ten-byte varint, the clock's id, and a
/// length byte more.
const ABSOLUTE_TIME: u64 = 10 + 2 + 1;

/// A packet's `timestamp` field at its longest: its key and a ten-byte varint.
const LONGEST_TIME: usize = 1 + 10;

/// The debug annotations of a span's begin at their longest: five, each a field key and length,
/// a name iid field (2 bytes) and a value (an int: up to 11 bytes).
const LONGEST_ANNOTATIONS: usize = 5 * (2 + 2 + 11);

/// Candidates are put in duration order by counting, each duration up to this many ns past the
/// shortest in a slot of its own.
const DENSE: u64 = 1 << 16;

/// A candidate: its duration, its packets in `Packets::time`, and what they take beside their
/// times.
#[derive(Clone, Copy, Debug)]
struct Span {
    duration: u64,
    begin: u32,
    end: u32,
    bytes: u64,
}

/// A key's interned name on a thread whose spans are all candidates: its longest span there, and
/// what the name takes.
#[derive(Clone, Copy, Debug)]
struct Name {
    longest: u64,
    bytes: u64,
}

/// The Perfetto trace of a timeline as a budget sees it: its size, and the candidates' packets.
#[derive(Debug)]
pub struct Packets {
    /// Bytes written whatever the threshold: the process's and each thread's first packets.
    always: u64,
    /// The whole output's bytes (the budget's note aside): `always`, every packet, every name.
    whole: u64,
    /// Spans in the walk.
    spans: u64,
    /// The shortest span that is not a candidate, if any.
    beyond: Option<u64>,
    /// The longest span, if any.
    longest: Option<u64>,
    /// Runs of packets, in the order written: each a packet before a candidate's (or the clock's
    /// 0), candidates' packets, and the packet after them (ABSOLUTE: none). Each time is since
    /// the origin (ABSOLUTE: on BOOTTIME).
    time: Vec<u64>,
    candidates: Vec<Span>,
    names: Vec<Name>,
    profile: Profile,
}

/// Why [`Packets::choose`] found no threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// Not even an output without spans fits; it takes this many bytes.
    Least(u64),
    /// Every candidate left out still does not fit: the threshold lies among the longer spans.
    Candidates,
}

impl Packets {
    /// Walks `tl` as the renderer does, the spans shorter than `below` ns candidates (`u64::MAX`:
    /// every span; 0: none, for a size alone); `profile` (if it has slices) gets each span's bytes
    /// at its start. Also returns what `tl`'s filters kept and left out.
    pub fn new(tl: &Timeline<'_>, below: u64, profile: Profile) -> (Self, Filtered) {
        let mut list = List {
            below,
            time: Vec::new(),
            candidates: Vec::new(),
            names: Vec::new(),
            whole: 0,
            spans: 0,
            beyond: None,
            longest: None,
            profile,
        };
        let mut always = packet_len(perfetto::process_packet(tl, 0).len()) as u64;
        let placed = perfetto::placed(tl);
        let interned: Vec<(usize, bool)> = (0..tl.keys.len())
            .map(|k| {
                let (bytes, located) = perfetto::interned_data(tl, k, placed[k]);
                (bytes.len(), located)
            })
            .collect();
        let mut open = Vec::new();
        let mut longest: Vec<u64> = vec![UNSEEN; tl.keys.len()];
        let mut threads = tl.threads();
        while let Some(mut t) = threads.next() {
            let sequence = t.thread as u64 + 2;
            for packet in perfetto::thread_packets(tl, t.thread, sequence, sequence) {
                always += packet_len(packet.len()) as u64;
            }
            let keys: Vec<KeyBytes> = (0..tl.keys.len())
                .map(|k| {
                    let (bytes, located) = interned[k];
                    let begin = SPAN_FRAMING + fields_len(sequence, Some((k, located)));
                    // Its interned name, counted for the longest body its packet can have.
                    let body = LONGEST_TIME + begin + LONGEST_ANNOTATIONS + bytes;
                    KeyBytes { begin: begin as u64, name: (bytes + varint_len(body as u64) - 1) as u64 }
                })
                .collect();
            let thread = Thread {
                keys: &keys,
                end: (SPAN_FRAMING + fields_len(sequence, None)) as u64,
                lost: tl.lost_children(&tl.trace.threads[t.thread]),
                origin: tl.origin_ns,
            };
            longest.iter_mut().for_each(|l| *l = UNSEEN);
            if list.profile.width > 0 {
                list.thread::<true>(&mut t, &thread, &mut open, &mut longest);
            } else {
                list.thread::<false>(&mut t, &thread, &mut open, &mut longest);
            }
            // The names a cut can take away: those whose spans on the thread are all candidates.
            for (k, &l) in longest.iter().enumerate().filter(|&(_, &l)| l != UNSEEN) {
                list.longest = Some(list.longest.map_or(l, |m| m.max(l)));
                if l < below {
                    list.names.push(Name { longest: l, bytes: keys[k].name });
                }
            }
        }
        let List { time, candidates, names, whole, spans, beyond, longest, profile, .. } = list;
        let packets =
            Packets { always, whole: whole + always, spans, beyond, longest, time, candidates, names, profile };
        (packets, threads.anomalies().filtered)
    }

    /// Spans in the walk.
    pub fn spans(&self) -> u64 {
        self.spans
    }

    /// Where the bytes of the spans go in time, if the profile has slices.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The size with every span kept, `fixed` the bytes that depend on the cut (None: no cut).
    pub fn whole(&self, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> u64 {
        self.whole + fixed(None)
    }

    /// As [`Costs::choose`](super::Costs::choose): the smallest threshold at which the output
    /// takes at most `max_bytes`, `fixed(cut)` what its metadata takes with `cut`; or why there is
    /// none among the candidates.
    pub fn choose(&self, max_bytes: u64, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> Result<Choice, Over> {
        let whole = self.whole(&fixed);
        if whole <= max_bytes {
            return Ok(Choice { threshold_ns: None, left_out: 0, bytes: whole });
        }
        let least_fixed = fixed(Some((0, 0)));
        let order = self.shortest_first();
        let mut names = self.names.clone();
        names.sort_unstable_by_key(|n| n.longest);
        let mut names = names.iter().peekable();
        let mut list = Links::new(&self.time);
        let mut size = self.whole;
        let mut at = 0;
        while let Some(&first) = order.get(at) {
            let d = self.candidates[first as usize].duration;
            while let Some(&i) = order.get(at).filter(|&&i| self.candidates[i as usize].duration == d) {
                let s = &self.candidates[i as usize];
                size = size.saturating_sub(s.bytes + list.take_out(s.begin) + list.take_out(s.end));
                at += 1;
            }
            // Every span of d or less is out: so are the names no longer one carries.
            while let Some(n) = names.next_if(|n| n.longest <= d) {
                size = size.saturating_sub(n.bytes);
            }
            // Keep the next duration up, or past the longest.
            let threshold = match order.get(at) {
                Some(&i) => self.candidates[i as usize].duration,
                None => self.beyond.unwrap_or(d.saturating_add(1)),
            };
            if size + least_fixed > max_bytes {
                continue;
            }
            let bytes = size + fixed(Some((threshold, at as u64)));
            if bytes <= max_bytes {
                return Ok(Choice { threshold_ns: Some(threshold), left_out: at as u64, bytes });
            }
        }
        if self.beyond.is_some() {
            return Err(Over::Candidates);
        }
        let last = self.longest.map_or(0, |d| d.saturating_add(1));
        Err(Over::Least(self.always + fixed(Some((last, self.spans)))))
    }

    /// The candidates' indices, shortest first.
    fn shortest_first(&self) -> Vec<u32> {
        let Some(shortest) = self.candidates.iter().map(|s| s.duration).min() else { return Vec::new() };
        let slot = |d: u64| (d - shortest).min(DENSE) as usize;
        let mut starts = vec![0usize; DENSE as usize + 2];
        for s in &self.candidates {
            starts[slot(s.duration) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let dense_end = starts[DENSE as usize];
        let mut order = vec![0u32; self.candidates.len()];
        for (i, s) in self.candidates.iter().enumerate() {
            let slot = &mut starts[slot(s.duration)];
            order[*slot] = i as u32;
            *slot += 1;
        }
        // The longest, beyond the dense slots: in order of their own.
        order[dense_end..].sort_unstable_by_key(|&i| self.candidates[i as usize].duration);
        order
    }
}

/// A key not seen on the thread yet, in the walk's longest spans.
const UNSEEN: u64 = u64::MAX;

/// What a thread's packets take beside their times, for [`List::thread`].
struct Thread<'k, 't> {
    /// Per key index.
    keys: &'k [KeyBytes],
    /// An end packet's bytes.
    end: u64,
    lost: LostChildren<'t>,
    origin: i64,
}

/// What a key's spans take on a thread: a begin packet beside its time and annotations, and the
/// key's interned name.
#[derive(Clone, Copy)]
struct KeyBytes {
    begin: u64,
    name: u64,
}

/// A span entered and not yet ended, in the walk.
#[derive(Clone, Copy)]
struct Open {
    exit_ns: i64,
    enter_ns: i64,
    depth: u8,
    /// Its index in `List::candidates` (NONE: not a candidate).
    candidate: u32,
}

/// What the walk adds up and keeps.
struct List {
    below: u64,
    time: Vec<u64>,
    candidates: Vec<Span>,
    names: Vec<Name>,
    whole: u64,
    spans: u64,
    beyond: Option<u64>,
    longest: Option<u64>,
    profile: Profile,
}

impl List {
    /// Adds a thread's spans; `PROFILED`: each span's bytes in the profile too. `open` is room;
    /// `longest` (UNSEEN for every key) gets each key's longest span on the thread.
    fn thread<const PROFILED: bool>(
        &mut self,
        t: &mut ThreadSpans<'_, '_, '_>,
        thread: &Thread<'_, '_>,
        open: &mut Vec<Open>,
        longest: &mut [u64],
    ) {
        let below = self.below;
        let List { time, candidates, profile, spans, .. } = self;
        let mut beyond = u64::MAX;
        let mut sequence = Sequence { clock: 0, kept: false, bytes: 0 };
        let at = |ns: i64| ns.max(thread.origin).wrapping_sub(thread.origin) as u64;
        open.clear();
        while let Some(batch) = t.next_batch() {
            *spans += batch.len() as u64;
            for s in batch {
                while let Some(&top) = open.last() {
                    if inside(top.depth, top.exit_ns, s.depth_tag(), s.enter_ns) {
                        break;
                    }
                    open.pop();
                    sequence.end::<PROFILED>(&top, at(top.exit_ns), thread.end, time, candidates, profile);
                }
                let k = s.key_index as usize;
                let d = s.exit_ns.max(s.enter_ns).wrapping_sub(s.enter_ns) as u64;
                let mut begin = SPAN_FRAMING as u64;
                if let (Some(l), Some(key)) = (longest.get_mut(k), thread.keys.get(k)) {
                    begin = key.begin;
                    if *l == UNSEEN {
                        sequence.bytes += key.name;
                        *l = d;
                    } else {
                        *l = (*l).max(d);
                    }
                }
                if !s.plain() || thread.lost.of(s) {
                    begin += annotations(s, &thread.lost);
                }
                let (now, time_bytes) = tick(sequence.clock, at(s.enter_ns));
                sequence.bytes += begin + time_bytes;
                if PROFILED {
                    profile.at(s.enter_ns);
                    profile.add((begin + time_bytes) as i64);
                }
                let mut candidate = NONE;
                if d < below {
                    if !sequence.kept {
                        // The packet before a run.
                        time.push(sequence.clock);
                    }
                    candidate = candidates.len() as u32;
                    candidates.push(Span {
                        duration: d,
                        begin: time.len() as u32,
                        end: NONE,
                        bytes: begin + thread.end,
                    });
                    time.push(now);
                    sequence.kept = true;
                } else {
                    beyond = beyond.min(d);
                    if sequence.kept {
                        // The packet after a run.
                        time.push(now);
                        sequence.kept = false;
                    }
                }
                sequence.clock = now;
                open.push(Open { exit_ns: s.exit_ns, enter_ns: s.enter_ns, depth: s.depth_tag(), candidate });
            }
        }
        while let Some(top) = open.pop() {
            sequence.end::<PROFILED>(&top, at(top.exit_ns), thread.end, time, candidates, profile);
        }
        if sequence.kept {
            // No packet after the thread's last run.
            time.push(ABSOLUTE);
        }
        self.whole += sequence.bytes;
        if beyond != u64::MAX {
            self.beyond = Some(self.beyond.map_or(beyond, |b| b.min(beyond)));
        }
    }
}

/// A thread's sequence as the walk writes it: its clock (the last packet's time, ABSOLUTE once
/// one came out of order), whether that packet is the last in `time`, and the bytes so far.
struct Sequence {
    clock: u64,
    kept: bool,
    bytes: u64,
}

impl Sequence {
    /// The end packet, at `at` ns since the origin and `end` bytes beside its time, of `top`.
    #[inline(always)]
    fn end<const PROFILED: bool>(
        &mut self,
        top: &Open,
        at: u64,
        end: u64,
        time: &mut Vec<u64>,
        candidates: &mut [Span],
        profile: &mut Profile,
    ) {
        let (now, time_bytes) = tick(self.clock, at);
        self.bytes += end + time_bytes;
        if PROFILED {
            profile.at(top.enter_ns);
            profile.add((end + time_bytes) as i64);
        }
        if let Some(c) = candidates.get_mut(top.candidate as usize) {
            c.end = time.len() as u32;
            time.push(now);
            self.kept = true;
        } else if self.kept {
            // The packet after a run.
            time.push(now);
            self.kept = false;
        }
        self.clock = now;
    }
}

/// What the debug annotations of a begin packet of `s` take.
#[cold]
#[inline(never)]
fn annotations(s: &SpanNs, lost: &LostChildren<'_>) -> u64 {
    perfetto::annotations_len(s, perfetto::marks(s, lost)) as u64
}

/// A packet at `at` (ns since the origin) after one at `clock`: its time as kept (ABSOLUTE from
/// the first packet out of order on), and what its time takes.
#[inline(always)]
fn tick(clock: u64, at: u64) -> (u64, u64) {
    if at >= clock {
        (at, varint_len(at - clock) as u64)
    } else {
        // This packet, or one before it, on BOOTTIME (the sequence's clock stays behind): from
        // here on each packet's time at its longest (no time is at or after ABSOLUTE).
        (ABSOLUTE, ABSOLUTE_TIME)
    }
}

/// The packets kept, linked in order, as candidates are taken out.
struct Links<'p> {
    time: &'p [u64],
    prev: Vec<u32>,
    next: Vec<u32>,
}

impl<'p> Links<'p> {
    /// `time`'s runs, each linked in order. A candidate's packet is never first or last in
    /// its run, so the links never leave it.
    fn new(time: &'p [u64]) -> Self {
        let n = time.len() as u32;
        Links { time, prev: (0..n).map(|i| i.wrapping_sub(1)).collect(), next: (1..=n).collect() }
    }

    /// Takes a candidate's packet `b` out: the bytes its time took, less what the packet after
    /// it now takes more.
    #[inline(always)]
    fn take_out(&mut self, b: u32) -> u64 {
        let (a, c) = (self.prev[b as usize], self.next[b as usize]);
        let (ta, tb, tc) = (self.time[a as usize], self.time[b as usize], self.time[c as usize]);
        let mut spared = if tb == ABSOLUTE { ABSOLUTE_TIME } else { varint_len(tb - ta) as u64 };
        if tc != ABSOLUTE {
            // No less than 0: the longer delta takes at most the two it joins.
            spared = (spared + varint_len(tc - tb) as u64).saturating_sub(varint_len(tc - ta) as u64);
        }
        self.prev[c as usize] = a;
        self.next[a as usize] = c;
        spared
    }
}

/// What the budget's note takes for `tl` (cut as it will be written).
pub fn fixed(tl: &Timeline<'_>) -> u64 {
    perfetto::note_packet(tl, 0).map_or(0, |p| packet_len(p.len()) as u64)
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s Perfetto trace: its two
/// packets with one-byte times and no annotations, on the sequence with the shortest id.
pub fn least_span(tl: &Timeline<'_>) -> Vec<u64> {
    let placed = perfetto::placed(tl);
    // Sequence ids start at 2 (the first thread's). A begin names its place where its key's
    // interned data has one, as `costs` counts it.
    let end = SPAN_FRAMING + 2 + fields_len(2, None);
    let begin = |k: usize| {
        let (_, located) = perfetto::interned_data(tl, k, placed[k]);
        SPAN_FRAMING + 2 + fields_len(2, Some((k, located)))
    };
    (0..tl.keys.len()).map(|k| (begin(k) + end) as u64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Filter;
    use crate::model::test_dumps::{TestRing, nested, records, with_rings};

    /// The Perfetto trace of `tl` with the spans shorter than `threshold_ns` left out, as written.
    fn written(tl: &Timeline<'_>, threshold_ns: u64) -> usize {
        let filter = Filter { min_duration_ns: Some(threshold_ns), ..Filter::default() };
        let cut = Timeline::new(tl.trace, tl.names, tl.timebase).filtered(&filter);
        let mut out = Vec::new();
        perfetto::write(&cut, &mut out).unwrap();
        out.len()
    }

    #[test]
    fn taking_candidates_out_gives_the_sizes_the_renderer_writes() {
        // Two threads of random call trees, one with ties, their times stretched so that deltas
        // take one byte or two (and three, past 16 µs) as spans are left out.
        let rings: Vec<TestRing> = [(11, false, 40), (12, true, 300)]
            .into_iter()
            .map(|(seed, ties, stretch)| {
                let mut spans = records(&nested(seed, 6_000, ties));
                for r in &mut spans {
                    (r.enter, r.exit) = (r.enter * stretch, r.exit * stretch);
                }
                TestRing { written: spans.len() as u64, records: spans, dropped: 0, open: Vec::new() }
            })
            .collect();
        with_rings(&rings, 1 << 40, |tl| {
            let none = |_| 0;
            let every = Packets::new(tl, u64::MAX, Profile::default()).0;
            // A key's interned name may be counted a byte long per thread.
            let slack = 2 * tl.keys.len();
            let whole = every.whole(none) as usize;
            let all = written(tl, 0);
            assert!(whole >= all && whole - all <= slack, "the whole trace: {whole} bytes said, {all} written");
            for fraction in [0.9, 0.6, 0.3, 0.1, 0.02] {
                let max = (whole as f64 * fraction) as u64;
                let choice = every.choose(max, none).unwrap();
                let threshold = choice.threshold_ns.unwrap();
                let out = written(tl, threshold);
                let said = choice.bytes as usize;
                assert!(said >= out && said - out <= slack, "at {max}: {said} bytes said, {out} written");
                assert!(said as u64 <= max, "at {max}: {said} bytes");
                // The next shorter duration kept too would not fit.
                let shorter = every.candidates.iter().map(|s| s.duration).filter(|&d| d < threshold).max();
                if let Some(shorter) = shorter {
                    assert!(written(tl, shorter) + slack > max as usize, "at {max}: {shorter} ns fits too");
                }
                // Candidates up to the threshold or past it choose the same; fewer cannot.
                for below in [threshold + 1, threshold + 1000] {
                    let some = Packets::new(tl, below, Profile::default()).0;
                    assert!(some.candidates.len() < every.candidates.len(), "at {max}, below {below}");
                    assert_eq!(some.whole(none), every.whole(none));
                    assert_eq!(some.choose(max, none), Ok(choice), "at {max}, below {below}");
                }
                if let Some(shorter) = shorter {
                    let few = Packets::new(tl, shorter, Profile::default()).0;
                    assert_eq!(few.choose(max, none), Err(Over::Candidates), "at {max}, below {shorter}");
                }
            }
            // Nothing but the threads' own packets: no threshold fits.
            let least = every.always;
            assert_eq!(every.choose(least - 1, none), Err(Over::Least(least)));
        });
    }
}
