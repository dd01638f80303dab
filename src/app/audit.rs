//! `audit`: every bundle under a tree against its store, incrementally, in
//! shards that any number of machines can run (`--shard K/N`), with a cache
//! that outlives the machine (`--cache DIR|URI`), and `report merge` to put
//! the shards back together.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::verify::{verify_loaded, AuditCache, AuditPass, CacheEntry};
use crate::adapters::blob::{self, BlobDir};
use crate::adapters::bundle_files::find_bundles;
use crate::adapters::pushgateway::Gateway;
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::audit::shard::{self, Item, ShardSpec};
use crate::diag::Diagnostic;
use crate::diag::Overrides;
use crate::options::{AlertOptions, AuditOptions, MergeOptions, VerifyOptions};
use crate::report::escape::path_name;
use crate::report::ShardInfo;
use crate::report::{Report, StepReport, Verdict};
use crate::yaml_guard::{json_from_slice, Limits};

/// Cache objects and shard reports are small; anything bigger is not ours.
pub(crate) const CACHE_OBJECT_LIMIT: u64 = 64 << 20;
pub(crate) const REPORT_LIMIT: u64 = 256 << 20;

const CACHE_SCHEMA: &str = "bundlegate.dev/audit-cache/v2";

/// `audit` over the tree at `root`: every bundle verified (trusting the
/// cache unless `deep`), the serving pass when asked, the metrics delivered
/// where asked. A bad `--shard` or alert destination is refused first.
pub(crate) fn run(ctx: &Ctx, root: &Path, o: &AuditOptions, ov: &Overrides) -> Result<Report> {
    let shard = match &o.shard {
        Some(s) => Some(
            shard::parse_shard(s, ctx.env.job_completion_index.as_deref())
                .map_err(|e| anyhow::anyhow!("--shard {e}"))?,
        ),
        None => None,
    };
    let run = AuditRun {
        root: root.to_path_buf(),
        deep: o.deep,
        cache: o.cache.clone(),
        shard,
        write_report: o.write_report.clone(),
    };
    check_alerts(&o.alerts)?;
    let mut r = ctx.try_block_on(audit(ctx, &run, &o.verify, ov))?;
    if o.serving {
        for s in ctx.try_block_on(super::serving::serving_audit(ctx, root))? {
            r.push(s);
        }
    }
    ctx.block_on(emit_metrics(ctx, &mut r, &o.alerts))?;
    Ok(r)
}

/// `report merge`: the shard reports joined, the metrics delivered where asked.
pub(crate) fn merge_reports(ctx: &Ctx, reports: &[String], o: &MergeOptions) -> Result<Report> {
    check_alerts(&o.alerts)?;
    let mut r = ctx.try_block_on(merge(ctx, reports, o.max_age.as_ref().map(|d| d.value)))?;
    ctx.block_on(emit_metrics(ctx, &mut r, &o.alerts))?;
    Ok(r)
}

/// One audit run, its shard parsed.
#[derive(Debug, Clone, Default)]
struct AuditRun {
    pub root: PathBuf,
    pub deep: bool,
    /// Folder, `.json` file (one machine only) or object-store prefix.
    pub cache: Option<String>,
    pub shard: Option<ShardSpec>,
    /// Also write the JSON report here (file or object-store URI).
    pub write_report: Option<String>,
}

/// The cache of one bundle, one object per bundle so concurrent shards never
/// overwrite each other's entries.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BundleCache {
    schema: String,
    bundle: String,
    objects: BTreeMap<String, CacheEntry>,
}

enum CacheStore {
    /// The legacy single file: fine on one machine, not shared by shards.
    File(PathBuf),
    Dir(BlobDir),
}

/// An opened [`CacheStore`]: the file's contents (and a note when it could
/// not be read), or the directory.
enum Cache {
    File(PathBuf, (AuditCache, Option<Diagnostic>)),
    Dir(BlobDir),
}

fn cache_object_name(bundle_id: &str) -> String {
    format!("{}.json", &crate::util::sha256_hex(bundle_id.as_bytes())[..32])
}

