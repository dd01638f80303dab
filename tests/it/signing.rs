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
pub(crate) fn openssl_keys(dir: &Path) -> (PathBuf, PathBuf) {
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

// ---- the verify side: the signature policy in lint, verify and the plugin -------

/// A config file in `dir` with a signature policy of `mode` allowing `public`.
pub(crate) fn policy(dir: &Path, mode: &str, public: &Path) -> PathBuf {
    let p = dir.join("policy.yaml");
    let key = public.file_name().unwrap().to_str().unwrap();
    if public.parent() != Some(dir) {
        std::fs::copy(public, dir.join(key)).unwrap();
    }
    std::fs::write(&p, format!("signature:\n  mode: {mode}\n  publicKeys: [{key}]\n")).unwrap();
    p
}

/// `bundlegate sign` on the example's v2 with a fresh openssl key: (keys
/// folder, private key, public key, key hint).
pub(crate) fn signed_v2(ex: &Example) -> (tempfile::TempDir, PathBuf, PathBuf, String) {
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(keys.path());
    let out = ex.run(&["sign", "llm-scratch/v2/release.yaml", "--key", key.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let hint = out.json()["steps"][0]["data"]["keyHint"].as_str().unwrap().to_string();
    (keys, key, public, hint)
}

fn with_config(ex: &Example, cmd: &str, config: &Path) -> Out {
    ex.run(&[cmd, "llm-scratch/v2/release.yaml", "--config", config.to_str().unwrap(), "--format", "json"])
}

/// The `signature` step of a JSON report.
fn signature_step(out: &Out) -> serde_json::Value {
    let v = out.json();
    let steps = v["steps"].as_array().unwrap();
    steps.iter().find(|s| s["step"] == "signature").cloned().unwrap_or_else(|| panic!("no signature step:\n{v:#}"))
}

#[test]
fn a_signed_release_passes_lint_and_verify_under_required_naming_the_signer() {
    let ex = Example::new();
    let (keys, _, public, hint) = signed_v2(&ex);
    let config = policy(keys.path(), "required", &public);
    for cmd in ["lint", "verify"] {
        let out = with_config(&ex, cmd, &config);
        assert_eq!(out.code, 0, "{cmd}: {}\n{}", out.stdout, out.stderr);
        let s = signature_step(&out);
        assert_eq!(s["verdict"], "pass", "{cmd}: {s:#}");
        let summary = s["summary"].as_str().unwrap();
        assert!(summary.contains(&hint[..12]) && summary.contains("pub.pem"), "{cmd}: {summary}");
        assert!(summary.contains("model.sig") && summary.contains("release.sig"), "{summary}");
        assert_eq!(s["data"]["signers"][0]["keyHint"], hint);
    }
    // Without a policy nothing is read and no step is added.
    let out = ex.run(&["lint", "llm-scratch/v2/release.yaml", "--format", "json"]);
    assert_eq!(out.json()["steps"].as_array().unwrap().len(), 1);
}

#[test]
fn a_generation_setting_changed_after_signing_is_bg707() {
    let ex = Example::new();
    let (keys, _, public, _) = signed_v2(&ex);
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    // One byte: 512 → 513.
    std::fs::write(ex.v2(), text.replacen("maxOutputTokens: 512", "maxOutputTokens: 513", 1)).unwrap();
    let out = with_config(&ex, "lint", &policy(keys.path(), "required", &public));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), ["BG707"], "{}", out.stdout);
    let d = out.diag("BG707");
    assert!(d["span"]["file"].as_str().unwrap().ends_with("release.yaml"), "{d:#}");
}

#[test]
fn an_artifact_digest_changed_in_the_bundle_is_bg706() {
    let ex = Example::new();
    let (keys, _, public, _) = signed_v2(&ex);
    ex.edit_v2(|v| *at(v, "spec.model.artifacts.0.sha256") = yaml(&"0".repeat(64)));
    let out = with_config(&ex, "lint", &policy(keys.path(), "required", &public));
    assert_eq!(out.code, 1);
    let d = out.diag("BG706");
    assert!(d["message"].as_str().unwrap().contains("ckpt.pt"), "{d:#}");
    assert_eq!(d["field"], "spec.model.artifacts[0].sha256");
    // The release digest covers the artifacts: release.sig no longer matches either.
    assert!(out.codes().contains(&"BG707".to_string()));
}

#[test]
fn a_file_added_to_the_bundle_after_signing_is_bg705_and_one_dropped_bg704() {
    let ex = Example::new();
    let (keys, _, public, _) = signed_v2(&ex);
    ex.edit_v2(|v| {
        let arts = at(v, "spec.model.artifacts").as_sequence_mut().unwrap();
        let mut extra = arts[0].clone();
        extra["path"] = yaml("extra.bin");
        arts.remove(4);
        arts.push(extra);
    });
    let out = with_config(&ex, "lint", &policy(keys.path(), "required", &public));
    assert!(out.diag("BG705")["message"].as_str().unwrap().contains("extra.bin"));
    assert!(out.diag("BG704")["message"].as_str().unwrap().contains("clean_corpus.txt"));
}

#[test]
fn a_signature_by_another_key_is_bg703() {
    let ex = Example::new();
    let (_keys, _, _, _) = signed_v2(&ex);
    let other = tempfile::tempdir().unwrap();
    let (_, other_public) = openssl_keys(other.path());
    let out = with_config(&ex, "lint", &policy(other.path(), "required", &other_public));
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["BG703", "BG703"], "{}", out.stdout);
    assert_ne!(signature_step(&out)["verdict"], "pass");
}

