//! Reading bundle files from disk: bounded, regular files only, and (for a
//! file that a bundle *names*, such as its rollback target) confined to the
//! tree the bundle lives in.
//!
//! Confinement root: the git work tree that contains the bundle (the nearest
//! ancestor folder holding a `.git` entry, a folder or a worktree's file).
//! Outside any git work tree, the folder above the bundle's folder, i.e. the
//! service folder of the `<service>/<version>/release.yaml` layout, so that
//! `../v1/release.yaml` resolves. A reference resolves inside the root after
//! `..` is applied *and* after symlinks are followed, or it is refused.

use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::bundle::{self, LoadError, Loaded};
use crate::checks::lint::RollbackStatus;
use crate::yaml_guard::MAX_BUNDLE_BYTES;

fn refuse(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

/// Read a UTF-8 text file of at most `max` bytes. Devices, FIFOs and folders
/// are refused before they are opened (`/dev/zero` never ends, a FIFO blocks).
pub fn read_bounded(path: &Path, max: usize) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(refuse("not a regular file (a device, FIFO, socket or folder): refusing to read it".into()));
    }
    let too_big = |n: u64| refuse(format!("{n} bytes or more, over the limit of {max} bytes ({} MiB) for a bundle file", max / (1024 * 1024)));
    if meta.len() > max as u64 {
        return Err(too_big(meta.len()));
    }
    let f = std::fs::File::open(path)?;
    // The file may grow between stat and read: the reader itself is bounded.
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.take(max as u64 + 1).read_to_end(&mut buf)?;
    if buf.len() > max {
        return Err(too_big(buf.len() as u64));
    }
    String::from_utf8(buf).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("not UTF-8 text (invalid byte at offset {})", e.utf8_error().valid_up_to())))
}

/// Read a bundle-sized file (see [`MAX_BUNDLE_BYTES`]).
pub fn read_bundle_text(path: &Path) -> std::io::Result<String> {
    read_bounded(path, MAX_BUNDLE_BYTES)
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

/// The confinement root for files a bundle at `bundle_path` names (see the module docs).
pub fn confinement_root(bundle_path: &Path) -> PathBuf {
    let abs = std::fs::canonicalize(bundle_path).unwrap_or_else(|_| normalize(&std::path::absolute(bundle_path).unwrap_or_else(|_| bundle_path.to_path_buf())));
    let dir = abs.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut cur = Some(dir.as_path());
    while let Some(d) = cur {
        if d.join(".git").exists() {
            return d.to_path_buf();
        }
        cur = d.parent();
    }
    dir.parent().map(Path::to_path_buf).unwrap_or(dir)
}

/// Where a reference from a bundle leads, if it stays inside the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Confined {
    Inside(PathBuf),
    Outside { root: PathBuf },
}

/// Resolve `reference` (relative to the bundle's folder, or absolute) and
/// check it stays inside [`confinement_root`], before and after symlinks.
pub fn confine(bundle_path: &Path, reference: &str) -> Confined {
    let root = confinement_root(bundle_path);
    let base = std::fs::canonicalize(bundle_path).ok().and_then(|p| p.parent().map(Path::to_path_buf)).unwrap_or_else(|| root.clone());
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

/// Load the rollback target of `l` as plain data for `checks::lint`. Errors
/// say where the target is broken (file, line, column, field) but never
/// quote it: the target may be any file, such as a `.env`.
pub fn rollback_status(l: &Loaded) -> RollbackStatus {
    let Some(rb) = &l.bundle.spec.rollback else { return RollbackStatus::NotDeclared };
    let path = rb.bundle.clone();
    match confine(&l.path, &rb.bundle) {
        Confined::Outside { root } => RollbackStatus::Escapes { path, root: root.display().to_string() },
        Confined::Inside(p) => match load(&p) {
            Ok(prev) => RollbackStatus::Resolved { path, digest: prev.digest },
            Err(e) => RollbackStatus::Unreadable { path, error: e.redacted() },
        },
    }
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
        let e = read_bounded(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("big.yaml");
        std::fs::write(&p, vec![b'a'; 2048]).unwrap();
        assert!(read_bounded(&p, 1024).unwrap_err().to_string().contains("over the limit"));
        assert_eq!(read_bounded(&p, 4096).unwrap().len(), 2048);
    }
}

/// Read and parse a bundle file (`bundle::parse` judges the text).
pub fn load(path: &Path) -> Result<Loaded, LoadError> {
    let display = path.display().to_string();
    // Bounded, regular files only: `/dev/zero` or a 200 MB file never reaches memory.
    let text = read_bundle_text(path).map_err(|source| LoadError::Io { file: display.clone(), source })?;
    bundle::parse(&display, path, text)
}
