//! Object stores through the `object_store` crate: list a versioned prefix,
//! hash objects pinned to the listed version (many at once, retrying
//! transient failures, with the progress bar), upload without overwriting.
//!
//! Credentials come only from the standard environment (AWS_*, GOOGLE_*,
//! AZURE_*) and are never formatted into messages: errors are re-described
//! from their kind and the object key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use object_store::path::Path as OPath;
use object_store::{GetOptions, GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};
use url::Url;

use crate::adapters::filehash;
use crate::bundle::storage_uri::{self, Backend};
use crate::checks::verify::HashOutcome;

/// Read size for publish's multipart upload: large enough that per-call
/// overhead vanishes next to the transfer, small enough that `jobs`
/// concurrent uploads stay far below the 64 MiB memory budget. (Hashing
/// reads through `filehash::sha256_read`.)
pub(crate) const READ_CHUNK: usize = 1 << 20;

/// Called with the number of bytes just hashed (drives the progress bar).
pub(crate) type Progress = Arc<dyn Fn(u64) + Send + Sync>;

pub struct Store {
    pub inner: Arc<dyn ObjectStore>,
    /// The prefix inside the store (no trailing slash).
    pub prefix: OPath,
    /// The URI as given, for messages (never contains credentials).
    pub uri: String,
    pub local: bool,
    /// `file:` stores: the prefix folder, canonical (symlinks resolved). Every
    /// object read must resolve inside it.
    pub local_dir: Option<PathBuf>,
}

// The listing and read outcomes are plain data the verify check judges;
// they are defined with that check.
use crate::checks::verify::{Listed, ReadFailure, Refused};

fn classify(e: &object_store::Error) -> ReadFailure {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => ReadFailure::NotFound,
        E::Precondition { .. } | E::NotModified { .. } => {
            ReadFailure::Changed("the store's ETag no longer matches the listed one".into())
        }
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => ReadFailure::Denied(short_error(e)),
        _ if endpoint_gone(e) => ReadFailure::Unreachable(short_error(e)),
        _ => ReadFailure::Other(short_error(e)),
    }
}

/// The request never reached a server: connection refused, no route, DNS
/// failure. object_store has already retried it (RetryConfig), so it is not
/// transient. Timeouts and 5xx are not this: they stay retryable.
pub(crate) fn endpoint_gone(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(h) = err.downcast_ref::<object_store::client::HttpError>() {
            if h.kind() == object_store::client::HttpErrorKind::Connect {
                return true;
            }
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            if matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::NotConnected
                    | std::io::ErrorKind::HostUnreachable
                    | std::io::ErrorKind::NetworkUnreachable
            ) {
                return true;
            }
        }
        cur = err.source();
    }
    false
}

/// The folder `file:` stores must stay inside: `configured`
/// (BUNDLEGATE_STORE_ROOT) when set, else the git work tree holding the bundle (the same lookup as
/// `bundle_files::confinement_root`), else the bundle's own folder. Never the
/// current folder: `cd / && bundlegate verify /tmp/x/release.yaml` with
/// `storageUri: file:/etc/` must not make `/` the root. Canonical.
pub(crate) fn store_root(bundle_dir: &Path, configured: Option<&Path>) -> Result<PathBuf> {
    if let Some(r) = configured {
        return std::fs::canonicalize(r)
            .with_context(|| format!("BUNDLEGATE_STORE_ROOT {} does not exist", r.display()));
    }
    let dir = std::fs::canonicalize(bundle_dir).with_context(|| format!("bundle folder {}", bundle_dir.display()))?;
    Ok(crate::adapters::bundle_files::work_tree_of(&dir).unwrap_or(dir))
}

/// A `file:` storage URI outside the store root: a policy refusal (BG110),
/// not a tool failure.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct OutsideRoot(pub String);

/// Confine a `file:` store folder to `root`: lexically first (so `/etc` or
/// `../../..` is refused before anything is touched), then with symlinks
/// resolved on the deepest existing ancestor (a symlinked folder leading out).
fn confine(path: &Path, root: &Path, uri: &str) -> Result<()> {
    let abs = storage_uri::normalize(&std::path::absolute(path)?);
    let refuse = |shown: &Path| {
        anyhow::Error::new(OutsideRoot(format!(
            "storage URI `{uri}` resolves to {}, outside the store root {} (the bundle's git work tree, else the bundle's folder; set BUNDLEGATE_STORE_ROOT to choose another); nothing was listed or read",
            shown.display(),
            root.display()
        )))
    };
    if !abs.starts_with(root) {
        return Err(refuse(&abs));
    }
    if let Some(existing) = abs.ancestors().find(|a| a.exists()) {
        let real = std::fs::canonicalize(existing).with_context(|| format!("resolving {}", existing.display()))?;
        if !real.starts_with(root) {
            return Err(refuse(&real));
        }
    }
    Ok(())
}

/// An error chain on one line, with credentials (URL userinfo, presigned
/// parameters) cut out by the one redaction rule.
pub(crate) fn short_error(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        src = s.source();
    }
    let joined = parts.join(": ");
    crate::report::redact::redact(&joined).into_owned()
}

/// `<bucket>/<prefix>` of a remote storage URI, the key prefix its objects
/// have in one store standing in for every bucket; `None` for `file:`.
pub(crate) fn remote_key_prefix(uri: &str) -> Option<String> {
    let p = storage_uri::parse(uri).ok()?;
    (p.backend != Backend::Local).then(|| format!("{}/{}", p.bucket, p.prefix).trim_end_matches('/').to_string())
}

