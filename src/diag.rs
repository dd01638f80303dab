//! The one registry of diagnostic codes. `docs/diagnostics.md` is generated
//! from this table (`bundlegate codes --format markdown`) and a test keeps the
//! two in sync, so a code, its documentation and its test are found by grepping
//! the code.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub(crate) struct CodeInfo {
    pub code: &'static str,
    pub name: &'static str,
    pub family: &'static str,
    pub default_severity: Severity,
    /// One paragraph: why this finding matters, with the incident it comes from.
    pub why: &'static str,
    /// What the finding is: something the evidence showed, or evidence that
    /// is missing or incomplete (see [`Kind::MissingEvidence`]).
    pub kind: Kind,
}

/// What a code says about the evidence behind a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Something the evidence showed (a digest differs, a gate failed).
    Finding,
    /// Evidence is missing or incomplete (unread bytes, an incomplete
    /// snapshot, no samples): `-A`/`-W` may quiet it to a warning, never
    /// drop it, and a step carrying it is INCONCLUSIVE at best
    /// ([`crate::report::floor`]): nothing passes on evidence that was not read.
    MissingEvidence,
}

macro_rules! codes {
    ($( $variant:ident => ($code:literal, $name:literal, $family:literal, $sev:ident, $why:literal $(, $kind:ident)?), )*) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code { $($variant,)* }
        impl Code {
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
            pub(crate) fn info(self) -> CodeInfo {
                match self {
                    $(Code::$variant => CodeInfo { code: $code, name: $name, family: $family, default_severity: Severity::$sev, why: $why, kind: codes!(@kind $($kind)?) },)*
                }
            }
        }
    };
    (@kind) => { Kind::Finding };
    (@kind $kind:ident) => { Kind::$kind };
}

