//! One canary judgment written up from what was read: the gates' outcomes,
//! the situation and the action (`decision`), then the step report — one
//! finding and one table per gate, the golden set, the verdict, the summary
//! with the action, the traffic table, and the report's `data`. Also the
//! steps that stop before the gates (no Prometheus, unanswered queries).

use serde::Serialize;

use super::decision::{self, Action, RollbackTarget, Situation, Traffic, Trend};
use super::gate::{GateOutcome, GateVerdict};
use super::golden::GoldenRun;
use super::plan::{CanaryPlan, Gathered, Judgment};
use super::statistics;
use crate::bundle::Loaded;
use crate::diag::{Overrides, Severity};
use crate::report::{StepReport, Verdict};

/// One judgment: the step report, the gate outcomes, and what the traffic
/// steps read of it (the gates' sentence, the report's data).
#[derive(Debug)]
pub(crate) struct Judged {
    pub report: StepReport,
    pub outcomes: Vec<GateOutcome>,
    /// "n of m gate(s) passed, …; golden set: …" — the summary before its
    /// action; none when the judgment stopped before the gates.
    pub gates_note: Option<String>,
    pub data: Option<CanaryData>,
}

impl Judged {
    /// A judgment that stopped before any gate was evaluated.
    pub(crate) fn stopped(report: StepReport) -> Judged {
        Judged { report, outcomes: Vec::new(), gates_note: None, data: None }
    }
}

/// Everything one judgment found, before it is written up.
#[derive(Debug)]
pub(crate) struct Findings {
    window_text: String,
    window_secs: u64,
    now: f64,
    alone: bool,
    shadow: bool,
    gathered: Gathered,
    outcomes: Vec<GateOutcome>,
    golden: GoldenRun,
    trend: Trend,
    situation: Situation,
}

impl Findings {
    /// The gates' outcomes, each arm's trend and the situation they make.
    pub(crate) fn assess(plan: &CanaryPlan<'_>, j: &Judgment, gathered: Gathered, golden: GoldenRun) -> Findings {
        let outcomes: Vec<GateOutcome> = gathered.gates.iter().map(|g| g.outcome()).collect();
        let trend = gathered.traffic.trend();
        let situation = match decision::classify(&outcomes, golden.failed(), &trend) {
            // No baseline ran beside it: neither version nor load can be named.
            Situation::Unattributed if j.alone => Situation::FullTrafficBreach,
            other => other,
        };
        Findings {
            window_text: j.window.text.clone(),
            window_secs: j.window.secs,
            now: j.now,
            alone: j.alone,
            shadow: plan.shadow,
            gathered,
            outcomes,
            golden,
            trend,
            situation,
        }
    }

    /// Only a version regression with users on the candidate needs the way
    /// back checked (and verified, which reads the store).
    pub(crate) fn needs_rollback(&self) -> bool {
        self.situation == Situation::VersionRegression && !self.shadow
    }

    /// The step report: one finding and one table per gate, the golden set,
    /// the verdict, the summary with the action, the traffic table, the data.
    pub(crate) fn write_up(self, l: &Loaded, ov: &Overrides, rollback: RollbackTarget) -> Judged {
        let more =
            self.outcomes.iter().filter_map(|o| o.more_samples.zip(o.more_minutes)).max_by(|a, b| a.1.total_cmp(&b.1));
        let action = decision::decide(self.situation, self.shadow, self.alone, &self.trend, &rollback, more);
        let mut s = StepReport::new("canary", &l.display);
        let mut diags = Vec::new();
        for (r, o) in self.gathered.gates.iter().zip(&self.outcomes) {
            if let Some(d) = decision::gate_diagnostic(r.index, o, &self.window_text, self.alone) {
                diags.push(d.at(l.span(&format!("spec.canary.gates[{}]", r.index))));
            }
            s.tables.push(decision::gate_table(o));
        }
        let golden_note = self.golden.write_into(&mut s, &mut diags);
        s.diagnostics = ov.apply(diags);
        s.verdict = decision::canary_verdict(
            &s.diagnostics,
            &self.outcomes,
            matches!(self.golden, GoldenRun::Error(_)),
            self.alone,
        );
        let gates_note = self.gates_note(s.verdict, &golden_note);
        s.summary = format!(
            "{gates_note}. Action: {} — {}. Watch next: {}.",
            action.action,
            action.precondition.trim_end_matches('.'),
            action.watch_next.trim_end_matches('.')
        );
        s.tables.push(self.gathered.traffic.table(&self.gathered.candidate, &self.gathered.baseline));
        let data = self.data(action, rollback);
        s.data = serde_json::to_value(&data).unwrap_or_default();
        Judged { report: s, outcomes: self.outcomes, gates_note: Some(gates_note), data: Some(data) }
    }

