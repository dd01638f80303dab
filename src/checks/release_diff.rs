//! What changed in the *release*, base bundle → head bundle: each artifact
//! (identical, changed, renamed, added, removed), every other setting that
//! differs (runtime image and engine, generation, resources and GPUs,
//! probes, rollout, canary plan, rollback target), and the change's class,
//! which a policy can require steps for (a weights change → the canary).
//! Pure: the two bundles in, the comparison out.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use crate::bundle::{Artifact, ArtifactRole, ReleaseBundle};
use crate::report::{Detail, StepReport, Verdict};

/// One artifact across the two releases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "change", rename_all = "camelCase")]
pub enum ArtifactChange {
    Identical {
        path: String,
    },
    Changed {
        path: String,
        old: Pin,
        new: Pin,
    },
    /// The same bytes (sha256) under another path.
    Renamed {
        from: String,
        to: String,
        pin: Pin,
    },
    Added {
        path: String,
        pin: Pin,
    },
    Removed {
        path: String,
        pin: Pin,
    },
}

/// What a bundle pins for one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pin {
    pub sha256: Option<String>,
    pub size: Option<u64>,
    #[serde(skip)]
    pub role: Option<ArtifactRole>,
}

/// A setting outside the artifacts, by its path in the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    pub field: String,
    /// `None`: absent on that side.
    pub old: Option<String>,
    pub new: Option<String>,
}

/// What kind of release this is, the heaviest change first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeClass {
    /// Nothing the release digest covers changed.
    NoChange,
    /// Only how it is served: image, resources, probes, rollout, canary.
    ServingOnly,
    /// Configuration files or generation settings, same weights and tokenizer.
    ConfigOnly,
    /// The tokenizer or the chat template.
    TokenizerOrTemplate,
    /// The weights themselves.
    Weights,
}

impl ChangeClass {
    /// The class as `--config` and `data.releaseDiff.class` spell it.
    pub fn as_key(self) -> &'static str {
        match self {
            ChangeClass::NoChange => "no-change",
            ChangeClass::ServingOnly => "serving-only",
            ChangeClass::ConfigOnly => "config-only",
            ChangeClass::TokenizerOrTemplate => "tokenizer-or-template",
            ChangeClass::Weights => "weights",
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            ChangeClass::NoChange => "no change",
            ChangeClass::ServingOnly => "serving only",
            ChangeClass::ConfigOnly => "config only",
            ChangeClass::TokenizerOrTemplate => "tokenizer or template changed",
            ChangeClass::Weights => "weights changed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReleaseDiff {
    pub artifacts: Vec<ArtifactChange>,
    pub fields: Vec<FieldChange>,
    pub class: ChangeClass,
}

fn pin(a: &Artifact) -> Pin {
    Pin { sha256: a.sha256.clone(), size: a.size, role: Some(a.role) }
}

/// Compare two releases.
pub fn diff(base: &ReleaseBundle, head: &ReleaseBundle) -> ReleaseDiff {
    let artifacts = artifact_changes(&base.spec.model.artifacts, &head.spec.model.artifacts);
    let fields = field_changes(base, head);
    let class = classify(&artifacts, &fields);
    ReleaseDiff { artifacts, fields, class }
}

fn artifact_changes(base: &[Artifact], head: &[Artifact]) -> Vec<ArtifactChange> {
    let old: BTreeMap<&str, &Artifact> = base.iter().map(|a| (a.path.as_str(), a)).collect();
    let new: BTreeMap<&str, &Artifact> = head.iter().map(|a| (a.path.as_str(), a)).collect();
    let mut out = Vec::new();
    for (p, a) in &old {
        if let Some(b) = new.get(p) {
            let same = a.sha256.is_some() && a.sha256 == b.sha256 && a.size == b.size;
            out.push(if same {
                ArtifactChange::Identical { path: p.to_string() }
            } else {
                ArtifactChange::Changed { path: p.to_string(), old: pin(a), new: pin(b) }
            });
        }
    }
    // Paths on one side only: a pinned digest on both sides is a rename.
    let mut gone: Vec<&Artifact> = old.iter().filter(|(p, _)| !new.contains_key(*p)).map(|(_, a)| *a).collect();
    for (p, b) in new.iter().filter(|(p, _)| !old.contains_key(*p)) {
        let twin = gone.iter().position(|a| a.sha256.is_some() && a.sha256 == b.sha256 && a.size == b.size);
        match twin {
            Some(i) => {
                let a = gone.remove(i);
                out.push(ArtifactChange::Renamed { from: a.path.clone(), to: p.to_string(), pin: pin(b) });
            }
            None => out.push(ArtifactChange::Added { path: p.to_string(), pin: pin(b) }),
        }
    }
    out.extend(gone.into_iter().map(|a| ArtifactChange::Removed { path: a.path.clone(), pin: pin(a) }));
    out
}

/// Every leaf under the compared sections of the bundle, by dotted path.
fn leaves(prefix: &str, v: &Value, out: &mut BTreeMap<String, String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                leaves(&format!("{prefix}.{k}"), x, out);
            }
        }
        Value::Array(xs) if xs.iter().any(|x| x.is_object() || x.is_array()) => {
            for (i, x) in xs.iter().enumerate() {
                leaves(&format!("{prefix}[{i}]"), x, out);
            }
        }
        Value::Null => {}
        Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// The settings, artifacts aside, that differ; the release's own name and
