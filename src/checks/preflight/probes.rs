//! Probes and the progress deadline against the measured model load time: a
//! kubelet that kills a loading pod, or a deadline shorter than the load.
//! Separate because it needs only the bundle, never the cluster.

use crate::diag::Code;
use crate::diag::Diagnostic;

use super::Rollout;

/// Seconds a new pod needs beyond loading (scheduling, sandbox, cached image):
/// a floor, not a measurement.
pub const SCHEDULING_ALLOWANCE_SECONDS: u32 = 30;

pub(super) fn check(cx: &Rollout) -> Vec<Diagnostic> {
    let s = cx.serving();
    let d = |code: Code, field: &str, msg: String| cx.diag(code, field, msg);
    let mut diags = Vec::new();
    if let Some(load) = s.load_time_seconds.as_ref().map(|l| l.p95) {
        let (field, kill_after, how) = match (&s.probes.startup, &s.probes.liveness) {
            (Some(st), _) => ("spec.serving.probes.startup", Some(st.window_seconds()), format!(
                "startup probe: initialDelaySeconds {} + periodSeconds {} × failureThreshold {} = {}s (liveness waits for it)",
                st.initial_delay_seconds, st.period_seconds, st.failure_threshold, st.window_seconds()
            )),
            (None, Some(lv)) => ("spec.serving.probes.liveness", Some(lv.window_seconds()), format!(
                "no startup probe; liveness: initialDelaySeconds {} + periodSeconds {} × failureThreshold {} = {}s",
                lv.initial_delay_seconds, lv.period_seconds, lv.failure_threshold, lv.window_seconds()
            )),
            (None, None) => ("spec.serving.probes", None, String::new()),
        };
        if let Some(k) = kill_after.filter(|k| (*k as f64) < load) {
            diags.push(
                d(Code::ProbeKillsLoadingPod, field, format!("the kubelet kills a loading pod after {k}s but the measured p95 load time is {load}s: predicted restart loop"))
                    .evidence(how)
                    .evidence(format!("loadTimeSeconds.p95 {load}"))
                    .help(format!(
                        "give the startup probe a window above {load}s with margin, e.g. periodSeconds 10 × failureThreshold {}",
                        ((load * 1.5) / 10.0).ceil() as u64
                    )),
            );
        }
        let budget = load + SCHEDULING_ALLOWANCE_SECONDS as f64;
        let deadline = super::effective_rollout(s).0.progress_deadline_seconds;
        if (deadline as f64) < budget {
            diags.push(
                d(
                    Code::ProgressDeadlineShort,
                    "spec.serving.rollout.progressDeadlineSeconds",
                    format!(
                        "progressDeadlineSeconds {deadline} is shorter than load time + scheduling ({load}s + {SCHEDULING_ALLOWANCE_SECONDS}s): a healthy rollout ends ProgressDeadlineExceeded, which rolls nothing back"
                    ),
                )
                .evidence(format!("{SCHEDULING_ALLOWANCE_SECONDS}s is a floor for scheduling and container start with a cached image, not a measurement"))
                .help(format!("set progressDeadlineSeconds ≥ {}", (budget * 1.5).ceil() as u64)),
            );
        }
    }
    diags
}

#[cfg(test)]
mod tests {
    use crate::bundle::LoadTime;
    use crate::checks::preflight::{preflight, ClusterState};
    use crate::diag::Code;

