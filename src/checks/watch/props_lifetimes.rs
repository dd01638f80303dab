//! The stability window as a property over generated pod lifetimes.
//!
//! Each of the release's pods lives its own life over the reads: restarts
//! from before the merge (constant), graceful replacements (deleted, then
//! gone: a drain, `kubectl rollout restart`), evictions by the kubelet (the
//! pod Failed and kept, a fresh replacement with no restarts), OOM kills and
//! plain restarts (the count grows). Reads are one second apart; the window
//! starts at the first (complete) read, so the watch reads up to `window_s`
//! and no further. Property, over 10,000 lifetimes: the rollout is PASS iff
//! no pod of the release ended for a failure reason and no restart count
//! grew inside the window — whatever happened after it, or before it.

use proptest::prelude::*;

use super::rollout::{self, Expected};
use super::stability::RolloutWatch;
use super::state::{ContainerRestarts, ModelSource, PodInfo, ServiceState};
use crate::report::Verdict;

const NEW: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    /// Deleted at this read (terminating, replacement ready), gone at the next.
    Graceful,
    /// Evicted by the kubelet: Failed and kept; a fresh replacement.
    Evicted,
    /// The main container OOM-killed and restarted in place.
    OomKilled,
    /// A plain restart (exit 1), in place.
    Restart,
}

impl Event {
    fn is_failure(self) -> bool {
        !matches!(self, Event::Graceful)
    }
}

#[derive(Debug, Clone)]
struct Life {
    /// Restarts before the merge: constant, never counted.
    before: u32,
    /// What happens to this slot's pod, at which read (1-based).
    events: Vec<(u32, Event)>,
}

#[derive(Debug, Clone)]
struct Lifetimes {
    window_s: u32,
    lives: Vec<Life>,
}

fn lifetimes() -> impl Strategy<Value = Lifetimes> {
    let event = prop_oneof![
        3 => Just(Event::Graceful),
        1 => Just(Event::Evicted),
        1 => Just(Event::OomKilled),
        1 => Just(Event::Restart),
    ];
    let life = (0u32..4, prop::collection::vec((1u32..12, event), 0..3)).prop_map(|(before, mut events)| {
        events.sort_by_key(|(i, _)| *i);
        events.dedup_by_key(|(i, _)| *i);
        Life { before, events }
    });
    (2u32..9, prop::collection::vec(life, 1..4)).prop_map(|(window_s, lives)| Lifetimes { window_s, lives })
}

fn pod(slot: usize, generation: u32, restarts: u32, last: Option<(&str, i32)>) -> PodInfo {
    let name = format!("llm-predictor-rs2-s{slot}g{generation}");
    PodInfo {
        uid: Some(format!("uid-{name}")),
        name,
        digest: Some(NEW.into()),
        phase: "Running".into(),
        ready: true,
        restarts,
        containers: vec![ContainerRestarts {
            name: "kserve-container".into(),
            restarts,
            last_reason: last.map(|(r, _)| r.to_string()),
            last_exit_code: last.map(|(_, c)| c),
            last_finished_at: None,
        }],
        source: Some(ModelSource::StorageInitializer { uri: "s3://m/v2/".into() }),
        ..Default::default()
    }
}

/// The pods of the release at read `i`.
fn read(l: &Lifetimes, i: u32) -> ServiceState {
    let mut pods = Vec::new();
    for (slot, life) in l.lives.iter().enumerate() {
        // The slot's pod generation and restarts after the events up to `i`.
        let (mut generation, mut restarts, mut last) = (0u32, life.before, None);
        for (at, e) in life.events.iter().filter(|(at, _)| *at <= i) {
            match e {
                Event::Graceful | Event::Evicted => {
                    let mut old = pod(slot, generation, restarts, last);
                    if *e == Event::Evicted {
                        // Kept until pod GC, whatever happens next.
                        old.phase = "Failed".into();
                        old.ready = false;
                        old.ended = Some("Evicted (The node was low on resource: ephemeral-storage.)".into());
                        pods.push(old);
                    } else if *at == i {
                        // Deleted: still listed while it terminates.
                        old.terminating = true;
                        old.ready = false;
                        pods.push(old);
                    }
                    generation += 1;
                    restarts = 0;
                    last = None;
                }
                Event::OomKilled => {
                    restarts += 1;
                    last = Some(("OOMKilled", 137));
                }
                Event::Restart => {
                    restarts += 1;
                    last = Some(("Error", 1));
                }
            }
        }
        pods.push(pod(slot, generation, restarts, last));
    }
    ServiceState { pods, ..Default::default() }
}

fn verdict(l: &Lifetimes) -> (Verdict, bool, String) {
    let exp = Expected {
        digest: NEW.into(),
        storage_uri: "s3://m/v2/".into(),
        kserve: true,
        workload: "InferenceService",
        replicas: u32::try_from(l.lives.len()).unwrap_or(1),
    };
    let mut w = RolloutWatch::new(exp, f64::from(l.window_s));
    for i in 0..=l.window_s + 3 {
        if w.observe(f64::from(i), read(l, i)) {
            break;
        }
    }
    let v = w.finish().expect("read at least once");
    let why = v.outcome.diagnostics.iter().map(|d| format!("{} {}", d.code, d.message)).collect::<Vec<_>>().join("\n");
    (rollout::verdict_of(&v.outcome.diagnostics), v.complete, why)
}

proptest! {
    #![proptest_config(crate::util::prop_config(10_000))]

    #[test]
    fn pass_iff_no_pod_ended_for_a_failure_and_no_restart_grew_inside_the_window(l in lifetimes()) {
        let failed_inside =
            l.lives.iter().any(|life| life.events.iter().any(|(at, e)| *at <= l.window_s && e.is_failure()));
        let (v, complete, why) = verdict(&l);
        if failed_inside {
            prop_assert_ne!(v, Verdict::Pass, "a failure inside the window passed:\n{}\n{:?}", why, l);
            prop_assert!(!complete);
        } else {
            prop_assert_eq!(v, Verdict::Pass, "nothing failed inside the window:\n{}\n{:?}", why, l);
            prop_assert!(complete, "{:?}", l);
        }
    }
}
