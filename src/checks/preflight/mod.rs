//! Preflight: can this rollout actually happen on this cluster?
//!
//! Pure functions over [`ClusterState`], which the cluster adapter builds from a
//! `kubectl get … -o yaml` snapshot or a live, read-only listing. Scheduling
//! rules follow kube-scheduler's filters (NodeResourcesFit, NodeUnschedulable,
//! TaintToleration, NodeAffinity for nodeSelector, VolumeBinding for PV node
//! affinity) and the Deployment controller's surge arithmetic.
//!
//! [`preflight`] runs one named pass per concept, each in its own file, in the
//! order their diagnostics appear in the report: scheduling and surge capacity,
//! ResourceQuota, volumes, PodDisruptionBudgets, probes, then what could not be
//! read. `quantity` and `state` hold the numbers and the plain data they share.

mod pdb;
mod probes;
pub mod quantity;
mod quota;
mod scheduling;
mod state;
mod surge;
mod table;
mod volumes;

use std::collections::BTreeMap;

use crate::bundle::{IntOrPercent, Loaded, RolloutStrategy, Serving, ServingFormat};
use crate::diag::Code;
use crate::diag::{Diagnostic, Severity};
use crate::report::{StepReport, Table};

pub use probes::SCHEDULING_ALLOWANCE_SECONDS;
pub use quantity::bundle_quantity_diagnostics;
pub(crate) use quantity::kubernetes_resource_rules;
pub use scheduling::tolerates;
pub use state::{
    ClusterState, ContainerResources, LabelSelector, Node, Pdb, Pod, Pv, Pvc, Quantities, Quota, Requirement,
    SelectorTerm, Taint,
};
pub use surge::{resolve_rollout, scaled, surge_plan, SurgePlan};

use quantity::{pod_res, Res, Which};
use surge::Lines;

/// Everything the app layer needs to build the step report.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub diagnostics: Vec<Diagnostic>,
    pub table: Table,
    pub data: serde_json::Value,
    pub summary: String,
}

/// What every pass reads, computed once: the bundle, the cluster state, the
/// new pod's requests and limits, and the rollout plan.
/// (Named for what it holds; `app::ctx::Ctx` is the one run context.)
struct Rollout<'a> {
    l: &'a Loaded,
    st: &'a ClusterState,
    ns: &'a str,
    name: &'a str,
    /// The new pod as the API server will see it: its containers one by
    /// one (quota admission judges each), and their requests and limits.
    new_pod: Pod,
    req: Res,
    lim: Res,
    surge: u64,
    unavailable: u32,
    plan: SurgePlan,
}

impl<'a> Rollout<'a> {
    fn serving(&self) -> &'a Serving {
        &self.l.bundle.spec.serving
    }

    /// A diagnostic pointing at a field of the bundle.
    fn diag(&self, code: Code, field: &str, msg: String) -> Diagnostic {
        Diagnostic::new(code, msg).at(self.l.span(field)).field(field)
    }
}

const MAX_EVIDENCE: usize = 12;

fn capped(lines: Vec<String>, what: &str) -> Vec<String> {
    let n = lines.len();
    let mut out: Vec<String> = lines.into_iter().take(MAX_EVIDENCE).collect();
    if n > MAX_EVIDENCE {
        out.push(format!("… and {} more {what}", n - MAX_EVIDENCE));
    }
    out
}

pub(crate) fn pct(p: &IntOrPercent) -> String {
    match p {
        IntOrPercent::Int(i) => i.to_string(),
        IntOrPercent::Str(s) => s.clone(),
    }
}

/// The strategy the pods will really roll with, and whether it is not the
/// bundle's: KServe v0.20's LLMInferenceService has no strategy field, so
/// its controller's Deployments take the Deployment defaults (25% / 25% /
/// 600 s) whatever the bundle says (lint BG027 names that).
pub(crate) fn effective_rollout(s: &Serving) -> (RolloutStrategy, bool) {
    match s.format {
        ServingFormat::KserveLlm => (RolloutStrategy::default(), s.rollout != RolloutStrategy::default()),
        ServingFormat::KserveModelspec | ServingFormat::KserveCustom | ServingFormat::Deployment => {
            (s.rollout.clone(), false)
        }
    }
}

