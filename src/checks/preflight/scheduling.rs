//! Where the new pod can go: each node's allocatable and what its pods already
//! request, then kube-scheduler's filters (NodeUnschedulable, nodeSelector,
//! TaintToleration, VolumeBinding node affinity, NodeResourcesFit). Separate so
//! each filter reads like the scheduler's own, apart from the rollout arithmetic.

use std::collections::{BTreeMap, HashMap};

use crate::bundle::Toleration;

use super::quantity::{self, add_into, pod_res, Res, Which};
use super::state::{ClusterState, Pod, Pv, Taint};
use super::Rollout;

/// `v1.Toleration.ToleratesTaint`.
pub fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if let Some(e) = t.effect.as_deref().filter(|e| !e.is_empty()) {
        if e != taint.effect {
            return false;
        }
    }
    let key = t.key.as_deref().unwrap_or("");
    match t.operator.as_deref().unwrap_or("Equal") {
        "Exists" => key.is_empty() || key == taint.key,
        "Equal" | "" => key == taint.key && t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

/// The DefaultTolerationSeconds admission plugin adds these to every pod.
fn default_tolerations() -> Vec<Toleration> {
    ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]
        .iter()
        .map(|k| Toleration {
            key: Some(k.to_string()),
            operator: Some("Exists".into()),
            value: None,
            effect: Some("NoExecute".into()),
        })
        .collect()
}

/// What the cluster already holds, read once.
pub(super) struct Usage {
    /// Allocatable per node; `None` when it could not be read.
    pub alloc: Vec<Option<Res>>,
    /// Requests of the pods on each node.
    pub used: Vec<Res>,
    pub pod_count: Vec<i128>,
    /// Pods per node worth naming in evidence: ours, and terminating ones holding resources.
    pub notable: Vec<Vec<String>>,
    /// The current release's running pods: (pod index, node index, requests).
    pub current: Vec<(usize, Option<usize>, Res)>,
    /// The current release's pods on no known node.
    pub unbound_current: usize,
}

impl Usage {
    /// Running pods of the release being replaced.
    pub(crate) fn running_current(&self) -> u32 {
        u32::try_from(self.current.len() + self.unbound_current).unwrap_or(u32::MAX)
    }

    /// How many new pods fit on node `ni` with `used_here` requested by `count`
    /// pods, and each resource that is short (resource, allocatable,
    /// requested, pod needs). Only for a node whose allocatable is known.
    pub(crate) fn free_on(
        &self,
        ni: usize,
        req: &Res,
        used_here: &Res,
        count: i128,
    ) -> (u64, Vec<(String, i128, i128, i128)>) {
        let a = self.alloc[ni].as_ref().expect("checked");
        let mut fits = u64::MAX;
        let mut short = Vec::new();
        for (k, need) in req.iter().filter(|(_, v)| **v > 0) {
            let have = a.get(k).copied().unwrap_or(0);
            let taken = used_here.get(k).copied().unwrap_or(0);
            let n = ((have - taken).max(0) / need) as u64;
            if n == 0 {
                short.push((k.clone(), have, taken, *need));
            }
            fits = fits.min(n);
        }
        if let Some(max_pods) = a.get("pods") {
            let n = (max_pods / 1000 - count).max(0) as u64;
            if n == 0 {
                short.push(("pods".into(), *max_pods, count * 1000, 1000));
            }
            fits = fits.min(n);
        }
        (fits, short)
    }
}

fn is_service_pod(p: &Pod, name: &str, ns: &str) -> bool {
    p.namespace == ns
        && (p.labels.get("app.kubernetes.io/name").map(String::as_str) == Some(name)
            || p.labels.get("serving.kserve.io/inferenceservice").map(String::as_str) == Some(name))
}

