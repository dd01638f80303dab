//! The canary's plan, resolved once from what the command line chose and the
//! bundle before any work (as `watch::steps::WatchPlan` is): the mode, the
//! window, the provider, the arms, the golden set; then, per judgment, every
//! query to send and how the answers become a gate's input. `app::canary`
//! sends what is planned here and hands the answers back; it decides nothing.

use anyhow::anyhow;

use super::decision::Traffic;
use super::gate::{self, GateInput, GateOutcome, MetricKind, Side};
use super::golden::GoldenRun;
use super::providers::{self, Template};
use super::query::{self, Arms, SideQueries};
use super::ramp::{self, StepWindow};
use crate::bundle::{self, CanaryMode, Loaded, MetricProvider};
use crate::report::StepReport;

/// What the command line chose (`options::CanaryOptions`, which `checks`
/// does not import: options reach the adapters through `manifests`).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Choices<'a> {
    /// The Prometheus base URL, when one was given and is not blank.
    pub prometheus: Option<&'a str>,
    pub window: Option<&'a str>,
    pub mode: Option<CanaryMode>,
    pub candidate_selector: Option<&'a str>,
    pub baseline_selector: Option<&'a str>,
    /// The candidate's base URL, for the golden set.
    pub endpoint: Option<&'a str>,
}

/// A judgment's window, as written and in whole seconds (at least 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    pub text: String,
    pub secs: u64,
}

/// Every derived default of a canary, decided once before any work.
#[derive(Debug)]
pub(crate) struct CanaryPlan<'a> {
    /// The step's target: the bundle as named.
    pub target: String,
    /// The bundle's `spec.canary`: steps, gates, minimum samples.
    pub canary: &'a bundle::Canary,
    /// Mirrored traffic: `--mode`, else the plan's.
    pub shadow: bool,
    /// `--window`, else the plan's.
    pub window: Window,
    /// The plan's provider, else bundlegate's (a gate may name its own).
    pub provider: MetricProvider,
    /// None: the gates are not run (the golden set still is).
    pub prometheus: Option<String>,
    /// The golden set's file and the endpoint it is sent to.
    pub golden: Option<String>,
    pub endpoint: Option<String>,
    /// Which series are each arm's, or why there is no baseline.
    pub arms: Result<Arms, String>,
}

