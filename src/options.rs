//! Typed options, one struct per command, each with the one `Default` the
//! CLI and the pipeline share. These are the only option types: with the
//! `cli` feature the command line derives from them (clap's `Args`, behind
//! `cfg_attr`, so each option's help text is its doc comment here, written
//! once), and the pipeline file (`pipeline/mod.rs`) deserializes the same
//! structs (serde, camelCase keys): each text option goes through one parser
//! that both call. Fields a pipeline step does not take are `serde(skip)`:
//! the step refuses them as unknown, and the run fills them in.
//! `app` receives them typed: no clap type, no duration still in text.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};

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

    // The same defaults for serde's `default = "…"`, which takes functions.
    pub(crate) fn jobs() -> usize {
        JOBS
    }
    pub(crate) fn watch_timeout() -> super::HumanDuration {
        super::HumanDuration::default_of(WATCH_TIMEOUT)
    }
    pub(crate) fn probe_interval() -> super::HumanDuration {
        super::HumanDuration::default_of(PROBE_INTERVAL)
    }
    pub(crate) fn revert_max_age() -> super::HumanDuration {
        super::HumanDuration::default_of(REVERT_MAX_AGE)
    }
    pub(crate) fn remote() -> String {
        REMOTE.into()
    }
    /// `promote`: the file beside the bundle holding the KServe objects of
    /// the traffic split.
    pub(crate) const SPLIT_FILE: &str = "kserve-split.yaml";
    pub(crate) fn split_file() -> String {
        SPLIT_FILE.into()
    }
    pub(crate) fn app_namespace() -> String {
        APP_NAMESPACE.into()
    }
    pub(crate) fn app_template() -> String {
        APP_TEMPLATE.into()
    }
}

/// serde reads a text option through the same parser clap calls, so a
/// pipeline file and the command line accept and refuse the same texts.
fn parsed<'de, D: Deserializer<'de>, T>(d: D, parse: fn(&str) -> Result<T, String>) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).map_err(serde::de::Error::custom)
}

/// `jobs` in a file: a number, checked as `--jobs` is.
fn jobs_de<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    check_jobs(usize::deserialize(d)?).map_err(serde::de::Error::custom)
}

/// `stableFor` in a file: [`wait_value`], as `--stable-for`.
fn wait_de<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    parsed(d, wait_value).map(Some)
}

/// Most concurrent object reads or uploads: far above what one object store
/// connection pool serves well, far below tokio's semaphore limit.
pub(crate) const MAX_JOBS: usize = 256;

/// `--jobs` (and the pipeline's `jobs`): refused at parse time (exit 2,
/// naming the flag) outside 1..=[`MAX_JOBS`].
pub(crate) fn jobs_value(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("`{s}` is not a whole number"))?;
    check_jobs(n)
}

/// `--wait`, `--stable-for`: like a duration, but zero is allowed.
pub(crate) fn wait_value(s: &str) -> Result<Duration, String> {
    crate::util::try_duration(s)
}

/// `--failed-at`: an RFC 3339 time.
pub(crate) fn rfc3339_value(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("`{s}` is not an RFC 3339 time (e.g. 2026-01-31T12:00:00Z): {e}"))
}

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

impl<'de> Deserialize<'de> for HumanDuration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parsed(d, HumanDuration::parse)
    }
}

/// A duration as [`crate::util::try_duration`] reads it: the schema names
/// the text, the parser is the judge (a pattern would be a second one).
fn duration_schema(description: &str) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "description": description,
        "examples": ["300ms", "90s", "15m", "1h30m"],
    })
}

/// `stableFor`: [`wait_value`]'s text.
fn wait_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    duration_schema("A duration (e.g. 300ms, 90s, 15m, 1h30m, 1d; at most 7d; 0s allowed).")
}

impl JsonSchema for HumanDuration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        duration_schema("A duration greater than zero (e.g. 300ms, 90s, 15m, 1h30m, 1d; at most 7d).")
    }
}

/// As written, so a schema shows a default as `15m`.
impl serde::Serialize for HumanDuration {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl fmt::Display for HumanDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// Progress bar on stderr (`--progress`: a typo is an error, not a silent `auto`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum Progress {
    /// On when stderr is a terminal.
    #[default]
    Auto,
    Always,
    Never,
}

