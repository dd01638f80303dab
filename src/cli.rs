//! The command line: the global flags and the command enum. Every command's
//! options are a type of [`crate::options`] (clap derives from it there), so
//! each flag's help text is written once, on that type.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::options::{
    ArgocdAction, AuditOptions, CanaryOptions, MergeOptions, PreflightOptions, PromoteOptions, PublishOptions,
    RenderOptions, RevertOptions, RunOptions, SchemaKind, SeverityOptions, SignOptions, VerifyFilesOptions,
    VerifyOptions, WatchOptions,
};
use crate::report::format::Format;

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

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check bundles for release hygiene (no network).
    Lint {
        /// Release bundle files (`release.yaml`).
        #[arg(required = true)]
        bundles: Vec<PathBuf>,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// Render Kubernetes manifests for a bundle.
    Render {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: RenderOptions,
    },
    /// Sign a bundle: `model.sig` (OpenSSF model signing, over every file's sha256) and `release.sig` (the release digest).
    Sign {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: SignOptions,
    },
    /// Print a bundle's release digest.
    Digest {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
    },
    /// Verify that the object store holds exactly the bundle's bytes.
    Verify {
        /// Release bundle files (`release.yaml`).
        #[arg(required = true)]
        bundles: Vec<PathBuf>,
        #[command(flatten)]
        opts: VerifyOptions,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// Upload a model folder to a new versioned prefix and record sha256/size in the bundle.
    Publish {
        /// Folder holding the model files to upload.
        dir: PathBuf,
        #[command(flatten)]
        opts: PublishOptions,
    },
    /// Verify every bundle under a tree; report drift since the last audit.
    Audit {
        /// Folder searched for release bundles (YAML files of `kind: ReleaseBundle`), or one bundle file.
        root: PathBuf,
        #[command(flatten)]
        opts: AuditOptions,
    },
    /// Work with reports: `report merge` joins the reports of a sharded audit.
    Report {
        #[command(subcommand)]
        cmd: ReportCmd,
    },
    /// Will this rollout be able to happen on this cluster?
    Preflight {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: PreflightOptions,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// Compare a canary (or shadow) with the baseline from Prometheus; golden-set smoke.
    Canary {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: CanaryOptions,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// Run a pipeline file (pipelines/*.yaml) over bundles.
    Run {
        /// Pipeline file, e.g. `pipelines/pull-request.yaml` (docs/pipeline.md).
        pipeline: PathBuf,
        #[command(flatten)]
        opts: RunOptions,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// Argo CD config-management plugin (CMP v2) entry points.
    Argocd {
        #[command(subcommand)]
        cmd: ArgocdAction,
    },
    /// After merge: watch the Argo CD Application and the real rollout.
    Watch {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: WatchOptions,
    },
    /// Open a PR that restores the bundle's rollback target.
    Revert {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: RevertOptions,
    },
    /// After the canary: open the next traffic step's PR on PASS, the revert PR on FAIL, nothing on INCONCLUSIVE.
    Promote {
        /// Release bundle file (`release.yaml`).
        bundle: PathBuf,
        #[command(flatten)]
        opts: PromoteOptions,
        #[command(flatten)]
        sev: SeverityOptions,
    },
    /// In the serving pod: check the model files against the artifact list the manifest carries.
    VerifyFiles {
        #[command(flatten)]
        opts: VerifyFilesOptions,
    },
    /// List every diagnostic code (markdown: the docs/diagnostics.md text).
    Codes,
    /// Explain one diagnostic code.
    Explain { code: String },
    /// Print the JSON Schema of a release bundle or a pipeline file (human: the schema itself; schemas/ holds both).
    Schema {
        #[arg(value_enum)]
        kind: SchemaKind,
    },
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
        #[command(flatten)]
        opts: MergeOptions,
    },
    /// Print a saved JSON report (`--format json`) again in the chosen
    /// `--format`, e.g. as SARIF for code scanning. Exit code: the report's.
    Show {
        /// A report file, `file:` or object-store URI.
        #[arg(value_name = "REPORT")]
        report: String,
    },
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
