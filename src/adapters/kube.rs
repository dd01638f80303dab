//! Kubernetes reads for `watch` and the serving audit: the Argo CD
//! Application, and everything in the release's namespace that decides
//! which pods are the release's and which of them serve (Deployments,
//! ReplicaSets, Pods, Events, EndpointSlices, the InferenceService, Knative
//! Services, Configurations and Revisions), turned into plain data
//! (`checks::watch`).
//!
//! Kubernetes access is strictly GET (list/get), every list paged: `watch`
//! must never be the thing that changes the cluster it is judging.

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{bail, Context, Result};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::Api;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::bundle::ANNOTATION_DIGEST;
use crate::checks::watch::argo::{AppSource, AppStatus, Hydration};
use crate::checks::watch::ownership::{self, Root};
use crate::checks::watch::state::{
    ClusterView, ConditionInfo, ContainerRestarts, DeploymentInfo, EndpointInfo, EventInfo, KnativeTraffic,
    ModelSource, ObjectRef, OwnerRef, PodInfo, ReplicaSetInfo, ServiceState, WorkloadStatus, KSERVE_LABEL, LOCAL_MODEL,
    LOCAL_MODEL_SOURCE, MODELCAR, NAME_LABEL, STORAGE_INITIALIZER,
};

fn s(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(Value::as_str).filter(|x| !x.is_empty()).map(String::from)
}

/// The Application's status fields the gate reads (None: not found).
pub(crate) async fn application(client: &kube::Client, ns: &str, name: &str) -> Result<Option<AppStatus>> {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "applications");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let Some(obj) = api.get_opt(name).await.with_context(|| format!("reading Application {ns}/{name}"))? else {
        return Ok(None);
    };
    Ok(Some(app_status(name, &obj.data)))
}

/// Plain status from an Application object's non-metadata fields.
pub(crate) fn app_status(name: &str, data: &Value) -> AppStatus {
    // Source hydrator (Argo CD 3.x): the dry (authored) commit of the current
    // and the last successful hydration.
    let mut hydrated = Vec::new();
    for (ptr, phase) in
        [("/status/sourceHydrator/currentOperation", true), ("/status/sourceHydrator/lastSuccessfulOperation", false)]
    {
        if let Some(dry) = s(data, &format!("{ptr}/drySHA")) {
            hydrated.push(Hydration {
                dry_sha: dry,
                hydrated_sha: s(data, &format!("{ptr}/hydratedSHA")),
                phase: if phase { s(data, &format!("{ptr}/phase")) } else { None },
            });
        }
    }
    AppStatus {
        name: name.to_string(),
        sync_status: s(data, "/status/sync/status"),
        sync_revision: s(data, "/status/sync/revision"),
        sync_revisions: data
            .pointer("/status/sync/revisions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default(),
        health: s(data, "/status/health/status"),
        phase: s(data, "/status/operationState/phase"),
        operation_revision: s(data, "/status/operationState/syncResult/revision")
            .or_else(|| s(data, "/status/operationState/operation/sync/revision")),
        operation_revisions: [
            "/status/operationState/syncResult/revisions",
            "/status/operationState/operation/sync/revisions",
        ]
        .iter()
        .find_map(|p| data.pointer(p).and_then(Value::as_array))
        .map(|a| a.iter().filter_map(Value::as_str).filter(|r| !r.is_empty()).map(String::from).collect())
        .unwrap_or_default(),
        started_at: s(data, "/status/operationState/startedAt"),
        finished_at: s(data, "/status/operationState/finishedAt"),
        message: s(data, "/status/operationState/message"),
        hydrated,
        sources: app_sources(data),
    }
}

/// What the Application renders: `spec.source`, each `spec.sources[]`, or
/// the hydrator's `spec.sourceHydrator.drySource` (rendered at the dry SHA).
/// A source with helm or kustomize settings, or another plugin's name, is
/// not rendered by bundlegate; a `ref`-only source (values for another) is
/// skipped.
fn app_sources(data: &Value) -> Vec<AppSource> {
    let one = |v: &Value, dry: bool| -> Option<AppSource> {
        let path = v.get("path").and_then(Value::as_str);
        if path.is_none() && v.get("ref").is_some() {
            return None;
        }
        let plugin = v.get("plugin");
        let other_tool = ["helm", "kustomize", "directory"]
            .into_iter()
            .find(|k| v.get(*k).is_some_and(|x| !x.is_null()))
            .map(String::from)
            .or_else(|| {
                plugin
                    .and_then(|p| p.get("name"))
                    .and_then(Value::as_str)
                    .filter(|n| !n.is_empty() && *n != "bundlegate" && !n.starts_with("bundlegate-"))
                    .map(|n| format!("plugin {n}"))
            })
            .or_else(|| v.get("chart").and_then(Value::as_str).map(|c| format!("chart {c}")));
        let bundle = plugin
            .and_then(|p| p.get("parameters"))
            .and_then(Value::as_array)
            .and_then(|ps| ps.iter().find(|p| p.get("name").and_then(Value::as_str) == Some("bundle")))
            .and_then(|p| p.get("string"))
            .and_then(Value::as_str)
            .map(String::from);
        Some(AppSource {
            repo_url: v.get("repoURL").and_then(Value::as_str).map(String::from),
            path: path.unwrap_or_default().to_string(),
            bundle,
            other_tool,
            dry,
        })
    };
    if let Some(d) = data.pointer("/spec/sourceHydrator/drySource") {
        return one(d, true).into_iter().collect();
    }
    if let Some(list) = data.pointer("/spec/sources").and_then(Value::as_array) {
        return list.iter().filter_map(|v| one(v, false)).collect();
    }
    data.pointer("/spec/source").and_then(|v| one(v, false)).into_iter().collect()
}

/// Every page of one list (GET only).
async fn list_all<K>(api: &Api<K>, lp: ListParams, what: &str) -> Result<Vec<K>>
where
    K: kube::Resource + Clone + DeserializeOwned + fmt::Debug,
{
    let mut lp = lp.limit(500);
    let mut out = Vec::new();
    for _ in 0..1000 {
        let page = api.list(&lp).await.with_context(|| format!("listing {what}"))?;
        out.extend(page.items);
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => return Ok(out),
        }
    }
    bail!("listing {what}: more than 1000 pages")
}

