//! The Deployment controller's rollout arithmetic (maxSurge/maxUnavailable →
//! how many new pods must fit at once) and the capacity verdict on it.
//! Separate because it is the one pass that weighs every node's answer
//! against the plan.

use serde::Serialize;

use crate::bundle::IntOrPercent;
use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::diag::Severity;

use super::quantity::{self, Res};
use super::scheduling::{eligible, node_lines, scheduler_line, NodeEval, Usage};
use super::{capped, pct, Rollout};

/// How many new pods must be placed at once, and what the rollout frees first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SurgePlan {
    pub replicas: u32,
    /// May exceed the replica count (Kubernetes allows maxSurge above 100%).
    pub surge: u64,
    pub unavailable: u32,
    /// New pods that must fit at the same time.
    pub new_pods: u32,
    /// Old pods removed before those new pods are needed.
    pub freed_old_pods: u32,
    pub mode: &'static str,
}

/// `intstr.GetScaledValueFromIntOrPercent` with the Deployment/PDB
/// validation in front: an int as is, or `digits%` of `total`, rounded up or
/// down, in checked u64 (a huge percentage is an error, never a wrap or a
/// truncation to a small surge).
pub fn scaled(v: &IntOrPercent, total: u32, round_up: bool) -> Result<u64, String> {
    let s = match v {
        IntOrPercent::Int(i) => return Ok(u64::from(*i)),
        IntOrPercent::Str(s) => s,
    };
    let digits = s
        .strip_suffix('%')
        .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        .ok_or_else(|| format!("`{s}` is neither an integer nor a percentage like `25%`"))?;
    let p: u64 = digits.parse().map_err(|_| format!("`{s}` is out of range"))?;
    let x = p.checked_mul(u64::from(total)).ok_or_else(|| format!("`{s}` of {total} overflows"))?;
    Ok(if round_up { x.div_ceil(100) } else { x / 100 })
}

/// (surge, unavailable) for `replicas` as the Deployment controller resolves
/// them (`ResolveFenceposts`): surge rounds up and may exceed 100%;
/// maxUnavailable rounds down, may not exceed 100% (API validation), and is
/// capped at the replica count; both zero is bumped to unavailable 1.
pub fn resolve_rollout(r: &crate::bundle::RolloutStrategy, replicas: u32) -> Result<(u64, u32), String> {
    let surge = scaled(&r.max_surge, replicas, true).map_err(|e| format!("maxSurge: {e}"))?;
    if let IntOrPercent::Str(s) = &r.max_unavailable {
        if s.strip_suffix('%').and_then(|d| d.parse::<u64>().ok()).is_some_and(|p| p > 100) {
            return Err(format!("maxUnavailable: `{s}` is above 100%"));
        }
    }
    let mut unavailable = scaled(&r.max_unavailable, replicas, false).map_err(|e| format!("maxUnavailable: {e}"))?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge, u32::try_from(unavailable.min(u64::from(replicas))).unwrap_or(replicas)))
}

/// The Deployment controller's first step: scale the new ReplicaSet up to
/// `replicas + surge − running` and the old one down by `unavailable`.
/// `current` is the number of running pods of the release being replaced.
pub fn surge_plan(replicas: u32, surge: u64, unavailable: u32, current: u32) -> SurgePlan {
    if current == 0 {
        // Nothing to replace: every replica is new and must fit.
        return SurgePlan {
            replicas,
            surge,
            unavailable,
            new_pods: replicas,
            freed_old_pods: 0,
            mode: "first-rollout",
        };
    }
    if surge > 0 {
        // The new ReplicaSet never grows beyond `replicas`, however large the surge.
        let new_pods = u32::try_from(surge).unwrap_or(u32::MAX).min(replicas.max(1));
        SurgePlan { replicas, surge, unavailable, new_pods, freed_old_pods: 0, mode: "surge" }
    } else {
        let n = unavailable.min(current).max(1);
        SurgePlan { replicas, surge, unavailable, new_pods: n, freed_old_pods: n, mode: "replace" }
    }
}

