//! `audit`: every bundle under a tree against its store, incrementally, in
//! shards that any number of machines can run (`--shard K/N`), with a cache
//! that outlives the machine (`--cache DIR|URI`); `report merge`
//! (`audit_merge`) puts the shards back together. The plan, the shares and the audit's own steps
//! are `checks::audit`'s; this reads the tree, the cache and the store, and
//! writes the outputs.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};

use super::audit_cache::Cache;
use super::spooled::Spooled;
use crate::adapters::blob;
use crate::adapters::bundle_files::{find_bundles, weigh};
use crate::adapters::pushgateway::Gateway;
use crate::app::ctx::Ctx;
use crate::checks::audit::steps::{self as plan, AuditInputs, AuditPlan, Shares};
use crate::diag::Overrides;
use crate::options::{AlertOptions, AuditOptions, VerifyOptions};
use crate::report::format::Format;
use crate::report::Report;

/// `audit` over the tree at `root`: every bundle verified (trusting the
/// cache unless `deep`), the serving pass when asked, the metrics delivered
/// where asked. A bad `--shard` or alert destination is refused first. The
/// report whole in memory (a pipeline's audit step).
pub(crate) fn run(ctx: &Ctx, root: &Path, o: &AuditOptions, ov: &Overrides) -> Result<Report> {
    let (r, steps) = run_spooled(ctx, root, o, ov)?;
    steps.into_report(r)
}

/// [`run`], the bundles' steps left in a scratch file (`spooled`): the
/// report holds only what its verdict and metrics read of them, so a tree
/// of 10,000 bundles (tables of every artifact) is not held in memory.
pub(crate) fn run_spooled(ctx: &Ctx, root: &Path, o: &AuditOptions, ov: &Overrides) -> Result<(Report, Spooled)> {
    // The default cache is named after the tree wherever it is audited from.
    let absolute_root = if o.cache.is_none() { Some(std::path::absolute(root)?) } else { None };
    let plan = AuditPlan::resolve(AuditInputs {
        shard: o.shard.as_deref(),
        completion_index: ctx.env.job_completion_index.as_deref(),
        deep: o.verify.deep,
        cache: o.cache.as_deref(),
        cache_dir: ctx.env.cache_dir.as_deref(),
        absolute_root: absolute_root.as_deref(),
        write_report: o.write_report.as_deref(),
    })
    .map_err(|e| anyhow::anyhow!(e))?;
    check_alerts(&o.alerts)?;
    let (mut r, steps) = ctx.try_block_on(audit(ctx, root, &plan, &o.verify, ov))?;
    if o.serving {
        for s in ctx.try_block_on(super::serving::serving_audit(ctx, root))? {
            r.push(s);
        }
    }
    ctx.block_on(emit_metrics(ctx, &mut r, &o.alerts))?;
    Ok((r, steps))
}

