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
use crate::diag::Overrides;
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
    s.data = serde_json::json!({"golden": golden.data()});
    s.summary =
        format!("gates not run: no --prometheus URL, so candidate and baseline were not compared; golden set: {note}");
    // The gates' own rule with no gate run ("alone": nothing to compare is
    // NOT RUN): a failed sample or paired gate FAILs, an undecided one is
    // INCONCLUSIVE, a golden set that could not run is an ERROR.
    s.verdict = decision::canary_verdict(&s.diagnostics, &[], matches!(golden, GoldenRun::Error(_)), true);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::CanaryMode;
    use crate::checks::canary::gate::Side;
    use crate::checks::canary::golden::{GoldenAnswer, GoldenApi, GoldenExpect, GoldenResult, GoldenSample};
    use crate::checks::canary::plan::Choices;
    use crate::diag::{Code, Severity};

    fn prop(value: Option<f64>, total: f64) -> Side {
        Side::Proportion { value, total }
    }
    /// Clearly worse (8% vs 1% of 5000), equal with the power sample
    /// size (1% of 200,000 each), and no candidate data.
    const WORSE: (Option<f64>, f64) = (Some(0.08), 5000.0);
    const EQUAL: (Option<f64>, f64) = (Some(0.01), 200_000.0);

    /// The example's plan (error_rate with maxAbsolute 0.02 and
    /// maxRelativeIncrease 0.10, then two relative-only gates), the
    /// candidate's error rate `c` against the baseline's `b`, judged now or
    /// alone at 100%.
    fn findings(
        l: &Loaded,
        mode: Option<CanaryMode>,
        c: (Option<f64>, f64),
        b: (Option<f64>, f64),
        alone: bool,
    ) -> Findings {
        let plan = CanaryPlan::resolve(l, &Choices { mode, ..Choices::default() }, Some(Ok("v1".into()))).unwrap();
        let j = Judgment { alone, ..plan.current(1234.5) };
        let mut asks = plan.asks(&j).unwrap();
        asks.gates.truncate(1);
        let read = asks.gates[0].read(Some(prop(c.0, c.1)), Some(prop(b.0, b.1)), &[]);
        Findings::assess(&plan, &j, asks.gathered(vec![read], &[]), GoldenRun::NoEndpoint)
    }

    fn verified() -> RollbackTarget {
        RollbackTarget::Verified {
            path: "../v1/release.yaml".into(),
            version: "v1".into(),
            digest: "sha256:ab".into(),
            evidence: "3 artifact(s) match".into(),
        }
    }

    /// Every gate passed: PASS, the gates' sentence, the action to
    /// promote, one table per gate then the traffic, and the data in order.
    #[test]
    fn a_healthy_judgment_promotes_and_says_what_it_compared() {
        let l = crate::bundle::example();
        let f = findings(&l, None, EQUAL, EQUAL, false);
        assert_eq!(f.situation, Situation::Healthy);
        assert!(!f.needs_rollback());
        let j = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked);
        let s = &j.report;
        assert_eq!((s.step.as_str(), s.target.as_str(), s.verdict), ("canary", l.display.as_str(), Verdict::Pass));
        let note = "1 of 1 gate(s) passed, 0 failed, 0 inconclusive, 0 without data over 30m (canary mode; candidate {version=\"v2\"} vs baseline {version=\"v1\"}); golden set: not run: no --endpoint";
        assert_eq!(j.gates_note.as_deref(), Some(note));
        assert!(s.summary.starts_with(&format!("{note}. Action: promote — every gate passed with at least the samples needed to detect its configured effect. Watch next: repeat this analysis")), "{}", s.summary);
        assert!(s.summary.ends_with("per version.") && !s.summary.ends_with(".."), "{}", s.summary);
        assert!(s.diagnostics.is_empty(), "{:?}", s.diagnostics);
        let titles: Vec<&str> = s.tables.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles.len(), 2);
        assert!(titles[0].starts_with("gate error_rate — PASS") && titles[1].starts_with("traffic:"), "{titles:?}");
        assert_eq!(s.tables[1].rows[0][1], "{version=\"v2\"}");
        let keys: Vec<&str> = s.data.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "action",
                "precondition",
                "watchNext",
                "situation",
                "mode",
                "window",
                "windowSeconds",
                "evaluatedAt",
                "selectors",
                "candidateAlone",
                "notChecked",
                "alpha",
                "power",
                "gates",
                "trend",
                "traffic",
                "golden",
                "rollbackTarget"
            ]
        );
        let d = &s.data;
        assert_eq!(
            (d["action"].as_str(), d["situation"].as_str(), d["mode"].as_str()),
            (Some("promote"), Some("healthy"), Some("canary"))
        );
        assert_eq!(
            (d["window"].as_str(), d["windowSeconds"].as_u64(), d["evaluatedAt"].as_f64()),
            (Some("30m"), Some(1800), Some(1234.5))
        );
        assert_eq!(d["selectors"], serde_json::json!({"candidate": "version=\"v2\"", "baseline": "version=\"v1\""}));
        assert_eq!((d["alpha"].as_f64(), d["power"].as_f64()), (Some(statistics::ALPHA), Some(statistics::POWER)));
        assert_eq!(d["golden"], serde_json::json!({"status": "not-run", "reason": "no --endpoint"}));
        assert_eq!(d["rollbackTarget"], serde_json::json!({"status": "not-checked"}));
        assert_eq!(serde_json::to_value(j.data.unwrap()).unwrap(), *d);
        assert_eq!(j.outcomes.len(), 1);
    }

    /// A worse candidate is a version regression: its gate's finding at
    /// the gate's place in the bundle, FAIL, and the verified way back;
    /// in shadow mode there is nothing to roll back.
    #[test]
    fn a_regression_fails_with_its_finding_and_the_way_back() {
        let l = crate::bundle::example();
        let f = findings(&l, None, WORSE, (Some(0.01), 5000.0), false);
        assert_eq!(f.situation, Situation::VersionRegression);
        assert!(f.needs_rollback());
        let j = f.write_up(&l, &Overrides::default(), verified());
        let s = &j.report;
        assert_eq!(s.verdict, Verdict::Fail);
        assert_eq!(s.diagnostics.len(), 1);
        let d = &s.diagnostics[0];
        assert_eq!((d.code, d.severity), (Code::CanaryGateFailed, Severity::Error));
        assert_eq!(d.span, l.span("spec.canary.gates[0]"));
        assert!(d.span.is_some());
        assert!(
            s.summary.starts_with("0 of 1 gate(s) passed, 1 failed, 0 inconclusive, 0 without data over 30m"),
            "{}",
            s.summary
        );
        assert!(s.summary.contains(". Action: rollback — rollback target ../v1/release.yaml (version v1, sha256:ab) verified: 3 artifact(s) match;"), "{}", s.summary);
        assert_eq!(s.data["rollbackTarget"]["status"], "verified");
        assert_eq!(s.data["situation"], "version-regression");

        let f = findings(&l, Some(CanaryMode::Shadow), WORSE, (Some(0.01), 5000.0), false);
        assert!(!f.needs_rollback(), "shadow mode serves users from the baseline");
        let s = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked).report;
        assert!(
            s.summary.contains("(shadow mode; candidate {version=\"v2\"} vs baseline {version=\"v1\"})"),
            "{}",
            s.summary
        );
        assert!(s.summary.contains(". Action: hold — shadow mode:"), "{}", s.summary);
        assert_eq!((s.verdict, s.data["mode"].as_str()), (Verdict::Fail, Some("shadow")));
    }

    /// A failing gate lowered by configuration does not fail the step, and
    /// the summary says its code was downgraded.
    #[test]
    fn a_downgraded_failure_passes_and_says_so() {
        let l = crate::bundle::example();
        let mut ov = Overrides::default();
        ov.set("canary-gate-failed", Severity::Warning).unwrap();
        let f = findings(&l, None, WORSE, (Some(0.01), 5000.0), false);
        let s = f.write_up(&l, &ov, verified()).report;
        assert_eq!(s.verdict, Verdict::Pass);
        assert_eq!(s.diagnostics[0].severity, Severity::Warning);
        assert!(s.summary.contains("golden set: not run: no --endpoint (1 gate(s) did not pass; their codes were downgraded by configuration). Action:"), "{}", s.summary);
        // Without an override nothing is said about downgrades.
        let s = findings(&l, None, EQUAL, EQUAL, false).write_up(&l, &ov, verified()).report;
        assert!(!s.summary.contains("downgraded"), "{}", s.summary);
    }

    /// At 100% the candidate is alone: the summary says so and names the
    /// gates left to the earlier steps; a breach there cannot be told from
    /// load, so the action steps back.
    #[test]
    fn alone_at_full_traffic_a_breach_steps_back() {
        let l = crate::bundle::example();
        let f = findings(&l, None, WORSE, (None, 0.0), true);
        assert_eq!(f.situation, Situation::FullTrafficBreach, "{:?}", f.outcomes);
        assert!(!f.needs_rollback());
        let s = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked).report;
        assert_eq!(s.verdict, Verdict::Fail);
        assert!(s.summary.contains("(candidate {version=\"v2\"} alone at 100% traffic: the baseline serves nothing, so only absolute limits were judged; not checked here (relative limits only, judged at the earlier steps): p95_latency_seconds, gpu_memory_bytes)"), "{}", s.summary);
        assert!(s.summary.contains(". Action: step-back — "), "{}", s.summary);
        assert_eq!(
            (s.data["candidateAlone"].as_bool(), s.data["notChecked"].as_array().map(Vec::len)),
            (Some(true), Some(2))
        );
        assert_eq!(
            arms_note(true, false, "c", "b", &[]),
            "candidate {c} alone at 100% traffic: the baseline serves nothing, so only absolute limits were judged"
        );
        assert_eq!(arms_note(false, false, "c", "b", &["x".into()]), "canary mode; candidate {c} vs baseline {b}");
    }

    /// A gate over its absolute limit on both arms alike is neither the
    /// version nor (without a trend) the load: hold, nothing to roll back;
    /// alone at 100% the same breach steps back instead.
    #[test]
    fn a_breach_on_both_arms_alike_holds_unexplained() {
        let l = crate::bundle::example();
        let both = (Some(0.05), 5000.0);
        let f = findings(&l, None, both, both, false);
        assert_eq!(f.situation, Situation::Unattributed, "{:?}", f.outcomes);
        assert!(!f.needs_rollback());
        let s = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked).report;
        assert_eq!(s.verdict, Verdict::Fail);
        assert!(
            s.summary.contains(". Action: hold — a gate fails but the candidate is not worse than the baseline"),
            "{}",
            s.summary
        );
        assert_eq!(findings(&l, None, both, (None, 0.0), true).situation, Situation::FullTrafficBreach);
    }

    /// No data for the candidate holds, never passes; a golden set that
    /// could not run is the step's ERROR.
    #[test]
    fn no_data_holds_and_a_golden_set_that_could_not_run_is_an_error() {
        let l = crate::bundle::example();
        let f = findings(&l, None, (None, 0.0), EQUAL, false);
        assert_eq!(f.situation, Situation::Undecided);
        let s = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked).report;
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert!(
            s.summary.starts_with("0 of 1 gate(s) passed, 0 failed, 0 inconclusive, 1 without data"),
            "{}",
            s.summary
        );
        assert!(s.summary.contains(". Action: hold — keep traffic at the current step;"), "{}", s.summary);
        assert_eq!(s.diagnostics[0].code, Code::CanaryNoData);

        let mut f = findings(&l, None, EQUAL, EQUAL, false);
        f.golden = GoldenRun::Error("timed out".into());
        let s = f.write_up(&l, &Overrides::default(), RollbackTarget::NotChecked).report;
        assert_eq!(s.verdict, Verdict::Error);
        assert!(s.summary.contains("; golden set: could not run (timed out). Action:"), "{}", s.summary);
        assert_eq!(s.data["golden"], serde_json::json!({"status": "error", "reason": "timed out"}));
    }

    fn failing_golden() -> GoldenRun {
        GoldenRun::Ran(vec![GoldenResult {
            sample: GoldenSample {
                name: "json".into(),
                api: GoldenApi::OpenAiChat,
                request: serde_json::Value::Null,
                expect: GoldenExpect::default(),
            },
            answer: GoldenAnswer { status: 502, latency_ms: 3, content: None, finish_reason: None, raw: None },
            problems: vec!["HTTP 502".into()],
        }])
    }

    /// Without Prometheus the gates are NOT RUN and said so; the golden
    /// set still speaks: a failing sample FAILs, one that could not run is
    /// an ERROR, a failure allowed by configuration is not a finding.
    #[test]
    fn without_prometheus_only_the_golden_set_speaks() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let s = golden_only(&l, &GoldenRun::NotDeclared, &ov);
        assert_eq!(s.verdict, Verdict::NotRun);
        assert_eq!(s.summary, "gates not run: no --prometheus URL, so candidate and baseline were not compared; golden set: not run: no spec.canary.golden declared");
        let s = golden_only(&l, &GoldenRun::Error("refused".into()), &ov);
        assert_eq!((s.verdict, s.summary.ends_with("golden set: could not run (refused)")), (Verdict::Error, true));
        let s = golden_only(&l, &failing_golden(), &ov);
        assert_eq!(s.verdict, Verdict::Fail);
        assert!(s.summary.ends_with("golden set: 0/1 passed"), "{}", s.summary);
        assert_eq!(s.diagnostics[0].code, Code::GoldenSampleFailed);
        let mut allow = Overrides::default();
        allow.set("golden-sample-failed", Severity::Allow).unwrap();
        let s = golden_only(&l, &failing_golden(), &allow);
        assert_eq!((s.verdict, s.diagnostics.len()), (Verdict::NotRun, 0));
    }

    /// Unanswered queries are the step's ERROR, never "no data".
    #[test]
    fn unanswered_queries_are_an_error_quoting_why() {
        let l = crate::bundle::example();
        let e = anyhow::anyhow!("HTTP 500").context("gate error_rate");
        let s = unanswered(&l, &e);
        assert_eq!(s.verdict, Verdict::Error);
        assert_eq!(s.summary, "could not query Prometheus, nothing was compared: gate error_rate: HTTP 500");
        assert!(Judged::stopped(s).gates_note.is_none());
    }
}
