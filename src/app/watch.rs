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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde_json::json;

use crate::adapters::env::EnvSnapshot;
use crate::adapters::kube as io;
use crate::adapters::{git, model};
use crate::app::ctx::Ctx;
use crate::bundle::{Loaded, ServingFormat};
use crate::checks::watch::argo::{self, AppSource, ArgoState, Lineage};
use crate::checks::watch::rollout::{self as rc, Expected, IdentityExpectation, IdentitySample, ProbeSample};
use crate::checks::watch::stability::{self, RolloutWatch};
use crate::diag::Overrides;
use crate::options::{CanaryOptions, RevertOptions, WatchOptions};
use crate::report::{Report, StepReport, Table, Verdict};

/// How often the cluster is read. Polling (plain GETs) rather than watches
/// keeps the tool's access read-only and simple to audit; 2 s is well below
/// the seconds a pod takes to schedule. Tests shorten it. Zero is refused
/// (it polled the API in a tight loop), as is anything that is not a
/// duration of at most 7 days.
fn poll_interval(env: &EnvSnapshot) -> Result<Duration> {
    let Some(v) = &env.watch_poll else { return Ok(Duration::from_secs(2)) };
    match crate::util::try_duration(v) {
        Ok(d) if d.is_zero() => anyhow::bail!("BUNDLEGATE_WATCH_POLL=`{v}`: the poll interval must be more than 0 (zero reads the cluster in a tight loop); e.g. 2s"),
        Ok(d) => Ok(d),
        Err(why) => anyhow::bail!("BUNDLEGATE_WATCH_POLL: {why}"),
    }
}

pub(crate) fn expected(l: &Loaded) -> Expected {
    Expected {
        digest: l.digest.clone(),
        storage_uri: l.bundle.spec.model.storage_uri.clone(),
        kserve: l.bundle.spec.serving.format != ServingFormat::Deployment,
        replicas: l.bundle.spec.serving.replicas,
    }
}

/// Watch one loaded bundle's release: Argo CD sync, the rollout, identity,
/// downtime, the canary gates; a revert PR on a FAIL when asked.
pub fn run(ctx: &Ctx, l: &Loaded, args: &WatchOptions) -> Result<Vec<StepReport>> {
    ctx.try_block_on(watch_loaded(ctx, l, args)).map(|r| r.steps)
}

/// What the watch's steps name: the bundle with its version and digest.
pub(crate) fn target(l: &Loaded) -> String {
    format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest)
}

struct Prober {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(Vec<ProbeSample>, f64)>,
    url: String,
}

/// Probe the health URL every `every` until stopped, like the in-cluster
/// `curl -m 2` loop that once measured a rollout's downtime: a 2xx within
/// 2 s is ok, anything else a failure.
fn start_prober(http: reqwest::Client, url: String, every: Duration) -> Prober {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let u = url.clone();
    let task = tokio::spawn(async move {
        let start = Instant::now();
        let mut samples = Vec::new();
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !flag.load(Ordering::SeqCst) {
            tick.tick().await;
            let ok = model::probe(&http, &u, Duration::from_secs(2)).await;
            samples.push(ProbeSample { at_s: start.elapsed().as_secs_f64(), ok });
        }
        (samples, start.elapsed().as_secs_f64())
    });
    Prober { stop, task, url }
}

async fn sleep_until_next(poll: Duration, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::sleep(poll.min(left)).await;
}

/// What the Argo CD wait concluded.
enum ArgoOutcome {
    /// The release is deployed: judge the rollout.
    Deployed,
    /// A later commit renders another release: nothing of this release to
    /// judge (the reason names the commit and what it renders).
    Superseded(String),
    /// Not deployed (FAIL, ERROR or INCONCLUSIVE already in the step).
    NotDeployed,
}

