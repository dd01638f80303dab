//! The pipeline's `comment` step (PR mode), the GitHub side of a run: one
//! sticky PR comment (split into numbered parts when long), the job summary,
//! workflow annotations, step outputs, and manifest diffs for the comment.
//!
//! Everything here degrades to "not run, because …": without a token or a PR
//! number, or with a fork PR's read-only token, the job summary is still
//! written and the reason is stated. The token is never printed, and is
//! scrubbed from everything this module writes.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::adapters::env::EnvSnapshot;
use crate::adapters::github::{self, CheckRun, CheckRunOutput, GithubClient, GithubError, RetryPolicy};
use crate::app::ctx::Ctx;
use crate::diag::Severity;
use crate::report::escape::{self, workflow_data, workflow_property};
use crate::report::{format, Detail, Report, StepReport, Verdict};

/// GitHub's limit for one step's job summary, in bytes.
pub const SUMMARY_LIMIT: usize = 1 << 20;

use crate::report::comment::{marker_key_of, CommentOutcome, CommentStep, Posting};
use crate::report::comment::{parse_marker, sticky_parts, truncate_markdown, DEFAULT_MARKER_KEY};

// ---------------------------------------------------------------------------
// Publishing

/// Make the PR's sticky comment equal `parts` (from [`sticky_parts`]): update
/// existing parts in place, create missing ones, delete surplus old parts and
/// duplicates. Existing parts are found by marker across all pages, among the
/// comments bundlegate's own identity wrote ([`publish_comment_as`] with no
/// login known).
pub async fn publish_comment(
    gh: &GithubClient,
    owner: &str,
    repo: &str,
    pr: u64,
    parts: Vec<String>,
) -> github::Result<CommentOutcome> {
    publish_comment_as(gh, owner, repo, pr, parts, None).await
}

/// Is `c` a comment the token's identity wrote? With its login known
/// (configured, or learnt from a comment this run created), by login alone;
/// else only a GitHub App's bot (GitHub Actions' token acts as
/// `github-actions[bot]`, and `GET /user` answers 403 for such tokens). A
/// marker is text anyone can type: it never decides alone.
fn written_by_us(c: &github::Comment, author: Option<&str>) -> bool {
    match author {
        Some(a) => c.user.as_deref() == Some(a),
        None => c.user_type.as_deref() == Some("Bot") && c.via_app,
    }
}

