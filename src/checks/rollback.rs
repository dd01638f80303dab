//! Is the rollback target a way back? One judgment, used by lint (BG010,
//! BG011, BG020, BG022), canary (the decision card's rollback) and revert
//! (the revert PR, or a degrade proposal). Everything that can be known
//! before the target's bytes are read is judged here; whether the store
//! holds those bytes is verify's judgment, which canary and revert run next.

use crate::bundle::Loaded;

/// What the caller found when it tried to load the rollback target
/// (`adapters::bundle_files::rollback_status`).
#[derive(Debug, Clone)]
pub enum RollbackStatus {
    NotDeclared,
    Resolved {
        path: String,
        digest: String,
    },
    /// `error` says where the target is broken without quoting it.
    Unreadable {
        path: String,
        error: String,
    },
    /// The path leads outside the confinement root (absolute, `..`, or a symlink).
    Escapes {
        path: String,
        root: String,
    },
}

/// Why the rollback target is not a way back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unusable {
    NotDeclared,
    Unreadable {
        path: String,
        error: String,
    },
    Escapes {
        path: String,
        root: String,
    },
    /// It loads, but it is another release than the one recorded.
    NotRecorded {
        path: String,
        digest: String,
        recorded: String,
    },
    /// It is this release: the file itself, a copy, or its own digest
    /// recorded (`path` when the target resolved to it). Rolling back to it
    /// changes nothing.
    IsRelease {
        path: Option<String>,
        digest: String,
    },
}

/// Every reason the target is unusable, in the order lint reports them;
/// empty when nothing short of reading its bytes speaks against it.
pub(crate) fn judge(l: &Loaded, status: &RollbackStatus) -> Vec<Unusable> {
    let recorded = l.bundle.spec.rollback.as_ref().map(|r| r.release_digest.as_str());
    let mut out = Vec::new();
    match status {
        RollbackStatus::NotDeclared => out.push(Unusable::NotDeclared),
        RollbackStatus::Unreadable { path, error } => {
            out.push(Unusable::Unreadable { path: path.clone(), error: error.clone() })
        }
        RollbackStatus::Escapes { path, root } => {
            out.push(Unusable::Escapes { path: path.clone(), root: root.clone() })
        }
        // Resolved implies declared; without a declaration there is no digest to compare.
        RollbackStatus::Resolved { path, digest } => {
            if let Some(want) = recorded.filter(|w| w != digest) {
                out.push(Unusable::NotRecorded { path: path.clone(), digest: digest.clone(), recorded: want.into() })
            }
        }
    }
    match status {
        RollbackStatus::Resolved { path, digest } if recorded.is_some() && *digest == l.digest => {
            out.push(Unusable::IsRelease { path: Some(path.clone()), digest: l.digest.clone() })
        }
        _ if recorded == Some(l.digest.as_str()) => {
            out.push(Unusable::IsRelease { path: None, digest: l.digest.clone() })
        }
        _ => {}
    }
    out
}

impl Unusable {
    /// Why the target did not load, when that is the reason.
    pub(crate) fn load_error(&self) -> Option<String> {
        match self {
            Unusable::Unreadable { error, .. } => Some(error.clone()),
            Unusable::Escapes { path, root } => Some(format!(
                "`{path}` resolves outside {root} (the bundle's git work tree, else the folder above the bundle's folder): refused, not read"
            )),
            _ => None,
        }
    }

    /// One sentence for a decision card or a degrade proposal.
    pub(crate) fn reason(&self) -> String {
        match self {
            Unusable::NotDeclared => "the bundle declares no spec.rollback".into(),
            Unusable::Unreadable { .. } | Unusable::Escapes { .. } => {
                format!("it does not load: {}", self.load_error().unwrap_or_default())
            }
            Unusable::NotRecorded { digest, recorded, .. } => {
                format!("it hashes to {digest} but spec.rollback.releaseDigest records {recorded}")
            }
            Unusable::IsRelease { path: Some(p), digest } => {
                format!("`{p}` is this release itself (release digest {digest}): rolling back to it changes nothing")
            }
            Unusable::IsRelease { path: None, digest } => format!(
                "spec.rollback.releaseDigest records this release's own digest {digest}: rolling back to it changes nothing"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(rollback: Option<&str>) -> Loaded {
        let mut l = crate::bundle::example();
        match rollback {
            Some(d) => l.bundle.spec.rollback.as_mut().unwrap().release_digest = d.into(),
            None => l.bundle.spec.rollback = None,
        }
        l
    }

    /// Each way a target fails is named, and a target that is the release
    /// itself is never a way back, whether found by loading it or by the
    /// digest recorded.
    #[test]
    fn every_way_a_target_fails_is_named() {
        let own = loaded(Some("sha256:prev")).digest.clone();
        let resolved = |d: &str| RollbackStatus::Resolved { path: "../v1/release.yaml".into(), digest: d.into() };
        assert_eq!(judge(&loaded(None), &RollbackStatus::NotDeclared), [Unusable::NotDeclared]);
        assert!(judge(&loaded(Some("sha256:prev")), &resolved("sha256:prev")).is_empty());
        assert_eq!(
            judge(&loaded(Some("sha256:prev")), &resolved("sha256:other")),
            [Unusable::NotRecorded {
                path: "../v1/release.yaml".into(),
                digest: "sha256:other".into(),
                recorded: "sha256:prev".into()
            }]
        );
        let copy = judge(&loaded(Some(&own)), &resolved(&own));
        assert_eq!(copy, [Unusable::IsRelease { path: Some("../v1/release.yaml".into()), digest: own.clone() }]);
        let recorded_own = judge(&loaded(Some(&own)), &resolved("sha256:prev"));
        assert!(matches!(recorded_own[0], Unusable::NotRecorded { .. }), "{recorded_own:?}");
        assert_eq!(recorded_own[1], Unusable::IsRelease { path: None, digest: own.clone() });
        let copy_unrecorded = judge(&loaded(Some("sha256:prev")), &resolved(&own));
        assert!(copy_unrecorded.iter().any(|u| matches!(u, Unusable::IsRelease { path: Some(_), .. })));
        let unreadable = RollbackStatus::Unreadable { path: "x".into(), error: "gone".into() };
        assert_eq!(judge(&loaded(Some("sha256:prev")), &unreadable)[0].reason(), "it does not load: gone");
        let outside = RollbackStatus::Escapes { path: "/etc/x".into(), root: "/repo".into() };
        let why = judge(&loaded(Some("sha256:prev")), &outside)[0].reason();
        assert!(why.contains("`/etc/x` resolves outside /repo") && why.ends_with("refused, not read"), "{why}");
        assert_eq!(Unusable::NotDeclared.load_error(), None);
        for u in copy.iter().chain(&recorded_own) {
            assert!(u.reason().contains("changes nothing") || u.reason().contains("hashes to"), "{}", u.reason());
        }
    }
}
