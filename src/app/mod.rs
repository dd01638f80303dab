//! Wire each command to loading, adapters and checks; every command returns
//! one [`Report`].

pub mod argocd;
pub mod audit;
pub mod canary;
pub mod pr;
pub mod pod_verify;
pub mod preflight;
pub mod verify;
pub mod watch;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::bundle::{self, Loaded};
use crate::checks::lint;
use crate::cli::{Cli, Command, SeverityArgs};
use crate::config::Config;
use crate::diag::{Code, Overrides};
use crate::render::{Renderer, TemplateSource};
use crate::report::{Detail, Report, StepReport, Verdict};

pub fn run(cli: Cli) -> Result<Report> {
    let cfg = Config::load(cli.config.as_deref())?;
    let rt = || tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime");
    match cli.command {
        Command::Lint { bundles, sev } => {
            let ov = cfg.overrides(&sev)?;
            let mut r = Report::new("lint");
            for b in &bundles {
                r.push(lint_step(b, &ov));
            }
            Ok(r)
        }
        Command::Render { bundle, out, templates } => {
            let src = templates.map(TemplateSource::Dir).unwrap_or_default();
            let mut r = Report::new("render");
            let step = render_step(&bundle, &src, out.as_deref());
            if out.is_none() {
                r.raw_human = step.details.first().map(|d| d.body.clone());
            }
            r.push(step);
            Ok(r)
        }
        Command::Digest { bundle } => {
            let l = bundle::load(&bundle)?;
            let mut r = Report::new("digest");
            let mut s = StepReport::new("digest", &l.display);
            s.summary = l.digest.clone();
            s.data = serde_json::json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version});
            r.push(s);
            Ok(r)
        }
        Command::Verify { bundles, opts, sev } => {
            let ov = cfg.overrides(&sev)?;
            let rt = rt()?;
            let mut r = Report::new("verify");
            for b in &bundles {
                r.push(rt.block_on(verify::verify_step(b, &opts, &ov, None)));
            }
            Ok(r)
        }
        Command::Publish { dir, to, bundle, jobs } => {
            let rt = rt()?;
            let mut r = Report::new("publish");
            r.push(rt.block_on(verify::publish(&dir, &to, &bundle, jobs))?);
            Ok(r)
        }
        Command::Audit { root, deep, cache, shard, write_report, alerts, serving, opts } => {
            let rt = rt()?;
            let shard = match shard {
                Some(s) => Some(crate::checks::shard::parse_shard(&s, std::env::var("JOB_COMPLETION_INDEX").ok().as_deref()).map_err(|e| anyhow::anyhow!("--shard {e}"))?),
                None => None,
            };
            let o = audit::AuditOptions { root: root.clone(), deep, cache, shard, write_report };
            let mut r = rt.block_on(audit::audit(&o, &opts, &cfg.overrides(&SeverityArgs::default())?))?;
            if serving {
                for s in rt.block_on(watch::serving_audit(&root))? {
                    r.push(s);
                }
            }
            rt.block_on(audit::emit_metrics(&r, &alerts))?;
            Ok(r)
        }
        Command::Report { cmd: crate::cli::ReportCmd::Merge { reports, max_age, alerts } } => {
            let max_age = match max_age {
                Some(s) => Some(crate::util::parse_duration(&s).ok_or_else(|| anyhow::anyhow!("--max-age `{s}` is not a duration (e.g. 6h, 90m)"))?),
                None => None,
            };
            let rt = rt()?;
            let r = rt.block_on(audit::merge(&reports, max_age))?;
            rt.block_on(audit::emit_metrics(&r, &alerts))?;
            Ok(r)
        }
        Command::Preflight { bundle, snapshot, live, sev } => {
            let ov = cfg.overrides(&sev)?;
            if snapshot.is_none() && !live {
                anyhow::bail!("preflight needs cluster state: --snapshot FILE or --live");
            }
            let mut r = Report::new("preflight");
            r.push(preflight::run(&bundle, snapshot.as_deref(), live, &ov));
            Ok(r)
        }
        Command::Canary { bundle, args, sev } => {
            let ov = cfg.overrides(&sev)?;
            let mut r = Report::new("canary");
            r.push(canary::run(&bundle, &args, &ov));
            Ok(r)
        }
        Command::Run { pipeline, bundles, snapshot, base, head, repo, prometheus, sev } => {
            let ov = cfg.overrides(&sev)?;
            let inputs = crate::pipeline::Inputs { bundles, snapshot, base, head, repo, prometheus, overrides: ov };
            crate::pipeline::run_file(&pipeline, &inputs)
        }
        Command::Argocd { cmd } => argocd::run(cmd, &cfg.overrides(&SeverityArgs::default())?),
        Command::Watch { bundle, args } => watch::watch(&bundle, &args),
        Command::Revert { bundle, args } => watch::revert(&bundle, &args),
        Command::VerifyFiles { manifest_env, root, mode, termination_log, marker, ready, wait, stay, threads } => {
            let wait = crate::util::parse_duration(&wait).ok_or_else(|| anyhow::anyhow!("--wait `{wait}` is not a duration like 30s or 10m"))?;
            pod_verify::run(&pod_verify::Opts { manifest_env, root, mode, termination_log, marker, ready, wait, stay, threads })
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
            s.details.push(Detail { title: "documentation".into(), lang: "markdown".into(), body: crate::diag::markdown_docs() });
            r.push(s);
            Ok(r)
        }
        Command::Explain { code } => {
            let c = Code::from_str_any(&code).ok_or_else(|| anyhow::anyhow!("unknown diagnostic code `{code}` (see `bundlegate codes`)"))?;
            let i = c.info();
            let mut r = Report::new("explain");
            let mut s = StepReport::new("explain", i.code);
            s.summary = format!("{} `{}` ({}, default {}): {}", i.code, i.name, i.family, i.default_severity, i.why);
            r.push(s);
            Ok(r)
        }
    }
}

