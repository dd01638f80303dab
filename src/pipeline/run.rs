//! Running a validated [`Pipeline`]: select the bundles, then run each
//! step through `app` with the options the file gave it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::{load, OnFailure, Pipeline, SelectFrom, Step, StepKind, StepSpec};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::release_diff::ChangeClass;
use crate::diag::Overrides;
use crate::options::{
    CanaryOptions, PreflightOptions, PrometheusUrl, PromoteOptions, RenderOptions, RevertOptions, RunOptions,
    WatchOptions,
};
use crate::report::{Report, StepReport, Verdict};

/// What a run is given: the `run` command's options, the severities, and
/// what the context supplies.
pub struct Inputs {
    pub options: RunOptions,
    pub overrides: Overrides,
    /// The render step's verifier image (`None`: the default).
    pub verifier_image: Option<String>,
    /// `changeClass` from `--config`: steps required or optional per class.
    pub change_policy: super::ChangePolicy,
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
    if !inputs.options.bundles.is_empty() {
        return Ok((
            inputs
                .options
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
                .options
                .base
                .clone()
                .context("this pipeline selects changed bundles: pass --base (and --head) or --bundle")?;
            let head = inputs.options.head.clone().unwrap_or_else(|| "HEAD".into());
            let changed =
                crate::adapters::git::changed_bundles(&inputs.options.repo, &base, &head).with_context(|| {
                    format!("finding bundles changed between {base} and {head} in {}", inputs.options.repo.display())
                })?;
            let mut note = StepReport::new("select", format!("{base}..{head}"));
            let mut out = Vec::new();
            let mut skipped = Vec::new();
            let mut differs = Vec::new();
            for c in changed {
                if c.status == "deleted" {
                    skipped.push(crate::report::escape::path_name(&c.path));
                    continue;
                }
                let path = inputs.options.repo.join(&c.path);
                // Say so when the checkout is not at head: the check reads
                // head's committed bundle, not the file on disk.
                if c.head_error.is_none()
                    && crate::adapters::bundle_files::read_bundle_text(&path).ok().as_deref()
                        != Some(c.head_text.as_str())
                {
                    differs.push(crate::report::escape::path_name(&c.path));
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
            let root = p.bundles.as_ref().and_then(|b| b.root.clone()).unwrap_or_else(|| inputs.options.repo.clone());
            let found = crate::adapters::bundle_files::find_bundles(&root)?;
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
        let pr_base: PrBase = t.base_text.as_ref().map(|text| {
            bundle::parse(&format!("{} (base)", loaded.display), &loaded.path, text.clone()).map_err(|e| e.to_string())
        });
        let diff = release_diff_step(ctx, &loaded, &pr_base, inputs);
        let class = diff.as_ref().and_then(|(_, c)| *c);
        if let Some((s, _)) = diff {
            report.push(s);
        }
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
                // A failed canary is what opens the revert PR: a stop never skips it either.
                (_, StepSpec::Promote(po)) => promote_step(ctx, po, &loaded, inputs, &done),
                // watch already judged the canary gates (only once the rollout completed).
                (None, StepSpec::Canary { .. }) if done.steps.iter().any(|s| s.step == "canary") => continue,
                (Some(why), _) => {
                    vec![StepReport::not_run(
                        name,
                        &loaded.display,
                        format!("skipped: {why} failed and its pipeline step says onFailure: stop"),
                    )]
                }
                (None, _) => run_step(ctx, step, &loaded, &pr_base, inputs),
            };
            // The evidence floor before `onFailure` looks: a step that passed on
            // missing evidence did not pass (the report applies it again).
            let steps: Vec<StepReport> = steps
                .into_iter()
                .map(|mut s| {
                    s.verdict = crate::report::floor(s.verdict, &s.diagnostics);
                    s
                })
                .collect();
            let failed =
                steps.iter().any(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive));
            if step.on_failure == OnFailure::Stop && failed && stopped.is_none() {
                stopped = Some(name.to_string());
            }
            let required = super::required(step, class, &inputs.change_policy);
            for s in steps {
                let s = apply_required(step, required, s);
                done.push(s.clone());
                report.push(s);
            }
        }
    }
    for step in &p.steps {
        match &step.spec {
            StepSpec::Audit(o) => {
                let r = crate::app::audit::run(ctx, &inputs.options.repo, o, &inputs.overrides)?;
                for s in r.steps {
                    push_step(&mut report, step, s);
                }
            }
            StepSpec::Comment => {
                // Posted even when no bundle changed, so the PR says so.
                let s = crate::app::comment::github_step(ctx, &report);
                push_step(&mut report, step, s);
            }
            _ => {}
        }
    }
    Ok(report)
}

fn push_step(report: &mut Report, step: &Step, s: StepReport) {
    report.push(apply_required(step, step.required, s));
}

/// A required step that did not run makes the run INCONCLUSIVE. For `watch`,
/// "required" covers its own required checks (Argo sync and rollout truth);
/// identity and downtime are optional by watch's policy (docs/watch.md).
fn apply_required(step: &Step, required: bool, mut s: StepReport) -> StepReport {
    let covered = step.kind() != StepKind::Watch || matches!(s.step.as_str(), "argo" | "rollout" | "watch");
    if required && covered && s.verdict == Verdict::NotRun {
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
    let spec = inputs.options.head.as_deref().unwrap_or("HEAD");
    crate::adapters::git::resolve_commit(&inputs.options.repo, spec).or_else(|| ctx.env.github_sha.clone())
}

/// The step's watch options with what only this run knows: the bundle's
/// metadata in `app` and `service_url`, the revision, `--prometheus`.
fn watch_options(ctx: &Ctx, w: &WatchOptions, l: &Loaded, inputs: &Inputs) -> WatchOptions {
    WatchOptions {
        app: fill(&w.app, l),
        revision: revision(ctx, inputs),
        service_url: w.service_url.as_deref().map(|u| fill(u, l)),
        revert: false, // the pipeline's own revert step decides
        prometheus: inputs.options.prometheus.clone(),
        ..w.clone()
    }
}

/// Revert only on a proven failure of this bundle's gates: an ERROR or an
/// INCONCLUSIVE step is missing evidence, and reverting on missing evidence
/// would undo releases whenever a dependency is down.
fn revert_step(ctx: &Ctx, rs: &RevertOptions, l: &Loaded, inputs: &Inputs, done: &Report) -> Vec<StepReport> {
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
    let repo = crate::adapters::git::checkout_root(&inputs.options.repo).unwrap_or_else(|| inputs.options.repo.clone());
    let args = RevertOptions { repo, ..rs.clone() };
    or_error("revert", &l.display, crate::app::revert::run(ctx, l, &args, Some(done)))
}

/// Promote acts on this bundle's canary step of this run only (never a
/// judgment of its own: a stop before the canary stays a stop).
fn promote_step(ctx: &Ctx, po: &PromoteOptions, l: &Loaded, inputs: &Inputs, done: &Report) -> Vec<StepReport> {
    let repo = crate::adapters::git::checkout_root(&inputs.options.repo).unwrap_or_else(|| inputs.options.repo.clone());
    let args = PromoteOptions { repo, prometheus: inputs.options.prometheus.clone(), ..po.clone() };
    or_error("promote", &l.display, crate::app::promote::run(ctx, l, &args, &inputs.overrides, Some(done)))
}

/// A command's steps, or its failure as this step's ERROR.
fn or_error(step: &str, target: &str, steps: Result<Vec<StepReport>>) -> Vec<StepReport> {
    steps.unwrap_or_else(|e| vec![StepReport::error(step, target, &e)])
}

/// The bundle as committed at `--base` (PR mode), parsed once: the release
/// diff and the manifest diff both read it.
type PrBase = Option<Result<Loaded, String>>;

fn run_step(ctx: &Ctx, step: &Step, l: &Loaded, pr_base: &PrBase, inputs: &Inputs) -> Vec<StepReport> {
    let ov = &inputs.overrides;
    match &step.spec {
        StepSpec::Lint => or_error("lint", &l.display, crate::app::lint::run(ctx, l, ov)),
        StepSpec::Render { diff, options } => render_step(ctx, *diff, options, l, pr_base, inputs),
        StepSpec::Verify(opts) => or_error("verify", &l.display, crate::app::verify::run(ctx, l, opts, ov)),
        StepSpec::Preflight(o) => match inputs.options.snapshot.clone().or_else(|| o.snapshot.clone()) {
            Some(sn) => {
                let o = PreflightOptions { snapshot: Some(sn), live: false };
                or_error("preflight", &l.display, crate::app::preflight::run(ctx, l, &o, ov))
            }
            None => vec![StepReport::not_run("preflight", &l.display, "no cluster state: pass --snapshot FILE (kubectl get … -o yaml) to check surge capacity, quotas and volumes")],
        },
        StepSpec::Canary(o) => match &inputs.options.prometheus.url {
            None => vec![StepReport::not_run(
                "canary",
                &l.display,
                "no Prometheus URL (--prometheus / BUNDLEGATE_PROMETHEUS_URL): canary gates not evaluated",
            )],
            Some(url) => {
                let args = CanaryOptions { prometheus: PrometheusUrl::new(url.clone()), ..o.clone() };
                or_error("canary", &l.display, crate::app::canary::run(ctx, l, &args, ov))
            }
        },
        StepSpec::Watch(w) => or_error(
            "watch",
            &crate::app::watch::target(l),
            crate::app::watch::run(ctx, l, &watch_options(ctx, w, l, inputs)),
        ),
        // run_file runs these; reaching here is a bug, and a bug is an
        // ERROR step, not a crash that loses the report.
        StepSpec::Revert(_) | StepSpec::Promote(_) | StepSpec::Comment | StepSpec::Audit(_) => vec![StepReport::error(
            step.kind().as_str(),
            &l.display,
            &anyhow::anyhow!("internal: this step is not run per bundle here"),
        )],
    }
}

/// In PR mode, what changed in the release from the base version of the
/// same bundle file (none for a new bundle: nothing to compare with). A
/// base that no longer parses is said so, not compared.
fn release_diff_step(
    ctx: &Ctx,
    l: &Loaded,
    pr_base: &PrBase,
    inputs: &Inputs,
) -> Option<(StepReport, Option<ChangeClass>)> {
    use crate::checks::release_diff::{diff, step};
    // PR mode compares with the same path at --base; a bundle new in the
    // change, or a run outside PR mode, with its rollback target: the
    // release it would go back to.
    let target;
    let (base, loaded): (String, Result<&Loaded, String>) = match (pr_base, &l.bundle.spec.rollback) {
        (Some(b), _) => (
            format!("the bundle at {}", inputs.options.base.as_deref().unwrap_or("the base")),
            b.as_ref().map_err(String::clone),
        ),
        (None, Some(rb)) => {
            target = crate::adapters::bundle_files::load_named_bundle(l, &rb.bundle);
            (format!("its rollback target {}", rb.bundle), target.as_ref().map_err(|e| e.to_string()))
        }
        (None, None) => return None,
    };
    Some(match loaded {
        Ok(b) => {
            let d = diff(&b.bundle, &l.bundle);
            let mut s = step(&l.display, &base, &d);
            s.details.extend(text_diffs(ctx, b, l, &d));
            if let Some(p) = inputs.change_policy.get(&d.class) {
                s.summary.push_str(&policy_note(d.class, p));
            }
            (s, Some(d.class))
        }
        Err(e) => (
            StepReport::not_run(
                "release-diff",
                &l.display,
                format!("{base} could not be read, so nothing was compared: {e}"),
            ),
            None,
        ),
    })
}

/// The text diff of each small text file that changed (a chat template,
/// a generation config), both sides read from their stores, bounded, and
/// shown only when they are the pinned bytes.
fn text_diffs(
    ctx: &Ctx,
    base: &Loaded,
    head: &Loaded,
    d: &crate::checks::release_diff::ReleaseDiff,
) -> Vec<crate::report::Detail> {
    use crate::checks::release_diff::{checked_text, text_diff_detail, text_diffs_wanted, TEXT_DIFF_MAX};
    let wanted = text_diffs_wanted(d);
    if wanted.is_empty() {
        return Vec::new();
    }
    // Each side's store opened once, for all of its files.
    let open =
        |l: &Loaded| ctx.open_store(&l.bundle.spec.model.storage_uri, &l.dir(), false).map_err(|e| format!("{e:#}"));
    let (base_store, head_store) = (open(base), open(head));
    let read = |store: &Result<crate::adapters::store::Store, String>, path: &str| {
        let store = store.as_ref().map_err(String::clone)?;
        ctx.try_block_on(store.read_small(path, TEXT_DIFF_MAX)).map_err(|e| format!("{e:#}"))
    };
    wanted
        .into_iter()
        .map(|(path, old, new)| {
            let (o, n) = (read(&base_store, path), read(&head_store, path));
            text_diff_detail(path, checked_text(o, old), checked_text(n, new))
        })
        .collect()
}

/// "; --config changeClass weights: requires canary; lets preflight go unrun".
fn policy_note(class: ChangeClass, p: &super::StepPolicy) -> String {
    let names = |ks: &[StepKind]| ks.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(", ");
    let mut note = format!("; --config changeClass {}:", class.as_key());
    if !p.require.is_empty() {
        note.push_str(&format!(" requires {}", names(&p.require)));
    }
    if !p.optional.is_empty() {
        note.push_str(&format!("{} lets {} go unrun", if p.require.is_empty() { "" } else { ";" }, names(&p.optional)));
    }
    note
}

/// The render step; in PR mode (or on named bundles) its detail is the
/// base→head manifest diff instead of the manifests.
fn render_step(
    ctx: &Ctx,
    diff: bool,
    options: &RenderOptions,
    l: &Loaded,
    pr_base: &PrBase,
    inputs: &Inputs,
) -> Vec<StepReport> {
    let ro = RenderOptions { verifier_image: inputs.verifier_image.clone(), ..options.clone() };
    let mut steps = or_error("render", &l.display, crate::app::render::run(ctx, l, &ro));
    for s in &mut steps {
        if s.verdict == Verdict::Pass && diff {
            let head_yaml = s.details.first().map(|d| d.body.clone()).unwrap_or_default();
            let base_yaml = pr_base.as_ref().map(|b| {
                b.as_ref()
                    .map_err(|e| anyhow::anyhow!("{e}"))
                    .and_then(|b| crate::app::render::rendered(ctx, b, &ro))
                    .map(|r| r.yaml)
                    .unwrap_or_else(|e| format!("# base version could not be rendered: {e}\n"))
            });
            if pr_base.is_some() || !inputs.options.bundles.is_empty() || inputs.options.base.is_some() {
                s.details = vec![crate::app::comment::manifest_diff(
                    base_yaml.as_deref(),
                    &head_yaml,
                    &format!("manifest diff for {}", l.display),
                )];
            }
        }
    }
    steps
}
