//! The audit's plan, resolved once from the options before any bundle is
//! read (which shard this run is, where its cache lives), the tree's
//! bundles shared out among the shards, and each step the audit writes of
//! its own (nothing found, a shard that owns nothing, an output not
//! delivered). `app::audit` only reads the tree, the cache and the store,
//! and writes the outputs.

use std::path::{Path, PathBuf};

use super::shard::{self, Item, ShardSpec};
use crate::bundle::Loaded;
use crate::report::escape::path_name;
use crate::report::{ShardInfo, StepReport, Verdict};

/// Every derived default of an audit, decided before anything is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AuditPlan {
    /// `--shard`, parsed; none: this run owns the whole tree.
    pub shard: Option<ShardSpec>,
    pub deep: bool,
    /// Folder, `.json` file (one machine only) or object-store prefix:
    /// `--cache`, else a folder of its own per audited tree.
    pub cache: String,
    /// Also write the JSON report here (file or object-store URI).
    pub write_report: Option<String>,
}

/// The options an audit is resolved from, as plain values.
pub(crate) struct AuditInputs<'a> {
    pub shard: Option<&'a str>,
    /// `JOB_COMPLETION_INDEX`, for `--shard auto/N`.
    pub completion_index: Option<&'a str>,
    pub deep: bool,
    pub cache: Option<&'a str>,
    /// `BUNDLEGATE_CACHE_DIR`, where default caches go.
    pub cache_dir: Option<&'a Path>,
    /// The audited tree as an absolute path (read only when no `--cache`
    /// is given: it names the default cache).
    pub absolute_root: Option<&'a Path>,
    pub write_report: Option<&'a str>,
}

impl AuditPlan {
    /// `Err`: a `--shard` that is no shard (the tool refuses before work).
    pub(crate) fn resolve(i: AuditInputs<'_>) -> Result<AuditPlan, String> {
        let shard = match i.shard {
            Some(s) => Some(shard::parse_shard(s, i.completion_index).map_err(|e| format!("--shard {e}"))?),
            None => None,
        };
        let cache = match (i.cache, i.absolute_root) {
            (Some(c), _) => c.to_string(),
            (None, root) => default_cache(i.cache_dir, root.unwrap_or(Path::new(""))),
        };
        Ok(AuditPlan { shard, deep: i.deep, cache, write_report: i.write_report.map(String::from) })
    }

    /// The shard this run is (`0/1` when not sharded).
    pub(crate) fn spec(&self) -> ShardSpec {
        self.shard.unwrap_or(ShardSpec { index: 0, count: 1 })
    }

    /// More than one machine shares the cache: a single cache file cannot be.
    pub(crate) fn shared_cache(&self) -> bool {
        self.shard.is_some_and(|s| s.count > 1)
    }
}

/// The default cache of the tree at `absolute_root`: one per tree, named
/// from the path's bytes (a lossy name made `a\xff` and `a\xfe` share one).
pub(crate) fn default_cache(cache_dir: Option<&Path>, absolute_root: &Path) -> String {
    let base = cache_dir.map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".bundlegate-cache"));
    let key = crate::util::sha256_hex(absolute_root.as_os_str().as_encoded_bytes());
    base.join(format!("audit-{}", &key[..16])).display().to_string()
}

/// Bundle id: its path relative to the audited tree, `/`-separated, so every
/// shard (whatever its working directory) names it the same way; from the
/// path's bytes, losslessly ([`path_name`]): two bundles are two ids, so two
/// shard assignments, two cache objects and two entries in the merge.
pub(crate) fn bundle_id(root: &Path, b: &Path) -> String {
    let rel = b.strip_prefix(root).unwrap_or(b);
    let s: Vec<&[u8]> = rel.components().map(|c| c.as_os_str().as_encoded_bytes()).collect();
    if s.is_empty() {
        b.file_name().map(|n| path_name(Path::new(n))).unwrap_or_default()
    } else {
        crate::report::escape::bytes_name(&s.join(&b'/'))
    }
}

