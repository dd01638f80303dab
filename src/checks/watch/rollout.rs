//! Rollout truth: which release each of the release's pods runs (the pods
//! chosen by ownership, `super::ownership`), judged by phase, deletion mark,
//! readiness and routing; the model source each pod really reads; the
//! service's identity answer and the measured downtime. Codes BG501–BG507
//! and BG530; the why of each is in `src/diag.rs`.
//!
//! Everything here is plain data in, diagnostics out; the adapter
//! (`adapters::kube`) turns Kubernetes objects into these structs.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::state::{EventInfo, OutsidePod, PodInfo, ReplicaSetInfo, ServiceState, MODELCAR, STORAGE_INITIALIZER};
use crate::diag::Code;
use crate::diag::Diagnostic;

/// Container name of the in-pod verifier (`bundlegate verify-files`).
use crate::bundle::pod_verifier::VERIFIER_CONTAINER;

/// A new pod held back by its verifier: proven, final (the files will not
/// fix themselves), named per artifact from the termination message.
fn verifier_failures(new: &[&PodInfo]) -> Vec<Diagnostic> {
    new.iter()
        .filter_map(|p| {
            let msg = p.verifier.as_deref()?;
            let first = msg.lines().next().unwrap_or(msg);
            let mut d = Diagnostic::new(Code::PodArtifactMismatch, format!("new pod {} refused its model files: {first}", p.name));
            for l in msg.lines() {
                d = d.evidence(format!("{VERIFIER_CONTAINER}: {l}"));
            }
            Some(d.help("the bytes in the pod differ from the bundle: the object was overwritten after the PR check, a node cache is stale, or a download was resumed; run `bundlegate verify` on the bundle"))
        })
        .collect()
}

/// What the bundle says should be running.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub digest: String,
    /// The bundle's `storageUri`, compared with the pods' real source.
    pub storage_uri: String,
    /// KServe formats: the storage-initializer must exist and name the URI.
    pub kserve: bool,
    /// The kind at the root of the release's pods' ownership chain
    /// (`Deployment`, `InferenceService`, `LLMInferenceService`).
    pub workload: &'static str,
    pub replicas: u32,
}

/// A digest for a message: its first 12 characters. By characters, not
/// bytes: the digest a pod reports is the cluster's text, not checked hex,
/// and a byte cut inside a multi-byte character would panic.
fn short(d: &str) -> String {
    let hex = d.strip_prefix("sha256:").unwrap_or(d);
    format!("sha256:{}", hex.chars().take(12).collect::<String>())
}

fn same_uri(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
}

/// What one pod's phase, deletion mark and readiness say about serving. The
/// order of the tests matters: a terminal or terminating pod's Ready
/// condition may still read True (it is not rewritten when the kubelet stops
/// reporting), so it is never trusted for those.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PodStanding {
    /// Phase Failed or Succeeded: its containers stopped for good (an Evicted
    /// pod object stays until pod GC). History, not serving.
    Terminal,
    /// deletionTimestamp set: the endpoints controller has taken it out of
    /// the Service's ready endpoints; it only drains.
    Terminating,
    /// Phase Unknown, missing or unrecognised (node unreachable): whether it
    /// serves cannot be told from the API.
    Unknown,
    /// Running and Ready, and routed (or routing unknown): receives traffic.
    Serving,
    /// Pending, Running but not Ready, or Ready but not routed (not among
    /// the Service's ready endpoints, its revision given no traffic).
    NotServing,
}

pub(crate) fn standing(p: &PodInfo) -> PodStanding {
    match p.phase.as_str() {
        "Failed" | "Succeeded" => PodStanding::Terminal,
        _ if p.terminating => PodStanding::Terminating,
        "Running" if p.ready && p.routed != Some(false) => PodStanding::Serving,
        "Running" | "Pending" => PodStanding::NotServing,
        _ => PodStanding::Unknown,
    }
}

/// Does the ReplicaSet that owns this pod still want pods? None: the pod has
/// no ReplicaSet owner, or it was not listed.
fn owner_wants_pods(p: &PodInfo, replica_sets: &[ReplicaSetInfo]) -> Option<bool> {
    let owner = p.owner.as_deref()?;
    replica_sets.iter().find(|r| r.name == owner).map(|r| r.replicas > 0)
}

fn pod_line(p: &PodInfo) -> String {
    format!(
        "pod {} runs {} ({}{}{})",
        p.name,
        p.digest.as_deref().map(short).unwrap_or_else(|| "no release-digest annotation".into()),
        p.phase,
        if p.ready { ", ready" } else { ", not ready" },
        if p.terminating { ", terminating" } else { "" }
    )
}

/// The drift comparison shared by `watch` and the scheduled serving audit:
/// each live pod's release digest and real model source against the bundle.
///
/// Only evidence of serving fails: a pod of another release that is Running
/// and Ready (and whose ReplicaSet still wants pods) is BG501. Pods that
/// cannot serve — terminal (Evicted, Completed), terminating, not ready —
/// are reported as BG507 notes; pods whose serving cannot be told (phase
/// Unknown, a Ready pod whose ReplicaSet is already scaled to 0, a not-ready
/// pod whose ReplicaSet still wants it) are BG506, which makes the step
/// INCONCLUSIVE, never FAIL.
pub(crate) fn compare_serving(exp: &Expected, pods: &[PodInfo], replica_sets: &[ReplicaSetInfo]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Pods by what they say about this release, each with the reason.
    let mut serving: Vec<&PodInfo> = Vec::new();
    let mut unsure: Vec<(&PodInfo, &str)> = Vec::new();
    let mut history: Vec<(&PodInfo, &str)> = Vec::new();
    for p in pods {
        let is_new = p.digest.as_deref() == Some(exp.digest.as_str());
        match (standing(p), is_new) {
            (PodStanding::Terminal, _) => {
                history.push((p, "terminal phase: its containers stopped for good, it serves nothing"))
            }
            (PodStanding::Terminating, false) => {
                history.push((p, "terminating: out of the Service's ready endpoints, draining"))
            }
            (PodStanding::Unknown, false) => {
                unsure.push((p, "phase Unknown (node unreachable?): whether it still serves cannot be told"))
            }
            (PodStanding::Serving, false) => match owner_wants_pods(p, replica_sets) {
                Some(false) => unsure.push((
                    p,
                    "ready, but its ReplicaSet is scaled to 0: it is being removed and may still receive traffic",
                )),
                _ => serving.push(p),
            },
            (PodStanding::NotServing, false) if p.routed == Some(false) => history.push((
                p,
                "not routed: neither among the Service's ready endpoints nor given traffic, it serves nothing",
            )),
            (PodStanding::NotServing, false) => match owner_wants_pods(p, replica_sets) {
                Some(true) => unsure.push((
                    p,
                    "not ready, but its ReplicaSet still wants pods: the old release may become ready again",
                )),
                _ => history.push((p, "not ready and not wanted by any ReplicaSet: it receives no traffic")),
            },
            // New-release pods are judged (and counted) by evaluate_rollout.
            (_, true) => {}
        }
    }
    if !serving.is_empty() {
        let mut d = Diagnostic::new(
            Code::RolloutIncomplete,
            format!(
                "{} ready pod(s) of another release are still serving; the bundle's release is {}",
                serving.len(),
                short(&exp.digest)
            ),
        );
        for p in &serving {
            d = d.evidence(pod_line(p));
        }
        out.push(d.help("an old ready pod means the new release never took over: look at the new pods' events below"));
    }
    if !unsure.is_empty() {
        let mut d = Diagnostic::new(
            Code::RolloutEvidenceIncomplete,
            format!(
                "{} pod(s) of another release may still be serving: the cluster's answer does not tell",
                unsure.len()
            ),
        );
        for (p, why) in &unsure {
            d = d.evidence(format!("{}: {why}", pod_line(p)));
        }
        out.push(d.help("read the pods again once the node or controller has caught up (`kubectl get pods -o wide`)"));
    }
    if !history.is_empty() {
        let mut d = Diagnostic::new(
            Code::PodsNotServing,
            format!("{} pod(s) are present but serve nothing (not counted either way)", history.len()),
        );
        for (p, why) in &history {
            d = d.evidence(format!("{}: {why}", pod_line(p)));
        }
        out.push(d);
    }
    for p in
        pods.iter().filter(|p| p.digest.as_deref() == Some(exp.digest.as_str()) && standing(p) != PodStanding::Terminal)
    {
        match &p.source {
            Some(src) if !same_uri(src.uri(), &exp.storage_uri) => out.push(
                Diagnostic::new(Code::RolloutIncomplete, format!("pod {} reads its model from {}, not the bundle's {}", p.name, src.uri(), exp.storage_uri))
                    .field("spec.model.storageUri")
                    .evidence(format!("{} = {}", src.read_from(), src.uri()))
                    .evidence(format!("main container STORAGE_URI env = {} (rewritten by KServe; not the source)", p.storage_env.as_deref().unwrap_or("-"))),
            ),
            Some(_) => {}
            // Not evidence of a wrong source: a way of wiring the model this
            // tool does not read. Undecided, never a failure.
            None if exp.kserve => out.push(
                Diagnostic::new(Code::RolloutEvidenceIncomplete, format!("pod {}: its model source cannot be read (no {STORAGE_INITIALIZER}, LocalModelCache annotation or {MODELCAR} container)", p.name))
                    .evidence(format!("main container STORAGE_URI env = {} (KServe rewrites it to the local mount)", p.storage_env.as_deref().unwrap_or("-")))
                    .help("bundlegate reads the storage-initializer's args, a LocalModelCache's source annotation and a modelcar's image; check the pod spec by hand (`kubectl get pod -o yaml`)"),
            ),
            None => {}
        }
    }
    out
}

/// A step's verdict from rollout diagnostics: FAIL on any failing error,
/// INCONCLUSIVE when the only errors are BG506 (could not tell), else PASS.
pub(crate) fn verdict_of(diags: &[Diagnostic]) -> crate::report::Verdict {
    use crate::diag::Severity;
    use crate::report::Verdict;
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.severity == Severity::Error).collect();
    let unsure = Code::RolloutEvidenceIncomplete;
    if errors.is_empty() {
        Verdict::Pass
    } else if errors.iter().all(|d| d.code == unsure) {
        Verdict::Inconclusive
    } else {
        Verdict::Fail
    }
}

