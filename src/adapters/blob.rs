//! Small whole objects (audit cache entries, shard reports) at a location the
//! user names: a local folder or file, `file:///abs`, or an object-store URI
//! (`s3://bucket/prefix/`, `gs://`, `az://`). Used so the audit cache and the
//! shard reports outlive the machine that wrote them (hosted runners, pods).
//!
//! Every read is bounded: these objects come from a shared bucket that other
//! writers can reach, so size is never trusted.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use object_store::{path::Path as OPath, ObjectStore, ObjectStoreExt, PutPayload};

use super::store::{short_error, Store};
use crate::bundle::storage_uri::Location;
use crate::bundle::storage_uri::{self, StorageUri};

/// Where small objects live: the store and the prefix inside it.
#[derive(Clone)]
pub(crate) struct BlobDir {
    inner: Arc<dyn ObjectStore>,
    prefix: OPath,
    /// As the user gave it, for messages (an object-store URI never carries
    /// credentials: those come from the environment).
    pub display: String,
    /// The folder of a local location: its files are read by the one local
    /// reader ([`crate::adapters::bundle_files::read_bytes`]: regular files
    /// only, bounded), never through object_store's, whose open of a FIFO
    /// waits for a writer forever.
    local: Option<PathBuf>,
}

/// Parse a location the user named (cache, report, metrics): the one rule,
/// [`storage_uri::location`], shared with bundles' storage URIs.
pub(crate) fn location(s: &str) -> Result<Location> {
    storage_uri::location(s).map_err(|e| anyhow!("`{s}`: {e}"))
}

fn local_dir(p: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    std::fs::canonicalize(p).with_context(|| format!("resolving {}", p.display()))
}

