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

use crate::app::options::{self, defaults, CanaryOptions, RenderOptions, HumanDuration, RevertOptions, VerifyOptions, WatchOptions};
use crate::bundle::{self, Loaded};
use crate::diag::Overrides;
use crate::manifests::TemplateSource;
use crate::app::ctx::Ctx;
use crate::report::{Report, StepReport, Verdict};

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
pub enum StepKind {
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
    pub fn kind(&self) -> StepKind {
        self.spec.kind()
    }
}

/// Each step with its own typed options, defaults applied.
#[derive(Debug, Clone)]
pub enum StepSpec {
    Lint,
    Render {
        /// Show the base→head manifest diff (PR mode).
        diff: bool,
        templates: Option<PathBuf>,
    },
    Verify(VerifyOptions),
    Preflight {
        /// `--snapshot` wins over this.
        snapshot: Option<PathBuf>,
    },
    Canary {
        window: Option<HumanDuration>,
    },
    /// Posted once per run.
    Comment,
    /// Runs once per run over the whole tree.
    Audit {
        verify: VerifyOptions,
        deep: bool,
        serving: bool,
    },
    Watch(WatchStep),
    Revert(RevertStep),
}

/// `watch` in a pipeline: `{name}`/`{namespace}` in `app` and `service_url`
/// stand for the bundle's metadata.
#[derive(Debug, Clone)]
pub struct WatchStep {
    pub app: String,
    pub app_namespace: String,
    pub timeout: HumanDuration,
    pub service_url: Option<String>,
    pub probe_interval: HumanDuration,
}

#[derive(Debug, Clone)]
pub struct RevertStep {
    pub remote: String,
    /// Default: the remote's HEAD branch, else `main`.
    pub base: Option<String>,
    pub max_age: HumanDuration,
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

pub struct Inputs {
    pub bundles: Vec<PathBuf>,
    pub snapshot: Option<PathBuf>,
    pub base: Option<String>,
    pub head: Option<String>,
    pub repo: PathBuf,
    pub prometheus: Option<String>,
    pub overrides: Overrides,
    /// The render step's verifier image (`None`: the default).
    pub verifier_image: Option<String>,
}

pub fn load(path: &Path) -> Result<Pipeline> {
    let text = crate::adapters::bundle_files::read_text(path, crate::adapters::bundle_files::FileKind::Pipeline)
        .with_context(|| format!("reading pipeline {}", path.display()))?;
    parse(path, &text)
}

/// Parse and validate pipeline text; `path` names the file in every error.
pub fn parse(path: &Path, text: &str) -> Result<Pipeline> {
    // The rule every YAML input follows (duplicate keys, `required: false`
    // then `required: true`, must not be last-wins; aliases and depth bounded).
    if let Err(g) = crate::yaml_guard::check(text, &crate::yaml_guard::Limits::DEFAULT) {
        bail!("{}:{}:{}: {}", path.display(), g.line, g.column, g.at_path());
    }
    let spans = bundle::SpanIndex::build(text);
    let de = serde_yaml_ng::Deserializer::from_str(text);
    let p: PipelineFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e.path().to_string();
        let inner = e.into_inner();
        let (line, col) = inner.location().map(|l| (l.line(), l.column())).or_else(|| spans.lookup(&field)).unwrap_or((1, 1));
        let msg = inner.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_string();
        anyhow::anyhow!("{}:{line}:{col}: {field}: {msg}", path.display())
    })?;
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
    pub fn as_str(self) -> &'static str {
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
            StepKind::Watch => &["app", "appNamespace", "timeout", "serviceUrl", "probeInterval"],
            StepKind::Revert => &["remote", "base", "maxAge"],
        }
    }
}

