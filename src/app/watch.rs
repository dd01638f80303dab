//! `watch` and `revert` (issue #7): after merge, judge the real rollout, not
//! the green signals; when it failed, open one revert PR to a verified
//! previous release.
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

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde_json::json;

use crate::adapters::github::{GithubClient, PullOutcome};
use crate::adapters::rollout as io;
use crate::bundle::{Loaded, ServingFormat};
use crate::checks::rollout::{self as rc, ArgoState, Expected, IdentityExpectation, ProbeSample};
use crate::options::{defaults, CanaryOptions, RevertOptions, VerifyOptions, WatchOptions};
use crate::diag::{Code, Overrides};
use crate::report::{Diagnostic, Report, StepReport, Table, Verdict};

/// The marker a revert commit and PR carry; a bundle last changed by such a
/// commit is never reverted again (Kargo's "never roll back a rollback").
pub const REVERT_MARKER: &str = "bundlegate-revert-of:";

/// How often the cluster is read. Polling (plain GETs) rather than watches
/// keeps the tool's access read-only and simple to audit; 2 s is well below
/// the seconds a pod takes to schedule. Tests shorten it. Zero is refused
/// (it polled the API in a tight loop), as is anything that is not a
/// duration of at most 7 days.
fn poll_interval() -> Result<Duration> {
    let Ok(v) = std::env::var("BUNDLEGATE_WATCH_POLL") else { return Ok(Duration::from_secs(2)) };
    match crate::util::try_duration(&v) {
        Ok(d) if d.is_zero() => anyhow::bail!("BUNDLEGATE_WATCH_POLL=`{v}`: the poll interval must be more than 0 (zero reads the cluster in a tight loop); e.g. 2s"),
        Ok(d) => Ok(d),
        Err(why) => anyhow::bail!("BUNDLEGATE_WATCH_POLL: {why}"),
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

pub fn expected(l: &Loaded) -> Expected {
    Expected {
        digest: l.digest.clone(),
        storage_uri: l.bundle.spec.model.storage_uri.clone(),
        kserve: l.bundle.spec.serving.format != ServingFormat::Deployment,
        replicas: l.bundle.spec.serving.replicas,
    }
}

pub fn watch(bundle: &Path, args: &WatchOptions) -> Result<Report> {
    let mut r = Report::new("watch");
    let l = match super::load_or_step(bundle, "watch") {
        Ok(l) => l,
        Err(s) => {
            r.push(s);
            return Ok(r);
        }
    };
    runtime()?.block_on(watch_loaded(&l, args))
}

/// `watch` as a pipeline step: the same checks as the command, on an already
/// loaded bundle and the pipeline's runtime.
pub fn watch_steps(rt: &tokio::runtime::Runtime, l: &Loaded, args: &WatchOptions) -> Vec<StepReport> {
    let target = format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest);
    match rt.block_on(watch_loaded(l, args)) {
        Ok(r) => r.steps,
        Err(e) => vec![StepReport::error("watch", &target, &e)],
    }
}

/// `revert` as a pipeline step; `evidence` is what the run found so far.
pub fn revert_in(rt: &tokio::runtime::Runtime, l: &Loaded, args: &RevertOptions, evidence: &Report) -> Vec<StepReport> {
    rt.block_on(revert_steps(l, args, Some(evidence)))
}

struct Prober {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(Vec<ProbeSample>, f64)>,
    url: String,
}

/// Probe the health URL every `every` until stopped, like the in-cluster
/// `curl -m 2` loop that once measured a rollout's downtime: a 2xx within
/// 2 s is ok, anything else a failure.
fn start_prober(url: String, every: Duration) -> Result<Prober> {
    let http = io::http_client(Duration::from_secs(2))?;
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
            let ok = io::probe(&http, &u).await;
            samples.push(ProbeSample { at_s: start.elapsed().as_secs_f64(), ok });
        }
        (samples, start.elapsed().as_secs_f64())
    });
    Ok(Prober { stop, task, url })
}

