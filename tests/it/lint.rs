//! Every lint code has a test here that triggers it on a realistic bundle and
//! checks its span points at the right line.

use crate::support::*;
use serde_yaml_ng::Value;

fn lint(ex: &Example) -> Out {
    ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()])
}

/// Trigger `code` by editing v2, assert exit 1 (or `exit`) and the span line.
fn triggers(code: &str, edit: impl FnOnce(&mut Value), line_needle: Option<&str>) -> serde_json::Value {
    let ex = Example::new();
    ex.edit_v2(edit);
    let out = lint(&ex);
    let d = out.diag(code);
    if d["severity"] == "error" {
        assert_eq!(out.code, 1, "{}", out.stdout);
    }
    if let Some(n) = line_needle {
        let text = std::fs::read_to_string(ex.v2()).unwrap();
        assert_eq!(d["span"]["line"].as_u64().unwrap() as usize, line_of(&text, n), "span of {code}: {d}");
    }
    d
}

#[test]
fn shipped_example_is_clean() {
    let out = run(&["lint", "--format", "json", "examples/llm-scratch/v2/release.yaml", "examples/llm-scratch/v1/release.yaml"]);
    let v = out.json();
    // v1 has no rollback target (it is the first release): a warning, not an error.
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(v["steps"][0]["diagnostics"].as_array().unwrap().is_empty(), "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG010"]);
}

#[test]
fn bg001_image_not_pinned() {
    let d = triggers("BG001", |v| *at(v, "spec.runtime.image") = "registry.example.com/llm-serve:latest".into(), Some("image:"));
    assert!(d["message"].as_str().unwrap().contains("llm-serve:latest"));
}

