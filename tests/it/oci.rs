//! Models in OCI registries: KServe's `oci://`, `oci+native://` and
//! `oci+fetch://` storage URIs are read by the one scheme table, pinned by
//! their manifest digest (a tag alone is BG026, not the unknown-scheme
//! BG019), rendered unchanged; verify reads a real registry (CNCF
//! Distribution, `support::registry`) holding ModelPack artifacts pushed
//! with oras: the manifest by its digest, one `HEAD` per raw layer, no blob
//! byte, and every fault is something other than PASS.

use crate::support::registry::{Registry, PASSWORD, USER};
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
fn render_passes_the_reference_unchanged_and_an_unreachable_registry_is_never_a_pass() {
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
    assert!(out.stdout.contains("registry for") && out.stdout.contains("unreachable"), "{}", out.stdout);
}

// ---- a real registry ---------------------------------------------------------

const FILES: [&str; 5] =
    ["ckpt.pt", "tokenizer.json", "chat_template.jinja", "generation_config.json", "clean_corpus.txt"];

/// The example's v2 files pushed as a ModelPack artifact (`files` of
/// `folder`), and the example's v2 bundle pointed at its manifest digest.
fn pushed(reg: &Registry, folder: &std::path::Path, files: &[&str]) -> (Example, String) {
    let digest = reg.push("models/llm-scratch:v2", folder, files);
    let ex = Example::new();
    let uri = format!("oci://{}/models/llm-scratch:v2@{digest}", reg.host());
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = uri.into());
    (ex, digest)
}

fn verify(ex: &Example, env: &[(&str, String)]) -> Out {
    let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_within(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &e, 120)
}

fn status_of(out: &Out, path: &str) -> String {
    let v = out.json();
    let rows =
        v["steps"][0]["data"]["artifacts"].as_array().unwrap_or_else(|| panic!("no rows: {}", out.stdout)).clone();
    let row = rows.iter().find(|r| r["path"] == path).unwrap_or_else(|| panic!("no row {path}: {}", out.stdout));
    row["status"].as_str().unwrap().to_string()
}

#[test]
fn registry_verify_passes_from_the_manifest_with_one_head_per_file_and_no_blob_read() {
    let Some(reg) = Registry::start(false) else { return };
    let (ex, digest) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let before = reg.log();
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["verdict"], "pass");
    let v = out.json();
    let step = &v["steps"][0];
    assert_eq!(step["data"]["manifestDigest"], digest.as_str());
    for row in step["data"]["artifacts"].as_array().unwrap() {
        assert_eq!(row["status"], "OK", "{row}");
        assert!(row["note"].as_str().unwrap().contains("digest from manifest, blob present"), "{row}");
    }
    // The registry's access log: one HEAD per file, the manifest GET, and
    // no GET of any blob.
    let log = reg.log()[before.len()..].to_string();
    let access: Vec<&str> = log.lines().filter(|l| l.contains("\"") && l.contains(" HTTP/1.1\"")).collect();
    let blob_gets = access.iter().filter(|l| l.contains("\"GET /v2/models/llm-scratch/blobs/")).count();
    let heads = access.iter().filter(|l| l.contains("\"HEAD /v2/models/llm-scratch/blobs/")).count();
    assert_eq!(blob_gets, 0, "{log}");
    assert_eq!(heads, FILES.len(), "{log}");
    assert!(access.iter().any(|l| l.contains(&format!("GET /v2/models/llm-scratch/manifests/{digest}"))), "{log}");
}

#[test]
fn registry_a_changed_file_is_a_digest_mismatch_and_an_absent_one_missing() {
    let Some(reg) = Registry::start(false) else { return };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo().join("examples/store/llm-scratch/v2"), dir.path());
    let mut ckpt = std::fs::read(dir.path().join("ckpt.pt")).unwrap();
    ckpt[0] ^= 0xff;
    std::fs::write(dir.path().join("ckpt.pt"), ckpt).unwrap();
    let (ex, _) = pushed(&reg, dir.path(), &FILES);
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    assert_eq!(status_of(&out, "tokenizer.json"), "OK");
    assert!(out.codes().contains(&"BG103".to_string()), "{}", out.stdout);
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES[..4]);
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "MISSING");
    assert_ne!(out.json()["verdict"], "pass");
}

