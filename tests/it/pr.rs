//! PR mode (issue #6): changed bundles from real git repositories, the sticky
//! comment against the GitHub stand-in (validated against GitHub's OpenAPI
//! description), the job summary, annotations and outputs, and the whole
//! `bundlegate run pipelines/pull-request.yaml` flow.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bundlegate::adapters::git::changed_bundles;
use bundlegate::adapters::github::{GithubClient, GithubError, RetryPolicy};
use bundlegate::app::comment::{self as pr, publish_comment, publish_comment_as, GithubEnv};
use bundlegate::app::ctx::Ctx;
use bundlegate::diag::Diagnostic;
use bundlegate::diag::Span;
use bundlegate::report::comment::COMMENT_LIMIT;
use bundlegate::report::comment::{sticky_parts, CommentOutcome};
use bundlegate::report::{Report, StepReport, Verdict};
use serde_json::Value;

use crate::github_standin::StandIn;
use crate::support::*;

const TOKEN: &str = "ghs_StandInToken0123456789abcdefXYZ";

// ---------------------------------------------------------------------------
// helpers

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn fast() -> RetryPolicy {
    RetryPolicy { max_retries: 3, base_backoff: Duration::from_millis(10), max_wait: Duration::from_secs(5) }
}

fn client(s: &StandIn) -> GithubClient {
    GithubClient::with_policy(&s.url, TOKEN, fast()).unwrap()
}

fn publish(s: &StandIn, parts: Vec<String>) -> Result<CommentOutcome, GithubError> {
    rt().block_on(async { publish_comment(&client(s), "o", "r", 7, parts).await })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs");
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The shipped example (v1, v2, store) committed on `main`, with `feature`
/// checked out at the same commit.
pub(crate) fn pr_repo() -> Example {
    let ex = Example::new();
    std::fs::write(ex.path().join("README.md"), "model releases\n").unwrap();
    git(ex.path(), &["init", "-q", "-b", "main"]);
    git(ex.path(), &["add", "-A"]);
    git(ex.path(), &["commit", "-q", "-m", "v1 and v2 releases"]);
    git(ex.path(), &["checkout", "-q", "-b", "feature"]);
    ex
}

pub(crate) fn replace_in(p: &Path, from: &str, to: &str) {
    let t = std::fs::read_to_string(p).unwrap();
    assert!(t.contains(from), "`{from}` not in {}", p.display());
    std::fs::write(p, t.replacen(from, to, 1)).unwrap();
}

pub(crate) fn commit_all(dir: &Path, msg: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", msg]);
}

/// A PR that edits v2's generation config.
fn pr_changing_v2() -> Example {
    let ex = pr_repo();
    replace_in(&ex.v2(), "maxOutputTokens: 512", "maxOutputTokens: 1024");
    commit_all(ex.path(), "v2: longer answers");
    ex
}

/// `bundlegate run pipelines/pull-request.yaml` in `dir` with a clean GitHub
/// environment plus `env` (the test process may itself run in Actions).
pub(crate) fn run_pr(dir: &Path, extra_args: &[&str], env: &[(&str, &str)]) -> Out {
    let pipeline = repo().join("pipelines/pull-request.yaml");
    let mut args = vec!["run", pipeline.to_str().unwrap(), "--repo", ".", "--base", "main", "--head", "feature"];
    // JSON unless the test asks for another format.
    if !extra_args.contains(&"--format") {
        args.extend_from_slice(&["--format", "json"]);
    }
    args.extend_from_slice(extra_args);
    let mut c = Command::new(crate::support::bin());
    c.args(&args).current_dir(dir).env("NO_COLOR", "1");
    for (k, _) in std::env::vars() {
        if k.starts_with("GITHUB_") || k.starts_with("BUNDLEGATE_") || k == "RUST_LOG" {
            c.env_remove(&k);
        }
    }
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run bundlegate");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

struct GhFiles {
    dir: tempfile::TempDir,
}

impl GhFiles {
    fn new() -> GhFiles {
        GhFiles { dir: tempfile::tempdir().unwrap() }
    }
    fn summary(&self) -> PathBuf {
        self.dir.path().join("step_summary.md")
    }
    fn output(&self) -> PathBuf {
        self.dir.path().join("output.txt")
    }
    fn read_summary(&self) -> String {
        std::fs::read_to_string(self.summary()).unwrap_or_default()
    }
    fn read_output(&self) -> String {
        std::fs::read_to_string(self.output()).unwrap_or_default()
    }
    /// Outputs parsed from the `name<<DELIM` heredoc form.
    fn outputs(&self) -> Vec<(String, String)> {
        let text = self.read_output();
        let mut out = Vec::new();
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if let Some((k, delim)) = l.split_once("<<") {
                let mut v = Vec::new();
                for l in lines.by_ref() {
                    if l == delim {
                        break;
                    }
                    v.push(l);
                }
                out.push((k.to_string(), v.join("\n")));
            } else if let Some((k, v)) = l.split_once('=') {
                out.push((k.to_string(), v.to_string()));
            }
        }
        out
    }
}

fn gh_env<'a>(s: &'a StandIn, f: &'a GhFiles) -> Vec<(&'a str, String)> {
    vec![
        ("GITHUB_API_URL", s.url.clone()),
        ("GITHUB_TOKEN", TOKEN.to_string()),
        ("GITHUB_REPOSITORY", "o/r".to_string()),
        ("BUNDLEGATE_PR_NUMBER", "7".to_string()),
        ("GITHUB_STEP_SUMMARY", f.summary().display().to_string()),
        ("GITHUB_OUTPUT", f.output().display().to_string()),
    ]
}

fn as_refs<'a>(v: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    v.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn env_for(s: &StandIn, f: &GhFiles) -> GithubEnv {
    GithubEnv {
        api_url: s.url.clone(),
        token: Some(TOKEN.into()),
        repository: Some("o/r".into()),
        pr_number: Some(7),
        step_summary: Some(f.summary()),
        output: Some(f.output()),
        marker_key: "report".into(),
        retry: fast(),
        ..Default::default()
    }
}

fn sample_report() -> Report {
    let mut r = Report::new("run pull-request");
    let mut lint = StepReport::new("lint", "llm-scratch/v2/release.yaml");
    lint.diagnostics.push(
        Diagnostic::new(bundlegate::diag::Code::ALL[0], "image `x:latest` is not pinned, 100% sure")
            .at(Some(Span { file: "llm-scratch/v2/release.yaml".into(), line: 10, column: 5 }))
            .help("pin it: image@sha256:…"),
    );
    lint.verdict = lint.verdict_from_diagnostics();
    lint.data = serde_json::json!({"releaseDigest": "sha256:abc"});
    r.push(lint);
    r
}

// ---------------------------------------------------------------------------
// changed_bundles on real repositories

