//! The revert's plan, resolved once from the options and the bundle, and
//! each of its outcomes written up (verdict, summary, findings, data).
//! `app::revert` only reads the repository, the store and GitHub, writes
//! the branch, and hands what it read to these functions.

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::bundle::{Loaded, Rollback};
use crate::checks::rollback::Unusable;
use crate::checks::watch::argo::{describe_rendered, Rendered};
use crate::diag::Diagnostic;
use crate::report::{StepReport, Verdict};

/// Every derived default of a revert, decided before anything is read.
#[derive(Debug, Clone)]
pub(crate) struct RevertPlan {
    /// The step target: the bundle with its version and digest.
    pub target: String,
    /// The revert PR's base branch: `--base`, else the remote's HEAD branch.
    pub base: String,
    /// When the release failed: `--failed-at`, else now.
    pub failed_at: DateTime<Utc>,
    /// How long ago that was (zero when it lies ahead).
    pub age: Duration,
    /// `--max-age`, and as the user wrote it.
    pub max_age: Duration,
    pub max_age_text: String,
    /// `spec.rollback`: the release to return to.
    pub rollback: Option<Rollback>,
}

/// The options a revert is resolved from, as plain values.
pub(crate) struct RevertInputs<'a> {
    /// `--base` (none: a pipeline step without `base`).
    pub base: Option<&'a str>,
    /// The remote's HEAD branch, read only when no base is given.
    pub remote_head: Option<String>,
    pub failed_at: Option<DateTime<Utc>>,
    pub max_age: Duration,
    pub max_age_text: &'a str,
}

impl RevertPlan {
    pub(crate) fn resolve(l: &Loaded, i: RevertInputs<'_>, now: DateTime<Utc>) -> RevertPlan {
        let failed_at = i.failed_at.unwrap_or(now);
        RevertPlan {
            target: format!("{} ({} {})", l.display, l.bundle.metadata.version, l.digest),
            base: i.base.map(str::to_string).or(i.remote_head).unwrap_or_default(),
            failed_at,
            age: (now - failed_at).to_std().unwrap_or_default(),
            max_age: i.max_age,
            max_age_text: i.max_age_text.to_string(),
            rollback: l.bundle.spec.rollback.clone(),
        }
    }

