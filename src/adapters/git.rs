//! git adapter (git2): which release bundles a pull request changes.
//!
//! Only reads objects from the local repository: nothing is checked out and
//! nothing from the PR is executed. Blob contents are returned as text so the
//! caller can parse both sides without touching the working tree (which, in CI,
//! may be at either revision).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, ObjectType, Oid, Repository, Tree};

use crate::bundle::detect;

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

/// Blobs larger than this are never read: the same bound as detection.
const MAX_SNIFF_BYTES: usize = detect::MAX_SNIFF_BYTES;

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
        // A symlink is read through to its target blob in the same tree, and
        // only while the target stays inside the repository; a submodule
        // entry is a commit in another repository and never read.
        let old_path = old.path().map(Path::to_path_buf);
        let new_path = new.path().map(Path::to_path_buf);
        let old_text = if status == "added" { None } else { side_text(&r, &old_tree, old_path.as_deref(), old.id(), old.mode())? };
        let new_text = if status == "deleted" { None } else { side_text(&r, &new_tree, new_path.as_deref(), new.id(), new.mode())? };

        let old_is = match (&old_path, &old_text) {
            (Some(p), Some(t)) => detect::is_bundle(p, t.as_bytes()),
            _ => false,
        };
        let new_is = match (&new_path, &new_text) {
            (Some(p), Some(t)) => detect::is_bundle(p, t.as_bytes()),
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

/// The text behind one side of a diff entry: a blob's, or for a symlink
/// its target's (followed inside `tree`). A bundle-named symlink whose target
/// leaves the repository is refused; any other unreadable entry is "no text".
fn side_text(r: &Repository, tree: &Tree<'_>, path: Option<&Path>, id: Oid, mode: FileMode) -> Result<Option<String>> {
    let Some(path) = path else { return Ok(None) };
    let (mut at, mut id, mut mode) = (path.to_path_buf(), id, mode);
    for _ in 0..detect::MAX_LINK_HOPS {
        match mode {
            FileMode::Blob | FileMode::BlobExecutable => return blob_text(r, id),
            FileMode::Link if detect::is_candidate(path) => {
                let blob = r.find_blob(id).with_context(|| format!("reading symlink {}", at.display()))?;
                let target = PathBuf::from(String::from_utf8_lossy(blob.content()).into_owned());
                at = match detect::link_target_in_repo(&at, &target) {
                    Ok(t) => t,
                    Err(why) if detect::has_bundle_name(path) => return Err(anyhow!(why)),
                    Err(_) => return Ok(None),
                };
                let Ok(entry) = tree.get_path(&at) else {
                    if detect::has_bundle_name(path) {
                        return Err(anyhow!("{} is a symlink to {}, which the commit does not contain", path.display(), at.display()));
                    }
                    return Ok(None);
                };
                id = entry.id();
                // Raw tree-entry modes (git2 gives no FileMode for entries).
                mode = match entry.filemode() {
                    0o120000 => FileMode::Link,
                    0o100755 => FileMode::BlobExecutable,
                    0o100644 => FileMode::Blob,
                    _ => return Ok(None),
                };
            }
            _ => return Ok(None),
        }
    }
    Err(anyhow!("{} goes through more than {} symlinks", path.display(), detect::MAX_LINK_HOPS))
}

/// The commit checked out in the work tree that contains `path`, if any (a
/// sharded audit records it so shards of different commits are not merged).
pub fn head_commit(path: &Path) -> Option<String> {
    let r = Repository::discover(path).ok()?;
    let c = r.head().ok()?.peel_to_commit().ok()?;
    Some(c.id().to_string())
}
