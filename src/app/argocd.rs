//! Argo CD config-management plugin, CMP v2.
//!
//! Argo runs these commands inside the sidecar, in the application's source
//! path, with the app's context in the environment. The contract that matters:
//!
//! - `generate` writes ONLY Kubernetes objects to stdout. Every failure returns
//!   `Err`, so main prints `error: …` on stderr (Argo shows it in the UI) and
//!   exits 2 with nothing on stdout. An empty stream is never a success: with
//!   auto-sync + prune, empty output deletes every resource of the app.
//! - Argo does not send announced defaults, so every default announced by
//!   `parameters` is applied here when a parameter is absent.
//! - `discover` prints the bundle path on a match and nothing otherwise, and
//!   exits 0 either way: Argo's `find.command` decides on non-empty stdout and
//!   treats a non-zero exit as a discovery *error*, not as "no match".

use std::path::{Component, Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde_json::{json, Value};

use crate::adapters::{bundle_files, local};
use crate::app::ctx::Ctx;
use crate::bundle::{self, Loaded};
use crate::checks::info;
use crate::checks::rollback::RollbackStatus;
use crate::checks::signature::Policy;
use crate::diag::Overrides;
use crate::diag::Severity;
use crate::manifests::{Renderer, TemplateSource};
use crate::options::ArgocdAction;
use crate::parse::cmp::PARAMS;
use crate::parse::cmp::{CmpEnv, Params, DEFAULT_BUNDLE};
use crate::report::escape::path_name;
use crate::report::{Report, StepReport};

/// Annotation with the Git revision Argo rendered from.
pub(crate) const ANNOTATION_GIT_REVISION: &str = "bundlegate.dev/git-revision";

pub(crate) fn run(ctx: &Ctx, cmd: ArgocdAction, ov: &Overrides) -> Result<Report> {
    let env = &ctx.env.argocd;
    match cmd {
        ArgocdAction::Generate { path } => {
            let source = source_dir(path)?;
            let g = generate(&source, env, ov, &ctx.signature)?;
            let mut r = Report::new("argocd generate");
            r.push(info::argocd_generate(&g.display, &g.kinds, &g.digest));
            // With the default `--format human` main prints exactly this: the
            // stream Argo parses. Nothing else may reach stdout.
            r.raw_human = Some(g.yaml);
            Ok(r)
        }
        ArgocdAction::Discover { path } => {
            let source = source_dir(path)?;
            let found = discover(&source, env)?;
            let mut r = Report::new("argocd discover");
            r.push(info::argocd_discover(&path_name(&source), found.as_deref()));
            r.raw_human = Some(found.map(|p| p + "\n").unwrap_or_default());
            Ok(r)
        }
        ArgocdAction::Parameters { path } => {
            let source = source_dir(path)?;
            let ann = announcement(&source, env);
            let mut r = Report::new("argocd parameters");
            r.push(info::argocd_parameters(&path_name(&source), PARAMS.len(), ann.clone()));
            r.raw_human = Some(serde_json::to_string(&ann)? + "\n");
            Ok(r)
        }
    }
}

fn source_dir(path: Option<PathBuf>) -> Result<PathBuf> {
    let p = match path {
        Some(p) => p,
        None => local::current_dir().context("the app's source path")?,
    };
    local::canonical(&p, "source path")
}

/// `rel` resolved inside `root`, refusing anything that leaves it, lexically
/// (`..`, absolute paths) or through symlinks. The repository under review
/// chooses these values, so a parameter must not read files outside it.
pub(crate) fn inside(root: &Path, rel: &str, what: &str) -> Result<PathBuf> {
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components().any(|c| matches!(c, Component::ParentDir | Component::RootDir | Component::Prefix(_)))
    {
        bail!("{what} `{rel}` must be a relative path inside the application's source path (no `..`, not absolute)");
    }
    let joined = root.join(p);
    let real = local::canonical(&joined, what)
        .with_context(|| format!("{what} `{rel}` not found in the application's source path"))?;
    if !real.starts_with(root) {
        bail!("{what} `{rel}` resolves outside the application's source path (symlink to {})", real.display());
    }
    Ok(real)
}

/// The repository root the CMP checked out: the source path minus
/// `ARGOCD_APP_SOURCE_PATH`'s components (the source path itself when Argo
/// does not say, or the two disagree).
pub(crate) fn repo_root(source: &Path, env: &CmpEnv) -> PathBuf {
    let Some(sp) = env.get("ARGOCD_APP_SOURCE_PATH") else { return source.to_path_buf() };
    let rel = Path::new(sp.trim_matches('/'));
    if rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return source.to_path_buf();
    }
    let n = rel.components().filter(|c| matches!(c, Component::Normal(_))).count();
    let mut root = source.to_path_buf();
    if !source.ends_with(rel) {
        return source.to_path_buf();
    }
    for _ in 0..n {
        if !root.pop() {
            return source.to_path_buf();
        }
    }
    root
}