/// `-A/-W/-D`: per-code severities on top of the config file.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SeverityOptions {
    /// Allow (silence) a diagnostic code or name. Repeatable.
    #[cfg_attr(feature = "cli", arg(short = 'A', long = "allow", value_name = "CODE", global = true))]
    pub allow: Vec<String>,
    /// Make a code a warning. Repeatable.
    #[cfg_attr(feature = "cli", arg(short = 'W', long = "warn", value_name = "CODE", global = true))]
    pub warn: Vec<String>,
    /// Make a code an error (deny). Repeatable.
    #[cfg_attr(feature = "cli", arg(short = 'D', long = "deny", value_name = "CODE", global = true))]
    pub deny: Vec<String>,
}

/// `verify`, `audit` and every step that hashes artifacts.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct VerifyOptions {
    /// Concurrent object reads (1..=256).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::JOBS_STR, value_parser = jobs_value))]
    #[serde(default = "defaults::jobs", deserialize_with = "jobs_de")]
    #[schemars(range(min = 1, max = MAX_JOBS))]
    pub jobs: usize,
    /// Treat objects under the prefix that the bundle does not list as errors.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub deny_extra: bool,
    /// Read every byte: the audit re-hashes everything instead of trusting
    /// unchanged object identity; verify of an `oci://` model reads each
    /// raw layer's blob whole instead of trusting the manifest's digest
    /// and a `HEAD`.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub deep: bool,
    /// Progress bar: auto (on a TTY), always, never.
    #[cfg_attr(feature = "cli", arg(long, value_enum, default_value_t = Progress::Auto))]
    #[serde(skip)]
    pub progress: Progress,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions { jobs: defaults::JOBS, deny_extra: false, deep: false, progress: Progress::Auto }
    }
}

impl VerifyOptions {
    /// For checks that hash as a side job (the rollback target in canary and
    /// revert): no progress bar of their own.
    pub(crate) fn quiet() -> Self {
        VerifyOptions { progress: Progress::Never, ..Default::default() }
    }
}

/// Canary split traffic, or mirrored (shadow) traffic: the bundle's
/// `spec.canary.mode` type, which `canary --mode` overrides.
use crate::bundle::CanaryMode;

/// `canary --mode`: the bundle's own type, so there is one `CanaryMode`.
/// (Written by hand: the derive would put clap into `bundle`.)
#[cfg(feature = "cli")]
impl clap::ValueEnum for CanaryMode {
    fn value_variants<'a>() -> &'a [Self] {
        &[CanaryMode::Canary, CanaryMode::Shadow]
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self {
            CanaryMode::Canary => clap::builder::PossibleValue::new("canary").help("Split traffic"),
            CanaryMode::Shadow => clap::builder::PossibleValue::new("shadow").help("Mirrored traffic"),
        })
    }
}

/// `--prometheus`, declared once and flattened into every command that
/// reads Prometheus (canary, watch, run). A pipeline file never names it:
/// the run passes its own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PrometheusUrl {
    /// Prometheus base URL for the canary gates, e.g. http://127.0.0.1:9090
    // `None` (or blank) means the gates cannot run.
    #[cfg_attr(
        feature = "cli",
        arg(long = "prometheus", value_name = "URL", env = "BUNDLEGATE_PROMETHEUS_URL", hide_env_values = true)
    )]
    pub url: Option<String>,
}

impl PrometheusUrl {
    pub fn new(url: impl Into<String>) -> Self {
        PrometheusUrl { url: Some(url.into()) }
    }

    /// The URL if one was given and is not blank.
    pub(crate) fn get(&self) -> Option<&str> {
        self.url.as_deref().filter(|u| !u.trim().is_empty())
    }
}

/// `canary`, the pipeline's canary step, and the canary gates `watch`
/// judges once the rollout completed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct CanaryOptions {
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(skip)]
    pub prometheus: PrometheusUrl,
    /// Analysis window (default: the bundle's canary.window).
    #[cfg_attr(feature = "cli", arg(long, value_parser = HumanDuration::parse))]
    #[serde(default)]
    pub window: Option<HumanDuration>,
    /// canary (split traffic) or shadow (mirrored traffic).
    #[cfg_attr(feature = "cli", arg(long, value_enum))]
    #[serde(skip)]
    pub mode: Option<CanaryMode>,
    /// PromQL label selector for the candidate (default: release version label).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub candidate_selector: Option<String>,
    /// PromQL label selector for the baseline (default: the rollback target's version).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub baseline_selector: Option<String>,
    /// Candidate base URL for the golden-set smoke (e.g. http://127.0.0.1:8080).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub endpoint: Option<String>,
    /// Baseline base URL: the golden set is sent to both arms and the paired gate (an exact McNemar test on the prompts one arm passes and the other fails) judges whether the candidate answers worse.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub baseline_endpoint: Option<String>,
    /// Golden prompts the candidate may fail beyond the baseline before the paired gate fails.
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0))]
    #[serde(skip)]
    pub golden_margin: u32,
    /// Judge every traffic step of spec.canary.steps where the arms' request shares show it was held (as `watch` does).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub steps: bool,
    /// File holding KServe's own traffic split (the InferenceService with `spec.canary[]`, or the LLMInferenceServices of one route group), relative to the bundle's folder: each arm is read by the labels KServe sets on its pods and the observed split is judged against the declared one.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub split: Option<String>,
}

