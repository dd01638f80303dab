//! OCI registries (the distribution API): a manifest fetched by its digest
//! (bounded, hashed to that digest before anyone parses it), a blob's
//! `HEAD` (present, and its size), a blob streamed through sha256.
//!
//! oci-client answers the registry's challenge (`WWW-Authenticate`: Bearer
//! through the token service, else Basic); the requests themselves go
//! through one reqwest client with that authorization so every answer is
//! read within a bound and every request within a time limit, which
//! oci-client's own calls do not offer. Credentials are never formatted
//! into a message: a 401/403 says where they came from and that they were
//! missing or refused.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::secrets::RegistryAuth;
use oci_client::{Reference, RegistryOperation};
use reqwest::StatusCode;
use sha2::Digest;

use crate::adapters::env::OciEnv;
use crate::bundle::storage_uri::OciRef;
use crate::checks::verify::oci::{Entry, EntryKind, Form, IMAGE_MANIFEST, MAX_LAYER_ENTRIES, MAX_MANIFEST_BYTES};
use crate::checks::verify::ReadFailure;
use crate::parse::oci::DockerAuth;

/// A 401 or 403: credentials missing or refused (by number: the layout
/// test takes a status constant's path for a diagnostic code).
fn refused_status(s: StatusCode) -> bool {
    matches!(s.as_u16(), 401 | 403)
}

/// What a tag is asked for with: every kind of manifest, so a tag holding
/// an index or a Docker manifest is seen as taken.
const ANY_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json";

/// Bound on each request (manifest, HEAD, the token dance).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bound on the wait for each chunk of a streamed blob: a registry that
/// stops sending is an error, however large the blob.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);

/// The credentials found for one registry (where they came from is said
/// apart, for messages).
struct Creds {
    username: String,
    password: String,
}

/// One repository of one registry, authorized once.
pub(crate) struct Registry {
    oci: oci_client::Client,
    http: reqwest::Client,
    reference: Reference,
    auth: RegistryAuth,
    /// `scheme://host/v2/<repository>`.
    base: String,
    /// Where the credentials came from, or why there were none: the words
    /// of a 401/403.
    creds_said: String,
    authorization: tokio::sync::OnceCell<Option<String>>,
    /// Authorized to push (publish), not only to pull.
    push: bool,
}

/// Who answered for the registry, in words for a refusal.
fn credentials(env: &OciEnv, registry: &str) -> Result<(Option<Creds>, String)> {
    if let Some(u) = &env.username {
        let Some(p) = &env.password else {
            bail!("BUNDLEGATE_OCI_USERNAME is set but BUNDLEGATE_OCI_PASSWORD is not: set both, or neither to use the Docker config");
        };
        let source = "BUNDLEGATE_OCI_USERNAME/BUNDLEGATE_OCI_PASSWORD".to_string();
        return Ok((Some(Creds { username: u.clone(), password: p.0.clone() }), source));
    }
    let Some((path, text)) = &env.docker_config else {
        return Ok((None, "no credentials were given (set BUNDLEGATE_OCI_USERNAME and BUNDLEGATE_OCI_PASSWORD, or `docker login` into the Docker config)".into()));
    };
    let text = text.as_ref().map_err(|e| anyhow!("reading the Docker config {}: {e}", path.display()))?;
    let found = crate::parse::oci::docker_auth(&text.0, registry)
        .with_context(|| format!("the Docker config {}", path.display()))?;
    Ok(match found {
        DockerAuth::Basic { username, password } => {
            let source = format!("the Docker config {} (`auths`)", path.display());
            (Some(Creds { username, password }), source)
        }
        DockerAuth::Helper(h) => (None, format!("the Docker config {} names the credential helper `{h}` for {registry}, and bundlegate does not run credential helpers: set BUNDLEGATE_OCI_USERNAME and BUNDLEGATE_OCI_PASSWORD", path.display())),
        DockerAuth::None => (None, format!("the Docker config {} has no `auths` entry for {registry}", path.display())),
    })
}

