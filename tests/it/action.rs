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
    crate::support::node_modules("@actions/expressions").unwrap_or_else(|| {
        panic!("@actions/expressions is not installed: run scripts/install-test-deps (or scripts/test)")
    })
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap();
    assert!(o.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn version() -> String {
    let toml = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    toml.lines().find_map(|l| l.strip_prefix("version = \"")).and_then(|r| r.split('"').next()).unwrap().to_string()
}

fn target() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "aarch64-unknown-linux-gnu"
    } else {
        "x86_64-unknown-linux-gnu"
    }
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
        let st = Command::new("tar")
            .arg("-czf")
            .arg(t.join(&asset_name))
            .arg("-C")
            .arg(&bin)
            .arg("bundlegate")
            .status()
            .unwrap();
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
        Server::start_replies(
            0,
            Arc::new(move |r| {
                if r.method == "GET" && r.path == want {
                    Reply::Raw {
                        status: 200,
                        headers: vec![("content-type".into(), "application/octet-stream".into())],
                        body: body.to_vec(),
                    }
                } else {
                    Reply::Raw { status: 404, headers: vec![], body: b"Not Found".to_vec() }
                }
            }),
        )
    }

    fn run(&self, host: &Server, event_name: &str, event: Value, sha: &str, inputs: Value) -> Value {
        self.run_action(&self.tmp.path().join("action"), ACTION_REPO, host, event_name, event, sha, inputs)
    }

    /// A copy of the test action at `dir` (e.g. the runner's layout).
    fn copy_action(&self, dir: &Path) {
        copy_dir(&self.tmp.path().join("action"), dir);
    }

    /// The action checked out at `action_dir`, with `github.action_repository` = `action_repository`.
    #[allow(clippy::too_many_arguments)]
    fn run_action(
        &self,
        action_dir: &Path,
        action_repository: &str,
        host: &Server,
        event_name: &str,
        event: Value,
        sha: &str,
        inputs: Value,
    ) -> Value {
        let t = self.tmp.path();
        let cfg = json!({
            "action_dir": action_dir,
            "workspace": t.join("ws"),
            "event_name": event_name,
            "event": event,
            "inputs": inputs,
            // The hosted runner's tools, but no cargo: the action must not compile.
            "path": "/usr/local/bin:/usr/bin:/bin",
            "env": {"HOME": t.join("home")},
            "github": {"repository": "acme/models", "sha": sha, "server_url": host.url(), "action_repository": action_repository},
        });
        let cfg_path = t.join(format!("{event_name}.json"));
        std::fs::write(&cfg_path, serde_json::to_vec(&cfg).unwrap()).unwrap();
        let o = Command::new("node")
            .arg(repo().join("tests/action/run-action.mjs"))
            .arg(&cfg_path)
            .env("NODE_PATH", node_modules())
            .output()
            .expect("node");
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
    assert!(
        Command::new("bash")
            .args(["-c", "PATH=/usr/local/bin:/usr/bin:/bin command -v cargo"])
            .status()
            .unwrap()
            .code()
            != Some(0),
        "the emulated PATH must not have cargo"
    );
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
    // The same report as SARIF, for upload-sarif, without a second run.
    let sarif = r["outputs"]["sarif"].as_str().expect("sarif output");
    let sarif: Value = serde_json::from_str(&std::fs::read_to_string(sarif).unwrap()).unwrap();
    assert_eq!(sarif["version"], "2.1.0", "{sarif:#}");
    assert_eq!(sarif["runs"][0]["tool"]["driver"]["name"], "bundlegate");
    let digests: Value = serde_json::from_str(r["outputs"]["release-digests"].as_str().unwrap()).unwrap();
    let (path, d) = digests.as_object().unwrap().iter().next().expect("one digest");
    assert!(
        path.ends_with("models/llm-scratch/v2/release.yaml") && d.as_str().unwrap().starts_with("sha256:"),
        "{digests}"
    );
    let rep = report(&r);
    assert_eq!(rep["steps"][0]["target"], format!("{}..{}", fx.base, fx.head), "{rep:#}");
    assert!(
        rep["steps"].as_array().unwrap().iter().any(|s| s["step"] == "verify" && s["verdict"] == "pass"),
        "{rep:#}"
    );
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
    let r = fx.run(
        &host,
        "push",
        json!({"before": fx.base, "after": fx.head}),
        &fx.head,
        json!({"fail-on": "never", "args": "--help-not-a-flag"}),
    );
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
    let audited: Vec<&str> = rep["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "audit")
        .map(|s| s["target"].as_str().unwrap())
        .collect();
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

#[test]
fn action_finds_its_repository_from_its_path_when_action_repository_is_empty() {
    // The runner does not always set github.action_repository for a
    // composite action's steps (actions/runner#2473). The release then comes
    // from the repository in the runner's checkout path
    // (<work>/_actions/<owner>/<repo>/<ref>), never from GITHUB_REPOSITORY
    // (the workflow's own repository, acme/models here, which has no release).
    let fx = Fixture::new();
    let host = fx.host(fx.asset.clone());
    let pr_event = json!({"pull_request": {"number": 7, "base": {"sha": fx.base}, "head": {"sha": fx.head}}});
    let runner_layout =
        fx.tmp.path().join("runner/_work/_actions/acme/bundlegate/0123456789abcdef0123456789abcdef01234567");
    fx.copy_action(&runner_layout);
    let r = fx.run_action(&runner_layout, "", &host, "pull_request", pr_event.clone(), &fx.head, json!({}));
    let bin = step(&r, "bin");
    assert_eq!(bin["outcome"], "success", "{bin:#}");
    assert!(
        bin["stdout"].as_str().unwrap().contains(&format!("/{ACTION_REPO}/releases/download/v{}/", version())),
        "{bin:#}"
    );
    assert_eq!(r["conclusion"], "success", "{r:#}");
    assert_eq!(r["outputs"]["verdict"], "pass", "{r:#}");

    // Neither source (a local `uses: ./` checkout): a clear failure, no download from the workflow's repository.
    let r = fx.run_action(&fx.tmp.path().join("action"), "", &host, "pull_request", pr_event, &fx.head, json!({}));
    let bin = step(&r, "bin");
    assert_eq!(bin["outcome"], "failure", "{bin:#}");
    let out = bin["stdout"].as_str().unwrap();
    assert!(out.contains("cannot tell which repository this action comes from"), "{bin:#}");
    assert!(!out.contains("downloading") && !out.contains("acme/models"), "no fallback to GITHUB_REPOSITORY: {bin:#}");
    assert_eq!(step(&r, "run")["outcome"], "skipped");
}

// ---------------------------------------------------------------------------
// deploy/: the in-cluster drift audits, every document validated against the Kubernetes schema

// Strict like `kubectl apply --validate=strict`: an unknown field is an error.
use crate::support::schema::k8s_errors;

/// Every YAML document of every file under deploy/, with its file name.
fn deploy_docs() -> Vec<(String, Value)> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join("deploy"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")))
        .collect();
    files.sort();
    assert!(files.len() >= 2, "deploy/ manifests: {files:?}");
    let mut out = Vec::new();
    for f in files {
        let name = format!("deploy/{}", f.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&f).unwrap();
        for d in serde_yaml_ng::Deserializer::from_str(&text) {
            let v: Value = serde::Deserialize::deserialize(d).unwrap_or_else(|e| panic!("{name}: {e}"));
            if !v.is_null() {
                out.push((name.clone(), v));
            }
        }
    }
    out
}

/// The documents of one deploy/ file.
fn in_file<'a>(docs: &'a [(String, Value)], file: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    docs.iter().filter(move |(f, _)| f == file).map(|(_, d)| d)
}

/// The pod spec of a CronJob or Job.
fn pod_spec(d: &Value) -> Option<&Value> {
    match d["kind"].as_str() {
        Some("CronJob") => Some(&d["spec"]["jobTemplate"]["spec"]["template"]["spec"]),
        Some("Job") => Some(&d["spec"]["template"]["spec"]),
        _ => None,
    }
}

#[test]
fn deploy_manifests_validate_and_are_read_only() {
    let docs = deploy_docs();
    // Every document of every file, against the Kubernetes schema.
    for (f, d) in &docs {
        let errs = k8s_errors(d);
        assert!(
            errs.is_empty(),
            "{f}: {} {} violates the Kubernetes schema:\n{}",
            d["kind"],
            d["metadata"]["name"],
            errs.join("\n")
        );
    }
    let kinds: Vec<&str> =
        in_file(&docs, "deploy/drift-audit-cronjob.yaml").map(|d| d["kind"].as_str().unwrap()).collect();
    for k in ["CronJob", "ServiceAccount", "Role", "RoleBinding", "PersistentVolumeClaim"] {
        assert!(kinds.contains(&k), "deploy/drift-audit-cronjob.yaml has a {k}: {kinds:?}");
    }
    // The validator is not vacuous: a misspelt field and a wrong type are caught.
    let mut cj = in_file(&docs, "deploy/drift-audit-cronjob.yaml").find(|d| d["kind"] == "CronJob").unwrap().clone();
    cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = json!("Always");
    assert!(!k8s_errors(&cj).is_empty(), "unknown field must be rejected");
    let mut cj2 = in_file(&docs, "deploy/drift-audit-cronjob.yaml").find(|d| d["kind"] == "CronJob").unwrap().clone();
    cj2["spec"]["concurrencyPolicy"] = json!(3);
    assert!(!k8s_errors(&cj2).is_empty(), "wrong type must be rejected");

    // The files apply side by side: no object defined twice across deploy/
    // (one would silently replace the other), and each file's objects, RBAC
    // aside, share one namespace (so `kubectl apply -f FILE` needs no -n).
    let mut seen = std::collections::BTreeMap::new();
    for (f, d) in &docs {
        let key = (
            d["apiVersion"].as_str().unwrap().to_string(),
            d["kind"].as_str().unwrap().to_string(),
            d["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
            d["metadata"]["name"].as_str().unwrap().to_string(),
        );
        if let Some(other) = seen.insert(key.clone(), f.clone()) {
            panic!("{key:?} is defined in {other} and {f}");
        }
        if !d["kind"].as_str().unwrap().starts_with("Cluster") {
            assert!(
                d["metadata"]["namespace"].is_string(),
                "{f}: {} {} names no namespace",
                d["kind"],
                d["metadata"]["name"]
            );
        }
    }
    let workload_ns: std::collections::BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| {
            !matches!(d["kind"].as_str(), Some("Role" | "RoleBinding" | "ClusterRole" | "ClusterRoleBinding"))
        })
        .map(|(_, d)| d["metadata"]["namespace"].as_str().unwrap())
        .collect();
    assert_eq!(workload_ns.len(), 1, "deploy/ workloads in one namespace: {workload_ns:?}");
    // Credentials are never committed: no Secret object, no placeholder; the
    // file says how to create each Secret it reads.
    for (f, d) in &docs {
        assert_ne!(
            d["kind"], "Secret",
            "{f}: a Secret in deploy/ (create it with kubectl, as the file's comment says)"
        );
        assert!(!serde_json::to_string(d).unwrap().contains("replace-me"), "{f}: placeholder credentials");
    }
    for (f, d) in &docs {
        let Some(pod) = pod_spec(d) else { continue };
        let text = std::fs::read_to_string(repo().join(f)).unwrap();
        for c in
            pod["containers"].as_array().unwrap().iter().chain(pod["initContainers"].as_array().into_iter().flatten())
        {
            let refs = c["envFrom"].as_array().into_iter().flatten().filter_map(|e| e["secretRef"]["name"].as_str());
            let keyrefs = c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| e["valueFrom"]["secretKeyRef"]["name"].as_str());
            for name in refs.chain(keyrefs) {
                assert!(
                    text.contains(&format!("create secret generic {name}")),
                    "{f} reads Secret {name} but does not say how to create it"
                );
            }
        }
        for e in pod["containers"]
            .as_array()
            .unwrap()
            .iter()
            .chain(pod["initContainers"].as_array().into_iter().flatten())
            .flat_map(|c| c["env"].as_array().into_iter().flatten())
        {
            let n = e["name"].as_str().unwrap();
            assert!(
                !(e.get("value").is_some()
                    && ["SECRET", "TOKEN", "PASSWORD", "ACCESS_KEY"].iter().any(|k| n.contains(k))),
                "{f}: inline credential {n}"
            );
        }
        // The ServiceAccount it runs as is defined in the same file.
        let sa = pod["serviceAccountName"]
            .as_str()
            .unwrap_or_else(|| panic!("{f}: {} names no serviceAccountName", d["metadata"]["name"]));
        assert!(
            in_file(&docs, f).any(|o| o["kind"] == "ServiceAccount" && o["metadata"]["name"] == sa),
            "{f}: ServiceAccount {sa} is not defined there"
        );
        // Non-root, from the published image, running a command bundlegate has.
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{f}");
        let c = &pod["containers"][0];
        assert!(c["image"].as_str().unwrap().starts_with("ghcr.io/bundlegate/bundlegate:"), "{f}");
        let args: Vec<&str> = c["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let sub: Vec<&str> = args
            .iter()
            .take_while(|a| !a.starts_with('-'))
            .take(if args[0] == "report" { 2 } else { 1 })
            .copied()
            .collect();
        assert!(matches!(sub.as_slice(), ["audit"] | ["report", "merge"]), "{f}: runs {sub:?}");
        let help = run(&[sub.as_slice(), &["--help"]].concat()).stdout;
        for a in args.iter().filter(|a| a.starts_with("--")) {
            let flag = a.split('=').next().unwrap();
            assert!(help.contains(flag), "{f}: `bundlegate {}` has no {flag}", sub.join(" "));
        }
    }

    // Read-only: no write verb anywhere, no Secret access through the API,
    // and the Role covers exactly what `audit --serving` reads.
    let mut granted = std::collections::BTreeSet::new();
    for (f, role) in docs.iter().filter(|(_, d)| d["kind"] == "Role" || d["kind"] == "ClusterRole") {
        if f == "deploy/preflight-live-rbac.yaml" {
            // Preflight's own grants, read-only too; held against the real
            // API by real_cluster::preflight_agrees_with_the_real_scheduler.
            assert!(
                role["rules"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|r| r["verbs"].as_array().unwrap())
                    .all(|v| v == "get" || v == "list"),
                "{f}: a verb beyond get/list"
            );
            continue;
        }
        for rule in role["rules"].as_array().unwrap() {
            for verb in rule["verbs"].as_array().unwrap() {
                assert!(
                    ["get", "list", "watch"].contains(&verb.as_str().unwrap()),
                    "{f}: write verb {verb} in {}",
                    role["metadata"]["name"]
                );
            }
            for g in rule["apiGroups"].as_array().unwrap() {
                for r in rule["resources"].as_array().unwrap() {
                    granted.insert(format!("{}/{}", g.as_str().unwrap(), r.as_str().unwrap()));
                }
            }
        }
    }
    // What `adapters::kube::cluster_view` lists (LLMInferenceServices for a
    // kserve-llm release only, and the audit serves every format); real_cluster's
    // watch tests run `audit --serving` as this Role against the real RBAC authorizer.
    let want: std::collections::BTreeSet<String> = [
        "/pods",
        "/events",
        "apps/deployments",
        "apps/replicasets",
        "discovery.k8s.io/endpointslices",
        "serving.kserve.io/inferenceservices",
        "serving.kserve.io/llminferenceservices",
        "serving.knative.dev/services",
        "serving.knative.dev/configurations",
        "serving.knative.dev/revisions",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(granted, want, "the audit's Role grants exactly what `audit --serving` lists");
    let cj = in_file(&docs, "deploy/drift-audit-cronjob.yaml").find(|d| d["kind"] == "CronJob").unwrap();
    assert!(
        pod_spec(cj).unwrap()["containers"][0]["args"].as_array().unwrap().iter().any(|a| a == "--serving"),
        "the RBAC is for --serving"
    );

    // The sharded audit: a shard that exits 1 (drift, a failed gate) has
    // given its answer and is never re-run; exit 2 (could not finish) is
    // retried within backoffLimitPerIndex.
    let job = &in_file(&docs, "deploy/audit-sharded.yaml")
        .find(|d| d["kind"] == "CronJob" && d["spec"]["jobTemplate"]["spec"]["completionMode"] == "Indexed")
        .expect("an Indexed Job")["spec"]["jobTemplate"]["spec"];
    assert!(job["backoffLimitPerIndex"].as_i64().unwrap() >= 1, "{job:#}");
    let action_for = |code: i64| {
        job["podFailurePolicy"]["rules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| {
                r["onExitCodes"]["operator"] == "In"
                    && r["onExitCodes"]["values"].as_array().unwrap().iter().any(|v| v == code)
            })
            .map(|r| r["action"].as_str().unwrap())
    };
    assert_eq!(action_for(1), Some("FailIndex"), "{job:#}");
    assert!(matches!(action_for(2), None | Some("Count")), "{job:#}");
}

#[test]
fn published_image_name_is_the_same_everywhere() {
    // One documented default: the Argo CD patch, the CronJob and the docs agree.
    let want = format!("ghcr.io/bundlegate/bundlegate:{}", version());
    for f in [
        "argo/repo-server-patch.yaml",
        "deploy/drift-audit-cronjob.yaml",
        "deploy/audit-sharded.yaml",
        "docs/argocd.md",
        "docs/github-action.md",
    ] {
        let text = std::fs::read_to_string(repo().join(f)).unwrap();
        assert!(text.contains(&want), "{f} does not name {want}");
        assert!(!text.contains("sha256:0000000000"), "{f} still has a placeholder digest");
    }
}
