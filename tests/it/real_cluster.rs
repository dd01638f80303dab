//! Against a real control plane (`support::cluster`: etcd, kube-apiserver,
//! kube-controller-manager, kube-scheduler of Kubernetes v1.36, kwok for the
//! nodes): what the API server accepts of what `render` writes, and whether
//! `preflight --live` says what the real scheduler then does with the pod the
//! rollout creates.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use ::kube::api::{Api, DynamicObject, Patch, PatchParams};
use ::kube::discovery::ApiResource;
use serde_json::{json, Value};

use crate::support::cluster::{self, block_on, poll, Cluster};
use crate::support::*;

const MANAGER: &str = "bundlegate-tests";

/// Every document of a multi-document YAML text, as JSON.
fn documents(text: &str) -> Vec<Value> {
    use serde::Deserialize;
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| Value::deserialize(d).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

/// The API resource of an object's apiVersion and kind, from discovery.
async fn resource(client: &::kube::Client, obj: &Value) -> ApiResource {
    let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), obj["apiVersion"].as_str().unwrap().to_string()),
    };
    let gvk = ::kube::api::GroupVersionKind::gvk(&group, &version, obj["kind"].as_str().unwrap());
    ::kube::discovery::pinned_kind(client, &gvk).await.unwrap_or_else(|e| panic!("discovery of {gvk:?}: {e}")).0
}

/// Server-side apply of one object, dry run or for real, with strict field
/// validation: unknown or duplicate fields are errors, not warnings.
async fn apply(client: &::kube::Client, obj: &Value, dry_run: bool) -> Result<Value, ::kube::Error> {
    let ar = resource(client, obj).await;
    let name = obj["metadata"]["name"].as_str().unwrap();
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let mut pp = PatchParams::apply(MANAGER).validation_strict();
    if dry_run {
        pp = pp.dry_run();
    }
    api.patch(name, &pp, &Patch::Apply(obj)).await.map(|o| serde_json::to_value(o).unwrap())
}

/// A dry-run create (`POST …?dryRun=All&fieldValidation=Strict`): the
/// object goes through admission and validation and is not stored; an
/// unknown or duplicate field is an error.
async fn create_dry_run(client: &::kube::Client, obj: &Value) -> Result<Value, ::kube::Error> {
    let ar = resource(client, obj).await;
    let ns = obj["metadata"]["namespace"].as_str().unwrap();
    let base =
        if ar.group.is_empty() { format!("/api/{}", ar.version) } else { format!("/apis/{}/{}", ar.group, ar.version) };
    let url = format!("{base}/namespaces/{ns}/{}?dryRun=All&fieldValidation=Strict&fieldManager={MANAGER}", ar.plural);
    let req = ::http::Request::post(url)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(obj).unwrap())
        .unwrap();
    client.request::<Value>(req).await
}

/// The cluster, or `None` when the real-cluster tests are skipped.
fn real() -> Option<&'static Cluster> {
    cluster::cluster()
}

/// A private copy of the example whose two releases live in `ns`, in the
/// given serving format.
fn example_in(ns: &str, format: &str, edit: impl Fn(&mut serde_yaml_ng::Value)) -> Example {
    let ex = Example::new();
    for b in [ex.v1(), ex.v2()] {
        edit_yaml(&b, |v| {
            *at(v, "metadata.namespace") = ns.into();
            *at(v, "spec.serving.format") = format.into();
            edit(v);
        });
    }
    ex
}

fn render(ex: &Example, bundle: &Path) -> Vec<Value> {
    let out = ex.run(&["render", bundle.to_str().unwrap()]);
    assert_eq!(out.code, 0, "render failed:\n{}\n{}", out.stdout, out.stderr);
    documents(&out.stdout)
}

// ---- render: what the API server accepts --------------------------------------------------

/// Every manifest `render` writes for the shipped example, in each serving
/// format, passes the real API server's validation (built-in types, the
/// whole KServe CRD's schema, admission, strict fields) both ways a
/// deployer sends it: a dry-run create and a dry-run server-side apply.
#[test]
fn rendered_manifests_are_accepted_by_the_real_api_server() {
    let Some(c) = real() else { return };
    block_on(async {
        let client = c.client().await;
        let ns = cluster::namespace(&client, "render").await;
        for format in ["kserve-custom", "kserve-modelspec", "deployment"] {
            let ex = example_in(&ns, format, |_| {});
            let docs = render(&ex, &ex.v2());
            assert!(!docs.is_empty(), "{format}: nothing rendered");
            for d in &docs {
                let kind = d["kind"].as_str().unwrap();
                let created = create_dry_run(&client, d)
                    .await
                    .unwrap_or_else(|e| panic!("{format}: the API server refused the rendered {kind}: {e}\n{d:#}"));
                let applied = apply(&client, d, true)
                    .await
                    .unwrap_or_else(|e| panic!("{format}: server-side apply refused the rendered {kind}: {e}\n{d:#}"));
                for accepted in [created, applied] {
                    assert_eq!(accepted["metadata"]["namespace"], ns.as_str());
                    assert_eq!(accepted["metadata"]["name"], d["metadata"]["name"]);
                    // Nothing the template wrote was dropped on the way in.
                    assert_eq!(
                        accepted["spec"]["template"]["spec"]["containers"][0]["resources"],
                        d["spec"]["template"]["spec"]["containers"][0]["resources"]
                    );
                }
            }
            let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
            let want: &[&str] = if format == "deployment" { &["Deployment", "Service"] } else { &["InferenceService"] };
            assert_eq!(kinds, want, "{format}");
        }
    });
}

/// The same dry run refuses what is wrong: a field the KServe CRD does not
/// define (a typo bundlegate's templates could make), and a Deployment whose
/// GPU request has no equal limit (API validation no schema holds).
#[test]
fn the_real_api_server_refuses_a_broken_manifest() {
    let Some(c) = real() else { return };
    block_on(async {
        let client = c.client().await;
        let ns = cluster::namespace(&client, "broken").await;

        let ex = example_in(&ns, "kserve-custom", |_| {});
        let mut is = render(&ex, &ex.v2()).remove(0);
        is["spec"]["predictor"]["minReplica"] = json!(1);
        let e = create_dry_run(&client, &is).await.expect_err("an unknown field passed strict validation");
        assert!(e.to_string().contains("unknown field \"spec.predictor.minReplica\""), "{e}");
        // Server-side apply refuses it whatever the validation directive.
        let e = apply(&client, &is, true).await.expect_err("server-side apply took an unknown field");
        assert!(e.to_string().contains(".spec.predictor.minReplica: field not declared in schema"), "{e}");

        let ex = example_in(&ns, "deployment", |_| {});
        let mut dep = render(&ex, &ex.v2()).remove(0);
        let limits = &mut dep["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"];
        limits.as_object_mut().unwrap().remove("nvidia.com/gpu");
        let e = create_dry_run(&client, &dep).await.expect_err("a GPU request without its limit was accepted");
        assert!(e.to_string().contains("Limit must be set for non overcommitable resources"), "{e}");
        let e = apply(&client, &dep, true).await.expect_err("server-side apply took a GPU request without its limit");
        assert!(e.to_string().contains("Limit must be set for non overcommitable resources"), "{e}");
    });
}

// ---- preflight against the real scheduler ----------------------------------------------------

/// A fake node of one case: kwok plays its kubelet.
struct NodeSpec {
    name: &'static str,
    /// Allocatable (and capacity).
    cpu: &'static str,
    memory: &'static str,
    gpus: u32,
    /// Has `nvidia.com/gpu.present=true` (the bundle's nodeSelector).
    gpu_label: bool,
    /// Taints besides the GPU taint the bundle tolerates.
    taints: Vec<Value>,
    cordoned: bool,
}

fn gpu_node(name: &'static str) -> NodeSpec {
    NodeSpec { name, cpu: "16", memory: "64Gi", gpus: 1, gpu_label: true, taints: vec![], cordoned: false }
}

