//! One thread's shadow stack of the calls its hooks have entered, and how
//! it follows a `longjmp`.
//!
//! A call's exit hook normally pops the frame its enter hook pushed. When
//! control leaves frames without their exit hooks — `longjmp`,
//! `siglongjmp`, or a C++ exception through C frames, which have no
//! cleanups — the next hook of the thread notices and closes each skipped
//! frame as an **unwound** span ending at that hook's timestamp, so its
//! children keep their parent and its call is counted. The evidence, from
//! the hook's own arguments and the caller's stack pointer (`frame`):
//!
//! - an exit whose function and stack pointer match a frame below the top:
//!   the frames above it were skipped;
//! - an entry made from a stack pointer above a frame's: that frame can no
//!   longer be running (a live caller's frame lies above every call it makes;
//!   the stack grows down on every target this runs on). At the *same* stack
//!   pointer a call is either inlined into the function running there (GCC
//!   calls an inlined function's hooks from its caller's frame, with its
//!   caller's call site) or a new call at that level after the function there
//!   was left: a different call site, or the same function again from the
//!   same site, says the latter;
//! - an entry whose return address is the one a frame below the top left on
//!   the stack when it made its last call (the word just below that frame's
//!   stack pointer, on targets where `call` pushes it): that frame is the
//!   caller, and the frames above it were skipped.
//!
//! Without evidence — a call from code built without the hooks (a `qsort`
//! comparator), or from a signal handler on another stack — the new call
//! nests under the top frame, as the C standard's call nesting would have it.

use core::cell::Cell;

use crate::track::Track;

/// Frames the hooks' shadow stack holds per thread; deeper calls are counted, not recorded.
pub const SHADOW_DEPTH: usize = 256;

/// How the hooks read the thread's stack (the real stack, or a test's model of one).
pub(crate) trait StackView {
    /// The return address the last call made from a frame whose stack pointer
    /// was `frame` left just below it, if `frame` and the current stack
    /// pointer `now` are on the thread's stack and this target's calls push
    /// their return address; `None` otherwise.
    fn return_address(&self, frame: u64, now: u64) -> Option<u64>;
    /// Whether `frame` and `now` are on the same stack, so their order means
    /// nesting. `false` when either is on another stack (a signal handler's,
    /// a coroutine's) or the bounds are unknown.
    fn same_stack(&self, frame: u64, now: u64) -> bool;
}

#[derive(Clone, Copy)]
struct Frame {
    key: u64,
    enter: u64,
    token: u64,
    /// The caller's stack pointer at the hook call (0 where the target does not say).
    frame: u64,
    /// The call site the hook was given.
    site: u64,
}

const EMPTY: Frame = Frame { key: 0, enter: 0, token: 0, frame: 0, site: 0 };

/// One thread's shadow stack. `depth` counts every entered call, also the
/// ones past [`SHADOW_DEPTH`] that have no frame. Cells, not a `RefCell`:
/// a signal handler's hooks may run in the middle of another hook, and
/// leave the stack as they found it.
pub(crate) struct Shadow {
    depth: Cell<usize>,
    /// (depth, call site) of the last entry that found no caller among the
    /// frames: the next identical one skips the search (a comparator that
    /// `qsort` calls a million times).
    last_miss: Cell<(usize, u64)>,
    frames: [Cell<Frame>; SHADOW_DEPTH],
}

impl Shadow {
    pub(crate) const fn new() -> Self {
        Shadow { depth: Cell::new(0), last_miss: Cell::new((0, 0)), frames: [const { Cell::new(EMPTY) }; SHADOW_DEPTH] }
    }

    /// Calls entered and not yet exited.
    pub(crate) fn depth(&self) -> usize {
        self.depth.get()
    }

    /// The common entry, done if it is one: a call made from the top frame
    /// (its stack pointer below the top's, and — where `call` pushes it — its
    /// return address the word the top's last call left), with room for its
    /// frame. Reads the clock (`now`) only then. Returns `false`, having
    /// changed nothing, for anything else.
    #[inline(always)]
    pub(crate) fn enter_nested(
        &self,
        track: &Track,
        (key, site, frame): (u64, u64, u64),
        stack: &impl StackView,
        now: impl FnOnce() -> u64,
    ) -> bool {
        let depth = self.depth.get();
        if depth == 0 || depth >= SHADOW_DEPTH {
            return false;
        }
        if frame != 0 && !self.called_from_top(depth, site, frame, stack) {
            return false;
        }
        let now = now();
        self.frames[depth].set(Frame { key, enter: now, token: track.begin(key, now), frame, site });
        self.depth.set(depth + 1);
        true
    }