fn default_cache(cache_dir: Option<&Path>, root: &Path) -> Result<String> {
    let base = cache_dir.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".bundlegate-cache"));
    // The path's bytes: two roots are two caches (a lossy name made
    // `a\xff` and `a\xfe` share one).
    let key = crate::util::sha256_hex(std::path::absolute(root)?.as_os_str().as_encoded_bytes());
    Ok(base.join(format!("audit-{}", &key[..16])).display().to_string())
}

impl CacheStore {
    fn open(location: &str, sharded: bool) -> Result<CacheStore> {
        let loc = blob::location(location).context("--cache")?;
        match &loc {
            crate::bundle::storage_uri::Location::Local(p) if p.extension().is_some_and(|e| e == "json") => {
                if sharded {
                    bail!("--cache {location}: a single cache file cannot be shared by shards; give a folder or an object-store prefix (one object per bundle)");
                }
                Ok(CacheStore::File(p.clone()))
            }
            _ => Ok(CacheStore::Dir(BlobDir::at(&loc, location)?)),
        }
    }
}

/// Bundle id: its path relative to the audited tree, `/`-separated, so every
/// shard (whatever its working directory) names it the same way; from the
/// path's bytes, losslessly ([`path_name`]): two bundles are two ids, so two
/// shard assignments, two cache objects and two entries in the merge.
fn bundle_id(root: &Path, b: &Path) -> String {
    let rel = b.strip_prefix(root).unwrap_or(b);
    let s: Vec<&[u8]> = rel.components().map(|c| c.as_os_str().as_encoded_bytes()).collect();
    if s.is_empty() {
        b.file_name().map(|n| path_name(Path::new(n))).unwrap_or_default()
    } else {
        crate::report::escape::bytes_name(&s.join(&b'/'))
    }
}

fn git_commit(root: &Path) -> Option<String> {
    crate::adapters::git::head_commit(root)
}

