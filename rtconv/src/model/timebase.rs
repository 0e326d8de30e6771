//! Converting counter ticks to nanoseconds from the dump's clock anchors.
//!
//! The rate is derived over the whole run from the first and last anchors
//! (start of recording and dump time), so it is as exact as the OS
//! monotonic clock over that interval; the nominal rate is used only when
//! the anchors cannot give one. All arithmetic is integer (`i128`), so a
//! timestamp converts to the same nanosecond in every output.

use ringtrace_format::{Anchor, ClockInfo};

use super::trace::Trace;

/// A linear map from ticks to monotonic nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timebase {
    origin_ticks: u64,
    origin_mono_ns: u64,
    origin_real_ns: u64,
    /// Nanoseconds per `ticks` ticks.
    ns: u64,
    ticks: u64,
    /// `ns / ticks` split for division-free conversion: whole part, and the
    /// fraction's remainder scaled by 2^64 (see [`Timebase::ns`]).
    whole: u64,
    frac: u64,
    /// `ticks - origin_ticks` below this converts in [`ns_i64`](Self::ns_i64)
    /// without checks for overflow: `origin_mono_ns + delta × (whole + 1)`
    /// fits `i64`. 0 (nothing) for an origin past `i64::MAX`.
    unchecked_below: u64,
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

impl Trace<'_> {
    /// The dump's timebase, and where its rate came from.
    pub fn timebase(&self) -> Result<(Timebase, RateOrigin), TimebaseError> {
        let clock = self.clock.as_ref().ok_or(TimebaseError::NoClock)?;
        Timebase::new(&clock.info, &clock.anchors)
    }
}

impl Timebase {
    /// The timebase for a clock section, and where its rate came from.
    pub fn new(info: &ClockInfo, anchors: &[Anchor]) -> Result<(Timebase, RateOrigin), TimebaseError> {
        let first = anchors.first().copied().unwrap_or_default();
        let last = anchors.last().copied().unwrap_or_default();
        let dticks = last.ticks.wrapping_sub(first.ticks);
        let dns = last.mono_ns.wrapping_sub(first.mono_ns);
        let forward = last.ticks > first.ticks && last.mono_ns > first.mono_ns;
        let origin = |ns, ticks| Timebase::with_rate(first, ns, ticks);
        // Require a millisecond between anchors before trusting their ratio.
        if forward && dns >= 1_000_000 {
            return Ok((origin(dns, dticks), RateOrigin::Anchors));
        }
        if info.nominal_hz > 0 && !anchors.is_empty() {
            return Ok((origin(1_000_000_000, info.nominal_hz), RateOrigin::Nominal));
        }
        Err(TimebaseError::NoRate { anchors: anchors.len() })
    }

    /// `ns` nanoseconds per `ticks` ticks (both non-zero) from `first`.
    fn with_rate(first: Anchor, ns: u64, ticks: u64) -> Timebase {
        let whole = ns / ticks;
        Timebase {
            origin_ticks: first.ticks,
            origin_mono_ns: first.mono_ns,
            origin_real_ns: first.real_ns,
            ns,
            ticks,
            whole,
            // The remainder is below `ticks`, so the quotient fits 64 bits.
            frac: ((u128::from(ns % ticks) << 64) / u128::from(ticks)) as u64,
            unchecked_below: (i64::MAX as u64)
                .checked_sub(first.mono_ns)
                .map_or(0, |room| room / whole.saturating_add(1) + 1),
        }
    }

    /// Monotonic nanoseconds at `ticks`: `origin + floor((ticks - origin_ticks) × ns / ticks)`.
    #[inline]
    pub fn ns(&self, ticks: u64) -> i128 {
        match self.since_origin(ticks) {
            Some(exact) => i128::from(self.origin_mono_ns) + i128::from(exact),
            None => self.ns_slow(ticks),
        }
    }

    /// [`ns`](Self::ns) clamped into `i64` (292 years of nanoseconds),
    /// without 128-bit arithmetic in the common case.
    #[inline(always)] // twice per span
    pub fn ns_i64(&self, ticks: u64) -> i64 {
        let delta = match ticks.checked_sub(self.origin_ticks) {
            Some(delta) if delta < self.unchecked_below => delta,
            _ => return self.ns_i64_checked(ticks),
        };
        // `since_origin` without its checks: with `hi < delta` (`frac < 2^64`), every sum is
        // at most `origin_mono_ns + delta × (whole + 1)`, which fits `i64` here.
        let p = u128::from(delta) * u128::from(self.frac);
        let (hi, lo) = ((p >> 64) as u64, p as u64);
        let approx = delta.wrapping_mul(self.whole).wrapping_add(hi);
        let exact = if lo.checked_add(delta).is_some() { approx } else { self.settled(delta, approx) };
        self.origin_mono_ns.wrapping_add(exact) as i64
    }

