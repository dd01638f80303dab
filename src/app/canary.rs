//! `bundlegate canary` (issue #5): gather candidate and baseline numbers from
//! Prometheus, judge them with `checks::canary`, run the golden set against
//! the candidate endpoint, and name an exit action.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde_json::json;

use crate::adapters::prom::{self, GoldenSample, Prom};
use crate::bundle::{self, CanaryMode, Loaded, MetricProvider};
use crate::checks::canary::providers;
use crate::checks::canary::steps::{self as st, StepVerdict};
use crate::checks::canary::{self as c, GateInput, GateOutcome, GateVerdict, Histogram, MetricKind, RollbackTarget, Side, Situation, Template, Trend};
use crate::app::options::{CanaryMode as ModeOption, CanaryOptions, VerifyOptions};
use crate::diag::{Code, Overrides};
use crate::report::{Detail, Diagnostic, Severity, StepReport, Table, Verdict};

/// Substitute the placeholders. An empty selector leaves `{,` or `{}`
/// behind, which is tidied so `--baseline-selector ''` still parses.
pub fn fill(template: &str, selector: &str, window: &str) -> String {
    template.replace("{{selector}}", selector).replace("{{window}}", window).replace("{,", "{").replace(",}", "}")
}

/// The same query over the window just before this one.
pub fn earlier(template: &str) -> String {
    template.replace("[{{window}}]", "[{{window}}] offset {{window}}")
}

pub fn run(bundle: &Path, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    let l = match super::load_or_step(bundle, "canary") {
        Ok(l) => l,
        Err(s) => return s,
    };
    match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt.block_on(analyze(&l, args, ov)),
        Err(e) => StepReport::error("canary", &l.display, &anyhow!(e).context("starting the async runtime")),
    }
}

struct Ctx<'a> {
    prom: &'a Prom,
    window: String,
}

impl Ctx<'_> {
    async fn scalar(&self, tpl: &str, sel: &str) -> Result<Option<f64>> {
        Ok(self.prom.scalar(&fill(tpl, sel, &self.window)).await?.filter(|v| v.is_finite()))
    }

    async fn side(&self, t: &Template, value_tpl: &str, sel: &str) -> Result<Side> {
        let value = self.scalar(value_tpl, sel).await?;
        let q = fill(&t.samples, sel, &self.window);
        Ok(match t.kind {
            // A NaN/Inf count reads as no requests: NO DATA, never a pass.
            MetricKind::Proportion => Side::Proportion { value, total: self.prom.scalar(&q).await?.filter(|v| v.is_finite()).unwrap_or(0.0) },
            MetricKind::Histogram => {
                let series = self.prom.query(&q).await?;
                let mut buckets = Vec::new();
                for s in series {
                    let le = s.labels.get("le").ok_or_else(|| anyhow!("bucket query `{q}` returned a series without `le`; keep `sum by (le)`"))?;
                    let le: f64 = if le == "+Inf" { f64::INFINITY } else { le.parse::<f64>().with_context(|| format!("bucket bound `{le}`"))? * t.bound_scale };
                    // A NaN count empties the histogram (NO DATA), see Histogram::from_buckets.
                    buckets.push((le, s.values.first().copied().unwrap_or(f64::NAN)));
                }
                Side::Histogram { value, hist: Histogram::from_buckets(buckets) }
            }
            MetricKind::Gauge => {
                let series = self.prom.query(&q).await?;
                let samples: Vec<f64> = series.iter().flat_map(|s| s.values.iter().map(|v| v * t.scale)).collect();
                // One NaN/Inf sample (a division by zero in the exporter, a
                // stale marker) voids the arm rather than being dropped, so
                // what is left cannot pass on its own.
                let samples = if samples.iter().all(|v| v.is_finite()) { samples } else { Vec::new() };
                Side::Gauge { value, samples }
            }
        })
    }
}

fn ratio(now: Option<f64>, before: Option<f64>) -> Option<f64> {
    match (now, before) {
        (Some(n), Some(b)) if b > 0.0 && n.is_finite() => Some(n / b),
        _ => None,
    }
}

