//! Lint: pure checks over one parsed bundle (plus whether its rollback target
//! resolves, which `adapters::bundle_files::rollback_status` gathers).

use std::collections::HashMap;

use crate::bundle::{self, ArtifactRole, Loaded, Task};
use crate::checks::rollback::{RollbackStatus, Unusable};
use crate::diag::Code;
use crate::diag::{Diagnostic, Overrides, Severity};
use crate::report::StepReport;
use crate::util::is_sha256_hex;

pub(crate) fn image_pinned(image: &str) -> bool {
    match image.rsplit_once("@sha256:") {
        Some((repo, hex)) => !repo.is_empty() && is_sha256_hex(hex),
        None => false,
    }
}

const FLOATING: &[&str] =
    &["latest", "current", "stable", "main", "master", "prod", "production", "head", "live", "default", "new", "tmp"];

/// The last path segment of the storage URI, which must be the version.
pub(crate) fn version_segment(uri: &str) -> Option<&str> {
    let path = uri.split_once("://").map(|(_, r)| r).or_else(|| uri.strip_prefix("file:")).unwrap_or(uri);
    path.trim_end_matches('/').rsplit('/').next().filter(|s| !s.is_empty())
}

/// Seconds `verifyOnStart` adds for this bundle's artifact bytes.
pub(crate) fn verify_budget(b: &bundle::ReleaseBundle) -> f64 {
    let bytes = b.spec.model.artifacts.iter().filter_map(|a| a.size).fold(0u64, u64::saturating_add);
    bundle::verify_seconds(bytes, b.spec.serving.verify_on_start)
}

/// A format that cannot carry the pod verifier as written: say so instead
/// of letting `verifyOnStart` look like protection it is not.
fn verify_on_start_rendered(b: &bundle::ReleaseBundle) -> Option<Diagnostic> {
    crate::bundle::pod_verifier::verifier_unsupported(b).map(|why| {
        crate::checks::render::verifier_not_rendered(b, crate::checks::render::VerifierMissing::Unsupported(why))
    })
}

/// The lint step: the findings under the run's overrides, the verdict they
/// imply and the release they are about.
pub(crate) fn step(l: &Loaded, ov: &Overrides, rb: &RollbackStatus) -> StepReport {
    let mut s = StepReport::new("lint", &l.display);
    s.diagnostics = ov.apply(lint(l, rb));
    s.verdict = s.verdict_from_diagnostics();
    s.summary = format!(
        "{} error(s), {} warning(s); release {} {}",
        s.count(Severity::Error),
        s.count(Severity::Warning),
        l.bundle.metadata.version,
        l.digest
    );
    s.data = crate::checks::info::release_data(l);
    s
}

/// Every lint finding for one bundle, in a stable order (the report's).
pub fn lint(l: &Loaded, rollback: &RollbackStatus) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    runtime_image(l, &mut out);
    storage_prefix(l, &mut out);
    artifacts(l, &mut out);
    task_artifacts(l, &mut out);
    generation(l, &mut out);
    retrieval_and_adapters(l, &mut out);
    verifier(l, &mut out);
    probes(l, &mut out);
    identity(l, &mut out);
    quantities_and_rollout(l, &mut out);
    canary_plan(l, &mut out);
    rollback_target(l, rollback, &mut out);
    reserved_names(l, &mut out);
    out
}

fn diag(l: &Loaded, code: Code, field: &str, msg: String) -> Diagnostic {
    Diagnostic::new(code, msg).at(l.span(field)).field(field)
}

/// The runtime image by digest.
fn runtime_image(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    // Runtime image by digest.
    if !image_pinned(&b.spec.runtime.image) {
        out.push(
            d(
                Code::ImageNotPinned,
                "spec.runtime.image",
                format!("runtime image `{}` is not pinned by digest", b.spec.runtime.image),
            )
            .help("use `repo@sha256:<digest>`; `crane digest` or `docker buildx imagetools inspect` prints it"),
        );
    }
}

/// A supported storage scheme and a versioned prefix that matches metadata.version.
fn storage_prefix(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    // Storage scheme and versioned prefix.
    let uri = &b.spec.model.storage_uri;
    match crate::bundle::storage_uri::parse(uri) {
        Err(why) => out.push(d(Code::StorageSchemeUnsupported, "spec.model.storageUri", why)),
        // A registry reference is pinned by its manifest digest, not by a
        // versioned folder: the prefix rules below do not apply to it.
        Ok(crate::bundle::storage_uri::StorageUri { oci: Some(r), .. }) => {
            if r.digest.is_none() {
                out.push(
                    d(
                        Code::OciReferenceNotPinned,
                        "spec.model.storageUri",
                        format!(
                            "`{uri}` names the model by tag `{}` alone: a tag can be moved to other bytes; pin the manifest digest",
                            r.tag.as_deref().unwrap_or("latest")
                        ),
                    )
                    .help(format!(
                        "use `{}://{}/{}{}@sha256:<manifest digest>` (`oras resolve` or `crane digest` prints it); the digest rules, a tag beside it is a label",
                        uri.split("://").next().unwrap_or("oci"),
                        r.registry,
                        r.repository,
                        r.tag.as_deref().map(|t| format!(":{t}")).unwrap_or_default()
                    )),
                );
            }
            return;
        }
        Ok(_) => {}
    }
    match version_segment(uri) {
        Some(seg)
            if FLOATING.contains(&seg.to_ascii_lowercase().as_str()) || !seg.chars().any(|c| c.is_ascii_digit()) =>
        {
            out.push(
                d(
                    Code::ModelPrefixUnversioned,
                    "spec.model.storageUri",
                    format!("model prefix `{uri}` ends in `{seg}`, which is not a version"),
                )
                .help(format!(
                    "publish to a new prefix per release, e.g. `…/{}/{}/`",
                    b.metadata.name, b.metadata.version
                )),
            );
        }
        None => out.push(d(
            Code::ModelPrefixUnversioned,
            "spec.model.storageUri",
            format!("model prefix `{uri}` has no path"),
        )),
        Some(seg) if seg != b.metadata.version => out.push(d(
            Code::ModelPrefixVersionMismatch,
            "spec.model.storageUri",
            format!("prefix version `{seg}` differs from metadata.version `{}`", b.metadata.version),
        )),
        Some(_) => {}
    }
}

/// Every artifact pinned (sha256 and size), inside the prefix, listed once; weights, tokenizer and chat template present.
fn artifacts(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    // Artifacts.
    let mut seen: HashMap<&str, usize> = HashMap::new();
    if b.spec.model.artifacts.is_empty() {
        out.push(d(Code::ArtifactUnhashed, "spec.model.artifacts", "the bundle lists no artifacts".into()));
    }
    for (i, a) in b.spec.model.artifacts.iter().enumerate() {
        let f = format!("spec.model.artifacts[{i}]");
        if bundle::path_escapes(&a.path) {
            out.push(d(
                Code::ArtifactPathEscapes,
                &format!("{f}.path"),
                format!("artifact path `{}` escapes the versioned prefix", a.path),
            ));
        }
        if let Some(prev) = seen.insert(a.path.as_str(), i) {
            out.push(
                d(
                    Code::ArtifactDuplicatePath,
                    &format!("{f}.path"),
                    format!("artifact path `{}` is listed twice", a.path),
                )
                .evidence(format!("first listed at spec.model.artifacts[{prev}]")),
            );
        }
        match &a.sha256 {
            None => out.push(d(Code::ArtifactUnhashed, &f, format!("artifact `{}` has no sha256", a.path))),
            Some(h) if !is_sha256_hex(h) => out.push(d(
                Code::ArtifactDigestMalformed,
                &format!("{f}.sha256"),
                format!("artifact `{}`: `{h}` is not 64 lowercase hex characters", a.path),
            )),
            _ => {}
        }
        if a.size.is_none() {
            out.push(d(Code::ArtifactUnhashed, &f, format!("artifact `{}` has no size", a.path)));
        }
    }
    let has_role = |r: ArtifactRole| b.spec.model.artifacts.iter().any(|a| a.role == r && a.sha256.is_some());
    if !b.spec.model.artifacts.iter().any(|a| a.role == ArtifactRole::Weights) {
        out.push(d(Code::ArtifactUnhashed, "spec.model.artifacts", "no artifact has role `weights`".into()));
    }
    let needs = task_needs(b.spec.model.task);
    for (needed, role, name) in [
        (needs.tokenizer, ArtifactRole::Tokenizer, "tokenizer"),
        (needs.chat_template, ArtifactRole::ChatTemplate, "chat-template"),
    ] {
        if needed && !has_role(role) {
            out.push(
                d(
                    Code::TokenizerNotPinned,
                    "spec.model.artifacts",
                    format!("no `{name}` artifact with a sha256 in this release"),
                )
                .help(format!("add the {name} file under the versioned prefix with role `{name}`")),
            );
        }
    }
}

