//! Has Argo CD deployed *this* release? Decided from git ancestry and the
//! bundle's content, not from string equality with the merge commit.
//!
//! In a repository of many models merges land minutes apart: Argo CD moves
//! `status.sync.revision` on to later commits that contain the merge (the app
//! stays Synced with no new operation when they do not touch its path), and
//! with the source hydrator (3.x) it reports the *hydrated* commit, the
//! merged (dry) one only under `status.sourceHydrator`. So every revision the
//! Application names is classified against the merge commit by the git
//! adapter ([`Relation`]), and the judgment here is pure. Codes: BG504,
//! BG509, BG510 (`src/diag.rs`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::diag::Code;
use crate::diag::Diagnostic;

/// The fields of an Argo CD Application's status that the gate reads.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppStatus {
    pub name: String,
    pub sync_status: Option<String>,
    pub sync_revision: Option<String>,
    /// Multi-source applications report `sync.revisions[]` instead.
    pub sync_revisions: Vec<String>,
    /// Recorded for the report only: health is never used to decide (since
    /// Argo CD 3.4 `Missing` means every resource is missing, before that any;
    /// neither says which release runs).
    pub health: Option<String>,
    pub phase: Option<String>,
    pub operation_revision: Option<String>,
    /// Multi-source: the last operation's revision per source
    /// (`syncResult.revisions[]`), where `revision` is empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operation_revisions: Vec<String>,
    pub started_at: Option<String>,
    pub finished_at: Option<String>,
    pub message: Option<String>,
    /// Source hydrator: (dry SHA, hydrated SHA) of the current and the last
    /// successful hydration (`status.sourceHydrator.{currentOperation,
    /// lastSuccessfulOperation}`); the dry SHA is the authored commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hydrated: Vec<Hydration>,
    /// What Argo CD renders (`spec.source`, each `spec.sources[]`, or the
    /// hydrator's `spec.sourceHydrator.drySource`): the release the
    /// Application deploys is read from these paths at the synced revision,
    /// not from the file the watch was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<AppSource>,
}

/// One source of an Application, as far as it picks a release bundle.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AppSource {
    pub repo_url: Option<String>,
    /// The folder Argo CD renders (`path`; empty: the repository root).
    pub path: String,
    /// The bundle file inside `path` (the plugin's `bundle` parameter;
    /// None: the default `release.yaml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// Set when a tool other than the bundlegate plugin renders it (helm,
    /// kustomize, another plugin): what it deploys cannot be read here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_tool: Option<String>,
    /// The hydrator's dry source (rendered at the dry SHA).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry: bool,
}

