//! Which shard audits which bundle, and whether a set of shard reports covers
//! one tree exactly once. Pure: every shard computes the same answer from the
//! tree alone, so no coordinator is needed, and from what it costs almost
//! nothing to read of every bundle (its id and its file's length and sha256):
//! a shard parses only the bundles it owns.
//!
//! Assignment is consistent hashing with bounded loads: bundles are placed
//! heaviest first, each on the first shard of its own rendezvous ranking whose
//! load stays under `(1 + SLACK) × total / N`. Rendezvous ranking keeps a
//! bundle on the same shard when others come and go (adding one bundle moves
//! few others); the load bound keeps shards balanced by weight. A bundle
//! heavier than the bound goes to the least-loaded shard: it cannot be split,
//! so it sets the floor for the slowest shard.
//!
//! The weight is the bundle file's length. With a warm cache an audit's cost
//! per bundle is its artifact count (one identity check and one cache entry
//! each), and the bundle file grows by one entry per artifact, so the length
//! measures the work without parsing. It says nothing of artifact bytes: a
//! cold or `--deep` audit of one 140 GB model is not balanced by it. Sizes a
//! previous run recorded in the shared cache are not used either: the cache
//! changes while the shards run, and two shards that read it at different
//! moments would not agree on the assignment.
//!
//! The bound: with `W` the total weight and `w` the heaviest bundle, no shard
//! ends above `W/N + max(SLACK × W/N, w)`; when no bundle weighs more than
//! `SLACK × W/N`, none ends above `(1 + SLACK) × W/N`. (A bundle that fits
//! nowhere goes to the least-loaded shard, which holds at most the mean.)

use std::fmt;

use sha2::{Digest, Sha256};

/// Headroom over the mean load before a shard counts as full. Small enough to
/// keep max/mean near 1, large enough that one added bundle rarely pushes a
/// shard over and cascades moves.
pub(crate) const SLACK: f64 = 0.10;

/// The most shards an audit can be split into (a Kubernetes Indexed Job allows
/// 100,000 completions; far beyond what one tree needs).
pub(crate) const MAX_SHARDS: u32 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ShardSpec {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for ShardSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Parse `K/N` (0 ≤ K < N ≤ MAX_SHARDS); `auto/N` takes K from `completion_index`
/// (the caller passes `JOB_COMPLETION_INDEX` of a Kubernetes Indexed Job).
pub(crate) fn parse_shard(s: &str, completion_index: Option<&str>) -> Result<ShardSpec, String> {
    let (k, n) = s.split_once('/').ok_or_else(|| format!("`{s}`: expected K/N (e.g. 0/4) or auto/N"))?;
    let count: u32 = n.trim().parse().map_err(|_| format!("`{s}`: shard count `{n}` is not a whole number"))?;
    if count == 0 || count > MAX_SHARDS {
        return Err(format!("`{s}`: shard count must be 1..={MAX_SHARDS}"));
    }
    let (k, from) = if k.trim() == "auto" {
        match completion_index {
            Some(v) => (v.trim().to_string(), "JOB_COMPLETION_INDEX"),
            None => return Err(format!("`{s}`: auto needs JOB_COMPLETION_INDEX (set by a Kubernetes Indexed Job)")),
        }
    } else {
        (k.trim().to_string(), "the shard index")
    };
    let index: u32 = k.parse().map_err(|_| format!("`{s}`: {from} `{k}` is not a whole number"))?;
    if index >= count {
        return Err(format!("`{s}`: {from} {index} is out of range: shards are numbered 0..{count}"));
    }
    Ok(ShardSpec { index, count })
}

/// One bundle as every shard sees it without parsing it: its id (path
/// relative to the audited tree, `/`-separated, named from the path's bytes
/// losslessly, so two bundles are two ids), its weight (the bundle file's
/// length in bytes) and its file's sha256 (`None` when it could not be read:
/// its owner's audit says why).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub id: String,
    pub bytes: u64,
    pub sha256: Option<[u8; 32]>,
}

fn score(id: &str, shard: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(id.as_bytes());
    h.update([0]);
    h.update(shard.to_be_bytes());
    let d = h.finalize();
    u64::from_be_bytes([d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]])
}