/// version aside (they always differ).
fn field_changes(base: &ReleaseBundle, head: &ReleaseBundle) -> Vec<FieldChange> {
    let sections = |b: &ReleaseBundle| {
        let s = &b.spec;
        let mut out = BTreeMap::new();
        let v = json!({
            "runtime": s.runtime,
            "model": {"storageUri": s.model.storage_uri, "task": s.model.task, "embeddingRelease": s.model.embedding_release},
            "generation": s.generation,
            "serving": s.serving,
            "canary": s.canary,
            "rollback": s.rollback,
        });
        leaves("spec", &v, &mut out);
        out
    };
    let (a, b) = (sections(base), sections(head));
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| FieldChange { field: k.clone(), old: a.get(k).cloned(), new: b.get(k).cloned() })
        .collect()
}

fn role_class(role: Option<ArtifactRole>) -> ChangeClass {
    match role {
        // What the model computes or retrieves: an adapter changes the
        // outputs like weights do, a retrieval index what is answered from.
        Some(ArtifactRole::Weights | ArtifactRole::Adapter | ArtifactRole::RetrievalIndex) => ChangeClass::Weights,
        // What the model receives or how its outputs are read.
        Some(
            ArtifactRole::Tokenizer
            | ArtifactRole::ChatTemplate
            | ArtifactRole::PoolingConfig
            | ArtifactRole::Labels
            | ArtifactRole::IndexSchema,
        ) => ChangeClass::TokenizerOrTemplate,
        _ => ChangeClass::ConfigOnly,
    }
}

fn classify(artifacts: &[ArtifactChange], fields: &[FieldChange]) -> ChangeClass {
    let mut class = ChangeClass::NoChange;
    for c in artifacts {
        class = class.max(match c {
            ArtifactChange::Identical { .. } => continue,
            // A file whose role changed counts as the heavier of the two.
            ArtifactChange::Changed { old, new, .. } => role_class(old.role).max(role_class(new.role)),
            ArtifactChange::Renamed { pin, .. }
            | ArtifactChange::Added { pin, .. }
            | ArtifactChange::Removed { pin, .. } => role_class(pin.role),
        });
    }
    for f in fields {
        let c = if f.field.starts_with("spec.generation") || f.field == "spec.model.storageUri" {
            ChangeClass::ConfigOnly
        } else {
            ChangeClass::ServingOnly
        };
        class = class.max(c);
    }
    class
}

/// At least 7 hex digits, as git abbreviates.
fn short(sha: &Option<String>) -> String {
    sha.as_deref().map_or_else(|| "(no sha256)".to_string(), |s| s.chars().take(12).collect())
}