#[test]
fn registry_a_raw_blob_deleted_from_storage_is_missing_and_named() {
    let Some(reg) = Registry::start(false) else { return };
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let tokenizer = "sha256:c678eee617b9aba4ae2f7beaa2ddc236b3a3c6638b85f48e80c2b76f93b1b116";
    std::fs::remove_file(reg.blob_path(tokenizer)).unwrap();
    let out = verify(&ex, &reg.env(false));
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_ne!(out.json()["verdict"], "pass");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "tokenizer.json"), "MISSING");
    assert!(note_of(&out, "tokenizer.json").contains("the registry does not have it"), "{}", out.stdout);
    let d = out.diag("BG101");
    assert!(d["message"].as_str().unwrap().contains("tokenizer.json"), "{d}");
    assert_eq!(status_of(&out, "ckpt.pt"), "OK");
}

#[test]
fn registry_stopped_is_never_a_pass() {
    let Some(mut reg) = Registry::start(false) else { return };
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    reg.stop();
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["steps"][0]["verdict"], "error");
    assert!(out.json()["steps"][0]["summary"].as_str().unwrap().contains("unreachable"), "{}", out.stdout);
}

#[test]
fn registry_missing_or_wrong_credentials_are_named_and_never_printed() {
    let Some(reg) = Registry::start(true) else { return };
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let empty = tempfile::tempdir().unwrap();
    let no_docker = ("DOCKER_CONFIG", empty.path().to_str().unwrap().to_string());
    // None at all.
    let out = verify(&ex, &[reg.env(false), vec![no_docker.clone()]].concat());
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("credentials missing or refused"), "{}", out.stdout);
    assert!(out.stdout.contains("no credentials were given"), "{}", out.stdout);
    // Wrong ones.
    let wrong = "wrong-password-do-not-print";
    let env = [
        reg.env(false),
        vec![no_docker.clone(), ("BUNDLEGATE_OCI_USERNAME", USER.into()), ("BUNDLEGATE_OCI_PASSWORD", wrong.into())],
    ]
    .concat();
    let out = verify(&ex, &env);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("credentials missing or refused"), "{}", out.stdout);
    assert!(out.stdout.contains("BUNDLEGATE_OCI_USERNAME/BUNDLEGATE_OCI_PASSWORD"), "{}", out.stdout);
    for o in [&out.stdout, &out.stderr] {
        assert!(!o.contains(wrong) && !o.contains(PASSWORD), "a secret was printed: {o}");
    }
    // The right ones, from the environment and from a Docker config.
    let out = verify(&ex, &[reg.env(true), vec![no_docker]].concat());
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(PASSWORD) && !out.stderr.contains(PASSWORD));
    let docker = tempfile::tempdir().unwrap();
    let auth = base64_of(&format!("{USER}:{PASSWORD}"));
    let cfg = format!(r#"{{"auths": {{"{}": {{"auth": "{auth}"}}}}}}"#, reg.host());
    std::fs::write(docker.path().join("config.json"), cfg).unwrap();
    let env = [reg.env(false), vec![("DOCKER_CONFIG", docker.path().to_str().unwrap().to_string())]].concat();
    let out = verify(&ex, &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
}

fn base64_of(s: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(s)
}

// ---- archive layers, modelcars, --deep ------------------------------------

/// The registry's access-log lines for blobs of the test repository: GETs, HEADs.
fn blob_requests(log: &str) -> (usize, usize) {
    let access: Vec<&str> = log.lines().filter(|l| l.contains(" HTTP/1.1\"")).collect();
    let n =
        |verb: &str| access.iter().filter(|l| l.contains(&format!("\"{verb} /v2/models/llm-scratch/blobs/"))).count();
    (n("GET"), n("HEAD"))
}

fn note_of(out: &Out, path: &str) -> String {
    let v = out.json();
    let rows = v["steps"][0]["data"]["artifacts"].as_array().unwrap().clone();
    let row = rows.iter().find(|r| r["path"] == path).unwrap_or_else(|| panic!("no row {path}: {}", out.stdout));
    row["note"].as_str().unwrap_or_default().to_string()
}

/// A ModelPack artifact with a raw layer and tar, tar+gzip and tar+zstd
/// folder layers (the last as `kit pack --use-model-pack` writes one: KitOps
/// itself ships no binary here, so oras pushes the same layer): every file
/// inside is hashed from the streamed layer, the raw one is one HEAD;
/// `--deep` reads the raw blob too.
#[test]
fn registry_archive_layers_are_walked_and_each_file_hashed() {
    let Some(reg) = Registry::start(false) else { return };
    let layers = [
        "ckpt.pt",
        "tar:chat_template.jinja",
        "tar+gzip:generation_config.json",
        "tar+zstd:tokenizer.json,clean_corpus.txt",
    ];
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &layers);
    let before = reg.log().len();
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["verdict"], "pass");
    for f in &FILES[1..] {
        assert_eq!(status_of(&out, f), "OK");
        assert!(note_of(&out, f).contains("hashed inside layer sha256:"), "{}", out.stdout);
    }
    assert!(note_of(&out, "ckpt.pt").contains("blob present (not read)"));
    assert_eq!(blob_requests(&reg.log()[before..]), (3, 1), "three layers walked, one raw blob HEADed");
    let before = reg.log().len();
    let env = reg.env(false);
    let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_within(ex.path(), &["verify", "--deep", "--format", "json", ex.v2().to_str().unwrap()], &e, 120);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(note_of(&out, "ckpt.pt").contains("blob read whole"), "{}", out.stdout);
    assert_eq!(blob_requests(&reg.log()[before..]), (4, 0), "--deep GETs the raw blob instead of a HEAD");
}

