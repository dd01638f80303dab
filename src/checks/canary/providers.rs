//! Metric providers (pure data): per serving stack, the PromQL that gives
//! each gate's value *and* the samples its test needs, in that stack's
//! units, and the label that tells the two arms apart. Documented as one
//! table in docs/canary.md.
//!
//! Placeholders `{{selector}}` and `{{window}}` are filled by plain string
//! substitution in `query` (PromQL is full of braces).

use crate::bundle::MetricProvider;

use super::gate::MetricKind;

/// How to query one gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    pub kind: MetricKind,
    /// For histogram gates: the quantile the value stands for.
    pub quantile: f64,
    pub value: String,
    /// Request count (proportion), bucket counts `sum by (le)` (histogram) or
    /// a range/subquery of raw samples (gauge).
    pub samples: String,
    /// Multiplies gauge samples (DCGM reports MiB; the gate is in bytes).
    pub scale: f64,
    /// Multiplies histogram `le` bounds (Istio and Knative ≤ 1.18 bucket in
    /// ms). A bucket series labelled [`LE_SCALE_LABEL`] uses that factor
    /// instead (one query reading two naming generations in two units).
    pub bound_scale: f64,
    pub higher_is_better: bool,
    /// Requests per arm, for gauge gates that need traffic to mean anything.
    pub requests: Option<String>,
    /// Unit of the gate's value, as documented.
    pub unit: &'static str,
}

const W: &str = "[{{window}}]";

/// Label a bucket query sets (with `label_replace`) on the series whose
/// `le` is in another unit than the template's: its value is the factor.
pub(crate) const LE_SCALE_LABEL: &str = "bundlegate_le_scale";

/// `metric{<selector>extra}`; `extra` starts with a comma.
fn sel(metric: &str, extra: &str) -> String {
    format!("{metric}{{{{{{selector}}}}{extra}}}")
}

fn increase(metric: &str, extra: &str) -> String {
    format!("sum(increase({}{W}))", sel(metric, extra))
}

fn buckets(bucket: &str, extra: &str) -> String {
    format!("sum by (le) (increase({}{W}))", sel(bucket, extra))
}

fn quantile_of(bucket: &str, extra: &str, q: f64) -> String {
    format!("histogram_quantile({q}, sum by (le) (rate({}{W})))", sel(bucket, extra))
}

/// A histogram gate; `div` converts the value to seconds (ms stacks: 1000).
fn histogram(bucket: &str, extra: &str, q: f64, ms: bool) -> Template {
    let value = quantile_of(bucket, extra, q);
    Template {
        kind: MetricKind::Histogram,
        quantile: q,
        value: if ms { format!("{value} / 1000") } else { value },
        samples: buckets(bucket, extra),
        scale: 1.0,
        bound_scale: if ms { 0.001 } else { 1.0 },
        higher_is_better: false,
        requests: None,
        unit: "s",
    }
}

/// Two naming generations of one histogram: the newer wins where both exist
/// (vLLM exports both for a while), the older answers on older releases.
fn histogram_either(new: &str, old: &str, q: f64) -> Template {
    let value = format!(
        "histogram_quantile({q}, sum by (le) (rate({}{W})) or sum by (le) (rate({}{W})))",
        sel(new, ""),
        sel(old, "")
    );
    Template { value, samples: format!("{} or {}", buckets(new, ""), buckets(old, "")), ..histogram(new, "", q, false) }
}

/// Knative's request latency, both naming generations: the OpenTelemetry
/// histogram (seconds) where it exists, else the OpenCensus one (ms,
/// relabelled with its bound factor so one bucket query serves both). Only
/// one generation is read per arm (`unless on()`), never a mix of two
/// bucket layouts.
fn knative_latency(q: f64) -> Template {
    let new_buckets = buckets(KNATIVE_OTEL_LATENCY, "");
    let old_buckets =
        format!("label_replace({}, \"{LE_SCALE_LABEL}\", \"0.001\", \"\", \"\")", buckets(KNATIVE_LATENCY, ""));
    Template {
        value: format!(
            "{} or {} / 1000",
            quantile_of(KNATIVE_OTEL_LATENCY, "", q),
            quantile_of(KNATIVE_LATENCY, "", q)
        ),
        samples: format!("{new_buckets} or ({old_buckets} unless on() {new_buckets})"),
        ..histogram(KNATIVE_OTEL_LATENCY, "", q, false)
    }
}

/// Events / requests, with no event series read as zero events (counters
/// with lazily created labels) while a missing arm stays empty (NO DATA).
fn proportion(events: String, requests: String) -> Template {
    // `/` binds tighter than `or`: a two-generation request count needs
    // its parentheses.
    let denominator = if requests.contains(" or ") { format!("({requests})") } else { requests.clone() };
    Template {
        kind: MetricKind::Proportion,
        quantile: 0.0,
        value: format!("({events} or vector(0)) / {denominator}"),
        samples: requests,
        scale: 1.0,
        bound_scale: 1.0,
        higher_is_better: false,
        requests: None,
        unit: "ratio",
    }
}