/// What the real scheduler does with the surge pod.
#[derive(Debug, PartialEq)]
enum Answer {
    /// Bound to the case's node of this name.
    Bound(String),
    /// Left Pending: the first sentence of its message.
    Pending(String),
    /// Never created: the ReplicaSet controller's create was refused by
    /// quota admission (its ReplicaFailure message).
    Refused(String),
}

/// What preflight says where the scheduler leaves the pod Pending.
const PENDING_CODE: &str = "BG201";
/// … and where no node passes the filters at all.
const NO_NODE_CODE: &str = "BG208";

/// One cluster layout. Node `a` exists first (v1, when it runs, is
/// scheduled there); the others are added once v1 runs.
struct Case {
    name: &'static str,
    nodes: Vec<NodeSpec>,
    v1_running: bool,
    /// The bundle mounts a ReadOnlyMany claim bound to a PV pinned (node
    /// affinity) to the node of this name, and reads the model from it, so
    /// the Deployment also runs the file verifier as a native sidecar.
    volume_on: Option<&'static str>,
    /// A ResourceQuota's `spec.hard` in the case's namespace.
    quota: Option<Value>,
    /// The scheduler's answer, as it words it (none for a generated case:
    /// there, only the agreement is checked). The cluster holds the case's
    /// nodes and `system-0` (no GPU label), nothing else.
    expect: Option<Answer>,
    /// Preflight's finding when the pod stays Pending.
    code: &'static str,
}

fn bound(node: &str) -> Answer {
    Answer::Bound(node.into())
}

fn pending(summary: &str) -> Answer {
    Answer::Pending(summary.into())
}

fn refused(summary: &str) -> Answer {
    Answer::Refused(summary.into())
}

/// What preflight says where quota admission refuses the pod.
const QUOTA_CODE: &str = "BG202";
/// The words of the API server's quota refusal, as far as they are the
/// same for every case (the pod's generated name comes before them).
const GPU_QUOTA: &str = "exceeded quota: limits, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=1, limited: requests.nvidia.com/gpu=1";

const NO_SELECTOR: &str = "node(s) didn't match Pod's node affinity/selector";

fn cases() -> Vec<Case> {
    let taint = |k: &str, v: &str, e: &str| json!({"key": k, "value": v, "effect": e});
    let case = |name, nodes, v1_running, expect| Case {
        name,
        nodes,
        v1_running,
        volume_on: None,
        quota: None,
        expect: Some(expect),
        code: PENDING_CODE,
    };
    vec![
        // The shipped single-gpu story: v1 holds the only GPU.
        case(
            "gpu-held",
            vec![gpu_node("a")],
            true,
            pending(&format!("0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}")),
        ),
        case("gpu-free", vec![gpu_node("a"), gpu_node("b")], true, bound("b")),
        case(
            "taint",
            vec![gpu_node("a"), NodeSpec { taints: vec![taint("dedicated", "training", "NoSchedule")], ..gpu_node("b") }],
            true,
            pending(&format!(
                "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}, 1 node(s) had untolerated taint(s)"
            )),
        ),
        case(
            "noexecute",
            vec![gpu_node("a"), NodeSpec { taints: vec![taint("dedicated", "training", "NoExecute")], ..gpu_node("b") }],
            true,
            pending(&format!(
                "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}, 1 node(s) had untolerated taint(s)"
            )),
        ),
        case(
            "prefer",
            vec![gpu_node("a"), NodeSpec { taints: vec![taint("dedicated", "training", "PreferNoSchedule")], ..gpu_node("b") }],
            true,
            bound("b"),
        ),
        case(
            "label",
            vec![gpu_node("a"), NodeSpec { gpu_label: false, ..gpu_node("b") }],
            true,
            pending(&format!("0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 {NO_SELECTOR}")),
        ),
        // Both filters fail on b: the scheduler counts it under the taint
        // (TaintToleration runs before NodeAffinity), and so does preflight.
        case(
            "taint-and-label",
            vec![
                gpu_node("a"),
                NodeSpec {
                    gpu_label: false,
                    taints: vec![taint("dedicated", "training", "NoSchedule")],
                    ..gpu_node("b")
                },
            ],
            true,
            pending(&format!(
                "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}, 1 node(s) had untolerated taint(s)"
            )),
        ),
        case(
            "cordon",
            vec![gpu_node("a"), NodeSpec { cordoned: true, ..gpu_node("b") }],
            true,
            pending(&format!(
                "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}, 1 node(s) were unschedulable"
            )),
        ),
        // The server asks 2 cpu + 8Gi: exactly that fits, a millicore less does not.
        case("exact", vec![gpu_node("a"), NodeSpec { cpu: "2", memory: "8Gi", ..gpu_node("b") }], true, bound("b")),
        case(
            "cpu-short",
            vec![gpu_node("a"), NodeSpec { cpu: "1999m", memory: "8Gi", ..gpu_node("b") }],
            true,
            pending(&format!(
                "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient nvidia.com/gpu, 1 {NO_SELECTOR}"
            )),
        ),
        // With the verifier sidecar (100m + 64Mi, running beside the server
        // for the pod's life) the pod asks 2100m + 8256Mi.
        Case {
            volume_on: Some("a"),
            ..case("sidecar-exact", vec![NodeSpec { cpu: "2100m", memory: "8256Mi", ..gpu_node("a") }], false, bound("a"))
        },
        Case {
            volume_on: Some("a"),
            ..case(
                "sidecar-short",
                vec![NodeSpec { cpu: "2100m", memory: "8255Mi", ..gpu_node("a") }],
                false,
                pending(&format!("0/2 nodes are available: 1 Insufficient memory, 1 {NO_SELECTOR}")),
            )
        },
        // The claim's volume can only attach to a node that does not exist.
        Case {
            volume_on: Some("elsewhere"),
            code: NO_NODE_CODE,
            ..case(
                "pv-affinity",
                vec![gpu_node("a")],
                false,
                pending(&format!(
                    "0/2 nodes are available: 1 node(s) didn't match PersistentVolume's node affinity, 1 {NO_SELECTOR}"
                )),
            )
        },
        case("first", vec![gpu_node("a")], false, bound("a")),
        // Quota admission refuses the surge pod before any scheduler sees
        // it: the ReplicaSet controller's create fails, nothing is Pending.
        Case {
            quota: Some(json!({"requests.nvidia.com/gpu": "1"})),
            code: QUOTA_CODE,
            ..case("quota-gpu", vec![gpu_node("a"), gpu_node("b")], true, refused(GPU_QUOTA))
        },
        Case {
            quota: Some(json!({"requests.nvidia.com/gpu": "2", "requests.cpu": "4"})),
            ..case("quota-room", vec![gpu_node("a"), gpu_node("b")], true, bound("b"))
        },
    ]
}

const CASE_LABEL: &str = "bundlegate.dev/test-case";

/// What `preflight --live` is documented to need (ServiceAccount, roles).
const PREFLIGHT_RBAC: &str = "deploy/preflight-live-rbac.yaml";
/// What the in-cluster drift audit (`audit --serving`) is granted.
const AUDIT_RBAC: &str = "deploy/drift-audit-cronjob.yaml";

/// A node of the case: kwok's annotation, the case's label (the bundle's
/// nodeSelector names it), the GPU taint the bundle tolerates.
fn node_object(ns: &str, n: &NodeSpec) -> Value {
    let mut labels = json!({CASE_LABEL: ns, "kubernetes.io/hostname": format!("{ns}-{}", n.name), "type": "kwok"});
    if n.gpu_label {
        labels["nvidia.com/gpu.present"] = json!("true");
    }
    let mut taints = vec![json!({"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"})];
    taints.extend(n.taints.iter().cloned());
    let res = json!({"cpu": n.cpu, "memory": n.memory, "pods": "110", "nvidia.com/gpu": n.gpus.to_string()});
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": format!("{ns}-{}", n.name),
            "labels": labels,
            "annotations": {cluster::KWOK_ANNOTATION.0: cluster::KWOK_ANNOTATION.1},
        },
        "spec": {"taints": taints, "unschedulable": n.cordoned},
        "status": {"allocatable": res, "capacity": res},
    })
}