#[test]
fn pr_changed_bundles_modified_with_merge_base_semantics() {
    let ex = pr_changing_v2();
    // The base branch moves on after the PR branched: its change is not the PR's.
    git(ex.path(), &["checkout", "-q", "main"]);
    replace_in(&ex.v1(), "version: v1", "version: v1 # touched on main");
    commit_all(ex.path(), "main moves on");
    git(ex.path(), &["checkout", "-q", "feature"]);

    let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
    assert_eq!(ch.len(), 1, "{ch:#?}");
    assert_eq!(ch[0].path, PathBuf::from("llm-scratch/v2/release.yaml"));
    assert_eq!(ch[0].status, "modified");
    assert!(ch[0].base_text.as_deref().unwrap().contains("maxOutputTokens: 512"));
    assert!(ch[0].head_text.contains("maxOutputTokens: 1024"));
}

#[test]
fn pr_changed_bundles_added_renamed_deleted_and_sniffed() {
    let ex = pr_repo();
    // added: a bundle under another name, found by `kind: ReleaseBundle`
    // (small and unlike v2, so rename detection does not pair it with v2's deletion)
    std::fs::create_dir_all(ex.path().join("other")).unwrap();
    std::fs::write(
        ex.path().join("other/serving-bundle.yml"),
        "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata:\n  name: other\n",
    )
    .unwrap();
    // renamed: v1 moves
    std::fs::create_dir_all(ex.path().join("archive/v1")).unwrap();
    git(ex.path(), &["mv", "llm-scratch/v1/release.yaml", "archive/v1/release.yaml"]);
    // deleted: v2 goes away
    git(ex.path(), &["rm", "-q", "llm-scratch/v2/release.yaml"]);
    // not bundles: docs and a plain Kubernetes manifest
    std::fs::write(ex.path().join("README.md"), "changed\n").unwrap();
    std::fs::write(ex.path().join("deploy.yaml"), "kind: Deployment\nspec:\n  kind: ReleaseBundle\n").unwrap();
    commit_all(ex.path(), "reshuffle");

    let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
    let summary: Vec<(String, &str)> = ch.iter().map(|c| (c.path.display().to_string(), c.status.as_str())).collect();
    assert_eq!(
        summary,
        vec![
            ("archive/v1/release.yaml".to_string(), "renamed"),
            ("llm-scratch/v2/release.yaml".to_string(), "deleted"),
            ("other/serving-bundle.yml".to_string(), "added"),
        ]
    );
    let renamed = &ch[0];
    assert_eq!(renamed.base_text.as_deref(), Some(renamed.head_text.as_str()), "a pure move keeps its text");
    let deleted = &ch[1];
    assert!(deleted.head_text.is_empty() && deleted.base_text.as_deref().unwrap().contains("version: v2"));
    assert!(ch[2].base_text.is_none());
}

#[test]
fn pr_changed_bundles_unknown_revision_is_a_clear_error() {
    let ex = pr_repo();
    let e = changed_bundles(ex.path(), "no-such-branch", "feature").unwrap_err();
    assert!(format!("{e:#}").contains("no-such-branch"), "{e:#}");
    assert!(changed_bundles(ex.path(), "main", "feature").unwrap().is_empty());
}

// ---------------------------------------------------------------------------
// The sticky comment against the stand-in

#[test]
fn pr_first_comment_is_created() {
    let s = StandIn::start(TOKEN);
    let o = publish(&s, sticky_parts("### report\n", "report")).unwrap();
    assert_eq!((o.parts, o.created.len(), o.updated.len(), o.deleted.len()), (1, 1, 0, 0));
    let c = s.comments(7);
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].body, "<!-- bundlegate:report part 1/1 -->\n### report\n");
    assert!(o.url.unwrap().contains("#issuecomment-"));
    s.assert_no_violations();
}

#[test]
fn pr_second_run_updates_in_place() {
    let s = StandIn::start(TOKEN);
    s.seed_comment("o", "r", 7, "reviewer", "looks good");
    publish(&s, sticky_parts("run 1\n", "report")).unwrap();
    let first_id = s.bundlegate_comments(7)[0].id;

    let o = publish(&s, sticky_parts("run 2\n", "report")).unwrap();
    assert_eq!(o.created, Vec::<u64>::new());
    assert_eq!(o.updated, vec![first_id]);
    let ours = s.bundlegate_comments(7);
    assert_eq!(ours.len(), 1);
    assert!(ours[0].body.ends_with("run 2\n"));
    assert_eq!(s.comments(7).len(), 2, "the reviewer's comment is untouched");
    assert!(
        s.calls().contains(&("PATCH".to_string(), format!("/repos/o/r/issues/comments/{first_id}"))),
        "documented method PATCH: {:?}",
        s.calls()
    );

    // Same content again: nothing to write.
    let before = s.requests().len();
    let o = publish(&s, sticky_parts("run 2\n", "report")).unwrap();
    assert_eq!(o.unchanged, vec![first_id]);
    assert!(s.requests()[before..].iter().all(|r| r.method == "GET"));
    s.assert_no_violations();
}

#[test]
fn pr_long_report_splits_into_parts_then_shrinks_deleting_surplus() {
    let s = StandIn::start(TOKEN);
    let mut md = String::from("### bundlegate run: ❌ FAIL\n\n<details><summary>manifest diff</summary>\n\n```diff\n");
    for i in 0..6000 {
        md.push_str(&format!("+      - name: ENV_{i}\n+        value: \"déjà vu — {i}\"\n"));
    }
    md.push_str("```\n\n</details>\n");
    assert!(md.chars().count() > 3 * COMMENT_LIMIT);
    let parts = sticky_parts(&md, "report");
    let n = parts.len();
    assert!(n >= 4, "{n}");
    let o = publish(&s, parts).unwrap();
    assert_eq!(o.created.len(), n);
    let ours = s.bundlegate_comments(7);
    assert_eq!(ours.len(), n);
    for (i, c) in ours.iter().enumerate() {
        assert!(c.body.starts_with(&format!("<!-- bundlegate:report part {}/{n} -->\n", i + 1)), "{}", &c.body[..60]);
        assert!(c.body.chars().count() <= COMMENT_LIMIT);
    }
    let first = ours[0].id;

    // The next push is short: one part, updated in place, the rest deleted.
    let o = publish(&s, sticky_parts("### bundlegate run: ✅ PASS\n", "report")).unwrap();
    assert_eq!(o.updated, vec![first]);
    assert_eq!(o.deleted.len(), n - 1);
    let ours = s.bundlegate_comments(7);
    assert_eq!(ours.len(), 1);
    assert_eq!(ours[0].id, first);
    assert!(ours[0].body.starts_with("<!-- bundlegate:report part 1/1 -->"));
    s.assert_no_violations();
}