async fn sleep_until_next(poll: Duration, deadline: Instant) {
    let left = deadline.saturating_duration_since(Instant::now());
    tokio::time::sleep(poll.min(left)).await;
}

async fn watch_loaded(l: &Loaded, args: &WatchOptions) -> Result<Report> {
    let (timeout, probe_every) = (args.timeout.value, args.probe_interval.value);
    let poll = poll_interval()?;
    let started = Instant::now();
    let deadline = started + timeout;
    let mut r = Report::new("watch");
    let target = format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest);

    let (client, server) = match io::client().await {
        Ok(c) => c,
        Err(e) => {
            r.push(StepReport::error("argo", &args.app, &e));
            r.push(StepReport::not_run("rollout", &target, "the cluster could not be reached"));
            return Ok(r);
        }
    };

    let prober = match (&args.service_url, &l.bundle.spec.serving.health_path) {
        (Some(base), Some(path)) => Some(start_prober(io::join_url(base, path), probe_every)?),
        _ => None,
    };

    // ---- 1. Argo CD synced the merge commit ----
    let rev = args.revision.as_deref().filter(|r| !r.trim().is_empty());
    let merged_at = rev.and_then(|r| io::commit_time(&l.dir(), r));
    let mut last_app = None;
    let mut last_wait = String::from("nothing read yet");
    let mut last_err: Option<String>;
    let mut ever_read = false;
    let mut synced = false;
    loop {
        match io::application(&client, &args.app_namespace, &args.app).await {
            Ok(a) => {
                ever_read = true;
                last_err = None;
                match rc::argo_state(a.as_ref(), rev, merged_at) {
                    ArgoState::Synced => synced = true,
                    ArgoState::Waiting(w) => last_wait = w,
                }
                last_app = a;
            }
            // A missing RBAC grant does not heal by waiting.
            Err(e) if is_denied(&e) => {
                last_err = Some(format!("{e:#} (the watcher needs get/list on Applications, Deployments, ReplicaSets, Pods and Events)"));
                break;
            }
            Err(e) => last_err = Some(format!("{e:#}")),
        }
        if synced || Instant::now() >= deadline {
            break;
        }
        sleep_until_next(poll, deadline).await;
    }
    let app_target = format!("{}/{} on {server}", args.app_namespace, args.app);
    let mut argo = StepReport::new("argo", &app_target);
    argo.data = json!({"application": last_app, "revision": rev, "mergedAt": merged_at, "healthIgnored": true});
    if synced {
        let a = last_app.as_ref().expect("synced implies an Application");
        match rev {
            Some(rv) => {
                argo.summary = format!("synced {rv} (operation Succeeded, finished {}); health.status was not used", a.finished_at.as_deref().unwrap_or("-"));
                if merged_at.is_none() {
                    argo.summary.push_str("; merge time unknown (commit not in the local repository), finishedAt not compared");
                }
            }
            None => {
                argo.verdict = Verdict::Inconclusive;
                argo.summary = format!("Synced and Succeeded, but no --revision (or GITHUB_SHA): which commit is synced is unproven ({})", a.describe());
            }
        }
    } else if !ever_read {
        argo = StepReport::error("argo", &app_target, &anyhow!("{}", last_err.clone().unwrap_or_else(|| "no answer".into())));
    } else {
        let mut d = Diagnostic::new(
            Code::ArgoNotSynced,
            format!("Argo CD did not finish a successful sync of {} within {}: {last_wait}", rev.unwrap_or("the target revision"), args.timeout),
        )
        .evidence(match &last_app {
            Some(a) => format!("last seen: {}", a.describe()),
            None => format!("Application {}/{} not found", args.app_namespace, args.app),
        });
        if let Some(e) = &last_err {
            d = d.evidence(format!("last read error: {e}"));
        }
        if last_app.as_ref().and_then(|a| a.health.as_deref()) == Some("Healthy") {
            d = d.help("health.status Healthy is not evidence: it reads Healthy while the previous revision's pods serve");
        }
        argo.diagnostics.push(d);
        argo.verdict = Verdict::Fail;
        argo.summary = format!("not synced after {:.0}s", started.elapsed().as_secs_f64());
    }
    let argo_ok = synced;
    r.push(argo);

    // ---- 2. rollout truth ----
    let exp = expected(l);
    let mut rollout_complete = false;
    if argo_ok {
        let mut last = None;
        let mut last_err: Option<anyhow::Error>;
        loop {
            match io::service_state(&client, &l.bundle.metadata.namespace, &l.bundle.metadata.name).await {
                Ok(st) => {
                    let o = rc::evaluate_rollout(&exp, &st);
                    let stop = o.settled || o.gave_up;
                    last = Some(o);
                    last_err = None;
                    if stop {
                        break;
                    }
                }
                Err(e) => last_err = Some(e),
            }
            if Instant::now() >= deadline {
                break;
            }
            sleep_until_next(poll, deadline).await;
        }
        let step = match (last, last_err) {
            (Some(o), _) => {
                rollout_complete = o.complete;
                let mut s = StepReport::new("rollout", &target);
                s.summary = o.summary;
                s.diagnostics = o.diagnostics;
                if !o.complete {
                    let why = if o.gave_up { "the Deployment gave up".to_string() } else { format!("still incomplete at the {} timeout", args.timeout) };
                    if let Some(d) = s.diagnostics.first_mut() {
                        d.evidence.push(format!("{why}, after {:.0}s", started.elapsed().as_secs_f64()));
                    }
                }
                s.verdict = rc::verdict_of(&s.diagnostics);
                s.tables.push(Table { title: "pods by release".into(), columns: rc::POD_COLUMNS.iter().map(|c| c.to_string()).collect(), rows: o.rows });
                s.data = o.data;
                s
            }
            (None, Some(e)) => StepReport::error("rollout", &target, &e),
            (None, None) => StepReport::error("rollout", &target, &anyhow!("no state read before the timeout")),
        };
        r.push(step);
    } else {
        r.push(StepReport::not_run("rollout", &target, "Argo CD did not sync the merge commit, so the cluster cannot be running it"));
    }

    // ---- 3. downtime measured while waiting ----
    let down = match prober {
        Some(p) => {
            p.stop.store(true, Ordering::SeqCst);
            let (samples, end) = p.task.await.unwrap_or_default();
            downtime_step(&target, &p.url, &samples, end)
        }
        None if args.service_url.is_none() => StepReport::not_run("downtime", &target, "no --service-url: downtime was not measured"),
        None => StepReport::not_run("downtime", &target, "the bundle declares no spec.serving.healthPath to probe"),
    };

    // ---- 4. identity: what the service says it serves ----
    r.push(identity_step(l, args.service_url.as_deref(), &target).await);
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
            r.push(super::canary::analyze_steps(l, &cargs, &Overrides::default()).await);
        } else {
            r.push(StepReport::not_run("canary", &target, format!("traffic steps {:?} not analysed: the rollout did not complete", plan.steps)));
        }
    }

    // ---- 6. revert on failure ----
    if args.revert && r.verdict == Verdict::Fail {
        let dir = l.dir();
        let dir = if dir.as_os_str().is_empty() { PathBuf::from(".") } else { dir };
        let repo = git2::Repository::discover(&dir).ok().and_then(|g| g.workdir().map(Path::to_path_buf)).unwrap_or_else(|| PathBuf::from("."));
        let base = default_base(&repo, defaults::REMOTE);
        let rargs = RevertOptions { repo, base, ..Default::default() };
        let evidence = r.clone();
        for s in revert_steps(l, &rargs, Some(&evidence)).await {
            r.push(s);
        }
    }
    Ok(r)
}