/// Poll the Application until it reports a successful sync of this release
/// (the merge commit or a later commit with the bundle unchanged; a denied
/// read stops at once: RBAC does not heal by waiting), then judge it.
/// health.status is never used: it reads Healthy while old pods serve.
async fn wait_for_argo(
    l: &Loaded,
    args: &WatchOptions,
    client: &kube::Client,
    server: &str,
    poll: Duration,
    started: Instant,
    deadline: Instant,
) -> (StepReport, ArgoOutcome, Vec<AppSource>) {
    let rev = args.revision.as_deref().filter(|r| !r.trim().is_empty());
    let merged_at = rev.and_then(|r| git::commit_time(&l.dir(), r));
    let mut last_app = None;
    let mut lineage = Lineage::new();
    let mut state = ArgoState::Waiting { why: "nothing read yet".into(), unknowable: false };
    let mut last_err: Option<String>;
    let mut ever_read = false;
    loop {
        match io::application(client, &args.app_namespace, &args.app).await {
            Ok(a) => {
                ever_read = true;
                last_err = None;
                if let (Some(app), Some(merge)) = (&a, rev) {
                    // Only revisions not yet placed go to git.
                    let new: Vec<String> = app.revisions().into_iter().filter(|r| !lineage.contains_key(r)).collect();
                    if !new.is_empty() {
                        let h = git::history(&l.path, merge, &new, &app.sources);
                        lineage.extend(argo::lineage_from(&h, &l.digest));
                    }
                }
                state = argo::argo_state(a.as_ref(), rev, &lineage, merged_at);
                last_app = a;
            }
            // A missing RBAC grant does not heal by waiting.
            Err(e) if io::is_denied(&e) => {
                last_err = Some(format!("{e:#} (the watcher needs get/list on Applications, Deployments, ReplicaSets, Pods, Events and EndpointSlices, and on InferenceServices and Knative Services/Configurations/Revisions where installed)"));
                break;
            }
            Err(e) => last_err = Some(format!("{e:#}")),
        }
        if !matches!(state, ArgoState::Waiting { .. }) || Instant::now() >= deadline {
            break;
        }
        sleep_until_next(poll, deadline).await;
    }
    let app_target = format!("{}/{} on {server}", args.app_namespace, args.app);
    let mut argo = StepReport::new("argo", &app_target);
    argo.data = json!({"application": last_app, "revision": rev, "mergedAt": merged_at, "lineage": lineage, "healthIgnored": true});
    let app = format!("{}/{}", args.app_namespace, args.app);
    argo.verdict = argo::verdict(&state, rev.is_some());
    let outcome = match (&last_app, &state) {
        (Some(a), ArgoState::Synced { via }) => {
            match rev {
                Some(_) => {
                    argo.summary = format!(
                        "{via} (operation Succeeded, finished {}); health.status was not used",
                        a.finished_at.as_deref().unwrap_or("-")
                    );
                    if merged_at.is_none() {
                        argo.summary.push_str(
                            "; merge time unknown (commit not in the local repository), finishedAt not compared",
                        );
                    }
                    ArgoOutcome::Deployed
                }
                None => {
                    argo.summary = format!("Synced and Succeeded, but no --revision (or GITHUB_SHA): which commit is synced is unproven ({})", a.describe());
                    ArgoOutcome::NotDeployed
                }
            }
        }
        (Some(_), ArgoState::Superseded { by, detail }) => {
            argo.summary = format!("superseded by {by}: {detail}");
            argo.diagnostics.push(argo::release_superseded(rev.unwrap_or("-"), by, detail));
            ArgoOutcome::Superseded(format!(
                "superseded by {by} ({detail}): the cluster is meant to run that release, which its own watch judges"
            ))
        }
        _ if !ever_read => {
            argo = StepReport::error(
                "argo",
                &app_target,
                &anyhow!("{}", last_err.clone().unwrap_or_else(|| "no answer".into())),
            );
            ArgoOutcome::NotDeployed
        }
        (_, ArgoState::Waiting { why, unknowable: true }) => {
            argo.diagnostics.push(argo::argo_revision_unknown(rev.unwrap_or("-"), why, last_app.as_ref()));
            argo.summary = format!("undecided after {:.0}s: {why}", started.elapsed().as_secs_f64());
            ArgoOutcome::NotDeployed
        }
        (_, state) => {
            let why = match state {
                ArgoState::Waiting { why, .. } => why.clone(),
                _ => "the Application was not found".into(),
            };
            argo.diagnostics.push(argo::argo_not_synced(
                rev,
                &args.timeout.to_string(),
                &why,
                &app,
                last_app.as_ref(),
                last_err.as_deref(),
            ));
            argo.summary = format!("not synced after {:.0}s", started.elapsed().as_secs_f64());
            ArgoOutcome::NotDeployed
        }
    };
    let sources = last_app.map(|a| a.sources).unwrap_or_default();
    (argo, outcome, sources)
}

/// The stability window for this bundle: `--stable-for`, else derived from
/// its readiness probe.
fn window_of(l: &Loaded, args: &WatchOptions) -> Duration {
    args.stable_for.unwrap_or_else(|| {
        let r = l.bundle.spec.serving.probes.readiness.as_ref();
        Duration::from_secs(stability::default_window_s(r.map(|p| p.period_seconds), r.map(|p| p.failure_threshold)))
    })
}