pub(crate) struct RolloutOutcome {
    /// Every ready pod runs the new release, none of the old remains, and
    /// enough are ready: the only state that passes.
    pub complete: bool,
    /// Complete, and no pod of another release is left but terminal ones:
    /// nothing is still draining. `watch` keeps reading until then (or the
    /// timeout), so a PASS is not taken in the middle of the swap; a pod that
    /// never finishes terminating does not turn into a FAIL.
    pub settled: bool,
    /// The controller itself has given up (ProgressDeadlineExceeded): waiting
    /// longer cannot help.
    pub gave_up: bool,
    pub diagnostics: Vec<Diagnostic>,
    pub rows: Vec<Vec<String>>,
    pub summary: String,
    pub data: Value,
}

fn events_for<'a>(st: &'a ServiceState, kind: &str, name: &str) -> Vec<&'a EventInfo> {
    st.events.iter().filter(|e| e.kind == kind && e.object == name).collect()
}

fn event_line(e: &EventInfo) -> String {
    format!(
        "{} {} {}: {}{}",
        e.type_,
        e.reason,
        e.object,
        e.message,
        if e.count > 1 { format!(" (×{})", e.count) } else { String::new() }
    )
}

/// Rollout truth over one snapshot. Pods are grouped by release digest; PASS
/// only when no pod of another release serves, none may be serving, and at
/// least `replicas` pods of the new release are Running, Ready and not
/// terminating. Evidence of failure becomes BG501 with what a human would
/// otherwise dig out with `describe`; evidence that cannot decide becomes
/// BG506 (INCONCLUSIVE); pods that serve nothing are BG507 notes.
pub(crate) fn evaluate_rollout(exp: &Expected, st: &ServiceState) -> RolloutOutcome {
    let mut diags = compare_serving(exp, &st.pods, &st.replica_sets);
    // Terminal pods of the new release (an Evicted one, say) are history: a
    // replacement is judged instead.
    let new: Vec<&PodInfo> = st
        .pods
        .iter()
        .filter(|p| p.digest.as_deref() == Some(exp.digest.as_str()) && standing(p) != PodStanding::Terminal)
        .collect();
    let ready_new = new.iter().filter(|p| standing(p) == PodStanding::Serving).count();
    // New pods that may serve but cannot be counted: phase Unknown, or ready
    // and terminating (a drained node; the replacement is not up yet).
    let unsure_new: Vec<&&PodInfo> = new
        .iter()
        .filter(|p| standing(p) == PodStanding::Unknown || (standing(p) == PodStanding::Terminating && p.ready))
        .collect();

    diags.extend(new_pod_diagnostics(st, &new, ready_new >= exp.replicas as usize));
    diags.extend(outside_diagnostics(st));
    diags.extend(replica_set_diagnostics(exp, st, &new));
    let verifier = verifier_failures(&new);
    let mut gave_up = !verifier.is_empty();
    diags.extend(verifier);
    diags.extend(workload_status_diagnostics(st));
    let deadline = deadline_diagnostics(st);
    gave_up |= !deadline.is_empty();
    diags.extend(deadline);
    let readiness = readiness_diagnostic(exp, &new, ready_new, &unsure_new, &diags);
    diags.extend(readiness);
    add_green_signals(st, &mut diags);

    let complete = !diags.iter().any(is_error);
    let old = st
        .pods
        .iter()
        .filter(|p| p.digest.as_deref() != Some(exp.digest.as_str()) && standing(p) == PodStanding::Serving)
        .count();
    let summary = format!(
        "{ready_new}/{} new-release pod(s) ready, {old} pod(s) of another release serving, {} pod(s) total{}",
        exp.replicas,
        st.pods.len(),
        if complete { "" } else { " — rollout incomplete" }
    );
    // A pod of another release that routing shows takes no traffic is as
    // good as gone; one whose routing is unknown is waited for.
    let settled = complete
        && st.pods.iter().all(|p| {
            p.digest.as_deref() == Some(exp.digest.as_str())
                || standing(p) == PodStanding::Terminal
                || (p.routed == Some(false) && !p.terminating)
        });
    RolloutOutcome {
        complete,
        settled,
        gave_up,
        diagnostics: diags,
        rows: pod_rows(exp, st),
        summary,
        data: json!({"releaseDigest": exp.digest, "groups": release_groups(exp, st), "state": st}),
    }
}

/// The serving object's own word (an LLMInferenceService's conditions),
/// read as strictly as the Argo CD health check reads it: a status the
/// controller wrote for an older spec, or a Ready still Unknown, is not
/// evidence either way (BG506: the watch waits, and at its deadline is
/// INCONCLUSIVE, never a revert); Ready False, or any condition False
/// beside it (the router, the workloads), for the current generation is
/// the controller saying the release does not serve as declared (BG501),
/// whatever the pods look like.
pub(crate) fn workload_status_diagnostics(st: &ServiceState) -> Vec<Diagnostic> {
    let Some(w) = &st.workload_status else { return Vec::new() };
    let named = |c: &super::state::ConditionInfo| {
        let mut s = format!("{} is {}", c.type_, c.status);
        if let Some(r) = c.reason.as_deref().filter(|r| !r.is_empty()) {
            s.push_str(&format!(" ({r})"));
        }
        if let Some(m) = c.message.as_deref().filter(|m| !m.is_empty()) {
            s.push_str(&format!(": {m}"));
        }
        s
    };
    let who = format!("{} {}", w.kind, w.name);
    let gen = w.generation;
    let stale_cond = |c: &super::state::ConditionInfo| c.observed_generation.is_some() && c.observed_generation != gen;
    let ready = w.conditions.iter().find(|c| c.type_ == "Ready");
    let unsure = |why: String| vec![Diagnostic::new(Code::RolloutEvidenceIncomplete, format!("{who}: {why}"))];
    if gen.is_none() || w.observed_generation != gen {
        return unsure(format!(
            "its status describes generation {}, the spec is at {}: the controller has not caught up",
            w.observed_generation.map_or("(none)".into(), |g| g.to_string()),
            gen.map_or("(none)".into(), |g| g.to_string())
        ));
    }
    let Some(ready) = ready else { return unsure("its status has no Ready condition yet".into()) };
    if stale_cond(ready) {
        return unsure(format!(
            "{} was written for generation {:?}, not {gen:?}",
            named(ready),
            ready.observed_generation
        ));
    }
    // Stopped on purpose (`serving.kserve.io/stop`): it serves nothing, by
    // an operator's choice, not this release's failure; never a revert.
    if w.conditions.iter().any(|c| c.status == "False" && c.reason.as_deref() == Some("Stopped")) {
        return unsure(format!("{}: stopped (serving.kserve.io/stop), so it serves nothing to judge", named(ready)));
    }
    let failed: Vec<String> =
        w.conditions.iter().filter(|c| c.status == "False" && !stale_cond(c)).map(&named).collect();
    if !failed.is_empty() {
        let mut d = Diagnostic::new(
            Code::RolloutIncomplete,
            format!("{who} does not serve as declared: {}", failed.join("; ")),
        );
        for c in &w.conditions {
            d = d.evidence(named(c));
        }
        return vec![d.help("KServe's controller reports the router or a workload failing for this spec; the pods alone do not show it (`kubectl describe llminferenceservice`)")];
    }
    if ready.status != "True" {
        return unsure(format!("{}: the controller has not decided", named(ready)));
    }
    let pending: Vec<String> = w.conditions.iter().filter(|c| c.status != "True").map(&named).collect();
    if !pending.is_empty() {
        return unsure(format!("Ready is True but {}", pending.join("; ")));
    }
    Vec::new()
}

fn is_error(d: &Diagnostic) -> bool {
    d.severity == crate::diag::Severity::Error
}

/// Pods the release's own Service routes to that the release does not own:
/// something else answers its traffic, and from here it cannot be told what
/// (BG506). Look-alikes that are not routed are listed and not judged.
fn outside_diagnostics(st: &ServiceState) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let routed: Vec<&OutsidePod> = st.outside.iter().filter(|o| o.routed).collect();
    if !routed.is_empty() {
        let mut d = Diagnostic::new(
            Code::RolloutEvidenceIncomplete,
            format!("{} pod(s) outside this release receive the release's Service traffic", routed.len()),
        );
        for o in &routed {
            d = d.evidence(format!("pod {}: {}", o.name, o.why));
        }
        out.push(d.help("a pod the workload does not own (a hand-made copy with the Service's labels) answers part of the traffic; remove it or change its labels"));
    }
    let others: Vec<&OutsidePod> = st.outside.iter().filter(|o| !o.routed).collect();
    if !others.is_empty() {
        let mut d = Diagnostic::new(
            Code::PodsNotServing,
            format!(
                "{} pod(s) carry the app's labels but are not part of this release (not counted either way)",
                others.len()
            ),
        );
        for o in &others {
            d = d.evidence(format!("pod {}: {}", o.name, o.why));
        }
        out.push(d);
    }
    out
}

/// BG501 for each new pod that is Pending (with the scheduler's reason) or
/// not ready after restarts, while the release needs it. Once `enough`
/// pods of the release are ready, a Pending or still-starting extra pod (an
/// autoscaler's, a surge pod) is a note; a crash loop is always a failure:
/// the release's own container dies.
fn new_pod_diagnostics(st: &ServiceState, new: &[&PodInfo], enough: bool) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for p in new {
        let evs = events_for(st, "Pod", &p.name);
        let starting =
            (p.phase == "Pending" && !p.ready && !p.terminating) || (!p.crash_loop && !p.ready && p.restarts > 0);
        if enough && starting {
            let mut d = Diagnostic::new(
                Code::PodsNotServing,
                format!(
                    "extra pod {} of the new release is {} while the replicas are already ready",
                    p.name,
                    if p.phase == "Pending" { "Pending" } else { "not ready" }
                ),
            );
            for e in evs.iter().filter(|e| e.type_ == "Warning") {
                d = d.evidence(event_line(e));
            }
            diags.push(d);
            continue;
        }
        if p.phase == "Pending" && !p.ready && !p.terminating {
            let sched: Vec<&&EventInfo> = evs.iter().filter(|e| e.reason == "FailedScheduling").collect();
            let mut d = Diagnostic::new(
                Code::RolloutIncomplete,
                if sched.is_empty() {
                    format!("new pod {} is Pending", p.name)
                } else {
                    format!(
                        "new pod {} is Pending and cannot be scheduled: {}",
                        p.name,
                        sched.last().map(|e| e.message.as_str()).unwrap_or_default()
                    )
                },
            );
            for e in &evs {
                d = d.evidence(event_line(e));
            }
            for w in &p.waiting {
                d = d.evidence(format!("waiting: {w}"));
            }
            if evs.iter().any(|e| e.message.contains("ReadWriteOncePod")) {
                d = d.help("ReadWriteOncePod claim held by the old pod: with maxUnavailable 0 this is a deadlock that never resolves by itself (the Deployment reads Available and Progressing until its progress deadline); use Recreate or a shared volume");
            } else if sched.iter().any(|e| e.message.contains("Insufficient")) {
                d = d.help("the surge pod needs room while the old pod still runs; free capacity or lower maxSurge (`bundlegate preflight` predicts this)");
            }
            diags.push(d);
        } else if p.crash_loop || (!p.ready && p.restarts > 0) {
            let mut d = Diagnostic::new(
                Code::RolloutIncomplete,
                format!(
                    "new pod {} is not ready: {} restart(s){}",
                    p.name,
                    p.restarts,
                    if p.crash_loop { ", CrashLoopBackOff" } else { "" }
                ),
            );
            for w in &p.waiting {
                d = d.evidence(format!("container {w}"));
            }
            for e in evs.iter().filter(|e| e.type_ == "Warning") {
                d = d.evidence(event_line(e));
            }
            diags.push(d.help("read the new pod's logs (`kubectl logs --previous`); the old pod keeps serving, so nothing else looks wrong"));
        }
    }
    diags
}