impl AppSource {
    /// The bundle file Argo CD's plugin renders, relative to the repository root.
    pub(crate) fn bundle_path(&self) -> String {
        let file = self.bundle.as_deref().filter(|b| !b.trim().is_empty()).unwrap_or("release.yaml");
        let dir = self.path.trim_matches('/');
        if dir.is_empty() || dir == "." {
            file.to_string()
        } else {
            format!("{dir}/{file}")
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Hydration {
    pub dry_sha: String,
    pub hydrated_sha: Option<String>,
    /// `currentOperation.phase` (Hydrating, Failed, Hydrated); None for the
    /// last successful operation.
    pub phase: Option<String>,
}

impl AppStatus {
    /// One line for evidence: what Argo said, including the health it claims.
    pub(crate) fn describe(&self) -> String {
        format!(
            "sync={} revision={} health={} operation={} finishedAt={}{}{}",
            self.sync_status.as_deref().unwrap_or("-"),
            self.sync_revision.as_deref().or(self.sync_revisions.first().map(String::as_str)).unwrap_or("-"),
            self.health.as_deref().unwrap_or("-"),
            self.phase.as_deref().unwrap_or("-"),
            self.finished_at.as_deref().unwrap_or("-"),
            self.hydrated.first().map(|h| format!(" drySHA={}", h.dry_sha)).unwrap_or_default(),
            self.message.as_deref().map(|m| format!(" message={m:?}")).unwrap_or_default()
        )
    }

    /// Every revision the Application names as synced or hydrated from, in
    /// the order they are reported (no duplicates).
    pub(crate) fn revisions(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let all = self
            .sync_revision
            .iter()
            .chain(self.sync_revisions.iter())
            .chain(self.operation_revision.iter())
            .chain(self.operation_revisions.iter())
            .chain(self.hydrated.iter().map(|h| &h.dry_sha));
        for r in all {
            if !r.trim().is_empty() && !out.iter().any(|o| same_revision(o, r)) {
                out.push(r.clone());
            }
        }
        out
    }
}

/// How a revision Argo CD reports relates to the merge commit; the git
/// adapter decides it on the checked-out repository.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "relation", content = "detail")]
pub(crate) enum Relation {
    /// The merge commit itself.
    Same,
    /// A later commit containing the merge, in which the bundle (and so what
    /// it renders) is unchanged: deploying it deploys this release.
    UnchangedDescendant,
    /// A later commit containing the merge that changed the bundle: this
    /// release was superseded (the detail names what changed).
    ChangedDescendant(String),
    /// The merge commit (or a commit it maps to), but the Application's
    /// source does not render this release there: the Application is not
    /// this bundle's, or it renders another folder (the detail says what).
    NotRendered(String),
    /// An ancestor of the merge: Argo CD is behind.
    Older,
    /// Neither an ancestor nor a descendant (another branch, a rewritten
    /// history): it does not show which release runs.
    Unrelated,
    /// The commit is not in the local repository (a shallow clone, the
    /// hydration branch): nothing can be said about it.
    Unknown(String),
}

/// Each reported revision with its relation to the merge commit.
pub(crate) type Lineage = BTreeMap<String, Relation>;

/// Where a revision stands in the history relative to the merge commit, as
/// the git adapter read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ancestry {
    Same,
    Descendant,
    Older,
    Unrelated,
    Unknown(String),
}

/// One bundle an Application's source renders at a revision: its path in
/// the repository (after links) and its release digest, or why it cannot
/// be read there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub path: String,
    pub digest: Result<String, String>,
}

/// What the git adapter read about one revision Argo CD reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RevisionFacts {
    pub ancestry: Ancestry,
    /// What the Application's sources render there (empty: no source is
    /// rendered by bundlegate, so nothing can be read).
    pub rendered: Vec<Rendered>,
    /// A hydrated commit: the dry SHA its hydrator metadata names, and what
    /// was read at that commit (Argo CD deploys what the dry commit renders).
    pub hydrated_from: Option<(String, Box<RevisionFacts>)>,
}

/// What the adapter read at each reported revision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct History {
    pub revisions: BTreeMap<String, RevisionFacts>,
}

fn renders(f: &RevisionFacts, release: &str) -> bool {
    f.rendered.iter().any(|r| r.digest.as_deref() == Ok(release))
}

