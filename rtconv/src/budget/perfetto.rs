//! What Perfetto's protobuf takes as [`crate::render::perfetto`] writes it, at many thresholds
//! at once, and which spans to leave out for a size.
//!
//! A span is a begin and an end packet, and a packet's time is a varint delta from the packet
//! before it on the thread's sequence, so what a packet takes depends on which spans before it
//! are kept. At a threshold T the packet before packet x is the last one before it whose span
//! lasts at least T, so x's time takes more than k bytes exactly when T is longer than every span
//! with a packet in the 2^(7k) ns before x: when T is past that window's longest span, M_k(x).
//! Each byte the output holds is so present for a range of thresholds — a span's packets and its
//! key's interned name up to its duration (or its key's longest on the thread), a packet's k-th
//! time byte from M_k(x) on — and one walk over the spans, as the renderer writes them, adds each
//! range's ends into an array of thresholds ([`Thresholds`]: a range of them, evenly spaced),
//! whose running sum is the output's size at each ([`Packets::new`]). The windows' longest spans
//! come from a stack of the packets no later packet outlasts (each pushed and popped once).
//!
//! [`Packets::choose`] takes the shortest threshold that fits, among the spans' durations as
//! `-t` reads them; where the array's thresholds are more than 1 ns apart there, or end before
//! one fits, it walks again over the range where the size meets the budget (from the next span's
//! duration past them). The first 32,768 thresholds are 1 ns apart, the rest as far apart as the
//! range needs. A floor's plan ([`super::Plan::above`]) starts with the range from the floor to
//! the ceiling its sample names, all 1 ns apart where that is 65,535 ns or less: one walk; above
//! a floor its spans' count proves, a walk sizing none first ([`Packets::shorter_left_out`]),
//! whose choice is every span walked where they fit; a plan without a floor, from 0 to the
//! longest span: one walk where the threshold is under 32,768 ns, else two.
//!
//! The walk keeps no span, only the array (65,537 slots) and the stack (at most a packet per
//! threshold: two spans left out at the same one are kept at the same ones, so the stack compares
//! the thresholds, not the durations): its memory does not grow with the trace.
//!
//! Exact, but where stated: a key's first span on a sequence carries its interned name (and
//! place) whatever span that is, its packet's length counted as if the time took ten bytes (one
//! byte high at most); and a thread whose spans come out of order (a damaged ring, its packets
//! then on BOOTTIME) counts each packet's time from there on at twelve bytes.

use super::{Choice, Profile, varint_len};
use crate::model::{Decoded, Filtered, LostChildren, SpanNs, ThreadSpans, Threads, Timeline, inside};
use crate::render::perfetto::{self, SPAN_FRAMING, fields_len, packet_len};

/// What a time on BOOTTIME takes at its longest: a ten-byte varint, the clock's id, and a
/// length byte more.
const ABSOLUTE_TIME: u64 = 10 + 2 + 1;

/// A packet's `timestamp` field at its longest: its key and a ten-byte varint.
const LONGEST_TIME: usize = 1 + 10;

/// The debug annotations of a span's begin at their longest: five, each a field key and length,
/// a name iid field (2 bytes) and a value (an int: up to 11 bytes).
const LONGEST_ANNOTATIONS: usize = 5 * (2 + 2 + 11);

/// Thresholds a walk sizes the output at.
const SLOTS: usize = 1 << 16;

/// The first of them, 1 ns apart whatever the range.
const FINE: usize = 1 << 15;

/// The thresholds a walk sizes the output at: `lo + i` ns for the first 32,768, then
/// `2^shift` ns apart, 65,536 in all (all 1 ns apart where `shift` is 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    lo: u64,
    shift: u32,
}

impl Thresholds {
    /// Thresholds from `lo`, as close together as reaches `hi`.
    pub fn covering(lo: u64, hi: u64) -> Self {
        let width = hi.saturating_sub(lo);
        let reach = |shift: u32| ((SLOTS - FINE - 1) as u64) << shift;
        let mut shift = 0;
        if width >= SLOTS as u64 {
            // 32,767 << 48 is within 2^49 of 2^64.
            while shift < 48 && (FINE as u64).saturating_add(reach(shift)) < width {
                shift += 1;
            }
        }
        Thresholds { lo, shift }
    }

    /// The `i`-th threshold.
    fn at(&self, i: usize) -> u64 {
        if i < FINE || self.shift == 0 {
            return self.lo.saturating_add(i as u64);
        }
        self.lo.saturating_add(FINE as u64).saturating_add(((i - FINE) as u64) << self.shift)
    }

