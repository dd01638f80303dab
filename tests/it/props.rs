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
const PIPELINES: [&str; 4] = [
    include_str!("../../pipelines/pull-request.yaml"),
    include_str!("../../pipelines/post-merge.yaml"),
    include_str!("../../pipelines/drift-audit.yaml"),
    include_str!("../../pipelines/progressive.yaml"),
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

// ---- cluster snapshots: every kind the parser reads, field by field -----------

/// Kinds preflight reads, then kinds it only counts.
const SNAPSHOT_KINDS: [&str; 9] = [
    "Node",
    "Pod",
    "PersistentVolumeClaim",
    "PersistentVolume",
    "ResourceQuota",
    "PodDisruptionBudget",
    "Deployment",
    "ReplicaSet",
    "Widget",
];

/// A snapshot item of any shape: mostly an object with unknown fields (read
/// as an empty object of its kind), some with a spec and status of any
/// type, some not an object at all.
fn arbitrary_item() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => json_value().prop_map(|v| json!({"spec": {"metric": v.clone()}, "status": {"x": v}})),
        1 => (json_value(), json_value()).prop_map(|(spec, status)| json!({"spec": spec, "status": status})),
        1 => json_value(),
    ]
}

/// Objects of `kind` in a parsed state.
fn count_of(st: &bundlegate::checks::preflight::ClusterState, kind: &str) -> usize {
    match kind {
        "Node" => st.nodes.len(),
        "Pod" => st.pods.len(),
        "PersistentVolumeClaim" => st.pvcs.len(),
        "PersistentVolume" => st.pvs.len(),
        "ResourceQuota" => st.quotas.len(),
        "PodDisruptionBudget" => st.pdbs.len(),
        other => st.ignored.get(other).copied().unwrap_or(0),
    }
}

/// One generated snapshot item: the object without apiVersion, kind and
/// `metadata.name` (given by position), and the plain data preflight must
/// get from it (serialized), `None` for a kind it only counts.
#[derive(Debug, Clone)]
struct GenItem {
    kind: &'static str,
    api_version: &'static str,
    object: Value,
    plain: Option<Value>,
}

fn gen_item(kind: &'static str, api_version: &'static str, object: Value, plain: Option<Value>) -> GenItem {
    GenItem { kind, api_version, object, plain }
}

fn labels() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-z]{1,4}(/[a-z]{1,3})?", "[a-z][a-z0-9]{0,4}|", 0..3).prop_map(|m| json!(m))
}

/// A quantity map as kubectl prints it (strings) or a hand-written file may
/// have it (bare integers), and the text each value must be read as.
fn quantities() -> impl Strategy<Value = (Value, Value)> {
    let q = prop_oneof![(0u32..5000).prop_map(Value::from), "[1-9][0-9]{0,2}(m|k|Mi|Gi)?".prop_map(Value::from)];
    let keys = prop::sample::select(vec!["cpu", "memory", "nvidia.com/gpu", "pods", "ephemeral-storage"]);
    prop::collection::btree_map(keys, q, 0..4).prop_map(|m| {
        let text = |v: &Value| v.as_str().map(String::from).unwrap_or_else(|| v.to_string());
        (
            json!(m),
            m.iter().map(|(k, v)| (k.to_string(), Value::from(text(v)))).collect::<serde_json::Map<_, _>>().into(),
        )
    })
}

/// A selector requirement as written (`key_field` names its key) and as read.
fn requirement(key_field: &'static str) -> impl Strategy<Value = (Value, Value)> {
    let ops = prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]);
    ("[a-z]{1,5}", ops, prop::collection::vec("[a-z0-9]{1,4}", 0..3)).prop_map(move |(k, op, values)| {
        (json!({key_field: k, "operator": op, "values": values}), json!({"key": k, "operator": op, "values": values}))
    })
}

fn unzip(pairs: Vec<(Value, Value)>) -> (Value, Value) {
    let (a, b): (Vec<Value>, Vec<Value>) = pairs.into_iter().unzip();
    (a.into(), b.into())
}

/// An int-or-percent as written and as read (a string of digits reads as the int).
fn int_or_percent() -> impl Strategy<Value = (Value, Value)> {
    prop_oneof![
        (0u32..100).prop_map(|n| (json!(n), json!(n))),
        (0u32..100).prop_map(|n| (json!(format!("{n}%")), json!(format!("{n}%")))),
        (0u32..100).prop_map(|n| (json!(n.to_string()), json!(n))),
    ]
}

