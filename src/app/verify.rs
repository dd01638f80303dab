//! `bundlegate verify` (and the hashing audit shares): gather through the
//! store adapter (listing, hashing with its concurrency, retries and progress
//! bar), judge with `checks::verify`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};

use crate::adapters::store::{self, Store};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::verify::cache::{drift_diagnostics, plan_reads, record_hashed, AuditCache, Reads};
use crate::checks::verify::{self as vcheck, Listed};
use crate::diag::Overrides;
use crate::options::{Progress, VerifyOptions, MAX_JOBS};
use crate::report::StepReport;

/// The audit's cache and depth, when verify runs as part of an audit.
pub(crate) struct AuditPass<'a> {
    pub cache: &'a mut AuditCache,
    pub deep: bool,
}

/// Verify one loaded bundle against its object store; then its signatures
/// when `--config` sets a signature policy.
pub(crate) fn run(ctx: &Ctx, l: &Loaded, opts: &VerifyOptions, ov: &Overrides) -> Result<Vec<StepReport>> {
    ctx.block_on(async {
        let mut steps = vec![verify_loaded(ctx, l, opts, ov, None).await];
        steps.extend(crate::app::signature::with_store(ctx, l, ov).await);
        steps
    })
}

pub(crate) async fn verify_loaded(
    ctx: &Ctx,
    l: &Loaded,
    opts: &VerifyOptions,
    ov: &Overrides,
    audit: Option<AuditPass<'_>>,
) -> StepReport {
    if bundle::storage_uri::backend_of(&l.bundle.spec.model.storage_uri).map(|(_, b)| b)
        == Some(bundle::storage_uri::Backend::Oci)
    {
        // A registry has no cache identity to trust yet: audit reads it as verify does.
        return verify_oci(ctx, l, opts, ov).await;
    }
    let uri = bundle::resolve_storage_uri(l);
    let started = std::time::Instant::now();
    let store = match open_store(ctx, l, ov) {
        Ok(s) => s,
        Err(step) => return *step,
    };
    let (listing, refused) = match store.list_checked().await {
        Ok(v) => v,
        Err(e) => {
            return StepReport::error(
                "verify",
                &l.display,
                &e.context(format!("store for {} unreachable or unreadable", l.display)),
            )
        }
    };
    // The store's own `model.sig` is the signature the signature step reads, not EXTRA.
    let listing: Vec<Listed> = listing
        .into_iter()
        .filter(|o| !crate::checks::signature::is_store_signature(l, &ctx.signature, &o.key))
        .collect();
    let cache_key = |k: &str| format!("{}/{}", uri.trim_end_matches('/'), k);
    let (cache, deep) = match audit {
        Some(a) => (Some(a.cache), a.deep),
        None => (None, true),
    };
    let Reads { mut hashes, drift, to_read } = plan_reads(l, &listing, cache.as_deref(), deep, &cache_key);
    let bytes: u64 = to_read.iter().map(|o| o.size).sum();
    let n_read = to_read.len();
    let read = store.hash_all(to_read, opts.jobs.clamp(1, MAX_JOBS), show_progress(opts.progress)).await;
    if let Some(cache) = cache {
        record_hashed(cache, &listing, &read, &ctx.now().to_rfc3339(), &cache_key);
    }
    hashes.extend(read);
    let outcome = vcheck::evaluate_with_refused(l, &listing, &refused, &hashes, opts.deny_extra);
    let read = vcheck::Read { objects: n_read, bytes, secs: started.elapsed().as_secs_f64() };
    vcheck::step(l, ov, outcome, drift_diagnostics(l, drift), read)
}

/// Verify a model in an OCI registry, manifest first: the manifest by its
/// digest (hashed to it), each matching raw layer's blob `HEAD`ed (no blob
/// byte read; `--deep` reads it whole instead), each archive layer
/// streamed and walked (its files hashed), the one judgment.
async fn verify_oci(ctx: &Ctx, l: &Loaded, opts: &VerifyOptions, ov: &Overrides) -> StepReport {
    let started = std::time::Instant::now();
    let g = match gather_oci(ctx, l, opts.deep).await {
        Ok(g) => g,
        Err(e) => {
            return StepReport::error(
                "verify",
                &l.display,
                &e.context(format!("registry for {} unreachable or unreadable", l.display)),
            )
        }
    };
    let f = &g.from;
    let mut outcome = vcheck::evaluate_with_refused(l, &f.listing, &f.refused, &f.hashes, opts.deny_extra);
    vcheck::oci::note_manifest_rows(&mut outcome.rows, f, &g.present, &g.read);
    let moved: Vec<_> = g
        .tag
        .iter()
        .filter_map(|(tag, now)| vcheck::oci::tag_moved(&l.bundle.spec.model.storage_uri, tag, &g.digest, now))
        .collect();
    let read = vcheck::Read {
        objects: g.read.len() + f.in_layer.len(),
        bytes: g.bytes_read,
        secs: started.elapsed().as_secs_f64(),
    };
    let registry =
        vcheck::oci::RegistryRead { digest: &g.digest, headed: g.present.len(), read: g.read.len(), walked: g.walked };
    vcheck::oci::step(l, ov, outcome, moved, read, f, &registry)
}

