//! The Firefox Profiler's processed profile (`-f firefox`, a `.json` to open in
//! profiler.firefox.com; Perfetto's UI imports it too), written through
//! `fxprof-processed-profile`, the writer samply uses.
//!
//! - One process (the dump's), one thread per ring (its tid and name; the thread whose tid
//!   is the pid is the main thread), times in ns from the dump's earliest span, on a
//!   reference time that is that span's wall-clock time.
//! - Traced, not sampled: a sample at every span edge (a span begins or ends) holds the
//!   stack from then until the next edge — function labels from the outermost span in —
//!   weighted by that interval in ns (the profile's interval is 1 ns, so the call tree's
//!   "samples" are nanoseconds). The call tree, flame graph and stack chart therefore show
//!   exact totals: a function's running and self time are `rtconv stats`'s. Between a
//!   thread's outermost spans a sample with no stack holds the gap. An interval longer than
//!   a sample's weight holds (2^31 − 1 ns, about 2.1 s) is split over several samples; a
//!   trace longer than 39 hours is weighed in a coarser unit (the interval), so that a thread
//!   has at most 65,536 such samples more than its edges.
//! - Markers: a thread that lost spans gets an instant marker where it happened (overwritten
//!   spans at its first span, dropped ones after its last), and a span left by a `longjmp`
//!   or an exception without its exit (unwound) an interval marker over it.
//!
//! The profile is built in memory (its tables: a few words per span) and written at the end.

use std::io::{self, Write};

use fxprof_processed_profile::{
    CategoryHandle, CpuDelta, Frame, FrameFlags, FrameHandle, FrameInfo, MarkerTiming, Profile, ReferenceTimestamp,
    SamplingInterval, StackHandle, StaticSchemaMarker, StaticSchemaMarkerField, StringHandle, ThreadHandle, Timestamp,
};

use crate::model::{Anomalies, SpanNs, Timeline};

/// A marker for something the profile's samples cannot say: spans lost, a span unwound.
struct Note {
    name: StringHandle,
}

impl StaticSchemaMarker for Note {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "ringtrace";
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[];

    fn name(&self, _: &mut Profile) -> StringHandle {
        self.name
    }

    fn category(&self, _: &mut Profile) -> CategoryHandle {
        CategoryHandle::OTHER
    }

    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }

    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// The largest weight a sample holds, ns.
const MAX_WEIGHT: u64 = i32::MAX as u64;

/// Writes `tl` as a Firefox Profiler processed profile; returns what its spans had wrong.
pub fn write(tl: &Timeline<'_>, out: &mut dyn Write) -> io::Result<Anomalies> {
    let (profile, found) = profile(tl);
    serde_json::to_writer(&mut *out, &profile).map_err(io::Error::other)?;
    out.write_all(b"\n")?;
    Ok(found)
}

