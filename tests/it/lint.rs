//! Every lint code has a test here that triggers it on a realistic bundle and
//! checks its span points at the right line.

use serde_yaml_ng::Value;

use crate::support::*;

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
    let out = run(&[
        "lint",
        "--format",
        "json",
        "examples/llm-scratch/v2/release.yaml",
        "examples/llm-scratch/v1/release.yaml",
    ]);
    let v = out.json();
    // v1 has no rollback target (it is the first release): a warning, not an error.
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(v["steps"][0]["diagnostics"].as_array().unwrap().is_empty(), "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG010"]);
}

#[test]
fn bg001_image_not_pinned() {
    let d = triggers(
        "BG001",
        |v| *at(v, "spec.runtime.image") = "registry.example.com/llm-serve:latest".into(),
        Some("image:"),
    );
    assert!(d["message"].as_str().unwrap().contains("llm-serve:latest"));
}

#[test]
fn bg002_latest_prefix() {
    triggers(
        "BG002",
        |v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/latest/".into(),
        Some("storageUri"),
    );
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
    triggers(
        "BG009",
        |v| *at(v, "spec.serving.probes.readiness") = yaml("{tcpSocket: {port: 8080}}"),
        Some("readiness:"),
    );
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
    triggers(
        "BG011",
        |v| *at(v, "spec.rollback.releaseDigest") = format!("sha256:{}", "0".repeat(64)).into(),
        Some("releaseDigest"),
    );
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
    triggers(
        "BG018",
        |v| *at(v, "spec.serving.rollout.progressDeadlineSeconds") = 60.into(),
        Some("progressDeadlineSeconds"),
    );
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
    let d1 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
    // Reformatting (comments, key order) does not change the release.
    edit_yaml(&ex.v2(), |_| {});
    let d2 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
    assert_eq!(d1, d2);
    ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = "../elsewhere.yaml".into());
    let d3 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
    assert_eq!(d1, d3);
    // Any served change does.
    ex.edit_v2(|v| *at(v, "spec.generation.maxOutputTokens") = 513.into());
    let d4 = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
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
    // Every file of the suite, a command's folder (tests/it/watch/…) too.
    let mut tests = String::new();
    let mut dirs = vec![repo().join("tests/it")];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().map(|e| e == "rs").unwrap_or(false) {
                tests.push_str(&std::fs::read_to_string(p).unwrap());
            }
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

// ---- hostile and unlucky input (the bundle hardening issue) ------------------

fn v2_text() -> String {
    std::fs::read_to_string(repo().join("examples/llm-scratch/v2/release.yaml")).unwrap()
}

fn replace_once(text: &str, from: &str, to: &str) -> String {
    assert!(text.contains(from), "`{from}` not in the bundle");
    text.replacen(from, to, 1)
}

/// Lint with a deadline: the classes below used to hang or exhaust memory,
/// and a test must fail rather than wait forever.
fn lint_within(ex: &Example, args: &[&str], secs: u64) -> Out {
    run_within(ex.path(), args, &[], secs)
}

