//! Pipelines (`pipelines/*.yaml`): which steps run, with which options, and
//! whether a failure stops the remaining steps for that bundle.
//!
//! A pipeline is validated completely before anything runs, so a typo never
//! leaves a half-run pipeline. A step whose capability or inputs are absent
//! reports NOT RUN with the reason; a `required` step that did not run makes
//! the run INCONCLUSIVE, never PASS.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::bundle;
use crate::options::{
    AuditOptions, CanaryOptions, PreflightOptions, PromoteOptions, RenderOptions, RevertOptions, VerifyOptions,
    WatchOptions,
};
use crate::yaml_guard::{Node, NodeKind};

// Running a pipeline takes every adapter; reading one takes none, so the
// parser is in the core (`--no-default-features`, the fuzz build).
#[cfg(feature = "cli")]
mod run;
#[cfg(feature = "cli")]
pub use run::{run_file, Inputs};

/// A pipeline file, validated: every step's options typed and checked.
#[derive(Debug)]
pub struct Pipeline {
    pub name: String,
    /// `changed` (bundles the PR changes, from git) or `all` (every bundle under `root`).
    pub bundles: Option<BundleSelection>,
    pub steps: Vec<Step>,
}

/// The file as written; [`parse`] turns it into a [`Pipeline`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(
    rename = "Pipeline",
    description = "A bundlegate pipeline (pipelines/*.yaml): which steps run on which bundles, with which options."
)]
struct PipelineFile {
    #[schemars(extend("const" = "bundlegate.dev/v1"))]
    api_version: String,
    #[schemars(extend("const" = "Pipeline"))]
    kind: String,
    metadata: PipelineMeta,
    spec: PipelineSpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PipelineMeta {
    name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PipelineSpec {
    #[serde(default)]
    bundles: Option<BundleSelection>,
    steps: Vec<StepFile>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BundleSelection {
    pub from: SelectFrom,
    #[serde(default)]
    pub root: Option<PathBuf>,
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq, Eq, Clone, Copy)]
#[serde(rename_all = "kebab-case")]
pub enum SelectFrom {
    Changed,
    All,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    Lint,
    Render,
    Verify,
    Preflight,
    Canary,
    Comment,
    Audit,
    Watch,
    Revert,
    Promote,
}

#[derive(Debug, Deserialize, JsonSchema, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum OnFailure {
    /// Later steps for this bundle still run (a PR comment wants all evidence).
    #[default]
    Continue,
    /// Later steps for this bundle are skipped (reported as NOT RUN).
    Stop,
}

/// One step as written. `with` holds the options of the command the step
/// runs, in that command's own options type; it is read in a second pass,
/// from the document's tree, once `name` says which type (see
/// [`StepSpec::from_node`]), so its errors keep their positions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct StepFile {
    name: StepKind,
    #[serde(default)]
    on_failure: OnFailure,
    #[serde(default)]
    required: bool,
    /// Accepted here, read in the second pass.
    #[serde(default, rename = "with")]
    _with: Option<serde::de::IgnoredAny>,
}

/// The schema of a step: one shape per `name`, its `with` the schema of the
/// options type [`StepSpec::from_node`] reads for it (the derive cannot say
/// "the type of `with` depends on `name`").
impl JsonSchema for StepFile {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Step".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let shapes: Vec<serde_json::Value> = StepKind::ALL
            .iter()
            .map(|k| {
                serde_json::json!({
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["name"],
                    "properties": {
                        "name": {"const": k.as_str()},
                        "onFailure": g.subschema_for::<OnFailure>(),
                        "required": {
                            "type": "boolean",
                            "default": false,
                            "description": "A required step that does not run makes the run INCONCLUSIVE.",
                        },
                        "with": k.with_schema(g),
                    },
                })
            })
            .collect();
        schemars::json_schema!({"oneOf": shapes})
    }
}