/// `Err((option, why))`.
type OptionError = (&'static str, String);

fn duration_option(key: &'static str, v: Option<String>, default: Option<&'static str>) -> std::result::Result<Option<HumanDuration>, OptionError> {
    match v.as_deref().or(default) {
        Some(text) => HumanDuration::parse(text).map(Some).map_err(|e| (key, e)),
        None => Ok(None),
    }
}

/// A duration option with a built-in default, so never absent.
fn duration_or(key: &'static str, v: Option<String>, default: &'static str) -> std::result::Result<HumanDuration, OptionError> {
    duration_option(key, v, Some(default)).map(|d| d.unwrap_or_else(|| unreachable!("a default was given")))
}

impl StepSpec {
    pub fn kind(&self) -> StepKind {
        match self {
            StepSpec::Lint => StepKind::Lint,
            StepSpec::Render { .. } => StepKind::Render,
            StepSpec::Verify(_) => StepKind::Verify,
            StepSpec::Preflight { .. } => StepKind::Preflight,
            StepSpec::Canary { .. } => StepKind::Canary,
            StepSpec::Comment => StepKind::Comment,
            StepSpec::Audit { .. } => StepKind::Audit,
            StepSpec::Watch(_) => StepKind::Watch,
            StepSpec::Revert(_) => StepKind::Revert,
        }
    }

    /// Every option of one step checked before anything runs: known for
    /// this step, numbers in range, durations finite, positive and at most
    /// 7d; then typed, with the defaults of `app::options::defaults`.
    fn from_file(kind: StepKind, w: StepOptions) -> std::result::Result<StepSpec, OptionError> {
        let set: [(&'static str, bool); 16] = [
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
            ("remote", w.remote.is_some()),
            ("base", w.base.is_some()),
            ("maxAge", w.max_age.is_some()),
        ];
        let allowed = kind.options();
        if let Some((key, _)) = set.iter().find(|(k, on)| *on && !allowed.contains(k)) {
            let known = if allowed.is_empty() { "it takes no options".to_string() } else { format!("its options are {}", allowed.join(", ")) };
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
            StepKind::Render => StepSpec::Render { diff: w.diff.unwrap_or(true), templates: w.templates.clone() },
            StepKind::Verify => StepSpec::Verify(verify()?),
            StepKind::Preflight => StepSpec::Preflight { snapshot: w.snapshot.clone() },
            StepKind::Canary => StepSpec::Canary { window: duration_option("window", w.window.clone(), None)? },
            StepKind::Audit => StepSpec::Audit { verify: verify()?, deep: w.deep.unwrap_or(false), serving: w.serving.unwrap_or(false) },
            StepKind::Watch => StepSpec::Watch(WatchStep {
                app: w.app.clone().unwrap_or_else(|| defaults::APP_TEMPLATE.into()),
                app_namespace: w.app_namespace.clone().unwrap_or_else(|| defaults::APP_NAMESPACE.into()),
                timeout: duration_or("timeout", w.timeout.clone(), defaults::WATCH_TIMEOUT)?,
                service_url: w.service_url.clone(),
                probe_interval: duration_or("probeInterval", w.probe_interval.clone(), defaults::PROBE_INTERVAL)?,
            }),
            StepKind::Revert => StepSpec::Revert(RevertStep {
                remote: w.remote.clone().unwrap_or_else(|| defaults::REMOTE.into()),
                base: w.base.clone(),
                max_age: duration_or("maxAge", w.max_age.clone(), defaults::REVERT_MAX_AGE)?,
            }),
        })
    }
}

/// A bundle to run on, plus its base version in PR mode.
struct Target {
    path: PathBuf,
    base_text: Option<String>,
    /// PR mode: the bundle as committed at `--head`, which is what is
    /// checked (the working tree may be at another revision).
    head_text: Option<String>,
    /// PR mode: why the committed bundle cannot be read (too large, not
    /// UTF-8): reported as its load error, never skipped.
    head_error: Option<String>,
}

fn select(p: &Pipeline, inputs: &Inputs) -> Result<(Vec<Target>, Option<StepReport>)> {
    if !inputs.bundles.is_empty() {
        return Ok((inputs.bundles.iter().map(|b| Target { path: b.clone(), base_text: None, head_text: None, head_error: None }).collect(), None));
    }
    match p.bundles.as_ref().map(|b| b.from) {
        Some(SelectFrom::Changed) => {
            let base = inputs.base.clone().context("this pipeline selects changed bundles: pass --base (and --head) or --bundle")?;
            let head = inputs.head.clone().unwrap_or_else(|| "HEAD".into());
            let changed = crate::adapters::git::changed_bundles(&inputs.repo, &base, &head)
                .with_context(|| format!("finding bundles changed between {base} and {head} in {}", inputs.repo.display()))?;
            let mut note = StepReport::new("select", format!("{base}..{head}"));
            let mut out = Vec::new();
            let mut skipped = Vec::new();
            let mut differs = Vec::new();
            for c in changed {
                if c.status == "deleted" {
                    skipped.push(c.path.display().to_string());
                    continue;
                }
                let path = inputs.repo.join(&c.path);
                // Say so when the checkout is not at head: the check reads
                // head's committed bundle, not the file on disk.
                if c.head_error.is_none() && crate::adapters::bundle_files::read_bundle_text(&path).ok().as_deref() != Some(c.head_text.as_str()) {
                    differs.push(c.path.display().to_string());
                }
                out.push(Target { path, base_text: c.base_text, head_text: Some(c.head_text), head_error: c.head_error });
            }
            note.summary = format!("{} changed bundle(s), checked as committed at {head}{}", out.len(), if skipped.is_empty() { String::new() } else { format!("; deleted, not checked: {}", skipped.join(", ")) });
            if !differs.is_empty() {
                note.summary.push_str(&format!("; the working tree differs from {head} for {} (not what was checked)", differs.join(", ")));
            }
            note.data = serde_json::json!({"base": base, "head": head, "workingTreeDiffers": differs});
            if out.is_empty() {
                note.verdict = Verdict::NotRun;
                note.summary = "this change touches no release bundle; nothing to check".into();
            }
            Ok((out, Some(note)))
        }
        Some(SelectFrom::All) => {
            let root = p.bundles.as_ref().and_then(|b| b.root.clone()).unwrap_or_else(|| inputs.repo.clone());
            let found = crate::app::verify::find_bundles(&root)?;
            Ok((found.into_iter().map(|path| Target { path, base_text: None, head_text: None, head_error: None }).collect(), None))
        }
        None => bail!("no bundles: pass --bundle PATH (or declare spec.bundles in the pipeline)"),
    }
}

pub fn run_file(ctx: &Ctx, pipeline_path: &Path, inputs: &Inputs) -> Result<Report> {
    let p = load(pipeline_path)?;
    let mut report = Report::new(format!("run {}", p.name));
    let (targets, note) = select(&p, inputs)?;
    if let Some(n) = note {
        report.push(n);
    }
    for t in &targets {
        let loaded = match (&t.head_error, &t.head_text) {
            (Some(why), _) => Err(crate::app::unreadable_step(&t.path, why, "load")),
            (None, Some(text)) => crate::app::parse_or_step(&t.path, text, "load"),
            (None, None) => crate::app::load_or_step(&t.path, "load"),
        };
        let loaded = match loaded {
            Ok(l) => l,
            Err(s) => {
                report.push(s);
                continue;
            }
        };
        let mut stopped: Option<String> = None;
        // This bundle's steps so far: the evidence a revert step acts on.
        let mut done = Report::new("run (this bundle)");
        for step in &p.steps {
            if matches!(step.spec, StepSpec::Comment | StepSpec::Audit { .. }) {
                continue; // run once for the whole run, below
            }
            let name = step.kind().as_str();
            let steps = match (&stopped, &step.spec) {
                // A revert answers a failure, so a stop never skips it.
                (_, StepSpec::Revert(rs)) => revert_step(ctx, rs, &loaded, inputs, &done),
                // watch already judged the canary gates (only once the rollout completed).
                (None, StepSpec::Canary { .. }) if done.steps.iter().any(|s| s.step == "canary") => continue,
                (Some(why), _) => {
                    vec![StepReport::not_run(name, &loaded.display, format!("skipped: {why} failed and its pipeline step says onFailure: stop"))]
                }
                (None, _) => run_step(ctx, step, &loaded, t, inputs),
            };
            let failed = steps.iter().any(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive));
            if step.on_failure == OnFailure::Stop && failed && stopped.is_none() {
                stopped = Some(name.to_string());
            }
            for s in steps {
                let s = apply_required(step, s);
                done.push(s.clone());
                report.push(s);
            }
        }
    }
    for step in &p.steps {
        match &step.spec {
            StepSpec::Audit { verify, deep, serving } => {
                let root = inputs.repo.clone();
                let o = crate::app::audit::AuditOptions { root: root.clone(), deep: *deep, ..Default::default() };
                let r = ctx.block_on(crate::app::audit::audit(ctx, &o, verify, &inputs.overrides))?;
                for s in r.steps {
                    push_step(&mut report, step, s);
                }
                if *serving {
                    for s in ctx.block_on(crate::app::serving::serving_audit(ctx, &root))? {
                        push_step(&mut report, step, s);
                    }
                }
            }
            StepSpec::Comment => {
                // Posted even when no bundle changed, so the PR says so.
                let s = crate::app::pr::github_step(ctx, &report);
                push_step(&mut report, step, s);
            }
            _ => {}
        }
    }
    Ok(report)
}