impl Store {
    /// Open the store a bundle names (`storage_uri::SCHEMES` is the one
    /// list). `file:` URIs resolve against `bundle_dir` and must stay inside
    /// `store_root(bundle_dir, root)`; `create` makes the folder (publish).
    pub(crate) fn open(uri: &str, bundle_dir: &Path, create: bool, root: Option<&Path>) -> Result<Store> {
        let parsed = storage_uri::parse(uri).map_err(|e| anyhow!(e))?;
        if parsed.backend == Backend::Oci {
            // `verify` reads registries through `adapters::oci`; writing to
            // one (publish) is not built yet: an error, never a half-write.
            bail!("`{uri}` is an OCI registry reference: bundlegate reads registries (verify) but does not write to them yet; publish to an object store or push with oras");
        }
        if parsed.backend == Backend::Local {
            let base =
                std::fs::canonicalize(bundle_dir).with_context(|| format!("bundle folder {}", bundle_dir.display()))?;
            let path = storage_uri::local_path(&parsed, &base);
            let root = store_root(bundle_dir, root)?;
            confine(&path, &root, uri)?;
            if create {
                std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
            }
            let parent = path.parent().unwrap_or(Path::new("/"));
            if !parent.exists() {
                bail!("local store folder {} does not exist", parent.display());
            }
            // Re-check after creating: a symlink raced in is refused too.
            confine(&path, &root, uri)?;
            let url = Url::from_file_path(&path).map_err(|_| anyhow!("`{uri}` is not a local path"))?;
            let mut s = Store::open_resolved(url.as_str())?;
            s.uri = uri.to_string();
            s.local_dir = std::fs::canonicalize(&path).ok();
            return Ok(s);
        }
        Store::open_resolved(uri)
    }

