//! Canary statistics and gate verdicts (issue #5): plain numbers in, verdicts
//! out. No I/O here; `app::canary` gathers the numbers from Prometheus.
//!
//! Every gate is "lower is better" (error rate, latency, memory, quality
//! failure rates). A gate can only PASS when both arms have at least the
//! sample size needed to detect the configured effect; it FAILs only when the
//! candidate exceeds a limit *and* a one-sided test supports it.

pub mod providers;
pub mod steps;

pub use providers::Template;

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::{beta::beta_reg, factorial::ln_binomial};

/// One-sided significance level for every test (Kayenta uses 98% two-sided
/// confidence; one-sided 0.05 is the common canary setting).
pub const ALPHA: f64 = 0.05;
/// Power used for the minimum sample size.
pub const POWER: f64 = 0.80;

fn std_normal() -> Normal {
    Normal::new(0.0, 1.0).expect("standard normal")
}

/// Upper tail of the standard normal (accurate far into the tail via erfc).
pub fn norm_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    std_normal().sf(z)
}

pub fn norm_ppf(p: f64) -> f64 {
    std_normal().inverse_cdf(p)
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TestResult {
    pub method: &'static str,
    pub statistic: f64,
    /// One-sided: probability of a result at least this bad if the candidate
    /// were not worse.
    pub p_value: f64,
}

/// Every statistics entry point is total: NaN, ±Inf, negative counts, more
/// events than trials or an empty arm give None (no test), never a loop, a
/// panic or a p-value computed from garbage.
fn counts_ok(x: f64, n: f64) -> bool {
    x.is_finite() && n.is_finite() && x >= 0.0 && n > 0.0 && x <= n
}

/// Pooled two-proportion z-test, H1: candidate rate (x1/n1) > baseline rate
/// (x2/n2). Same z as statsmodels' `proportions_ztest(alternative='larger')`.
pub fn two_proportion_z(x1: f64, n1: f64, x2: f64, n2: f64) -> Option<TestResult> {
    if !counts_ok(x1, n1) || !counts_ok(x2, n2) {
        return None;
    }
    let p = (x1 + x2) / (n1 + n2);
    let se = (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)).sqrt();
    let diff = x1 / n1 - x2 / n2;
    // Identical all-zero or all-one arms carry no evidence either way.
    if se == 0.0 || !se.is_finite() {
        return Some(TestResult { method: "two-proportion z", statistic: 0.0, p_value: if diff > 0.0 { 0.0 } else { 1.0 } });
    }
    let z = diff / se;
    Some(TestResult { method: "two-proportion z", statistic: z, p_value: norm_sf(z) })
}

/// Fisher's exact test, one-sided (candidate has more events), for the table
/// [[x1, n1-x1], [x2, n2-x2]]: P(X >= x1) for X ~ Hypergeom(n1+n2, x1+x2, n1).
/// Summed with the pmf recurrence so 10^6-sample arms stay exact and fast.
pub fn fisher_exact_greater(x1: u64, n1: u64, x2: u64, n2: u64) -> Option<TestResult> {
    if x1 > n1 || x2 > n2 || n1 == 0 || n2 == 0 {
        return None;
    }
    let total = n1.checked_add(n2)?;
    let k = x1 + x2;
    let hi = k.min(n1);
    let ln_pmf = |a: u64| ln_binomial(k, a) + ln_binomial(total - k, n1 - a) - ln_binomial(total, n1);
    let mut term = ln_pmf(x1).exp();
    let mut sum = term;
    let mut a = x1;
    while a < hi {
        // pmf(a+1)/pmf(a) for the hypergeometric distribution.
        // In f64: `total - k - n1` alone is negative whenever there are more
        // events than baseline trials (u64 would underflow); the sum is ≥ 1.
        let r = ((k - a) as f64 * (n1 - a) as f64) / ((a + 1) as f64 * (total as f64 - k as f64 - n1 as f64 + a as f64 + 1.0));
        term *= r;
        sum += term;
        a += 1;
        if term < sum * 1e-17 {
            break;
        }
    }
    let odds = (x1 as f64 * (n2 - x2) as f64) / ((n1 - x1) as f64 * x2 as f64);
    Some(TestResult { method: "Fisher exact", statistic: odds, p_value: sum.min(1.0) })
}

/// Chooses the error-rate test: Fisher when any expected cell is below 5
/// (Cochran's rule: the normal approximation is poor there), z otherwise.
pub fn proportion_test(x1: u64, n1: u64, x2: u64, n2: u64) -> Option<TestResult> {
    if x1 > n1 || x2 > n2 || n1 == 0 || n2 == 0 {
        return None;
    }
    let n = (n1 + n2) as f64;
    let events = (x1 + x2) as f64;
    let min_expected =
        [n1 as f64 * events / n, n1 as f64 * (n - events) / n, n2 as f64 * events / n, n2 as f64 * (n - events) / n].into_iter().fold(f64::INFINITY, f64::min);
    if min_expected < 5.0 {
        fisher_exact_greater(x1, n1, x2, n2)
    } else {
        two_proportion_z(x1 as f64, n1 as f64, x2 as f64, n2 as f64)
    }
}

/// Exact binomial test, H1: true rate > p (scipy `binomtest(k, n, p,
/// alternative='greater')`): P(X >= k) = I_p(k, n-k+1).
pub fn binom_test_greater(k: u64, n: u64, p: f64) -> Option<TestResult> {
    if !(0.0..=1.0).contains(&p) || n == 0 {
        return None;
    }
    let pv = if k == 0 {
        1.0
    } else if k > n {
        0.0
    } else {
        beta_reg(k as f64, (n - k + 1) as f64, p)
    };
    Some(TestResult { method: "exact binomial", statistic: k as f64, p_value: pv })
}

/// Normal approximation of Mann-Whitney U with tie correction and continuity
/// correction, H1: x tends to be larger than y (scipy `mannwhitneyu(x, y,
/// alternative='greater', method='asymptotic')`).
fn mwu_from_rank_sum(r1: f64, n1: f64, n2: f64, tie_term: f64) -> TestResult {
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let s = (n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)))).sqrt();
    if s == 0.0 || !s.is_finite() {
        // Every value tied: no evidence of a shift.
        return TestResult { method: "Mann-Whitney U", statistic: u1, p_value: 1.0 };
    }
    let z = (u1 - mu - 0.5) / s;
    TestResult { method: "Mann-Whitney U", statistic: u1, p_value: norm_sf(z) }
}

/// Mann-Whitney U over raw samples. Sorts copies: O(n log n). None for an
/// empty arm or any non-finite value (NaN compares unequal to itself, so the
/// tie-group merge below could never advance past it).
pub fn mann_whitney_u(x: &[f64], y: &[f64]) -> Option<TestResult> {
    if x.is_empty() || y.is_empty() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let mut xs = x.to_vec();
    let mut ys = y.to_vec();
    xs.sort_unstable_by(f64::total_cmp);
    ys.sort_unstable_by(f64::total_cmp);
    // Merge the two sorted arms tie group by tie group: each group's members
    // share the average rank.
    let (mut i, mut j) = (0usize, 0usize);
    let mut rank_before = 0f64;
    let mut r1 = 0f64;
    let mut tie_term = 0f64;
    while i < xs.len() || j < ys.len() {
        let v = match (xs.get(i), ys.get(j)) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => break,
        };
        let i0 = i;
        while i < xs.len() && xs[i] == v {
            i += 1;
        }
        let j0 = j;
        while j < ys.len() && ys[j] == v {
            j += 1;
        }
        let cx = (i - i0) as f64;
        let t = cx + (j - j0) as f64;
        r1 += cx * (rank_before + (t + 1.0) / 2.0);
        tie_term += t * t * t - t;
        rank_before += t;
        if t == 0.0 {
            // Cannot happen with finite values; guards the loop regardless.
            return None;
        }
    }
    Some(mwu_from_rank_sum(r1, xs.len() as f64, ys.len() as f64, tie_term))
}

