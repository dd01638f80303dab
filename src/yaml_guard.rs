//! One guard for every YAML (and JSON) file bundlegate reads, run on the
//! event stream *before* serde sees the text: serde_yaml_ng keeps the last of
//! two equal keys, expands aliases without a budget, and turns `.nan`/`.inf`
//! into floats that every comparison then silently passes. The guard streams
//! events (aliases are never expanded here) and stops at the first problem,
//! so a hostile file costs at most one pass over its bytes.
//!
//! Readers: the bundle parser, pipeline and config files, cluster snapshots
//! (the item-at-a-time scan feeds its own events through a [`Guard`], so a
//! 400 MiB snapshot is still read once), bundle detection and rendered
//! manifests. JSON snapshots, which take serde_json's faster path, get the
//! same duplicate-key rule from [`check_json`].
//!
//! The rules, each for every style a parser would accept:
//! - a mapping key appears once (an `*alias` key counts as the text of the
//!   scalar it names; a mapping or list as a key is refused: no reader takes one);
//! - no non-finite number: a plain scalar (with any tag or none) or a
//!   `!!float`-tagged scalar of any style (quoted, literal `|`, folded `>`)
//!   spelled `.nan`/`.inf`/`-.inf`, or a number that overflows to infinity;
//! - nesting, `*alias` count and the nodes aliases add are bounded ([`Limits`]).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser, Tag};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Resource limits for one YAML stream. A release bundle is a few
/// kilobytes, about 300 nodes and 7 levels deep; the limits leave two orders
/// of magnitude of room and still stop amplification within milliseconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Size of the text in bytes (the file reader enforces the same bound).
    pub max_bytes: usize,
    /// Nesting of mappings and sequences.
    pub max_depth: usize,
    /// Nodes after alias expansion (what serde would build).
    pub max_nodes: u64,
    /// `*alias` references.
    pub max_aliases: usize,
    /// Nodes that `*alias` references add once expanded: the amplification
    /// itself, bounded even where the text may be large (snapshots).
    pub max_alias_nodes: u64,
    /// Refuse non-finite numbers (see the module docs).
    pub refuse_non_finite: bool,
}

/// 4 MiB: a release bundle is text that a human reviews in a pull request.
pub(crate) const MAX_BUNDLE_BYTES: usize = 4 * 1024 * 1024;

/// The largest cluster snapshot read (bytes). A 5,000-node / 200,000-pod
/// cluster prints about 400 MiB of YAML.
pub(crate) const MAX_SNAPSHOT_BYTES: usize = 512 << 20;

impl Limits {
    /// Bundles, pipelines, config files, rendered manifests.
    pub(crate) const DEFAULT: Limits = Limits {
        max_bytes: MAX_BUNDLE_BYTES,
        max_depth: 64,
        max_nodes: 100_000,
        max_aliases: 1_000,
        max_alias_nodes: 100_000,
        refuse_non_finite: true,
    };
    /// Cluster snapshots: large by nature, so the node count is bounded by
    /// the text alone; kubectl never writes an anchor, so aliases get a small
    /// budget (a 180 KB file of 20,000 `*pod` aliases took 6 GB before).
    /// Depth 128: `managedFields` of custom resources nest deep.
    pub(crate) const SNAPSHOT: Limits = Limits {
        max_bytes: MAX_SNAPSHOT_BYTES,
        max_depth: 128,
        max_nodes: u64::MAX,
        max_aliases: 10_000,
        max_alias_nodes: 200_000,
        refuse_non_finite: true,
    };
}

/// Where and why the guard refused the text. `path` is the field path of the
/// offending node (`spec.serving.resources.requests.cpu`), empty for the root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardError {
    pub line: usize,
    pub column: usize,
    pub path: String,
    pub message: String,
}

impl GuardError {
    /// `path: message`, or the message alone at the root.
    pub(crate) fn at_path(&self) -> String {
        if self.path.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.path, self.message)
        }
    }
}

struct Frame {
    is_map: bool,
    /// Expanded node count of this collection so far (itself included).
    size: u64,
    anchor: usize,
    /// Mapping: the next node is a key.
    at_key: bool,
    /// Mapping: position of the current key (its text is in `keys`).
    cur_key: Option<(usize, usize)>,
    keys: HashMap<String, (usize, usize)>,
    idx: usize,
}