/// The rollback target, resolved by the one loader lint, canary and revert
/// use, but inside the repository root Argo CD names: the CMP checkout has
/// no `.git` to find it by. A target leading outside it (by `..`, an absolute
/// path or a symlink) is refused even with lint off: reading it would let a
/// bundle under review make the plugin read any file of the sidecar.
fn rollback_in_repo(source: &Path, env: &CmpEnv, l: &Loaded) -> Result<RollbackStatus> {
    let status = bundle_files::rollback_status_within(&repo_root(source, env), l);
    if let RollbackStatus::Escapes { path, root } = &status {
        bail!("spec.rollback.bundle `{path}` resolves outside the repository ({root}); refused{}", root_hint(env));
    }
    Ok(status)
}

/// Without `ARGOCD_APP_SOURCE_PATH` the repository root is unknown and the
/// application's own folder is the boundary; say so, since a run by hand
/// (outside Argo CD) meets this first.
fn root_hint(env: &CmpEnv) -> &'static str {
    if env.get("ARGOCD_APP_SOURCE_PATH").is_none() {
        " (ARGOCD_APP_SOURCE_PATH is not set, so the repository is taken to be the application's source path; Argo CD sets it to the application's path in the repository)"
    } else {
        ""
    }
}

/// What `generate` produced.
pub(crate) struct Generated {
    pub yaml: String,
    pub kinds: Vec<String>,
    pub digest: String,
    pub display: String,
}

/// Path shown in messages: the repo-relative path when Argo tells us the
/// source path, so the UI message points at the file in Git.
fn display_path(env: &CmpEnv, rel: &str) -> String {
    match env.get("ARGOCD_APP_SOURCE_PATH").map(|s| s.trim_matches('/')).filter(|s| !s.is_empty() && *s != ".") {
        Some(sp) => format!("{sp}/{rel}"),
        None => rel.to_string(),
    }
}

/// `ov`: severity overrides from `--config` / `BUNDLEGATE_CONFIG` (the
/// sidecar's own file, never one from the repository being rendered), and
/// the signature policy from the same file.
pub(crate) fn generate(source: &Path, env: &CmpEnv, ov: &Overrides, policy: &Policy) -> Result<Generated> {
    let app = env.get("ARGOCD_APP_NAME").unwrap_or("(no ARGOCD_APP_NAME)");
    let at = match (env.get("ARGOCD_APP_SOURCE_REPO_URL"), env.get("ARGOCD_APP_REVISION")) {
        (Some(u), Some(r)) => format!(" from {u}@{r}"),
        (None, Some(r)) => format!(" at {r}"),
        _ => String::new(),
    };
    let ns = env.get("ARGOCD_APP_NAMESPACE").map(|n| format!("{n}/")).unwrap_or_default();
    tracing::info!("argocd generate for Application {ns}{app}{at} in {}", source.display());
    generate_inner(source, env, ov, policy)
        .with_context(|| format!("bundlegate: cannot generate manifests for Application {ns}{app}{at}"))
}

