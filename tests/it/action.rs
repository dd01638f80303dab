//! action.yml run the way the Actions runner runs a composite action
//! (tests/action/run-action.mjs: steps in order, `${{ }}` evaluated by
//! GitHub's own expression evaluator, GITHUB_OUTPUT/STEP_SUMMARY/EVENT_PATH
//! files, a PATH without cargo), with a local HTTP server standing in for the
//! release host (`GITHUB_SERVER_URL`), on a real git repository for a
//! pull_request, a push and a schedule event.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use serde_json::{json, Value};

use crate::support::http::{Reply, Server};
use crate::support::*;

const ACTION_REPO: &str = "acme/bundlegate";

fn node_modules() -> PathBuf {
    if let Some(d) = std::env::var_os("BUNDLEGATE_NODE_TOOLS") {
        return PathBuf::from(d).join("node_modules");
    }
    // scripts/install-test-deps' cache, when the test runs outside scripts/test.
    let cache = std::env::var_os("BUNDLEGATE_CI_CACHE").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/bundlegate-ci"));
    std::fs::read_dir(&cache)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().unwrap().to_string_lossy().starts_with("node-tools-") && p.join("node_modules/@actions/expressions").is_dir())
        .map(|p| p.join("node_modules"))
        .unwrap_or_else(|| panic!("@actions/expressions is not installed: run scripts/install-test-deps (or scripts/test)"))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git").args(args).current_dir(dir).env("GIT_AUTHOR_NAME", "t").env("GIT_AUTHOR_EMAIL", "t@example.com").env("GIT_COMMITTER_NAME", "t").env("GIT_COMMITTER_EMAIL", "t@example.com").output().unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn version() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    toml.lines().find_map(|l| l.strip_prefix("version = \"")).and_then(|r| r.split('"').next()).unwrap().to_string()
}

fn target() -> &'static str {
    if cfg!(target_arch = "aarch64") { "aarch64-unknown-linux-gnu" } else { "x86_64-unknown-linux-gnu" }
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

struct Fixture {
    tmp: tempfile::TempDir,
    /// The release asset as built, and the bytes the host serves.
    asset: Vec<u8>,
    asset_name: String,
    /// Git commits: `base` has the v1 bundle only, `head` adds v2.
    base: String,
    head: String,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let t = tmp.path();
        // The release asset: `bundlegate` at the archive's top level.
        let bin = t.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::copy(crate::support::bin(), bin.join("bundlegate")).unwrap();
        // Release builds carry no debug info; stripping keeps the test's archive small.
        let _ = Command::new("strip").arg("--strip-debug").arg(bin.join("bundlegate")).status();
        let asset_name = format!("bundlegate-{}-{}.tar.gz", version(), target());
        let st = Command::new("tar").arg("-czf").arg(t.join(&asset_name)).arg("-C").arg(&bin).arg("bundlegate").status().unwrap();
        assert!(st.success());
        let asset = std::fs::read(t.join(&asset_name)).unwrap();
        // A test copy of the action with its own SHA256SUMS.
        let action = t.join("action");
        std::fs::create_dir_all(&action).unwrap();
        for f in ["action.yml", "Cargo.toml"] {
            std::fs::copy(repo().join(f), action.join(f)).unwrap();
        }
        copy_dir(&repo().join("pipelines"), &action.join("pipelines"));
        std::fs::write(action.join("SHA256SUMS"), format!("{}  {asset_name}\n", sha256_hex(&asset))).unwrap();
        // The user's repository.
        let ws = t.join("ws");
        copy_dir(&repo().join("examples/llm-scratch"), &ws.join("models/llm-scratch"));
        copy_dir(&repo().join("examples/store"), &ws.join("models/store"));
        let v2 = ws.join("models/llm-scratch/v2/release.yaml");
        let v2_text = std::fs::read(&v2).unwrap();
        std::fs::remove_file(&v2).unwrap();
        git(&ws, &["init", "-q", "-b", "main"]);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "v1"]);
        let base = git(&ws, &["rev-parse", "HEAD"]);
        std::fs::write(&v2, v2_text).unwrap();
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-qm", "release v2"]);
        let head = git(&ws, &["rev-parse", "HEAD"]);
        Fixture { tmp, asset, asset_name, base, head }
    }

    /// Serves `body` as the release asset of this version, 404 for anything else.
    fn host(&self, body: Vec<u8>) -> Server {
        let want = format!("/{ACTION_REPO}/releases/download/v{}/{}", version(), self.asset_name);
        let body = Arc::new(body);
        Server::start_replies(0, Arc::new(move |r| {
            if r.method == "GET" && r.path == want {
                Reply::Raw { status: 200, headers: vec![("content-type".into(), "application/octet-stream".into())], body: body.to_vec() }
            } else {
                Reply::Raw { status: 404, headers: vec![], body: b"Not Found".to_vec() }
            }
        }))
    }

    fn run(&self, host: &Server, event_name: &str, event: Value, sha: &str, inputs: Value) -> Value {
        let t = self.tmp.path();
        let cfg = json!({
            "action_dir": t.join("action"),
            "workspace": t.join("ws"),
            "event_name": event_name,
            "event": event,
            "inputs": inputs,
            // The hosted runner's tools, but no cargo: the action must not compile.
            "path": "/usr/local/bin:/usr/bin:/bin",
            "env": {"HOME": t.join("home")},
            "github": {"repository": "acme/models", "sha": sha, "server_url": host.url(), "action_repository": ACTION_REPO},
        });
        let cfg_path = t.join(format!("{event_name}.json"));
        std::fs::write(&cfg_path, serde_json::to_vec(&cfg).unwrap()).unwrap();
        let o = Command::new("node").arg(repo().join("tests/action/run-action.mjs")).arg(&cfg_path).env("NODE_PATH", node_modules()).output().expect("node");
        assert!(o.status.success(), "emulator failed:\n{}", String::from_utf8_lossy(&o.stderr));
        serde_json::from_slice(&o.stdout).unwrap()
    }
}

