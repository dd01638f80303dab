//! Argo CD plugin (CMP v2): the real binary with the environment Argo sets, in
//! a temporary repo layout; the shipped argo/ manifests; and the stricter
//! InferenceService health check run in a Lua sandbox shaped like Argo's.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::*;

const REVISION: &str = "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c";

/// What the CMP server hands to `generate` for our example Application.
fn argo_env() -> Vec<(&'static str, String)> {
    vec![
        ("ARGOCD_APP_NAME", "llm-scratch".into()),
        ("ARGOCD_APP_NAMESPACE", "argocd".into()),
        ("ARGOCD_APP_PROJECT_NAME", "default".into()),
        ("ARGOCD_APP_REVISION", REVISION.into()),
        ("ARGOCD_APP_REVISION_SHORT", REVISION[..7].into()),
        ("ARGOCD_APP_SOURCE_PATH", "llm-scratch/v2".into()),
        ("ARGOCD_APP_SOURCE_REPO_URL", "https://github.com/example/models.git".into()),
        ("ARGOCD_APP_SOURCE_TARGET_REVISION", "main".into()),
        ("KUBE_VERSION", "1.33".into()),
    ]
}

/// Run `bundlegate argocd <args>` in `dir` with a clean environment (so the
/// developer's own PARAM_* or ARGOCD_* can't leak in) plus `extra`.
fn cmp(dir: &Path, args: &[&str], extra: &[(&str, &str)]) -> Out {
    let mut c = Command::new(crate::support::bin());
    c.arg("argocd").args(args).current_dir(dir).env_clear().env("PATH", std::env::var_os("PATH").unwrap_or_default());
    for (k, v) in argo_env() {
        c.env(k, v);
    }
    for (k, v) in extra {
        c.env(k, v);
    }
    let o = c.output().expect("run bundlegate");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn source(ex: &Example) -> PathBuf {
    ex.path().join("llm-scratch/v2")
}

/// Parse stdout the way Argo does: a YAML stream of Kubernetes objects.
fn objects(out: &Out) -> Vec<Value> {
    assert_eq!(out.code, 0, "generate failed\nstdout:\n{}\nstderr:\n{}", out.stdout, out.stderr);
    let docs: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&out.stdout)
        .map(|d| {
            serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("stdout is not YAML ({e}):\n{}", out.stdout))
        })
        .filter(|v: &Value| !v.is_null())
        .collect();
    assert!(!docs.is_empty(), "empty stream with exit 0");
    for d in &docs {
        assert!(
            d["apiVersion"].is_string() && d["kind"].is_string() && d["metadata"]["name"].is_string(),
            "not a Kubernetes object: {d}"
        );
    }
    docs
}

/// Failure contract: non-zero, not one byte on stdout, a message on stderr.
fn assert_refused(out: &Out, needle: &str) {
    assert_ne!(out.code, 0, "expected failure, got exit 0\nstdout:\n{}", out.stdout);
    assert!(out.stdout.is_empty(), "stdout must be empty on failure, got:\n{}", out.stdout);
    assert!(out.stderr.contains("error:") && out.stderr.contains(needle), "stderr lacks `{needle}`:\n{}", out.stderr);
}

#[test]
fn argocd_generate_good_bundle_emits_only_valid_objects() {
    let ex = Example::new();
    let out = cmp(&source(&ex), &["generate"], &[]);
    let objs = objects(&out);
    assert_eq!(objs.len(), 1);
    let isvc = &objs[0];
    assert_eq!(isvc["kind"], "InferenceService");
    assert_eq!(isvc["metadata"]["namespace"], "ai-lab");
    crate::render::assert_valid_isvc(isvc);
    let digest = ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]
        ["releaseDigest"]
        .clone();
    assert_eq!(isvc["spec"]["predictor"]["annotations"]["bundlegate.dev/release-digest"], digest);
    // KServe copies InferenceService annotations into the predictor pods, so
    // the Git revision must not be there (a docs commit would roll pods).
    assert!(!out.stdout.contains(REVISION), "{}", out.stdout);
    // `--path` is equivalent to running in the source path.
    let via_flag = cmp(ex.path(), &["generate", "--path", source(&ex).to_str().unwrap()], &[]);
    assert_eq!(via_flag.stdout, out.stdout);
}

