//! The scheduled drift audit's serving pass (`audit --serving`): is the
//! cluster running the bundle git says is current? Read-only, like `watch`.

use std::path::Path;

use anyhow::Result;

use crate::adapters::kube as io;
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::watch::rollout as rc;
use crate::report::{StepReport, Table, Verdict};

use super::watch::expected;

/// The scheduled drift audit's serving piece: do the live pods run this
/// bundle's release from this bundle's storage URI?
pub(crate) async fn serving_step(l: &Loaded, client: kube::Client) -> StepReport {
    let exp = expected(l);
    let target = format!("{} ({})", l.display, l.digest);
    let st = match io::service_state(&client, &l.bundle.metadata.namespace, &l.bundle.metadata.name, exp.kserve).await {
        Ok(st) => st,
        Err(e) => return StepReport::error("serving", &target, &e),
    };
    let mut s = StepReport::new("serving", &target);
    let service = format!("{}/{}", l.bundle.metadata.namespace, l.bundle.metadata.name);
    let (diagnostics, matching) = rc::serving_diagnostics(&exp, &service, &st);
    s.diagnostics = diagnostics;
    s.verdict = rc::verdict_of(&s.diagnostics);
    let live = st.pods.iter().filter(|p| rc::standing(p) != rc::PodStanding::Terminal).count();
    s.summary = format!("{matching}/{live} live pod(s) run this release");
    let o = rc::evaluate_rollout(&exp, &st);
    s.tables.push(Table {
        title: "pods by release".into(),
        columns: rc::POD_COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: o.rows,
    });
    s.data = o.data;
    s
}

/// The scheduled audit's serving pass: for each service (namespace/name)
/// under `root`, is the cluster running the bundle git says is current?
///
/// The current bundle of a service is the head of its rollback chain: the one
/// no other bundle names as `spec.rollback`. Two heads (two releases that do
/// not know each other) cannot be told apart, so that service is
/// INCONCLUSIVE rather than guessed.
pub(crate) async fn serving_audit(ctx: &Ctx, root: &Path) -> Result<Vec<StepReport>> {
    use std::collections::{BTreeMap, BTreeSet};
    let paths = crate::adapters::bundle_files::find_bundles(root)?;
    let canon = |p: &Path| crate::adapters::local::canonical_or_same(p);
    let mut groups: BTreeMap<(String, String), Vec<Loaded>> = BTreeMap::new();
    let mut referenced = BTreeSet::new();
    for p in &paths {
        // A bundle that does not load is reported by the store audit itself.
        let Ok(l) = crate::adapters::bundle_files::load(p) else { continue };
        if let Some(rb) = &l.bundle.spec.rollback {
            referenced.insert(canon(&l.dir().join(&rb.bundle)));
        }
        groups.entry((l.bundle.metadata.namespace.clone(), l.bundle.metadata.name.clone())).or_default().push(l);
    }
    let mut out = Vec::new();
    if groups.is_empty() {
        return Ok(out);
    }
    let (client, server) = match ctx.kube().await {
        Ok(c) => c,
        Err(e) => {
            out.push(StepReport::error("serving", crate::report::escape::path_name(root), &e));
            return Ok(out);
        }
    };
    for ((ns, name), bundles) in groups {
        let heads: Vec<&Loaded> = bundles.iter().filter(|l| !referenced.contains(&canon(&l.path))).collect();
        match heads.as_slice() {
            [head] => {
                let mut s = serving_step(head, client.clone()).await;
                s.summary = format!("{ns}/{name} on {server}: {}", s.summary);
                out.push(s);
            }
            _ => {
                let mut s = StepReport::new("serving", format!("{ns}/{name}"));
                s.verdict = Verdict::Inconclusive;
                let names: Vec<String> = heads.iter().map(|l| l.display.clone()).collect();
                s.summary = if names.is_empty() {
                    "every bundle of this service is some other bundle's rollback target (a cycle): which one is current is unknown".into()
                } else {
                    format!(
                        "{} bundles claim to be current (none rolls back to the other): {}; serving not compared",
                        names.len(),
                        names.join(", ")
                    )
                };
                out.push(s);
            }
        }
    }
    Ok(out)
}
