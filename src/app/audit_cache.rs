//! The audit's cache around verify: the legacy single file (read once,
//! written back at the end) or one object per bundle in a folder or an
//! object store (read and written per bundle, so concurrent shards never
//! overwrite each other's entries), all through the blob adapter. A cache
//! that cannot be trusted costs time, never correctness: it is rebuilt
//! (re-hashed) and a note says so.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::verify::{verify_loaded, AuditPass};
use crate::adapters::blob::{self, BlobDir};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::audit::steps::cache_object_name;
use crate::checks::verify::cache::{AuditCache, CacheEntry};
use crate::checks::verify::drift::cache_rebuilt;
use crate::diag::{Diagnostic, Overrides};
use crate::options::VerifyOptions;
use crate::report::StepReport;
use crate::yaml_guard::{json_from_slice, Limits};

/// Cache objects are small; anything bigger is not ours.
const CACHE_OBJECT_LIMIT: u64 = 64 << 20;

const CACHE_SCHEMA: &str = "bundlegate.dev/audit-cache/v2";

/// The cache of one bundle.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleCache {
    schema: String,
    bundle: String,
    objects: BTreeMap<String, CacheEntry>,
}

/// An opened cache: the file's contents (and a note when it could not be
/// read), or the directory.
pub(crate) enum Cache {
    File(PathBuf, (AuditCache, Option<Diagnostic>)),
    Dir(BlobDir),
}

fn empty() -> AuditCache {
    AuditCache { version: 1, ..Default::default() }
}

/// A path in the cache that is not a regular file (a FIFO, a device, a
/// folder): refused unread by the one reader. Not a cache bundlegate wrote,
/// so the audit stops naming it instead of re-hashing around it.
fn refused_non_file(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidInput))
}

impl Cache {
    /// `shared`: more than one shard uses it, which a single file cannot be.
    pub(crate) fn open(location: &str, shared: bool) -> Result<Cache> {
        let loc = blob::location(location).context("--cache")?;
        match &loc {
            crate::bundle::storage_uri::Location::Local(p) if p.extension().is_some_and(|e| e == "json") => {
                if shared {
                    bail!("--cache {location}: a single cache file cannot be shared by shards; give a folder or an object-store prefix (one object per bundle)");
                }
                Ok(Cache::File(p.clone(), load_file_cache(p)?))
            }
            _ => Ok(Cache::Dir(BlobDir::at(&loc, location)?)),
        }
    }

    /// Verify one bundle (`id`) against its store through this cache.
    pub(crate) async fn audit_one(
        &mut self,
        ctx: &Ctx,
        id: &str,
        l: &Loaded,
        deep: bool,
        vo: &VerifyOptions,
        ov: &Overrides,
    ) -> Result<StepReport> {
        match self {
            Cache::File(_, (cache, note)) => {
                let mut s = verify_loaded(ctx, l, vo, ov, Some(AuditPass { cache, deep })).await;
                if let Some(n) = note.take() {
                    s.diagnostics.push(n);
                }
                Ok(s)
            }
            Cache::Dir(d) => {
                let (mut cache, note, was) = read_object(d, id).await?;
                let mut s = verify_loaded(ctx, l, vo, ov, Some(AuditPass { cache: &mut cache, deep })).await;
                if let Some(n) = note {
                    s.diagnostics.push(n);
                }
                write_object(d, id, l, cache, was.as_deref()).await?;
                Ok(s)
            }
        }
    }

    /// Write the file cache back (the directory's objects are written as
    /// each bundle is audited).
    pub(crate) fn finish(&self) -> Result<()> {
        match self {
            Cache::File(p, (cache, _)) => save_file(cache, p),
            Cache::Dir(_) => Ok(()),
        }
    }
}