/// A raw blob's bytes changed in the registry's storage (same size): the
/// default verify trusts the manifest and the HEAD (documented); `--deep`
/// reads the bytes and says DIGEST-MISMATCH.
#[test]
fn registry_deep_sees_raw_bytes_changed_in_storage() {
    let Some(reg) = Registry::start(false) else { return };
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let ckpt =
        reg.blob_path(&("sha256:".to_string() + &sha256_file(&repo().join("examples/store/llm-scratch/v2/ckpt.pt"))));
    let mut bytes = std::fs::read(&ckpt).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&ckpt, bytes).unwrap();
    let env = reg.env(false);
    let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_within(ex.path(), &["verify", "--deep", "--format", "json", ex.v2().to_str().unwrap()], &e, 120);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    assert!(out.stdout.contains("BG103"), "the finding is artifact-digest-mismatch (BG103): {}", out.stdout);
    assert_eq!(status_of(&out, "tokenizer.json"), "OK");
}

fn sha256_file(p: &std::path::Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}

/// A KServe modelcar (a plain image, the model under `/models`), pushed
/// with oras: a later layer overrides an earlier one, a whiteout deletes
/// the file below it (MISSING), a symbolic link is refused unread (BG108),
/// the OS files outside `/models` are not the model's.
#[test]
fn registry_modelcar_layers_override_whiteouts_delete_and_links_are_refused() {
    let Some(reg) = Registry::start(false) else { return };
    let store = repo().join("examples/store/llm-scratch/v2");
    let tmp = tempfile::tempdir().unwrap();
    let changed = tmp.path().join("ckpt.pt");
    let mut ckpt = std::fs::read(store.join("ckpt.pt")).unwrap();
    ckpt[0] ^= 0xff;
    std::fs::write(&changed, ckpt).unwrap();
    let os_file = tmp.path().join("os-release");
    std::fs::write(&os_file, "ID=debian\n").unwrap();
    let rest = "tokenizer.json,chat_template.jinja,generation_config.json,clean_corpus.txt";
    let base = format!("tar+gzip:ckpt.pt@{},/etc/os-release@{},{rest}", changed.display(), os_file.display());
    let original = format!("tar+gzip:ckpt.pt,{rest}");
    // The lower layer's changed ckpt.pt is overridden by the original above it.
    let (ex, _) = pushed(&reg, &store, &["--modelcar", &base, "tar+zstd:ckpt.pt"]);
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "ckpt.pt"), "OK");
    // The other way round: the changed one is what the image holds.
    let top = format!("tar:ckpt.pt@{}", changed.display());
    let (ex, _) = pushed(&reg, &store, &["--modelcar", &original, &top]);
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    // A whiteout and a link.
    let (ex, _) =
        pushed(&reg, &store, &["--modelcar", &base, "tar+zstd:ckpt.pt,.wh.clean_corpus.txt,tok->/etc/passwd"]);
    let out = verify(&ex, &reg.env(false));
    assert_ne!(out.json()["verdict"], "pass", "{}", out.stdout);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "MISSING");
    assert_eq!(status_of(&out, "tokenizer.json"), "OK");
    let d = out.diag("BG108");
    assert!(d["message"].as_str().unwrap().contains("symbolic link to `/etc/passwd`"), "{d}");
}

