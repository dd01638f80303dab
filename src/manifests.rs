//! Render a bundle into Kubernetes manifests with logic-less Handlebars
//! templates in strict mode.
//!
//! Safety: templates may come from the repository under review, so only the
//! built-in block helpers and our own `json` helper exist (no script helpers,
//! nothing loaded from the repo). Every `{{value}}` is escaped as a quoted JSON
//! string, which is also a valid YAML scalar, so no value can inject YAML;
//! `{{{json value}}}` inserts structured values as JSON flow (valid YAML).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _, Result};
use handlebars::template::{Parameter, Template, TemplateElement};
use handlebars::{Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderErrorReason};
use serde_json::{json, Value};

use crate::bundle::{self, Loaded, ServingFormat};
use crate::yaml_guard::{double_quoted, escape_unsafe, plain_reads_as_string, yaml11_non_string};

use crate::bundle::{ANNOTATION_DIGEST, ANNOTATION_VERSION};
pub const ANNOTATION_STORAGE: &str = "bundlegate.dev/storage-uri";

const BUILTIN: &[(&str, &str)] = &[
    ("kserve-modelspec", include_str!("../templates/kserve-modelspec.yaml.hbs")),
    ("kserve-custom", include_str!("../templates/kserve-custom.yaml.hbs")),
    ("deployment", include_str!("../templates/deployment.yaml.hbs")),
    ("kserve-llm", include_str!("../templates/kserve-llm.yaml.hbs")),
];

/// Where templates come from: the embedded set or a user folder holding
/// `<format>.yaml.hbs` files.
#[derive(Debug, Clone, Default)]
pub(crate) enum TemplateSource {
    #[default]
    Builtin,
    /// Every template file must resolve inside this folder.
    Dir(PathBuf),
    /// Templates in `dir`, each file resolving inside `root` (the Argo CD
    /// app's source path: a symlink leading out of it is refused).
    Confined { dir: PathBuf, root: PathBuf },
}

pub(crate) struct Renderer {
    hb: Arc<Handlebars<'static>>,
    /// Image of the in-pod file verifier (`verify-files`); a render input.
    verifier_image: String,
}

// What the in-pod verifier is (names, paths, requests, which pods can carry
// it) is a property of the bundle, shared with lint and preflight.
use crate::bundle::pod_verifier::*;

/// The verifier image by default: this release's own image (the packaging
/// workflow publishes it), so the verifier and the renderer agree on the
/// artifact-list format.
pub(crate) const DEFAULT_VERIFIER_IMAGE: &str = concat!("ghcr.io/bundlegate/bundlegate:", env!("CARGO_PKG_VERSION"));

/// Limits that keep a template from the repository under review from
/// hanging or aborting the process (handlebars has no recursion limit of its
/// own: a self-including partial overflows the stack).
pub(crate) const MAX_PARTIAL_DEPTH: usize = 16;
/// Partial expansions counted with multiplicity (a partial used twice by a
/// partial used twice... grows exponentially).
pub(crate) const MAX_PARTIAL_EXPANSIONS: u64 = 10_000;
/// Nesting of blocks (`#if`, `#each`...) inside one template: bounds stack use.
pub(crate) const MAX_BLOCK_DEPTH: usize = 32;
/// Rendered text per bundle.
pub(crate) const MAX_OUTPUT_BYTES: usize = 8 << 20;
/// Wall-clock budget for one render (nested `#each` loops can still multiply).
pub(crate) const RENDER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

fn json_helper(h: &Helper, _: &Handlebars, _: &Context, _: &mut RenderContext, out: &mut dyn Output) -> HelperResult {
    let p = h.param(0).ok_or(RenderErrorReason::ParamNotFoundForIndex("json", 0))?;
    if p.is_value_missing() {
        return Err(RenderErrorReason::MissingVariable(p.relative_path().cloned()).into());
    }
    out.write(&escape_unsafe(serde_json::to_string(p.value()).map_err(|e| RenderErrorReason::Other(e.to_string()))?))?;
    Ok(())
}

impl Renderer {
    pub(crate) fn new(src: &TemplateSource) -> Result<Renderer> {
        let mut hb = Handlebars::new();
        hb.set_strict_mode(true);
        hb.register_escape_fn(double_quoted);
        hb.register_helper("json", Box::new(json_helper));
        match src {
            TemplateSource::Builtin => {
                for (name, text) in BUILTIN {
                    hb.register_template_string(name, *text).with_context(|| format!("built-in template {name}"))?;
                }
            }
            TemplateSource::Dir(dir) | TemplateSource::Confined { dir, .. } => {
                let root = match src {
                    TemplateSource::Confined { root, .. } => Some(root.as_path()),
                    _ => None,
                };
                let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
                for (name, p, text) in crate::adapters::bundle_files::read_templates(dir, root, &names)? {
                    hb.register_template_string(&name, text).with_context(|| format!("template {}", p.display()))?;
                }
            }
        }
        check_bounded(hb.get_templates())?;
        Ok(Renderer { hb: Arc::new(hb), verifier_image: DEFAULT_VERIFIER_IMAGE.to_string() })
    }

    /// The in-pod verifier's image (default [`DEFAULT_VERIFIER_IMAGE`]).
    pub(crate) fn with_verifier_image(mut self, image: impl Into<String>) -> Self {
        self.verifier_image = image.into();
        self
    }

    /// Render to a normalized multi-document YAML stream.
    pub(crate) fn render(&self, l: &Loaded) -> Result<Rendered> {
        self.render_with(l, None)
    }

    /// [`Self::render`], the verifier checking the release's signatures
    /// first under the platform's trust (`signature.podTrustConfigMap`).
    pub(crate) fn render_with(&self, l: &Loaded, trust: Option<&PodTrust>) -> Result<Rendered> {
        let fmt = l.bundle.spec.serving.format.as_str();
        if !self.hb.has_template(fmt) {
            bail!("no template for serving format `{fmt}` (expected `{fmt}.yaml.hbs`)");
        }
        let mut ctx = context(l)?;
        let verifier = verifier(l, &self.verifier_image, trust);
        if let (Some(v), Some(obj)) = (&verifier, ctx.as_object_mut()) {
            obj.insert("verifier".into(), v.container.clone());
            if let Some(Value::Array(vols)) = obj.get_mut("volumes") {
                vols.extend(v.volumes.iter().cloned());
            }
        }
        let text = self
            .render_bounded(fmt, ctx.clone())
            .with_context(|| format!("rendering template `{fmt}` for {}", l.display))?;
        let docs =
            parse_stream(&text).with_context(|| format!("template `{fmt}` produced invalid YAML for {}", l.display))?;
        if docs.is_empty() {
            bail!("template `{fmt}` produced no Kubernetes objects for {}", l.display);
        }
        if let Some(dup) = duplicate_names(&docs) {
            bail!("template `{fmt}` for {}: {dup}; Kubernetes merges these lists by that key, so one entry would silently replace the other", l.display);
        }
        if let Some(why) = shadowed_model_folder(&docs, l.bundle.spec.serving.format) {
            bail!(
                "template `{fmt}` for {}: {why}; the server would read other files than the verified ones",
                l.display
            );
        }
        check_against_bundle(&docs, &ctx).with_context(|| {
            format!("template `{fmt}` for {}: the rendered objects do not carry the bundle's values", l.display)
        })?;
        let mut yaml = String::new();
        for d in &docs {
            yaml.push_str("---\n");
            yaml.push_str(&to_yaml(d));
        }
        // What a Kubernetes client reads back must be exactly what was
        // rendered, under YAML 1.2 and 1.1 rules alike.
        parse_back(&yaml, &docs)
            .with_context(|| format!("rendered manifests for {} do not read back as rendered", l.display))?;
        // A template (a user's, say) that leaves the verifier out must not
        // look like protection: say so instead of skipping silently.
        let verifier_missing = verifier.is_some() && !all_pods_carry_verifier(&docs);
        Ok(Rendered { objects: docs, yaml, verifier_missing })
    }
}

impl Renderer {
    /// Render on a worker thread with an output cap and a deadline. On a
    /// timeout the worker is abandoned (it holds only its own copies) and the
    /// command fails; the process exits soon after.
    fn render_bounded(&self, name: &str, ctx: Value) -> Result<String> {
        let hb = Arc::clone(&self.hb);
        let owned = name.to_string();
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("render".into())
            .stack_size(8 << 20)
            .spawn(move || {
                let mut w = CappedWriter { buf: Vec::new(), cap: MAX_OUTPUT_BYTES, over: false };
                let r = hb.render_to_write(&owned, &ctx, &mut w);
                let _ = tx.send((r.map(|_| std::mem::take(&mut w.buf)), w.over));
            })
            .context("starting the render thread")?;
        match rx.recv_timeout(RENDER_TIMEOUT) {
            Ok((_, true)) => bail!("template `{name}` produced more than {MAX_OUTPUT_BYTES} bytes; refused"),
            Ok((Ok(buf), false)) => {
                String::from_utf8(buf).map_err(|_| anyhow!("template `{name}` produced invalid UTF-8"))
            }
            Ok((Err(e), false)) => Err(e.into()),
            Err(_) => bail!("template `{name}` did not finish rendering within {}s; refused", RENDER_TIMEOUT.as_secs()),
        }
    }
}