impl Frame {
    fn new(is_map: bool, anchor: usize) -> Frame {
        Frame { is_map, size: 1, anchor, at_key: is_map, cur_key: None, keys: HashMap::new(), idx: 0 }
    }

    fn segment(&self) -> String {
        if self.is_map {
            let key = if self.at_key { None } else { self.cur_key.and_then(|p| self.keys.iter().find(|(_, at)| **at == p).map(|(k, _)| k.as_str())) };
            key.unwrap_or("?").to_string()
        } else {
            format!("[{}]", self.idx)
        }
    }
}

/// The field path of the node the next event opens, built only for errors.
fn path_of(stack: &[Frame]) -> String {
    let mut out = String::new();
    for f in stack {
        let seg = f.segment();
        if f.is_map && !out.is_empty() {
            out.push('.');
        }
        out.push_str(&seg);
    }
    out
}

fn pos(m: &Marker) -> (usize, usize) {
    (m.line().max(1), m.col() + 1)
}

/// YAML 1.2 core schema's non-finite floats, and plain numbers that
/// overflow an f64 (`1e999`), which serde would read as infinity.
pub(crate) fn is_non_finite_scalar(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    if matches!(l.as_str(), ".nan" | ".inf" | "+.inf" | "-.inf" | "+.nan" | "-.nan") {
        return true;
    }
    let b = s.as_bytes();
    let numeric_start = match b.first() {
        Some(c) if c.is_ascii_digit() => true,
        Some(b'+' | b'-' | b'.') => b.get(1).is_some_and(|c| c.is_ascii_digit() || *c == b'.'),
        _ => false,
    };
    numeric_start && s.replace('_', "").parse::<f64>().is_ok_and(|f| !f.is_finite())
}

/// `!!float` however it is written (`!!float`, `!<tag:yaml.org,2002:float>`,
/// a `%TAG` handle for the core schema).
fn is_float_tag(tag: &Option<Tag>) -> bool {
    tag.as_ref().is_some_and(|t| format!("{}{}", t.handle, t.suffix) == "tag:yaml.org,2002:float" || (t.handle == "!!" && t.suffix == "float"))
}

/// What an anchor names: its expanded size, and its text when it is a scalar
/// (so an `*alias` used as a key is compared as that text).
struct Anchored {
    size: u64,
    text: Option<String>,
}

/// The guard as a state machine over parser events, for readers that run
/// their own event loop (the snapshot scan); [`check`] drives it over a text.
pub(crate) struct Guard {
    limits: Limits,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    total: u64,
    alias_nodes: u64,
    aliases: usize,
}

impl Guard {
    pub(crate) fn new(limits: &Limits) -> Guard {
        Guard { limits: *limits, stack: Vec::new(), anchors: HashMap::new(), total: 0, alias_nodes: 0, aliases: 0 }
    }

    fn err(&self, mark: &Marker, message: String) -> Result<(), GuardError> {
        let (line, column) = pos(mark);
        Err(GuardError { line, column, path: path_of(&self.stack), message })
    }

    /// A key (scalar text, or the text an alias names): refused when the
    /// mapping already has it.
    fn key(&mut self, text: &str, mark: &Marker) -> Result<(), GuardError> {
        let at = pos(mark);
        let n = self.stack.len();
        if let Some((l, c)) = self.stack[n - 1].keys.get(text).copied() {
            let parent = path_of(&self.stack[..n - 1]);
            let path = if parent.is_empty() { text.to_string() } else { format!("{parent}.{text}") };
            let message = format!("duplicate key `{text}`: first at line {l} column {c}, again at line {} (YAML 1.2 requires unique keys)", at.0);
            return Err(GuardError { line: at.0, column: at.1, path, message });
        }
        let f = &mut self.stack[n - 1];
        f.keys.insert(text.to_string(), at);
        f.cur_key = Some(at);
        Ok(())
    }

