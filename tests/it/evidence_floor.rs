//! Never PASS on nothing (issue #27, class 5): every verdict here would be
//! about evidence that does not exist. Each property generates the class
//! (zero artifacts, an unread artifact whose code is allowed away, names the
//! store listing drops, a node listed twice, nested Lists, a rollback target
//! that is the release itself) and checks the verdict is never PASS, or that
//! nothing vanished. The shard report stamped in the future is a unit
//! property in `src/checks/audit/merge.rs`.

use std::path::Path;

use bundlegate::parse::snapshot;
use proptest::prelude::*;
use serde_json::Value;

use crate::support::*;
use crate::support::{edit_yaml, yaml, Example, Out};

/// Each case runs the binary: a few cases cover the generator's choices.
fn few() -> ProptestConfig {
    ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() }
}

fn verify(ex: &Example, extra: &[&str]) -> Out {
    let mut a = vec!["verify", "--format", "json", "--progress", "never"];
    a.extend_from_slice(extra);
    let b = ex.v2();
    a.push(b.to_str().unwrap());
    ex.run(&a)
}

fn rows(o: &Out) -> Vec<(String, String)> {
    o.json()["steps"][0]["data"]["artifacts"]
        .as_array()
        .unwrap_or_else(|| panic!("no artifacts in {}", o.stdout))
        .iter()
        .map(|a| (a["path"].as_str().unwrap().to_string(), a["status"].as_str().unwrap().to_string()))
        .collect()
}

const ARTIFACTS: [&str; 5] =
    ["ckpt.pt", "tokenizer.json", "chat_template.jinja", "generation_config.json", "clean_corpus.txt"];

// ---- zero artifacts ------------------------------------------------------------------------

proptest! {
    #![proptest_config(few())]

    /// A bundle that lists no artifacts verifies nothing, whatever the prefix
    /// holds and however it is run (verify, or audit of the tree with any of
    /// its bundles emptied).
    #[test]
    fn verify_or_audit_of_zero_artifacts_is_never_pass(extras in prop::collection::vec("[a-z]{1,8}\\.bin", 0..3), audit in any::<bool>(), empty_v1 in any::<bool>()) {
        let ex = Example::new();
        let store = ex.store("v2");
        for f in std::fs::read_dir(&store).unwrap() {
            std::fs::remove_file(f.unwrap().path()).unwrap();
        }
        for e in &extras {
            std::fs::write(store.join(e), "x").unwrap();
        }
        ex.edit_v2(|b| b["spec"]["model"]["artifacts"] = yaml("[]"));
        if empty_v1 {
            edit_yaml(&ex.v1(), |b| b["spec"]["model"]["artifacts"] = yaml("[]"));
        }
        let out = if audit { ex.run(&["audit", "--format", "json", "--progress", "never", "--cache", "cache.json", "."]) } else { verify(&ex, &[]) };
        let v = out.json();
        prop_assert_ne!(&v["verdict"], "pass", "{}", out.stdout);
        prop_assert_ne!(out.code, 0);
        for s in v["steps"].as_array().unwrap() {
            let emptied = s["target"].as_str().unwrap().contains("llm-scratch/v2/") || empty_v1;
            if emptied {
                prop_assert_ne!(&s["verdict"], "pass", "{}", out.stdout);
                prop_assert!(s["diagnostics"].as_array().unwrap().iter().any(|d| d["code"] == "BG111"), "{}", out.stdout);
            }
        }
    }
}

// ---- an unread artifact whose code is allowed away -------------------------------------------

/// Ways to leave one artifact unread, with the code that says so.
#[derive(Debug, Clone, Copy)]
enum Unread {
    /// A symlink leading outside the prefix (BG108).
    SymlinkOut,
    /// Deleted from the store (BG101).
    Missing,
    /// A different size in the store (BG102): not hashed.
    Truncated,
    /// No sha256 in the bundle (BG003): nothing to compare.
    Unpinned,
    /// A path that escapes the prefix (BG004): refused before any read.
    Escapes,
}