struct CappedWriter {
    buf: Vec<u8>,
    cap: usize,
    over: bool,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.buf.len().saturating_add(b.len()) > self.cap {
            self.over = true;
            return Err(std::io::Error::other("rendered output exceeds the size limit"));
        }
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Partials each template calls, with multiplicity, plus the inline partials
/// it defines. Dynamic partial names (`{{> (lookup …)}}`) cannot be bounded
/// statically and are refused.
fn partial_calls(
    t: &Template,
    tname: &str,
    depth: usize,
    calls: &mut Vec<String>,
    inline: &mut BTreeMap<String, Vec<String>>,
) -> Result<()> {
    if depth > MAX_BLOCK_DEPTH {
        bail!("template `{tname}` nests blocks more than {MAX_BLOCK_DEPTH} deep; refused");
    }
    for e in &t.elements {
        match e {
            TemplateElement::HelperBlock(h) => {
                for sub in [&h.template, &h.inverse].into_iter().flatten() {
                    partial_calls(sub, tname, depth + 1, calls, inline)?;
                }
            }
            TemplateElement::DecoratorBlock(d) | TemplateElement::DecoratorExpression(d) => {
                let is_inline = d.name.as_name() == Some("inline");
                match (&d.template, is_inline) {
                    (Some(body), true) => {
                        let pname = match d.params.first() {
                            Some(Parameter::Literal(Value::String(n))) => n.clone(),
                            Some(p) => p.as_name().map(String::from).ok_or_else(|| {
                                anyhow!("template `{tname}`: an inline partial has a computed name; refused")
                            })?,
                            None => bail!("template `{tname}`: an inline partial has no name"),
                        };
                        let mut sub = Vec::new();
                        partial_calls(body, tname, depth + 1, &mut sub, inline)?;
                        inline.entry(pname).or_default().extend(sub);
                    }
                    (Some(body), false) => partial_calls(body, tname, depth + 1, calls, inline)?,
                    (None, _) => {}
                }
            }
            TemplateElement::PartialExpression(d) | TemplateElement::PartialBlock(d) => {
                // Handlebars' grammar names a partial by a name, a path or a
                // subexpression, never a literal; what it cannot name
                // statically is refused.
                let pname = match &d.name {
                    Parameter::Name(_) | Parameter::Path(_) => d.name.as_name().unwrap_or_default().to_string(),
                    _ => bail!(
                        "template `{tname}` includes a partial with a computed name; refused (name partials literally)"
                    ),
                };
                // `@partial-block` is the caller's block body, already counted at the caller.
                if pname != "@partial-block" {
                    calls.push(pname);
                }
                if let Some(body) = &d.template {
                    partial_calls(body, tname, depth + 1, calls, inline)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuse template sets whose partials recurse, nest too deep or expand too
/// much, naming the template and the chain.
fn check_bounded(templates: &std::collections::HashMap<String, Template>) -> Result<()> {
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut inline: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, t) in templates {
        let mut calls = Vec::new();
        partial_calls(t, name, 0, &mut calls, &mut inline)?;
        graph.entry(name.clone()).or_default().extend(calls);
    }
    // Inline partials are scoped to their template at run time; merging them
    // by name over-approximates, which can only refuse more, never less.
    for (n, c) in inline {
        graph.entry(n).or_default().extend(c);
    }
    let mut done: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    let names: Vec<String> = templates.keys().cloned().collect();
    for n in names {
        let mut stack = Vec::new();
        expansions(&graph, &n, &mut stack, &mut done)?;
    }
    Ok(())
}

/// Renders (with multiplicity) and the longest chain of partials from
/// `name` down, itself included; memoized in `done`, so a partial reached
/// again is not walked again. The chain's length is memoized with the count:
/// a partial first walked from a shallow root must still count its depth
/// when reached from a deeper one (the visiting order is a hash map's).
fn expansions(
    graph: &BTreeMap<String, Vec<String>>,
    name: &str,
    stack: &mut Vec<String>,
    done: &mut BTreeMap<String, (u64, usize)>,
) -> Result<(u64, usize)> {
    let root = stack.first().cloned().unwrap_or_else(|| name.to_string());
    let too_deep = |stack: &[String]| {
        anyhow!(
            "template `{root}`: partials nest more than {MAX_PARTIAL_DEPTH} deep ({} → …); refused",
            stack.join(" → ")
        )
    };
    if let Some(c) = done.get(name) {
        if stack.len() + c.1 > MAX_PARTIAL_DEPTH {
            return Err(too_deep(stack));
        }
        return Ok(*c);
    }
    if stack.iter().any(|s| s == name) {
        stack.push(name.to_string());
        bail!(
            "template `{root}`: partial `{name}` includes itself ({}); recursive templates are refused",
            stack.join(" → ")
        );
    }
    if stack.len() >= MAX_PARTIAL_DEPTH {
        return Err(too_deep(stack));
    }
    stack.push(name.to_string());
    let (mut total, mut height) = (1u64, 1usize);
    let callees: BTreeSet<&String> = graph.get(name).map(|v| v.iter().collect()).unwrap_or_default();
    for callee in callees {
        let times = graph.get(name).map(|v| v.iter().filter(|c| *c == callee).count() as u64).unwrap_or(0);
        let (each, below) = expansions(graph, callee, stack, done)?;
        total = total.saturating_add(each.saturating_mul(times));
        height = height.max(below + 1);
        if total > MAX_PARTIAL_EXPANSIONS {
            bail!("template `{root}`: partial `{name}` expands to more than {MAX_PARTIAL_EXPANSIONS} partial renders; refused");
        }
    }
    stack.pop();
    done.insert(name.to_string(), (total, height));
    Ok((total, height))
}

pub(crate) struct Rendered {
    pub objects: Vec<Value>,
    pub yaml: String,
    /// The bundle asks for the in-pod verifier but the template did not put
    /// it in any pod template.
    pub verifier_missing: bool,
}

/// The verifier's container, and the volumes it needs declared in the pod.
pub(crate) struct Verifier {
    pub container: Value,
    pub volumes: Vec<Value>,
}

/// The platform's trust for the in-pod signature check: its ConfigMap of
/// public keys, and the release's signatures (the env var's JSON, from
/// [`crate::checks::signature::pod_env`]; `None`: unsigned, which the pod
/// then refuses).
pub(crate) struct PodTrust {
    pub config_map: String,
    pub signatures: Option<String>,
}

/// The in-pod verifier for this bundle: a native sidecar (an init container
/// with `restartPolicy: Always`) that waits for the files, hashes them
/// against the list rendered from git, and gates the pod's readiness. See
/// docs/verify-on-start.md for why this shape works with KServe's injection.
pub(crate) fn verifier(l: &Loaded, image: &str, trust: Option<&PodTrust>) -> Option<Verifier> {
    let b = &l.bundle;
    let s = &b.spec.serving;
    if !renders_verifier(b) {
        return None;
    }
    let (dir, mount, volume) = match s.format {
        ServingFormat::Deployment => {
            let dir = s.model_dir.clone()?;
            let v = model_volume(s, &dir)?;
            (dir, json!({"name": v.name, "mountPath": v.mount_path, "readOnly": true}), None)
        }
        ServingFormat::KserveModelspec | ServingFormat::KserveCustom | ServingFormat::KserveLlm => (
            KSERVE_MODEL_DIR.to_string(),
            json!({"name": KSERVE_MODEL_VOLUME, "mountPath": KSERVE_MODEL_DIR, "readOnly": true}),
            Some(json!({"name": KSERVE_MODEL_VOLUME, "emptyDir": {}})),
        ),
    };
    let list = artifact_list(b, &l.digest).to_string();
    // Files may still be downloading: wait as long as the rollout itself may
    // take before giving up (the Deployment's progress deadline).
    let wait = format!("{}s", s.rollout.progress_deadline_seconds.max(60));
    let mut container = json!({
        "name": VERIFIER_CONTAINER,
        "image": image,
        "restartPolicy": "Always",
        "args": ["verify-files", "--manifest-env", VERIFIER_ENV, "--root", dir, "--wait", wait, "--stay", "--marker", VERIFIER_MARKER, "--termination-log", "/dev/termination-log"],
        "env": [{"name": VERIFIER_ENV, "value": list}],
        "volumeMounts": [mount],
        "readinessProbe": {
            "exec": {"command": ["/usr/local/bin/bundlegate", "verify-files", "--manifest-env", VERIFIER_ENV, "--ready", "--marker", VERIFIER_MARKER]},
            "periodSeconds": 5,
            "failureThreshold": 1
        },
        // Peak RSS is ~16 MiB whatever the model size (1 MiB buffer per
        // thread); hashing bursts on idle cores without a CPU limit.
        "resources": {"requests": {"cpu": VERIFIER_CPU_REQUEST, "memory": VERIFIER_MEMORY}, "limits": {"memory": VERIFIER_MEMORY}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
        "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}
    });
    let mut volumes: Vec<Value> = volume.into_iter().collect();
    if let Some(t) = trust {
        let push = |c: &mut Value, key: &str, v: Value| {
            if let Some(Value::Array(a)) = c.get_mut(key) {
                a.push(v);
            }
        };
        push(&mut container, "args", json!("--trust"));
        push(&mut container, "args", json!(TRUST_DIR));
        if let Some(sigs) = &t.signatures {
            push(&mut container, "env", json!({"name": SIGNATURE_ENV, "value": sigs}));
        }
        push(&mut container, "volumeMounts", json!({"name": TRUST_VOLUME, "mountPath": TRUST_DIR, "readOnly": true}));
        volumes.push(json!({"name": TRUST_VOLUME, "configMap": {"name": t.config_map}}));
    }
    Some(Verifier { container, volumes })
}

/// The JSON the verifier reads from [`VERIFIER_ENV`]: what git pins, never
/// what the store says.
pub(crate) fn artifact_list(b: &bundle::ReleaseBundle, digest: &str) -> Value {
    json!({
        "releaseDigest": digest,
        "mode": b.spec.serving.verify_on_start.as_str(),
        "artifacts": b.spec.model.artifacts.iter().map(|a| json!({"path": a.path, "sha256": a.sha256, "size": a.size})).collect::<Vec<_>>(),
    })
}

/// The pod specs an object holds: a Deployment's `spec.template.spec`, an
/// InferenceService's predictor, and every pool of an LLMInferenceService
/// (`spec.template`, `spec.worker`, `spec.prefill.template`,
/// `spec.prefill.worker`: each becomes pods of its own).
pub(crate) fn pod_specs(o: &Value) -> Vec<(&'static str, &Value)> {
    let paths: &[&'static str] = match o.get("kind").and_then(Value::as_str) {
        Some("LLMInferenceService") => {
            &["/spec/template", "/spec/worker", "/spec/prefill/template", "/spec/prefill/worker"]
        }
        Some("InferenceService") => &["/spec/predictor"],
        _ => &["/spec/template/spec"],
    };
    paths.iter().filter_map(|p| o.pointer(p).map(|v| (*p, v))).collect()
}

/// Does this pod spec run the verifier?
fn spec_carries_verifier(spec: &Value) -> bool {
    spec.get("initContainers")
        .and_then(Value::as_array)
        .is_some_and(|ics| ics.iter().any(|c| c.get("name").and_then(Value::as_str) == Some(VERIFIER_CONTAINER)))
}

/// Some object has pods, and every pod spec of every object runs the
/// verifier: one pool without it (an LLMInferenceService's prefill pool, a
/// second Deployment) would serve unchecked files.
fn all_pods_carry_verifier(docs: &[Value]) -> bool {
    let specs: Vec<&Value> = docs.iter().flat_map(|d| pod_specs(d).into_iter().map(|(_, s)| s)).collect();
    !specs.is_empty() && specs.into_iter().all(spec_carries_verifier)
}

/// The rendered objects, as read back, against the values the bundle gave
/// the template: wherever the output carries one of them (the object's name
/// and namespace, labels, annotations, replicas, a container's image, args,
/// env and resources, the model's storageUri, the verifier container), it is
/// that value with that type. A template that writes a value so that it
/// reads as something else (`{{{value}}}` of `1.10`, of `a #b`) fails here,
/// naming the field, instead of deploying what nobody reviewed.
pub(crate) fn check_against_bundle(docs: &[Value], ctx: &Value) -> Result<()> {
    fn same(at: &str, got: &Value, want: &Value) -> Result<()> {
        if got != want {
            bail!("`{at}` reads back as {got}, but the bundle gives {want}");
        }
        Ok(())
    }
    fn keyed(at: &str, got: &Value, want: &Value) -> Result<()> {
        for (k, w) in want.as_object().into_iter().flatten() {
            if let Some(g) = got.get(k) {
                same(&format!("{at}.{k}"), g, w)?;
            }
        }
        Ok(())
    }
    fn container(at: &str, c: &Value, ctx: &Value) -> Result<()> {
        if c.get("name").and_then(Value::as_str) == Some(VERIFIER_CONTAINER) {
            return same(at, c, &ctx["verifier"]);
        }
        for f in ["image", "args", "storageUri"] {
            if let Some(g) = c.get(f) {
                same(&format!("{at}.{f}"), g, &ctx[if f == "storageUri" { "storageUri" } else { f }])?;
            }
        }
        for e in c.get("env").and_then(Value::as_array).into_iter().flatten() {
            let name = e.get("name").and_then(Value::as_str).unwrap_or("?");
            if let Some(w) = ctx["env"].as_array().into_iter().flatten().find(|w| w["name"] == name) {
                same(&format!("{at}.env[{name}]"), e, w)?;
            }
        }
        for part in ["requests", "limits"] {
            if let Some(g) = c.pointer(&format!("/resources/{part}")) {
                keyed(&format!("{at}.resources.{part}"), g, &ctx["resources"][part])?;
            }
        }
        Ok(())
    }
    fn walk(v: &Value, at: &str, ctx: &Value) -> Result<()> {
        let Value::Object(m) = v else {
            if let Value::Array(a) = v {
                for (i, x) in a.iter().enumerate() {
                    walk(x, &format!("{at}[{i}]"), ctx)?;
                }
            }
            return Ok(());
        };
        for (k, x) in m {
            let here = format!("{at}.{k}");
            match (k.as_str(), x) {
                ("labels" | "annotations", _) => keyed(&here, x, &ctx[k.as_str()])?,
                ("containers" | "initContainers", Value::Array(cs)) => {
                    for (i, c) in cs.iter().enumerate() {
                        container(&format!("{here}[{i}]"), c, ctx)?;
                    }
                }
                // KServe's ModelSpec is the server container.
                ("model", Value::Object(_)) if x.get("modelFormat").is_some() => container(&here, x, ctx)?,
                // An LLMInferenceService's model: its source is `uri`.
                ("model", Value::Object(_)) if x.get("uri").is_some() => {
                    same(&format!("{here}.uri"), &x["uri"], &ctx["storageUri"])?;
                }
                // A prefill pool's or a scheduler's replicas are not the bundle's.
                ("replicas", _) if at.ends_with(".prefill") || at.ends_with(".scheduler") => {}
                ("replicas" | "minReplicas" | "maxReplicas", _) => same(&here, x, &ctx["replicas"])?,
                _ => {}
            }
            walk(x, &here, ctx)?;
        }
        Ok(())
    }
    for (i, d) in docs.iter().enumerate() {
        let at = format!("document {}", i + 1);
        if let Some(ns) = d.pointer("/metadata/namespace") {
            same(&format!("{at}.metadata.namespace"), ns, &ctx["namespace"])?;
        }
        if matches!(
            d.get("kind").and_then(Value::as_str),
            Some("Deployment" | "InferenceService" | "LLMInferenceService")
        ) {
            same(&format!("{at}.metadata.name"), &d["metadata"]["name"], &ctx["name"])?;
        }
        walk(d, &at, ctx)?;
    }
    Ok(())
}

/// A list Kubernetes merges by a key (containers, init containers, env,
/// volumes and image pull secrets by `name`, a container's mounts by
/// `mountPath`, devices by `devicePath`, ports by `containerPort`) that
/// holds a key twice, anywhere in the rendered objects: the later entry
/// would win in the pod, or the pod would be refused.
pub(crate) fn duplicate_names(docs: &[Value]) -> Option<String> {
    const MERGED: &[(&str, &str)] = &[
        ("containers", "name"),
        ("initContainers", "name"),
        ("ephemeralContainers", "name"),
        ("env", "name"),
        ("volumes", "name"),
        ("imagePullSecrets", "name"),
        ("volumeMounts", "mountPath"),
        ("volumeDevices", "devicePath"),
        ("ports", "containerPort"),
    ];
    fn walk(v: &Value, path: &str, out: &mut Option<String>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    let p = format!("{path}.{k}");
                    if let (Some((_, key)), Value::Array(items)) = (MERGED.iter().find(|(list, _)| list == k), x) {
                        let mut seen = std::collections::HashSet::new();
                        for n in items.iter().filter_map(|it| it.get(*key)) {
                            let n = n.as_str().map(str::to_string).unwrap_or_else(|| n.to_string());
                            if !seen.insert(n.clone()) && out.is_none() {
                                *out =
                                    Some(format!("`{n}` appears twice in {} (its `{key}`)", p.trim_start_matches('.')));
                            }
                        }
                    }
                    walk(x, &p, out);
                }
            }
            Value::Array(a) => a.iter().enumerate().for_each(|(i, x)| walk(x, &format!("{path}[{i}]"), out)),
            _ => {}
        }
    }
    let mut out = None;
    for (i, d) in docs.iter().enumerate() {
        walk(d, &format!("document {}", i + 1), &mut out);
    }
    out
}

/// A KServe server container (or ModelSpec) mounting something at or under
/// the model folder the storage initializer fills and the verifier checks.
fn shadowed_model_folder(docs: &[Value], format: ServingFormat) -> Option<String> {
    let kserve =
        |d: &Value| matches!(d.get("kind").and_then(Value::as_str), Some("InferenceService" | "LLMInferenceService"));
    for (i, d) in docs.iter().enumerate().filter(|(_, d)| kserve(d)) {
        for (_, p) in pod_specs(d) {
            let servers = p
                .get("containers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .chain(p.get("model").cloned());
            for c in servers {
                for m in c.get("volumeMounts").and_then(Value::as_array).into_iter().flatten() {
                    let path = m.get("mountPath").and_then(Value::as_str).unwrap_or("");
                    if let Some(why) = crate::bundle::reserved::mount_owner(format, path) {
                        return Some(format!("document {}: a server volume is mounted at `{path}`, {why}", i + 1));
                    }
                }
            }
        }
    }
    None
}

/// The one YAML writer for what bundlegate emits (render, `argocd
/// generate`, the PR diff): block style, a string plain only when every
/// YAML 1.1 and 1.2 reader reads it back as that same string, else
/// double-quoted (JSON's escapes, plus the line breaks YAML 1.1 readers
/// would fold). [`parse_back`] holds it to that.
pub(crate) fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match scalar_text(v) {
        Some(s) => {
            out.push_str(&s);
            out.push('\n');
        }
        None => emit_node(v, 0, &mut out),
    }
    out
}

/// Plain only when no reader can take the text for anything else: it starts
/// with a letter or `/` (every number, date, `.inf`, `~` and indicator
/// starts otherwise), holds only `[A-Za-z0-9_./@+=-]`, is none of the
/// boolean and null words in any case, and both the YAML 1.2 reader and the
/// YAML 1.1 rules read it as this string. Anything else is double-quoted:
/// JSON's escapes, plus the characters YAML 1.1 readers break lines at and
/// the bidirectional controls that reorder a reviewer's view.
fn quote(s: &str) -> String {
    const WORDS: &[&str] = &["y", "n", "yes", "no", "on", "off", "true", "false", "null"];
    let plain_char = |c: char| c.is_ascii_alphanumeric() || "_./@+=-".contains(c);
    let first_ok = s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/');
    let word = WORDS.iter().any(|w| w.eq_ignore_ascii_case(s));
    if first_ok && !word && s.chars().all(plain_char) && plain_reads_as_string(s) {
        return s.to_string();
    }
    double_quoted(s)
}

/// A node written on one line, or None for a non-empty mapping or sequence.
fn scalar_text(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quote(s),
        Value::Array(a) if a.is_empty() => "[]".into(),
        Value::Object(m) if m.is_empty() => "{}".into(),
        _ => return None,
    })
}

fn emit_node(v: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                out.push_str(&format!("{pad}{}:", quote(k)));
                match scalar_text(x) {
                    Some(t) => out.push_str(&format!(" {t}\n")),
                    None => {
                        out.push('\n');
                        emit_node(x, indent + 2, out);
                    }
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                match scalar_text(x) {
                    Some(t) => out.push_str(&format!("{pad}- {t}\n")),
                    None => {
                        // The item's block at indent+2, its first line led by `- `.
                        let mut inner = String::new();
                        emit_node(x, indent + 2, &mut inner);
                        out.push_str(&pad);
                        out.push_str("- ");
                        out.push_str(&inner[indent + 2..]);
                    }
                }
            }
        }
        other => {
            out.push_str(&pad);
            out.push_str(&scalar_text(other).unwrap_or_default());
            out.push('\n');
        }
    }
}

