//! Measuring the recorder's own cost, so `rtconv --calibrated` can subtract it.
//!
//! For each clock mode, 1001 times: the ticks between two back-to-back
//! counter reads (what an empty span measures of itself), and the ticks
//! between two reads with one empty span recorded in between (minus the
//! former: what a span adds to its parent). Medians, so interrupts and
//! migrations in a few samples do not move the result. No allocation: it
//! runs at dump time, on any target.

use core::hint::black_box;

use ringtrace_format::{Calibration, ClockMode};

use crate::clock::{Clock, Fast, Ordered, Serialized};
use crate::ring::{Mode, Slot};
use crate::track::Track;

const SAMPLES: usize = 1001;

/// Where the measured spans go: a private ring nobody dumps.
static SCRATCH: Track = Track::with_mode(&SCRATCH_SLOTS, Mode::Overwrite);
static SCRATCH_SLOTS: [Slot; 64] = [const { Slot::new() }; 64];

/// The cost of a span for every clock mode of this target.
pub fn measure_all() -> [Calibration; 3] {
    [
        measure::<Fast>(ClockMode::Fast),
        measure::<Ordered>(ClockMode::Ordered),
        measure::<Serialized>(ClockMode::Serialized),
    ]
}

/// The cost of a span read with clock `C`.
pub fn measure<C: Clock>(mode: ClockMode) -> Calibration {
    let mut bare = [0u64; SAMPLES];
    let mut with_span = [0u64; SAMPLES];
    let key = black_box(0x5ca1_ab1e);
    for i in 0..SAMPLES {
        let a = C::now();
        let b = C::now();
        bare[i] = b.wrapping_sub(a);

        let a = C::now();
        // What `Span` does: check the switch, read, note it open, read, push, close.
        if crate::sink::enabled() {
            let enter = C::now();
            let token = SCRATCH.begin(key, enter);
            let exit = C::now();
            SCRATCH.end(token, key, enter, exit);
        }
        let b = C::now();
        with_span[i] = b.wrapping_sub(a);
    }
    let read_cost = median(&mut bare);
    let span_cost = median(&mut with_span).saturating_sub(read_cost);
    Calibration { mode, samples: SAMPLES as u32, span_cost, read_cost }
}

fn median(samples: &mut [u64]) -> u64 {
    samples.sort_unstable();
    samples[samples.len() / 2]
}
