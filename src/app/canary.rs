//! `bundlegate canary`: the order of work, nothing decided here. The plan
//! (`checks::canary::plan`) says what to read; this file reads it — the
//! rollback target, the golden set against the candidate endpoint, the
//! queries to Prometheus (`adapters::prom`, answers read by `parse::prom`),
//! the rollback target's bytes — and hands it to `checks::canary`, which
//! judges and writes up the report (`report`, `walk`).

use anyhow::{Context, Result};

use crate::adapters::bundle_files::{self, FileKind, NamedFileError};
use crate::adapters::prom::{self, Prom};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::canary::decision::{self, RollbackTarget};
use crate::checks::canary::golden::{GoldenResult, GoldenRun, Paired};
use crate::checks::canary::plan::{CanaryPlan, Choices, Gathered, Judgment, TimelineAsk};
use crate::checks::canary::ramp::SplitPoint;
use crate::checks::canary::report::{self, Findings, Judged};
use crate::checks::canary::split::{self, Declared};
use crate::checks::canary::walk::{self, Walk};
use crate::checks::rollback::RollbackStatus;
use crate::diag::Overrides;
use crate::options::{CanaryOptions, VerifyOptions};
use crate::parse::prom as read;
use crate::report::StepReport;

pub(crate) fn run(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> Result<Vec<StepReport>> {
    Ok(vec![if args.steps {
        ctx.block_on_step("canary", &l.display, analyze_steps(ctx, l, args, ov))
    } else {
        ctx.block_on_step("canary", &l.display, analyze(ctx, l, args, ov))
    }])
}

/// The rollback target as loaded (or why it does not load): it names the
/// baseline, and it is the way back a regression is checked against.
type Previous<'a> = Option<(&'a bundle::Rollback, Result<Loaded, NamedFileError>)>;

/// One canary run: the plan, resolved once, the rollback target it was
/// resolved with, and what every read needs.
struct Run<'a> {
    ctx: &'a Ctx,
    l: &'a Loaded,
    ov: &'a Overrides,
    plan: CanaryPlan<'a>,
    prev: Previous<'a>,
    /// KServe's own split as git holds it (`--split`), or why none reads.
    split: Option<Result<Declared, String>>,
}

fn resolve<'a>(
    ctx: &'a Ctx,
    l: &'a Loaded,
    args: &CanaryOptions,
    ov: &'a Overrides,
) -> Result<Run<'a>, Box<StepReport>> {
    let split = match args.split.as_deref().map(|f| read_split(l, f).map(|s| s.declared(l))).transpose() {
        Ok(s) => s,
        Err(e) => return Err(Box::new(StepReport::error("canary", &l.display, &e))),
    };
    // Each arm by the labels KServe sets on its pods, unless told otherwise.
    let kserve = |pick: fn(&Declared) -> &str| {
        let d = split.as_ref()?.as_ref().ok()?;
        crate::checks::canary::providers::kserve_arm_selector(&d.kind, pick(d))
    };
    let (kserve_candidate, kserve_baseline) = (kserve(|d| d.candidate.as_str()), kserve(|d| d.baseline.as_str()));
    let prev = l.bundle.spec.rollback.as_ref().map(|rb| (rb, bundle_files::load_named_bundle(l, &rb.bundle)));
    let rollback =
        prev.as_ref().map(|(_, p)| p.as_ref().map(|p| p.bundle.metadata.version.clone()).map_err(|e| e.to_string()));
    let choices = Choices {
        prometheus: args.prometheus_url(),
        window: args.window.as_ref().map(|w| w.text.as_str()),
        mode: args.mode,
        candidate_selector: args.candidate_selector.as_deref().or(kserve_candidate.as_deref()),
        baseline_selector: args.baseline_selector.as_deref().or(kserve_baseline.as_deref()),
        endpoint: args.endpoint.as_deref(),
        baseline_endpoint: args.baseline_endpoint.as_deref(),
        golden_margin: args.golden_margin,
    };
    Ok(Run { ctx, l, ov, plan: CanaryPlan::resolve(l, &choices, rollback)?, prev, split })
}