/// How many new pods the eligible nodes can hold.
pub(super) struct Capacity {
    /// With every current pod still running.
    pub now: u64,
    /// Once the plan's old pods are removed (`now` when it removes none).
    pub effective: u64,
    /// The surge pod fits only after maxUnavailable old pods go.
    pub surge_waits_for_old: bool,
}

/// New pods that fit on the eligible nodes once `n` old pods are gone.
fn capacity_after_freeing(req: &Res, usage: &Usage, evals: &[NodeEval], n: u32) -> u64 {
    let (used, pod_count, current) = (&usage.used, &usage.pod_count, &usage.current);
    let mut used2 = used.clone();
    let mut count2 = pod_count.clone();
    // Free the old pods that sit on eligible nodes first: that is where the new ones can go.
    let mut order: Vec<&(usize, Option<usize>, Res)> = current.iter().collect();
    order.sort_by_key(|(_, ni, _)| !ni.is_some_and(|ni| evals[ni].excluded.is_empty()));
    for (_, ni, r) in order.into_iter().take(n as usize) {
        if let Some(ni) = ni {
            for (k, v) in r {
                // `r` was added to this node's sum above, so this cannot underflow.
                let e = used2[*ni].entry(k.clone()).or_insert(0);
                *e = e.saturating_sub(*v);
            }
            count2[*ni] -= 1;
        }
    }
    eligible(evals)
        .iter()
        .map(|e| usage.free_on(e.idx, req, &used2[e.idx], count2[e.idx]).0)
        .fold(0u64, |a, b| a.saturating_add(b))
}

/// What the eligible nodes hold now and once the plan's old pods are gone.
pub(super) fn capacity(cx: &Rollout, usage: &Usage, evals: &[NodeEval]) -> Capacity {
    let (plan, unavailable) = (&cx.plan, cx.unavailable);
    let now: u64 = eligible(evals).iter().map(|e| e.fits).fold(0u64, |a, b| a.saturating_add(b));
    // With surge 0 the old pods go first; so does a surge rollout with
    // maxUnavailable ≥ 1 when the surge pod cannot fit (slower, with less capacity).
    let after_freeing = |n: u32| capacity_after_freeing(&cx.req, usage, evals, n);
    let effective = after_freeing(plan.freed_old_pods);
    // maxUnavailable ≥ 1 lets the controller remove old pods while the surge pod
    // waits: not stuck, but serving below the replica count meanwhile.
    let surge_waits_for_old =
        plan.mode == "surge" && unavailable > 0 && now < plan.new_pods as u64 && after_freeing(unavailable) > 0;
    Capacity { now, effective, surge_waits_for_old }
}

/// Evidence lines several diagnostics repeat word for word.
pub(super) struct Lines {
    /// The rollout plan: replicas, maxSurge/maxUnavailable, new pods at once.
    pub plan: String,
    /// The current release's pods, or why this is a first rollout.
    pub current: String,
    /// What the new pod requests.
    pub request: String,
}

impl Lines {
    pub(super) fn new(cx: &Rollout, usage: &Usage) -> Lines {
        let (st, s, plan, current, req) = (cx.st, cx.serving(), &cx.plan, &usage.current, &cx.req);
        let (name, ns, surge, unavailable) = (cx.name, cx.ns, cx.surge, cx.unavailable);
        let current_line = if current.is_empty() {
            format!(
                "no running pod of {name} in namespace {ns}: treated as a first rollout ({} new pod(s))",
                plan.new_pods
            )
        } else {
            let names: Vec<String> = current
                .iter()
                .map(|(pi, ni, _)| {
                    format!("{} on {}", st.pods[*pi].key(), ni.map(|n| st.nodes[n].name.as_str()).unwrap_or("?"))
                })
                .collect();
            format!("current release keeps running during the surge: {}", names.join(", "))
        };
        let (rollout, overridden) = super::effective_rollout(s);
        let plan_line = format!(
            "replicas {} with maxSurge {} / maxUnavailable {}{} → surge {}, unavailable {}: {} new pod(s) must fit at once{}",
            s.replicas,
            pct(&rollout.max_surge),
            pct(&rollout.max_unavailable),
            if overridden { " (the Deployment defaults KServe's LLMInferenceService controller uses: v0.20 has no strategy field, so the bundle's is not applied)" } else { "" },
            surge,
            unavailable,
            plan.new_pods,
            if plan.freed_old_pods > 0 { format!(" after {} old pod(s) are removed", plan.freed_old_pods) } else { String::new() }
        );
        let req_line = format!(
            "new pod requests: {}",
            req.iter()
                .filter(|(_, v)| **v > 0)
                .map(|(k, v)| format!("{k} {}", quantity::format(k, *v)))
                .collect::<Vec<_>>()
                .join(", ")
        );
        Lines { plan: plan_line, current: current_line, request: req_line }
    }
}

