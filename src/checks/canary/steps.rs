//! Traffic steps (`spec.canary.steps: [10, 50, 100]`): each step held its
//! split for one window, the last one ending now, so step `i` of `n` is
//! judged over the window ending `(n-1-i)` windows ago. Gates are evaluated
//! per step; the first FAIL stops the walk (later steps were never safely
//! reached), a thin window makes its step INCONCLUSIVE.

use serde::Serialize;

use super::{GateOutcome, GateVerdict};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepVerdict {
    Pass,
    Fail,
    Inconclusive,
    /// Not judged: an earlier step failed.
    NotReached,
}

impl std::fmt::Display for StepVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StepVerdict::Pass => "PASS",
            StepVerdict::Fail => "FAIL",
            StepVerdict::Inconclusive => "INCONCLUSIVE",
            StepVerdict::NotReached => "NOT REACHED",
        })
    }
}

/// Evaluation time (unix seconds) of each step's window.
pub fn step_times(now: f64, window_secs: f64, steps: usize) -> Vec<f64> {
    (0..steps).map(|i| now - (steps - 1 - i) as f64 * window_secs).collect()
}

/// One step's verdict from its gates: any FAIL fails it; any INCONCLUSIVE
/// or NO DATA (or no gate at all) leaves it INCONCLUSIVE; else PASS.
pub fn judge_step(gates: &[GateOutcome]) -> StepVerdict {
    if gates.iter().any(|g| g.verdict == GateVerdict::Fail) {
        StepVerdict::Fail
    } else if gates.is_empty() || gates.iter().any(|g| g.verdict != GateVerdict::Pass) {
        StepVerdict::Inconclusive
    } else {
        StepVerdict::Pass
    }
}

/// Whether the walk goes on to the next step after this one.
pub fn continue_after(v: StepVerdict) -> bool {
    !matches!(v, StepVerdict::Fail | StepVerdict::NotReached)
}

/// The run's verdict over the steps: FAIL if any step failed, PASS only if
/// every step passed, else INCONCLUSIVE.
pub fn overall(steps: &[StepVerdict]) -> StepVerdict {
    if steps.contains(&StepVerdict::Fail) {
        StepVerdict::Fail
    } else if !steps.is_empty() && steps.iter().all(|s| *s == StepVerdict::Pass) {
        StepVerdict::Pass
    } else {
        StepVerdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(v: GateVerdict) -> GateOutcome {
        GateOutcome {
            metric: "ttft_p95_seconds".into(),
            kind: super::super::MetricKind::Histogram,
            verdict: v,
            candidate: None,
            baseline: None,
            candidate_samples: 0,
            baseline_samples: 0,
            needed: None,
            comparison: None,
            checks: vec![],
            more_samples: None,
            more_minutes: None,
            message: String::new(),
        }
    }

    #[test]
    fn windows_end_one_window_apart_the_last_now() {
        assert_eq!(step_times(1000.0, 60.0, 3), vec![880.0, 940.0, 1000.0]);
        assert!(step_times(1000.0, 60.0, 0).is_empty());
    }

    #[test]
    fn first_fail_stops_and_thin_windows_are_inconclusive() {
        use GateVerdict::*;
        assert_eq!(judge_step(&[outcome(Pass), outcome(Pass)]), StepVerdict::Pass);
        assert_eq!(judge_step(&[outcome(Pass), outcome(NoData)]), StepVerdict::Inconclusive);
        assert_eq!(judge_step(&[outcome(Inconclusive), outcome(Fail)]), StepVerdict::Fail);
        assert_eq!(judge_step(&[]), StepVerdict::Inconclusive);
        assert!(!continue_after(StepVerdict::Fail));
        assert!(continue_after(StepVerdict::Inconclusive));
        assert_eq!(overall(&[StepVerdict::Pass, StepVerdict::Fail, StepVerdict::NotReached]), StepVerdict::Fail);
        assert_eq!(overall(&[StepVerdict::Pass, StepVerdict::Inconclusive, StepVerdict::Pass]), StepVerdict::Inconclusive);
        assert_eq!(overall(&[StepVerdict::Pass, StepVerdict::Pass]), StepVerdict::Pass);
        assert_eq!(overall(&[]), StepVerdict::Inconclusive);
    }
}