/// Create nodes and wait until each is Ready and the node lifecycle
/// controller has lifted the not-ready taint admission put on it.
async fn make_nodes(client: &::kube::Client, ns: &str, nodes: &[&NodeSpec]) {
    use k8s_openapi::api::core::v1::Node;
    let api = Api::<Node>::all(client.clone());
    for n in nodes {
        let node: Node = serde_json::from_value(node_object(ns, n)).unwrap();
        api.create(&Default::default(), &node).await.unwrap();
    }
    for n in nodes {
        let name = format!("{ns}-{}", n.name);
        poll(&format!("node {name} Ready without the not-ready taint"), Duration::from_secs(60), || async {
            let node = api.get(&name).await.ok()?;
            let v = serde_json::to_value(&node).unwrap();
            let ready =
                v["status"]["conditions"].as_array()?.iter().any(|c| c["type"] == "Ready" && c["status"] == "True");
            let tainted = v["spec"]["taints"]
                .as_array()
                .is_some_and(|ts| ts.iter().any(|t| t["key"] == "node.kubernetes.io/not-ready"));
            (ready && !tainted).then_some(())
        })
        .await;
    }
}

/// A ReadOnlyMany claim `model` in `ns`, bound to a PV whose node affinity
/// names the node `{ns}-{on}`; once the PV controller reports it Bound.
async fn make_volume(client: &::kube::Client, ns: &str, on: &str) {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    let pv_name = format!("{ns}-model");
    let pv: PersistentVolume = serde_json::from_value(json!({
        "metadata": {"name": pv_name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "",
            "hostPath": {"path": "/models"},
            "claimRef": {"namespace": ns, "name": "model"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [format!("{ns}-{on}")]}
            ]}]}},
        },
    }))
    .unwrap();
    Api::<PersistentVolume>::all(client.clone()).create(&Default::default(), &pv).await.unwrap();
    let pvc: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "model", "namespace": ns},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "storageClassName": "",
            "volumeName": pv_name,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }))
    .unwrap();
    let api = Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns);
    api.create(&Default::default(), &pvc).await.unwrap();
    poll(&format!("claim model in {ns} Bound"), Duration::from_secs(60), || async {
        let c = api.get("model").await.ok()?;
        (c.status?.phase.as_deref() == Some("Bound")).then_some(())
    })
    .await;
}

/// The pods of `version` in `ns`, as JSON.
async fn pods_of(client: &::kube::Client, ns: &str, version: &str) -> Vec<Value> {
    use k8s_openapi::api::core::v1::Pod;
    let lp = ::kube::api::ListParams::default().labels(&format!("bundlegate.dev/release-version={version}"));
    Api::<Pod>::namespaced(client.clone(), ns)
        .list(&lp)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| serde_json::to_value(p).unwrap())
        .collect()
}

fn condition<'a>(pod: &'a Value, kind: &str) -> Option<&'a Value> {
    pod["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)
}

/// What the scheduler did with the pod of `version`: the node it bound it
/// to (without the case's prefix) or the first sentence of its message.
async fn scheduled(client: &::kube::Client, ns: &str, version: &str) -> Answer {
    poll(&format!("the scheduler's answer for the {version} pod in {ns}"), Duration::from_secs(60), || async {
        let pods = pods_of(client, ns, version).await;
        let pod = pods.first()?;
        let c = condition(pod, "PodScheduled")?;
        match (c["status"].as_str()?, c["reason"].as_str()) {
            ("True", _) => {
                let node = pod["spec"]["nodeName"].as_str()?;
                Some(Answer::Bound(node.strip_prefix(&format!("{ns}-")).unwrap_or(node).to_string()))
            }
            ("False", Some("Unschedulable")) => {
                let m = c["message"].as_str().unwrap_or("");
                Some(Answer::Pending(m.split(". ").next().unwrap_or(m).trim_end_matches('.').to_string()))
            }
            _ => None,
        }
    })
    .await
}

/// Apply every rendered manifest of `bundle` for real.
async fn roll_out(client: &::kube::Client, ex: &Example, bundle: &Path) {
    roll_out_as(client, ex, bundle, None).await;
}

/// Apply every rendered manifest of `bundle`, the Deployment's pods given
/// `fate` (kwok-fates.yaml: its label and annotations on the pod template).
async fn roll_out_as(client: &::kube::Client, ex: &Example, bundle: &Path, fate: Option<&Fate>) {
    for mut d in render(ex, bundle) {
        if let (Some(f), "Deployment") = (fate, d["kind"].as_str().unwrap_or("")) {
            let meta = &mut d["spec"]["template"]["metadata"];
            meta["labels"]["bundlegate.test/fate"] = json!(f.name);
            for (k, v) in &f.annotations {
                meta["annotations"][*k] = json!(v);
            }
        }
        apply(client, &d, false).await.unwrap_or_else(|e| panic!("applying the rendered {}: {e}", d["kind"]));
    }
}

/// A pod fate kwok plays (tests/fixtures/cluster/kwok-fates.yaml).
#[derive(Debug, Clone)]
struct Fate {
    name: &'static str,
    annotations: Vec<(&'static str, String)>,
}

impl Fate {
    fn new(name: &'static str, annotations: &[(&'static str, &str)]) -> Fate {
        Fate { name, annotations: annotations.iter().map(|(k, v)| (*k, v.to_string())).collect() }
    }
}

/// Remove what a case made cluster-wide (its nodes, its PV) and its
/// namespace, so the next case's scheduler message counts its nodes alone.
async fn clean_up(client: &::kube::Client, ns: &str, case: &Case) {
    use k8s_openapi::api::core::v1::PersistentVolume;
    let _ = Api::<PersistentVolume>::all(client.clone()).delete(&format!("{ns}-model"), &Default::default()).await;
    drop_shipped_identity(client, PREFLIGHT_RBAC, ns).await;
    clean_up_nodes(client, ns, &case.nodes).await;
}

/// Delete the nodes and the namespace, and wait until the nodes are gone.
async fn clean_up_nodes(client: &::kube::Client, ns: &str, nodes: &[NodeSpec]) {
    use k8s_openapi::api::core::v1::{Namespace, Node};
    let dp = Default::default();
    for n in nodes {
        let _ = Api::<Node>::all(client.clone()).delete(&format!("{ns}-{}", n.name), &dp).await;
    }
    let _ = Api::<Namespace>::all(client.clone()).delete(ns, &dp).await;
    let api = Api::<Node>::all(client.clone());
    poll(&format!("{ns}: nodes deleted"), Duration::from_secs(30), || async {
        let left = api.list(&::kube::api::ListParams::default().labels(&format!("{CASE_LABEL}={ns}"))).await.ok()?;
        left.items.is_empty().then_some(())
    })
    .await;
}

/// A ResourceQuota `limits` with `hard` in `ns`, once the quota controller
/// has written its status (admission refuses every pod while it has none).
async fn make_quota(client: &::kube::Client, ns: &str, hard: &Value) {
    use k8s_openapi::api::core::v1::ResourceQuota;
    let q: ResourceQuota =
        serde_json::from_value(json!({"metadata": {"name": "limits", "namespace": ns}, "spec": {"hard": hard}}))
            .unwrap();
    let api = Api::<ResourceQuota>::namespaced(client.clone(), ns);
    api.create(&Default::default(), &q).await.unwrap();
    poll(&format!("quota limits in {ns} has a status"), Duration::from_secs(60), || async {
        let q = api.get("limits").await.ok()?;
        q.status?.hard.filter(|h| !h.is_empty()).map(|_| ())
    })
    .await;
}

/// What became of the pod of `version`: bound, Pending (the scheduler's
/// words), or never created (the ReplicaSet's ReplicaFailure message, from
/// "exceeded quota" on).
async fn outcome(client: &::kube::Client, ns: &str, version: &str) -> Answer {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    let lp = ::kube::api::ListParams::default().labels(&format!("bundlegate.dev/release-version={version}"));
    let sets = Api::<ReplicaSet>::namespaced(client.clone(), ns);
    poll(&format!("what became of the {version} pod in {ns}"), Duration::from_secs(60), || async {
        if !pods_of(client, ns, version).await.is_empty() {
            return Some(scheduled(client, ns, version).await);
        }
        let rs = sets.list(&lp).await.ok()?;
        let failure = rs
            .items
            .iter()
            .flat_map(|r| r.status.iter().flat_map(|s| s.conditions.iter().flatten()))
            .find(|c| c.type_ == "ReplicaFailure" && c.status == "True")?;
        let m = failure.message.clone().unwrap_or_default();
        Some(Answer::Refused(m.find("exceeded quota").map_or(m.clone(), |i| m[i..].to_string())))
    })
    .await
}