fn fmt_value(kind: MetricKind, metric: &str, v: Option<f64>) -> String {
    let Some(v) = v else { return "no data".into() };
    match kind {
        MetricKind::Proportion => format!("{:.3}%", v * 100.0),
        MetricKind::Histogram if metric.ends_with("_seconds") => format!("{:.3} s", v),
        MetricKind::Gauge if metric.ends_with("_bytes") => crate::util::human_bytes(v.max(0.0) as u64),
        _ => c::fmt_num(v),
    }
}

fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Judge the current split: gates over the window ending now.
pub async fn analyze(l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    analyze_at(l, args, ov, unix_now(), true).await.0
}

/// Which series belong to each arm: the overrides, else the provider's arm
/// label set to each version.
struct Arms {
    candidate_version: String,
    baseline_version: Option<String>,
    candidate_override: Option<String>,
    baseline_override: Option<String>,
}

impl Arms {
    fn candidate(&self, p: MetricProvider) -> String {
        self.candidate_override.clone().unwrap_or_else(|| format!("{}=\"{}\"", providers::arm_label(p), self.candidate_version))
    }
    fn baseline(&self, p: MetricProvider) -> String {
        self.baseline_override.clone().unwrap_or_else(|| format!("{}=\"{}\"", providers::arm_label(p), self.baseline_version.as_deref().unwrap_or_default()))
    }
}

/// The provider a gate reads: its own, else the plan's, else bundlegate's.
pub fn gate_provider(plan: &bundle::Canary, g: &bundle::Gate) -> MetricProvider {
    g.provider.or(plan.provider).unwrap_or_default()
}

/// Gates over the window ending at `now` (unix seconds); the golden set
/// runs only when `with_golden`. Also returns the gate outcomes.
async fn analyze_at(l: &Loaded, args: &CanaryOptions, ov: &Overrides, now: f64, with_golden: bool) -> (StepReport, Vec<GateOutcome>) {
    let b = &l.bundle;
    let Some(plan) = &b.spec.canary else {
        return (StepReport::not_run("canary", &l.display, "the bundle declares no spec.canary plan: there is nothing to compare"), Vec::new());
    };
    let no_golden = CanaryOptions { endpoint: None, ..args.clone() };
    let golden_args = if with_golden { args } else { &no_golden };
    analyze_plan(l, plan, golden_args, ov, now).await
}

