//! A Prometheus `/api/v1/query` or `/api/v1/query_range` answer → series.
//! Plain text in, so the parser is fuzzed without a server; the HTTP client
//! is `adapters::prom`.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

/// One series of an instant-query result.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: BTreeMap<String, String>,
    /// One value for a vector, every sample for a matrix (range selector).
    pub values: Vec<f64>,
    /// The unix time of each value, in the same order.
    pub times: Vec<f64>,
}

#[derive(Deserialize)]
struct ApiResponse {
    status: String,
    #[serde(default)]
    data: Option<ApiData>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiData {
    result_type: String,
    result: Value,
}

/// Prometheus encodes sample values as strings ("NaN", "+Inf" included);
/// returns (unix time, value).
fn parse_value(v: &Value) -> Result<(f64, f64)> {
    let s = v.get(1).and_then(Value::as_str).ok_or_else(|| anyhow!("sample is not [time, \"value\"]: {v}"))?;
    let t = v.get(0).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let x = match s {
        "NaN" => f64::NAN,
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => s.parse::<f64>().with_context(|| format!("sample value `{s}`"))?,
    };
    Ok((t, x))
}

fn series(labels: BTreeMap<String, String>, points: Vec<(f64, f64)>) -> Series {
    let (times, values) = points.into_iter().unzip();
    Series { labels, values, times }
}

fn parse_labels(v: &Value) -> BTreeMap<String, String> {
    v.get("metric")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string())).collect())
        .unwrap_or_default()
}

/// Parse one `/api/v1/query` answer (`status` is the HTTP status, for the
/// error text). Pure, so the parser is fuzzed without a server.
pub fn parse_response(status: u16, body: &str, q: &str) -> Result<Vec<Series>> {
    let parsed: ApiResponse = serde_json::from_str(body).with_context(|| {
        format!("Prometheus answered HTTP {status} with something that is not its API JSON: {}", truncate(body, 200))
    })?;
    if parsed.status != "success" {
        bail!(
            "Prometheus rejected `{q}`: {} {}",
            parsed.error_type.unwrap_or_default(),
            parsed.error.unwrap_or_else(|| format!("HTTP {status}"))
        );
    }
    let data = parsed.data.ok_or_else(|| anyhow!("Prometheus answer has no data for `{q}`"))?;
    match data.result_type.as_str() {
        "vector" => data
            .result
            .as_array()
            .ok_or_else(|| anyhow!("vector result is not an array"))?
            .iter()
            .map(|s| Ok(series(parse_labels(s), vec![parse_value(s.get("value").unwrap_or(&Value::Null))?])))
            .collect(),
        "matrix" => data
            .result
            .as_array()
            .ok_or_else(|| anyhow!("matrix result is not an array"))?
            .iter()
            .map(|s| {
                let points = s
                    .get("values")
                    .and_then(Value::as_array)
                    .map(|v| v.iter().map(parse_value).collect::<Result<Vec<_>>>())
                    .transpose()?;
                Ok(series(parse_labels(s), points.unwrap_or_default()))
            })
            .collect(),
        "scalar" => Ok(vec![series(BTreeMap::new(), vec![parse_value(&data.result)?])]),
        other => bail!("unexpected Prometheus result type `{other}` for `{q}`"),
    }
}

pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}
