//! The signature policy judged: the release's `model.sig` (the OpenSSF
//! model-signing statement over its files) and `release.sig` (bundlegate's
//! statement over the release digest) verified under the keys `--config`
//! allows, then compared with the bundle. Plain data in (the files' texts,
//! read by `adapters::bundle_files` or the store), diagnostics and a step
//! out; the cryptography is `signing`'s, the parsing
//! `parse::sigstore`'s.

use std::collections::BTreeMap;

use p256::ecdsa::VerifyingKey;
use serde_json::json;

use crate::bundle::Loaded;
use crate::checks::sign::{MODEL_SIG, RELEASE_SIG};
use crate::diag::{Code, Diagnostic, Overrides, Severity, Span};
use crate::report::{StepReport, Verdict};
use crate::signing::{self, Envelope, Parsed, Resource, Statement};

/// `signature.mode` in `--config`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mode {
    /// No signature is read (no `signature` block).
    #[default]
    Off,
    /// Unsigned is a warning; a present signature that fails is an error.
    Optional,
    /// A model signature from an allowed key must cover the bundle's files.
    Required,
}

/// A public key the policy allows, named as the config file names it.
#[derive(Debug, Clone)]
pub(crate) struct AllowedKey {
    pub(crate) name: String,
    pub(crate) key: VerifyingKey,
    /// The sha256 of its public key PEM (`model_signing`'s key hint).
    pub(crate) hint: String,
}

/// The signature policy, keys read.
#[derive(Debug, Clone, Default)]
pub(crate) struct Policy {
    pub(crate) mode: Mode,
    pub(crate) keys: Vec<AllowedKey>,
    /// Certificate mode: the trusted root's CAs and who may sign.
    pub(crate) certs: CertTrust,
    /// The ConfigMap (the platform's, holding the allowed public keys)
    /// that rendered pods mount for the verifier to check the signatures
    /// again before hashing; `None`: the pod does not check them.
    pub(crate) pod_trust: Option<String>,
}

/// Certificate mode's trust: the CAs of `trustedRoot`, the identities
/// `certificateIdentities` allows, and the time validity is checked at
/// (seconds since the epoch; the loader's clock).
#[derive(Debug, Clone, Default)]
pub(crate) struct CertTrust {
    pub(crate) anchors: Vec<x509_cert::Certificate>,
    pub(crate) identities: Vec<Identity>,
    pub(crate) now: u64,
    /// Keyless mode: the same trusted root's logs and CAs, when it lists a
    /// transparency log (`None`: keyless signatures cannot verify).
    pub(crate) keyless: Option<signing::keyless::KeylessTrust>,
}

/// One allowed signer in certificate mode: a subject alternative name of
/// the signing certificate, and its issuer (Fulcio's OIDC issuer, or the
/// issuing CA's name as RFC 4514 writes it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct Identity {
    pub(crate) identity: String,
    pub(crate) issuer: String,
}

/// One signature file as gathered: where it was (as shown) and what it
/// parsed to (`parse::sigstore::parse_file`), or why it could not be read
/// or parsed (too large, not UTF-8, not a key-mode Sigstore bundle).
#[derive(Debug, Clone)]
pub(crate) struct SigFile {
    pub(crate) shown: String,
    pub(crate) parsed: Result<Parsed, String>,
}

/// The signature files found for one bundle (`None`: absent).
#[derive(Debug, Clone, Default)]
pub(crate) struct Signatures {
    /// `model.sig` next to the bundle file.
    pub(crate) model: Option<SigFile>,
    /// `release.sig` next to the bundle file.
    pub(crate) release: Option<SigFile>,
    /// `model.sig` in the store beside the files (`verify` only), as
    /// publishers ship it.
    pub(crate) store_model: Option<SigFile>,
}

/// Who vouched for what: one verified signature file.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Signer {
    pub(crate) file: String,
    /// The allowed key's name (its path as the config writes it).
    pub(crate) key: String,
    pub(crate) key_hint: String,
    /// What it signs: "5 file(s)" or "release sha256:…".
    pub(crate) signs: String,
    /// Certificate mode: the identity and issuer that matched the policy
    /// (`key` then names them; `keyHint` is the certificate's sha256).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) identity: Option<Identity>,
}

