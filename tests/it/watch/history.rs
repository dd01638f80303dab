//! Post-merge truth where the repository or time behaves a little
//! differently: what Argo CD renders is read from the Application's own
//! source (a folder it was pointed at, a `current` link moved, the bundle
//! edited in place), a superseded release is INCONCLUSIVE and never
//! reverted, a hydrated commit on a fetched orphan branch maps to its dry
//! SHA from the hydrator's metadata, pods the kubelet evicts one after
//! another fail the stability window while a graceful replacement does
//! not, and an identity endpoint that alternates between two releases is
//! caught by asking it over the window. Every Application the stand-in
//! serves is validated against the Argo CD CRD.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::support::http::{Handler, Server};
use crate::support::kube::Frame;
use crate::support::run_in;
use crate::support::step;
use crate::watch::{
    application, application_errors, done_deployment, evicted, findings, gh_env, git, identity_ok, merged_with,
    objects, pod, run_watch, synced, CrashloopMerge, ModelService, PodSpec, Workspace, BUNDLE, NAME, NEW_POD, OLD,
    V2_URI,
};

/// An Application synced to `rev`, its last operation for `rev` too.
fn synced_to(rev: &str) -> Value {
    let mut app = application(rev, "Succeeded", "Healthy", "2026-01-01T10:05:01Z");
    app["status"]["operationState"]["syncResult"]["revision"] = json!(rev);
    app["status"]["operationState"]["operation"]["sync"]["revision"] = json!(rev);
    app
}

fn checked(app: Value) -> Value {
    let errors = application_errors(&app);
    assert!(errors.is_empty(), "the Application must be valid: {errors:#?}");
    app
}

/// The finished rollout of the release `d`.
fn running(d: &str) -> Vec<Value> {
    objects(d, done_deployment(), vec![pod(PodSpec::ready(NEW_POD, d, V2_URI))], vec![])
}

fn commit(ws: &Workspace, msg: &str) -> String {
    let p = ws.path();
    git(p, &["add", "-A"]);
    git(p, &["commit", "-q", "-m", msg]);
    git(p, &["rev-parse", "HEAD"])
}

/// A copy of the bundle as another release (one more replica).
fn another_release(ws: &Workspace, at: &str) {
    let p = ws.path();
    let text = std::fs::read_to_string(p.join(BUNDLE)).unwrap();
    std::fs::create_dir_all(p.join(at).parent().unwrap()).unwrap();
    std::fs::write(p.join(at), text.replacen("replicas: 1", "replicas: 2", 1)).unwrap();
}

fn back_to_merge(ws: &Workspace) {
    git(ws.path(), &["checkout", "-q", "--detach", &ws.sha]);
}

