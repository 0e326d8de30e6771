//! Converting counter ticks to nanoseconds from the dump's clock anchors.
//!
//! The rate is derived over the whole run from the first and last anchors
//! (start of recording and dump time), so it is as exact as the OS
//! monotonic clock over that interval; the nominal rate is used only when
//! the anchors cannot give one. All arithmetic is integer (`i128`), so a
//! timestamp converts to the same nanosecond in every output.

use ringtrace_format::{Anchor, ClockInfo};

/// A linear map from ticks to monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timebase {
    origin_ticks: u64,
    origin_mono_ns: u64,
    origin_real_ns: u64,
    /// Nanoseconds per `ticks` ticks.
    ns: u64,
    ticks: u64,
}

/// Why ticks cannot be turned into time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimebaseError {
    /// No clock section was read.
    #[error("the dump has no clock section, so ticks cannot be converted to time")]
    NoClock,
    /// The anchors give no interval and there is no nominal rate.
    #[error("the clock section has {anchors} usable anchor(s) and no nominal rate, so the counter rate is unknown")]
    NoRate {
        /// Anchors present.
        anchors: usize,
    },
}

/// Where the rate came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateOrigin {
    /// The first and last anchors.
    Anchors,
    /// The nominal rate in the clock section.
    Nominal,
}

impl Timebase {
    /// The timebase for a clock section, and where its rate came from.
    pub fn new(info: &ClockInfo, anchors: &[Anchor]) -> Result<(Timebase, RateOrigin), TimebaseError> {
        let first = anchors.first().copied().unwrap_or_default();
        let last = anchors.last().copied().unwrap_or_default();
        let dticks = last.ticks.wrapping_sub(first.ticks);
        let dns = last.mono_ns.wrapping_sub(first.mono_ns);
        let forward = last.ticks > first.ticks && last.mono_ns > first.mono_ns;
        let origin = |ns, ticks| Timebase {
            origin_ticks: first.ticks,
            origin_mono_ns: first.mono_ns,
            origin_real_ns: first.real_ns,
            ns,
            ticks,
        };
        // Require a millisecond between anchors before trusting their ratio.
        if forward && dns >= 1_000_000 {
            return Ok((origin(dns, dticks), RateOrigin::Anchors));
        }
        if info.nominal_hz > 0 && !anchors.is_empty() {
            return Ok((origin(1_000_000_000, info.nominal_hz), RateOrigin::Nominal));
        }
        Err(TimebaseError::NoRate { anchors: anchors.len() })
    }

    /// Monotonic nanoseconds at `ticks` (negative before the clock's epoch is clamped to 0).
    pub fn ns(&self, ticks: u64) -> i128 {
        let delta = i128::from(ticks) - i128::from(self.origin_ticks);
        // |delta| < 2^64 and ns < 2^64: the product can overflow only for
        // anchors no real clock gives (a damaged dump); saturate then.
        let scaled = match delta.checked_mul(i128::from(self.ns)) {
            Some(p) => p.div_euclid(i128::from(self.ticks)),
            None if delta < 0 => i128::MIN / 2,
            None => i128::MAX / 2,
        };
        i128::from(self.origin_mono_ns) + scaled
    }

    /// Ticks per second.
    pub fn hz(&self) -> f64 {
        self.ticks as f64 * 1e9 / self.ns as f64
    }

    /// Realtime nanoseconds since the Unix epoch at monotonic nanoseconds `mono_ns`.
    pub fn realtime_ns(&self, mono_ns: i128) -> i128 {
        i128::from(self.origin_real_ns) + (mono_ns - i128::from(self.origin_mono_ns))
    }
}

#[cfg(test)]
mod tests {
    use ringtrace_format::{CounterKind, RateSource};

    use super::*;

    fn info(hz: u64) -> ClockInfo {
        ClockInfo { counter: CounterKind::X86Tsc, counter_bits: 64, nominal_hz: hz, rate_source: RateSource::Cpuid }
    }

    #[test]
    fn anchors_give_the_rate_over_the_whole_run() {
        // 3 GHz measured over 2 s, though the nominal rate says 2 GHz.
        let anchors = [
            Anchor { ticks: 1_000, mono_ns: 10_000, real_ns: 50_000 },
            Anchor { ticks: 6_000_001_000, mono_ns: 2_000_010_000, real_ns: 2_000_050_000 },
        ];
        let (tb, origin) = Timebase::new(&info(2_000_000_000), &anchors).unwrap();
        assert_eq!(origin, RateOrigin::Anchors);
        assert_eq!(tb.ns(1_000), 10_000);
        assert_eq!(tb.ns(3_001_000), 1_010_000);
        assert_eq!(tb.ns(0), 10_000 - 334); // floor of -333.33
        assert_eq!(tb.realtime_ns(tb.ns(3_001_000)), 1_050_000);
        assert!((tb.hz() - 3e9).abs() < 1.0);
    }

    #[test]
    fn absurd_anchors_saturate_instead_of_overflowing() {
        let anchors =
            [Anchor { ticks: 0, mono_ns: 0, real_ns: 0 }, Anchor { ticks: 1, mono_ns: u64::MAX, real_ns: u64::MAX }];
        let (tb, _) = Timebase::new(&info(0), &anchors).unwrap();
        assert!(tb.ns(u64::MAX) > 0);
        assert!(tb.realtime_ns(tb.ns(u64::MAX)) > 0);
    }

    #[test]
    fn one_anchor_falls_back_to_the_nominal_rate() {
        let anchors = [Anchor { ticks: 0, mono_ns: 0, real_ns: 0 }];
        let (tb, origin) = Timebase::new(&info(2_000_000_000), &anchors).unwrap();
        assert_eq!(origin, RateOrigin::Nominal);
        assert_eq!(tb.ns(2_000_000_000), 1_000_000_000);
        assert_eq!(Timebase::new(&info(0), &anchors), Err(TimebaseError::NoRate { anchors: 1 }));
    }
}
