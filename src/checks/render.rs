//! Judgments on what `render` produced (the manifests themselves are made
//! by `crate::manifests`).

use crate::diag::{Code, Diagnostic};

/// The bundle asks for its files to be verified before the server starts
/// (`spec.serving.verifyOnStart`), but the template put no verifier
/// container in the pod: the pod would start on unverified bytes.
pub(crate) fn verifier_not_rendered(format: &str, container: &str, verify_on_start: &str) -> Diagnostic {
    Diagnostic::new(
        Code::VerifyOnStartNotRendered,
        format!("the `{format}` template puts no `{container}` container in the pod, although spec.serving.verifyOnStart is `{verify_on_start}`"),
    )
    .help("render the `verifier` value as an init container of the pod (see the built-in templates), or set `spec.serving.verifyOnStart: off`")
}
