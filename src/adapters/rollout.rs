//! I/O for `watch` and `revert`: read-only Kubernetes reads (Argo CD
//! Application, Deployments, ReplicaSets, Pods, Events), the service's HTTP
//! endpoints, the revert branch (git2) and the revert pull request.
//!
//! Kubernetes access is strictly GET (list/get): `watch` must never be the
//! thing that changes the cluster it is judging.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use chrono::{DateTime, TimeZone, Utc};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::Api;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::checks::rollout::{
    AppStatus, ConditionInfo, DeploymentInfo, EventInfo, PodInfo, ReplicaSetInfo, ServiceState, KSERVE_LABEL, NAME_LABEL, STORAGE_INITIALIZER,
};
use crate::bundle::ANNOTATION_DIGEST;

/// The repository `locate` opens; callers hand it back to these functions.
pub use git2::Repository;

// ---- Kubernetes ---------------------------------------------------------------------------

fn s(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(Value::as_str).filter(|x| !x.is_empty()).map(String::from)
}

/// The Application's status fields the gate reads (None: not found).
pub(crate) async fn application(client: &kube::Client, ns: &str, name: &str) -> Result<Option<AppStatus>> {
    let gvk = GroupVersionKind::gvk("argoproj.io", "v1alpha1", "Application");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "applications");
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
    let Some(obj) = api.get_opt(name).await.with_context(|| format!("reading Application {ns}/{name}"))? else {
        return Ok(None);
    };
    Ok(Some(app_status(name, &obj.data)))
}

/// Plain status from an Application object's non-metadata fields.
pub(crate) fn app_status(name: &str, data: &Value) -> AppStatus {
    AppStatus {
        name: name.to_string(),
        sync_status: s(data, "/status/sync/status"),
        sync_revision: s(data, "/status/sync/revision"),
        sync_revisions: data
            .pointer("/status/sync/revisions")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
            .unwrap_or_default(),
        health: s(data, "/status/health/status"),
        phase: s(data, "/status/operationState/phase"),
        operation_revision: s(data, "/status/operationState/syncResult/revision")
            .or_else(|| s(data, "/status/operationState/operation/sync/revision")),
        started_at: s(data, "/status/operationState/startedAt"),
        finished_at: s(data, "/status/operationState/finishedAt"),
        message: s(data, "/status/operationState/message"),
    }
}

/// Every page of one list (GET only).
async fn list_all<K>(api: &Api<K>, lp: ListParams, what: &str) -> Result<Vec<K>>
where
    K: kube::Resource + Clone + DeserializeOwned + fmt::Debug,
{
    let mut lp = lp.limit(500);
    let mut out = Vec::new();
    for _ in 0..1000 {
        let page = api.list(&lp).await.with_context(|| format!("listing {what}"))?;
        out.extend(page.items);
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => return Ok(out),
        }
    }
    bail!("listing {what}: more than 1000 pages")
}

/// Both selectors: bundlegate's own label (plain Deployment format, and the
/// predictor labels of the KServe templates) and KServe's ISvc label. Objects
/// matched by both are kept once.
async fn list_service<K>(client: &kube::Client, ns: &str, name: &str, what: &str) -> Result<Vec<K>>
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope> + Clone + DeserializeOwned + fmt::Debug,
    <K as kube::Resource>::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), ns);
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for label in [NAME_LABEL, KSERVE_LABEL] {
        let sel = format!("{label}={name}");
        for o in list_all(&api, ListParams::default().labels(&sel), &format!("{what} in {ns} ({sel})")).await? {
            let key = o.meta().uid.clone().or_else(|| o.meta().name.clone()).unwrap_or_default();
            if seen.insert(key) {
                out.push(o);
            }
        }
    }
    Ok(out)
}

fn conditions(c: Option<&Vec<k8s_openapi::api::apps::v1::DeploymentCondition>>) -> Vec<ConditionInfo> {
    c.map(|v| v.iter().map(|c| ConditionInfo { type_: c.type_.clone(), status: c.status.clone(), reason: c.reason.clone(), message: c.message.clone() }).collect())
        .unwrap_or_default()
}

