//! Put the reports of a sharded audit back together. Pure: reports in, one
//! report out. The merged verdict is the worst step's, and a merge that cannot
//! prove it covers the tree exactly once is INCONCLUSIVE, never PASS.

use chrono::{DateTime, Utc};

use crate::checks::audit::shard::{self};
use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::report::ShardInfo;
use crate::report::{Report, StepReport, Verdict};

/// How far a shard's clock may run ahead of the merging machine's before
/// its `finishedAt` is no longer a time it can have finished at.
const CLOCK_SKEW: chrono::Duration = chrono::Duration::minutes(5);

/// Only audit reports of this schema are merged: anything else proves
/// nothing about the tree. `Err` names what `name` holds instead (the tool
/// refuses the merge).
pub(crate) fn check_input(name: &str, r: &Report) -> Result<(), String> {
    if r.schema != "bundlegate.dev/report/v1" || r.command != "audit" {
        return Err(format!("{name}: not an audit report (schema `{}`, command `{}`)", r.schema, r.command));
    }
    Ok(())
}

/// What the merge keeps of one shard report once its steps have gone by
/// (`report merge` streams them): where it came from, the report without its
/// steps (schema, shard section, `finishedAt`, duration), and the target and
/// named bundle of each of its audit steps, in order. Small: a few ids per
/// bundle, whatever the steps hold.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub name: String,
    pub head: Report,
    audits: Vec<(String, Option<String>)>,
}

impl Seen {
    /// `head`: the report read so far, its steps left out.
    pub(crate) fn new(name: String, head: Report) -> Seen {
        Seen { name, head, audits: Vec::new() }
    }

    /// One of the report's steps, as it goes by.
    pub(crate) fn step(&mut self, s: &StepReport) {
        if s.step == "audit" && !owns_nothing(s) {
            self.audits.push((s.target.clone(), audited_bundle(s).map(str::to_string)));
        }
    }
}

/// A shard's step as the merged report holds it, tagged with the report it
/// came from (for whoever finds it twice: the metrics writer); `None` for a
/// shard's "owns nothing" line. Merged steps are ordered by target, equal
/// targets in the order the reports and their steps were given.
pub(crate) fn merged(mut s: StepReport, name: &str) -> Option<StepReport> {
    if owns_nothing(&s) {
        return None;
    }
    if s.data.is_null() {
        s.data = serde_json::json!({});
    }
    if let Some(o) = s.data.as_object_mut() {
        o.insert("report".into(), name.into());
    }
    Some(s)
}

/// A merged step as the merged report holds it: its verdict through the
/// evidence floor, as every step pushed to a report.
pub(crate) fn floored(mut s: StepReport) -> StepReport {
    s.verdict = crate::report::floor(s.verdict, &s.diagnostics);
    s
}

/// What the merged report's verdict and metrics read of a merged step,
/// all `report merge` holds of it between its passes: its name, target,
/// verdict (floored) and the bundle, report and bytes hashed it names.
pub(crate) fn slim(s: &StepReport) -> StepReport {
    let mut t = StepReport::new(s.step.clone(), s.target.clone());
    t.verdict = crate::report::floor(s.verdict, &s.diagnostics);
    let mut data = serde_json::Map::new();
    for k in ["bundle", "report", "bytesHashed"] {
        if let Some(v) = s.data.get(k) {
            data.insert(k.into(), v.clone());
        }
    }
    t.data = serde_json::Value::Object(data);
    t
}

/// The merged report's duration: the slowest shard's.
pub(crate) fn duration(seen: &[Seen]) -> Option<f64> {
    seen.iter().filter_map(|r| r.head.duration_seconds).reduce(f64::max)
}

