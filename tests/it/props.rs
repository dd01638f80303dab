//! Property tests over every parser of outside input (issue #9), in the
//! normal suite. They drive the same entry points as the cargo-fuzz targets
//! (`bundlegate::fuzzing`, `fuzz/`), from inputs that stay close to the real
//! thing: the shipped example files with random edits, and arbitrary JSON in
//! the places the real formats put JSON. Beyond "no panic" each property
//! checks what the error must carry (file, line, field) or what a success
//! must satisfy. Regressions found by fuzzing are at the bottom, by name.

use bundlegate::bundle::{self, LoadError};
use bundlegate::fuzzing;
use bundlegate::parse::cmp::{CmpEnv, Params};
use bundlegate::parse::{prom, snapshot};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;

const BUNDLE: &str = include_str!("../../examples/llm-scratch/v2/release.yaml");
const BUNDLE_V1: &str = include_str!("../../examples/llm-scratch/v1/release.yaml");
const SNAPSHOT: &str = include_str!("../../examples/cluster/single-gpu.yaml");
const PIPELINES: [&str; 3] = [
    include_str!("../../pipelines/pull-request.yaml"),
    include_str!("../../pipelines/post-merge.yaml"),
    include_str!("../../pipelines/drift-audit.yaml"),
];

/// Tokens that change YAML structure or types, so edits reach deep paths.
const TOKENS: &[&str] = &[
    ":",
    ": ",
    "- ",
    "\n",
    "\n  ",
    "  ",
    "#",
    "'",
    "\"",
    "{",
    "}",
    "[",
    "]",
    "&a ",
    "*a",
    "!!str ",
    "!!binary ",
    "|",
    ">",
    "---\n",
    "...\n",
    "~",
    "null",
    "true",
    "-1",
    "0",
    "4294967296",
    "1e400",
    ".nan",
    "0x1F",
    "../",
    "/",
    "\\",
    "\t",
    "\u{feff}",
    "é",
    "<<: *a\n",
    "? ",
    "%YAML 1.2\n",
    "sha256:",
];

/// Values of other types and edge cases for a scalar's place.
const VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "65536",
    "4294967296",
    "18446744073709551616",
    "1.5",
    "1e400",
    ".inf",
    "-.nan",
    "true",
    "null",
    "~",
    "''",
    "\"\"",
    "[]",
    "{}",
    "abc",
    "\"../../etc/passwd\"",
    "/abs/path",
    "s3://b/p/",
    "file:../x/",
    "\"25%\"",
    "\"101%\"",
    "\"-5%\"",
    "\"0%\"",
    "1Gi",
    "500m",
    "\"\u{0}\"",
    "sha256:00",
    "img@sha256:0000000000000000000000000000000000000000000000000000000000000000",
    "[1, 2]",
    "{a: 1}",
    "\"é\u{202e}\"",
];

#[derive(Debug, Clone)]
enum Edit {
    /// Replace the value of the n-th `key: value` line: keeps the YAML valid
    /// so edits reach the semantic checks, not only the syntax errors.
    Value {
        nth: usize,
        value: &'static str,
    },
    Delete {
        at: usize,
        len: usize,
    },
    Insert {
        at: usize,
        token: &'static str,
    },
    Duplicate {
        at: usize,
        len: usize,
    },
}

fn edits() -> impl Strategy<Value = Vec<Edit>> {
    let edit = prop_oneof![
        6 => (any::<usize>(), prop::sample::select(VALUES)).prop_map(|(nth, value)| Edit::Value { nth, value }),
        1 => (any::<usize>(), 1usize..40).prop_map(|(at, len)| Edit::Delete { at, len }),
        1 => (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(at, token)| Edit::Insert { at, token }),
        1 => (any::<usize>(), 1usize..120).prop_map(|(at, len)| Edit::Duplicate { at, len }),
    ];
    prop::collection::vec(edit, 1..6)
}