codes! {
    // ---- lint: the bundle itself -------------------------------------------------
    ImageNotPinned => ("BG001", "image-not-pinned", "lint", Error,
        "A tag can be moved after review; only `repo@sha256:…` names the exact runtime that was tested (after a new runtime image went live, structured output started being truncated: the image and engine version are part of the release)."),
    ModelPrefixUnversioned => ("BG002", "model-prefix-unversioned", "lint", Error,
        "`latest`, `current` or a prefix without a version is not a release: bytes can change under the same path and Argo stays green while the service changes (files replaced under an unchanged path take effect only when a pod restarts, and nobody can tell which bytes are served: one version, one path)."),
    ArtifactUnhashed => ("BG003", "artifact-unhashed", "lint", Error,
        "An artifact without sha256 and size cannot be verified in the store; the release would be whatever bytes happen to be there."),
    ArtifactPathEscapes => ("BG004", "artifact-path-escapes", "lint", Error,
        "Artifact paths are relative to the versioned prefix. An absolute path or `..` reaches outside the release and could read or overwrite another version."),
    ArtifactDuplicatePath => ("BG005", "artifact-duplicate-path", "lint", Error,
        "Two entries for one path make the expected bytes ambiguous; one of them can never match."),
    GenerationConfigIncomplete => ("BG006", "generation-config-incomplete", "lint", Error,
        "EOS token ids, stop strings and a maximum output length are generation stop conditions; a missing one truncates or runs on output (a release once truncated structured output, and the stop strings lived in a separate mutable config)."),
    TokenizerNotPinned => ("BG007", "tokenizer-not-pinned", "lint", Error,
        "The tokenizer and chat template change what the model receives even when the weights do not; they must be artifacts of this release with a digest (after a rollback the old image still read the \"latest\" tokenizer from the same directory, and the errors stayed)."),
    StartupProbeMissing => ("BG008", "startup-probe-missing", "lint", Error,
        "Without a startup probe, liveness starts counting at container start; when the measured load time exceeds its window the pod is killed while loading, forever (a restart storm: liveness killed pods that were still loading)."),
    ReadinessTcpOnly => ("BG009", "readiness-tcp-only", "lint", Warning,
        "An open port is not a loaded model. Readiness must ask the application whether the model is loaded and verified (an open TCP port routes traffic to a pod whose model is still loading or failed its checks)."),
    RollbackTargetMissing => ("BG010", "rollback-target-missing", "lint", Warning,
        "Without a named previous bundle, a failed release has no verified exit: `rollout undo` restores only the pod template, not the weights (a rollback once made every pod Ready again, but the old image still read the latest tokenizer and the stop strings from mutable config, and the errors stayed)."),
    RollbackTargetUnresolvable => ("BG011", "rollback-target-unresolvable", "lint", Error,
        "The rollback target must exist, parse, and hash to the recorded release digest; otherwise the exit path is a guess made during an incident."),
    ArtifactDigestMalformed => ("BG012", "artifact-digest-malformed", "lint", Error,
        "A sha256 is 64 lowercase hex characters; anything else can never be verified."),
    StartupWindowTooShort => ("BG013", "startup-window-too-short", "lint", Error,
        "The startup probe gives up after initialDelay + period × failureThreshold seconds; below the measured p95 load time the kubelet restarts a pod that was still loading (a restart storm: liveness killed pods that were still loading)."),
    LoadTimeUnmeasured => ("BG014", "load-time-unmeasured", "lint", Warning,
        "Probe windows and progress deadlines can only be checked against a measured load time (p95 seconds from start to ready); without it they are guesses."),
    CanaryPlanInvalid => ("BG015", "canary-plan-invalid", "lint", Error,
        "A canary plan must have increasing traffic steps, a window, a minimum sample size and at least one gate; otherwise its verdict proves nothing (a 5% canary had sent the new version 1 request in 20: that is not evidence)."),
    ModelPrefixVersionMismatch => ("BG016", "model-prefix-version-mismatch", "lint", Warning,
        "The storage prefix should name the release version, so a reader of the manifest sees which version a path holds."),
    IdentityEndpointMissing => ("BG017", "identity-endpoint-missing", "lint", Warning,
        "The service's own identity endpoint is the only signal that shows what is really served when pods and Argo look green (after a manual model swap, only the service's `/model` answer showed that the right digest was served but was not in the registry)."),
    ProgressDeadlineShort => ("BG018", "progress-deadline-short", "lint", Warning,
        "A progress deadline shorter than the load time marks a healthy slow rollout ProgressDeadlineExceeded, which does not roll back anything (Kubernetes only sets the condition, and `rollout undo` restores only the pod template, not the weights or config)."),
    StorageSchemeUnsupported => ("BG019", "storage-scheme-unsupported", "lint", Error,
        "bundlegate knows s3://, gs://, az://, abfs://, file: and KServe's oci://, oci+native://, oci+fetch:// storage URIs (the one table lint and the store share); any other scheme, or a malformed URI of these, cannot be verified. Hadoop's s3a:// is refused: KServe's storage-initializer cannot download it."),
    RollbackTargetOutsideRepo => ("BG020", "rollback-target-outside-repo", "lint", Error,
        "The rollback target is read and reported on; a path that leaves the repository (absolute, `..`, or a symlink) could make lint read any file on the runner, such as a `.env`, so it is refused unread."),
    ReservedName => ("BG021", "reserved-name", "lint", Error,
        "The bundle supplies a name bundlegate sets itself in the pod (env `STORAGE_URI`, `BUNDLEGATE_*`, `GENERATION_*`; the verifier's container or volume; its labels): in a container's env the later of two equal names wins, so the pod would load or check something other than the verified release."),
    RollbackTargetIsRelease => ("BG022", "rollback-target-is-release", "lint", Error,
        "The rollback target is this release itself (the same file by any path, a symlink to it, or a copy with the same release digest): rolling back would restore the bytes that failed, so the release has no exit while every check of the target passes."),
    ExtendedResourceFractional => ("BG023", "extended-resource-fractional", "lint", Error,
        "An extended resource (a name with a domain prefix other than `kubernetes.io/`, such as `nvidia.com/gpu`) is counted in whole devices: Kubernetes' API server refuses a request or limit that is not a whole number (`must be an integer`, pod validation `ValidateResourceRequirements`), so `nvidia.com/gpu: 500m` passes every check of the bundle and the pod is never created."),
    ResourceLimitMissing => ("BG024", "resource-limit-missing", "lint", Error,
        "A resource Kubernetes does not overcommit (extended resources such as `nvidia.com/gpu`, and hugepages) needs a limit wherever it is requested: the API server refuses the pod with `Limit must be set for non overcommitable resources` (pod validation `ValidateResourceRequirements`). A limit alone is enough: the request defaults to it."),
    RequestLimitMismatch => ("BG025", "request-limit-mismatch", "lint", Error,
        "Kubernetes' API server refuses a container whose request exceeds its limit, and for a resource it does not overcommit (extended resources such as `nvidia.com/gpu`, hugepages) whose request differs from its limit at all (`must be equal to … limit`, pod validation `ValidateResourceRequirements`): the pod is never created while the bundle reads as valid."),
    OciReferenceNotPinned => ("BG026", "oci-reference-not-pinned", "lint", Error,
        "An OCI storage URI names its model by tag alone (`oci://registry/repo:v2`); a tag can be moved to another manifest at any time, by anyone who can push, so the bytes the pod pulls are not the ones reviewed. The manifest digest pins them: `oci://registry/repo@sha256:<digest>` (`repo:tag@sha256:…` is fine: the digest rules, the tag is a label)."),
    RolloutNotExpressible => ("BG027", "rollout-not-expressible", "lint", Warning,
        "The bundle sets a rollout strategy (`spec.serving.rollout` other than the Deployment defaults 25% / 25% / 600 s) that the serving format cannot carry: KServe v0.20's `LLMInferenceService` has no strategy field (kserve#5452 adds one later), so its controller's Deployments roll with the defaults whatever the bundle says. On one GPU per node a 25% surge of one replica is one more GPU, the surge deadlock the bundle's `maxSurge: 0` was meant to avoid. The render still renders; preflight judges the surge KServe will really use."),
    GenerationOnNonGeneratingTask => ("BG030", "generation-on-non-generating-task", "lint", Error,
        "A `generation` block on a release whose `spec.model.task` does not generate (embedding, rerank, classification, other) is never applied: the stop conditions a reviewer reads would not exist in the served model, or the bundle's task is wrong and the chat rules were skipped. Drop the block or set the task that generates (docs/tasks.md)."),
    TaskArtifactMissing => ("BG031", "task-artifact-missing", "lint", Error,
        "What a model needs besides its weights depends on its task (docs/tasks.md): an embedding model loaded through a sentence-transformers `modules.json` pools by its `1_Pooling/config.json` (without it the server falls back to another pooling and the vectors no longer match the index); a reranker or classifier maps its outputs through label names or its config. That file must be an artifact of this release with a digest, or it is whatever the server finds."),
    IndexEmbeddingMismatch => ("BG032", "index-embedding-mismatch", "lint", Error,
        "A retrieval index holds vectors made by one embedding model; queries embedded by another model land in a different space and retrieval returns unrelated documents while every health check stays green. The index's `builtWith` must name the embedding release the service queries with (`spec.model.embeddingRelease`) or, for an index shipped in the embedding release itself, that release's `weights` sha256."),
    IndexEmbeddingUnnamed => ("BG033", "index-embedding-unnamed", "lint", Error,
        "A `retrieval-index` that does not say which embedding model built it (`builtWith`), or names a separate embedding release while the bundle does not say which one it queries with (`spec.model.embeddingRelease`), cannot be checked against the model that embeds the queries: re-embedding the corpus with a new model is then invisible to review."),
    AdapterBaseUnnamed => ("BG034", "adapter-base-unnamed", "lint", Error,
        "A LoRA adapter changes the outputs of one base model only; applied to another base it loads without error and answers wrongly. Each `adapter` artifact names the base release it was trained on by its release digest (`baseReleaseDigest: sha256:<64 hex>`)."),
    VerifyOnStartNotRendered => ("BG040", "verify-on-start-not-rendered", "lint", Warning,
        "`spec.serving.verifyOnStart` (default `full`) asks for the pod to re-check its model files before it is Ready, but the rendered pod cannot carry the verifier: a `deployment` bundle without `spec.serving.modelDir` (where the server reads the files), or a user template that leaves the `verifier` value out. Between the PR's store check and the pod start the bytes can still change (docs/verify-on-start.md). Set `modelDir`, render the verifier, or set `verifyOnStart: off` to accept that explicitly."),

    // ---- verify: the store holds exactly the bundle's bytes ---------------------
    ArtifactMissing => ("BG101", "artifact-missing", "verify", Error,
        "The server needs every file of the release to start; a missing non-model file crash-loops the new pod while the old one keeps serving (a release once crash-looped because its prefix lacked clean_corpus.txt, a drift-monitor baseline, not a model file)."),
    ArtifactSizeMismatch => ("BG102", "artifact-size-mismatch", "verify", Error,
        "The object in the store is not the recorded size: it is a different or truncated file."),
    ArtifactDigestMismatch => ("BG103", "artifact-digest-mismatch", "verify", Error,
        "The bytes in the store differ from the reviewed release even though the path is the same; Argo would stay green while the served model changed."),
    ExtraObject => ("BG104", "extra-object", "verify", Warning,
        "An object under the versioned prefix that the bundle does not list is downloaded by KServe's storage-initializer too; the release is then more than what was reviewed."),
    ObjectChangedDuringRead => ("BG105", "object-changed-during-read", "verify", Error,
        "The object was overwritten between listing and reading; its bytes cannot be attributed to one version.", MissingEvidence),
    ObjectUnreadable => ("BG106", "object-unreadable", "verify", Error,
        "The object could not be read to the end (denied, not found, truncated, timed out); unreadable is never OK.", MissingEvidence),
    ArtifactDrifted => ("BG107", "artifact-drifted", "verify", Error,
        "The object's identity (ETag/version/size/modified time) changed since the last audit: something rewrote a released path."),
    StoreObjectEscapes => ("BG108", "store-object-escapes", "verify", Error,
        "A store entry that cannot be read as an object of the versioned prefix is not part of the release and is never read: in a `file:` store a symlink leading outside the prefix (reading it would verify, and list, files of the host instead of the model), a dangling symlink, a FIFO, socket or device (a copy would hang or fail), or a name the store library does not serve (`name#123`, its mark of an unfinished upload); in a bucket an object named as the prefix itself (`v2/` holding bytes). It is named in the report, never dropped from the listing."),
    ObjectNotChecked => ("BG109", "object-not-checked", "verify", Error,
        "The store stopped answering (connection refused, DNS failure) before the object was read to the end; verify stops starting new reads at the first such failure, and an object never read is never OK.", MissingEvidence),
    StorageUriOutsideRoot => ("BG110", "storage-uri-outside-root", "verify", Error,
        "A `file:` storage URI must stay inside the store root (the bundle's git work tree, else the bundle's own folder, never the current folder; or BUNDLEGATE_STORE_ROOT); `file:/etc/` or `../` out of it would list and hash host files. Nothing is listed or read.", MissingEvidence),
    NothingVerified => ("BG111", "nothing-verified", "verify", Error,
        "The bundle lists no artifacts, so verify read and compared nothing; a PASS would be a verdict on evidence that does not exist (a rollback target with no artifacts would be \"verified\" and rolled back to). An artifact left unread whose finding was allowed (`-A`) or made a warning (`-W`) likewise keeps the step from PASS: the finding may go, the verdict on unread bytes may not.", MissingEvidence),
    OciTagMoved => ("BG112", "oci-tag-moved", "verify", Note,
        "The bundle names its OCI model `repo:tag@sha256:<digest>` and the tag now names another manifest, or none. The digest rules: verify and the pod read the pinned manifest, so the release is unchanged; but the tag a reader sees in the bundle no longer says which bytes it is, and whoever moved it may expect the next pull of the tag to serve them."),

    // ---- preflight: can this rollout happen on this cluster? --------------------
    SurgePodUnschedulable => ("BG201", "surge-pod-unschedulable", "preflight", Error,
        "A rolling update needs room for its surge pods while the old ones still run. Without it the new pod stays Pending silently while every signal is green (a surge pod once sat Pending on Insufficient cpu, the node's requests at 96%, while `/health` kept answering 200; with one GPU, 1 replica and maxSurge 1 the new pod needs a second GPU)."),
    QuotaExceeded => ("BG202", "quota-exceeded", "preflight", Error,
        "The namespace ResourceQuota must leave headroom for the surge pods, and each container of the new pod (the file verifier sidecar too) must set the cpu and memory the quota constrains, else the ReplicaSet cannot create them and the rollout stalls."),
    RwopRolloutDeadlock => ("BG203", "rwop-rollout-deadlock", "preflight", Error,
        "A ReadWriteOncePod claim with maxUnavailable 0 deadlocks: the old pod holds the claim until the new one is ready, the new one cannot schedule until the claim is free (a rollout once hung this way while the Deployment read Available=True and Progressing=True until its 600 s progress deadline)."),
    RwoMultiAttachRisk => ("BG204", "rwo-multi-attach-risk", "preflight", Warning,
        "A ReadWriteOnce volume is attachable to one node; with more than one schedulable node the surge pod can land elsewhere and fail with Multi-Attach (on a single-node cluster such a rollout finished in 41 s only because old and new pods shared the node)."),
    PdbBlocksDisruption => ("BG205", "pdb-blocks-disruption", "preflight", Warning,
        "A PodDisruptionBudget that allows zero disruptions blocks node drains and evictions for this service."),
    ProbeKillsLoadingPod => ("BG206", "probe-kills-loading-pod", "preflight", Error,
        "The worst-case seconds before liveness kills a loading pod are below the measured load time: predicted restart loop (a restart storm: liveness killed pods that were still loading)."),
    ClusterStateIncomplete => ("BG207", "cluster-state-incomplete", "preflight", Error,
        "The cluster snapshot lacks the objects needed to decide (no nodes, unparseable quantities); an unknown cluster is never PASS.", MissingEvidence),
    NoEligibleNodes => ("BG208", "no-eligible-nodes", "preflight", Error,
        "No node satisfies the pod's nodeSelector, affinity and tolerations at all, so even the first pod cannot run."),
    ResourceQuantityInvalid => ("BG209", "resource-quantity-invalid", "preflight", Error,
        "A request or limit in the bundle is not a Kubernetes quantity the scheduler can use (negative, NaN/Inf, garbage, above 2^63-1): a negative request would subtract capacity and let an overfull node pass."),

    // ---- canary: candidate vs baseline ---------------------------------------------
    CanaryGateFailed => ("BG301", "canary-gate-failed", "canary", Error,
        "The candidate is worse than the baseline beyond the configured limit with statistical support."),
    CanaryGateInconclusive => ("BG302", "canary-gate-inconclusive", "canary", Error,
        "Too few samples to detect the configured effect; below the minimum sample size a canary proves nothing (a 5% canary had sent the new version 1 request in 20).", MissingEvidence),
    CanaryNoData => ("BG303", "canary-no-data", "canary", Error,
        "No samples for a gate's metric; no data is never a pass (Flagger counts it as a failed check).", MissingEvidence),
    GoldenSampleFailed => ("BG304", "golden-sample-failed", "canary", Error,
        "A golden request got an invalid answer (invalid JSON, wrong finish reason, length or latency out of bounds)."),
    CanaryGateUnsupported => ("BG305", "canary-gate-unsupported", "canary", Error,
        "The gate's metric provider exports nothing that computes this gate (e.g. time to first token under Istio); it would read NO DATA on every run, so it is named at lint time instead of being skipped."),
    CanaryGateDirection => ("BG306", "canary-gate-direction", "canary", Error,
        "A gate's limits point the wrong way: higher-is-better gates (throughput) take minAbsolute / minRelativeDecrease, lower-is-better gates take maxAbsolute / maxRelativeIncrease; a limit on the wrong side would never trigger."),
    CanaryFullStepUnchecked => ("BG307", "canary-full-step-unchecked", "canary", Warning,
        "At a 100% traffic step the baseline serves nothing, so no gate can compare the arms there; only absolute limits (maxAbsolute / minAbsolute) hold the candidate at full traffic. A plan ending at 100% with relative limits only leaves that step NOT CHECKED, and a regression that shows only under full load goes unseen."),

    TrafficSplitMismatch => ("BG310", "traffic-split-mismatch", "canary", Error,
        "The arms' request counts do not follow the split the objects declare (an InferenceService's `spec.canary[].trafficPercent`, an LLMInferenceService's route group weights): more than 5 points off, with the exact binomial test supporting it. The step's gates then judged another split than the one declared (a gateway ignoring the weights, a route group typed twice), so its verdict is not the declared step's."),
    TrafficSplitUnproven => ("BG311", "traffic-split-unproven", "canary", Error,
        "Too few requests to show whether the declared traffic split holds (fewer than needed to see a 5-point difference at the gates' level and power): the step's evidence may come from another split.", MissingEvidence),
    TrafficSplitUnreadable => ("BG312", "traffic-split-unreadable", "canary", Error,
        "The rendered objects state no traffic split to judge: more than one `spec.canary` entry, a candidate LLMInferenceService without a route group and weight, or a group whose weights sum to 0. Without the declared split, the observed one cannot be held to anything.", MissingEvidence),

    // ---- rollout truth (watch, revert, verify-serving) -------------------------------
    RolloutIncomplete => ("BG501", "rollout-incomplete", "watch", Error,
        "Ready pods still run the previous release, a new pod is Pending or crash-looping, or the pods' source URI is not the bundle's; Argo and the Deployment can read green in this state (a new pod once crash-looped while `get isvc` READY, its conditions, the API answering from the old pod and `get deploy` 1/1/1 all read green)."),
    IdentityMismatch => ("BG502", "identity-mismatch", "watch", Error,
        "The service reports a digest other than the bundle's, or reports itself unregistered (after a manual promote the service served the right digest with `in_registry` false, so nobody could say how the live release had been evaluated)."),
    DowntimeMeasured => ("BG503", "downtime-measured", "watch", Error,
        "The health probe failed during the rollout; zero downtime is a measurement, not a claim (`delete pod -l` on a one-replica service once removed the old pod with the new one: 208 ok / 42 fail, about 13 s without service)."),
    ArgoNotSynced => ("BG504", "argo-not-synced", "watch", Error,
        "Argo CD has not finished a successful sync of the merge commit; its health status alone is not evidence (it reads Progressing, even Healthy, while the new pod is Pending)."),
    RollbackTargetUnverified => ("BG505", "rollback-target-unverified", "watch", Error,
        "The previous bundle's artifacts must be complete and readable before rolling back to it; otherwise take the degrade path (an old package whose tokenizer was missing and compatibility unknown: switching to it blindly adds a new failure, so degrade first)."),
    RolloutEvidenceIncomplete => ("BG506", "rollout-evidence-incomplete", "watch", Error,
        "A pod's state cannot tell whether it serves (phase Unknown, a Ready pod of a ReplicaSet already scaled to 0, a ready new pod that is terminating): the step is INCONCLUSIVE, never FAIL, so no revert is opened on it.", MissingEvidence),
    PodsNotServing => ("BG507", "pods-not-serving", "watch", Note,
        "Pods that serve nothing (Failed or Succeeded, e.g. an Evicted pod kept until pod GC; terminating; not ready and wanted by no ReplicaSet) are history: reported, never counted as another release still serving."),
    RestartStorm => ("BG508", "restart-storm", "watch", Error,
        "A container of the new release restarted while the rollout was held for its stability window: a pod that is Ready at one instant but restarting every minute passes any single snapshot (liveness once killed pods that were still loading, over and over, while each snapshot showed a Ready pod). The finding names the container, its restart count before and after, and the last termination reason (OOMKilled, Error, exit code)."),
    ArgoRevisionUnknown => ("BG509", "argo-revision-unknown", "watch", Error,
        "The revisions Argo CD reports are not in the local repository (a shallow clone, a hydration branch), so whether they contain the merge commit cannot be told: INCONCLUSIVE, never FAIL, and never a revert.", MissingEvidence),
    ReleaseSuperseded => ("BG510", "release-superseded", "watch", Note,
        "Argo CD synced a later commit at which the Application's source renders another release (the bundle edited in place, its folder or `current` link moved, the Application pointed elsewhere): this release is no longer the one git asks for. The watch is INCONCLUSIVE, naming that commit and release; its rollout, identity, downtime and canary steps are NOT RUN (the pods and the endpoint are the later release's, which its own watch judges), and it is never failed or reverted: in a repository of many models merges land minutes apart."),
    PodArtifactMismatch => ("BG530", "pod-artifact-mismatch", "watch", Error,
        "The files the model server opens are not the bytes git pins: missing, a different size (truncated or resumed download) or a different sha256 (overwritten object, stale node cache). The pod must never become Ready with them (docs/verify-on-start.md)."),

    // ---- audit at scale: shards, merged reports, shared cache --------------------
    AuditCacheRebuilt => ("BG601", "audit-cache-rebuilt", "audit", Warning,
        "The audit cache was corrupt, foreign (another schema or another bundle's) or unreadable, so nothing in it was trusted: every object was re-hashed. The audit is still complete; it only cost the bytes."),
    ShardCoverageIncomplete => ("BG602", "shard-coverage-incomplete", "audit", Error,
        "Merged shard reports must cover one tree state exactly once, read from the audit steps the reports hold, not from the bundles they say they own: a missing shard, a shard counted twice, shards of different trees or commits, or a report whose audit steps are not exactly its owned bundles (steps removed, another shard's steps, a bundle audited twice) leave bundles unaudited or audited against another state, so the merged audit is INCONCLUSIVE, never PASS.", MissingEvidence),

    // ---- signature: who vouched for the release (docs/signing.md) -----------------
    SignatureMissing => ("BG701", "signature-missing", "signature", Error,
        "The signature policy (`signature.mode` in `--config`) asks for a model signature and none was found: no `model.sig` next to the bundle (nor, for `verify`, in the store beside the files). A digest says the bytes did not change since review; only a signature says who vouched for them. Under `mode: optional` this is a warning."),
    SignatureMalformed => ("BG702", "signature-malformed", "signature", Error,
        "A signature file that cannot be read as an OpenSSF model-signing signature (a Sigstore bundle v0.3 holding a DSSE envelope over an in-toto Statement v1) vouches for nothing: oversized, not JSON, a payload that is not a statement, more resources than the bound, a name with `..` or an absolute name, a file listed twice, a certificate chain that is not X.509 or longer than 10, or a keyless bundle (key and certificate modes are supported). It is never read as signed."),
    SignatureUntrusted => ("BG703", "signature-untrusted", "signature", Error,
        "The signature does not verify under any public key the policy allows (`signature.publicKeys`): signed by another key, or changed after signing; in certificate mode, its chain does not lead to a CA of `signature.trustedRoot`, the signing certificate may not sign, or its key does not verify the signature. Whatever it claims is not trusted."),
    SignedFileNotInBundle => ("BG704", "signed-file-not-in-bundle", "signature", Error,
        "The signature vouches for a file the bundle does not list: the signed model is not the reviewed release (a file removed from the bundle after signing, or the signature of another model)."),
    BundleFileNotSigned => ("BG705", "bundle-file-not-signed", "signature", Error,
        "The bundle lists a file the signature does not cover: nobody vouched for it (a file added after signing, such as a new tokenizer or template)."),
    SignedDigestMismatch => ("BG706", "signed-digest-mismatch", "signature", Error,
        "The signer vouched for other bytes than the bundle pins for this file: the bundle's sha256 was changed after signing, or the signature is of another version."),
    ReleaseSignatureMismatch => ("BG707", "release-signature-mismatch", "signature", Error,
        "`release.sig` signs a release digest other than this bundle's: a setting the digest covers (image, generation, serving, rollout, canary, rollback) changed after signing, so what was vouched for is not what would be deployed. Re-sign after review, or undo the change."),
    SigningCertificateExpired => ("BG708", "signing-certificate-expired", "signature", Error,
        "A certificate of the signature's chain is outside its validity now (expired, or not yet valid). Certificate mode carries no signed timestamp saying when it signed, so the chain must hold at the time of the check: sign again with a current certificate."),
    SignerIdentityNotAllowed => ("BG709", "signer-identity-not-allowed", "signature", Error,
        "The signature's certificate chains to the trusted root, but names an identity (subject alternative name) and issuer the policy's `certificateIdentities` do not list: the CA vouches for whoever it issued to, the policy says who may sign releases."),
}