impl Registry {
    /// The repository `r` names, spoken to over HTTPS (certificates
    /// checked) unless its `host:port` is in BUNDLEGATE_OCI_INSECURE_REGISTRIES.
    pub(crate) fn open(env: &OciEnv, r: &OciRef) -> Result<Registry> {
        let (creds, creds_said) = credentials(env, &r.registry)?;
        let reference: Reference = format!("{}/{}", r.registry, r.repository)
            .parse()
            .with_context(|| format!("`{}/{}` is not an OCI reference", r.registry, r.repository))?;
        let host = reference.resolve_registry().to_string();
        let insecure = env.insecure.iter().any(|h| *h == r.registry || *h == host);
        let config = ClientConfig {
            protocol: ClientProtocol::HttpsExcept(env.insecure.clone()),
            read_timeout: Some(REQUEST_TIMEOUT),
            connect_timeout: Some(CONNECT_TIMEOUT),
            // An index is not followed to "this machine's platform": a model
            // is pinned by one manifest.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        let oci = oci_client::Client::try_from(config).context("building the OCI registry client")?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(REQUEST_TIMEOUT)
            .build()
            .context("building the HTTP client for the registry")?;
        let auth = match &creds {
            Some(c) => RegistryAuth::Basic(c.username.clone(), c.password.clone()),
            None => RegistryAuth::Anonymous,
        };
        let scheme = if insecure { "http" } else { "https" };
        Ok(Registry {
            oci,
            http,
            base: format!("{scheme}://{host}/v2/{}", reference.repository()),
            reference,
            auth,
            creds_said,
            authorization: tokio::sync::OnceCell::new(),
            push: false,
        })
    }

    /// The repository, authorized to push as well as pull (publish).
    pub(crate) fn open_for_push(env: &OciEnv, r: &OciRef) -> Result<Registry> {
        Ok(Registry { push: true, ..Registry::open(env, r)? })
    }

    /// The `Authorization` value, found once: a bearer token through the
    /// challenge, else Basic with the credentials, else none.
    async fn authorization(&self) -> Result<Option<String>> {
        self.authorization
            .get_or_try_init(|| async {
                let answer = tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    self.oci.auth(
                        &self.reference,
                        &self.auth,
                        if self.push { RegistryOperation::Push } else { RegistryOperation::Pull },
                    ),
                )
                .await
                .map_err(|_| {
                    anyhow!("{}: no answer to the authorization request within {REQUEST_TIMEOUT:?}", self.base)
                })?;
                match answer {
                    Ok(Some(token)) => Ok(Some(format!("Bearer {token}"))),
                    Ok(None) => Ok(match &self.auth {
                        RegistryAuth::Basic(u, p) => {
                            use base64::Engine;
                            Some(format!(
                                "Basic {}",
                                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
                            ))
                        }
                        _ => None,
                    }),
                    Err(oci_client::errors::OciDistributionError::AuthenticationFailure(_)) => {
                        bail!(
                            "{}: the registry's token service refused the credentials: {}",
                            self.base,
                            self.creds_said
                        )
                    }
                    Err(e) => Err(anyhow!("{}: {}", self.base, crate::adapters::store::short_error(&e))),
                }
            })
            .await
            .cloned()
    }

    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, reqwest::Error> {
        let req = req.timeout(REQUEST_TIMEOUT);
        let req = match self.authorization.get().cloned().flatten() {
            Some(a) => req.header(reqwest::header::AUTHORIZATION, a),
            None => req,
        };
        req.send().await
    }

    /// The words of a 401/403.
    fn refused(&self, status: StatusCode, what: &str) -> String {
        format!("{what}: the registry answered {status}: credentials missing or refused ({})", self.creds_said)
    }