/// Write `text` as v2, lint it, and assert exit 2 with
/// `release.yaml:LINE:COL: FIELD:` where LINE is the line containing `needle`
/// and COL where `at` starts on it. Returns the message.
fn refused_at(ex: &Example, text: &str, needle: &str, at: &str, field: &str) -> String {
    std::fs::write(ex.v2(), text).unwrap();
    let out = lint_within(ex, &["lint", "--format", "json", ex.v2().to_str().unwrap()], 20);
    assert_eq!(out.code, 2, "{needle}: {}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    let summary = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
    let line = line_of(text, needle);
    let col = text.lines().nth(line - 1).unwrap().find(at).unwrap() + 1;
    assert!(
        summary.contains(&format!("release.yaml:{line}:{col}: {field}: ")),
        "want {line}:{col}: {field} in: {summary}"
    );
    summary
}

#[test]
fn bundle_non_finite_numbers_are_exit_2_at_the_value() {
    let ex = Example::new();
    let t = v2_text();
    for (from, to, needle, field) in [
        ("p95: 95", "p95: .nan", "p95: .nan", "spec.serving.loadTimeSeconds.p95"),
        ("maxAbsolute: 0.02", "maxAbsolute: .inf", "maxAbsolute: .inf", "spec.canary.gates[0].maxAbsolute"),
        (
            "maxRelativeIncrease: 0.20",
            "maxRelativeIncrease: -.Inf",
            "-.Inf",
            "spec.canary.gates[1].maxRelativeIncrease",
        ),
        ("cpu: \"2\"", "cpu: 1e999", "cpu: 1e999", "spec.serving.resources.requests.cpu"),
    ] {
        let at = to.split(": ").nth(1).unwrap();
        let msg = refused_at(&ex, &replace_once(&t, from, to), needle, at, field);
        assert!(msg.contains("not a finite number"), "{msg}");
    }
}

#[test]
fn bundle_nan_and_inf_gates_no_longer_share_one_digest() {
    // Both used to serialize as `null`, i.e. as "no bound": one identity for
    // three different bundles. Now they are refused, and finite bounds differ.
    let ex = Example::new();
    let t = v2_text();
    let digest = |text: String| {
        std::fs::write(ex.v2(), text).unwrap();
        ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()])
    };
    for v in [".nan", ".inf"] {
        let out = digest(replace_once(&t, "maxAbsolute: 0.02", &format!("maxAbsolute: {v}")));
        assert_eq!(out.code, 2, "{v}: {}", out.stdout);
        assert!(
            format!("{}{}", out.stdout, out.stderr).contains("release.yaml:95:22: spec.canary.gates[0].maxAbsolute: "),
            "{}",
            out.stderr
        );
    }
    let a = digest(replace_once(&t, "maxAbsolute: 0.02", "maxAbsolute: 0.1")).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
    let b = digest(replace_once(&t, "maxAbsolute: 0.02", "maxAbsolute: 0.10000000000000002")).json()["steps"][0]
        ["data"]["releaseDigest"]
        .clone();
    assert!(a.is_string() && b.is_string());
    assert_ne!(a, b);
}

#[test]
fn bundle_numbers_out_of_range_are_exit_2_never_a_panic() {
    let ex = Example::new();
    let t = v2_text();
    for (from, to, field) in [
        // These two used to panic (exit 101): Duration::from_secs_f64 and a u64 overflow.
        ("window: 30m", "window: 99999999999999999999999h", "spec.canary.window"),
        ("maxSurge: 25%", "maxSurge: '18446744073709551615%'", "spec.serving.rollout.maxSurge"),
        ("p95: 95", "p95: -5", "spec.serving.loadTimeSeconds.p95"),
        ("p95: 95", "p95: 1e12", "spec.serving.loadTimeSeconds.p95"),
        ("maxAbsolute: 0.02", "maxAbsolute: 1.5", "spec.canary.gates[0].maxAbsolute"),
        ("maxRelativeIncrease: 0.10", "maxRelativeIncrease: -0.1", "spec.canary.gates[0].maxRelativeIncrease"),
        ("replicas: 1", "replicas: 0", "spec.serving.replicas"),
        ("periodSeconds: 10", "periodSeconds: 0", "spec.serving.probes.startup.periodSeconds"),
        (
            "progressDeadlineSeconds: 600",
            "progressDeadlineSeconds: 4294967295",
            "spec.serving.rollout.progressDeadlineSeconds",
        ),
        // The min bounds were not range-checked at all: a gate that could never fail.
        (
            "maxRelativeIncrease: 0.15",
            "maxRelativeIncrease: 0.15\n        minAbsolute: -1",
            "spec.canary.gates[2].minAbsolute",
        ),
        (
            "maxRelativeIncrease: 0.15",
            "maxRelativeIncrease: 0.15\n        minRelativeDecrease: 1.5",
            "spec.canary.gates[2].minRelativeDecrease",
        ),
        (
            "maxRelativeIncrease: 0.15",
            "maxRelativeIncrease: 0.15\n        minRelativeDecrease: -0.1",
            "spec.canary.gates[2].minRelativeDecrease",
        ),
        ("maxAbsolute: 0.02", "maxAbsolute: 0.02\n        minAbsolute: 2", "spec.canary.gates[0].minAbsolute"),
    ] {
        let needle = to.lines().last().unwrap();
        let key = needle.trim_start().split(':').next().unwrap();
        let msg = refused_at(&ex, &replace_once(&t, from, to), needle, key, field);
        assert!(msg.contains("out of range"), "{msg}");
    }
}