    /// The release to return to, or the step that ends the revert before
    /// anything is read. Kargo's safeguard first: a failure older than
    /// --max-age is history, not an incident (acting on it could undo a
    /// fix made since: NOT RUN). Then, without `spec.rollback` there is no
    /// verified release to return to: degrade proposed (FAIL).
    pub(crate) fn rollback_target(&self) -> Result<&Rollback, Box<StepReport>> {
        if self.age > self.max_age {
            let mut s = StepReport::not_run(
                "revert",
                &self.target,
                format!(
                    "ignored: the failure at {} is {}s old, older than --max-age {}",
                    self.failed_at,
                    self.age.as_secs(),
                    self.max_age_text
                ),
            );
            s.data = json!({"ignored": "older-than-max-age", "failedAt": self.failed_at, "maxAge": self.max_age_text});
            return Err(Box::new(s));
        }
        self.rollback.as_ref().ok_or_else(|| {
            Box::new(degrade(
                &self.target,
                super::no_rollback_target(),
                "no rollback target: degrade proposed, no revert PR",
                json!({"proposal": "degrade"}),
            ))
        })
    }
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

/// A revert is never reverted: when the bundle's last change (`sha`,
/// `msg`, the heads it merged) was a bundlegate revert, a human decides
/// (NOT RUN).
pub(crate) fn revert_of_a_revert(
    target: &str,
    rel: &Path,
    sha: &str,
    msg: &str,
    merged_heads: &[String],
) -> Option<StepReport> {
    if !super::is_revert_commit(msg, merged_heads) {
        return None;
    }
    let mut s = StepReport::not_run(
        "revert",
        target,
        format!(
            "refused: {} was last changed by a bundlegate revert ({sha}); a revert is never reverted, a human decides",
            rel.display()
        ),
    );
    s.data = json!({"refused": "revert-of-a-revert", "commit": sha});
    Some(s)
}

/// Revert only the release whose evidence failed (`release`): when what
/// the base branch renders (`rendered`: where, and each source's release)
/// is another release now (a later merge superseded it, or the Application
/// was pointed elsewhere), a revert would undo that one instead. Refused
/// (NOT RUN), as is a branch where nothing can be read: a human decides.
pub(crate) fn moved_on(
    target: &str,
    release: &str,
    base: &str,
    rendered: &Result<(String, Vec<Rendered>), String>,
) -> Option<StepReport> {
    let why = match rendered {
        Ok((_, files)) if files.iter().any(|f| f.digest.as_deref() == Ok(release)) => return None,
        Ok((at, files)) if files.is_empty() => {
            format!("refused: on {at} no source of the Application is rendered by bundlegate; a human decides")
        }
        Ok((at, files)) => format!(
            "refused: on {at} {} now, not {release} whose evidence failed; reverting would undo the later release",
            describe_rendered(files),
        ),
        Err(e) => format!("refused: the bundle on {base} cannot be read ({e}); a human decides"),
    };
    let mut s = StepReport::not_run("revert", target, why);
    s.data = json!({"refused": "bundle-moved-on", "release": release});
    Some(s)
}

/// The rollback target as loaded (`loaded`) and as judged before its bytes
/// are read (`problem`, `checks::rollback`'s first): the bundle to verify,
/// or the degrade step saying why it is no way back.
pub(crate) fn usable_target<E>(
    target: &str,
    reference: &str,
    loaded: Result<Loaded, E>,
    problem: Option<Unusable>,
) -> Result<Loaded, Box<StepReport>> {
    let problem = match (loaded, problem) {
        (Ok(prev), None) => return Ok(prev),
        (_, problem) => problem,
    };
    let (d, summary) = match &problem {
        Some(Unusable::NotRecorded { digest, recorded, .. }) => (
            super::rollback_target_not_recorded(digest, recorded),
            "rollback target is not the recorded release: degrade proposed, no revert PR",
        ),
        Some(u @ Unusable::IsRelease { .. }) => (
            super::rollback_target_is_release(reference, &u.reason()),
            "rollback target is this release: degrade proposed, no revert PR",
        ),
        other => (
            super::rollback_target_unloadable(
                reference,
                &other.as_ref().and_then(Unusable::load_error).unwrap_or_else(|| "it does not load".into()),
            ),
            "rollback target unusable: degrade proposed, no revert PR",
        ),
    };
    Err(Box::new(degrade(target, d, summary, json!({"proposal": "degrade"}))))
}

/// The verify step of the rollback target (`version`), under its own
/// name, and what it decides: a rollback to incomplete bytes is a second
/// broken release, so only a PASS goes on (its summary, which the PR
/// quotes); anything else is the degrade step carrying verify's findings.
pub(crate) fn rollback_verified(
    target: &str,
    reference: &str,
    version: &str,
    mut verify: StepReport,
) -> (StepReport, Result<String, StepReport>) {
    verify.step = "verify-rollback-target".into();
    if verify.verdict == Verdict::Pass {
        let summary = verify.summary.clone();
        return (verify, Ok(summary));
    }
    let findings: Vec<String> =
        verify.diagnostics.iter().take(20).map(|d| format!("{} {}", d.code, d.message)).collect();
    let d =
        super::rollback_target_unverified(reference, version, &verify.verdict.to_string(), &verify.summary, &findings);
    let degraded = degrade(
        target,
        d,
        "rollback target unverified: degrade proposed, no revert PR",
        json!({"proposal": "degrade", "rollbackTarget": reference}),
    );
    (verify, Err(degraded))
}

/// A revert branch of this name already on the remote (at `head`) is
/// another run's revert only if it restores the bundle's file (`rel`) to
/// the target release (`restores`: whether it does, or why that could not
/// be read): a name alone can be taken by anyone who can push. Otherwise
/// INCONCLUSIVE, and nothing more is done.
pub(crate) fn foreign_branch(
    target: &str,
    branch: &str,
    head: &str,
    rel: &Path,
    prev_digest: &str,
    restores: Result<bool, String>,
) -> Option<StepReport> {
    let why = match restores {
        Ok(true) => return None,
        Ok(false) => String::new(),
        Err(why) => why,
    };
    let mut s = StepReport::new("revert", target);
    s.verdict = Verdict::Inconclusive;
    s.summary = format!(
        "branch {branch} exists on the remote{} but does not restore {} to release {prev_digest}{}: not taken as a revert in progress; a human decides",
        if head.is_empty() { String::new() } else { format!(" at {head}") },
        rel.display(),
        if why.is_empty() { String::new() } else { format!(" ({why})") }
    );
    s.data = json!({"branch": branch, "remoteHead": head, "refused": "branch-not-a-revert-of-this-bundle"});
    Some(s)
}

/// The revert branch on the remote.
pub(crate) struct Pushed<'a> {
    pub branch: &'a str,
    pub commit: &'a str,
    /// Another run of this revert had pushed it already.
    pub existed: bool,
    pub base: &'a str,
    pub rollback: &'a str,
}

