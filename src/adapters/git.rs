//! git adapter (git2): which release bundles a pull request changes, how a
//! commit Argo CD reports relates to the merge commit (ancestry and the
//! bundle's content), and the revert branch.
//!
//! Reads objects from the local repository: nothing is checked out and
//! nothing from the PR is executed. Blob contents are returned as text so the
//! caller can parse both sides without touching the working tree (which, in CI,
//! may be at either revision).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, TimeZone, Utc};
/// The repository `locate` opens; callers hand it back to these functions.
// The handle commands hold between git calls; git2 itself stays in this adapter.
pub use git2::Repository;
use git2::{Delta, DiffFindOptions, DiffOptions, FileMode, ObjectType, Oid, Tree, TreeWalkMode, TreeWalkResult};

use crate::bundle::detect;
use crate::checks::watch::argo::{Ancestry, AppSource, History, Rendered, RevisionFacts};

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
    Unreadable {
        head: Vec<u8>,
        why: String,
    },
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
    let mb = r.merge_base(base_oid, head_oid).with_context(|| {
        format!("no common ancestor between `{base}` and `{head}` (shallow clone? use fetch-depth: 0)")
    })?;
    let old_tree = r.find_commit(mb)?.tree()?;
    let new_tree = r.find_commit(head_oid)?.tree()?;

    let mut opts = DiffOptions::new();
    opts.include_typechange(true);
    let mut diff = r
        .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), Some(&mut opts))
        .context("diffing base and head trees")?;
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
        let old_blob =
            if status == "added" { None } else { side_text(&r, &old_tree, old_path.as_deref(), old.id(), old.mode())? };
        let new_blob = if status == "deleted" {
            None
        } else {
            side_text(&r, &new_tree, new_path.as_deref(), new.id(), new.mode())?
        };

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
fn through_folder_link(
    r: &Repository,
    old_tree: &Tree<'_>,
    new_tree: &Tree<'_>,
    link: &Path,
) -> Result<Vec<ChangedBundle>> {
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
            None => out.push(ChangedBundle {
                path,
                base_text,
                head_text: String::new(),
                head_error: None,
                status: "deleted".into(),
            }),
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
    Err(anyhow!(
        "git revision `{rev}` not found in {} (fetch it, e.g. actions/checkout with fetch-depth: 0)",
        r.path().display()
    ))
}

/// A blob as detection sees it: its text, or (over the bundle limit, not
/// UTF-8) its first bytes and why it cannot be read. Binary content (a NUL)
/// is text to git2's heuristics only: it goes to the parser, which says
/// where it is, as `argocd discover` does.
/// The blob when its object header says it holds at most `max` bytes, else
/// its size: an oversized blob (a model file committed by mistake) is never
/// inflated whole just to learn how big it is.
fn blob_within(r: &Repository, id: Oid, max: usize) -> Result<std::result::Result<git2::Blob<'_>, usize>> {
    let odb = r.odb().context("opening the git object database")?;
    let (size, _) = odb.read_header(id).with_context(|| format!("reading blob {id}"))?;
    if size > max {
        return Ok(Err(size));
    }
    Ok(Ok(r.find_blob(id).with_context(|| format!("reading blob {id}"))?))
}

