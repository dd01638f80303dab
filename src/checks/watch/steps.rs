//! The watch's steps written up from what was read: the plan resolved once
//! from the options and the bundle, then one pure function per step
//! (verdict, summary, findings, tables, data). `app::watch` only reads the
//! cluster, the repository and the service, and sleeps; the properties
//! (`props`) call these same functions, not a copy of them.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use super::argo::{self, AppStatus, ArgoState, History, Lineage};
use super::rollout::{self as rc, Expected, IdentityExpectation, IdentitySample, ProbeSample};
use super::stability::{self, RolloutVerdict};
use crate::bundle::{Loaded, ServingFormat};
use crate::diag::{Severity, Span};
use crate::report::{Report, StepReport, Table, Verdict};

/// Every derived default of a watch, decided once before any work.
#[derive(Debug, Clone)]
pub(crate) struct WatchPlan {
    /// What the bundle says should run.
    pub expected: Expected,
    /// The stability window: `--stable-for`, else twice the readiness
    /// probe's failure window (period × failureThreshold), 30 s to 10 min.
    pub window: Duration,
    /// What the identity endpoint must report (empty: none declared).
    pub identity: Option<IdentityPlan>,
    /// The step target: the bundle with its version and digest.
    pub target: String,
}

/// The identity endpoint's expectations, from the bundle.
#[derive(Debug, Clone)]
pub(crate) struct IdentityPlan {
    /// `spec.serving.identity.path`, joined to the service URL by the app.
    pub path: String,
    pub expect: Vec<IdentityExpectation>,
    pub registered_field: Option<String>,
    pub span: Option<Span>,
}

impl WatchPlan {
    pub(crate) fn resolve(l: &Loaded, stable_for: Option<Duration>) -> WatchPlan {
        let r = l.bundle.spec.serving.probes.readiness.as_ref();
        let window = stable_for.unwrap_or_else(|| {
            Duration::from_secs(stability::default_window_s(
                r.map(|p| p.period_seconds),
                r.map(|p| p.failure_threshold),
            ))
        });
        let identity = l.bundle.spec.serving.identity.as_ref().map(|id| IdentityPlan {
            path: id.path.clone(),
            expect: id
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
                .collect(),
            registered_field: id.registered_field.clone(),
            span: l.span("spec.serving.identity"),
        });
        WatchPlan {
            expected: Expected {
                digest: l.digest.clone(),
                storage_uri: l.bundle.spec.model.storage_uri.clone(),
                kserve: l.bundle.spec.serving.format != ServingFormat::Deployment,
                workload: super::ownership::workload_kind(l.bundle.spec.serving.format),
                replicas: l.bundle.spec.serving.replicas,
            },
            window,
            identity,
            target: format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest),
        }
    }
}

/// What the Argo CD wait concluded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgoOutcome {
    /// The release is deployed: judge the rollout.
    Deployed,
    /// A later commit renders another release: nothing of this release to
    /// judge (the reason names the commit and what it renders).
    Superseded(String),
    /// Not deployed (FAIL, ERROR or INCONCLUSIVE already in the step).
    NotDeployed,
}

/// The Argo CD wait's memory across polls: each answer goes in, the state
/// is decided again from all of it (`argo::argo_state`), and at the end one
/// step is written (`argo_step`). `app::watch` only reads and sleeps.
pub(crate) struct ArgoWatch {
    revision: Option<String>,
    merged_at: Option<DateTime<Utc>>,
    release: String,
    lineage: Lineage,
    state: ArgoState,
    last_app: Option<AppStatus>,
    ever_read: bool,
    last_err: Option<String>,
    denied: bool,
}

impl ArgoWatch {
    /// `revision`: the merge commit (blank: none); `merged_at`: its commit
    /// time when the local repository has it; `release`: the release digest.
    pub(crate) fn new(revision: Option<&str>, merged_at: Option<DateTime<Utc>>, release: &str) -> ArgoWatch {
        ArgoWatch {
            revision: revision.filter(|r| !r.trim().is_empty()).map(str::to_string),
            merged_at,
            release: release.to_string(),
            lineage: Lineage::new(),
            state: ArgoState::Waiting { why: "nothing read yet".into(), unknowable: false },
            last_app: None,
            ever_read: false,
            last_err: None,
            denied: false,
        }
    }

