//! Loading a release bundle: strict parsing with positions, and the release
//! digest that identifies the release.

pub mod detect;
pub mod edit;
pub mod model;
pub mod pod_verifier;
pub(crate) mod reserved;
pub(crate) mod roles;
pub mod spans;
pub mod storage_uri;
pub(crate) mod task_args;
pub mod validate;

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use model::*;

/// The annotations every rendered object carries: the release it belongs to.
/// Defined with the bundle (not the renderer) because the adapters that read
/// them back from the cluster must not depend on the renderer.
pub const ANNOTATION_DIGEST: &str = "bundlegate.dev/release-digest";
pub const ANNOTATION_VERSION: &str = "bundlegate.dev/release-version";
pub use spans::SpanIndex;

use crate::diag::Span;

/// Why a bundle could not be loaded. Always names file, line, column and field.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{file}: cannot read: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {field}: {message}")]
    Invalid { file: String, line: usize, column: usize, field: String, message: String },
}

impl LoadError {
    /// The error without any text from the file: file, line, column, the
    /// field (schema names only) and the kind of problem from a fixed
    /// vocabulary, never the parser's message (serde and the guard quote the
    /// offending text, escaped in ways no quote-stripping catches). For files
    /// the user did not name as a bundle, e.g. a rollback target that is
    /// really a `.env`.
    pub fn redacted(&self) -> String {
        match self {
            LoadError::Io { .. } => self.to_string(),
            LoadError::Invalid { file, line, column, field, message } => {
                format!("{file}:{line}:{column}: {}: the file is not a release bundle (line {line}: {}; its text is not quoted)", redact_path(field), problem_kind(message))
            }
        }
    }
}

/// What kind of problem a parse message describes, as one of a fixed set of
/// phrases: nothing of the message itself is kept.
pub(crate) fn problem_kind(message: &str) -> &'static str {
    const KINDS: &[(&str, &str)] = &[
        ("duplicate key", "duplicate key"),
        ("duplicate field", "duplicate key"),
        ("not a finite number", "not a finite number"),
        ("alias", "alias amplification"),
        ("nested deeper", "nested too deep"),
        ("nodes", "too many nodes"),
        ("mapping key must be text", "a key that is not text"),
        ("over the limit", "too large"),
        ("breaks the line", "a line break a reviewer does not see"),
        ("invalid YAML", "invalid YAML"),
        ("YAML document", "not exactly one YAML document"),
        ("unknown field", "unknown field"),
        ("missing field", "missing field"),
        ("unknown variant", "value not allowed"),
        ("invalid type", "wrong type"),
        ("invalid value", "invalid value"),
        ("invalid length", "wrong length"),
        ("out of range", "out of range"),
        ("is not a valid", "invalid name"),
        ("expected `", "not the expected value"),
    ];
    KINDS.iter().find(|(needle, _)| message.contains(needle)).map_or("invalid", |(_, kind)| kind)
}

/// Field names of the schema: a path segment that is not one of them is a
/// key taken from the file (a label, an env name, an unknown field).
const SCHEMA_FIELDS: &[&str] = &[
    "(document)",
    "apiVersion",
    "kind",
    "metadata",
    "spec",
    "name",
    "namespace",
    "version",
    "labels",
    "runtime",
    "model",
    "generation",
    "serving",
    "canary",
    "rollback",
    "image",
    "engine",
    "args",
    "env",
    "storageUri",
    "quantization",
    "format",
    "artifacts",
    "path",
    "sha256",
    "size",
    "role",
    "storeChecksum",
    "eosTokenIds",
    "stopStrings",
    "maxOutputTokens",
    "replicas",
    "port",
    "resources",
    "nodeSelector",
    "tolerations",
    "volumes",
    "rollout",
    "probes",
    "loadTimeSeconds",
    "identity",
    "healthPath",
    "requests",
    "limits",
    "key",
    "operator",
    "value",
    "effect",
    "claimName",
    "accessMode",
    "mountPath",
    "readOnly",
    "maxSurge",
    "maxUnavailable",
    "progressDeadlineSeconds",
    "startup",
    "readiness",
    "liveness",
    "httpGet",
    "tcpSocket",
    "exec",
    "initialDelaySeconds",
    "periodSeconds",
    "timeoutSeconds",
    "failureThreshold",
    "successThreshold",
    "command",
    "p95",
    "p50",
    "expect",
    "registeredField",
    "field",
    "digestOf",
    "mode",
    "steps",
    "window",
    "minSamples",
    "gates",
    "golden",
    "metric",
    "maxAbsolute",
    "maxRelativeIncrease",
    "query",
    "bundle",
    "releaseDigest",
];