/// The shard of every item, in the order given. Deterministic in the set of
/// items (not their order); `count` must be ≥ 1.
pub fn assign(items: &[Item], count: u32) -> Vec<u32> {
    let count = count.max(1);
    let n = count as usize;
    // u128 sums: 10,000 bundles of u64::MAX bytes still cannot overflow.
    let total: u128 = items.iter().map(|i| i.bytes as u128).sum();
    let mut order: Vec<usize> = (0..items.len()).collect();
    // Largest first; ties by id so the order never depends on the input order.
    order.sort_by(|&a, &b| items[b].bytes.cmp(&items[a].bytes).then_with(|| items[a].id.cmp(&items[b].id)));
    // Giants (bigger than a fair share of what remains) get a shard each; the
    // bound for everything else is computed without them, so the small
    // bundles spread over the other shards instead of piling up. The last
    // free shard is never taken: a bundle cannot exceed (1 + SLACK) × the
    // remaining bytes, which include its own.
    let (mut rest, mut free) = (total, n);
    for &i in &order {
        let b = items[i].bytes as u128;
        if (b as f64) > (rest as f64 / free as f64) * (1.0 + SLACK) {
            rest -= b;
            free -= 1;
        } else {
            break;
        }
    }
    let bound = ((rest as f64 / free as f64) * (1.0 + SLACK)).ceil() as u128;
    let mut load = vec![0u128; n];
    let mut out = vec![0u32; items.len()];
    let mut ranking: Vec<(u64, u32)> = Vec::with_capacity(n);
    for i in order {
        let it = &items[i];
        ranking.clear();
        ranking.extend((0..count).map(|s| (score(&it.id, s), s)));
        ranking.sort_unstable_by(|a, b| b.cmp(a));
        let fits = ranking.iter().map(|&(_, s)| s).find(|&s| load[s as usize] + it.bytes as u128 <= bound);
        let s = fits.unwrap_or_else(|| {
            // Nothing fits (an item above the bound): least loaded, ties by ranking.
            ranking.iter().map(|&(_, s)| s).min_by_key(|&s| load[s as usize]).unwrap_or(0)
        });
        load[s as usize] += it.bytes as u128;
        out[i] = s;
    }
    out
}

/// The identity of a tree for sharding: sha256 over the sorted (id, length,
/// file sha256) list. Shards of the same tree state agree on it; a shard
/// that saw another commit (a bundle added, any byte of a bundle file
/// changed) does not. An id never holds a NUL byte (it is a path), so the
/// separator and the fixed-size fields after it cannot run into the next id.
pub(crate) fn tree_fingerprint(items: &[Item]) -> String {
    let mut v: Vec<&Item> = items.iter().collect();
    v.sort_by(|a, b| a.id.cmp(&b.id));
    let mut h = Sha256::new();
    for i in v {
        h.update(i.id.as_bytes());
        h.update([0]);
        h.update(i.bytes.to_be_bytes());
        match &i.sha256 {
            Some(d) => {
                h.update([1]);
                h.update(d);
            }
            None => h.update([0]),
        }
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

// What a shard says about itself is part of the report format.
use crate::report::ShardInfo;

/// Why a set of shard reports does not make one complete audit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CoverageProblem {
    NotSharded {
        report: usize,
    },
    CountsDiffer {
        counts: Vec<u32>,
    },
    TreesDiffer {
        trees: Vec<String>,
    },
    CommitsDiffer {
        commits: Vec<String>,
    },
    Duplicate {
        index: u32,
        reports: Vec<usize>,
    },
    Missing {
        indices: Vec<u32>,
    },
    /// A bundle claimed by two shards, or a shard that owns bundles the others
    /// do not account for (shards computed by different versions of the rule).
    OwnershipOverlap {
        bundle: String,
    },
    OwnershipIncomplete {
        owned: usize,
        total: usize,
    },
}

impl fmt::Display for CoverageProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoverageProblem::NotSharded { report } => {
                write!(f, "report #{report} is not a sharded audit report (no shard section)")
            }
            CoverageProblem::CountsDiffer { counts } => {
                write!(f, "shard reports disagree on the number of shards: {counts:?}")
            }
            CoverageProblem::TreesDiffer { trees } => {
                write!(f, "shard reports come from different trees: {}", trees.join(", "))
            }
            CoverageProblem::CommitsDiffer { commits } => {
                write!(f, "shard reports come from different commits: {}", commits.join(", "))
            }
            CoverageProblem::Duplicate { index, reports } => {
                write!(f, "shard {index} appears {} times (reports {reports:?})", reports.len())
            }
            CoverageProblem::Missing { indices } => {
                write!(f, "missing shard(s) {indices:?}: their bundles were not audited")
            }
            CoverageProblem::OwnershipOverlap { bundle } => {
                write!(f, "bundle `{bundle}` is owned by more than one shard")
            }
            CoverageProblem::OwnershipIncomplete { owned, total } => {
                write!(f, "the shards own {owned} of the tree's {total} bundles")
            }
        }
    }
}