    /// The manifest `digest` names, its bytes checked to hash to it; `None`
    /// when the registry has no such manifest (404). At most
    /// [`MAX_MANIFEST_BYTES`]; any other failure is the tool not finishing.
    pub(crate) async fn manifest(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        // Every kind accepted: by digest the registry must answer these very
        // bytes, not one it picks for the Accept header; the parser refuses
        // what is not an image manifest, in words.
        let Some(body) = self.get_manifest(digest, ANY_MANIFEST).await? else {
            return Ok(None);
        };
        let got = sha256_of(&body);
        if got != digest {
            bail!(
                "{}/manifests/{digest}: the registry's bytes hash to {got}, not the pinned {digest}: not read",
                self.base
            );
        }
        Ok(Some(body))
    }

    /// The digest of the manifest `tag` names now (its bytes hashed, of
    /// whatever media type), or `None` when the tag names nothing.
    pub(crate) async fn tag_digest(&self, tag: &str) -> Result<Option<String>> {
        Ok(self.get_manifest(tag, ANY_MANIFEST).await?.map(|b| sha256_of(&b)))
    }

    /// The bytes of the manifest `reference` (a digest or a tag) names, read
    /// within [`MAX_MANIFEST_BYTES`] and [`REQUEST_TIMEOUT`]; `None` on 404.
    async fn get_manifest(&self, reference: &str, accept: &str) -> Result<Option<Vec<u8>>> {
        let url = format!("{}/manifests/{reference}", self.base);
        self.authorization().await?;
        let read = async {
            let mut resp = self
                .send(self.http.get(&url).header(reqwest::header::ACCEPT, accept))
                .await
                .map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?;
            let status = resp.status();
            if refused_status(status) {
                bail!("{}", self.refused(status, &url));
            }
            if status.as_u16() == 404 {
                return Ok(None);
            }
            if !status.is_success() {
                bail!("{url}: the registry answered {status}");
            }
            let mut body = Vec::new();
            while let Some(chunk) =
                resp.chunk().await.map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?
            {
                if body.len() + chunk.len() > MAX_MANIFEST_BYTES {
                    bail!("{url}: the manifest is over the limit of {MAX_MANIFEST_BYTES} bytes: not read further");
                }
                body.extend_from_slice(&chunk);
            }
            Ok(Some(body))
        };
        tokio::time::timeout(REQUEST_TIMEOUT, read)
            .await
            .map_err(|_| anyhow!("{url}: no whole answer within {REQUEST_TIMEOUT:?}"))?
    }

    /// `HEAD` of a blob: its size when present. A registry that does not
    /// answer is `Unreachable` (BG109), never present.
    pub(crate) async fn head_blob(&self, digest: &str) -> Result<u64, ReadFailure> {
        let url = format!("{}/blobs/{digest}", self.base);
        self.authorization().await.map_err(|e| ReadFailure::Unreachable(format!("{e:#}")))?;
        let resp = self.send(self.http.head(&url)).await.map_err(|e| transport(&url, &e))?;
        let status = resp.status();
        match status {
            s if s.is_success() => resp
                .headers()
                .get(reqwest::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| ReadFailure::Other(format!("{url}: the registry gave no Content-Length for the blob"))),
            // The judgment makes it MISSING and says why.
            s if s.as_u16() == 404 => Err(ReadFailure::NotFound),
            s if refused_status(s) => Err(ReadFailure::Denied(self.refused(status, &url))),
            s => Err(ReadFailure::Other(format!("{url}: the registry answered {s}"))),
        }
    }

    /// A blob's `GET`, answered 2xx, or why not. No whole-request timeout:
    /// a large blob takes its time; each chunk is bounded instead
    /// ([`next_chunk`]).
    async fn open_blob(&self, digest: &str) -> Result<(String, reqwest::Response), ReadFailure> {
        let url = format!("{}/blobs/{digest}", self.base);
        self.authorization().await.map_err(|e| ReadFailure::Unreachable(format!("{e:#}")))?;
        let req = self.http.get(&url);
        let req = match self.authorization.get().cloned().flatten() {
            Some(a) => req.header(reqwest::header::AUTHORIZATION, a),
            None => req,
        };
        let resp = req.send().await.map_err(|e| transport(&url, &e))?;
        let status = resp.status();
        if refused_status(status) {
            return Err(ReadFailure::Denied(self.refused(status, &url)));
        }
        if status.as_u16() == 404 {
            return Err(ReadFailure::NotFound);
        }
        if !status.is_success() {
            return Err(ReadFailure::Other(format!("{url}: the registry answered {status}")));
        }
        Ok((url, resp))
    }

