//! Names bundlegate sets itself in the pods it renders. A bundle that
//! supplies one of them would shadow what was verified: in a container's
//! env the later of two equal names wins, so a bundle's `STORAGE_URI` or
//! `BUNDLEGATE_ARTIFACTS` would make the pod load or check something other
//! than the reviewed release. Lint refuses them (BG021); render refuses any
//! list Kubernetes merges by name that holds a name twice.

use super::pod_verifier::{KSERVE_MODEL_DIR, KSERVE_MODEL_VOLUME, TRUST_VOLUME, VERIFIER_CONTAINER, VERIFIER_ENV};
use super::ServingFormat;

/// Env names set by render (exact).
pub(crate) const ENV: &[&str] = &["STORAGE_URI", VERIFIER_ENV];
/// Env prefixes owned by render: the release identity and the generation
/// stop conditions (`BUNDLEGATE_RELEASE_DIGEST`, `GENERATION_STOP_STRINGS`…).
pub(crate) const ENV_PREFIXES: &[&str] = &["BUNDLEGATE_", "GENERATION_"];
/// Volume names render adds (KServe's model volume the verifier mounts,
/// the platform's trust ConfigMap).
pub(crate) const VOLUMES: &[&str] = &[KSERVE_MODEL_VOLUME, TRUST_VOLUME];
/// Container names render adds.
pub(crate) const CONTAINERS: &[&str] = &[VERIFIER_CONTAINER];
/// Label and annotation keys render sets, and the prefix it owns.
pub(crate) const LABELS: &[&str] = &["app.kubernetes.io/name", "app.kubernetes.io/managed-by"];
pub(crate) const LABEL_PREFIX: &str = "bundlegate.dev/";

/// Why `name` (an env var) is the tool's, if it is.
pub(crate) fn env_owner(name: &str) -> Option<&'static str> {
    if ENV.contains(&name) {
        return Some("set by bundlegate's render from the bundle itself");
    }
    ENV_PREFIXES
        .iter()
        .any(|p| name.starts_with(p))
        .then_some("a prefix bundlegate's render owns (release identity, generation stop conditions)")
}

/// Why a bundle volume mounted at `path` in the server container would
/// shadow what the tool put there, if it would: in the KServe formats the
/// model folder (`/mnt/models`) is the storage initializer's volume, the
/// one the verifier checks, and a mount at it or under it would make the
/// server read other files than the verified ones. (Kubernetes keys a
/// container's mounts by path, not by volume name.)
pub(crate) fn mount_owner(format: ServingFormat, path: &str) -> Option<&'static str> {
    if format == ServingFormat::Deployment {
        return None;
    }
    // Lexically normalised: `//mnt/./models/`, `/mnt/x/../models` are the same folder.
    let mut parts: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let norm = format!("/{}", parts.join("/"));
    let under = norm == KSERVE_MODEL_DIR || norm.starts_with(&format!("{KSERVE_MODEL_DIR}/"));
    under.then_some("KServe's model folder, where the storage initializer puts the files the verifier checks")
}

pub(crate) fn volume_is_reserved(name: &str) -> bool {
    VOLUMES.contains(&name)
}

pub(crate) fn container_is_reserved(name: &str) -> bool {
    CONTAINERS.contains(&name)
}

pub(crate) fn label_is_reserved(key: &str) -> bool {
    LABELS.contains(&key) || key.starts_with(LABEL_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_render_sets_are_reserved() {
        for n in [
            "STORAGE_URI",
            "BUNDLEGATE_ARTIFACTS",
            "BUNDLEGATE_RELEASE_DIGEST",
            "GENERATION_STOP_STRINGS",
            "GENERATION_x",
        ] {
            assert!(env_owner(n).is_some(), "{n}");
        }
        for n in ["HF_HOME", "storage_uri", "MY_BUNDLEGATE_X", "GENERATIONS"] {
            assert!(env_owner(n).is_none(), "{n}");
        }
        assert!(volume_is_reserved("kserve-provision-location") && !volume_is_reserved("models"));
        assert!(container_is_reserved("bundlegate-verify"));
        assert!(
            label_is_reserved("bundlegate.dev/release-digest")
                && label_is_reserved("app.kubernetes.io/name")
                && !label_is_reserved("team")
        );
        for p in ["/mnt/models", "/mnt/models/", "//mnt/./models", "/mnt/models/tokenizer", "/mnt/x/../models/a"] {
            assert!(
                mount_owner(ServingFormat::KserveCustom, p).is_some()
                    && mount_owner(ServingFormat::KserveModelspec, p).is_some(),
                "{p}"
            );
            assert!(mount_owner(ServingFormat::Deployment, p).is_none(), "{p}");
        }
        for p in ["/mnt", "/mnt/models2", "/models", "/cache"] {
            assert!(mount_owner(ServingFormat::KserveCustom, p).is_none(), "{p}");
        }
    }
}
