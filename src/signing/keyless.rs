//! The model-signing format's keyless mode: the Sigstore bundle carries a
//! short-lived Fulcio certificate (`verificationMaterial.certificate`) and
//! a Rekor transparency-log entry instead of a key. What proves it is the
//! log: the certificate is valid only for minutes, so its chain is checked
//! at the time the log (or a timestamp authority) says the signature was
//! made, the entry's promise or inclusion proof under the log's key, and
//! the certificate's embedded SCT under the CT log's key. All of it comes
//! from one trusted root (`trusted_root.json`: `tlogs`, `ctlogs`,
//! `certificateAuthorities`, `timestampAuthorities`), read offline: nothing
//! is fetched. The verification is sigstore-rust's (`sigstore-verify`,
//! the Sigstore project's own Rust verifier), not hand-written here; this
//! module only chooses the policy and names the outcome. No I/O.

use std::sync::Arc;

use sigstore_verify::types::{Artifact, ArtifactDigest, Bundle, Sha256Hash};
use sigstore_verify::{VerificationPolicy, Verifier};

/// A trusted root able to verify keyless signatures (it lists at least one
/// transparency log), prepared once per run.
#[derive(Clone)]
pub struct KeylessTrust(Arc<Verifier>);

impl std::fmt::Debug for KeylessTrust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeylessTrust")
    }
}

/// The trusted root's text → its keyless verifier, `Ok(None)` when it lists
/// no transparency log (a private CA's root, for certificate mode only).
/// Keys or certificates the verifier cannot use are an error naming them.
pub fn trust(trusted_root: &str) -> Result<Option<KeylessTrust>, String> {
    // A private CA's root for certificate mode is not held to the fields a
    // whole Sigstore instance's root has (its CAs' `uri`, log keys…).
    let v: serde_json::Value =
        serde_json::from_str(trusted_root).map_err(|e| format!("not a Sigstore trusted root (JSON): {e}"))?;
    if v["tlogs"].as_array().is_none_or(|a| a.is_empty()) {
        return Ok(None);
    }
    let root = sigstore_verify::trust_root::TrustedRoot::from_json(trusted_root)
        .map_err(|e| format!("it lists transparency logs, so keyless signatures are checked against it, but it is not a whole Sigstore trusted root: {e}"))?;
    let v =
        Verifier::new(&root).map_err(|e| format!("its keys and certificates cannot verify keyless signatures: {e}"))?;
    Ok(Some(KeylessTrust(Arc::new(v))))
}

/// Who a verified keyless signature names: the certificate's subject
/// alternative name and its OIDC issuer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    pub identity: String,
    pub issuer: String,
    /// When the log says it was signed (seconds since the epoch).
    pub signed_at: Option<i64>,
}

/// What a keyless signature came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Verified, and signed by the allowed identity at this index.
    Allowed { index: usize, claims: Claims },
    /// Verified, by an identity none of the allowed ones names.
    NotAllowed(Claims),
    /// The bundle cannot be read as a Sigstore bundle.
    Malformed(String),
    /// The certificate, log entry or signature does not verify.
    Failed(String),
}

/// Verify a keyless Sigstore bundle that signs an in-toto statement whose
/// subject is `subject_sha256` (hex), for the first of `allowed`
/// (identity, issuer) that it names. The subject binds the log entry to
/// the statement; what the statement says is the caller's to compare.
pub fn verify(trust: &KeylessTrust, bundle_text: &str, subject_sha256: &str, allowed: &[(&str, &str)]) -> Outcome {
    let bundle = match Bundle::from_json(bundle_text) {
        Ok(b) => b,
        Err(e) => return Outcome::Malformed(format!("not a Sigstore bundle: {e}")),
    };
    let digest = match Sha256Hash::from_hex(subject_sha256) {
        Ok(h) => ArtifactDigest::from(h),
        Err(e) => return Outcome::Malformed(format!("the subject's sha256: {e}")),
    };
    let verifier = &trust.0;
    for (index, (identity, issuer)) in allowed.iter().enumerate() {
        let policy = VerificationPolicy::new(*identity, *issuer);
        if let Ok(r) = verifier.verify(Artifact::from_digest(digest.clone()), &bundle, &policy) {
            return Outcome::Allowed { index, claims: claims(&r) };
        }
    }
    // None allowed: verified with no identity asked, so a stranger's valid
    // signature is told apart from one that does not verify at all.
    match verifier.verify(Artifact::from_digest(digest), &bundle, &VerificationPolicy::any_identity()) {
        Ok(r) => Outcome::NotAllowed(claims(&r)),
        Err(e) => Outcome::Failed(e.to_string()),
    }
}

fn claims(r: &sigstore_verify::VerificationResult) -> Claims {
    Claims {
        identity: r.identity().map(|i| i.as_str().to_string()).unwrap_or_default(),
        issuer: r.issuer().unwrap_or_default().to_string(),
        signed_at: r.integrated_time().map(|t| t.as_second()),
    }
}
