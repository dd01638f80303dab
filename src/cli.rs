//! clap definitions only: what the user typed, nothing more.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::render::Format;

#[derive(Debug, Parser)]
#[command(name = "bundlegate", version, about = "Make ML model releases on Kubernetes truthful.", long_about = None)]
pub struct Cli {
    /// Output format for the report (stdout). Logs go to stderr.
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// More logs on stderr (-v info, -vv debug). `RUST_LOG` also works.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Config file (YAML): per-code severities and verify policy.
    #[arg(long, global = true, env = "BUNDLEGATE_CONFIG")]
    pub config: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args, Default)]
pub struct SeverityArgs {
    /// Allow (silence) a diagnostic code or name. Repeatable.
    #[arg(short = 'A', long = "allow", value_name = "CODE", global = true)]
    pub allow: Vec<String>,
    /// Make a code a warning. Repeatable.
    #[arg(short = 'W', long = "warn", value_name = "CODE", global = true)]
    pub warn: Vec<String>,
    /// Make a code an error (deny). Repeatable.
    #[arg(short = 'D', long = "deny", value_name = "CODE", global = true)]
    pub deny: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check bundles for release hygiene (no network).
    Lint {
        #[arg(required = true)]
        bundles: Vec<PathBuf>,
        #[command(flatten)]
        sev: SeverityArgs,
    },
    /// Render Kubernetes manifests for a bundle.
    Render {
        bundle: PathBuf,
        /// Write `<name>-<version>.yaml` here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Folder with `<format>.yaml.hbs` templates (logic-less; no custom helpers).
        #[arg(long)]
        templates: Option<PathBuf>,
    },
    /// Print a bundle's release digest.
    Digest { bundle: PathBuf },
    /// Verify that the object store holds exactly the bundle's bytes.
    Verify {
        #[arg(required = true)]
        bundles: Vec<PathBuf>,
        #[command(flatten)]
        opts: VerifyOpts,
        #[command(flatten)]
        sev: SeverityArgs,
    },
    /// Upload a model folder to a new versioned prefix and record sha256/size in the bundle.
    Publish {
        dir: PathBuf,
        /// Destination prefix, e.g. s3://models/llm/v3/ (must be empty).
        #[arg(long)]
        to: String,
        /// Bundle to update (its storageUri and artifacts are rewritten).
        #[arg(long)]
        bundle: PathBuf,
        /// Concurrent uploads.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
    },
    /// Verify every bundle under a tree; report drift since the last audit.
    Audit {
        root: PathBuf,
        /// Re-hash everything instead of trusting unchanged object identity.
        #[arg(long)]
        deep: bool,
        /// Cache file (object identity → verified sha256).
        #[arg(long)]
        cache: Option<PathBuf>,
        /// Also compare what the cluster serves (kubeconfig, read-only) with
        /// each service's current bundle.
        #[arg(long)]
        serving: bool,
        #[command(flatten)]
        opts: VerifyOpts,
    },
    /// Will this rollout be able to happen on this cluster?
    Preflight {
        bundle: PathBuf,
        /// Cluster state from `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets,deployments,replicasets -A -o yaml`.
        #[arg(long, conflicts_with = "live")]
        snapshot: Option<PathBuf>,
        /// Read the cluster live through the kubeconfig (read-only verbs).
        #[arg(long)]
        live: bool,
        #[command(flatten)]
        sev: SeverityArgs,
    },
    /// Compare a canary (or shadow) with the baseline from Prometheus; golden-set smoke.
    Canary {
        bundle: PathBuf,
        #[command(flatten)]
        args: CanaryArgs,
        #[command(flatten)]
        sev: SeverityArgs,
    },
    /// Run a pipeline file (pipelines/*.yaml) over bundles.
    Run {
        pipeline: PathBuf,
        /// Bundles to run on. Without it, PR mode finds changed bundles from --base/--head.
        #[arg(long = "bundle")]
        bundles: Vec<PathBuf>,
        /// Cluster snapshot for the preflight step.
        #[arg(long)]
        snapshot: Option<PathBuf>,
        /// Git base revision (PR mode: bundles changed between base and head).
        #[arg(long)]
        base: Option<String>,
        /// Git head revision (default HEAD).
        #[arg(long)]
        head: Option<String>,
        /// Git repository (default: current directory).
        #[arg(long, default_value = ".")]
        repo: PathBuf,
        /// Prometheus URL for the canary step.
        #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL")]
        prometheus: Option<String>,
        #[command(flatten)]
        sev: SeverityArgs,
    },
    /// Argo CD config-management plugin (CMP v2) entry points.
    Argocd {
        #[command(subcommand)]
        cmd: ArgocdCmd,
    },
    /// After merge: watch the Argo CD Application and the real rollout.
    Watch {
        bundle: PathBuf,
        #[command(flatten)]
        args: WatchArgs,
    },
    /// Open a PR that restores the bundle's rollback target.
    Revert {
        bundle: PathBuf,
        #[command(flatten)]
        args: RevertArgs,
    },
    /// In the serving pod: check the model files against the artifact list the manifest carries.
    VerifyFiles {
        /// Environment variable holding the rendered artifact list (JSON).
        #[arg(long, default_value = "BUNDLEGATE_ARTIFACTS")]
        manifest_env: String,
        /// Folder the model server reads the files from.
        #[arg(long, default_value = "/mnt/models")]
        root: PathBuf,
        /// full (sha256 + size) or size (default: the list's mode).
        #[arg(long)]
        mode: Option<String>,
        #[arg(long, default_value = "/dev/termination-log")]
        termination_log: PathBuf,
        /// Written with the release digest when every artifact is OK.
        #[arg(long, default_value = "/tmp/bundlegate-verified")]
        marker: PathBuf,
        /// Readiness probe: exit 0 only if the marker holds this release's digest.
        #[arg(long)]
        ready: bool,
        /// Wait this long for files still being downloaded (e.g. 10m).
        #[arg(long, default_value = "0s")]
        wait: String,
        /// After a pass keep running (sidecar mode).
        #[arg(long)]
        stay: bool,
        /// Hashing threads (0: one per core).
        #[arg(long, default_value_t = 0)]
        threads: usize,
    },
    /// List every diagnostic code (markdown: the docs/diagnostics.md text).
    Codes,
    /// Explain one diagnostic code.
    Explain { code: String },
}

