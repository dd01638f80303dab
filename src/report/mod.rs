//! One report model shared by every command (and later by PR comments).
//!
//! A policy failure is a [`Diagnostic`]; a step that could not finish carries
//! [`Verdict::Error`]. The exit code is derived from the report, never from the
//! path the code took, so a command cannot "forget" to fail.

pub(crate) mod chart;
pub mod comment;
pub mod escape;
pub mod format;
pub mod metrics;
#[cfg(test)]
pub(crate) mod props;
pub mod redact;
pub mod sarif;

use serde::{Deserialize, Serialize};
use std::fmt;

// The diagnostic model lives with the code registry (`diag`), so `bundle`
// and `checks` can build findings without depending on the report side.
use crate::diag::{Diagnostic, Severity};

/// The outcome of one step. Ordered from best to worst so `max` aggregates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Checked, and every gate held.
    Pass,
    /// The step was not run (capability or inputs absent). Never counts as pass
    /// for a gate that was required, see [`Report::verdict`].
    NotRun,
    /// Not enough evidence to decide. Exit 1: a gate did not pass.
    Inconclusive,
    /// A gate failed.
    Fail,
    /// The tool could not finish this step (unreachable, unreadable, bad input).
    Error,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Pass => "PASS",
            Verdict::NotRun => "NOT RUN",
            Verdict::Inconclusive => "INCONCLUSIVE",
            Verdict::Fail => "FAIL",
            Verdict::Error => "ERROR",
        })
    }
}

/// A table of evidence (e.g. one row per artifact), rendered by every format.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepReport {
    /// Step name: lint, render, verify, preflight, canary, ...
    pub step: String,
    /// What the step looked at (usually a bundle path).
    pub target: String,
    pub verdict: Verdict,
    pub summary: String,
    #[serde(default)]
    pub diagnostics: Vec<Diagnostic>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tables: Vec<Table>,
    /// Free-form structured evidence (stable per step; documented in docs/report.md).
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub data: serde_json::Value,
    /// Text blocks shown collapsed in markdown (e.g. a manifest diff).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<Detail>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Detail {
    pub title: String,
    /// Language hint for fenced code (diff, yaml, text).
    pub lang: String,
    pub body: String,
}

impl StepReport {
    pub fn new(step: impl Into<String>, target: impl Into<String>) -> Self {
        StepReport {
            step: step.into(),
            target: target.into(),
            verdict: Verdict::Pass,
            summary: String::new(),
            diagnostics: Vec::new(),
            tables: Vec::new(),
            data: serde_json::Value::Null,
            details: Vec::new(),
        }
    }

    pub(crate) fn not_run(step: impl Into<String>, target: impl Into<String>, why: impl Into<String>) -> Self {
        let mut s = StepReport::new(step, target);
        s.verdict = Verdict::NotRun;
        s.summary = why.into();
        s
    }

    pub(crate) fn error(step: impl Into<String>, target: impl Into<String>, err: &anyhow::Error) -> Self {
        StepReport::failed(step, target, format!("{err:#}"))
    }

    /// The step could not finish: ERROR, `why` as its summary.
    pub(crate) fn failed(step: impl Into<String>, target: impl Into<String>, why: String) -> Self {
        let mut s = StepReport::new(step, target);
        s.verdict = Verdict::Error;
        s.summary = why;
        s
    }

    /// Verdict implied by the diagnostics alone: any error-severity finding
    /// fails; else the evidence floor ([`floor`]).
    pub fn verdict_from_diagnostics(&self) -> Verdict {
        if self.diagnostics.iter().any(|d| d.severity == Severity::Error) {
            Verdict::Fail
        } else {
            floor(Verdict::Pass, &self.diagnostics)
        }
    }

    pub(crate) fn count(&self, sev: Severity) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == sev).count()
    }
}

