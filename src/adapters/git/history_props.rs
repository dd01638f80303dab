//! What Argo CD deploys, as a property over generated later histories in
//! real git repositories (git2, in a temp folder).
//!
//! The merge commit puts release R1 at `m/v2/release.yaml` with a link
//! `m/current -> v2`. Later commits, each on top of the last: the bundle
//! edited in place (to R1 again or another release), a new folder `m/v3`
//! with another release, the link moved, unrelated changes, a merge commit
//! whose first parent is a side branch (the merge on its second parent), and
//! at the end the Application pointed at one of the folders, through the
//! plugin's `bundle` parameter or not, and maybe synced through a hydrated
//! commit on an orphan branch (with `hydrator.metadata`). A model of the
//! tree says what the Application's path renders at the synced revision.
//! Property (10,000 histories when asked, 200 per test run): the Argo CD gate reads Synced iff that
//! is R1; otherwise INCONCLUSIVE (superseded at a later commit, not rendered
//! at the merge commit itself), never FAIL: every synced revision descends
//! from the merge.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Repository, Signature};
use proptest::prelude::*;

use crate::checks::watch::argo::{self, AppSource, AppStatus, ArgoState};
use crate::report::Verdict;

#[derive(Debug, Clone)]
enum Op {
    /// `m/v2/release.yaml` becomes release `k` (1: the same bytes as R1).
    EditInPlace(u8),
    /// `m/v3/release.yaml` is written as release `k`.
    NewFolder(u8),
    /// `m/current` points at v2 (false) or v3 (true, once v3 exists).
    MoveLink(bool),
    Unrelated,
    /// A side branch from the previous commit, merged with the side as
    /// first parent: the mainline (and the merge) on the second.
    MergeWithSideFirst,
}

#[derive(Debug, Clone)]
struct Later {
    ops: Vec<Op>,
    /// The Application's path: 0 `m/v2`, 1 `m/current`, 2 `m/v3`.
    app_path: u8,
    /// Name the bundle through the plugin's `bundle` parameter.
    param: bool,
    hydrated: bool,
}

fn later() -> impl Strategy<Value = Later> {
    let op = prop_oneof![
        (1u8..4).prop_map(Op::EditInPlace),
        (1u8..4).prop_map(Op::NewFolder),
        any::<bool>().prop_map(Op::MoveLink),
        Just(Op::Unrelated),
        Just(Op::MergeWithSideFirst),
    ];
    (prop::collection::vec(op, 0..5), 0u8..3, any::<bool>(), any::<bool>())
        .prop_map(|(ops, app_path, param, hydrated)| Later { ops, app_path, param, hydrated })
}

fn bundle_text(k: u8) -> String {
    let base = include_str!("../../../examples/llm-scratch/v2/release.yaml");
    base.replacen("    replicas: 1\n", &format!("    replicas: {k}\n"), 1)
}

fn digest(k: u8) -> String {
    crate::bundle::parse("r", Path::new("release.yaml"), bundle_text(k)).expect("the example loads").digest
}

/// Stage the whole work tree and commit it with these parents.
fn commit(r: &Repository, msg: &str, parents: &[git2::Oid], update: Option<&str>) -> git2::Oid {
    let mut idx = r.index().unwrap();
    idx.add_all(["*"], git2::IndexAddOption::DEFAULT, None).unwrap();
    idx.update_all(["*"], None).unwrap();
    idx.write().unwrap();
    let tree = r.find_tree(idx.write_tree().unwrap()).unwrap();
    let sig = Signature::new("dev", "dev@example.com", &git2::Time::new(1_767_261_600, 0)).unwrap();
    let ps: Vec<git2::Commit<'_>> = parents.iter().map(|p| r.find_commit(*p).unwrap()).collect();
    let refs: Vec<&git2::Commit<'_>> = ps.iter().collect();
    let id = r.commit(None, &sig, &sig, msg, &tree, &refs).unwrap();
    if update.is_some() {
        r.set_head_detached(id).unwrap();
    }
    id
}

fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn link(root: &Path, to: &str) {
    let p = root.join("m/current");
    let _ = std::fs::remove_file(&p);
    std::os::unix::fs::symlink(to, p).unwrap();
}