/// `max_age`: shard reports that finished longer ago than this (or say not
/// when) are stale — e.g. yesterday's report of a shard that did not run today.
fn freshness(seen: &[Seen], now: DateTime<Utc>, max: chrono::Duration) -> Vec<String> {
    let mut problems = Vec::new();
    for r in seen {
        let name = &r.name;
        let at = r
            .head
            .finished_at
            .as_deref()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        match at {
            None => problems.push(format!("{name} does not say when it finished, so it may be stale")),
            // A negative age is not fresh: it is a clock (or a report)
            // that cannot be trusted to say when the shard ran.
            Some(t) if t.signed_duration_since(now) > CLOCK_SKEW => {
                problems.push(format!("{name} says it finished at {t}, after now ({now}): a report from the future proves nothing about when its shard ran"))
            }
            Some(t) if now.signed_duration_since(t) > max => {
                problems.push(format!("{name} finished at {t}, longer ago than --max-age: a stale shard proves nothing about today"))
            }
            Some(_) => {}
        }
    }
    problems
}

/// The merge's own step, from what the reports said of themselves and the
/// steps they held (`seen`, in the order given): PASS only when they cover
/// one tree exactly once and, with `max_age`, are all fresh.
pub(crate) fn merge_step(seen: &[Seen], now: DateTime<Utc>, max_age: Option<chrono::Duration>) -> StepReport {
    let infos: Vec<Option<&ShardInfo>> = seen.iter().map(|r| r.head.shard.as_ref()).collect();
    let mut problems: Vec<String> = shard::coverage(&infos).iter().map(|p| p.to_string()).collect();
    if let Some(max) = max_age {
        problems.extend(freshness(seen, now, max));
    }
    problems.extend(content_problems(seen));
    let names: Vec<&str> = seen.iter().map(|r| r.name.as_str()).collect();
    let mut m = StepReport::new("merge", format!("{} shard report(s)", seen.len()));
    let first = infos.iter().flatten().next();
    if let (true, Some(i)) = (problems.is_empty(), first) {
        m.summary = format!(
            "{} of {} shards of tree {}{}: all {} bundles audited exactly once",
            seen.len(),
            i.count,
            i.tree,
            i.commit.as_deref().map(|c| format!(" (commit {c})")).unwrap_or_default(),
            i.bundles_total
        );
    } else {
        m.verdict = Verdict::Inconclusive;
        m.summary = format!("the shard reports do not cover one tree exactly once ({} problem(s)): the merged audit proves nothing about the rest", problems.len());
        for p in &problems {
            m.diagnostics.push(
                Diagnostic::new(Code::ShardCoverageIncomplete, p.clone())
                    .evidence(format!("reports: {}", names.join(", "))),
            );
        }
    }
    if seen.is_empty() {
        m.verdict = Verdict::Inconclusive;
        m.summary = "no shard reports given".into();
    }
    m.data = serde_json::json!({
        "reports": names,
        "shards": infos.iter().map(|i| i.map(|i| serde_json::json!({"index": i.index, "count": i.count, "tree": i.tree, "commit": i.commit, "owned": i.owned.len(), "ownedBytes": i.owned_bytes}))).collect::<Vec<_>>(),
    });
    m
}

/// "This shard owns nothing" is bookkeeping of one shard, not a finding.
fn owns_nothing(s: &StepReport) -> bool {
    s.verdict == Verdict::NotRun && s.step == "audit" && s.target.starts_with("shard ")
}

/// The bundle an audit step is about, as the shard wrote it (`data.bundle`).
fn audited_bundle(s: &StepReport) -> Option<&str> {
    s.data.get("bundle")?.as_str()
}

/// Coverage read from what the reports hold, not from what they claim: each
/// shard's audit steps are exactly the bundles its `owned` list names, and
/// no bundle is audited twice. A report with its steps removed, or holding
/// another shard's, would otherwise merge as "audited exactly once".
fn content_problems(seen: &[Seen]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut seen_by: std::collections::BTreeMap<&str, &str> = Default::default();
    for r in seen {
        let name = r.name.as_str();
        // A report without a shard section is a coverage problem already.
        let Some(info) = &r.head.shard else { continue };
        let which = format!("shard {}/{}", info.index, info.count);
        let owned: std::collections::BTreeSet<&str> = info.owned.iter().map(String::as_str).collect();
        let mut audited = std::collections::BTreeSet::new();
        for (target, bundle) in &r.audits {
            let Some(b) = bundle.as_deref() else {
                problems.push(format!(
                    "{name} holds an audit step ({target}) that names no bundle, so what it covers cannot be read from the report"
                ));
                continue;
            };
            if !owned.contains(b) {
                problems.push(format!("{name} holds an audit of {b}, which {which} does not own"));
            }
            if let Some(other) = seen_by.insert(b, name) {
                problems.push(format!("{b} is audited twice ({other} and {name})"));
            }
            audited.insert(b);
        }
        for b in owned.difference(&audited) {
            problems.push(format!("{name} says {which} owns {b} but holds no audit of it"));
        }
    }
    problems
}

