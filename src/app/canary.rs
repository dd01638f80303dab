//! `bundlegate canary`: gather candidate and baseline numbers from
//! Prometheus, judge them with `checks::canary`, run the golden set against
//! the candidate endpoint, and name an exit action.

use anyhow::{anyhow, Context, Result};
use serde_json::json;

use crate::adapters::prom::{self, Prom};
use crate::app::ctx::Ctx;
use crate::bundle::{self, CanaryMode, Loaded, MetricProvider};
use crate::checks::canary::golden::{self, GoldenAnswer, GoldenSample};
use crate::checks::canary::providers;
use crate::checks::canary::steps::{self as st, StepVerdict};
use crate::checks::canary::{
    self as c, GateInput, GateOutcome, GateVerdict, Histogram, MetricKind, RollbackTarget, Side, Situation, Template,
    Trend,
};
use crate::diag::Overrides;
use crate::options::{CanaryOptions, HumanDuration, VerifyOptions};
use crate::report::{Detail, Diagnostic, Severity, StepReport, Table, Verdict};

/// Substitute the placeholders. An empty selector leaves `{,` or `{}`
/// behind, which is tidied so `--baseline-selector ''` still parses.
pub(crate) fn fill(template: &str, selector: &str, window: &str) -> String {
    template.replace("{{selector}}", selector).replace("{{window}}", window).replace("{,", "{").replace(",}", "}")
}

