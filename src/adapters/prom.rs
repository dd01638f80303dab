//! Prometheus HTTP API adapter: instant queries at one fixed
//! evaluation time, so candidate and baseline see exactly the same window.
//! Also sends the golden-set requests, the canary's other network input.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::checks::canary::gate::{MetricKind, Side};
use crate::checks::canary::golden::{GoldenAnswer, GoldenApi, GoldenSample};
use crate::checks::canary::histogram::Histogram;
use crate::checks::canary::plan::{GateAsk, GateRead};
use crate::checks::canary::providers::Template;
use crate::checks::canary::query::SideQueries;
use crate::parse::prom::{self as read, parse_response, Series};

/// One Prometheus query, answer included.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);
/// One golden request: a generation can take a while.
const GOLDEN_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, Clone)]
pub(crate) struct Prom {
    base: String,
    http: reqwest::Client,
    /// Unix seconds every query is evaluated at.
    pub time: f64,
}

impl Prom {
    /// Queries go through `http` (the run's one client), each bounded by
    /// [`QUERY_TIMEOUT`].
    pub(crate) fn new(http: reqwest::Client, base: &str, time: f64) -> Result<Prom> {
        let url = url::Url::parse(base).with_context(|| format!("--prometheus `{base}` is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("--prometheus `{base}` must be http:// or https://");
        }
        Ok(Prom { base: base.trim_end_matches('/').to_string(), http, time })
    }

    /// Run one instant query. Any transport, HTTP or API error is an `Err`:
    /// the caller must not mistake an unanswered query for "no data".
    pub(crate) async fn query(&self, q: &str) -> Result<Vec<Series>> {
        let time = format!("{:.3}", self.time);
        self.post("query", q, &[("time", &time)]).await
    }

    /// A range query over [`start`, `end`] (unix seconds) every `step`
    /// seconds; each series carries the time of every point. Errors as
    /// [`Prom::query`].
    pub(crate) async fn query_range(&self, q: &str, start: f64, end: f64, step: f64) -> Result<Vec<Series>> {
        let (start, end, step) = (format!("{start:.3}"), format!("{end:.3}"), format!("{step:.3}"));
        self.post("query_range", q, &[("start", &start), ("end", &end), ("step", &step)]).await
    }

    async fn post(&self, endpoint: &str, q: &str, params: &[(&str, &str)]) -> Result<Vec<Series>> {
        let url = format!("{}/api/v1/{endpoint}", self.base);
        // reqwest's `form` feature is off; url's encoder gives the same body.
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair("query", q);
        for (k, v) in params {
            form.append_pair(k, v);
        }
        let body = form.finish();
        let resp = self
            .http
            .post(&url)
            .timeout(QUERY_TIMEOUT)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .with_context(|| format!("Prometheus at {} unreachable", self.base))?;
        let status = resp.status();
        let body =
            super::http::text_within(resp, super::http::PROMETHEUS_MAX, &format!("the Prometheus answer from {url}"))
                .await?;
        parse_response(status.as_u16(), &body, q)
    }

    /// A query expected to yield one number (`parse::prom::scalar`).
    pub(crate) async fn scalar(&self, q: &str) -> Result<Option<f64>> {
        Ok(read::scalar(&self.query(q).await?))
    }

    /// One gate's reads: each arm's value and the samples its test needs,
    /// and the requests behind them, as the plan asked.
    pub(crate) async fn gate(&self, a: &GateAsk) -> Result<GateRead> {
        let Some(q) = &a.queries else { return Ok(a.read(None, None, &[])) };
        let gate = || format!("gate {}", a.metric);
        let candidate = self.side(&q.template, &q.candidate).await.with_context(gate)?;
        let baseline = match &q.baseline {
            Some(b) => Some(self.side(&q.template, b).await.with_context(gate)?),
            None => None,
        };
        let requests = self.scalars(&q.requests).await?;
        Ok(a.read(Some(candidate), baseline, &requests))
    }

    /// One finite number, or none.
    async fn finite(&self, q: &str) -> Result<Option<f64>> {
        Ok(self.scalar(q).await?.filter(|v| v.is_finite()))
    }

    /// [`Prom::finite`] for each query, in order.
    pub(crate) async fn scalars(&self, qs: &[String]) -> Result<Vec<Option<f64>>> {
        let mut out = Vec::new();
        for q in qs {
            out.push(self.finite(q).await?);
        }
        Ok(out)
    }

    /// One arm of a gate: its value and the samples its test needs.
    async fn side(&self, t: &Template, q: &SideQueries) -> Result<Side> {
        let value = self.finite(&q.value).await?;
        Ok(match t.kind {
            // A NaN/Inf count reads as no requests: NO DATA, never a pass.
            MetricKind::Proportion => Side::Proportion { value, total: self.finite(&q.samples).await?.unwrap_or(0.0) },
            MetricKind::Histogram => {
                let series = self.query(&q.samples).await?;
                // A NaN count empties the histogram (NO DATA), see Histogram::from_buckets.
                let buckets = read::histogram_buckets(&series, &q.samples, t.bound_scale)?;
                Side::Histogram { value, hist: Histogram::from_buckets(buckets) }
            }
            MetricKind::Gauge => {
                let series = self.query(&q.samples).await?;
                Side::Gauge { value, samples: read::gauge_samples(&series, t.scale) }
            }
        })
    }
}

// ---------------------------------------------------------------------------
// Golden set: the request goes out here; reading the answer is
// `parse::golden`, judging it `checks::canary::golden`.

/// Send one golden request to the candidate. Transport failures are `Err`
/// (the endpoint is unreachable); HTTP errors are answers to judge.
pub(crate) async fn golden_call(
    http: &reqwest::Client,
    endpoint: &str,
    model: &str,
    s: &GoldenSample,
) -> Result<GoldenAnswer> {
    let base = endpoint.trim_end_matches('/');
    let mut body = s.request.clone();
    // OpenAI-compatible servers (vLLM, TGI) require `model`; default it to
    // the service name rather than making every golden line repeat it.
    if s.api != GoldenApi::KserveV2 {
        if let Some(o) = body.as_object_mut() {
            o.entry("model").or_insert_with(|| Value::String(model.to_string()));
        }
    }
    let url = match s.api {
        GoldenApi::OpenAiChat => format!("{base}/v1/chat/completions"),
        GoldenApi::OpenAiCompletions => format!("{base}/v1/completions"),
        GoldenApi::KserveV2 => format!("{base}/v2/models/{model}/infer"),
        GoldenApi::OpenAiEmbeddings => format!("{base}/v1/embeddings"),
    };
    let started = Instant::now();
    let resp = http
        .post(&url)
        .timeout(GOLDEN_TIMEOUT)
        .json(&body)
        .send()
        .await
        .with_context(|| format!("golden `{}`: {url} unreachable", s.name))?;
    let status = resp.status().as_u16();
    let text =
        super::http::text_within(resp, super::http::GOLDEN_ANSWER_MAX, &format!("golden `{}`: the answer", s.name))
            .await?;
    let latency_ms = started.elapsed().as_millis() as u64;
    Ok(crate::parse::golden::answer(s.api, status, latency_ms, &text))
}

/// The golden set sent in order, one answer per sample; the first
/// endpoint that cannot be reached stops it.
pub(crate) async fn golden_calls(
    http: &reqwest::Client,
    endpoint: &str,
    model: &str,
    samples: &[GoldenSample],
) -> Result<Vec<GoldenAnswer>> {
    let mut out = Vec::with_capacity(samples.len());
    for s in samples {
        out.push(golden_call(http, endpoint, model, s).await?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At the bound a Prometheus answer is read; one byte over, it is an
    /// error naming the server, never a partial series list.
    #[tokio::test]
    async fn prometheus_answer_is_read_up_to_its_bound_and_not_one_byte_more() {
        use crate::adapters::http::{json_of_len, serve_fixed, PROMETHEUS_MAX};
        let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
        let at = serve_fixed("application/json", json_of_len(empty, PROMETHEUS_MAX)).await;
        let p = Prom::new(reqwest::Client::new(), &at, 1_700_000_000.0).unwrap();
        assert!(p.query("up").await.unwrap().is_empty());
        let over = serve_fixed("application/json", json_of_len(empty, PROMETHEUS_MAX + 1)).await;
        let p = Prom::new(reqwest::Client::new(), &over, 1_700_000_000.0).unwrap();
        let e = format!("{:#}", p.query("up").await.unwrap_err());
        assert!(e.contains("larger than 64 MiB") && e.contains(&over), "{e}");
    }
}