/// Parse `yaml` (what is written out) back as a Kubernetes client would and
/// require exactly `docs`: the same values and types under YAML 1.2
/// (serde_yaml_ng), and no plain scalar that YAML 1.1 would read as other
/// than the string it is.
pub(crate) fn parse_back(yaml: &str, docs: &[Value]) -> Result<()> {
    let mut back = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(yaml) {
        back.push(<Value as serde::Deserialize>::deserialize(doc)?);
    }
    if back != docs {
        let i = back.iter().zip(docs).position(|(a, b)| a != b).unwrap_or(back.len().min(docs.len()));
        bail!("document {} reads back differently under YAML 1.2", i + 1);
    }
    if let Some((line, v)) = yaml11_misreads(yaml)?.into_iter().next() {
        bail!("line {line}: the string `{v}` is written unquoted, and a YAML 1.1 reader (a Kubernetes client) would read it as a boolean, null, number or timestamp");
    }
    Ok(())
}

/// The plain scalars of `yaml`, with their lines, that YAML 1.2 reads as
/// strings but a YAML 1.1 reader (a Kubernetes client, Argo CD) would read
/// as a boolean, null, number or timestamp. The one scan: `parse_back` and
/// the tests of the writer use it.
pub fn yaml11_misreads(yaml: &str) -> Result<Vec<(usize, String)>> {
    use yaml_rust2::parser::{Event, Parser};
    use yaml_rust2::scanner::TScalarStyle;
    let mut p = Parser::new_from_str(yaml);
    let mut out = Vec::new();
    loop {
        let (ev, mark) = p.next_token().map_err(|e| anyhow!("rendered YAML does not parse: {e}"))?;
        match ev {
            Event::StreamEnd => return Ok(out),
            Event::Scalar(v, TScalarStyle::Plain, _, _)
                if matches!(yaml_rust2::Yaml::from_str(&v), yaml_rust2::Yaml::String(_)) && yaml11_non_string(&v) =>
            {
                out.push((mark.line(), v))
            }
            _ => {}
        }
    }
}

