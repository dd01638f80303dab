//! `revert`: when a release failed its post-merge gates, open one
//! revert PR to a verified previous release, or propose to degrade when
//! there is none. The plan, the decisions and their write-up are
//! `checks::revert`'s; this reads the repository, the store and GitHub,
//! and writes the branch.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::adapters::github::NewPull;
use crate::adapters::{bundle_files, git};
use crate::app::ctx::Ctx;
use crate::bundle::{Loaded, Rollback};
use crate::checks::revert::steps::{self as rv, PullState, Pushed, RevertInputs, RevertPlan};
use crate::checks::revert::text;
use crate::checks::watch::argo::AppSource;
use crate::diag::Overrides;
use crate::options::{RevertOptions, VerifyOptions};
use crate::report::{Report, StepReport};

/// `revert` on one loaded bundle; `evidence` is what was found so far (the
/// pipeline's earlier steps), else the `--evidence` report file. A file that
/// cannot be read is the tool failing.
pub fn run(ctx: &Ctx, l: &Loaded, args: &RevertOptions, evidence: Option<&Report>) -> Result<Vec<StepReport>> {
    let from_file = match (&args.evidence, evidence) {
        (Some(p), None) => Some(super::report::show(ctx, &p.display().to_string()).with_context(|| {
            format!("reading evidence {}: a bundlegate JSON report (`watch --format json`)", p.display())
        })?),
        _ => None,
    };
    ctx.block_on(revert_steps(ctx, l, args, evidence.or(from_file.as_ref()), &[]))
}

/// A failed release's way back: refused when the failure is too old, the
/// bundle was itself put there by a revert, or the base branch renders
/// another release now (Argo CD's view: the Application's `sources`; none
/// known: the bundle file); a degrade proposal when the rollback target is
/// missing, not the recorded release or does not verify; else one branch
/// and one PR restoring the verified previous bundle.
pub(crate) async fn revert_steps(
    ctx: &Ctx,
    l: &Loaded,
    args: &RevertOptions,
    evidence: Option<&Report>,
    sources: &[AppSource],
) -> Vec<StepReport> {
    // No base given (a pipeline step without `base`): read the remote's HEAD branch.
    let remote_head = args.base.is_none().then(|| {
        let repo = git::checkout_root(&args.repo).unwrap_or_else(|| args.repo.clone());
        git::default_base(&repo, &args.remote)
    });
    let inputs = RevertInputs {
        base: args.base.as_deref(),
        remote_head,
        failed_at: args.failed_at,
        max_age: args.max_age.value,
        max_age_text: &args.max_age.text,
    };
    let plan = RevertPlan::resolve(l, inputs, ctx.now());
    let rb = match plan.rollback_target() {
        Ok(rb) => rb,
        Err(s) => return vec![*s],
    };
    let (repo, rel) = match git::locate(&args.repo, &l.path) {
        Ok(x) => x,
        Err(e) => return vec![StepReport::error("revert", &plan.target, &e)],
    };
    match git::last_change(&repo, &rel) {
        Ok(Some((sha, msg))) => {
            let heads = git::merged_head_messages(&repo, &sha);
            if let Some(s) = rv::revert_of_a_revert(&plan.target, &rel, &sha, &msg, &heads) {
                return vec![s];
            }
        }
        Ok(None) => {}
        Err(e) => return vec![StepReport::error("revert", &plan.target, &e.context("reading the bundle's history"))],
    }
    let rendered = git::rendered_on_branch(&repo, &rel, sources, &args.remote, &plan.base);
    if let Some(s) = rv::moved_on(&plan.target, &l.digest, &plan.base, &rendered) {
        return vec![s];
    }
    let mut steps = Vec::new();
    let Some((prev, verify_summary)) = verified_rollback_target(ctx, l, rb, &plan.target, &mut steps).await else {
        return steps;
    };
    let restore = Restore { repo, rel, prev, rollback: rb.bundle.clone(), verify_summary };
    steps.push(open_revert(ctx, l, args, &plan, &restore, evidence).await);
    steps
}

