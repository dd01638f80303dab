//! Object stores through the `object_store` crate: list a versioned prefix,
//! hash objects pinned to the listed version, upload without overwriting.
//!
//! Credentials come only from the standard environment (AWS_*, GOOGLE_*,
//! AZURE_*) and are never formatted into messages: errors are re-described
//! from their kind and the object key.

use std::io::Read;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use futures::StreamExt;
use object_store::path::Path as OPath;
use object_store::{GetOptions, GetResultPayload, ObjectMeta, ObjectStore, ObjectStoreExt};
use sha2::{Digest, Sha256};
use url::Url;

/// Read size for hashing: large enough that per-call overhead vanishes next
/// to SHA-256 (1 MiB, like sigstore model-transparency), small enough that
/// `jobs` concurrent reads stay far below the 64 MiB memory budget.
pub const READ_CHUNK: usize = 1 << 20;

/// Called with the number of bytes just hashed (drives the progress bar).
pub type Progress = Arc<dyn Fn(u64) + Send + Sync>;

pub struct Store {
    pub inner: Arc<dyn ObjectStore>,
    /// The prefix inside the store (no trailing slash).
    pub prefix: OPath,
    /// The URI as given, for messages (never contains credentials).
    pub uri: String,
    pub local: bool,
}

/// One listed object, relative to the prefix.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    pub e_tag: Option<String>,
    pub version: Option<String>,
    pub last_modified: String,
}

/// Why an object could not be hashed. Each maps to a diagnostic; none is OK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// The object changed between listing and reading (ETag/version mismatch).
    Changed(String),
    NotFound,
    Denied(String),
    /// Fewer or more bytes than listed.
    Truncated { expected: u64, got: u64 },
    Other(String),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Changed(s) => write!(f, "changed while reading: {s}"),
            ReadFailure::NotFound => write!(f, "not found when read (deleted after listing?)"),
            ReadFailure::Denied(s) => write!(f, "access denied: {s}"),
            ReadFailure::Truncated { expected, got } => write!(f, "stream ended after {got} of {expected} bytes"),
            ReadFailure::Other(s) => write!(f, "{s}"),
        }
    }
}

fn classify(e: &object_store::Error) -> ReadFailure {
    use object_store::Error as E;
    match e {
        E::NotFound { .. } => ReadFailure::NotFound,
        E::Precondition { .. } | E::NotModified { .. } => ReadFailure::Changed("the store's ETag no longer matches the listed one".into()),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => ReadFailure::Denied(short_error(e)),
        _ => ReadFailure::Other(short_error(e)),
    }
}