/// The cache object of one bundle (one per bundle, so concurrent shards
/// never overwrite each other's entries).
pub(crate) fn cache_object_name(bundle_id: &str) -> String {
    format!("{}.json", &crate::util::sha256_hex(bundle_id.as_bytes())[..32])
}

/// One bundle as the assignment sees it, from what the shard read of its
/// file without parsing it: its length and sha256, or nothing when it could
/// not be read (weight 0; the owner's audit reports why).
pub(crate) fn item(id: String, read: Option<(u64, [u8; 32])>) -> Item {
    match read {
        Some((bytes, sha256)) => Item { id, bytes, sha256: Some(sha256) },
        None => Item { id, bytes: 0, sha256: None },
    }
}

/// The artifact bytes a loaded bundle declares (its owner's `ownedBytes`).
pub(crate) fn declared_bytes(l: &Loaded) -> u64 {
    l.bundle.spec.model.artifacts.iter().fold(0u64, |a, x| a.saturating_add(x.size.unwrap_or(0)))
}

/// The tree's bundles shared out among the shards: every shard computes the
/// same assignment from the ids and weights of every bundle ([`item`]).
pub(crate) struct Shares {
    items: Vec<Item>,
    assignment: Vec<u32>,
    spec: ShardSpec,
}

impl Shares {
    pub(crate) fn assign(items: Vec<Item>, spec: ShardSpec) -> Shares {
        let assignment = shard::assign(&items, spec.count);
        Shares { items, assignment, spec }
    }

    /// This run audits the `i`-th bundle.
    pub(crate) fn owns(&self, i: usize) -> bool {
        self.assignment[i] == self.spec.index
    }

    /// The shard's account of itself (what the merge proves coverage
    /// from), and the step of a shard that owns nothing: normal with more
    /// shards than bundles, and still said. `owned_bytes`: the artifact
    /// bytes its own bundles declare (it parsed those, and no others).
    pub(crate) fn account(&self, commit: Option<String>, owned_bytes: u64) -> (ShardInfo, Option<StepReport>) {
        let spec = self.spec;
        let mine: Vec<&Item> = self.items.iter().enumerate().filter(|(i, _)| self.owns(*i)).map(|(_, x)| x).collect();
        let info = ShardInfo {
            index: spec.index,
            count: spec.count,
            tree: shard::tree_fingerprint(&self.items),
            commit,
            bundles_total: self.items.len(),
            owned: mine.iter().map(|x| x.id.clone()).collect(),
            owned_bytes,
        };
        let idle = info.owned.is_empty().then(|| {
            let mut s = StepReport::new("audit", format!("shard {spec}"));
            s.verdict = Verdict::NotRun;
            s.summary = format!("shard {spec} owns none of the tree's {} bundles", self.items.len());
            s
        });
        (info, idle)
    }
}

/// One bundle's step in the audit: named `audit`, and carrying its id (the
/// merge reads coverage from it, not from the owned list alone).
pub(crate) fn audited(mut s: StepReport, id: &str) -> StepReport {
    s.step = "audit".into();
    s.data["bundle"] = id.into();
    s
}

/// Another step about an audited bundle (its signature): named for the
/// bundle, but not an `audit` step, so a shard's coverage counts the
/// bundle once (`report merge`).
pub(crate) fn beside_audit(mut s: StepReport, id: &str) -> StepReport {
    s.data["bundle"] = id.into();
    s
}

/// No bundle under the audited path: an ERROR, not a PASS over nothing.
pub(crate) fn nothing_found(root: &Path) -> StepReport {
    let mut s = StepReport::new("audit", path_name(root));
    s.verdict = Verdict::Error;
    s.summary = "no release bundles found under this path; nothing was audited".into();
    s
}

