//! The paired quality gate: the golden set sent to both arms, each prompt
//! passed or failed by the same answer checks (`golden::golden_problems`),
//! then an exact McNemar test on the discordant prompts. Only prompts one
//! arm passes and the other fails say anything about which is worse; a
//! prompt both fail is the prompt's (or the checks') problem, not the
//! release's. Under "not worse" the candidate-only failures among the
//! discordant ones are at most a fair coin's share, so the one-sided p-value
//! is the exact binomial P(X ≥ b | b + c, ½) (scipy `binomtest(b, b + c, 0.5,
//! alternative='greater')`, which `bench/canary-stats.py` checks).

use serde::Serialize;

use super::statistics::binom_test_greater;
use crate::diag::{Code, Diagnostic};

/// Discordant prompts searched for the count a ratio needs: beyond it, a
/// golden set of that size is not a smoke test any more.
const NEEDED_SEARCH_MAX: u64 = 100_000;

/// What the test saw and found (`data.golden.paired`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PairedCount {
    pub prompts: usize,
    /// Failed by the candidate, passed by the baseline (b).
    pub candidate_only: u64,
    /// Passed by the candidate, failed by the baseline (c).
    pub baseline_only: u64,
    pub margin: u32,
    /// One-sided exact McNemar p-value (None: no discordant prompt).
    pub p_value: Option<f64>,
    /// Discordant prompts needed for this split to be significant (None:
    /// not asked, the candidate is not worse beyond the margin).
    pub needed: Option<u64>,
    pub verdict: PairedVerdict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum PairedVerdict {
    /// Worse beyond the margin, and significantly.
    Worse,
    /// Worse beyond the margin on these prompts, but too few discordant
    /// prompts to tell it from chance.
    Undecided,
    /// Not worse than the baseline beyond the margin on these prompts.
    NotWorse,
}

/// The test on each prompt's pass (true) or fail by each arm. The arms
/// answered the same prompts: a length mismatch is a caller's bug, and is
/// judged on the prompts both answered.
pub(crate) fn judge(candidate: &[bool], baseline: &[bool], margin: u32) -> PairedCount {
    let pairs = candidate.iter().zip(baseline);
    let b = pairs.clone().filter(|(c, base)| !**c && **base).count() as u64;
    let c = pairs.filter(|(c, base)| **c && !**base).count() as u64;
    let n = b + c;
    let test = binom_test_greater(b, n, 0.5);
    let p_value = test.as_ref().map(|t| t.p_value);
    let beyond = b.saturating_sub(c) > u64::from(margin);
    let significant = test.is_some_and(|t| t.significant());
    let (verdict, needed) = match (beyond, significant) {
        (false, _) => (PairedVerdict::NotWorse, None),
        (true, true) => (PairedVerdict::Worse, Some(n)),
        (true, false) => (PairedVerdict::Undecided, needed_at(b, n)),
    };
    PairedCount {
        prompts: candidate.len().min(baseline.len()),
        candidate_only: b,
        baseline_only: c,
        margin,
        p_value,
        needed,
        verdict,
    }
}

/// The fewest discordant prompts at which a candidate-only share of `b/n`
/// would be significant (None beyond [`NEEDED_SEARCH_MAX`]).
fn needed_at(b: u64, n: u64) -> Option<u64> {
    if n == 0 || b * 2 <= n {
        return None;
    }
    let share = b as f64 / n as f64;
    (n.max(1)..=NEEDED_SEARCH_MAX).find(|&m| {
        let k = (share * m as f64).ceil() as u64;
        binom_test_greater(k.min(m), m, 0.5).is_some_and(|t| t.significant())
    })
}