impl CanaryOptions {
    /// The Prometheus URL if one was given and is not blank.
    pub(crate) fn prometheus_url(&self) -> Option<&str> {
        self.prometheus.get()
    }
}

/// `watch`, and the pipeline's watch step (there `{name}`/`{namespace}` in
/// `app` and `service_url` stand for the bundle's metadata, filled in when
/// the step runs).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct WatchOptions {
    /// Argo CD Application name.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default = "defaults::app_template")]
    pub app: String,
    /// Namespace of the Application (Argo CD's namespace).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::APP_NAMESPACE))]
    #[serde(default = "defaults::app_namespace")]
    pub app_namespace: String,
    /// The merge commit that must be synced.
    #[cfg_attr(feature = "cli", arg(long, env = "GITHUB_SHA", hide_env_values = true))]
    #[serde(skip)]
    pub revision: Option<String>,
    /// Give up after this long (e.g. 15m).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::WATCH_TIMEOUT, value_parser = HumanDuration::parse))]
    #[serde(default = "defaults::watch_timeout")]
    pub timeout: HumanDuration,
    /// Base URL of the service (identity endpoint and health probe).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub service_url: Option<String>,
    /// Health probe interval for downtime measurement (e.g. 300ms).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::PROBE_INTERVAL, value_parser = HumanDuration::parse))]
    #[serde(default = "defaults::probe_interval")]
    pub probe_interval: HumanDuration,
    /// Hold a complete rollout this long before passing it: no container
    /// restarts, still complete at the end (default: twice the readiness
    /// probe's failure window, 30s to 10m; 0s judges one read).
    // None: `checks::watch::stability::default_window_s`.
    #[cfg_attr(feature = "cli", arg(long, value_parser = wait_value))]
    #[serde(default, deserialize_with = "wait_de")]
    #[schemars(schema_with = "wait_schema")]
    pub stable_for: Option<Duration>,
    /// Open a revert PR when a gate fails.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub revert: bool,
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(skip)]
    pub prometheus: PrometheusUrl,
}

impl WatchOptions {
    pub fn new(app: impl Into<String>) -> Self {
        WatchOptions {
            app: app.into(),
            app_namespace: defaults::APP_NAMESPACE.into(),
            revision: None,
            timeout: defaults::watch_timeout(),
            service_url: None,
            probe_interval: defaults::probe_interval(),
            stable_for: None,
            revert: false,
            prometheus: PrometheusUrl::default(),
        }
    }
}

/// `revert`, and the pipeline's revert step.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RevertOptions {
    /// Git repository holding the bundle (default: current directory).
    #[cfg_attr(feature = "cli", arg(long, default_value = "."))]
    #[serde(skip, default = "current_dir")]
    pub repo: PathBuf,
    /// Remote to push the revert branch to.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::REMOTE))]
    #[serde(default = "defaults::remote")]
    pub remote: String,
    /// Base branch for the revert PR.
    // Always set on the command line; `None` (a pipeline step without
    // `base`): the remote's HEAD branch, else `main`.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::BASE_BRANCH))]
    #[serde(default)]
    pub base: Option<String>,
    /// Evidence (a JSON report file, e.g. from `watch --format json`) for the PR body.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub evidence: Option<PathBuf>,
    /// Ignore failures older than this (e.g. 20m).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::REVERT_MAX_AGE, value_parser = HumanDuration::parse))]
    #[serde(default = "defaults::revert_max_age")]
    pub max_age: HumanDuration,
    /// When the failure was observed (RFC 3339; default now).
    #[cfg_attr(feature = "cli", arg(long, value_parser = rfc3339_value))]
    #[serde(skip)]
    pub failed_at: Option<chrono::DateTime<chrono::Utc>>,
}