impl<'a> CanaryPlan<'a> {
    /// `rollback`: the rollback target's version, or why it does not load
    /// (none when the bundle declares no `spec.rollback`); it names the
    /// baseline unless `--baseline-selector` does. `Err` is the step when
    /// nothing can be judged: no plan (NOT RUN) or no usable window (ERROR).
    pub(crate) fn resolve(
        l: &'a Loaded,
        c: &Choices<'_>,
        rollback: Option<Result<String, String>>,
    ) -> Result<CanaryPlan<'a>, Box<StepReport>> {
        let Some(canary) = &l.bundle.spec.canary else {
            return Err(Box::new(StepReport::not_run(
                "canary",
                &l.display,
                "the bundle declares no spec.canary plan: there is nothing to compare",
            )));
        };
        let text = c.window.map_or_else(|| canary.window.clone(), String::from);
        let window = match crate::util::parse_duration(&text).map(|d| d.as_secs()) {
            Some(secs) if secs >= 1 => Window { text, secs },
            _ => {
                let e = anyhow!("window `{text}` is not a duration of at least 1s (e.g. 30m)");
                return Err(Box::new(StepReport::error("canary", &l.display, &e)));
            }
        };
        let arms = baseline_version(c.baseline_selector.is_some(), rollback).map(|baseline_version| Arms {
            candidate_version: l.bundle.metadata.version.clone(),
            baseline_version,
            candidate_override: c.candidate_selector.map(String::from),
            baseline_override: c.baseline_selector.map(String::from),
        });
        Ok(CanaryPlan {
            target: l.display.clone(),
            canary,
            shadow: c.mode.unwrap_or(canary.mode) == CanaryMode::Shadow,
            window,
            provider: canary.provider.unwrap_or_default(),
            prometheus: c.prometheus.map(String::from),
            golden: canary.golden.clone(),
            endpoint: c.endpoint.map(String::from),
            arms,
        })
    }

    /// The current split: the window ending `now`, with the golden set.
    pub(crate) fn current(&self, now: f64) -> Judgment {
        Judgment { window: self.window.clone(), now, golden: true, alone: false }
    }

    /// Traffic step `percent`, over the last window of its latest stretch
    /// (at least a second: `ramp::judged_window` says so). The golden set
    /// checks the candidate as it is now: only with the latest step held.
    pub(crate) fn at_step(&self, percent: u32, w: &StepWindow, latest: bool) -> Judgment {
        let secs = w.secs.round() as u64;
        Judgment {
            window: Window { text: format!("{secs}s"), secs },
            now: w.end,
            golden: latest,
            alone: percent == 100,
        }
    }

    /// The golden set's file and endpoint, or the run it stands for when it
    /// is not sent (none declared, no endpoint, or not this judgment's).
    pub(crate) fn golden(&self, j: &Judgment) -> Result<(&str, &str), GoldenRun> {
        let Some(file) = self.golden.as_deref() else { return Err(GoldenRun::NotDeclared) };
        match self.endpoint.as_deref() {
            Some(endpoint) if j.golden => Ok((file, endpoint)),
            _ => Err(GoldenRun::NoEndpoint),
        }
    }

    /// Everything one judgment asks Prometheus, in the order it is asked:
    /// each gate, then both arms' traffic. `Err`: the step's ERROR, no
    /// baseline to compare.
    pub(crate) fn asks(&self, j: &Judgment) -> Result<Asks, Box<StepReport>> {
        let arms = self.arms.as_ref().map_err(|e| self.error(e))?;
        let window = format!("{}s", j.window.secs);
        let mut gates = Vec::new();
        let mut unchecked = Vec::new();
        for (index, g) in self.canary.gates.iter().enumerate() {
            if j.alone && !providers::has_absolute_limit(g) {
                unchecked.push(g.metric.clone());
                continue;
            }
            gates.push(self.gate_ask(arms, index, g, &window, j));
        }
        let p = self.provider;
        let (candidate, baseline) = (arms.candidate(p), arms.baseline(p));
        let traffic =
            traffic_asks(query::traffic_queries(p, &candidate, &window), query::traffic_queries(p, &baseline, &window));
        Ok(Asks { gates, unchecked, traffic, window_secs: j.window.secs as f64, candidate, baseline })
    }

    /// Gate `index`: both arms' queries under its provider's template, and
    /// the input its answers fill.
    fn gate_ask(&self, arms: &Arms, index: usize, g: &bundle::Gate, window: &str, j: &Judgment) -> GateAsk {
        let p = query::gate_provider(self.canary, g);
        let t = providers::template(p, &g.metric);
        let (kind, quantile, higher_is_better) =
            t.as_ref().map_or((MetricKind::Proportion, 0.0, false), |t| (t.kind, t.quantile, t.higher_is_better));
        let input = GateInput {
            metric: g.metric.clone(),
            kind,
            quantile,
            max_absolute: g.max_absolute,
            max_relative_increase: g.max_relative_increase,
            min_samples: self.canary.min_samples,
            window_secs: j.window.secs as f64,
            candidate: unread(),
            baseline: unread(),
            higher_is_better,
            min_absolute: g.min_absolute,
            min_relative_decrease: g.min_relative_decrease,
            request_counts: None,
            candidate_only: j.alone,
        };
        let unsupported = t.is_none().then(|| providers::unsupported(p, &g.metric));
        let queries = t.map(|template| {
            let cq = query::side_queries(&template, g, &arms.candidate(p), window);
            let bq = query::side_queries(&template, g, &arms.baseline(p), window);
            // The baseline's count first: the order the queries have always gone in.
            let requests = match (&cq.requests, &bq.requests) {
                (Some(c), _) if j.alone => vec![c.clone()],
                (Some(c), Some(b)) => vec![b.clone(), c.clone()],
                _ => Vec::new(),
            };
            GateQueries { template, candidate: cq, baseline: (!j.alone).then_some(bq), requests }
        });
        GateAsk { index, metric: g.metric.clone(), queries, input, unsupported }
    }

    /// The range queries that place the traffic steps: both arms' requests
    /// per resolution over the look-back horizon ending `now`. `Err`: the
    /// step's ERROR (no request count to read, or no baseline).
    pub(crate) fn timeline(&self, now: f64) -> Result<TimelineAsk, Box<StepReport>> {
        let p = self.provider;
        if providers::traffic(p).is_none() {
            return Err(self.error(&format!(
                "provider `{}` exports no request count, so the arms' traffic shares (which place the steps) cannot be read; set the plan's provider to the serving stack and `provider: dcgm` on the GPU gates only",
                providers::name(p)
            )));
        }
        let arms = self.arms.as_ref().map_err(|e| self.error(e))?;
        let res = ramp::resolution_secs(self.window.secs);
        let horizon = ramp::horizon_secs(res);
        let (candidate, baseline) = (arms.candidate(p), arms.baseline(p));
        let q = |sel: &str| query::requests_per_step(p, sel, res).unwrap_or_default();
        Ok(TimelineAsk {
            now,
            start: now - horizon as f64,
            res,
            horizon,
            candidate_query: q(&candidate),
            baseline_query: q(&baseline),
            candidate,
            baseline,
        })
    }
}