/// [`publish_comment`] as `author` (the login the token acts as, when
/// known). Only comments written by that identity are ever edited or
/// deleted; the first comment this run creates tells its login when none
/// was given, and from then on it decides.
pub async fn publish_comment_as(
    gh: &GithubClient,
    owner: &str,
    repo: &str,
    pr: u64,
    parts: Vec<String>,
    author: Option<&str>,
) -> github::Result<CommentOutcome> {
    let key = parts
        .first()
        .and_then(|p| marker_key_of(p))
        .ok_or_else(|| {
            GithubError::Config("comment parts must start with a bundlegate marker (use sticky_parts)".into())
        })?
        .to_string();
    let existing = gh.list_comments(owner, repo, pr).await?;
    let mut author: Option<String> = author.map(String::from);
    // part index -> our comments carrying it, oldest first (ids grow with time).
    let ours = |author: Option<&str>| {
        let mut by_part: BTreeMap<usize, Vec<&github::Comment>> = BTreeMap::new();
        for c in existing.iter().filter(|c| written_by_us(c, author)) {
            if let Some((i, _)) = c.body.as_deref().and_then(|b| parse_marker(b, &key)) {
                by_part.entry(i).or_default().push(c);
            }
        }
        for v in by_part.values_mut() {
            v.sort_by_key(|c| c.id);
        }
        by_part
    };

    let mut out = CommentOutcome { parts: parts.len(), ..Default::default() };
    // part index -> the comment that now holds it.
    let mut holds: BTreeMap<usize, u64> = BTreeMap::new();
    for (idx, body) in parts.iter().enumerate() {
        let i = idx + 1;
        let by_part = ours(author.as_deref());
        let keep = by_part.get(&i).and_then(|v| v.first()).copied();
        let (id, url) = match keep {
            Some(c) if c.body.as_deref() == Some(body.as_str()) => {
                out.unchanged.push(c.id);
                (c.id, c.html_url.clone())
            }
            Some(c) => {
                let u = gh.update_comment(owner, repo, c.id, body).await?;
                out.updated.push(u.id);
                (u.id, u.html_url.or_else(|| c.html_url.clone()))
            }
            None => {
                let c = gh.create_comment(owner, repo, pr, body).await?;
                out.created.push(c.id);
                if author.is_none() {
                    author = c.user.clone();
                }
                (c.id, c.html_url)
            }
        };
        holds.insert(i, id);
        if i == 1 {
            out.url = url.or_else(|| Some(format!("comment {id}")));
        }
    }
    // Surplus: our parts beyond the new count, and duplicates of any part.
    let mut surplus: Vec<u64> = Vec::new();
    for (i, v) in &ours(author.as_deref()) {
        surplus.extend(v.iter().map(|c| c.id).filter(|id| holds.get(i) != Some(id)));
    }
    surplus.sort_unstable();
    for id in surplus {
        gh.delete_comment(owner, repo, id).await?;
        out.deleted.push(id);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// The `comment` step

/// What the GitHub side needs from the environment. Built by
/// [`GithubEnv::from_snapshot`]; tests build it directly.
#[derive(Clone, Default)]
pub struct GithubEnv {
    pub api_url: String,
    pub token: Option<String>,
    /// `owner/repo`.
    pub repository: Option<String>,
    pub pr_number: Option<u64>,
    pub step_summary: Option<PathBuf>,
    pub output: Option<PathBuf>,
    pub workspace: Option<PathBuf>,
    pub marker_key: String,
    /// The login the token acts as, when configured
    /// (`BUNDLEGATE_COMMENT_AUTHOR`); else learnt from the first comment
    /// created, or only a GitHub App bot's comments are taken as ours.
    pub comment_author: Option<String>,
    /// Head commit, for the optional check run.
    pub head_sha: Option<String>,
    /// The event says the PR comes from a fork (explains a 403).
    pub fork: bool,
    /// Create a check run too (`BUNDLEGATE_CHECK_RUN=true`; needs `checks: write`).
    pub check_run: bool,
    pub retry: RetryPolicy,
}

impl fmt::Debug for GithubEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubEnv")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("repository", &self.repository)
            .field("pr_number", &self.pr_number)
            .field("step_summary", &self.step_summary)
            .field("output", &self.output)
            .field("marker_key", &self.marker_key)
            .finish_non_exhaustive()
    }
}

impl GithubEnv {
    pub(crate) fn from_snapshot(env: &EnvSnapshot) -> GithubEnv {
        let a = &env.actions;
        let event: Option<serde_json::Value> = a.event_path.as_deref().and_then(|p| {
            let t = crate::adapters::bundle_files::read_text(p, crate::adapters::bundle_files::FileKind::GithubEvent)
                .ok()?;
            crate::yaml_guard::json_from_str(&p.display().to_string(), &t, &crate::yaml_guard::Limits::WRITTEN).ok()
        });
        let pr = event.as_ref().map(|e| &e["pull_request"]);
        let pr_number = a
            .pr_number
            .as_deref()
            .and_then(|s| s.trim().trim_start_matches('#').parse().ok())
            .or_else(|| pr.and_then(|p| p["number"].as_u64()));
        let head_sha = pr.and_then(|p| p["head"]["sha"].as_str().map(String::from)).or_else(|| env.github_sha.clone());
        let fork = pr
            .map(|p| {
                p["head"]["repo"]["fork"].as_bool() == Some(true)
                    || (p["head"]["repo"]["full_name"].is_string()
                        && p["head"]["repo"]["full_name"] != p["base"]["repo"]["full_name"])
            })
            .unwrap_or(false);
        GithubEnv {
            api_url: env.github_api_url.clone().unwrap_or_else(|| github::DEFAULT_API_URL.into()),
            token: env.github_token.as_ref().map(|t| t.0.clone()),
            repository: env.github_repository.clone(),
            pr_number,
            step_summary: a.step_summary.clone(),
            output: a.output.clone(),
            workspace: a.workspace.clone(),
            marker_key: a.comment_key.clone().unwrap_or_else(|| DEFAULT_MARKER_KEY.into()),
            comment_author: a.comment_author.as_deref().map(str::trim).filter(|l| !l.is_empty()).map(String::from),
            head_sha,
            fork,
            check_run: a.check_run.as_deref().is_some_and(|v| matches!(v.trim(), "1" | "true" | "yes")),
            retry: RetryPolicy::default(),
        }
    }