    /// The probe window that kills a loading pod (startup first, else
    /// liveness), and a progress deadline under load time plus scheduling;
    /// each strictly below its bound, never at it.
    #[test]
    fn probes_and_the_progress_deadline_against_the_load_time() {
        let judge = |load: f64, startup: bool, deadline: u32| {
            let mut l = crate::bundle::example();
            let s = &mut l.bundle.spec.serving;
            s.load_time_seconds = Some(LoadTime { p95: load, p50: None });
            let probe = s.probes.startup.clone().or(s.probes.liveness.clone()).expect("the example has a probe");
            let window = |initial, period, failures| crate::bundle::Probe {
                initial_delay_seconds: initial,
                period_seconds: period,
                failure_threshold: failures,
                ..probe.clone()
            };
            s.probes.startup = startup.then(|| window(0, 10, 6));
            s.probes.liveness = Some(window(5, 10, 3));
            s.rollout.progress_deadline_seconds = deadline;
            preflight(&l, &ClusterState::default()).unwrap().diagnostics
        };
        let find = |d: &[crate::diag::Diagnostic], c: Code| d.iter().find(|x| x.code == c).cloned();
        // Startup window 60 s against a 95 s load.
        let d = judge(95.0, true, 600);
        let kill = find(&d, Code::ProbeKillsLoadingPod).expect("BG206");
        assert_eq!(
            kill.message,
            "the kubelet kills a loading pod after 60s but the measured p95 load time is 95s: predicted restart loop"
        );
        assert_eq!(kill.field.as_deref(), Some("spec.serving.probes.startup"));
        assert!(kill.evidence[0].contains("= 60s (liveness waits for it)"), "{kill:?}");
        assert_eq!(
            kill.help,
            ["give the startup probe a window above 95s with margin, e.g. periodSeconds 10 × failureThreshold 15"]
        );
        // No startup probe: liveness decides (5 + 10 × 3 = 35 s).
        let kill = find(&judge(95.0, false, 600), Code::ProbeKillsLoadingPod).expect("BG206");
        assert_eq!(kill.field.as_deref(), Some("spec.serving.probes.liveness"));
        assert!(kill.message.contains("after 35s"), "{kill:?}");
        // A window exactly the load time does not kill it.
        assert!(find(&judge(60.0, true, 600), Code::ProbeKillsLoadingPod).is_none());
        // Deadline: load + 30 s of scheduling; 125 s is enough for 95 s, 124 s is not.
        assert!(find(&judge(95.0, true, 125), Code::ProgressDeadlineShort).is_none());
        let short = find(&judge(95.0, true, 124), Code::ProgressDeadlineShort).expect("BG018");
        assert!(
            short.message.starts_with("progressDeadlineSeconds 124 is shorter than load time + scheduling (95s + 30s)"),
            "{short:?}"
        );
        assert_eq!(short.help, ["set progressDeadlineSeconds ≥ 188"]);
        // No measured load time: nothing to hold the probes to.
        let mut l = crate::bundle::example();
        l.bundle.spec.serving.load_time_seconds = None;
        let d = preflight(&l, &ClusterState::default()).unwrap().diagnostics;
        assert!(find(&d, Code::ProbeKillsLoadingPod).is_none() && find(&d, Code::ProgressDeadlineShort).is_none());
    }

    /// `kserve-llm` cannot carry the bundle's strategy (KServe v0.20): the
    /// deadline and the surge judged are the Deployment defaults KServe's
    /// controller uses (the plan line says so).
    #[test]
    fn kserve_llm_is_judged_with_the_defaults_kserve_uses() {
        let judge = |format: crate::bundle::ServingFormat| {
            let mut l = crate::bundle::example();
            let s = &mut l.bundle.spec.serving;
            s.format = format;
            s.load_time_seconds = Some(LoadTime { p95: 95.0, p50: None });
            s.rollout.progress_deadline_seconds = 100;
            s.rollout.max_surge = crate::bundle::IntOrPercent::Int(0);
            s.rollout.max_unavailable = crate::bundle::IntOrPercent::Int(1);
            preflight(&l, &ClusterState::default()).unwrap()
        };
        let llm = judge(crate::bundle::ServingFormat::KserveLlm);
        assert!(!llm.diagnostics.iter().any(|d| d.code == Code::ProgressDeadlineShort), "600 s applies");
        assert_eq!(
            (llm.data["rollout"]["surge"].as_u64(), llm.data["rollout"]["unavailable"].as_u64()),
            (Some(1), Some(0))
        );
        let custom = judge(crate::bundle::ServingFormat::KserveCustom);
        assert!(custom.diagnostics.iter().any(|d| d.code == Code::ProgressDeadlineShort));
        assert_eq!(
            (custom.data["rollout"]["surge"].as_u64(), custom.data["rollout"]["unavailable"].as_u64()),
            (Some(0), Some(1))
        );
    }
}