async fn analyze_plan(l: &Loaded, plan: &bundle::Canary, args: &CanaryOptions, ov: &Overrides, now: f64) -> (StepReport, Vec<GateOutcome>) {
    let b = &l.bundle;
    macro_rules! bail_step {
        ($e:expr) => {
            return ($e, Vec::new())
        };
    }
    let shadow = match args.mode {
        None => plan.mode == CanaryMode::Shadow,
        Some(m) => m == ModeOption::Shadow,
    };
    let window_text = args.window.as_ref().map(|w| w.text.clone()).unwrap_or_else(|| plan.window.clone());
    let window_secs = match crate::util::parse_duration(&window_text).map(|d| d.as_secs()) {
        Some(s) if s >= 1 => s,
        _ => bail_step!(StepReport::error("canary", &l.display, &anyhow!("window `{window_text}` is not a duration of at least 1s (e.g. 30m)"))),
    };

    // Golden set first: it needs no Prometheus and its failures stand alone.
    let golden = run_golden(l, args).await;
    let provider = plan.provider.unwrap_or_default();

    let Some(prom_url) = args.prometheus_url() else {
        let mut s = StepReport::not_run("canary", &l.display, "");
        let mut diags = Vec::new();
        let note = golden_into(&golden, &mut s, &mut diags);
        s.diagnostics = ov.apply(diags);
        s.summary = format!("gates not run: no --prometheus URL, so candidate and baseline were not compared; golden set: {note}");
        if s.diagnostics.iter().any(|d| d.severity == Severity::Error) {
            s.verdict = Verdict::Fail;
        } else if matches!(golden, Golden::Error(_)) {
            s.verdict = Verdict::Error;
        }
        bail_step!(s);
    };

    let prev = b.spec.rollback.as_ref().map(|rb| (rb, crate::adapters::bundle_files::load_named_bundle(l, &rb.bundle)));
    let baseline_version = match (&args.baseline_selector, &prev) {
        (Some(_), _) => None,
        (None, Some((_, Ok(p)))) => Some(p.bundle.metadata.version.clone()),
        (None, Some((_, Err(e)))) => {
            bail_step!(StepReport::error("canary", &l.display, &anyhow!("no baseline: the rollback target does not load ({e}); pass --baseline-selector")))
        }
        (None, None) => {
            bail_step!(StepReport::error("canary", &l.display, &anyhow!("no baseline: the bundle declares no spec.rollback; pass --baseline-selector")))
        }
    };

    let arms = Arms {
        candidate_version: b.metadata.version.clone(),
        baseline_version,
        candidate_override: args.candidate_selector.clone(),
        baseline_override: args.baseline_selector.clone(),
    };
    let (candidate_sel, baseline_sel) = (arms.candidate(provider), arms.baseline(provider));
    let prom = match Prom::new(prom_url, now) {
        Ok(p) => p,
        Err(e) => bail_step!(StepReport::error("canary", &l.display, &e)),
    };
    let ctx = Ctx { prom: &prom, window: format!("{window_secs}s") };

    let gathered = gather(&ctx, plan, &arms, window_secs as f64).await;
    let (inputs, traffic) = match gathered {
        Ok(x) => x,
        Err(e) => {
            // Unanswered queries are not "no data": the step could not finish.
            let mut s = StepReport::error("canary", &l.display, &e);
            s.summary = format!("could not query Prometheus, nothing was compared: {e:#}");
            bail_step!(s);
        }
    };
    let outcomes: Vec<GateOutcome> = inputs
        .iter()
        .map(|(g, note)| {
            let mut o = c::evaluate_gate(g);
            if let Some(n) = note {
                o.message = n.clone();
            }
            o
        })
        .collect();

    let mut s = StepReport::new("canary", &l.display);
    let mut diags = Vec::new();
    for (i, o) in outcomes.iter().enumerate() {
        if let Some(d) = gate_diagnostic(l, i, o, &window_text) {
            diags.push(d);
        }
        s.tables.push(gate_table(o));
    }
    let golden_note = golden_into(&golden, &mut s, &mut diags);
    let golden_failed = match &golden {
        Golden::Ran(r) => r.iter().filter(|g| !g.problems.is_empty()).count(),
        _ => 0,
    };

    let trend = traffic.trend();
    let situation = c::classify(&outcomes, golden_failed, &trend);
    let rollback = if situation == Situation::VersionRegression && !shadow { check_rollback(prev).await } else { RollbackTarget::NotChecked };
    let more = outcomes.iter().filter_map(|o| o.more_samples.zip(o.more_minutes)).max_by(|a, b| a.1.total_cmp(&b.1));
    let action = c::decide(situation, shadow, &trend, &rollback, more);

    s.diagnostics = ov.apply(diags);
    let blocking = |codes: &[Code]| s.diagnostics.iter().any(|d| d.severity == Severity::Error && codes.contains(&d.code));
    let not_passed = outcomes.iter().filter(|o| o.verdict != GateVerdict::Pass).count();
    s.verdict = if matches!(golden, Golden::Error(_)) {
        Verdict::Error
    } else if blocking(&[Code::GateFailed, Code::GoldenFailed]) {
        Verdict::Fail
    } else if blocking(&[Code::GateInconclusive, Code::GateNoData]) || outcomes.is_empty() {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    let count = |v: GateVerdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let downgraded = if s.verdict == Verdict::Pass && not_passed > 0 {
        format!(" ({not_passed} gate(s) did not pass; their codes were downgraded by configuration)")
    } else {
        String::new()
    };
    s.summary = format!(
        "{} of {} gate(s) passed, {} failed, {} inconclusive, {} without data over {} ({} mode; candidate {{{}}} vs baseline {{{}}}); golden set: {}{}. Action: {} — {}. Watch next: {}.",
        count(GateVerdict::Pass),
        outcomes.len(),
        count(GateVerdict::Fail),
        count(GateVerdict::Inconclusive),
        count(GateVerdict::NoData),
        window_text,
        if shadow { "shadow" } else { "canary" },
        candidate_sel,
        baseline_sel,
        golden_note,
        downgraded,
        action.action,
        action.precondition.trim_end_matches('.'),
        action.watch_next.trim_end_matches('.')
    );
    s.tables.push(traffic.table(&candidate_sel, &baseline_sel));
    s.data = json!({
        "action": action.action,
        "precondition": action.precondition,
        "watchNext": action.watch_next,
        "situation": situation,
        "mode": if shadow { "shadow" } else { "canary" },
        "window": window_text,
        "windowSeconds": window_secs,
        "evaluatedAt": now,
        "selectors": {"candidate": candidate_sel, "baseline": baseline_sel},
        "alpha": c::ALPHA,
        "power": c::POWER,
        "gates": outcomes,
        "trend": trend,
        "traffic": traffic,
        "golden": golden.data(),
        "rollbackTarget": match &rollback {
            RollbackTarget::NotChecked => json!({"status": "not-checked"}),
            RollbackTarget::Verified { path, version, digest, evidence } => json!({"status": "verified", "path": path, "version": version, "digest": digest, "evidence": evidence}),
            RollbackTarget::Unusable { path, reason } => json!({"status": "unusable", "path": path, "reason": reason}),
        },
    });
    (s, outcomes)
}

#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Traffic {
    candidate_requests: Option<f64>,
    baseline_requests: Option<f64>,
    candidate_requests_before: Option<f64>,
    baseline_requests_before: Option<f64>,
    candidate_p95: Option<f64>,
    baseline_p95: Option<f64>,
    candidate_p95_before: Option<f64>,
    baseline_p95_before: Option<f64>,
    window_seconds: f64,
}

