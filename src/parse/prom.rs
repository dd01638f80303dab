//! A Prometheus `/api/v1/query` or `/api/v1/query_range` answer → series,
//! and series → the plain numbers the canary checks judge (one number,
//! histogram buckets, gauge samples, the arms' request split). Plain text
//! in, so the parser is fuzzed without a server; the HTTP client is
//! `adapters::prom`.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;
use serde_json::Value;

use crate::checks::canary::providers::LE_SCALE_LABEL;
use crate::checks::canary::ramp::SplitPoint;

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

/// Prometheus encodes sample values as strings ("NaN", "+Inf" included:
/// Rust's float parser reads those words as they are); returns (unix time,
/// value).
fn parse_value(v: &Value) -> Result<(f64, f64)> {
    let s = v.get(1).and_then(Value::as_str).ok_or_else(|| anyhow!("sample is not [time, \"value\"]: {v}"))?;
    let t = v.get(0).and_then(Value::as_f64).unwrap_or(f64::NAN);
    let x = s.parse::<f64>().with_context(|| format!("sample value `{s}`"))?;
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
    let parsed: ApiResponse = crate::serde_strict::from_json_str(body).with_context(|| {
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

/// A classic histogram's buckets from a `sum by (le)` answer: (upper bound
/// in the gate's unit, cumulative count). Bounds are scaled by `bound_scale`
/// unless the series carries its own factor in [`LE_SCALE_LABEL`]; `+Inf`
/// stays infinite. A NaN count is kept (it empties the histogram: NO DATA).
/// A series without `le`, or a bound or factor that is not a number, is an
/// error naming the query `q`.
pub(crate) fn histogram_buckets(series: &[Series], q: &str, bound_scale: f64) -> Result<Vec<(f64, f64)>> {
    let mut buckets = Vec::new();
    for s in series {
        let le = s
            .labels
            .get("le")
            .ok_or_else(|| anyhow!("bucket query `{q}` returned a series without `le`; keep `sum by (le)`"))?;
        // A series relabelled with its own bound factor (a second
        // naming generation in another unit) uses that factor.
        let scale = match s.labels.get(LE_SCALE_LABEL) {
            Some(f) => f
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f > 0.0)
                .ok_or_else(|| anyhow!("bucket query `{q}`: bad {LE_SCALE_LABEL} `{f}`"))?,
            None => bound_scale,
        };
        let le: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse::<f64>().with_context(|| format!("bucket bound `{le}`"))? * scale
        };
        buckets.push((le, s.values.first().copied().unwrap_or(f64::NAN)));
    }
    Ok(buckets)
}

/// Every sample of every series, times `scale`; none at all when one is
/// NaN or infinite (a division by zero in the exporter, a stale marker):
/// that voids the arm rather than being dropped, so what is left cannot
/// pass on its own.
pub(crate) fn gauge_samples(series: &[Series], scale: f64) -> Vec<f64> {
    let samples: Vec<f64> = series.iter().flat_map(|s| s.values.iter().map(|v| v * scale)).collect();
    if samples.iter().all(|v| v.is_finite()) {
        samples
    } else {
        Vec::new()
    }
}

/// A query expected to yield one number: None when there is no series,
/// the sum when an aggregation was left out and several series came back.
pub(crate) fn scalar(series: &[Series]) -> Option<f64> {
    let vals: Vec<f64> = series.iter().filter_map(|s| s.values.first().copied()).collect();
    (!vals.is_empty()).then(|| vals.iter().sum())
}

/// Requests per arm at each point of the two range queries that place the
/// traffic steps (an arm without a point at a time served nothing then;
/// NaN/Inf points are dropped, negative counts read as zero).
pub(crate) fn split_points(candidate: &[Series], baseline: &[Series]) -> Vec<SplitPoint> {
    let mut at: BTreeMap<i64, SplitPoint> = BTreeMap::new();
    for (arm, series) in [(0, candidate), (1, baseline)] {
        for s in series {
            for (t, v) in s.times.iter().zip(&s.values) {
                if !t.is_finite() || !v.is_finite() {
                    continue;
                }
                let p = at.entry((t * 1000.0).round() as i64).or_insert(SplitPoint {
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

pub(crate) fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(labels: &[(&str, &str)], values: &[f64], times: &[f64]) -> Series {
        Series {
            labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            values: values.to_vec(),
            times: times.to_vec(),
        }
    }

    /// Bounds are scaled by the template's factor unless the series names
    /// its own; `+Inf` stays infinite; a NaN count is kept for the histogram
    /// to void; a series without `le` or with a bad factor names the query.
    #[test]
    fn histogram_buckets_scale_their_bounds_and_refuse_what_is_not_a_bucket() {
        let series = vec![
            s(&[("le", "100")], &[3.0], &[0.0]),
            s(&[("le", "0.5"), (LE_SCALE_LABEL, "1")], &[4.0], &[0.0]),
            s(&[("le", "+Inf")], &[f64::NAN], &[0.0]),
        ];
        let b = histogram_buckets(&series, "q", 0.001).unwrap();
        assert_eq!(b[0], (0.1, 3.0));
        assert_eq!(b[1], (0.5, 4.0));
        assert!(b[2].0.is_infinite() && b[2].1.is_nan());
        let e = histogram_buckets(&[s(&[], &[1.0], &[0.0])], "q_no_le", 1.0).unwrap_err().to_string();
        assert!(e.contains("q_no_le") && e.contains("`le`"), "{e}");
        for bad in ["0", "-1", "NaN", "x"] {
            let e = histogram_buckets(&[s(&[("le", "1"), (LE_SCALE_LABEL, bad)], &[1.0], &[0.0])], "q_scale", 1.0)
                .unwrap_err()
                .to_string();
            assert!(e.contains("q_scale") && e.contains(bad), "{e}");
        }
        assert!(histogram_buckets(&[s(&[("le", "ten")], &[1.0], &[0.0])], "q", 1.0).is_err());
    }

    /// One non-finite sample voids the arm; the rest are scaled.
    #[test]
    fn gauge_samples_are_scaled_or_void() {
        let series = vec![s(&[], &[1.0, 2.0], &[0.0, 1.0]), s(&[], &[3.0], &[0.0])];
        assert_eq!(gauge_samples(&series, 2.0), vec![2.0, 4.0, 6.0]);
        let stale = vec![s(&[], &[1.0, f64::NAN], &[0.0, 1.0])];
        assert!(gauge_samples(&stale, 2.0).is_empty());
    }

    /// Each result type Prometheus answers with, as series: the sample's
    /// time and its value (the API's strings, non-finite words included),
    /// the labels; what is not the API's success shape is an error that says
    /// which query and what came back.
    #[test]
    fn responses_read_as_series_and_refusals_name_the_query() {
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"le":"0.5","pod":"a"},"value":[1700000000.5,"3.25"]},
            {"metric":{},"value":[7,"NaN"]},{"value":[8,"+Inf"]},{"value":[9,"-Inf"]},{"value":[10,"Inf"]}]}}"#;
        let got = parse_response(200, vector, "q").unwrap();
        assert_eq!(got[0], s(&[("le", "0.5"), ("pod", "a")], &[3.25], &[1700000000.5]));
        assert!(got[1].values[0].is_nan() && got[1].times == [7.0] && got[1].labels.is_empty());
        assert_eq!(
            (got[2].values[0], got[3].values[0], got[4].values[0]),
            (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY)
        );
        assert_eq!(got[4].times, [10.0]);
        // A time that is not a number is kept as NaN (the split drops it).
        assert!(parse_response(
            200,
            r#"{"status":"success","data":{"resultType":"vector","result":[{"value":["x","1"]}]}}"#,
            "q"
        )
        .unwrap()[0]
            .times[0]
            .is_nan());

        let matrix = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"a":"1"},"values":[[1,"1"],[2,"2.5"]]},{"metric":{"a":"2"}}]}}"#;
        let got = parse_response(200, matrix, "q").unwrap();
        assert_eq!(got, vec![s(&[("a", "1")], &[1.0, 2.5], &[1.0, 2.0]), s(&[("a", "2")], &[], &[])]);
        let scalar = r#"{"status":"success","data":{"resultType":"scalar","result":[5,"42"]}}"#;
        assert_eq!(parse_response(200, scalar, "q").unwrap(), vec![s(&[], &[42.0], &[5.0])]);

        let err = |status, body: &str| parse_response(status, body, "rate(x[5m])").unwrap_err().to_string();
        let e = err(502, "<html>bad gateway</html>");
        assert!(e.contains("HTTP 502") && e.contains("<html>bad gateway</html>"), "{e}");
        let e = err(400, r#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#);
        assert!(e.contains("rate(x[5m])") && e.contains("bad_data") && e.contains("parse error at char 3"), "{e}");
        let e = err(503, r#"{"status":"error"}"#);
        assert!(e.contains("rate(x[5m])") && e.contains("HTTP 503"), "{e}");
        let e = err(200, r#"{"status":"success"}"#);
        assert!(e.contains("no data") && e.contains("rate(x[5m])"), "{e}");
        let e = err(200, r#"{"status":"success","data":{"resultType":"streams","result":[]}}"#);
        assert!(e.contains("streams") && e.contains("rate(x[5m])"), "{e}");
        for body in [
            r#"{"status":"success","data":{"resultType":"vector","result":{}}}"#,
            r#"{"status":"success","data":{"resultType":"matrix","result":{}}}"#,
            r#"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,2]}]}}"#,
            r#"{"status":"success","data":{"resultType":"vector","result":[{}]}}"#,
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"one"]]}]}}"#,
            r#"{"status":"success","data":{"resultType":"scalar","result":[1]}}"#,
        ] {
            assert!(parse_response(200, body, "q").is_err(), "{body}");
        }
        assert!(err(200, r#"{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"one"]]}]}}"#)
            .contains("`one`"));
        // The quoted body is cut at 200 characters.
        let e = err(500, &"y".repeat(300));
        assert!(e.contains(&format!("{}…", "y".repeat(200))) && !e.contains(&"y".repeat(201)), "{e}");
    }

    /// None without a series, the one value, or the sum of several.
    #[test]
    fn scalar_reads_one_number() {
        assert_eq!(scalar(&[]), None);
        assert_eq!(scalar(&[s(&[], &[2.5], &[0.0])]), Some(2.5));
        assert_eq!(scalar(&[s(&[], &[2.5], &[0.0]), s(&[], &[1.0], &[0.0])]), Some(3.5));
    }

    /// Points of both arms at the same time meet; NaN points are dropped and
    /// negative counts read as zero.
    #[test]
    fn split_points_join_the_arms_by_time() {
        let c = vec![s(&[], &[10.0, f64::NAN, -1.0], &[100.0, 115.0, 130.0])];
        let b = vec![s(&[], &[30.0, 5.0], &[100.0, 145.0])];
        let p = split_points(&c, &b);
        let got: Vec<(f64, f64, f64)> = p.iter().map(|p| (p.t, p.candidate, p.baseline)).collect();
        assert_eq!(got, vec![(100.0, 10.0, 30.0), (130.0, 0.0, 0.0), (145.0, 0.0, 5.0)]);
        // Times meet to the millisecond: 0.4 ms apart is one point, 0.4 s
        // apart two.
        let c = vec![s(&[], &[1.0, 2.0], &[200.0, 200.4])];
        let b = vec![s(&[], &[3.0], &[200.0004])];
        let got: Vec<(f64, f64, f64)> = split_points(&c, &b).iter().map(|p| (p.t, p.candidate, p.baseline)).collect();
        assert_eq!(got, vec![(200.0, 1.0, 3.0), (200.4, 2.0, 0.0)]);
    }
}