/// Run every preflight check. `Err` means the bundle itself cannot be
/// evaluated (an input error), never a policy failure.
pub(crate) fn preflight(l: &Loaded, st: &ClusterState) -> Result<Outcome, String> {
    let b = &l.bundle;
    let s = &b.spec.serving;
    let (surge, unavailable) =
        resolve_rollout(&effective_rollout(s).0, s.replicas).map_err(|e| format!("spec.serving.rollout.{e}"))?;
    let (new_pod, req, lim) = new_pod_requests(l)?;

    // Cluster state that cannot be read makes the answer unknown: BG207.
    let mut incomplete: Vec<String> = Vec::new();
    let usage = scheduling::tally(st, &b.metadata.name, &b.metadata.namespace, &mut incomplete);
    let plan = surge_plan(s.replicas, surge, unavailable, usage.running_current());
    let cx = Rollout {
        l,
        st,
        ns: &b.metadata.namespace,
        name: &b.metadata.name,
        new_pod,
        req,
        lim,
        surge,
        unavailable,
        plan,
    };

    let (pv_terms, unread_pvs) = volumes::bound_pvs(&cx);
    incomplete.extend(unread_pvs);
    let evals = scheduling::evaluate_nodes(&cx, &usage, &pv_terms);
    let cap = surge::capacity(&cx, &usage, &evals);
    let lines = Lines::new(&cx, &usage);
    let mut diags = surge::capacity_diagnostics(&cx, &usage, &evals, &cap, &lines);
    let (quota_diags, quotas) = quota::check(&cx, &lines, &mut incomplete);
    diags.extend(quota_diags);
    let (volume_diags, volumes) = volumes::check(&cx, &usage, &evals, &lines);
    diags.extend(volume_diags);
    let (pdb_diags, pdbs) = pdb::check(&cx, &usage, &mut incomplete);
    diags.extend(pdb_diags);
    diags.extend(probes::check(&cx));
    // What the API server itself refuses: the pod would never exist.
    diags.extend(kubernetes_resource_rules(l));
    diags.extend(unreadable(st, &incomplete));
    Ok(table::outcome(&cx, &usage, &evals, &cap, diags, table::Rows { quotas, volumes, pdbs, incomplete }))
}

/// The new pod (its serving container, then the file verifier sidecar
/// when one is rendered) and its effective requests and limits, as the API
/// server will default it.
fn new_pod_requests(l: &Loaded) -> Result<(Pod, Res, Res), String> {
    let b = &l.bundle;
    let s = &b.spec.serving;
    // Only its containers count: pod_res reads no name.
    let new_pod = Pod {
        containers: vec![ContainerResources {
            requests: s.resources.requests.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect(),
            limits: s.resources.limits.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect(),
        }],
        // The rendered file verifier is a native sidecar: its requests are
        // the new pod's for its whole life.
        init_containers: crate::bundle::pod_verifier::renders_verifier(b)
            .then(|| {
                let q = |cpu: Option<&str>| {
                    let mut m: Quantities = BTreeMap::new();
                    if let Some(c) = cpu {
                        m.insert("cpu".into(), c.into());
                    }
                    m.insert("memory".into(), crate::bundle::pod_verifier::VERIFIER_MEMORY.into());
                    m
                };
                (
                    ContainerResources {
                        requests: q(Some(crate::bundle::pod_verifier::VERIFIER_CPU_REQUEST)),
                        limits: q(None),
                    },
                    true,
                )
            })
            .into_iter()
            .collect(),
        ..Pod::default()
    };
    let req = pod_res(&new_pod, Which::Requests).map_err(|e| format!("spec.serving.resources: {e}"))?;
    let lim = pod_res(&new_pod, Which::Limits).map_err(|e| format!("spec.serving.resources: {e}"))?;
    Ok((new_pod, req, lim))
}

/// Never PASS on what could not be read (BG207).
fn unreadable(st: &ClusterState, incomplete: &[String]) -> Option<Diagnostic> {
    if incomplete.is_empty() {
        return None;
    }
    let mut dg = Diagnostic::new(
        Code::ClusterStateIncomplete,
        format!(
            "{} object(s) in the cluster state could not be evaluated; the capacity answer is not trustworthy",
            incomplete.len()
        ),
    )
    .evidence(format!("source: {}", st.source));
    for e in capped(incomplete.to_vec(), "problems") {
        dg = dg.evidence(e);
    }
    Some(dg.help("re-take the snapshot with `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets -A -o yaml` and check the named fields"))
}

/// The preflight step for one bundle against the cluster state read: the
/// passes' findings under the run's overrides, their verdict, the table.
pub(crate) fn step(l: &Loaded, st: &ClusterState, ov: &crate::diag::Overrides) -> StepReport {
    let out = match preflight(l, st) {
        Ok(o) => o,
        Err(e) => return StepReport::error("preflight", &l.display, &anyhow::anyhow!("{}: {e}", l.display)),
    };
    let mut s = StepReport::new("preflight", &l.display);
    s.diagnostics = ov.apply(out.diagnostics);
    s.verdict = verdict(&s.diagnostics);
    let (errors, warnings) = (s.count(Severity::Error), s.count(Severity::Warning));
    s.summary = format!("{}; {errors} error(s), {warnings} warning(s)", out.summary);
    s.tables.push(out.table);
    s.data = out.data;
    s
}

/// The preflight step's verdict from its (overridden) diagnostics. Evidence
/// that could not be read (ClusterStateIncomplete) is not a failure the
/// cluster showed: when it is the only error, the answer is unknown
/// (INCONCLUSIVE), not FAIL.
pub(crate) fn verdict(diagnostics: &[Diagnostic]) -> crate::report::Verdict {
    use crate::diag::Severity;
    use crate::report::Verdict;
    let errors = || diagnostics.iter().filter(|d| d.severity == Severity::Error);
    if errors().next().is_none() {
        // An incomplete snapshot quieted by `-A`/`-W` is still incomplete.
        crate::report::floor(Verdict::Pass, diagnostics)
    } else if errors().all(|d| d.code == Code::ClusterStateIncomplete) {
        Verdict::Inconclusive
    } else {
        Verdict::Fail
    }
}

#[cfg(test)]
mod tests;
