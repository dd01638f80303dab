//! The walk over the traffic steps (`watch`, `canary --steps`): every step
//! of `spec.canary.steps` where the arms really held it (`ramp` places
//! them from the candidate's share of the requests), judged in order until
//! the first FAIL, then written up. The report is the deciding step's (the
//! first FAIL, else the latest judged) with one row per step in front and
//! the diagnostics of every judged step. `app::canary` runs each judgment
//! the walk asks for and hands it back.

use serde::Serialize;

use super::gate::GateOutcome;
use super::plan::{CanaryPlan, Judgment, TimelineAsk};
use super::ramp::{self as st, SplitPoint, StepVerdict, StepWindow};
use super::report::{CanaryData, Judged, Selectors};
use crate::bundle::Loaded;
use crate::diag::{Diagnostic, Overrides};
use crate::report::{StepReport, Table, Verdict};

/// Where the steps are, in the bundle.
const FIELD: &str = "spec.canary.steps";

/// One row of `data.steps`.
#[derive(Debug, Clone, Serialize)]
struct StepData {
    percent: u32,
    verdict: StepVerdict,
    held: Option<HeldData>,
    window: Option<WindowData>,
    note: String,
    /// Each gate's numbers at this step (none when it was not judged).
    gates: Vec<GatePoint>,
}

/// One gate at one judged step, for the Markdown chart: the arms' values
/// and the limit the candidate broke (else the first one it was held to).
#[derive(Debug, Clone, Serialize)]
struct GatePoint {
    metric: String,
    candidate: Option<f64>,
    baseline: Option<f64>,
    limit: Option<f64>,
}

impl GatePoint {
    fn of(o: &GateOutcome) -> GatePoint {
        let limit = o.checks.iter().find(|c| c.exceeded).or(o.checks.first()).map(|c| c.limit);
        GatePoint { metric: o.metric.clone(), candidate: o.candidate, baseline: o.baseline, limit }
    }
}

#[derive(Debug, Clone, Copy, Serialize)]
struct HeldData {
    from: f64,
    to: f64,
}

#[derive(Debug, Clone, Copy, Serialize)]
struct WindowData {
    end: f64,
    seconds: f64,
}

/// `data.timeline`: how the steps were placed.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct TimelineData {
    resolution_seconds: u64,
    horizon_seconds: u64,
    latest_candidate_share: Option<f64>,
    segments: Vec<st::Segment>,
    selectors: Selectors,
}

/// The report's data with traffic steps: the deciding step's judgment
/// (when one was judged), then the steps, the overall verdict, the timeline.
#[derive(Debug, Clone, Serialize)]
struct StepsData {
    #[serde(flatten)]
    deciding: Option<CanaryData>,
    steps: Vec<StepData>,
    verdict: StepVerdict,
    timeline: TimelineData,
}

/// Where one traffic step stands after the walk: its verdict and the
/// table row's texts.
struct StepLine {
    verdict: StepVerdict,
    held: String,
    judged: String,
    note: String,
    gates: Vec<GatePoint>,
}

/// "120 s ago", from the timeline's now.
fn ago(now: f64, t: f64) -> String {
    format!("{:.0} s ago", (now - t).max(0.0))
}

/// The walk over the steps so far.
pub(crate) struct Walk<'a> {
    l: &'a Loaded,
    ov: &'a Overrides,
    plan: &'a CanaryPlan<'a>,
    tl: TimelineAsk,
    latest_share: Option<f64>,
    segments: Vec<st::Segment>,
    placed: Vec<Option<StepWindow>>,
    /// The next step to look at, and the one being judged.
    next: usize,
    judging: Option<(usize, StepWindow)>,
    verdicts: Vec<StepVerdict>,
    rows: Vec<Vec<String>>,
    steps: Vec<StepData>,
    /// Every judged step's findings, through the overrides already.
    diags: Vec<Diagnostic>,
    /// The first FAIL, else the latest judged step.
    deciding: Option<Judged>,
}