fn step<'a>(r: &'a Value, id: &str) -> &'a Value {
    r["steps"].as_array().unwrap().iter().find(|s| s["id"] == id).unwrap_or_else(|| panic!("no step {id} in {r:#}"))
}

fn report(r: &Value) -> Value {
    let p = r["outputs"]["report"].as_str().expect("report output");
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{p}: {e}"))).unwrap()
}

#[test]
fn action_installs_its_release_and_runs_pull_request_push_and_schedule() {
    assert!(Command::new("bash").args(["-c", "PATH=/usr/local/bin:/usr/bin:/bin command -v cargo"]).status().unwrap().code() != Some(0), "the emulated PATH must not have cargo");
    let fx = Fixture::new();
    let host = fx.host(fx.asset.clone());

    // pull_request: base/head from the event; the pipeline lints, renders and verifies v2.
    let pr_event = json!({"pull_request": {"number": 7, "base": {"sha": fx.base}, "head": {"sha": fx.head}}});
    let r = fx.run(&host, "pull_request", pr_event, &fx.head, json!({}));
    let bin = step(&r, "bin");
    assert_eq!(bin["outcome"], "success", "{bin:#}");
    assert!(bin["stdout"].as_str().unwrap().contains(&format!("bundlegate {}", version())), "{bin:#}");
    eprintln!("action: time to a binary {} ms (download + sha256 + extract)", bin["ms"]);
    assert_eq!(r["conclusion"], "success", "{r:#}");
    assert_eq!(r["outputs"]["exit-code"], "0", "{r:#}");
    assert_eq!(r["outputs"]["verdict"], "pass", "{r:#}");
    let digests: Value = serde_json::from_str(r["outputs"]["release-digests"].as_str().unwrap()).unwrap();
    let (path, d) = digests.as_object().unwrap().iter().next().expect("one digest");
    assert!(path.ends_with("models/llm-scratch/v2/release.yaml") && d.as_str().unwrap().starts_with("sha256:"), "{digests}");
    let rep = report(&r);
    assert_eq!(rep["steps"][0]["target"], format!("{}..{}", fx.base, fx.head), "{rep:#}");
    assert!(rep["steps"].as_array().unwrap().iter().any(|s| s["step"] == "verify" && s["verdict"] == "pass"), "{rep:#}");
    assert!(!r["summary"].as_str().unwrap().is_empty(), "the comment step writes the job summary");

    // A pull request touching no release bundle: nothing to check, and the
    // required check passes saying so instead of failing INCONCLUSIVE.
    let none = json!({"pull_request": {"number": 8, "base": {"sha": fx.head}, "head": {"sha": fx.head}}});
    let r = fx.run(&host, "pull_request", none, &fx.head, json!({}));
    assert_eq!(r["conclusion"], "success", "{r:#}");
    assert_eq!(r["outputs"]["exit-code"], "0", "{r:#}");
    assert_eq!(r["outputs"]["verdict"], "not-run", "{r:#}");
    assert!(step(&r, "run")["stdout"].as_str().unwrap().contains("touches no release bundle"), "{r:#}");

    // push (post-merge): base = event.before, head = github.sha. Without a
    // cluster the watch step cannot finish; outputs are set all the same.
    let r = fx.run(&host, "push", json!({"before": fx.base, "after": fx.head}), &fx.head, json!({"fail-on": "never", "args": "--help-not-a-flag"}));
    let run = step(&r, "run");
    assert_eq!(r["outputs"]["exit-code"], "2", "an unknown flag is a usage error: {run:#}");
    let r = fx.run(&host, "push", json!({"before": fx.base, "after": fx.head}), &fx.head, json!({"fail-on": "never"}));
    let rep = report(&r);
    assert_eq!(rep["command"], "run post-merge", "{rep:#}");
    assert_eq!(rep["steps"][0]["target"], format!("{}..{}", fx.base, fx.head), "{rep:#}");
    assert_eq!(r["outputs"]["verdict"], rep["verdict"], "{r:#}");
    assert!(!r["outputs"]["exit-code"].as_str().unwrap().is_empty());
    assert!(r["outputs"]["release-digests"].as_str().unwrap().contains("v2/release.yaml"), "{r:#}");

    // schedule: the whole-tree drift audit, with its cache in the given folder.
    let cache = fx.tmp.path().join("audit-cache");
    let r = fx.run(&host, "schedule", json!({"schedule": "17 3 * * *"}), &fx.head, json!({"cache-dir": cache}));
    assert_eq!(r["conclusion"], "success", "{r:#}");
    let rep = report(&r);
    assert_eq!(rep["command"], "run drift-audit", "{rep:#}");
    let audited: Vec<&str> = rep["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "audit").map(|s| s["target"].as_str().unwrap()).collect();
    assert_eq!(audited.len(), 2, "v1 and v2 audited: {rep:#}");
    assert_eq!(r["outputs"]["verdict"], "pass");
    let cached: Vec<_> = std::fs::read_dir(cache.join("bundlegate")).expect("audit cache under cache-dir").collect();
    assert_eq!(cached.len(), 1, "one audit cache file");
}

#[test]
fn action_refuses_a_tampered_asset_and_a_version_without_sums() {
    let fx = Fixture::new();
    let mut bad = fx.asset.clone();
    let n = bad.len();
    bad[n / 2] ^= 0xff;
    let host = fx.host(bad);
    let pr_event = json!({"pull_request": {"number": 7, "base": {"sha": fx.base}, "head": {"sha": fx.head}}});
    let r = fx.run(&host, "pull_request", pr_event.clone(), &fx.head, json!({}));
    let bin = step(&r, "bin");
    assert_eq!(bin["outcome"], "failure", "{bin:#}");
    assert!(bin["stdout"].as_str().unwrap().contains("refusing to run it"), "{bin:#}");
    assert_eq!(step(&r, "run")["outcome"], "skipped", "nothing runs after a refused download");
    assert_eq!(r["conclusion"], "failure");

    // No entry for this version in the action's SHA256SUMS: a clear failure, no fallback.
    let good = fx.host(fx.asset.clone());
    std::fs::write(fx.tmp.path().join("action/SHA256SUMS"), "").unwrap();
    let r = fx.run(&good, "pull_request", pr_event, &fx.head, json!({}));
    let bin = step(&r, "bin");
    assert_eq!(bin["outcome"], "failure", "{bin:#}");
    assert!(bin["stdout"].as_str().unwrap().contains("has no sha256 for"), "{bin:#}");
}

// ---------------------------------------------------------------------------
// deploy/: the in-cluster drift audit, validated against the Kubernetes schema

/// Kubernetes swagger definitions as JSON Schema, strict like `kubectl
/// apply --validate=strict`: an unknown field is an error.
fn k8s_schema_for(api_version: &str, kind: &str) -> Value {
    let p = repo().join("tests/fixtures/reference/kubernetes/definitions.trimmed.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let defs = doc["definitions"].as_object_mut().unwrap();
    let name = defs
        .iter()
        .find(|(_, d)| d["x-kubernetes-group-version-kind"].as_array().into_iter().flatten().any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind))
        .map(|(n, _)| n.clone())
        .unwrap_or_else(|| panic!("no definition for {api_version} {kind} in {}", p.display()));
    for d in defs.values_mut() {
        if d.get("properties").is_some() && d.get("additionalProperties").is_none() {
            d["additionalProperties"] = json!(false);
        }
    }
    json!({"$ref": format!("#/definitions/{name}"), "definitions": doc["definitions"]})
}

fn k8s_errors(obj: &Value) -> Vec<String> {
    let schema = k8s_schema_for(obj["apiVersion"].as_str().unwrap(), obj["kind"].as_str().unwrap());
    let v = jsonschema::options().with_draft(jsonschema::Draft::Draft4).build(&schema).expect("schema compiles");
    v.iter_errors(obj).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

fn deploy_docs() -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("deploy/drift-audit-cronjob.yaml")).unwrap();
    serde_yaml_ng::Deserializer::from_str(&text).map(|d| serde::Deserialize::deserialize(d).unwrap()).filter(|v: &Value| !v.is_null()).collect()
}

