//! The cluster as plain data (what the adapter read, quantities still text)
//! and the label/selector matching Kubernetes defines on it. Separate so the
//! adapter and every pass share one model without sharing any judgment.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::bundle::IntOrPercent;

/// Cluster state as plain data: what the checks need and nothing else.
/// Quantities stay text so the checks decide (and report) what is unparseable.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClusterState {
    /// Where it came from, for evidence (`snapshot x.yaml`, `live https://…`).
    pub source: String,
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    pub pvcs: Vec<Pvc>,
    pub pvs: Vec<Pv>,
    pub quotas: Vec<Quota>,
    pub pdbs: Vec<Pdb>,
    /// Objects of kinds preflight does not use (Deployment, ReplicaSet, …), by kind.
    pub ignored: BTreeMap<String, usize>,
}

pub type Quantities = BTreeMap<String, String>;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Node {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub allocatable: Quantities,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Taint {
    pub key: String,
    pub value: Option<String>,
    pub effect: String,
}

impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.value {
            Some(v) if !v.is_empty() => write!(f, "{}={}:{}", self.key, v, self.effect),
            _ => write!(f, "{}:{}", self.key, self.effect),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct ContainerResources {
    pub requests: Quantities,
    pub limits: Quantities,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    pub node_name: Option<String>,
    pub phase: Option<String>,
    /// `metadata.deletionTimestamp` is set: the pod still holds its node's
    /// resources and devices until the kubelet reports it gone.
    pub terminating: bool,
    pub labels: BTreeMap<String, String>,
    pub containers: Vec<ContainerResources>,
    /// Init containers; `true` marks a sidecar (`restartPolicy: Always`), which
    /// keeps its requests for the pod's whole life.
    pub init_containers: Vec<(ContainerResources, bool)>,
    pub overhead: Quantities,
}

impl Pod {
    pub(crate) fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
    /// Succeeded/Failed pods no longer count against a node or a quota.
    pub(crate) fn is_terminal(&self) -> bool {
        matches!(self.phase.as_deref(), Some("Succeeded") | Some("Failed"))
    }
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Pvc {
    pub namespace: String,
    pub name: String,
    pub access_modes: Vec<String>,
    pub volume_name: Option<String>,
    pub phase: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Pv {
    pub name: String,
    /// Required node affinity terms (ORed); empty means any node.
    pub node_affinity: Vec<SelectorTerm>,
}

/// One `nodeSelectorTerm`: requirements ANDed. `metadata.name` field
/// requirements are kept as a requirement on the key `metadata.name`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SelectorTerm {
    pub requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Requirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Quota {
    pub namespace: String,
    pub name: String,
    pub hard: Quantities,
    /// `status.used`; `None` when the quota controller has not reported yet.
    pub used: Option<Quantities>,
    pub scopes: Vec<String>,
    /// `scopeSelector.matchExpressions` with `key` = scopeName.
    pub scope_selector: Vec<Requirement>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<Requirement>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Pdb {
    pub namespace: String,
    pub name: String,
    /// `None`: selects nothing (a null selector in policy/v1).
    pub selector: Option<LabelSelector>,
    pub min_available: Option<IntOrPercent>,
    pub max_unavailable: Option<IntOrPercent>,
    pub disruptions_allowed: Option<i64>,
}

fn requirement_matches(r: &Requirement, value: Option<&str>) -> bool {
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| r.values.iter().any(|x| x == v)),
        "NotIn" => value.is_none_or(|v| !r.values.iter().any(|x| x == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        // Gt/Lt compare integers (node affinity only).
        "Gt" | "Lt" => {
            let (Some(v), Some(x)) =
                (value.and_then(|v| v.parse::<i64>().ok()), r.values.first().and_then(|x| x.parse::<i64>().ok()))
            else {
                return false;
            };
            if r.operator == "Gt" {
                v > x
            } else {
                v < x
            }
        }
        _ => false,
    }
}

impl LabelSelector {
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels.iter().all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| requirement_matches(r, labels.get(&r.key).map(String::as_str)))
    }
}

impl SelectorTerm {
    pub(super) fn matches(&self, node: &Node) -> bool {
        self.requirements.iter().all(|r| {
            let v = if r.key == "metadata.name" {
                Some(node.name.as_str())
            } else {
                node.labels.get(&r.key).map(String::as_str)
            };
            requirement_matches(r, v)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_selectors() {
        let labels = BTreeMap::from([("app.kubernetes.io/name".to_string(), "llm".to_string())]);
        let sel = LabelSelector {
            match_labels: labels.clone(),
            match_expressions: vec![Requirement {
                key: "tier".into(),
                operator: "DoesNotExist".into(),
                values: vec![],
            }],
        };
        assert!(sel.matches(&labels));
        assert!(LabelSelector::default().matches(&labels), "an empty selector selects everything");
        let other = LabelSelector { match_labels: BTreeMap::from([("app".into(), "x".into())]), ..Default::default() };
        assert!(!other.matches(&labels));
    }

    /// Each operator as Kubernetes defines it (labels.Selector and node
    /// affinity's Gt/Lt), against a label that is set, absent, or not a number.
    #[test]
    fn each_requirement_operator() {
        let r = |op: &str, values: &[&str]| Requirement {
            key: "k".into(),
            operator: op.into(),
            values: values.iter().map(|v| v.to_string()).collect(),
        };
        let cases: &[(Requirement, Option<&str>, bool)] = &[
            (r("In", &["a", "b"]), Some("b"), true),
            (r("In", &["a", "b"]), Some("c"), false),
            (r("In", &["a"]), None, false),
            (r("NotIn", &["a"]), Some("a"), false),
            (r("NotIn", &["a"]), Some("c"), true),
            (r("NotIn", &["a"]), None, true),
            (r("Exists", &[]), Some(""), true),
            (r("Exists", &[]), None, false),
            (r("DoesNotExist", &[]), Some("x"), false),
            (r("DoesNotExist", &[]), None, true),
            (r("Gt", &["3"]), Some("4"), true),
            (r("Gt", &["3"]), Some("3"), false),
            (r("Gt", &["3"]), Some("x"), false),
            (r("Gt", &["x"]), Some("4"), false),
            (r("Gt", &["3"]), None, false),
            (r("Lt", &["3"]), Some("2"), true),
            (r("Lt", &["3"]), Some("3"), false),
            (r("Lt", &["3"]), Some("4"), false),
            // Operators are case-sensitive; an unknown one matches nothing.
            (r("in", &["a"]), Some("a"), false),
            (r("", &[]), Some("a"), false),
        ];
        for (req, value, want) in cases {
            assert_eq!(requirement_matches(req, *value), *want, "{} {:?} on {value:?}", req.operator, req.values);
        }
        // A node term reads `metadata.name` from the node's name.
        let node =
            Node { name: "gpu-a".into(), labels: BTreeMap::from([("zone".into(), "b".into())]), ..Node::default() };
        let term = |key: &str, v: &str| SelectorTerm {
            requirements: vec![Requirement { key: key.into(), operator: "In".into(), values: vec![v.into()] }],
        };
        assert!(term("metadata.name", "gpu-a").matches(&node));
        assert!(!term("metadata.name", "b").matches(&node));
        assert!(term("zone", "b").matches(&node));
    }

    /// A taint with an empty value prints as kubectl prints it: no `=`.
    #[test]
    fn taints_print_as_kubectl_does() {
        let t = |v: Option<&str>| {
            Taint { key: "k".into(), value: v.map(String::from), effect: "NoSchedule".into() }.to_string()
        };
        assert_eq!(t(Some("v")), "k=v:NoSchedule");
        assert_eq!(t(Some("")), "k:NoSchedule");
        assert_eq!(t(None), "k:NoSchedule");
    }
}