fn gauge(value: String, samples: String, scale: f64, unit: &'static str) -> Template {
    Template {
        kind: MetricKind::Gauge,
        quantile: 0.0,
        value,
        samples,
        scale,
        bound_scale: 1.0,
        higher_is_better: false,
        requests: None,
        unit,
    }
}

/// `<prefix>p<NN>_seconds` → NN/100 for NN in 1..=99.
fn percentile(metric: &str, prefix: &str) -> Option<f64> {
    let n: u32 = metric.strip_prefix(prefix)?.strip_prefix('p')?.strip_suffix("_seconds")?.parse().ok()?;
    (1..=99).contains(&n).then(|| n as f64 / 100.0)
}

const VLLM_TTFT: &str = "vllm:time_to_first_token_seconds_bucket";
const VLLM_ITL: &str = "vllm:inter_token_latency_seconds_bucket";
const VLLM_TPOT: &str = "vllm:time_per_output_token_seconds_bucket";
const VLLM_E2E: &str = "vllm:e2e_request_latency_seconds_bucket";
const VLLM_QUEUE: &str = "vllm:request_queue_time_seconds_bucket";
const VLLM_FINISHED: &str = "vllm:request_success_total";
/// Knative Serving ≤ 1.18 queue-proxy (OpenCensus): a request counter and a
/// latency histogram in milliseconds.
const KNATIVE_COUNT: &str = "revision_app_request_count";
const KNATIVE_LATENCY: &str = "revision_app_request_latencies_bucket";
/// Knative Serving 1.19+ queue-proxy (OpenTelemetry, knative/serving#16290):
/// one histogram in seconds whose `_count` is the request count, the status
/// in `http_response_status_code`.
const KNATIVE_OTEL_COUNT: &str = "kn_serving_invocation_duration_seconds_count";
const KNATIVE_OTEL_LATENCY: &str = "kn_serving_invocation_duration_seconds_bucket";
const ISTIO_COUNT: &str = "istio_requests_total";
const ISTIO_LATENCY: &str = "istio_request_duration_milliseconds_bucket";
const ISTIO_DEST: &str = ",reporter=\"destination\"";

fn dcgm(metric: &str) -> Option<Template> {
    match metric {
        // DCGM reports framebuffer use in MiB.
        "gpu_memory_bytes" => Some(gauge(
            format!("max(max_over_time({}{W})) * 1048576", sel("DCGM_FI_DEV_FB_USED", "")),
            format!("{}{W}", sel("DCGM_FI_DEV_FB_USED", "")),
            1_048_576.0,
            "bytes",
        )),
        "gpu_utilization_percent" => Some(gauge(
            format!("avg(avg_over_time({}{W}))", sel("DCGM_FI_DEV_GPU_UTIL", "")),
            format!("{}{W}", sel("DCGM_FI_DEV_GPU_UTIL", "")),
            1.0,
            "%",
        )),
        _ => None,
    }
}

