//! `watch`: after merge, judge the real rollout, not the green
//! signals; on failure with `--revert`, hand over to [`super::revert`].
//!
//! Verdict policy (docs/watch.md):
//! - Argo sync of the merge commit and rollout truth are always required. A
//!   required check that could not decide is INCONCLUSIVE (no --revision), one
//!   that could not reach the cluster is ERROR.
//! - Identity and downtime need `--service-url`; without it they are NOT RUN
//!   and the verdict rests on Argo + rollout truth, which are themselves
//!   read from the pods. With a URL they are required: an unreachable identity
//!   endpoint is INCONCLUSIVE, a failed probe is BG503.
//! - Canary gates run only when the bundle declares a plan and the rollout
//!   completed (analysing a rollout that never happened proves nothing).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;

use crate::adapters::git;
use crate::adapters::model::{self, Prober};
use crate::adapters::poll::{self, Clock};
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::watch::argo::AppSource;
use crate::checks::watch::rollout::IdentitySample;
use crate::checks::watch::stability::RolloutWatch;
use crate::checks::watch::steps::{self, ArgoOutcome, ArgoWatch, WatchPlan};
use crate::diag::Overrides;
use crate::options::{CanaryOptions, RevertOptions, WatchOptions};
use crate::report::{Report, StepReport};

/// Watch one loaded bundle's release: Argo CD sync, the rollout, identity,
/// downtime, the canary gates; a revert PR on a FAIL when asked.
pub fn run(ctx: &Ctx, l: &Loaded, args: &WatchOptions) -> Result<Vec<StepReport>> {
    ctx.try_block_on(watch_loaded(ctx, l, args)).map(|r| r.steps)
}

/// What the watch's steps name: the bundle with its version and digest.
pub(crate) fn target(l: &Loaded) -> String {
    WatchPlan::resolve(l, None).target
}

/// Wait for the Application to report a successful sync of this release
/// or another decision (`ArgoWatch` decides and writes up).
async fn wait_for_argo(
    l: &Loaded,
    args: &WatchOptions,
    client: &kube::Client,
    server: &str,
    clock: Clock,
) -> (StepReport, ArgoOutcome, Vec<AppSource>) {
    let rev = args.revision.as_deref().filter(|r| !r.trim().is_empty());
    let mut w = ArgoWatch::new(rev, rev.and_then(|r| git::commit_time(&l.dir(), r)), &l.digest);
    poll::application(client, (&args.app_namespace, &args.app), l, rev, &mut w, clock).await;
    let app = format!("{}/{}", args.app_namespace, args.app);
    w.finish(&format!("{app} on {server}"), &app, clock.at(), &args.timeout.to_string())
}

/// Follow the rollout through the stability window (`RolloutWatch`
/// decides, `steps::rollout_step` writes up). Returns the step, whether the
/// rollout completed, and the identity answers taken over the window.
async fn rollout_step(
    l: &Loaded,
    plan: &WatchPlan,
    args: &WatchOptions,
    client: &kube::Client,
    clock: Clock,
    identity: Option<(reqwest::Client, String)>,
) -> (StepReport, bool, Vec<IdentitySample>) {
    let watch = RolloutWatch::new(plan.expected.clone(), plan.window.as_secs_f64());
    let f = poll::rollout(client, l, watch, plan.window, clock, identity).await;
    let timeout = args.timeout.to_string();
    let (step, complete) =
        steps::rollout_step(&plan.target, f.watch.finish(), f.last_err.as_deref(), plan.window, &timeout, clock.at());
    (step, complete, f.identity)
}