fn push_step(report: &mut Report, step: &Step, s: StepReport) {
    report.push(apply_required(step, s));
}

/// A required step that did not run makes the run INCONCLUSIVE. For `watch`,
/// "required" covers its own required checks (Argo sync and rollout truth);
/// identity and downtime are optional by watch's policy (docs/watch.md).
fn apply_required(step: &Step, mut s: StepReport) -> StepReport {
    let covered = step.kind() != StepKind::Watch || matches!(s.step.as_str(), "argo" | "rollout" | "watch");
    if step.required && covered && s.verdict == Verdict::NotRun {
        s.verdict = Verdict::Inconclusive;
        s.summary = format!("required step did not run: {}", s.summary);
    }
    s
}

/// `{name}` / `{namespace}` in a watch option stand for the bundle's metadata.
fn fill(template: &str, l: &Loaded) -> String {
    template.replace("{name}", &l.bundle.metadata.name).replace("{namespace}", &l.bundle.metadata.namespace)
}

/// The merge commit Argo CD must have synced: `--head` (or HEAD) resolved in
/// the repository, else `GITHUB_SHA`.
fn revision(ctx: &Ctx, inputs: &Inputs) -> Option<String> {
    let spec = inputs.head.as_deref().unwrap_or("HEAD");
    crate::adapters::git::resolve_commit(&inputs.repo, spec).or_else(|| ctx.env.github_sha.clone())
}

