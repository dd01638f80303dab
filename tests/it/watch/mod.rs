//! Tests for `watch` and `revert` (issue #7).
//!
//! These scripted timelines (a pod Pending, then Ready, at given seconds)
//! run against a stand-in Kubernetes API (`standin::Cluster`; the real
//! control plane's watch test is in `real_cluster.rs`) that
//! serves Application, Deployment, ReplicaSet, Pod and Event objects in their
//! real shapes from a scripted timeline and records every request (all must be
//! GET). The model service is a real local HTTP server that can be stopped.
//! Reverts push to a real bare repository served by `git daemon` and open the
//! PR on a GitHub stand-in validated against GitHub's OpenAPI description.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::http::Reply;
use crate::support::{repo, run_in, step, Out};

use crate::support::kube as standin;
use standin::{Frame, Server};

// ---------------------------------------------------------------------------
// Real-shaped objects

pub(crate) const NAME: &str = "llm-scratch";
pub(crate) const NS: &str = "ai-lab";
pub(crate) const OLD: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
pub(crate) const OLD_SHA: &str = "9f3e1c0d2b4a59687766554433221100ffeeddcc";
pub(crate) const CKPT_SHA: &str = "sha256:bb614beb3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586";

pub(crate) fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/watch").join(name)
}

/// The Application fixture with this revision, phase, health and finish time.
pub(crate) fn application(revision: &str, phase: &str, health: &str, finished_at: &str) -> Value {
    let text = std::fs::read_to_string(fixture("application.yaml")).unwrap().replace("REVISION", revision);
    let mut a: Value = serde_yaml_ng::from_str(&text).unwrap();
    a["status"]["operationState"]["phase"] = json!(phase);
    a["status"]["operationState"]["finishedAt"] = json!(finished_at);
    a["status"]["health"]["status"] = json!(health);
    if phase == "Running" {
        a["status"]["operationState"].as_object_mut().unwrap().remove("finishedAt");
        a["status"]["operationState"]["message"] =
            json!("waiting for healthy state of serving.kserve.io/InferenceService/llm-scratch");
    }
    a
}

pub(crate) struct PodSpec<'a> {
    pub(crate) name: &'a str,
    pub(crate) digest: &'a str,
    pub(crate) phase: &'a str,
    pub(crate) ready: bool,
    pub(crate) restarts: i32,
    pub(crate) waiting: Option<(&'a str, &'a str)>,
    pub(crate) source: &'a str,
    pub(crate) terminating: bool,
}

impl<'a> PodSpec<'a> {
    pub(crate) fn ready(name: &'a str, digest: &'a str, source: &'a str) -> Self {
        PodSpec { name, digest, phase: "Running", ready: true, restarts: 0, waiting: None, source, terminating: false }
    }
}

/// A KServe predictor pod as the API returns it: the storage-initializer
/// holds the real source, the main container's STORAGE_URI is rewritten.
pub(crate) fn pod(p: PodSpec) -> Value {
    let rs = p.name.rsplit_once('-').map(|(a, _)| a).unwrap_or(p.name);
    let t = "2026-01-01T10:05:10Z";
    let ready_s = if p.ready { "True" } else { "False" };
    let mut state = json!({"running": {"startedAt": t}});
    if let Some((reason, msg)) = p.waiting {
        state = json!({"waiting": {"reason": reason, "message": msg}});
    }
    let scheduled = p.phase != "Pending" || p.waiting.is_some();
    let mut status = json!({
        "phase": p.phase,
        "conditions": [
            {"type": "PodScheduled", "status": if scheduled { "True" } else { "False" }, "lastTransitionTime": t,
             "reason": if scheduled { Value::Null } else { json!("Unschedulable") }},
            {"type": "Ready", "status": ready_s, "lastTransitionTime": t},
            {"type": "ContainersReady", "status": ready_s, "lastTransitionTime": t}
        ],
        "qosClass": "Burstable"
    });
    if scheduled {
        // The API server omits an unset reason; it never sends null.
        status["conditions"][0].as_object_mut().unwrap().remove("reason");
        status["hostIP"] = json!("192.168.126.11");
        status["podIP"] = json!("10.217.0.57");
        status["startTime"] = json!(t);
        status["initContainerStatuses"] = json!([{
            "name": "storage-initializer", "ready": true, "restartCount": 0, "image": "kserve/storage-initializer:v0.15.0",
            "imageID": "", "started": false,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": t, "finishedAt": t}}
        }]);
        let mut cs = json!({
            "name": "kserve-container", "ready": p.ready, "restartCount": p.restarts, "started": p.ready,
            "image": "registry.example.com/ai-lab/llm-serve@sha256:7c7c", "imageID": "", "state": state
        });
        if p.restarts > 0 {
            cs["lastState"] =
                json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": t, "finishedAt": t}});
        }
        status["containerStatuses"] = json!([cs]);
    }
    let mut meta = json!({
        "name": p.name, "namespace": NS, "uid": format!("uid-{}", p.name), "resourceVersion": "48100",
        "creationTimestamp": t,
        "labels": {
            "serving.kserve.io/inferenceservice": NAME,
            "app.kubernetes.io/name": NAME,
            "component": "predictor",
            "pod-template-hash": rs.rsplit('-').next().unwrap_or("")
        },
        "annotations": {"bundlegate.dev/release-digest": p.digest, "serving.kserve.io/storage-initializer-sourceuri": p.source},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": format!("uid-{rs}"), "controller": true, "blockOwnerDeletion": true}]
    });
    if p.terminating {
        meta["deletionTimestamp"] = json!("2026-01-01T10:06:00Z");
        meta["deletionGracePeriodSeconds"] = json!(30);
    }
    let mut v = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "initContainers": [{
                "name": "storage-initializer", "image": "kserve/storage-initializer:v0.15.0",
                "args": [p.source, "/mnt/models"],
                "volumeMounts": [{"name": "kserve-provision-location", "mountPath": "/mnt/models"}]
            }],
            "containers": [{
                "name": "kserve-container", "image": "registry.example.com/ai-lab/llm-serve@sha256:7c7c",
                "env": [{"name": "STORAGE_URI", "value": "/mnt/models"}, {"name": "BUNDLEGATE_RELEASE_DIGEST", "value": p.digest}],
                "resources": {"requests": {"cpu": "2", "memory": "8Gi"}}
            }],
            "volumes": [{"name": "kserve-provision-location", "emptyDir": {}}],
            "restartPolicy": "Always"
        },
        "status": status
    });
    if scheduled {
        v["spec"]["nodeName"] = json!("crc");
    }
    v
}

pub(crate) fn deployment(updated: i32, ready: i32, available: i32, conds: &[(&str, &str, &str, &str)]) -> Value {
    let conditions: Vec<Value> = conds
        .iter()
        .map(|(t, s, r, m)| json!({"type": t, "status": s, "reason": r, "message": m, "lastUpdateTime": "2026-01-01T10:05:05Z", "lastTransitionTime": "2026-01-01T10:05:05Z"}))
        .collect();
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": format!("{NAME}-predictor"), "namespace": NS, "uid": "uid-deploy", "generation": 4,
                     "labels": {"serving.kserve.io/inferenceservice": NAME, "app.kubernetes.io/name": NAME},
                     "ownerReferences": [{"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "name": NAME, "uid": "uid-isvc", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "replicas": 1, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": format!("isvc.{NAME}-predictor")}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": format!("isvc.{NAME}-predictor")}}, "spec": {"containers": [{"name": "kserve-container", "image": "x"}]}}
        },
        "status": {"observedGeneration": 4, "replicas": 2, "updatedReplicas": updated, "readyReplicas": ready, "availableReplicas": available, "conditions": conditions}
    })
}

pub(crate) fn replicaset(name: &str, digest: &str, replicas: i32, ready: i32) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                     "labels": {"serving.kserve.io/inferenceservice": NAME, "app.kubernetes.io/name": NAME},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": format!("{NAME}-predictor"), "uid": "uid-deploy", "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": format!("isvc.{NAME}-predictor")}},
                 "template": {"metadata": {"annotations": {"bundlegate.dev/release-digest": digest}}, "spec": {"containers": [{"name": "kserve-container", "image": "x"}]}}},
        "status": {"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready}
    })
}

pub(crate) fn event(kind: &str, object: &str, type_: &str, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{object}.{}", reason.to_ascii_lowercase()), "namespace": NS},
        "involvedObject": {"kind": kind, "name": object, "namespace": NS, "apiVersion": if kind == "Pod" { "v1" } else { "apps/v1" }},
        "type": type_, "reason": reason, "message": message, "count": 3,
        "firstTimestamp": "2026-01-01T10:05:06Z", "lastTimestamp": "2026-01-01T10:05:40Z",
        "source": {"component": "default-scheduler"}
    })
}

pub(crate) const OLD_POD: &str = "llm-scratch-predictor-868c589678-6k9cm";
pub(crate) const NEW_POD: &str = "llm-scratch-predictor-6786d546b4-5tfgh";
pub(crate) const V1_URI: &str = "s3://models/llm-scratch/v1/";
pub(crate) const V2_URI: &str = "s3://models/llm-scratch/v2/";

/// Deployment conditions while the new pod is not ready: both True, the
/// state in which `get deploy` and Argo read green (as when a ReadWriteOncePod
/// rollout deadlocked).
pub(crate) fn green_deployment() -> Value {
    deployment(
        1,
        1,
        1,
        &[
            ("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            (
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                "ReplicaSet \"llm-scratch-predictor-6786d546b4\" is progressing.",
            ),
        ],
    )
}

pub(crate) fn done_deployment() -> Value {
    deployment(
        1,
        1,
        1,
        &[
            ("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            (
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                "ReplicaSet \"llm-scratch-predictor-6786d546b4\" has successfully progressed.",
            ),
        ],
    )
}

/// The InferenceService the bundle renders (RawDeployment), as the API
/// returns it: the root of its pods' ownership chain.
pub(crate) fn inference_service() -> Value {
    json!({
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
        "metadata": {"name": NAME, "namespace": NS, "uid": "uid-isvc", "generation": 2,
                     "annotations": {"serving.kserve.io/deploymentMode": "RawDeployment"}},
        "spec": {"predictor": {"model": {"modelFormat": {"name": "vllm"}, "storageUri": V2_URI}}},
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T10:05:30Z"}]}
    })
}