async fn audit(ctx: &Ctx, o: &AuditRun, vo: &VerifyOptions, ov: &Overrides) -> Result<Report> {
    let started = Instant::now();
    if let Some(w) = &o.write_report {
        blob::file_location(w).context("--write-report")?;
    }
    let paths = find_bundles(&o.root)?;
    let root = if crate::adapters::local::is_file(&o.root) {
        o.root.parent().map(Path::to_path_buf).unwrap_or_default()
    } else {
        o.root.clone()
    };
    let mut r = Report::new("audit");
    if paths.is_empty() {
        let mut s = StepReport::new("audit", path_name(&o.root));
        s.verdict = Verdict::Error;
        s.summary = "no release bundles found under this path; nothing was audited".into();
        r.push(s);
        return Ok(r);
    }
    // Load every bundle: the assignment needs the declared bytes of all of
    // them, and a bundle that does not load still belongs to one shard.
    let loaded: Vec<(String, std::result::Result<Loaded, Box<StepReport>>)> =
        paths.iter().map(|p| (bundle_id(&root, p), super::load_or_step(p, "audit"))).collect();
    let items: Vec<Item> = loaded
        .iter()
        .map(|(id, l)| Item {
            id: id.clone(),
            bytes: l
                .as_ref()
                .map(|l| l.bundle.spec.model.artifacts.iter().fold(0u64, |a, x| a.saturating_add(x.size.unwrap_or(0))))
                .unwrap_or(0),
        })
        .collect();
    let spec = o.shard.unwrap_or(ShardSpec { index: 0, count: 1 });
    let assignment = shard::assign(&items, spec.count);
    let cache_loc = match &o.cache {
        Some(c) => c.clone(),
        None => default_cache(ctx.env.cache_dir.as_deref(), &o.root)?,
    };
    let store = CacheStore::open(&cache_loc, o.shard.is_some_and(|s| s.count > 1))?;
    // The file cache is read once and written back at the end; the
    // directory cache is read and written per bundle.
    let mut cache = match store {
        CacheStore::File(p) => {
            let loaded = load_file_cache(&p)?;
            Cache::File(p, loaded)
        }
        CacheStore::Dir(d) => Cache::Dir(d),
    };
    let mut owned = Vec::new();
    let mut owned_bytes = 0u64;
    for (i, (id, l)) in loaded.into_iter().enumerate() {
        if assignment[i] != spec.index {
            continue;
        }
        owned.push(id.clone());
        owned_bytes = owned_bytes.saturating_add(items[i].bytes);
        let l = match l {
            Ok(l) => l,
            Err(mut s) => {
                s.data["bundle"] = id.clone().into();
                r.push(*s);
                continue;
            }
        };
        let mut step = match &mut cache {
            Cache::File(_, (cache, note)) => {
                let mut s = verify_loaded(ctx, &l, vo, ov, Some(AuditPass { cache, deep: o.deep })).await;
                if let Some(n) = note.take() {
                    s.diagnostics.push(n);
                }
                s
            }
            Cache::Dir(d) => audit_one_with_dir(ctx, d, &id, &l, o.deep, vo, ov).await?,
        };
        step.step = "audit".into();
        // The merge reads coverage from this, not from the owned list alone.
        step.data["bundle"] = id.into();
        r.push(step);
    }
    if let Cache::File(p, (cache, _)) = &cache {
        cache.save(p)?;
    }
    if o.shard.is_some() {
        let mut commit = git_commit(&root);
        if commit.is_none() {
            commit = ctx.env.github_sha.clone();
        }
        let info = ShardInfo {
            index: spec.index,
            count: spec.count,
            tree: shard::tree_fingerprint(&items),
            commit,
            bundles_total: items.len(),
            owned,
            owned_bytes,
        };
        if info.owned.is_empty() {
            // A shard with nothing to do is normal (more shards than bundles);
            // its report still says so, and the merge accounts for it.
            let mut s = StepReport::new("audit", format!("shard {spec}"));
            s.verdict = Verdict::NotRun;
            s.summary = format!("shard {spec} owns none of the tree's {} bundles", items.len());
            r.push(s);
        }
        r.shard = Some(info);
    }
    r.duration_seconds = Some(started.elapsed().as_secs_f64());
    r.finished_at = Some(ctx.now().to_rfc3339());
    if let Some(w) = &o.write_report {
        let text = crate::report::escape::json(&serde_json::to_string_pretty(&r)?).into_owned();
        if let Err(e) = blob::write_location(w, text.into_bytes()).await {
            r.push(not_delivered("write-report", w, &e));
        }
    }
    Ok(r)
}

/// A local file, at most `limit` bytes; `None` when it does not exist.
fn read_bounded(p: &Path, limit: u64) -> Result<Option<Vec<u8>>> {
    // The one bounded, regular-file-only reader (a FIFO here would block).
    match crate::adapters::bundle_files::read_bytes(p, limit, "cache file") {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
    }
}

fn rebuilt_note(what: &str, why: &str) -> Diagnostic {
    crate::checks::verify::drift::cache_rebuilt(what, why)
}

/// A path in the cache that is not a regular file (a FIFO, a device, a
/// folder): refused unread by the one reader. Not a cache bundlegate wrote,
/// so the audit stops naming it instead of re-hashing around it.
fn refused_non_file(e: &anyhow::Error) -> bool {
    e.chain()
        .any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::InvalidInput))
}

/// The legacy file cache. Corrupt or foreign: start empty (re-hash), say so.
fn load_file_cache(p: &Path) -> Result<(AuditCache, Option<Diagnostic>)> {
    let empty = || AuditCache { version: 1, ..Default::default() };
    Ok(match read_bounded(p, CACHE_OBJECT_LIMIT * 4) {
        Ok(None) => (empty(), None),
        Ok(Some(b)) => match json_from_slice::<AuditCache>(&p.display().to_string(), &b, &Limits::WRITTEN) {
            Ok(c) if c.version == 1 => (c, None),
            Ok(c) => {
                (empty(), Some(rebuilt_note(&p.display().to_string(), &format!("unknown cache version {}", c.version))))
            }
            Err(e) => (empty(), Some(rebuilt_note(&p.display().to_string(), &format!("corrupt: {e:#}")))),
        },
        Err(e) if refused_non_file(&e) => return Err(e),
        Err(e) => (empty(), Some(rebuilt_note(&p.display().to_string(), &format!("{e:#}")))),
    })
}