/// What a set of bundle files renders, in words (`p is release d; …`).
pub(crate) fn describe_rendered(rendered: &[Rendered]) -> String {
    rendered
        .iter()
        .map(|r| match &r.digest {
            Ok(d) => format!("{} is release {d}", r.path),
            Err(e) => format!("{}: {e}", r.path),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn rendered_text(f: &RevisionFacts) -> String {
    describe_rendered(&f.rendered)
}

/// How `rev` relates to this release (`release`: its digest). Argo CD
/// deploys what the Application's sources render at the synced revision,
/// so that, not the file the watch was given, decides: the same release
/// digest at the merge commit or a descendant deploys it; another one (or
/// none: the folder was removed) at a descendant supersedes it; a hydrated
/// commit stands for its dry SHA.
pub(crate) fn relation_from(rev: &str, f: &RevisionFacts, release: &str) -> Relation {
    if let Some((_, dry)) = &f.hydrated_from {
        return relation_from(rev, dry, release);
    }
    let nothing = || {
        Relation::Unknown(format!(
            "no source of the Application is rendered by the bundlegate plugin at {}, so what it deploys cannot be read",
            short(rev)
        ))
    };
    match &f.ancestry {
        Ancestry::Unknown(why) => Relation::Unknown(why.clone()),
        Ancestry::Older => Relation::Older,
        Ancestry::Unrelated => Relation::Unrelated,
        _ if f.rendered.is_empty() => nothing(),
        Ancestry::Same if renders(f, release) => Relation::Same,
        Ancestry::Descendant if renders(f, release) => Relation::UnchangedDescendant,
        Ancestry::Same => Relation::NotRendered(format!(
            "at the merge commit the Application renders {}, not release {release}",
            rendered_text(f)
        )),
        Ancestry::Descendant => {
            Relation::ChangedDescendant(format!("{} changed the release: {}", short(rev), rendered_text(f)))
        }
    }
}

/// Every reported revision's relation to this release.
pub(crate) fn lineage_from(h: &History, release: &str) -> Lineage {
    h.revisions.iter().map(|(rev, f)| (rev.clone(), relation_from(rev, f, release))).collect()
}

fn short(rev: &str) -> &str {
    rev.get(..12).unwrap_or(rev)
}

/// A full 40-hex SHA must match exactly; an abbreviated one (≥ 7) by prefix,
/// the way git resolves it.
pub(crate) fn same_revision(have: &str, want: &str) -> bool {
    let (h, w) = (have.trim().to_ascii_lowercase(), want.trim().to_ascii_lowercase());
    if h.is_empty() || w.is_empty() {
        return false;
    }
    h == w
        || (w.len() >= 7 && w.len() < h.len() && h.starts_with(&w))
        || (h.len() >= 7 && h.len() < w.len() && w.starts_with(&h))
}

pub(crate) fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// The relation of `rev` to the merge commit: from the lineage the adapter
/// read; equality with the merge commit needs no repository when it was not
/// looked up.
fn relation_of(rev: &str, merge: &str, lineage: &Lineage) -> Relation {
    // What the repository says about the merge commit itself (the
    // Application may not render this release there) comes first.
    if let Some((_, r)) = lineage.iter().find(|(k, _)| same_revision(k, rev)) {
        return r.clone();
    }
    if same_revision(rev, merge) {
        return Relation::Same;
    }
    Relation::Unknown(format!("{rev} was not looked up in the local repository"))
}

fn deploys_release(r: &Relation) -> bool {
    matches!(r, Relation::Same | Relation::UnchangedDescendant)
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ArgoState {
    /// Argo CD finished a successful sync of the merge commit or of a later
    /// commit in which the bundle is unchanged; `via` says which.
    Synced { via: String },
    /// A later commit changed the bundle: this release is no longer the one
    /// git asks for. Never a failure of it, never a reason to revert.
    Superseded { by: String, detail: String },
    /// Not (yet) synced; `unknowable` when only commits the local repository
    /// does not hold stand between the evidence and a decision.
    Waiting { why: String, unknowable: bool },
}

/// The post-merge gate. Synced when a revision the Application reports
/// (`sync.revision`, `sync.revisions[]`, the hydrator's dry SHA) deploys this
/// release (the merge commit or an unchanged descendant), the last operation
/// succeeded for such a revision (a hydrated SHA counts through its dry SHA),
/// and it finished after the merge when the merge time is known.
/// `health.status` is deliberately not read. Without a merge commit only
/// `Synced` + `Succeeded` can be read, and the caller says that proves
/// nothing about which commit.
pub(crate) fn argo_state(
    app: Option<&AppStatus>,
    merge: Option<&str>,
    lineage: &Lineage,
    merged_at: Option<DateTime<Utc>>,
) -> ArgoState {
    let waiting = |why: String| ArgoState::Waiting { why, unknowable: false };
    let Some(a) = app else { return waiting("the Application was not found".into()) };
    if let Some(merge) = merge {
        let reported: Vec<(String, Relation)> =
            a.revisions().into_iter().map(|r| (r.clone(), relation_of(&r, merge, lineage))).collect();
        // A later commit changed the bundle: superseded, whatever the operation says.
        if let Some((sha, Relation::ChangedDescendant(detail))) =
            reported.iter().find(|(_, r)| matches!(r, Relation::ChangedDescendant(_)))
        {
            return ArgoState::Superseded { by: sha.clone(), detail: detail.clone() };
        }
        let synced: Vec<&String> = a.sync_revision.iter().chain(a.sync_revisions.iter()).collect();
        let dry_of = |rev: &str| {
            a.hydrated
                .iter()
                .find(|h| h.hydrated_sha.as_deref().is_some_and(|x| same_revision(x, rev)))
                .map(|h| h.dry_sha.clone())
        };
        // What a synced revision deploys: itself, or for a hydrated commit its dry SHA.
        // A hydrated commit is never the authored one: with the hydrator's
        // mapping at hand it decides, whether or not the commit (on its
        // orphan branch) is in the local repository.
        let deploys = |rev: &str| -> Relation {
            match dry_of(rev) {
                Some(dry) if !same_revision(&dry, rev) => relation_of(&dry, merge, lineage),
                _ => relation_of(rev, merge, lineage),
            }
        };
        let synced_rel: Vec<(&String, Relation)> = synced.iter().map(|r| (*r, deploys(r))).collect();
        let Some((via, via_rel)) = synced_rel.iter().find(|(_, r)| deploys_release(r)) else {
            let unknowable = !synced_rel.is_empty()
                && synced_rel
                    .iter()
                    .all(|(_, r)| matches!(r, Relation::Unknown(_) | Relation::Unrelated | Relation::NotRendered(_)));
            let seen =
                synced_rel.iter().map(|(r, rel)| format!("{r} ({})", describe(rel))).collect::<Vec<_>>().join(", ");
            return ArgoState::Waiting {
                why: if seen.is_empty() {
                    "status.sync.revision is empty".into()
                } else {
                    format!("status.sync names {seen}, not the merge commit {merge} or a later commit with this bundle unchanged")
                },
                unknowable,
            };
        };
        // The last operation may be an older sync of another revision.
        if let Some(op_rev) = &a.operation_revision {
            match deploys(op_rev) {
                r if deploys_release(&r) => {}
                Relation::Unknown(why) | Relation::NotRendered(why) => {
                    return ArgoState::Waiting {
                        why: format!("the last sync operation was for {op_rev}: {why}"),
                        unknowable: true,
                    }
                }
                r => {
                    return waiting(format!(
                        "the last sync operation was for {op_rev} ({}), not this release",
                        describe(&r)
                    ))
                }
            }
        }
        // Multi-source: one of the operation's per-source revisions must be
        // this release's (the others are other sources' commits or charts).
        if a.operation_revision.is_none() && !a.operation_revisions.is_empty() {
            let rels: Vec<Relation> = a.operation_revisions.iter().map(|r| deploys(r)).collect();
            if !rels.iter().any(deploys_release) {
                let unknowable = rels.iter().all(|r| matches!(r, Relation::Unknown(_) | Relation::NotRendered(_)));
                return ArgoState::Waiting {
                    why: format!(
                        "the last sync operation was for {}, none of them this release",
                        a.operation_revisions.join(", ")
                    ),
                    unknowable,
                };
            }
        }
        if a.phase.as_deref() != Some("Succeeded") {
            return waiting(format!(
                "status.operationState.phase is {}",
                a.phase.as_deref().unwrap_or("empty (no sync operation recorded)")
            ));
        }
        if let Some(m) = merged_at {
            match a.finished_at.as_deref().and_then(parse_time) {
                Some(f) if f > m => {}
                Some(f) => return waiting(format!("the successful sync finished at {f}, before the merge at {m}")),
                None => return waiting("status.operationState.finishedAt is missing or not a timestamp".into()),
            }
        }
        let via = match via_rel {
            Relation::Same if same_revision(via, merge) => format!("synced {via}"),
            Relation::Same => format!("synced {via}, hydrated from the merge commit {merge}"),
            _ => format!("synced {via}, a later commit in which this bundle is unchanged"),
        };
        return ArgoState::Synced { via };
    }
    if a.sync_status.as_deref() != Some("Synced") {
        return waiting(format!("status.sync.status is {}", a.sync_status.as_deref().unwrap_or("empty")));
    }
    if a.phase.as_deref() != Some("Succeeded") {
        return waiting(format!(
            "status.operationState.phase is {}",
            a.phase.as_deref().unwrap_or("empty (no sync operation recorded)")
        ));
    }
    ArgoState::Synced { via: "Synced and Succeeded".into() }
}

/// The `argo` step's verdict for a final state: PASS only for a sync of
/// this release with a merge commit to hold it to; INCONCLUSIVE when
/// superseded (never FAIL, never reverted); INCONCLUSIVE when the revisions cannot be placed (or no merge
/// commit was given); FAIL when Argo CD is shown not to have deployed it.
pub(crate) fn verdict(state: &ArgoState, merge_given: bool) -> crate::report::Verdict {
    use crate::report::Verdict;
    match state {
        ArgoState::Synced { .. } if merge_given => Verdict::Pass,
        ArgoState::Synced { .. } => Verdict::Inconclusive,
        // Not this release's failure, and not its success either.
        ArgoState::Superseded { .. } => Verdict::Inconclusive,
        ArgoState::Waiting { unknowable: true, .. } => Verdict::Inconclusive,
        ArgoState::Waiting { .. } => Verdict::Fail,
    }
}

fn describe(r: &Relation) -> String {
    match r {
        Relation::Same => "the merge commit".into(),
        Relation::UnchangedDescendant => "a later commit, bundle unchanged".into(),
        Relation::ChangedDescendant(d) => format!("a later commit that changed the bundle: {d}"),
        Relation::NotRendered(d) => d.clone(),
        Relation::Older => "an ancestor of the merge commit: Argo CD is behind".into(),
        Relation::Unrelated => "not on the merge commit's history".into(),
        Relation::Unknown(why) => why.clone(),
    }
}

/// Argo CD did not finish a successful sync of `revision` in time: what it
/// was waiting for, what was last seen (`None`: the Application was never
/// found) and the last read error. health.status is named only to say it
/// is not evidence.
pub(crate) fn argo_not_synced(
    revision: Option<&str>,
    within: &str,
    waiting_for: &str,
    app: &str,
    last: Option<&AppStatus>,
    last_error: Option<&str>,
) -> Diagnostic {
    let mut d = Diagnostic::new(
        Code::ArgoNotSynced,
        format!(
            "Argo CD did not finish a successful sync of {} within {within}: {waiting_for}",
            revision.unwrap_or("the target revision")
        ),
    )
    .evidence(match last {
        Some(a) => format!("last seen: {}", a.describe()),
        None => format!("Application {app} not found"),
    });
    if let Some(e) = last_error {
        d = d.evidence(format!("last read error: {e}"));
    }
    if last.and_then(|a| a.health.as_deref()) == Some("Healthy") {
        d = d.help("health.status Healthy is not evidence: it reads Healthy while the previous revision's pods serve");
    }
    d
}

/// The revisions Argo CD reports cannot be placed relative to the merge
/// commit (not in the local repository): INCONCLUSIVE, never a failure.
pub(crate) fn argo_revision_unknown(merge: &str, waiting_for: &str, last: Option<&AppStatus>) -> Diagnostic {
    let mut d = Diagnostic::new(
        Code::ArgoRevisionUnknown,
        format!("whether Argo CD deployed {merge} cannot be told: {waiting_for}"),
    );
    if let Some(a) = last {
        d = d.evidence(format!("last seen: {}", a.describe()));
    }
    d.help("check out the repository with its history (actions/checkout `fetch-depth: 0`) so later commits can be placed relative to the merge")
}

/// This release was superseded by a later commit that changed its bundle.
pub(crate) fn release_superseded(merge: &str, by: &str, detail: &str) -> Diagnostic {
    Diagnostic::new(Code::ReleaseSuperseded, format!("superseded by {by}: a later commit changed this bundle, so the release merged in {merge} is no longer the one git asks for"))
        .evidence(detail.to_string())
        .help("the watch of the later commit judges what runs now; nothing here is a failure of this release, and nothing is reverted")
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: &str = "0123456789abcdef0123456789abcdef01234567";
    const LATER: &str = "1111111111111111111111111111111111111111";

    fn app(rev: &str, phase: &str, finished: &str) -> AppStatus {
        AppStatus {
            name: "a".into(),
            sync_status: Some("Synced".into()),
            sync_revision: Some(rev.into()),
            health: Some("Healthy".into()),
            phase: Some(phase.into()),
            operation_revision: Some(rev.into()),
            finished_at: Some(finished.into()),
            ..Default::default()
        }
    }

    /// Where Argo CD is instead says how that revision relates to the merge
    /// commit, and a Healthy Application is called out as no evidence.
    #[test]
    fn waiting_says_where_argo_is_and_that_health_is_not_evidence() {
        let merged = parse_time("2026-01-01T10:00:00Z");
        let old = "ffffffffffffffffffffffffffffffffffffffff";
        for (rel, words) in [
            (Relation::Older, "an ancestor of the merge commit: Argo CD is behind"),
            (Relation::Unrelated, "not on the merge commit's history"),
        ] {
            let lineage: Lineage = [(old.to_string(), rel)].into();
            match argo_state(Some(&app(old, "Succeeded", "2026-01-01T10:01:00Z")), Some(M), &lineage, merged) {
                ArgoState::Waiting { why, .. } => assert!(why.contains(&format!("{old} ({words})")), "{why}"),
                other => panic!("{other:?}"),
            }
        }
        let healthy = app(old, "Running", "");
        let d = argo_not_synced(Some(M), "5m", "syncing", "a", Some(&healthy), None);
        assert!(d.help.iter().any(|h| h.contains("Healthy is not evidence")), "{:?}", d.help);
        let degraded = AppStatus { health: Some("Degraded".into()), ..healthy };
        let d = argo_not_synced(Some(M), "5m", "syncing", "a", Some(&degraded), None);
        assert!(d.help.is_empty(), "{:?}", d.help);
    }

    #[test]
    fn argo_gate_needs_revision_phase_and_time_not_health() {
        let merged = parse_time("2026-01-01T10:00:00Z");
        let none = Lineage::new();
        assert!(matches!(
            argo_state(Some(&app(M, "Succeeded", "2026-01-01T10:01:00Z")), Some(M), &none, merged),
            ArgoState::Synced { .. }
        ));
        assert!(matches!(
            argo_state(Some(&app(M, "Succeeded", "2026-01-01T10:01:00Z")), Some(&M[..8]), &none, merged),
            ArgoState::Synced { .. }
        ));
        let old = "ffffffffffffffffffffffffffffffffffffffff";
        let older: Lineage = [(old.to_string(), Relation::Older)].into();
        assert!(matches!(
            argo_state(Some(&app(old, "Succeeded", "2026-01-01T10:01:00Z")), Some(M), &older, merged),
            ArgoState::Waiting { unknowable: false, .. }
        ));
        assert!(
            matches!(argo_state(Some(&app(M, "Running", "")), Some(M), &none, merged), ArgoState::Waiting { why, .. } if why.contains("Running"))
        );
        assert!(
            matches!(argo_state(Some(&app(M, "Succeeded", "2026-01-01T09:59:00Z")), Some(M), &none, merged), ArgoState::Waiting { why, .. } if why.contains("before the merge"))
        );
        assert!(matches!(argo_state(None, Some(M), &none, None), ArgoState::Waiting { .. }));
    }

    /// Abbreviations as git resolves them: 7 or more hex from the start, on
    /// either side; anything shorter, empty or different is another commit.
    #[test]
    fn revisions_match_in_full_or_by_an_abbreviation_of_seven_or_more() {
        assert!(same_revision(M, M) && same_revision(&M.to_uppercase(), M) && same_revision(&format!(" {M} "), M));
        assert!(same_revision(M, &M[..7]) && same_revision(&M[..7], M) && same_revision(M, &M[..12]));
        for short in [&M[..6], &M[..1], ""] {
            assert!(!same_revision(M, short) && !same_revision(short, M), "{short:?}");
        }
        assert!(!same_revision("", ""), "nothing is not a commit");
        assert!(!same_revision(M, LATER) && !same_revision(&M[..8], &LATER[..8]));
        // Two abbreviations of equal length must be equal, not prefixes.
        assert!(same_revision(&M[..8], &M[..8]) && !same_revision(&M[..8], &format!("{}f", &M[..7])));
    }

    /// Survivors cargo-mutants found, each now a case: the last operation
    /// for an older commit, a sync that finished at the merge's very second,
    /// the wording of a direct sync, the gate without a merge commit.
    #[test]
    fn operation_time_and_the_gate_without_a_merge_commit() {
        let merged = parse_time("2026-01-01T10:00:00Z");
        let none = Lineage::new();
        let old = "ffffffffffffffffffffffffffffffffffffffff";
        let older: Lineage = [(old.to_string(), Relation::Older)].into();
        let mut a = app(M, "Succeeded", "2026-01-01T10:01:00Z");
        a.operation_revision = Some(old.into());
        assert!(
            matches!(argo_state(Some(&a), Some(M), &older, merged), ArgoState::Waiting { why, unknowable: false } if why.contains("last sync operation"))
        );
        // Finished in the merge's own second: not after it.
        assert!(matches!(
            argo_state(Some(&app(M, "Succeeded", "2026-01-01T10:00:00Z")), Some(M), &none, merged),
            ArgoState::Waiting { .. }
        ));
        assert!(
            matches!(argo_state(Some(&app(M, "Succeeded", "2026-01-01T10:00:01Z")), Some(M), &none, merged), ArgoState::Synced { via } if via == format!("synced {M}"))
        );
        // Without a merge commit only Synced + Succeeded can be read, and that is not PASS.
        let ok = app(M, "Succeeded", "2026-01-01T10:01:00Z");
        let s = argo_state(Some(&ok), None, &none, None);
        assert!(matches!(s, ArgoState::Synced { .. }));
        assert_eq!(verdict(&s, false), crate::report::Verdict::Inconclusive);
        assert_eq!(verdict(&s, true), crate::report::Verdict::Pass);
        let out_of_sync = AppStatus { sync_status: Some("OutOfSync".into()), ..ok.clone() };
        assert!(
            matches!(argo_state(Some(&out_of_sync), None, &none, None), ArgoState::Waiting { why, .. } if why.contains("OutOfSync"))
        );
        let running = AppStatus { phase: Some("Running".into()), ..ok };
        assert!(
            matches!(argo_state(Some(&running), None, &none, None), ArgoState::Waiting { why, .. } if why.contains("Running"))
        );
    }

    #[test]
    fn a_later_commit_is_judged_by_ancestry_and_content() {
        let merged = parse_time("2026-01-01T10:00:00Z");
        // The operation was for the merge; sync.revision moved on to a later commit.
        let mut a = app(M, "Succeeded", "2026-01-01T10:01:00Z");
        a.sync_revision = Some(LATER.into());
        let unchanged: Lineage = [(LATER.to_string(), Relation::UnchangedDescendant)].into();
        assert!(
            matches!(argo_state(Some(&a), Some(M), &unchanged, merged), ArgoState::Synced { via } if via.contains("unchanged"))
        );
        let changed: Lineage = [(LATER.to_string(), Relation::ChangedDescendant("release.yaml changed".into()))].into();
        assert!(
            matches!(argo_state(Some(&a), Some(M), &changed, merged), ArgoState::Superseded { by, .. } if by == LATER)
        );
        let unknown: Lineage = [(LATER.to_string(), Relation::Unknown("not in the local repository".into()))].into();
        assert!(matches!(argo_state(Some(&a), Some(M), &unknown, merged), ArgoState::Waiting { unknowable: true, .. }));
    }

    #[test]
    fn the_source_hydrator_reports_the_dry_sha() {
        let hydrated = "2222222222222222222222222222222222222222";
        let mut a = app(hydrated, "Succeeded", "2026-01-01T10:01:00Z");
        a.hydrated = vec![Hydration { dry_sha: M.into(), hydrated_sha: Some(hydrated.into()), phase: None }];
        let lineage: Lineage = [(hydrated.to_string(), Relation::Unknown("not in the local repository".into()))].into();
        assert!(
            matches!(argo_state(Some(&a), Some(M), &lineage, parse_time("2026-01-01T10:00:00Z")), ArgoState::Synced { via } if via.contains("hydrated"))
        );
    }
}