/// Reads every node's allocatable and sums what its pods request. What cannot
/// be read goes to `incomplete` (BG207), never counts as zero.
pub(super) fn tally(st: &ClusterState, name: &str, ns: &str, incomplete: &mut Vec<String>) -> Usage {
    // Index once: node name → position, then one pass over all pods.
    let mut alloc: Vec<Option<Res>> = Vec::with_capacity(st.nodes.len());
    let mut node_idx: HashMap<&str, usize> = HashMap::with_capacity(st.nodes.len());
    for (i, n) in st.nodes.iter().enumerate() {
        node_idx.insert(n.name.as_str(), i);
        if n.allocatable.is_empty() {
            incomplete.push(format!("node {}: no status.allocatable", n.name));
            alloc.push(None);
            continue;
        }
        let mut r = Res::new();
        let mut ok = true;
        for (k, v) in &n.allocatable {
            match quantity::parse_for(k, v) {
                Ok(q) => {
                    r.insert(k.clone(), q);
                }
                Err(e) => {
                    incomplete.push(format!("node {}: status.allocatable.{k}: {e}", n.name));
                    ok = false;
                }
            }
        }
        // A kubelet always reports cpu and memory; without them the node's
        // room is unknown (an absent extended resource is just zero).
        let missing: Vec<&str> = ["cpu", "memory"].into_iter().filter(|k| ok && !r.contains_key(*k)).collect();
        if !missing.is_empty() {
            incomplete.push(format!("node {}: status.allocatable has no {}", n.name, missing.join(" or ")));
            ok = false;
        }
        alloc.push(ok.then_some(r));
    }
    let mut used: Vec<Res> = vec![Res::new(); st.nodes.len()];
    let mut pod_count: Vec<i128> = vec![0; st.nodes.len()];
    // Pods per node worth naming in evidence: ours, and terminating ones holding resources.
    let mut notable: Vec<Vec<String>> = vec![Vec::new(); st.nodes.len()];
    let mut current: Vec<(usize, Option<usize>, Res)> = Vec::new(); // (pod index, node index, requests)
    let mut unbound_current = 0usize;
    for (pi, p) in st.pods.iter().enumerate() {
        if p.is_terminal() {
            continue;
        }
        // Without its spec a pod's node and requests are unknown: it may be
        // using any node, so the answer is unknown too (never "uses nothing").
        if p.containers.is_empty() {
            incomplete.push(format!("pod {}: no spec.containers (every pod has at least one): where it runs and what it requests are unknown", p.key()));
            continue;
        }
        let ours = is_service_pod(p, name, ns);
        let Some(ni) = p.node_name.as_deref().and_then(|n| node_idx.get(n).copied()) else {
            if ours && !p.terminating {
                unbound_current += 1;
            }
            continue;
        };
        let r = match pod_res(p, Which::Requests) {
            Ok(r) => r,
            Err(e) => {
                incomplete.push(format!("pod {}: {e}", p.key()));
                continue;
            }
        };
        if let Err(e) = add_into(&mut used[ni], &r) {
            incomplete.push(format!("node {}: {e}", st.nodes[ni].name));
            continue;
        }
        pod_count[ni] += 1;
        if ours && !p.terminating {
            notable[ni].push(format!("{} (current release of {name})", p.key()));
            current.push((pi, Some(ni), r));
        } else if p.terminating {
            let what: Vec<String> =
                r.iter().filter(|(_, v)| **v > 0).map(|(k, v)| format!("{} {k}", quantity::format(k, *v))).collect();
            notable[ni].push(format!(
                "{} (terminating: deletionTimestamp set, still holds {})",
                p.key(),
                what.join(", ")
            ));
        }
    }
    Usage { alloc, used, pod_count, notable, current, unbound_current }
}

#[derive(Clone)]
pub(super) struct NodeEval {
    pub idx: usize,
    /// Why the pod cannot go there regardless of load (selector, taint, …).
    pub excluded: Vec<String>,
    /// How many new pods fit in the free resources.
    pub fits: u64,
    /// (resource, allocatable, requested, pod needs) for each short resource.
    pub short: Vec<(String, i128, i128, i128)>,
    /// The resources short on a node excluded only by a volume's node
    /// affinity: the scheduler names these, not the volume.
    pub short_first: Vec<String>,
}

/// The nodes with no filter against the new pod.
pub(super) fn eligible(evals: &[NodeEval]) -> Vec<&NodeEval> {
    evals.iter().filter(|e| e.excluded.is_empty()).collect()
}

