//! Ranges and name rules for every number and name in the bundle, checked
//! at parse time (exit 2 with file:line:column and the field) so no check,
//! renderer or `Duration` conversion downstream ever sees them.
//!
//! | field | accepted |
//! |---|---|
//! | `metadata.name` | DNS-1035 label (it names the Service/InferenceService): `[a-z]([-a-z0-9]*[a-z0-9])?`, ≤ 63 |
//! | `metadata.namespace` | DNS-1123 label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, ≤ 63 |
//! | `metadata.version` | label value and path segment: `[A-Za-z0-9._-]`, starts and ends alphanumeric, ≤ 63, no `..` |
//! | `metadata.labels` | Kubernetes label keys (`[prefix/]name`) and values |
//! | `spec.serving.replicas` | 1 ..= 10 000 |
//! | `spec.serving.port`, probe `httpGet.port` / `tcpSocket.port` | 1 ..= 65 535 |
//! | `spec.serving.rollout.progressDeadlineSeconds` | 1 ..= 604 800 (7 days) |
//! | `spec.serving.rollout.maxSurge` / `maxUnavailable` | integer ≤ 10 000, or `N%` with N ≤ 1000 (surge) / ≤ 100 (unavailable) |
//! | probe `initialDelaySeconds` | 0 ..= 604 800 |
//! | probe `periodSeconds`, `timeoutSeconds` | 1 ..= 604 800 |
//! | probe `failureThreshold`, `successThreshold` | 1 ..= 10 000 |
//! | `spec.serving.loadTimeSeconds.p95` / `p50` | finite, 0 ..= 604 800, p50 ≤ p95 |
//! | `spec.canary.window` | a duration of more than 0 s and at most 7 days |
//! | `spec.canary.minSamples` | ≤ 10¹² (0 is reported by lint, BG015) |
//! | `spec.canary.gates[].maxAbsolute` | finite, ≥ 0; ≤ 1 for `error_rate` (a probability); ≤ 604 800 for `p95_latency_seconds` |
//! | `spec.canary.gates[].maxRelativeIncrease` | finite, 0 ..= 100 (a fraction: 0.10 = +10 %) |
//! | `spec.canary.gates[].minAbsolute` | finite, ≥ 0; ≤ 1 for `error_rate`; ≤ 604 800 for `p95_latency_seconds` |
//! | `spec.canary.gates[].minRelativeDecrease` | finite, 0 ..= 1 (a fraction: 0.10 = −10 %; a fall of more than 100 % is below zero) |
//! | every float field (`ReleaseBundle::float_fields`) | finite, checked first, so no field is missed |
//!
//! Not range-checked here: artifact `size` (any u64), token ids and
//! `maxOutputTokens` (any u32; 0 is lint's BG006), resource quantities
//! (preflight parses them). Canary `steps` are refused while parsing
//! (`traffic_steps`).

use super::model::*;

/// Upper bound for every seconds field: a week. Far above any real load time
/// or canary window, and far below where `Duration::from_secs_f64` panics.
pub(crate) const MAX_SECONDS: u64 = 7 * 24 * 3600;
pub(crate) const MAX_REPLICAS: u32 = 10_000;
const MAX_THRESHOLD: u32 = 10_000;
const MAX_MIN_SAMPLES: u64 = 1_000_000_000_000;

type Refusal = (String, String);

pub(crate) fn dns_label(s: &str, first_letter: bool) -> bool {
    let b = s.as_bytes();
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= 63
        && b.iter().all(|c| ok(c) || *c == b'-')
        && ok(&b[0])
        && (!first_letter || b[0].is_ascii_lowercase())
        && ok(&b[b.len() - 1])
}

/// A Kubernetes label value (may be empty).
fn label_value(s: &str) -> bool {
    let b = s.as_bytes();
    b.is_empty()
        || (b.len() <= 63
            && b.iter().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric())
}

