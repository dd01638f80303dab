//! The signature policy's gathering for `lint`, `verify` and the Argo CD
//! plugin: the signature files next to the bundle (and, for `verify`, the
//! store's `model.sig`), read bounded, then `checks::signature` judges.

use crate::adapters::bundle_files;
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use std::path::Path;

use crate::checks::sign::{MODEL_SIG, RELEASE_SIG};
use crate::checks::signature::{self, Mode, Policy, SigFile};
use crate::diag::Overrides;
use crate::manifests::PodTrust;
use crate::report::StepReport;
use crate::signing::MAX_SIGNATURE_BYTES;

/// The `signature` step from the files next to the bundle; none when the
/// policy is off (nothing is read then).
pub(crate) fn beside_bundle(ctx: &Ctx, l: &Loaded, ov: &Overrides) -> Option<StepReport> {
    if ctx.signature.mode == Mode::Off {
        return None;
    }
    signature::check(l, &ctx.signature, &bundle_files::read_signatures(&l.path), ov)
}

/// [`beside_bundle`], plus the store's `model.sig` beside the files.
pub(crate) async fn with_store(ctx: &Ctx, l: &Loaded, ov: &Overrides) -> Option<StepReport> {
    if ctx.signature.mode == Mode::Off {
        return None;
    }
    let mut sigs = bundle_files::read_signatures(&l.path);
    sigs.store_model = in_store(ctx, l).await;
    signature::check(l, &ctx.signature, &sigs, ov)
}

/// `model.sig` at the store prefix's root: `None` when absent, or when the
/// store cannot be opened (the verify step reports that) or is a registry.
async fn in_store(ctx: &Ctx, l: &Loaded) -> Option<SigFile> {
    let uri = &l.bundle.spec.model.storage_uri;
    if bundle::storage_uri::backend_of(uri).map(|(_, b)| b) == Some(bundle::storage_uri::Backend::Oci) {
        return None;
    }
    let store = ctx.open_store(uri, &l.dir(), false).ok()?;
    let shown = format!("{}/{MODEL_SIG}", uri.trim_end_matches('/'));
    let text = match store.read_small(MODEL_SIG, MAX_SIGNATURE_BYTES as u64).await {
        Ok(None) => return None,
        Ok(Some(b)) => String::from_utf8(b).map_err(|_| "not UTF-8 text".to_string()),
        Err(e) => Err(format!("{e:#}")),
    };
    Some(SigFile { shown, parsed: text.and_then(|t| crate::parse::sigstore::parse_file(&t)) })
}

/// What rendered pods need to check the signatures themselves, when the
/// platform's policy asks for it (`signature.podTrustConfigMap`): its
/// ConfigMap and the signature files next to the bundle. A file that
/// cannot be read, or signatures too large for a pod, stop the render:
/// a pod told to check a signature it was not given would never start.
pub(crate) fn pod_trust(policy: &Policy, bundle_path: &Path) -> anyhow::Result<Option<PodTrust>> {
    let Some(cm) = &policy.pod_trust else { return Ok(None) };
    let mut files = Vec::new();
    for name in [MODEL_SIG, RELEASE_SIG] {
        if let Some(t) = bundle_files::signature_text(bundle_path, name) {
            let text = t.text.map_err(|e| anyhow::anyhow!("{}: {e}", t.shown))?;
            files.push((name, text));
        }
    }
    let pairs: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
    let signatures = signature::pod_env(&pairs)
        .map_err(|e| anyhow::anyhow!("carrying {}'s signatures into its pods: {e}", bundle_path.display()))?;
    Ok(Some(PodTrust { config_map: cm.clone(), signatures }))
}

/// The signatures the verifier's env var carries ([`pod_env`]'s text),
/// parsed; a value that is not that object is why.
pub(crate) fn from_pod_env(env: &str, text: &str) -> Result<signature::Signatures, String> {
    use crate::bundle::pod_verifier::MAX_POD_SIGNATURE_BYTES;
    if text.len() > MAX_POD_SIGNATURE_BYTES {
        return Err(format!("{env} is larger than {MAX_POD_SIGNATURE_BYTES} bytes"));
    }
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| format!("{env} is not JSON: {e}"))?;
    let obj = v.as_object().ok_or_else(|| format!("{env} is not a JSON object"))?;
    if let Some(k) = obj.keys().find(|k| !signature::POD_FILES.contains(&k.as_str())) {
        return Err(format!("{env}: unknown key {k:?} (expected {MODEL_SIG}, {RELEASE_SIG})"));
    }
    let file = |name: &str| {
        obj.get(name).map(|v| SigFile {
            shown: format!("{env}[{name}]"),
            parsed: crate::parse::sigstore::parse_file(&v.to_string()),
        })
    };
    Ok(signature::Signatures { model: file(MODEL_SIG), release: file(RELEASE_SIG), store_model: None })
}