/// A ReplicaSet of the new release that wants pods but has none usually
/// carries the reason (quota, admission) in FailedCreate events.
fn replica_set_diagnostics(exp: &Expected, st: &ServiceState, new: &[&PodInfo]) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for rs in st.replica_sets.iter().filter(|r| r.digest.as_deref() == Some(exp.digest.as_str())) {
        let evs: Vec<&EventInfo> =
            events_for(st, "ReplicaSet", &rs.name).into_iter().filter(|e| e.type_ == "Warning").collect();
        if !evs.is_empty() && new.is_empty() {
            let mut d = Diagnostic::new(
                Code::RolloutIncomplete,
                format!("ReplicaSet {} of the new release could not create its pods", rs.name),
            );
            for e in evs {
                d = d.evidence(event_line(e));
            }
            diags.push(d);
        }
    }
    diags
}

/// BG501 for each Deployment past its progress deadline: the controller gave up.
fn deadline_diagnostics(st: &ServiceState) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for dep in &st.deployments {
        for c in &dep.conditions {
            if c.type_ == "Progressing" && c.reason.as_deref() == Some("ProgressDeadlineExceeded") {
                diags.push(
                    Diagnostic::new(Code::RolloutIncomplete, format!("Deployment {} exceeded its progress deadline", dep.name))
                        .evidence(format!("condition Progressing={} ProgressDeadlineExceeded: {}", c.status, c.message.as_deref().unwrap_or("")))
                        .help("ProgressDeadlineExceeded does not roll anything back: the old pods keep serving the old release"),
                );
            }
        }
    }
    diags
}

/// No new pod at all, or fewer ready than the replicas (BG501), or enough
/// only if pods of unknown standing serve (BG506). Only when nothing above is
/// already an error.
fn readiness_diagnostic(
    exp: &Expected,
    new: &[&PodInfo],
    ready_new: usize,
    unsure_new: &[&&PodInfo],
    diags: &[Diagnostic],
) -> Option<Diagnostic> {
    if new.is_empty() && !diags.iter().any(|d| d.message.contains("could not create")) {
        Some(Diagnostic::new(
            Code::RolloutIncomplete,
            format!("no pod runs the bundle's release {}", short(&exp.digest)),
        ))
    } else if ready_new < exp.replicas as usize && !diags.iter().any(is_error) {
        let msg = format!("{ready_new} of {} replica(s) of the new release are ready", exp.replicas);
        if ready_new + unsure_new.len() >= exp.replicas as usize {
            let mut d = Diagnostic::new(
                Code::RolloutEvidenceIncomplete,
                format!("{msg}; whether {} more serve cannot be told", unsure_new.len()),
            );
            for p in unsure_new {
                d = d.evidence(pod_line(p));
            }
            Some(d)
        } else {
            Some(Diagnostic::new(Code::RolloutIncomplete, msg))
        }
    } else {
        None
    }
}

/// The green signals, recorded next to the truth so a reader sees why they lied.
fn add_green_signals(st: &ServiceState, diags: &mut [Diagnostic]) {
    if diags.iter().any(is_error) {
        let mut greens = Vec::new();
        for dep in &st.deployments {
            let conds: Vec<String> = dep
                .conditions
                .iter()
                .map(|c| {
                    format!(
                        "{}={}{}",
                        c.type_,
                        c.status,
                        c.reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
                    )
                })
                .collect();
            greens.push(format!(
                "Deployment {}: replicas {} updated {} ready {} available {}; {}",
                dep.name,
                dep.replicas.map(|r| r.to_string()).unwrap_or_else(|| "-".into()),
                dep.updated,
                dep.ready,
                dep.available,
                conds.join(", ")
            ));
        }
        if let Some(first) = diags.iter_mut().find(|d| is_error(d)) {
            for g in greens {
                first.evidence.push(format!("what the Deployment says (not evidence): {g}"));
            }
        }
    }
}

/// Pods grouped by release digest, for the JSON data.
fn release_groups(exp: &Expected, st: &ServiceState) -> Vec<Value> {
    let mut groups: BTreeMap<String, Vec<&PodInfo>> = BTreeMap::new();
    for p in &st.pods {
        groups.entry(p.digest.clone().unwrap_or_else(|| "(none)".into())).or_default().push(p);
    }
    groups
        .iter()
        .map(|(d, ps)| {
            json!({
                "releaseDigest": d,
                "isBundleRelease": *d == exp.digest,
                "pods": ps.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
                "ready": ps.iter().filter(|p| p.ready).count(),
                "serving": ps.iter().filter(|p| standing(p) == PodStanding::Serving).count(),
            })
        })
        .collect()
}

/// One table row per pod (`POD_COLUMNS`).
fn pod_rows(exp: &Expected, st: &ServiceState) -> Vec<Vec<String>> {
    st.pods
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                match p.digest.as_deref() {
                    Some(d) if d == exp.digest => format!("new {}", short(d)),
                    Some(d) => format!("old {}", short(d)),
                    None => "unknown".into(),
                },
                format!("{}{}", p.phase, if p.terminating { " (terminating)" } else { "" }),
                p.ready.to_string(),
                p.restarts.to_string(),
                p.waiting.first().cloned().unwrap_or_default(),
                p.source.as_ref().map(|s| s.uri().to_string()).unwrap_or_else(|| "-".into()),
            ]
        })
        .collect()
}

pub(crate) const POD_COLUMNS: [&str; 7] = ["pod", "release", "phase", "ready", "restarts", "waiting", "model source"];

// ---- identity -----------------------------------------------------------------------------

/// Look up a dotted path (`a.b.0.c`) in a JSON document.
pub(crate) fn json_path<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for seg in path.split('.') {
        cur = match cur {
            Value::Object(m) => m.get(seg)?,
            Value::Array(a) => a.get(seg.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn norm_digest(s: &str) -> String {
    s.trim().strip_prefix("sha256:").unwrap_or(s.trim()).to_ascii_lowercase()
}

/// One expected identity field: the field, what it names, and the digest
/// (None when the bundle has no digest for that artifact).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IdentityExpectation {
    pub field: String,
    pub digest_of: String,
    pub expected: Option<String>,
}

/// Compare the identity endpoint's answer with the bundle. Digests compare
/// with or without the `sha256:` prefix; the registered field must be JSON
/// `true` (a string "true" is not a boolean answer).
pub(crate) fn check_identity(
    expect: &[IdentityExpectation],
    registered_field: Option<&str>,
    body: &Value,
) -> (Vec<Diagnostic>, Vec<Vec<String>>) {
    let mut diags = Vec::new();
    let mut rows = Vec::new();
    for e in expect {
        let got = json_path(body, &e.field);
        let got_s = got.map(|g| g.as_str().map(String::from).unwrap_or_else(|| g.to_string()));
        let ok = match (&e.expected, &got_s) {
            (Some(want), Some(g)) => norm_digest(want) == norm_digest(g),
            _ => false,
        };
        rows.push(vec![
            e.field.clone(),
            e.digest_of.clone(),
            e.expected.clone().unwrap_or_else(|| "(no sha256 in the bundle)".into()),
            got_s.clone().unwrap_or_else(|| "(missing)".into()),
            if ok { "ok".into() } else { "MISMATCH".into() },
        ]);
        if !ok {
            let msg = match (&e.expected, &got_s) {
                (None, _) => format!("`{}` cannot be checked: the bundle has no sha256 for `{}`", e.field, e.digest_of),
                (_, None) => format!("the identity response has no `{}`", e.field),
                (Some(w), Some(g)) => {
                    format!("the service reports `{}` = {g}, the bundle's {} is {w}", e.field, e.digest_of)
                }
            };
            diags.push(
                Diagnostic::new(Code::IdentityMismatch, msg)
                    .field("spec.serving.identity.expect")
                    .evidence(format!("response: {body}")),
            );
        }
    }
    if let Some(f) = registered_field {
        let got = json_path(body, f);
        let ok = got == Some(&Value::Bool(true));
        rows.push(vec![
            f.to_string(),
            "registered".into(),
            "true".into(),
            got.map(|g| g.to_string()).unwrap_or_else(|| "(missing)".into()),
            if ok { "ok".into() } else { "MISMATCH".into() },
        ]);
        if !ok {
            let mut d = Diagnostic::new(
                Code::IdentityMismatch,
                format!(
                    "the service reports `{f}` = {}: the release it serves is not registered",
                    got.map(|g| g.to_string()).unwrap_or_else(|| "(missing)".into())
                ),
            )
            .field("spec.serving.identity.registeredField")
            .evidence(format!("response: {body}"));
            if let Some(s) = body.get("status").and_then(Value::as_str) {
                d = d.evidence(format!("status: {s}"));
            }
            diags.push(d.help("register the release (model registry) so its evaluation metrics can be found; a manual promote skips this (a swapped release once served the right digest but reported itself UNREGISTERED, with no metrics)"));
        }
    }
    (diags, rows)
}

pub(crate) const IDENTITY_COLUMNS: [&str; 5] = ["field", "digest of", "expected", "reported", "result"];

/// One answer of the identity endpoint, `at_s` seconds into the watch
/// (Err: why there was no answer).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IdentitySample {
    pub at_s: f64,
    pub answer: Result<Value, String>,
}

/// The identity endpoint judged over every answer taken during the
/// stability window, not one: a Service whose endpoints alternate between
/// this release and another (a stale replica, a pod relabelled out of its
/// ReplicaSet but still routed) answers right part of the time.
#[derive(Debug, Clone)]
pub(crate) struct IdentityOverTime {
    /// The first wrong answer's findings (with the distribution as
    /// evidence), or none when every answer was right.
    pub diagnostics: Vec<Diagnostic>,
    /// The table of the first wrong answer, else of the last answer.
    pub rows: Vec<Vec<String>>,
    /// How many answers reported each value of the first expected field
    /// (`unanswered` for a request without an answer), in order of first sight.
    pub distribution: Vec<(String, usize)>,
    pub answered: usize,
    pub asked: usize,
}

pub(crate) fn identity_over_time(
    expect: &[IdentityExpectation],
    registered_field: Option<&str>,
    samples: &[IdentitySample],
) -> IdentityOverTime {
    let mut out = IdentityOverTime {
        diagnostics: Vec::new(),
        rows: Vec::new(),
        distribution: Vec::new(),
        answered: 0,
        asked: samples.len(),
    };
    let mut wrong = 0usize;
    let mut first_wrong_at = None;
    for s in samples {
        let key = match &s.answer {
            Ok(body) => {
                out.answered += 1;
                let (diags, rows) = check_identity(expect, registered_field, body);
                if !diags.is_empty() {
                    wrong += 1;
                    if out.diagnostics.is_empty() {
                        out.diagnostics = diags;
                        out.rows = rows;
                        first_wrong_at = Some(s.at_s);
                    }
                } else if wrong == 0 {
                    out.rows = rows;
                }
                let field = expect.first().map(|e| e.field.as_str()).or(registered_field).unwrap_or("");
                json_path(body, field)
                    .map(|g| g.as_str().map(String::from).unwrap_or_else(|| g.to_string()))
                    .unwrap_or_else(|| "(missing)".into())
            }
            Err(_) => "unanswered".to_string(),
        };
        match out.distribution.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => out.distribution.push((key, 1)),
        }
    }
    if let (Some(first), Some(at)) = (out.diagnostics.first_mut(), first_wrong_at) {
        let dist = out.distribution.iter().map(|(k, n)| format!("{k} ×{n}")).collect::<Vec<_>>().join(", ");
        first.evidence.insert(
            0,
            format!(
                "{wrong} of {} answer(s) over the window were wrong, the first at {at:.1}s; answers: {dist}",
                out.answered
            ),
        );
    }
    out
}