    /// [`ns_i64`](Self::ns_i64) with every check, for ticks before the
    /// origin or far after it.
    #[cold]
    #[inline(never)]
    fn ns_i64_checked(&self, ticks: u64) -> i64 {
        let fast = self.since_origin(ticks).and_then(|exact| self.origin_mono_ns.checked_add(exact));
        match fast.and_then(|ns| i64::try_from(ns).ok()) {
            Some(ns) => ns,
            None => self.ns(ticks).clamp(i64::MIN.into(), i64::MAX.into()) as i64,
        }
    }

    /// `floor((ticks - origin_ticks) × ns / ticks)` for `ticks` at or after
    /// the origin, when it fits 64 bits.
    ///
    /// Runs twice per span, so it avoids the 128-bit division. With `frac =
    /// floor(2^64 × (ns mod ticks) / ticks)`, `delta × frac = hi × 2^64 +
    /// lo` falls short of `2^64 × delta × (ns mod ticks) / ticks` by less
    /// than `delta`; so when `lo + delta` does not carry, `hi` is exactly the
    /// fractional part's floor, and otherwise (rarely: `delta` is far below
    /// 2^64) it is `hi` or `hi + 1`, which one multiplication settles.
    #[inline(always)]
    fn since_origin(&self, ticks: u64) -> Option<u64> {
        let delta = ticks.checked_sub(self.origin_ticks)?;
        let p = u128::from(delta) * u128::from(self.frac);
        let (hi, lo) = ((p >> 64) as u64, p as u64);
        let approx = delta.checked_mul(self.whole)?.checked_add(hi)?;
        if lo.checked_add(delta).is_some() {
            return Some(approx);
        }
        Some(self.settled(delta, approx))
    }

    /// `approx` or `approx + 1`, whichever is `floor(delta × ns / ticks)`
    /// (see [`since_origin`](Self::since_origin)).
    #[cold]
    #[inline(never)]
    fn settled(&self, delta: u64, approx: u64) -> u64 {
        let next = u128::from(approx) + 1;
        if next * u128::from(self.ticks) <= u128::from(delta) * u128::from(self.ns) { next as u64 } else { approx }
    }

    /// [`ns`](Self::ns) by 128-bit division, for any `ticks`.
    #[cold]
    #[inline(never)]
    fn ns_slow(&self, ticks: u64) -> i128 {
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
    fn the_division_free_path_agrees_with_division() {
        // Rates from a 32 kHz watch crystal to a 5 GHz TSC, deltas from 0 to 2^64 - 1.
        let mut rng = crate::model::test_dumps::XorShift(0x9E37_79B9_7F4A_7C15u64);
        let mut next = move || rng.next();
        for (ns, ticks) in [(1_000_000_000, 32_768), (3_000_000, 7_788_000), (7_777_777_777, 1), (1, 3), (999, 1000)] {
            let tb = Timebase::with_rate(Anchor { ticks: 1_000, mono_ns: 5, real_ns: 0 }, ns, ticks);
            for _ in 0..20_000 {
                let shift = next() % 64;
                let t = next() >> shift;
                assert_eq!(tb.ns(t), tb.ns_slow(t), "{ns}/{ticks} at {t}");
            }
            for t in [0, 999, 1_000, 1_001, u64::MAX, u64::MAX - 1] {
                assert_eq!(tb.ns(t), tb.ns_slow(t), "{ns}/{ticks} at {t}");
            }
        }
    }

    #[test]
    fn nanoseconds_in_i64_agree_with_division_on_both_sides_of_the_unchecked_range() {
        let mut rng = crate::model::test_dumps::XorShift(0x2545_F491_4F6C_DD1D);
        let mut next = move || rng.next();
        let clamped = |tb: &Timebase, t: u64| tb.ns_slow(t).clamp(i64::MIN.into(), i64::MAX.into()) as i64;
        let rates = [(1_000_000_000, 32_768), (3_000_000, 7_788_000), (7_777_777_777, 1), (1, 3), (999, 1000)];
        for (ns, ticks) in rates {
            // Origins near 0 and near the end of `i64`: the unchecked range is wide, then narrow.
            // Origin ticks near 0 and past 2^63 (ticks more than 2^63 before it, from a damaged dump).
            let origins = [5, (i64::MAX as u64) - 1_000_000, i64::MAX as u64, u64::MAX - 10];
            for (mono_ns, origin) in origins.into_iter().flat_map(|m| [(m, 1_000), (m, u64::MAX - 1_000)]) {
                let tb = Timebase::with_rate(Anchor { ticks: origin, mono_ns, real_ns: 0 }, ns, ticks);
                let edge = origin.saturating_add(tb.unchecked_below);
                let before = [0, 1, origin / 2, origin - 1];
                let near =
                    before.into_iter().chain([origin, origin + 1, edge - 1, edge, edge.saturating_add(1), u64::MAX]);
                for t in near.chain((0..20_000).map(|_| next() >> (next() % 64))) {
                    assert_eq!(tb.ns_i64(t), clamped(&tb, t), "{ns}/{ticks} from {mono_ns} at {t}");
                }
            }
        }
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