#[test]
fn pr_marker_found_beyond_the_first_page() {
    let s = StandIn::start(TOKEN);
    // More than a full page at per_page=100 (and far more than the default 30)
    // before our comment, and more after it.
    for i in 0..130 {
        s.seed_comment("o", "r", 7, "chatty-reviewer", &format!("nit {i}"));
    }
    let ours = s.seed_comment("o", "r", 7, "github-actions[bot]", "<!-- bundlegate:report part 1/1 -->\nold");
    for i in 0..40 {
        s.seed_comment("o", "r", 7, "chatty-reviewer", &format!("more {i}"));
    }
    let o = publish(&s, sticky_parts("new\n", "report")).unwrap();
    assert_eq!(o.updated, vec![ours], "{o:?}");
    assert!(o.created.is_empty());
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    let gets: Vec<_> = s.requests().into_iter().filter(|r| r.method == "GET").collect();
    assert_eq!(gets.len(), 2, "two pages at per_page=100");
    assert!(gets[1].query.contains(&("page".to_string(), "2".to_string())), "{:?}", gets[1].query);
    s.assert_no_violations();
}

#[test]
fn pr_duplicates_and_other_keys() {
    let s = StandIn::start(TOKEN);
    let keep = s.seed_comment("o", "r", 7, "github-actions[bot]", "<!-- bundlegate:report part 1/1 -->\nA");
    let dup = s.seed_comment(
        "o",
        "r",
        7,
        "github-actions[bot]",
        "<!-- bundlegate:report part 1/1 -->\nA again (a retried POST)",
    );
    let stale = s.seed_comment("o", "r", 7, "github-actions[bot]", "<!-- bundlegate:report part 3/3 -->\nold tail");
    let other =
        s.seed_comment("o", "r", 7, "github-actions[bot]", "<!-- bundlegate:post-merge part 1/1 -->\nanother pipeline");
    let quote = s.seed_comment("o", "r", 7, "reviewer", "> <!-- bundlegate:report part 1/1 --> why is this here?");
    let o = publish(&s, sticky_parts("B\n", "report")).unwrap();
    assert_eq!(o.updated, vec![keep]);
    assert_eq!(o.deleted, vec![dup, stale]);
    let ids: Vec<u64> = s.comments(7).iter().map(|c| c.id).collect();
    assert_eq!(ids, vec![keep, other, quote]);
    s.assert_no_violations();
}

#[test]
fn pr_fork_403_is_a_distinct_error() {
    let s = StandIn::start(TOKEN);
    s.read_only(7);
    let e = publish(&s, sticky_parts("x\n", "report")).unwrap_err();
    assert!(e.is_forbidden(), "{e}");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(s.comments(7).is_empty());
    // A plain 403 is not retried.
    assert_eq!(s.requests().iter().filter(|r| r.method == "POST").count(), 1);
    s.assert_no_violations();
}

#[test]
fn pr_5xx_is_retried_then_succeeds() {
    let s = StandIn::start(TOKEN);
    s.fail_next(2, 502);
    publish(&s, sticky_parts("x\n", "report")).unwrap();
    let st: Vec<u16> = s.requests().iter().map(|r| r.status).collect();
    assert_eq!(st, vec![502, 502, 200, 201]);
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    s.assert_no_violations();
}

#[test]
fn pr_5xx_gives_up_after_retries() {
    let s = StandIn::start(TOKEN);
    s.fail_next(10, 503);
    let e = publish(&s, sticky_parts("x\n", "report")).unwrap_err();
    assert!(matches!(e, GithubError::Server { status: 503, attempts: 4, .. }), "{e:?}");
    assert_eq!(s.requests().len(), 4);
}

#[test]
fn pr_secondary_rate_limit_waits_for_retry_after() {
    let s = StandIn::start(TOKEN);
    s.secondary_rate_limit_next(1, 1);
    let t = Instant::now();
    publish(&s, sticky_parts("x\n", "report")).unwrap();
    assert!(t.elapsed() >= Duration::from_millis(950), "did not wait: {:?}", t.elapsed());
    assert_eq!(s.requests()[0].status, 403);
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    s.assert_no_violations();
}

#[test]
fn pr_github_enterprise_base_path() {
    let s = StandIn::start_with_prefix(TOKEN, "/api/v3");
    for i in 0..120 {
        s.seed_comment("o", "r", 7, "someone", &format!("c{i}"));
    }
    publish(&s, sticky_parts("x\n", "report")).unwrap();
    publish(&s, sticky_parts("y\n", "report")).unwrap();
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    s.assert_no_violations();
}

// ---------------------------------------------------------------------------
// The comment step in-process (explicit environment)

#[test]
fn pr_step_without_token_still_writes_summary_and_outputs() {
    let f = GhFiles::new();
    let env = GithubEnv {
        step_summary: Some(f.summary()),
        output: Some(f.output()),
        marker_key: "report".into(),
        ..Default::default()
    };
    let mut ann = Vec::new();
    let s = pr::github_step_with(&ctx(), &sample_report(), &env, &mut ann);
    assert_eq!(s.verdict, Verdict::NotRun);
    assert!(s.summary.contains("GITHUB_TOKEN is not set"), "{}", s.summary);
    let summary = f.read_summary();
    assert!(summary.contains("### bundlegate run pull-request"), "{summary}");
    assert!(summary.contains("no comment posted: GITHUB_TOKEN is not set"));
    let outs = f.outputs();
    assert_eq!(outs[0], ("verdict".to_string(), "fail".to_string()));
    assert_eq!(outs[1].0, "release-digests");
    let d: Value = serde_json::from_str(&outs[1].1).unwrap();
    assert_eq!(d["llm-scratch/v2/release.yaml"], "sha256:abc");
    let ann = String::from_utf8(ann).unwrap();
    assert_eq!(
        ann,
        "::error file=llm-scratch/v2/release.yaml,line=10,col=5,title=BG001 image-not-pinned::image `x:latest` is not pinned, 100%25 sure%0Ahelp: pin it: image@sha256:…\n"
    );
    // No PR number: same "not run".
    let env = GithubEnv { token: Some(TOKEN.into()), repository: Some("o/r".into()), ..Default::default() };
    let s = pr::github_step_with(&ctx(), &sample_report(), &env, &mut Vec::new());
    assert_eq!(s.verdict, Verdict::NotRun);
    assert!(s.summary.contains("no pull request number"), "{}", s.summary);
}

#[test]
fn pr_step_fork_pr_is_not_run_with_reason_and_summary() {
    let s = StandIn::start(TOKEN);
    s.read_only(7);
    let f = GhFiles::new();
    let mut env = env_for(&s, &f);
    env.fork = true;
    let st = pr::github_step_with(&ctx(), &sample_report(), &env, &mut Vec::new());
    assert_eq!(st.verdict, Verdict::NotRun, "{}", st.summary);
    assert!(
        st.summary.contains("no comment posted: the token is read-only (fork PR); see the job summary"),
        "{}",
        st.summary
    );
    assert_eq!(st.data["comment"]["forbidden"], true);
    assert!(f.read_summary().contains("### bundlegate run pull-request"));
    assert!(f.read_summary().contains("read-only (fork PR)"));
    assert!(s.comments(7).is_empty());
    s.assert_no_violations();
}

