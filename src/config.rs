//! Optional config file (`--config`, YAML): severities per code and verify policy.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::checks::signature::{AllowedKey, Mode, Policy};
use crate::diag::Overrides;
use crate::diag::Severity;
use crate::options::SeverityOptions;
use crate::signing;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Config {
    /// code or name → allow | warn | deny
    #[serde(default)]
    pub severity: BTreeMap<String, Level>,
    /// The signature policy (docs/signing.md); absent: off.
    #[serde(default)]
    pub signature: Option<SignatureConfig>,
    /// Per class of release change, the pipeline steps that must run and
    /// those that may go unrun (docs/pipeline.md).
    #[serde(default)]
    pub change_class: crate::pipeline::ChangePolicy,
}

/// `signature:` as written: key mode (`publicKeys`), certificate mode
/// (`trustedRoot` and `certificateIdentities`), or both.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SignatureConfig {
    pub mode: ModeName,
    /// PEM public keys, relative to the config file.
    #[serde(default)]
    pub public_keys: Vec<String>,
    /// A ConfigMap holding the allowed public keys, which rendered pods
    /// mount so the verifier checks the signatures again (`required` only).
    #[serde(default)]
    pub pod_trust_config_map: Option<String>,
    /// Certificate mode: who may sign (a subject alternative name of the
    /// signing certificate, and its issuer).
    #[serde(default)]
    pub certificate_identities: Vec<IdentityConfig>,
    /// Certificate mode: a Sigstore `trusted_root.json` whose CAs the
    /// signing certificates must chain to, relative to the config file.
    #[serde(default)]
    pub trusted_root: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdentityConfig {
    pub identity: String,
    pub issuer: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ModeName {
    Required,
    Optional,
    Off,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Level {
    Allow,
    Warn,
    Deny,
}

impl Level {
    fn severity(self) -> Severity {
        match self {
            Level::Allow => Severity::Allow,
            Level::Warn => Severity::Warning,
            Level::Deny => Severity::Error,
        }
    }
}

impl Config {
    pub(crate) fn load(path: Option<&Path>) -> Result<Config> {
        let Some(p) = path else { return Ok(Config::default()) };
        let text = crate::adapters::bundle_files::read_text(p, crate::adapters::bundle_files::FileKind::Config)
            .with_context(|| format!("reading config {}", p.display()))?;
        Self::parse(p, &text)
    }

    /// Parse config text; `p` names the file in every error. A severity set
    /// twice (`BG001: deny` then `BG001: allow`) is refused, not last-wins.
    pub(crate) fn parse(p: &Path, text: &str) -> Result<Config> {
        let c: Config =
            crate::yaml_guard::from_str(&p.display().to_string(), text, &crate::yaml_guard::Limits::DEFAULT)?;
        crate::pipeline::check_policy(&c.change_class).with_context(|| format!("config {}", p.display()))?;
        Ok(c)
    }

    /// The signature policy with its public keys read (relative paths
    /// against the config file's folder, each bounded). No config, no
    /// `signature` block, or `mode: off`: nothing is read or checked.
    pub(crate) fn signature_policy(&self, path: Option<&Path>) -> Result<Policy> {
        let (Some(sc), Some(p)) = (&self.signature, path) else { return Ok(Policy::default()) };
        let shown = p.display();
        let mode = match sc.mode {
            ModeName::Off => return Ok(Policy::default()),
            ModeName::Optional => Mode::Optional,
            ModeName::Required => Mode::Required,
        };
        match (&sc.trusted_root, sc.certificate_identities.is_empty()) {
            (Some(_), true) => anyhow::bail!(
                "config {shown}: signature.trustedRoot without certificateIdentities: its CAs vouch for everyone they issued to; list who may sign"
            ),
            (None, false) => anyhow::bail!(
                "config {shown}: signature.certificateIdentities without a trustedRoot: nothing to check the certificates against"
            ),
            _ => {}
        }
        if sc.public_keys.is_empty() && sc.trusted_root.is_none() {
            anyhow::bail!(
                "config {shown}: signature.publicKeys is empty and there is no trustedRoot: no signature could ever verify"
            );
        }
        if let Some(cm) = &sc.pod_trust_config_map {
            if mode != Mode::Required {
                anyhow::bail!(
                    "config {shown}: signature.podTrustConfigMap needs mode: required (a pod either checks the signature or does not)"
                );
            }
            let dns = cm.len() <= 253 && cm.split('.').all(|l| crate::bundle::validate::dns_label(l, false));
            if !dns {
                anyhow::bail!("config {shown}: signature.podTrustConfigMap {cm:?} is not a ConfigMap name (lowercase letters, digits, '-' and '.', at most 253)");
            }
        }
        let dir = p.parent().unwrap_or(Path::new(""));
        let keys = sc.public_keys.iter().map(|k| read_key(&dir.join(k), k)).collect::<Result<Vec<_>>>()?;
        let certs = match &sc.trusted_root {
            None => Default::default(),
            Some(r) => cert_trust(&dir.join(r), r, &sc.certificate_identities)?,
        };
        Ok(Policy { mode, keys, pod_trust: sc.pod_trust_config_map.clone(), certs })
    }

    /// Config first, then command-line flags (flags win).
    pub(crate) fn overrides(&self, args: &SeverityOptions) -> Result<Overrides> {
        let mut o = Overrides::default();
        // A code and its name are one key: `BG001` and `image-not-pinned`
        // both set would be last-wins in an order the file does not show.
        let mut seen = std::collections::BTreeMap::new();
        for (code, lvl) in &self.severity {
            if let Some(c) = crate::diag::Code::from_str_any(code) {
                if let Some(first) = seen.insert(c, code) {
                    anyhow::bail!(
                        "config: severity for {} is set twice (`{first}` and `{code}` name the same code); keep one",
                        c.as_str()
                    );
                }
            }
            o.set(code, lvl.severity())?;
        }
        for c in &args.allow {
            o.set(c, Severity::Allow)?;
        }
        for c in &args.warn {
            o.set(c, Severity::Warning)?;
        }
        for c in &args.deny {
            o.set(c, Severity::Error)?;
        }
        Ok(o)
    }
}

/// Certificate mode's trust: the trusted root read and its CAs parsed,
/// the identities as written, validity checked at this machine's clock.
fn cert_trust(path: &Path, name: &str, ids: &[IdentityConfig]) -> Result<crate::checks::signature::CertTrust> {
    use crate::adapters::bundle_files;
    let text = bundle_files::read_bytes(path, signing::MAX_SIGNATURE_BYTES as u64, "trusted root")
        .and_then(bundle_files::utf8)
        .with_context(|| format!("reading signature.trustedRoot {name}"))?;
    let cas = crate::parse::sigstore::trusted_root_cas(&text)
        .map_err(|e| anyhow::anyhow!("signature.trustedRoot {name}: {e}"))?;
    let anchors = cas
        .iter()
        .enumerate()
        .map(|(i, der)| {
            signing::cert::anchor(der).map_err(|e| anyhow::anyhow!("signature.trustedRoot {name}: CA {i}: {e}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let identities = ids
        .iter()
        .map(|i| crate::checks::signature::Identity { identity: i.identity.clone(), issuer: i.issuer.clone() })
        .collect();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let keyless = signing::keyless::trust(&text).map_err(|e| anyhow::anyhow!("signature.trustedRoot {name}: {e}"))?;
    Ok(crate::checks::signature::CertTrust { anchors, identities, now, keyless })
}

/// One allowed public key, read and parsed; `name` as the config writes it.
fn read_key(path: &Path, name: &str) -> Result<AllowedKey> {
    use crate::adapters::bundle_files;
    let pem = bundle_files::read_bytes(path, signing::MAX_KEY_BYTES, "public key")
        .and_then(bundle_files::utf8)
        .with_context(|| format!("reading signature.publicKeys entry {name}"))?;
    crate::checks::signature::allowed_key(name, &pem).map_err(|e| anyhow::anyhow!("signature.publicKeys entry {e}"))
}