// ---- downtime -------------------------------------------------------------------------------

/// One health probe: seconds since the probe started, and whether it got a 2xx.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ProbeSample {
    pub at_s: f64,
    pub ok: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DowntimeStats {
    pub ok: usize,
    pub fail: usize,
    /// Longest time without service: from the last ok before a failure run to
    /// the next ok (or to the first failure when the service never answered
    /// before, or to the end when it never recovered).
    pub longest_gap_s: f64,
    /// The longest gap had not ended when probing stopped.
    pub gap_open: bool,
    pub fail_runs: usize,
}

pub(crate) fn downtime(samples: &[ProbeSample], end_s: f64) -> DowntimeStats {
    let ok = samples.iter().filter(|s| s.ok).count();
    let fail = samples.len() - ok;
    let mut longest = 0f64;
    let mut open = false;
    let mut runs = 0;
    let mut last_ok: Option<f64> = None;
    let mut run_start: Option<f64> = None;
    for s in samples {
        if s.ok {
            if let Some(start) = run_start.take() {
                // A closed gap; only the one still open at the end sets `open`.
                longest = longest.max(s.at_s - last_ok.unwrap_or(start));
            }
            last_ok = Some(s.at_s);
        } else if run_start.is_none() {
            run_start = Some(s.at_s);
            runs += 1;
        }
    }
    if let Some(start) = run_start {
        let gap = end_s - last_ok.unwrap_or(start);
        if gap > longest {
            longest = gap;
            open = true;
        }
    }
    DowntimeStats { ok, fail, longest_gap_s: longest, gap_open: open, fail_runs: runs }
}

/// Most time spans of the probe timeline (the report's chart).
const PROBE_SPANS: usize = 24;

/// The probes in at most [`PROBE_SPANS`] equal spans of `[0, end_s]`:
/// `fromSeconds`, `toSeconds`, `ok`, `fail` each; none without a probe.
pub(crate) fn probe_spans(samples: &[ProbeSample], end_s: f64) -> Vec<Value> {
    let end = samples.iter().map(|s| s.at_s).fold(end_s, f64::max);
    if samples.is_empty() || !end.is_finite() || end <= 0.0 {
        return Vec::new();
    }
    // Whole seconds per span, at least one: a short watch has fewer spans.
    let width = (end / PROBE_SPANS as f64).ceil().max(1.0);
    let n = ((end / width).ceil() as usize).clamp(1, PROBE_SPANS);
    let mut spans = vec![(0usize, 0usize); n];
    for s in samples {
        let i = ((s.at_s.max(0.0) / width) as usize).min(n - 1);
        if s.ok {
            spans[i].0 += 1;
        } else {
            spans[i].1 += 1;
        }
    }
    spans
        .iter()
        .enumerate()
        .map(|(i, (ok, fail))| json!({"fromSeconds": i as f64 * width, "toSeconds": ((i + 1) as f64 * width).min(end.ceil()), "ok": ok, "fail": fail}))
        .collect()
}

pub(crate) fn downtime_diagnostic(st: &DowntimeStats, url: &str) -> Option<Diagnostic> {
    (st.fail > 0).then(|| {
        Diagnostic::new(
            Code::DowntimeMeasured,
            format!(
                "{} of {} health probes failed during the rollout; longest gap {:.1}s{}",
                st.fail,
                st.ok + st.fail,
                st.longest_gap_s,
                if st.gap_open { " (still failing when probing stopped)" } else { "" }
            ),
        )
        .evidence(format!("RESULT ok={} fail={} ({url})", st.ok, st.fail))
        .evidence(format!("{} failure run(s)", st.fail_runs))
        .help("a rolling update with maxUnavailable 0 should not drop requests; `delete pod -l` or too few replicas does (on a one-replica service it once gave 208 ok / 42 fail, about 13 s down)")
    })
}

/// The drift audit's serving judgment: do the live pods of `service`
/// (namespace/name) run this release? Adds to [`compare_serving`]: a
/// service whose pods are all terminal serves nothing, and one with no
/// ready pod of this release does not serve it, unless such a pod is on a
/// node that stopped reporting (then the evidence is incomplete). Returns
/// the diagnostics and how many pods serve this release.
pub(crate) fn serving_diagnostics(exp: &Expected, service: &str, st: &ServiceState) -> (Vec<Diagnostic>, usize) {
    let mut diags = compare_serving(exp, &st.pods, &st.replica_sets);
    // Terminal pods (an Evicted one kept until pod GC) are not live.
    if st.pods.iter().all(|p| standing(p) == PodStanding::Terminal) {
        diags.push(Diagnostic::new(Code::RolloutIncomplete, format!("no pod of {service} is running")));
    }
    let this = |p: &&PodInfo| p.digest.as_deref() == Some(exp.digest.as_str());
    let matching = st.pods.iter().filter(this).filter(|p| standing(p) == PodStanding::Serving).count();
    if matching == 0 && !diags.iter().any(|d| d.severity == crate::diag::Severity::Error) {
        let unknown = st.pods.iter().filter(this).any(|p| standing(p) == PodStanding::Unknown);
        let code = if unknown { Code::RolloutEvidenceIncomplete } else { Code::RolloutIncomplete };
        diags.push(Diagnostic::new(code, format!("no ready pod of {service} runs this release")));
    }
    (diags, matching)
}

#[cfg(test)]
mod tests {

