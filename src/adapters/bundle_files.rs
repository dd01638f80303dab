//! Reading the files bundlegate is given or led to: bounded, regular files
//! only, and (for a file that a bundle *names*, such as its rollback target
//! or golden set) confined to the tree the bundle lives in.
//!
//! One reader for every file ([`read_text`], [`read_bytes`]): devices, FIFOs
//! and folders are refused before they are opened, and nothing is read past
//! the limit of the file's [`FileKind`] (limits in docs/reliability.md).
//!
//! Confinement root: the git work tree that contains the bundle (the nearest
//! ancestor folder holding a `.git` entry, a folder or a worktree's file).
//! Outside any git work tree, the folder above the bundle's folder, i.e. the
//! service folder of the `<service>/<version>/release.yaml` layout, so that
//! `../v1/release.yaml` resolves. A reference resolves inside the root after
//! `..` is applied *and* after symlinks are followed, or it is refused.
//! Every reader of a named file (lint, canary, watch/revert, the golden set)
//! goes through [`load_named_bundle`] or [`read_named_text`].

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result as AnyResult};

use crate::bundle::{self, detect, LoadError, Loaded};
use crate::checks::rollback::RollbackStatus;
use crate::yaml_guard::{MAX_BUNDLE_BYTES, MAX_SNAPSHOT_BYTES};

/// What a file is, which sets how much of it is ever read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A release bundle (also a rollback target): 4 MiB.
    Bundle,
    /// A pipeline file: 1 MiB.
    Pipeline,
    /// `--config`: 1 MiB.
    Config,
    /// A `kubectl get … -o yaml|json` snapshot: 512 MiB.
    Snapshot,
    /// `spec.canary.golden` (JSONL requests): 16 MiB.
    GoldenSet,
    /// A user template: 1 MiB.
    Template,
    /// `GITHUB_EVENT_PATH`: 32 MiB (GitHub caps webhook payloads at 25 MB).
    GithubEvent,
    /// The in-pod verification marker: 4 KiB.
    Marker,
    /// KServe's traffic split as git holds it (`--split`): 4 MiB, as a bundle.
    Split,
}

impl FileKind {
    pub(crate) const fn max_bytes(self) -> u64 {
        match self {
            FileKind::Bundle | FileKind::Split => MAX_BUNDLE_BYTES as u64,
            FileKind::Pipeline | FileKind::Config | FileKind::Template => 1 << 20,
            FileKind::Snapshot => MAX_SNAPSHOT_BYTES as u64,
            FileKind::GoldenSet => 16 << 20,
            FileKind::GithubEvent => 32 << 20,
            FileKind::Marker => 4 << 10,
        }
    }

    pub(crate) const fn noun(self) -> &'static str {
        match self {
            FileKind::Bundle => "bundle file",
            FileKind::Pipeline => "pipeline file",
            FileKind::Config => "config file",
            FileKind::Snapshot => "cluster snapshot",
            FileKind::GoldenSet => "golden set",
            FileKind::Template => "template",
            FileKind::GithubEvent => "GitHub event file",
            FileKind::Marker => "marker file",
            FileKind::Split => "traffic split file",
        }
    }
}

fn refuse(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

fn human(max: u64) -> String {
    if max >= 1 << 20 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{} KiB", max >> 10)
    }
}

/// What a path holds when it is not a regular file, for the refusal.
fn what_it_is(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_dir() {
        "a folder"
    } else {
        "of another kind"
    }
}

/// Refuse `meta` unless it is a regular file, naming what it is instead.
pub(crate) fn ensure_regular(meta: &std::fs::Metadata) -> std::io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(refuse(format!("not a regular file (it is {}): refused without reading it", what_it_is(meta))))
}

/// Open a regular file for reading, the one way every reader opens a file
/// it is given or led to. The type is checked before the open (a FIFO's
/// open blocks until a writer comes, a device may never end), and again on
/// the open handle: the open itself does not block (`O_NONBLOCK`), so a
/// FIFO swapped in between the two is refused too, never waited on.
pub(crate) fn open_regular(path: &Path) -> std::io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt;
    ensure_regular(&std::fs::metadata(path)?)?;
    let f = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY).open(path)?;
    let meta = f.metadata()?;
    ensure_regular(&meta)?;
    Ok((f, meta))
}

