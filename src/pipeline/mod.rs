//! Pipelines (`pipelines/*.yaml`): which steps run, with which options, and
//! whether a failure stops the remaining steps for that bundle.
//!
//! A pipeline is validated completely before anything runs, so a typo never
//! leaves a half-run pipeline. A step whose capability or inputs are absent
//! reports NOT RUN with the reason; a `required` step that did not run makes
//! the run INCONCLUSIVE, never PASS.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::bundle;
use crate::options::{
    self, defaults, AuditOptions, CanaryOptions, HumanDuration, PreflightOptions, RenderOptions, RevertOptions,
    VerifyOptions, WatchOptions,
};

// Running a pipeline takes every adapter; reading one takes none, so the
// parser is in the core (`--no-default-features`, the fuzz build).
#[cfg(feature = "cli")]
mod run;
#[cfg(feature = "cli")]
pub use run::{run_file, Inputs};

/// A pipeline file, validated: every step's options typed and checked.
#[derive(Debug)]
pub struct Pipeline {
    pub name: String,
    /// `changed` (bundles the PR changes, from git) or `all` (every bundle under `root`).
    pub bundles: Option<BundleSelection>,
    pub steps: Vec<Step>,
}

/// The file as written; [`parse`] turns it into a [`Pipeline`].
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PipelineFile {
    api_version: String,
    kind: String,
    metadata: PipelineMeta,
    spec: PipelineSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PipelineMeta {
    name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PipelineSpec {
    #[serde(default)]
    bundles: Option<BundleSelection>,
    steps: Vec<StepFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BundleSelection {
    pub from: SelectFrom,
    #[serde(default)]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Deserialize, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum SelectFrom {
    Changed,
    All,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum StepKind {
    Lint,
    Render,
    Verify,
    Preflight,
    Canary,
    Comment,
    Audit,
    Watch,
    Revert,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Later steps for this bundle still run (a PR comment wants all evidence).
    #[default]
    Continue,
    /// Later steps for this bundle are skipped (reported as NOT RUN).
    Stop,
}

/// One step as written: its name, and the union of every step's options
/// (each step then takes only its own, see [`StepSpec::from_file`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepFile {
    name: StepKind,
    #[serde(default)]
    on_failure: OnFailure,
    #[serde(default)]
    required: bool,
    #[serde(default)]
    with: StepOptions,
}

/// A validated step.
#[derive(Debug, Clone)]
pub struct Step {
    pub spec: StepSpec,
    pub on_failure: OnFailure,
    /// A required step that does not run makes the run INCONCLUSIVE.
    pub required: bool,
}

impl Step {
    pub(crate) fn kind(&self) -> StepKind {
        self.spec.kind()
    }
}

/// Each step with its own typed options (the commands' types of
/// [`crate::options`]), defaults applied. What only a run knows (the
/// bundle's name in a watch template, `--prometheus`, the verifier image,
/// the repository) is filled in when the step runs (`run.rs`).
#[derive(Debug, Clone)]
pub enum StepSpec {
    Lint,
    Render {
        /// Show the base→head manifest diff (PR mode).
        diff: bool,
        options: RenderOptions,
    },
    Verify(VerifyOptions),
    /// `--snapshot` wins over the step's `snapshot`.
    Preflight(PreflightOptions),
    Canary(CanaryOptions),
    /// Posted once per run.
    Comment,
    /// Runs once per run over the whole tree.
    Audit(AuditOptions),
    /// `{name}`/`{namespace}` in `app` and `service_url` stand for the
    /// bundle's metadata.
    Watch(WatchOptions),
    /// `base: None`: the remote's HEAD branch, else `main`.
    Revert(RevertOptions),
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepOptions {
    /// render: show the base→head manifest diff (PR mode).
    #[serde(default)]
    diff: Option<bool>,
    /// render: template folder (logic-less; relative to the working directory, like every path option).
    #[serde(default)]
    templates: Option<PathBuf>,
    /// verify/audit: concurrent reads.
    #[serde(default)]
    jobs: Option<usize>,
    /// verify: treat extra objects as errors.
    #[serde(default)]
    deny_extra: Option<bool>,
    /// audit: re-hash everything.
    #[serde(default)]
    deep: Option<bool>,
    /// audit: also compare what the cluster serves with each service's current bundle.
    #[serde(default)]
    serving: Option<bool>,
    /// preflight: snapshot file (relative to the working directory); `--snapshot` wins.
    #[serde(default)]
    snapshot: Option<PathBuf>,
    /// canary: analysis window.
    #[serde(default)]
    window: Option<String>,
    /// watch: Argo CD Application name; `{name}` and `{namespace}` stand for
    /// the bundle's metadata (default: `{name}`).
    #[serde(default)]
    app: Option<String>,
    /// watch: the Application's namespace (default `argocd`).
    #[serde(default)]
    app_namespace: Option<String>,
    /// watch: give up after this long (default 15m).
    #[serde(default)]
    timeout: Option<String>,
    /// watch: the service's base URL for identity and downtime, with the same
    /// placeholders as `app` (e.g. `http://{name}.{namespace}.svc`).
    #[serde(default)]
    service_url: Option<String>,
    /// watch: health probe interval (default 300ms).
    #[serde(default)]
    probe_interval: Option<String>,
    /// watch: how long a complete rollout must hold (default from the readiness probe; `0s`: one read).
    #[serde(default)]
    stable_for: Option<String>,
    /// revert: remote to push the revert branch to (default `origin`).
    #[serde(default)]
    remote: Option<String>,
    /// revert: base branch of the revert PR (default: the remote's HEAD branch, else `main`).
    #[serde(default)]
    base: Option<String>,
    /// revert: ignore failures older than this (default 20m).
    #[serde(default)]
    max_age: Option<String>,
}

pub(crate) fn load(path: &Path) -> Result<Pipeline> {
    let text = crate::adapters::bundle_files::read_text(path, crate::adapters::bundle_files::FileKind::Pipeline)
        .with_context(|| format!("reading pipeline {}", path.display()))?;
    parse(path, &text)
}

/// Parse and validate pipeline text; `path` names the file in every error.
pub fn parse(path: &Path, text: &str) -> Result<Pipeline> {
    // The one reader every YAML input goes through (duplicate keys,
    // `required: false` then `required: true`, must not be last-wins;
    // aliases and depth bounded): the guard and the model read one stream.
    let (p, tree): (PipelineFile, _) =
        crate::yaml_guard::from_str_with_tree(&path.display().to_string(), text, &crate::yaml_guard::Limits::DEFAULT)?;
    let spans = bundle::SpanIndex::of(&tree);
    if p.api_version != "bundlegate.dev/v1" || p.kind != "Pipeline" {
        bail!("{}: expected apiVersion bundlegate.dev/v1, kind Pipeline", path.display());
    }
    if p.spec.steps.is_empty() {
        bail!("{}: spec.steps is empty; a pipeline that runs nothing proves nothing", path.display());
    }
    let mut steps = Vec::with_capacity(p.spec.steps.len());
    for (i, step) in p.spec.steps.into_iter().enumerate() {
        let spec = StepSpec::from_file(step.name, step.with).map_err(|(key, msg)| {
            let field = format!("spec.steps[{i}].with.{key}");
            let (line, col) = spans.lookup(&field).unwrap_or((1, 1));
            anyhow::anyhow!("{}:{line}:{col}: {field}: {msg}", path.display())
        })?;
        steps.push(Step { spec, on_failure: step.on_failure, required: step.required });
    }
    Ok(Pipeline { name: p.metadata.name, bundles: p.spec.bundles, steps })
}

impl StepKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StepKind::Lint => "lint",
            StepKind::Render => "render",
            StepKind::Verify => "verify",
            StepKind::Preflight => "preflight",
            StepKind::Canary => "canary",
            StepKind::Comment => "comment",
            StepKind::Audit => "audit",
            StepKind::Watch => "watch",
            StepKind::Revert => "revert",
        }
    }

    /// The options this step reads; any other is an error (it would be
    /// silently ignored, e.g. `deep:` on a lint step).
    fn options(self) -> &'static [&'static str] {
        match self {
            StepKind::Lint | StepKind::Comment => &[],
            StepKind::Render => &["diff", "templates"],
            StepKind::Verify => &["jobs", "denyExtra"],
            StepKind::Preflight => &["snapshot"],
            StepKind::Canary => &["window"],
            StepKind::Audit => &["jobs", "denyExtra", "deep", "serving"],
            StepKind::Watch => &["app", "appNamespace", "timeout", "serviceUrl", "probeInterval", "stableFor"],
            StepKind::Revert => &["remote", "base", "maxAge"],
        }
    }
}