impl PairedCount {
    /// The gate's finding: BG301 when worse, BG302 when it cannot tell yet.
    pub(crate) fn finding(&self) -> Option<Diagnostic> {
        let (b, c, n) = (self.candidate_only, self.baseline_only, self.prompts);
        let p = self.p_value.map_or_else(|| "—".into(), |p| format!("{p:.4}"));
        let said = format!(
            "the candidate failed {b} golden prompt(s) the baseline passed and passed {c} the baseline failed, of {n} (margin {})",
            self.margin
        );
        let d = match self.verdict {
            PairedVerdict::NotWorse => return None,
            PairedVerdict::Worse => Diagnostic::new(
                Code::CanaryGateFailed,
                format!(
                    "paired golden gate: the candidate answers worse than the baseline on the same prompts: {said}"
                ),
            ),
            PairedVerdict::Undecided => Diagnostic::new(
                Code::CanaryGateInconclusive,
                format!(
                    "paired golden gate: {said}; not significant with {} discordant prompt(s): {}",
                    b + c,
                    match self.needed {
                        Some(m) => format!("at this split it takes at least {m}"),
                        None => format!("more than {NEEDED_SEARCH_MAX} at this split"),
                    }
                ),
            ),
        };
        Some(
            d.field("spec.canary.golden")
                .evidence(format!("exact McNemar (one-sided binomial on the discordant prompts): p = {p}")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arms(both_pass: usize, b: usize, c: usize, both_fail: usize) -> (Vec<bool>, Vec<bool>) {
        let mut cand = vec![true; both_pass];
        let mut base = vec![true; both_pass];
        cand.extend(vec![false; b]);
        base.extend(vec![true; b]);
        cand.extend(vec![true; c]);
        base.extend(vec![false; c]);
        cand.extend(vec![false; both_fail]);
        base.extend(vec![false; both_fail]);
        (cand, base)
    }

    /// p-values from scipy 1.17.1 `binomtest(b, b + c, 0.5, alternative="greater").pvalue`.
    #[test]
    fn mcnemar_p_values_are_scipys() {
        for (b, c, want) in [(5, 0, 0.03125), (6, 1, 0.0625), (8, 2, 0.0546875), (9, 1, 0.0107421875), (3, 3, 0.65625)]
        {
            let (cand, base) = arms(10, b, c, 2);
            let got = judge(&cand, &base, 0).p_value.unwrap();
            assert!((got - want).abs() < 1e-9, "b={b} c={c}: {got} vs {want}");
        }
    }

    /// Worse only when significant and beyond the margin; worse on the
    /// prompts but not significant is undecided, saying how many discordant
    /// prompts it takes; not worse passes; prompts both fail say nothing.
    #[test]
    fn the_verdict_needs_significance_beyond_the_margin() {
        let v = |both_pass, b, c, both_fail, margin| {
            let (cand, base) = arms(both_pass, b, c, both_fail);
            judge(&cand, &base, margin)
        };
        assert_eq!(v(20, 5, 0, 0, 0).verdict, PairedVerdict::Worse);
        assert_eq!(v(20, 5, 0, 0, 5).verdict, PairedVerdict::NotWorse);
        assert_eq!(v(20, 5, 0, 0, 4).verdict, PairedVerdict::Worse);
        let u = v(20, 4, 0, 0, 0);
        assert_eq!((u.verdict, u.needed), (PairedVerdict::Undecided, Some(5)));
        let u = v(20, 6, 2, 0, 0);
        assert_eq!(u.verdict, PairedVerdict::Undecided);
        assert!(u.needed.unwrap() > 8, "{u:?}");
        assert_eq!(v(20, 0, 0, 30, 0).verdict, PairedVerdict::NotWorse);
        assert_eq!(v(20, 2, 3, 0, 0).verdict, PairedVerdict::NotWorse);
        assert_eq!(
            v(0, 0, 0, 0, 0),
            PairedCount {
                prompts: 0,
                candidate_only: 0,
                baseline_only: 0,
                margin: 0,
                p_value: None,
                needed: None,
                verdict: PairedVerdict::NotWorse
            }
        );
        let f = v(20, 5, 0, 0, 0).finding().unwrap();
        assert_eq!(f.code, Code::CanaryGateFailed);
        assert!(
            f.message.contains("failed 5 golden prompt(s) the baseline passed and passed 0 the baseline failed"),
            "{}",
            f.message
        );
        let f = v(20, 4, 0, 0, 0).finding().unwrap();
        assert_eq!(f.code, Code::CanaryGateInconclusive);
        assert!(f.message.contains("it takes at least 5"), "{}", f.message);
        assert!(v(20, 0, 4, 0, 0).finding().is_none());
    }
}
