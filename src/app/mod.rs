//! Wire each command to loading, adapters and checks; every command returns
//! one [`crate::report::Report`]. Commands take the typed options of
//! [`crate::options`]; `crate::dispatch` maps the command line into them and
//! `crate::pipeline` builds the same options from a pipeline file, so
//! nothing here depends on either.

pub mod argocd;
pub mod audit;
pub mod canary;
pub mod ctx;
pub mod pod_verify;
pub mod pr;
pub mod preflight;
pub mod revert;
pub mod serving;
pub mod verify;
pub mod watch;

use std::path::{Path, PathBuf};

use crate::bundle::{self, Loaded};
use crate::checks::lint;
use crate::diag::Overrides;
use crate::options::RenderOptions;
use crate::report::{Detail, StepReport, Verdict};

/// Load a bundle or produce the Error step that says why (file:line:col: field).
/// The step is boxed: it is the cold path and much larger than a pointer.
pub(crate) fn load_or_step(path: &Path, step: &str) -> std::result::Result<Loaded, Box<StepReport>> {
    crate::adapters::bundle_files::load(path).map_err(|e| Box::new(load_error(path, step, e)))
}

/// [`load_or_step`] for text read elsewhere (a bundle as committed in git);
/// `path` still anchors relative references and names the file.
pub(crate) fn parse_or_step(path: &Path, text: &str, step: &str) -> std::result::Result<Loaded, Box<StepReport>> {
    bundle::parse(&path.display().to_string(), path, text.to_string()).map_err(|e| Box::new(load_error(path, step, e)))
}

/// The Error step for a bundle whose text could not be read at all (a
/// committed blob over the size limit or not UTF-8), worded as a load error.
pub(crate) fn unreadable_step(path: &Path, why: &str, step: &str) -> StepReport {
    let source = std::io::Error::new(std::io::ErrorKind::InvalidData, why.to_string());
    load_error(path, step, bundle::LoadError::Io { file: path.display().to_string(), source })
}

fn load_error(path: &Path, step: &str, e: bundle::LoadError) -> StepReport {
    let mut s = StepReport::new(step, path.display().to_string());
    s.verdict = Verdict::Error;
    s.summary = e.to_string();
    s
}

pub(crate) fn lint_loaded(l: &Loaded, ov: &Overrides) -> StepReport {
    lint_loaded_with(l, ov, &crate::adapters::bundle_files::rollback_status(l))
}

/// [`lint_loaded`] with the rollback target already resolved (the CMP
/// resolves it inside the repository root Argo CD names).
pub(crate) fn lint_loaded_with(l: &Loaded, ov: &Overrides, rb: &lint::RollbackStatus) -> StepReport {
    let mut s = StepReport::new("lint", &l.display);
    s.diagnostics = ov.apply(lint::lint(l, rb));
    s.verdict = s.verdict_from_diagnostics();
    s.summary = format!(
        "{} error(s), {} warning(s); release {} {}",
        s.count(crate::report::Severity::Error),
        s.count(crate::report::Severity::Warning),
        l.bundle.metadata.version,
        l.digest
    );
    s.data = serde_json::json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version});
    s
}

pub(crate) fn lint_step(path: &Path, ov: &Overrides) -> StepReport {
    match load_or_step(path, "lint") {
        Ok(l) => lint_loaded(&l, ov),
        Err(s) => *s,
    }
}

pub(crate) fn render_step(path: &Path, ro: &RenderOptions, out: Option<&Path>) -> StepReport {
    let l = match load_or_step(path, "render") {
        Ok(l) => l,
        Err(s) => return *s,
    };
    render_loaded(&l, ro, out)
}

pub(crate) fn render_loaded(l: &Loaded, ro: &RenderOptions, out: Option<&Path>) -> StepReport {
    let res = ro.renderer().and_then(|r| r.render(l)).and_then(|rendered| {
        let written: Option<PathBuf> = match out {
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
                    crate::checks::render::VerifierMissing::TemplateOmits(crate::manifests::VERIFIER_CONTAINER),
                ));
                s.verdict = s.verdict_from_diagnostics();
            }
            s
        }
        Err(e) => StepReport::error("render", &l.display, &e),
    }
}