/// Parse a YAML stream into objects, requiring apiVersion, kind and metadata.name.
pub(crate) fn parse_stream(text: &str) -> Result<Vec<Value>> {
    // User templates write this text: the one reader, as for every YAML
    // read (aliases and depth bounded, keys unique).
    // Not reviewed text (the output is, through `to_yaml`, which escapes bidi controls).
    let limits = crate::yaml_guard::Limits {
        max_bytes: MAX_OUTPUT_BYTES,
        reviewed: false,
        ..crate::yaml_guard::Limits::DEFAULT
    };
    let docs = crate::yaml_guard::read(text, &limits)
        .map_err(|g| anyhow!("rendered manifests, line {} column {}: {}", g.line, g.column, g.at_path()))?;
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let v: Value =
            crate::yaml_guard::from_node(doc).map_err(|(path, e)| anyhow!("document {}: {path}: {e}", i + 1))?;
        if v.is_null() {
            continue;
        }
        for f in ["apiVersion", "kind"] {
            if !v.get(f).map(Value::is_string).unwrap_or(false) {
                bail!("document {} has no `{f}`", i + 1);
            }
        }
        if v.pointer("/metadata/name").and_then(Value::as_str).is_none() {
            bail!("document {} has no `metadata.name`", i + 1);
        }
        out.push(v);
    }
    Ok(out)
}

fn probe_json(p: &Option<bundle::Probe>, port: u16) -> Value {
    let Some(p) = p else { return Value::Null };
    let mut o = serde_json::Map::new();
    if let Some(h) = &p.http_get {
        o.insert("httpGet".into(), json!({"path": h.path, "port": h.port.unwrap_or(port)}));
    } else if let Some(t) = &p.tcp_socket {
        o.insert("tcpSocket".into(), json!({"port": t.port.unwrap_or(port)}));
    } else if let Some(e) = &p.exec {
        o.insert("exec".into(), json!({"command": e.command}));
    }
    o.insert("initialDelaySeconds".into(), json!(p.initial_delay_seconds));
    o.insert("periodSeconds".into(), json!(p.period_seconds));
    o.insert("timeoutSeconds".into(), json!(p.timeout_seconds));
    o.insert("failureThreshold".into(), json!(p.failure_threshold));
    if let Some(s) = p.success_threshold {
        o.insert("successThreshold".into(), json!(s));
    }
    Value::Object(o)
}

fn int_or_pct(v: &bundle::IntOrPercent) -> Value {
    match v {
        bundle::IntOrPercent::Int(i) => json!(i),
        bundle::IntOrPercent::Str(s) => json!(s),
    }
}