    /// Open an already-resolved URI (`file:///abs` after confinement, or a
    /// remote URI from the table).
    fn open_resolved(uri: &str) -> Result<Store> {
        let url = Url::parse(uri).with_context(|| format!("storage URI `{uri}` is not a URL"))?;
        let retry = object_store::RetryConfig {
            backoff: object_store::BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(5),
                base: 2.0,
            },
            max_retries: 3,
            retry_timeout: Duration::from_secs(60),
        };
        let client = object_store::ClientOptions::new()
            .with_connect_timeout(Duration::from_secs(10))
            .with_timeout(Duration::from_secs(120));
        let (inner, prefix, local): (Arc<dyn ObjectStore>, OPath, bool) = match url.scheme() {
            "file" => {
                let path = url.to_file_path().map_err(|_| anyhow!("`{uri}` is not a local path"))?;
                let root = path.parent().map(|p| p.to_path_buf()).unwrap_or_else(|| "/".into());
                let leaf = match path.file_name().map(|s| s.to_str()) {
                    None => String::new(),
                    Some(Some(s)) => s.to_string(),
                    // A lossy prefix would name another folder, or none.
                    Some(None) => bail!("`{uri}`: the folder name is not UTF-8"),
                };
                if !root.exists() {
                    bail!("local store folder {} does not exist", root.display());
                }
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&root)
                    .with_context(|| format!("opening local store {}", root.display()))?;
                (Arc::new(fs), OPath::from(leaf), true)
            }
            "s3" => {
                // Client options first, then the environment, so AWS_ALLOW_HTTP
                // and friends are not reset by our timeouts.
                let mut b = object_store::aws::AmazonS3Builder::new().with_client_options(client).with_retry(retry);
                for (k, v) in env_with_prefix("AWS_") {
                    if let Ok(key) = k.to_ascii_lowercase().parse() {
                        b = b.with_config(key, v);
                    }
                }
                let b = b.with_url(uri).with_checksum_algorithm(object_store::aws::Checksum::SHA256);
                let s = b.build().with_context(|| format!("configuring S3 for `{uri}` (AWS_* environment)"))?;
                (Arc::new(s), OPath::from(url.path().trim_matches('/')), false)
            }
            "gs" => {
                let mut b =
                    object_store::gcp::GoogleCloudStorageBuilder::new().with_client_options(client).with_retry(retry);
                for (k, v) in env_with_prefix("GOOGLE_") {
                    if let Ok(key) = k.to_ascii_lowercase().parse() {
                        b = b.with_config(key, v);
                    }
                }
                let s = b
                    .with_url(uri)
                    .build()
                    .with_context(|| format!("configuring GCS for `{uri}` (GOOGLE_* environment)"))?;
                (Arc::new(s), OPath::from(url.path().trim_matches('/')), false)
            }
            "az" | "abfs" => {
                let mut b =
                    object_store::azure::MicrosoftAzureBuilder::new().with_client_options(client).with_retry(retry);
                for (k, v) in env_with_prefix("AZURE_") {
                    if let Ok(key) = k.to_ascii_lowercase().parse() {
                        b = b.with_config(key, v);
                    }
                }
                let s = b
                    .with_url(uri)
                    .build()
                    .with_context(|| format!("configuring Azure for `{uri}` (AZURE_* environment)"))?;
                (Arc::new(s), OPath::from(url.path().trim_matches('/')), false)
            }
            other => bail!("unsupported storage scheme `{other}` in `{uri}`"),
        };
        Ok(Store { inner, prefix, uri: uri.to_string(), local, local_dir: None })
    }

    /// Wrap an existing store (tests: InMemory).
    pub fn from_parts(inner: Arc<dyn ObjectStore>, prefix: &str, uri: &str) -> Store {
        Store {
            inner,
            prefix: OPath::from(prefix.trim_matches('/')),
            uri: uri.to_string(),
            local: false,
            local_dir: None,
        }
    }

    pub fn object_path(&self, key: &str) -> OPath {
        let mut p = self.prefix.clone();
        for seg in key.split('/') {
            p = p.clone().join(seg);
        }
        p
    }

    /// A small object at `key` read whole, refused over `max` bytes; `None`
    /// when there is none (the store's `model.sig` beside the files).
    pub(crate) async fn read_small(&self, key: &str, max: u64) -> Result<Option<Vec<u8>>> {
        if let Some(dir) = &self.local_dir {
            if std::fs::symlink_metadata(dir.join(key)).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
                return Ok(None);
            }
        }
        if let Some(why) = self.escapes(key) {
            bail!("{why}");
        }
        let res = match self.inner.get_opts(&self.object_path(key), GetOptions::default()).await {
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            r => r.with_context(|| format!("reading `{key}` in `{}`", self.uri))?,
        };
        if res.meta.size > max {
            bail!("`{key}` is {} bytes, over the limit of {max}", res.meta.size);
        }
        let bytes = res.bytes().await.with_context(|| format!("reading `{key}` in `{}`", self.uri))?;
        if bytes.len() as u64 > max {
            bail!("`{key}` grew past the limit of {max} bytes while read");
        }
        Ok(Some(bytes.to_vec()))
    }

    /// List every object under the prefix, keys relative to it. Sibling
    /// prefixes (`v1` vs `v10`) are excluded: listing is by path segment and
    /// we re-check every key starts with `prefix/`.
    pub async fn list(&self) -> Result<Vec<Listed>> {
        Ok(self.list_checked().await?.0)
    }

    /// Like `list`, and separately what the prefix holds that is not read as
    /// an object: `file:` entries resolving outside the prefix (symlinks),
    /// entries the store library's listing leaves out (FIFOs, sockets,
    /// dangling symlinks, `name#123`), and an object named as the prefix
    /// itself. They are named, never dropped, so verify judges them.
    pub(crate) async fn list_checked(&self) -> Result<(Vec<Listed>, Vec<Refused>)> {
        let mut out = Vec::new();
        let mut refused = Vec::new();
        // `file:` stores: the folder walked first, without following links.
        // A regular file reached through real folders only cannot resolve
        // outside the prefix, so only the others are resolved one by one
        // (`escapes`: a path lookup per component, which was most of a
        // warm audit's system time).
        let walked = match self.local_dir.clone() {
            Some(dir) => Some(
                tokio::task::spawn_blocking(move || walk_local(&dir))
                    .await
                    .map_err(|e| anyhow!("listing {}: {e}", self.uri))?
                    .with_context(|| format!("listing {}", self.uri))?,
            ),
            None => None,
        };
        let want = format!("{}/", self.prefix);
        let mut s = self.inner.list(Some(&self.prefix));
        while let Some(item) = s.next().await {
            let m = item.map_err(|e| anyhow!("listing {}: {}", self.uri, short_error(&e)))?;
            let full = m.location.to_string();
            let Some(rel) = full.strip_prefix(&want) else {
                // `prefix/` itself (object_store drops the slash): an empty
                // folder marker holds nothing; one with bytes is something.
                if full == self.prefix.as_ref() && m.size > 0 {
                    refused.push(Refused {
                        key: want.clone(),
                        why: format!("an object named as the prefix itself ({} bytes)", m.size),
                    });
                }
                continue;
            };
            if rel.is_empty() || rel.ends_with('/') {
                continue;
            }
            let plain = walked.as_ref().is_some_and(|w| w.plain.contains(rel));
            if !plain && self.escapes(rel).is_some() {
                refused.push(Refused { key: rel.to_string(), why: "a symlink leading outside the prefix".into() });
                continue;
            }
            out.push(listed(rel, &m));
        }
        if let Some(w) = walked {
            // object_store's file listing skips, without a word, what it
            // does not serve as an object; the walk names those.
            let seen: std::collections::HashSet<String> =
                out.iter().map(|o| o.key.clone()).chain(refused.iter().map(|r| r.key.clone())).collect();
            let found = tokio::task::spawn_blocking(move || unlisted_entries(w.entries, &seen))
                .await
                .map_err(|e| anyhow!("listing {}: {e}", self.uri))?
                .with_context(|| format!("listing {}", self.uri))?;
            refused.extend(found);
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        refused.sort_by(|a, b| a.key.cmp(&b.key));
        Ok((out, refused))
    }

    /// `file:` stores: why `key` may not be read (it resolves outside the
    /// prefix folder, or cannot be resolved), or None when it is inside.
    fn escapes(&self, key: &str) -> Option<String> {
        let dir = self.local_dir.as_ref()?;
        match std::fs::canonicalize(dir.join(key)) {
            // A FIFO swapped in after listing would block object_store's open.
            Ok(real) if real.starts_with(dir) => std::fs::metadata(&real)
                .and_then(|m| crate::adapters::bundle_files::ensure_regular(&m))
                .err()
                .map(|e| format!("`{key}` in `{}`: {e}", self.uri)),
            Ok(_) => Some(format!("`{key}` is a symlink leading outside `{}`", self.uri)),
            Err(e) => Some(format!("`{key}` cannot be resolved inside `{}`: {e}", self.uri)),
        }
    }

    /// Stream the object and hash it, pinned to the listed identity. Memory
    /// stays at one chunk per concurrent read whatever the object size.
    pub async fn hash(&self, obj: &Listed, progress: Progress) -> Result<String, ReadFailure> {
        // Checked again at read time: a symlink swapped in after listing.
        if let Some(why) = self.escapes(&obj.key) {
            return Err(ReadFailure::Escapes(why));
        }
        let opts = GetOptions { if_match: obj.e_tag.clone(), version: obj.version.clone(), ..Default::default() };
        let res = self.inner.get_opts(&self.object_path(&obj.key), opts).await.map_err(|e| classify(&e))?;
        if res.meta.size != obj.size {
            return Err(ReadFailure::Changed(format!("size is now {} (listed {})", res.meta.size, obj.size)));
        }
        let (sha, got) = match res.payload {
            GetResultPayload::File(file, path) => {
                // Local files: object_store's own stream uses 8 KiB reads; the
                // shared loop reads ahead on a second thread (see `sha256_read`).
                let expected = obj.size;
                let progress = progress.clone();
                let got = tokio::task::spawn_blocking(move || {
                    filehash::sha256_read(file, expected, &*progress)
                        .map_err(|e| ReadFailure::Other(format!("{}: {e}", path.display())))
                })
                .await
                .map_err(|e| ReadFailure::Other(format!("hashing task failed: {e}")))??;
                (got.sha256, got.bytes)
            }
            GetResultPayload::Stream(s) => hash_stream(s, obj.size, progress).await?,
        };
        if got != obj.size {
            return Err(ReadFailure::Truncated { expected: obj.size, got });
        }
        // A local file rewritten in place keeps its inode; re-check identity
        // after the read so an overwrite during the read is not mixed in.
        if self.local {
            if let Ok(m) = self.inner.head(&self.object_path(&obj.key)).await {
                if m.e_tag != obj.e_tag || m.size != obj.size {
                    return Err(ReadFailure::Changed("modified during the read".into()));
                }
            }
        }
        Ok(sha)
    }
}

