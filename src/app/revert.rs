//! `revert`: when a release failed its post-merge gates, open one
//! revert PR to a verified previous release, or propose to degrade when
//! there is none.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::json;

use crate::adapters::git;
use crate::adapters::github::PullOutcome;
use crate::app::ctx::Ctx;
use crate::bundle::Loaded;
use crate::checks::revert as rv;
use crate::checks::rollback::Unusable;
use crate::checks::watch::argo::AppSource;
use crate::diag::Diagnostic;
use crate::diag::Overrides;
use crate::options::{RevertOptions, VerifyOptions};
use crate::report::{Report, StepReport, Verdict};

use crate::checks::revert::REVERT_MARKER;

/// `revert` on one loaded bundle; `evidence` is what was found so far (the
/// pipeline's earlier steps), else the `--evidence` report file. A file that
/// cannot be read is the tool failing.
pub fn run(ctx: &Ctx, l: &Loaded, args: &RevertOptions, evidence: Option<&Report>) -> Result<Vec<StepReport>> {
    let from_file = match (&args.evidence, evidence) {
        (Some(p), None) => {
            let text = crate::adapters::bundle_files::read_text(p, crate::adapters::bundle_files::FileKind::Report)
                .with_context(|| format!("reading evidence {}", p.display()))?;
            // The one JSON reader: a key given twice is refused at its line.
            let file = p.display().to_string();
            Some(
                crate::yaml_guard::json_from_str::<Report>(&file, &text, &crate::yaml_guard::Limits::WRITTEN)
                    .with_context(|| {
                        format!("{} is not a bundlegate JSON report (`watch --format json`)", p.display())
                    })?,
            )
        }
        _ => None,
    };
    ctx.block_on(revert_steps(ctx, l, args, evidence.or(from_file.as_ref()), &[]))
}

/// `bundlegate/revert-<name>-<version>-<12 hex>`: one name per failed
/// release *at its path*, so concurrent runs for it collide on the remote
/// instead of opening two PRs, while two releases of the same name in
/// different folders (prod and staging) never share a branch. The hex is
/// the sha256 of the bundle's repository path, its release digest and the
/// target's, each NUL-terminated (no two inputs share a hash input).
pub(crate) fn branch_name(l: &Loaded, rel: &Path, target_digest: &str) -> String {
    let clean = |s: &str| {
        let mut o: String = s
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '-' })
            .collect();
        while o.contains("..") {
            o = o.replace("..", ".");
        }
        o.trim_matches(['.', '-']).to_string()
    };
    let mut id = rel.as_os_str().as_encoded_bytes().to_vec();
    for part in [b"\0".as_slice(), l.digest.as_bytes(), b"\0", target_digest.as_bytes(), b"\0"] {
        id.extend_from_slice(part);
    }
    let hash = crate::util::sha256_hex(&id);
    format!(
        "bundlegate/revert-{}-{}-{}",
        clean(&l.bundle.metadata.name),
        clean(&l.bundle.metadata.version),
        &hash[..12]
    )
}

/// A failed release's way back: refused when the failure is too old or the
/// bundle was itself put there by a revert; a degrade proposal when the
/// rollback target is missing, not the recorded release or does not verify;
/// else one branch and one PR restoring the verified previous bundle.
pub(crate) async fn revert_steps(
    ctx: &Ctx,
    l: &Loaded,
    args: &RevertOptions,
    evidence: Option<&Report>,
    sources: &[AppSource],
) -> Vec<StepReport> {
    let target = format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest);
    // No base given (a pipeline step without `base`): the remote's HEAD branch, else `main`.
    let resolved;
    let args = if args.base.is_none() {
        let repo = git::checkout_root(&args.repo).unwrap_or_else(|| args.repo.clone());
        resolved = RevertOptions { base: Some(git::default_base(&repo, &args.remote)), ..args.clone() };
        &resolved
    } else {
        args
    };
    if let Some(s) = older_than_max_age(ctx, args, &target) {
        return vec![s];
    }
    let Some(rb) = &l.bundle.spec.rollback else {
        return vec![degrade(
            &target,
            rv::no_rollback_target(),
            "no rollback target: degrade proposed, no revert PR",
            json!({"proposal": "degrade"}),
        )];
    };
    let (repo, rel) = match git::locate(&args.repo, &l.path) {
        Ok(x) => x,
        Err(e) => return vec![StepReport::error("revert", &target, &e)],
    };
    if let Some(s) = revert_of_a_revert(&repo, &rel, &target) {
        return vec![s];
    }
    if let Some(s) = moved_on(&repo, &rel, sources, l, args, &target) {
        return vec![s];
    }
    let mut steps = Vec::new();
    let Some((prev, verify_summary)) = verified_rollback_target(ctx, l, rb, &target, &mut steps).await else {
        return steps;
    };
    let plan = RevertPlan { repo, rel, prev, rollback: rb.bundle.clone(), verify_summary };
    steps.push(open_revert(ctx, l, args, &plan, evidence, &target).await);
    steps
}