impl Code {
    /// The stable code, e.g. `BG001`.
    pub(crate) fn as_str(self) -> &'static str {
        self.info().code
    }

    /// Does the code mean evidence is missing or incomplete ([`Kind::MissingEvidence`])?
    pub(crate) fn missing_evidence(self) -> bool {
        self.info().kind == Kind::MissingEvidence
    }

    pub(crate) fn from_str_any(s: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| {
            let i = c.info();
            i.code.eq_ignore_ascii_case(s) || i.name.eq_ignore_ascii_case(s)
        })
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tests and callers that hold a code as text compare without converting.
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// Reports carry the code as its stable string (`"BG001"`): the JSON report
/// format does not change with the Rust enum.
impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A report naming a code this build does not know (another version's) is
/// refused rather than read as something else.
impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown diagnostic code `{s}`")))
    }
}

/// Severity after overrides. `Allow` diagnostics are kept out of reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Allow,
    Note,
    Warning,
    Error,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Allow => "allow",
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        })
    }
}

/// A position in a user's file: 1-based line and column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub file: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Stable code, e.g. `BG001` (serialized as that string).
    pub code: Code,
    /// Stable kebab-case name, e.g. `image-not-pinned`.
    pub name: String,
    pub severity: Severity,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub span: Option<Span>,
    /// Dotted field path inside the file, when the finding is about a field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Short "why this matters", from the code's documentation.
    pub why: String,
    /// Facts behind the finding: node names, numbers, object keys.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub evidence: Vec<String>,
    /// What the user can do about it.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub help: Vec<String>,
}

