//! Time, not a snapshot: the rollout is judged as a sequence of reads.
//!
//! A pod can be Ready at the instant it is read and restart every minute
//! (liveness killing a loading server, an OOM at the first long prompt).
//! So once the rollout looks complete, it is held for a stability window:
//! restart counts of the release's containers must not grow, and the state
//! at the end of the window must still be complete. [`RolloutWatch`] is the
//! whole decision as a state machine over timed reads; `app::watch` only
//! feeds it what the cluster answered, and the property tests feed it
//! generated timelines — the same code decides both.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::rollout::{evaluate_rollout, Expected, PodStanding, RolloutOutcome};
use super::state::{ContainerRestarts, PodInfo, ServiceState};
use crate::diag::Code;
use crate::diag::Diagnostic;

/// The stability window when none is configured: two readiness failure
/// windows (period × failureThreshold, what it takes the kubelet to notice a
/// dead server), at least 30 s, at most 10 min.
pub(crate) fn default_window_s(readiness_period_s: Option<u32>, failure_threshold: Option<u32>) -> u64 {
    let probe = u64::from(readiness_period_s.unwrap_or(10)) * u64::from(failure_threshold.unwrap_or(3));
    probe.saturating_mul(2).clamp(30, 600)
}

/// A pod of the release as first seen in the window: its containers'
/// restart counts then (zero for a pod created during the window: every
/// restart it shows happened inside it), and whether it had already ended.
#[derive(Debug)]
struct Tracked {
    restarts: BTreeMap<String, u32>,
    ended_at_start: bool,
}

/// The key a pod is tracked by: its UID (a replacement with the same name
/// is another pod), its name when the UID is unknown.
fn key_of(p: &PodInfo) -> String {
    p.uid.clone().map(|u| format!("uid:{u}")).unwrap_or_else(|| format!("name:{}", p.name))
}

fn restart_diagnostic(p: &PodInfo, c: &ContainerRestarts, was: u32, window_s: f64) -> Diagnostic {
    let last = match (&c.last_reason, c.last_exit_code) {
        (Some(r), Some(code)) => format!("{r}, exit {code}"),
        (Some(r), None) => r.clone(),
        (None, Some(code)) => format!("exit {code}"),
        (None, None) => "no termination recorded".into(),
    };
    let mut d = Diagnostic::new(
        Code::RestartStorm,
        format!(
            "container {} of new pod {} restarted during the {:.0}s stability window: {was} → {} restarts (last: {last})",
            c.name, p.name, window_s, c.restarts
        ),
    )
    .evidence(format!("pod {} ready={} phase={}", p.name, p.ready, p.phase));
    if let Some(t) = &c.last_finished_at {
        d = d.evidence(format!("last termination finished at {t}"));
    }
    d.help("a pod that is Ready between restarts passes any one snapshot; read `kubectl logs --previous` and compare the probes with the measured load time (`bundlegate preflight`)")
}

/// A pod of the release that ended for a failure reason during the window
/// (evicted by the kubelet, Failed, a container killed): it counts like a
/// restart, because the ReplicaSet's replacement starts from zero restarts.
fn ended_diagnostic(p: &PodInfo, why: &str, window_s: f64) -> Diagnostic {
    Diagnostic::new(
        Code::RestartStorm,
        format!("pod {} of the release ended during the {window_s:.0}s stability window: {why}", p.name),
    )
    .evidence(format!("pod {} phase={} ready={}", p.name, p.phase, p.ready))
    .help("a pod the kubelet evicts (ephemeral-storage limit, memory pressure) or that fails is replaced by a fresh one with no restarts, so restart counts never show it; set requests/limits for memory and ephemeral-storage to what the server uses (a node drain or `kubectl rollout restart` deletes pods gracefully and is not counted)")
}

/// What the watch decided about the rollout.
pub(crate) struct RolloutVerdict {
    /// The last evaluation (diagnostics, rows, summary, data), with the
    /// window's findings added.
    pub outcome: RolloutOutcome,
    /// Complete and held for the whole window.
    pub complete: bool,
    /// The controller gave up, or the window showed a restart: no use waiting.
    pub gave_up: bool,
    /// Seconds the complete state was held (None: never complete).
    pub held_s: Option<f64>,
}

