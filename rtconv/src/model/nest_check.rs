//! Whether a ring's spans, in the order they ended, nest: by their times
//! ([`NestingCheck`]), by the depths their keys state ([`DepthCheck`]), and
//! both at once without a stack where every span states its depth
//! ([`DepthRuns`], which passes only rings the other two pass).

/// Checks, span by span in the order they ended, that spans nest: each span
/// contains every earlier span that started within it, and the one before
/// those ended before it started. Holds the start of each span not yet
/// inside another.
#[derive(Default)]
pub(super) struct NestingCheck {
    roots: Vec<(u64, u64)>,
    pub broken: bool,
}

impl NestingCheck {
    #[inline(always)] // once per record
    pub fn add(&mut self, enter: u64, exit: u64) {
        if self.broken {
            return;
        }
        let exit = exit.max(enter); // a counter that went backwards: zero length
        // The spans waiting that started within this one are its children: the
        // first of them (the last to end) must end within it too.
        let mut fits = true;
        if let Some(&(e, x)) = self.roots.last()
            && e >= enter
        {
            fits = x <= exit;
            self.roots.pop();
            while self.roots.last().is_some_and(|&(e, _)| e >= enter) {
                self.roots.pop();
            }
        }
        // And the span before them ended before this one started.
        if fits && self.roots.last().is_none_or(|&(_, x)| x <= enter) {
            self.roots.push((enter, exit));
        } else {
            self.broken = true;
            self.roots = Vec::new();
        }
    }
}

/// Checks, span by span in the order they ended, that the depths their keys
/// carry fit that order: the spans still waiting for a parent that are deeper
/// than a new span are its children, one level deeper. Spans without a
/// stated depth are not checked.
#[derive(Default)]
pub(super) struct DepthCheck {
    waiting: Vec<u8>,
    pub broken: bool,
}

impl DepthCheck {
    #[inline]
    pub fn add(&mut self, tag: u8) {
        self.add_checked(tag, true);
    }

    /// An open span, innermost first: its children may be a level or more
    /// deeper, since a dump shows only the outermost 64 open spans.
    pub fn add_open(&mut self, tag: u8) {
        self.add_checked(tag, false);
    }

    #[inline(always)] // once per record
    fn add_checked(&mut self, tag: u8, one_level: bool) {
        if tag == 0 || self.broken {
            return;
        }
        // The deeper spans waiting are this one's children: one level deeper.
        while let Some(&w) = self.waiting.last()
            && w > tag
        {
            if one_level && w != tag + 1 {
                self.broken = true;
                self.waiting = Vec::new();
                return;
            }
            self.waiting.pop();
        }
        self.waiting.push(tag);
    }
}

/// The spans at one depth that ended since the span around them last ended
/// (siblings, or the first spans of a ring that lost their parents).
#[derive(Clone, Copy)]
struct Run {
    /// The first one's start (`u64::MAX` while there is none).
    first: u64,
    /// Where the first one's subtree began: the end of the span that ended
    /// just before it. The span around them must start no earlier.
    floor: u64,
}

const NO_RUN: Run = Run { first: u64::MAX, floor: 0 };

/// Checks a ring whose every span states its depth (depth tag, depth + 1)
/// in one step per span and a fixed 4 KiB, where [`NestingCheck`] and
/// [`DepthCheck`] hold a stack of every span still waiting for its parent
/// (an interpreter's main loop gathers hundreds of thousands). In end
/// order, the span after one at depth `d` is at depth `d - 1` (its parent),
/// or at `d` or deeper (a later subtree's first span, which starts after
/// it ended); a parent starts before its children's first and after the
/// span that ended before its subtree began, and ends after its last.
///
/// Every ring it passes (`!failed`) passes [`NestingCheck`] and
/// [`DepthCheck`] — the runs' spans are exactly the ones those hold, all
/// disjoint and in order — so where it fails, or a span states no depth
/// (255 levels and deeper), the caller asks those two, which decide.
pub(super) struct DepthRuns {
    /// By depth tag: the spans of that depth still waiting for their parent.
    /// Those deeper than the last span's are none.
    runs: [Run; 256],
    /// The last span's depth tag (0 before the first) and end.
    level: u8,
    last_exit: u64,
    /// A span that did not fit, or did not state its depth.
    pub failed: bool,
}

