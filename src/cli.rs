//! clap definitions only: what the user typed, nothing more.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::options::{
    self, defaults, AlertOptions, ArgocdAction, CanaryMode, CanaryOptions, HumanDuration, Progress, RevertOptions,
    VerifyOptions, WatchOptions,
};
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
    #[arg(long, global = true, env = "BUNDLEGATE_CONFIG", hide_env_values = true)]
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
        /// Image of the in-pod file verifier (default: this release's image,
        /// ghcr.io/bundlegate/bundlegate:<version>; docs/verify-on-start.md).
        #[arg(long, env = "BUNDLEGATE_VERIFIER_IMAGE", hide_env_values = true)]
        verifier_image: Option<String>,
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
        /// Concurrent uploads (1..=256).
        #[arg(long, default_value = defaults::JOBS_STR, value_parser = jobs_value)]
        jobs: usize,
    },
    /// Verify every bundle under a tree; report drift since the last audit.
    Audit {
        root: PathBuf,
        /// Re-hash everything instead of trusting unchanged object identity.
        #[arg(long)]
        deep: bool,
        /// Audit cache (object identity → verified sha256): a folder (path or
        /// `file:` URI) or an object-store prefix (`s3://bucket/audit-cache/`), one object per
        /// bundle so concurrent shards share it; a `.json` file is a
        /// single-machine cache. Default: a folder under the user cache dir
        /// (`BUNDLEGATE_CACHE_DIR` overrides it).
        #[arg(long, value_name = "DIR|URI")]
        cache: Option<String>,
        /// Audit only this shard's bundles: `K/N` (0 ≤ K < N) or `auto/N`
        /// (K from `JOB_COMPLETION_INDEX`, as a Kubernetes Indexed Job sets it).
        /// Every shard computes the same assignment from the tree alone.
        #[arg(long, value_name = "K/N")]
        shard: Option<String>,
        /// Also write the JSON report here (path, `file:` or object-store URI), e.g.
        /// for `report merge` to collect from a bucket.
        #[arg(long, value_name = "PATH|URI")]
        write_report: Option<String>,
        #[command(flatten)]
        alerts: AlertArgs,
        /// Also compare what the cluster serves (kubeconfig, read-only) with
        /// each service's current bundle.
        #[arg(long)]
        serving: bool,
        #[command(flatten)]
        opts: VerifyOpts,
    },
    /// Work with reports: `report merge` joins the reports of a sharded audit.
    Report {
        #[command(subcommand)]
        cmd: ReportCmd,
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
        #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL", hide_env_values = true)]
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
        /// Wait this long for files still being downloaded (e.g. 10m; 0s: not at all).
        #[arg(long, default_value = "0s", value_parser = wait_value)]
        wait: std::time::Duration,
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
    /// Concurrent object reads (1..=256).
    #[arg(long, default_value = defaults::JOBS_STR, value_parser = jobs_value)]
    pub jobs: usize,
    /// Treat objects under the prefix that the bundle does not list as errors.
    #[arg(long)]
    pub deny_extra: bool,
    /// Progress bar: auto (on a TTY), always, never.
    #[arg(long, value_enum, default_value_t = ProgressMode::Auto)]
    pub progress: ProgressMode,
}

impl From<VerifyOpts> for VerifyOptions {
    fn from(o: VerifyOpts) -> Self {
        VerifyOptions { jobs: o.jobs, deny_extra: o.deny_extra, progress: o.progress.into() }
    }
}

#[derive(Debug, Subcommand)]
pub enum ReportCmd {
    /// Merge shard reports (`audit --shard K/N --format json`) into one.
    /// A missing or duplicate shard, or shards of different trees/commits, is
    /// INCONCLUSIVE, never PASS.
    Merge {
        /// Report files or objects (paths, `file:` or object-store URIs), or a
        /// folder/prefix ending in `/` holding them.
        #[arg(required = true, value_name = "REPORT")]
        reports: Vec<String>,
        /// Shard reports that finished longer ago than this (e.g. `6h`) are
        /// stale: the merge is then INCONCLUSIVE.
        #[arg(long, value_name = "DURATION", value_parser = duration_value)]
        max_age: Option<HumanDuration>,
        #[command(flatten)]
        alerts: AlertArgs,
    },
}