/// The rollout decision over timed reads.
pub(crate) struct RolloutWatch {
    exp: Expected,
    window_s: f64,
    /// When the rollout first read complete, and that read.
    baseline: Option<(f64, ServiceState)>,
    last: Option<(f64, RolloutOutcome)>,
    storm: Vec<Diagnostic>,
    /// Reads inside the window where readiness had dropped (no restart).
    dips: usize,
    /// Every pod of the release seen since the window started.
    seen: BTreeMap<String, Tracked>,
    /// (pod key, container or "" for the pod) already reported.
    reported: BTreeSet<(String, String)>,
    /// The reads where the pod counts changed (the report's chart), at most
    /// [`TIMELINE_POINTS`], and the latest read.
    timeline: Vec<PodCounts>,
    latest: Option<PodCounts>,
}

/// Most reads kept for the timeline (a chart's x axis stays readable).
const TIMELINE_POINTS: usize = 36;

/// One read as the timeline shows it: when, the release's serving pods,
/// and the pods of each release (by digest) that had not ended.
#[derive(Debug, Clone, PartialEq)]
struct PodCounts {
    at_s: f64,
    serving: usize,
    pods: BTreeMap<String, usize>,
}

impl PodCounts {
    fn read(exp: &Expected, at_s: f64, st: &ServiceState) -> PodCounts {
        let mut pods = BTreeMap::new();
        for p in st.pods.iter().filter(|p| p.ended.is_none()) {
            *pods.entry(p.digest.clone().unwrap_or_else(|| "(none)".into())).or_insert(0) += 1;
        }
        PodCounts { at_s, serving: ready_of(exp, st), pods }
    }

    fn same_counts(&self, o: &PodCounts) -> bool {
        (self.serving, &self.pods) == (o.serving, &o.pods)
    }

    fn json(&self) -> serde_json::Value {
        json!({"atSeconds": self.at_s, "serving": self.serving, "pods": self.pods})
    }
}

impl RolloutWatch {
    pub(crate) fn new(exp: Expected, window_s: f64) -> Self {
        RolloutWatch {
            exp,
            window_s: window_s.max(0.0),
            baseline: None,
            last: None,
            storm: Vec::new(),
            dips: 0,
            seen: BTreeMap::new(),
            reported: BTreeSet::new(),
            timeline: Vec::new(),
            latest: None,
        }
    }

    /// One read of the release at `at_s` seconds. Returns true when nothing
    /// later can change the decision (held for the window, a restart in it,
    /// or the controller gave up).
    pub(crate) fn observe(&mut self, at_s: f64, st: ServiceState) -> bool {
        let counts = PodCounts::read(&self.exp, at_s, &st);
        if self.timeline.len() < TIMELINE_POINTS && !self.timeline.last().is_some_and(|l| l.same_counts(&counts)) {
            self.timeline.push(counts.clone());
        }
        self.latest = Some(counts);
        let o = evaluate_rollout(&self.exp, &st);
        let gave_up = o.gave_up;
        let settled = o.settled;
        let complete = o.complete;
        self.last = Some((at_s, o));
        if gave_up {
            return true;
        }
        // The window starts at the first complete read; reading stops early
        // only once it has been held and nothing of another release is left
        // draining (an old pod stuck terminating is waited for until the
        // deadline, and never fails the release).
        match &self.baseline {
            None if complete => {
                for p in self.release_pods(&st) {
                    let t = Tracked {
                        restarts: p.containers.iter().map(|c| (c.name.clone(), c.restarts)).collect(),
                        ended_at_start: p.ended.is_some(),
                    };
                    self.seen.insert(key_of(p), t);
                }
                self.baseline = Some((at_s, st));
                self.window_s == 0.0 && settled
            }
            None => false,
            Some((t0, _)) => {
                let t0 = *t0;
                self.track(&st);
                if !complete {
                    self.dips += 1;
                }
                !self.storm.is_empty() || (at_s - t0 >= self.window_s && settled)
            }
        }
    }

