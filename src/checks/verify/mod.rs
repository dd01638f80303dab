//! Verify: compare the bundle's artifacts with what the store listed and what
//! hashing found. Pure: the adapter gathered the listing and the hashes.

pub(crate) mod cache;
pub mod drift;
pub mod oci;

use std::collections::{BTreeMap, HashMap};

use crate::bundle::{self, Loaded};
use crate::diag::Code;
use crate::diag::Diagnostic;
use crate::diag::{Overrides, Severity};
use crate::report::{StepReport, Table, Verdict};

/// One listed object, relative to the prefix.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Listed {
    pub key: String,
    pub size: u64,
    pub e_tag: Option<String>,
    pub version: Option<String>,
    pub last_modified: String,
}

/// An entry under a `file:` prefix that is not read as an object: a
/// symlink leading outside, a dangling symlink, a FIFO/socket/device, or a
/// name the store library does not serve. The listing names it (never drops
/// it), so the artifact and extra-object checks see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub key: String,
    /// What it is, as the end of "in `uri` it is …".
    pub why: String,
}

/// Why an object could not be hashed. Each maps to a diagnostic; none is OK.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadFailure {
    /// The object changed between listing and reading (ETag/version mismatch).
    Changed(String),
    NotFound,
    Denied(String),
    /// Fewer or more bytes than listed.
    Truncated {
        expected: u64,
        got: u64,
    },
    /// The endpoint itself is gone (connection refused, DNS failure): retrying
    /// this object or starting others cannot succeed.
    Unreachable(String),
    /// Never read: the store became unreachable before this object's turn.
    NotChecked(String),
    /// A `file:` object resolves outside its prefix (symlink): not read.
    Escapes(String),
    Other(String),
}

impl std::fmt::Display for ReadFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadFailure::Changed(s) => write!(f, "changed while reading: {s}"),
            ReadFailure::NotFound => write!(f, "not found when read (deleted after listing?)"),
            ReadFailure::Denied(s) => write!(f, "access denied: {s}"),
            ReadFailure::Truncated { expected, got } => write!(f, "stream ended after {got} of {expected} bytes"),
            ReadFailure::Unreachable(s) => write!(f, "the store is unreachable: {s}"),
            ReadFailure::NotChecked(s) => write!(f, "NOT CHECKED: {s}"),
            ReadFailure::Escapes(s) => write!(f, "refused: {s}"),
            ReadFailure::Other(s) => write!(f, "{s}"),
        }
    }
}

#[derive(Debug, Clone)]
pub enum HashOutcome {
    /// Read and hashed now; `retries` transient failures happened first.
    Hashed {
        sha256: String,
        retries: Vec<String>,
    },
    /// Identity unchanged since a verified audit: trusted from the cache.
    Cached {
        sha256: String,
        verified_at: String,
    },
    Failed {
        failure: ReadFailure,
        retries: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING-KEBAB-CASE")]
pub enum Status {
    Ok,
    Missing,
    SizeMismatch,
    DigestMismatch,
    Changed,
    Unreadable,
    Unpinned,
    Refused,
    Extra,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "OK",
            Status::Missing => "MISSING",
            Status::SizeMismatch => "SIZE-MISMATCH",
            Status::DigestMismatch => "DIGEST-MISMATCH",
            Status::Changed => "CHANGED",
            Status::Unreadable => "UNREADABLE",
            Status::Unpinned => "UNPINNED",
            Status::Refused => "REFUSED",
            Status::Extra => "EXTRA",
        }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub path: String,
    pub status: Status,
    pub expected_size: Option<u64>,
    pub actual_size: Option<u64>,
    pub expected_sha256: Option<String>,
    pub actual_sha256: Option<String>,
    pub note: String,
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: Vec<Row>,
    pub diagnostics: Vec<Diagnostic>,
    /// Some object could not be read: the tool could not finish (exit 2).
    pub unreadable: bool,
}

/// Which listed objects need hashing: listed, same size, pinned, safe path.
pub(crate) fn to_hash<'a>(l: &Loaded, listing: &'a [Listed]) -> Vec<&'a Listed> {
    let by_key: HashMap<&str, &Listed> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    l.bundle
        .spec
        .model
        .artifacts
        .iter()
        .filter(|a| !bundle::path_escapes(&a.path) && a.sha256.is_some())
        .filter_map(|a| by_key.get(a.path.as_str()).copied().filter(|o| Some(o.size) == a.size))
        .collect()
}