/// The whole merge over reports held in memory (the unit tests' form of
/// what `report merge` streams): the merged steps by target, then the
/// merge's own step.
#[cfg(test)]
pub(crate) fn merge_shards(
    reports: Vec<(String, Report)>,
    now: DateTime<Utc>,
    max_age: Option<chrono::Duration>,
) -> Report {
    let mut seen = Vec::new();
    let mut steps = Vec::new();
    for (name, mut r) in reports {
        let held = std::mem::take(&mut r.steps);
        let mut s = Seen::new(name, r);
        for st in held {
            s.step(&st);
            steps.extend(merged(st, &s.name));
        }
        seen.push(s);
    }
    steps.sort_by(|a, b| a.target.cmp(&b.target));
    let mut out = Report::new("audit");
    out.duration_seconds = duration(&seen);
    for s in steps {
        out.push(s);
    }
    out.push(merge_step(&seen, now, max_age));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_audit_reports_of_this_schema_are_merged() {
        assert_eq!(check_input("a.json", &Report::new("audit")), Ok(()));
        assert_eq!(
            check_input("w.json", &Report::new("watch")),
            Err("w.json: not an audit report (schema `bundlegate.dev/report/v1`, command `watch`)".into())
        );
        let mut old = Report::new("audit");
        old.schema = "bundlegate.dev/report/v0".into();
        assert!(check_input("o.json", &old).unwrap_err().contains("schema `bundlegate.dev/report/v0`"));
    }

    fn shard_report(index: u32, count: u32, tree: &str, owned: &[&str], verdict: Verdict) -> (String, Report) {
        let mut r = Report::new("audit");
        for o in owned {
            let mut s = StepReport::new("audit", o.to_string());
            s.verdict = verdict;
            s.data["bundle"] = (*o).into();
            r.push(s);
        }
        r.shard = Some(ShardInfo {
            index,
            count,
            tree: tree.into(),
            commit: None,
            bundles_total: 3,
            owned: owned.iter().map(|s| s.to_string()).collect(),
            owned_bytes: 0,
        });
        (format!("shard-{index}.json"), r)
    }

    #[test]
    fn complete_passing_shards_pass_and_a_missing_one_is_inconclusive() {
        let all =
            vec![shard_report(0, 2, "t", &["a", "b"], Verdict::Pass), shard_report(1, 2, "t", &["c"], Verdict::Pass)];
        let m = merge_shards(all.clone(), Utc::now(), None);
        assert_eq!(m.verdict, Verdict::Pass);
        assert_eq!(m.steps.iter().filter(|s| s.step == "audit").count(), 3);
        let m = merge_shards(all[..1].to_vec(), Utc::now(), None);
        assert_eq!(m.verdict, Verdict::Inconclusive);
        assert_eq!(m.exit_code(), 1);
    }

    #[test]
    fn a_proven_drift_fails_even_when_coverage_is_incomplete() {
        let m = merge_shards(vec![shard_report(0, 2, "t", &["a"], Verdict::Fail)], Utc::now(), None);
        assert_eq!(m.verdict, Verdict::Fail);
        assert!(m.steps.iter().any(|s| s.step == "merge" && s.verdict == Verdict::Inconclusive));
    }

    #[test]
    fn a_stale_shard_is_inconclusive_when_a_max_age_is_set() {
        let mut all =
            vec![shard_report(0, 2, "t", &["a", "b"], Verdict::Pass), shard_report(1, 2, "t", &["c"], Verdict::Pass)];
        let now = Utc::now();
        all[0].1.finished_at = Some(now.to_rfc3339());
        all[1].1.finished_at = Some((now - chrono::Duration::hours(30)).to_rfc3339());
        let day = Some(chrono::Duration::hours(24));
        assert_eq!(merge_shards(all.clone(), now, day).verdict, Verdict::Inconclusive);
        assert_eq!(merge_shards(all.clone(), now, None).verdict, Verdict::Pass);
        all[1].1.finished_at = None;
        assert_eq!(merge_shards(all, now, day).verdict, Verdict::Inconclusive);
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(proptest::test_runner::Config::default().cases))]
        /// A shard report stamped later than now (beyond the clock skew) is
        /// never fresh, however small the declared age looks.
        #[test]
        fn a_shard_stamped_in_the_future_is_never_fresh(ahead_s in 301i64..10_000_000, max_h in 1i64..1000, which in 0usize..2) {
            let mut all = vec![shard_report(0, 2, "t", &["a", "b"], Verdict::Pass), shard_report(1, 2, "t", &["c"], Verdict::Pass)];
            let now = Utc::now();
            for (_, r) in all.iter_mut() {
                r.finished_at = Some(now.to_rfc3339());
            }
            all[which].1.finished_at = Some((now + chrono::Duration::seconds(ahead_s)).to_rfc3339());
            let m = merge_shards(all, now, Some(chrono::Duration::hours(max_h)));
            proptest::prop_assert_eq!(m.verdict, Verdict::Inconclusive);
            let merge = m.steps.iter().find(|s| s.step == "merge").unwrap();
            proptest::prop_assert!(merge.diagnostics.iter().any(|d| d.code == crate::diag::Code::ShardCoverageIncomplete && d.message.contains("from the future")), "{:?}", merge.diagnostics);
        }
    }

    #[test]
    fn a_clock_a_little_ahead_is_still_fresh() {
        let mut all =
            vec![shard_report(0, 2, "t", &["a", "b"], Verdict::Pass), shard_report(1, 2, "t", &["c"], Verdict::Pass)];
        let now = Utc::now();
        all[0].1.finished_at = Some((now + chrono::Duration::seconds(30)).to_rfc3339());
        all[1].1.finished_at = Some(now.to_rfc3339());
        assert_eq!(merge_shards(all, now, Some(chrono::Duration::hours(24))).verdict, Verdict::Pass);
    }

    #[test]
    fn nothing_to_merge_is_never_pass() {
        assert_ne!(merge_shards(vec![], Utc::now(), None).verdict, Verdict::Pass);
        let mut unsharded = Report::new("audit");
        unsharded.push(StepReport::new("audit", "a"));
        assert_eq!(merge_shards(vec![("x.json".into(), unsharded)], Utc::now(), None).verdict, Verdict::Inconclusive);
    }

    /// The two clocks at their bounds: a shard exactly `CLOCK_SKEW` ahead
    /// and one exactly `max_age` old are still fresh; a second more is not.
    #[test]
    fn freshness_holds_at_its_bounds_exactly() {
        let now = DateTime::parse_from_rfc3339("2026-12-04T12:00:00Z").unwrap().with_timezone(&Utc);
        let max = chrono::Duration::hours(24);
        let at = |ahead: chrono::Duration, old: chrono::Duration| {
            let mut all = vec![
                shard_report(0, 2, "t", &["a", "b"], Verdict::Pass),
                shard_report(1, 2, "t", &["c"], Verdict::Pass),
            ];
            all[0].1.finished_at = Some((now + ahead).to_rfc3339());
            all[1].1.finished_at = Some((now - old).to_rfc3339());
            merge_shards(all, now, Some(max)).verdict
        };
        let zero = chrono::Duration::zero();
        let second = chrono::Duration::seconds(1);
        assert_eq!(at(CLOCK_SKEW, zero), Verdict::Pass);
        assert_eq!(at(CLOCK_SKEW + second, zero), Verdict::Inconclusive);
        assert_eq!(at(zero, max), Verdict::Pass);
        assert_eq!(at(zero, max + second), Verdict::Inconclusive);
    }

    /// Only a shard's own "owns nothing" line is left out of the merged
    /// steps; any other step, not-run or not, is the tree's and is kept.
    #[test]
    fn only_the_owns_nothing_line_of_a_shard_is_dropped() {
        let mut empty = Report::new("audit");
        let step = |name: &str, target: &str, v: Verdict| {
            let mut s = StepReport::new(name, target.to_string());
            s.verdict = v;
            s
        };
        empty.push(step("audit", "shard 1/2", Verdict::NotRun));
        empty.push(step("audit", "a/release.yaml", Verdict::NotRun));
        empty.push(step("lint", "shard 1/2", Verdict::NotRun));
        empty.push(step("audit", "shard 1/2", Verdict::Pass));
        let kept: Vec<(String, String, Verdict)> = merge_shards(vec![("s.json".into(), empty)], Utc::now(), None)
            .steps
            .into_iter()
            .filter(|s| s.step != "merge")
            .map(|s| (s.step, s.target, s.verdict))
            .collect();
        assert_eq!(
            kept,
            [
                ("audit".to_string(), "a/release.yaml".to_string(), Verdict::NotRun),
                ("lint".into(), "shard 1/2".into(), Verdict::NotRun),
                ("audit".into(), "shard 1/2".into(), Verdict::Pass),
            ]
        );
    }

    /// The slim form keeps what the verdict and the metrics read, and the
    /// verdict through the floor, as the whole step has it once merged.
    #[test]
    fn a_slim_step_keeps_the_verdict_and_the_ids_and_nothing_else() {
        let code = *Code::ALL.iter().find(|c| c.missing_evidence()).unwrap();
        let mut s = StepReport::new("audit", "m/release.yaml");
        s.diagnostics.push(Diagnostic::new(code, "unread"));
        s.data = serde_json::json!({"bundle": "m", "report": "r.json", "bytesHashed": 3, "artifacts": [1, 2]});
        s.summary = "long".into();
        let t = slim(&s);
        assert_eq!((t.step.as_str(), t.target.as_str(), t.verdict), ("audit", "m/release.yaml", Verdict::Inconclusive));
        assert_eq!(t.data, serde_json::json!({"bundle": "m", "report": "r.json", "bytesHashed": 3}));
        assert!(t.diagnostics.is_empty() && t.summary.is_empty());
        assert_eq!(floored(s).verdict, Verdict::Inconclusive);
        assert_eq!(floored(StepReport::new("audit", "x")).verdict, Verdict::Pass);
    }

    /// What a tampered (or broken) set of shard reports does to the steps.
    #[derive(Debug, Clone)]
    enum Tamper {
        /// A report loses one of its audit steps.
        Remove(proptest::sample::Index, proptest::sample::Index),
        /// A step moves to another shard's report.
        Move(proptest::sample::Index, proptest::sample::Index, proptest::sample::Index),
        /// A step is copied into a report (the same one or another).
        Copy(proptest::sample::Index, proptest::sample::Index, proptest::sample::Index),
    }

    fn tamper() -> impl proptest::strategy::Strategy<Value = Tamper> {
        use proptest::prelude::*;
        prop_oneof![
            (any::<proptest::sample::Index>(), any::<proptest::sample::Index>())
                .prop_map(|(a, b)| Tamper::Remove(a, b)),
            (any::<proptest::sample::Index>(), any::<proptest::sample::Index>(), any::<proptest::sample::Index>())
                .prop_map(|(a, b, c)| Tamper::Move(a, b, c)),
            (any::<proptest::sample::Index>(), any::<proptest::sample::Index>(), any::<proptest::sample::Index>())
                .prop_map(|(a, b, c)| Tamper::Copy(a, b, c)),
        ]
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// Coverage is read from the steps the reports hold: every shard's
        /// owned list intact, yet a step removed, moved to another shard's
        /// report or copied is never "all bundles audited exactly once"
        /// (each merged as PASS when the owned lists were trusted), and
        /// untouched shards still pass.
        #[test]
        fn coverage_is_read_from_the_steps_present(
            n in 1usize..12,
            count in 1u32..5,
            tamper in proptest::option::of(tamper()),
        ) {
            let ids: Vec<String> = (0..n).map(|i| format!("m{i}/release.yaml")).collect();
            let items: Vec<shard::Item> = ids.iter().map(|id| shard::Item { id: id.clone(), bytes: 10, sha256: None }).collect();
            let assignment = shard::assign(&items, count);
            let mut reports: Vec<(String, Report)> = (0..count)
                .map(|k| {
                    let owned: Vec<&str> =
                        ids.iter().zip(&assignment).filter(|(_, a)| **a == k).map(|(i, _)| i.as_str()).collect();
                    let (name, mut r) = shard_report(k, count, "t", &owned, Verdict::Pass);
                    r.shard.as_mut().unwrap().bundles_total = n;
                    (name, r)
                })
                .collect();
            let audits = |r: &Report| r.steps.iter().filter(|s| s.step == "audit").count();
            let changed = match &tamper {
                None => false,
                Some(Tamper::Remove(a, b)) => {
                    let r = &mut reports[a.index(count as usize)].1;
                    if r.steps.is_empty() {
                        false
                    } else {
                        r.steps.remove(b.index(r.steps.len()));
                        true
                    }
                }
                Some(Tamper::Move(a, b, c)) | Some(Tamper::Copy(a, b, c)) => {
                    let (from, to) = (a.index(count as usize), b.index(count as usize));
                    let moving = matches!(tamper, Some(Tamper::Move(..)));
                    if audits(&reports[from].1) == 0 || (moving && from == to) {
                        false
                    } else {
                        let i = c.index(reports[from].1.steps.len());
                        let step = if moving {
                            reports[from].1.steps.remove(i)
                        } else {
                            reports[from].1.steps[i].clone()
                        };
                        reports[to].1.steps.push(step);
                        true
                    }
                }
            };
            let m = merge_shards(reports, Utc::now(), None);
            if changed {
                proptest::prop_assert_ne!(m.verdict, Verdict::Pass, "{:?}", tamper);
                let merge = m.steps.iter().find(|s| s.step == "merge").unwrap();
                proptest::prop_assert!(merge.diagnostics.iter().any(|d| d.code == Code::ShardCoverageIncomplete));
            } else {
                proptest::prop_assert_eq!(m.verdict, Verdict::Pass, "{:?}", tamper);
            }
        }
    }

    /// Each content problem in its words: a step missing, another shard's
    /// step, a step counted twice, a step that names no bundle.
    #[test]
    fn each_content_problem_is_named() {
        let words = |reports: Vec<(String, Report)>| -> Vec<String> {
            let m = merge_shards(reports, Utc::now(), None);
            m.steps.iter().find(|s| s.step == "merge").unwrap().diagnostics.iter().map(|d| d.message.clone()).collect()
        };
        let all = || {
            vec![shard_report(0, 2, "t", &["a", "b"], Verdict::Pass), shard_report(1, 2, "t", &["c"], Verdict::Pass)]
        };
        let mut r = all();
        r[0].1.steps.remove(1);
        assert_eq!(words(r), ["shard-0.json says shard 0/2 owns b but holds no audit of it"]);
        let mut r = all();
        let s = r[0].1.steps.remove(1);
        r[1].1.steps.push(s);
        assert_eq!(
            words(r),
            [
                "shard-0.json says shard 0/2 owns b but holds no audit of it",
                "shard-1.json holds an audit of b, which shard 1/2 does not own"
            ]
        );
        let mut r = all();
        let s = r[0].1.steps[0].clone();
        r[0].1.steps.push(s);
        assert_eq!(words(r), ["a is audited twice (shard-0.json and shard-0.json)"]);
        let mut r = all();
        r[1].1.steps[0].data = serde_json::Value::Null;
        assert_eq!(
            words(r),
            [
                "shard-1.json holds an audit step (c) that names no bundle, so what it covers cannot be read from the report",
                "shard-1.json says shard 1/2 owns c but holds no audit of it"
            ]
        );
    }
}
