//! The release's signatures in the OpenSSF model-signing format (v1.0): a
//! Sigstore bundle v0.3 whose DSSE envelope holds an in-toto Statement v1.
//! The bundle already pins every file's sha256, which is exactly what that
//! format signs, so the statement is built from the bundle alone (no byte
//! of the store is read) and `model_signing verify` accepts it against the
//! model folder. A second statement, `https://bundlegate.dev/release/v1`,
//! signs the release digest, so the image, generation and serving settings
//! are vouched for too. Keys: ECDSA P-256 (SEC1 or PKCS#8 PEM), as the
//! format's key mode uses; no I/O here.

use base64::Engine;
use p256::ecdsa::signature::{Signer, Verifier};
use p256::ecdsa::{DerSignature, Signature, SigningKey, VerifyingKey};
use p256::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePublicKey, LineEnding};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::bundle::{Artifact, Loaded};

pub mod cert;
pub mod keyless;

/// A Sigstore bundle's media type (what `model_signing` writes and reads).
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";
/// DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// The model-signing predicate: one resource per file.
pub const MODEL_PREDICATE: &str = "https://model_signing/signature/v1.0";
/// A signature file is a statement of one short line per file: 16 MiB
/// holds well over the resource bound below.
pub const MAX_SIGNATURE_BYTES: usize = 16 << 20;
/// Files one model signature may name. Sharded checkpoints and tokenizer
/// folders run to thousands; a statement naming more is refused rather
/// than compared name by name.
pub const MAX_RESOURCES: usize = 100_000;

/// What a Sigstore bundle in key mode holds: the envelope's parts, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `verificationMaterial.publicKey.hint`: the sha256 of the signer's
    /// public key PEM as `model_signing` writes it (empty or absent: none).
    pub key_hint: Option<String>,
    /// The DSSE payload, base64-decoded (not yet trusted).
    pub payload: Vec<u8>,
    /// The one signature, DER-encoded ECDSA as DSSE carries it.
    pub signature: Vec<u8>,
    /// Certificate mode: `x509CertificateChain`, DER, the signing
    /// certificate first (empty in key mode).
    pub chain: Vec<Vec<u8>>,
    /// Keyless mode (a Fulcio certificate and a transparency-log entry):
    /// the whole bundle's text, which `signing::keyless` verifies.
    pub keyless: Option<String>,
}

/// An in-toto Statement v1, read from a DSSE payload.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    pub predicate_type: String,
    /// The first subject's name and sha256 (hex).
    pub subject_name: String,
    pub subject_sha256: String,
    /// The whole statement, as JSON.
    pub raw: Value,
}

/// One file a model signature vouches for.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Resource {
    /// Path relative to the model folder, `/`-separated.
    pub name: String,
    /// sha256, 64 lowercase hex digits.
    pub digest: String,
}

/// A signature file parsed as far as it goes (`parse::sigstore::parse_file`).
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub envelope: Envelope,
    pub statement: Result<Statement, String>,
    /// The model-signing resources, when the statement is one.
    pub resources: Result<Vec<Resource>, String>,
}

/// bundlegate's predicate: the release digest and what it names.
pub const RELEASE_PREDICATE: &str = "https://bundlegate.dev/release/v1";
/// What `model_signing` leaves out of a model folder by default; recorded
/// in the statement, and the verifier hashes the folder by it.
const IGNORE_PATHS: [&str; 4] = [".gitignore", ".github", ".git", ".gitattributes"];
/// A PEM key is a few hundred bytes.
pub const MAX_KEY_BYTES: u64 = 64 << 10;

