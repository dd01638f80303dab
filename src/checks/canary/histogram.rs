//! Prometheus classic histograms (`le` buckets, cumulative counts): cleaning
//! what `increase()` returns, PromQL's quantile interpolation, the CDF and the
//! effect a latency limit represents. Separate because it models Prometheus'
//! data, not a statistical test.

use serde::Serialize;

/// A Prometheus classic histogram over one window: upper bounds (`le`,
/// ascending, last one +Inf) and cumulative counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub(crate) struct Histogram {
    pub bounds: Vec<f64>,
    pub cumulative: Vec<f64>,
}

impl Histogram {
    /// From (le, cumulative count) pairs in any order. Counts from
    /// `increase()` can dip from extrapolation, so they are made monotonic the
    /// way Prometheus' `histogram_quantile` does.
    ///
    /// A NaN bound or a non-finite or negative count (Prometheus answers
    /// "NaN" and "+Inf" as values) makes the whole histogram empty, so the
    /// gate reads NO DATA instead of judging the buckets that were left.
    pub(crate) fn from_buckets(mut b: Vec<(f64, f64)>) -> Histogram {
        if b.iter().any(|(le, c)| le.is_nan() || !c.is_finite() || *c < 0.0) {
            return Histogram::default();
        }
        b.sort_by(|x, y| x.0.total_cmp(&y.0));
        b.dedup_by(|x, y| x.0 == y.0);
        let mut h = Histogram::default();
        let mut max = 0f64;
        for (le, c) in b {
            max = max.max(if c.is_finite() { c } else { 0.0 });
            h.bounds.push(le);
            h.cumulative.push(max);
        }
        h
    }

    pub(crate) fn total(&self) -> f64 {
        match self.bounds.last() {
            Some(le) if le.is_infinite() => *self.cumulative.last().unwrap_or(&0.0),
            _ => 0.0,
        }
    }

    /// Counts per bucket (not cumulative).
    pub(crate) fn bin_counts(&self) -> Vec<f64> {
        let mut prev = 0.0;
        self.cumulative
            .iter()
            .map(|c| {
                let d = c - prev;
                prev = *c;
                d
            })
            .collect()
    }

    /// Where the first bucket starts, as `histogram_quantile` has it: at 0,
    /// or at its own bound when that is not above 0 (a bucket of zero width).
    fn first_lower(&self) -> f64 {
        self.bounds.first().map_or(0.0, |b| b.min(0.0))
    }

    /// The same interpolation as PromQL's `histogram_quantile`: linear inside
    /// the bucket, the first bucket starts at 0, a rank in +Inf returns the
    /// highest finite bound. The gates ask Prometheus for quantiles; this
    /// twin pins the bucket model the local statistics (`cdf`) share with it.
    #[cfg(test)]
    pub(crate) fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total <= 0.0 || self.bounds.len() < 2 {
            return None;
        }
        let rank = q * total;
        let i = self.cumulative.iter().position(|c| *c >= rank)?;
        if self.bounds[i].is_infinite() {
            return Some(self.bounds[self.bounds.len() - 2]);
        }
        let (lo, below) = if i == 0 { (self.first_lower(), 0.0) } else { (self.bounds[i - 1], self.cumulative[i - 1]) };
        let in_bucket = self.cumulative[i] - below;
        if in_bucket <= 0.0 {
            return Some(self.bounds[i]);
        }
        Some(lo + (self.bounds[i] - lo) * (rank - below) / in_bucket)
    }

    /// Interpolated CDF (same model as `quantile`): fraction of samples <= x.
    pub(crate) fn cdf(&self, x: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        let mut below = 0.0;
        let mut lo = self.first_lower();
        for (le, c) in self.bounds.iter().zip(&self.cumulative) {
            if le.is_infinite() {
                // Mass in +Inf sits above every finite bound.
                return below / total;
            }
            if x < *le {
                // Linear inside the bucket. A bucket of zero width holds its
                // mass at its bound, none of it below x: (x - lo) < 0 over a
                // zero width is -inf, clamped to 0.
                let frac = ((x - lo) / (le - lo)).clamp(0.0, 1.0);
                return (below + (c - below) * frac) / total;
            }
            below = *c;
            lo = *le;
        }
        // Not reached: a histogram with samples (total > 0) ends at +Inf.
        1.0
    }

    /// Approximate P(s·X > Y) for X, Y independent draws from this
    /// histogram: the effect a latency limit of `s` × baseline represents.
    pub(crate) fn superiority_scaled(&self, s: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.5;
        }
        let mut acc = 0.0;
        // The bucket model `cdf` integrates against: a first bucket bounded at
        // or below 0 holds its mass at its bound.
        let mut lo = self.first_lower();
        let mut below = 0.0;
        const STEPS: usize = 64;
        for (le, c) in self.bounds.iter().zip(&self.cumulative) {
            let w = (c - below) / total;
            if le.is_infinite() {
                // Treat +Inf mass as sitting at the highest finite bound, as
                // histogram_quantile does; scaled, it beats everything below.
                acc += w * self.cdf(lo * s);
                break;
            }
            let mut m = 0.0;
            for k in 0..STEPS {
                let x = lo + (le - lo) * (k as f64 + 0.5) / STEPS as f64;
                m += self.cdf(s * x);
            }
            acc += w * m / STEPS as f64;
            below = *c;
            lo = *le;
        }
        acc
    }

    /// Re-express on a (superset) list of bounds, carrying each cumulative
    /// count forward to bounds the series did not have.
    pub(crate) fn on_bounds(&self, bounds: &[f64]) -> Histogram {
        let mut out = Histogram { bounds: bounds.to_vec(), cumulative: Vec::with_capacity(bounds.len()) };
        let mut j = 0;
        let mut cur = 0.0;
        for b in bounds {
            while j < self.bounds.len() && self.bounds[j] <= *b {
                cur = self.cumulative[j];
                j += 1;
            }
            out.cumulative.push(cur);
        }
        out
    }
}