#[test]
fn pr_step_5xx_after_retries_is_error() {
    let s = StandIn::start(TOKEN);
    s.fail_next(50, 502);
    let f = GhFiles::new();
    let st = pr::github_step_with(&ctx(), &sample_report(), &env_for(&s, &f), &mut Vec::new());
    assert_eq!(st.verdict, Verdict::Error);
    assert!(st.summary.contains("HTTP 502 after 4 attempt(s)"), "{}", st.summary);
    assert!(f.read_summary().contains("PR comment failed"), "the summary says so too");
}

#[test]
fn pr_step_posts_and_creates_check_run() {
    let s = StandIn::start(TOKEN);
    let f = GhFiles::new();
    let mut env = env_for(&s, &f);
    env.check_run = true;
    env.head_sha = Some("0123456789abcdef0123456789abcdef01234567".into());
    let st = pr::github_step_with(&ctx(), &sample_report(), &env, &mut Vec::new());
    assert_eq!(st.verdict, Verdict::Pass, "{}", st.summary);
    assert_eq!(st.target, "o/r#7");
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    let runs = s.check_runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["conclusion"], "failure");
    assert_eq!(runs[0]["head_sha"], "0123456789abcdef0123456789abcdef01234567");
    assert!(st.summary.contains(&format!("check run {} created", runs[0]["id"])), "{}", st.summary);
    s.assert_no_violations();
}

#[test]
fn pr_step_never_leaks_the_token() {
    let s = StandIn::start(TOKEN);
    let f = GhFiles::new();
    let mut r = sample_report();
    // Even if a report somehow carried the token, nothing we write shows it.
    let mut leaky = StepReport::new("verify", "x");
    leaky.summary = format!("store said: bad credentials {TOKEN}");
    leaky.diagnostics.push(Diagnostic::new(bundlegate::diag::Code::ALL[0], format!("token={TOKEN}")));
    r.push(leaky);
    let mut ann = Vec::new();
    let st = pr::github_step_with(&ctx(), &r, &env_for(&s, &f), &mut ann);
    assert_eq!(st.verdict, Verdict::Pass, "{}", st.summary);
    let everything = [
        String::from_utf8(ann).unwrap(),
        f.read_summary(),
        f.read_output(),
        serde_json::to_string(&st).unwrap(),
        s.comments(7).iter().map(|c| c.body.clone()).collect::<Vec<_>>().join("\n"),
    ];
    for (i, text) in everything.iter().enumerate() {
        assert!(!text.contains(TOKEN), "token in output #{i}: {text}");
    }
    assert!(everything[1].contains("***"));
}

#[test]
fn pr_step_summary_is_capped_at_one_mib() {
    let f = GhFiles::new();
    std::fs::write(f.summary(), "x".repeat(1000) + "\n").unwrap();
    let mut r = Report::new("run pull-request");
    let mut big = StepReport::new("render", "b");
    big.details.push(bundlegate::report::Detail {
        title: "huge".into(),
        lang: "yaml".into(),
        body: "key: välue\n".repeat(200_000),
    });
    r.push(big);
    let env = GithubEnv { step_summary: Some(f.summary()), marker_key: "report".into(), ..Default::default() };
    pr::github_step_with(&ctx(), &r, &env, &mut Vec::new());
    let text = f.read_summary();
    assert!(text.len() <= pr::SUMMARY_LIMIT, "{}", text.len());
    assert!(text.starts_with(&"x".repeat(1000)), "appends");
    assert!(text.contains("**Truncated**"));
}

// ---------------------------------------------------------------------------
// End to end: `bundlegate run pipelines/pull-request.yaml`

#[test]
fn pr_e2e_first_run_comments_second_run_updates() {
    let ex = pr_changing_v2();
    let s = StandIn::start(TOKEN);
    let f = GhFiles::new();
    let env = gh_env(&s, &f);
    let out = run_pr(ex.path(), &[], &as_refs(&env));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let r = out.json();
    let c = step(&r, "comment");
    assert_eq!(c["verdict"], "pass", "{c:#}");
    let ours = s.bundlegate_comments(7);
    assert_eq!(ours.len(), 1);
    assert!(ours[0].body.contains("llm-scratch/v2/release.yaml"));
    assert!(
        ours[0].body.lines().any(|l| l.starts_with('+') && l.trim_end().ends_with("value: \"1024\"")),
        "manifest diff in the comment:\n{}",
        ours[0].body
    );
    assert!(ours[0].body.contains("<details>"));

    let digest = step(&r, "lint")["data"]["releaseDigest"].as_str().unwrap().to_string();
    let outs = f.outputs();
    assert!(outs.contains(&("verdict".to_string(), "pass".to_string())), "{outs:?}");
    let digests: Value = serde_json::from_str(&outs.iter().find(|(k, _)| k == "release-digests").unwrap().1).unwrap();
    assert_eq!(digests["./llm-scratch/v2/release.yaml"], Value::String(digest), "{digests}");
    assert!(f.read_summary().contains("### bundlegate run pull-request"));

    // Second push to the PR: the same comment is edited.
    replace_in(&ex.v2(), "maxOutputTokens: 1024", "maxOutputTokens: 2048");
    commit_all(ex.path(), "even longer");
    let out = run_pr(ex.path(), &[], &as_refs(&env));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ours2 = s.bundlegate_comments(7);
    assert_eq!(ours2.len(), 1);
    assert_eq!(ours2[0].id, ours[0].id);
    assert!(ours2[0].body.contains("\"2048\""));
    assert_eq!(s.requests().iter().filter(|r| r.method == "POST").count(), 1, "{:?}", s.calls());
    s.assert_no_violations();
}

#[test]
fn pr_e2e_fork_pr_writes_summary_and_says_why() {
    let ex = pr_changing_v2();
    let s = StandIn::start(TOKEN);
    s.read_only(7);
    let f = GhFiles::new();
    let event = f.dir.path().join("event.json");
    std::fs::write(
        &event,
        serde_json::json!({"pull_request": {"number": 7, "head": {"sha": "abc", "repo": {"fork": true, "full_name": "fork/r"}}, "base": {"repo": {"full_name": "o/r"}}}}).to_string(),
    )
    .unwrap();
    let mut env = gh_env(&s, &f);
    env.retain(|(k, _)| *k != "BUNDLEGATE_PR_NUMBER");
    env.push(("GITHUB_EVENT_PATH", event.display().to_string()));
    let out = run_pr(ex.path(), &[], &as_refs(&env));
    assert_eq!(out.code, 0, "a read-only token is not a tool failure:\n{}\n{}", out.stdout, out.stderr);
    let c = step(&out.json(), "comment").clone();
    assert_eq!(c["verdict"], "not-run", "{c:#}");
    assert!(
        c["summary"]
            .as_str()
            .unwrap()
            .contains("no comment posted: the token is read-only (fork PR); see the job summary"),
        "{c:#}"
    );
    assert!(f.read_summary().contains("### bundlegate run pull-request"));
    assert!(s.comments(7).is_empty());
    s.assert_no_violations();
}