/// The model-signing statement of the bundle's files: each artifact's path
/// (relative to the store prefix, as the verifier names files in the
/// model folder) and sha256, in the order the reference implementation
/// sorts them (path component by component), and the subject: `name` and
/// the sha256 over the concatenated file digests in that order.
pub fn model_statement(name: &str, artifacts: &[Artifact]) -> Result<Value, String> {
    let mut files: Vec<(&str, [u8; 32])> = Vec::with_capacity(artifacts.len());
    for a in artifacts {
        let hex_digest =
            a.sha256.as_deref().ok_or_else(|| format!("artifact {} has no sha256: nothing to sign", a.path))?;
        let mut raw = [0u8; 32];
        hex::decode_to_slice(hex_digest, &mut raw)
            .map_err(|_| format!("artifact {}: sha256 {hex_digest:?} is not 64 hex digits", a.path))?;
        files.push((a.path.as_str(), raw));
    }
    files.sort_by(|a, b| a.0.split('/').cmp(b.0.split('/')));
    if let Some(w) = files.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(format!("artifact {} is listed twice", w[0].0));
    }
    let mut root = Sha256::new();
    for (_, d) in &files {
        root.update(d);
    }
    let resources: Vec<Value> =
        files.iter().map(|(p, d)| json!({"name": p, "algorithm": "sha256", "digest": hex::encode(d)})).collect();
    Ok(json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": name, "digest": {"sha256": hex::encode(root.finalize())}}],
        "predicateType": MODEL_PREDICATE,
        "predicate": {
            "serialization": {"method": "files", "hash_type": "sha256", "allow_symlinks": false, "ignore_paths": IGNORE_PATHS},
            "resources": resources,
        },
    }))
}

/// bundlegate's statement: the subject is the release digest (the bundle's
/// canonical form: image, artifacts, generation, serving, rollout, canary,
/// rollback), named `<name>@<version>`; the predicate says what it names.
pub fn release_statement(l: &Loaded) -> Value {
    let m = &l.bundle.metadata;
    let hex_digest = l.digest.strip_prefix("sha256:").unwrap_or(&l.digest);
    json!({
        "_type": STATEMENT_TYPE,
        "subject": [{"name": format!("{}@{}", m.name, m.version), "digest": {"sha256": hex_digest}}],
        "predicateType": RELEASE_PREDICATE,
        "predicate": {
            "name": m.name,
            "namespace": m.namespace,
            "version": m.version,
            "releaseDigest": l.digest,
            "storageUri": l.bundle.spec.model.storage_uri,
            "image": l.bundle.spec.runtime.image,
            "artifacts": l.bundle.spec.model.artifacts.len(),
        },
    })
}

/// DSSE's pre-authentication encoding: what is signed.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!("DSSEv1 {} {payload_type} {} ", payload_type.len(), payload.len()).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A private key for signing, from PEM: SEC1 (`openssl ecparam -genkey`)
/// or PKCS#8. Only P-256, the curve the format's key mode signs with.
pub fn private_key(pem: &str) -> Result<SigningKey, String> {
    let secret = if let Some(block) = pem_block(pem, "EC PRIVATE KEY") {
        // `openssl ecparam -genkey` writes an EC PARAMETERS block first.
        p256::SecretKey::from_sec1_pem(block).map_err(|e| format!("not a P-256 SEC1 private key: {e}"))?
    } else if pem.contains("BEGIN PRIVATE KEY") {
        p256::SecretKey::from_pkcs8_pem(pem).map_err(|e| format!("not a P-256 PKCS#8 private key: {e}"))?
    } else {
        return Err("not a PEM private key (`BEGIN EC PRIVATE KEY` or `BEGIN PRIVATE KEY`)".into());
    };
    Ok(SigningKey::from(secret))
}

/// The one `-----BEGIN <label>-----` … `-----END <label>-----` block of a
/// PEM text that may hold others.
fn pem_block<'a>(pem: &'a str, label: &str) -> Option<&'a str> {
    let begin = pem.find(&format!("-----BEGIN {label}-----"))?;
    let end_marker = format!("-----END {label}-----");
    let end = begin + pem[begin..].find(&end_marker)? + end_marker.len();
    Some(&pem[begin..end])
}