fn label_key(k: &str) -> bool {
    let (prefix, name) = match k.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, k),
    };
    let prefix_ok = prefix.is_none_or(|p| p.len() <= 253 && p.split('.').all(|l| dns_label(l, false)));
    prefix_ok && !name.is_empty() && label_value(name)
}

/// Total seconds of a duration written like `30m`, `1h30m`, `90s`, `45`,
/// computed without ever building a `Duration`; `None` when it is not one
/// (lint reports that as BG015).
pub(crate) fn duration_seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    if let Ok(n) = s.parse::<u64>() {
        return Some(n as f64);
    }
    let (mut total, mut num, mut any) = (0f64, String::new(), false);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || c == '.' {
            num.push(c);
            continue;
        }
        let unit = match c {
            'm' if chars.peek() == Some(&'s') => {
                chars.next();
                0.001
            }
            'h' => 3600.0,
            'm' => 60.0,
            's' => 1.0,
            'd' => 86400.0,
            _ => return None,
        };
        total += num.parse::<f64>().ok()? * unit;
        num.clear();
        any = true;
    }
    (num.is_empty() && any).then_some(total)
}

fn seconds(field: String, v: f64, min: f64) -> Result<(), Refusal> {
    if !v.is_finite() {
        return Err((field, format!("{v} is not a finite number of seconds")));
    }
    if v < min || v > MAX_SECONDS as f64 {
        return Err((field, format!("{v} is out of range: seconds must be in {min}..={MAX_SECONDS} (7 days)")));
    }
    Ok(())
}

fn int_range(field: String, v: u64, lo: u64, hi: u64) -> Result<(), Refusal> {
    if v < lo || v > hi {
        return Err((field, format!("{v} is out of range {lo}..={hi}")));
    }
    Ok(())
}

fn fraction(field: String, v: f64, hi: f64, what: &str) -> Result<(), Refusal> {
    if !v.is_finite() || !(0.0..=hi).contains(&v) {
        return Err((field, format!("{v} is out of range: {what} must be a finite number in 0..={hi}")));
    }
    Ok(())
}

fn int_or_percent(field: String, v: &IntOrPercent, max_pct: u64) -> Result<(), Refusal> {
    match v {
        IntOrPercent::Int(i) => int_range(field, *i as u64, 0, MAX_REPLICAS as u64),
        // Text that is not `N%` is lint's (BG015); only out-of-range numbers stop here.
        IntOrPercent::Str(s) => match s.strip_suffix('%').and_then(|n| n.trim().parse::<u128>().ok()) {
            Some(p) if p > max_pct as u128 => Err((field, format!("`{s}` is out of range: at most {max_pct}%"))),
            _ => Ok(()),
        },
    }
}

fn probe(path: &str, p: &Probe) -> Result<(), Refusal> {
    let f = |n: &str| format!("{path}.{n}");
    seconds(f("initialDelaySeconds"), p.initial_delay_seconds as f64, 0.0)?;
    seconds(f("periodSeconds"), p.period_seconds as f64, 1.0)?;
    seconds(f("timeoutSeconds"), p.timeout_seconds as f64, 1.0)?;
    int_range(f("failureThreshold"), p.failure_threshold as u64, 1, MAX_THRESHOLD as u64)?;
    if let Some(s) = p.success_threshold {
        int_range(f("successThreshold"), s as u64, 1, MAX_THRESHOLD as u64)?;
    }
    if let Some(port) = p.http_get.as_ref().and_then(|h| h.port) {
        int_range(f("httpGet.port"), port as u64, 1, 65535)?;
    }
    if let Some(port) = p.tcp_socket.as_ref().and_then(|t| t.port) {
        int_range(f("tcpSocket.port"), port as u64, 1, 65535)?;
    }
    Ok(())
}

/// `spec.serving.replicas`, and every override of it (the Argo CD plugin's
/// `replicas` parameter): 1 ..= [`MAX_REPLICAS`].
pub(crate) fn check_replicas(n: u64) -> Result<(), String> {
    int_range(String::new(), n, 1, MAX_REPLICAS as u64).map_err(|(_, why)| why)
}