/// The capacity verdict: no eligible node, a surge pod that waits for
/// old pods to go, or a new pod that stays Pending; a warning only when
/// nodes of unknown allocatable could have room.
pub(super) fn capacity_diagnostics(
    cx: &Rollout,
    usage: &Usage,
    evals: &[NodeEval],
    cap: &Capacity,
    lines: &Lines,
) -> Vec<Diagnostic> {
    let eligible = eligible(evals);
    let mut diags = Vec::new();
    if eligible.is_empty() {
        diags.push(no_matching_nodes(cx, usage, evals));
    } else if cap.surge_waits_for_old {
        diags.push(surge_waits_for_old(cx, usage, evals, lines));
    } else if cap.effective < cx.plan.new_pods as u64 {
        diags.push(stays_pending(cx, usage, evals, &eligible, cap, lines));
    }
    not_proven_with_unknown_nodes(cx, usage, evals, &mut diags);
    diags
}

/// No node matches the nodeSelector, tolerations and volumes.
fn no_matching_nodes(cx: &Rollout, usage: &Usage, evals: &[NodeEval]) -> Diagnostic {
    let (name, total) = (cx.name, cx.st.nodes.len());
    let mut dg = cx
        .diag(
            Code::NoEligibleNodes,
            "spec.serving.nodeSelector",
            format!("no node can run {name}: 0/{total} nodes match its nodeSelector, tolerations and volumes"),
        )
        .evidence(scheduler_line(evals));
    for e in capped(node_lines(cx.st, usage, evals, false), "nodes") {
        dg = dg.evidence(e);
    }
    dg.help("add a toleration for the node's taint, or fix the nodeSelector to match an existing node label")
        .help("or label/untaint a node for this service (kubectl label / kubectl taint … -)")
}

/// The surge pod fits only once old pods terminate: the rollout moves, with
/// less capacity meanwhile (a warning).
fn surge_waits_for_old(cx: &Rollout, usage: &Usage, evals: &[NodeEval], lines: &Lines) -> Diagnostic {
    let (s, unavailable) = (cx.serving(), cx.unavailable);
    let mut dg = cx
        .diag(
            Code::SurgePodUnschedulable,
            "spec.serving.resources",
            format!(
                "the surge pod cannot be placed while the old pods run; the rollout advances only as maxUnavailable ({unavailable}) old pod(s) terminate, serving with {} of {} replicas meanwhile",
                s.replicas - unavailable,
                s.replicas
            ),
        )
        .severity(Severity::Warning)
        .evidence(lines.plan.clone())
        .evidence(lines.request.clone())
        .evidence(scheduler_line(evals));
    for e in capped(node_lines(cx.st, usage, evals, true), "eligible nodes") {
        dg = dg.evidence(e);
    }
    ways_out(cx, dg.evidence(lines.current.clone()))
}

/// The new pod stays Pending: too little room on the eligible nodes.
fn stays_pending(
    cx: &Rollout,
    usage: &Usage,
    evals: &[NodeEval],
    eligible: &[&NodeEval],
    cap: &Capacity,
    lines: &Lines,
) -> Diagnostic {
    let headline = pending_headline(cx, eligible, cap.effective);
    let mut dg = cx
        .diag(
            Code::SurgePodUnschedulable,
            "spec.serving.resources",
            format!("the new pod will stay Pending: {headline}"),
        )
        .evidence(lines.plan.clone())
        .evidence(lines.request.clone())
        .evidence(scheduler_line(evals));
    for e in capped(node_lines(cx.st, usage, evals, true), "eligible nodes") {
        dg = dg.evidence(e);
    }
    dg = dg.evidence(lines.current.clone());
    if cx.plan.mode == "surge" && cx.unavailable == 0 {
        dg = dg.evidence("maxUnavailable resolves to 0: the old pod is removed only after the new one is Ready, so this never resolves itself; the Deployment stays Available=True/Progressing=True until progressDeadlineSeconds");
    }
    ways_out(cx, dg)
}

