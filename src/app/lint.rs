//! `bundlegate lint`: release hygiene of one loaded bundle (no network).

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::lint;
use crate::checks::rollback::RollbackStatus;
use crate::diag::Overrides;
use crate::report::StepReport;

/// Lint one bundle; its rollback target is resolved beside it, and its
/// signatures (when `--config` sets a signature policy) read beside it.
pub(crate) fn run(ctx: &Ctx, l: &Loaded, ov: &Overrides) -> Result<Vec<StepReport>> {
    let mut steps = vec![lint_with(l, ov, &crate::adapters::bundle_files::rollback_status(l))];
    steps.extend(crate::app::signature::beside_bundle(ctx, l, ov));
    Ok(steps)
}

/// [`run`] with the rollback target already resolved (the CMP resolves it
/// inside the repository root Argo CD names).
pub(crate) fn lint_with(l: &Loaded, ov: &Overrides, rb: &RollbackStatus) -> StepReport {
    lint::step(l, ov, rb)
}