/// The audit's report (the bundles' steps slim, then its own) and the
/// bundles' steps whole in a scratch file.
async fn audit(
    ctx: &Ctx,
    root: &Path,
    plan: &AuditPlan,
    vo: &VerifyOptions,
    ov: &Overrides,
) -> Result<(Report, Spooled)> {
    let started = Instant::now();
    if let Some(w) = &plan.write_report {
        blob::file_location(w).context("--write-report")?;
    }
    let paths = find_bundles(root)?;
    let tree = if crate::adapters::local::is_file(root) {
        root.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        root.to_path_buf()
    };
    let mut r = Report::new("audit");
    let mut steps = Spooled::new()?;
    if paths.is_empty() {
        r.push(plan::nothing_found(root));
        return Ok((r, steps));
    }
    // Every shard weighs every bundle from its file alone (length, sha256:
    // no parsing) and loads only the bundles it owns.
    let sharded = plan.shard.is_some();
    let items =
        paths.iter().map(|p| plan::item(plan::bundle_id(&tree, p), if sharded { weigh(p) } else { None })).collect();
    let shares = Shares::assign(items, plan.spec());
    let mut cache = Cache::open(&plan.cache, plan.shared_cache())?;
    let mut owned_bytes = 0u64;
    for (i, p) in paths.iter().enumerate() {
        if !shares.owns(i) {
            continue;
        }
        let id = plan::bundle_id(&tree, p);
        match super::load_or_step(p, "audit") {
            Ok(l) => {
                owned_bytes = owned_bytes.saturating_add(plan::declared_bytes(&l));
                steps.push(&plan::audited(cache.audit_one(ctx, &id, &l, plan.deep, vo, ov).await?, &id))?;
                // A signature that stopped verifying (key rotated out) is drift too.
                if let Some(sig) = super::signature::with_store(ctx, &l, ov).await {
                    steps.push(&plan::beside_audit(sig, &id))?;
                }
            }
            Err(s) => steps.push(&plan::audited(*s, &id))?,
        }
    }
    cache.finish()?;
    for s in steps.slim() {
        r.push(s.clone());
    }
    if sharded {
        let commit = crate::adapters::git::head_commit(&tree).or_else(|| ctx.env.github_sha.clone());
        let (info, idle) = shares.account(commit, owned_bytes);
        if let Some(s) = idle {
            r.push(s);
        }
        r.shard = Some(info);
    }
    r.duration_seconds = Some(started.elapsed().as_secs_f64());
    r.finished_at = Some(ctx.now().to_rfc3339());
    if let Some(w) = &plan.write_report {
        // The JSON report as `format_report` writes it, not redacted (the
        // merge redacts what it prints), read back from the scratch file.
        let text = steps.write(&r, Format::Json, false, false)?;
        if let Err(e) = blob::write_location_from(w, text).await {
            r.push(plan::not_delivered("write-report", w, &format!("{e:#}")));
        }
    }
    Ok((r, steps))
}

/// Refuse a bad alert destination before the audit runs, not after hours of
/// hashing.
pub(super) fn check_alerts(a: &AlertOptions) -> Result<()> {
    if let Some(p) = &a.metrics_file {
        blob::file_location(p).context("--metrics-file")?;
    }
    if let Some(u) = &a.pushgateway {
        Gateway::parse(u)?;
    }
    Ok(())
}

/// Write/push the audit's Prometheus metrics where the user asked. A
/// destination that fails never costs the audit its findings: the failure
/// is one more ERROR step of the report, which is still printed. Metrics
/// that would hold a series twice (two bundles under one label: one could
/// hide the other's drift) go nowhere: each destination is that ERROR,
/// naming both sources.
pub(super) async fn emit_metrics(ctx: &Ctx, r: &mut Report, a: &AlertOptions) {
    if a.metrics_file.is_none() && a.pushgateway.is_none() {
        return;
    }
    let text = crate::report::metrics::audit_metrics(r, ctx.now().timestamp());
    if let Some(p) = &a.metrics_file {
        // Written whole under another name, then renamed: the textfile
        // collector never reads half a file.
        let written = match &text {
            Ok(t) => blob::write_location(p, t.clone().into_bytes()).await,
            Err(e) => Err(anyhow::Error::new(e.clone())),
        };
        if let Err(e) = written {
            r.push(plan::not_delivered("metrics-file", p, &format!("{e:#}")));
        }
    }
    if let Some(u) = &a.pushgateway {
        let pushed = match Gateway::parse(u).and_then(|g| Ok((g, ctx.http()?))) {
            Ok((g, http)) => match &text {
                Ok(t) => g.push(http, PUSH_JOB, t.clone()).await.map_err(|e| (g.shown(), e)),
                Err(e) => Err((g.shown(), anyhow::Error::new(e.clone()))),
            },
            Err(e) => Err(("--pushgateway".to_string(), e)),
        };
        if let Err((shown, e)) = pushed {
            r.push(plan::not_delivered("pushgateway", &shown, &format!("{e:#}")));
        }
    }
}

/// The Pushgateway job (grouping key) of the audit's metrics.
pub(crate) const PUSH_JOB: &str = "bundlegate_audit";