/// Old ReplicaSet + new ReplicaSet, the Deployment and its InferenceService,
/// plus the given pods and events.
pub(crate) fn objects(new: &str, dep: Value, pods: Vec<Value>, events: Vec<Value>) -> Vec<Value> {
    let mut v = vec![
        inference_service(),
        dep,
        replicaset("llm-scratch-predictor-868c589678", OLD, 1, 1),
        replicaset("llm-scratch-predictor-6786d546b4", new, 1, 0),
    ];
    v.extend(pods);
    v.extend(events);
    v
}

// ---------------------------------------------------------------------------
// The model service: a real local server answering /health/ready and /model

pub(crate) struct ModelService {
    server: Option<Server>,
    port: u16,
    identity: Arc<Mutex<Value>>,
}

impl ModelService {
    pub(crate) fn start(identity: Value) -> ModelService {
        let identity = Arc::new(Mutex::new(identity));
        let mut m = ModelService { server: None, port: 0, identity };
        m.up();
        m
    }
    fn up(&mut self) {
        let id = self.identity.clone();
        let h: standin::Handler = Arc::new(move |req| match req.path.as_str() {
            "/health/ready" => (200, json!({"status": "ok"})),
            "/model" => (200, id.lock().unwrap().clone()),
            _ => (404, json!({"detail": "Not Found"})),
        });
        let s = Server::start(self.port, h);
        self.port = s.port;
        self.server = Some(s);
    }
    /// Stop listening: probes get "connection refused", like during
    /// `delete pod -l` on a single replica.
    fn down(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.stop();
        }
    }
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

pub(crate) fn identity_ok(release: &str) -> Value {
    json!({"serving_digest": CKPT_SHA, "release_digest": release, "in_registry": true, "status": "production", "metrics": {"accuracy": 0.91}})
}

// ---------------------------------------------------------------------------
// Scenario runner

/// A temp git repository holding the bundle, so the merge commit (and its
/// time) is real: committed at 2026-01-01T10:00:00Z.
/// Where the Workspace keeps the bundle: the folder the Application's
/// `spec.source.path` names (`llm-scratch/v2`), as Argo CD renders it.
pub(crate) const BUNDLE: &str = "llm-scratch/v2/release.yaml";

pub(crate) struct Workspace {
    /// The commit before the merge (an ancestor: Argo CD behind).
    pub(crate) prev: String,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) sha: String,
    pub(crate) digest: String,
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2026-01-01T10:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T10:00:00Z")
        .env("GIT_AUTHOR_NAME", "dev")
        .env("GIT_AUTHOR_EMAIL", "dev@example.com")
        .env("GIT_COMMITTER_NAME", "dev")
        .env("GIT_COMMITTER_EMAIL", "dev@example.com")
        .env_remove("GIT_DIR")
        .output()
        .expect("git");
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

impl Workspace {
    pub(crate) fn new() -> Workspace {
        Workspace::with_bundle(|text| text)
    }

    /// [`Workspace::new`] with the bundle's text edited before it is committed.
    pub(crate) fn with_bundle(edit: impl FnOnce(String) -> String) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        std::fs::write(dir.path().join("README.md"), "models\n").unwrap();
        git(dir.path(), &["add", "README.md"]);
        git(dir.path(), &["commit", "-q", "-m", "the repository before the release"]);
        let prev = git(dir.path(), &["rev-parse", "HEAD"]);
        std::fs::create_dir_all(dir.path().join("llm-scratch/v2")).unwrap();
        std::fs::write(dir.path().join(BUNDLE), edit(std::fs::read_to_string(fixture("release.yaml")).unwrap()))
            .unwrap();
        git(dir.path(), &["add", BUNDLE]);
        git(dir.path(), &["commit", "-q", "-m", "release llm-scratch v2"]);
        let sha = git(dir.path(), &["rev-parse", "HEAD"]);
        let d = run_in(dir.path(), &["digest", BUNDLE, "--format", "json"], &[]);
        let digest = d.json()["steps"][0]["data"]["releaseDigest"].as_str().unwrap().to_string();
        Workspace { dir, sha, prev, digest }
    }

    /// A later commit on main after the merge: another model's change, or
    /// (`bundle_change`) a change of this bundle. The work tree goes back to
    /// the merge commit, as the watch job's checkout is.
    pub(crate) fn later_commit(&self, bundle_change: Option<(&str, &str)>) -> String {
        let p = self.path();
        git(p, &["checkout", "-q", "main"]);
        match bundle_change {
            Some((from, to)) => {
                let text = std::fs::read_to_string(p.join(BUNDLE)).unwrap();
                assert!(text.contains(from), "{from} not in the bundle");
                std::fs::write(p.join(BUNDLE), text.replacen(from, to, 1)).unwrap();
                git(p, &["commit", "-q", "-am", "change llm-scratch"]);
            }
            None => {
                std::fs::create_dir_all(p.join("other-model")).unwrap();
                std::fs::write(
                    p.join("other-model/notes.txt"),
                    format!("{}\n", git(p, &["rev-list", "--count", "HEAD"])),
                )
                .unwrap();
                git(p, &["add", "other-model"]);
                git(p, &["commit", "-q", "-m", "another model's release"]);
            }
        }
        let later = git(p, &["rev-parse", "HEAD"]);
        git(p, &["checkout", "-q", "--detach", &self.sha]);
        later
    }
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

pub(crate) fn run_watch(ws: &Workspace, frames: Vec<Frame>, extra: &[&str]) -> (Out, standin::Cluster) {
    let cluster = standin::Cluster::start(frames, ws.path());
    let mut args = vec!["watch", BUNDLE, "--app", NAME, "--revision", &ws.sha, "--format", "json"];
    // A short stability window unless the test sets its own: every PASS
    // here is still held over several reads.
    if !extra.contains(&"--stable-for") {
        args.extend_from_slice(&["--stable-for", "1s"]);
    }
    args.extend_from_slice(extra);
    let kc = cluster.kubeconfig.to_string_lossy().to_string();
    let out = run_in(ws.path(), &args, &[("KUBECONFIG", &kc), ("BUNDLEGATE_WATCH_POLL", "150ms"), ("GITHUB_SHA", "")]);
    (out, cluster)
}

pub(crate) fn all_text(d: &Value) -> String {
    let mut s = d["message"].as_str().unwrap_or("").to_string();
    for e in d["evidence"].as_array().into_iter().flatten() {
        s.push('\n');
        s.push_str(e.as_str().unwrap_or(""));
    }
    for h in d["help"].as_array().into_iter().flatten() {
        s.push('\n');
        s.push_str(h.as_str().unwrap_or(""));
    }
    s
}

/// All diagnostics text of one code in a step.
pub(crate) fn findings(v: &Value, step_name: &str, code: &str) -> String {
    step(v, step_name)["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == code)
        .map(all_text)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

pub(crate) fn synced(ws: &Workspace) -> Value {
    application(&ws.sha, "Succeeded", "Healthy", "2026-01-01T10:05:01Z")
}

// ---------------------------------------------------------------------------
// watch scenarios

#[test]
fn watch_healthy_swap_passes_with_evidence() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let frames = vec![
        // Argo still on the previous commit; the old pod serves.
        Frame {
            at_ms: 0,
            app: Some(application(OLD_SHA, "Succeeded", "Healthy", "2025-12-31T09:00:00Z")),
            objects: objects(OLD, done_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI))], vec![]),
        },
        // Sync of the merge commit running; health already says Healthy.
        Frame {
            at_ms: 300,
            app: Some(application(&ws.sha, "Running", "Healthy", "")),
            objects: objects(&d, green_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI))], vec![]),
        },
        // Synced; surge pod starting while the old one serves.
        Frame {
            at_ms: 700,
            app: Some(synced(&ws)),
            objects: objects(
                &d,
                green_deployment(),
                vec![
                    pod(PodSpec::ready(OLD_POD, OLD, V1_URI)),
                    pod(PodSpec { ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) }),
                ],
                vec![],
            ),
        },
        // New ready, old terminating.
        Frame {
            at_ms: 1300,
            app: Some(synced(&ws)),
            objects: objects(
                &d,
                done_deployment(),
                vec![
                    pod(PodSpec { terminating: true, ..PodSpec::ready(OLD_POD, OLD, V1_URI) }),
                    pod(PodSpec::ready(NEW_POD, &d, V2_URI)),
                ],
                vec![],
            ),
        },
        // Only the new release remains.
        Frame {
            at_ms: 1900,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]),
        },
    ];
    let model = ModelService::start(identity_ok(&d));
    let url = model.url();
    let started = Instant::now();
    let (out, cluster) =
        run_watch(&ws, frames, &["--timeout", "20s", "--service-url", &url, "--probe-interval", "100ms"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(v["verdict"], "pass");
    assert_eq!(step(&v, "argo")["verdict"], "pass");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains(&ws.sha));
    // It waited for the swap instead of trusting the first "Healthy".
    assert!(started.elapsed() >= Duration::from_millis(1900), "passed before the old pod was gone");
    let rollout = step(&v, "rollout");
    assert_eq!(rollout["verdict"], "pass");
    let groups = rollout["data"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(groups[0]["releaseDigest"], d.as_str());
    assert_eq!(groups[0]["pods"][0], NEW_POD);
    assert_eq!(step(&v, "identity")["verdict"], "pass");
    let down = step(&v, "downtime");
    assert_eq!(down["verdict"], "pass");
    assert!(down["data"]["stats"]["ok"].as_u64().unwrap() >= 5, "{down}");
    assert_eq!(down["data"]["stats"]["fail"], 0);
    // The timelines behind the Markdown charts: the old release's pod gone
    // and this release's serving by the last read; probes all answered.
    let reads = rollout["data"]["timeline"].as_array().unwrap();
    let last = reads.last().unwrap();
    assert_eq!(
        (last["serving"].as_u64(), last["pods"][&d].as_u64(), last["pods"][OLD].as_u64()),
        (Some(1), Some(1), None),
        "{reads:?}"
    );
    assert!(reads.iter().any(|r| r["pods"][OLD] == 1), "the old pod is on the timeline: {reads:?}");
    let spans = down["data"]["timeline"].as_array().unwrap();
    assert_eq!(
        spans.iter().map(|b| b["ok"].as_u64().unwrap()).sum::<u64>(),
        down["data"]["stats"]["ok"].as_u64().unwrap()
    );
    let md = crate::mermaid::markdown_of(&out.stdout);
    assert!(md.contains("title \"watch: serving pods of this release"), "{md}");
    assert!(md.contains("title \"downtime: failed health probes"), "{md}");
    if let Some(m) = crate::mermaid::mermaid_modules() {
        assert_eq!(crate::mermaid::parse_all(&m, &md).len(), 2, "{md}");
    }
    cluster.assert_read_only();
    let reqs = cluster.requests();
    assert!(reqs
        .iter()
        .any(|(_, p)| p.starts_with("/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/llm-scratch")));
    // Pods are listed namespace-wide: ownership, not a label selector, decides what is the release's.
    assert!(reqs.iter().any(|(_, p)| p.starts_with("/api/v1/namespaces/ai-lab/pods") && !p.contains("labelSelector")));
    assert!(reqs.iter().any(|(_, p)| p.starts_with("/apis/discovery.k8s.io/v1/namespaces/ai-lab/endpointslices")));
}

#[test]
fn watch_crashloop_behind_four_green_signals_fails_bg501() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let crash = PodSpec {
        phase: "Running",
        ready: false,
        restarts: 6,
        waiting: Some(("CrashLoopBackOff", "back-off 5m0s restarting failed container=kserve-container")),
        ..PodSpec::ready(NEW_POD, &d, V2_URI)
    };
    let frames = vec![Frame {
        at_ms: 0,
        // Argo: Synced, Succeeded, Healthy. Deployment: 1/1/1/1, Available, Progressing.
        app: Some(synced(&ws)),
        objects: objects(
            &d,
            green_deployment(),
            vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), pod(crash)],
            vec![event(
                "Pod",
                NEW_POD,
                "Warning",
                "BackOff",
                "Back-off restarting failed container kserve-container in pod llm-scratch-predictor-6786d546b4-5tfgh",
            )],
        ),
    }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "2s"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(v["verdict"], "fail");
    assert_eq!(step(&v, "argo")["verdict"], "pass", "Argo did sync; the rollout is what failed");
    let f = findings(&v, "rollout", "BG501");
    assert!(f.contains("CrashLoopBackOff") && f.contains("6 restart(s)"), "{f}");
    assert!(f.contains(OLD_POD) && f.contains("ready"), "the old serving pod is named: {f}");
    assert!(f.contains("Back-off restarting failed container"), "event evidence: {f}");
    assert!(f.contains("Available=True") && f.contains("not evidence"), "the green signals are shown as such: {f}");
    // No service URL: identity and downtime were not run, and say why.
    assert_eq!(step(&v, "identity")["verdict"], "not-run");
    assert!(step(&v, "downtime")["summary"].as_str().unwrap().contains("--service-url"));
    cluster.assert_read_only();
}

