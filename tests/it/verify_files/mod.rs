//! `verify-files`, the in-pod check of the files the model server opens,
//! against the example's real model folder: good files, a changed byte, a
//! missing file, a truncated file; the readiness probe; and lint's budget.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::*;

/// The artifact list the manifest carries, built from the example bundle.
pub(crate) fn manifest(ex: &Example) -> String {
    let b: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(ex.v2()).unwrap()).unwrap();
    let digest = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let arts: Vec<Value> = b["spec"]["model"]["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| json!({"path": a["path"], "sha256": a["sha256"], "size": a["size"]}))
        .collect();
    json!({"releaseDigest": digest, "mode": "full", "artifacts": arts}).to_string()
}

fn verify(ex: &Example, root: &Path, extra: &[&str]) -> (Out, String) {
    let term = ex.path().join("termination-log");
    let _ = std::fs::remove_file(&term);
    let marker = ex.path().join("verified");
    let m = manifest(ex);
    let mut args = vec![
        "verify-files",
        "--format",
        "json",
        "--root",
        root.to_str().unwrap(),
        "--termination-log",
        term.to_str().unwrap(),
        "--marker",
        marker.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run_in(ex.path(), &args, &[("BUNDLEGATE_ARTIFACTS", &m)]);
    (out, std::fs::read_to_string(&term).unwrap_or_default())
}

fn ready(ex: &Example) -> i32 {
    let marker = ex.path().join("verified");
    let m = manifest(ex);
    run_in(
        ex.path(),
        &["verify-files", "--ready", "--marker", marker.to_str().unwrap()],
        &[("BUNDLEGATE_ARTIFACTS", &m)],
    )
    .code
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
    assert!(
        term.contains("DIGEST-MISMATCH ckpt.pt")
            && term.contains("sha256:20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586"),
        "{term}"
    );
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
    for bad in [
        "",
        "not json",
        r#"{"releaseDigest":"x","artifacts":[]}"#,
        r#"{"releaseDigest":"x","artifacts":[{"path":"a","sha256":"XYZ","size":1}]}"#,
    ] {
        let out =
            run_in(ex.path(), &["verify-files", "--root", ".", "--marker", "m"], &[("BUNDLEGATE_ARTIFACTS", bad)]);
        assert_eq!(out.code, 2, "{bad:?} accepted: {}", out.stdout);
    }
}

#[test]
fn pod_verify_lint_budgets_hashing_and_off_removes_it() {
    let ex = Example::new();
    // 100 GiB of weights at 500 MiB/s is 205 s of hashing on top of the 95 s load:
    // the example's 180 s startup window no longer covers it.
    ex.edit_v2(|v| *at(v, "spec.model.artifacts.0.size") = serde_yaml_ng::Value::from(100u64 << 30));
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(out.codes().contains(&"BG013".to_string()), "{}", out.stdout);
    // KServe pods carry the verifier, so lint has nothing to say about it.
    ex.edit_v2(|v| *at(v, "spec.serving.verifyOnStart") = "full".into());
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(!out.codes().contains(&"BG040".to_string()), "{}", out.stdout);
    ex.edit_v2(|v| *at(v, "spec.serving.verifyOnStart") = "off".into());
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(
        !out.codes().contains(&"BG013".to_string()) && !out.codes().contains(&"BG040".to_string()),
        "{}",
        out.stdout
    );
}

// ---- the verifier exactly as the rendered manifest declares it -----------------------------

/// The rendered verifier container of `format`: the pod spec's
/// `initContainers` entry named `bundlegate-verify`, with the pod's volumes.
fn rendered_verifier(ex: &Example, format: &str) -> (Value, Vec<Value>) {
    let bundle = ex.edit_v2(|b| {
        *at(b, "spec.serving.format") = yaml(&format!("\"{format}\""));
        if format == "deployment" {
            *at(b, "spec.serving.volumes") = yaml(
                "[{name: models, claimName: llm-models, accessMode: ReadOnlyMany, mountPath: /models, readOnly: true}]",
            );
            *at(b, "spec.serving.modelDir") = yaml("/models/llm-scratch/v2");
        }
    });
    let out = ex.run(&["render", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let body = out.json()["steps"][0]["details"][0]["body"].as_str().unwrap().to_string();
    let lint = ex.run(&["lint", "--format", "json", bundle.to_str().unwrap()]);
    assert!(
        !lint.codes().contains(&"BG040".to_string()),
        "the {format} pod carries the verifier, so lint must not say it does not:\n{}",
        lint.stdout
    );
    for doc in serde_yaml_ng::Deserializer::from_str(&body) {
        let v: Value = serde::Deserialize::deserialize(doc).unwrap();
        let spec = v.pointer("/spec/template/spec").or_else(|| v.pointer("/spec/predictor")).cloned();
        let Some(spec) = spec else { continue };
        let ics = spec["initContainers"].as_array().cloned().unwrap_or_default();
        if let Some(c) = ics.into_iter().find(|c| c["name"] == "bundlegate-verify") {
            return (c, spec["volumes"].as_array().cloned().unwrap_or_default());
        }
    }
    panic!("no bundlegate-verify init container in the {format} render:\n{body}");
}

/// Map the pod's paths to local ones: the model folder, /tmp (the marker),
/// the termination log, and the image's binary.
fn map_path(arg: &str, model_dir: &str, root: &Path, tmp: &Path) -> String {
    if let Some(rest) = arg.strip_prefix(model_dir) {
        return format!("{}{rest}", root.display());
    }
    if let Some(rest) = arg.strip_prefix("/etc/bundlegate/trust") {
        return format!("{}{rest}", tmp.join("trust").display());
    }
    match arg {
        "/usr/local/bin/bundlegate" => bin().display().to_string(),
        "/dev/termination-log" => tmp.join("termination-log").display().to_string(),
        _ => match arg.strip_prefix("/tmp/") {
            Some(rest) => tmp.join(rest).display().to_string(),
            None => arg.to_string(),
        },
    }
}

struct Declared {
    args: Vec<String>,
    env: Vec<(String, String)>,
    probe: Vec<String>,
}

fn declared(c: &Value, model_dir: &str, root: &Path, tmp: &Path) -> Declared {
    let strs = |v: &Value| {
        v.as_array().unwrap().iter().map(|s| map_path(s.as_str().unwrap(), model_dir, root, tmp)).collect::<Vec<_>>()
    };
    Declared {
        args: strs(&c["args"]),
        env: c["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["name"].as_str().unwrap().to_string(), e["value"].as_str().unwrap().to_string()))
            .collect(),
        probe: strs(&c["readinessProbe"]["exec"]["command"]),
    }
}

fn probe(d: &Declared) -> i32 {
    let mut c = std::process::Command::new(&d.probe[0]);
    c.args(&d.probe[1..]).envs(d.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    c.output().unwrap().status.code().unwrap_or(-1)
}

/// Run the container's args (the image's entrypoint is the binary) with the
/// container's env; `--wait` shortened so a missing file is reported at once.
fn start(d: &Declared, wait: &str) -> std::process::Child {
    let mut args = d.args.clone();
    if let Some(i) = args.iter().position(|a| a == "--wait") {
        args[i + 1] = wait.to_string();
    }
    std::process::Command::new(bin())
        .args(&args)
        .envs(d.env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn wait_exit(child: &mut std::process::Child, secs: u64) -> Option<i32> {
    let t = std::time::Instant::now();
    while t.elapsed() < std::time::Duration::from_secs(secs) {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s.code().unwrap_or(-1));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    None
}

#[test]
fn rendered_verifier_gates_readiness_in_every_serving_format() {
    for format in ["kserve-modelspec", "kserve-custom", "deployment"] {
        let ex = Example::new();
        let (c, volumes) = rendered_verifier(&ex, format);
        // A native sidecar: it starts before KServe's storage-initializer
        // (appended after user init containers) and stays for the probe.
        assert_eq!(c["restartPolicy"], "Always", "{format}: {c:#}");
        assert_eq!(c["volumeMounts"][0]["readOnly"], true, "{format}: {c:#}");
        let mount = c["volumeMounts"][0]["name"].as_str().unwrap();
        assert!(
            volumes.iter().any(|v| v["name"] == mount),
            "{format}: the verifier's volume `{mount}` is declared in the pod: {volumes:#?}"
        );
        if format != "deployment" {
            assert!(
                volumes.iter().any(|v| v["name"] == "kserve-provision-location" && v.get("emptyDir").is_some()),
                "{format}: KServe's model volume is declared so the webhook reuses it"
            );
        }
        assert_eq!(c["resources"]["limits"]["memory"], "64Mi", "{format}");
        let model_dir = {
            let args = c["args"].as_array().unwrap();
            let i = args.iter().position(|a| a == "--root").unwrap();
            args[i + 1].as_str().unwrap().to_string()
        };
        let tmp = tempfile::tempdir().unwrap();
        let root = ex.store("v2");
        let d = declared(&c, &model_dir, &root, tmp.path());
        assert_eq!(probe(&d), 1, "{format}: not Ready before the check");

        // Good files: the sidecar stays up and the probe turns Ready.
        let mut child = start(&d, "5s");
        let t = std::time::Instant::now();
        while probe(&d) != 0 && t.elapsed() < std::time::Duration::from_secs(30) {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        assert_eq!(probe(&d), 0, "{format}: Ready once every artifact is OK");
        assert_eq!(child.try_wait().unwrap(), None, "{format}: the sidecar keeps running after a pass");
        child.kill().unwrap();
        let _ = child.wait();

        // One byte changed after the PR check: never Ready, the termination
        // log names the file with both digests.
        let ckpt = root.join("ckpt.pt");
        let mut bytes = std::fs::read(&ckpt).unwrap();
        bytes[100] ^= 1;
        std::fs::write(&ckpt, &bytes).unwrap();
        let mut child = start(&d, "5s");
        assert_eq!(wait_exit(&mut child, 60), Some(1), "{format}: a changed byte ends the verifier with exit 1");
        assert_eq!(probe(&d), 1, "{format}: a changed file keeps the pod not Ready");
        let term = std::fs::read_to_string(tmp.path().join("termination-log")).unwrap_or_default();
        assert!(term.contains("DIGEST-MISMATCH ckpt.pt"), "{format}: {term}");
        bytes[100] ^= 1;
        std::fs::write(&ckpt, &bytes).unwrap();

        // Truncated, then missing.
        let tok = root.join("tokenizer.json");
        let orig = std::fs::read(&tok).unwrap();
        std::fs::write(&tok, &orig[..orig.len() / 2]).unwrap();
        let mut child = start(&d, "1s");
        assert_eq!(wait_exit(&mut child, 60), Some(1), "{format}: truncated");
        assert!(
            std::fs::read_to_string(tmp.path().join("termination-log"))
                .unwrap()
                .contains("SIZE-MISMATCH tokenizer.json"),
            "{format}"
        );
        assert_eq!(probe(&d), 1);
        std::fs::remove_file(&tok).unwrap();
        let mut child = start(&d, "1s");
        assert_eq!(wait_exit(&mut child, 60), Some(1), "{format}: missing");
        assert!(
            std::fs::read_to_string(tmp.path().join("termination-log")).unwrap().contains("MISSING tokenizer.json"),
            "{format}"
        );
        assert_eq!(probe(&d), 1);
    }
}

#[test]
fn verify_on_start_off_renders_no_verifier_and_deployment_without_model_dir_is_reported() {
    let ex = Example::new();
    let off = ex.edit_v2(|b| *at(b, "spec.serving.verifyOnStart") = yaml("\"off\""));
    let out = ex.run(&["render", off.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("bundlegate-verify"), "{}", out.stdout);
    // The default (full) on a Deployment that does not say where the files are.
    let dep = ex.edit_v2(|b| {
        *at(b, "spec.serving.format") = yaml("deployment");
        *at(b, "spec.serving.verifyOnStart") = yaml("full");
    });
    let lint = ex.run(&["lint", "--format", "json", dep.to_str().unwrap()]);
    let d = lint.diag("BG040");
    assert!(d["message"].as_str().unwrap().contains("modelDir"), "{d:#}");
    let render = ex.run(&["render", dep.to_str().unwrap()]);
    assert!(!render.stdout.contains("bundlegate-verify"), "{}", render.stdout);
}

/// BG040 is one finding wherever it is found: lint (the format cannot carry
/// the verifier) and render (a template left it out) say the same thing
/// about the same pod, with the cause after it.
#[test]
fn a_template_without_the_verifier_is_bg040_worded_as_lint_words_it() {
    let ex = Example::new();
    let tpl = ex.path().join("tpl");
    std::fs::create_dir_all(&tpl).unwrap();
    let text = std::fs::read_to_string(repo().join("templates/kserve-custom.yaml.hbs")).unwrap();
    let without = text.replace("    initContainers: [{{{json verifier}}}]\n", "");
    assert_ne!(without, text, "the built-in template renders the verifier as an init container");
    std::fs::write(tpl.join("kserve-custom.yaml.hbs"), without).unwrap();
    let out = ex.run(&["render", "--format", "json", "--templates", tpl.to_str().unwrap(), ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 0, "BG040 is a warning by default: {}\n{}", out.stdout, out.stderr);
    let render = out.diag("BG040")["message"].as_str().unwrap().to_string();
    assert!(render.contains("template leaves the `bundlegate-verify` container out of a pod template"), "{render}");
    let dep = ex.edit_v2(|b| *at(b, "spec.serving.format") = yaml("deployment"));
    let lint = ex.run(&["lint", "--format", "json", dep.to_str().unwrap()]).diag("BG040")["message"]
        .as_str()
        .unwrap()
        .to_string();
    let head =
        |m: &str| m.split(" pod runs no file verifier").next().unwrap().split("rendered").next().unwrap().to_string();
    assert_eq!(head(&render), head(&lint), "\n{render}\n{lint}");
    for m in [&render, &lint] {
        assert!(
            m.contains("pod runs no file verifier") && m.contains("could become Ready on bytes that changed"),
            "{m}"
        );
    }
}

mod not_files;

/// The pod's own signature check, as rendered under a policy with
/// `podTrustConfigMap`: the verifier carries both signatures and the
/// platform's ConfigMap of keys (mounted as Kubernetes mounts one: each key a
/// symlink into `..data`); it checks them before hashing. Signed by an
/// allowed key → Ready, and the log names the signer; the key rotated out
/// of the ConfigMap, the artifact list edited on the cluster after signing
/// (one sha256), no signature in the environment, or a garbled one → exit
/// 1, never Ready, the termination message saying why. No file is hashed
/// then: the list nobody vouched for is not worth checking against.
#[test]
fn pod_verify_checks_the_signature_under_the_platforms_trust_before_hashing() {
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = crate::signing::openssl_keys(keys.path());
    std::fs::copy(&public, ex.path().join("release.pub.pem")).unwrap();
    let policy = ex.path().join("policy.yaml");
    std::fs::write(
        &policy,
        "signature:\n  mode: required\n  publicKeys: [release.pub.pem]\n  podTrustConfigMap: bundlegate-trust\n",
    )
    .unwrap();
    let signed = ex.run(&["sign", "llm-scratch/v2/release.yaml", "--key", key.to_str().unwrap()]);
    assert_eq!(signed.code, 0, "{}\n{}", signed.stdout, signed.stderr);
    let out =
        ex.run(&["render", "--format", "json", "--config", policy.to_str().unwrap(), "llm-scratch/v2/release.yaml"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let body = out.json()["steps"][0]["details"][0]["body"].as_str().unwrap().to_string();
    let isvc: Value = serde_yaml_ng::Deserializer::from_str(&body)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).unwrap())
        .find(|v| v["kind"] == "InferenceService")
        .unwrap();
    let spec = &isvc["spec"]["predictor"];
    let c = spec["initContainers"].as_array().unwrap().iter().find(|c| c["name"] == "bundlegate-verify").unwrap();
    assert!(
        spec["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|v| v["name"] == "bundlegate-trust" && v["configMap"]["name"] == "bundlegate-trust"),
        "the platform's ConfigMap is a volume of the pod: {spec:#}"
    );
    assert!(
        c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["mountPath"] == "/etc/bundlegate/trust" && m["readOnly"] == true),
        "{c:#}"
    );
    let tmp = tempfile::tempdir().unwrap();
    let root = ex.store("v2");
    let d = declared(c, "/mnt/models", &root, tmp.path());
    assert!(d.args.windows(2).any(|w| w[0] == "--trust"), "{:?}", d.args);
    let sig_env =
        d.env.iter().find(|(k, _)| k == "BUNDLEGATE_SIGNATURE").map(|(_, v)| v.clone()).expect("signatures in the env");
    let sigs: Value = serde_json::from_str(&sig_env).unwrap();
    assert!(sigs["model.sig"].is_object() && sigs["release.sig"].is_object(), "{sigs:#}");

    // The ConfigMap as the kubelet mounts it.
    let trust = tmp.path().join("trust");
    let mount = |pem: &Path| {
        let _ = std::fs::remove_dir_all(&trust);
        std::fs::create_dir_all(trust.join("..2026_12_07_20_00_00.1")).unwrap();
        std::fs::copy(pem, trust.join("..2026_12_07_20_00_00.1/release.pub.pem")).unwrap();
        std::os::unix::fs::symlink("..2026_12_07_20_00_00.1", trust.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/release.pub.pem", trust.join("release.pub.pem")).unwrap();
    };
    let term = || std::fs::read_to_string(tmp.path().join("termination-log")).unwrap_or_default();
    let stderr = |child: std::process::Child| {
        let o = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&o.stderr).into_owned()
    };

    // Signed by the allowed key: Ready, and the log names the signer.
    mount(&public);
    let mut child = start(&d, "5s");
    let t = std::time::Instant::now();
    while probe(&d) != 0 && t.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    assert_eq!(probe(&d), 0, "Ready once the signature and every artifact are OK");
    child.kill().unwrap();
    let log = stderr(child);
    assert!(log.contains("signed by key") && log.contains("release.pub.pem"), "{log}");

    let fails = |d: &Declared, why: &str, want: &str| {
        let mut child = start(d, "1s");
        assert_eq!(wait_exit(&mut child, 60), Some(1), "{why}: exit 1");
        assert_eq!(probe(d), 1, "{why}: never Ready");
        let t = term();
        assert!(t.contains("signature: ") && t.contains(want), "{why}: the termination message says why: {t}");
        let log = stderr(child);
        assert!(!log.contains("checking "), "{why}: nothing hashed: {log}");
    };
    // The key rotated out of the platform's ConfigMap.
    let other = tempfile::tempdir().unwrap();
    let (_, other_public) = crate::signing::openssl_keys(other.path());
    mount(&other_public);
    fails(&d, "another key", "does not verify under any allowed key");
    mount(&public);
    // The list edited on the cluster after signing (kubectl edit): one sha256.
    let mut edited = Declared { args: d.args.clone(), env: d.env.clone(), probe: d.probe.clone() };
    for (k, v) in edited.env.iter_mut() {
        if k == "BUNDLEGATE_ARTIFACTS" {
            let mut m: Value = serde_json::from_str(v).unwrap();
            m["artifacts"][0]["sha256"] = json!("0".repeat(64));
            *v = m.to_string();
        }
    }
    fails(&edited, "a pinned sha256 edited after signing", "the bundle pins");
    // No signature in the environment, then a garbled one.
    let mut unsigned = Declared { args: d.args.clone(), env: d.env.clone(), probe: d.probe.clone() };
    unsigned.env.retain(|(k, _)| k != "BUNDLEGATE_SIGNATURE");
    fails(&unsigned, "unsigned", "has no model.sig in the pod's environment");
    unsigned.env.push(("BUNDLEGATE_SIGNATURE".into(), "{\"model.sig\": 7}".into()));
    fails(&unsigned, "garbled", "BUNDLEGATE_SIGNATURE[model.sig]");
    // An empty trust folder: the tool cannot check anything (exit 2).
    let _ = std::fs::remove_dir_all(&trust);
    std::fs::create_dir_all(&trust).unwrap();
    let mut child = start(&d, "1s");
    assert_eq!(wait_exit(&mut child, 60), Some(2), "an empty trust folder is exit 2");
    assert!(stderr(child).contains("holds no .pem public key"));
}
