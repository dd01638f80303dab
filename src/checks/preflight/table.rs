//! The step's table, JSON data and summary line. Separate so the JSON report
//! shape (a stable format) is built in one place from the passes' results.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::diag::Diagnostic;
use crate::report::Table;

use super::quantity;
use super::scheduling::{eligible, NodeEval, Usage};
use super::state::ClusterState;
use super::surge::Capacity;
use super::{Outcome, Rollout};

/// What the quota, volume and PDB passes found, for the JSON data.
pub(super) struct Rows {
    pub quotas: Vec<Value>,
    pub volumes: Vec<Value>,
    pub pdbs: Vec<Value>,
    /// What could not be read (BG207's evidence).
    pub incomplete: Vec<String>,
}

/// The nodes table: eligible nodes with the most room first, a few excluded
/// ones for context.
fn table(cx: &Rollout, usage: &Usage, evals: &[NodeEval]) -> Table {
    let (st, req, alloc, used) = (cx.st, &cx.req, &usage.alloc, &usage.used);
    let node = |e: &NodeEval| &st.nodes[e.idx];
    let mut table_res: Vec<String> = req.iter().filter(|(_, v)| **v > 0).map(|(k, _)| k.clone()).collect();
    if table_res.is_empty() {
        table_res = vec!["cpu".into(), "memory".into()];
    }
    let mut columns = vec!["node".to_string(), "eligible".to_string()];
    columns.extend(table_res.iter().map(|r| format!("free {r}")));
    columns.push("new pods that fit".into());
    let row = |e: &NodeEval| -> Vec<String> {
        let n = node(e);
        let mut r = vec![
            n.name.clone(),
            if e.excluded.is_empty() { "yes".into() } else { format!("no: {}", e.excluded.join("; ")) },
        ];
        for k in &table_res {
            r.push(match &alloc[e.idx] {
                Some(a) => {
                    quantity::format(k, a.get(k).copied().unwrap_or(0) - used[e.idx].get(k).copied().unwrap_or(0))
                }
                None => "?".into(),
            });
        }
        r.push(if e.excluded.is_empty() { e.fits.min(9999).to_string() } else { "-".into() });
        r
    };
    // Eligible nodes with the most room first; a few excluded ones for context.
    let mut shown = roomiest(st, evals);
    shown.extend(evals.iter().filter(|e| !e.excluded.is_empty()).take(10));
    let mut rows: Vec<Vec<String>> = shown.iter().map(|e| row(e)).collect();
    let hidden = evals.len() - rows.len();
    if hidden > 0 {
        let mut r = vec![format!("… {hidden} more"), String::new()];
        r.extend(std::iter::repeat_n(String::new(), columns.len() - 2));
        rows.push(r);
    }
    let table = Table { title: format!("nodes considered ({})", st.source), columns, rows };
    table
}

/// The eligible nodes the table and the chart show: the 25 with the most
/// room, by name among equals.
fn roomiest<'e>(st: &ClusterState, evals: &'e [NodeEval]) -> Vec<&'e NodeEval> {
    let mut shown = eligible(evals);
    shown.sort_by(|a, b| b.fits.cmp(&a.fits).then(st.nodes[a.idx].name.cmp(&st.nodes[b.idx].name)));
    shown.truncate(25);
    shown
}

/// New pods that fit on each node [`roomiest`] names, for the report's chart.
fn capacity_by_node(st: &ClusterState, evals: &[NodeEval]) -> Vec<Value> {
    roomiest(st, evals).iter().map(|e| json!({"node": st.nodes[e.idx].name, "fits": e.fits.min(1_000_000)})).collect()
}

pub(super) fn outcome(
    cx: &Rollout,
    usage: &Usage,
    evals: &[NodeEval],
    cap: &Capacity,
    diags: Vec<Diagnostic>,
    rows: Rows,
) -> Outcome {
    let (st, req, plan, current, surge, unavailable) =
        (cx.st, &cx.req, &cx.plan, &usage.current, cx.surge, cx.unavailable);
    let (capacity, effective_capacity) = (cap.now, cap.effective);
    let Rows { quotas: quota_rows, volumes: volume_rows, pdbs: pdb_rows, incomplete } = rows;
    let total = st.nodes.len();
    let eligible = eligible(evals);
    let table = table(cx, usage, evals);
    let data = json!({
        "source": st.source,
        "objects": {"nodes": st.nodes.len(), "pods": st.pods.len(), "pvcs": st.pvcs.len(), "pvs": st.pvs.len(), "resourceQuotas": st.quotas.len(), "podDisruptionBudgets": st.pdbs.len(), "ignored": st.ignored},
        "rollout": plan,
        "newPodRequests": req.iter().map(|(k, v)| (k.clone(), quantity::format(k, *v))).collect::<BTreeMap<_, _>>(),
        "currentPods": current.iter().map(|(pi, ni, _)| json!({"pod": st.pods[*pi].key(), "node": ni.map(|n| st.nodes[n].name.clone())})).collect::<Vec<_>>(),
        "eligibleNodes": eligible.len(),
        "capacityByNode": capacity_by_node(st, evals),
        "newPodCapacity": capacity.min(1_000_000),
        "newPodCapacityAfterFreeing": effective_capacity.min(1_000_000),
        "quotas": quota_rows,
        "volumes": volume_rows,
        "pdbs": pdb_rows,
        "incomplete": incomplete,
    });
    let summary = format!(
        "{}: {}/{} nodes eligible, room for {} new pod(s), rollout needs {} ({} surge, {} unavailable)",
        st.source,
        eligible.len(),
        total,
        effective_capacity.min(1_000_000),
        plan.new_pods,
        surge,
        unavailable
    );
    Outcome { diagnostics: diags, table, data, summary }
}
