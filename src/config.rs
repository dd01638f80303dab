//! Optional config file (`--config`, YAML): severities per code and verify policy.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::diag::Overrides;
use crate::diag::Severity;
use crate::options::SeverityOptions;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Config {
    /// code or name → allow | warn | deny
    #[serde(default)]
    pub severity: BTreeMap<String, Level>,
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
        crate::yaml_guard::from_str(&p.display().to_string(), text, &crate::yaml_guard::Limits::DEFAULT)
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