pub fn evaluate(l: &Loaded, listing: &[Listed], hashes: &BTreeMap<String, HashOutcome>, deny_extra: bool) -> Outcome {
    evaluate_with_refused(l, listing, &[], hashes, deny_extra)
}

/// `refused`: entries under a `file:` prefix the adapter found but did not
/// read (see [`Refused`]).
pub(crate) fn evaluate_with_refused(
    l: &Loaded,
    listing: &[Listed],
    refused: &[Refused],
    hashes: &BTreeMap<String, HashOutcome>,
    deny_extra: bool,
) -> Outcome {
    let by_key: HashMap<&str, &Listed> = listing.iter().map(|o| (o.key.as_str(), o)).collect();
    let mut out = Outcome::default();
    for (i, a) in l.bundle.spec.model.artifacts.iter().enumerate() {
        let row = judge_artifact(l, i, a, &by_key, refused, hashes, &mut out);
        out.rows.push(row);
    }
    if l.bundle.spec.model.artifacts.is_empty() {
        out.diagnostics.push(
            Diagnostic::new(
                Code::NothingVerified,
                format!(
                    "the bundle lists no artifacts: nothing under `{}` was verified",
                    l.bundle.spec.model.storage_uri
                ),
            )
            .at(l.span("spec.model.artifacts"))
            .field("spec.model.artifacts")
            .help("list every file the server needs (`bundlegate publish` records them)"),
        );
    }
    not_in_bundle(l, listing, refused, deny_extra, &mut out);
    out
}

/// The step's verdict from what was read and the findings kept after
/// `-A/-W/-D` (`kept`). Overrides decide how loud a finding is, never that
/// unread bytes passed: an artifact not read (refused, missing, the wrong
/// size, unpinned, changed) or a bundle with no artifacts is at best
/// INCONCLUSIVE, whatever became of its finding.
pub(crate) fn verdict(l: &Loaded, out: &Outcome, kept: &[Diagnostic]) -> Verdict {
    if out.unreadable {
        return Verdict::Error;
    }
    if kept.iter().any(|d| d.severity == Severity::Error) {
        return Verdict::Fail;
    }
    if l.bundle.spec.model.artifacts.is_empty() || out.unverified(l) > 0 {
        return Verdict::Inconclusive;
    }
    crate::report::floor(Verdict::Pass, kept)
}

impl Outcome {
    /// The bundle's artifacts whose bytes were not read and compared.
    pub(crate) fn unverified(&self, l: &Loaded) -> usize {
        let n = l.bundle.spec.model.artifacts.len();
        self.rows.iter().take(n).filter(|r| !matches!(r.status, Status::Ok | Status::DigestMismatch)).count()
    }
}