#[test]
fn pr_e2e_5xx_then_success_is_retried() {
    let ex = pr_changing_v2();
    let s = StandIn::start(TOKEN);
    s.fail_next(2, 503);
    let f = GhFiles::new();
    let out = run_pr(ex.path(), &[], &as_refs(&gh_env(&s, &f)));
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out.json(), "comment")["verdict"], "pass");
    let st: Vec<u16> = s.requests().iter().map(|r| r.status).collect();
    assert_eq!(&st[..3], &[503, 503, 200], "{st:?}");
    assert_eq!(s.bundlegate_comments(7).len(), 1);
    s.assert_no_violations();
}

#[test]
fn pr_e2e_5xx_forever_is_an_error() {
    let ex = pr_changing_v2();
    let s = StandIn::start(TOKEN);
    s.fail_next(100, 502);
    let f = GhFiles::new();
    let out = run_pr(ex.path(), &[], &as_refs(&gh_env(&s, &f)));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out.json(), "comment")["verdict"], "error");
    assert!(f.read_summary().contains("PR comment failed"));
}

#[test]
fn pr_e2e_no_changed_bundles() {
    let ex = pr_repo();
    std::fs::write(ex.path().join("README.md"), "docs only\n").unwrap();
    commit_all(ex.path(), "docs");
    let s = StandIn::start(TOKEN);
    let f = GhFiles::new();
    let out = run_pr(ex.path(), &[], &as_refs(&gh_env(&s, &f)));
    let r = out.json();
    assert_eq!(step(&r, "select")["verdict"], "not-run");
    assert!(step(&r, "select")["summary"].as_str().unwrap().contains("no release bundle"), "{r:#}");
    assert!(r["steps"].as_array().unwrap().iter().all(|s| s["step"] != "lint"), "nothing to lint");
    // The PR still hears that nothing needed checking.
    let ours = s.bundlegate_comments(7);
    assert_eq!(ours.len(), 1, "{}", out.stderr);
    assert!(ours[0].body.contains("no release bundle"), "{}", ours[0].body);
    s.assert_no_violations();
}

#[test]
fn pr_e2e_annotations_point_at_the_bundle_line() {
    let ex = pr_repo();
    replace_in(
        &ex.v2(),
        "llm-serve@sha256:7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c",
        "llm-serve:latest",
    );
    commit_all(ex.path(), "unpinned image");
    let line = line_of(&std::fs::read_to_string(ex.v2()).unwrap(), "image:");
    let s = StandIn::start(TOKEN);
    let f = GhFiles::new();
    let out = run_pr(ex.path(), &[], &as_refs(&gh_env(&s, &f)));
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    let want = format!("::error file=llm-scratch/v2/release.yaml,line={line},");
    assert!(
        out.stderr.lines().any(|l| l.starts_with(&want) && l.contains("title=BG001 image-not-pinned::")),
        "want {want} in stderr:\n{}",
        out.stderr
    );
    assert!(!out.stdout.contains("::error"), "stdout is the JSON report");
    assert!(f.outputs().contains(&("verdict".to_string(), "fail".to_string())));
    s.assert_no_violations();
}

#[test]
fn pr_e2e_token_never_printed() {
    let ex = pr_changing_v2();
    let s = StandIn::start(TOKEN);
    s.fail_next(1, 502);
    let f = GhFiles::new();
    let mut env = gh_env(&s, &f);
    // Verbose logs must not show it either.
    env.push(("RUST_LOG", "trace".into()));
    let out = run_pr(ex.path(), &[], &as_refs(&env));
    assert_eq!(out.code, 0, "{}", out.stderr);
    for (name, text) in [
        ("stdout", &out.stdout),
        ("stderr", &out.stderr),
        ("summary", &f.read_summary()),
        ("outputs", &f.read_output()),
    ] {
        assert!(!text.contains(TOKEN), "token printed on {name}");
    }
    // ...and a failure mentioning the API does not either.
    let gone = StandIn::start(TOKEN);
    let url = gone.url.clone();
    drop(gone);
    let mut env = gh_env(&s, &f);
    env[0].1 = url;
    let out = run_pr(ex.path(), &[], &as_refs(&env));
    assert_eq!(step(&out.json(), "comment")["verdict"], "error", "{}", out.stdout);
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
}

// ---------------------------------------------------------------------------
// One detection rule: PR mode, audit's tree walk and Argo CD discover agree