#[test]
fn argocd_generate_bad_bundles_print_nothing_on_stdout() {
    // Broken YAML: the message points at the file Argo's user knows.
    let ex = Example::new();
    std::fs::write(ex.v2(), "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata: [\n").unwrap();
    assert_refused(&cmp(&source(&ex), &["generate"], &[]), "llm-scratch/v2/release.yaml");

    // No bundle at all.
    let empty = tempfile::tempdir().unwrap();
    assert_refused(&cmp(empty.path(), &["generate"], &[]), "release.yaml");

    // Schema error (unknown field).
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.serving.replicaz") = 2.into());
    assert_refused(&cmp(&source(&ex), &["generate"], &[]), "replicaz");

    // A template that renders nothing: never an empty stream with exit 0.
    let ex = Example::new();
    let tpl = source(&ex).join("tpl");
    std::fs::create_dir_all(&tpl).unwrap();
    std::fs::write(tpl.join("kserve-custom.yaml.hbs"), "{{!-- nothing --}}\n").unwrap();
    assert_refused(&cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", "tpl")]), "no Kubernetes objects");
}

#[test]
fn argocd_generate_refuses_lint_errors_unless_disabled() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.runtime.image") = "registry.example.com/ai-lab/llm-serve:latest".into());
    let out = cmp(&source(&ex), &["generate"], &[]);
    assert_refused(&out, "BG001");
    assert!(out.stderr.contains("lint=\"false\""), "the message says how to opt out:\n{}", out.stderr);
    assert!(out.stderr.contains("llm-scratch/v2/release.yaml:"), "diagnostics carry file:line:\n{}", out.stderr);

    let off = cmp(&source(&ex), &["generate"], &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"lint","string":"false"}]"#)]);
    let objs = objects(&off);
    assert_eq!(objs[0]["spec"]["predictor"]["containers"][0]["image"], "registry.example.com/ai-lab/llm-serve:latest");
}

#[test]
fn argocd_generate_reads_severities_from_the_sidecar_config() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.runtime.image") = "registry.example.com/ai-lab/llm-serve:latest".into());
    let cfg_dir = tempfile::tempdir().unwrap();
    let cfg = cfg_dir.path().join("bundlegate.yaml");
    std::fs::write(&cfg, "severity:\n  BG001: warn\n").unwrap();
    let cfg_s = cfg.to_str().unwrap();

    // The flag (as plugin.yaml's generate.args would pass it)…
    let flag = cmp(&source(&ex), &["generate", "--config", cfg_s], &[]);
    assert_eq!(
        objects(&flag)[0]["spec"]["predictor"]["containers"][0]["image"],
        "registry.example.com/ai-lab/llm-serve:latest"
    );
    assert!(flag.stderr.contains("BG001"), "a relaxed error is still shown as a warning:\n{}", flag.stderr);
    // …or the sidecar's environment.
    let env = cmp(&source(&ex), &["generate"], &[("BUNDLEGATE_CONFIG", cfg_s)]);
    objects(&env);
    // The flag wins over the environment.
    let deny = cfg_dir.path().join("deny.yaml");
    std::fs::write(&deny, "severity:\n  BG001: deny\n").unwrap();
    assert_refused(
        &cmp(&source(&ex), &["generate", "--config", deny.to_str().unwrap()], &[("BUNDLEGATE_CONFIG", cfg_s)]),
        "BG001",
    );
    // A broken config refuses the render, naming the file and field.
    std::fs::write(&deny, "severity:\n  BG001: sometimes\n").unwrap();
    assert_refused(&cmp(&source(&ex), &["generate", "--config", deny.to_str().unwrap()], &[]), "deny.yaml");
}

