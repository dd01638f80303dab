//! Typed options, one struct per command, each with the one `Default` the
//! CLI and the pipeline share. The CLI (`cli.rs`) and the pipeline file
//! (`pipeline.rs`) both build these; nothing below `app` sees a clap type or
//! a duration still in text.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Every default in one place: the CLI's `--help` shows these strings and
/// [`Default`] parses the same ones, so the two cannot drift apart.
pub mod defaults {
    /// Concurrent object reads or uploads.
    pub(crate) const JOBS: usize = 4;
    pub(crate) const JOBS_STR: &str = "4";
    /// `watch`: give up after this long.
    pub(crate) const WATCH_TIMEOUT: &str = "15m";
    /// `watch`: health probe interval for the downtime measurement (the
    /// lab's `curl` loop probed every 0.3 s).
    pub(crate) const PROBE_INTERVAL: &str = "300ms";
    /// `revert`: failures older than this are history, not an incident
    /// (Kargo's 20-minute safeguard).
    pub(crate) const REVERT_MAX_AGE: &str = "20m";
    /// `revert`: remote the branch is pushed to.
    pub(crate) const REMOTE: &str = "origin";
    /// `revert`: base branch when the remote does not say.
    pub(crate) const BASE_BRANCH: &str = "main";
    /// `watch`: namespace of the Argo CD Application.
    pub(crate) const APP_NAMESPACE: &str = "argocd";
    /// Pipeline `watch` step: the Application's name, `{name}` standing for
    /// the bundle's `metadata.name`.
    pub(crate) const APP_TEMPLATE: &str = "{name}";
}

/// Most concurrent object reads or uploads: far above what one object store
/// connection pool serves well, far below tokio's semaphore limit.
pub(crate) const MAX_JOBS: usize = 256;

/// `jobs` checked: 1..=[`MAX_JOBS`].
pub(crate) fn check_jobs(n: usize) -> Result<usize, String> {
    if (1..=MAX_JOBS).contains(&n) {
        Ok(n)
    } else {
        Err(format!("{n} is out of range: expected 1..={MAX_JOBS}"))
    }
}

/// A validated duration that remembers how the user wrote it, so reports
/// quote `15m` rather than `900s`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HumanDuration {
    pub value: Duration,
    pub text: String,
}

impl HumanDuration {
    /// Finite, greater than zero, at most 7 days (`util::MAX_DURATION`).
    pub fn parse(s: &str) -> Result<Self, String> {
        let value = crate::util::try_duration(s)?;
        if value.is_zero() {
            return Err(format!("`{s}` must be greater than zero"));
        }
        Ok(HumanDuration { value, text: s.trim().to_string() })
    }

    /// A default from [`defaults`]; those constants are valid by construction
    /// (a unit test parses each).
    fn default_of(s: &'static str) -> Self {
        Self::parse(s).unwrap_or_else(|e| unreachable!("built-in default duration {s}: {e}"))
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Progress bar on stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Progress {
    /// On when stderr is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

/// `verify`, `audit` and every step that hashes artifacts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyOptions {
    pub jobs: usize,
    /// Objects under the prefix that the bundle does not list are errors.
    pub deny_extra: bool,
    pub progress: Progress,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions { jobs: defaults::JOBS, deny_extra: false, progress: Progress::Auto }
    }
}

impl VerifyOptions {
    /// For checks that hash as a side job (the rollback target in canary and
    /// revert): no progress bar of their own.
    pub(crate) fn quiet() -> Self {
        VerifyOptions { progress: Progress::Never, ..Default::default() }
    }
}

/// Canary split traffic, or mirrored (shadow) traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CanaryMode {
    Canary,
    Shadow,
}

/// `canary`, and the canary gates `watch` judges once the rollout completed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct CanaryOptions {
    /// Prometheus base URL; `None` (or blank) means the gates cannot run.
    pub prometheus: Option<String>,
    /// Analysis window; default the bundle's `canary.window`.
    pub window: Option<HumanDuration>,
    /// Default: the bundle's `canary.mode`.
    pub mode: Option<CanaryMode>,
    pub candidate_selector: Option<String>,
    pub baseline_selector: Option<String>,
    /// Candidate base URL for the golden-set smoke.
    pub endpoint: Option<String>,
    /// Judge every traffic step of `spec.canary.steps` where the arms held
    /// it, instead of the window ending now.
    pub steps: bool,
}

