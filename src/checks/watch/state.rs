//! The plain state the watch judges: what the adapter read about the
//! release's workload (pods, controllers, events, routing) at one moment,
//! and the ownership references that tie it together. Both `ownership`
//! (which of it is the release's) and `rollout` (what it runs) read these
//! types; neither defines them, so neither imports the other.

use std::collections::BTreeMap;

use serde::Serialize;

/// Label KServe puts on every pod/Deployment of an InferenceService.
pub(crate) const KSERVE_LABEL: &str = "serving.kserve.io/inferenceservice";
/// Label the deployment template puts on the Deployment and its pods.
pub(crate) const NAME_LABEL: &str = "app.kubernetes.io/name";
/// Name of KServe's init container that downloads the model.
pub(crate) const STORAGE_INITIALIZER: &str = "storage-initializer";
/// KServe's modelcar sidecar: its image is the model (`oci://` storage URIs).
pub(crate) const MODELCAR: &str = "modelcar";
/// Pod annotation naming the source URI a KServe LocalModelCache serves
/// (such pods start without a storage-initializer).
pub(crate) const LOCAL_MODEL_SOURCE: &str = "internal.serving.kserve.io/localmodel-sourceuri";
/// Label naming the LocalModelCache a pod's model comes from.
pub(crate) const LOCAL_MODEL: &str = "internal.serving.kserve.io/localmodel";

/// Where a pod's model bytes come from, as KServe wires it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub(crate) enum ModelSource {
    /// `initContainers[storage-initializer].args[0]`.
    StorageInitializer { uri: String },
    /// A node cache: the pod's LocalModelCache annotations.
    LocalModelCache { cache: Option<String>, uri: String },
    /// A modelcar sidecar whose image holds the model: `oci://<image>`.
    Modelcar { uri: String },
}

impl ModelSource {
    pub(crate) fn uri(&self) -> &str {
        match self {
            ModelSource::StorageInitializer { uri }
            | ModelSource::LocalModelCache { uri, .. }
            | ModelSource::Modelcar { uri } => uri,
        }
    }

    /// Where the URI was read, for evidence.
    pub(crate) fn read_from(&self) -> String {
        match self {
            ModelSource::StorageInitializer { .. } => format!("initContainers[{STORAGE_INITIALIZER}].args[0]"),
            ModelSource::LocalModelCache { cache, .. } => {
                format!("annotation {LOCAL_MODEL_SOURCE} (LocalModelCache {})", cache.as_deref().unwrap_or("?"))
            }
            ModelSource::Modelcar { .. } => format!("containers[{MODELCAR}].image"),
        }
    }
}

/// One container's restart history, for the stability window.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ContainerRestarts {
    pub name: String,
    pub restarts: u32,
    /// `lastState.terminated`: reason (OOMKilled, Error…), exit code, time.
    pub last_reason: Option<String>,
    pub last_exit_code: Option<i32>,
    pub last_finished_at: Option<String>,
}

// ---- the service's pods ---------------------------------------------------------------------

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PodInfo {
    pub name: String,
    /// `bundlegate.dev/release-digest` annotation (None: not a bundlegate pod
    /// or the annotation was stripped; never counted as the new release).
    pub digest: Option<String>,
    pub phase: String,
    /// The pod's Ready condition.
    pub ready: bool,
    /// deletionTimestamp set: on its way out but still present.
    pub terminating: bool,
    /// Ended for a failure reason, not by a deletion: the pod Failed
    /// (evicted by the kubelet: `Evicted (The node was low on resource…)`),
    /// or a container terminated with a non-zero exit (OOMKilled…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    pub restarts: u32,
    /// `container: Reason (message)` for waiting/terminated containers.
    pub waiting: Vec<String>,
    pub crash_loop: bool,
    /// The model source KServe wired into the pod (None: none recognised).
    pub source: Option<ModelSource>,
    /// The ReplicaSet in ownerReferences (None: not owned by one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// `metadata.ownerReferences`: what decides membership of the release.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<OwnerRef>,
    /// Carries the app's labels (only used to list look-alikes outside the release).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub labelled: bool,
    /// Whether traffic reaches it: Some(in the Service's ready endpoints, or
    /// its Knative revision has traffic), None when routing was not readable
    /// (then readiness decides, as the endpoints controller would).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed: Option<bool>,
    /// The Knative Revision in its ownership chain (Serverless).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
    /// Per container (init containers included) restarts and last termination.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub containers: Vec<ContainerRestarts>,
    /// The main container's STORAGE_URI env (KServe rewrites it to
    /// `/mnt/models`, so it is reported, never trusted).
    pub storage_env: Option<String>,
    pub node: Option<String>,
    /// Termination message of the `bundlegate-verify` container when it
    /// exited non-zero: the artifacts whose bytes in the pod are not git's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifier: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConditionInfo {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// The generation the condition was written for, where the controller
    /// says (KServe's LLMInferenceService does; a Deployment's do not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeploymentInfo {
    pub name: String,
    pub replicas: Option<i32>,
    pub updated: i32,
    pub ready: i32,
    pub available: i32,
    pub conditions: Vec<ConditionInfo>,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReplicaSetInfo {
    pub name: String,
    pub digest: Option<String>,
    pub replicas: i32,
    pub ready: i32,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventInfo {
    /// involvedObject kind and name.
    pub kind: String,
    pub object: String,
    #[serde(rename = "type")]
    pub type_: String,
    pub reason: String,
    pub message: String,
    pub count: i32,
}

/// Everything read about one release's workload at one moment: its
/// controllers and pods (chosen by ownership), the events about them, and
/// the look-alike pods left outside.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ServiceState {
    pub deployments: Vec<DeploymentInfo>,
    pub replica_sets: Vec<ReplicaSetInfo>,
    pub pods: Vec<PodInfo>,
    pub events: Vec<EventInfo>,
    /// Pods carrying the app's labels (or routed by its Service) that are
    /// not owned by the release: listed, never counted or blamed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outside: Vec<OutsidePod>,
    /// What routing was read from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub routing: String,
    /// Knative: latestCreatedRevisionName / latestReadyRevisionName.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latest_ready: Option<String>,
    /// The release's serving object's own status (an LLMInferenceService's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_status: Option<WorkloadStatus>,
}

/// One `metadata.ownerReferences[]` entry.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: Option<String>,
    pub controller: bool,
}

