//! The in-pod verifier's judgment (`verify-files`): each file the server
//! will read, as found on the pod's disk, against the bundle's pin.

use crate::diag::{Code, Diagnostic};

/// A file the bundle pins.
#[derive(Debug, Clone)]
pub(crate) struct Expected {
    pub path: String,
    pub sha256: String,
    pub size: u64,
}

/// What was found at that path.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    Ok,
    Missing,
    SizeMismatch { actual: u64 },
    DigestMismatch { actual: String },
    /// Outside the root, not a regular file, or a read error.
    Unreadable(String),
}

/// One diagnostic per file that is not exactly the pinned bytes, and a
/// status per file (OK, MISSING, SIZE-MISMATCH, DIGEST-MISMATCH, UNREADABLE)
/// in `items` order. The messages lead with the status: they are what the
/// pod's termination log shows.
pub(crate) fn judge(items: &[Expected], outcomes: &[Outcome]) -> (Vec<Diagnostic>, Vec<&'static str>) {
    let mut diags = Vec::new();
    let mut statuses = Vec::new();
    for (e, o) in items.iter().zip(outcomes) {
        let (status, detail) = match o {
            Outcome::Ok => ("OK", None),
            Outcome::Missing => ("MISSING", Some(format!("MISSING {}: expected sha256:{} size {}, no such file", e.path, e.sha256, e.size))),
            Outcome::SizeMismatch { actual } => ("SIZE-MISMATCH", Some(format!("SIZE-MISMATCH {}: expected size {} (sha256:{}), found {actual} bytes", e.path, e.size, e.sha256))),
            Outcome::DigestMismatch { actual } => ("DIGEST-MISMATCH", Some(format!("DIGEST-MISMATCH {}: expected sha256:{}, found sha256:{actual}", e.path, e.sha256))),
            Outcome::Unreadable(why) => ("UNREADABLE", Some(format!("UNREADABLE {}: expected sha256:{}: {why}", e.path, e.sha256))),
        };
        if let Some(detail) = detail {
            diags.push(Diagnostic::new(Code::PodArtifactMismatch, detail).field(e.path.clone()));
        }
        statuses.push(status);
    }
    // A file without an outcome was not checked: never counted as OK.
    for e in items.iter().skip(outcomes.len()) {
        diags.push(Diagnostic::new(Code::PodArtifactMismatch, format!("UNREADABLE {}: expected sha256:{}: not checked", e.path, e.sha256)).field(e.path.clone()));
        statuses.push("UNREADABLE");
    }
    (diags, statuses)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_exact_bytes_pass_and_unchecked_files_fail() {
        let e = |p: &str| Expected { path: p.into(), sha256: "ab".into(), size: 3 };
        let items = [e("a"), e("b"), e("c")];
        let (d, st) = judge(&items, &[Outcome::Ok, Outcome::SizeMismatch { actual: 2 }]);
        assert_eq!(st, vec!["OK", "SIZE-MISMATCH", "UNREADABLE"]);
        assert_eq!(d.len(), 2);
        assert!(d.iter().all(|d| d.code == Code::PodArtifactMismatch));
        assert!(d[0].message.starts_with("SIZE-MISMATCH b:"), "{}", d[0].message);
    }
}
