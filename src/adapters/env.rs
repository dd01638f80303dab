//! The environment, read once. [`EnvSnapshot::from_process`] is the one
//! place bundlegate's own variables are read; commands get the snapshot
//! through `app::ctx::Ctx`, and a test builds one by hand.
//!
//! Still read where they are used, because they configure a library rather
//! than bundlegate: `AWS_*` / `GOOGLE_*` / `AZURE_*` (object_store's
//! builders, `adapters::store`), `KUBECONFIG` and the in-cluster service
//! account (kube's `Config::infer`) and `NO_COLOR` / `RUST_LOG` (the
//! terminal, `main`). The Argo CD plugin's variables are in the snapshot
//! too ([`EnvSnapshot::argocd`], the names `parse::cmp` reads). The variable
//! `verify-files --manifest-env` names is that command's input, read through
//! [`named`] when the command runs.

use std::path::PathBuf;

use crate::parse::cmp::CmpEnv;

/// bundlegate's own environment variables. Empty values count as unset.
#[derive(Debug, Clone, Default)]
pub struct EnvSnapshot {
    /// GITHUB_SHA: the commit under test when the checkout cannot say.
    pub github_sha: Option<String>,
    /// GITHUB_REPOSITORY (owner/repo): where a revert PR is opened.
    pub github_repository: Option<String>,
    /// GITHUB_TOKEN; never printed (see `Debug`).
    pub github_token: Option<Secret>,
    /// GITHUB_API_URL (GHES), default api.github.com.
    pub github_api_url: Option<String>,
    /// BUNDLEGATE_WATCH_POLL: how often `watch` reads the cluster (tests shorten it).
    pub watch_poll: Option<String>,
    /// BUNDLEGATE_KUBE_TIMEOUT: bound on each Kubernetes request.
    pub kube_timeout: Option<String>,
    /// BUNDLEGATE_STORE_ROOT: the folder `file:` stores must stay inside.
    pub store_root: Option<PathBuf>,
    /// BUNDLEGATE_CACHE_DIR, else XDG_CACHE_HOME/bundlegate, else HOME/.cache/bundlegate.
    pub cache_dir: Option<PathBuf>,
    /// JOB_COMPLETION_INDEX: an Indexed Job's shard number (`--shard N/auto`).
    pub job_completion_index: Option<String>,
    /// BUNDLEGATE_VERIFIER_IMAGE: the in-pod verifier image `render` uses.
    pub verifier_image: Option<String>,
    /// The GitHub Actions run the `comment` step reports to.
    pub actions: ActionsEnv,
    /// What Argo CD sets for a config-management plugin (`argocd` commands).
    pub argocd: CmpEnv,
    /// OCI registry access (verify of `oci://` bundles).
    pub oci: OciEnv,
}

/// Registry credentials and plain-HTTP exceptions, read once. The Docker
/// config is read here too (a small file, bounded) so a command never opens
/// it on its own; `parse::oci::docker_auth` reads its `auths`.
#[derive(Debug, Clone, Default)]
pub struct OciEnv {
    /// BUNDLEGATE_OCI_USERNAME: with the password, wins over the Docker config.
    pub username: Option<String>,
    /// BUNDLEGATE_OCI_PASSWORD; never printed.
    pub password: Option<Secret>,
    /// BUNDLEGATE_OCI_INSECURE_REGISTRIES: `host:port`s spoken to over plain
    /// HTTP; every other registry is HTTPS with certificates checked.
    pub insecure: Vec<String>,
    /// `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`: its
    /// path and text (or why it could not be read), when it exists.
    pub docker_config: Option<(PathBuf, Result<Secret, String>)>,
}

/// A Docker config is a few KiB; more is not read.
const DOCKER_CONFIG_MAX: u64 = 1 << 20;