fn watch_options(ctx: &Ctx, w: &WatchStep, l: &Loaded, inputs: &Inputs) -> WatchOptions {
    WatchOptions {
        app: fill(&w.app, l),
        app_namespace: w.app_namespace.clone(),
        revision: revision(ctx, inputs),
        timeout: w.timeout.clone(),
        service_url: w.service_url.as_deref().map(|u| fill(u, l)),
        probe_interval: w.probe_interval.clone(),
        revert: false, // the pipeline's own revert step decides
        prometheus: inputs.prometheus.clone(),
    }
}

/// Revert only on a proven failure of this bundle's gates: an ERROR or an
/// INCONCLUSIVE step is missing evidence, and reverting on missing evidence
/// would undo releases whenever a dependency is down.
fn revert_step(ctx: &Ctx, rs: &RevertStep, l: &Loaded, inputs: &Inputs, done: &Report) -> Vec<StepReport> {
    let failed: Vec<&str> = done.steps.iter().filter(|s| s.verdict == Verdict::Fail).map(|s| s.step.as_str()).collect();
    if failed.is_empty() {
        let unsure: Vec<&str> = done.steps.iter().filter(|s| matches!(s.verdict, Verdict::Error | Verdict::Inconclusive)).map(|s| s.step.as_str()).collect();
        let why = if unsure.is_empty() {
            "no gate failed: nothing to revert".to_string()
        } else {
            format!("no gate failed, but {} could not decide: a revert needs a proven failure, so a human decides", unsure.join(", "))
        };
        return vec![StepReport::not_run("revert", &l.display, why)];
    }
    let remote = rs.remote.clone();
    let repo = crate::adapters::rollout::checkout_root(&inputs.repo).unwrap_or_else(|| inputs.repo.clone());
    let base = rs.base.clone().unwrap_or_else(|| crate::adapters::rollout::default_base(&repo, &remote));
    let args = RevertOptions { repo, remote, base, evidence: None, max_age: rs.max_age.clone(), failed_at: None };
    crate::app::revert::revert_in(ctx, l, &args, done)
}