/// Every object of one kind in the namespace (GET, paged). Labels do not
/// decide what belongs to the release: ownership does (`checks::watch::ownership`).
async fn list_ns<K>(client: &kube::Client, ns: &str, what: &str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + DeserializeOwned + fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    list_all(&api, ListParams::default(), &format!("{what} in {ns}")).await
}

/// A custom resource list; a cluster without the CRD (404) has none.
async fn list_custom(
    client: &kube::Client,
    ns: &str,
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
) -> Result<Vec<DynamicObject>> {
    let ar = ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    match list_all(&api, ListParams::default(), &format!("{plural}.{group} in {ns}")).await {
        Ok(v) => Ok(v),
        Err(e) if is_not_found(&e) => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

fn is_not_found(e: &anyhow::Error) -> bool {
    e.chain().any(|c| matches!(c.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 404))
}

fn owners_of(meta: &ObjectMeta) -> Vec<OwnerRef> {
    meta.owner_references.iter().flatten().map(owner_ref).collect()
}

fn owner_ref(o: &OwnerReference) -> OwnerRef {
    OwnerRef {
        kind: o.kind.clone(),
        name: o.name.clone(),
        uid: Some(o.uid.clone()).filter(|u| !u.is_empty()),
        controller: o.controller.unwrap_or(false),
    }
}

fn object_ref(kind: &str, meta: &ObjectMeta) -> ObjectRef {
    ObjectRef {
        kind: kind.to_string(),
        name: meta.name.clone().unwrap_or_default(),
        uid: meta.uid.clone(),
        owners: owners_of(meta),
    }
}

fn conditions(c: Option<&Vec<k8s_openapi::api::apps::v1::DeploymentCondition>>) -> Vec<ConditionInfo> {
    c.map(|v| {
        v.iter()
            .map(|c| ConditionInfo {
                type_: c.type_.clone(),
                status: c.status.clone(),
                reason: c.reason.clone(),
                message: c.message.clone(),
                observed_generation: None,
            })
            .collect()
    })
    .unwrap_or_default()
}

/// Plain pod state. `app` is the bundle's name: a pod carrying its labels
/// is `labelled` (listed if it turns out not to be the release's).
pub(crate) fn pod_info(p: &Pod, app: &str) -> PodInfo {
    let meta = &p.metadata;
    let spec = p.spec.as_ref();
    let status = p.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        .unwrap_or(false);
    let mut restarts = 0u32;
    let mut waiting = Vec::new();
    let mut crash_loop = false;
    let mut verifier = None;
    let mut containers = Vec::new();
    let all_statuses = status
        .into_iter()
        .flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()));
    for cs in all_statuses {
        let n = u32::try_from(cs.restart_count).unwrap_or(0);
        restarts = restarts.saturating_add(n);
        let last = cs.last_state.as_ref().and_then(|st| st.terminated.as_ref());
        containers.push(ContainerRestarts {
            name: cs.name.clone(),
            restarts: n,
            last_reason: last.and_then(|t| t.reason.clone()),
            last_exit_code: last.map(|t| t.exit_code),
            last_finished_at: last.and_then(|t| t.finished_at.as_ref()).map(|t| t.0.to_string()),
        });
        if cs.name == crate::bundle::pod_verifier::VERIFIER_CONTAINER && verifier.is_none() {
            let term = [cs.state.as_ref(), cs.last_state.as_ref()]
                .into_iter()
                .flatten()
                .filter_map(|st| st.terminated.as_ref());
            verifier =
                term.filter(|t| t.exit_code != 0).find_map(|t| t.message.clone()).filter(|m| !m.trim().is_empty());
        }
        if let Some(w) = cs.state.as_ref().and_then(|st| st.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_else(|| "Waiting".into());
            if reason == "CrashLoopBackOff" {
                crash_loop = true;
            }
            waiting.push(format!(
                "{}: {reason}{}",
                cs.name,
                w.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()
            ));
        }
        if let Some(t) = last {
            if !cs.ready && t.exit_code != 0 {
                waiting.push(format!(
                    "{}: last terminated {} (exit {})",
                    cs.name,
                    t.reason.as_deref().unwrap_or("Error"),
                    t.exit_code
                ));
            }
        }
    }
    let storage_env = spec
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.as_ref())
        .and_then(|env| env.iter().find(|e| e.name == "STORAGE_URI"))
        .and_then(|e| e.value.clone());
    let labels = meta.labels.as_ref();
    PodInfo {
        name: meta.name.clone().unwrap_or_default(),
        digest: meta.annotations.as_ref().and_then(|a| a.get(ANNOTATION_DIGEST).cloned()),
        phase: status.and_then(|s| s.phase.clone()).unwrap_or_else(|| "Unknown".into()),
        ready,
        terminating: meta.deletion_timestamp.is_some(),
        restarts,
        waiting,
        crash_loop,
        source: model_source(p),
        owner: meta.owner_references.iter().flatten().find(|o| o.kind == "ReplicaSet").map(|o| o.name.clone()),
        uid: meta.uid.clone(),
        owners: owners_of(meta),
        labelled: labels
            .is_some_and(|l| [NAME_LABEL, KSERVE_LABEL].iter().any(|k| l.get(*k).map(String::as_str) == Some(app))),
        routed: None,
        revision: None,
        containers,
        storage_env,
        node: spec.and_then(|s| s.node_name.clone()),
        verifier,
        ended: failure_end(p),
    }
}