/// One options mapping read as two types ([`split`]): their properties
/// together, nothing else.
fn merged_schema(parts: [schemars::Schema; 2]) -> schemars::Schema {
    let mut properties = serde_json::Map::new();
    for p in parts {
        if let Some(serde_json::Value::Object(props)) = p.get("properties") {
            properties.extend(props.clone());
        }
    }
    schemars::json_schema!({"type": "object", "additionalProperties": false, "properties": properties})
}

/// A validated step.
#[derive(Debug, Clone)]
pub struct Step {
    pub spec: StepSpec,
    pub on_failure: OnFailure,
    /// A required step that does not run makes the run INCONCLUSIVE.
    pub required: bool,
}

impl Step {
    pub(crate) fn kind(&self) -> StepKind {
        self.spec.kind()
    }
}

/// For one change class: the pipeline steps that must run and those that
/// may go unrun, whatever the pipeline file says (`changeClass` in
/// `--config`, docs/pipeline.md).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepPolicy {
    #[serde(default)]
    pub require: Vec<StepKind>,
    #[serde(default)]
    pub optional: Vec<StepKind>,
}

/// `changeClass`: a policy per class of release change.
pub type ChangePolicy = std::collections::BTreeMap<crate::checks::release_diff::ChangeClass, StepPolicy>;

/// Whether `step` must run for a release of `class` under `policy`. A class
/// that could not be told (no base and no readable rollback target) gets
/// what any class requires: the policy never loosens on missing evidence.
pub(crate) fn required(
    step: &Step,
    class: Option<crate::checks::release_diff::ChangeClass>,
    policy: &ChangePolicy,
) -> bool {
    let kind = step.kind();
    match class {
        None => step.required || policy.values().any(|p| p.require.contains(&kind)),
        Some(c) => match policy.get(&c) {
            Some(p) if p.require.contains(&kind) => true,
            Some(p) if p.optional.contains(&kind) => false,
            _ => step.required,
        },
    }
}

/// A policy that both requires and lets go the same step for one class is
/// refused: the file says two things.
pub(crate) fn check_policy(policy: &ChangePolicy) -> Result<()> {
    for (class, p) in policy {
        if let Some(k) = p.require.iter().find(|k| p.optional.contains(k)) {
            bail!("changeClass.{}: step {} is both in `require` and in `optional`", class.as_key(), k.as_str());
        }
    }
    Ok(())
}

/// Each step with its own typed options (the commands' types of
/// [`crate::options`]), defaults applied. What only a run knows (the
/// bundle's name in a watch template, `--prometheus`, the verifier image,
/// the repository) is filled in when the step runs (`run.rs`).
#[derive(Debug, Clone)]
pub enum StepSpec {
    Lint,
    Render {
        /// Show the base→head manifest diff (PR mode).
        diff: bool,
        options: RenderOptions,
    },
    Verify(VerifyOptions),
    /// `--snapshot` wins over the step's `snapshot`.
    Preflight(PreflightOptions),
    Canary(CanaryOptions),
    /// Posted once per run.
    Comment,
    /// Runs once per run over the whole tree.
    Audit(AuditOptions),
    /// `{name}`/`{namespace}` in `app` and `service_url` stand for the
    /// bundle's metadata.
    Watch(WatchOptions),
    /// `base: None`: the remote's HEAD branch, else `main`.
    Revert(RevertOptions),
    /// After `canary`: the next-step PR, the revert PR, or nothing.
    Promote(PromoteOptions),
}

/// The render step's own option, beside [`RenderOptions`].
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RenderStepOptions {
    /// Show the base→head manifest diff (PR mode).
    #[serde(default = "yes")]
    diff: bool,
}

fn yes() -> bool {
    true
}

/// The options of `lint` and `comment`: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoOptions {}

/// The JSON Schema of a pipeline file (`bundlegate schema pipeline`).
#[cfg(feature = "cli")]
pub(crate) fn json_schema(g: schemars::SchemaGenerator) -> schemars::Schema {
    g.into_root_schema_for::<PipelineFile>()
}

