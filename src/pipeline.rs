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

use crate::bundle::{self, Loaded};
use crate::cli::{CanaryArgs, VerifyOpts};
use crate::diag::Overrides;
use crate::render::TemplateSource;
use crate::report::{Report, StepReport, Verdict};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Pipeline {
    pub api_version: String,
    pub kind: String,
    pub metadata: PipelineMeta,
    pub spec: PipelineSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineMeta {
    pub name: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PipelineSpec {
    /// `changed` (bundles the PR changes, from git) or `all` (every bundle under `root`).
    #[serde(default)]
    pub bundles: Option<BundleSelection>,
    pub steps: Vec<Step>,
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Step {
    pub name: StepKind,
    #[serde(default)]
    pub on_failure: OnFailure,
    /// A required step that does not run makes the run INCONCLUSIVE.
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub with: StepOptions,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepOptions {
    /// render: show the base→head manifest diff (PR mode).
    #[serde(default)]
    pub diff: Option<bool>,
    /// render: template folder (logic-less; relative to the working directory, like every path option).
    #[serde(default)]
    pub templates: Option<PathBuf>,
    /// verify/audit: concurrent reads.
    #[serde(default)]
    pub jobs: Option<usize>,
    /// verify: treat extra objects as errors.
    #[serde(default)]
    pub deny_extra: Option<bool>,
    /// audit: re-hash everything.
    #[serde(default)]
    pub deep: Option<bool>,
    /// preflight: snapshot file (relative to the working directory); `--snapshot` wins.
    #[serde(default)]
    pub snapshot: Option<PathBuf>,
    /// canary: analysis window.
    #[serde(default)]
    pub window: Option<String>,
}

pub struct Inputs {
    pub bundles: Vec<PathBuf>,
    pub snapshot: Option<PathBuf>,
    pub base: Option<String>,
    pub head: Option<String>,
    pub repo: PathBuf,
    pub prometheus: Option<String>,
    pub overrides: Overrides,
}

pub fn load(path: &Path) -> Result<Pipeline> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading pipeline {}", path.display()))?;
    let spans = bundle::SpanIndex::build(&text);
    let de = serde_yaml_ng::Deserializer::from_str(&text);
    let p: Pipeline = serde_path_to_error::deserialize(de).map_err(|e| {
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
    Ok(p)
}

/// A bundle to run on, plus its base version in PR mode.
struct Target {
    path: PathBuf,
    base_text: Option<String>,
}

fn select(p: &Pipeline, inputs: &Inputs) -> Result<(Vec<Target>, Option<StepReport>)> {
    if !inputs.bundles.is_empty() {
        return Ok((inputs.bundles.iter().map(|b| Target { path: b.clone(), base_text: None }).collect(), None));
    }
    match p.spec.bundles.as_ref().map(|b| b.from) {
        Some(SelectFrom::Changed) => {
            let base = inputs.base.clone().context("this pipeline selects changed bundles: pass --base (and --head) or --bundle")?;
            let head = inputs.head.clone().unwrap_or_else(|| "HEAD".into());
            let changed = crate::adapters::git::changed_bundles(&inputs.repo, &base, &head)
                .with_context(|| format!("finding bundles changed between {base} and {head} in {}", inputs.repo.display()))?;
            let mut note = StepReport::new("select", format!("{base}..{head}"));
            let mut out = Vec::new();
            let mut skipped = Vec::new();
            for c in changed {
                if c.status == "deleted" {
                    skipped.push(c.path.display().to_string());
                    continue;
                }
                out.push(Target { path: inputs.repo.join(&c.path), base_text: c.base_text });
            }
            note.summary = format!("{} changed bundle(s){}", out.len(), if skipped.is_empty() { String::new() } else { format!("; deleted, not checked: {}", skipped.join(", ")) });
            if out.is_empty() {
                note.verdict = Verdict::NotRun;
                note.summary = "this change touches no release bundle; nothing to check".into();
            }
            Ok((out, Some(note)))
        }
        Some(SelectFrom::All) => {
            let root = p.spec.bundles.as_ref().and_then(|b| b.root.clone()).map(|r| r).unwrap_or_else(|| inputs.repo.clone());
            let found = crate::app::verify::find_bundles(&root)?;
            Ok((found.into_iter().map(|path| Target { path, base_text: None }).collect(), None))
        }
        None => bail!("no bundles: pass --bundle PATH (or declare spec.bundles in the pipeline)"),
    }
}

pub fn run_file(pipeline_path: &Path, inputs: &Inputs) -> Result<Report> {
    let p = load(pipeline_path)?;
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let mut report = Report::new(format!("run {}", p.metadata.name));
    let (targets, note) = select(&p, inputs)?;
    if let Some(n) = note {
        report.push(n);
    }
    for t in &targets {
        let loaded = match crate::app::load_or_step(&t.path, "load") {
            Ok(l) => l,
            Err(s) => {
                report.push(s);
                continue;
            }
        };
        let mut stopped: Option<String> = None;
        for step in &p.spec.steps {
            if step.name == StepKind::Comment || step.name == StepKind::Audit {
                continue; // run once for the whole run, below
            }
            let name = step_name(step.name);
            let s = if let Some(why) = &stopped {
                StepReport::not_run(name, &loaded.display, format!("skipped: {why} failed and its pipeline step says onFailure: stop"))
            } else {
                run_step(&rt, step, &loaded, t, inputs)
            };
            if step.on_failure == OnFailure::Stop && matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive) && stopped.is_none() {
                stopped = Some(name.to_string());
            }
            push_step(&mut report, step, s);
        }
    }
    for step in &p.spec.steps {
        match step.name {
            StepKind::Audit => {
                let opts = verify_opts(step);
                let root = inputs.repo.clone();
                let r = rt.block_on(crate::app::verify::audit(&root, step.with.deep.unwrap_or(false), None, &opts, &inputs.overrides))?;
                for s in r.steps {
                    push_step(&mut report, step, s);
                }
            }
            StepKind::Comment => {
                // Posted even when no bundle changed, so the PR says so.
                let s = crate::app::pr::github_step(&report);
                push_step(&mut report, step, s);
            }
            _ => {}
        }
    }
    Ok(report)
}

fn push_step(report: &mut Report, step: &Step, mut s: StepReport) {
    if step.required && s.verdict == Verdict::NotRun {
        s.verdict = Verdict::Inconclusive;
        s.summary = format!("required step did not run: {}", s.summary);
    }
    report.push(s);
}

fn step_name(k: StepKind) -> &'static str {
    match k {
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

fn verify_opts(step: &Step) -> VerifyOpts {
    VerifyOpts { jobs: step.with.jobs.unwrap_or(4), deny_extra: step.with.deny_extra.unwrap_or(false), progress: "auto".into() }
}

fn run_step(rt: &tokio::runtime::Runtime, step: &Step, l: &Loaded, t: &Target, inputs: &Inputs) -> StepReport {
    let ov = &inputs.overrides;
    match step.name {
        StepKind::Lint => crate::app::lint_loaded(l, ov),
        StepKind::Render => {
            let src = step.with.templates.as_ref().map(|d| TemplateSource::Dir(d.clone())).unwrap_or_default();
            let mut s = crate::app::render_loaded(l, &src, None);
            if s.verdict == Verdict::Pass && step.with.diff.unwrap_or(true) {
                let head_yaml = s.details.first().map(|d| d.body.clone()).unwrap_or_default();
                let base_yaml = t.base_text.as_ref().map(|text| {
                    bundle::parse(&format!("{} (base)", l.display), &l.path, text.clone())
                        .map_err(anyhow::Error::from)
                        .and_then(|b| crate::render::Renderer::new(&src)?.render(&b))
                        .map(|r| r.yaml)
                        .unwrap_or_else(|e| format!("# base version could not be rendered: {e}\n"))
                });
                if t.base_text.is_some() || !inputs.bundles.is_empty() || inputs.base.is_some() {
                    s.details = vec![crate::app::pr::manifest_diff(base_yaml.as_deref(), &head_yaml, &format!("manifest diff for {}", l.display))];
                }
            }
            s
        }
        StepKind::Verify => rt.block_on(crate::app::verify::verify_loaded(l, &verify_opts(step), ov, None)),
        StepKind::Preflight => {
            let snap = inputs.snapshot.clone().or_else(|| step.with.snapshot.clone());
            match snap {
                Some(sn) => crate::app::preflight::run(&l.path, Some(&sn), false, ov),
                None => StepReport::not_run("preflight", &l.display, "no cluster state: pass --snapshot FILE (kubectl get … -o yaml) to check surge capacity, quotas and volumes"),
            }
        }
        StepKind::Canary => match &inputs.prometheus {
            None => StepReport::not_run("canary", &l.display, "no Prometheus URL (--prometheus / BUNDLEGATE_PROMETHEUS_URL): canary gates not evaluated"),
            Some(url) => {
                let args = CanaryArgs {
                    prometheus: Some(url.clone()),
                    window: step.with.window.clone(),
                    mode: None,
                    candidate_selector: None,
                    baseline_selector: None,
                    endpoint: None,
                };
                crate::app::canary::run(&l.path, &args, ov)
            }
        },
        StepKind::Watch | StepKind::Revert => {
            StepReport::not_run(step_name(step.name), &l.display, "post-merge watch/revert is not available in this version (issue #7); nothing was checked")
        }
        StepKind::Comment | StepKind::Audit => unreachable!("run once per pipeline"),
    }
}