fn blob_text(r: &Repository, id: Oid) -> Result<Option<Blob>> {
    if id.is_zero() {
        return Ok(None);
    }
    let blob = match blob_within(r, id, MAX_BUNDLE_BYTES)? {
        Ok(b) => b,
        Err(size) => {
            let why = format!("{size} bytes, over the limit of {MAX_BUNDLE_BYTES} bytes (4 MiB) for a bundle file");
            let odb = r.odb().context("opening the git object database")?;
            return Ok(Some(Blob::Unreadable { head: oversized_head(r, &odb, id, size)?, why }));
        }
    };
    let content = blob.content();
    Ok(Some(match std::str::from_utf8(content) {
        Ok(t) => Blob::Text(t.to_string()),
        Err(e) => Blob::Unreadable {
            head: content.to_vec(),
            why: format!("not UTF-8 text (invalid byte at offset {})", e.valid_up_to()),
        },
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
        let read =
            std::io::Read::read_to_end(&mut std::io::Read::take(&mut reader.0, MAX_SNIFF_BYTES as u64), &mut head);
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
                        return Err(anyhow!(
                            "{} is a symlink to {}, which the commit does not contain",
                            path.display(),
                            at.display()
                        ));
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

// ---- the revert branch -----------------------------------------------------------------

/// Committer time of `rev` in the repository around `dir` (None when there is
/// no repository or the commit is not in it, e.g. a shallow clone).
pub(crate) fn commit_time(dir: &Path, rev: &str) -> Option<DateTime<Utc>> {
    // `release.yaml` has the parent "", which git2 cannot discover from.
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let r = git2::Repository::discover(dir).ok()?;
    let c = r.revparse_single(rev).ok()?.peel_to_commit().ok()?;
    Utc.timestamp_opt(c.time().seconds(), 0).single()
}

/// The repository and the bundle's path inside it.
pub(crate) fn locate(repo: &Path, file: &Path) -> Result<(git2::Repository, PathBuf)> {
    let r = git2::Repository::open(repo).with_context(|| format!("opening git repository {}", repo.display()))?;
    let wd = r.workdir().ok_or_else(|| anyhow!("{} is a bare repository; revert needs a checkout", repo.display()))?;
    let wd = std::fs::canonicalize(wd).with_context(|| format!("resolving {}", wd.display()))?;
    let f = std::fs::canonicalize(file).with_context(|| format!("resolving {}", file.display()))?;
    let rel = f
        .strip_prefix(&wd)
        .map_err(|_| anyhow!("{} is not inside the repository {}", file.display(), wd.display()))?
        .to_path_buf();
    Ok((r, rel))
}

fn blob_at(tree: &git2::Tree<'_>, rel: &Path) -> Option<git2::Oid> {
    tree.get_path(rel).ok().filter(|e| e.kind() == Some(git2::ObjectType::Blob)).map(|e| e.id())
}

/// The newest commit reachable from HEAD that changed `rel`: (sha, message).
pub(crate) fn last_change(r: &git2::Repository, rel: &Path) -> Result<Option<(String, String)>> {
    let mut walk = r.revwalk()?;
    walk.push_head().context("reading HEAD")?;
    walk.simplify_first_parent()?;
    for (i, oid) in walk.enumerate() {
        if i > 100_000 {
            break;
        }
        let c = r.find_commit(oid?)?;
        let here = blob_at(&c.tree()?, rel);
        let before = match c.parent(0) {
            Ok(p) => blob_at(&p.tree()?, rel),
            Err(_) => None,
        };
        if here != before {
            return Ok(Some((c.id().to_string(), c.message().unwrap_or_default().to_string())));
        }
    }
    Ok(None)
}

/// Commit HEAD's tree with `rel` replaced by `content` on the local branch
/// `branch` (forced: it is ours and derived from HEAD). Author and time are
/// fixed (bundlegate, HEAD's commit time), so concurrent runs for the same
/// failure produce the same commit and the push below is idempotent.
pub(crate) fn commit_revert(
    r: &git2::Repository,
    rel: &Path,
    content: &str,
    branch: &str,
    message: &str,
) -> Result<git2::Oid> {
    let head = r.head()?.peel_to_commit().context("HEAD is not a commit")?;
    let blob = r.blob(content.as_bytes())?;
    let mode = head.tree()?.get_path(rel).map(|e| e.filemode()).unwrap_or(0o100644);
    let mode = if mode == 0o100755 { git2::FileMode::BlobExecutable } else { git2::FileMode::Blob };
    let mut b = git2::build::TreeUpdateBuilder::new();
    b.upsert(rel.to_string_lossy().replace('\\', "/"), blob, mode);
    let tree_id = b.create_updated(r, &head.tree()?)?;
    let tree = r.find_tree(tree_id)?;
    let when = git2::Time::new(head.committer().when().seconds(), 0);
    let sig = git2::Signature::new("bundlegate", "bundlegate@users.noreply.github.com", &when)?;
    let oid = r.commit(None, &sig, &sig, message, &tree, &[&head])?;
    r.reference(&format!("refs/heads/{branch}"), oid, true, "bundlegate revert")?;
    Ok(oid)
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PushOutcome {
    /// We created the remote branch.
    Created,
    /// The branch already existed on the remote (another run is reverting);
    /// holds the remote commit.
    AlreadyExists(String),
}

/// Whether the remote branch's head (`head`; empty when the push lost a
/// race and did not learn it) restores `rel` to the release `digest`: the
/// commit is read locally, fetched first when absent or unknown (git2, then
/// the git CLI for transports git2 lacks). Err: why it cannot be told.
pub(crate) fn restores(
    r: &git2::Repository,
    remote: &str,
    branch: &str,
    head: &str,
    rel: &Path,
    digest: &str,
) -> std::result::Result<bool, String> {
    let local = format!("refs/bundlegate/check/{branch}");
    let known = Oid::from_str(head).ok().filter(|o| r.find_commit(*o).is_ok());
    let oid = match known {
        Some(o) => o,
        None => {
            let spec = format!("+refs/heads/{branch}:{local}");
            let fetched = r.find_remote(remote).and_then(|mut rem| rem.fetch(&[spec.as_str()], None, None));
            if fetched.is_err() {
                let out = std::process::Command::new("git")
                    .arg("-C")
                    .arg(r.path())
                    .args(["fetch", "-q", remote, &spec])
                    .output()
                    .map_err(|e| format!("git fetch: {e}"))?;
                if !out.status.success() {
                    return Err(format!("fetching {branch}: {}", String::from_utf8_lossy(&out.stderr).trim()));
                }
            }
            r.refname_to_id(&local).map_err(|e| format!("{branch} fetched but unreadable: {e}"))?
        }
    };
    let c = r.find_commit(oid).map_err(|e| format!("remote head {oid} not readable: {e}"))?;
    Ok(digest_at(r, &c, rel).as_deref() == Ok(digest))
}

/// Push `refs/heads/<branch>` to `remote`, creating it; an existing remote
/// branch is never overwritten (no force), which is what makes concurrent
/// runs open one PR.
pub(crate) fn push_new_branch(r: &git2::Repository, remote: &str, branch: &str) -> Result<PushOutcome> {
    let refname = format!("refs/heads/{branch}");
    let mut rem = r.find_remote(remote).with_context(|| format!("git remote `{remote}`"))?;
    let url = rem.url().unwrap_or("").to_string();
    match git2_push(&mut rem, &refname) {
        Ok(o) => Ok(o),
        // git2 is built without HTTPS/SSH here: for those remotes use the git
        // CLI, which carries the runner's configured credentials
        // (actions/checkout persists them).
        Err(e) if is_unsupported_transport(&e) => {
            cli_push(r, remote, &refname).with_context(|| format!("pushing {refname} to {url} with the git CLI"))
        }
        Err(e) => Err(e).with_context(|| format!("pushing {refname} to {url}")),
    }
}

fn is_unsupported_transport(e: &anyhow::Error) -> bool {
    let m = format!("{e:#}").to_ascii_lowercase();
    m.contains("unsupported url protocol") || m.contains("unsupported transport")
}

fn git2_push(rem: &mut git2::Remote<'_>, refname: &str) -> Result<PushOutcome> {
    // Look first: an existing branch means someone is already reverting.
    let existing = {
        let conn = rem.connect_auth(git2::Direction::Push, None, None)?;
        let found = conn.list()?.iter().find(|h| h.name() == refname).map(|h| h.oid().to_string());
        found
    };
    if let Some(oid) = existing {
        return Ok(PushOutcome::AlreadyExists(oid));
    }
    let rejected = std::cell::RefCell::new(None::<String>);
    {
        let mut cbs = git2::RemoteCallbacks::new();
        cbs.push_update_reference(|name, status| {
            if let Some(s) = status {
                *rejected.borrow_mut() = Some(format!("{name}: {s}"));
            }
            Ok(())
        });
        let mut opts = git2::PushOptions::new();
        opts.remote_callbacks(cbs);
        // No leading `+`: never force.
        rem.push(&[format!("{refname}:{refname}")], Some(&mut opts))?;
    }
    match rejected.into_inner() {
        // Lost the race between our look and our push.
        Some(_) => Ok(PushOutcome::AlreadyExists(String::new())),
        None => Ok(PushOutcome::Created),
    }
}

fn cli_push(r: &git2::Repository, remote: &str, refname: &str) -> Result<PushOutcome> {
    let dir = r.workdir().unwrap_or(r.path());
    let ls = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["ls-remote", "--heads", remote, refname])
        .output()
        .context("running git ls-remote")?;
    let out = String::from_utf8_lossy(&ls.stdout);
    if let Some(line) = out.lines().find(|l| l.ends_with(refname)) {
        return Ok(PushOutcome::AlreadyExists(line.split_whitespace().next().unwrap_or("").to_string()));
    }
    let push = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["push", "--porcelain", remote, &format!("{refname}:{refname}")])
        .output()
        .context("running git push")?;
    if push.status.success() {
        return Ok(PushOutcome::Created);
    }
    let text = String::from_utf8_lossy(&push.stdout).to_string() + &String::from_utf8_lossy(&push.stderr);
    if text.contains("[rejected]") || text.contains("already exists") || text.contains("non-fast-forward") {
        return Ok(PushOutcome::AlreadyExists(String::new()));
    }
    bail!("git push failed: {}", text.trim())
}

/// The work tree of the repository around `dir`, if there is one.
pub(crate) fn checkout_root(dir: &Path) -> Option<PathBuf> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    git2::Repository::discover(dir).ok().and_then(|g| g.workdir().map(Path::to_path_buf))
}

/// The remote's default branch (`refs/remotes/<remote>/HEAD`), else `main`.
pub(crate) fn default_base(repo: &Path, remote: &str) -> String {
    git2::Repository::open(repo)
        .ok()
        .and_then(|r| {
            r.find_reference(&format!("refs/remotes/{remote}/HEAD"))
                .ok()
                .and_then(|h| h.symbolic_target().ok().flatten().map(String::from))
        })
        .and_then(|t| t.rsplit('/').next().map(String::from))
        .unwrap_or_else(|| "main".into())
}

/// Messages of the branch heads a merge commit `sha` merged (its parents
/// after the first); empty for a plain commit or one not in the repository.
pub(crate) fn merged_head_messages(r: &git2::Repository, sha: &str) -> Vec<String> {
    let Ok(c) = git2::Oid::from_str(sha).and_then(|o| r.find_commit(o)) else { return Vec::new() };
    c.parents().skip(1).filter_map(|p| p.message().ok().map(String::from)).collect()
}

/// `owner/repo` from `configured` (GITHUB_REPOSITORY), or from a GitHub remote URL.
pub(crate) fn github_repo(r: &git2::Repository, remote: &str, configured: Option<&str>) -> Option<(String, String)> {
    let from = |s: &str| {
        let s = s.trim().trim_end_matches('/').trim_end_matches(".git");
        let mut parts = s.rsplit(['/', ':']);
        let repo = parts.next()?.to_string();
        let owner = parts.next()?.to_string();
        (!owner.is_empty() && !repo.is_empty()).then_some((owner, repo))
    };
    if let Some(v) = configured {
        if let Some((o, r)) = v.split_once('/') {
            return Some((o.to_string(), r.to_string()));
        }
    }
    let url = r.find_remote(remote).ok()?.url().ok()?.to_string();
    url.contains("github").then(|| from(&url)).flatten()
}

// ---- where Argo CD's revisions stand relative to the merge ------------------------------------

/// The blob `path` names in `tree`, each component's symlink followed
/// inside the repository (a `current -> v2` folder link, a linked bundle
/// file), as Argo CD's checkout resolves it: its repository-relative path
/// after links and its id. Err: why it cannot be read there.
fn resolve_blob(r: &Repository, tree: &Tree<'_>, path: &Path) -> std::result::Result<(PathBuf, Oid), String> {
    use std::collections::VecDeque;
    let parts = |p: &Path| -> VecDeque<PathBuf> { p.components().map(|c| PathBuf::from(c.as_os_str())).collect() };
    let mut todo = parts(path);
    let mut done = PathBuf::new();
    let mut hops = 0usize;
    while let Some(part) = todo.pop_front() {
        match part.to_str() {
            Some("" | ".") => continue,
            Some("..") => {
                if !done.pop() {
                    return Err(format!("{} leaves the repository", path.display()));
                }
                continue;
            }
            _ => {}
        }
        let at = done.join(&part);
        let entry = tree.get_path(&at).map_err(|_| format!("{} is not there", at.display()))?;
        if entry.filemode() != 0o120000 {
            done = at;
            continue;
        }
        hops += 1;
        if hops > detect::MAX_LINK_HOPS {
            return Err(format!("{} goes through more than {} symlinks", path.display(), detect::MAX_LINK_HOPS));
        }
        let blob = r.find_blob(entry.id()).map_err(|e| e.to_string())?;
        let target = PathBuf::from(String::from_utf8_lossy(blob.content()).into_owned());
        // The link's target, from the repository root, replaces what was
        // resolved so far.
        let mut rest = parts(&detect::link_target_in_repo(&at, &target)?);
        rest.extend(todo);
        todo = rest;
        done = PathBuf::new();
    }
    let entry = tree.get_path(&done).map_err(|_| format!("{} is not there", done.display()))?;
    if entry.kind() != Some(ObjectType::Blob) {
        return Err(format!("{} is not a file", done.display()));
    }
    Ok((done, entry.id()))
}

/// The bundle's release digest in `commit`'s tree at `rel`, links followed
/// (Err: why it cannot be read there: no such file, not a bundle).
fn digest_at(r: &Repository, commit: &git2::Commit<'_>, rel: &Path) -> std::result::Result<String, String> {
    digest_and_path_at(r, commit, rel).map(|(_, d)| d)
}

fn digest_and_path_at(
    r: &Repository,
    commit: &git2::Commit<'_>,
    rel: &Path,
) -> std::result::Result<(PathBuf, String), String> {
    let tree = commit.tree().map_err(|e| e.to_string())?;
    let (real, id) = resolve_blob(r, &tree, rel)
        .map_err(|why| format!("{} in {}: {why} (removed or moved)", rel.display(), short_id(commit.id())))?;
    let blob = match blob_within(r, id, MAX_BUNDLE_BYTES).map_err(|e| format!("{e:#}"))? {
        Ok(b) => b,
        Err(size) => {
            return Err(format!(
                "{} in {} is {size} bytes, over the limit of {MAX_BUNDLE_BYTES} bytes for a bundle file",
                rel.display(),
                short_id(commit.id())
            ))
        }
    };
    let text = std::str::from_utf8(blob.content())
        .map_err(|_| format!("{} is not UTF-8 in {}", rel.display(), short_id(commit.id())))?;
    crate::bundle::parse(&real.display().to_string(), &real, text.to_string())
        .map(|l| (real.clone(), l.digest))
        .map_err(|e| format!("{} does not load in {}: {e}", rel.display(), short_id(commit.id())))
}

fn short_id(id: Oid) -> String {
    id.to_string()[..12].to_string()
}

/// What one bundle file renders at `commit`: its path after links and its
/// release digest, or (at the path as given) why it cannot be read.
fn rendered_at(r: &Repository, commit: &git2::Commit<'_>, rel: &Path) -> Rendered {
    match digest_and_path_at(r, commit, rel) {
        Ok((real, d)) => Rendered { path: real.display().to_string(), digest: Ok(d) },
        Err(why) => Rendered { path: rel.display().to_string(), digest: Err(why) },
    }
}

/// The dry (authored) commit a hydrated commit was rendered from, from the
/// hydrator's own metadata: the `hydrator.metadata` file Argo CD's commit
/// server writes at the root of each hydrated commit (`{"drySha": …}`), else
/// the `refs/notes/hydrator.metadata` note on it (a no-op hydration moves
/// the note, not the branch). Bounded: the file is a few hundred bytes.
fn hydrated_from(r: &Repository, c: &git2::Commit<'_>) -> Option<String> {
    const MAX: usize = 64 << 10;
    let limits = crate::yaml_guard::Limits { max_bytes: MAX, ..crate::yaml_guard::Limits::WRITTEN };
    let parse = |bytes: &[u8]| -> Option<String> {
        // The one JSON reader, bounded: a `drySha` given twice is refused,
        // not read as whichever one serde keeps.
        let v: serde_json::Value = crate::yaml_guard::json_from_slice("hydrator.metadata", bytes, &limits).ok()?;
        let sha = v.get("drySha").or_else(|| v.get("drySHA"))?.as_str()?.trim().to_ascii_lowercase();
        (sha.len() >= 7 && sha.bytes().all(|b| b.is_ascii_hexdigit())).then_some(sha)
    };
    let tree = c.tree().ok()?;
    let file = tree.get_path(Path::new("hydrator.metadata")).ok().and_then(|e| blob_within(r, e.id(), MAX).ok()?.ok());
    if let Some(sha) = file.and_then(|b| parse(b.content())) {
        return Some(sha);
    }
    let note = r.find_note(Some("refs/notes/hydrator.metadata"), c.id()).ok()?;
    note.message().ok().and_then(|m| parse(m.as_bytes()))
}

/// The bundle files Argo CD renders: the sources the bundlegate plugin
/// renders; with no source known (an Application that names none), the
/// watched file stands in.
fn rendered_paths(watched: &Path, sources: &[AppSource]) -> Vec<PathBuf> {
    if sources.is_empty() {
        return vec![watched.to_path_buf()];
    }
    sources.iter().filter(|s| s.other_tool.is_none()).map(|s| PathBuf::from(s.bundle_path())).collect()
}

/// What Argo CD renders and where every revision it reports stands, read
/// from the repository around `bundle` (the checked-out bundle file): git
/// ancestry relative to the merge commit, the hydrator's dry SHA for a
/// hydrated commit (present locally or not), and at each commit the
/// release digest of every bundle the Application's sources render (their
/// `path` and plugin `bundle` parameter, links followed).
pub(crate) fn history(bundle: &Path, merge: &str, revisions: &[String], sources: &[AppSource]) -> History {
    let unknown_facts = |why: &str| RevisionFacts {
        ancestry: Ancestry::Unknown(why.to_string()),
        rendered: Vec::new(),
        hydrated_from: None,
    };
    let unknown =
        |why: String| History { revisions: revisions.iter().map(|r| (r.clone(), unknown_facts(&why))).collect() };
    let dir = bundle.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let Ok(r) = Repository::discover(dir) else {
        return unknown(format!("no git repository around {}", bundle.display()));
    };
    let watched = match (r.workdir(), std::fs::canonicalize(bundle)) {
        (Some(wd), Ok(f)) => {
            match std::fs::canonicalize(wd).ok().and_then(|wd| f.strip_prefix(wd).ok().map(Path::to_path_buf)) {
                Some(rel) => rel,
                None => return unknown(format!("{} is not inside the repository", bundle.display())),
            }
        }
        _ => return unknown(format!("{} cannot be placed in a work tree", bundle.display())),
    };
    let paths = rendered_paths(&watched, sources);
    let commit = |rev: &str| r.revparse_single(rev).ok().and_then(|o| o.peel_to_commit().ok());
    let Some(m) = commit(merge) else {
        return unknown(format!("the merge commit {merge} is not in the local repository (fetch-depth: 0?)"));
    };
    let plain = |c: &git2::Commit<'_>, rev: &str| -> RevisionFacts {
        let ancestry = if c.id() == m.id() {
            Ancestry::Same
        } else {
            match (r.graph_descendant_of(c.id(), m.id()), r.graph_descendant_of(m.id(), c.id())) {
                (Ok(true), _) => Ancestry::Descendant,
                (Ok(false), Ok(true)) => Ancestry::Older,
                (Ok(false), Ok(false)) => Ancestry::Unrelated,
                (Err(e), _) | (_, Err(e)) => Ancestry::Unknown(format!("ancestry of {rev}: {e}")),
            }
        };
        let rendered = match ancestry {
            Ancestry::Same | Ancestry::Descendant => paths.iter().map(|p| rendered_at(&r, c, p)).collect(),
            _ => Vec::new(),
        };
        RevisionFacts { ancestry, rendered, hydrated_from: None }
    };
    let missing = |rev: &str| {
        unknown_facts(&format!(
            "{rev} is not in the local repository (a shallow clone, or a hydration branch not fetched)"
        ))
    };
    let facts_of = |rev: &str| -> RevisionFacts {
        let Some(c) = commit(rev) else { return missing(rev) };
        match hydrated_from(&r, &c).filter(|dry| !c.id().to_string().starts_with(dry.as_str())) {
            Some(dry) => {
                let inner = match commit(&dry) {
                    Some(d) => plain(&d, &dry),
                    None => missing(&dry),
                };
                RevisionFacts { hydrated_from: Some((dry, Box::new(inner))), ..plain(&c, rev) }
            }
            None => plain(&c, rev),
        }
    };
    History { revisions: revisions.iter().map(|rev| (rev.clone(), facts_of(rev))).collect() }
}

/// What the Application's sources (none known: the watched file `rel`)
/// render on `branch` (the remote's branch first, then the local one, then
/// HEAD): what a revert would act on. (the ref read, and per bundle file its
/// path and release digest or why it cannot be read)
pub(crate) fn rendered_on_branch(
    r: &Repository,
    rel: &Path,
    sources: &[AppSource],
    remote: &str,
    branch: &str,
) -> std::result::Result<(String, Vec<Rendered>), String> {
    let paths = rendered_paths(rel, sources);
    for name in [format!("refs/remotes/{remote}/{branch}"), format!("refs/heads/{branch}"), "HEAD".to_string()] {
        if let Ok(c) = r.revparse_single(&name).and_then(|o| o.peel_to_commit()) {
            return Ok((name, paths.iter().map(|p| rendered_at(r, &c, p)).collect()));
        }
    }
    Err(format!("neither {remote}/{branch}, {branch} nor HEAD resolves"))
}

#[cfg(test)]
mod history_props;