/// Why the new pod stays Pending, worded the way an operator reads it.
fn pending_headline(cx: &Rollout, eligible: &[&NodeEval], effective_capacity: u64) -> String {
    let short_res: Vec<&str> = {
        let mut v: Vec<&str> =
            eligible.iter().filter(|e| e.fits == 0).flat_map(|e| e.short.iter().map(|s| s.0.as_str())).collect();
        v.sort();
        v.dedup();
        v
    };
    if eligible.len() == 1
        && eligible[0].short.len() == 1
        && matches!(eligible[0].short[0].0.as_str(), "cpu" | "memory")
    {
        let (k, have, taken, _) = &eligible[0].short[0];
        let unit = if k == "cpu" { " cores" } else { "" };
        format!(
            "Insufficient {k}: {} requests at {}% ({}/{}{unit})",
            cx.st.nodes[eligible[0].idx].name,
            (taken * 100) / (*have).max(1),
            quantity::format(k, *taken),
            quantity::format(k, *have)
        )
    } else if short_res.len() == 1 && !matches!(short_res[0], "cpu" | "memory" | "pods") {
        let k = short_res[0];
        let need = cx.req.get(k).copied().unwrap_or(1000);
        let what = if need == 1000 { format!("a free {k}") } else { format!("{} free {k}", quantity::format(k, need)) };
        format!("0/{} nodes have {what}", eligible.len())
    } else {
        format!(
            "only room for {effective_capacity} of {} new pod(s) ({})",
            cx.plan.new_pods,
            short_res.iter().map(|k| format!("Insufficient {k}")).collect::<Vec<_>>().join(", ")
        )
    }
}

