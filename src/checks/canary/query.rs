//! The PromQL of one canary judgment: the provider templates
//! (`providers`) filled with each arm's selector and the window. Which
//! series belong to which arm and what is asked of Prometheus is policy, so
//! it is built here; `app::canary` only sends the queries and hands the
//! answers to `parse::prom`.

use crate::bundle::{self, MetricProvider};

use super::providers::{self, Template};

/// Substitute the placeholders. An empty selector leaves `{,` or `{}`
/// behind, which is tidied so `--baseline-selector ''` still parses.
pub(crate) fn fill(template: &str, selector: &str, window: &str) -> String {
    template.replace("{{selector}}", selector).replace("{{window}}", window).replace("{,", "{").replace(",}", "}")
}

/// The same query over the window just before this one.
pub(crate) fn earlier(template: &str) -> String {
    template.replace("[{{window}}]", "[{{window}}] offset {{window}}")
}

/// The provider a gate reads: its own, else the plan's, else bundlegate's.
pub(crate) fn gate_provider(plan: &bundle::Canary, g: &bundle::Gate) -> MetricProvider {
    g.provider.or(plan.provider).unwrap_or_default()
}

/// Which series belong to each arm: the overrides, else the provider's arm
/// label set to each version.
#[derive(Debug)]
pub(crate) struct Arms {
    pub candidate_version: String,
    pub baseline_version: Option<String>,
    pub candidate_override: Option<String>,
    pub baseline_override: Option<String>,
}

impl Arms {
    pub(crate) fn candidate(&self, p: MetricProvider) -> String {
        self.candidate_override
            .clone()
            .unwrap_or_else(|| format!("{}=\"{}\"", providers::arm_label(p), self.candidate_version))
    }
    pub(crate) fn baseline(&self, p: MetricProvider) -> String {
        self.baseline_override.clone().unwrap_or_else(|| {
            format!("{}=\"{}\"", providers::arm_label(p), self.baseline_version.as_deref().unwrap_or_default())
        })
    }
}

/// One arm's queries for one gate, filled: its value, the samples its test
/// needs, and (gauge gates that need traffic) its request count.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SideQueries {
    pub value: String,
    pub samples: String,
    pub requests: Option<String>,
}

/// A gate's queries for the arm `selector` over `window` (`5s`, `300s`):
/// the gate's own `query` replaces the template's value.
pub(crate) fn side_queries(t: &Template, g: &bundle::Gate, selector: &str, window: &str) -> SideQueries {
    let value_tpl = g.query.as_deref().unwrap_or(&t.value);
    SideQueries {
        value: fill(value_tpl, selector, window),
        samples: fill(&t.samples, selector, window),
        requests: t.requests.as_deref().map(|q| fill(q, selector, window)),
    }
}

/// One arm's traffic: requests and P95 over this window and the one before.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TrafficQueries {
    pub requests: String,
    pub requests_before: String,
    pub p95: String,
    pub p95_before: String,
}

/// The traffic queries of the arm `selector`, when the provider exports a
/// request count.
pub(crate) fn traffic_queries(p: MetricProvider, selector: &str, window: &str) -> Option<TrafficQueries> {
    let (requests, p95) = providers::traffic(p)?;
    Some(TrafficQueries {
        requests: fill(&requests, selector, window),
        requests_before: fill(&earlier(&requests), selector, window),
        p95: fill(&p95, selector, window),
        p95_before: fill(&earlier(&p95), selector, window),
    })
}

