//! verify / publish / audit: gather through the store adapter (listing,
//! hashing with its concurrency, retries and progress bar), judge with
//! `checks::verify`.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::adapters::store::{self, Listed, Store};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::verify::{self as vcheck, HashOutcome};
use crate::diag::Overrides;
use crate::options::{Progress, VerifyOptions, MAX_JOBS};
use crate::report::{StepReport, Verdict};

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

pub(crate) async fn verify_step(
    ctx: &Ctx,
    path: &Path,
    opts: &VerifyOptions,
    ov: &Overrides,
    audit: Option<AuditCtx<'_>>,
) -> StepReport {
    let l = match super::load_or_step(path, "verify") {
        Ok(l) => l,
        Err(s) => return *s,
    };
    verify_loaded(ctx, &l, opts, ov, audit).await
}

pub(crate) async fn verify_loaded(
    ctx: &Ctx,
    l: &Loaded,
    opts: &VerifyOptions,
    ov: &Overrides,
    audit: Option<AuditCtx<'_>>,
) -> StepReport {
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
    let mut outcome = vcheck::evaluate_with_refused(l, &listing, &refused, &hashes, opts.deny_extra);
    let mut diags = std::mem::take(&mut outcome.diagnostics);
    diags.extend(drift_diagnostics(l, drift));
    let mut s = StepReport::new("verify", &l.display);
    s.diagnostics = ov.apply(diags);
    s.verdict = vcheck::verdict(l, &outcome, &s.diagnostics);
    s.summary = summary(l, &outcome, s.verdict, n_read, bytes, started.elapsed().as_secs_f64());
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
                let mut s = StepReport::new("verify", &l.display);
                s.diagnostics =
                    ov.apply(vec![vcheck::storage_outside_root(&out.0).at(l.span("spec.model.storageUri"))]);
                s.verdict = s.verdict_from_diagnostics();
                if s.verdict == Verdict::Pass {
                    // Allowed away by policy still checks nothing: never PASS.
                    s.verdict = Verdict::Inconclusive;
                }
                s.summary = format!("0/{} artifacts verified: {}", l.bundle.spec.model.artifacts.len(), out.0);
                return Err(Box::new(s));
            }
            Err(Box::new(StepReport::error("verify", &l.display, &e)))
        }
    }
}

/// An object the audit cache knew under another identity: (key, what the
/// cache recorded, what the store lists now).
type Drift = (String, CacheEntry, Listed);

/// What to read: the objects to hash now, those trusted from the audit
/// cache, and those whose identity moved since the cache entry.
struct Reads {
    hashes: BTreeMap<String, HashOutcome>,
    drift: Vec<Drift>,
    to_read: Vec<Listed>,
}

/// Sort the listed objects the bundle names into cached / to read (a deep
/// audit, or plain verify, reads everything); identity changes are drift.
fn plan_reads(
    l: &Loaded,
    listing: &[Listed],
    cache: Option<&AuditCache>,
    deep: bool,
    cache_key: &dyn Fn(&str) -> String,
) -> Reads {
    let candidates: Vec<Listed> = vcheck::to_hash(l, listing).into_iter().cloned().collect();
    let mut reads = Reads { hashes: BTreeMap::new(), drift: Vec::new(), to_read: Vec::new() };
    for o in candidates {
        if let Some(c) = cache.and_then(|c| c.objects.get(&cache_key(&o.key))) {
            if c.same_identity(&o) {
                if !deep {
                    reads.hashes.insert(
                        o.key.clone(),
                        HashOutcome::Cached { sha256: c.sha256.clone(), verified_at: c.verified_at.clone() },
                    );
                    continue;
                }
            } else {
                reads.drift.push((o.key.clone(), c.clone(), o.clone()));
            }
        }
        reads.to_read.push(o);
    }
    reads
}

/// Remember every object hashed now, under its listed identity.
fn record_hashed(
    cache: &mut AuditCache,
    listing: &[Listed],
    read: &BTreeMap<String, HashOutcome>,
    now: &str,
    cache_key: &dyn Fn(&str) -> String,
) {
    for o in listing {
        if let Some(HashOutcome::Hashed { sha256, .. }) = read.get(&o.key) {
            cache.objects.insert(
                cache_key(&o.key),
                CacheEntry {
                    e_tag: o.e_tag.clone(),
                    version: o.version.clone(),
                    size: o.size,
                    last_modified: o.last_modified.clone(),
                    sha256: sha256.clone(),
                    verified_at: now.to_string(),
                },
            );
        }
    }
}