impl Traffic {
    fn trend(&self) -> Trend {
        Trend {
            candidate_rate: ratio(self.candidate_requests, self.candidate_requests_before),
            baseline_rate: ratio(self.baseline_requests, self.baseline_requests_before),
            candidate_latency: ratio(self.candidate_p95, self.candidate_p95_before),
            baseline_latency: ratio(self.baseline_p95, self.baseline_p95_before),
        }
    }

    fn table(&self, cs: &str, bs: &str) -> Table {
        let per_min = |n: Option<f64>| n.map(|n| format!("{:.1}/min", n / self.window_seconds * 60.0)).unwrap_or_else(|| "no data".into());
        let secs = |v: Option<f64>| v.map(|v| format!("{v:.3} s")).unwrap_or_else(|| "no data".into());
        let row = |name: &str, sel: &str, n: Option<f64>, nb: Option<f64>, p: Option<f64>, pb: Option<f64>| {
            vec![
                name.into(),
                format!("{{{sel}}}"),
                n.map(|n| format!("{n:.0}")).unwrap_or_else(|| "no data".into()),
                per_min(n),
                per_min(nb),
                secs(p),
                secs(pb),
            ]
        };
        Table {
            title: "traffic: this window vs the one before".into(),
            columns: ["side", "selector", "requests", "rate", "rate before", "P95", "P95 before"].map(String::from).to_vec(),
            rows: vec![
                row("candidate", cs, self.candidate_requests, self.candidate_requests_before, self.candidate_p95, self.candidate_p95_before),
                row("baseline", bs, self.baseline_requests, self.baseline_requests_before, self.baseline_p95, self.baseline_p95_before),
            ],
        }
    }
}

/// Why a gate could not be queried under its provider (lint reports it
/// too); its outcome is NO DATA with this note, never skipped.
pub fn unsupported_note(p: MetricProvider, metric: &str) -> String {
    let hint = match providers::other_provider(metric) {
        Some(o) if o != p => format!("; it is a `{}` gate: set `provider: {}` on the gate or the plan", providers::name(o), providers::name(o)),
        _ => String::new(),
    };
    format!("provider `{}` exports nothing that computes `{metric}`{hint}", providers::name(p))
}

