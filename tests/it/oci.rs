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
fn registry_a_blob_deleted_from_storage_is_never_ok_and_named() {
    let Some(reg) = Registry::start(false) else { return };
    let (ex, _) = pushed(&reg, &repo().join("examples/store/llm-scratch/v2"), &FILES);
    let tokenizer = "sha256:c678eee617b9aba4ae2f7beaa2ddc236b3a3c6638b85f48e80c2b76f93b1b116";
    std::fs::remove_file(reg.blob_path(tokenizer)).unwrap();
    let out = verify(&ex, &reg.env(false));
    assert_ne!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_ne!(out.json()["verdict"], "pass");
    let st = status_of(&out, "tokenizer.json");
    assert!(st == "UNREADABLE" || st == "MISSING", "{st}: {}", out.stdout);
    let d = out.diag("BG106");
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
