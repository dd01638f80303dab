//! `bundlegate preflight`: rollouts that stalled (no GPU or CPU for the surge
//! pod, a ReadWriteOncePod deadlock) replayed from `kubectl get … -o yaml`
//! snapshots (tests/fixtures/preflight, examples/cluster), plus the live path
//! against a stand-in API server.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::support::http;
use crate::support::*;

fn fixture(name: &str) -> PathBuf {
    repo().join("tests/fixtures/preflight").join(name)
}

fn preflight(ex: &Example, bundle: &Path, snapshot: &Path) -> Out {
    ex.run(&["preflight", "--format", "json", bundle.to_str().unwrap(), "--snapshot", snapshot.to_str().unwrap()])
}

fn step(out: &Out) -> Value {
    out.json()["steps"][0].clone()
}

fn text(d: &Value) -> String {
    format!("{} | {} | {}", d["message"], d["evidence"], d["help"])
}

/// The v2 bundle as a CPU-only service (like the single-node CRC lab): no
/// GPU, no GPU nodeSelector/tolerations, 2 cores, optionally one volume.
fn cpu_bundle(ex: &Example, volume_mode: Option<&str>) -> PathBuf {
    ex.edit_v2(|v| {
        *at(v, "spec.serving.resources") = yaml("requests: {cpu: \"2\", memory: 4Gi}\nlimits: {memory: 4Gi}");
        let serving = at(v, "spec.serving").as_mapping_mut().unwrap();
        serving.remove("nodeSelector");
        serving.remove("tolerations");
        if let Some(m) = volume_mode {
            serving.insert(
                "volumes".into(),
                yaml(&format!("- {{name: model-cache, claimName: model-cache, accessMode: {m}, mountPath: /cache}}")),
            );
        }
    })
}

