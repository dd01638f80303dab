//! The one rule for "is this file a release bundle?", shared by PR mode
//! (files a change touches, read from git), audit's tree walk and Argo CD
//! `discover`, so a bundle one of them accepts is never missed by another.
//!
//! A file is a bundle when its top-level `kind` is `ReleaseBundle` (with an
//! `apiVersion` under `bundlegate.dev/`, unless the file is named
//! `release.yaml|yml|json`), parsed as YAML (JSON included), or when it is
//! named `release.yaml|yml|json` and declares no other kind: a broken or
//! half-written bundle still counts, so its errors are reported instead of
//! the file being skipped. Only `.yaml`, `.yml` and `.json` files qualify,
//! and only the first [`MAX_SNIFF_BYTES`] are read.
//!
//! Symlinks are followed only while the target stays inside the repository
//! (or Argo CD source path); one that leaves it is refused with a message,
//! never read. Reading files and following links is done by
//! `adapters::bundle_files::check_file`, so this module stays pure.

use std::path::{Component, Path, PathBuf};

/// A bundle is a small hand-written file; sniffing more than this would let a
/// multi-GB file (an LFS mistake) exhaust memory.
pub(crate) const MAX_SNIFF_BYTES: usize = 4 << 20;

/// File names that are bundles unless their content says otherwise.
pub(crate) const BUNDLE_NAMES: [&str; 3] = ["release.yaml", "release.yml", "release.json"];

/// How many symlinks a path may go through (a loop ends here).
pub(crate) const MAX_LINK_HOPS: usize = 8;

