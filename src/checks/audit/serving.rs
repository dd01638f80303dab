//! The audit's serving pass (`audit --serving`), judged: which bundle of
//! each service git says is current, and whether the live pods run it.
//! `app::serving` finds the bundles, resolves their paths and reads the
//! cluster.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::bundle::Loaded;
use crate::checks::watch::rollout::{self as rc, Expected};
use crate::checks::watch::state::ServiceState;
use crate::report::{StepReport, Table, Verdict};

/// One bundle of the tree, with its path and its rollback target's path,
/// both resolved the same way (canonical) so they compare.
pub(crate) struct Placed {
    pub loaded: Loaded,
    pub path: PathBuf,
    pub rollback: Option<PathBuf>,
}

/// What git says one service (`namespace/name`) should run.
pub(crate) enum Current {
    /// The head of its rollback chain (both boxed: each is large).
    Head(Box<Loaded>),
    /// Not one head: the INCONCLUSIVE step saying why.
    Unknown(Box<StepReport>),
}

/// Each service's current bundle: the head of its rollback chain, the one
/// no other bundle names as `spec.rollback`. Two heads (two releases that
/// do not know each other) cannot be told apart, so that service is
/// INCONCLUSIVE rather than guessed; no head is a cycle. In service order.
pub(crate) fn current_bundles(tree: Vec<Placed>) -> Vec<Current> {
    let referenced: BTreeSet<PathBuf> = tree.iter().filter_map(|p| p.rollback.clone()).collect();
    let mut groups: BTreeMap<(String, String), Vec<Placed>> = BTreeMap::new();
    for p in tree {
        let key = (p.loaded.bundle.metadata.namespace.clone(), p.loaded.bundle.metadata.name.clone());
        groups.entry(key).or_default().push(p);
    }
    let mut out = Vec::new();
    for ((ns, name), bundles) in groups {
        let service = format!("{ns}/{name}");
        let mut heads: Vec<Loaded> =
            bundles.into_iter().filter(|p| !referenced.contains(&p.path)).map(|p| p.loaded).collect();
        if heads.len() == 1 {
            out.push(Current::Head(Box::new(heads.remove(0))));
            continue;
        }
        let mut s = StepReport::new("serving", &service);
        s.verdict = Verdict::Inconclusive;
        let names: Vec<String> = heads.iter().map(|l| l.display.clone()).collect();
        s.summary = if names.is_empty() {
            "every bundle of this service is some other bundle's rollback target (a cycle): which one is current is unknown".into()
        } else {
            format!(
                "{} bundles claim to be current (none rolls back to the other): {}; serving not compared",
                names.len(),
                names.join(", ")
            )
        };
        out.push(Current::Unknown(Box::new(s)));
    }
    out
}

/// The serving step of a service's current bundle `l` (`exp`: what it says
/// should run) from what the cluster at `server` showed (`state`, or why it
/// could not be read): do the live pods run this release from this
/// bundle's storage URI?
pub(crate) fn serving_step(
    l: &Loaded,
    exp: &Expected,
    server: &str,
    state: Result<ServiceState, anyhow::Error>,
) -> StepReport {
    let target = format!("{} ({})", l.display, l.digest);
    let service = format!("{}/{}", l.bundle.metadata.namespace, l.bundle.metadata.name);
    let mut s = match state {
        Ok(st) => pods_step(&target, exp, &service, &st),
        Err(e) => StepReport::error("serving", &target, &e),
    };
    s.summary = format!("{service} on {server}: {}", s.summary);
    s
}