/// The reasons of a "0/N nodes are available: …" line, by kind, counted:
/// the scheduler's words ("node(s) had untolerated taint(s)") and
/// preflight's (which names the taint) map to the same kind.
fn reason_kinds(line: &str) -> (String, BTreeMap<String, usize>) {
    let (head, reasons) = line.split_once(": ").unwrap_or((line, ""));
    let mut kinds = BTreeMap::new();
    for r in reasons.split(", ").filter(|r| !r.is_empty()) {
        let (n, text) = r.split_once(' ').unwrap_or(("0", r));
        let kind = if text.starts_with("Insufficient ") {
            text.to_string()
        } else if text.contains("untolerated taint") {
            "taint".into()
        } else if text.contains("node affinity/selector") || text.contains("node selector") {
            "selector".into()
        } else if text.contains("unschedulable") {
            "cordoned".into()
        } else if text.contains("PersistentVolume's node affinity") || text.contains("(PV node affinity)") {
            "volume node affinity".into()
        } else {
            text.to_string()
        };
        *kinds.entry(kind).or_insert(0) += n.parse::<usize>().unwrap_or(0);
    }
    (head.to_string(), kinds)
}

/// One case end to end: node `a`, v1 running on it (scheduled and made Ready
/// by the real controllers and kwok), the other nodes, `preflight --live` on
/// v2, then v2 applied and what the API server and the scheduler did with
/// the surge pod. Returns the line the two answers make, or why they
/// disagree.
fn run_case(c: &Cluster, case: &Case) -> Result<String, String> {
    block_on(async {
        let client = c.client().await;
        let ns = cluster::namespace(&client, case.name).await;
        let (first, rest): (Vec<&NodeSpec>, Vec<&NodeSpec>) = case.nodes.iter().partition(|n| n.name == "a");
        make_nodes(&client, &ns, &first).await;
        if let Some(on) = case.volume_on {
            make_volume(&client, &ns, on).await;
        }
        if let Some(hard) = &case.quota {
            make_quota(&client, &ns, hard).await;
        }
        let ex = example_in(&ns, "deployment", |v| {
            at(v, "spec.serving.nodeSelector").as_mapping_mut().unwrap().insert(CASE_LABEL.into(), ns.clone().into());
            if case.volume_on.is_some() {
                let s = at(v, "spec.serving").as_mapping_mut().unwrap();
                s.insert("modelDir".into(), "/models/llm-scratch".into());
                s.insert(
                    "volumes".into(),
                    yaml("- {name: model, claimName: model, accessMode: ReadOnlyMany, mountPath: /models, readOnly: true}"),
                );
            }
        });
        if case.v1_running {
            roll_out(&client, &ex, &ex.v1()).await;
            assert_eq!(scheduled(&client, &ns, "v1").await, bound("a"), "{}: v1", case.name);
            poll(&format!("{}: v1 Ready", case.name), Duration::from_secs(60), || async {
                let pods = pods_of(&client, &ns, "v1").await;
                pods.first().and_then(|p| condition(p, "Ready")).filter(|c| c["status"] == "True").map(|_| ())
            })
            .await;
            if case.quota.is_some() {
                // Preflight reads the quota's status.used: wait until the
                // quota controller counts v1's pod.
                use k8s_openapi::api::core::v1::ResourceQuota;
                let api = Api::<ResourceQuota>::namespaced(client.clone(), &ns);
                poll(&format!("{}: quota counts v1", case.name), Duration::from_secs(60), || async {
                    let used = api.get("limits").await.ok()?.status?.used?;
                    used.values().any(|q| q.0 != "0").then_some(())
                })
                .await;
            }
        }
        make_nodes(&client, &ns, &rest).await;

        // As the identity deploy/preflight-live-rbac.yaml grants, nothing more.
        let env = c.env_as(&shipped_identity(c, &client, PREFLIGHT_RBAC, &ns).await);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let out = run_in(ex.path(), &["preflight", "--format", "json", ex.v2().to_str().unwrap(), "--live"], &env);
        let step = out.json()["steps"][0].clone();
        let verdict = step["verdict"].as_str().unwrap_or("?").to_string();
        let codes = out.codes();
        // Preflight words its evidence the scheduler's way: "0/N nodes are available: …".
        let preflight_line = step["diagnostics"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|d| d["evidence"].as_array().cloned().unwrap_or_default())
            .filter_map(|e| e.as_str().map(String::from))
            .find(|e| e.contains(" nodes are available: "));

        roll_out(&client, &ex, &ex.v2()).await;
        let answer = outcome(&client, &ns, "v2").await;
        clean_up(&client, &ns, case).await;

        let line = format!("{}: preflight {verdict} {codes:?}; cluster {answer:?}", case.name);
        judge(case, &answer, &verdict, &codes, preflight_line.as_deref())
            .map_err(|why| format!("{why}\n{line}\npreflight said:\n{}", out.stdout))?;
        Ok(match preflight_line {
            Some(p) if matches!(answer, Answer::Pending(_)) => format!("{line}; preflight's evidence {p:?}"),
            _ => line,
        })
    })
}

/// Whether preflight's answer is the cluster's: never PASS where the pod is
/// left Pending or refused, never FAIL where it is placed; the finding that
/// names the cause (quota, scheduling); and where both say Pending, the same
/// count of available nodes of the same total and the same reasons, each
/// node counted under the same filter.
fn judge(case: &Case, answer: &Answer, verdict: &str, codes: &[String], line: Option<&str>) -> Result<(), String> {
    let has = |c: &str| codes.iter().any(|x| x == c);
    match (answer, verdict) {
        (Answer::Bound(_), "pass") => {}
        (Answer::Refused(_), "fail") if has(QUOTA_CODE) => {}
        (Answer::Pending(_), "fail") if has(PENDING_CODE) || has(NO_NODE_CODE) => {}
        _ => return Err("DISAGREE".into()),
    }
    if let Some(expect) = &case.expect {
        let same = match (answer, expect) {
            (Answer::Refused(got), Answer::Refused(want)) => got.starts_with(want.as_str()),
            _ => answer == expect,
        };
        if !same {
            return Err(format!("expected the cluster to answer {expect:?}"));
        }
        let want: Vec<&str> = if verdict == "fail" { vec![case.code] } else { vec![] };
        if codes != want {
            return Err(format!("expected preflight's findings {want:?}"));
        }
    }
    if let Answer::Pending(m) = answer {
        let Some(p) = line else { return Err("preflight gave no \"nodes are available\" line".into()) };
        if reason_kinds(m) != reason_kinds(p) {
            return Err(format!(
                "the reasons differ: the scheduler {:?}, preflight {:?}",
                reason_kinds(m),
                reason_kinds(p)
            ));
        }
    }
    Ok(())
}

fn panic_text(e: &(dyn std::any::Any + Send)) -> String {
    e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default()
}

/// What every cluster runs besides the workloads: a system node and a
/// kube-system pod on it (coredns' requests). Without any pod at all,
/// `preflight --live` refuses to answer ("no Pod objects, yet every cluster
/// runs system pods"), the guard it keeps for snapshots taken without `-A`;
/// the cases here ask about clusters as they are. Idempotent: every test of
/// the process shares the cluster.
async fn system_pods(client: &::kube::Client) {
    use k8s_openapi::api::core::v1::{Node, Pod};
    let node: Node = serde_json::from_value(json!({
        "metadata": {
            "name": "system-0",
            "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "system-0"},
            "annotations": {cluster::KWOK_ANNOTATION.0: cluster::KWOK_ANNOTATION.1},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }))
    .unwrap();
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "coredns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
        "spec": {
            "nodeName": "system-0",
            "containers": [{"name": "coredns", "image": "registry.k8s.io/coredns/coredns:v1.12.0",
                "resources": {"requests": {"cpu": "100m", "memory": "70Mi"}, "limits": {"memory": "170Mi"}}}],
        },
    }))
    .unwrap();
    let exists = |r: Result<_, ::kube::Error>| match r {
        Ok(_) => {}
        Err(::kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("{e}"),
    };
    exists(Api::<Node>::all(client.clone()).create(&Default::default(), &node).await.map(|_| ()));
    exists(Api::<Pod>::namespaced(client.clone(), "kube-system").create(&Default::default(), &pod).await.map(|_| ()));
}

