//! The in-pod file verifier as the bundle defines it: its container name,
//! paths and requests, and whether this bundle's pod can carry it. `render`
//! builds the container from these; lint (BG040), preflight (its requests)
//! and watch (BG530, by container name) read the same definitions.

use std::path::Path;

use super::{ReleaseBundle, Serving, ServingFormat, VerifyOnStart, Volume};

/// Name of the verifier container in every rendered pod; `watch` reads its
/// termination message.
pub const VERIFIER_CONTAINER: &str = "bundlegate-verify";
/// Env var carrying the artifact list, rendered from the bundle (git).
pub(crate) const VERIFIER_ENV: &str = "BUNDLEGATE_ARTIFACTS";
/// Where KServe's storage initializer writes the model, and the emptyDir it
/// uses (`kserve-provision-location`): the webhook reuses a volume of that
/// name when the pod spec already declares it, which lets the verifier mount
/// it too (docs/verify-on-start.md).
pub(crate) const KSERVE_MODEL_DIR: &str = "/mnt/models";
pub(crate) const KSERVE_MODEL_VOLUME: &str = "kserve-provision-location";

/// Written by the verifier when every artifact is OK; read by its readiness
/// probe (the image's HOME and work folder is /tmp, writable as its user).
pub(crate) const VERIFIER_MARKER: &str = "/tmp/bundlegate-verified";

/// The verifier's requests, which preflight adds to every new pod.
pub(crate) const VERIFIER_CPU_REQUEST: &str = "100m";
pub(crate) const VERIFIER_MEMORY: &str = "64Mi";

/// Why the bundle's pod cannot carry the verifier (the `deployment` format
/// without a usable `modelDir`); `None` when it can or is not asked to.
pub(crate) fn verifier_unsupported(b: &ReleaseBundle) -> Option<String> {
    let s = &b.spec.serving;
    if s.verify_on_start == VerifyOnStart::Off || s.format != ServingFormat::Deployment {
        return None;
    }
    match &s.model_dir {
        None => Some("the `deployment` format does not say where the server reads the artifacts: set `spec.serving.modelDir` (a folder under one of `spec.serving.volumes`' mountPath)".into()),
        Some(dir) => model_volume(s, dir).is_none().then(|| {
            format!("`spec.serving.modelDir` `{dir}` is not an absolute folder under one of `spec.serving.volumes`' mountPath, so the verifier cannot mount it")
        }),
    }
}

/// Does the rendered pod carry the verifier (asked for, and the format can)?
pub(crate) fn renders_verifier(b: &ReleaseBundle) -> bool {
    b.spec.serving.verify_on_start != VerifyOnStart::Off && verifier_unsupported(b).is_none()
}

/// The bundle volume holding `dir` (absolute, no `..`).
pub(crate) fn model_volume<'a>(s: &'a Serving, dir: &str) -> Option<&'a Volume> {
    let p = Path::new(dir);
    if !p.is_absolute() || p.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        return None;
    }
    s.volumes.iter().filter(|v| p.starts_with(&v.mount_path)).max_by_key(|v| v.mount_path.len())
}