/// An output the audit could not deliver (`why`): ERROR (exit 2), next to
/// findings that are complete.
pub(crate) fn not_delivered(step: &str, target: &str, why: &str) -> StepReport {
    let mut s = StepReport::new(step, target);
    s.verdict = Verdict::Error;
    s.summary = format!("not delivered: {why} (the audit's findings in this report are complete)");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use std::os::unix::ffi::OsStrExt;

    fn inputs<'a>(shard: Option<&'a str>, cache: Option<&'a str>, root: Option<&'a Path>) -> AuditInputs<'a> {
        AuditInputs {
            shard,
            completion_index: Some("2"),
            deep: true,
            cache,
            cache_dir: Some(Path::new("/c")),
            absolute_root: root,
            write_report: Some("out.json"),
        }
    }

    #[test]
    fn the_plan_parses_the_shard_and_names_the_cache_once() {
        let p = AuditPlan::resolve(inputs(Some("auto/4"), Some("s3://b/cache/"), None)).unwrap();
        assert_eq!(p.shard, Some(ShardSpec { index: 2, count: 4 }));
        assert_eq!((p.spec(), p.shared_cache()), (ShardSpec { index: 2, count: 4 }, true));
        assert_eq!((p.cache.as_str(), p.deep, p.write_report.as_deref()), ("s3://b/cache/", true, Some("out.json")));
        let p = AuditPlan::resolve(inputs(None, None, Some(Path::new("/tree")))).unwrap();
        assert_eq!((p.shard, p.spec(), p.shared_cache()), (None, ShardSpec { index: 0, count: 1 }, false));
        assert_eq!(p.cache, default_cache(Some(Path::new("/c")), Path::new("/tree")));
        assert!(p.cache.starts_with("/c/audit-") && p.cache.len() == "/c/audit-".len() + 16, "{}", p.cache);
        assert!(!AuditPlan::resolve(inputs(Some("0/1"), Some("c.json"), None)).unwrap().shared_cache());
        assert_eq!(
            AuditPlan::resolve(inputs(Some("4/4"), None, None)).unwrap_err(),
            "--shard `4/4`: the shard index 4 is out of range: shards are numbered 0..4"
        );
        assert_eq!(
            default_cache(None, Path::new("/t")),
            format!(".bundlegate-cache/audit-{}", &crate::util::sha256_hex(b"/t")[..16])
        );
    }

    #[test]
    fn the_shard_accounts_for_what_it_owns() {
        let tree = || {
            vec![
                item("a".into(), Some((5, [1; 32]))),
                item("b".into(), None),
                item("c".into(), Some((u64::MAX, [2; 32]))),
            ]
        };
        let whole = Shares::assign(tree(), ShardSpec { index: 0, count: 1 });
        assert!((0..3).all(|i| whole.owns(i)));
        let (info, idle) = whole.account(Some("abc".into()), 42);
        assert!(idle.is_none());
        assert_eq!((info.index, info.count, info.bundles_total), (0, 1, 3));
        assert_eq!(
            (info.owned, info.owned_bytes, info.commit.as_deref()),
            (vec!["a".into(), "b".into(), "c".into()], 42, Some("abc"))
        );
        let items = [
            Item { id: "a".into(), bytes: 5, sha256: Some([1; 32]) },
            Item { id: "b".into(), bytes: 0, sha256: None },
            Item { id: "c".into(), bytes: u64::MAX, sha256: Some([2; 32]) },
        ];
        assert_eq!(info.tree, shard::tree_fingerprint(&items));
        // Split in two, every bundle is owned by exactly one shard.
        let halves: Vec<Shares> = (0..2).map(|k| Shares::assign(tree(), ShardSpec { index: k, count: 2 })).collect();
        for i in 0..3 {
            assert_eq!(halves.iter().filter(|s| s.owns(i)).count(), 1);
        }
        let owned: usize = halves.iter().map(|s| s.account(None, 0).0.owned.len()).sum();
        assert_eq!(owned, 3);
        // More shards than bundles: some own nothing, and say so.
        let idle: Vec<StepReport> = (0..8)
            .filter_map(|k| Shares::assign(tree(), ShardSpec { index: k, count: 8 }).account(None, 0).1)
            .collect();
        assert_eq!(idle.len(), 5);
        let s = &idle[0];
        assert_eq!((s.step.as_str(), s.verdict), ("audit", Verdict::NotRun));
        assert!(s.target.starts_with("shard ") && s.target.ends_with("/8"), "{}", s.target);
        assert_eq!(s.summary, format!("{} owns none of the tree's 3 bundles", s.target));
    }

    #[test]
    fn the_declared_bytes_are_the_artifacts_sizes_summed_without_overflow() {
        let mut l = crate::bundle::example();
        for a in &mut l.bundle.spec.model.artifacts {
            a.size = None;
        }
        assert_eq!(declared_bytes(&l), 0);
        l.bundle.spec.model.artifacts[0].size = Some(5);
        assert_eq!(declared_bytes(&l), 5);
        assert!(l.bundle.spec.model.artifacts.len() > 1);
        l.bundle.spec.model.artifacts[1].size = Some(u64::MAX);
        assert_eq!(declared_bytes(&l), u64::MAX);
    }

    #[test]
    fn the_audits_own_steps() {
        let mut s = StepReport::new("verify", "x");
        s.data = serde_json::json!({"storageUri": "u"});
        let s = audited(s, "m/release.yaml");
        assert_eq!(
            (s.step.as_str(), &s.data),
            ("audit", &serde_json::json!({"storageUri": "u", "bundle": "m/release.yaml"}))
        );
        assert_eq!(audited(StepReport::new("audit", "x"), "i").data, serde_json::json!({"bundle": "i"}));
        let s = nothing_found(Path::new("models/"));
        assert_eq!((s.step.as_str(), s.target.as_str(), s.verdict), ("audit", "models/", Verdict::Error));
        assert_eq!(s.summary, "no release bundles found under this path; nothing was audited");
        let s = not_delivered("pushgateway", "http://pg", "refused");
        assert_eq!((s.step.as_str(), s.target.as_str(), s.verdict), ("pushgateway", "http://pg", Verdict::Error));
        assert_eq!(s.summary, "not delivered: refused (the audit's findings in this report are complete)");
    }

    #[test]
    fn a_bundle_is_named_by_its_path_under_the_tree() {
        assert_eq!(bundle_id(Path::new("/t"), Path::new("/t/m/v2/release.yaml")), "m/v2/release.yaml");
        // The tree is the bundle itself: its file name.
        assert_eq!(bundle_id(Path::new("/t/release.yaml"), Path::new("/t/release.yaml")), "release.yaml");
        assert_eq!(cache_object_name("m"), format!("{}.json", &crate::util::sha256_hex(b"m")[..32]));
    }

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
        /// report target (a bundle's steps name its path), default cache
        /// folder, metrics label; the metrics text holds each series once.
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
            let mut r = crate::report::Report::new("audit");
            for (i, p) in paths.iter().enumerate() {
                let mut s = StepReport::new("audit", path_name(p));
                s.verdict = if i % 2 == 0 { Verdict::Fail } else { Verdict::Pass };
                r.push(s);
            }
            let targets: BTreeSet<&str> = r.steps.iter().map(|s| s.target.as_str()).collect();
            prop_assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), paths.len(), "audit ids {:?}", ids);
            prop_assert_eq!(objects.len(), paths.len(), "cache objects");
            prop_assert_eq!(targets.len(), paths.len(), "report targets {:?}", targets);
            // Audited as roots of their own, each gets its own default cache.
            let caches: BTreeSet<String> =
                paths.iter().map(|p| default_cache(None, p.parent().unwrap())).collect();
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
