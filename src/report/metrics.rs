//! Prometheus text-format metrics of an audit report, for the node-exporter
//! textfile collector or a Pushgateway, so drift pages someone instead of only
//! failing a job. Pure: the caller passes the time.
//!
//! Every sample goes through one writer that refuses a series (a metric
//! name and label set, as written) it already wrote: Prometheus keeps the
//! first of two and drops the other, so two bundles under one label would
//! hide one's drift behind the other's health.

use std::collections::BTreeMap;
use std::fmt::{self, Write};

use super::escape::prometheus_label as label;
use super::{Report, StepReport, Verdict};

/// Two samples of one series: nothing is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuplicateSeries {
    /// The series as it would be written (`name{label="…"}`).
    pub series: String,
    pub first: String,
    pub second: String,
}

impl fmt::Display for DuplicateSeries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the metrics would hold the series {} twice, from {} and from {} (Prometheus keeps one and drops the other, \
             which can hide a drift); no metrics were written",
            self.series, self.first, self.second
        )
    }
}

impl std::error::Error for DuplicateSeries {}

/// The text being written and the source of each series in it.
#[derive(Default)]
struct Writer {
    out: String,
    written: BTreeMap<String, String>,
}

impl Writer {
    fn family(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} gauge");
    }

    /// One sample of `name` with `labels` (escaped here), from `source`.
    fn sample(
        &mut self,
        name: &str,
        labels: &[(&str, &str)],
        value: impl fmt::Display,
        source: &str,
    ) -> Result<(), DuplicateSeries> {
        let mut series = name.to_string();
        if !labels.is_empty() {
            let set: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{}\"", label(v))).collect();
            series = format!("{name}{{{}}}", set.join(","));
        }
        if let Some(first) = self.written.get(&series) {
            return Err(DuplicateSeries { series, first: first.clone(), second: source.to_string() });
        }
        let _ = writeln!(self.out, "{series} {value}");
        self.written.insert(series, source.to_string());
        Ok(())
    }
}

/// What a bundle's series come from, for the duplicate's message: the
/// step, its bundle's id in the tree and the shard report it came from,
/// when the report says.
fn source(i: usize, s: &StepReport) -> String {
    let field = |k: &str| s.data.get(k).and_then(|v| v.as_str()).map(str::to_string);
    let mut o = format!("step {} (audit of `{}`", i + 1, s.target);
    if let Some(b) = field("bundle") {
        let _ = write!(o, ", bundle `{b}`");
    }
    if let Some(r) = field("report") {
        let _ = write!(o, ", from {r}");
    }
    o.push(')');
    o
}