impl Unread {
    fn code(self) -> &'static str {
        match self {
            Unread::SymlinkOut => "BG108",
            Unread::Missing => "BG101",
            Unread::Truncated => "BG102",
            Unread::Unpinned => "BG003",
            Unread::Escapes => "BG004",
        }
    }
    fn apply(self, ex: &Example, i: usize) {
        let name = ARTIFACTS[i];
        let p = ex.store("v2").join(name);
        match self {
            Unread::SymlinkOut => {
                let outside = ex.path().join(format!("outside-{name}"));
                std::fs::rename(&p, &outside).unwrap();
                std::os::unix::fs::symlink(&outside, &p).unwrap();
            }
            Unread::Missing => std::fs::remove_file(&p).unwrap(),
            Unread::Truncated => {
                let b = std::fs::read(&p).unwrap();
                std::fs::write(&p, &b[..b.len() / 2]).unwrap();
            }
            Unread::Unpinned => {
                ex.edit_v2(|b| {
                    b["spec"]["model"]["artifacts"][i].as_mapping_mut().unwrap().remove("sha256");
                });
            }
            Unread::Escapes => {
                ex.edit_v2(|b| b["spec"]["model"]["artifacts"][i]["path"] = yaml(&format!("../v1/{name}")));
            }
        }
    }
}

proptest! {
    #![proptest_config(few())]

    /// An artifact that was not read is never PASS, even with its code
    /// allowed (`-A`) or made a warning (`-W`): the finding may go, the
    /// verdict on unread bytes may not. The other artifacts are still OK.
    #[test]
    fn an_unread_artifact_allowed_away_is_never_pass(
        i in 0usize..5,
        how in prop::sample::select(vec![Unread::SymlinkOut, Unread::Missing, Unread::Truncated, Unread::Unpinned, Unread::Escapes]),
        flag in prop::sample::select(vec!["-A", "-W"]),
    ) {
        let ex = Example::new();
        how.apply(&ex, i);
        let out = verify(&ex, &[flag, how.code()]);
        let v = out.json();
        prop_assert_ne!(&v["steps"][0]["verdict"], "pass", "{:?} of {} with {} {}: {}", how, ARTIFACTS[i], flag, how.code(), out.stdout);
        prop_assert_ne!(out.code, 0);
        let ok = rows(&out).iter().filter(|(_, s)| s == "OK").count();
        prop_assert_eq!(ok, 4, "{}", out.stdout);
    }
}

// ---- names the store listing drops ------------------------------------------------------------

/// Entries of a `file:` prefix that object_store's listing leaves out.
#[derive(Debug, Clone, Copy)]
enum Odd {
    /// `name#<digits>`: object_store's own name for an unfinished upload.
    HashDigits,
    Fifo,
    Socket,
    /// A symlink to nothing.
    Dangling,
    /// An ordinary extra file, for contrast (listed today).
    Plain,
}

fn make_odd(dir: &Path, odd: Odd, n: usize) -> String {
    let name = match odd {
        Odd::HashDigits => format!("ckpt.pt#{n}"),
        Odd::Fifo => format!("pipe{n}"),
        Odd::Socket => format!("sock{n}"),
        Odd::Dangling => format!("gone{n}.bin"),
        Odd::Plain => format!("notes{n}.txt"),
    };
    let p = dir.join(&name);
    match odd {
        Odd::HashDigits | Odd::Plain => std::fs::write(&p, "leftover").unwrap(),
        Odd::Fifo => assert!(std::process::Command::new("mkfifo").arg(&p).status().unwrap().success()),
        Odd::Socket => {
            std::os::unix::net::UnixListener::bind(&p).unwrap();
        }
        Odd::Dangling => std::os::unix::fs::symlink(dir.join("nothing-here"), &p).unwrap(),
    }
    name
}