/// The judgment: findings, and who signed.
#[derive(Debug, Default)]
pub(crate) struct Judgment {
    pub(crate) diagnostics: Vec<Diagnostic>,
    pub(crate) signers: Vec<Signer>,
    /// Did a model signature verify and cover the bundle (no finding)?
    pub(crate) model_covered: bool,
}

/// An allowed key from its PEM text, named as the policy names it (a
/// config entry, or a file of the pod's trust folder).
pub(crate) fn allowed_key(name: &str, pem: &str) -> Result<AllowedKey, String> {
    let key = signing::public_key(pem).map_err(|e| format!("{name}: {e}"))?;
    let hint = signing::key_hint(&key).map_err(|e| format!("{name}: {e}"))?;
    Ok(AllowedKey { name: name.to_string(), key, hint })
}

/// Findings of one kind named one by one up to this many; the rest are
/// counted in one more finding (10,000 foreign names are one finding's worth).
const NAMED: usize = 20;

/// What a signature is judged against: a loaded bundle (lint, verify,
/// audit, the Argo CD plugin: findings point into its file), or the list
/// the pod's verifier was rendered with (no file to point into).
pub(crate) struct Subject<'a> {
    /// Shown as the step's subject.
    pub(crate) display: &'a str,
    /// `sha256:…`, what `release.sig` must sign.
    pub(crate) digest: &'a str,
    /// Each file's path and pinned sha256.
    pub(crate) artifacts: Vec<(&'a str, Option<&'a str>)>,
    /// The release as messages name it, and where its signatures were looked for.
    name: String,
    looked: &'static str,
    loaded: Option<&'a Loaded>,
}

impl<'a> Subject<'a> {
    pub(crate) fn of(l: &'a Loaded) -> Subject<'a> {
        Subject {
            display: &l.display,
            digest: &l.digest,
            artifacts: l.bundle.spec.model.artifacts.iter().map(|a| (a.path.as_str(), a.sha256.as_deref())).collect(),
            name: format!("release {}", l.bundle.metadata.version),
            looked: "next to its bundle file (nor in its store)",
            loaded: Some(l),
        }
    }

    /// The pod's view: the rendered artifact list and the signatures the
    /// verifier's environment carries.
    pub(crate) fn pod(display: &'a str, digest: &'a str, artifacts: Vec<(&'a str, Option<&'a str>)>) -> Subject<'a> {
        Subject {
            display,
            digest,
            artifacts,
            name: format!("release {digest}"),
            looked: "in the pod's environment",
            loaded: None,
        }
    }

    fn span(&self, field: &str) -> Option<Span> {
        self.loaded.and_then(|l| l.span(field))
    }
}

/// Judge the bundle's signatures under the policy. `Mode::Off` reads nothing
/// and finds nothing.
pub(crate) fn judge(l: &Subject, policy: &Policy, sigs: &Signatures) -> Judgment {
    let mut j = Judgment::default();
    if policy.mode == Mode::Off {
        return j;
    }
    let models: Vec<&SigFile> = [&sigs.model, &sigs.store_model].into_iter().flatten().collect();
    for f in &models {
        if let Some((parsed, _, signer)) = verified(l, policy, f, &mut j.diagnostics) {
            let before = j.diagnostics.len();
            match &parsed.resources {
                Ok(rs) => compare(l, f, rs, &mut j.diagnostics),
                Err(why) => j.diagnostics.push(malformed(l, f, why)),
            }
            let covered = j.diagnostics.len() == before;
            j.model_covered |= covered;
            j.signers.push(Signer { signs: format!("{} file(s)", l.artifacts.len()), ..signer });
        }
    }
    if models.is_empty() {
        let mut d = Diagnostic::new(Code::SignatureMissing, missing_message(l))
            .at(l.span("metadata.name"))
            .help("sign it: `bundlegate sign <bundle> --key <private key>` (docs/signing.md)");
        if policy.mode == Mode::Optional {
            d = d.severity(Severity::Warning);
        }
        j.diagnostics.push(d);
    }
    if let Some(f) = &sigs.release {
        release(l, policy, f, &mut j);
    }
    j
}

fn missing_message(l: &Subject) -> String {
    format!("{} has no {MODEL_SIG} {}", l.name, l.looked)
}