/// The profile of `tl`, and what its spans had wrong.
fn profile(tl: &Timeline<'_>) -> (Profile, Anomalies) {
    let trace = tl.trace;
    let origin = tl.origin_ns;
    let start_ms = tl.timebase.realtime_ns(i128::from(origin)) as f64 / 1e6;
    let name = if trace.process.name.is_empty() { "process" } else { &trace.process.name };
    // The weight's unit: 1 ns, unless the trace is so long (over 39 hours) that a thread's
    // samples, each at most 2^31 - 1 units, would be more than 65,536 over its gaps and long spans.
    let mut end = origin;
    tl.arrivals(|a| end = end.max(a.enter_ns.saturating_add(a.duration as i64)));
    let unit = (end.saturating_sub(origin).max(0) as u64).div_ceil(MAX_WEIGHT * 65_536).max(1);
    let mut profile = Profile::new(
        name,
        ReferenceTimestamp::from_millis_since_unix_epoch(start_ms),
        SamplingInterval::from_nanos(unit),
    );
    profile.set_product(&format!("{name} (ringtrace)"));
    let pid = trace.process.pid;
    let process = profile.add_process(name, pid, Timestamp::from_nanos_since_reference(0));
    let labels: Vec<StringHandle> = (0..tl.keys.len()).map(|k| profile.intern_string(tl.name(k))).collect();
    let at = |ns: i64| Timestamp::from_nanos_since_reference(ns.saturating_sub(origin).max(0) as u64);
    let mut threads = tl.threads();
    while let Some(mut t) = threads.next() {
        let thread = &trace.threads[t.thread];
        let tid = u32::try_from(thread.tid).unwrap_or(u32::MAX);
        let handle = profile.add_thread(process, tid, Timestamp::from_nanos_since_reference(0), tid == pid);
        let thread_name = if thread.name.is_empty() { format!("thread {}", thread.tid) } else { thread.name.clone() };
        profile.set_thread_name(handle, &thread_name);
        let mut walk = Walk {
            profile: &mut profile,
            thread: handle,
            frames: vec![None; labels.len()],
            last: None,
            current: None,
            unit,
        };
        let mut open: Vec<(SpanNs, StackHandle)> = Vec::new();
        let (mut first, mut last_exit): (Option<i64>, Option<i64>) = (None, None);
        while let Some(batch) = t.next_batch() {
            for s in batch {
                first.get_or_insert(s.enter_ns);
                last_exit = last_exit.max(Some(s.exit_ns));
                while open.last().is_some_and(|(top, _)| !top.encloses(s)) {
                    let (top, _) = open.pop().expect("a top");
                    walk.edge(top.exit_ns.saturating_sub(origin), open.last().map(|o| o.1));
                }
                let key = s.key_index as usize;
                let Some(&label) = labels.get(key) else { continue };
                let stack = walk.stack(open.last().map(|o| o.1), key, label);
                walk.edge(s.enter_ns.saturating_sub(origin), Some(stack));
                open.push((*s, stack));
                if s.unwound() {
                    let name = walk.profile.intern_string(&format!("unwound: {}", tl.name(key)));
                    walk.profile.add_marker(
                        handle,
                        MarkerTiming::Interval(at(s.enter_ns), at(s.exit_ns)),
                        Note { name },
                    );
                }
            }
        }
        while let Some((top, _)) = open.pop() {
            walk.edge(top.exit_ns.saturating_sub(origin), open.last().map(|o| o.1));
        }
        for (count, what, when) in [
            (thread.overwritten(), "earlier span(s) overwritten", first),
            (thread.dropped, "later span(s) dropped (ring full)", last_exit),
        ] {
            if count > 0 {
                let name = profile.intern_string(&format!("ringtrace: {count} {what}"));
                profile.add_marker(handle, MarkerTiming::Instant(at(when.unwrap_or(origin))), Note { name });
            }
        }
    }
    let found = threads.anomalies();
    (profile, found)
}

/// One thread's samples, edge by edge.
struct Walk<'p> {
    profile: &'p mut Profile,
    thread: ThreadHandle,
    /// Per key index, its frame on this thread, once interned.
    frames: Vec<Option<FrameHandle>>,
    /// The previous edge's time, ns since the origin.
    last: Option<i64>,
    /// The stack since the previous edge (`None`: no span open).
    current: Option<StackHandle>,
    /// A weight's unit, ns.
    unit: u64,
}

impl Walk<'_> {
    /// A span edge at `ns` (since the origin), after which the stack is `after`: the time since
    /// the previous edge is sampled with the stack until now.
    fn edge(&mut self, ns: i64, after: Option<StackHandle>) {
        if let Some(from) = self.last
            && ns > from
        {
            // In units, from the origin: rounding never gains or loses time over a thread.
            let (mut at, to) = (from.max(0) as u64 / self.unit, ns.max(0) as u64 / self.unit);
            while at < to {
                let weight = (to - at).min(MAX_WEIGHT);
                let time = Timestamp::from_nanos_since_reference(at.saturating_mul(self.unit));
                // At most 2^31 - 1: fits.
                self.profile.add_sample(self.thread, time, self.current, CpuDelta::ZERO, weight as i32);
                at += weight;
            }
        }
        self.last = Some(self.last.map_or(ns, |from| from.max(ns)));
        self.current = after;
    }

    /// The stack of a span of key index `key` (labelled `label`) called from `parent`.
    fn stack(&mut self, parent: Option<StackHandle>, key: usize, label: StringHandle) -> StackHandle {
        let frame = match self.frames.get(key).copied().flatten() {
            Some(frame) => frame,
            None => {
                let info = FrameInfo {
                    frame: Frame::Label(label),
                    category_pair: CategoryHandle::OTHER.into(),
                    flags: FrameFlags::empty(),
                };
                let frame = self.profile.intern_frame(self.thread, info);
                if let Some(slot) = self.frames.get_mut(key) {
                    *slot = Some(frame);
                }
                frame
            }
        };
        self.profile.intern_stack(self.thread, parent, frame)
    }
}