#[test]
fn unsigned_is_bg701_an_error_under_required_and_a_warning_under_optional() {
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let (_, public) = openssl_keys(keys.path());
    let out = with_config(&ex, "lint", &policy(keys.path(), "required", &public));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.diag("BG701")["severity"], "error");
    let out = with_config(&ex, "verify", &policy(keys.path(), "optional", &public));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.diag("BG701")["severity"], "warning");
}

/// A model.sig signed by the allowed key over `payload`: only the content can fail.
fn hostile(ex: &Example, key: &Path, payload: &[u8]) {
    let pem = std::fs::read_to_string(key).unwrap();
    let k = bundlegate::signing::private_key(&pem).unwrap();
    let text = bundlegate::signing::sign_payload(payload, &k).unwrap();
    std::fs::write(ex.path().join("llm-scratch/v2/model.sig"), text).unwrap();
}

fn statement_with(resources: serde_json::Value) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "v2", "digest": {"sha256": "0".repeat(64)}}],
        "predicateType": "https://model_signing/signature/v1.0",
        "predicate": {"resources": resources},
    }))
    .unwrap()
}

#[test]
fn hostile_signature_files_are_clear_findings_never_pass() {
    let ex = Example::new();
    let (keys, key, public, _) = signed_v2(&ex);
    let config = policy(keys.path(), "required", &public);
    let r = |name: &str| serde_json::json!({"name": name, "algorithm": "sha256", "digest": "0".repeat(64)});
    let many: Vec<serde_json::Value> = (0..10_000).map(|i| r(&format!("f{i}.bin"))).collect();
    let cases: Vec<(&str, Vec<u8>, &str, &str)> = vec![
        ("non-JSON payload", b"\x00\xffnot json".to_vec(), "BG702", "not JSON"),
        ("duplicate names", statement_with(serde_json::json!([r("ckpt.pt"), r("ckpt.pt")])), "BG702", "listed twice"),
        ("`..` in a name", statement_with(serde_json::json!([r("../v1/ckpt.pt")])), "BG702", "`..`"),
        ("10,000 resources", statement_with(serde_json::Value::Array(many)), "BG704", "more file(s)"),
    ];
    for (what, payload, code, says) in cases {
        hostile(&ex, &key, &payload);
        let out = run_within(
            ex.path(),
            &["lint", "llm-scratch/v2/release.yaml", "--config", config.to_str().unwrap(), "--format", "json"],
            &[],
            30,
        );
        assert_eq!(out.code, 1, "{what}: {}\n{}", out.stdout, out.stderr);
        assert_ne!(signature_step(&out)["verdict"], "pass", "{what}");
        let found = out.json()["steps"][1]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["code"] == code && d["message"].as_str().unwrap().contains(says));
        assert!(found, "{what}: no {code} saying {says:?}:\n{}", out.stdout);
    }
    // Oversized: refused from its size, unread.
    let f = std::fs::File::create(ex.path().join("llm-scratch/v2/model.sig")).unwrap();
    f.set_len((16 << 20) + 1).unwrap();
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.code, 1);
    assert!(out.diag("BG702")["message"].as_str().unwrap().contains("over the limit"), "{}", out.stdout);
    // A symlink (to a valid signature even) is never followed.
    let sig = ex.path().join("llm-scratch/v2/model.sig");
    std::fs::remove_file(&sig).unwrap();
    std::os::unix::fs::symlink(keys.path().join("pub.pem"), &sig).unwrap();
    let out = with_config(&ex, "lint", &config);
    assert!(out.diag("BG702")["message"].as_str().unwrap().contains("a symlink"), "{}", out.stdout);
}