/// Read at most `max` bytes of a regular file ([`open_regular`]); a file
/// over the limit is an error of kind `FileTooLarge`.
pub(crate) fn read_bytes(path: &Path, max: u64, noun: &str) -> std::io::Result<Vec<u8>> {
    let (f, meta) = open_regular(path)?;
    let too_big = |n: u64| {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("{n} bytes or more, over the limit of {max} bytes ({}) for a {noun}", human(max)),
        )
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    // The file may grow between stat and read: the reader itself is bounded.
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > max {
        return Err(too_big(buf.len() as u64));
    }
    Ok(buf)
}

/// What a sharded audit reads of every bundle file without parsing it: its
/// length and sha256 (regular files only, within the bundle limit). `None`
/// when it cannot be read: the shard that owns it loads it and says why.
pub(crate) fn weigh(path: &Path) -> Option<(u64, [u8; 32])> {
    use sha2::Digest;
    let b = read_bytes(path, FileKind::Bundle.max_bytes(), FileKind::Bundle.noun()).ok()?;
    Some((b.len() as u64, sha2::Sha256::digest(&b).into()))
}

/// UTF-8 text, or why it is not (no byte of it quoted).
pub(crate) fn utf8(buf: Vec<u8>) -> std::io::Result<String> {
    String::from_utf8(buf).map_err(|e| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to()),
        )
    })
}

/// Read a file of the given kind: regular, within its limit, UTF-8.
pub(crate) fn read_text(path: &Path, kind: FileKind) -> std::io::Result<String> {
    utf8(read_bytes(path, kind.max_bytes(), kind.noun())?)
}

/// Read a bundle-sized file (see [`MAX_BUNDLE_BYTES`]).
pub(crate) fn read_bundle_text(path: &Path) -> std::io::Result<String> {
    read_text(path, FileKind::Bundle)
}

/// One signature file next to a bundle: where it is (as shown) and its
/// text, or why it could not be read.
pub(crate) struct SignatureText {
    pub(crate) shown: String,
    pub(crate) text: Result<String, String>,
}

/// `name` (`model.sig`, `release.sig`) next to the bundle file, bounded
/// ([`crate::signing::MAX_SIGNATURE_BYTES`]): absent is `None`; a file
/// that cannot be read (too large, not UTF-8, not a regular file) is kept
/// with why, for the check to name.
pub(crate) fn signature_text(bundle_path: &Path, name: &str) -> Option<SignatureText> {
    let p = bundle_path.parent().unwrap_or(Path::new("")).join(name);
    let max = crate::signing::MAX_SIGNATURE_BYTES as u64;
    // Never through a symlink: in the Argo CD plugin the repository under
    // review could point one anywhere on the sidecar.
    let link = std::fs::symlink_metadata(&p).is_ok_and(|m| m.file_type().is_symlink());
    let read = if link {
        Err(std::io::Error::other("a symlink: a signature file is read only as a regular file"))
    } else {
        read_bytes(&p, max, "signature file")
    };
    let text = match read.and_then(utf8) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        r => r.map_err(|e| e.to_string()),
    };
    Some(SignatureText { shown: crate::report::escape::path_name(&p), text })
}

/// Files a trust folder may hold: a ConfigMap of a few keys.
const MAX_TRUST_FILES: usize = 64;

/// The public keys of the pod's trust folder (a mounted ConfigMap): every
/// `*.pem` file in it, by name, each bounded. A ConfigMap's keys are
/// symlinks into its `..data` folder, which is why they are followed here
/// (the folder is the platform's, not the repository's); dot-names (the
/// mount's own bookkeeping) are skipped.
pub(crate) fn read_trust_keys(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    use anyhow::Context;
    let shown = crate::report::escape::path_name(dir);
    let mut names = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("reading the trust folder {shown}"))? {
        let e = e.with_context(|| format!("reading the trust folder {shown}"))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && name.ends_with(".pem") {
            names.push(name);
            if names.len() > MAX_TRUST_FILES {
                anyhow::bail!("the trust folder {shown} holds more than {MAX_TRUST_FILES} .pem files");
            }
        }
    }
    names.sort();
    if names.is_empty() {
        anyhow::bail!("the trust folder {shown} holds no .pem public key: no signature could verify");
    }
    names
        .into_iter()
        .map(|n| {
            let text = read_bytes(&dir.join(&n), crate::signing::MAX_KEY_BYTES, "public key")
                .and_then(utf8)
                .with_context(|| format!("reading {shown}/{n}"))?;
            Ok((n, text))
        })
        .collect()
}