/// What the registry said about one bundle's model.
struct OciGathered {
    from: vcheck::oci::FromManifest,
    digest: String,
    /// Raw layers found present by `HEAD`, and read whole (`--deep`).
    present: BTreeSet<String>,
    read: BTreeSet<String>,
    /// Archive layers walked, and the blob bytes read in all.
    walked: usize,
    bytes_read: u64,
    /// The tag the bundle names, and the manifest it names now.
    tag: Option<(String, Result<Option<String>, String>)>,
}

/// What the registry says: the manifest, each archive layer walked, read
/// as a listing, with each raw layer's `HEAD` (or, `deep`, its whole
/// read) folded in.
async fn gather_oci(ctx: &Ctx, l: &Loaded, deep: bool) -> Result<OciGathered> {
    use crate::checks::verify::ReadFailure;
    let uri = &l.bundle.spec.model.storage_uri;
    let r = bundle::storage_uri::parse(uri).map_err(|e| anyhow!(e))?.oci.context("not an OCI reference")?;
    let Some(digest) = r.digest.clone() else {
        bail!("`{uri}` names no manifest digest: verify reads a registry only by `@sha256:<manifest digest>`, since a tag can be moved (lint: BG026)");
    };
    let reg = ctx.open_registry(&r)?;
    let tag = match &r.tag {
        Some(t) => Some((t.clone(), reg.tag_digest(t).await.map_err(|e| format!("{e:#}")))),
        None => None,
    };
    let Some(bytes) = reg.manifest(&digest).await? else {
        let (present, read) = (BTreeSet::new(), BTreeSet::new());
        return Ok(OciGathered {
            from: vcheck::oci::manifest_gone(),
            digest,
            present,
            read,
            walked: 0,
            bytes_read: 0,
            tag,
        });
    };
    let m = crate::parse::oci::manifest(&format!("{}/{}@{digest}", r.registry, r.repository), &bytes)?;
    // Once the registry stops answering, nothing further is asked (each
    // would wait out its own timeout): the rest are NOT CHECKED.
    let mut gone: Option<String> = None;
    let stopped = |why: &String| ReadFailure::NotChecked(format!("the registry stopped answering: {why}"));
    let root = vcheck::oci::model_root(m.kind());
    let mut walked = BTreeMap::new();
    let mut bytes_read = 0;
    for (layer, size, form) in vcheck::oci::layers_to_walk(&m) {
        let w = match &gone {
            Some(why) => Err(stopped(why)),
            None => reg.walk_layer(&layer, size, form, move |p| vcheck::oci::entry_wanted(root, p)).await,
        };
        match &w {
            Err(ReadFailure::Unreachable(why)) => gone = Some(why.clone()),
            Ok(_) => bytes_read += size,
            Err(_) => {}
        }
        walked.insert(layer, w);
    }
    let n_walked = walked.values().filter(|w| w.is_ok()).count();
    let mut f = vcheck::oci::from_manifest(&m, &digest, &l.bundle.spec.model.artifacts, &walked);
    let (mut heads, mut reads) = (Vec::new(), Vec::new());
    for (path, blob, size) in vcheck::oci::blobs_to_head(l, &f) {
        if let Some(why) = &gone {
            heads.push((path, size, Err(stopped(why))));
            continue;
        }
        if deep {
            let read = reg.hash_blob(&blob, size).await;
            if read.is_ok() {
                bytes_read += size;
            }
            if let Err(ReadFailure::Unreachable(why)) = &read {
                gone = Some(why.clone());
            }
            reads.push((path, read));
        } else {
            let head = reg.head_blob(&blob).await;
            if let Err(ReadFailure::Unreachable(why)) = &head {
                gone = Some(why.clone());
            }
            heads.push((path, size, head));
        }
    }
    let present = vcheck::oci::apply_heads(&mut f, heads);
    let read = vcheck::oci::apply_rereads(&mut f, reads);
    Ok(OciGathered { from: f, digest, present, read, walked: n_walked, bytes_read, tag })
}

/// Whether the hashing progress bar is drawn: `auto` when stderr is a terminal.
fn show_progress(mode: Progress) -> bool {
    match mode {
        Progress::Always => true,
        Progress::Never => false,
        Progress::Auto => std::io::stderr().is_terminal(),
    }
}

/// The bundle's store, or the step that says why it cannot be read: a
/// `file:` prefix outside the store root is a finding, anything else an
/// ERROR.
fn open_store(ctx: &Ctx, l: &Loaded, ov: &Overrides) -> Result<Arc<Store>, Box<StepReport>> {
    match ctx.open_store(&l.bundle.spec.model.storage_uri, &l.dir(), false) {
        Ok(s) => Ok(Arc::new(s)),
        Err(e) => {
            if let Some(out) = e.downcast_ref::<store::OutsideRoot>() {
                return Err(Box::new(vcheck::outside_root_step(l, ov, &out.0)));
            }
            Err(Box::new(StepReport::error("verify", &l.display, &e)))
        }
    }
}