#[test]
fn roomy_example_passes() {
    let out = run(&[
        "preflight",
        "--format",
        "json",
        "examples/llm-scratch/v2/release.yaml",
        "--snapshot",
        "examples/cluster/roomy.yaml",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["verdict"], "pass");
    assert!(out.codes().is_empty(), "{}", out.stdout);
    assert_eq!(s["data"]["rollout"]["surge"], 1);
    assert_eq!(s["data"]["rollout"]["unavailable"], 0);
    assert_eq!(s["data"]["eligibleNodes"], 2);
    assert_eq!(s["data"]["newPodCapacity"], 1);
    // The table shows the nodes with their free resources.
    let rows = s["tables"][0]["rows"].as_array().unwrap();
    assert!(rows.iter().any(|r| r[0] == "gpu-b" && r[1] == "yes"), "{rows:?}");
}

#[test]
fn single_gpu_node_fully_used_by_the_old_release() {
    let out = run(&[
        "preflight",
        "--format",
        "json",
        "examples/llm-scratch/v2/release.yaml",
        "--snapshot",
        "examples/cluster/single-gpu.yaml",
    ]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(step(&out)["verdict"], "fail");
    assert_eq!(out.codes(), vec!["BG201"]);
    let d = out.diag("BG201");
    assert_eq!(d["message"], "the new pod will stay Pending: 0/1 nodes have a free nvidia.com/gpu");
    let t = text(&d);
    assert!(t.contains("gpu-a: nvidia.com/gpu requested 1/1"), "{t}");
    assert!(t.contains("llm-scratch-predictor-7d9f6c5b8d-x2kqp (current release of llm-scratch)"), "{t}");
    assert!(t.contains("surge 1, unavailable 0"), "{t}");
    assert!(t.contains("maxUnavailable: 1"), "help names the downtime way out: {t}");
    assert!(t.contains("maintenance window"), "{t}");
    assert!(d["span"]["line"].as_u64().is_some(), "points into the bundle: {d}");
}

#[test]
fn surge_pod_pending_with_cpu_requests_at_96_percent() {
    let ex = Example::new();
    let b = cpu_bundle(&ex, None);
    let out = preflight(&ex, &b, &fixture("cpu-96.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG201");
    assert_eq!(
        d["message"],
        "the new pod will stay Pending: Insufficient cpu: crc-node requests at 96% (12.5/13 cores)"
    );
    assert!(text(&d).contains("llm-scratch-predictor-6786d546b4-5tfgh"), "{d}");
}

#[test]
fn accepting_downtime_turns_the_surge_into_a_replacement() {
    // Same 96% node; maxSurge 0 / maxUnavailable 1 frees the old pod's 1.875 cores first.
    let ex = Example::new();
    let b = cpu_bundle(&ex, None);
    edit_yaml(&b, |v| {
        *at(v, "spec.serving.rollout") = yaml("{maxSurge: 0, maxUnavailable: 1, progressDeadlineSeconds: 600}")
    });
    let out = preflight(&ex, &b, &fixture("cpu-96.yaml"));
    // 2 cores needed, 0.5 free + 1.875 freed = 2.375: fits.
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(step(&out)["data"]["rollout"]["mode"], "replace");
}

#[test]
fn bg203_rwop_claim_with_max_unavailable_zero_deadlocks() {
    let ex = Example::new();
    // The bundle declares ReadWriteOnce; the PVC in the cluster says ReadWriteOncePod and wins.
    let b = cpu_bundle(&ex, Some("ReadWriteOnce"));
    let out = preflight(&ex, &b, &fixture("rwop.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG203"]);
    let d = out.diag("BG203");
    let t = text(&d);
    assert!(t.contains("it wins over the bundle's declared ReadWriteOnce"), "{t}");
    assert!(t.contains("Available=True and Progressing=True until progressDeadlineSeconds (600s)"), "{t}");
    assert_eq!(d["field"], "spec.serving.volumes[0].accessMode");
}

#[test]
fn rwo_on_a_single_node_passes() {
    let ex = Example::new();
    let b = cpu_bundle(&ex, Some("ReadWriteOnce"));
    let out = preflight(&ex, &b, &fixture("rwo-single-node.yaml"));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.codes().contains(&"BG204".to_string()), "{}", out.stdout);
    assert_eq!(step(&out)["data"]["volumes"][0]["accessMode"], "ReadWriteOnce");
}

#[test]
fn bg204_rwo_with_two_eligible_nodes_warns() {
    let ex = Example::new();
    let b = cpu_bundle(&ex, Some("ReadWriteOnce"));
    let out = preflight(&ex, &b, &fixture("rwo-two-nodes.yaml"));
    // A warning: the step passes (exit 0) but says so.
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG204"]);
    let d = out.diag("BG204");
    assert_eq!(d["severity"], "warning");
    let t = text(&d);
    assert!(t.contains("worker-1") && t.contains("worker-2"), "{t}");
    assert!(t.contains("kubernetes.io/hostname"), "{t}");
    // Pinning the service to one node removes the risk.
    edit_yaml(&b, |v| *at(v, "spec.serving.nodeSelector") = yaml("{kubernetes.io/hostname: worker-1}"));
    let out = preflight(&ex, &b, &fixture("rwo-two-nodes.yaml"));
    assert!(out.codes().is_empty(), "{}", out.stdout);
}

#[test]
fn bg208_taint_without_toleration() {
    let ex = Example::new();
    let out = preflight(&ex, &ex.v2(), &fixture("taint.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG208"]);
    let t = text(&out.diag("BG208"));
    assert!(t.contains("gpu-a: excluded: untolerated taint dedicated=ml-team:NoSchedule"), "{t}");
    assert!(t.contains("0/4 nodes are available"), "{t}");
    // Tolerating it brings BG201 back: the GPU on gpu-a is taken, gpu-c is free.
    ex.edit_v2(|v| {
        at(v, "spec.serving.tolerations")
            .as_sequence_mut()
            .unwrap()
            .push(yaml("{key: dedicated, operator: Equal, value: ml-team, effect: NoSchedule}"));
    });
    let out = preflight(&ex, &ex.v2(), &fixture("taint.yaml"));
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn bg202_quota_exhausted() {
    let ex = Example::new();
    let out = preflight(&ex, &ex.v2(), &fixture("quota.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG202"]);
    let t = text(&out.diag("BG202"));
    assert!(t.contains("quota ai-lab/ai-lab-compute: requests.nvidia.com/gpu hard 1, used 1, the 1 new pod(s) need 1 more (headroom 0)"), "{t}");
}

#[test]
fn bg201_terminating_pod_still_holds_the_gpu() {
    let ex = Example::new();
    let out = preflight(&ex, &ex.v2(), &fixture("terminating-gpu.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG201"]);
    let d = out.diag("BG201");
    assert_eq!(d["message"], "the new pod will stay Pending: 0/2 nodes have a free nvidia.com/gpu");
    let t = text(&d);
    assert!(
        t.contains("ai-lab/embedder-predictor-5f7c9d8b6-q8wzt (terminating: deletionTimestamp set, still holds"),
        "{t}"
    );
}

#[test]
fn bg205_pdb_allows_zero_disruptions() {
    let ex = Example::new();
    let out = preflight(&ex, &ex.v2(), &fixture("pdb.yaml"));
    assert_eq!(out.codes(), vec!["BG205"]);
    let d = out.diag("BG205");
    assert_eq!(d["severity"], "warning");
    assert!(text(&d).contains("minAvailable 1 with replicas 1 → desired healthy 1, disruptions allowed 0"), "{d}");
    assert_eq!(out.code, 0);
    // Two replicas with minAvailable 1 allow one disruption (and need two surge-free GPUs: gpu-b only has one).
    ex.edit_v2(|v| *at(v, "spec.serving.replicas") = 2.into());
    let out = preflight(&ex, &ex.v2(), &fixture("pdb.yaml"));
    assert!(!out.codes().contains(&"BG205".to_string()), "{}", out.stdout);
}

#[test]
fn bg206_liveness_kills_a_loading_pod() {
    let ex = Example::new();
    ex.edit_v2(|v| {
        at(v, "spec.serving.probes").as_mapping_mut().unwrap().remove("startup");
        *at(v, "spec.serving.rollout.progressDeadlineSeconds") = 100.into();
    });
    let out = preflight(&ex, &ex.v2(), &repo().join("examples/cluster/roomy.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG206");
    assert_eq!(
        d["message"],
        "the kubelet kills a loading pod after 30s but the measured p95 load time is 95s: predicted restart loop"
    );
    assert!(text(&d).contains("periodSeconds 10 × failureThreshold 3 = 30s"), "{d}");
    assert_eq!(d["field"], "spec.serving.probes.liveness");
    // The progress deadline reuses the lint code BG018.
    let p = out.diag("BG018");
    assert!(
        p["message"]
            .as_str()
            .unwrap()
            .contains("progressDeadlineSeconds 100 is shorter than load time + scheduling (95s + 30s)"),
        "{p}"
    );
}

#[test]
fn bg207_unparseable_quantity_is_never_pass() {
    let ex = Example::new();
    let out = preflight(&ex, &ex.v2(), &fixture("bad-quantity.yaml"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG207");
    assert!(text(&d).contains("node gpu-b: status.allocatable.memory: `31.5 GiB` is not a Kubernetes quantity"), "{d}");
    // gpu-b is the only node with a free GPU; unknown, it cannot host the surge pod.
    assert!(out.codes().contains(&"BG201".to_string()), "{}", out.stdout);
}

/// Malformed or partial snapshots: exit 2, the file (and item) named, never PASS.
#[test]
fn malformed_snapshots_are_errors_naming_the_file() {
    let ex = Example::new();
    let cases: &[(&str, &str, &str)] = &[
        ("garbage.yaml", "this: is: not: yaml: [", "garbage.yaml: not valid YAML"),
        ("node.yaml", "apiVersion: v1\nkind: Node\nmetadata: {name: a}\n", "garbage"), // replaced below
        ("empty.yaml", "", "empty.yaml: the snapshot is empty"),
        (
            "nokind.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  metadata: {name: b}\n",
            "nokind.yaml: items[1] has no `kind`",
        ),
        (
            "nonodes.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p, namespace: ai-lab}\n  spec: {containers: []}\n",
            "nonodes.yaml: no Node objects",
        ),
        (
            "badfield.json",
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Node","metadata":{"name":"a"},"spec":{"taints":"none"}}]}"#,
            "badfield.json: items[0] (Node a) spec.taints",
        ),
    ];
    for (file, body, want) in cases {
        let p = ex.path().join(file);
        std::fs::write(&p, body).unwrap();
        let out = preflight(&ex, &ex.v2(), &p);
        assert_eq!(out.code, 2, "{file}: {}\n{}", out.stdout, out.stderr);
        let s = step(&out);
        assert_eq!(s["verdict"], "error", "{file}");
        let summary = s["summary"].as_str().unwrap();
        let want = if *file == "node.yaml" { "node.yaml: not a Kubernetes List (kind: Node)" } else { want };
        assert!(summary.contains(want), "{file}: {summary}");
    }
}

// ---- live path: a stand-in API server ----------------------------------------------------

/// Answers the list endpoints from a snapshot fixture, recording every request line.
struct StandIn {
    port: u16,
    requests: Arc<Mutex<Vec<String>>>,
    _server: http::Server,
}

fn list_of(items: &[Value], kind: &str, ns: Option<&str>) -> Value {
    let items: Vec<Value> = items
        .iter()
        .filter(|i| i["kind"] == kind && ns.is_none_or(|ns| i["metadata"]["namespace"] == ns))
        .cloned()
        .collect();
    let api = if kind == "PodDisruptionBudget" { "policy/v1" } else { "v1" };
    json!({"apiVersion": api, "kind": format!("{kind}List"), "metadata": {"resourceVersion": "48213999"}, "items": items})
}

/// A Kubernetes API stand-in serving a snapshot's objects; `fault`, when
/// set, answers every request instead.
fn stand_in_with(snapshot: &Path, fault: Option<http::Reply>) -> StandIn {
    let doc: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(snapshot).unwrap()).unwrap();
    let items = doc["items"].as_array().unwrap().clone();
    let requests = Arc::new(Mutex::new(Vec::new()));
    let rec = requests.clone();
    let server = http::Server::start_replies(
        0,
        Arc::new(move |req: &http::Req| {
            let q: Vec<String> = req.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            rec.lock().unwrap().push(format!("{} {}?{}", req.method, req.path, q.join("&")));
            if let Some(f) = &fault {
                return f.clone();
            }
            let seg: Vec<&str> = req.path.trim_matches('/').split('/').collect();
            let resp = match (req.method.as_str(), seg.as_slice()) {
                ("GET", ["api", "v1", "nodes"]) => Some(list_of(&items, "Node", None)),
                ("GET", ["api", "v1", "pods"]) => Some(list_of(&items, "Pod", None)),
                ("GET", ["api", "v1", "namespaces", ns, "persistentvolumeclaims"]) => {
                    Some(list_of(&items, "PersistentVolumeClaim", Some(ns)))
                }
                ("GET", ["api", "v1", "namespaces", ns, "resourcequotas"]) => {
                    Some(list_of(&items, "ResourceQuota", Some(ns)))
                }
                ("GET", ["apis", "policy", "v1", "namespaces", ns, "poddisruptionbudgets"]) => {
                    Some(list_of(&items, "PodDisruptionBudget", Some(ns)))
                }
                ("GET", ["api", "v1", "persistentvolumes", name]) => {
                    items.iter().find(|i| i["kind"] == "PersistentVolume" && i["metadata"]["name"] == *name).cloned()
                }
                _ => None,
            };
            match resp {
                Some(v) => http::Reply::Json(200, v),
                None => http::Reply::Json(
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                ),
            }
        }),
    );
    StandIn { port: server.port, requests, _server: server }
}

fn stand_in(snapshot: &Path) -> StandIn {
    stand_in_with(snapshot, None)
}

fn kubeconfig(dir: &Path, port: u16) -> PathBuf {
    crate::support::kube::write_kubeconfig(&dir.join("kubeconfig"), port, Some("read-only-test-token"), Some("ai-lab"))
}

fn live(ex: &Example, bundle: &Path, snapshot: &Path) -> (Out, Vec<String>) {
    live_run(ex, bundle, stand_in(snapshot), &[])
}

/// `preflight --live` against `server`; returns the output and the requests it saw.
fn live_run(ex: &Example, bundle: &Path, server: StandIn, extra: &[(&str, &str)]) -> (Out, Vec<String>) {
    let kc = kubeconfig(ex.path(), server.port);
    let mut env = vec![
        ("KUBECONFIG", kc.to_str().unwrap()),
        ("KUBERNETES_SERVICE_HOST", ""),
        ("HOME", ex.path().to_str().unwrap()),
    ];
    env.extend_from_slice(extra);
    let out = run_in(ex.path(), &["preflight", "--format", "json", bundle.to_str().unwrap(), "--live"], &env);
    let reqs = server.requests.lock().unwrap().clone();
    (out, reqs)
}

#[test]
fn live_path_reads_the_cluster_with_get_only() {
    let ex = Example::new();
    let (out, reqs) = live(&ex, &ex.v2(), &repo().join("examples/cluster/single-gpu.yaml"));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.codes(), vec!["BG201"]);
    assert_eq!(out.diag("BG201")["message"], "the new pod will stay Pending: 0/1 nodes have a free nvidia.com/gpu");
    assert!(step(&out)["data"]["source"].as_str().unwrap().starts_with("live http://127.0.0.1:"), "{}", out.stdout);
    // Read-only: every request is a GET, and the ones we expect were made.
    assert!(!reqs.is_empty());
    assert!(reqs.iter().all(|r| r.starts_with("GET ")), "{reqs:?}");
    for want in [
        "/api/v1/nodes",
        "/api/v1/pods",
        "/api/v1/namespaces/ai-lab/persistentvolumeclaims",
        "/api/v1/namespaces/ai-lab/resourcequotas",
        "/apis/policy/v1/namespaces/ai-lab/poddisruptionbudgets",
    ] {
        assert!(
            reqs.iter().any(|r| r.split_whitespace().nth(1).unwrap_or("").starts_with(want)),
            "no GET {want} in {reqs:?}"
        );
    }
}

#[test]
fn live_and_snapshot_agree_on_volumes() {
    // RWOP through the live path: the PVC list and the PV get feed the same checks.
    let ex = Example::new();
    let b = cpu_bundle(&ex, Some("ReadWriteOnce"));
    let (out, reqs) = live(&ex, &b, &fixture("rwop.yaml"));
    assert_eq!(out.codes(), vec!["BG203"], "{}\n{}", out.stdout, out.stderr);
    assert!(reqs.iter().any(|r| r.starts_with("GET /api/v1/persistentvolumes/pvc-3f1c")), "{reqs:?}");
    assert!(reqs.iter().all(|r| r.starts_with("GET ")), "{reqs:?}");
}

#[test]
fn live_path_unreachable_is_an_error() {
    let ex = Example::new();
    // A port nothing listens on.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let kc = kubeconfig(ex.path(), port);
    let out = run_in(
        ex.path(),
        &["preflight", "--format", "json", ex.v2().to_str().unwrap(), "--live"],
        &[("KUBECONFIG", kc.to_str().unwrap()), ("HOME", ex.path().to_str().unwrap())],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(step(&out)["summary"].as_str().unwrap().contains("listing nodes"), "{}", out.stdout);
}

#[test]
fn bg201_surge_that_fits_only_after_old_pods_go_is_a_warning() {
    // replicas 4 → surge 1, unavailable 1: the surge pod does not fit on the 96% node,
    // but removing one old pod (1.875 cores) frees enough; the rollout advances with 3 of 4.
    let ex = Example::new();
    let b = cpu_bundle(&ex, None);
    edit_yaml(&b, |v| *at(v, "spec.serving.replicas") = 4.into());
    let out = preflight(&ex, &b, &fixture("cpu-96.yaml"));
    assert_eq!(out.code, 0, "{}", out.stdout);
    let d = out.diag("BG201");
    assert_eq!(d["severity"], "warning");
    assert!(d["message"].as_str().unwrap().contains("serving with 3 of 4 replicas meanwhile"), "{d}");
}

// ---- Kubernetes API faults (docs/reliability.md) ----------------------------

/// A kube `Status` body as the API server sends it.
pub fn kube_status(code: u16, reason: &str, message: &str) -> http::Reply {
    http::Reply::Json(
        code,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message, "reason": reason, "code": code}),
    )
}

fn live_fault(fault: http::Reply) -> (Out, Vec<String>) {
    let ex = Example::new();
    let server = stand_in_with(&repo().join("examples/cluster/roomy.yaml"), Some(fault));
    live_run(&ex, &ex.v2(), server, &[("BUNDLEGATE_KUBE_TIMEOUT", "1s")])
}

#[test]
fn live_api_500_is_an_error_naming_the_call() {
    let (out, _) = live_fault(kube_status(500, "InternalError", "etcdserver: request timed out"));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["verdict"], "error");
    let summary = s["summary"].as_str().unwrap();
    assert!(summary.contains("listing nodes") && summary.contains("etcdserver: request timed out"), "{summary}");
}

#[test]
fn live_api_403_is_an_error_quoting_the_rbac_denial() {
    let (out, reqs) = live_fault(kube_status(403, "Forbidden", "nodes is forbidden: User \"system:serviceaccount:ci:bundlegate\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let summary = step(&out)["summary"].as_str().unwrap().to_string();
    assert!(summary.contains("cannot list resource") && summary.contains("nodes"), "{summary}");
    assert!(reqs.iter().all(|r| r.starts_with("GET ")), "{reqs:?}");
}

#[test]
fn live_api_that_hangs_times_out_as_an_error() {
    let (out, _) = live_fault(http::Reply::Hang(std::time::Duration::from_secs(30)));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["verdict"], "error");
    assert!(s["summary"].as_str().unwrap().contains("listing nodes"), "{s}");
}

/// The Kubernetes request timeout is the one configured, observed on the
/// clock: against an API that never answers, 1 s gives up well before the
/// 4 s run, and 4 s waits at least 4 s (a constant timeout fails one side).
#[test]
fn live_api_hang_is_cut_at_the_configured_timeout_measured() {
    let ex = Example::new();
    let run = |t: &str| {
        let server = stand_in_with(
            &repo().join("examples/cluster/roomy.yaml"),
            Some(http::Reply::Hang(std::time::Duration::from_secs(60))),
        );
        let started = std::time::Instant::now();
        let (out, _) = live_run(&ex, &ex.v2(), server, &[("BUNDLEGATE_KUBE_TIMEOUT", t)]);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        started.elapsed()
    };
    let short = run("1s");
    let long = run("4s");
    assert!(short < std::time::Duration::from_millis(3500), "1s timeout took {short:?}");
    assert!(long >= std::time::Duration::from_secs(4), "4s timeout gave up after {long:?}");
}

#[test]
fn live_api_truncated_answer_is_an_error() {
    let (out, _) = live_fault(http::Reply::Truncated {
        claimed: 4096,
        body: br#"{"kind":"NodeList","apiVersion":"v1","items":[{"metadata":{"name":"a"#.to_vec(),
    });
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out)["verdict"], "error");
}

// ---- arithmetic that must never wrap or truncate into a PASS -----------------------------

/// examples/cluster/roomy.yaml (the v2 surge pod fits on the idle gpu-b) with
/// `extra` items appended, written back as kubectl-style YAML.
fn roomy_plus(ex: &Example, file: &str, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join("examples/cluster/roomy.yaml")).unwrap();
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let more: serde_yaml_ng::Value = serde_yaml_ng::from_str(extra).unwrap();
    doc["items"].as_sequence_mut().unwrap().extend(more.as_sequence().unwrap().iter().cloned());
    let p = ex.path().join(file);
    std::fs::write(&p, serde_yaml_ng::to_string(&doc).unwrap()).unwrap();
    p
}

