//! SARIF 2.1.0 (`--format sarif`): one run whose rules are the code registry
//! and whose results are the report's diagnostics at their file and line, so
//! GitHub's code scanning shows each finding on the bundle line it is about.
//! The tests validate it against the OASIS schema (Errata 01).

use serde_json::{json, Value};

use super::{Report, Severity};
use crate::diag::Code;

const SCHEMA: &str = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        // Allowed diagnostics never reach a report; say "none" if one did.
        Severity::Note => "note",
        Severity::Allow => "none",
    }
}

/// The first sentence of a code's why: SARIF's short description.
fn first_sentence(why: &str) -> &str {
    why.find(". ").map_or(why, |i| &why[..=i])
}

/// A span's file as a SARIF artifact URI: relative paths stay relative to
/// where the tool ran (the checkout root in CI), without `./`; every byte
/// outside RFC 3986's unreserved set and `/` is percent-encoded, so a hostile
/// file name cannot break out of the URI.
fn uri(file: &str) -> String {
    let mut p = file;
    while let Some(rest) = p.strip_prefix("./") {
        p = rest;
    }
    let encoded: String = p
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    if p.starts_with('/') {
        format!("file://{encoded}")
    } else {
        encoded
    }
}

fn rules() -> Vec<Value> {
    let repo = env!("CARGO_PKG_REPOSITORY").trim_end_matches('/');
    Code::ALL
        .iter()
        .map(|c| {
            let i = c.info();
            json!({
                "id": i.code,
                "name": i.name,
                "shortDescription": {"text": first_sentence(i.why)},
                "fullDescription": {"text": i.why},
                "helpUri": format!("{repo}/blob/main/docs/diagnostics.md#{}", c.docs_anchor()),
                "defaultConfiguration": {"level": level(i.default_severity)},
                "properties": {"family": i.family},
            })
        })
        .collect()
}

/// The report as one SARIF log.
pub fn sarif(r: &Report) -> Value {
    let index: std::collections::BTreeMap<Code, usize> = Code::ALL.iter().enumerate().map(|(k, c)| (*c, k)).collect();
    let mut results = Vec::new();
    for s in &r.steps {
        for d in &s.diagnostics {
            let mut res = json!({
                "ruleId": d.code.info().code,
                "ruleIndex": index.get(&d.code),
                "level": level(d.severity),
                "message": {"text": d.message},
                "properties": {"step": s.step, "target": s.target, "evidence": d.evidence},
            });
            if let Some(sp) = &d.span {
                res["locations"] = json!([{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri(&sp.file)},
                        "region": {"startLine": sp.line.max(1), "startColumn": sp.column.max(1)},
                    }
                }]);
            }
            results.push(res);
        }
    }
    json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "bundlegate",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": env!("CARGO_PKG_REPOSITORY"),
                "rules": rules(),
            }},
            "invocations": [{"executionSuccessful": r.verdict != super::Verdict::Error}],
            "results": results,
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_are_relative_and_encoded() {
        assert_eq!(uri("./examples/v2/release.yaml"), "examples/v2/release.yaml");
        assert_eq!(uri("a b/ä#?.yaml"), "a%20b/%C3%A4%23%3F.yaml");
        assert_eq!(uri("/abs/x.yaml"), "file:///abs/x.yaml");
    }

    #[test]
    fn anchors_match_the_docs_headings() {
        assert_eq!(Code::ALL[0].docs_anchor(), "bg001-image-not-pinned-error");
        let docs = crate::diag::markdown_docs();
        for c in Code::ALL {
            let i = c.info();
            assert!(docs.contains(&format!("### {} `{}` ({})", i.code, i.name, i.default_severity)));
        }
    }

    #[test]
    fn first_sentence_stops_at_the_first_full_stop() {
        assert_eq!(first_sentence("One. Two."), "One.");
        assert_eq!(first_sentence("No stop"), "No stop");
    }
}
