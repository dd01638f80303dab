//! The revert's judgments: is there a verified release to return to, and
//! was the bundle itself put there by a revert? When there is no verified
//! way back, every finding proposes degrading instead (RollbackTargetUnverified).
//!
//! - [`steps`]: the plan resolved once, and each outcome written up;
//! - [`text`]: what the revert writes outside the report (branch, commit, PR).

pub(crate) mod steps;
pub(crate) mod text;

use crate::diag::{Code, Diagnostic};

/// The marker a revert commit and PR carry; a bundle last changed by such a
/// commit is never reverted again (Kargo's "never roll back a rollback").
pub const REVERT_MARKER: &str = "bundlegate-revert-of:";

/// A revert commit carries the marker; when it arrived through a merge
/// commit, the marker is in the merged branch's head commit.
pub(crate) fn is_revert_commit(msg: &str, merged_heads: &[String]) -> bool {
    msg.contains(REVERT_MARKER) || merged_heads.iter().any(|m| m.contains(REVERT_MARKER))
}

const DEGRADE: &str = "degrade instead of rolling back: keep or scale the current pods, route traffic away, or serve a fallback; do not roll back to bytes that cannot be read (switching blindly to an old package with a missing tokenizer adds a new failure)";

fn unverified(message: String, field: &str) -> Diagnostic {
    Diagnostic::new(Code::RollbackTargetUnverified, message).field(field).help(DEGRADE)
}

/// The bundle names no `spec.rollback`.
pub(crate) fn no_rollback_target() -> Diagnostic {
    unverified("the bundle names no spec.rollback: there is no verified release to return to".into(), "spec.rollback")
}

/// The rollback target does not load (`error` says why).
pub(crate) fn rollback_target_unloadable(reference: &str, error: &str) -> Diagnostic {
    unverified(format!("the rollback target {reference} does not load: {error}"), "spec.rollback.bundle")
}

/// The rollback target is another release than the one recorded.
pub(crate) fn rollback_target_not_recorded(digest: &str, recorded: &str) -> Diagnostic {
    unverified(
        format!("the rollback target hashes to {digest}, not the recorded {recorded}"),
        "spec.rollback.releaseDigest",
    )
}

/// The rollback target is this release itself: a revert to it changes
/// nothing (`reason` from `checks::rollback`).
pub(crate) fn rollback_target_is_release(reference: &str, reason: &str) -> Diagnostic {
    unverified(format!("the rollback target {reference} is no way back: {reason}"), "spec.rollback")
}

/// Verifying the rollback target's bytes did not pass: a rollback to
/// incomplete bytes is a second broken release. `findings` are the verify
/// step's own, carried as evidence (the first 20).
pub(crate) fn rollback_target_unverified(
    reference: &str,
    version: &str,
    verdict: &str,
    summary: &str,
    findings: &[String],
) -> Diagnostic {
    let mut d = unverified(
        format!("the rollback target {reference} ({version}) did not verify ({verdict}): {summary}"),
        "spec.rollback",
    );
    for f in findings.iter().take(20) {
        d = d.evidence(f.clone());
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revert_is_recognised_directly_or_through_its_merge() {
        assert!(is_revert_commit(&format!("Revert x\n\n{REVERT_MARKER} sha256:1"), &[]));
        assert!(is_revert_commit("Merge pull request #9", &[format!("Revert\n\n{REVERT_MARKER} sha256:1")]));
        assert!(!is_revert_commit("Merge pull request #9", &["ordinary change".into()]));
    }

    #[test]
    fn every_finding_proposes_degrading() {
        for d in [
            no_rollback_target(),
            rollback_target_unloadable("../v1/release.yaml", "missing"),
            rollback_target_not_recorded("sha256:a", "sha256:b"),
            rollback_target_is_release("../v2/release.yaml", "it is this release"),
            rollback_target_unverified("../v1/release.yaml", "v1", "FAIL", "1 missing", &["BG301 gone".into()]),
        ] {
            assert_eq!(d.code, Code::RollbackTargetUnverified);
            assert!(d.help.iter().any(|h| h.starts_with("degrade instead")), "{d:?}");
        }
    }
}
