//! Gate evaluation: one metric's candidate and baseline (or the candidate
//! alone at a 100% step) against its limits → PASS, FAIL, INCONCLUSIVE or NO
//! DATA, with the message and the samples still needed. Separate from the
//! statistics it calls so the verdict rules read in one place.

use serde::Serialize;

use super::histogram::Histogram;
use super::statistics::{
    binom_test_greater, mann_whitney_binned, mann_whitney_u, mann_whitney_u_less, n_mann_whitney, n_two_proportions,
    proportion_test, superiority_scaled_samples, TestResult, ALPHA, POWER,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum MetricKind {
    /// Events out of requests (error rate, quality failure rates).
    Proportion,
    /// A quantile of a classic histogram (latency).
    Histogram,
    /// Gauge samples over the window (GPU memory).
    Gauge,
}

/// What one arm showed over the window.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Side {
    /// `value` = events / total (None when Prometheus had no series).
    Proportion { value: Option<f64>, total: f64 },
    /// `value` from the value query (e.g. histogram_quantile), `hist` the
    /// bucket counts over the same window.
    Histogram { value: Option<f64>, hist: Histogram },
    /// `value` from the value query (e.g. the window's max), `samples` the raw
    /// gauge samples.
    Gauge { value: Option<f64>, samples: Vec<f64> },
}