#[test]
fn an_application_pointed_at_another_folder_is_not_this_release_deployed() {
    let ws = Workspace::new();
    git(ws.path(), &["checkout", "-q", "main"]);
    another_release(&ws, "llm-scratch/v3/release.yaml");
    let later = commit(&ws, "llm-scratch v3");
    back_to_merge(&ws);
    // The watched file is unchanged at `later`; the Application renders v3.
    let mut app = synced_to(&later);
    app["spec"]["source"]["path"] = json!("llm-scratch/v3");
    let frames = vec![Frame { at_ms: 0, app: Some(checked(app)), objects: running(&ws.digest) }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "3s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert_eq!(step(&v, "argo")["verdict"], "inconclusive", "{v:#}");
    let why = findings(&v, "argo", "BG510");
    assert!(why.contains("llm-scratch/v3/release.yaml is release sha256:"), "{why}");
    assert_eq!(step(&v, "rollout")["verdict"], "not-run", "{v:#}");
}

#[test]
fn a_current_link_decides_what_is_deployed_and_moving_it_supersedes() {
    let ws = Workspace::new();
    let p = ws.path();
    git(p, &["checkout", "-q", "main"]);
    std::os::unix::fs::symlink("v2", p.join("llm-scratch/current")).unwrap();
    let linked = commit(&ws, "llm-scratch: current -> v2");
    another_release(&ws, "llm-scratch/v3/release.yaml");
    std::fs::remove_file(p.join("llm-scratch/current")).unwrap();
    std::os::unix::fs::symlink("v3", p.join("llm-scratch/current")).unwrap();
    let moved = commit(&ws, "llm-scratch: current -> v3");
    back_to_merge(&ws);
    let at = |rev: &str| {
        let mut app = synced_to(rev);
        app["spec"]["source"]["path"] = json!("llm-scratch/current");
        vec![Frame { at_ms: 0, app: Some(checked(app)), objects: running(&ws.digest) }]
    };
    // Through the link, the later commit still renders this release.
    let (out, _c) = run_watch(&ws, at(&linked), &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains("unchanged"), "{v:#}");
    // The link now names v3: superseded, whatever the watched file says.
    let (out, _c) = run_watch(&ws, at(&moved), &["--timeout", "3s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert!(findings(&v, "argo", "BG510").contains("llm-scratch/v3/release.yaml is release"), "{v:#}");
}

#[test]
fn a_bundle_edited_in_place_supersedes_and_the_plugin_bundle_parameter_is_read() {
    let ws = Workspace::new();
    let p = ws.path();
    git(p, &["checkout", "-q", "main"]);
    // The Application renders `serving.yaml` in the folder (plugin parameter).
    std::fs::copy(p.join(BUNDLE), p.join("llm-scratch/v2/serving.yaml")).unwrap();
    let same = commit(&ws, "serving.yaml: the same release");
    another_release(&ws, "llm-scratch/v2/serving.yaml");
    let edited = commit(&ws, "serving.yaml edited in place");
    back_to_merge(&ws);
    let at = |rev: &str| {
        let mut app = synced_to(rev);
        app["spec"]["source"]["plugin"] =
            json!({"name": "bundlegate", "parameters": [{"name": "bundle", "string": "serving.yaml"}]});
        vec![Frame { at_ms: 0, app: Some(checked(app)), objects: running(&ws.digest) }]
    };
    let (out, _c) = run_watch(&ws, at(&same), &["--timeout", "5s"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let (out, _c) = run_watch(&ws, at(&edited), &["--timeout", "3s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert!(findings(&v, "argo", "BG510").contains("serving.yaml is release"), "{v:#}");
}

/// Argo CD's commit server writes the hydrated manifests to an orphan
/// branch with `hydrator.metadata` at its root; a full fetch brings that
/// commit into the checkout, where it is no descendant of the merge.
#[test]
fn a_hydrated_commit_present_locally_maps_to_its_dry_sha() {
    let ws = Workspace::new();
    let p = ws.path();
    git(p, &["checkout", "-q", "--orphan", "environments/prod"]);
    git(p, &["rm", "-rq", "--cached", "."]);
    std::fs::remove_dir_all(p.join("llm-scratch")).unwrap();
    std::fs::remove_file(p.join("README.md")).unwrap();
    std::fs::create_dir_all(p.join("llm-scratch")).unwrap();
    std::fs::write(p.join("llm-scratch/manifest.yaml"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
        .unwrap();
    std::fs::write(
        p.join("hydrator.metadata"),
        format!("{{\"repoURL\": \"https://github.com/o/r.git\", \"drySha\": \"{}\"}}\n", ws.sha),
    )
    .unwrap();
    let hydrated = commit(&ws, "hydrated from main");
    git(p, &["checkout", "-q", "-f", "--detach", &ws.sha]);
    let mut app = synced_to(&hydrated);
    app["spec"]["sourceHydrator"] = json!({
        "drySource": {"repoURL": "https://github.com/o/r.git", "targetRevision": "main", "path": "llm-scratch/v2"},
        "syncSource": {"targetBranch": "environments/prod", "path": "llm-scratch"}
    });
    app["spec"].as_object_mut().unwrap().remove("source");
    // No status.sourceHydrator: only the commit's own metadata maps it.
    let frames = vec![Frame { at_ms: 0, app: Some(checked(app)), objects: running(&ws.digest) }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains("hydrated from the merge commit"), "{v:#}");
}

/// A later merge replaced this release in place; the service already
/// answers for the later one and the pods run it. Nothing of that is this
/// release's failure: INCONCLUSIVE, every later step NOT RUN, no PR.
#[test]
fn a_superseded_release_with_revert_and_a_service_url_is_inconclusive_and_opens_nothing() {
    let CrashloopMerge { g, gh, w, sha, cluster: _ } = merged_with(|_, _| Vec::new());
    let text = std::fs::read_to_string(w.join("llm-scratch/v2/release.yaml")).unwrap();
    std::fs::write(w.join("llm-scratch/v2/release.yaml"), text.replacen("replicas: 1", "replicas: 2", 1)).unwrap();
    git(&w, &["commit", "-q", "-am", "llm-scratch v2: two replicas"]);
    let later = git(&w, &["rev-parse", "HEAD"]);
    git(&w, &["push", "-q", "origin", "HEAD:main"]);
    git(&w, &["checkout", "-q", "--detach", &sha]);
    let model = ModelService::start(identity_ok(OLD));
    let frames = vec![Frame { at_ms: 0, app: Some(checked(synced_to(&later))), objects: running(OLD) }];
    let cluster = crate::support::kube::Cluster::start(frames, &w);
    let mut env = gh_env(&gh);
    env.push(("KUBECONFIG".into(), cluster.kubeconfig.to_string_lossy().to_string()));
    env.push(("BUNDLEGATE_WATCH_POLL".into(), "150ms".into()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let url = model.url();
    let out = run_in(
        &w,
        &[
            "watch",
            "llm-scratch/v2/release.yaml",
            "--app",
            NAME,
            "--revision",
            &sha,
            "--timeout",
            "3s",
            "--stable-for",
            "1s",
            "--service-url",
            &url,
            "--probe-interval",
            "100ms",
            "--revert",
            "--format",
            "json",
        ],
        &env,
    );
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert_eq!(v["verdict"], "inconclusive", "{v:#}");
    let argo = step(&v, "argo");
    assert_eq!(argo["verdict"], "inconclusive", "{v:#}");
    let summary = argo["summary"].as_str().unwrap();
    assert!(summary.contains(&format!("superseded by {later}")) && summary.contains("is release sha256:"), "{summary}");
    for s in ["rollout", "identity", "downtime"] {
        assert_eq!(step(&v, s)["verdict"], "not-run", "{s}: {v:#}");
        assert!(step(&v, s)["summary"].as_str().unwrap().contains("superseded by"), "{s}: {v:#}");
    }
    assert!(v["steps"].as_array().unwrap().iter().all(|s| s["step"] != "revert"), "{v:#}");
    assert!(gh.pulls().is_empty(), "no revert PR for a superseded release");
    assert!(gh.requests().is_empty(), "GitHub was not even asked: {:?}", gh.requests());
    assert!(g.remote_branch(crate::watch::BRANCH).is_none());
    cluster.assert_read_only();
}

fn new_pod(name: &str, d: &str) -> Value {
    pod(PodSpec::ready(name, d, V2_URI))
}

/// The kubelet evicts the release's pod (ephemeral-storage), the
/// ReplicaSet replaces it with a fresh one (no restarts), which is evicted
/// in turn: no restart count ever grows, and the window must still fail.
#[test]
fn pods_evicted_one_after_another_fail_the_window_naming_pod_and_reason() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let a = NEW_POD;
    let b = "llm-scratch-predictor-6786d546b4-b2b2b";
    let c = "llm-scratch-predictor-6786d546b4-c3c3c";
    let frames = vec![
        Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![new_pod(a, &d)], vec![]),
        },
        Frame {
            at_ms: 700,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![evicted(a, &d, V2_URI), new_pod(b, &d)], vec![]),
        },
        Frame {
            at_ms: 1400,
            app: Some(synced(&ws)),
            objects: objects(
                &d,
                done_deployment(),
                vec![evicted(a, &d, V2_URI), evicted(b, &d, V2_URI), new_pod(c, &d)],
                vec![],
            ),
        },
    ];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "4s", "--stable-for", "3s"]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "fail", "{v:#}");
    let why = findings(&v, "rollout", "BG508");
    assert!(why.contains(&format!("pod {a} of the release ended")) && why.contains("Evicted"), "{why}");
}

/// A node drain: the pod is deleted (terminating) and replaced; nothing
/// ended for a failure, so the window holds.
#[test]
fn a_graceful_replacement_inside_the_window_passes() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let b = "llm-scratch-predictor-6786d546b4-b2b2b";
    let mut deleted = evicted(NEW_POD, &d, V2_URI);
    deleted["status"]["phase"] = json!("Running");
    deleted["status"].as_object_mut().unwrap().remove("reason");
    deleted["status"].as_object_mut().unwrap().remove("message");
    deleted["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 143, "reason": "Error", "startedAt": "2026-01-01T10:05:10Z", "finishedAt": "2026-01-01T10:06:10Z"}});
    deleted["metadata"]["deletionTimestamp"] = json!("2026-01-01T10:06:00Z");
    deleted["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    let frames = vec![
        Frame {
            at_ms: 0,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![new_pod(NEW_POD, &d)], vec![]),
        },
        Frame {
            at_ms: 700,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![deleted, new_pod(b, &d)], vec![]),
        },
        Frame {
            at_ms: 1400,
            app: Some(synced(&ws)),
            objects: objects(&d, done_deployment(), vec![new_pod(b, &d)], vec![]),
        },
    ];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "4s", "--stable-for", "2s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert_eq!(step(&v, "rollout")["verdict"], "pass", "{v:#}");
}

/// The Service's endpoints alternate between this release and an old pod
/// kept in the Service: every other answer names the old release. One
/// request would pass half of the time; asked over the window, it fails.
#[test]
fn an_identity_endpoint_alternating_between_releases_fails_with_the_distribution() {
    let ws = Workspace::new();
    let d = ws.digest.clone();
    let n = Arc::new(AtomicUsize::new(0));
    let (good, bad) = (identity_ok(&d), identity_ok(OLD));
    let h: Handler = Arc::new(move |req| match req.path.as_str() {
        "/health/ready" => (200, json!({"status": "ok"})),
        "/model" => {
            let i = n.fetch_add(1, Ordering::SeqCst);
            (200, if i.is_multiple_of(2) { good.clone() } else { bad.clone() })
        }
        _ => (404, json!({"detail": "Not Found"})),
    });
    let mut server = Server::start(0, h);
    let url = format!("http://127.0.0.1:{}", server.port);
    let frames = vec![Frame { at_ms: 0, app: Some(synced(&ws)), objects: running(&d) }];
    let (out, _c) = run_watch(
        &ws,
        frames,
        &["--timeout", "6s", "--stable-for", "3s", "--service-url", &url, "--probe-interval", "200ms"],
    );
    server.stop();
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    let id = step(&v, "identity");
    assert_eq!(id["verdict"], "fail", "{v:#}");
    assert!(id["data"]["answered"].as_u64().unwrap() >= 2, "{id:#}");
    assert_eq!(id["data"]["overWindow"], true, "{id:#}");
    let why = findings(&v, "identity", "BG502");
    assert!(why.contains("answer(s) over the window were wrong") && why.contains(OLD), "{why}");
}

/// A branch with the revert's name whose head restores something else
/// (pushed over by anyone who can push) is not "already reverting": the
/// second run refuses it, opens nothing and names why.
#[test]
fn a_branch_with_the_revert_name_that_restores_another_file_is_not_taken_as_done() {
    use crate::watch::{pulls::Pulls, run_revert, GitRemote, BRANCH, TOKEN};
    let g = GitRemote::new();
    let gh = Pulls::start(TOKEN);
    let out = run_revert(&g.work(), &gh, &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let first = out.json();
    let branch = step(&first, "revert")["data"]["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with(BRANCH), "{branch}");
    // Someone rewrites the branch: its head no longer restores v1.
    let other = g.clone_to("other");
    git(&other, &["fetch", "-q", "origin", &branch]);
    git(&other, &["checkout", "-q", "FETCH_HEAD"]);
    let p = other.join("llm-scratch/v2/release.yaml");
    std::fs::write(&p, std::fs::read_to_string(&p).unwrap().replacen("replicas: 1", "replicas: 3", 1)).unwrap();
    git(&other, &["commit", "-q", "-am", "not a revert"]);
    git(&other, &["push", "-q", "-f", "origin", &format!("HEAD:refs/heads/{branch}")]);
    let out = run_revert(&g.clone_to("third"), &gh, &[]);
    let v = out.json();
    assert_eq!(out.code, 1, "{v:#}");
    let r = step(&v, "revert");
    assert_eq!(r["verdict"], "inconclusive", "{v:#}");
    assert!(r["summary"].as_str().unwrap().contains("does not restore llm-scratch/v2/release.yaml"), "{r:#}");
    assert_eq!(gh.pulls().len(), 1, "no second PR");
    assert!(gh.requests().iter().all(|(m, _, _)| m != "PATCH" && m != "DELETE"), "{:?}", gh.requests());
    gh.assert_no_violations();
}

/// A multi-source Application: a values repository (`ref` only), a Helm
/// chart that is not bundlegate's, and the bundle folder through a link.
/// Argo CD reports one revision per source (`sync.revisions[]`); the
/// bundle's is read through the link at its revision.
#[test]
fn a_multi_source_application_renders_the_bundle_through_its_folder_link() {
    let ws = Workspace::new();
    let p = ws.path();
    git(p, &["checkout", "-q", "main"]);
    std::os::unix::fs::symlink("v2", p.join("llm-scratch/current")).unwrap();
    let linked = commit(&ws, "llm-scratch: current -> v2");
    back_to_merge(&ws);
    let values = "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a";
    let chart = "1.2.3";
    let mut app = synced_to(&linked);
    let spec = app["spec"].as_object_mut().unwrap();
    spec.remove("source");
    spec.insert(
        "sources".into(),
        json!([
            {"repoURL": "https://github.com/o/values.git", "targetRevision": "main", "ref": "values"},
            {"repoURL": "https://charts.example.com", "chart": "gateway", "targetRevision": chart, "helm": {"valueFiles": ["$values/gateway.yaml"]}},
            {"repoURL": "https://github.com/o/r.git", "targetRevision": "main", "path": "llm-scratch/current", "plugin": {"name": "bundlegate"}}
        ]),
    );
    let status = app["status"].as_object_mut().unwrap();
    let sync = status["sync"].as_object_mut().unwrap();
    sync.remove("revision");
    sync.insert("revisions".into(), json!([values, chart, linked]));
    let op = status["operationState"].as_object_mut().unwrap();
    // The CRD requires `revision`; a multi-source operation leaves it empty.
    op["syncResult"]["revision"] = json!("");
    op["syncResult"]["revisions"] = json!([values, chart, linked]);
    op["operation"]["sync"].as_object_mut().unwrap().remove("revision");
    op["operation"]["sync"]["revisions"] = json!([values, chart, linked]);
    let frames = vec![Frame { at_ms: 0, app: Some(checked(app)), objects: running(&ws.digest) }];
    let (out, _c) = run_watch(&ws, frames, &["--timeout", "5s"]);
    let v = out.json();
    assert_eq!(out.code, 0, "{v:#}");
    assert!(step(&v, "argo")["summary"].as_str().unwrap().contains(&linked), "{v:#}");
}