fn redact_path(field: &str) -> String {
    let mut out = String::new();
    for (i, seg) in field.split('.').enumerate() {
        if i > 0 {
            out.push('.');
        }
        let (name, index) = seg.find('[').map(|j| seg.split_at(j)).unwrap_or((seg, ""));
        let index_ok = index.is_empty()
            || index.trim_start_matches('[').trim_end_matches(']').split("][").all(|n| n.parse::<usize>().is_ok());
        if SCHEMA_FIELDS.contains(&name) && index_ok {
            out.push_str(seg);
        } else {
            out.push('…');
        }
    }
    out
}

/// A parsed bundle with where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub path: PathBuf,
    /// Display name used in reports (the path as the user gave it).
    pub display: String,
    pub text: String,
    pub bundle: ReleaseBundle,
    pub spans: SpanIndex,
    /// `sha256:<hex>` over the canonical form, see [`release_digest`].
    pub digest: String,
}

impl Loaded {
    pub(crate) fn span(&self, field: &str) -> Option<Span> {
        self.spans.lookup(field).map(|(line, column)| Span { file: self.display.clone(), line, column })
    }

    /// Folder the bundle lives in; relative references resolve against it.
    pub(crate) fn dir(&self) -> PathBuf {
        self.path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
    }
}

pub fn parse(display: &str, path: &Path, text: String) -> Result<Loaded, LoadError> {
    // One reader: the guard judges every event (duplicate keys, non-finite
    // numbers, alias amplification, nesting depth) as the tree the model is
    // deserialized from is built from those same events.
    let docs = match crate::yaml_guard::read(&text, &crate::yaml_guard::Limits::DEFAULT) {
        Ok(docs) => docs,
        Err(g) => {
            let field = if g.path.is_empty() { "(document)".into() } else { g.path };
            return Err(LoadError::Invalid {
                file: display.to_string(),
                line: g.line,
                column: g.column,
                field,
                message: g.message,
            });
        }
    };
    let spans = docs.first().map(SpanIndex::of).unwrap_or_default();
    let invalid = |field: String, message: String, loc: Option<(usize, usize)>| {
        let (line, column) = loc.or_else(|| spans.lookup(&field)).unwrap_or((1, 1));
        LoadError::Invalid {
            file: display.to_string(),
            line,
            column,
            field: if field.is_empty() { "(document)".into() } else { field },
            message,
        }
    };
    // Exactly one document: a second one would be silently ignored otherwise.
    let [doc] = docs.as_slice() else {
        return Err(invalid(String::new(), format!("expected exactly one YAML document, found {}", docs.len()), None));
    };
    let bundle: ReleaseBundle = match crate::yaml_guard::from_node(doc) {
        Ok(b) => b,
        Err((field, e)) => return Err(invalid(field, e.msg, e.at)),
    };
    if bundle.api_version != API_VERSION {
        return Err(invalid(
            "apiVersion".into(),
            format!("expected `{API_VERSION}`, found `{}`", bundle.api_version),
            None,
        ));
    }
    if bundle.kind != KIND {
        return Err(invalid("kind".into(), format!("expected `{KIND}`, found `{}`", bundle.kind), None));
    }
    // Names and numbers in range (see `validate`): refused here, with the
    // field's position, so nothing downstream sees them.
    if let Err((field, message)) = validate::validate(&bundle) {
        return Err(invalid(field, message, None));
    }
    let digest = release_digest(&bundle);
    Ok(Loaded { path: path.to_path_buf(), display: display.to_string(), text, bundle, spans, digest })
}