impl CanaryPlan<'_> {
    /// The step's ERROR: `why` nothing could be judged.
    fn error(&self, why: &str) -> Box<StepReport> {
        Box::new(StepReport::error("canary", &self.target, &anyhow!(why.to_string())))
    }
}

/// The baseline's version: none with `--baseline-selector`, else the
/// rollback target's, which must load.
fn baseline_version(selector: bool, rollback: Option<Result<String, String>>) -> Result<Option<String>, String> {
    match (selector, rollback) {
        (true, _) => Ok(None),
        (false, Some(Ok(version))) => Ok(Some(version)),
        (false, Some(Err(e))) => {
            Err(format!("no baseline: the rollback target does not load ({e}); pass --baseline-selector"))
        }
        (false, None) => Err("no baseline: the bundle declares no spec.rollback; pass --baseline-selector".into()),
    }
}

/// One judgment: the window ending at `now` (unix seconds), whether the
/// golden set runs, and whether the candidate is `alone` (a 100% step,
/// where the baseline serves nothing: only gates with an absolute limit are
/// judged, on the candidate alone).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Judgment {
    pub window: Window,
    pub now: f64,
    pub golden: bool,
    pub alone: bool,
}

/// An arm not read (the baseline at 100%, a gate its provider cannot
/// compute): no value, no samples.
fn unread() -> Side {
    Side::Proportion { value: None, total: 0.0 }
}

/// What one judgment asks: each gate, the gates a 100% step skips, both
/// arms' traffic ([`traffic_asks`]), and the arms' selectors.
#[derive(Debug)]
pub(crate) struct Asks {
    pub gates: Vec<GateAsk>,
    pub unchecked: Vec<String>,
    pub traffic: Vec<String>,
    pub window_secs: f64,
    pub candidate: String,
    pub baseline: String,
}

/// The traffic queries in the order they are asked and [`Asks::gathered`]
/// reads the answers: requests, requests before, P95, P95 before, each
/// candidate then baseline; none when the provider exports no request count.
fn traffic_asks(c: Option<query::TrafficQueries>, b: Option<query::TrafficQueries>) -> Vec<String> {
    match (c, b) {
        (Some(c), Some(b)) => {
            vec![c.requests, b.requests, c.requests_before, b.requests_before, c.p95, b.p95, c.p95_before, b.p95_before]
        }
        _ => Vec::new(),
    }
}