/// The evidence floor, the one rule every verdict goes through: a step that
/// carries a finding meaning evidence is missing or incomplete
/// ([`crate::diag::Kind::MissingEvidence`], quieted to a warning by `-A`/`-W`
/// or not) is INCONCLUSIVE, never PASS. Overrides decide how loud a finding
/// is, never that what was not read passed.
pub(crate) fn floor(verdict: Verdict, diagnostics: &[Diagnostic]) -> Verdict {
    if verdict == Verdict::Pass && diagnostics.iter().any(|d| d.code.missing_evidence()) {
        Verdict::Inconclusive
    } else {
        verdict
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// Stable schema marker for JSON consumers.
    pub schema: String,
    pub command: String,
    pub verdict: Verdict,
    pub steps: Vec<StepReport>,
    /// What `--format human` prints instead of the summary (e.g. manifests for
    /// `render`), so the default output can be piped to kubectl.
    #[serde(skip)]
    pub raw_human: Option<String>,
    /// Set by a sharded audit: which shard this is and which bundles it owns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardInfo>,
    /// Wall time of the run (audit), for the alerting metrics.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "durationSeconds")]
    pub duration_seconds: Option<f64>,
    /// When the run finished (RFC 3339; audit), so a merge can refuse stale shards.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "finishedAt")]
    pub finished_at: Option<String>,
}

impl Report {
    pub fn new(command: impl Into<String>) -> Self {
        Report {
            schema: "bundlegate.dev/report/v1".into(),
            command: command.into(),
            verdict: Verdict::Pass,
            steps: Vec::new(),
            raw_human: None,
            shard: None,
            duration_seconds: None,
            finished_at: None,
        }
    }

    pub fn push(&mut self, mut step: StepReport) {
        // Every step reaches a report here, whichever function set its verdict.
        step.verdict = floor(step.verdict, &step.diagnostics);
        self.steps.push(step);
        self.verdict = self.compute_verdict();
    }

    fn compute_verdict(&self) -> Verdict {
        let worst = self.steps.iter().map(|s| s.verdict).max().unwrap_or(Verdict::Inconclusive);
        // A report where nothing ran proves nothing: never PASS.
        if self.steps.iter().all(|s| s.verdict == Verdict::NotRun) {
            return Verdict::Inconclusive;
        }
        if worst == Verdict::NotRun {
            Verdict::Pass
        } else {
            worst
        }
    }

    /// 0 pass, 1 a gate failed or was inconclusive, 2 the tool could not finish.
    pub fn exit_code(&self) -> i32 {
        match self.verdict {
            Verdict::Pass | Verdict::NotRun => 0,
            Verdict::Inconclusive | Verdict::Fail => 1,
            Verdict::Error => 2,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_or_all_not_run_is_never_pass() {
        let mut r = Report::new("x");
        r.push(StepReport::not_run("verify", "b", "no store"));
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.exit_code(), 1);
    }

    fn passing_gate() -> crate::checks::canary::gate::GateOutcome {
        use crate::checks::canary::gate::{GateOutcome, GateVerdict, MetricKind};
        GateOutcome {
            metric: "error_rate".into(),
            kind: MetricKind::Proportion,
            verdict: GateVerdict::Pass,
            candidate: Some(0.0),
            baseline: Some(0.0),
            candidate_samples: 1000,
            baseline_samples: 1000,
            needed: Some(100),
            comparison: None,
            checks: Vec::new(),
            more_samples: None,
            more_minutes: None,
            message: String::new(),
        }
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// The evidence floor: whatever the findings and whatever `-A/-W/-D`
        /// did to them, a step carrying a code that means missing evidence
        /// is never PASS, by any verdict function or once in a report (`-A`
        /// once dropped the finding, and preflight and the canary passed).
        #[test]
        fn no_verdict_passes_on_missing_evidence(
            picks in proptest::collection::vec(
                (proptest::sample::select(crate::diag::Code::ALL), proptest::sample::select(&[None, Some(Severity::Allow), Some(Severity::Note), Some(Severity::Warning), Some(Severity::Error)][..])),
                0..6,
            ),
        ) {
            use crate::diag::Overrides;
            let mut ov = Overrides::default();
            for (c, sev) in &picks {
                if let Some(sev) = sev {
                    ov.set(c.as_str(), *sev).unwrap();
                }
            }
            let found: Vec<Diagnostic> = picks.iter().map(|(c, _)| Diagnostic::new(*c, "x")).collect();
            let missing = found.iter().any(|d| d.code.missing_evidence());
            let kept = ov.apply(found);
            for d in kept.iter().filter(|d| d.code.missing_evidence()) {
                proptest::prop_assert!(d.severity >= Severity::Warning, "{:?} quieted below a warning", d.code);
            }
            let mut s = StepReport::new("x", "t");
            s.diagnostics = kept.clone();
            let verdicts = [
                ("verdict_from_diagnostics", s.verdict_from_diagnostics()),
                ("preflight", crate::checks::preflight::verdict(&kept)),
                ("canary", crate::checks::canary::decision::canary_verdict(&kept, &[passing_gate()], false, false)),
            ];
            for (what, v) in verdicts {
                if missing {
                    proptest::prop_assert_ne!(v, Verdict::Pass, "{} passed on {:?}", what, picks);
                }
            }
            let mut r = Report::new("x");
            let mut passed = StepReport::new("x", "t");
            passed.diagnostics = kept;
            r.push(passed);
            if missing {
                proptest::prop_assert_eq!(r.steps[0].verdict, Verdict::Inconclusive);
            } else {
                proptest::prop_assert_eq!(r.steps[0].verdict, Verdict::Pass);
            }
        }
    }

    #[test]
    fn worst_step_wins() {
        let mut r = Report::new("x");
        r.push(StepReport::new("lint", "b"));
        r.push(StepReport::not_run("canary", "b", "no prometheus"));
        assert_eq!(r.verdict, Verdict::Pass);
        let mut f = StepReport::new("verify", "b");
        f.verdict = Verdict::Fail;
        r.push(f);
        assert_eq!(r.exit_code(), 1);
        let mut e = StepReport::new("preflight", "b");
        e.verdict = Verdict::Error;
        r.push(e);
        assert_eq!(r.exit_code(), 2);
    }
}

/// What one shard says about itself in its report.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardInfo {
    pub index: u32,
    pub count: u32,
    /// `checks::audit::shard::tree_fingerprint` of the whole tree the shard saw.
    pub tree: String,
    /// Git commit of the tree, when it is a git work tree.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Bundles in the whole tree.
    pub bundles_total: usize,
    /// The bundle ids this shard owns (and audited).
    pub owned: Vec<String>,
    /// Artifact bytes the owned bundles declare.
    pub owned_bytes: u64,
}
