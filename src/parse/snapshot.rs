//! `kubectl get … -o yaml|json` snapshot text → the plain [`ClusterState`]
//! preflight reads. The live reader (`adapters::cluster`) feeds the objects
//! it lists through the same item parser, so both paths agree.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use crate::bundle::IntOrPercent;
use crate::checks::preflight::{
    ClusterState, ContainerResources, LabelSelector, Node, Pdb, Pod, Pv, Pvc, Quantities, Quota, Requirement,
    SelectorTerm, Taint,
};

// ---- the subset of Kubernetes objects preflight reads ------------------------------
// Unknown fields are ignored (real objects carry far more); `null` reads as empty.

fn nd<'de, D: serde::Deserializer<'de>, T: Deserialize<'de> + Default>(d: D) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A quantity as kubectl prints it (always a string) or as a hand-written
/// file may have it (a bare number).
#[derive(Debug, Default)]
struct Qty(String);

impl<'de> Deserialize<'de> for Qty {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Qty;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a quantity (string or number)")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Qty, E> {
                Ok(Qty(v.to_string()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Qty, E> {
                Ok(Qty(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Qty, E> {
                Ok(Qty(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Qty, E> {
                Ok(Qty(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Qty, E> {
                Ok(Qty(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

fn qmap(m: BTreeMap<String, Qty>) -> Quantities {
    m.into_iter().map(|(k, v)| (k, v.0)).collect()
}

/// One item of any kind preflight reads: the union of the fields it needs
/// from Node, Pod, PVC, PV, ResourceQuota and PodDisruptionBudget (their
/// names do not collide). Parsing the whole List straight into these avoids
/// building a generic tree of 20,000 pods.
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawItem {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(deserialize_with = "nd")]
    metadata: Meta,
    #[serde(deserialize_with = "nd")]
    spec: RawSpec,
    #[serde(deserialize_with = "nd")]
    status: RawStatus,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    #[serde(deserialize_with = "nd")]
    labels: BTreeMap<String, String>,
    deletion_timestamp: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawSpec {
    // Node
    unschedulable: Option<bool>,
    #[serde(deserialize_with = "nd")]
    taints: Vec<RawTaint>,
    // Pod
    node_name: Option<String>,
    #[serde(deserialize_with = "nd")]
    containers: Vec<RawContainer>,
    #[serde(deserialize_with = "nd")]
    init_containers: Vec<RawContainer>,
    #[serde(deserialize_with = "nd")]
    overhead: BTreeMap<String, Qty>,
    // PersistentVolumeClaim, PersistentVolume
    #[serde(deserialize_with = "nd")]
    access_modes: Vec<String>,
    volume_name: Option<String>,
    node_affinity: Option<PvNodeAffinity>,
    // ResourceQuota
    #[serde(deserialize_with = "nd")]
    hard: BTreeMap<String, Qty>,
    #[serde(deserialize_with = "nd")]
    scopes: Vec<String>,
    scope_selector: Option<ScopeSelector>,
    // PodDisruptionBudget
    selector: Option<RawLabelSelector>,
    min_available: Option<IntOrStr>,
    max_unavailable: Option<IntOrStr>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawStatus {
    // Node
    #[serde(deserialize_with = "nd")]
    allocatable: BTreeMap<String, Qty>,
    // Pod, PersistentVolumeClaim
    phase: Option<String>,
    // ResourceQuota
    used: Option<BTreeMap<String, Qty>>,
    // PodDisruptionBudget
    disruptions_allowed: Option<i64>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTaint {
    key: String,
    value: Option<String>,
    effect: String,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawContainer {
    #[serde(deserialize_with = "nd")]
    resources: RawResources,
    restart_policy: Option<String>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct RawResources {
    #[serde(deserialize_with = "nd")]
    requests: BTreeMap<String, Qty>,
    #[serde(deserialize_with = "nd")]
    limits: BTreeMap<String, Qty>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default)]
struct PvNodeAffinity {
    required: Option<RawNodeSelector>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawNodeSelector {
    #[serde(deserialize_with = "nd")]
    node_selector_terms: Vec<RawTerm>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawTerm {
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
    #[serde(deserialize_with = "nd")]
    match_fields: Vec<RawReq>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawReq {
    key: String,
    /// Only in quota scope selectors.
    scope_name: String,
    operator: String,
    #[serde(deserialize_with = "nd")]
    values: Vec<String>,
}
impl RawReq {
    fn plain(self) -> Requirement {
        Requirement {
            key: if self.key.is_empty() { self.scope_name } else { self.key },
            operator: self.operator,
            values: self.values,
        }
    }
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ScopeSelector {
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
}
#[derive(Debug, Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RawLabelSelector {
    #[serde(deserialize_with = "nd")]
    match_labels: BTreeMap<String, String>,
    #[serde(deserialize_with = "nd")]
    match_expressions: Vec<RawReq>,
}
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum IntOrStr {
    I(u32),
    S(String),
}

#[derive(Debug, Deserialize)]
struct RawList {
    kind: Option<String>,
    #[serde(default)]
    items: Option<Vec<RawItem>>,
}

// ---- items → plain data ----------------------------------------------------------------

/// An item (always an object, so an error is always at a field) into `T`,
/// the error naming the field's path.
fn typed<T: DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize::<_, T>(crate::serde_strict::Strict(v))
        .map_err(|e| format!("{}: {}", e.path(), e.inner()))
}

fn res(r: RawResources) -> ContainerResources {
    ContainerResources { requests: qmap(r.requests), limits: qmap(r.limits) }
}

/// `List`, or a typed list such as `PodList`: its `items` are objects.
fn is_list_kind(kind: &str) -> bool {
    kind.ends_with("List")
}

/// The kind a typed list's items have (`PodList` → `Pod`); none for `List`.
fn item_kind_of(list_kind: &str) -> Option<&str> {
    list_kind.strip_suffix("List").filter(|k| !k.is_empty())
}

const KINDS: &[&str] =
    &["Node", "Pod", "PersistentVolumeClaim", "PersistentVolume", "ResourceQuota", "PodDisruptionBudget"];

/// Add one object given as a generic tree (the precise path: errors name the
/// field, and kinds preflight does not read are skipped unparsed). `kind_hint`
/// is used when the item carries no kind (items of a typed `PodList`, as the
/// API server returns them).
pub(crate) fn add_item(st: &mut ClusterState, mut item: Value, kind_hint: Option<&str>) -> Result<(), String> {
    let Value::Object(map) = &mut item else {
        return Err("is not an object".into());
    };
    let kind = match map.get("kind") {
        Some(Value::String(k)) if !k.is_empty() => k.clone(),
        Some(_) => return Err("`kind` is empty or not a string".into()),
        None => kind_hint.map(String::from).ok_or("has no `kind`")?,
    };
    if kind_hint.is_none() && !matches!(map.get("apiVersion"), Some(Value::String(a)) if !a.is_empty()) {
        return Err(format!("({kind}) has no `apiVersion`"));
    }
    if is_list_kind(&kind) {
        if let Some(Value::Array(items)) = map.remove("items") {
            // kubectl flattens a List inside a List; so does this reader, or
            // the pods inside would vanish from the cluster preflight sees.
            let hint = item_kind_of(&kind);
            for (i, it) in items.into_iter().enumerate() {
                add_item(st, it, hint).map_err(|e| format!("({kind}) items[{i}] {e}"))?;
            }
            return Ok(());
        }
    }
    if !KINDS.contains(&kind.as_str()) {
        *st.ignored.entry(kind).or_insert(0) += 1;
        return Ok(());
    }
    let label = map
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .map(|n| format!(" {n}"))
        .unwrap_or_default();
    let raw: RawItem = typed(item).map_err(|e| format!("({kind}{label}) {e}"))?;
    add_raw(st, &kind, raw)
}

/// Turn one parsed item into plain data.
fn add_raw(st: &mut ClusterState, kind: &str, r: RawItem) -> Result<(), String> {
    let RawItem { metadata: m, spec, status, .. } = r;
    let name = m.name.filter(|n| !n.is_empty()).ok_or_else(|| format!("({kind}) has no metadata.name"))?;
    let namespace = m.namespace.unwrap_or_else(|| "default".into());
    match kind {
        "Node" => st.nodes.push(Node {
            name,
            labels: m.labels,
            taints: spec.taints.into_iter().map(|t| Taint { key: t.key, value: t.value, effect: t.effect }).collect(),
            unschedulable: spec.unschedulable.unwrap_or(false),
            allocatable: qmap(status.allocatable),
        }),
        "Pod" => st.pods.push(Pod {
            name,
            namespace,
            node_name: spec.node_name.filter(|n| !n.is_empty()),
            phase: status.phase,
            terminating: m.deletion_timestamp.is_some(),
            labels: m.labels,
            containers: spec.containers.into_iter().map(|c| res(c.resources)).collect(),
            init_containers: spec
                .init_containers
                .into_iter()
                .map(|c| (res(c.resources), c.restart_policy.as_deref() == Some("Always")))
                .collect(),
            overhead: qmap(spec.overhead),
        }),
        "PersistentVolumeClaim" => st.pvcs.push(Pvc {
            name,
            namespace,
            access_modes: spec.access_modes,
            volume_name: spec.volume_name.filter(|v| !v.is_empty()),
            phase: status.phase,
        }),
        "PersistentVolume" => {
            let terms = spec.node_affinity.and_then(|a| a.required).map(|r| r.node_selector_terms).unwrap_or_default();
            st.pvs.push(Pv {
                name,
                node_affinity: terms
                    .into_iter()
                    .map(|t| SelectorTerm {
                        // `matchFields` selects on the node's own fields, of
                        // which the API server accepts `metadata.name` only:
                        // read as that, whatever key a file writes.
                        requirements: t
                            .match_expressions
                            .into_iter()
                            .map(RawReq::plain)
                            .chain(
                                t.match_fields
                                    .into_iter()
                                    .map(|f| Requirement { key: "metadata.name".into(), ..f.plain() }),
                            )
                            .collect(),
                    })
                    .collect(),
            });
        }
        "ResourceQuota" => st.quotas.push(Quota {
            name,
            namespace,
            hard: qmap(spec.hard),
            used: status.used.map(qmap),
            scopes: spec.scopes,
            scope_selector: spec
                .scope_selector
                .map(|s| s.match_expressions.into_iter().map(RawReq::plain).collect())
                .unwrap_or_default(),
        }),
        "PodDisruptionBudget" => {
            let ip = |x: Option<IntOrStr>| {
                x.map(|v| match v {
                    IntOrStr::I(i) => IntOrPercent::Int(i),
                    IntOrStr::S(s) => s.parse::<u32>().map(IntOrPercent::Int).unwrap_or(IntOrPercent::Str(s)),
                })
            };
            st.pdbs.push(Pdb {
                name,
                namespace,
                selector: spec.selector.map(|s| LabelSelector {
                    match_labels: s.match_labels,
                    match_expressions: s.match_expressions.into_iter().map(RawReq::plain).collect(),
                }),
                min_available: ip(spec.min_available),
                max_unavailable: ip(spec.max_unavailable),
                disruptions_allowed: status.disruptions_allowed,
            });
        }
        other => *st.ignored.entry(other.to_string()).or_insert(0) += 1,
    }
    Ok(())
}

/// The state a snapshot file's items are added to, named for the report.
fn empty_state(display: &str) -> ClusterState {
    ClusterState { source: format!("snapshot {display}"), ..Default::default() }
}

/// The fast path: the whole List straight into [`RawItem`]s. `None` when
/// anything is off (a field of an unread kind that clashes, a missing kind…);
/// the caller then takes the precise path, which reports what and where.
fn parse_fast(display: &str, text: &str, yaml: Option<&crate::yaml_guard::Node>) -> Option<ClusterState> {
    let list: RawList = match yaml {
        None => crate::serde_strict::from_json_str(text).ok()?,
        Some(doc) => crate::yaml_guard::from_node(doc).ok()?,
    };
    let kind = list.kind?;
    if kind != "List" {
        return None;
    }
    let mut st = empty_state(display);
    for item in list.items? {
        let kind = item.kind.clone().filter(|k| !k.is_empty() && !is_list_kind(k))?;
        item.api_version.as_ref().filter(|a| !a.is_empty())?;
        add_raw(&mut st, &kind, item).ok()?;
    }
    Some(st)
}

// ---- YAML, one item at a time ---------------------------------------------------------
//
// serde_yaml_ng loads every event of a document before deserializing, which
// for 20,000 pods peaks at several hundred MiB. Instead, one pass of
// yaml-rust2's event parser (constant memory) finds where each item of the
// List starts and reads each item's kind and name, while every event also
// goes through the YAML guard with snapshot limits (duplicate keys, alias
// keys included; non-finite numbers; nesting; alias expansion); then each
// item's own text is deserialized on its own, and its events are freed
// before the next. Errors keep absolute line:column. A file the scan does not
// take item by item (an alias crossing items, flow style) is read whole, but only after the
// guard has passed over all of it: alias expansion is bounded either way.

/// One item of `items:` as found by the scan.
#[derive(Default)]
struct ItemHead {
    /// 1-based line and 0-based column (in chars) where the item's node starts.
    line: usize,
    col: usize,
    kind: Option<String>,
    api_version: Option<String>,
    name: Option<String>,
}

struct YamlScan {
    kind: Option<String>,
    items: Vec<ItemHead>,
    /// 1-based line of the event that closes `items`.
    end_line: usize,
}

enum ScanFail {
    /// Not well-formed YAML: (message, line, column), 1-based.
    Syntax(String, usize, usize),
    /// Refused by the YAML guard (duplicate key, non-finite number, depth, aliases).
    Guard(crate::yaml_guard::GuardError),
}

impl ScanFail {
    fn syntax(e: &yaml_rust2::ScanError) -> ScanFail {
        let (line, col) = crate::yaml_guard::pos(e.marker());
        ScanFail::Syntax(e.info().to_string(), line, col)
    }
}

struct Frame {
    map: bool,
    awaiting_value: bool,
    key: Option<String>,
    items: bool,
}

/// `Ok(None)`: a shape the item-at-a-time path does not take (an alias
/// crossing items, several documents, flow-style items, no `items` list); the caller
/// then reads the whole document, which reports such files precisely.
fn scan_yaml(text: &str) -> Result<Option<YamlScan>, ScanFail> {
    use yaml_rust2::parser::{Event, Parser};
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut out = YamlScan { kind: None, items: Vec::new(), end_line: 0 };
    let mut docs = 0;
    let mut simple = true;
    crate::yaml_guard::check_chars(text).map_err(ScanFail::Guard)?;
    let mut guard = crate::yaml_guard::Guard::new(&crate::yaml_guard::Limits::SNAPSHOT);
    // Anchor id → the item that defines it (`None`: outside `items`).
    let mut anchored_in: std::collections::HashMap<usize, Option<usize>> = std::collections::HashMap::new();
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| ScanFail::syntax(&e))?;
        guard.event(&ev, &mark).map_err(ScanFail::Guard)?;
        // An anchor (`&a`, as PyYAML writes for shared values) and its
        // aliases inside one item travel with that item's text; an alias to
        // another item's anchor or to one outside `items` would not.
        let (anchor, alias, node) = match &ev {
            Event::StreamEnd => break,
            Event::DocumentStart => {
                docs += 1;
                continue;
            }
            Event::Alias(id) => (0, Some(*id), true),
            Event::Scalar(_, _, a, _) | Event::MappingStart(a, _) | Event::SequenceStart(a, _) => (*a, None, true),
            _ => (0, None, false),
        };
        if node {
            let depth = stack.len();
            // The node's role: a key, a value (of which key), or an element.
            let mut value_of: Option<String> = None;
            let mut element = false;
            if let Some(top) = stack.last_mut() {
                if top.map && !top.awaiting_value {
                    // A block mapping's own mark lies after its first key, so
                    // an item starts where its first key does (its line is 0
                    // until then).
                    if depth == 3 && stack[1].items {
                        if let Some(h) = out.items.last_mut().filter(|h| h.line == 0) {
                            (h.line, h.col) = (mark.line().max(1), mark.col());
                        }
                    }
                    if anchor != 0 || alias.is_some() {
                        simple = false; // anchored keys: rare, read whole
                    }
                    let top = stack.last_mut().expect("checked");
                    top.awaiting_value = true;
                    top.key = None;
                    if let Event::Scalar(k, ..) = &ev {
                        top.key = Some(k.clone());
                    }
                    // Keys are never the nodes looked for below.
                    if let Event::MappingStart(..) | Event::SequenceStart(..) = ev {
                        stack.push(Frame {
                            map: matches!(ev, Event::MappingStart(..)),
                            awaiting_value: false,
                            key: None,
                            items: false,
                        });
                    }
                    continue;
                } else if top.map {
                    top.awaiting_value = false;
                    value_of = top.key.clone();
                } else {
                    element = true;
                }
            }
            let in_items = depth >= 2 && stack[1].items;
            if element && depth == 2 && in_items {
                out.items.push(ItemHead::default());
                if !matches!(ev, Event::MappingStart(..)) {
                    simple = false;
                }
            }
            let item = if in_items { out.items.len().checked_sub(1) } else { None };
            if anchor != 0 {
                anchored_in.insert(anchor, item);
            }
            if let Some(id) = alias {
                if item.is_none() || anchored_in.get(&id).copied().flatten() != item {
                    simple = false;
                }
            }
            if let (Event::Scalar(v, ..), Some(k)) = (&ev, value_of.as_deref()) {
                match (depth, k) {
                    (1, "kind") => out.kind = Some(v.clone()),
                    (3, "kind") if in_items => out.items.last_mut().expect("inside an item").kind = Some(v.clone()),
                    (3, "apiVersion") if in_items => {
                        out.items.last_mut().expect("inside an item").api_version = Some(v.clone())
                    }
                    (4, "name") if in_items && stack[2].key.as_deref() == Some("metadata") => {
                        out.items.last_mut().expect("inside an item").name = Some(v.clone())
                    }
                    _ => {}
                }
            } else if depth == 3 && in_items && matches!(value_of.as_deref(), Some("kind" | "apiVersion")) {
                simple = false; // a non-scalar kind: let the precise path say so
            }
            match ev {
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let items =
                        depth == 1 && value_of.as_deref() == Some("items") && matches!(ev, Event::SequenceStart(..));
                    stack.push(Frame {
                        map: matches!(ev, Event::MappingStart(..)),
                        awaiting_value: false,
                        key: None,
                        items,
                    });
                }
                _ => {}
            }
            continue;
        }
        if let Event::MappingEnd | Event::SequenceEnd = ev {
            let f = stack.pop();
            if f.is_some_and(|f| f.items) {
                out.end_line = mark.line().max(1);
            }
        }
    }
    // Block style puts every item on its own line(s); anything else is rare
    // enough to read whole.
    let lines_ok = out.items.iter().all(|h| h.line > 0)
        && out.items.windows(2).all(|w| w[0].line < w[1].line)
        && out.items.last().is_none_or(|l| l.line < out.end_line);
    Ok((simple && docs <= 1 && out.end_line > 0 && lines_ok).then_some(out))
}

/// Byte offset of every line start.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect()
}

/// The text of one item, with everything left of its first node (the `- `)
/// blanked so columns stay what they are in the file. `None` when the marks
/// do not fall where block style puts them.
fn item_text(text: &str, starts: &[usize], head: &ItemHead, end_line: usize) -> Option<String> {
    let line_start = *starts.get(head.line - 1)?;
    let end = starts.get(end_line - 1).copied().unwrap_or(text.len());
    let first_line = &text[line_start..];
    let (off, _) = first_line.char_indices().nth(head.col)?;
    let prefix = &first_line[..off];
    if !prefix.chars().all(|c| c == ' ' || c == '-') {
        return None;
    }
    // The scan puts every item before the next one's line (`lines_ok`); were
    // it not so, the file is read whole rather than sliced backwards.
    let mut body = text.get(line_start + off..end)?;
    // Drop what belongs between items: blank lines, comments, a lone `-`
    // (left in, the next item's dash would open a list inside this item).
    // A document marker cannot be here: `---` makes a second document (not
    // read item by item) and `...` ends the list's own last line.
    loop {
        let trimmed = body.trim_end_matches(['\n', '\r', ' ', '\t']);
        match trimmed.rsplit_once('\n') {
            Some((before, last)) if last.trim() == "-" || last.trim().starts_with('#') => body = before,
            _ => {
                body = trimmed;
                break;
            }
        }
    }
    Some(format!("{}{body}\n", " ".repeat(prefix.chars().count())))
}

/// The reader's message with the position made absolute (the item's text
/// starts at `first_line`).
fn yaml_error(msg: &str, at: Option<(usize, usize)>, first_line: usize) -> String {
    match at {
        Some((line, column)) => format!("{msg} (line {}, column {column})", first_line + line - 1),
        None => msg.to_string(),
    }
}

/// One item's text through the one reader (the same parser the scan's
/// guard read it with), into the typed item.
fn read_item(body: &str, first_line: usize) -> Result<RawItem, String> {
    let docs = crate::yaml_guard::read(body, &crate::yaml_guard::Limits::SNAPSHOT)
        .map_err(|g| yaml_error(&g.at_path(), Some((g.line, g.column)), first_line))?;
    let [doc] = docs.as_slice() else { return Err(format!("is {} YAML documents, not one", docs.len())) };
    crate::yaml_guard::from_node(doc).map_err(|(path, e)| {
        let field = if path.is_empty() { String::new() } else { format!("{path}: ") };
        yaml_error(&format!("{field}{}", e.msg), e.at, first_line)
    })
}

/// The YAML path: `Ok(None)` when the item-at-a-time reading does not apply.
fn parse_yaml_items(display: &str, text: &str) -> Result<Option<ClusterState>> {
    let scan = match scan_yaml(text) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(ScanFail::Syntax(msg, line, col)) => bail!("{display}: not valid YAML: {msg} at line {line} column {col}"),
        Err(ScanFail::Guard(g)) => bail!("{display}:{}:{}: {}", g.line, g.column, g.at_path()),
    };
    let Some(kind) = scan.kind.as_deref().filter(|k| is_list_kind(k)) else {
        return Ok(None);
    };
    let hint = item_kind_of(kind);
    let starts = line_starts(text);
    let mut st = empty_state(display);
    for (i, head) in scan.items.iter().enumerate() {
        let end_line = scan.items.get(i + 1).map(|n| n.line).unwrap_or(scan.end_line);
        let item_kind = match head.kind.as_deref() {
            Some(k) if !k.is_empty() => k,
            Some(_) => bail!("{display}: items[{i}] `kind` is empty (line {})", head.line),
            None => hint.ok_or_else(|| anyhow!("{display}: items[{i}] has no `kind` (line {})", head.line))?,
        };
        if hint.is_none() && head.api_version.as_deref().is_none_or(str::is_empty) {
            bail!("{display}: items[{i}] ({item_kind}) has no `apiVersion` (line {})", head.line);
        }
        if is_list_kind(item_kind) {
            return Ok(None); // a nested List: the whole-document reading flattens it
        }
        if !KINDS.contains(&item_kind) {
            *st.ignored.entry(item_kind.to_string()).or_insert(0) += 1;
            continue;
        }
        let Some(body) = item_text(text, &starts, head, end_line) else { return Ok(None) };
        let label = head.name.as_deref().map(|n| format!(" {n}")).unwrap_or_default();
        let raw = read_item(&body, head.line).map_err(|e| anyhow!("{display}: items[{i}] ({item_kind}{label}) {e}"))?;
        add_raw(&mut st, item_kind, raw).map_err(|e| anyhow!("{display}: items[{i}] {e} (line {})", head.line))?;
    }
    Ok(Some(st))
}

/// Refuse state that cannot support an answer: no nodes (or no pods) means the
/// snapshot is partial, and a partial cluster must never PASS.
pub(crate) fn require_complete(st: &ClusterState, origin: &str) -> Result<()> {
    if st.nodes.is_empty() {
        bail!("{origin}: no Node objects; preflight needs every node (take it with `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets -A -o yaml`)");
    }
    if st.pods.is_empty() {
        bail!("{origin}: no Pod objects, yet every cluster runs system pods; was the snapshot taken without `pods` or without `-A`?");
    }
    refuse_duplicates(st, origin)
}

/// A cluster state lists each node once: a node twice would count its
/// capacity twice, a verdict on room that does not exist. (A pod listed
/// twice only counts its requests twice, the pessimistic side; the alias
/// tests read `*p` items as more pods.)
fn refuse_duplicates(st: &ClusterState, origin: &str) -> Result<()> {
    let mut seen = std::collections::HashSet::new();
    for n in &st.nodes {
        if !seen.insert(n.name.as_str()) {
            bail!("{origin}: Node `{}` is listed twice; a snapshot holds each node once (was it joined from two `kubectl get` runs?), and a second copy would count its capacity twice", n.name);
        }
    }
    Ok(())
}

/// Parse snapshot text. `display` names the file in every error.
pub fn parse_snapshot(display: &str, text: &str) -> Result<ClusterState> {
    if text.trim().is_empty() {
        bail!("{display}: the snapshot is empty");
    }
    // JSON is YAML, but the JSON parser is several times faster on 20k pods.
    // serde_json keeps the last of two equal keys: refuse them first (a
    // `"nvidia.com/gpu": "0"` after `"1"` must not turn a FAIL into a PASS).
    let json = text.trim_start().starts_with('{');
    if json {
        if let Err(g) = crate::yaml_guard::check_json(text) {
            bail!("{display}:{}:{}: {}", g.line, g.column, g.at_path());
        }
    } else {
        if let Some(st) = parse_yaml_items(display, text)? {
            require_complete(&st, display)?;
            return Ok(st);
        }
    }
    // The whole document through the one reader (its guard has the snapshot limits).
    let yaml = if json {
        None
    } else {
        let docs = crate::yaml_guard::read(text, &crate::yaml_guard::Limits::SNAPSHOT)
            .map_err(|g| anyhow!("{display}:{}:{}: {}", g.line, g.column, g.at_path()))?;
        match <[_; 1]>::try_from(docs) {
            Ok([doc]) => Some(doc),
            Err(docs) => bail!("{display}: expected one YAML document, found {}", docs.len()),
        }
    };
    if let Some(st) = parse_fast(display, text, yaml.as_ref()) {
        require_complete(&st, display)?;
        return Ok(st);
    }
    let doc: Value = match &yaml {
        None => serde_json::from_str(text).map_err(|e| anyhow!("{display}: not valid JSON: {e}"))?,
        Some(doc) => crate::yaml_guard::from_node(doc).map_err(|(path, e)| anyhow!("{display}: {path}: {e}"))?,
    };
    let Value::Object(mut top) = doc else {
        bail!("{display}: not a Kubernetes List (the document is not a mapping)");
    };
    let kind = top.get("kind").and_then(Value::as_str).unwrap_or("").to_string();
    if kind.is_empty() {
        bail!("{display}: not a Kubernetes List (no `kind`); expected the output of `kubectl get … -o yaml`");
    }
    if !is_list_kind(&kind) {
        bail!("{display}: not a Kubernetes List (kind: {kind}); expected `kind: List` as printed by `kubectl get nodes,pods,… -A -o yaml`");
    }
    // A typed list (`PodList`) omits each item's kind.
    let hint = item_kind_of(&kind).map(String::from);
    let items = match top.remove("items") {
        Some(Value::Array(a)) => a,
        Some(Value::Null) | None => bail!("{display}: the List has no `items`"),
        Some(_) => bail!("{display}: `items` is not a list"),
    };
    let mut st = empty_state(display);
    for (i, item) in items.into_iter().enumerate() {
        add_item(&mut st, item, hint.as_deref()).map_err(|e| anyhow!("{display}: items[{i}] {e}"))?;
    }
    require_complete(&st, display)?;
    Ok(st)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_and_precise_paths_agree() {
        let text =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/cluster/roomy.yaml")).unwrap();
        let fast = parse_fast(
            "roomy",
            &text,
            crate::yaml_guard::read(&text, &crate::yaml_guard::Limits::SNAPSHOT).unwrap().first(),
        )
        .expect("a kubectl List takes the fast path");
        let doc: Value = serde_yaml_ng::from_str(&text).unwrap();
        let mut slow = ClusterState::default();
        for it in doc["items"].as_array().unwrap().clone() {
            add_item(&mut slow, it, None).unwrap();
        }
        let j = |s: &ClusterState| serde_json::json!([s.nodes, s.pods, s.pvcs, s.pvs, s.quotas, s.pdbs, s.ignored]);
        assert_eq!(j(&fast), j(&slow));
        // The item-at-a-time YAML reading takes this file and agrees too.
        let items = parse_yaml_items("roomy", &text).unwrap().expect("a kubectl List takes the item-at-a-time path");
        assert_eq!(j(&items), j(&slow));
        assert_eq!((fast.nodes.len(), fast.ignored["Deployment"]), (4, 1));
    }

    #[test]
    fn yaml_items_keep_absolute_positions_and_refuse_duplicates() {
        let head = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  status: {allocatable: {cpu: 1, memory: 1Gi}}\n";
        let bad = format!("{head}- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n  spec:\n    containers:\n    - resources: {{requests: [1]}}\n");
        let e = parse_snapshot("s.yaml", &bad).unwrap_err().to_string();
        assert!(
            e.contains("s.yaml: items[1] (Pod p) spec.containers[0].resources.requests")
                && e.contains("(line 14, column"),
            "{e}"
        );
        let dup = format!("{head}  metadata: {{name: b}}\n");
        let e = parse_snapshot("d.yaml", &dup).unwrap_err().to_string();
        assert!(e.contains("d.yaml:8:3: items[0].metadata: duplicate key `metadata`"), "{e}");
        let dup = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers:\n    - resources:\n        requests: {cpu: 1, cpu: 2}\n";
        let e = parse_snapshot("d.yaml", dup).unwrap_err().to_string();
        assert!(
            e.contains("d.yaml:10:28: items[0].spec.containers[0].resources.requests.cpu: duplicate key `cpu`"),
            "{e}"
        );
        // Items after other top-level keys, a dash on its own line, comments between items.
        let odd = "kind: List\napiVersion: v1\nitems:\n  -\n    apiVersion: v1\n    kind: Node\n    metadata: {name: a}\n  # a comment\n  - apiVersion: v1\n    kind: Pod\n    metadata: {name: p}\n    spec: {nodeName: a, containers: [{}]}\nmetadata: {}\n";
        let scan = scan_yaml(odd).ok().flatten().expect("block style is read item by item");
        assert_eq!(scan.items.len(), 2);
        let st = parse_snapshot("o.yaml", odd).unwrap();
        assert_eq!((st.nodes[0].name.as_str(), st.pods[0].node_name.as_deref()), ("a", Some("a")));
        // An anchor used inside its own item (PyYAML writes one for every
        // shared value) keeps the item-at-a-time reading and its result.
        let local = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  status:\n    allocatable: &al {cpu: 1, memory: 1Gi}\n    capacity: *al\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {nodeName: a, containers: [{resources: {requests: &r {cpu: 2}, limits: *r}}]}\n";
        assert_eq!(scan_yaml(local).ok().flatten().expect("item-local anchors are read item by item").items.len(), 2);
        let st = parse_snapshot("l.yaml", local).unwrap();
        assert_eq!(
            (st.nodes[0].allocatable["cpu"].as_str(), st.pods[0].containers[0].requests["cpu"].as_str()),
            ("1", "2")
        );
        // An alias to another item's anchor is left to the whole-document reading, which resolves it.
        let anchored = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n  status: {allocatable: &al {cpu: 1, memory: 1Gi}}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {nodeName: a, containers: [{resources: {requests: *al}}]}\n";
        assert!(scan_yaml(anchored).ok().flatten().is_none());
        assert_eq!(parse_snapshot("a.yaml", anchored).unwrap().pods[0].containers[0].requests["cpu"], "1");
    }

    /// What the item-at-a-time scan finds: where each item starts (its
    /// first key: line from 1, column from 0), its kind, apiVersion and
    /// metadata.name, and the line that closes `items`, ignoring a look-alike
    /// list outside `items`. An anchored or alias key sends the file to the
    /// whole-document reading.
    #[test]
    fn the_scan_finds_each_item_head_and_nothing_outside_items() {
        let t = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n-   kind: Node\n    apiVersion: v1\n    metadata: {name: n}\nextra:\n- apiVersion: wrong\n  kind: Wrong\n  metadata:\n    name: wrong\n";
        let s = scan_yaml(t).ok().flatten().expect("block style");
        let heads: Vec<_> = s
            .items
            .iter()
            .map(|h| (h.line, h.col, h.kind.as_deref(), h.api_version.as_deref(), h.name.as_deref()))
            .collect();
        assert_eq!(
            (s.kind.as_deref(), heads, s.end_line),
            (
                Some("List"),
                vec![(4, 2, Some("Pod"), Some("v1"), Some("p")), (8, 4, Some("Node"), Some("v1"), Some("n"))],
                11
            )
        );
        let head = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: &v v1\n  kind: Pod\n";
        assert!(scan_yaml(&format!("{head}  &m metadata: {{name: p}}\n")).ok().flatten().is_none(), "anchored key");
        assert!(scan_yaml(&format!("{head}  *v : x\n")).ok().flatten().is_none(), "alias key");
        assert!(scan_yaml(&format!("{head}  v2: x\n")).ok().flatten().is_some());
        // Items that do not each start on a line of their own, before the
        // line that closes the list, are read whole (a text per item needs
        // its lines); an empty item has no first key to start at.
        let p = "{apiVersion: v1, kind: Pod, metadata: {name: p}}";
        let n = "{apiVersion: v1, kind: Node, metadata: {name: n}}";
        for items in [
            format!("[{p}, {n}]"),
            format!("[\n  {p}, {n}\n]"),
            format!("[\n  {p},\n  {n}]"),
            format!("\n- {p}\n- {{}}\n"),
            format!("\n- {{}}\n- {p}\n"),
        ] {
            let t = format!("apiVersion: v1\nkind: List\nitems: {items}\n");
            assert!(scan_yaml(&t).ok().flatten().is_none(), "{t}");
        }
        let t = format!("apiVersion: v1\nkind: List\nitems: [\n  {p},\n  {n}\n]\n");
        assert_eq!(scan_yaml(&t).ok().flatten().expect("one item per line, then the close").items.len(), 2);
        // A kind that is not text: the whole-document reading says so.
        let t = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: [Pod]\n";
        assert!(scan_yaml(t).ok().flatten().is_none());
    }

    /// Each way a file is not a complete cluster List is refused naming the
    /// file and what is wrong; never an empty state that could pass.
    #[test]
    fn what_is_not_a_complete_list_is_refused_by_name() {
        let node = "{apiVersion: v1, kind: Node, metadata: {name: n}}";
        let pod = "{apiVersion: v1, kind: Pod, metadata: {name: p}}";
        let err = |t: &str| parse_snapshot("c.yaml", t).unwrap_err().to_string();
        for (t, want) in [
            (" \n\t\n".to_string(), "c.yaml: the snapshot is empty".to_string()),
            ("- a\n- b\n".into(), "c.yaml: not a Kubernetes List (the document is not a mapping)".into()),
            ("items: []\n".into(), "c.yaml: not a Kubernetes List (no `kind`); expected the output of `kubectl get … -o yaml`".into()),
            ("kind: Pod\nitems: []\n".into(), "c.yaml: not a Kubernetes List (kind: Pod); expected `kind: List` as printed by `kubectl get nodes,pods,… -A -o yaml`".into()),
            ("kind: List\n".into(), "c.yaml: the List has no `items`".into()),
            ("kind: List\nitems: {}\n".into(), "c.yaml: `items` is not a list".into()),
            (format!("kind: List\nitems:\n- {pod}\n"), "c.yaml: no Node objects; preflight needs every node (take it with `kubectl get nodes,pods,pvc,pv,resourcequotas,poddisruptionbudgets -A -o yaml`)".into()),
            (format!("kind: List\nitems:\n- {node}\n"), "c.yaml: no Pod objects, yet every cluster runs system pods; was the snapshot taken without `pods` or without `-A`?".into()),
            (format!("kind: List\nitems:\n- {node}\n- {pod}\n- {node}\n"), "c.yaml: Node `n` is listed twice; a snapshot holds each node once (was it joined from two `kubectl get` runs?), and a second copy would count its capacity twice".into()),
            ("kind: List\nitems:\n- apiVersion: v1\n  kind: \"\"\n".into(), "c.yaml: items[0] `kind` is empty (line 3)".into()),
            ("kind: List\nitems:\n- apiVersion: v1\n  metadata: {name: x}\n".into(), "c.yaml: items[0] has no `kind` (line 3)".into()),
            ("kind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: n}\n- kind: Pod\n  metadata: {name: p}\n".into(), "c.yaml: items[1] (Pod) has no `apiVersion` (line 6)".into()),
            (format!("kind: List\nitems: [{node}, {{kind: Pod, metadata: {{name: p}}}}]\n"), "c.yaml: items[1] (Pod) has no `apiVersion`".into()),
        ] {
            assert_eq!(err(&t), want, "{t}");
        }
        // A typed list's items need neither kind nor apiVersion, as the API server returns them.
        let nodes = "apiVersion: v1\nkind: NodeList\nitems:\n- metadata:\n    name: n\n";
        assert!(scan_yaml(nodes).ok().flatten().is_some());
        assert_eq!(err(nodes), "c.yaml: no Pod objects, yet every cluster runs system pods; was the snapshot taken without `pods` or without `-A`?");
        // JSON: two equal keys are refused where the second is; not JSON says so.
        let e = parse_snapshot("c.json", r#"{"kind":"List","kind":"List","items":[]}"#).unwrap_err().to_string();
        assert!(e.starts_with("c.json:1:") && e.contains("duplicate key `kind`"), "{e}");
        let e = parse_snapshot("c.json", r#"{"kind":"List","items":["#).unwrap_err().to_string();
        assert!(e.starts_with("c.json: not valid JSON: "), "{e}");
    }

    /// What sits between two items (a next item's lone dash, comments in
    /// either order, a closing `...`) is not part of the item before: the
    /// file is still read item by item, and read right.
    #[test]
    fn dashes_and_comments_between_items_belong_to_neither() {
        let node = "- apiVersion: v1\n  kind: Node\n  metadata: {name: n}\n";
        for tail in [
            "-\n  # the pod\n  apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n",
            "# the pod\n-\n  apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n",
            "- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n...\n",
        ] {
            let t = format!("apiVersion: v1\nkind: List\nitems:\n{node}{tail}");
            assert!(scan_yaml(&t).ok().flatten().is_some(), "{t}");
            let st = parse_snapshot("b.yaml", &t).unwrap();
            assert_eq!((st.nodes[0].name.as_str(), st.pods[0].name.as_str()), ("n", "p"), "{t}");
        }
    }

    #[test]
    fn typed_list_items_may_omit_kind() {
        let st = parse_snapshot(
            "s.json",
            r#"{"apiVersion":"v1","kind":"NodeList","items":[{"metadata":{"name":"a"},"status":{"allocatable":{"cpu":4}}}]}"#,
        );
        // A NodeList alone has no pods: refused, naming the file.
        let e = st.unwrap_err().to_string();
        assert!(e.contains("s.json") && e.contains("no Pod objects"), "{e}");
    }

    #[test]
    fn errors_name_item_and_field() {
        let e = parse_snapshot(
            "s.yaml",
            "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Node\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec: {containers: [{resources: {requests: [1]}}]}\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("s.yaml: items[1] (Pod p) spec.containers[0].resources.requests"), "{e}");
    }
}

#[cfg(test)]
mod every_field {
    use super::*;

    const ITEMS: &str = r#"[
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"zone":"a"}},
  "spec":{"taints":[{"key":"gpu","value":"true","effect":"NoSchedule"}],"unschedulable":true},
  "status":{"allocatable":{"cpu":4,"memory":1.5,"ephemeral":-2,"nvidia.com/gpu":"1"}}},
 {"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"},"status":{}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","namespace":"ml","labels":{"app":"x"},"deletionTimestamp":"2026-01-01T00:00:00Z"},
  "spec":{"nodeName":"n1","containers":[{"resources":{"requests":{"cpu":"500m"},"limits":{"memory":"1Gi"}}}],
   "initContainers":[{"restartPolicy":"Always","resources":{"requests":{"cpu":1}}},{"resources":{}}],"overhead":{"cpu":"100m"}},
  "status":{"phase":"Running"}},
 {"apiVersion":"v1","kind":"Pod","metadata":{"name":"p2"},"spec":{"nodeName":"","containers":[{}]}},
 {"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c","namespace":"ml"},
  "spec":{"accessModes":["ReadWriteOncePod"],"volumeName":"pv1"},"status":{"phase":"Bound"}},
 {"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"c2"},"spec":{"volumeName":""}},
 {"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv1"},
  "spec":{"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}],
   "matchFields":[{"key":"spec.nodeName","operator":"NotIn","values":["n2"]}]}]}}}},
 {"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q","namespace":"ml"},
  "spec":{"hard":{"requests.nvidia.com/gpu":2},"scopes":["NotTerminating"],
   "scopeSelector":{"matchExpressions":[{"scopeName":"PriorityClass","operator":"In","values":["high"]}]}},
  "status":{"used":{"requests.nvidia.com/gpu":"1"}}},
 {"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"q2","namespace":"ml"},"spec":{"hard":{"pods":"10"}}},
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b","namespace":"ml"},
  "spec":{"selector":{"matchLabels":{"app":"x"},"matchExpressions":[{"key":"tier","operator":"Exists"}]},"minAvailable":"50%","maxUnavailable":1},
  "status":{"disruptionsAllowed":0}},
 {"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b2","namespace":"ml"},"spec":{"minAvailable":"2"}},
 {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}},
 {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d2"}}
]"#;

    /// Every field preflight reads, of every kind, as the plain data the
    /// checks judge: quantities written as text, integers (negative too) and
    /// decimals; a `scopeName` read as the requirement's key; `matchFields`
    /// as `metadata.name`; empty node and volume names as none; a missing
    /// namespace as `default`; a PDB's "2" as a count and "50%" as a share.
    /// The same from a JSON List (read whole), a YAML List (read item by
    /// item) and item by item through `add_item`.
    #[test]
    fn every_field_reads_the_same_on_every_path() {
        let expected: Value = serde_json::from_str(EXPECTED).unwrap();
        let j = |st: &ClusterState| serde_json::json!({"nodes": st.nodes, "pods": st.pods, "pvcs": st.pvcs, "pvs": st.pvs, "quotas": st.quotas, "pdbs": st.pdbs, "ignored": st.ignored});
        let json = format!(r#"{{"apiVersion":"v1","kind":"List","items":{ITEMS}}}"#);
        let st = parse_snapshot("s.json", &json).unwrap();
        assert_eq!((j(&st), st.source.as_str()), (expected.clone(), "snapshot s.json"));
        let yaml = serde_yaml_ng::to_string(&serde_json::from_str::<Value>(&json).unwrap()).unwrap();
        assert!(scan_yaml(&yaml).ok().flatten().is_some(), "block YAML is read item by item");
        let st = parse_snapshot("s.yaml", &yaml).unwrap();
        assert_eq!((j(&st), st.source.as_str()), (expected.clone(), "snapshot s.yaml"));
        let mut one_by_one = ClusterState::default();
        for it in serde_json::from_str::<Vec<Value>>(ITEMS).unwrap() {
            add_item(&mut one_by_one, it, None).unwrap();
        }
        assert_eq!(j(&one_by_one), expected);
        // A List inside the List (kubectl flattens it), its typed items
        // without `kind`: read as if they were at the top; an empty kind is
        // refused, not counted as a kind preflight ignores.
        let nested = format!(
            r#"{{"apiVersion":"v1","kind":"List","items":[{{"apiVersion":"v1","kind":"List","metadata":{{"name":"inner"}},"items":{ITEMS}}},
               {{"apiVersion":"v1","kind":"PodList","items":[{{"metadata":{{"name":"p3"}}}}]}}]}}"#
        );
        let st = parse_snapshot("n.json", &nested).unwrap();
        assert_eq!(st.source, "snapshot n.json");
        let mut want = expected.clone();
        want["pods"].as_array_mut().unwrap().push(serde_json::json!({"namespace": "default", "name": "p3", "node_name": null, "phase": null, "terminating": false, "labels": {}, "containers": [], "init_containers": [], "overhead": {}}));
        assert_eq!(j(&st), want);
        let e = add_item(&mut ClusterState::default(), serde_json::json!({"apiVersion": "v1", "kind": ""}), None)
            .unwrap_err();
        assert!(e.contains("`kind` is empty"), "{e}");
        // Also when the item would otherwise take the fast path (it has a name).
        let empty = r#"{"kind":"List","items":[{"apiVersion":"v1","kind":"","metadata":{"name":"x"}}]}"#;
        let e = parse_snapshot("e.json", empty).unwrap_err().to_string();
        assert_eq!(e, "e.json: items[0] `kind` is empty or not a string");
        // Two documents are not one List: refused, not read as the first.
        let one = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: p}}\n";
        let e = parse_snapshot("two.yaml", &format!("{one}---\n{one}")).unwrap_err().to_string();
        assert_eq!(e, "two.yaml: expected one YAML document, found 2");
        // A second document after a complete List is not dropped unread.
        let e = parse_snapshot("two.yaml", &format!("{yaml}---\nkind: List\n")).unwrap_err().to_string();
        assert_eq!(e, "two.yaml: expected one YAML document, found 2");
        assert_eq!(j(&parse_snapshot("one.yaml", &format!("---\n{yaml}")).unwrap()), expected);
        // Not YAML: where (the quote that never closes), as people count lines and columns.
        let e = parse_snapshot("y.yaml", "kind: List\nitems:\n- kind: Node\n  name: \"a\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "y.yaml: not valid YAML: while scanning a quoted scalar, found unexpected end of stream at line 4 column 9"
        );
        // A quantity that is neither text nor a number names what it wanted.
        let bad = ITEMS.replacen(r#""cpu":4"#, r#""cpu":true"#, 1);
        let e = parse_snapshot("b.json", &format!(r#"{{"kind":"List","items":{bad}}}"#)).unwrap_err().to_string();
        assert!(e.contains("status.allocatable.cpu") && e.contains("a quantity (string or number)"), "{e}");
    }

    const EXPECTED: &str = r#"{
 "nodes": [
  {"name": "n1", "labels": {"zone": "a"}, "taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}], "unschedulable": true,
   "allocatable": {"cpu": "4", "ephemeral": "-2", "memory": "1.5", "nvidia.com/gpu": "1"}},
  {"name": "n2", "labels": {}, "taints": [], "unschedulable": false, "allocatable": {}}],
 "pods": [
  {"namespace": "ml", "name": "p1", "node_name": "n1", "phase": "Running", "terminating": true, "labels": {"app": "x"},
   "containers": [{"requests": {"cpu": "500m"}, "limits": {"memory": "1Gi"}}],
   "init_containers": [[{"requests": {"cpu": "1"}, "limits": {}}, true], [{"requests": {}, "limits": {}}, false]],
   "overhead": {"cpu": "100m"}},
  {"namespace": "default", "name": "p2", "node_name": null, "phase": null, "terminating": false, "labels": {},
   "containers": [{"requests": {}, "limits": {}}], "init_containers": [], "overhead": {}}],
 "pvcs": [
  {"namespace": "ml", "name": "c", "access_modes": ["ReadWriteOncePod"], "volume_name": "pv1", "phase": "Bound"},
  {"namespace": "default", "name": "c2", "access_modes": [], "volume_name": null, "phase": null}],
 "pvs": [
  {"name": "pv1", "node_affinity": [{"requirements": [
    {"key": "zone", "operator": "In", "values": ["a"]},
    {"key": "metadata.name", "operator": "NotIn", "values": ["n2"]}]}]}],
 "quotas": [
  {"namespace": "ml", "name": "q", "hard": {"requests.nvidia.com/gpu": "2"}, "used": {"requests.nvidia.com/gpu": "1"},
   "scopes": ["NotTerminating"], "scope_selector": [{"key": "PriorityClass", "operator": "In", "values": ["high"]}]},
  {"namespace": "ml", "name": "q2", "hard": {"pods": "10"}, "used": null, "scopes": [], "scope_selector": []}],
 "pdbs": [
  {"namespace": "ml", "name": "b", "selector": {"match_labels": {"app": "x"}, "match_expressions": [{"key": "tier", "operator": "Exists", "values": []}]},
   "min_available": "50%", "max_unavailable": 1, "disruptions_allowed": 0},
  {"namespace": "ml", "name": "b2", "selector": null, "min_available": 2, "max_unavailable": null, "disruptions_allowed": null}],
 "ignored": {"Deployment": 2}
}"#;
}