/// Where an audit's Prometheus metrics go (drift alerts).
#[derive(Debug, Clone, Args, Default)]
pub struct AlertArgs {
    /// Write Prometheus text-format metrics to this file (path, `file:` or
    /// object-store URI; for the node-exporter textfile collector name it
    /// `*.prom` in the collector's folder).
    #[arg(long, value_name = "FILE")]
    pub metrics_file: Option<String>,
    /// Push the metrics to this Pushgateway (job `bundlegate_audit`).
    #[arg(long, value_name = "URL", env = "BUNDLEGATE_PUSHGATEWAY_URL", hide_env_values = true)]
    pub pushgateway: Option<String>,
}

impl From<AlertArgs> for AlertOptions {
    fn from(a: AlertArgs) -> Self {
        AlertOptions { metrics_file: a.metrics_file, pushgateway: a.pushgateway }
    }
}

#[derive(Debug, Clone, Args)]
pub struct CanaryArgs {
    /// Prometheus base URL, e.g. http://127.0.0.1:9090
    #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL", hide_env_values = true)]
    pub prometheus: Option<String>,
    /// Analysis window (default: the bundle's canary.window).
    #[arg(long, value_parser = duration_value)]
    pub window: Option<HumanDuration>,
    /// canary (split traffic) or shadow (mirrored traffic).
    #[arg(long, value_enum)]
    pub mode: Option<CanaryModeArg>,
    /// PromQL label selector for the candidate (default: release version label).
    #[arg(long)]
    pub candidate_selector: Option<String>,
    /// PromQL label selector for the baseline (default: the rollback target's version).
    #[arg(long)]
    pub baseline_selector: Option<String>,
    /// Candidate base URL for the golden-set smoke (e.g. http://127.0.0.1:8080).
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Judge every traffic step of spec.canary.steps where the arms' request shares show it was held (as `watch` does).
    #[arg(long)]
    pub steps: bool,
}