/// Load a bundle or produce the Error step that says why (file:line:col: field).
pub fn load_or_step(path: &Path, step: &str) -> std::result::Result<Loaded, StepReport> {
    bundle::load(path).map_err(|e| load_error(path, step, e))
}

/// [`load_or_step`] for text read elsewhere (a bundle as committed in git);
/// `path` still anchors relative references and names the file.
pub fn parse_or_step(path: &Path, text: &str, step: &str) -> std::result::Result<Loaded, StepReport> {
    bundle::parse(&path.display().to_string(), path, text.to_string()).map_err(|e| load_error(path, step, e))
}

fn load_error(path: &Path, step: &str, e: bundle::LoadError) -> StepReport {
    let mut s = StepReport::new(step, path.display().to_string());
    s.verdict = Verdict::Error;
    s.summary = e.to_string();
    s
}

pub fn lint_loaded(l: &Loaded, ov: &Overrides) -> StepReport {
    let rb = crate::adapters::bundle_files::rollback_status(l);
    let mut s = StepReport::new("lint", &l.display);
    s.diagnostics = ov.apply(lint::lint(l, &rb));
    s.verdict = s.verdict_from_diagnostics();
    s.summary = format!(
        "{} error(s), {} warning(s); release {} {}",
        s.count(crate::report::Severity::Error),
        s.count(crate::report::Severity::Warning),
        l.bundle.metadata.version,
        l.digest
    );
    s.data = serde_json::json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version});
    s
}

pub fn lint_step(path: &Path, ov: &Overrides) -> StepReport {
    match load_or_step(path, "lint") {
        Ok(l) => lint_loaded(&l, ov),
        Err(s) => s,
    }
}

pub fn render_step(path: &Path, src: &TemplateSource, out: Option<&Path>) -> StepReport {
    let l = match load_or_step(path, "render") {
        Ok(l) => l,
        Err(s) => return s,
    };
    render_loaded(&l, src, out)
}

pub fn render_loaded(l: &Loaded, src: &TemplateSource, out: Option<&Path>) -> StepReport {
    let res = Renderer::new(src).and_then(|r| r.render(l)).and_then(|rendered| {
        let written: Option<PathBuf> = match out {
            Some(dir) => Some(crate::render::write_out(&rendered, l, dir)?),
            None => None,
        };
        Ok((rendered, written))
    });
    match res {
        Ok((rendered, written)) => {
            let mut s = StepReport::new("render", &l.display);
            let kinds: Vec<String> = rendered.objects.iter().filter_map(|o| o.get("kind").and_then(|k| k.as_str()).map(String::from)).collect();
            s.summary = match &written {
                Some(p) => format!("{} → {}", kinds.join(", "), p.display()),
                None => format!("{} ({})", kinds.join(", "), l.bundle.spec.serving.format.as_str()),
            };
            s.data = serde_json::json!({"objects": rendered.objects.len(), "kinds": kinds, "releaseDigest": l.digest, "written": written});
            s.details.push(Detail { title: format!("manifests for {}", l.display), lang: "yaml".into(), body: rendered.yaml });
            s
        }
        Err(e) => StepReport::error("render", &l.display, &e),
    }
}