#[test]
fn argocd_parameters_override_values() {
    let ex = Example::new();
    let json_params = r#"[{"name":"namespace","string":"staging"},{"name":"replicas","string":"2"}]"#;
    let objs = objects(&cmp(&source(&ex), &["generate"], &[("ARGOCD_APP_PARAMETERS", json_params)]));
    assert_eq!(objs[0]["metadata"]["namespace"], "staging");
    assert_eq!(objs[0]["spec"]["predictor"]["minReplicas"], 2);
    assert_eq!(objs[0]["spec"]["predictor"]["maxReplicas"], 2);
    crate::render::assert_valid_isvc(&objs[0]);

    // PARAM_<NAME> alone (what a plugin script would read).
    let objs = objects(&cmp(&source(&ex), &["generate"], &[("PARAM_NAMESPACE", "canary"), ("PARAM_REPLICAS", "3")]));
    assert_eq!(objs[0]["metadata"]["namespace"], "canary");
    assert_eq!(objs[0]["spec"]["predictor"]["minReplicas"], 3);

    // Plugin env from the Application (`plugin.env`) is the lowest source.
    let objs =
        objects(&cmp(&source(&ex), &["generate"], &[("ARGOCD_ENV_NAMESPACE", "from-env"), ("PARAM_REPLICAS", "4")]));
    assert_eq!(objs[0]["metadata"]["namespace"], "from-env");

    // Both sent: the JSON list is the structured source and wins.
    let objs = objects(&cmp(
        &source(&ex),
        &["generate"],
        &[("ARGOCD_APP_PARAMETERS", json_params), ("PARAM_NAMESPACE", "canary")],
    ));
    assert_eq!(objs[0]["metadata"]["namespace"], "staging");

    // The bundle parameter picks another file, relative to the source path.
    let parent = ex.path().join("llm-scratch");
    let objs = objects(&cmp(&parent, &["generate"], &[("PARAM_BUNDLE", "v1/release.yaml")]));
    assert_eq!(objs[0]["metadata"]["labels"]["bundlegate.dev/release-version"], "v1");

    // Invalid values are refused, not ignored.
    assert_refused(&cmp(&source(&ex), &["generate"], &[("PARAM_REPLICAS", "two")]), "replicas");
    assert_refused(&cmp(&source(&ex), &["generate"], &[("PARAM_NAMESPACE", "Not_A_Namespace")]), "namespace");
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"replica","string":"2"}]"#)]),
        "unknown plugin parameter `replica`",
    );
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"replicas","array":["2"]}]"#)]),
        "must be a string",
    );
}

#[test]
fn argocd_defaults_apply_when_argo_sends_none() {
    let ex = Example::new();
    // Argo sends cleared fields as "" and never sends announced defaults.
    let objs = objects(&cmp(
        &source(&ex),
        &["generate"],
        &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"namespace","string":""}]"#)],
    ));
    let isvc = &objs[0];
    let ann = cmp(&source(&ex), &["parameters"], &[]);
    assert_eq!(ann.code, 0, "{}", ann.stderr);
    let ann: Value = serde_json::from_str(&ann.stdout).unwrap();
    let default = |n: &str| {
        ann.as_array().unwrap().iter().find(|p| p["name"] == n).unwrap()["string"].as_str().unwrap().to_string()
    };
    // What the UI announces is exactly what generate applied.
    assert_eq!(default("namespace"), isvc["metadata"]["namespace"].as_str().unwrap());
    assert_eq!(default("replicas"), isvc["spec"]["predictor"]["minReplicas"].to_string());
    assert_eq!(default("bundle"), "release.yaml");
    assert_eq!(default("lint"), "true");
    assert_eq!(default("templates"), "");
}