/// The legacy file cache. Corrupt or foreign: start empty (re-hash), say so.
fn load_file_cache(p: &Path) -> Result<(AuditCache, Option<Diagnostic>)> {
    let shown = p.display().to_string();
    // The one bounded, regular-file-only reader (a FIFO here would block).
    let read = match crate::adapters::bundle_files::read_bytes(p, CACHE_OBJECT_LIMIT * 4, "cache file") {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow::Error::new(e).context(format!("reading {shown}"))),
    };
    Ok(match read {
        Ok(None) => (empty(), None),
        Ok(Some(b)) => match json_from_slice::<AuditCache>(&shown, &b, &Limits::WRITTEN) {
            Ok(c) if c.version == 1 => (c, None),
            Ok(c) => (empty(), Some(cache_rebuilt(&shown, &format!("unknown cache version {}", c.version)))),
            Err(e) => (empty(), Some(cache_rebuilt(&shown, &format!("corrupt: {e:#}")))),
        },
        Err(e) if refused_non_file(&e) => return Err(e),
        Err(e) => (empty(), Some(cache_rebuilt(&shown, &format!("{e:#}")))),
    })
}

/// One bundle's object in the cache directory, and its bytes when it was
/// ours (to tell whether it changed). Foreign, another bundle's or
/// corrupt: start empty (re-hash), say so.
async fn read_object(d: &BlobDir, id: &str) -> Result<(AuditCache, Option<Diagnostic>, Option<Vec<u8>>)> {
    let name = cache_object_name(id);
    let shown = format!("{}/{name}", d.display.trim_end_matches('/'));
    Ok(match d.get(&name, CACHE_OBJECT_LIMIT).await {
        Ok(None) => (empty(), None, None),
        Ok(Some(b)) => match json_from_slice::<BundleCache>(&shown, &b, &Limits::WRITTEN) {
            Ok(c) if c.schema == CACHE_SCHEMA && c.bundle == id => {
                (AuditCache { version: 1, objects: c.objects }, None, Some(b))
            }
            Ok(c) if c.schema != CACHE_SCHEMA => {
                (empty(), Some(cache_rebuilt(&shown, &format!("foreign schema `{}`", c.schema))), None)
            }
            Ok(c) => (empty(), Some(cache_rebuilt(&shown, &format!("it belongs to bundle `{}`", c.bundle))), None),
            Err(e) => (empty(), Some(cache_rebuilt(&shown, &format!("corrupt: {e:#}"))), None),
        },
        Err(e) if refused_non_file(&e) => return Err(e),
        // An unreadable shared cache costs time, never correctness: re-hash.
        Err(e) => (empty(), Some(cache_rebuilt(&shown, &format!("{e:#}"))), None),
    })
}

/// Write one bundle's object back: only its own objects (entries of a
/// prefix it no longer uses go). When that is byte for byte the object
/// read (`was`: nothing hashed, nothing dropped, the usual warm audit) it
/// is not written again: a write per bundle was a third of a warm audit's
/// time on a local folder, and one PUT per bundle on a bucket.
async fn write_object(d: &BlobDir, id: &str, l: &Loaded, cache: AuditCache, was: Option<&[u8]>) -> Result<()> {
    let uri = bundle::resolve_storage_uri(l);
    let keep = format!("{}/", uri.trim_end_matches('/'));
    let objects: BTreeMap<String, CacheEntry> =
        cache.objects.into_iter().filter(|(k, _)| k.starts_with(&keep)).collect();
    let body = serde_json::to_string(&BundleCache { schema: CACHE_SCHEMA.into(), bundle: id.to_string(), objects })?;
    let body = crate::report::escape::json(&body).into_owned().into_bytes();
    if was == Some(body.as_slice()) {
        return Ok(());
    }
    d.put(&cache_object_name(id), body).await
}

/// Write the legacy cache file, atomically: a crash never leaves a
/// half-written cache.
fn save_file(cache: &AuditCache, p: &Path) -> Result<()> {
    let text = crate::report::escape::json(&serde_json::to_string_pretty(cache)?).into_owned();
    crate::adapters::local::write_atomic(p, text.as_bytes())
}
