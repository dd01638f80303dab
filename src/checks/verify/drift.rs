//! The scheduled drift audit's own findings (the per-object judgment is
//! `checks::verify`'s): an object that changed under the same path since it
//! was verified, and a cache that could not be trusted.

use crate::diag::{Code, Diagnostic};

/// What identifies a stored object's bytes without reading them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Identity<'a> {
    pub e_tag: Option<&'a str>,
    pub size: u64,
    pub last_modified: &'a str,
}

/// `key` changed in the store since the audit at `verified_at`: one path,
/// two contents, which a release bundle promises never happens.
pub(crate) fn artifact_drifted(key: &str, verified_at: &str, was: Identity<'_>, now: Identity<'_>) -> Diagnostic {
    Diagnostic::new(Code::ArtifactDrifted, format!("`{key}` changed in the store since the audit at {verified_at}"))
        .evidence(format!("was etag {:?} size {} modified {}", was.e_tag, was.size, was.last_modified))
        .evidence(format!("now etag {:?} size {} modified {}", now.e_tag, now.size, now.last_modified))
}

/// The audit cache `what` was not trusted (`why`): nothing was skipped,
/// every object was hashed again.
pub(crate) fn cache_rebuilt(what: &str, why: &str) -> Diagnostic {
    Diagnostic::new(
        Code::AuditCacheRebuilt,
        format!("audit cache {what} was not trusted ({why}); every object was re-hashed and the cache rewritten"),
    )
}