/// What became of the revert PR.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PullState {
    /// No GitHub token or repository: the branch is pushed, no PR.
    NoGitHub,
    /// The branch existed and its PR is open.
    AlreadyOpen {
        number: u64,
        url: String,
    },
    Opened {
        number: u64,
        url: String,
    },
    /// GitHub refused a second PR for the branch (the open one's number when known).
    Exists(Option<u64>),
}

/// The revert step once the branch is pushed: a PR opened or found is the
/// revert under way (PASS); without GitHub nobody is asked to merge it
/// (INCONCLUSIVE).
pub(crate) fn revert_step(target: &str, p: &Pushed<'_>, pr: PullState) -> StepReport {
    let mut s = StepReport::new("revert", target);
    let branch = p.branch;
    let mut data = json!({"branch": branch, "commit": p.commit, "branchExisted": p.existed, "base": p.base, "rollbackTarget": p.rollback});
    match pr {
        PullState::NoGitHub => {
            s.verdict = Verdict::Inconclusive;
            s.summary = format!(
                "branch {branch} {}; no GITHUB_TOKEN or GitHub repository (GITHUB_REPOSITORY): PR not opened",
                if p.existed { "already existed" } else { "pushed" }
            );
        }
        PullState::AlreadyOpen { number, url } => {
            s.summary = format!("already reverting: {branch} exists and PR #{number} is open ({url})");
            data["pr"] = json!({"number": number, "url": url, "created": false});
        }
        PullState::Opened { number, url } => {
            s.summary = format!("opened PR #{number} {url} ({branch} → {})", p.base);
            data["pr"] = json!({"number": number, "url": url, "created": true});
        }
        PullState::Exists(number) => {
            s.summary = format!(
                "already reverting: a PR for {branch} exists{}",
                number.map(|n| format!(" (#{n})")).unwrap_or_default()
            );
            data["pr"] = json!({"number": number, "created": false});
        }
    }
    s.data = data;
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::revert::REVERT_MARKER;
    use crate::diag::Code;

    const T: &str = "m/v2/release.yaml (v2 sha256:aa)";

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn inputs(base: Option<&str>, head: Option<&str>, failed_at: Option<&str>) -> RevertInputs<'static> {
        RevertInputs {
            base: base.map(|b| Box::leak(b.to_string().into_boxed_str()) as &str),
            remote_head: head.map(String::from),
            failed_at: failed_at.map(at),
            max_age: Duration::from_secs(3600),
            max_age_text: "1h",
        }
    }

    fn plan(i: RevertInputs<'_>) -> RevertPlan {
        RevertPlan::resolve(&crate::bundle::example(), i, at("2026-01-01T12:00:00Z"))
    }

    #[test]
    fn the_plan_takes_the_given_base_else_the_remote_head() {
        assert_eq!(plan(inputs(Some("release"), Some("trunk"), None)).base, "release");
        assert_eq!(plan(inputs(None, Some("trunk"), None)).base, "trunk");
        let p = plan(inputs(Some("main"), None, None));
        let l = crate::bundle::example();
        assert_eq!(p.target, format!("v2/release.yaml (v2 {})", l.digest));
        assert_eq!(p.rollback, l.bundle.spec.rollback);
        assert_eq!((p.max_age, p.max_age_text.as_str()), (Duration::from_secs(3600), "1h"));
    }

    #[test]
    fn the_failure_is_now_unless_given_and_a_future_one_has_no_age() {
        let now = plan(inputs(None, None, None));
        assert_eq!((now.failed_at, now.age), (at("2026-01-01T12:00:00Z"), Duration::ZERO));
        let past = plan(inputs(None, None, Some("2026-01-01T11:00:00Z")));
        assert_eq!((past.failed_at, past.age), (at("2026-01-01T11:00:00Z"), Duration::from_secs(3600)));
        assert_eq!(plan(inputs(None, None, Some("2026-01-01T13:00:00Z"))).age, Duration::ZERO);
    }

    #[test]
    fn a_failure_older_than_max_age_is_ignored_before_anything_is_read() {
        // Exactly --max-age old is still an incident.
        let p = plan(inputs(None, None, Some("2026-01-01T11:00:00Z")));
        assert_eq!(p.rollback_target().expect("an incident").bundle, "../v1/release.yaml");
        let p = plan(inputs(None, None, Some("2026-01-01T10:59:59Z")));
        let s = p.rollback_target().unwrap_err();
        assert_eq!(s.verdict, Verdict::NotRun);
        assert_eq!(s.summary, "ignored: the failure at 2026-01-01 10:59:59 UTC is 3601s old, older than --max-age 1h");
        assert_eq!(
            s.data,
            json!({"ignored": "older-than-max-age", "failedAt": "2026-01-01T10:59:59Z", "maxAge": "1h"})
        );
        assert_eq!((s.step.as_str(), s.target.as_str()), ("revert", p.target.as_str()));
    }

    #[test]
    fn no_rollback_target_proposes_degrading() {
        let mut p = plan(inputs(None, None, None));
        p.rollback = None;
        let s = p.rollback_target().unwrap_err();
        assert_eq!(s.verdict, Verdict::Fail);
        assert_eq!(s.summary, "no rollback target: degrade proposed, no revert PR");
        let d = &s.diagnostics[..];
        assert_eq!(
            (d.len(), d[0].code, d[0].field.as_deref()),
            (1, Code::RollbackTargetUnverified, Some("spec.rollback"))
        );
        assert_eq!(s.data, json!({"proposal": "degrade"}));
    }

    #[test]
    fn a_revert_is_never_reverted() {
        let rel = Path::new("m/release.yaml");
        assert!(revert_of_a_revert(T, rel, "abc", "ordinary change", &[]).is_none());
        let s = revert_of_a_revert(T, rel, "abc", &format!("Revert\n\n{REVERT_MARKER} sha256:1"), &[]).unwrap();
        assert_eq!(s.verdict, Verdict::NotRun);
        assert_eq!(
            s.summary,
            "refused: m/release.yaml was last changed by a bundlegate revert (abc); a revert is never reverted, a human decides"
        );
        assert_eq!(s.data, json!({"refused": "revert-of-a-revert", "commit": "abc"}));
        let merged = [format!("x\n{REVERT_MARKER} sha256:1")];
        assert!(revert_of_a_revert(T, rel, "abc", "Merge pull request #9", &merged).is_some());
    }

    fn rendered(path: &str, digest: Result<&str, &str>) -> Rendered {
        Rendered { path: path.into(), digest: digest.map(String::from).map_err(String::from) }
    }

    #[test]
    fn only_the_release_still_rendered_is_reverted() {
        let same =
            Ok(("origin/main@1".to_string(), vec![rendered("a", Err("no bundle")), rendered("b", Ok("sha256:aa"))]));
        assert!(moved_on(T, "sha256:aa", "main", &same).is_none());
        let why = |r: &Result<(String, Vec<Rendered>), String>| {
            let s = moved_on(T, "sha256:aa", "main", r).expect("refused");
            assert_eq!(
                (s.verdict, &s.data),
                (Verdict::NotRun, &json!({"refused": "bundle-moved-on", "release": "sha256:aa"}))
            );
            s.summary
        };
        assert_eq!(
            why(&Ok(("origin/main@2".into(), vec![rendered("b", Ok("sha256:bb"))]))),
            "refused: on origin/main@2 b is release sha256:bb now, not sha256:aa whose evidence failed; reverting would undo the later release"
        );
        assert_eq!(
            why(&Ok(("origin/main@2".into(), vec![]))),
            "refused: on origin/main@2 no source of the Application is rendered by bundlegate; a human decides"
        );
        assert_eq!(
            why(&Err("no such branch".into())),
            "refused: the bundle on main cannot be read (no such branch); a human decides"
        );
    }

    fn degrade_of(r: Result<Loaded, Box<StepReport>>) -> (String, String) {
        let s = r.expect_err("degrade");
        assert_eq!((s.verdict, &s.data), (Verdict::Fail, &json!({"proposal": "degrade"})));
        assert_eq!(s.diagnostics.len(), 1);
        assert_eq!(s.diagnostics[0].code, Code::RollbackTargetUnverified);
        (s.summary, s.diagnostics[0].message.clone())
    }

    #[test]
    fn a_rollback_target_that_is_no_way_back_proposes_degrading() {
        let ok = || Ok::<_, String>(crate::bundle::example());
        assert!(usable_target(T, "../v1/release.yaml", ok(), None).is_ok());
        let not_recorded =
            Unusable::NotRecorded { path: "p".into(), digest: "sha256:x".into(), recorded: "sha256:y".into() };
        assert_eq!(
            degrade_of(usable_target(T, "../v1/release.yaml", ok(), Some(not_recorded))),
            (
                "rollback target is not the recorded release: degrade proposed, no revert PR".into(),
                "the rollback target hashes to sha256:x, not the recorded sha256:y".into()
            )
        );
        let itself = Unusable::IsRelease { path: None, digest: "sha256:aa".into() };
        let (summary, message) = degrade_of(usable_target(T, "../v2/release.yaml", ok(), Some(itself)));
        assert_eq!(summary, "rollback target is this release: degrade proposed, no revert PR");
        assert!(message.starts_with("the rollback target ../v2/release.yaml is no way back: spec.rollback.releaseDigest records this release's own digest sha256:aa"), "{message}");
        let unreadable = Unusable::Unreadable { path: "p".into(), error: "no such file".into() };
        assert_eq!(
            degrade_of(usable_target(T, "../v1/release.yaml", Err("x"), Some(unreadable))),
            (
                "rollback target unusable: degrade proposed, no revert PR".into(),
                "the rollback target ../v1/release.yaml does not load: no such file".into()
            )
        );
        // Not loaded and no reason given: still no way back.
        assert_eq!(
            degrade_of(usable_target(T, "../v1/release.yaml", Err::<Loaded, _>("x"), None)).1,
            "the rollback target ../v1/release.yaml does not load: it does not load"
        );
    }

    #[test]
    fn only_a_verified_rollback_target_goes_on() {
        let mut v = StepReport::new("verify", "v1");
        v.summary = "3/3 objects verified".into();
        let (step, out) = rollback_verified(T, "../v1/release.yaml", "v1", v.clone());
        assert_eq!((step.step.as_str(), step.summary.as_str()), ("verify-rollback-target", "3/3 objects verified"));
        assert_eq!(out.unwrap(), "3/3 objects verified");
        v.verdict = Verdict::Inconclusive;
        v.summary = "store unreachable".into();
        v.diagnostics = (0..25).map(|i| Diagnostic::new(Code::RollbackTargetUnverified, format!("m{i}"))).collect();
        let (step, out) = rollback_verified(T, "../v1/release.yaml", "v1", v);
        assert_eq!((step.step.as_str(), step.verdict), ("verify-rollback-target", Verdict::Inconclusive));
        let s = out.unwrap_err();
        assert_eq!(
            (s.verdict, s.summary.as_str()),
            (Verdict::Fail, "rollback target unverified: degrade proposed, no revert PR")
        );
        assert_eq!(s.data, json!({"proposal": "degrade", "rollbackTarget": "../v1/release.yaml"}));
        let d = &s.diagnostics[0];
        assert_eq!(
            d.message,
            "the rollback target ../v1/release.yaml (v1) did not verify (INCONCLUSIVE): store unreachable"
        );
        assert_eq!(d.evidence.len(), 20, "{d:?}");
        assert_eq!(d.evidence[0], format!("{} m0", Code::RollbackTargetUnverified));
    }

    #[test]
    fn a_branch_that_does_not_restore_the_target_is_not_taken_for_a_revert() {
        let rel = Path::new("m/release.yaml");
        assert!(foreign_branch(T, "b", "h", rel, "sha256:bb", Ok(true)).is_none());
        let s = foreign_branch(T, "b", "h", rel, "sha256:bb", Ok(false)).unwrap();
        assert_eq!(s.verdict, Verdict::Inconclusive);
        assert_eq!(s.summary, "branch b exists on the remote at h but does not restore m/release.yaml to release sha256:bb: not taken as a revert in progress; a human decides");
        assert_eq!(s.data, json!({"branch": "b", "remoteHead": "h", "refused": "branch-not-a-revert-of-this-bundle"}));
        let s = foreign_branch(T, "b", "", rel, "sha256:bb", Err("unreadable".into())).unwrap();
        assert_eq!(s.summary, "branch b exists on the remote but does not restore m/release.yaml to release sha256:bb (unreadable): not taken as a revert in progress; a human decides");
    }

    #[test]
    fn the_revert_step_says_what_became_of_the_pr() {
        let p = |existed| Pushed { branch: "br", commit: "c1", existed, base: "main", rollback: "../v1/release.yaml" };
        let base = json!({"branch": "br", "commit": "c1", "branchExisted": false, "base": "main", "rollbackTarget": "../v1/release.yaml"});
        let with_pr = |existed: bool, pr| {
            let mut d = base.clone();
            d["branchExisted"] = existed.into();
            d["pr"] = pr;
            d
        };
        let s = revert_step(T, &p(false), PullState::NoGitHub);
        assert_eq!((s.verdict, &s.data), (Verdict::Inconclusive, &base));
        assert_eq!(
            s.summary,
            "branch br pushed; no GITHUB_TOKEN or GitHub repository (GITHUB_REPOSITORY): PR not opened"
        );
        let s = revert_step(T, &p(true), PullState::NoGitHub);
        assert!(s.summary.starts_with("branch br already existed; "), "{}", s.summary);
        let s = revert_step(T, &p(false), PullState::Opened { number: 7, url: "u".into() });
        assert_eq!((s.verdict, s.summary.as_str()), (Verdict::Pass, "opened PR #7 u (br → main)"));
        assert_eq!(s.data, with_pr(false, json!({"number": 7, "url": "u", "created": true})));
        let s = revert_step(T, &p(true), PullState::AlreadyOpen { number: 7, url: "u".into() });
        assert_eq!(
            (s.verdict, s.summary.as_str()),
            (Verdict::Pass, "already reverting: br exists and PR #7 is open (u)")
        );
        assert_eq!(s.data, with_pr(true, json!({"number": 7, "url": "u", "created": false})));
        let s = revert_step(T, &p(false), PullState::Exists(Some(7)));
        assert_eq!(s.summary, "already reverting: a PR for br exists (#7)");
        assert_eq!(s.data, with_pr(false, json!({"number": 7, "created": false})));
        let s = revert_step(T, &p(false), PullState::Exists(None));
        assert_eq!(s.summary, "already reverting: a PR for br exists");
        assert_eq!(s.data["pr"], json!({"number": null, "created": false}));
        assert_eq!((s.step.as_str(), s.target.as_str()), ("revert", T));
    }
}