pub(crate) fn load(path: &Path) -> Result<Pipeline> {
    let text = crate::adapters::bundle_files::read_text(path, crate::adapters::bundle_files::FileKind::Pipeline)
        .with_context(|| format!("reading pipeline {}", path.display()))?;
    parse(path, &text)
}

/// Parse and validate pipeline text; `path` names the file in every error.
pub fn parse(path: &Path, text: &str) -> Result<Pipeline> {
    // The one reader every YAML input goes through (duplicate keys,
    // `required: false` then `required: true`, must not be last-wins;
    // aliases and depth bounded): the guard and the model read one stream.
    let (p, tree): (PipelineFile, _) =
        crate::yaml_guard::from_str_with_tree(&path.display().to_string(), text, &crate::yaml_guard::Limits::DEFAULT)?;
    let spans = bundle::SpanIndex::of(&tree);
    if p.api_version != "bundlegate.dev/v1" || p.kind != "Pipeline" {
        bail!("{}: expected apiVersion bundlegate.dev/v1, kind Pipeline", path.display());
    }
    if p.spec.steps.is_empty() {
        bail!("{}: spec.steps is empty; a pipeline that runs nothing proves nothing", path.display());
    }
    let step_nodes = entry(&tree, "spec").and_then(|n| entry(n, "steps"));
    let mut steps = Vec::with_capacity(p.spec.steps.len());
    for (i, step) in p.spec.steps.into_iter().enumerate() {
        let with = match step_nodes.map(|n| &n.kind) {
            Some(NodeKind::Seq(items)) => items.get(i).and_then(|n| entry(n, "with")),
            _ => None,
        };
        let spec = StepSpec::from_node(step.name, with).map_err(|e| {
            let field = if e.path.is_empty() {
                format!("spec.steps[{i}].with")
            } else {
                format!("spec.steps[{i}].with.{}", e.path)
            };
            let (line, col) = spans.lookup(&field).or(e.at).unwrap_or((1, 1));
            anyhow::anyhow!("{}:{line}:{col}: {field}: {}", path.display(), e.msg)
        })?;
        steps.push(Step { spec, on_failure: step.on_failure, required: step.required });
    }
    Ok(Pipeline { name: p.metadata.name, bundles: p.spec.bundles, steps })
}

/// The value under `key` in a mapping node.
fn entry<'a>(n: &'a Node, key: &str) -> Option<&'a Node> {
    match &n.kind {
        NodeKind::Map(entries) => entries.iter().find(|(k, _)| scalar(k) == Some(key)).map(|(_, v)| v),
        _ => None,
    }
}

fn scalar(n: &Node) -> Option<&str> {
    match &n.kind {
        NodeKind::Scalar { text, .. } => Some(text),
        _ => None,
    }
}

/// Why a step's `with` was refused: the path under `with`, where, and why.
struct WithError {
    path: String,
    at: Option<(usize, usize)>,
    msg: String,
}

/// One options type read from (part of) a step's `with`.
fn read<T: DeserializeOwned>(n: &Node) -> std::result::Result<T, WithError> {
    crate::yaml_guard::from_node(n).map_err(|(path, e)| WithError { path, at: e.at, msg: e.msg })
}

/// A mapping split in two: the entries whose key is one of `keys`, and the
/// rest (a step whose options are two types read from one mapping). Not a
/// mapping: all of it goes first, to be refused there with its type.
fn split(n: &Node, keys: &[&str]) -> (Node, Node) {
    let mapping = |entries| Node { line: n.line, column: n.column, kind: NodeKind::Map(entries) };
    match &n.kind {
        NodeKind::Map(entries) => {
            let (mine, rest) = entries.iter().cloned().partition(|(k, _)| scalar(k).is_some_and(|k| keys.contains(&k)));
            (mapping(mine), mapping(rest))
        }
        _ => (n.clone(), mapping(Vec::new())),
    }
}