impl Default for DepthRuns {
    fn default() -> Self {
        DepthRuns { runs: [NO_RUN; 256], level: 0, last_exit: 0, failed: false }
    }
}

impl DepthRuns {
    /// The next span in end order. Its place in the tree (a parent or a
    /// leaf, in no order a CPU predicts) is used as a value, not branched on.
    #[inline(always)] // once per record
    pub fn add(&mut self, tag: u8, enter: u64, exit: u64) {
        let exit = exit.max(enter); // a counter that went backwards: zero length
        let (level, last_exit) = (self.level, self.last_exit);
        let closing = tag < level;
        // A parent takes the run one level deeper as its children.
        let children = self.runs[usize::from(level)];
        self.runs[usize::from(level)] = if closing { NO_RUN } else { children };
        let parent_fits = tag.wrapping_add(1) == level && enter <= children.first && enter >= children.floor;
        // A leaf, a sibling or a later subtree's first span: starts after the last span ended.
        let ok = tag != 0 && exit >= last_exit && if closing { parent_fits } else { enter >= last_exit };
        let run = &mut self.runs[usize::from(tag)];
        if run.first == u64::MAX {
            run.floor = if closing { children.floor } else { last_exit };
        }
        run.first = run.first.min(enter);
        (self.level, self.last_exit) = (tag, exit);
        self.failed |= !ok;
    }

