//! The local file system beyond reading inputs (`bundle_files` does that):
//! writing what bundlegate produces, resolving paths, listing a folder to
//! publish. Built without the `cli` feature too, since `render --out` writes
//! through it.
//!
//! Every write of a whole file goes through [`write_atomic`]: a reader (a
//! readiness probe, the next audit, Argo CD) sees the old file or the new
//! one, never half of it, and a symlink planted at the destination is
//! replaced, never written through.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};

/// `p` with `.`/`..` and symlinks resolved; `what` names it in the error.
pub(crate) fn canonical(p: &Path, what: &str) -> Result<PathBuf> {
    p.canonicalize().with_context(|| format!("{what} {} does not exist", p.display()))
}

/// `p` resolved when it exists, else as given (for comparing references
/// that may name a missing file).
pub(crate) fn canonical_or_same(p: &Path) -> PathBuf {
    p.canonicalize().unwrap_or_else(|_| p.to_path_buf())
}

/// The process's working folder (Argo CD runs a plugin in the app's source path).
pub(crate) fn current_dir() -> Result<PathBuf> {
    std::env::current_dir().context("reading the current directory")
}

pub(crate) fn is_file(p: &Path) -> bool {
    p.is_file()
}

pub(crate) fn is_dir(p: &Path) -> bool {
    p.is_dir()
}

/// Remove a file; one that is already gone is not an error.
pub(crate) fn remove_file(p: &Path) -> Result<()> {
    match std::fs::remove_file(p) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", p.display()))
        }
        _ => Ok(()),
    }
}

/// Write `bytes` in place, for files that cannot be replaced by a rename
/// (Kubernetes' termination log is a mount point).
pub(crate) fn write_in_place(p: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(p, bytes).with_context(|| format!("writing {}", p.display()))
}

/// One line on stderr, for a command's own progress lines (the in-pod
/// verifier's log). A reader that went away ends it quietly, as for the
/// report; any other failure is returned (`eprintln!` would panic).
pub(crate) fn stderr_line(line: &str) -> std::io::Result<()> {
    let mut e = std::io::stderr().lock();
    match writeln!(e, "{line}").and_then(|()| e.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// The log's writer (tracing's events on stderr): each event is one
/// write, through the log's escaper (credentials cut, controls shown, one
/// line per event: a store key or path cannot forge a record or a workflow
/// command). The formatter writes no colours of its own. A closed stderr does not fail
/// the command; the log is advisory (the report's own writes are checked in
/// `main`).
pub struct LogWriter<W: std::io::Write>(pub W);

impl LogWriter<std::io::Stderr> {
    pub fn stderr() -> Self {
        LogWriter(std::io::stderr())
    }
}

impl<W: std::io::Write> std::io::Write for LogWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        let _ = self.0.write_all(crate::report::escape::log_record(&text).as_bytes());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let _ = self.0.flush();
        Ok(())
    }
}

/// Replace `path` with `bytes`: a sibling temporary file, then a rename.
/// The parent folder is created. An existing folder or symlink at `path`
/// is refused rather than replaced or followed.
pub(crate) fn write_atomic(path: &Path, mut bytes: &[u8]) -> Result<()> {
    write_atomic_from(path, &mut bytes)
}

