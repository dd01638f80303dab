//! `scripts/mutants summary`, the weekly mutation run's one report over its
//! shards: the score, the survivors, and a shard missing or cut short (a
//! runner killed at its time limit still uploads what it wrote, which would
//! otherwise read as a whole run). The shards' files are cargo-mutants 27.1's
//! `outcomes.json`, reduced to the fields the summary reads.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::repo;

fn mutant(name: &str, summary: &str) -> Value {
    json!({"scenario": {"Mutant": {"name": name, "file": "src/x.rs"}}, "summary": summary})
}

/// One shard's outcomes.json: the baseline's result, then the mutants tested,
/// of `total` listed.
fn shard(dir: &Path, k: usize, total: usize, baseline: &str, mutants: Vec<Value>) {
    let mut outcomes = vec![json!({"scenario": "Baseline", "summary": baseline})];
    outcomes.extend(mutants);
    let d = dir.join(format!("mutants-out-{k}"));
    std::fs::create_dir_all(&d).unwrap();
    let doc = json!({
        "outcomes": outcomes, "total_mutants": total, "caught": 0, "missed": 0,
        "start_time": format!("2026-12-07T0{k}:00:00Z"), "end_time": null,
        "cargo_mutants_version": "27.1.0"
    });
    std::fs::write(d.join("outcomes.json"), serde_json::to_vec(&doc).unwrap()).unwrap();
}

fn summary(dir: &Path, shards: &str) -> (i32, String, String) {
    let out = Command::new("bash")
        .arg(repo().join("scripts/mutants"))
        .args(["summary"])
        .arg(dir)
        .arg(shards)
        .output()
        .expect("bash scripts/mutants summary");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn whole_shards_with_no_survivor_pass_and_the_score_counts_timeouts_as_caught() {
    let dir = tempfile::tempdir().unwrap();
    let caught = |n: &str| mutant(n, "CaughtMutant");
    shard(dir.path(), 0, 4, "Success", vec![caught("a"), caught("b"), mutant("c", "Timeout"), mutant("d", "Unviable")]);
    shard(dir.path(), 1, 1, "Success", vec![caught("e")]);
    let (code, out, err) = summary(dir.path(), "2");
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("2 of 2 shards reported"), "{out}");
    assert!(out.contains("| 5 | 3 | 0 | 1 | 1 | 100 % |"), "{out}");
    assert!(out.contains("complete: no survivors"), "{out}");
    assert!(!out.contains("INCOMPLETE"), "{out}");
}

#[test]
fn a_survivor_fails_the_run_and_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let m = |n: &str, s: &str| mutant(n, s);
    shard(
        dir.path(),
        0,
        3,
        "Success",
        vec![m("src/x.rs:1:1: replace > with >= in f", "MissedMutant"), m("g", "CaughtMutant"), m("h", "CaughtMutant")],
    );
    shard(dir.path(), 1, 3, "Success", vec![m("i", "CaughtMutant"), m("j", "Timeout"), m("k", "Unviable")]);
    let (code, out, err) = summary(dir.path(), "2");
    assert_eq!(code, 1, "{out}{err}");
    // 3 caught + 1 timeout of 5 viable.
    assert!(out.contains("| 6 | 3 | 1 | 1 | 1 | 80 % |"), "{out}");
    assert!(out.contains("- src/x.rs:1:1: replace > with >= in f"), "{out}");
    assert!(!out.contains("complete: no survivors"), "{out}");
}