/// `Err((option, why))`.
type OptionError = (&'static str, String);

fn duration_option(
    key: &'static str,
    v: Option<String>,
    default: Option<&'static str>,
) -> std::result::Result<Option<HumanDuration>, OptionError> {
    match v.as_deref().or(default) {
        Some(text) => HumanDuration::parse(text).map(Some).map_err(|e| (key, e)),
        None => Ok(None),
    }
}

/// A duration option with a built-in default, so never absent.
fn duration_or(
    key: &'static str,
    v: Option<String>,
    default: &'static str,
) -> std::result::Result<HumanDuration, OptionError> {
    duration_option(key, v, Some(default)).map(|d| d.unwrap_or_else(|| unreachable!("a default was given")))
}

impl StepSpec {
    pub(crate) fn kind(&self) -> StepKind {
        match self {
            StepSpec::Lint => StepKind::Lint,
            StepSpec::Render { .. } => StepKind::Render,
            StepSpec::Verify(_) => StepKind::Verify,
            StepSpec::Preflight(_) => StepKind::Preflight,
            StepSpec::Canary(_) => StepKind::Canary,
            StepSpec::Comment => StepKind::Comment,
            StepSpec::Audit(_) => StepKind::Audit,
            StepSpec::Watch(_) => StepKind::Watch,
            StepSpec::Revert(_) => StepKind::Revert,
        }
    }

    /// Every option of one step checked before anything runs: known for
    /// this step, numbers in range, durations finite, positive and at most
    /// 7d; then typed, with the defaults of `options::defaults`.
    fn from_file(kind: StepKind, w: StepOptions) -> std::result::Result<StepSpec, OptionError> {
        let set: [(&'static str, bool); 17] = [
            ("diff", w.diff.is_some()),
            ("templates", w.templates.is_some()),
            ("jobs", w.jobs.is_some()),
            ("denyExtra", w.deny_extra.is_some()),
            ("deep", w.deep.is_some()),
            ("serving", w.serving.is_some()),
            ("snapshot", w.snapshot.is_some()),
            ("window", w.window.is_some()),
            ("app", w.app.is_some()),
            ("appNamespace", w.app_namespace.is_some()),
            ("timeout", w.timeout.is_some()),
            ("serviceUrl", w.service_url.is_some()),
            ("probeInterval", w.probe_interval.is_some()),
            ("stableFor", w.stable_for.is_some()),
            ("remote", w.remote.is_some()),
            ("base", w.base.is_some()),
            ("maxAge", w.max_age.is_some()),
        ];
        let allowed = kind.options();
        if let Some((key, _)) = set.iter().find(|(k, on)| *on && !allowed.contains(k)) {
            let known = if allowed.is_empty() {
                "it takes no options".to_string()
            } else {
                format!("its options are {}", allowed.join(", "))
            };
            return Err((key, format!("`{key}` is not an option of the {} step ({known})", kind.as_str())));
        }
        let verify = || -> std::result::Result<VerifyOptions, OptionError> {
            let jobs = match w.jobs {
                Some(n) => options::check_jobs(n).map_err(|e| ("jobs", e))?,
                None => defaults::JOBS,
            };
            Ok(VerifyOptions { jobs, deny_extra: w.deny_extra.unwrap_or(false), ..Default::default() })
        };
        Ok(match kind {
            StepKind::Lint => StepSpec::Lint,
            StepKind::Comment => StepSpec::Comment,
            StepKind::Render => StepSpec::Render {
                diff: w.diff.unwrap_or(true),
                options: RenderOptions { templates: w.templates.clone(), ..Default::default() },
            },
            StepKind::Verify => StepSpec::Verify(verify()?),
            StepKind::Preflight => StepSpec::Preflight(PreflightOptions { snapshot: w.snapshot.clone(), live: false }),
            StepKind::Canary => StepSpec::Canary(CanaryOptions {
                window: duration_option("window", w.window.clone(), None)?,
                ..Default::default()
            }),
            StepKind::Audit => StepSpec::Audit(AuditOptions {
                verify: verify()?,
                deep: w.deep.unwrap_or(false),
                serving: w.serving.unwrap_or(false),
                ..Default::default()
            }),
            StepKind::Watch => StepSpec::Watch(WatchOptions {
                app_namespace: w.app_namespace.clone().unwrap_or_else(|| defaults::APP_NAMESPACE.into()),
                timeout: duration_or("timeout", w.timeout.clone(), defaults::WATCH_TIMEOUT)?,
                service_url: w.service_url.clone(),
                probe_interval: duration_or("probeInterval", w.probe_interval.clone(), defaults::PROBE_INTERVAL)?,
                stable_for: w
                    .stable_for
                    .as_deref()
                    .map(crate::util::try_duration)
                    .transpose()
                    .map_err(|e| ("stableFor", e))?,
                ..WatchOptions::new(w.app.clone().unwrap_or_else(|| defaults::APP_TEMPLATE.into()))
            }),
            StepKind::Revert => StepSpec::Revert(RevertOptions {
                remote: w.remote.clone().unwrap_or_else(|| defaults::REMOTE.into()),
                base: w.base.clone(),
                max_age: duration_or("maxAge", w.max_age.clone(), defaults::REVERT_MAX_AGE)?,
                ..Default::default()
            }),
        })
    }
}