impl Side {
    pub(crate) fn value(&self) -> Option<f64> {
        match self {
            Side::Proportion { value, .. } | Side::Histogram { value, .. } | Side::Gauge { value, .. } => {
                value.filter(|v| v.is_finite())
            }
        }
    }
    /// Sample count: requests, histogram observations, or gauge scrapes.
    pub(crate) fn samples(&self) -> u64 {
        let n = match self {
            Side::Proportion { total, .. } => *total,
            Side::Histogram { hist, .. } => hist.total(),
            Side::Gauge { samples, .. } => samples.len() as f64,
        };
        // A float-to-int cast saturates: a negative count is 0.
        if n.is_finite() {
            n.round() as u64
        } else {
            0
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct GateInput {
    pub metric: String,
    pub kind: MetricKind,
    /// For histogram gates: the quantile the value stands for (0.95).
    pub quantile: f64,
    pub max_absolute: Option<f64>,
    pub max_relative_increase: Option<f64>,
    /// `canary.minSamples`; applies to request-based gates (gauge gates count
    /// scrapes, which the plan's request minimum does not describe).
    pub min_samples: u64,
    pub window_secs: f64,
    pub candidate: Side,
    pub baseline: Side,
    /// Higher-is-better gate (throughput): the tests look for a candidate
    /// *below* the baseline, against `min_absolute` / `min_relative_decrease`.
    pub higher_is_better: bool,
    pub min_absolute: Option<f64>,
    pub min_relative_decrease: Option<f64>,
    /// Requests per arm over the window, for gauge gates whose samples are
    /// scrapes but whose evidence depends on traffic (tokens per second).
    pub request_counts: Option<(u64, u64)>,
    /// No concurrent baseline (a 100% traffic step: the baseline serves
    /// nothing). Only the absolute limits are judged, on the candidate's own
    /// samples; `baseline` is ignored, relative limits are not applied, and
    /// the sample size needed is computed with the candidate's own
    /// distribution as the reference.
    pub candidate_only: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum GateVerdict {
    Pass,
    Inconclusive,
    NoData,
    Fail,
}

impl std::fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Inconclusive => "INCONCLUSIVE",
            GateVerdict::NoData => "NO DATA",
            GateVerdict::Fail => "FAIL",
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LimitCheck {
    /// `absolute` or `relative`.
    pub kind: &'static str,
    pub limit: f64,
    pub exceeded: bool,
    /// Support for "candidate exceeds this limit"; None for a measured gauge
    /// peak (a measurement, not an estimate).
    pub test: Option<TestResult>,
    pub supported: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GateOutcome {
    pub metric: String,
    pub kind: MetricKind,
    pub verdict: GateVerdict,
    pub candidate: Option<f64>,
    pub baseline: Option<f64>,
    pub candidate_samples: u64,
    pub baseline_samples: u64,
    /// Samples per arm needed to detect the configured effect (including
    /// `minSamples`); None when no sample size can (see `message`).
    pub needed: Option<u64>,
    /// Candidate vs baseline, one-sided (candidate worse).
    pub comparison: Option<TestResult>,
    pub checks: Vec<LimitCheck>,
    pub more_samples: Option<u64>,
    pub more_minutes: Option<f64>,
    pub message: String,
}

impl GateOutcome {
    /// A failure the baseline does not share: the candidate is worse than the
    /// baseline with statistical support.
    pub(crate) fn version_tied(&self) -> bool {
        self.verdict == GateVerdict::Fail && self.comparison.as_ref().is_some_and(TestResult::significant)
    }
}

pub(crate) fn fmt_num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 1e6 || v.abs() < 1e-3 {
        format!("{v:.3e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{:.4}", v).trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// What every step of a gate reads, once both arms have data.
#[derive(Clone, Copy)]
struct Arms<'a> {
    g: &'a GateInput,
    /// The candidate's value and sample count.
    vc: f64,
    nc: u64,
    /// The value the configured effect is measured from (the baseline's, or
    /// with no concurrent baseline the candidate's own) and the baseline's
    /// sample count.
    vb: f64,
    nb: u64,
    /// Events per arm, for proportion gates.
    xc: u64,
    xb: u64,
    hib: bool,
    alone: bool,
    reference: &'a Side,
}

impl Arms<'_> {
    /// "Worse than the limit" in the gate's direction.
    fn beyond(&self, v: f64, limit: f64) -> bool {
        if self.hib {
            v < limit
        } else {
            v > limit
        }
    }

    /// Gauge gates count scrapes; a gauge gate that also knows its request
    /// counts (throughput) holds them to minSamples like any request gate.
    fn floor(&self) -> u64 {
        if self.g.kind == MetricKind::Gauge {
            0
        } else {
            self.g.min_samples
        }
    }

    /// Samples per arm the gate asks for: the sample size when one is known,
    /// else the floor.
    fn need(&self, needed: Option<u64>) -> u64 {
        needed.unwrap_or(self.floor())
    }
}

fn proportion_ok(v: f64) -> bool {
    (0.0..=1.0).contains(&v)
}

/// One gate, step by step: data present, a test defined on it, the limit
/// checks, the samples needed, the verdict, and how many more samples an
/// INCONCLUSIVE gate needs.
pub(crate) fn evaluate_gate(g: &GateInput) -> GateOutcome {
    let (nc, nb) = (g.candidate.samples(), g.baseline.samples());
    let (vc, vb) = (g.candidate.value(), g.baseline.value());
    let mut out = GateOutcome {
        metric: g.metric.clone(),
        kind: g.kind,
        verdict: GateVerdict::Inconclusive,
        candidate: vc,
        baseline: vb,
        candidate_samples: nc,
        baseline_samples: nb,
        needed: None,
        comparison: None,
        checks: Vec::new(),
        more_samples: None,
        more_minutes: None,
        message: String::new(),
    };
    let alone = g.candidate_only;
    if alone {
        (out.baseline, out.baseline_samples) = (None, 0);
    }
    let missing: Vec<&str> =
        [(nc == 0 || vc.is_none(), "candidate"), (!alone && (nb == 0 || vb.is_none()), "baseline")]
            .into_iter()
            .filter_map(|(m, s)| m.then_some(s))
            .collect();
    if !missing.is_empty() {
        out.verdict = GateVerdict::NoData;
        out.message = format!("no samples for {} over the window", missing.join(" and "));
        return out;
    }
    let vc = vc.unwrap_or_default();
    // The reference the configured effect is measured from: the baseline,
    // or with no concurrent baseline the candidate itself.
    let (reference, vb) = if alone { (&g.candidate, vc) } else { (&g.baseline, vb.unwrap_or_default()) };
    let hib = g.higher_is_better;
    let events = |v: f64, n: u64| (v * n as f64).round().clamp(0.0, n as f64) as u64;
    let (xc, xb) = (events(vc, nc), events(vb, nb));
    let a = Arms { g, vc, nc, vb, nb, xc, xb, hib, alone, reference };

    out.comparison = comparison(&a);
    if let Some(why) = undecidable(&a, out.comparison.is_none()) {
        out.message = why;
        return out;
    }
    let (limits, mut notes) = limits(&a);
    out.checks = limits.iter().map(|&(kind, limit)| limit_check(&a, kind, limit, out.comparison)).collect();
    let detect = samples_to_detect(&a, &limits, &mut notes);
    let below_min = judge(&a, &mut out, detect, &notes);
    if out.verdict == GateVerdict::Inconclusive {
        more_samples_hint(&a, &mut out, below_min);
    }
    out
}

/// The candidate-vs-baseline test suited to the data, one-sided towards
/// "candidate worse": larger for lower-is-better gates, smaller for
/// higher-is-better ones (the same tests on mirrored data).
fn comparison(a: &Arms) -> Option<TestResult> {
    let Arms { g, vc, nc, vb, nb, xc, xb, hib, alone, .. } = *a;
    match (&g.candidate, &g.baseline) {
        _ if alone => None,
        (Side::Proportion { .. }, Side::Proportion { .. }) if !proportion_ok(vc) || !proportion_ok(vb) => None,
        (Side::Proportion { .. }, Side::Proportion { .. }) if hib => proportion_test(nc - xc, nc, nb - xb, nb),
        (Side::Proportion { .. }, Side::Proportion { .. }) => proportion_test(xc, nc, xb, nb),
        (Side::Histogram { hist: hc, .. }, Side::Histogram { hist: hb, .. }) => {
            let mut bounds: Vec<f64> = hc.bounds.iter().chain(&hb.bounds).copied().collect();
            bounds.sort_by(f64::total_cmp);
            bounds.dedup();
            let (mut bc, mut bb) = (hc.on_bounds(&bounds).bin_counts(), hb.on_bounds(&bounds).bin_counts());
            if hib {
                // Reversed bin order ranks the values mirrored.
                bc.reverse();
                bb.reverse();
            }
            mann_whitney_binned(&bc, &bb)
        }
        (Side::Gauge { samples: sc, .. }, Side::Gauge { samples: sb, .. }) if hib => mann_whitney_u_less(sc, sb),
        (Side::Gauge { samples: sc, .. }, Side::Gauge { samples: sb, .. }) => mann_whitney_u(sc, sb),
        _ => None,
    }
}

/// Why no verdict can be reached on these numbers, if none can (never PASS).
fn undecidable(a: &Arms, no_comparison: bool) -> Option<String> {
    let Arms { g, vc, nc, vb, nb, alone, .. } = *a;
    let undecidable =
        if alone { matches!(g.candidate, Side::Proportion { .. }) && !proportion_ok(vc) } else { no_comparison };
    if undecidable && alone {
        return Some(format!(
            "no test is defined on a rate of {} over {nc} requests; check the gate's query",
            fmt_num(vc)
        ));
    }
    if undecidable {
        // Mismatched kinds, a "rate" outside [0, 1] from an overridden query,
        // or counts no test is defined on: undecidable, never PASS.
        return Some(format!(
            "no candidate-vs-baseline test is defined on these numbers (candidate {} over {nc}, baseline {} over {nb}); check the gate's query",
            fmt_num(vc),
            fmt_num(vb)
        ));
    }
    None
}

/// The limits that apply, each (kind, value), and notes on the ones that do
/// not. A relative limit on a zero baseline is meaningless (any event is an
/// infinite increase), so it is skipped with a note.
fn limits(a: &Arms) -> (Vec<(&'static str, f64)>, Vec<String>) {
    let Arms { g, vb, hib, alone, .. } = *a;
    let mut notes = Vec::new();
    let mut limits: Vec<(&'static str, f64)> = Vec::new();
    let (absolute, relative) =
        if hib { (g.min_absolute, g.min_relative_decrease) } else { (g.max_absolute, g.max_relative_increase) };
    if let Some(a) = absolute {
        limits.push(("absolute", a));
    }
    if let (Some(_), true) = (relative, alone) {
        notes.push(format!(
            "{} needs a concurrent baseline, which a 100% step does not have: it was judged at the earlier steps",
            if hib { "minRelativeDecrease" } else { "maxRelativeIncrease" }
        ));
    } else if let Some(r) = relative {
        if vb > 0.0 {
            limits.push(("relative", if hib { vb * (1.0 - r) } else { vb * (1.0 + r) }));
        } else {
            notes.push(format!(
                "baseline is 0, so {} {r} cannot be applied",
                if hib { "minRelativeDecrease" } else { "maxRelativeIncrease" }
            ));
        }
    }
    (limits, notes)
}

/// Whether the candidate is beyond one limit, and whether a test supports it.
fn limit_check(a: &Arms, kind: &'static str, limit: f64, comparison: Option<TestResult>) -> LimitCheck {
    let Arms { g, vc, nc, xc, hib, .. } = *a;
    let exceeded = a.beyond(vc, limit);
    let test = match (kind, &g.candidate) {
        ("relative", _) => comparison,
        (_, Side::Proportion { .. }) if hib => binom_test_greater(nc - xc, nc, (1.0 - limit).clamp(0.0, 1.0)),
        (_, Side::Proportion { .. }) => binom_test_greater(xc, nc, limit.clamp(0.0, 1.0)),
        // P(q-quantile > limit) ⇔ more than (1-q) of the samples lie above
        // it; mirrored: P(q-quantile < limit) ⇔ more than q lie below.
        (_, Side::Histogram { hist, .. }) => {
            let below = hist.cdf(limit).clamp(0.0, 1.0);
            let (k, p) = if hib { (below, g.quantile) } else { (1.0 - below, 1.0 - g.quantile) };
            binom_test_greater((k * nc as f64).round() as u64, nc, p)
                .map(|t| TestResult { method: "quantile (binomial)", ..t })
        }
        // Throughput's window mean is an estimate: sign test, H1: the
        // median sample is below the floor.
        (_, Side::Gauge { samples, .. }) if hib => {
            let k = samples.iter().filter(|v| **v < limit).count() as u64;
            binom_test_greater(k, samples.len() as u64, 0.5).map(|t| TestResult { method: "sign test (binomial)", ..t })
        }
        // A gauge peak is a measurement, not an estimate.
        (_, Side::Gauge { .. }) => None,
    };
    let measured = matches!(g.candidate, Side::Gauge { .. }) && !hib && kind == "absolute";
    let supported = exceeded && if measured { true } else { test.as_ref().is_some_and(TestResult::significant) };
    LimitCheck { kind, limit, exceeded, test, supported }
}

/// Samples needed to detect a move from the baseline to the tightest limit;
/// `None`, with a note saying why, when no sample size can.
fn samples_to_detect(a: &Arms, limits: &[(&'static str, f64)], notes: &mut Vec<String>) -> Option<u64> {
    let Arms { vb, hib, alone, reference, g, .. } = *a;
    let effective = if hib {
        limits.iter().map(|l| l.1).fold(f64::NEG_INFINITY, f64::max)
    } else {
        limits.iter().map(|l| l.1).fold(f64::INFINITY, f64::min)
    };
    let detect = if !effective.is_finite() {
        notes.push("no limit applies, so there is no effect to detect".into());
        None
    } else if !a.beyond(effective, vb) {
        notes.push(format!(
            "the {} ({}) already sits at or {} the limit ({}), so no sample size can show the candidate within it",
            if alone { "candidate" } else { "baseline" },
            fmt_num(vb),
            if hib { "below" } else { "above" },
            fmt_num(effective)
        ));
        None
    } else {
        // P(candidate worse) at the limit: P(s·X > Y), mirrored P(s·X < Y).
        let sup = |p: f64| if hib { 1.0 - p } else { p };
        match (reference, g.kind) {
            (_, MetricKind::Proportion) if hib => n_two_proportions(1.0 - vb, 1.0 - effective, ALPHA, POWER),
            (_, MetricKind::Proportion) => n_two_proportions(vb, effective, ALPHA, POWER),
            (Side::Histogram { hist, .. }, _) => {
                n_mann_whitney(sup(hist.superiority_scaled(effective / vb)), ALPHA, POWER)
            }
            (Side::Gauge { samples, .. }, _) => {
                n_mann_whitney(sup(superiority_scaled_samples(samples, effective / vb)), ALPHA, POWER)
            }
            _ => None,
        }
    };
    detect
}

/// The verdict and its message, from the limit checks and the sample counts.
/// Returns whether an arm is below `canary.minSamples`.
fn judge(a: &Arms, out: &mut GateOutcome, detect: Option<u64>, notes: &[String]) -> bool {
    let Arms { g, vc, nc, nb, alone, .. } = *a;
    let (requests, floor) = (g.request_counts, a.floor());
    out.needed = detect.map(|n| n.max(floor));
    let need_floor = a.need(out.needed);

    let below_min = match requests {
        Some((rc, rb)) => rc < g.min_samples || (!alone && rb < g.min_samples),
        None => g.kind != MetricKind::Gauge && (nc < g.min_samples || (!alone && nb < g.min_samples)),
    };
    let failing: Vec<&LimitCheck> = out.checks.iter().filter(|c| c.supported).collect();
    let unsupported: Vec<&LimitCheck> = out.checks.iter().filter(|c| c.exceeded && !c.supported).collect();
    let enough = out.needed.is_some_and(|n| nc >= n && (alone || nb >= n));

    // A supported exceedance fails even below the power sample size: power
    // bounds missed regressions, not false alarms. Below minSamples nothing
    // but INCONCLUSIVE is allowed (a 5% canary that sent the new version 1
    // request in 20 is not evidence).
    out.verdict = if below_min {
        GateVerdict::Inconclusive
    } else if !failing.is_empty() {
        GateVerdict::Fail
    } else if unsupported.is_empty() && enough {
        GateVerdict::Pass
    } else {
        GateVerdict::Inconclusive
    };

    let describe = |c: &LimitCheck| {
        let p = c.test.map(|t| format!("p={} ({})", fmt_p(t.p_value), t.method)).unwrap_or_else(|| "measured".into());
        format!("{} limit {}: candidate {} ({p})", c.kind, fmt_num(c.limit), fmt_num(vc))
    };
    out.message = match out.verdict {
        GateVerdict::Fail => format!("candidate exceeds the {}", failing.iter().map(|c| describe(c)).collect::<Vec<_>>().join("; ")),
        GateVerdict::Pass if alone => format!(
            "candidate {} within its absolute limit with {nc} samples (needed {need_floor}); no concurrent baseline at a 100% step",
            fmt_num(vc)
        ),
        GateVerdict::Pass => format!("candidate {} within limits with {nc}/{nb} samples (needed {need_floor})", fmt_num(vc)),
        _ => {
            let mut why = Vec::new();
            if below_min {
                let (rc, rb) = requests.unwrap_or((nc, nb));
                let unit = if requests.is_some() { "requests" } else { "samples" };
                why.push(if alone {
                    format!("below canary.minSamples {} ({rc} candidate {unit})", g.min_samples)
                } else {
                    format!("below canary.minSamples {} ({rc} candidate / {rb} baseline {unit})", g.min_samples)
                });
            }
            for c in &unsupported {
                why.push(format!("candidate is above the {} but not significantly (p ≥ {ALPHA})", describe(c)));
            }
            if out.needed.is_some() && !enough && !below_min {
                why.push(if alone {
                    format!("{nc} candidate samples are fewer than the {need_floor} needed to show it within the limit")
                } else {
                    format!("{nc}/{nb} samples are fewer than the {need_floor} per side needed to detect the configured effect")
                });
            }
            why.extend(notes.iter().cloned());
            why.join("; ")
        }
    };
    below_min
}

/// For an INCONCLUSIVE gate: how many more samples (or requests, when that is
/// what is short) and about how many more minutes at the observed rate.
fn more_samples_hint(a: &Arms, out: &mut GateOutcome, below_min: bool) {
    let Arms { g, nc, nb, alone, .. } = *a;
    let requests = g.request_counts;
    // Short of requests (throughput gates): the hint counts requests.
    // Else the sample size, or the floor when none is known (a gauge's is 0:
    // no hint then).
    let (n, nc, nb) = match requests {
        Some((rc, rb)) if below_min => (g.min_samples, rc, rb),
        _ => (a.need(out.needed), nc, nb),
    };
    let more_c = n.saturating_sub(nc);
    let more_b = if alone { 0 } else { n.saturating_sub(nb) };
    let more = more_c.max(more_b);
    if more > 0 {
        out.more_samples = Some(more);
        // Minutes at each arm's observed rate; the slower arm decides.
        let mins = |more: u64, have: u64| {
            if more == 0 {
                0.0
            } else if have == 0 {
                f64::INFINITY
            } else {
                more as f64 / (have as f64 / g.window_secs * 60.0)
            }
        };
        let m = mins(more_c, nc).max(mins(more_b, nb));
        out.more_minutes = Some(m);
        let minutes = if m.is_finite() { format!("{:.1}", m) } else { "∞".into() };
        let rate = |n: u64| n as f64 / g.window_secs * 60.0;
        out.message.push_str(&if alone {
            format!("; needs {more} more candidate samples (≈ {minutes} more minutes at the observed {:.1} per minute)", rate(nc))
        } else {
            format!("; needs {more} more samples per side (≈ {minutes} more minutes at the observed {:.1}/{:.1} per minute)", rate(nc), rate(nb))
        });
    }
}

pub(crate) fn fmt_p(p: f64) -> String {
    if p == 0.0 {
        // Below f64's range: say so instead of printing a fake exact zero.
        "< 1e-300".into()
    } else if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}