fn generate_inner(source: &Path, env: &CmpEnv, ov: &Overrides, policy: &Policy) -> Result<Generated> {
    let params = Params::from_env(env)?;
    let bundle_path = inside(source, &params.bundle, "bundle")?;
    if !local::is_file(&bundle_path) {
        bail!("bundle `{}` is not a file", params.bundle);
    }
    let display = display_path(env, &params.bundle);
    // Bounded before anything is read: a 200 MB file is refused from its size.
    let text =
        crate::adapters::bundle_files::read_bundle_text(&bundle_path).with_context(|| format!("reading {display}"))?;
    let mut l: Loaded = bundle::parse(&display, &bundle_path, text)?;
    // The platform's signature policy holds whatever the repository's
    // plugin parameters say (`lint: "false"` does not skip it).
    if policy.mode != crate::checks::signature::Mode::Off {
        let sigs = crate::adapters::bundle_files::read_signatures(&bundle_path);
        let step = crate::checks::signature::check(&l, policy, &sigs, ov);
        if let Some(step) = step.filter(|s| s.verdict != crate::report::Verdict::Pass) {
            bail!(
                "refusing to render {display}: the signature policy is not met ({}):\n{}",
                step.summary,
                error_lines(&step).join("\n")
            );
        }
    }

    // Overrides change what is deployed, not which release it is: the digest
    // stays the one computed from the bundle in Git.
    if let Some(n) = &params.namespace {
        l.bundle.metadata.namespace = n.clone();
    }
    if let Some(r) = params.replicas {
        l.bundle.spec.serving.replicas = r;
    }
    // What is rendered obeys the bundle's rules, overrides included.
    if let Err((field, why)) = bundle::validate::validate(&l.bundle) {
        bail!("{display}: {field} (after plugin parameters): {why}");
    }

    let rollback = rollback_in_repo(source, env, &l)?;

    if params.lint {
        // Lint sees the overridden values: it checks what will run.
        let step = crate::app::lint::lint_with(&l, ov, &rollback);
        for d in step.diagnostics.iter().filter(|d| d.severity == Severity::Warning) {
            tracing::warn!(
                "{}[{} {}]: {}",
                d.span.as_ref().map(|s| format!("{s}: ")).unwrap_or_default(),
                d.code,
                d.name,
                d.message
            );
        }
        let errors = error_lines(&step);
        if !errors.is_empty() {
            bail!(
                "refusing to render {display}: lint found {} error(s) (set plugin parameter lint=\"false\" to render anyway):\n{}",
                errors.len(),
                errors.join("\n")
            );
        }
    }

    let src = match &params.templates {
        Some(t) => {
            let dir = inside(source, t, "templates")?;
            if !local::is_dir(&dir) {
                bail!("templates `{t}` is not a folder");
            }
            // Each template file must also resolve inside the source path:
            // the folder being inside says nothing about a symlinked file.
            TemplateSource::Confined { dir, root: source.to_path_buf() }
        }
        None => TemplateSource::Builtin,
    };
    // The verifier image is the plugin operator's setting (the sidecar's own
    // environment), never the repository's.
    let mut renderer = Renderer::new(&src)?;
    if let Some(img) = env.get("BUNDLEGATE_VERIFIER_IMAGE").filter(|v| !v.trim().is_empty()) {
        renderer = renderer.with_verifier_image(img);
    }
    let trust = crate::app::signature::pod_trust(policy, &bundle_path)?;
    let rendered = renderer.render_with(&l, trust.as_ref())?;
    if rendered.verifier_missing {
        // Argo CD shows the plugin's stderr, not a report: the same finding as text.
        let d = crate::checks::render::verifier_not_rendered(
            &l.bundle,
            crate::checks::render::VerifierMissing::TemplateOmits(crate::bundle::pod_verifier::VERIFIER_CONTAINER),
        );
        tracing::warn!("{}: {} ({})", l.display, d.message, d.code.info().code);
    }
    let mut objects = rendered.objects;
    let revision = env.get("ARGOCD_APP_REVISION");
    let mut changed = false;
    for o in objects.iter_mut() {
        if let Some(n) = &params.namespace {
            // A user template may hard-code a namespace; the override wins
            // wherever an object is namespaced at all.
            if let Some(m) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                if m.get("namespace").is_some_and(|v| v.as_str() != Some(n)) {
                    m.insert("namespace".into(), Value::String(n.clone()));
                    changed = true;
                }
            }
        }
        if let Some(rev) = revision {
            changed |= annotate_revision(o, rev);
        }
    }
    // Renderer already refuses an empty stream; checked again here because an
    // empty success is the one output that deletes the app under prune.
    if objects.is_empty() {
        bail!("rendering {display} produced no Kubernetes objects");
    }
    // Re-serializing is a fifth of generate's time: reuse the renderer's
    // stream when nothing was touched (the common KServe case).
    let yaml = if changed {
        // The one writer, and the same read-back as render: a namespace
        // parameter such as `yes` or `2001-1-2` stays a string for Argo CD.
        let mut y = String::new();
        for o in &objects {
            y.push_str("---\n");
            y.push_str(&crate::manifests::to_yaml(o));
        }
        crate::manifests::parse_back(&y, &objects)
            .with_context(|| format!("the manifests for {display} do not read back as generated"))?;
        y
    } else {
        rendered.yaml
    };
    let kinds = objects.iter().filter_map(|o| o.get("kind").and_then(Value::as_str).map(String::from)).collect();
    Ok(Generated { yaml, kinds, digest: l.digest.clone(), display })
}

/// A step's errors, one line each, as the plugin's failure message lists them.
fn error_lines(step: &StepReport) -> Vec<String> {
    step.diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| {
            format!(
                "  {}error[{} {}]: {}",
                d.span.as_ref().map(|s| format!("{s}: ")).unwrap_or_default(),
                d.code,
                d.name,
                d.message
            )
        })
        .collect()
}