/// A controller object (Deployment, ReplicaSet, Knative Revision,
/// Configuration or Service, InferenceService) with its own owners.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectRef {
    pub kind: String,
    pub name: String,
    pub uid: Option<String>,
    pub owners: Vec<OwnerRef>,
}

/// One endpoint of an EndpointSlice: the Service it belongs to
/// (`kubernetes.io/service-name`), the pod it targets, and whether it takes
/// traffic (`conditions.ready`; unset means ready, per the API).
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointInfo {
    pub service: String,
    pub pod: String,
    pub ready: bool,
}

/// A Knative Service's routing (`status.traffic[]` summed per revision), and
/// the latest created vs ready revision.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KnativeTraffic {
    pub service: String,
    pub percent: BTreeMap<String, u32>,
    pub latest_created: Option<String>,
    pub latest_ready: Option<String>,
}

/// Everything read in the namespace at one moment, before ownership decides
/// what belongs to the release.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ClusterView {
    /// Controllers that can appear in an ownership chain.
    pub objects: Vec<ObjectRef>,
    pub deployments: Vec<DeploymentInfo>,
    pub replica_sets: Vec<ReplicaSetInfo>,
    /// Every pod of the namespace.
    pub pods: Vec<PodInfo>,
    pub events: Vec<EventInfo>,
    /// None: EndpointSlices could not be listed.
    pub endpoints: Option<Vec<EndpointInfo>>,
    pub traffic: Vec<KnativeTraffic>,
    /// The serving objects' own status where the watch reads it
    /// (LLMInferenceService: its conditions, for which generation).
    pub workload_status: Vec<WorkloadStatus>,
}

/// A serving object's status as its controller wrote it: the generation
/// the spec is at, the one the status describes, and its conditions (with
/// each one's own observedGeneration where the controller sets it).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WorkloadStatus {
    pub kind: String,
    pub name: String,
    pub generation: Option<i64>,
    pub observed_generation: Option<i64>,
    pub conditions: Vec<ConditionInfo>,
}

impl WorkloadStatus {
    /// From the object's generation and its `status` as the API serves it.
    pub(crate) fn of(kind: &str, name: &str, generation: Option<i64>, status: Option<&serde_json::Value>) -> Self {
        let text = |v: &serde_json::Value, k: &str| v.get(k).and_then(serde_json::Value::as_str).map(str::to_string);
        let conditions = status
            .and_then(|s| s.get("conditions"))
            .and_then(serde_json::Value::as_array)
            .map(|cs| {
                cs.iter()
                    .map(|c| ConditionInfo {
                        type_: text(c, "type").unwrap_or_default(),
                        status: text(c, "status").unwrap_or_default(),
                        reason: text(c, "reason"),
                        message: text(c, "message"),
                        observed_generation: c.get("observedGeneration").and_then(serde_json::Value::as_i64),
                    })
                    .collect()
            })
            .unwrap_or_default();
        WorkloadStatus {
            kind: kind.to_string(),
            name: name.to_string(),
            generation,
            observed_generation: status.and_then(|s| s.get("observedGeneration")).and_then(serde_json::Value::as_i64),
            conditions,
        }
    }
}

/// A pod the release's Service routes to but that is not owned by the
/// release, or one carrying the app's labels that is not part of it.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OutsidePod {
    pub name: String,
    pub why: String,
    /// The release's own Service routes to it.
    pub routed: bool,
}