#[derive(Debug, Clone, Args)]
pub struct VerifyOpts {
    /// Concurrent object reads.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
    /// Treat objects under the prefix that the bundle does not list as errors.
    #[arg(long)]
    pub deny_extra: bool,
    /// Progress bar: auto (on a TTY), always, never.
    #[arg(long, default_value = "auto")]
    pub progress: String,
}

#[derive(Debug, Clone, Args)]
pub struct CanaryArgs {
    /// Prometheus base URL, e.g. http://127.0.0.1:9090
    #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL")]
    pub prometheus: Option<String>,
    /// Analysis window (default: the bundle's canary.window).
    #[arg(long)]
    pub window: Option<String>,
    /// canary (split traffic) or shadow (mirrored traffic).
    #[arg(long)]
    pub mode: Option<String>,
    /// PromQL label selector for the candidate (default: release version label).
    #[arg(long)]
    pub candidate_selector: Option<String>,
    /// PromQL label selector for the baseline (default: the rollback target's version).
    #[arg(long)]
    pub baseline_selector: Option<String>,
    /// Candidate base URL for the golden-set smoke (e.g. http://127.0.0.1:8080).
    #[arg(long)]
    pub endpoint: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ArgocdCmd {
    /// Write Kubernetes objects for the app's source path to stdout (CMP generate).
    Generate {
        /// Source path (default: the current directory, as Argo CD runs it).
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Exit 0 when the source path holds a release bundle (CMP discover).
    Discover {
        #[arg(long)]
        path: Option<PathBuf>,
    },
    /// Print the plugin's parameter announcement JSON (CMP parameters.dynamic).
    Parameters {
        #[arg(long)]
        path: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Argo CD Application name.
    #[arg(long)]
    pub app: String,
    /// Namespace of the Application (Argo CD's namespace).
    #[arg(long, default_value = "argocd")]
    pub app_namespace: String,
    /// The merge commit that must be synced.
    #[arg(long, env = "GITHUB_SHA")]
    pub revision: Option<String>,
    /// Give up after this long (e.g. 15m).
    #[arg(long, default_value = "15m")]
    pub timeout: String,
    /// Base URL of the service (identity endpoint and health probe).
    #[arg(long)]
    pub service_url: Option<String>,
    /// Health probe interval for downtime measurement (e.g. 300ms).
    #[arg(long, default_value = "300ms")]
    pub probe_interval: String,
    /// Open a revert PR when a gate fails.
    #[arg(long)]
    pub revert: bool,
    /// Prometheus base URL for the canary gates once the rollout completed.
    #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL")]
    pub prometheus: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RevertArgs {
    /// Git repository holding the bundle (default: current directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Remote to push the revert branch to.
    #[arg(long, default_value = "origin")]
    pub remote: String,
    /// Base branch for the revert PR.
    #[arg(long, default_value = "main")]
    pub base: String,
    /// Evidence (a JSON report file, e.g. from `watch --format json`) for the PR body.
    #[arg(long)]
    pub evidence: Option<PathBuf>,
    /// Ignore failures older than this (e.g. 20m).
    #[arg(long, default_value = "20m")]
    pub max_age: String,
    /// When the failure was observed (RFC 3339; default now).
    #[arg(long)]
    pub failed_at: Option<String>,
}
