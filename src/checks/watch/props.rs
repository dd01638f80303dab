//! The post-merge decision as properties over generated cluster states.
//!
//! `decide` calls the step functions `app::watch` calls (`steps`: the argo
//! step and its outcome, the rollout held by `RolloutWatch` over
//! `ownership::release_state` per read, the identity step, the revert
//! decision), so the properties hold the real decision, not a copy. Two properties, 10,000 states each:
//!
//! 1. a good release, with any neighbours a lived-in namespace has (Job
//!    pods and hand-made copies carrying the app's labels, another
//!    InferenceService's pods, old pods stuck terminating or evicted,
//!    restarts from before the merge, an autoscaler's extra pods, Argo CD on
//!    a later commit that leaves the bundle alone or on the hydrated commit),
//!    always PASSES — so it is never FAIL and never reverted;
//! 2. a bad release (new pods Pending, crash-looping, a restart storm while
//!    Ready, the old release still routed by the Service, the identity
//!    endpoint answering another release, Argo CD behind the merge), with
//!    the same neighbours, is never PASS.

use proptest::prelude::*;
use serde_json::json;

use super::argo::{self, Ancestry, AppStatus, History, Hydration, Rendered, RevisionFacts};
use super::ownership::{self, Root};
use super::rollout::{Expected, IdentityExpectation, IdentitySample};
use super::stability::RolloutWatch;
use super::state::{
    ClusterView, ContainerRestarts, EndpointInfo, KnativeTraffic, ModelSource, ObjectRef, OwnerRef, PodInfo,
    ReplicaSetInfo,
};
use super::steps::{self, ArgoOutcome, ArgoWatch, IdentityPlan};
use crate::report::{Report, StepReport, Verdict};

const NAME: &str = "llm";
const NEW: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";
const OLD: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const URI: &str = "s3://models/llm/v2/";
const MERGE: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const LATER: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const HYDRATED: &str = "cccccccccccccccccccccccccccccccccccccccc";
const BEHIND: &str = "dddddddddddddddddddddddddddddddddddddddd";

fn owner(kind: &str, name: &str) -> OwnerRef {
    OwnerRef { kind: kind.into(), name: name.into(), uid: Some(format!("uid-{kind}-{name}")), controller: true }
}

fn object(kind: &str, name: &str, up: Option<(&str, &str)>) -> ObjectRef {
    ObjectRef {
        kind: kind.into(),
        name: name.into(),
        uid: Some(format!("uid-{kind}-{name}")),
        owners: up.map(|(k, n)| vec![owner(k, n)]).unwrap_or_default(),
    }
}

/// How the workload is deployed: the chain from the ReplicaSet up.
#[derive(Debug, Clone, Copy)]
enum Mode {
    Raw,
    Serverless,
    PlainDeployment,
}

/// The release's controllers for one revision (`rev` 1 old, 2 new): its
/// ReplicaSet's name, and the objects of the chain.
fn chain_for(mode: Mode, rev: u32) -> (String, Vec<ObjectRef>) {
    match mode {
        Mode::Raw => {
            let rs = format!("{NAME}-predictor-rs{rev}");
            (
                rs.clone(),
                vec![
                    object("ReplicaSet", &rs, Some(("Deployment", &format!("{NAME}-predictor")))),
                    object("Deployment", &format!("{NAME}-predictor"), Some(("InferenceService", NAME))),
                ],
            )
        }
        Mode::PlainDeployment => {
            let rs = format!("{NAME}-rs{rev}");
            (rs.clone(), vec![object("ReplicaSet", &rs, Some(("Deployment", NAME))), object("Deployment", NAME, None)])
        }
        Mode::Serverless => {
            let revision = format!("{NAME}-predictor-0000{rev}");
            let dep = format!("{revision}-deployment");
            let rs = format!("{dep}-rs");
            (
                rs.clone(),
                vec![
                    object("ReplicaSet", &rs, Some(("Deployment", &dep))),
                    object("Deployment", &dep, Some(("Revision", &revision))),
                    object("Revision", &revision, Some(("Configuration", &format!("{NAME}-predictor")))),
                    object(
                        "Configuration",
                        &format!("{NAME}-predictor"),
                        Some(("Service", &format!("{NAME}-predictor"))),
                    ),
                    object("Service", &format!("{NAME}-predictor"), Some(("InferenceService", NAME))),
                ],
            )
        }
    }
}