/// The query template for `metric` under `provider`; None when that stack
/// does not export what the gate needs (a lint error, never skipped).
pub(crate) fn template(provider: MetricProvider, metric: &str) -> Option<Template> {
    match provider {
        MetricProvider::Bundlegate => bundlegate(metric),
        MetricProvider::Vllm => {
            let q = |prefix: &str| percentile(metric, prefix);
            if let Some(q) = q("ttft_") {
                return Some(histogram(VLLM_TTFT, "", q, false));
            }
            if let Some(q) = q("itl_") {
                // One observation per output token: a handful of long
                // answers yields thousands of correlated samples, so
                // minSamples counts the requests they came from.
                return Some(Template {
                    requests: Some(increase(VLLM_FINISHED, "")),
                    ..histogram_either(VLLM_ITL, VLLM_TPOT, q)
                });
            }
            if let Some(q) = q("e2e_") {
                return Some(histogram(VLLM_E2E, "", q, false));
            }
            if let Some(q) = q("queue_wait_") {
                return Some(histogram(VLLM_QUEUE, "", q, false));
            }
            match metric {
                // No `abort_rate`: see `unsupported_reason`.
                "error_rate" => {
                    Some(proportion(increase(VLLM_FINISHED, ",finished_reason=\"error\""), increase(VLLM_FINISHED, "")))
                }
                // Per replica: each scraped vLLM process's generation rate,
                // one sample per rule-evaluation step of the window.
                "output_tokens_per_second" => Some(Template {
                    higher_is_better: true,
                    requests: Some(increase(VLLM_FINISHED, "")),
                    ..gauge(
                        format!("avg(rate({}{W}))", sel("vllm:generation_tokens_total", "")),
                        // irate: each step's own rate, not a 2-minute
                        // average smeared over its neighbours.
                        format!("irate({}[2m])[{{{{window}}}}:]", sel("vllm:generation_tokens_total", "")),
                        1.0,
                        "tokens/s per replica",
                    )
                }),
                // 0..1 despite the name; V0 called it gpu_cache_usage_perc.
                "kv_cache_usage_ratio" => Some(gauge(
                    format!(
                        "max(max_over_time({}{W}) or max_over_time({}{W}))",
                        sel("vllm:kv_cache_usage_perc", ""),
                        sel("vllm:gpu_cache_usage_perc", "")
                    ),
                    format!(
                        "({} or {})[{{{{window}}}}:]",
                        sel("vllm:kv_cache_usage_perc", ""),
                        sel("vllm:gpu_cache_usage_perc", "")
                    ),
                    1.0,
                    "ratio",
                )),
                "requests_waiting" => Some(gauge(
                    format!("max(max_over_time({}{W}))", sel("vllm:num_requests_waiting", "")),
                    format!("{}{W}", sel("vllm:num_requests_waiting", "")),
                    1.0,
                    "requests",
                )),
                _ => None,
            }
        }
        MetricProvider::Kserve => {
            let q = percentile(metric, "e2e_").or_else(|| latency_percentile(metric));
            if let Some(q) = q {
                return Some(knative_latency(q));
            }
            (metric == "error_rate").then(|| {
                proportion(
                    format!(
                        "{} or {}",
                        increase(KNATIVE_OTEL_COUNT, ",http_response_status_code=~\"5..\""),
                        increase(KNATIVE_COUNT, ",response_code_class=\"5xx\"")
                    ),
                    format!("{} or {}", increase(KNATIVE_OTEL_COUNT, ""), increase(KNATIVE_COUNT, "")),
                )
            })
        }
        MetricProvider::Istio => {
            let q = percentile(metric, "e2e_").or_else(|| latency_percentile(metric));
            if let Some(q) = q {
                return Some(histogram(ISTIO_LATENCY, ISTIO_DEST, q, true));
            }
            (metric == "error_rate").then(|| {
                proportion(
                    increase(ISTIO_COUNT, &format!("{ISTIO_DEST},response_code=~\"5..\"")),
                    increase(ISTIO_COUNT, ISTIO_DEST),
                )
            })
        }
        MetricProvider::Dcgm => dcgm(metric),
    }
}

/// `pNN_latency_seconds` → NN/100.
fn latency_percentile(metric: &str) -> Option<f64> {
    let n: u32 = metric.strip_prefix('p')?.strip_suffix("_latency_seconds")?.parse().ok()?;
    (1..=99).contains(&n).then(|| n as f64 / 100.0)
}

/// The original bundlegate_* names (the default provider).
fn bundlegate(metric: &str) -> Option<Template> {
    const REQUESTS: &str = "bundlegate_requests_total";
    if let Some(q) = latency_percentile(metric) {
        return Some(histogram("bundlegate_request_duration_seconds_bucket", "", q, false));
    }
    match metric {
        "error_rate" => {
            let requests = increase(REQUESTS, "");
            Some(Template {
                value: format!("{} / {requests}", increase(REQUESTS, ",code=~\"5..\"")),
                ..proportion(String::new(), requests)
            })
        }
        "gpu_memory_bytes" => dcgm(metric),
        // A stack-specific name under the default provider is a mistake
        // (lint says which provider has it), not a quality check.
        m if other_provider(m).is_some() => None,
        // Any other name is a per-request quality failure rate the server
        // counts by check name (e.g. json_incomplete_rate).
        other => {
            let checks = increase("bundlegate_quality_checks_total", &format!(",check=\"{other}\""));
            let fails = increase("bundlegate_quality_failures_total", &format!(",check=\"{other}\""));
            Some(Template { value: format!("{fails} / {checks}"), ..proportion(String::new(), checks) })
        }
    }
}

/// Every provider, in documentation order.
pub(crate) const PROVIDERS: [MetricProvider; 5] = [
    MetricProvider::Bundlegate,
    MetricProvider::Vllm,
    MetricProvider::Kserve,
    MetricProvider::Istio,
    MetricProvider::Dcgm,
];

pub(crate) fn name(p: MetricProvider) -> &'static str {
    match p {
        MetricProvider::Bundlegate => "bundlegate",
        MetricProvider::Vllm => "vllm",
        MetricProvider::Kserve => "kserve",
        MetricProvider::Istio => "istio",
        MetricProvider::Dcgm => "dcgm",
    }
}

/// Why `provider` cannot compute `metric` when the reason is more than "the
/// stack has no such metric": a series that exists but does not count what
/// the gate promises. Quoted by lint (BG305) and by `canary` (NO DATA).
pub(crate) fn unsupported_reason(p: MetricProvider, metric: &str) -> Option<&'static str> {
    match (p, metric) {
        (MetricProvider::Vllm, "abort_rate") => Some(
            "vLLM V1 declares `vllm:request_success_total{finished_reason=\"abort\"}` but does not increment it for requests the client aborted \
             (vllm-project/vllm#31503): an aborted request leaves no per-request series at all, so a low abort count is not evidence of few aborts; \
             gate engine errors with `error_rate` (`finished_reason=\"error\"`)",
        ),
        _ => None,
    }
}

