//! `--fail-on METRIC>LIMIT`: the changes a CI job fails on.

use super::{Change, Verdict};
use crate::stats::Row;

/// A figure of a function compared between the sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Calls.
    Calls,
    /// Total time of its outermost calls.
    Total,
    /// Self time.
    SelfTime,
    /// Mean call duration.
    Mean,
    /// Median call duration.
    P50,
    /// 90th percentile call duration.
    P90,
    /// 99th percentile call duration.
    P99,
    /// Longest call.
    Max,
}

impl Metric {
    /// Every metric, as `--fail-on` names them.
    pub const ALL: [(&'static str, Metric); 8] = [
        ("calls", Metric::Calls),
        ("total", Metric::Total),
        ("self", Metric::SelfTime),
        ("mean", Metric::Mean),
        ("p50", Metric::P50),
        ("p90", Metric::P90),
        ("p99", Metric::P99),
        ("max", Metric::Max),
    ];

    /// Its name in `--fail-on`, CSV and JSON.
    pub fn name(self) -> &'static str {
        Metric::ALL.iter().find(|(_, m)| *m == self).map_or("?", |(n, _)| n)
    }

    /// Its value in `row` (ns, or calls).
    pub fn of(self, row: &Row) -> u64 {
        match self {
            Metric::Calls => row.calls,
            Metric::Total => row.total_ns,
            Metric::SelfTime => row.self_ns,
            Metric::Mean => row.mean_ns.round() as u64,
            Metric::P50 => row.p50_ns,
            Metric::P90 => row.p90_ns,
            Metric::P99 => row.p99_ns,
            Metric::Max => row.max_ns,
        }
    }
}

/// How much a metric may grow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// By this fraction of its base value (`5%`: 0.05).
    Relative(f64),
    /// By this much: ns for times (`2ms`), a count for calls.
    Absolute(u64),
}

/// `METRIC>LIMIT`: a function fails when its METRIC grows by more than
/// LIMIT — and, for the times, when its calls got significantly slower
/// (a change the test cannot tell from noise fails nothing). A function
/// only in the new dumps grows by its whole value: it fails absolute
/// limits it exceeds, never relative ones.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As given.
    pub text: String,
    /// The figure compared.
    pub metric: Metric,
    /// How much it may grow.
    pub limit: Limit,
}

impl Threshold {
    /// Parses `self>5%`, `p99>10%`, `total>2ms`, `calls>1000`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad = || {
            let names: Vec<&str> = Metric::ALL.iter().map(|(n, _)| *n).collect();
            format!(
                "{text:?}: give METRIC>LIMIT, METRIC one of {}, LIMIT a percentage (5%) or an amount (2ms, 500us; \
                 a count for calls)",
                names.join(", ")
            )
        };
        let (name, limit) = text.split_once('>').ok_or_else(bad)?;
        let metric = Metric::ALL.iter().find(|(n, _)| *n == name.trim()).map(|&(_, m)| m).ok_or_else(bad)?;
        let limit = limit.trim();
        let limit = match limit.strip_suffix('%') {
            Some(percent) => {
                let p: f64 = percent.trim().parse().map_err(|_| bad())?;
                if !p.is_finite() || p < 0.0 {
                    return Err(bad());
                }
                Limit::Relative(p / 100.0)
            }
            None if metric == Metric::Calls => Limit::Absolute(limit.parse().map_err(|_| bad())?),
            None => Limit::Absolute(crate::model::parse_duration_ns(limit).map_err(|_| bad())?),
        };
        Ok(Threshold { text: text.to_string(), metric, limit })
    }

    /// Whether `change` crosses this threshold.
    pub fn crossed_by(&self, change: &Change) -> bool {
        let grew = match self.limit {
            Limit::Relative(limit) => change.relative(self.metric).is_some_and(|r| r > limit),
            Limit::Absolute(limit) => change.delta(self.metric) > i128::from(limit),
        };
        let real = match change.verdict() {
            Verdict::Slower | Verdict::Added => true,
            Verdict::Faster | Verdict::Same | Verdict::Removed => self.metric == Metric::Calls,
        };
        grew && real
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_as_written() {
        let t = Threshold::parse("self>5%").unwrap();
        assert_eq!((t.metric, t.limit), (Metric::SelfTime, Limit::Relative(0.05)));
        assert_eq!(Threshold::parse("p99 > 2.5ms").unwrap().limit, Limit::Absolute(2_500_000));
        assert_eq!(Threshold::parse("calls>1000").unwrap().limit, Limit::Absolute(1000));
        for bad in ["self", "self>", "speed>5%", "self>-5%", "calls>1.5", "self>5 apples"] {
            assert!(Threshold::parse(bad).is_err(), "{bad}");
        }
    }
}
