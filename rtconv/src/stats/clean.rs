//! Outlier cleaning for `rtconv stats --clean`, after Latte's bucket-max IQR:
//! the calls of a function, in the order they happened, are grouped into at
//! most 1,000 buckets of consecutive calls; the interquartile range of the
//! buckets' maxima gives the fence `Q3 + 1.5 × IQR`, and calls longer than
//! the fence are left out of the distribution figures. Working on bucket
//! maxima rather than on every call keeps a long tail of slow calls from
//! widening the fence that is meant to exclude it.

/// Buckets at most.
const BUCKETS: usize = 1_000;

/// The fence above which calls are outliers, or `None` with fewer than four calls.
pub fn fence(durations: &[u64]) -> Option<u64> {
    if durations.len() < 4 {
        return None;
    }
    let size = durations.len().div_ceil(BUCKETS);
    let mut maxima: Vec<u64> = durations.chunks(size).map(|b| b.iter().copied().max().unwrap_or(0)).collect();
    maxima.sort_unstable();
    let quartile = |q: f64| maxima[((maxima.len() - 1) as f64 * q).round() as usize];
    let (q1, q3) = (quartile(0.25), quartile(0.75));
    Some(q3.saturating_add((q3 - q1).saturating_mul(3) / 2))
}

#[cfg(test)]
mod tests {
    use super::fence;

    #[test]
    fn a_few_slow_calls_fall_outside_the_fence() {
        let mut calls = vec![1_000u64; 100];
        calls[10] = 1_000_000;
        calls[90] = 2_000_000;
        let f = fence(&calls).unwrap();
        assert_eq!(f, 1_000, "Q1 = Q3 = 1000");
        assert_eq!(calls.iter().filter(|&&c| c > f).count(), 2);
        assert_eq!(fence(&[5, 6, 7]), None);
    }
}
