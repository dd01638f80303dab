//! What the commands that judge nothing report — `digest`, `codes`,
//! `explain`, `schema`, `publish` and the Argo CD plugin's answers: the summary says
//! what was printed and `data` carries it. Nothing here sets a verdict.

use serde_json::{json, Value};

use crate::bundle::Loaded;
use crate::diag::Code;
use crate::report::{Detail, StepReport, Table};

/// The release a report is about: `data` of `digest` and `lint`.
pub(crate) fn release_data(l: &Loaded) -> Value {
    json!({"releaseDigest": l.digest, "name": l.bundle.metadata.name, "version": l.bundle.metadata.version})
}

/// `digest`: the release digest as the summary.
pub(crate) fn digest(l: &Loaded) -> StepReport {
    let mut s = StepReport::new("digest", &l.display);
    s.summary = l.digest.clone();
    s.data = release_data(l);
    s
}

/// `codes`: every code, with the docs/diagnostics.md text as its detail.
pub(crate) fn codes() -> StepReport {
    let mut s = StepReport::new("codes", "bundlegate");
    s.summary = format!("{} diagnostic codes", Code::ALL.len());
    s.tables.push(Table {
        title: String::new(),
        columns: vec!["code".into(), "name".into(), "family".into(), "default".into()],
        rows: Code::ALL
            .iter()
            .map(|c| {
                let i = c.info();
                vec![i.code.into(), i.name.into(), i.family.into(), i.default_severity.to_string()]
            })
            .collect(),
    });
    s.details.push(Detail {
        title: "documentation".into(),
        lang: "markdown".into(),
        body: crate::diag::markdown_docs(),
    });
    s
}

/// `explain`: one code, with the tables its judgment reads (lint's task
/// table for the codes it drives).
pub(crate) fn explain(c: Code, tables: impl IntoIterator<Item = Table>) -> StepReport {
    let i = c.info();
    let mut s = StepReport::new("explain", i.code);
    s.summary = format!("{} `{}` ({}, default {}): {}", i.code, i.name, i.family, i.default_severity, i.why);
    s.tables.extend(tables);
    s
}

/// `schema`: the schema's value in `data`, its text (as `file` under
/// `schemas/` holds it) as the detail; `what` names the input it describes.
pub(crate) fn schema(file: &str, what: &str, value: Value, text: String) -> StepReport {
    let mut s = StepReport::new("schema", file);
    s.summary = format!("JSON Schema (draft-07) of {what}; published as schemas/{file}");
    s.data = value;
    s.details.push(Detail { title: format!("schemas/{file}"), lang: "json".into(), body: text });
    s
}

/// `argocd generate`: the kinds rendered for Argo CD.
pub(crate) fn argocd_generate(display: &str, kinds: &[String], digest: &str) -> StepReport {
    let mut s = StepReport::new("argocd-generate", display);
    s.summary = format!("{} object(s): {}", kinds.len(), kinds.join(", "));
    s.data = json!({"objects": kinds.len(), "kinds": kinds, "releaseDigest": digest});
    s
}

/// `argocd discover`: the bundle found in the source folder, if any.
pub(crate) fn argocd_discover(source: &str, found: Option<&str>) -> StepReport {
    let mut s = StepReport::new("argocd-discover", source);
    s.summary = match found {
        Some(p) => format!("release bundle at {p}"),
        None => "no release bundle".into(),
    };
    s.data = json!({"bundle": found});
    s
}

/// `argocd parameters`: the parameters announced to Argo CD.
pub(crate) fn argocd_parameters(source: &str, count: usize, announcement: Value) -> StepReport {
    let mut s = StepReport::new("argocd-parameters", source);
    s.summary = format!("{count} parameter(s)");
    s.data = announcement;
    s
}

/// `publish`: what was written where, the bundle's new release digest, and
/// a row per file whose role says when it was guessed from the name (for
/// review); `rewritten`: why the bundle was re-serialised whole, if it was.
pub(crate) fn published(
    display: &str,
    to: &str,
    arts: &[crate::bundle::Artifact],
    guessed: &dyn Fn(&str) -> bool,
    digest: &str,
    rewritten: Option<&str>,
) -> StepReport {
    use crate::bundle::roles::role_name;
    let mut s = StepReport::new("publish", display);
    s.summary = format!("published {} file(s) to {to}; bundle updated, release digest {digest}", arts.len());
    if let Some(why) = rewritten {
        s.summary
            .push_str(&format!("; the bundle was rewritten as a whole ({why}): comments and formatting were not kept"));
    }
    s.tables.push(Table {
        title: "published".into(),
        columns: vec!["path".into(), "size".into(), "sha256".into(), "role".into()],
        rows: arts
            .iter()
            .map(|a| {
                let role = role_name(a.role);
                vec![
                    a.path.clone(),
                    a.size.unwrap_or(0).to_string(),
                    a.sha256.clone().unwrap_or_default(),
                    if guessed(&a.path) { format!("{role} (guessed)") } else { role },
                ]
            })
            .collect(),
    });
    s.data = json!({"storageUri": to, "artifacts": arts, "releaseDigest": digest});
    s
}
