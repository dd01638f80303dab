//! `bundlegate canary` (issue #5): gather candidate and baseline numbers from
//! Prometheus, judge them with `checks::canary`, run the golden set against
//! the candidate endpoint, and name an exit action.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde_json::json;

use crate::adapters::prom::{self, GoldenSample, Prom};
use crate::bundle::{self, CanaryMode, Loaded};
use crate::checks::canary::{self as c, GateInput, GateOutcome, GateVerdict, Histogram, MetricKind, RollbackTarget, Side, Situation, Trend};
use crate::cli::{CanaryArgs, VerifyOpts};
use crate::diag::{Code, Overrides};
use crate::report::{Detail, Diagnostic, Severity, StepReport, Table, Verdict};

/// Query templates per metric. `{{selector}}` and `{{window}}` are replaced
/// by plain string substitution (no template engine: PromQL is full of
/// braces). `value` gives the gate's number; `samples` gives what the test
/// needs: the request count (proportion), bucket counts (histogram) or raw
/// gauge samples (a range selector), multiplied by `scale`.
#[derive(Debug, Clone)]
pub struct Template {
    pub kind: MetricKind,
    pub quantile: f64,
    pub value: String,
    pub samples: String,
    pub scale: f64,
}

const REQUESTS: &str = "sum(increase(bundlegate_requests_total{{{selector}}}[{{window}}]))";
const ERRORS: &str = "sum(increase(bundlegate_requests_total{{{selector}},code=~\"5..\"}[{{window}}]))";
const BUCKETS: &str = "sum by (le) (increase(bundlegate_request_duration_seconds_bucket{{{selector}}}[{{window}}]))";

fn latency_quantile(q: &str) -> String {
    format!("histogram_quantile({q}, sum by (le) (rate(bundlegate_request_duration_seconds_bucket{{{{{{selector}}}}}}[{{{{window}}}}])))")
}

/// The one table of default queries (documented in docs/canary.md).
pub fn template_for(metric: &str) -> Template {
    let latency = |q: f64| Template { kind: MetricKind::Histogram, quantile: q, value: latency_quantile(&q.to_string()), samples: BUCKETS.into(), scale: 1.0 };
    match metric {
        "error_rate" => Template { kind: MetricKind::Proportion, quantile: 0.0, value: format!("{ERRORS} / {REQUESTS}"), samples: REQUESTS.into(), scale: 1.0 },
        "p50_latency_seconds" => latency(0.5),
        "p90_latency_seconds" => latency(0.9),
        "p95_latency_seconds" => latency(0.95),
        "p99_latency_seconds" => latency(0.99),
        // DCGM reports framebuffer use in MiB.
        "gpu_memory_bytes" => Template {
            kind: MetricKind::Gauge,
            quantile: 0.0,
            value: "max(max_over_time(DCGM_FI_DEV_FB_USED{{{selector}}}[{{window}}])) * 1048576".into(),
            samples: "DCGM_FI_DEV_FB_USED{{{selector}}}[{{window}}]".into(),
            scale: 1_048_576.0,
        },
        // Any other name is a per-request quality failure rate the server
        // counts by check name (e.g. json_incomplete_rate).
        other => {
            let checks = format!("sum(increase(bundlegate_quality_checks_total{{{{{{selector}}}},check=\"{other}\"}}[{{{{window}}}}]))");
            let fails = format!("sum(increase(bundlegate_quality_failures_total{{{{{{selector}}}},check=\"{other}\"}}[{{{{window}}}}]))");
            Template { kind: MetricKind::Proportion, quantile: 0.0, value: format!("{fails} / {checks}"), samples: checks, scale: 1.0 }
        }
    }
}

/// Substitute the placeholders. An empty selector leaves `{,` or `{}`
/// behind, which is tidied so `--baseline-selector ''` still parses.
pub fn fill(template: &str, selector: &str, window: &str) -> String {
    template.replace("{{selector}}", selector).replace("{{window}}", window).replace("{,", "{").replace(",}", "}")
}

/// The same query over the window just before this one.
pub fn earlier(template: &str) -> String {
    template.replace("[{{window}}]", "[{{window}}] offset {{window}}")
}