/// A pod on gpu-b in another namespace, requesting `gpu` GPUs, in `phase`.
fn gpu_b_pod(name: &str, gpu: &str, phase: &str) -> String {
    format!(
        "- apiVersion: v1\n  kind: Pod\n  metadata: {{name: {name}, namespace: batch}}\n  spec:\n    nodeName: gpu-b\n    containers:\n    - name: c\n      resources: {{requests: {{nvidia.com/gpu: \"{gpu}\"}}, limits: {{nvidia.com/gpu: \"{gpu}\"}}}}\n  status: {{phase: {phase}}}\n"
    )
}

#[test]
fn negative_request_in_a_snapshot_pod_does_not_free_capacity() {
    let ex = Example::new();
    // A pod takes gpu-b's only GPU; a second claims -1 GPU. Summed, gpu-b
    // would look free again; the negative one must be refused instead.
    let snap = roomy_plus(
        &ex,
        "neg.yaml",
        &format!("{}{}", gpu_b_pod("takes-gpu", "1", "Running"), gpu_b_pod("gives-gpu", "-1", "Running")),
    );
    let out = preflight(&ex, &ex.v2(), &snap);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(step(&out)["verdict"], "fail");
    assert!(out.codes().contains(&"BG201".to_string()), "{}", out.stdout);
    let t = text(&out.diag("BG207"));
    assert!(t.contains("pod batch/gives-gpu") && t.contains("negative"), "{t}");
}