    /// Whether the `i`-th threshold and the next are 1 ns apart (a span lasting it is left out
    /// at the next).
    fn fine(&self, i: usize) -> bool {
        i < FINE || self.shift == 0
    }

    /// Thresholds from 0 for `tl`: up to its longest span where its spans are in memory (a
    /// pass over them), else to 2^40 ns (18 minutes); past the first 32,768 ns, a walk again
    /// where the threshold lies between two.
    pub fn from_zero(tl: &Timeline<'_>) -> Self {
        let longest = tl
            .decoded
            .as_deref()
            .map_or(1 << 40, |decoded| decoded.spans().map(SpanNs::duration_ns).max().unwrap_or(0));
        Thresholds::covering(0, longest.saturating_add(1))
    }

    /// The first threshold past `ns`, at which a span lasting `ns` is left out (`SLOTS`: none).
    #[inline(always)]
    fn past(&self, ns: u64) -> usize {
        let over = match ns.checked_sub(self.lo) {
            None => return 0,
            Some(over) => over,
        };
        if over < FINE as u64 || self.shift == 0 {
            return over.saturating_add(1).min(SLOTS as u64) as usize;
        }
        (FINE as u64 + ((over - FINE as u64) >> self.shift) + 1).min(SLOTS as u64) as usize
    }
}

/// The Perfetto trace of a timeline as a budget sees it: its size with every span kept, and at
/// each of its thresholds.
#[derive(Debug)]
pub struct Packets {
    /// Bytes written whatever the threshold: the process's and each thread's first packets.
    always: u64,
    /// The whole output's bytes (the budget's note aside): `always`, every packet, every name.
    whole: u64,
    /// Set where the spans shorter than the first threshold (or than every span walked) are left
    /// out whatever the budget (they were not given to the walk: the first threshold, not none, is
    /// the cut where every span fits): where no threshold was sized, the thresholds to size at if
    /// not every span walked fits.
    then: Option<Thresholds>,
    /// Spans in the walk.
    spans: u64,
    /// The longest span, if any.
    longest: Option<u64>,
    /// The shortest span, if any.
    shortest: Option<u64>,
    /// The shortest span at least as long as the last threshold, if any.
    beyond: Option<u64>,
    /// The thresholds sized, if any.
    thresholds: Option<Thresholds>,
    /// Per threshold: what changes there from the one before ([`Slot`]). One more, past the
    /// last, for what nothing reads.
    slots: Vec<Slot>,
    profile: Profile,
}

impl Packets {
    /// Walks `tl` as the renderer does, sizing its output at `thresholds` (`None`: with every
    /// span alone); `profile` (if it has slices) gets each span's bytes at its start. Also
    /// returns what `tl`'s filters kept and left out.
    pub fn new(tl: &Timeline<'_>, thresholds: Option<Thresholds>, profile: Profile) -> (Self, Filtered) {
        Self::walk(tl, tl.threads(), thresholds, profile)
    }

    /// As [`new`](Self::new), walking `threads` (`tl`'s spans).
    pub(crate) fn walk(
        tl: &Timeline<'_>,
        mut threads: Threads<'_, '_>,
        thresholds: Option<Thresholds>,
        profile: Profile,
    ) -> (Self, Filtered) {
        let slots = thresholds.map_or(0, |_| SLOTS + 1);
        let mut walk = Walk {
            thresholds: thresholds.unwrap_or(Thresholds { lo: 0, shift: 0 }),
            slots: vec![Slot::default(); slots],
            whole: 0,
            spans: 0,
            longest: None,
            shortest: u64::MAX,
            beyond: u64::MAX,
            profile,
        };
        let mut always = packet_len(perfetto::process_packet(tl, 0).len()) as u64;
        let interned = interned(tl);
        let mut open = Vec::new();
        let mut stack = Vec::new();
        while let Some(mut t) = threads.next() {
            let sequence = t.thread as u64 + 2;
            for packet in perfetto::thread_packets(tl, t.thread, sequence, sequence) {
                always += packet_len(packet.len()) as u64;
            }
            let mut keys = key_bytes(&interned, sequence);
            let thread = Thread {
                end: end_bytes(sequence),
                lost: tl.lost_children(&tl.trace.threads[t.thread]),
                origin: tl.origin_ns,
            };
            match (walk.profile.width > 0, thresholds.is_some()) {
                (true, true) => walk.thread::<true, true>(&mut t, &thread, &mut open, &mut stack, &mut keys),
                (true, false) => walk.thread::<true, false>(&mut t, &thread, &mut open, &mut stack, &mut keys),
                (false, true) => walk.thread::<false, true>(&mut t, &thread, &mut open, &mut stack, &mut keys),
                (false, false) => walk.thread::<false, false>(&mut t, &thread, &mut open, &mut stack, &mut keys),
            }
            // A key's name goes with its longest span on the thread.
            for (key, longest) in keys.iter().filter_map(|key| Some((key, key.longest?))) {
                walk.whole += key.name;
                if slots > 0 {
                    walk.slots[walk.thresholds.past(longest)].fewer += key.name as i64;
                }
            }
        }
        let Walk { slots, whole, spans, longest, shortest, beyond, profile, .. } = walk;
        let whole = whole + always;
        let beyond = (beyond != u64::MAX).then_some(beyond);
        let shortest = longest.and(Some(shortest));
        let packets =
            Packets { always, whole, then: None, spans, longest, shortest, beyond, thresholds, slots, profile };
        (packets, threads.anomalies().filtered)
    }