/// `model.sig` and `release.sig` next to the bundle file, read
/// ([`signature_text`]) and parsed.
pub(crate) fn read_signatures(bundle_path: &Path) -> crate::checks::signature::Signatures {
    use crate::checks::sign::{MODEL_SIG, RELEASE_SIG};
    let read = |name: &str| {
        signature_text(bundle_path, name).map(|t| crate::checks::signature::SigFile {
            shown: t.shown,
            parsed: t.text.and_then(|t| crate::parse::sigstore::parse_file(&t)),
        })
    };
    crate::checks::signature::Signatures { model: read(MODEL_SIG), release: read(RELEASE_SIG), store_model: None }
}

/// `..` and `.` applied without touching the disk (the target may not exist).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The canonical folder holding the bundle at `bundle_path` (lexically
/// normalized when it does not exist).
pub(crate) fn bundle_folder(bundle_path: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(bundle_path)
        .unwrap_or_else(|_| normalize(&std::path::absolute(bundle_path).unwrap_or_else(|_| bundle_path.to_path_buf())));
    abs.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The git work tree holding `dir`: the nearest ancestor with a `.git`
/// entry (a folder, or a worktree's or submodule's file). Never the
/// current folder unless the bundle is in it.
pub(crate) fn work_tree_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors().find(|d| d.join(".git").exists()).map(Path::to_path_buf)
}

/// The confinement root for files a bundle at `bundle_path` names (see the module docs).
pub(crate) fn confinement_root(bundle_path: &Path) -> PathBuf {
    let dir = bundle_folder(bundle_path);
    work_tree_of(&dir).unwrap_or_else(|| dir.parent().map(Path::to_path_buf).unwrap_or(dir))
}

/// Where a reference from a bundle leads, if it stays inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Confined {
    Inside(PathBuf),
    Outside { root: PathBuf },
}

/// [`confine`] against a root the caller knows better than the bundle's
/// surroundings do: Argo CD's CMP checkout has no `.git`, but
/// `ARGOCD_APP_SOURCE_PATH` says where the repository starts.
pub(crate) fn confine_within(root: &Path, bundle_path: &Path, reference: &str) -> Confined {
    let root = std::fs::canonicalize(root).unwrap_or_else(|_| normalize(root));
    let base = std::fs::canonicalize(bundle_path)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| root.clone());
    let lexical = normalize(&base.join(reference));
    if !lexical.starts_with(&root) {
        return Confined::Outside { root };
    }
    match std::fs::canonicalize(&lexical) {
        Ok(real) if !real.starts_with(&root) => Confined::Outside { root },
        Ok(real) => Confined::Inside(real),
        // Missing: report it as unreadable at the path that was named.
        Err(_) => Confined::Inside(lexical),
    }
}

/// Why a file that a bundle names could not be used. Never quotes the file:
/// it may be anything the bundle points at, such as a `.env`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NamedFileError {
    #[error("`{reference}` resolves outside {root} (the bundle's git work tree, else the folder above the bundle's folder): refused, not read")]
    Outside { reference: String, root: String },
    #[error("{0}")]
    Unreadable(String),
}

/// Where `reference` (named by the bundle `l`) leads, if inside the root.
pub(crate) fn resolve_named(l: &Loaded, reference: &str) -> Result<PathBuf, NamedFileError> {
    resolve_named_within(&confinement_root(&l.path), l, reference)
}

/// [`resolve_named`] inside an explicit root (see [`confine_within`]).
pub(crate) fn resolve_named_within(root: &Path, l: &Loaded, reference: &str) -> Result<PathBuf, NamedFileError> {
    match confine_within(root, &l.path, reference) {
        Confined::Outside { root } => {
            Err(NamedFileError::Outside { reference: reference.to_string(), root: root.display().to_string() })
        }
        Confined::Inside(p) => Ok(p),
    }
}

