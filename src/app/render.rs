//! `bundlegate render` and the pipeline's render step: one loaded bundle →
//! its Kubernetes manifests (to stdout, or a file under `--out`).

use std::path::PathBuf;

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::options::RenderOptions;
use crate::report::{Detail, StepReport};

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
        Ok((rendered, written)) => {
            let mut s = StepReport::new("render", &l.display);
            let kinds: Vec<String> = rendered
                .objects
                .iter()
                .filter_map(|o| o.get("kind").and_then(|k| k.as_str()).map(String::from))
                .collect();
            s.summary = match &written {
                Some(p) => format!("{} → {}", kinds.join(", "), p.display()),
                None => format!("{} ({})", kinds.join(", "), l.bundle.spec.serving.format.as_str()),
            };
            s.data = serde_json::json!({"objects": rendered.objects.len(), "kinds": kinds, "releaseDigest": l.digest, "written": written});
            s.details.push(Detail {
                title: format!("manifests for {}", l.display),
                lang: "yaml".into(),
                body: rendered.yaml,
            });
            if rendered.verifier_missing {
                s.diagnostics.push(crate::checks::render::verifier_not_rendered(
                    &l.bundle,
                    crate::checks::render::VerifierMissing::TemplateOmits(
                        crate::bundle::pod_verifier::VERIFIER_CONTAINER,
                    ),
                ));
                s.verdict = s.verdict_from_diagnostics();
            }
            s
        }
        Err(e) => StepReport::error("render", &l.display, &e),
    }
}