#[test]
fn a_shard_missing_cut_short_or_without_a_baseline_is_incomplete_not_a_pass() {
    let caught = |n: &str| mutant(n, "CaughtMutant");
    // One of three shards never uploaded.
    let dir = tempfile::tempdir().unwrap();
    shard(dir.path(), 0, 1, "Success", vec![caught("a")]);
    shard(dir.path(), 1, 1, "Success", vec![caught("b")]);
    let (code, out, _) = summary(dir.path(), "3");
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("2 of 3 shards reported") && out.contains("INCOMPLETE: 1 shard(s) reported nothing"), "{out}");
    // Every shard reported, one stopped at 2 of its 5 mutants: all it tested
    // was caught, yet the run is not whole.
    let dir = tempfile::tempdir().unwrap();
    shard(dir.path(), 0, 1, "Success", vec![caught("a")]);
    shard(dir.path(), 1, 5, "Success", vec![caught("b"), caught("c")]);
    let (code, out, _) = summary(dir.path(), "2");
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("tested 2 of 5 mutants"), "{out}");
    assert!(!out.contains("complete: no survivors"), "{out}");
    // A baseline that failed tests nothing: cargo-mutants lists no outcome.
    let dir = tempfile::tempdir().unwrap();
    shard(dir.path(), 0, 0, "Failure", vec![]);
    let (code, out, _) = summary(dir.path(), "1");
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("(baseline: Failure)"), "{out}");
}

#[test]
fn what_is_not_a_run_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, err) = summary(&dir.path().join("absent"), "2");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("absent"), "{err}");
    let (code, _, err) = summary(dir.path(), "two");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("SHARDS must be a count"), "{err}");
    std::fs::create_dir_all(dir.path().join("s")).unwrap();
    std::fs::write(dir.path().join("s/outcomes.json"), "not json").unwrap();
    let (code, _, err) = summary(dir.path(), "1");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not cargo-mutants output"), "{err}");
}

fn table(dir: &Path) -> (i32, String, String) {
    let out = Command::new("bash").arg(repo().join("scripts/mutants")).arg("table").arg(dir).output().expect("bash");
    (
        out.status.code().expect("exited"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// docs/testing.md's scores table is `scripts/mutants table mutants/runs`:
/// one row per recorded run, each counted by `summary`, never typed by hand.
#[test]
fn the_scores_table_in_the_docs_is_generated_from_the_recorded_runs() {
    let (code, out, err) = table(&repo().join("mutants/runs"));
    assert_eq!(code, 0, "{err}");
    assert!(out.lines().count() >= 3, "no recorded run:\n{out}");
    let docs = std::fs::read_to_string(repo().join("docs/testing.md")).unwrap();
    let begin = "<!-- scripts/mutants table mutants/runs: begin -->\n";
    let end = "<!-- scripts/mutants table mutants/runs: end -->";
    let block = docs.split_once(begin).and_then(|(_, rest)| rest.split_once(end)).map(|(b, _)| b);
    assert_eq!(block, Some(out.as_str()), "docs/testing.md's table differs from `scripts/mutants table mutants/runs`");
}

/// A recorded run cut short (fewer outcomes than mutants) is refused, not
/// shown as a score; a run without its scope line too.
#[test]
fn the_scores_table_refuses_a_run_cut_short_or_without_scope() {
    let dir = tempfile::tempdir().unwrap();
    shard(dir.path(), 0, 3, "Success", vec![mutant("a", "CaughtMutant")]);
    let run = dir.path().join("mutants-out-0");
    std::fs::write(run.join("scope.md"), "`src/x.rs`\n").unwrap();
    let (code, _, err) = table(dir.path());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("not a whole run"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    shard(dir.path(), 0, 1, "Success", vec![mutant("a", "CaughtMutant")]);
    let (code, _, err) = table(dir.path());
    assert_eq!(code, 2);
    assert!(err.contains("no scope.md"), "{err}");
    std::fs::write(dir.path().join("mutants-out-0/scope.md"), "`src/x.rs`, its unit tests\n").unwrap();
    let (code, out, _) = table(dir.path());
    assert_eq!(code, 0);
    assert!(out.ends_with("| mutants-out-0 | `src/x.rs`, its unit tests | 1 | 1 | 0 | 0 | 0 | 100 % |\n"), "{out}");
}
