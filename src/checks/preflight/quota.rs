//! ResourceQuota headroom: whether the namespace's quotas admit the new pods
//! the rollout creates. Separate because quota admission is a different gate
//! from scheduling: a pod the quota refuses is never created at all.

use serde_json::{json, Value};

use crate::diag::Code;
use crate::diag::Diagnostic;

use super::quantity::{self, pod_res, Which};
use super::state::{ClusterState, ContainerResources, Pod, Quota};
use super::surge::Lines;
use super::Rollout;

/// One diagnostic per quota without room, and the rows for the JSON data.
/// Quota values that cannot be read go to `incomplete`.
pub(super) fn check(cx: &Rollout, lines: &Lines, incomplete: &mut Vec<String>) -> (Vec<Diagnostic>, Vec<Value>) {
    let (st, ns, plan, req, lim) = (cx.st, cx.ns, &cx.plan, &cx.req, &cx.lim);
    let plan_line = &lines.plan;
    let d = |code: Code, field: &str, msg: String| cx.diag(code, field, msg);
    let mut diags = Vec::new();
    let quota_pods = if plan.mode == "replace" { 0 } else { plan.new_pods as i128 };
    let mut quota_rows = Vec::new();
    for q in st.quotas.iter().filter(|q| q.namespace == ns) {
        if !quota_applies(q, &cx.new_pod) {
            continue;
        }
        let mut short = Vec::new();
        for (key, hard_s) in &q.hard {
            let Some((res, which)) = quota_key(key) else { continue };
            let per_pod = match which {
                None => 1000,
                Some(Which::Requests) => req.get(res).copied().unwrap_or(0),
                Some(Which::Limits) => lim.get(res).copied().unwrap_or(0),
            };
            // Quota admission rejects a pod one of whose containers omits
            // cpu or memory when the quota constrains it (each container,
            // not the pod's sum: the API server's "must specify").
            if let Some(w) = which.filter(|_| res == "cpu" || res == "memory") {
                let missing = containers_without(&cx.new_pod, res, w);
                if !missing.is_empty() {
                    short.push(format!(
                        "quota {}/{} constrains {key} but {} {} no {} {res}: the API server rejects the pod (must specify {key}) unless a LimitRange in the namespace supplies a default",
                        q.namespace,
                        q.name,
                        missing.join(" and "),
                        if missing.len() == 1 { "sets" } else { "set" },
                        if w == Which::Limits { "limit for" } else { "request for" }
                    ));
                    continue;
                }
            }
            if per_pod == 0 || quota_pods == 0 {
                continue;
            }
            let hard = match quantity::parse_for(res, hard_s) {
                Ok(h) => h,
                Err(e) => {
                    incomplete.push(format!("resourcequota {}/{}: spec.hard.{key}: {e}", q.namespace, q.name));
                    continue;
                }
            };
            let used_q = match q.used.as_ref().and_then(|u| u.get(key)) {
                Some(u) => match quantity::parse_for(res, u) {
                    Ok(u) => u,
                    Err(e) => {
                        incomplete.push(format!("resourcequota {}/{}: status.used.{key}: {e}", q.namespace, q.name));
                        continue;
                    }
                },
                // Not yet reported by the quota controller: count the namespace's pods ourselves.
                None => {
                    match ns_usage(st, ns, res, which) {
                        Ok(u) => u,
                        Err(e) => {
                            incomplete.push(format!("resourcequota {}/{}: no status.used.{key}, and counting the namespace's pods failed: {e}", q.namespace, q.name));
                            continue;
                        }
                    }
                }
            };
            let Some((need, total)) = per_pod.checked_mul(quota_pods).and_then(|n| Some((n, used_q.checked_add(n)?)))
            else {
                incomplete.push(format!(
                    "resourcequota {}/{}: {key}: used + {quota_pods} new pod(s) overflows",
                    q.namespace, q.name
                ));
                continue;
            };
            quota_rows.push(json!({"quota": format!("{}/{}", q.namespace, q.name), "key": key, "hard": hard_s, "used": quantity::format(res, used_q), "needs": quantity::format(res, need)}));
            if total > hard {
                short.push(format!(
                    "quota {}/{}: {key} hard {}, used {}, the {} new pod(s) need {} more (headroom {})",
                    q.namespace,
                    q.name,
                    quantity::format(res, hard),
                    quantity::format(res, used_q),
                    quota_pods,
                    quantity::format(res, need),
                    quantity::format(res, (hard - used_q).max(0))
                ));
            }
        }
        if !short.is_empty() {
            let mut dg = d(
                Code::QuotaExceeded,
                "spec.serving.resources",
                format!(
                    "ResourceQuota {}/{} leaves no room for the surge pod: the ReplicaSet cannot create it",
                    q.namespace, q.name
                ),
            );
            for e in short {
                dg = dg.evidence(e);
            }
            diags.push(
                dg.evidence(plan_line.clone())
                    .help(format!("raise the quota: kubectl edit resourcequota {} -n {}", q.name, q.namespace))
                    .help("or accept downtime: `maxSurge: 0` with `maxUnavailable: 1` reuses the old pod's share of the quota"),
            );
        }
    }
    (diags, quota_rows)
}