/// Load a bundle that `l` names (its rollback target): confined, bounded,
/// and with errors that say where the file is broken but never quote it.
/// The one loader lint, canary and watch/revert use.
pub(crate) fn load_named_bundle(l: &Loaded, reference: &str) -> Result<Loaded, NamedFileError> {
    load_named_bundle_within(&confinement_root(&l.path), l, reference)
}

/// [`load_named_bundle`] inside an explicit root (see [`confine_within`]).
pub(crate) fn load_named_bundle_within(root: &Path, l: &Loaded, reference: &str) -> Result<Loaded, NamedFileError> {
    let p = resolve_named_within(root, l, reference)?;
    load(&p).map_err(|e| NamedFileError::Unreadable(e.redacted()))
}

/// Read a text file that `l` names (its golden set): confined and bounded.
pub(crate) fn read_named_text(
    l: &Loaded,
    reference: &str,
    kind: FileKind,
) -> Result<(PathBuf, String), NamedFileError> {
    let p = resolve_named(l, reference)?;
    let text =
        read_text(&p, kind).map_err(|e| NamedFileError::Unreadable(format!("{}: cannot read: {e}", p.display())))?;
    Ok((p, text))
}

/// The rollback target of `l` as plain data for `checks::lint`.
pub(crate) fn rollback_status(l: &Loaded) -> RollbackStatus {
    rollback_status_within(&confinement_root(&l.path), l)
}

/// [`rollback_status`] inside an explicit root (see [`confine_within`]).
pub(crate) fn rollback_status_within(root: &Path, l: &Loaded) -> RollbackStatus {
    let Some(rb) = &l.bundle.spec.rollback else { return RollbackStatus::NotDeclared };
    status_of(rb, &load_named_bundle_within(root, l, &rb.bundle))
}

/// The plain-data status of a rollback target the caller already loaded.
pub(crate) fn status_of(rb: &crate::bundle::Rollback, loaded: &Result<Loaded, NamedFileError>) -> RollbackStatus {
    let path = rb.bundle.clone();
    match loaded {
        Ok(prev) => RollbackStatus::Resolved { path, digest: prev.digest.clone() },
        Err(NamedFileError::Outside { root, .. }) => RollbackStatus::Escapes { path, root: root.clone() },
        Err(NamedFileError::Unreadable(error)) => RollbackStatus::Unreadable { path, error: error.clone() },
    }
}

/// The first [`MAX_SNIFF_BYTES`](detect::MAX_SNIFF_BYTES) of a regular file ([`open_regular`]).
pub(crate) fn read_head(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    open_regular(path)?.0.take(detect::MAX_SNIFF_BYTES as u64).read_to_end(&mut buf)?;
    Ok(buf)
}