/// Evaluate every node once: the filters that exclude it, then how many new
/// pods fit on it. `pv_terms` are the bound PVs that restrict nodes.
pub(super) fn evaluate_nodes(cx: &Rollout, usage: &Usage, pv_terms: &[(&str, &Pv)]) -> Vec<NodeEval> {
    let (st, s) = (cx.st, cx.serving());
    let alloc = &usage.alloc;
    let mut tolerations = s.tolerations.clone();
    tolerations.extend(default_tolerations());
    let mut evals: Vec<NodeEval> = Vec::with_capacity(st.nodes.len());
    for (ni, n) in st.nodes.iter().enumerate() {
        let mut excluded = Vec::new();
        if alloc[ni].is_none() {
            excluded.push("allocatable unknown".to_string());
        }
        let unsched =
            Taint { key: "node.kubernetes.io/unschedulable".into(), value: None, effect: "NoSchedule".into() };
        if n.unschedulable && !tolerations.iter().any(|t| tolerates(t, &unsched)) {
            excluded.push("unschedulable (cordoned)".into());
        }
        // In the scheduler's filter order (NodeUnschedulable, TaintToleration,
        // NodeAffinity, NodeResourcesFit, VolumeBinding): its message counts
        // each node under the first filter that rejects it, and so does ours.
        for t in n.taints.iter().filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute") {
            if !tolerations.iter().any(|tol| tolerates(tol, t)) {
                excluded.push(format!("untolerated taint {t}"));
            }
        }
        for (k, v) in &s.node_selector {
            match n.labels.get(k) {
                Some(x) if x == v => {}
                Some(x) => excluded.push(format!("nodeSelector {k}={v} (node has {k}={x})")),
                None => excluded.push(format!("nodeSelector {k}={v} (label absent)")),
            }
        }
        // Resources are filtered before volumes: a node both short and out of
        // the volume's reach counts as short, as the scheduler counts it.
        let (fits, short) = if excluded.is_empty() {
            usage.free_on(ni, &cx.req, &usage.used[ni], usage.pod_count[ni])
        } else {
            (0, Vec::new())
        };
        for (claim, pv) in pv_terms {
            if !pv.node_affinity.iter().any(|term| term.matches(n)) {
                excluded.push(format!("volume {} of claim {claim} cannot attach here (PV node affinity)", pv.name));
            }
        }
        let (fits, short, short_first) = match (excluded.is_empty(), fits) {
            (true, _) => (fits, short, Vec::new()),
            (false, 0) => (0, Vec::new(), short.into_iter().map(|(k, ..)| k).collect()),
            (false, _) => (0, Vec::new(), Vec::new()),
        };
        evals.push(NodeEval { idx: ni, excluded, fits, short, short_first });
    }
    evals
}

/// Scheduler-style reason summary: "0/5 nodes are available: 3 Insufficient nvidia.com/gpu, …".
pub(super) fn scheduler_line(evals: &[NodeEval]) -> String {
    let total = evals.len();
    let eligible = eligible(evals);
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for e in evals {
        if !e.short_first.is_empty() {
            for k in &e.short_first {
                *reasons.entry(format!("Insufficient {k}")).or_insert(0) += 1;
            }
        } else if let Some(first) = e.excluded.first() {
            let kind = if first.starts_with("untolerated taint") {
                first.clone()
            } else if first.starts_with("nodeSelector") {
                "didn't match Pod's node selector".to_string()
            } else {
                first.clone()
            };
            *reasons.entry(kind).or_insert(0) += 1;
        } else if e.fits == 0 {
            for (k, ..) in &e.short {
                *reasons.entry(format!("Insufficient {k}")).or_insert(0) += 1;
            }
        }
    }
    let avail = eligible.iter().filter(|e| e.fits > 0).count();
    format!(
        "{avail}/{total} nodes are available: {}",
        reasons.iter().map(|(r, n)| format!("{n} {r}")).collect::<Vec<_>>().join(", ")
    )
}