fn release(l: &Subject, policy: &Policy, f: &SigFile, j: &mut Judgment) {
    let Some((_, statement, signer)) = verified(l, policy, f, &mut j.diagnostics) else { return };
    let hex = l.digest.strip_prefix("sha256:").unwrap_or(l.digest);
    if statement.predicate_type != signing::RELEASE_PREDICATE {
        let why = format!("predicateType {} is not {}", statement.predicate_type, signing::RELEASE_PREDICATE);
        j.diagnostics.push(malformed(l, f, &why));
    } else if statement.subject_sha256 != hex {
        j.diagnostics.push(
            Diagnostic::new(
                Code::ReleaseSignatureMismatch,
                format!(
                    "{} signs release sha256:{}, this bundle is {}: a setting changed after signing",
                    f.shown, statement.subject_sha256, l.digest
                ),
            )
            .at(l.span("metadata.version"))
            .evidence(format!("signed subject: {}", statement.subject_name))
            .help("review the change, then sign again (`bundlegate sign`), or undo it"),
        );
    }
    j.signers.push(Signer { signs: format!("release sha256:{}", statement.subject_sha256), ..signer });
}

/// The file parsed and its signature verified under an allowed key, or the
/// finding saying why not.
fn verified<'a>(
    l: &Subject,
    policy: &Policy,
    f: &'a SigFile,
    out: &mut Vec<Diagnostic>,
) -> Option<(&'a Parsed, &'a Statement, Signer)> {
    let p = match &f.parsed {
        Ok(p) => p,
        Err(why) => {
            out.push(malformed(l, f, why));
            return None;
        }
    };
    let signer = if let Some(text) = &p.envelope.keyless {
        match keyless(l, policy, f, text, &p.statement) {
            Ok(s) => s,
            Err(d) => {
                out.push(*d);
                return None;
            }
        }
    } else if p.envelope.chain.is_empty() {
        let Some(k) = allowed_signer(policy, &p.envelope) else {
            out.push(untrusted(l, policy, f, &p.envelope));
            return None;
        };
        Signer {
            file: f.shown.clone(),
            key: k.name.clone(),
            key_hint: k.hint.clone(),
            signs: String::new(),
            identity: None,
        }
    } else {
        match certified(l, policy, f, &p.envelope) {
            Ok(s) => s,
            Err(d) => {
                out.push(*d);
                return None;
            }
        }
    };
    match &p.statement {
        Ok(s) => Some((p, s, signer)),
        Err(why) => {
            out.push(malformed(l, f, why));
            None
        }
    }
}

/// Certificate mode: the chain walked to the trusted root at the policy's
/// time, the DSSE signature under the signing certificate's key, and its
/// identity among the allowed ones; or the finding saying which failed.
fn certified(l: &Subject, policy: &Policy, f: &SigFile, env: &Envelope) -> Result<Signer, Box<Diagnostic>> {
    use crate::signing::cert::{self, ChainError};
    let ct = &policy.certs;
    let at = l.span("metadata.name");
    let finding =
        |code: Code, why: String| Box::new(Diagnostic::new(code, format!("{}: {why}", f.shown)).at(at.clone()));
    if ct.anchors.is_empty() {
        return Err(finding(
            Code::SignatureUntrusted,
            "signed with a certificate, and the policy names no trustedRoot to check it against".into(),
        ));
    }
    let signer = match cert::verify_chain(&env.chain, &ct.anchors, ct.now) {
        Ok(s) => s,
        Err(ChainError::Malformed(why)) => return Err(Box::new(malformed(l, f, &why))),
        Err(ChainError::Expired(why)) => return Err(finding(Code::SigningCertificateExpired, why)),
        Err(ChainError::Untrusted(why)) => return Err(finding(Code::SignatureUntrusted, why)),
    };
    if !signer.key.verifies_dsse(&signing::pae(signing::PAYLOAD_TYPE, &env.payload), &env.signature) {
        return Err(finding(
            Code::SignatureUntrusted,
            "the signature does not verify under its signing certificate's key".into(),
        ));
    }
    let allowed = ct.identities.iter().find(|i| i.issuer == signer.issuer && signer.identities.contains(&i.identity));
    let Some(id) = allowed else {
        let mut d = *finding(
            Code::SignerIdentityNotAllowed,
            format!(
                "signed by {} (issuer {}), not an identity the policy allows",
                if signer.identities.is_empty() {
                    "a certificate without e-mail, URI or DNS names".to_string()
                } else {
                    signer.identities.join(", ")
                },
                signer.issuer
            ),
        );
        for i in &ct.identities {
            d = d.evidence(format!("allowed: {} (issuer {})", i.identity, i.issuer));
        }
        return Err(Box::new(d));
    };
    Ok(Signer {
        file: f.shown.clone(),
        key: format!("{} (issuer {})", id.identity, id.issuer),
        key_hint: signer.fingerprint,
        signs: String::new(),
        identity: Some(id.clone()),
    })
}