/// A provider other than the default that computes `metric`, for the lint
/// hint ("`ttft_p95_seconds` is a vllm gate").
pub(crate) fn other_provider(metric: &str) -> Option<MetricProvider> {
    PROVIDERS[1..].iter().copied().find(|p| template(*p, metric).is_some())
}

/// The label whose value (the bundle's version) selects an arm by default.
/// Serving stacks do not export the release version themselves: vLLM,
/// Knative and DCGM series get it from the pod label bundlegate renders
/// (`bundlegate.dev/release-version`) through the usual Kubernetes
/// service-discovery `labelmap`; Istio reports the workload's `version`
/// label as `destination_version`.
pub(crate) fn arm_label(p: MetricProvider) -> &'static str {
    match p {
        MetricProvider::Bundlegate => "version",
        MetricProvider::Istio => "destination_version",
        MetricProvider::Vllm | MetricProvider::Kserve | MetricProvider::Dcgm => "bundlegate_dev_release_version",
    }
}

/// The series label KServe's own pod label becomes under the usual
/// Kubernetes service-discovery `labelmap`: KServe v0.20 sets
/// `app.kubernetes.io/name` to the LLMInferenceService's name on every
/// workload pod it creates, so two objects in one route group are two
/// arms of that label.
pub(crate) const KSERVE_LLM_ARM_LABEL: &str = "app_kubernetes_io_name";

/// One arm's selector in KServe's own split, by the labels KServe sets on
/// its pods: an LLMInferenceService's workload by its name. `None` for an
/// InferenceService: its two predictors are one object's, and the only pod
/// label telling them apart is the release version bundlegate renders
/// into each predictor ([`arm_label`]).
pub(crate) fn kserve_arm_selector(kind: &str, object: &str) -> Option<String> {
    // A PromQL string: a name the API server would refuse still cannot end it.
    let quoted = object.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n");
    (kind == "LLMInferenceService").then(|| format!("{KSERVE_LLM_ARM_LABEL}=\"{quoted}\""))
}

/// Request count and P95 latency queries for the load trend, if the stack
/// has them.
pub(crate) fn traffic(p: MetricProvider) -> Option<(String, String)> {
    let t = match p {
        MetricProvider::Bundlegate => ("error_rate", "p95_latency_seconds"),
        MetricProvider::Vllm => ("error_rate", "e2e_p95_seconds"),
        MetricProvider::Kserve | MetricProvider::Istio => ("error_rate", "p95_latency_seconds"),
        MetricProvider::Dcgm => return None,
    };
    Some((template(p, t.0)?.samples, template(p, t.1)?.value))
}

/// Why provider `p` cannot compute gate `metric`, and what to do instead
/// (the provider that has it, or what `p` computes): one sentence, the
/// same in lint's BG305 and the canary report's NO DATA.
pub(crate) fn unsupported(p: MetricProvider, metric: &str) -> String {
    let reason = unsupported_reason(p, metric).map(|r| format!(": {r}")).unwrap_or_default();
    let hint = match other_provider(metric) {
        Some(o) if o != p => format!("; `{}` has it: set `provider: {}` on the gate or the plan", name(o), name(o)),
        _ => format!("; `{}` computes {}", name(p), gate_names(p).join(", ")),
    };
    format!("provider `{}` exports nothing that computes `{metric}`{reason}{hint}", name(p))
}

/// Lint findings for a canary plan: gates the provider cannot compute
/// (BG305) and limits on the wrong side of the gate's direction (BG306), as
/// (code, field, message).
pub(crate) fn lint_plan(plan: &crate::bundle::Canary) -> Vec<(crate::diag::Code, String, String)> {
    use crate::diag::Code;
    let mut out = Vec::new();
    for (i, g) in plan.gates.iter().enumerate() {
        let p = g.provider.or(plan.provider).unwrap_or_default();
        let field = format!("spec.canary.gates[{i}]");
        let Some(t) = template(p, &g.metric) else {
            out.push((Code::CanaryGateUnsupported, format!("{field}.metric"), unsupported(p, &g.metric)));
            continue;
        };
        let (max_set, min_set) = (
            g.max_absolute.is_some() || g.max_relative_increase.is_some(),
            g.min_absolute.is_some() || g.min_relative_decrease.is_some(),
        );
        if t.higher_is_better && (max_set || !min_set) {
            out.push((Code::CanaryGateDirection, field.clone(), format!("gate `{}` is higher-is-better: limit it with minAbsolute / minRelativeDecrease, not maxAbsolute / maxRelativeIncrease", g.metric)));
        } else if !t.higher_is_better && min_set {
            out.push((Code::CanaryGateDirection, field.clone(), format!("gate `{}` is lower-is-better: minAbsolute / minRelativeDecrease never trigger on it; use maxAbsolute / maxRelativeIncrease", g.metric)));
        }
        if let Some(r) = g.min_relative_decrease.filter(|r| !(r.is_finite() && *r > 0.0 && *r < 1.0)) {
            out.push((
                Code::CanaryGateDirection,
                format!("{field}.minRelativeDecrease"),
                format!("gate `{}`: minRelativeDecrease {r} must be a fraction in (0, 1)", g.metric),
            ));
        }
        if let Some(a) = g.min_absolute.filter(|a| !a.is_finite()) {
            out.push((
                Code::CanaryGateDirection,
                format!("{field}.minAbsolute"),
                format!("gate `{}`: minAbsolute {a} is not a finite number", g.metric),
            ));
        }
    }
    if plan.steps.last() == Some(&100) && !plan.gates.iter().any(has_absolute_limit) {
        out.push((
            Code::CanaryFullStepUnchecked,
            "spec.canary.steps".into(),
            "the last traffic step is 100%, where the baseline serves nothing to compare with, and no gate has an absolute limit (maxAbsolute / minAbsolute): that step will be NOT CHECKED".into(),
        ));
    }
    out
}