/// `preflight --live` against the real scheduler, case by case (one at a
/// time, each with its own namespace and nodes, removed after it): where
/// preflight passes, the scheduler binds the surge pod the rollout creates;
/// where it fails, the pod stays Pending, and the scheduler's own words say
/// why.
#[test]
fn preflight_agrees_with_the_real_scheduler() {
    let Some(c) = real() else { return };
    let _nodes = cluster::nodes_lock();
    block_on(async { system_pods(&c.client().await).await });
    let mut failed = Vec::new();
    let cases = cases();
    for case in &cases {
        if let Err(e) = run_timed(c, case) {
            failed.push(format!("{}: {e}", case.name));
        }
    }
    assert!(failed.is_empty(), "{} of {} cases:\n{}", failed.len(), cases.len(), failed.join("\n\n"));
}

/// A case run with its time and line printed; a panic is its failure.
fn run_timed(c: &Cluster, case: &Case) -> Result<String, String> {
    let t = std::time::Instant::now();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_case(c, case)))
        .unwrap_or_else(|e| Err(format!("panicked: {}", panic_text(&*e))));
    match &r {
        Ok(line) => eprintln!("{line} ({:.1}s)", t.elapsed().as_secs_f64()),
        Err(e) => eprintln!("{}: FAILED ({:.1}s): {e}", case.name, t.elapsed().as_secs_f64()),
    }
    r
}

/// A node of a generated layout.
#[derive(Debug, Clone)]
struct GenNode {
    gpus: u32,
    gpu_label: bool,
    taint: Option<&'static str>,
    cordoned: bool,
    cpu: &'static str,
    memory: &'static str,
}

/// A generated cluster layout: up to three nodes, v1 running or not, the
/// model's volume pinned to one of them (or to a node that does not exist),
/// a quota on GPUs or CPU.
#[derive(Debug, Clone)]
struct Layout {
    nodes: Vec<GenNode>,
    v1_running: bool,
    /// An index into `nodes`; `nodes.len()` is a node that does not exist.
    volume_on: Option<usize>,
    quota: Option<(&'static str, &'static str)>,
}

const NODE_NAMES: [&str; 3] = ["a", "b", "c"];

fn layouts() -> impl proptest::strategy::Strategy<Value = Layout> {
    use proptest::prelude::*;
    // The quantities sit on both sides of what the pod asks (2 cpu and
    // 8Gi; with the verifier sidecar 2100m and 8256Mi) and what v1 holds.
    let node = (
        0u32..=2,
        proptest::bool::weighted(0.8),
        proptest::option::weighted(0.3, proptest::sample::select(vec!["NoSchedule", "NoExecute", "PreferNoSchedule"])),
        proptest::bool::weighted(0.1),
        proptest::sample::select(vec!["1999m", "2", "2100m", "16"]),
        proptest::sample::select(vec!["8Gi", "8255Mi", "8256Mi", "64Gi"]),
    )
        .prop_map(|(gpus, gpu_label, taint, cordoned, cpu, memory)| GenNode {
            gpus,
            gpu_label,
            taint,
            cordoned,
            cpu,
            memory,
        });
    let quota = proptest::option::weighted(
        0.3,
        proptest::sample::select(vec![
            ("requests.nvidia.com/gpu", "1"),
            ("requests.nvidia.com/gpu", "2"),
            ("requests.cpu", "3"),
            ("requests.cpu", "5"),
        ]),
    );
    (proptest::collection::vec(node, 1..=3), any::<bool>(), proptest::option::weighted(0.3, 0usize..=3), quota)
        .prop_map(|(mut nodes, v1_running, volume_on, quota)| {
            let mut volume_on = volume_on.map(|i| i.min(nodes.len()));
            if v1_running {
                // v1 must run somewhere: node a is made to hold it, and
                // the volume it mounts reaches a.
                nodes[0] = GenNode {
                    gpus: nodes[0].gpus.max(1),
                    gpu_label: true,
                    taint: None,
                    cordoned: false,
                    cpu: "16",
                    memory: "64Gi",
                };
                volume_on = volume_on.map(|_| 0);
            }
            Layout { nodes, v1_running, volume_on, quota }
        })
}

impl Layout {
    fn case(&self) -> Case {
        let nodes = self
            .nodes
            .iter()
            .zip(NODE_NAMES)
            .map(|(n, name)| NodeSpec {
                name,
                cpu: n.cpu,
                memory: n.memory,
                gpus: n.gpus,
                gpu_label: n.gpu_label,
                taints: n
                    .taint
                    .map(|e| json!({"key": "dedicated", "value": "training", "effect": e}))
                    .into_iter()
                    .collect(),
                cordoned: n.cordoned,
            })
            .collect();
        Case {
            name: "gen",
            nodes,
            v1_running: self.v1_running,
            volume_on: self.volume_on.map(|i| NODE_NAMES.get(i).copied().unwrap_or("elsewhere")),
            quota: self.quota.map(|(k, v)| json!({k: v})),
            expect: None,
            code: PENDING_CODE,
        }
    }
}

/// The property over generated layouts (nodes with and without GPUs, room,
/// labels, taints of each effect, cordons; the model's volume pinned to a
/// node or to none that exists; GPU and CPU quotas; v1 running or not):
/// preflight never says PASS where the real scheduler leaves the surge pod
/// Pending or quota admission refuses it, never FAIL where it is placed,
/// and where both say Pending they count each node under the same reason.
/// `BUNDLEGATE_SCHED_PROP_CASES` layouts per run (default 24, about a second
/// each); the seed is printed, and `BUNDLEGATE_SCHED_PROP_SEED` replays it.
/// Run a property whose every case is work on the real cluster: `cases`
/// from `{PREFIX}_CASES` (else `default_cases`), the seed from
/// `{PREFIX}_SEED` (else the clock; printed, so a failure replays), no
/// failure file (the source tree stays clean), few shrink steps (each one
/// is real work). Panics with the seed and the shrunk case on failure.
fn real_property<S: proptest::strategy::Strategy>(
    prefix: &str,
    default_cases: u32,
    max_shrink_iters: u32,
    strategy: &S,
    test: impl Fn(S::Value) -> Result<(), String>,
) where
    S::Value: std::fmt::Debug,
{
    use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
    let var = |k: &str| std::env::var(format!("{prefix}_{k}")).ok().and_then(|v| v.parse::<u64>().ok());
    let cases = var("CASES").map_or(default_cases, |n| n.min(u64::from(u32::MAX)) as u32);
    let seed = var("SEED").unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("{cases} generated cases, {prefix}_SEED={seed}");
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, max_shrink_iters, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    let r = runner.run(strategy, |v| {
        let shown = format!("{v:?}");
        test(v).map_err(|e| TestCaseError::fail(format!("{shown}\n{e}")))
    });
    if let Err(e) = r {
        panic!("{prefix}_SEED={seed}: {e}");
    }
}

#[test]
fn preflight_agrees_with_the_real_scheduler_on_generated_layouts() {
    let Some(c) = real() else { return };
    let _nodes = cluster::nodes_lock();
    block_on(async { system_pods(&c.client().await).await });
    real_property("BUNDLEGATE_SCHED_PROP", 24, 16, &layouts(), |layout| run_timed(c, &layout.case()).map(|_| ()));
}

// ---- watch over a real rollout -----------------------------------------------------------------

