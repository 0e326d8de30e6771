//! Measuring the recorder's own cost, so `rtconv --calibrated` can subtract it.
//!
//! For each clock mode two figures, in ticks:
//!
//! - `read_cost`: what an empty span measures of itself — the median of 1001
//!   pairs of back-to-back counter reads;
//! - `span_cost`: what an empty span costs the span around it, measured as a
//!   parent sees its children: chunks of [`CHUNK`] spans recorded back to
//!   back, each chunk timed by the counter; the median chunk, less one read,
//!   per span.
//!
//! The spans go to a scratch track the caller gives, which with `std` is a
//! ring as large as the program's largest (up to 2^22 records), written
//! through once by the default clock's spans (4096 spans for the others):
//! its stores then reach the same level of the memory hierarchy as the
//! program's did. Measured on a 64-record ring that stays in L1 (before
//! issue 17), the cost was a quarter of what a child costs a parent whose
//! ring streams to memory on one Intel machine. No allocation here; it runs
//! at dump time (for a ring of 2^22 records, ~0.2 s).

use core::hint::black_box;

use ringtrace_format::{Calibration, ClockMode};

use crate::clock::Clock;
use crate::track::Track;

/// Spans per timed chunk.
pub const CHUNK: usize = 64;
/// Counter-read pairs for `read_cost`.
const READ_SAMPLES: usize = 1001;
/// The most chunks kept for the median.
const MAX_CHUNKS: usize = 1024;

/// The cost of a span read with clock `C`; see the module docs.
pub fn measure<C: Clock>(mode: ClockMode, scratch: &Track, spans: usize) -> Calibration {
    let mut bare = [0u64; READ_SAMPLES];
    for b in bare.iter_mut() {
        let a = C::now();
        *b = C::now().wrapping_sub(a);
    }
    let read_cost = median(&mut bare);
    let chunks = spans.div_ceil(CHUNK).max(1);
    let mut chunk_ticks = [0u64; MAX_CHUNKS];
    let key = black_box(0x5ca1_ab1e);
    for i in 0..chunks {
        let a = C::now();
        for _ in 0..CHUNK {
            // What `Span` does: check the switch, read, note it open, read, push, close.
            if crate::sink::enabled() {
                let enter = C::enter_now();
                let token = scratch.begin(key, enter);
                let exit = C::now();
                scratch.end(token, key, enter, exit);
            }
        }
        let b = C::now();
        // Every chunk writes the ring; the last MAX_CHUNKS are kept (the ring is warm by then).
        chunk_ticks[i % MAX_CHUNKS] = b.wrapping_sub(a);
    }
    let kept = chunks.min(MAX_CHUNKS);
    let span_cost = median(&mut chunk_ticks[..kept]).saturating_sub(read_cost) / CHUNK as u64;
    Calibration { mode, samples: kept as u32, span_cost, read_cost }
}

fn median(samples: &mut [u64]) -> u64 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}