/// One pinned artifact: refused, missing, the wrong size, unpinned, or
/// judged by its hash. Never OK without a hash of the bytes.
fn judge_artifact(
    l: &Loaded,
    i: usize,
    a: &bundle::Artifact,
    by_key: &HashMap<&str, &Listed>,
    refused: &[Refused],
    hashes: &BTreeMap<String, HashOutcome>,
    out: &mut Outcome,
) -> Row {
    let uri = &l.bundle.spec.model.storage_uri;
    let field = format!("spec.model.artifacts[{i}]");
    let diag = |code: Code, msg: String| Diagnostic::new(code, msg).at(l.span(&field)).field(field.clone());
    let mut row = Row {
        path: a.path.clone(),
        status: Status::Ok,
        expected_size: a.size,
        actual_size: None,
        expected_sha256: a.sha256.clone(),
        actual_sha256: None,
        note: String::new(),
    };
    if bundle::path_escapes(&a.path) {
        row.status = Status::Refused;
        row.note = "path escapes the prefix; not read".into();
        out.diagnostics
            .push(diag(Code::ArtifactPathEscapes, format!("refusing to read `{}`: it escapes `{uri}`", a.path)));
        return row;
    }
    if let Some(r) = refused.iter().find(|r| r.key == a.path) {
        row.status = Status::Refused;
        row.note = format!("{}; not read", r.why);
        out.diagnostics
            .push(diag(Code::StoreObjectEscapes, format!("refusing to read `{}`: in `{uri}` it is {}", a.path, r.why)));
        return row;
    }
    let Some(obj) = by_key.get(a.path.as_str()) else {
        row.status = Status::Missing;
        out.diagnostics.push(
            diag(Code::ArtifactMissing, format!("`{}` ({:?}) is not in the store under `{uri}`", a.path, a.role))
                .help("the server needs every file of the release to start; publish it to this prefix or remove it from the bundle"),
        );
        return row;
    };
    row.actual_size = Some(obj.size);
    if a.size != Some(obj.size) {
        row.status = Status::SizeMismatch;
        out.diagnostics.push(diag(
            Code::ArtifactSizeMismatch,
            format!(
                "`{}` is {} bytes in the store, the bundle says {}",
                a.path,
                obj.size,
                a.size.map(|s| s.to_string()).unwrap_or_else(|| "nothing".into())
            ),
        ));
        return row;
    }
    let Some(want) = &a.sha256 else {
        row.status = Status::Unpinned;
        out.diagnostics.push(diag(
            Code::ArtifactUnhashed,
            format!("`{}` has no sha256 in the bundle; its bytes cannot be verified", a.path),
        ));
        return row;
    };
    match hashes.get(&a.path) {
        None => {
            // Gathering skipped it: never OK without a hash.
            row.status = Status::Unreadable;
            row.note = "not hashed".into();
            out.unreadable = true;
            out.diagnostics.push(diag(Code::ObjectUnreadable, format!("`{}` was not hashed", a.path)));
        }
        Some(HashOutcome::Failed { failure, retries }) => {
            let mut d = match failure {
                ReadFailure::Changed(why) => {
                    row.status = Status::Changed;
                    diag(Code::ObjectChangedDuringRead, format!("`{}` changed while being verified ({why})", a.path))
                }
                ReadFailure::Escapes(why) => {
                    row.status = Status::Refused;
                    diag(Code::StoreObjectEscapes, format!("refusing to read `{}`: {why}", a.path))
                }
                ReadFailure::Unreachable(_) | ReadFailure::NotChecked(_) => {
                    row.status = Status::Unreadable;
                    out.unreadable = true;
                    diag(Code::ObjectNotChecked, format!("`{}` under `{uri}` was not verified: {failure}", a.path))
                }
                other => {
                    row.status = Status::Unreadable;
                    out.unreadable = true;
                    diag(Code::ObjectUnreadable, format!("`{}` under `{uri}` could not be read: {other}", a.path))
                }
            };
            for r in retries {
                d = d.evidence(format!("retried after: {r}"));
            }
            row.note = failure.to_string();
            out.diagnostics.push(d);
        }
        Some(HashOutcome::Hashed { sha256, retries }) => {
            row.actual_sha256 = Some(sha256.clone());
            if !retries.is_empty() {
                row.note = format!("ok after {} retr{}", retries.len(), if retries.len() == 1 { "y" } else { "ies" });
            }
            if sha256 != want {
                row.status = Status::DigestMismatch;
                out.diagnostics.push(
                    diag(
                        Code::ArtifactDigestMismatch,
                        format!("`{}` in the store has sha256 {sha256}, the bundle says {want}", a.path),
                    )
                    .evidence(format!("same size ({} bytes), different bytes", obj.size)),
                );
            }
        }
        Some(HashOutcome::Cached { sha256, verified_at }) => {
            row.actual_sha256 = Some(sha256.clone());
            row.note = format!("unchanged since verified at {verified_at} (metadata only)");
            if sha256 != want {
                row.status = Status::DigestMismatch;
                out.diagnostics.push(diag(
                    Code::ArtifactDigestMismatch,
                    format!("`{}` was verified as {sha256}, the bundle says {want}", a.path),
                ));
            }
        }
    }
    row
}

