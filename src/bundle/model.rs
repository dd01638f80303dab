//! The `ReleaseBundle` schema (`apiVersion: bundlegate.dev/v1`).
//!
//! Every struct denies unknown fields: a typo in a release file must be an
//! error, not a silently ignored setting. Fields the linter reports on (sha256,
//! size, probes...) are optional here so a missing one becomes a diagnostic
//! with a span instead of a parse error.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub(crate) const API_VERSION: &str = "bundlegate.dev/v1";
pub(crate) const KIND: &str = "ReleaseBundle";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReleaseBundle {
    #[schemars(extend("const" = API_VERSION))]
    pub api_version: String,
    #[schemars(extend("const" = KIND))]
    pub kind: String,
    pub metadata: Metadata,
    pub spec: Spec,
}

impl ReleaseBundle {
    /// Every floating-point field of the bundle that is set, with its field
    /// path: the one list that validation (finite, in range) and the release
    /// digest (distinct values, distinct bytes) both use. Every `f64` of the
    /// schema is here: `spec.serving.loadTimeSeconds.p95`/`p50` and
    /// `spec.canary.gates[].maxAbsolute`/`maxRelativeIncrease`/`minAbsolute`/
    /// `minRelativeDecrease` (a unit test counts the `f64` fields of this file).
    pub(crate) fn float_fields(&self) -> Vec<(String, f64)> {
        let mut out = Vec::new();
        if let Some(lt) = &self.spec.serving.load_time_seconds {
            out.push(("spec.serving.loadTimeSeconds.p95".to_string(), lt.p95));
            if let Some(p50) = lt.p50 {
                out.push(("spec.serving.loadTimeSeconds.p50".to_string(), p50));
            }
        }
        for (i, g) in self.spec.canary.iter().flat_map(|c| c.gates.iter()).enumerate() {
            for (name, v) in [
                ("maxAbsolute", g.max_absolute),
                ("maxRelativeIncrease", g.max_relative_increase),
                ("minAbsolute", g.min_absolute),
                ("minRelativeDecrease", g.min_relative_decrease),
            ] {
                if let Some(v) = v {
                    out.push((format!("spec.canary.gates[{i}].{name}"), v));
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    /// Service name: the InferenceService / Deployment name.
    pub name: String,
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Release version, e.g. `v2` or `2026.12.01`.
    pub version: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

fn default_namespace() -> String {
    "default".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Spec {
    pub runtime: Runtime,
    pub model: Model,
    #[serde(default)]
    pub generation: Option<Generation>,
    pub serving: Serving,
    #[serde(default)]
    pub canary: Option<Canary>,
    #[serde(default)]
    pub rollback: Option<Rollback>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Runtime {
    /// Container image; must be `repo@sha256:<64 hex>`.
    pub image: String,
    pub engine: Engine,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Engine {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Model {
    /// Versioned prefix: `s3://bucket/name/v2/`, `gs://…`, `az://…`, or
    /// `file:relative/dir/` (resolved against the bundle's folder).
    pub storage_uri: String,
    #[serde(default)]
    pub quantization: Option<String>,
    /// KServe model format for `kserve-modelspec` (e.g. `pytorch`, `huggingface`).
    #[serde(default)]
    pub format: Option<String>,
    /// What the model does; it decides which artifacts and blocks lint
    /// requires (docs/tasks.md). Skipped when `chat` (the default) so
    /// existing release digests do not change.
    #[serde(default, skip_serializing_if = "Task::is_chat")]
    pub task: Task,
    /// The release digest (`sha256:…`) of the separate embedding release
    /// this service embeds its queries with; a `retrieval-index` built with
    /// another one answers nothing useful.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_release: Option<String>,
    pub artifacts: Vec<Artifact>,
}

/// What a release's model does.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Task {
    /// A chat model: tokenizer, chat template and generation stop conditions.
    #[default]
    Chat,
    /// Plain text completion: tokenizer and generation stop conditions.
    Completion,
    /// Sentence or token embeddings: tokenizer (and pooling config with a
    /// sentence-transformers `modules.json`); no generation.
    Embedding,
    /// A cross-encoder scoring query–document pairs: tokenizer and labels or config.
    Rerank,
    /// A classifier: tokenizer and labels or config.
    Classification,
    /// Anything else: weights only.
    Other,
}

impl Task {
    #[cfg(test)]
    pub(crate) const ALL: [Task; 6] =
        [Task::Chat, Task::Completion, Task::Embedding, Task::Rerank, Task::Classification, Task::Other];
    fn is_chat(&self) -> bool {
        *self == Task::Chat
    }
    /// Chat and completion models generate text; only their servers read
    /// generation settings.
    pub(crate) const fn generates(self) -> bool {
        matches!(self, Task::Chat | Task::Completion)
    }
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Task::Chat => "chat",
            Task::Completion => "completion",
            Task::Embedding => "embedding",
            Task::Rerank => "rerank",
            Task::Classification => "classification",
            Task::Other => "other",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Artifact {
    /// Relative to `storageUri`; no `..`, not absolute.
    pub path: String,
    #[serde(default)]
    pub sha256: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    pub role: ArtifactRole,
    /// The store's native checksum recorded at publish time, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store_checksum: Option<String>,
    /// `adapter`: the release digest (`sha256:…`) of the base release it applies to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_release_digest: Option<String>,
    /// `retrieval-index`: the embedding model the index was built with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_with: Option<BuiltWith>,
}

/// The embedding model a retrieval index was built with: a separate
/// embedding release by its release digest, or, for an index shipped in the
/// embedding release itself (whose digest covers the index), that release's
/// weights by their sha256.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BuiltWith {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weights_sha256: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArtifactRole {
    Weights,
    Tokenizer,
    ChatTemplate,
    GenerationConfig,
    DriftBaseline,
    Config,
    Other,
    /// A sentence-transformers pooling config (`1_Pooling/config.json`).
    PoolingConfig,
    /// A classifier's or reranker's label names.
    Labels,
    /// A LoRA adapter's weights or config; the artifact names its base release.
    Adapter,
    /// What a retrieval service loads at start; names the embedding model it was built with.
    RetrievalIndex,
    /// The retrieval index's schema (fields, dimensions, metric).
    IndexSchema,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Generation {
    #[serde(default)]
    pub eos_token_ids: Vec<u32>,
    #[serde(default)]
    pub stop_strings: Vec<String>,
    #[serde(default)]
    pub max_output_tokens: Option<u32>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ServingFormat {
    KserveModelspec,
    KserveCustom,
    Deployment,
    // KServe's `LLMInferenceService` (`serving.kserve.io/v1alpha2`): the
    // model source is `spec.model.uri`. (A plain comment: a doc comment
    // would split the schema's enum.)
    KserveLlm,
}

impl ServingFormat {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ServingFormat::KserveModelspec => "kserve-modelspec",
            ServingFormat::KserveCustom => "kserve-custom",
            ServingFormat::Deployment => "deployment",
            ServingFormat::KserveLlm => "kserve-llm",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Serving {
    pub format: ServingFormat,
    #[serde(default = "one")]
    pub replicas: u32,
    #[serde(default = "default_port")]
    pub port: u16,
    #[serde(default)]
    pub resources: Resources,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    #[serde(default)]
    pub rollout: RolloutStrategy,
    #[serde(default)]
    pub probes: Probes,
    /// Measured time from container start to ready, in seconds.
    #[serde(default)]
    pub load_time_seconds: Option<LoadTime>,
    #[serde(default)]
    pub identity: Option<Identity>,
    /// Health URL path probed for downtime measurement during rollout.
    #[serde(default)]
    pub health_path: Option<String>,
    /// Re-check the artifacts in the pod before it may become Ready
    /// (docs/verify-on-start.md). Skipped when default so existing release
    /// digests do not change.
    #[serde(default, skip_serializing_if = "VerifyOnStart::is_full")]
    pub verify_on_start: VerifyOnStart,
    /// `deployment` format: the folder inside the server container that holds
    /// the artifacts, under one of `volumes`' `mountPath`, so the verifier can
    /// mount the same volume read-only. (KServe formats: always `/mnt/models`.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_dir: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum VerifyOnStart {
    /// sha256 and size of every artifact.
    #[default]
    Full,
    /// Sizes only (catches truncated or missing files, not changed bytes).
    Size,
    Off,
}

/// Conservative single-core sha256 rate used to budget the verification
/// (sha2 with SHA-NI does 1.5–2 GB/s; slow or shared cores far less).
pub(crate) const VERIFY_HASH_BYTES_PER_SECOND: u64 = 500 << 20;

impl VerifyOnStart {
    fn is_full(&self) -> bool {
        *self == VerifyOnStart::Full
    }
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            VerifyOnStart::Full => "full",
            VerifyOnStart::Size => "size",
            VerifyOnStart::Off => "off",
        }
    }
}

/// Seconds the in-pod verification adds before the pod can be Ready:
/// `bytes` over [`VERIFY_HASH_BYTES_PER_SECOND`] for `full` (one core: the
/// largest file bounds it), one second for `size`, none for `off`.
pub fn verify_seconds(bytes: u64, mode: VerifyOnStart) -> f64 {
    match mode {
        VerifyOnStart::Full => (bytes as f64 / VERIFY_HASH_BYTES_PER_SECOND as f64).ceil().max(1.0),
        VerifyOnStart::Size => 1.0,
        VerifyOnStart::Off => 0.0,
    }
}

fn one() -> u32 {
    1
}
fn default_port() -> u16 {
    8080
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resources {
    #[serde(default)]
    pub requests: BTreeMap<String, Quantity>,
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
}

/// A Kubernetes quantity as written (`"500m"`, `8Gi`, `1`). Numbers are kept as
/// their decimal text so rendering is exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Quantity(
    #[serde(deserialize_with = "string_or_number")]
    #[schemars(schema_with = "string_or_number_schema")]
    pub String,
);

/// What [`string_or_number`] reads.
fn string_or_number_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": ["string", "number"]})
}

fn string_or_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum SN {
        S(String),
        U(u64),
        F(f64),
    }
    Ok(match SN::deserialize(d)? {
        SN::S(s) => s,
        SN::U(u) => u.to_string(),
        // Always finite: the one YAML reader refuses `.nan`/`.inf` (and
        // numbers past f64) before serde, and JSON has neither.
        SN::F(f) => f.to_string(),
    })
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Toleration {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<String>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
pub enum AccessMode {
    ReadWriteOnce,
    ReadWriteOncePod,
    ReadOnlyMany,
    ReadWriteMany,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub claim_name: String,
    pub access_mode: AccessMode,
    pub mount_path: String,
    #[serde(default)]
    pub read_only: bool,
}

/// An int or a percentage string, like `intstr.IntOrString`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IntOrPercent {
    Int(u32),
    Str(String),
}

impl IntOrPercent {
    /// Resolve against `total` the way Kubernetes does
    /// (`intstr.GetScaledValueFromIntOrPercent`): `round_up` for maxSurge,
    /// round down for maxUnavailable.
    pub(crate) fn resolve(&self, total: u32, round_up: bool) -> Result<u32, String> {
        match self {
            IntOrPercent::Int(i) => Ok(*i),
            IntOrPercent::Str(s) => {
                let p = s
                    .strip_suffix('%')
                    .and_then(|n| n.trim().parse::<u64>().ok())
                    .ok_or_else(|| format!("`{s}` is neither an integer nor a percentage like `25%`"))?;
                let scaled = p.checked_mul(total as u64).ok_or_else(|| format!("`{s}` of {total} overflows"))?;
                let v = if round_up { scaled.div_ceil(100) } else { scaled / 100 };
                u32::try_from(v).map_err(|_| format!("`{s}` of {total} is {v}, above {}", u32::MAX))
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RolloutStrategy {
    #[serde(default = "pct25")]
    pub max_surge: IntOrPercent,
    #[serde(default = "pct25")]
    pub max_unavailable: IntOrPercent,
    #[serde(default = "six_hundred")]
    pub progress_deadline_seconds: u32,
}

impl Default for RolloutStrategy {
    fn default() -> Self {
        RolloutStrategy { max_surge: pct25(), max_unavailable: pct25(), progress_deadline_seconds: 600 }
    }
}

fn pct25() -> IntOrPercent {
    IntOrPercent::Str("25%".into())
}
fn six_hundred() -> u32 {
    600
}

impl RolloutStrategy {
    /// (surge, unavailable) for `replicas`, exactly as the Deployment
    /// controller computes them (both zero is bumped to unavailable 1).
    pub(crate) fn resolve(&self, replicas: u32) -> Result<(u32, u32), String> {
        let surge = self.max_surge.resolve(replicas, true)?;
        let mut unavailable = self.max_unavailable.resolve(replicas, false)?;
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        Ok((surge, unavailable.min(replicas)))
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probes {
    #[serde(default)]
    pub startup: Option<Probe>,
    #[serde(default)]
    pub readiness: Option<Probe>,
    #[serde(default)]
    pub liveness: Option<Probe>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Probe {
    #[serde(default)]
    pub http_get: Option<HttpGet>,
    #[serde(default)]
    pub tcp_socket: Option<TcpSocket>,
    #[serde(default)]
    pub exec: Option<ExecAction>,
    #[serde(default)]
    pub initial_delay_seconds: u32,
    #[serde(default = "ten")]
    pub period_seconds: u32,
    #[serde(default = "one")]
    pub timeout_seconds: u32,
    #[serde(default = "three")]
    pub failure_threshold: u32,
    #[serde(default)]
    pub success_threshold: Option<u32>,
}

fn ten() -> u32 {
    10
}
fn three() -> u32 {
    3
}

impl Probe {
    /// Seconds until this probe gives up on a container that never answers:
    /// initialDelay + period × failureThreshold (Kubernetes semantics; the
    /// timeout overlaps the period).
    pub(crate) fn window_seconds(&self) -> u64 {
        self.initial_delay_seconds as u64 + self.period_seconds as u64 * self.failure_threshold as u64
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HttpGet {
    pub path: String,
    #[serde(default)]
    pub port: Option<u16>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TcpSocket {
    #[serde(default)]
    pub port: Option<u16>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecAction {
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LoadTime {
    pub p95: f64,
    #[serde(default)]
    pub p50: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Identity {
    /// e.g. `/model`.
    pub path: String,
    /// Each JSON field of the response and the digest it must equal.
    pub expect: Vec<IdentityExpect>,
    /// JSON field that says whether the release is registered
    /// (e.g. `in_registry`), which must be `true`.
    #[serde(default)]
    pub registered_field: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IdentityExpect {
    /// Dotted JSON path in the response, e.g. `serving_digest`.
    pub field: String,
    /// `release` (the bundle's release digest) or an artifact path whose
    /// sha256 the field must report.
    pub digest_of: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CanaryMode {
    #[default]
    Canary,
    Shadow,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Canary {
    #[serde(default)]
    pub mode: CanaryMode,
    /// Traffic percentages, strictly increasing in 1..=100 (checked when the
    /// bundle is parsed); `watch` judges each step's window in turn.
    #[serde(deserialize_with = "traffic_steps")]
    pub steps: Vec<u32>,
    /// Analysis window per step, e.g. `30m`.
    pub window: String,
    /// Minimum samples per side before any verdict other than INCONCLUSIVE.
    pub min_samples: u64,
    pub gates: Vec<Gate>,
    /// JSONL file of golden requests, relative to the bundle.
    #[serde(default)]
    pub golden: Option<String>,
    /// Which stack's metrics the gates read (default `bundlegate`). Skipped
    /// when absent so existing bundles keep their release digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<MetricProvider>,
}

/// Metric providers: each maps gate names to that stack's queries
/// (`checks::canary::providers::template`).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MetricProvider {
    #[default]
    Bundlegate,
    Vllm,
    Kserve,
    Istio,
    Dcgm,
}

/// Steps must be strictly increasing percentages in 1..=100; rejected at
/// parse time so every command sees the same valid plan.
fn traffic_steps<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
    let steps = Vec::<u32>::deserialize(d)?;
    if steps.is_empty() || steps.iter().any(|s| !(1..=100).contains(s)) || steps.windows(2).any(|w| w[0] >= w[1]) {
        return Err(serde::de::Error::custom(format!(
            "steps {steps:?} must be strictly increasing traffic percentages in 1..=100, e.g. [10, 50, 100]"
        )));
    }
    Ok(steps)
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Gate {
    /// `error_rate`, `p95_latency_seconds`, `gpu_memory_bytes`, or a declared
    /// quality metric name.
    pub metric: String,
    /// Candidate value must not exceed this.
    #[serde(default)]
    pub max_absolute: Option<f64>,
    /// Candidate may exceed the baseline by at most this fraction (0.10 = +10%).
    #[serde(default)]
    pub max_relative_increase: Option<f64>,
    /// PromQL override with `{{selector}}` and `{{window}}` placeholders.
    #[serde(default)]
    pub query: Option<String>,
    /// Higher-is-better gates (throughput): candidate must not fall below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_absolute: Option<f64>,
    /// Higher-is-better gates: candidate may fall below the baseline by at
    /// most this fraction (0.10 = −10%).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_relative_decrease: Option<f64>,
    /// This gate's provider when it differs from `spec.canary.provider`
    /// (e.g. `dcgm` for GPU memory beside `vllm` latency gates).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<MetricProvider>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rollback {
    /// Path of the previous bundle, relative to this one.
    pub bundle: String,
    /// Its release digest, `sha256:<hex>`.
    pub release_digest: String,
}