// ---------------------------------------------------------------------------
// Hashing every object of a verify: concurrency, retries, the progress bar.

/// Transient failures are retried this many times, with exponential backoff.
const RETRIES: u32 = 3;

/// The bar on stderr, or a hidden one.
fn progress_bar(total: u64, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let pb = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    pb.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} verifying {bytes}/{total_bytes} {bytes_per_sec} eta {eta} {wide_bar}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    pb
}

impl Store {
    /// Hash `objs` concurrently (at most `jobs` at once), each pinned to its
    /// listed identity, retrying transient failures; a progress bar on
    /// stderr when `show_progress`.
    pub(crate) async fn hash_all(
        self: &Arc<Self>,
        mut objs: Vec<Listed>,
        jobs: usize,
        show_progress: bool,
    ) -> BTreeMap<String, HashOutcome> {
        // Largest first: one file's sha256 is serial, so the biggest object sets
        // the floor; starting it last would add the others' time on top.
        objs.sort_by_key(|o| std::cmp::Reverse(o.size));
        let total: u64 = objs.iter().map(|o| o.size).sum();
        let pb = progress_bar(total, show_progress);
        let tick: Progress = {
            let pb = pb.clone();
            Arc::new(move |n| pb.inc(n))
        };
        let sem = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        // Set by the first object that finds the endpoint gone (connection
        // refused, DNS): nothing new is started, the rest are NOT CHECKED with
        // that one reason instead of each spending its own retries on it.
        let gone: Arc<std::sync::OnceLock<String>> = Arc::new(std::sync::OnceLock::new());
        let mut set = tokio::task::JoinSet::new();
        for o in objs {
            let (store, sem, tick, gone) = (self.clone(), sem.clone(), tick.clone(), gone.clone());
            set.spawn(async move {
                let _permit = sem.acquire_owned().await.expect("semaphore open");
                let outcome = store.hash_with_retries(&o, &tick, &gone).await;
                (o.key, outcome)
            });
        }
        let mut out = BTreeMap::new();
        while let Some(j) = set.join_next().await {
            match j {
                Ok((k, h)) => {
                    out.insert(k, h);
                }
                Err(e) => tracing::error!("hashing task failed: {e}"),
            }
        }
        pb.finish_and_clear();
        out
    }

    /// One object: [`Store::hash`], retried on transient failures; NOT
    /// CHECKED at once when another object found the store gone.
    async fn hash_with_retries(&self, o: &Listed, tick: &Progress, gone: &std::sync::OnceLock<String>) -> HashOutcome {
        let mut retries = Vec::new();
        loop {
            if let Some(why) = gone.get() {
                let failure =
                    ReadFailure::NotChecked(format!("the store stopped answering before this object was read ({why})"));
                return HashOutcome::Failed { failure, retries };
            }
            match self.hash(o, tick.clone()).await {
                Ok(sha256) => return HashOutcome::Hashed { sha256, retries },
                Err(ReadFailure::Unreachable(why)) => {
                    let _ = gone.set(why.clone());
                    return HashOutcome::Failed { failure: ReadFailure::Unreachable(why), retries };
                }
                Err(f @ (ReadFailure::Other(_) | ReadFailure::Truncated { .. }))
                    if (retries.len() as u32) < RETRIES =>
                {
                    let wait = Duration::from_millis(200 << retries.len());
                    tracing::warn!("{}: {f}; retrying in {wait:?}", o.key);
                    retries.push(f.to_string());
                    tokio::time::sleep(wait).await;
                }
                Err(failure) => return HashOutcome::Failed { failure, retries },
            }
        }
    }
}

/// Objects up to this size are hashed inline as their chunks arrive.
const INLINE_HASH_MAX: u64 = 8 << 20;

/// Chunks queued between the receiving task and the hashing thread. A chunk
/// is what the HTTP client read (at most a few hundred KiB), so memory per
/// concurrent object stays at a few MiB whatever its size.
const STREAM_DEPTH: usize = 16;