    /// The common exit, done if it is one: the top frame's call returning.
    /// Returns `false`, having changed nothing, for anything else.
    #[inline(always)]
    pub(crate) fn exit_top(&self, track: &Track, key: u64, site: u64, frame: u64, now: u64) -> bool {
        let depth = self.depth.get();
        if depth == 0 || depth > SHADOW_DEPTH || !self.exits(depth - 1, key, site, frame) {
            return false;
        }
        let top = self.frames[depth - 1].get();
        // The frame is popped before its record is written (two instructions fewer a call by
        // callgrind: the depth's store no longer waits on the record's): a signal handler's hooks
        // in between see the stack without it, as after the exit, and leave it so.
        self.depth.set(depth - 1);
        track.end(top.token, top.key, top.enter, now);
        true
    }

    /// A call of `key` from `site` began at `now`; `frame` is the caller's
    /// stack pointer (0 if unknown).
    #[inline(always)]
    pub(crate) fn enter(&self, track: &Track, key: u64, site: u64, frame: u64, now: u64, stack: &impl StackView) {
        let mut depth = self.depth.get();
        if frame != 0 && depth > 0 {
            depth = self.settle_for_entry(track, key, site, frame, now, depth, stack);
        }
        self.depth.set(depth + 1);
        match self.frames.get(depth) {
            Some(slot) => slot.set(Frame { key, enter: now, token: track.begin(key, now), frame, site }),
            None => track.note_unrecorded(1, 0),
        }
    }

    /// The depth a new call from `site` at stack pointer `frame` nests at:
    /// the frames it proves skipped are closed first.
    #[inline(always)]
    #[expect(clippy::too_many_arguments, reason = "the hook's arguments and state, passed on in registers")]
    fn settle_for_entry(
        &self,
        track: &Track,
        key: u64,
        site: u64,
        frame: u64,
        now: u64,
        depth: usize,
        stack: &impl StackView,
    ) -> usize {
        if depth > SHADOW_DEPTH {
            // Calls past the shadow stack have no frames to check; once the
            // stack pointer is back at the deepest recorded one, they are gone.
            let deepest = self.frames[SHADOW_DEPTH - 1].get().frame;
            if deepest == 0 || deepest > frame || !stack.same_stack(deepest, frame) {
                return depth;
            }
            return self.settle_slow(track, key, site, frame, now, SHADOW_DEPTH, stack);
        }
        if self.called_from_top(depth, site, frame, stack) {
            depth
        } else {
            self.settle_slow(track, key, site, frame, now, depth, stack)
        }
    }

    /// Whether a call from `site` at stack pointer `frame` was made by the
    /// function on top of `depth` frames (at most [`SHADOW_DEPTH`]): its stack
    /// pointer lies below the top's, and — where `call` pushes it — its return
    /// address is the word the top's last call left.
    #[inline(always)]
    fn called_from_top(&self, depth: usize, site: u64, frame: u64, stack: &impl StackView) -> bool {
        let top = self.frames[depth - 1].get();
        top.frame > frame
            && match stack.return_address(top.frame, frame) {
                Some(returns_to) => returns_to == site,
                // Targets that keep the return address in a register: the stack pointer alone.
                None => true,
            }
    }