/// The template context. Every key is always present (null when absent) so
/// strict mode can tell a template typo from an optional setting.
pub(crate) fn context(l: &Loaded) -> Result<Value> {
    let b = &l.bundle;
    let s = &b.spec.serving;
    let res = |m: &std::collections::BTreeMap<String, bundle::Quantity>| -> Value {
        Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::String(v.0.clone()))).collect())
    };
    let mut env = vec![
        json!({"name": "STORAGE_URI", "value": b.spec.model.storage_uri}),
        json!({"name": "BUNDLEGATE_RELEASE_DIGEST", "value": l.digest}),
        json!({"name": "BUNDLEGATE_RELEASE_VERSION", "value": b.metadata.version}),
    ];
    // A block on a task that does not generate is BG030 (lint); rendered, it
    // would look applied to a server that never reads it.
    if let Some(g) = b.spec.generation.as_ref().filter(|_| b.spec.model.task.generates()) {
        env.push(json!({"name": "GENERATION_EOS_TOKEN_IDS", "value": serde_json::to_string(&g.eos_token_ids)?}));
        env.push(json!({"name": "GENERATION_STOP_STRINGS", "value": serde_json::to_string(&g.stop_strings)?}));
        if let Some(m) = g.max_output_tokens {
            env.push(json!({"name": "GENERATION_MAX_OUTPUT_TOKENS", "value": m.to_string()}));
        }
    }
    for (k, v) in &b.spec.runtime.env {
        env.push(json!({"name": k, "value": v}));
    }
    let mounts: Vec<Value> =
        s.volumes.iter().map(|v| json!({"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only})).collect();
    let volumes: Vec<Value> = s
        .volumes
        .iter()
        .map(|v| json!({"name": v.name, "persistentVolumeClaim": {"claimName": v.claim_name}}))
        .collect();
    let tolerations: Vec<Value> =
        s.tolerations.iter().map(|t| serde_json::to_value(t).unwrap_or(Value::Null)).collect();
    let labels = json!({
        "app.kubernetes.io/name": b.metadata.name,
        "app.kubernetes.io/managed-by": "bundlegate",
        "bundlegate.dev/release-version": b.metadata.version,
    });
    let annotations = json!({
        ANNOTATION_DIGEST: l.digest,
        ANNOTATION_VERSION: b.metadata.version,
        ANNOTATION_STORAGE: b.spec.model.storage_uri,
    });
    let fmt = s.format;
    Ok(json!({
        "name": b.metadata.name,
        "namespace": b.metadata.namespace,
        "version": b.metadata.version,
        "releaseDigest": l.digest,
        "labels": labels,
        "annotations": annotations,
        "image": b.spec.runtime.image,
        // The bundle's arguments, then the task's where the runtime needs it.
        "args": b.spec.runtime.args.iter().cloned().chain(bundle::task_args::task_args(b)).collect::<Vec<String>>(),
        "engine": {"name": b.spec.runtime.engine.name, "version": b.spec.runtime.engine.version},
        "storageUri": b.spec.model.storage_uri,
        "modelFormat": b.spec.model.format.clone().unwrap_or_else(|| b.spec.runtime.engine.name.clone()),
        "port": s.port,
        "replicas": s.replicas,
        "resources": {"requests": res(&s.resources.requests), "limits": res(&s.resources.limits)},
        "nodeSelector": s.node_selector,
        "tolerations": tolerations,
        "env": env,
        "volumes": volumes,
        "volumeMounts": mounts,
        "rollout": {
            "maxSurge": int_or_pct(&s.rollout.max_surge),
            "maxUnavailable": int_or_pct(&s.rollout.max_unavailable),
            "progressDeadlineSeconds": s.rollout.progress_deadline_seconds,
        },
        "probes": {
            "startup": probe_json(&s.probes.startup, s.port),
            "readiness": probe_json(&s.probes.readiness, s.port),
            "liveness": probe_json(&s.probes.liveness, s.port),
        },
        "isModelSpec": fmt == ServingFormat::KserveModelspec,
        // Filled by `Renderer::render` when the pod carries the verifier.
        "verifier": Value::Null,
    }))
}

/// One component of an output file name: a name the bundle chose must not
/// steer the write (`../`, `/`, a leading dot, control characters).
fn file_component(field: &str, v: &str) -> Result<()> {
    let ok = !v.is_empty()
        && v.len() <= 128
        && !v.starts_with('.')
        && v.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if !ok {
        bail!(
            "{field} `{}` cannot name an output file (letters, digits, `.`, `_`, `-`; not starting with `.`)",
            v.escape_debug()
        );
    }
    Ok(())
}

/// Render into `out` (one file per bundle) or return the stream. The file
/// name is built from validated components, must stay directly under `out`,
/// and an existing symlink there is refused rather than followed.
pub(crate) fn write_out(r: &Rendered, l: &Loaded, out: &Path) -> Result<PathBuf> {
    file_component("metadata.name", &l.bundle.metadata.name)?;
    file_component("metadata.version", &l.bundle.metadata.version)?;
    let fname = format!("{}-{}.yaml", l.bundle.metadata.name, l.bundle.metadata.version);
    crate::adapters::local::write_into(out, &fname, r.yaml.as_bytes())
}

/// The shipped example edited as YAML and written back by the one writer
/// (which escapes what a bundle may hold only escaped): how unit tests get a
/// bundle with a field changed.
#[cfg(test)]
pub(crate) fn bundle_edit(f: impl FnOnce(&mut serde_yaml_ng::Value)) -> Result<Loaded, bundle::LoadError> {
    let mut v: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(include_str!("../examples/llm-scratch/v2/release.yaml")).unwrap();
    f(&mut v);
    bundle::parse("t/release.yaml", Path::new("t/release.yaml"), to_yaml(&serde_json::to_value(&v).unwrap()))
}

#[cfg(test)]
mod parse_back_tests {
    use super::*;
    use proptest::prelude::*;

    /// Strings a YAML 1.1 reader (a Kubernetes client) turns into booleans,
    /// null, numbers or timestamps when they are written unquoted.
    const YAML11: &[&str] = &[
        "yes",
        "no",
        "on",
        "off",
        "y",
        "n",
        "Y",
        "N",
        "YES",
        "Off",
        "1_000",
        "0o17",
        "0x1F",
        "0b101",
        ".5",
        "+12",
        "-0",
        "~",
        "null",
        "Null",
        "",
        "12:30",
        "190:20:30",
        "2001-12-14",
        "2001-12-14t21:59:43.10-05:00",
        ".inf",
        "-.Inf",
        ".NaN",
        "1e3",
        "true",
        "False",
        "0777",
        "\"quoted\"",
        "#comment",
        "a: b",
        "- item",
        "{x}",
        "[y]",
        "'",
        "@x",
        "`x`",
        "%x",
        "!tag",
        "&anchor",
        "*alias",
        "? key",
        "|",
        ">",
    ];

    fn bundle_with(env: &[(String, String)], args: &[String]) -> Loaded {
        bundle_edit(|v| {
            let rt = &mut v["spec"]["runtime"];
            let mut m = serde_yaml_ng::Mapping::new();
            for (k, x) in env {
                m.insert(k.clone().into(), x.clone().into());
            }
            rt["env"] = serde_yaml_ng::Value::Mapping(m);
            rt["args"] = serde_yaml_ng::Value::Sequence(args.iter().map(|a| a.clone().into()).collect());
        })
        .unwrap()
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(300))]

        /// Any env value and arg, however YAML 1.1 would misread it bare,
        /// renders to text that reads back as exactly the bundle's strings
        /// (render checks it; here the values are also found in the objects).
        #[test]
        fn rendered_values_read_back_as_the_bundles_strings(
            vals in proptest::collection::vec(lookalike(), 1..4),
            arg in lookalike(),
        ) {
            let env: Vec<(String, String)> = vals.iter().enumerate().map(|(i, v)| (format!("HF_X{i}"), v.to_string())).collect();
            let l = bundle_with(&env, &[arg.to_string()]);
            let r = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).expect("renders");
            let text = r.yaml.clone();
            prop_assert!(parse_back(&text, &r.objects).is_ok());
            prop_assert!(misread_plain(&text).is_empty(), "{:?} written plain", misread_plain(&text));
            let dump = serde_json::to_string(&r.objects).unwrap();
            for (k, v) in &env {
                prop_assert!(dump.contains(&serde_json::to_string(&json!({"name": k, "value": v})).unwrap()), "{k}={v:?} not rendered as a string");
            }
        }

        /// A bundle that sets a name the tool owns never renders a pod with
        /// that name twice: render refuses (and lint says BG021).
        #[test]
        fn a_reserved_env_name_is_never_rendered_twice(
            name in prop_oneof![Just("STORAGE_URI".to_string()), Just("BUNDLEGATE_ARTIFACTS".to_string()), "BUNDLEGATE_[A-Z]{1,8}", "GENERATION_[A-Z_]{1,12}"],
        ) {
            let l = bundle_with(&[(name.clone(), "s3://elsewhere/".into())], &[]);
            let lint = crate::checks::lint::lint(&l, &crate::checks::rollback::RollbackStatus::NotDeclared);
            prop_assert!(lint.iter().any(|d| d.code == crate::diag::Code::ReservedName), "lint did not refuse {name}");
            match Renderer::new(&TemplateSource::Builtin).unwrap().render(&l) {
                Ok(r) => prop_assert!(duplicate_names(&r.objects).is_none(), "{name} rendered twice"),
                Err(e) => prop_assert!(format!("{e:#}").contains("appears twice"), "{e:#}"),
            }
        }
    }

    /// Strings shaped like what YAML readers resolve to other types: the
    /// look-alike list, number-ish text over the characters of every radix,
    /// exponent, sign, sexagesimal and timestamp syntax, dates with one-digit
    /// fields, and the boolean and null words in any case.
    fn lookalike() -> impl Strategy<Value = String> {
        prop_oneof![
            proptest::sample::select(YAML11).prop_map(String::from),
            "[-+.]?[0-9][0-9a-fA-FxXoObB_.:eE+-]{0,7}",
            "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt ][0-9]{1,2}:[0-9]{2}:[0-9]{2})?",
            "[.][0-9_]{1,4}",
            "[yY]|[nN]|[yY][eE][sS]|[nN][oO]|[oO][nN]|[oO][fF][fF]|[tT][rR][uU][eE]|[fF][aA][lL][sS][eE]|[nN][uU][lL][lL]|~|<<|=",
            "[a-z]{1,3}[ #:][ #:a-z]{0,4}",
            "[a-z]{0,2}[\u{85}\u{2028}\u{2029}\u{feff}\u{202e}\u{2066}\u{200f}][a-z]{0,2}",
        ]
    }

    /// The plain scalars of `yaml` that a YAML 1.1 reader would not read
    /// as the text written.
    fn misread_plain(yaml: &str) -> Vec<String> {
        yaml11_misreads(yaml).expect("written YAML parses").into_iter().map(|(_, v)| v).collect()
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(5_000))]

        /// The one writer never leaves a string plain that a YAML 1.1 reader
        /// (go-yaml v2 under Kubernetes clients, PyYAML) or a 1.2 reader
        /// would read as another type, and what it writes reads back as the
        /// same strings. (It left `0X1F`, `0B1` and `2001-1-2` plain.)
        #[test]
        fn lookalikes_are_never_written_plain(k in lookalike(), v in lookalike()) {
            let doc = json!({"metadata": {"labels": {k.clone(): v.clone()}}, "args": [v.clone(), k.clone()]});
            let text = to_yaml(&doc);
            prop_assert!(misread_plain(&text).is_empty(), "{:?} written plain in:\n{}", misread_plain(&text), text);
            prop_assert!(parse_back(&text, std::slice::from_ref(&doc)).is_ok(), "{}", text);
        }
    }

    /// A user template that writes the bundle's value so that it reads back
    /// as something else (raw `{{{value}}}` for the bundle's own entry, the
    /// last) must not render: the objects are compared with the bundle,
    /// field by field. (It rendered `0o17` as the number 15, `a #b` as `a`.)
    fn raw_env_template(dir: &Path) {
        let t = include_str!("../templates/kserve-custom.yaml.hbs").replace("        env: {{{json env}}}\n", "        env:\n{{#each env}}\n          - name: {{{name}}}\n            value: {{#if @last}}{{{value}}}{{else}}{{{json value}}}{{/if}}\n{{/each}}\n");
        std::fs::write(dir.join("kserve-custom.yaml.hbs"), t).unwrap();
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(200))]

        #[test]
        fn rendered_objects_carry_exactly_the_bundles_values(v in lookalike()) {
            let dir = tempfile::tempdir().unwrap();
            raw_env_template(dir.path());
            let l = bundle_with(&[("HF_X".to_string(), v.clone())], &[]);
            match Renderer::new(&TemplateSource::Dir(dir.path().to_path_buf())).unwrap().render(&l) {
                Ok(r) => {
                    let env = r.objects[0].pointer("/spec/predictor/containers/0/env").cloned().unwrap_or_default();
                    let got = env.as_array().into_iter().flatten().find(|e| e["name"] == "HF_X").map(|e| e["value"].clone());
                    prop_assert_eq!(got, Some(json!(v)), "rendered:\n{}", r.yaml);
                }
                // Refused naming the entry, or text that is not YAML at all.
                Err(e) => prop_assert!(format!("{e:#}").contains("env[HF_X]") || format!("{e:#}").contains("invalid YAML"), "{e:#}"),
            }
        }
    }

    fn volume(name: &str, mount: &str) -> serde_yaml_ng::Value {
        serde_yaml_ng::from_str(&format!(
            "{{name: {name:?}, claimName: usr-claim, accessMode: ReadOnlyMany, mountPath: {mount:?}}}"
        ))
        .unwrap()
    }

    /// The three formats, each with the verifier, with names of the
    /// bundle's own that start `usr-`.
    fn baseline(format: usize) -> impl Fn(&mut serde_yaml_ng::Value) {
        move |v| {
            let s = &mut v["spec"]["serving"];
            s["format"] = ["kserve-custom", "kserve-modelspec", "deployment"][format].into();
            if format == 2 {
                s["volumes"] = serde_yaml_ng::Value::Sequence(vec![volume("usr-models", "/usr-models")]);
                s["modelDir"] = "/usr-models/llm".into();
            }
        }
    }

    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Slot {
        Env,
        Volume,
        Mount,
        Label,
    }

    /// Every name the rendered pod carries that the bundle did not supply:
    /// env names, volume names, mount paths, label and annotation keys.
    fn tool_names(format: usize) -> Vec<(Slot, String)> {
        let l = bundle_edit(baseline(format)).unwrap();
        let r = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).unwrap();
        fn walk(v: &Value, out: &mut Vec<(Slot, String)>) {
            match v {
                Value::Object(m) => {
                    for (k, x) in m {
                        let items = x.as_array().into_iter().flatten();
                        match k.as_str() {
                            "env" => {
                                out.extend(items.filter_map(|e| e["name"].as_str()).map(|n| (Slot::Env, n.to_string())))
                            }
                            "volumes" => out.extend(
                                items.filter_map(|e| e["name"].as_str()).map(|n| (Slot::Volume, n.to_string())),
                            ),
                            "volumeMounts" => out.extend(
                                items.filter_map(|e| e["mountPath"].as_str()).map(|n| (Slot::Mount, n.to_string())),
                            ),
                            "labels" | "annotations" => {
                                out.extend(x.as_object().into_iter().flatten().map(|(k, _)| (Slot::Label, k.clone())))
                            }
                            _ => {}
                        }
                        walk(x, out);
                    }
                }
                Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        let mut out = Vec::new();
        r.objects.iter().for_each(|o| walk(o, &mut out));
        let own_env: Vec<&String> = l.bundle.spec.runtime.env.keys().collect();
        out.retain(|(slot, n)| {
            !(n.starts_with("usr-") || n.starts_with("/usr-") || (*slot == Slot::Env && own_env.contains(&n)))
        });
        out.sort_by(|a, b| a.1.cmp(&b.1));
        out.dedup();
        out
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(300))]

        /// Whatever name render sets in the pod, in whichever format, the
        /// bundle supplying it in the matching place is BG021 at lint, and
        /// render never writes it twice in a list Kubernetes merges by key
        /// nor lets it shadow the verified model folder. The names come from
        /// the rendered output itself, so a name render starts to set is
        /// covered without a list to update. (A volume mounted at
        /// `/mnt/models`, the KServe model folder the verifier checks,
        /// passed lint and rendered.)
        #[test]
        fn every_name_render_sets_is_refused_from_the_bundle(format in 0usize..3, pick in any::<proptest::sample::Index>(), sub in proptest::sample::select(&["", "/", "/tokenizer", "/./"][..])) {
            let names = tool_names(format);
            let (slot, name) = names[pick.index(names.len())].clone();
            let base = baseline(format);
            let hostile = bundle_edit(|v| {
                base(v);
                match slot {
                    Slot::Env => v["spec"]["runtime"]["env"][name.as_str()] = "s3://elsewhere/".into(),
                    Slot::Label => v["metadata"]["labels"][name.as_str()] = "x".into(),
                    Slot::Volume | Slot::Mount => {
                        let s = &mut v["spec"]["serving"];
                        if s["volumes"].is_null() {
                            s["volumes"] = serde_yaml_ng::Value::Sequence(Vec::new());
                        }
                        let vol = if slot == Slot::Volume { volume(&name, "/usr-extra") } else { volume("usr-extra", &format!("{name}{sub}")) };
                        s["volumes"].as_sequence_mut().unwrap().push(vol);
                    }
                }
            });
            // Refused by the parser's own rules is refused too.
            let Ok(l) = hostile else { return Ok(()) };
            let lint = crate::checks::lint::lint(&l, &crate::checks::rollback::RollbackStatus::NotDeclared);
            prop_assert!(lint.iter().any(|d| d.code == crate::diag::Code::ReservedName), "lint let the bundle set {slot:?} `{name}{sub}` (format {format})");
            if let Ok(r) = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l) {
                prop_assert!(duplicate_names(&r.objects).is_none() && shadowed_model_folder(&r.objects, l.bundle.spec.serving.format).is_none(), "{slot:?} `{name}` rendered:\n{}", r.yaml);
            }
        }
    }

    #[test]
    fn yaml11_scalars_are_recognised() {
        for s in ["yes", "off", "y", "1_000", "0o17", ".5", "~", "2001-12-14", "12:30"] {
            assert!(yaml11_non_string(s), "{s}");
        }
        for s in ["llm", "v2", "s3://m/v2/", "1.2.3", "sha256:ab", "--port"] {
            assert!(!yaml11_non_string(s), "{s}");
        }
    }
}