/// One evidence line per node: why it is excluded, or what is short on it
/// and which pods hold it.
pub(super) fn node_lines(st: &ClusterState, usage: &Usage, evals: &[NodeEval], only_eligible: bool) -> Vec<String> {
    let node = |e: &NodeEval| &st.nodes[e.idx];
    let notable = &usage.notable;
    let mut v = Vec::new();
    for e in evals {
        let n = node(e);
        if !e.excluded.is_empty() {
            if !only_eligible {
                v.push(format!("{}: excluded: {}", n.name, e.excluded.join("; ")));
            }
            continue;
        }
        let mut parts: Vec<String> = Vec::new();
        for (k, have, taken, need) in &e.short {
            let pc = if *have > 0 { format!(" ({}%)", (taken * 100 + have / 2) / have) } else { String::new() };
            parts.push(format!(
                "{k} requested {}/{}{pc}, needs {} more",
                quantity::format(k, *taken),
                quantity::format(k, *have),
                quantity::format(k, *need)
            ));
        }
        if parts.is_empty() {
            parts.push(format!("fits {} new pod(s)", e.fits));
        }
        let mut line = format!("{}: {}", n.name, parts.join("; "));
        if !notable[e.idx].is_empty() {
            line.push_str(&format!("; pods holding it: {}", notable[e.idx].join(", ")));
        }
        v.push(line);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerations_follow_kubernetes() {
        let taint = Taint { key: "nvidia.com/gpu".into(), value: Some("present".into()), effect: "NoSchedule".into() };
        let t = |k: Option<&str>, op: &str, v: Option<&str>, e: Option<&str>| Toleration {
            key: k.map(String::from),
            operator: Some(op.into()),
            value: v.map(String::from),
            effect: e.map(String::from),
        };
        assert!(tolerates(&t(Some("nvidia.com/gpu"), "Exists", None, Some("NoSchedule")), &taint));
        assert!(tolerates(&t(None, "Exists", None, None), &taint));
        assert!(tolerates(&t(Some("nvidia.com/gpu"), "Equal", Some("present"), None), &taint));
        assert!(!tolerates(&t(Some("nvidia.com/gpu"), "Equal", Some("absent"), None), &taint));
        assert!(!tolerates(&t(Some("nvidia.com/gpu"), "Exists", None, Some("NoExecute")), &taint));
    }

    /// How many new pods fit on a node: per requested resource (a zero
    /// request is no constraint), what is left after the pods there, and
    /// the node's pod slots; each resource that is short is named.
    #[test]
    fn new_pods_that_fit_on_a_node() {
        let res = |kv: &[(&str, i128)]| kv.iter().map(|(k, v)| (k.to_string(), *v)).collect::<Res>();
        let usage = Usage {
            alloc: vec![Some(res(&[("cpu", 8000), ("nvidia.com/gpu", 2000), ("pods", 110_000)]))],
            used: vec![Res::new()],
            pod_count: vec![0],
            notable: vec![vec![]],
            current: vec![],
            unbound_current: 0,
        };
        let req = res(&[("cpu", 2000), ("nvidia.com/gpu", 1000), ("memory", 0)]);
        assert_eq!(usage.free_on(0, &req, &res(&[("cpu", 3000), ("nvidia.com/gpu", 1000)]), 5), (1, vec![]));
        assert_eq!(usage.free_on(0, &req, &res(&[("cpu", 1000)]), 5), (2, vec![]));
        let (n, short) = usage.free_on(0, &req, &res(&[("nvidia.com/gpu", 3000)]), 5);
        assert_eq!((n, short), (0, vec![("nvidia.com/gpu".to_string(), 2000, 3000, 1000)]));
        let (n, short) = usage.free_on(0, &res(&[("cpu", 1000)]), &Res::new(), 110);
        assert_eq!((n, short), (0, vec![("pods".to_string(), 110_000, 110_000, 1000)]));
        assert_eq!(usage.free_on(0, &res(&[("cpu", 1000)]), &Res::new(), 108).0, 2);
        // A resource the node does not list is short.
        let (n, short) = usage.free_on(0, &res(&[("example.com/fpga", 1000)]), &Res::new(), 0);
        assert_eq!((n, short.len()), (0, 1));
    }

    /// The service's pods: in its namespace, named by either label.
    #[test]
    fn the_services_pods_by_namespace_and_either_label() {
        let pod = |ns: &str, label: &str, value: &str| Pod {
            namespace: ns.into(),
            labels: [(label.to_string(), value.to_string())].into(),
            ..Pod::default()
        };
        assert!(is_service_pod(&pod("ml", "app.kubernetes.io/name", "chat"), "chat", "ml"));
        assert!(is_service_pod(&pod("ml", "serving.kserve.io/inferenceservice", "chat"), "chat", "ml"));
        assert!(!is_service_pod(&pod("other", "app.kubernetes.io/name", "chat"), "chat", "ml"));
        assert!(!is_service_pod(&pod("ml", "app.kubernetes.io/name", "chat-2"), "chat", "ml"));
        assert!(!is_service_pod(&pod("ml", "serving.kserve.io/inferenceservice", "chat-2"), "chat", "ml"));
        assert!(!is_service_pod(&pod("ml", "app", "chat"), "chat", "ml"));
    }

    /// The current release's pods on no known node (Pending, or on a node
    /// the snapshot does not list) still count as running ones to replace;
    /// a terminating one, or another service's, does not.
    #[test]
    fn unbound_pods_of_the_service_count_as_current() {
        let pod = |name: &str, app: &str, node: Option<&str>, terminating: bool| Pod {
            namespace: "ml".into(),
            name: name.into(),
            node_name: node.map(String::from),
            terminating,
            labels: [("app.kubernetes.io/name".to_string(), app.to_string())].into(),
            containers: vec![crate::checks::preflight::ContainerResources::default()],
            ..Pod::default()
        };
        let st = ClusterState {
            pods: vec![
                pod("a", "chat", None, false),
                pod("b", "chat", Some("ghost"), false),
                pod("c", "chat", None, true),
                pod("d", "other", None, false),
            ],
            ..ClusterState::default()
        };
        let mut incomplete = Vec::new();
        let usage = tally(&st, "chat", "ml", &mut incomplete);
        assert!(incomplete.is_empty(), "{incomplete:?}");
        assert_eq!((usage.unbound_current, usage.running_current()), (2, 2));
    }
}