    /// An open span, after every record, innermost first: its children may
    /// be several levels deeper (a dump shows only the outermost 64 open
    /// spans), so it takes every run deeper than itself.
    pub fn add_open(&mut self, tag: u8, enter: u64, exit: u64) {
        let exit = exit.max(enter);
        let (level, last_exit) = (self.level, self.last_exit);
        let mut ok = tag != 0 && exit >= last_exit;
        let mut floor = last_exit;
        if tag < level {
            // It starts before every span it takes, and after the span that ended before the
            // shallowest of them began (the deeper ones' floors are inside it).
            for run in self.runs[usize::from(tag) + 1..=usize::from(level)].iter_mut().rev() {
                let children = std::mem::replace(run, NO_RUN);
                if children.first != u64::MAX {
                    ok &= enter <= children.first;
                    floor = children.floor;
                }
            }
            ok &= enter >= floor;
        } else {
            ok &= enter >= last_exit;
        }
        // As `add` ends (written out there: through a shared helper, `add`
        // compiled to more instructions a record; docs/PERFORMANCE.md).
        let run = &mut self.runs[usize::from(tag)];
        if run.first == u64::MAX {
            run.floor = floor;
        }
        run.first = run.first.min(enter);
        (self.level, self.last_exit) = (tag, exit);
        self.failed |= !ok;
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_dumps::XorShift;
    use super::*;

    /// Tags (depth + 1) in the order spans ended, then the open spans' tags innermost first.
    fn broken(finished: &[u8], open: &[u8]) -> bool {
        let mut check = DepthCheck::default();
        finished.iter().for_each(|&t| check.add(t));
        open.iter().for_each(|&t| check.add_open(t));
        check.broken
    }

    #[test]
    fn depths_must_fit_the_order_spans_ended_in() {
        // c (2) inside b (1)... : c, c, b, d (2), a (1) inside root (0, open).
        assert!(!broken(&[3, 3, 2, 3, 2], &[1]));
        // A ring that kept only the end of a run: leaves whose parents ended later.
        assert!(!broken(&[4, 3, 2], &[1]));
        // A span two levels below the next one to end, with no span in between: not a call tree.
        assert!(broken(&[3, 1], &[]));
        // Spans without a stated depth are not checked.
        assert!(!broken(&[0, 3, 0, 2], &[]));
        // Open spans past the 64 a dump shows leave a gap above the deepest shown: allowed there.
        assert!(!broken(&[70, 70], &[64, 63]));
    }

    /// (tag, enter, exit) of a ring's spans in end order, and of its open spans innermost first.
    type Spans = Vec<(u8, u64, u64)>;

    /// A random call tree as a ring keeps it: spans in end order with depth
    /// tags, ties in time, the first spans' parents lost, the outermost
    /// `open_levels` still open at the dump (ending at `dump`).
    fn ring(rng: &mut XorShift, n: usize, open_levels: usize) -> (Spans, Spans, u64) {
        let (mut now, mut open, mut ended) = (0u64, Vec::<(u8, u64)>::new(), Vec::new());
        // Start inside a few levels, as a ring that lost its oldest records does.
        for _ in 0..rng.below(4) + open_levels as u64 {
            open.push((open.len() as u8 + 1, now));
            now += rng.below(2);
        }
        while ended.len() < n {
            now += rng.below(3);
            if open.len() <= open_levels || (rng.below(2) == 0 && open.len() < 30) {
                open.push((open.len() as u8 + 1, now));
            } else {
                let (tag, enter) = open.pop().unwrap();
                ended.push((tag, enter, now));
            }
        }
        // A ring that overwrote its oldest records keeps spans whose parents it lost.
        ended.drain(..rng.below(4).min(ended.len() as u64 - 1) as usize);
        let dump = now + rng.below(3);
        let outer = open.iter().take(open_levels).rev().map(|&(tag, enter)| (tag, enter, dump)).collect();
        (ended, outer, dump)
    }

    /// What the stack checks say of a ring: (nests by time, depths fit).
    fn by_stacks(ended: &Spans, open: &Spans) -> (bool, bool) {
        let (mut nesting, mut depths) = (NestingCheck::default(), DepthCheck::default());
        for &(tag, enter, exit) in ended {
            nesting.add(enter, exit);
            depths.add(tag);
        }
        for &(tag, enter, exit) in open {
            nesting.add(enter, exit);
            depths.add_open(tag);
        }
        (!nesting.broken, !depths.broken)
    }

    fn by_runs(ended: &Spans, open: &Spans) -> bool {
        let mut runs = DepthRuns::default();
        for &(tag, enter, exit) in ended {
            runs.add(tag, enter, exit);
        }
        for &(tag, enter, exit) in open {
            runs.add_open(tag, enter, exit);
        }
        !runs.failed
    }

    /// `ended` and `open` (tags 1, 2, … outermost first) as a ring whose keys
    /// carry depth, in a real dump taken at `dump`: what reading it decides.
    fn read_back(ended: &Spans, open: &Spans, dump: u64) -> (bool, super::super::trace::KeyDepth) {
        use ringtrace_format::layout::{RING_FLAG_KEY_DEPTH, key_depth_tag};
        let tagged = |key: u64, tag: u8| key | if tag == 0 { 0 } else { key_depth_tag(u64::from(tag) - 1) };
        let records: Vec<ringtrace_format::Record> = ended
            .iter()
            .map(|&(tag, enter, exit)| ringtrace_format::Record { key: tagged(0x1000, tag), enter, exit })
            .collect();
        // Keys of their own: an open span with a finished one's key and start is left out as ended.
        let open: Vec<(u64, u64)> =
            open.iter().rev().enumerate().map(|(i, &(_, enter, _))| (0x2000 + i as u64, enter)).collect();
        let mut w = super::super::test_dumps::writer(dump);
        let info = ringtrace_format::RingInfo {
            tid: 1,
            capacity: 1 << 20,
            written: records.len() as u64,
            dropped: 0,
            aux: 0,
            flags: RING_FLAG_KEY_DEPTH,
            name: b"t",
        };
        w.ring(&info, &records, &open).unwrap();
        let bytes = w.finish().unwrap().0;
        let trace = super::super::decode("t.rtd".as_ref(), &bytes).unwrap();
        (trace.threads[0].nested, trace.threads[0].key_depth)
    }

    #[test]
    fn reading_a_ring_decides_as_the_stack_checks_do() {
        use super::super::trace::KeyDepth;
        let mut rng = XorShift(5);
        let mut seen = Vec::new();
        for round in 0..400 {
            let (n, open_levels) = (1 + rng.below(200) as usize, rng.below(3) as usize);
            let (mut ended, open, dump) = ring(&mut rng, n, open_levels);
            if round % 2 == 1 {
                let i = rng.below(ended.len() as u64) as usize;
                match rng.below(3) {
                    0 => ended[i].1 = ended[i].1.saturating_sub(1 + rng.below(4)),
                    1 => ended[i].2 += 1 + rng.below(4),
                    _ => ended[i].0 = (ended[i].0 as u64 + rng.below(5)).saturating_sub(2).clamp(1, 255) as u8,
                }
            }
            let (by_time, depths_fit) = by_stacks(&ended, &open);
            let expected = (by_time, if depths_fit { KeyDepth::Used } else { KeyDepth::Ignored });
            assert_eq!(read_back(&ended, &open, dump), expected, "round {round}: {ended:?} {open:?}");
            if !seen.contains(&expected) {
                seen.push(expected);
            }
        }
        // A call tree, times that do not nest, depths that do not fit.
        for outcome in [(true, KeyDepth::Used), (false, KeyDepth::Used), (true, KeyDepth::Ignored)] {
            assert!(seen.contains(&outcome), "{outcome:?} in {seen:?}");
        }
        // Deeper than 254 levels: the depth is not stated past there, and the ring still nests.
        let chain: Spans = (0..300u64).rev().map(|d| (u8::try_from(d + 1).unwrap_or(0), d, 1000 - d)).collect();
        assert!(!by_runs(&chain, &Vec::new()));
        assert_eq!(read_back(&chain, &Vec::new(), 2000), (true, KeyDepth::Used));
    }

    #[test]
    fn depth_runs_pass_call_trees_and_nothing_the_stack_checks_refuse() {
        let mut rng = XorShift(11);
        let (mut passed, mut refused) = (0, 0);
        for round in 0..3_000 {
            let (n, open_levels) = (1 + rng.below(60) as usize, rng.below(3) as usize);
            let (mut ended, mut open, _) = ring(&mut rng, n, open_levels);
            // A call tree passes all three.
            assert_eq!(by_stacks(&ended, &open), (true, true), "round {round}");
            assert!(by_runs(&ended, &open), "round {round}: {ended:?} {open:?}");
            // Damage one span: a time, a depth, or two spans swapped. Whatever the stack checks
            // refuse, the runs refuse too (and then the stack checks decide).
            let i = rng.below(ended.len() as u64) as usize;
            match rng.below(4) {
                0 => ended[i].1 = ended[i].1.saturating_sub(1 + rng.below(4)),
                1 => ended[i].2 += 1 + rng.below(4),
                2 => ended[i].0 = (ended[i].0 as u64 + rng.below(5)).saturating_sub(2).min(255) as u8,
                _ if open.is_empty() => {
                    let j = rng.below(ended.len() as u64) as usize;
                    ended.swap(i, j);
                }
                _ => open[0].1 += 1 + rng.below(20),
            }
            let runs = by_runs(&ended, &open);
            if by_stacks(&ended, &open) != (true, true) {
                assert!(!runs, "round {round}: {ended:?} {open:?}");
            }
            if runs { passed += 1 } else { refused += 1 }
        }
        // Both outcomes were exercised.
        assert!(passed > 100 && refused > 100, "{passed} {refused}");
        // And any short sequence of small depths and times at all.
        for round in 0..200_000 {
            let span = |rng: &mut XorShift| {
                let enter = rng.below(6);
                (1 + rng.below(4) as u8, enter, enter + rng.below(4))
            };
            let ended: Spans = (0..1 + rng.below(7)).map(|_| span(&mut rng)).collect();
            let open: Spans = (0..rng.below(3)).map(|_| span(&mut rng)).collect();
            if by_runs(&ended, &open) {
                assert_eq!(by_stacks(&ended, &open), (true, true), "round {round}: {ended:?} {open:?}");
            }
        }
    }
}