    /// The revisions `app` reports that are not yet placed relative to the
    /// merge commit: only these go to git (none without a merge commit).
    pub(crate) fn unplaced(&self, app: &AppStatus) -> Vec<String> {
        match self.revision {
            Some(_) => app.revisions().into_iter().filter(|r| !self.lineage.contains_key(r)).collect(),
            None => Vec::new(),
        }
    }

    /// One answer: the Application (absent: not found) and, for the
    /// revisions `unplaced` named, what git says they render.
    pub(crate) fn read(&mut self, app: Option<AppStatus>, history: Option<&History>) {
        self.ever_read = true;
        self.last_err = None;
        if let Some(h) = history {
            self.lineage.extend(argo::lineage_from(h, &self.release));
        }
        self.state = argo::argo_state(app.as_ref(), self.revision.as_deref(), &self.lineage, self.merged_at);
        self.last_app = app;
    }

    /// A read that failed; `denied`: refused by RBAC, which does not heal by
    /// waiting, so the wait ends.
    pub(crate) fn failed(&mut self, err: String, denied: bool) {
        self.denied = denied;
        self.last_err = Some(if denied {
            format!("{err} (the watcher needs get/list on Applications, Deployments, ReplicaSets, Pods, Events and EndpointSlices, and on InferenceServices (LLMInferenceServices for a kserve-llm release) and Knative Services/Configurations/Revisions where installed)")
        } else {
            err
        });
    }

    /// Decided (or refused): nothing more to wait for.
    pub(crate) fn settled(&self) -> bool {
        self.denied || !matches!(self.state, ArgoState::Waiting { .. })
    }

    /// The step, what it means for the rest of the watch, and the
    /// Application's sources (the revert guard reads them).
    pub(crate) fn finish(
        self,
        app_target: &str,
        app: &str,
        elapsed_s: f64,
        timeout: &str,
    ) -> (StepReport, ArgoOutcome, Vec<argo::AppSource>) {
        let (step, outcome) = argo_step(&ArgoRead {
            app_target,
            app,
            last_app: self.last_app.as_ref(),
            state: &self.state,
            revision: self.revision.as_deref(),
            merged_at: self.merged_at,
            lineage: &self.lineage,
            ever_read: self.ever_read,
            last_err: self.last_err.as_deref(),
            elapsed_s,
            timeout,
        });
        (step, outcome, self.last_app.map(|a| a.sources).unwrap_or_default())
    }
}

/// What the Argo CD wait read, at its end.
pub(crate) struct ArgoRead<'a> {
    /// `<namespace>/<name> on <server>`.
    pub app_target: &'a str,
    /// `<namespace>/<name>`.
    pub app: &'a str,
    pub last_app: Option<&'a AppStatus>,
    pub state: &'a ArgoState,
    pub revision: Option<&'a str>,
    pub merged_at: Option<DateTime<Utc>>,
    pub lineage: &'a Lineage,
    /// The Application was read at least once.
    pub ever_read: bool,
    pub last_err: Option<&'a str>,
    pub elapsed_s: f64,
    pub timeout: &'a str,
}

