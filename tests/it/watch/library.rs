//! `watch` and `revert` called as library functions with a [`Ctx`] whose
//! Kubernetes client is injected: `kube::Client::new` over the Kubernetes
//! stand-in as an in-process `tower` service (`support::kube`, the same one
//! the binary tests reach over HTTP), the environment given as a typed
//! snapshot and, for revert, a fixed clock. No kubeconfig, no process
//! environment, no binary.

use std::sync::Arc;

use bundlegate::adapters::env::{EnvSnapshot, Secret};
use bundlegate::app::ctx::Ctx;
use bundlegate::app::{self, revert, watch};
use bundlegate::options::{HumanDuration, RevertOptions, WatchOptions};
use bundlegate::report::{Report, Verdict};
use chrono::{TimeZone, Utc};
use serde_json::Value;

use crate::support::kube::{Frame, StandIn};
use crate::support::step;
use crate::watch::{
    evicted, findings, finished_with, green_deployment, merged_frames, objects, pod, pulls, synced, GitRemote, PodSpec,
    Workspace, BRANCH, NAME, NEW_POD, OLD, OLD_POD, TOKEN, V1_URI, V2_URI,
};

/// A context over the stand-in: a short poll, nothing else from the environment.
fn ctx_over(frames: Vec<Frame>, env: EnvSnapshot) -> (Ctx, Arc<StandIn>) {
    let ctx = Ctx::new(EnvSnapshot { watch_poll: Some("50ms".into()), ..env });
    let standin = StandIn::new(frames);
    let client = {
        let _in_runtime = ctx.runtime().unwrap().enter();
        standin.client()
    };
    (ctx.with_kube(client, "in-process stand-in"), standin)
}

fn options(revision: &str, timeout: &str) -> WatchOptions {
    WatchOptions {
        revision: Some(revision.into()),
        timeout: HumanDuration::parse(timeout).unwrap(),
        stable_for: Some(std::time::Duration::from_millis(500)),
        ..WatchOptions::new(NAME)
    }
}

fn json_of(r: &Report) -> Value {
    serde_json::to_value(r).unwrap()
}

#[test]
fn lib_watch_evicted_old_pod_is_history_and_passes() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: finished_with(&d, V2_URI, vec![evicted(OLD_POD, OLD, V1_URI)]),
    }];
    let (ctx, standin) = ctx_over(frames, EnvSnapshot::default());
    let r = app::on_bundles("watch", &[&ws.path().join(crate::watch::BUNDLE)], |l| {
        watch::run(&ctx, l, &options(&ws.sha, "5s"))
    })
    .unwrap();
    let v = json_of(&r);
    assert_eq!(r.verdict, Verdict::Pass, "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "pass", "{v:#}");
    assert!(findings(&v, "rollout", "BG501").is_empty(), "{v:#}");
    let notes = findings(&v, "rollout", "BG507");
    assert!(notes.contains(OLD_POD) && notes.contains("Failed"), "the evicted pod is reported as history: {notes}");
    standin.assert_read_only();
}

#[test]
fn lib_watch_crashloop_of_the_new_release_fails_bg501() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let crash = PodSpec {
        ready: false,
        restarts: 5,
        waiting: Some(("CrashLoopBackOff", "back-off 2m40s")),
        ..PodSpec::ready(NEW_POD, &d, V2_URI)
    };
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(&d, green_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), pod(crash)], vec![]),
    }];
    let (ctx, standin) = ctx_over(frames, EnvSnapshot::default());
    let r = app::on_bundles("watch", &[&ws.path().join(crate::watch::BUNDLE)], |l| {
        watch::run(&ctx, l, &options(&ws.sha, "1s"))
    })
    .unwrap();
    let v = json_of(&r);
    assert_eq!(r.verdict, Verdict::Fail, "{v:#}");
    assert_eq!(step(&v, "argo")["verdict"], "pass", "{v:#}");
    assert!(findings(&v, "rollout", "BG501").contains("CrashLoopBackOff"), "{v:#}");
    standin.assert_read_only();
}

