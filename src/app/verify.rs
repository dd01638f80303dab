//! `bundlegate verify` (and the hashing audit shares): gather through the
//! store adapter, judge with `checks::verify`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;

use crate::adapters::store::{self, Listed, ReadFailure, Store};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::verify::{self as vcheck, HashOutcome};
use crate::diag::Overrides;
use crate::options::{Progress, VerifyOptions, MAX_JOBS};
use crate::report::{StepReport, Verdict};

/// Transient failures are retried this many times, with exponential backoff.
const RETRIES: u32 = 3;

fn progress_bar(total: u64, mode: Progress) -> indicatif::ProgressBar {
    let show = match mode {
        Progress::Always => true,
        Progress::Never => false,
        Progress::Auto => std::io::stderr().is_terminal(),
    };
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} verifying {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {wide_bar}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb
}

/// Hash `objs` concurrently (at most `jobs` at once), each pinned to its
/// listed identity, retrying transient failures.
pub(crate) async fn hash_all(
    store: Arc<Store>,
    mut objs: Vec<Listed>,
    jobs: usize,
    progress: Progress,
) -> BTreeMap<String, HashOutcome> {
    // Largest first: one file's sha256 is serial, so the biggest object sets
    // the floor; starting it last would add the others' time on top.
    objs.sort_by_key(|o| std::cmp::Reverse(o.size));
    let total: u64 = objs.iter().map(|o| o.size).sum();
    let pb = progress_bar(total, progress);
    let tick: store::Progress = {
        let pb = pb.clone();
        Arc::new(move |n| pb.inc(n))
    };
    let sem = Arc::new(Semaphore::new(jobs.clamp(1, MAX_JOBS)));
    // Set by the first object that finds the endpoint gone (connection
    // refused, DNS): nothing new is started, the rest are NOT CHECKED with
    // that one reason instead of each spending its own retries on it.
    let gone: Arc<std::sync::OnceLock<String>> = Arc::new(std::sync::OnceLock::new());
    let mut set = tokio::task::JoinSet::new();
    for o in objs {
        let store = store.clone();
        let sem = sem.clone();
        let tick = tick.clone();
        let gone = gone.clone();
        set.spawn(async move {
            let _permit = sem.acquire_owned().await.expect("semaphore open");
            let mut retries = Vec::new();
            loop {
                if let Some(why) = gone.get() {
                    let failure = ReadFailure::NotChecked(format!(
                        "the store stopped answering before this object was read ({why})"
                    ));
                    return (o.key, HashOutcome::Failed { failure, retries });
                }
                match store.hash(&o, tick.clone()).await {
                    Ok(sha256) => return (o.key, HashOutcome::Hashed { sha256, retries }),
                    Err(ReadFailure::Unreachable(why)) => {
                        let _ = gone.set(why.clone());
                        return (o.key, HashOutcome::Failed { failure: ReadFailure::Unreachable(why), retries });
                    }
                    Err(f @ (ReadFailure::Other(_) | ReadFailure::Truncated { .. }))
                        if (retries.len() as u32) < RETRIES =>
                    {
                        let wait = Duration::from_millis(200 << retries.len());
                        tracing::warn!("{}: {f}; retrying in {wait:?}", o.key);
                        retries.push(f.to_string());
                        tokio::time::sleep(wait).await;
                    }
                    Err(failure) => return (o.key, HashOutcome::Failed { failure, retries }),
                }
            }
        });
    }
    let mut out = BTreeMap::new();
    while let Some(j) = set.join_next().await {
        match j {
            Ok((k, h)) => {
                out.insert(k, h);
            }
            Err(e) => tracing::error!("hashing task failed: {e}"),
        }
    }
    pb.finish_and_clear();
    out
}

/// Incremental-audit cache: object identity → verified sha256.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct AuditCache {
    pub version: u32,
    pub objects: BTreeMap<String, CacheEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(crate) struct CacheEntry {
    pub e_tag: Option<String>,
    pub version: Option<String>,
    pub size: u64,
    pub last_modified: String,
    pub sha256: String,
    pub verified_at: String,
}

impl CacheEntry {
    fn same_identity(&self, o: &Listed) -> bool {
        self.size == o.size
            && self.e_tag == o.e_tag
            && self.version == o.version
            && self.last_modified == o.last_modified
    }
}

impl AuditCache {
    pub(crate) fn save(&self, p: &Path) -> Result<()> {
        // Atomic: a crash never leaves a half-written cache.
        crate::adapters::local::write_atomic(p, &serde_json::to_vec_pretty(self)?)
    }
}

pub(crate) struct AuditCtx<'a> {
    pub cache: &'a mut AuditCache,
    pub deep: bool,
}

/// Verify one loaded bundle against its object store.
pub(crate) fn run(ctx: &Ctx, l: &Loaded, opts: &VerifyOptions, ov: &Overrides) -> Result<Vec<StepReport>> {
    ctx.block_on(verify_loaded(ctx, l, opts, ov, None)).map(|s| vec![s])
}