/// A TCP proxy in front of the registry that cuts every connection
/// `after` bytes into the answer to the first blob GET it forwards: the
/// registry stopping mid-blob, deterministically.
fn cutting_proxy(upstream: u16, after: usize) -> u16 {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { return };
            let seen = std::sync::Arc::new(AtomicBool::new(false));
            let (mut c2, mut s2, seen2) = (c.try_clone().unwrap(), s.try_clone().unwrap(), seen.clone());
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                while let Ok(n) = c2.read(&mut buf) {
                    if n == 0 || s2.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    if String::from_utf8_lossy(&buf[..n]).contains("GET /v2/models/llm-scratch/blobs/") {
                        seen2.store(true, Ordering::SeqCst);
                    }
                }
            });
            std::thread::spawn(move || {
                let mut buf = [0u8; 16384];
                let mut sent = 0;
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 || c.write_all(&buf[..n]).is_err() {
                        break;
                    }
                    if seen.load(Ordering::SeqCst) {
                        sent += n;
                        if sent > after {
                            let _ = c.shutdown(std::net::Shutdown::Both);
                            let _ = s.shutdown(std::net::Shutdown::Both);
                            break;
                        }
                    }
                }
            });
        }
    });
    port
}

/// The registry stops sending in the middle of an archive layer: its files
/// are NOT CHECKED (BG109), the step never PASS.
#[test]
fn registry_stopped_mid_blob_is_never_a_pass() {
    let Some(reg) = Registry::start(false) else { return };
    let tmp = tempfile::tempdir().unwrap();
    let pad = tmp.path().join("pad");
    std::fs::write(&pad, (0..4u32 << 20).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect::<Vec<u8>>())
        .unwrap();
    let layer = format!("tar:aaa-padding.bin@{},{}", pad.display(), FILES.join(","));
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &[&layer]);
    let port = cutting_proxy(reg.port, 256 << 10);
    let host = format!("127.0.0.1:{port}");
    ex.edit_v2(|v| {
        let uri = at(v, "spec.model.storageUri").as_str().unwrap().replace(&reg.host(), &host);
        *at(v, "spec.model.storageUri") = uri.into();
    });
    let out = verify(&ex, &[("BUNDLEGATE_OCI_INSECURE_REGISTRIES", host)]);
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_ne!(out.json()["verdict"], "pass");
    assert_eq!(status_of(&out, "ckpt.pt"), "UNREADABLE", "{}", out.stdout);
    assert!(out.codes().contains(&"BG109".to_string()), "{}", out.stdout);
    assert!(out.stdout.contains("stopped sending"), "{}", out.stdout);
}

// ---- publish, audit, and the faults of a pinned reference --------------------