fn current_dir() -> PathBuf {
    PathBuf::from(".")
}

/// `promote`, and the pipeline's promote step: after the canary, the
/// next-step PR on PASS, the revert PR on FAIL, nothing on INCONCLUSIVE.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PromoteOptions {
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(skip)]
    pub prometheus: PrometheusUrl,
    /// File holding KServe's own traffic split (the InferenceService with `spec.canary[]`, or the LLMInferenceServices of one route group), relative to the bundle's folder; the next-step PR rewrites it.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::SPLIT_FILE))]
    #[serde(default = "defaults::split_file")]
    pub split: String,
    /// A canary JSON report (`canary --format json`) to act on instead of judging the canary now.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub evidence: Option<PathBuf>,
    /// Git repository holding the bundle (default: current directory).
    #[cfg_attr(feature = "cli", arg(long, default_value = "."))]
    #[serde(skip, default = "current_dir")]
    pub repo: PathBuf,
    /// Remote to push the PR's branch to.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::REMOTE))]
    #[serde(default = "defaults::remote")]
    pub remote: String,
    /// Base branch for the PR.
    // `None` (a pipeline step without `base`): the remote's HEAD branch, else `main`.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::BASE_BRANCH))]
    #[serde(default)]
    pub base: Option<String>,
    /// On FAIL, ignore failures older than this (e.g. 20m), as `revert` does.
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::REVERT_MAX_AGE, value_parser = HumanDuration::parse))]
    #[serde(default = "defaults::revert_max_age")]
    pub max_age: HumanDuration,
}

impl PromoteOptions {
    /// The revert a FAIL opens, with this step's repository, remote, base and age.
    pub(crate) fn revert(&self) -> RevertOptions {
        RevertOptions {
            repo: self.repo.clone(),
            remote: self.remote.clone(),
            base: self.base.clone(),
            evidence: None,
            max_age: self.max_age.clone(),
            failed_at: None,
        }
    }

    /// The canary judgment promote acts on when no evidence is given.
    pub(crate) fn canary(&self) -> CanaryOptions {
        CanaryOptions {
            prometheus: self.prometheus.clone(),
            split: Some(self.split.clone()),
            ..CanaryOptions::default()
        }
    }
}

impl Default for RevertOptions {
    fn default() -> Self {
        RevertOptions {
            repo: current_dir(),
            remote: defaults::remote(),
            base: Some(defaults::BASE_BRANCH.into()),
            evidence: None,
            max_age: defaults::revert_max_age(),
            failed_at: None,
        }
    }
}

/// `render`, and the pipeline's render step.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RenderOptions {
    /// Write `<name>-<version>.yaml` here instead of stdout.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub out: Option<PathBuf>,
    /// Folder with `<format>.yaml.hbs` templates (logic-less; no custom
    /// helpers; relative to the working directory, like every path option).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub templates: Option<PathBuf>,
    /// Image of the in-pod file verifier (default: this release's image,
    /// ghcr.io/bundlegate/bundlegate:<version>; docs/verify-on-start.md).
    // `None`: [`crate::manifests::DEFAULT_VERIFIER_IMAGE`].
    #[cfg_attr(feature = "cli", arg(long, env = "BUNDLEGATE_VERIFIER_IMAGE", hide_env_values = true))]
    #[serde(skip)]
    pub verifier_image: Option<String>,
}

impl RenderOptions {
    pub(crate) fn renderer(&self) -> anyhow::Result<crate::manifests::Renderer> {
        let source = self.templates.clone().map(crate::manifests::TemplateSource::Dir).unwrap_or_default();
        let r = crate::manifests::Renderer::new(&source)?;
        Ok(match &self.verifier_image {
            Some(i) => r.with_verifier_image(i.clone()),
            None => r,
        })
    }
}

/// `publish`: the model folder is the command's argument.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PublishOptions {
    /// Destination prefix, e.g. s3://models/llm/v3/ (must be empty), or oci://REGISTRY/REPOSITORY[:TAG] (a ModelPack artifact; a tag naming another manifest is refused).
    #[cfg_attr(feature = "cli", arg(long))]
    pub to: String,
    /// Bundle to update (its storageUri and artifacts are rewritten).
    #[cfg_attr(feature = "cli", arg(long))]
    pub bundle: PathBuf,
    /// Concurrent uploads (1..=256).
    #[cfg_attr(feature = "cli", arg(long, default_value = defaults::JOBS_STR, value_parser = jobs_value))]
    pub jobs: usize,
}

