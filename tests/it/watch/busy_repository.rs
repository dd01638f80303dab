//! Post-merge truth against the real binary, in the situations a busy
//! repository and a lived-in cluster produce: ancestry instead of string
//! equality for Argo CD's revision (a later commit, the source hydrator, a
//! commit the checkout does not have), ownership and routing instead of
//! labels (a Job's pod, a hand-made copy, an old pod the Service still
//! routes to), time instead of one snapshot (a restart storm while Ready),
//! and the model sources KServe wires without a storage-initializer. Every
//! object the stand-in serves is validated against the reference schemas.

use serde_json::{json, Value};

use crate::support::kube::Frame;
use crate::support::schema::k8s_errors;
use crate::support::step;
use crate::watch::{
    application, done_deployment, findings, inference_service, objects, pod, replicaset, run_watch, synced, PodSpec,
    Workspace, NAME, NEW_POD, NS, OLD, OLD_POD, V1_URI, V2_URI,
};

/// An EndpointSlice of the release's Service (`<name>-predictor`, as KServe
/// names it) with these (pod, ready) endpoints.
fn endpoint_slice(service: &str, pods: &[(&str, bool)]) -> Value {
    let endpoints: Vec<Value> = pods
        .iter()
        .enumerate()
        .map(|(i, (p, ready))| {
            json!({
                "addresses": [format!("10.217.0.{}", 50 + i)],
                "conditions": {"ready": ready, "serving": ready, "terminating": false},
                "targetRef": {"kind": "Pod", "namespace": NS, "name": p, "uid": format!("uid-{p}")},
                "nodeName": "crc"
            })
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": format!("{service}-x7k2p"), "namespace": NS, "labels": {"kubernetes.io/service-name": service, "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": service, "uid": format!("uid-svc-{service}"), "controller": true, "blockOwnerDeletion": true}]},
        "addressType": "IPv4",
        "endpoints": endpoints,
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]
    })
}

/// A pod of an evaluation Job that carries the service's labels (and an old
/// release's digest): a neighbour, not the release.
fn job_pod(name: &str) -> Value {
    let mut p = pod(PodSpec::ready(name, OLD, V1_URI));
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "llm-scratch-eval-29410", "uid": "uid-job", "controller": true, "blockOwnerDeletion": true}]);
    p
}

/// A hand-made copy (its own Deployment and ReplicaSet) with the same labels.
fn copy_pod(name: &str) -> Vec<Value> {
    let mut rs = replicaset("llm-scratch-shadow-5d9f", OLD, 1, 1);
    rs["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "llm-scratch-shadow", "uid": "uid-shadow", "controller": true}]);
    let mut p = pod(PodSpec::ready(name, OLD, V1_URI));
    p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "llm-scratch-shadow-5d9f", "uid": "uid-llm-scratch-shadow-5d9f", "controller": true}]);
    vec![rs, p]
}

#[test]
fn watch_argo_on_a_later_commit_that_leaves_the_bundle_alone_passes() {
    let ws = Workspace::new();
    let later = ws.later_commit(None);
    let d = ws.digest.clone();
    // The operation was for the merge; sync.revision moved on with another model's merge.
    let mut app = synced(&ws);
    app["status"]["sync"]["revision"] = json!(later);
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(app),
        objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]),
    }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    let summary = step(&v, "argo")["summary"].as_str().unwrap().to_string();
    assert!(summary.contains(&later) && summary.contains("unchanged"), "{summary}");
    assert_eq!(step(&v, "argo")["data"]["lineage"][&later]["relation"], "unchangedDescendant", "{v:#}");
    cluster.assert_read_only();
}

#[test]
fn watch_superseded_by_a_later_bundle_change_is_not_checked_and_never_fails() {
    let ws = Workspace::new();
    let later = ws.later_commit(Some(("replicas: 1", "replicas: 2")));
    let mut app = application(&later, "Succeeded", "Healthy", "2026-01-01T10:05:01Z");
    app["status"]["operationState"]["syncResult"]["revision"] = json!(later);
    // The cluster already runs something else: it must not be judged against this release.
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(app),
        objects: objects(OLD, done_deployment(), vec![pod(PodSpec::ready(OLD_POD, OLD, V1_URI))], vec![]),
    }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "3s", "--revert"]);
    let v = out.json();
    // Superseded is a verdict of its own: INCONCLUSIVE, never FAIL.
    assert_eq!(out.code, 1, "{v:#}");
    assert_eq!(v["verdict"], "inconclusive", "{v:#}");
    assert_eq!(step(&v, "argo")["verdict"], "inconclusive", "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains(&format!("superseded by {later}")), "{v:#}");
    assert!(findings(&v, "argo", "BG510").contains("changed the release"), "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "not-run");
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["step"] != "revert"), "nothing is reverted: {v:#}");
    // Only the Application was read.
    assert!(cluster.requests().iter().all(|(_, p)| p.contains("applications")));
}