    /// Replace the token wherever it could appear in text we emit, then the
    /// credentials any URL or header in it carries (the comment and job
    /// summary are written here, not through the output layer).
    fn scrub(&self, s: &str) -> String {
        let s = match &self.token {
            Some(t) if t.trim().len() >= 4 => s.replace(t.trim(), "***"),
            _ => s.to_string(),
        };
        crate::report::redact::redact(&s).into_owned()
    }
}

/// The pipeline's `comment` step: job summary, annotations (stderr), outputs,
/// sticky PR comment. Reads the GitHub Actions environment.
pub(crate) fn github_step(ctx: &Ctx, report: &Report) -> StepReport {
    github_step_with(ctx, report, &GithubEnv::from_snapshot(&ctx.env), &mut std::io::stderr())
}

/// [`github_step`] with an explicit environment and annotation sink.
///
/// Annotations go to stderr in the binary: the Actions runner parses workflow
/// commands on both stdout and stderr, and stdout carries the JSON report.
pub fn github_step_with(ctx: &Ctx, report: &Report, env: &GithubEnv, annotations: &mut dyn Write) -> StepReport {
    let target = match (&env.repository, env.pr_number) {
        (Some(r), Some(n)) => format!("{r}#{n}"),
        _ => "job summary".to_string(),
    };
    let md = env.scrub(&format::markdown(report));
    let mut problems: Vec<String> = Vec::new();

    let n_annotations = match write_annotations(report, env, annotations) {
        Ok(n) => n,
        Err(e) => {
            problems.push(format!("writing annotations: {e}"));
            0
        }
    };

    let digests = release_digests(report);
    let verdict_out =
        serde_json::to_value(report.verdict).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
    if let Some(out) = &env.output {
        let digests_json = escape::json(&serde_json::to_string(&digests).expect("map serializes")).into_owned();
        if let Err(e) = github::append_runner_file(
            out,
            &outputs_text(&[("verdict", &verdict_out), ("release-digests", &digests_json)]),
        ) {
            problems.push(format!("writing $GITHUB_OUTPUT {}: {e}", out.display()));
        }
    }

    let posting = post(ctx, env, &md, report.verdict);
    let comment_line = posting.line();

    let mut summary_written = false;
    if let Some(path) = &env.step_summary {
        // The line quotes GitHub's answers: Markdown text like the report.
        let footer = format!("\n> {}\n", escape::markdown(&env.scrub(&comment_line)));
        match write_summary(path, &md, &footer) {
            Ok(()) => summary_written = true,
            Err(e) => problems.push(format!("writing $GITHUB_STEP_SUMMARY {}: {e}", path.display())),
        }
    }

    let outcome = CommentStep {
        target,
        posting,
        comment_line,
        problems,
        summary_written,
        summary_set: env.step_summary.is_some(),
        annotations: n_annotations,
        outputs: serde_json::json!({"verdict": verdict_out, "release-digests": digests}),
    };
    outcome.write_up(&|t: &str| env.scrub(t))
}