impl Asks {
    /// The judgment as read: the gates, and the traffic from the answers to
    /// [`Asks::traffic`], in its order.
    pub(crate) fn gathered(self, gates: Vec<GateRead>, traffic: &[Option<f64>]) -> Gathered {
        let mut t = Traffic { window_seconds: self.window_secs, ..Traffic::default() };
        if let [cr, br, crb, brb, cp, bp, cpb, bpb] = *traffic {
            (t.candidate_requests, t.baseline_requests) = (cr, br);
            (t.candidate_requests_before, t.baseline_requests_before) = (crb, brb);
            (t.candidate_p95, t.baseline_p95) = (cp, bp);
            (t.candidate_p95_before, t.baseline_p95_before) = (cpb, bpb);
        }
        Gathered { gates, traffic: t, unchecked: self.unchecked, candidate: self.candidate, baseline: self.baseline }
    }
}

/// One gate to read: its place in the plan, its queries (none when its
/// provider cannot compute it), and the input the answers fill.
#[derive(Debug)]
pub(crate) struct GateAsk {
    pub index: usize,
    pub metric: String,
    pub queries: Option<GateQueries>,
    input: GateInput,
    unsupported: Option<String>,
}

/// A gate's template and both arms' queries.
#[derive(Debug)]
pub(crate) struct GateQueries {
    pub template: Template,
    pub candidate: SideQueries,
    /// None at a 100% step: the baseline served nothing and is not read.
    pub baseline: Option<SideQueries>,
    /// The arms' request counts, when the template has them, in the order
    /// they are asked: the baseline's (unless alone), then the candidate's.
    pub requests: Vec<String>,
}

impl GateAsk {
    /// The gate as read, `requests` answering [`GateQueries::requests`]:
    /// the arms not read stay empty (the baseline's count 0 when alone);
    /// each count is whole, and none or not a positive number is 0.
    pub(crate) fn read(&self, candidate: Option<Side>, baseline: Option<Side>, requests: &[Option<f64>]) -> GateRead {
        let n = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| v.round() as u64).unwrap_or(0);
        let request_counts = match *requests {
            [c] => Some((n(c), 0)),
            [b, c] => Some((n(c), n(b))),
            _ => None,
        };
        let input = GateInput {
            candidate: candidate.unwrap_or_else(unread),
            baseline: baseline.unwrap_or_else(unread),
            request_counts,
            ..self.input.clone()
        };
        GateRead { index: self.index, input, unsupported: self.unsupported.clone() }
    }
}

/// One gate as read from Prometheus: its place in the plan, its input, and
/// — when its provider cannot compute it — why (its outcome is then NO
/// DATA with that note as its message).
#[derive(Debug)]
pub(crate) struct GateRead {
    pub index: usize,
    pub input: GateInput,
    pub unsupported: Option<String>,
}

impl GateRead {
    pub(crate) fn outcome(&self) -> GateOutcome {
        let mut o = gate::evaluate_gate(&self.input);
        if let Some(n) = &self.unsupported {
            o.message = n.clone();
        }
        o
    }
}

/// What one judgment read: each gate, the traffic of both arms, the gates
/// skipped at a 100% step for lack of an absolute limit, and the arms'
/// selectors (the plan's provider's).
#[derive(Debug)]
pub(crate) struct Gathered {
    pub gates: Vec<GateRead>,
    pub traffic: Traffic,
    pub unchecked: Vec<String>,
    pub candidate: String,
    pub baseline: String,
}

/// The range queries that place the traffic steps, from `start` to `now`
/// every `res` seconds, and the arms' selectors.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TimelineAsk {
    pub now: f64,
    pub start: f64,
    pub res: u64,
    pub horizon: u64,
    pub candidate_query: String,
    pub baseline_query: String,
    pub candidate: String,
    pub baseline: String,
}