/// A file found while walking `root` (canonical), when it is a bundle. A
/// symlink is followed only when its target stays inside `root`; a
/// bundle-named link that leaves it is an error, other links that leave it
/// are not read.
pub(crate) fn check_file(root: &Path, path: &Path, is_symlink: bool) -> AnyResult<Option<PathBuf>> {
    if !detect::is_candidate(path) {
        return Ok(None);
    }
    if is_symlink {
        let real = match path.canonicalize() {
            Ok(r) => r,
            Err(e) if detect::has_bundle_name(path) => bail!("{} is a symlink to a missing file: {e}", path.display()),
            Err(_) => return Ok(None),
        };
        if !real.starts_with(root) {
            if detect::has_bundle_name(path) {
                bail!(
                    "{} is a symlink to {}, outside {}: refusing to follow it (copy the bundle into the repository)",
                    path.display(),
                    real.display(),
                    root.display()
                );
            }
            return Ok(None);
        }
        if !real.is_file() {
            return Ok(None);
        }
    } else if !path.is_file() {
        return Ok(None);
    }
    let head = read_head(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(detect::is_bundle(path, &head).then(|| path.to_path_buf()))
}

/// Read and parse a bundle file (`bundle::parse` judges the text).
pub(crate) fn load(path: &Path) -> Result<Loaded, LoadError> {
    // The bundle's name in every report, lossless: two paths, two names.
    let display = crate::report::escape::path_name(path);
    // Bounded, regular files only: `/dev/zero` or a 200 MB file never reaches memory.
    let text = read_bundle_text(path).map_err(|source| LoadError::Io { file: display.clone(), source })?;
    bundle::parse(&display, path, text)
}

/// Every bundle under `root` (or `root` itself when it is a file):
/// `release.yaml`/`release.yml`, or any YAML file declaring
/// `kind: ReleaseBundle` ([`detect`]), sorted by path. Build output and VCS
/// folders are skipped.
#[cfg(feature = "cli")]
pub fn find_bundles(root: &Path) -> AnyResult<Vec<PathBuf>> {
    if root.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut out = Vec::new();
    let real_root = root.canonicalize().with_context(|| format!("reading {}", root.display()))?;
    let walker = walkdir::WalkDir::new(root).sort_by_file_name().into_iter().filter_entry(|e| {
        let n = e.file_name().to_string_lossy();
        !(e.file_type().is_dir() && (n == ".git" || n == "target" || n == "node_modules"))
    });
    for e in walker {
        let e = e.with_context(|| format!("walking {}", root.display()))?;
        if let Some(p) = check_file(&real_root, e.path(), e.path_is_symlink())? {
            out.push(p);
        }
    }
    Ok(out)
}

/// A template folder's files among `names` (`<name>.yaml.hbs`; one that is
/// missing is left to the built-in), as (name, path, text). Each must be a
/// regular file that resolves inside `root` (the folder itself when `None`):
/// the folder being inside says nothing about a symlinked file in it.
pub(crate) fn read_templates(
    folder: &Path,
    root: Option<&Path>,
    names: &[&str],
) -> AnyResult<Vec<(String, PathBuf, String)>> {
    let root = match root {
        Some(r) => r.canonicalize().with_context(|| format!("template root {}", r.display()))?,
        None => {
            folder.canonicalize().with_context(|| format!("template folder {} does not exist", folder.display()))?
        }
    };
    let max = FileKind::Template.max_bytes();
    let mut out = Vec::new();
    for name in names {
        let p = folder.join(format!("{name}.yaml.hbs"));
        if std::fs::symlink_metadata(&p).is_err() {
            continue;
        }
        let real = p.canonicalize().with_context(|| format!("template {} (dangling symlink?)", p.display()))?;
        if !real.starts_with(&root) {
            bail!(
                "template {} resolves outside {} (symlink to {}); refused",
                p.display(),
                root.display(),
                real.display()
            );
        }
        let meta = std::fs::metadata(&real).with_context(|| format!("reading template {}", p.display()))?;
        if !meta.is_file() || meta.len() > max {
            bail!("template {} must be a regular file of at most {max} bytes", p.display());
        }
        let text = read_text(&real, FileKind::Template).with_context(|| format!("reading template {}", p.display()))?;
        out.push((name.to_string(), p, text));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_applies_parent_dirs() {
        assert_eq!(normalize(Path::new("/a/b/../../../etc")), PathBuf::from("/etc"));
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    }

    #[test]
    fn devices_and_oversized_files_are_refused() {
        let e = read_text(Path::new("/dev/zero"), FileKind::Bundle).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.yaml");
        std::fs::write(&p, vec![b'a'; 2048]).unwrap();
        let e = read_bytes(&p, 1024, "thing").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("over the limit of 1024 bytes (1 KiB) for a thing"), "{e}");
        assert_eq!(read_bytes(&p, 4096, "thing").unwrap().len(), 2048);
        std::fs::write(&p, b"ok\xff").unwrap();
        assert!(read_text(&p, FileKind::Marker)
            .unwrap_err()
            .to_string()
            .contains("not UTF-8 text (invalid byte at offset 2)"));
    }

    #[test]
    fn every_reader_refuses_a_fifo_or_socket_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("f.yaml");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        let sock = d.path().join("s.yaml");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (f2, s2) = (fifo.clone(), sock.clone());
        std::thread::spawn(move || {
            let errs = [
                read_bytes(&f2, 10, "x").unwrap_err(),
                read_head(&f2).unwrap_err(),
                open_regular(&f2).unwrap_err(),
                read_bytes(&s2, 10, "x").unwrap_err(),
            ];
            let _ = tx.send(errs.map(|e| e.to_string()));
        });
        let errs = rx.recv_timeout(std::time::Duration::from_secs(5)).expect("a reader blocked on a FIFO");
        assert!(errs[..3].iter().all(|e| e.contains("not a regular file (it is a FIFO)")), "{errs:?}");
        assert!(errs[3].contains("it is a socket"), "{errs:?}");
    }
}
