//! Latency summaries from hdrhistogram: [`Percentiles`] from a histogram of
//! nanoseconds, and [`SignedHistogram`] for quantities that can be negative.
//!
//! Percentiles use the nearest-rank method (the value at rank `ceil(q * n)`),
//! computed with integer arithmetic so that, say, p99.9 of 1000 samples is
//! exactly the 999th. A value is reported as the far edge of its histogram
//! bucket (away from zero), as hdrhistogram itself does, so a figure is never
//! better than the samples behind it.

use std::ops::AddAssign;

use hdrhistogram::Histogram;

use crate::model::Percentiles;

/// Significant decimal digits kept by the histograms this crate creates.
pub const HISTOGRAM_SIGFIG: u8 = 3;

/// The quantiles reported, as parts per 10,000.
const P50: u64 = 5_000;
const P90: u64 = 9_000;
const P99: u64 = 9_900;
const P999: u64 = 9_990;

impl Percentiles {
    /// Summarises a histogram of values recorded in nanoseconds, in milliseconds.
    ///
    /// An empty histogram gives all zeros and a count of 0.
    ///
    /// ```
    /// use hdrhistogram::Histogram;
    /// use playsim_report::Percentiles;
    ///
    /// let mut h = Histogram::<u64>::new(3).unwrap();
    /// for ns in 1..=1000 {
    ///     h.record(ns).unwrap();
    /// }
    /// let p = Percentiles::from_histogram_ns(&h);
    /// assert_eq!((p.count, p.p50_ms, p.p999_ms, p.max_ms), (1000, 0.0005, 0.000999, 0.001));
    /// ```
    pub fn from_histogram_ns(h: &Histogram<u64>) -> Percentiles {
        summarise(None, Some(h))
    }
}

/// A histogram of signed nanoseconds, such as slack or pacing error.
///
/// Negative values are kept by magnitude in one histogram and the rest in
/// another; [`SignedHistogram::percentiles`] ranks them together, so the median
/// of a set that is mostly negative is negative. Per-worker histograms are
/// merged with `+=`.
#[derive(Clone, Debug)]
pub struct SignedHistogram {
    // `Histogram::new` fails only for a precision above 5 digits, never for
    // HISTOGRAM_SIGFIG; holding an Option keeps that impossible case panic-free.
    pub(crate) neg: Option<Histogram<u64>>,
    pub(crate) pos: Option<Histogram<u64>>,
}

impl SignedHistogram {
    /// An empty histogram with [`HISTOGRAM_SIGFIG`] significant digits that
    /// grows to fit what it is given.
    pub fn new() -> SignedHistogram {
        SignedHistogram {
            neg: Histogram::new(HISTOGRAM_SIGFIG).ok(),
            pos: Histogram::new(HISTOGRAM_SIGFIG).ok(),
        }
    }

    /// Records one value, in nanoseconds.
    pub fn record(&mut self, ns: i64) {
        let (side, magnitude) =
            if ns < 0 { (&mut self.neg, ns.unsigned_abs()) } else { (&mut self.pos, ns.unsigned_abs()) };
        if let Some(h) = side {
            record_saturating(h, magnitude);
        }
    }

    /// Adds every value recorded in `other`.
    pub fn merge(&mut self, other: &SignedHistogram) {
        merge_side(&mut self.neg, other.neg.as_ref());
        merge_side(&mut self.pos, other.pos.as_ref());
    }

