//! Whether two sets of call durations differ by more than noise: the
//! Mann–Whitney U test on their histograms.
//!
//! Durations within one histogram bucket count as ties (the test's tie
//! correction covers them); the p-value comes from the normal approximation
//! with a continuity correction, as `scipy.stats.mannwhitneyu(...,
//! method="asymptotic")` gives it — the suite compares the two.

/// The test's outcome for a base and a new set of durations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shift {
    /// Two-sided p-value: how likely a difference at least this large is
    /// when both sets come from one distribution.
    pub p_value: f64,
    /// The probability that a new call lasts longer than a base call (ties
    /// count half): 0.5 is no shift, above is slower.
    pub slower: f64,
}

/// The Mann–Whitney U test of `base` against `new`, each (duration, calls)
/// pairs in ascending order of duration; `None` when either has no calls.
pub fn mann_whitney(base: &[(u64, u64)], new: &[(u64, u64)]) -> Option<Shift> {
    let n1: f64 = base.iter().map(|&(_, c)| c as f64).sum();
    let n2: f64 = new.iter().map(|&(_, c)| c as f64).sum();
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    // Walk both in order of duration: each distinct duration is one group of tied ranks.
    let (mut i, mut j) = (0, 0);
    let (mut ranked, mut rank_sum_base, mut ties) = (0.0f64, 0.0f64, 0.0f64);
    while i < base.len() || j < new.len() {
        let value = match (base.get(i), new.get(j)) {
            (Some(a), Some(b)) => a.0.min(b.0),
            (Some(a), None) => a.0,
            (None, Some(b)) => b.0,
            (None, None) => break,
        };
        let take = |side: &[(u64, u64)], k: &mut usize| -> f64 {
            match side.get(*k) {
                Some(&(v, c)) if v == value => {
                    *k += 1;
                    c as f64
                }
                _ => 0.0,
            }
        };
        let (a, b) = (take(base, &mut i), take(new, &mut j));
        let t = a + b;
        // Ranks ranked+1 ..= ranked+t share their mean.
        rank_sum_base += a * (ranked + (t + 1.0) / 2.0);
        ties += t * t * t - t;
        ranked += t;
    }
    let u_base = rank_sum_base - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let variance = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    let slower = (n1 * n2 - u_base) / (n1 * n2);
    if variance <= 0.0 {
        // Every call of both sets lasted the same.
        return Some(Shift { p_value: 1.0, slower });
    }
    let z = ((u_base - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    let p_value = libm::erfc(z / std::f64::consts::SQRT_2).min(1.0);
    Some(Shift { p_value, slower })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// U counted pair by pair, as defined: base calls longer than new calls, ties half.
    fn u_by_pairs(base: &[u64], new: &[u64]) -> f64 {
        let mut u = 0.0;
        for &a in base {
            for &b in new {
                u += if a > b {
                    1.0
                } else if a == b {
                    0.5
                } else {
                    0.0
                };
            }
        }
        u
    }

    fn counted(values: &[u64]) -> Vec<(u64, u64)> {
        let mut map = std::collections::BTreeMap::new();
        for &v in values {
            *map.entry(v).or_insert(0) += 1;
        }
        map.into_iter().collect()
    }

    #[test]
    fn the_shift_is_u_counted_pair_by_pair() {
        let mut rng = crate::model::test_dumps::XorShift(0x9e37_79b9_7f4a_7c15u64);
        let mut next = move |m: u64| rng.below(m);
        for round in 0..50 {
            let base: Vec<u64> = (0..1 + next(40)).map(|_| 100 + next(20)).collect();
            let new: Vec<u64> = (0..1 + next(40)).map(|_| 100 + round % 5 + next(20)).collect();
            let shift = mann_whitney(&counted(&base), &counted(&new)).unwrap();
            let pairs = (base.len() * new.len()) as f64;
            let expected = 1.0 - u_by_pairs(&base, &new) / pairs;
            assert!((shift.slower - expected).abs() < 1e-12, "{} vs {expected}", shift.slower);
            assert!((0.0..=1.0).contains(&shift.p_value));
        }
        assert_eq!(mann_whitney(&[], &[(5, 1)]), None);
        assert_eq!(mann_whitney(&[(5, 3)], &[(5, 4)]).unwrap().p_value, 1.0);
    }
}
