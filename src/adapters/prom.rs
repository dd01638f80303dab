//! Prometheus HTTP API adapter: instant queries at one fixed
//! evaluation time, so candidate and baseline see exactly the same window.
//! Also the golden-set client, since it is the canary's other network input.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::parse::prom::{parse_response, Series};
use crate::parse::prom::truncate;

#[derive(Debug, Clone)]
pub(crate) struct Prom {
    base: String,
    http: reqwest::Client,
    /// Unix seconds every query is evaluated at.
    pub time: f64,
}

impl Prom {
    pub(crate) fn new(base: &str, time: f64) -> Result<Prom> {
        let url = url::Url::parse(base).with_context(|| format!("--prometheus `{base}` is not a URL"))?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("--prometheus `{base}` must be http:// or https://");
        }
        let http = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().context("building the HTTP client")?;
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
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .with_context(|| format!("Prometheus at {} unreachable", self.base))?;
        let status = resp.status();
        let body = resp.text().await.with_context(|| format!("reading the Prometheus answer from {url}"))?;
        parse_response(status.as_u16(), &body, q)
    }

    /// A query expected to yield one number: None when there is no series,
    /// the sum when an aggregation was left out and several series came back.
    pub(crate) async fn scalar(&self, q: &str) -> Result<Option<f64>> {
        let s = self.query(q).await?;
        let vals: Vec<f64> = s.iter().filter_map(|s| s.values.first().copied()).collect();
        Ok(match vals.len() {
            0 => None,
            1 => Some(vals[0]),
            _ => Some(vals.iter().sum()),
        })
    }
}

// ---------------------------------------------------------------------------
// Golden set

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GoldenSample {
    pub name: String,
    pub api: GoldenApi,
    pub request: Value,
    #[serde(default)]
    pub expect: GoldenExpect,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub(crate) enum GoldenApi {
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    #[serde(rename = "kserve-v2")]
    KserveV2,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct GoldenExpect {
    #[serde(default)]
    pub json: bool,
    #[serde(default)]
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub min_chars: Option<usize>,
    #[serde(default)]
    pub max_chars: Option<usize>,
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
}

/// Parse a golden JSONL file; errors name the line, column and kind of
/// problem but never quote the file (the bundle names it: it may be any
/// file of the repository). A key given twice in a request is refused.
pub(crate) fn parse_golden(text: &str) -> Result<Vec<GoldenSample>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with("//"))
        .map(|(i, l)| {
            if let Err(g) = crate::yaml_guard::check_json(l) {
                anyhow::bail!("line {} column {}: not a golden request (duplicate key; its text is not quoted)", i + 1, g.column);
            }
            serde_json::from_str(l).map_err(|e| {
                let kind = if e.is_syntax() || e.is_eof() { "not JSON" } else { crate::bundle::problem_kind(&e.to_string()) };
                anyhow::anyhow!("line {} column {}: not a golden request ({kind}; its text is not quoted)", i + 1, e.column())
            })
        })
        .collect()
}

/// What the candidate answered to one golden request.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GoldenAnswer {
    pub status: u16,
    pub latency_ms: u64,
    /// The generated text (chat content, completion text, first KServe output).
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    /// The raw body when it was not the expected JSON shape.
    pub raw: Option<String>,
}