/// Keyless mode: the Fulcio certificate, its SCT and the log entry verified
/// against the trusted root at the time the log recorded, the signature
/// over the statement, and the certificate's identity among the allowed
/// ones; or the finding saying which failed.
fn keyless(
    l: &Subject,
    policy: &Policy,
    f: &SigFile,
    text: &str,
    statement: &Result<Statement, String>,
) -> Result<Signer, Box<Diagnostic>> {
    use crate::signing::keyless::{self, Outcome};
    let ct = &policy.certs;
    let finding = |code: Code, why: String| {
        Box::new(Diagnostic::new(code, format!("{}: {why}", f.shown)).at(l.span("metadata.name")))
    };
    let Some(trust) = &ct.keyless else {
        let why = if ct.anchors.is_empty() {
            "signed keyless (a Fulcio certificate and a transparency-log entry), and the policy names no trustedRoot"
        } else {
            "signed keyless (a Fulcio certificate and a transparency-log entry), and the policy's trustedRoot lists no transparency log (tlogs) to check it against"
        };
        return Err(finding(Code::SignatureUntrusted, why.into()));
    };
    // The log entry signs the statement; one that cannot be read is malformed
    // before anything is verified.
    let subject = match statement {
        Ok(s) => s.subject_sha256.as_str(),
        Err(why) => return Err(Box::new(malformed(l, f, why))),
    };
    let allowed: Vec<(&str, &str)> = ct.identities.iter().map(|i| (i.identity.as_str(), i.issuer.as_str())).collect();
    match keyless::verify(trust, text, subject, &allowed) {
        Outcome::Allowed { index, claims } => {
            let id = &ct.identities[index];
            Ok(Signer {
                file: f.shown.clone(),
                key: format!("{} (issuer {})", id.identity, id.issuer),
                key_hint: claims.signed_at.map_or_else(|| "keyless".into(), |t| format!("keyless, logged at {t}")),
                signs: String::new(),
                identity: Some(id.clone()),
            })
        }
        Outcome::NotAllowed(c) => {
            let mut d = *finding(
                Code::SignerIdentityNotAllowed,
                format!("signed keyless by {} (issuer {}), not an identity the policy allows", c.identity, c.issuer),
            );
            for i in &ct.identities {
                d = d.evidence(format!("allowed: {} (issuer {})", i.identity, i.issuer));
            }
            Err(Box::new(d))
        }
        Outcome::Malformed(why) => Err(Box::new(malformed(l, f, &why))),
        Outcome::Failed(why) => {
            Err(finding(Code::SignatureUntrusted, format!("the keyless signature does not verify: {why}")))
        }
    }
}

/// The allowed key the signature verifies under: the one its hint names
/// first, then every other.
fn allowed_signer<'a>(policy: &'a Policy, env: &Envelope) -> Option<&'a AllowedKey> {
    let hinted = policy.keys.iter().filter(|k| env.key_hint.as_deref() == Some(k.hint.as_str()));
    let rest = policy.keys.iter().filter(|k| env.key_hint.as_deref() != Some(k.hint.as_str()));
    hinted.chain(rest).find(|k| signing::verifies(env, &k.key))
}

fn malformed(l: &Subject, f: &SigFile, why: &str) -> Diagnostic {
    Diagnostic::new(Code::SignatureMalformed, format!("{}: {why}", f.shown))
        .at(l.span("metadata.name"))
        .help("sign the release again with `bundlegate sign` or `model_signing sign key`")
}