pub fn run(bundle: &Path, args: &CanaryArgs, ov: &Overrides) -> StepReport {
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
            MetricKind::Proportion => Side::Proportion { value, total: self.prom.scalar(&q).await?.filter(|v| v.is_finite()).unwrap_or(0.0) },
            MetricKind::Histogram => {
                let series = self.prom.query(&q).await?;
                let mut buckets = Vec::new();
                for s in series {
                    let le = s.labels.get("le").ok_or_else(|| anyhow!("bucket query `{q}` returned a series without `le`; keep `sum by (le)`"))?;
                    let le: f64 = if le == "+Inf" { f64::INFINITY } else { le.parse().with_context(|| format!("bucket bound `{le}`"))? };
                    buckets.push((le, s.values.first().copied().unwrap_or(0.0)));
                }
                Side::Histogram { value, hist: Histogram::from_buckets(buckets) }
            }
            MetricKind::Gauge => {
                let series = self.prom.query(&q).await?;
                let samples = series.iter().flat_map(|s| s.values.iter().map(|v| v * t.scale)).filter(|v| v.is_finite()).collect();
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

pub async fn analyze(l: &Loaded, args: &CanaryArgs, ov: &Overrides) -> StepReport {
    let b = &l.bundle;
    let Some(plan) = &b.spec.canary else {
        return StepReport::not_run("canary", &l.display, "the bundle declares no spec.canary plan: there is nothing to compare");
    };
    let shadow = match args.mode.as_deref() {
        None => plan.mode == CanaryMode::Shadow,
        Some("canary") => false,
        Some("shadow") => true,
        Some(other) => return StepReport::error("canary", &l.display, &anyhow!("--mode `{other}`: expected `canary` or `shadow`")),
    };
    let window_text = args.window.clone().unwrap_or_else(|| plan.window.clone());
    let window_secs = match crate::util::parse_duration(&window_text).map(|d| d.as_secs()) {
        Some(s) if s >= 1 => s,
        _ => return StepReport::error("canary", &l.display, &anyhow!("window `{window_text}` is not a duration of at least 1s (e.g. 30m)")),
    };

    // Golden set first: it needs no Prometheus and its failures stand alone.
    let golden = run_golden(l, args).await;

    let Some(prom_url) = args.prometheus.as_deref().filter(|u| !u.trim().is_empty()) else {
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
        return s;
    };

    let candidate_sel = args.candidate_selector.clone().unwrap_or_else(|| format!("version=\"{}\"", b.metadata.version));
    let prev = b.spec.rollback.as_ref().map(|rb| (rb, bundle::load(&l.dir().join(&rb.bundle))));
    let baseline_sel = match (&args.baseline_selector, &prev) {
        (Some(s), _) => s.clone(),
        (None, Some((_, Ok(p)))) => format!("version=\"{}\"", p.bundle.metadata.version),
        (None, Some((_, Err(e)))) => {
            return StepReport::error("canary", &l.display, &anyhow!("no baseline: the rollback target does not load ({e}); pass --baseline-selector"))
        }
        (None, None) => {
            return StepReport::error("canary", &l.display, &anyhow!("no baseline: the bundle declares no spec.rollback; pass --baseline-selector"))
        }
    };

    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
    let prom = match Prom::new(prom_url, now) {
        Ok(p) => p,
        Err(e) => return StepReport::error("canary", &l.display, &e),
    };
    let ctx = Ctx { prom: &prom, window: format!("{window_secs}s") };

    let gathered = gather(&ctx, plan, &candidate_sel, &baseline_sel, window_secs as f64).await;
    let (inputs, traffic) = match gathered {
        Ok(x) => x,
        Err(e) => {
            // Unanswered queries are not "no data": the step could not finish.
            let mut s = StepReport::error("canary", &l.display, &e);
            s.summary = format!("could not query Prometheus, nothing was compared: {e:#}");
            return s;
        }
    };
    let outcomes: Vec<GateOutcome> = inputs.iter().map(c::evaluate_gate).collect();

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
    let blocking = |codes: &[&str]| s.diagnostics.iter().any(|d| d.severity == Severity::Error && codes.contains(&d.code.as_str()));
    let not_passed = outcomes.iter().filter(|o| o.verdict != GateVerdict::Pass).count();
    s.verdict = if matches!(golden, Golden::Error(_)) {
        Verdict::Error
    } else if blocking(&["BG301", "BG304"]) {
        Verdict::Fail
    } else if blocking(&["BG302", "BG303"]) || outcomes.is_empty() {
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
    s
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

async fn gather(ctx: &Ctx<'_>, plan: &bundle::Canary, cs: &str, bs: &str, window_secs: f64) -> Result<(Vec<GateInput>, Traffic)> {
    let mut inputs = Vec::new();
    for g in &plan.gates {
        let t = template_for(&g.metric);
        let value_tpl = g.query.clone().unwrap_or_else(|| t.value.clone());
        let candidate = ctx.side(&t, &value_tpl, cs).await.with_context(|| format!("gate {}", g.metric))?;
        let baseline = ctx.side(&t, &value_tpl, bs).await.with_context(|| format!("gate {}", g.metric))?;
        inputs.push(GateInput {
            metric: g.metric.clone(),
            kind: t.kind,
            quantile: t.quantile,
            max_absolute: g.max_absolute,
            max_relative_increase: g.max_relative_increase,
            min_samples: plan.min_samples,
            window_secs,
            candidate,
            baseline,
        });
    }
    let p95 = latency_quantile("0.95");
    let traffic = Traffic {
        candidate_requests: ctx.scalar(REQUESTS, cs).await?,
        baseline_requests: ctx.scalar(REQUESTS, bs).await?,
        candidate_requests_before: ctx.scalar(&earlier(REQUESTS), cs).await?,
        baseline_requests_before: ctx.scalar(&earlier(REQUESTS), bs).await?,
        candidate_p95: ctx.scalar(&p95, cs).await?,
        baseline_p95: ctx.scalar(&p95, bs).await?,
        candidate_p95_before: ctx.scalar(&earlier(&p95), cs).await?,
        baseline_p95_before: ctx.scalar(&earlier(&p95), bs).await?,
        window_seconds: window_secs,
    };
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

async fn check_rollback(prev: Option<(&bundle::Rollback, Result<Loaded, bundle::LoadError>)>) -> RollbackTarget {
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
    let opts = VerifyOpts { jobs: 4, deny_extra: false, progress: "never".into() };
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

async fn run_golden(l: &Loaded, args: &CanaryArgs) -> Golden {
    let Some(file) = l.bundle.spec.canary.as_ref().and_then(|c| c.golden.as_ref()) else { return Golden::NotDeclared };
    let Some(endpoint) = args.endpoint.as_deref() else { return Golden::NoEndpoint };
    let path = l.dir().join(file);
    let res: Result<Vec<GoldenResult>> = async {
        let text = std::fs::read_to_string(&path).with_context(|| format!("golden set {}", path.display()))?;
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
                    d = d.help("finish reason `length` means the output hit max_tokens: check generation.maxOutputTokens, EOS ids and stop strings shipped with this release (seed 002)");
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