/// Generation stop conditions declared where the task generates, and no
/// `generation` block where it does not.
fn generation(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    let task = b.spec.model.task;
    if !task_needs(task).generation {
        // A task that does not generate: a block here is never applied.
        if b.spec.generation.is_some() {
            out.push(
                d(
                    Code::GenerationOnNonGeneratingTask,
                    "spec.generation",
                    format!("a `generation` block on a `{}` model, which does not generate: it is never applied", task.as_str()),
                )
                .help("remove `spec.generation`, or set `spec.model.task` to `chat` or `completion` if the model generates text"),
            );
        }
        return;
    }
    // Generation stop conditions.
    match &b.spec.generation {
        None => out.push(d(
            Code::GenerationConfigIncomplete,
            "spec",
            "no `generation` block: EOS ids, stop strings and max output tokens are undeclared".into(),
        )),
        Some(g) => {
            let mut missing = Vec::new();
            if g.eos_token_ids.is_empty() {
                missing.push("eosTokenIds");
            }
            if g.stop_strings.is_empty() {
                missing.push("stopStrings");
            }
            if g.max_output_tokens.unwrap_or(0) == 0 {
                missing.push("maxOutputTokens");
            }
            if !missing.is_empty() {
                out.push(d(
                    Code::GenerationConfigIncomplete,
                    "spec.generation",
                    format!("generation stop conditions missing: {}", missing.join(", ")),
                ));
            }
        }
    }
}

/// What one task needs besides its weights (docs/tasks.md).
pub(crate) struct TaskNeeds {
    pub task: Task,
    /// A `tokenizer` artifact (BG007).
    pub tokenizer: bool,
    /// A `chat-template` artifact (BG007).
    pub chat_template: bool,
    /// Generation stop conditions (BG006); a task that does not generate
    /// must not carry a `generation` block (BG030).
    pub generation: bool,
    /// A `pooling-config` artifact when the bundle lists a
    /// sentence-transformers `modules.json` (BG031).
    pub pooling_with_modules: bool,
    /// A `labels` or `config` artifact (BG031).
    pub labels_or_config: bool,
}

/// `generation` is the task's own (`Task::generates`): render reads the
/// same, so what lint requires and what reaches the pod cannot disagree.
const fn needs(task: Task, tokenizer: bool, chat_template: bool, pooling: bool, labels: bool) -> TaskNeeds {
    let generation = task.generates();
    TaskNeeds { task, tokenizer, chat_template, generation, pooling_with_modules: pooling, labels_or_config: labels }
}

/// The one requirements table: lint reads it, `explain` shows it for the
/// codes it drives, docs/tasks.md copies it.
pub(crate) const TASK_NEEDS: [TaskNeeds; 6] = [
    needs(Task::Chat, true, true, false, false),
    needs(Task::Completion, true, false, false, false),
    needs(Task::Embedding, true, false, true, false),
    needs(Task::Rerank, true, false, false, true),
    needs(Task::Classification, true, false, false, true),
    needs(Task::Other, false, false, false, false),
];

pub(crate) fn task_needs(task: Task) -> &'static TaskNeeds {
    TASK_NEEDS.iter().find(|n| n.task == task).unwrap_or(&TASK_NEEDS[0])
}

/// The codes the task table drives.
pub(crate) const TASK_CODES: [Code; 4] = [
    Code::GenerationConfigIncomplete,
    Code::TokenizerNotPinned,
    Code::GenerationOnNonGeneratingTask,
    Code::TaskArtifactMissing,
];

/// The task table as a report table, for `explain` of a code it drives.
pub(crate) fn task_table(code: Code) -> Option<crate::report::Table> {
    let yes = |b: bool, what: &str| if b { what.to_string() } else { "—".into() };
    TASK_CODES.contains(&code).then(|| crate::report::Table {
        title: "what each `spec.model.task` needs besides weights".into(),
        columns: ["task", "tokenizer", "chat template", "generation", "pooling config", "labels or config"]
            .map(String::from)
            .to_vec(),
        rows: TASK_NEEDS
            .iter()
            .map(|n| {
                vec![
                    n.task.as_str().into(),
                    yes(n.tokenizer, "required (BG007)"),
                    yes(n.chat_template, "required (BG007)"),
                    if n.generation { "required (BG006)".into() } else { "refused (BG030)".into() },
                    yes(n.pooling_with_modules, "required with `modules.json` (BG031)"),
                    yes(n.labels_or_config, "required (BG031)"),
                ]
            })
            .collect(),
    })
}

/// The files a task needs beyond tokenizer and template (BG031).
fn task_artifacts(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let task = b.spec.model.task;
    let needs = task_needs(task);
    let arts = &b.spec.model.artifacts;
    let has_role = |r: ArtifactRole| arts.iter().any(|a| a.role == r && a.sha256.is_some());
    let mut missing = |what: String, help: &str| {
        out.push(diag(l, Code::TaskArtifactMissing, "spec.model.artifacts", what).help(help.to_string()))
    };
    let modules = arts.iter().find(|a| a.path.rsplit('/').next() == Some("modules.json"));
    if let (true, Some(m)) = (needs.pooling_with_modules, modules) {
        if !has_role(ArtifactRole::PoolingConfig) {
            missing(
                format!("`{}` (sentence-transformers) is listed but no `pooling-config` artifact with a sha256: the `{}` model's pooling is unpinned", m.path, task.as_str()),
                "add the pooling module's config (e.g. `1_Pooling/config.json`) with role `pooling-config`",
            );
        }
    }
    if needs.labels_or_config && !has_role(ArtifactRole::Labels) && !has_role(ArtifactRole::Config) {
        missing(
            format!(
                "no `labels` or `config` artifact with a sha256: the `{}` model's outputs have no pinned names",
                task.as_str()
            ),
            "add the label file (role `labels`) or the model's `config.json` with its `id2label` (role `config`)",
        );
    }
}

/// `sha256:<64 hex>`, a release digest as `bundlegate digest` prints it.
fn is_release_digest(d: &str) -> bool {
    d.strip_prefix("sha256:").is_some_and(is_sha256_hex)
}

