//! Render a bundle into Kubernetes manifests with logic-less Handlebars
//! templates in strict mode.
//!
//! Safety: templates may come from the repository under review, so only the
//! built-in block helpers and our own `json` helper exist (no script helpers,
//! nothing loaded from the repo). Every `{{value}}` is escaped as a quoted JSON
//! string, which is also a valid YAML scalar, so no value can inject YAML;
//! `{{{json value}}}` inserts structured values as JSON flow (valid YAML).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use handlebars::{Context, Handlebars, Helper, HelperResult, Output, RenderContext, RenderErrorReason};
use serde_json::{json, Value};

use crate::bundle::{self, Loaded, ServingFormat};

pub const ANNOTATION_DIGEST: &str = "bundlegate.dev/release-digest";
pub const ANNOTATION_VERSION: &str = "bundlegate.dev/release-version";
pub const ANNOTATION_STORAGE: &str = "bundlegate.dev/storage-uri";

const BUILTIN: &[(&str, &str)] = &[
    ("kserve-modelspec", include_str!("../templates/kserve-modelspec.yaml.hbs")),
    ("kserve-custom", include_str!("../templates/kserve-custom.yaml.hbs")),
    ("deployment", include_str!("../templates/deployment.yaml.hbs")),
];

/// Where templates come from: the embedded set or a user folder holding
/// `<format>.yaml.hbs` files.
#[derive(Debug, Clone, Default)]
pub enum TemplateSource {
    #[default]
    Builtin,
    Dir(PathBuf),
}

pub struct Renderer {
    hb: Handlebars<'static>,
}

fn json_helper(h: &Helper, _: &Handlebars, _: &Context, _: &mut RenderContext, out: &mut dyn Output) -> HelperResult {
    let p = h.param(0).ok_or(RenderErrorReason::ParamNotFoundForIndex("json", 0))?;
    if p.is_value_missing() {
        return Err(RenderErrorReason::MissingVariable(p.relative_path().cloned()).into());
    }
    out.write(&serde_json::to_string(p.value()).map_err(|e| RenderErrorReason::Other(e.to_string()))?)?;
    Ok(())
}

fn yaml_string_escape(s: &str) -> String {
    serde_json::to_string(s).expect("string serializes")
}

impl Renderer {
    pub fn new(src: &TemplateSource) -> Result<Renderer> {
        let mut hb = Handlebars::new();
        hb.set_strict_mode(true);
        hb.register_escape_fn(yaml_string_escape);
        hb.register_helper("json", Box::new(json_helper));
        match src {
            TemplateSource::Builtin => {
                for (name, text) in BUILTIN {
                    hb.register_template_string(name, *text).with_context(|| format!("built-in template {name}"))?;
                }
            }
            TemplateSource::Dir(dir) => {
                for (name, _) in BUILTIN {
                    let p = dir.join(format!("{name}.yaml.hbs"));
                    if p.exists() {
                        let text = std::fs::read_to_string(&p).with_context(|| format!("reading template {}", p.display()))?;
                        hb.register_template_string(name, text).with_context(|| format!("template {}", p.display()))?;
                    }
                }
            }
        }
        Ok(Renderer { hb })
    }

    /// Render to a normalized multi-document YAML stream.
    pub fn render(&self, l: &Loaded) -> Result<Rendered> {
        let fmt = l.bundle.spec.serving.format.as_str();
        if !self.hb.has_template(fmt) {
            bail!("no template for serving format `{fmt}` (expected `{fmt}.yaml.hbs`)");
        }
        let ctx = context(l)?;
        let text = self.hb.render(fmt, &ctx).with_context(|| format!("rendering template `{fmt}` for {}", l.display))?;
        let docs = parse_stream(&text).with_context(|| format!("template `{fmt}` produced invalid YAML for {}", l.display))?;
        if docs.is_empty() {
            bail!("template `{fmt}` produced no Kubernetes objects for {}", l.display);
        }
        let mut yaml = String::new();
        for d in &docs {
            yaml.push_str("---\n");
            yaml.push_str(&serde_yaml_ng::to_string(d)?);
        }
        Ok(Rendered { objects: docs, yaml })
    }
}

pub struct Rendered {
    pub objects: Vec<Value>,
    pub yaml: String,
}

/// Parse a YAML stream into objects, requiring apiVersion, kind and metadata.name.
pub fn parse_stream(text: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let v: Value = serde::Deserialize::deserialize(doc).with_context(|| format!("document {}", i + 1))?;
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
pub fn context(l: &Loaded) -> Result<Value> {
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
    if let Some(g) = &b.spec.generation {
        env.push(json!({"name": "GENERATION_EOS_TOKEN_IDS", "value": serde_json::to_string(&g.eos_token_ids)?}));
        env.push(json!({"name": "GENERATION_STOP_STRINGS", "value": serde_json::to_string(&g.stop_strings)?}));
        if let Some(m) = g.max_output_tokens {
            env.push(json!({"name": "GENERATION_MAX_OUTPUT_TOKENS", "value": m.to_string()}));
        }
    }
    for (k, v) in &b.spec.runtime.env {
        env.push(json!({"name": k, "value": v}));
    }
    let mounts: Vec<Value> = s.volumes.iter().map(|v| json!({"name": v.name, "mountPath": v.mount_path, "readOnly": v.read_only})).collect();
    let volumes: Vec<Value> = s.volumes.iter().map(|v| json!({"name": v.name, "persistentVolumeClaim": {"claimName": v.claim_name}})).collect();
    let tolerations: Vec<Value> = s.tolerations.iter().map(|t| serde_json::to_value(t).unwrap_or(Value::Null)).collect();
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
        "args": b.spec.runtime.args,
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
    }))
}

/// Render into `out` (one file per bundle) or return the stream.
pub fn write_out(r: &Rendered, l: &Loaded, out: &Path) -> Result<PathBuf> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let p = out.join(format!("{}-{}.yaml", l.bundle.metadata.name, l.bundle.metadata.version));
    std::fs::write(&p, &r.yaml).with_context(|| format!("writing {}", p.display()))?;
    Ok(p)
}