impl From<CanaryArgs> for CanaryOptions {
    fn from(a: CanaryArgs) -> Self {
        CanaryOptions {
            prometheus: a.prometheus,
            window: a.window,
            mode: a.mode.map(Into::into),
            candidate_selector: a.candidate_selector,
            baseline_selector: a.baseline_selector,
            endpoint: a.endpoint,
            steps: a.steps,
        }
    }
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

impl From<ArgocdCmd> for ArgocdAction {
    fn from(c: ArgocdCmd) -> Self {
        match c {
            ArgocdCmd::Generate { path } => ArgocdAction::Generate { path },
            ArgocdCmd::Discover { path } => ArgocdAction::Discover { path },
            ArgocdCmd::Parameters { path } => ArgocdAction::Parameters { path },
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct WatchArgs {
    /// Argo CD Application name.
    #[arg(long)]
    pub app: String,
    /// Namespace of the Application (Argo CD's namespace).
    #[arg(long, default_value = defaults::APP_NAMESPACE)]
    pub app_namespace: String,
    /// The merge commit that must be synced.
    #[arg(long, env = "GITHUB_SHA", hide_env_values = true)]
    pub revision: Option<String>,
    /// Give up after this long (e.g. 15m).
    #[arg(long, default_value = defaults::WATCH_TIMEOUT, value_parser = duration_value)]
    pub timeout: HumanDuration,
    /// Base URL of the service (identity endpoint and health probe).
    #[arg(long)]
    pub service_url: Option<String>,
    /// Health probe interval for downtime measurement (e.g. 300ms).
    #[arg(long, default_value = defaults::PROBE_INTERVAL, value_parser = duration_value)]
    pub probe_interval: HumanDuration,
    /// Hold a complete rollout this long before passing it: no container
    /// restarts, still complete at the end (default: twice the readiness
    /// probe's failure window, 30s to 10m; 0s judges one read).
    #[arg(long, value_parser = wait_value)]
    pub stable_for: Option<std::time::Duration>,
    /// Open a revert PR when a gate fails.
    #[arg(long)]
    pub revert: bool,
    /// Prometheus base URL for the canary gates once the rollout completed.
    #[arg(long, env = "BUNDLEGATE_PROMETHEUS_URL", hide_env_values = true)]
    pub prometheus: Option<String>,
}

impl From<WatchArgs> for WatchOptions {
    fn from(a: WatchArgs) -> Self {
        WatchOptions {
            app: a.app,
            app_namespace: a.app_namespace,
            revision: a.revision,
            timeout: a.timeout,
            service_url: a.service_url,
            probe_interval: a.probe_interval,
            stable_for: a.stable_for,
            revert: a.revert,
            prometheus: a.prometheus,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct RevertArgs {
    /// Git repository holding the bundle (default: current directory).
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Remote to push the revert branch to.
    #[arg(long, default_value = defaults::REMOTE)]
    pub remote: String,
    /// Base branch for the revert PR.
    #[arg(long, default_value = defaults::BASE_BRANCH)]
    pub base: String,
    /// Evidence (a JSON report file, e.g. from `watch --format json`) for the PR body.
    #[arg(long)]
    pub evidence: Option<PathBuf>,
    /// Ignore failures older than this (e.g. 20m).
    #[arg(long, default_value = defaults::REVERT_MAX_AGE, value_parser = duration_value)]
    pub max_age: HumanDuration,
    /// When the failure was observed (RFC 3339; default now).
    #[arg(long, value_parser = rfc3339_value)]
    pub failed_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl From<RevertArgs> for RevertOptions {
    fn from(a: RevertArgs) -> Self {
        RevertOptions {
            repo: a.repo,
            remote: a.remote,
            base: a.base,
            evidence: a.evidence,
            max_age: a.max_age,
            failed_at: a.failed_at,
        }
    }
}

/// `--jobs`: refused at parse time (exit 2, naming the flag) outside 1..=256.
pub(crate) fn jobs_value(s: &str) -> Result<usize, String> {
    let n: usize = s.trim().parse().map_err(|_| format!("`{s}` is not a whole number"))?;
    options::check_jobs(n)
}

/// A duration flag: validated at parse time (finite, greater than zero, at
/// most 7d), kept with its text so reports quote what the user wrote.
pub(crate) fn duration_value(s: &str) -> Result<HumanDuration, String> {
    HumanDuration::parse(s)
}

/// `--wait`: like a duration flag, but zero (do not wait) is allowed.
fn wait_value(s: &str) -> Result<std::time::Duration, String> {
    crate::util::try_duration(s)
}

fn rfc3339_value(s: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&chrono::Utc))
        .map_err(|e| format!("`{s}` is not an RFC 3339 time (e.g. 2026-01-31T12:00:00Z): {e}"))
}

/// `--progress`: a typo is an error, not a silent `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressMode {
    /// On when stderr is a terminal.
    Auto,
    Always,
    Never,
}

impl From<ProgressMode> for Progress {
    fn from(m: ProgressMode) -> Self {
        match m {
            ProgressMode::Auto => Progress::Auto,
            ProgressMode::Always => Progress::Always,
            ProgressMode::Never => Progress::Never,
        }
    }
}

/// `canary --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CanaryModeArg {
    /// Split traffic.
    Canary,
    /// Mirrored traffic.
    Shadow,
}

impl From<CanaryModeArg> for CanaryMode {
    fn from(m: CanaryModeArg) -> Self {
        match m {
            CanaryModeArg::Canary => CanaryMode::Canary,
            CanaryModeArg::Shadow => CanaryMode::Shadow,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// `--help` prints an env-backed flag's current value unless hidden; a
    /// URL there may carry credentials, so every such flag hides it.
    #[test]
    fn every_env_flag_hides_its_value_in_help() {
        fn walk(c: &clap::Command) {
            for a in c.get_arguments() {
                assert!(
                    a.get_env().is_none() || a.is_hide_env_values_set(),
                    "{} --{:?} shows its env value in --help",
                    c.get_name(),
                    a.get_long()
                );
            }
            c.get_subcommands().for_each(walk);
        }
        walk(&super::Cli::command());
    }
}