/// The remote's default branch (`refs/remotes/<remote>/HEAD`), else `main`.
pub fn default_base(repo: &Path, remote: &str) -> String {
    git2::Repository::open(repo)
        .ok()
        .and_then(|r| r.find_reference(&format!("refs/remotes/{remote}/HEAD")).ok().and_then(|h| h.symbolic_target().ok().flatten().map(String::from)))
        .and_then(|t| t.rsplit('/').next().map(String::from))
        .unwrap_or_else(|| "main".into())
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
    s.summary = format!("RESULT ok={} fail={} over {:.1}s; longest gap {:.1}s ({url})", st.ok, st.fail, end, st.longest_gap_s);
    if let Some(d) = rc::downtime_diagnostic(&st, url) {
        s.diagnostics.push(d);
    }
    s.verdict = s.verdict_from_diagnostics();
    s
}

async fn identity_step(l: &Loaded, service_url: Option<&str>, target: &str) -> StepReport {
    let Some(base) = service_url else {
        return StepReport::not_run("identity", target, "no --service-url: the service's own identity was not asked");
    };
    let Some(id) = &l.bundle.spec.serving.identity else {
        return StepReport::not_run("identity", target, "the bundle declares no spec.serving.identity endpoint (BG017)");
    };
    let url = io::join_url(base, &id.path);
    let expect: Vec<IdentityExpectation> = id
        .expect
        .iter()
        .map(|e| IdentityExpectation {
            field: e.field.clone(),
            digest_of: e.digest_of.clone(),
            expected: if e.digest_of == "release" {
                Some(l.digest.clone())
            } else {
                l.bundle.spec.model.artifacts.iter().find(|a| a.path == e.digest_of).and_then(|a| a.sha256.as_ref()).map(|h| format!("sha256:{h}"))
            },
        })
        .collect();
    let http = match io::http_client(Duration::from_secs(10)) {
        Ok(h) => h,
        Err(e) => return StepReport::error("identity", target, &e),
    };
    // A refused connection right after the last pod swap is common; three
    // tries a second apart. A wrong answer is final.
    let mut body = Err(anyhow!("not asked"));
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        body = io::get_json(&http, &url).await;
        if body.is_ok() {
            break;
        }
    }
    let mut s = StepReport::new("identity", target);
    match body {
        Ok(b) => {
            let (diags, rows) = rc::check_identity(&expect, id.registered_field.as_deref(), &b);
            s.diagnostics = diags.into_iter().map(|d| d.at(l.span("spec.serving.identity"))).collect();
            s.verdict = s.verdict_from_diagnostics();
            s.summary = if s.verdict == Verdict::Pass { format!("{url} reports this release and registered") } else { format!("{url} does not report this release as registered") };
            s.tables.push(Table { title: url.clone(), columns: rc::IDENTITY_COLUMNS.iter().map(|c| c.to_string()).collect(), rows });
            s.data = json!({"url": url, "response": b});
        }
        Err(e) => {
            s.verdict = Verdict::Inconclusive;
            s.summary = format!("identity endpoint unanswered, what is served is unknown: {e:#}");
            s.data = json!({"url": url});
        }
    }
    s
}