#[test]
fn watch_pending_insufficient_cpu_reports_the_scheduler_event() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let pending = PodSpec { phase: "Pending", ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) };
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(
            &d,
            green_deployment(),
            vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), pod(pending)],
            vec![event("Pod", NEW_POD, "Warning", "FailedScheduling", "0/1 nodes are available: 1 Insufficient cpu.")],
        ),
    }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "2s"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = out.json();
    let f = findings(&v, "rollout", "BG501");
    assert!(f.contains("Pending") && f.contains("0/1 nodes are available: 1 Insufficient cpu."), "{f}");
    assert!(f.contains("maxSurge"), "help names the cause: {f}");
    assert!(f.contains("timeout"), "says it waited: {f}");
    cluster.assert_read_only();
}

#[test]
fn watch_rwop_deadlock_fails_although_deployment_is_available_and_progressing() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let pending = PodSpec { phase: "Pending", ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) };
    let msg = "0/1 nodes are available: 1 node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod.";
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(
            &d,
            green_deployment(),
            vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), pod(pending)],
            vec![event("Pod", NEW_POD, "Warning", "FailedScheduling", msg)],
        ),
    }];
    let (out, _cluster) = run_watch(&ws, frames, &["--timeout", "2s"]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v["verdict"], "fail");
    let f = findings(&v, "rollout", "BG501");
    assert!(f.contains("ReadWriteOncePod access mode already in-use"), "{f}");
    assert!(f.contains("deadlock"), "{f}");
    assert!(f.contains("Progressing=True (ReplicaSetUpdated)"), "{f}");
}

#[test]
fn watch_progress_deadline_exceeded_stops_waiting() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let dep = deployment(
        1,
        1,
        1,
        &[
            ("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
            (
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                "ReplicaSet \"llm-scratch-predictor-6786d546b4\" has timed out progressing.",
            ),
        ],
    );
    let new = PodSpec { ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) };
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(&d, dep, vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), pod(new)], vec![]),
    }];
    let t = Instant::now();
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "60s"]);
    assert!(t.elapsed() < Duration::from_secs(30), "waited for the timeout although the controller gave up");
    assert_eq!(out.code, 1);
    let f = findings(&out.json(), "rollout", "BG501");
    assert!(f.contains("exceeded its progress deadline") && f.contains("has timed out progressing"), "{f}");
}

#[test]
fn watch_storage_initializer_source_is_compared_not_the_rewritten_env() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    // Right digest annotation, but the model came from the v1 prefix.
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V1_URI))], vec![]),
    }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "1s"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let f = findings(&out.json(), "rollout", "BG501");
    assert!(f.contains("reads its model from s3://models/llm-scratch/v1/"), "{f}");
    assert!(f.contains("STORAGE_URI env = /mnt/models"), "the rewritten env is shown, not trusted: {f}");
}

fn completed_frames(ws: &Workspace) -> Vec<Frame> {
    vec![Frame {
        at_ms: 0,
        app: Some(synced(ws)),
        objects: objects(&ws.digest, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &ws.digest, V2_URI))], vec![]),
    }]
}

#[test]
fn watch_identity_reporting_another_digest_fails_bg502() {
    let ws = Workspace::new();
    let mut id = identity_ok(&ws.digest);
    id["serving_digest"] = json!("sha256:20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586");
    let model = ModelService::start(id);
    let url = model.url();
    let (out, _c) = run_watch(&ws, completed_frames(&ws), &["--timeout", "5s", "--service-url", &url]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = out.json();
    assert_eq!(step(&v, "rollout")["verdict"], "pass", "the pods are right; only the service's answer is wrong");
    let f = findings(&v, "identity", "BG502");
    assert!(f.contains("serving_digest") && f.contains("20c86b9c"), "{f}");
    // release_digest matched: only the one field is reported.
    let diags = step(&v, "identity")["diagnostics"].as_array().unwrap().clone();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let rows = &step(&v, "identity")["tables"][0]["rows"];
    assert_eq!(rows[1][0], "release_digest");
    assert_eq!(rows[1][4], "ok");
}

#[test]
fn watch_identity_unregistered_fails_bg502() {
    let ws = Workspace::new();
    // After a manual promote: the digest is right, but the release is not in the registry.
    let id = json!({"serving_digest": CKPT_SHA.trim_start_matches("sha256:"), "release_digest": ws.digest, "in_registry": false, "status": "UNREGISTERED", "metrics": null});
    let model = ModelService::start(id);
    let url = model.url();
    let (out, _c) = run_watch(&ws, completed_frames(&ws), &["--timeout", "5s", "--service-url", &url]);
    assert_eq!(out.code, 1);
    let v = out.json();
    let f = findings(&v, "identity", "BG502");
    assert!(f.contains("not registered") && f.contains("UNREGISTERED"), "{f}");
    assert!(!f.contains("serving_digest` ="), "digests matched (with or without prefix): {f}");
    assert_eq!(step(&v, "identity")["diagnostics"].as_array().unwrap().len(), 1);
}

#[test]
fn watch_measures_downtime_when_the_service_stops() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let frames = vec![
        Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(
                &d,
                green_deployment(),
                vec![
                    pod(PodSpec::ready(OLD_POD, OLD, V1_URI)),
                    pod(PodSpec { ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) }),
                ],
                vec![],
            ),
        },
        Frame {
            at_ms: 3500,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]),
        },
    ];
    let model = Arc::new(Mutex::new(ModelService::start(identity_ok(&d))));
    let url = model.lock().unwrap().url();
    let cluster = standin::Cluster::start(frames, ws.path());
    let standin = cluster.standin.clone();
    // Like `delete pod -l` on one replica: the service goes away for ~1.5 s
    // while the rollout is under way.
    let m = model.clone();
    let chaos = std::thread::spawn(move || {
        let t = Instant::now();
        while standin.requests().is_empty() && t.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(800));
        m.lock().unwrap().down();
        std::thread::sleep(Duration::from_millis(1500));
        m.lock().unwrap().up();
    });
    let kc = cluster.kubeconfig.to_string_lossy().to_string();
    let out = run_in(
        ws.path(),
        &[
            "watch",
            BUNDLE,
            "--app",
            NAME,
            "--revision",
            &ws.sha,
            "--timeout",
            "20s",
            "--stable-for",
            "1s",
            "--service-url",
            &url,
            "--probe-interval",
            "100ms",
            "--format",
            "json",
        ],
        &[("KUBECONFIG", &kc), ("BUNDLEGATE_WATCH_POLL", "150ms")],
    );
    chaos.join().unwrap();
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(step(&v, "rollout")["verdict"], "pass");
    let down = step(&v, "downtime");
    assert_eq!(down["verdict"], "fail");
    let stats = &down["data"]["stats"];
    assert!(stats["fail"].as_u64().unwrap() >= 5, "{stats}");
    assert!(stats["ok"].as_u64().unwrap() >= 5, "{stats}");
    let gap = stats["longestGapS"].as_f64().unwrap();
    assert!((1.2..6.0).contains(&gap), "gap {gap}s for a ~1.5 s stop: {stats}");
    assert_eq!(stats["gapOpen"], false);
    let f = findings(&v, "downtime", "BG503");
    assert!(f.contains("longest gap") && f.contains("RESULT ok="), "{f}");
    cluster.assert_read_only();
}