    /// As it is, with the spans shorter than those it walked known to be left out (a proven
    /// floor's); where it sized no threshold, its choice is then every span it walked if they
    /// fit, else what a walk sizing `then` chooses.
    pub fn shorter_left_out(self, then: Thresholds) -> Self {
        Packets { then: Some(then), ..self }
    }

    /// Spans in the walk.
    pub fn spans(&self) -> u64 {
        self.spans
    }

    /// Whether the walk sized the output at thresholds.
    pub fn sized(&self) -> bool {
        self.thresholds.is_some()
    }

    /// Where the bytes of the spans go in time, if the profile has slices.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The size with every span kept, `fixed` the bytes that depend on the cut (None: no cut).
    pub fn whole(&self, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> u64 {
        self.whole + fixed(None)
    }

    /// As [`Costs::choose`](super::Costs::choose): the smallest threshold at which the output of
    /// `tl` (the timeline walked) takes at most `max_bytes`, `fixed(cut)` what its metadata takes
    /// with `cut`; `Err(bytes)`: not even an output without spans fits, it takes `bytes`. Walks
    /// `tl` again where the thresholds sized do not tell.
    pub fn choose(
        &self,
        tl: &Timeline<'_>,
        max_bytes: u64,
        fixed: impl Fn(Option<(u64, u64)>) -> u64,
    ) -> Result<Choice, u64> {
        let whole = self.whole(&fixed);
        if whole <= max_bytes && self.then.is_none() {
            return Ok(Choice { threshold_ns: None, left_out: 0, bytes: whole });
        }
        if let (None, Some(then)) = (self.thresholds, self.then) {
            // Every span walked kept: a threshold (as `-t` states it) at the shortest's duration.
            let bytes = self.whole + fixed(self.shortest.map(|shortest| (shortest, 0)));
            if bytes <= max_bytes {
                return Ok(Choice { threshold_ns: self.shortest, left_out: 0, bytes });
            }
            return Packets::new(tl, Some(then), Profile::default())
                .0
                .shorter_left_out(then)
                .choose(tl, max_bytes, fixed);
        }
        let past_longest = self.longest.map_or(0, |d| d.saturating_add(1));
        let least = || self.always + fixed(Some((past_longest, self.spans)));
        let mut again;
        let mut packets = self;
        loop {
            let Some(thresholds) = packets.thresholds else { return Err(least()) };
            let next = match packets.scan(max_bytes, &fixed) {
                Scan::Fits(choice) => return Ok(choice),
                // Fits from the i-th threshold on, and not at the one before.
                Scan::From(i) => {
                    let lo = if i == 0 { thresholds.lo } else { thresholds.at(i - 1).saturating_add(1) };
                    Thresholds::covering(lo, thresholds.at(i))
                }
                // Past them: from the next span's duration (none is shorter), or past the longest.
                Scan::Past => match packets.beyond {
                    Some(next) => Thresholds::covering(next, past_longest),
                    None => {
                        let bytes = least();
                        let choice = Choice { threshold_ns: Some(past_longest), left_out: self.spans, bytes };
                        return if bytes <= max_bytes { Ok(choice) } else { Err(bytes) };
                    }
                },
            };
            again = Packets::new(tl, Some(next), Profile::default()).0;
            packets = &again;
        }
    }

    /// Where within its thresholds the size meets `max_bytes`.
    fn scan(&self, max_bytes: u64, fixed: impl Fn(Option<(u64, u64)>) -> u64) -> Scan {
        let Some(thresholds) = self.thresholds else { return Scan::Past };
        // The metadata at its shortest: what a cut's numbers cannot go below.
        let least_fixed = fixed(Some((0, 0)));
        let past_longest = self.longest.map_or(0, |d| d.saturating_add(1));
        let (mut size, mut left_out) = (self.whole as i64, 0);
        // The last threshold is the next walk's first.
        for i in 0..SLOTS - 1 {
            size -= self.slots[i].fewer;
            left_out += self.slots[i].left_out;
            let bytes = size.max(0) as u64;
            if bytes.saturating_add(least_fixed) > max_bytes {
                continue;
            }
            if !thresholds.fine(i) {
                return Scan::From(i);
            }
            // A threshold as `-t` states it: a span's duration (the shortest kept), or past the
            // longest.
            let threshold = thresholds.at(i);
            if self.slots[i + 1].left_out == 0 && threshold != past_longest {
                continue;
            }
            let bytes = bytes + fixed(Some((threshold, left_out)));
            if bytes <= max_bytes {
                return Scan::Fits(Choice { threshold_ns: Some(threshold), left_out, bytes });
            }
        }
        Scan::Past
    }
}

/// Per key index: the bytes of its interned data, and whether it has a place.
fn interned(tl: &Timeline<'_>) -> Vec<(usize, bool)> {
    let placed = perfetto::placed(tl);
    (0..tl.keys.len())
        .map(|k| {
            let (bytes, located) = perfetto::interned_data(tl, k, placed[k]);
            (bytes.len(), located)
        })
        .collect()
}

/// Per key index, what its spans take on the thread of `sequence`.
fn key_bytes(interned: &[(usize, bool)], sequence: u64) -> Vec<KeyBytes> {
    (0..interned.len())
        .map(|k| {
            let (bytes, located) = interned[k];
            let begin = SPAN_FRAMING + fields_len(sequence, Some((k, located)));
            // Its interned name, counted for the longest body its packet can have.
            let body = LONGEST_TIME + begin + LONGEST_ANNOTATIONS + bytes;
            KeyBytes { begin: begin as u64, name: (bytes + varint_len(body as u64) - 1) as u64, longest: None }
        })
        .collect()
}

/// An end packet's bytes beside its time on the thread of `sequence`.
fn end_bytes(sequence: u64) -> u64 {
    (SPAN_FRAMING + fields_len(sequence, None)) as u64
}

/// Per key index, the fewest bytes a kept span of it takes on the thread of `sequence`: its two
/// packets with one-byte times and no annotations.
fn least_on(interned: &[(usize, bool)], sequence: u64) -> impl Iterator<Item = u64> {
    key_bytes(interned, sequence).into_iter().map(move |k| k.begin + end_bytes(sequence) + 2)
}

/// The fewest bytes a span kept in `tl`'s Perfetto trace takes on any of the threads `decoded`
/// holds ([`least_on`] each thread's sequence, of the key with the fewest).
pub(crate) fn fewest(tl: &Timeline<'_>, decoded: &Decoded) -> u64 {
    let interned = interned(tl);
    decoded.thread_indices().filter_map(|thread| least_on(&interned, thread as u64 + 2).min()).min().unwrap_or(0)
}

/// What [`Packets::scan`] found.
enum Scan {
    /// The threshold.
    Fits(Choice),
    /// The size fits at the i-th threshold and not before: the threshold lies between (the
    /// thresholds being more than 1 ns apart).
    From(usize),
    /// No threshold fits.
    Past,
}

/// What changes at a threshold from the one before it.
#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    /// The bytes the output takes less (at the first threshold: than with every span kept).
    fewer: i64,
    /// The spans left out.
    left_out: u64,
}