#[test]
fn huge_requests_are_out_of_range_not_a_wrapped_sum() {
    let ex = Example::new();
    // Two pods of 1e35 GPUs: beyond int64, once summed beyond i128. Neither may
    // wrap into free room (nor panic): they are named, and the answer is unknown.
    let snap = roomy_plus(
        &ex,
        "huge.yaml",
        &format!("{}{}", gpu_b_pod("huge-1", "1e35", "Running"), gpu_b_pod("huge-2", "1e35", "Running")),
    );
    let out = preflight(&ex, &ex.v2(), &snap);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out)["verdict"], "inconclusive", "{}", out.stdout);
    let t = text(&out.diag("BG207"));
    assert!(t.contains("pod batch/huge-1") && t.contains("pod batch/huge-2") && t.contains("out of range"), "{t}");
}

#[test]
fn percentage_surge_is_never_truncated_to_zero() {
    let ex = Example::new();
    // 429496729600% of 1 replica is 2^32 surge pods: truncated to u32 it was 0,
    // which turned the rollout into a replacement that frees gpu-a first and
    // passed. Now the bundle refuses it at parse time, naming the field.
    let b = ex.edit_v2(|v| {
        *at(v, "spec.serving.rollout.maxSurge") = "429496729600%".into();
        *at(v, "spec.serving.rollout.maxUnavailable") = 0.into();
    });
    let out = preflight(&ex, &b, &repo().join("examples/cluster/single-gpu.yaml"));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let summary = step(&out)["summary"].as_str().unwrap().to_string();
    assert!(
        summary.contains("release.yaml:")
            && summary.contains("spec.serving.rollout.maxSurge")
            && summary.contains("out of range"),
        "{summary}"
    );
    // The largest accepted percentage is computed in full: 1000% of 1 is 10 surge pods.
    let b = ex.edit_v2(|v| *at(v, "spec.serving.rollout.maxSurge") = "1000%".into());
    let out = preflight(&ex, &b, &repo().join("examples/cluster/single-gpu.yaml"));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["data"]["rollout"]["surge"], 10);
    assert_eq!(s["data"]["rollout"]["mode"], "surge");
    assert_eq!(out.codes(), vec!["BG201"]);
}

