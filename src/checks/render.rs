//! Judgments on what `render` produced (the manifests themselves are made
//! by `crate::manifests`).

use serde_json::{json, Value};

use crate::bundle::{Loaded, ReleaseBundle};
use crate::diag::{Code, Diagnostic};
use crate::report::{Detail, StepReport};

/// Why the pod the bundle renders runs no file verifier although
/// `spec.serving.verifyOnStart` asks for one.
pub(crate) enum VerifierMissing {
    /// The serving format cannot carry it as the bundle is written (lint
    /// sees this before anything is rendered).
    Unsupported(String),
    /// A template put no container of this name in the pod.
    TemplateOmits(&'static str),
}

/// BG040, one finding whichever step finds it (lint from the bundle, render
/// and `argocd generate` from the rendered pod): without the verifier the
/// pod can become Ready on bytes that changed after the PR check.
pub(crate) fn verifier_not_rendered(b: &ReleaseBundle, why: VerifierMissing) -> Diagnostic {
    let s = &b.spec.serving;
    let (cause, help) = match why {
        VerifierMissing::Unsupported(why) => (
            why,
            "set `spec.serving.modelDir`, or `spec.serving.verifyOnStart: off` to accept the risk explicitly (docs/verify-on-start.md)",
        ),
        VerifierMissing::TemplateOmits(container) => (
            format!("the `{}` template leaves the `{container}` container out of a pod template (every pool's pods need it)", s.format.as_str()),
            "render the `verifier` value as an init container of the pod (see the built-in templates), or set `spec.serving.verifyOnStart: off` (docs/verify-on-start.md)",
        ),
    };
    Diagnostic::new(
        Code::VerifyOnStartNotRendered,
        format!(
            "verifyOnStart `{}`: the rendered `{}` pod runs no file verifier: {cause}; the pod could become Ready on bytes that changed after the PR check",
            s.verify_on_start.as_str(),
            s.format.as_str()
        ),
    )
    .help(help)
}

/// The render step: the kinds rendered, where they were written (None:
/// stdout), the manifests as its detail; a verifier the bundle asks for but
/// the template left out fails it.
pub(crate) fn step(
    l: &Loaded,
    objects: &[Value],
    yaml: String,
    verifier_missing: bool,
    written: Option<&std::path::Path>,
) -> StepReport {
    let mut s = StepReport::new("render", &l.display);
    let kinds: Vec<String> =
        objects.iter().filter_map(|o| o.get("kind").and_then(|k| k.as_str()).map(String::from)).collect();
    s.summary = match written {
        Some(p) => format!("{} → {}", kinds.join(", "), p.display()),
        None => format!("{} ({})", kinds.join(", "), l.bundle.spec.serving.format.as_str()),
    };
    s.data = json!({"objects": objects.len(), "kinds": kinds, "releaseDigest": l.digest, "written": written});
    s.details.push(Detail { title: format!("manifests for {}", l.display), lang: "yaml".into(), body: yaml });
    if verifier_missing {
        let omits = VerifierMissing::TemplateOmits(crate::bundle::pod_verifier::VERIFIER_CONTAINER);
        s.diagnostics.push(verifier_not_rendered(&l.bundle, omits));
        s.verdict = s.verdict_from_diagnostics();
    }
    s
}