/// Each adapter names its base release (BG034); each retrieval index names
/// the embedding model it was built with (BG033), and that is the model
/// the service embeds with (BG032).
fn retrieval_and_adapters(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    for (i, a) in b.spec.model.artifacts.iter().enumerate() {
        let f = format!("spec.model.artifacts[{i}]");
        match (a.role, &a.base_release_digest) {
            (ArtifactRole::Adapter, Some(d)) if is_release_digest(d) => {}
            (ArtifactRole::Adapter, got) => out.push(
                diag(
                    l,
                    Code::AdapterBaseUnnamed,
                    &f,
                    match got {
                        Some(d) => format!("adapter `{}`: base release `{d}` is not `sha256:<64 hex>`", a.path),
                        None => format!("adapter `{}` does not name the base release it applies to", a.path),
                    },
                )
                .help("set `baseReleaseDigest` to the base release's digest (`bundlegate digest <its release.yaml>`)"),
            ),
            (_, Some(_)) => out.push(diag(
                l,
                Code::AdapterBaseUnnamed,
                &format!("{f}.baseReleaseDigest"),
                format!(
                    "`{}` has role `{}`: `baseReleaseDigest` is read only on an `adapter`",
                    a.path,
                    bundle::roles::role_name(a.role)
                ),
            )),
            (_, None) => {}
        }
        match (a.role, &a.built_with) {
            (ArtifactRole::RetrievalIndex, bw) => index_built_with(l, &f, a, bw.as_ref(), out),
            (_, Some(_)) => out.push(diag(
                l,
                Code::IndexEmbeddingUnnamed,
                &format!("{f}.builtWith"),
                format!(
                    "`{}` has role `{}`: `builtWith` is read only on a `retrieval-index`",
                    a.path,
                    bundle::roles::role_name(a.role)
                ),
            )),
            (_, None) => {}
        }
    }
}

/// One retrieval index against the embedding model this service queries with.
fn index_built_with(
    l: &Loaded,
    f: &str,
    a: &bundle::Artifact,
    bw: Option<&bundle::BuiltWith>,
    out: &mut Vec<Diagnostic>,
) {
    let b = &l.bundle;
    let unnamed = |msg: String| diag(l, Code::IndexEmbeddingUnnamed, f, msg);
    let mismatch = |msg: String, evidence: String| {
        diag(l, Code::IndexEmbeddingMismatch, &format!("{f}.builtWith"), msg)
            .evidence(evidence)
            .help("re-embed the index with the model the service queries with, or point `builtWith` at the model that built it")
    };
    let p = &a.path;
    match bw.map(|w| (&w.release_digest, &w.weights_sha256)) {
        None | Some((None, None)) => out.push(
            unnamed(format!("retrieval index `{p}` does not name the embedding model it was built with"))
                .help("set `builtWith.releaseDigest` (a separate embedding release) or `builtWith.weightsSha256` (the embedding weights of this release)"),
        ),
        Some((Some(_), Some(_))) => out.push(unnamed(format!(
            "retrieval index `{p}` names both `releaseDigest` and `weightsSha256` in `builtWith`: name one embedding model"
        ))),
        Some((None, Some(h))) => {
            let weights: Vec<&str> = b
                .spec
                .model
                .artifacts
                .iter()
                .filter(|w| w.role == ArtifactRole::Weights)
                .filter_map(|w| w.sha256.as_deref())
                .collect();
            if !weights.contains(&h.as_str()) {
                out.push(mismatch(
                    format!("retrieval index `{p}` was built with embedding weights {h}, which are not this release's weights"),
                    format!("this release's weights: {}", if weights.is_empty() { "none".to_string() } else { weights.join(", ") }),
                ));
            }
        }
        Some((Some(d), None)) => match &b.spec.model.embedding_release {
            None => out.push(
                unnamed(format!(
                    "retrieval index `{p}` was built with embedding release {d}, but the bundle does not name the embedding release it queries with"
                ))
                .help("set `spec.model.embeddingRelease` to the digest of the embedding release that embeds the queries"),
            ),
            Some(e) if e != d => out.push(mismatch(
                format!("retrieval index `{p}` was built with embedding release {d}, but the service queries with {e}"),
                format!("spec.model.embeddingRelease: {e}"),
            )),
            Some(_) => {}
        },
    }
}

/// verifyOnStart that the rendered pod can actually run.
fn verifier(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    // The default (`full`) counts as asking for it: a pod that cannot carry
    // the verifier is reported either way, never skipped silently.
    if let Some(x) = verify_on_start_rendered(b) {
        let field = if b.spec.serving.model_dir.is_some() { "spec.serving.modelDir" } else { "spec.serving.format" };
        out.push(x.at(l.span(field)).field(field));
    }
}

/// Probes and the progress deadline against the measured load time; a readiness probe that checks more than a port.
fn probes(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    // Probes vs measured load time.
    let s = &b.spec.serving;
    // The in-pod verification runs before the pod can be Ready: budget it on top of the load time.
    let load = s.load_time_seconds.as_ref().map(|l| l.p95 + verify_budget(b));
    if load.is_none() {
        out.push(d(
            Code::LoadTimeUnmeasured,
            "spec.serving",
            "no measured `loadTimeSeconds.p95`: probe windows cannot be checked".into(),
        ));
    }
    if let Some(load) = load {
        match (&s.probes.startup, &s.probes.liveness) {
            (None, Some(live)) if (live.window_seconds() as f64) < load => out.push(
                d(
                    Code::StartupProbeMissing,
                    "spec.serving.probes.liveness",
                    format!(
                        "no startup probe, and liveness kills a loading pod after {}s while the measured p95 load time is {load}s",
                        live.window_seconds()
                    ),
                )
                .evidence(format!(
                    "liveness: initialDelaySeconds {} + periodSeconds {} × failureThreshold {} = {}s",
                    live.initial_delay_seconds,
                    live.period_seconds,
                    live.failure_threshold,
                    live.window_seconds()
                ))
                .help(format!("add a startup probe whose window exceeds {load}s with margin, e.g. periodSeconds 10 × failureThreshold {}", ((load * 1.5) / 10.0).ceil() as u64)),
            ),
            (Some(st), _) if (st.window_seconds() as f64) < load => out.push(
                d(
                    Code::StartupWindowTooShort,
                    "spec.serving.probes.startup",
                    format!("startup probe gives up after {}s, below the measured p95 load time of {load}s", st.window_seconds()),
                )
                .evidence(format!(
                    "startup: initialDelaySeconds {} + periodSeconds {} × failureThreshold {} = {}s",
                    st.initial_delay_seconds,
                    st.period_seconds,
                    st.failure_threshold,
                    st.window_seconds()
                )),
            ),
            _ => {}
        }
        if (s.rollout.progress_deadline_seconds as f64) < load {
            out.push(d(
                Code::ProgressDeadlineShort,
                "spec.serving.rollout.progressDeadlineSeconds",
                format!(
                    "progressDeadlineSeconds {} is shorter than the measured load time {load}s",
                    s.rollout.progress_deadline_seconds
                ),
            ));
        }
    }
    match &s.probes.readiness {
        Some(r) if r.tcp_socket.is_some() && r.http_get.is_none() && r.exec.is_none() => out.push(d(
            Code::ReadinessTcpOnly,
            "spec.serving.probes.readiness",
            "readiness only checks that the port is open, not that the model is loaded".into(),
        )),
        None => out.push(d(
            Code::ReadinessTcpOnly,
            "spec.serving.probes",
            "no readiness probe: the pod takes traffic as soon as it starts".into(),
        )),
        _ => {}
    }
}

/// An identity endpoint whose expectations name this bundle.
fn identity(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    let s = &b.spec.serving;
    if s.identity.is_none() {
        out.push(d(
            Code::IdentityEndpointMissing,
            "spec.serving",
            "no `identity` endpoint: what is served cannot be checked after rollout".into(),
        ));
    } else if let Some(id) = &s.identity {
        for (i, e) in id.expect.iter().enumerate() {
            if e.digest_of != "release" && !b.spec.model.artifacts.iter().any(|a| a.path == e.digest_of) {
                out.push(d(
                    Code::IdentityEndpointMissing,
                    &format!("spec.serving.identity.expect[{i}].digestOf"),
                    format!("`{}` is neither `release` nor an artifact path of this bundle", e.digest_of),
                ));
            }
        }
    }
}