/// An error chain on one line, with credentials (URL userinfo, presigned
/// parameters) cut out by the one redaction rule.
pub fn short_error(e: &dyn std::error::Error) -> String {
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

impl Store {
    /// Open a store from a bundle's resolved URI (`file:///abs`, `s3://`,
    /// `gs://`, `az://`, `memory:///` for tests).
    pub fn open(uri: &str) -> Result<Store> {
        let url = Url::parse(uri).with_context(|| format!("storage URI `{uri}` is not a URL"))?;
        let retry = object_store::RetryConfig {
            backoff: object_store::BackoffConfig { init_backoff: Duration::from_millis(100), max_backoff: Duration::from_secs(5), base: 2.0 },
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
                let leaf = path.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
                if !root.exists() {
                    bail!("local store folder {} does not exist", root.display());
                }
                let fs = object_store::local::LocalFileSystem::new_with_prefix(&root)
                    .with_context(|| format!("opening local store {}", root.display()))?;
                (Arc::new(fs), OPath::from(leaf), true)
            }
            "memory" => (Arc::new(object_store::memory::InMemory::new()), OPath::from(url.path().trim_matches('/')), false),
            "s3" | "s3a" => {
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
                let mut b = object_store::gcp::GoogleCloudStorageBuilder::new().with_client_options(client).with_retry(retry);
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
            "az" | "abfs" | "abfss" | "azure" => {
                let mut b = object_store::azure::MicrosoftAzureBuilder::new().with_client_options(client).with_retry(retry);
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
        Ok(Store { inner, prefix, uri: uri.to_string(), local })
    }

    /// Wrap an existing store (tests: InMemory).
    pub fn from_parts(inner: Arc<dyn ObjectStore>, prefix: &str, uri: &str) -> Store {
        Store { inner, prefix: OPath::from(prefix.trim_matches('/')), uri: uri.to_string(), local: false }
    }

    pub fn object_path(&self, key: &str) -> OPath {
        let mut p = self.prefix.clone();
        for seg in key.split('/') {
            p = p.clone().join(seg);
        }
        p
    }

    /// List every object under the prefix, keys relative to it. Sibling
    /// prefixes (`v1` vs `v10`) are excluded: listing is by path segment and
    /// we re-check every key starts with `prefix/`.
    pub async fn list(&self) -> Result<Vec<Listed>> {
        let mut out = Vec::new();
        let want = format!("{}/", self.prefix);
        let mut s = self.inner.list(Some(&self.prefix));
        while let Some(item) = s.next().await {
            let m = item.map_err(|e| anyhow!("listing {}: {}", self.uri, short_error(&e)))?;
            let full = m.location.to_string();
            let Some(rel) = full.strip_prefix(&want) else { continue };
            if rel.is_empty() || rel.ends_with('/') {
                continue;
            }
            out.push(listed(rel, &m));
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    /// Stream the object and hash it, pinned to the listed identity. Memory
    /// stays at one chunk per concurrent read whatever the object size.
    pub async fn hash(&self, obj: &Listed, progress: Progress) -> Result<String, ReadFailure> {
        let opts = GetOptions { if_match: obj.e_tag.clone(), version: obj.version.clone(), ..Default::default() };
        let res = self.inner.get_opts(&self.object_path(&obj.key), opts).await.map_err(|e| classify(&e))?;
        if res.meta.size != obj.size {
            return Err(ReadFailure::Changed(format!("size is now {} (listed {})", res.meta.size, obj.size)));
        }
        let mut hasher = Sha256::new();
        let mut got = 0u64;
        match res.payload {
            GetResultPayload::File(mut file, path) => {
                // Local files: read with a large buffer on a blocking thread;
                // object_store's own stream uses 8 KiB reads.
                let expected = obj.size;
                let progress = progress.clone();
                let (h, n) = tokio::task::spawn_blocking(move || -> Result<(Sha256, u64), ReadFailure> {
                    let mut buf = vec![0u8; READ_CHUNK];
                    let mut n = 0u64;
                    loop {
                        let r = file.read(&mut buf).map_err(|e| ReadFailure::Other(format!("{}: {e}", path.display())))?;
                        if r == 0 {
                            break;
                        }
                        hasher.update(&buf[..r]);
                        n += r as u64;
                        progress(r as u64);
                        if n > expected {
                            break;
                        }
                    }
                    Ok((hasher, n))
                })
                .await
                .map_err(|e| ReadFailure::Other(format!("hashing task failed: {e}")))??;
                hasher = h;
                got = n;
            }
            GetResultPayload::Stream(mut s) => {
                while let Some(chunk) = s.next().await {
                    let chunk = chunk.map_err(|e| match classify(&e) {
                        ReadFailure::Other(m) => ReadFailure::Other(format!("stream failed after {got} bytes: {m}")),
                        other => other,
                    })?;
                    hasher.update(&chunk);
                    got += chunk.len() as u64;
                    progress(chunk.len() as u64);
                }
            }
        }
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
        Ok(hex::encode(hasher.finalize()))
    }
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

/// Hash a local file (publish): bounded memory, 1 MiB reads.
pub fn hash_file(path: &std::path::Path) -> Result<(String, u64)> {
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut buf = vec![0u8; READ_CHUNK];
    let mut h = Sha256::new();
    let mut n = 0u64;
    loop {
        let r = f.read(&mut buf).with_context(|| format!("reading {}", path.display()))?;
        if r == 0 {
            break;
        }
        h.update(&buf[..r]);
        n += r as u64;
    }
    Ok((hex::encode(h.finalize()), n))
}