#[test]
fn bg002_latest_prefix() {
    triggers("BG002", |v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/latest/".into(), Some("storageUri"));
}

#[test]
fn bg002_unversioned_shared_prefix() {
    triggers("BG002", |v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/".into(), Some("storageUri"));
}

#[test]
fn bg003_artifact_without_sha_or_size() {
    let d = triggers(
        "BG003",
        |v| {
            at(v, "spec.model.artifacts.4").as_mapping_mut().unwrap().remove("sha256");
        },
        Some("- path: clean_corpus.txt"),
    );
    assert!(d["message"].as_str().unwrap().contains("clean_corpus.txt"));
    triggers(
        "BG003",
        |v| {
            at(v, "spec.model.artifacts.0").as_mapping_mut().unwrap().remove("size");
        },
        Some("- path: ckpt.pt"),
    );
}

#[test]
fn bg004_path_escaping_prefix() {
    for bad in ["../v1/ckpt.pt", "/etc/passwd", "a/../../b", "./ckpt.pt"] {
        let d = triggers("BG004", |v| *at(v, "spec.model.artifacts.0.path") = bad.into(), None);
        assert!(d["message"].as_str().unwrap().contains(bad));
    }
}

#[test]
fn bg005_duplicate_paths() {
    triggers("BG005", |v| *at(v, "spec.model.artifacts.1.path") = "ckpt.pt".into(), None);
}

#[test]
fn bg006_generation_incomplete() {
    let d = triggers("BG006", |v| *at(v, "spec.generation.stopStrings") = yaml("[]"), Some("generation:"));
    assert!(d["message"].as_str().unwrap().contains("stopStrings"));
    triggers(
        "BG006",
        |v| {
            at(v, "spec").as_mapping_mut().unwrap().remove("generation");
        },
        None,
    );
}

#[test]
fn bg007_tokenizer_or_template_not_pinned() {
    let d = triggers("BG007", |v| *at(v, "spec.model.artifacts.2.role") = "other".into(), None);
    assert!(d["message"].as_str().unwrap().contains("chat-template"));
    triggers(
        "BG007",
        |v| {
            at(v, "spec.model.artifacts.1").as_mapping_mut().unwrap().remove("sha256");
        },
        None,
    );
}

#[test]
fn bg008_no_startup_probe_restart_storm() {
    let d = triggers(
        "BG008",
        |v| {
            at(v, "spec.serving.probes").as_mapping_mut().unwrap().remove("startup");
        },
        Some("liveness:"),
    );
    // 0 + 10 × 3 = 30 s < 95 s measured.
    assert!(d["message"].as_str().unwrap().contains("30s"), "{d}");
    assert!(d["message"].as_str().unwrap().contains("95"), "{d}");
}

#[test]
fn bg009_readiness_tcp_only() {
    triggers("BG009", |v| *at(v, "spec.serving.probes.readiness") = yaml("{tcpSocket: {port: 8080}}"), Some("readiness:"));
}

#[test]
fn bg010_rollback_missing() {
    let d = triggers(
        "BG010",
        |v| {
            at(v, "spec").as_mapping_mut().unwrap().remove("rollback");
        },
        None,
    );
    assert_eq!(d["severity"], "warning");
}

#[test]
fn bg011_rollback_unresolvable() {
    triggers("BG011", |v| *at(v, "spec.rollback.bundle") = "../v0/release.yaml".into(), Some("bundle: ../v0"));
    triggers("BG011", |v| *at(v, "spec.rollback.releaseDigest") = format!("sha256:{}", "0".repeat(64)).into(), Some("releaseDigest"));
}

#[test]
fn bg011_rollback_target_changed_after_pinning() {
    let ex = Example::new();
    edit_yaml(&ex.v1(), |v| *at(v, "spec.serving.replicas") = 2.into());
    let out = lint(&ex);
    assert_eq!(out.code, 1);
    assert!(out.diag("BG011")["message"].as_str().unwrap().contains("has release digest"));
}

#[test]
fn bg012_malformed_sha() {
    triggers("BG012", |v| *at(v, "spec.model.artifacts.0.sha256") = "ABC".into(), Some("sha256: ABC"));
}

#[test]
fn bg013_startup_window_too_short() {
    triggers("BG013", |v| *at(v, "spec.serving.probes.startup.failureThreshold") = 3.into(), Some("startup:"));
}

#[test]
fn bg014_load_time_unmeasured() {
    triggers(
        "BG014",
        |v| {
            at(v, "spec.serving").as_mapping_mut().unwrap().remove("loadTimeSeconds");
        },
        None,
    );
}

#[test]
fn bg015_canary_plan_invalid() {
    let d = triggers("BG015", |v| *at(v, "spec.canary.steps") = yaml("[50, 10]"), Some("canary:"));
    assert!(d["message"].as_str().unwrap().contains("increasing"));
    triggers("BG015", |v| *at(v, "spec.canary.minSamples") = 0.into(), None);
    triggers("BG015", |v| *at(v, "spec.canary.window") = "soon".into(), None);
}

#[test]
fn bg016_prefix_version_mismatch() {
    triggers("BG016", |v| *at(v, "metadata.version") = "v3".into(), Some("storageUri"));
}

#[test]
fn bg017_identity_missing() {
    triggers(
        "BG017",
        |v| {
            at(v, "spec.serving").as_mapping_mut().unwrap().remove("identity");
        },
        None,
    );
    triggers("BG017", |v| *at(v, "spec.serving.identity.expect.0.digestOf") = "nope.bin".into(), None);
}

#[test]
fn bg018_progress_deadline_short() {
    triggers("BG018", |v| *at(v, "spec.serving.rollout.progressDeadlineSeconds") = 60.into(), Some("progressDeadlineSeconds"));
}

#[test]
fn bg019_unsupported_scheme() {
    triggers("BG019", |v| *at(v, "spec.model.storageUri") = "hdfs://nn/models/llm/v2/".into(), Some("storageUri"));
}

#[test]
fn severity_overrides_from_flags_and_config() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.runtime.image") = "registry.example.com/llm-serve:v2".into());
    let b = ex.v2();
    let b = b.to_str().unwrap();
    assert_eq!(ex.run(&["lint", b]).code, 1);
    // Allowed: gone entirely; warned: present but passing.
    let out = ex.run(&["lint", "--format", "json", "-A", "BG001", b]);
    assert_eq!(out.code, 0);
    assert!(!out.codes().contains(&"BG001".to_string()));
    let out = ex.run(&["lint", "--format", "json", "-W", "image-not-pinned", b]);
    assert_eq!(out.code, 0);
    assert_eq!(out.diag("BG001")["severity"], "warning");
    // Deny a warning-level code.
    ex.edit_v2(|v| *at(v, "spec.serving.probes.readiness") = yaml("{tcpSocket: {port: 8080}}"));
    let out = ex.run(&["lint", "--format", "json", "-A", "BG001", "-D", "BG009", b]);
    assert_eq!(out.code, 1);
    // Config file.
    let cfg = ex.path().join("bundlegate.yaml");
    std::fs::write(&cfg, "severity:\n  BG001: allow\n  readiness-tcp-only: allow\n").unwrap();
    let out = ex.run(&["lint", "--config", cfg.to_str().unwrap(), b]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Unknown code is an input error.
    let out = ex.run(&["lint", "-A", "BG999", b]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("BG999"));
}

#[test]
fn strict_parsing_names_file_line_column_and_field() {
    let ex = Example::new();
    let text = std::fs::read_to_string(ex.v2()).unwrap().replace("    quantization: bf16", "    quantisation: bf16");
    std::fs::write(ex.v2(), &text).unwrap();
    let out = lint(&ex);
    assert_eq!(out.code, 2);
    let s = &out.json()["steps"][0];
    assert_eq!(s["verdict"], "error");
    let msg = s["summary"].as_str().unwrap();
    let line = line_of(&text, "quantisation");
    assert!(msg.contains(&format!("release.yaml:{line}:")), "{msg}");
    assert!(msg.contains("spec.model"), "{msg}");
    assert!(msg.contains("unknown field `quantisation`"), "{msg}");
}

#[test]
fn bad_input_is_exit_2_never_a_panic() {
    let ex = Example::new();
    let cases = [
        ("", "expected exactly one YAML document, found 0"),
        ("apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n", "missing field"),
        ("- just\n- a list\n", "invalid type"),
        ("a: [unclosed\n", "invalid YAML"),
        ("apiVersion: other/v1\nkind: ReleaseBundle\nmetadata: {name: x, version: v1}\nspec: {runtime: {image: i, engine: {name: e, version: '1'}}, model: {storageUri: 's3://b/x/v1', artifacts: []}, serving: {format: deployment}}\n", "apiVersion"),
        ("---\na: 1\n---\nb: 2\n", "exactly one"),
        ("spec:\n  model:\n    artifacts:\n      - size: -1\n", ""),
    ];
    for (i, (text, want)) in cases.iter().enumerate() {
        let p = ex.path().join(format!("bad{i}.yaml"));
        std::fs::write(&p, text).unwrap();
        let out = ex.run(&["lint", "--format", "json", p.to_str().unwrap()]);
        assert_eq!(out.code, 2, "case {i}: {}", out.stdout);
        assert!(!out.stderr.contains("panicked"), "case {i}: {}", out.stderr);
        let summary = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
        assert!(summary.contains(&format!("bad{i}.yaml:")), "case {i}: {summary}");
        assert!(summary.contains(want), "case {i}: want {want:?} in {summary}");
    }
    let out = ex.run(&["lint", "missing.yaml"]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.contains("missing.yaml"));
}

#[test]
fn one_bad_file_does_not_hide_the_others() {
    let ex = Example::new();
    let bad = ex.path().join("bad.yaml");
    std::fs::write(&bad, "nope: 1\n").unwrap();
    let out = ex.run(&["lint", "--format", "json", bad.to_str().unwrap(), ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 2);
    let v = out.json();
    assert_eq!(v["steps"].as_array().unwrap().len(), 2);
    assert_eq!(v["steps"][1]["verdict"], "pass");
}

#[test]
fn every_format_renders() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.runtime.image") = "llm:latest".into());
    let b = ex.v2();
    let human = ex.run(&["lint", b.to_str().unwrap()]);
    assert_eq!(human.code, 1);
    assert!(human.stdout.contains("error[BG001 image-not-pinned]"), "{}", human.stdout);
    assert!(human.stdout.contains("release.yaml:"), "{}", human.stdout);
    let md = ex.run(&["lint", "--format", "markdown", b.to_str().unwrap()]);
    assert!(md.stdout.contains("| error | `BG001` image-not-pinned |"), "{}", md.stdout);
}

#[test]
fn release_digest_is_stable_and_ignores_formatting_and_rollback() {
    let ex = Example::new();
    let d1 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"].clone();
    // Reformatting (comments, key order) does not change the release.
    edit_yaml(&ex.v2(), |_| {});
    let d2 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"].clone();
    assert_eq!(d1, d2);
    ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = "../elsewhere.yaml".into());
    let d3 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"].clone();
    assert_eq!(d1, d3);
    // Any served change does.
    ex.edit_v2(|v| *at(v, "spec.generation.maxOutputTokens") = 513.into());
    let d4 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"].clone();
    assert_ne!(d1, d4);
    assert!(d1.as_str().unwrap().starts_with("sha256:"));
}

#[test]
fn every_code_is_documented_and_docs_are_in_sync() {
    let out = run(&["codes", "--format", "json"]);
    let body = out.json()["steps"][0]["details"][0]["body"].as_str().unwrap().to_string();
    let docs = std::fs::read_to_string(repo().join("docs/diagnostics.md")).unwrap();
    assert_eq!(docs, body, "docs/diagnostics.md is stale: run `cargo run -q -- codes --format json | jq -r '.steps[0].details[0].body' > docs/diagnostics.md`");
    // Every lint/verify code appears in some test in this crate.
    let mut tests = String::new();
    for e in std::fs::read_dir(repo().join("tests/it")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().map(|e| e == "rs").unwrap_or(false) {
            tests.push_str(&std::fs::read_to_string(p).unwrap());
        }
    }
    let codes = run(&["codes", "--format", "json"]).json()["steps"][0]["tables"][0]["rows"].clone();
    let mut untested = Vec::new();
    for row in codes.as_array().unwrap() {
        let code = row[0].as_str().unwrap();
        if !tests.contains(&format!("\"{code}\"")) {
            untested.push(code.to_string());
        }
    }
    assert!(untested.is_empty(), "codes without a test that names them: {untested:?}");
}