#[test]
fn bundle_duplicate_keys_are_refused_naming_both_lines() {
    let ex = Example::new();
    let t = v2_text();
    // Nested map (last one used to win silently), top level, inside a list item.
    for (line, dup, field) in [
        ("        cpu: \"2\"\n", "        cpu: \"1\"\n", "spec.serving.resources.requests.cpu"),
        ("kind: ReleaseBundle\n", "kind: ReleaseBundle\n", "kind"),
        ("        role: tokenizer\n", "        role: weights\n", "spec.model.artifacts[1].role"),
    ] {
        let text = replace_once(&t, line, &format!("{line}{dup}"));
        std::fs::write(ex.v2(), &text).unwrap();
        let out = lint(&ex);
        assert_eq!(out.code, 2, "{}", out.stdout);
        let msg = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
        let first = line_of(&text, line.trim_end());
        let col = dup.len() - dup.trim_start().len() + 1;
        assert!(msg.contains(&format!("release.yaml:{}:{col}: {field}: duplicate key", first + 1)), "{msg}");
        assert!(
            msg.contains(&format!("first at line {first}")) && msg.contains(&format!("again at line {}", first + 1)),
            "{msg}"
        );
    }
}

#[test]
fn rollback_bundle_with_duplicate_keys_is_unresolvable_naming_its_lines() {
    let ex = Example::new();
    let v1 = std::fs::read_to_string(ex.v1()).unwrap();
    // Same value twice: the digest is unchanged, so this used to lint clean.
    let text = replace_once(&v1, "    replicas: 1\n", "    replicas: 1\n    replicas: 1\n");
    std::fs::write(ex.v1(), &text).unwrap();
    let out = lint(&ex);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG011");
    let ev = d["evidence"].to_string();
    let l = line_of(&text, "replicas: 1");
    assert!(
        ev.contains(&format!("release.yaml:{}:5: spec.serving.replicas", l + 1)) && ev.contains("duplicate key"),
        "{ev}"
    );
}

#[test]
fn bundle_alias_bombs_and_deep_nesting_are_refused_fast() {
    let ex = Example::new();
    let t0 = std::time::Instant::now();
    std::fs::write(ex.v2(), bundlegate::fuzzing::alias_bomb(9, 10)).unwrap();
    let out = lint_within(&ex, &["lint", "--format", "json", ex.v2().to_str().unwrap()], 20);
    assert_eq!(out.code, 2);
    // The 8th `*l3` of line 5 is where the expansion passes 100 000 nodes.
    let msg = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
    assert!(msg.contains("release.yaml:5:45: l4[7]: ") && msg.contains("alias amplification"), "{msg}");
    let deep = bundlegate::fuzzing::deeply_nested(200);
    std::fs::write(ex.v2(), &deep).unwrap();
    let out = lint_within(&ex, &["lint", "--format", "json", ex.v2().to_str().unwrap()], 20);
    assert_eq!(out.code, 2);
    // Root, metadata, labels and n0…n60 are 64 levels: n61's value is the 65th.
    let msg = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
    let line = line_of(&deep, "n61:") + 1;
    assert!(
        msg.contains(&format!("release.yaml:{line}:"))
            && msg.contains(": metadata.labels.n0.n1.n2.")
            && msg.contains("n60.n61: nested deeper than 64"),
        "{msg}"
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10));
}

#[test]
fn oversized_and_non_regular_bundles_are_refused_before_reading() {
    let ex = Example::new();
    // A valid bundle padded with a 5 MiB comment: used to be read whole and pass.
    let big = format!("{}#{}\n", v2_text(), "x".repeat(5 << 20));
    std::fs::write(ex.v2(), big).unwrap();
    let out = lint_within(&ex, &["lint", "--format", "json", ex.v2().to_str().unwrap()], 20);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let s = out.json()["steps"][0]["summary"].as_str().unwrap().to_string();
    assert!(s.contains("release.yaml") && s.contains("over the limit of 4194304 bytes"), "{s}");
    let out = lint_within(&ex, &["lint", "--format", "json", "/dev/zero"], 20);
    assert_eq!(out.code, 2);
    assert!(
        out.json()["steps"][0]["summary"].as_str().unwrap().contains("/dev/zero: cannot read: not a regular file"),
        "{}",
        out.stdout
    );
    let fifo = ex.path().join("fifo.yaml");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let out = lint_within(&ex, &["lint", "--format", "json", fifo.to_str().unwrap()], 20);
    assert_eq!(out.code, 2);
    assert!(out.stdout.contains("not a regular file"), "{}", out.stdout);
}