/// Whether the gate holds the candidate to an absolute limit, the only kind
/// that can be judged at a 100% step (no concurrent baseline there).
pub(crate) fn has_absolute_limit(g: &crate::bundle::Gate) -> bool {
    g.max_absolute.is_some() || g.min_absolute.is_some()
}

/// The documented gate names of a provider (for messages and docs).
pub(crate) fn gate_names(p: MetricProvider) -> &'static [&'static str] {
    match p {
        MetricProvider::Bundlegate => {
            &["error_rate", "p50/p90/p95/p99_latency_seconds", "gpu_memory_bytes", "any quality failure rate"]
        }
        MetricProvider::Vllm => &[
            "ttft_pNN_seconds",
            "itl_pNN_seconds",
            "e2e_pNN_seconds",
            "queue_wait_pNN_seconds",
            "error_rate",
            "output_tokens_per_second",
            "kv_cache_usage_ratio",
            "requests_waiting",
        ],
        MetricProvider::Kserve | MetricProvider::Istio => &["error_rate", "pNN_latency_seconds", "e2e_pNN_seconds"],
        MetricProvider::Dcgm => &["gpu_memory_bytes", "gpu_utilization_percent"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_carry_the_placeholders_and_units() {
        let t = template(MetricProvider::Vllm, "ttft_p95_seconds").unwrap();
        assert_eq!(t.value, "histogram_quantile(0.95, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{{{selector}}}[{{window}}])))");
        assert_eq!(
            t.samples,
            "sum by (le) (increase(vllm:time_to_first_token_seconds_bucket{{{selector}}}[{{window}}]))"
        );
        let itl = template(MetricProvider::Vllm, "itl_p95_seconds").unwrap();
        assert!(
            itl.samples.contains("vllm:inter_token_latency_seconds_bucket")
                && itl.samples.contains(" or ")
                && itl.samples.contains("time_per_output_token")
        );
        let istio = template(MetricProvider::Istio, "p95_latency_seconds").unwrap();
        assert!(
            istio.value.ends_with(" / 1000")
                && istio.bound_scale == 0.001
                && istio.samples.contains("reporter=\"destination\"")
        );
        let tps = template(MetricProvider::Vllm, "output_tokens_per_second").unwrap();
        assert!(tps.higher_is_better && tps.requests.is_some());
        assert_eq!(template(MetricProvider::Dcgm, "gpu_memory_bytes").unwrap().scale, 1_048_576.0);
        // The default provider keeps its queries byte for byte.
        assert_eq!(
            template(MetricProvider::Bundlegate, "error_rate").unwrap().value,
            "sum(increase(bundlegate_requests_total{{{selector}},code=~\"5..\"}[{{window}}])) / sum(increase(bundlegate_requests_total{{{selector}}}[{{window}}]))"
        );
        assert!(template(MetricProvider::Bundlegate, "json_incomplete_rate").is_some());
    }

    #[test]
    fn gates_a_provider_cannot_compute_are_none() {
        assert!(template(MetricProvider::Bundlegate, "ttft_p95_seconds").is_none());
        assert_eq!(other_provider("ttft_p95_seconds"), Some(MetricProvider::Vllm));
        assert!(template(MetricProvider::Istio, "ttft_p95_seconds").is_none());
        assert!(template(MetricProvider::Dcgm, "error_rate").is_none());
        assert!(template(MetricProvider::Vllm, "ttft_p100_seconds").is_none());
        assert!(template(MetricProvider::Kserve, "output_tokens_per_second").is_none());
        // vLLM declares an abort series it never increments for client aborts.
        assert!(template(MetricProvider::Vllm, "abort_rate").is_none());
        assert!(unsupported_reason(MetricProvider::Vllm, "abort_rate").unwrap().contains("vllm-project/vllm#31503"));
        assert_eq!(
            traffic(MetricProvider::Vllm).unwrap().0,
            template(MetricProvider::Vllm, "error_rate").unwrap().samples
        );
    }

    /// docs/canary.md's provider table is the specification of every
    /// query: each row whose cell spells a query out in one code span must
    /// be exactly what `template` builds (`S`, `W` and `NN` filled in), and
    /// every row's unit and arm label must be the provider's. A gate dropped
    /// from a provider, a field left at its default or a query changed on
    /// one side fails here.
    #[test]
    fn the_documented_provider_table_is_what_the_templates_build() {
        let doc = include_str!("../../../docs/canary.md");
        // `S` is the selector, `W` the window (always right after a `}`).
        let expand =
            |q: &str, nn: &str| q.replace("{S", "{{{selector}}").replace("}W", "}[{{window}}]").replace("0.NN", nn);
        let provider = |n: &str| PROVIDERS.into_iter().find(|p| name(*p) == n);
        // A cell that is one code span (after an optional "requests: "),
        // followed by nothing or by prose: " (…)" or " — …".
        let code = |cell: &str| {
            let c = cell.strip_prefix("requests: ").unwrap_or(cell).strip_prefix('`')?;
            let (q, rest) = c.split_once('`')?;
            (rest.is_empty() || rest.starts_with(" (") || rest.starts_with(" — ")).then(|| q.to_string())
        };
        let (mut rows, mut exact) = (0, 0);
        for line in doc.lines().filter(|l| l.starts_with("| `")) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let Some(p) = cells.first().and_then(|c| provider(c.trim_matches('`'))) else { continue };
            assert_eq!(cells.len(), 6, "{line}");
            rows += 1;
            let label = cells[5];
            if label != "″" && label != "—" {
                assert_eq!(label, format!("`{}`", arm_label(p)), "{line}");
            }
            // Gate names: `NN` stands for every percentile; try three.
            let mut gates: Vec<(String, String)> = Vec::new();
            for g in cells[1].split(", ").filter_map(|g| g.split('`').nth(1)) {
                if g.contains("NN") {
                    // `0.NN` as PromQL reads it: p50 is 0.5.
                    gates.extend(
                        [50u32, 95, 99].map(|n| (g.replace("NN", &n.to_string()), (f64::from(n) / 100.0).to_string())),
                    );
                } else {
                    gates.push((g.to_string(), String::new()));
                }
            }
            if cells[2].starts_with("**none**") {
                for (g, _) in &gates {
                    assert!(template(p, g).is_none() && unsupported_reason(p, g).is_some(), "{line}");
                }
                continue;
            }
            if gates.is_empty() {
                // "any other name": a quality failure rate under the default provider.
                let t = template(p, "json_incomplete_rate").expect(line);
                assert!(t.value.contains("check=\"json_incomplete_rate\"") && t.unit == cells[4], "{line}");
                continue;
            }
            for (g, nn) in &gates {
                let t = template(p, g).unwrap_or_else(|| panic!("documented gate {g} has no template: {line}"));
                assert!(cells[4].starts_with(t.unit), "unit {} for {line}", t.unit);
                assert_eq!(t.higher_is_better, cells[1].contains('↑'), "{line}");
                // Gates whose samples are not one per request count the requests apart.
                let requests = cells[3].contains("`minSamples` applies to the request count");
                assert_eq!(t.requests.is_some(), requests, "{line}");
                if let (Some(r), Some(q)) = (&t.requests, cells[3].rsplit_once("request count, `")) {
                    assert_eq!(*r, expand(q.1.trim_end_matches('`'), nn), "{line}");
                }
                if let Some(q) = code(cells[2]) {
                    assert_eq!(t.value, expand(&q, nn), "value of {g}: {line}");
                    exact += 1;
                } else if let Some(other) =
                    cells[2].strip_prefix("as `").and_then(|r| provider(r.trim_end_matches('`')))
                {
                    assert_eq!(Some(&t), template(other, g).as_ref(), "{line}");
                    exact += 1;
                } else {
                    // "the same over `a_bucket` `or` `b_bucket`": the quantile over each.
                    assert!(t.value.starts_with(&format!("histogram_quantile({nn}, ")), "{g}: {}", t.value);
                    for m in cells[2].split('`').skip(1).step_by(2).filter(|m| m.ends_with("_bucket")) {
                        let want = format!("sum by (le) (rate({m}{{{{{{selector}}}}}}[{{{{window}}}}]))");
                        assert!(t.value.contains(&want), "value of {g}: {} lacks {want}", t.value);
                        exact += 1;
                    }
                }
                if let Some(q) = code(cells[3]) {
                    assert_eq!(t.samples, expand(&q, nn), "samples of {g}: {line}");
                    exact += 1;
                } else if let Some(m) = cells[3].strip_prefix("buckets of `").and_then(|r| r.split('`').next()) {
                    let want = expand(&format!("sum by (le) (increase({m}_bucket{{S"), nn);
                    assert!(t.samples.starts_with(&want), "samples of {g}: {} vs {want}", t.samples);
                    exact += 1;
                }
            }
        }
        // The table is there and most of its queries are spelled out.
        assert_eq!((rows, exact), (19, 65), "rows and queries checked");
        // The default provider's own table, written with the placeholders.
        let table =
            doc.split("| metric | kind | value query (default) | samples for the test |").nth(1).expect("the table");
        let mut default_rows = 0;
        for line in table.lines().skip(2).take_while(|l| l.starts_with('|')) {
            let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
            let named = cells[0].split('`').nth(1).expect(line);
            let (g, check) = match cells[0].strip_prefix("any other name, e.g. ") {
                Some(_) => (named.to_string(), named),
                None if named.contains('/') => ("p95_latency_seconds".to_string(), ""),
                None => (named.to_string(), ""),
            };
            let t = template(MetricProvider::Bundlegate, &g).unwrap_or_else(|| panic!("documented {g}"));
            assert!(cells[1].starts_with(&format!("{:?}", t.kind).to_lowercase()), "{line}");
            let span = |c: &str| c.split('`').nth(1).map(|q| q.replace("NAME", check));
            assert_eq!(span(cells[2]).as_deref(), Some(t.value.as_str()), "{line}");
            if !cells[3].contains('×') {
                assert_eq!(span(cells[3]).as_deref(), Some(t.samples.as_str()), "{line}");
            }
            default_rows += 1;
        }
        assert_eq!(default_rows, 4);
    }

    fn gate(metric: &str) -> crate::bundle::Gate {
        crate::bundle::Gate {
            metric: metric.into(),
            max_absolute: None,
            max_relative_increase: None,
            query: None,
            min_absolute: None,
            min_relative_decrease: None,
            provider: None,
        }
    }

    fn plan(provider: Option<MetricProvider>, steps: &[u32], gates: Vec<crate::bundle::Gate>) -> crate::bundle::Canary {
        crate::bundle::Canary {
            mode: Default::default(),
            steps: steps.to_vec(),
            window: "10m".into(),
            min_samples: 100,
            gates,
            golden: None,
            provider,
        }
    }

    /// (code, field) of each finding, and the messages joined.
    fn lint(p: &crate::bundle::Canary) -> (Vec<(&'static str, String)>, String) {
        let out = lint_plan(p);
        let text = out.iter().map(|(_, _, m)| m.as_str()).collect::<Vec<_>>().join("\n");
        (out.into_iter().map(|(c, f, _)| (c.as_str(), f)).collect(), text)
    }

    #[test]
    fn lint_names_the_provider_that_has_an_unsupported_gate() {
        let one = |provider, g| lint(&plan(provider, &[10, 50], vec![g]));
        // A vLLM gate under the default provider: which provider has it.
        let (f, m) = one(None, gate("ttft_p95_seconds"));
        assert_eq!(f, [("BG305", "spec.canary.gates[0].metric".to_string())]);
        assert!(
            m.contains("provider `bundlegate` exports nothing") && m.contains("`vllm` has it: set `provider: vllm`"),
            "{m}"
        );
        // A name no provider has: what this one computes instead.
        let (f, m) = one(Some(MetricProvider::Vllm), gate("made_up_seconds"));
        assert_eq!(f.len(), 1);
        assert!(m.contains(&format!("`vllm` computes {}", gate_names(MetricProvider::Vllm).join(", "))), "{m}");
        assert!(m.contains("ttft_pNN_seconds") && m.contains("requests_waiting"), "{m}");
        // A series that exists but does not count what the gate promises.
        let (f, m) = one(Some(MetricProvider::Vllm), gate("abort_rate"));
        assert_eq!(f.len(), 1);
        assert!(m.contains("vllm-project/vllm#31503"), "{m}");
        // The gate's own provider wins over the plan's, both ways.
        let dcgm = crate::bundle::Gate { provider: Some(MetricProvider::Dcgm), ..gate("gpu_memory_bytes") };
        assert_eq!(one(Some(MetricProvider::Vllm), dcgm).0, []);
        assert_eq!(one(Some(MetricProvider::Vllm), gate("gpu_memory_bytes")).0.len(), 1);
        let vllm = crate::bundle::Gate { provider: Some(MetricProvider::Vllm), ..gate("error_rate") };
        assert_eq!(one(Some(MetricProvider::Dcgm), vllm).0, []);
        // Every documented name of every provider computes (NN a percentile).
        for p in PROVIDERS {
            for g in gate_names(p).iter().flat_map(|g| g.split('/')) {
                let g = g.replace("NN", "95");
                // "p50/p90/p95/p99_latency_seconds": the suffix is written once.
                let g = if g.contains('_') || g.contains(' ') { g } else { format!("{g}_latency_seconds") };
                let g = if g == "any quality failure rate" { "json_incomplete_rate".into() } else { g };
                assert!(template(p, &g).is_some(), "{} documents {g}", name(p));
            }
        }
    }

    #[test]
    fn lint_holds_each_limit_to_the_gates_direction() {
        use crate::bundle::Gate;
        let codes = |g: Gate| lint(&plan(Some(MetricProvider::Vllm), &[10, 50], vec![g])).0;
        let dir = |field: &str| vec![("BG306", format!("spec.canary.gates[0]{field}"))];
        let up = || gate("output_tokens_per_second");
        // Higher is better: limited from below only, and limited at all.
        assert_eq!(codes(up()), dir(""));
        assert_eq!(codes(Gate { max_absolute: Some(1.0), min_absolute: Some(1.0), ..up() }), dir(""));
        assert_eq!(codes(Gate { max_relative_increase: Some(0.1), min_absolute: Some(1.0), ..up() }), dir(""));
        assert_eq!(codes(Gate { min_absolute: Some(1.0), ..up() }), []);
        assert_eq!(codes(Gate { min_relative_decrease: Some(0.1), ..up() }), []);
        // Lower is better: a lower limit never triggers.
        let down = || gate("e2e_p95_seconds");
        assert_eq!(codes(Gate { max_absolute: Some(1.0), ..down() }), []);
        assert_eq!(codes(Gate { max_absolute: Some(1.0), min_absolute: Some(1.0), ..down() }), dir(""));
        assert_eq!(codes(Gate { max_absolute: Some(1.0), min_relative_decrease: Some(0.5), ..down() }), dir(""));
        // minRelativeDecrease is a fraction strictly inside (0, 1).
        for r in [0.0, 1.0, 1.5, -0.1, f64::NAN, f64::INFINITY] {
            assert_eq!(codes(Gate { min_relative_decrease: Some(r), ..up() }), dir(".minRelativeDecrease"), "{r}");
        }
        for r in [0.01, 0.5, 0.99] {
            assert_eq!(codes(Gate { min_relative_decrease: Some(r), ..up() }), [], "{r}");
        }
        for a in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            assert_eq!(codes(Gate { min_absolute: Some(a), ..up() }), dir(".minAbsolute"), "{a}");
        }
        assert_eq!(codes(Gate { min_absolute: Some(-5.0), ..up() }), []);
    }

    #[test]
    fn a_last_step_at_full_traffic_needs_an_absolute_limit() {
        use crate::bundle::Gate;
        let relative = || Gate { max_relative_increase: Some(0.1), ..gate("error_rate") };
        let full = |gates| lint(&plan(None, &[10, 100], gates)).0;
        assert_eq!(full(vec![relative()]), [("BG307", "spec.canary.steps".to_string())]);
        assert_eq!(full(vec![relative(), Gate { max_absolute: Some(0.01), ..gate("error_rate") }]), []);
        let up =
            Gate { min_absolute: Some(10.0), provider: Some(MetricProvider::Vllm), ..gate("output_tokens_per_second") };
        assert_eq!(full(vec![relative(), up]), []);
        // Not at 100%: a baseline still serves, relative limits judge.
        assert_eq!(lint(&plan(None, &[10, 50], vec![relative()])).0, []);
        assert_eq!(lint(&plan(None, &[100], vec![relative()])).0.len(), 1);
    }

    #[test]
    fn knative_reads_both_naming_generations_in_their_own_units() {
        let e = template(MetricProvider::Kserve, "error_rate").unwrap();
        assert!(
            e.samples.starts_with(
                "sum(increase(kn_serving_invocation_duration_seconds_count{{{selector}}}[{{window}}])) or "
            ),
            "{}",
            e.samples
        );
        assert!(
            e.samples.ends_with("sum(increase(revision_app_request_count{{{selector}}}[{{window}}]))"),
            "{}",
            e.samples
        );
        // `/` binds tighter than `or`: the two-generation count is parenthesised.
        assert!(e.value.contains(") / (sum(increase(kn_serving"), "{}", e.value);
        assert!(
            e.value.contains("http_response_status_code=~\"5..\"") && e.value.contains("response_code_class=\"5xx\"")
        );
        let l = template(MetricProvider::Kserve, "p95_latency_seconds").unwrap();
        assert_eq!(l.bound_scale, 1.0);
        assert!(
            l.value.ends_with("revision_app_request_latencies_bucket{{{selector}}}[{{window}}]))) / 1000"),
            "{}",
            l.value
        );
        assert!(
            l.value.starts_with(
                "histogram_quantile(0.95, sum by (le) (rate(kn_serving_invocation_duration_seconds_bucket"
            ),
            "{}",
            l.value
        );
        // Milliseconds marked with their factor; only one generation per arm.
        assert!(
            l.samples.contains(&format!("\"{LE_SCALE_LABEL}\", \"0.001\"")) && l.samples.contains(" unless on() "),
            "{}",
            l.samples
        );
    }
}