/// The scheduled drift audit's serving piece: do the live pods run this
/// bundle's release from this bundle's storage URI?
pub async fn serving_step(l: &Loaded, client: kube::Client) -> StepReport {
    let exp = expected(l);
    let target = format!("{} ({})", l.display, l.digest);
    let st = match io::service_state(&client, &l.bundle.metadata.namespace, &l.bundle.metadata.name).await {
        Ok(st) => st,
        Err(e) => return StepReport::error("serving", &target, &e),
    };
    let mut s = StepReport::new("serving", &target);
    s.diagnostics = rc::compare_serving(&exp, &st.pods, &st.replica_sets);
    // Terminal pods (an Evicted one kept until pod GC) are not live: a
    // service with only those serves nothing.
    if st.pods.iter().all(|p| rc::standing(p) == rc::PodStanding::Terminal) {
        s.diagnostics.push(Diagnostic::new(
            Code::RolloutIncomplete,
            format!("no pod of {}/{} is running", l.bundle.metadata.namespace, l.bundle.metadata.name),
        ));
    }
    let matching = st.pods.iter().filter(|p| p.digest.as_deref() == Some(l.digest.as_str()) && rc::standing(p) == rc::PodStanding::Serving).count();
    if matching == 0 && !s.diagnostics.iter().any(|d| d.severity == crate::report::Severity::Error) {
        // Old pods gone but none of this release serving is not "serving the
        // bundle" — unless one of its pods is on a node that stopped reporting.
        let unknown = st.pods.iter().any(|p| p.digest.as_deref() == Some(l.digest.as_str()) && rc::standing(p) == rc::PodStanding::Unknown);
        let code = if unknown { Code::RolloutEvidenceIncomplete } else { Code::RolloutIncomplete };
        s.diagnostics.push(Diagnostic::new(code, format!("no ready pod of {}/{} runs this release", l.bundle.metadata.namespace, l.bundle.metadata.name)));
    }
    s.verdict = rc::verdict_of(&s.diagnostics);
    let live = st.pods.iter().filter(|p| rc::standing(p) != rc::PodStanding::Terminal).count();
    s.summary = format!("{matching}/{live} live pod(s) run this release");
    let o = rc::evaluate_rollout(&exp, &st);
    s.tables.push(Table { title: "pods by release".into(), columns: rc::POD_COLUMNS.iter().map(|c| c.to_string()).collect(), rows: o.rows });
    s.data = o.data;
    s
}

