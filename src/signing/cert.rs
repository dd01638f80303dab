//! The model-signing format's certificate mode: the Sigstore bundle carries
//! `verificationMaterial.x509CertificateChain` (the signing certificate
//! first, then the CAs that issued it) instead of a key hint. The chain is
//! walked to a CA of the policy's trusted root (a Sigstore `trusted_root.json`,
//! its `certificateAuthorities`), every certificate on the way within its
//! validity at `now`, each signed by the next; the signing certificate must
//! allow signing (key usage `digitalSignature` or extended key usage
//! `codeSigning`, as `model_signing` asks). Then its key verifies the DSSE
//! signature. ECDSA only (P-256 with SHA-256, P-384 with SHA-384): RSA CAs
//! are refused by name. No I/O; `now` is the caller's.
//!
//! `model_signing verify certificate` checks the chain at the signing
//! certificate's own `notBefore`, so it accepts an expired certificate;
//! there is no signed timestamp in this mode to say when it signed, so
//! bundlegate checks at `now`, and an expired certificate is a finding.

use der::{Decode, Encode};
use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::pkcs8::DecodePublicKey;
use sha2::{Digest, Sha256, Sha384};
use x509_cert::ext::pkix::name::GeneralName;
use x509_cert::ext::pkix::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAltName};
use x509_cert::Certificate;

/// Certificates one bundle's chain may carry, and bytes per certificate.
pub const MAX_CHAIN: usize = 10;
pub const MAX_CERT_BYTES: usize = 64 << 10;

const ECDSA_SHA256: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.2");
const ECDSA_SHA384: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("1.2.840.10045.4.3.3");
const KEY_USAGE: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("2.5.29.15");
const EXT_KEY_USAGE: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("2.5.29.37");
const BASIC_CONSTRAINTS: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("2.5.29.19");
const SUBJECT_ALT_NAME: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("2.5.29.17");
const CODE_SIGNING: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.5.5.7.3.3");
/// Fulcio's OIDC issuer extensions: v2 (a DER UTF8String) and v1 (raw text).
const FULCIO_ISSUER_V2: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.8");
const FULCIO_ISSUER_V1: der::oid::ObjectIdentifier = der::oid::ObjectIdentifier::new_unwrap("1.3.6.1.4.1.57264.1.1");
/// The extensions this walk understands; a certificate marking any other
/// critical must be refused (RFC 5280 4.2: name constraints, policy
/// constraints and the like would change what the certificate vouches for).
const UNDERSTOOD: [der::oid::ObjectIdentifier; 4] = [KEY_USAGE, EXT_KEY_USAGE, BASIC_CONSTRAINTS, SUBJECT_ALT_NAME];
/// Certificates walked from the signing one to a trusted CA, at most.
const MAX_DEPTH: usize = 8;

/// A public key a certificate carries (the curves the format signs with).
#[derive(Debug, Clone)]
pub enum CertKey {
    P256(p256::ecdsa::VerifyingKey),
    P384(p384::ecdsa::VerifyingKey),
}

impl CertKey {
    fn of(c: &Certificate) -> Result<CertKey, String> {
        let der = c.tbs_certificate.subject_public_key_info.to_der().map_err(|e| e.to_string())?;
        if let Ok(k) = p256::ecdsa::VerifyingKey::from_public_key_der(&der) {
            return Ok(CertKey::P256(k));
        }
        if let Ok(k) = p384::ecdsa::VerifyingKey::from_public_key_der(&der) {
            return Ok(CertKey::P384(k));
        }
        Err(format!(
            "{}: its key is not ECDSA P-256 or P-384 (algorithm {})",
            subject(c),
            c.tbs_certificate.subject_public_key_info.algorithm.oid
        ))
    }