/// What a thread's packets take beside their times, for [`Walk::thread`].
struct Thread<'t> {
    /// An end packet's bytes.
    end: u64,
    lost: LostChildren<'t>,
    origin: i64,
}

/// What a key's spans take on a thread: a begin packet beside its time and annotations, and the
/// key's interned name; and, as the walk goes, its longest span there.
#[derive(Clone, Copy)]
struct KeyBytes {
    begin: u64,
    name: u64,
    /// The key's longest span on the thread so far.
    longest: Option<u64>,
}

/// A span entered and not yet ended, in the walk.
#[derive(Clone, Copy)]
struct Open {
    exit_ns: i64,
    /// Its start (for the profile).
    enter_ns: i64,
    /// What its begin packet takes at the last threshold it is kept at.
    begin_bytes: u64,
    /// The threshold it is left out from ([`Thresholds::past`]; `SLOTS`: kept at every one).
    leave: u32,
    depth: u8,
}

/// A packet no packet after it (so far) outlasts: its time, and the threshold its span is left
/// out from. Two spans left out at the same threshold are kept at the same ones, so which of
/// them lasts longer does not matter here: the walk compares these, not durations.
#[derive(Clone, Copy)]
struct Outlasting {
    at: u64,
    leave: u32,
}

/// Where the walk's stack starts: the clock's start, kept at every threshold.
const ORIGIN: Outlasting = Outlasting { at: 0, leave: SLOTS as u32 };

