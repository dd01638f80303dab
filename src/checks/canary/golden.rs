//! The golden set: a few fixed requests sent to the candidate, each with
//! what its answer must look like (valid JSON, a finish reason, a length, a
//! latency). A release once shipped a generation config that cut structured
//! output short; every metric stayed green, and these answers would not.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenSample {
    pub name: String,
    pub api: GoldenApi,
    pub request: Value,
    #[serde(default)]
    pub expect: GoldenExpect,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum GoldenApi {
    #[serde(rename = "openai-chat")]
    OpenAiChat,
    #[serde(rename = "openai-completions")]
    OpenAiCompletions,
    #[serde(rename = "kserve-v2")]
    KserveV2,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct GoldenExpect {
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

/// What the candidate answered to one golden request.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GoldenAnswer {
    pub status: u16,
    pub latency_ms: u64,
    /// The generated text (chat content, completion text, first KServe output).
    pub content: Option<String>,
    pub finish_reason: Option<String>,
    /// The raw body when it was not the expected JSON shape.
    pub raw: Option<String>,
}

/// Every way the answer misses the expectation (empty = passed).
pub fn golden_problems(s: &GoldenSample, a: &GoldenAnswer) -> Vec<String> {
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
}