/// One `artifact_drifted` finding per object whose identity moved since
/// the audit cache verified it, at the artifact's span when it has one.
fn drift_diagnostics(l: &Loaded, drift: Vec<Drift>) -> Vec<crate::report::Diagnostic> {
    use crate::checks::audit::{artifact_drifted, Identity};
    let mut diags = Vec::new();
    for (key, was, now) in drift {
        let field = l
            .bundle
            .spec
            .model
            .artifacts
            .iter()
            .position(|a| a.path == key)
            .map(|i| format!("spec.model.artifacts[{i}]"));
        let was_id = Identity { e_tag: was.e_tag.as_deref(), size: was.size, last_modified: &was.last_modified };
        let now_id = Identity { e_tag: now.e_tag.as_deref(), size: now.size, last_modified: &now.last_modified };
        let mut d = artifact_drifted(&key, &was.verified_at, was_id, now_id);
        if let Some(f) = field {
            d = d.at(l.span(&f)).field(f);
        }
        diags.push(d);
    }
    diags
}

/// "n/m artifacts OK under …; hashed …", and why an INCONCLUSIVE is one.
fn summary(l: &Loaded, outcome: &vcheck::Outcome, verdict: Verdict, n_read: usize, bytes: u64, secs: f64) -> String {
    let ok = outcome.rows.iter().filter(|r| r.status == vcheck::Status::Ok).count();
    let mut summary = format!(
        "{ok}/{} artifacts OK under {}; hashed {n_read} object(s), {} in {secs:.2}s",
        l.bundle.spec.model.artifacts.len(),
        l.bundle.spec.model.storage_uri,
        crate::util::human_bytes(bytes),
    );
    if verdict == Verdict::Inconclusive {
        summary.push_str(&if l.bundle.spec.model.artifacts.is_empty() {
            "; the bundle lists no artifacts: nothing was verified, never PASS".to_string()
        } else {
            format!("; {} artifact(s) not read, their findings allowed by policy: never PASS", outcome.unverified(l))
        });
    }
    summary
}

/// Infer an artifact's role from its file name (publish of a new folder).
pub(crate) fn infer_role(path: &str) -> bundle::ArtifactRole {
    use bundle::ArtifactRole as R;
    let name = path.rsplit('/').next().unwrap_or(path).to_ascii_lowercase();
    if name.contains("chat_template") || name.ends_with(".jinja") {
        R::ChatTemplate
    } else if name.starts_with("tokenizer") || name == "vocab.json" || name == "merges.txt" || name.ends_with(".model")
    {
        R::Tokenizer
    } else if name == "generation_config.json" {
        R::GenerationConfig
    } else if [".safetensors", ".bin", ".pt", ".pth", ".gguf", ".onnx", ".ckpt"].iter().any(|e| name.ends_with(e)) {
        R::Weights
    } else if name.contains("corpus") || name.contains("baseline") || name.contains("drift") {
        R::DriftBaseline
    } else if name.ends_with(".json") || name.ends_with(".yaml") {
        R::Config
    } else {
        R::Other
    }
}

pub async fn publish(ctx: &Ctx, dir: &Path, to: &str, bundle_path: &Path, jobs: usize) -> Result<StepReport> {
    let l = crate::adapters::bundle_files::load(bundle_path)?;
    let files = crate::adapters::local::regular_files(dir)?;
    if files.is_empty() {
        bail!("{} holds no files", dir.display());
    }
    let store = Arc::new(ctx.open_store(to, &l.dir(), true)?);
    // Every name is checked before anything is uploaded: one the store
    // would hold under another key would leave a half-written prefix.
    let files = store.publish_keys(files)?;
    let (existing, refused) = store.list_checked().await.with_context(|| format!("listing {to}"))?;
    if !existing.is_empty() || !refused.is_empty() {
        bail!(
            "refusing to publish into `{to}`: it already holds {} object(s) (one version, one path)",
            existing.len() + refused.len()
        );
    }
    // All or nothing: a failure deletes what was written, so the retry finds the prefix empty.
    let published = store.upload_all(files, jobs.clamp(1, MAX_JOBS)).await?;
    match record_published(&l, bundle_path, to, &published) {
        Ok(s) => Ok(s),
        Err(e) => {
            let keys: Vec<String> = published.keys().cloned().collect();
            Err(store
                .undo_publish(&keys, e.context(format!("recording the release in {}", bundle_path.display())))
                .await)
        }
    }
}