async fn audit_one_with_dir(
    ctx: &Ctx,
    d: &BlobDir,
    id: &str,
    l: &Loaded,
    deep: bool,
    vo: &VerifyOptions,
    ov: &Overrides,
) -> Result<StepReport> {
    let name = cache_object_name(id);
    let shown = format!("{}/{name}", d.display.trim_end_matches('/'));
    let (mut cache, note) = match d.get(&name, CACHE_OBJECT_LIMIT).await {
        Ok(None) => (AuditCache { version: 1, ..Default::default() }, None),
        Ok(Some(b)) => match json_from_slice::<BundleCache>(&shown, &b, &Limits::WRITTEN) {
            Ok(c) if c.schema == CACHE_SCHEMA && c.bundle == id => {
                (AuditCache { version: 1, objects: c.objects }, None)
            }
            Ok(c) if c.schema != CACHE_SCHEMA => (
                AuditCache { version: 1, ..Default::default() },
                Some(rebuilt_note(&shown, &format!("foreign schema `{}`", c.schema))),
            ),
            Ok(c) => (
                AuditCache { version: 1, ..Default::default() },
                Some(rebuilt_note(&shown, &format!("it belongs to bundle `{}`", c.bundle))),
            ),
            Err(e) => (
                AuditCache { version: 1, ..Default::default() },
                Some(rebuilt_note(&shown, &format!("corrupt: {e:#}"))),
            ),
        },
        Err(e) if refused_non_file(&e) => return Err(e),
        // An unreadable shared cache costs time, never correctness: re-hash.
        Err(e) => (AuditCache { version: 1, ..Default::default() }, Some(rebuilt_note(&shown, &format!("{e:#}")))),
    };
    let mut s = verify_loaded(ctx, l, vo, ov, Some(AuditPass { cache: &mut cache, deep })).await;
    if let Some(n) = note {
        s.diagnostics.push(n);
    }
    // Only this bundle's own objects: entries of a prefix it no longer uses go.
    let uri = bundle::resolve_storage_uri(l);
    let keep = format!("{}/", uri.trim_end_matches('/'));
    let objects: BTreeMap<String, CacheEntry> =
        cache.objects.into_iter().filter(|(k, _)| k.starts_with(&keep)).collect();
    let body = serde_json::to_string(&BundleCache { schema: CACHE_SCHEMA.into(), bundle: id.to_string(), objects })?;
    d.put(&name, crate::report::escape::json(&body).into_owned().into_bytes()).await?;
    Ok(s)
}

/// `report merge`: shard reports (files, objects, or a prefix ending in `/`
/// holding them) → one report. Incomplete coverage is INCONCLUSIVE, never PASS.
async fn merge(ctx: &Ctx, inputs: &[String], max_age: Option<std::time::Duration>) -> Result<Report> {
    let mut named: Vec<(String, Vec<u8>)> = Vec::new();
    for i in inputs {
        let loc = blob::location(i)?;
        if i.ends_with('/')
            || matches!(&loc, crate::bundle::storage_uri::Location::Local(p) if crate::adapters::local::is_dir(p))
        {
            let d = BlobDir::at(&loc, i)?;
            let names = d.list(".json").await?;
            if names.is_empty() {
                bail!("{i}: no .json reports there");
            }
            for n in names {
                let b = d
                    .get(&n, REPORT_LIMIT)
                    .await?
                    .with_context(|| format!("{}/{n} vanished while merging", i.trim_end_matches('/')))?;
                named.push((format!("{}/{n}", i.trim_end_matches('/')), b));
            }
        } else {
            named.push((i.clone(), blob::read_location(i, REPORT_LIMIT).await?));
        }
    }
    let mut reports = Vec::new();
    for (name, bytes) in named {
        let r: Report = json_from_slice(&name, &bytes, &Limits::WRITTEN)
            .map_err(|e| anyhow::anyhow!("not a bundlegate report: {e:#}"))?;
        if r.schema != "bundlegate.dev/report/v1" || r.command != "audit" {
            bail!("{name}: not an audit report (schema `{}`, command `{}`)", r.schema, r.command);
        }
        reports.push((name, r));
    }
    let max_age = max_age.map(|d| chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX));
    Ok(crate::checks::audit::merge::merge_shards(reports, ctx.now(), max_age))
}