#[test]
fn argocd_parameter_announcement_shape() {
    let ex = Example::new();
    let out = cmp(&source(&ex), &["parameters"], &[]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ann: Value = serde_json::from_str(&out.stdout).expect("announcement is JSON");
    let names: Vec<&str> = ann.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bundle", "namespace", "replicas", "templates", "lint"]);
    for p in ann.as_array().unwrap() {
        assert_eq!(p["collectionType"], "string");
        assert!(
            p["title"].as_str().is_some_and(|t| !t.is_empty()) && p["tooltip"].as_str().is_some_and(|t| !t.is_empty())
        );
    }
    // Without a bundle the announcement still works (the UI must not break).
    let empty = tempfile::tempdir().unwrap();
    let out = cmp(empty.path(), &["parameters"], &[]);
    assert_eq!(out.code, 0);
    let ann: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(ann[1]["name"], "namespace");
    assert_eq!(ann[1]["string"], "");
}

#[test]
fn argocd_templates_must_stay_inside_the_source_path() {
    let ex = Example::new();
    // Outside: a sibling of the source path.
    let outside = ex.path().join("tpl");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(
        outside.join("kserve-custom.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n",
    )
    .unwrap();
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", "../tpl")]),
        "inside the application's source path",
    );
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", outside.to_str().unwrap())]),
        "inside the application's source path",
    );
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("PARAM_BUNDLE", "../v1/release.yaml")]),
        "inside the application's source path",
    );
    // A symlink inside the source path that leads out is refused too.
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, source(&ex).join("link")).unwrap();
        assert_refused(
            &cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", "link")]),
            "outside the application's source path",
        );
    }
    // Inside: used.
    let inside = source(&ex).join("tpl");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(
        inside.join("kserve-custom.yaml.hbs"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{name}}\n  namespace: {{namespace}}\n",
    )
    .unwrap();
    let objs = objects(&cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", "tpl")]));
    assert_eq!(objs[0]["kind"], "ConfigMap");
    assert_eq!(objs[0]["metadata"]["annotations"]["bundlegate.dev/git-revision"], REVISION);
}

#[test]
fn argocd_revision_annotation_never_touches_the_pod_template() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.serving.format") = "deployment".into());
    let a = objects(&cmp(&source(&ex), &["generate"], &[]));
    let b = objects(&cmp(
        &source(&ex),
        &["generate"],
        &[("ARGOCD_APP_REVISION", "0000000000000000000000000000000000000000")],
    ));
    let dep = a.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(dep["metadata"]["annotations"]["bundlegate.dev/git-revision"], REVISION);
    assert!(dep["spec"]["template"]["metadata"]["annotations"].get("bundlegate.dev/git-revision").is_none());
    // Another commit with the same bundle: identical pod template, no roll.
    let dep_b = b.iter().find(|o| o["kind"] == "Deployment").unwrap();
    assert_eq!(dep["spec"]["template"], dep_b["spec"]["template"]);
    assert_ne!(dep["metadata"]["annotations"], dep_b["metadata"]["annotations"]);
}