fn run_env(ex: &Example, args: &[&str], env: &[(&'static str, String)]) -> Out {
    let e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    run_within(ex.path(), args, &e, 120)
}

/// `publish --to oci://` into a fresh example: the storage URI the bundle
/// now records.
fn publish(reg: &Registry, ex: &Example, to_tag: &str) -> Out {
    let src = repo().join("examples/store/llm-scratch/v2");
    let to = format!("oci://{}/models/llm-scratch{to_tag}", reg.host());
    let v2 = ex.v2();
    let args = ["publish", src.to_str().unwrap(), "--to", &to, "--bundle", v2.to_str().unwrap(), "--format", "json"];
    run_env(ex, &args, &reg.env(true))
}

fn storage_uri(ex: &Example) -> String {
    let v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(ex.v2()).unwrap()).unwrap();
    v["spec"]["model"]["storageUri"].as_str().unwrap().to_string()
}

/// publish writes a ModelPack artifact of raw layers (streamed from disk)
/// and records `…:tag@sha256:<manifest digest>` in the bundle, comments
/// kept; oras (KServe's `oci+fetch` client) pulls the files back byte for
/// byte; the config is valid against the ModelPack config schema; verify
/// then PASSes from the manifest without one blob GET.
#[test]
fn registry_publish_writes_a_modelpack_artifact_oras_pulls_and_verify_passes_unread() {
    let Some(reg) = Registry::start(true) else { return };
    let ex = Example::new();
    let out = publish(&reg, &ex, ":v2");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let uri = storage_uri(&ex);
    let prefix = format!("oci://{}/models/llm-scratch:v2@sha256:", reg.host());
    assert!(uri.starts_with(&prefix), "{uri}");
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    assert!(text.contains("# Versioned prefix;"), "the bundle's comments are kept: {text}");
    let digest = uri[uri.find('@').unwrap() + 1..].to_string();
    // The manifest as stored: ModelPack, one raw layer per file, by role.
    let manifest: Value = serde_json::from_slice(&std::fs::read(reg.blob_path(&digest)).unwrap()).unwrap();
    assert_eq!(manifest["mediaType"], "application/vnd.oci.image.manifest.v1+json");
    assert_eq!(manifest["artifactType"], "application/vnd.cncf.model.manifest.v1+json");
    assert_eq!(manifest["config"]["mediaType"], "application/vnd.cncf.model.config.v1+json");
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), FILES.len());
    let kind_of = |path: &str| {
        let l = layers.iter().find(|l| l["annotations"]["org.cncf.model.filepath"] == path).unwrap();
        l["mediaType"].as_str().unwrap().to_string()
    };
    assert_eq!(kind_of("ckpt.pt"), "application/vnd.cncf.model.weight.v1.raw");
    assert_eq!(kind_of("tokenizer.json"), "application/vnd.cncf.model.weight.config.v1.raw");
    assert_eq!(kind_of("clean_corpus.txt"), "application/vnd.cncf.model.dataset.v1.raw");
    let config_digest = manifest["config"]["digest"].as_str().unwrap();
    let config: Value = serde_json::from_slice(&std::fs::read(reg.blob_path(config_digest)).unwrap()).unwrap();
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/reference/modelpack/config-schema.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).expect("the ModelPack config schema compiles");
    let errors: Vec<String> = v.iter_errors(&config).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}: {config}");
    assert_eq!(config["modelfs"]["type"], "layers");
    let diff_ids: Vec<&Value> = config["modelfs"]["diffIds"].as_array().unwrap().iter().collect();
    let layer_digests: Vec<&Value> = layers.iter().map(|l| &l["digest"]).collect();
    assert_eq!(diff_ids, layer_digests, "one diffId per layer, a raw layer its own");
    // oras pulls the files back, byte for byte.
    let pulled = tempfile::tempdir().unwrap();
    reg.pull("models/llm-scratch:v2", pulled.path());
    for f in FILES {
        let want = std::fs::read(repo().join("examples/store/llm-scratch/v2").join(f)).unwrap();
        assert_eq!(std::fs::read(pulled.path().join(f)).unwrap(), want, "{f}");
    }
    // verify: PASS from the manifest, zero raw-blob bytes read.
    let before = reg.log().len();
    let out = verify(&ex, &reg.env(true));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["verdict"], "pass");
    assert_eq!(out.json()["steps"][0]["data"]["bytesHashed"], 0);
    assert_eq!(blob_requests(&reg.log()[before..]), (0, FILES.len()), "no blob GET, one HEAD per file");
    assert!(!out.codes().contains(&"BG112".to_string()), "the tag still names the release: {}", out.stdout);
}