fn namespace() -> impl Strategy<Value = (Value, Value)> {
    prop::option::of("[a-z]{1,6}").prop_map(|ns| match ns {
        Some(n) => (json!({"namespace": n}), json!(n)),
        None => (json!({}), json!("default")),
    })
}

/// `Some("")` is written and read as unset.
fn optional_text(pattern: &'static str) -> impl Strategy<Value = (Value, Value)> {
    prop::option::of(pattern).prop_map(|t| match t {
        Some(t) if !t.is_empty() => (json!(t), json!(t)),
        Some(t) => (json!(t), Value::Null),
        None => (Value::Null, Value::Null),
    })
}

/// `object[key] = value` unless the value is null (an unset field).
fn set(mut object: Value, key: &str, value: &Value) -> Value {
    if !value.is_null() {
        object[key] = value.clone();
    }
    object
}

fn node_item() -> impl Strategy<Value = GenItem> {
    let taint = (
        "[a-z]{1,5}",
        prop::option::of("[a-z]{1,4}"),
        prop::sample::select(vec!["NoSchedule", "NoExecute", "PreferNoSchedule"]),
    );
    (labels(), prop::collection::vec(taint, 0..3), prop::option::of(any::<bool>()), quantities()).prop_map(
        |(labels, taints, unschedulable, (alloc, alloc_read))| {
            let written: Vec<Value> =
                taints.iter().map(|(k, v, e)| set(json!({"key": k, "effect": e}), "value", &json!(v))).collect();
            let read: Vec<Value> = taints.iter().map(|(k, v, e)| json!({"key": k, "value": v, "effect": e})).collect();
            gen_item(
                "Node",
                "v1",
                json!({"metadata": {"labels": labels}, "spec": set(json!({"taints": written}), "unschedulable", &json!(unschedulable)), "status": {"allocatable": alloc}}),
                Some(json!({"labels": labels, "taints": read, "unschedulable": unschedulable.unwrap_or(false), "allocatable": alloc_read})),
            )
        },
    )
}

/// A container's `resources` as written and as read.
fn resources() -> impl Strategy<Value = (Value, Value)> {
    (quantities(), quantities()).prop_map(|((req, req_read), (lim, lim_read))| {
        (json!({"requests": req, "limits": lim}), json!({"requests": req_read, "limits": lim_read}))
    })
}

fn pod_item() -> impl Strategy<Value = GenItem> {
    let init = (resources(), prop::option::of(prop::sample::select(vec!["Always", "OnFailure"])));
    let meta = (namespace(), labels(), any::<bool>());
    let phase = prop::option::of(prop::sample::select(vec!["Pending", "Running", "Succeeded", "Failed"]));
    let containers = (prop::collection::vec(resources(), 0..3), prop::collection::vec(init, 0..3), quantities());
    (meta, optional_text("[a-z]{0,3}"), phase, containers).prop_map(
        |((ns, labels, deleting), (node, node_read), phase, (containers, inits, (overhead, overhead_read)))| {
            let mut meta = ns.0.clone();
            meta["labels"] = labels.clone();
            if deleting {
                meta["deletionTimestamp"] = json!("2026-01-01T10:00:00Z");
            }
            let (cs, cs_read) = unzip(containers.into_iter().map(|(w, r)| (json!({"name": "c", "resources": w}), r)).collect());
            let (is, is_read) = unzip(
                inits
                    .into_iter()
                    .map(|((w, r), policy)| {
                        (set(json!({"name": "i", "resources": w}), "restartPolicy", &json!(policy)), json!([r, policy == Some("Always")]))
                    })
                    .collect(),
            );
            let spec = set(json!({"containers": cs, "initContainers": is, "overhead": overhead}), "nodeName", &node);
            gen_item(
                "Pod",
                "v1",
                json!({"metadata": meta, "spec": spec, "status": set(json!({}), "phase", &json!(phase))}),
                Some(json!({"namespace": ns.1, "node_name": node_read, "phase": phase, "terminating": deleting, "labels": labels,
                            "containers": cs_read, "init_containers": is_read, "overhead": overhead_read})),
            )
        },
    )
}