async fn watch_loaded(ctx: &Ctx, l: &Loaded, args: &WatchOptions) -> Result<Report> {
    let (timeout, probe_every) = (args.timeout.value, args.probe_interval.value);
    let poll = steps::poll_interval(ctx.env.watch_poll.as_deref()).map_err(anyhow::Error::msg)?;
    let plan = WatchPlan::resolve(l, args.stable_for);
    let started = Instant::now();
    let clock = Clock { every: poll, started, deadline: started + timeout };
    let mut r = Report::new("watch");
    let target = plan.target.clone();

    let (client, server) = match ctx.kube().await {
        Ok(c) => c,
        Err(e) => {
            for s in steps::unreachable_steps(&args.app, &target, &e) {
                r.push(s);
            }
            return Ok(r);
        }
    };

    let prober = match (&args.service_url, &l.bundle.spec.serving.health_path) {
        (Some(base), Some(path)) => Some(Prober::start(ctx.http()?.clone(), model::join_url(base, path), probe_every)),
        _ => None,
    };
    let identity_url = match (&args.service_url, &plan.identity) {
        (Some(base), Some(id)) => Some(model::join_url(base, &id.path)),
        _ => None,
    };

    // ---- 1. Argo CD deployed this release ----
    let (argo, argo_outcome, sources) = wait_for_argo(l, args, &client, &server, clock).await;
    r.push(argo);

    // ---- 2. rollout truth, held for the stability window ----
    let mut rollout_complete = false;
    let mut identity_samples = Vec::new();
    match &argo_outcome {
        ArgoOutcome::Deployed => {
            let identity = match &identity_url {
                Some(url) => Some((ctx.http()?.clone(), url.clone())),
                None => None,
            };
            let (step, complete, samples) = rollout_step(l, &plan, args, &client, clock, identity).await;
            rollout_complete = complete;
            identity_samples = samples;
            r.push(step);
        }
        ArgoOutcome::Superseded(why) => {
            // Nothing of it is this release's failure; nothing is reverted.
            if let Some(p) = prober {
                let _ = p.finish().await;
            }
            for s in steps::superseded_steps(&target, why, l.bundle.spec.canary.is_some()) {
                r.push(s);
            }
            return Ok(r);
        }
        ArgoOutcome::NotDeployed => r.push(steps::rollout_not_deployed(&target)),
    }

    // ---- 3. downtime measured while waiting ----
    let down = match prober {
        Some(p) => {
            let url = p.url.clone();
            let (samples, end) = p.finish().await;
            steps::downtime_step(&target, &url, &samples, end)
        }
        None => steps::downtime_not_measured(&target, args.service_url.is_some()),
    };

    // ---- 4. identity: what the service says it serves, over the window ----
    let id = match (&plan.identity, &identity_url) {
        (Some(id), Some(url)) => {
            let over_window = identity_samples.iter().any(|s| s.answer.is_ok());
            if !over_window {
                identity_samples.extend(match ctx.http() {
                    Ok(http) => model::ask_identity(http, url, started).await,
                    Err(e) => {
                        vec![IdentitySample { at_s: started.elapsed().as_secs_f64(), answer: Err(format!("{e:#}")) }]
                    }
                });
            }
            steps::identity_step(&target, id, url, &identity_samples, over_window)
        }
        _ => steps::identity_not_asked(&target, args.service_url.is_some()),
    };
    r.push(id);
    r.push(down);

    // ---- 5. canary gates ----
    if let Some(c) = &l.bundle.spec.canary {
        if rollout_complete {
            let cargs = CanaryOptions {
                // Blank means none: `prometheus_url()` filters it.
                prometheus: args.prometheus.clone(),
                endpoint: args.service_url.clone(),
                ..Default::default()
            };
            // The summary names each step, where it was found and its verdict.
            r.push(super::canary::analyze_steps(ctx, l, &cargs, &Overrides::default()).await);
        } else {
            r.push(steps::canary_not_run(&target, &c.steps));
        }
    }

    // ---- 6. revert on failure ----
    if steps::revert_wanted(args.revert, &r) {
        let repo = git::checkout_root(&l.dir()).unwrap_or_else(|| PathBuf::from("."));
        // No base: the remote's HEAD branch, else `main`.
        let rargs = RevertOptions { repo, base: None, ..Default::default() };
        let evidence = r.clone();
        for s in super::revert::revert_steps(ctx, l, &rargs, Some(&evidence), &sources).await {
            r.push(s);
        }
    }
    Ok(r)
}