/// What the walk adds up.
struct Walk {
    thresholds: Thresholds,
    slots: Vec<Slot>,
    whole: u64,
    spans: u64,
    longest: Option<u64>,
    /// The shortest span (u64::MAX: none).
    shortest: u64,
    /// The shortest span at least as long as the last threshold (u64::MAX: none).
    beyond: u64,
    profile: Profile,
}

/// A thread's sequence as the walk writes it: the last packet's time, whether a packet came
/// out of order (from then on each counts its time on BOOTTIME), and the bytes so far.
struct Sequence {
    clock: u64,
    absolute: bool,
    bytes: u64,
}

impl Walk {
    /// Adds a thread's spans; `PROFILED`: each span's bytes in the profile too; `SIZED`: at the
    /// thresholds too. `open` and `stack` are room; `keys` (per key index, none seen yet) gets
    /// each key's longest span on the thread.
    fn thread<const PROFILED: bool, const SIZED: bool>(
        &mut self,
        t: &mut ThreadSpans<'_, '_, '_>,
        thread: &Thread<'_>,
        open: &mut Vec<Open>,
        stack: &mut Vec<Outlasting>,
        keys: &mut [KeyBytes],
    ) {
        let mut sequence = Sequence { clock: 0, absolute: false, bytes: 0 };
        let at = |ns: i64| ns.max(thread.origin).wrapping_sub(thread.origin) as u64;
        open.clear();
        stack.clear();
        stack.push(ORIGIN);
        let (mut longest_here, mut shortest_here) = (0, u64::MAX);
        while let Some(batch) = t.next_batch() {
            self.spans += batch.len() as u64;
            for s in batch {
                let d = s.duration_ns();
                // The shortest is read only where no threshold is sized.
                if !SIZED {
                    shortest_here = shortest_here.min(d);
                }
                while let Some(&top) = open.last() {
                    if inside(top.depth, top.exit_ns, s.depth_tag(), s.enter_ns) {
                        break;
                    }
                    open.pop();
                    self.end::<PROFILED, SIZED>(&mut sequence, stack, at(top.exit_ns), &top, thread.end);
                }
                let mut begin = SPAN_FRAMING as u64;
                match keys.get_mut(s.key_index as usize) {
                    Some(key) => {
                        begin = key.begin;
                        key.longest = Some(key.longest.map_or(d, |l| l.max(d)));
                    }
                    // A key the timeline does not have: its spans still count in the longest.
                    None => longest_here = longest_here.max(d),
                }
                if !thread.lost.plain_and_whole(s) {
                    begin += annotations(s, &thread.lost);
                }
                if PROFILED {
                    self.profile.at(s.enter_ns);
                }
                let mut leave = 0;
                if SIZED {
                    leave = self.thresholds.past(d) as u32;
                    if leave == SLOTS as u32 {
                        self.beyond = self.beyond.min(d);
                    }
                }
                let begin_bytes = self.packet::<PROFILED, SIZED>(&mut sequence, stack, at(s.enter_ns), leave, begin);
                open.push(Open { exit_ns: s.exit_ns, enter_ns: s.enter_ns, begin_bytes, leave, depth: s.depth_tag() });
            }
        }
        while let Some(top) = open.pop() {
            self.end::<PROFILED, SIZED>(&mut sequence, stack, at(top.exit_ns), &top, thread.end);
        }
        self.whole += sequence.bytes;
        if self.spans > 0 {
            let longest_key = keys.iter().filter_map(|key| key.longest).max().unwrap_or(0);
            longest_here = longest_here.max(longest_key);
            self.longest = Some(self.longest.map_or(longest_here, |l| l.max(longest_here)));
            self.shortest = self.shortest.min(shortest_here);
        }
    }