/// `preflight`, and the pipeline's preflight step.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PreflightOptions {
    /// Cluster state from `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets,deployments,replicasets -A -o yaml`.
    // In a pipeline: relative to the working directory; `--snapshot` wins.
    #[cfg_attr(feature = "cli", arg(long, conflicts_with = "live"))]
    #[serde(default)]
    pub snapshot: Option<PathBuf>,
    /// Read the cluster live through the kubeconfig (read-only verbs).
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(skip)]
    pub live: bool,
}

/// `audit` (the tree is the command's argument), and the pipeline's audit step.
// In a pipeline step the `verify` part is read from the same mapping
// (`pipeline/mod.rs`): serde's flatten cannot refuse unknown keys.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct AuditOptions {
    /// Audit cache (object identity → verified sha256): a folder (path or
    /// `file:` URI) or an object-store prefix (`s3://bucket/audit-cache/`), one object per
    /// bundle so concurrent shards share it; a `.json` file is a
    /// single-machine cache. Default: a folder under the user cache dir
    /// (`BUNDLEGATE_CACHE_DIR` overrides it).
    #[cfg_attr(feature = "cli", arg(long, value_name = "DIR|URI"))]
    #[serde(skip)]
    pub cache: Option<String>,
    /// Audit only this shard's bundles: `K/N` (0 ≤ K < N) or `auto/N`
    /// (K from `JOB_COMPLETION_INDEX`, as a Kubernetes Indexed Job sets it).
    /// Every shard computes the same assignment from the tree alone.
    #[cfg_attr(feature = "cli", arg(long, value_name = "K/N"))]
    #[serde(skip)]
    pub shard: Option<String>,
    /// Also write the JSON report here (path, `file:` or object-store URI), e.g.
    /// for `report merge` to collect from a bucket.
    #[cfg_attr(feature = "cli", arg(long, value_name = "PATH|URI"))]
    #[serde(skip)]
    pub write_report: Option<String>,
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(skip)]
    pub alerts: AlertOptions,
    /// Also compare what the cluster serves (kubeconfig, read-only) with
    /// each service's current bundle.
    #[cfg_attr(feature = "cli", arg(long))]
    #[serde(default)]
    pub serving: bool,
    #[cfg_attr(feature = "cli", command(flatten))]
    #[serde(skip)]
    pub verify: VerifyOptions,
}

/// `report merge` (the reports are the command's arguments).
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct MergeOptions {
    /// Shard reports that finished longer ago than this (e.g. `6h`) are
    /// stale: the merge is then INCONCLUSIVE.
    #[cfg_attr(feature = "cli", arg(long, value_name = "DURATION", value_parser = HumanDuration::parse))]
    pub max_age: Option<HumanDuration>,
    #[cfg_attr(feature = "cli", command(flatten))]
    pub alerts: AlertOptions,
}

/// Where an audit's Prometheus metrics go (drift alerts).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct AlertOptions {
    /// Write Prometheus text-format metrics to this file (path, `file:` or
    /// object-store URI; for the node-exporter textfile collector name it
    /// `*.prom` in the collector's folder).
    #[cfg_attr(feature = "cli", arg(long, value_name = "FILE"))]
    pub metrics_file: Option<String>,
    /// Push the metrics to this Pushgateway (job `bundlegate_audit`).
    #[cfg_attr(
        feature = "cli",
        arg(long, value_name = "URL", env = "BUNDLEGATE_PUSHGATEWAY_URL", hide_env_values = true)
    )]
    pub pushgateway: Option<String>,
}

/// `run` (the pipeline file is the command's argument).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct RunOptions {
    /// Bundles to run on. Without it, PR mode finds changed bundles from --base/--head.
    #[cfg_attr(feature = "cli", arg(long = "bundle"))]
    pub bundles: Vec<PathBuf>,
    /// Cluster snapshot for the preflight step.
    #[cfg_attr(feature = "cli", arg(long))]
    pub snapshot: Option<PathBuf>,
    /// Git base revision (PR mode: bundles changed between base and head).
    #[cfg_attr(feature = "cli", arg(long))]
    pub base: Option<String>,
    /// Git head revision (default HEAD).
    #[cfg_attr(feature = "cli", arg(long))]
    pub head: Option<String>,
    /// Git repository (default: current directory).
    #[cfg_attr(feature = "cli", arg(long, default_value = "."))]
    pub repo: PathBuf,
    #[cfg_attr(feature = "cli", command(flatten))]
    pub prometheus: PrometheusUrl,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            bundles: Vec::new(),
            snapshot: None,
            base: None,
            head: None,
            repo: current_dir(),
            prometheus: PrometheusUrl::default(),
        }
    }
}