    /// Does `sig` (DER ECDSA) sign `msg`, hashed as `alg` says?
    fn verifies(&self, alg: Hash, msg: &[u8], sig: &[u8]) -> bool {
        let digest = match alg {
            Hash::Sha256 => Sha256::digest(msg).to_vec(),
            Hash::Sha384 => Sha384::digest(msg).to_vec(),
        };
        match self {
            CertKey::P256(k) => {
                p256::ecdsa::Signature::from_der(sig).is_ok_and(|s| k.verify_prehash(&digest, &s).is_ok())
            }
            CertKey::P384(k) => {
                p384::ecdsa::Signature::from_der(sig).is_ok_and(|s| k.verify_prehash(&digest, &s).is_ok())
            }
        }
    }

    /// The DSSE signature under this key, hashed as `model_signing` hashes
    /// for the curve (SHA-256 for P-256, SHA-384 for P-384).
    pub fn verifies_dsse(&self, pae: &[u8], sig: &[u8]) -> bool {
        let alg = match self {
            CertKey::P256(_) => Hash::Sha256,
            CertKey::P384(_) => Hash::Sha384,
        };
        self.verifies(alg, pae, sig)
    }
}

#[derive(Debug, Clone, Copy)]
enum Hash {
    Sha256,
    Sha384,
}

/// Why a chain was not accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChainError {
    /// Not DER, not X.509, an unsupported algorithm: the file is malformed.
    Malformed(String),
    /// Outside its validity at `now`.
    Expired(String),
    /// No path to a trusted CA, a broken signature, a certificate that may
    /// not sign.
    Untrusted(String),
}

/// Who a verified chain names: the signing certificate's identities (its
/// subject alternative names: e-mail, URI, DNS), the issuer (Fulcio's OIDC
/// issuer extension when present, else the issuing CA's name, RFC 4514),
/// its sha256 fingerprint, and its key.
#[derive(Debug, Clone)]
pub struct Signer {
    pub identities: Vec<String>,
    pub issuer: String,
    pub fingerprint: String,
    pub key: CertKey,
}

/// A trusted CA certificate, from its DER.
pub fn anchor(der: &[u8]) -> Result<Certificate, String> {
    parse(der)
}

fn parse(der: &[u8]) -> Result<Certificate, String> {
    if der.len() > MAX_CERT_BYTES {
        return Err(format!("a certificate of {} bytes, over the limit of {MAX_CERT_BYTES}", der.len()));
    }
    Certificate::from_der(der).map_err(|e| format!("not an X.509 certificate (DER): {e}"))
}

fn subject(c: &Certificate) -> String {
    c.tbs_certificate.subject.to_string()
}

/// Walk `chain` (DER, the signing certificate first) to one of `anchors`
/// at `now` (seconds since the epoch).
pub fn verify_chain(chain: &[Vec<u8>], anchors: &[Certificate], now: u64) -> Result<Signer, ChainError> {
    if chain.is_empty() || chain.len() > MAX_CHAIN {
        return Err(ChainError::Malformed(format!("{} certificates in the chain (1 to {MAX_CHAIN})", chain.len())));
    }
    let certs = chain.iter().map(|d| parse(d)).collect::<Result<Vec<_>, _>>().map_err(ChainError::Malformed)?;
    let leaf = &certs[0];
    let key = CertKey::of(leaf).map_err(ChainError::Malformed)?;
    within(leaf, now)?;
    understood(leaf)?;
    if !may_sign(leaf).map_err(ChainError::Malformed)? {
        return Err(ChainError::Untrusted(format!(
            "the signing certificate {} allows neither digitalSignature nor codeSigning",
            subject(leaf)
        )));
    }
    let mut cur = leaf;
    // CAs walked between the signing certificate and `cur`'s issuer.
    for depth in 0..MAX_DEPTH {
        let cur_der = cur.to_der().map_err(|e| ChainError::Malformed(e.to_string()))?;
        if anchors.iter().any(|a| a.to_der().is_ok_and(|d| d == cur_der)) {
            return signer(leaf, key, &chain[0]);
        }
        let issued = |by: &Certificate| cur.tbs_certificate.issuer == by.tbs_certificate.subject && signed_by(cur, by);
        if let Some(a) = anchors.iter().find(|a| issued(a)) {
            within(a, now)?;
            path_len(a, depth)?;
            return signer(leaf, key, &chain[0]);
        }
        let next = certs[1..].iter().find(|c| issued(c)).ok_or_else(|| {
            ChainError::Untrusted(format!(
                "no certificate of the chain or of the trusted root issued {} (issuer {})",
                subject(cur),
                cur.tbs_certificate.issuer
            ))
        })?;
        if !is_ca(next).map_err(ChainError::Malformed)? {
            return Err(ChainError::Untrusted(format!(
                "{} issued a certificate but is not a CA allowed to (CA:TRUE, keyCertSign)",
                subject(next)
            )));
        }
        within(next, now)?;
        understood(next)?;
        path_len(next, depth)?;
        cur = next;
    }
    Err(ChainError::Untrusted(format!("no trusted CA within {MAX_DEPTH} certificates")))
}

