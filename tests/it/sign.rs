//! `bundlegate sign`, judged by the OpenSSF reference tool: `model_signing
//! verify key` (model-signing 1.1.1 from PyPI, `BUNDLEGATE_MODEL_SIGNING`,
//! installed by scripts/install-test-deps) accepts `model.sig` against the
//! store folder the bundle names, and refuses it once a byte of a file
//! changes, for a key made by openssl as its docs say.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::*;

/// The reference verifier, or `None` where the servers are skipped.
fn model_signing() -> Option<PathBuf> {
    match std::env::var_os("BUNDLEGATE_MODEL_SIGNING") {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() => None,
        None => panic!("BUNDLEGATE_MODEL_SIGNING is not set: run the tests through scripts/test (scripts/install-test-deps installs model-signing)"),
    }
}

/// A P-256 key pair made by openssl: `key.pem` (SEC1, with the EC
/// PARAMETERS block `ecparam -genkey` writes) and `pub.pem`.
fn openssl_keys(dir: &Path) -> (PathBuf, PathBuf) {
    let key = dir.join("key.pem");
    let public = dir.join("pub.pem");
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(Command::new("openssl").args(["ecparam", "-name", "prime256v1", "-genkey", "-out"]).arg(&key));
    ok(Command::new("openssl")
        .args(["ec", "-pubout", "-in"])
        .arg(&key)
        .arg("-out")
        .arg(&public)
        .stderr(std::process::Stdio::null()));
    (key, public)
}

fn verify_with_reference(tool: &Path, folder: &Path, public: &Path, sig: &Path) -> (bool, String) {
    let o = Command::new(tool)
        .args(["verify", "key"])
        .arg(folder)
        .arg("--public_key")
        .arg(public)
        .arg("--signature")
        .arg(sig)
        .output()
        .unwrap();
    (o.status.success(), format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn the_reference_verifier_accepts_what_sign_writes_and_refuses_a_changed_file() {
    let Some(tool) = model_signing() else { return };
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(keys.path());
    let out = run_in(
        ex.path(),
        &["sign", "llm-scratch/v2/release.yaml", "--key", key.to_str().unwrap(), "--format", "json"],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(v["steps"][0]["verdict"], "pass", "{v:#}");
    let sig = ex.path().join("llm-scratch/v2/model.sig");
    assert!(ex.path().join("llm-scratch/v2/release.sig").is_file());
    let (ok, said) = verify_with_reference(&tool, &ex.store("v2"), &public, &sig);
    assert!(ok, "model_signing refused bundlegate's signature:\n{said}");

    // One byte of one file changed: the reference tool refuses it.
    let weights = ex.store("v2").join("ckpt.pt");
    let mut bytes = std::fs::read(&weights).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let (ok, said) = verify_with_reference(&tool, &ex.store("v2"), &public, &sig);
    assert!(!ok, "model_signing accepted a changed file:\n{said}");

    // Another key's public half: refused too.
    let other = tempfile::tempdir().unwrap();
    let (_, other_public) = openssl_keys(other.path());
    let (ok, said) = verify_with_reference(&tool, &ex.store("v1"), &other_public, &sig);
    assert!(!ok, "{said}");
}

#[test]
fn sign_refuses_a_key_it_cannot_use_without_quoting_it() {
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let bad = keys.path().join("rsa.pem");
    std::fs::write(&bad, "-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END RSA PRIVATE KEY-----\n").unwrap();
    let out = run_in(ex.path(), &["sign", "llm-scratch/v2/release.yaml", "--key", bad.to_str().unwrap()], &[]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("rsa.pem") && out.stderr.contains("not a PEM private key"), "{}", out.stderr);
    assert!(!out.stderr.contains("c2VjcmV0") && !out.stdout.contains("c2VjcmV0"), "the key's bytes were printed");
    let missing = run_in(ex.path(), &["sign", "llm-scratch/v2/release.yaml", "--key", "nope.pem"], &[]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("reading the private key nope.pem"), "{}", missing.stderr);
    assert!(!ex.path().join("llm-scratch/v2/model.sig").exists(), "nothing written on failure");
}
