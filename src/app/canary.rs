//! `bundlegate canary`: the order of work. Build the queries
//! (`checks::canary::query`), send them to Prometheus (`adapters::prom`),
//! read the answers (`parse::prom`), judge them (`checks::canary`), run the
//! golden set against the candidate endpoint, and write up the report with
//! its exit action.

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::adapters::prom::{self, Prom};
use crate::app::ctx::Ctx;
use crate::bundle::{self, CanaryMode, Loaded, MetricProvider};
use crate::checks::canary::decision::{self as decision, Action, RollbackTarget, Situation, Traffic, Trend};
use crate::checks::canary::gate::{self as gate, GateInput, GateOutcome, GateVerdict, MetricKind, Side};
use crate::checks::canary::golden::{self, GoldenResult, GoldenRun};
use crate::checks::canary::histogram::Histogram;
use crate::checks::canary::providers::{self, Template};
use crate::checks::canary::query::{self, Arms, SideQueries};
use crate::checks::canary::ramp::{self as st, StepVerdict, StepWindow};
use crate::checks::canary::statistics;
use crate::diag::Diagnostic;
use crate::diag::Overrides;
use crate::diag::Severity;
use crate::options::{CanaryOptions, HumanDuration, VerifyOptions};
use crate::parse::prom as read;
use crate::report::{StepReport, Table, Verdict};

pub(crate) fn run(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> Result<Vec<StepReport>> {
    Ok(vec![if args.steps {
        ctx.block_on_step("canary", &l.display, analyze_steps(ctx, l, args, ov))
    } else {
        ctx.block_on_step("canary", &l.display, analyze(ctx, l, args, ov))
    }])
}

/// One Prometheus and the window every query of a judgment uses.
struct PromWindow<'a> {
    prom: &'a Prom,
    window: String,
}

impl PromWindow<'_> {
    /// One finite number, or none.
    async fn scalar(&self, q: &str) -> Result<Option<f64>> {
        Ok(self.prom.scalar(q).await?.filter(|v| v.is_finite()))
    }

    /// One arm of a gate: its value and the samples its test needs.
    async fn side(&self, t: &Template, q: &SideQueries) -> Result<Side> {
        let value = self.scalar(&q.value).await?;
        Ok(match t.kind {
            // A NaN/Inf count reads as no requests: NO DATA, never a pass.
            MetricKind::Proportion => Side::Proportion { value, total: self.scalar(&q.samples).await?.unwrap_or(0.0) },
            MetricKind::Histogram => {
                let series = self.prom.query(&q.samples).await?;
                // A NaN count empties the histogram (NO DATA), see Histogram::from_buckets.
                let buckets = read::histogram_buckets(&series, &q.samples, t.bound_scale)?;
                Side::Histogram { value, hist: Histogram::from_buckets(buckets) }
            }
            MetricKind::Gauge => {
                let series = self.prom.query(&q.samples).await?;
                Side::Gauge { value, samples: read::gauge_samples(&series, t.scale) }
            }
        })
    }
}

fn unix_now(ctx: &Ctx) -> f64 {
    ctx.now().timestamp_micros() as f64 / 1e6
}

/// Judge the current split: gates over the window ending now.
pub(crate) async fn analyze(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    analyze_at(ctx, l, args, ov, unix_now(ctx), true, false).await.report
}

/// Shadow mode: the option, else the plan's.
fn is_shadow(plan: &bundle::Canary, args: &CanaryOptions) -> bool {
    match args.mode {
        None => plan.mode == CanaryMode::Shadow,
        Some(m) => m == CanaryMode::Shadow,
    }
}

/// The window as written: the option, else the plan's.
fn window_text(plan: &bundle::Canary, args: &CanaryOptions) -> String {
    args.window.as_ref().map(|w| w.text.clone()).unwrap_or_else(|| plan.window.clone())
}

