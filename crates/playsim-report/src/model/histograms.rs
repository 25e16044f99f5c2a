//! Latency histograms in the report: the compact, lossless form ([`LatencyHistograms`]) that
//! lets another process merge a run's histograms again, and its conversions both ways.
//!
//! A histogram is kept as its non-empty buckets, `[value, count]`, where the value is the
//! bucket's highest equivalent value (what `iter_recorded` gives). Recording `count` of that
//! value into an empty histogram of [`HISTOGRAM_SIGFIG`] digits fills the same bucket, so the
//! histogram comes back exactly, and so do its percentiles: merging the buckets of several
//! runs and summarising gives what summarising the union of their samples gives.
//!
//! Buckets read from a file may be anything: a value beyond what a histogram can hold is
//! clamped to its highest trackable value, and counts saturate; nothing panics.

use hdrhistogram::Histogram;

use crate::model::percentiles::{SignedHistogram, HISTOGRAM_SIGFIG};
use crate::model::{Buckets, LatencyHistograms, Percentiles, SignedBuckets, StageLatency};

/// The non-empty buckets of `h`, in ascending order of value.
///
/// ```
/// use hdrhistogram::Histogram;
/// use playsim_report::{histograms, HISTOGRAM_SIGFIG};
///
/// let mut h = Histogram::<u64>::new(HISTOGRAM_SIGFIG).unwrap();
/// for ns in [5, 5, 1_000_000] {
///     h.record(ns).unwrap();
/// }
/// let buckets = histograms::buckets(&h);
/// assert_eq!(buckets, vec![[5, 2], [1_000_447, 1]]);
/// assert_eq!(histograms::histogram(&buckets).map(|back| back == h), Some(true));
/// ```
pub fn buckets(h: &Histogram<u64>) -> Buckets {
    h.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect()
}

/// The histogram of `buckets` (of [`HISTOGRAM_SIGFIG`] digits), or None in the impossible case
/// that hdrhistogram refuses that precision.
pub fn histogram(buckets: &[[u64; 2]]) -> Option<Histogram<u64>> {
    let mut h = Histogram::new(HISTOGRAM_SIGFIG).ok()?;
    record_buckets(&mut h, buckets);
    Some(h)
}

impl SignedHistogram {
    /// The buckets of both sides, in the report's compact form.
    pub fn buckets(&self) -> SignedBuckets {
        SignedBuckets {
            below_zero: self.neg.as_ref().map(buckets).unwrap_or_default(),
            at_or_above_zero: self.pos.as_ref().map(buckets).unwrap_or_default(),
        }
    }

    /// The histogram that `buckets` hold.
    pub fn from_buckets(buckets: &SignedBuckets) -> SignedHistogram {
        let mut h = SignedHistogram::new();
        for (side, from) in [(&mut h.neg, &buckets.below_zero), (&mut h.pos, &buckets.at_or_above_zero)] {
            if let Some(side) = side {
                record_buckets(side, from);
            }
        }
        h
    }
}

impl LatencyHistograms {
    /// Adds every value `other` holds, stage by stage.
    pub fn merge(&mut self, other: &LatencyHistograms) {
        for (into, from) in [
            (&mut self.open, &other.open),
            (&mut self.read, &other.read),
            (&mut self.close, &other.close),
            (&mut self.decode, &other.decode),
            (&mut self.output, &other.output),
        ] {
            merge_buckets(into, from);
        }
        for (into, from) in [(&mut self.slack, &other.slack), (&mut self.pacing_error, &other.pacing_error)] {
            merge_buckets(&mut into.below_zero, &from.below_zero);
            merge_buckets(&mut into.at_or_above_zero, &from.at_or_above_zero);
        }
    }

    /// The percentiles of every stage, as [`Percentiles::from_histogram_ns`] and
    /// [`SignedHistogram::percentiles`] give them for the histograms these buckets hold.
    pub fn percentiles(&self) -> StageLatency {
        let unsigned =
            |b: &Buckets| histogram(b).map(|h| Percentiles::from_histogram_ns(&h)).unwrap_or_default();
        let signed = |b: &SignedBuckets| SignedHistogram::from_buckets(b).percentiles();
        StageLatency {
            open: unsigned(&self.open),
            read: unsigned(&self.read),
            close: unsigned(&self.close),
            decode: unsigned(&self.decode),
            output: unsigned(&self.output),
            slack: signed(&self.slack),
            pacing_error: signed(&self.pacing_error),
        }
    }
}