/// A tag that already names another manifest is refused before anything
/// is uploaded: the tag and the bundle are untouched. Publishing the same
/// files again to the same tag is the same manifest, accepted.
#[test]
fn registry_publish_refuses_a_tag_taken_by_another_manifest() {
    let Some(reg) = Registry::start(false) else { return };
    let other = reg.push("models/llm-scratch:v2", &repo().join("examples/store/llm-scratch/v2"), &FILES[..4]);
    let ex = Example::new();
    let bundle_before = std::fs::read(ex.v2()).unwrap();
    let before = reg.log().len();
    let out = publish(&reg, &ex, ":v2");
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("already names manifest") && out.stderr.contains(&other), "{}", out.stderr);
    assert_eq!(std::fs::read(ex.v2()).unwrap(), bundle_before, "the bundle is untouched");
    let log = reg.log()[before..].to_string();
    assert!(!log.contains("\"POST /v2/models/llm-scratch/blobs/uploads/"), "nothing uploaded: {log}");
    assert!(!log.contains("\"PUT /v2/models/llm-scratch/manifests/"), "the tag is untouched: {log}");
    // The tag still names the other manifest: oras pulls its four files.
    let pulled = tempfile::tempdir().unwrap();
    reg.pull("models/llm-scratch:v2", pulled.path());
    assert!(!pulled.path().join("clean_corpus.txt").exists());
    // A fresh tag takes it; the same files again are the same manifest.
    let out = publish(&reg, &ex, ":v3");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let first = storage_uri(&ex);
    let ex2 = Example::new();
    let out = publish(&reg, &ex2, ":v3");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(storage_uri(&ex2), first, "the same files make the same manifest");
}

