//! The walk over the traffic steps (`watch`, `canary --steps`): every step
//! of `spec.canary.steps` where the arms really held it (`ramp` places
//! them from the candidate's share of the requests), judged in order until
//! the first FAIL, then written up. The report is the deciding step's (the
//! first FAIL, else the latest judged) with one row per step in front and
//! the diagnostics of every judged step. `app::canary` runs each judgment
//! the walk asks for and hands it back.

use serde::Serialize;

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
                    self.push(i, StepLine { verdict: u.verdict, held, judged: "—".into(), note: u.note });
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
        };
        if v == StepVerdict::Fail || self.deciding.as_ref().is_none_or(|d| d.report.verdict != Verdict::Fail) {
            self.deciding = Some(judged);
        }
        self.push(i, line);
        Ok(())
    }

    fn push(&mut self, i: usize, line: StepLine) {
        let (pct, placed) = (self.plan.canary.steps[i], self.placed[i]);
        let StepLine { verdict, held, judged, note } = line;
        self.rows.push(vec![format!("{pct}%"), held, judged, verdict.to_string(), note.clone()]);
        self.steps.push(StepData {
            percent: pct,
            verdict,
            held: placed.map(|w| HeldData { from: w.held_from, to: w.held_to }),
            window: placed.filter(|w| w.secs >= 1.0).map(|w| WindowData { end: w.end, seconds: w.secs }),
            note,
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