/// The Application as Argo CD's controller writes it once a sync of
/// `revision` finished at `finished_at`: the shape of the watch fixture,
/// in namespace `argocd`, pointing at `ns`, through the real CRD.
fn application(name: &str, ns: &str, revision: &str, finished_at: &str) -> Value {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/watch/application.yaml"))
        .unwrap()
        .replace("REVISION", revision)
        .replace("namespace: ai-lab", &format!("namespace: {ns}"));
    let mut a: Value = serde_yaml_ng::from_str(&text).unwrap();
    let meta = a["metadata"].as_object_mut().unwrap();
    for server_set in ["uid", "resourceVersion", "generation", "creationTimestamp"] {
        meta.remove(server_set);
    }
    a["metadata"]["name"] = json!(name);
    let op = &mut a["status"]["operationState"];
    op["startedAt"] = json!(finished_at);
    op["finishedAt"] = json!(finished_at);
    let deployed = json!([{"group": "apps", "version": "v1", "kind": "Deployment", "namespace": ns, "name": "llm-scratch", "status": "Synced"}]);
    op["syncResult"]["resources"] = deployed.clone();
    a["status"]["resources"] = deployed;
    a["status"]["reconciledAt"] = json!(finished_at);
    a["status"]["health"]["lastTransitionTime"] = json!(finished_at);
    a
}

/// A kubeconfig that acts as a ServiceAccount bound to exactly the read
/// access docs/watch.md says the watcher needs, and nothing more: get/list
/// on Applications in `argocd`; on Deployments, ReplicaSets, Pods, Events,
/// EndpointSlices, InferenceServices and Knative Services, Configurations
/// and Revisions in the release's namespace. A request beyond it is a 403
/// from the real RBAC authorizer, which the watch reports as an ERROR.
async fn watcher_kubeconfig(c: &Cluster, client: &::kube::Client, ns: &str) -> PathBuf {
    let read = json!(["get", "list"]);
    let objects = [
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "bundlegate-watch", "namespace": ns}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "bundlegate-watch", "namespace": ns},
        "rules": [
            {"apiGroups": ["apps"], "resources": ["deployments", "replicasets"], "verbs": read},
            {"apiGroups": [""], "resources": ["pods", "events"], "verbs": read},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": read},
            {"apiGroups": ["serving.kserve.io"], "resources": ["inferenceservices"], "verbs": read},
            {"apiGroups": ["serving.knative.dev"], "resources": ["services", "configurations", "revisions"], "verbs": read}
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "bundlegate-watch", "namespace": ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "bundlegate-watch"},
               "subjects": [{"kind": "ServiceAccount", "name": "bundlegate-watch", "namespace": ns}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": format!("bundlegate-watch-{ns}"), "namespace": "argocd"},
               "rules": [{"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": read}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": format!("bundlegate-watch-{ns}"), "namespace": "argocd"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": format!("bundlegate-watch-{ns}")},
               "subjects": [{"kind": "ServiceAccount", "name": "bundlegate-watch", "namespace": ns}]}),
    ];
    for o in &objects {
        apply(client, o, false).await.unwrap();
    }
    token_kubeconfig(c, client, ns, "bundlegate-watch").await
}

/// A kubeconfig acting as the ServiceAccount `sa` in `ns`, from a token the
/// real API server issues (TokenRequest), its RBAC as granted.
async fn token_kubeconfig(c: &Cluster, client: &::kube::Client, ns: &str, sa: &str) -> PathBuf {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    let tr: TokenRequest = serde_json::from_value(json!({"spec": {"expirationSeconds": 3600}})).unwrap();
    let api = Api::<ServiceAccount>::namespaced(client.clone(), ns);
    let tr = api.create_subresource::<TokenRequest, TokenRequest>("token", sa, &Default::default(), &tr).await.unwrap();
    let token = tr.status.expect("a token").token;
    let admin = std::fs::read_to_string(&c.kubeconfig).unwrap();
    let text: String = admin
        .lines()
        .map(|l| if l.trim_start().starts_with("token:") { format!("    token: {token}") } else { l.to_string() })
        .collect::<Vec<_>>()
        .join("\n");
    let path = c.dir().join(format!("{sa}-{ns}.kubeconfig"));
    std::fs::write(&path, text + "\n").unwrap();
    path
}

/// The ServiceAccount and RBAC a file in deploy/ ships, applied for real
/// with every namespace it names (`bundlegate` for the ServiceAccount, the
/// model namespace for the Role) mapped to `ns` and its cluster-scoped
/// objects named after `ns`; a kubeconfig acting as that ServiceAccount.
/// What the file grants is then all the command may read: the real RBAC
/// authorizer refuses (403) anything else, and that identity is shown
/// refused Secrets before it is handed out.
async fn shipped_identity(c: &Cluster, client: &::kube::Client, file: &str, ns: &str) -> PathBuf {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    let mut sa = None;
    for mut d in documents(&text) {
        let kind = d["kind"].as_str().unwrap_or("").to_string();
        if !matches!(kind.as_str(), "ServiceAccount" | "Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding") {
            continue;
        }
        if kind == "ServiceAccount" {
            sa = d["metadata"]["name"].as_str().map(String::from);
        }
        if kind.starts_with("Cluster") {
            let name = format!("{}-{ns}", d["metadata"]["name"].as_str().unwrap());
            d["metadata"]["name"] = json!(name);
        } else {
            d["metadata"]["namespace"] = json!(ns);
        }
        if kind == "ClusterRoleBinding" {
            let role = format!("{}-{ns}", d["roleRef"]["name"].as_str().unwrap());
            d["roleRef"]["name"] = json!(role);
        }
        for s in d.get_mut("subjects").and_then(Value::as_array_mut).into_iter().flatten() {
            s["namespace"] = json!(ns);
        }
        apply(client, &d, false).await.unwrap_or_else(|e| panic!("{file}: applying its {kind}: {e}"));
    }
    let sa = sa.unwrap_or_else(|| panic!("{file} has no ServiceAccount"));
    let kubeconfig = token_kubeconfig(c, client, ns, &sa).await;
    assert_refused_secrets(&kubeconfig, ns).await;
    kubeconfig
}

/// Remove the cluster-scoped RBAC [`shipped_identity`] made for `ns`.
async fn drop_shipped_identity(client: &::kube::Client, file: &str, ns: &str) {
    let text = std::fs::read_to_string(repo().join(file)).unwrap();
    for d in documents(&text) {
        if !d["kind"].as_str().unwrap_or("").starts_with("Cluster") {
            continue;
        }
        let mut d = d.clone();
        d["metadata"]["name"] = json!(format!("{}-{ns}", d["metadata"]["name"].as_str().unwrap()));
        let ar = resource(client, &d).await;
        let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
        let _ = api.delete(d["metadata"]["name"].as_str().unwrap(), &Default::default()).await;
    }
}

/// Whether the identity of `kubeconfig` is refused Secrets in `ns`: the
/// least-privilege checks are not vacuous (an admin token would read all).
async fn assert_refused_secrets(kubeconfig: &Path, ns: &str) {
    let kc = ::kube::config::Kubeconfig::read_from(kubeconfig).unwrap();
    let cfg = ::kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
    let limited = ::kube::Client::try_from(cfg).unwrap();
    let secrets = Api::<k8s_openapi::api::core::v1::Secret>::namespaced(limited, ns);
    match secrets.list(&Default::default()).await {
        Err(::kube::Error::Api(e)) => assert_eq!(e.code, 403, "{e:?}"),
        other => panic!("{} must not read secrets: {other:?}", kubeconfig.display()),
    }
}

fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// What one watch over a real rollout left: the command's output, the
/// release digest, and where it ran (cleaned up by the caller).
struct Watched {
    out: Out,
    digest: String,
    ns: String,
    nodes: [NodeSpec; 2],
    ex: Example,
}