/// Hash an object-store stream. Larger objects are hashed on a blocking
/// thread fed through a bounded queue: the receiving task keeps reading the
/// socket while a chunk is hashed, so the transfer never pauses for the hash
/// and the hashing hides behind it. Chunks are reference-counted, never copied.
async fn hash_stream(
    mut s: futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
    size: u64,
    progress: Progress,
) -> Result<(String, u64), ReadFailure> {
    let failed = |e: object_store::Error, got: u64| match classify(&e) {
        ReadFailure::Other(m) => ReadFailure::Other(format!("stream failed after {got} bytes: {m}")),
        other => other,
    };
    let mut acc = filehash::Hashing::new(move |k| progress(k));
    if size <= INLINE_HASH_MAX {
        while let Some(chunk) = s.next().await {
            acc.add(&chunk.map_err(|e| failed(e, acc.bytes()))?);
            if acc.bytes() > size {
                break; // longer than listed: a mismatch, whatever follows
            }
        }
        let h = acc.finish();
        return Ok((h.sha256, h.bytes));
    }
    let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(STREAM_DEPTH);
    let hasher = tokio::task::spawn_blocking(move || {
        while let Some(chunk) = rx.blocking_recv() {
            acc.add(&chunk);
        }
        let h = acc.finish();
        (h.sha256, h.bytes)
    });
    let mut got = 0u64;
    let mut error = None;
    while let Some(chunk) = s.next().await {
        match chunk {
            Ok(c) => {
                got += c.len() as u64;
                if tx.send(c).await.is_err() || got > size {
                    break;
                }
            }
            Err(e) => {
                error = Some(failed(e, got));
                break;
            }
        }
    }
    drop(tx);
    let hashed = hasher.await.map_err(|e| ReadFailure::Other(format!("hashing task failed: {e}")))?;
    match error {
        Some(e) => Err(e),
        None => Ok(hashed),
    }
}

/// What a walk of a `file:` store's folder finds (real folders walked,
/// symlinks not followed): the keys of regular files reached through real
/// folders only, and every entry that is not a folder.
struct LocalWalk {
    plain: std::collections::HashSet<String>,
    entries: Vec<Entry>,
}

/// One entry of the walk: its key (a name that is not UTF-8 is shown
/// losslessly, `text` false), where it is, what it is without following it.
struct Entry {
    key: String,
    path: PathBuf,
    file_type: std::fs::FileType,
    text: bool,
}

fn walk_local(dir: &Path) -> std::io::Result<LocalWalk> {
    let mut w = LocalWalk { plain: Default::default(), entries: Vec::new() };
    // (folder, its key prefix, whether every name on the way is UTF-8)
    let mut stack = vec![(dir.to_path_buf(), String::new(), true)];
    while let Some((folder, prefix, text)) = stack.pop() {
        for e in std::fs::read_dir(&folder)? {
            let e = e?;
            let raw = e.file_name();
            let name = match raw.to_str() {
                Some(s) => s.to_string(),
                None => crate::report::escape::path_name(Path::new(&raw)),
            };
            let text = text && raw.to_str().is_some();
            let key = format!("{prefix}{name}");
            let file_type = e.file_type()?;
            if file_type.is_dir() {
                stack.push((e.path(), format!("{key}/"), text));
                continue;
            }
            if text && file_type.is_file() {
                w.plain.insert(key.clone());
            }
            w.entries.push(Entry { key, path: e.path(), file_type, text });
        }
    }
    Ok(w)
}