#[test]
fn pod_without_spec_is_inconclusive_not_using_nothing() {
    let ex = Example::new();
    for (file, item) in [
        ("nospec.yaml", "- apiVersion: v1\n  kind: Pod\n  metadata: {name: mystery, namespace: batch}\n  status: {phase: Running}\n"),
        ("nocontainers.yaml", "- apiVersion: v1\n  kind: Pod\n  metadata: {name: mystery, namespace: batch}\n  spec: {nodeName: gpu-b}\n  status: {phase: Running}\n"),
    ] {
        let out = preflight(&ex, &ex.v2(), &roomy_plus(&ex, file, item));
        assert_eq!(out.code, 1, "{file}: {}", out.stdout);
        assert_eq!(step(&out)["verdict"], "inconclusive", "{file}: {}", out.stdout);
        assert!(text(&out.diag("BG207")).contains("pod batch/mystery: no spec.containers"), "{file}: {}", out.stdout);
    }
    // A node whose allocatable lacks cpu/memory is unknown too, not empty.
    let text_ = std::fs::read_to_string(repo().join("examples/cluster/roomy.yaml")).unwrap();
    let mut doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text_).unwrap();
    for it in doc["items"].as_sequence_mut().unwrap() {
        if it["metadata"]["name"] == "gpu-b" {
            it["status"]["allocatable"].as_mapping_mut().unwrap().remove("memory");
        }
    }
    let p = ex.path().join("nomem.yaml");
    std::fs::write(&p, serde_yaml_ng::to_string(&doc).unwrap()).unwrap();
    let out = preflight(&ex, &ex.v2(), &p);
    assert_eq!(step(&out)["verdict"], "inconclusive", "{}", out.stdout);
    assert!(text(&out.diag("BG207")).contains("node gpu-b: status.allocatable has no memory"), "{}", out.stdout);
    // gpu-b might have room: the shortage on gpu-a is not reported as the failure.
    assert_eq!(out.diag("BG201")["severity"], "warning", "{}", out.stdout);
}