#[test]
fn watch_argo_revision_not_in_the_checkout_is_inconclusive_never_fail() {
    let ws = Workspace::new();
    let unknown = "0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f";
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(application(unknown, "Succeeded", "Healthy", "2026-01-01T10:05:01Z")),
        objects: vec![],
    }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "1s", "--revert"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert_eq!(step(&v, "argo")["verdict"], "inconclusive", "{v:#}");
    assert!(findings(&v, "argo", "BG509").contains("not in the local repository"), "{v:#}");
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["step"] != "revert"), "{v:#}");
}

#[test]
fn watch_source_hydrator_reports_the_merge_as_its_dry_sha_and_passes() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let hydrated = "7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e7e";
    let mut app = application(hydrated, "Succeeded", "Healthy", "2026-01-01T10:05:01Z");
    app["spec"]["sourceHydrator"] = json!({
        "drySource": {"repoURL": "https://github.com/o/r.git", "targetRevision": "main", "path": "llm-scratch/v2"},
        "syncSource": {"targetBranch": "environments/prod", "path": "llm-scratch"}
    });
    app["spec"].as_object_mut().unwrap().remove("source");
    app["status"]["sourceHydrator"] = json!({
        "lastSuccessfulOperation": {"drySHA": ws.sha, "hydratedSHA": hydrated, "sourceHydrator": app["spec"]["sourceHydrator"].clone()},
        "currentOperation": {"drySHA": ws.sha, "hydratedSHA": hydrated, "phase": "Hydrated", "message": "", "startedAt": "2026-01-01T10:04:00Z", "finishedAt": "2026-01-01T10:04:30Z", "sourceHydrator": app["spec"]["sourceHydrator"].clone()}
    });
    let crd_errors = crate::watch::application_errors(&app);
    assert!(crd_errors.is_empty(), "{crd_errors:#?}");
    let frames = vec![Frame {
        at_ms: 0,
        app: Some(app),
        objects: objects(&d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))], vec![]),
    }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains("hydrated from the merge commit"), "{v:#}");
}

#[test]
fn watch_pods_of_a_job_and_a_copy_with_the_apps_labels_are_not_blamed() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let mut extra = vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI)), job_pod("llm-scratch-eval-29410-abcde")];
    extra.extend(copy_pod("llm-scratch-shadow-5d9f-q2w3e"));
    let mut objs = objects(&d, done_deployment(), extra, vec![]);
    // The old ReplicaSet is scaled to 0: the rollout itself is done.
    objs.retain(|o| o["metadata"]["name"] != "llm-scratch-predictor-868c589678");
    objs.push(replicaset("llm-scratch-predictor-868c589678", OLD, 0, 0));
    objs.push(endpoint_slice(&format!("{NAME}-predictor"), &[(NEW_POD, true)]));
    let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: objs }];
    let (out, cluster) = run_watch(&ws, frames, &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "a look-alike is not another release serving: {v:#}");
    let notes = findings(&v, "rollout", "BG507");
    assert!(
        notes.contains("not part of this release")
            && notes.contains("llm-scratch-eval-29410-abcde")
            && notes.contains("llm-scratch-shadow-5d9f-q2w3e"),
        "{notes}"
    );
    assert!(notes.contains("Job llm-scratch-eval-29410"), "the owner is named: {notes}");
    cluster.assert_read_only();
}

#[test]
fn watch_a_pod_outside_the_release_that_its_service_routes_to_is_undecided_bg506() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let mut extra = vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI))];
    extra.extend(copy_pod("llm-scratch-shadow-5d9f-q2w3e"));
    let mut objs = objects(&d, done_deployment(), extra, vec![]);
    // The copy carries the Service's labels, so the Service routes to it too.
    objs.push(endpoint_slice(
        &format!("{NAME}-predictor"),
        &[(NEW_POD, true), ("llm-scratch-shadow-5d9f-q2w3e", true)],
    ));
    let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: objs }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "2s", "--revert"]);
    let v = out.json();
    assert_eq!(step(&v, "rollout")["verdict"], "inconclusive", "{v:#}");
    assert!(findings(&v, "rollout", "BG506").contains("llm-scratch-shadow-5d9f-q2w3e"), "{v:#}");
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["step"] != "revert"), "never a revert on it: {v:#}");
}