#[test]
fn argocd_discover_positive_and_negative() {
    let ex = Example::new();
    let yes = cmp(&source(&ex), &["discover"], &[]);
    assert_eq!((yes.code, yes.stdout.as_str()), (0, "release.yaml\n"), "{}", yes.stderr);

    // Argo's find.command: empty stdout = no match; exit stays 0 because a
    // non-zero exit is reported as a discovery error.
    let empty = tempfile::tempdir().unwrap();
    let no = cmp(empty.path(), &["discover"], &[]);
    assert_eq!((no.code, no.stdout.as_str()), (0, ""), "{}", no.stderr);

    // A file that is merely named release.yaml is not ours.
    std::fs::write(empty.path().join("release.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
        .unwrap();
    let other = cmp(empty.path(), &["discover"], &[]);
    assert_eq!((other.code, other.stdout.as_str()), (0, ""));

    // A broken bundle still matches, so generate can say what is wrong.
    std::fs::write(ex.v2(), "apiVersion: bundlegate.dev/v1\nkind: ReleaseBundle\nmetadata: [\n").unwrap();
    assert_eq!(cmp(&source(&ex), &["discover"], &[]).stdout, "release.yaml\n");
}

// ---------- the shipped argo/ manifests ----------

fn argo_file(rel: &str) -> String {
    std::fs::read_to_string(repo().join("argo").join(rel)).unwrap_or_else(|e| panic!("argo/{rel}: {e}"))
}

fn yaml_docs(text: &str) -> Vec<Value> {
    serde_yaml_ng::Deserializer::from_str(text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

#[test]
fn argocd_application_example_validates_against_the_crd() {
    let p = repo().join("tests/fixtures/reference/argocd/application-crd.yaml");
    let crd: Value =
        serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
            .unwrap();
    let schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
    let v = jsonschema::validator_for(&schema).expect("CRD schema compiles");
    let app = &yaml_docs(&argo_file("application-example.yaml"))[0];
    let errors: Vec<String> = v.iter_errors(app).map(|e| format!("{} at {}", e, e.instance_path)).collect();
    assert!(errors.is_empty(), "application-example.yaml violates the Application CRD:\n{}", errors.join("\n"));
    assert_eq!(app["spec"]["source"]["plugin"]["name"], "bundlegate");
    // Every parameter it sets is one the plugin knows.
    let ann: Value = serde_json::from_str(&cmp(&repo(), &["parameters"], &[]).stdout).unwrap();
    for p in app["spec"]["source"]["plugin"]["parameters"].as_array().unwrap() {
        assert!(ann.as_array().unwrap().iter().any(|a| a["name"] == p["name"]), "unknown parameter {p}");
    }
}

#[test]
fn argocd_plugin_and_sidecar_manifests_follow_the_cmp_contract() {
    let plugin = &yaml_docs(&argo_file("plugin.yaml"))[0];
    assert_eq!(plugin["kind"], "ConfigManagementPlugin");
    assert_eq!(plugin["metadata"]["name"], "bundlegate");
    assert!(plugin["spec"].get("version").is_none(), "a version would rename the plugin to bundlegate-<version>");
    assert_eq!(plugin["spec"]["generate"]["command"], json!(["bundlegate", "argocd", "generate"]));
    assert_eq!(plugin["spec"]["discover"]["find"]["command"], json!(["bundlegate", "argocd", "discover"]));
    assert_eq!(plugin["spec"]["parameters"]["dynamic"]["command"], json!(["bundlegate", "argocd", "parameters"]));

    let dep = &yaml_docs(&argo_file("repo-server-patch.yaml"))[0];
    assert_eq!(
        (dep["kind"].as_str(), dep["metadata"]["name"].as_str()),
        (Some("Deployment"), Some("argocd-repo-server"))
    );
    let cm = &yaml_docs(&argo_file("cmp-plugin-configmap.yaml"))[0];
    assert_eq!(
        cm["data"]["plugin.yaml"].as_str().unwrap(),
        argo_file("plugin.yaml"),
        "ConfigMap copy of plugin.yaml drifted"
    );
    let pod = &dep["spec"]["template"]["spec"];
    let side = pod["containers"].as_array().unwrap().iter().find(|c| c["name"] == "bundlegate-cmp").unwrap();
    assert_eq!(side["command"], json!(["/var/run/argocd/argocd-cmp-server"]));
    assert_eq!(side["securityContext"]["runAsNonRoot"], true);
    assert_eq!(side["securityContext"]["runAsUser"], 999);
    assert!(side["env"].as_array().unwrap().iter().any(|e| e["name"] == "ARGOCD_EXEC_TIMEOUT"));
    let mounts = side["volumeMounts"].as_array().unwrap();
    let mount = |path: &str| {
        mounts.iter().find(|m| m["mountPath"] == path).unwrap_or_else(|| panic!("no mount at {path}")).clone()
    };
    let volume = |name: &Value| pod["volumes"].as_array().unwrap().iter().find(|v| &v["name"] == name).unwrap().clone();
    let cfg = mount("/home/argocd/cmp-server/config/plugin.yaml");
    assert_eq!(cfg["subPath"], "plugin.yaml");
    assert_eq!(volume(&cfg["name"])["configMap"]["name"], cm["metadata"]["name"]);
    // Its own /tmp, not the repo-server's.
    let tmp = mount("/tmp");
    assert!(volume(&tmp["name"]).get("emptyDir").is_some());
    assert_ne!(tmp["name"], "tmp", "must not share the repo-server's tmp volume");
    mount("/var/run/argocd");
    mount("/home/argocd/cmp-server/plugins");
    // The binary the plugin calls reaches the sidecar's PATH.
    let tools = mount("/custom-tools");
    let init = &pod["initContainers"][0];
    assert!(init["volumeMounts"].as_array().unwrap().iter().any(|m| m["name"] == tools["name"]));
    assert!(side["env"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["name"] == "PATH" && e["value"].as_str().unwrap().contains("/custom-tools")));
}

#[test]
fn argocd_cm_patch_embeds_the_health_script_verbatim() {
    let cm = &yaml_docs(&argo_file("argocd-cm-patch.yaml"))[0];
    assert_eq!(cm["metadata"]["name"], "argocd-cm");
    for (kind, script) in
        [("InferenceService", "inferenceservice.lua"), ("LLMInferenceService", "llminferenceservice.lua")]
    {
        let key = format!("resource.customizations.health.serving.kserve.io_{kind}");
        let embedded = cm["data"][key.as_str()].as_str().unwrap_or_else(|| panic!("no {key}"));
        assert_eq!(
            embedded,
            argo_file(&format!("health/{script}")),
            "argocd-cm-patch.yaml drifted from health/{script}"
        );
    }
}

#[test]
fn argocd_template_file_symlinked_out_of_the_source_is_refused() {
    let ex = Example::new();
    let secret = ex.path().join("outside.hbs");
    std::fs::write(&secret, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leaked-{{name}}\n").unwrap();
    let tpl = source(&ex).join("tpl");
    std::fs::create_dir_all(&tpl).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(&secret, tpl.join("kserve-custom.yaml.hbs")).unwrap();
    let out = cmp(&source(&ex), &["generate"], &[("PARAM_TEMPLATES", "tpl")]);
    assert_refused(&out, "resolves outside");
    assert!(!out.stderr.contains("leaked"), "{}", out.stderr);
}

#[test]
fn argocd_rollback_bundle_outside_the_repository_is_refused() {
    let ex = Example::new();
    // The shipped rollback target `../v1/release.yaml` is inside the repository: fine.
    objects(&cmp(&source(&ex), &["generate"], &[]));
    // A symlink leading out of the checked-out repository is not read.
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::copy(ex.v1(), elsewhere.path().join("release.yaml")).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(elsewhere.path(), source(&ex).join("prev")).unwrap();
    edit_yaml(&ex.v2(), |v| *at(v, "spec.rollback.bundle") = "prev/release.yaml".into());
    assert_refused(&cmp(&source(&ex), &["generate"], &[]), "resolves outside the repository");
    edit_yaml(&ex.v2(), |v| *at(v, "spec.rollback.bundle") = "../../../../../../etc/passwd".into());
    assert_refused(&cmp(&source(&ex), &["generate"], &[]), "outside the repository");
}

/// Argo CD's CMP checkout has no `.git`: the repository root is where
/// `ARGOCD_APP_SOURCE_PATH` says. Lint and the plugin's own refusal used two
/// rules for the rollback target (lint's root was the folder above the
/// bundle's), so a target two folders up inside the repository was refused by
/// one and accepted by the other. Now both resolve it the same way.
#[test]
fn argocd_rollback_target_anywhere_in_the_repository_resolves_without_git() {
    let ex = Example::without_repository();
    let deep = ex.path().join("teams/ml/llm-scratch");
    std::fs::create_dir_all(&deep).unwrap();
    for v in ["v1", "v2"] {
        std::fs::rename(ex.path().join("llm-scratch").join(v), deep.join(v)).unwrap();
    }
    // v1 moves to the repository's top: `../../../../v1/release.yaml` from v2.
    std::fs::rename(deep.join("v1"), ex.path().join("v1")).unwrap();
    let v2 = deep.join("v2");
    edit_yaml(&v2.join("release.yaml"), |v| *at(v, "spec.rollback.bundle") = "../../../../v1/release.yaml".into());
    let env = [("ARGOCD_APP_SOURCE_PATH", "teams/ml/llm-scratch/v2")];
    let objs = objects(&cmp(&v2, &["generate"], &env));
    assert!(!objs.is_empty());
    // One level further is outside the repository for both, lint on or off.
    edit_yaml(&v2.join("release.yaml"), |v| *at(v, "spec.rollback.bundle") = "../../../../../v1/release.yaml".into());
    for lint in ["true", "false"] {
        assert_refused(&cmp(&v2, &["generate"], &[env[0], ("PARAM_LINT", lint)]), "resolves outside the repository");
    }
}

/// `ARGOCD_ENV_REPLICAS=0` rendered `minReplicas: 0`: the parameter skipped
/// the 1..=10000 range of the bundle field it overrides. A key or parameter
/// given twice in ARGOCD_APP_PARAMETERS was last-wins, and a 200 MB
/// `release.yaml` was read whole before being refused.
#[test]
fn argocd_parameters_obey_the_bundle_rules_and_reads_are_bounded() {
    let ex = Example::new();
    for (k, v) in [("ARGOCD_ENV_REPLICAS", "0"), ("PARAM_REPLICAS", "10001"), ("PARAM_REPLICAS", "4294967296")] {
        assert_refused(&cmp(&source(&ex), &["generate"], &[(k, v)]), "out of range 1..=10000");
    }
    let objs = objects(&cmp(&source(&ex), &["generate"], &[("ARGOCD_ENV_REPLICAS", "10000")]));
    assert_eq!(objs[0]["spec"]["predictor"]["minReplicas"], 10000);
    assert_refused(
        &cmp(
            &source(&ex),
            &["generate"],
            &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"replicas","string":"2","string":"0"}]"#)],
        ),
        "duplicate key `string`",
    );
    assert_refused(
        &cmp(
            &source(&ex),
            &["generate"],
            &[("ARGOCD_APP_PARAMETERS", r#"[{"name":"replicas","string":"2"},{"name":"replicas","string":"0"}]"#)],
        ),
        "given twice",
    );
    let big = source(&ex).join("big.yaml");
    std::fs::File::create(&big).unwrap().set_len(200 << 20).unwrap();
    let t0 = std::time::Instant::now();
    assert_refused(
        &cmp(&source(&ex), &["generate"], &[("PARAM_BUNDLE", "big.yaml")]),
        "over the limit of 4194304 bytes (4 MiB) for a bundle file",
    );
    assert!(t0.elapsed() < std::time::Duration::from_secs(5));
}

/// The sidecar's signature policy (`BUNDLEGATE_CONFIG`, the platform's
/// file): under `required` an unsigned or badly signed release renders
/// nothing (exit non-zero, stdout empty), whatever the repository's plugin
/// parameters say; a signed one renders.
#[test]
fn generate_under_a_required_signature_policy_renders_only_a_signed_release() {
    let ex = Example::new();
    let other = tempfile::tempdir().unwrap();
    let (_, other_public) = crate::signing::openssl_keys(other.path());
    let unsigned_policy = crate::signing::policy(other.path(), "required", &other_public);
    let env = |p: &Path| vec![("BUNDLEGATE_CONFIG", p.to_str().unwrap().to_string())];
    let run = |p: &Path, extra: &[(&str, &str)]| {
        let mut all: Vec<(&str, String)> = env(p);
        all.extend(extra.iter().map(|(k, v)| (*k, v.to_string())));
        let refs: Vec<(&str, &str)> = all.iter().map(|(k, v)| (*k, v.as_str())).collect();
        cmp(&source(&ex), &["generate"], &refs)
    };
    let out = run(&unsigned_policy, &[]);
    assert_ne!(out.code, 0);
    assert!(out.stdout.is_empty(), "{}", out.stdout);
    assert!(out.stderr.contains("BG701"), "{}", out.stderr);

    let (keys, _, public, _) = crate::signing::signed_v2(&ex);
    let signed_policy = crate::signing::policy(keys.path(), "required", &public);
    objects(&run(&signed_policy, &[]));
    // Signed by a key the policy does not allow: refused even with lint off.
    let lint_off = [("ARGOCD_APP_PARAMETERS", r#"[{"name":"lint","string":"false"}]"#)];
    let out = run(&unsigned_policy, &lint_off);
    assert_ne!(out.code, 0);
    assert!(out.stdout.is_empty() && out.stderr.contains("BG703"), "{}", out.stderr);
    // A setting changed after signing: release.sig no longer matches.
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    std::fs::write(ex.v2(), text.replacen("maxOutputTokens: 512", "maxOutputTokens: 513", 1)).unwrap();
    let out = run(&signed_policy, &lint_off);
    assert_ne!(out.code, 0);
    assert!(out.stdout.is_empty() && out.stderr.contains("BG707"), "{}", out.stderr);
}