/// The `argo` step and what it means for the rest of the watch.
pub(crate) fn argo_step(r: &ArgoRead<'_>) -> (StepReport, ArgoOutcome) {
    let mut s = StepReport::new("argo", r.app_target);
    s.data = json!({"application": r.last_app, "revision": r.revision, "mergedAt": r.merged_at, "lineage": r.lineage, "healthIgnored": true});
    s.verdict = argo::verdict(r.state, r.revision.is_some());
    let outcome = match (r.last_app, r.state) {
        (Some(a), ArgoState::Synced { via }) if r.revision.is_some() => {
            s.summary = format!(
                "{via} (operation Succeeded, finished {}); health.status was not used",
                a.finished_at.as_deref().unwrap_or("-")
            );
            if r.merged_at.is_none() {
                s.summary
                    .push_str("; merge time unknown (commit not in the local repository), finishedAt not compared");
            }
            ArgoOutcome::Deployed
        }
        (Some(a), ArgoState::Synced { .. }) => {
            s.summary = format!(
                "Synced and Succeeded, but no --revision (or GITHUB_SHA): which commit is synced is unproven ({})",
                a.describe()
            );
            ArgoOutcome::NotDeployed
        }
        (Some(_), ArgoState::Superseded { by, detail }) => {
            s.summary = format!("superseded by {by}: {detail}");
            s.diagnostics.push(argo::release_superseded(r.revision.unwrap_or("-"), by, detail));
            ArgoOutcome::Superseded(format!(
                "superseded by {by} ({detail}): the cluster is meant to run that release, which its own watch judges"
            ))
        }
        // Written up below as an ERROR: the Application was never read.
        _ if !r.ever_read => ArgoOutcome::NotDeployed,
        (_, ArgoState::Waiting { why, unknowable: true }) => {
            s.diagnostics.push(argo::argo_revision_unknown(r.revision.unwrap_or("-"), why, r.last_app));
            s.summary = format!("undecided after {:.0}s: {why}", r.elapsed_s);
            ArgoOutcome::NotDeployed
        }
        (_, state) => {
            let why = match state {
                ArgoState::Waiting { why, .. } => why.clone(),
                _ => "the Application was not found".into(),
            };
            s.diagnostics.push(argo::argo_not_synced(r.revision, r.timeout, &why, r.app, r.last_app, r.last_err));
            s.summary = format!("not synced after {:.0}s", r.elapsed_s);
            ArgoOutcome::NotDeployed
        }
    };
    if !r.ever_read {
        s = StepReport::error("argo", r.app_target, &anyhow::anyhow!("{}", r.last_err.unwrap_or("no answer")));
    }
    (s, outcome)
}

/// The `rollout` step from the stability window's decision (None: no read
/// succeeded; `last_err` says why). Returns the step and whether the
/// rollout completed and held.
pub(crate) fn rollout_step(
    target: &str,
    verdict: Option<RolloutVerdict>,
    last_err: Option<&str>,
    window: Duration,
    timeout: &str,
    elapsed_s: f64,
) -> (StepReport, bool) {
    let Some(v) = verdict else {
        let why = last_err.unwrap_or("no state read before the timeout");
        return (StepReport::error("rollout", target, &anyhow::anyhow!("{why}")), false);
    };
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
            format!("still incomplete at the {timeout} timeout")
        };
        if let Some(d) = s.diagnostics.iter_mut().find(|d| d.severity == Severity::Error) {
            d.evidence.push(format!("{why}, after {elapsed_s:.0}s"));
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

/// The `downtime` step from the probe samples taken while waiting.
pub(crate) fn downtime_step(target: &str, url: &str, samples: &[ProbeSample], end: f64) -> StepReport {
    let mut s = StepReport::new("downtime", target);
    let st = rc::downtime(samples, end);
    s.data = json!({"url": url, "stats": st, "seconds": end, "timeline": rc::probe_spans(samples, end)});
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

/// The `identity` step over the answers taken (`over_window`: during the
/// stability window; else asked once after the wait).
pub(crate) fn identity_step(
    target: &str,
    plan: &IdentityPlan,
    url: &str,
    samples: &[IdentitySample],
    over_window: bool,
) -> StepReport {
    let judged = rc::identity_over_time(&plan.expect, plan.registered_field.as_deref(), samples);
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
    s.diagnostics = judged.diagnostics.into_iter().map(|d| d.at(plan.span.clone())).collect();
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
        title: url.to_string(),
        columns: rc::IDENTITY_COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: judged.rows,
    });
    s
}

/// A superseded release: the steps after `argo`, each NOT RUN with the
/// reason. What the pods, the endpoint and the traffic show is the later
/// release's, judged by its own watch.
pub(crate) fn superseded_steps(target: &str, why: &str, canary: bool) -> Vec<StepReport> {
    let mut out = vec![
        StepReport::not_run("rollout", target, why),
        StepReport::not_run("identity", target, why),
        StepReport::not_run("downtime", target, why),
    ];
    if canary {
        out.push(StepReport::not_run("canary", target, why));
    }
    out
}