    /// Stream a blob through sha256, at most `size` bytes (the manifest's):
    /// the hex digest of what came (`--deep`).
    pub(crate) async fn hash_blob(&self, digest: &str, size: u64) -> Result<String, ReadFailure> {
        let (url, mut resp) = self.open_blob(digest).await?;
        let mut h = sha2::Sha256::new();
        let mut got = 0u64;
        while let Some(chunk) = next_chunk(&url, &mut resp, &mut got, size).await? {
            h.update(&chunk);
        }
        Ok(hex::encode(h.finalize()))
    }

    /// Stream an archive layer (tar, tar+gzip, tar+zstd), decompress and
    /// walk it, hashing each regular file `keep` wants as it goes by: the
    /// entries, in order. Memory stays bounded: a few chunks in flight, one
    /// read buffer, one entry per kept path (at most
    /// [`MAX_LAYER_ENTRIES`]). The layer's own bytes must hash to `digest`
    /// and be `size` long, or the walk is a read failure.
    pub(crate) async fn walk_layer(
        &self,
        digest: &str,
        size: u64,
        form: Form,
        keep: impl Fn(&str) -> bool + Send + 'static,
    ) -> Result<Vec<Entry>, ReadFailure> {
        let (url, mut resp) = self.open_blob(digest).await.map_err(|e| match e {
            ReadFailure::NotFound => ReadFailure::Other(format!(
                "its layer {digest} is listed in the manifest but the registry does not have it (404)"
            )),
            e => e,
        })?;
        let (tx, rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(8);
        let walker = tokio::task::spawn_blocking(move || {
            let mut r = ChannelReader { rx, chunk: bytes::Bytes::new(), hash: sha2::Sha256::new() };
            let entries = walk_archive(&mut r, &form, &keep);
            // Whatever the archive did not consume still counts for the digest.
            let rest = std::io::copy(&mut r, &mut std::io::sink());
            (entries, rest.map(|_| hex::encode(r.hash.finalize())))
        });
        let mut got = 0u64;
        let pumped = async {
            while let Some(chunk) = next_chunk(&url, &mut resp, &mut got, size).await? {
                if tx.send(chunk).await.is_err() {
                    break;
                }
            }
            Ok::<(), ReadFailure>(())
        }
        .await;
        drop(tx);
        let (entries, hashed) =
            walker.await.map_err(|e| ReadFailure::Other(format!("{url}: the archive walk failed: {e}")))?;
        pumped?;
        let entries =
            entries.map_err(|e| ReadFailure::Other(format!("layer {digest} is not a readable archive: {e}")))?;
        let hex = hashed.map_err(|e| ReadFailure::Other(format!("{url}: {e}")))?;
        if format!("sha256:{hex}") != digest {
            return Err(ReadFailure::Other(format!(
                "the registry's bytes for layer {digest} hash to sha256:{hex}: not the layer the manifest names"
            )));
        }
        Ok(entries)
    }
}

/// Publishing: blobs uploaded (a file streamed from disk, never held in
/// memory whole), then the manifest.
impl Registry {
    /// The request with the authorization found once.
    fn authorized(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match self.authorization.get().cloned().flatten() {
            Some(a) => req.header(reqwest::header::AUTHORIZATION, a),
            None => req,
        }
    }

    /// Why a write was not accepted: the status and the start of the
    /// registry's error body (its code, e.g. `DIGEST_INVALID`).
    async fn write_refused(&self, what: &str, resp: reqwest::Response) -> anyhow::Error {
        let status = resp.status();
        if refused_status(status) {
            return anyhow!("{}", self.refused(status, what));
        }
        let body = crate::adapters::http::text_prefix(resp, 1024).await;
        anyhow!("{what}: the registry answered {status}: {}", body.trim())
    }