fn audit(ex: &Example, env: &[(&'static str, String)]) -> Out {
    let cache = ex.path().join("audit-cache");
    let v2 = ex.v2();
    let args =
        ["audit", "--format", "json", "--progress", "never", "--cache", cache.to_str().unwrap(), v2.to_str().unwrap()];
    run_env(ex, &args, env)
}

/// The audit's step for the v2 bundle (its verify, as the audit runs it).
fn audit_verify(out: &Out) -> Value {
    let v = out.json();
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == "audit" && s["target"].as_str().is_some_and(|t| t.ends_with("v2/release.yaml")))
        .unwrap_or_else(|| panic!("no audit step for the bundle: {}", out.stdout))
        .clone()
}

fn row_status(step: &Value, path: &str) -> String {
    let rows = step["data"]["artifacts"].as_array().unwrap();
    let row = rows.iter().find(|r| r["path"] == path).unwrap_or_else(|| panic!("no row {path}: {step}"));
    row["status"].as_str().unwrap().to_string()
}

/// audit of a registry-stored release: a moved tag changes nothing (the
/// digest rules) but is a note (BG112); a raw blob gone is MISSING
/// (BG101); the manifest gone makes every file MISSING.
#[test]
fn registry_audit_reports_a_moved_tag_and_a_gone_blob_or_manifest_as_missing() {
    let Some(reg) = Registry::start(false) else { return };
    let ex = Example::new();
    let out = publish(&reg, &ex, ":v2");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let uri = storage_uri(&ex);
    let digest = uri[uri.find('@').unwrap() + 1..].to_string();
    let out = audit(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.codes().contains(&"BG112".to_string()), "{}", out.stdout);
    // The tag moved to another manifest: the pinned one is still audited.
    let other = reg.push("models/llm-scratch:v2", &repo().join("examples/store/llm-scratch/v2"), &FILES[..4]);
    let out = audit(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let step = audit_verify(&out);
    assert_eq!(step["verdict"], "pass", "{step}");
    assert_eq!(row_status(&step, "clean_corpus.txt"), "OK");
    let d = out.diag("BG112");
    assert_eq!(d["severity"], "note", "{d}");
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains(&other) && msg.contains(&digest), "{msg}");
    // A raw blob gone: MISSING, named.
    let tokenizer = "sha256:c678eee617b9aba4ae2f7beaa2ddc236b3a3c6638b85f48e80c2b76f93b1b116";
    std::fs::remove_file(reg.blob_path(tokenizer)).unwrap();
    let out = audit(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let step = audit_verify(&out);
    assert_eq!(row_status(&step, "tokenizer.json"), "MISSING");
    assert_eq!(row_status(&step, "ckpt.pt"), "OK");
    assert!(out.diag("BG101")["message"].as_str().unwrap().contains("tokenizer.json"));
    // The manifest gone: every file MISSING.
    reg.forget_manifest("models/llm-scratch", &digest);
    let out = audit(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let step = audit_verify(&out);
    for f in FILES {
        assert_eq!(row_status(&step, f), "MISSING", "{step}");
    }
    assert!(step["summary"].as_str().unwrap().contains("no manifest of that digest"), "{step}");
}

/// A pinned digest naming a manifest of another media type (an OCI index,
/// a Docker schema 2 manifest) is refused in words, never read as a model.
#[test]
fn registry_a_manifest_of_another_media_type_is_never_a_pass() {
    let Some(reg) = Registry::start(false) else { return };
    let (ex, digest) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let manifest: Value = serde_json::from_slice(&std::fs::read(reg.blob_path(&digest)).unwrap()).unwrap();
    let size = std::fs::metadata(reg.blob_path(&digest)).unwrap().len();
    let index = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest, "size": size}],
    });
    let layer = &manifest["layers"][0];
    let docker = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": {"mediaType": "application/vnd.docker.container.image.v1+json",
                   "digest": manifest["config"]["digest"], "size": manifest["config"]["size"]},
        "layers": [{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
                    "digest": layer["digest"], "size": layer["size"]}],
    });
    for (tag, doc) in [("index", index), ("docker", docker)] {
        let media = doc["mediaType"].as_str().unwrap().to_string();
        let d = reg.put_manifest("models/llm-scratch", tag, &media, &serde_json::to_vec(&doc).unwrap());
        ex.edit_v2(|v| *at(v, "spec.model.storageUri") = format!("oci://{}/models/llm-scratch@{d}", reg.host()).into());
        let out = verify(&ex, &reg.env(false));
        assert_eq!(out.code, 2, "{tag}: {}\n{}", out.stdout, out.stderr);
        assert_ne!(out.json()["verdict"], "pass");
        assert!(out.stdout.contains(&format!("media type `{media}` is not an OCI image manifest")), "{}", out.stdout);
    }
}

/// A tag pointing elsewhere: the digest rules both ways. The bundle pins
/// the release and the tag now names a changed model: verify reads the
/// pinned manifest (PASS) and says the tag moved (BG112); the bundle pins
/// the changed model and the tag names the reviewed one: DIGEST-MISMATCH,
/// whatever the tag says.
#[test]
fn registry_a_tag_pointing_elsewhere_is_never_followed() {
    let Some(reg) = Registry::start(false) else { return };
    let store = repo().join("examples/store/llm-scratch/v2");
    let good = reg.push("models/llm-scratch:good", &store, &FILES);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&store, dir.path());
    let mut ckpt = std::fs::read(dir.path().join("ckpt.pt")).unwrap();
    ckpt[0] ^= 0xff;
    std::fs::write(dir.path().join("ckpt.pt"), ckpt).unwrap();
    let changed = reg.push("models/llm-scratch:v2", dir.path(), &FILES);
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.model.storageUri") = format!("oci://{}/models/llm-scratch:v2@{good}", reg.host()).into()
    });
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["steps"][0]["data"]["manifestDigest"], good.as_str());
    assert!(out.diag("BG112")["message"].as_str().unwrap().contains(&changed), "{}", out.stdout);
    ex.edit_v2(|v| {
        *at(v, "spec.model.storageUri") = format!("oci://{}/models/llm-scratch:good@{changed}", reg.host()).into()
    });
    let out = verify(&ex, &reg.env(false));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_ne!(out.json()["verdict"], "pass");
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    let codes = out.codes();
    assert!(codes.contains(&"BG103".to_string()) && codes.contains(&"BG112".to_string()), "{}", out.stdout);
}