/// Apply edits at char boundaries (positions are taken modulo the length).
fn apply(text: &str, edits: &[Edit]) -> String {
    let mut s = text.to_string();
    let boundary = |s: &str, at: usize| {
        if s.is_empty() {
            return 0;
        }
        let mut i = at % (s.len() + 1);
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    for e in edits {
        match *e {
            Edit::Value { nth, value } => {
                let starts: Vec<usize> = s.match_indices(": ").map(|(i, _)| i + 2).collect();
                if starts.is_empty() {
                    continue;
                }
                let a = starts[nth % starts.len()];
                let end = s[a..].find('\n').map_or(s.len(), |n| a + n);
                s.replace_range(a..end, value);
            }
            Edit::Delete { at, len } => {
                let a = boundary(&s, at);
                let b = boundary(&s, a.saturating_add(len).min(s.len()));
                s.replace_range(a..b.max(a), "");
            }
            Edit::Insert { at, token } => {
                let a = boundary(&s, at);
                s.insert_str(a, token);
            }
            Edit::Duplicate { at, len } => {
                let a = boundary(&s, at);
                let b = boundary(&s, a.saturating_add(len).min(s.len()));
                let piece = s[a..b.max(a)].to_string();
                s.insert_str(b.max(a), &piece);
            }
        }
    }
    s
}

/// Arbitrary JSON, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "[ -~]{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "NaN", "+Inf", "-Inf", "1e309", "0.5", "", "success", "vector", "matrix", "scalar", "string", "1", "-3"
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "metric", "value", "values", "__name__", "le", "pod", "name", "string", "array", "map", "x"
                ]),
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

