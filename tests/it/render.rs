//! Rendering: the right field for the declared KServe variant, the release
//! digest on the pod template, strict templates, and the real CRD schema.

use crate::support::*;
use serde_json::Value;

fn rendered(out: &Out) -> Vec<Value> {
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    serde_yaml_ng::Deserializer::from_str(&out.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

/// Valid against the KServe CRD, strictly: a field the CRD does not know
/// would be pruned by the API server without a word, so it is an error here.
pub fn assert_valid_isvc(obj: &Value) {
    let errors = crate::support::schema::isvc_errors(obj);
    assert!(
        errors.is_empty(),
        "rendered InferenceService violates the KServe CRD (or would lose a pruned field):\n{}",
        errors.join("\n")
    );
}

fn assert_valid_k8s(obj: &Value) {
    let errors = crate::support::schema::k8s_errors(obj);
    assert!(errors.is_empty(), "rendered {} violates the Kubernetes schema:\n{}", obj["kind"], errors.join("\n"));
}

fn digest_of(ex: &Example) -> String {
    ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn kserve_custom_puts_storage_uri_in_container_env() {
    let ex = Example::new();
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    assert_eq!(objs.len(), 1);
    let isvc = &objs[0];
    assert_eq!(isvc["kind"], "InferenceService");
    assert!(isvc["spec"]["predictor"].get("model").is_none(), "custom variant must not grow a model: block");
    let env = isvc["spec"]["predictor"]["containers"][0]["env"].as_array().unwrap();
    let su = env.iter().find(|e| e["name"] == "STORAGE_URI").unwrap();
    assert_eq!(su["value"], "file:../../store/llm-scratch/v2/");
    assert_eq!(isvc["spec"]["predictor"]["annotations"]["bundlegate.dev/release-digest"], digest_of(&ex));
    assert_eq!(isvc["spec"]["predictor"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"], "1");
    assert_eq!(isvc["spec"]["predictor"]["containers"][0]["startupProbe"]["failureThreshold"], 18);
    // The file verifier rides along as a native sidecar (docs/verify-on-start.md).
    assert_eq!(isvc["spec"]["predictor"]["initContainers"][0]["name"], "bundlegate-verify");
    assert_valid_isvc(isvc);
    // The validator is not vacuous: an unknown (would-be pruned) field is caught.
    let mut bad = isvc.clone();
    bad["spec"]["predictor"]["initContainers"][0]["restartPolicyy"] = "Always".into();
    assert!(!crate::support::schema::isvc_errors(&bad).is_empty());
}

#[test]
fn kserve_modelspec_puts_storage_uri_in_model() {
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.serving.format") = "kserve-modelspec".into();
        *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/v2/".into();
    });
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    let isvc = &objs[0];
    assert_eq!(isvc["spec"]["predictor"]["model"]["storageUri"], "s3://models/llm-scratch/v2/");
    assert!(isvc["spec"]["predictor"].get("containers").is_none());
    assert_eq!(isvc["spec"]["predictor"]["model"]["modelFormat"]["name"], "fastapi-torch");
    assert_eq!(isvc["spec"]["predictor"]["initContainers"][0]["name"], "bundlegate-verify");
    assert_valid_isvc(isvc);
}

#[test]
fn deployment_pod_template_carries_release_digest() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.serving.format") = "deployment".into());
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    assert_eq!(objs.iter().map(|o| o["kind"].as_str().unwrap()).collect::<Vec<_>>(), vec!["Deployment", "Service"]);
    let dep = &objs[0];
    let d = digest_of(&ex);
    assert_eq!(dep["spec"]["template"]["metadata"]["annotations"]["bundlegate.dev/release-digest"], d);
    assert_eq!(dep["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(dep["spec"]["progressDeadlineSeconds"], 600);
    for o in &objs {
        assert_valid_k8s(o);
    }
    // Any change to the bundle changes the pod template.
    ex.edit_v2(|v| *at(v, "spec.generation.maxOutputTokens") = 1024.into());
    let objs2 = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    assert_ne!(
        objs2[0]["spec"]["template"]["metadata"]["annotations"],
        dep["spec"]["template"]["metadata"]["annotations"]
    );
}

#[test]
fn values_cannot_inject_yaml() {
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.runtime.env") = yaml("{EVIL: \"x\\n  injected: true\\nkind: Secret\"}");
    });
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    assert_eq!(objs.len(), 1);
    assert_eq!(objs[0]["kind"], "InferenceService");
    let env = objs[0]["spec"]["predictor"]["containers"][0]["env"].as_array().unwrap();
    assert!(env.iter().any(|e| e["name"] == "EVIL" && e["value"].as_str().unwrap().contains("kind: Secret")));
}

#[test]
fn out_dir_writes_a_file() {
    let ex = Example::new();
    let out = ex.run(&["render", "--format", "json", ex.v2().to_str().unwrap(), "--out", "manifests"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let text = std::fs::read_to_string(ex.path().join("manifests/llm-scratch-v2.yaml")).unwrap();
    assert!(text.contains("kind: InferenceService"));
}

#[test]
fn strict_templates_reject_missing_values() {
    let ex = Example::new();
    let t = ex.path().join("tpl");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("kserve-custom.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n  labels: {app: {{nmae}}}\n",
    )
    .unwrap();
    let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--templates", t.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stdout.contains("nmae"), "{}", out.stdout);
}

#[test]
fn user_templates_cannot_run_unknown_helpers() {
    let ex = Example::new();
    let t = ex.path().join("tpl");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("kserve-custom.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{exec \"id\"}}\n",
    )
    .unwrap();
    let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--templates", t.to_str().unwrap()]);
    assert_eq!(out.code, 2);
}

#[test]
fn user_template_producing_nothing_is_an_error() {
    let ex = Example::new();
    let t = ex.path().join("tpl");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("kserve-custom.yaml.hbs"), "{{!-- nothing --}}\n").unwrap();
    let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--templates", t.to_str().unwrap()]);
    assert_eq!(out.code, 2);
    assert!(out.stdout.contains("no Kubernetes objects"), "{}", out.stdout);
}

#[test]
fn out_file_name_cannot_leave_the_out_folder() {
    let ex = Example::new();
    // A version with `../` (and other separators) would steer the write out of --out.
    for bad in ["../../escaped", "v2/../../x", "/abs", ".hidden", "v2\nx"] {
        ex.edit_v2(|v| *at(v, "metadata.version") = bad.into());
        let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--out", "manifests"]);
        assert_eq!(out.code, 2, "version {bad:?} accepted: {}", out.stdout);
        assert!(out.stdout.contains("metadata.version"), "{}", out.stdout);
    }
    assert!(!ex.path().join("escaped.yaml").exists() && !ex.path().join("llm-scratch-..").exists());
    // A symlink planted where the file goes is refused, not followed.
    ex.edit_v2(|v| *at(v, "metadata.version") = "v2".into());
    std::fs::create_dir_all(ex.path().join("manifests")).unwrap();
    let victim = ex.path().join("victim.txt");
    std::fs::write(&victim, "keep").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&victim, ex.path().join("manifests/llm-scratch-v2.yaml")).unwrap();
    let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--out", "manifests"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stdout.contains("symlink"), "{}", out.stdout);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}

fn render_with_template(body: &str) -> Out {
    let ex = Example::new();
    let t = ex.path().join("tpl");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("kserve-custom.yaml.hbs"), body).unwrap();
    ex.run(&["render", ex.v2().to_str().unwrap(), "--templates", t.to_str().unwrap()])
}

#[test]
fn recursive_user_templates_are_refused_not_a_stack_overflow() {
    // A template including itself, and an inline partial including itself.
    for body in [
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n{{> kserve-custom}}\n",
        "{{#*inline \"loop\"}}x{{> loop}}{{/inline}}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n# {{> loop}}\n",
    ] {
        let out = render_with_template(body);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("includes itself") && out.stdout.contains("kserve-custom"), "{}", out.stdout);
    }
}

#[test]
fn exponential_partials_are_refused_quickly() {
    // p0 includes p1 twice, p1 includes p2 twice, … 30 levels: 2^30 renders.
    let mut body = String::new();
    for i in 0..30 {
        body.push_str(&format!("{{{{#*inline \"p{i}\"}}}}{{{{> p{n}}}}}{{{{> p{n}}}}}{{{{/inline}}}}", n = i + 1));
    }
    body.push_str(
        "{{#*inline \"p30\"}}a{{/inline}}apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n# {{> p0}}\n",
    );
    let t0 = std::time::Instant::now();
    let out = render_with_template(&body);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("kserve-custom")
            && (out.stdout.contains("expands to more than") || out.stdout.contains("deep")),
        "{}",
        out.stdout
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(10), "took {:?}", t0.elapsed());
    // A bounded partial still works.
    let ok = render_with_template(
        "{{#*inline \"meta\"}}  name: {{name}}\n{{/inline}}apiVersion: v1\nkind: ConfigMap\nmetadata:\n{{> meta}}",
    );
    assert_eq!(ok.code, 0, "{}\n{}", ok.stdout, ok.stderr);
}