/// The scheduled audit's serving pass: for each service (namespace/name)
/// under `root`, is the cluster running the bundle git says is current?
///
/// The current bundle of a service is the head of its rollback chain: the one
/// no other bundle names as `spec.rollback`. Two heads (two releases that do
/// not know each other) cannot be told apart, so that service is
/// INCONCLUSIVE rather than guessed.
pub async fn serving_audit(root: &Path) -> Result<Vec<StepReport>> {
    use std::collections::{BTreeMap, BTreeSet};
    let paths = super::verify::find_bundles(root)?;
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let mut groups: BTreeMap<(String, String), Vec<Loaded>> = BTreeMap::new();
    let mut referenced = BTreeSet::new();
    for p in &paths {
        // A bundle that does not load is reported by the store audit itself.
        let Ok(l) = crate::adapters::bundle_files::load(p) else { continue };
        if let Some(rb) = &l.bundle.spec.rollback {
            referenced.insert(canon(&l.dir().join(&rb.bundle)));
        }
        groups.entry((l.bundle.metadata.namespace.clone(), l.bundle.metadata.name.clone())).or_default().push(l);
    }
    let mut out = Vec::new();
    if groups.is_empty() {
        return Ok(out);
    }
    let (client, server) = match io::client().await {
        Ok(c) => c,
        Err(e) => {
            out.push(StepReport::error("serving", root.display().to_string(), &e));
            return Ok(out);
        }
    };
    for ((ns, name), bundles) in groups {
        let heads: Vec<&Loaded> = bundles.iter().filter(|l| !referenced.contains(&canon(&l.path))).collect();
        match heads.as_slice() {
            [head] => {
                let mut s = serving_step(head, client.clone()).await;
                s.summary = format!("{ns}/{name} on {server}: {}", s.summary);
                out.push(s);
            }
            _ => {
                let mut s = StepReport::new("serving", format!("{ns}/{name}"));
                s.verdict = Verdict::Inconclusive;
                let names: Vec<String> = heads.iter().map(|l| l.display.clone()).collect();
                s.summary = if names.is_empty() {
                    "every bundle of this service is some other bundle's rollback target (a cycle): which one is current is unknown".into()
                } else {
                    format!("{} bundles claim to be current (none rolls back to the other): {}; serving not compared", names.len(), names.join(", "))
                };
                out.push(s);
            }
        }
    }
    Ok(out)
}

// ---- revert -----------------------------------------------------------------------------------

