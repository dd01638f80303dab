//! The command line → one `app` command. This is the only place that knows
//! both the command enum and the commands; the options are already typed
//! (`crate::options`, which clap derives from), and `pipeline` builds the
//! same options from a pipeline file.
//!
//! Every command ends in a [`Report`]. A tool failure (`Err` from a command:
//! bad input, I/O) is a [`Failure`]: its message for stderr and, for every
//! command but the Argo CD plugin (whose stdout Argo CD parses), the same
//! failure as an ERROR report in the chosen `--format`.

use std::path::Path;

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::app::{
    argocd, audit, canary, codes, digest, lint, preflight, promote, publish, render, revert, schema, verify_files,
};
use crate::app::{on_bundles, sign, verify, watch};
use crate::cli::{Cli, Command, ReportCmd};
use crate::config::Config;
use crate::options::{SchemaKind, SeverityOptions};
use crate::report::{Report, StepReport};

/// A command that could not finish.
pub struct Failure {
    pub error: anyhow::Error,
    /// The failure as an ERROR report (`None`: the command prints no report
    /// on a failure, i.e. the Argo CD plugin).
    pub report: Option<Box<Report>>,
}

/// What one command line gives: the exit code (0/1/2) and the two texts,
/// already redacted. The binary writes them; the corpus test compares them
/// in-process, so the same reports are held without a process per case.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    /// Printed after `stdout`: a report too large to hold in memory, written
    /// to a scratch file as it was made (`report merge`).
    pub spooled: Option<crate::adapters::local::Spool>,
}

/// Run one command line to its [`Outcome`]: a report's verdict sets the exit
/// code; a tool failure is exit 2 with the message for stderr and the same
/// failure as an ERROR report for stdout (none for the Argo CD plugin).
pub fn execute(cli: Cli, color: bool) -> Outcome {
    use crate::report::format::format_report;
    use crate::report::redact::redact;
    let format = cli.format;
    if matches!(cli.command, Command::Report { cmd: ReportCmd::Merge { .. } }) {
        return merge(cli, color);
    }
    if matches!(cli.command, Command::Audit { .. }) {
        return audit_spooled(cli, color);
    }
    match run(cli) {
        Ok(report) => Outcome {
            code: report.exit_code(),
            stdout: redact(&format_report(&report, format, color)).into_owned(),
            stderr: String::new(),
            spooled: None,
        },
        Err(f) => failed(f, format, color),
    }
}

/// A failure's outcome: exit 2, why on stderr, its ERROR report (if any) on stdout.
fn failed(f: Failure, format: crate::report::format::Format, color: bool) -> Outcome {
    use crate::report::format::format_report;
    use crate::report::redact::redact;
    Outcome {
        code: 2,
        stdout: f.report.map(|r| redact(&format_report(&r, format, color)).into_owned()).unwrap_or_default(),
        stderr: error_text(&f.error),
        spooled: None,
    }
}

/// `report merge`, which writes its formatted report as it reads the
/// shards' (memory bounded by one step, not by the reports' size).
fn merge(cli: Cli, color: bool) -> Outcome {
    let format = cli.format;
    let (name, target) = label(&cli.command);
    let merged = || -> Result<_> {
        let Command::Report { cmd: ReportCmd::Merge { reports, opts } } = &cli.command else {
            anyhow::bail!("not a merge");
        };
        let cfg = Config::load(cli.config.as_deref())?;
        let ctx = Ctx::from_process().with_signature(cfg.signature_policy(cli.config.as_deref())?);
        crate::app::audit_merge::merge_reports(&ctx, reports, opts, format, color)
    };
    match merged() {
        Ok((code, out)) => Outcome { code, stdout: String::new(), stderr: String::new(), spooled: Some(out) },
        Err(error) => failed(failure(name, &target, false, error), format, color),
    }
}

/// `audit`, whose bundles' steps wait in a scratch file and are written
/// one at a time (a 10,000-bundle tree's report is not held in memory).
fn audit_spooled(cli: Cli, color: bool) -> Outcome {
    let format = cli.format;
    let (name, target) = label(&cli.command);
    let audited = || -> Result<_> {
        let Command::Audit { root, opts } = &cli.command else {
            anyhow::bail!("not an audit");
        };
        let cfg = Config::load(cli.config.as_deref())?;
        let ctx = Ctx::from_process().with_signature(cfg.signature_policy(cli.config.as_deref())?);
        let (r, steps) = audit::run_spooled(&ctx, root, opts, &cfg.overrides(&SeverityOptions::default())?)?;
        Ok((r.exit_code(), steps.write(&r, format, color, true)?))
    };
    match audited() {
        Ok((code, out)) => Outcome { code, stdout: String::new(), stderr: String::new(), spooled: Some(out) },
        Err(error) => failed(failure(name, &target, false, error), format, color),
    }
}

/// A tool failure as stderr shows it: one line, through the terminal's
/// escaper (the Actions runner reads workflow commands on stderr too).
pub(crate) fn error_text(e: &anyhow::Error) -> String {
    format!("error: {}\n", crate::report::escape::human(&format!("{e:#}")))
}

/// Run one command line.
pub fn run(cli: Cli) -> Result<Report, Failure> {
    let (name, target) = label(&cli.command);
    let raw = matches!(cli.command, Command::Argocd { .. });
    command(cli).map_err(|error| failure(name, &target, raw, error))
}

/// `error` of the command `name` on `target`, with its ERROR report unless
/// the command prints none (`raw`).
fn failure(name: &str, target: &str, raw: bool, error: anyhow::Error) -> Failure {
    let report = (!raw).then(|| {
        let mut r = Report::new(name);
        r.push(StepReport::error(name, target, &error));
        Box::new(r)
    });
    Failure { error, report }
}