    /// Values recorded.
    pub fn len(&self) -> u64 {
        self.neg.as_ref().map_or(0, Histogram::len) + self.pos.as_ref().map_or(0, Histogram::len)
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The summary in milliseconds, with signs: values below zero stay below zero.
    pub fn percentiles(&self) -> Percentiles {
        summarise(self.neg.as_ref(), self.pos.as_ref())
    }
}

impl Default for SignedHistogram {
    fn default() -> SignedHistogram {
        SignedHistogram::new()
    }
}

impl AddAssign<&SignedHistogram> for SignedHistogram {
    fn add_assign(&mut self, other: &SignedHistogram) {
        self.merge(other);
    }
}

impl AddAssign<SignedHistogram> for SignedHistogram {
    fn add_assign(&mut self, other: SignedHistogram) {
        self.merge(&other);
    }
}

/// Records a value, growing the histogram if it can and clamping if it cannot.
fn record_saturating(h: &mut Histogram<u64>, value: u64) {
    if h.record(value).is_err() {
        h.saturating_record(value);
    }
}

fn merge_side(into: &mut Option<Histogram<u64>>, from: Option<&Histogram<u64>>) {
    let Some(from) = from else { return };
    match into {
        Some(h) => {
            // `add` fails only when a value is beyond what `h` can grow to;
            // then record value by value, clamped, rather than lose them all.
            if h.add(from).is_err() {
                // A bucket at a time, whatever its count.
                for v in from.iter_recorded() {
                    let (value, count) = (v.value_iterated_to(), v.count_at_value());
                    if h.record_n(value, count).is_err() {
                        h.saturating_record_n(value, count);
                    }
                }
            }
        }
        None => *into = Some(from.clone()),
    }
}

/// Summarises the values `-neg ∪ pos` (`neg` holds magnitudes of negative values).
fn summarise(neg: Option<&Histogram<u64>>, pos: Option<&Histogram<u64>>) -> Percentiles {
    let neg = neg.filter(|h| !h.is_empty());
    let pos = pos.filter(|h| !h.is_empty());
    let n_neg = neg.map_or(0, Histogram::len);
    let n_pos = pos.map_or(0, Histogram::len);
    // Saturating: buckets read from a file may hold any count.
    let count = n_neg.saturating_add(n_pos);
    if count == 0 {
        return Percentiles::default();
    }
    let ranked = Ranked { neg, pos, n_neg };
    let sum_ns = i128::try_from(pos.map_or(0, sum)).unwrap_or(i128::MAX)
        - i128::try_from(neg.map_or(0, sum)).unwrap_or(i128::MAX);
    let min_ns = match (neg, pos) {
        (Some(neg), _) => -(neg.max() as f64),
        (None, Some(pos)) => pos.min() as f64,
        (None, None) => 0.0,
    };
    let max_ns = match (pos, neg) {
        (Some(pos), _) => pos.max() as f64,
        (None, Some(neg)) => -(neg.min() as f64),
        (None, None) => 0.0,
    };
    Percentiles {
        count,
        min_ms: ms(min_ns),
        mean_ms: ms(sum_ns as f64 / count as f64),
        p50_ms: ms(ranked.at_quantile(P50, count)),
        p90_ms: ms(ranked.at_quantile(P90, count)),
        p99_ms: ms(ranked.at_quantile(P99, count)),
        p999_ms: ms(ranked.at_quantile(P999, count)),
        max_ms: ms(max_ns),
    }
}

/// The exact sum of the recorded values, each taken as the middle of its bucket
/// (as `Histogram::mean` does, but without its rounding at every step).
fn sum(h: &Histogram<u64>) -> u128 {
    h.iter_recorded()
        .map(|v| u128::from(h.median_equivalent(v.value_iterated_to())) * u128::from(v.count_at_value()))
        .fold(0, u128::saturating_add)
}

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The union of the negative and non-negative sides, in ascending order.
struct Ranked<'a> {
    neg: Option<&'a Histogram<u64>>,
    pos: Option<&'a Histogram<u64>>,
    n_neg: u64,
}

impl Ranked<'_> {
    /// The value at the nearest rank for `per_10k / 10_000` of `count` values.
    fn at_quantile(&self, per_10k: u64, count: u64) -> f64 {
        let rank = (u128::from(count) * u128::from(per_10k)).div_ceil(10_000);
        let rank = u64::try_from(rank).unwrap_or(u64::MAX).clamp(1, count);
        self.at_rank(rank)
    }

    /// The value of 1-based ascending rank `rank`.
    fn at_rank(&self, rank: u64) -> f64 {
        if rank <= self.n_neg {
            // The negative side ascends as its magnitudes descend.
            let k = self.n_neg - rank + 1;
            -(self.neg.map_or(0, |h| magnitude_at_rank(h, k)) as f64)
        } else {
            self.pos.map_or(0, |h| magnitude_at_rank(h, rank - self.n_neg)) as f64
        }
    }
}