/// Records each bucket's count of its value, in one step a bucket (a count of billions costs
/// no more than a count of one), clamped when the value is beyond what `h` can grow to.
fn record_buckets(h: &mut Histogram<u64>, buckets: &[[u64; 2]]) {
    for &[value, count] in buckets {
        if count > 0 && h.record_n(value, count).is_err() {
            h.saturating_record_n(value, count);
        }
    }
}

/// `into` ∪ `from`, as buckets.
fn merge_buckets(into: &mut Buckets, from: &Buckets) {
    if from.is_empty() {
        return;
    }
    if let Some(mut h) = histogram(into) {
        record_buckets(&mut h, from);
        *into = buckets(&h);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// A deterministic spread of values over six decades, some below zero.
    fn samples(seed: u64, n: usize) -> Vec<i64> {
        let mut x = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (0..n)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                let magnitude = ((x >> 33) % 1_000_000) * ((x >> 20) % 97 + 1);
                if x.is_multiple_of(5) {
                    -(magnitude as i64)
                } else {
                    magnitude as i64
                }
            })
            .collect()
    }

    fn record_all(values: &[i64]) -> (Histogram<u64>, SignedHistogram) {
        let mut unsigned = Histogram::<u64>::new(HISTOGRAM_SIGFIG).unwrap();
        let mut signed = SignedHistogram::new();
        for &v in values {
            unsigned.record(v.unsigned_abs()).unwrap();
            signed.record(v);
        }
        (unsigned, signed)
    }

    fn compact(values: &[i64]) -> LatencyHistograms {
        let (unsigned, signed) = record_all(values);
        let b = buckets(&unsigned);
        LatencyHistograms {
            open: b.clone(),
            read: b.clone(),
            close: b.clone(),
            decode: b.clone(),
            output: b,
            slack: signed.buckets(),
            pacing_error: signed.buckets(),
        }
    }

    #[test]
    fn buckets_give_back_the_same_histogram() {
        let (unsigned, signed) = record_all(&samples(1, 5_000));
        let back = histogram(&buckets(&unsigned)).unwrap();
        assert_eq!(back, unsigned);
        assert_eq!(buckets(&back), buckets(&unsigned));
        let signed_back = SignedHistogram::from_buckets(&signed.buckets());
        assert_eq!(signed_back.percentiles(), signed.percentiles());
        assert_eq!(signed_back.len(), 5_000);
    }

    #[test]
    fn merge_then_summarise_equals_summarising_the_union() {
        let parts = [samples(1, 3_000), samples(2, 700), samples(3, 1), samples(4, 12_000)];
        let union: Vec<i64> = parts.iter().flatten().copied().collect();
        let mut merged = LatencyHistograms::default();
        for part in &parts {
            merged.merge(&compact(part));
        }
        assert_eq!(merged, compact(&union), "the buckets are the union's");
        let (unsigned, signed) = record_all(&union);
        let expected = Percentiles::from_histogram_ns(&unsigned);
        let got = merged.percentiles();
        assert_eq!(got.open, expected);
        assert_eq!(got.output, expected);
        assert_eq!(got.slack, signed.percentiles());
        assert_eq!(got.pacing_error.count, union.len() as u64);
        assert!(got.slack.min_ms < 0.0, "values below zero stay below zero");
    }

    #[test]
    fn merging_nothing_changes_nothing() {
        let one = compact(&samples(9, 100));
        let mut merged = one.clone();
        merged.merge(&LatencyHistograms::default());
        assert_eq!(merged, one);
        let mut empty = LatencyHistograms::default();
        empty.merge(&LatencyHistograms::default());
        assert_eq!(empty.percentiles(), StageLatency::default());
    }

    #[test]
    fn hostile_buckets_are_clamped_not_a_panic() {
        let hostile = LatencyHistograms {
            read: vec![[u64::MAX, u64::MAX], [0, 3], [7, 0], [5, u64::MAX]],
            slack: SignedBuckets { below_zero: vec![[u64::MAX, 2]], at_or_above_zero: vec![[1, u64::MAX]] },
            ..LatencyHistograms::default()
        };
        let mut merged = hostile.clone();
        merged.merge(&hostile);
        let p = merged.percentiles();
        assert_eq!(p.read.count, u64::MAX, "counts saturate");
        assert!(p.read.max_ms > 0.0);
        assert_eq!(p.slack.count, u64::MAX);
        assert!(p.slack.min_ms < 0.0);
    }
}