    #[cold]
    #[inline(never)]
    #[expect(clippy::too_many_arguments, reason = "the hook's arguments and state")]
    fn settle_slow(
        &self,
        track: &Track,
        key: u64,
        site: u64,
        frame: u64,
        now: u64,
        depth: usize,
        stack: &impl StackView,
    ) -> usize {
        // Frames below the caller's stack pointer are no longer running; at
        // the same stack pointer, the call may be inlined into the one there.
        let mut live = depth;
        while live > 0 {
            let f = self.frames[live - 1].get();
            if f.frame == 0 || f.frame > frame || !stack.same_stack(f.frame, frame) {
                break;
            }
            if f.frame == frame && self.inlined_at(live - 1, key, site) {
                break;
            }
            live -= 1;
        }
        // Inlined into the function on top (at its stack pointer, or below it while it has
        // arguments pushed for another call): it nests there. Otherwise the frame whose last
        // call returns to `site` is the caller.
        let inlined = live > 0 && self.inlined_at(live - 1, key, site);
        if !inlined && live > 0 && self.last_miss.get() != (live, site) {
            let caller = (0..live).rev().find(|&i| {
                let f = self.frames[i].get();
                f.frame > frame && stack.return_address(f.frame, frame) == Some(site)
            });
            match caller {
                Some(i) => live = i + 1,
                None => self.last_miss.set((live, site)),
            }
        }
        if live < depth {
            self.unwind(track, live, depth, now);
        }
        live
    }

    /// Whether a call of `key` from `site`, made at the stack pointer of
    /// frame `index`, is inlined into the function running there: it has
    /// that function's call site (GCC passes the containing function's
    /// return address) and is not that function called again.
    fn inlined_at(&self, index: usize, key: u64, site: u64) -> bool {
        let at = self.frames[index].get().frame;
        // The function itself: the outermost frame at this stack pointer; the others are inlined into it.
        let mut outermost = index;
        while outermost > 0 && self.frames[outermost - 1].get().frame == at {
            outermost -= 1;
        }
        let function = self.frames[outermost].get();
        function.site == site && function.key != key
    }

    /// A call of `key` from `site` returned at `now`, from stack pointer
    /// `frame` (0 if unknown).
    #[inline(always)]
    pub(crate) fn exit(&self, track: &Track, key: u64, site: u64, frame: u64, now: u64) {
        let depth = self.depth.get();
        if depth == 0 {
            return; // an exit whose entry was not seen (recording was off then)
        }
        if self.exit_top(track, key, site, frame, now) {
            return;
        }
        if depth > SHADOW_DEPTH && (frame == 0 || self.frames[SHADOW_DEPTH - 1].get().frame >= frame) {
            self.depth.set(depth - 1); // a call too deep to have a frame: counted at entry
            return;
        }
        self.exit_slow(track, key, site, frame, now, depth.min(SHADOW_DEPTH));
    }

    #[cold]
    #[inline(never)]
    fn exit_slow(&self, track: &Track, key: u64, site: u64, frame: u64, now: u64, depth: usize) {
        let frames = &self.frames[..depth];
        // The frame this exit belongs to: the same call, its stack pointer
        // within the frame's reach; failing that (an `alloca` moved it), the
        // innermost call of the same function.
        let at = (0..depth)
            .rev()
            .find(|&i| self.exits(i, key, site, frame))
            .or_else(|| (0..depth).rev().find(|&i| frames[i].get().key == key));
        let Some(at) = at else {
            return; // entered while recording was off
        };
        self.unwind(track, at + 1, depth, now);
        let f = frames[at].get();
        track.end(f.token, f.key, f.enter, now);
        self.depth.set(at);
    }

    /// Whether an exit of `key` called from `site`, at stack pointer `frame`,
    /// is frame `index`'s: the same function called from the same site (so a
    /// recursive call's exit is told from its caller's), from its own stack
    /// pointer — or, when GCC makes the exit hook a tail call after the
    /// epilogue, from its caller's, which is at most the next frame out's.
    #[inline(always)]
    fn exits(&self, index: usize, key: u64, site: u64, frame: u64) -> bool {
        let f = self.frames[index].get();
        f.key == key
            && f.site == site
            && frame >= f.frame
            && index.checked_sub(1).is_none_or(|out| frame <= self.frames[out].get().frame)
    }