#[test]
fn watch_argo_never_syncing_the_merge_fails_bg504_with_last_seen() {
    let ws = Workspace::new();
    // Healthy and Synced — on the previous commit.
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(application(&ws.prev, "Succeeded", "Healthy", "2025-12-31T09:00:00Z")),
        objects: objects(OLD, done_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI))], vec![]),
    }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "1s"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let v = out.json();
    assert_eq!(step(&v, "argo")["verdict"], "fail", "an ancestor of the merge is shown to be behind: {v:#}");
    let f = findings(&v, "argo", "BG504");
    assert!(
        f.contains(&ws.prev) && f.contains("health=Healthy") && f.contains("ancestor"),
        "last seen is reported: {f}"
    );
    assert!(f.contains("not evidence"), "{f}");
    assert_eq!(step(&v, "rollout")["verdict"], "not-run");
    // Only the Application was read: the pods cannot run an unsynced commit.
    assert!(cluster.requests().iter().all(|(_, p)| p.contains("applications")));
}

#[test]
fn watch_sync_finished_before_the_merge_is_not_the_merge_bg504() {
    let ws = Workspace::new();
    // The merge commit is at 10:00:00Z; a "successful sync" at 09:59 cannot be of it.
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(application(&ws.sha, "Succeeded", "Healthy", "2026-01-01T09:59:00Z")),
        objects: vec![],
    }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "1s"]);
    assert_eq!(out.code, 1);
    let f = findings(&out.json(), "argo", "BG504");
    assert!(f.contains("before the merge"), "{f}");
}

#[test]
fn watch_unreachable_cluster_is_an_error_not_a_pass() {
    let ws = Workspace::new();
    let dir = ws.path();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let kc = plain_kubeconfig(dir, port);
    let out = run_in(
        dir,
        &["watch", BUNDLE, "--app", NAME, "--revision", &ws.sha, "--timeout", "1s", "--format", "json"],
        &[("KUBECONFIG", kc.to_str().unwrap()), ("BUNDLEGATE_WATCH_POLL", "200ms")],
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(step(&out.json(), "argo")["verdict"], "error");
}

fn plain_kubeconfig(dir: &Path, port: u16) -> PathBuf {
    crate::support::kube::write_kubeconfig(&dir.join("kc.yaml"), port, None, None)
}

/// Watch against an API server that answers every request with `fault`.
fn watch_fault(fault: Reply, timeout: &str) -> (Out, usize) {
    let ws = Workspace::new();
    let hits = Arc::new(Mutex::new(0usize));
    let h = hits.clone();
    let server = Server::start_replies(
        0,
        Arc::new(move |_r: &standin::Req| {
            *h.lock().unwrap() += 1;
            fault.clone()
        }),
    );
    let kc = plain_kubeconfig(ws.path(), server.port);
    let out = run_in(
        ws.path(),
        &["watch", BUNDLE, "--app", NAME, "--revision", &ws.sha, "--timeout", timeout, "--format", "json"],
        &[("KUBECONFIG", kc.to_str().unwrap()), ("BUNDLEGATE_WATCH_POLL", "200ms"), ("BUNDLEGATE_KUBE_TIMEOUT", "1s")],
    );
    let n = *hits.lock().unwrap();
    (out, n)
}

#[test]
fn watch_api_500_until_the_deadline_is_an_error_with_the_last_answer() {
    let (out, hits) =
        watch_fault(crate::preflight::kube_status(500, "InternalError", "etcdserver: leader changed"), "1s");
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let argo = step(&v, "argo");
    assert_eq!(argo["verdict"], "error");
    assert!(argo["summary"].as_str().unwrap().contains("etcdserver: leader changed"), "{argo}");
    assert!(hits >= 2, "a 500 is retried at the poll interval until the deadline ({hits} requests)");
    assert_ne!(step(&v, "rollout")["verdict"], "pass");
}

#[test]
fn watch_api_403_stops_at_once_and_names_the_permissions() {
    let (out, hits) = watch_fault(
        crate::preflight::kube_status(403, "Forbidden", "applications.argoproj.io \"llm-scratch\" is forbidden: User \"system:serviceaccount:ci:bundlegate\" cannot get resource \"applications\" in API group \"argoproj.io\" in the namespace \"argocd\""),
        "30s",
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let argo = step(&out.json(), "argo").clone();
    assert_eq!(argo["verdict"], "error");
    let summary = argo["summary"].as_str().unwrap();
    assert!(summary.contains("cannot get resource") && summary.contains("needs get/list"), "{summary}");
    assert_eq!(hits, 1, "a denial does not heal by waiting: one request, not 30s of polling");
}

#[test]
fn watch_api_that_hangs_is_bounded_and_an_error() {
    let (out, _) = watch_fault(Reply::Hang(Duration::from_secs(30)), "2s");
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out.json(), "argo")["verdict"], "error");
}

/// Errors of an Application against Argo CD's CRD schema.
pub(crate) fn application_errors(app: &Value) -> Vec<String> {
    let crd: serde_yaml_ng::Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(repo().join("tests/fixtures/reference/argocd/application-crd.yaml")).unwrap(),
    )
    .unwrap();
    let crd: Value = serde_json::to_value(crd).unwrap();
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let v = jsonschema::options().with_draft(jsonschema::Draft::Draft4).build(schema).expect("CRD schema compiles");
    v.iter_errors(app).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

#[test]
fn application_fixtures_validate_against_the_argocd_crd() {
    let variants = [
        application(OLD_SHA, "Succeeded", "Healthy", "2025-12-31T09:00:00Z"),
        application(OLD_SHA, "Running", "Progressing", ""),
        application(OLD_SHA, "Failed", "Degraded", "2026-01-01T10:06:00Z"),
    ];
    for a in &variants {
        let errs = application_errors(a);
        assert!(errs.is_empty(), "{errs:#?}");
    }
    // The validator is not vacuous: a wrong type is caught.
    let mut bad = variants[0].clone();
    bad["status"]["operationState"]["phase"] = json!(5);
    assert!(!application_errors(&bad).is_empty());
}

#[test]
fn stand_in_objects_have_the_kubernetes_types_shape() {
    use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    use k8s_openapi::api::core::v1::{Event, Pod};
    let d = "sha256:abc";
    let p: Pod = serde_json::from_value(pod(PodSpec {
        waiting: Some(("CrashLoopBackOff", "x")),
        restarts: 2,
        ..PodSpec::ready(NEW_POD, d, V2_URI)
    }))
    .unwrap();
    assert_eq!(p.spec.unwrap().init_containers.unwrap()[0].args.as_ref().unwrap()[0], V2_URI);
    let _: Pod =
        serde_json::from_value(pod(PodSpec { phase: "Pending", ready: false, ..PodSpec::ready(NEW_POD, d, V2_URI) }))
            .unwrap();
    let dep: Deployment = serde_json::from_value(green_deployment()).unwrap();
    assert_eq!(dep.status.unwrap().conditions.unwrap().len(), 2);
    let _: ReplicaSet = serde_json::from_value(replicaset("rs", d, 1, 0)).unwrap();
    let e: Event = serde_json::from_value(event("Pod", NEW_POD, "Warning", "FailedScheduling", "m")).unwrap();
    assert_eq!(e.involved_object.name.as_deref(), Some(NEW_POD));
}

// ---------------------------------------------------------------------------
// revert: real git remote (git daemon) + GitHub pull-request stand-in

pub(crate) mod pulls {
    //! A stateful stand-in for `POST/GET /repos/{o}/{r}/pulls`, validated
    //! with the GitHub stand-in's OpenAPI checks (requests and answers), and
    //! answering with GitHub's documented examples adjusted to the request.

    use super::standin::Server;
    use crate::github_standin::{documented_example, validate_request, validate_response};
    use crate::support::http::{Reply, ReplyHandler};
    use serde_json::{json, Value};
    use std::collections::VecDeque;
    use std::sync::{Arc, Mutex};

    #[derive(Default)]
    pub struct State {
        pub pulls: Vec<Value>,
        pub requests: Vec<(String, String, Option<Value>)>,
        pub violations: Vec<String>,
        /// Faults answered, in order, before any real handling.
        pub inject: VecDeque<Reply>,
    }

    pub struct Pulls {
        pub server: Server,
        pub state: Arc<Mutex<State>>,
    }

