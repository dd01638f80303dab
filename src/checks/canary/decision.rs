//! The exit action (the rollback decision card): gate verdicts, the golden
//! set and each arm's trend → a situation (version regression, load, …) → an
//! action (promote, hold, roll back, degrade, throttle, step back), and
//! whether the rollback target is a way back before and after its bytes are
//! verified. Separate because it combines gates; it never looks at a sample.

use serde::Serialize;

use super::gate::{GateOutcome, GateVerdict, MetricKind};
use crate::bundle::Loaded;
use crate::checks::rollback::RollbackStatus;
use crate::diag::{Code, Diagnostic, Severity};
use crate::report::{StepReport, Table, Verdict};

/// How each arm moved against its own previous window (ratios now/earlier).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Trend {
    pub candidate_rate: Option<f64>,
    pub baseline_rate: Option<f64>,
    pub candidate_latency: Option<f64>,
    pub baseline_latency: Option<f64>,
}

/// Request rate up by half on both arms is a load change, not a release.
pub(crate) const LOAD_RATE_RATIO: f64 = 1.5;
/// Both P95s up by a fifth against their own earlier window: load-driven.
pub(crate) const LOAD_LATENCY_RATIO: f64 = 1.2;

impl Trend {
    pub(crate) fn load_driven(&self) -> bool {
        let both = |a: Option<f64>, b: Option<f64>, t: f64| matches!((a, b), (Some(a), Some(b)) if a >= t && b >= t);
        both(self.candidate_rate, self.baseline_rate, LOAD_RATE_RATIO)
            || both(self.candidate_latency, self.baseline_latency, LOAD_LATENCY_RATIO)
    }
    pub(crate) fn describe(&self) -> String {
        let f = |v: Option<f64>| v.map(|v| format!("×{v:.2}")).unwrap_or_else(|| "unknown".into());
        format!(
            "vs the previous window: request rate candidate {} / baseline {}, P95 candidate {} / baseline {}",
            f(self.candidate_rate),
            f(self.baseline_rate),
            f(self.candidate_latency),
            f(self.baseline_latency)
        )
    }
}

fn ratio(now: Option<f64>, before: Option<f64>) -> Option<f64> {
    match (now, before) {
        (Some(n), Some(b)) if b > 0.0 && n.is_finite() => Some(n / b),
        _ => None,
    }
}

/// Both arms' requests and P95, this window and the one before (what the
/// trend is computed from); `data.traffic` in the report.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Traffic {
    pub candidate_requests: Option<f64>,
    pub baseline_requests: Option<f64>,
    pub candidate_requests_before: Option<f64>,
    pub baseline_requests_before: Option<f64>,
    pub candidate_p95: Option<f64>,
    pub baseline_p95: Option<f64>,
    pub candidate_p95_before: Option<f64>,
    pub baseline_p95_before: Option<f64>,
    pub window_seconds: f64,
}

impl Traffic {
    pub(crate) fn trend(&self) -> Trend {
        Trend {
            candidate_rate: ratio(self.candidate_requests, self.candidate_requests_before),
            baseline_rate: ratio(self.baseline_requests, self.baseline_requests_before),
            candidate_latency: ratio(self.candidate_p95, self.candidate_p95_before),
            baseline_latency: ratio(self.baseline_p95, self.baseline_p95_before),
        }
    }

