//! Cluster state for preflight (issue #4): a `kubectl get … -o yaml|json`
//! snapshot file, or a live, read-only listing through `kube`. Both paths go
//! through the same item parser, so they produce the same plain
//! [`ClusterState`].

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::bundle::IntOrPercent;
use crate::checks::preflight::{
    ClusterState, ContainerResources, LabelSelector, Node, Pdb, Pod, Pv, Pvc, Quantities, Quota, Requirement, SelectorTerm, Taint,
};

// ---- the subset of Kubernetes objects preflight reads ------------------------------
// Unknown fields are ignored (real objects carry far more); `null` reads as empty.

fn nd<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A quantity as kubectl prints it (always a string) or as a hand-written
/// file may have it (a bare number).
#[derive(Debug, Default)]
struct Qty(String);

impl<'de> Deserialize<'de> for Qty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum SN {
            S(String),
            I(i64),
            F(f64),
        }
        Ok(Qty(match SN::deserialize(d).map_err(|_| serde::de::Error::custom("expected a quantity (string or number)"))? {
            SN::S(s) => s,
            SN::I(i) => i.to_string(),
            SN::F(f) => f.to_string(),
        }))
    }
}

fn qmap(m: BTreeMap<String, Qty>) -> Quantities {
    m.into_iter().map(|(k, v)| (k, v.0)).collect()
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    #[serde(deserialize_with = "nd")]
    labels: BTreeMap<String, String>,
    deletion_timestamp: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawNode {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: NodeSpec,
    #[serde(deserialize_with = "nd")]
    status: NodeStatus,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NodeSpec {
    unschedulable: Option<bool>,
    #[serde(deserialize_with = "nd")]
    taints: Vec<RawTaint>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTaint {
    key: String,
    value: Option<String>,
    effect: String,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct NodeStatus {
    #[serde(deserialize_with = "nd")]
    allocatable: BTreeMap<String, Qty>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPod {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: PodSpec,
    #[serde(deserialize_with = "nd")]
    status: PodStatus,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PodSpec {
    node_name: Option<String>,
    #[serde(deserialize_with = "nd")]
    containers: Vec<RawContainer>,
    #[serde(deserialize_with = "nd")]
    init_containers: Vec<RawContainer>,
    #[serde(deserialize_with = "nd")]
    overhead: BTreeMap<String, Qty>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawContainer {
    #[serde(deserialize_with = "nd")]
    resources: RawResources,
    restart_policy: Option<String>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct RawResources {
    #[serde(deserialize_with = "nd")]
    requests: BTreeMap<String, Qty>,
    #[serde(deserialize_with = "nd")]
    limits: BTreeMap<String, Qty>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PodStatus {
    phase: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPvc {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: PvcSpec,
    #[serde(deserialize_with = "nd")]
    status: PvcStatus,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PvcSpec {
    #[serde(deserialize_with = "nd")]
    access_modes: Vec<String>,
    volume_name: Option<String>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PvcStatus {
    phase: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPv {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: PvSpec,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PvSpec {
    node_affinity: Option<PvNodeAffinity>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PvNodeAffinity {
    required: Option<RawNodeSelector>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelector {
    #[serde(deserialize_with = "nd")]
    node_selector_terms: Vec<RawTerm>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTerm {
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
    #[serde(deserialize_with = "nd")]
    match_fields: Vec<RawReq>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawReq {
    key: String,
    /// Only in quota scope selectors.
    scope_name: String,
    operator: String,
    #[serde(deserialize_with = "nd")]
    values: Vec<String>,
}
impl RawReq {
    fn plain(self) -> Requirement {
        Requirement { key: if self.key.is_empty() { self.scope_name } else { self.key }, operator: self.operator, values: self.values }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawQuota {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: QuotaSpec,
    status: Option<QuotaStatus>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct QuotaSpec {
    #[serde(deserialize_with = "nd")]
    hard: BTreeMap<String, Qty>,
    #[serde(deserialize_with = "nd")]
    scopes: Vec<String>,
    scope_selector: Option<ScopeSelector>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ScopeSelector {
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct QuotaStatus {
    used: Option<BTreeMap<String, Qty>>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawPdb {
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: PdbSpec,
    #[serde(deserialize_with = "nd")]
    status: PdbStatus,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PdbSpec {
    selector: Option<RawLabelSelector>,
    min_available: Option<IntOrStr>,
    max_unavailable: Option<IntOrStr>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawLabelSelector {
    #[serde(deserialize_with = "nd")]
    match_labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct PdbStatus {
    disruptions_allowed: Option<i64>,
}
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum IntOrStr {
    I(u32),
    S(String),
}

// ---- items → plain data ----------------------------------------------------------------

fn typed<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(v).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            e.inner().to_string()
        } else {
            format!("{path}: {}", e.inner())
        }
    })
}

fn res(r: RawResources) -> ContainerResources {
    ContainerResources { requests: qmap(r.requests), limits: qmap(r.limits) }
}

/// Add one object to the state. `kind_hint` is used when the item carries no
/// kind (items of a typed `PodList`, as the API server returns them).
fn add_item(st: &mut ClusterState, item: Value, kind_hint: Option<&str>) -> Result<(), String> {
    let Value::Object(map) = &item else {
        return Err("is not an object".into());
    };
    let kind = match map.get("kind") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        Some(_) => return Err("`kind` is not a string".into()),
        None => kind_hint.map(String::from).ok_or("has no `kind`")?,
    };
    if kind_hint.is_none() && !matches!(map.get("apiVersion"), Some(Value::String(a)) if !a.is_empty()) {
        return Err(format!("({kind}) has no `apiVersion`"));
    }
    let name_of = |m: &Meta| -> Result<String, String> { m.name.clone().filter(|n| !n.is_empty()).ok_or_else(|| format!("({kind}) has no metadata.name")) };
    let label = map.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).map(|n| format!(" {n}")).unwrap_or_default();
    let ctx = |e: String| format!("({kind}{label}) {e}");
    match kind.as_str() {
        "Node" => {
            let n: RawNode = typed(item).map_err(ctx)?;
            st.nodes.push(Node {
                name: name_of(&n.metadata)?,
                labels: n.metadata.labels,
                taints: n.spec.taints.into_iter().map(|t| Taint { key: t.key, value: t.value, effect: t.effect }).collect(),
                unschedulable: n.spec.unschedulable.unwrap_or(false),
                allocatable: qmap(n.status.allocatable),
            });
        }
        "Pod" => {
            let p: RawPod = typed(item).map_err(ctx)?;
            st.pods.push(Pod {
                name: name_of(&p.metadata)?,
                namespace: p.metadata.namespace.unwrap_or_else(|| "default".into()),
                node_name: p.spec.node_name.filter(|n| !n.is_empty()),
                phase: p.status.phase,
                terminating: p.metadata.deletion_timestamp.is_some(),
                labels: p.metadata.labels,
                containers: p.spec.containers.into_iter().map(|c| res(c.resources)).collect(),
                init_containers: p.spec.init_containers.into_iter().map(|c| (res(c.resources), c.restart_policy.as_deref() == Some("Always"))).collect(),
                overhead: qmap(p.spec.overhead),
            });
        }
        "PersistentVolumeClaim" => {
            let c: RawPvc = typed(item).map_err(ctx)?;
            st.pvcs.push(Pvc {
                name: name_of(&c.metadata)?,
                namespace: c.metadata.namespace.unwrap_or_else(|| "default".into()),
                access_modes: c.spec.access_modes,
                volume_name: c.spec.volume_name.filter(|v| !v.is_empty()),
                phase: c.status.phase,
            });
        }
        "PersistentVolume" => {
            let v: RawPv = typed(item).map_err(ctx)?;
            let terms = v.spec.node_affinity.and_then(|a| a.required).map(|r| r.node_selector_terms).unwrap_or_default();
            st.pvs.push(Pv {
                name: name_of(&v.metadata)?,
                node_affinity: terms
                    .into_iter()
                    .map(|t| SelectorTerm {
                        requirements: t
                            .match_expressions
                            .into_iter()
                            .map(RawReq::plain)
                            .chain(t.match_fields.into_iter().map(|f| Requirement { key: "metadata.name".into(), ..f.plain() }))
                            .collect(),
                    })
                    .collect(),
            });
        }
        "ResourceQuota" => {
            let q: RawQuota = typed(item).map_err(ctx)?;
            st.quotas.push(Quota {
                name: name_of(&q.metadata)?,
                namespace: q.metadata.namespace.unwrap_or_else(|| "default".into()),
                hard: qmap(q.spec.hard),
                used: q.status.and_then(|s| s.used).map(qmap),
                scopes: q.spec.scopes,
                scope_selector: q.spec.scope_selector.map(|s| s.match_expressions.into_iter().map(RawReq::plain).collect()).unwrap_or_default(),
            });
        }
        "PodDisruptionBudget" => {
            let p: RawPdb = typed(item).map_err(ctx)?;
            let ip = |x: Option<IntOrStr>| {
                x.map(|v| match v {
                    IntOrStr::I(i) => IntOrPercent::Int(i),
                    IntOrStr::S(s) => s.parse::<u32>().map(IntOrPercent::Int).unwrap_or(IntOrPercent::Str(s)),
                })
            };
            st.pdbs.push(Pdb {
                name: name_of(&p.metadata)?,
                namespace: p.metadata.namespace.unwrap_or_else(|| "default".into()),
                selector: p.spec.selector.map(|s| LabelSelector {
                    match_labels: s.match_labels,
                    match_expressions: s.match_expressions.into_iter().map(RawReq::plain).collect(),
                }),
                min_available: ip(p.spec.min_available),
                max_unavailable: ip(p.spec.max_unavailable),
                disruptions_allowed: p.status.disruptions_allowed,
            });
        }
        other => *st.ignored.entry(other.to_string()).or_insert(0) += 1,
    }
    Ok(())
}

/// Refuse state that cannot support an answer: no nodes (or no pods) means the
/// snapshot is partial, and a partial cluster must never PASS.
fn require_complete(st: &ClusterState, origin: &str) -> Result<()> {
    if st.nodes.is_empty() {
        bail!("{origin}: no Node objects; preflight needs every node (take it with `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets -A -o yaml`)");
    }
    if st.pods.is_empty() {
        bail!("{origin}: no Pod objects, yet every cluster runs system pods; was the snapshot taken without `pods` or without `-A`?");
    }
    Ok(())
}

/// Parse snapshot text. `display` names the file in every error.
pub fn parse_snapshot(display: &str, text: &str) -> Result<ClusterState> {
    if text.trim().is_empty() {
        bail!("{display}: the snapshot is empty");
    }
    // JSON is YAML, but the JSON parser is several times faster on 20k pods.
    let doc: Value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| anyhow!("{display}: not valid JSON: {e}"))?
    } else {
        serde_yaml_ng::from_str(text).map_err(|e| anyhow!("{display}: not valid YAML: {e}"))?
    };
    let Value::Object(mut top) = doc else {
        bail!("{display}: not a Kubernetes List (the document is not a mapping)");
    };
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if kind.is_empty() {
        bail!("{display}: not a Kubernetes List (no `kind`); expected the output of `kubectl get … -o yaml`");
    }
    if kind != "List" && !kind.ends_with("List") {
        bail!("{display}: not a Kubernetes List (kind: {kind}); expected `kind: List` as printed by `kubectl get nodes,pods,… -A -o yaml`");
    }
    // A typed list (`PodList`) omits each item's kind.
    let hint = kind.strip_suffix("List").filter(|k| !k.is_empty()).map(String::from);
    let items = match top.remove("items") {
        Some(Value::Array(a)) => a,
        Some(Value::Null) | None => bail!("{display}: the List has no `items`"),
        Some(_) => bail!("{display}: `items` is not a list"),
    };
    let mut st = ClusterState { source: format!("snapshot {display}"), ..Default::default() };
    for (i, item) in items.into_iter().enumerate() {
        add_item(&mut st, item, hint.as_deref()).map_err(|e| anyhow!("{display}: items[{i}] {e}"))?;
    }
    require_complete(&st, display)?;
    Ok(st)
}

pub fn load_snapshot(path: &Path) -> Result<ClusterState> {
    let display = path.display().to_string();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading cluster snapshot {display}"))?;
    parse_snapshot(&display, &text)
}

// ---- live, read-only ------------------------------------------------------------------------

/// What to read besides the cluster-wide nodes and pods.
pub struct LiveScope<'a> {
    pub namespace: &'a str,
    /// PVC names the bundle mounts; their bound PVs are fetched by name.
    pub claims: &'a [String],
}

/// List every page of one resource (GET only).
async fn list_all<K>(api: kube::Api<K>, what: &str) -> Result<Vec<K>>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug,
{
    let mut lp = kube::api::ListParams::default().limit(500);
    let mut out = Vec::new();
    loop {
        let page = api.list(&lp).await.with_context(|| format!("listing {what}"))?;
        out.extend(page.items);
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => break,
        }
    }
    Ok(out)
}

fn push_all<K: serde::Serialize>(st: &mut ClusterState, what: &str, kind: &str, items: Vec<K>) -> Result<()> {
    for (i, it) in items.into_iter().enumerate() {
        let v = serde_json::to_value(&it).with_context(|| format!("encoding {what}[{i}]"))?;
        add_item(st, v, Some(kind)).map_err(|e| anyhow!("live {what}[{i}] {e}"))?;
    }
    Ok(())
}

async fn gather(scope: &LiveScope<'_>) -> Result<ClusterState> {
    use k8s_openapi::api::core::v1::{Node as KNode, PersistentVolume, PersistentVolumeClaim, Pod as KPod, ResourceQuota};
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use kube::Api;

    let config = kube::Config::infer().await.context("loading kubeconfig or in-cluster config")?;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    let ns = scope.namespace;
    let mut st = ClusterState { source: format!("live {server}"), ..Default::default() };
    // Read-only: list and get, nothing else.
    let nodes = list_all(Api::<KNode>::all(client.clone()), "nodes").await?;
    let pods = list_all(Api::<KPod>::all(client.clone()), "pods (all namespaces)").await?;
    let pvcs = list_all(Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns), &format!("persistentvolumeclaims in {ns}")).await?;
    let quotas = list_all(Api::<ResourceQuota>::namespaced(client.clone(), ns), &format!("resourcequotas in {ns}")).await?;
    let pdbs = list_all(Api::<PodDisruptionBudget>::namespaced(client.clone(), ns), &format!("poddisruptionbudgets in {ns}")).await?;
    push_all(&mut st, "nodes", "Node", nodes)?;
    push_all(&mut st, "pods", "Pod", pods)?;
    push_all(&mut st, "persistentvolumeclaims", "PersistentVolumeClaim", pvcs)?;
    push_all(&mut st, "resourcequotas", "ResourceQuota", quotas)?;
    push_all(&mut st, "poddisruptionbudgets", "PodDisruptionBudget", pdbs)?;
    // PVs are cluster-scoped and often not readable by a namespaced identity;
    // only their node affinity matters, so a denied read just narrows nothing.
    let pv_api = Api::<PersistentVolume>::all(client);
    let wanted: Vec<String> =
        st.pvcs.iter().filter(|c| scope.claims.contains(&c.name)).filter_map(|c| c.volume_name.clone()).collect();
    for name in wanted {
        match pv_api.get_opt(&name).await {
            Ok(Some(pv)) => push_all(&mut st, "persistentvolumes", "PersistentVolume", vec![pv])?,
            Ok(None) => {}
            Err(e) => tracing::warn!("reading PersistentVolume {name}: {e}; its node affinity is not considered"),
        }
    }
    require_complete(&st, &st.source.clone())?;
    Ok(st)
}

/// Gather live state. Runs its own runtime on a separate thread so it works
/// whether or not the caller is already inside one.
pub fn gather_live(scope: &LiveScope<'_>) -> Result<ClusterState> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")?;
            rt.block_on(async {
                tokio::time::timeout(std::time::Duration::from_secs(60), gather(scope))
                    .await
                    .map_err(|_| anyhow!("reading the cluster timed out after 60s"))?
            })
        })
        .join()
        .map_err(|p| {
            let msg = p.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| p.downcast_ref::<String>().cloned()).unwrap_or_default();
            anyhow!("the cluster reader panicked: {msg}")
        })?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_list_items_may_omit_kind() {
        let st = parse_snapshot(
            "s.json",
            r#"{"apiVersion":"v1","kind":"NodeList","items":[{"metadata":{"name":"a"},"status":{"allocatable":{"cpu":4}}}]}"#,
        );
        // A NodeList alone has no pods: refused, naming the file.
        let e = st.unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("no Pod objects"), "{e}");
    }

    #[test]
    fn errors_name_item_and_field() {
        let e = parse_snapshot(
            "s.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{resources: {requests: [1]}}]}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.yaml: items[1] (Pod p) spec.containers[0].resources.requests"), "{e}");
    }
}