/// Refuse a bad alert destination before the audit runs, not after hours of
/// hashing.
fn check_alerts(a: &AlertOptions) -> Result<()> {
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
async fn emit_metrics(ctx: &Ctx, r: &mut Report, a: &AlertOptions) {
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
            r.push(not_delivered("metrics-file", p, &e));
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
            r.push(not_delivered("pushgateway", &shown, &e));
        }
    }
}

/// The Pushgateway job (grouping key) of the audit's metrics.
pub(crate) const PUSH_JOB: &str = "bundlegate_audit";

/// An output the audit could not deliver: ERROR (exit 2), next to findings
/// that are complete.
fn not_delivered(step: &str, target: &str, e: &anyhow::Error) -> StepReport {
    let mut s = StepReport::new(step, target);
    s.verdict = Verdict::Error;
    s.summary = format!("not delivered: {e:#} (the audit's findings in this report are complete)");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::os::unix::ffi::OsStrExt;

    /// A folder name of arbitrary bytes (Linux paths are bytes), drawn
    /// mostly from what lossy conversion and naive escaping confuse:
    /// invalid UTF-8, a backslash, `x`, hex digits, ESC, a valid `é`.
    fn component() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            4 => proptest::sample::select(&[b'a', b'\\', b'x', b'f', b'e', 0xff, 0xfe, 0xc3, 0xa9, 0x1b, b'%', b'"'][..]),
            1 => any::<u8>(),
        ];
        proptest::collection::vec(byte.prop_filter("a path component", |b| *b != b'/' && *b != 0), 1..5)
            .prop_filter("not . or ..", |c| c != b"." && c != b"..")
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// Bundles at distinct byte paths get distinct identities: audit
        /// id (the shard assignment's and the merge's), cache object,
        /// report target, default cache folder, metrics label; the metrics
        /// text holds each series once.
        #[test]
        fn distinct_byte_paths_give_distinct_identities_and_series(
            folders in proptest::collection::btree_set(proptest::collection::vec(component(), 1..3), 2..5),
        ) {
            let root = Path::new("/tree");
            let paths: Vec<PathBuf> = folders
                .iter()
                .map(|f| {
                    let mut p = root.to_path_buf();
                    for c in f {
                        p.push(std::ffi::OsStr::from_bytes(c));
                    }
                    p.join("release.yaml")
                })
                .collect();
            let ids: Vec<String> = paths.iter().map(|p| bundle_id(root, p)).collect();
            let objects: BTreeSet<String> = ids.iter().map(|i| cache_object_name(i)).collect();
            let mut r = Report::new("audit");
            for (i, p) in paths.iter().enumerate() {
                let mut s = *super::super::load_or_step(p, "audit").expect_err("no such file");
                s.verdict = if i % 2 == 0 { Verdict::Fail } else { Verdict::Pass };
                r.push(s);
            }
            let targets: BTreeSet<&str> = r.steps.iter().map(|s| s.target.as_str()).collect();
            prop_assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), paths.len(), "audit ids {:?}", ids);
            prop_assert_eq!(objects.len(), paths.len(), "cache objects");
            prop_assert_eq!(targets.len(), paths.len(), "report targets {:?}", targets);
            // Audited as roots of their own, each gets its own default cache.
            let caches: BTreeSet<String> =
                paths.iter().map(|p| default_cache(None, p.parent().unwrap()).unwrap()).collect();
            prop_assert_eq!(caches.len(), paths.len(), "default caches");
            let text = crate::report::metrics::audit_metrics(&r, 0).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let mut series = BTreeSet::new();
            for l in text.lines().filter(|l| !l.starts_with('#')) {
                let (key, _) = l.rsplit_once(' ').expect("name and value");
                prop_assert!(series.insert(key.to_string()), "series {} written twice:\n{}", key, text);
            }
        }
    }
}