    /// The end packet of `span`, at `at` ns since the origin and `end` bytes beside its time:
    /// the span and its two packets are left out together at its threshold.
    #[inline(always)]
    fn end<const PROFILED: bool, const SIZED: bool>(
        &mut self,
        sequence: &mut Sequence,
        stack: &mut Vec<Outlasting>,
        at: u64,
        span: &Open,
        end: u64,
    ) {
        if PROFILED {
            self.profile.at(span.enter_ns);
        }
        let end_bytes = self.packet::<PROFILED, SIZED>(sequence, stack, at, span.leave, end);
        if SIZED {
            let slot = &mut self.slots[span.leave as usize];
            slot.fewer += (span.begin_bytes + end_bytes) as i64;
            slot.left_out += 1;
        }
    }

    /// A packet at `at` ns since the origin of a span left out from threshold `leave`, `beside`
    /// bytes beside its time: its bytes with every span kept added up; returns (`SIZED`) what
    /// it takes at the last threshold it is kept at.
    #[inline(always)]
    fn packet<const PROFILED: bool, const SIZED: bool>(
        &mut self,
        sequence: &mut Sequence,
        stack: &mut Vec<Outlasting>,
        at: u64,
        leave: u32,
        beside: u64,
    ) -> u64 {
        if sequence.absolute || at < sequence.clock {
            return self.absolute::<PROFILED>(sequence, beside);
        }
        let time = varint_len(at - sequence.clock) as u64;
        sequence.clock = at;
        sequence.bytes += beside + time;
        if PROFILED {
            self.profile.add((beside + time) as i64);
        }
        if !SIZED {
            return 0;
        }
        // The packet before this one is the stack's top. Where it outlasts this one, it is
        // kept with it: the time takes as much at every threshold this one is kept at.
        let here = Outlasting { at, leave };
        beside
            + match stack.last_mut() {
                Some(top) if top.leave > leave => {
                    stack.push(here);
                    time
                }
                Some(top) if top.leave == leave => {
                    *top = here;
                    time
                }
                _ => self.outlasted(stack, here, time),
            }
    }

    /// A packet on BOOTTIME (this one, or one before it, came out of order): from here on each
    /// packet's time at its longest.
    #[cold]
    #[inline(never)]
    fn absolute<const PROFILED: bool>(&mut self, sequence: &mut Sequence, beside: u64) -> u64 {
        sequence.absolute = true;
        sequence.bytes += beside + ABSOLUTE_TIME;
        if PROFILED {
            self.profile.add((beside + ABSOLUTE_TIME) as i64);
        }
        beside + ABSOLUTE_TIME
    }

    /// What the time of packet `here` takes at the last threshold it is kept at, where it
    /// outlasts the packet before it (whose time is `time` bytes from it); the bytes it gains
    /// at shorter thresholds are taken from the slots' `fewer`, and the packet is pushed on
    /// `stack`.
    ///
    /// Its time takes more than k bytes at T when no packet of the last 2^(7k) ns before it is
    /// kept at T: when T is past M_k, the longest span among them. Going down `stack` (newest
    /// first; their spans ever longer) over the packets this one outlasts — popped — the k-th
    /// window's longest is the last of them seen within it; once a packet outlasts this one,
    /// the windows it lies in gain no byte where this one is kept.
    #[inline(always)]
    fn outlasted(&mut self, stack: &mut Vec<Outlasting>, here: Outlasting, time: u64) -> u64 {
        // The top (the packet before) is outlasted: the stack's bottom, the origin, never is.
        let mut bytes = time;
        let mut kept = stack.len().saturating_sub(1);
        let mut within = stack.get(kept).map_or(0, |top| top.leave);
        while let Some(below) = kept.checked_sub(1) {
            let packet = stack[below];
            // No packet on the stack is later than this one.
            let reach = varint_len(here.at.wrapping_sub(packet.at)) as u64;
            if reach > bytes {
                self.slots[within as usize].fewer -= (reach - bytes) as i64;
                bytes = reach;
            }
            if packet.leave >= here.leave {
                break;
            }
            within = packet.leave;
            kept = below;
        }
        stack.truncate(kept);
        match stack.last_mut() {
            Some(top) if top.leave == here.leave => *top = here,
            _ => stack.push(here),
        }
        bytes
    }
}