    fn release_pods<'s>(&self, st: &'s ServiceState) -> Vec<&'s PodInfo> {
        st.pods.iter().filter(|p| p.digest.as_deref() == Some(self.exp.digest.as_str())).collect()
    }

    /// One read inside the window: every pod of the release, by UID,
    /// whether it was there when the window started or appeared since. A
    /// restart count that grew, or an end for a failure reason (not a
    /// deletion: a drain or a rollout restart deletes pods gracefully), is
    /// reported once per pod and container.
    fn track(&mut self, st: &ServiceState) {
        let pods = self.release_pods(st);
        let RolloutWatch { seen, reported, storm, window_s, .. } = self;
        for p in pods {
            let key = key_of(p);
            let t =
                seen.entry(key.clone()).or_insert_with(|| Tracked { restarts: BTreeMap::new(), ended_at_start: false });
            for c in &p.containers {
                let was = t.restarts.get(&c.name).copied().unwrap_or(0);
                if c.restarts > was && reported.insert((key.clone(), c.name.clone())) {
                    storm.push(restart_diagnostic(p, c, was, *window_s));
                }
            }
            if let Some(why) = p.ended.as_deref().filter(|_| !p.terminating && !t.ended_at_start) {
                if reported.insert((key.clone(), String::new())) {
                    storm.push(ended_diagnostic(p, why, *window_s));
                }
            }
        }
    }

    /// When the stability window ends (seconds on the watch's clock), once
    /// the rollout has read complete: the caller keeps reading until then
    /// even past its deadline, so a late completion is still held.
    /// The kind at the root of the release's pods (what to read).
    pub(crate) fn workload(&self) -> &'static str {
        self.exp.workload
    }

    pub(crate) fn window_end(&self) -> Option<f64> {
        self.baseline.as_ref().map(|(t0, _)| t0 + self.window_s)
    }

    /// The decision once reading stopped (done, or the deadline passed).
    pub(crate) fn finish(self) -> Option<RolloutVerdict> {
        let (at_s, mut outcome) = self.last?;
        let held_s = self.baseline.as_ref().map(|(t0, _)| at_s - t0);
        let held_window = held_s.is_some_and(|h| h >= self.window_s);
        let storm = !self.storm.is_empty();
        outcome.diagnostics.extend(self.storm);
        if let Some((t0, base)) = &self.baseline {
            if !outcome.complete && !storm {
                // Complete once, not any more: the last read's own findings
                // say why; add when it had been complete.
                if let Some(d) = outcome.diagnostics.iter_mut().find(|d| d.severity == crate::diag::Severity::Error) {
                    d.evidence.push(format!("the rollout had read complete at {t0:.1}s ({} ready pod(s) of the release); this is the read at {at_s:.1}s", ready_of(&self.exp, base)));
                }
            }
        }
        // A complete last read means a baseline exists (the first complete
        // read), so a window of zero is always held.
        let complete = outcome.complete && !storm && held_window;
        if outcome.complete && !storm && !held_window {
            // Ready, but the window did not run to its end before the
            // deadline: not shown stable, not shown failing either.
            outcome.diagnostics.push(
                Diagnostic::new(
                    Code::RolloutEvidenceIncomplete,
                    format!("the rollout read complete but was held {:.0}s of its {:.0}s stability window before the deadline", held_s.unwrap_or(0.0), self.window_s),
                )
                .help("raise --timeout (the window starts when the rollout first reads complete) or lower --stable-for"),
            );
        }
        if let serde_json::Value::Object(m) = &mut outcome.data {
            m.insert("stability".into(), json!({"windowSeconds": self.window_s, "heldSeconds": held_s, "readinessDips": self.dips, "restartsDuringWindow": storm}));
            // The last read closes the timeline, when it is not its last point.
            let mut timeline = self.timeline;
            if let Some(l) = self.latest.filter(|l| timeline.last() != Some(l)) {
                timeline.push(l);
            }
            m.insert("timeline".into(), timeline.iter().map(PodCounts::json).collect());
        }
        Some(RolloutVerdict { complete, gave_up: outcome.gave_up || storm, outcome, held_s })
    }
}