#[test]
fn a_model_sig_in_the_store_counts_and_is_not_extra() {
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(keys.path());
    let store = ex.store("v2");
    let out = ex.run(&[
        "sign",
        "llm-scratch/v2/release.yaml",
        "--key",
        key.to_str().unwrap(),
        "--out",
        store.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::remove_file(store.join("release.sig")).unwrap();
    let out = with_config(&ex, "verify", &policy(keys.path(), "required", &public));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.codes().contains(&"BG104".to_string()), "{}", out.stdout);
    assert!(signature_step(&out)["summary"].as_str().unwrap().contains("store/llm-scratch/v2/model.sig"));
    // Without a policy it is what it always was: an object the bundle does not list.
    let out = ex.run(&["verify", "llm-scratch/v2/release.yaml", "--format", "json"]);
    assert!(out.codes().contains(&"BG104".to_string()), "{}", out.stdout);
}

#[test]
fn a_policy_the_tool_cannot_hold_is_refused_by_name() {
    let ex = Example::new();
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("signature:\n  mode: required\n  publicKey: [a.pem]\n", "unknown field `publicKey`, expected one of"),
        ("signature:\n  mode: required\n  publicKeys: []\n", "publicKeys is empty"),
        (
            "signature:\n  mode: required\n  publicKeys: [k.pem]\n  trustedRoot: r.json\n",
            "trustedRoot without certificateIdentities",
        ),
        (
            "signature:\n  mode: required\n  certificateIdentities: [{identity: a@b, issuer: x}]\n",
            "certificateIdentities without a trustedRoot",
        ),
        ("signature:\n  mode: optional\n  publicKeys: [k.pem]\n  podTrustConfigMap: t\n", "needs mode: required"),
        ("signature:\n  mode: always\n  publicKeys: [k.pem]\n", "unknown variant `always`"),
    ];
    for (text, says) in cases {
        let p = dir.path().join("policy.yaml");
        std::fs::write(&p, text).unwrap();
        let out = ex.run(&["lint", "llm-scratch/v2/release.yaml", "--config", p.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{text}");
        assert!(out.stderr.contains(says), "{text}: {}", out.stderr);
    }
}

/// The reference tool signs the store folder in key mode; bundlegate's
/// verify accepts that `model.sig` in the store, and catches one byte
/// changed even with the bundle updated to match (only the signature can tell).
#[test]
fn bundlegate_verifies_what_the_reference_tool_signs() {
    let Some(tool) = model_signing() else { return };
    let ex = Example::new();
    let keys = tempfile::tempdir().unwrap();
    let (key, public) = openssl_keys(keys.path());
    let store = ex.store("v2");
    let o = Command::new(&tool)
        .args(["sign", "key"])
        .arg(&store)
        .arg("--private_key")
        .arg(&key)
        .arg("--signature")
        .arg(store.join("model.sig"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    passes_then_only_the_signature_tells(&ex, &policy(keys.path(), "required", &public));
}

/// `verify` under `config` passes on the store the reference tool signed;
/// then one byte of the weights changes and the bundle is updated to
/// match, so only the signature can tell (BG706).
fn passes_then_only_the_signature_tells(ex: &Example, config: &Path) {
    let out = with_config(ex, "verify", config);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(signature_step(&out)["verdict"], "pass");
    let weights = ex.store("v2").join("ckpt.pt");
    let mut bytes = std::fs::read(&weights).unwrap();
    bytes[0] ^= 1;
    std::fs::write(&weights, &bytes).unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bytes));
    ex.edit_v2(|v| *at(v, "spec.model.artifacts.0.sha256") = yaml(&sha));
    let out = with_config(ex, "verify", config);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), ["BG706"], "only the signature can tell:\n{}", out.stdout);
}