fn line_count(s: &str) -> usize {
    s.lines().count().max(1)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any edit of the example bundle: a parsed bundle goes through lint and
    /// render without panicking; a rejected one names the file, a line that
    /// exists and a field.
    #[test]
    fn bundle_edits_parse_or_fail_with_file_line_field(e in edits()) {
        let text = apply(BUNDLE, &e);
        let path = Path::new("props/release.yaml");
        match bundle::parse("props/release.yaml", path, text.clone()) {
            Ok(_) => prop_assert!(fuzzing::bundle_yaml(path, &text)),
            Err(LoadError::Invalid { file, line, column, field, message }) => {
                prop_assert_eq!(file, "props/release.yaml");
                prop_assert!(line >= 1 && line <= line_count(&text) + 1, "line {} of {}: {}", line, line_count(&text), message);
                prop_assert!(column >= 1);
                prop_assert!(!field.is_empty() && !message.is_empty());
            }
            Err(other) => prop_assert!(false, "parse of text never does I/O: {}", other),
        }
    }

    /// Artifact paths from anywhere: a bundle whose artifact escapes the
    /// prefix never lints clean (refused by the parser or flagged by lint).
    #[test]
    fn artifact_paths_that_escape_are_never_clean(prefix in prop::sample::select(vec!["../", "/", "a/../../", "./../", "..\\", "a/./../../b/"]), name in "[a-z]{1,8}") {
        let evil = format!("{prefix}{name}");
        prop_assert!(bundle::path_escapes(&evil), "{} escapes", evil);
        let text = BUNDLE.replacen("path: tokenizer.json", &format!("path: \"{}\"", evil.replace('\\', "\\\\")), 1);
        prop_assume!(text != BUNDLE);
        if let Ok(l) = bundle::parse("p.yaml", Path::new("p.yaml"), text) {
            let d = bundlegate::checks::lint::lint(&l, &bundlegate::checks::lint::RollbackStatus::NotDeclared);
            prop_assert!(d.iter().any(|d| d.severity == bundlegate::report::Severity::Error), "escaping path {} linted clean", evil);
        }
    }

    /// Pipeline files (a pull request can change them): errors start with the file name.
    #[test]
    fn pipeline_edits_parse_or_name_the_file(which in 0usize..3, e in edits()) {
        let text = apply(PIPELINES[which], &e);
        if let Err(err) = bundlegate::pipeline::parse(Path::new("props/pipeline.yaml"), &text) {
            prop_assert!(format!("{err:#}").starts_with("props/pipeline.yaml"), "{:#}", err);
        }
    }

    /// Snapshot edits: parse or a named error; parsed state preflights
    /// without panicking and is never empty (a partial cluster must not pass).
    #[test]
    fn snapshot_edits_parse_or_name_the_file(e in edits()) {
        let text = apply(SNAPSHOT, &e);
        match snapshot::parse_snapshot("props/snap.yaml", &text) {
            Ok(st) => {
                prop_assert!(!st.nodes.is_empty() && !st.pods.is_empty());
                prop_assert!(fuzzing::cluster_snapshot(&text));
            }
            Err(err) => prop_assert!(format!("{err:#}").contains("props/snap.yaml"), "{:#}", err),
        }
    }

    /// JSON snapshots with arbitrary item contents.
    #[test]
    fn snapshot_json_with_arbitrary_items_never_panics(items in prop::collection::vec(json_value(), 0..6), kinds in prop::collection::vec(prop::sample::select(vec!["Node", "Pod", "PersistentVolumeClaim", "PersistentVolume", "ResourceQuota", "PodDisruptionBudget", "Deployment", "ReplicaSet", "Widget"]), 6)) {
        let items: Vec<Value> = items.into_iter().zip(kinds).map(|(mut v, k)| {
            if let Value::Object(m) = &mut v { m.insert("kind".into(), json!(k)); }
            v
        }).collect();
        let text = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
        let _ = fuzzing::cluster_snapshot(&text);
    }

    /// Prometheus answers of any shape: parsed values are what the body said,
    /// never invented; errors quote the query or the status.
    #[test]
    fn prometheus_answers_of_any_shape(status in prop::sample::select(vec![200u16, 400, 422, 500, 503]), kind in prop::sample::select(vec!["vector", "matrix", "scalar", "string", "bogus"]), result in json_value(), ok in any::<bool>()) {
        let body = json!({"status": if ok { "success" } else { "error" }, "errorType": "bad_data", "error": "boom", "data": {"resultType": kind, "result": result}}).to_string();
        // What the canary reads of the series (buckets, samples, the split) never panics either.
        let _ = fuzzing::prom_response(status, &body);
        match prom::parse_response(status, &body, "q_props") {
            Ok(series) => {
                prop_assert!(ok, "an error answer was read as data");
                match kind {
                    "vector" | "matrix" => {
                        prop_assert_eq!(series.len(), result.as_array().map(Vec::len).unwrap_or(usize::MAX), "one series per result entry");
                        if kind == "vector" { prop_assert!(series.iter().all(|s| s.values.len() == 1)); }
                    }
                    "scalar" => prop_assert!(series.len() == 1 && series[0].values.len() == 1),
                    _ => prop_assert!(false, "result type {} accepted", kind),
                }
            }
            Err(err) => {
                let m = format!("{err:#}");
                prop_assert!(!m.is_empty());
                if !ok { prop_assert!(m.contains("q_props"), "{}", m); }
            }
        }
    }

    /// Well-formed answers are read exactly: every series' labels, values
    /// and times are the ones in the body (not only how many series).
    #[test]
    fn prometheus_values_labels_and_times_are_read_exactly(
        samples in prop::collection::vec((prop::collection::btree_map("[a-z_]{1,8}", "[ -~]{0,12}", 0..4), -1e12f64..1e12, 1_000_000_000_000u64..2_000_000_000_000), 0..6),
        matrix in any::<bool>(),
    ) {
        // Prometheus sends times in seconds with millisecond precision.
        let samples: Vec<_> = samples.into_iter().map(|(l, v, ms)| (l, v, ms as f64 / 1000.0)).collect();
        let result: Vec<serde_json::Value> = samples
            .iter()
            .map(|(labels, v, t)| if matrix {
                json!({"metric": labels, "values": [[t, format!("{v}")], [t + 15.0, format!("{}", v * 2.0)]]})
            } else {
                json!({"metric": labels, "value": [t, format!("{v}")]})
            })
            .collect();
        let body = json!({"status": "success", "data": {"resultType": if matrix { "matrix" } else { "vector" }, "result": result}}).to_string();
        let series = prom::parse_response(200, &body, "q").unwrap();
        prop_assert_eq!(series.len(), samples.len());
        for (s, (labels, v, t)) in series.iter().zip(&samples) {
            prop_assert_eq!(&s.labels, labels);
            if matrix {
                prop_assert_eq!(&s.values, &vec![*v, v * 2.0]);
                prop_assert_eq!(&s.times, &vec![*t, t + 15.0]);
            } else {
                prop_assert_eq!(&s.values, &vec![*v]);
                prop_assert_eq!(&s.times, &vec![*t]);
            }
        }
    }

    /// Arbitrary bodies (HTML error pages, truncated JSON) are errors, not data.
    #[test]
    fn prometheus_non_json_bodies_are_errors(body in "[ -~]{0,64}") {
        prop_assume!(serde_json::from_str::<Value>(&body).is_err());
        prop_assert!(prom::parse_response(502, &body, "q").is_err());
    }

    /// CMP parameters: whatever Argo (or a user in its UI) sends, a resolved
    /// namespace is a DNS label and the bundle path is never empty.
    #[test]
    fn cmp_parameters_resolve_to_valid_values_or_fail(list in prop::collection::vec(json_value(), 0..4), names in prop::collection::vec(prop::sample::select(vec!["namespace", "replicas", "bundle", "templates", "lint", "nope"]), 4), strings in prop::collection::vec(prop_oneof!["[a-z0-9-]{0,70}", "[ -~]{0,10}", "[0-9]{1,6}", Just(String::new())], 4), env_ns in "[ -~]{0,12}", env_replicas in prop_oneof!["[0-9]{1,12}", "-?[0-9]{1,3}"]) {
        let list: Vec<Value> = list.into_iter().zip(names).zip(strings).map(|((v, n), s)| match v {
            Value::Object(mut m) => { m.insert("name".into(), json!(n)); m.entry("string").or_insert(json!(s)); Value::Object(m) }
            other => other,
        }).collect();
        let params = serde_json::to_string(&list).unwrap();
        let env = CmpEnv::from_pairs([("ARGOCD_APP_PARAMETERS", params.as_str()), ("ARGOCD_ENV_NAMESPACE", env_ns.as_str()), ("ARGOCD_ENV_REPLICAS", env_replicas.as_str())]);
        if let Ok(p) = Params::from_env(&env) {
            prop_assert!(!p.bundle.is_empty());
            // The same range as spec.serving.replicas (ARGOCD_ENV_REPLICAS=0 rendered minReplicas 0).
            if let Some(r) = p.replicas {
                prop_assert!((1..=10_000).contains(&r), "replicas {}", r);
            }
            if let Some(ns) = p.namespace {
                prop_assert!(!ns.is_empty() && ns.len() <= 63 && ns.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'), "{}", ns);
            }
        }
    }

    /// The raw NUL-separated form the fuzz target takes.
    #[test]
    fn cmp_environment_bytes_never_panic(text in "[ -~\\x00]{0,200}") {
        let _ = fuzzing::cmp_params(&text);
    }

    /// A golden line of any shape, and any answer body, never panic: a bad
    /// line is an error naming it, a bad answer is a problem of the sample.
    #[test]
    fn golden_lines_and_answers_never_panic(name in "[a-z]{0,8}", api in prop::sample::select(vec!["openai-chat", "openai-completions", "kserve-v2", "x"]), min in prop::option::of(0usize..5), answer in "[ -~]{0,120}") {
        let line = serde_json::json!({"name": name, "api": api, "request": {}, "expect": {"json": true, "minChars": min}}).to_string();
        let parsed = fuzzing::golden(&format!("{line}\0{answer}"));
        prop_assert_eq!(parsed, api != "x");
    }
}

// ---- hostile input classes (the bundle hardening issue) ------------------------
// Each property would have found one class that used to pass silently or
// panic: non-finite numbers, duplicate keys, alias amplification, deep
// nesting, and names that become Kubernetes object names and file paths.

fn parse_err(text: &str) -> (usize, usize, String, String) {
    match bundle::parse("props/release.yaml", Path::new("props/release.yaml"), text.to_string()) {
        Err(LoadError::Invalid { line, column, field, message, .. }) => (line, column, field, message),
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => panic!("not a located error: {e}"),
    }
}

const FLOAT_FIELDS: &[(&str, &str)] = &[
    ("p95", "spec.serving.loadTimeSeconds.p95"),
    ("maxAbsolute", "spec.canary.gates[0].maxAbsolute"),
    ("maxRelativeIncrease", "spec.canary.gates[0].maxRelativeIncrease"),
    ("cpu", "spec.serving.resources.requests.cpu"),
    ("memory", "spec.serving.resources.requests.memory"),
];
const NON_FINITE: &[&str] =
    &[".nan", ".NaN", ".NAN", ".inf", ".Inf", "+.inf", "-.inf", "-.INF", "1e999", "-2.5e400", "1_0e999"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// `.nan`/`.inf` or an overflowing literal in any number field is refused
    /// at its own line and column, naming the field.
    #[test]
    fn non_finite_numbers_in_any_float_field_are_refused(f in prop::sample::select(FLOAT_FIELDS), v in prop::sample::select(NON_FINITE)) {
        let text = fuzzing::with_value(f.0, v).unwrap();
        let (line, column, field, message) = parse_err(&text);
        let want_line = text.lines().position(|l| l.trim_start().starts_with(&format!("{}: {v}", f.0))).unwrap() + 1;
        prop_assert_eq!(line, want_line);
        prop_assert_eq!(column, text.lines().nth(line - 1).unwrap().find(v).unwrap() + 1);
        prop_assert_eq!(field, f.1);
        prop_assert!(message.contains("not a finite number"), "{}", message);
    }

    /// Out-of-range finite numbers are refused too, never passed to a check.
    #[test]
    fn out_of_range_numbers_are_refused(case in prop::sample::select(vec![
        ("p95", "-1", "spec.serving.loadTimeSeconds.p95"), ("p95", "1e12", "spec.serving.loadTimeSeconds.p95"),
        ("maxAbsolute", "1.5", "spec.canary.gates[0].maxAbsolute"), ("maxAbsolute", "-0.01", "spec.canary.gates[0].maxAbsolute"),
        ("maxRelativeIncrease", "-0.1", "spec.canary.gates[0].maxRelativeIncrease"), ("maxRelativeIncrease", "1e300", "spec.canary.gates[0].maxRelativeIncrease"),
        ("window", "99999999999999999999999h", "spec.canary.window"), ("window", "0s", "spec.canary.window"),
        ("replicas", "0", "spec.serving.replicas"), ("port", "0", "spec.serving.port"),
        ("periodSeconds", "0", "spec.serving.probes.startup.periodSeconds"), ("failureThreshold", "0", "spec.serving.probes.startup.failureThreshold"),
        ("progressDeadlineSeconds", "4294967295", "spec.serving.rollout.progressDeadlineSeconds"),
        ("maxSurge", "'18446744073709551615%'", "spec.serving.rollout.maxSurge"), ("maxUnavailable", "'101%'", "spec.serving.rollout.maxUnavailable"),
    ])) {
        let text = fuzzing::with_value(case.0, case.1).unwrap();
        let (_, _, field, _) = parse_err(&text);
        prop_assert_eq!(field, case.2);
    }

    /// Any mapping key repeated at any depth is refused at the second one,
    /// and the message names both lines.
    #[test]
    fn duplicate_keys_at_any_depth_are_refused(line in 0usize..110) {
        let Some(text) = fuzzing::duplicate_key_line(line) else { return Ok(()) };
        let (l, _, field, message) = parse_err(&text);
        prop_assert_eq!(l, line + 2, "{}", message);
        prop_assert!(message.contains("duplicate key") && message.contains(&format!("line {}", line + 1)), "{}", message);
        prop_assert!(!field.is_empty());
    }

    /// Alias amplification is refused before anything expands it: fast and
    /// with a message that says so.
    #[test]
    fn alias_bombs_are_refused_quickly(levels in 3usize..10, width in 6usize..16) {
        prop_assume!((width as f64).powi(levels as i32) > 200_000.0);
        let t0 = std::time::Instant::now();
        let (_, _, _, message) = parse_err(&fuzzing::alias_bomb(levels, width));
        prop_assert!(message.contains("alias"), "{}", message);
        prop_assert!(t0.elapsed() < std::time::Duration::from_secs(2));
    }

    /// Nesting beyond the limit is refused (the span walk recurses).
    #[test]
    fn deep_nesting_is_refused(depth in 63usize..400) {
        let (_, _, field, message) = parse_err(&fuzzing::deeply_nested(depth));
        prop_assert!(message.contains("deeper than 64"), "{}", message);
        prop_assert!(field.starts_with("metadata.labels.n0"), "{}", field);
    }

    /// Names that become object names, label values and path segments.
    #[test]
    fn hostile_names_are_refused(which in 0usize..3, v in prop_oneof![
        "\\.\\./[a-z]{1,6}", "[a-z]{1,3}/[a-z]{1,3}", "[a-z]{0,3}\\.\\.[a-z]{0,3}", "[a-z0-9]{64,70}", "[._-][a-z0-9]{1,5}", "[a-z0-9]{1,5}[._-]",
        "[A-Z_ ]{1,5}", "[a-z]{1,4}[\u{202e}é ][a-z]{0,3}",
    ]) {
        let (key, field) = [("version", "metadata.version"), ("namespace", "metadata.namespace"), ("name", "metadata.name")][which];
        // version accepts capitals, dots and underscores inside; the others do not.
        prop_assume!(!(which == 0 && v.len() <= 63 && !v.contains("..") && regex_like_label_value(&v)));
        let text = fuzzing::with_value(key, &serde_json::to_string(&v).unwrap()).unwrap();
        let (line, _, f, _) = parse_err(&text);
        prop_assert_eq!(f, field);
        prop_assert_eq!(line, text.lines().position(|l| l.trim_start().starts_with(&format!("{key}: "))).unwrap() + 1);
    }

    /// The release digest is injective over numbers: different gate bounds
    /// never share a digest (NaN and Inf both serialized as `null` did).
    #[test]
    fn distinct_gate_bounds_have_distinct_digests(a in 0.0f64..1.0, b in 0.0f64..1.0) {
        prop_assume!(a != b);
        let d = |x: f64| bundle::parse("p.yaml", Path::new("p.yaml"), fuzzing::with_value("maxAbsolute", &format!("{x:?}")).unwrap()).unwrap().digest;
        prop_assert_ne!(d(a), d(b));
    }
}

// ---- hardening, round two --------------------------------------------------
// Each property would have found a class that got through the first round:
// non-finite numbers in `!!float`-tagged and quoted styles, duplicate keys
// written through an alias (bundle and snapshot) or in JSON, unbounded alias
// expansion in snapshots, and evidence that quoted a file it should not.

/// Every float field, including the gate bounds the example does not set.
const ALL_FLOAT_FIELDS: &[(&str, &str)] = &[
    ("p95", "spec.serving.loadTimeSeconds.p95"),
    ("maxAbsolute", "spec.canary.gates[0].maxAbsolute"),
    ("maxRelativeIncrease", "spec.canary.gates[0].maxRelativeIncrease"),
    ("minAbsolute", "spec.canary.gates[2].minAbsolute"),
    ("minRelativeDecrease", "spec.canary.gates[2].minRelativeDecrease"),
    ("cpu", "spec.serving.resources.requests.cpu"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// A non-finite number in any float field, in any style serde_yaml_ng
    /// reads as a float (plain, or `!!float` quoted, block or verbatim), is
    /// refused naming that field; the plain check alone let `!!float |-` through.
    #[test]
    fn non_finite_numbers_in_every_float_style_are_refused(f in prop::sample::select(ALL_FLOAT_FIELDS), style in 0usize..fuzzing::NON_FINITE_STYLES, word in prop::sample::select(vec![".nan", ".NaN", ".inf", "-.inf", "+.INF"])) {
        let text = fuzzing::with_value_at(f.0, |indent| fuzzing::non_finite_value(style, word, indent)).unwrap();
        let (_, _, field, message) = parse_err(&text);
        prop_assert_eq!(field, f.1);
        prop_assert!(message.contains("not a finite number"), "{}", message);
    }

    /// Any key of the bundle repeated through an alias (`&k key: v`, then
    /// `*k : v`) is refused at the alias, naming the key's field.
    #[test]
    fn alias_keys_repeating_any_key_are_refused(line in 0usize..110) {
        let Some(text) = fuzzing::alias_key_line(line) else { return Ok(()) };
        let (l, _, field, message) = parse_err(&text);
        prop_assert_eq!(l, line + 2, "{}", message);
        prop_assert!(message.contains("duplicate key"), "{}", message);
        let key = BUNDLE.lines().nth(line).unwrap().trim_start().split(':').next().unwrap();
        prop_assert!(field.ends_with(&key), "{} does not end with {}", field, key);
    }

    /// Any scalar entry of the snapshot written twice, in YAML through an
    /// alias key or in JSON (where serde_json kept the last), is refused
    /// naming the file and the duplicate key.
    #[test]
    fn snapshot_duplicate_keys_are_refused_in_yaml_and_json(nth in any::<usize>(), json in any::<bool>()) {
        let Some(text) = fuzzing::snapshot_with_duplicate_key(SNAPSHOT, nth, json) else { return Ok(()) };
        let err = format!("{:#}", snapshot::parse_snapshot("props/snap", &text).unwrap_err());
        prop_assert!(err.starts_with("props/snap:") && err.contains("duplicate key"), "{}", err);
    }

    /// Alias expansion in a snapshot is bounded whatever the count: past the
    /// budget it is refused within a second, under it it reads.
    #[test]
    fn snapshot_alias_expansion_is_bounded(aliases in prop_oneof![1usize..50, 10_001usize..30_000]) {
        let t0 = std::time::Instant::now();
        let r = snapshot::parse_snapshot("props/bomb", &fuzzing::snapshot_alias_bomb(aliases));
        prop_assert!(t0.elapsed() < std::time::Duration::from_secs(2), "{:?}", t0.elapsed());
        if aliases > 10_000 {
            let e = format!("{:#}", r.unwrap_err());
            prop_assert!(e.contains("alias amplification"), "{}", e);
        } else {
            prop_assert_eq!(r.unwrap().pods.len(), aliases + 1);
        }
    }

    /// JSON: any value serde_json writes has unique keys and passes; the
    /// same text with one key of any of its objects written twice does not.
    #[test]
    fn json_duplicate_keys_are_found_anywhere(v in json_value(), nth in any::<usize>(), key in "[a-z]{1,6}") {
        let mut v = json!({"w": v});
        prop_assert!(bundlegate::yaml_guard::check_json(&v.to_string()).is_ok());
        // A sentinel entry in the nth object (pre-order), then made a duplicate pair.
        fn count(v: &Value) -> usize {
            match v {
                Value::Object(m) => 1 + m.values().map(count).sum::<usize>(),
                Value::Array(a) => a.iter().map(count).sum(),
                _ => 0,
            }
        }
        fn mark(v: &mut Value, n: &mut usize) -> bool {
            match v {
                Value::Object(m) => {
                    if *n == 0 {
                        m.insert("__dup__".into(), json!(0));
                        return true;
                    }
                    *n -= 1;
                    m.values_mut().any(|x| mark(x, n))
                }
                Value::Array(a) => a.iter_mut().any(|x| mark(x, n)),
                _ => false,
            }
        }
        let mut n = nth % count(&v);
        prop_assert!(mark(&mut v, &mut n));
        let dup = v.to_string().replacen("\"__dup__\":0", &format!("\"{key}\":1,\"{key}\":2"), 1);
        let e = bundlegate::yaml_guard::check_json(&dup).unwrap_err();
        prop_assert!(e.message.contains(&format!("duplicate key `{key}`")), "{}", e.message);
    }

    /// Whatever a rollback target holds (a `.env`, quoted and escaped values,
    /// keys, a half bundle), the evidence about it never contains its text:
    /// the quote-stripping it replaced missed `\"` escapes.
    #[test]
    fn evidence_about_a_named_file_never_quotes_it(secret in "[a-z]{10,14}", shape in 0usize..6) {
        let text = match shape {
            0 => format!("API_TOKEN={secret}\nDB_PASSWORD=\"{secret}\"\n"),
            1 => format!("DB_PASSWORD: \"a\\\"{secret}\\\"b\"\n"),
            2 => format!("{secret}: 1\n"),
            3 => format!("apiVersion: bundlegate.dev/v1\nkind: '{secret}'\n"),
            4 => format!("{{\"apiVersion\": \"bundlegate.dev/v1\", \"kind\": \"ReleaseBundle\", \"{secret}\": 1}}\n"),
            _ => BUNDLE.replacen("name: llm-scratch", &format!("name: \"`{secret}`\\\"\""), 1),
        };
        let e = bundle::parse("t.env", Path::new("t.env"), text).unwrap_err();
        let shown = e.redacted();
        prop_assert!(!shown.contains(&secret), "{}", shown);
        prop_assert!(shown.starts_with("t.env:"), "{}", shown);
    }
}

/// The hand-made fuzz seeds of the hostile classes stay what they claim:
/// each is refused, so the fuzzer starts next to the boundary.
#[test]
fn hostile_fuzz_seeds_are_refused() {
    let seeds = |dir: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = std::fs::read_dir(crate::support::repo().join("fuzz/seeds").join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read_to_string(&p).unwrap()))
            .collect();
        v.sort();
        v
    };
    // `reads-*`: forms YAML readers once read differently, read by the one
    // reader and rendered; `reserved-*`: names the tool owns, BG021 at lint.
    for (name, text) in seeds("bundle_yaml") {
        if name.starts_with("reads-") {
            assert!(fuzzing::bundle_yaml(Path::new(&name), &text), "bundle seed {name} does not parse");
        } else if name.starts_with("reserved-") {
            let l = bundle::parse(&name, Path::new(&name), text).unwrap();
            let lint = bundlegate::checks::lint::lint(&l, &bundlegate::checks::lint::RollbackStatus::NotDeclared);
            assert!(
                lint.iter().any(|d| d.code == bundlegate::diag::Code::ReservedName),
                "bundle seed {name} passes lint"
            );
        } else {
            assert!(bundle::parse(&name, Path::new(&name), text).is_err(), "bundle seed {name} parses");
        }
    }
    let snaps = seeds("cluster_snapshot");
    assert!(snaps.len() >= 3);
    for (name, text) in snaps {
        let e = format!("{:#}", snapshot::parse_snapshot(&name, &text).unwrap_err());
        assert!(e.contains("duplicate key") || e.contains("alias amplification"), "{name}: {e}");
    }
}

