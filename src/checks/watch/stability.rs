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

use serde_json::json;

use super::rollout::{evaluate_rollout, Expected, PodStanding, RolloutOutcome, ServiceState};
use crate::diag::Code;
use crate::diag::Diagnostic;

/// The stability window when none is configured: two readiness failure
/// windows (period × failureThreshold, what it takes the kubelet to notice a
/// dead server), at least 30 s, at most 10 min.
pub(crate) fn default_window_s(readiness_period_s: Option<u32>, failure_threshold: Option<u32>) -> u64 {
    let probe = u64::from(readiness_period_s.unwrap_or(10)) * u64::from(failure_threshold.unwrap_or(3));
    probe.saturating_mul(2).clamp(30, 600)
}

/// A container of the release that restarted during the window: BG508.
fn restart_growth(exp: &Expected, before: &ServiceState, after: &ServiceState, window_s: f64) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for p in after.pods.iter().filter(|p| p.digest.as_deref() == Some(exp.digest.as_str())) {
        // The same pod (by uid when known: a replacement with the same name
        // starts from zero and is judged as a new pod).
        let Some(b) =
            before.pods.iter().find(|b| b.name == p.name && (b.uid.is_none() || p.uid.is_none() || b.uid == p.uid))
        else {
            continue;
        };
        for c in &p.containers {
            let was = b.containers.iter().find(|x| x.name == c.name).map(|x| x.restarts).unwrap_or(0);
            if c.restarts > was {
                let last = match (&c.last_reason, c.last_exit_code) {
                    (Some(r), Some(code)) => format!("{r}, exit {code}"),
                    (Some(r), None) => r.clone(),
                    (None, Some(code)) => format!("exit {code}"),
                    (None, None) => "no termination recorded".into(),
                };
                let mut d = Diagnostic::new(
                    Code::RestartStorm,
                    format!("container {} of new pod {} restarted during the {:.0}s stability window: {was} → {} restarts (last: {last})", c.name, p.name, window_s, c.restarts),
                )
                .evidence(format!("pod {} ready={} phase={}", p.name, p.ready, p.phase));
                if let Some(t) = &c.last_finished_at {
                    d = d.evidence(format!("last termination finished at {t}"));
                }
                out.push(d.help("a pod that is Ready between restarts passes any one snapshot; read `kubectl logs --previous` and compare the probes with the measured load time (`bundlegate preflight`)"));
            }
        }
    }
    out
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
}

impl RolloutWatch {
    pub(crate) fn new(exp: Expected, window_s: f64) -> Self {
        RolloutWatch { exp, window_s: window_s.max(0.0), baseline: None, last: None, storm: Vec::new(), dips: 0 }
    }

    /// One read of the release at `at_s` seconds. Returns true when nothing
    /// later can change the decision (held for the window, a restart in it,
    /// or the controller gave up).
    pub(crate) fn observe(&mut self, at_s: f64, st: ServiceState) -> bool {
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
                self.baseline = Some((at_s, st));
                self.window_s == 0.0 && settled
            }
            None => false,
            Some((t0, base)) => {
                self.storm = restart_growth(&self.exp, base, &st, self.window_s);
                if !complete {
                    self.dips += 1;
                }
                !self.storm.is_empty() || (at_s - t0 >= self.window_s && settled)
            }
        }
    }

    /// When the stability window ends (seconds on the watch's clock), once
    /// the rollout has read complete: the caller keeps reading until then
    /// even past its deadline, so a late completion is still held.
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
        let complete = outcome.complete && !storm && (held_window || self.window_s == 0.0);
        if outcome.complete && !storm && !held_window && self.window_s > 0.0 {
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
    use super::*;

    #[test]
    fn default_window_follows_the_readiness_probe_within_bounds() {
        assert_eq!(default_window_s(Some(10), Some(3)), 60);
        assert_eq!(default_window_s(Some(1), Some(1)), 30);
        assert_eq!(default_window_s(Some(600), Some(10)), 600);
        assert_eq!(default_window_s(None, None), 60);
    }
}