impl<'a> Walk<'a> {
    /// The steps placed on the arms' split timeline (`points`, read as `tl` asked).
    pub(crate) fn new(
        l: &'a Loaded,
        ov: &'a Overrides,
        plan: &'a CanaryPlan<'a>,
        tl: TimelineAsk,
        points: &[SplitPoint],
    ) -> Walk<'a> {
        let steps = &plan.canary.steps;
        let segments = st::segments(points, steps);
        let placed = st::place(&segments, steps, tl.res as f64, plan.window.secs as f64);
        let latest_share = points.iter().rev().find_map(|p| p.share());
        Walk {
            l,
            ov,
            plan,
            tl,
            latest_share,
            segments,
            placed,
            next: 0,
            judging: None,
            verdicts: Vec::new(),
            rows: Vec::new(),
            steps: Vec::new(),
            diags: Vec::new(),
            deciding: None,
        }
    }

    /// The next step to judge over a window, once every step before it that
    /// is not judged (an earlier FAIL, not held, held too briefly) has its
    /// row; none when the walk is over. Hand its judgment to [`Walk::record`].
    pub(crate) fn next_judgment(&mut self) -> Option<Judgment> {
        while let Some(&pct) = self.plan.canary.steps.get(self.next) {
            let i = self.next;
            self.next += 1;
            let after_fail = self.verdicts.contains(&StepVerdict::Fail);
            match st::judged_window(&self.placed, i, pct, after_fail, self.tl.horizon, FIELD) {
                Ok(w) => {
                    self.judging = Some((i, w));
                    let latest = Some(i) == self.placed.iter().rposition(Option::is_some);
                    return Some(self.plan.at_step(pct, &w, latest));
                }
                Err(u) => {
                    if let Some(d) = u.finding {
                        self.diags.extend(self.ov.apply(vec![d.at(self.l.span(FIELD))]));
                    }
                    // A step held too briefly still shows when it was held.
                    let held = match self.placed[i] {
                        Some(w) if !after_fail => self.held(&w),
                        _ => "—".into(),
                    };
                    self.push(
                        i,
                        StepLine { verdict: u.verdict, held, judged: "—".into(), note: u.note, gates: Vec::new() },
                    );
                }
            }
        }
        None
    }

    fn held(&self, w: &StepWindow) -> String {
        format!("{} → {}", ago(self.tl.now, w.held_from), ago(self.tl.now, w.held_to))
    }

    /// The judgment of the step [`Walk::next_judgment`] asked for: its
    /// findings join the walk's, it may become the deciding one. An ERROR
    /// ends the walk with that step's report.
    pub(crate) fn record(&mut self, judged: Judged) -> Result<(), Box<StepReport>> {
        let Some((i, w)) = self.judging.take() else { return Ok(()) };
        let pct = self.plan.canary.steps[i];
        if judged.report.verdict == Verdict::Error {
            let mut rep = judged.report;
            rep.summary = format!("traffic step {pct}%: {}", rep.summary);
            return Err(Box::new(rep));
        }
        let mut v = st::judge_step(&judged.outcomes, pct == 100);
        // Golden failures and downgraded codes speak through the step report.
        if judged.report.verdict == Verdict::Fail {
            v = StepVerdict::Fail;
        }
        let note = if v == StepVerdict::NotChecked {
            "the baseline serves nothing at 100% and no gate has an absolute limit (maxAbsolute / minAbsolute): nothing to judge here".to_string()
        } else {
            judged.gates_note.clone().unwrap_or_else(|| judged.report.summary.clone())
        };
        for mut d in judged.report.diagnostics.clone() {
            d.message = format!("step {pct}%: {}", d.message);
            self.diags.push(d);
        }
        let secs = w.secs.round() as u64;
        let line = StepLine {
            verdict: v,
            held: self.held(&w),
            judged: format!("{secs} s ending {}", ago(self.tl.now, w.end)),
            note,
            gates: judged.outcomes.iter().map(GatePoint::of).collect(),
        };
        // The latest judged step decides: the walk ends at the first FAIL.
        self.deciding = Some(judged);
        self.push(i, line);
        Ok(())
    }

    fn push(&mut self, i: usize, line: StepLine) {
        let (pct, placed) = (self.plan.canary.steps[i], self.placed[i]);
        let StepLine { verdict, held, judged, note, gates } = line;
        self.rows.push(vec![format!("{pct}%"), held, judged, verdict.to_string(), note.clone()]);
        self.steps.push(StepData {
            percent: pct,
            verdict,
            held: placed.map(|w| HeldData { from: w.held_from, to: w.held_to }),
            window: placed.filter(|w| w.secs >= 1.0).map(|w| WindowData { end: w.end, seconds: w.secs }),
            note,
            gates,
        });
        self.verdicts.push(verdict);
    }

    /// The deciding step's report with the steps' verdict, summary, table
    /// and data in front, and every step's findings.
    pub(crate) fn write_up(self) -> StepReport {
        let overall = st::overall(&self.verdicts);
        let (mut s, deciding_data) = match self.deciding {
            Some(j) => (j.report, j.data),
            None => (StepReport::new("canary", &self.l.display), None),
        };
        // Each step's diagnostics went through the overrides already.
        s.diagnostics = self.diags;
        s.verdict = match overall {
            StepVerdict::Fail => Verdict::Fail,
            StepVerdict::Pass => Verdict::Pass,
            _ => Verdict::Inconclusive,
        };
        let (steps, tl) = (&self.plan.canary.steps, &self.tl);
        let latest = self.latest_share.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or_else(|| "no traffic".into());
        let deciding_note = if s.summary.is_empty() { String::new() } else { format!(" Deciding step: {}", s.summary) };
        s.summary = format!(
            "traffic steps {:?}, placed from the arms' request shares (every {} s over the last {} s; the candidate's latest share: {latest}), each judged over at most {}: {}.{deciding_note}",
            steps,
            tl.res,
            tl.horizon,
            self.plan.window.text,
            steps.iter().zip(&self.verdicts).map(|(p, v)| format!("{p}% {v}")).collect::<Vec<_>>().join(", "),
        );
        s.tables.insert(
            0,
            Table {
                title: "traffic steps".into(),
                columns: ["step", "held", "judged window", "verdict", "gates"].map(String::from).to_vec(),
                rows: self.rows,
            },
        );
        let data = StepsData {
            deciding: deciding_data,
            steps: self.steps,
            verdict: overall,
            timeline: TimelineData {
                resolution_seconds: tl.res,
                horizon_seconds: tl.horizon,
                latest_candidate_share: self.latest_share,
                segments: self.segments,
                selectors: Selectors { candidate: tl.candidate.clone(), baseline: tl.baseline.clone() },
            },
        };
        s.data = serde_json::to_value(&data).unwrap_or_default();
        s
    }
}