#[test]
fn rollback_target_reads_are_bounded() {
    let ex = Example::new();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    assert!(std::process::Command::new("mkfifo").arg(dir.join("prev.fifo")).status().unwrap().success());
    std::fs::write(
        dir.join("big.yaml"),
        format!("{}#{}\n", std::fs::read_to_string(ex.v1()).unwrap(), "x".repeat(5 << 20)),
    )
    .unwrap();
    for (target, want) in [("prev.fifo", "not a regular file"), ("big.yaml", "over the limit")] {
        ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = target.into());
        let out = lint_within(&ex, &["lint", "--format", "json", ex.v2().to_str().unwrap()], 20);
        assert_eq!(out.code, 1, "{}", out.stdout);
        let d = out.diag("BG011");
        assert!(d["evidence"].to_string().contains(want), "{d}");
        assert_eq!(d["field"], "spec.rollback.bundle");
    }
}

#[test]
fn rollback_target_evidence_never_quotes_the_file() {
    let ex = Example::new();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    std::fs::write(dir.join(".env"), "API_TOKEN=s3cr3t-token-value\nDB_PASSWORD=hunter2hunter2\n").unwrap();
    std::fs::write(dir.join("vars.yaml"), "API_TOKEN: s3cr3t-token-value\nDB_PASSWORD: hunter2hunter2\n").unwrap();
    std::fs::write(dir.join("half.yaml"), "apiVersion: bundlegate.dev/v1\nkind: s3cr3t-token-value\n").unwrap();
    // `KEY="value"` lines: serde quotes the whole scalar with `\"` escapes,
    // and the quote stripping (which toggled on every `"`) printed the value.
    std::fs::write(dir.join("q.env"), "API_TOKEN=s3cr3t-token-value\nDB_PASSWORD=\"hunter2hunter2\"\n").unwrap();
    std::fs::write(
        dir.join("q.json"),
        "{\"apiVersion\": \"bundlegate.dev/v1\", \"kind\": \"x\\\"hunter2hunter2\\\"\", \"DB_PASSWORD\": 1}\n",
    )
    .unwrap();
    for target in [".env", "vars.yaml", "half.yaml", "q.env", "q.json"] {
        ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = target.into());
        for fmt in ["json", "human", "markdown"] {
            let out = ex.run(&["lint", "--format", fmt, ex.v2().to_str().unwrap()]);
            assert_eq!(out.code, 1, "{}", out.stdout);
            for secret in ["s3cr3t", "hunter2", "API_TOKEN", "DB_PASSWORD"] {
                assert!(
                    !out.stdout.contains(secret) && !out.stderr.contains(secret),
                    "{target} {fmt} leaks {secret}:\n{}",
                    out.stdout
                );
            }
            if fmt == "json" {
                // Still says where (file, line, column, a schema field) and
                // what kind of problem, never any text of the file.
                let ev = out.diag("BG011")["evidence"].to_string();
                assert!(
                    ev.contains(&format!("{target}:1:1: (document)"))
                        || ev.contains(&format!("{target}:2:7: kind"))
                        || ev.contains(&format!("{target}:1:")),
                    "{ev}"
                );
                assert!(ev.contains("the file is not a release bundle (line "), "{ev}");
            }
        }
    }
}