fn file_name(path: &Path) -> &str {
    path.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// Named like a bundle by itself.
pub(crate) fn has_bundle_name(path: &Path) -> bool {
    BUNDLE_NAMES.contains(&file_name(path))
}

/// Could the file be a bundle at all (is it worth reading)?
pub(crate) fn is_candidate(path: &Path) -> bool {
    let n = file_name(path);
    has_bundle_name(path) || n.ends_with(".yaml") || n.ends_with(".yml") || n.ends_with(".json")
}

/// `(apiVersion, kind)` declared at the top level of the first document, as
/// far as they can be read.
fn declared(head: &str) -> (Option<String>, Option<String>) {
    // The one reader here too: an alias bomb in any `.yaml` of the tree must
    // not expand while deciding whether it is a bundle. Read only as far as
    // the two keys (a bundle opens with them): every shard of an audit
    // sniffs every file of the tree, and a whole parse of each was most of
    // a shard's fixed cost. A refused file is sniffed from its header lines,
    // so a hostile bundle is still detected and its loader reports what is
    // wrong.
    let top = crate::yaml_guard::top_level_scalars(head, &crate::yaml_guard::Limits::DEFAULT, ["apiVersion", "kind"]);
    match top {
        Some([api, kind]) => (api.map(|v| v.trim().to_string()), kind.map(|v| v.trim().to_string())),
        // Unparseable (a syntax error, or cut at the sniff limit): read the
        // unindented header lines, so the syntax error is reported by the
        // loader instead of the file being skipped.
        None => {
            let top = |key: &str| {
                head.lines().find_map(|l| {
                    let rest = l.strip_prefix(key).or_else(|| l.strip_prefix(&format!("\"{key}\"")))?;
                    let v = rest.trim_start().strip_prefix(':')?;
                    let v = v.split(" #").next().unwrap_or(v).trim().trim_end_matches(',');
                    Some(v.trim_matches(|c| c == '"' || c == '\'').to_string())
                })
            };
            (top("apiVersion"), top("kind"))
        }
    }
}

/// Is `path`, whose first bytes are `head`, a release bundle?
pub(crate) fn is_bundle(path: &Path, head: &[u8]) -> bool {
    if !is_candidate(path) {
        return false;
    }
    let head = &head[..head.len().min(MAX_SNIFF_BYTES)];
    let text = String::from_utf8_lossy(head);
    let (api, kind) = declared(&text);
    match kind.as_deref() {
        Some(k) if k == super::KIND => has_bundle_name(path) || api.is_some_and(|a| a.starts_with("bundlegate.dev/")),
        // Another kind (a ConfigMap named release.yaml) is not ours.
        Some(_) => false,
        None => has_bundle_name(path),
    }
}

/// Where a symlink stored in git at `link` (repository-relative) points, as
/// a repository-relative path; an error when the target leaves the
/// repository (absolute, or `..` above its root).
pub(crate) fn link_target_in_repo(link: &Path, target: &Path) -> Result<PathBuf, String> {
    if target.is_absolute() {
        return Err(format!(
            "{} is a symlink to the absolute path {}, outside the repository: refusing to follow it",
            link.display(),
            target.display()
        ));
    }
    let mut out: Vec<Component> = link.parent().map(|p| p.components().collect()).unwrap_or_default();
    for c in target.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if out.pop().is_none() {
                    return Err(format!(
                        "{} is a symlink to {}, outside the repository: refusing to follow it",
                        link.display(),
                        target.display()
                    ));
                }
            }
            Component::Normal(_) => out.push(c),
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!("{} is a symlink to {}: refusing to follow it", link.display(), target.display()))
            }
        }
    }
    Ok(out.iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(p: &str, t: &str) -> bool {
        is_bundle(Path::new(p), t.as_bytes())
    }

    #[test]
    fn one_rule_for_names_kinds_and_formats() {
        assert!(b("a/release.yaml", ""));
        assert!(b("a/release.yml", "x: 1"));
        assert!(b("a/release.json", "{}"));
        assert!(b("a/model.yaml", "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n"));
        assert!(b("a/model.yaml", "apiVersion: bundlegate.dev/v1\nkind:   ReleaseBundle   # the bundle\n"));
        assert!(b("a/model.json", r#"{"apiVersion": "bundlegate.dev/v1", "kind": "ReleaseBundle", "metadata": {}}"#));
        assert!(
            b("a/model.yaml", "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata: [\n"),
            "a broken bundle still counts"
        );
        assert!(b("a/model.yaml", "---\napiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n---\nkind: Other\n"));
        // Broken, with the header's values quoted either way.
        assert!(b("a/model.yaml", "apiVersion: 'bundlegate.dev/v1'\nkind: \"ReleaseBundle\"\nmetadata: [\n"));
        assert!(b("a/model.yaml", "\"apiVersion\": \"bundlegate.dev/v1\",\n\"kind\": 'ReleaseBundle',\n{\n"));
        // Nested `kind:` (a Kubernetes object inside) does not count.
        assert!(!b("a/model.yaml", "spec:\n  kind: ReleaseBundle\n"));
        assert!(!b("a/notes.md", "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n"));
        assert!(!b("a/deploy.yaml", "kind: Deployment\n"));
        assert!(!b("a/release.yaml", "apiVersion: v1\nkind: ConfigMap\n"), "content names another kind");
        assert!(
            !b("a/other.yaml", "apiVersion: example.com/v1\nkind: ReleaseBundle\n"),
            "someone else's ReleaseBundle"
        );
        // A hostile file is sniffed without expanding it, and still detected.
        let bomb = format!("apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\n{}", crate::fuzzing::alias_bomb(9, 10));
        let t0 = std::time::Instant::now();
        assert!(b("a/model.yaml", &bomb));
        assert!(b("a/model.yaml", "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nx: {a: 1, a: 2}\n"));
        assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn git_links_stay_inside_the_repository() {
        assert_eq!(
            link_target_in_repo(Path::new("svc/current/release.yaml"), Path::new("../v2/release.yaml")),
            Ok(PathBuf::from("svc/v2/release.yaml"))
        );
        assert!(link_target_in_repo(Path::new("svc/release.yaml"), Path::new("../../etc/passwd")).is_err());
        assert!(link_target_in_repo(Path::new("release.yaml"), Path::new("/etc/passwd")).is_err());
    }
}
