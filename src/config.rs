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

/// `signature:` as written. Key mode only: `certificateIdentities` and
/// `trustedRoot` are read so that a policy asking for them is refused by
/// name ("not supported yet"), never silently weakened to key mode.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct SignatureConfig {
    pub mode: ModeName,
    /// PEM public keys, relative to the config file.
    #[serde(default)]
    pub public_keys: Vec<String>,
    #[serde(default)]
    certificate_identities: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    trusted_root: Option<serde::de::IgnoredAny>,
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
        if sc.certificate_identities.is_some() || sc.trusted_root.is_some() {
            anyhow::bail!(
                "config {shown}: signature.certificateIdentities and signature.trustedRoot (certificate and keyless modes) are not supported yet; use publicKeys (key mode)"
            );
        }
        let mode = match sc.mode {
            ModeName::Off => return Ok(Policy::default()),
            ModeName::Optional => Mode::Optional,
            ModeName::Required => Mode::Required,
        };
        if sc.public_keys.is_empty() {
            anyhow::bail!("config {shown}: signature.publicKeys is empty: no signature could ever verify");
        }
        let dir = p.parent().unwrap_or(Path::new(""));
        let keys = sc.public_keys.iter().map(|k| read_key(&dir.join(k), k)).collect::<Result<Vec<_>>>()?;
        Ok(Policy { mode, keys })
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

/// One allowed public key, read and parsed; `name` as the config writes it.
fn read_key(path: &Path, name: &str) -> Result<AllowedKey> {
    use crate::adapters::bundle_files;
    let pem = bundle_files::read_bytes(path, signing::MAX_KEY_BYTES, "public key")
        .and_then(bundle_files::utf8)
        .with_context(|| format!("reading signature.publicKeys entry {name}"))?;
    let key = signing::public_key(&pem).map_err(|e| anyhow::anyhow!("signature.publicKeys entry {name}: {e}"))?;
    let hint = signing::key_hint(&key).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
    Ok(AllowedKey { name: name.to_string(), key, hint })
}