    /// Closes frames `from..to` as unwound at `now`, innermost first.
    fn unwind(&self, track: &Track, from: usize, to: usize, now: u64) {
        for slot in self.frames[from..to].iter().rev() {
            let f = slot.get();
            track.end_unwound(f.token, f.key, f.enter, now);
        }
        if let Some(outermost) = self.frames.get(from) {
            track.open().pop(outermost.get().token);
        }
        self.depth.set(from);
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use std::vec::Vec;

    use ringtrace_format::Record;
    use ringtrace_format::layout::{FLAGS_KEY, SPAN_FLAG_UNWOUND};

    use super::*;
    use crate::ring::Slot;

    /// A stack where every frame's last call left the return address the test says.
    struct Model {
        /// (frame, return address just below it)
        slots: Vec<(u64, u64)>,
        push_return_address: bool,
    }

    impl StackView for Model {
        fn return_address(&self, frame: u64, _now: u64) -> Option<u64> {
            if !self.push_return_address {
                return None;
            }
            Some(self.slots.iter().rev().find(|s| s.0 == frame).map_or(0, |s| s.1))
        }
        fn same_stack(&self, _: u64, _: u64) -> bool {
            true
        }
    }

    /// A shadow stack driven as the hooks drive it: the common case first, then the full path.
    struct Hooks(Shadow);

    impl Hooks {
        fn new() -> Self {
            Hooks(Shadow::new())
        }
        fn enter(&self, t: &Track, key: u64, site: u64, frame: u64, now: u64, m: &Model) {
            if !self.0.enter_nested(t, (key, site, frame), m, || now) {
                self.0.enter(t, key, site, frame, now, m);
            }
        }
        fn exit(&self, t: &Track, key: u64, site: u64, frame: u64, now: u64) {
            if !self.0.exit_top(t, key, site, frame, now) {
                self.0.exit(t, key, site, frame, now);
            }
        }
        fn depth(&self) -> usize {
            self.0.depth()
        }
    }

    fn track() -> &'static Track {
        std::boxed::Box::leak(std::boxed::Box::new(Track::new(std::boxed::Box::leak(
            (0..64).map(|_| Slot::new()).collect::<Vec<_>>().into_boxed_slice(),
        ))))
    }

    /// (key, enter, exit, unwound) of every span, in ring order.
    fn spans(track: &Track) -> Vec<(u64, u64, u64, bool)> {
        let mut buf = std::vec![Record::default(); 64];
        let snap = track.ring().snapshot(&mut buf, false);
        let mut out = Vec::new();
        let mut flagged = false;
        for r in &buf[..snap.copied] {
            if r.key == FLAGS_KEY {
                flagged = r.enter & SPAN_FLAG_UNWOUND != 0;
                continue;
            }
            out.push((ringtrace_format::layout::split_key(r.key).0, r.enter, r.exit, core::mem::take(&mut flagged)));
        }
        out
    }