/// A public key for verifying, from PEM (SubjectPublicKeyInfo).
pub fn public_key(pem: &str) -> Result<VerifyingKey, String> {
    VerifyingKey::from_public_key_pem(pem).map_err(|e| format!("not a P-256 public key (PEM): {e}"))
}

/// The key's identifier in a bundle, as `model_signing` computes it: the
/// sha256 of its SubjectPublicKeyInfo PEM.
pub fn key_hint(key: &VerifyingKey) -> Result<String, String> {
    let pem = key.to_public_key_pem(LineEnding::LF).map_err(|e| format!("encoding the public key: {e}"))?;
    Ok(hex::encode(Sha256::digest(pem.as_bytes())))
}

/// The Sigstore bundle (JSON text) signing `statement` with `key`.
pub fn sign(statement: &Value, key: &SigningKey) -> Result<String, String> {
    let payload = serde_json::to_vec(statement).map_err(|e| e.to_string())?;
    sign_payload(&payload, key)
}

/// The Sigstore bundle signing any payload bytes (the tests sign hostile ones).
pub fn sign_payload(payload: &[u8], key: &SigningKey) -> Result<String, String> {
    sign_with(payload, key, &[])
}

/// The Sigstore bundle signing `statement` in certificate mode: `chain`
/// (DER) is the signing certificate, whose key must be `key`'s, then the
/// CAs that issued it, as `model_signing sign certificate` writes it.
pub fn sign_certified(statement: &Value, key: &SigningKey, chain: &[Vec<u8>]) -> Result<String, String> {
    let Some(leaf) = chain.first() else { return Err("no signing certificate".into()) };
    match cert::key_of(leaf)? {
        cert::CertKey::P256(k) if k == *key.verifying_key() => {}
        _ => return Err("the signing certificate's public key is not the private key's".into()),
    }
    let payload = serde_json::to_vec(statement).map_err(|e| e.to_string())?;
    sign_with(&payload, key, chain)
}

fn sign_with(payload: &[u8], key: &SigningKey, chain: &[Vec<u8>]) -> Result<String, String> {
    let sig: Signature = key.sign(&pae(PAYLOAD_TYPE, payload));
    let der: DerSignature = sig.to_der();
    let b64 = base64::engine::general_purpose::STANDARD;
    let material = if chain.is_empty() {
        json!({"publicKey": {"hint": key_hint(key.verifying_key())?}, "tlogEntries": []})
    } else {
        let certs: Vec<Value> = chain.iter().map(|c| json!({"rawBytes": b64.encode(c)})).collect();
        json!({"x509CertificateChain": {"certificates": certs}, "tlogEntries": []})
    };
    let bundle = json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": material,
        "dsseEnvelope": {
            "payload": b64.encode(payload),
            "payloadType": PAYLOAD_TYPE,
            "signatures": [{"sig": b64.encode(der.as_bytes()), "keyid": ""}],
        },
    });
    serde_json::to_string_pretty(&bundle).map_err(|e| e.to_string())
}