    impl Pulls {
        pub fn start(token: &str) -> Pulls {
            let state = Arc::new(Mutex::new(State::default()));
            let st = state.clone();
            let tok = token.to_string();
            let h: ReplyHandler = Arc::new(move |req| {
                let mut s = st.lock().unwrap();
                let body: Option<Value> = serde_json::from_slice(&req.body).ok();
                s.requests.push((req.method.clone(), req.path.clone(), body.clone()));
                if req.header("authorization") != Some(&format!("Bearer {tok}")) {
                    s.violations.push(format!("{} {}: missing or wrong Authorization", req.method, req.path));
                    return Reply::Json(401, json!({"message": "Requires authentication"}));
                }
                if let Some(fault) = s.inject.pop_front() {
                    return fault;
                }
                let (template, v) = validate_request(&req.method, &req.path, &req.query, &req.body);
                s.violations.extend(v.iter().cloned());
                let Some(template) = template else { return Reply::Json(404, json!({"message": "Not Found"})) };
                if !v.is_empty() {
                    return Reply::Json(
                        422,
                        json!({"message": "Validation Failed", "documentation_url": "https://docs.github.com/rest"}),
                    );
                }
                let segs: Vec<&str> = req.path.trim_start_matches('/').split('/').collect();
                let (owner, repo) = (segs[1].to_string(), segs[2].to_string());
                let (status, answer) = match (req.method.as_str(), template) {
                    ("POST", "/repos/{owner}/{repo}/pulls") => {
                        let b = body.unwrap_or_default();
                        let head = b["head"].as_str().unwrap_or("").to_string();
                        if s.pulls.iter().any(|p| p["head"]["ref"] == head.as_str() && p["state"] == "open") {
                            (
                                422,
                                json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom",
                                    "message": format!("A pull request already exists for {owner}:{head}.")}],
                                    "documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request", "status": "422"}),
                            )
                        } else {
                            let number = s.pulls.len() as i64 + 1347;
                            let mut p = documented_example("pull-request");
                            p["number"] = json!(number);
                            p["title"] = b["title"].clone();
                            p["body"] = b["body"].clone();
                            p["state"] = json!("open");
                            p["html_url"] = json!(format!("https://github.com/{owner}/{repo}/pull/{number}"));
                            p["url"] = json!(format!("https://api.github.com/repos/{owner}/{repo}/pulls/{number}"));
                            p["head"]["ref"] = json!(head);
                            p["head"]["label"] = json!(format!("{owner}:{head}"));
                            p["base"]["ref"] = b["base"].clone();
                            p["base"]["label"] = json!(format!("{owner}:{}", b["base"].as_str().unwrap_or("")));
                            // GitHub's own example lists a team without the
                            // schema's required `type`; a new PR has no reviewers.
                            p["requested_teams"] = json!([]);
                            p["requested_reviewers"] = json!([]);
                            s.pulls.push(p.clone());
                            (201, p)
                        }
                    }
                    ("GET", "/repos/{owner}/{repo}/pulls") => {
                        let head = req.q("head").unwrap_or("");
                        let state = req.q("state").unwrap_or("open");
                        let items: Vec<Value> = s
                            .pulls
                            .iter()
                            .filter(|p| {
                                (head.is_empty() || p["head"]["label"] == head)
                                    && (state == "all" || p["state"] == state)
                            })
                            .map(|p| {
                                let mut it = documented_example("pull-request-simple-items")[0].clone();
                                for k in ["number", "title", "body", "state", "html_url", "url"] {
                                    it[k] = p[k].clone();
                                }
                                it["head"]["ref"] = p["head"]["ref"].clone();
                                it["head"]["label"] = p["head"]["label"].clone();
                                it["base"]["ref"] = p["base"]["ref"].clone();
                                it["requested_teams"] = json!([]);
                                it["requested_reviewers"] = json!([]);
                                it
                            })
                            .collect();
                        (200, Value::Array(items))
                    }
                    _ => {
                        s.violations.push(format!(
                            "{} {template}: documented, but this stand-in does not implement it",
                            req.method
                        ));
                        (404, json!({"message": "Not Found"}))
                    }
                };
                let rv = validate_response(&req.method, template, status, &answer);
                s.violations.extend(rv);
                Reply::Json(status, answer)
            });
            Pulls { server: Server::start_replies(0, h), state }
        }
        /// Answer the next requests with these faults, in order.
        pub fn inject(&self, faults: impl IntoIterator<Item = Reply>) {
            self.state.lock().unwrap().inject.extend(faults);
        }
        pub fn url(&self) -> String {
            format!("http://127.0.0.1:{}", self.server.port)
        }
        pub fn pulls(&self) -> Vec<Value> {
            self.state.lock().unwrap().pulls.clone()
        }
        pub fn requests(&self) -> Vec<(String, String, Option<Value>)> {
            self.state.lock().unwrap().requests.clone()
        }
        pub fn assert_no_violations(&self) {
            let v = self.state.lock().unwrap().violations.clone();
            assert!(v.is_empty(), "requests/answers that do not match GitHub's API description:\n{}", v.join("\n"));
        }
    }
}

pub(crate) use crate::support::git_remote::GitRemote;

/// The revert branch's name up to its hash of path and digests
/// (`GitRemote::remote_branch` matches it as a prefix).
pub(crate) const BRANCH: &str = "bundlegate/revert-llm-scratch-v2-";
pub(crate) const TOKEN: &str = "ghs_reverttoken0123456789";

pub(crate) fn gh_env(gh: &pulls::Pulls) -> Vec<(String, String)> {
    vec![
        ("GITHUB_TOKEN".into(), TOKEN.into()),
        ("GITHUB_API_URL".into(), gh.url()),
        ("GITHUB_REPOSITORY".into(), "o/r".into()),
    ]
}

pub(crate) fn run_revert(dir: &Path, gh: &pulls::Pulls, extra: &[&str]) -> Out {
    let mut args = vec!["revert", "llm-scratch/v2/release.yaml", "--repo", ".", "--format", "json"];
    args.extend_from_slice(extra);
    let env = gh_env(gh);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_in(dir, &args, &env)
}

#[test]
fn revert_pushes_the_branch_and_opens_one_pr_with_the_evidence() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let ev = fixture("evidence-crashloop.json");
    let out = run_revert(&g.work(), &gh, &["--evidence", ev.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN), "the token is never printed");
    let v = out.json();
    assert_eq!(step(&v, "verify-rollback-target")["verdict"], "pass", "the rollback target was verified first");
    let r = step(&v, "revert");
    assert_eq!(r["verdict"], "pass");
    assert_eq!(r["data"]["pr"]["created"], true);

    // The real remote received the branch; the bundle path now holds v1.
    let sha = g.remote_branch(BRANCH).expect("revert branch pushed");
    let restored = g.show(&format!("{sha}:llm-scratch/v2/release.yaml"));
    assert_eq!(restored, std::fs::read_to_string(g.work().join("llm-scratch/v1/release.yaml")).unwrap());
    let msg = g.show(&sha);
    assert!(msg.contains("bundlegate-revert-of: sha256:"), "{msg}");
    assert_eq!(
        g.show(&format!("{sha}~1")).lines().next(),
        g.show("main").lines().next(),
        "the revert is on top of main"
    );

    // One PR, from that branch, carrying the failed gates' evidence.
    let prs = gh.pulls();
    assert_eq!(prs.len(), 1);
    let p = &prs[0];
    assert!(p["head"]["ref"].as_str().unwrap().starts_with(BRANCH), "{p:#}");
    assert_eq!(p["base"]["ref"], "main");
    let body = p["body"].as_str().unwrap();
    assert!(body.contains("BG501") && body.contains("CrashLoopBackOff"), "{body}");
    assert!(body.contains("bundlegate-revert-of: sha256:"), "{body}");
    assert!(body.contains("Rollback target verified"), "{body}");
    gh.assert_no_violations();
}

// ---- GitHub faults while opening the revert PR (docs/reliability.md) ----

fn revert_with_faults(faults: Vec<Reply>) -> (GitRemote, pulls::Pulls, Out) {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    gh.inject(faults);
    let ev = fixture("evidence-crashloop.json");
    let out = run_revert(&g.work(), &gh, &["--evidence", ev.to_str().unwrap()]);
    (g, gh, out)
}

fn gh_json(status: u16, message: &str) -> Reply {
    Reply::Json(status, json!({"message": message, "documentation_url": "https://docs.github.com/rest"}))
}

