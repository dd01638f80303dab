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
        if (s.rollout.progress_deadline_seconds as f64) < budget {
            diags.push(
                d(
                    Code::ProgressDeadlineShort,
                    "spec.serving.rollout.progressDeadlineSeconds",
                    format!(
                        "progressDeadlineSeconds {} is shorter than load time + scheduling ({load}s + {SCHEDULING_ALLOWANCE_SECONDS}s): a healthy rollout ends ProgressDeadlineExceeded, which rolls nothing back",
                        s.rollout.progress_deadline_seconds
                    ),
                )
                .evidence(format!("{SCHEDULING_ALLOWANCE_SECONDS}s is a floor for scheduling and container start with a cached image, not a measurement"))
                .help(format!("set progressDeadlineSeconds ≥ {}", (budget * 1.5).ceil() as u64)),
            );
        }
    }
    diags
}