/// The report's name and what its ERROR step names when the command fails.
fn label(c: &Command) -> (&'static str, String) {
    let shown = |p: &Path| crate::report::escape::path_name(p);
    let all = |ps: &[std::path::PathBuf]| ps.iter().map(|p| shown(p)).collect::<Vec<_>>().join(", ");
    match c {
        Command::Lint { bundles, .. } => ("lint", all(bundles)),
        Command::Verify { bundles, .. } => ("verify", all(bundles)),
        Command::Render { bundle, .. } => ("render", shown(bundle)),
        Command::Digest { bundle } => ("digest", shown(bundle)),
        Command::Sign { bundle, .. } => ("sign", shown(bundle)),
        Command::Preflight { bundle, .. } => ("preflight", shown(bundle)),
        Command::Canary { bundle, .. } => ("canary", shown(bundle)),
        Command::Watch { bundle, .. } => ("watch", shown(bundle)),
        Command::Revert { bundle, .. } => ("revert", shown(bundle)),
        Command::Promote { bundle, .. } => ("promote", shown(bundle)),
        Command::Publish { dir, .. } => ("publish", shown(dir)),
        Command::Audit { root, .. } => ("audit", shown(root)),
        Command::Report { cmd: ReportCmd::Merge { reports, .. } } => ("report merge", reports.join(", ")),
        Command::Report { cmd: ReportCmd::Show { report } } => ("report show", report.clone()),
        Command::Run { pipeline, .. } => ("run", shown(pipeline)),
        Command::Argocd { .. } => ("argocd", String::new()),
        Command::VerifyFiles { opts } => ("verify-files", shown(&opts.root)),
        Command::Codes => ("codes", "bundlegate".into()),
        Command::Explain { code } => ("explain", code.clone()),
        Command::Schema { kind } => ("schema", schema::name(*kind).into()),
    }
}

fn command(cli: Cli) -> Result<Report> {
    let cfg = Config::load(cli.config.as_deref())?;
    // One context for the whole run: one runtime, the environment read once.
    let ctx = Ctx::from_process().with_signature(cfg.signature_policy(cli.config.as_deref())?);
    let no_flags = SeverityOptions::default();
    match cli.command {
        Command::Lint { bundles, sev } => {
            let ov = cfg.overrides(&sev)?;
            on_bundles("lint", &bundles, |l| lint::run(&ctx, l, &ov))
        }
        Command::Render { bundle, opts } => {
            let mut r = on_bundles("render", &[bundle], |l| render::run(&ctx, l, &opts))?;
            if opts.out.is_none() {
                // Human output is the manifests themselves.
                r.raw_human = r.steps.first().and_then(|s| s.details.first()).map(|d| d.body.clone());
            }
            Ok(r)
        }
        Command::Digest { bundle } => on_bundles("digest", &[bundle], |l| digest::run(&ctx, l)),
        Command::Sign { bundle, opts } => on_bundles("sign", &[bundle], |l| sign::run(&ctx, l, &opts)),
        Command::Verify { bundles, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            on_bundles("verify", &bundles, |l| verify::run(&ctx, l, &opts, &ov))
        }
        Command::Publish { dir, opts } => Ok(one("publish", vec![publish::run(&ctx, &dir, &opts)?])),
        Command::Audit { root, opts } => audit::run(&ctx, &root, &opts, &cfg.overrides(&no_flags)?),
        Command::Report { cmd: ReportCmd::Merge { .. } } => {
            anyhow::bail!("`report merge` writes its report as it reads the shards': run it through `execute`")
        }
        Command::Report { cmd: ReportCmd::Show { report } } => crate::app::report::show(&ctx, &report),
        Command::Preflight { bundle, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            preflight::check(&opts)?;
            on_bundles("preflight", &[bundle], |l| preflight::run(&ctx, l, &opts, &ov))
        }
        Command::Canary { bundle, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            on_bundles("canary", &[bundle], |l| canary::run(&ctx, l, &opts, &ov))
        }
        Command::Run { pipeline, opts, sev } => {
            let inputs = crate::pipeline::Inputs {
                options: opts,
                overrides: cfg.overrides(&sev)?,
                verifier_image: ctx.env.verifier_image.clone(),
                change_policy: cfg.change_class.clone(),
            };
            crate::pipeline::run_file(&ctx, &pipeline, &inputs)
        }
        Command::Argocd { cmd } => argocd::run(&ctx, cmd, &cfg.overrides(&no_flags)?),
        Command::Watch { bundle, opts } => on_bundles("watch", &[bundle], |l| watch::run(&ctx, l, &opts)),
        Command::Revert { bundle, opts } => on_bundles("revert", &[bundle], |l| revert::run(&ctx, l, &opts, None)),
        Command::Promote { bundle, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            on_bundles("promote", &[bundle], |l| promote::run(&ctx, l, &opts, &ov, None))
        }
        Command::VerifyFiles { opts } => verify_files::run(&opts),
        Command::Codes => Ok(one("codes", codes::run())),
        Command::Explain { code } => Ok(one("explain", codes::explain(&code)?)),
        Command::Schema { kind } => {
            let s = match kind {
                SchemaKind::Bundle => schema::bundle(),
                SchemaKind::Pipeline => crate::pipeline::json_schema(schema::generator()),
            };
            let mut r = one("schema", schema::run(kind, &s));
            // Human output is the schema itself, as schemas/ holds it.
            r.raw_human = Some(schema::text(&s));
            Ok(r)
        }
    }
}

fn one(name: &str, steps: Vec<StepReport>) -> Report {
    let mut r = Report::new(name);
    for s in steps {
        r.push(s);
    }
    r
}
