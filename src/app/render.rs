//! `bundlegate render` and the pipeline's render step: one loaded bundle →
//! its Kubernetes manifests (to stdout, or a file under `--out`).

use std::path::PathBuf;

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::options::RenderOptions;
use crate::report::StepReport;

pub(crate) fn run(ctx: &Ctx, l: &Loaded, ro: &RenderOptions) -> Result<Vec<StepReport>> {
    Ok(vec![render(ctx, l, ro)])
}

/// `l` rendered as the policy has it: with the in-pod signature check
/// when `signature.podTrustConfigMap` asks for one.
pub(crate) fn rendered(ctx: &Ctx, l: &Loaded, ro: &RenderOptions) -> Result<crate::manifests::Rendered> {
    let trust = crate::app::signature::pod_trust(&ctx.signature, &l.path)?;
    ro.renderer()?.render_with(l, trust.as_ref())
}

/// A template or write failure is this step's ERROR.
fn render(ctx: &Ctx, l: &Loaded, ro: &RenderOptions) -> StepReport {
    let res = rendered(ctx, l, ro).and_then(|rendered| {
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