/// Send one golden request to the candidate. Transport failures are `Err`
/// (the endpoint is unreachable); HTTP errors are answers to judge.
pub(crate) async fn golden_call(http: &reqwest::Client, endpoint: &str, model: &str, s: &GoldenSample) -> Result<GoldenAnswer> {
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
    };
    let started = Instant::now();
    let resp = http.post(&url).json(&body).send().await.with_context(|| format!("golden `{}`: {url} unreachable", s.name))?;
    let status = resp.status().as_u16();
    let text = resp.text().await.with_context(|| format!("golden `{}`: reading the answer", s.name))?;
    let latency_ms = started.elapsed().as_millis() as u64;
    let v: Option<Value> = serde_json::from_str(&text).ok();
    let (content, finish_reason) = match (&v, s.api) {
        (Some(v), GoldenApi::OpenAiChat) => {
            let c = &v["choices"][0];
            (c["message"]["content"].as_str().map(String::from), c["finish_reason"].as_str().map(String::from))
        }
        (Some(v), GoldenApi::OpenAiCompletions) => {
            let c = &v["choices"][0];
            (c["text"].as_str().map(String::from), c["finish_reason"].as_str().map(String::from))
        }
        (Some(v), GoldenApi::KserveV2) => {
            // KServe v2 has no finish reason field; an output tensor named
            // `finish_reason` is the convention we read.
            let outs = v["outputs"].as_array().cloned().unwrap_or_default();
            let named = |n: &str| outs.iter().find(|o| o["name"] == n).and_then(|o| o["data"][0].as_str().map(String::from));
            let text = outs.iter().find(|o| o["name"] != "finish_reason").and_then(|o| match &o["data"][0] {
                Value::String(s) => Some(s.clone()),
                Value::Null => None,
                other => Some(other.to_string()),
            });
            (text, named("finish_reason"))
        }
        (None, _) => (None, None),
    };
    let raw = if content.is_none() { Some(truncate(&text, 2000)) } else { None };
    Ok(GoldenAnswer { status, latency_ms, content, finish_reason, raw })
}

/// Every way the answer misses the expectation (empty = passed).
pub(crate) fn golden_problems(s: &GoldenSample, a: &GoldenAnswer) -> Vec<String> {
    let mut p = Vec::new();
    if !(200..300).contains(&a.status) {
        p.push(format!("HTTP {}", a.status));
    }
    let Some(content) = &a.content else {
        p.push("no generated text in the answer".into());
        return p;
    };
    let e = &s.expect;
    if e.json {
        if let Err(err) = serde_json::from_str::<Value>(content.trim()) {
            p.push(format!("output is not valid JSON ({err})"));
        }
    }
    if let Some(want) = &e.finish_reason {
        match &a.finish_reason {
            Some(got) if got == want => {}
            Some(got) => p.push(format!("finish reason `{got}`, expected `{want}`")),
            None => p.push(format!("no finish reason reported, expected `{want}`")),
        }
    }
    let chars = content.chars().count();
    if let Some(min) = e.min_chars {
        if chars < min {
            p.push(format!("output has {chars} characters, fewer than {min}"));
        }
    }
    if let Some(max) = e.max_chars {
        if chars > max {
            p.push(format!("output has {chars} characters, more than {max}"));
        }
    }
    if let Some(max) = e.max_latency_ms {
        if a.latency_ms > max {
            p.push(format!("took {} ms, more than {max} ms", a.latency_ms));
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn golden_checks() {
        let s: GoldenSample = serde_json::from_str(
            r#"{"name": "j", "api": "openai-chat", "request": {}, "expect": {"json": true, "finishReason": "stop", "minChars": 2, "maxLatencyMs": 100}}"#,
        )
        .unwrap();
        let ok = GoldenAnswer { status: 200, latency_ms: 5, content: Some("{\"ok\": true}".into()), finish_reason: Some("stop".into()), raw: None };
        assert!(golden_problems(&s, &ok).is_empty());
        let cut = GoldenAnswer { content: Some("{\"ok\": tr".into()), finish_reason: Some("length".into()), latency_ms: 150, ..ok };
        let p = golden_problems(&s, &cut);
        assert_eq!(p.len(), 3, "{p:?}");
        assert!(p[0].contains("not valid JSON") && p[1].contains("`length`") && p[2].contains("150 ms"));
    }

    #[test]
    fn shipped_golden_file_parses() {
        let t = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/llm-scratch/v2/golden.jsonl")).unwrap();
        let g = parse_golden(&t).unwrap();
        assert_eq!(g.len(), 2);
        assert!(g[0].expect.json);
        assert!(parse_golden("{\"name\": 1}").unwrap_err().to_string().contains("line 1"));
    }
}
