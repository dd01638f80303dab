//! `bundlegate preflight`: gather cluster state (snapshot file or live,
//! read-only) and run the pure preflight checks for one bundle.

use anyhow::Result;

use crate::adapters::cluster::{self, LiveScope};
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::preflight;
use crate::diag::Overrides;
use crate::options::PreflightOptions;
use crate::report::StepReport;

/// Cluster state is needed: refused before anything is loaded.
pub(crate) fn check(o: &PreflightOptions) -> Result<()> {
    if o.snapshot.is_none() && !o.live {
        anyhow::bail!("preflight needs cluster state: --snapshot FILE or --live");
    }
    Ok(())
}

/// Gather cluster state (snapshot file or live, read-only) and run the pure
/// preflight checks for one bundle.
pub(crate) fn run(ctx: &Ctx, l: &Loaded, o: &PreflightOptions, ov: &Overrides) -> Result<Vec<StepReport>> {
    Ok(vec![preflight_step(ctx, l, o, ov)])
}

fn preflight_step(ctx: &Ctx, l: &Loaded, o: &PreflightOptions, ov: &Overrides) -> StepReport {
    let state = match (o.snapshot.as_deref(), o.live) {
        (Some(p), _) => cluster::load_snapshot(p),
        (None, true) => {
            let claims: Vec<String> = l.bundle.spec.serving.volumes.iter().map(|v| v.claim_name.clone()).collect();
            let scope = LiveScope { namespace: &l.bundle.metadata.namespace, claims: &claims };
            ctx.try_block_on(async {
                let (client, server) = ctx.kube().await?;
                cluster::gather_live(client, &server, &scope, ctx.kube_timeout()).await
            })
        }
        (None, false) => Err(anyhow::anyhow!("preflight needs cluster state: --snapshot FILE or --live")),
    };
    match state {
        Ok(st) => preflight::step(l, &st, ov),
        Err(e) => StepReport::error("preflight", &l.display, &e),
    }
}