fn regex_like_label_value(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

#[test]
fn the_unedited_examples_parse() {
    // The properties above start from these; if they stopped parsing, every
    // property would only be testing the error path.
    assert!(fuzzing::bundle_yaml(Path::new("v2.yaml"), BUNDLE));
    assert!(fuzzing::bundle_yaml(Path::new("v1.yaml"), BUNDLE_V1));
    assert!(fuzzing::cluster_snapshot(SNAPSHOT));
    for p in PIPELINES {
        bundlegate::pipeline::parse(Path::new("p.yaml"), p).unwrap();
    }
    assert!(fuzzing::cmp_params(
        "ARGOCD_APP_PARAMETERS=[{\"name\":\"namespace\",\"string\":\"staging\"}]\0PARAM_REPLICAS=2"
    ));
    assert!(fuzzing::prom_response(
        200,
        r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"le":"0.5"},"value":[1,"3"]},{"metric":{"le":"+Inf"},"value":[1,"4"]}]}}"#
    ));
    assert_eq!(
        prom::parse_response(
            200,
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.5"]}]}}"#,
            "q"
        )
        .unwrap()[0]
            .values,
        vec![0.5]
    );
}

// ---------------------------------------------------------------------------
// Regressions found by `scripts/fuzz` go here, each input as the fuzzer found
// it. None so far: 5 targets × 120 s (2026-12-03, ~9.4M inputs) and the CI passes found no
// panic, timeout or out-of-memory.
