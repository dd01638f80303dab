//! One context per run, built once by `crate::dispatch` (the pipeline runs
//! its steps on the same one) and passed to every command as `&Ctx`.
//!
//! It lives in `app` because it is what a command receives: it knows the
//! adapters' clients but no command, and neither clap nor the pipeline file.
//!
//! - one multi-thread Tokio runtime, started on first use (lint, render,
//!   `codes` and the Argo CD plugin never start it): commands `block_on` it
//!   instead of starting their own;
//! - the environment, read once ([`EnvSnapshot`]): no command reads
//!   `std::env`;
//! - a clock (`now`), injectable so age rules (revert `--max-age`) are
//!   testable;
//! - clients built on first use: Kubernetes (from the kubeconfig or
//!   in-cluster config; a test injects its own with `with_kube`), GitHub
//!   (GITHUB_TOKEN / GITHUB_API_URL: a test points the snapshot at its
//!   stand-in), one HTTP client, the object-store opener
//!   (BUNDLEGATE_STORE_ROOT) and the registry opener (`oci://`).

use std::future::Future;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

use crate::adapters::env::EnvSnapshot;
use crate::adapters::github::{self, GithubClient};
use crate::adapters::oci::Registry;
use crate::adapters::store::Store;
use crate::report::StepReport;

type Clock = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

pub struct Ctx {
    rt: OnceLock<tokio::runtime::Runtime>,
    pub env: EnvSnapshot,
    clock: Clock,
    kube: tokio::sync::OnceCell<(kube::Client, String)>,
    github: tokio::sync::OnceCell<Option<GithubClient>>,
    http: OnceLock<reqwest::Client>,
    /// Serves every remote storage URI when set (a test's in-memory store).
    store: Option<Arc<dyn object_store::ObjectStore>>,
    /// The signature policy of `--config` (`BUNDLEGATE_CONFIG`), keys read.
    pub(crate) signature: crate::checks::signature::Policy,
}

impl Ctx {
    /// The context of a real run: this process's environment, the system clock.
    pub(crate) fn from_process() -> Ctx {
        Ctx::new(EnvSnapshot::from_process())
    }

    pub fn new(env: EnvSnapshot) -> Ctx {
        Ctx {
            rt: OnceLock::new(),
            env,
            clock: Arc::new(Utc::now),
            kube: tokio::sync::OnceCell::new(),
            github: tokio::sync::OnceCell::new(),
            http: OnceLock::new(),
            store: None,
            signature: Default::default(),
        }
    }

    /// Judge signatures under this policy (lint, verify, the Argo CD plugin).
    pub(crate) fn with_signature(mut self, policy: crate::checks::signature::Policy) -> Ctx {
        self.signature = policy;
        self
    }

    pub fn with_clock(mut self, now: impl Fn() -> DateTime<Utc> + Send + Sync + 'static) -> Ctx {
        self.clock = Arc::new(now);
        self
    }

    /// Use this Kubernetes client; `server` names the cluster in reports.
    /// A `kube::Client` spawns its buffer task: build it inside
    /// [`Ctx::runtime`] (`ctx.runtime()?.enter()`).
    pub fn with_kube(self, client: kube::Client, server: impl Into<String>) -> Ctx {
        let _ = self.kube.set((client, server.into()));
        self
    }

    /// The runtime, started on first use. Failing to start it (no threads
    /// or file descriptors left) is the tool failing, never a verdict.
    pub fn runtime(&self) -> Result<&tokio::runtime::Runtime> {
        if let Some(rt) = self.rt.get() {
            return Ok(rt);
        }
        let rt =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")?;
        Ok(self.rt.get_or_init(|| rt))
    }

    /// Run a command's async part. Never called from inside the runtime.
    pub(crate) fn block_on<F: Future>(&self, f: F) -> Result<F::Output> {
        Ok(self.runtime()?.block_on(f))
    }

    /// [`Ctx::block_on`] for a fallible future.
    pub(crate) fn try_block_on<T>(&self, f: impl Future<Output = Result<T>>) -> Result<T> {
        self.block_on(f)?
    }

    /// [`Ctx::block_on`] for a step: a runtime that cannot start is that
    /// step's ERROR.
    pub(crate) fn block_on_step(&self, step: &str, target: &str, f: impl Future<Output = StepReport>) -> StepReport {
        self.block_on(f).unwrap_or_else(|e| StepReport::error(step, target, &e))
    }

    pub(crate) fn now(&self) -> DateTime<Utc> {
        (self.clock)()
    }

    /// Bound on each Kubernetes request (BUNDLEGATE_KUBE_TIMEOUT, default 30s).
    pub(crate) fn kube_timeout(&self) -> Duration {
        self.env.kube_timeout.as_deref().and_then(crate::util::parse_duration).unwrap_or(Duration::from_secs(30))
    }

    /// The Kubernetes client and its server URL, built on first use. A
    /// failure is not kept: the next command that asks tries again.
    pub(crate) async fn kube(&self) -> Result<(kube::Client, String)> {
        let t = self.kube_timeout();
        self.kube.get_or_try_init(|| crate::adapters::cluster::kube_client(t)).await.cloned()
    }

    /// The GitHub client, or `None` without GITHUB_TOKEN.
    pub(crate) async fn github(&self) -> github::Result<Option<&GithubClient>> {
        let env = &self.env;
        let gh = self
            .github
            .get_or_try_init(|| async {
                match &env.github_token {
                    None => Ok(None),
                    Some(t) => {
                        GithubClient::new(env.github_api_url.as_deref().unwrap_or(github::DEFAULT_API_URL), &t.0)
                            .map(Some)
                    }
                }
            })
            .await?;
        Ok(gh.as_ref())
    }

    /// The shared HTTP client. No client-wide timeout: each request sets its own.
    pub(crate) fn http(&self) -> Result<&reqwest::Client> {
        if let Some(h) = self.http.get() {
            return Ok(h);
        }
        let h = reqwest::Client::builder().build().context("building the HTTP client")?;
        Ok(self.http.get_or_init(|| h))
    }

    /// Serve every remote storage URI (`s3://`, `gs://`, `az://`) from
    /// `store`, an object under `<bucket>/<prefix>/<path>`: library tests
    /// run verify, publish and audit against `object_store`'s in-memory
    /// store. `file:` URIs still open the folder they name.
    pub fn with_store(mut self, store: Arc<dyn object_store::ObjectStore>) -> Ctx {
        self.store = Some(store);
        self
    }

    /// Open the object store a bundle names, confined to the store root.
    pub(crate) fn open_store(&self, uri: &str, bundle_dir: &Path, create: bool) -> Result<Store> {
        if let Some(s) = &self.store {
            if let Some(key_prefix) = crate::adapters::store::remote_key_prefix(uri) {
                return Ok(Store::from_parts(s.clone(), &key_prefix, uri));
            }
        }
        Store::open(uri, bundle_dir, create, self.env.store_root.as_deref())
    }

    /// Open the registry repository an `oci://` reference names, with the
    /// snapshot's credentials and plain-HTTP exceptions. (Library tests
    /// cannot inject a registry yet: the integration tests run a real one.)
    pub(crate) fn open_registry(&self, r: &crate::bundle::storage_uri::OciRef) -> Result<Registry> {
        Registry::open(&self.env.oci, r)
    }

    /// The same, authorized to push (publish).
    pub(crate) fn open_registry_for_push(&self, r: &crate::bundle::storage_uri::OciRef) -> Result<Registry> {
        Registry::open_for_push(&self.env.oci, r)
    }
}
