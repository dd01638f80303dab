//! Optional config file (`--config`, YAML): severities per code and verify policy.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use serde::Deserialize;

use crate::cli::SeverityArgs;
use crate::diag::Overrides;
use crate::report::Severity;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Config {
    /// code or name → allow | warn | deny
    #[serde(default)]
    pub severity: BTreeMap<String, Level>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
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
    pub fn load(path: Option<&Path>) -> Result<Config> {
        let Some(p) = path else { return Ok(Config::default()) };
        let text = std::fs::read_to_string(p).with_context(|| format!("reading config {}", p.display()))?;
        let de = serde_yaml_ng::Deserializer::from_str(&text);
        serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            anyhow::anyhow!("{}: {}: {}", p.display(), path, e.into_inner())
        })
    }

    /// Config first, then command-line flags (flags win).
    pub fn overrides(&self, args: &SeverityArgs) -> Result<Overrides> {
        let mut o = Overrides::default();
        for (code, lvl) in &self.severity {
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