/// One judgment: the step report, the gate outcomes, and what the traffic
/// steps read of it (the gates' sentence, the report's data).
struct Judged {
    report: StepReport,
    outcomes: Vec<GateOutcome>,
    /// "n of m gate(s) passed, …; golden set: …" — the summary before its
    /// action; none when the judgment stopped before the gates.
    gates_note: Option<String>,
    data: Option<CanaryData>,
}

impl Judged {
    /// A judgment that stopped before any gate was evaluated.
    fn stopped(report: StepReport) -> Judged {
        Judged { report, outcomes: Vec::new(), gates_note: None, data: None }
    }
}

/// Gates over the window ending at `now` (unix seconds); the golden set
/// runs only when `with_golden`. `alone`: a 100% step, where the baseline
/// serves nothing: only gates with an absolute limit are judged, on the
/// candidate alone.
async fn analyze_at(
    ctx: &Ctx,
    l: &Loaded,
    args: &CanaryOptions,
    ov: &Overrides,
    now: f64,
    with_golden: bool,
    alone: bool,
) -> Judged {
    let Some(plan) = &l.bundle.spec.canary else {
        return Judged::stopped(StepReport::not_run(
            "canary",
            &l.display,
            "the bundle declares no spec.canary plan: there is nothing to compare",
        ));
    };
    let no_golden = CanaryOptions { endpoint: None, ..args.clone() };
    let golden_args = if with_golden { args } else { &no_golden };
    analyze_plan(ctx, l, plan, golden_args, ov, now, alone).await
}

/// The rollback target as loaded (or why it does not load), for the
/// rollback check.
type Previous<'a> = Option<(&'a bundle::Rollback, Result<Loaded, crate::adapters::bundle_files::NamedFileError>)>;

/// The baseline's version: none with `--baseline-selector`, else the
/// rollback target's, which must load. Also returns the rollback target as
/// loaded, for the rollback check.
fn baseline_version<'a>(l: &'a Loaded, args: &CanaryOptions) -> Result<(Option<String>, Previous<'a>)> {
    let prev =
        l.bundle.spec.rollback.as_ref().map(|rb| (rb, crate::adapters::bundle_files::load_named_bundle(l, &rb.bundle)));
    let version = match (&args.baseline_selector, &prev) {
        (Some(_), _) => None,
        (None, Some((_, Ok(p)))) => Some(p.bundle.metadata.version.clone()),
        (None, Some((_, Err(e)))) => {
            return Err(anyhow!("no baseline: the rollback target does not load ({e}); pass --baseline-selector"))
        }
        (None, None) => {
            return Err(anyhow!("no baseline: the bundle declares no spec.rollback; pass --baseline-selector"))
        }
    };
    Ok((version, prev))
}

/// The arms' selectors: the overrides, else each version's label.
fn arms(l: &Loaded, args: &CanaryOptions, baseline_version: Option<String>) -> Arms {
    Arms {
        candidate_version: l.bundle.metadata.version.clone(),
        baseline_version,
        candidate_override: args.candidate_selector.clone(),
        baseline_override: args.baseline_selector.clone(),
    }
}