/// The walk's entries whose key is not in `seen`, with what each is. A
/// name that is not UTF-8 is never a key the store listed (keys are text):
/// it is named losslessly and reported, never matched against a listed key
/// by a lossy name.
fn unlisted_entries(entries: Vec<Entry>, seen: &std::collections::HashSet<String>) -> std::io::Result<Vec<Refused>> {
    let mut found = Vec::new();
    for Entry { key, path, file_type: lt, text } in entries {
        if text && seen.contains(&key) {
            continue;
        }
        let why = match std::fs::metadata(&path) {
            _ if !text => {
                "a name that is not UTF-8 (its bytes shown as `\\xNN`), which no store key can name".to_string()
            }
            Err(_) if lt.is_symlink() => "a symlink to nothing".to_string(),
            Err(err) => format!("an entry that cannot be read ({err})"),
            // A symlinked folder: object_store follows it and lists (or
            // `escapes` refuses) what it holds.
            Ok(m) if m.is_dir() => continue,
            Ok(m) if m.is_file() => match key.rsplit_once('#') {
                Some((_, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
                    format!("a {}-byte file named as the store library marks an unfinished upload (`#{n}`), which it does not serve", m.len())
                }
                _ => format!("a {}-byte file the store library did not list", m.len()),
            },
            Ok(_) => "a FIFO, socket or device, not a file".to_string(),
        };
        found.push(Refused { key, why });
    }
    Ok(found)
}

fn env_with_prefix(prefix: &str) -> Vec<(String, String)> {
    std::env::vars().filter(|(k, _)| k.starts_with(prefix)).collect()
}

fn listed(rel: &str, m: &ObjectMeta) -> Listed {
    Listed {
        key: rel.to_string(),
        size: m.size,
        e_tag: m.e_tag.clone(),
        version: m.version.clone(),
        last_modified: m.last_modified.to_rfc3339(),
    }
}

/// Hash a local file (publish): bounded memory, the shared read loop.
fn hash_file(path: &std::path::Path) -> Result<(String, u64)> {
    let (f, meta) =
        crate::adapters::bundle_files::open_regular(path).with_context(|| format!("opening {}", path.display()))?;
    let len = meta.len();
    // Up to one block past the size it had when opened: a file still growing is read as far as that.
    let got = filehash::sha256_read(f, len, &|_| {}).with_context(|| format!("reading {}", path.display()))?;
    Ok((got.sha256, got.bytes))
}

/// Up to this size a file is uploaded in one conditional PUT; above it, in
/// parts of [`PART_SIZE`].
pub(crate) const SINGLE_PUT_MAX: u64 = 16 << 20;
const PART_SIZE: usize = 8 << 20;

impl Store {
    /// Upload the local file `path` as `key` (publish) and return the
    /// (sha256, size) that were uploaded. The file is hashed first, and the
    /// bytes sent are hashed again: a file that changes in between is an
    /// error, never a bundle recording bytes the store does not hold.
    /// Small files go in one PUT that refuses to overwrite; large ones as
    /// multipart with bounded buffers (the caller checks the prefix was empty).
    pub(crate) async fn upload_file(&self, key: &str, path: &Path) -> Result<(String, u64)> {
        use object_store::{PutMode, PutOptions, PutPayload};
        use tokio::io::AsyncReadExt;
        let (sha, size) = tokio::task::spawn_blocking({
            let path = path.to_path_buf();
            move || hash_file(&path)
        })
        .await??;
        let loc = self.object_path(key);
        let changed = || anyhow!("{} changed while publishing", path.display());
        if size <= SINGLE_PUT_MAX {
            // Bounded like every read: the file may have grown since it was hashed.
            let data =
                crate::adapters::bundle_files::read_bytes(path, SINGLE_PUT_MAX, "file to publish in one request")
                    .with_context(|| format!("reading {}", path.display()))?;
            if crate::util::sha256_hex(&data) != sha {
                return Err(changed());
            }
            self.inner
                .put_opts(&loc, PutPayload::from(data), PutOptions { mode: PutMode::Create, ..Default::default() })
                .await
                .map_err(|e| anyhow!("uploading `{key}`: {}", short_error(&e)))?;
            return Ok((sha, size));
        }
        let up = self
            .inner
            .put_multipart(&loc)
            .await
            .map_err(|e| anyhow!("starting upload of `{key}`: {}", short_error(&e)))?;
        let mut w = object_store::WriteMultipart::new_with_chunk_size(up, PART_SIZE);
        let mut f = tokio::fs::File::from_std(
            crate::adapters::bundle_files::open_regular(path).with_context(|| format!("opening {}", path.display()))?.0,
        );
        let mut sent = filehash::Hashing::new(|_| {});
        let mut buf = vec![0u8; READ_CHUNK];
        let read = loop {
            let n = match f.read(&mut buf).await {
                Ok(n) => n,
                Err(e) => break Err(anyhow::Error::new(e).context(format!("reading {}", path.display()))),
            };
            if n == 0 {
                break Ok(());
            }
            if sent.bytes().saturating_add(n as u64) > size {
                break Err(changed());
            }
            sent.add(&buf[..n]);
            if let Err(e) = w.wait_for_capacity(2).await {
                break Err(anyhow!("uploading `{key}`: {}", short_error(&e)));
            }
            w.write(&buf[..n]);
        };
        let sent = sent.finish();
        let read = read.and_then(|()| if sent.sha256 == sha && sent.bytes == size { Ok(()) } else { Err(changed()) });
        if let Err(e) = read {
            // Nothing half-uploaded is left to be found under the key.
            let _ = w.abort().await;
            return Err(e);
        }
        w.finish().await.map_err(|e| anyhow!("finishing upload of `{key}`: {}", short_error(&e)))?;
        Ok((sha, size))
    }
}

/// The longest key S3, GCS and Azure all hold (bytes of UTF-8).
const MAX_KEY_BYTES: usize = 1024;

/// Why the store cannot hold `seg` (one path segment) as it is, if it cannot.
fn unfaithful_segment(seg: &str) -> Option<String> {
    use object_store::path::PathPart;
    if seg.is_empty() || seg == "." || seg == ".." {
        return Some(format!("`{seg}` is not a file name"));
    }
    if PathPart::parse(seg).is_err() {
        return Some("it holds a control character".into());
    }
    // object_store percent-encodes these (and every non-ASCII byte, so two
    // names differing only by Unicode normalisation are refused here too).
    let stored = PathPart::from(seg);
    if stored.as_ref() != seg {
        return Some(format!("the store would hold `{seg}` as `{}` (percent-encoded)", stored.as_ref()));
    }
    if seg.ends_with('.') || seg.starts_with(char::is_whitespace) || seg.ends_with(char::is_whitespace) {
        return Some(format!(
            "`{seg}` starts or ends with whitespace or ends with a dot, which some stores and file systems drop"
        ));
    }
    None
}

/// The key a file at `rel` (relative to the folder to publish) is stored
/// under: `rel` itself, `/`-separated, when the store would list exactly
/// that name back, else why not. The one rule publish names files by, so
/// the bundle records the key the store holds and the pod finds.
pub(crate) fn publish_key(rel: &Path) -> Result<String, String> {
    let Some(key) = rel.to_str() else {
        return Err("its name is not UTF-8".into());
    };
    if crate::bundle::path_escapes(key) {
        return Err("not a plain relative path (`..`, `.`, an empty segment, `\\` or `:`)".into());
    }
    match key.split('/').find_map(unfaithful_segment) {
        Some(why) => Err(why),
        None => Ok(key.to_string()),
    }
}

/// What publish uploaded: (sha256, size) by key.
pub(crate) type Published = std::collections::BTreeMap<String, (String, u64)>;

impl Store {
    /// The keys of `files` (relative path, full path), or every name the
    /// store cannot hold as it is, refused together before anything is
    /// uploaded.
    pub(crate) fn publish_keys(&self, files: Vec<(PathBuf, PathBuf)>) -> Result<Vec<(String, PathBuf)>> {
        let mut out = Vec::new();
        let mut refused = Vec::new();
        for (rel, full) in files {
            match publish_key(&rel) {
                Ok(key) if self.object_path(&key).as_ref().len() > MAX_KEY_BYTES => {
                    refused.push(format!("{}: the key is over {MAX_KEY_BYTES} bytes", rel.display()))
                }
                Ok(key) => out.push((key, full)),
                Err(why) => refused.push(format!("{}: {why}", rel.display())),
            }
        }
        if !refused.is_empty() {
            bail!("refusing to publish {} file(s) whose names `{}` would not hold as they are (rename them; nothing was uploaded): {}", refused.len(), self.uri, refused.join("; "));
        }
        Ok(out)
    }

    /// Upload every (key, file), at most `jobs` at once, all or nothing:
    /// after the first failure nothing new starts, the uploads under way
    /// end (so nothing still writes), and every key written is deleted
    /// again ([`Store::undo_publish`]); on success every key is listed back
    /// with its size. The caller checked that the prefix was empty.
    pub(crate) async fn upload_all(self: &Arc<Self>, files: Vec<(String, PathBuf)>, jobs: usize) -> Result<Published> {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = Arc::new(AtomicBool::new(false));
        let sem = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        let mut set = tokio::task::JoinSet::new();
        for (key, path) in files {
            let (store, sem, stop) = (self.clone(), sem.clone(), stop.clone());
            set.spawn(async move {
                let _p = sem.acquire_owned().await;
                if stop.load(Ordering::SeqCst) {
                    return (key, None);
                }
                let r = store.upload_file(&key, &path).await;
                if r.is_err() {
                    stop.store(true, Ordering::SeqCst);
                }
                (key, Some(r))
            });
        }
        let mut published = Published::new();
        let mut started = Vec::new();
        let mut failed = None;
        while let Some(j) = set.join_next().await {
            match j {
                Ok((key, Some(Ok(v)))) => {
                    started.push(key.clone());
                    published.insert(key, v);
                }
                Ok((key, Some(Err(e)))) => {
                    started.push(key);
                    failed.get_or_insert(e);
                }
                Ok((_, None)) => {}
                Err(e) => {
                    failed.get_or_insert(anyhow!("upload task: {e}"));
                }
            }
        }
        let res = match failed {
            Some(e) => Err(e),
            None => self.check_listed(&published).await,
        };
        match res {
            Ok(()) => Ok(published),
            Err(e) => Err(self.undo_publish(&started, e).await),
        }
    }

    /// Publish proves its own upload: the prefix lists exactly the keys
    /// uploaded, each with the size sent.
    async fn check_listed(&self, published: &Published) -> Result<()> {
        let (listing, refused) = self.list_checked().await?;
        for (key, (_, size)) in published {
            match listing.iter().find(|o| &o.key == key) {
                Some(o) if o.size == *size => {}
                Some(o) => bail!("`{key}` is {} bytes in the store after upload, expected {size}", o.size),
                None => bail!("`{key}` is not listed after upload"),
            }
        }
        if let Some(other) =
            listing.iter().map(|o| &o.key).chain(refused.iter().map(|r| &r.key)).find(|k| !published.contains_key(*k))
        {
            bail!("`{}` holds `{other}`, which this publish did not upload", self.uri);
        }
        Ok(())
    }

    /// After a failed publish: delete every key it may have written (an
    /// upload that failed may still have landed), then list the prefix to
    /// prove it is empty, so the retry is not refused as "not empty". The
    /// error says what happened, and what is left when cleanup failed.
    pub(crate) async fn undo_publish(&self, keys: &[String], cause: anyhow::Error) -> anyhow::Error {
        let mut failures = Vec::new();
        for key in keys {
            match self.inner.delete(&self.object_path(key)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => failures.push(format!("`{key}`: {}", short_error(&e))),
            }
        }
        let note = match self.list_checked().await {
            Ok((left, refused)) if left.is_empty() && refused.is_empty() && failures.is_empty() => format!(
                "nothing was left under `{}` (what was written was deleted again); the publish can be retried",
                self.uri
            ),
            Ok((left, refused)) => {
                let names: Vec<String> =
                    left.iter().map(|o| o.key.clone()).chain(refused.into_iter().map(|r| r.key)).collect();
                format!(
                    "CLEANUP FAILED: `{}` still holds {} object(s) ({}){}; delete them before retrying",
                    self.uri,
                    names.len(),
                    names.join(", "),
                    if failures.is_empty() {
                        String::new()
                    } else {
                        format!("; deletes failed: {}", failures.join("; "))
                    }
                )
            }
            Err(e) => format!(
                "CLEANUP NOT CONFIRMED: listing `{}` after deleting failed ({e:#}){}",
                self.uri,
                if failures.is_empty() { String::new() } else { format!("; deletes failed: {}", failures.join("; ")) }
            ),
        };
        anyhow!("{cause:#}; {note}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};
    use std::sync::atomic::{AtomicU64, Ordering};

    fn stream(
        chunks: Vec<object_store::Result<bytes::Bytes>>,
    ) -> futures::stream::BoxStream<'static, object_store::Result<bytes::Bytes>> {
        Box::pin(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn inline_and_threaded_stream_hashing_agree_and_report_every_byte() {
        let data: Vec<u8> = (0..(INLINE_HASH_MAX as usize * 2 + 777)).map(|i| (i % 251) as u8).collect();
        for len in [0usize, 1000, INLINE_HASH_MAX as usize, data.len()] {
            let chunks = data[..len].chunks(300_000).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
            let seen = Arc::new(AtomicU64::new(0));
            let s2 = seen.clone();
            let (sha, n) = hash_stream(
                stream(chunks),
                len as u64,
                Arc::new(move |k| {
                    s2.fetch_add(k, Ordering::Relaxed);
                }),
            )
            .await
            .unwrap();
            assert_eq!((sha, n), (hex::encode(Sha256::digest(&data[..len])), len as u64), "len {len}");
            assert_eq!(seen.load(Ordering::Relaxed), len as u64);
        }
    }

    #[tokio::test]
    async fn a_stream_error_is_the_answer_even_after_chunks_were_queued() {
        for size in [1000u64, INLINE_HASH_MAX * 2] {
            let mut chunks: Vec<object_store::Result<bytes::Bytes>> = vec![Ok(bytes::Bytes::from(vec![1u8; 500]))];
            chunks.push(Err(object_store::Error::Generic { store: "test", source: "connection reset".into() }));
            let e = hash_stream(stream(chunks), size, Arc::new(|_| {})).await.unwrap_err();
            assert!(
                matches!(&e, ReadFailure::Other(m) if m.contains("stream failed after 500 bytes")),
                "{size}: {e:?}"
            );
        }
    }

    /// `prefix/` with bytes in it (S3 lists it; object_store drops its slash,
    /// so it never starts with `prefix/`) is named, not dropped; an empty
    /// folder marker holds nothing and is left out. A stand-in answers
    /// ListObjectsV2 as S3 does for such a bucket.
    #[tokio::test]
    async fn an_object_named_as_the_prefix_is_named_not_dropped() {
        use std::io::{BufRead, BufReader, Write};
        for (marker, named) in [(7u64, true), (0, false)] {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = listener.local_addr().unwrap().port();
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    let Ok(mut conn) = conn else { continue };
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 0) && !line.ends_with("\r\n\r\n") {}
                    let contents = |key: &str, size: u64| {
                        format!("<Contents><Key>{key}</Key><LastModified>2026-12-01T00:00:00.000Z</LastModified><ETag>&quot;e&quot;</ETag><Size>{size}</Size></Contents>")
                    };
                    let body = format!(
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>models</Name><Prefix>llm/v2/</Prefix><IsTruncated>false</IsTruncated>{}{}</ListBucketResult>",
                        contents("llm/v2/", marker),
                        contents("llm/v2/a.bin", 1)
                    );
                    let _ = write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
                }
            });
            let s3 = object_store::aws::AmazonS3Builder::new()
                .with_bucket_name("models")
                .with_region("us-east-1")
                .with_access_key_id("k")
                .with_secret_access_key("s")
                .with_endpoint(format!("http://127.0.0.1:{port}"))
                .with_allow_http(true)
                .build()
                .unwrap();
            let store = Store::from_parts(Arc::new(s3), "llm/v2", "s3://models/llm/v2/");
            let (listed, refused) = store.list_checked().await.unwrap();
            assert_eq!(listed.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), ["a.bin"]);
            let want: &[&str] = if named { &["llm/v2/"] } else { &[] };
            assert_eq!(refused.iter().map(|r| r.key.as_str()).collect::<Vec<_>>(), want, "{refused:?}");
        }
    }

    /// Names that are not UTF-8 are each reported under their own lossless
    /// name: `a\xff` and `a\xfe` are two entries, and neither hides behind
    /// a listed key that its lossy name (`a\u{fffd}`) would equal.
    #[test]
    fn names_that_are_not_utf8_are_each_named_never_matched_by_a_lossy_name() {
        use std::os::unix::ffi::OsStrExt;
        let d = tempfile::tempdir().unwrap();
        for n in [&b"a\xff"[..], b"a\xfe", "a\u{fffd}".as_bytes(), b"sub\xff"] {
            let p = d.path().join(std::ffi::OsStr::from_bytes(n));
            if n.starts_with(b"sub") {
                std::fs::create_dir(&p).unwrap();
                std::fs::write(p.join("x"), b"1").unwrap();
            } else {
                std::fs::write(&p, b"1").unwrap();
            }
        }
        let seen: std::collections::HashSet<String> = ["a\u{fffd}".to_string(), "sub\u{fffd}/x".to_string()].into();
        let walked = walk_local(d.path()).unwrap();
        // Only a plain file with a name that is text needs no resolving.
        assert_eq!(walked.plain, ["a\u{fffd}".to_string()].into(), "{:?}", walked.plain);
        let mut found = unlisted_entries(walked.entries, &seen).unwrap();
        found.sort_by(|a, b| a.key.cmp(&b.key));
        let keys: Vec<&str> = found.iter().map(|r| r.key.as_str()).collect();
        assert_eq!(keys, ["a\\xfe", "a\\xff", "sub\\xff/x"], "{found:?}");
        assert!(found.iter().all(|r| r.why.contains("not UTF-8")), "{found:?}");
    }

    #[test]
    fn publish_keys_are_the_names_the_store_lists_back() {
        use std::os::unix::ffi::OsStrExt;
        for ok in ["model-00001-of-00002.safetensors", "sub/dir/a b.json", "a+b=c@d.bin", ".hidden"] {
            let key = publish_key(Path::new(ok)).unwrap_or_else(|e| panic!("{ok}: {e}"));
            assert_eq!(key, ok);
            assert_eq!(OPath::parse(&key).unwrap().as_ref(), ok, "the store lists it back as it is");
        }
        let bad: Vec<(&[u8], &str)> = vec![
            (b"a%b", "percent-encoded"),
            (b"a#b", "as `a%23b`"),
            (b"x/../y", "not a plain relative path"),
            (b"x//y", "not a plain relative path"),
            (b"./y", "not a plain relative path"),
            (b"x.", "ends with a dot"),
            (b"x ", "whitespace"),
            (b" x", "whitespace"),
            (b"x\t", "control character"),
            (b"\xff.bin", "not UTF-8"),
            ("caf\u{e9}.txt".as_bytes(), "percent-encoded"),
            ("cafe\u{301}.txt".as_bytes(), "percent-encoded"),
            (b"a:b", "not a plain relative path"),
        ];
        for (name, why) in bad {
            let e = publish_key(Path::new(std::ffi::OsStr::from_bytes(name))).unwrap_err();
            assert!(e.contains(why), "{:?}: {e}", String::from_utf8_lossy(name));
        }
        let store = Store::from_parts(Arc::new(object_store::memory::InMemory::new()), "b/p", "s3://b/p/");
        let long = PathBuf::from("x".repeat(1100));
        let e = store
            .publish_keys(vec![
                (long.clone(), long),
                (PathBuf::from("a#b"), PathBuf::from("a#b")),
                (PathBuf::from("ok"), PathBuf::from("ok")),
            ])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("refusing to publish 2 file(s)")
                && e.contains("over 1024 bytes")
                && e.contains("a#b")
                && e.contains("nothing was uploaded"),
            "{e}"
        );
    }
}