/// Put the Git revision on the object's own metadata, never on a pod
/// template, so a docs-only commit does not roll pods. KServe objects are
/// skipped: KServe copies InferenceService annotations into the predictor's
/// Deployment / Knative revision, so there it WOULD roll pods.
/// Returns whether the object changed.
fn annotate_revision(o: &mut Value, rev: &str) -> bool {
    let api = o.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api.starts_with("serving.kserve.io/") {
        return false;
    }
    let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) else { return false };
    let ann = meta.entry("annotations").or_insert_with(|| json!({}));
    if ann.is_null() {
        *ann = json!({});
    }
    match ann.as_object_mut() {
        Some(a) => {
            a.insert(ANNOTATION_GIT_REVISION.into(), Value::String(rev.to_string()));
            true
        }
        None => false,
    }
}

/// The bundle path (relative to the source path) when the source path holds
/// a release bundle. Only apiVersion/kind are checked: a broken bundle must
/// still match, so `generate` reports what is wrong instead of Argo falling
/// back to applying the bundle file as a plain manifest.
pub fn discover(source: &Path, env: &CmpEnv) -> Result<Option<String>> {
    // Discovery may run without the app's parameters; a bad value means "use
    // the default name", not a failed discovery.
    let rel = Params::from_env(env).map(|p| p.bundle).unwrap_or_else(|_| DEFAULT_BUNDLE.to_string());
    let Ok(path) = inside(source, &rel, "bundle") else { return Ok(None) };
    if !local::is_file(&path) {
        return Ok(None);
    }
    let head =
        crate::adapters::bundle_files::read_head(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(bundle::detect::is_bundle(Path::new(&rel), &head).then_some(rel))
}

#[cfg(test)]
fn looks_like_bundle(text: &str) -> bool {
    bundle::detect::is_bundle(Path::new(DEFAULT_BUNDLE), text.as_bytes())
}

/// `parameters.dynamic` output: Argo's ParameterAnnouncement list. Defaults
/// that come from the bundle are filled in when the bundle is readable, so the
/// UI shows what will actually be applied.
pub(crate) fn announcement(source: &Path, env: &CmpEnv) -> Value {
    let rel = Params::from_env(env).map(|p| p.bundle).unwrap_or_else(|_| DEFAULT_BUNDLE.to_string());
    let loaded = inside(source, &rel, "bundle").ok().and_then(|p| crate::adapters::bundle_files::load(&p).ok());
    let list: Vec<Value> = PARAMS
        .iter()
        .map(|s| {
            let default = match (s.name, &loaded) {
                ("bundle", _) => rel.clone(),
                ("namespace", Some(l)) => l.bundle.metadata.namespace.clone(),
                ("replicas", Some(l)) => l.bundle.spec.serving.replicas.to_string(),
                _ => s.default.to_string(),
            };
            s.announce(&default)
        })
        .collect();
    Value::Array(list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_stay_inside_the_source() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("app/tpl")).unwrap();
        let app = root.join("app");
        assert!(inside(&app, "tpl", "templates").is_ok());
        assert!(inside(&app, "../app/tpl", "templates").is_err());
        assert!(inside(&app, "/etc", "templates").is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&root, app.join("up")).unwrap();
            let e = inside(&app, "up", "templates").unwrap_err().to_string();
            assert!(e.contains("outside"), "{e}");
        }
    }

    #[test]
    fn revision_annotation_stays_off_pod_templates_and_kserve() {
        let mut dep = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"template": {"metadata": {"annotations": {"a": "b"}}}}});
        assert!(annotate_revision(&mut dep, "abc123"));
        assert_eq!(dep["metadata"]["annotations"][ANNOTATION_GIT_REVISION], "abc123");
        assert_eq!(dep["spec"]["template"]["metadata"]["annotations"], json!({"a": "b"}));
        let mut isvc = json!({"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "x", "annotations": {}}});
        assert!(!annotate_revision(&mut isvc, "abc123"));
        assert!(isvc["metadata"]["annotations"].get(ANNOTATION_GIT_REVISION).is_none());
    }

    #[test]
    fn discovery_checks_kind_not_just_the_file_name() {
        assert!(looks_like_bundle("apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata: {name: x}\n"));
        assert!(!looks_like_bundle("apiVersion: v1\nkind: ConfigMap\n"));
        // Broken YAML still matches so `generate` can report the error.
        assert!(looks_like_bundle("apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata: [\n"));
    }
}