/// `metadata.namespace`, and every override of it: a DNS-1123 label.
pub(crate) fn check_namespace(ns: &str) -> Result<(), String> {
    if dns_label(ns, false) {
        Ok(())
    } else {
        Err(format!(
            "`{ns}` is not a valid Kubernetes namespace (DNS-1123 label: lowercase letters, digits, '-', at most 63)"
        ))
    }
}

/// The first field that is out of range or not a valid name: (field path, why).
pub(crate) fn validate(b: &ReleaseBundle) -> Result<(), Refusal> {
    // Every float, whatever its own range below: the YAML guard refuses
    // `.nan` spelled any way, this refuses whatever else could produce one.
    for (field, v) in b.float_fields() {
        if !v.is_finite() {
            return Err((field, format!("{v} is not a finite number")));
        }
    }
    let m = &b.metadata;
    if !dns_label(&m.name, true) {
        return Err((
            "metadata.name".into(),
            format!("`{}` is not a valid Kubernetes service name (DNS-1035 label: lowercase letters, digits, '-', starting with a letter, at most 63)", m.name),
        ));
    }
    check_namespace(&m.namespace).map_err(|why| ("metadata.namespace".to_string(), why))?;
    // The version becomes part of object names, label values and file paths.
    if m.version.is_empty() || !label_value(&m.version) || m.version.contains("..") {
        return Err((
            "metadata.version".into(),
            format!("`{}` is not a valid version: 1 to 63 of `A-Za-z0-9._-`, starting and ending with a letter or digit, no `..` or `/`", m.version),
        ));
    }
    for (k, v) in &m.labels {
        if !label_key(k) {
            return Err((format!("metadata.labels.{k}"), format!("`{k}` is not a valid Kubernetes label key")));
        }
        if !label_value(v) {
            return Err((
                format!("metadata.labels.{k}"),
                format!("`{v}` is not a valid Kubernetes label value (at most 63 of `A-Za-z0-9._-`)"),
            ));
        }
    }

    let s = &b.spec.serving;
    check_replicas(s.replicas as u64).map_err(|why| ("spec.serving.replicas".to_string(), why))?;
    int_range("spec.serving.port".into(), s.port as u64, 1, 65535)?;
    seconds("spec.serving.rollout.progressDeadlineSeconds".into(), s.rollout.progress_deadline_seconds as f64, 1.0)?;
    int_or_percent("spec.serving.rollout.maxSurge".into(), &s.rollout.max_surge, 1000)?;
    int_or_percent("spec.serving.rollout.maxUnavailable".into(), &s.rollout.max_unavailable, 100)?;
    for (name, p) in
        [("startup", &s.probes.startup), ("readiness", &s.probes.readiness), ("liveness", &s.probes.liveness)]
    {
        if let Some(p) = p {
            probe(&format!("spec.serving.probes.{name}"), p)?;
        }
    }
    if let Some(lt) = &s.load_time_seconds {
        seconds("spec.serving.loadTimeSeconds.p95".into(), lt.p95, 0.0)?;
        if let Some(p50) = lt.p50 {
            seconds("spec.serving.loadTimeSeconds.p50".into(), p50, 0.0)?;
            if p50 > lt.p95 {
                return Err(("spec.serving.loadTimeSeconds.p50".into(), format!("p50 {p50} is above p95 {}", lt.p95)));
            }
        }
    }

    if let Some(c) = &b.spec.canary {
        if let Some(total) = duration_seconds(&c.window) {
            if !(total.is_finite() && total > 0.0 && total <= MAX_SECONDS as f64) {
                return Err((
                    "spec.canary.window".into(),
                    format!("`{}` is out of range: a canary window is more than 0s and at most 7 days", c.window),
                ));
            }
        }
        int_range("spec.canary.minSamples".into(), c.min_samples, 0, MAX_MIN_SAMPLES)?;
        for (i, g) in c.gates.iter().enumerate() {
            let f = |n: &str| format!("spec.canary.gates[{i}].{n}");
            let (hi, what) = match g.metric.as_str() {
                "error_rate" => (1.0, "an error rate (a probability)"),
                "p95_latency_seconds" => (MAX_SECONDS as f64, "a latency in seconds"),
                _ => (f64::MAX, "a metric bound"),
            };
            if let Some(v) = g.max_absolute {
                fraction(f("maxAbsolute"), v, hi, what)?;
            }
            if let Some(v) = g.min_absolute {
                fraction(f("minAbsolute"), v, hi, what)?;
            }
            if let Some(v) = g.max_relative_increase {
                fraction(f("maxRelativeIncrease"), v, 100.0, "a relative increase (0.10 = +10%)")?;
            }
            if let Some(v) = g.min_relative_decrease {
                fraction(f("minRelativeDecrease"), v, 1.0, "a relative decrease (0.10 = -10%)")?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_kubernetes_rules() {
        assert!(dns_label("llm-scratch", true) && !dns_label("1llm", true) && dns_label("1ns", false));
        assert!(
            !dns_label("-a", false)
                && !dns_label("a-", false)
                && !dns_label(&"a".repeat(64), false)
                && !dns_label("A", false)
        );
        assert!(label_value("v2") && label_value("2026.12.01") && label_value("v1_rc-1"));
        assert!(!label_value("../v1") && !label_value("v/1") && !label_value(".v1") && !label_value(&"a".repeat(64)));
        assert!(label_key("app.kubernetes.io/name") && label_key("team") && !label_key("/x") && !label_key("a/b/c"));
    }

    /// The example with the YAML at `path` (dots and `[i]`) set to `yaml`:
    /// Ok, or the refused field and why.
    fn with(path: &str, yaml: &str) -> Result<(), (String, String)> {
        let edited = crate::manifests::bundle_edit(|v| {
            let mut cur = v;
            for seg in path.split('.') {
                let (name, index) = seg
                    .split_once('[')
                    .map_or((seg, None), |(n, i)| (n, i.trim_end_matches(']').parse::<usize>().ok()));
                cur = &mut cur[name];
                if let Some(i) = index {
                    cur = &mut cur[i];
                }
            }
            *cur = serde_yaml_ng::from_str(yaml).unwrap();
        });
        match edited {
            Ok(_) => Ok(()),
            Err(crate::bundle::LoadError::Invalid { field, message, .. }) => Err((field, message)),
            Err(e) => panic!("{path}: {e}"),
        }
    }

    /// Every bound of the module's table, one field at a time: the value at
    /// the bound passes, the one just past it is refused naming that field.
    #[test]
    fn each_range_holds_at_its_bound_and_refuses_one_past_it() {
        let cases = [
            ("spec.serving.replicas", "10000", "10001"),
            ("spec.serving.replicas", "1", "0"),
            ("spec.serving.port", "65535", "0"),
            ("spec.serving.rollout.progressDeadlineSeconds", "604800", "604801"),
            ("spec.serving.rollout.progressDeadlineSeconds", "1", "0"),
            ("spec.serving.rollout.maxSurge", "'1000%'", "'1001%'"),
            ("spec.serving.rollout.maxSurge", "10000", "10001"),
            ("spec.serving.rollout.maxUnavailable", "'100%'", "'101%'"),
            ("spec.serving.rollout.maxUnavailable", "0", "10001"),
            ("spec.serving.probes.startup.initialDelaySeconds", "0", "604801"),
            ("spec.serving.probes.startup.periodSeconds", "1", "0"),
            ("spec.serving.probes.startup.timeoutSeconds", "604800", "604801"),
            ("spec.serving.probes.readiness.failureThreshold", "10000", "10001"),
            ("spec.serving.probes.readiness.failureThreshold", "1", "0"),
            ("spec.serving.probes.liveness.successThreshold", "1", "0"),
            ("spec.serving.probes.liveness.successThreshold", "10000", "10001"),
            ("spec.serving.probes.startup.httpGet.port", "65535", "0"),
            ("spec.serving.probes.readiness.tcpSocket.port", "1", "0"),
            ("spec.serving.loadTimeSeconds.p95", "604800", "604801"),
            ("spec.serving.loadTimeSeconds.p50", "95", "96"),
            ("spec.canary.window", "7d", "7d1s"),
            ("spec.canary.window", "1s", "0s"),
            ("spec.canary.minSamples", "1000000000000", "1000000000001"),
            ("spec.canary.gates[0].maxAbsolute", "1", "1.5"),
            ("spec.canary.gates[0].minAbsolute", "0", "-0.1"),
            ("spec.canary.gates[0].maxRelativeIncrease", "100", "100.5"),
            ("spec.canary.gates[0].minRelativeDecrease", "1", "1.01"),
            ("spec.canary.gates[1].maxAbsolute", "604800", "604801"),
            ("spec.canary.gates[2].maxAbsolute", "1e300", "-1"),
        ];
        for (path, ok, past) in cases {
            assert_eq!(with(path, ok), Ok(()), "{path}: {ok}");
            let (field, why) = with(path, past).expect_err(path);
            assert_eq!(field, path, "{past}: {why}");
            assert!(why.contains("out of range") || why.contains("is above p95"), "{path}: {why}");
        }
    }

    /// Each name rule refuses alone, naming its field; a valid name passes.
    #[test]
    fn each_name_rule_refuses_naming_its_field() {
        let refused = |path: &str, yaml: &str| with(path, yaml).expect_err(yaml).0;
        assert_eq!(with("metadata.name", "llm-2"), Ok(()));
        assert_eq!(refused("metadata.name", "2llm"), "metadata.name");
        assert_eq!(refused("metadata.namespace", "AI"), "metadata.namespace");
        assert_eq!(with("metadata.version", "v2.1_rc-1"), Ok(()));
        for bad in ["''", "v1..2", "v/1", "-v1"] {
            assert_eq!(refused("metadata.version", bad), "metadata.version", "{bad}");
        }
        assert_eq!(with("metadata.labels", "{team: ml, app.kubernetes.io/part-of: llm}"), Ok(()));
        assert_eq!(refused("metadata.labels", "{'bad key': x}"), "metadata.labels.bad key");
        assert_eq!(refused("metadata.labels", "{team: 'bad value!'}"), "metadata.labels.team");
    }

    /// Seconds fields hold up to exactly seven days, as the message says.
    #[test]
    fn seconds_hold_up_to_seven_days_exactly() {
        let week = 7.0 * 24.0 * 3600.0;
        assert_eq!(seconds("f".into(), week, 0.0), Ok(()));
        let (field, message) = seconds("f".into(), week + 1.0, 0.0).unwrap_err();
        assert_eq!(
            (field.as_str(), message.as_str()),
            ("f", "604801 is out of range: seconds must be in 0..=604800 (7 days)")
        );
    }

    #[test]
    fn durations_are_computed_without_panicking() {
        assert_eq!(duration_seconds("1h30m"), Some(5400.0));
        assert_eq!(duration_seconds("45"), Some(45.0));
        assert_eq!(duration_seconds("soon"), None);
        for (text, secs) in
            [("90s", 90.0), ("2d", 172_800.0), ("250ms", 0.25), ("1m30s", 90.0), ("1.5h", 5400.0), (" 7 ", 7.0)]
        {
            assert_eq!(duration_seconds(text), Some(secs), "{text}");
        }
        for text in ["1h30", "", "h", "5w", "1.2.3s"] {
            assert_eq!(duration_seconds(text), None, "{text}");
        }
        assert!(duration_seconds(&format!("{}h", "9".repeat(400))).unwrap().is_infinite());
    }
}