impl Watched {
    /// `audit --serving` over the repository, as the identity the shipped
    /// CronJob's RBAC grants (deploy/drift-audit-cronjob.yaml): does the
    /// cluster serve the bundle git says is current?
    async fn audit_serving(&self, c: &Cluster, client: &::kube::Client) -> Out {
        let env = c.env_as(&shipped_identity(c, client, AUDIT_RBAC, &self.ns).await);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args = ["audit", "llm-scratch", "--serving", "--cache", "c.json", "--format", "json"];
        let out = run_in(self.ex.path(), &args, &env);
        drop_shipped_identity(client, AUDIT_RBAC, &self.ns).await;
        out
    }

    /// Each step's verdict and summary, one line each.
    fn summary(&self) -> String {
        let v = self.out.json();
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        steps.iter().map(|s| format!("{} {}: {}", s["step"], s["verdict"], s["summary"])).collect::<Vec<_>>().join("\n")
    }

    fn step(&self, name: &str) -> Value {
        let v = self.out.json();
        v["steps"].as_array().and_then(|s| s.iter().find(|s| s["step"] == name).cloned()).unwrap_or_default()
    }

    /// Every diagnostic's message and evidence, for assertions on words.
    fn words(&self) -> String {
        let v = self.out.json();
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        steps
            .iter()
            .flat_map(|s| s["diagnostics"].as_array().cloned().unwrap_or_default())
            .map(|d| format!("{} {} {}", d["code"], d["message"], d["evidence"]))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `watch` over a rollout the real controllers perform: v1 running on node
/// a (the Deployment controller's ReplicaSet, the scheduler's placement,
/// kwok's Ready pod), node b added, the merge committed, the Application
/// written through the real Argo CD CRD as Argo CD's controller would
/// (behind at first, then synced at the merge), v2 applied with its pods
/// given `fate`, and `watch` run meanwhile as a ServiceAccount with exactly
/// the documented read access.
async fn watch_rollout(
    c: &Cluster,
    client: &::kube::Client,
    fate: Option<&Fate>,
    stable_for: &str,
    timeout: &str,
) -> Watched {
    use k8s_openapi::api::core::v1::Namespace;
    let ns = cluster::namespace(client, fate.map_or("watch", |f| f.name)).await;
    let nodes = [gpu_node("a"), gpu_node("b")];
    make_nodes(client, &ns, &[&nodes[0]]).await;
    let ex = example_in(&ns, "deployment", |v| {
        at(v, "spec.serving.nodeSelector").as_mapping_mut().unwrap().insert(CASE_LABEL.into(), ns.clone().into());
        // The canary gates read Prometheus, which this test does not run.
        at(v, "spec").as_mapping_mut().unwrap().remove("canary");
    });
    roll_out(client, &ex, &ex.v1()).await;
    assert_eq!(scheduled(client, &ns, "v1").await, bound("a"));
    make_nodes(client, &ns, &[&nodes[1]]).await;

    // The merge commit holds the release; the one before it does not.
    let git = |args: &[&str]| crate::watch::git(ex.path(), args);
    std::fs::write(ex.path().join("README.md"), "models\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "the repository before the release"]);
    let prev = git(&["rev-parse", "HEAD"]);
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "release llm-scratch v2"]);
    let sha = git(&["rev-parse", "HEAD"]);
    let bundle = "llm-scratch/v2/release.yaml";
    let digest = ex.run(&["digest", bundle, "--format", "json"]).json()["steps"][0]["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string();

    // Argo CD is still on the commit before.
    let argocd: Namespace = serde_json::from_value(json!({"metadata": {"name": "argocd"}})).unwrap();
    let _ = Api::<Namespace>::all(client.clone()).create(&Default::default(), &argocd).await;
    let app = format!("llm-scratch-{ns}");
    apply(client, &application(&app, &ns, &prev, "2026-01-01T09:00:00Z"), false).await.unwrap();

    let identity = json!({
        "serving_digest": "sha256:20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586",
        "release_digest": digest,
        "in_registry": true,
    });
    let model = crate::watch::ModelService::start(identity);
    let url = model.url();
    let watcher = watcher_kubeconfig(c, client, &ns).await;
    let mut cmd = std::process::Command::new(bin());
    cmd.current_dir(ex.path())
        .args(["watch", bundle, "--app", &app, "--app-namespace", "argocd", "--revision", &sha])
        .args(["--timeout", timeout, "--stable-for", stable_for, "--service-url", &url, "--probe-interval", "100ms"])
        .args(["--format", "json"])
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .env("BUNDLEGATE_WATCH_POLL", "200ms")
        .env("GITHUB_SHA", "")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    for (k, v) in c.env_as(&watcher) {
        cmd.env(k, v);
    }
    let watch = cmd.spawn().unwrap();

    // The sync: the rendered v2 applied, then the Application marked
    // synced at the merge, as Argo CD does.
    roll_out_as(client, &ex, &ex.v2(), fate).await;
    apply(client, &application(&app, &ns, &sha, &now_rfc3339()), false).await.unwrap();

    let o = tokio::task::spawn_blocking(move || watch.wait_with_output().unwrap()).await.unwrap();
    drop(model);
    let out = Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    };
    Watched { out, digest, ns, nodes, ex }
}

/// `watch` passes a rollout the real controllers perform, naming the pod
/// the ReplicaSet controller made and routed to by the EndpointSlice
/// controller; its identity reads what the docs name and is refused the
/// rest (403 from the real RBAC authorizer).
#[test]
fn watch_passes_a_real_rollout_by_the_deployment_controller() {
    use k8s_openapi::api::apps::v1::ReplicaSet;
    let Some(c) = real() else { return };
    let _nodes = cluster::nodes_lock();
    block_on(async {
        let client = c.client().await;
        let w = watch_rollout(c, &client, None, "2s", "90s").await;
        let ns = w.ns.clone();
        {
            // Not vacuous: the watcher's identity reads what the docs name
            // and is refused anything else.
            let watcher = c.dir().join(format!("bundlegate-watch-{ns}.kubeconfig"));
            let kc = ::kube::config::Kubeconfig::read_from(&watcher).unwrap();
            let cfg = ::kube::Config::from_custom_kubeconfig(kc, &Default::default()).await.unwrap();
            let limited = ::kube::Client::try_from(cfg).unwrap();
            let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(limited.clone(), &ns);
            assert!(pods.list(&Default::default()).await.is_ok(), "the watcher lists pods");
            assert_refused_secrets(&watcher, &ns).await;
        }
        // What the controllers made: the new ReplicaSet and its one pod.
        let rs = Api::<ReplicaSet>::namespaced(client.clone(), &ns).list(&Default::default()).await.unwrap();
        let new_rs = rs
            .items
            .iter()
            .find(|r| {
                r.spec
                    .as_ref()
                    .and_then(|s| s.template.as_ref())
                    .and_then(|t| t.metadata.as_ref())
                    .and_then(|m| m.annotations.as_ref())
                    .and_then(|a| a.get("bundlegate.dev/release-digest"))
                    == Some(&w.digest)
            })
            .expect("a ReplicaSet of the release");
        let pods = pods_of(&client, &ns, "v2").await;
        let pod_names: Vec<&str> = pods.iter().map(|p| p["metadata"]["name"].as_str().unwrap()).collect();
        let rs_name = new_rs.metadata.name.clone().unwrap();
        assert!(pod_names.iter().all(|p| p.starts_with(&format!("{rs_name}-"))), "{pod_names:?} of {rs_name}");
        // The Service routes to it: the EndpointSlice controller's answer.
        let slices = Api::<k8s_openapi::api::discovery::v1::EndpointSlice>::namespaced(client.clone(), &ns)
            .list(&Default::default())
            .await
            .unwrap();
        let routed: Vec<String> = slices
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter())
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .filter_map(|e| e.target_ref.as_ref().and_then(|t| t.name.clone()))
            .collect();
        assert_eq!(routed, pod_names, "the Service's ready endpoints");
        let summary = w.summary();
        // The drift audit agrees: the cluster serves the current bundle.
        let audit = w.audit_serving(c, &client).await;
        clean_up_nodes(&client, &ns, &w.nodes).await;
        let serving: Vec<Value> =
            audit.json()["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "serving").cloned().collect();
        assert_eq!(audit.code, 0, "audit --serving:\n{}\n{}", audit.stdout, audit.stderr);
        assert_eq!(serving.len(), 1, "{}", audit.stdout);
        assert_eq!(serving[0]["verdict"], "pass", "{}", audit.stdout);
        assert_eq!(w.out.code, 0, "watch did not pass a real rollout:\n{summary}\n{}\n{}", w.out.stdout, w.out.stderr);
        assert_eq!(w.step("argo")["verdict"], "pass", "{summary}");
        let rollout = w.step("rollout");
        assert_eq!(rollout["verdict"], "pass", "{summary}");
        let groups = rollout["data"]["groups"].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{groups:?}");
        assert_eq!(groups[0]["releaseDigest"], w.digest.as_str());
        assert_eq!(groups[0]["pods"], json!(pod_names), "the pod the ReplicaSet controller made");
        eprintln!("{summary}");
    });
}

/// What a watch over a real rollout whose new pods meet `fate` must say:
/// the exit code, the rollout step's verdict, words its findings hold.
struct Expect<'a> {
    code: i32,
    verdict: &'a str,
    words: &'a [&'a str],
}