/// Each form of bundle that `argocd discover` accepts, added by a PR: PR mode
/// finds it, audit's walk finds it, discover finds it.
#[test]
fn pr_json_spaced_kind_and_symlinked_bundles_are_detected_everywhere() {
    let ex = pr_repo();
    let v2_text = std::fs::read_to_string(ex.v2()).unwrap();
    let v2_json = serde_json::to_string_pretty(&serde_yaml_ng::from_str::<Value>(&v2_text).unwrap()).unwrap();
    std::fs::create_dir_all(ex.path().join("json-svc")).unwrap();
    std::fs::write(ex.path().join("json-svc/release.json"), &v2_json).unwrap();
    std::fs::write(ex.path().join("json-svc/serving.json"), &v2_json).unwrap();
    std::fs::create_dir_all(ex.path().join("spaced")).unwrap();
    std::fs::write(
        ex.path().join("spaced/model.yaml"),
        v2_text.replacen("kind: ReleaseBundle", "kind:   ReleaseBundle", 1),
    )
    .unwrap();
    std::fs::create_dir_all(ex.path().join("current")).unwrap();
    std::os::unix::fs::symlink("../llm-scratch/v2/release.yaml", ex.path().join("current/release.yaml")).unwrap();
    commit_all(ex.path(), "more bundle forms");

    let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
    let paths: Vec<String> = ch.iter().map(|c| c.path.display().to_string()).collect();
    let want = ["current/release.yaml", "json-svc/release.json", "json-svc/serving.json", "spaced/model.yaml"];
    assert_eq!(paths, want, "{ch:#?}");
    let link = ch.iter().find(|c| c.path.ends_with("current/release.yaml")).unwrap();
    assert_eq!(link.head_text, v2_text, "a symlinked bundle is read through to its target");

    let found = bundlegate::adapters::bundle_files::find_bundles(ex.path()).unwrap();
    for w in want {
        assert!(found.iter().any(|p| p.ends_with(w)), "audit misses {w}: {found:?}");
    }
    // An Application whose source path is the repository root, pointed at each.
    let src = ex.path().canonicalize().unwrap();
    for w in want {
        let params = format!(r#"[{{"name":"bundle","string":"{w}"}}]"#);
        let env = bundlegate::parse::cmp::CmpEnv::from_pairs([("ARGOCD_APP_PARAMETERS", params.as_str())]);
        assert_eq!(bundlegate::app::argocd::discover(&src, &env).unwrap().as_deref(), Some(w), "discover misses {w}");
    }
    // The whole PR pipeline then checks all four (none reads "touches no release bundle").
    let out = run_pr(ex.path(), &[], &[]);
    let v = out.json();
    let select = step(&v, "select");
    assert!(select["summary"].as_str().unwrap().starts_with("4 changed bundle(s)"), "{}", out.stdout);
    let linted = v["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "lint").count();
    assert_eq!(linted, 4, "{}", out.stdout);
}

/// A committed bundle over 4 MiB, or not UTF-8, or holding a NUL, was
/// skipped by changed-bundle detection while `argocd discover` accepted it:
/// the PR read "touches no release bundle". Each is now a changed bundle
/// whose load fails, naming the file and why.
#[test]
fn pr_oversized_or_non_utf8_bundle_is_a_load_error_not_skipped() {
    let ex = pr_repo();
    let v2_text = std::fs::read_to_string(ex.v2()).unwrap();
    std::fs::write(ex.v2(), format!("{v2_text}#{}\n", "x".repeat(5 << 20))).unwrap();
    std::fs::create_dir_all(ex.path().join("latin1")).unwrap();
    let mut bytes = v2_text.clone().into_bytes();
    bytes.extend_from_slice(b"# caf\xe9\n");
    std::fs::write(ex.path().join("latin1/release.yaml"), bytes).unwrap();
    std::fs::create_dir_all(ex.path().join("nul")).unwrap();
    std::fs::write(ex.path().join("nul/release.yaml"), format!("{v2_text}# \0\n")).unwrap();
    commit_all(ex.path(), "unreadable bundles");

    let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
    let get = |p: &str| {
        ch.iter()
            .find(|c| c.path.ends_with(p))
            .unwrap_or_else(|| panic!("{p} skipped: {:?}", ch.iter().map(|c| &c.path).collect::<Vec<_>>()))
    };
    assert!(get("llm-scratch/v2/release.yaml")
        .head_error
        .as_deref()
        .unwrap_or("")
        .contains("over the limit of 4194304 bytes"));
    assert!(get("latin1/release.yaml").head_error.as_deref().unwrap_or("").contains("not UTF-8 text"));
    assert_eq!(get("nul/release.yaml").head_error, None, "a NUL is the parser's to report");
    // The same files are bundles to discover.
    let src = ex.path().canonicalize().unwrap();
    for w in ["llm-scratch/v2/release.yaml", "latin1/release.yaml", "nul/release.yaml"] {
        let params = format!(r#"[{{"name":"bundle","string":"{w}"}}]"#);
        let env = bundlegate::parse::cmp::CmpEnv::from_pairs([("ARGOCD_APP_PARAMETERS", params.as_str())]);
        assert_eq!(bundlegate::app::argocd::discover(&src, &env).unwrap().as_deref(), Some(w), "discover misses {w}");
    }
    let out = run_pr(ex.path(), &[], &[]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert!(step(&v, "select")["summary"].as_str().unwrap().starts_with("3 changed bundle(s)"), "{}", out.stdout);
    let loads: Vec<String> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "load")
        .map(|s| s["summary"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(loads.len(), 3, "{loads:?}");
    assert!(
        loads.iter().any(|l| l.contains("llm-scratch/v2/release.yaml: cannot read: ") && l.contains("over the limit")),
        "{loads:?}"
    );
    assert!(loads.iter().any(|l| l.contains("latin1/release.yaml: cannot read: not UTF-8 text")), "{loads:?}");
    assert!(loads.iter().any(|l| l.contains("nul/release.yaml:")), "{loads:?}");
}

/// An oversized blob was inflated whole before its size was known. Its size
/// now comes from the object header and detection sniffs only its head, for
/// loose objects (streamed) and packed ones (after `git gc`) alike: a 6 MiB
/// bundle not named `release.yaml` is still found by its `kind`, and a 6 MiB
/// data file is still not a bundle.
#[test]
fn pr_oversized_blobs_are_sniffed_by_their_head_loose_or_packed() {
    let ex = pr_repo();
    let v2_text = std::fs::read_to_string(ex.v2()).unwrap();
    std::fs::create_dir_all(ex.path().join("big")).unwrap();
    std::fs::write(ex.path().join("big/model.yaml"), format!("{v2_text}#{}\n", "x".repeat(6 << 20))).unwrap();
    std::fs::write(ex.path().join("big/data.yaml"), format!("kind: Dataset\nrows:\n{}", "- 1\n".repeat(2 << 20)))
        .unwrap();
    commit_all(ex.path(), "big files");
    let check = |when: &str| {
        let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
        let paths: Vec<_> = ch.iter().map(|c| c.path.display().to_string()).collect();
        let big = ch
            .iter()
            .find(|c| c.path.ends_with("big/model.yaml"))
            .unwrap_or_else(|| panic!("{when}: oversized bundle skipped: {paths:?}"));
        assert!(big.head_error.as_deref().unwrap_or("").contains("over the limit of 4194304 bytes"), "{when}: {big:?}");
        assert!(!paths.iter().any(|p| p.ends_with("data.yaml")), "{when}: a data file is not a bundle: {paths:?}");
    };
    check("loose objects");
    let gc = std::process::Command::new("git")
        .args(["gc", "-q", "--aggressive", "--prune=now"])
        .current_dir(ex.path())
        .status()
        .expect("git gc");
    assert!(gc.success());
    assert!(ex.path().join(".git/objects/pack").read_dir().unwrap().next().is_some(), "gc packed nothing");
    check("packed objects");
}

/// A PR that only retargets a folder symlink (`current -> v1` becomes
/// `current -> v2`) changes which bundle `current/release.yaml` serves (an
/// Argo CD Application may point at `current`), yet no bundle file changed
/// and the PR read "touches no release bundle".
#[test]
fn pr_retargeted_folder_symlink_changes_the_bundle_it_serves() {
    let ex = Example::new();
    std::os::unix::fs::symlink("v1", ex.path().join("llm-scratch/current")).unwrap();
    git(ex.path(), &["init", "-q", "-b", "main"]);
    commit_all(ex.path(), "current is v1");
    git(ex.path(), &["checkout", "-q", "-b", "feature"]);
    std::fs::remove_file(ex.path().join("llm-scratch/current")).unwrap();
    std::os::unix::fs::symlink("v2", ex.path().join("llm-scratch/current")).unwrap();
    std::os::unix::fs::symlink("v1", ex.path().join("llm-scratch/stable")).unwrap();
    commit_all(ex.path(), "current is v2, stable is v1");

    let ch = changed_bundles(ex.path(), "main", "feature").unwrap();
    let summary: Vec<(String, &str)> = ch.iter().map(|c| (c.path.display().to_string(), c.status.as_str())).collect();
    assert_eq!(
        summary,
        [
            ("llm-scratch/current/release.yaml".to_string(), "modified"),
            ("llm-scratch/stable/release.yaml".to_string(), "added")
        ]
    );
    let v1 = std::fs::read_to_string(ex.v1()).unwrap();
    let v2 = std::fs::read_to_string(ex.v2()).unwrap();
    assert_eq!((ch[0].base_text.as_deref(), ch[0].head_text.as_str()), (Some(v1.as_str()), v2.as_str()));
    assert_eq!((ch[1].base_text.as_deref(), ch[1].head_text.as_str()), (None, v1.as_str()));
    let out = run_pr(ex.path(), &[], &[]);
    let v = out.json();
    assert!(step(&v, "select")["summary"].as_str().unwrap().starts_with("2 changed bundle(s)"), "{}", out.stdout);
    let linted: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "lint")
        .map(|s| s["target"].as_str().unwrap())
        .collect();
    assert!(linted.iter().any(|t| t.ends_with("llm-scratch/current/release.yaml")), "{linted:?}");
}

/// A bundle-named symlink that leaves the repository is refused with a
/// message in PR mode and in audit, never read.
#[test]
fn pr_symlinked_bundle_outside_the_repo_is_refused() {
    let ex = pr_repo();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("release.yaml"), std::fs::read_to_string(ex.v2()).unwrap()).unwrap();
    std::fs::create_dir_all(ex.path().join("escape")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("release.yaml"), ex.path().join("escape/release.yaml")).unwrap();
    commit_all(ex.path(), "link outside");
    let e = format!("{:#}", changed_bundles(ex.path(), "main", "feature").unwrap_err());
    assert!(e.contains("escape/release.yaml") && e.contains("refusing to follow"), "{e}");
    let e = format!("{:#}", bundlegate::adapters::bundle_files::find_bundles(ex.path()).unwrap_err());
    assert!(e.contains("escape/release.yaml") && e.contains("refusing to follow"), "{e}");
    let out = run_pr(ex.path(), &[], &[]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("refusing to follow"), "{}", out.stderr);
}

/// `run --base main --head feature` checks the bundle as committed at
/// `feature`, not the file in the working tree (here: a clean, uncommitted
/// edit hides head's unpinned image).
#[test]
fn pr_run_checks_the_head_revision_not_the_working_tree() {
    let ex = pr_repo();
    let clean = std::fs::read_to_string(ex.v2()).unwrap();
    replace_in(
        &ex.v2(),
        "llm-serve@sha256:7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c",
        "llm-serve:latest",
    );
    commit_all(ex.path(), "unpinned image");
    std::fs::write(ex.v2(), &clean).unwrap();
    let out = run_pr(ex.path(), &[], &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.codes().contains(&"BG001".to_string()), "head's unpinned image is what is checked:\n{}", out.stdout);
    let v = out.json();
    let select = step(&v, "select");
    assert!(select["summary"].as_str().unwrap().contains("the working tree differs from feature"), "{select}");
    assert_eq!(select["data"]["workingTreeDiffers"], serde_json::json!(["llm-scratch/v2/release.yaml"]));
}

/// A context with an empty environment: the tests give `GithubEnv` directly.
fn ctx() -> Ctx {
    Ctx::new(bundlegate::adapters::env::EnvSnapshot::default())
}

// ---------------------------------------------------------------------------
// whose comment is ours

/// Authors of comments already on the PR: users (anyone can type the
/// marker), the Actions bot bundlegate acts as, another GitHub App's bot.
const AUTHORS: &[&str] = &["mallory", "reviewer", "github-actions[bot]", "renovate[bot]"];
/// Marker-bearing bodies (every part of a sticky comment) and plain text.
const BODIES: &[&str] = &[
    "<!-- bundlegate:report part 1/1 -->\nforged",
    "<!-- bundlegate:report part 1/2 -->\nhead",
    "<!-- bundlegate:report part 2/2 -->\ntail",
    "<!-- bundlegate:report part 3/3 -->\nold tail",
    "looks good",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 40, failure_persistence: None, ..Default::default() })]

    /// Only comments written by the identity the token acts as are edited or
    /// deleted: with its login configured, no other login's comment; with none,
    /// never a user's (only a GitHub App bot's, until the first comment this
    /// run creates tells the login). The marker alone once made bundlegate
    /// PATCH another user's comment and DELETE its own.
    #[test]
    fn a_marker_bearing_comment_by_another_user_is_never_edited_or_deleted(
        seeds in proptest::collection::vec((proptest::sample::select(AUTHORS), proptest::sample::select(BODIES)), 0..6),
        configured in proptest::bool::ANY,
    ) {
        let s = StandIn::start(TOKEN);
        let mut login_of = std::collections::BTreeMap::new();
        for (author, body) in &seeds {
            login_of.insert(s.seed_comment("o", "r", 7, author, body), *author);
        }
        let author = configured.then_some("github-actions[bot]");
        let o = rt()
            .block_on(async { publish_comment_as(&client(&s), "o", "r", 7, sticky_parts("new\n", "report"), author).await })
            .unwrap();
        for r in s.requests().into_iter().filter(|r| r.method == "PATCH" || r.method == "DELETE") {
            let id: u64 = r.path.rsplit('/').next().unwrap().parse().unwrap();
            let who = login_of.get(&id).copied().unwrap_or("github-actions[bot]");
            if configured {
                proptest::prop_assert_eq!(who, "github-actions[bot]", "{} {} by {}: {:?}", r.method, id, who, seeds);
            } else {
                proptest::prop_assert!(who.ends_with("[bot]"), "{} {} by {}: {:?}", r.method, id, who, seeds);
            }
        }
        // Every seeded user comment is still there, as it was.
        for c in s.comments(7).iter().filter(|c| !c.login.ends_with("[bot]")) {
            let seeded = seeds.iter().any(|(a, b)| *a == c.login && *b == c.body);
            proptest::prop_assert!(seeded, "{:?} changed", c.body);
        }
        proptest::prop_assert_eq!(seeds.iter().filter(|(a, _)| !a.ends_with("[bot]")).count(), s.comments(7).iter().filter(|c| !c.login.ends_with("[bot]")).count());
        // And the sticky comment is there once, as the bot.
        let bot = |l: &str| if configured { l == "github-actions[bot]" } else { l.ends_with("[bot]") };
        let ours: Vec<_> = s.bundlegate_comments(7).into_iter().filter(|c| bot(&c.login) && c.body.contains("new")).collect();
        proptest::prop_assert_eq!(ours.len(), 1, "{:?}", o);
        s.assert_no_violations();
    }
}