#[test]
fn huge_template_output_is_capped() {
    // 9 nested loops over the runtime args: small template, huge output.
    let mut body = String::from("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n# ");
    for _ in 0..9 {
        body.push_str("{{#each ../args}}");
    }
    body.push_str("0123456789abcdef0123456789abcdef");
    for _ in 0..9 {
        body.push_str("{{/each}}");
    }
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.runtime.args") = yaml("[a, b, c, d, e, f, g, h]"));
    let t = ex.path().join("tpl");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(t.join("kserve-custom.yaml.hbs"), body.replace("../args", "@root.args")).unwrap();
    let out = ex.run(&["render", ex.v2().to_str().unwrap(), "--templates", t.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout.len(), out.stderr);
    assert!(out.stdout.contains("more than") && out.stdout.contains("kserve-custom"), "{}", out.stdout);
}

#[test]
fn deployment_with_model_dir_carries_the_verifier_and_validates_strictly() {
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.serving.format") = "deployment".into();
        *at(v, "spec.serving.volumes") = yaml(
            "[{name: models, claimName: llm-models, accessMode: ReadOnlyMany, mountPath: /models, readOnly: true}]",
        );
        *at(v, "spec.serving.modelDir") = "/models/llm-scratch/v2".into();
    });
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    let spec = &objs[0]["spec"]["template"]["spec"];
    let v = &spec["initContainers"][0];
    assert_eq!(v["name"], "bundlegate-verify");
    assert_eq!(v["restartPolicy"], "Always");
    assert_eq!(v["volumeMounts"][0], serde_json::json!({"name": "models", "mountPath": "/models", "readOnly": true}));
    for o in &objs {
        assert_valid_k8s(o);
    }
}