/// Why the pod ended for a failure, if it did and was not deleted: a pod
/// being deleted (a drain, a scale-down, `kubectl rollout restart`) ends its
/// containers on purpose. A Failed pod says why (`Evicted` and the kubelet's
/// message); a container terminated with a non-zero exit names its reason.
fn failure_end(p: &Pod) -> Option<String> {
    if p.metadata.deletion_timestamp.is_some() {
        return None;
    }
    let status = p.status.as_ref()?;
    if status.phase.as_deref() == Some("Failed") {
        let reason = status.reason.clone().unwrap_or_else(|| "Failed".into());
        return Some(match status.message.as_deref().filter(|m| !m.trim().is_empty()) {
            Some(m) => format!("{reason} ({m})"),
            None => reason,
        });
    }
    status.init_container_statuses.iter().flatten().chain(status.container_statuses.iter().flatten()).find_map(|cs| {
        let t = cs.state.as_ref()?.terminated.as_ref()?;
        (t.exit_code != 0).then(|| {
            format!(
                "container {} terminated: {} (exit {})",
                cs.name,
                t.reason.as_deref().unwrap_or("Error"),
                t.exit_code
            )
        })
    })
}

/// Where KServe wired the pod's model from. KServe's webhook moves the model
/// URI into the storage-initializer's first argument and rewrites the main
/// container's STORAGE_URI to the local mount (/mnt/models, which shows no
/// version), so that env is never the source. A LocalModelCache pod starts
/// without a storage-initializer and names its source in an annotation; a
/// modelcar (`oci://`) runs the model image as a sidecar.
fn model_source(p: &Pod) -> Option<ModelSource> {
    let spec = p.spec.as_ref()?;
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .find(|c| c.name == STORAGE_INITIALIZER)
        .and_then(|c| c.args.as_ref().and_then(|a| a.first().cloned()));
    if let Some(uri) = init {
        return Some(ModelSource::StorageInitializer { uri });
    }
    let ann = p.metadata.annotations.as_ref();
    if let Some(uri) = ann.and_then(|a| a.get(LOCAL_MODEL_SOURCE)).filter(|u| !u.trim().is_empty()) {
        let cache = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(LOCAL_MODEL))
            .or_else(|| ann.and_then(|a| a.get(LOCAL_MODEL)))
            .cloned();
        return Some(ModelSource::LocalModelCache { cache, uri: uri.clone() });
    }
    spec.containers
        .iter()
        .find(|c| c.name == MODELCAR)
        .and_then(|c| c.image.clone())
        .map(|image| ModelSource::Modelcar { uri: format!("oci://{image}") })
}