fn signer(leaf: &Certificate, key: CertKey, der: &[u8]) -> Result<Signer, ChainError> {
    let (identities, issuer) = identity(leaf).map_err(ChainError::Malformed)?;
    Ok(Signer { identities, issuer, fingerprint: hex::encode(Sha256::digest(der)), key })
}

/// Refuse a certificate with a critical extension this walk does not
/// judge: accepting it would ignore a limit its issuer set.
fn understood(c: &Certificate) -> Result<(), ChainError> {
    let exts = c.tbs_certificate.extensions.as_deref().unwrap_or_default();
    match exts.iter().find(|e| e.critical && !UNDERSTOOD.contains(&e.extn_id)) {
        None => Ok(()),
        Some(e) => Err(ChainError::Untrusted(format!(
            "{} marks extension {} critical, which bundlegate does not check: refused rather than ignored",
            subject(c),
            e.extn_id
        ))),
    }
}

/// A CA's `pathLenConstraint`: at most that many CAs below it (`below`
/// counts the CAs between it and the signing certificate).
fn path_len(ca: &Certificate, below: usize) -> Result<(), ChainError> {
    let limit = extension::<BasicConstraints>(ca, BASIC_CONSTRAINTS)
        .map_err(ChainError::Malformed)?
        .and_then(|b| b.path_len_constraint);
    match limit {
        Some(n) if below > usize::from(n) => Err(ChainError::Untrusted(format!(
            "{} allows {n} CA(s) below it (pathLenConstraint), the chain has {below}",
            subject(ca)
        ))),
        _ => Ok(()),
    }
}

/// Is `c` valid at `now`?
fn within(c: &Certificate, now: u64) -> Result<(), ChainError> {
    let v = &c.tbs_certificate.validity;
    let (from, to) = (v.not_before.to_unix_duration().as_secs(), v.not_after.to_unix_duration().as_secs());
    if now < from || now > to {
        return Err(ChainError::Expired(format!(
            "{} is valid from {} to {}, not now",
            subject(c),
            v.not_before,
            v.not_after
        )));
    }
    Ok(())
}

/// Did `issuer`'s key sign `c`?
fn signed_by(c: &Certificate, issuer: &Certificate) -> bool {
    let alg = match c.signature_algorithm.oid {
        ECDSA_SHA256 => Hash::Sha256,
        ECDSA_SHA384 => Hash::Sha384,
        _ => return false,
    };
    let (Ok(key), Ok(tbs)) = (CertKey::of(issuer), c.tbs_certificate.to_der()) else { return false };
    c.signature.as_bytes().is_some_and(|sig| key.verifies(alg, &tbs, sig))
}