/// Another user's comment holds the marker and bundlegate's
/// own is there too. Ours is updated, theirs untouched, nothing deleted.
#[test]
fn another_users_marker_comment_is_left_alone() {
    let s = StandIn::start(TOKEN);
    let theirs = s.seed_comment("o", "r", 7, "mallory", "<!-- bundlegate:report part 1/1 -->\nPASS, trust me");
    let ours = s.seed_comment("o", "r", 7, "github-actions[bot]", "<!-- bundlegate:report part 1/1 -->\nold");
    let o = publish(&s, sticky_parts("new\n", "report")).unwrap();
    assert_eq!((o.updated.clone(), o.deleted.clone(), o.created.clone()), (vec![ours], vec![], vec![]), "{o:?}");
    let c = s.comments(7);
    assert_eq!(c.iter().find(|c| c.id == theirs).unwrap().body, "<!-- bundlegate:report part 1/1 -->\nPASS, trust me");
    // Only theirs: a new comment, theirs still untouched.
    let s = StandIn::start(TOKEN);
    let theirs = s.seed_comment("o", "r", 7, "mallory", "<!-- bundlegate:report part 1/1 -->\nforged");
    let o = publish(&s, sticky_parts("new\n", "report")).unwrap();
    assert_eq!(o.created.len(), 1, "{o:?}");
    assert!(o.updated.is_empty() && o.deleted.is_empty(), "{o:?}");
    assert!(s.comments(7).iter().any(|c| c.id == theirs && c.body.ends_with("forged")));
    s.assert_no_violations();
}