#[test]
fn lib_watch_unreachable_cluster_is_an_error_never_a_pass() {
    let ws = Workspace::new();
    let ctx = Ctx::new(EnvSnapshot { watch_poll: Some("50ms".into()), ..Default::default() });
    // Every request fails before an answer, as when the API server is down.
    let refused = tower::service_fn(|_req: http::Request<kube::client::Body>| async {
        Err::<http::Response<kube::client::Body>, _>(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ))
    });
    let client = {
        let _in_runtime = ctx.runtime().unwrap().enter();
        kube::Client::new(refused, "ai-lab")
    };
    let ctx = ctx.with_kube(client, "unreachable");
    let r = app::on_bundles("watch", &[&ws.path().join(crate::watch::BUNDLE)], |l| {
        watch::run(&ctx, l, &options(&ws.sha, "300ms"))
    })
    .unwrap();
    let v = json_of(&r);
    assert_ne!(r.verdict, Verdict::Pass, "{v:#}");
    assert!(matches!(r.verdict, Verdict::Error | Verdict::Inconclusive), "{v:#}");
    assert_eq!(step(&v, "argo")["verdict"], "error", "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains("connection refused"), "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "not-run", "{v:#}");
}

#[test]
fn lib_revert_age_is_judged_by_the_context_clock() {
    let ws = Workspace::new();
    let failed_at = Utc.with_ymd_and_hms(2026, 1, 1, 10, 0, 0).unwrap();
    let opts = RevertOptions {
        repo: ws.path().to_path_buf(),
        failed_at: Some(failed_at),
        max_age: HumanDuration::parse("1h").unwrap(),
        ..Default::default()
    };
    let bundle = ws.path().join(crate::watch::BUNDLE);
    let at = |now| Ctx::new(EnvSnapshot::default()).with_clock(move || now);
    // Two hours later by the injected clock: history, not an incident.
    let r = app::on_bundles("revert", &[&bundle], |l| {
        revert::run(&at(failed_at + chrono::Duration::hours(2)), l, &opts, None)
    })
    .unwrap();
    let v = json_of(&r);
    assert_eq!(step(&v, "revert")["verdict"], "not-run", "{v:#}");
    assert_eq!(step(&v, "revert")["data"]["ignored"], "older-than-max-age", "{v:#}");
    // Ten minutes later: acted on (whatever it then finds), not ignored.
    let r = app::on_bundles("revert", &[&bundle], |l| {
        revert::run(&at(failed_at + chrono::Duration::minutes(10)), l, &opts, None)
    })
    .unwrap();
    let v = json_of(&r);
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["data"]["ignored"].is_null()), "{v:#}");
}

#[test]
fn lib_watch_with_revert_opens_one_pr_through_the_injected_clients() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    let (sha, frames) = merged_frames(&w, |d, src| {
        let crash = PodSpec {
            ready: false,
            restarts: 4,
            waiting: Some(("CrashLoopBackOff", "back-off 2m40s")),
            ..PodSpec::ready(NEW_POD, d, src)
        };
        objects(
            d,
            green_deployment(),
            vec![pod(PodSpec::ready(OLD_POD, OLD, "file:../../store/llm-scratch/v1/")), pod(crash)],
            vec![],
        )
    });
    // GitHub from the snapshot, built on first use by the context.
    let env = EnvSnapshot {
        github_token: Some(Secret(TOKEN.into())),
        github_api_url: Some(gh.url()),
        github_repository: Some("o/r".into()),
        ..Default::default()
    };
    let (ctx, standin) = ctx_over(frames, env);
    let opts = WatchOptions { revert: true, ..options(&sha, "1s") };
    let r =
        app::on_bundles("watch", &[&w.join("llm-scratch/v2/release.yaml")], |l| watch::run(&ctx, l, &opts)).unwrap();
    let v = json_of(&r);
    assert_eq!(r.verdict, Verdict::Fail, "{v:#}");
    assert_eq!(step(&v, "revert")["verdict"], "pass", "{v:#}");
    let prs = gh.pulls();
    assert_eq!(prs.len(), 1);
    assert!(prs[0]["body"].as_str().unwrap().contains("CrashLoopBackOff"), "the PR carries this run's evidence");
    assert!(g.remote_branch(BRANCH).is_some());
    standin.assert_read_only();
    gh.assert_no_violations();
}