    /// Argo CD's own LLMInferenceService cases (its fixtures, kept with
    /// their commit in tests/fixtures/argocd-health/llmisvc): the watch
    /// takes an object's status as serving only where Argo's check says
    /// Healthy, and calls it failing (BG501) only where Argo's says
    /// Degraded (a stopped one serves nothing by an operator's choice:
    /// BG506, never a revert).
    #[test]
    fn the_watch_is_never_more_lenient_than_argos_check_on_argos_cases() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/argocd-health/llmisvc");
        let read =
            |p: &std::path::Path| -> Value { serde_yaml_ng::from_str(&std::fs::read_to_string(p).unwrap()).unwrap() };
        let tests = read(&dir.join("health_test.yaml"));
        let mut seen = 0;
        for t in tests["tests"].as_array().unwrap() {
            let obj = read(&dir.join(t["inputPath"].as_str().unwrap()));
            let argo = t["healthStatus"]["status"].as_str().unwrap();
            let w = super::super::state::WorkloadStatus::of(
                "LLMInferenceService",
                obj["metadata"]["name"].as_str().unwrap_or_default(),
                obj["metadata"]["generation"].as_i64(),
                obj.get("status"),
            );
            let st = ServiceState { workload_status: Some(w), ..Default::default() };
            let codes: Vec<&str> = workload_status_diagnostics(&st).iter().map(|d| d.code.as_str()).collect();
            let file = t["inputPath"].as_str().unwrap();
            if codes.is_empty() {
                assert_eq!(argo, "Healthy", "{file}: the watch accepts a status Argo's check calls {argo}");
            }
            if codes.contains(&"BG501") {
                assert_eq!(argo, "Degraded", "{file}: the watch fails a status Argo's check calls {argo}");
            }
            seen += 1;
        }
        assert!(seen >= 5, "Argo's cases were read ({seen})");
    }

    /// An LLMInferenceService's own status, in the states KServe v0.20's
    /// controller writes: only a current, all-True status is no finding;
    /// stale or undecided is BG506 (never a revert); False is BG501.
    #[test]
    fn the_llm_inference_services_own_status_is_read_as_strictly_as_argo_reads_it() {
        use super::super::state::WorkloadStatus;
        let cond = |t: &str, s: &str, reason: &str, g: Option<i64>| ConditionInfo {
            type_: t.into(),
            status: s.into(),
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            message: None,
            observed_generation: g,
        };
        let at = |generation: Option<i64>, observed: Option<i64>, conditions: Vec<ConditionInfo>| ServiceState {
            workload_status: Some(WorkloadStatus {
                kind: "LLMInferenceService".into(),
                name: "m".into(),
                generation,
                observed_generation: observed,
                conditions,
            }),
            ..Default::default()
        };
        let codes =
            |st: &ServiceState| workload_status_diagnostics(st).iter().map(|d| d.code.as_str()).collect::<Vec<_>>();
        let all_true = vec![
            cond("Ready", "True", "", Some(2)),
            cond("WorkloadsReady", "True", "", None),
            cond("RouterReady", "True", "", None),
        ];
        assert!(codes(&at(Some(2), Some(2), all_true.clone())).is_empty());
        assert!(codes(&ServiceState::default()).is_empty(), "other kinds: nothing read, nothing said");
        // A status written for the previous spec, or none yet.
        assert_eq!(codes(&at(Some(3), Some(2), all_true.clone())), ["BG506"]);
        assert_eq!(codes(&at(Some(2), None, all_true.clone())), ["BG506"]);
        assert_eq!(codes(&at(Some(2), Some(2), vec![])), ["BG506"]);
        // Ready's own observedGeneration stale.
        let mut stale = all_true.clone();
        stale[0].observed_generation = Some(1);
        assert_eq!(codes(&at(Some(2), Some(2), stale)), ["BG506"]);
        // Undecided: Ready Unknown, or Ready True with a dependent Unknown.
        let mut unknown = all_true.clone();
        unknown[0].status = "Unknown".into();
        assert_eq!(codes(&at(Some(2), Some(2), unknown)), ["BG506"]);
        let mut dependent = all_true.clone();
        dependent[2].status = "Unknown".into();
        assert_eq!(codes(&at(Some(2), Some(2), dependent)), ["BG506"]);
        // The controller says it fails: Ready False, or a dependent False beside a Ready True.
        let mut router = all_true.clone();
        router[0] = cond("Ready", "False", "RouterNotReady", Some(2));
        router[2] = cond("RouterReady", "False", "GatewayNotAccepted", None);
        let d = workload_status_diagnostics(&at(Some(2), Some(2), router));
        assert_eq!(d.iter().map(|d| d.code.as_str()).collect::<Vec<_>>(), ["BG501"]);
        assert!(d[0].message.contains("RouterReady is False (GatewayNotAccepted)"), "{}", d[0].message);
        let mut workloads = all_true;
        workloads[1] = cond("WorkloadsReady", "False", "MinimumReplicasUnavailable", None);
        assert_eq!(codes(&at(Some(2), Some(2), workloads)), ["BG501"]);
    }

    use super::super::state::*;
    use super::*;

    #[test]
    fn downtime_gap_spans_last_ok_to_next_ok() {
        let s = |at_s, ok| ProbeSample { at_s, ok };
        let st = downtime(&[s(0.0, true), s(0.3, true), s(0.6, false), s(0.9, false), s(1.2, true), s(1.5, true)], 1.6);
        assert_eq!((st.ok, st.fail, st.fail_runs), (4, 2, 1));
        assert!((st.longest_gap_s - 0.9).abs() < 1e-9, "{st:?}");
        assert!(!st.gap_open);
        let st = downtime(&[s(0.0, true), s(0.3, false)], 2.0);
        assert!(st.gap_open && (st.longest_gap_s - 2.0).abs() < 1e-9);
        let st = downtime(&[s(0.0, true), s(0.3, true)], 0.4);
        assert_eq!((st.fail, st.longest_gap_s), (0, 0.0));
        assert!(downtime_diagnostic(&st, "u").is_none());
    }

    /// A gap still open when probing stopped runs to the end; of two equal
    /// gaps the earlier, closed one is the one reported; no failed probe is
    /// no finding.
    #[test]
    fn downtime_open_and_equal_gaps_and_no_failure() {
        let s = |at_s, ok| ProbeSample { at_s, ok };
        let st = downtime(&[s(2.0, true), s(3.0, false), s(4.0, false)], 9.0);
        assert_eq!((st.longest_gap_s, st.gap_open, st.fail_runs), (7.0, true, 1));
        let d = downtime_diagnostic(&st, "http://svc/health").expect("failed probes are a finding");
        assert!(
            d.message.contains("2 of 3 health probes failed") && d.message.contains("7.0s (still failing"),
            "{}",
            d.message
        );
        let st = downtime(&[s(0.0, true), s(1.0, false), s(2.0, true), s(3.0, false)], 4.0);
        assert_eq!((st.longest_gap_s, st.gap_open, st.fail_runs), (2.0, false, 2));
        let st = downtime(&[s(0.0, true), s(1.0, true)], 2.0);
        assert_eq!((st.ok, st.fail, st.longest_gap_s), (2, 0, 0.0));
        assert!(downtime_diagnostic(&st, "u").is_none());
    }

    /// The drift audit's serving judgment on the cases it adds to
    /// `compare_serving`: nothing running, the release ready, and a pod of
    /// the release on a node that stopped reporting (INCONCLUSIVE, not FAIL).
    #[test]
    fn serving_judgment_of_the_audit() {
        let exp = exp1();
        let st = |pods: Vec<PodInfo>| ServiceState { pods, ..Default::default() };
        let codes = |d: &[Diagnostic]| d.iter().map(|d| d.code).collect::<Vec<_>>();
        let (d, n) = serving_diagnostics(&exp, "ns/m", &st(vec![pod("a", "sha256:new", "Failed", false, false)]));
        assert_eq!(n, 0);
        assert!(
            d.iter().any(|d| d.code == Code::RolloutIncomplete && d.message == "no pod of ns/m is running"),
            "{d:?}"
        );
        let (d, n) = serving_diagnostics(&exp, "ns/m", &st(vec![pod("a", "sha256:new", "Running", true, false)]));
        assert_eq!((codes(&d), n), (vec![], 1));
        let (d, n) = serving_diagnostics(&exp, "ns/m", &st(vec![pod("a", "sha256:new", "Unknown", true, false)]));
        assert_eq!(n, 0);
        assert!(
            d.iter().any(|d| d.code == Code::RolloutEvidenceIncomplete && d.message.contains("no ready pod of ns/m")),
            "{d:?}"
        );
        assert!(!d.iter().any(|d| d.code == Code::RolloutIncomplete), "{d:?}");
        let (d, n) = serving_diagnostics(&exp, "ns/m", &st(vec![pod("a", "sha256:new", "Pending", false, false)]));
        assert_eq!(n, 0);
        assert!(d.iter().any(|d| d.code == Code::RolloutIncomplete), "{d:?}");
    }

    #[test]
    fn identity_accepts_prefix_or_not_and_needs_registered_true() {
        let exp = vec![IdentityExpectation {
            field: "a.digest".into(),
            digest_of: "release".into(),
            expected: Some("sha256:ABCD".into()),
        }];
        let (d, _) = check_identity(&exp, Some("in_registry"), &json!({"a": {"digest": "abcd"}, "in_registry": true}));
        assert!(d.is_empty(), "{d:?}");
        let (d, _) =
            check_identity(&exp, Some("in_registry"), &json!({"a": {"digest": "sha256:abce"}, "in_registry": "true"}));
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|x| x.code == "BG502"));
    }

    #[test]
    fn old_ready_pod_and_crashloop_new_pod_is_incomplete() {
        let exp = Expected {
            digest: "sha256:new".into(),
            storage_uri: "s3://m/v2/".into(),
            kserve: true,
            workload: "InferenceService",
            replicas: 1,
        };
        let st = ServiceState {
            pods: vec![
                PodInfo {
                    name: "old".into(),
                    digest: Some("sha256:old".into()),
                    phase: "Running".into(),
                    ready: true,
                    source: Some(ModelSource::StorageInitializer { uri: "s3://m/v1/".into() }),
                    ..Default::default()
                },
                PodInfo {
                    name: "new".into(),
                    digest: Some("sha256:new".into()),
                    phase: "Running".into(),
                    restarts: 6,
                    crash_loop: true,
                    source: Some(ModelSource::StorageInitializer { uri: "s3://m/v2".into() }),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp, &st);
        assert!(!o.complete);
        assert!(o.diagnostics.iter().any(|d| d.message.contains("CrashLoopBackOff")));
        assert!(o.diagnostics.iter().any(|d| d.message.contains("another release")));
        // Only the new pod, ready, right source: complete.
        let st2 = ServiceState {
            pods: vec![PodInfo { ready: true, crash_loop: false, restarts: 0, ..st.pods[1].clone() }],
            ..Default::default()
        };
        assert!(evaluate_rollout(&exp, &st2).complete);
        // Right digest, wrong source: not complete.
        let st3 = ServiceState {
            pods: vec![PodInfo {
                source: Some(ModelSource::StorageInitializer { uri: "s3://m/v1/".into() }),
                ..st2.pods[0].clone()
            }],
            ..Default::default()
        };
        assert!(!evaluate_rollout(&exp, &st3).complete);
    }

    fn pod(name: &str, digest: &str, phase: &str, ready: bool, terminating: bool) -> PodInfo {
        PodInfo {
            name: name.into(),
            digest: Some(digest.into()),
            phase: phase.into(),
            ready,
            terminating,
            source: Some(ModelSource::StorageInitializer {
                uri: if digest == "sha256:new" { "s3://m/v2/" } else { "s3://m/v1/" }.into(),
            }),
            ..Default::default()
        }
    }

    fn event(kind: &str, object: &str, type_: &str, reason: &str, message: &str, count: i32) -> EventInfo {
        EventInfo {
            kind: kind.into(),
            object: object.into(),
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
            count,
        }
    }

    fn exp1() -> Expected {
        Expected {
            digest: "sha256:new".into(),
            storage_uri: "s3://m/v2/".into(),
            kserve: true,
            workload: "InferenceService",
            replicas: 1,
        }
    }

    use crate::report::Verdict;

    /// One ready new pod plus one old pod in every phase × readiness ×
    /// terminating: only an old pod that is Running and Ready (not being
    /// deleted) fails; phase Unknown cannot decide; everything else passes.
    #[test]
    fn old_pod_phase_readiness_terminating_table() {
        let cases: &[(&str, bool, bool, Verdict)] = &[
            ("Running", true, false, Verdict::Fail),
            ("Running", false, false, Verdict::Pass),
            ("Running", true, true, Verdict::Pass),
            ("Running", false, true, Verdict::Pass),
            ("Pending", false, false, Verdict::Pass),
            ("Pending", false, true, Verdict::Pass),
            // Evicted: phase Failed, kept until pod GC; a stale Ready=True too.
            ("Failed", false, false, Verdict::Pass),
            ("Failed", true, false, Verdict::Pass),
            ("Failed", false, true, Verdict::Pass),
            ("Succeeded", false, false, Verdict::Pass),
            ("Succeeded", true, false, Verdict::Pass),
            ("Unknown", true, false, Verdict::Inconclusive),
            ("Unknown", false, false, Verdict::Inconclusive),
            ("", false, false, Verdict::Inconclusive),
            // Terminating wins over Unknown: it is out of the endpoints.
            ("Unknown", true, true, Verdict::Pass),
        ];
        for (phase, ready, terminating, want) in cases {
            let st = ServiceState {
                pods: vec![
                    pod("new", "sha256:new", "Running", true, false),
                    pod("old", "sha256:old", phase, *ready, *terminating),
                ],
                ..Default::default()
            };
            let o = evaluate_rollout(&exp1(), &st);
            let got = verdict_of(&o.diagnostics);
            assert_eq!(
                got, *want,
                "old pod phase={phase:?} ready={ready} terminating={terminating}: {:#?}",
                o.diagnostics
            );
            assert_eq!(o.complete, *want == Verdict::Pass, "{phase} {ready} {terminating}");
            // The audit's comparison agrees with watch on the old pod.
            assert_eq!(
                verdict_of(&compare_serving(&exp1(), &st.pods, &[])),
                *want,
                "compare_serving {phase} {ready} {terminating}"
            );
            // A pod that does not fail is still reported, never silently dropped.
            if *want == Verdict::Pass {
                assert!(
                    o.diagnostics.iter().any(|d| d.code == "BG507" && d.evidence.iter().any(|e| e.contains("pod old"))),
                    "{:#?}",
                    o.diagnostics
                );
            }
        }
    }

    /// The new release's pods in every phase × readiness × terminating, with
    /// no old pod: PASS only with one Running+Ready new pod; a ready new pod
    /// that is terminating or Unknown cannot decide; Pending or not ready fails.
    #[test]
    fn new_pod_phase_readiness_terminating_table() {
        let cases: &[(&str, bool, bool, u32, Verdict)] = &[
            ("Running", true, false, 0, Verdict::Pass),
            ("Running", false, false, 0, Verdict::Fail),
            ("Running", false, false, 3, Verdict::Fail),
            ("Pending", false, false, 0, Verdict::Fail),
            ("Running", true, true, 0, Verdict::Inconclusive),
            ("Unknown", true, false, 0, Verdict::Inconclusive),
            ("Unknown", false, false, 0, Verdict::Inconclusive),
            ("Running", false, true, 0, Verdict::Fail),
            ("Failed", true, false, 0, Verdict::Fail),
            ("Succeeded", false, false, 0, Verdict::Fail),
        ];
        for (phase, ready, terminating, restarts, want) in cases {
            let st = ServiceState {
                pods: vec![PodInfo { restarts: *restarts, ..pod("new", "sha256:new", phase, *ready, *terminating) }],
                ..Default::default()
            };
            let o = evaluate_rollout(&exp1(), &st);
            assert_eq!(
                verdict_of(&o.diagnostics),
                *want,
                "new pod phase={phase:?} ready={ready} terminating={terminating}: {:#?}",
                o.diagnostics
            );
        }
        // An Evicted new pod next to its ready replacement is history.
        let st = ServiceState {
            pods: vec![
                pod("new-a", "sha256:new", "Failed", false, false),
                pod("new-b", "sha256:new", "Running", true, false),
            ],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp1(), &st);
        assert!(o.complete, "{:#?}", o.diagnostics);
        assert!(o.diagnostics.iter().any(|d| d.code == "BG507"));
        // A crash-looping new pod fails even while it is being deleted.
        let st = ServiceState {
            pods: vec![PodInfo { crash_loop: true, restarts: 5, ..pod("new", "sha256:new", "Running", false, true) }],
            ..Default::default()
        };
        assert_eq!(verdict_of(&evaluate_rollout(&exp1(), &st).diagnostics), Verdict::Fail);
    }

    /// Old pods judged with their ReplicaSet: ready pods of an RS scaled to 0
    /// are being removed (cannot decide), not-ready pods of an RS that still
    /// wants pods may come back (cannot decide), not-ready pods of an RS at 0
    /// are history, ready pods of an RS that wants pods are serving.
    #[test]
    fn old_pod_owner_replicaset_table() {
        let cases: &[(bool, i32, Verdict)] = &[
            (true, 1, Verdict::Fail),
            (true, 0, Verdict::Inconclusive),
            (false, 1, Verdict::Inconclusive),
            (false, 0, Verdict::Pass),
        ];
        for (ready, rs_replicas, want) in cases {
            let old = PodInfo { owner: Some("svc-old".into()), ..pod("old", "sha256:old", "Running", *ready, false) };
            let st = ServiceState {
                pods: vec![pod("new", "sha256:new", "Running", true, false), old],
                replica_sets: vec![ReplicaSetInfo {
                    name: "svc-old".into(),
                    digest: Some("sha256:old".into()),
                    replicas: *rs_replicas,
                    ready: 0,
                }],
                ..Default::default()
            };
            let o = evaluate_rollout(&exp1(), &st);
            assert_eq!(
                verdict_of(&o.diagnostics),
                *want,
                "ready={ready} rs replicas={rs_replicas}: {:#?}",
                o.diagnostics
            );
            // The finding says which: could not tell (BG506) or history (BG507).
            let codes: Vec<Code> = o.diagnostics.iter().map(|d| d.code).collect();
            match want {
                Verdict::Inconclusive => assert!(codes.contains(&Code::RolloutEvidenceIncomplete), "{codes:?}"),
                Verdict::Pass => assert!(codes.contains(&Code::PodsNotServing), "{codes:?}"),
                _ => assert!(codes.contains(&Code::RolloutIncomplete), "{codes:?}"),
            }
        }
    }

    /// Init-container states: a new pod still initialising (storage-initializer
    /// downloading) is Pending and fails only because the window ended; one
    /// whose init container crash-loops fails with the reason.
    #[test]
    fn new_pod_init_container_states() {
        let mut p = pod("new", "sha256:new", "Pending", false, false);
        p.waiting = vec!["kserve-container: PodInitializing".into()];
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p.clone()], ..Default::default() });
        assert!(
            o.diagnostics.iter().any(|d| d.code == "BG501" && d.message.contains("is Pending")),
            "{:#?}",
            o.diagnostics
        );
        p.crash_loop = true;
        p.restarts = 4;
        p.waiting = vec!["storage-initializer: CrashLoopBackOff (back-off 40s)".into()];
        p.phase = "Pending".into();
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p], ..Default::default() });
        assert_eq!(verdict_of(&o.diagnostics), Verdict::Fail);
        assert!(
            o.diagnostics
                .iter()
                .any(|d| d.evidence.iter().any(|e| e.contains("storage-initializer: CrashLoopBackOff"))),
            "{:#?}",
            o.diagnostics
        );
    }

    #[test]
    fn a_digest_is_shortened_by_characters() {
        assert_eq!(short("sha256:0123456789abcdef"), "sha256:0123456789ab");
        assert_eq!(short("0123"), "sha256:0123");
        // Eleven ASCII bytes, then a two-byte character across byte 12.
        assert_eq!(short("sha256:0123456789aé12"), "sha256:0123456789aé");
        let mut p = pod("x", "sha256:0123456789aé12", "Running", true, false);
        p.source = None;
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p], ..Default::default() });
        // (The pod's row used to panic here.)
        assert!(o.rows.iter().flatten().any(|c| c == "old sha256:0123456789aé"), "{:?}", o.rows);
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(proptest::test_runner::Config::default().cases))]
        /// Any text a pod reports as its digest is shortened without a
        /// panic, to a prefix of at most 12 characters.
        #[test]
        fn any_reported_digest_is_shortened_to_a_prefix(d in "(sha256:)?\\PC{0,20}") {
            let s = short(&d);
            let hex = d.strip_prefix("sha256:").unwrap_or(&d);
            let kept = s.strip_prefix("sha256:").unwrap();
            proptest::prop_assert!(hex.starts_with(kept) && kept.chars().count() == hex.chars().count().min(12));
        }
    }

    /// A new pod whose verifier refused its files: its own finding
    /// (pod-artifact-mismatch), named per line of the verifier's termination message.
    #[test]
    fn a_verifier_refusal_is_its_own_finding_per_artifact() {
        let mut p = pod("new", "sha256:new", "Pending", false, false);
        p.verifier = Some("tokenizer.json: sha256 differs\nconfig.json: size 10, bundle says 12".into());
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p], ..Default::default() });
        let d = o.diagnostics.iter().find(|d| d.code == Code::PodArtifactMismatch).expect("the refusal is reported");
        assert!(
            d.message.contains("new pod new refused its model files: tokenizer.json: sha256 differs"),
            "{}",
            d.message
        );
        assert_eq!(d.evidence.iter().filter(|e| e.starts_with(VERIFIER_CONTAINER)).count(), 2, "{:?}", d.evidence);
        assert_eq!(verdict_of(&o.diagnostics), Verdict::Fail);
    }

    /// The adapter's reading of a pod (`adapters::kube::pod_info`), not a
    /// hand-made `PodInfo`: a new pod whose only trouble is its
    /// storage-initializer crash-looping (the main container just waits in
    /// PodInitializing) fails naming that init container, its restarts and
    /// last exit; and the model source is read from the init container's
    /// args, not from the main container's rewritten STORAGE_URI.
    #[cfg(feature = "cli")]
    #[test]
    fn init_container_evidence_is_read_from_the_pod() {
        let kube_pod = |uri: &str, init_status: Value, main_status: Value, ready: bool| {
            let p: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
                "metadata": {"name": "isvc-predictor-1", "annotations": {crate::bundle::ANNOTATION_DIGEST: "sha256:new"}},
                "spec": {
                    "initContainers": [{"name": STORAGE_INITIALIZER, "image": "kserve/storage-initializer", "args": [uri, "/mnt/models"]}],
                    "containers": [{"name": "kserve-container", "env": [{"name": "STORAGE_URI", "value": "/mnt/models"}]}]
                },
                "status": {
                    "phase": if ready { "Running" } else { "Pending" },
                    "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
                    "initContainerStatuses": [init_status],
                    "containerStatuses": [main_status]
                }
            }))
            .unwrap();
            crate::adapters::kube::pod_info(&p, "isvc")
        };
        let status = |name: &str, ready: bool, restarts: i32, state: Value, last: Value| json!({"name": name, "ready": ready, "restartCount": restarts, "image": "i", "imageID": "", "state": state, "lastState": last});
        let crashing = status(
            STORAGE_INITIALIZER,
            false,
            4,
            json!({"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s"}}),
            json!({"terminated": {"exitCode": 1, "reason": "Error"}}),
        );
        let initializing =
            status("kserve-container", false, 0, json!({"waiting": {"reason": "PodInitializing"}}), json!({}));
        let p = kube_pod("s3://m/v2/", crashing, initializing, false);
        assert_eq!(p.source, Some(ModelSource::StorageInitializer { uri: "s3://m/v2/".into() }));
        assert!(p.crash_loop && p.restarts == 4, "{p:#?}");
        for w in [
            "storage-initializer: CrashLoopBackOff (back-off 40s)",
            "storage-initializer: last terminated Error (exit 1)",
        ] {
            assert!(p.waiting.iter().any(|x| x == w), "{w}: {:?}", p.waiting);
        }
        let c = p.containers.iter().find(|c| c.name == STORAGE_INITIALIZER).expect("init container restarts kept");
        assert_eq!((c.restarts, c.last_exit_code), (4, Some(1)));
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p], ..Default::default() });
        assert_eq!(verdict_of(&o.diagnostics), Verdict::Fail);
        assert!(
            o.diagnostics.iter().any(|d| d.code == "BG501"
                && d.evidence.iter().any(|e| e.contains("storage-initializer: CrashLoopBackOff (back-off 40s)"))),
            "{:#?}",
            o.diagnostics
        );
        // Done initialising, ready, but the initializer downloaded another release's files.
        let done = status(
            STORAGE_INITIALIZER,
            true,
            0,
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}}),
            json!({}),
        );
        let running = status("kserve-container", true, 0, json!({"running": {}}), json!({}));
        let p = kube_pod("s3://m/v1/", done, running, true);
        assert!(p.waiting.is_empty() && !p.crash_loop, "{p:#?}");
        let o = evaluate_rollout(&exp1(), &ServiceState { pods: vec![p], ..Default::default() });
        let wrong = o.diagnostics.iter().find(|d| d.message.contains("reads its model from s3://m/v1/"));
        let wrong = wrong.unwrap_or_else(|| panic!("{:#?}", o.diagnostics));
        assert_eq!(wrong.code, "BG501");
        assert!(
            wrong.evidence.iter().any(|e| e == "initContainers[storage-initializer].args[0] = s3://m/v1/"),
            "{wrong:#?}"
        );
    }

    /// Only the events about the pod itself (kind and name both) are quoted
    /// as its evidence, each as one line with its repeat count when above 1.
    #[test]
    fn a_pods_evidence_quotes_its_own_events() {
        let ev = |kind: &str, object: &str, reason: &str, message: &str, count: i32| {
            event(kind, object, "Warning", reason, message, count)
        };
        let st = ServiceState {
            pods: vec![pod("new", "sha256:new", "Pending", false, false)],
            events: vec![
                ev("Pod", "new", "FailedScheduling", "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", 3),
                ev("Pod", "new", "FailedMount", "once", 1),
                // Same name, another kind; same kind, another name: not this pod's.
                ev("ReplicaSet", "new", "FailedCreate", "quota", 1),
                ev("Pod", "other", "FailedScheduling", "someone else's", 1),
            ],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp1(), &st);
        let d = o.diagnostics.iter().find(|d| d.message.contains("cannot be scheduled")).expect("pending finding");
        assert_eq!(
            d.message,
            "new pod new is Pending and cannot be scheduled: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
        );
        assert_eq!(
            &d.evidence[..2],
            [
                "Warning FailedScheduling new: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. (×3)",
                "Warning FailedMount new: once",
            ]
        );
        assert!(!d.evidence.iter().any(|e| e.contains("quota") || e.contains("someone else")), "{d:#?}");
        assert!(d.help.iter().any(|h| h.contains("lower maxSurge")), "{d:#?}");
        // A ReplicaSet's FailedCreate is its own finding, only while no new pod exists.
        let st = ServiceState {
            replica_sets: vec![ReplicaSetInfo {
                name: "new".into(),
                digest: Some("sha256:new".into()),
                replicas: 1,
                ready: 0,
            }],
            ..st
        };
        let lines = |st: &ServiceState| -> Vec<String> {
            evaluate_rollout(&exp1(), st)
                .diagnostics
                .iter()
                .filter(|d| d.message.contains("could not create its pods"))
                .flat_map(|d| d.evidence.clone())
                .collect()
        };
        assert!(lines(&st).is_empty());
        let empty = ServiceState { pods: vec![], ..st };
        assert_eq!(lines(&empty), ["Warning FailedCreate new: quota"]);
        // ...and then "no pod runs the release" is not said a second time.
        let o = evaluate_rollout(&exp1(), &empty);
        assert!(!o.diagnostics.iter().any(|d| d.message.starts_with("no pod runs")), "{:#?}", o.diagnostics);
    }

    /// A new-release pod whose model source this tool cannot read: undecided
    /// for a KServe format (where the initializer must name the URI), nothing
    /// to say for a plain Deployment. A terminal one is not read at all.
    #[test]
    fn an_unreadable_model_source_is_undecided_only_where_kserve_wires_it() {
        let mut p = pod("new", "sha256:new", "Running", true, false);
        p.source = None;
        let kserve = compare_serving(&exp1(), std::slice::from_ref(&p), &[]);
        assert_eq!(verdict_of(&kserve), Verdict::Inconclusive, "{kserve:#?}");
        assert!(kserve[0].message.contains("pod new: its model source cannot be read"), "{kserve:#?}");
        let plain = Expected { kserve: false, ..exp1() };
        assert!(compare_serving(&plain, std::slice::from_ref(&p), &[]).is_empty());
        // A wrong source on a terminal pod is history, not a finding.
        let mut gone = pod("gone", "sha256:new", "Failed", false, false);
        gone.source = Some(ModelSource::StorageInitializer { uri: "s3://m/v1/".into() });
        let out = compare_serving(&exp1(), &[gone.clone()], &[]);
        assert!(!out.iter().any(|d| d.message.contains("reads its model from")), "{out:#?}");
        // ...but on a live one it fails; a trailing slash is the same URI.
        gone.phase = "Running".into();
        gone.ready = true;
        assert_eq!(verdict_of(&compare_serving(&exp1(), &[gone.clone()], &[])), Verdict::Fail);
        gone.source = Some(ModelSource::StorageInitializer { uri: " s3://m/v2".into() });
        assert!(compare_serving(&exp1(), &[gone], &[]).is_empty());
    }

    /// An old pod that routing shows takes no traffic is history, even when
    /// its ReplicaSet still wants pods (it is not "not ready"); the same pod
    /// with routing unknown is still waited for.
    #[test]
    fn an_unrouted_old_pod_is_history_whatever_its_replicaset_wants() {
        let rs = ReplicaSetInfo { name: "svc-old".into(), digest: Some("sha256:old".into()), replicas: 1, ready: 1 };
        for (ready, routed, want) in [
            (true, Some(false), Verdict::Pass),
            (false, Some(false), Verdict::Pass),
            (false, None, Verdict::Inconclusive),
            (true, None, Verdict::Fail),
            (true, Some(true), Verdict::Fail),
        ] {
            let old =
                PodInfo { owner: Some("svc-old".into()), routed, ..pod("old", "sha256:old", "Running", ready, false) };
            let st = ServiceState {
                pods: vec![pod("new", "sha256:new", "Running", true, false), old],
                replica_sets: vec![rs.clone()],
                ..Default::default()
            };
            let o = evaluate_rollout(&exp1(), &st);
            assert_eq!(verdict_of(&o.diagnostics), want, "ready={ready} routed={routed:?}: {:#?}", o.diagnostics);
            if routed == Some(false) {
                assert!(
                    o.diagnostics
                        .iter()
                        .any(|d| d.code == "BG507" && d.evidence.iter().any(|e| e.contains("not routed"))),
                    "{:#?}",
                    o.diagnostics
                );
                // Not routed and not being deleted: nothing is left to drain.
                assert!(o.settled);
            }
        }
    }

    /// New-release pods that cannot be counted: an evicted one is replaced,
    /// never counted; an Unknown or a ready-but-terminating one may serve
    /// (INCONCLUSIVE) only if it would make up the replicas.
    #[test]
    fn new_pods_that_cannot_be_counted() {
        let exp2 = Expected { replicas: 2, ..exp1() };
        let ready = || pod("a", "sha256:new", "Running", true, false);
        let judge = |second: PodInfo| {
            let o = evaluate_rollout(&exp2, &ServiceState { pods: vec![ready(), second], ..Default::default() });
            (verdict_of(&o.diagnostics), o.summary)
        };
        let (v, summary) = judge(pod("b", "sha256:new", "Failed", true, false));
        assert_eq!(v, Verdict::Fail);
        assert!(summary.starts_with("1/2 new-release pod(s) ready"), "{summary}");
        assert_eq!(judge(pod("b", "sha256:new", "Unknown", true, false)).0, Verdict::Inconclusive);
        assert_eq!(judge(pod("b", "sha256:new", "Running", true, true)).0, Verdict::Inconclusive);
        assert_eq!(judge(pod("b", "sha256:new", "Running", false, true)).0, Verdict::Fail);
        assert_eq!(judge(pod("b", "sha256:new", "Running", true, false)).0, Verdict::Pass);
        // An evicted new pod alone: the release runs nowhere.
        let o = evaluate_rollout(
            &exp1(),
            &ServiceState { pods: vec![pod("b", "sha256:new", "Failed", false, false)], ..Default::default() },
        );
        assert!(
            o.diagnostics.iter().any(|d| d.message == "no pod runs the bundle's release sha256:new"),
            "{:#?}",
            o.diagnostics
        );
    }

    /// The report's own parts: the Deployment's green signals quoted (as
    /// not evidence) on the first failure only, the pods grouped by release
    /// for the JSON data, and one row per pod.
    #[test]
    fn report_rows_groups_and_green_signals() {
        let dep = DeploymentInfo {
            name: "svc".into(),
            replicas: Some(2),
            updated: 2,
            ready: 2,
            available: 2,
            conditions: vec![
                ConditionInfo {
                    type_: "Available".into(),
                    status: "True".into(),
                    reason: Some("MinimumReplicasAvailable".into()),
                    ..Default::default()
                },
                ConditionInfo { type_: "Progressing".into(), status: "True".into(), ..Default::default() },
            ],
        };
        let mut old = pod("old", "sha256:old", "Running", true, false);
        old.restarts = 2;
        old.waiting = vec!["w".into()];
        let mut anon = pod("anon", "x", "Pending", false, true);
        anon.digest = None;
        anon.source = None;
        let st = ServiceState {
            deployments: vec![dep],
            pods: vec![pod("new", "sha256:new", "Running", true, false), old, anon],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp1(), &st);
        let green = "what the Deployment says (not evidence): Deployment svc: replicas 2 updated 2 ready 2 available 2; Available=True (MinimumReplicasAvailable), Progressing=True";
        let first = o.diagnostics.iter().position(is_error).expect("the old ready pod fails");
        assert!(o.diagnostics[first].evidence.iter().any(|e| e == green), "{:#?}", o.diagnostics[first]);
        assert_eq!(o.diagnostics.iter().flat_map(|d| &d.evidence).filter(|e| e.contains("not evidence")).count(), 1);
        assert_eq!(
            o.data["groups"],
            json!([
                {"releaseDigest": "(none)", "isBundleRelease": false, "pods": ["anon"], "ready": 0, "serving": 0},
                {"releaseDigest": "sha256:new", "isBundleRelease": true, "pods": ["new"], "ready": 1, "serving": 1},
                {"releaseDigest": "sha256:old", "isBundleRelease": false, "pods": ["old"], "ready": 1, "serving": 1},
            ])
        );
        assert_eq!(
            o.rows,
            [
                ["new", "new sha256:new", "Running", "true", "0", "", "s3://m/v2/"],
                ["old", "old sha256:old", "Running", "true", "2", "w", "s3://m/v1/"],
                ["anon", "unknown", "Pending (terminating)", "false", "0", "", "-"],
            ]
        );
        // A release with no failure quotes no green signal at all.
        let ok = ServiceState { pods: vec![pod("new", "sha256:new", "Running", true, false)], ..st };
        let o = evaluate_rollout(&exp1(), &ok);
        assert!(
            !o.diagnostics.iter().flat_map(|d| &d.evidence).any(|e| e.contains("not evidence")),
            "{:#?}",
            o.diagnostics
        );
    }

    /// The identity field's dotted path walks objects by key and arrays by
    /// index; anything else (a bad index, a scalar on the way) is absent.
    #[test]
    fn identity_paths_walk_objects_and_arrays() {
        let v = json!({"data": [{"id": "a"}, {"id": "b"}], "n": 3});
        assert_eq!(json_path(&v, "data.1.id"), Some(&json!("b")));
        assert_eq!(json_path(&v, "data.0"), Some(&json!({"id": "a"})));
        for absent in ["data.2.id", "data.x", "data.-1", "n.0", "missing", "data.0.id.more"] {
            assert_eq!(json_path(&v, absent), None, "{absent}");
        }
    }

    /// What `watch` does next rests on three flags: given up (the controller's
    /// progress deadline, or the verifier's refusal: waiting cannot help),
    /// complete, and settled (nothing of another release left but history).
    #[test]
    fn given_up_complete_and_settled() {
        let new = || pod("new", "sha256:new", "Running", true, false);
        let deadline = DeploymentInfo {
            name: "svc".into(),
            conditions: vec![ConditionInfo {
                type_: "Progressing".into(),
                status: "False".into(),
                reason: Some("ProgressDeadlineExceeded".into()),
                message: Some("ReplicaSet \"svc-2\" has timed out progressing.".into()),
                ..Default::default()
            }],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp1(), &ServiceState { deployments: vec![deadline.clone()], ..Default::default() });
        assert!(o.gave_up && !o.complete && !o.settled);
        assert!(o.diagnostics.iter().any(|d| d.message == "Deployment svc exceeded its progress deadline"));
        // Only Progressing with that reason is the controller giving up.
        let cond = |t: &str, r: &str| ConditionInfo {
            type_: t.into(),
            status: "True".into(),
            reason: Some(r.into()),
            ..Default::default()
        };
        let fine = DeploymentInfo {
            conditions: vec![
                cond("Progressing", "NewReplicaSetAvailable"),
                cond("Available", "ProgressDeadlineExceeded"),
                cond("ReplicaFailure", "FailedCreate"),
            ],
            ..deadline
        };
        let o = evaluate_rollout(
            &exp1(),
            &ServiceState { deployments: vec![fine], pods: vec![new()], ..Default::default() },
        );
        assert!(!o.gave_up && o.complete, "{:#?}", o.diagnostics);
        let flags = |pods: Vec<PodInfo>| {
            let o = evaluate_rollout(&exp1(), &ServiceState { pods, ..Default::default() });
            (o.gave_up, o.complete, o.settled, o.summary)
        };
        assert_eq!(
            flags(vec![new()]),
            (
                false,
                true,
                true,
                "1/1 new-release pod(s) ready, 0 pod(s) of another release serving, 1 pod(s) total".into()
            )
        );
        // A Failed (evicted) old pod is history: settled.
        assert!(flags(vec![new(), pod("old", "sha256:old", "Failed", true, false)]).2);
        // An old pod that is not ready and whose routing is unknown is waited for.
        let (_, complete, settled, _) = flags(vec![new(), pod("old", "sha256:old", "Running", false, false)]);
        assert!(complete && !settled);
        // So is one still terminating, routed or not.
        let draining = PodInfo { routed: Some(false), ..pod("old", "sha256:old", "Running", false, true) };
        let (_, complete, settled, _) = flags(vec![new(), draining]);
        assert!(complete && !settled);
        // Not complete is never settled, even with only the new release's pods.
        let (_, complete, settled, summary) = flags(vec![pod("new", "sha256:new", "Running", false, false)]);
        assert!(!complete && !settled);
        assert!(summary.ends_with("— rollout incomplete"), "{summary}");
        let (_, _, _, summary) = flags(vec![new(), pod("old", "sha256:old", "Running", true, false)]);
        assert!(
            summary.starts_with("1/1 new-release pod(s) ready, 1 pod(s) of another release serving, 2 pod(s) total")
        );
    }

    /// Pods the release does not own: routed ones answer its traffic and
    /// cannot be judged (INCONCLUSIVE); the rest are listed as notes.
    #[test]
    fn pods_outside_the_release() {
        use super::OutsidePod;
        let st = ServiceState {
            pods: vec![pod("new", "sha256:new", "Running", true, false)],
            outside: vec![
                OutsidePod { name: "copy".into(), why: "no owner".into(), routed: true },
                OutsidePod { name: "other".into(), why: "owned by Deployment x".into(), routed: false },
            ],
            ..Default::default()
        };
        let o = evaluate_rollout(&exp1(), &st);
        assert_eq!(verdict_of(&o.diagnostics), Verdict::Inconclusive, "{:#?}", o.diagnostics);
        let routed = o.diagnostics.iter().find(|d| d.code == Code::RolloutEvidenceIncomplete).unwrap();
        assert_eq!(routed.message, "1 pod(s) outside this release receive the release's Service traffic");
        assert_eq!(routed.evidence, ["pod copy: no owner"]);
        let note = o.diagnostics.iter().find(|d| d.code == Code::PodsNotServing).unwrap();
        assert_eq!(note.evidence, ["pod other: owned by Deployment x"]);
        let unrouted = ServiceState { outside: vec![st.outside[1].clone()], ..st };
        assert_eq!(verdict_of(&evaluate_rollout(&exp1(), &unrouted).diagnostics), Verdict::Pass);
    }

    /// The audit's serving judgment says "no ready pod runs this release"
    /// whenever none does and nothing else failed, a note elsewhere
    /// notwithstanding; and says nothing twice.
    #[test]
    fn the_audits_no_ready_pod_finding() {
        let exp = exp1();
        let st = |pods: Vec<PodInfo>| ServiceState { pods, ..Default::default() };
        let (d, n) = serving_diagnostics(&exp, "ns/m", &st(vec![pod("a", "sha256:new", "Failed", false, false)]));
        let codes: Vec<Code> = d.iter().map(|d| d.code).collect();
        assert_eq!((codes, n), (vec![Code::PodsNotServing, Code::RolloutIncomplete], 0), "{d:#?}");
        let pending_and_draining =
            st(vec![pod("a", "sha256:new", "Pending", false, false), pod("b", "sha256:old", "Running", false, true)]);
        let (d, n) = serving_diagnostics(&exp, "ns/m", &pending_and_draining);
        assert_eq!(n, 0);
        assert_eq!(verdict_of(&d), Verdict::Fail, "{d:#?}");
        assert!(d.iter().any(|d| d.message == "no ready pod of ns/m runs this release"), "{d:#?}");
        let two =
            st(vec![pod("a", "sha256:new", "Running", true, false), pod("b", "sha256:new", "Pending", false, false)]);
        assert_eq!(serving_diagnostics(&exp, "ns/m", &two).1, 1);
    }

    /// New pods beyond the replicas once enough are ready: a Pending or
    /// restarting one that is not crash-looping is a note quoting only its
    /// warnings; one being deleted or starting without restarts says
    /// nothing. Before enough are ready, a pod that restarted and is not
    /// ready fails with the count.
    #[test]
    fn extra_and_restarting_new_pods() {
        let warn = |reason: &str, type_: &str| event("Pod", "b", type_, reason, &reason.to_lowercase(), 1);
        let events = vec![warn("BackOff", "Warning"), warn("Pulled", "Normal")];
        let about_b = |b: PodInfo| {
            let st = ServiceState {
                pods: vec![pod("a", "sha256:new", "Running", true, false), b],
                events: events.clone(),
                ..Default::default()
            };
            evaluate_rollout(&exp1(), &st)
                .diagnostics
                .into_iter()
                .filter(|d| d.message.contains(" b "))
                .collect::<Vec<_>>()
        };
        let restarting = PodInfo { restarts: 2, ..pod("b", "sha256:new", "Running", false, false) };
        let d = about_b(restarting.clone());
        assert_eq!(d.len(), 1, "{d:#?}");
        assert_eq!(d[0].code, Code::PodsNotServing);
        assert_eq!(d[0].message, "extra pod b of the new release is not ready while the replicas are already ready");
        assert_eq!(d[0].evidence, ["Warning BackOff b: backoff"]);
        let d = about_b(pod("b", "sha256:new", "Pending", false, false));
        assert_eq!(d[0].message, "extra pod b of the new release is Pending while the replicas are already ready");
        assert!(about_b(pod("b", "sha256:new", "Running", false, false)).is_empty());
        assert!(about_b(pod("b", "sha256:new", "Pending", false, true)).is_empty());
        // A crash loop is the release's own container dying: always a failure.
        let d = about_b(PodInfo { crash_loop: true, ..restarting.clone() });
        assert_eq!(
            (d[0].code, d[0].message.as_str()),
            (Code::RolloutIncomplete, "new pod b is not ready: 2 restart(s), CrashLoopBackOff")
        );
        // Not enough ready: the restarting pod fails, quoting its warnings.
        let st = ServiceState { pods: vec![restarting], events, ..Default::default() };
        let o = evaluate_rollout(&exp1(), &st);
        let d = o.diagnostics.iter().find(|d| d.message.starts_with("new pod b")).expect("a finding for b");
        assert_eq!((d.code, d.message.as_str()), (Code::RolloutIncomplete, "new pod b is not ready: 2 restart(s)"));
        assert_eq!(
            d.evidence.iter().filter(|e| e.contains("Warning") || e.contains("Normal")).collect::<Vec<_>>(),
            ["Warning BackOff b: backoff"]
        );
    }
}