#[test]
fn watch_old_release_still_routed_by_the_service_fails_bg501() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let mut objs = objects(
        &d,
        done_deployment(),
        vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI)), pod(PodSpec::ready(OLD_POD, OLD, V1_URI))],
        vec![],
    );
    objs.push(endpoint_slice(&format!("{NAME}-predictor"), &[(NEW_POD, true), (OLD_POD, true)]));
    let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: objs }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "1s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert!(findings(&v, "rollout", "BG501").contains(OLD_POD), "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "fail");
}

#[test]
fn watch_old_ready_pod_the_service_no_longer_routes_is_history() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let mut objs = objects(
        &d,
        done_deployment(),
        vec![pod(PodSpec::ready(NEW_POD, &d, V2_URI)), pod(PodSpec::ready(OLD_POD, OLD, V1_URI))],
        vec![],
    );
    objs.push(endpoint_slice(&format!("{NAME}-predictor"), &[(NEW_POD, true)]));
    let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: objs }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "2s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(findings(&v, "rollout", "BG507").contains("not routed"), "{v:#}");
}

#[test]
fn watch_restart_storm_while_ready_fails_bg508_naming_the_container() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    // Ready at every read; the restart count grows between reads (liveness
    // killing a server that was still loading, then OOM).
    let storm = |restarts: i32| {
        let mut p = pod(PodSpec { restarts, ..PodSpec::ready(NEW_POD, &d, V2_URI) });
        p["status"]["containerStatuses"][0]["lastState"] = json!({"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-01-01T10:05:10Z", "finishedAt": "2026-01-01T10:06:10Z"}});
        objects(&d, done_deployment(), vec![p], vec![])
    };
    let frames = vec![
        Frame { at_ms: 0, app: Some(synced(&ws)), objects: storm(1) },
        Frame { at_ms: 900, app: Some(synced(&ws)), objects: storm(2) },
    ];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "10s", "--stable-for", "3s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    let f = findings(&v, "rollout", "BG508");
    assert!(f.contains("kserve-container") && f.contains("1 → 2") && f.contains("OOMKilled, exit 137"), "{f}");
    // The same pod, one snapshot (no window), passes: that is what the window is for.
    let (one, _c) = run_watch(
        &ws,
        vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: storm(1) }],
        &["--timeout", "3s", "--stable-for", "0s"],
    );
    assert_eq!(one.code, 0, "{}", one.stdout);
}

#[test]
fn watch_localmodelcache_and_modelcar_sources_are_read_and_compared() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    // A LocalModelCache pod: no storage-initializer, the source in its annotation.
    let cached = |uri: &str| {
        let mut p = pod(PodSpec::ready(NEW_POD, &d, V2_URI));
        p["spec"].as_object_mut().unwrap().remove("initContainers");
        p["status"].as_object_mut().unwrap().remove("initContainerStatuses");
        p["metadata"]["labels"]["internal.serving.kserve.io/localmodel"] = json!("llm-scratch-v2-cache");
        p["metadata"]["annotations"]["internal.serving.kserve.io/localmodel-sourceuri"] = json!(uri);
        p
    };
    let (out, _c) = run_watch(
        &ws,
        vec![Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![cached(V2_URI)], vec![]),
        }],
        &["--timeout", "3s"],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    let (out, _c) = run_watch(
        &ws,
        vec![Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![cached(V1_URI)], vec![]),
        }],
        &["--timeout", "1s"],
    );
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        findings(&out.json(), "rollout", "BG501").contains("LocalModelCache llm-scratch-v2-cache"),
        "{}",
        out.stdout
    );
    // A pod whose source is wired some other way: undecided, never a failure.
    let mut unknown = cached(V2_URI);
    unknown["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("internal.serving.kserve.io/localmodel-sourceuri");
    let (out, _c) = run_watch(
        &ws,
        vec![Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![unknown], vec![]),
        }],
        &["--timeout", "1s", "--revert"],
    );
    let v = out.json();
    assert_eq!(step(&v, "rollout")["verdict"], "inconclusive", "{v:#}");
    assert!(findings(&v, "rollout", "BG506").contains("model source cannot be read"), "{v:#}");
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["step"] != "revert"), "{v:#}");
    // A modelcar: the model is the sidecar's image.
    let mut car = cached(V2_URI);
    car["metadata"]["annotations"].as_object_mut().unwrap().remove("internal.serving.kserve.io/localmodel-sourceuri");
    car["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "modelcar", "image": "registry.example.com/models/llm-scratch:v1", "args": ["sh", "-c", "ln -s /proc/$$$$/root/models /mnt/ && sleep infinity"]}));
    let (out, _c) = run_watch(
        &ws,
        vec![Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![car.clone()], vec![]),
        }],
        &["--timeout", "1s"],
    );
    assert!(
        findings(&out.json(), "rollout", "BG501").contains("oci://registry.example.com/models/llm-scratch:v1"),
        "{}",
        out.stdout
    );
    for o in [cached(V2_URI), car] {
        let errs = k8s_errors(&o);
        assert!(errs.is_empty(), "{errs:#?}");
    }
}