/// Everything in the namespace that decides the release's pods and their
/// routing, at one moment.
/// `workload`: the kind the release's pods descend from; LLMInferenceServices
/// are read only for that kind, so a watcher Role granted before the format
/// existed (no grant for them: 403) keeps working for every other release.
pub(crate) async fn cluster_view(client: &kube::Client, ns: &str, app: &str, workload: &str) -> Result<ClusterView> {
    let deps: Vec<Deployment> = list_ns(client, ns, "deployments").await?;
    let rss: Vec<ReplicaSet> = list_ns(client, ns, "replicasets").await?;
    let pods: Vec<Pod> = list_ns(client, ns, "pods").await?;
    let mut v = ClusterView::default();
    for d in &deps {
        let status = d.status.as_ref();
        v.objects.push(object_ref("Deployment", &d.metadata));
        v.deployments.push(DeploymentInfo {
            name: d.metadata.name.clone().unwrap_or_default(),
            replicas: d.spec.as_ref().and_then(|s| s.replicas),
            updated: status.and_then(|s| s.updated_replicas).unwrap_or(0),
            ready: status.and_then(|s| s.ready_replicas).unwrap_or(0),
            available: status.and_then(|s| s.available_replicas).unwrap_or(0),
            conditions: conditions(status.and_then(|s| s.conditions.as_ref())),
        });
    }
    for r in &rss {
        let digest = r
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(ANNOTATION_DIGEST).cloned());
        v.objects.push(object_ref("ReplicaSet", &r.metadata));
        v.replica_sets.push(ReplicaSetInfo {
            name: r.metadata.name.clone().unwrap_or_default(),
            digest,
            replicas: r.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            ready: r.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        });
    }
    v.pods = pods.iter().map(|p| pod_info(p, app)).collect();
    v.pods.sort_by(|a, b| a.name.cmp(&b.name));
    // The InferenceService and, for Serverless, Knative's chain and routing.
    for (group, version, kind, plural) in [
        ("serving.kserve.io", "v1beta1", "InferenceService", "inferenceservices"),
        ("serving.kserve.io", "v1alpha2", "LLMInferenceService", "llminferenceservices"),
        ("serving.knative.dev", "v1", "Revision", "revisions"),
        ("serving.knative.dev", "v1", "Configuration", "configurations"),
        ("serving.knative.dev", "v1", "Service", "services"),
    ] {
        if kind == "LLMInferenceService" && workload != kind {
            continue;
        }
        for o in list_custom(client, ns, group, version, kind, plural).await? {
            if kind == "Service" {
                v.traffic.push(knative_traffic(&o));
            }
            if kind == "LLMInferenceService" {
                v.workload_status.push(workload_status(kind, &o));
            }
            v.objects.push(object_ref(kind, &o.metadata));
        }
    }
    v.endpoints = match list_ns::<EndpointSlice>(client, ns, "endpointslices").await {
        Ok(slices) => Some(slices.iter().flat_map(endpoints_of).collect()),
        // Routing not readable (RBAC without endpointslices): readiness decides.
        Err(e) if is_denied(&e) || is_not_found(&e) => None,
        Err(e) => return Err(e),
    };
    v.events = events(client, ns).await?;
    Ok(v)
}

pub(crate) fn is_denied(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| matches!(c.downcast_ref::<kube::Error>(), Some(kube::Error::Api(s)) if s.code == 401 || s.code == 403))
}

fn endpoints_of(s: &EndpointSlice) -> Vec<EndpointInfo> {
    let service =
        s.metadata.labels.as_ref().and_then(|l| l.get("kubernetes.io/service-name")).cloned().unwrap_or_default();
    s.endpoints
        .iter()
        .filter_map(|e| {
            let t = e.target_ref.as_ref().filter(|t| t.kind.as_deref() == Some("Pod"))?;
            // An unset `ready` means ready (the API's own convention).
            let ready = e.conditions.as_ref().and_then(|c| c.ready).unwrap_or(true);
            Some(EndpointInfo { service: service.clone(), pod: t.name.clone().unwrap_or_default(), ready })
        })
        .collect()
}

