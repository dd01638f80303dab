//! Models in OCI registries, the first part: KServe's `oci://`,
//! `oci+native://` and `oci+fetch://` storage URIs are read by the one
//! scheme table, pinned by their manifest digest (a tag alone is BG026, not
//! the unknown-scheme BG019), rendered unchanged, and a verify that cannot
//! read a registry yet is an ERROR naming why, never a PASS.

use crate::support::*;
use serde_json::Value;

const DIGEST: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

fn codes(out: &Out) -> Vec<String> {
    out.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["diagnostics"].as_array().cloned().unwrap_or_default())
        .map(|d| d["code"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn a_tag_alone_is_bg026_and_a_digest_pins_the_model() {
    let ex = Example::new();
    for scheme in ["oci", "oci+native", "oci+fetch"] {
        ex.edit_v2(|v| {
            *at(v, "spec.model.storageUri") = format!("{scheme}://127.0.0.1:5000/models/llm-scratch:v2").into()
        });
        let out = ex.run(&["lint", ex.v2().to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 1, "{}", out.stdout);
        let c = codes(&out);
        assert!(c.contains(&"BG026".to_string()) && !c.contains(&"BG019".to_string()), "{scheme}: {c:?}");
        assert!(out.stdout.contains("pin the manifest digest"), "{}", out.stdout);
        ex.edit_v2(|v| {
            *at(v, "spec.model.storageUri") = format!("{scheme}://127.0.0.1:5000/models/llm-scratch:v2@{DIGEST}").into()
        });
        let out = ex.run(&["lint", ex.v2().to_str().unwrap(), "--format", "json"]);
        let c = codes(&out);
        assert!(!c.iter().any(|c| c == "BG026" || c == "BG019" || c == "BG002" || c == "BG016"), "{scheme}: {c:?}");
    }
    // A malformed reference is the scheme table's refusal, in words.
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "oci://127.0.0.1:5000/Models/LLM:v2".into());
    let out = ex.run(&["lint", ex.v2().to_str().unwrap(), "--format", "json"]);
    assert!(codes(&out).contains(&"BG019".to_string()), "{}", out.stdout);
    assert!(out.stdout.contains("is not an OCI repository name"), "{}", out.stdout);
}

#[test]
fn render_passes_the_reference_unchanged_and_verify_is_never_a_pass() {
    let ex = Example::new();
    let uri = format!("oci://127.0.0.1:5000/models/llm-scratch:v2@{DIGEST}");
    ex.edit_v2(|v| {
        *at(v, "spec.serving.format") = "kserve-modelspec".into();
        *at(v, "spec.model.storageUri") = uri.clone().into();
    });
    let out = ex.run(&["render", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let objs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&out.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect();
    assert_eq!(objs[0]["spec"]["predictor"]["model"]["storageUri"], uri.as_str());
    let out = ex.run(&["verify", ex.v2().to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_ne!(out.json()["verdict"], "pass");
    assert!(out.stdout.contains("does not read registries yet"), "{}", out.stdout);
}
