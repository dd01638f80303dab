//! git adapter (git2): which release bundles a pull request changes.
//!
//! Only reads objects from the local repository: nothing is checked out and
//! nothing from the PR is executed. Blob contents are returned as text so the
//! caller can parse both sides without touching the working tree (which, in CI,
//! may be at either revision).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, ObjectType, Oid, Repository, Tree, TreeWalkMode, TreeWalkResult};

use crate::bundle::detect;

/// One bundle file the PR touches.
///
/// `status` is `added`, `modified`, `renamed` (then `base_text` is the content
/// under the old path) or `deleted`. A deleted bundle
/// is still reported (so the run can say "removed, nothing to verify") with
/// `head_text` empty and `base_text` holding the old content; callers must
/// check `status` before parsing `head_text`.
///
/// Detection is the one rule of `bundle::detect` (what `argocd discover` and
/// audit accept), applied to the first bytes of the blob: a bundle that is
/// too large or not UTF-8 is still reported, with `head_error` saying why,
/// so the run fails on it instead of reading "touches no release bundle".
/// A changed symlink to a folder (`llm/current -> v2`) changes every bundle
/// it serves: each is reported under the link's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedBundle {
    /// Path relative to the repository root, at head (at base for `deleted`).
    pub path: PathBuf,
    /// Content at the merge base; `None` when the bundle is new (or unreadable there).
    pub base_text: Option<String>,
    /// Content at head; empty for `deleted` and when `head_error` is set.
    pub head_text: String,
    /// Why the head blob cannot be read as a bundle's text (over the 4 MiB
    /// limit, not UTF-8): the caller reports it as this bundle's load error.
    pub head_error: Option<String>,
    pub status: String,
}

/// Blobs are sniffed (detection) on this many first bytes, the same bound as
/// `argocd discover`; a bundle is read whole only within [`MAX_BUNDLE_BYTES`].
const MAX_SNIFF_BYTES: usize = detect::MAX_SNIFF_BYTES;
const MAX_BUNDLE_BYTES: usize = crate::yaml_guard::MAX_BUNDLE_BYTES;

/// Entries of a symlinked folder looked at for bundles (a link to a huge
/// folder stops here rather than walking it all).
const MAX_DIR_ENTRIES: usize = 10_000;

/// One side of a diff entry as detection sees it.
#[derive(Debug)]
enum Blob {
    Text(String),
    /// Not readable as a bundle's text; `head` is what detection sniffs.
    Unreadable { head: Vec<u8>, why: String },
}