/// Resource quantities, a rollout strategy that resolves, and one the
/// format can carry.
fn quantities_and_rollout(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    let s = &b.spec.serving;
    out.extend(crate::checks::preflight::bundle_quantity_diagnostics(l));
    out.extend(crate::checks::preflight::kubernetes_resource_rules(l));
    if crate::checks::preflight::effective_rollout(s).1 {
        out.push(d(
            Code::RolloutNotExpressible,
            "spec.serving.rollout",
            format!(
                "`spec.serving.rollout` (maxSurge {}, maxUnavailable {}, progressDeadlineSeconds {}) cannot be rendered for `{}`: KServe v0.20's LLMInferenceService has no rollout strategy, so its Deployments roll with maxSurge 25%, maxUnavailable 25%, progressDeadlineSeconds 600",
                crate::checks::preflight::pct(&s.rollout.max_surge),
                crate::checks::preflight::pct(&s.rollout.max_unavailable),
                s.rollout.progress_deadline_seconds,
                s.format.as_str()
            ),
        ));
    }
    if let Err(e) = s.rollout.resolve(s.replicas) {
        out.push(
            d(Code::CanaryPlanInvalid, "spec.serving.rollout", format!("rollout strategy: {e}"))
                .severity(crate::diag::Severity::Error),
        );
    }
}

/// A canary plan that can be evaluated.
fn canary_plan(l: &Loaded, out: &mut Vec<Diagnostic>) {
    let b = &l.bundle;
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    // Canary plan.
    if let Some(c) = &b.spec.canary {
        let mut problems = Vec::new();
        // Steps are refused by the parser itself (`traffic_steps`): every
        // command sees a valid plan, so lint has nothing left to say.
        if crate::util::parse_duration(&c.window).is_none() {
            problems.push(format!("window `{}` is not a duration like `30m`", c.window));
        }
        if c.min_samples == 0 {
            problems.push("minSamples is 0".into());
        }
        if c.gates.is_empty() {
            problems.push("no gates".into());
        }
        for g in &c.gates {
            if g.max_absolute.is_none()
                && g.max_relative_increase.is_none()
                && g.min_absolute.is_none()
                && g.min_relative_decrease.is_none()
            {
                problems.push(format!("gate `{}` has neither maxAbsolute nor maxRelativeIncrease", g.metric));
            }
        }
        for p in problems {
            out.push(d(Code::CanaryPlanInvalid, "spec.canary", p));
        }
        for (code, field, msg) in crate::checks::canary::providers::lint_plan(c) {
            out.push(d(code, &field, msg));
        }
    }
}

/// The previous release, as the caller found it, judged by
/// `checks::rollback` (the judgment canary and revert use too).
fn rollback_target(l: &Loaded, rollback: &RollbackStatus, out: &mut Vec<Diagnostic>) {
    let d = |code: Code, field: &str, msg: String| diag(l, code, field, msg);
    for u in crate::checks::rollback::judge(l, rollback) {
        out.push(match u {
            Unusable::NotDeclared => d(Code::RollbackTargetMissing, "spec", "no rollback target: the previous bundle is not named".into())
                .help("add `rollback: {bundle: ../v1/release.yaml, releaseDigest: sha256:…}`"),
            Unusable::Unreadable { path, error } => {
                d(Code::RollbackTargetUnresolvable, "spec.rollback.bundle", format!("rollback target `{path}` cannot be loaded"))
                    .evidence(error)
            }
            Unusable::Escapes { path, root } => d(
                Code::RollbackTargetOutsideRepo,
                "spec.rollback.bundle",
                format!("rollback target `{path}` resolves outside {root}; it was not read"),
            )
            .help("name the previous bundle by a relative path inside the repository, e.g. `../v1/release.yaml`"),
            Unusable::NotRecorded { path, digest, recorded } => d(
                Code::RollbackTargetUnresolvable,
                "spec.rollback.releaseDigest",
                format!("rollback target `{path}` has release digest {digest}, not {recorded}"),
            )
            .help("the previous bundle changed after this one was written; re-pin its digest with `bundlegate digest`"),
            Unusable::IsRelease { path, digest } => {
                let (field, msg) = match path {
                    Some(path) => {
                        ("spec.rollback.bundle", format!("rollback target `{path}` is this release itself (release digest {digest})"))
                    }
                    None => (
                        "spec.rollback.releaseDigest",
                        format!("the rollback target's recorded digest {digest} is this release's own"),
                    ),
                };
                let bundle = l.bundle.spec.rollback.as_ref().map_or("", |r| r.bundle.as_str());
                d(Code::RollbackTargetIsRelease, field, msg).evidence(format!("rollback.bundle: {bundle}")).help(
                    "name the previous release (the one this bundle replaces) and pin its digest with `bundlegate digest`",
                )
            }
        });
    }
}