    /// main (frame 1000) calls a (900), which calls b (800), which calls c
    /// (700), which longjmps back into a; a then calls d from the same frame.
    #[test]
    fn an_entry_from_a_frame_above_closes_the_skipped_frames_as_unwound() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![], push_return_address: false };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 2, 0, 900, 20, &m);
        s.enter(t, 3, 0, 800, 30, &m);
        s.enter(t, 4, 0, 700, 40, &m);
        // longjmp back into a (900), which calls d: its frame is 900 - something, here 850 > 800.
        s.enter(t, 5, 0, 850, 50, &m);
        s.exit(t, 5, 0, 850, 60);
        s.exit(t, 2, 0, 900, 70);
        s.exit(t, 1, 0, 1000, 80);
        assert_eq!(
            spans(t),
            std::vec![(4, 40, 50, true), (3, 30, 50, true), (5, 50, 60, false), (2, 20, 70, false), (1, 10, 80, false)]
        );
        assert_eq!(s.depth(), 0);
    }

    /// As above, but d's frame is deeper than b's was: only the return address says b is gone.
    #[test]
    fn the_return_address_names_the_caller_when_the_stack_pointer_cannot() {
        let t = track();
        let s = Hooks::new();
        // a's (900) last call returns to 0xd5 (d's call site); b's and c's slots hold older calls.
        let m =
            Model { slots: std::vec![(1000, 0xa1), (900, 0xd5), (800, 0xc1), (700, 0x99)], push_return_address: true };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 2, 0xa1, 900, 20, &m);
        s.enter(t, 3, 0xb1, 800, 30, &m);
        s.enter(t, 4, 0xc1, 700, 40, &m);
        s.enter(t, 5, 0xd5, 650, 50, &m);
        s.exit(t, 5, 0xd5, 650, 60);
        s.exit(t, 2, 0xa1, 900, 70);
        assert_eq!(spans(t), std::vec![(4, 40, 50, true), (3, 30, 50, true), (5, 50, 60, false), (2, 20, 70, false)]);
    }

    /// A call from code without hooks (its return address is nowhere in the
    /// shadow stack) nests under the top frame.
    #[test]
    fn a_call_from_unhooked_code_nests_under_the_top() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![(1000, 0xa1), (900, 0x51)], push_return_address: true };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 2, 0xa1, 900, 20, &m);
        for i in 0..3 {
            s.enter(t, 7, 0xfe, 700, 30 + i, &m);
            s.exit(t, 7, 0xfe, 700, 31 + i);
        }
        s.exit(t, 2, 0xa1, 900, 40);
        s.exit(t, 1, 0, 1000, 50);
        assert!(spans(t).iter().all(|s| !s.3));
        assert_eq!(spans(t).len(), 5);
    }

    /// Recursion: the outer call of a function exits after a jump out of its
    /// inner call; the stack pointer picks the outer one.
    #[test]
    fn an_exit_matches_its_own_frame_among_recursive_calls() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![], push_return_address: false };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 1, 0x11, 900, 20, &m); // called from 1's body
        s.enter(t, 2, 0, 800, 30, &m);
        s.exit(t, 1, 0, 1000, 40);
        assert_eq!(spans(t), std::vec![(2, 30, 40, true), (1, 20, 40, true), (1, 10, 40, false)]);
        assert_eq!(s.depth(), 0);
    }

    /// GCC calls an inlined function's hooks from its caller's frame, with
    /// its caller's call site: it nests (also below the frame, while the
    /// caller has pushed arguments for a call); a new call at that stack pointer
    /// from another site, or of the same function again, means the function
    /// there was left.
    #[test]
    fn inlined_calls_share_their_callers_frame_and_nest() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![(1000, 0xa1)], push_return_address: true };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 2, 0xa1, 900, 20, &m); // a real call
        s.enter(t, 3, 0xa1, 900, 30, &m); // inlined into 2
        s.exit(t, 3, 0xa1, 900, 40);
        s.enter(t, 5, 0xa1, 884, 41, &m); // inlined into 2, after 2 pushed two arguments
        s.exit(t, 5, 0xa1, 884, 42);
        s.exit(t, 2, 0xa1, 900, 50);
        s.enter(t, 2, 0xa1, 900, 60, &m); // 2 again, from the same site
        s.enter(t, 2, 0xa1, 900, 70, &m); // ... jumped out of, and called again
        s.enter(t, 4, 0xb2, 900, 80, &m); // from another site at the same level: the 2 there was left
        s.exit(t, 4, 0xb2, 900, 90);
        s.exit(t, 1, 0, 1000, 100);
        assert_eq!(
            spans(t),
            std::vec![
                (3, 30, 40, false),
                (5, 41, 42, false),
                (2, 20, 50, false),
                (2, 60, 70, true),
                (2, 70, 80, true),
                (4, 80, 90, false),
                (1, 10, 100, false)
            ]
        );
    }

    /// GCC may call the exit hook as a tail call after the epilogue: from the
    /// caller's stack pointer. In a direct recursion that is the outer
    /// call's: the call site tells them apart.
    #[test]
    fn an_exit_hook_called_after_the_epilogue_ends_its_own_call() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![], push_return_address: false };
        s.enter(t, 1, 0, 1000, 10, &m);
        s.enter(t, 1, 0x11, 900, 20, &m);
        s.exit(t, 1, 0x11, 1000, 30); // the inner call's exit, from the outer's stack pointer
        s.exit(t, 1, 0, 1000, 40);
        assert_eq!(spans(t), std::vec![(1, 20, 30, false), (1, 10, 40, false)]);
    }

    /// Without stack pointers (other targets), an exit below the top still
    /// closes the frames above it as unwound.
    #[test]
    fn without_stack_pointers_an_exit_below_the_top_unwinds() {
        let t = track();
        let s = Hooks::new();
        let m = Model { slots: std::vec![], push_return_address: false };
        s.enter(t, 1, 0, 0, 10, &m);
        s.enter(t, 2, 0, 0, 20, &m);
        s.enter(t, 3, 0, 0, 30, &m);
        s.exit(t, 1, 0, 0, 40);
        assert_eq!(spans(t), std::vec![(3, 30, 40, true), (2, 20, 40, true), (1, 10, 40, false)]);
    }
}