#[test]
fn rollback_target_outside_the_tree_is_refused_unread() {
    let ex = Example::without_repository();
    // A valid copy of v1 outside the release tree: the digest matches, so
    // every one of these used to lint clean.
    let outside = ex.path().join("outside/v1");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::copy(ex.v1(), outside.join("release.yaml")).unwrap();
    let abs = outside.join("release.yaml").to_str().unwrap().to_string();
    std::os::unix::fs::symlink(outside.join("release.yaml"), ex.v2().parent().unwrap().join("prev.yaml")).unwrap();
    for target in [abs.as_str(), "../../outside/v1/release.yaml", "prev.yaml", "../v1/../../outside/v1/release.yaml"] {
        ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = target.into());
        let out = lint(&ex);
        assert_eq!(out.code, 1, "{target}: {}", out.stdout);
        let d = out.diag("BG020");
        assert_eq!(d["field"], "spec.rollback.bundle");
        assert_eq!(
            d["span"]["line"].as_u64().unwrap() as usize,
            line_of(&std::fs::read_to_string(ex.v2()).unwrap(), "bundle: "),
            "{d}"
        );
        assert!(!out.codes().contains(&"BG011".to_string()), "{}", out.stdout);
    }
    // A symlink that stays inside is followed as before.
    std::fs::remove_file(ex.v2().parent().unwrap().join("prev.yaml")).unwrap();
    std::os::unix::fs::symlink("../v1/release.yaml", ex.v2().parent().unwrap().join("prev.yaml")).unwrap();
    ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = "prev.yaml".into());
    assert_eq!(lint(&ex).code, 0);
    // Inside a git work tree the root is the work tree: a sibling service folder is inside it.
    assert!(std::process::Command::new("git").args(["init", "-q"]).current_dir(ex.path()).status().unwrap().success());
    ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = "../../outside/v1/release.yaml".into());
    let out = lint(&ex);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn hostile_names_are_exit_2_naming_the_field() {
    let ex = Example::new();
    let t = v2_text();
    for (from, to, field) in [
        ("  version: v2\n", "  version: ../../etc\n", "metadata.version"),
        ("  version: v2\n", "  version: v2/../../x\n", "metadata.version"),
        ("  version: v2\n", "  version: v..2\n", "metadata.version"),
        ("  version: v2\n", format!("  version: v{}\n", "2".repeat(63)).leak(), "metadata.version"),
        ("  namespace: ai-lab\n", "  namespace: Kube_System\n", "metadata.namespace"),
        ("  namespace: ai-lab\n", "  namespace: -ai\n", "metadata.namespace"),
        ("  name: llm-scratch\n", "  name: 9lives\n", "metadata.name"),
    ] {
        let key = to.trim_start().split(':').next().unwrap();
        refused_at(&ex, &replace_once(&t, from, to), to.trim_end(), key, field);
    }
}

/// Every form serde_yaml_ng reads as a float was a way around the
/// non-finite check, which looked at plain scalars only: a `!!float`-tagged
/// literal block (`minAbsolute: !!float |-` then `.nan`), quoted or folded
/// scalar, or the verbatim tag. The gate then passed every comparison.
#[test]
fn bundle_tagged_non_finite_numbers_are_exit_2_at_the_value() {
    let ex = Example::new();
    let t = v2_text();
    let gate = "      - metric: gpu_memory_bytes\n        maxRelativeIncrease: 0.15\n";
    for (value, needle, at) in [
        ("!!float |-\n          .nan", "          .nan", ".nan"),
        ("!!float >-\n          -.inf", "          -.inf", "-.inf"),
        ("!!float '.inf'", "minAbsolute: !!float '.inf'", "'.inf'"),
        ("!!float \".nan\"", "minAbsolute: !!float \".nan\"", "\".nan\""),
        ("!<tag:yaml.org,2002:float> .inf", "minAbsolute: !<tag:", ".inf"),
    ] {
        let text = replace_once(&t, gate, &format!("{gate}        minAbsolute: {value}\n"));
        let msg = refused_at(&ex, &text, needle, at, "spec.canary.gates[2].minAbsolute");
        assert!(msg.contains("not a finite number"), "{value}: {msg}");
    }
    // The same spelling quoted without the tag is text: refused as a number of the wrong type, never read as NaN.
    let text = replace_once(&t, gate, &format!("{gate}        minAbsolute: '.nan'\n"));
    std::fs::write(ex.v2(), &text).unwrap();
    let out = lint(&ex);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        out.json()["steps"][0]["summary"].as_str().unwrap().contains("spec.canary.gates[2].minAbsolute: invalid type"),
        "{}",
        out.stdout
    );
}