/// What the debug annotations of a begin packet of `s` take.
#[cold]
#[inline(never)]
fn annotations(s: &SpanNs, lost: &LostChildren<'_>) -> u64 {
    perfetto::annotations_len(s, perfetto::marks(s, lost)) as u64
}

/// What the budget's note takes for `tl` (cut as it will be written).
pub fn fixed(tl: &Timeline<'_>) -> u64 {
    perfetto::note_packet(tl, 0).map_or(0, |p| packet_len(p.len()) as u64)
}

/// Per key index, the fewest bytes a kept span of it adds to `tl`'s Perfetto trace: its two
/// packets with one-byte times and no annotations, on the sequence with the shortest id (the
/// first thread's, 2).
pub fn least_span(tl: &Timeline<'_>) -> Vec<u64> {
    least_on(&interned(tl), 2).collect()
}

#[cfg(test)]
impl Packets {
    /// The size at threshold `ns`, if it is one of those sized.
    fn size_at(&self, ns: u64) -> Option<u64> {
        let thresholds = self.thresholds?;
        let i = (0..SLOTS).find(|&i| thresholds.at(i) == ns)?;
        Some((self.whole as i64 - self.slots[..=i].iter().map(|s| s.fewer).sum::<i64>()) as u64)
    }
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

    /// Every span's duration, shortest first, once each.
    fn durations(tl: &Timeline<'_>) -> Vec<u64> {
        let mut all = Vec::new();
        let mut threads = tl.threads();
        while let Some(mut t) = threads.next() {
            while let Some(batch) = t.next_batch() {
                all.extend(batch.iter().map(SpanNs::duration_ns));
            }
        }
        all.sort_unstable();
        all.dedup();
        all
    }

    /// Two threads of random call trees, one with ties, their times stretched so that deltas
    /// take one byte or two (and three, past 16 µs) as spans are left out.
    fn stretched() -> Vec<TestRing> {
        [(11, false, 40), (12, true, 300)]
            .into_iter()
            .map(|(seed, ties, stretch)| {
                let mut spans = records(&nested(seed, 6_000, ties));
                for r in &mut spans {
                    (r.enter, r.exit) = (r.enter * stretch, r.exit * stretch);
                }
                TestRing { written: spans.len() as u64, records: spans, dropped: 0, open: Vec::new() }
            })
            .collect()
    }

    #[test]
    fn above_a_proven_floor_every_span_is_the_choice_where_all_fit_else_the_sized_one() {
        with_rings(&stretched(), 1 << 40, |tl| {
            let none = |_| 0;
            let present = durations(tl);
            let then = Thresholds::covering(0, 1 << 20);
            let every = Packets::new(tl, None, Profile::default()).0.shorter_left_out(then);
            let sized = Packets::new(tl, Some(then), Profile::default()).0.shorter_left_out(then);
            let whole = every.whole(none);
            // Where every span fits, the threshold is the shortest's duration (as `-t` states the
            // cut that keeps them all); where not, the sized walk's choice.
            let all = every.choose(tl, whole, none).unwrap();
            assert_eq!((all.threshold_ns, all.left_out, all.bytes), (Some(present[0]), 0, whole));
            for fraction in [1.0, 0.999, 0.9, 0.3, 0.02] {
                let max = (whole as f64 * fraction) as u64;
                assert_eq!(every.choose(tl, max, none), sized.choose(tl, max, none), "at {max}");
            }
            let least = every.always;
            assert_eq!(every.choose(tl, least - 1, none), Err(least));
        });
    }