fn service_name(mode: Mode) -> String {
    match mode {
        Mode::PlainDeployment => NAME.into(),
        _ => format!("{NAME}-predictor"),
    }
}

fn pod(name: &str, digest: &str, rs_owner: OwnerRef, ready: bool, restarts: u32) -> PodInfo {
    PodInfo {
        name: name.into(),
        uid: Some(format!("uid-pod-{name}")),
        digest: Some(digest.into()),
        phase: "Running".into(),
        ready,
        restarts,
        containers: vec![ContainerRestarts {
            name: "kserve-container".into(),
            restarts,
            last_reason: (restarts > 0).then(|| "Error".into()),
            last_exit_code: (restarts > 0).then_some(1),
            last_finished_at: None,
        }],
        source: Some(ModelSource::StorageInitializer {
            uri: if digest == NEW { URI.into() } else { "s3://models/llm/v1/".into() },
        }),
        owner: Some(rs_owner.name.clone()),
        owners: vec![rs_owner],
        labelled: true,
        ..Default::default()
    }
}

/// A neighbour the namespace may hold; none of them is the release's
/// business.
#[derive(Debug, Clone)]
enum Neighbour {
    /// An evaluation Job's pod carrying the app's labels (any phase).
    JobPod { phase: &'static str, ready: bool },
    /// A hand-copied Deployment with the same labels (its own Service).
    Copy { ready: bool },
    /// Another InferenceService's pod.
    OtherIsvc,
    /// An old pod of the release stuck terminating (maybe still Ready).
    OldTerminating { ready: bool },
    /// An old pod evicted, kept until pod GC.
    OldEvicted,
    /// A bare pod with the app's labels (no owner).
    Bare,
}

fn neighbour() -> impl Strategy<Value = Neighbour> {
    prop_oneof![
        (prop_oneof![Just("Running"), Just("Succeeded"), Just("Failed"), Just("Pending")], any::<bool>())
            .prop_map(|(phase, ready)| Neighbour::JobPod { phase, ready }),
        any::<bool>().prop_map(|ready| Neighbour::Copy { ready }),
        Just(Neighbour::OtherIsvc),
        any::<bool>().prop_map(|ready| Neighbour::OldTerminating { ready }),
        Just(Neighbour::OldEvicted),
        Just(Neighbour::Bare),
    ]
}

/// How Argo CD reports the deployed release.
#[derive(Debug, Clone, Copy)]
enum ArgoSeen {
    Merge,
    /// sync.revision moved to a later commit without touching the bundle;
    /// the operation was for the merge or for that commit.
    LaterUnchanged {
        op_on_later: bool,
    },
    /// The source hydrator: sync.revision is the hydrated commit.
    Hydrated,
    /// Bad: still on an ancestor of the merge.
    Behind,
}

fn app_for(seen: ArgoSeen) -> AppStatus {
    let mut a = AppStatus {
        name: NAME.into(),
        sync_status: Some("Synced".into()),
        health: Some("Healthy".into()),
        phase: Some("Succeeded".into()),
        finished_at: Some("2026-01-01T10:05:00Z".into()),
        ..Default::default()
    };
    let (rev, op) = match seen {
        ArgoSeen::Merge => (MERGE, MERGE),
        ArgoSeen::LaterUnchanged { op_on_later } => (LATER, if op_on_later { LATER } else { MERGE }),
        ArgoSeen::Hydrated => {
            a.hydrated = vec![Hydration { dry_sha: MERGE.into(), hydrated_sha: Some(HYDRATED.into()), phase: None }];
            (HYDRATED, HYDRATED)
        }
        ArgoSeen::Behind => (BEHIND, BEHIND),
    };
    a.sync_revision = Some(rev.into());
    a.operation_revision = Some(op.into());
    a
}

/// What the git adapter reads at each revision of these worlds: the merge
/// and a later commit render this release, the hydrated commit is not in
/// the local repository, the commit behind is older.
fn history_of(revisions: &[String]) -> History {
    let renders_new = || vec![Rendered { path: "llm/release.yaml".into(), digest: Ok(NEW.into()) }];
    let facts = |rev: &str| {
        let (ancestry, rendered) = match rev {
            MERGE => (Ancestry::Same, renders_new()),
            LATER => (Ancestry::Descendant, renders_new()),
            HYDRATED => (Ancestry::Unknown("not in the local repository".into()), Vec::new()),
            _ => (Ancestry::Older, renders_new()),
        };
        RevisionFacts { ancestry, rendered, hydrated_from: None }
    };
    History { revisions: revisions.iter().map(|r| (r.clone(), facts(r))).collect() }
}

/// One generated world: the release's pods over time, its neighbours, routing.
#[derive(Debug, Clone)]
struct World {
    mode: Mode,
    replicas: u32,
    /// Ready new pods (≥ replicas in a good world).
    ready_new: u32,
    /// Restarts the new pods had before the merge (constant over time).
    old_restarts: u32,
    /// An autoscaler's extra new pod still Pending.
    extra_pending: bool,
    /// Routing read from EndpointSlices / Knative traffic (else readiness).
    routing_known: bool,
    neighbours: Vec<Neighbour>,
    argo: ArgoSeen,
    window_s: f64,
    /// Seconds between reads.
    poll_s: f64,
}

fn world() -> impl Strategy<Value = World> {
    (
        prop_oneof![Just(Mode::Raw), Just(Mode::Serverless), Just(Mode::PlainDeployment)],
        1u32..4,
        0u32..3,
        0u32..6,
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(neighbour(), 0..6),
        prop_oneof![
            Just(ArgoSeen::Merge),
            any::<bool>().prop_map(|op_on_later| ArgoSeen::LaterUnchanged { op_on_later }),
            Just(ArgoSeen::Hydrated)
        ],
        // A window of 0 (one read) is an explicit opt-out, kept as a named test.
        5.0..120.0f64,
        1.0..10.0f64,
    )
        .prop_map(
            |(
                mode,
                replicas,
                extra,
                old_restarts,
                extra_pending,
                routing_known,
                neighbours,
                argo,
                window_s,
                poll_s,
            )| World {
                mode,
                replicas,
                ready_new: replicas + extra,
                old_restarts,
                extra_pending,
                routing_known,
                neighbours,
                argo,
                window_s,
                poll_s,
            },
        )
}

/// What can be wrong with a release.
#[derive(Debug, Clone, Copy)]
enum Fault {
    NewPending,
    CrashLoop,
    /// Ready at every read, restarting between them.
    RestartStormWhileReady,
    /// An old-release pod still Ready and among the Service's endpoints.
    OldStillRouted,
    IdentityWrong,
    ArgoBehind,
}

fn fault() -> impl Strategy<Value = Fault> {
    prop_oneof![
        Just(Fault::NewPending),
        Just(Fault::CrashLoop),
        Just(Fault::RestartStormWhileReady),
        Just(Fault::OldStillRouted),
        Just(Fault::IdentityWrong),
        Just(Fault::ArgoBehind),
    ]
}

/// The namespace at read `i` (restarts of a storm grow with `i`).
fn view_at(w: &World, fault: Option<Fault>, i: u32) -> ClusterView {
    let (new_rs, mut objects) = chain_for(w.mode, 2);
    let (old_rs, old_objects) = chain_for(w.mode, 1);
    for o in old_objects {
        if !objects.iter().any(|x| x.kind == o.kind && x.name == o.name) {
            objects.push(o);
        }
    }
    if !matches!(w.mode, Mode::PlainDeployment) {
        objects.push(object("InferenceService", NAME, None));
    }
    let mut v = ClusterView { objects, ..Default::default() };
    v.replica_sets.push(ReplicaSetInfo {
        name: new_rs.clone(),
        digest: Some(NEW.into()),
        replicas: w.ready_new as i32,
        ready: w.ready_new as i32,
    });
    v.replica_sets.push(ReplicaSetInfo { name: old_rs.clone(), digest: Some(OLD.into()), replicas: 0, ready: 0 });
    let mut endpoints = Vec::new();
    let svc = service_name(w.mode);
    for n in 0..w.ready_new {
        let restarts = match fault {
            Some(Fault::RestartStormWhileReady) if n == 0 => w.old_restarts + i,
            _ => w.old_restarts,
        };
        let mut p = pod(&format!("new-{n}"), NEW, owner("ReplicaSet", &new_rs), true, restarts);
        if matches!(fault, Some(Fault::CrashLoop)) && n == 0 {
            p.ready = false;
            p.crash_loop = true;
            p.restarts = w.old_restarts + 3;
            p.waiting = vec!["kserve-container: CrashLoopBackOff (back-off 40s)".into()];
        }
        if matches!(fault, Some(Fault::NewPending)) && n < w.ready_new.saturating_sub(w.replicas) + 1 {
            p.phase = "Pending".into();
            p.ready = false;
            p.source = None;
        }
        if p.ready {
            endpoints.push(EndpointInfo { service: svc.clone(), pod: p.name.clone(), ready: true });
        }
        v.pods.push(p);
    }
    if w.extra_pending {
        let mut p = pod("new-extra", NEW, owner("ReplicaSet", &new_rs), false, 0);
        p.phase = "Pending".into();
        v.pods.push(p);
    }
    if matches!(fault, Some(Fault::OldStillRouted)) {
        let p = pod("old-serving", OLD, owner("ReplicaSet", &old_rs), true, 0);
        endpoints.push(EndpointInfo { service: svc.clone(), pod: p.name.clone(), ready: true });
        v.replica_sets[1].replicas = 1;
        v.pods.push(p);
    }
    for (k, n) in w.neighbours.iter().enumerate() {
        let name = format!("neighbour-{k}");
        let p = match n {
            Neighbour::JobPod { phase, ready } => PodInfo {
                phase: (*phase).into(),
                ready: *ready && *phase == "Running",
                ..pod(&name, OLD, owner("Job", "llm-eval"), false, 0)
            },
            Neighbour::Copy { ready } => pod(&name, OLD, owner("ReplicaSet", "llm-shadow-rs"), *ready, 0),
            Neighbour::OtherIsvc => pod(&name, "sha256:other", owner("ReplicaSet", "other-predictor-rs"), true, 7),
            Neighbour::OldTerminating { ready } => {
                PodInfo { terminating: true, ..pod(&name, OLD, owner("ReplicaSet", &old_rs), *ready, 0) }
            }
            Neighbour::OldEvicted => {
                PodInfo { phase: "Failed".into(), ..pod(&name, OLD, owner("ReplicaSet", &old_rs), true, 0) }
            }
            Neighbour::Bare => {
                PodInfo { owners: Vec::new(), owner: None, ..pod(&name, OLD, owner("ReplicaSet", "x"), true, 0) }
            }
        };
        v.pods.push(p);
    }
    // The copy and the other InferenceService have their own controllers and Services.
    v.objects.push(object("ReplicaSet", "llm-shadow-rs", Some(("Deployment", "llm-shadow"))));
    v.objects.push(object("Deployment", "llm-shadow", None));
    v.objects.push(object("ReplicaSet", "other-predictor-rs", Some(("Deployment", "other-predictor"))));
    v.objects.push(object("Deployment", "other-predictor", Some(("InferenceService", "other"))));
    v.objects.push(object("Job", "llm-eval", Some(("CronJob", "llm-nightly-eval"))));
    for (k, n) in w.neighbours.iter().enumerate() {
        if matches!(n, Neighbour::Copy { ready: true }) {
            endpoints.push(EndpointInfo { service: "llm-shadow".into(), pod: format!("neighbour-{k}"), ready: true });
        }
    }
    if w.routing_known {
        if matches!(w.mode, Mode::Serverless) {
            let mut percent = std::collections::BTreeMap::new();
            percent.insert(format!("{NAME}-predictor-00002"), 100);
            if matches!(fault, Some(Fault::OldStillRouted)) {
                percent.insert(format!("{NAME}-predictor-00002"), 80);
                percent.insert(format!("{NAME}-predictor-00001"), 20);
            }
            v.traffic.push(KnativeTraffic {
                service: svc.clone(),
                percent,
                latest_created: Some(format!("{NAME}-predictor-00002")),
                latest_ready: Some(format!("{NAME}-predictor-00002")),
            });
        }
        v.endpoints = Some(endpoints);
    }
    v
}

/// The watch's decision over a world, through the same step functions
/// `app::watch` calls (`steps`): the argo step and its outcome, the
/// rollout held by `RolloutWatch` and written up, the identity answer, the
/// revert decision. Returns the report and whether it would revert.
fn decide(w: &World, fault: Option<Fault>) -> (Report, bool) {
    let mut r = Report::new("watch");
    let seen = if matches!(fault, Some(Fault::ArgoBehind)) { ArgoSeen::Behind } else { w.argo };
    let app = app_for(seen);
    let mut argo = ArgoWatch::new(Some(MERGE), argo::parse_time("2026-01-01T10:00:00Z"), NEW);
    let history = history_of(&argo.unplaced(&app));
    argo.read(Some(app), Some(&history));
    let (argo_step, outcome, _) = argo.finish("argocd/llm on https://cluster", "argocd/llm", 1.0, "10m");
    r.push(argo_step);
    let window = std::time::Duration::from_secs_f64(w.window_s);
    match outcome {
        ArgoOutcome::Deployed => {
            let exp = Expected {
                digest: NEW.into(),
                storage_uri: URI.into(),
                kserve: !matches!(w.mode, Mode::PlainDeployment),
                workload: if matches!(w.mode, Mode::PlainDeployment) { "Deployment" } else { "InferenceService" },
                replicas: w.replicas,
            };
            let root = Root::for_bundle(NAME, exp.workload);
            let mut watch = RolloutWatch::new(exp, w.window_s);
            // Reads every poll_s until done or well past the window.
            let reads = ((w.window_s / w.poll_s).ceil() as u32) + 3;
            for i in 0..reads {
                let st = ownership::release_state(&view_at(w, fault, i), &root);
                if watch.observe(f64::from(i) * w.poll_s, st) {
                    break;
                }
            }
            let (s, _) = steps::rollout_step("release", watch.finish(), None, window, "10m", w.window_s);
            r.push(s);
        }
        ArgoOutcome::Superseded(why) => {
            for s in steps::superseded_steps("release", &why, false) {
                r.push(s);
            }
            let revert = steps::revert_wanted(true, &r);
            return (r, revert);
        }
        ArgoOutcome::NotDeployed => r.push(StepReport::not_run("rollout", "release", "not deployed")),
    }
    let reported = if matches!(fault, Some(Fault::IdentityWrong)) { OLD } else { NEW };
    let plan = IdentityPlan {
        path: "/model".into(),
        expect: vec![IdentityExpectation {
            field: "release".into(),
            digest_of: "release".into(),
            expected: Some(NEW.into()),
        }],
        registered_field: Some("registered".into()),
        span: None,
    };
    let answer = IdentitySample { at_s: 1.0, answer: Ok(json!({"release": reported, "registered": true})) };
    r.push(steps::identity_step("release", &plan, "http://svc/model", &[answer], true));
    let revert = steps::revert_wanted(true, &r);
    (r, revert)
}

fn explain(r: &Report) -> String {
    r.steps
        .iter()
        .map(|s| {
            format!(
                "{}: {} {:?}",
                s.step,
                s.verdict,
                s.diagnostics.iter().map(|d| format!("{} {}", d.code, d.message)).collect::<Vec<_>>()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

proptest! {
    // 10,000 states each; BUNDLEGATE_PROP_CASES lowers it for mutation runs only.
    #![proptest_config(crate::util::prop_config(10_000))]

    #[test]
    fn a_good_release_among_any_neighbours_passes_and_is_never_reverted(w in world()) {
        let (r, revert) = decide(&w, None);
        prop_assert!(!revert, "would revert a good release:\n{}\n{w:?}", explain(&r));
        prop_assert_eq!(r.verdict, Verdict::Pass, "a good release did not pass:\n{}\n{:?}", explain(&r), w);
    }

    #[test]
    fn a_bad_release_among_any_neighbours_never_passes(w in world(), f in fault()) {
        let (r, _) = decide(&w, Some(f));
        prop_assert_ne!(r.verdict, Verdict::Pass, "{:?} passed:\n{}\n{:?}", f, explain(&r), w);
    }
}

/// Counterexamples the properties found while the rules were written, kept
/// by name.
mod regressions {
    use super::*;

    fn base() -> World {
        World {
            mode: Mode::Raw,
            replicas: 1,
            ready_new: 1,
            old_restarts: 0,
            extra_pending: false,
            routing_known: true,
            neighbours: vec![],
            argo: ArgoSeen::Merge,
            window_s: 10.0,
            poll_s: 2.0,
        }
    }

    #[test]
    fn an_autoscalers_pending_pod_next_to_enough_ready_ones_is_not_a_failure() {
        let (r, revert) = decide(&World { extra_pending: true, ..base() }, None);
        assert_eq!(r.verdict, Verdict::Pass, "{}", explain(&r));
        assert!(!revert);
        assert!(
            r.steps
                .iter()
                .flat_map(|s| &s.diagnostics)
                .any(|d| d.code == crate::diag::Code::PodsNotServing && d.message.contains("new-extra")),
            "{}",
            explain(&r)
        );
    }

    #[test]
    fn a_ready_copy_with_the_apps_labels_is_not_another_release_serving() {
        let (r, _) = decide(
            &World {
                neighbours: vec![Neighbour::Copy { ready: true }, Neighbour::JobPod { phase: "Running", ready: true }],
                routing_known: false,
                ..base()
            },
            None,
        );
        assert_eq!(r.verdict, Verdict::Pass, "{}", explain(&r));
    }

    #[test]
    fn a_restart_storm_between_ready_reads_fails_with_its_own_code() {
        let (r, revert) = decide(&base(), Some(Fault::RestartStormWhileReady));
        assert_eq!(r.verdict, Verdict::Fail, "{}", explain(&r));
        assert!(
            r.steps.iter().flat_map(|s| &s.diagnostics).any(|d| d.code == crate::diag::Code::RestartStorm),
            "{}",
            explain(&r)
        );
        assert!(revert);
    }

    #[test]
    fn a_window_of_zero_judges_one_read_and_cannot_see_a_storm() {
        // Documented: --stable-for 0s is one snapshot; the storm is invisible.
        let (r, _) = decide(&World { window_s: 0.0, ..base() }, Some(Fault::RestartStormWhileReady));
        assert_eq!(r.verdict, Verdict::Pass, "{}", explain(&r));
    }
}