fn pvc_item() -> impl Strategy<Value = GenItem> {
    let modes = prop::collection::vec(
        prop::sample::select(vec!["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]),
        0..3,
    );
    let phase = prop::option::of(prop::sample::select(vec!["Bound", "Pending", "Lost"]));
    (namespace(), modes, optional_text("[a-z]{0,4}"), phase).prop_map(|(ns, modes, (volume, volume_read), phase)| {
        gen_item(
            "PersistentVolumeClaim",
            "v1",
            json!({"metadata": ns.0, "spec": set(json!({"accessModes": modes}), "volumeName", &volume), "status": set(json!({}), "phase", &json!(phase))}),
            Some(json!({"namespace": ns.1, "access_modes": modes, "volume_name": volume_read, "phase": phase})),
        )
    })
}

fn pv_item() -> impl Strategy<Value = GenItem> {
    let term = (prop::collection::vec(requirement("key"), 0..3), prop::collection::vec(requirement("key"), 0..2));
    prop::option::of(prop::collection::vec(term, 0..3)).prop_map(|terms| {
        let (spec, read) = match terms {
            None => (json!({}), json!([])),
            Some(terms) => {
                let (written, read) = unzip(
                    terms
                        .into_iter()
                        .map(|(exprs, fields)| {
                            let (e, e_read) = unzip(exprs);
                            let (f, f_read) = unzip(fields);
                            let mut reqs = e_read.as_array().unwrap().clone();
                            // A field requirement is kept as one on the key `metadata.name`.
                            reqs.extend(f_read.as_array().unwrap().iter().map(|r| {
                                let mut r = r.clone();
                                r["key"] = json!("metadata.name");
                                r
                            }));
                            (json!({"matchExpressions": e, "matchFields": f}), json!({"requirements": reqs}))
                        })
                        .collect(),
                );
                (json!({"nodeAffinity": {"required": {"nodeSelectorTerms": written}}}), read)
            }
        };
        gen_item("PersistentVolume", "v1", json!({"metadata": {}, "spec": spec}), Some(json!({"node_affinity": read})))
    })
}

fn quota_item() -> impl Strategy<Value = GenItem> {
    let scopes = prop::collection::vec(
        prop::sample::select(vec!["BestEffort", "NotBestEffort", "Terminating", "PriorityClass"]),
        0..3,
    );
    let selector = prop::option::of(prop::collection::vec(requirement("scopeName"), 0..3));
    (namespace(), quantities(), prop::option::of(quantities()), scopes, selector).prop_map(
        |(ns, (hard, hard_read), used, scopes, selector)| {
            let mut spec = json!({"hard": hard, "scopes": scopes});
            let selector_read = match selector {
                Some(reqs) => {
                    let (w, r) = unzip(reqs);
                    spec["scopeSelector"] = json!({"matchExpressions": w});
                    r
                }
                None => json!([]),
            };
            let (used, used_read) = used.unwrap_or((Value::Null, Value::Null));
            gen_item(
                "ResourceQuota",
                "v1",
                json!({"metadata": ns.0, "spec": spec, "status": set(json!({}), "used", &used)}),
                Some(json!({"namespace": ns.1, "hard": hard_read, "used": used_read, "scopes": scopes, "scope_selector": selector_read})),
            )
        },
    )
}

fn pdb_item() -> impl Strategy<Value = GenItem> {
    let selector = prop::option::of((labels(), prop::collection::vec(requirement("key"), 0..3)));
    let budget = (prop::option::of(int_or_percent()), prop::option::of(int_or_percent()), prop::option::of(0i64..10));
    (namespace(), selector, budget).prop_map(|(ns, selector, (min, max, allowed))| {
        let (sel, sel_read) = match selector {
            Some((labels, reqs)) => {
                let (w, r) = unzip(reqs);
                (json!({"matchLabels": labels, "matchExpressions": w}), json!({"match_labels": labels, "match_expressions": r}))
            }
            None => (Value::Null, Value::Null),
        };
        let (min, min_read) = min.unwrap_or((Value::Null, Value::Null));
        let (max, max_read) = max.unwrap_or((Value::Null, Value::Null));
        let spec = set(set(set(json!({}), "selector", &sel), "minAvailable", &min), "maxUnavailable", &max);
        gen_item(
            "PodDisruptionBudget",
            "policy/v1",
            json!({"metadata": ns.0, "spec": spec, "status": set(json!({}), "disruptionsAllowed", &json!(allowed))}),
            Some(json!({"namespace": ns.1, "selector": sel_read, "min_available": min_read, "max_unavailable": max_read, "disruptions_allowed": allowed})),
        )
    })
}

/// Kinds preflight does not read: counted, their content never parsed (a
/// field that would be wrong in a Pod or Node included).
fn other_item() -> impl Strategy<Value = GenItem> {
    let kind =
        prop::sample::select(vec![("Deployment", "apps/v1"), ("ReplicaSet", "apps/v1"), ("Widget", "example.com/v1")]);
    (kind, 0u32..5, any::<bool>()).prop_map(|((kind, api), replicas, clash)| {
        let spec = if clash {
            json!({"replicas": replicas, "containers": "not a list", "taints": 3})
        } else {
            json!({"replicas": replicas, "template": {"spec": {"containers": [{"name": "c"}]}}})
        };
        gen_item(kind, api, json!({"metadata": {}, "spec": spec}), None)
    })
}

/// Items of every kind in any order, with at least one Node and one Pod (a
/// snapshot without them is refused as partial).
fn snapshot_items() -> impl Strategy<Value = Vec<GenItem>> {
    let any_item = prop_oneof![node_item(), pod_item(), pvc_item(), pv_item(), quota_item(), pdb_item(), other_item()];
    (prop::collection::vec(any_item, 0..10), node_item(), pod_item()).prop_flat_map(|(mut items, node, pod)| {
        items.push(node);
        items.push(pod);
        Just(items).prop_shuffle()
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
            let d = bundlegate::checks::lint::lint(&l, &bundlegate::checks::rollback::RollbackStatus::NotDeclared);
            prop_assert!(d.iter().any(|d| d.severity == bundlegate::diag::Severity::Error), "escaping path {} linted clean", evil);
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

    /// JSON snapshots with arbitrary item contents: read, every item counted
    /// under its kind (and preflighted without panicking), or an error that
    /// names the file.
    #[test]
    fn snapshot_json_with_arbitrary_items_is_read_or_names_the_file(items in prop::collection::vec(arbitrary_item(), 0..6), kinds in prop::collection::vec(prop::sample::select(SNAPSHOT_KINDS.to_vec()), 6)) {
        let mut kinds = kinds[..items.len()].to_vec();
        let mut items: Vec<Value> = items.into_iter().zip(&kinds).enumerate().map(|(i, (mut v, k))| {
            if let Value::Object(m) = &mut v {
                m.insert("apiVersion".into(), json!("v1"));
                m.insert("kind".into(), json!(k));
                m.insert("metadata".into(), json!({"name": format!("x{i}")}));
            }
            v
        }).collect();
        // The node and pod every snapshot needs, so object items are read.
        items.push(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}));
        items.push(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}));
        kinds.extend(["Node", "Pod"]);
        let text = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
        match snapshot::parse_snapshot("props/any.json", &text) {
            Ok(st) => {
                for kind in SNAPSHOT_KINDS {
                    prop_assert_eq!(count_of(&st, kind), kinds.iter().filter(|k| **k == kind).count(), "{}", kind);
                }
                prop_assert!(fuzzing::cluster_snapshot(&text));
            }
            Err(e) => prop_assert!(format!("{e:#}").starts_with("props/any.json: "), "{:#}", e),
        }
    }

    /// Snapshots of items of every kind, each field preflight reads set at
    /// random: the plain state holds exactly the generated values, per kind
    /// and in order (kinds it does not read only counted), in JSON (the fast
    /// path) and in YAML (item by item).
    #[test]
    fn snapshot_items_of_every_kind_are_read_exactly_in_json_and_yaml(items in snapshot_items()) {
        let mut want: std::collections::BTreeMap<&str, Vec<Value>> = Default::default();
        let mut ignored: std::collections::BTreeMap<String, usize> = Default::default();
        let mut objects = Vec::new();
        for (i, it) in items.into_iter().enumerate() {
            let name = format!("{}-{i}", it.kind.to_lowercase());
            let mut object = json!({"apiVersion": it.api_version, "kind": it.kind});
            for (k, v) in it.object.as_object().unwrap() {
                object[k] = v.clone();
            }
            object["metadata"]["name"] = json!(name);
            objects.push(object);
            match it.plain {
                Some(mut plain) => {
                    plain["name"] = json!(name);
                    want.entry(it.kind).or_default().push(plain);
                }
                None => *ignored.entry(it.kind.to_string()).or_default() += 1,
            }
        }
        let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
        for (file, text) in [("props/every.json", serde_json::to_string_pretty(&list).unwrap()), ("props/every.yaml", serde_yaml_ng::to_string(&list).unwrap())] {
            let st = snapshot::parse_snapshot(file, &text).map_err(|e| TestCaseError::fail(format!("{e:#}\n{text}")))?;
            let read = [
                ("Node", json!(st.nodes)),
                ("Pod", json!(st.pods)),
                ("PersistentVolumeClaim", json!(st.pvcs)),
                ("PersistentVolume", json!(st.pvs)),
                ("ResourceQuota", json!(st.quotas)),
                ("PodDisruptionBudget", json!(st.pdbs)),
            ];
            for (kind, v) in read {
                prop_assert_eq!(&v, &Value::from(want.get(kind).cloned().unwrap_or_default()), "{} in {}", kind, file);
            }
            prop_assert_eq!(&st.ignored, &ignored, "{}", file);
        }
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

    /// Any resource list in a model-signing statement: parsed or refused,
    /// never a panic; what parses is sorted, unique and confined (the
    /// target asserts it).
    #[test]
    fn signature_resources_never_panic(names in prop::collection::vec("[a-z./\\\\:]{0,12}", 0..8), payload in "[ -~]{0,80}") {
        let resources: Vec<Value> = names.iter().map(|n| serde_json::json!({"name": n, "algorithm": "sha256", "digest": "0".repeat(64)})).collect();
        let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1", "subject": [{"name": "m", "digest": {"sha256": "0".repeat(64)}}],
            "predicateType": "https://model_signing/signature/v1.0", "predicate": {"resources": resources}});
        let _ = fuzzing::sigstore_bundle(&statement.to_string());
        prop_assert!(!fuzzing::sigstore_bundle(&payload) || payload.contains("resources"));
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

/// Objects in `v`, itself included.
fn objects_in(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(objects_in).sum::<usize>(),
        Value::Array(a) => a.iter().map(objects_in).sum(),
        _ => 0,
    }
}

