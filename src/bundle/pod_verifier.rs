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
/// Env var carrying the release's signatures (`model.sig`, `release.sig`)
/// when the platform's policy has pods check them (docs/signing.md).
pub(crate) const SIGNATURE_ENV: &str = "BUNDLEGATE_SIGNATURE";
/// Where the platform's trust ConfigMap (allowed public keys) is mounted,
/// and the volume's name.
pub(crate) const TRUST_DIR: &str = "/etc/bundlegate/trust";
pub(crate) const TRUST_VOLUME: &str = "bundlegate-trust";
/// The signatures a pod's environment carries, at most: a rendered object
/// must stay well under the API server's request limit (about 1.5 MiB).
pub(crate) const MAX_POD_SIGNATURE_BYTES: usize = 256 << 10;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::AccessMode;

    fn volume(name: &str, mount_path: &str) -> Volume {
        Volume {
            name: name.into(),
            claim_name: name.into(),
            access_mode: AccessMode::ReadWriteMany,
            mount_path: mount_path.into(),
            read_only: false,
        }
    }

    /// The folder's volume is the deepest mount holding it; a relative
    /// folder, one with `..`, or one under no mount has none.
    #[test]
    fn the_model_folder_belongs_to_the_deepest_mount_holding_it() {
        let mut b = crate::bundle::example().bundle;
        b.spec.serving.volumes =
            vec![volume("outer", "/models"), volume("inner", "/models/llm"), volume("x", "/cache")];
        let s = &b.spec.serving;
        let name = |dir: &str| model_volume(s, dir).map(|v| v.name.as_str());
        assert_eq!(name("/models/llm/v2"), Some("inner"));
        assert_eq!(name("/models/other"), Some("outer"));
        assert_eq!(name("/cache"), Some("x"));
        assert_eq!(name("/models/llmx"), Some("outer"), "a path prefix is not a folder prefix");
        for none in ["models/llm", "/models/../etc", "/srv", "/"] {
            assert_eq!(name(none), None, "{none}");
        }
    }

    /// The pod carries the verifier when asked and its format can: KServe
    /// always, a Deployment only with a modelDir under one of its volumes.
    #[test]
    fn the_verifier_is_rendered_when_asked_and_the_format_can() {
        let mut b = crate::bundle::example().bundle;
        assert_eq!(b.spec.serving.format, ServingFormat::KserveCustom);
        assert!(renders_verifier(&b) && verifier_unsupported(&b).is_none());
        b.spec.serving.verify_on_start = VerifyOnStart::Size;
        assert!(renders_verifier(&b));
        b.spec.serving.verify_on_start = VerifyOnStart::Off;
        assert!(!renders_verifier(&b) && verifier_unsupported(&b).is_none());
        b.spec.serving.verify_on_start = VerifyOnStart::Full;
        b.spec.serving.format = ServingFormat::Deployment;
        b.spec.serving.volumes = vec![volume("weights", "/weights")];
        b.spec.serving.model_dir = None;
        assert!(!renders_verifier(&b));
        assert!(verifier_unsupported(&b).unwrap().contains("does not say where the server reads"));
        b.spec.serving.model_dir = Some("/elsewhere".into());
        assert!(!renders_verifier(&b));
        assert!(verifier_unsupported(&b).unwrap().contains("`/elsewhere` is not an absolute folder under"));
        b.spec.serving.model_dir = Some("/weights/llm".into());
        assert!(renders_verifier(&b) && verifier_unsupported(&b).is_none());
        b.spec.serving.verify_on_start = VerifyOnStart::Off;
        assert!(!renders_verifier(&b));
    }
}