    #[test]
    fn the_sizes_at_every_threshold_are_what_the_renderer_writes() {
        with_rings(&stretched(), 1 << 40, |tl| {
            let none = |_| 0;
            // A key's interned name may be counted a byte long per thread.
            let slack = 2 * tl.keys.len();
            let present = durations(tl);
            assert!(*present.last().unwrap() > 1 << 16, "durations past the first walk's thresholds");
            let size_only = Packets::new(tl, None, Profile::default()).0;
            let whole = size_only.whole(none) as usize;
            let all = written(tl, 0);
            assert!(whole >= all && whole - all <= slack, "the whole trace: {whole} bytes said, {all} written");
            // Each span's fewest bytes are a floor under what the spans take, and take most of it.
            let least = least_span(tl);
            let (mut fewest, mut threads) = (0, tl.threads());
            while let Some(mut t) = threads.next() {
                while let Some(batch) = t.next_batch() {
                    fewest += batch.iter().map(|s| least[s.key_index as usize]).sum::<u64>() as usize;
                }
            }
            assert!(fewest <= all && fewest * 10 > all * 7, "{fewest} bytes at the fewest, {all} written");
            // Sized 1 ns apart from 0 and from a duration among the others: at each duration, and
            // between them, what `-t` there writes.
            for lo in [0, present[present.len() / 3]] {
                let sized = Packets::new(tl, Some(Thresholds::covering(lo, lo)), Profile::default()).0;
                assert_eq!(sized.whole(none), size_only.whole(none));
                let within: Vec<u64> = present.iter().copied().filter(|&d| d >= lo && d < lo + 65_535).collect();
                assert!(within.len() > 100, "{} durations from {lo}", within.len());
                for &ns in within.iter().step_by(within.len() / 50).chain([lo, lo + 1, lo + 65_534].iter()) {
                    let said = sized.size_at(ns).unwrap() as usize;
                    let out = written(tl, ns);
                    assert!(said >= out && said - out <= slack, "at {ns} ns: {said} bytes said, {out} written");
                }
            }
            let first = Packets::new(tl, Some(Thresholds::covering(0, 0)), Profile::default()).0;
            for fraction in [0.9, 0.6, 0.3, 0.1, 0.02] {
                let max = (whole as f64 * fraction) as u64;
                let choice = first.choose(tl, max, none).unwrap();
                let threshold = choice.threshold_ns.unwrap();
                assert!(present.binary_search(&threshold).is_ok(), "at {max}: {threshold} ns is a duration");
                let out = written(tl, threshold);
                let said = choice.bytes as usize;
                assert!(said >= out && said - out <= slack, "at {max}: {said} bytes said, {out} written");
                assert!(said as u64 <= max, "at {max}: {said} bytes");
                // The next shorter duration kept too would not fit.
                let shorter = present.iter().copied().filter(|&d| d < threshold).max();
                if let Some(shorter) = shorter {
                    assert!(written(tl, shorter) + slack > max as usize, "at {max}: {shorter} ns fits too");
                }
                // Thresholds far apart first, or starting past some of the spans, choose the same.
                for (lo, hi) in [(0, 1 << 20), (0, 1 << 40), (shorter.unwrap_or(0), threshold + 10)] {
                    let coarse = Packets::new(tl, Some(Thresholds::covering(lo, hi)), Profile::default()).0;
                    assert_eq!(coarse.choose(tl, max, none), Ok(choice), "at {max}, from {lo} to {hi}");
                }
            }
            // Metadata that grows steeply with the threshold's digits (a thousand bytes a digit):
            // the size alone, less a few bytes, no longer says where the threshold lies.
            let digits = |cut: Option<(u64, u64)>| cut.map_or(0, |(t, _)| 1000 * t.to_string().len() as u64);
            let left_out = |t: u64| -> u64 {
                let (mut n, mut threads) = (0, tl.threads());
                while let Some(mut th) = threads.next() {
                    while let Some(batch) = th.next_batch() {
                        n += batch.iter().filter(|s| s.duration_ns() < t).count() as u64;
                    }
                }
                n
            };
            for fraction in [0.5, 0.2, 0.05] {
                let max = (whole as f64 * fraction) as u64 + 4000;
                let choice = first.choose(tl, max, digits).unwrap();
                let threshold = choice.threshold_ns.unwrap();
                assert_eq!(choice.left_out, left_out(threshold), "at {max}");
                assert!(choice.bytes <= max, "at {max}: {choice:?}");
                assert!(written(tl, threshold) as u64 + digits(Some((threshold, 0))) <= max, "at {max}: {choice:?}");
                if let Some(shorter) = present.iter().copied().filter(|&d| d < threshold).max() {
                    let more = written(tl, shorter) as u64 + digits(Some((shorter, 0)));
                    assert!(more + slack as u64 > max, "at {max}: {shorter} ns fits too ({more} bytes)");
                }
                for (lo, hi) in [(0, 1 << 20), (0, 1 << 40), (threshold / 2, threshold / 2)] {
                    let other = Packets::new(tl, Some(Thresholds::covering(lo, hi)), Profile::default()).0;
                    assert_eq!(other.choose(tl, max, digits), Ok(choice), "at {max}, from {lo} to {hi}");
                }
            }
            // Nothing but the threads' own packets: no threshold fits.
            let least = first.always;
            assert_eq!(first.choose(tl, least - 1, none), Err(least));
            assert_eq!(first.choose(tl, least, none).map(|c| c.threshold_ns), Ok(Some(present.last().unwrap() + 1)));
        });
    }
}