pub fn revert(bundle: &Path, args: &RevertOptions) -> Result<Report> {
    let mut r = Report::new("revert");
    let l = match super::load_or_step(bundle, "revert") {
        Ok(l) => l,
        Err(s) => {
            r.push(s);
            return Ok(r);
        }
    };
    let evidence = match &args.evidence {
        Some(p) => {
            let text = crate::adapters::bundle_files::read_text(p, crate::adapters::bundle_files::FileKind::Report).with_context(|| format!("reading evidence {}", p.display()))?;
            Some(serde_json::from_str::<Report>(&text).with_context(|| format!("{} is not a bundlegate JSON report (`watch --format json`)", p.display()))?)
        }
        None => None,
    };
    for s in runtime()?.block_on(revert_steps(&l, args, evidence.as_ref())) {
        r.push(s);
    }
    Ok(r)
}

/// `bundlegate/revert-<name>-<version>`: one name per failed release, so
/// concurrent runs collide on the remote instead of opening two PRs.
pub fn branch_name(l: &Loaded) -> String {
    let clean = |s: &str| {
        let mut o: String = s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' }).collect();
        while o.contains("..") {
            o = o.replace("..", ".");
        }
        o.trim_matches(['.', '-']).to_string()
    };
    format!("bundlegate/revert-{}-{}", clean(&l.bundle.metadata.name), clean(&l.bundle.metadata.version))
}

fn degrade_help() -> &'static str {
    "degrade instead of rolling back: keep or scale the current pods, route traffic away, or serve a fallback; do not roll back to bytes that cannot be read (switching blindly to an old package with a missing tokenizer adds a new failure)"
}