#[expect(clippy::too_many_lines, reason = "to be split into named steps (issue #28)")]
pub(crate) async fn verify_loaded(
    ctx: &Ctx,
    l: &Loaded,
    opts: &VerifyOptions,
    ov: &Overrides,
    audit: Option<AuditCtx<'_>>,
) -> StepReport {
    let uri = bundle::resolve_storage_uri(l);
    let started = std::time::Instant::now();
    let store = match ctx.open_store(&l.bundle.spec.model.storage_uri, &l.dir(), false) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            if let Some(out) = e.downcast_ref::<store::OutsideRoot>() {
                let mut s = StepReport::new("verify", &l.display);
                s.diagnostics =
                    ov.apply(vec![vcheck::storage_outside_root(&out.0).at(l.span("spec.model.storageUri"))]);
                s.verdict = s.verdict_from_diagnostics();
                if s.verdict == Verdict::Pass {
                    // Allowed away by policy still checks nothing: never PASS.
                    s.verdict = Verdict::Inconclusive;
                }
                s.summary = format!("0/{} artifacts verified: {}", l.bundle.spec.model.artifacts.len(), out.0);
                return s;
            }
            return StepReport::error("verify", &l.display, &e);
        }
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
    let candidates: Vec<Listed> = vcheck::to_hash(l, &listing).into_iter().cloned().collect();
    let mut hashes = BTreeMap::new();
    let mut drift = Vec::new();
    let mut to_read = Vec::new();
    let cache_key = |k: &str| format!("{}/{}", uri.trim_end_matches('/'), k);
    let (cache, deep) = match audit {
        Some(a) => (Some(a.cache), a.deep),
        None => (None, true),
    };
    for o in candidates {
        if let Some(c) = cache.as_ref().and_then(|c| c.objects.get(&cache_key(&o.key))) {
            if c.same_identity(&o) {
                if !deep {
                    hashes.insert(
                        o.key.clone(),
                        HashOutcome::Cached { sha256: c.sha256.clone(), verified_at: c.verified_at.clone() },
                    );
                    continue;
                }
            } else {
                drift.push((o.key.clone(), c.clone(), o.clone()));
            }
        }
        to_read.push(o);
    }
    let bytes: u64 = to_read.iter().map(|o| o.size).sum();
    let n_read = to_read.len();
    let read = hash_all(store.clone(), to_read, opts.jobs, opts.progress).await;
    if let Some(cache) = cache {
        let now = ctx.now().to_rfc3339();
        for o in &listing {
            if let Some(HashOutcome::Hashed { sha256, .. }) = read.get(&o.key) {
                cache.objects.insert(
                    cache_key(&o.key),
                    CacheEntry {
                        e_tag: o.e_tag.clone(),
                        version: o.version.clone(),
                        size: o.size,
                        last_modified: o.last_modified.clone(),
                        sha256: sha256.clone(),
                        verified_at: now.clone(),
                    },
                );
            }
        }
    }
    hashes.extend(read);
    let mut outcome = vcheck::evaluate_with_refused(l, &listing, &refused, &hashes, opts.deny_extra);
    let mut diags = std::mem::take(&mut outcome.diagnostics);
    for (key, was, now) in drift {
        let field = l
            .bundle
            .spec
            .model
            .artifacts
            .iter()
            .position(|a| a.path == key)
            .map(|i| format!("spec.model.artifacts[{i}]"));
        use crate::checks::audit::{artifact_drifted, Identity};
        let was_id = Identity { e_tag: was.e_tag.as_deref(), size: was.size, last_modified: &was.last_modified };
        let now_id = Identity { e_tag: now.e_tag.as_deref(), size: now.size, last_modified: &now.last_modified };
        let mut d = artifact_drifted(&key, &was.verified_at, was_id, now_id);
        if let Some(f) = field {
            d = d.at(l.span(&f)).field(f);
        }
        diags.push(d);
    }
    let mut s = StepReport::new("verify", &l.display);
    s.diagnostics = ov.apply(diags);
    s.verdict = vcheck::verdict(l, &outcome, &s.diagnostics);
    let ok = outcome.rows.iter().filter(|r| r.status == vcheck::Status::Ok).count();
    s.summary = format!(
        "{ok}/{} artifacts OK under {}; hashed {n_read} object(s), {} in {:.2}s",
        l.bundle.spec.model.artifacts.len(),
        l.bundle.spec.model.storage_uri,
        crate::util::human_bytes(bytes),
        started.elapsed().as_secs_f64()
    );
    if s.verdict == Verdict::Inconclusive {
        s.summary.push_str(&if l.bundle.spec.model.artifacts.is_empty() {
            "; the bundle lists no artifacts: nothing was verified, never PASS".to_string()
        } else {
            format!("; {} artifact(s) not read, their findings allowed by policy: never PASS", outcome.unverified(l))
        });
    }
    s.tables.push(vcheck::table(&outcome.rows));
    s.data = serde_json::json!({
        "storageUri": l.bundle.spec.model.storage_uri,
        "releaseDigest": l.digest,
        "artifacts": outcome.rows,
        "bytesHashed": bytes,
        "objectsHashed": n_read,
    });
    s
}

pub use crate::adapters::bundle_files::find_bundles;