proptest! {
    #![proptest_config(few())]

    /// Whatever the prefix holds beside the bundle's files is named in the
    /// report (EXTRA, or REFUSED when it cannot be read as an object), never
    /// dropped by the listing; with `--deny-extra` such a prefix never passes.
    #[test]
    fn every_name_in_the_prefix_reaches_the_extra_object_check(
        odd in prop::collection::vec(prop::sample::select(vec![Odd::HashDigits, Odd::Fifo, Odd::Socket, Odd::Dangling, Odd::Plain]), 1..4),
        sub in any::<bool>(),
    ) {
        let ex = Example::new();
        let dir = if sub { ex.store("v2").join("extra") } else { ex.store("v2") };
        std::fs::create_dir_all(&dir).unwrap();
        let names: Vec<String> = odd.iter().enumerate().map(|(n, o)| {
            let name = make_odd(&dir, *o, n);
            if sub { format!("extra/{name}") } else { name }
        }).collect();
        let out = verify(&ex, &[]);
        let rows = rows(&out);
        for n in &names {
            prop_assert!(rows.iter().any(|(p, s)| p == n && (s == "EXTRA" || s == "REFUSED")), "`{}` is not in the report: {}", n, out.stdout);
        }
        // What the listing refused is named by its code (BG108), what it
        // found unlisted as extra (BG104).
        let codes = out.codes();
        prop_assert!(codes.iter().any(|c| c == "BG108" || c == "BG104"), "{:?}", codes);
        let denied = verify(&ex, &["--deny-extra"]);
        prop_assert_ne!(&denied.json()["verdict"], "pass", "{}", denied.stdout);
    }
}

// ---- cluster snapshots: a node twice, nested Lists ---------------------------------------------

const SNAPSHOT: &str = include_str!("../../examples/cluster/roomy.yaml");

fn snapshot_items() -> Vec<Value> {
    let v: Value = serde_yaml_ng::from_str(SNAPSHOT).unwrap();
    v["items"].as_array().unwrap().clone()
}