/// KServe's split as git holds it: where the file is, and its objects (or
/// why they do not parse).
pub(crate) struct SplitFile {
    pub path: std::path::PathBuf,
    pub objects: Result<Vec<serde_json::Value>, String>,
}

impl SplitFile {
    /// The split the objects declare for `l`, or why none reads (BG312).
    pub(crate) fn declared(&self, l: &Loaded) -> Result<Declared, String> {
        self.objects.as_ref().map_err(String::clone).and_then(|o| split::declared(o, &l.digest))
    }
}

/// The split file the bundle names (`--split`), read and parsed. `Err`: it
/// cannot be read at all (outside the bundle's tree, missing, too large).
pub(crate) fn read_split(l: &Loaded, file: &str) -> Result<SplitFile> {
    let (path, text) = bundle_files::read_named_text(l, file, FileKind::Split)
        .map_err(|e| anyhow::anyhow!("traffic split file {file}: {e}"))?;
    let objects = crate::manifests::parse_stream(&text).map_err(|e| format!("{}: {e:#}", path.display()));
    Ok(SplitFile { path, objects })
}

fn unix_now(ctx: &Ctx) -> f64 {
    ctx.now().timestamp_micros() as f64 / 1e6
}

/// Judge the current split: gates over the window ending now.
pub(crate) async fn analyze(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    match resolve(ctx, l, args, ov) {
        Ok(r) => r.judge(&r.plan.current(unix_now(ctx)), true).await.report,
        Err(s) => *s,
    }
}

/// Judge every traffic step where the arms really held it (`walk`).
pub(crate) async fn analyze_steps(ctx: &Ctx, l: &Loaded, args: &CanaryOptions, ov: &Overrides) -> StepReport {
    match resolve(ctx, l, args, ov) {
        Ok(r) => r.walk_steps(unix_now(ctx)).await.unwrap_or_else(|s| *s),
        Err(s) => *s,
    }
}