/// Check that `shards` (one per report, `None` for a report without a shard
/// section) cover one tree state exactly once. Empty means complete.
pub(crate) fn coverage(shards: &[Option<&ShardInfo>]) -> Vec<CoverageProblem> {
    let mut problems = Vec::new();
    let mut infos = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        match s {
            Some(s) => infos.push((i, *s)),
            None => problems.push(CoverageProblem::NotSharded { report: i }),
        }
    }
    if infos.is_empty() {
        return problems;
    }
    let mut counts: Vec<u32> = infos.iter().map(|(_, s)| s.count).collect();
    counts.sort_unstable();
    counts.dedup();
    if counts.len() > 1 {
        problems.push(CoverageProblem::CountsDiffer { counts });
        return problems;
    }
    let mut trees: Vec<String> = infos.iter().map(|(_, s)| s.tree.clone()).collect();
    trees.sort();
    trees.dedup();
    if trees.len() > 1 {
        problems.push(CoverageProblem::TreesDiffer { trees });
    }
    let mut commits: Vec<String> = infos.iter().filter_map(|(_, s)| s.commit.clone()).collect();
    commits.sort();
    commits.dedup();
    if commits.len() > 1 {
        problems.push(CoverageProblem::CommitsDiffer { commits });
    }
    let count = counts[0];
    let mut by_index: std::collections::BTreeMap<u32, Vec<usize>> = Default::default();
    for (i, s) in &infos {
        by_index.entry(s.index).or_default().push(*i);
    }
    for (index, reports) in &by_index {
        if reports.len() > 1 {
            problems.push(CoverageProblem::Duplicate { index: *index, reports: reports.clone() });
        }
    }
    let missing: Vec<u32> = (0..count).filter(|k| !by_index.contains_key(k)).collect();
    if !missing.is_empty() {
        problems.push(CoverageProblem::Missing { indices: missing });
    }
    if problems.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        for (_, s) in &infos {
            for b in &s.owned {
                if !seen.insert(b.as_str()) {
                    problems.push(CoverageProblem::OwnershipOverlap { bundle: b.clone() });
                }
            }
        }
        let total = infos[0].1.bundles_total;
        if problems.is_empty() && seen.len() != total {
            problems.push(CoverageProblem::OwnershipIncomplete { owned: seen.len(), total });
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(v: &[(&str, u64)]) -> Vec<Item> {
        v.iter().map(|(id, b)| Item { id: id.to_string(), bytes: *b, sha256: None }).collect()
    }

    fn loads(items: &[Item], a: &[u32], n: u32) -> Vec<u128> {
        let mut l = vec![0u128; n as usize];
        for (i, s) in a.iter().enumerate() {
            l[*s as usize] += items[i].bytes as u128;
        }
        l
    }

    #[test]
    fn parse_shard_forms() {
        assert_eq!(parse_shard("0/4", None), Ok(ShardSpec { index: 0, count: 4 }));
        assert_eq!(parse_shard("3/4", None), Ok(ShardSpec { index: 3, count: 4 }));
        assert_eq!(parse_shard("auto/4", Some("2")), Ok(ShardSpec { index: 2, count: 4 }));
        for bad in ["4/4", "0/0", "-1/4", "1", "a/4", "1/x", "0/10001", "18446744073709551616/2"] {
            assert!(parse_shard(bad, None).is_err(), "{bad}");
        }
        assert!(parse_shard("auto/4", None).unwrap_err().contains("JOB_COMPLETION_INDEX"));
        assert!(parse_shard("auto/4", Some("4")).unwrap_err().contains("out of range"));
        // The count's bound is inclusive; a spec prints as it parses.
        assert_eq!(parse_shard(&format!("9999/{MAX_SHARDS}"), None), Ok(ShardSpec { index: 9999, count: MAX_SHARDS }));
        assert!(parse_shard(&format!("0/{}", MAX_SHARDS + 1), None).unwrap_err().contains("shard count must be"));
        assert_eq!(ShardSpec { index: 3, count: 4 }.to_string(), "3/4");
    }

    #[test]
    fn every_item_lands_in_exactly_one_shard_whatever_the_input_order() {
        let mut it: Vec<Item> = (0..200)
            .map(|i| Item {
                id: format!("models/m{i}/release.yaml"),
                bytes: (i as u64 * 7919) % 1000 + 1,
                sha256: None,
            })
            .collect();
        let a = assign(&it, 4);
        assert!(a.iter().all(|s| *s < 4));
        let map: std::collections::BTreeMap<String, u32> = it.iter().zip(&a).map(|(i, s)| (i.id.clone(), *s)).collect();
        it.reverse();
        let b = assign(&it, 4);
        for (i, s) in it.iter().zip(&b) {
            assert_eq!(map[&i.id], *s, "{} moved when only the order changed", i.id);
        }
    }

    #[test]
    fn one_huge_model_does_not_drag_the_small_ones_with_it() {
        let mut v = vec![("big/release.yaml".to_string(), 140_000_000_000u64)];
        v.extend((0..50).map(|i| (format!("small{i}/release.yaml"), 1_000_000_000u64)));
        let it: Vec<Item> = v.into_iter().map(|(id, bytes)| Item { id, bytes, sha256: None }).collect();
        let a = assign(&it, 4);
        let l = loads(&it, &a, 4);
        let big = a[0] as usize;
        assert_eq!(l[big], 140_000_000_000, "the big model's shard takes nothing else: {l:?}");
        // The other 50 GB spread over the three other shards within the bound.
        for (s, x) in l.iter().enumerate() {
            if s != big {
                assert!(*x > 0 && *x <= 20_000_000_000, "{l:?}");
            }
        }
    }

    #[test]
    fn balanced_by_bytes_and_stable_when_one_bundle_is_added() {
        let it: Vec<Item> = (0..1000)
            .map(|i| Item { id: format!("m{i}"), bytes: 1_000_000 + (i as u64 * 104_729) % 50_000_000, sha256: None })
            .collect();
        let a = assign(&it, 8);
        let l = loads(&it, &a, 8);
        let mean = l.iter().sum::<u128>() as f64 / 8.0;
        let max = *l.iter().max().unwrap() as f64;
        assert!(max / mean <= 1.0 + SLACK + 0.01, "max/mean {}", max / mean);
        let mut more = it.clone();
        more.push(Item { id: "new".into(), bytes: 2_000_000, sha256: None });
        let b = assign(&more, 8);
        let moved = (0..it.len()).filter(|&i| a[i] != b[i]).count();
        assert!(moved <= it.len() / 10, "{moved} of {} bundles moved after adding one small bundle", it.len());
        // Removing the largest: the rest keep their own ranking's shard (2
        // of 1,000 move; filling shards in one fixed order moves 20).
        let largest = (0..it.len()).max_by_key(|&i| it[i].bytes).unwrap();
        let fewer: Vec<Item> = it.iter().enumerate().filter(|(i, _)| *i != largest).map(|(_, x)| x.clone()).collect();
        let c = assign(&fewer, 8);
        let kept: Vec<u32> = (0..it.len()).filter(|&i| i != largest).map(|i| a[i]).collect();
        let moved = kept.iter().zip(&c).filter(|(x, y)| x != y).count();
        assert!(moved <= it.len() / 100, "{moved} of {} bundles moved after removing the largest", it.len());
    }

    /// The module's placement rule, replayed step by step on any tree:
    /// giants (largest first, each above 1.1 × a fair share of what remains)
    /// sit alone; every other item goes to the first shard of its own
    /// ranking with room under 1.1 × the fair share of the rest, or, when
    /// none has room, to the least-loaded shard.
    fn placement_holds(it: &[Item], n: u32) -> Result<(), String> {
        let a = assign(it, n);
        let mut order: Vec<usize> = (0..it.len()).collect();
        order.sort_by(|&x, &y| it[y].bytes.cmp(&it[x].bytes).then_with(|| it[x].id.cmp(&it[y].id)));
        let total: u128 = it.iter().map(|i| u128::from(i.bytes)).sum();
        let (mut rest, mut free, mut giants) = (total, n as usize, Vec::new());
        for &i in &order {
            let b = u128::from(it[i].bytes);
            if free > 1 && b as f64 > rest as f64 / free as f64 * 1.1 {
                giants.push(i);
                rest -= b;
                free -= 1;
            } else {
                break;
            }
        }
        let bound = (rest as f64 / free as f64 * 1.1).ceil() as u128;
        let mut load = vec![0u128; n as usize];
        for &i in &order {
            let b = u128::from(it[i].bytes);
            let mut ranking: Vec<u32> = (0..n).collect();
            ranking.sort_by_key(|&s| std::cmp::Reverse((score(&it[i].id, s), s)));
            let want = match ranking.iter().find(|&&s| load[s as usize] + b <= bound) {
                Some(&s) => s,
                None => *ranking.iter().min_by_key(|&&s| load[s as usize]).unwrap(),
            };
            if a[i] != want {
                return Err(format!("{} went to shard {} where its ranking says {want}", it[i].id, a[i]));
            }
            if giants.contains(&i) && load[want as usize] != 0 {
                return Err(format!("giant {} shares shard {want}", it[i].id));
            }
            load[want as usize] += b;
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(500))]

        #[test]
        fn placement_is_the_documented_one(
            sizes in proptest::collection::vec(proptest::prop_oneof![6 => 1u64..1_000, 1 => 1_000u64..100_000, 1 => proptest::strategy::Just(0u64)], 0..60),
            n in 1u32..9,
        ) {
            let it: Vec<Item> = sizes.iter().enumerate().map(|(i, b)| Item { id: format!("m{i}"), bytes: *b, sha256: None }).collect();
            proptest::prop_assert_eq!(placement_holds(&it, n), Ok(()));
        }
    }

    #[test]
    fn zero_and_enormous_sizes_do_not_overflow() {
        let it = items(&[("a", u64::MAX), ("b", u64::MAX), ("c", 0), ("d", u64::MAX)]);
        let a = assign(&it, 2);
        assert_eq!(a.len(), 4);
        assert_eq!(assign(&[], 3), Vec::<u32>::new());
        assert_eq!(assign(&it, 1), vec![0, 0, 0, 0]);
    }

    fn info(index: u32, count: u32, tree: &str, owned: &[&str], total: usize) -> ShardInfo {
        ShardInfo {
            index,
            count,
            tree: tree.into(),
            commit: None,
            bundles_total: total,
            owned: owned.iter().map(|s| s.to_string()).collect(),
            owned_bytes: 0,
        }
    }

    #[test]
    fn coverage_is_complete_only_for_one_tree_every_shard_once() {
        let a = info(0, 2, "t", &["x"], 2);
        let b = info(1, 2, "t", &["y"], 2);
        assert!(coverage(&[Some(&a), Some(&b)]).is_empty());
        assert!(matches!(coverage(&[Some(&a)])[..], [CoverageProblem::Missing { .. }]));
        assert!(coverage(&[Some(&a), Some(&a.clone()), Some(&b)])
            .iter()
            .any(|p| matches!(p, CoverageProblem::Duplicate { index: 0, .. })));
        let other = info(1, 2, "u", &["y"], 2);
        assert!(coverage(&[Some(&a), Some(&other)]).iter().any(|p| matches!(p, CoverageProblem::TreesDiffer { .. })));
        let three = info(1, 3, "t", &["y"], 2);
        assert!(matches!(coverage(&[Some(&a), Some(&three)])[..], [CoverageProblem::CountsDiffer { .. }]));
        let overlap = info(1, 2, "t", &["x"], 2);
        assert!(coverage(&[Some(&a), Some(&overlap)])
            .iter()
            .any(|p| matches!(p, CoverageProblem::OwnershipOverlap { .. })));
        assert!(matches!(coverage(&[Some(&a), None])[..], [CoverageProblem::NotSharded { report: 1 }, ..]));
        let mut c1 = a.clone();
        c1.commit = Some("aaa".into());
        let mut c2 = b.clone();
        c2.commit = Some("bbb".into());
        assert!(coverage(&[Some(&c1), Some(&c2)]).iter().any(|p| matches!(p, CoverageProblem::CommitsDiffer { .. })));
        // Shards that all name the same commit (or one names none) agree.
        c2.commit = Some("aaa".into());
        assert!(coverage(&[Some(&c1), Some(&c2)]).is_empty());
        assert!(coverage(&[Some(&c1), Some(&b)]).is_empty());
    }

    /// The tree's identity is its (id, length, sha256) list whatever the
    /// order: a bundle added, renamed, resized or edited in place is another
    /// tree; the same list in another order is the same one.
    #[test]
    fn the_tree_fingerprint_is_the_sorted_id_length_and_digest_list() {
        let t = tree_fingerprint(&items(&[("a", 1), ("b", 2)]));
        assert!(t.starts_with("sha256:") && t.len() == 7 + 64, "{t}");
        assert_eq!(t, tree_fingerprint(&items(&[("b", 2), ("a", 1)])));
        for other in [&[("a", 1), ("b", 3)][..], &[("a", 1), ("c", 2)], &[("a", 1)], &[("a", 1), ("b", 2), ("c", 0)]] {
            assert_ne!(t, tree_fingerprint(&items(other)), "{other:?}");
        }
        // The separator keeps `ab` + `c` apart from `a` + `bc`.
        assert_ne!(tree_fingerprint(&items(&[("ab", 0)])), tree_fingerprint(&items(&[("a", 0), ("b", 0)])));
        // One byte of a bundle file changed, its length the same: another tree.
        let mut edited = items(&[("a", 1), ("b", 2)]);
        edited[1].sha256 = Some([7; 32]);
        let e = tree_fingerprint(&edited);
        assert_ne!(t, e);
        edited[1].sha256 = Some([8; 32]);
        assert_ne!(e, tree_fingerprint(&edited));
    }

    /// What `report merge` prints for each reason the shards are not one
    /// audit: the reason in words, with the numbers behind it.
    #[test]
    fn each_coverage_problem_says_what_is_wrong() {
        let cases = [
            (CoverageProblem::NotSharded { report: 2 }, "report #2 is not a sharded audit report"),
            (CoverageProblem::CountsDiffer { counts: vec![2, 3] }, "disagree on the number of shards: [2, 3]"),
            (CoverageProblem::TreesDiffer { trees: vec!["t".into(), "u".into()] }, "different trees: t, u"),
            (CoverageProblem::CommitsDiffer { commits: vec!["a".into(), "b".into()] }, "different commits: a, b"),
            (CoverageProblem::Duplicate { index: 1, reports: vec![0, 2] }, "shard 1 appears 2 times (reports [0, 2])"),
            (CoverageProblem::Missing { indices: vec![3] }, "missing shard(s) [3]: their bundles were not audited"),
            (
                CoverageProblem::OwnershipOverlap { bundle: "x/v1".into() },
                "bundle `x/v1` is owned by more than one shard",
            ),
        ];
        for (p, words) in cases {
            assert!(p.to_string().contains(words), "{p:?}: {}", p);
        }
        let inc = CoverageProblem::OwnershipIncomplete { owned: 3, total: 5 }.to_string();
        assert_eq!(inc, "the shards own 3 of the tree's 5 bundles");
    }
}