fn untrusted(l: &Subject, policy: &Policy, f: &SigFile, env: &Envelope) -> Diagnostic {
    let short = |h: &str| h.get(..12).unwrap_or(h).to_string();
    let hint = env.key_hint.as_deref().map_or_else(|| "no key hint".to_string(), |h| format!("key hint {}", short(h)));
    let mut d = Diagnostic::new(
        Code::SignatureUntrusted,
        format!("{}: the signature does not verify under any allowed key ({hint})", f.shown),
    )
    .at(l.span("metadata.name"));
    for k in &policy.keys {
        d = d.evidence(format!("allowed: {} (key {})", k.name, short(&k.hint)));
    }
    d
}

/// The signed resources against the bundle's artifacts, by name.
fn compare(l: &Subject, f: &SigFile, rs: &[Resource], out: &mut Vec<Diagnostic>) {
    let signed: BTreeMap<&str, &str> = rs.iter().map(|r| (r.name.as_str(), r.digest.as_str())).collect();
    let arts = &l.artifacts;
    let listed: BTreeMap<&str, usize> = arts.iter().enumerate().map(|(i, a)| (a.0, i)).collect();
    let mut found = Vec::new();
    for (name, _) in signed.iter().filter(|(n, _)| !listed.contains_key(*n)) {
        found.push(Diagnostic::new(
            Code::SignedFileNotInBundle,
            format!("{} signs {name:?}, which the bundle does not list", f.shown),
        ));
    }
    capped(l, f, Code::SignedFileNotInBundle, found, out);
    let mut unsigned = Vec::new();
    for (i, &(path, sha)) in arts.iter().enumerate() {
        let at = l.span(&format!("spec.model.artifacts[{i}]"));
        match (signed.get(path), sha) {
            (None, _) => unsigned.push(
                Diagnostic::new(Code::BundleFileNotSigned, format!("{path} is not covered by {}", f.shown)).at(at),
            ),
            (Some(s), Some(b)) if *s != b => out.push(
                Diagnostic::new(
                    Code::SignedDigestMismatch,
                    format!("{path}: {} signs sha256 {s}, the bundle pins {b}", f.shown),
                )
                .at(l.span(&format!("spec.model.artifacts[{i}].sha256")))
                .field(format!("spec.model.artifacts[{i}].sha256")),
            ),
            // No sha256 in the bundle: lint's BG003 fails it; nothing to compare.
            _ => {}
        }
    }
    capped(l, f, Code::BundleFileNotSigned, unsigned, out);
}

/// The first [`NAMED`] findings, then one counting the rest.
fn capped(l: &Subject, f: &SigFile, code: Code, mut found: Vec<Diagnostic>, out: &mut Vec<Diagnostic>) {
    let more = found.len().saturating_sub(NAMED);
    found.truncate(NAMED);
    for d in found {
        let spanned = d.span.is_some();
        out.push(if spanned { d } else { d.at(l.span("spec.model.artifacts")) });
    }
    if more > 0 {
        out.push(
            Diagnostic::new(code, format!("{} more file(s) like the above in {}", more, f.shown))
                .at(l.span("spec.model.artifacts")),
        );
    }
}

/// The `signature` step of one bundle, or none when the policy is off.
pub(crate) fn check(l: &Loaded, policy: &Policy, sigs: &Signatures, ov: &Overrides) -> Option<StepReport> {
    let subject = Subject::of(l);
    (policy.mode != Mode::Off).then(|| step(&subject, policy, judge(&subject, policy, sigs), ov))
}

/// The `signature` step: the judgment with overrides applied, written up.
/// Never PASS under `required` unless a model signature verified and
/// covered the bundle (a finding allowed away still checked nothing).
pub(crate) fn step(l: &Subject, policy: &Policy, j: Judgment, ov: &Overrides) -> StepReport {
    let mut s = StepReport::new("signature", l.display);
    s.diagnostics = ov.apply(j.diagnostics);
    s.verdict = s.verdict_from_diagnostics();
    if s.verdict == Verdict::Pass && policy.mode == Mode::Required && !j.model_covered {
        s.verdict = Verdict::Inconclusive;
    }
    let who: Vec<String> = j
        .signers
        .iter()
        .map(|g| match &g.identity {
            None => format!("{} signed by key {} ({}): {}", g.file, short(&g.key_hint), g.key, g.signs),
            Some(_) => format!("{} signed by {} with certificate {}: {}", g.file, g.key, short(&g.key_hint), g.signs),
        })
        .collect();
    s.summary = match (who.is_empty(), s.verdict) {
        (true, _) => format!("{}: unsigned or not verified", mode_name(policy.mode)),
        (false, Verdict::Pass) => format!("verified: {}", who.join("; ")),
        (false, _) => format!("{} finding(s); {}", s.diagnostics.len(), who.join("; ")),
    };
    s.data = json!({"mode": mode_name(policy.mode), "releaseDigest": l.digest, "signers": j.signers});
    s
}