#[test]
fn revert_pr_github_5xx_is_retried_and_opens_one_pr() {
    let (g, gh, out) = revert_with_faults(vec![gh_json(502, "Server Error"), gh_json(503, "Service Unavailable")]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(step(&v, "revert")["data"]["pr"]["created"], true, "{v:#}");
    assert_eq!(gh.pulls().len(), 1, "retries never open a second PR");
    let posts = gh.requests().iter().filter(|(m, p, _)| m == "POST" && p.ends_with("/pulls")).count();
    assert_eq!(posts, 3, "two failed attempts, then the one that worked");
    assert!(g.remote_branch(BRANCH).is_some());
    gh.assert_no_violations();
}

#[test]
fn revert_pr_github_5xx_forever_is_an_error_and_a_rerun_finishes_the_job() {
    let (g, gh, out) = revert_with_faults((0..5).map(|_| gh_json(502, "Server Error")).collect());
    assert_eq!(out.code, 2, "a tool error, not a pass and not a gate failure: {}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let r = step(&v, "revert");
    assert_eq!(r["verdict"], "error");
    let summary = r["summary"].as_str().unwrap();
    assert!(
        summary.contains("HTTP 502") && summary.contains(BRANCH),
        "says what failed and that the branch is safe: {summary}"
    );
    assert!(gh.pulls().is_empty());
    // Nothing lost: the branch is on the remote, and the next run opens its PR.
    assert!(g.remote_branch(BRANCH).is_some());
    let ev = fixture("evidence-crashloop.json");
    let again = run_revert(&g.work(), &gh, &["--evidence", ev.to_str().unwrap()]);
    assert_eq!(again.code, 0, "{}\n{}", again.stdout, again.stderr);
    assert_eq!(gh.pulls().len(), 1);
    assert_eq!(step(&again.json(), "revert")["data"]["branchExisted"], true);
    gh.assert_no_violations();
}

#[test]
fn revert_pr_github_403_names_the_missing_permission_and_keeps_the_branch() {
    let (g, gh, out) = revert_with_faults(vec![gh_json(403, "Resource not accessible by integration")]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let r = step(&v, "revert");
    assert_eq!(r["verdict"], "error");
    let summary = r["summary"].as_str().unwrap();
    assert!(summary.contains("Resource not accessible") && summary.contains("permission"), "{summary}");
    let posts = gh.requests().iter().filter(|(m, _, _)| m == "POST").count();
    assert_eq!(posts, 1, "a plain 403 is final, not retried");
    assert!(g.remote_branch(BRANCH).is_some());
}

#[test]
fn revert_pr_github_secondary_rate_limit_waits_for_retry_after() {
    let limited = Reply::Raw {
        status: 403,
        headers: vec![("content-type".into(), "application/json".into()), ("retry-after".into(), "1".into())],
        body: br#"{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}"#.to_vec(),
    };
    let t = Instant::now();
    let (_g, gh, out) = revert_with_faults(vec![limited]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(t.elapsed() >= Duration::from_secs(1), "retry-after was honoured");
    assert_eq!(gh.pulls().len(), 1);
    gh.assert_no_violations();
}

#[test]
fn revert_concurrent_runs_open_one_pr() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let a = g.work();
    let b = g.clone_to("work-b");
    let spawn = |dir: &Path| {
        let mut c = Command::new(crate::support::bin());
        c.args(["revert", "llm-scratch/v2/release.yaml", "--repo", ".", "--format", "json"])
            .current_dir(dir)
            .env_remove("RUST_LOG");
        for (k, v) in gh_env(&gh) {
            c.env(k, v);
        }
        c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
    };
    let (ca, cb) = (spawn(&a), spawn(&b));
    let (oa, ob) = (ca.wait_with_output().unwrap(), cb.wait_with_output().unwrap());
    for o in [&oa, &ob] {
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    assert_eq!(gh.pulls().len(), 1, "exactly one revert PR");
    let texts = format!("{}{}", String::from_utf8_lossy(&oa.stdout), String::from_utf8_lossy(&ob.stdout));
    assert!(texts.contains("already reverting"), "one run saw the other: {texts}");
    assert!(g.remote_branch(BRANCH).is_some());
    gh.assert_no_violations();
}

#[test]
fn revert_with_incomplete_rollback_target_proposes_degrade_bg505() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    // The previous version's prefix lacks a non-model file (a drift-monitor baseline).
    std::fs::remove_file(g.work().join("store/llm-scratch/v1/clean_corpus.txt")).unwrap();
    let out = run_revert(&g.work(), &gh, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let f = findings(&v, "revert", "BG505");
    assert!(f.contains("did not verify") && f.contains("clean_corpus.txt"), "{f}");
    assert!(f.contains("degrade"), "{f}");
    assert_eq!(step(&v, "revert")["data"]["proposal"], "degrade");
    assert!(g.remote_branch(BRANCH).is_none(), "no branch pushed");
    assert!(gh.requests().is_empty(), "no PR call at all");
}

/// revert loaded the rollback target unconfined: a target outside the
/// repository was read (and its parse error quoted it). Now it is refused
/// unread, through the loader lint and canary use: BG505, degrade, no PR.
#[test]
fn revert_with_rollback_target_outside_the_repository_is_refused_unread() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    let outside = tempfile::tempdir().unwrap();
    let env = outside.path().join("outside.env");
    std::fs::write(&env, "API_TOKEN=s3cr3t-token-value\n").unwrap();
    let b = w.join("llm-scratch/v2/release.yaml");
    let text = std::fs::read_to_string(&b).unwrap();
    std::fs::write(&b, text.replacen("bundle: ../v1/release.yaml", &format!("bundle: {}", env.display()), 1)).unwrap();
    git(&w, &["commit", "-q", "-am", "point the rollback elsewhere"]);
    let out = run_revert(&w, &gh, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let f = findings(&out.json(), "revert", "BG505");
    assert!(f.contains("does not load") && f.contains("refused, not read"), "{f}");
    assert!(!out.stdout.contains("s3cr3t") && !out.stderr.contains("s3cr3t"), "{}", out.stdout);
    assert!(g.remote_branch(BRANCH).is_none(), "no branch pushed");
    assert!(gh.requests().is_empty(), "no PR call at all");
}

/// The rollback target is the release itself (its own file, its own
/// digest recorded): lint says BG022, and revert judges it the same way
/// (`checks::rollback`) instead of opening a PR that changes nothing.
#[test]
fn revert_to_the_release_itself_proposes_degrading_and_opens_nothing() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    let b = w.join("llm-scratch/v2/release.yaml");
    let printed = run_in(&w, &["digest", b.to_str().unwrap()], &[]).stdout;
    let digest = printed.split_whitespace().find(|s| s.starts_with("sha256:")).expect("a digest").to_string();
    crate::support::edit_yaml(&b, |v| {
        v["spec"]["rollback"]["bundle"] = "./release.yaml".into();
        v["spec"]["rollback"]["releaseDigest"] = digest.clone().into();
    });
    git(&w, &["commit", "-q", "-am", "roll back to itself"]);
    let out = run_revert(&w, &gh, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let f = findings(&out.json(), "revert", "BG505");
    assert!(f.contains("is no way back") && f.contains("changes nothing"), "{f}");
    assert!(g.remote_branch(BRANCH).is_none(), "no branch pushed");
    assert!(gh.requests().is_empty(), "no PR call at all");
}

#[test]
fn revert_of_a_revert_is_refused() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    // The bundle was last changed by a bundlegate revert commit.
    std::fs::write(
        w.join("llm-scratch/v2/release.yaml"),
        std::fs::read_to_string(w.join("llm-scratch/v2/release.yaml")).unwrap() + "# restored\n",
    )
    .unwrap();
    git(&w, &["commit", "-q", "-am", "Revert llm-scratch v3 to v2\n\nbundlegate-revert-of: sha256:3333333333333333333333333333333333333333333333333333333333333333"]);
    let out = run_revert(&w, &gh, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let r = step(&out.json(), "revert").clone();
    assert_eq!(r["verdict"], "not-run");
    assert_eq!(r["data"]["refused"], "revert-of-a-revert");
    assert!(r["summary"].as_str().unwrap().contains("never reverted"));
    assert!(g.remote_branch(BRANCH).is_none());
    assert!(gh.requests().is_empty());
}

#[test]
fn revert_ignores_failures_older_than_max_age() {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let old = (chrono::Utc::now() - chrono::Duration::minutes(45)).to_rfc3339();
    let out = run_revert(&g.work(), &gh, &["--failed-at", &old, "--max-age", "20m"]);
    assert_eq!(out.code, 1, "nothing was done: not a pass");
    let r = step(&out.json(), "revert").clone();
    assert_eq!(r["verdict"], "not-run");
    assert_eq!(r["data"]["ignored"], "older-than-max-age");
    assert!(g.remote_branch(BRANCH).is_none());
    assert!(gh.requests().is_empty());
    // A recent failure with the same settings does revert.
    let recent = (chrono::Utc::now() - chrono::Duration::minutes(5)).to_rfc3339();
    let out = run_revert(&g.work(), &gh, &["--failed-at", &recent, "--max-age", "20m"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(gh.pulls().len(), 1);
}

/// The merged release crash-loops next to the old pod while Argo reports
/// Synced/Healthy and `get isvc`, its conditions, the API and `get deploy` read
/// green, with a GitHub stand-in.
pub(crate) struct CrashloopMerge {
    pub(crate) g: GitRemote,
    pub(crate) gh: pulls::Pulls,
    pub(crate) w: PathBuf,
    pub(crate) sha: String,
    pub(crate) cluster: standin::Cluster,
}

fn crashloop_merge() -> CrashloopMerge {
    merged_with(|d, src| {
        let crash = PodSpec {
            ready: false,
            restarts: 4,
            waiting: Some(("CrashLoopBackOff", "back-off 2m40s")),
            ..PodSpec::ready(NEW_POD, d, src)
        };
        objects(
            d,
            green_deployment(),
            vec![pod(PodSpec::ready(OLD_POD, OLD, "file:../../store/llm-scratch/v1/")), pod(crash)],
            vec![],
        )
    })
}

/// The merge commit synced by Argo, with the cluster objects `objects(new
/// release digest, its source URI)` returns, and a GitHub stand-in.
pub(crate) fn merged_with(objects: impl FnOnce(&str, &str) -> Vec<Value>) -> CrashloopMerge {
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    let (sha, frames) = merged_frames(&w, objects);
    let cluster = standin::Cluster::start(frames, &w);
    CrashloopMerge { g, gh, w, sha, cluster }
}

/// The merge commit of the checkout `w` and one frame in which Argo synced
/// it, with the objects `objects(new release digest, its source URI)` returns.
pub(crate) fn merged_frames(w: &Path, objects: impl FnOnce(&str, &str) -> Vec<Value>) -> (String, Vec<Frame>) {
    let sha = git(w, &["rev-parse", "HEAD"]);
    let d = run_in(w, &["digest", "llm-scratch/v2/release.yaml", "--format", "json"], &[]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let src = "file:../../store/llm-scratch/v2/";
    (
        sha.clone(),
        vec![Frame {
            at_ms: 0,
            app: Some(application(&sha, "Succeeded", "Healthy", "2026-01-01T10:05:01Z")),
            objects: objects(&d, src),
        }],
    )
}

fn watch_env(gh: &pulls::Pulls, cluster: &standin::Cluster) -> Vec<(String, String)> {
    let mut env = gh_env(gh);
    env.push(("KUBECONFIG".into(), cluster.kubeconfig.to_string_lossy().to_string()));
    env.push(("BUNDLEGATE_WATCH_POLL".into(), "150ms".into()));
    env
}

/// One revert PR whose body carries this run's BG501 CrashLoop evidence, its
/// branch on the remote; the cluster was only read; GitHub saw valid calls.
fn assert_reverted_once_with_crashloop_evidence(g: &GitRemote, gh: &pulls::Pulls, cluster: &standin::Cluster) {
    let prs = gh.pulls();
    assert_eq!(prs.len(), 1);
    let body = prs[0]["body"].as_str().unwrap();
    assert!(body.contains("BG501") && body.contains("CrashLoopBackOff"), "the PR carries this run's evidence: {body}");
    assert!(g.remote_branch(BRANCH).is_some());
    cluster.assert_read_only();
    gh.assert_no_violations();
}

#[test]
fn watch_with_revert_opens_the_pr_when_a_gate_fails() {
    let CrashloopMerge { g, gh, w, sha, cluster } = crashloop_merge();
    let env = watch_env(&gh, &cluster);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run_in(
        &w,
        &[
            "watch",
            "llm-scratch/v2/release.yaml",
            "--app",
            NAME,
            "--revision",
            &sha,
            "--timeout",
            "2s",
            "--stable-for",
            "1s",
            "--revert",
            "--format",
            "json",
        ],
        &env,
    );
    assert_eq!(out.code, 1, "the watch failed, whatever the revert did: {}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert!(findings(&v, "rollout", "BG501").contains("CrashLoopBackOff"));
    assert_eq!(step(&v, "revert")["verdict"], "pass", "{v:#}");
    assert_reverted_once_with_crashloop_evidence(&g, &gh, &cluster);
}

/// An Evicted pod as the API keeps it until pod GC: phase Failed, reason
/// Evicted, its container terminated — and a Ready condition the kubelet
/// never rewrote.
pub(crate) fn evicted(name: &str, digest: &str, source: &str) -> Value {
    let mut v = pod(PodSpec { phase: "Failed", ..PodSpec::ready(name, digest, source) });
    v["status"]["reason"] = json!("Evicted");
    v["status"]["message"] = json!("The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi.");
    v["status"]["containerStatuses"][0]["ready"] = json!(false);
    v["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown", "startedAt": "2026-01-01T10:05:10Z", "finishedAt": "2026-01-01T10:06:10Z"}});
    v
}

/// The finished rollout with extra pods of the old release next to the
/// ready new pod; the old ReplicaSet is scaled to 0 as the Deployment leaves it.
pub(crate) fn finished_with(d: &str, src: &str, extra: Vec<Value>) -> Vec<Value> {
    let mut v = vec![
        done_deployment(),
        replicaset("llm-scratch-predictor-868c589678", OLD, 0, 0),
        replicaset("llm-scratch-predictor-6786d546b4", d, 1, 1),
        pod(PodSpec::ready(NEW_POD, d, src)),
    ];
    v.extend(extra);
    v
}

/// `watch --revert` on the finished rollout plus these old-release pods.
fn watch_with_revert_on(old_pods: impl FnOnce() -> Vec<Value>) -> (Out, GitRemote, pulls::Pulls, standin::Cluster) {
    let CrashloopMerge { g, gh, w, sha, cluster } = merged_with(|d, src| finished_with(d, src, old_pods()));
    let env = watch_env(&gh, &cluster);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run_in(
        &w,
        &[
            "watch",
            "llm-scratch/v2/release.yaml",
            "--app",
            NAME,
            "--revision",
            &sha,
            "--timeout",
            "2s",
            "--stable-for",
            "1s",
            "--revert",
            "--format",
            "json",
        ],
        &env,
    );
    (out, g, gh, cluster)
}

#[test]
fn watch_evicted_old_pod_is_history_passes_and_opens_no_revert() {
    // The old release's pod was Evicted (phase Failed, stale Ready=True) and
    // stays until pod GC; a Completed one too. Neither serves.
    let (out, g, gh, cluster) = watch_with_revert_on(|| {
        let mut done = pod(PodSpec {
            phase: "Succeeded",
            ready: false,
            ..PodSpec::ready("llm-scratch-predictor-868c589678-q2x7w", OLD, "file:../../store/llm-scratch/v1/")
        });
        done["status"]["reason"] = json!("Completed");
        vec![evicted(OLD_POD, OLD, "file:../../store/llm-scratch/v1/"), done]
    });
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(v["verdict"], "pass", "{v:#}");
    let rollout = step(&v, "rollout");
    assert_eq!(rollout["verdict"], "pass", "{rollout:#}");
    assert!(findings(&v, "rollout", "BG501").is_empty(), "{rollout:#}");
    // Reported as history, with the pod's name, not dropped.
    let notes = findings(&v, "rollout", "BG507");
    assert!(notes.contains(OLD_POD) && notes.contains("Failed") && notes.contains("terminal"), "{notes}");
    assert!(!v["steps"].as_array().unwrap().iter().any(|s| s["step"] == "revert"), "no revert step on a PASS: {v:#}");
    assert!(gh.pulls().is_empty(), "a good release must not get a revert PR");
    assert!(g.remote_branch(BRANCH).is_none());
    cluster.assert_read_only();
}

#[test]
fn watch_old_pod_on_unknown_node_is_inconclusive_and_opens_no_revert() {
    // A Ready old pod whose node stopped reporting: it may or may not serve.
    let (out, g, gh, cluster) = watch_with_revert_on(|| {
        vec![pod(PodSpec { phase: "Unknown", ..PodSpec::ready(OLD_POD, OLD, "file:../../store/llm-scratch/v1/") })]
    });
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(step(&v, "rollout")["verdict"], "inconclusive", "{v:#}");
    assert!(findings(&v, "rollout", "BG506").contains("phase Unknown"), "{v:#}");
    assert!(findings(&v, "rollout", "BG501").is_empty());
    assert!(gh.pulls().is_empty(), "INCONCLUSIVE is not a failure: no revert PR");
    assert!(g.remote_branch(BRANCH).is_none());
    cluster.assert_read_only();
}

#[test]
fn audit_serving_evicted_old_pod_is_history_not_drift() {
    let ex = crate::support::Example::new();
    let v1 = run_in(ex.path(), &["digest", "llm-scratch/v1/release.yaml", "--format", "json"], &[]).json()["steps"][0]
        ["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let v2 = run_in(ex.path(), &["digest", "llm-scratch/v2/release.yaml", "--format", "json"], &[]).json()["steps"][0]
        ["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let old_src = "file:../../store/llm-scratch/v1/";
    let new_src = "file:../../store/llm-scratch/v2/";
    let pods = vec![
        pod(PodSpec::ready(NEW_POD, &v2, new_src)),
        evicted(OLD_POD, &v1, old_src),
        pod(PodSpec { terminating: true, ..PodSpec::ready("llm-scratch-predictor-868c589678-zz9k2", &v1, old_src) }),
    ];
    let (out, cluster) = serving_audit(&ex, pods, &v2);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let serving = serving_steps(&v);
    assert_eq!(serving[0]["verdict"], "pass", "{v:#}");
    let notes: Vec<&Value> =
        serving[0]["diagnostics"].as_array().unwrap().iter().filter(|d| d["code"] == "BG507").collect();
    assert_eq!(notes.len(), 1, "{v:#}");
    assert!(all_text(notes[0]).contains(OLD_POD) && all_text(notes[0]).contains("terminating"), "{v:#}");
    cluster.assert_read_only();

    // Only the Evicted pod is left: nothing serves the bundle, which is a failure.
    let (out, _c) = serving_audit(&ex, vec![evicted(NEW_POD, &v2, new_src)], &v2);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(serving_steps(&v)[0]["verdict"], "fail", "{v:#}");
    // Its only pod on a node that stopped reporting: cannot tell, never a drift FAIL.
    let (out, _c) =
        serving_audit(&ex, vec![pod(PodSpec { phase: "Unknown", ..PodSpec::ready(NEW_POD, &v2, new_src) })], &v2);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(serving_steps(&v)[0]["verdict"], "inconclusive", "{v:#}");
}

#[test]
fn every_watch_code_is_exercised_here() {
    // BG501..BG505 appear by their literal strings in these tests; the
    // registry must know each one (so `explain` and docs cover them).
    for code in ["BG501", "BG502", "BG503", "BG504", "BG505", "BG506", "BG507"] {
        let o = crate::support::run(&["explain", code]);
        assert_eq!(o.code, 0, "{code}: {}", o.stderr);
        assert!(o.stdout.contains(code));
    }
}

// ---------------------------------------------------------------------------
// watch and revert as pipeline steps (pipelines/post-merge.yaml's shape)

fn write_pipeline(dir: &Path, steps: &str) -> PathBuf {
    let p = dir.join("post-merge.yaml");
    std::fs::write(&p, format!("apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata:\n  name: post-merge-test\nspec:\n  steps:\n{steps}")).unwrap();
    p
}

#[test]
fn pipeline_watch_passes_and_revert_has_nothing_to_do() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]),
    }];
    let cluster = standin::Cluster::start(frames, ws.path());
    let model = ModelService::start(identity_ok(&d));
    let tmp = tempfile::tempdir().unwrap();
    // `{name}` is the bundle's metadata.name (here the Application's name).
    let url = model.url();
    let p = write_pipeline(
        tmp.path(),
        &format!("    - name: watch\n      required: true\n      with: {{app: \"{{name}}\", timeout: 20s, stableFor: 1s, serviceUrl: \"{url}\", probeInterval: 100ms}}\n    - name: revert\n"),
    );
    let kc = cluster.kubeconfig.to_string_lossy().to_string();
    let out = run_in(
        ws.path(),
        &["run", p.to_str().unwrap(), "--bundle", BUNDLE, "--format", "json"],
        &[("KUBECONFIG", &kc), ("BUNDLEGATE_WATCH_POLL", "150ms"), ("GITHUB_SHA", "")],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    // The revision came from HEAD of the repository (the merge commit).
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains(&ws.sha), "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "pass");
    assert_eq!(step(&v, "identity")["verdict"], "pass", "{v:#}");
    assert_eq!(step(&v, "downtime")["verdict"], "pass");
    let revert = step(&v, "revert");
    assert_eq!(revert["verdict"], "not-run");
    assert!(revert["summary"].as_str().unwrap().contains("no gate failed"), "{revert}");
    cluster.assert_read_only();
}

#[test]
fn pipeline_watch_without_a_cluster_is_never_pass_and_never_reverts() {
    let ws = Workspace::new();
    let tmp = tempfile::tempdir().unwrap();
    let p = write_pipeline(
        tmp.path(),
        "    - name: watch\n      required: true\n      with: {timeout: 2s}\n    - name: revert\n",
    );
    let kc = plain_kubeconfig(tmp.path(), 9);
    let out = run_in(
        ws.path(),
        &["run", p.to_str().unwrap(), "--bundle", BUNDLE, "--format", "json"],
        &[("KUBECONFIG", kc.to_str().unwrap()), ("BUNDLEGATE_WATCH_POLL", "150ms")],
    );
    assert_ne!(out.code, 0, "{}", out.stdout);
    let v = out.json();
    assert_ne!(v["verdict"], "pass");
    assert_eq!(step(&v, "argo")["verdict"], "error", "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "inconclusive", "a required check that did not run: {v:#}");
    let revert = step(&v, "revert");
    assert_eq!(revert["verdict"], "not-run");
    assert!(revert["summary"].as_str().unwrap().contains("could not decide"), "{revert}");
}

#[test]
fn pipeline_post_merge_reverts_a_crashlooping_release_with_the_run_as_evidence() {
    let CrashloopMerge { g, gh, w, sha, cluster } = crashloop_merge();
    let tmp = tempfile::tempdir().unwrap();
    // verify stops the run on failure, but a revert answers failures, so it still runs.
    let p = write_pipeline(
        tmp.path(),
        "    - name: verify\n      required: true\n      onFailure: stop\n    - name: watch\n      required: true\n      onFailure: stop\n      with: {timeout: 2s, stableFor: 1s}\n    - name: canary\n    - name: revert\n      with: {base: main}\n",
    );
    let env = watch_env(&gh, &cluster);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run_in(
        &w,
        &["run", p.to_str().unwrap(), "--bundle", "llm-scratch/v2/release.yaml", "--head", &sha, "--format", "json"],
        &env,
    );
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(step(&v, "verify")["verdict"], "pass");
    assert!(findings(&v, "rollout", "BG501").contains("CrashLoopBackOff"));
    // onFailure: stop on watch skips the canary; the revert still runs.
    assert_eq!(step(&v, "canary")["verdict"], "not-run");
    assert_eq!(step(&v, "revert")["verdict"], "pass", "{v:#}");
    assert_reverted_once_with_crashloop_evidence(&g, &gh, &cluster);
}

// ---------------------------------------------------------------------------
// scheduled drift audit: does the cluster serve the bundle git says is current?

fn serving_audit(ex: &crate::support::Example, pods: Vec<Value>, digest: &str) -> (Out, standin::Cluster) {
    let frames = vec![Frame { at_ms: 0, app: None, objects: objects(digest, done_deployment(), pods, vec![]) }];
    let cluster = standin::Cluster::start(frames, ex.path());
    let kc = cluster.kubeconfig.to_string_lossy().to_string();
    let out = run_in(
        ex.path(),
        &["audit", "llm-scratch", "--serving", "--cache", "c.json", "--format", "json"],
        &[("KUBECONFIG", &kc)],
    );
    (out, cluster)
}

fn serving_steps(v: &Value) -> Vec<Value> {
    v["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "serving").cloned().collect()
}

#[test]
fn audit_serving_passes_when_the_cluster_runs_the_current_bundle() {
    let ex = crate::support::Example::new();
    let v2 = run_in(ex.path(), &["digest", "llm-scratch/v2/release.yaml", "--format", "json"], &[]).json()["steps"][0]
        ["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let (out, cluster) =
        serving_audit(&ex, vec![pod(PodSpec::ready(NEW_POD, &v2, "file:../../store/llm-scratch/v2/"))], &v2);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let serving = serving_steps(&v);
    // v1 is v2's rollback target, so v2 is the one current bundle of the service.
    assert_eq!(serving.len(), 1, "{v:#}");
    assert_eq!(serving[0]["verdict"], "pass");
    assert!(serving[0]["target"].as_str().unwrap().contains("v2"), "{:#}", serving[0]);
    cluster.assert_read_only();
}

#[test]
fn audit_serving_reports_drift_when_the_cluster_still_runs_the_old_release() {
    let ex = crate::support::Example::new();
    let v1 = run_in(ex.path(), &["digest", "llm-scratch/v1/release.yaml", "--format", "json"], &[]).json()["steps"][0]
        ["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();
    let (out, cluster) =
        serving_audit(&ex, vec![pod(PodSpec::ready(OLD_POD, &v1, "file:../../store/llm-scratch/v1/"))], &v1);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let serving = serving_steps(&v);
    assert_eq!(serving[0]["verdict"], "fail", "{v:#}");
    assert_eq!(serving[0]["summary"].as_str().unwrap().split(": ").last().unwrap(), "0/1 live pod(s) run this release");
    assert!(!serving[0]["diagnostics"].as_array().unwrap().is_empty());
    cluster.assert_read_only();

    // Two bundles that do not know each other: which is current is unknown, never guessed.
    edit_yaml_drop_rollback(&ex.v2());
    let (out, _c) =
        serving_audit(&ex, vec![pod(PodSpec::ready(OLD_POD, &v1, "file:../../store/llm-scratch/v1/"))], &v1);
    let v = out.json();
    let serving = serving_steps(&v);
    assert_eq!(serving[0]["verdict"], "inconclusive", "{v:#}");
    assert!(serving[0]["summary"].as_str().unwrap().contains("2 bundles claim to be current"));
    assert_eq!(out.code, 1);
}

fn edit_yaml_drop_rollback(p: &Path) {
    crate::support::edit_yaml(p, |v| {
        v["spec"].as_mapping_mut().unwrap().remove("rollback");
    });
}

#[test]
fn watch_pod_held_back_by_its_verifier_fails_bg530_naming_the_file() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let msg = "DIGEST-MISMATCH ckpt.pt: expected sha256:20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586, found sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let mut held = pod(PodSpec { ready: false, ..PodSpec::ready(NEW_POD, &d, V2_URI) });
    // The verifier ran after the storage initializer and refused the files
    // (exit 1, its termination message); the pod never becomes Ready.
    held["status"]["initContainerStatuses"].as_array_mut().unwrap().push(json!({
        "name": "bundlegate-verify", "ready": false, "restartCount": 3, "image": "ghcr.io/bundlegate/bundlegate:0.1.0", "imageID": "", "started": false,
        "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container=bundlegate-verify"}},
        "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "message": msg, "startedAt": "2026-01-01T10:05:10Z", "finishedAt": "2026-01-01T10:05:12Z"}}
    }));
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(synced(&ws)),
        objects: objects(&d, green_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI)), held], vec![]),
    }];
    let t = Instant::now();
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "60s"]);
    assert!(t.elapsed() < Duration::from_secs(30), "a proven mismatch is final: no waiting for the timeout");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(v["verdict"], "fail");
    let f = findings(&v, "rollout", "BG530");
    assert!(f.contains(NEW_POD) && f.contains("DIGEST-MISMATCH ckpt.pt"), "{f}");
    assert!(f.contains("20c86b9c3c2ca1e8") && f.contains("9f86d081884c7d65"), "both digests: {f}");
    cluster.assert_read_only();
}