impl BlobDir {
    /// Open a parsed location; `display` names it in messages.
    pub(crate) fn at(loc: &Location, display: &str) -> Result<BlobDir> {
        match loc {
            Location::Remote(u) => {
                // Remote locations are not resolved against any folder.
                let s = Store::open(
                    &format!("{}/", u.with_prefix(&u.prefix).trim_end_matches('/')),
                    Path::new("."),
                    false,
                    None,
                )?;
                Ok(BlobDir { inner: s.inner, prefix: s.prefix, display: display.to_string(), local: None })
            }
            Location::Local(path) => {
                let dir = local_dir(path)?;
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&dir)
                    .with_context(|| format!("opening {}", dir.display()))?;
                Ok(BlobDir {
                    inner: Arc::new(fs),
                    prefix: OPath::from(""),
                    display: path.display().to_string(),
                    local: Some(dir),
                })
            }
        }
    }

    fn path(&self, name: &str) -> OPath {
        if self.prefix.as_ref().is_empty() {
            OPath::from(name)
        } else {
            self.prefix.clone().join(name)
        }
    }

    /// The object's bytes, `None` when it does not exist; more than `limit`
    /// bytes is an error (never read whole).
    pub(crate) async fn get(&self, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        if let Some(dir) = &self.local {
            return self.get_local(dir, name, limit);
        }
        let p = self.path(name);
        let r = match self.inner.get(&p).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => bail!("reading {}/{name}: {}", self.display.trim_end_matches('/'), short_error(&e)),
        };
        if r.meta.size > limit {
            bail!(
                "{}/{name} is {} bytes, over the {limit}-byte limit",
                self.display.trim_end_matches('/'),
                r.meta.size
            );
        }
        let mut out = Vec::with_capacity(r.meta.size as usize);
        let mut s = r.into_stream();
        while let Some(chunk) = s.next().await {
            let chunk = chunk
                .map_err(|e| anyhow!("reading {}/{name}: {}", self.display.trim_end_matches('/'), short_error(&e)))?;
            if out.len() as u64 + chunk.len() as u64 > limit {
                bail!("{}/{name} grew past the {limit}-byte limit while reading", self.display.trim_end_matches('/'));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(Some(out))
    }

    /// A stream over the object's bytes, `None` when it does not exist;
    /// more than `limit` bytes is an error. A local file is read where it
    /// lies (the one reader's rules: regular files only); a remote object is
    /// copied to a scratch file first. Neither is held in memory.
    pub(crate) async fn open(&self, name: &str, limit: u64) -> Result<Option<Box<dyn std::io::Read + Send>>> {
        let shown = format!("{}/{name}", self.display.trim_end_matches('/'));
        if let Some(dir) = &self.local {
            let rel = plain_name(&shown, name)?;
            return match crate::adapters::bundle_files::open_regular(&dir.join(rel)) {
                Ok((_, m)) if m.len() > limit => bail!("{shown} is {} bytes, over the {limit}-byte limit", m.len()),
                Ok((f, _)) => Ok(Some(Box::new(std::io::BufReader::new(std::io::Read::take(f, limit))))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(anyhow::Error::new(e).context(format!("reading {shown}"))),
            };
        }
        let r = match self.inner.get(&self.path(name)).await {
            Ok(r) => r,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => bail!("reading {shown}: {}", short_error(&e)),
        };
        if r.meta.size > limit {
            bail!("{shown} is {} bytes, over the {limit}-byte limit", r.meta.size);
        }
        let mut spool = super::local::Spool::new().context("a scratch file for the download")?;
        let mut s = r.into_stream();
        let mut got = 0u64;
        while let Some(chunk) = s.next().await {
            let chunk = chunk.map_err(|e| anyhow!("reading {shown}: {}", short_error(&e)))?;
            got += chunk.len() as u64;
            if got > limit {
                bail!("{shown} grew past the {limit}-byte limit while reading");
            }
            spool.append(&chunk).context("writing the download to a scratch file")?;
        }
        Ok(Some(Box::new(spool.into_reader())))
    }

    /// [`BlobDir::get`] in a local folder: `name` is one plain file name
    /// (the cache's and the listing's names are), read by the one reader.
    fn get_local(&self, dir: &Path, name: &str, limit: u64) -> Result<Option<Vec<u8>>> {
        let shown = format!("{}/{name}", self.display.trim_end_matches('/'));
        let rel = plain_name(&shown, name)?;
        match crate::adapters::bundle_files::read_bytes(&dir.join(rel), limit, "file") {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            // The io::Error stays in the chain: callers tell a refused
            // non-file (InvalidInput) from a read that failed.
            Err(e) => Err(anyhow::Error::new(e).context(format!("reading {shown}"))),
        }
    }

    /// [`BlobDir::list`] in a local folder: every entry but folders, so a
    /// FIFO or socket named like a report is named by the read that refuses
    /// it rather than skipped unseen (object_store's listing leaves out what
    /// is not a regular file). Hidden names are temporaries of a writer. A
    /// name that is not UTF-8 is refused, named losslessly: read back under
    /// a lossy name it would be another file, or none.
    fn list_local(&self, dir: &Path, suffix: &str) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).with_context(|| format!("listing {}", self.display))? {
            let e = e.with_context(|| format!("listing {}", self.display))?;
            let raw = e.file_name();
            let Some(name) = raw.to_str().map(str::to_string) else {
                bail!(
                    "{}/{}: the file name is not UTF-8; rename it",
                    self.display.trim_end_matches('/'),
                    crate::report::escape::path_name(Path::new(&raw))
                );
            };
            if name.starts_with('.') || !name.ends_with(suffix) || e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            out.push(name);
        }
        out.sort();
        Ok(out)
    }

    /// Write the whole object. Local stores write to a temporary name and
    /// rename, so a reader never sees half an object.
    pub(crate) async fn put(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        self.inner
            .put(&self.path(name), PutPayload::from(bytes))
            .await
            .map_err(|e| anyhow!("writing {}/{name}: {}", self.display.trim_end_matches('/'), short_error(&e)))?;
        Ok(())
    }

    /// Names (relative to the prefix) of the objects directly under it that end with `suffix`.
    pub(crate) async fn list(&self, suffix: &str) -> Result<Vec<String>> {
        if let Some(dir) = &self.local {
            return self.list_local(dir, suffix);
        }
        let mut out = Vec::new();
        let prefix = if self.prefix.as_ref().is_empty() { None } else { Some(&self.prefix) };
        let want = if self.prefix.as_ref().is_empty() { String::new() } else { format!("{}/", self.prefix) };
        let mut s = self.inner.list(prefix);
        while let Some(item) = s.next().await {
            let m = item.map_err(|e| anyhow!("listing {}: {}", self.display, short_error(&e)))?;
            let full = m.location.to_string();
            let Some(rel) = full.strip_prefix(&want) else { continue };
            if !rel.contains('/') && rel.ends_with(suffix) {
                out.push(rel.to_string());
            }
        }
        out.sort();
        Ok(out)
    }
}