/// The rollback target, loaded, equal to the recorded release and verified
/// against the store, with the verify summary; `None` after pushing why not.
async fn verified_rollback_target(
    ctx: &Ctx,
    l: &Loaded,
    rb: &Rollback,
    target: &str,
    steps: &mut Vec<StepReport>,
) -> Option<(Loaded, String)> {
    // The judgment lint and canary make of the target, then its bytes.
    let loaded = bundle_files::load_named_bundle(l, &rb.bundle);
    let status = bundle_files::status_of(rb, &loaded);
    let problem = crate::checks::rollback::judge(l, &status).into_iter().next();
    let prev = match rv::usable_target(target, &rb.bundle, loaded, problem) {
        Ok(p) => p,
        Err(s) => {
            steps.push(*s);
            return None;
        }
    };
    let verify = super::verify::verify_loaded(ctx, &prev, &VerifyOptions::quiet(), &Overrides::default(), None).await;
    let (verify, verified) = rv::rollback_verified(target, &rb.bundle, &prev.bundle.metadata.version, verify);
    steps.push(verify);
    match verified {
        Ok(summary) => Some((prev, summary)),
        Err(s) => {
            steps.push(s);
            None
        }
    }
}

/// What a revert restores: the verified previous bundle at the bundle's path.
struct Restore {
    repo: git::Repository,
    rel: PathBuf,
    prev: Loaded,
    rollback: String,
    verify_summary: String,
}

/// Commit the previous bundle on the revert branch, push it, and open its
/// PR (or find the one already open): one step, whatever happens.
async fn open_revert(
    ctx: &Ctx,
    l: &Loaded,
    args: &RevertOptions,
    plan: &RevertPlan,
    restore: &Restore,
    evidence: Option<&Report>,
) -> StepReport {
    let Restore { repo, rel, prev, rollback, verify_summary } = restore;
    let target = plan.target.as_str();
    let branch = text::branch_name(l, rel, &prev.digest);
    let message = text::commit_message(l, prev, rollback, rel);
    let git_result = git::commit_revert(repo, rel, &prev.text, &branch, &message)
        .and_then(|oid| Ok((oid.to_string(), git::push_new_branch(repo, &args.remote, &branch)?)));
    let (commit, pushed) = match git_result {
        Ok(x) => x,
        Err(e) => return StepReport::error("revert", target, &e.context(format!("creating and pushing {branch}"))),
    };
    let existed = match &pushed {
        git::PushOutcome::AlreadyExists(head) => {
            // Our own commit needs no second read.
            let restores = if *head == commit {
                Ok(true)
            } else {
                git::restores(repo, &args.remote, &branch, head, rel, &prev.digest)
            };
            if let Some(s) = rv::foreign_branch(target, &branch, head, rel, &prev.digest, restores) {
                return s;
            }
            true
        }
        git::PushOutcome::Created => false,
    };
    let pushed = Pushed { branch: &branch, commit: &commit, existed, base: &plan.base, rollback };
    let gh = match ctx.github().await {
        Ok(g) => g,
        Err(e) => return StepReport::error("revert", target, &anyhow::Error::new(e)),
    };
    let (Some(gh), Some((owner, name))) =
        (gh, git::github_repo(repo, &args.remote, ctx.env.github_repository.as_deref()))
    else {
        return rv::revert_step(target, &pushed, PullState::NoGitHub);
    };
    let title = text::pr_title(&l.bundle.metadata.name, &l.bundle.metadata.version, &prev.bundle.metadata.version);
    let body = text::pr_body(l, prev, rel, &branch, evidence, verify_summary);
    let pr = NewPull { title: &title, head: &branch, base: &plan.base, body: &body };
    match gh.revert_pull(&owner, &name, existed, &pr).await {
        Ok(state) => rv::revert_step(target, &pushed, state),
        Err(e) => StepReport::error("revert", target, &e),
    }
}