/// Mann-Whitney U, H1: x tends to be *smaller* than y (scipy `mannwhitneyu(x,
/// y, alternative='less', method='asymptotic')`), for higher-is-better
/// gates. Ranks of −x vs −y give exactly that test; `statistic` is U of x.
pub fn mann_whitney_u_less(x: &[f64], y: &[f64]) -> Option<TestResult> {
    let neg = |v: &[f64]| v.iter().map(|a| -a).collect::<Vec<_>>();
    let t = mann_whitney_u(&neg(x), &neg(y))?;
    Some(TestResult { statistic: x.len() as f64 * y.len() as f64 - t.statistic, ..t })
}

/// Mann-Whitney U over binned data: `cx[i]`/`cy[i]` samples fall in bin `i`
/// (bins ordered by value, identical for both arms). Each bin is one tie
/// group, so this equals the raw test on bucket-rounded values, in O(bins).
/// None when the bin lists differ in length, a count is negative or
/// non-finite, or an arm is empty.
pub fn mann_whitney_binned(cx: &[f64], cy: &[f64]) -> Option<TestResult> {
    if cx.len() != cy.len() || cx.iter().chain(cy).any(|v| !v.is_finite() || *v < 0.0) {
        return None;
    }
    let (n1, n2): (f64, f64) = (cx.iter().sum(), cy.iter().sum());
    if n1 <= 0.0 || n2 <= 0.0 {
        return None;
    }
    let mut rank_before = 0f64;
    let mut r1 = 0f64;
    let mut tie_term = 0f64;
    for (a, b) in cx.iter().zip(cy) {
        let t = a + b;
        r1 += a * (rank_before + (t + 1.0) / 2.0);
        tie_term += t * t * t - t;
        rank_before += t;
    }
    Some(mwu_from_rank_sum(r1, n1, n2, tie_term))
}

/// Samples per arm for a one-sided two-proportion test to detect p0 → p1
/// (Fleiss, without continuity correction). None when there is no effect to
/// detect (p1 <= p0) or the rates are outside (0, 1).
pub fn n_two_proportions(p0: f64, p1: f64, alpha: f64, power: f64) -> Option<u64> {
    // NaN rates fail every comparison, so they land here too.
    if p1.is_nan() || p0.is_nan() || p1 <= p0 || p0 < 0.0 || p1 >= 1.0 || !(alpha > 0.0 && alpha < 1.0) || !(power > 0.0 && power < 1.0) {
        return None;
    }
    let za = norm_ppf(1.0 - alpha);
    let zb = norm_ppf(power);
    let pbar = (p0 + p1) / 2.0;
    let num = za * (2.0 * pbar * (1.0 - pbar)).sqrt() + zb * (p0 * (1.0 - p0) + p1 * (1.0 - p1)).sqrt();
    Some((num * num / ((p1 - p0) * (p1 - p0))).ceil() as u64)
}

/// Samples per arm for a one-sided Mann-Whitney test to detect an effect
/// with probability of superiority `p_sup` = P(candidate > baseline), by
/// Noether's formula with equal arms: n = (z_a + z_b)^2 / (6 (p_sup - 1/2)^2).
pub fn n_mann_whitney(p_sup: f64, alpha: f64, power: f64) -> Option<u64> {
    if p_sup.is_nan() || p_sup <= 0.5 || p_sup > 1.0 || !(alpha > 0.0 && alpha < 1.0) || !(power > 0.0 && power < 1.0) {
        return None;
    }
    let z = norm_ppf(1.0 - alpha) + norm_ppf(power);
    let d = p_sup - 0.5;
    Some((z * z / (6.0 * d * d)).ceil() as u64)
}

/// A Prometheus classic histogram over one window: upper bounds (`le`,
/// ascending, last one +Inf) and cumulative counts.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Histogram {
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
    pub fn from_buckets(mut b: Vec<(f64, f64)>) -> Histogram {
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

    pub fn total(&self) -> f64 {
        match self.bounds.last() {
            Some(le) if le.is_infinite() => *self.cumulative.last().unwrap_or(&0.0),
            _ => 0.0,
        }
    }

    /// Counts per bucket (not cumulative).
    pub fn bin_counts(&self) -> Vec<f64> {
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

    /// The same interpolation as PromQL's `histogram_quantile`: linear inside
    /// the bucket, the first bucket starts at 0, a rank in +Inf returns the
    /// highest finite bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total <= 0.0 || self.bounds.len() < 2 {
            return None;
        }
        let rank = q * total;
        let i = self.cumulative.iter().position(|c| *c >= rank)?;
        if self.bounds[i].is_infinite() {
            return Some(self.bounds[self.bounds.len() - 2]);
        }
        let (lo, below) = if i == 0 { (0.0f64.min(self.bounds[0]), 0.0) } else { (self.bounds[i - 1], self.cumulative[i - 1]) };
        let in_bucket = self.cumulative[i] - below;
        if in_bucket <= 0.0 {
            return Some(self.bounds[i]);
        }
        Some(lo + (self.bounds[i] - lo) * (rank - below) / in_bucket)
    }

    /// Interpolated CDF (same model as `quantile`): fraction of samples <= x.
    pub fn cdf(&self, x: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.0;
        }
        let mut below = 0.0;
        let mut lo = 0.0f64;
        for (le, c) in self.bounds.iter().zip(&self.cumulative) {
            if le.is_infinite() {
                // Mass in +Inf sits above every finite bound.
                return below / total;
            }
            if x < *le {
                let frac = if *le > lo { ((x - lo) / (le - lo)).clamp(0.0, 1.0) } else { 1.0 };
                return (below + (c - below) * frac) / total;
            }
            below = *c;
            lo = *le;
        }
        below / total
    }

    /// Approximate P(s·X > Y) for X, Y independent draws from this
    /// histogram: the effect a latency limit of `s` × baseline represents.
    pub fn superiority_scaled(&self, s: f64) -> f64 {
        let total = self.total();
        if total <= 0.0 {
            return 0.5;
        }
        let mut acc = 0.0;
        let mut lo = 0.0f64;
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
            if w > 0.0 {
                let mut m = 0.0;
                for k in 0..STEPS {
                    let x = lo + (le - lo) * (k as f64 + 0.5) / STEPS as f64;
                    m += self.cdf(s * x);
                }
                acc += w * m / STEPS as f64;
            }
            below = *c;
            lo = *le;
        }
        acc
    }

    /// Re-express on a (superset) list of bounds, carrying each cumulative
    /// count forward to bounds the series did not have.
    pub fn on_bounds(&self, bounds: &[f64]) -> Histogram {
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

/// P(s·X > Y) for X, Y drawn from `samples` (empirical), ties counted half.
pub fn superiority_scaled_samples(samples: &[f64], s: f64) -> f64 {
    if samples.is_empty() || !s.is_finite() || samples.iter().any(|v| !v.is_finite()) {
        return 0.5;
    }
    let mut ys = samples.to_vec();
    ys.sort_unstable_by(f64::total_cmp);
    let n = ys.len() as f64;
    let mut acc = 0.0;
    for x in &ys {
        let v = s * x;
        let less = ys.partition_point(|y| *y < v) as f64;
        let le = ys.partition_point(|y| *y <= v) as f64;
        acc += (less + (le - less) / 2.0) / n;
    }
    acc / n
}

// ---------------------------------------------------------------------------
// Gate evaluation

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// Events out of requests (error rate, quality failure rates).
    Proportion,
    /// A quantile of a classic histogram (latency).
    Histogram,
    /// Gauge samples over the window (GPU memory).
    Gauge,
}

/// What one arm showed over the window.
#[derive(Debug, Clone, PartialEq)]
pub enum Side {
    /// `value` = events / total (None when Prometheus had no series).
    Proportion { value: Option<f64>, total: f64 },
    /// `value` from the value query (e.g. histogram_quantile), `hist` the
    /// bucket counts over the same window.
    Histogram { value: Option<f64>, hist: Histogram },
    /// `value` from the value query (e.g. the window's max), `samples` the raw
    /// gauge samples.
    Gauge { value: Option<f64>, samples: Vec<f64> },
}