impl Diagnostic {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        let info = code.info();
        Diagnostic {
            code,
            name: info.name.to_string(),
            severity: info.default_severity,
            message: message.into(),
            span: None,
            field: None,
            why: info.why.to_string(),
            evidence: Vec::new(),
            help: Vec::new(),
        }
    }
    pub fn at(mut self, span: Option<Span>) -> Self {
        self.span = span;
        self
    }
    pub(crate) fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
    pub(crate) fn evidence(mut self, e: impl Into<String>) -> Self {
        self.evidence.push(e.into());
        self
    }
    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.help.push(h.into());
        self
    }
    pub(crate) fn severity(mut self, s: Severity) -> Self {
        self.severity = s;
        self
    }
}

/// Per-code severity overrides (`-A/-W/-D CODE`, or `severity:` in config).
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    map: BTreeMap<Code, Severity>,
}

impl Overrides {
    pub(crate) fn set(&mut self, code: &str, sev: Severity) -> anyhow::Result<()> {
        let c = Code::from_str_any(code)
            .ok_or_else(|| anyhow::anyhow!("unknown diagnostic code `{code}` (see `bundlegate codes`)"))?;
        self.map.insert(c, sev);
        Ok(())
    }

    /// Apply overrides and drop allowed diagnostics. A code meaning missing
    /// evidence is quieted to a warning at most, never dropped: the report's
    /// verdict floor must still see that the evidence was not there.
    pub(crate) fn apply(&self, diags: Vec<Diagnostic>) -> Vec<Diagnostic> {
        diags
            .into_iter()
            .filter_map(|mut d| {
                if let Some(s) = self.map.get(&d.code) {
                    d.severity = *s;
                }
                if d.code.missing_evidence() && d.severity < Severity::Warning {
                    d.severity = Severity::Warning;
                }
                (d.severity != Severity::Allow).then_some(d)
            })
            .collect()
    }
}

