//! Prometheus text-format metrics of an audit report, for the node-exporter
//! textfile collector or a Pushgateway, so drift pages someone instead of only
//! failing a job. Pure: the caller passes the time.

use std::fmt::Write;

use super::escape::prometheus_label as label;
use super::{Report, Verdict};

fn metric(out: &mut String, name: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
}

/// The metrics of one (possibly merged) audit report at unix time `now`.
pub(crate) fn audit_metrics(r: &Report, now: i64) -> String {
    let bundles: Vec<_> = r.steps.iter().filter(|s| s.step == "audit").collect();
    let mut out = String::new();
    metric(
        &mut out,
        "bundlegate_audit_bundle_drifted",
        "1 when the store no longer holds exactly the bytes the bundle pins, or they changed since the last audit.",
    );
    for s in &bundles {
        let _ = writeln!(
            out,
            "bundlegate_audit_bundle_drifted{{bundle=\"{}\"}} {}",
            label(&s.target),
            u8::from(s.verdict == Verdict::Fail)
        );
    }
    metric(
        &mut out,
        "bundlegate_audit_bundle_error",
        "1 when the bundle could not be audited (unreadable bundle, unreachable store): its state is unknown.",
    );
    for s in &bundles {
        let _ = writeln!(
            out,
            "bundlegate_audit_bundle_error{{bundle=\"{}\"}} {}",
            label(&s.target),
            u8::from(matches!(s.verdict, Verdict::Error | Verdict::Inconclusive))
        );
    }
    metric(
        &mut out,
        "bundlegate_audit_bundle_last_verified_timestamp_seconds",
        "Unix time this run proved the bundle's bytes (absent when it did not).",
    );
    for s in bundles.iter().filter(|s| s.verdict == Verdict::Pass) {
        let _ = writeln!(
            out,
            "bundlegate_audit_bundle_last_verified_timestamp_seconds{{bundle=\"{}\"}} {now}",
            label(&s.target)
        );
    }
    metric(
        &mut out,
        "bundlegate_audit_bundle_bytes_hashed",
        "Bytes read and hashed for the bundle in this run (0 when object identity was unchanged).",
    );
    for s in &bundles {
        let b = s.data.get("bytesHashed").and_then(|v| v.as_u64()).unwrap_or(0);
        let _ = writeln!(out, "bundlegate_audit_bundle_bytes_hashed{{bundle=\"{}\"}} {b}", label(&s.target));
    }
    metric(
        &mut out,
        "bundlegate_audit_verdict",
        "1 for the run's verdict (pass, not-run, inconclusive, fail, error), 0 for the others.",
    );
    for v in [Verdict::Pass, Verdict::NotRun, Verdict::Inconclusive, Verdict::Fail, Verdict::Error] {
        let name = serde_json::to_value(v).ok().and_then(|x| x.as_str().map(str::to_string)).unwrap_or_default();
        let _ = writeln!(out, "bundlegate_audit_verdict{{verdict=\"{name}\"}} {}", u8::from(r.verdict == v));
    }
    metric(&mut out, "bundlegate_audit_bundles", "Bundles audited in this run.");
    let _ = writeln!(out, "bundlegate_audit_bundles {}", bundles.len());
    metric(
        &mut out,
        "bundlegate_audit_duration_seconds",
        "Wall time of the audit (the slowest shard for a merged report).",
    );
    let _ = writeln!(
        out,
        "bundlegate_audit_duration_seconds {}",
        r.duration_seconds.filter(|d| d.is_finite()).unwrap_or(0.0)
    );
    metric(&mut out, "bundlegate_audit_last_run_timestamp_seconds", "Unix time the audit finished.");
    let _ = writeln!(out, "bundlegate_audit_last_run_timestamp_seconds {now}");
    out
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
        let t = audit_metrics(&r, 1_700_000_000);
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
}