impl Side {
    pub fn value(&self) -> Option<f64> {
        match self {
            Side::Proportion { value, .. } | Side::Histogram { value, .. } | Side::Gauge { value, .. } => value.filter(|v| v.is_finite()),
        }
    }
    /// Sample count: requests, histogram observations, or gauge scrapes.
    pub fn samples(&self) -> u64 {
        let n = match self {
            Side::Proportion { total, .. } => *total,
            Side::Histogram { hist, .. } => hist.total(),
            Side::Gauge { samples, .. } => samples.len() as f64,
        };
        if n.is_finite() && n > 0.0 {
            n.round() as u64
        } else {
            0
        }
    }
}

#[derive(Debug, Clone)]
pub struct GateInput {
    pub metric: String,
    pub kind: MetricKind,
    /// For histogram gates: the quantile the value stands for (0.95).
    pub quantile: f64,
    pub max_absolute: Option<f64>,
    pub max_relative_increase: Option<f64>,
    /// `canary.minSamples`; applies to request-based gates (gauge gates count
    /// scrapes, which the plan's request minimum does not describe).
    pub min_samples: u64,
    pub window_secs: f64,
    pub candidate: Side,
    pub baseline: Side,
    /// Higher-is-better gate (throughput): the tests look for a candidate
    /// *below* the baseline, against `min_absolute` / `min_relative_decrease`.
    pub higher_is_better: bool,
    pub min_absolute: Option<f64>,
    pub min_relative_decrease: Option<f64>,
    /// Requests per arm over the window, for gauge gates whose samples are
    /// scrapes but whose evidence depends on traffic (tokens per second).
    pub request_counts: Option<(u64, u64)>,
    /// No concurrent baseline (a 100% traffic step: the baseline serves
    /// nothing). Only the absolute limits are judged, on the candidate's own
    /// samples; `baseline` is ignored, relative limits are not applied, and
    /// the sample size needed is computed with the candidate's own
    /// distribution as the reference.
    pub candidate_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GateVerdict {
    Pass,
    Inconclusive,
    NoData,
    Fail,
}

impl std::fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Inconclusive => "INCONCLUSIVE",
            GateVerdict::NoData => "NO DATA",
            GateVerdict::Fail => "FAIL",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitCheck {
    /// `absolute` or `relative`.
    pub kind: &'static str,
    pub limit: f64,
    pub exceeded: bool,
    /// Support for "candidate exceeds this limit"; None for a measured gauge
    /// peak (a measurement, not an estimate).
    pub test: Option<TestResult>,
    pub supported: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateOutcome {
    pub metric: String,
    pub kind: MetricKind,
    pub verdict: GateVerdict,
    pub candidate: Option<f64>,
    pub baseline: Option<f64>,
    pub candidate_samples: u64,
    pub baseline_samples: u64,
    /// Samples per arm needed to detect the configured effect (including
    /// `minSamples`); None when no sample size can (see `message`).
    pub needed: Option<u64>,
    /// Candidate vs baseline, one-sided (candidate worse).
    pub comparison: Option<TestResult>,
    pub checks: Vec<LimitCheck>,
    pub more_samples: Option<u64>,
    pub more_minutes: Option<f64>,
    pub message: String,
}

impl GateOutcome {
    /// A failure the baseline does not share: the candidate is worse than the
    /// baseline with statistical support.
    pub fn version_tied(&self) -> bool {
        self.verdict == GateVerdict::Fail && self.comparison.is_some_and(|t| t.p_value < ALPHA)
    }
}

pub fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e6 || v.abs() < 1e-3 {
        format!("{v:.3e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{:.4}", v).trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

pub fn evaluate_gate(g: &GateInput) -> GateOutcome {
    let (nc, nb) = (g.candidate.samples(), g.baseline.samples());
    let (vc, vb) = (g.candidate.value(), g.baseline.value());
    let mut out = GateOutcome {
        metric: g.metric.clone(),
        kind: g.kind,
        verdict: GateVerdict::Inconclusive,
        candidate: vc,
        baseline: vb,
        candidate_samples: nc,
        baseline_samples: nb,
        needed: None,
        comparison: None,
        checks: Vec::new(),
        more_samples: None,
        more_minutes: None,
        message: String::new(),
    };
    let alone = g.candidate_only;
    if alone {
        (out.baseline, out.baseline_samples) = (None, 0);
    }
    let missing: Vec<&str> = [(nc == 0 || vc.is_none(), "candidate"), (!alone && (nb == 0 || vb.is_none()), "baseline")]
        .into_iter()
        .filter_map(|(m, s)| m.then_some(s))
        .collect();
    if !missing.is_empty() {
        out.verdict = GateVerdict::NoData;
        out.message = format!("no samples for {} over the window", missing.join(" and "));
        return out;
    }
    let vc = vc.unwrap_or_default();
    // The reference the configured effect is measured from: the baseline,
    // or with no concurrent baseline the candidate itself.
    let (reference, vb) = if alone { (&g.candidate, vc) } else { (&g.baseline, vb.unwrap_or_default()) };

    // The candidate-vs-baseline test suited to the data, one-sided towards
    // "candidate worse": larger for lower-is-better gates, smaller for
    // higher-is-better ones (the same tests on mirrored data).
    let hib = g.higher_is_better;
    let events = |v: f64, n: u64| (v * n as f64).round().clamp(0.0, n as f64) as u64;
    let (xc, xb) = (events(vc, nc), events(vb, nb));
    let proportion_ok = |v: f64| (0.0..=1.0).contains(&v);
    out.comparison = match (&g.candidate, &g.baseline) {
        _ if alone => None,
        (Side::Proportion { .. }, Side::Proportion { .. }) if !proportion_ok(vc) || !proportion_ok(vb) => None,
        (Side::Proportion { .. }, Side::Proportion { .. }) if hib => proportion_test(nc - xc, nc, nb - xb, nb),
        (Side::Proportion { .. }, Side::Proportion { .. }) => proportion_test(xc, nc, xb, nb),
        (Side::Histogram { hist: hc, .. }, Side::Histogram { hist: hb, .. }) => {
            let mut bounds: Vec<f64> = hc.bounds.iter().chain(&hb.bounds).copied().collect();
            bounds.sort_by(f64::total_cmp);
            bounds.dedup();
            let (mut bc, mut bb) = (hc.on_bounds(&bounds).bin_counts(), hb.on_bounds(&bounds).bin_counts());
            if hib {
                // Reversed bin order ranks the values mirrored.
                bc.reverse();
                bb.reverse();
            }
            mann_whitney_binned(&bc, &bb)
        }
        (Side::Gauge { samples: sc, .. }, Side::Gauge { samples: sb, .. }) if hib => mann_whitney_u_less(sc, sb),
        (Side::Gauge { samples: sc, .. }, Side::Gauge { samples: sb, .. }) => mann_whitney_u(sc, sb),
        _ => None,
    };
    let undecidable = if alone { matches!(g.candidate, Side::Proportion { .. }) && !proportion_ok(vc) } else { out.comparison.is_none() };
    if undecidable && alone {
        out.message = format!("no test is defined on a rate of {} over {nc} requests; check the gate's query", fmt_num(vc));
        return out;
    }
    if undecidable {
        // Mismatched kinds, a "rate" outside [0, 1] from an overridden query,
        // or counts no test is defined on: undecidable, never PASS.
        out.message = format!(
            "no candidate-vs-baseline test is defined on these numbers (candidate {} over {nc}, baseline {} over {nb}); check the gate's query",
            fmt_num(vc),
            fmt_num(vb)
        );
        return out;
    }

    // Limits. A relative limit on a zero baseline is meaningless (any event
    // is an infinite increase), so it is skipped with a note.
    let mut notes = Vec::new();
    let mut limits: Vec<(&'static str, f64)> = Vec::new();
    let (absolute, relative) = if hib { (g.min_absolute, g.min_relative_decrease) } else { (g.max_absolute, g.max_relative_increase) };
    if let Some(a) = absolute {
        limits.push(("absolute", a));
    }
    if let (Some(_), true) = (relative, alone) {
        notes.push(format!(
            "{} needs a concurrent baseline, which a 100% step does not have: it was judged at the earlier steps",
            if hib { "minRelativeDecrease" } else { "maxRelativeIncrease" }
        ));
    } else if let Some(r) = relative {
        if vb > 0.0 {
            limits.push(("relative", if hib { vb * (1.0 - r) } else { vb * (1.0 + r) }));
        } else {
            notes.push(format!("baseline is 0, so {} {r} cannot be applied", if hib { "minRelativeDecrease" } else { "maxRelativeIncrease" }));
        }
    }
    // "Worse than the limit" in the gate's direction.
    let beyond = |v: f64, limit: f64| if hib { v < limit } else { v > limit };
    for (kind, limit) in &limits {
        let exceeded = beyond(vc, *limit);
        let test = match (kind, &g.candidate) {
            (&"relative", _) => out.comparison,
            (_, Side::Proportion { .. }) if hib => binom_test_greater(nc - xc, nc, (1.0 - *limit).clamp(0.0, 1.0)),
            (_, Side::Proportion { .. }) => binom_test_greater(xc, nc, limit.clamp(0.0, 1.0)),
            // P(q-quantile > limit) ⇔ more than (1-q) of the samples lie above
            // it; mirrored: P(q-quantile < limit) ⇔ more than q lie below.
            (_, Side::Histogram { hist, .. }) => {
                let below = hist.cdf(*limit).clamp(0.0, 1.0);
                let (k, p) = if hib { (below, g.quantile) } else { (1.0 - below, 1.0 - g.quantile) };
                binom_test_greater((k * nc as f64).round() as u64, nc, p).map(|t| TestResult { method: "quantile (binomial)", ..t })
            }
            // Throughput's window mean is an estimate: sign test, H1: the
            // median sample is below the floor.
            (_, Side::Gauge { samples, .. }) if hib => {
                let k = samples.iter().filter(|v| **v < *limit).count() as u64;
                binom_test_greater(k, samples.len() as u64, 0.5).map(|t| TestResult { method: "sign test (binomial)", ..t })
            }
            // A gauge peak is a measurement, not an estimate.
            (_, Side::Gauge { .. }) => None,
        };
        let measured = matches!(g.candidate, Side::Gauge { .. }) && !hib && *kind == "absolute";
        let supported = exceeded && if measured { true } else { test.is_some_and(|t| t.p_value < ALPHA) };
        out.checks.push(LimitCheck { kind, limit: *limit, exceeded, test, supported });
    }

    // Samples needed to detect a move from the baseline to the tightest limit.
    let effective = if hib { limits.iter().map(|l| l.1).fold(f64::NEG_INFINITY, f64::max) } else { limits.iter().map(|l| l.1).fold(f64::INFINITY, f64::min) };
    let detect = if !effective.is_finite() {
        notes.push("no limit applies, so there is no effect to detect".into());
        None
    } else if !beyond(effective, vb) {
        notes.push(format!(
            "the {} ({}) already sits at or {} the limit ({}), so no sample size can show the candidate within it",
            if alone { "candidate" } else { "baseline" },
            fmt_num(vb),
            if hib { "below" } else { "above" },
            fmt_num(effective)
        ));
        None
    } else {
        // P(candidate worse) at the limit: P(s·X > Y), mirrored P(s·X < Y).
        let sup = |p: f64| if hib { 1.0 - p } else { p };
        match (reference, g.kind) {
            (_, MetricKind::Proportion) if hib => n_two_proportions(1.0 - vb, 1.0 - effective, ALPHA, POWER),
            (_, MetricKind::Proportion) => n_two_proportions(vb, effective, ALPHA, POWER),
            (Side::Histogram { hist, .. }, _) => n_mann_whitney(sup(hist.superiority_scaled(effective / vb)), ALPHA, POWER),
            (Side::Gauge { samples, .. }, _) => n_mann_whitney(sup(superiority_scaled_samples(samples, effective / vb)), ALPHA, POWER),
            _ => None,
        }
    };
    // Gauge gates count scrapes; a gauge gate that also knows its request
    // counts (throughput) holds them to minSamples like any request gate.
    let requests = g.request_counts;
    let floor = if g.kind == MetricKind::Gauge { 0 } else { g.min_samples };
    out.needed = detect.map(|n| n.max(floor));
    let need_floor = out.needed.unwrap_or(floor);

    let below_min = match requests {
        Some((rc, rb)) => rc < g.min_samples || (!alone && rb < g.min_samples),
        None => g.kind != MetricKind::Gauge && (nc < g.min_samples || (!alone && nb < g.min_samples)),
    };
    let failing: Vec<&LimitCheck> = out.checks.iter().filter(|c| c.supported).collect();
    let unsupported: Vec<&LimitCheck> = out.checks.iter().filter(|c| c.exceeded && !c.supported).collect();
    let enough = out.needed.is_some_and(|n| nc >= n && (alone || nb >= n));

    // A supported exceedance fails even below the power sample size: power
    // bounds missed regressions, not false alarms. Below minSamples nothing
    // but INCONCLUSIVE is allowed (a 5% canary that sent the new version 1
    // request in 20 is not evidence).
    out.verdict = if below_min {
        GateVerdict::Inconclusive
    } else if !failing.is_empty() {
        GateVerdict::Fail
    } else if unsupported.is_empty() && enough {
        GateVerdict::Pass
    } else {
        GateVerdict::Inconclusive
    };

    let describe = |c: &LimitCheck| {
        let p = c.test.map(|t| format!("p={} ({})", fmt_p(t.p_value), t.method)).unwrap_or_else(|| "measured".into());
        format!("{} limit {}: candidate {} ({p})", c.kind, fmt_num(c.limit), fmt_num(vc))
    };
    out.message = match out.verdict {
        GateVerdict::Fail => format!("candidate exceeds the {}", failing.iter().map(|c| describe(c)).collect::<Vec<_>>().join("; ")),
        GateVerdict::Pass if alone => format!(
            "candidate {} within its absolute limit with {nc} samples (needed {need_floor}); no concurrent baseline at a 100% step",
            fmt_num(vc)
        ),
        GateVerdict::Pass => format!("candidate {} within limits with {nc}/{nb} samples (needed {need_floor})", fmt_num(vc)),
        _ => {
            let mut why = Vec::new();
            if below_min {
                let (rc, rb) = requests.unwrap_or((nc, nb));
                let unit = if requests.is_some() { "requests" } else { "samples" };
                why.push(if alone {
                    format!("below canary.minSamples {} ({rc} candidate {unit})", g.min_samples)
                } else {
                    format!("below canary.minSamples {} ({rc} candidate / {rb} baseline {unit})", g.min_samples)
                });
            }
            for c in &unsupported {
                why.push(format!("candidate is above the {} but not significantly (p ≥ {ALPHA})", describe(c)));
            }
            if out.needed.is_some() && !enough && !below_min {
                why.push(if alone {
                    format!("{nc} candidate samples are fewer than the {need_floor} needed to show it within the limit")
                } else {
                    format!("{nc}/{nb} samples are fewer than the {need_floor} per side needed to detect the configured effect")
                });
            }
            why.extend(notes.iter().cloned());
            why.join("; ")
        }
    };
    if out.verdict == GateVerdict::Inconclusive {
        // Short of requests (throughput gates): the hint counts requests.
        let (target, hc, hb) = match requests {
            Some((rc, rb)) if below_min => (Some(g.min_samples), rc, rb),
            _ => (out.needed.or((floor > 0).then_some(floor)), nc, nb),
        };
        if let Some(n) = target {
            let (nc, nb) = (hc, hb);
            let more_c = n.saturating_sub(nc);
            let more_b = if alone { 0 } else { n.saturating_sub(nb) };
            let more = more_c.max(more_b);
            if more > 0 {
                out.more_samples = Some(more);
                // Minutes at each arm's observed rate; the slower arm decides.
                let mins = |more: u64, have: u64| {
                    if more == 0 {
                        0.0
                    } else if have == 0 {
                        f64::INFINITY
                    } else {
                        more as f64 / (have as f64 / g.window_secs * 60.0)
                    }
                };
                let m = mins(more_c, nc).max(mins(more_b, nb));
                out.more_minutes = Some(m);
                let minutes = if m.is_finite() { format!("{:.1}", m) } else { "∞".into() };
                let rate = |n: u64| n as f64 / g.window_secs * 60.0;
                out.message.push_str(&if alone {
                    format!("; needs {more} more candidate samples (≈ {minutes} more minutes at the observed {:.1} per minute)", rate(nc))
                } else {
                    format!("; needs {more} more samples per side (≈ {minutes} more minutes at the observed {:.1}/{:.1} per minute)", rate(nc), rate(nb))
                });
            }
        }
    }
    out
}

pub fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        // Below f64's range: say so instead of printing a fake exact zero.
        "< 1e-300".into()
    } else if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

// ---------------------------------------------------------------------------
// Exit action (the rollback decision card: version-linked regression with a
// verified old package → roll back; load doubled on both versions → throttle;
// old package incomplete → degrade)

/// How each arm moved against its own previous window (ratios now/earlier).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Trend {
    pub candidate_rate: Option<f64>,
    pub baseline_rate: Option<f64>,
    pub candidate_latency: Option<f64>,
    pub baseline_latency: Option<f64>,
}

/// Request rate up by half on both arms is a load change, not a release.
pub const LOAD_RATE_RATIO: f64 = 1.5;
/// Both P95s up by a fifth against their own earlier window: load-driven.
pub const LOAD_LATENCY_RATIO: f64 = 1.2;

impl Trend {
    pub fn load_driven(&self) -> bool {
        let both = |a: Option<f64>, b: Option<f64>, t: f64| matches!((a, b), (Some(a), Some(b)) if a >= t && b >= t);
        both(self.candidate_rate, self.baseline_rate, LOAD_RATE_RATIO) || both(self.candidate_latency, self.baseline_latency, LOAD_LATENCY_RATIO)
    }
    pub fn baseline_steady(&self) -> Option<bool> {
        match (self.baseline_rate, self.baseline_latency) {
            (None, None) => None,
            (r, l) => Some(r.is_none_or(|r| r < LOAD_RATE_RATIO) && l.is_none_or(|l| l < LOAD_LATENCY_RATIO)),
        }
    }
    pub fn describe(&self) -> String {
        let f = |v: Option<f64>| v.map(|v| format!("×{v:.2}")).unwrap_or_else(|| "unknown".into());
        format!(
            "vs the previous window: request rate candidate {} / baseline {}, P95 candidate {} / baseline {}",
            f(self.candidate_rate),
            f(self.baseline_rate),
            f(self.candidate_latency),
            f(self.baseline_latency)
        )
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Situation {
    /// Every gate passed.
    Healthy,
    /// Not enough evidence (or no data): decide nothing yet.
    Undecided,
    /// The candidate is worse than the baseline (gates or golden set).
    VersionRegression,
    /// Gates fail but both versions slowed / took more traffic.
    LoadDriven,
    /// Gates fail without a candidate-vs-baseline difference or a load change.
    Unattributed,
    /// An absolute limit fails at a 100% step, where no baseline runs to
    /// tell the version from the load.
    FullTrafficBreach,
}

pub fn classify(gates: &[GateOutcome], golden_failed: usize, trend: &Trend) -> Situation {
    if golden_failed > 0 || gates.iter().any(GateOutcome::version_tied) {
        Situation::VersionRegression
    } else if gates.iter().any(|g| g.verdict == GateVerdict::Fail) {
        if trend.load_driven() {
            Situation::LoadDriven
        } else {
            Situation::Unattributed
        }
    } else if !gates.is_empty() && gates.iter().all(|g| g.verdict == GateVerdict::Pass) {
        Situation::Healthy
    } else {
        Situation::Undecided
    }
}

/// Whether the rollback target can be used, as the caller found out.
#[derive(Debug, Clone, PartialEq)]
pub enum RollbackTarget {
    /// Not needed for this situation, so not checked.
    NotChecked,
    Verified {
        path: String,
        version: String,
        digest: String,
        evidence: String,
    },
    Unusable {
        path: Option<String>,
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Action {
    pub action: &'static str,
    pub precondition: String,
    pub watch_next: String,
}

pub fn decide(situation: Situation, shadow: bool, trend: &Trend, rollback: &RollbackTarget, more: Option<(u64, f64)>) -> Action {
    let load_note = if trend.load_driven() { " Load rose on both versions too: after the rollback, limit admission until the queue drains." } else { "" };
    match situation {
        Situation::Healthy => Action {
            action: "promote",
            precondition: "every gate passed with at least the samples needed to detect its configured effect".into(),
            watch_next: "repeat this analysis at the next traffic step over a full window; watch error rate, P95, GPU memory and the golden set per version".into(),
        },
        Situation::Undecided => Action {
            action: "hold",
            precondition: match more {
                Some((n, m)) if m.is_finite() => format!("keep traffic at the current step; no promotion until each side has {n} more samples (≈ {m:.1} more minutes at the observed rate)"),
                Some((n, _)) => format!("keep traffic at the current step; {n} more samples per side are needed and one side receives no traffic"),
                None => "keep traffic at the current step; a gate had no data or could not be decided".into(),
            },
            watch_next: "re-run after that time; if the rate cannot reach the sample size, raise the canary weight or lengthen the window instead of promoting on thin evidence".into(),
        },
        Situation::VersionRegression if shadow => Action {
            action: "hold",
            precondition: "shadow mode: users are served by the baseline, so there is nothing to roll back; stop the mirror and do not promote this version".into(),
            watch_next: "fix the candidate, re-run the golden set and the shadow analysis at the same load".into(),
        },
        Situation::VersionRegression => match rollback {
            RollbackTarget::Verified { path, version, digest, evidence } => Action {
                action: "rollback",
                precondition: format!(
                    "rollback target {path} (version {version}, {digest}) verified: {evidence}; the candidate is worse than the baseline under the same load ({}).{load_note}",
                    trend.describe()
                ),
                watch_next: "after rolling back: golden set, finish reasons, output length and P95 on the previous version at the same load within one window; if they do not recover the cause is not the version (check load, admission, shared dependencies)".into(),
            },
            RollbackTarget::Unusable { path, reason } => Action {
                action: "degrade",
                precondition: format!(
                    "rollback target {} is not usable ({reason}); switching blindly could add a second failure, so enable the existing verified degrade path first (e.g. a fallback model or reduced features), then repair the previous bundle",
                    path.as_deref().unwrap_or("(none declared)")
                ),
                watch_next: "error rate and golden set on the degrade path; `bundlegate verify` the previous bundle until it passes, then roll back".into(),
            },
            RollbackTarget::NotChecked => Action {
                action: "degrade",
                precondition: "the rollback target was not verified, so a rollback cannot be recommended".into(),
                watch_next: "verify the previous bundle, then re-run".into(),
            },
        },
        Situation::LoadDriven => Action {
            action: "throttle",
            precondition: format!("both versions slowed or took more traffic ({}); rolling back adds no capacity, so limit admission and isolate long requests per the runbook", trend.describe()),
            watch_next: "queue length and P95 falling after admission limits, counting rejected and queued requests as outcomes; if latency stays high after the rate returns to normal, re-run the canary: it may be the version after all".into(),
        },
        Situation::FullTrafficBreach => Action {
            action: "step-back",
            precondition: "at the 100% step the baseline serves nothing, so this breach of an absolute limit cannot be told apart from load; move traffic back to the previous step, where both arms are compared under the same load".into(),
            watch_next: "the same gate at the previous step on both arms: only the candidate over the limit means the version (roll back), both over it means capacity (throttle or scale)".into(),
        },
        Situation::Unattributed => Action {
            action: "hold",
            precondition: format!("a gate fails but the candidate is not worse than the baseline and load did not change ({}); a rollback would not help", trend.describe()),
            watch_next: "shared dependencies (GPU nodes, upstream services, limits too tight for both versions); stop promotion until explained".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) {
        assert!((a - b).abs() <= tol, "{a} vs {b} (diff {:e})", (a - b).abs());
    }

    // Expected values from scipy 1.17.1 (computed once, hard-coded).

    #[test]
    fn z_test_matches_scipy() {
        // z = (p1-p2)/sqrt(p(1-p)(1/n1+1/n2)); scipy.stats.norm.sf(z)
        let t = two_proportion_z(130.0, 10_000.0, 100.0, 10_000.0).unwrap();
        close(t.statistic, 1.989614786521866, 1e-9);
        close(t.p_value, 0.023316693019580684, 1e-9);
        let t = two_proportion_z(8.0, 1000.0, 12.0, 1000.0).unwrap();
        close(t.p_value, 0.8156558653191092, 1e-9);
        // A huge difference: far tail still accurate (norm.sf(z)).
        let t = two_proportion_z(800.0, 10_000.0, 100.0, 10_000.0).unwrap();
        close(t.p_value, 2.6716184583199285e-126, 1e-130);
    }

    #[test]
    fn fisher_matches_scipy() {
        // scipy.stats.fisher_exact([[5, 95], [1, 99]], alternative='greater').pvalue
        close(fisher_exact_greater(5, 100, 1, 100).unwrap().p_value, 0.10582392634786585, 1e-9);
        // scipy.stats.fisher_exact([[3, 17], [0, 20]], alternative='greater').pvalue
        close(fisher_exact_greater(3, 20, 0, 20).unwrap().p_value, 0.1153846153846154, 1e-9);
        // scipy.stats.fisher_exact([[1020, 98980], [950, 99050]], alternative='greater').pvalue
        close(fisher_exact_greater(1020, 100_000, 950, 100_000).unwrap().p_value, 0.05909723156181717, 1e-9);
    }

    #[test]
    fn binomial_matches_scipy() {
        // scipy.stats.binomtest(30, 1000, 0.02, alternative='greater').pvalue
        close(binom_test_greater(30, 1000, 0.02).unwrap().p_value, 0.02069651867323949, 1e-9);
        // scipy.stats.binomtest(0, 50, 0.05, alternative='greater').pvalue
        close(binom_test_greater(0, 50, 0.05).unwrap().p_value, 1.0, 1e-12);
    }

    #[test]
    fn mann_whitney_matches_scipy() {
        let x = [1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 8.0, 9.0];
        let y = [0.5, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0];
        // scipy.stats.mannwhitneyu(x, y, alternative='greater', method='asymptotic')
        let t = mann_whitney_u(&x, &y).unwrap();
        close(t.statistic, 41.5, 1e-12);
        close(t.p_value, 0.06222772238479956, 1e-9);
        // Binned = raw on bin-index values. x bins [3,5,0,2], y bins [6,2,1,0]:
        // scipy.stats.mannwhitneyu(np.repeat([0,1,2,3],[3,5,0,2]), np.repeat([0,1,2,3],[6,2,1,0]), alternative='greater', method='asymptotic')
        let t = mann_whitney_binned(&[3.0, 5.0, 0.0, 2.0], &[6.0, 2.0, 1.0, 0.0]).unwrap();
        close(t.statistic, 62.0, 1e-12);
        close(t.p_value, 0.07135006634920518, 1e-9);
        let raw = mann_whitney_u(&[0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 3.0, 3.0], &[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 2.0]).unwrap();
        close(raw.p_value, t.p_value, 1e-12);
    }

    #[test]
    fn sample_sizes() {
        // Fleiss: ((za*sqrt(2*pb*(1-pb)) + zb*sqrt(p0*(1-p0)+p1*(1-p1)))/(p1-p0))**2 with
        // za = scipy.stats.norm.ppf(0.95), zb = norm.ppf(0.8): 128_469.40… → 128_470
        assert_eq!(n_two_proportions(0.01, 0.011, ALPHA, POWER), Some(128_470));
        // Detecting 1% → 2% errors needs thousands of requests, not 20.
        assert_eq!(n_two_proportions(0.01, 0.02, ALPHA, POWER), Some(1_826));
        assert_eq!(n_two_proportions(0.02, 0.01, ALPHA, POWER), None);
        // (za+zb)^2 / (6*0.1^2) = 103.04…
        assert_eq!(n_mann_whitney(0.6, ALPHA, POWER), Some(104));
        assert_eq!(n_mann_whitney(0.5, ALPHA, POWER), None);
    }

    fn hist(pairs: &[(f64, f64)]) -> Histogram {
        Histogram::from_buckets(pairs.to_vec())
    }

    #[test]
    fn histogram_quantile_like_prometheus() {
        let h = hist(&[(0.1, 50.0), (0.2, 90.0), (0.5, 100.0), (f64::INFINITY, 100.0)]);
        // rank 95 lies in (0.2, 0.5]: 0.2 + 0.3 * 5/10
        close(h.quantile(0.95).unwrap(), 0.35, 1e-12);
        close(h.quantile(0.5).unwrap(), 0.1, 1e-12);
        close(h.cdf(0.35), 0.95, 1e-12);
        // Rank in +Inf → highest finite bound.
        let h2 = hist(&[(0.1, 10.0), (f64::INFINITY, 100.0)]);
        assert_eq!(h2.quantile(0.95), Some(0.1));
        // Extrapolated increase() counts can dip; they are made monotonic.
        let h3 = hist(&[(0.1, 10.0), (0.2, 9.5), (f64::INFINITY, 12.0)]);
        assert_eq!(h3.cumulative, vec![10.0, 10.0, 12.0]);
        assert!(hist(&[]).quantile(0.95).is_none());
        // P(1·X > Y) = 1/2 for a continuous model; larger scale → larger.
        close(h.superiority_scaled(1.0), 0.5, 0.01);
        assert!(h.superiority_scaled(1.5) > 0.6);
    }

    fn prop(value: f64, total: f64) -> Side {
        Side::Proportion { value: Some(value), total }
    }

    fn error_gate(c: Side, b: Side) -> GateInput {
        GateInput {
            metric: "error_rate".into(),
            kind: MetricKind::Proportion,
            quantile: 0.95,
            max_absolute: Some(0.02),
            max_relative_increase: Some(0.10),
            min_samples: 200,
            window_secs: 600.0,
            candidate: c,
            baseline: b,
            higher_is_better: false,
            min_absolute: None,
            min_relative_decrease: None,
            request_counts: None,
            candidate_only: false,
        }
    }

    #[test]
    fn error_rate_regression_fails() {
        let o = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
        assert!(o.version_tied());
        assert!(o.checks.iter().all(|c| c.supported));
    }

    #[test]
    fn one_request_in_twenty_is_inconclusive() {
        // 1 canary request out of 20, zero errors: never PASS.
        let o = evaluate_gate(&error_gate(prop(0.0, 1.0), prop(0.0, 19.0)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive);
        assert!(o.message.contains("minSamples"), "{}", o.message);
        // Detecting 0% → 2% (maxAbsolute) needs 305 per side; the candidate
        // arm has 1, at 0.1/min → 304 more take 3040 minutes.
        assert_eq!(o.needed, Some(305), "{o:?}");
        assert_eq!(o.more_samples, Some(304), "{o:?}");
        close(o.more_minutes.unwrap(), 3040.0, 1e-9);
    }

    #[test]
    fn equal_rates_need_the_power_sample_size() {
        // Above minSamples but far below the ~128k needed for +10% on 1%.
        let o = evaluate_gate(&error_gate(prop(0.01, 5000.0), prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive);
        assert_eq!(o.needed, Some(128_470));
        let o = evaluate_gate(&error_gate(prop(0.01, 200_000.0), prop(0.01, 200_000.0)));
        assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
    }

    #[test]
    fn no_data_is_never_pass() {
        let o = evaluate_gate(&error_gate(Side::Proportion { value: None, total: 0.0 }, prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::NoData);
        assert!(o.message.contains("candidate"));
        let o = evaluate_gate(&error_gate(Side::Proportion { value: Some(f64::NAN), total: 0.0 }, prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::NoData);
    }

    #[test]
    fn above_limit_without_support_is_inconclusive() {
        // 3% vs 2% on 300 each: above both limits, not significant.
        let o = evaluate_gate(&error_gate(prop(0.03, 300.0), prop(0.02, 300.0)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
        assert!(o.message.contains("not significantly"), "{}", o.message);
    }

    #[test]
    fn zero_baseline_skips_relative_limit() {
        let mut g = error_gate(prop(0.0, 50_000.0), prop(0.0, 50_000.0));
        g.max_absolute = None;
        let o = evaluate_gate(&g);
        assert_eq!(o.verdict, GateVerdict::Inconclusive);
        assert!(o.message.contains("cannot be applied"), "{}", o.message);
        assert_eq!(o.needed, None);
    }

    #[test]
    fn latency_gate_uses_mann_whitney_and_quantile() {
        let base = hist(&[(0.1, 4000.0), (0.2, 9000.0), (0.5, 9900.0), (1.0, 10000.0), (f64::INFINITY, 10000.0)]);
        let slow = hist(&[(0.1, 1000.0), (0.2, 3000.0), (0.5, 7000.0), (1.0, 9800.0), (f64::INFINITY, 10000.0)]);
        let g = GateInput {
            metric: "p95_latency_seconds".into(),
            kind: MetricKind::Histogram,
            quantile: 0.95,
            max_absolute: Some(0.5),
            max_relative_increase: Some(0.2),
            min_samples: 200,
            window_secs: 60.0,
            candidate: Side::Histogram { value: slow.quantile(0.95), hist: slow.clone() },
            baseline: Side::Histogram { value: base.quantile(0.95), hist: base.clone() },
            higher_is_better: false,
            min_absolute: None,
            min_relative_decrease: None,
            request_counts: None,
            candidate_only: false,
        };
        let o = evaluate_gate(&g);
        assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
        assert_eq!(o.comparison.unwrap().method, "Mann-Whitney U");
        assert!(o.version_tied());
        let same = GateInput { candidate: g.baseline.clone(), ..g };
        let o = evaluate_gate(&same);
        assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
    }

    #[test]
    fn decision_card() {
        let fail = evaluate_gate(&error_gate(prop(0.08, 5000.0), prop(0.01, 5000.0)));
        let steady = Trend { candidate_rate: Some(1.0), baseline_rate: Some(1.0), candidate_latency: Some(1.0), baseline_latency: Some(1.0) };
        assert_eq!(classify(std::slice::from_ref(&fail), 0, &steady), Situation::VersionRegression);
        let ok = RollbackTarget::Verified {
            path: "../v1/release.yaml".into(),
            version: "v1".into(),
            digest: "sha256:x".into(),
            evidence: "5/5 artifacts OK".into(),
        };
        assert_eq!(decide(Situation::VersionRegression, false, &steady, &ok, None).action, "rollback");
        let bad = RollbackTarget::Unusable { path: Some("../v1/release.yaml".into()), reason: "tokenizer.json missing".into() };
        let a = decide(Situation::VersionRegression, false, &steady, &bad, None);
        assert_eq!(a.action, "degrade");
        assert!(a.precondition.contains("tokenizer.json missing"));
        assert_eq!(decide(Situation::VersionRegression, true, &steady, &ok, None).action, "hold");

        // Both slower under doubled load, candidate no worse than baseline.
        let mut both = evaluate_gate(&error_gate(prop(0.03, 50_000.0), prop(0.03, 50_000.0)));
        assert_eq!(both.verdict, GateVerdict::Fail);
        assert!(!both.version_tied());
        let load = Trend { candidate_rate: Some(2.0), baseline_rate: Some(2.0), candidate_latency: Some(3.0), baseline_latency: Some(3.0) };
        assert_eq!(classify(std::slice::from_ref(&both), 0, &load), Situation::LoadDriven);
        assert_eq!(decide(Situation::LoadDriven, false, &load, &RollbackTarget::NotChecked, None).action, "throttle");
        assert_eq!(classify(std::slice::from_ref(&both), 0, &steady), Situation::Unattributed);
        // Golden failures are the candidate's alone.
        both.verdict = GateVerdict::Pass;
        assert_eq!(classify(std::slice::from_ref(&both), 1, &load), Situation::VersionRegression);
        assert_eq!(classify(&[], 0, &steady), Situation::Undecided);
    }

    // ---- totality over bad numbers, and higher-is-better tests ----------------

    #[test]
    fn statistics_are_total_over_nan_inf_and_empty() {
        // Used to loop forever: NaN never equals the merge's current value.
        assert!(mann_whitney_u(&[1.0, f64::NAN], &[2.0]).is_none());
        assert!(mann_whitney_u(&[f64::NAN], &[f64::NAN]).is_none());
        assert!(mann_whitney_u(&[1.0, f64::INFINITY], &[2.0]).is_none());
        assert!(mann_whitney_u(&[], &[2.0]).is_none());
        assert!(mann_whitney_u_less(&[1.0], &[f64::NEG_INFINITY]).is_none());
        assert!(mann_whitney_binned(&[1.0, f64::NAN], &[1.0, 1.0]).is_none());
        assert!(mann_whitney_binned(&[1.0, -1.0], &[1.0, 1.0]).is_none());
        assert!(mann_whitney_binned(&[0.0, 0.0], &[1.0, 1.0]).is_none());
        assert!(mann_whitney_binned(&[1.0], &[1.0, 1.0]).is_none());
        assert!(two_proportion_z(f64::NAN, 10.0, 1.0, 10.0).is_none());
        assert!(two_proportion_z(1.0, f64::INFINITY, 1.0, 10.0).is_none());
        assert!(two_proportion_z(11.0, 10.0, 1.0, 10.0).is_none());
        assert!(two_proportion_z(1.0, 0.0, 1.0, 10.0).is_none());
        assert!(fisher_exact_greater(11, 10, 1, 10).is_none());
        assert!(proportion_test(1, 0, 0, 10).is_none());
        assert!(binom_test_greater(1, 10, f64::NAN).is_none());
        assert!(binom_test_greater(1, 0, 0.5).is_none());
        assert!(n_two_proportions(0.01, 0.02, f64::NAN, POWER).is_none());
        assert!(n_mann_whitney(f64::INFINITY, ALPHA, POWER).is_none());
        close(superiority_scaled_samples(&[1.0, f64::NAN], 1.2), 0.5, 0.0);
        // Prometheus' "NaN"/"+Inf" counts empty the histogram: NO DATA.
        assert_eq!(hist(&[(0.1, f64::NAN), (f64::INFINITY, 10.0)]).total(), 0.0);
        assert_eq!(hist(&[(f64::NAN, 1.0), (f64::INFINITY, 10.0)]).total(), 0.0);
        assert_eq!(hist(&[(0.1, 1.0), (f64::INFINITY, f64::INFINITY)]).total(), 0.0);
    }

    #[test]
    fn more_events_than_baseline_trials_no_longer_underflows() {
        // 10/10 vs 5/5: every expected non-event cell is 0, so Fisher runs with
        // x1 + x2 > n2, where `total - k - n1` used to underflow (panic in debug).
        // scipy.stats.fisher_exact([[10, 0], [5, 0]], alternative='greater').pvalue
        close(proportion_test(10, 10, 5, 5).unwrap().p_value, 1.0, 1e-12);
        // scipy.stats.fisher_exact([[9, 1], [2, 3]], alternative='greater').pvalue
        close(fisher_exact_greater(9, 10, 2, 5).unwrap().p_value, 0.07692307692307693, 1e-9);
    }

    #[test]
    fn higher_is_better_tests_match_scipy() {
        // scipy 1.17.1: scipy.stats.mannwhitneyu(x, y, alternative='less', method='asymptotic')
        let x = [70.0, 71.5, 69.0, 72.0, 68.5, 70.5, 71.0, 69.5];
        let y = [100.0, 98.5, 101.0, 99.0, 102.0, 100.5, 97.5, 99.5];
        let t = mann_whitney_u_less(&x, &y).unwrap();
        close(t.statistic, 0.0, 1e-12);
        close(t.p_value, 0.00046955284955859495, 1e-9);
        // With ties: the same samples as mann_whitney_matches_scipy, both ways.
        let (a, b) = ([1.0, 2.0, 2.0, 3.0, 5.0, 8.0, 8.0, 9.0], [0.5, 1.0, 2.0, 2.0, 2.0, 4.0, 4.0]);
        let t = mann_whitney_u_less(&a, &b).unwrap();
        close(t.statistic, 41.5, 1e-12);
        close(t.p_value, 0.9509888563434155, 1e-9);
        let t = mann_whitney_u_less(&b, &a).unwrap();
        close(t.statistic, 14.5, 1e-12);
        close(t.p_value, 0.06222772238479956, 1e-9);
        // Binned, mirrored by reversing the bins:
        // scipy.stats.mannwhitneyu(np.repeat([0,1,2,3],[6,2,1,0]), np.repeat([0,1,2,3],[3,5,0,2]), alternative='less', method='asymptotic').pvalue
        let t = mann_whitney_binned(&[0.0, 1.0, 2.0, 6.0], &[2.0, 0.0, 5.0, 3.0]).unwrap();
        close(t.p_value, 0.07135006634920518, 1e-9);
        // Sign test: scipy.stats.binomtest(7, 8, 0.5, alternative='greater').pvalue
        close(binom_test_greater(7, 8, 0.5).unwrap().p_value, 0.03515625, 1e-12);
    }

    fn throughput(c: Vec<f64>, b: Vec<f64>, requests: (u64, u64)) -> GateInput {
        let mean = |v: &[f64]| Some(v.iter().sum::<f64>() / v.len() as f64);
        GateInput {
            metric: "output_tokens_per_second".into(),
            kind: MetricKind::Gauge,
            quantile: 0.0,
            max_absolute: None,
            max_relative_increase: None,
            min_samples: 200,
            window_secs: 600.0,
            candidate: Side::Gauge { value: mean(&c), samples: c },
            baseline: Side::Gauge { value: mean(&b), samples: b },
            higher_is_better: true,
            min_absolute: Some(50.0),
            min_relative_decrease: Some(0.2),
            request_counts: Some(requests),
            candidate_only: false,
        }
    }

    #[test]
    fn lower_throughput_fails_the_higher_is_better_gate() {
        let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let slow: Vec<f64> = base.iter().map(|v| v * 0.7).collect();
        let o = evaluate_gate(&throughput(slow, base.clone(), (5000, 5000)));
        assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
        assert!(o.version_tied());
        let rel = o.checks.iter().find(|c| c.kind == "relative").unwrap();
        assert!(rel.exceeded && rel.supported);
        close(rel.limit, 102.0 * 0.8, 1e-9);
        // Equal arms: PASS with enough scrapes and requests.
        let o = evaluate_gate(&throughput(base.clone(), base.clone(), (5000, 5000)));
        assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
        // A higher candidate is never a failure of a higher-is-better gate.
        let fast: Vec<f64> = base.iter().map(|v| v * 1.5).collect();
        assert_eq!(evaluate_gate(&throughput(fast, base.clone(), (5000, 5000))).verdict, GateVerdict::Pass);
        // Too few requests: INCONCLUSIVE, with the hint counted in requests.
        let o = evaluate_gate(&throughput(base.clone(), base.clone(), (20, 5000)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
        assert_eq!(o.more_samples, Some(180));
        assert!(o.message.contains("20 candidate / 5000 baseline requests"), "{}", o.message);
        // Below the absolute floor, sign-tested.
        let low: Vec<f64> = base.iter().map(|v| v * 0.4).collect();
        let o = evaluate_gate(&throughput(low, base, (5000, 5000)));
        let abs = o.checks.iter().find(|c| c.kind == "absolute").unwrap();
        assert!(abs.supported && abs.test.unwrap().method == "sign test (binomial)", "{o:?}");
    }

    #[test]
    fn at_full_traffic_only_absolute_limits_judge_the_candidate_alone() {
        let empty = Side::Proportion { value: None, total: 0.0 };
        let alone = |c: Side| GateInput { candidate_only: true, ..error_gate(c, empty.clone()) };
        // 1% errors over 5000 requests, cap 2%: within, with the samples to say so.
        let o = evaluate_gate(&alone(prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::Pass, "{o:?}");
        assert!(o.baseline.is_none() && o.baseline_samples == 0 && o.comparison.is_none());
        assert_eq!(o.checks.iter().map(|c| c.kind).collect::<Vec<_>>(), vec!["absolute"], "the relative limit needs a baseline");
        assert!(o.message.contains("no concurrent baseline"), "{}", o.message);
        // Needed from the candidate's own rate: 1% → 2%, as with a 1% baseline.
        assert_eq!(o.needed, n_two_proportions(0.01, 0.02, ALPHA, POWER));
        // 8% against a 2% cap: a failure, but not one tied to the version.
        let o = evaluate_gate(&alone(prop(0.08, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
        assert!(!o.version_tied());
        assert_eq!(classify(std::slice::from_ref(&o), 0, &Trend::default()), Situation::Unattributed);
        // Thin: INCONCLUSIVE, the hint counting the candidate only.
        let o = evaluate_gate(&alone(prop(0.0, 50.0)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
        assert!(o.message.contains("(50 candidate samples)") && o.message.contains("more candidate samples"), "{}", o.message);
        // Nothing from the candidate: NO DATA; the missing baseline is not.
        let o = evaluate_gate(&alone(empty.clone()));
        assert_eq!(o.verdict, GateVerdict::NoData);
        assert_eq!(o.message, "no samples for candidate over the window");
        // Relative limits only: nothing applies, never a pass.
        let mut g = alone(prop(0.01, 50_000.0));
        g.max_absolute = None;
        let o = evaluate_gate(&g);
        assert_eq!(o.verdict, GateVerdict::Inconclusive);
        assert!(o.message.contains("judged at the earlier steps"), "{}", o.message);
        // A histogram against maxAbsolute: quantile test on the candidate.
        let h = hist(&[(0.1, 4000.0), (0.2, 9000.0), (0.5, 9900.0), (1.0, 10000.0), (f64::INFINITY, 10000.0)]);
        let g = GateInput {
            metric: "ttft_p95_seconds".into(),
            kind: MetricKind::Histogram,
            quantile: 0.95,
            max_absolute: Some(1.0),
            max_relative_increase: Some(0.1),
            min_samples: 200,
            window_secs: 60.0,
            candidate: Side::Histogram { value: h.quantile(0.95), hist: h.clone() },
            baseline: Side::Histogram { value: None, hist: Histogram::default() },
            higher_is_better: false,
            min_absolute: None,
            min_relative_decrease: None,
            request_counts: None,
            candidate_only: true,
        };
        assert_eq!(evaluate_gate(&g).verdict, GateVerdict::Pass, "{:?}", evaluate_gate(&g));
        let o = evaluate_gate(&GateInput { max_absolute: Some(0.2), ..g });
        assert_eq!(o.verdict, GateVerdict::Fail, "{o:?}");
        assert_eq!(o.checks[0].test.unwrap().method, "quantile (binomial)");
    }

    #[test]
    fn bad_proportions_from_an_override_are_undecided_not_a_panic() {
        // A "rate" of 1.5 (a wrong override query) used to give x > n.
        let o = evaluate_gate(&error_gate(prop(1.5, 5000.0), prop(0.01, 5000.0)));
        assert_eq!(o.verdict, GateVerdict::Inconclusive, "{o:?}");
        assert!(o.message.contains("no candidate-vs-baseline test"), "{}", o.message);
        // NaN gauge samples never reach a test.
        let mut g = throughput(vec![100.0; 20], vec![100.0; 20], (5000, 5000));
        g.candidate = Side::Gauge { value: Some(100.0), samples: vec![] };
        assert_eq!(evaluate_gate(&g).verdict, GateVerdict::NoData);
    }

}