/// A code's heading in `docs/diagnostics.md`.
fn heading(i: &CodeInfo) -> String {
    format!("{} `{}` ({})", i.code, i.name, i.default_severity)
}

impl Code {
    /// The anchor GitHub gives the code's heading in `docs/diagnostics.md`
    /// (lowercase; letters, digits, `-` and `_` kept; spaces to `-`), so a
    /// link (SARIF's `helpUri`) lands on it.
    pub(crate) fn docs_anchor(self) -> String {
        heading(&self.info())
            .to_lowercase()
            .chars()
            .filter_map(|c| match c {
                ' ' => Some('-'),
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
                _ => None,
            })
            .collect()
    }
}

/// Markdown documentation for every code; `docs/diagnostics.md` is this text.
pub(crate) fn markdown_docs() -> String {
    let mut out = String::from(
        "# Diagnostics\n\nGenerated from `src/diag.rs` (`bundlegate codes --format json | jq -r '.steps[0].details[0].body'`); a test keeps the two in sync.\n\
         Override a severity with `-A CODE` (allow), `-W CODE` (warn) or `-D CODE` (deny), by code or name.\n",
    );
    let mut family = "";
    for c in Code::ALL {
        let i = c.info();
        if i.family != family {
            family = i.family;
            out.push_str(&format!("\n## {family}\n"));
        }
        out.push_str(&format!("\n### {}\n\n{}\n", heading(&i), i.why));
        if i.kind == Kind::MissingEvidence {
            out.push_str("\nEvidence missing or incomplete: `-A` or `-W` makes it a warning, never drops it, and the step is then INCONCLUSIVE, never PASS.\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_and_names_are_unique() {
        let mut codes = HashSet::new();
        let mut names = HashSet::new();
        for c in Code::ALL {
            let i = c.info();
            assert!(codes.insert(i.code), "duplicate code {}", i.code);
            assert!(names.insert(i.name), "duplicate name {}", i.name);
            assert!(i.name.chars().all(|ch| ch.is_ascii_lowercase() || ch == '-' || ch.is_ascii_digit()));
        }
    }

    /// One name per code: the variant is the kebab name in CamelCase
    /// (`cluster-state-incomplete` ↔ `ClusterStateIncomplete`), and the
    /// registry lists each family once, codes ascending, so the generated
    /// docs/diagnostics.md has each family in one place.
    #[test]
    fn variants_are_their_names_and_families_are_contiguous() {
        let mut families: Vec<&str> = Vec::new();
        let mut last = "";
        for c in Code::ALL {
            let i = c.info();
            let camel: String = i.name.split('-').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect();
            assert_eq!(format!("{c:?}"), camel, "{}", i.code);
            assert!(i.code > last, "{} listed after {last}", i.code);
            last = i.code;
            if families.last() != Some(&i.family) {
                assert!(!families.contains(&i.family), "family {} listed twice ({})", i.family, i.code);
                families.push(i.family);
            }
        }
    }
}
