//! Volumes: the PVs the bundle's claims are bound to (they restrict nodes) and
//! the access modes that deadlock a rollout (ReadWriteOncePod) or fail it with
//! Multi-Attach (ReadWriteOnce). Separate because the answer depends on the
//! claim in the cluster, not on any node's capacity.

use serde_json::{json, Value};

use crate::bundle::AccessMode;
use crate::diag::Code;
use crate::diag::Diagnostic;

use super::scheduling::{eligible, NodeEval, Usage};
use super::state::{ClusterState, Pv, Pvc};
use super::surge::Lines;
use super::{capped, Rollout};

/// The claim `claim` in namespace `ns`, if the cluster state has it.
fn pvc<'a>(st: &'a ClusterState, ns: &str, claim: &str) -> Option<&'a Pvc> {
    st.pvcs.iter().find(|c| c.namespace == ns && c.name == claim)
}

/// The PVs the bundle's claims are bound to, in one walk over the claims:
/// those with node affinity restrict nodes (VolumeBinding); one the state
/// does not hold (not in the snapshot, or not readable live) makes where
/// the pod can run unknown, so the answer is too (the second list, for
/// BG207).
pub(super) fn bound_pvs<'a>(cx: &Rollout<'a>) -> (Vec<(&'a str, &'a Pv)>, Vec<String>) {
    let (st, s, ns) = (cx.st, cx.serving(), cx.ns);
    let mut pv_terms: Vec<(&str, &Pv)> = Vec::new();
    let mut unread = Vec::new();
    for v in &s.volumes {
        let Some(vn) = pvc(st, ns, &v.claim_name).and_then(|c| c.volume_name.as_deref()) else { continue };
        match st.pvs.iter().find(|p| p.name == vn) {
            Some(pv) if !pv.node_affinity.is_empty() => pv_terms.push((v.claim_name.as_str(), pv)),
            Some(_) => {}
            None => unread.push(format!(
                "persistentvolume {vn} (bound to claim {ns}/{}): not in the cluster state, so its node affinity, which decides where the pod can run, is unknown; include it (`kubectl get pv {vn}`), or grant get on persistentvolumes",
                v.claim_name
            )),
        }
    }
    (pv_terms, unread)
}

fn effective_access(mode: &[String]) -> Option<AccessMode> {
    let has = |m: &str| mode.iter().any(|x| x == m);
    if has("ReadWriteOncePod") {
        Some(AccessMode::ReadWriteOncePod)
    } else if has("ReadWriteMany") {
        Some(AccessMode::ReadWriteMany)
    } else if has("ReadWriteOnce") {
        Some(AccessMode::ReadWriteOnce)
    } else if has("ReadOnlyMany") {
        Some(AccessMode::ReadOnlyMany)
    } else {
        None
    }
}

fn mode_name(m: AccessMode) -> &'static str {
    match m {
        AccessMode::ReadWriteOnce => "ReadWriteOnce",
        AccessMode::ReadWriteOncePod => "ReadWriteOncePod",
        AccessMode::ReadOnlyMany => "ReadOnlyMany",
        AccessMode::ReadWriteMany => "ReadWriteMany",
    }
}

/// One diagnostic per claim whose access mode blocks the rollout, and the rows
/// for the JSON data.
pub(super) fn check(cx: &Rollout, usage: &Usage, evals: &[NodeEval], lines: &Lines) -> (Vec<Diagnostic>, Vec<Value>) {
    let (st, s, ns, plan, unavailable, current) =
        (cx.st, cx.serving(), cx.ns, &cx.plan, cx.unavailable, &usage.current);
    let (plan_line, current_line) = (&lines.plan, &lines.current);
    let d = |code: Code, field: &str, msg: String| cx.diag(code, field, msg);
    let pvc_of = |claim: &str| pvc(st, ns, claim);
    let node = |e: &NodeEval| &st.nodes[e.idx];
    let eligible = eligible(evals);
    let mut diags = Vec::new();
    let eligible_names: Vec<&str> = eligible.iter().map(|e| node(e).name.as_str()).collect();
    let mut volume_rows = Vec::new();
    for (vi, v) in s.volumes.iter().enumerate() {
        let field = format!("spec.serving.volumes[{vi}].accessMode");
        let (mode, source_line) = match pvc_of(&v.claim_name) {
            Some(c) => match effective_access(&c.access_modes) {
                Some(m) => (
                    m,
                    format!(
                        "PVC {ns}/{} in the cluster has accessModes [{}]{}",
                        c.name,
                        c.access_modes.join(", "),
                        if m != v.access_mode {
                            format!("; it wins over the bundle's declared {}", mode_name(v.access_mode))
                        } else {
                            String::new()
                        }
                    ),
                ),
                None => (
                    v.access_mode,
                    format!(
                        "PVC {ns}/{} lists no access modes; using the bundle's declared {}",
                        c.name,
                        mode_name(v.access_mode)
                    ),
                ),
            },
            None => (
                v.access_mode,
                format!(
                    "claim {ns}/{} is not in the cluster state; using the bundle's declared {}",
                    v.claim_name,
                    mode_name(v.access_mode)
                ),
            ),
        };
        volume_rows.push(json!({"claim": v.claim_name, "accessMode": mode_name(mode), "source": source_line}));
        match mode {
            AccessMode::ReadWriteOncePod if unavailable == 0 && plan.mode != "first-rollout" => diags.push(
                d(
                    Code::RwopRolloutDeadlock,
                    &field,
                    format!("claim {} is ReadWriteOncePod and maxUnavailable resolves to 0: the rollout deadlocks", v.claim_name),
                )
                .evidence(source_line)
                .evidence(plan_line.clone())
                .evidence("the old pod keeps the claim until the new pod is Ready; the new pod cannot schedule until the claim is free")
                .evidence(format!(
                    "meanwhile the Deployment reads Available=True and Progressing=True until progressDeadlineSeconds ({}s) turns it into ProgressDeadlineExceeded, which rolls nothing back",
                    s.rollout.progress_deadline_seconds
                ))
                .help("use `maxSurge: 0` and `maxUnavailable: 1` (the old pod goes first: planned downtime)")
                .help("or use a ReadWriteOnce claim on a single node, or ReadWriteMany storage"),
            ),
            AccessMode::ReadWriteOncePod if s.replicas > 1 => diags.push(
                d(Code::RwopRolloutDeadlock, &field, format!("claim {} is ReadWriteOncePod but {} replicas share it: only one pod can ever use it", v.claim_name, s.replicas))
                    .evidence(source_line)
                    .help("give each replica its own claim (a StatefulSet) or use ReadWriteMany storage"),
            ),
            AccessMode::ReadWriteOnce if eligible_names.len() > 1 => {
                let mut dg = d(
                    Code::RwoMultiAttachRisk,
                    &field,
                    format!(
                        "claim {} is ReadWriteOnce and {} nodes can run the new pod: if it lands off the old pod's node it fails with Multi-Attach",
                        v.claim_name,
                        eligible_names.len()
                    ),
                )
                .evidence(source_line)
                .evidence(format!("eligible nodes: {}", capped(eligible_names.iter().map(|s| s.to_string()).collect(), "nodes").join(", ")));
                if !current.is_empty() {
                    dg = dg.evidence(current_line.clone());
                }
                diags.push(
                    dg.help("pin the service to one node (nodeSelector kubernetes.io/hostname) so old and new pods share the attachment")
                        .help("or use ReadWriteMany storage, or `maxSurge: 0` with `maxUnavailable: 1`"),
                );
            }
            _ => {}
        }
    }
    (diags, volume_rows)
}