/// The keys serde reads for `T`: its derive's field list (renamed, skipped
/// fields left out), so the list a message shows is the type's own.
fn keys<T: DeserializeOwned>() -> &'static [&'static str] {
    /// The field list, carried out as the "error" of a probe deserializer.
    #[derive(Debug)]
    struct Fields(&'static [&'static str]);
    impl std::fmt::Display for Fields {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{:?}", self.0)
        }
    }
    impl std::error::Error for Fields {}
    impl serde::de::Error for Fields {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Fields(&[])
        }
    }
    struct Probe;
    impl<'de> serde::Deserializer<'de> for Probe {
        type Error = Fields;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Fields> {
            Err(Fields(&[]))
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> std::result::Result<V::Value, Fields> {
            Err(Fields(fields))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    match T::deserialize(Probe) {
        Err(Fields(f)) => f,
        Ok(_) => &[],
    }
}

impl StepKind {
    const ALL: [StepKind; 10] = [
        StepKind::Lint,
        StepKind::Render,
        StepKind::Verify,
        StepKind::Preflight,
        StepKind::Canary,
        StepKind::Comment,
        StepKind::Audit,
        StepKind::Watch,
        StepKind::Revert,
        StepKind::Promote,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            StepKind::Lint => "lint",
            StepKind::Render => "render",
            StepKind::Verify => "verify",
            StepKind::Preflight => "preflight",
            StepKind::Canary => "canary",
            StepKind::Comment => "comment",
            StepKind::Audit => "audit",
            StepKind::Watch => "watch",
            StepKind::Revert => "revert",
            StepKind::Promote => "promote",
        }
    }

    /// The schema of this step's `with`: that of the type(s) it is read into.
    fn with_schema(self, g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        match self {
            StepKind::Lint | StepKind::Comment => g.subschema_for::<NoOptions>(),
            StepKind::Render => {
                let parts = [RenderStepOptions::json_schema(g), RenderOptions::json_schema(g)];
                merged_schema(parts)
            }
            StepKind::Verify => g.subschema_for::<VerifyOptions>(),
            StepKind::Preflight => g.subschema_for::<PreflightOptions>(),
            StepKind::Canary => g.subschema_for::<CanaryOptions>(),
            StepKind::Audit => {
                let parts = [VerifyOptions::json_schema(g), AuditOptions::json_schema(g)];
                merged_schema(parts)
            }
            StepKind::Watch => g.subschema_for::<WatchOptions>(),
            StepKind::Revert => g.subschema_for::<RevertOptions>(),
            StepKind::Promote => g.subschema_for::<PromoteOptions>(),
        }
    }

    /// The keys of this step's `with`: its command's options type's (and
    /// the render step's own `diff`).
    fn keys(self) -> Vec<&'static str> {
        match self {
            StepKind::Lint | StepKind::Comment => Vec::new(),
            StepKind::Render => [keys::<RenderStepOptions>(), keys::<RenderOptions>()].concat(),
            StepKind::Verify => keys::<VerifyOptions>().to_vec(),
            StepKind::Preflight => keys::<PreflightOptions>().to_vec(),
            StepKind::Canary => keys::<CanaryOptions>().to_vec(),
            StepKind::Audit => [keys::<VerifyOptions>(), keys::<AuditOptions>()].concat(),
            StepKind::Watch => keys::<WatchOptions>().to_vec(),
            StepKind::Revert => keys::<RevertOptions>().to_vec(),
            StepKind::Promote => keys::<PromoteOptions>().to_vec(),
        }
    }
}