/// The revert PR's base branch, resolved by [`revert_steps`] before use.
fn base(args: &RevertOptions) -> &str {
    args.base.as_deref().unwrap_or(crate::options::defaults::BASE_BRANCH)
}

/// A revert step that proposes degrading instead (FAIL, no PR).
fn degrade(target: &str, d: Diagnostic, summary: &str, data: serde_json::Value) -> StepReport {
    let mut s = StepReport::new("revert", target);
    s.diagnostics.push(d);
    s.verdict = Verdict::Fail;
    s.summary = summary.to_string();
    s.data = data;
    s
}

/// Kargo's safeguard: a failure older than --max-age is history, not an
/// incident; acting on it could undo a fix made since.
fn older_than_max_age(ctx: &Ctx, args: &RevertOptions, target: &str) -> Option<StepReport> {
    let now = ctx.now();
    let failed_at = args.failed_at.unwrap_or(now);
    let age = (now - failed_at).to_std().unwrap_or_default();
    if age <= args.max_age.value {
        return None;
    }
    let mut s = StepReport::not_run(
        "revert",
        target,
        format!("ignored: the failure at {failed_at} is {}s old, older than --max-age {}", age.as_secs(), args.max_age),
    );
    s.data = json!({"ignored": "older-than-max-age", "failedAt": failed_at, "maxAge": args.max_age.text});
    Some(s)
}

/// A revert is never reverted: when the bundle's last change was a
/// bundlegate revert, a human decides (NOT RUN); an unreadable history is
/// an ERROR.
fn revert_of_a_revert(repo: &git::Repository, rel: &Path, target: &str) -> Option<StepReport> {
    match git::last_change(repo, rel) {
        Ok(Some((sha, msg))) if rv::is_revert_commit(&msg, &git::merged_head_messages(repo, &sha)) => {
            let mut s = StepReport::not_run(
                "revert",
                target,
                format!("refused: {} was last changed by a bundlegate revert ({sha}); a revert is never reverted, a human decides", rel.display()),
            );
            s.data = json!({"refused": "revert-of-a-revert", "commit": sha});
            Some(s)
        }
        Ok(_) => None,
        Err(e) => Some(StepReport::error("revert", target, &e.context("reading the bundle's history"))),
    }
}

/// Revert only the release whose evidence failed: when what the target
/// branch renders is another release now (a later merge superseded it, or
/// the Application was pointed elsewhere), a revert would undo that one
/// instead. What is rendered is read as Argo CD reads it: the Application's
/// source paths (`sources`; none known: the bundle file). Refused (NOT
/// RUN), as is a branch where nothing can be read: a human decides.
fn moved_on(
    repo: &git::Repository,
    rel: &Path,
    sources: &[AppSource],
    l: &Loaded,
    args: &RevertOptions,
    target: &str,
) -> Option<StepReport> {
    let why = match git::rendered_on_branch(repo, rel, sources, &args.remote, base(args)) {
        Ok((_, files)) if files.iter().any(|f| f.digest.as_deref() == Ok(l.digest.as_str())) => return None,
        Ok((at, files)) if files.is_empty() => {
            format!("refused: on {at} no source of the Application is rendered by bundlegate; a human decides")
        }
        Ok((at, files)) => format!(
            "refused: on {at} {} now, not {} whose evidence failed; reverting would undo the later release",
            crate::checks::watch::argo::describe_rendered(&files),
            l.digest
        ),
        Err(e) => format!("refused: the bundle on {} cannot be read ({e}); a human decides", base(args)),
    };
    let mut s = StepReport::not_run("revert", target, why);
    s.data = json!({"refused": "bundle-moved-on", "release": l.digest});
    Some(s)
}