/// The same query over the window just before this one.
pub(crate) fn earlier(template: &str) -> String {
    template.replace("[{{window}}]", "[{{window}}] offset {{window}}")
}

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
    async fn scalar(&self, tpl: &str, sel: &str) -> Result<Option<f64>> {
        Ok(self.prom.scalar(&fill(tpl, sel, &self.window)).await?.filter(|v| v.is_finite()))
    }

    async fn side(&self, t: &Template, value_tpl: &str, sel: &str) -> Result<Side> {
        let value = self.scalar(value_tpl, sel).await?;
        let q = fill(&t.samples, sel, &self.window);
        Ok(match t.kind {
            // A NaN/Inf count reads as no requests: NO DATA, never a pass.
            MetricKind::Proportion => {
                Side::Proportion { value, total: self.prom.scalar(&q).await?.filter(|v| v.is_finite()).unwrap_or(0.0) }
            }
            MetricKind::Histogram => {
                let series = self.prom.query(&q).await?;
                let mut buckets = Vec::new();
                for s in series {
                    let le = s.labels.get("le").ok_or_else(|| {
                        anyhow!("bucket query `{q}` returned a series without `le`; keep `sum by (le)`")
                    })?;
                    // A series relabelled with its own bound factor (a second
                    // naming generation in another unit) uses that factor.
                    let scale = match s.labels.get(providers::LE_SCALE_LABEL) {
                        Some(f) => f
                            .parse::<f64>()
                            .ok()
                            .filter(|f| f.is_finite() && *f > 0.0)
                            .ok_or_else(|| anyhow!("bucket query `{q}`: bad {} `{f}`", providers::LE_SCALE_LABEL))?,
                        None => t.bound_scale,
                    };
                    let le: f64 = if le == "+Inf" {
                        f64::INFINITY
                    } else {
                        le.parse::<f64>().with_context(|| format!("bucket bound `{le}`"))? * scale
                    };
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

fn unix_now(ctx: &Ctx) -> f64 {
    ctx.now().timestamp_micros() as f64 / 1e6
}

/// Judge the current split: gates over the window ending now.
pub(crate) async fn analyze(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    analyze_at(ctx, l, args, ov, unix_now(ctx), true, false).await.0
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
        self.candidate_override
            .clone()
            .unwrap_or_else(|| format!("{}=\"{}\"", providers::arm_label(p), self.candidate_version))
    }
    fn baseline(&self, p: MetricProvider) -> String {
        self.baseline_override.clone().unwrap_or_else(|| {
            format!("{}=\"{}\"", providers::arm_label(p), self.baseline_version.as_deref().unwrap_or_default())
        })
    }
}

/// The provider a gate reads: its own, else the plan's, else bundlegate's.
pub(crate) fn gate_provider(plan: &bundle::Canary, g: &bundle::Gate) -> MetricProvider {
    g.provider.or(plan.provider).unwrap_or_default()
}

/// Gates over the window ending at `now` (unix seconds); the golden set
/// runs only when `with_golden`. `alone`: a 100% step, where the baseline
/// serves nothing: only gates with an absolute limit are judged, on the
/// candidate alone. Also returns the gate outcomes.
async fn analyze_at(
    ctx: &Ctx,
    l: &Loaded,
    args: &CanaryOptions,
    ov: &Overrides,
    now: f64,
    with_golden: bool,
    alone: bool,
) -> (StepReport, Vec<GateOutcome>) {
    let b = &l.bundle;
    let Some(plan) = &b.spec.canary else {
        return (
            StepReport::not_run(
                "canary",
                &l.display,
                "the bundle declares no spec.canary plan: there is nothing to compare",
            ),
            Vec::new(),
        );
    };
    let no_golden = CanaryOptions { endpoint: None, ..args.clone() };
    let golden_args = if with_golden { args } else { &no_golden };
    analyze_plan(ctx, l, plan, golden_args, ov, now, alone).await
}

/// The baseline's version: none with `--baseline-selector`, else the
/// rollback target's, which must load. Also returns the rollback target as
/// loaded, for the rollback check.
#[allow(clippy::type_complexity)]
fn baseline_version<'a>(
    l: &'a Loaded,
    args: &CanaryOptions,
) -> Result<(
    Option<String>,
    Option<(&'a bundle::Rollback, Result<Loaded, crate::adapters::bundle_files::NamedFileError>)>,
)> {
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

#[expect(clippy::too_many_lines, reason = "to be split into named steps (issue #28)")]
async fn analyze_plan(
    ctx: &Ctx,
    l: &Loaded,
    plan: &bundle::Canary,
    args: &CanaryOptions,
    ov: &Overrides,
    now: f64,
    alone: bool,
) -> (StepReport, Vec<GateOutcome>) {
    let b = &l.bundle;
    macro_rules! bail_step {
        ($e:expr) => {
            return ($e, Vec::new())
        };
    }
    let shadow = match args.mode {
        None => plan.mode == CanaryMode::Shadow,
        Some(m) => m == CanaryMode::Shadow,
    };
    let window_text = args.window.as_ref().map(|w| w.text.clone()).unwrap_or_else(|| plan.window.clone());
    let window_secs = match crate::util::parse_duration(&window_text).map(|d| d.as_secs()) {
        Some(s) if s >= 1 => s,
        _ => bail_step!(StepReport::error(
            "canary",
            &l.display,
            &anyhow!("window `{window_text}` is not a duration of at least 1s (e.g. 30m)")
        )),
    };

    // Golden set first: it needs no Prometheus and its failures stand alone.
    let golden = run_golden(ctx, l, args).await;
    let provider = plan.provider.unwrap_or_default();

    let Some(prom_url) = args.prometheus_url() else { bail_step!(golden_only(l, &golden, ov)) };

    let (baseline_version, prev) = match baseline_version(l, args) {
        Ok(x) => x,
        Err(e) => bail_step!(StepReport::error("canary", &l.display, &e)),
    };

    let arms = Arms {
        candidate_version: b.metadata.version.clone(),
        baseline_version,
        candidate_override: args.candidate_selector.clone(),
        baseline_override: args.baseline_selector.clone(),
    };
    let (candidate_sel, baseline_sel) = (arms.candidate(provider), arms.baseline(provider));
    let prom = match ctx.http().and_then(|h| Prom::new(h.clone(), prom_url, now)) {
        Ok(p) => p,
        Err(e) => bail_step!(StepReport::error("canary", &l.display, &e)),
    };
    let pw = PromWindow { prom: &prom, window: format!("{window_secs}s") };

    let gathered = gather(&pw, plan, &arms, window_secs as f64, alone).await;
    let (inputs, traffic, unchecked) = match gathered {
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
        .map(|(_, g, note)| {
            let mut o = c::evaluate_gate(g);
            if let Some(n) = note {
                o.message = n.clone();
            }
            o
        })
        .collect();

    let mut s = StepReport::new("canary", &l.display);
    let mut diags = Vec::new();
    for ((i, ..), o) in inputs.iter().zip(&outcomes) {
        if let Some(d) = c::gate_diagnostic(*i, o, &window_text, alone) {
            diags.push(d.at(l.span(&format!("spec.canary.gates[{i}]"))));
        }
        s.tables.push(gate_table(o));
    }
    let golden_note = golden_into(&golden, &mut s, &mut diags);
    let golden_failed = match &golden {
        Golden::Ran(r) => r.iter().filter(|g| !g.problems.is_empty()).count(),
        _ => 0,
    };

    let trend = traffic.trend();
    let situation = match c::classify(&outcomes, golden_failed, &trend) {
        // No baseline ran beside it: neither version nor load can be named.
        Situation::Unattributed if alone => Situation::FullTrafficBreach,
        other => other,
    };
    let rollback = if situation == Situation::VersionRegression && !shadow {
        check_rollback(ctx, prev).await
    } else {
        RollbackTarget::NotChecked
    };
    let more = outcomes.iter().filter_map(|o| o.more_samples.zip(o.more_minutes)).max_by(|a, b| a.1.total_cmp(&b.1));
    let mut action = c::decide(situation, shadow, &trend, &rollback, more);
    if alone {
        // Only the candidate's samples count at a 100% step.
        action.precondition = action.precondition.replace("each side has", "the candidate has").replace(
            "per side are needed and one side receives no traffic",
            "are needed and the candidate receives no traffic",
        );
    }

    s.diagnostics = ov.apply(diags);
    s.verdict = c::canary_verdict(&s.diagnostics, &outcomes, matches!(golden, Golden::Error(_)), alone);
    let not_passed = outcomes.iter().filter(|o| o.verdict != GateVerdict::Pass).count();
    let count = |v: GateVerdict| outcomes.iter().filter(|o| o.verdict == v).count();
    let downgraded = if s.verdict == Verdict::Pass && not_passed > 0 {
        format!(" ({not_passed} gate(s) did not pass; their codes were downgraded by configuration)")
    } else {
        String::new()
    };
    let arms_note = arms_note(alone, shadow, &candidate_sel, &baseline_sel, &unchecked);
    s.summary = format!(
        "{} of {} gate(s) passed, {} failed, {} inconclusive, {} without data over {} ({}); golden set: {}{}. Action: {} — {}. Watch next: {}.",
        count(GateVerdict::Pass),
        outcomes.len(),
        count(GateVerdict::Fail),
        count(GateVerdict::Inconclusive),
        count(GateVerdict::NoData),
        window_text,
        arms_note,
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
        "candidateAlone": alone,
        "notChecked": unchecked,
        "alpha": c::ALPHA,
        "power": c::POWER,
        "gates": outcomes,
        "trend": trend,
        "traffic": traffic,
        "golden": golden.data(),
        "rollbackTarget": rollback_json(&rollback),
    });
    (s, outcomes)
}

/// No Prometheus: the gates are not run, the golden set still is and its
/// failures stand alone.
fn golden_only(l: &Loaded, golden: &Golden, ov: &Overrides) -> StepReport {
    let mut s = StepReport::not_run("canary", &l.display, "");
    let mut diags = Vec::new();
    let note = golden_into(golden, &mut s, &mut diags);
    s.diagnostics = ov.apply(diags);
    s.summary =
        format!("gates not run: no --prometheus URL, so candidate and baseline were not compared; golden set: {note}");
    if s.diagnostics.iter().any(|d| d.severity == Severity::Error) {
        s.verdict = Verdict::Fail;
    } else if matches!(golden, Golden::Error(_)) {
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

fn rollback_json(rollback: &RollbackTarget) -> serde_json::Value {
    match rollback {
        RollbackTarget::NotChecked => json!({"status": "not-checked"}),
        RollbackTarget::Verified { path, version, digest, evidence } => {
            json!({"status": "verified", "path": path, "version": version, "digest": digest, "evidence": evidence})
        }
        RollbackTarget::Unusable { path, reason } => json!({"status": "unusable", "path": path, "reason": reason}),
    }
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
        let per_min = |n: Option<f64>| {
            n.map(|n| format!("{:.1}/min", n / self.window_seconds * 60.0)).unwrap_or_else(|| "no data".into())
        };
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
            columns: ["side", "selector", "requests", "rate", "rate before", "P95", "P95 before"]
                .map(String::from)
                .to_vec(),
            rows: vec![
                row(
                    "candidate",
                    cs,
                    self.candidate_requests,
                    self.candidate_requests_before,
                    self.candidate_p95,
                    self.candidate_p95_before,
                ),
                row(
                    "baseline",
                    bs,
                    self.baseline_requests,
                    self.baseline_requests_before,
                    self.baseline_p95,
                    self.baseline_p95_before,
                ),
            ],
        }
    }
}

/// Why a gate could not be queried under its provider (lint reports it
/// too); its outcome is NO DATA with this note, never skipped.
pub(crate) fn unsupported_note(p: MetricProvider, metric: &str) -> String {
    let reason = providers::unsupported_reason(p, metric).map(|r| format!(": {r}")).unwrap_or_default();
    let hint = match providers::other_provider(metric) {
        Some(o) if o != p => format!(
            "; it is a `{}` gate: set `provider: {}` on the gate or the plan",
            providers::name(o),
            providers::name(o)
        ),
        _ => String::new(),
    };
    format!("provider `{}` exports nothing that computes `{metric}`{reason}{hint}", providers::name(p))
}

/// Each gate's input (with its index in the plan and a note overriding its
/// message), the traffic of both arms, and — `alone` — the gates skipped for
/// lack of an absolute limit.
#[allow(clippy::type_complexity)]
async fn gather(
    pw: &PromWindow<'_>,
    plan: &bundle::Canary,
    arms: &Arms,
    window_secs: f64,
    alone: bool,
) -> Result<(Vec<(usize, GateInput, Option<String>)>, Traffic, Vec<String>)> {
    let mut inputs = Vec::new();
    let mut unchecked = Vec::new();
    for (i, g) in plan.gates.iter().enumerate() {
        if alone && !providers::has_absolute_limit(g) {
            unchecked.push(g.metric.clone());
            continue;
        }
        let p = gate_provider(plan, g);
        let (cs, bs) = (arms.candidate(p), arms.baseline(p));
        let (t, note) = match providers::template(p, &g.metric) {
            Some(t) => (Some(t), None),
            None => (None, Some(unsupported_note(p, &g.metric))),
        };
        let (candidate, baseline, requests, kind, quantile, hib) = match &t {
            Some(t) => {
                let value_tpl = g.query.clone().unwrap_or_else(|| t.value.clone());
                let candidate = pw.side(t, &value_tpl, &cs).await.with_context(|| format!("gate {}", g.metric))?;
                // At a 100% step the baseline is not read: it served nothing.
                let baseline = if alone {
                    Side::Proportion { value: None, total: 0.0 }
                } else {
                    pw.side(t, &value_tpl, &bs).await.with_context(|| format!("gate {}", g.metric))?
                };
                let requests = match &t.requests {
                    Some(q) => {
                        let n = |v: Option<f64>| {
                            v.filter(|v| v.is_finite() && *v > 0.0).map(|v| v.round() as u64).unwrap_or(0)
                        };
                        let rb = if alone { 0 } else { n(pw.scalar(q, &bs).await?) };
                        Some((n(pw.scalar(q, &cs).await?), rb))
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
            i,
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
                candidate_only: alone,
            },
            note,
        ));
    }
    let provider = plan.provider.unwrap_or_default();
    let (cs, bs) = (arms.candidate(provider), arms.baseline(provider));
    let mut traffic = Traffic { window_seconds: window_secs, ..Traffic::default() };
    if let Some((requests, p95)) = providers::traffic(provider) {
        traffic.candidate_requests = pw.scalar(&requests, &cs).await?;
        traffic.baseline_requests = pw.scalar(&requests, &bs).await?;
        traffic.candidate_requests_before = pw.scalar(&earlier(&requests), &cs).await?;
        traffic.baseline_requests_before = pw.scalar(&earlier(&requests), &bs).await?;
        traffic.candidate_p95 = pw.scalar(&p95, &cs).await?;
        traffic.baseline_p95 = pw.scalar(&p95, &bs).await?;
        traffic.candidate_p95_before = pw.scalar(&earlier(&p95), &cs).await?;
        traffic.baseline_p95_before = pw.scalar(&earlier(&p95), &bs).await?;
    }
    Ok((inputs, traffic, unchecked))
}

fn gate_table(o: &GateOutcome) -> Table {
    let v = |x: Option<f64>| c::fmt_value(o.kind, &o.metric, x);
    let samples = format!("{} / {}", o.candidate_samples, o.baseline_samples);
    let needed = o.needed.map(|n| n.to_string()).unwrap_or_else(|| "—".into());
    let method = o.comparison.map(|t| t.method).unwrap_or("no test");
    let mut rows: Vec<Vec<String>> = o
        .checks
        .iter()
        .map(|ch| {
            let p =
                ch.test.map(|t| format!("{} ({})", c::fmt_p(t.p_value), t.method)).unwrap_or_else(|| "measured".into());
            let verdict = if ch.supported {
                "FAIL".to_string()
            } else if ch.exceeded {
                "above, not significant".to_string()
            } else {
                "within".to_string()
            };
            vec![
                format!("{} ({})", o.metric, ch.kind),
                v(o.baseline),
                v(o.candidate),
                v(Some(ch.limit)),
                p,
                samples.clone(),
                needed.clone(),
                verdict,
            ]
        })
        .collect();
    if rows.is_empty() {
        let p = o.comparison.map(|t| c::fmt_p(t.p_value)).unwrap_or_else(|| "—".into());
        rows.push(vec![
            o.metric.clone(),
            v(o.baseline),
            v(o.candidate),
            "—".into(),
            p,
            samples,
            needed,
            o.verdict.to_string(),
        ]);
    }
    Table {
        title: format!("gate {} — {} ({method})", o.metric, o.verdict),
        columns: [
            "metric",
            "baseline",
            "candidate",
            "limit",
            "p-value",
            "samples (cand / base)",
            "needed per side",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

async fn check_rollback(
    ctx: &Ctx,
    prev: Option<(&bundle::Rollback, Result<Loaded, crate::adapters::bundle_files::NamedFileError>)>,
) -> RollbackTarget {
    let Some((rb, loaded)) = prev else {
        return RollbackTarget::Unusable { path: None, reason: "the bundle declares no spec.rollback".into() };
    };
    let path = Some(rb.bundle.clone());
    let p = match loaded {
        Ok(p) => p,
        Err(e) => return RollbackTarget::Unusable { path, reason: format!("it does not load: {e}") },
    };
    if p.digest != rb.release_digest {
        return RollbackTarget::Unusable {
            path,
            reason: format!("it hashes to {} but spec.rollback.releaseDigest records {}", p.digest, rb.release_digest),
        };
    }
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

struct GoldenResult {
    sample: GoldenSample,
    answer: GoldenAnswer,
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

async fn run_golden(ctx: &Ctx, l: &Loaded, args: &CanaryOptions) -> Golden {
    let Some(file) = l.bundle.spec.canary.as_ref().and_then(|c| c.golden.as_ref()) else { return Golden::NotDeclared };
    let Some(endpoint) = args.endpoint.as_deref() else { return Golden::NoEndpoint };
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
                let chars =
                    r.answer.content.as_ref().map(|c| c.chars().count().to_string()).unwrap_or_else(|| "—".into());
                rows.push(vec![
                    r.sample.name.clone(),
                    serde_json::to_value(r.sample.api)
                        .ok()
                        .and_then(|v| v.as_str().map(String::from))
                        .unwrap_or_default(),
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
                let d = c::golden_failed(
                    &r.sample.name,
                    &r.problems,
                    shown,
                    r.answer.finish_reason.as_deref(),
                    r.answer.status,
                    r.answer.latency_ms,
                );
                diags.push(d);
                // Keep the failing sample whole so it can be replayed.
                s.details.push(Detail {
                    title: format!("failing golden sample `{}`", r.sample.name),
                    lang: "json".into(),
                    body: serde_json::to_string_pretty(
                        &json!({"request": r.sample.request, "expect": r.sample.expect, "answer": r.answer}),
                    )
                    .unwrap_or_default(),
                });
            }
            s.tables.push(Table {
                title: "golden set against the candidate".into(),
                columns: ["sample", "api", "HTTP", "latency", "finish reason", "chars", "result"]
                    .map(String::from)
                    .to_vec(),
                rows,
            });
            let failed = results.iter().filter(|r| !r.problems.is_empty()).count();
            format!("{}/{} passed", results.len() - failed, results.len())
        }
    }
}

// ---------------------------------------------------------------------------
// Traffic steps (`watch`, `canary --steps`)

/// Judge every traffic step of `spec.canary.steps` where the arms really
/// held it (`checks::canary::steps`): the candidate's share of the requests
/// over the look-back horizon places each step; a step below 100% is judged
/// candidate vs baseline over the last window of its latest stretch, the
/// 100% step on the candidate alone against absolute limits. The walk stops
/// at the first FAIL. The report is the deciding step's (the first FAIL,
/// else the latest judged) with one row per step and the diagnostics of
/// every judged step. Shadow mode has no split: the current window is
/// judged instead, and the summary says so.
#[expect(clippy::too_many_lines, reason = "to be split into named steps (issue #28)")]
pub(crate) async fn analyze_steps(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    let Some(plan) = &l.bundle.spec.canary else { return analyze(ctx, l, args, ov).await };
    let shadow = match args.mode {
        None => plan.mode == CanaryMode::Shadow,
        Some(m) => m == CanaryMode::Shadow,
    };
    let window_text = args.window.as_ref().map(|w| w.text.clone()).unwrap_or_else(|| plan.window.clone());
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
    let Timeline { now, res, horizon, points, cs, bs } =
        match read_timeline(ctx, l, args, plan, window_secs, prom_url).await {
            Ok(t) => t,
            Err(step) => return step,
        };
    let segments = st::segments(&points, &plan.steps);
    let placed = st::place(&segments, &plan.steps, res as f64, window_secs as f64);
    let latest_share = points.iter().rev().find_map(|p| p.share());
    let last_placed = placed.iter().rposition(Option::is_some);

    // ---- judge them in order ----
    let mut verdicts: Vec<StepVerdict> = Vec::new();
    let mut rows = Vec::new();
    let mut steps_data = Vec::new();
    let mut diags = Vec::new();
    let mut deciding: Option<StepReport> = None;
    let ago = |t: f64| format!("{:.0} s ago", (now - t).max(0.0));
    for (i, pct) in plan.steps.iter().enumerate() {
        let field = "spec.canary.steps".to_string();
        let (v, held, judged, note) = if verdicts.contains(&StepVerdict::Fail) {
            (StepVerdict::NotJudged, "—".into(), "—".into(), "an earlier step failed: not judged".to_string())
        } else {
            match placed[i] {
                None => {
                    let v = st::unplaced_verdict(&placed, i);
                    let note = if v == StepVerdict::Pending {
                        format!("not held in the last {horizon} s: not reached yet")
                    } else {
                        format!("never held in the last {horizon} s while a later step was: skipped, so nothing was compared at {pct}%")
                    };
                    if v == StepVerdict::Inconclusive {
                        diags.extend(ov.apply(vec![st::step_inconclusive(*pct, &note, &field).at(l.span(&field))]));
                    }
                    (v, "—".into(), "—".into(), note)
                }
                Some(w) if w.secs < 1.0 => {
                    let note = format!(
                        "held about {:.0} s, too briefly to judge once the buckets straddling its changes are dropped",
                        w.held_to - w.held_from
                    );
                    diags.extend(ov.apply(vec![st::step_inconclusive(*pct, &note, &field).at(l.span(&field))]));
                    (StepVerdict::Inconclusive, format!("{} → {}", ago(w.held_from), ago(w.held_to)), "—".into(), note)
                }
                Some(w) => {
                    let alone = *pct == 100;
                    let secs = w.secs.round() as u64;
                    let step_args = CanaryOptions {
                        window: Some(HumanDuration {
                            value: std::time::Duration::from_secs(secs),
                            text: format!("{secs}s"),
                        }),
                        ..args.clone()
                    };
                    // The golden set checks the candidate as it is now: with the latest step held.
                    let (rep, outcomes) =
                        analyze_at(ctx, l, &step_args, ov, w.end, Some(i) == last_placed, alone).await;
                    if rep.verdict == Verdict::Error {
                        let mut rep = rep;
                        rep.summary = format!("traffic step {pct}%: {}", rep.summary);
                        return rep;
                    }
                    let mut v = st::judge_step(&outcomes, alone);
                    // Golden failures and downgraded codes speak through the step report.
                    if rep.verdict == Verdict::Fail {
                        v = StepVerdict::Fail;
                    }
                    let note = if v == StepVerdict::NotChecked {
                        "the baseline serves nothing at 100% and no gate has an absolute limit (maxAbsolute / minAbsolute): nothing to judge here".to_string()
                    } else {
                        rep.summary.split(". Action:").next().unwrap_or_default().to_string()
                    };
                    for mut d in rep.diagnostics.clone() {
                        d.message = format!("step {pct}%: {}", d.message);
                        diags.push(d);
                    }
                    if v == StepVerdict::Fail || deciding.as_ref().is_none_or(|d| d.verdict != Verdict::Fail) {
                        deciding = Some(rep);
                    }
                    (
                        v,
                        format!("{} → {}", ago(w.held_from), ago(w.held_to)),
                        format!("{secs} s ending {}", ago(w.end)),
                        note,
                    )
                }
            }
        };
        rows.push(vec![format!("{pct}%"), held, judged, v.to_string(), note.clone()]);
        steps_data.push(json!({
            "percent": pct,
            "verdict": v,
            "held": placed[i].map(|w| json!({"from": w.held_from, "to": w.held_to})),
            "window": placed[i].filter(|w| w.secs >= 1.0).map(|w| json!({"end": w.end, "seconds": w.secs})),
            "note": note,
        }));
        verdicts.push(v);
    }

    let overall = st::overall(&verdicts);
    let mut s = deciding.unwrap_or_else(|| StepReport::new("canary", &l.display));
    // Each step's diagnostics went through the overrides already.
    s.diagnostics = diags;
    s.verdict = match overall {
        StepVerdict::Fail => Verdict::Fail,
        StepVerdict::Pass => Verdict::Pass,
        _ => Verdict::Inconclusive,
    };
    let latest = latest_share.map(|x| format!("{:.1}%", x * 100.0)).unwrap_or_else(|| "no traffic".into());
    let deciding_note = if s.summary.is_empty() { String::new() } else { format!(" Deciding step: {}", s.summary) };
    s.summary = format!(
        "traffic steps {:?}, placed from the arms' request shares (every {res} s over the last {horizon} s; the candidate's latest share: {latest}), each judged over at most {window_text}: {}.{deciding_note}",
        plan.steps,
        plan.steps.iter().zip(&verdicts).map(|(p, v)| format!("{p}% {v}")).collect::<Vec<_>>().join(", "),
    );
    s.tables.insert(
        0,
        Table {
            title: "traffic steps".into(),
            columns: ["step", "held", "judged window", "verdict", "gates"].map(String::from).to_vec(),
            rows,
        },
    );
    if !s.data.is_object() {
        s.data = json!({});
    }
    if let Some(o) = s.data.as_object_mut() {
        o.insert("steps".into(), json!(steps_data));
        o.insert("verdict".into(), json!(overall));
        o.insert(
            "timeline".into(),
            json!({"resolutionSeconds": res, "horizonSeconds": horizon, "latestCandidateShare": latest_share, "segments": segments, "selectors": {"candidate": cs, "baseline": bs}}),
        );
    }
    s
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
    let Some((requests_tpl, _)) = providers::traffic(provider) else {
        let e = anyhow!(
            "provider `{}` exports no request count, so the arms' traffic shares (which place the steps) cannot be read; set the plan's provider to the serving stack and `provider: dcgm` on the GPU gates only",
            providers::name(provider)
        );
        return Err(StepReport::error("canary", &l.display, &e));
    };
    let baseline_version = match baseline_version(l, args) {
        Ok((v, _)) => v,
        Err(e) => return Err(StepReport::error("canary", &l.display, &e)),
    };
    let arms = Arms {
        candidate_version: l.bundle.metadata.version.clone(),
        baseline_version,
        candidate_override: args.candidate_selector.clone(),
        baseline_override: args.baseline_selector.clone(),
    };
    let (cs, bs) = (arms.candidate(provider), arms.baseline(provider));
    let now = unix_now(ctx);
    let res = st::resolution_secs(window_secs);
    let horizon = st::horizon_secs(res);
    let timeline = async {
        let prom = Prom::new(ctx.http()?.clone(), prom_url, now)?;
        let q = |sel: &str| fill(&requests_tpl, sel, &format!("{res}s"));
        let c = prom.query_range(&q(&cs), now - horizon as f64, now, res as f64).await?;
        let b = prom.query_range(&q(&bs), now - horizon as f64, now, res as f64).await?;
        anyhow::Ok(split_points(&c, &b))
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

/// Requests per arm at each point of the two range queries (an arm without
/// a point at a time served nothing then; NaN points are dropped).
fn split_points(candidate: &[prom::Series], baseline: &[prom::Series]) -> Vec<st::SplitPoint> {
    use std::collections::BTreeMap;
    let mut at: BTreeMap<i64, st::SplitPoint> = BTreeMap::new();
    for (arm, series) in [(0, candidate), (1, baseline)] {
        for s in series {
            for (t, v) in s.times.iter().zip(&s.values) {
                if !t.is_finite() || !v.is_finite() {
                    continue;
                }
                let p = at.entry((t * 1000.0).round() as i64).or_insert(st::SplitPoint {
                    t: *t,
                    candidate: 0.0,
                    baseline: 0.0,
                });
                if arm == 0 {
                    p.candidate += v.max(0.0);
                } else {
                    p.baseline += v.max(0.0);
                }
            }
        }
    }
    at.into_values().collect()
}