fn size(n: Option<u64>) -> String {
    n.map_or_else(|| "(no size)".into(), |n| format!("{n} B"))
}

impl ReleaseDiff {
    /// One line per change, old first, for the comment and the terminal.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!("change class: {}", self.class.words())];
        for c in &self.artifacts {
            out.push(match c {
                ArtifactChange::Identical { .. } => continue,
                ArtifactChange::Changed { path, old, new } => format!(
                    "changed {path}: {} → {}, sha256 {} → {}",
                    size(old.size),
                    size(new.size),
                    short(&old.sha256),
                    short(&new.sha256)
                ),
                ArtifactChange::Renamed { from, to, pin } => {
                    format!("renamed {from} → {to} (same sha256 {})", short(&pin.sha256))
                }
                ArtifactChange::Added { path, pin } => {
                    format!("added {path}: {}, sha256 {}", size(pin.size), short(&pin.sha256))
                }
                ArtifactChange::Removed { path, pin } => {
                    format!("removed {path}: {}, sha256 {}", size(pin.size), short(&pin.sha256))
                }
            });
        }
        let same = self.artifacts.iter().filter(|c| matches!(c, ArtifactChange::Identical { .. })).count();
        if same > 0 {
            out.push(format!("{same} artifact(s) identical"));
        }
        for f in &self.fields {
            let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "(absent)".into());
            out.push(format!("{}: {} → {}", f.field, side(&f.old), side(&f.new)));
        }
        out
    }

    /// `data.releaseDiff`.
    pub fn to_json(&self) -> Value {
        json!({"class": self.class, "classWords": self.class.words(), "artifacts": self.artifacts, "fields": self.fields})
    }
}

/// The largest file whose text the release diff shows.
pub(crate) const TEXT_DIFF_MAX: u64 = 64 << 10;

/// Whether a reviewer reads this file as text: templates and small
/// configs (a tokenizer's config, not its vocabulary).
fn read_as_text(path: &str, role: Option<ArtifactRole>) -> bool {
    use ArtifactRole as R;
    match role {
        Some(R::ChatTemplate | R::GenerationConfig | R::Config | R::PoolingConfig | R::Labels | R::IndexSchema) => true,
        Some(R::Tokenizer) => ["tokenizer_config.json", "special_tokens_map.json"].iter().any(|n| path.ends_with(n)),
        _ => false,
    }
}

/// The changed files whose text the release diff shows, with both pins,
/// old first.
pub(crate) fn text_diffs_wanted(d: &ReleaseDiff) -> Vec<(&str, &Pin, &Pin)> {
    d.artifacts
        .iter()
        .filter_map(|c| match c {
            ArtifactChange::Changed { path, old, new }
                if read_as_text(path, new.role) || read_as_text(path, old.role) =>
            {
                let small = |p: &Pin| p.size.is_some_and(|s| s <= TEXT_DIFF_MAX);
                (small(old) && small(new)).then_some((path.as_str(), old, new))
            }
            _ => None,
        })
        .collect()
}

