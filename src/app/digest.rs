//! `bundlegate digest`: one bundle's release digest.

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::report::StepReport;

pub(crate) fn run(_ctx: &Ctx, l: &Loaded) -> Result<Vec<StepReport>> {
    Ok(vec![crate::checks::info::digest(l)])
}