/// Does the envelope's one signature verify under `key`? (Its key hint is
/// not consulted: a caller holding several keys picks by it first.)
pub fn verifies(env: &Envelope, key: &VerifyingKey) -> bool {
    Signature::from_der(&env.signature).is_ok_and(|sig| key.verify(&pae(PAYLOAD_TYPE, &env.payload), &sig).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::ArtifactRole;
    use crate::parse::sigstore::verify;

    fn art(path: &str, sha: &str) -> Artifact {
        Artifact {
            path: path.into(),
            sha256: Some(sha.into()),
            size: Some(1),
            role: ArtifactRole::Weights,
            store_checksum: None,
            base_release_digest: None,
            built_with: None,
        }
    }

    /// The digests and order `model_signing` 1.1.1 itself produced for a
    /// folder holding `a.txt` ("hello\n") and `sub/b.json` ("world\n").
    #[test]
    fn the_model_statement_is_the_reference_implementations() {
        let a = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        let b = "e258d248fda94c63753607f7c4494ee0fcbe92f1a76bfdac795c9d84101eb317";
        let s = model_statement("model", &[art("sub/b.json", b), art("a.txt", a)]).unwrap();
        assert_eq!(
            s["subject"][0]["digest"]["sha256"],
            "96cb8058ed58b58f8fc0ad459bacf81108599b403e91674460ccb089f8ebb9db"
        );
        let names: Vec<&str> =
            s["predicate"]["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a.txt", "sub/b.json"]);
        assert_eq!(s["predicateType"], MODEL_PREDICATE);
        // Component by component, as a path sorts: "a/b" before "a-b".
        let s = model_statement("m", &[art("a-b", a), art("a/b", b)]).unwrap();
        let names: Vec<&str> =
            s["predicate"]["resources"].as_array().unwrap().iter().map(|r| r["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["a/b", "a-b"]);
    }

    #[test]
    fn a_file_without_a_digest_or_listed_twice_is_refused() {
        let a = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";
        let mut none = art("x", a);
        none.sha256 = None;
        assert!(model_statement("m", &[none]).unwrap_err().contains("x has no sha256"));
        assert!(model_statement("m", &[art("x", "zz")]).unwrap_err().contains("not 64 hex"));
        assert!(model_statement("m", &[art("x", a), art("x", a)]).unwrap_err().contains("listed twice"));
    }

    #[test]
    fn pae_is_dsse_v1() {
        assert_eq!(pae("t/y", b"abc"), b"DSSEv1 3 t/y 3 abc");
    }

    #[test]
    fn a_signed_statement_verifies_and_nothing_else_does() {
        let key = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let s = model_statement("m", &[art("a", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03")])
            .unwrap();
        let text = sign(&s, &key).unwrap();
        assert_eq!(verify(&text, key.verifying_key()).unwrap().raw, s);
        // Another key: refused by its hint, and without the hint by the signature.
        let other = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        assert!(verify(&text, other.verifying_key()).unwrap_err().contains("another key"));
        let mut v: Value = serde_json::from_str(&text).unwrap();
        v["verificationMaterial"]["publicKey"]["hint"] = json!("");
        assert!(verify(&v.to_string(), other.verifying_key()).unwrap_err().contains("does not verify"));
        // A payload changed after signing.
        let mut v: Value = serde_json::from_str(&text).unwrap();
        let b64 = base64::engine::general_purpose::STANDARD;
        let forged = serde_json::to_vec(&json!({"_type": STATEMENT_TYPE, "subject": []})).unwrap();
        v["dsseEnvelope"]["payload"] = json!(b64.encode(forged));
        assert!(verify(&v.to_string(), key.verifying_key()).unwrap_err().contains("does not verify"));
        assert!(verify("{}", key.verifying_key()).unwrap_err().contains("mediaType"));
    }

    #[test]
    fn keys_are_read_from_sec1_or_pkcs8_pem_and_nothing_else() {
        use p256::pkcs8::EncodePrivateKey;
        let err = private_key("-----BEGIN RSA PRIVATE KEY-----\n").unwrap_err();
        assert!(err.contains("not a PEM private key"), "{err}");
        let key = SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng);
        let pkcs8 = p256::SecretKey::from(key.clone()).to_pkcs8_pem(LineEnding::LF).unwrap();
        assert_eq!(private_key(&pkcs8).unwrap(), key);
        let sec1 = p256::SecretKey::from(key.clone()).to_sec1_pem(LineEnding::LF).unwrap();
        assert_eq!(private_key(&sec1).unwrap(), key);
        // As `openssl ecparam -name prime256v1 -genkey` writes it.
        let with_params =
            format!("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n{}", sec1.as_str());
        assert_eq!(private_key(&with_params).unwrap(), key);
        let public = key.verifying_key().to_public_key_pem(LineEnding::LF).unwrap();
        assert_eq!(&public_key(&public).unwrap(), key.verifying_key());
    }
}