async fn revert_steps(l: &Loaded, args: &RevertOptions, evidence: Option<&Report>) -> Vec<StepReport> {
    let mut steps = Vec::new();
    let target = format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest);
    let fail = |steps: &mut Vec<StepReport>, d: Diagnostic, summary: String, data: serde_json::Value| {
        let mut s = StepReport::new("revert", &target);
        s.diagnostics.push(d);
        s.verdict = Verdict::Fail;
        s.summary = summary;
        s.data = data;
        steps.push(s);
    };

    // Kargo's safeguard: a failure older than --max-age is history, not an
    // incident; acting on it could undo a fix made since.
    let max_age = args.max_age.value;
    let now = chrono::Utc::now();
    let failed_at = args.failed_at.unwrap_or(now);
    let age = (now - failed_at).to_std().unwrap_or_default();
    if age > max_age {
        let mut s = StepReport::not_run("revert", &target, format!("ignored: the failure at {failed_at} is {}s old, older than --max-age {}", age.as_secs(), args.max_age));
        s.data = json!({"ignored": "older-than-max-age", "failedAt": failed_at, "maxAge": args.max_age.text});
        return vec![s];
    }

    let Some(rb) = &l.bundle.spec.rollback else {
        fail(
            &mut steps,
            Diagnostic::new(Code::RollbackTargetUnverified, "the bundle names no spec.rollback: there is no verified release to return to").field("spec.rollback").help(degrade_help()),
            "no rollback target: degrade proposed, no revert PR".into(),
            json!({"proposal": "degrade"}),
        );
        return steps;
    };

    let (repo, rel) = match io::locate(&args.repo, &l.path) {
        Ok(x) => x,
        Err(e) => return vec![StepReport::error("revert", &target, &e)],
    };
    match io::last_change(&repo, &rel) {
        Ok(Some((sha, msg))) if is_revert_commit(&repo, &sha, &msg) => {
            let mut s = StepReport::not_run(
                "revert",
                &target,
                format!("refused: {} was last changed by a bundlegate revert ({sha}); a revert is never reverted, a human decides", rel.display()),
            );
            s.data = json!({"refused": "revert-of-a-revert", "commit": sha});
            return vec![s];
        }
        Ok(_) => {}
        Err(e) => return vec![StepReport::error("revert", &target, &e.context("reading the bundle's history"))],
    }

    let prev = match crate::adapters::bundle_files::load_named_bundle(l, &rb.bundle) {
        Ok(p) => p,
        Err(e) => {
            fail(
                &mut steps,
                Diagnostic::new(Code::RollbackTargetUnverified, format!("the rollback target {} does not load: {e}", rb.bundle)).field("spec.rollback.bundle").help(degrade_help()),
                "rollback target unusable: degrade proposed, no revert PR".into(),
                json!({"proposal": "degrade"}),
            );
            return steps;
        }
    };
    if prev.digest != rb.release_digest {
        fail(
            &mut steps,
            Diagnostic::new(Code::RollbackTargetUnverified, format!("the rollback target hashes to {}, not the recorded {}", prev.digest, rb.release_digest))
                .field("spec.rollback.releaseDigest")
                .help(degrade_help()),
            "rollback target is not the recorded release: degrade proposed, no revert PR".into(),
            json!({"proposal": "degrade"}),
        );
        return steps;
    }

    // Verify the exit before taking it: a rollback to incomplete bytes is a
    // second broken release.
    let opts = VerifyOptions::quiet();
    let mut verify = super::verify::verify_loaded(&prev, &opts, &Overrides::default(), None).await;
    verify.step = "verify-rollback-target".into();
    let verified = verify.verdict == Verdict::Pass;
    let verify_summary = verify.summary.clone();
    let verify_findings: Vec<String> = verify.diagnostics.iter().take(20).map(|d| format!("{} {}", d.code, d.message)).collect();
    steps.push(verify.clone());
    if !verified {
        let mut d = Diagnostic::new(
            Code::RollbackTargetUnverified,
            format!("the rollback target {} ({}) did not verify ({}): {verify_summary}", rb.bundle, prev.bundle.metadata.version, verify.verdict),
        )
        .field("spec.rollback")
        .help(degrade_help());
        for f in verify_findings {
            d = d.evidence(f);
        }
        fail(&mut steps, d, "rollback target unverified: degrade proposed, no revert PR".into(), json!({"proposal": "degrade", "rollbackTarget": rb.bundle}));
        return steps;
    }

    let branch = branch_name(l);
    let message = format!(
        "Revert {name} {v} to {pv}\n\nRelease {v} ({d}) failed its post-merge gates; this restores the verified\nprevious bundle {rbp} ({pd}) at {path}.\n\n{REVERT_MARKER} {d}\n",
        name = l.bundle.metadata.name,
        v = l.bundle.metadata.version,
        pv = prev.bundle.metadata.version,
        d = l.digest,
        rbp = rb.bundle,
        pd = prev.digest,
        path = rel.display(),
    );
    let git_result = io::commit_revert(&repo, &rel, &prev.text, &branch, &message).and_then(|oid| Ok((oid, io::push_new_branch(&repo, &args.remote, &branch)?)));
    let (oid, pushed) = match git_result {
        Ok(x) => x,
        Err(e) => {
            steps.push(StepReport::error("revert", &target, &e.context(format!("creating and pushing {branch}"))));
            return steps;
        }
    };
    let mut s = StepReport::new("revert", &target);
    let already = matches!(pushed, io::PushOutcome::AlreadyExists(_));
    let mut data = json!({"branch": branch, "commit": oid.to_string(), "branchExisted": already, "base": args.base, "rollbackTarget": rb.bundle});

    let gh = match GithubClient::from_env() {
        Ok(g) => g,
        Err(e) => {
            steps.push(StepReport::error("revert", &target, &anyhow::Error::new(e)));
            return steps;
        }
    };
    let (Some(gh), Some((owner, name))) = (gh, io::github_repo(&repo, &args.remote)) else {
        s.verdict = Verdict::Inconclusive;
        s.summary = format!("branch {branch} {}; no GITHUB_TOKEN or GitHub repository (GITHUB_REPOSITORY): PR not opened", if already { "already existed" } else { "pushed" });
        s.data = data;
        steps.push(s);
        return steps;
    };
    if already {
        match gh.find_open_pull(&owner, &name, &branch).await {
            Ok(Some(pr)) => {
                s.summary = format!("already reverting: {branch} exists and PR #{} is open ({})", pr.number, pr.html_url);
                data["pr"] = json!({"number": pr.number, "url": pr.html_url, "created": false});
                s.data = data;
                steps.push(s);
                return steps;
            }
            Ok(None) => {} // the other run died before its PR: open it (GitHub refuses a duplicate)
            Err(e) => {
                steps.push(StepReport::error("revert", &target, &anyhow::Error::new(e).context(format!("branch {branch} is on the remote; looking up its PR"))));
                return steps;
            }
        }
    }
    let title = format!("Revert {} {} → {} (bundlegate)", l.bundle.metadata.name, l.bundle.metadata.version, prev.bundle.metadata.version);
    let body = pr_body(l, &prev, &rel, &branch, evidence, &verify_summary);
    match gh.create_pull(&owner, &name, &title, &branch, &args.base, &body).await {
        Ok(PullOutcome::Created(pr)) => {
            s.summary = format!("opened PR #{} {} ({branch} → {})", pr.number, pr.html_url, args.base);
            data["pr"] = json!({"number": pr.number, "url": pr.html_url, "created": true});
        }
        Ok(PullOutcome::Exists(pr)) => {
            s.summary = format!("already reverting: a PR for {branch} exists{}", pr.as_ref().map(|p| format!(" (#{})", p.number)).unwrap_or_default());
            data["pr"] = json!({"number": pr.as_ref().map(|p| p.number), "created": false});
        }
        Err(e) => {
            steps.push(StepReport::error("revert", &target, &anyhow::Error::new(e).context(format!("branch {branch} is on the remote; opening its PR (open it by hand or re-run)"))));
            return steps;
        }
    }
    s.data = data;
    steps.push(s);
    steps
}