/// The order of one judgment: the window, the golden set, the baseline,
/// the gates read from Prometheus, their outcomes, the situation and the
/// action, then the write-up.
async fn analyze_plan(
    ctx: &Ctx,
    l: &Loaded,
    plan: &bundle::Canary,
    args: &CanaryOptions,
    ov: &Overrides,
    now: f64,
    alone: bool,
) -> Judged {
    let shadow = is_shadow(plan, args);
    let window_text = window_text(plan, args);
    let window_secs = match crate::util::parse_duration(&window_text).map(|d| d.as_secs()) {
        Some(s) if s >= 1 => s,
        _ => {
            let e = anyhow!("window `{window_text}` is not a duration of at least 1s (e.g. 30m)");
            return Judged::stopped(StepReport::error("canary", &l.display, &e));
        }
    };

    // Golden set first: it needs no Prometheus and its failures stand alone.
    let golden = run_golden(ctx, l, args).await;
    let provider = plan.provider.unwrap_or_default();

    let Some(prom_url) = args.prometheus_url() else { return Judged::stopped(golden_only(l, &golden, ov)) };

    let (baseline_version, prev) = match baseline_version(l, args) {
        Ok(x) => x,
        Err(e) => return Judged::stopped(StepReport::error("canary", &l.display, &e)),
    };
    let arms = arms(l, args, baseline_version);
    let prom = match ctx.http().and_then(|h| Prom::new(h.clone(), prom_url, now)) {
        Ok(p) => p,
        Err(e) => return Judged::stopped(StepReport::error("canary", &l.display, &e)),
    };
    let pw = PromWindow { prom: &prom, window: format!("{window_secs}s") };
    let gathered = match gather(&pw, plan, &arms, window_secs as f64, alone).await {
        Ok(x) => x,
        Err(e) => {
            // Unanswered queries are not "no data": the step could not finish.
            let mut s = StepReport::error("canary", &l.display, &e);
            s.summary = format!("could not query Prometheus, nothing was compared: {e:#}");
            return Judged::stopped(s);
        }
    };
    let outcomes: Vec<GateOutcome> = gathered.gates.iter().map(GateRead::outcome).collect();
    let trend = gathered.traffic.trend();
    let situation = match decision::classify(&outcomes, golden.failed(), &trend) {
        // No baseline ran beside it: neither version nor load can be named.
        Situation::Unattributed if alone => Situation::FullTrafficBreach,
        other => other,
    };
    let rollback = if situation == Situation::VersionRegression && !shadow {
        check_rollback(ctx, l, prev).await
    } else {
        RollbackTarget::NotChecked
    };
    let more = outcomes.iter().filter_map(|o| o.more_samples.zip(o.more_minutes)).max_by(|a, b| a.1.total_cmp(&b.1));
    let action = decision::decide(situation, shadow, alone, &trend, &rollback, more);
    let findings = Findings {
        window_text,
        window_secs,
        now,
        alone,
        shadow,
        candidate_sel: arms.candidate(provider),
        baseline_sel: arms.baseline(provider),
        gathered,
        outcomes,
        golden,
        trend,
        situation,
        rollback,
        action,
    };
    findings.write_up(l, ov)
}

/// Everything one judgment found, before it is written up.
struct Findings {
    window_text: String,
    window_secs: u64,
    now: f64,
    alone: bool,
    shadow: bool,
    candidate_sel: String,
    baseline_sel: String,
    gathered: Gathered,
    outcomes: Vec<GateOutcome>,
    golden: GoldenRun,
    trend: Trend,
    situation: Situation,
    rollback: RollbackTarget,
    action: Action,
}

