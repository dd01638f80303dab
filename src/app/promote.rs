//! `promote`: after the canary, one PR or none — progressive delivery
//! through git, no controller in the cluster. The decision, the next
//! step's objects and every text are `checks::canary::promote`'s; this
//! reads the canary's judgment (this run's, a report file, or judged now),
//! the split file git holds, and writes the branch and the PR as `revert`
//! does (a FAIL is `revert` itself).

use anyhow::{anyhow, Context, Result};

use super::canary::SplitFile;
use crate::adapters::git;
use crate::adapters::github::NewPull;
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::canary::promote::{self as pm, Action};
use crate::checks::canary::split::Declared;
use crate::checks::revert::steps::PullState;
use crate::diag::Overrides;
use crate::options::PromoteOptions;
use crate::report::{Report, StepReport};

/// `promote` on one loaded bundle. `evidence`: this run's steps so far
/// (the pipeline), else the `--evidence` report file, else the canary is
/// judged now (`--prometheus`). A file that cannot be read is the tool failing.
pub fn run(
    ctx: &Ctx,
    l: &Loaded,
    args: &PromoteOptions,
    ov: &Overrides,
    evidence: Option<&Report>,
) -> Result<Vec<StepReport>> {
    let from_file = match (&args.evidence, evidence) {
        (Some(p), None) => Some(super::report::show(ctx, &p.display().to_string()).with_context(|| {
            format!("reading evidence {}: a bundlegate JSON report (`canary --format json`)", p.display())
        })?),
        _ => None,
    };
    ctx.block_on(promote_steps(ctx, l, args, ov, evidence.or(from_file.as_ref())))
}

async fn promote_steps(
    ctx: &Ctx,
    l: &Loaded,
    args: &PromoteOptions,
    ov: &Overrides,
    given: Option<&Report>,
) -> Vec<StepReport> {
    let mut steps = Vec::new();
    // Judged now only when nothing was given: in a pipeline, a canary that
    // did not run (a stop) is not run behind its back.
    let judged_now = match (given, args.prometheus.get()) {
        (None, Some(_)) => Some(super::canary::analyze(ctx, l, &args.canary(), ov).await),
        _ => None,
    };
    let canary = match (&judged_now, given) {
        (Some(s), _) => Some(s.clone()),
        (None, Some(r)) => r.steps.iter().rev().find(|s| s.step == "canary").cloned(),
        (None, None) => None,
    };
    steps.extend(judged_now);
    // Read even when it fails to: a FAIL reverts without it.
    let file = super::canary::read_split(l, &args.split);
    let declared = match &file {
        Ok(f) => f.declared(l),
        Err(e) => Err(format!("{e:#}")),
    };
    let plan = l.bundle.spec.canary.as_ref().map(|c| c.steps.clone()).unwrap_or_default();
    let action = pm::decide(canary.as_ref(), &declared, &plan);
    match (&action, canary, file, declared) {
        (Action::Next { .. }, Some(c), Ok(f), Ok(d)) => {
            steps.push(open_next(ctx, l, args, &action, (&f, &d), &c).await)
        }
        (Action::Revert, c, ..) => {
            steps.push(pm::held(&l.display, &action));
            let mut evidence = Report::new("promote");
            evidence.steps.extend(c);
            steps.extend(super::revert::revert_steps(ctx, l, &args.revert(), Some(&evidence), &[]).await);
        }
        _ => steps.push(pm::held(&l.display, &action)),
    }
    steps
}

/// The next step's objects written over the split file on a branch from
/// HEAD, pushed, and its PR opened (or the open one found): one step.
async fn open_next(
    ctx: &Ctx,
    l: &Loaded,
    args: &PromoteOptions,
    action: &Action,
    (file, d): (&SplitFile, &Declared),
    canary: &StepReport,
) -> StepReport {
    let target = l.display.as_str();
    let Action::Next { from, to } = *action else { return pm::held(target, action) };
    let objects = file.objects.as_deref().unwrap_or_default();
    let next = match pm::next_objects(objects, d, to) {
        Ok(n) => n,
        Err(why) => return StepReport::error("promote", target, &anyhow!("rendering the {to}% step: {why}")),
    };
    let changes = pm::changes(objects, &next);
    let (repo, rel) = match git::locate(&args.repo, &file.path) {
        Ok(x) => x,
        Err(e) => return StepReport::error("promote", target, &e),
    };
    let branch = pm::branch_name(l, &rel, to);
    let message = pm::commit_message(l, &rel, from, to);
    let mut text = pm::file_header(l, to);
    for o in &next {
        text.push_str("---\n");
        text.push_str(&crate::manifests::to_yaml(o));
    }
    let pushed = git::commit_revert(&repo, &rel, &text, &branch, &message)
        .and_then(|oid| Ok((oid.to_string(), git::push_new_branch(&repo, &args.remote, &branch)?)));
    let (commit, pushed) = match pushed {
        Ok(x) => x,
        Err(e) => return StepReport::error("promote", target, &e.context(format!("creating and pushing {branch}"))),
    };
    let existed = matches!(pushed, git::PushOutcome::AlreadyExists(_));
    let base = args.base.clone().unwrap_or_else(|| {
        let root = git::checkout_root(&args.repo).unwrap_or_else(|| args.repo.clone());
        git::default_base(&root, &args.remote)
    });
    let body = pm::pr_body(l, &rel, &branch, (from, to), &changes, canary);
    let title = pm::pr_title(l, from, to);
    let pr = NewPull { title: &title, head: &branch, base: &base, body: &body };
    let state = match ctx.github().await {
        Err(e) => return StepReport::error("promote", target, &anyhow::Error::new(e)),
        Ok(gh) => match (gh, git::github_repo(&repo, &args.remote, ctx.env.github_repository.as_deref())) {
            (Some(gh), Some((owner, name))) => match gh.revert_pull(&owner, &name, existed, &pr).await {
                Ok(state) => state,
                Err(e) => return StepReport::error("promote", target, &e),
            },
            _ => PullState::NoGitHub,
        },
    };
    pm::next_step(target, action, (&branch, &commit, existed), &changes, state)
}