pub(crate) fn pod_info(p: &Pod) -> PodInfo {
    let meta = &p.metadata;
    let spec = p.spec.as_ref();
    let status = p.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .map(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        .unwrap_or(false);
    let mut restarts = 0u32;
    let mut waiting = Vec::new();
    let mut crash_loop = false;
    let mut verifier = None;
    let all_statuses = status.into_iter().flat_map(|s| s.init_container_statuses.iter().flatten().chain(s.container_statuses.iter().flatten()));
    for cs in all_statuses {
        restarts += cs.restart_count.max(0) as u32;
        if cs.name == crate::checks::rollout::VERIFIER_CONTAINER && verifier.is_none() {
            let term = [cs.state.as_ref(), cs.last_state.as_ref()].into_iter().flatten().filter_map(|st| st.terminated.as_ref());
            verifier = term.filter(|t| t.exit_code != 0).find_map(|t| t.message.clone()).filter(|m| !m.trim().is_empty());
        }
        if let Some(w) = cs.state.as_ref().and_then(|st| st.waiting.as_ref()) {
            let reason = w.reason.clone().unwrap_or_else(|| "Waiting".into());
            if reason == "CrashLoopBackOff" {
                crash_loop = true;
            }
            waiting.push(format!("{}: {reason}{}", cs.name, w.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()));
        }
        if let Some(t) = cs.last_state.as_ref().and_then(|st| st.terminated.as_ref()) {
            if !cs.ready && t.exit_code != 0 {
                waiting.push(format!("{}: last terminated {} (exit {})", cs.name, t.reason.as_deref().unwrap_or("Error"), t.exit_code));
            }
        }
    }
    // KServe's webhook moves the model URI into the storage-initializer's
    // first argument and rewrites the main container's STORAGE_URI to the
    // local mount (/mnt/models, which shows no version): the init container
    // is the only true source.
    let source_uri = spec
        .and_then(|s| s.init_containers.as_ref())
        .and_then(|ics| ics.iter().find(|c| c.name == STORAGE_INITIALIZER))
        .and_then(|c| c.args.as_ref().and_then(|a| a.first().cloned()));
    let storage_env = spec
        .and_then(|s| s.containers.first())
        .and_then(|c| c.env.as_ref())
        .and_then(|env| env.iter().find(|e| e.name == "STORAGE_URI"))
        .and_then(|e| e.value.clone());
    PodInfo {
        name: meta.name.clone().unwrap_or_default(),
        digest: meta.annotations.as_ref().and_then(|a| a.get(ANNOTATION_DIGEST).cloned()),
        phase: status.and_then(|s| s.phase.clone()).unwrap_or_else(|| "Unknown".into()),
        ready,
        terminating: meta.deletion_timestamp.is_some(),
        restarts,
        waiting,
        crash_loop,
        source_uri,
        owner: meta.owner_references.iter().flatten().find(|o| o.kind == "ReplicaSet").map(|o| o.name.clone()),
        storage_env,
        node: spec.and_then(|s| s.node_name.clone()),
        verifier,
    }
}

/// One snapshot of the service: its Deployments, ReplicaSets, Pods and the
/// Events about them.
pub(crate) async fn service_state(client: &kube::Client, ns: &str, name: &str) -> Result<ServiceState> {
    let deps: Vec<Deployment> = list_service(client, ns, name, "deployments").await?;
    let rss: Vec<ReplicaSet> = list_service(client, ns, name, "replicasets").await?;
    let pods: Vec<Pod> = list_service(client, ns, name, "pods").await?;
    let mut st = ServiceState::default();
    for d in &deps {
        let status = d.status.as_ref();
        st.deployments.push(DeploymentInfo {
            name: d.metadata.name.clone().unwrap_or_default(),
            replicas: d.spec.as_ref().and_then(|s| s.replicas),
            updated: status.and_then(|s| s.updated_replicas).unwrap_or(0),
            ready: status.and_then(|s| s.ready_replicas).unwrap_or(0),
            available: status.and_then(|s| s.available_replicas).unwrap_or(0),
            conditions: conditions(status.and_then(|s| s.conditions.as_ref())),
        });
    }
    for r in &rss {
        let digest = r
            .spec
            .as_ref()
            .and_then(|s| s.template.as_ref())
            .and_then(|t| t.metadata.as_ref())
            .and_then(|m| m.annotations.as_ref())
            .and_then(|a| a.get(ANNOTATION_DIGEST).cloned());
        st.replica_sets.push(ReplicaSetInfo {
            name: r.metadata.name.clone().unwrap_or_default(),
            digest,
            replicas: r.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
            ready: r.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
        });
    }
    st.pods = pods.iter().map(pod_info).collect();
    st.pods.sort_by(|a, b| a.name.cmp(&b.name));

    // Events carry no labels; list the namespace's and keep those about our
    // objects (a field selector would take one request per object).
    let names: BTreeSet<(String, String)> = st
        .pods
        .iter()
        .map(|p| ("Pod".to_string(), p.name.clone()))
        .chain(st.replica_sets.iter().map(|r| ("ReplicaSet".to_string(), r.name.clone())))
        .chain(st.deployments.iter().map(|d| ("Deployment".to_string(), d.name.clone())))
        .collect();
    let ev_api: Api<Event> = Api::namespaced(client.clone(), ns);
    let events = list_all(&ev_api, ListParams::default(), &format!("events in {ns}")).await?;
    for e in events {
        let kind = e.involved_object.kind.clone().unwrap_or_default();
        let object = e.involved_object.name.clone().unwrap_or_default();
        if !names.contains(&(kind.clone(), object.clone())) {
            continue;
        }
        st.events.push(EventInfo {
            kind,
            object,
            type_: e.type_.clone().unwrap_or_else(|| "Normal".into()),
            reason: e.reason.clone().unwrap_or_default(),
            message: e.message.clone().unwrap_or_default().split_whitespace().collect::<Vec<_>>().join(" "),
            count: e.count.unwrap_or(1),
        });
    }
    Ok(st)
}

// ---- the service's HTTP endpoints -----------------------------------------------------------

/// `base` + `path` without doubling or dropping the slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// GET a JSON document (the identity endpoint) within `timeout`.
pub(crate) async fn get_json(http: &reqwest::Client, url: &str, timeout: Duration) -> Result<Value> {
    let resp = http.get(url).timeout(timeout).header("accept", "application/json").send().await.with_context(|| format!("GET {url}"))?;
    let status = resp.status();
    if !status.is_success() {
        let text = super::http::text_prefix(resp, super::http::ERROR_TEXT_MAX).await;
        bail!("GET {url}: HTTP {status}: {}", text.chars().take(200).collect::<String>());
    }
    let text = super::http::text_within(resp, super::http::IDENTITY_MAX, &format!("the answer of GET {url}")).await?;
    serde_json::from_str(&text).with_context(|| format!("GET {url}: the answer is not JSON: {}", text.chars().take(200).collect::<String>()))
}

/// One health probe: a 2xx answer within `timeout`.
pub(crate) async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> bool {
    matches!(http.get(url).timeout(timeout).send().await, Ok(r) if r.status().is_success())
}

// ---- git: the revert branch -----------------------------------------------------------------

/// Committer time of `rev` in the repository around `dir` (None when there is
/// no repository or the commit is not in it, e.g. a shallow clone).
pub(crate) fn commit_time(dir: &Path, rev: &str) -> Option<DateTime<Utc>> {
    // `release.yaml` has the parent "", which git2 cannot discover from.
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let r = git2::Repository::discover(dir).ok()?;
    let c = r.revparse_single(rev).ok()?.peel_to_commit().ok()?;
    Utc.timestamp_opt(c.time().seconds(), 0).single()
}

/// The repository and the bundle's path inside it.
pub(crate) fn locate(repo: &Path, file: &Path) -> Result<(git2::Repository, PathBuf)> {
    let r = git2::Repository::open(repo).with_context(|| format!("opening git repository {}", repo.display()))?;
    let wd = r.workdir().ok_or_else(|| anyhow!("{} is a bare repository; revert needs a checkout", repo.display()))?;
    let wd = std::fs::canonicalize(wd).with_context(|| format!("resolving {}", wd.display()))?;
    let f = std::fs::canonicalize(file).with_context(|| format!("resolving {}", file.display()))?;
    let rel = f.strip_prefix(&wd).map_err(|_| anyhow!("{} is not inside the repository {}", file.display(), wd.display()))?.to_path_buf();
    Ok((r, rel))
}

fn blob_at(tree: &git2::Tree<'_>, rel: &Path) -> Option<git2::Oid> {
    tree.get_path(rel).ok().filter(|e| e.kind() == Some(git2::ObjectType::Blob)).map(|e| e.id())
}

/// The newest commit reachable from HEAD that changed `rel`: (sha, message).
pub(crate) fn last_change(r: &git2::Repository, rel: &Path) -> Result<Option<(String, String)>> {
    let mut walk = r.revwalk()?;
    walk.push_head().context("reading HEAD")?;
    walk.simplify_first_parent()?;
    for (i, oid) in walk.enumerate() {
        if i > 100_000 {
            break;
        }
        let c = r.find_commit(oid?)?;
        let here = blob_at(&c.tree()?, rel);
        let before = match c.parent(0) {
            Ok(p) => blob_at(&p.tree()?, rel),
            Err(_) => None,
        };
        if here != before {
            return Ok(Some((c.id().to_string(), c.message().unwrap_or_default().to_string())));
        }
    }
    Ok(None)
}

/// Commit HEAD's tree with `rel` replaced by `content` on the local branch
/// `branch` (forced: it is ours and derived from HEAD). Author and time are
/// fixed (bundlegate, HEAD's commit time), so concurrent runs for the same
/// failure produce the same commit and the push below is idempotent.
pub(crate) fn commit_revert(r: &git2::Repository, rel: &Path, content: &str, branch: &str, message: &str) -> Result<git2::Oid> {
    let head = r.head()?.peel_to_commit().context("HEAD is not a commit")?;
    let blob = r.blob(content.as_bytes())?;
    let mode = head.tree()?.get_path(rel).map(|e| e.filemode()).unwrap_or(0o100644);
    let mode = if mode == 0o100755 { git2::FileMode::BlobExecutable } else { git2::FileMode::Blob };
    let mut b = git2::build::TreeUpdateBuilder::new();
    b.upsert(rel.to_string_lossy().replace('\\', "/"), blob, mode);
    let tree_id = b.create_updated(r, &head.tree()?)?;
    let tree = r.find_tree(tree_id)?;
    let when = git2::Time::new(head.committer().when().seconds(), 0);
    let sig = git2::Signature::new("bundlegate", "bundlegate@users.noreply.github.com", &when)?;
    let oid = r.commit(None, &sig, &sig, message, &tree, &[&head])?;
    r.reference(&format!("refs/heads/{branch}"), oid, true, "bundlegate revert")?;
    Ok(oid)
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PushOutcome {
    /// We created the remote branch.
    Created,
    /// The branch already existed on the remote (another run is reverting);
    /// holds the remote commit.
    AlreadyExists(String),
}

/// Push `refs/heads/<branch>` to `remote`, creating it; an existing remote
/// branch is never overwritten (no force), which is what makes concurrent
/// runs open one PR.
pub(crate) fn push_new_branch(r: &git2::Repository, remote: &str, branch: &str) -> Result<PushOutcome> {
    let refname = format!("refs/heads/{branch}");
    let mut rem = r.find_remote(remote).with_context(|| format!("git remote `{remote}`"))?;
    let url = rem.url().unwrap_or("").to_string();
    match git2_push(&mut rem, &refname) {
        Ok(o) => Ok(o),
        // git2 is built without HTTPS/SSH here: for those remotes use the git
        // CLI, which carries the runner's configured credentials
        // (actions/checkout persists them).
        Err(e) if is_unsupported_transport(&e) => cli_push(r, remote, &refname).with_context(|| format!("pushing {refname} to {url} with the git CLI")),
        Err(e) => Err(e).with_context(|| format!("pushing {refname} to {url}")),
    }
}

fn is_unsupported_transport(e: &anyhow::Error) -> bool {
    let m = format!("{e:#}").to_ascii_lowercase();
    m.contains("unsupported url protocol") || m.contains("unsupported transport")
}

fn git2_push(rem: &mut git2::Remote<'_>, refname: &str) -> Result<PushOutcome> {
    // Look first: an existing branch means someone is already reverting.
    let existing = {
        let conn = rem.connect_auth(git2::Direction::Push, None, None)?;
        let found = conn.list()?.iter().find(|h| h.name() == refname).map(|h| h.oid().to_string());
        found
    };
    if let Some(oid) = existing {
        return Ok(PushOutcome::AlreadyExists(oid));
    }
    let rejected = std::cell::RefCell::new(None::<String>);
    {
        let mut cbs = git2::RemoteCallbacks::new();
        cbs.push_update_reference(|name, status| {
            if let Some(s) = status {
                *rejected.borrow_mut() = Some(format!("{name}: {s}"));
            }
            Ok(())
        });
        let mut opts = git2::PushOptions::new();
        opts.remote_callbacks(cbs);
        // No leading `+`: never force.
        rem.push(&[format!("{refname}:{refname}")], Some(&mut opts))?;
    }
    match rejected.into_inner() {
        // Lost the race between our look and our push.
        Some(_) => Ok(PushOutcome::AlreadyExists(String::new())),
        None => Ok(PushOutcome::Created),
    }
}

fn cli_push(r: &git2::Repository, remote: &str, refname: &str) -> Result<PushOutcome> {
    let dir = r.workdir().unwrap_or(r.path());
    let ls = std::process::Command::new("git").arg("-C").arg(dir).args(["ls-remote", "--heads", remote, refname]).output().context("running git ls-remote")?;
    let out = String::from_utf8_lossy(&ls.stdout);
    if let Some(line) = out.lines().find(|l| l.ends_with(refname)) {
        return Ok(PushOutcome::AlreadyExists(line.split_whitespace().next().unwrap_or("").to_string()));
    }
    let push = std::process::Command::new("git").arg("-C").arg(dir).args(["push", "--porcelain", remote, &format!("{refname}:{refname}")]).output().context("running git push")?;
    if push.status.success() {
        return Ok(PushOutcome::Created);
    }
    let text = String::from_utf8_lossy(&push.stdout).to_string() + &String::from_utf8_lossy(&push.stderr);
    if text.contains("[rejected]") || text.contains("already exists") || text.contains("non-fast-forward") {
        return Ok(PushOutcome::AlreadyExists(String::new()));
    }
    bail!("git push failed: {}", text.trim())
}

/// The work tree of the repository around `dir`, if there is one.
pub(crate) fn checkout_root(dir: &Path) -> Option<PathBuf> {
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    git2::Repository::discover(dir).ok().and_then(|g| g.workdir().map(Path::to_path_buf))
}

/// The remote's default branch (`refs/remotes/<remote>/HEAD`), else `main`.
pub(crate) fn default_base(repo: &Path, remote: &str) -> String {
    git2::Repository::open(repo)
        .ok()
        .and_then(|r| r.find_reference(&format!("refs/remotes/{remote}/HEAD")).ok().and_then(|h| h.symbolic_target().ok().flatten().map(String::from)))
        .and_then(|t| t.rsplit('/').next().map(String::from))
        .unwrap_or_else(|| "main".into())
}

/// Messages of the branch heads a merge commit `sha` merged (its parents
/// after the first); empty for a plain commit or one not in the repository.
pub(crate) fn merged_head_messages(r: &git2::Repository, sha: &str) -> Vec<String> {
    let Ok(c) = git2::Oid::from_str(sha).and_then(|o| r.find_commit(o)) else { return Vec::new() };
    c.parents().skip(1).filter_map(|p| p.message().ok().map(String::from)).collect()
}

/// `owner/repo` from `configured` (GITHUB_REPOSITORY), or from a GitHub remote URL.
pub(crate) fn github_repo(r: &git2::Repository, remote: &str, configured: Option<&str>) -> Option<(String, String)> {
    let from = |s: &str| {
        let s = s.trim().trim_end_matches('/').trim_end_matches(".git");
        let mut parts = s.rsplit(['/', ':']);
        let repo = parts.next()?.to_string();
        let owner = parts.next()?.to_string();
        (!owner.is_empty() && !repo.is_empty()).then_some((owner, repo))
    };
    if let Some(v) = configured {
        if let Some((o, r)) = v.split_once('/') {
            return Some((o.to_string(), r.to_string()));
        }
    }
    let url = r.find_remote(remote).ok()?.url().ok()?.to_string();
    url.contains("github").then(|| from(&url)).flatten()
}