impl Blob {
    fn head(&self) -> &[u8] {
        match self {
            Blob::Text(t) => t.as_bytes(),
            Blob::Unreadable { head, .. } => head,
        }
    }
    fn text(self) -> Option<String> {
        match self {
            Blob::Text(t) => Some(t),
            Blob::Unreadable { .. } => None,
        }
    }
}

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

    let mut out: Vec<ChangedBundle> = Vec::new();
    let mut links: Vec<PathBuf> = Vec::new();
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
        if old.mode() == FileMode::Link || new.mode() == FileMode::Link {
            if let Some(p) = new_path.clone().or(old_path.clone()) {
                links.push(p);
            }
        }
        let old_blob = if status == "added" { None } else { side_text(&r, &old_tree, old_path.as_deref(), old.id(), old.mode())? };
        let new_blob = if status == "deleted" { None } else { side_text(&r, &new_tree, new_path.as_deref(), new.id(), new.mode())? };

        let old_is = match (&old_path, &old_blob) {
            (Some(p), Some(b)) => detect::is_bundle(p, b.head()),
            _ => false,
        };
        let new_is = match (&new_path, &new_blob) {
            (Some(p), Some(b)) => detect::is_bundle(p, b.head()),
            _ => false,
        };
        if !old_is && !new_is {
            continue;
        }
        let base_text = old_blob.and_then(Blob::text);
        if status == "deleted" || (old_is && new_blob.is_none()) {
            out.push(ChangedBundle {
                path: old_path.clone().or(new_path).unwrap_or_default(),
                base_text,
                head_text: String::new(),
                head_error: None,
                status: "deleted".into(),
            });
            continue;
        }
        let Some(head) = new_blob else { continue };
        let path = new_path.ok_or_else(|| anyhow!("diff entry without a path"))?;
        out.push(changed(path, base_text, head, status));
    }
    // A retargeted folder link changes which bundle its path serves.
    for link in links {
        for c in through_folder_link(&r, &old_tree, &new_tree, &link)? {
            out.retain(|o| o.path != c.path);
            out.push(c);
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

fn changed(path: PathBuf, base_text: Option<String>, head: Blob, status: &str) -> ChangedBundle {
    let (head_text, head_error) = match head {
        Blob::Text(t) => (t, None),
        Blob::Unreadable { why, .. } => (String::new(), Some(why)),
    };
    ChangedBundle { path, base_text, head_text, head_error, status: status.into() }
}

/// The folder `path` names in `tree`, following symlinks inside the
/// repository: its repository-relative path and its tree.
fn folder_at<'r>(r: &'r Repository, tree: &Tree<'r>, path: &Path) -> Option<(PathBuf, Tree<'r>)> {
    let mut at = path.to_path_buf();
    for _ in 0..detect::MAX_LINK_HOPS {
        let entry = tree.get_path(&at).ok()?;
        match entry.filemode() {
            0o040000 => return Some((at, entry.to_object(r).ok()?.into_tree().ok()?)),
            0o120000 => {
                let blob = r.find_blob(entry.id()).ok()?;
                let target = PathBuf::from(String::from_utf8_lossy(blob.content()).into_owned());
                at = detect::link_target_in_repo(&at, &target).ok()?;
            }
            _ => return None,
        }
    }
    None
}

/// Bundle candidates (by name) under a folder, relative to it.
fn candidates_in(tree: &Tree<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut seen = 0usize;
    let _ = tree.walk(TreeWalkMode::PreOrder, |root, entry| {
        seen += 1;
        if seen > MAX_DIR_ENTRIES {
            return TreeWalkResult::Abort;
        }
        if let (Some(name), Some(ObjectType::Blob)) = (entry.name().ok(), entry.kind()) {
            let rel = Path::new(root).join(name);
            if detect::is_candidate(&rel) {
                out.push(rel);
            }
        }
        TreeWalkResult::Ok
    });
    out
}

/// The bundle text at `rel` under the folder `dir` of `tree`, if any.
fn file_in(r: &Repository, tree: &Tree<'_>, dir: &Path, rel: &Path) -> Result<Option<Blob>> {
    let at = dir.join(rel);
    let Ok(entry) = tree.get_path(&at) else { return Ok(None) };
    let Some(mode) = file_mode(entry.filemode()) else { return Ok(None) };
    side_text(r, tree, Some(&at), entry.id(), mode)
}

/// Bundles served through `link` (a symlink on at least one side of the
/// diff) when it names a folder: each one whose text differs between base
/// and head, reported under the link's path.
fn through_folder_link(r: &Repository, old_tree: &Tree<'_>, new_tree: &Tree<'_>, link: &Path) -> Result<Vec<ChangedBundle>> {
    let before = folder_at(r, old_tree, link);
    let after = folder_at(r, new_tree, link);
    if before.is_none() && after.is_none() {
        return Ok(Vec::new());
    }
    let mut rels: Vec<PathBuf> = before.iter().chain(after.iter()).flat_map(|(_, t)| candidates_in(t)).collect();
    rels.sort();
    rels.dedup();
    let mut out = Vec::new();
    for rel in rels {
        let path = link.join(&rel);
        let old = match &before {
            Some((dir, _)) => file_in(r, old_tree, dir, &rel)?,
            None => None,
        };
        let new = match &after {
            Some((dir, _)) => file_in(r, new_tree, dir, &rel)?,
            None => None,
        };
        let old_is = old.as_ref().is_some_and(|b| detect::is_bundle(&path, b.head()));
        let new_is = new.as_ref().is_some_and(|b| detect::is_bundle(&path, b.head()));
        if !old_is && !new_is {
            continue;
        }
        let base_text = if old_is { old.and_then(Blob::text) } else { None };
        match new.filter(|_| new_is) {
            None => out.push(ChangedBundle { path, base_text, head_text: String::new(), head_error: None, status: "deleted".into() }),
            Some(head) => {
                if matches!(&head, Blob::Text(t) if base_text.as_ref() == Some(t)) {
                    continue; // the link moved, the bundle it serves did not change
                }
                let status = if old_is { "modified" } else { "added" };
                out.push(changed(path, base_text, head, status));
            }
        }
    }
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

/// A blob as detection sees it: its text, or (over the bundle limit, not
/// UTF-8) its first bytes and why it cannot be read. Binary content (a NUL)
/// is text to git2's heuristics only: it goes to the parser, which says
/// where it is, as `argocd discover` does.
fn blob_text(r: &Repository, id: Oid) -> Result<Option<Blob>> {
    if id.is_zero() {
        return Ok(None);
    }
    // The size from the object header first: an oversized blob (a model file
    // committed by mistake) is never inflated whole just to learn its size.
    let odb = r.odb().context("opening the git object database")?;
    let (size, _) = odb.read_header(id).with_context(|| format!("reading blob {id}"))?;
    if size > MAX_BUNDLE_BYTES {
        let why = format!("{size} bytes, over the limit of {MAX_BUNDLE_BYTES} bytes (4 MiB) for a bundle file");
        return Ok(Some(Blob::Unreadable { head: oversized_head(r, &odb, id, size)?, why }));
    }
    let blob = r.find_blob(id).with_context(|| format!("reading blob {id}"))?;
    let content = blob.content();
    Ok(Some(match std::str::from_utf8(content) {
        Ok(t) => Blob::Text(t.to_string()),
        Err(e) => Blob::Unreadable { head: content.to_vec(), why: format!("not UTF-8 text (invalid byte at offset {})", e.valid_up_to()) },
    }))
}

/// A packed blob up to this size may be inflated whole to sniff its head
/// (libgit2 streams loose objects only); beyond it detection goes by the
/// file name alone, so memory stays bounded whatever a commit holds.
const MAX_INFLATE_BYTES: usize = 256 << 20;

/// The first [`MAX_SNIFF_BYTES`] of an oversized blob, for detection.
fn oversized_head(r: &Repository, odb: &git2::Odb<'_>, id: Oid, size: usize) -> Result<Vec<u8>> {
    if let Ok(mut reader) = odb.reader(id) {
        let mut head = Vec::with_capacity(MAX_SNIFF_BYTES);
        let read = std::io::Read::read_to_end(&mut std::io::Read::take(&mut reader.0, MAX_SNIFF_BYTES as u64), &mut head);
        if read.is_ok() {
            return Ok(head);
        }
    }
    if size > MAX_INFLATE_BYTES {
        tracing::warn!("blob {id} ({size} bytes) is too large to sniff; deciding by its file name only");
        return Ok(Vec::new());
    }
    let blob = r.find_blob(id).with_context(|| format!("reading blob {id}"))?;
    Ok(blob.content()[..MAX_SNIFF_BYTES.min(blob.content().len())].to_vec())
}

/// Raw tree-entry modes (git2 gives no FileMode for entries).
fn file_mode(raw: i32) -> Option<FileMode> {
    match raw {
        0o120000 => Some(FileMode::Link),
        0o100755 => Some(FileMode::BlobExecutable),
        0o100644 => Some(FileMode::Blob),
        _ => None,
    }
}

/// The blob behind one side of a diff entry: a blob's, or for a symlink
/// its target's (followed inside `tree`). A bundle-named symlink whose target
/// leaves the repository is refused; any other unreadable entry is "no text".
fn side_text(r: &Repository, tree: &Tree<'_>, path: Option<&Path>, id: Oid, mode: FileMode) -> Result<Option<Blob>> {
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
                let Some(m) = file_mode(entry.filemode()) else { return Ok(None) };
                mode = m;
            }
            _ => return Ok(None),
        }
    }
    Err(anyhow!("{} goes through more than {} symlinks", path.display(), detect::MAX_LINK_HOPS))
}

/// The commit checked out in the work tree that contains `path`, if any (a
/// sharded audit records it so shards of different commits are not merged).
pub(crate) fn head_commit(path: &Path) -> Option<String> {
    let r = Repository::discover(path).ok()?;
    let c = r.head().ok()?.peel_to_commit().ok()?;
    Some(c.id().to_string())
}

/// The commit `spec` names in the repository around `dir` (None when there is
/// no repository or no such commit).
pub(crate) fn resolve_commit(dir: &Path, spec: &str) -> Option<String> {
    let r = Repository::discover(dir).ok()?;
    let c = r.revparse_single(spec).ok()?.peel_to_commit().ok()?;
    Some(c.id().to_string())
}