    /// Whether the repository holds the blob `digest` already.
    pub(crate) async fn has_blob(&self, digest: &str) -> Result<bool> {
        let url = format!("{}/blobs/{digest}", self.base);
        self.authorization().await?;
        let resp = self
            .send(self.http.head(&url))
            .await
            .map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            s if s.as_u16() == 404 => Ok(false),
            _ => Err(self.write_refused(&url, resp).await),
        }
    }

    /// Start an upload: the URL its bytes go to.
    async fn upload_location(&self) -> Result<reqwest::Url> {
        let url = format!("{}/blobs/uploads/", self.base);
        self.authorization().await?;
        let resp = self
            .send(self.http.post(&url).header(reqwest::header::CONTENT_LENGTH, 0))
            .await
            .map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?;
        if !resp.status().is_success() {
            return Err(self.write_refused(&url, resp).await);
        }
        let loc = resp
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .with_context(|| format!("{url}: the registry started an upload but gave no Location"))?;
        // A relative Location is relative to the request.
        resp.url().join(loc).with_context(|| format!("{url}: the upload Location `{loc}` is not a URL"))
    }

    /// Upload one blob in one PUT: `body` is `size` bytes hashing to
    /// `digest` (the registry checks it and refuses other bytes). No
    /// whole-request timeout (a large file takes its time); the client's
    /// read timeout bounds each wait.
    async fn put_blob(&self, digest: &str, size: u64, body: reqwest::Body) -> Result<()> {
        let mut url = self.upload_location().await?;
        url.query_pairs_mut().append_pair("digest", digest);
        let what = format!("{}/blobs/{digest}", self.base);
        let req = self
            .http
            .put(url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .header(reqwest::header::CONTENT_LENGTH, size)
            .body(body);
        let resp = self
            .authorized(req)
            .send()
            .await
            .map_err(|e| anyhow!("uploading {what}: {}", crate::adapters::store::short_error(&e)))?;
        if !resp.status().is_success() {
            return Err(self.write_refused(&format!("uploading {what}"), resp).await);
        }
        Ok(())
    }

    /// Upload a small blob held in memory (a config).
    pub(crate) async fn put_blob_bytes(&self, digest: &str, bytes: Vec<u8>) -> Result<()> {
        let size = bytes.len() as u64;
        self.put_blob(digest, size, reqwest::Body::from(bytes)).await
    }

    /// Upload the file at `path`, streamed from disk in 1 MiB reads.
    pub(crate) async fn put_blob_file(&self, digest: &str, size: u64, path: &std::path::Path) -> Result<()> {
        use tokio::io::AsyncReadExt;
        let file = tokio::fs::File::open(path).await.with_context(|| format!("opening {}", path.display()))?;
        let chunks = futures::stream::unfold(Some(file), |f| async move {
            let mut f = f?;
            let mut buf = vec![0u8; 1 << 20];
            match f.read(&mut buf).await {
                Ok(0) => None,
                Ok(n) => {
                    buf.truncate(n);
                    Some((Ok(bytes::Bytes::from(buf)), Some(f)))
                }
                Err(e) => Some((Err(e), None)),
            }
        });
        self.put_blob(digest, size, reqwest::Body::wrap_stream(chunks))
            .await
            .with_context(|| format!("publishing {}", path.display()))
    }

    /// Store `bytes` (an image manifest) under `reference`: a tag, or its
    /// own digest.
    pub(crate) async fn put_manifest(&self, reference: &str, bytes: Vec<u8>) -> Result<()> {
        let url = format!("{}/manifests/{reference}", self.base);
        self.authorization().await?;
        let req = self.http.put(&url).header(reqwest::header::CONTENT_TYPE, IMAGE_MANIFEST).body(bytes);
        let resp = self.send(req).await.map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?;
        if !resp.status().is_success() {
            return Err(self.write_refused(&url, resp).await);
        }
        Ok(())
    }
}

/// A local file's sha256 and size, read once through the project's hasher
/// (publish names each layer by it before anything is uploaded).
pub(crate) async fn hash_file(path: &std::path::Path) -> Result<(String, u64)> {
    let p = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let f = std::fs::File::open(&p).with_context(|| format!("opening {}", p.display()))?;
        let size = f.metadata().with_context(|| format!("reading {}", p.display()))?.len();
        let h = crate::adapters::filehash::sha256_read(f, size, &|_| {})
            .with_context(|| format!("reading {}", p.display()))?;
        if h.bytes != size {
            bail!("{} changed size while it was read ({size} bytes, then {})", p.display(), h.bytes);
        }
        Ok((h.sha256, size))
    })
    .await
    .context("hashing a file to publish")?
}

