//! `bundlegate render` and the pipeline's render step: one loaded bundle →
//! its Kubernetes manifests (to stdout, or a file under `--out`).

use std::path::PathBuf;

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::options::RenderOptions;
use crate::report::StepReport;

pub(crate) fn run(_ctx: &Ctx, l: &Loaded, ro: &RenderOptions) -> Result<Vec<StepReport>> {
    Ok(vec![render(l, ro)])
}

/// A template or write failure is this step's ERROR.
fn render(l: &Loaded, ro: &RenderOptions) -> StepReport {
    let res = ro.renderer().and_then(|r| r.render(l)).and_then(|rendered| {
        let written: Option<PathBuf> = match &ro.out {
            Some(dir) => Some(crate::manifests::write_out(&rendered, l, dir)?),
            None => None,
        };
        Ok((rendered, written))
    });
    match res {
        Ok((r, written)) => crate::checks::render::step(l, &r.objects, r.yaml, r.verifier_missing, written.as_deref()),
        Err(e) => StepReport::error("render", &l.display, &e),
    }
}