/// Asks the identity endpoint at most `max` times, `every` apart, until
/// stopped: the answers the identity step judges over the stability window.
struct IdentitySampler {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<IdentitySample>>,
}

/// At most this many identity requests per window: enough to see a Service
/// that alternates between two releases, bounded for a long window.
const IDENTITY_SAMPLES: u32 = 8;

fn start_identity_sampler(http: reqwest::Client, url: String, window: Duration, started: Instant) -> IdentitySampler {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    // Spread over the window, at least a second apart.
    let every = (window / IDENTITY_SAMPLES).max(Duration::from_secs(1));
    let task = tokio::spawn(async move {
        let mut samples = Vec::new();
        while !flag.load(Ordering::SeqCst) && samples.len() < IDENTITY_SAMPLES as usize {
            let answer = model::get_json(&http, &url, Duration::from_secs(10)).await.map_err(|e| format!("{e:#}"));
            samples.push(IdentitySample { at_s: started.elapsed().as_secs_f64(), answer });
            let until = Instant::now() + every;
            while Instant::now() < until && !flag.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(50).min(every)).await;
            }
        }
        samples
    });
    IdentitySampler { stop, task }
}

/// Where the identity endpoint is, when the bundle declares one and a
/// service URL was given.
fn identity_url(l: &Loaded, service_url: Option<&str>) -> Option<String> {
    Some(model::join_url(service_url?, &l.bundle.spec.serving.identity.as_ref()?.path))
}

/// Read the release's workload until the rollout settles and holds for the
/// stability window (or gives up, or the deadline passes with no window
/// started), then report which pods run which release. The decision is
/// `RolloutWatch`'s; this only reads and sleeps. While the window runs, the
/// identity endpoint is asked (`identity`: the client and URL). Returns the
/// step, whether the rollout completed, and the identity answers taken.
#[allow(clippy::too_many_arguments)]
async fn rollout_step(
    l: &Loaded,
    args: &WatchOptions,
    client: &kube::Client,
    target: &str,
    poll: Duration,
    started: Instant,
    deadline: Instant,
    identity: Option<(reqwest::Client, String)>,
) -> (StepReport, bool, Vec<IdentitySample>) {
    let exp = expected(l);
    let window = window_of(l, args);
    let mut watch = RolloutWatch::new(exp.clone(), window.as_secs_f64());
    let mut last_err: Option<anyhow::Error>;
    let mut closing_read = false;
    let mut sampler: Option<IdentitySampler> = None;
    loop {
        let at = started.elapsed().as_secs_f64();
        match io::service_state(client, &l.bundle.metadata.namespace, &l.bundle.metadata.name, exp.kserve).await {
            Ok(st) => {
                last_err = None;
                if watch.observe(at, st) {
                    break;
                }
            }
            Err(e) => last_err = Some(e),
        }
        if sampler.is_none() && watch.window_end().is_some() {
            if let Some((http, url)) = &identity {
                sampler = Some(start_identity_sampler(http.clone(), url.clone(), window, started));
            }
        }
        // A window that started before the deadline runs to its end.
        let until = match watch.window_end() {
            Some(end) => deadline.max(started + Duration::from_secs_f64(end.max(0.0))),
            None => deadline,
        };
        if Instant::now() >= until {
            // The window's last read is taken at its end, not before it.
            if watch.window_end().is_some() && !closing_read {
                closing_read = true;
                continue;
            }
            break;
        }
        sleep_until_next(poll, until).await;
    }
    let samples = match sampler {
        Some(s) => {
            s.stop.store(true, Ordering::SeqCst);
            s.task.await.unwrap_or_default()
        }
        None => Vec::new(),
    };
    let (step, complete) = match (watch.finish(), last_err) {
        (Some(v), _) => {
            let o = v.outcome;
            let mut s = StepReport::new("rollout", target);
            s.summary = o.summary;
            if let Some(h) = v.held_s {
                s.summary.push_str(&format!("; held {h:.0}s of a {:.0}s stability window", window.as_secs_f64()));
            }
            s.diagnostics = o.diagnostics;
            if !v.complete {
                let why = if v.gave_up {
                    "the watch stopped: the Deployment gave up, or a pod of the release restarted or ended".to_string()
                } else {
                    format!("still incomplete at the {} timeout", args.timeout)
                };
                if let Some(d) = s.diagnostics.iter_mut().find(|d| d.severity == crate::diag::Severity::Error) {
                    d.evidence.push(format!("{why}, after {:.0}s", started.elapsed().as_secs_f64()));
                }
            }
            s.verdict = rc::verdict_of(&s.diagnostics);
            s.tables.push(Table {
                title: "pods by release".into(),
                columns: rc::POD_COLUMNS.iter().map(|c| c.to_string()).collect(),
                rows: o.rows,
            });
            s.data = o.data;
            (s, v.complete)
        }
        (None, Some(e)) => (StepReport::error("rollout", target, &e), false),
        (None, None) => (StepReport::error("rollout", target, &anyhow!("no state read before the timeout")), false),
    };
    (step, complete, samples)
}