async fn gather(ctx: &Ctx<'_>, plan: &bundle::Canary, arms: &Arms, window_secs: f64) -> Result<(Vec<(GateInput, Option<String>)>, Traffic)> {
    let mut inputs = Vec::new();
    for g in &plan.gates {
        let p = gate_provider(plan, g);
        let (cs, bs) = (arms.candidate(p), arms.baseline(p));
        let (t, note) = match providers::template(p, &g.metric) {
            Some(t) => (Some(t), None),
            None => (None, Some(unsupported_note(p, &g.metric))),
        };
        let (candidate, baseline, requests, kind, quantile, hib) = match &t {
            Some(t) => {
                let value_tpl = g.query.clone().unwrap_or_else(|| t.value.clone());
                let candidate = ctx.side(t, &value_tpl, &cs).await.with_context(|| format!("gate {}", g.metric))?;
                let baseline = ctx.side(t, &value_tpl, &bs).await.with_context(|| format!("gate {}", g.metric))?;
                let requests = match &t.requests {
                    Some(q) => {
                        let n = |v: Option<f64>| v.filter(|v| v.is_finite() && *v > 0.0).map(|v| v.round() as u64).unwrap_or(0);
                        Some((n(ctx.scalar(q, &cs).await?), n(ctx.scalar(q, &bs).await?)))
                    }
                    None => None,
                };
                (candidate, baseline, requests, t.kind, t.quantile, t.higher_is_better)
            }
            None => {
                let empty = Side::Proportion { value: None, total: 0.0 };
                (empty.clone(), empty, None, MetricKind::Proportion, 0.0, false)
            }
        };
        inputs.push((
            GateInput {
                metric: g.metric.clone(),
                kind,
                quantile,
                max_absolute: g.max_absolute,
                max_relative_increase: g.max_relative_increase,
                min_samples: plan.min_samples,
                window_secs,
                candidate,
                baseline,
                higher_is_better: hib,
                min_absolute: g.min_absolute,
                min_relative_decrease: g.min_relative_decrease,
                request_counts: requests,
            },
            note,
        ));
    }
    let provider = plan.provider.unwrap_or_default();
    let (cs, bs) = (arms.candidate(provider), arms.baseline(provider));
    let mut traffic = Traffic { window_seconds: window_secs, ..Traffic::default() };
    if let Some((requests, p95)) = providers::traffic(provider) {
        traffic.candidate_requests = ctx.scalar(&requests, &cs).await?;
        traffic.baseline_requests = ctx.scalar(&requests, &bs).await?;
        traffic.candidate_requests_before = ctx.scalar(&earlier(&requests), &cs).await?;
        traffic.baseline_requests_before = ctx.scalar(&earlier(&requests), &bs).await?;
        traffic.candidate_p95 = ctx.scalar(&p95, &cs).await?;
        traffic.baseline_p95 = ctx.scalar(&p95, &bs).await?;
        traffic.candidate_p95_before = ctx.scalar(&earlier(&p95), &cs).await?;
        traffic.baseline_p95_before = ctx.scalar(&earlier(&p95), &bs).await?;
    }
    Ok((inputs, traffic))
}

fn gate_diagnostic(l: &Loaded, i: usize, o: &GateOutcome, window: &str) -> Option<Diagnostic> {
    let code = match o.verdict {
        GateVerdict::Pass => return None,
        GateVerdict::Fail => Code::GateFailed,
        GateVerdict::Inconclusive => Code::GateInconclusive,
        GateVerdict::NoData => Code::GateNoData,
    };
    let field = format!("spec.canary.gates[{i}]");
    let mut d = Diagnostic::new(code, format!("gate `{}`: {}", o.metric, o.message)).at(l.span(&field)).field(field).evidence(format!(
        "candidate {} ({} samples), baseline {} ({} samples) over {window}",
        fmt_value(o.kind, &o.metric, o.candidate),
        o.candidate_samples,
        fmt_value(o.kind, &o.metric, o.baseline),
        o.baseline_samples
    ));
    if let Some(t) = o.comparison {
        d = d.evidence(format!("candidate vs baseline: {} p={}", t.method, c::fmt_p(t.p_value)));
    }
    match (o.verdict, o.more_samples, o.more_minutes) {
        (GateVerdict::Inconclusive, Some(n), Some(m)) if m.is_finite() => {
            d = d.help(format!("keep the current traffic step for ≈ {m:.1} more minutes ({n} more samples per side), or raise the canary weight"))
        }
        (GateVerdict::NoData, ..) => {
            d = d
                .help("check the selector and that both versions export the metric; `--candidate-selector`/`--baseline-selector` or a gate `query` override it")
        }
        _ => {}
    }
    Some(d)
}