fn docker_config(get: &dyn Fn(&str) -> Option<String>) -> Option<(PathBuf, Result<Secret, String>)> {
    let dir = get("DOCKER_CONFIG")
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| get("HOME").map(|h| PathBuf::from(h).join(".docker")))?;
    let path = dir.join("config.json");
    let meta = std::fs::metadata(&path).ok()?;
    let text = if meta.len() > DOCKER_CONFIG_MAX {
        Err(format!("it is {} bytes, over the limit of {DOCKER_CONFIG_MAX}", meta.len()))
    } else {
        std::fs::read_to_string(&path).map(Secret).map_err(|e| e.to_string())
    };
    Some((path, text))
}

/// GitHub Actions' variables for the PR comment and job summary, as set
/// (empty counts as unset); `app::comment::GithubEnv` interprets them.
#[derive(Debug, Clone, Default)]
pub struct ActionsEnv {
    /// GITHUB_EVENT_PATH: the event payload (the pull request).
    pub event_path: Option<PathBuf>,
    /// BUNDLEGATE_PR_NUMBER: overrides the event's PR number.
    pub pr_number: Option<String>,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    /// BUNDLEGATE_COMMENT_KEY: tells this tool's sticky comments apart.
    pub comment_key: Option<String>,
    /// BUNDLEGATE_COMMENT_AUTHOR: the login the token acts as (a personal
    /// token's user); only its comments are edited or deleted.
    pub comment_author: Option<String>,
    /// BUNDLEGATE_CHECK_RUN: create a check run too.
    pub check_run: Option<String>,
}

/// The variable an option names (`verify-files --manifest-env`); `None`
/// when unset or not UTF-8.
pub(crate) fn named(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A value kept out of `Debug` output.
#[derive(Clone, Default)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl EnvSnapshot {
    pub(crate) fn from_process() -> EnvSnapshot {
        Self::from_lookup(|k| std::env::var_os(k).map(|v| v.to_string_lossy().into_owned()))
    }

    /// The snapshot from any lookup (a test's map).
    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> EnvSnapshot {
        let var = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let path = |k: &str| get(k).map(PathBuf::from);
        EnvSnapshot {
            github_sha: var("GITHUB_SHA"),
            github_repository: var("GITHUB_REPOSITORY"),
            github_token: var("GITHUB_TOKEN").map(Secret),
            github_api_url: var("GITHUB_API_URL"),
            watch_poll: get("BUNDLEGATE_WATCH_POLL"),
            kube_timeout: var("BUNDLEGATE_KUBE_TIMEOUT"),
            store_root: path("BUNDLEGATE_STORE_ROOT"),
            cache_dir: path("BUNDLEGATE_CACHE_DIR")
                .or_else(|| path("XDG_CACHE_HOME").map(|p| p.join("bundlegate")))
                .or_else(|| path("HOME").map(|h| h.join(".cache").join("bundlegate"))),
            job_completion_index: get("JOB_COMPLETION_INDEX"),
            argocd: CmpEnv::from_lookup(&get),
            verifier_image: var("BUNDLEGATE_VERIFIER_IMAGE"),
            oci: OciEnv {
                username: var("BUNDLEGATE_OCI_USERNAME"),
                password: var("BUNDLEGATE_OCI_PASSWORD").map(Secret),
                insecure: var("BUNDLEGATE_OCI_INSECURE_REGISTRIES")
                    .map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty()).collect())
                    .unwrap_or_default(),
                docker_config: docker_config(&get),
            },
            actions: ActionsEnv {
                event_path: var("GITHUB_EVENT_PATH").map(PathBuf::from),
                pr_number: var("BUNDLEGATE_PR_NUMBER"),
                step_summary: var("GITHUB_STEP_SUMMARY").map(PathBuf::from),
                output: var("GITHUB_OUTPUT").map(PathBuf::from),
                workspace: var("GITHUB_WORKSPACE").map(PathBuf::from),
                comment_key: var("BUNDLEGATE_COMMENT_KEY"),
                comment_author: var("BUNDLEGATE_COMMENT_AUTHOR"),
                check_run: var("BUNDLEGATE_CHECK_RUN"),
            },
        }
    }
}