/// The release digest: sha256 over the canonical JSON of the bundle
/// (object keys sorted, no whitespace), excluding `spec.rollback`.
///
/// The rollback target names the *previous* release; it is how we leave this
/// release, not part of what is served, and including it would make two
/// identical releases differ only by history.
pub(crate) fn release_digest(b: &ReleaseBundle) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(canonical_form(b).as_bytes())))
}

/// The bytes [`release_digest`] hashes. JSON has no NaN or infinity
/// (serde_json writes both as `null`, which the canonical form drops like an
/// absent field), so a non-finite float, which the parser refuses, is still
/// written as an object no number can equal: `{"nonFinite":"NaN"}`. Distinct
/// values never share canonical bytes.
pub(crate) fn canonical_form(b: &ReleaseBundle) -> String {
    let mut v = serde_json::to_value(b).expect("bundle serializes");
    for (field, x) in b.float_fields() {
        if !x.is_finite() {
            if let Some(slot) = value_at(&mut v, &field) {
                *slot = serde_json::json!({"nonFinite": format!("{x}")});
            }
        }
    }
    if let Some(spec) = v.get_mut("spec").and_then(|s| s.as_object_mut()) {
        spec.remove("rollback");
    }
    let mut canon = String::new();
    canonical_json(&v, &mut canon);
    canon
}

/// The value at a field path such as `spec.canary.gates[1].maxAbsolute`.
fn value_at<'a>(v: &'a mut serde_json::Value, field: &str) -> Option<&'a mut serde_json::Value> {
    let mut cur = v;
    for seg in field.split('.') {
        let (name, rest) = seg.find('[').map(|i| seg.split_at(i)).unwrap_or((seg, ""));
        cur = cur.get_mut(name)?;
        for idx in rest.split(['[', ']']).filter(|s| !s.is_empty()) {
            cur = cur.get_mut(idx.parse::<usize>().ok()?)?;
        }
    }
    Some(cur)
}

fn canonical_json(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            let mut keys: Vec<_> = m.iter().filter(|(_, v)| !v.is_null()).collect();
            keys.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, val)) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).expect("string"));
                out.push(':');
                canonical_json(val, out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, val) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical_json(val, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Resolve `file:` URIs relative to the bundle folder; others unchanged.
/// The result keys the audit cache's entries, so it names the folder
/// losslessly ([`file_uri_path`]).
pub(crate) fn resolve_storage_uri(l: &Loaded) -> String {
    let uri = &l.bundle.spec.model.storage_uri;
    if let Some(rest) = uri.strip_prefix("file:") {
        if !rest.starts_with('/') {
            let p = l.dir().join(rest);
            return format!("file://{}", file_uri_path(&absolute(&p)));
        }
    }
    uri.clone()
}

/// A path in a `file://` URI, from its bytes: what a URI reader would
/// take for something else (`%`, `#` and `?`, a backslash, which `file:`
/// URLs read as `/`), control characters and bytes that are not UTF-8 are
/// percent-encoded; the rest is as it is. Two folders are two URIs (a
/// lossy `display()` made `a\xff` and `a\xfe` one, and `v1#x` read as `v1`).
fn file_uri_path(p: &Path) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    for chunk in p.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            if matches!(c, '%' | '#' | '?' | '\\') || c.is_control() {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    let _ = write!(o, "%{b:02X}");
                }
            } else {
                o.push(c);
            }
        }
        for b in chunk.invalid() {
            let _ = write!(o, "%{b:02X}");
        }
    }
    o
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// An artifact path is safe when it is relative, normal, and stays inside
/// the prefix: no empty segment (which is also what an empty path, a leading
/// `/` and `//` are), no `.` or `..`, no backslash, no drive or scheme colon.
pub fn path_escapes(p: &str) -> bool {
    p.contains(['\\', ':']) || p.split('/').any(|seg| seg.is_empty() || seg == "." || seg == "..")
}