mod busy_repository;
mod history;
mod library;

// ---------------------------------------------------------------------------
// LLMInferenceService: the object's own conditions

/// The release as an LLMInferenceService (KServe v0.20, v1alpha2) whose
/// conditions are `conds` (type, status, reason) for `observed` of
/// generation 2, valid against the CRD as the API server would serve it;
/// the Deployment under it owned by it, its ReplicaSets and pods as before.
fn llm_objects(ws: &Workspace, observed: i64, conds: &[(&str, &str, &str)]) -> Vec<Value> {
    let conditions: Vec<Value> = conds
        .iter()
        .map(|(t, s, r)| {
            let mut c = json!({"type": t, "status": s, "lastTransitionTime": "2026-01-01T10:05:30Z"});
            if !r.is_empty() {
                c["reason"] = json!(r);
            }
            c
        })
        .collect();
    let llm = json!({
        "apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService",
        "metadata": {"name": NAME, "namespace": NS, "uid": "uid-isvc", "generation": 2},
        "spec": {"model": {"uri": V2_URI}, "replicas": 1},
        "status": {"observedGeneration": observed, "conditions": conditions}
    });
    let errors = crate::support::schema::crd_errors("kserve/serving.kserve.io_llminferenceservices.yaml", &llm);
    assert!(errors.is_empty(), "the stand-in's LLMInferenceService violates the CRD:\n{}", errors.join("\n"));
    let mut dep = done_deployment();
    dep["metadata"]["ownerReferences"][0]["apiVersion"] = json!("serving.kserve.io/v1alpha2");
    dep["metadata"]["ownerReferences"][0]["kind"] = json!("LLMInferenceService");
    let d = ws.digest.clone();
    let mut v = objects(&d, dep, vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]);
    v.retain(|o| o["kind"] != "InferenceService");
    // The old ReplicaSet scaled to 0: the new pod is all that serves.
    for o in v
        .iter_mut()
        .filter(|o| o["kind"] == "ReplicaSet" && o["metadata"]["name"] == "llm-scratch-predictor-868c589678")
    {
        o["spec"]["replicas"] = json!(0);
        o["status"] = json!({"replicas": 0});
    }
    v.push(llm);
    v
}