/// The min bounds in their range (see the out-of-range rows above) parse;
/// lint then judges the gate's direction (BG306 for a lower-is-better metric).
#[test]
fn bundle_min_bounds_in_range_are_accepted() {
    let ex = Example::new();
    let text = replace_once(
        &v2_text(),
        "maxRelativeIncrease: 0.15\n",
        "maxRelativeIncrease: 0.15\n        minRelativeDecrease: 0.5\n        minAbsolute: 0\n",
    );
    std::fs::write(ex.v2(), &text).unwrap();
    let out = lint(&ex);
    assert_eq!((out.code, out.codes()), (1, vec!["BG306".to_string()]), "{}", out.stdout);
}

/// An alias used as a key names the anchored key's text: `{&c cpu: "64",
/// *c : "1"}` is `cpu` twice, and linted PASS with cpu 1. A severity set
/// twice in `--config` (`BG001: deny` then `BG001: allow`, or by code and by
/// name) was silently last-wins.
#[test]
fn alias_keys_and_repeated_config_severities_are_duplicates() {
    let ex = Example::new();
    let t = v2_text();
    let text = replace_once(&t, "        cpu: \"2\"\n", "        &c cpu: \"64\"\n        *c : \"1\"\n");
    let msg = refused_at(&ex, &text, "*c :", "*c", "spec.serving.resources.requests.cpu");
    assert!(msg.contains("duplicate key `cpu`"), "{msg}");
    std::fs::write(ex.v2(), &t).unwrap();
    let c1 = ex.path().join("c1.yaml");
    std::fs::write(&c1, "severity:\n  BG001: deny\n  BG001: allow\n").unwrap();
    let out = ex.run(&["lint", "--config", c1.to_str().unwrap(), ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("c1.yaml:3:3: severity.BG001: duplicate key `BG001`"), "{}", out.stderr);
    std::fs::write(&c1, "severity:\n  BG001: deny\n  image-not-pinned: allow\n").unwrap();
    let out = ex.run(&["lint", "--config", c1.to_str().unwrap(), ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("BG001 is set twice"), "{}", out.stderr);
}

/// Requests and limits Kubernetes' API server refuses: a fractional GPU, a
/// GPU requested without a limit, a GPU request other than its limit, a
/// cpu request above its limit. lint and preflight both fail them at the
/// field (both passed, and the pod was never created).
#[test]
fn lint_and_preflight_refuse_what_kubernetes_refuses_in_resources() {
    type Edit = fn(&mut serde_yaml_ng::Value);
    let cases: [(Edit, &str, &str); 4] = [
        (
            |v| {
                at(v, "spec.serving.resources.requests")["nvidia.com/gpu"] = yaml("500m");
                at(v, "spec.serving.resources.limits")["nvidia.com/gpu"] = yaml("500m");
            },
            "BG023",
            "spec.serving.resources.requests.nvidia.com/gpu",
        ),
        (
            |v| {
                at(v, "spec.serving.resources.limits").as_mapping_mut().unwrap().remove("nvidia.com/gpu");
            },
            "BG024",
            "spec.serving.resources.limits.nvidia.com/gpu",
        ),
        (
            |v| at(v, "spec.serving.resources.limits")["nvidia.com/gpu"] = yaml("2"),
            "BG025",
            "spec.serving.resources.requests.nvidia.com/gpu",
        ),
        (|v| at(v, "spec.serving.resources.limits")["cpu"] = yaml("1"), "BG025", "spec.serving.resources.requests.cpu"),
    ];
    let snapshot = repo().join("examples/cluster/roomy.yaml");
    for (edit, code, field) in cases {
        let ex = Example::new();
        let p = ex.edit_v2(edit);
        let out = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 1, "{code}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.diag(code)["field"], field, "{code}: {}", out.stdout);
        let out =
            ex.run(&["preflight", "--format", "json", p.to_str().unwrap(), "--snapshot", snapshot.to_str().unwrap()]);
        assert_eq!(out.code, 1, "{code}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.json()["steps"][0]["verdict"], "fail", "{code}: {}", out.stdout);
        assert_eq!(out.diag(code)["field"], field, "{code}: {}", out.stdout);
    }
}