/// What the prefix holds that the bundle does not name: entries that are
/// not objects (refused, never read) and extra objects (the
/// storage-initializer downloads them too; an error with `deny_extra`).
fn not_in_bundle(l: &Loaded, listing: &[Listed], refused: &[Refused], deny_extra: bool, out: &mut Outcome) {
    let uri = &l.bundle.spec.model.storage_uri;
    let listed_in_bundle: std::collections::HashSet<&str> =
        l.bundle.spec.model.artifacts.iter().map(|a| a.path.as_str()).collect();
    for r in refused.iter().filter(|r| !listed_in_bundle.contains(r.key.as_str())) {
        out.diagnostics.push(
            Diagnostic::new(Code::StoreObjectEscapes, format!("`{}` under `{uri}` is {}; not read", r.key, r.why))
                .at(l.span("spec.model.storageUri"))
                .field("spec.model.storageUri"),
        );
        out.rows.push(Row {
            path: r.key.clone(),
            status: Status::Refused,
            expected_size: None,
            actual_size: None,
            expected_sha256: None,
            actual_sha256: None,
            note: format!("{}; not read", r.why),
        });
    }
    for o in listing {
        if listed_in_bundle.contains(o.key.as_str()) {
            continue;
        }
        let mut d = Diagnostic::new(
            Code::ExtraObject,
            format!("`{}` ({} bytes) is under `{uri}` but not in the bundle", o.key, o.size),
        )
        .at(l.span("spec.model.artifacts"))
        .field("spec.model.artifacts")
        .help("KServe's storage-initializer downloads it too; add it to the bundle or remove it from the prefix");
        if deny_extra {
            d = d.severity(Severity::Error);
        }
        out.diagnostics.push(d);
        out.rows.push(Row {
            path: o.key.clone(),
            status: Status::Extra,
            expected_size: None,
            actual_size: Some(o.size),
            expected_sha256: None,
            actual_sha256: None,
            note: "not in the bundle".into(),
        });
    }
}

pub(crate) fn table(rows: &[Row]) -> Table {
    Table {
        title: "artifacts".into(),
        columns: ["path", "status", "size", "sha256", "note"].iter().map(|s| s.to_string()).collect(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    r.path.clone(),
                    r.status.as_str().to_string(),
                    r.actual_size.or(r.expected_size).map(|s| s.to_string()).unwrap_or_default(),
                    r.actual_sha256
                        .as_deref()
                        .or(r.expected_sha256.as_deref())
                        .map(|s| s.chars().take(12).collect())
                        .unwrap_or_default(),
                    r.note.clone(),
                ]
            })
            .collect(),
    }
}

/// The bundle's `file:` store resolves outside the configured store root
/// (`why` says where): nothing under it is read.
pub(crate) fn storage_outside_root(why: &str) -> Diagnostic {
    Diagnostic::new(Code::StorageUriOutsideRoot, why.to_string()).field("spec.model.storageUri")
}

/// What was read to reach a verdict: objects and bytes hashed, and how
/// long it took.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Read {
    pub objects: usize,
    pub bytes: u64,
    pub secs: f64,
}

/// The verify step: the outcome's findings and `extra` ones (drift, a
/// moved tag) under the overrides, the verdict they and the evidence floor
/// allow, the artifacts table, the summary and `data`.
pub(crate) fn step(l: &Loaded, ov: &Overrides, mut outcome: Outcome, extra: Vec<Diagnostic>, read: Read) -> StepReport {
    let mut diags = std::mem::take(&mut outcome.diagnostics);
    diags.extend(extra);
    let mut s = StepReport::new("verify", &l.display);
    s.diagnostics = ov.apply(diags);
    s.verdict = verdict(l, &outcome, &s.diagnostics);
    s.summary = summary(l, &outcome, s.verdict, read);
    s.tables.push(table(&outcome.rows));
    s.data = serde_json::json!({
        "storageUri": l.bundle.spec.model.storage_uri,
        "releaseDigest": l.digest,
        "artifacts": outcome.rows,
        "bytesHashed": read.bytes,
        "objectsHashed": read.objects,
    });
    s
}