/// 401/403 from the Kubernetes API: the credentials, not the moment.
fn is_denied(e: &anyhow::Error) -> bool {
    e.chain().any(|c| matches!(c.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 401 || s.code == 403))
}

/// A revert commit carries the marker; when it arrived through a merge
/// commit, the marker is in the merged branch's head commit.
fn is_revert_commit(repo: &git2::Repository, sha: &str, msg: &str) -> bool {
    if msg.contains(REVERT_MARKER) {
        return true;
    }
    let Ok(c) = git2::Oid::from_str(sha).and_then(|o| repo.find_commit(o)) else { return false };
    c.parents().skip(1).any(|p| p.message().is_ok_and(|m| m.contains(REVERT_MARKER)))
}

fn pr_body(l: &Loaded, prev: &Loaded, rel: &Path, branch: &str, evidence: Option<&Report>, verify_summary: &str) -> String {
    let mut o = String::new();
    o.push_str(&format!("<!-- {REVERT_MARKER} {} -->\n", l.digest));
    o.push_str(&format!(
        "## Revert `{}` {} → {}\n\nRelease **{}** (`{}`) failed its post-merge gates. This PR restores the previous bundle \
         (release **{}**, `{}`) at `{}`.\n\n",
        l.bundle.metadata.name,
        l.bundle.metadata.version,
        prev.bundle.metadata.version,
        l.bundle.metadata.version,
        l.digest,
        prev.bundle.metadata.version,
        prev.digest,
        rel.display()
    ));
    o.push_str(&format!("**Rollback target verified** before this PR was opened: {verify_summary}\n\n"));
    o.push_str("### Failed gates\n\n");
    match evidence {
        Some(r) => {
            let failed: Vec<&StepReport> = r.steps.iter().filter(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive)).collect();
            if failed.is_empty() {
                o.push_str(&format!("The evidence report (`{}`, verdict {}) has no failed step.\n\n", r.command, r.verdict));
            }
            for s in failed {
                o.push_str(&crate::report::render::markdown_step(s));
            }
        }
        None => o.push_str("No evidence report was given (`--evidence report.json` from `bundlegate watch --format json`).\n\n"),
    }
    o.push_str(&format!("Branch `{branch}` is named after the failed release, so concurrent runs open one PR.\n\n{REVERT_MARKER} {}\n", l.digest));
    super::pr::truncate_markdown(&o, 60_000, &format!("\n\n…evidence truncated.\n\n{REVERT_MARKER} {}\n", l.digest))
}