/// The three ways out of a capacity shortage, as help lines.
fn ways_out(cx: &Rollout, d: Diagnostic) -> Diagnostic {
    d.help(format!(
        "add capacity: a node matching the nodeSelector/tolerations with {} free",
        cx.req
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(k, v)| format!("{} {k}", quantity::format(k, *v)))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .help("or accept downtime: `maxSurge: 0` with `maxUnavailable: 1` removes the old pod before the new one starts")
    .help("or roll out in a maintenance window (scale the old release down first)")
}

/// A node whose allocatable is unknown but which the pod could otherwise
/// use may have room: a shortage elsewhere then proves nothing (BG207 says
/// why), so it is reported as a warning, never as the failure.
fn not_proven_with_unknown_nodes(cx: &Rollout, usage: &Usage, evals: &[NodeEval], diags: &mut [Diagnostic]) {
    let unknown: Vec<&str> = evals
        .iter()
        .filter(|e| usage.alloc[e.idx].is_none() && e.excluded.len() == 1)
        .map(|e| cx.st.nodes[e.idx].name.as_str())
        .collect();
    if unknown.is_empty() {
        return;
    }
    let capacity_codes = [Code::SurgePodUnschedulable, Code::NoEligibleNodes];
    for dg in diags.iter_mut().filter(|d| capacity_codes.contains(&d.code)) {
        dg.severity = Severity::Warning;
        dg.evidence.push(format!(
            "not proven: {} node(s) with unknown allocatable could have room ({})",
            unknown.len(),
            capped(unknown.iter().map(|n| n.to_string()).collect(), "nodes").join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(500))]

        /// Surge never truncates: a percentage resolves to ceil(p·r/100) in u64,
        /// unavailable to floor(p·r/100), exactly.
        #[test]
        fn surge_percentages_are_exact(p in 0u64..u64::MAX / 4, r in 0u32..=u32::MAX) {
            let v = IntOrPercent::Str(format!("{p}%"));
            let x = u128::from(p) * u128::from(r);
            let up = scaled(&v, r, true);
            if x <= u128::from(u64::MAX) {
                proptest::prop_assert_eq!(up, Ok(x.div_ceil(100) as u64));
                proptest::prop_assert_eq!(scaled(&v, r, false), Ok((x / 100) as u64));
            } else {
                proptest::prop_assert!(up.is_err());
            }
        }
    }

    /// API validation accepts `digits%` only: no sign, no empty number, no
    /// other characters; each refusal says what the value is not.
    #[test]
    fn only_digits_then_percent_is_a_percentage() {
        let e = |s: &str| scaled(&IntOrPercent::Str(s.into()), 10, true).unwrap_err();
        for bad in ["%", "2a%", "+5%", "-5%", " 5%", "5", "5 %", "５%"] {
            assert_eq!(e(bad), format!("`{bad}` is neither an integer nor a percentage like `25%`"), "{bad}");
        }
        assert_eq!(e("99999999999999999999%"), "`99999999999999999999%` is out of range");
        assert_eq!(scaled(&IntOrPercent::Str("0%".into()), 10, true), Ok(0));
        assert_eq!(scaled(&IntOrPercent::Int(7), 10, true), Ok(7));
    }

    #[test]
    fn surge_above_u32_is_not_truncated() {
        // 2^32 % of 100 replicas used to wrap to a surge of 0.
        let (surge, unavailable) = resolve_rollout(&strategy("4294967296%", "0"), 100).unwrap();
        assert_eq!((surge, unavailable), (4_294_967_296, 0));
        let p = surge_plan(100, surge, unavailable, 100);
        assert_eq!((p.new_pods, p.mode), (100, "surge"), "the new ReplicaSet grows to replicas, not to surge 0");
        assert!(resolve_rollout(&strategy("184467440737095516%", "0"), 1000).unwrap_err().contains("overflows"));
        assert!(resolve_rollout(&strategy("25%", "101%"), 4).unwrap_err().contains("above 100%"));
        assert!(resolve_rollout(&strategy("-5%", "0"), 4).is_err());
        assert!(resolve_rollout(&strategy("5", "0"), 4).is_ok(), "an int");
        assert!(resolve_rollout(&strategy("5 %", "0"), 4).is_err());
        assert_eq!(resolve_rollout(&strategy("300%", "100%"), 3).unwrap(), (9, 3));
    }

    fn strategy(surge: &str, unavail: &str) -> crate::bundle::RolloutStrategy {
        let p = |s: &str| s.parse::<u32>().map(IntOrPercent::Int).unwrap_or_else(|_| IntOrPercent::Str(s.into()));
        crate::bundle::RolloutStrategy {
            max_surge: p(surge),
            max_unavailable: p(unavail),
            progress_deadline_seconds: 600,
        }
    }

    #[test]
    fn surge_arithmetic_matches_the_deployment_controller() {
        // 25%/25% with 1 replica: surge rounds up to 1, unavailable down to 0 (the single-replica lab rollout).
        for (r, want) in [(1, (1, 0)), (4, (1, 1)), (10, (3, 2))] {
            assert_eq!(resolve_rollout(&strategy("25%", "25%"), r).unwrap(), want);
            // The bundle model's resolution agrees where both apply.
            let (s, u) = strategy("25%", "25%").resolve(r).unwrap();
            assert_eq!((u64::from(s), u), want);
        }
        // Both zero is bumped to unavailable 1.
        assert_eq!(resolve_rollout(&strategy("0", "0"), 3).unwrap(), (0, 1));
        assert_eq!(resolve_rollout(&strategy("0", "1"), 1).unwrap(), (0, 1));

        let p = surge_plan(1, 1, 0, 1);
        assert_eq!((p.new_pods, p.freed_old_pods, p.mode), (1, 0, "surge"));
        let p = surge_plan(1, 0, 1, 1);
        assert_eq!((p.new_pods, p.freed_old_pods, p.mode), (1, 1, "replace"));
        let p = surge_plan(10, 3, 2, 10);
        assert_eq!((p.new_pods, p.freed_old_pods), (3, 0));
        let p = surge_plan(3, 1, 0, 0);
        assert_eq!((p.new_pods, p.mode), (3, "first-rollout"));
    }
}