#[test]
fn evicted_and_completed_pods_hold_no_node_resources() {
    let ex = Example::new();
    let terminal = format!("{}{}", gpu_b_pod("evicted", "1", "Failed"), gpu_b_pod("done", "1", "Succeeded"));
    let out = preflight(&ex, &ex.v2(), &roomy_plus(&ex, "terminal.yaml", &terminal));
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(step(&out)["verdict"], "pass");
    // The same pod Running does take gpu-b's GPU.
    let out = preflight(&ex, &ex.v2(), &roomy_plus(&ex, "running.yaml", &gpu_b_pod("busy", "1", "Running")));
    assert_eq!(out.codes(), vec!["BG201"], "{}", out.stdout);
}

#[test]
fn init_containers_count_as_the_scheduler_counts_them() {
    let ex = Example::new();
    // gpu-b has 7890m cpu, 125m taken by its daemon pods; the v2 pod needs 2
    // cores. One more pod: init container I cores, containers 2 × 500m,
    // overhead 500m → max(I, 1) + 0.5 cores.
    let pod = |init: &str| {
        format!("- apiVersion: v1\n  kind: Pod\n  metadata: {{name: init-heavy, namespace: batch}}\n  spec:\n    nodeName: gpu-b\n    overhead: {{cpu: 500m}}\n    initContainers:\n    - {{name: i, resources: {{requests: {{cpu: '{init}'}}}}}}\n    containers:\n    - {{name: a, resources: {{requests: {{cpu: 500m}}}}}}\n    - {{name: b, resources: {{requests: {{cpu: 500m}}}}}}\n  status: {{phase: Running}}\n")
    };
    // I = 7: 7.5 cores, 265m left: does not fit (ignoring init containers would say it does).
    let out = preflight(&ex, &ex.v2(), &roomy_plus(&ex, "init7.yaml", &pod("7")));
    assert_eq!(out.codes(), vec!["BG201"], "{}", out.stdout);
    let t = text(&out.diag("BG201"));
    assert!(t.contains("gpu-b: cpu requested 7.625/7.89"), "{t}");
    // I = 5: 5.5 cores, 2.265 left: fits (summing init with the containers would say it does not).
    let out = preflight(&ex, &ex.v2(), &roomy_plus(&ex, "init5.yaml", &pod("5")));
    assert_eq!(out.code, 0, "{}", out.stdout);
}