/// Post (or skip) the sticky comment and the optional check run.
fn post(ctx: &Ctx, env: &GithubEnv, md: &str, verdict: Verdict) -> Posting {
    let Some(token) = env.token.as_deref() else {
        return Posting::Skipped("GITHUB_TOKEN is not set".into());
    };
    let Some(repository) = env.repository.as_deref() else {
        return Posting::Skipped("GITHUB_REPOSITORY (owner/repo) is not set".into());
    };
    let Some((owner, repo)) = repository.split_once('/') else {
        return Posting::Failed(format!("GITHUB_REPOSITORY `{repository}` is not owner/repo"));
    };
    let Some(pr) = env.pr_number else {
        return Posting::Skipped("no pull request number (not a pull_request event; set BUNDLEGATE_PR_NUMBER)".into());
    };
    let parts = sticky_parts(md, &env.marker_key);

    let res = ctx.block_on(async {
        let gh = GithubClient::with_policy(&env.api_url, token, env.retry.clone())?;
        let outcome = publish_comment_as(&gh, owner, repo, pr, parts, env.comment_author.as_deref()).await?;
        let check_note = match (&env.head_sha, env.check_run) {
            (Some(sha), true) => Some(match gh.create_check_run(owner, repo, &check_run(sha, md, verdict)).await {
                Ok(id) => format!("check run {id} created"),
                Err(e) => format!("check run not created: {e}"),
            }),
            _ => None,
        };
        github::Result::Ok((outcome, check_note))
    });
    let res = match res {
        Ok(r) => r,
        Err(e) => return Posting::Failed(format!("{e:#}")),
    };
    match res {
        Ok((o, note)) => Posting::Posted(o, note),
        Err(e) if e.is_forbidden() => Posting::Forbidden(if env.fork {
            "the token is read-only (fork PR); see the job summary".into()
        } else {
            format!(
                "the token is read-only or lacks `pull-requests: write` (fork PR?); see the job summary ({})",
                env.scrub(&e.to_string())
            )
        }),
        Err(e) => Posting::Failed(env.scrub(&e.to_string())),
    }
}

fn check_run(sha: &str, md: &str, verdict: Verdict) -> CheckRun {
    let conclusion = match verdict {
        Verdict::Pass => "success",
        Verdict::NotRun => "neutral",
        Verdict::Inconclusive | Verdict::Fail | Verdict::Error => "failure",
    };
    // Check run summaries are limited to 65,535 characters.
    let summary = truncate_markdown(md, 60_000, "\n\n*(truncated; see the PR comment or job summary)*\n");
    CheckRun {
        name: "bundlegate".into(),
        head_sha: sha.into(),
        status: "completed".into(),
        conclusion: conclusion.into(),
        output: CheckRunOutput { title: format!("bundlegate: {verdict}"), summary },
    }
}

/// What to append to the job summary, within GitHub's 1 MiB per-step limit
/// counting the `existing` bytes of the file, truncated with a note.
fn summary_text(md: &str, footer: &str, existing: u64) -> String {
    let existing = usize::try_from(existing).unwrap_or(usize::MAX);
    let budget = SUMMARY_LIMIT.saturating_sub(existing).saturating_sub(footer.len());
    let note = "\n> **Truncated**: the report is larger than GitHub's 1 MiB job-summary limit; the full report is in the JSON output and the job log.\n";
    truncate_markdown(md, budget, note) + footer
}

fn write_summary(path: &Path, md: &str, footer: &str) -> std::io::Result<()> {
    github::append_runner_file(path, &summary_text(md, footer, github::runner_file_len(path)))
}

/// `$GITHUB_OUTPUT` entries in the heredoc form, which is valid for any value.
fn outputs_text(kv: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (k, v) in kv {
        let delim = delimiter(v);
        text.push_str(&format!("{k}<<{delim}\n{v}\n{delim}\n"));
    }
    text
}

/// A heredoc delimiter that does not occur in `value`: derived from the
/// value, then lengthened until it is not in it.
fn delimiter(value: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut d = format!("ghadelimiter_{}", &hex::encode(Sha256::digest(value.as_bytes()))[..16]);
    while value.contains(&d) {
        d.push('_');
    }
    d
}

/// Release digest per bundle, from steps that record `data.releaseDigest`.
pub(crate) fn release_digests(report: &Report) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    for s in &report.steps {
        if let Some(d) = s.data.get("releaseDigest").and_then(|d| d.as_str()) {
            m.entry(s.target.clone()).or_insert_with(|| d.to_string());
        }
    }
    m
}