/// Builds the history; returns (merge sha, synced sha, the watched file,
/// the Application, what the model says is rendered at the synced revision).
fn build(dir: &Path, l: &Later) -> (String, String, std::path::PathBuf, AppStatus, Option<u8>) {
    let r = Repository::init(dir).unwrap();
    // The model: folder -> release, and the link.
    let mut folders: BTreeMap<&str, u8> = BTreeMap::new();
    let mut link_to_v3 = false;
    write(dir, "m/v2/release.yaml", &bundle_text(1));
    folders.insert("v2", 1);
    link(dir, "v2");
    write(dir, "other/notes.txt", "0\n");
    let merge = commit(&r, "release m R1", &[], Some("HEAD"));
    let mut head = merge;
    for (i, op) in l.ops.iter().enumerate() {
        match op {
            Op::EditInPlace(k) => {
                write(dir, "m/v2/release.yaml", &bundle_text(*k));
                folders.insert("v2", *k);
            }
            Op::NewFolder(k) => {
                write(dir, "m/v3/release.yaml", &bundle_text(*k));
                folders.insert("v3", *k);
            }
            Op::MoveLink(v3) => {
                let to_v3 = *v3 && folders.contains_key("v3");
                link(dir, if to_v3 { "v3" } else { "v2" });
                link_to_v3 = to_v3;
            }
            Op::Unrelated => write(dir, "other/notes.txt", &format!("{i}\n")),
            Op::MergeWithSideFirst => {
                // The side branch: an unrelated commit on top of head, not
                // on the branch; the merge lists it first.
                write(dir, "other/side.txt", &format!("{i}\n"));
                let side = commit(&r, "side", &[head], None);
                head = commit(&r, "merge side", &[side, head], Some("HEAD"));
                continue;
            }
        }
        head = commit(&r, &format!("op {i}"), &[head], Some("HEAD"));
    }
    let (path, folder) = match l.app_path {
        0 => ("m/v2", Some("v2")),
        1 => ("m/current", Some(if link_to_v3 { "v3" } else { "v2" })),
        _ => ("m/v3", Some("v3")),
    };
    let rendered = folder.and_then(|f| folders.get(f).copied());
    let mut synced = head;
    if l.hydrated {
        // An orphan commit holding rendered manifests and the metadata.
        let sig = Signature::new("argocd", "argocd@example.com", &git2::Time::new(1_767_261_700, 0)).unwrap();
        let meta = format!("{{\"repoURL\": \"https://example.com/r.git\", \"drySha\": \"{head}\"}}\n");
        let mut tb = r.treebuilder(None).unwrap();
        tb.insert("hydrator.metadata", r.blob(meta.as_bytes()).unwrap(), 0o100644).unwrap();
        let tree = r.find_tree(tb.write().unwrap()).unwrap();
        synced = r.commit(None, &sig, &sig, "hydrate", &tree, &[]).unwrap();
    }
    let source = AppSource {
        repo_url: Some("https://example.com/r.git".into()),
        path: path.into(),
        bundle: l.param.then(|| "release.yaml".into()),
        other_tool: None,
        dry: l.hydrated,
    };
    let app = AppStatus {
        name: "m".into(),
        sync_status: Some("Synced".into()),
        sync_revision: Some(synced.to_string()),
        operation_revision: Some(synced.to_string()),
        phase: Some("Succeeded".into()),
        finished_at: Some("2026-01-01T10:05:00Z".into()),
        sources: vec![source],
        ..Default::default()
    };
    (merge.to_string(), synced.to_string(), dir.join("m/v2/release.yaml"), app, rendered)
}

/// Each case builds a real repository (~60 ms here): 200 in the test run
/// (~12 s); `BUNDLEGATE_GIT_PROP_CASES=10000` runs the full set (590 s on
/// two cores, all held).
fn cases() -> u32 {
    std::env::var("BUNDLEGATE_GIT_PROP_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(200)
}

proptest! {
    #![proptest_config(crate::util::prop_config(cases()))]

    #[test]
    fn deployed_iff_the_application_renders_this_release_and_never_fail_when_superseded(l in later()) {
        let tmp = tempfile::tempdir().unwrap();
        let (merge, synced, watched, app, rendered) = build(tmp.path(), &l);
        let release = digest(1);
        let h = super::history(&watched, &merge, std::slice::from_ref(&synced), &app.sources);
        let lineage = argo::lineage_from(&h, &release);
        let state = argo::argo_state(Some(&app), Some(&merge), &lineage, None);
        let verdict = argo::verdict(&state, true);
        prop_assert_ne!(verdict, Verdict::Fail, "{:?}\n{:?}\n{:?}", state, lineage, l);
        if rendered == Some(1) {
            prop_assert!(matches!(state, ArgoState::Synced { .. }), "renders R1: {:?}\n{:?}\n{:?}", state, lineage, l);
            prop_assert_eq!(verdict, Verdict::Pass);
        } else {
            // At a later commit another release (or none) is superseded; at
            // the merge commit itself the Application does not render it.
            prop_assert_eq!(verdict, Verdict::Inconclusive, "{:?}\n{:?}\n{:?}", state, lineage, l);
            let superseded = matches!(state, ArgoState::Superseded { .. });
            prop_assert_eq!(superseded, !l.ops.is_empty(), "renders {:?}, not R1: {:?}\n{:?}\n{:?}", rendered, state, lineage, l);
        }
    }
}

#[test]
fn the_example_variants_are_distinct_releases() {
    assert_ne!(digest(1), digest(2));
    assert_eq!(digest(1), digest(1));
}