fn run_step(ctx: &Ctx, step: &Step, l: &Loaded, t: &Target, inputs: &Inputs) -> Vec<StepReport> {
    match &step.spec {
        StepSpec::Watch(w) => crate::app::watch::watch_steps(ctx, l, &watch_options(ctx, w, l, inputs)),
        _ => vec![run_one(ctx, step, l, t, inputs)],
    }
}

fn run_one(ctx: &Ctx, step: &Step, l: &Loaded, t: &Target, inputs: &Inputs) -> StepReport {
    let ov = &inputs.overrides;
    match &step.spec {
        StepSpec::Lint => crate::app::lint_loaded(l, ov),
        StepSpec::Render { diff, templates } => {
            let ro = RenderOptions { templates: templates.as_ref().map(|d| TemplateSource::Dir(d.clone())).unwrap_or_default(), verifier_image: inputs.verifier_image.clone() };
            let mut s = crate::app::render_loaded(l, &ro, None);
            if s.verdict == Verdict::Pass && *diff {
                let head_yaml = s.details.first().map(|d| d.body.clone()).unwrap_or_default();
                let base_yaml = t.base_text.as_ref().map(|text| {
                    bundle::parse(&format!("{} (base)", l.display), &l.path, text.clone())
                        .map_err(anyhow::Error::from)
                        .and_then(|b| ro.renderer()?.render(&b))
                        .map(|r| r.yaml)
                        .unwrap_or_else(|e| format!("# base version could not be rendered: {e}\n"))
                });
                if t.base_text.is_some() || !inputs.bundles.is_empty() || inputs.base.is_some() {
                    s.details = vec![crate::app::pr::manifest_diff(base_yaml.as_deref(), &head_yaml, &format!("manifest diff for {}", l.display))];
                }
            }
            s
        }
        StepSpec::Verify(opts) => ctx.block_on(crate::app::verify::verify_loaded(ctx, l, opts, ov, None)),
        StepSpec::Preflight { snapshot } => {
            let snap = inputs.snapshot.clone().or_else(|| snapshot.clone());
            match snap {
                Some(sn) => crate::app::preflight::run_loaded(ctx, l, Some(&sn), false, ov),
                None => StepReport::not_run("preflight", &l.display, "no cluster state: pass --snapshot FILE (kubectl get … -o yaml) to check surge capacity, quotas and volumes"),
            }
        }
        StepSpec::Canary { window } => match &inputs.prometheus {
            None => StepReport::not_run("canary", &l.display, "no Prometheus URL (--prometheus / BUNDLEGATE_PROMETHEUS_URL): canary gates not evaluated"),
            Some(url) => {
                let args = CanaryOptions { prometheus: Some(url.clone()), window: window.clone(), ..Default::default() };
                ctx.block_on(crate::app::canary::analyze(ctx, l, &args, ov))
            }
        },
        StepSpec::Watch(_) | StepSpec::Revert(_) | StepSpec::Comment | StepSpec::Audit { .. } => unreachable!("dispatched by run_step / run_file"),
    }
}
