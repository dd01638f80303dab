//! Cluster state for preflight: a `kubectl get … -o yaml|json`
//! snapshot file, or a live, read-only listing through `kube`. Both paths go
//! through the same item parser (`parse::snapshot`), so they produce the same
//! plain [`ClusterState`].

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use serde::de::DeserializeOwned;

use crate::checks::preflight::ClusterState;
use crate::parse::snapshot::parse_snapshot;
use crate::parse::snapshot::{add_item, require_complete};

/// The largest snapshot read (bytes). A 5,000-node / 200,000-pod cluster
/// prints about 400 MiB of YAML; beyond this the file is refused rather than
/// read into memory without bound. Documented in docs/reliability.md.
pub(crate) const MAX_SNAPSHOT_BYTES: u64 = crate::yaml_guard::MAX_SNAPSHOT_BYTES as u64;

pub(crate) fn load_snapshot(path: &Path) -> Result<ClusterState> {
    use crate::adapters::bundle_files::{read_text, FileKind};
    let display = path.display().to_string();
    let text = read_text(path, FileKind::Snapshot).map_err(|e| {
        if e.kind() == std::io::ErrorKind::FileTooLarge {
            anyhow!("{display}: the snapshot is larger than {} MiB, the limit preflight reads; take it per namespace or trim it with `kubectl get … -o yaml`", MAX_SNAPSHOT_BYTES >> 20)
        } else {
            anyhow!("{display}: reading cluster snapshot: {e}")
        }
    })?;
    parse_snapshot(&display, &text)
}

// ---- live, read-only ------------------------------------------------------------------------

/// What to read besides the cluster-wide nodes and pods.
pub(crate) struct LiveScope<'a> {
    pub namespace: &'a str,
    /// PVC names the bundle mounts; their bound PVs are fetched by name.
    pub claims: &'a [String],
}

/// A client from the kubeconfig (KUBECONFIG) or the in-cluster config, and
/// the server URL for reports. Every request is bounded: a hung API server
/// must end in an error, not a CI job that waits for its own time limit.
/// `t` (BUNDLEGATE_KUBE_TIMEOUT, default 30s) bounds connect and each read.
pub(crate) async fn kube_client(t: std::time::Duration) -> Result<(kube::Client, String)> {
    let mut config = kube::Config::infer().await.context("loading kubeconfig or in-cluster config")?;
    config.connect_timeout = Some(t);
    config.read_timeout = Some(t);
    config.write_timeout = Some(t);
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).context("building the Kubernetes client")?;
    Ok((client, server))
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

async fn gather(client: kube::Client, server: &str, scope: &LiveScope<'_>) -> Result<ClusterState> {
    use k8s_openapi::api::core::v1::{
        Node as KNode, PersistentVolume, PersistentVolumeClaim, Pod as KPod, ResourceQuota,
    };
    use k8s_openapi::api::policy::v1::PodDisruptionBudget;
    use kube::Api;

    let ns = scope.namespace;
    let mut st = ClusterState { source: format!("live {server}"), ..Default::default() };
    // Read-only: list and get, nothing else.
    let nodes = list_all(Api::<KNode>::all(client.clone()), "nodes").await?;
    let pods = list_all(Api::<KPod>::all(client.clone()), "pods (all namespaces)").await?;
    let pvcs = list_all(
        Api::<PersistentVolumeClaim>::namespaced(client.clone(), ns),
        &format!("persistentvolumeclaims in {ns}"),
    )
    .await?;
    let quotas =
        list_all(Api::<ResourceQuota>::namespaced(client.clone(), ns), &format!("resourcequotas in {ns}")).await?;
    let pdbs =
        list_all(Api::<PodDisruptionBudget>::namespaced(client.clone(), ns), &format!("poddisruptionbudgets in {ns}"))
            .await?;
    push_all(&mut st, "nodes", "Node", nodes)?;
    push_all(&mut st, "pods", "Pod", pods)?;
    push_all(&mut st, "persistentvolumeclaims", "PersistentVolumeClaim", pvcs)?;
    push_all(&mut st, "resourcequotas", "ResourceQuota", quotas)?;
    push_all(&mut st, "poddisruptionbudgets", "PodDisruptionBudget", pdbs)?;
    // The PVs the bundle's claims are bound to (their node affinity decides
    // where the pod can run), each by name. One that cannot be read stays
    // out of the state, and preflight says the answer is unknown (BG207).
    let pv_api = Api::<PersistentVolume>::all(client);
    let wanted: Vec<String> =
        st.pvcs.iter().filter(|c| scope.claims.contains(&c.name)).filter_map(|c| c.volume_name.clone()).collect();
    for name in wanted {
        match pv_api.get_opt(&name).await {
            Ok(Some(pv)) => push_all(&mut st, "persistentvolumes", "PersistentVolume", vec![pv])?,
            Ok(None) => {}
            Err(e) => tracing::warn!("reading PersistentVolume {name}: {e}"),
        }
    }
    require_complete(&st, &st.source.clone())?;
    Ok(st)
}

/// Gather live state over `client` (`server` names it). Many requests, each
/// bounded by `kube_timeout`: the whole is bounded too.
pub(crate) async fn gather_live(
    client: kube::Client,
    server: &str,
    scope: &LiveScope<'_>,
    kube_timeout: std::time::Duration,
) -> Result<ClusterState> {
    let total = (kube_timeout * 4).max(std::time::Duration::from_secs(5));
    tokio::time::timeout(total, gather(client, server, scope))
        .await
        .map_err(|_| anyhow!("reading the cluster timed out after {}s", total.as_secs()))?
}