fn gate_table(o: &GateOutcome) -> Table {
    let v = |x: Option<f64>| fmt_value(o.kind, &o.metric, x);
    let samples = format!("{} / {}", o.candidate_samples, o.baseline_samples);
    let needed = o.needed.map(|n| n.to_string()).unwrap_or_else(|| "—".into());
    let method = o.comparison.map(|t| t.method).unwrap_or("no test");
    let mut rows: Vec<Vec<String>> = o
        .checks
        .iter()
        .map(|ch| {
            let p = ch.test.map(|t| format!("{} ({})", c::fmt_p(t.p_value), t.method)).unwrap_or_else(|| "measured".into());
            let verdict = if ch.supported {
                "FAIL".to_string()
            } else if ch.exceeded {
                "above, not significant".to_string()
            } else {
                "within".to_string()
            };
            vec![format!("{} ({})", o.metric, ch.kind), v(o.baseline), v(o.candidate), v(Some(ch.limit)), p, samples.clone(), needed.clone(), verdict]
        })
        .collect();
    if rows.is_empty() {
        let p = o.comparison.map(|t| c::fmt_p(t.p_value)).unwrap_or_else(|| "—".into());
        rows.push(vec![o.metric.clone(), v(o.baseline), v(o.candidate), "—".into(), p, samples, needed, o.verdict.to_string()]);
    }
    Table {
        title: format!("gate {} — {} ({method})", o.metric, o.verdict),
        columns: ["metric", "baseline", "candidate", "limit", "p-value", "samples (cand / base)", "needed per side", "verdict"].map(String::from).to_vec(),
        rows,
    }
}

async fn check_rollback(prev: Option<(&bundle::Rollback, Result<Loaded, crate::adapters::bundle_files::NamedFileError>)>) -> RollbackTarget {
    let Some((rb, loaded)) = prev else {
        return RollbackTarget::Unusable { path: None, reason: "the bundle declares no spec.rollback".into() };
    };
    let path = Some(rb.bundle.clone());
    let p = match loaded {
        Ok(p) => p,
        Err(e) => return RollbackTarget::Unusable { path, reason: format!("it does not load: {e}") },
    };
    if p.digest != rb.release_digest {
        return RollbackTarget::Unusable { path, reason: format!("it hashes to {} but spec.rollback.releaseDigest records {}", p.digest, rb.release_digest) };
    }
    let opts = VerifyOptions::quiet();
    let v = super::verify::verify_loaded(&p, &opts, &Overrides::default(), None).await;
    if v.verdict == Verdict::Pass {
        RollbackTarget::Verified { path: rb.bundle.clone(), version: p.bundle.metadata.version.clone(), digest: p.digest.clone(), evidence: v.summary }
    } else {
        let codes: Vec<String> = v.diagnostics.iter().filter(|d| d.severity == Severity::Error).map(|d| format!("{} {}", d.code, d.message)).take(3).collect();
        RollbackTarget::Unusable {
            path,
            reason: format!("verify {}: {}{}", v.verdict, v.summary, if codes.is_empty() { String::new() } else { format!(" ({})", codes.join("; ")) }),
        }
    }
}

// ---------------------------------------------------------------------------
// Golden set

struct GoldenResult {
    sample: GoldenSample,
    answer: prom::GoldenAnswer,
    problems: Vec<String>,
}

enum Golden {
    NotDeclared,
    NoEndpoint,
    Ran(Vec<GoldenResult>),
    Error(String),
}

impl Golden {
    fn data(&self) -> serde_json::Value {
        match self {
            Golden::NotDeclared => json!({"status": "not-run", "reason": "no spec.canary.golden declared"}),
            Golden::NoEndpoint => json!({"status": "not-run", "reason": "no --endpoint"}),
            Golden::Error(e) => json!({"status": "error", "reason": e}),
            Golden::Ran(r) => json!({
                "status": "ran",
                "passed": r.iter().filter(|g| g.problems.is_empty()).count(),
                "failed": r.iter().filter(|g| !g.problems.is_empty()).count(),
                "samples": r.iter().map(|g| json!({"name": g.sample.name, "api": g.sample.api, "problems": g.problems, "answer": g.answer})).collect::<Vec<_>>(),
            }),
        }
    }
}

