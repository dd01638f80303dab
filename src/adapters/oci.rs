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
use crate::checks::verify::oci::{IMAGE_MANIFEST, MAX_MANIFEST_BYTES};
use crate::checks::verify::ReadFailure;
use crate::parse::oci::DockerAuth;

/// A 401 or 403: credentials missing or refused (by number: the layout
/// test takes a status constant's path for a diagnostic code).
fn refused_status(s: StatusCode) -> bool {
    matches!(s.as_u16(), 401 | 403)
}

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
        })
    }

    /// The `Authorization` value, found once: a bearer token through the
    /// challenge, else Basic with the credentials, else none.
    async fn authorization(&self) -> Result<Option<String>> {
        self.authorization
            .get_or_try_init(|| async {
                let answer = tokio::time::timeout(
                    REQUEST_TIMEOUT,
                    self.oci.auth(&self.reference, &self.auth, RegistryOperation::Pull),
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

    /// The manifest `digest` names, its bytes checked to hash to it. At most
    /// [`MAX_MANIFEST_BYTES`]; any failure is the tool not finishing.
    pub(crate) async fn manifest(&self, digest: &str) -> Result<Vec<u8>> {
        let url = format!("{}/manifests/{digest}", self.base);
        self.authorization().await?;
        let read = async {
            let mut resp = self
                .send(self.http.get(&url).header(reqwest::header::ACCEPT, IMAGE_MANIFEST))
                .await
                .map_err(|e| anyhow!("{url}: {}", crate::adapters::store::short_error(&e)))?;
            let status = resp.status();
            if refused_status(status) {
                bail!("{}", self.refused(status, &url));
            }
            if status.as_u16() == 404 {
                bail!("{url}: the registry has no manifest {digest} in this repository (404)");
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
            Ok(body)
        };
        let body = tokio::time::timeout(REQUEST_TIMEOUT, read)
            .await
            .map_err(|_| anyhow!("{url}: no whole answer within {REQUEST_TIMEOUT:?}"))??;
        let got = format!("sha256:{}", hex::encode(sha2::Sha256::digest(&body)));
        if got != digest {
            bail!("{url}: the registry's bytes hash to {got}, not the pinned {digest}: not read");
        }
        Ok(body)
    }

    /// `HEAD` of a blob: its size when present. A registry that does not
    /// answer is `Unreachable` (BG109), never present.
    pub(crate) async fn head_blob(&self, digest: &str) -> Result<u64, ReadFailure> {
        let url = format!("{}/blobs/{digest}", self.base);
        self.authorization().await.map_err(|e| ReadFailure::Unreachable(format!("{e:#}")))?;
        let resp = match self.send(self.http.head(&url)).await {
            Ok(r) => r,
            Err(e) => {
                let why = format!("{url}: {}", crate::adapters::store::short_error(&e));
                return Err(if e.is_connect() || e.is_timeout() {
                    ReadFailure::Unreachable(why)
                } else {
                    ReadFailure::Other(why)
                });
            }
        };
        let status = resp.status();
        match status {
            s if s.is_success() => resp
                .headers()
                .get(reqwest::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| ReadFailure::Other(format!("{url}: the registry gave no Content-Length for the blob"))),
            s if s.as_u16() == 404 => Err(ReadFailure::Other(format!(
                "its blob {digest} is listed in the manifest but the registry does not have it ({url}: 404)"
            ))),
            s if refused_status(s) => Err(ReadFailure::Denied(self.refused(status, &url))),
            s => Err(ReadFailure::Other(format!("{url}: the registry answered {s}"))),
        }
    }

    /// Stream a blob through sha256, at most `size` bytes (the manifest's):
    /// the hex digest of what came. `--deep` and archive layers read
    /// through this (not wired yet).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) async fn hash_blob(&self, digest: &str, size: u64) -> Result<String, ReadFailure> {
        let url = format!("{}/blobs/{digest}", self.base);
        self.authorization().await.map_err(|e| ReadFailure::Unreachable(format!("{e:#}")))?;
        let other =
            |e: reqwest::Error| ReadFailure::Other(format!("{url}: {}", crate::adapters::store::short_error(&e)));
        // No whole-request timeout: a large blob takes its time; each chunk
        // is bounded instead.
        let req = self.http.get(&url);
        let req = match self.authorization.get().cloned().flatten() {
            Some(a) => req.header(reqwest::header::AUTHORIZATION, a),
            None => req,
        };
        let mut resp = req.send().await.map_err(other)?;
        let status = resp.status();
        if refused_status(status) {
            return Err(ReadFailure::Denied(self.refused(status, &url)));
        }
        if !status.is_success() {
            return Err(ReadFailure::Other(format!("{url}: the registry answered {status}")));
        }
        let mut h = sha2::Sha256::new();
        let mut got = 0u64;
        loop {
            let chunk = tokio::time::timeout(CHUNK_TIMEOUT, resp.chunk())
                .await
                .map_err(|_| ReadFailure::Unreachable(format!("{url}: no bytes for {CHUNK_TIMEOUT:?}")))?
                .map_err(other)?;
            let Some(chunk) = chunk else { break };
            got += chunk.len() as u64;
            if got > size {
                return Err(ReadFailure::Truncated { expected: size, got });
            }
            h.update(&chunk);
        }
        if got != size {
            return Err(ReadFailure::Truncated { expected: size, got });
        }
        Ok(hex::encode(h.finalize()))
    }
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
        assert_eq!(reg.manifest(&digest).await.unwrap(), *body);
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
