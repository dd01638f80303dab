//! `verify-files`, the in-pod check of the files the model server opens,
//! against the example's real model folder: good files, a changed byte, a
//! missing file, a truncated file; the readiness probe; and lint's budget.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::*;

/// The artifact list the manifest carries, built from the example bundle.
fn manifest(ex: &Example) -> String {
    let b: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(ex.v2()).unwrap()).unwrap();
    let digest = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"].as_str().unwrap().to_string();
    let arts: Vec<Value> = b["spec"]["model"]["artifacts"].as_array().unwrap().iter().map(|a| json!({"path": a["path"], "sha256": a["sha256"], "size": a["size"]})).collect();
    json!({"releaseDigest": digest, "mode": "full", "artifacts": arts}).to_string()
}

fn verify(ex: &Example, root: &Path, extra: &[&str]) -> (Out, String) {
    let term = ex.path().join("termination-log");
    let _ = std::fs::remove_file(&term);
    let marker = ex.path().join("verified");
    let m = manifest(ex);
    let mut args = vec!["verify-files", "--format", "json", "--root", root.to_str().unwrap(), "--termination-log", term.to_str().unwrap(), "--marker", marker.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = run_in(ex.path(), &args, &[("BUNDLEGATE_ARTIFACTS", &m)]);
    (out, std::fs::read_to_string(&term).unwrap_or_default())
}

fn ready(ex: &Example) -> i32 {
    let marker = ex.path().join("verified");
    let m = manifest(ex);
    run_in(ex.path(), &["verify-files", "--ready", "--marker", marker.to_str().unwrap()], &[("BUNDLEGATE_ARTIFACTS", &m)]).code
}

#[test]
fn pod_verify_good_files_pass_and_the_probe_turns_ready() {
    let ex = Example::new();
    assert_eq!(ready(&ex), 1, "ready before any verification");
    let (out, term) = verify(&ex, &ex.store("v2"), &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(term.is_empty(), "{term}");
    assert!(out.json()["steps"][0]["summary"].as_str().unwrap().starts_with("5/5 artifact(s) OK"), "{}", out.stdout);
    assert_eq!(ready(&ex), 0);
}

#[test]
fn pod_verify_changed_missing_truncated_files_fail_with_both_digests() {
    let ex = Example::new();
    let root = ex.store("v2");
    verify(&ex, &root, &[]);
    assert_eq!(ready(&ex), 0);
    // One byte changed after the PR check.
    let ckpt = root.join("ckpt.pt");
    let mut bytes = std::fs::read(&ckpt).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&ckpt, &bytes).unwrap();
    let (out, term) = verify(&ex, &root, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(term.contains("DIGEST-MISMATCH ckpt.pt") && term.contains("sha256:20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586"), "{term}");
    assert!(term.matches("sha256:").count() >= 2, "both digests named: {term}");
    assert!(out.stderr.contains("DIGEST-MISMATCH ckpt.pt"), "the log names it too: {}", out.stderr);
    assert_eq!(out.diag("BG530")["field"], "ckpt.pt");
    assert_eq!(ready(&ex), 1, "a failed check must clear readiness");
    // Size-only mode does not see a same-size change: documented trade-off.
    assert_eq!(verify(&ex, &root, &["--mode", "size"]).0.code, 0);
    // Missing.
    std::fs::remove_file(root.join("tokenizer.json")).unwrap();
    let (out, term) = verify(&ex, &root, &[]);
    assert_eq!(out.code, 1);
    assert!(term.contains("MISSING tokenizer.json"), "{term}");
    // Truncated (a resumed or partial download).
    let g = root.join("clean_corpus.txt");
    let t = std::fs::read(&g).unwrap();
    std::fs::write(&g, &t[..t.len() / 2]).unwrap();
    let (out, term) = verify(&ex, &root, &[]);
    assert_eq!(out.code, 1);
    assert!(term.contains("SIZE-MISMATCH clean_corpus.txt") && term.contains("found 1235 bytes"), "{term}");
    assert_eq!(ready(&ex), 1);
}

#[test]
fn pod_verify_symlink_out_of_the_model_folder_is_not_followed() {
    let ex = Example::new();
    let root = ex.store("v2");
    let copy = ex.path().join("elsewhere.pt");
    std::fs::rename(root.join("ckpt.pt"), &copy).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&copy, root.join("ckpt.pt")).unwrap();
    let (out, term) = verify(&ex, &root, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(term.contains("UNREADABLE ckpt.pt") && term.contains("outside the model folder"), "{term}");
}

#[test]
fn pod_verify_bad_artifact_list_is_exit_2() {
    let ex = Example::new();
    for bad in ["", "not json", r#"{"releaseDigest":"x","artifacts":[]}"#, r#"{"releaseDigest":"x","artifacts":[{"path":"a","sha256":"XYZ","size":1}]}"#] {
        let out = run_in(ex.path(), &["verify-files", "--root", ".", "--marker", "m"], &[("BUNDLEGATE_ARTIFACTS", bad)]);
        assert_eq!(out.code, 2, "{bad:?} accepted: {}", out.stdout);
    }
}

#[test]
fn pod_verify_lint_budgets_hashing_and_says_it_is_not_rendered() {
    let ex = Example::new();
    // 100 GiB of weights at 500 MiB/s is 205 s of hashing on top of the 95 s load:
    // the example's 180 s startup window no longer covers it.
    ex.edit_v2(|v| *at(v, "spec.model.artifacts.0.size") = serde_yaml_ng::Value::from(100u64 << 30));
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(out.codes().contains(&"BG013".to_string()), "{}", out.stdout);
    // Asked for explicitly but not carried by the rendered pod: said, not skipped.
    ex.edit_v2(|v| *at(v, "spec.serving.verifyOnStart") = "full".into());
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(out.codes().contains(&"BG040".to_string()), "{}", out.stdout);
    ex.edit_v2(|v| *at(v, "spec.serving.verifyOnStart") = "off".into());
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(!out.codes().contains(&"BG013".to_string()) && !out.codes().contains(&"BG040".to_string()), "{}", out.stdout);
}