/// The metrics of one (possibly merged) audit report at unix time `now`;
/// refused when two of its bundles would be one series.
pub(crate) fn audit_metrics(r: &Report, now: i64) -> Result<String, DuplicateSeries> {
    let bundles: Vec<(String, &StepReport)> =
        r.steps.iter().enumerate().filter(|(_, s)| s.step == "audit").map(|(i, s)| (source(i, s), s)).collect();
    let mut w = Writer::default();
    w.family(
        "bundlegate_audit_bundle_drifted",
        "1 when the store no longer holds exactly the bytes the bundle pins, or they changed since the last audit.",
    );
    for (src, s) in &bundles {
        w.sample(
            "bundlegate_audit_bundle_drifted",
            &[("bundle", &s.target)],
            u8::from(s.verdict == Verdict::Fail),
            src,
        )?;
    }
    w.family(
        "bundlegate_audit_bundle_error",
        "1 when the bundle could not be audited (unreadable bundle, unreachable store): its state is unknown.",
    );
    for (src, s) in &bundles {
        let unknown = u8::from(matches!(s.verdict, Verdict::Error | Verdict::Inconclusive));
        w.sample("bundlegate_audit_bundle_error", &[("bundle", &s.target)], unknown, src)?;
    }
    w.family(
        "bundlegate_audit_bundle_last_verified_timestamp_seconds",
        "Unix time this run proved the bundle's bytes (absent when it did not).",
    );
    for (src, s) in bundles.iter().filter(|(_, s)| s.verdict == Verdict::Pass) {
        w.sample("bundlegate_audit_bundle_last_verified_timestamp_seconds", &[("bundle", &s.target)], now, src)?;
    }
    w.family(
        "bundlegate_audit_bundle_bytes_hashed",
        "Bytes read and hashed for the bundle in this run (0 when object identity was unchanged).",
    );
    for (src, s) in &bundles {
        let b = s.data.get("bytesHashed").and_then(|v| v.as_u64()).unwrap_or(0);
        w.sample("bundlegate_audit_bundle_bytes_hashed", &[("bundle", &s.target)], b, src)?;
    }
    w.family(
        "bundlegate_audit_verdict",
        "1 for the run's verdict (pass, not-run, inconclusive, fail, error), 0 for the others.",
    );
    for v in [Verdict::Pass, Verdict::NotRun, Verdict::Inconclusive, Verdict::Fail, Verdict::Error] {
        let name = serde_json::to_value(v).ok().and_then(|x| x.as_str().map(str::to_string)).unwrap_or_default();
        w.sample("bundlegate_audit_verdict", &[("verdict", &name)], u8::from(r.verdict == v), "the run's verdict")?;
    }
    w.family("bundlegate_audit_bundles", "Bundles audited in this run.");
    w.sample("bundlegate_audit_bundles", &[], bundles.len(), "the run")?;
    w.family("bundlegate_audit_duration_seconds", "Wall time of the audit (the slowest shard for a merged report).");
    let seconds = r.duration_seconds.filter(|d| d.is_finite()).unwrap_or(0.0);
    w.sample("bundlegate_audit_duration_seconds", &[], seconds, "the run")?;
    w.family("bundlegate_audit_last_run_timestamp_seconds", "Unix time the audit finished.");
    w.sample("bundlegate_audit_last_run_timestamp_seconds", &[], now, "the run")?;
    Ok(w.out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::StepReport;

    #[test]
    fn one_series_per_bundle_and_a_one_hot_verdict() {
        let mut r = Report::new("audit");
        let mut a = StepReport::new("audit", "models/a/release.yaml");
        a.data = serde_json::json!({"bytesHashed": 42});
        r.push(a);
        let mut b = StepReport::new("audit", "models/\"b\"/release.yaml");
        b.verdict = Verdict::Fail;
        r.push(b);
        let t = audit_metrics(&r, 1_700_000_000).unwrap();
        assert!(t.contains("bundlegate_audit_bundle_drifted{bundle=\"models/a/release.yaml\"} 0"), "{t}");
        assert!(t.contains("bundlegate_audit_bundle_drifted{bundle=\"models/\\\"b\\\"/release.yaml\"} 1"), "{t}");
        assert!(t.contains("bundlegate_audit_bundle_bytes_hashed{bundle=\"models/a/release.yaml\"} 42"));
        assert!(
            t.contains("bundlegate_audit_verdict{verdict=\"fail\"} 1")
                && t.contains("bundlegate_audit_verdict{verdict=\"pass\"} 0"),
            "{t}"
        );
        assert!(
            !t.contains("last_verified_timestamp_seconds{bundle=\"models/\\\"b"),
            "a drifted bundle was not verified"
        );
        // Every series' family is declared (HELP, then TYPE gauge) before
        // its first sample, as the exposition format asks.
        let lines: Vec<&str> = t.lines().collect();
        for (i, l) in lines.iter().enumerate().filter(|(_, l)| !l.starts_with('#')) {
            let name = l.split(['{', ' ']).next().unwrap();
            let declared = lines[..i].iter().position(|d| *d == format!("# TYPE {name} gauge")).expect(name);
            assert!(declared > 0 && lines[declared - 1].starts_with(&format!("# HELP {name} ")), "{name}");
        }
    }

    /// Two audit steps whose labels would be one series (a merge of a
    /// duplicated shard, or two bundles one name): refused, naming both.
    #[test]
    fn a_series_is_never_written_twice() {
        let mut r = Report::new("audit");
        for (i, report) in ["shard-0.json", "shard-0-copy.json"].iter().enumerate() {
            let mut s = StepReport::new("audit", "models/a/release.yaml");
            s.verdict = if i == 0 { Verdict::Pass } else { Verdict::Fail };
            s.data = serde_json::json!({"bundle": "a/release.yaml", "report": report});
            r.push(s);
        }
        let e = audit_metrics(&r, 0).unwrap_err();
        assert_eq!(e.series, "bundlegate_audit_bundle_drifted{bundle=\"models/a/release.yaml\"}");
        assert_eq!(e.first, "step 1 (audit of `models/a/release.yaml`, bundle `a/release.yaml`, from shard-0.json)");
        assert_eq!(
            e.second,
            "step 2 (audit of `models/a/release.yaml`, bundle `a/release.yaml`, from shard-0-copy.json)"
        );
        assert!(e.to_string().contains("no metrics were written"), "{e}");
        // Labels that differ only where the escaper would make them equal are one series too.
        let mut w = Writer::default();
        w.sample("m", &[("bundle", "a\n")], 1, "x").unwrap();
        assert!(w.sample("m", &[("bundle", "a\n")], 1, "y").is_err());
        assert!(w.sample("m", &[("bundle", "a\\n")], 1, "z").is_ok(), "a backslash and n is another value");
    }
}