impl Run<'_> {
    async fn walk_steps(&self, now: f64) -> Result<StepReport, Box<StepReport>> {
        let plan = &self.plan;
        // No Prometheus: the current window's report says why; shadow mode
        // has no split, so the current window is judged instead.
        if plan.prometheus.is_none() || plan.shadow {
            let s = self.judge(&plan.current(now), false).await.report;
            return Ok(if plan.prometheus.is_some() { walk::shadow(&plan.canary.steps, s) } else { s });
        }
        let tl = plan.timeline(now)?;
        let points = self.read_timeline(&tl).await.map_err(|e| walk::unread_timeline(&self.l.display, &e))?;
        let mut walk = Walk::new(self.l, self.ov, plan, tl, &points);
        while let Some(j) = walk.next_judgment() {
            walk.record(self.judge(&j, false).await)?;
        }
        Ok(walk.write_up())
    }

    /// Both arms' requests per resolution over the look-back horizon.
    async fn read_timeline(&self, tl: &TimelineAsk) -> Result<Vec<SplitPoint>> {
        let prom = Prom::new(self.ctx.http()?.clone(), self.plan.prometheus.as_deref().unwrap_or_default(), tl.now)?;
        let c = prom.query_range(&tl.candidate_query, tl.start, tl.now, tl.res as f64).await?;
        let b = prom.query_range(&tl.baseline_query, tl.start, tl.now, tl.res as f64).await?;
        Ok(read::split_points(&c, &b))
    }

    /// One judgment in its order: the golden set (it needs no Prometheus
    /// and its failures stand alone), the gates read from Prometheus, the
    /// rollback target when the situation needs it, then the write-up;
    /// `with_split`: the declared split against the arms' requests too.
    async fn judge(&self, j: &Judgment, with_split: bool) -> Judged {
        let golden = self.run_golden(j).await;
        let Some(url) = self.plan.prometheus.as_deref() else {
            return Judged::stopped(report::golden_only(self.l, &golden, self.ov));
        };
        let gathered = match self.gather(url, j).await {
            Ok(g) => g,
            Err(s) => return Judged::stopped(*s),
        };
        let requests = (gathered.traffic.candidate_requests, gathered.traffic.baseline_requests);
        let findings = Findings::assess(&self.plan, j, gathered, golden);
        let rollback = if findings.needs_rollback() { self.check_rollback().await } else { RollbackTarget::NotChecked };
        let mut judged = findings.write_up(self.l, self.ov, rollback);
        if let (true, Some(declared)) = (with_split, &self.split) {
            split::write_into(&mut judged.report, declared, requests.0, requests.1, self.ov);
        }
        judged
    }

    /// Every gate, then both arms' traffic, as the plan asks. `Err`: the
    /// step's ERROR (no baseline, no client, an unanswered query).
    async fn gather(&self, url: &str, j: &Judgment) -> Result<Gathered, Box<StepReport>> {
        let asks = self.plan.asks(j)?;
        let prom = self.ctx.http().and_then(|h| Prom::new(h.clone(), url, j.now));
        let prom = prom.map_err(|e| Box::new(StepReport::error("canary", &self.l.display, &e)))?;
        let read = async {
            let mut gates = Vec::new();
            for a in &asks.gates {
                gates.push(prom.gate(a).await?);
            }
            anyhow::Ok((gates, prom.scalars(&asks.traffic).await?))
        };
        let (gates, traffic) = read.await.map_err(|e| Box::new(report::unanswered(self.l, &e)))?;
        Ok(asks.gathered(gates, &traffic))
    }

    /// The way back for a version regression: judged as lint and revert
    /// do, then its bytes are verified.
    async fn check_rollback(&self) -> RollbackTarget {
        let status = self.prev.as_ref().map_or(RollbackStatus::NotDeclared, |(rb, p)| bundle_files::status_of(rb, p));
        if let Some(unusable) = decision::rollback_unusable(self.l, &status) {
            return unusable;
        }
        // Only a target that loaded resolves.
        let Some((rb, Ok(p))) = &self.prev else { return RollbackTarget::NotChecked };
        let v = super::verify::verify_loaded(self.ctx, p, &VerifyOptions::quiet(), &Overrides::default(), None).await;
        decision::rollback_verified(&rb.bundle, p, &v)
    }

    /// The golden set against the candidate, and against the baseline too
    /// when the plan names its endpoint (the paired gate).
    async fn run_golden(&self, j: &Judgment) -> GoldenRun {
        let (file, endpoint) = match self.plan.golden(j) {
            Ok(x) => x,
            Err(not_sent) => return not_sent,
        };
        let l = self.l;
        let res: Result<GoldenRun> = async {
            let (path, text) = bundle_files::read_named_text(l, file, FileKind::GoldenSet)
                .with_context(|| format!("golden set {file}"))?;
            let samples =
                crate::parse::golden::parse_golden(&text).with_context(|| format!("golden set {}", path.display()))?;
            let http = self.ctx.http()?;
            let name = &l.bundle.metadata.name;
            let judged = |answers: Vec<_>| -> Vec<GoldenResult> {
                samples
                    .iter()
                    .cloned()
                    .zip(answers)
                    .map(|(sample, answer)| GoldenResult::judge(sample, answer))
                    .collect()
            };
            let candidate = judged(prom::golden_calls(http, endpoint, name, &samples).await?);
            Ok(match self.plan.baseline_endpoint.as_deref() {
                None => GoldenRun::Ran(candidate),
                Some(b) => {
                    let baseline = judged(prom::golden_calls(http, b, name, &samples).await.context("the baseline")?);
                    GoldenRun::Paired(Paired { candidate, baseline, margin: self.plan.golden_margin })
                }
            })
        }
        .await;
        res.unwrap_or_else(|e| GoldenRun::Error(format!("{e:#}")))
    }
}
