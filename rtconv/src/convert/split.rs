//! `--split`: a conversion as a series of parts, each a whole trace covering a window of time.

use std::io;
use std::sync::Arc;

use super::{
    ConvertError, Format, Input, KEPT_MAX_BYTES, Level, Prepared, Report, budget_layout, check_timeline, prepare,
    render,
};
use crate::budget::{self, Plan};
use crate::model::Timeline;

/// How `--split` cuts an output into parts, each a whole trace of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Split {
    /// Parts covering this many ns of the trace each, from its first span.
    Duration(u64),
    /// Parts of at most this many bytes each (before compression).
    Size(u64),
}

impl std::fmt::Display for Split {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Split::Duration(ns) => write!(f, "{ns}ns"),
            Split::Size(bytes) => write!(f, "{bytes} bytes"),
        }
    }
}

/// A part of a split output, as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// The part's window, monotonic ns: its spans are those overlapping `start_ns..end_ns`, cut to it.
    pub start_ns: i64,
    /// See [`start_ns`](Self::start_ns).
    pub end_ns: i64,
    /// Its bytes.
    pub bytes: u64,
}

/// Parts a split writes at most.
pub const MAX_PARTS: u64 = 10_000;

/// Slices of time a split by size weighs the output's bytes in.
const SIZE_SLICES: usize = 1 << 14;

/// Converts a dump in memory into `format` (Chrome JSON, Perfetto or ftrace) as a series of parts, each
/// a whole trace of its own (its process and thread records, names, clock) covering one window
/// of time, handed in order to `write_part` (numbered from 0) — one part in memory at a time. A span crossing a cut is in every part it
/// covers, cut to each and marked (`clipped`: its start, its end, or both), so the parts'
/// spans, summed, last as long as the whole's. By [`Split::Size`], the windows come from where
/// the spans' bytes lie in time (the format's size model); a part that still comes out too
/// large is halved until it fits.
pub fn convert_split(
    input: Input<'_>,
    format: Format,
    split: Split,
    write_part: &mut dyn FnMut(u32, &[u8]) -> io::Result<()>,
) -> Result<(Report, Vec<Part>), ConvertError> {
    let layout = match format {
        Format::Chrome(_) | Format::Perfetto | Format::Ftrace => {
            budget_layout(format).ok_or(ConvertError::SplitFormat)?
        }
        _ => return Err(ConvertError::SplitFormat),
    };
    let Input { path, filter, .. } = input;
    let Prepared { trace, names, timebase, mut report } = prepare(input)?;
    let mut full = Timeline::new(&trace, &names, timebase).filtered(filter);
    // Decoded once: each part walks its threads' spans up to its window's end.
    full.decoded = full.decode_all(KEPT_MAX_BYTES).map(Arc::new);
    let origin = full.origin_ns;
    // The trace's end, and what its spans have wrong (said once, not per part).
    let mut end = origin;
    let found = full.arrivals(|a| end = end.max(a.enter_ns.saturating_add(a.duration as i64)));
    check_timeline(&full, found, false, &mut report);
    // Windows end past the last span's end, so a span starting there is in the last.
    let last = end.saturating_add(1);
    let too_many = |parts: u64| ConvertError::SplitParts { path: path.into(), what: split.to_string(), parts };
    let mut windows: Vec<(i64, i64)> = match split {
        Split::Duration(ns) => {
            let ns = i64::try_from(ns).unwrap_or(i64::MAX).max(1);
            let parts = (last.saturating_sub(origin).max(1) as u64).div_ceil(ns as u64);
            if parts > MAX_PARTS {
                return Err(too_many(parts));
            }
            let at = |k: i64| origin.saturating_add(k.saturating_mul(ns)).min(last);
            (0..parts as i64).map(|k| (at(k), at(k + 1))).collect()
        }
        Split::Size(max) => {
            let plan = Plan::profiled(&full, filter, layout, (origin, last), SIZE_SLICES);
            // Each part has the whole's fixed records; its spans get the rest, less a tenth
            // for the spans that cross into it again.
            let fixed = plan.whole().saturating_sub(plan.profile().bytes.iter().sum::<i64>().max(0) as u64);
            let room = max.saturating_sub(fixed) / 10 * 9;
            size_windows(plan.profile(), room, last)
        }
    };
    if windows.len() as u64 > MAX_PARTS {
        return Err(too_many(windows.len() as u64));
    }
    windows.reverse();
    let mut parts = Vec::new();
    let mut out = Vec::new();
    while let Some(window) = windows.pop() {
        let mut tl = Timeline::new(&trace, &names, timebase).filtered(filter);
        tl.origin_ns = origin;
        tl.window = Some(window);
        tl.decoded = full.decoded.clone();
        out.clear();
        render(&tl, format, &mut out).map_err(ConvertError::Output)?;
        if let Split::Size(max) = split
            && out.len() as u64 > max
            && window.1.saturating_sub(window.0) > 1
        {
            // Too large: its halves, in order.
            let middle = window.0 + window.1.saturating_sub(window.0) / 2;
            windows.push((middle, window.1));
            windows.push((window.0, middle));
            if (parts.len() + windows.len()) as u64 > MAX_PARTS {
                return Err(too_many((parts.len() + windows.len()) as u64));
            }
            continue;
        }
        if let Split::Size(max) = split
            && out.len() as u64 > max
        {
            report.push(
                Level::Error,
                format!(
                    "{}: part {} takes {} bytes, more than --split {max}: its spans all start within 1 ns",
                    path.display(),
                    parts.len() + 1,
                    out.len()
                ),
            );
        }
        write_part(parts.len() as u32, &out).map_err(ConvertError::Output)?;
        parts.push(Part { start_ns: window.0, end_ns: window.1, bytes: out.len() as u64 });
    }
    Ok((report, parts))
}

/// Windows of `profile`'s slices whose bytes add up to at most `room` each (a slice larger
/// than that alone), the last ending at `last`.
fn size_windows(profile: &budget::Profile, room: u64, last: i64) -> Vec<(i64, i64)> {
    let width = profile.width.max(1) as i64;
    let mut windows = Vec::new();
    let (mut start, mut bytes) = (profile.start, 0i64);
    for (i, &b) in profile.bytes.iter().enumerate() {
        let slice_start = profile.start.saturating_add((i as i64).saturating_mul(width)).min(last);
        if bytes > 0 && (bytes + b) as u64 > room {
            windows.push((start, slice_start));
            (start, bytes) = (slice_start, 0);
        }
        bytes += b;
    }
    windows.push((start, last.max(start.saturating_add(1))));
    windows
}