/// Render's own checks, each on its inputs directly: the template bounds
/// (where a partial call can hide, names that cannot be bounded, each limit
/// one under and one over), the verifier's presence, the read-back against
/// the bundle and the merged lists' keys.
#[cfg(test)]
mod check_tests {
    use super::*;

    /// Generation settings reach the pod only where the task generates: an
    /// embedding model's `generation` block (BG030) is not rendered.
    #[test]
    fn generation_env_is_rendered_only_for_tasks_that_generate() {
        let env_names = |task: &str| {
            let l = bundle_edit(|v| v["spec"]["model"]["task"] = task.into()).unwrap();
            let ctx = context(&l).unwrap();
            let names: Vec<String> = ctx["env"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|e| e["name"].as_str().filter(|n| n.starts_with("GENERATION_")).map(String::from))
                .collect();
            names
        };
        assert!(env_names("chat").contains(&"GENERATION_STOP_STRINGS".to_string()));
        assert!(env_names("completion").contains(&"GENERATION_EOS_TOKEN_IDS".to_string()));
        for task in ["embedding", "rerank", "classification", "other"] {
            assert_eq!(env_names(task), Vec::<String>::new(), "{task}");
        }
    }

    fn bounded(templates: &[(&str, String)]) -> Result<(), String> {
        let mut hb = Handlebars::new();
        for (name, text) in templates {
            hb.register_template_string(name, text).unwrap();
        }
        check_bounded(hb.get_templates()).map_err(|e| format!("{e:#}"))
    }

    fn one(text: &str) -> Result<(), String> {
        bounded(&[("a", text.to_string()), ("b", "{{> @partial-block}}".to_string())])
    }

    fn nested(depth: usize, inner: &str) -> String {
        format!("{}{inner}{}", "{{#if name}}".repeat(depth), "{{/if}}".repeat(depth))
    }

    #[test]
    fn a_self_call_is_found_in_every_kind_of_block() {
        for body in [
            "{{> a}}",
            "{{#if x}}{{> a}}{{/if}}",
            "{{#if x}}y{{else}}{{> a}}{{/if}}",
            "{{#*deco}}{{> a}}{{/deco}}",
            "{{#> b}}{{> a}}{{/b}}",
            "{{#*inline \"i\"}}{{> a}}{{/inline}}{{> i}}",
            "{{#*inline \"i\"}}{{#if x}}{{> a}}{{/if}}{{/inline}}{{> i}}",
        ] {
            let e = one(body).expect_err(body);
            assert!(e.contains("includes itself") && e.contains("a →"), "{body}: {e}");
        }
        // The caller's block body is counted at the caller, not as a call.
        assert_eq!(one("{{#> b}}x{{/b}}"), Ok(()));
        assert_eq!(one("{{#*deco}}x{{/deco}}{{#*inline \"i\"}}x{{/inline}}{{> i}}{{> b}}"), Ok(()));
    }