/// The rollback target, loaded, equal to the recorded release and verified
/// against the store (a rollback to incomplete bytes is a second broken
/// release), with the verify summary; `None` after pushing why not.
async fn verified_rollback_target(
    ctx: &Ctx,
    l: &Loaded,
    rb: &crate::bundle::Rollback,
    target: &str,
    steps: &mut Vec<StepReport>,
) -> Option<(Loaded, String)> {
    // The judgment lint and canary make of the target, then its bytes.
    let loaded = crate::adapters::bundle_files::load_named_bundle(l, &rb.bundle);
    let status = crate::adapters::bundle_files::status_of(rb, &loaded);
    let problem = crate::checks::rollback::judge(l, &status).into_iter().next();
    let prev = match (loaded, problem) {
        (Ok(p), None) => p,
        (_, problem) => {
            let (d, summary) = match &problem {
                Some(Unusable::NotRecorded { digest, recorded, .. }) => (
                    rv::rollback_target_not_recorded(digest, recorded),
                    "rollback target is not the recorded release: degrade proposed, no revert PR",
                ),
                Some(u @ Unusable::IsRelease { .. }) => (
                    rv::rollback_target_is_release(&rb.bundle, &u.reason()),
                    "rollback target is this release: degrade proposed, no revert PR",
                ),
                other => (
                    rv::rollback_target_unloadable(
                        &rb.bundle,
                        &other.as_ref().and_then(Unusable::load_error).unwrap_or_else(|| "it does not load".into()),
                    ),
                    "rollback target unusable: degrade proposed, no revert PR",
                ),
            };
            steps.push(degrade(target, d, summary, json!({"proposal": "degrade"})));
            return None;
        }
    };
    let mut verify =
        super::verify::verify_loaded(ctx, &prev, &VerifyOptions::quiet(), &Overrides::default(), None).await;
    verify.step = "verify-rollback-target".into();
    let verify_summary = verify.summary.clone();
    let verdict = verify.verdict;
    let findings: Vec<String> =
        verify.diagnostics.iter().take(20).map(|d| format!("{} {}", d.code, d.message)).collect();
    steps.push(verify);
    if verdict == Verdict::Pass {
        return Some((prev, verify_summary));
    }
    let d = rv::rollback_target_unverified(
        &rb.bundle,
        &prev.bundle.metadata.version,
        &verdict.to_string(),
        &verify_summary,
        &findings,
    );
    steps.push(degrade(
        target,
        d,
        "rollback target unverified: degrade proposed, no revert PR",
        json!({"proposal": "degrade", "rollbackTarget": rb.bundle}),
    ));
    None
}

/// The revert commit's message. It is an outlet like the PR title: GitHub
/// shows it, and its marker line is what refuses a revert of a revert, so
/// every value from the bundles is one line with controls shown and links
/// and mentions broken (a rollback path holding a line break and a forged
/// marker would otherwise add a second marker line).
fn commit_message(l: &Loaded, prev: &Loaded, rollback: &str, rel: &Path) -> String {
    use crate::report::escape::{path_name, title};
    format!(
        "Revert {name} {v} to {pv}\n\nRelease {v} ({d}) failed its post-merge gates; this restores the verified\nprevious bundle {rbp} ({pd}) at {path}.\n\n{REVERT_MARKER} {d}\n",
        name = title(&l.bundle.metadata.name),
        v = title(&l.bundle.metadata.version),
        pv = title(&prev.bundle.metadata.version),
        d = title(&l.digest),
        rbp = title(rollback),
        pd = title(&prev.digest),
        path = title(&path_name(rel)),
    )
}

