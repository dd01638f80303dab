//! The command line → typed options → one `app` command. This is the only
//! place that knows both clap's types and the commands; `pipeline` builds
//! the same options from a pipeline file.

use anyhow::Result;

use crate::app::ctx::Ctx;
use crate::app::{self, argocd, audit, canary, pod_verify, preflight, revert, serving, verify, watch};
use crate::cli::{Cli, Command, ReportCmd, SeverityArgs};
use crate::config::Config;
use crate::diag::Code;
use crate::manifests::TemplateSource;
use crate::options::RenderOptions;
use crate::options::{AlertOptions, CanaryOptions, RevertOptions, VerifyOptions, WatchOptions};
use crate::report::{Detail, Report, StepReport};

#[expect(clippy::too_many_lines, reason = "to be split into named steps (issue #28)")]
pub fn run(cli: Cli) -> Result<Report> {
    let cfg = Config::load(cli.config.as_deref())?;
    // One context for the whole run: one runtime, the environment read once.
    let ctx = Ctx::from_process();
    match cli.command {
        Command::Lint { bundles, sev } => {
            let ov = cfg.overrides(&sev)?;
            let mut r = Report::new("lint");
            for b in &bundles {
                r.push(app::lint_step(b, &ov));
            }
            Ok(r)
        }
        Command::Render { bundle, out, templates, verifier_image } => {
            let ro =
                RenderOptions { templates: templates.map(TemplateSource::Dir).unwrap_or_default(), verifier_image };
            let mut r = Report::new("render");
            let step = app::render_step(&bundle, &ro, out.as_deref());
            if out.is_none() {
                r.raw_human = step.details.first().map(|d| d.body.clone());
            }
            r.push(step);
            Ok(r)
        }
        Command::Digest { bundle } => {
            let l = crate::adapters::bundle_files::load(&bundle)?;
            let mut r = Report::new("digest");
            let mut s = StepReport::new("digest", &l.display);
            s.summary = l.digest.clone();
            s.data = serde_json::json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version});
            r.push(s);
            Ok(r)
        }
        Command::Verify { bundles, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            let opts = VerifyOptions::from(opts);
            let mut r = Report::new("verify");
            for b in &bundles {
                r.push(ctx.block_on(verify::verify_step(&ctx, b, &opts, &ov, None))?);
            }
            Ok(r)
        }
        Command::Publish { dir, to, bundle, jobs } => {
            let mut r = Report::new("publish");
            r.push(ctx.try_block_on(verify::publish(&ctx, &dir, &to, &bundle, jobs))?);
            Ok(r)
        }
        Command::Audit { root, deep, cache, shard, write_report, alerts, serving, opts } => {
            let shard = match shard {
                Some(s) => Some(
                    crate::checks::shard::parse_shard(&s, ctx.env.job_completion_index.as_deref())
                        .map_err(|e| anyhow::anyhow!("--shard {e}"))?,
                ),
                None => None,
            };
            let o = audit::AuditOptions { root: root.clone(), deep, cache, shard, write_report };
            let alerts = AlertOptions::from(alerts);
            audit::check_alerts(&alerts)?;
            let mut r = ctx.try_block_on(audit::audit(
                &ctx,
                &o,
                &VerifyOptions::from(opts),
                &cfg.overrides(&SeverityArgs::default())?,
            ))?;
            if serving {
                for s in ctx.try_block_on(serving::serving_audit(&ctx, &root))? {
                    r.push(s);
                }
            }
            ctx.block_on(audit::emit_metrics(&ctx, &mut r, &alerts))?;
            Ok(r)
        }
        Command::Report { cmd: ReportCmd::Merge { reports, max_age, alerts } } => {
            let alerts = AlertOptions::from(alerts);
            audit::check_alerts(&alerts)?;
            let mut r = ctx.try_block_on(audit::merge(&ctx, &reports, max_age.map(|d| d.value)))?;
            ctx.block_on(audit::emit_metrics(&ctx, &mut r, &alerts))?;
            Ok(r)
        }
        Command::Preflight { bundle, snapshot, live, sev } => {
            let ov = cfg.overrides(&sev)?;
            if snapshot.is_none() && !live {
                anyhow::bail!("preflight needs cluster state: --snapshot FILE or --live");
            }
            let mut r = Report::new("preflight");
            r.push(preflight::run(&ctx, &bundle, snapshot.as_deref(), live, &ov));
            Ok(r)
        }
        Command::Canary { bundle, args, sev } => {
            let ov = cfg.overrides(&sev)?;
            let mut r = Report::new("canary");
            r.push(canary::run(&ctx, &bundle, &CanaryOptions::from(args), &ov));
            Ok(r)
        }
        Command::Run { pipeline, bundles, snapshot, base, head, repo, prometheus, sev } => {
            let ov = cfg.overrides(&sev)?;
            let inputs = crate::pipeline::Inputs {
                bundles,
                snapshot,
                base,
                head,
                repo,
                prometheus,
                overrides: ov,
                verifier_image: ctx.env.verifier_image.clone(),
            };
            crate::pipeline::run_file(&ctx, &pipeline, &inputs)
        }
        Command::Argocd { cmd } => argocd::run(&ctx, cmd.into(), &cfg.overrides(&SeverityArgs::default())?),
        Command::Watch { bundle, args } => watch::watch(&ctx, &bundle, &WatchOptions::from(args)),
        Command::Revert { bundle, args } => revert::revert(&ctx, &bundle, &RevertOptions::from(args)),
        Command::VerifyFiles { manifest_env, root, mode, termination_log, marker, ready, wait, stay, threads } => {
            pod_verify::run(&pod_verify::Opts {
                manifest_env,
                root,
                mode,
                termination_log,
                marker,
                ready,
                wait,
                stay,
                threads,
            })
        }
        Command::Codes => {
            let mut r = Report::new("codes");
            let mut s = StepReport::new("codes", "bundlegate");
            s.summary = format!("{} diagnostic codes", Code::ALL.len());
            s.tables.push(crate::report::Table {
                title: String::new(),
                columns: vec!["code".into(), "name".into(), "family".into(), "default".into()],
                rows: Code::ALL
                    .iter()
                    .map(|c| {
                        let i = c.info();
                        vec![i.code.into(), i.name.into(), i.family.into(), i.default_severity.to_string()]
                    })
                    .collect(),
            });
            s.details.push(Detail {
                title: "documentation".into(),
                lang: "markdown".into(),
                body: crate::diag::markdown_docs(),
            });
            r.push(s);
            Ok(r)
        }
        Command::Explain { code } => {
            let c = Code::from_str_any(&code)
                .ok_or_else(|| anyhow::anyhow!("unknown diagnostic code `{code}` (see `bundlegate codes`)"))?;
            let i = c.info();
            let mut r = Report::new("explain");
            let mut s = StepReport::new("explain", i.code);
            s.summary = format!("{} `{}` ({}, default {}): {}", i.code, i.name, i.family, i.default_severity, i.why);
            r.push(s);
            Ok(r)
        }
    }
}