/// A serving object's status, as plain data.
fn workload_status(kind: &str, o: &DynamicObject) -> WorkloadStatus {
    let name = o.metadata.name.clone().unwrap_or_default();
    WorkloadStatus::of(kind, &name, o.metadata.generation, o.data.get("status"))
}

fn knative_traffic(o: &DynamicObject) -> KnativeTraffic {
    let mut percent: BTreeMap<String, u32> = BTreeMap::new();
    for t in o.data.pointer("/status/traffic").and_then(Value::as_array).into_iter().flatten() {
        let rev = s(t, "/revisionName");
        let pct = t.get("percent").and_then(Value::as_u64).map(|p| p.min(100) as u32).unwrap_or(0);
        if let Some(rev) = rev {
            let e = percent.entry(rev).or_default();
            *e = e.saturating_add(pct);
        }
    }
    KnativeTraffic {
        service: o.metadata.name.clone().unwrap_or_default(),
        percent,
        latest_created: s(&o.data, "/status/latestCreatedRevisionName"),
        latest_ready: s(&o.data, "/status/latestReadyRevisionName"),
    }
}

/// The namespace's events (they carry no labels; a field selector would take
/// one request per object). `checks::watch::ownership` keeps those about
/// the release's objects.
async fn events(client: &kube::Client, ns: &str) -> Result<Vec<EventInfo>> {
    let ev_api: Api<Event> = Api::namespaced(client.clone(), ns);
    let events = list_all(&ev_api, ListParams::default(), &format!("events in {ns}")).await?;
    Ok(events
        .into_iter()
        .map(|e| EventInfo {
            kind: e.involved_object.kind.clone().unwrap_or_default(),
            object: e.involved_object.name.clone().unwrap_or_default(),
            type_: e.type_.clone().unwrap_or_else(|| "Normal".into()),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" "),
            count: e.count.unwrap_or(1),
        })
        .collect())
}

/// The release's workload at one moment: the namespace read, then reduced to
/// what ownership says is the release's.
pub(crate) async fn service_state(
    client: &kube::Client,
    ns: &str,
    name: &str,
    workload: &'static str,
) -> Result<ServiceState> {
    let view = cluster_view(client, ns, name, workload).await?;
    Ok(ownership::release_state(&view, &Root::for_bundle(name, workload)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What Argo CD renders, as the Application spells it: one source, a
    /// multi-source list (a `ref`-only values source skipped, a Helm chart
    /// not bundlegate's), the hydrator's dry source.
    #[test]
    fn the_application_sources_are_read_as_argo_cd_renders_them() {
        let one = json!({"spec": {"source": {"repoURL": "https://g/r.git", "path": "llm/current",
            "plugin": {"name": "bundlegate", "parameters": [{"name": "bundle", "string": "serving.yaml"}]}}}});
        let s = app_sources(&one);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].bundle_path(), "llm/current/serving.yaml");
        assert!(s[0].other_tool.is_none() && !s[0].dry);
        let multi = json!({"spec": {"sources": [
            {"repoURL": "https://g/values.git", "targetRevision": "main", "ref": "values"},
            {"repoURL": "https://charts.example.com", "chart": "vllm", "targetRevision": "1.2.3", "helm": {"valueFiles": ["$values/x.yaml"]}},
            {"repoURL": "https://g/r.git", "path": "llm/v2"},
            {"repoURL": "https://g/r.git", "path": ".", "kustomize": {}}
        ]}});
        let s = app_sources(&multi);
        assert_eq!(s.len(), 3, "the ref-only source is skipped: {s:?}");
        assert_eq!(s[0].other_tool.as_deref(), Some("helm"));
        assert_eq!((s[1].bundle_path().as_str(), s[1].other_tool.as_deref()), ("llm/v2/release.yaml", None));
        assert_eq!(s[2].other_tool.as_deref(), Some("kustomize"));
        let other_plugin = json!({"spec": {"source": {"path": "x", "plugin": {"name": "avp"}}}});
        assert_eq!(app_sources(&other_plugin)[0].other_tool.as_deref(), Some("plugin avp"));
        let hydrated = json!({"spec": {"sourceHydrator": {"drySource": {"repoURL": "https://g/r.git", "path": "llm/v2", "targetRevision": "main"},
            "syncSource": {"targetBranch": "env/prod", "path": "llm"}}}});
        let s = app_sources(&hydrated);
        assert!(s.len() == 1 && s[0].dry && s[0].bundle_path() == "llm/v2/release.yaml", "{s:?}");
        let root = json!({"spec": {"source": {"path": "", "repoURL": "r"}}});
        assert_eq!(app_sources(&root)[0].bundle_path(), "release.yaml");
    }
}
