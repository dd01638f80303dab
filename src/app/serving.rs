//! The scheduled drift audit's serving pass (`audit --serving`): is the
//! cluster running the bundle git says is current? Read-only, like `watch`.
//! Which bundle is current and what the pods say is
//! `checks::audit::serving`'s; this finds the bundles and reads the cluster.

use std::path::Path;

use anyhow::Result;

use crate::adapters::kube as io;
use crate::adapters::{bundle_files, local};
use crate::app::ctx::Ctx;
use crate::checks::audit::serving::{self, Current, Placed};
use crate::checks::watch::steps::WatchPlan;
use crate::report::StepReport;

/// For each service (namespace/name) under `root`: do the live pods run
/// the release of its current bundle, from that bundle's storage URI?
pub(crate) async fn serving_audit(ctx: &Ctx, root: &Path) -> Result<Vec<StepReport>> {
    let mut tree = Vec::new();
    for p in &bundle_files::find_bundles(root)? {
        // A bundle that does not load is reported by the store audit itself.
        let Ok(l) = bundle_files::load(p) else { continue };
        let rollback = l.bundle.spec.rollback.as_ref().map(|rb| local::canonical_or_same(&l.dir().join(&rb.bundle)));
        tree.push(Placed { path: local::canonical_or_same(&l.path), rollback, loaded: l });
    }
    let mut out = Vec::new();
    if tree.is_empty() {
        return Ok(out);
    }
    let (client, server) = match ctx.kube().await {
        Ok(c) => c,
        Err(e) => {
            out.push(StepReport::error("serving", crate::report::escape::path_name(root), &e));
            return Ok(out);
        }
    };
    for current in serving::current_bundles(tree) {
        out.push(match current {
            Current::Head(l) => {
                let exp = WatchPlan::resolve(&l, None).expected;
                let (ns, name) = (&l.bundle.metadata.namespace, &l.bundle.metadata.name);
                let state = io::service_state(&client, ns, name, exp.workload).await;
                serving::serving_step(&l, &exp, &server, state)
            }
            Current::Unknown(s) => *s,
        });
    }
    Ok(out)
}