async fn run_golden(l: &Loaded, args: &CanaryOptions) -> Golden {
    let Some(file) = l.bundle.spec.canary.as_ref().and_then(|c| c.golden.as_ref()) else { return Golden::NotDeclared };
    let Some(endpoint) = args.endpoint.as_deref() else { return Golden::NoEndpoint };
    let res: Result<Vec<GoldenResult>> = async {
        let (path, text) = crate::adapters::bundle_files::read_named_text(l, file, crate::adapters::bundle_files::FileKind::GoldenSet).with_context(|| format!("golden set {file}"))?;
        let samples = prom::parse_golden(&text).with_context(|| format!("golden set {}", path.display()))?;
        let http = reqwest::Client::builder().timeout(std::time::Duration::from_secs(120)).build()?;
        let mut out = Vec::new();
        for s in samples {
            let answer = prom::golden_call(&http, endpoint, &l.bundle.metadata.name, &s).await?;
            let problems = prom::golden_problems(&s, &answer);
            out.push(GoldenResult { sample: s, answer, problems });
        }
        Ok(out)
    }
    .await;
    match res {
        Ok(r) => Golden::Ran(r),
        Err(e) => Golden::Error(format!("{e:#}")),
    }
}

/// Add the golden results to the step; returns the one-line note.
fn golden_into(g: &Golden, s: &mut StepReport, diags: &mut Vec<Diagnostic>) -> String {
    match g {
        Golden::NotDeclared => "not run: no spec.canary.golden declared".into(),
        Golden::NoEndpoint => "not run: no --endpoint".into(),
        Golden::Error(e) => format!("could not run ({e})"),
        Golden::Ran(results) => {
            let mut rows = Vec::new();
            for r in results {
                let chars = r.answer.content.as_ref().map(|c| c.chars().count().to_string()).unwrap_or_else(|| "—".into());
                rows.push(vec![
                    r.sample.name.clone(),
                    serde_json::to_value(r.sample.api).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
                    r.answer.status.to_string(),
                    format!("{} ms", r.answer.latency_ms),
                    r.answer.finish_reason.clone().unwrap_or_else(|| "—".into()),
                    chars,
                    if r.problems.is_empty() { "ok".into() } else { r.problems.join("; ") },
                ]);
                if r.problems.is_empty() {
                    continue;
                }
                let shown = r.answer.content.as_deref().or(r.answer.raw.as_deref()).unwrap_or("");
                let excerpt: String = shown.chars().take(300).collect();
                let mut d = Diagnostic::new(Code::GoldenFailed, format!("golden sample `{}`: {}", r.sample.name, r.problems.join("; ")))
                    .field("spec.canary.golden")
                    .evidence(format!("output ({} chars): {excerpt}{}", shown.chars().count(), if shown.chars().count() > 300 { "…" } else { "" }))
                    .evidence(format!("finish reason {:?}, HTTP {}, {} ms", r.answer.finish_reason, r.answer.status, r.answer.latency_ms));
                if r.answer.finish_reason.as_deref() == Some("length") {
                    d = d.help("finish reason `length` means the output hit max_tokens: check generation.maxOutputTokens, EOS ids and stop strings shipped with this release (a release once truncated structured output this way, and the config diff pointed at EOS/stop)");
                }
                diags.push(d);
                // Keep the failing sample whole so it can be replayed.
                s.details.push(Detail {
                    title: format!("failing golden sample `{}`", r.sample.name),
                    lang: "json".into(),
                    body: serde_json::to_string_pretty(&json!({"request": r.sample.request, "expect": r.sample.expect, "answer": r.answer}))
                        .unwrap_or_default(),
                });
            }
            s.tables.push(Table {
                title: "golden set against the candidate".into(),
                columns: ["sample", "api", "HTTP", "latency", "finish reason", "chars", "result"].map(String::from).to_vec(),
                rows,
            });
            let failed = results.iter().filter(|r| !r.problems.is_empty()).count();
            format!("{}/{} passed", results.len() - failed, results.len())
        }
    }
}

// ---------------------------------------------------------------------------
// Traffic steps (used by `watch`)