/// The scheduled audit checks each bundle's signatures under the policy: a
/// signature whose key was rotated out of the policy is found there (BG703),
/// as a `signature` step named for its bundle beside its `audit` step (so a
/// shard's coverage still counts the bundle once).
#[test]
fn audit_finds_a_signature_whose_key_was_rotated_out() {
    let ex = Example::new();
    let (keys, _, public, hint) = signed_v2(&ex);
    let audit = |cfg: &Path| ex.run(&["audit", ".", "--config", cfg.to_str().unwrap(), "--format", "json"]);
    let out = audit(&policy(keys.path(), "optional", &public));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let sigs: Vec<&serde_json::Value> =
        v["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "signature").collect();
    assert_eq!(sigs.len(), 2, "{v:#}");
    let v2 = sigs.iter().find(|s| s["data"]["bundle"].as_str().unwrap().contains("v2")).unwrap();
    assert_eq!(v2["verdict"], "pass", "{v2}");
    assert!(v2["summary"].as_str().unwrap().contains(&hint[..12]), "{v2}");
    let audits = v["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "audit").count();
    assert_eq!(audits, 2, "one audit step per bundle");

    let other = tempfile::tempdir().unwrap();
    let (_, other_public) = openssl_keys(other.path());
    let out = audit(&policy(other.path(), "optional", &other_public));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.codes().contains(&"BG703".to_string()), "{:?}", out.codes());
}

// ---- certificate mode: a CA made with openssl, both directions ---------------

/// A CA and what it issued, made with openssl as an operator would: the CA
/// (P-256, `CA:TRUE`), a signing certificate for `release@example.com`
/// (digitalSignature), one for `intruder@example.com`, one that expired in
/// 2020 (`openssl ca` sets its dates), and `trusted_root.json` holding the CA.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let sh = |script: &str| {
            let o = Command::new("bash").arg("-ec").arg(script).current_dir(d).output().unwrap();
            assert!(o.status.success(), "{script}\n{}", String::from_utf8_lossy(&o.stderr));
        };
        sh("openssl ecparam -name prime256v1 -genkey -noout -out ca.key
            openssl req -x509 -new -key ca.key -subj '/CN=Example Release CA' -days 30 \\
              -addext 'basicConstraints=critical,CA:TRUE' -addext 'keyUsage=critical,keyCertSign' -out ca.pem
            openssl x509 -in ca.pem -outform der -out ca.der
            printf '[ca]\\ndefault_ca = d\\n[d]\\ndatabase = index.txt\\nnew_certs_dir = .\\nserial = serial\\ndefault_md = sha256\\npolicy = p\\nunique_subject = no\\n[p]\\ncommonName = supplied\\n' > ca.conf
            : > index.txt; echo 01 > serial
            for who in release intruder old; do
              openssl ecparam -name prime256v1 -genkey -noout -out $who.key
              openssl req -new -key $who.key -subj \"/CN=$who signer\" -out $who.csr
              printf 'basicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature\\nsubjectAltName=email:%s@example.com\\n' $who > $who.ext
            done
            for who in release intruder; do
              openssl x509 -req -in $who.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile $who.ext -out $who.pem 2>/dev/null
            done
            # An intermediate CA, and under it a signer; and a signer whose issuer is
            # the intruder's leaf certificate, which is no CA.
            openssl ecparam -name prime256v1 -genkey -noout -out int.key
            openssl req -new -key int.key -subj '/CN=Example Intermediate CA' -out int.csr
            printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign\\n' > int.ext
            openssl x509 -req -in int.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile int.ext -out int.pem 2>/dev/null
            for who in deep sub; do
              openssl ecparam -name prime256v1 -genkey -noout -out $who.key
              openssl req -new -key $who.key -subj \"/CN=$who signer\" -out $who.csr
              printf 'basicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature\\nsubjectAltName=email:release@example.com\\n' > $who.ext
            done
            openssl x509 -req -in deep.csr -CA int.pem -CAkey int.key -CAcreateserial -days 10 -extfile deep.ext -out deep.pem 2>/dev/null
            openssl x509 -req -in sub.csr -CA intruder.pem -CAkey intruder.key -CAcreateserial -days 10 -extfile sub.ext -out sub.pem 2>/dev/null
            sed -i 's/old@/release@/' old.ext
            openssl ca -config ca.conf -batch -notext -in old.csr -cert ca.pem -keyfile ca.key \\
              -startdate 20200101000000Z -enddate 20200201000000Z -extfile old.ext -out old.pem 2>/dev/null");
        let b64 = base64::engine::general_purpose::STANDARD;
        let der = std::fs::read(d.join("ca.der")).unwrap();
        let root = serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "certificateAuthorities": [{"subject": {"commonName": "Example Release CA"},
                "certChain": {"certificates": [{"rawBytes": base64::Engine::encode(&b64, der)}]},
                "validFor": {"start": "2026-01-01T00:00:00Z"}}],
            "tlogs": [], "ctlogs": [], "timestampAuthorities": []
        });
        std::fs::write(d.join("trusted_root.json"), root.to_string()).unwrap();
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A certificate-mode policy allowing `identity` from the CA.
    fn policy(&self, identity: &str) -> PathBuf {
        let p = self.path("cert-policy.yaml");
        std::fs::write(
            &p,
            format!(
                "signature:\n  mode: required\n  trustedRoot: trusted_root.json\n  certificateIdentities:\n    - {{identity: {identity}, issuer: CN=Example Release CA}}\n"
            ),
        )
        .unwrap();
        p
    }

    /// `bundlegate sign` of the example's v2 as `who`, issued by the CA.
    fn sign(&self, ex: &Example, who: &str) -> Out {
        self.sign_with(ex, who, &["ca.pem"])
    }

    /// `bundlegate sign` as `who`, the signature carrying `chain` after its certificate.
    fn sign_with(&self, ex: &Example, who: &str, chain: &[&str]) -> Out {
        let key = self.path(&format!("{who}.key"));
        let cert = self.path(&format!("{who}.pem"));
        let mut args = vec![
            "sign".to_string(),
            "llm-scratch/v2/release.yaml".into(),
            "--key".into(),
            key.display().to_string(),
            "--certificate".into(),
            cert.display().to_string(),
            "--format".into(),
            "json".into(),
        ];
        for c in chain {
            args.push("--chain".into());
            args.push(self.path(c).display().to_string());
        }
        ex.run(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

/// bundlegate signs in certificate mode; its own lint and verify accept
/// it naming the identity, and the reference tool's `verify certificate`
/// accepts it on the published files and refuses it after one byte
/// changes. Another identity from the same CA is BG709, an expired
/// certificate BG708, a CA the policy does not trust BG703.
#[test]
fn certificate_mode_signs_and_verifies_both_ways_and_names_who() {
    let ex = Example::new();
    let pki = Pki::new();
    let out = pki.sign(&ex, "release");
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let config = pki.policy("release@example.com");
    for cmd in ["lint", "verify"] {
        let out = with_config(&ex, cmd, &config);
        assert_eq!(out.code, 0, "{cmd}: {}\n{}", out.stdout, out.stderr);
        let s = signature_step(&out);
        assert_eq!(s["verdict"], "pass", "{cmd}: {s:#}");
        let summary = s["summary"].as_str().unwrap();
        assert!(summary.contains("release@example.com") && summary.contains("CN=Example Release CA"), "{summary}");
        assert_eq!(s["data"]["signers"][0]["identity"]["identity"], "release@example.com", "{s:#}");
    }
    if let Some(tool) = model_signing() {
        let sig = ex.path().join("llm-scratch/v2/model.sig");
        let verify = |store: &Path| {
            let o = Command::new(&tool)
                .args(["verify", "certificate"])
                .arg(store)
                .arg("--signature")
                .arg(&sig)
                .arg("--certificate_chain")
                .arg(pki.path("ca.pem"))
                .output()
                .unwrap();
            (
                o.status.success(),
                format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr)),
            )
        };
        let (ok, said) = verify(&ex.store("v2"));
        assert!(ok, "model_signing refused bundlegate's certificate-mode signature:\n{said}");
        let scratch = tempfile::tempdir().unwrap();
        copy_dir(&ex.store("v2"), scratch.path());
        let f = scratch.path().join("tokenizer.json");
        let mut bytes = std::fs::read(&f).unwrap();
        bytes[0] ^= 1;
        std::fs::write(&f, bytes).unwrap();
        let (ok, said) = verify(scratch.path());
        assert!(!ok, "model_signing accepted a changed file:\n{said}");
    }
    // The same CA, someone the policy does not list.
    let out = with_config(&ex, "lint", &pki.policy("someone@example.com"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), ["BG709", "BG709"], "{}", out.stdout);
    let out = pki.sign(&ex, "intruder");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.codes(), ["BG709", "BG709"], "{}", out.stdout);
    assert!(out.stdout.contains("intruder@example.com"), "{}", out.stdout);
    // Expired in 2020: BG708, though the chain and the identity hold.
    let out = pki.sign(&ex, "old");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.codes(), ["BG708", "BG708"], "{}", out.stdout);
    // Another CA (a second Pki) is not trusted: BG703.
    let other = Pki::new();
    let out = other.sign(&ex, "release");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.codes(), ["BG703", "BG703"], "{}", out.stdout);
    // Through an intermediate CA: the chain is walked to the root, and the
    // issuer is the intermediate's name.
    let out = pki.sign_with(&ex, "deep", &["int.pem"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let deep = pki.path("deep-policy.yaml");
    std::fs::write(
        &deep,
        "signature:\n  mode: required\n  trustedRoot: trusted_root.json\n  certificateIdentities:\n    - {identity: release@example.com, issuer: CN=Example Intermediate CA}\n",
    )
    .unwrap();
    let out = with_config(&ex, "lint", &deep);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // Issued by a certificate that is no CA (the intruder's own leaf): BG703.
    let out = pki.sign_with(&ex, "sub", &["intruder.pem", "ca.pem"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.codes(), ["BG703", "BG703"], "{}", out.stdout);
    assert!(out.stdout.contains("not a CA allowed to"), "{}", out.stdout);
    // A signing certificate that is not the key's: sign refuses (exit 2).
    let key = pki.path("release.key");
    let cert = pki.path("intruder.pem");
    let out = ex.run(&[
        "sign",
        "llm-scratch/v2/release.yaml",
        "--key",
        key.to_str().unwrap(),
        "--certificate",
        cert.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("not the private key's"), "{}", out.stderr);
}

/// The reference tool signs the store folder in certificate mode (its
/// `sign certificate`, the openssl CA) → bundlegate's verify accepts it
/// under the identity policy; a byte changed with the bundle updated to
/// match is caught by the signature alone (BG706).
#[test]
fn bundlegate_verifies_what_the_reference_tool_signs_with_a_certificate() {
    let Some(tool) = model_signing() else { return };
    let ex = Example::new();
    let pki = Pki::new();
    let store = ex.store("v2");
    let o = Command::new(&tool)
        .args(["sign", "certificate"])
        .arg(&store)
        .arg("--private_key")
        .arg(pki.path("release.key"))
        .arg("--signing_certificate")
        .arg(pki.path("release.pem"))
        .arg("--certificate_chain")
        .arg(pki.path("ca.pem"))
        .arg("--signature")
        .arg(store.join("model.sig"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    passes_then_only_the_signature_tells(&ex, &pki.policy("release@example.com"));
}

// ---- keyless mode: a real Fulcio certificate and Rekor entry ------------------

/// The keyless vectors: a real Sigstore bundle v0.3 signed keyless in GitHub
/// Actions (a DSSE in-toto attestation of a conda package), the public-good
/// trusted root it verifies under, another instance's root (fixtures README:
/// from crates.io `sigstore-verify` 0.15.1's test data).
const KEYLESS: &str = "tests/fixtures/reference/sigstore/conda-attestation.sigstore.json";
const KEYLESS_SIGNER: &str =
    "https://github.com/prefix-dev/sigstore-example/.github/workflows/action.yaml@refs/heads/main";
const GITHUB_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// The example's v2 with `bundle` as its model.sig (its release.sig gone)
/// under a keyless policy allowing `identity`, trusting `root`; lint's
/// signature step.
fn keyless_lint(bundle: &str, root: &str, identity: &str) -> serde_json::Value {
    let ex = Example::new();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    std::fs::write(dir.join("model.sig"), bundle).unwrap();
    let _ = std::fs::remove_file(dir.join("release.sig"));
    std::fs::write(dir.join("root.json"), root).unwrap();
    let config = dir.join("keyless.yaml");
    std::fs::write(
        &config,
        format!("signature:\n  mode: required\n  trustedRoot: root.json\n  certificateIdentities:\n    - {{identity: \"{identity}\", issuer: \"{GITHUB_ISSUER}\"}}\n"),
    )
    .unwrap();
    let out = with_config(&ex, "lint", &config);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    signature_step(&out)
}

fn codes_of(step: &serde_json::Value) -> Vec<String> {
    step["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
}

/// Keyless signatures verify offline against the trusted root: a real one
/// from the allowed workflow verifies (the signer is named by its
/// workflow identity) and is then judged as a model signature (this one
/// attests a conda package, not a model: BG702, never a pass); the same
/// signature under a policy allowing another identity is BG709 naming the
/// real one; one byte of its signature changed, or another instance's
/// root, or a root without a transparency log, is BG703.
#[test]
fn keyless_signatures_verify_offline_against_the_trusted_root() {
    let real = std::fs::read_to_string(repo().join(KEYLESS)).unwrap();
    let fixture =
        |name: &str| std::fs::read_to_string(repo().join("tests/fixtures/reference/sigstore").join(name)).unwrap();
    let public_good = fixture("public-good.json");

    let s = keyless_lint(&real, &public_good, KEYLESS_SIGNER);
    assert_eq!(s["verdict"], "fail", "{s:#}");
    assert_eq!(s["data"]["signers"][0]["identity"]["identity"], KEYLESS_SIGNER, "{s:#}");
    assert_eq!(codes_of(&s), ["BG702"], "{s:#}");
    let msg = s["diagnostics"][0]["message"].as_str().unwrap();
    assert!(msg.contains("predicateType") && msg.contains("conda"), "{msg}");

    let s = keyless_lint(
        &real,
        &public_good,
        "https://github.com/someone-else/repo/.github/workflows/release.yaml@refs/heads/main",
    );
    assert_eq!(codes_of(&s), ["BG709"], "{s:#}");
    let msg = s["diagnostics"][0]["message"].as_str().unwrap();
    assert!(msg.contains(KEYLESS_SIGNER) && msg.contains(GITHUB_ISSUER), "{msg}");
    assert!(s["data"]["signers"].as_array().is_none_or(|a| a.is_empty()), "{s:#}");

    // One byte of the DSSE signature changed.
    let mut v: serde_json::Value = serde_json::from_str(&real).unwrap();
    let sig = v["dsseEnvelope"]["signatures"][0]["sig"].as_str().unwrap().to_string();
    let mut raw = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &sig).unwrap();
    let last = raw.len() - 3;
    raw[last] ^= 1;
    v["dsseEnvelope"]["signatures"][0]["sig"] =
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, raw).into();
    let s = keyless_lint(&v.to_string(), &public_good, KEYLESS_SIGNER);
    assert_eq!(codes_of(&s), ["BG703"], "{s:#}");
    assert!(s["diagnostics"][0]["message"].as_str().unwrap().contains("does not verify"), "{s:#}");

    // Another Sigstore instance's root: neither its CA nor its log signed it.
    let s = keyless_lint(&real, &fixture("scaffolding.json"), KEYLESS_SIGNER);
    assert_eq!(codes_of(&s), ["BG703"], "{s:#}");

    // The same root without its transparency logs: nothing can vouch for a
    // ten-minute certificate after its ten minutes.
    let mut root: serde_json::Value = serde_json::from_str(&public_good).unwrap();
    root["tlogs"] = serde_json::json!([]);
    let s = keyless_lint(&real, &root.to_string(), KEYLESS_SIGNER);
    assert_eq!(codes_of(&s), ["BG703"], "{s:#}");
    assert!(s["diagnostics"][0]["message"].as_str().unwrap().contains("no transparency log"), "{s:#}");
}

/// Limits a CA sets are kept, not ignored: an intermediate with
/// `pathLenConstraint: 0` may not have another CA below it, and a signing
/// certificate marking an extension bundlegate does not judge critical is
/// refused; both BG703, each saying why. The same chains without those
/// limits pass, so it is the limit that refuses them.
#[test]
fn certificate_mode_keeps_path_length_and_critical_extensions() {
    let ex = Example::new();
    let pki = Pki::new();
    let o = Command::new("bash")
        .arg("-ec")
        .arg(
            "for n in lim free; do
               openssl ecparam -name prime256v1 -genkey -noout -out $n.key
               openssl req -new -key $n.key -subj \"/CN=Example $n CA\" -out $n.csr
             done
             printf 'basicConstraints=critical,CA:TRUE,pathlen:0\\nkeyUsage=critical,keyCertSign\\n' > lim.ext
             printf 'basicConstraints=critical,CA:TRUE\\nkeyUsage=critical,keyCertSign\\n' > free.ext
             openssl x509 -req -in lim.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile lim.ext -out lim.pem 2>/dev/null
             openssl x509 -req -in free.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 20 -extfile free.ext -out free.pem 2>/dev/null
             for up in lim free; do
               openssl ecparam -name prime256v1 -genkey -noout -out sub$up.key
               openssl req -new -key sub$up.key -subj \"/CN=Example sub$up CA\" -out sub$up.csr
               openssl x509 -req -in sub$up.csr -CA $up.pem -CAkey $up.key -CAcreateserial -days 15 -extfile free.ext -out sub$up.pem 2>/dev/null
               cp release.key far$up.key
               openssl x509 -req -in release.csr -CA sub$up.pem -CAkey sub$up.key -CAcreateserial -days 10 -extfile release.ext -out far$up.pem 2>/dev/null
             done
             cp release.key crit.key
             cp release.ext crit.ext; echo '1.2.3.4=critical,ASN1:UTF8String:only for the careful' >> crit.ext
             openssl x509 -req -in release.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 10 -extfile crit.ext -out crit.pem 2>/dev/null",
        )
        .current_dir(pki.path(""))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let policy = pki.path("far-policy.yaml");
    let write_policy = |issuer: &str| {
        std::fs::write(
            &policy,
            format!("signature:\n  mode: required\n  trustedRoot: trusted_root.json\n  certificateIdentities:\n    - {{identity: release@example.com, issuer: \"{issuer}\"}}\n"),
        )
        .unwrap()
    };
    // Two CAs below the root's direct intermediate: fine without a limit…
    write_policy("CN=Example subfree CA");
    let out = pki.sign_with(&ex, "farfree", &["subfree.pem", "free.pem"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &policy);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // …refused under pathlen:0.
    write_policy("CN=Example sublim CA");
    let out = pki.sign_with(&ex, "farlim", &["sublim.pem", "lim.pem"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &policy);
    assert_eq!(out.codes(), ["BG703", "BG703"], "{}", out.stdout);
    assert!(out.stdout.contains("pathLenConstraint"), "{}", out.stdout);
    // An unknown critical extension on the signing certificate.
    let out = pki.sign(&ex, "crit");
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = with_config(&ex, "lint", &pki.policy("release@example.com"));
    assert_eq!(out.codes(), ["BG703", "BG703"], "{}", out.stdout);
    assert!(out.stdout.contains("1.2.3.4") && out.stdout.contains("critical"), "{}", out.stdout);
}