/// The shipped v2 example, parsed: the bundle unit tests of other modules
/// start from (one copy of the text, built into the test binary).
#[cfg(test)]
pub(crate) fn example() -> Loaded {
    let text = include_str!("../../examples/llm-scratch/v2/release.yaml");
    parse("v2/release.yaml", Path::new("v2/release.yaml"), text.to_string()).expect("the example parses")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const EXAMPLE: &str = include_str!("../../examples/llm-scratch/v2/release.yaml");

    fn try_parse(text: String) -> Result<Loaded, LoadError> {
        parse("release.yaml", Path::new("release.yaml"), text)
    }

    #[test]
    fn example_parses() {
        let l = try_parse(EXAMPLE.to_string()).unwrap();
        assert_eq!(l.bundle.metadata.name, "llm-scratch");
        assert!(l.digest.starts_with("sha256:"));
    }

    /// NaN, +Inf, -Inf and "no bound" used to hash alike (all `null`, then
    /// dropped): the canonical form keeps them apart even if one got past the parser.
    #[test]
    fn canonical_form_never_maps_distinct_floats_to_the_same_bytes() {
        let l = try_parse(EXAMPLE.to_string()).unwrap();
        let with = |v: Option<f64>| {
            let mut b = l.bundle.clone();
            b.spec.canary.as_mut().unwrap().gates[0].max_absolute = v;
            b.spec.canary.as_mut().unwrap().gates[0].min_relative_decrease = v.map(|x| -x);
            release_digest(&b)
        };
        let digests: Vec<String> = [None, Some(f64::NAN), Some(f64::INFINITY), Some(f64::NEG_INFINITY), Some(0.5)]
            .into_iter()
            .map(with)
            .collect();
        let unique: std::collections::BTreeSet<&String> = digests.iter().collect();
        assert_eq!(unique.len(), digests.len(), "{digests:?}");
        assert!(canonical_form(&{
            let mut b = l.bundle.clone();
            b.spec.serving.load_time_seconds.as_mut().unwrap().p95 = f64::NAN;
            b
        })
        .contains(r#""p95":{"nonFinite":"NaN"}"#));
    }

    /// `float_fields` is the list validation and the digest rely on: it must
    /// name every `f64` the schema declares.
    #[test]
    fn float_fields_cover_every_f64_of_the_schema() {
        let src = include_str!("model.rs");
        let declared = src
            .lines()
            .filter(|l| {
                l.trim_start().starts_with("pub ")
                    && l.contains(": ")
                    && l.contains("f64")
                    && l.trim_end().ends_with(',')
            })
            .count();
        let mut l = try_parse(EXAMPLE.to_string()).unwrap();
        let c = l.bundle.spec.canary.as_mut().unwrap();
        let g = &mut c.gates[0];
        (g.max_absolute, g.max_relative_increase, g.min_absolute, g.min_relative_decrease) =
            (Some(0.5), Some(0.5), Some(0.5), Some(0.5));
        c.gates.truncate(1);
        l.bundle.spec.serving.load_time_seconds.as_mut().unwrap().p50 = Some(1.0);
        assert_eq!(l.bundle.float_fields().len(), declared, "{:?}", l.bundle.float_fields());
    }

    /// A redacted error keeps the schema's field names and list indexes
    /// only: any other segment (a key from the file) is `…`, wherever it
    /// stands, and so is a segment whose index is not a number.
    #[test]
    fn redacted_paths_keep_schema_names_and_numeric_indexes_only() {
        for (field, want) in [
            ("spec.model.artifacts[2].sha256", "spec.model.artifacts[2].sha256"),
            ("spec.model.artifacts[1][0]", "spec.model.artifacts[1][0]"),
            ("AWS_SECRET=abc.spec", "….spec"),
            ("spec.AWS_SECRET=abc", "spec.…"),
            ("spec.model.artifacts[x]", "spec.model.…"),
            ("spec.model.artifacts[1][k]", "spec.model.…"),
            ("spec.token[0]", "spec.…"),
            ("(document)", "(document)"),
        ] {
            assert_eq!(redact_path(field), want, "{field}");
        }
    }

    /// verifyOnStart is part of the release: each mode hashes differently.
    /// `full`, the default, is left out of the canonical form, so bundles
    /// written before the field existed keep their digest.
    #[test]
    fn each_verify_mode_is_its_own_release() {
        let mut b = example().bundle;
        b.spec.serving.verify_on_start = VerifyOnStart::Full;
        assert!(!canonical_form(&b).contains("verifyOnStart"), "{}", canonical_form(&b));
        let full = release_digest(&b);
        b.spec.serving.verify_on_start = VerifyOnStart::Size;
        assert!(canonical_form(&b).contains(r#""verifyOnStart":"size""#));
        let size = release_digest(&b);
        b.spec.serving.verify_on_start = VerifyOnStart::Off;
        let off = release_digest(&b);
        assert!(full != size && size != off && off != full);
    }

    /// The task is part of the release: each task hashes differently, and
    /// `chat`, the default, is left out of the canonical form (as are the
    /// new artifact fields when absent), so bundles written before the
    /// fields existed keep their digest.
    #[test]
    fn each_task_is_its_own_release_and_chat_keeps_old_digests() {
        let before = example();
        let mut b = before.bundle.clone();
        b.spec.model.task = Task::Chat;
        assert_eq!(release_digest(&b), before.digest);
        let c = canonical_form(&b);
        for absent in ["task", "embeddingRelease", "builtWith", "baseReleaseDigest"] {
            assert!(!c.contains(absent), "{absent}: {c}");
        }
        let digests: std::collections::BTreeSet<String> = Task::ALL
            .into_iter()
            .map(|t| {
                b.spec.model.task = t;
                release_digest(&b)
            })
            .collect();
        assert_eq!(digests.len(), Task::ALL.len());
        b.spec.model.task = Task::Embedding;
        assert!(canonical_form(&b).contains(r#""task":"embedding""#));
    }

    /// A bundle that names no namespace is in `default`, as kubectl would put it.
    #[test]
    fn the_namespace_defaults_to_default() {
        let l = crate::manifests::bundle_edit(|v| {
            v["metadata"].as_mapping_mut().unwrap().remove("namespace");
        })
        .unwrap();
        assert_eq!(l.bundle.metadata.namespace, "default");
    }

    /// The serving port defaults to 8080, the runtimes' own default.
    #[test]
    fn the_port_defaults_to_8080() {
        let l = crate::manifests::bundle_edit(|v| {
            v["spec"]["serving"].as_mapping_mut().unwrap().remove("port");
        })
        .unwrap();
        assert_eq!(l.bundle.spec.serving.port, 8080);
    }

    /// Each way out of the artifact prefix, alone, and names that stay in.
    #[test]
    fn artifact_paths_that_leave_the_prefix_escape() {
        for p in ["", "/etc/passwd", "\\share", "a\\b", "../x", "a/../b", "./a", "a/./b", "a//b", "a/", "c:x", "s3:k"] {
            assert!(path_escapes(p), "{p:?} escapes");
        }
        for p in ["a", "a/b.bin", "..a", "a..", ".hidden", "dir/.cfg", "a b/ü.json"] {
            assert!(!path_escapes(p), "{p:?} stays inside");
        }
    }

    /// A relative `file:` store is the bundle's folder joined and made
    /// absolute; an absolute one and any other scheme are as written.
    #[test]
    fn a_relative_file_store_resolves_against_the_bundle_folder() {
        let mut l = example();
        l.bundle.spec.model.storage_uri = "file:../store/v2/".into();
        let dir = std::path::absolute(Path::new("v2")).unwrap();
        assert_eq!(resolve_storage_uri(&l), format!("file://{}", dir.join("../store/v2/").display()));
        // From the bytes: what a URI reader would take for something else is encoded.
        use std::os::unix::ffi::OsStrExt;
        let odd = Path::new(std::ffi::OsStr::from_bytes(b"/t/a\xff/v1#x?y%z\\w\x1b/s/"));
        assert_eq!(file_uri_path(odd), "/t/a%FF/v1%23x%3Fy%25z%5Cw%1B/s/");
        assert_ne!(
            file_uri_path(Path::new(std::ffi::OsStr::from_bytes(b"/a\xfe"))),
            file_uri_path(Path::new(std::ffi::OsStr::from_bytes(b"/a\xff")))
        );
        for uri in ["file:/srv/store/v2/", "s3://bucket/m/v2/", "oci://registry/m@sha256:ab"] {
            l.bundle.spec.model.storage_uri = uri.into();
            assert_eq!(resolve_storage_uri(&l), uri);
        }
    }

    /// Traffic steps: strictly increasing percentages in 1..=100, each rule alone.
    #[test]
    fn traffic_steps_are_strictly_increasing_percentages() {
        let steps = |yaml: &str| {
            crate::manifests::bundle_edit(|v| {
                v["spec"]["canary"]["steps"] = serde_yaml_ng::from_str(yaml).unwrap();
            })
        };
        assert!(steps("[10, 50, 100]").is_ok());
        for bad in ["[]", "[0, 50]", "[10, 101]", "[50, 10]", "[10, 10]"] {
            let e = steps(bad).unwrap_err().to_string();
            assert!(e.contains("must be strictly increasing traffic percentages"), "{bad}: {e}");
        }
    }

    /// Surge and unavailable as the Deployment controller resolves them:
    /// both zero becomes unavailable 1, and unavailable never exceeds replicas.
    #[test]
    fn rollout_surge_and_unavailable_resolve_as_the_controller_does() {
        let r = |surge: u32, unavailable: u32| RolloutStrategy {
            max_surge: IntOrPercent::Int(surge),
            max_unavailable: IntOrPercent::Int(unavailable),
            ..RolloutStrategy::default()
        };
        assert_eq!(r(0, 0).resolve(3), Ok((0, 1)));
        assert_eq!(r(1, 0).resolve(3), Ok((1, 0)));
        assert_eq!(r(0, 2).resolve(3), Ok((0, 2)));
        assert_eq!(r(0, 5).resolve(2), Ok((0, 2)));
        assert_eq!(r(2, 1).resolve(3), Ok((2, 1)));
    }

    /// Percentages resolve as Kubernetes resolves them: maxSurge rounds up,
    /// maxUnavailable down; integers are taken as they are.
    #[test]
    fn percentages_round_as_kubernetes_rounds_them() {
        let pct = |s: &str| IntOrPercent::Str(s.into());
        assert_eq!(pct("25%").resolve(10, true), Ok(3));
        assert_eq!(pct("25%").resolve(10, false), Ok(2));
        assert_eq!(pct("30%").resolve(7, false), Ok(2));
        assert_eq!(pct("100%").resolve(4, false), Ok(4));
        assert_eq!(pct("0%").resolve(4, true), Ok(0));
        assert_eq!(IntOrPercent::Int(3).resolve(10, false), Ok(3));
        assert!(pct("25").resolve(10, true).is_err());
    }

    proptest! {
        #![proptest_config(crate::util::prop_config(400))]

        // Outside input must never panic the parser: any text is Ok or a located error.
        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,400}") {
            if let Err(LoadError::Invalid { file, line, column, .. }) = try_parse(text) {
                prop_assert_eq!(file, "release.yaml");
                prop_assert!(line >= 1 && column >= 1);
            }
        }

        // Realistic damage to a real bundle: drop a line, cut the text, flip a byte.
        #[test]
        fn damaged_bundle_never_panics(drop in 0usize..120, cut in 0usize..4000, flip in 0usize..4000, ch in proptest::char::any()) {
            let lines: Vec<&str> = EXAMPLE.lines().collect();
            let dropped: String = lines.iter().enumerate().filter(|(i, _)| *i != drop % lines.len()).map(|(_, l)| format!("{l}\n")).collect();
            let _ = try_parse(dropped);
            let mut cut_at = cut.min(EXAMPLE.len());
            while !EXAMPLE.is_char_boundary(cut_at) { cut_at -= 1; }
            let _ = try_parse(EXAMPLE[..cut_at].to_string());
            let mut chars: Vec<char> = EXAMPLE.chars().collect();
            let i = flip % chars.len();
            chars[i] = ch;
            let _ = try_parse(chars.into_iter().collect());
        }
    }
}