/// `sha256:<hex>` of `bytes`.
fn sha256_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(sha2::Sha256::digest(bytes)))
}

/// A transport error's words, and whether the registry is gone.
fn transport(url: &str, e: &reqwest::Error) -> ReadFailure {
    let why = format!("{url}: {}", crate::adapters::store::short_error(e));
    if e.is_connect() || e.is_timeout() {
        ReadFailure::Unreachable(why)
    } else {
        ReadFailure::Other(why)
    }
}

/// The next chunk of a blob, each waited for at most [`CHUNK_TIMEOUT`]:
/// more than `size` bytes in all, or fewer when it ends, is `Truncated`; a
/// registry that stops sending or drops the connection is `Unreachable`.
async fn next_chunk(
    url: &str,
    resp: &mut reqwest::Response,
    got: &mut u64,
    size: u64,
) -> Result<Option<bytes::Bytes>, ReadFailure> {
    let chunk = tokio::time::timeout(CHUNK_TIMEOUT, resp.chunk())
        .await
        .map_err(|_| ReadFailure::Unreachable(format!("{url}: no bytes for {CHUNK_TIMEOUT:?}")))?
        .map_err(|e| {
            ReadFailure::Unreachable(format!(
                "{url}: the registry stopped sending after {got} of {size} bytes: {}",
                crate::adapters::store::short_error(&e)
            ))
        })?;
    match chunk {
        Some(c) => {
            *got += c.len() as u64;
            if *got > size {
                return Err(ReadFailure::Truncated { expected: size, got: *got });
            }
            Ok(Some(c))
        }
        None if *got != size => Err(ReadFailure::Truncated { expected: size, got: *got }),
        None => Ok(None),
    }
}

/// The blob's chunks as a `Read`, hashing every byte that passes.
struct ChannelReader {
    rx: tokio::sync::mpsc::Receiver<bytes::Bytes>,
    chunk: bytes::Bytes,
    hash: sha2::Sha256,
}

impl std::io::Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                Some(c) => self.chunk = c,
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.chunk.len());
        let part = self.chunk.split_to(n);
        self.hash.update(&part);
        buf[..n].copy_from_slice(&part);
        Ok(n)
    }
}