/// The pods read fine in each case below; only the LLMInferenceService's
/// own conditions differ. All True for the current generation: PASS.
/// The router failing: FAIL, BG501 naming the condition. A status for the
/// previous spec, or a router still Unknown: INCONCLUSIVE (BG506), never
/// a revert. Every object the stand-in serves is valid against the CRD.
#[test]
fn watch_reads_an_llm_inference_services_own_conditions() {
    let ws = Workspace::with_bundle(|t| t.replacen("format: kserve-modelspec", "format: kserve-llm", 1));
    let all_true = [("Ready", "True", ""), ("WorkloadsReady", "True", ""), ("RouterReady", "True", "")];
    let run = |objects: Vec<Value>| {
        let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects }];
        let (out, cluster) = run_watch(&ws, frames, &["--timeout", "3s"]);
        cluster.assert_read_only();
        assert!(
            cluster.requests().iter().any(|(_, p)| p.contains("/v1alpha2/namespaces/ai-lab/llminferenceservices")),
            "the watch read the LLMInferenceService"
        );
        out
    };
    let out = run(llm_objects(&ws, 2, &all_true));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out.json(), "rollout")["verdict"], "pass", "{}", out.stdout);

    let out = run(llm_objects(
        &ws,
        2,
        &[
            ("Ready", "False", "RouterNotReady"),
            ("WorkloadsReady", "True", ""),
            ("RouterReady", "False", "GatewayNotAccepted"),
        ],
    ));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let f = findings(&out.json(), "rollout", "BG501");
    assert!(f.contains("RouterReady is False (GatewayNotAccepted)"), "{f}");

    for (why, objects) in [
        ("a status for the previous spec", llm_objects(&ws, 1, &all_true)),
        ("the router still Unknown", llm_objects(&ws, 2, &[("Ready", "True", ""), ("RouterReady", "Unknown", "")])),
    ] {
        let out = run(objects);
        let v = out.json();
        assert_eq!(step(&v, "rollout")["verdict"], "inconclusive", "{why}: {}", out.stdout);
        assert!(!findings(&v, "rollout", "BG506").is_empty(), "{why}: {}", out.stdout);
        assert_ne!(v["verdict"], "fail", "{why}: never a FAIL (a revert) on an undecided status");
    }
}