/// The release diff heads a bundle's steps in PR mode: a generation change
/// is `config only`, old value first; new weights are `weights changed`
/// with old → new size and sha256; a new bundle has nothing to compare.
#[test]
fn pr_release_diff_names_the_change_class_old_first() {
    let ex = pr_changing_v2();
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let steps = j["steps"].as_array().unwrap();
    let first = steps.iter().position(|s| s["target"].as_str().unwrap_or("").ends_with("v2/release.yaml")).unwrap();
    let d = &steps[first];
    assert_eq!(d["step"], "release-diff", "{}", o.stdout);
    assert_eq!(d["verdict"], "pass");
    assert_eq!(d["data"]["releaseDiff"]["class"], "config-only", "{}", d);
    let f = d["data"]["releaseDiff"]["fields"].as_array().unwrap();
    assert!(
        f.iter().any(|c| c["field"].as_str().unwrap().ends_with("maxOutputTokens")
            && c["old"] == "512"
            && c["new"] == "1024"),
        "{d}"
    );
    assert!(d["summary"].as_str().unwrap().starts_with("change class: config only"), "{d}");

    // New weights: the pinned sha256 and size of the weights file change.
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    let b: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let w = b["spec"]["model"]["artifacts"].as_sequence().unwrap().iter().find(|a| a["role"] == "weights").unwrap();
    let (old_sha, old_size) = (w["sha256"].as_str().unwrap().to_string(), w["size"].as_u64().unwrap());
    let new_sha = "e".repeat(64);
    replace_in(&ex.v2(), &old_sha, &new_sha);
    replace_in(&ex.v2(), &format!("size: {old_size}\n"), &format!("size: {}\n", old_size + 7));
    commit_all(ex.path(), "v2: new weights");
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let d = step(&j, "release-diff").clone();
    assert_eq!(d["data"]["releaseDiff"]["class"], "weights", "{d}");
    let body = d["details"][0]["body"].as_str().unwrap();
    let line = format!("{old_size} B → {} B, sha256 {} → {}", old_size + 7, &old_sha[..12], &new_sha[..12]);
    assert!(body.contains(&line), "wanted `{line}` in:\n{body}");

    // A new bundle: no base version, so it is compared with its rollback
    // target, the release it would go back to.
    let ex = pr_repo();
    let v3 = ex.path().join("examples/llm-scratch/v3");
    std::fs::create_dir_all(&v3).unwrap();
    std::fs::copy(ex.v2(), v3.join("release.yaml")).unwrap();
    commit_all(ex.path(), "v3");
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let d = step(&j, "release-diff").clone();
    assert!(d["target"].as_str().unwrap().ends_with("v3/release.yaml"), "{d}");
    // This repository holds no v1: said, and nothing compared (never a pass).
    assert!(
        d["summary"].as_str().unwrap().starts_with("its rollback target ../v1/release.yaml could not be read"),
        "{d}"
    );
    assert_eq!(d["verdict"], "not-run", "{d}");
    std::fs::create_dir_all(ex.path().join("examples/llm-scratch/v1")).unwrap();
    std::fs::copy(
        repo().join("examples/llm-scratch/v1/release.yaml"),
        ex.path().join("examples/llm-scratch/v1/release.yaml"),
    )
    .unwrap();
    commit_all(ex.path(), "v1");
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let v3_diff =
        |s: &&Value| s["step"] == "release-diff" && s["target"].as_str().unwrap().ends_with("v3/release.yaml");
    let d = j["steps"].as_array().unwrap().iter().find(v3_diff).expect("a release diff").clone();
    assert!(d["summary"].as_str().unwrap().contains("from its rollback target ../v1/release.yaml"), "{d}");
    assert_eq!(d["data"]["releaseDiff"]["class"], "weights", "{d}");
}

/// A PR that publishes a new chat template under a new prefix: the release
/// diff shows the template's unified diff (old lines first), both sides
/// read from their stores and checked against their pins; a side whose
/// bytes are not the pinned ones is not shown, and says why.
#[test]
fn pr_release_diff_shows_a_changed_chat_template_as_text() {
    let ex = pr_repo();
    let (old_store, new_store) = (ex.store("v2"), ex.store("v2b"));
    copy_dir(&old_store, &new_store);
    let tpl = new_store.join("chat_template.jinja");
    let old_text = std::fs::read_to_string(&tpl).unwrap();
    let new_text = format!("{old_text}{{# answer in one line #}}\n");
    std::fs::write(&tpl, &new_text).unwrap();
    let sha = |t: &str| {
        use sha2::Digest;
        hex::encode(sha2::Sha256::digest(t.as_bytes()))
    };
    replace_in(&ex.v2(), "store/llm-scratch/v2/", "store/llm-scratch/v2b/");
    replace_in(&ex.v2(), &sha(&old_text), &sha(&new_text));
    replace_in(&ex.v2(), &format!("size: {}\n", old_text.len()), &format!("size: {}\n", new_text.len()));
    commit_all(ex.path(), "v2: a new chat template");
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let d = step(&j, "release-diff").clone();
    assert_eq!(d["data"]["releaseDiff"]["class"], "tokenizer-or-template", "{d}");
    let text = d["details"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["title"].as_str().unwrap().starts_with("chat_template.jinja: text diff"))
        .unwrap_or_else(|| panic!("no template diff: {d}"))
        .clone();
    let body = text["body"].as_str().unwrap();
    assert_eq!(text["lang"], "diff");
    assert!(body.contains("--- base/chat_template.jinja\n+++ head/chat_template.jinja"), "{body}");
    // Old lines first: the template had no final line break, so its one line changed.
    let (minus, plus) =
        (body.find("\n-{% for m in messages %}").unwrap(), body.find("\n+{% for m in messages %}").unwrap());
    assert!(minus < plus && body.contains("{# answer in one line #}"), "{body}");

    // The head's store no longer holds the pinned bytes: not shown, and why.
    std::fs::write(&tpl, "{# replaced after review #}\n").unwrap();
    let o = run_pr(ex.path(), &[], &[]);
    let j = o.json();
    let d = step(&j, "release-diff").clone();
    let body = d["details"].as_array().unwrap().iter().find(|x| x["lang"] == "diff").unwrap()["body"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(body.starts_with("(not shown: head: the store's bytes (sha256 "), "{body}");
    assert!(!body.contains("replaced after review"), "{body}");
}
