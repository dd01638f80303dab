//! Running a validated [`Pipeline`]: select the bundles, then run each
//! step through `app` with the options the file gave it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{load, OnFailure, Pipeline, RevertStep, SelectFrom, Step, StepKind, StepSpec, WatchStep};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::diag::Overrides;
use crate::manifests::TemplateSource;
use crate::options::{CanaryOptions, RenderOptions, RevertOptions, WatchOptions};
use crate::report::{Report, StepReport, Verdict};

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
        return Ok((
            inputs
                .bundles
                .iter()
                .map(|b| Target { path: b.clone(), base_text: None, head_text: None, head_error: None })
                .collect(),
            None,
        ));
    }
    match p.bundles.as_ref().map(|b| b.from) {
        Some(SelectFrom::Changed) => {
            let base = inputs
                .base
                .clone()
                .context("this pipeline selects changed bundles: pass --base (and --head) or --bundle")?;
            let head = inputs.head.clone().unwrap_or_else(|| "HEAD".into());
            let changed = crate::adapters::git::changed_bundles(&inputs.repo, &base, &head).with_context(|| {
                format!("finding bundles changed between {base} and {head} in {}", inputs.repo.display())
            })?;
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
                if c.head_error.is_none()
                    && crate::adapters::bundle_files::read_bundle_text(&path).ok().as_deref()
                        != Some(c.head_text.as_str())
                {
                    differs.push(c.path.display().to_string());
                }
                out.push(Target {
                    path,
                    base_text: c.base_text,
                    head_text: Some(c.head_text),
                    head_error: c.head_error,
                });
            }
            note.summary = format!(
                "{} changed bundle(s), checked as committed at {head}{}",
                out.len(),
                if skipped.is_empty() {
                    String::new()
                } else {
                    format!("; deleted, not checked: {}", skipped.join(", "))
                }
            );
            if !differs.is_empty() {
                note.summary.push_str(&format!(
                    "; the working tree differs from {head} for {} (not what was checked)",
                    differs.join(", ")
                ));
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
            Ok((
                found
                    .into_iter()
                    .map(|path| Target { path, base_text: None, head_text: None, head_error: None })
                    .collect(),
                None,
            ))
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
            (Some(why), _) => Err(Box::new(crate::app::unreadable_step(&t.path, why, "load"))),
            (None, Some(text)) => crate::app::parse_or_step(&t.path, text, "load"),
            (None, None) => crate::app::load_or_step(&t.path, "load"),
        };
        let loaded = match loaded {
            Ok(l) => l,
            Err(s) => {
                report.push(*s);
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
                    vec![StepReport::not_run(
                        name,
                        &loaded.display,
                        format!("skipped: {why} failed and its pipeline step says onFailure: stop"),
                    )]
                }
                (None, _) => run_step(ctx, step, &loaded, t, inputs),
            };
            let failed =
                steps.iter().any(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive));
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
                let r = ctx.try_block_on(crate::app::audit::audit(ctx, &o, verify, &inputs.overrides))?;
                for s in r.steps {
                    push_step(&mut report, step, s);
                }
                if *serving {
                    for s in ctx.try_block_on(crate::app::serving::serving_audit(ctx, &root))? {
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
        stable_for: w.stable_for,
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
        let unsure: Vec<&str> = done
            .steps
            .iter()
            .filter(|s| matches!(s.verdict, Verdict::Error | Verdict::Inconclusive))
            .map(|s| s.step.as_str())
            .collect();
        let why = if unsure.is_empty() {
            "no gate failed: nothing to revert".to_string()
        } else {
            format!(
                "no gate failed, but {} could not decide: a revert needs a proven failure, so a human decides",
                unsure.join(", ")
            )
        };
        return vec![StepReport::not_run("revert", &l.display, why)];
    }
    let remote = rs.remote.clone();
    let repo = crate::adapters::git::checkout_root(&inputs.repo).unwrap_or_else(|| inputs.repo.clone());
    let base = rs.base.clone().unwrap_or_else(|| crate::adapters::git::default_base(&repo, &remote));
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
            let ro = RenderOptions {
                templates: templates.as_ref().map(|d| TemplateSource::Dir(d.clone())).unwrap_or_default(),
                verifier_image: inputs.verifier_image.clone(),
            };
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
                    s.details = vec![crate::app::pr::manifest_diff(
                        base_yaml.as_deref(),
                        &head_yaml,
                        &format!("manifest diff for {}", l.display),
                    )];
                }
            }
            s
        }
        StepSpec::Verify(opts) => {
            ctx.block_on_step("verify", &l.display, crate::app::verify::verify_loaded(ctx, l, opts, ov, None))
        }
        StepSpec::Preflight { snapshot } => {
            let snap = inputs.snapshot.clone().or_else(|| snapshot.clone());
            match snap {
                Some(sn) => crate::app::preflight::run_loaded(ctx, l, Some(&sn), false, ov),
                None => StepReport::not_run("preflight", &l.display, "no cluster state: pass --snapshot FILE (kubectl get … -o yaml) to check surge capacity, quotas and volumes"),
            }
        }
        StepSpec::Canary { window } => match &inputs.prometheus {
            None => StepReport::not_run(
                "canary",
                &l.display,
                "no Prometheus URL (--prometheus / BUNDLEGATE_PROMETHEUS_URL): canary gates not evaluated",
            ),
            Some(url) => {
                let args =
                    CanaryOptions { prometheus: Some(url.clone()), window: window.clone(), ..Default::default() };
                ctx.block_on_step("canary", &l.display, crate::app::canary::analyze(ctx, l, &args, ov))
            }
        },
        // run_step and run_file dispatch these; reaching here is a bug, and
        // a bug is an ERROR step, not a crash that loses the report.
        StepSpec::Watch(_) | StepSpec::Revert(_) | StepSpec::Comment | StepSpec::Audit { .. } => StepReport::error(
            step.kind().as_str(),
            &l.display,
            &anyhow::anyhow!("internal: this step is not run per bundle here"),
        ),
    }
}