/// Names the tool owns in the rendered pod, supplied by the bundle (BG021),
/// and volume names given twice (Kubernetes merges volumes by name): env
/// names, volume names, mount paths (a container's mounts are keyed by
/// path) and label keys.
fn reserved_names(l: &Loaded, out: &mut Vec<Diagnostic>) {
    use crate::bundle::reserved;
    let b = &l.bundle;
    for k in b.spec.runtime.env.keys() {
        if let Some(why) = reserved::env_owner(k) {
            out.push(diag(
                l,
                Code::ReservedName,
                &format!("spec.runtime.env.{k}"),
                format!(
                    "env `{k}` is {why}; the bundle cannot set it (the later of two equal env names wins in a pod)"
                ),
            ));
        }
    }
    let mut seen = std::collections::HashSet::new();
    for (i, v) in b.spec.serving.volumes.iter().enumerate() {
        let field = format!("spec.serving.volumes[{i}].name");
        if reserved::volume_is_reserved(&v.name) || reserved::container_is_reserved(&v.name) {
            out.push(diag(
                l,
                Code::ReservedName,
                &field,
                format!("volume `{}` is the one bundlegate's verifier mounts; choose another name", v.name),
            ));
        } else if !seen.insert(v.name.as_str()) {
            out.push(diag(
                l,
                Code::ReservedName,
                &field,
                format!(
                    "volume `{}` is named twice; Kubernetes merges volumes by name, so one would replace the other",
                    v.name
                ),
            ));
        }
        if let Some(why) = reserved::mount_owner(b.spec.serving.format, &v.mount_path) {
            let msg = format!("volume `{}` is mounted at `{}`, {why}; the server would read this volume's files instead of the verified ones", v.name, v.mount_path);
            out.push(diag(l, Code::ReservedName, &format!("spec.serving.volumes[{i}].mountPath"), msg));
        }
    }
    for k in b.metadata.labels.keys() {
        if reserved::label_is_reserved(k) {
            out.push(diag(
                l,
                Code::ReservedName,
                &format!("metadata.labels.{k}"),
                format!("label `{k}` is set by bundlegate (release identity); the bundle cannot set it"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::pod_verifier::{KSERVE_MODEL_VOLUME, VERIFIER_CONTAINER};
    use std::collections::{BTreeMap, BTreeSet};

    #[test]
    fn digests_are_64_lowercase_hex_and_images_pin_one() {
        let hex = "0123456789abcdef".repeat(4);
        assert!(is_sha256_hex(&hex));
        for bad in [&hex[1..], &hex.to_uppercase(), &"g".repeat(64), &format!("{hex}0")] {
            assert!(!is_sha256_hex(bad), "{bad}");
        }
        assert!(image_pinned(&format!("r.io/a/b@sha256:{hex}")));
        for bad in
            [format!("@sha256:{hex}"), "r.io/a/b@sha256:abc".into(), "r.io/a/b:v1".into(), format!("r.io/a/b:{hex}")]
        {
            assert!(!image_pinned(&bad), "{bad}");
        }
    }

    fn edited(f: impl FnOnce(&mut serde_yaml_ng::Value)) -> Loaded {
        crate::manifests::bundle_edit(f).unwrap()
    }

    /// The seconds verification adds: the declared bytes at the hashing
    /// rate, rounded up, at least one; one for a size check; none when off.
    #[test]
    fn the_verify_budget_follows_the_declared_bytes() {
        let rate = crate::bundle::VERIFY_HASH_BYTES_PER_SECOND;
        let sized = |mode: &str, sizes: &[u64]| {
            let l = edited(|v| {
                v["spec"]["serving"]["verifyOnStart"] = mode.into();
                let arts = v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap();
                // The artifacts not given a size here weigh nothing.
                for (a, s) in arts.iter_mut().zip(sizes.iter().chain(std::iter::repeat(&0))) {
                    a["size"] = (*s).into();
                }
            });
            verify_budget(&l.bundle)
        };
        assert_eq!(sized("full", &[1, 1]), 1.0);
        assert_eq!(sized("full", &[rate, rate, 1]), 3.0);
        assert_eq!(sized("full", &[rate, rate]), 2.0);
        assert_eq!(sized("size", &[rate, rate, 1]), 1.0);
        assert_eq!(sized("off", &[rate, rate, 1]), 0.0);
    }

    /// `verifyOnStart` on a Deployment that does not say where the model
    /// is cannot be rendered: lint says so rather than look protected.
    #[test]
    fn verify_on_start_that_cannot_render_is_a_finding() {
        let rollback = RollbackStatus::NotDeclared;
        let unsupported = |l: &Loaded| lint(l, &rollback).into_iter().any(|d| d.code == Code::VerifyOnStartNotRendered);
        assert!(!unsupported(&edited(|_| {})));
        let deployment = |verify: &str| {
            edited(|v| {
                v["spec"]["serving"]["format"] = "deployment".into();
                v["spec"]["serving"]["verifyOnStart"] = verify.into();
            })
        };
        assert!(unsupported(&deployment("full")));
        assert!(!unsupported(&deployment("off")));
    }

    fn codes(l: &Loaded) -> Vec<Code> {
        lint(l, &RollbackStatus::NotDeclared).into_iter().map(|d| d.code).collect()
    }

    /// Windows against the load time (p95 plus the verify budget) at their
    /// bounds: a window equal to it is enough, one second less is not.
    #[test]
    fn probe_windows_and_deadline_at_the_load_time() {
        let rate = crate::bundle::VERIFY_HASH_BYTES_PER_SECOND;
        // p95 100 s + 2 s of hashing: load 102 s.
        let at = |f: &dyn Fn(&mut serde_yaml_ng::Value)| {
            codes(&edited(|v| {
                v["spec"]["serving"]["verifyOnStart"] = "full".into();
                for (i, a) in v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap().iter_mut().enumerate() {
                    a["size"] = (if i == 0 { 2 * rate } else { 0 }).into();
                }
                v["spec"]["serving"]["loadTimeSeconds"]["p95"] = 100.into();
                v["spec"]["serving"]["rollout"]["progressDeadlineSeconds"] = 600.into();
                f(v)
            }))
        };
        let startup = |n: u64| {
            at(&move |v| {
                v["spec"]["serving"]["probes"]["startup"] = serde_yaml_ng::from_str(&format!(
                    "{{httpGet: {{path: /r}}, periodSeconds: 1, failureThreshold: {n}}}"
                ))
                .unwrap()
            })
        };
        assert!(!startup(102).contains(&Code::StartupWindowTooShort));
        assert!(startup(101).contains(&Code::StartupWindowTooShort));
        let liveness_only = |n: u64| {
            at(&move |v| {
                let p = &mut v["spec"]["serving"]["probes"];
                p.as_mapping_mut().unwrap().remove("startup");
                p["liveness"] = serde_yaml_ng::from_str(&format!(
                    "{{httpGet: {{path: /l}}, periodSeconds: 1, failureThreshold: {n}}}"
                ))
                .unwrap();
            })
        };
        assert!(!liveness_only(102).contains(&Code::StartupProbeMissing));
        assert!(liveness_only(101).contains(&Code::StartupProbeMissing));
        let deadline = |n: u64| at(&move |v| v["spec"]["serving"]["rollout"]["progressDeadlineSeconds"] = n.into());
        assert!(!deadline(102).contains(&Code::ProgressDeadlineShort));
        assert!(deadline(101).contains(&Code::ProgressDeadlineShort));
    }

    /// Readiness must check more than an open port; no readiness at all is
    /// the same finding.
    #[test]
    fn readiness_that_only_checks_a_port() {
        let with = |probe: Option<&str>| {
            codes(&edited(|v| {
                let p = v["spec"]["serving"]["probes"].as_mapping_mut().unwrap();
                match probe {
                    Some(t) => {
                        p.insert("readiness".into(), serde_yaml_ng::from_str(t).unwrap());
                    }
                    None => {
                        p.remove("readiness");
                    }
                }
            }))
            .contains(&Code::ReadinessTcpOnly)
        };
        assert!(with(Some("{tcpSocket: {port: 8080}}")));
        assert!(with(None));
        assert!(!with(Some("{tcpSocket: {port: 8080}, httpGet: {path: /r}}")));
        assert!(!with(Some("{httpGet: {path: /r}}")));
    }

    /// A bundle needs an artifact with role `weights`.
    #[test]
    fn weights_are_required() {
        let no_weights = |role: &str| {
            lint(
                &edited(|v| {
                    for a in v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap() {
                        if a["role"] == "weights" {
                            a["role"] = role.into();
                        }
                    }
                }),
                &RollbackStatus::NotDeclared,
            )
            .into_iter()
            .any(|d| d.message == "no artifact has role `weights`")
        };
        assert!(!no_weights("weights"));
        assert!(no_weights("other"));
    }

    /// A rollout strategy that cannot resolve is an error-level finding.
    #[test]
    fn an_unresolvable_rollout_is_a_finding() {
        let l = edited(|v| {
            v["spec"]["serving"]["rollout"]["maxSurge"] = "a quarter".into();
        });
        let d = lint(&l, &RollbackStatus::NotDeclared);
        assert!(
            d.iter().any(|d| d.code == Code::CanaryPlanInvalid && d.message.starts_with("rollout strategy: ")),
            "{d:?}"
        );
    }

    type Edit = fn(&mut serde_yaml_ng::Value);

    /// (what, the edit, the code, its field, words of its message).
    const FIELD_RULE_CASES: &[(&str, Edit, Code, &str, &str)] = &[
        (
            "a tag",
            |v| v["spec"]["runtime"]["image"] = "r.io/a/b:v2".into(),
            Code::ImageNotPinned,
            "spec.runtime.image",
            "`r.io/a/b:v2` is not pinned",
        ),
        (
            "a floating word",
            |v| v["spec"]["model"]["storageUri"] = "file:../../store/llm-scratch/latest/".into(),
            Code::ModelPrefixUnversioned,
            "spec.model.storageUri",
            "ends in `latest`",
        ),
        (
            "a floating word in capitals",
            |v| v["spec"]["model"]["storageUri"] = "file:../../store/Stable".into(),
            Code::ModelPrefixUnversioned,
            "spec.model.storageUri",
            "ends in `Stable`",
        ),
        (
            "a word with no digit",
            |v| v["spec"]["model"]["storageUri"] = "file:../../store/release/".into(),
            Code::ModelPrefixUnversioned,
            "spec.model.storageUri",
            "ends in `release`",
        ),
        (
            "no path",
            |v| v["spec"]["model"]["storageUri"] = "s3://".into(),
            Code::ModelPrefixUnversioned,
            "spec.model.storageUri",
            "has no path",
        ),
        (
            "another version",
            |v| v["spec"]["model"]["storageUri"] = "file:../../store/llm-scratch/v3/".into(),
            Code::ModelPrefixVersionMismatch,
            "spec.model.storageUri",
            "`v3` differs from metadata.version `v2`",
        ),
        (
            "no sha256",
            |v| {
                v["spec"]["model"]["artifacts"][1].as_mapping_mut().unwrap().remove("sha256");
            },
            Code::ArtifactUnhashed,
            "spec.model.artifacts[1]",
            "`tokenizer.json` has no sha256",
        ),
        (
            "a short sha256",
            |v| v["spec"]["model"]["artifacts"][2]["sha256"] = "abc".into(),
            Code::ArtifactDigestMalformed,
            "spec.model.artifacts[2].sha256",
            "`abc` is not 64 lowercase hex",
        ),
        (
            "no size",
            |v| {
                v["spec"]["model"]["artifacts"][3].as_mapping_mut().unwrap().remove("size");
            },
            Code::ArtifactUnhashed,
            "spec.model.artifacts[3]",
            "`generation_config.json` has no size",
        ),
        (
            "a path out of the prefix",
            |v| v["spec"]["model"]["artifacts"][4]["path"] = "../v1/clean_corpus.txt".into(),
            Code::ArtifactPathEscapes,
            "spec.model.artifacts[4].path",
            "escapes the versioned prefix",
        ),
        (
            "a path twice",
            |v| v["spec"]["model"]["artifacts"][4]["path"] = "tokenizer.json".into(),
            Code::ArtifactDuplicatePath,
            "spec.model.artifacts[4].path",
            "`tokenizer.json` is listed twice",
        ),
        (
            "no artifacts",
            |v| v["spec"]["model"]["artifacts"] = serde_yaml_ng::Value::Sequence(vec![]),
            Code::ArtifactUnhashed,
            "spec.model.artifacts",
            "lists no artifacts",
        ),
        (
            "a tokenizer without a sha256",
            |v| {
                v["spec"]["model"]["artifacts"][1].as_mapping_mut().unwrap().remove("sha256");
            },
            Code::TokenizerNotPinned,
            "spec.model.artifacts",
            "no `tokenizer` artifact",
        ),
        (
            "no chat template",
            |v| v["spec"]["model"]["artifacts"][2]["role"] = "other".into(),
            Code::TokenizerNotPinned,
            "spec.model.artifacts",
            "no `chat-template` artifact",
        ),
        (
            "a negative request",
            |v| v["spec"]["serving"]["resources"]["requests"]["cpu"] = "-1".into(),
            Code::ResourceQuantityInvalid,
            "spec.serving.resources.requests.cpu",
            "negative",
        ),
        (
            "a limit with a suffix Kubernetes does not read",
            |v| v["spec"]["serving"]["resources"]["limits"]["memory"] = "8GB".into(),
            Code::ResourceQuantityInvalid,
            "spec.serving.resources.limits.memory",
            "unknown suffix",
        ),
        (
            "no generation block",
            |v| {
                v["spec"].as_mapping_mut().unwrap().remove("generation");
            },
            Code::GenerationConfigIncomplete,
            "spec",
            "no `generation` block",
        ),
        (
            "no stop conditions",
            |v| {
                v["spec"]["generation"] =
                    serde_yaml_ng::from_str("{eosTokenIds: [], stopStrings: [], maxOutputTokens: 0}").unwrap()
            },
            Code::GenerationConfigIncomplete,
            "spec.generation",
            "missing: eosTokenIds, stopStrings, maxOutputTokens",
        ),
        (
            "no identity",
            |v| {
                v["spec"]["serving"].as_mapping_mut().unwrap().remove("identity");
            },
            Code::IdentityEndpointMissing,
            "spec.serving",
            "no `identity` endpoint",
        ),
        (
            "an identity digest of no artifact",
            |v| v["spec"]["serving"]["identity"]["expect"][1]["digestOf"] = "weights.bin".into(),
            Code::IdentityEndpointMissing,
            "spec.serving.identity.expect[1].digestOf",
            "`weights.bin` is neither `release` nor an artifact path",
        ),
        (
            "a canary window that is no duration",
            |v| v["spec"]["canary"]["window"] = "half an hour".into(),
            Code::CanaryPlanInvalid,
            "spec.canary",
            "window `half an hour` is not a duration",
        ),
        (
            "minSamples 0",
            |v| v["spec"]["canary"]["minSamples"] = 0.into(),
            Code::CanaryPlanInvalid,
            "spec.canary",
            "minSamples is 0",
        ),
        (
            "no gates",
            |v| v["spec"]["canary"]["gates"] = serde_yaml_ng::Value::Sequence(vec![]),
            Code::CanaryPlanInvalid,
            "spec.canary",
            "no gates",
        ),
        (
            "a gate with no limit",
            |v| v["spec"]["canary"]["gates"][1] = serde_yaml_ng::from_str("{metric: p95_latency_seconds}").unwrap(),
            Code::CanaryPlanInvalid,
            "spec.canary",
            "gate `p95_latency_seconds` has neither",
        ),
    ];

    /// Each rule over the bundle's own fields, one case per way it fails:
    /// the code, the field it points at and words of its message, with the
    /// shipped example (which passes every one of them) as the contrast.
    /// Held here so a unit-test run (the weekly mutation run's) sees each
    /// rule fail, not only the binary's tests.
    #[test]
    fn each_field_rule_finds_its_case_at_its_field() {
        let example = lint(&edited(|_| {}), &RollbackStatus::NotDeclared);
        for &(what, edit, code, field, words) in FIELD_RULE_CASES {
            assert!(!example.iter().any(|d| d.code == code), "the example already has {code:?}: {example:?}");
            let l = match crate::manifests::bundle_edit(edit) {
                Ok(l) => l,
                Err(e) => panic!("{what}: the bundle was refused before lint: {e}"),
            };
            let found = lint(&l, &RollbackStatus::NotDeclared);
            assert!(
                found.iter().any(|d| d.code == code && d.field.as_deref() == Some(field) && d.message.contains(words)),
                "{what}: expected {code:?} at {field} saying {words:?}, got {found:?}"
            );
        }
        // A version segment with a digit that is not a floating word, and
        // the identity's `release` and artifact paths, are fine.
        let fine = lint(
            &edited(|v| v["spec"]["serving"]["identity"]["expect"][0]["digestOf"] = "tokenizer.json".into()),
            &RollbackStatus::NotDeclared,
        );
        assert!(!fine.iter().any(|d| d.code == Code::IdentityEndpointMissing), "{fine:?}");
        let duplicate = lint(
            &edited(|v| v["spec"]["model"]["artifacts"][4]["path"] = "tokenizer.json".into()),
            &RollbackStatus::NotDeclared,
        );
        let d = duplicate.iter().find(|d| d.code == Code::ArtifactDuplicatePath).unwrap();
        assert_eq!(d.evidence, ["first listed at spec.model.artifacts[1]"]);
    }

    /// Resource names of every kind Kubernetes' validation tells apart:
    /// native unprefixed, extended (a domain other than kubernetes.io/),
    /// hugepages.
    const RESOURCE_NAMES: &[&str] =
        &["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "example.com/fpga", "hugepages-2Mi"];
    /// Quantities with their values in units, written every way Kubernetes reads.
    const AMOUNTS: &[(&str, f64)] = &[
        ("0", 0.0),
        ("1", 1.0),
        ("2", 2.0),
        ("3", 3.0),
        ("500m", 0.5),
        ("0.5", 0.5),
        ("250m", 0.25),
        ("1.5", 1.5),
        ("1000m", 1.0),
        ("1e3", 1000.0),
        ("1k", 1000.0),
    ];

    /// `ValidateResourceRequirements` (Kubernetes' pod validation) over
    /// the values as numbers: the findings the API server would make, as
    /// (code, field).
    fn kubernetes_refuses(
        requests: &BTreeMap<&str, (&str, f64)>,
        limits: &BTreeMap<&str, (&str, f64)>,
    ) -> BTreeSet<(Code, String)> {
        let extended = |n: &str| n.contains('/') && !n.contains("kubernetes.io/");
        let overcommit = |n: &str| !extended(n) && !n.starts_with("hugepages-");
        let mut out = BTreeSet::new();
        for (kind, m) in [("limits", limits), ("requests", requests)] {
            for (n, (_, v)) in m {
                if extended(n) && v.fract() != 0.0 {
                    out.insert((Code::ExtendedResourceFractional, format!("spec.serving.resources.{kind}.{n}")));
                }
            }
        }
        for (n, (_, v)) in requests {
            let field = format!("spec.serving.resources.requests.{n}");
            match limits.get(n) {
                Some((_, l)) if (v != l && !overcommit(n)) || v > l => {
                    out.insert((Code::RequestLimitMismatch, field));
                }
                Some(_) => {}
                None if !overcommit(n) => {
                    out.insert((Code::ResourceLimitMissing, format!("spec.serving.resources.limits.{n}")));
                }
                None => {}
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(400))]

        /// Lint finds exactly what Kubernetes' own validation refuses in a
        /// container's requests and limits: a fractional extended resource,
        /// a GPU requested without a limit, a request other than its limit
        /// where Kubernetes does not overcommit, a request above its limit.
        /// Each passed lint and preflight, and the pod was never created.
        #[test]
        fn lint_refuses_what_kubernetes_refuses_in_requests_and_limits(
            requests in proptest::collection::btree_map(proptest::sample::select(RESOURCE_NAMES), proptest::sample::select(AMOUNTS), 0..5),
            limits in proptest::collection::btree_map(proptest::sample::select(RESOURCE_NAMES), proptest::sample::select(AMOUNTS), 0..5),
        ) {
            let l = crate::manifests::bundle_edit(|v| {
                let r = &mut v["spec"]["serving"]["resources"];
                *r = serde_yaml_ng::Value::Mapping(Default::default());
                for (kind, m) in [("requests", &requests), ("limits", &limits)] {
                    let mut map = serde_yaml_ng::Mapping::new();
                    for (n, (q, _)) in m {
                        map.insert((*n).into(), (*q).into());
                    }
                    r[kind] = serde_yaml_ng::Value::Mapping(map);
                }
            })
            .unwrap();
            let rules = [Code::ExtendedResourceFractional, Code::ResourceLimitMissing, Code::RequestLimitMismatch];
            let found: BTreeSet<(Code, String)> = lint(&l, &RollbackStatus::NotDeclared)
                .into_iter()
                .filter(|d| rules.contains(&d.code))
                .map(|d| (d.code, d.field.unwrap_or_default()))
                .collect();
            proptest::prop_assert_eq!(found, kubernetes_refuses(&requests, &limits));
        }
    }

    /// A fractional GPU, a GPU without a limit, a GPU request other than its
    /// limit, against the shipped example, each at its field.
    #[test]
    fn gpu_rules_kubernetes_enforces() {
        let cases: [(Edit, Code, &str, &str); 3] = [
            (
                |v| {
                    v["spec"]["serving"]["resources"]["requests"]["nvidia.com/gpu"] = "500m".into();
                    v["spec"]["serving"]["resources"]["limits"]["nvidia.com/gpu"] = "500m".into();
                },
                Code::ExtendedResourceFractional,
                "spec.serving.resources.requests.nvidia.com/gpu",
                "must be an integer",
            ),
            (
                |v| {
                    v["spec"]["serving"]["resources"]["limits"].as_mapping_mut().unwrap().remove("nvidia.com/gpu");
                },
                Code::ResourceLimitMissing,
                "spec.serving.resources.limits.nvidia.com/gpu",
                "Limit must be set",
            ),
            (
                |v| v["spec"]["serving"]["resources"]["limits"]["nvidia.com/gpu"] = 2.into(),
                Code::RequestLimitMismatch,
                "spec.serving.resources.requests.nvidia.com/gpu",
                "must be equal to the limit",
            ),
        ];
        for (edit, code, field, words) in cases {
            let found = lint(&edited(edit), &RollbackStatus::NotDeclared);
            assert!(
                found.iter().any(|d| d.code == code && d.field.as_deref() == Some(field) && d.message.contains(words)),
                "{code:?} at {field}: {found:?}"
            );
        }
        // A limit alone implies the request: fine.
        let only_limit = lint(
            &edited(|v| {
                v["spec"]["serving"]["resources"]["requests"].as_mapping_mut().unwrap().remove("nvidia.com/gpu");
            }),
            &RollbackStatus::NotDeclared,
        );
        assert!(
            !only_limit.iter().any(|d| [Code::ResourceLimitMissing, Code::RequestLimitMismatch].contains(&d.code)),
            "{only_limit:?}"
        );
    }

    fn with_volumes(names: &[&str]) -> Loaded {
        edited(|v| {
            v["spec"]["serving"]["volumes"] = serde_yaml_ng::Value::Sequence(
                names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| {
                        serde_yaml_ng::from_str(&format!(
                            "{{name: {n}, claimName: c{i}, accessMode: ReadWriteOnce, mountPath: /data{i}}}"
                        ))
                        .unwrap()
                    })
                    .collect(),
            )
        })
    }

    /// A volume may take neither the verifier's volume nor its container's
    /// name, nor a name another volume has.
    #[test]
    fn volume_names_the_tool_owns_or_repeats_are_refused() {
        let reserved = |names: &[&str]| -> Vec<String> {
            let mut d = Vec::new();
            reserved_names(&with_volumes(names), &mut d);
            d.into_iter().filter(|d| d.code == Code::ReservedName).map(|d| d.message).collect()
        };
        assert!(reserved(&["cache", "scratch"]).is_empty());
        for owned in [KSERVE_MODEL_VOLUME, VERIFIER_CONTAINER] {
            let got = reserved(&["cache", owned]);
            assert_eq!(got, [format!("volume `{owned}` is the one bundlegate's verifier mounts; choose another name")]);
        }
        let got = reserved(&["cache", "cache"]);
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("volume `cache` is named twice"), "{got:?}");
    }

    fn artifact(path: &str, role: &str, extra: &str) -> serde_yaml_ng::Value {
        let sha = "ab".repeat(32);
        serde_yaml_ng::from_str(&format!("{{path: {path}, role: {role}, sha256: {sha}, size: 1{extra}}}")).unwrap()
    }

    fn push_artifact(v: &mut serde_yaml_ng::Value, a: serde_yaml_ng::Value) {
        v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap().push(a);
    }

    /// The example re-tasked as `n` says, satisfying its row: no
    /// `generation` block where the task does not generate, a labels file.
    fn tasked(n: &TaskNeeds, f: impl FnOnce(&mut serde_yaml_ng::Value)) -> Vec<Diagnostic> {
        lint(
            &edited(|v| {
                v["spec"]["model"]["task"] = n.task.as_str().into();
                if !n.generation {
                    v["spec"].as_mapping_mut().unwrap().remove("generation");
                }
                push_artifact(v, artifact("labels.txt", "labels", ""));
                f(v)
            }),
            &RollbackStatus::NotDeclared,
        )
    }

    fn says(d: &[Diagnostic], code: Code, words: &str) -> bool {
        d.iter().any(|d| d.code == code && d.message.contains(words))
    }

    fn set_role(v: &mut serde_yaml_ng::Value, from: &str, to: &str) {
        for a in v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap() {
            if a["role"] == from {
                a["role"] = to.into();
            }
        }
    }

    /// Every task against every rule of its row: the rule's finding when
    /// the row requires the file or block and it is missing, none when the
    /// row does not require it; a row's requirements met, none of the
    /// table's codes at all.
    #[test]
    fn each_task_requires_what_its_row_says() {
        for n in &TASK_NEEDS {
            let t = n.task.as_str();
            let met = tasked(n, |_| {});
            assert!(!met.iter().any(|d| TASK_CODES.contains(&d.code)), "{t}: {met:?}");
            let no_tokenizer = tasked(n, |v| set_role(v, "tokenizer", "other"));
            assert_eq!(says(&no_tokenizer, Code::TokenizerNotPinned, "no `tokenizer`"), n.tokenizer, "{t}");
            let no_template = tasked(n, |v| set_role(v, "chat-template", "other"));
            assert_eq!(says(&no_template, Code::TokenizerNotPinned, "no `chat-template`"), n.chat_template, "{t}");
            let no_generation = tasked(n, |v| {
                v["spec"].as_mapping_mut().unwrap().remove("generation");
            });
            assert_eq!(
                says(&no_generation, Code::GenerationConfigIncomplete, "no `generation` block"),
                n.generation,
                "{t}"
            );
            let with_generation = tasked(n, |v| {
                v["spec"]["generation"] =
                    serde_yaml_ng::from_str("{eosTokenIds: [2], stopStrings: [x], maxOutputTokens: 8}").unwrap()
            });
            let refused = with_generation.iter().find(|d| {
                d.code == Code::GenerationOnNonGeneratingTask && d.field.as_deref() == Some("spec.generation")
            });
            assert_eq!(refused.is_some(), !n.generation, "{t}: {with_generation:?}");
            if let Some(d) = refused {
                assert!(d.message.contains(&format!("a `{t}` model")), "{d:?}");
            }
            let modules = |pooling: bool| {
                tasked(n, |v| {
                    push_artifact(v, artifact("modules.json", "other", ""));
                    if pooling {
                        push_artifact(v, artifact("1_Pooling/config.json", "pooling-config", ""));
                    }
                })
            };
            let pooling = "no `pooling-config` artifact";
            assert_eq!(says(&modules(false), Code::TaskArtifactMissing, pooling), n.pooling_with_modules, "{t}");
            assert!(!says(&modules(true), Code::TaskArtifactMissing, pooling), "{t}");
            // Labels or config: neither, either one.
            let labels = |role: Option<&str>| {
                tasked(n, |v| {
                    let arts = v["spec"]["model"]["artifacts"].as_sequence_mut().unwrap();
                    arts.retain(|a| a["role"] != "labels");
                    if let Some(r) = role {
                        arts.push(artifact("id2label.json", r, ""));
                    }
                })
            };
            let no_labels = "no `labels` or `config` artifact";
            assert_eq!(says(&labels(None), Code::TaskArtifactMissing, no_labels), n.labels_or_config, "{t}");
            for role in ["labels", "config"] {
                assert!(!says(&labels(Some(role)), Code::TaskArtifactMissing, no_labels), "{t} {role}");
            }
        }
        // Weights stay required whatever the task.
        let other = &TASK_NEEDS[5];
        assert_eq!(other.task, Task::Other);
        assert!(tasked(other, |v| set_role(v, "weights", "other"))
            .iter()
            .any(|d| d.message == "no artifact has role `weights`"));
    }

    /// `explain` shows the table for each code it drives, one row per task.
    #[test]
    fn the_task_table_is_shown_for_the_codes_it_drives() {
        for c in Code::ALL {
            let t = task_table(*c);
            assert_eq!(t.is_some(), TASK_CODES.contains(c), "{c:?}");
            if let Some(t) = t {
                let tasks: Vec<&str> = t.rows.iter().map(|r| r[0].as_str()).collect();
                assert_eq!(tasks, Task::ALL.map(Task::as_str), "{c:?}");
            }
        }
        let t = task_table(Code::TaskArtifactMissing).unwrap();
        assert_eq!(
            t.rows[2],
            ["embedding", "required (BG007)", "—", "refused (BG030)", "required with `modules.json` (BG031)", "—"]
        );
    }

    const DIGEST_A: &str = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    const DIGEST_B: &str = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";

    /// An embedding release (the example re-tasked) with one index artifact
    /// carrying `extra`, and `spec.model.embeddingRelease` when given.
    fn with_index(extra: &str, queries_with: Option<&str>) -> Vec<Diagnostic> {
        lint(
            &edited(|v| {
                v["spec"]["model"]["task"] = "embedding".into();
                v["spec"].as_mapping_mut().unwrap().remove("generation");
                if let Some(e) = queries_with {
                    v["spec"]["model"]["embeddingRelease"] = e.into();
                }
                push_artifact(v, artifact("index.faiss", "retrieval-index", extra));
                push_artifact(v, artifact("index_schema.json", "index-schema", ""));
            }),
            &RollbackStatus::NotDeclared,
        )
    }

    /// The index and the embedding model, both ways: built with this
    /// release's weights or with the separate release the service queries
    /// with passes; built with other weights or another release is BG032
    /// at `builtWith`; naming none, both, or a release while the bundle
    /// names no query model is BG033.
    #[test]
    fn an_index_must_be_built_with_the_embedding_model_the_service_queries_with() {
        let index_codes = [Code::IndexEmbeddingMismatch, Code::IndexEmbeddingUnnamed];
        let clean = |d: Vec<Diagnostic>| !d.iter().any(|d| index_codes.contains(&d.code));
        let weights = "20c86b9c3c2ca1e8ce883948c403e6eca546ec37c393463eb38d4f8a87021586";
        assert!(clean(with_index(&format!(", builtWith: {{weightsSha256: {weights}}}"), None)));
        assert!(clean(with_index(&format!(", builtWith: {{releaseDigest: '{DIGEST_A}'}}"), Some(DIGEST_A))));
        let other_weights = with_index(&format!(", builtWith: {{weightsSha256: {}}}", "cd".repeat(32)), None);
        let d = other_weights.iter().find(|d| d.code == Code::IndexEmbeddingMismatch).expect("mismatch");
        assert_eq!(d.field.as_deref(), Some("spec.model.artifacts[5].builtWith"));
        assert!(d.message.contains("not this release's weights"), "{d:?}");
        assert_eq!(d.evidence, [format!("this release's weights: {weights}")]);
        let other_release = with_index(&format!(", builtWith: {{releaseDigest: '{DIGEST_A}'}}"), Some(DIGEST_B));
        let d = other_release.iter().find(|d| d.code == Code::IndexEmbeddingMismatch).expect("mismatch");
        assert!(d
            .message
            .contains(&format!("built with embedding release {DIGEST_A}, but the service queries with {DIGEST_B}")));
        for (extra, queries_with, words) in [
            ("", None, "does not name the embedding model"),
            (", builtWith: {}", None, "does not name the embedding model"),
            (&format!(", builtWith: {{releaseDigest: '{DIGEST_A}', weightsSha256: {weights}}}"), None, "names both"),
            (
                &format!(", builtWith: {{releaseDigest: '{DIGEST_A}'}}"),
                None,
                "does not name the embedding release it queries with",
            ),
        ] {
            let d = with_index(extra, queries_with);
            assert!(says(&d, Code::IndexEmbeddingUnnamed, words), "{extra}: {d:?}");
            assert!(!d.iter().any(|d| d.code == Code::IndexEmbeddingMismatch), "{extra}: {d:?}");
        }
    }

    /// An adapter names its base release by digest; the fields of adapters
    /// and indexes on another role are findings, not ignored.
    #[test]
    fn adapters_name_their_base_and_role_fields_stay_on_their_roles() {
        let one = |a: serde_yaml_ng::Value| lint(&edited(|v| push_artifact(v, a)), &RollbackStatus::NotDeclared);
        assert!(!one(artifact("adapter_model.safetensors", "adapter", &format!(", baseReleaseDigest: '{DIGEST_A}'")))
            .iter()
            .any(|d| d.code == Code::AdapterBaseUnnamed));
        for (extra, words) in [("", "does not name the base release"), (", baseReleaseDigest: abc", "`abc` is not")] {
            let d = one(artifact("adapter_model.safetensors", "adapter", extra));
            assert!(says(&d, Code::AdapterBaseUnnamed, words), "{d:?}");
        }
        let d = one(artifact("x.bin", "other", &format!(", baseReleaseDigest: '{DIGEST_A}'")));
        assert!(says(&d, Code::AdapterBaseUnnamed, "read only on an `adapter`"), "{d:?}");
        let d = one(artifact("x.bin", "other", &format!(", builtWith: {{releaseDigest: '{DIGEST_A}'}}")));
        assert!(says(&d, Code::IndexEmbeddingUnnamed, "read only on a `retrieval-index`"), "{d:?}");
    }
}