async fn watch_loaded(ctx: &Ctx, l: &Loaded, args: &WatchOptions) -> Result<Report> {
    let (timeout, probe_every) = (args.timeout.value, args.probe_interval.value);
    let poll = poll_interval(&ctx.env)?;
    let started = Instant::now();
    let deadline = started + timeout;
    let mut r = Report::new("watch");
    let target = target(l);

    let (client, server) = match ctx.kube().await {
        Ok(c) => c,
        Err(e) => {
            r.push(StepReport::error("argo", &args.app, &e));
            r.push(StepReport::not_run("rollout", &target, "the cluster could not be reached"));
            return Ok(r);
        }
    };

    let prober = match (&args.service_url, &l.bundle.spec.serving.health_path) {
        (Some(base), Some(path)) => Some(start_prober(ctx.http()?.clone(), model::join_url(base, path), probe_every)),
        _ => None,
    };

    // ---- 1. Argo CD deployed this release ----
    let (argo, argo_outcome, sources) = wait_for_argo(l, args, &client, &server, poll, started, deadline).await;
    r.push(argo);

    // ---- 2. rollout truth, held for the stability window ----
    let mut rollout_complete = false;
    let mut identity_samples = Vec::new();
    let superseded = match &argo_outcome {
        ArgoOutcome::Superseded(why) => Some(why.clone()),
        _ => None,
    };
    match argo_outcome {
        ArgoOutcome::Deployed => {
            let identity = match identity_url(l, args.service_url.as_deref()) {
                Some(url) => Some((ctx.http()?.clone(), url)),
                None => None,
            };
            let (step, complete, samples) =
                rollout_step(l, args, &client, &target, poll, started, deadline, identity).await;
            rollout_complete = complete;
            identity_samples = samples;
            r.push(step);
        }
        ArgoOutcome::Superseded(why) => r.push(StepReport::not_run("rollout", &target, why)),
        ArgoOutcome::NotDeployed => r.push(StepReport::not_run(
            "rollout",
            &target,
            "Argo CD did not sync this release, so the cluster cannot be running it",
        )),
    }

    // A superseded release is not what the cluster is meant to run: what
    // its pods, its endpoint or its traffic show is the later release's,
    // judged by that release's own watch. Nothing here fails it or reverts it.
    if let Some(why) = superseded {
        if let Some(p) = prober {
            p.stop.store(true, Ordering::SeqCst);
            let _ = p.task.await;
        }
        r.push(StepReport::not_run("identity", &target, why.clone()));
        r.push(StepReport::not_run("downtime", &target, why.clone()));
        if l.bundle.spec.canary.is_some() {
            r.push(StepReport::not_run("canary", &target, why));
        }
        return Ok(r);
    }

    // ---- 3. downtime measured while waiting ----
    let down = match prober {
        Some(p) => {
            p.stop.store(true, Ordering::SeqCst);
            let (samples, end) = p.task.await.unwrap_or_default();
            downtime_step(&target, &p.url, &samples, end)
        }
        None if args.service_url.is_none() => {
            StepReport::not_run("downtime", &target, "no --service-url: downtime was not measured")
        }
        None => StepReport::not_run("downtime", &target, "the bundle declares no spec.serving.healthPath to probe"),
    };

    // ---- 4. identity: what the service says it serves, over the window ----
    r.push(identity_step(ctx, l, args.service_url.as_deref(), &target, identity_samples, started).await);
    r.push(down);

    // ---- 5. canary gates ----
    if let Some(plan) = &l.bundle.spec.canary {
        if rollout_complete {
            let cargs = CanaryOptions {
                prometheus: args.prometheus.clone().filter(|v| !v.trim().is_empty()),
                endpoint: args.service_url.clone(),
                ..Default::default()
            };
            // The summary names each step, where it was found and its verdict.
            r.push(super::canary::analyze_steps(ctx, l, &cargs, &Overrides::default()).await);
        } else {
            r.push(StepReport::not_run(
                "canary",
                &target,
                format!("traffic steps {:?} not analysed: the rollout did not complete", plan.steps),
            ));
        }
    }

    // ---- 6. revert on failure ----
    if args.revert && r.verdict == Verdict::Fail {
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

fn downtime_step(target: &str, url: &str, samples: &[ProbeSample], end: f64) -> StepReport {
    let mut s = StepReport::new("downtime", target);
    let st = rc::downtime(samples, end);
    s.data = json!({"url": url, "stats": st, "seconds": end});
    if st.ok + st.fail == 0 {
        s.verdict = Verdict::Inconclusive;
        s.summary = format!("no probe of {url} completed: downtime unmeasured");
        return s;
    }
    s.summary =
        format!("RESULT ok={} fail={} over {:.1}s; longest gap {:.1}s ({url})", st.ok, st.fail, end, st.longest_gap_s);
    if let Some(d) = rc::downtime_diagnostic(&st, url) {
        s.diagnostics.push(d);
    }
    s.verdict = s.verdict_from_diagnostics();
    s
}

/// The identity step over the answers taken during the stability window
/// (`samples`); with none (no window ran), the endpoint is asked now, up
/// to three times a second apart (a refused connection right after the
/// last pod swap is common).
async fn identity_step(
    ctx: &Ctx,
    l: &Loaded,
    service_url: Option<&str>,
    target: &str,
    mut samples: Vec<IdentitySample>,
    started: Instant,
) -> StepReport {
    let Some(base) = service_url else {
        return StepReport::not_run("identity", target, "no --service-url: the service's own identity was not asked");
    };
    let Some(id) = &l.bundle.spec.serving.identity else {
        return StepReport::not_run(
            "identity",
            target,
            "the bundle declares no spec.serving.identity endpoint (BG017)",
        );
    };
    let url = model::join_url(base, &id.path);
    let expect: Vec<IdentityExpectation> = id
        .expect
        .iter()
        .map(|e| IdentityExpectation {
            field: e.field.clone(),
            digest_of: e.digest_of.clone(),
            expected: if e.digest_of == "release" {
                Some(l.digest.clone())
            } else {
                l.bundle
                    .spec
                    .model
                    .artifacts
                    .iter()
                    .find(|a| a.path == e.digest_of)
                    .and_then(|a| a.sha256.as_ref())
                    .map(|h| format!("sha256:{h}"))
            },
        })
        .collect();
    let over_window = samples.iter().any(|s| s.answer.is_ok());
    if !over_window {
        let http = match ctx.http() {
            Ok(h) => h,
            Err(e) => return StepReport::error("identity", target, &e),
        };
        for attempt in 0..3 {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            let answer = model::get_json(http, &url, Duration::from_secs(10)).await.map_err(|e| format!("{e:#}"));
            let ok = answer.is_ok();
            samples.push(IdentitySample { at_s: started.elapsed().as_secs_f64(), answer });
            if ok {
                break;
            }
        }
    }
    let judged = rc::identity_over_time(&expect, id.registered_field.as_deref(), &samples);
    let mut s = StepReport::new("identity", target);
    let dist: Vec<serde_json::Value> =
        judged.distribution.iter().map(|(k, n)| json!({"reported": k, "answers": n})).collect();
    s.data = json!({"url": url, "asked": judged.asked, "answered": judged.answered, "overWindow": over_window, "distribution": dist, "response": samples.iter().rev().find_map(|x| x.answer.as_ref().ok())});
    if judged.answered == 0 {
        s.verdict = Verdict::Inconclusive;
        let why = samples.iter().rev().find_map(|x| x.answer.as_ref().err()).cloned().unwrap_or_default();
        s.summary = format!("identity endpoint unanswered, what is served is unknown: {why}");
        return s;
    }
    s.diagnostics = judged.diagnostics.into_iter().map(|d| d.at(l.span("spec.serving.identity"))).collect();
    s.verdict = s.verdict_from_diagnostics();
    let asked = if over_window {
        format!("{} of {} answers over the stability window", judged.answered, judged.asked)
    } else {
        "asked once the watch ended".to_string()
    };
    s.summary = if s.verdict == Verdict::Pass {
        format!("{url} reports this release and registered ({asked})")
    } else {
        format!("{url} does not report this release as registered ({asked})")
    };
    s.tables.push(Table {
        title: url.clone(),
        columns: rc::IDENTITY_COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: judged.rows,
    });
    s
}