fn ready_of(exp: &Expected, st: &ServiceState) -> usize {
    st.pods
        .iter()
        .filter(|p| {
            p.digest.as_deref() == Some(exp.digest.as_str()) && super::rollout::standing(p) == PodStanding::Serving
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::super::state::ModelSource;
    use super::*;

    fn exp() -> Expected {
        Expected {
            digest: "sha256:new".into(),
            storage_uri: "s3://m/v2/".into(),
            kserve: true,
            workload: "InferenceService",
            replicas: 1,
        }
    }

    /// The release's one pod: `uid` tells a replacement of the same name.
    fn new_pod(uid: &str, ready: bool, restarts: u32) -> ServiceState {
        let pod = PodInfo {
            name: "new".into(),
            uid: Some(uid.into()),
            digest: Some("sha256:new".into()),
            phase: "Running".into(),
            ready,
            restarts,
            containers: vec![ContainerRestarts {
                name: "kserve-container".into(),
                restarts,
                last_reason: (restarts > 0).then(|| "OOMKilled".into()),
                last_exit_code: (restarts > 0).then_some(137),
                last_finished_at: (restarts > 0).then(|| "2026-01-01T10:00:05Z".into()),
            }],
            source: Some(ModelSource::StorageInitializer { uri: "s3://m/v2/".into() }),
            ..Default::default()
        };
        ServiceState { pods: vec![pod], ..Default::default() }
    }

    /// Reads at the given seconds until the watch says done; returns how
    /// many reads it took and the verdict.
    fn run(window_s: f64, reads: &[(f64, ServiceState)]) -> (usize, RolloutVerdict, Option<f64>) {
        let mut w = RolloutWatch::new(exp(), window_s);
        let mut n = 0;
        for (t, st) in reads {
            n += 1;
            if w.observe(*t, st.clone()) {
                break;
            }
        }
        let end = w.window_end();
        (n, w.finish().expect("read at least once"), end)
    }

    fn codes(v: &RolloutVerdict) -> Vec<Code> {
        v.outcome.diagnostics.iter().map(|d| d.code).collect()
    }

    fn stability(v: &RolloutVerdict) -> serde_json::Value {
        v.outcome.data["stability"].clone()
    }

    #[test]
    fn held_for_the_whole_window_is_complete_and_stops_reading_at_its_end() {
        let reads: Vec<_> = (0..10).map(|i| (f64::from(i) * 2.0, new_pod("a", true, 0))).collect();
        let (n, v, end) = run(10.0, &reads);
        assert_eq!(n, 6, "reads at 0,2,..,10: the window is held at 10 s, not before");
        assert_eq!(end, Some(10.0));
        assert!(v.complete && !v.gave_up, "{:?}", codes(&v));
        assert_eq!(v.held_s, Some(10.0));
        assert_eq!(stability(&v)["readinessDips"], 0);
        assert_eq!(stability(&v)["restartsDuringWindow"], false);
        assert!(!codes(&v).contains(&Code::RolloutEvidenceIncomplete));
        // The window is counted from the first complete read, not from zero.
        let late: Vec<_> = (0..10).map(|i| (5.0 + f64::from(i) * 2.0, new_pod("a", true, 0))).collect();
        let (n, v, end) = run(10.0, &late);
        assert_eq!((n, end, v.held_s), (6, Some(15.0), Some(10.0)));
    }

    #[test]
    fn never_complete_has_no_window() {
        let reads: Vec<_> = (0..3).map(|i| (f64::from(i), new_pod("a", false, 0))).collect();
        let (n, v, end) = run(10.0, &reads);
        assert_eq!((n, end, v.held_s), (3, None, None));
        assert!(!v.complete);
    }

    #[test]
    fn a_deadline_inside_the_window_is_incomplete_evidence_not_a_failure() {
        let (_, v, end) = run(10.0, &[(3.0, new_pod("a", true, 0)), (7.0, new_pod("a", true, 0))]);
        assert_eq!(end, Some(13.0), "the window starts at the first complete read");
        assert!(!v.complete && !v.gave_up);
        assert_eq!(v.held_s, Some(4.0));
        assert!(codes(&v).contains(&Code::RolloutEvidenceIncomplete), "{:?}", codes(&v));
        assert!(!codes(&v).contains(&Code::RestartStorm));
    }

    #[test]
    fn a_restart_inside_the_window_stops_reading_and_fails() {
        let reads = [(0.0, new_pod("a", true, 0)), (2.0, new_pod("a", true, 1)), (4.0, new_pod("a", true, 1))];
        let (n, v, _) = run(10.0, &reads);
        assert_eq!(n, 2, "a restart decides at once");
        assert!(!v.complete && v.gave_up);
        let d = v.outcome.diagnostics.iter().find(|d| d.code == Code::RestartStorm).expect("BG508");
        assert!(d.message.contains("0 → 1 restarts (last: OOMKilled, exit 137)"), "{}", d.message);
        assert!(d.evidence.iter().any(|e| e.contains("2026-01-01T10:00:05Z")), "{:?}", d.evidence);
        // The storm is its own reason: no "had read complete" line is added.
        assert!(!d.evidence.iter().any(|e| e.contains("had read complete")), "{:?}", d.evidence);
        assert_eq!(stability(&v)["restartsDuringWindow"], true);
        // A read without uids (a snapshot that left them out) is the same pod
        // by name.
        let no_uid = |restarts| {
            let mut st = new_pod("a", true, restarts);
            st.pods[0].uid = None;
            st
        };
        let (_, v, _) = run(10.0, &[(0.0, no_uid(0)), (2.0, new_pod("a", true, 2))]);
        assert!(codes(&v).contains(&Code::RestartStorm), "{:?}", codes(&v));
        let (_, v, _) = run(10.0, &[(0.0, new_pod("a", true, 0)), (2.0, no_uid(2))]);
        assert!(codes(&v).contains(&Code::RestartStorm), "{:?}", codes(&v));
        // A storm whose last read is not ready: still no "had read complete"
        // line on any finding (the restart is the reason).
        let (_, v, _) = run(10.0, &[(0.0, new_pod("a", true, 0)), (2.0, new_pod("a", false, 1))]);
        assert!(codes(&v).contains(&Code::RestartStorm) && !v.complete);
        let all: Vec<&String> = v.outcome.diagnostics.iter().flat_map(|d| &d.evidence).collect();
        assert!(!all.iter().any(|e| e.contains("had read complete")), "{all:?}");
    }

    #[test]
    fn a_replacement_of_the_same_name_is_its_own_pod() {
        // The `new` pod (uid a) was deleted and replaced by uid b with the
        // same name (a drain, a rollout restart): graceful, so it passes…
        let reads: Vec<_> = std::iter::once((0.0, new_pod("a", true, 0)))
            .chain((1..=5).map(|i| (f64::from(i) * 2.0, new_pod("b", true, 0))))
            .collect();
        let (_, v, _) = run(10.0, &reads);
        assert!(!codes(&v).contains(&Code::RestartStorm), "{:?}", codes(&v));
        assert!(v.complete);
        // …but b was created inside the window, so a restart it shows
        // happened inside it too: counted from zero, not from a's count.
        let reads: Vec<_> = std::iter::once((0.0, new_pod("a", true, 3)))
            .chain((1..=5).map(|i| (f64::from(i) * 2.0, new_pod("b", true, 1))))
            .collect();
        let (_, v, _) = run(10.0, &reads);
        assert!(codes(&v).contains(&Code::RestartStorm) && !v.complete, "{:?}", codes(&v));
        let msg = &v.outcome.diagnostics.iter().find(|d| d.code == Code::RestartStorm).unwrap().message;
        assert!(msg.contains("0 → 1"), "{msg}");
    }

    /// A pod the kubelet evicts is replaced by a fresh one with no
    /// restarts: only its end shows it, and that end is a failure; the
    /// same pod deleted (terminating) is not.
    #[test]
    fn an_eviction_inside_the_window_fails_and_a_deletion_does_not() {
        let evicted = |uid: &str| {
            let mut st = new_pod(uid, false, 0);
            st.pods[0].phase = "Failed".into();
            st.pods[0].ended = Some("Evicted (The node was low on resource: ephemeral-storage.)".into());
            st
        };
        let mut with_replacement = evicted("a");
        with_replacement.pods.extend(new_pod("b", true, 0).pods);
        let reads = vec![(0.0, new_pod("a", true, 0)), (2.0, with_replacement.clone()), (4.0, with_replacement)];
        let (_, v, _) = run(10.0, &reads);
        assert!(!v.complete);
        let d = v.outcome.diagnostics.iter().find(|d| d.code == Code::RestartStorm).expect("the eviction is reported");
        assert!(d.message.contains("pod new of the release ended") && d.message.contains("Evicted"), "{}", d.message);
        // Deleted: the container ends on purpose.
        let mut deleted = evicted("a");
        deleted.pods[0].terminating = true;
        deleted.pods.extend(new_pod("b", true, 0).pods);
        let reads: Vec<_> = std::iter::once((0.0, new_pod("a", true, 0)))
            .chain((1..=6).map(|i| (f64::from(i) * 2.0, deleted.clone())))
            .collect();
        let (_, v, _) = run(10.0, &reads);
        assert!(!codes(&v).contains(&Code::RestartStorm), "{:?}", codes(&v));
        // Already ended when the window started: not inside it.
        let mut before = evicted("a");
        before.pods.extend(new_pod("b", true, 0).pods);
        let reads: Vec<_> = (0..=6).map(|i| (f64::from(i) * 2.0, before.clone())).collect();
        let (_, v, _) = run(10.0, &reads);
        assert!(!codes(&v).contains(&Code::RestartStorm), "{:?}", codes(&v));
    }

    #[test]
    fn a_readiness_dip_without_a_restart_is_counted_and_the_end_decides() {
        let mut reads: Vec<_> = (0..=5).map(|i| (f64::from(i) * 2.0, new_pod("a", true, 0))).collect();
        reads[1].1 = new_pod("a", false, 0);
        reads[2].1 = new_pod("a", false, 0);
        let (_, v, _) = run(10.0, &reads);
        assert!(v.complete);
        assert_eq!(stability(&v)["readinessDips"], 2);
        // Complete once, not at the end: the finding says when it had been.
        let (_, v, _) = run(10.0, &[(0.0, new_pod("a", true, 0)), (4.0, new_pod("a", false, 0))]);
        assert!(!v.complete && !v.gave_up);
        assert!(
            v.outcome.diagnostics.iter().any(|d| d.evidence.iter().any(|e| e.contains(
                "the rollout had read complete at 0.0s (1 ready pod(s) of the release); this is the read at 4.0s"
            ))),
            "{:?}",
            v.outcome.diagnostics
        );
    }

    /// The "had read complete" line counts the release's ready pods at that
    /// read: neither another release's pods nor its own not-ready ones.
    #[test]
    fn had_read_complete_counts_the_releases_ready_pods() {
        let exp2 = Expected { replicas: 2, ..exp() };
        let pod = |name: &str, digest: &str, ready: bool| PodInfo {
            name: name.into(),
            uid: Some(name.into()),
            digest: Some(digest.into()),
            phase: "Running".into(),
            ready,
            source: Some(ModelSource::StorageInitializer { uri: "s3://m/v2/".into() }),
            ..Default::default()
        };
        let base = ServiceState {
            pods: vec![pod("a", "sha256:new", true), pod("b", "sha256:new", true), pod("c", "sha256:new", false)],
            ..Default::default()
        };
        let mut w = RolloutWatch::new(exp2, 10.0);
        assert!(!w.observe(0.0, base));
        let later = ServiceState {
            pods: vec![pod("a", "sha256:new", true), pod("b", "sha256:new", false), pod("o", "sha256:old", true)],
            ..Default::default()
        };
        w.observe(3.0, later);
        let v = w.finish().unwrap();
        let all: Vec<&String> = v.outcome.diagnostics.iter().flat_map(|d| &d.evidence).collect();
        assert!(
            all.iter().any(|e| e.as_str()
                == "the rollout had read complete at 0.0s (2 ready pod(s) of the release); this is the read at 3.0s"),
            "{all:?}"
        );
    }

    #[test]
    fn a_window_of_zero_decides_on_the_first_complete_read() {
        let (n, v, end) = run(0.0, &[(5.0, new_pod("a", true, 0)), (6.0, new_pod("a", true, 3))]);
        assert_eq!((n, end), (1, Some(5.0)));
        assert!(v.complete && !codes(&v).contains(&Code::RolloutEvidenceIncomplete));
    }

    #[test]
    fn default_window_follows_the_readiness_probe_within_bounds() {
        assert_eq!(default_window_s(Some(10), Some(3)), 60);
        assert_eq!(default_window_s(Some(1), Some(1)), 30);
        assert_eq!(default_window_s(Some(600), Some(10)), 600);
        assert_eq!(default_window_s(None, None), 60);
    }
}