/// `name` as one plain file name in a local folder (the cache's and the
/// listing's names are), or an error naming `shown`.
fn plain_name<'a>(shown: &str, name: &'a str) -> Result<&'a Path> {
    let rel = Path::new(name);
    if rel.components().count() != 1 || !matches!(rel.components().next(), Some(std::path::Component::Normal(_))) {
        bail!("{shown}: not a plain file name");
    }
    Ok(rel)
}

/// Read one whole object or file named by a full location (`s3://b/r.json`,
/// `file:///abs/r.json`, `path/r.json`), at most `limit` bytes.
pub(crate) async fn read_location(location: &str, limit: u64) -> Result<Vec<u8>> {
    let (dir, name) = split_location(location)?;
    dir.get(&name, limit).await?.ok_or_else(|| anyhow!("{location}: no such object or file"))
}

/// Write one whole object or file named by a full location.
pub(crate) async fn write_location(location: &str, bytes: Vec<u8>) -> Result<()> {
    let (dir, name) = split_location(location)?;
    dir.put(&name, bytes).await
}

/// [`write_location`] from a scratch file: a local file is written as it
/// is read (a report of thousands of bundles is never held whole); an
/// object is read into memory and put whole, as the store takes it.
pub(crate) async fn write_location_from(location: &str, spool: super::local::Spool) -> Result<()> {
    if let (Location::Local(dir), name) = file_location(location)? {
        return super::local::write_atomic_from(&dir.join(name), &mut spool.into_reader());
    }
    let mut bytes = Vec::new();
    spool.copy_to(&mut bytes).with_context(|| format!("reading back what goes to {location}"))?;
    write_location(location, bytes).await
}

/// The folder (or prefix) and the file (or object) name of a full location,
/// without touching anything: commands check their output locations with it
/// before the work, not after.
pub(crate) fn file_location(s: &str) -> Result<(Location, String)> {
    let unnamed = || anyhow!("`{s}` does not name a file or object");
    if s.ends_with('/') {
        return Err(unnamed());
    }
    match location(s)? {
        Location::Local(p) => {
            let name = match p.components().next_back() {
                Some(std::path::Component::Normal(n)) => n.to_string_lossy().into_owned(),
                _ => return Err(unnamed()),
            };
            let dir = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            Ok((Location::Local(dir.to_path_buf()), name))
        }
        Location::Remote(u) => {
            let (dir, name) = u.prefix.rsplit_once('/').unwrap_or(("", &u.prefix));
            if name.is_empty() {
                return Err(unnamed());
            }
            let name = name.to_string();
            Ok((Location::Remote(StorageUri { prefix: dir.to_string(), ..u }), name))
        }
    }
}

pub(crate) fn split_location(s: &str) -> Result<(BlobDir, String)> {
    let (dir, name) = file_location(s)?;
    let shown = match &dir {
        Location::Local(p) => p.display().to_string(),
        Location::Remote(u) => u.with_prefix(&u.prefix),
    };
    Ok((BlobDir::at(&dir, &shown)?, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shard report whose file name is not UTF-8 is named losslessly and
    /// refused: its lossy name (`r\u{fffd}.json`) would read another file,
    /// or none, and two of them would be one.
    #[tokio::test]
    async fn a_listed_name_that_is_not_utf8_is_refused_naming_it() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("a.json"), b"{}").unwrap();
        std::fs::write(d.path().join(std::ffi::OsStr::from_bytes(b"r\xff.json")), b"{}").unwrap();
        let dir = BlobDir::at(&Location::Local(d.path().to_path_buf()), "reports/").unwrap();
        let e = dir.list(".json").await.unwrap_err().to_string();
        assert!(e.contains("r\\xff.json") && e.contains("not UTF-8"), "{e}");
        std::fs::remove_file(d.path().join(std::ffi::OsStr::from_bytes(b"r\xff.json"))).unwrap();
        assert_eq!(dir.list(".json").await.unwrap(), ["a.json"]);
    }
}