#[test]
fn deploy_drift_audit_cronjob_validates_and_is_read_only() {
    let docs = deploy_docs();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    for k in ["CronJob", "ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"] {
        assert!(kinds.contains(&k), "deploy/ has a {k}: {kinds:?}");
    }
    for d in &docs {
        let errs = k8s_errors(d);
        assert!(errs.is_empty(), "{} {} violates the Kubernetes schema:\n{}", d["kind"], d["metadata"]["name"], errs.join("\n"));
    }
    // The validator is not vacuous: a misspelt field and a wrong type are caught.
    let mut cj = docs.iter().find(|d| d["kind"] == "CronJob").unwrap().clone();
    cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    assert!(!k8s_errors(&cj).is_empty(), "unknown field must be rejected");
    let mut cj2 = docs.iter().find(|d| d["kind"] == "CronJob").unwrap().clone();
    cj2["spec"]["concurrencyPolicy"] = json!(3);
    assert!(!k8s_errors(&cj2).is_empty(), "wrong type must be rejected");

    // Read-only: no write verb anywhere, no Secret access through the API.
    for role in docs.iter().filter(|d| d["kind"] == "Role" || d["kind"] == "ClusterRole") {
        for rule in role["rules"].as_array().unwrap() {
            for verb in rule["verbs"].as_array().unwrap() {
                assert!(["get", "list", "watch"].contains(&verb.as_str().unwrap()), "write verb {verb} in {}", role["metadata"]["name"]);
            }
            assert!(!rule["resources"].as_array().unwrap().iter().any(|r| r == "secrets"), "the audit reads no Secrets through the API");
        }
    }
    // Credentials come from a Secret, never inline; the audit runs as non-root from the published image.
    let pod = &docs.iter().find(|d| d["kind"] == "CronJob").unwrap()["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert!(c["envFrom"][0]["secretRef"]["name"].is_string());
    assert!(!serde_json::to_string(c).unwrap().contains("AWS_SECRET_ACCESS_KEY"), "no inline credentials");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert!(c["image"].as_str().unwrap().starts_with("ghcr.io/bundlegate/bundlegate:"));
    assert_eq!(c["args"][0], "audit", "the container runs the drift audit");
    // Every flag it passes is one `bundlegate audit` accepts.
    let help = run(&["audit", "--help"]).stdout;
    for a in c["args"].as_array().unwrap().iter().filter_map(Value::as_str).filter(|a| a.starts_with("--")) {
        assert!(help.contains(a), "`bundlegate audit` has no {a}");
    }
}

#[test]
fn published_image_name_is_the_same_everywhere() {
    // One documented default: the Argo CD patch, the CronJob and the docs agree.
    let want = format!("ghcr.io/bundlegate/bundlegate:{}", version());
    for f in ["argo/repo-server-patch.yaml", "deploy/drift-audit-cronjob.yaml", "docs/argocd.md", "docs/github-action.md"] {
        let text = std::fs::read_to_string(repo().join(f)).unwrap();
        assert!(text.contains(&want), "{f} does not name {want}");
        assert!(!text.contains("sha256:0000000000"), "{f} still has a placeholder digest");
    }
}