#[test]
fn watch_stand_in_objects_validate_against_the_reference_schemas() {
    let d = "sha256:abc";
    for o in [
        endpoint_slice(&format!("{NAME}-predictor"), &[(NEW_POD, true), (OLD_POD, false)]),
        job_pod("llm-scratch-eval-29410-abcde"),
        pod(PodSpec::ready(NEW_POD, d, V2_URI)),
        replicaset("rs", d, 1, 0),
        done_deployment(),
    ]
    .into_iter()
    .chain(copy_pod("c"))
    {
        let errs = k8s_errors(&o);
        assert!(errs.is_empty(), "{}: {errs:#?}", o["kind"]);
    }
    let errs = crate::support::schema::isvc_errors(&inference_service());
    assert!(errs.is_empty(), "{errs:#?}");
    // The validator is not vacuous.
    let mut bad = endpoint_slice("s", &[("p", true)]);
    bad["endpoints"][0]["conditions"]["ready"] = json!("yes");
    assert!(!k8s_errors(&bad).is_empty());
}

/// KServe Serverless: InferenceService → Knative Service → Configuration →
/// Revision → Deployment → ReplicaSet → Pod, for revisions 1 (old) and 2
/// (new), with the Knative Service's traffic split `new_percent`/rest.
fn serverless(new_digest: &str, new_percent: u32) -> Vec<Value> {
    let ksvc = format!("{NAME}-predictor");
    let owner = |api: &str, kind: &str, name: &str| json!([{"apiVersion": api, "kind": kind, "name": name, "uid": format!("uid-{kind}-{name}"), "controller": true, "blockOwnerDeletion": true}]);
    let mut isvc = inference_service();
    isvc["metadata"]["annotations"]["serving.kserve.io/deploymentMode"] = json!("Serverless");
    isvc["metadata"]["uid"] = json!(format!("uid-InferenceService-{NAME}"));
    let mut traffic =
        vec![json!({"revisionName": format!("{ksvc}-00002"), "percent": new_percent, "latestRevision": true})];
    if new_percent < 100 {
        traffic.push(
            json!({"revisionName": format!("{ksvc}-00001"), "percent": 100 - new_percent, "latestRevision": false}),
        );
    }
    let mut out = vec![
        isvc,
        json!({
            "apiVersion": "serving.knative.dev/v1", "kind": "Service",
            "metadata": {"name": ksvc, "namespace": NS, "uid": format!("uid-Service-{ksvc}"), "ownerReferences": owner("serving.kserve.io/v1beta1", "InferenceService", NAME)},
            "spec": {"template": {"spec": {"containers": [{"image": "registry.example.com/ai-lab/llm-serve@sha256:7c7c"}]}}},
            "status": {"latestCreatedRevisionName": format!("{ksvc}-00002"), "latestReadyRevisionName": format!("{ksvc}-00002"), "traffic": traffic,
                       "url": format!("http://{ksvc}.{NS}.example.com"), "observedGeneration": 2}
        }),
        json!({
            "apiVersion": "serving.knative.dev/v1", "kind": "Configuration",
            "metadata": {"name": ksvc, "namespace": NS, "uid": format!("uid-Configuration-{ksvc}"), "ownerReferences": owner("serving.knative.dev/v1", "Service", &ksvc)},
            "spec": {"template": {"spec": {"containers": [{"image": "registry.example.com/ai-lab/llm-serve@sha256:7c7c"}]}}},
            "status": {"latestCreatedRevisionName": format!("{ksvc}-00002"), "latestReadyRevisionName": format!("{ksvc}-00002"), "observedGeneration": 2}
        }),
    ];
    for (n, digest, src, pod_name) in [(1, OLD, V1_URI, OLD_POD), (2, new_digest, V2_URI, NEW_POD)] {
        let rev = format!("{ksvc}-0000{n}");
        let dep = format!("{rev}-deployment");
        let rs = format!("{dep}-6d8f9");
        out.push(json!({
            "apiVersion": "serving.knative.dev/v1", "kind": "Revision",
            "metadata": {"name": rev, "namespace": NS, "uid": format!("uid-Revision-{rev}"), "ownerReferences": owner("serving.knative.dev/v1", "Configuration", &ksvc)},
            "spec": {"containers": [{"image": "registry.example.com/ai-lab/llm-serve@sha256:7c7c"}]},
            "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T10:05:30Z"}]}
        }));
        let mut d = done_deployment();
        d["metadata"]["name"] = json!(dep);
        d["metadata"]["uid"] = json!(format!("uid-Deployment-{dep}"));
        d["metadata"]["ownerReferences"] = owner("serving.knative.dev/v1", "Revision", &rev);
        out.push(d);
        let mut r = replicaset(&rs, digest, 1, 1);
        r["metadata"]["ownerReferences"] = owner("apps/v1", "Deployment", &dep);
        r["metadata"]["uid"] = json!(format!("uid-ReplicaSet-{rs}"));
        out.push(r);
        let mut p = pod(PodSpec::ready(pod_name, digest, src));
        p["metadata"]["ownerReferences"] = owner("apps/v1", "ReplicaSet", &rs);
        p["metadata"]["labels"]["serving.knative.dev/revision"] = json!(rev);
        out.push(p);
    }
    out
}

