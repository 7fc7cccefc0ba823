//! Medians over repetitions, ratios between transports and latency percentiles.

use hdrhistogram::Histogram;

/// Median, minimum and maximum of one figure over the repetitions of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Median (the mean of the two middle values for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// The summary of `values`; all zero for none.
    pub fn of(values: &[f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Summary {
            median,
            min: sorted[0],
            max: sorted[n - 1],
        }
    }

    /// Per-repetition ratios `num[i] / den[i]` of two figures measured in the same repetitions,
    /// summarised. Pairing by repetition keeps the noise that hit both out of the ratio.
    pub fn ratio(num: &[f64], den: &[f64]) -> Summary {
        let ratios: Vec<f64> = num
            .iter()
            .zip(den)
            .filter(|&(_, &d)| d > 0.0)
            .map(|(&n, &d)| n / d)
            .collect();
        Summary::of(&ratios)
    }

    /// `median (min..max)` with `digits` decimals, each value scaled by `scale`.
    pub fn show(&self, scale: f64, digits: usize) -> String {
        format!(
            "{:.digits$} ({:.digits$}..{:.digits$})",
            self.median * scale,
            self.min * scale,
            self.max * scale
        )
    }

    /// As JSON: `{"median": .., "min": .., "max": ..}` scaled by `scale`.
    pub fn json(&self, scale: f64) -> serde_json::Value {
        serde_json::json!({
            "median": self.median * scale,
            "min": self.min * scale,
            "max": self.max * scale,
        })
    }
}

/// Latency percentiles of one listener, from an HdrHistogram of nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Percentiles {
    /// Samples recorded.
    pub count: u64,
    /// Median, µs.
    pub p50: f64,
    /// 90th percentile, µs.
    pub p90: f64,
    /// 99th percentile, µs.
    pub p99: f64,
    /// 99.9th percentile, µs.
    pub p999: f64,
    /// Largest sample, µs.
    pub max: f64,
}

/// A latency histogram in nanoseconds, 3 significant digits, up to 100 s.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid histogram bounds")
}

/// Records `samples` (ns), clamped into the histogram's range.
pub fn record(hist: &mut Histogram<u64>, samples: &[u64]) {
    for &s in samples {
        hist.saturating_record(s.max(1));
    }
}

/// The percentiles of `hist`, in µs.
pub fn percentiles(hist: &Histogram<u64>) -> Percentiles {
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    Percentiles {
        count: hist.len(),
        p50: us(0.5),
        p90: us(0.9),
        p99: us(0.99),
        p999: us(0.999),
        max: hist.max() as f64 / 1000.0,
    }
}

/// The percentiles of `samples` (ns) alone, in µs.
pub fn percentiles_of(samples: &[u64]) -> Percentiles {
    let mut hist = histogram();
    record(&mut hist, samples);
    percentiles(&hist)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_paired_ratio() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.median, s.min, s.max), (2.5, 1.0, 10.0));
        let r = Summary::ratio(&[2.0, 4.0, 9.0], &[1.0, 1.0, 3.0]);
        assert_eq!((r.median, r.min, r.max), (3.0, 2.0, 4.0));
    }
}