/// A revert PR only for a report that FAILED on evidence showing a failure
/// (INCONCLUSIVE, NOT RUN and ERROR never revert), and never for a
/// superseded release (whose argo step is INCONCLUSIVE, so never FAIL).
pub(crate) fn revert_wanted(asked: bool, r: &Report) -> bool {
    asked && r.verdict == Verdict::Fail
}

/// How often the cluster is read (`BUNDLEGATE_WATCH_POLL`, else 2 s):
/// polling (plain GETs) rather than watches keeps the tool's access
/// read-only and simple to audit; 2 s is well below the seconds a pod takes
/// to schedule. Tests shorten it. Zero is refused (it polled the API in a
/// tight loop), as is anything that is not a duration of at most 7 days.
pub(crate) fn poll_interval(v: Option<&str>) -> Result<Duration, String> {
    let Some(v) = v else { return Ok(Duration::from_secs(2)) };
    match crate::util::try_duration(v) {
        Ok(d) if d.is_zero() => Err(format!("BUNDLEGATE_WATCH_POLL=`{v}`: the poll interval must be more than 0 (zero reads the cluster in a tight loop); e.g. 2s")),
        Ok(d) => Ok(d),
        Err(why) => Err(format!("BUNDLEGATE_WATCH_POLL: {why}")),
    }
}

/// The cluster could not be reached: the `argo` step (named after the
/// Application) is that ERROR, and there is no rollout to judge.
pub(crate) fn unreachable_steps(app: &str, target: &str, e: &anyhow::Error) -> Vec<StepReport> {
    vec![StepReport::error("argo", app, e), StepReport::not_run("rollout", target, "the cluster could not be reached")]
}

/// The rollout of a release Argo CD did not sync: NOT RUN.
pub(crate) fn rollout_not_deployed(target: &str) -> StepReport {
    StepReport::not_run("rollout", target, "Argo CD did not sync this release, so the cluster cannot be running it")
}

/// The `downtime` step when nothing was probed: no `--service-url`
/// (`service_url` false), else a bundle that names no health path.
pub(crate) fn downtime_not_measured(target: &str, service_url: bool) -> StepReport {
    let why = if service_url {
        "the bundle declares no spec.serving.healthPath to probe"
    } else {
        "no --service-url: downtime was not measured"
    };
    StepReport::not_run("downtime", target, why)
}

/// The `identity` step when nothing was asked: no `--service-url`
/// (`service_url` false), else a bundle that declares no identity endpoint.
pub(crate) fn identity_not_asked(target: &str, service_url: bool) -> StepReport {
    let why = if service_url {
        "the bundle declares no spec.serving.identity endpoint (BG017)"
    } else {
        "no --service-url: the service's own identity was not asked"
    };
    StepReport::not_run("identity", target, why)
}

