//! `bundlegate digest`: one bundle's release digest.

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::report::StepReport;

pub(crate) fn run(_ctx: &Ctx, l: &Loaded) -> Result<Vec<StepReport>> {
    let mut s = StepReport::new("digest", &l.display);
    s.summary = l.digest.clone();
    s.data = serde_json::json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version});
    Ok(vec![s])
}