#[test]
fn bad_quantity_in_the_bundle_is_refused_by_lint_and_preflight() {
    let ex = Example::new();
    // A YAML float that is not finite never reaches the quantity check: the
    // bundle parser refuses it with its position.
    let b = ex.edit_v2(|v| *at(v, "spec.serving.resources.requests.cpu") = yaml(".nan"));
    let out = ex.run(&["lint", "--format", "json", b.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let summary = step(&out)["summary"].as_str().unwrap().to_string();
    assert!(
        summary.contains("spec.serving.resources.requests.cpu") && summary.contains("not a finite number"),
        "{summary}"
    );
    for (q, why) in
        [("-2", "negative"), ("\".nan\"", "no digits"), ("1e30", "out of range"), ("2 cores", "unknown suffix")]
    {
        let b = ex.edit_v2(|v| *at(v, "spec.serving.resources.requests.cpu") = yaml(q));
        let out = ex.run(&["lint", "--format", "json", b.to_str().unwrap()]);
        assert_eq!(out.code, 1, "{q}: {}", out.stdout);
        let d = out.diag("BG209");
        assert_eq!(d["field"], "spec.serving.resources.requests.cpu", "{q}");
        assert!(d["message"].as_str().unwrap().contains(why), "{q}: {d}");
        assert!(d["span"]["line"].as_u64().is_some(), "{d}");
        let out = preflight(&ex, &b, &repo().join("examples/cluster/roomy.yaml"));
        assert_eq!(out.code, 2, "{q}: {}", out.stdout);
        assert!(step(&out)["summary"].as_str().unwrap().contains("spec.serving.resources"), "{q}: {}", out.stdout);
    }
}

#[test]
fn yaml_snapshot_duplicate_keys_and_oversize_are_refused() {
    let ex = Example::new();
    let p = ex.path().join("dup.yaml");
    std::fs::write(&p, "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  metadata: {name: b}\n").unwrap();
    let out = preflight(&ex, &ex.v2(), &p);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        step(&out)["summary"].as_str().unwrap().contains("dup.yaml:7:3: items[0].metadata: duplicate key `metadata`"),
        "{}",
        out.stdout
    );
    // Sparse: refused from its size, before anything is read.
    let p = ex.path().join("huge.yaml");
    std::fs::File::create(&p).unwrap().set_len(513 << 20).unwrap();
    let out = preflight(&ex, &ex.v2(), &p);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(
        step(&out)["summary"].as_str().unwrap().contains("huge.yaml: the snapshot is larger than 512 MiB"),
        "{}",
        out.stdout
    );
}

/// The single-GPU snapshot (its v1 pod holds the only GPU: BG201, FAIL) with
/// that pod's GPU request written a second time as `0`. Last-wins read it as
/// 0 and turned the FAIL into a PASS: in JSON (serde_json keeps the last
/// key), and in YAML through an alias key (`*g : "0"`), which the duplicate
/// check skipped. Both are refused naming file:line:column and the field.
#[test]
fn json_and_alias_duplicate_keys_in_snapshots_are_refused_naming_the_line() {
    let ex = Example::new();
    let yaml_text = std::fs::read_to_string(repo().join("examples/cluster/single-gpu.yaml")).unwrap();
    let pod = yaml_text.find("name: llm-scratch-predictor-7d9f6c5b8d-x2kqp").unwrap();
    let req = pod + yaml_text[pod..].find("          nvidia.com/gpu: \"1\"\n").unwrap();
    let line = yaml_text[..req].lines().count() + 1;

    let alias = format!(
        "{}          &g nvidia.com/gpu: \"1\"\n          *g : \"0\"\n{}",
        &yaml_text[..req],
        &yaml_text[req + "          nvidia.com/gpu: \"1\"\n".len()..]
    );
    let p = ex.path().join("alias.yaml");
    std::fs::write(&p, &alias).unwrap();
    let out = preflight(&ex, &ex.v2(), &p);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let s = step(&out)["summary"].as_str().unwrap().to_string();
    assert!(
        s.contains(&format!("alias.yaml:{}:11: items[", line + 1))
            && s.contains("spec.containers[0].resources.requests.nvidia.com/gpu: duplicate key `nvidia.com/gpu`"),
        "{s}"
    );

    let v: serde_json::Value = serde_yaml_ng::from_str(&yaml_text).unwrap();
    let json = serde_json::to_string_pretty(&v).unwrap();
    let pod = json.find("\"llm-scratch-predictor-7d9f6c5b8d-x2kqp\"").unwrap();
    let req = pod + json[pod..].find("\"requests\"").unwrap();
    let at = req + json[req..].find("\"nvidia.com/gpu\": \"1\"").unwrap();
    let p = ex.path().join("gpu.json");
    std::fs::write(&p, &json).unwrap();
    assert_eq!(preflight(&ex, &ex.v2(), &p).code, 1, "the snapshot as written fails BG201");
    let dup = format!(
        "{}\"nvidia.com/gpu\": \"1\", \"nvidia.com/gpu\": \"0\"{}",
        &json[..at],
        &json[at + "\"nvidia.com/gpu\": \"1\"".len()..]
    );
    std::fs::write(&p, &dup).unwrap();
    let out = preflight(&ex, &ex.v2(), &p);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let s = step(&out)["summary"].as_str().unwrap().to_string();
    let line = json[..at].lines().count();
    assert!(
        s.contains(&format!("gpu.json:{line}:"))
            && s.contains("requests.nvidia.com/gpu: duplicate key `nvidia.com/gpu`"),
        "{s}"
    );
}

/// An anchored pod and 20,000 `*p` aliases (180 KB) sent the snapshot down
/// serde's whole-document path unguarded: 57 s and 6 GB, then an abort
/// (exit 134). The guard with snapshot limits refuses it at once.
#[test]
fn snapshot_alias_bombs_are_refused_fast() {
    let ex = Example::new();
    let v: serde_json::Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(repo().join("examples/cluster/single-gpu.yaml")).unwrap())
            .unwrap();
    let items = v["items"].as_array().unwrap();
    let node = items.iter().find(|i| i["kind"] == "Node").unwrap();
    let pod = items.iter().find(|i| i["kind"] == "Pod").unwrap();
    let mut t = format!("apiVersion: v1\nkind: List\nitems:\n- {node}\n- &p {pod}\n");
    t.push_str(&"- *p\n".repeat(20_000));
    let p = ex.path().join("bomb.yaml");
    std::fs::write(&p, &t).unwrap();
    let t0 = std::time::Instant::now();
    let out = run_within(
        ex.path(),
        &["preflight", "--format", "json", ex.v2().to_str().unwrap(), "--snapshot", p.to_str().unwrap()],
        &[],
        30,
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out)["summary"].as_str().unwrap().to_string();
    assert!(s.contains("bomb.yaml:") && s.contains("alias amplification"), "{s}");
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "{:?}", t0.elapsed());
    // A few aliases stay readable: anchors are YAML, amplification is not.
    let few = format!("apiVersion: v1\nkind: List\nitems:\n- {node}\n- &p {pod}\n- *p\n");
    std::fs::write(&p, few).unwrap();
    assert_eq!(preflight(&ex, &ex.v2(), &p).code, 1);
}