/// The new pod's containers that set no `res` of kind `which`, named. A
/// request left out defaults to the limit, so a limit counts for both.
fn containers_without(pod: &Pod, res: &str, which: Which) -> Vec<&'static str> {
    let sets = |c: &ContainerResources| match which {
        Which::Requests => c.requests.contains_key(res) || c.limits.contains_key(res),
        Which::Limits => c.limits.contains_key(res),
    };
    let serving = pod.containers.iter().filter(|c| !sets(c)).map(|_| "the serving container");
    let init = pod.init_containers.iter().filter(|(c, _)| !sets(c)).map(|_| "the file verifier sidecar");
    serving.chain(init).collect()
}

/// Whether a quota's scopes select the new pod, as kube's quota admission
/// matches them: the pod has no activeDeadlineSeconds (NotTerminating), no
/// priorityClassName and no cross-namespace affinity, and is BestEffort
/// only when none of its containers requests or limits anything. Scopes
/// other than PriorityClass only allow `Exists`, so their operator is moot.
fn quota_applies(q: &Quota, pod: &Pod) -> bool {
    let best_effort = pod
        .containers
        .iter()
        .chain(pod.init_containers.iter().map(|(c, _)| c))
        .all(|c| c.requests.is_empty() && c.limits.is_empty());
    let selects = |scope: &str, op: &str| match scope {
        "NotTerminating" => true,
        "BestEffort" => best_effort,
        "NotBestEffort" => !best_effort,
        // No priority class: only "not one of these" and "none" select it.
        "PriorityClass" => matches!(op, "NotIn" | "DoesNotExist"),
        // Scopes that select no such pod: Terminating (it has no
        // activeDeadlineSeconds), CrossNamespacePodAffinity (it has no such
        // term), VolumeAttributesClass (pods have none), or unknown.
        _ => false,
    };
    q.scopes.iter().all(|s| selects(s, "Exists")) && q.scope_selector.iter().all(|r| selects(&r.key, &r.operator))
}

/// Quota key → (resource, requests/limits or None for the pod count).
fn quota_key(key: &str) -> Option<(&str, Option<Which>)> {
    match key {
        "pods" | "count/pods" => Some(("pods", None)),
        "cpu" | "memory" | "ephemeral-storage" => Some((key, Some(Which::Requests))),
        _ => {
            if let Some(r) = key.strip_prefix("requests.") {
                // requests.storage is for PVCs, not pods.
                (r != "storage").then_some((r, Some(Which::Requests)))
            } else {
                key.strip_prefix("limits.").map(|r| (r, Some(Which::Limits)))
            }
        }
    }
}

/// What the quota controller would report as used in `ns` for one key.
/// A pod whose requests cannot be read makes the usage unknown (an error
/// naming it), never zero; the sum is checked.
fn ns_usage(st: &ClusterState, ns: &str, res: &str, which: Option<Which>) -> Result<i128, String> {
    let mut sum: i128 = 0;
    for p in st.pods.iter().filter(|p| p.namespace == ns && !p.is_terminal()) {
        let v = match which {
            None => 1000,
            Some(w) => pod_res(p, w).map_err(|e| format!("pod {}: {e}", p.key()))?.get(res).copied().unwrap_or(0),
        };
        sum = sum.checked_add(v).ok_or_else(|| format!("{res}: the namespace's sum overflows"))?;
    }
    Ok(sum)
}