/// `watch` over a real rollout whose new pods meet `fate`, then `audit
/// --serving`; whether they said what `expect` says. A pod that never
/// becomes Ready is waited for until the timeout (a crash loop may still
/// recover; only the Deployment's own deadline ends the wait early), so
/// those cases run with a short one.
fn fate_outcome(
    c: &Cluster,
    fate: &Fate,
    (stable_for, timeout): (&str, &str),
    expect: &Expect,
) -> Result<String, String> {
    block_on(async {
        let client = c.client().await;
        let t = std::time::Instant::now();
        let w = watch_rollout(c, &client, Some(fate), stable_for, timeout).await;
        let summary = w.summary();
        let found = w.words();
        let audit = w.audit_serving(c, &client).await;
        clean_up_nodes(&client, &w.ns, &w.nodes).await;
        let line = format!("{fate:?} in {:.1}s:\n{summary}\n{found}", t.elapsed().as_secs_f64());
        eprintln!("{line}");
        // The drift audit asks what is served now: where the new release's
        // pods never serve it fails; where they serve between evictions it
        // passes (that instability is the watch's finding, not drift).
        let audit_code = if fate.name == "crashloop" { 1 } else { 0 };
        if audit.code != audit_code {
            return Err(format!("audit --serving exit {}:\n{}\n{}\n{line}", audit.code, audit.stdout, audit.stderr));
        }
        if w.out.code != expect.code || w.step("rollout")["verdict"] != expect.verdict {
            return Err(format!(
                "watch exit {} (want {} {}):\n{line}\n{}",
                w.out.code, expect.code, expect.verdict, w.out.stderr
            ));
        }
        if let Some(word) = expect.words.iter().find(|w| !found.contains(*w)) {
            return Err(format!("no {word:?} in the findings:\n{line}"));
        }
        Ok(line)
    })
}

fn watch_fate(fate: Fate, windows: (&str, &str), expect: Expect) {
    let Some(c) = real() else { return };
    let _nodes = cluster::nodes_lock();
    if let Err(e) = fate_outcome(c, &fate, windows, &expect) {
        panic!("{e}");
    }
}

/// New pods that crash in a loop (kwok: CrashLoopBackOff, the restart
/// count growing): the rollout fails, saying so; the old pods serving the
/// old release do not make it pass.
#[test]
fn watch_fails_a_real_rollout_whose_pods_crash_loop() {
    let words = ["BG501", "CrashLoopBackOff", "last terminated Error (exit 1)"];
    watch_fate(Fate::new("crashloop", &[]), ("5s", "20s"), Expect { code: 1, verdict: "fail", words: &words });
}

/// New pods killed for memory over and over (OOMKilled, exit 137): the
/// rollout fails and names the kill.
#[test]
fn watch_fails_a_real_rollout_whose_pods_are_oom_killed() {
    let fate = Fate::new("crashloop", &[("bundlegate.test/reason", "OOMKilled"), ("bundlegate.test/exit-code", "137")]);
    let words = ["BG501", "CrashLoopBackOff", "last terminated OOMKilled (exit 137)"];
    watch_fate(fate, ("5s", "20s"), Expect { code: 1, verdict: "fail", words: &words });
}

/// New pods Ready, then evicted (Failed, reason Evicted) and replaced by
/// the ReplicaSet, over and over: each replacement starts with no
/// restarts, so only the pods' ends show it. The rollout must not pass.
#[test]
fn watch_fails_a_real_rollout_whose_pods_are_evicted_over_and_over() {
    let fate = Fate::new("evicted", &[("bundlegate.test/evict-ms", "1500")]);
    let words = ["BG508", "ended during the 6s stability window: Evicted"];
    watch_fate(fate, ("6s", "90s"), Expect { code: 1, verdict: "fail", words: &words });
}

/// A model that loads slowly (Running, not Ready for 8 s, then Ready): the
/// watch waits for it and passes; a slow start is no failure.
#[test]
fn watch_waits_for_a_slow_model_load_and_passes() {
    let fate = Fate::new("slow", &[("bundlegate.test/load-ms", "8000")]);
    watch_fate(fate, ("2s", "90s"), Expect { code: 0, verdict: "pass", words: &[] });
}

/// A generated pod fate and the watch's windows: a healthy rollout, a slow
/// load (1–6 s), a crash loop (Error or OOMKilled), or evictions (0.5–2 s
/// after Ready, always inside the 3–5 s stability window).
#[derive(Debug, Clone)]
struct GenFate {
    fate: Fate,
    stable_s: u64,
}

fn gen_fates() -> impl proptest::strategy::Strategy<Value = GenFate> {
    use proptest::prelude::*;
    let fate = prop_oneof![
        Just(Fate::new("healthy", &[])),
        (1000u64..=6000).prop_map(|ms| Fate::new("slow", &[("bundlegate.test/load-ms", &ms.to_string())])),
        proptest::sample::select(vec![("Error", "1"), ("OOMKilled", "137"), ("Error", "2")]).prop_map(|(r, x)| {
            Fate::new("crashloop", &[("bundlegate.test/reason", r), ("bundlegate.test/exit-code", x)])
        }),
        (500u64..=2000).prop_map(|ms| Fate::new("evicted", &[("bundlegate.test/evict-ms", &ms.to_string())])),
    ];
    (fate, 3u64..=5).prop_map(|(fate, stable_s)| GenFate { fate, stable_s })
}

/// The watch's judgment as a property over generated pod fates on real
/// rollouts: a healthy or slow-loading release passes; a crash loop fails
/// naming the last termination's reason and exit code; evictions inside
/// the window fail naming the eviction. Never PASS on a failing rollout,
/// never FAIL on a good one. `BUNDLEGATE_WATCH_PROP_CASES` per run
/// (default 4, each 10–30 s); the seed is printed, and
/// `BUNDLEGATE_WATCH_PROP_SEED` replays it.
#[test]
fn watch_judges_generated_pod_fates_on_real_rollouts() {
    let Some(c) = real() else { return };
    let _nodes = cluster::nodes_lock();
    real_property("BUNDLEGATE_WATCH_PROP", 4, 4, &gen_fates(), |g| {
        let ann =
            |k: &str| g.fate.annotations.iter().find(|(a, _)| *a == k).map(|(_, v)| v.clone()).unwrap_or_default();
        let stable = format!("{}s", g.stable_s);
        let (reason, exit) = (ann("bundlegate.test/reason"), ann("bundlegate.test/exit-code"));
        let crash_words = [format!("last terminated {reason} (exit {exit})")];
        let evict_words = [format!("ended during the {stable} stability window: Evicted")];
        let (code, verdict, words): (i32, &str, Vec<&str>) = match g.fate.name {
            "crashloop" => (1, "fail", vec!["BG501", "CrashLoopBackOff", crash_words[0].as_str()]),
            "evicted" => (1, "fail", vec!["BG508", evict_words[0].as_str()]),
            _ => (0, "pass", vec![]),
        };
        fate_outcome(c, &g.fate, (&stable, "25s"), &Expect { code, verdict, words: &words }).map(|_| ())
    });
}