fn short(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

fn mode_name(m: Mode) -> &'static str {
    match m {
        Mode::Off => "off",
        Mode::Optional => "optional",
        Mode::Required => "required",
    }
}

/// The keys of the verifier's [`SIGNATURE_ENV`](crate::bundle::pod_verifier::SIGNATURE_ENV)
/// object: each signature file as the JSON it is.
pub(crate) const POD_FILES: [&str; 2] = [MODEL_SIG, RELEASE_SIG];

/// The verifier's signature env var: `{"model.sig": {…}, "release.sig": {…}}`,
/// each present file's Sigstore bundle as JSON (whose DSSE payload and
/// signature are base64 inside, so re-encoding changes nothing signed).
/// `None` when no file is present; too large or not JSON: why.
pub(crate) fn pod_env(files: &[(&str, &str)]) -> Result<Option<String>, String> {
    use crate::bundle::pod_verifier::MAX_POD_SIGNATURE_BYTES;
    let mut obj = serde_json::Map::new();
    for (name, text) in files {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{name} is not JSON: {e}"))?;
        obj.insert((*name).to_string(), v);
    }
    if obj.is_empty() {
        return Ok(None);
    }
    let text = serde_json::Value::Object(obj).to_string();
    if text.len() > MAX_POD_SIGNATURE_BYTES {
        return Err(format!(
            "the signatures take {} bytes, over the {MAX_POD_SIGNATURE_BYTES} a pod's environment may carry (the object would near the API server's request limit); keep the pod check off (no signature.podTrustConfigMap) for this release",
            text.len()
        ));
    }
    Ok(Some(text))
}

/// What the pod's verifier says of its signature step: who signed when it
/// passed; otherwise a heading and one line per finding (the status, the
/// log and the termination message).
pub(crate) fn pod_outcome(step: &StepReport) -> Result<String, (String, Vec<String>)> {
    if step.verdict == Verdict::Pass {
        return Ok(step.summary.clone());
    }
    let lines = step.diagnostics.iter().map(|d| format!("signature: {}", d.message)).collect();
    Err((format!("the signature check failed ({})", step.summary), lines))
}