/// `sign`: the bundle's signatures in the OpenSSF model-signing format.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct SignOptions {
    /// ECDSA P-256 private key, PEM: SEC1 (`openssl ecparam -name prime256v1 -genkey`) or PKCS#8.
    #[cfg_attr(feature = "cli", arg(long))]
    pub key: PathBuf,
    /// Folder to write `model.sig` and `release.sig` to (default: the bundle's folder).
    #[cfg_attr(feature = "cli", arg(long))]
    pub out: Option<PathBuf>,
    /// Certificate mode: the signing certificate (PEM) for --key's public half.
    #[cfg_attr(feature = "cli", arg(long))]
    pub certificate: Option<PathBuf>,
    /// Certificate mode: the CA certificates that issued it (PEM; repeatable), carried in the signature.
    #[cfg_attr(feature = "cli", arg(long, requires = "certificate"))]
    pub chain: Vec<PathBuf>,
}

/// `verify-files`, in the serving pod.
#[derive(Debug, Clone)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct VerifyFilesOptions {
    /// Environment variable holding the rendered artifact list (JSON).
    #[cfg_attr(feature = "cli", arg(long, default_value = "BUNDLEGATE_ARTIFACTS"))]
    pub manifest_env: String,
    /// Folder the model server reads the files from.
    #[cfg_attr(feature = "cli", arg(long, default_value = "/mnt/models"))]
    pub root: PathBuf,
    /// full (sha256 + size) or size (default: the list's mode).
    #[cfg_attr(feature = "cli", arg(long))]
    pub mode: Option<String>,
    #[cfg_attr(feature = "cli", arg(long, default_value = "/dev/termination-log"))]
    pub termination_log: PathBuf,
    /// Written with the release digest when every artifact is OK.
    #[cfg_attr(feature = "cli", arg(long, default_value = "/tmp/bundlegate-verified"))]
    pub marker: PathBuf,
    /// Readiness probe: exit 0 only if the marker holds this release's digest.
    #[cfg_attr(feature = "cli", arg(long))]
    pub ready: bool,
    /// Wait this long for files still being downloaded (e.g. 10m; 0s: not at all).
    #[cfg_attr(feature = "cli", arg(long, default_value = "0s", value_parser = wait_value))]
    pub wait: Duration,
    /// After a pass keep running (sidecar mode).
    #[cfg_attr(feature = "cli", arg(long))]
    pub stay: bool,
    /// Hashing threads (0: one per core).
    #[cfg_attr(feature = "cli", arg(long, default_value_t = 0))]
    pub threads: usize,
    /// Folder of allowed public keys (PEM; the platform's ConfigMap): the
    /// release's signatures must verify under one of them before any file
    /// is hashed (docs/signing.md).
    #[cfg_attr(feature = "cli", arg(long))]
    pub trust: Option<PathBuf>,
    /// Environment variable holding the release's signatures (JSON), read with --trust.
    #[cfg_attr(feature = "cli", arg(long, default_value = "BUNDLEGATE_SIGNATURE"))]
    pub signature_env: String,
}

/// `schema`: which file's JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum SchemaKind {
    /// A release bundle (`release.yaml`).
    Bundle,
    /// A pipeline file (`pipelines/*.yaml`).
    Pipeline,
}

/// The Argo CD config-management plugin's three entry points; `path` is the
/// application's source path (default: the current directory, as Argo CD
/// runs the plugin).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::Subcommand))]
pub enum ArgocdAction {
    /// Write Kubernetes objects for the app's source path to stdout (CMP generate).
    Generate {
        /// Source path (default: the current directory, as Argo CD runs it).
        #[cfg_attr(feature = "cli", arg(long))]
        path: Option<PathBuf>,
    },
    /// Exit 0 when the source path holds a release bundle (CMP discover).
    Discover {
        #[cfg_attr(feature = "cli", arg(long))]
        path: Option<PathBuf>,
    },
    /// Print the plugin's parameter announcement JSON (CMP parameters.dynamic).
    Parameters {
        #[cfg_attr(feature = "cli", arg(long))]
        path: Option<PathBuf>,
    },
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
        assert_eq!(jobs_value("256"), Ok(256));
        assert!(jobs_value("0").is_err() && jobs_value("x").is_err());
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