/// What a revert restores: the verified previous bundle at the bundle's path.
struct RevertPlan {
    repo: git::Repository,
    rel: PathBuf,
    prev: Loaded,
    rollback: String,
    verify_summary: String,
}

/// Commit the previous bundle on the revert branch, push it, and open its
/// PR (or find the one already open): one step, whatever happens.
async fn open_revert(
    ctx: &Ctx,
    l: &Loaded,
    args: &RevertOptions,
    plan: &RevertPlan,
    evidence: Option<&Report>,
    target: &str,
) -> StepReport {
    let RevertPlan { repo, rel, prev, rollback, verify_summary } = plan;
    let branch = branch_name(l, rel, &prev.digest);
    let message = commit_message(l, prev, rollback, rel);
    let git_result = git::commit_revert(repo, rel, &prev.text, &branch, &message)
        .and_then(|oid| Ok((oid, git::push_new_branch(repo, &args.remote, &branch)?)));
    let (oid, pushed) = match git_result {
        Ok(x) => x,
        Err(e) => return StepReport::error("revert", target, &e.context(format!("creating and pushing {branch}"))),
    };
    let mut s = StepReport::new("revert", target);
    let already = matches!(pushed, git::PushOutcome::AlreadyExists(_));
    // A branch of this name already there is another run's revert only if
    // its head restores this bundle's file to the target release: a name
    // alone can be taken by anyone who can push.
    if let git::PushOutcome::AlreadyExists(head) = &pushed {
        let ours = head == &oid.to_string()
            || git::restores(repo, &args.remote, &branch, head, rel, &prev.digest).unwrap_or_else(|why| {
                s.summary = why;
                false
            });
        if !ours {
            s.verdict = Verdict::Inconclusive;
            let why = std::mem::take(&mut s.summary);
            s.summary = format!(
                "branch {branch} exists on the remote{} but does not restore {} to release {}{}: not taken as a revert in progress; a human decides",
                if head.is_empty() { String::new() } else { format!(" at {head}") },
                rel.display(),
                prev.digest,
                if why.is_empty() { String::new() } else { format!(" ({why})") }
            );
            s.data = json!({"branch": branch, "remoteHead": head, "refused": "branch-not-a-revert-of-this-bundle"});
            return s;
        }
    }
    let mut data = json!({"branch": branch, "commit": oid.to_string(), "branchExisted": already, "base": base(args), "rollbackTarget": rollback});

    let gh = match ctx.github().await {
        Ok(g) => g,
        Err(e) => return StepReport::error("revert", target, &anyhow::Error::new(e)),
    };
    let (Some(gh), Some((owner, name))) =
        (gh, git::github_repo(repo, &args.remote, ctx.env.github_repository.as_deref()))
    else {
        s.verdict = Verdict::Inconclusive;
        s.summary = format!(
            "branch {branch} {}; no GITHUB_TOKEN or GitHub repository (GITHUB_REPOSITORY): PR not opened",
            if already { "already existed" } else { "pushed" }
        );
        s.data = data;
        return s;
    };
    if already {
        match gh.find_open_pull(&owner, &name, &branch).await {
            Ok(Some(pr)) => {
                s.summary =
                    format!("already reverting: {branch} exists and PR #{} is open ({})", pr.number, pr.html_url);
                data["pr"] = json!({"number": pr.number, "url": pr.html_url, "created": false});
                s.data = data;
                return s;
            }
            Ok(None) => {} // the other run died before its PR: open it (GitHub refuses a duplicate)
            Err(e) => {
                return StepReport::error(
                    "revert",
                    target,
                    &anyhow::Error::new(e).context(format!("branch {branch} is on the remote; looking up its PR")),
                )
            }
        }
    }
    let title = pr_title(&l.bundle.metadata.name, &l.bundle.metadata.version, &prev.bundle.metadata.version);
    let body = pr_body(l, prev, rel, &branch, evidence, verify_summary);
    match gh.create_pull(&owner, &name, &title, &branch, base(args), &body).await {
        Ok(PullOutcome::Created(pr)) => {
            s.summary = format!("opened PR #{} {} ({branch} → {})", pr.number, pr.html_url, base(args));
            data["pr"] = json!({"number": pr.number, "url": pr.html_url, "created": true});
        }
        Ok(PullOutcome::Exists(pr)) => {
            s.summary = format!(
                "already reverting: a PR for {branch} exists{}",
                pr.as_ref().map(|p| format!(" (#{})", p.number)).unwrap_or_default()
            );
            data["pr"] = json!({"number": pr.as_ref().map(|p| p.number), "created": false});
        }
        Err(e) => {
            return StepReport::error(
                "revert",
                target,
                &anyhow::Error::new(e)
                    .context(format!("branch {branch} is on the remote; opening its PR (open it by hand or re-run)")),
            )
        }
    }
    s.data = data;
    s
}