/// The judgment's `data` in the report (docs/report.md), in this order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
struct CanaryData {
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

#[derive(Debug, Clone, Serialize)]
struct Selectors {
    candidate: String,
    baseline: String,
}

impl Findings {
    /// The step report: one finding and one table per gate, the golden set,
    /// the verdict, the summary with the action, the traffic table, the data.
    fn write_up(self, l: &Loaded, ov: &Overrides) -> Judged {
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
        let a = &self.action;
        s.summary = format!(
            "{gates_note}. Action: {} — {}. Watch next: {}.",
            a.action,
            a.precondition.trim_end_matches('.'),
            a.watch_next.trim_end_matches('.')
        );
        s.tables.push(self.gathered.traffic.table(&self.candidate_sel, &self.baseline_sel));
        let data = self.data();
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
        let arms_note =
            arms_note(self.alone, self.shadow, &self.candidate_sel, &self.baseline_sel, &self.gathered.unchecked);
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

    fn data(&self) -> CanaryData {
        CanaryData {
            action: self.action.action,
            precondition: self.action.precondition.clone(),
            watch_next: self.action.watch_next.clone(),
            situation: self.situation,
            mode: if self.shadow { "shadow" } else { "canary" },
            window: self.window_text.clone(),
            window_seconds: self.window_secs,
            evaluated_at: self.now,
            selectors: Selectors { candidate: self.candidate_sel.clone(), baseline: self.baseline_sel.clone() },
            candidate_alone: self.alone,
            not_checked: self.gathered.unchecked.clone(),
            alpha: statistics::ALPHA,
            power: statistics::POWER,
            gates: self.outcomes.clone(),
            trend: self.trend,
            traffic: self.gathered.traffic.clone(),
            golden: serde_json::to_value(self.golden.data()).unwrap_or_default(),
            rollback_target: self.rollback.clone(),
        }
    }
}

/// No Prometheus: the gates are not run, the golden set still is and its
/// failures stand alone.
fn golden_only(l: &Loaded, golden: &GoldenRun, ov: &Overrides) -> StepReport {
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

/// One gate as read from Prometheus: its place in the plan, its input, and
/// — when its provider cannot compute it — why (its outcome is then NO
/// DATA with that note as its message).
struct GateRead {
    index: usize,
    input: GateInput,
    unsupported: Option<String>,
}

impl GateRead {
    fn outcome(&self) -> GateOutcome {
        let mut o = gate::evaluate_gate(&self.input);
        if let Some(n) = &self.unsupported {
            o.message = n.clone();
        }
        o
    }
}

/// What one judgment read: each gate, the traffic of both arms, and —
/// at a 100% step — the gates skipped for lack of an absolute limit.
struct Gathered {
    gates: Vec<GateRead>,
    traffic: Traffic,
    unchecked: Vec<String>,
}

async fn gather(
    pw: &PromWindow<'_>,
    plan: &bundle::Canary,
    arms: &Arms,
    window_secs: f64,
    alone: bool,
) -> Result<Gathered> {
    let mut gates = Vec::new();
    let mut unchecked = Vec::new();
    for (index, g) in plan.gates.iter().enumerate() {
        if alone && !providers::has_absolute_limit(g) {
            unchecked.push(g.metric.clone());
            continue;
        }
        gates.push(read_gate(pw, plan, arms, index, g, window_secs, alone).await?);
    }
    let traffic = read_traffic(pw, plan.provider.unwrap_or_default(), arms, window_secs).await?;
    Ok(Gathered { gates, traffic, unchecked })
}

/// Gate `index` as read: both arms' numbers under its provider's template.
async fn read_gate(
    pw: &PromWindow<'_>,
    plan: &bundle::Canary,
    arms: &Arms,
    index: usize,
    g: &bundle::Gate,
    window_secs: f64,
    alone: bool,
) -> Result<GateRead> {
    let p = query::gate_provider(plan, g);
    let (t, unsupported) = match providers::template(p, &g.metric) {
        Some(t) => (Some(t), None),
        None => (None, Some(providers::unsupported(p, &g.metric))),
    };
    let (candidate, baseline, requests) = match &t {
        Some(t) => read_sides(pw, t, g, (&arms.candidate(p), &arms.baseline(p)), alone).await?,
        None => {
            let empty = Side::Proportion { value: None, total: 0.0 };
            (empty.clone(), empty, None)
        }
    };
    let (kind, quantile, higher_is_better) =
        t.as_ref().map_or((MetricKind::Proportion, 0.0, false), |t| (t.kind, t.quantile, t.higher_is_better));
    let input = GateInput {
        metric: g.metric.clone(),
        kind,
        quantile,
        max_absolute: g.max_absolute,
        max_relative_increase: g.max_relative_increase,
        min_samples: plan.min_samples,
        window_secs,
        candidate,
        baseline,
        higher_is_better,
        min_absolute: g.min_absolute,
        min_relative_decrease: g.min_relative_decrease,
        request_counts: requests,
        candidate_only: alone,
    };
    Ok(GateRead { index, input, unsupported })
}

/// Candidate and baseline of one gate, and each arm's request count when
/// the template has one. At a 100% step (`alone`) the baseline served
/// nothing and is not read.
async fn read_sides(
    pw: &PromWindow<'_>,
    t: &Template,
    g: &bundle::Gate,
    (cs, bs): (&str, &str),
    alone: bool,
) -> Result<(Side, Side, Option<(u64, u64)>)> {
    let (cq, bq) = (query::side_queries(t, g, cs, &pw.window), query::side_queries(t, g, bs, &pw.window));
    let candidate = pw.side(t, &cq).await.with_context(|| format!("gate {}", g.metric))?;
    let baseline = if alone {
        Side::Proportion { value: None, total: 0.0 }
    } else {
        pw.side(t, &bq).await.with_context(|| format!("gate {}", g.metric))?
    };
    let requests = match (&cq.requests, &bq.requests) {
        (Some(cr), Some(br)) => {
            let n = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| v.round() as u64).unwrap_or(0);
            let rb = if alone { 0 } else { n(pw.scalar(br).await?) };
            Some((n(pw.scalar(cr).await?), rb))
        }
        _ => None,
    };
    Ok((candidate, baseline, requests))
}

/// Requests and P95 of both arms, this window and the one before (none
/// when the plan's provider exports no request count).
async fn read_traffic(pw: &PromWindow<'_>, provider: MetricProvider, arms: &Arms, window_secs: f64) -> Result<Traffic> {
    let mut traffic = Traffic { window_seconds: window_secs, ..Traffic::default() };
    let cq = query::traffic_queries(provider, &arms.candidate(provider), &pw.window);
    let bq = query::traffic_queries(provider, &arms.baseline(provider), &pw.window);
    if let (Some(c), Some(b)) = (cq, bq) {
        traffic.candidate_requests = pw.scalar(&c.requests).await?;
        traffic.baseline_requests = pw.scalar(&b.requests).await?;
        traffic.candidate_requests_before = pw.scalar(&c.requests_before).await?;
        traffic.baseline_requests_before = pw.scalar(&b.requests_before).await?;
        traffic.candidate_p95 = pw.scalar(&c.p95).await?;
        traffic.baseline_p95 = pw.scalar(&b.p95).await?;
        traffic.candidate_p95_before = pw.scalar(&c.p95_before).await?;
        traffic.baseline_p95_before = pw.scalar(&b.p95_before).await?;
    }
    Ok(traffic)
}

/// The way back for a version regression: `checks::rollback` judges the
/// target as lint and revert do, then its bytes are verified.
async fn check_rollback(
    ctx: &Ctx,
    l: &Loaded,
    prev: Option<(&bundle::Rollback, Result<Loaded, crate::adapters::bundle_files::NamedFileError>)>,
) -> RollbackTarget {
    let status = match &prev {
        None => crate::checks::rollback::RollbackStatus::NotDeclared,
        Some((rb, loaded)) => crate::adapters::bundle_files::status_of(rb, loaded),
    };
    let problem = crate::checks::rollback::judge(l, &status).into_iter().next();
    let (rb, p) = match (prev, problem) {
        (Some((rb, Ok(p))), None) => (rb, p),
        (prev, problem) => {
            return RollbackTarget::Unusable {
                path: prev.map(|(rb, _)| rb.bundle.clone()),
                reason: problem.map_or_else(|| "it does not load".into(), |u| u.reason()),
            }
        }
    };
    let path = Some(rb.bundle.clone());
    let opts = VerifyOptions::quiet();
    let v = super::verify::verify_loaded(ctx, &p, &opts, &Overrides::default(), None).await;
    if v.verdict == Verdict::Pass {
        RollbackTarget::Verified {
            path: rb.bundle.clone(),
            version: p.bundle.metadata.version.clone(),
            digest: p.digest.clone(),
            evidence: v.summary,
        }
    } else {
        let codes: Vec<String> = v
            .diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .map(|d| format!("{} {}", d.code, d.message))
            .take(3)
            .collect();
        RollbackTarget::Unusable {
            path,
            reason: format!(
                "verify {}: {}{}",
                v.verdict,
                v.summary,
                if codes.is_empty() { String::new() } else { format!(" ({})", codes.join("; ")) }
            ),
        }
    }
}

// ---------------------------------------------------------------------------
// Golden set

async fn run_golden(ctx: &Ctx, l: &Loaded, args: &CanaryOptions) -> GoldenRun {
    let Some(file) = l.bundle.spec.canary.as_ref().and_then(|c| c.golden.as_ref()) else {
        return GoldenRun::NotDeclared;
    };
    let Some(endpoint) = args.endpoint.as_deref() else { return GoldenRun::NoEndpoint };
    let res: Result<Vec<GoldenResult>> = async {
        let (path, text) =
            crate::adapters::bundle_files::read_named_text(l, file, crate::adapters::bundle_files::FileKind::GoldenSet)
                .with_context(|| format!("golden set {file}"))?;
        let samples =
            crate::parse::golden::parse_golden(&text).with_context(|| format!("golden set {}", path.display()))?;
        let http = ctx.http()?;
        let mut out = Vec::new();
        for s in samples {
            let answer = prom::golden_call(http, endpoint, &l.bundle.metadata.name, &s).await?;
            let problems = golden::golden_problems(&s, &answer);
            out.push(GoldenResult { sample: s, answer, problems });
        }
        Ok(out)
    }
    .await;
    match res {
        Ok(r) => GoldenRun::Ran(r),
        Err(e) => GoldenRun::Error(format!("{e:#}")),
    }
}

// ---------------------------------------------------------------------------
// Traffic steps (`watch`, `canary --steps`)

/// Judge every traffic step of `spec.canary.steps` where the arms really
/// held it (`checks::canary::ramp`): the candidate's share of the requests
/// over the look-back horizon places each step; a step below 100% is judged
/// candidate vs baseline over the last window of its latest stretch, the
/// 100% step on the candidate alone against absolute limits. The walk stops
/// at the first FAIL. The report is the deciding step's (the first FAIL,
/// else the latest judged) with one row per step and the diagnostics of
/// every judged step. Shadow mode has no split: the current window is
/// judged instead, and the summary says so.
pub(crate) async fn analyze_steps(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    let Some(plan) = &l.bundle.spec.canary else { return analyze(ctx, l, args, ov).await };
    let shadow = is_shadow(plan, args);
    let window_text = window_text(plan, args);
    let window_secs = crate::util::parse_duration(&window_text).map(|d| d.as_secs()).filter(|s| *s >= 1);
    let (Some(window_secs), Some(prom_url)) = (window_secs, args.prometheus_url()) else {
        // No Prometheus (or a bad window): the plain analysis says why.
        return analyze(ctx, l, args, ov).await;
    };
    if shadow {
        let mut s = analyze(ctx, l, args, ov).await;
        s.summary = format!("shadow mode mirrors traffic instead of splitting it, so traffic steps {:?} do not apply; the current window was judged: {}", plan.steps, s.summary);
        return s;
    }
    let tl = match read_timeline(ctx, l, args, plan, window_secs, prom_url).await {
        Ok(t) => t,
        Err(step) => return step,
    };
    let segments = st::segments(&tl.points, &plan.steps);
    let placed = st::place(&segments, &plan.steps, tl.res as f64, window_secs as f64);
    let walk = match walk_steps(ctx, l, args, ov, plan, &tl, &placed).await {
        Ok(w) => w,
        Err(step) => return step,
    };
    walk.write_up(l, plan, &tl, segments, &window_text)
}

/// Where one traffic step stands after the walk: its verdict and the
/// table row's texts.
struct StepLine {
    verdict: StepVerdict,
    held: String,
    judged: String,
    note: String,
}

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

/// The walk over the steps so far.
#[derive(Default)]
struct Walk {
    verdicts: Vec<StepVerdict>,
    rows: Vec<Vec<String>>,
    steps: Vec<StepData>,
    /// Every judged step's findings, through the overrides already.
    diags: Vec<Diagnostic>,
    /// The first FAIL, else the latest judged step.
    deciding: Option<Judged>,
}

/// "120 s ago", from the timeline's now.
fn ago(now: f64, t: f64) -> String {
    format!("{:.0} s ago", (now - t).max(0.0))
}

/// Judge the steps in order, up to the first FAIL; an ERROR judging one
/// ends the walk with that step's report.
async fn walk_steps(
    ctx: &Ctx,
    l: &Loaded,
    args: &CanaryOptions,
    ov: &Overrides,
    plan: &bundle::Canary,
    tl: &Timeline,
    placed: &[Option<StepWindow>],
) -> Result<Walk, StepReport> {
    let last_placed = placed.iter().rposition(Option::is_some);
    let field = "spec.canary.steps";
    let mut walk = Walk::default();
    for (i, pct) in plan.steps.iter().copied().enumerate() {
        let after_fail = walk.verdicts.contains(&StepVerdict::Fail);
        let line = match st::judged_window(placed, i, pct, after_fail, tl.horizon, field) {
            Err(u) => {
                if let Some(d) = u.finding {
                    walk.diags.extend(ov.apply(vec![d.at(l.span(field))]));
                }
                // A step held too briefly still shows when it was held.
                let held = match placed[i] {
                    Some(w) if !after_fail => format!("{} → {}", ago(tl.now, w.held_from), ago(tl.now, w.held_to)),
                    _ => "—".into(),
                };
                StepLine { verdict: u.verdict, held, judged: "—".into(), note: u.note }
            }
            Ok(w) => {
                // The golden set checks the candidate as it is now: with the latest step held.
                let with_golden = Some(i) == last_placed;
                judge_placed_step(ctx, l, args, ov, pct, w, with_golden, tl.now, &mut walk).await?
            }
        };
        walk.push(pct, placed[i], line);
    }
    Ok(walk)
}

/// Judge one placed step over the last window of its latest stretch; the
/// step's findings join the walk's, its judgment may become the deciding one.
#[allow(clippy::too_many_arguments)]
async fn judge_placed_step(
    ctx: &Ctx,
    l: &Loaded,
    args: &CanaryOptions,
    ov: &Overrides,
    pct: u32,
    w: StepWindow,
    with_golden: bool,
    now: f64,
    walk: &mut Walk,
) -> Result<StepLine, StepReport> {
    let alone = pct == 100;
    let secs = w.secs.round() as u64;
    let step_args = CanaryOptions {
        window: Some(HumanDuration { value: std::time::Duration::from_secs(secs), text: format!("{secs}s") }),
        ..args.clone()
    };
    let judged = analyze_at(ctx, l, &step_args, ov, w.end, with_golden, alone).await;
    if judged.report.verdict == Verdict::Error {
        let mut rep = judged.report;
        rep.summary = format!("traffic step {pct}%: {}", rep.summary);
        return Err(rep);
    }
    let mut v = st::judge_step(&judged.outcomes, alone);
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
        walk.diags.push(d);
    }
    if v == StepVerdict::Fail || walk.deciding.as_ref().is_none_or(|d| d.report.verdict != Verdict::Fail) {
        walk.deciding = Some(judged);
    }
    Ok(StepLine {
        verdict: v,
        held: format!("{} → {}", ago(now, w.held_from), ago(now, w.held_to)),
        judged: format!("{secs} s ending {}", ago(now, w.end)),
        note,
    })
}

impl Walk {
    fn push(&mut self, pct: u32, placed: Option<StepWindow>, line: StepLine) {
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
    fn write_up(
        self,
        l: &Loaded,
        plan: &bundle::Canary,
        tl: &Timeline,
        segments: Vec<st::Segment>,
        window_text: &str,
    ) -> StepReport {
        let overall = st::overall(&self.verdicts);
        let (mut s, deciding_data) = match self.deciding {
            Some(j) => (j.report, j.data),
            None => (StepReport::new("canary", &l.display), None),
        };
        // Each step's diagnostics went through the overrides already.
        s.diagnostics = self.diags;
        s.verdict = match overall {
            StepVerdict::Fail => Verdict::Fail,
            StepVerdict::Pass => Verdict::Pass,
            _ => Verdict::Inconclusive,
        };
        let latest_share = tl.points.iter().rev().find_map(|p| p.share());
        let latest = latest_share.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or_else(|| "no traffic".into());
        let deciding_note = if s.summary.is_empty() { String::new() } else { format!(" Deciding step: {}", s.summary) };
        s.summary = format!(
            "traffic steps {:?}, placed from the arms' request shares (every {} s over the last {} s; the candidate's latest share: {latest}), each judged over at most {window_text}: {}.{deciding_note}",
            plan.steps,
            tl.res,
            tl.horizon,
            plan.steps.iter().zip(&self.verdicts).map(|(p, v)| format!("{p}% {v}")).collect::<Vec<_>>().join(", "),
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
                latest_candidate_share: latest_share,
                segments,
                selectors: Selectors { candidate: tl.cs.clone(), baseline: tl.bs.clone() },
            },
        };
        s.data = serde_json::to_value(&data).unwrap_or_default();
        s
    }
}

/// The arms' request counts over the look-back horizon, which place the
/// traffic steps; an ERROR step when they cannot be read.
struct Timeline {
    now: f64,
    res: u64,
    horizon: u64,
    points: Vec<st::SplitPoint>,
    cs: String,
    bs: String,
}

async fn read_timeline(
    ctx: &Ctx,
    l: &Loaded,
    args: &CanaryOptions,
    plan: &bundle::Canary,
    window_secs: u64,
    prom_url: &str,
) -> Result<Timeline, StepReport> {
    let provider = plan.provider.unwrap_or_default();
    if providers::traffic(provider).is_none() {
        let e = anyhow!(
            "provider `{}` exports no request count, so the arms' traffic shares (which place the steps) cannot be read; set the plan's provider to the serving stack and `provider: dcgm` on the GPU gates only",
            providers::name(provider)
        );
        return Err(StepReport::error("canary", &l.display, &e));
    }
    let baseline_version = match baseline_version(l, args) {
        Ok((v, _)) => v,
        Err(e) => return Err(StepReport::error("canary", &l.display, &e)),
    };
    let arms = arms(l, args, baseline_version);
    let (cs, bs) = (arms.candidate(provider), arms.baseline(provider));
    let now = unix_now(ctx);
    let res = st::resolution_secs(window_secs);
    let horizon = st::horizon_secs(res);
    let timeline = async {
        let prom = Prom::new(ctx.http()?.clone(), prom_url, now)?;
        let q = |sel: &str| query::requests_per_step(provider, sel, res).unwrap_or_default();
        let c = prom.query_range(&q(&cs), now - horizon as f64, now, res as f64).await?;
        let b = prom.query_range(&q(&bs), now - horizon as f64, now, res as f64).await?;
        anyhow::Ok(read::split_points(&c, &b))
    };
    match timeline.await {
        Ok(points) => Ok(Timeline { now, res, horizon, points, cs, bs }),
        Err(e) => {
            let mut s = StepReport::error("canary", &l.display, &e);
            s.summary = format!("could not read the arms' traffic shares from Prometheus, so no traffic step was placed or judged: {e:#}");
            Err(s)
        }
    }
}