/// `::error file=…,line=…,col=…,title=…::message` per diagnostic, once
/// each, every value through the workflow-command escapers.
fn write_annotations(report: &Report, env: &GithubEnv, w: &mut dyn Write) -> std::io::Result<usize> {
    let mut seen = HashSet::new();
    for s in &report.steps {
        for d in &s.diagnostics {
            let cmd = match d.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Note => "notice",
                Severity::Allow => continue,
            };
            let mut props = Vec::new();
            if let Some(sp) = &d.span {
                props.push(format!("file={}", workflow_property(&annotation_path(&sp.file, env))));
                props.push(format!("line={}", sp.line));
                props.push(format!("col={}", sp.column));
            }
            props.push(format!("title={}", workflow_property(&format!("{} {}", d.code, d.name))));
            let mut msg = d.message.clone();
            for h in &d.help {
                msg.push_str("\nhelp: ");
                msg.push_str(h);
            }
            let line = format!("::{cmd} {}::{}\n", props.join(","), workflow_data(&env.scrub(&msg)));
            if seen.insert(line.clone()) {
                w.write_all(line.as_bytes())?;
            }
        }
    }
    w.flush()?;
    Ok(seen.len())
}

/// Annotations need paths relative to the workspace (the checkout).
fn annotation_path(file: &str, env: &GithubEnv) -> String {
    let p = Path::new(file);
    if let Some(ws) = &env.workspace {
        if let Ok(rel) = p.strip_prefix(ws) {
            return rel.display().to_string();
        }
    }
    file.strip_prefix("./").unwrap_or(file).to_string()
}

// ---------------------------------------------------------------------------
// Manifest diff

/// Unified diff of rendered manifests, base → head, for a collapsed block.
/// `title` becomes the block's summary line as given.
pub(crate) fn manifest_diff(base: Option<&str>, head: &str, title: &str) -> Detail {
    let body = if base == Some(head) {
        "(rendered manifests unchanged)".to_string()
    } else {
        let old = base.unwrap_or("");
        let a = if base.is_some() { "base" } else { "/dev/null" };
        crate::checks::release_diff::unified(old, head, a, "head")
    };
    Detail { title: title.to_string(), lang: "diff".into(), body }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_use_heredoc_with_a_fresh_delimiter() {
        let t = outputs_text(&[("verdict", "pass"), ("release-digests", "{\"a\":\"sha256:1\"}\nsecond line")]);
        let mut lines = t.lines();
        let first = lines.next().unwrap();
        let (k, d) = first.split_once("<<").unwrap();
        assert_eq!(k, "verdict");
        assert!(d.starts_with("ghadelimiter_"));
        assert_eq!(lines.next(), Some("pass"));
        assert_eq!(lines.next(), Some(d));
        // A value holding the delimiter gets a longer one.
        let v = format!("x {} y", delimiter("z"));
        assert!(!v.contains(&format!("{}\n", delimiter(&v))) && !v.contains(&delimiter(&v)));
        assert!(t.contains("second line\n"));
    }

    #[test]
    fn manifest_diff_is_unified() {
        let d = manifest_diff(Some("a: 1\nb: 2\n"), "a: 1\nb: 3\n", "manifest diff for x/release.yaml");
        assert_eq!(d.lang, "diff");
        assert_eq!(d.title, "manifest diff for x/release.yaml");
        assert!(d.body.starts_with("--- base\n+++ head\n"), "{}", d.body);
        assert!(d.body.contains("-b: 2\n+b: 3"), "{}", d.body);
        let new = manifest_diff(None, "a: 1\n", "n.yaml");
        assert!(new.body.contains("--- /dev/null") && new.body.contains("+a: 1"));
        assert!(manifest_diff(Some("a\n"), "a\n", "t").body.contains("unchanged"));
    }

    #[test]
    fn env_debug_hides_token() {
        let e = GithubEnv { token: Some("ghs_topsecretvalue".into()), ..Default::default() };
        assert!(!format!("{e:?}").contains("topsecret"));
        assert_eq!(e.scrub("x ghs_topsecretvalue y"), "x *** y");
    }
}