fn pods_step(target: &str, exp: &Expected, service: &str, st: &ServiceState) -> StepReport {
    let mut s = StepReport::new("serving", target);
    let (diagnostics, matching) = rc::serving_diagnostics(exp, service, st);
    s.diagnostics = diagnostics;
    s.verdict = rc::verdict_of(&s.diagnostics);
    let live = st.pods.iter().filter(|p| rc::standing(p) != rc::PodStanding::Terminal).count();
    s.summary = format!("{matching}/{live} live pod(s) run this release");
    let o = rc::evaluate_rollout(exp, st);
    s.tables.push(Table {
        title: "pods by release".into(),
        columns: rc::POD_COLUMNS.iter().map(|c| c.to_string()).collect(),
        rows: o.rows,
    });
    s.data = o.data;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::watch::state::{ModelSource, PodInfo};
    use crate::checks::watch::steps::WatchPlan;

    fn placed(ns: &str, name: &str, path: &str, rollback: Option<&str>) -> Placed {
        let mut l = crate::bundle::example();
        l.bundle.metadata.namespace = ns.into();
        l.bundle.metadata.name = name.into();
        l.display = path.into();
        Placed { loaded: l, path: path.into(), rollback: rollback.map(PathBuf::from) }
    }

    fn shown(c: &Current) -> String {
        match c {
            Current::Head(l) => format!("head {}", l.display),
            Current::Unknown(s) => {
                assert_eq!((s.step.as_str(), s.verdict), ("serving", Verdict::Inconclusive));
                format!("{}: {}", s.target, s.summary)
            }
        }
    }

    #[test]
    fn the_current_bundle_is_the_head_of_the_rollback_chain() {
        let tree = vec![
            placed("z", "chain", "/t/v2", Some("/t/v1")),
            placed("z", "chain", "/t/v3", Some("/t/v2")),
            placed("z", "chain", "/t/v1", None),
            placed("a", "two", "/t/x", None),
            placed("a", "two", "/t/y", Some("/t/gone")),
            placed("b", "cycle", "/t/p", Some("/t/q")),
            placed("b", "cycle", "/t/q", Some("/t/p")),
        ];
        let out: Vec<String> = current_bundles(tree).iter().map(shown).collect();
        assert_eq!(
            out,
            [
                "a/two: 2 bundles claim to be current (none rolls back to the other): /t/x, /t/y; serving not compared",
                "b/cycle: every bundle of this service is some other bundle's rollback target (a cycle): which one is current is unknown",
                "head /t/v3",
            ]
        );
    }

    fn pod(name: &str, digest: &str, phase: &str, uri: &str) -> PodInfo {
        PodInfo {
            name: name.into(),
            digest: Some(digest.into()),
            phase: phase.into(),
            ready: phase == "Running",
            source: Some(ModelSource::StorageInitializer { uri: uri.into() }),
            ..Default::default()
        }
    }

    #[test]
    fn the_serving_step_counts_the_live_pods_that_run_the_release() {
        let l = crate::bundle::example();
        let exp = WatchPlan::resolve(&l, None).expected;
        let target = format!("v2/release.yaml ({})", l.digest);
        let s = serving_step(&l, &exp, "https://k", Err(anyhow::anyhow!("forbidden")));
        assert_eq!((s.step.as_str(), s.target.as_str(), s.verdict), ("serving", target.as_str(), Verdict::Error));
        assert_eq!(s.summary, "ai-lab/llm-scratch on https://k: forbidden");
        let uri = exp.storage_uri.clone();
        let st = ServiceState {
            pods: vec![pod("new", &l.digest, "Running", &uri), pod("evicted", &l.digest, "Failed", &uri)],
            ..Default::default()
        };
        let s = serving_step(&l, &exp, "https://k", Ok(st.clone()));
        assert_eq!(s.summary, "ai-lab/llm-scratch on https://k: 1/1 live pod(s) run this release");
        assert_eq!((s.target.as_str(), s.verdict), (target.as_str(), Verdict::Pass), "{:?}", s.diagnostics);
        assert_eq!((s.tables[0].title.as_str(), s.tables[0].rows.len()), ("pods by release", 2));
        assert_eq!(s.data, rc::evaluate_rollout(&exp, &st).data);
        let old = ServiceState { pods: vec![pod("old", "sha256:old", "Running", "s3://old/")], ..Default::default() };
        let s = serving_step(&l, &exp, "https://k", Ok(old));
        assert_eq!(s.summary, "ai-lab/llm-scratch on https://k: 0/1 live pod(s) run this release");
        assert_eq!(s.verdict, Verdict::Fail);
    }
}
