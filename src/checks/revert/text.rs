//! What a revert writes outside the report: its branch name, its commit
//! message, its PR title and body. Each value from the bundles goes through
//! the escaper of the outlet it lands in.

use std::path::Path;

use super::REVERT_MARKER;
use crate::bundle::Loaded;
use crate::report::{Report, StepReport, Verdict};

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
    format!(
        "bundlegate/revert-{}-{}-{}",
        clean(&l.bundle.metadata.name),
        clean(&l.bundle.metadata.version),
        branch_hash(rel, &l.digest, target_digest)
    )
}

/// The 12 hex digits that make a bot's branch one per bundle path, release
/// and action (a revert's target, a promotion's step): the sha256 of the
/// three, each NUL-terminated, so no two inputs share a hash input.
pub(crate) fn branch_hash(rel: &Path, digest: &str, action: &str) -> String {
    let mut id = rel.as_os_str().as_encoded_bytes().to_vec();
    for part in [b"\0".as_slice(), digest.as_bytes(), b"\0", action.as_bytes(), b"\0"] {
        id.extend_from_slice(part);
    }
    crate::util::sha256_hex(&id)[..12].to_string()
}

/// The revert commit's message. It is an outlet like the PR title: GitHub
/// shows it, and its marker line is what refuses a revert of a revert, so
/// every value from the bundles is one line with controls shown and links
/// and mentions broken (a rollback path holding a line break and a forged
/// marker would otherwise add a second marker line).
pub(crate) fn commit_message(l: &Loaded, prev: &Loaded, rollback: &str, rel: &Path) -> String {
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

/// The revert PR's title, through the title escaper.
pub(crate) fn pr_title(name: &str, version: &str, prev_version: &str) -> String {
    crate::report::escape::title(&format!("Revert {name} {version} → {prev_version} (bundlegate)"))
}

/// The PR body of a revert of `l` to `prev` at `rel`.
pub(crate) fn pr_body(
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
        let mut l = crate::bundle::example();
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

    /// The commit names the release, the target and the path it restores.
    #[test]
    fn the_revert_commit_message_names_both_releases_and_the_path() {
        let m = commit_message(
            &loaded("llm", "v2", "sha256:aa"),
            &loaded("llm", "v1", "sha256:bb"),
            "../v1/release.yaml",
            Path::new("m/v2/release.yaml"),
        );
        assert_eq!(
            m,
            format!("Revert llm v2 to v1\n\nRelease v2 (sha256:aa) failed its post-merge gates; this restores the verified\nprevious bundle ../v1/release.yaml (sha256:bb) at m/v2/release.yaml.\n\n{REVERT_MARKER} sha256:aa\n")
        );
    }

    #[test]
    fn the_pr_title_and_branch_read_as_the_release() {
        assert_eq!(pr_title("llm", "v2", "v1"), "Revert llm v2 → v1 (bundlegate)");
        let b = branch_name(&loaded("my llm", "..v2.", "sha256:aa"), Path::new("m/release.yaml"), "sha256:bb");
        assert!(b.starts_with("bundlegate/revert-my-llm-v2-"), "{b}");
        assert_eq!(b.len(), "bundlegate/revert-my-llm-v2-".len() + 12, "{b}");
    }

    /// The body quotes the evidence's failed steps only, or says there were none.
    #[test]
    fn the_pr_body_quotes_the_failed_steps_only() {
        let facts = RevertFacts {
            name: "llm",
            version: "v2",
            digest: "sha256:aa",
            prev_version: "v1",
            prev_digest: "sha256:bb",
            path: "m/release.yaml",
            branch: "bundlegate/revert-x",
            verify_summary: "3 objects verified",
        };
        let mut r = Report::new("watch");
        let mut failed = StepReport::new("rollout", "m");
        failed.verdict = Verdict::Fail;
        failed.summary = "pods crash".into();
        let mut passed = StepReport::new("argo", "m");
        passed.summary = "synced fine".into();
        r.push(passed.clone());
        r.push(failed);
        let body = revert_body(&facts, Some(&r));
        assert!(body.contains("pods crash") && !body.contains("synced fine"), "{body}");
        assert!(body.contains("verified** before this PR was opened: 3 objects verified"), "{body}");
        let mut ok = Report::new("watch");
        ok.push(passed);
        assert!(revert_body(&facts, Some(&ok)).contains("(watch, verdict PASS) has no failed step"));
        assert!(revert_body(&facts, None).contains("No evidence report was given"));
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