#[test]
fn watch_serverless_old_revision_without_traffic_is_history_and_with_traffic_fails() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    // All traffic on the new revision; the old revision's pod is still Ready (scale-down grace).
    let (out, cluster) = run_watch(
        &ws,
        vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: serverless(&d, 100) }],
        &["--timeout", "3s"],
    );
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(findings(&v, "rollout", "BG507").contains(OLD_POD), "{v:#}");
    assert!(step(&v, "rollout")["data"]["state"]["routing"].as_str().unwrap().contains("status.traffic"), "{v:#}");
    cluster.assert_read_only();
    assert!(cluster
        .requests()
        .iter()
        .any(|(_, p)| p.starts_with("/apis/serving.knative.dev/v1/namespaces/ai-lab/revisions")));
    // 20% still routed to the old revision: the old release serves.
    let (out, _c) = run_watch(
        &ws,
        vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: serverless(&d, 80) }],
        &["--timeout", "1s"],
    );
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert!(findings(&v, "rollout", "BG501").contains(OLD_POD), "{v:#}");
    // The Knative objects have Knative's shape.
    for o in serverless(&d, 80) {
        let errs = match (o["apiVersion"].as_str().unwrap(), o["kind"].as_str().unwrap()) {
            ("serving.knative.dev/v1", "Service") => crate::support::schema::crd_errors("knative/service.yaml", &o),
            ("serving.knative.dev/v1", "Configuration") => {
                crate::support::schema::crd_errors("knative/configuration.yaml", &o)
            }
            ("serving.knative.dev/v1", "Revision") => crate::support::schema::crd_errors("knative/revision.yaml", &o),
            ("serving.kserve.io/v1beta1", _) => crate::support::schema::isvc_errors(&o),
            _ => k8s_errors(&o),
        };
        assert!(errs.is_empty(), "{} {}: {errs:#?}", o["kind"], o["metadata"]["name"]);
    }
}

#[test]
fn revert_refuses_when_the_bundle_on_the_branch_is_another_release_now() {
    use crate::watch::{git, pulls, run_revert, GitRemote, TOKEN};
    let g = GitRemote::new();
    let gh = pulls::Pulls::start(TOKEN);
    let w = g.work();
    let failed = git(&w, &["rev-parse", "HEAD"]);
    // A later merge changed the bundle on main (a fix rolled forward).
    let p = w.join("llm-scratch/v2/release.yaml");
    let text = std::fs::read_to_string(&p).unwrap();
    let changed = text.replacen("replicas: 1", "replicas: 2", 1);
    assert_ne!(text, changed, "the fixture has replicas: 1");
    std::fs::write(&p, changed).unwrap();
    git(&w, &["commit", "-q", "-am", "llm-scratch: two replicas"]);
    git(&w, &["push", "-q", "origin", "HEAD:main"]);
    // The job's checkout is still at the failed release's commit.
    git(&w, &["checkout", "-q", "--detach", &failed]);
    let ev = crate::watch::fixture("evidence-crashloop.json");
    let out = run_revert(&w, &gh, &["--evidence", ev.to_str().unwrap()]);
    let v = out.json();
    let r = step(&v, "revert");
    assert_eq!(r["verdict"], "not-run", "{v:#}");
    assert!(
        r["summary"].as_str().unwrap().contains("not sha256:")
            && r["summary"].as_str().unwrap().contains("reverting would undo the later release"),
        "{r}"
    );
    assert!(g.remote_branch(crate::watch::BRANCH).is_none(), "no branch pushed");
    assert!(gh.pulls().is_empty(), "no PR opened");
}