    /// "n of m gate(s) passed, … over <window> (<arms>); golden set: …".
    fn gates_note(&self, verdict: Verdict, golden_note: &str) -> String {
        let outcomes = &self.outcomes;
        let not_passed = outcomes.iter().filter(|o| o.verdict != GateVerdict::Pass).count();
        let count = |v: GateVerdict| outcomes.iter().filter(|o| o.verdict == v).count();
        let downgraded = if verdict == Verdict::Pass && not_passed > 0 {
            format!(" ({not_passed} gate(s) did not pass; their codes were downgraded by configuration)")
        } else {
            String::new()
        };
        let g = &self.gathered;
        let arms_note = arms_note(self.alone, self.shadow, &g.candidate, &g.baseline, &g.unchecked);
        format!(
            "{} of {} gate(s) passed, {} failed, {} inconclusive, {} without data over {} ({}); golden set: {}{}",
            count(GateVerdict::Pass),
            outcomes.len(),
            count(GateVerdict::Fail),
            count(GateVerdict::Inconclusive),
            count(GateVerdict::NoData),
            self.window_text,
            arms_note,
            golden_note,
            downgraded,
        )
    }

    fn data(&self, action: Action, rollback: RollbackTarget) -> CanaryData {
        CanaryData {
            action: action.action,
            precondition: action.precondition,
            watch_next: action.watch_next,
            situation: self.situation,
            mode: if self.shadow { "shadow" } else { "canary" },
            window: self.window_text.clone(),
            window_seconds: self.window_secs,
            evaluated_at: self.now,
            selectors: Selectors {
                candidate: self.gathered.candidate.clone(),
                baseline: self.gathered.baseline.clone(),
            },
            candidate_alone: self.alone,
            not_checked: self.gathered.unchecked.clone(),
            alpha: statistics::ALPHA,
            power: statistics::POWER,
            gates: self.outcomes.clone(),
            trend: self.trend,
            traffic: self.gathered.traffic.clone(),
            golden: serde_json::to_value(self.golden.data()).unwrap_or_default(),
            rollback_target: rollback,
        }
    }
}

/// The judgment's `data` in the report (docs/report.md), in this order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CanaryData {
    action: &'static str,
    precondition: String,
    watch_next: String,
    situation: Situation,
    mode: &'static str,
    window: String,
    window_seconds: u64,
    evaluated_at: f64,
    selectors: Selectors,
    candidate_alone: bool,
    not_checked: Vec<String>,
    alpha: f64,
    power: f64,
    gates: Vec<GateOutcome>,
    trend: Trend,
    traffic: Traffic,
    golden: serde_json::Value,
    rollback_target: RollbackTarget,
}

/// Which series were each arm's (`data.selectors`, `data.timeline.selectors`).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Selectors {
    pub candidate: String,
    pub baseline: String,
}

/// No Prometheus: the gates are not run, the golden set still is and its
/// failures stand alone.
pub(crate) fn golden_only(l: &Loaded, golden: &GoldenRun, ov: &Overrides) -> StepReport {
    let mut s = StepReport::not_run("canary", &l.display, "");
    let mut diags = Vec::new();
    let note = golden.write_into(&mut s, &mut diags);
    s.diagnostics = ov.apply(diags);
    s.summary =
        format!("gates not run: no --prometheus URL, so candidate and baseline were not compared; golden set: {note}");
    if s.diagnostics.iter().any(|d| d.severity == Severity::Error) {
        s.verdict = Verdict::Fail;
    } else if matches!(golden, GoldenRun::Error(_)) {
        s.verdict = Verdict::Error;
    }
    s
}

/// Unanswered queries are not "no data": the step could not finish.
pub(crate) fn unanswered(l: &Loaded, e: &anyhow::Error) -> StepReport {
    let mut s = StepReport::error("canary", &l.display, e);
    s.summary = format!("could not query Prometheus, nothing was compared: {e:#}");
    s
}

/// Which arms were compared, for the summary.
fn arms_note(alone: bool, shadow: bool, candidate_sel: &str, baseline_sel: &str, unchecked: &[String]) -> String {
    if alone {
        format!(
            "candidate {{{candidate_sel}}} alone at 100% traffic: the baseline serves nothing, so only absolute limits were judged{}",
            if unchecked.is_empty() { String::new() } else { format!("; not checked here (relative limits only, judged at the earlier steps): {}", unchecked.join(", ")) }
        )
    } else {
        format!(
            "{} mode; candidate {{{candidate_sel}}} vs baseline {{{baseline_sel}}}",
            if shadow { "shadow" } else { "canary" }
        )
    }
}
