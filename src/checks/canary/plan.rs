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

/// What the command line chose: `options::CanaryOptions` as plain values
/// (importing `options` here would close a module cycle through
/// `manifests` and `adapters`).
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
    /// The baseline's base URL: the golden set is paired when given.
    pub baseline_endpoint: Option<&'a str>,
    /// Prompts the candidate may fail beyond the baseline (paired gate).
    pub golden_margin: u32,
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
    /// The baseline's endpoint and the paired gate's margin (prompts).
    pub baseline_endpoint: Option<String>,
    pub golden_margin: u32,
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
            baseline_endpoint: c.baseline_endpoint.map(String::from),
            golden_margin: c.golden_margin,
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
    /// each count is whole, and none or not a finite number is 0.
    pub(crate) fn read(&self, candidate: Option<Side>, baseline: Option<Side>, requests: &[Option<f64>]) -> GateRead {
        // The cast saturates: a negative count is 0.
        let n = |v: Option<f64>| v.filter(|v| v.is_finite()).map(|v| v.round() as u64).unwrap_or(0);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Verdict;

    /// The shipped example: steps [10, 50, 100], window 30m, gates
    /// error_rate (maxAbsolute), p95_latency_seconds and gpu_memory_bytes
    /// (relative only), a golden set; the rollback target's version is `v1`.
    fn plan<'a>(l: &'a Loaded, c: Choices<'_>) -> CanaryPlan<'a> {
        CanaryPlan::resolve(l, &c, Some(Ok("v1".into()))).expect("the example declares a plan")
    }

    const ALL: Choices<'static> = Choices {
        prometheus: Some("http://prom:9090"),
        window: Some("90s"),
        mode: Some(CanaryMode::Shadow),
        candidate_selector: Some("track=\"canary\""),
        baseline_selector: Some("track=\"stable\""),
        endpoint: Some("http://model:8080"),
        baseline_endpoint: Some("http://baseline:8080"),
        golden_margin: 2,
    };

    /// Without options every default is the bundle's plan's (or
    /// bundlegate's); each option given wins over it.
    #[test]
    fn defaults_come_from_the_plan_and_each_option_wins() {
        let l = crate::bundle::example();
        let p = plan(&l, Choices::default());
        assert_eq!(p.window, Window { text: "30m".into(), secs: 1800 });
        assert!(!p.shadow);
        assert_eq!(p.provider, MetricProvider::Bundlegate);
        assert_eq!((p.prometheus.as_deref(), p.endpoint.as_deref()), (None, None));
        assert_eq!((p.baseline_endpoint.as_deref(), p.golden_margin), (None, 0));
        assert_eq!((p.golden.as_deref(), p.target.as_str()), (Some("golden.jsonl"), l.display.as_str()));
        assert_eq!(p.canary.steps, [10, 50, 100]);
        let arms = p.arms.as_ref().unwrap();
        assert_eq!(
            (arms.candidate(p.provider), arms.baseline(p.provider)),
            ("version=\"v2\"".into(), "version=\"v1\"".into())
        );

        let p = plan(&l, ALL);
        assert_eq!(p.window, Window { text: "90s".into(), secs: 90 });
        assert!(p.shadow);
        assert_eq!(
            (p.prometheus.as_deref(), p.endpoint.as_deref()),
            (Some("http://prom:9090"), Some("http://model:8080"))
        );
        assert_eq!((p.baseline_endpoint.as_deref(), p.golden_margin), (Some("http://baseline:8080"), 2));
        let arms = p.arms.as_ref().unwrap();
        assert_eq!(
            (arms.candidate(p.provider), arms.baseline(p.provider)),
            ("track=\"canary\"".into(), "track=\"stable\"".into())
        );

        // The plan's mode and provider, and `--mode` over the plan's.
        let mut l = crate::bundle::example();
        let c = l.bundle.spec.canary.as_mut().unwrap();
        (c.mode, c.provider) = (CanaryMode::Shadow, Some(MetricProvider::Vllm));
        let p = plan(&l, Choices::default());
        assert!(p.shadow);
        assert_eq!(p.provider, MetricProvider::Vllm);
        assert!(!plan(&l, Choices { mode: Some(CanaryMode::Canary), ..Choices::default() }).shadow);
    }

    /// No plan is NOT RUN; a window that is not at least a second is an
    /// ERROR, both before any work.
    #[test]
    fn no_plan_or_no_usable_window_stops_before_any_work() {
        let mut l = crate::bundle::example();
        for bad in ["0s", "500ms", "soon"] {
            let s = CanaryPlan::resolve(&l, &Choices { window: Some(bad), ..Choices::default() }, None).unwrap_err();
            assert_eq!(s.verdict, Verdict::Error);
            assert_eq!(s.summary, format!("window `{bad}` is not a duration of at least 1s (e.g. 30m)"));
        }
        assert_eq!(plan(&l, Choices { window: Some("1s"), ..Choices::default() }).window.secs, 1);
        l.bundle.spec.canary = None;
        let s = CanaryPlan::resolve(&l, &Choices::default(), None).unwrap_err();
        assert_eq!(s.verdict, Verdict::NotRun);
        assert_eq!(s.summary, "the bundle declares no spec.canary plan: there is nothing to compare");
    }

    /// The baseline is the selector given, else the rollback target's
    /// version, which must load.
    #[test]
    fn the_baseline_is_the_selector_else_the_rollback_targets_version() {
        assert_eq!(baseline_version(true, None), Ok(None));
        assert_eq!(baseline_version(true, Some(Err("broken".into()))), Ok(None));
        assert_eq!(baseline_version(false, Some(Ok("v1".into()))), Ok(Some("v1".into())));
        assert_eq!(
            baseline_version(false, Some(Err("broken".into()))),
            Err("no baseline: the rollback target does not load (broken); pass --baseline-selector".into())
        );
        assert_eq!(
            baseline_version(false, None),
            Err("no baseline: the bundle declares no spec.rollback; pass --baseline-selector".into())
        );
        let l = crate::bundle::example();
        let p = CanaryPlan::resolve(&l, &Choices::default(), None).unwrap();
        assert_eq!(p.arms.unwrap_err(), "no baseline: the bundle declares no spec.rollback; pass --baseline-selector");
    }

    /// The current split is the plan's window ending now, with the golden
    /// set; a step's window is its placed window in whole seconds, alone at
    /// 100%, with the golden set only at the latest step.
    #[test]
    fn a_judgment_is_the_current_window_or_a_steps() {
        let l = crate::bundle::example();
        let p = plan(&l, Choices::default());
        let now = p.current(1000.5);
        assert_eq!(now, Judgment { window: p.window.clone(), now: 1000.5, golden: true, alone: false });
        let w = StepWindow { held_from: 100.0, held_to: 200.0, end: 190.0, secs: 59.5 };
        let step = p.at_step(50, &w, false);
        assert_eq!(
            step,
            Judgment { window: Window { text: "60s".into(), secs: 60 }, now: 190.0, golden: false, alone: false }
        );
        let full = p.at_step(100, &StepWindow { secs: 12.4, ..w }, true);
        assert_eq!((full.window.text.as_str(), full.window.secs, full.golden, full.alone), ("12s", 12, true, true));
    }

    /// The golden set is sent only when declared, with an endpoint, and in
    /// a judgment that runs it; else the run says which was missing.
    #[test]
    fn the_golden_set_is_sent_only_when_declared_with_an_endpoint() {
        let l = crate::bundle::example();
        let p = plan(&l, ALL);
        assert_eq!(p.golden(&p.current(0.0)).unwrap(), ("golden.jsonl", "http://model:8080"));
        let not_this_one = Judgment { golden: false, ..p.current(0.0) };
        assert!(matches!(p.golden(&not_this_one), Err(GoldenRun::NoEndpoint)));
        let p = plan(&l, Choices::default());
        assert!(matches!(p.golden(&p.current(0.0)), Err(GoldenRun::NoEndpoint)));
        let mut l = crate::bundle::example();
        l.bundle.spec.canary.as_mut().unwrap().golden = None;
        let p = plan(&l, ALL);
        assert!(matches!(p.golden(&p.current(0.0)), Err(GoldenRun::NotDeclared)));
    }

    /// Every gate is asked for both arms over the judgment's window, then
    /// both arms' traffic; at 100% only gates with an absolute limit, on the
    /// candidate alone, and the others are named as not checked.
    #[test]
    fn a_judgment_asks_every_gate_then_both_arms_traffic() {
        let l = crate::bundle::example();
        let p = plan(&l, Choices::default());
        let j = p.at_step(50, &StepWindow { held_from: 0.0, held_to: 400.0, end: 400.0, secs: 300.0 }, false);
        let a = p.asks(&j).unwrap();
        assert_eq!((a.candidate.as_str(), a.baseline.as_str()), ("version=\"v2\"", "version=\"v1\""));
        assert_eq!(
            a.gates.iter().map(|g| (g.index, g.metric.as_str())).collect::<Vec<_>>(),
            [(0, "error_rate"), (1, "p95_latency_seconds"), (2, "gpu_memory_bytes")]
        );
        assert!(a.unchecked.is_empty());
        let g = &l.bundle.spec.canary.as_ref().unwrap().gates[0];
        let t = providers::template(MetricProvider::Bundlegate, "error_rate").unwrap();
        let q = a.gates[0].queries.as_ref().unwrap();
        assert_eq!(q.candidate, query::side_queries(&t, g, "version=\"v2\"", "300s"));
        assert_eq!(q.baseline, Some(query::side_queries(&t, g, "version=\"v1\"", "300s")));
        assert!(q.requests.is_empty(), "error_rate counts its requests itself");
        let c = query::traffic_queries(MetricProvider::Bundlegate, "version=\"v2\"", "300s").unwrap();
        let b = query::traffic_queries(MetricProvider::Bundlegate, "version=\"v1\"", "300s").unwrap();
        assert_eq!(
            a.traffic,
            [c.requests, b.requests, c.requests_before, b.requests_before, c.p95, b.p95, c.p95_before, b.p95_before]
        );
        assert_eq!(a.window_secs, 300.0);

        let alone = p.asks(&Judgment { alone: true, ..j }).unwrap();
        assert_eq!(alone.gates.iter().map(|g| g.metric.as_str()).collect::<Vec<_>>(), ["error_rate"]);
        assert_eq!(alone.unchecked, ["p95_latency_seconds", "gpu_memory_bytes"]);
        assert!(alone.gates[0].queries.as_ref().unwrap().baseline.is_none());
        assert!(alone.gates[0].input.candidate_only);

        let none = CanaryPlan::resolve(&l, &Choices::default(), None).unwrap();
        let s = none.asks(&none.current(0.0)).unwrap_err();
        assert_eq!(s.verdict, Verdict::Error);
        assert_eq!(s.summary, "no baseline: the bundle declares no spec.rollback; pass --baseline-selector");
    }

    /// A gate's input carries the plan's and the gate's numbers; its
    /// request counts go back to their arms (the baseline's asked first),
    /// whole, and none or not a positive number is 0.
    #[test]
    fn a_gate_is_read_into_its_input_with_request_counts_per_arm() {
        let mut l = crate::bundle::example();
        let c = l.bundle.spec.canary.as_mut().unwrap();
        c.provider = Some(MetricProvider::Vllm);
        c.gates = vec![serde_json::from_value(
            serde_json::json!({"metric": "output_tokens_per_second", "minRelativeDecrease": 0.1}),
        )
        .unwrap()];
        let p = plan(&l, Choices::default());
        let j = p.current(0.0);
        let a = p.asks(&j).unwrap();
        let g = &a.gates[0];
        let q = g.queries.as_ref().unwrap();
        let (cr, br) = (q.candidate.requests.clone().unwrap(), q.baseline.as_ref().unwrap().requests.clone().unwrap());
        assert_eq!(q.requests, [br, cr.clone()]);
        let side = Side::Gauge { value: Some(5.0), samples: vec![5.0] };
        let r = g.read(Some(side.clone()), None, &[Some(10.4), Some(20.6)]);
        assert_eq!(r.input.request_counts, Some((21, 10)));
        assert_eq!((r.input.candidate.clone(), r.input.baseline.clone()), (side, unread()));
        assert_eq!(
            (r.input.metric.as_str(), r.input.min_samples, r.input.window_secs),
            ("output_tokens_per_second", 200, 1800.0)
        );
        assert!(r.input.higher_is_better && !r.input.candidate_only);
        assert_eq!(r.input.min_relative_decrease, Some(0.1));
        for bad in [None, Some(f64::NAN), Some(-3.0), Some(f64::INFINITY), Some(0.0)] {
            assert_eq!(g.read(None, None, &[bad, bad]).input.request_counts, Some((0, 0)), "{bad:?}");
        }
        assert_eq!(g.read(None, None, &[]).input.request_counts, None);
        let alone = p.asks(&Judgment { alone: true, ..j }).unwrap();
        // Higher is better has an absolute floor only with minAbsolute: none here.
        assert!(alone.gates.is_empty() && alone.unchecked == ["output_tokens_per_second"]);
        let c = l.bundle.spec.canary.as_mut().unwrap();
        c.gates[0].min_absolute = Some(1.0);
        let p = plan(&l, Choices::default());
        let alone = p.asks(&Judgment { alone: true, ..p.current(0.0) }).unwrap();
        assert_eq!(alone.gates[0].queries.as_ref().unwrap().requests, [cr]);
        assert_eq!(alone.gates[0].read(None, None, &[Some(7.0)]).input.request_counts, Some((7, 0)));
    }

    /// A gate its provider cannot compute asks nothing and is NO DATA,
    /// saying which provider has it.
    #[test]
    fn a_gate_the_provider_cannot_compute_asks_nothing_and_says_why() {
        let mut l = crate::bundle::example();
        l.bundle.spec.canary.as_mut().unwrap().gates[0].metric = "ttft_p95_seconds".into();
        let p = plan(&l, Choices::default());
        let a = p.asks(&p.current(0.0)).unwrap();
        assert!(a.gates[0].queries.is_none() && a.gates[1].queries.is_some());
        let o = a.gates[0].read(None, None, &[]).outcome();
        assert_eq!(o.verdict, super::super::gate::GateVerdict::NoData);
        assert_eq!(o.message, providers::unsupported(MetricProvider::Bundlegate, "ttft_p95_seconds"));
        assert_ne!(a.gates[1].read(None, None, &[]).outcome().message, o.message);
    }

    /// The traffic answers fill their fields in the order they were asked;
    /// none answered (a provider without a request count) leaves them empty.
    #[test]
    fn traffic_answers_fill_their_fields_in_the_asking_order() {
        let l = crate::bundle::example();
        let p = plan(&l, Choices::default());
        let answers: Vec<Option<f64>> = (1..=8).map(|n| Some(n as f64)).collect();
        let t = p.asks(&p.current(0.0)).unwrap().gathered(Vec::new(), &answers).traffic;
        let got = [
            t.candidate_requests,
            t.baseline_requests,
            t.candidate_requests_before,
            t.baseline_requests_before,
            t.candidate_p95,
            t.baseline_p95,
            t.candidate_p95_before,
            t.baseline_p95_before,
        ];
        assert_eq!(got.to_vec(), answers);
        assert_eq!(t.window_seconds, 1800.0);
        let g = p.asks(&p.current(0.0)).unwrap().gathered(Vec::new(), &[]);
        assert_eq!((g.traffic.candidate_requests, g.traffic.baseline_p95_before), (None, None));
        assert_eq!((g.candidate.as_str(), g.baseline.as_str()), ("version=\"v2\"", "version=\"v1\""));
    }

    /// The steps are placed from both arms' requests at a tenth of the
    /// window over the look-back horizon; a provider without a request
    /// count, or no baseline, is the step's ERROR.
    #[test]
    fn the_timeline_is_both_arms_requests_over_the_horizon() {
        let l = crate::bundle::example();
        let p = plan(&l, Choices::default());
        let t = p.timeline(100_000.0).unwrap();
        assert_eq!((t.res, t.horizon, t.now, t.start), (180, 86_400, 100_000.0, 13_600.0));
        let q = |sel: &str| query::requests_per_step(MetricProvider::Bundlegate, sel, 180).unwrap();
        assert_eq!((t.candidate_query, t.baseline_query), (q("version=\"v2\""), q("version=\"v1\"")));
        assert_eq!((t.candidate.as_str(), t.baseline.as_str()), ("version=\"v2\"", "version=\"v1\""));

        let mut l = crate::bundle::example();
        l.bundle.spec.canary.as_mut().unwrap().provider = Some(MetricProvider::Dcgm);
        let s = plan(&l, Choices::default()).timeline(0.0).unwrap_err();
        assert_eq!(s.verdict, Verdict::Error);
        assert!(
            s.summary.starts_with("provider `dcgm` exports no request count, so the arms' traffic shares"),
            "{}",
            s.summary
        );
        let l = crate::bundle::example();
        let s = CanaryPlan::resolve(&l, &Choices::default(), None).unwrap().timeline(0.0).unwrap_err();
        assert!(s.summary.starts_with("no baseline: the bundle declares no spec.rollback"), "{}", s.summary);
    }
}