/// The arm's request count per `resolution_secs`, for the range query that
/// places the traffic steps; `None` when the provider exports none.
pub(crate) fn requests_per_step(p: MetricProvider, selector: &str, resolution_secs: u64) -> Option<String> {
    let (requests, _) = providers::traffic(p)?;
    Some(fill(&requests, selector, &format!("{resolution_secs}s")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An empty selector leaves no stray comma; the earlier window is the
    /// same range offset by itself.
    #[test]
    fn templates_are_filled_per_arm_and_window() {
        let tpl = "sum(increase(x{{{selector}},code=\"5xx\"}[{{window}}]))";
        assert_eq!(fill(tpl, "v=\"a\"", "60s"), "sum(increase(x{v=\"a\",code=\"5xx\"}[60s]))");
        assert_eq!(fill(tpl, "", "60s"), "sum(increase(x{code=\"5xx\"}[60s]))");
        assert_eq!(fill("up{{{selector}}}", "", "1s"), "up{}");
        assert_eq!(fill(&earlier(tpl), "", "60s"), "sum(increase(x{code=\"5xx\"}[60s] offset 60s))");
    }

    /// Overrides win over the version labels; a gate's own query replaces
    /// the template's value but not its samples.
    #[test]
    fn arms_and_gate_queries() {
        let arms = Arms {
            candidate_version: "v2".into(),
            baseline_version: Some("v1".into()),
            candidate_override: None,
            baseline_override: Some("track=\"stable\"".into()),
        };
        let p = MetricProvider::default();
        assert!(arms.candidate(p).ends_with("=\"v2\""), "{}", arms.candidate(p));
        assert_eq!(arms.baseline(p), "track=\"stable\"");
        let gate = |query: Option<&str>| bundle::Gate {
            metric: "error_rate".into(),
            max_absolute: None,
            max_relative_increase: Some(0.1),
            query: query.map(String::from),
            min_absolute: None,
            min_relative_decrease: None,
            provider: None,
        };
        let t = providers::template(p, "error_rate").expect("the default provider computes error_rate");
        let own = side_queries(&t, &gate(Some("mine{{{selector}}}[{{window}}]")), "a=\"1\"", "30s");
        assert_eq!(own.value, "mine{a=\"1\"}[30s]");
        let tpl = side_queries(&t, &gate(None), "a=\"1\"", "30s");
        assert_eq!(tpl.value, fill(&t.value, "a=\"1\"", "30s"));
        assert_eq!((own.samples, own.requests), (tpl.samples, tpl.requests));
        assert!(!tpl.value.contains("{{"), "{}", tpl.value);
    }

    /// A gate's provider is its own, else the plan's, else bundlegate's; a
    /// gate the provider cannot compute says why and names the one that can.
    #[test]
    fn which_provider_a_gate_reads_and_why_one_cannot() {
        let gate: bundle::Gate =
            serde_json::from_value(serde_json::json!({"metric": "gpu_memory_bytes", "provider": "dcgm"})).unwrap();
        let plain: bundle::Gate = serde_json::from_value(serde_json::json!({"metric": "error_rate"})).unwrap();
        let plan = |provider: Option<&str>| -> bundle::Canary {
            serde_json::from_value(
                serde_json::json!({"steps": [10], "window": "5m", "minSamples": 1, "gates": [], "provider": provider}),
            )
            .unwrap()
        };
        assert_eq!(gate_provider(&plan(Some("vllm")), &gate), MetricProvider::Dcgm);
        assert_eq!(gate_provider(&plan(Some("vllm")), &plain), MetricProvider::Vllm);
        assert_eq!(gate_provider(&plan(None), &plain), MetricProvider::Bundlegate);
        let note = providers::unsupported(MetricProvider::Bundlegate, "ttft_p95_seconds");
        assert_eq!(
            note,
            "provider `bundlegate` exports nothing that computes `ttft_p95_seconds`; `vllm` has it: set `provider: vllm` on the gate or the plan"
        );
        let note = providers::unsupported(MetricProvider::Vllm, "abort_rate");
        assert!(
            note.starts_with("provider `vllm` exports nothing that computes `abort_rate`: vLLM V1 declares"),
            "{note}"
        );
        // A name no provider has: what this one computes instead.
        assert_eq!(
            providers::unsupported(MetricProvider::Vllm, "no_such_metric"),
            format!(
                "provider `vllm` exports nothing that computes `no_such_metric`; `vllm` computes {}",
                providers::gate_names(MetricProvider::Vllm).join(", ")
            )
        );
    }

    /// The traffic queries fill the provider's request and P95 templates for
    /// this window and the one before; the step query the requests per
    /// resolution. A provider with no request count has neither.
    #[test]
    fn traffic_queries_per_arm_and_window() {
        let p = MetricProvider::Bundlegate;
        let (requests, p95) = providers::traffic(p).expect("bundlegate exports requests");
        let t = traffic_queries(p, "version=\"v2\"", "300s").unwrap();
        assert_eq!(t.requests, fill(&requests, "version=\"v2\"", "300s"));
        assert_eq!(t.requests_before, fill(&earlier(&requests), "version=\"v2\"", "300s"));
        assert_eq!(t.p95, fill(&p95, "version=\"v2\"", "300s"));
        assert_eq!(t.p95_before, fill(&earlier(&p95), "version=\"v2\"", "300s"));
        assert!(t.requests_before.contains("offset 300s") && !t.requests.contains("offset"), "{t:?}");
        assert_eq!(requests_per_step(p, "version=\"v2\"", 60), Some(fill(&requests, "version=\"v2\"", "60s")));
        // DCGM exports GPU series only.
        let dcgm = MetricProvider::Dcgm;
        assert!(traffic_queries(dcgm, "a", "1s").is_none() && requests_per_step(dcgm, "a", 1).is_none());
    }
}