/// [`write_atomic`] from a reader, copied as it is read (a report larger
/// than memory should hold).
pub(crate) fn write_atomic_from(path: &Path, bytes: &mut dyn std::io::Read) -> Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        bail!("{} does not name a file", path.display());
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    if let Ok(m) = std::fs::symlink_metadata(path) {
        if m.file_type().is_symlink() || !m.is_file() {
            bail!(
                "{} exists and is not a regular file (symlink or folder); refusing to write through it",
                path.display()
            );
        }
    }
    // The pid keeps two concurrent writers of one file off each other's
    // temporary; `create_new` refuses one planted there.
    // From the name's bytes: a lossy one would give `a\xff` and `a\xfe` one temporary.
    let mut tmp_name = std::ffi::OsString::from(".");
    tmp_name.push(name);
    tmp_name.push(format!(".{}.tmp", std::process::id()));
    let tmp = dir.join(tmp_name);
    let res = (|| -> Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        std::io::copy(bytes, &mut f).with_context(|| format!("writing {}", tmp.display()))?;
        // A full or failing disk may only say so when the data is flushed:
        // a file that did not reach the disk is not written.
        f.sync_all().with_context(|| format!("writing {}", tmp.display()))?;
        // rename replaces the directory entry: a symlink planted between
        // the check above and here is replaced, not followed.
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Write `bytes` as the file `name` directly inside `folder` (created when
/// missing) and return its path. `name` must be one plain component.
pub(crate) fn write_into(folder: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let rel = Path::new(name);
    if rel.components().count() != 1 || !matches!(rel.components().next(), Some(Component::Normal(_))) {
        bail!("output file name `{name}` is not a plain file name");
    }
    std::fs::create_dir_all(folder).with_context(|| format!("creating {}", folder.display()))?;
    let root = folder.canonicalize().with_context(|| format!("resolving {}", folder.display()))?;
    let p = root.join(rel);
    write_atomic(&p, bytes)?;
    Ok(p)
}

#[cfg(feature = "cli")]
/// Every regular file under `dir`, as (path relative to `dir`, full path),
/// sorted by name. A symlink anywhere is an error: what is published must
/// be exactly the bytes in the folder; so is a FIFO, socket or device
/// (skipping it would publish a release without that file). Names are
/// kept as the file system has them: whether the store can hold them is
/// the store's to say (`Store::publish_keys`).
pub(crate) fn regular_files(dir: &Path) -> Result<Vec<(PathBuf, PathBuf)>> {
    if !dir.is_dir() {
        bail!("{} is not a folder", dir.display());
    }
    let mut files = Vec::new();
    for e in walkdir::WalkDir::new(dir).follow_links(false).sort_by_file_name() {
        let e = e.with_context(|| format!("walking {}", dir.display()))?;
        let t = e.file_type();
        if t.is_symlink() {
            bail!("{} is a symlink; publish copies regular files only", e.path().display());
        }
        if t.is_dir() {
            continue;
        }
        let meta = e.metadata().with_context(|| format!("reading {}", e.path().display()))?;
        crate::adapters::bundle_files::ensure_regular(&meta)
            .with_context(|| format!("{}: publish copies regular files only", e.path().display()))?;
        let Ok(rel) = e.path().strip_prefix(dir) else { continue };
        files.push((rel.to_path_buf(), e.path().to_path_buf()));
    }
    Ok(files)
}

/// A scratch file, unlinked as soon as it is created (gone with the
/// process, whatever ends it): where `report merge` keeps what it would
/// otherwise hold in memory (the steps between its passes, the output
/// before it is printed).
pub struct Spool {
    file: std::fs::File,
    len: u64,
}

impl Spool {
    pub(crate) fn new() -> std::io::Result<Spool> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir();
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        for attempt in 0..100u32 {
            let p = dir.join(format!(".bundlegate-spool-{}-{stamp}-{attempt}", std::process::id()));
            match std::fs::OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(&p) {
                Ok(file) => {
                    std::fs::remove_file(&p)?;
                    return Ok(Spool { file, len: 0 });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "no free scratch file name in the temp folder"))
    }

    /// Append `bytes`; where they start.
    pub(crate) fn append(&mut self, bytes: &[u8]) -> std::io::Result<u64> {
        use std::os::unix::fs::FileExt;
        let at = self.len;
        self.file.write_all_at(bytes, at)?;
        self.len += bytes.len() as u64;
        Ok(at)
    }

    /// The `len` bytes appended at `at`.
    pub(crate) fn read_at(&self, at: u64, len: usize) -> std::io::Result<Vec<u8>> {
        use std::os::unix::fs::FileExt;
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, at)?;
        Ok(buf)
    }

    /// Everything appended, from the start (the spool is consumed).
    pub(crate) fn into_reader(self) -> std::io::BufReader<std::io::Take<std::fs::File>> {
        use std::io::{Read as _, Seek as _};
        let mut f = self.file;
        // A fresh handle's offset: 0 unless `Read` moved it; make sure.
        let _ = f.rewind();
        std::io::BufReader::new(f.take(self.len))
    }

    /// Copy everything appended to `out` (the binary prints a merge this way).
    pub fn copy_to(self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        std::io::copy(&mut self.into_reader(), out)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_and_refuses_symlinks() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("sub/out.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        let target = d.path().join("elsewhere");
        std::fs::write(&target, b"keep").unwrap();
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let err = write_atomic(&link, b"x").unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        // No temporary is left behind.
        let names: Vec<_> = std::fs::read_dir(d.path().join("sub")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("out.json")]);
    }

    #[test]
    fn write_into_takes_one_plain_name() {
        let d = tempfile::tempdir().unwrap();
        for bad in ["../x", "a/b", "..", "/abs"] {
            assert!(write_into(d.path(), bad, b"x").is_err(), "{bad}");
        }
        let p = write_into(&d.path().join("new"), "a.yaml", b"x").unwrap();
        assert!(p.ends_with("new/a.yaml"));
    }

    #[test]
    fn a_spool_gives_back_what_was_appended_and_leaves_no_file() {
        let mut s = Spool::new().unwrap();
        assert_eq!(s.append(b"hello ").unwrap(), 0);
        assert_eq!(s.append(b"world").unwrap(), 6);
        assert_eq!(s.read_at(6, 5).unwrap(), b"world");
        assert!(s.read_at(6, 6).is_err(), "nothing was appended past the end");
        let mut out = Vec::new();
        s.copy_to(&mut out).unwrap();
        assert_eq!(out, b"hello world");
        let left = std::fs::read_dir(std::env::temp_dir())
            .unwrap()
            .filter(|e| {
                e.as_ref().unwrap().file_name().to_string_lossy().contains(&format!("spool-{}-", std::process::id()))
            })
            .count();
        assert_eq!(left, 0, "the spool is unlinked at once");
    }

    #[test]
    fn remove_file_ignores_missing() {
        let d = tempfile::tempdir().unwrap();
        remove_file(&d.path().join("nope")).unwrap();
    }
}
