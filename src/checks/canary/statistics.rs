//! The statistics behind every gate: one-sided tests (two-proportion z,
//! Fisher, exact binomial, Mann-Whitney U raw and binned) and the sample
//! sizes needed to detect an effect. Pure math, no gate policy: kept apart so
//! it can be checked against scipy on its own.

use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::{beta::beta_reg, factorial::ln_binomial};

/// One-sided significance level for every test (Kayenta uses 98% two-sided
/// confidence; one-sided 0.05 is the common canary setting).
pub(crate) const ALPHA: f64 = 0.05;
/// Power used for the minimum sample size.
pub(crate) const POWER: f64 = 0.80;

/// Upper tail of the standard normal (accurate far into the tail via erfc).
pub(crate) fn norm_sf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    Normal::standard().sf(z)
}

pub(crate) fn norm_ppf(p: f64) -> f64 {
    Normal::standard().inverse_cdf(p)
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

impl TestResult {
    /// Support at the gates' level: p strictly below ALPHA.
    pub(crate) fn significant(&self) -> bool {
        self.p_value < ALPHA
    }
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
    if !counts_ok(x1, n1) || !counts_ok(x2, n2) || !(n1 + n2).is_finite() {
        return None;
    }
    let p = (x1 + x2) / (n1 + n2);
    let se = (p * (1.0 - p) * (1.0 / n1 + 1.0 / n2)).sqrt();
    // Trials so few (subnormal) that 1/n leaves f64's range: no test,
    // rather than a p-value of rounding.
    if !se.is_finite() {
        return None;
    }
    // A pooled rate of 0 or 1: both arms all-zero or all-one, no evidence
    // either way.
    if se == 0.0 {
        return Some(TestResult { method: "two-proportion z", statistic: 0.0, p_value: 1.0 });
    }
    let z = (x1 / n1 - x2 / n2) / se;
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
    for a in x1..hi {
        // pmf(a+1)/pmf(a) for the hypergeometric distribution.
        // In f64: `total - k - n1` alone is negative whenever there are more
        // events than baseline trials (u64 would underflow); the sum is ≥ 1.
        let r = ((k - a) as f64 * (n1 - a) as f64)
            / ((a + 1) as f64 * (total as f64 - k as f64 - n1 as f64 + a as f64 + 1.0));
        term *= r;
        sum += term;
        if term < sum * 1e-17 {
            break;
        }
    }
    let odds = (x1 as f64 * (n2 - x2) as f64) / ((n1 - x1) as f64 * x2 as f64);
    Some(TestResult { method: "Fisher exact", statistic: odds, p_value: sum.min(1.0) })
}

/// Chooses the error-rate test: Fisher when any expected cell is below 5
/// (Cochran's rule: the normal approximation is poor there), z otherwise.
/// Each test refuses a table that is not one (more events than trials, an
/// arm without trials) itself; the sums are in f64 so no count overflows.
pub(crate) fn proportion_test(x1: u64, n1: u64, x2: u64, n2: u64) -> Option<TestResult> {
    let n = n1 as f64 + n2 as f64;
    let events = x1 as f64 + x2 as f64;
    let min_expected =
        [n1 as f64 * events / n, n1 as f64 * (n - events) / n, n2 as f64 * events / n, n2 as f64 * (n - events) / n]
            .into_iter()
            .fold(f64::INFINITY, f64::min);
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

/// One tie group's share of the tie correction, (t³ − t) / (n (n − 1)),
/// computed as a product of ratios: the plain form subtracts two numbers
/// near n³ and, with 10⁶ samples or Prometheus' fractional counts, leaves a
/// variance of rounding noise where every sample is tied (a p-value of 0.56
/// on no evidence). As ratios, one group holding all n gives exactly n + 1.
fn tie_share(t: f64, n: f64) -> f64 {
    (t / n) * ((t - 1.0) / (n - 1.0)) * (t + 1.0)
}

/// Normal approximation of Mann-Whitney U with tie correction and continuity
/// correction, H1: x tends to be larger than y (scipy `mannwhitneyu(x, y,
/// alternative='greater', method='asymptotic')`). `ties` is the sum of
/// [`tie_share`] over the tie groups.
fn mwu_from_rank_sum(r1: f64, n1: f64, n2: f64, ties: f64) -> TestResult {
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mu = n1 * n2 / 2.0;
    let s = (n1 * n2 / 12.0 * ((n + 1.0) - ties)).sqrt();
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
    let n = (xs.len() + ys.len()) as f64;
    let mut rank_before = 0f64;
    let mut r1 = 0f64;
    let mut ties = 0f64;
    loop {
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
        ties += tie_share(t, n);
        rank_before += t;
        if t == 0.0 {
            // Cannot happen with finite values; guards the loop regardless.
            return None;
        }
    }
    Some(mwu_from_rank_sum(r1, xs.len() as f64, ys.len() as f64, ties))
}

/// Mann-Whitney U, H1: x tends to be *smaller* than y (scipy `mannwhitneyu(x,
/// y, alternative='less', method='asymptotic')`), for higher-is-better
/// gates. Ranks of −x vs −y give exactly that test; `statistic` is U of x.
pub(crate) fn mann_whitney_u_less(x: &[f64], y: &[f64]) -> Option<TestResult> {
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
    let mut ties = 0f64;
    for (a, b) in cx.iter().zip(cy) {
        let t = a + b;
        r1 += a * (rank_before + (t + 1.0) / 2.0);
        ties += tie_share(t, n1 + n2);
        rank_before += t;
    }
    Some(mwu_from_rank_sum(r1, n1, n2, ties))
}

/// Strictly between 0 and 1 (false for NaN): a level or a power.
fn open_unit(v: f64) -> bool {
    v > 0.0 && v < 1.0
}

/// Samples per arm for a one-sided two-proportion test to detect p0 → p1
/// (Fleiss, without continuity correction). None when there is no effect to
/// detect (p1 <= p0) or the rates are outside (0, 1).
pub(crate) fn n_two_proportions(p0: f64, p1: f64, alpha: f64, power: f64) -> Option<u64> {
    // Written as what must hold, so a NaN (false in every comparison) fails it.
    if !((0.0..1.0).contains(&p0) && p1 > p0 && p1 < 1.0 && open_unit(alpha) && open_unit(power)) {
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
pub(crate) fn n_mann_whitney(p_sup: f64, alpha: f64, power: f64) -> Option<u64> {
    if !(p_sup > 0.5 && p_sup <= 1.0 && open_unit(alpha) && open_unit(power)) {
        return None;
    }
    let z = norm_ppf(1.0 - alpha) + norm_ppf(power);
    let d = p_sup - 0.5;
    Some((z * z / (6.0 * d * d)).ceil() as u64)
}

/// P(s·X > Y) for X, Y drawn from `samples` (empirical), ties counted half.
pub(crate) fn superiority_scaled_samples(samples: &[f64], s: f64) -> f64 {
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