    #[test]
    fn names_that_cannot_be_bounded_are_refused() {
        let e = one("{{> (lookup this \"p\")}}").unwrap_err();
        assert!(e.contains("includes a partial with a computed name"), "{e}");
        let e = one("{{#*inline (lookup this \"p\")}}x{{/inline}}").unwrap_err();
        assert!(e.contains("an inline partial has a computed name"), "{e}");
        // A partial named by a path is its literal name.
        assert!(one("{{> a/b}}").is_ok());
    }

    /// Every kind of block counts one level: helper blocks, decorator
    /// blocks, inline partials and partial blocks.
    #[test]
    fn block_nesting_at_its_limit() {
        // (opening, whether it takes a name, closing)
        let kinds = [
            ("{{#if name}}", false, "{{/if}}"),
            ("{{#*deco}}", false, "{{/deco}}"),
            ("{{#*inline \"i", true, "{{/inline}}"),
            ("{{#> b}}", false, "{{/b}}"),
        ];
        for (open, named, close) in kinds {
            let nest = |depth: usize| {
                let opens: String =
                    (0..depth).map(|i| if named { format!("{open}{i}\"}}}}") } else { open.to_string() }).collect();
                format!("{opens}x{}", close.repeat(depth))
            };
            assert_eq!(one(&nest(MAX_BLOCK_DEPTH)), Ok(()), "{open}");
            let e = one(&nest(MAX_BLOCK_DEPTH + 1)).unwrap_err();
            assert!(e.contains(&format!("template `a` nests blocks more than {MAX_BLOCK_DEPTH} deep")), "{open}: {e}");
        }
    }

    /// A chain p0 → p1 → … of `n` partials.
    fn chain(n: usize) -> Vec<(String, String)> {
        (0..n)
            .map(|i| (format!("p{i}"), if i + 1 < n { format!("{{{{> p{}}}}}", i + 1) } else { "x".into() }))
            .collect()
    }

    #[test]
    fn partial_nesting_at_its_limit() {
        let as_refs = |v: &[(String, String)]| -> Result<(), String> {
            bounded(&v.iter().map(|(n, t)| (n.as_str(), t.clone())).collect::<Vec<_>>())
        };
        assert_eq!(as_refs(&chain(MAX_PARTIAL_DEPTH)), Ok(()));
        let e = as_refs(&chain(MAX_PARTIAL_DEPTH + 1)).unwrap_err();
        assert!(e.contains(&format!("template `p0`: partials nest more than {MAX_PARTIAL_DEPTH} deep (p0")), "{e}");
    }

    /// Expansions count each call with its multiplicity: `a` rendering `c`
    /// n times is n + 1 renders.
    #[test]
    fn expansions_at_their_limit() {
        let calls = |n: u64| vec![("a", "{{> c}}".repeat(n as usize)), ("c", "x".to_string())];
        assert_eq!(bounded(&calls(MAX_PARTIAL_EXPANSIONS - 1)), Ok(()));
        let e = bounded(&calls(MAX_PARTIAL_EXPANSIONS)).unwrap_err();
        assert!(
            e.contains(&format!("partial `a` expands to more than {MAX_PARTIAL_EXPANSIONS} partial renders")),
            "{e}"
        );
        // Through a level: a → b twice, b → c 4,999 times: 1 + 2·5,000.
        let two =
            |n: usize| vec![("a", "{{> b}}{{> b}}".to_string()), ("b", "{{> c}}".repeat(n)), ("c", "x".to_string())];
        assert_eq!(bounded(&two(4_998)), Ok(()));
        assert!(bounded(&two(4_999)).is_err());
    }

    /// What the bounds mean, computed plainly from a call graph (node `i`
    /// calls `j` `times` times): refused exactly when a call chain loops, is
    /// longer than the depth limit, or some partial renders more than the
    /// expansion limit; whatever order the templates are visited in.
    fn oracle(calls: &[Vec<(usize, u64)>]) -> bool {
        fn visit(i: usize, calls: &[Vec<(usize, u64)>], state: &mut [u8], memo: &mut [(u64, usize)]) -> bool {
            match state[i] {
                1 => return false,
                2 => return true,
                _ => {}
            }
            state[i] = 1;
            let (mut total, mut height) = (1u64, 1usize);
            for (j, times) in &calls[i] {
                if !visit(*j, calls, state, memo) {
                    return false;
                }
                total = total.saturating_add(memo[*j].0.saturating_mul(*times));
                height = height.max(memo[*j].1 + 1);
            }
            state[i] = 2;
            memo[i] = (total, height);
            true
        }
        let (mut state, mut memo) = (vec![0u8; calls.len()], vec![(0u64, 0usize); calls.len()]);
        (0..calls.len()).all(|i| visit(i, calls, &mut state, &mut memo))
            && memo.iter().all(|(t, h)| *t <= MAX_PARTIAL_EXPANSIONS && *h <= MAX_PARTIAL_DEPTH)
    }