    /// Feed one event (in stream order). Syntax errors are the parser's to
    /// report; this only judges well-formed events.
    pub(crate) fn event(&mut self, ev: &Event, mark: &Marker) -> Result<(), GuardError> {
        let in_key = self.stack.last().is_some_and(|f| f.is_map && f.at_key);
        // Expanded size and anchor of a node that completes with this event.
        let (size, anchor, text): (u64, usize, Option<&String>) = match ev {
            Event::DocumentStart => {
                self.stack.clear();
                return Ok(());
            }
            Event::Scalar(s, style, anchor, tag) => {
                if in_key {
                    self.key(s, mark)?;
                } else if self.limits.refuse_non_finite && (*style == TScalarStyle::Plain || is_float_tag(tag)) && is_non_finite_scalar(s) {
                    let how = if *style == TScalarStyle::Plain { "quote it if it is meant as text" } else { "a `!!float` tag reads any style as a number" };
                    return self.err(mark, format!("`{s}` is not a finite number ({how})"));
                }
                (1, *anchor, Some(s))
            }
            Event::Alias(id) => {
                self.aliases += 1;
                if self.aliases > self.limits.max_aliases {
                    return self.err(mark, format!("more than {} aliases (`*name`): refusing alias amplification", self.limits.max_aliases));
                }
                let (size, key) = match self.anchors.get(id) {
                    Some(a) => (a.size, a.text.clone()),
                    None => (1, None),
                };
                if in_key {
                    match key {
                        Some(k) => self.key(&k, mark)?,
                        None => return self.err(mark, "a mapping key must be text, not an alias of a mapping or list".into()),
                    }
                }
                self.alias_nodes = self.alias_nodes.saturating_add(size);
                if self.alias_nodes > self.limits.max_alias_nodes {
                    return self.err(mark, format!("aliases expand to more than {} nodes: refusing alias amplification", self.limits.max_alias_nodes));
                }
                (size, 0, None)
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if self.stack.len() >= self.limits.max_depth {
                    return self.err(mark, format!("nested deeper than {} levels", self.limits.max_depth));
                }
                if in_key {
                    return self.err(mark, "a mapping key must be text, not a mapping or list".into());
                }
                self.stack.push(Frame::new(matches!(ev, Event::MappingStart(..)), *anchor));
                self.total = self.total.saturating_add(1);
                if self.total > self.limits.max_nodes {
                    return self.err(mark, format!("more than {} nodes", self.limits.max_nodes));
                }
                return Ok(());
            }
            Event::MappingEnd | Event::SequenceEnd => match self.stack.pop() {
                Some(f) => (f.size, f.anchor, None),
                None => return Ok(()),
            },
            _ => return Ok(()),
        };
        if anchor != 0 {
            self.anchors.insert(anchor, Anchored { size, text: text.cloned() });
        }
        // A collection counted itself when it started; a scalar or alias counts here.
        if !matches!(ev, Event::MappingEnd | Event::SequenceEnd) {
            self.total = self.total.saturating_add(size);
        }
        if self.total > self.limits.max_nodes {
            return self.err(mark, format!("expands to more than {} nodes (aliases included): refusing alias amplification", self.limits.max_nodes));
        }
        if let Some(f) = self.stack.last_mut() {
            f.size = f.size.saturating_add(size);
            if f.is_map {
                if !f.at_key {
                    f.idx += 1;
                }
                f.at_key = !f.at_key;
            } else {
                f.idx += 1;
            }
        }
        Ok(())
    }
}

