//! git adapter (git2): which release bundles a pull request changes.
//!
//! Only reads objects from the local repository: nothing is checked out and
//! nothing from the PR is executed. Blob contents are returned as text so the
//! caller can parse both sides without touching the working tree (which, in CI,
//! may be at either revision).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use git2::{Delta, DiffFindOptions, DiffOptions, ObjectType, Oid, Repository};

/// One bundle file the PR touches.
///
/// `status` is `added`, `modified`, `renamed` (then `base_text` is the content
/// under the old path) or `deleted`. A deleted bundle
/// is still reported (so the run can say "removed, nothing to verify") with
/// `head_text` empty and `base_text` holding the old content; callers must
/// check `status` before parsing `head_text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedBundle {
    /// Path relative to the repository root, at head (at base for `deleted`).
    pub path: PathBuf,
    /// Content at the merge base; `None` when the bundle is new.
    pub base_text: Option<String>,
    /// Content at head; empty for `deleted`.
    pub head_text: String,
    pub status: String,
}

/// Blobs larger than this are never sniffed for `kind: ReleaseBundle`: a
/// bundle is a small hand-written file, and reading a multi-GB LFS mistake
/// into memory would be a denial of service.
const MAX_SNIFF_BYTES: usize = 4 << 20;

/// Bundles changed by `head` relative to `base`, with pull-request semantics:
/// the diff is `merge_base(base, head) → head`, so commits that landed on the
/// base branch after the PR branched off are not attributed to the PR.
pub fn changed_bundles(repo: &Path, base: &str, head: &str) -> Result<Vec<ChangedBundle>> {
    let r = Repository::open(repo).with_context(|| format!("opening git repository {}", repo.display()))?;
    let base_oid = resolve(&r, base)?;
    let head_oid = resolve(&r, head)?;
    let mb = r
        .merge_base(base_oid, head_oid)
        .with_context(|| format!("no common ancestor between `{base}` and `{head}` (shallow clone? use fetch-depth: 0)"))?;
    let old_tree = r.find_commit(mb)?.tree()?;
    let new_tree = r.find_commit(head_oid)?.tree()?;

    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let mut diff = r.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(&mut opts)).context("diffing base and head trees")?;
    // Rename detection so a moved bundle is "renamed" with its old text, not a
    // delete plus an unrelated add.
    diff.find_similar(Some(DiffFindOptions::new().renames(true)))?;

    let mut out = Vec::new();
    for delta in diff.deltas() {
        let status = match delta.status() {
            Delta::Added | Delta::Copied => "added",
            Delta::Modified | Delta::Typechange => "modified",
            Delta::Renamed => "renamed",
            Delta::Deleted => "deleted",
            _ => continue,
        };
        let old = delta.old_file();
        let new = delta.new_file();
        // Symlinks and submodules are not files we may read through: a symlink
        // blob is a path, a submodule entry is a commit in another repository.
        let is_blob = |f: &git2::DiffFile<'_>| f.mode() == git2::FileMode::Blob || f.mode() == git2::FileMode::BlobExecutable;
        let old_text = if status == "added" || !is_blob(&old) { None } else { blob_text(&r, old.id())? };
        let new_text = if status == "deleted" || !is_blob(&new) { None } else { blob_text(&r, new.id())? };
        let old_path = old.path().map(Path::to_path_buf);
        let new_path = new.path().map(Path::to_path_buf);

        let old_is = match (&old_path, &old_text) {
            (Some(p), Some(t)) => is_bundle(p, t),
            _ => false,
        };
        let new_is = match (&new_path, &new_text) {
            (Some(p), Some(t)) => is_bundle(p, t),
            _ => false,
        };
        if !old_is && !new_is {
            continue;
        }
        if status == "deleted" || (old_is && new_text.is_none()) {
            out.push(ChangedBundle {
                path: old_path.clone().or(new_path).unwrap_or_default(),
                base_text: old_text,
                head_text: String::new(),
                status: "deleted".into(),
            });
            continue;
        }
        let Some(head_text) = new_text else { continue };
        let path = new_path.ok_or_else(|| anyhow!("diff entry without a path"))?;
        out.push(ChangedBundle { path, base_text: old_text, head_text, status: status.into() });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Resolve a revision; in CI the base branch often exists only as a
/// remote-tracking ref (`origin/main`), so fall back to that.
fn resolve(r: &Repository, rev: &str) -> Result<Oid> {
    let candidates = [rev.to_string(), format!("origin/{rev}"), format!("refs/remotes/origin/{rev}")];
    for c in &candidates {
        if let Ok(obj) = r.revparse_single(c) {
            if let Ok(commit) = obj.peel(ObjectType::Commit) {
                return Ok(commit.id());
            }
        }
    }
    Err(anyhow!("git revision `{rev}` not found in {} (fetch it, e.g. actions/checkout with fetch-depth: 0)", r.path().display()))
}

/// Text of a blob, or `None` when it is too large or not UTF-8 (not a bundle).
fn blob_text(r: &Repository, id: Oid) -> Result<Option<String>> {
    if id.is_zero() {
        return Ok(None);
    }
    let blob = r.find_blob(id).with_context(|| format!("reading blob {id}"))?;
    if blob.size() > MAX_SNIFF_BYTES || blob.is_binary() {
        return Ok(None);
    }
    Ok(String::from_utf8(blob.content().to_vec()).ok())
}

/// A release bundle is `release.yaml`/`release.yml`, or any YAML file that
/// declares `kind: ReleaseBundle` at the top level.
pub fn is_bundle(path: &Path, text: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if name == "release.yaml" || name == "release.yml" {
        return true;
    }
    if !(name.ends_with(".yaml") || name.ends_with(".yml")) {
        return false;
    }
    text.lines().any(|l| {
        let l = l.trim_end();
        matches!(l, "kind: ReleaseBundle" | "kind: \"ReleaseBundle\"" | "kind: 'ReleaseBundle'") || l.starts_with("kind: ReleaseBundle #")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundle_detection() {
        assert!(is_bundle(Path::new("a/release.yaml"), ""));
        assert!(is_bundle(Path::new("a/release.yml"), "x: 1"));
        assert!(is_bundle(Path::new("a/model.yaml"), "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n"));
        // Nested `kind:` (e.g. a Kubernetes object inside) does not count.
        assert!(!is_bundle(Path::new("a/model.yaml"), "spec:\n  kind: ReleaseBundle\n"));
        assert!(!is_bundle(Path::new("a/notes.md"), "kind: ReleaseBundle\n"));
        assert!(!is_bundle(Path::new("a/deploy.yaml"), "kind: Deployment\n"));
    }
}

/// The commit checked out in the work tree that contains `path`, if any (a
/// sharded audit records it so shards of different commits are not merged).
pub fn head_commit(path: &Path) -> Option<String> {
    let r = Repository::discover(path).ok()?;
    let c = r.head().ok()?.peel_to_commit().ok()?;
    Some(c.id().to_string())
}