impl StepSpec {
    pub(crate) fn kind(&self) -> StepKind {
        match self {
            StepSpec::Lint => StepKind::Lint,
            StepSpec::Render { .. } => StepKind::Render,
            StepSpec::Verify(_) => StepKind::Verify,
            StepSpec::Preflight(_) => StepKind::Preflight,
            StepSpec::Canary(_) => StepKind::Canary,
            StepSpec::Comment => StepKind::Comment,
            StepSpec::Audit(_) => StepKind::Audit,
            StepSpec::Watch(_) => StepKind::Watch,
            StepSpec::Revert(_) => StepKind::Revert,
            StepSpec::Promote(_) => StepKind::Promote,
        }
    }

    /// Every option of one step checked before anything runs: a key of
    /// this step (else the message lists the step's keys), then read into
    /// the command's options type through the parsers the command line
    /// uses (numbers in range, durations finite, positive and at most 7d),
    /// defaults from `options::defaults`.
    fn from_node(kind: StepKind, with: Option<&Node>) -> std::result::Result<StepSpec, WithError> {
        let empty = Node { line: 1, column: 1, kind: NodeKind::Map(Vec::new()) };
        let with = with.unwrap_or(&empty);
        let allowed = kind.keys();
        if let NodeKind::Map(entries) = &with.kind {
            if let Some(k) = entries.iter().map(|(k, _)| k).find(|k| !scalar(k).is_some_and(|k| allowed.contains(&k))) {
                let key = scalar(k).unwrap_or("?");
                let known = if allowed.is_empty() {
                    "it takes no options".to_string()
                } else {
                    format!("its options are {}", allowed.join(", "))
                };
                let msg = format!("`{key}` is not an option of the {} step ({known})", kind.as_str());
                return Err(WithError { path: key.to_string(), at: Some((k.line, k.column)), msg });
            }
        }
        Ok(match kind {
            StepKind::Lint => read::<NoOptions>(with).map(|_| StepSpec::Lint)?,
            StepKind::Comment => read::<NoOptions>(with).map(|_| StepSpec::Comment)?,
            StepKind::Render => {
                let (options, own) = split(with, keys::<RenderOptions>());
                let own: RenderStepOptions = read(&own)?;
                StepSpec::Render { diff: own.diff, options: read(&options)? }
            }
            StepKind::Verify => StepSpec::Verify(read(with)?),
            StepKind::Preflight => StepSpec::Preflight(read(with)?),
            StepKind::Canary => StepSpec::Canary(read(with)?),
            StepKind::Audit => {
                let (verify, rest) = split(with, keys::<VerifyOptions>());
                StepSpec::Audit(AuditOptions { verify: read(&verify)?, ..read(&rest)? })
            }
            StepKind::Watch => StepSpec::Watch(read(with)?),
            StepKind::Revert => StepSpec::Revert(read(with)?),
            StepKind::Promote => StepSpec::Promote(read(with)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A class's `require` wins, its `optional` lets go even a step the
    /// pipeline requires, another class's policy changes nothing, and an
    /// unknown class gets every class's requirements.
    #[test]
    fn change_policy_decides_required_per_class() {
        use crate::checks::release_diff::ChangeClass::{ConfigOnly, ServingOnly, Weights};
        let step = |spec: StepSpec, required: bool| Step { spec, on_failure: OnFailure::Continue, required };
        let policy: ChangePolicy = [
            (Weights, StepPolicy { require: vec![StepKind::Lint], optional: vec![] }),
            (ServingOnly, StepPolicy { require: vec![], optional: vec![StepKind::Lint] }),
        ]
        .into();
        let (lint, required_lint) = (step(StepSpec::Lint, false), step(StepSpec::Lint, true));
        assert!(required(&lint, Some(Weights), &policy));
        assert!(!required(&required_lint, Some(ServingOnly), &policy));
        assert!(!required(&lint, Some(ConfigOnly), &policy));
        assert!(required(&required_lint, Some(ConfigOnly), &policy));
        assert!(required(&lint, None, &policy));
        assert!(!required(&lint, None, &ChangePolicy::new()));
        let both: ChangePolicy =
            [(Weights, StepPolicy { require: vec![StepKind::Lint], optional: vec![StepKind::Lint] })].into();
        assert!(check_policy(&both).unwrap_err().to_string().contains("both in `require` and in `optional`"));
        assert!(check_policy(&policy).is_ok());
    }

    fn one_step(step: &str) -> Result<Pipeline> {
        let text =
            format!("apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata: {{name: t}}\nspec:\n  steps:\n{step}");
        parse(Path::new("p.yaml"), &text)
    }

    fn err(step: &str) -> String {
        format!("{:#}", one_step(step).unwrap_err())
    }

    /// `stableFor` goes through `--stable-for`'s parser: zero allowed (one
    /// read), the 7d bound and the field's position in the message.
    #[test]
    fn pipeline_stable_for_reads_as_the_flag_does() {
        let watch = |v: &str| one_step(&format!("    - name: watch\n      with:\n        stableFor: {v}\n"));
        for (text, want) in [("0s", Duration::ZERO), ("90s", Duration::from_secs(90))] {
            match &watch(text).unwrap().steps[0].spec {
                StepSpec::Watch(w) => assert_eq!(w.stable_for, Some(want)),
                other => panic!("{other:?}"),
            }
        }
        let e = format!("{:#}", watch("8d").unwrap_err());
        assert!(e.starts_with("p.yaml:8:9: spec.steps[0].with.stableFor: ") && e.contains("7d"), "{e}");
    }

    /// Defaults are the options types' own (`options::defaults`), and a step
    /// without `with` gets them.
    #[test]
    fn pipeline_defaults_are_the_options_defaults() {
        let p = one_step("    - name: watch\n    - name: revert\n    - name: audit\n    - name: render\n").unwrap();
        let StepSpec::Watch(w) = &p.steps[0].spec else { panic!() };
        assert_eq!(w, &WatchOptions::new(crate::options::defaults::APP_TEMPLATE));
        let StepSpec::Revert(r) = &p.steps[1].spec else { panic!() };
        assert_eq!((r.remote.as_str(), &r.base, r.max_age.text.as_str()), ("origin", &None, "20m"));
        let StepSpec::Audit(a) = &p.steps[2].spec else { panic!() };
        assert_eq!(a.verify, VerifyOptions::default());
        assert!(matches!(p.steps[3].spec, StepSpec::Render { diff: true, .. }));
        let p = one_step("    - name: promote\n").unwrap();
        let StepSpec::Promote(o) = &p.steps[0].spec else { panic!() };
        assert_eq!((o.split.as_str(), o.remote.as_str(), &o.base), ("kserve-split.yaml", "origin", &None));
        assert_eq!(o.revert().max_age.text, "20m");
    }

    /// A command-line-only option (the run supplies it) is not a step's: the
    /// message lists the step's keys, taken from its options type.
    #[test]
    fn pipeline_refuses_run_only_options_and_lists_the_steps_own() {
        let e = err("    - name: canary\n      with:\n        prometheus: http://x\n");
        assert!(e.contains("p.yaml:8:9: spec.steps[0].with.prometheus: `prometheus` is not an option of the canary step (its options are window, split)"), "{e}");
        let e = err("    - name: audit\n      with: {jobs: 2, cache: x}\n");
        assert!(
            e.contains("spec.steps[0].with.cache") && e.contains("its options are jobs, denyExtra, deep, serving"),
            "{e}"
        );
        let e = err("    - name: audit\n      with: {jobs: 0}\n");
        assert!(e.contains("spec.steps[0].with.jobs: 0 is out of range"), "{e}");
        let e = err("    - name: comment\n      with: {diff: true}\n");
        assert!(e.contains("(it takes no options)"), "{e}");
        let e = err("    - name: watch\n      with: 3\n");
        assert!(e.starts_with("p.yaml:7:7: spec.steps[0].with: "), "{e}");
    }
}