/// The revert PR's title, through the title escaper.
pub(crate) fn pr_title(name: &str, version: &str, prev_version: &str) -> String {
    crate::report::escape::title(&format!("Revert {name} {version} → {prev_version} (bundlegate)"))
}

fn pr_body(
    l: &Loaded,
    prev: &Loaded,
    rel: &Path,
    branch: &str,
    evidence: Option<&Report>,
    verify_summary: &str,
) -> String {
    let facts = RevertFacts {
        name: &l.bundle.metadata.name,
        version: &l.bundle.metadata.version,
        digest: &l.digest,
        prev_version: &prev.bundle.metadata.version,
        prev_digest: &prev.digest,
        path: &rel.display().to_string(),
        branch,
        verify_summary,
    };
    revert_body(&facts, evidence)
}

/// What the revert PR says, as plain text: names and versions come from the
/// bundle, the verify summary from the store, the evidence from a report file.
pub(crate) struct RevertFacts<'a> {
    pub name: &'a str,
    pub version: &'a str,
    pub digest: &'a str,
    pub prev_version: &'a str,
    pub prev_digest: &'a str,
    pub path: &'a str,
    pub branch: &'a str,
    pub verify_summary: &'a str,
}

/// The PR body: every value through the Markdown escaper, the failed steps
/// through the report's Markdown renderer.
pub(crate) fn revert_body(f: &RevertFacts, evidence: Option<&Report>) -> String {
    use crate::report::escape::{markdown as md, markdown_code as code};
    let mut o = String::new();
    // The marker is read back by machines: the digest as computed, in a comment.
    let marker_digest: String = f.digest.chars().filter(|c| c.is_ascii_alphanumeric() || *c == ':').collect();
    o.push_str(&format!("<!-- {REVERT_MARKER} {marker_digest} -->\n"));
    o.push_str(&format!(
        "## Revert {} {} → {}\n\nRelease {} ({}) failed its post-merge gates. This PR restores the previous bundle \
         (release {}, {}) at {}.\n\n",
        md(f.name),
        md(f.version),
        md(f.prev_version),
        md(f.version),
        code(f.digest),
        md(f.prev_version),
        code(f.prev_digest),
        md(f.path)
    ));
    o.push_str(&format!("**Rollback target verified** before this PR was opened: {}\n\n", md(f.verify_summary)));
    o.push_str("### Failed gates\n\n");
    match evidence {
        Some(r) => {
            let failed: Vec<&StepReport> = r
                .steps
                .iter()
                .filter(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive))
                .collect();
            if failed.is_empty() {
                o.push_str(&format!(
                    "The evidence report ({}, verdict {}) has no failed step.\n\n",
                    md(&r.command),
                    r.verdict
                ));
            }
            for s in failed {
                o.push_str(&crate::report::format::markdown_step(s));
            }
        }
        None => o.push_str(
            "No evidence report was given (`--evidence report.json` from `bundlegate watch --format json`).\n\n",
        ),
    }
    o.push_str(&format!(
        "Branch {} is named after the failed release, so concurrent runs open one PR.\n\n{REVERT_MARKER} {}\n",
        code(f.branch),
        md(f.digest)
    ));
    crate::report::comment::truncate_markdown(
        &o,
        60_000,
        &format!("\n\n…evidence truncated.\n\n{REVERT_MARKER} {}\n", md(f.digest)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::props::{check_markdown_doc, hostile, report, Extra};
    use proptest::prelude::*;

    fn loaded(name: &str, version: &str, digest: &str) -> Loaded {
        let text = include_str!("../../examples/llm-scratch/v2/release.yaml");
        let mut l = crate::bundle::parse("r", Path::new("release.yaml"), text.to_string()).expect("the example loads");
        l.bundle.metadata.name = name.into();
        l.bundle.metadata.version = version.into();
        l.digest = digest.into();
        l
    }

    /// A value from the bundles never adds a line to the revert commit: the
    /// marker line stays the one the commit was made with.
    #[test]
    fn the_revert_commit_message_holds_one_marker_whatever_the_values() {
        let l = loaded("llm\nx", "v2\r\n@team", "sha256:aa");
        let prev = loaded("llm", "v1", "sha256:bb");
        let forged = format!("../v1/release.yaml\n{REVERT_MARKER} sha256:forged\n");
        let m = commit_message(&l, &prev, &forged, Path::new("m/v2/\nrelease.yaml"));
        assert_eq!(m.lines().filter(|x| x.starts_with(REVERT_MARKER)).count(), 1, "{m}");
        assert!(m.ends_with(&format!("{REVERT_MARKER} sha256:aa\n")), "{m}");
        assert_eq!(m.lines().count(), 6, "{m}");
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        /// One branch per release at its path: two bundles that differ in
        /// their path, their digest or their target never share a branch
        /// (prod and staging releases of the same name and version), and
        /// the same release always gets the same one (concurrent runs
        /// collide on the remote). The name stays a valid, readable ref.
        #[test]
        fn the_revert_branch_is_one_per_release_at_its_path(
            a in "[a-z/._-]{1,12}", b in "[a-z/._-]{1,12}",
            da in "[0-9a-f]{2}", db in "[0-9a-f]{2}", ta in "[0-9a-f]{2}", tb in "[0-9a-f]{2}",
            name in "[a-zA-Z0-9 ._/-]{1,12}",
        ) {
            let la = loaded(&name, "v2", &da);
            let lb = loaded(&name, "v2", &db);
            let x = branch_name(&la, Path::new(&a), &ta);
            let y = branch_name(&lb, Path::new(&b), &tb);
            prop_assert_eq!(x == y, a == b && da == db && ta == tb, "{} / {}", x, y);
            prop_assert_eq!(&x, &branch_name(&la, Path::new(&a), &ta));
            prop_assert!(x.starts_with("bundlegate/revert-") && !x.contains("..") && !x.contains(' '), "{}", x);
        }
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(256))]

        /// The revert PR body shows the bundle's names, the paths, the
        /// verify summary and the evidence as themselves: no mention, link,
        /// HTML or code span comes from them.
        #[test]
        fn revert_pr_body_shows_any_text_as_itself(
            name in hostile(), version in hostile(), prev_version in hostile(), path in hostile(), branch in hostile(), verify_summary in hostile(),
            digest in "sha256:[0-9a-f]{64}", prev_digest in "sha256:[0-9a-f]{64}", evidence in proptest::option::of(report()),
        ) {
            let f = RevertFacts { name: &name, version: &version, digest: &digest, prev_version: &prev_version, prev_digest: &prev_digest, path: &path, branch: &branch, verify_summary: &verify_summary };
            let body = revert_body(&f, evidence.as_ref());
            let marker = format!("<!-- {REVERT_MARKER} {digest} -->");
            let mut failed = Report::new(evidence.as_ref().map(|r| r.command.as_str()).unwrap_or("watch"));
            failed.steps = evidence.iter().flat_map(|r| &r.steps).filter(|s| matches!(s.verdict, Verdict::Fail | Verdict::Error | Verdict::Inconclusive)).cloned().collect();
            let extra = Extra {
                texts: vec![&name, &version, &prev_version, &path, &verify_summary],
                code: vec![&digest, &prev_digest, &branch, "--evidence report.json", "bundlegate watch --format json"],
                strong: 1,
            };
            check_markdown_doc(&body, &[&marker], &failed, &extra).map_err(TestCaseError::fail)?;
            prop_assert!(body.contains(&format!("\n{REVERT_MARKER} {digest}\n")), "the marker line is read back: {}", body);
        }
    }
}