/// The step when the store is refused before anything is read (a `file:`
/// prefix outside the store root): its finding, and never PASS, even
/// allowed away by policy, since nothing was checked.
pub(crate) fn outside_root_step(l: &Loaded, ov: &Overrides, why: &str) -> StepReport {
    let mut s = StepReport::new("verify", &l.display);
    s.diagnostics = ov.apply(vec![storage_outside_root(why).at(l.span("spec.model.storageUri"))]);
    s.verdict = s.verdict_from_diagnostics();
    if s.verdict == Verdict::Pass {
        s.verdict = Verdict::Inconclusive;
    }
    s.summary = format!("0/{} artifacts verified: {why}", l.bundle.spec.model.artifacts.len());
    s
}

/// "n/m artifacts OK under …; hashed …", and why an INCONCLUSIVE is one.
fn summary(l: &Loaded, outcome: &Outcome, verdict: Verdict, read: Read) -> String {
    let ok = outcome.rows.iter().filter(|r| r.status == Status::Ok).count();
    let mut summary = format!(
        "{ok}/{} artifacts OK under {}; hashed {} object(s), {} in {:.2}s",
        l.bundle.spec.model.artifacts.len(),
        l.bundle.spec.model.storage_uri,
        read.objects,
        crate::util::human_bytes(read.bytes),
        read.secs,
    );
    if verdict == Verdict::Inconclusive {
        summary.push_str(&if l.bundle.spec.model.artifacts.is_empty() {
            "; the bundle lists no artifacts: nothing was verified, never PASS".to_string()
        } else {
            format!("; {} artifact(s) not read, their findings allowed by policy: never PASS", outcome.unverified(l))
        });
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(key: &str, size: u64) -> Listed {
        Listed { key: key.into(), size, e_tag: None, version: None, last_modified: String::new() }
    }

    /// The store as published: every artifact at its recorded size, each
    /// hashing to its recorded digest.
    fn as_published(arts: &[crate::bundle::Artifact]) -> (Vec<Listed>, BTreeMap<String, HashOutcome>) {
        let listing = arts.iter().map(|a| listed(&a.path, a.size.unwrap())).collect();
        let hashes = arts
            .iter()
            .map(|a| (a.path.clone(), HashOutcome::Hashed { sha256: a.sha256.clone().unwrap(), retries: vec![] }))
            .collect();
        (listing, hashes)
    }

    /// The words a report shows for a status and a read failure are the
    /// table's and the findings' evidence: each is its own, never empty
    /// (cargo-mutants found both unheld by unit tests).
    #[test]
    fn statuses_and_read_failures_have_their_own_words() {
        let all = [
            Status::Ok,
            Status::Missing,
            Status::SizeMismatch,
            Status::DigestMismatch,
            Status::Changed,
            Status::Unreadable,
            Status::Unpinned,
            Status::Refused,
            Status::Extra,
        ];
        let words: std::collections::HashSet<&str> = all.iter().map(|s| s.as_str()).collect();
        assert_eq!(words.len(), all.len());
        assert!(words.iter().all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_uppercase() || c == '-')));
        assert_eq!(ReadFailure::Denied("403".into()).to_string(), "access denied: 403");
        assert!(ReadFailure::NotFound.to_string().contains("not found"));
        assert_eq!(Status::DigestMismatch.as_str(), "DIGEST-MISMATCH");
    }

    /// Only what can pass is hashed: listed, at the recorded size, pinned
    /// by a sha256, and a path inside the prefix.
    #[test]
    fn only_listed_pinned_same_size_safe_artifacts_are_hashed() {
        let mut l = crate::bundle::example();
        let arts = &mut l.bundle.spec.model.artifacts;
        let size = |i: usize| arts[i].size.unwrap();
        let listing = vec![
            listed(&arts[0].path, size(0)),
            listed(&arts[1].path, size(1) + 1),
            listed(&arts[2].path, size(2)),
            listed(&arts[3].path, size(3)),
            listed("unrelated.bin", 1),
        ];
        arts[2].sha256 = None;
        arts[3].path = format!("../{}", arts[3].path);
        let keys: Vec<&str> = to_hash(&l, &listing).iter().map(|o| o.key.as_str()).collect();
        assert_eq!(keys, [l.bundle.spec.model.artifacts[0].path.as_str()]);
    }

    /// The judgment over one listing, case by case: exact bytes PASS; a
    /// wrong digest, a missing or wrong-size object FAIL with their code; an
    /// unreadable object is an ERROR; an artifact not read whose finding was
    /// allowed away is INCONCLUSIVE, never PASS; an extra object warns.
    #[test]
    fn each_listing_gets_its_verdict_and_code() {
        let l = crate::bundle::example();
        let arts = &l.bundle.spec.model.artifacts;
        let (listing, hashes) = as_published(arts);
        let judge = |listing: &[Listed], hashes: &BTreeMap<String, HashOutcome>, keep: bool| {
            let out = evaluate(&l, listing, hashes, false);
            let codes: Vec<&str> = out.diagnostics.iter().map(|d| d.code.as_str()).collect::<Vec<_>>();
            let kept: Vec<Diagnostic> = if keep { out.diagnostics.clone() } else { Vec::new() };
            (verdict(&l, &out, &kept), codes.join(","), out.unverified(&l))
        };
        assert_eq!(judge(&listing, &hashes, true), (Verdict::Pass, String::new(), 0));
        let mut wrong = hashes.clone();
        wrong.insert(arts[1].path.clone(), HashOutcome::Hashed { sha256: "0".repeat(64), retries: vec![] });
        assert_eq!(judge(&listing, &wrong, true), (Verdict::Fail, "BG103".into(), 0), "a digest mismatch was read");
        let missing: Vec<Listed> = listing[1..].to_vec();
        assert_eq!(judge(&missing, &hashes, true), (Verdict::Fail, "BG101".into(), 1));
        assert_eq!(
            judge(&missing, &hashes, false),
            (Verdict::Inconclusive, "BG101".into(), 1),
            "allowed away: never PASS"
        );
        let mut short = listing.clone();
        short[2].size -= 1;
        assert_eq!(judge(&short, &hashes, true).1, "BG102");
        let mut extra = listing.clone();
        extra.push(Listed { key: "stray.bin".into(), ..listing[0].clone() });
        let (v, codes, _) = judge(&extra, &hashes, true);
        assert_eq!((v, codes.as_str()), (Verdict::Pass, "BG104"), "an extra object warns");
        let mut failed = hashes.clone();
        failed.insert(arts[0].path.clone(), HashOutcome::Failed { failure: ReadFailure::NotFound, retries: vec![] });
        assert_eq!(judge(&listing, &failed, true).0, Verdict::Error);
    }

    /// Entries under the prefix the adapter refused to read (a symlink, a
    /// directory marker): one the bundle names is its artifact's row,
    /// REFUSED and never hashed; one it does not name gets its own row;
    /// each is a BG108 finding naming it and what it is, and the step is
    /// never PASS.
    #[test]
    fn refused_entries_are_rows_and_findings_whether_named_or_not() {
        let l = crate::bundle::example();
        let arts = &l.bundle.spec.model.artifacts;
        // The first artifact's entry is one the adapter refused: not listed.
        let (mut listing, hashes) = as_published(arts);
        listing.remove(0);
        let refused = [
            Refused { key: arts[0].path.clone(), why: "a symbolic link".into() },
            Refused { key: "stray-link".into(), why: "a directory marker".into() },
        ];
        let out = evaluate_with_refused(&l, &listing, &refused, &hashes, false);
        let row = |p: &str| out.rows.iter().find(|r| r.path == p).map(|r| (r.status, r.note.clone()));
        assert_eq!(row(&arts[0].path), Some((Status::Refused, "a symbolic link; not read".into())));
        assert_eq!(row("stray-link").map(|r| r.0), Some(Status::Refused));
        assert_eq!(row(&arts[1].path).map(|r| r.0), Some(Status::Ok));
        assert_eq!(out.rows.len(), arts.len() + 1, "the named entry is its artifact's row, not a second one");
        let found: Vec<(&str, &str)> = out.diagnostics.iter().map(|d| (d.code.as_str(), d.message.as_str())).collect();
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.iter().all(|(c, _)| *c == "BG108"), "{found:?}");
        assert!(found[0].1.contains(&arts[0].path) && found[0].1.contains("a symbolic link"), "{found:?}");
        assert!(found[1].1.contains("stray-link") && found[1].1.contains("a directory marker"), "{found:?}");
        assert_ne!(verdict(&l, &out, &out.diagnostics), Verdict::Pass);
    }
}