/// The `canary` step of a rollout that did not complete: analysing a
/// rollout that never happened proves nothing (`steps`: the traffic steps).
pub(crate) fn canary_not_run(target: &str, steps: &[u32]) -> StepReport {
    StepReport::not_run("canary", target, format!("traffic steps {steps:?} not analysed: the rollout did not complete"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;

    #[test]
    fn the_poll_interval_defaults_to_2s_and_refuses_zero() {
        assert_eq!(poll_interval(None), Ok(Duration::from_secs(2)));
        assert_eq!(poll_interval(Some("250ms")), Ok(Duration::from_millis(250)));
        assert_eq!(
            poll_interval(Some("0s")).unwrap_err(),
            "BUNDLEGATE_WATCH_POLL=`0s`: the poll interval must be more than 0 (zero reads the cluster in a tight loop); e.g. 2s"
        );
        assert!(poll_interval(Some("soon")).unwrap_err().starts_with("BUNDLEGATE_WATCH_POLL: "));
    }

    /// Each step the watch did not take says which and why, NOT RUN (the
    /// unreachable cluster's argo step is the ERROR).
    #[test]
    fn steps_not_taken_say_why() {
        let shown = |s: &StepReport| format!("{} {} {}: {}", s.step, s.verdict, s.target, s.summary);
        let gone = unreachable_steps("argocd/m", "t", &anyhow::anyhow!("no kubeconfig"));
        assert_eq!(
            gone.iter().map(shown).collect::<Vec<_>>(),
            ["argo ERROR argocd/m: no kubeconfig", "rollout NOT RUN t: the cluster could not be reached"]
        );
        let cases = [
            (
                rollout_not_deployed("t"),
                "rollout NOT RUN t: Argo CD did not sync this release, so the cluster cannot be running it",
            ),
            (downtime_not_measured("t", false), "downtime NOT RUN t: no --service-url: downtime was not measured"),
            (
                downtime_not_measured("t", true),
                "downtime NOT RUN t: the bundle declares no spec.serving.healthPath to probe",
            ),
            (
                identity_not_asked("t", false),
                "identity NOT RUN t: no --service-url: the service's own identity was not asked",
            ),
            (
                identity_not_asked("t", true),
                "identity NOT RUN t: the bundle declares no spec.serving.identity endpoint (BG017)",
            ),
            (
                canary_not_run("t", &[10, 50, 100]),
                "canary NOT RUN t: traffic steps [10, 50, 100] not analysed: the rollout did not complete",
            ),
        ];
        for (step, want) in &cases {
            assert_eq!(shown(step), *want);
        }
    }

    fn read<'a>(state: &'a ArgoState, app: Option<&'a AppStatus>, lineage: &'a Lineage, ever: bool) -> ArgoRead<'a> {
        ArgoRead {
            app_target: "argocd/m on https://k",
            app: "argocd/m",
            last_app: app,
            state,
            revision: Some("0123456789abcdef0123456789abcdef01234567"),
            merged_at: None,
            lineage,
            ever_read: ever,
            last_err: Some("connection refused"),
            elapsed_s: 12.0,
            timeout: "5m",
        }
    }

    /// The wait's memory: a refused read (RBAC) settles the wait at once and
    /// the step names the permissions; any other failure keeps waiting and
    /// is forgotten by the next answer; the merge commit is placed by git
    /// once, and a blank revision asks git for nothing.
    #[test]
    fn the_argo_wait_remembers_refusals_failures_and_placed_revisions() {
        const M: &str = "0123456789abcdef0123456789abcdef01234567";
        let mut w = ArgoWatch::new(Some(M), None, "sha256:1");
        assert!(!w.settled());
        w.failed("connection refused".into(), false);
        assert!(!w.settled(), "a failure that may heal keeps the wait going");
        let (s, o, _) = ArgoWatch::new(Some(M), None, "sha256:1").finish("t", "a", 1.0, "5m");
        assert!(matches!(o, ArgoOutcome::NotDeployed) && s.verdict == Verdict::Error, "never read: {s:?}");
        w.failed("applications is forbidden".into(), true);
        assert!(w.settled(), "a refusal does not heal by waiting");
        let (s, o, sources) = w.finish("argocd/m on https://k", "argocd/m", 3.0, "5m");
        assert!(matches!(o, ArgoOutcome::NotDeployed));
        assert_eq!(s.verdict, Verdict::Error);
        let text = serde_json::to_string(&s).unwrap();
        assert!(text.contains("forbidden") && text.contains("get/list on Applications"), "{text}");
        assert!(sources.is_empty());

        let app = AppStatus { name: "m".into(), sync_revision: Some(M.into()), ..Default::default() };
        let mut w = ArgoWatch::new(Some(M), None, "sha256:1");
        assert_eq!(w.unplaced(&app), vec![M.to_string()]);
        let h = History {
            revisions: [(
                M.to_string(),
                argo::RevisionFacts {
                    ancestry: argo::Ancestry::Same,
                    rendered: vec![argo::Rendered { path: "r.yaml".into(), digest: Ok("sha256:1".into()) }],
                    hydrated_from: None,
                },
            )]
            .into(),
        };
        w.failed("timeout".into(), false);
        w.read(Some(app.clone()), Some(&h));
        assert!(w.unplaced(&app).is_empty(), "placed once");
        let (s, _, _) = w.finish("t", "a", 1.0, "5m");
        assert!(!serde_json::to_string(&s).unwrap().contains("timeout"), "the next answer clears the last failure");
        assert!(ArgoWatch::new(Some("  "), None, "sha256:1").unplaced(&app).is_empty());
    }

    /// Each Argo CD state gives its step, verdict and outcome: deployed,
    /// superseded (INCONCLUSIVE, the later steps' reason naming the commit),
    /// undecidable, not synced, and never read (ERROR).
    #[test]
    fn the_argo_step_per_state() {
        let app =
            AppStatus { name: "m".into(), finished_at: Some("2026-01-01T10:05:00Z".into()), ..Default::default() };
        let l = Lineage::new();
        let synced = ArgoState::Synced { via: "synced abc".into() };
        let (s, o) = argo_step(&read(&synced, Some(&app), &l, true));
        assert_eq!((s.verdict, o), (Verdict::Pass, ArgoOutcome::Deployed));
        assert!(s.summary.contains("merge time unknown"), "{}", s.summary);
        let sup = ArgoState::Superseded { by: "bbbb".into(), detail: "m/release.yaml is release sha256:x".into() };
        let (s, o) = argo_step(&read(&sup, Some(&app), &l, true));
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert!(s.diagnostics.iter().any(|d| d.code == Code::ReleaseSuperseded));
        match o {
            ArgoOutcome::Superseded(why) => {
                assert!(why.contains("superseded by bbbb") && why.contains("sha256:x"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        let unknowable = ArgoState::Waiting { why: "not in the local repository".into(), unknowable: true };
        let (s, o) = argo_step(&read(&unknowable, Some(&app), &l, true));
        assert_eq!((s.verdict, o), (Verdict::Inconclusive, ArgoOutcome::NotDeployed));
        assert!(s.diagnostics.iter().any(|d| d.code == Code::ArgoRevisionUnknown) && s.summary.contains("12s"));
        let waiting = ArgoState::Waiting { why: "behind".into(), unknowable: false };
        let (s, o) = argo_step(&read(&waiting, Some(&app), &l, true));
        assert_eq!((s.verdict, o), (Verdict::Fail, ArgoOutcome::NotDeployed));
        assert!(s.diagnostics.iter().any(|d| d.code == Code::ArgoNotSynced && d.message.contains("5m")));
        let (s, o) = argo_step(&read(&waiting, None, &l, false));
        assert_eq!((s.verdict, o), (Verdict::Error, ArgoOutcome::NotDeployed));
        assert!(s.summary.contains("connection refused") || format!("{s:?}").contains("connection refused"));
    }

    #[test]
    fn superseded_steps_are_not_run_with_the_reason_and_never_revert() {
        let steps = superseded_steps("t", "superseded by bbbb", true);
        assert_eq!(
            steps.iter().map(|s| s.step.as_str()).collect::<Vec<_>>(),
            ["rollout", "identity", "downtime", "canary"]
        );
        assert!(steps.iter().all(|s| s.verdict == Verdict::NotRun && s.summary.contains("superseded by bbbb")));
        assert_eq!(superseded_steps("t", "x", false).len(), 3);
        let mut r = Report::new("watch");
        let mut argo = StepReport::new("argo", "a");
        argo.verdict = Verdict::Inconclusive;
        r.push(argo);
        for s in steps {
            r.push(s);
        }
        assert!(!revert_wanted(true, &r));
        let mut failed = StepReport::new("rollout", "t");
        failed.verdict = Verdict::Fail;
        r.push(failed);
        assert!(revert_wanted(true, &r) && !revert_wanted(false, &r));
    }

    /// No read at all is an ERROR naming why; no answer from the identity
    /// endpoint is INCONCLUSIVE, never PASS.
    #[test]
    fn no_evidence_is_never_a_pass() {
        let (s, complete) = rollout_step("t", None, Some("forbidden"), Duration::from_secs(30), "5m", 3.0);
        assert_eq!(s.verdict, Verdict::Error);
        assert!(!complete);
        let plan =
            IdentityPlan { path: "/m".into(), expect: Vec::new(), registered_field: Some("ok".into()), span: None };
        let none = [IdentitySample { at_s: 1.0, answer: Err("refused".into()) }];
        let s = identity_step("t", &plan, "http://s/m", &none, false);
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert!(s.summary.contains("refused"), "{}", s.summary);
        let s = downtime_step("t", "http://s/h", &[], 2.0);
        assert_eq!(s.verdict, Verdict::Inconclusive);
    }
}
