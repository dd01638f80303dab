//! The signature policy's gathering for `lint`, `verify` and the Argo CD
//! plugin: the signature files next to the bundle (and, for `verify`, the
//! store's `model.sig`), read bounded, then `checks::signature` judges.

use crate::adapters::bundle_files;
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::sign::MODEL_SIG;
use crate::checks::signature::{self, Mode, SigFile};
use crate::diag::Overrides;
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