/// Shadow mode has no split: the current window was judged instead (`s`),
/// and the summary says so.
pub(crate) fn shadow(steps: &[u32], mut s: StepReport) -> StepReport {
    s.summary = format!("shadow mode mirrors traffic instead of splitting it, so traffic steps {steps:?} do not apply; the current window was judged: {}", s.summary);
    s
}

/// The arms' traffic shares could not be read: no step was placed.
pub(crate) fn unread_timeline(target: &str, e: &anyhow::Error) -> Box<StepReport> {
    let mut s = StepReport::error("canary", target, e);
    s.summary = format!(
        "could not read the arms' traffic shares from Prometheus, so no traffic step was placed or judged: {e:#}"
    );
    Box::new(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::canary::gate::GateVerdict;
    use crate::checks::canary::plan::Choices;
    use crate::checks::canary::ramp::tests::{outcome, timeline};
    use crate::diag::{Code, Severity};

    /// A judgment as `report::Findings` would write it: `verdict`, the
    /// gates' verdicts, one finding when a gate failed.
    fn judged(verdict: Verdict, gates: &[GateVerdict], name: &str) -> Judged {
        let mut report = StepReport::new("canary", "b");
        report.verdict = verdict;
        report.summary = format!("{name}. Action: …");
        if gates.contains(&GateVerdict::Fail) {
            report.diagnostics.push(Diagnostic::new(Code::CanaryGateFailed, "gate `error_rate`: worse"));
        }
        Judged {
            report,
            outcomes: gates.iter().map(|v| outcome(*v)).collect(),
            gates_note: Some(format!("{name} gates")),
            data: None,
        }
    }

    /// Idle, 10% for 12 s, a straddling bucket, 50% for 12 s, 100% for 10 s
    /// (until t = 1038, now): every step placed, each over an 8 s window.
    fn ramp() -> Vec<SplitPoint> {
        timeline(&[(3, f64::NAN), (12, 10.0), (1, 30.0), (12, 50.0), (10, 100.0)])
    }

    fn plan(l: &Loaded) -> CanaryPlan<'_> {
        let c = Choices { prometheus: Some("http://prom"), window: Some("8s"), ..Choices::default() };
        CanaryPlan::resolve(l, &c, Some(Ok("v1".into()))).unwrap()
    }

    /// Walk every step, answering each judgment with the next of `answers`.
    fn walk(walk: &mut Walk<'_>, answers: Vec<Judged>) -> Vec<Judgment> {
        let mut asked = Vec::new();
        let mut answers = answers.into_iter();
        while let Some(j) = walk.next_judgment() {
            asked.push(j);
            walk.record(answers.next().expect("an answer for each judgment")).unwrap();
        }
        assert!(answers.next().is_none(), "every answer was asked for");
        asked
    }

    /// Each step is judged over the last window of its stretch, the 100%
    /// step alone and with the golden set; all passing passes, with a row
    /// per step, the latest step deciding, and the placement in the data.
    #[test]
    fn every_placed_step_is_judged_in_order() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let p = plan(&l);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1038.0).unwrap(), &ramp());
        let pass = |n| judged(Verdict::Pass, &[GateVerdict::Pass], n);
        let asked = walk(&mut w, vec![pass("at 10"), pass("at 50"), pass("at 100")]);
        let seen: Vec<(f64, &str, bool, bool)> =
            asked.iter().map(|j| (j.now, j.window.text.as_str(), j.alone, j.golden)).collect();
        assert_eq!(seen, [(1014.0, "8s", false, false), (1027.0, "8s", false, false), (1038.0, "8s", true, true)]);
        let s = w.write_up();
        assert_eq!(s.verdict, Verdict::Pass);
        assert_eq!(
            s.summary,
            "traffic steps [10, 50, 100], placed from the arms' request shares (every 1 s over the last 10000 s; the candidate's latest share: 100.0%), each judged over at most 8s: 10% PASS, 50% PASS, 100% PASS. Deciding step: at 100. Action: …"
        );
        assert_eq!(s.tables[0].title, "traffic steps");
        assert_eq!(s.tables[0].rows[0], ["10%", "35 s ago → 23 s ago", "8 s ending 24 s ago", "PASS", "at 10 gates"]);
        assert_eq!(s.tables[0].rows.len(), 3);
        let d = &s.data;
        assert_eq!(d.as_object().unwrap().keys().collect::<Vec<_>>(), ["steps", "verdict", "timeline"]);
        assert_eq!(d["verdict"], "pass");
        assert_eq!(
            d["steps"][0],
            serde_json::json!({"percent": 10, "verdict": "pass", "held": {"from": 1003.0, "to": 1015.0}, "window": {"end": 1014.0, "seconds": 8.0}, "note": "at 10 gates",
                "gates": [{"metric": "ttft_p95_seconds", "candidate": null, "baseline": null, "limit": null}]})
        );
        let t = &d["timeline"];
        assert_eq!((t["resolutionSeconds"].as_u64(), t["horizonSeconds"].as_u64()), (Some(1), Some(10_000)));
        assert_eq!((t["latestCandidateShare"].as_f64(), t["segments"].as_array().map(Vec::len)), (Some(1.0), Some(3)));
        assert_eq!(t["selectors"], serde_json::json!({"candidate": "version=\"v2\"", "baseline": "version=\"v1\""}));
    }

    /// The first FAIL decides and ends the walk: later steps are NOT
    /// JUDGED, every judged step's findings are kept, named by step.
    #[test]
    fn the_first_fail_decides_and_ends_the_walk() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let p = plan(&l);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1038.0).unwrap(), &ramp());
        let answers = vec![
            judged(Verdict::Pass, &[GateVerdict::Pass], "at 10"),
            judged(Verdict::Fail, &[GateVerdict::Pass, GateVerdict::Fail], "at 50"),
        ];
        assert_eq!(walk(&mut w, answers).len(), 2);
        let s = w.write_up();
        assert_eq!(s.verdict, Verdict::Fail);
        assert!(
            s.summary.ends_with(
                "each judged over at most 8s: 10% PASS, 50% FAIL, 100% NOT JUDGED. Deciding step: at 50. Action: …"
            ),
            "{}",
            s.summary
        );
        assert_eq!(s.tables[0].rows[2], ["100%", "—", "—", "NOT JUDGED", "an earlier step failed: not judged"]);
        assert_eq!(s.diagnostics.len(), 1);
        assert_eq!(s.diagnostics[0].message, "step 50%: gate `error_rate`: worse");
        // A FAIL the gates did not see (the golden set) fails the step too.
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1038.0).unwrap(), &ramp());
        assert_eq!(walk(&mut w, vec![judged(Verdict::Fail, &[GateVerdict::Pass], "golden")]).len(), 1);
        assert!(w.write_up().summary.contains(": 10% FAIL, 50% NOT JUDGED, 100% NOT JUDGED. Deciding step: golden."));
    }

    /// A step that could not be judged ends the walk with its ERROR, named.
    #[test]
    fn an_error_judging_a_step_ends_the_walk_with_it() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let p = plan(&l);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1038.0).unwrap(), &ramp());
        w.next_judgment().unwrap();
        let mut error = judged(Verdict::Error, &[], "x");
        error.report.summary = "could not query Prometheus".into();
        let s = w.record(error).unwrap_err();
        assert_eq!((s.verdict, s.summary.as_str()), (Verdict::Error, "traffic step 10%: could not query Prometheus"));
    }

    /// Steps skipped while a later one was held are INCONCLUSIVE with a
    /// finding (through the overrides) at the steps; the 100% step with
    /// nothing to judge alone is NOT CHECKED and does not block a pass.
    #[test]
    fn skipped_steps_are_inconclusive_and_a_full_step_without_limits_unchecked() {
        let l = crate::bundle::example();
        let mut ov = Overrides::default();
        ov.set("canary-gate-inconclusive", Severity::Warning).unwrap();
        let p = plan(&l);
        let straight = timeline(&[(5, 0.0), (10, 100.0)]);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1015.0).unwrap(), &straight);
        let mut unchecked = judged(Verdict::NotRun, &[], "nothing");
        unchecked.gates_note = None;
        let asked = walk(&mut w, vec![unchecked]);
        assert_eq!((asked[0].alone, asked[0].golden), (true, true));
        let s = w.write_up();
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert!(
            s.summary
                .ends_with(": 10% INCONCLUSIVE, 50% INCONCLUSIVE, 100% NOT CHECKED. Deciding step: nothing. Action: …"),
            "{}",
            s.summary
        );
        assert_eq!(s.diagnostics.len(), 2);
        let d = &s.diagnostics[0];
        assert_eq!((d.code, d.severity), (Code::CanaryGateInconclusive, Severity::Warning));
        assert!(d.message.starts_with("step 10%: never held in the last 10000 s"), "{}", d.message);
        assert_eq!(d.span, l.span("spec.canary.steps"));
        assert!(
            s.tables[0].rows[2][4].starts_with("the baseline serves nothing at 100% and no gate has an absolute limit")
        );

        // 10% and 50% passed, 100% not checked: a pass.
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1038.0).unwrap(), &ramp());
        let pass = |n| judged(Verdict::Pass, &[GateVerdict::Pass], n);
        walk(&mut w, vec![pass("a"), pass("b"), judged(Verdict::NotRun, &[], "c")]);
        assert_eq!(w.write_up().verdict, Verdict::Pass);
    }

    /// A step held too briefly to judge is INCONCLUSIVE and still shows
    /// when it was held; after a FAIL no step shows it.
    #[test]
    fn a_step_held_too_briefly_shows_when_it_was_held() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let p = plan(&l);
        let brief = timeline(&[(5, 10.0), (1, 50.0), (5, 100.0)]);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1011.0).unwrap(), &brief);
        let pass = |n| judged(Verdict::Pass, &[GateVerdict::Pass], n);
        assert_eq!(walk(&mut w, vec![pass("ten"), pass("full")]).len(), 2);
        let s = w.write_up();
        let row = &s.tables[0].rows[1];
        assert_eq!((row[1].as_str(), row[2].as_str(), row[3].as_str()), ("6 s ago → 5 s ago", "—", "INCONCLUSIVE"));
        assert!(row[4].starts_with("held about 1 s, too briefly to judge"), "{}", row[4]);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1011.0).unwrap(), &brief);
        walk(&mut w, vec![judged(Verdict::Fail, &[GateVerdict::Fail], "ten")]);
        assert_eq!(w.write_up().tables[0].rows[1][1], "—");
    }

    /// Steps not reached yet are PENDING and say so; with no traffic at all
    /// nothing is judged, and nothing judged never passes.
    #[test]
    fn steps_not_reached_are_pending() {
        let l = crate::bundle::example();
        let ov = Overrides::default();
        let p = plan(&l);
        let mut w = Walk::new(&l, &ov, &p, p.timeline(1020.0).unwrap(), &timeline(&[(20, 10.0)]));
        let asked = walk(&mut w, vec![judged(Verdict::Pass, &[GateVerdict::Pass], "ten")]);
        assert!(asked[0].golden, "the latest step held runs the golden set");
        let s = w.write_up();
        assert_eq!(s.verdict, Verdict::Pass);
        assert_eq!(s.tables[0].rows[1], ["50%", "—", "—", "PENDING", "not held in the last 10000 s: not reached yet"]);
        assert_eq!(s.data["steps"][1]["held"], serde_json::Value::Null);

        let mut w = Walk::new(&l, &ov, &p, p.timeline(1005.0).unwrap(), &timeline(&[(5, f64::NAN)]));
        assert!(w.next_judgment().is_none());
        let s = w.write_up();
        assert_eq!(
            (s.verdict, s.step.as_str(), s.target.as_str()),
            (Verdict::Inconclusive, "canary", l.display.as_str())
        );
        assert!(
            s.summary.contains("the candidate's latest share: no traffic") && s.summary.ends_with("100% PENDING."),
            "{}",
            s.summary
        );
    }

    #[test]
    fn shadow_and_an_unread_timeline_say_why_no_step_was_walked() {
        let mut s = StepReport::new("canary", "b");
        s.summary = "judged".into();
        assert_eq!(
            shadow(&[10, 50], s).summary,
            "shadow mode mirrors traffic instead of splitting it, so traffic steps [10, 50] do not apply; the current window was judged: judged"
        );
        let s = unread_timeline("b", &anyhow::anyhow!("HTTP 503"));
        assert_eq!(s.verdict, Verdict::Error);
        assert_eq!(s.summary, "could not read the arms' traffic shares from Prometheus, so no traffic step was placed or judged: HTTP 503");
    }
}
