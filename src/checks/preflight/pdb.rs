//! PodDisruptionBudgets that select the service's pods and allow no
//! disruption: node drains and evictions block. Separate because it judges
//! the steady state after the rollout, not the rollout itself.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::bundle::{Loaded, ServingFormat};
use crate::diag::Code;
use crate::diag::Diagnostic;

use super::scheduling::Usage;
use super::surge::scaled;
use super::{pct, Rollout};

/// Labels the renderer (and KServe) put on this service's pods.
fn service_labels(l: &Loaded) -> BTreeMap<String, String> {
    let b = &l.bundle;
    let mut m = BTreeMap::from([
        ("app.kubernetes.io/name".to_string(), b.metadata.name.clone()),
        ("app.kubernetes.io/managed-by".to_string(), "bundlegate".to_string()),
        ("bundlegate.dev/release-version".to_string(), b.metadata.version.clone()),
    ]);
    // An LLMInferenceService's pods carry the workload labels (`spec.labels`), not an InferenceService's.
    if matches!(b.spec.serving.format, ServingFormat::KserveModelspec | ServingFormat::KserveCustom) {
        m.insert("serving.kserve.io/inferenceservice".into(), b.metadata.name.clone());
        m.insert("component".into(), "predictor".into());
    }
    m
}

/// One diagnostic per budget that allows no disruption, and the rows for the
/// JSON data. A budget whose numbers cannot be read goes to `incomplete`.
pub(super) fn check(cx: &Rollout, usage: &Usage, incomplete: &mut Vec<String>) -> (Vec<Diagnostic>, Vec<Value>) {
    let (l, st, s, ns, name, current) = (cx.l, cx.st, cx.serving(), cx.ns, cx.name, &usage.current);
    let d = |code: Code, field: &str, msg: String| cx.diag(code, field, msg);
    let mut diags = Vec::new();
    let labels = service_labels(l);
    let current_labels: Vec<&BTreeMap<String, String>> = current.iter().map(|(pi, ..)| &st.pods[*pi].labels).collect();
    let mut pdb_rows = Vec::new();
    for p in st.pdbs.iter().filter(|p| p.namespace == ns) {
        let Some(sel) = &p.selector else { continue };
        if !(sel.matches(&labels) || current_labels.iter().any(|l| sel.matches(l))) {
            continue;
        }
        let r = s.replicas;
        let (rule, desired) = match (&p.min_available, &p.max_unavailable) {
            (_, Some(mu)) => {
                (format!("maxUnavailable {}", pct(mu)), scaled(mu, r, true).map(|m| u64::from(r).saturating_sub(m)))
            }
            (Some(ma), None) => (format!("minAvailable {}", pct(ma)), scaled(ma, r, true)),
            (None, None) => continue,
        };
        let desired = match desired {
            Ok(x) => x,
            Err(e) => {
                incomplete.push(format!("poddisruptionbudget {}/{}: {e}", p.namespace, p.name));
                continue;
            }
        };
        let allowed = u64::from(r).saturating_sub(desired);
        pdb_rows.push(json!({"pdb": format!("{}/{}", p.namespace, p.name), "rule": rule, "allowedDisruptions": allowed, "statusDisruptionsAllowed": p.disruptions_allowed}));
        if allowed == 0 {
            let mut dg = d(
                Code::PdbBlocksDisruption,
                "spec.serving.replicas",
                format!("PodDisruptionBudget {}/{} allows 0 disruptions with {r} replica(s): node drains and evictions of {name} block", p.namespace, p.name),
            )
            .evidence(format!("{rule} with replicas {r} → desired healthy {desired}, disruptions allowed {allowed}"));
            if let Some(x) = p.disruptions_allowed {
                dg = dg.evidence(format!("the cluster reports status.disruptionsAllowed {x}"));
            }
            diags.push(
                dg.help("run at least 2 replicas and allow 1 disruption (maxUnavailable: 1)")
                    .help("or accept that `kubectl drain` waits on this service and plan node maintenance around it"),
            );
        }
    }
    (diags, pdb_rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifests::{Renderer, TemplateSource};

    /// A budget is matched against the labels the pods will carry, so those
    /// must be the labels render writes: the Deployment's pod template in the
    /// `deployment` format, the InferenceService's (KServe copies them to its
    /// pods and adds its own two) otherwise.
    #[test]
    fn budgets_are_matched_against_the_labels_render_writes() {
        for format in [ServingFormat::KserveCustom, ServingFormat::KserveModelspec, ServingFormat::Deployment] {
            let mut l = crate::bundle::example();
            l.bundle.spec.serving.format = format;
            let want = service_labels(&l);
            assert!(want.len() >= 3 && want["app.kubernetes.io/name"] == l.bundle.metadata.name, "{want:?}");
            let objects = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).unwrap().objects;
            let pod_labels = objects.iter().find_map(|o| match o["kind"].as_str() {
                Some("Deployment") => o["spec"]["template"]["metadata"]["labels"].as_object().cloned(),
                Some("InferenceService") => o["metadata"]["labels"].as_object().cloned(),
                _ => None,
            });
            let pod_labels = pod_labels.expect("a workload with labels");
            for (k, v) in &want {
                let kserve_own = k == "serving.kserve.io/inferenceservice" || k == "component";
                if format == ServingFormat::Deployment {
                    assert!(!kserve_own, "{k} on a plain Deployment");
                }
                if !kserve_own {
                    assert_eq!(pod_labels.get(k).and_then(Value::as_str), Some(v.as_str()), "{format:?}: {k}");
                }
            }
            if format != ServingFormat::Deployment {
                assert_eq!(want["serving.kserve.io/inferenceservice"], l.bundle.metadata.name);
                assert_eq!(want["component"], "predictor");
            }
        }
    }

    /// A budget that selects the running pods by a label the new pods will
    /// not carry still blocks their eviction during the rollout: it is
    /// matched against the current pods' labels too, not only the new ones.
    #[test]
    fn a_budget_on_the_current_pods_labels_alone_is_judged() {
        use crate::checks::preflight::{preflight, ClusterState, ContainerResources, LabelSelector, Node, Pdb, Pod};
        let l = crate::bundle::example();
        let (name, ns) = (l.bundle.metadata.name.clone(), l.bundle.metadata.namespace.clone());
        let replicas = l.bundle.spec.serving.replicas;
        let st = |pdb_label: (&str, &str)| ClusterState {
            nodes: vec![Node { name: "n1".into(), ..Node::default() }],
            pods: vec![Pod {
                namespace: ns.clone(),
                name: "current-0".into(),
                node_name: Some("n1".into()),
                phase: Some("Running".into()),
                labels: [
                    ("app.kubernetes.io/name".to_string(), name.clone()),
                    ("track".to_string(), "stable".to_string()),
                ]
                .into(),
                containers: vec![ContainerResources::default()],
                ..Pod::default()
            }],
            pdbs: vec![Pdb {
                namespace: ns.clone(),
                name: "keep".into(),
                selector: Some(LabelSelector {
                    match_labels: [(pdb_label.0.to_string(), pdb_label.1.to_string())].into(),
                    ..LabelSelector::default()
                }),
                min_available: Some(crate::bundle::IntOrPercent::Int(replicas)),
                ..Pdb::default()
            }],
            ..ClusterState::default()
        };
        let blocks = |s: &ClusterState| {
            preflight(&l, s).unwrap().diagnostics.iter().any(|d| d.code == Code::PdbBlocksDisruption)
        };
        assert!(blocks(&st(("track", "stable"))), "a budget on the current pods' own label");
        assert!(!blocks(&st(("track", "canary"))), "a budget that selects neither");
    }
}