/// `v` as JSON text with one key of its `nth` object (pre-order, modulo the
/// count) written a second time, with another value, at entry `pos` of that
/// object (modulo its length); an empty object gets a fresh key twice.
/// Returns the text and the key.
fn with_duplicate_key(v: &Value, nth: usize, pos: usize) -> (String, String) {
    fn write(v: &Value, n: &mut Option<usize>, pos: usize, key: &mut String) -> String {
        match v {
            Value::Object(m) => {
                let here = *n == Some(0);
                *n = n.and_then(|k| k.checked_sub(1));
                let mut entries: Vec<(String, String)> =
                    m.iter().map(|(k, x)| (k.clone(), write(x, n, pos, key))).collect();
                if here {
                    let (k, at) = if entries.is_empty() {
                        entries.push(("dup".into(), "1".into()));
                        ("dup".to_string(), 1)
                    } else {
                        (entries[pos % entries.len()].0.clone(), pos / entries.len() % (entries.len() + 1))
                    };
                    entries.insert(at, (k.clone(), "0".into()));
                    *key = k;
                }
                let body: Vec<String> =
                    entries.iter().map(|(k, x)| format!("{}:{x}", Value::from(k.as_str()))).collect();
                format!("{{{}}}", body.join(","))
            }
            Value::Array(a) => format!("[{}]", a.iter().map(|x| write(x, n, pos, key)).collect::<Vec<_>>().join(",")),
            other => other.to_string(),
        }
    }
    let mut key = String::new();
    let text = write(v, &mut Some(nth % objects_in(v)), pos, &mut key);
    assert!(!key.is_empty(), "no object to give a duplicate key: {v}");
    (text, key)
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
    fn json_duplicate_keys_are_found_anywhere(v in json_value(), nth in any::<usize>(), pos in any::<usize>()) {
        let v = json!({"w": v});
        prop_assert!(bundlegate::yaml_guard::check_json(&v.to_string()).is_ok());
        let (dup, key) = with_duplicate_key(&v, nth, pos);
        let e = bundlegate::yaml_guard::check_json(&dup).unwrap_err();
        prop_assert!(e.message.contains(&format!("duplicate key `{key}`")), "{}", e.message);
    }

    /// A golden line with one key of any of its objects written twice (the
    /// sample's own `name`, an `expect` field, a key deep in the request; at
    /// any place among the object's entries) is refused naming its line, after
    /// any good, blank or comment lines; without the copy the same file parses.
    #[test]
    fn golden_line_with_a_duplicate_key_anywhere_is_refused_naming_its_line(request in json_value(), nth in any::<usize>(), pos in any::<usize>(), before in prop::collection::vec(0usize..3, 0..4)) {
        let sample = json!({"name": "s", "api": "openai-chat", "request": request, "expect": {"json": true, "finishReason": "stop", "minChars": 1}});
        let good = sample.to_string();
        let head: String = before.iter().map(|k| match k { 0 => format!("{good}\n"), 1 => "\n".into(), _ => "// a comment\n".into() }).collect();
        prop_assert_eq!(bundlegate::parse::golden::parse_golden(&format!("{head}{good}\n{good}\n")).map(|s| s.len()).ok(), Some(before.iter().filter(|k| **k == 0).count() + 2));
        let (dup, key) = with_duplicate_key(&sample, nth, pos);
        prop_assert!(serde_json::from_str::<Value>(&dup).is_ok(), "still JSON: refused for the duplicate alone");
        let e = bundlegate::parse::golden::parse_golden(&format!("{head}{dup}\n{good}\n")).err().map(|e| e.to_string()).unwrap_or_else(|| format!("accepted: {dup}"));
        let line = before.len() + 1;
        prop_assert!(e.starts_with(&format!("line {line} column ")), "{}", e);
        prop_assert!(e.contains("not a golden request (duplicate key"), "{}", e);
        let column: usize = e.split(' ').nth(3).and_then(|c| c.trim_end_matches(':').parse().ok()).unwrap_or(0);
        prop_assert!(column >= 1 && column <= dup.len(), "column {} of {}: {}", column, dup.len(), e);
        prop_assert!(!e.contains(&format!("`{key}`")), "the line's text is not quoted: {}", e);
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

/// A snapshot with `n` aliases of one label value, the anchor in the pod's
/// own labels (`local`: read item by item) or in the node's (an alias
/// across items: read whole).
fn snapshot_with_label_aliases(n: usize, local: bool) -> String {
    let (node_labels, first) = if local { ("{}", "&v x") } else { ("{l: &v x}", "*v") };
    let labels: String = (1..=n).map(|i| format!("      l{i}: *v\n")).collect();
    let labels = if local { labels } else { labels.replacen("*v", "x", 1) };
    format!(
        "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {{name: n1, labels: {node_labels}}}\n  status: {{allocatable: {{cpu: \"4\"}}}}\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p1\n    labels:\n      l0: {first}\n{labels}  spec: {{nodeName: n1, containers: [{{}}]}}\n"
    )
}

/// The snapshot alias budget at its bound, on both YAML paths: 10 000
/// aliases read (every aliased value arrives), 10 001 are refused at the
/// one over, naming the file and its line; 5 000 aliases of a 40-node list
/// add exactly the 200 000 nodes allowed, 5 001 are refused.
#[test]
fn snapshot_alias_budget_holds_at_its_bound_exactly() {
    for local in [true, false] {
        let st = snapshot::parse_snapshot("props/alias.yaml", &snapshot_with_label_aliases(10_000, local)).unwrap();
        let labels = &st.pods[0].labels;
        assert_eq!(labels.len(), 10_001, "local {local}");
        assert!(labels.values().all(|v| v == "x"), "local {local}");
        let text = snapshot_with_label_aliases(10_001, local);
        let e = format!("{:#}", snapshot::parse_snapshot("props/alias.yaml", &text).unwrap_err());
        let line = crate::support::line_of(&text, "l10001: ");
        assert!(e.starts_with(&format!("props/alias.yaml:{line}:")), "local {local}: {e}");
        assert!(e.contains("more than 10000 aliases") && e.contains("alias amplification"), "{e}");
    }
    let expanding = |n: usize| {
        let list: Vec<String> = (0..39).map(|i| i.to_string()).collect();
        let uses: String = "  - *big\n".repeat(n);
        snapshot_with_label_aliases(0, true).replacen(
            "  spec:",
            &format!("  extra: &big [{}]\n  more:\n{uses}  spec:", list.join(", ")),
            1,
        )
    };
    assert_eq!(snapshot::parse_snapshot("props/wide.yaml", &expanding(5_000)).unwrap().pods.len(), 1);
    let text = expanding(5_001);
    let e = format!("{:#}", snapshot::parse_snapshot("props/wide.yaml", &text).unwrap_err());
    let line = text.lines().count() - 1;
    assert!(e.starts_with(&format!("props/wide.yaml:{line}:")), "{e}");
    assert!(e.contains("expand to more than 200000 nodes"), "{e}");
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
            let lint = bundlegate::checks::lint::lint(&l, &bundlegate::checks::rollback::RollbackStatus::NotDeclared);
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