/// The far edge of the bucket holding the value of 1-based ascending rank `k`.
fn magnitude_at_rank(h: &Histogram<u64>, k: u64) -> u64 {
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen = seen.saturating_add(v.count_at_value());
        if seen >= k {
            return v.value_iterated_to();
        }
    }
    h.max()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(HISTOGRAM_SIGFIG).unwrap();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn empty_histogram_is_all_zero() {
        assert_eq!(Percentiles::from_histogram_ns(&hist([])), Percentiles::default());
        assert_eq!(SignedHistogram::new().percentiles(), Percentiles::default());
    }

    #[test]
    fn unsigned_percentiles_are_exact_on_small_values() {
        // Values below 2048 are held exactly at 3 significant digits.
        let p = Percentiles::from_histogram_ns(&hist(1..=1000));
        assert_eq!(
            p,
            Percentiles {
                count: 1000,
                min_ms: 0.000001,
                mean_ms: 0.0005005,
                p50_ms: 0.0005,
                p90_ms: 0.0009,
                p99_ms: 0.00099,
                p999_ms: 0.000999,
                max_ms: 0.001,
            }
        );
    }

    #[test]
    fn unsigned_percentiles_agree_with_hdrhistogram() {
        // Millisecond-scale values land in wider buckets; the far edge is reported.
        let h = hist((1..=200).map(|i| i * 997_001));
        let p = Percentiles::from_histogram_ns(&h);
        for (q, got) in [(0.5, p.p50_ms), (0.9, p.p90_ms), (0.99, p.p99_ms)] {
            assert_eq!(got, h.value_at_quantile(q) as f64 / 1e6, "q {q}");
        }
        assert_eq!(p.max_ms, h.max() as f64 / 1e6);
        assert_eq!(p.min_ms, h.min() as f64 / 1e6);
        // Within the histogram's 0.1 % precision of the exact answers.
        assert!((p.p50_ms - 100.0 * 0.997001).abs() < 0.1);
        assert!((p.max_ms - 200.0 * 0.997001).abs() < 0.2);
    }

    #[test]
    fn single_value() {
        let p = Percentiles::from_histogram_ns(&hist([1500]));
        assert_eq!(
            (p.count, p.min_ms, p.p50_ms, p.p999_ms, p.max_ms, p.mean_ms),
            (1, 0.0015, 0.0015, 0.0015, 0.0015, 0.0015)
        );
    }

    #[test]
    fn signed_percentiles_keep_signs() {
        // -900..=99 ns: 900 negative values, 100 non-negative.
        let mut h = SignedHistogram::new();
        for ns in -900..=99 {
            h.record(ns);
        }
        let p = h.percentiles();
        assert_eq!(
            p,
            Percentiles {
                count: 1000,
                min_ms: -0.0009,
                mean_ms: -0.0004005,
                p50_ms: -0.000401,
                p90_ms: -0.000001,
                p99_ms: 0.000089,
                p999_ms: 0.000098,
                max_ms: 0.000099,
            }
        );
    }

    #[test]
    fn all_negative() {
        let mut h = SignedHistogram::new();
        for ns in [-10, -20, -30, -40] {
            h.record(ns);
        }
        let p = h.percentiles();
        assert_eq!((p.min_ms, p.p50_ms, p.p90_ms, p.max_ms), (-0.00004, -0.00003, -0.00001, -0.00001));
        assert_eq!(p.mean_ms, -0.000025);
    }

    #[test]
    fn zero_counts_as_non_negative() {
        let mut h = SignedHistogram::new();
        h.record(0);
        h.record(-5);
        let p = h.percentiles();
        assert_eq!((p.count, p.min_ms, p.p50_ms, p.max_ms), (2, -0.000005, -0.000005, 0.0));
    }

    #[test]
    fn merge_equals_recording_together() {
        let mut a = SignedHistogram::new();
        let mut b = SignedHistogram::new();
        let mut all = SignedHistogram::new();
        for ns in -500..500_i64 {
            let v = ns * 12_345;
            if ns % 3 == 0 { &mut a } else { &mut b }.record(v);
            all.record(v);
        }
        a += &b;
        assert_eq!(a.len(), 1000);
        assert_eq!(a.percentiles(), all.percentiles());
        a += SignedHistogram::default();
        assert_eq!(a.percentiles(), all.percentiles());
    }

    #[test]
    fn extremes_do_not_panic() {
        let mut h = SignedHistogram::new();
        h.record(i64::MIN);
        h.record(i64::MAX);
        h.record(0);
        let p = h.percentiles();
        assert_eq!(p.count, 3);
        assert!(p.min_ms < 0.0 && p.max_ms > 0.0);
    }
}