fn list(items: Vec<Value>) -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn text(v: &Value, json: bool) -> String {
    if json {
        serde_json::to_string_pretty(v).unwrap()
    } else {
        serde_yaml_ng::to_string(v).unwrap()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

    /// A node listed twice would count its capacity twice: the snapshot is
    /// refused naming the node, in YAML and JSON, wherever the copy sits.
    #[test]
    fn a_node_listed_twice_is_refused_naming_it(pick in any::<prop::sample::Index>(), at in any::<prop::sample::Index>(), json in any::<bool>()) {
        let mut items = snapshot_items();
        let nodes: Vec<usize> = (0..items.len()).filter(|i| items[*i]["kind"] == "Node").collect();
        let node = items[*pick.get(&nodes)].clone();
        let name = node["metadata"]["name"].as_str().unwrap().to_string();
        let pos = at.index(items.len() + 1);
        items.insert(pos, node);
        let r = snapshot::parse_snapshot("s.yaml", &text(&list(items), json));
        let e = match r {
            Ok(st) => return Err(TestCaseError::fail(format!("accepted with {} nodes ({} twice)", st.nodes.len(), name))),
            Err(e) => e.to_string(),
        };
        prop_assert!(e.contains("s.yaml") && e.contains(&name) && e.contains("twice"), "{}", e);
    }

    /// kubectl flattens a `kind: List` inside a List; so does the snapshot
    /// reader: every node and pod inside counts, at any depth.
    #[test]
    fn nested_lists_are_flattened_not_dropped(cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..4), json in any::<bool>()) {
        let items = snapshot_items();
        let flat = snapshot::parse_snapshot("flat.yaml", &text(&list(items.clone()), json)).unwrap();
        let mut nested = items;
        for (a, b) in cuts {
            let (x, y) = (a.index(nested.len()), b.index(nested.len()));
            let (lo, hi) = (x.min(y), x.max(y) + 1);
            let inner: Vec<Value> = nested.drain(lo..hi).collect();
            nested.insert(lo, list(inner));
        }
        let st = snapshot::parse_snapshot("nested.yaml", &text(&list(nested), json)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let names = |s: &bundlegate::checks::preflight::ClusterState| {
            let mut n: Vec<String> = s.nodes.iter().map(|n| n.name.clone()).chain(s.pods.iter().map(|p| format!("{}/{}", p.namespace, p.name))).collect();
            n.sort();
            n
        };
        prop_assert_eq!(names(&st), names(&flat));
        prop_assert_eq!((st.pvcs.len(), st.pvs.len(), st.quotas.len(), st.pdbs.len()), (flat.pvcs.len(), flat.pvs.len(), flat.quotas.len(), flat.pdbs.len()));
        prop_assert_eq!(&st.ignored, &flat.ignored);
    }
}

// ---- a rollback target that is the release itself ----------------------------------------------

/// Ways to name the release itself as its own rollback target.
#[derive(Debug, Clone, Copy)]
enum SelfTarget {
    /// `release.yaml` / `./release.yaml`: the same file.
    SameFile(bool),
    /// `../v2/release.yaml`: the same file by another path.
    Roundabout,
    /// A copy of this release elsewhere (its own rollback section differs;
    /// the release digest leaves it out).
    Copy,
    /// A symlink to this release.
    Symlink,
}

proptest! {
    #![proptest_config(few())]

    /// Rolling back to the release itself restores nothing: lint says so
    /// (BG022) however the target is named, and the bundle does not pass.
    #[test]
    fn a_rollback_target_that_is_the_release_itself_is_found(how in prop::sample::select(vec![SelfTarget::SameFile(true), SelfTarget::SameFile(false), SelfTarget::Roundabout, SelfTarget::Copy, SelfTarget::Symlink])) {
        let ex = Example::new();
        let printed = ex.run(&["digest", ex.v2().to_str().unwrap()]).stdout;
        let digest = printed.split_whitespace().find(|w| w.starts_with("sha256:")).unwrap_or_default().to_string();
        prop_assert!(digest.starts_with("sha256:"), "{}", digest);
        let target = match how {
            SelfTarget::SameFile(dot) => if dot { "./release.yaml" } else { "release.yaml" }.to_string(),
            SelfTarget::Roundabout => "../v2/release.yaml".into(),
            SelfTarget::Copy => {
                let dir = ex.path().join("llm-scratch/v2-again");
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::copy(ex.v2(), dir.join("release.yaml")).unwrap();
                edit_yaml(&dir.join("release.yaml"), |b| b["spec"]["rollback"]["bundle"] = yaml("../v1/release.yaml"));
                "../v2-again/release.yaml".into()
            }
            SelfTarget::Symlink => {
                std::os::unix::fs::symlink("release.yaml", ex.path().join("llm-scratch/v2/previous.yaml")).unwrap();
                "previous.yaml".into()
            }
        };
        ex.edit_v2(|b| {
            b["spec"]["rollback"]["bundle"] = yaml(&format!("\"{target}\""));
            b["spec"]["rollback"]["releaseDigest"] = yaml(&format!("\"{digest}\""));
        });
        let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
        prop_assert!(out.codes().iter().any(|c| c == "BG022"), "{:?}: {}", how, out.stdout);
        prop_assert_ne!(out.code, 0);
    }
}

/// A snapshot whose running pod is listed without its containers: its
/// requests are unknown (BG207). `-A` or `-W` quiets the finding to a
/// warning, but the step stays INCONCLUSIVE (exit 1): it passed before.
#[test]
fn preflight_never_passes_an_incomplete_snapshot_allowed_away() {
    let ex = Example::new();
    let text = std::fs::read_to_string(repo().join("examples/cluster/roomy.yaml")).unwrap();
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let items = v["items"].as_sequence_mut().unwrap();
    let pod = items.iter_mut().find(|i| i["kind"] == "Pod").expect("the example lists a pod");
    pod["spec"].as_mapping_mut().unwrap().remove("containers");
    let snap = ex.path().join("incomplete.yaml");
    std::fs::write(&snap, serde_yaml_ng::to_string(&v).unwrap()).unwrap();
    let v2 = ex.v2();
    let base = ["preflight", "--format", "json", v2.to_str().unwrap(), "--snapshot", snap.to_str().unwrap()];
    let out = ex.run(&base);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.codes().contains(&"BG207".to_string()), "{}", out.stdout);
    for flag in ["-A", "-W"] {
        let mut args = base.to_vec();
        args.extend([flag, "BG207"]);
        let out = ex.run(&args);
        assert_eq!(out.code, 1, "{flag}: {}\n{}", out.stdout, out.stderr);
        let r = out.json();
        assert_eq!(r["steps"][0]["verdict"], "inconclusive", "{flag}: {}", out.stdout);
        assert_eq!(out.diag("BG207")["severity"], "warning", "{flag}: kept, as a warning");
    }
}