    /// The traffic table: per arm its selector, requests, rate and P95, now and before.
    pub(crate) fn table(&self, cs: &str, bs: &str) -> Table {
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Situation {
    /// Every gate passed.
    Healthy,
    /// Not enough evidence (or no data): decide nothing yet.
    Undecided,
    /// The candidate is worse than the baseline (gates or golden set).
    VersionRegression,
    /// Gates fail but both versions slowed / took more traffic.
    LoadDriven,
    /// Gates fail without a candidate-vs-baseline difference or a load change.
    Unattributed,
    /// An absolute limit fails at a 100% step, where no baseline runs to
    /// tell the version from the load.
    FullTrafficBreach,
}

pub(crate) fn classify(gates: &[GateOutcome], golden_failed: usize, trend: &Trend) -> Situation {
    if golden_failed > 0 || gates.iter().any(GateOutcome::version_tied) {
        Situation::VersionRegression
    } else if gates.iter().any(|g| g.verdict == GateVerdict::Fail) {
        if trend.load_driven() {
            Situation::LoadDriven
        } else {
            Situation::Unattributed
        }
    } else if !gates.is_empty() && gates.iter().all(|g| g.verdict == GateVerdict::Pass) {
        Situation::Healthy
    } else {
        Situation::Undecided
    }
}

/// Whether the rollback target can be used, as the caller found out
/// (in the report: `{"status": "verified", …}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub(crate) enum RollbackTarget {
    /// Not needed for this situation, so not checked.
    NotChecked,
    Verified {
        path: String,
        version: String,
        digest: String,
        evidence: String,
    },
    Unusable {
        path: Option<String>,
        reason: String,
    },
}

/// The rollback target before its bytes are verified: unusable, and why
/// (`checks::rollback` judges it as lint and revert do); none when it
/// loaded and nothing speaks against it, so it is verified next.
pub(crate) fn rollback_unusable(l: &Loaded, status: &RollbackStatus) -> Option<RollbackTarget> {
    let problem = crate::checks::rollback::judge(l, status).into_iter().next();
    let path = match status {
        RollbackStatus::NotDeclared => None,
        RollbackStatus::Resolved { path, .. }
        | RollbackStatus::Unreadable { path, .. }
        | RollbackStatus::Escapes { path, .. } => Some(path.clone()),
    };
    match (status, problem) {
        (RollbackStatus::Resolved { .. }, None) => None,
        (_, problem) => Some(RollbackTarget::Unusable {
            path,
            reason: problem.map_or_else(|| "it does not load".into(), |u| u.reason()),
        }),
    }
}

/// The rollback target `path` (loaded as `target`) after `verify`: its
/// report is the evidence, or the reason (up to three blocking findings).
pub(crate) fn rollback_verified(path: &str, target: &Loaded, verify: &StepReport) -> RollbackTarget {
    if verify.verdict == Verdict::Pass {
        return RollbackTarget::Verified {
            path: path.into(),
            version: target.bundle.metadata.version.clone(),
            digest: target.digest.clone(),
            evidence: verify.summary.clone(),
        };
    }
    let codes: Vec<String> = verify
        .diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| format!("{} {}", d.code, d.message))
        .take(3)
        .collect();
    RollbackTarget::Unusable {
        path: Some(path.into()),
        reason: format!(
            "verify {}: {}{}",
            verify.verdict,
            verify.summary,
            if codes.is_empty() { String::new() } else { format!(" ({})", codes.join("; ")) }
        ),
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Action {
    pub action: &'static str,
    pub precondition: String,
    pub watch_next: String,
}

/// `alone`: a 100% step, where only the candidate's samples count.
pub(crate) fn decide(
    situation: Situation,
    shadow: bool,
    alone: bool,
    trend: &Trend,
    rollback: &RollbackTarget,
    more: Option<(u64, f64)>,
) -> Action {
    let load_note = if trend.load_driven() {
        " Load rose on both versions too: after the rollback, limit admission until the queue drains."
    } else {
        ""
    };
    match situation {
        Situation::Healthy => Action {
            action: "promote",
            precondition: "every gate passed with at least the samples needed to detect its configured effect".into(),
            watch_next: "repeat this analysis at the next traffic step over a full window; watch error rate, P95, GPU memory and the golden set per version".into(),
        },
        Situation::Undecided => Action {
            action: "hold",
            precondition: match more {
                Some((n, m)) if m.is_finite() => {
                    let who = if alone { "the candidate has" } else { "each side has" };
                    format!("keep traffic at the current step; no promotion until {who} {n} more samples (≈ {m:.1} more minutes at the observed rate)")
                }
                Some((n, _)) => {
                    let what = if alone {
                        "are needed and the candidate receives no traffic"
                    } else {
                        "per side are needed and one side receives no traffic"
                    };
                    format!("keep traffic at the current step; {n} more samples {what}")
                }
                None => "keep traffic at the current step; a gate had no data or could not be decided".into(),
            },
            watch_next: "re-run after that time; if the rate cannot reach the sample size, raise the canary weight or lengthen the window instead of promoting on thin evidence".into(),
        },
        Situation::VersionRegression if shadow => Action {
            action: "hold",
            precondition: "shadow mode: users are served by the baseline, so there is nothing to roll back; stop the mirror and do not promote this version".into(),
            watch_next: "fix the candidate, re-run the golden set and the shadow analysis at the same load".into(),
        },
        Situation::VersionRegression => match rollback {
            RollbackTarget::Verified { path, version, digest, evidence } => Action {
                action: "rollback",
                precondition: format!(
                    "rollback target {path} (version {version}, {digest}) verified: {evidence}; the candidate is worse than the baseline under the same load ({}).{load_note}",
                    trend.describe()
                ),
                watch_next: "after rolling back: golden set, finish reasons, output length and P95 on the previous version at the same load within one window; if they do not recover the cause is not the version (check load, admission, shared dependencies)".into(),
            },
            RollbackTarget::Unusable { path, reason } => Action {
                action: "degrade",
                precondition: format!(
                    "rollback target {} is not usable ({reason}); switching blindly could add a second failure, so enable the existing verified degrade path first (e.g. a fallback model or reduced features), then repair the previous bundle",
                    path.as_deref().unwrap_or("(none declared)")
                ),
                watch_next: "error rate and golden set on the degrade path; `bundlegate verify` the previous bundle until it passes, then roll back".into(),
            },
            RollbackTarget::NotChecked => Action {
                action: "degrade",
                precondition: "the rollback target was not verified, so a rollback cannot be recommended".into(),
                watch_next: "verify the previous bundle, then re-run".into(),
            },
        },
        Situation::LoadDriven => Action {
            action: "throttle",
            precondition: format!("both versions slowed or took more traffic ({}); rolling back adds no capacity, so limit admission and isolate long requests per the runbook", trend.describe()),
            watch_next: "queue length and P95 falling after admission limits, counting rejected and queued requests as outcomes; if latency stays high after the rate returns to normal, re-run the canary: it may be the version after all".into(),
        },
        Situation::FullTrafficBreach => Action {
            action: "step-back",
            precondition: "at the 100% step the baseline serves nothing, so this breach of an absolute limit cannot be told apart from load; move traffic back to the previous step, where both arms are compared under the same load".into(),
            watch_next: "the same gate at the previous step on both arms: only the candidate over the limit means the version (roll back), both over it means capacity (throttle or scale)".into(),
        },
        Situation::Unattributed => Action {
            action: "hold",
            precondition: format!("a gate fails but the candidate is not worse than the baseline and load did not change ({}); a rollback would not help", trend.describe()),
            watch_next: "shared dependencies (GPU nodes, upstream services, limits too tight for both versions); stop promotion until explained".into(),
        },
    }
}

/// The canary step's verdict from its (overridden) diagnostics: a golden
/// set that could not run is an ERROR; a blocking gate or golden failure a
/// FAIL; an inconclusive or data-less gate, or no gate at all below 100 %
/// traffic, INCONCLUSIVE; a 100 % step with no absolute limit NOT RUN
/// (nothing could be judged there); else PASS.
pub(crate) fn canary_verdict(
    diagnostics: &[Diagnostic],
    outcomes: &[GateOutcome],
    golden_error: bool,
    alone: bool,
) -> Verdict {
    let blocking =
        |codes: &[Code]| diagnostics.iter().any(|d| d.severity == Severity::Error && codes.contains(&d.code));
    if golden_error {
        Verdict::Error
    } else if blocking(&[Code::CanaryGateFailed, Code::GoldenSampleFailed]) {
        Verdict::Fail
    } else if blocking(&[Code::CanaryGateInconclusive, Code::CanaryNoData]) || (outcomes.is_empty() && !alone) {
        Verdict::Inconclusive
    } else if outcomes.is_empty() {
        Verdict::NotRun
    } else {
        // No data or too few samples quieted by `-A`/`-W` is still no evidence.
        crate::report::floor(Verdict::Pass, diagnostics)
    }
}

/// A gate value in its unit: a percentage, seconds, bytes, else a number.
pub(crate) fn fmt_value(kind: MetricKind, metric: &str, v: Option<f64>) -> String {
    let Some(v) = v else { return "no data".into() };
    match kind {
        MetricKind::Proportion => format!("{:.3}%", v * 100.0),
        MetricKind::Histogram if metric.ends_with("_seconds") => format!("{:.3} s", v),
        MetricKind::Gauge if metric.ends_with("_bytes") => crate::util::human_bytes(v.max(0.0) as u64),
        _ => super::gate::fmt_num(v),
    }
}

/// The finding for gate `i` (`spec.canary.gates[i]`) that did not pass,
/// with both sides' values and sample counts (the candidate's alone at 100 %
/// traffic) and what would settle an inconclusive or data-less gate.
pub(crate) fn gate_diagnostic(i: usize, o: &GateOutcome, window: &str, alone: bool) -> Option<Diagnostic> {
    let code = match o.verdict {
        GateVerdict::Pass => return None,
        GateVerdict::Fail => Code::CanaryGateFailed,
        GateVerdict::Inconclusive => Code::CanaryGateInconclusive,
        GateVerdict::NoData => Code::CanaryNoData,
    };
    let field = format!("spec.canary.gates[{i}]");
    let evidence = if alone {
        format!(
            "candidate {} ({} samples) over {window} at 100% traffic; no concurrent baseline",
            fmt_value(o.kind, &o.metric, o.candidate),
            o.candidate_samples
        )
    } else {
        format!(
            "candidate {} ({} samples), baseline {} ({} samples) over {window}",
            fmt_value(o.kind, &o.metric, o.candidate),
            o.candidate_samples,
            fmt_value(o.kind, &o.metric, o.baseline),
            o.baseline_samples
        )
    };
    let mut d = Diagnostic::new(code, format!("gate `{}`: {}", o.metric, o.message)).field(field).evidence(evidence);
    if let Some(t) = o.comparison {
        d = d.evidence(format!("candidate vs baseline: {} p={}", t.method, super::gate::fmt_p(t.p_value)));
    }
    match (o.verdict, o.more_samples, o.more_minutes) {
        (GateVerdict::Inconclusive, Some(n), Some(m)) if m.is_finite() => {
            d = d.help(format!("keep the current traffic step for ≈ {m:.1} more minutes ({n} more samples per side), or raise the canary weight"))
        }
        (GateVerdict::NoData, ..) => {
            d = d.help("check the selector and that both versions export the metric; `--candidate-selector`/`--baseline-selector` or a gate `query` override it")
        }
        _ => {}
    }
    Some(d)
}

/// A golden sample the candidate answered wrongly: the problems, an
/// excerpt of what it said (300 characters) and how it stopped. A `length`
/// finish means the output hit max_tokens, which points at the release's
/// generation config, EOS ids and stop strings.
pub(crate) fn golden_failed(
    sample: &str,
    problems: &[String],
    shown: &str,
    finish_reason: Option<&str>,
    status: u16,
    latency_ms: u64,
) -> Diagnostic {
    let excerpt: String = shown.chars().take(300).collect();
    let chars = shown.chars().count();
    let mut d = Diagnostic::new(Code::GoldenSampleFailed, format!("golden sample `{sample}`: {}", problems.join("; ")))
        .field("spec.canary.golden")
        .evidence(format!("output ({chars} chars): {excerpt}{}", if chars > 300 { "…" } else { "" }))
        .evidence(format!("finish reason {finish_reason:?}, HTTP {status}, {latency_ms} ms"));
    if finish_reason == Some("length") {
        d = d.help("finish reason `length` means the output hit max_tokens: check generation.maxOutputTokens, EOS ids and stop strings shipped with this release (a release once truncated structured output this way, and the config diff pointed at EOS/stop)");
    }
    d
}

/// One gate's table: a row per limit checked (or one row when none was),
/// both arms' values, the p-value and the samples.
pub(crate) fn gate_table(o: &GateOutcome) -> Table {
    let v = |x: Option<f64>| fmt_value(o.kind, &o.metric, x);
    let samples = format!("{} / {}", o.candidate_samples, o.baseline_samples);
    let needed = o.needed.map(|n| n.to_string()).unwrap_or_else(|| "—".into());
    let method = o.comparison.map(|t| t.method).unwrap_or("no test");
    let mut rows: Vec<Vec<String>> = o
        .checks
        .iter()
        .map(|ch| {
            let p = ch
                .test
                .map(|t| format!("{} ({})", super::gate::fmt_p(t.p_value), t.method))
                .unwrap_or_else(|| "measured".into());
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
        let p = o.comparison.map(|t| super::gate::fmt_p(t.p_value)).unwrap_or_else(|| "—".into());
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