fn extension<'a, T: Decode<'a>>(c: &'a Certificate, oid: der::oid::ObjectIdentifier) -> Result<Option<T>, String> {
    let Some(exts) = &c.tbs_certificate.extensions else { return Ok(None) };
    match exts.iter().find(|e| e.extn_id == oid) {
        None => Ok(None),
        Some(e) => {
            T::from_der(e.extn_value.as_bytes()).map(Some).map_err(|e| format!("{}: extension {oid}: {e}", subject(c)))
        }
    }
}

fn may_sign(c: &Certificate) -> Result<bool, String> {
    let ku = extension::<KeyUsage>(c, KEY_USAGE)?.is_some_and(|k| k.digital_signature());
    let eku = extension::<ExtendedKeyUsage>(c, EXT_KEY_USAGE)?.is_some_and(|k| k.0.contains(&CODE_SIGNING));
    Ok(ku || eku)
}

/// A CA that may issue: `CA:TRUE`, and `keyCertSign` when it states its
/// key usage at all (RFC 5280 4.2.1.3).
fn is_ca(c: &Certificate) -> Result<bool, String> {
    let ca = extension::<BasicConstraints>(c, BASIC_CONSTRAINTS)?.is_some_and(|b| b.ca);
    let may_issue = extension::<KeyUsage>(c, KEY_USAGE)?.is_none_or(|k| k.key_cert_sign());
    Ok(ca && may_issue)
}

/// The signing certificate's identities and issuer.
fn identity(c: &Certificate) -> Result<(Vec<String>, String), String> {
    let mut ids = Vec::new();
    if let Some(san) = extension::<SubjectAltName>(c, SUBJECT_ALT_NAME)? {
        for n in san.0 {
            match n {
                GeneralName::Rfc822Name(s) | GeneralName::DnsName(s) | GeneralName::UniformResourceIdentifier(s) => {
                    ids.push(s.to_string())
                }
                _ => {}
            }
        }
    }
    let exts = c.tbs_certificate.extensions.as_deref().unwrap_or_default();
    let fulcio = exts.iter().find_map(|e| {
        let raw = e.extn_value.as_bytes();
        if e.extn_id == FULCIO_ISSUER_V2 {
            der::asn1::Utf8StringRef::from_der(raw).ok().map(|s| s.as_str().to_string())
        } else if e.extn_id == FULCIO_ISSUER_V1 {
            std::str::from_utf8(raw).ok().map(str::to_string)
        } else {
            None
        }
    });
    Ok((ids, fulcio.unwrap_or_else(|| c.tbs_certificate.issuer.to_string())))
}

/// The certificates of a PEM text (a signing certificate, a chain file),
/// as DER, in order; bounded like a bundle's chain.
pub fn pem_chain(text: &str) -> Result<Vec<Vec<u8>>, String> {
    let certs = Certificate::load_pem_chain(text.as_bytes()).map_err(|e| format!("not PEM certificates: {e}"))?;
    if certs.is_empty() || certs.len() > MAX_CHAIN {
        return Err(format!("{} certificates (1 to {MAX_CHAIN})", certs.len()));
    }
    certs.iter().map(|c| c.to_der().map_err(|e| e.to_string())).collect()
}

/// The signing certificate's key, to compare with the private key that
/// signs (`sign --certificate`).
pub fn key_of(der: &[u8]) -> Result<CertKey, String> {
    CertKey::of(&parse(der)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_malformed_and_an_empty_or_long_chain_is_refused() {
        assert!(matches!(verify_chain(&[], &[], 0), Err(ChainError::Malformed(_))));
        assert!(matches!(verify_chain(&[vec![0x30, 0x00]], &[], 0), Err(ChainError::Malformed(_))));
        let long = vec![vec![0u8]; MAX_CHAIN + 1];
        assert!(matches!(verify_chain(&long, &[], 0), Err(ChainError::Malformed(m)) if m.contains("11 certificates")));
        assert!(anchor(&vec![0u8; MAX_CERT_BYTES + 1]).unwrap_err().contains("over the limit"));
    }
}