/// Decompress and walk one archive: each entry `keep` wants (by its
/// normalized path), regular files hashed. Nothing is written anywhere.
fn walk_archive(r: &mut impl std::io::Read, form: &Form, keep: &dyn Fn(&str) -> bool) -> std::io::Result<Vec<Entry>> {
    let decoded: Box<dyn std::io::Read + '_> = match form {
        Form::Tar => Box::new(r),
        Form::TarGzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
        Form::TarZstd => Box::new(zstd::stream::read::Decoder::new(r)?),
        Form::Raw | Form::Other(_) => return Err(std::io::Error::other("not an archive layer")),
    };
    let mut archive = tar::Archive::new(decoded);
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 20];
    for entry in archive.entries()? {
        let mut entry = entry?;
        let raw = entry.path_bytes().into_owned();
        let path = String::from_utf8_lossy(&raw).into_owned();
        if !keep(crate::checks::verify::oci::entry_path(&path)) {
            continue;
        }
        if out.len() >= MAX_LAYER_ENTRIES {
            return Err(std::io::Error::other(format!("more than {MAX_LAYER_ENTRIES} entries in the model's folder")));
        }
        use tar::EntryType as T;
        let t = entry.header().entry_type();
        let kind = match t {
            T::Regular | T::Continuous | T::GNUSparse => {
                let mut h = sha2::Sha256::new();
                let mut size = 0u64;
                loop {
                    let n = std::io::Read::read(&mut entry, &mut buf)?;
                    if n == 0 {
                        break;
                    }
                    size += n as u64;
                    h.update(&buf[..n]);
                }
                EntryKind::File { size, sha256: hex::encode(h.finalize()) }
            }
            T::Directory => EntryKind::Dir,
            T::Symlink | T::Link => {
                let target = entry.link_name_bytes().map(|b| String::from_utf8_lossy(&b).into_owned());
                EntryKind::Link { hard: t == T::Link, target: target.unwrap_or_default() }
            }
            T::Char => EntryKind::Special("a character device".into()),
            T::Block => EntryKind::Special("a block device".into()),
            T::Fifo => EntryKind::Special("a FIFO".into()),
            other => EntryKind::Special(format!("a tar entry of type {:?}", other.as_byte() as char)),
        };
        if std::str::from_utf8(&raw).is_err() {
            out.push(Entry { path, kind: EntryKind::Special("a name that is not UTF-8".into()) });
            continue;
        }
        out.push(Entry { path, kind });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry_at(base: &str) -> Registry {
        let host = base.trim_start_matches("http://").trim_end_matches('/').to_string();
        let env = OciEnv { insecure: vec![host.clone()], ..OciEnv::default() };
        let r = OciRef { registry: host, repository: "m".into(), tag: None, digest: None };
        Registry::open(&env, &r).unwrap()
    }

    /// The manifest is read within its bound and only when its bytes hash
    /// to the pinned digest; a blob streams through sha256 within its size.
    #[tokio::test]
    async fn manifests_are_bounded_and_hashed_blobs_stream_within_their_size() {
        let body = std::sync::Arc::new(b"{\"schemaVersion\": 2}".to_vec());
        let digest = format!("sha256:{}", hex::encode(sha2::Sha256::digest(body.as_slice())));
        let reg = registry_at(&crate::adapters::http::serve_fixed("application/json", body.clone()).await);
        assert_eq!(reg.manifest(&digest).await.unwrap().unwrap(), *body);
        let other = format!("sha256:{}", "0".repeat(64));
        assert!(reg.manifest(&other).await.unwrap_err().to_string().contains("not the pinned"));
        assert_eq!(reg.hash_blob(&digest, body.len() as u64).await.unwrap(), digest["sha256:".len()..]);
        assert!(matches!(reg.hash_blob(&digest, 3).await, Err(ReadFailure::Truncated { expected: 3, .. })));
        assert_eq!(reg.head_blob(&digest).await.unwrap(), body.len() as u64);
        let big = std::sync::Arc::new(vec![b' '; MAX_MANIFEST_BYTES + 10]);
        let reg = registry_at(&crate::adapters::http::serve_fixed("application/json", big).await);
        assert!(reg.manifest(&digest).await.unwrap_err().to_string().contains("over the limit"));
    }

    #[test]
    fn env_credentials_win_and_a_helper_is_named_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = r#"{"credHelpers": {"r.io": "ecr-login"}}"#;
        let env = OciEnv {
            docker_config: Some((dir.path().join("config.json"), Ok(crate::adapters::env::Secret(cfg.into())))),
            ..OciEnv::default()
        };
        let (c, said) = credentials(&env, "r.io").unwrap();
        assert!(
            c.is_none() && said.contains("ecr-login") && said.contains("does not run credential helpers"),
            "{said}"
        );
        let env = OciEnv {
            username: Some("u".into()),
            password: Some(crate::adapters::env::Secret("hunter2".into())),
            ..env
        };
        let (c, said) = credentials(&env, "r.io").unwrap();
        assert_eq!(c.unwrap().username, "u");
        assert!(!said.contains("hunter2"));
        let env = OciEnv { password: None, ..env };
        assert!(credentials(&env, "r.io").err().unwrap().to_string().contains("BUNDLEGATE_OCI_PASSWORD is not"));
    }
}