/// The store's `model.sig` at the prefix root is the signature, not an
/// EXTRA object, when the policy reads it and the bundle does not list it.
pub(crate) fn is_store_signature(l: &Loaded, policy: &Policy, key: &str) -> bool {
    policy.mode != Mode::Off && key == MODEL_SIG && !l.bundle.spec.model.artifacts.iter().any(|a| a.path == key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::SigningKey;

    fn key() -> SigningKey {
        SigningKey::random(&mut p256::elliptic_curve::rand_core::OsRng)
    }

    fn allowed(k: &SigningKey) -> AllowedKey {
        AllowedKey {
            name: "keys/a.pub.pem".into(),
            key: *k.verifying_key(),
            hint: signing::key_hint(k.verifying_key()).unwrap(),
        }
    }

    fn signed(l: &Loaded, k: &SigningKey) -> Signatures {
        let model = signing::model_statement("v2", &l.bundle.spec.model.artifacts).unwrap();
        let f = |name: &str, text: String| Some(file(name, text));
        Signatures {
            model: f("model.sig", signing::sign(&model, k).unwrap()),
            release: f("release.sig", signing::sign(&signing::release_statement(l), k).unwrap()),
            store_model: None,
        }
    }

    fn file(name: &str, text: String) -> SigFile {
        SigFile { shown: name.into(), parsed: crate::parse::sigstore::parse_file(&text) }
    }

    fn judge_l(l: &Loaded, p: &Policy, s: &Signatures) -> Judgment {
        judge(&Subject::of(l), p, s)
    }

    fn codes(j: &Judgment) -> Vec<&str> {
        j.diagnostics.iter().map(|d| d.code.as_str()).collect()
    }

    fn required(k: &SigningKey) -> Policy {
        Policy { mode: Mode::Required, keys: vec![allowed(k)], ..Policy::default() }
    }

    #[test]
    fn a_release_signed_by_an_allowed_key_passes_and_names_the_signer() {
        let l = crate::bundle::example();
        let k = key();
        let j = judge_l(&l, &required(&k), &signed(&l, &k));
        assert!(j.diagnostics.is_empty(), "{:?}", j.diagnostics);
        assert!(j.model_covered);
        let s = step(&Subject::of(&l), &required(&k), j, &Overrides::default());
        assert_eq!(s.verdict, Verdict::Pass);
        assert!(s.summary.contains(short(&allowed(&k).hint)) && s.summary.contains("keys/a.pub.pem"), "{}", s.summary);
    }

    #[test]
    fn unsigned_is_an_error_under_required_a_warning_under_optional_nothing_when_off() {
        let l = crate::bundle::example();
        let k = key();
        let j = judge_l(&l, &required(&k), &Signatures::default());
        assert_eq!(codes(&j), ["BG701"]);
        assert_eq!(j.diagnostics[0].severity, Severity::Error);
        let optional = Policy { mode: Mode::Optional, keys: vec![allowed(&k)], ..Policy::default() };
        let j = judge_l(&l, &optional, &Signatures::default());
        assert_eq!(j.diagnostics[0].severity, Severity::Warning);
        assert!(judge_l(&l, &Policy::default(), &Signatures::default()).diagnostics.is_empty());
        // BG701 allowed away under required: still not PASS.
        let mut ov = Overrides::default();
        ov.set("BG701", Severity::Allow).unwrap();
        let s = step(&Subject::of(&l), &required(&k), judge_l(&l, &required(&k), &Signatures::default()), &ov);
        assert_eq!(s.verdict, Verdict::Inconclusive);
    }

    #[test]
    fn another_key_and_a_changed_bundle_are_caught() {
        let mut l = crate::bundle::example();
        let k = key();
        let sigs = signed(&l, &k);
        assert_eq!(codes(&judge_l(&l, &required(&key()), &sigs)), ["BG703", "BG703"]);
        // One artifact's digest changed, one dropped, one added after signing.
        let arts = &mut l.bundle.spec.model.artifacts;
        arts[0].sha256 = Some("0".repeat(64));
        let dropped = arts.remove(1);
        let mut added = arts[0].clone();
        added.path = "new.bin".into();
        arts.push(added);
        let j = judge_l(&l, &required(&k), &sigs);
        let c = codes(&j);
        assert!(c.contains(&"BG704") && c.contains(&"BG705") && c.contains(&"BG706"), "{c:?} ({})", dropped.path);
    }

    #[test]
    fn a_release_digest_changed_after_signing_fails_release_sig() {
        let mut l = crate::bundle::example();
        let k = key();
        let sigs = signed(&l, &k);
        l.digest = format!("sha256:{}", "1".repeat(64));
        assert_eq!(codes(&judge_l(&l, &required(&k), &sigs)), ["BG707"]);
    }

    #[test]
    fn a_malformed_file_and_ten_thousand_foreign_names_are_findings() {
        let l = crate::bundle::example();
        let k = key();
        let mut sigs = signed(&l, &k);
        sigs.model = Some(SigFile { shown: "model.sig".into(), parsed: Err("over the limit".into()) });
        assert_eq!(codes(&judge_l(&l, &required(&k), &sigs)), ["BG702"]);
        let many: Vec<serde_json::Value> = (0..10_000)
            .map(|i| json!({"name": format!("f{i}"), "algorithm": "sha256", "digest": "0".repeat(64)}))
            .collect();
        let mut st = signing::model_statement("v2", &l.bundle.spec.model.artifacts).unwrap();
        st["predicate"]["resources"] = serde_json::Value::Array(many);
        sigs.model = Some(file("model.sig", signing::sign(&st, &k).unwrap()));
        let j = judge_l(&l, &required(&k), &sigs);
        assert!(!j.model_covered);
        assert_eq!(j.diagnostics.iter().filter(|d| d.code == Code::SignedFileNotInBundle).count(), NAMED + 1);
    }
}