impl CanaryOptions {
    /// The Prometheus URL if one was given and is not blank.
    pub(crate) fn prometheus_url(&self) -> Option<&str> {
        self.prometheus.as_deref().filter(|u| !u.trim().is_empty())
    }
}

/// `watch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchOptions {
    pub app: String,
    pub app_namespace: String,
    /// The merge commit Argo CD must have synced.
    pub revision: Option<String>,
    pub timeout: HumanDuration,
    pub service_url: Option<String>,
    pub probe_interval: HumanDuration,
    /// How long a complete rollout must hold (no restarts, still complete)
    /// before it passes; None: derived from the readiness probe
    /// (`checks::watch::stability::default_window_s`); zero: one read.
    pub stable_for: Option<Duration>,
    /// Open a revert PR on a FAIL.
    pub revert: bool,
    pub prometheus: Option<String>,
}

impl WatchOptions {
    pub fn new(app: impl Into<String>) -> Self {
        WatchOptions {
            app: app.into(),
            app_namespace: defaults::APP_NAMESPACE.into(),
            revision: None,
            timeout: HumanDuration::default_of(defaults::WATCH_TIMEOUT),
            service_url: None,
            probe_interval: HumanDuration::default_of(defaults::PROBE_INTERVAL),
            stable_for: None,
            revert: false,
            prometheus: None,
        }
    }
}

/// `revert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertOptions {
    /// Git repository holding the bundle.
    pub repo: PathBuf,
    pub remote: String,
    /// Base branch of the revert PR.
    pub base: String,
    /// A JSON report (e.g. `watch --format json`) quoted in the PR body.
    pub evidence: Option<PathBuf>,
    pub max_age: HumanDuration,
    /// When the failure was observed; default now.
    pub failed_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Default for RevertOptions {
    fn default() -> Self {
        RevertOptions {
            repo: PathBuf::from("."),
            remote: defaults::REMOTE.into(),
            base: defaults::BASE_BRANCH.into(),
            evidence: None,
            max_age: HumanDuration::default_of(defaults::REVERT_MAX_AGE),
            failed_at: None,
        }
    }
}

/// `render` and the pipeline's render step.
#[derive(Debug, Clone, Default)]
pub(crate) struct RenderOptions {
    pub templates: crate::manifests::TemplateSource,
    /// Image of the in-pod verifier; `None`: [`crate::manifests::DEFAULT_VERIFIER_IMAGE`].
    pub verifier_image: Option<String>,
}

impl RenderOptions {
    pub(crate) fn renderer(&self) -> anyhow::Result<crate::manifests::Renderer> {
        let r = crate::manifests::Renderer::new(&self.templates)?;
        Ok(match &self.verifier_image {
            Some(i) => r.with_verifier_image(i.clone()),
            None => r,
        })
    }
}

/// Where an audit's Prometheus metrics go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AlertOptions {
    /// Prometheus text format for the node-exporter textfile collector.
    /// A path, `file:` or object-store URI ([`crate::bundle::storage_uri::location`]).
    pub metrics_file: Option<String>,
    /// Pushgateway base URL (job `bundlegate_audit`).
    pub pushgateway: Option<String>,
}

/// The Argo CD config-management plugin's three entry points; `path` is the
/// application's source path (default: the current directory, as Argo CD
/// runs the plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgocdAction {
    Generate { path: Option<PathBuf> },
    Discover { path: Option<PathBuf> },
    Parameters { path: Option<PathBuf> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_default_is_valid() {
        for d in [defaults::WATCH_TIMEOUT, defaults::PROBE_INTERVAL, defaults::REVERT_MAX_AGE] {
            HumanDuration::parse(d).unwrap();
        }
        assert_eq!(defaults::JOBS_STR.parse::<usize>().unwrap(), defaults::JOBS);
        check_jobs(defaults::JOBS).unwrap();
        let w = WatchOptions::new("x");
        assert_eq!(w.timeout.value, Duration::from_secs(900));
        assert_eq!(w.probe_interval.value, Duration::from_millis(300));
        assert_eq!(RevertOptions::default().max_age.value, Duration::from_secs(1200));
    }

    #[test]
    fn zero_and_too_long_durations_are_refused() {
        assert!(HumanDuration::parse("0s").is_err());
        assert!(HumanDuration::parse("8d").is_err());
        assert_eq!(HumanDuration::parse(" 90s ").unwrap().to_string(), "90s");
    }
}
