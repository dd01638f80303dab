//! A detached Sigstore bundle (v0.3 JSON, as OpenSSF `model_signing`
//! writes it) → its DSSE envelope → the in-toto Statement v1 it carries →
//! the model-signing predicate's resources, as plain data. No I/O, no
//! cryptography (`signing` verifies the signature over what this
//! returns): every bound is checked here, so a hostile file is an `Err`
//! naming what is wrong before anything downstream sees it.

use std::collections::BTreeSet;

use base64::Engine;
use serde::Deserialize;
use serde_json::Value;

use crate::signing::{
    Envelope, Parsed, Resource, Statement, BUNDLE_MEDIA_TYPE, MAX_RESOURCES, MAX_SIGNATURE_BYTES, MODEL_PREDICATE,
    PAYLOAD_TYPE, STATEMENT_TYPE,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBundle {
    media_type: String,
    verification_material: RawMaterial,
    dsse_envelope: RawEnvelope,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMaterial {
    public_key: Option<RawPublicKey>,
    certificate: Option<serde::de::IgnoredAny>,
    x509_certificate_chain: Option<RawChain>,
}

#[derive(Deserialize)]
struct RawChain {
    certificates: Vec<RawCert>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCert {
    raw_bytes: String,
}

#[derive(Deserialize)]
struct RawPublicKey {
    hint: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEnvelope {
    payload: String,
    payload_type: String,
    signatures: Vec<RawSignature>,
}

#[derive(Deserialize)]
struct RawSignature {
    sig: String,
}

/// A Sigstore bundle's text → its envelope, in key, certificate or keyless
/// mode (which `verificationMaterial` holds says which).
pub fn parse_bundle(text: &str) -> Result<Envelope, String> {
    if text.len() > MAX_SIGNATURE_BYTES {
        return Err(format!("{} bytes, over the limit of {MAX_SIGNATURE_BYTES}", text.len()));
    }
    let b: RawBundle =
        crate::serde_strict::from_json_str(text).map_err(|e| format!("not a Sigstore bundle (JSON): {e}"))?;
    if b.media_type != BUNDLE_MEDIA_TYPE {
        return Err(format!("mediaType {:?} is not {BUNDLE_MEDIA_TYPE}", b.media_type));
    }
    let m = b.verification_material;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (key_hint, chain, keyless) = match (m.public_key, m.x509_certificate_chain, m.certificate) {
        (Some(pk), None, None) => (pk.hint.filter(|h| !h.is_empty()), Vec::new(), None),
        (None, Some(c), None) => (None, chain(&c, &b64)?, None),
        // Keyless: the whole bundle goes to the verifier (certificate, log
        // entry, timestamps); the envelope below is read as for the others.
        (None, None, Some(_)) => (None, Vec::new(), Some(text.to_string())),
        (None, None, None) => {
            return Err("verificationMaterial has neither a publicKey, a certificate chain nor a certificate".into())
        }
        _ => {
            return Err(
                "verificationMaterial has more than one of publicKey, x509CertificateChain and certificate".into()
            )
        }
    };
    let env = b.dsse_envelope;
    if env.payload_type != PAYLOAD_TYPE {
        return Err(format!("payloadType {:?} is not {PAYLOAD_TYPE}", env.payload_type));
    }
    let [only] = env.signatures.as_slice() else {
        return Err(format!("{} signatures in the envelope, expected one", env.signatures.len()));
    };
    let payload = b64.decode(&env.payload).map_err(|e| format!("payload is not base64: {e}"))?;
    let signature = b64.decode(&only.sig).map_err(|e| format!("signature is not base64: {e}"))?;
    Ok(Envelope { key_hint, payload, signature, chain, keyless })
}

/// The chain's certificates, DER, bounded in number and size.
fn chain(c: &RawChain, b64: &base64::engine::GeneralPurpose) -> Result<Vec<Vec<u8>>, String> {
    use crate::signing::cert::{MAX_CERT_BYTES, MAX_CHAIN};
    if c.certificates.is_empty() || c.certificates.len() > MAX_CHAIN {
        return Err(format!("{} certificates in x509CertificateChain (1 to {MAX_CHAIN})", c.certificates.len()));
    }
    c.certificates
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if r.raw_bytes.len() > MAX_CERT_BYTES * 2 {
                return Err(format!("certificate {i} of the chain is over {MAX_CERT_BYTES} bytes"));
            }
            b64.decode(&r.raw_bytes).map_err(|e| format!("certificate {i} of the chain is not base64: {e}"))
        })
        .collect()
}

/// The CA certificates (DER) of a Sigstore trusted root
/// (`trusted_root.json`: `certificateAuthorities[].certChain.certificates`),
/// which certificate-mode signatures must chain to. Bounded like a bundle.
pub fn trusted_root_cas(text: &str) -> Result<Vec<Vec<u8>>, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Root {
        media_type: String,
        #[serde(default)]
        certificate_authorities: Vec<Ca>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Ca {
        cert_chain: RawChain,
    }
    if text.len() > MAX_SIGNATURE_BYTES {
        return Err(format!("{} bytes, over the limit of {MAX_SIGNATURE_BYTES}", text.len()));
    }
    let r: Root =
        crate::serde_strict::from_json_str(text).map_err(|e| format!("not a Sigstore trusted root (JSON): {e}"))?;
    if !r.media_type.starts_with("application/vnd.dev.sigstore.trustedroot") {
        return Err(format!("mediaType {:?} is not a Sigstore trusted root", r.media_type));
    }
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut out = Vec::new();
    for ca in &r.certificate_authorities {
        out.extend(chain(&ca.cert_chain, &b64)?);
        if out.len() > 64 {
            return Err("more than 64 CA certificates".into());
        }
    }
    if out.is_empty() {
        return Err("no certificateAuthorities: no certificate could chain to it".into());
    }
    Ok(out)
}

/// A signature file's text, parsed as far as it goes: the envelope (or why
/// not), and from its payload, not yet trusted, the statement and the
/// model-signing resources. The check trusts them only once the envelope's
/// signature verifies.
pub fn parse_file(text: &str) -> Result<Parsed, String> {
    let envelope = parse_bundle(text)?;
    let statement = parse_statement(&envelope.payload);
    let resources = statement.as_ref().map_err(Clone::clone).and_then(model_resources);
    Ok(Parsed { envelope, statement, resources })
}

/// The statement a Sigstore bundle signs, once its one signature verifies
/// under `key` (and its key hint, when present, names that key).
pub fn verify(bundle_text: &str, key: &p256::ecdsa::VerifyingKey) -> Result<Statement, String> {
    let env = parse_bundle(bundle_text)?;
    if let Some(h) = &env.key_hint {
        if *h != crate::signing::key_hint(key)? {
            return Err("signed by another key: the bundle's key hint does not name this public key".into());
        }
    }
    if !crate::signing::verifies(&env, key) {
        return Err("the signature does not verify under this key".into());
    }
    parse_statement(&env.payload)
}

/// A DSSE payload → an in-toto Statement v1 with at least one subject
/// carrying a sha256.
pub fn parse_statement(payload: &[u8]) -> Result<Statement, String> {
    let raw: Value = serde_json::from_slice(payload).map_err(|e| format!("the signed payload is not JSON: {e}"))?;
    if raw["_type"] != STATEMENT_TYPE {
        return Err(format!("statement type {} is not {STATEMENT_TYPE}", raw["_type"]));
    }
    let predicate_type = raw["predicateType"].as_str().ok_or("the statement has no predicateType")?.to_string();
    let subject = &raw["subject"][0];
    let subject_name = subject["name"].as_str().unwrap_or_default().to_string();
    let subject_sha256 = subject["digest"]["sha256"].as_str().ok_or("the statement's subject has no sha256")?;
    if !is_sha256(subject_sha256) {
        return Err(format!("the subject's sha256 {subject_sha256:?} is not 64 lowercase hex digits"));
    }
    Ok(Statement { predicate_type, subject_name, subject_sha256: subject_sha256.to_string(), raw })
}

/// The model-signing predicate's resources, sorted by name: each a
/// relative path inside the model folder (no `..`, not absolute, no empty
/// component), sha256 only, each name once, at most [`MAX_RESOURCES`].
pub fn model_resources(s: &Statement) -> Result<Vec<Resource>, String> {
    resources_within(s, MAX_RESOURCES)
}

fn resources_within(s: &Statement, max: usize) -> Result<Vec<Resource>, String> {
    if s.predicate_type != MODEL_PREDICATE {
        return Err(format!("predicateType {} is not {MODEL_PREDICATE}", s.predicate_type));
    }
    let method = &s.raw["predicate"]["serialization"]["method"];
    if !method.is_null() && method != "files" {
        return Err(format!("serialization method {method} is not `files` (one digest per file)"));
    }
    let list = s.raw["predicate"]["resources"].as_array().ok_or("the predicate has no resources list")?;
    if list.len() > max {
        return Err(format!("{} resources, over the limit of {max}", list.len()));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(list.len());
    for (i, r) in list.iter().enumerate() {
        let name = r["name"].as_str().ok_or_else(|| format!("resource {i} has no name"))?;
        check_name(name).map_err(|why| format!("resource {i} {}: {why}", shown(name)))?;
        if r["algorithm"] != "sha256" {
            return Err(format!("resource {}: algorithm {} is not sha256", shown(name), r["algorithm"]));
        }
        let digest = r["digest"].as_str().filter(|d| is_sha256(d));
        let digest =
            digest.ok_or_else(|| format!("resource {}: digest is not 64 lowercase hex digits", shown(name)))?;
        if !seen.insert(name) {
            return Err(format!("resource {} is listed twice", shown(name)));
        }
        out.push(Resource { name: name.to_string(), digest: digest.to_string() });
    }
    out.sort();
    Ok(out)
}

/// A name quoted for a message: escaped, and cut at 200 characters.
fn shown(name: &str) -> String {
    let cut: String = name.chars().take(200).collect();
    format!("{:?}{}", cut, if cut.len() < name.len() { "…" } else { "" })
}

fn check_name(name: &str) -> Result<(), &'static str> {
    if name.starts_with('/') || name.contains('\\') || name.get(1..2) == Some(":") {
        return Err("is absolute");
    }
    if name.chars().any(char::is_control) {
        return Err("holds a control character");
    }
    for part in name.split('/') {
        match part {
            "" => return Err("has an empty path component"),
            "." | ".." => return Err("has a `.` or `..` component"),
            _ => {}
        }
    }
    Ok(())
}

fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

    fn bundle_text(payload: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD;
        json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {"publicKey": {"hint": "abc"}, "tlogEntries": []},
            "dsseEnvelope": {"payload": b64.encode(payload), "payloadType": PAYLOAD_TYPE,
                "signatures": [{"sig": b64.encode(b"der"), "keyid": ""}]},
        })
        .to_string()
    }

    fn statement(resources: Value) -> Statement {
        let raw = json!({"_type": STATEMENT_TYPE, "subject": [{"name": "m", "digest": {"sha256": A}}],
            "predicateType": MODEL_PREDICATE, "predicate": {"resources": resources}});
        parse_statement(raw.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_key_mode_bundle_reads_to_its_envelope() {
        let e = parse_bundle(&bundle_text(b"{}")).unwrap();
        assert_eq!(
            (e.key_hint.as_deref(), e.payload.as_slice(), e.signature.as_slice()),
            (Some("abc"), &b"{}"[..], &b"der"[..])
        );
    }

    #[test]
    fn other_bundles_are_refused_saying_why() {
        let mut v: Value = serde_json::from_str(&bundle_text(b"{}")).unwrap();
        v["verificationMaterial"]["certificate"] = json!({"rawBytes": "AA=="});
        assert!(parse_bundle(&v.to_string()).unwrap_err().contains("more than one of publicKey"));
        // Keyless: the certificate alone; the whole text goes on to the verifier.
        v["verificationMaterial"].as_object_mut().unwrap().remove("publicKey");
        let e = parse_bundle(&v.to_string()).unwrap();
        assert_eq!(e.keyless.as_deref(), Some(v.to_string().as_str()));
        assert!(e.chain.is_empty() && e.key_hint.is_none());
        let mut v: Value = serde_json::from_str(&bundle_text(b"{}")).unwrap();
        v["dsseEnvelope"]["signatures"] = json!([]);
        assert!(parse_bundle(&v.to_string()).unwrap_err().contains("0 signatures"));
        v["mediaType"] = json!("x");
        assert!(parse_bundle(&v.to_string()).unwrap_err().contains("mediaType"));
        assert!(parse_bundle("not json").unwrap_err().contains("not a Sigstore bundle"));
        let big = " ".repeat(MAX_SIGNATURE_BYTES + 1);
        assert!(parse_bundle(&big).unwrap_err().contains("over the limit"));
    }

    #[test]
    fn a_payload_that_is_not_a_json_statement_is_refused() {
        assert!(parse_statement(b"\xff\x00 not json").unwrap_err().contains("not JSON"));
        assert!(parse_statement(b"{\"_type\": \"x\"}").unwrap_err().contains("statement type"));
    }

    #[test]
    fn resources_are_checked_one_by_one() {
        let r = |name: &str| json!({"name": name, "algorithm": "sha256", "digest": A});
        let ok = model_resources(&statement(json!([r("b/c.json"), r("a")]))).unwrap();
        assert_eq!(ok.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["a", "b/c.json"]);
        for (bad, why) in [
            ("../x", "`..`"),
            ("a/../../x", "`..`"),
            ("/etc/passwd", "absolute"),
            ("C:/x", "absolute"),
            ("a//b", "empty"),
            ("a\nb", "control"),
        ] {
            let err = model_resources(&statement(json!([r(bad)]))).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let err = model_resources(&statement(json!([r("a"), r("a")]))).unwrap_err();
        assert!(err.contains("listed twice"), "{err}");
        let md5 = json!([{"name": "a", "algorithm": "md5", "digest": A}]);
        assert!(model_resources(&statement(md5)).unwrap_err().contains("not sha256"));
        let short = json!([{"name": "a", "algorithm": "sha256", "digest": "abc"}]);
        assert!(model_resources(&statement(short)).unwrap_err().contains("64 lowercase hex"));
    }

    #[test]
    fn more_resources_than_the_bound_are_refused() {
        let list: Vec<Value> =
            (0..11).map(|i| json!({"name": format!("f{i}"), "algorithm": "sha256", "digest": A})).collect();
        let s = statement(Value::Array(list));
        assert!(resources_within(&s, 10).unwrap_err().contains("11 resources, over the limit of 10"));
        assert_eq!(resources_within(&s, 11).unwrap().len(), 11);
    }

    #[test]
    fn another_predicate_is_not_read_as_a_model_signature() {
        let mut s = statement(json!([]));
        s.predicate_type = "https://bundlegate.dev/release/v1".into();
        assert!(model_resources(&s).unwrap_err().contains("predicateType"));
    }
}