/// Judge every traffic step of `spec.canary.steps` in turn: step `i` over
/// the window that ended `(n-1-i)` windows ago, stopping at the first FAIL.
/// One step (or no Prometheus) is the plain current-split analysis. The
/// report is the deciding step's (the first FAIL, else the last judged),
/// with one row per step and the diagnostics of every judged step.
pub async fn analyze_steps(l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    let Some(plan) = &l.bundle.spec.canary else { return analyze(l, args, ov).await };
    let window_text = args.window.as_ref().map(|w| w.text.clone()).unwrap_or_else(|| plan.window.clone());
    let window_secs = crate::util::parse_duration(&window_text).map(|d| d.as_secs()).filter(|s| *s >= 1);
    let (Some(window_secs), true, true) = (window_secs, plan.steps.len() > 1, args.prometheus_url().is_some()) else {
        return analyze(l, args, ov).await;
    };
    let times = st::step_times(unix_now(), window_secs as f64, plan.steps.len());
    let last = plan.steps.len() - 1;
    let mut verdicts: Vec<StepVerdict> = Vec::new();
    let mut rows = Vec::new();
    let mut diags = Vec::new();
    let mut deciding: Option<StepReport> = None;
    for (i, (pct, t)) in plan.steps.iter().zip(&times).enumerate() {
        if verdicts.last().is_some_and(|v| !st::continue_after(*v)) {
            verdicts.push(StepVerdict::NotReached);
            rows.push(vec![format!("{pct}%"), "—".into(), StepVerdict::NotReached.to_string(), "an earlier step failed".into()]);
            continue;
        }
        // The golden set checks the candidate as it is now: with the last step.
        let (rep, outcomes) = analyze_at(l, args, ov, *t, i == last).await;
        if rep.verdict == Verdict::Error {
            let mut rep = rep;
            rep.summary = format!("traffic step {pct}%: {}", rep.summary);
            return rep;
        }
        let mut v = st::judge_step(&outcomes);
        // Golden failures and downgraded codes speak through the step report.
        if rep.verdict == Verdict::Fail {
            v = StepVerdict::Fail;
        }
        let at = chrono_free_offset(*t, times[last]);
        rows.push(vec![format!("{pct}%"), at, v.to_string(), rep.summary.split(". Action:").next().unwrap_or_default().to_string()]);
        for mut d in rep.diagnostics.clone() {
            d.message = format!("step {pct}%: {}", d.message);
            diags.push(d);
        }
        verdicts.push(v);
        if v == StepVerdict::Fail || i == last || deciding.is_none() {
            deciding = Some(rep);
        }
        if v == StepVerdict::Fail {
            // Keep the failing step's report as the deciding one.
            break;
        }
    }
    while verdicts.len() < plan.steps.len() {
        let pct = plan.steps[verdicts.len()];
        verdicts.push(StepVerdict::NotReached);
        rows.push(vec![format!("{pct}%"), "—".into(), StepVerdict::NotReached.to_string(), "an earlier step failed".into()]);
    }
    let mut s = deciding.unwrap_or_else(|| StepReport::new("canary", &l.display));
    let overall = st::overall(&verdicts);
    s.diagnostics = diags;
    s.verdict = match overall {
        StepVerdict::Fail => Verdict::Fail,
        StepVerdict::Pass => Verdict::Pass,
        _ => Verdict::Inconclusive,
    };
    s.summary = format!(
        "traffic steps {:?} judged one window each ({window_text}): {}; {}",
        plan.steps,
        plan.steps.iter().zip(&verdicts).map(|(p, v)| format!("{p}% {v}")).collect::<Vec<_>>().join(", "),
        s.summary
    );
    s.tables.insert(
        0,
        Table { title: "traffic steps".into(), columns: ["step", "window ends", "verdict", "gates"].map(String::from).to_vec(), rows },
    );
    if let Some(o) = s.data.as_object_mut() {
        o.insert(
            "steps".into(),
            json!(plan.steps.iter().zip(&verdicts).zip(&times).map(|((p, v), t)| json!({"percent": p, "verdict": v, "evaluatedAt": t})).collect::<Vec<_>>()),
        );
    }
    s
}

/// "now" or "N s before now" for the steps table.
fn chrono_free_offset(t: f64, now: f64) -> String {
    let d = (now - t).round();
    if d <= 0.0 {
        "now".into()
    } else {
        format!("{d:.0} s before the last")
    }
}
