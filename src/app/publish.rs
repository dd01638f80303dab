//! `bundlegate publish`: upload a model folder to a new versioned prefix
//! and record each file's sha256/size in the bundle.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{bail, Context, Result};

use crate::adapters::store;
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::options::{PublishOptions, MAX_JOBS};
use crate::report::StepReport;

/// Upload `dir` to `o.to` (all or nothing) and record what was written in
/// `o.bundle`. Any failure is the tool failing (nothing half-published).
pub fn run(ctx: &Ctx, dir: &Path, o: &PublishOptions) -> Result<StepReport> {
    ctx.try_block_on(publish(ctx, dir, &o.to, &o.bundle, o.jobs))
}

pub async fn publish(ctx: &Ctx, dir: &Path, to: &str, bundle_path: &Path, jobs: usize) -> Result<StepReport> {
    let l = crate::adapters::bundle_files::load(bundle_path)?;
    let files = crate::adapters::local::regular_files(dir)?;
    if files.is_empty() {
        bail!("{} holds no files", dir.display());
    }
    if matches!(bundle::storage_uri::backend_of(to), Some((_, bundle::storage_uri::Backend::Oci))) {
        return publish_oci(ctx, &l, files, to, bundle_path).await;
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

/// Publish to an OCI registry as a ModelPack artifact of raw layers, one
/// per file. Everything is hashed and the manifest built first, so a tag
/// that already names another manifest is refused before any upload; then
/// the blobs the repository lacks, then the manifest (under the tag, or its
/// digest). The bundle records `…[:tag]@sha256:<manifest digest>`.
async fn publish_oci(
    ctx: &Ctx,
    l: &Loaded,
    files: Vec<(std::path::PathBuf, std::path::PathBuf)>,
    to: &str,
    bundle_path: &Path,
) -> Result<StepReport> {
    let r = bundle::storage_uri::parse(to).map_err(|e| anyhow::anyhow!(e))?.oci.context("not an OCI reference")?;
    if r.digest.is_some() {
        bail!("refusing to publish to `{to}`: name a repository and optionally a tag; the manifest digest is what publish writes and records");
    }
    let mut hashed = Vec::new();
    for (rel, full) in files {
        let path = oci_path(&rel)?;
        let (sha, size) = crate::adapters::oci::hash_file(&full).await?;
        hashed.push((path, full, sha, size));
    }
    let roles: BTreeMap<&str, bundle::ArtifactRole> =
        l.bundle.spec.model.artifacts.iter().map(|a| (a.path.as_str(), a.role)).collect();
    let pack: Vec<crate::parse::oci::PackFile<'_>> = hashed
        .iter()
        .map(|(path, _, sha, size)| crate::parse::oci::PackFile {
            path,
            sha256: sha,
            size: *size,
            role: roles.get(path.as_str()).copied().unwrap_or_else(|| bundle::roles::infer_role(path)),
        })
        .collect();
    let meta = &l.bundle.metadata;
    let (config, manifest) = crate::parse::oci::modelpack_artifact(&meta.name, &meta.version, &pack);
    let digest = format!("sha256:{}", crate::util::sha256_hex(&manifest));
    let reg = ctx.open_registry_for_push(&r)?;
    if let Some(tag) = &r.tag {
        match reg.tag_digest(tag).await.with_context(|| format!("reading what `{to}` names"))? {
            Some(other) if other != digest => bail!(
                "refusing to publish to `{to}`: the tag already names manifest {other} (one tag, one release; nothing was uploaded)"
            ),
            _ => {}
        }
    }
    let config_digest = format!("sha256:{}", crate::util::sha256_hex(&config));
    if !reg.has_blob(&config_digest).await? {
        reg.put_blob_bytes(&config_digest, config).await?;
    }
    let mut published = store::Published::new();
    for (path, full, sha, size) in hashed {
        let blob = format!("sha256:{sha}");
        if !reg.has_blob(&blob).await? {
            reg.put_blob_file(&blob, size, &full).await?;
        }
        published.insert(path, (sha, size));
    }
    reg.put_manifest(r.tag.as_deref().unwrap_or(&digest), manifest).await?;
    let pinned = format!("{to}@{digest}");
    record_published(l, bundle_path, &pinned, &published).with_context(|| {
        format!("the artifact is in the registry as `{pinned}`; recording it in {}", bundle_path.display())
    })
}

/// A published file's path in the model: `/`-separated UTF-8 components,
/// none `.` or `..` (the layer's `org.cncf.model.filepath`).
fn oci_path(rel: &Path) -> Result<String> {
    let parts: Option<Vec<&str>> = rel
        .components()
        .map(|c| match c {
            std::path::Component::Normal(s) => s.to_str(),
            _ => None,
        })
        .collect();
    match parts {
        Some(p) if !p.is_empty() => Ok(p.join("/")),
        _ => bail!(
            "refusing to publish `{}`: its name is not a plain UTF-8 relative path (nothing was uploaded)",
            rel.display()
        ),
    }
}

/// Rewrite the bundle after a publish: storageUri and artifacts.
fn record_published(l: &Loaded, bundle_path: &Path, to: &str, published: &store::Published) -> Result<StepReport> {
    let is_s3 = matches!(bundle::storage_uri::backend_of(to), Some((_, bundle::storage_uri::Backend::S3)));
    // Rewrite the bundle: storageUri and artifacts; roles kept by path, else inferred.
    let text = crate::adapters::bundle_files::read_bundle_text(bundle_path)?;
    let mut doc: serde_json::Value =
        crate::yaml_guard::from_str(&bundle_path.display().to_string(), &text, &crate::yaml_guard::Limits::DEFAULT)?;
    let old: BTreeMap<&str, &bundle::Artifact> =
        l.bundle.spec.model.artifacts.iter().map(|a| (a.path.as_str(), a)).collect();
    let arts: Vec<bundle::Artifact> = published
        .iter()
        .map(|(rel, (sha, size))| bundle::Artifact {
            path: rel.clone(),
            sha256: Some(sha.clone()),
            size: Some(*size),
            role: old.get(rel.as_str()).map_or_else(|| bundle::roles::infer_role(rel), |a| a.role),
            store_checksum: if is_s3 && *size <= store::SINGLE_PUT_MAX {
                Some(format!("x-amz-checksum-sha256:{}", crate::util::b64_of_hex(sha)))
            } else {
                None
            },
            // What the file is built on is not in its bytes: kept by path,
            // as the span edit keeps every other key of a published item.
            base_release_digest: old.get(rel.as_str()).and_then(|a| a.base_release_digest.clone()),
            built_with: old.get(rel.as_str()).and_then(|a| a.built_with.clone()),
        })
        .collect();
    let edits: Vec<bundle::edit::NewArtifact> = arts
        .iter()
        .map(|a| bundle::edit::NewArtifact {
            path: a.path.clone(),
            sha256: a.sha256.clone().unwrap_or_default(),
            size: a.size.unwrap_or(0),
            role: bundle::roles::role_name(a.role),
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
    if let Some(why) = &rewritten {
        tracing::warn!("{}: rewritten as a whole ({why}); comments and formatting were not kept", l.display);
    }
    let guessed = |path: &str| !old.contains_key(path);
    let s = crate::checks::info::published(&l.display, to, &arts, &guessed, &reparsed.digest, rewritten.as_deref());
    Ok(s)
}