/// Characters the two YAML readers do not read alike: libyaml (under
/// serde_yaml_ng, YAML 1.1) breaks lines at NEL, LINE SEPARATOR and
/// PARAGRAPH SEPARATOR, yaml-rust2 (the guard's reader, YAML 1.2) does not,
/// so `name: x<U+2028>image: other` is one scalar to the guard and a second
/// key to the model. A byte-order mark anywhere but the start is the same
/// kind of trap. Refused wherever they appear, quoted or not: no bundle,
/// pipeline or snapshot needs them, and escapes (`"\u2028"`) still work.
pub(crate) fn check_chars(text: &str) -> Result<(), GuardError> {
    let (mut line, mut col) = (1usize, 1usize);
    for (i, c) in text.char_indices() {
        let name = match c {
            '\u{85}' => Some("NEXT LINE (U+0085)"),
            '\u{2028}' => Some("LINE SEPARATOR (U+2028)"),
            '\u{2029}' => Some("PARAGRAPH SEPARATOR (U+2029)"),
            '\u{feff}' if i > 0 => Some("a byte-order mark (U+FEFF) after the start"),
            _ => None,
        };
        if let Some(name) = name {
            return Err(GuardError {
                line,
                column: col,
                path: String::new(),
                message: format!("{name}: YAML readers disagree on whether it breaks the line, so what is reviewed may not be what is read; write it as an escape in a double-quoted string (\"\\u{:04X}\") or remove it", c as u32),
            });
        }
        if c == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    Ok(())
}

/// Check `text` against `limits`. A YAML syntax error is *not* reported here:
/// the caller's parser reports it with its own message and position, unless
/// the model's reader (serde_yaml_ng) would accept what the guard's reader
/// refused: then the guard never saw the rest of the text, and the two
/// readers disagree, so it is refused here.
pub(crate) fn check(text: &str, limits: &Limits) -> Result<(), GuardError> {
    if text.len() > limits.max_bytes {
        return Err(GuardError {
            line: 1,
            column: 1,
            path: String::new(),
            message: format!("the text is {} bytes, over the limit of {} bytes", text.len(), limits.max_bytes),
        });
    }
    check_chars(text)?;
    let mut parser = Parser::new_from_str(text);
    let mut guard = Guard::new(limits);
    loop {
        let (ev, mark) = match parser.next_token() {
            Ok(x) => x,
            Err(e) => {
                if serde_yaml_ng::from_str::<serde_yaml_ng::Value>(text).is_ok() {
                    let (line, column) = pos(e.marker());
                    return Err(GuardError { line, column, path: String::new(), message: format!("the YAML readers disagree here ({}); rewrite this part in plain YAML", e.info()) });
                }
                return Ok(());
            }
        };
        if matches!(ev, Event::StreamEnd) {
            return Ok(());
        }
        guard.event(&ev, &mark)?;
    }
}

/// The duplicate-key rule for JSON text (serde_json keeps the last of two
/// equal keys without a word). Streams the text once, building nothing; a
/// syntax error is left to the caller's parser, like [`check`]. Nesting is
/// bounded by serde_json's own limit (128).
pub fn check_json(text: &str) -> Result<(), GuardError> {
    use serde::de::DeserializeSeed;
    let found = std::cell::RefCell::new(None);
    let mut path = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    match (UniqueKeys { path: &mut path, found: &found }).deserialize(&mut de) {
        Ok(()) => Ok(()),
        Err(e) => match found.into_inner() {
            Some((path, message)) => Err(GuardError { line: e.line().max(1), column: e.column().max(1), path, message }),
            None => Ok(()),
        },
    }
}

struct UniqueKeys<'a> {
    path: &'a mut Vec<String>,
    found: &'a std::cell::RefCell<Option<(String, String)>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        loop {
            let last = self.path.last().cloned().unwrap_or_default();
            self.path.push(format!("{last}[{i}]"));
            let more = seq.next_element_seed(UniqueKeys { path: self.path, found: self.found })?;
            self.path.pop();
            if more.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let last = self.path.last().cloned().unwrap_or_default();
            let here = if last.is_empty() { k.clone() } else { format!("{last}.{k}") };
            if !seen.insert(k.clone()) {
                let message = format!("duplicate key `{k}` (JSON parsers keep one of the values, so the file is ambiguous)");
                *self.found.borrow_mut() = Some((here, message.clone()));
                return Err(serde::de::Error::custom(message));
            }
            self.path.push(here);
            map.next_value_seed(UniqueKeys { path: self.path, found: self.found })?;
            self.path.pop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard's reader (yaml-rust2) as plain JSON data, for comparing
    /// with what serde_yaml_ng builds the model from.
    fn guard_reader_value(text: &str) -> Option<serde_json::Value> {
        use yaml_rust2::{Yaml, YamlLoader};
        fn conv(y: &Yaml) -> Option<serde_json::Value> {
            Some(match y {
                Yaml::Null => serde_json::Value::Null,
                Yaml::Boolean(b) => (*b).into(),
                Yaml::Integer(i) => (*i).into(),
                Yaml::Real(r) => serde_json::Number::from_f64(r.parse().ok()?).map(serde_json::Value::Number)?,
                Yaml::String(s) => s.clone().into(),
                Yaml::Array(a) => a.iter().map(conv).collect::<Option<Vec<_>>>()?.into(),
                Yaml::Hash(h) => {
                    let mut m = serde_json::Map::new();
                    for (k, v) in h {
                        let k = match k {
                            Yaml::String(s) => s.clone(),
                            Yaml::Integer(i) => i.to_string(),
                            Yaml::Boolean(b) => b.to_string(),
                            _ => return None,
                        };
                        m.insert(k, conv(v)?);
                    }
                    serde_json::Value::Object(m)
                }
                _ => return None,
            })
        }
        let docs = YamlLoader::load_from_str(text).ok()?;
        conv(docs.first().unwrap_or(&Yaml::Null))
    }

    const READER_TRAPS: &[&str] = &["\u{85}", "\u{2028}", "\u{2029}", "\u{feff}", "\t", "\r", "\r\n", "\u{0}", "\u{1b}", "\u{7f}", "\u{a0}", "\u{200b}", "\u{202e}", "\u{2066}", "\u{c}", "\u{b}"];

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4_000, failure_persistence: None, ..Default::default() })]

        /// One document, one meaning: whatever the guard lets through, the
        /// model's reader (serde_yaml_ng, libyaml's YAML 1.1 rules) and the
        /// guard's reader (yaml-rust2, YAML 1.2) read as the same data. A
        /// character the two break lines at differently (U+0085, U+2028,
        /// U+2029) once let a key the guard never saw override a reviewed one.
        #[test]
        fn what_the_guard_passes_both_readers_read_alike(
            traps in proptest::collection::vec((proptest::sample::select(READER_TRAPS), 0usize..200, proptest::prelude::any::<bool>()), 1..4),
        ) {
            let mut text = String::from("apiVersion: v1\nmetadata:\n  name: llm\nspec:\n  image: reviewed\n  args: [\"--a\", \"b c\"]\n  note: \"quoted text\"\n  list:\n    - x\n    - y\n");
            for (trap, at, with_key) in traps {
                let mut at = at.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let ins = if with_key { format!("{trap}image: unreviewed") } else { trap.to_string() };
                text.insert_str(at, &ins);
            }
            if check(&text, &Limits::DEFAULT).is_ok() {
                let model: Result<serde_json::Value, _> = serde_yaml_ng::from_str(&text);
                if let Ok(model) = model {
                    let guarded = guard_reader_value(&text);
                    proptest::prop_assert_eq!(Some(&model), guarded.as_ref(), "the readers disagree on {:?}", text);
                }
            }
        }
    }

    fn chk(t: &str) -> Result<(), GuardError> {
        check(t, &Limits::DEFAULT)
    }

    #[test]
    fn duplicate_keys_at_any_depth_name_both_lines() {
        let e = chk("a:\n  b:\n    cpu: 1\n    cpu: 2\n").unwrap_err();
        assert_eq!((e.line, e.path.as_str()), (4, "a.b.cpu"));
        assert!(e.message.contains("line 3") && e.message.contains("line 4"), "{}", e.message);
        let e = chk("l:\n  - {x: 1, y: 2, x: 3}\n").unwrap_err();
        assert_eq!(e.path, "l[0].x");
        assert!(chk("a: {x: 1}\nb: {x: 1}\n").is_ok());
        assert!(chk("- {x: 1}\n- {x: 1}\n").is_ok());
    }

    #[test]
    fn non_finite_numbers_are_refused_in_every_style_but_quoted_text_is_not() {
        // Plain (any tag or none), and `!!float` of any style, which
        // serde_yaml_ng reads as a number too; a block scalar is reported
        // where its text is.
        let plain = [".nan", ".NaN", ".inf", "-.inf", "+.INF", "1e999", "-1e400", "!!str .nan", "!custom .NaN"];
        let tagged = ["!!float |-\n    .nan", "!!float '.inf'", "!!float \".nan\"", "!!float >-\n    -.inf", "!<tag:yaml.org,2002:float> .inf"];
        for v in plain.iter().chain(&tagged) {
            let e = chk(&format!("g:\n  max: {v}\n")).unwrap_err();
            assert_eq!((e.line, e.path.as_str()), (if v.contains('\n') { 3 } else { 2 }, "g.max"), "{v}");
            assert!(e.message.contains("not a finite number"), "{v}: {}", e.message);
        }
        assert_eq!(chk("g:\n  max: .nan\n").unwrap_err().column, 8);
        let e = chk("%TAG !e! tag:yaml.org,2002:\n---\ng: {max: !e!float '.nan'}\n").unwrap_err();
        assert_eq!(e.path, "g.max");
        // Quoted text without the float tag stays text.
        assert!(chk("g: {max: '.nan', n: nan, i: inf, v: 1e300}\n").is_ok());
        assert!(chk("g: {a: '.nan', b: \".inf\", c: !!str '.nan', d: |-\n    .nan\n}\n").is_ok());
        assert!(chk("g: {max: !!float '0.5'}\n").is_ok());
    }

    #[test]
    fn alias_keys_count_as_the_text_they_name_and_complex_keys_are_refused() {
        let e = chk("requests: {&c cpu: \"64\", *c : \"1\"}\n").unwrap_err();
        assert_eq!((e.line, e.path.as_str()), (1, "requests.cpu"), "{e:?}");
        assert!(e.message.contains("duplicate key `cpu`"), "{}", e.message);
        let e = chk("a: &k cpu\nr:\n  cpu: 1\n  *k : 2\n").unwrap_err();
        assert_eq!((e.line, e.path.as_str()), (4, "r.cpu"), "{e:?}");
        assert!(chk("a: &k cpu\nr:\n  *k : 1\n  mem: 2\n").is_ok());
        for t in ["? [a, b]\n: 1\n", "{[a]: 1}\n", "a: &m {x: 1}\nb: {*m : 1}\n"] {
            assert!(chk(t).unwrap_err().message.contains("mapping key must be text"), "{t}");
        }
    }

    #[test]
    fn json_duplicate_keys_are_found_at_any_depth() {
        let e = check_json(r#"{"items": [{"a": 1}, {"r": {"gpu": "1", "gpu": "0"}}]}"#).unwrap_err();
        assert_eq!(e.path, "items[1].r.gpu");
        assert!(e.message.contains("duplicate key `gpu`"), "{}", e.message);
        let e = check_json("{\n \"a\": 1,\n \"a\": 2\n}").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(check_json(r#"{"a": {"x": 1}, "b": {"x": [1, {"x": 2}]}}"#).is_ok());
        // Syntax errors are the caller's parser's to report.
        assert!(check_json("{\"a\": ").is_ok());
    }

    #[test]
    fn snapshot_limits_bound_alias_expansion_not_size() {
        let many = format!("p: &p {{a: 1, b: [1, 2, 3]}}\nitems: [{}]\n", vec!["*p"; 10_001].join(", "));
        assert!(check(&many, &Limits::SNAPSHOT).unwrap_err().message.contains("aliases"));
        let wide = format!("p: &p [{}]\nitems: [{}]\n", vec!["1"; 1000].join(", "), vec!["*p"; 300].join(", "));
        assert!(check(&wide, &Limits::SNAPSHOT).unwrap_err().message.contains("expand to more than 200000"));
        let plain: String = (0..150_000).map(|i| format!("- k{i}\n")).collect();
        assert!(check(&plain, &Limits::SNAPSHOT).is_ok(), "no node limit without aliases");
        assert!(check(&plain, &Limits::DEFAULT).is_err());
    }

    #[test]
    fn alias_bombs_and_depth_are_bounded() {
        let mut t = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..9 {
            let prev = i - 1;
            t.push_str(&format!("a{i}: &a{i} [*a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}, *a{prev}]\n"));
        }
        let e = chk(&t).unwrap_err();
        assert!(e.message.contains("amplification"), "{}", e.message);
        let flow = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(chk(&flow).unwrap_err().message.contains("deeper"));
        let block: String = (0..500).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect();
        let e = chk(&block).unwrap_err();
        assert!(e.message.contains("deeper than 64") && e.line == 65, "{e:?}");
        let many = format!("a: &a x\nb: [{}]\n", vec!["*a"; 2000].join(", "));
        assert!(chk(&many).unwrap_err().message.contains("aliases"));
    }
}