    /// Call graphs of up to 24 partials: mostly forward calls, mostly once
    /// (chains deeper than the limit with few renders), some many times (past
    /// the expansion limit), a few loops back.
    fn call_graphs() -> impl proptest::strategy::Strategy<Value = Vec<Vec<(usize, u64)>>> {
        use proptest::prelude::*;
        (1usize..25).prop_flat_map(|n| {
            prop::collection::vec(
                (
                    prop::collection::vec(
                        (prop_oneof![4 => Just(1usize), 1 => 2usize..4], prop_oneof![6 => Just(1u64), 1 => 2u64..5]),
                        1..3,
                    ),
                    prop::option::weighted(0.05, 0usize..25),
                ),
                n,
            )
            .prop_map(move |nodes| {
                nodes
                    .into_iter()
                    .enumerate()
                    .map(|(i, (fwd, back))| {
                        let mut c: Vec<(usize, u64)> =
                            fwd.into_iter().filter(|(o, _)| i + o < n).map(|(o, t)| (i + o, t)).collect();
                        c.extend(back.map(|b| (b % (i + 1), 1)));
                        c
                    })
                    .collect()
            })
        })
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(2_000))]

        #[test]
        fn partial_bounds_are_exactly_the_call_graphs(calls in call_graphs()) {
            let templates: Vec<(String, String)> = calls
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("p{i}"), c.iter().map(|(j, t)| format!("{{{{> p{j}}}}}").repeat(*t as usize)).collect()))
                .collect();
            let got = bounded(&templates.iter().map(|(n, t)| (n.as_str(), t.clone())).collect::<Vec<_>>());
            proptest::prop_assert_eq!(got.is_ok(), oracle(&calls), "{:?}: {:?}", calls, got);
        }
    }

    #[test]
    fn output_at_its_cap() {
        use std::io::Write;
        let mut w = CappedWriter { buf: Vec::new(), cap: 4, over: false };
        assert_eq!(w.write(b"abcd").unwrap(), 4);
        assert!(!w.over);
        assert!(w.write(b"").is_ok());
        assert!(w.write(b"e").is_err());
        assert!(w.over);
        assert_eq!(w.buf, b"abcd");
        let mut w = CappedWriter { buf: Vec::new(), cap: 4, over: false };
        assert!(w.write(b"abcde").is_err());
        assert!(w.buf.is_empty() && w.over);
    }

    /// A template that leaves the verifier out, or runs another init
    /// container in its place, is said to (the built-in one carries it).
    #[test]
    fn a_template_without_the_verifier_is_said_to_lack_it() {
        let l = crate::bundle::example();
        let builtin = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).unwrap();
        assert!(builtin.yaml.contains(VERIFIER_CONTAINER) && !builtin.verifier_missing);
        let t = include_str!("../templates/kserve-custom.yaml.hbs");
        let with = "{{#if verifier}}\n    initContainers: [{{{json verifier}}}]\n{{/if}}\n";
        assert!(t.contains(with));
        for instead in ["", "    initContainers: [{\"name\": \"warm-cache\", \"image\": {{{json image}}}}]\n"] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(dir.path().join("kserve-custom.yaml.hbs"), t.replace(with, instead)).unwrap();
            let r = Renderer::new(&TemplateSource::Dir(dir.path().to_path_buf())).unwrap().render(&l);
            let r = r.unwrap_or_else(|e| panic!("{instead:?}: {e:#}"));
            assert!(r.verifier_missing, "{instead:?}:\n{}", r.yaml);
        }
    }

    /// Each place the rendered objects carry a bundle value is compared, and
    /// only those: labels and annotations key by key, every replica count,
    /// a KServe model spec as a container (a `model` without a
    /// `modelFormat` is not one), resources per part, env by name.
    #[test]
    fn the_read_back_compares_every_carried_value_and_nothing_else() {
        let ctx = json!({
            "name": "llm", "namespace": "ml", "replicas": 2, "labels": {"team": "a"}, "annotations": {"note": "x"},
            "image": "img@sha256:1", "args": ["--a"], "storageUri": "s3://m/v1/", "env": [{"name": "E", "value": "1"}],
            "resources": {"requests": {"cpu": "1"}, "limits": {"memory": "1Gi"}},
        });
        let ok = json!({"kind": "Deployment", "metadata": {"name": "llm", "namespace": "ml", "labels": {"team": "a", "extra": "y"}, "annotations": {"note": "x"}},
            "spec": {"replicas": 2, "model": {"modelFormat": {"name": "x"}, "storageUri": "s3://m/v1/"},
                "template": {"spec": {"containers": [{"name": "c", "image": "img@sha256:1", "args": ["--a"], "env": [{"name": "E", "value": "1"}, {"name": "OTHER", "value": "z"}],
                    "resources": {"requests": {"cpu": "1", "gpu": "9"}, "limits": {"memory": "1Gi"}}}]}}}});
        assert!(check_against_bundle(std::slice::from_ref(&ok), &ctx).is_ok());
        let wrong = |pointer: &str, v: Value| {
            let mut d = ok.clone();
            *d.pointer_mut(pointer).unwrap_or_else(|| panic!("{pointer}")) = v;
            check_against_bundle(&[d], &ctx).map_err(|e| format!("{e:#}"))
        };
        for (pointer, v, field) in [
            ("/metadata/labels/team", json!("b"), "document 1.metadata.labels.team"),
            ("/metadata/annotations/note", json!(1), "document 1.metadata.annotations.note"),
            ("/spec/replicas", json!("2"), "document 1.spec.replicas"),
            ("/spec/model/storageUri", json!("s3://m/v2/"), "document 1.spec.model.storageUri"),
            (
                "/spec/template/spec/containers/0/env/0/value",
                json!(1),
                "document 1.spec.template.spec.containers[0].env[E]",
            ),
            (
                "/spec/template/spec/containers/0/resources/limits/memory",
                json!("2Gi"),
                "containers[0].resources.limits.memory",
            ),
            ("/metadata/namespace", json!("other"), "document 1.metadata.namespace"),
            ("/metadata/name", json!("other"), "document 1.metadata.name"),
        ] {
            let e = wrong(pointer, v).expect_err(pointer);
            assert!(e.contains(field), "{pointer}: {e}");
        }
        for key in ["minReplicas", "maxReplicas"] {
            let mut d = ok.clone();
            d["spec"][key] = json!(3);
            assert!(
                check_against_bundle(&[d], &ctx).unwrap_err().to_string().contains(&format!("spec.{key}")),
                "{key}"
            );
        }
        // Not a bundle value: a `model` without `modelFormat`, labels the
        // bundle does not give, env and resources it does not name.
        let mut d = ok.clone();
        d["spec"]["model"] = json!({"storageUri": "elsewhere"});
        assert!(check_against_bundle(&[d], &ctx).is_ok());
        assert!(wrong("/metadata/labels/extra", json!(5)).is_ok());
        assert!(wrong("/spec/template/spec/containers/0/env/1/value", json!(5)).is_ok());
        assert!(wrong("/spec/template/spec/containers/0/resources/requests/gpu", json!(5)).is_ok());
    }

    /// Every list Kubernetes merges by a key refuses that key twice; a list
    /// it does not merge may repeat it.
    #[test]
    fn duplicate_keys_in_every_merged_list() {
        for (list, key) in [
            ("containers", "name"),
            ("initContainers", "name"),
            ("ephemeralContainers", "name"),
            ("env", "name"),
            ("volumes", "name"),
            ("imagePullSecrets", "name"),
            ("volumeMounts", "mountPath"),
            ("volumeDevices", "devicePath"),
            ("ports", "containerPort"),
        ] {
            let doc = json!({"spec": {list: [{key: "a"}, {key: "b"}, {key: "a"}]}});
            let got = duplicate_names(&[doc]).unwrap_or_else(|| panic!("{list}"));
            assert_eq!(got, format!("`a` appears twice in document 1.spec.{list} (its `{key}`)"));
            assert_eq!(duplicate_names(&[json!({"spec": {list: [{key: "a"}, {key: "b"}]}})]), None, "{list}");
        }
        assert_eq!(duplicate_names(&[json!({"spec": {"args": [{"name": "a"}, {"name": "a"}]}})]), None);
        let ports = json!({"ports": [{"containerPort": 8080}, {"containerPort": 8080}]});
        assert_eq!(
            duplicate_names(&[ports]).unwrap(),
            "`8080` appears twice in document 1.ports (its `containerPort`)"
        );
    }

    /// The writer's output is read back by both readers: a document that
    /// reads differently (or one too few), or a plain scalar a YAML 1.1
    /// reader misreads, is refused naming where.
    #[test]
    fn parse_back_refuses_what_reads_differently() {
        let docs = [json!({"a": "1"}), json!({"b": true})];
        assert!(parse_back("a: \"1\"\n---\nb: true\n", &docs).is_ok());
        let e = parse_back("a: \"1\"\n---\nb: \"true\"\n", &docs).unwrap_err().to_string();
        assert_eq!(e, "document 2 reads back differently under YAML 1.2");
        let e = parse_back("a: 1\n---\nb: true\n", &docs).unwrap_err().to_string();
        assert_eq!(e, "document 1 reads back differently under YAML 1.2");
        let e = parse_back("a: \"1\"\n", &docs).unwrap_err().to_string();
        assert_eq!(e, "document 2 reads back differently under YAML 1.2");
        let e = parse_back("a: \"1\"\n---\nb: true\nc: yes\n", &[docs[0].clone(), json!({"b": true, "c": "yes"})]);
        assert!(e.unwrap_err().to_string().starts_with("line 4: the string `yes` is written unquoted"));
    }

    /// What the writer leaves plain and what it quotes.
    #[test]
    fn the_writer_quotes_exactly_what_needs_it() {
        for plain in ["llm", "/mnt/models", "a.b-c_d@e+f=g", "v2"] {
            assert_eq!(quote(plain), plain);
        }
        for quoted in ["yes", "Off", "1.10", "a b", "-x", ".5", "2001-12-14", "", "a:b", "0o17", "x#"] {
            assert_eq!(quote(quoted), serde_json::to_string(quoted).unwrap(), "{quoted}");
        }
        assert_eq!(
            to_yaml(&json!({"a": null, "b": [], "c": {}, "d": 1.5, "e": false})),
            "a: null\nb: []\nc: {}\nd: 1.5\ne: false\n"
        );
        // Plain text must read as itself under both YAML versions: `yes` is
        // a string to YAML 1.2 but a boolean to 1.1; `1` is a number to both.
        for (text, plain) in
            [("llm", true), ("yEs", true), ("yes", false), ("1", false), ("2001-12-14", false), ("true", false)]
        {
            assert_eq!(plain_reads_as_string(text), plain, "{text}");
        }
    }

    /// Output file names take only what cannot steer the write.
    #[test]
    fn output_file_names_are_plain_components() {
        let longest = "a".repeat(128);
        for ok in ["llm", "v2.1_rc-3", longest.as_str(), "a.."] {
            assert!(file_component("f", ok).is_ok(), "{ok}");
        }
        let too_long = "a".repeat(129);
        for bad in ["", ".hidden", "..", "a/b", "a\\b", "a b", "é", "a\n", too_long.as_str()] {
            let e = file_component("metadata.name", bad).unwrap_err().to_string();
            assert!(e.starts_with("metadata.name `"), "{bad:?}: {e}");
        }
    }

    /// The file is `<name>-<version>.yaml` directly under the folder, and
    /// holds the rendered stream.
    #[test]
    fn write_out_names_the_file_by_name_and_version() {
        let l = crate::bundle::example();
        let r = Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let p = write_out(&r, &l, dir.path()).unwrap();
        let want = format!("{}-{}.yaml", l.bundle.metadata.name, l.bundle.metadata.version);
        assert_eq!(p.file_name().unwrap().to_str(), Some(want.as_str()));
        assert_eq!(std::fs::read_to_string(&p).unwrap(), r.yaml);
    }

    /// What a user template writes is read by the one reader with the
    /// rendered-output bound (above a bundle's) and without the review rule
    /// (a bidi control in a value is data here; the writer escapes it).
    #[test]
    fn rendered_text_is_read_with_the_output_limits() {
        let doc =
            |extra: &str| format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: \"{extra}\"\n");
        assert_eq!(parse_stream(&doc("\u{202e}")).unwrap()[0]["data"]["a"], "\u{202e}");
        let big = doc(&"x".repeat(crate::yaml_guard::Limits::DEFAULT.max_bytes + 1));
        assert!(big.len() < MAX_OUTPUT_BYTES);
        assert!(parse_stream(&big).is_ok());
        let e = parse_stream(&doc(&"x".repeat(MAX_OUTPUT_BYTES))).unwrap_err().to_string();
        assert!(e.starts_with("rendered manifests, line "), "{e}");
    }

    /// A user template at the block and partial limits renders on the
    /// render thread's stack (a smaller stack overflowed: the limits are
    /// only safe with the stack they were measured on).
    #[test]
    fn a_template_at_every_limit_renders() {
        let dir = tempfile::tempdir().unwrap();
        let mut partials = String::new();
        for i in 0..MAX_PARTIAL_DEPTH - 1 {
            let next = if i + 2 < MAX_PARTIAL_DEPTH {
                format!("{{{{> q{}}}}}", i + 1)
            } else {
                nested(MAX_BLOCK_DEPTH - 2, "deep")
            };
            partials.push_str(&format!("{{{{#*inline \"q{i}\"}}}}{next}{{{{/inline}}}}"));
        }
        let t = include_str!("../templates/kserve-custom.yaml.hbs");
        std::fs::write(dir.path().join("kserve-custom.yaml.hbs"), format!("{partials}# {{{{> q0}}}}\n{t}")).unwrap();
        let l = crate::bundle::example();
        let r = Renderer::new(&TemplateSource::Dir(dir.path().to_path_buf())).unwrap();
        assert_eq!(
            r.render(&l).unwrap().objects.len(),
            Renderer::new(&TemplateSource::Builtin).unwrap().render(&l).unwrap().objects.len()
        );
    }
}