/// One side's bytes as read from its store, shown only when they are the
/// pinned bytes: text, or why not.
pub(crate) fn checked_text(read: Result<Option<Vec<u8>>, String>, pin: &Pin) -> Result<String, String> {
    let bytes = read?.ok_or("not in the store")?;
    let sha = crate::util::sha256_hex(&bytes);
    if pin.sha256.as_deref() != Some(sha.as_str()) {
        return Err(format!("the store's bytes (sha256 {}) are not the pinned ones", &sha[..12]));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}

/// A unified diff, `a` and `b` naming the two sides.
pub fn unified(old: &str, new: &str, a: &str, b: &str) -> String {
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(3).header(a, b).to_string()
}

/// One file's text diff for the reviewer (old first), or why it is not
/// shown.
pub(crate) fn text_diff_detail(path: &str, old: Result<String, String>, new: Result<String, String>) -> Detail {
    let body = match (old, new) {
        (Ok(o), Ok(n)) => unified(&o, &n, &format!("base/{path}"), &format!("head/{path}")),
        (o, n) => {
            let why = |side: &str, r: Result<String, String>| r.err().map(|e| format!("{side}: {e}"));
            let whys: Vec<String> = [why("base", o), why("head", n)].into_iter().flatten().collect();
            format!("(not shown: {})\n", whys.join("; "))
        }
    };
    Detail { title: format!("{path}: text diff, base → head"), lang: "diff".into(), body }
}

/// The `release-diff` step of a pull request's bundle: what changed from
/// `base` (e.g. `the bundle at <rev>`) to the head, written up for the
/// comment (one line per change, the class first) and `data.releaseDiff`.
/// PASS means the two releases were compared; it gates nothing itself
/// (a change class policy may require later steps).
pub fn step(target: &str, base: &str, d: &ReleaseDiff) -> StepReport {
    let mut s = StepReport::new("release-diff", target);
    s.verdict = Verdict::Pass;
    let changed = d.artifacts.iter().filter(|c| !matches!(c, ArtifactChange::Identical { .. })).count();
    s.summary = format!(
        "change class: {} ({changed} artifact(s) and {} setting(s) differ from {base})",
        d.class.words(),
        d.fields.len()
    );
    s.details = vec![Detail {
        title: format!("release diff, {base} → head"),
        lang: "text".into(),
        body: d.lines().join("\n") + "\n",
    }];
    s.data = json!({"base": base, "releaseDiff": d.to_json()});
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundles() -> (ReleaseBundle, ReleaseBundle) {
        let l = crate::bundle::example();
        (l.bundle.clone(), l.bundle)
    }

    fn sha(c: char) -> String {
        std::iter::repeat_n(c, 64).collect()
    }

    /// Only small text files are diffed as text (a template, a config; a
    /// tokenizer's config but not its vocabulary; never weights), and a side
    /// is shown only when its bytes hash to its pin.
    #[test]
    fn text_diffs_are_for_small_pinned_text_only() {
        let (a, mut b) = bundles();
        for art in &mut b.spec.model.artifacts {
            art.sha256 = Some(sha('f'));
        }
        let d = diff(&a, &b);
        let wanted: Vec<&str> = text_diffs_wanted(&d).into_iter().map(|(p, _, _)| p).collect();
        assert!(wanted.contains(&"chat_template.jinja") && wanted.contains(&"generation_config.json"), "{wanted:?}");
        assert!(!wanted.contains(&"ckpt.pt") && !wanted.contains(&"tokenizer.json"), "{wanted:?}");
        assert!(read_as_text("x/tokenizer_config.json", Some(ArtifactRole::Tokenizer)));
        let big = Pin { sha256: None, size: Some(TEXT_DIFF_MAX + 1), role: Some(ArtifactRole::ChatTemplate) };
        let d = ReleaseDiff {
            artifacts: vec![ArtifactChange::Changed { path: "t.jinja".into(), old: big.clone(), new: big }],
            fields: vec![],
            class: ChangeClass::TokenizerOrTemplate,
        };
        assert!(text_diffs_wanted(&d).is_empty());

        let text = b"hello\n".to_vec();
        let pin = |s: &str| Pin { sha256: Some(s.into()), size: Some(6), role: None };
        let good = pin(&crate::util::sha256_hex(&text));
        assert_eq!(checked_text(Ok(Some(text.clone())), &good).unwrap(), "hello\n");
        assert!(checked_text(Ok(Some(text)), &pin(&sha('0'))).unwrap_err().contains("not the pinned ones"));
        assert_eq!(checked_text(Ok(None), &good).unwrap_err(), "not in the store");
        let bad = vec![0xff, 0xfe];
        assert_eq!(
            checked_text(Ok(Some(bad.clone())), &pin(&crate::util::sha256_hex(&bad))).unwrap_err(),
            "not UTF-8 text"
        );
        let shown = text_diff_detail("t", Ok("a\n".into()), Ok("b\n".into())).body;
        assert!(shown.contains("-a\n+b\n"), "{shown}");
        let hidden = text_diff_detail("t", Err("gone".into()), Ok("b\n".into())).body;
        assert_eq!(hidden, "(not shown: base: gone)\n");
    }

    #[test]
    fn the_same_release_is_no_change() {
        let (a, b) = bundles();
        let d = diff(&a, &b);
        assert_eq!(d.class, ChangeClass::NoChange);
        assert!(d.fields.is_empty());
        assert!(d.artifacts.iter().all(|c| matches!(c, ArtifactChange::Identical { .. })));
        assert_eq!(d.lines()[0], "change class: no change");
    }

    #[test]
    fn new_weights_are_the_heaviest_class_and_say_old_then_new() {
        let (a, mut b) = bundles();
        let w = b.spec.model.artifacts.iter_mut().find(|x| x.role == ArtifactRole::Weights).unwrap();
        let path = w.path.clone();
        let old_sha = w.sha256.clone().unwrap();
        w.sha256 = Some(sha('b'));
        w.size = w.size.map(|s| s + 1);
        b.spec.serving.replicas += 1;
        let d = diff(&a, &b);
        assert_eq!(d.class, ChangeClass::Weights);
        let lines = d.lines();
        assert_eq!(lines[0], "change class: weights changed");
        let changed = lines.iter().find(|l| l.starts_with(&format!("changed {path}:"))).unwrap();
        assert!(changed.contains(&format!("sha256 {} → {}", &old_sha[..12], &sha('b')[..12])), "{changed}");
        assert!(lines.iter().any(|l| l.starts_with("spec.serving.replicas: ")), "{lines:?}");
    }

    #[test]
    fn a_moved_file_is_a_rename_and_a_new_one_an_addition() {
        let (a, mut b) = bundles();
        let t = b.spec.model.artifacts.iter_mut().find(|x| x.role == ArtifactRole::ChatTemplate).unwrap();
        let from = t.path.clone();
        t.path = format!("templates/{from}");
        b.spec.model.artifacts.push(Artifact {
            path: "extra.json".into(),
            sha256: Some(sha('c')),
            size: Some(3),
            role: ArtifactRole::Config,
            store_checksum: None,
            base_release_digest: None,
            built_with: None,
        });
        let d = diff(&a, &b);
        assert!(d.artifacts.contains(&ArtifactChange::Renamed {
            from: from.clone(),
            to: format!("templates/{from}"),
            pin: pin(b.spec.model.artifacts.iter().find(|x| x.path.starts_with("templates/")).unwrap()),
        }));
        assert!(d.lines().iter().any(|l| l.starts_with("added extra.json: 3 B, sha256 cccccccccccc")));
        // A renamed template is a template change; the added config is lighter.
        assert_eq!(d.class, ChangeClass::TokenizerOrTemplate);
        let (a, mut b) = bundles();
        let removed = b.spec.model.artifacts.pop().unwrap();
        let d = diff(&a, &b);
        assert!(d.lines().iter().any(|l| l.starts_with(&format!("removed {}:", removed.path))), "{:?}", d.lines());
    }

    #[test]
    fn settings_alone_are_serving_or_config() {
        let (a, mut b) = bundles();
        b.spec.runtime.image = format!("registry.example/vllm@sha256:{}", sha('d'));
        let d = diff(&a, &b);
        assert_eq!(d.class, ChangeClass::ServingOnly);
        assert!(d.lines().iter().any(|l| l.starts_with("spec.runtime.image: ")), "{:?}", d.lines());
        let (a, mut b) = bundles();
        if let Some(g) = b.spec.generation.as_mut() {
            g.max_output_tokens = g.max_output_tokens.map(|m| m + 1).or(Some(1));
        }
        assert_eq!(diff(&a, &b).class, ChangeClass::ConfigOnly);
        assert_eq!(diff(&a, &b).to_json()["classWords"], "config only");
    }
}