/// Rewrite the bundle after a publish: storageUri and artifacts.
fn record_published(l: &Loaded, bundle_path: &Path, to: &str, published: &store::Published) -> Result<StepReport> {
    let is_s3 = matches!(bundle::storage_uri::backend_of(to), Some((_, bundle::storage_uri::Backend::S3)));
    // Rewrite the bundle: storageUri and artifacts; roles kept by path, else inferred.
    let text = crate::adapters::bundle_files::read_bundle_text(bundle_path)?;
    let mut doc: serde_json::Value =
        crate::yaml_guard::from_str(&bundle_path.display().to_string(), &text, &crate::yaml_guard::Limits::DEFAULT)?;
    let old_roles: BTreeMap<String, bundle::ArtifactRole> =
        l.bundle.spec.model.artifacts.iter().map(|a| (a.path.clone(), a.role)).collect();
    let arts: Vec<bundle::Artifact> = published
        .iter()
        .map(|(rel, (sha, size))| bundle::Artifact {
            path: rel.clone(),
            sha256: Some(sha.clone()),
            size: Some(*size),
            role: old_roles.get(rel).copied().unwrap_or_else(|| infer_role(rel)),
            store_checksum: if is_s3 && *size <= store::SINGLE_PUT_MAX {
                Some(format!("x-amz-checksum-sha256:{}", crate::util::b64_of_hex(sha)))
            } else {
                None
            },
        })
        .collect();
    let edits: Vec<bundle::edit::NewArtifact> = arts
        .iter()
        .map(|a| bundle::edit::NewArtifact {
            path: a.path.clone(),
            sha256: a.sha256.clone().unwrap_or_default(),
            size: a.size.unwrap_or(0),
            role: serde_json::to_value(a.role)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "other".into()),
            store_checksum: a.store_checksum.clone(),
        })
        .collect();
    // Splice only the changed values so the reviewed file keeps its comments
    // and style; a layout the editor cannot splice is re-serialised, and the
    // summary says so.
    let mut rewritten = None;
    let new_text = match bundle::edit::publish_edit(&text, to, &edits) {
        Ok(t) => t,
        Err(why) => {
            let model = doc.get_mut("spec").and_then(|s| s.get_mut("model")).context("bundle has no spec.model")?;
            model["storageUri"] = serde_json::Value::String(to.to_string());
            model["artifacts"] = serde_json::to_value(&arts)?;
            rewritten = Some(why);
            crate::manifests::to_yaml(&doc)
        }
    };
    // Validate before writing: publish never leaves an unparseable bundle.
    let reparsed = bundle::parse(&l.display, bundle_path, new_text.clone())?;
    crate::adapters::local::write_atomic(bundle_path, new_text.as_bytes())?;
    let mut s = StepReport::new("publish", &l.display);
    s.summary =
        format!("published {} file(s) to {to}; bundle updated, release digest {}", published.len(), reparsed.digest);
    if let Some(why) = rewritten {
        tracing::warn!("{}: rewritten as a whole ({why}); comments and formatting were not kept", l.display);
        s.summary
            .push_str(&format!("; the bundle was rewritten as a whole ({why}): comments and formatting were not kept"));
    }
    s.tables.push(crate::report::Table {
        title: "published".into(),
        columns: vec!["path".into(), "size".into(), "sha256".into(), "role".into()],
        rows: arts
            .iter()
            .map(|a| {
                vec![
                    a.path.clone(),
                    a.size.unwrap_or(0).to_string(),
                    a.sha256.clone().unwrap_or_default(),
                    format!("{:?}", a.role),
                ]
            })
            .collect(),
    });
    s.data = serde_json::json!({"storageUri": to, "artifacts": arts, "releaseDigest": reparsed.digest});
    Ok(s)
}

pub use crate::adapters::bundle_files::find_bundles;
