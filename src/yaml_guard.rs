//! The one reader of every YAML file bundlegate reads, and the guard that
//! judges it: [`read`] parses the text once (yaml-rust2's event parser), the
//! guard judges each event before the tree that serde then builds the model
//! from ([`from_node`]) is built from that same event. There is no second
//! parser to read a document differently from what was checked (libyaml,
//! under serde_yaml_ng, once read a LINE SEPARATOR as a line break the guard
//! did not see, an empty `|+` block and `[?---` in a flow list otherwise).
//! The guard exists because serde alone would keep the last of two equal
//! keys, expand aliases without a budget, and take `.nan`/`.inf` for floats
//! that every comparison then silently passes; it never expands an alias
//! itself and stops at the first problem.
//!
//! Readers: the bundle, pipeline and config files, cluster snapshots (the
//! item-at-a-time scan feeds its own events through a [`Guard`] and reads
//! each item with [`read`]), bundle detection, rendered manifests, publish's
//! rewrite. JSON (snapshots, CMP parameters, golden sets) takes serde_json
//! after [`check_json`]'s duplicate-key rule; a JSON file read whole goes
//! through [`json_from_str`] (reports, caches, the pod's artifact list).
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
    /// Text people review in a pull request: refuse bidirectional controls,
    /// which make the diff show another order than the one read.
    pub reviewed: bool,
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
        reviewed: true,
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
        reviewed: false,
    };
    /// JSON bundlegate wrote and reads back (reports, caches, the pod's
    /// artifact list) or GitHub wrote (the event): bounded by the reader
    /// that fetched it, not reviewed; keys still unique.
    pub(crate) const WRITTEN: Limits = Limits { max_bytes: usize::MAX, ..Limits::SNAPSHOT };
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
    /// Sequence: position of the next item.
    idx: usize,
}

impl Frame {
    fn new(is_map: bool, anchor: usize) -> Frame {
        Frame { is_map, size: 1, anchor, at_key: is_map, cur_key: None, keys: HashMap::new(), idx: 0 }
    }

    fn segment(&self) -> String {
        if self.is_map {
            let key = if self.at_key {
                None
            } else {
                self.cur_key.and_then(|p| self.keys.iter().find(|(_, at)| **at == p).map(|(k, _)| k.as_str()))
            };
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

/// A parser position as people count it: line and column from 1.
pub(crate) fn pos(m: &Marker) -> (usize, usize) {
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
/// a `%TAG` handle for the core schema): the parser resolves every handle,
/// `!!` included, to its prefix, so the full tag is what is compared.
fn is_float_tag(tag: &Option<Tag>) -> bool {
    tag_name(tag).as_deref() == Some("float")
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
            Event::Scalar(s, style, anchor, tag) => {
                if in_key {
                    self.key(s, mark)?;
                } else if self.limits.refuse_non_finite
                    && (*style == TScalarStyle::Plain || is_float_tag(tag))
                    && is_non_finite_scalar(s)
                {
                    let how = if *style == TScalarStyle::Plain {
                        "quote it if it is meant as text"
                    } else {
                        "a `!!float` tag reads any style as a number"
                    };
                    return self.err(mark, format!("`{s}` is not a finite number ({how})"));
                }
                (1, *anchor, Some(s))
            }
            Event::Alias(id) => {
                self.aliases += 1;
                if self.aliases > self.limits.max_aliases {
                    return self.err(
                        mark,
                        format!(
                            "more than {} aliases (`*name`): refusing alias amplification",
                            self.limits.max_aliases
                        ),
                    );
                }
                let (size, key) = match self.anchors.get(id) {
                    Some(a) => (a.size, a.text.clone()),
                    None => (1, None),
                };
                if in_key {
                    match key {
                        Some(k) => self.key(&k, mark)?,
                        None => {
                            return self
                                .err(mark, "a mapping key must be text, not an alias of a mapping or list".into())
                        }
                    }
                }
                self.alias_nodes = self.alias_nodes.saturating_add(size);
                if self.alias_nodes > self.limits.max_alias_nodes {
                    return self.err(
                        mark,
                        format!(
                            "aliases expand to more than {} nodes: refusing alias amplification",
                            self.limits.max_alias_nodes
                        ),
                    );
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
            return self.err(
                mark,
                format!(
                    "expands to more than {} nodes (aliases included): refusing alias amplification",
                    self.limits.max_nodes
                ),
            );
        }
        if let Some(f) = self.stack.last_mut() {
            f.size = f.size.saturating_add(size);
            // A mapping alternates key and value; a sequence counts its items
            // (the `[i]` of a path).
            if f.is_map {
                f.at_key = !f.at_key;
            } else {
                f.idx += 1;
            }
        }
        Ok(())
    }
}

/// Characters YAML readers do not read alike: libyaml (YAML 1.1: kubectl's
/// and PyYAML's rules, and the model's reader before there was one reader)
/// breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR, yaml-rust2
/// (YAML 1.2) does not, so `name: x<U+2028>image: other` is one scalar to
/// one and a second key to the other. A byte-order mark anywhere but the
/// start is the same kind of trap, and characters outside YAML's printable
/// set (C0 and C1 controls but tab, LF and CR; DEL; U+FFFE/U+FFFF) are
/// refused by libyaml and read by yaml-rust2. Refused wherever they appear,
/// quoted or not: no bundle, pipeline or snapshot needs them, and escapes
/// (`"\u2028"`) still work. A CR not followed by LF is the same trap in
/// ASCII: every YAML reader breaks the line there, git and GitHub show one
/// line, so `# note<CR>verifyOnStart: "off"` hides a key from review; CRLF
/// line endings are read as before.
pub(crate) fn check_chars(text: &str) -> Result<(), GuardError> {
    let (mut line, mut col) = (1usize, 1usize);
    for (i, c) in text.char_indices() {
        if c == '\r' && !text[i + 1..].starts_with('\n') {
            return Err(GuardError {
                line,
                column: col,
                path: String::new(),
                message: "a lone CARRIAGE RETURN (U+000D, not followed by a line feed): YAML breaks the line there, git and GitHub show one line, so what is reviewed may not be what is read; save the file with LF or CRLF line endings, or write it as an escape in a double-quoted string (\"\\r\")".to_string(),
            });
        }
        let what = match c {
            '\u{85}' => Some("NEXT LINE (U+0085): YAML readers disagree on whether it breaks the line".to_string()),
            '\u{2028}' => Some("LINE SEPARATOR (U+2028): YAML readers disagree on whether it breaks the line".to_string()),
            '\u{2029}' => Some("PARAGRAPH SEPARATOR (U+2029): YAML readers disagree on whether it breaks the line".to_string()),
            '\u{feff}' if i > 0 => Some("a byte-order mark (U+FEFF) after the start: YAML readers disagree on it".to_string()),
            '\t' | '\n' | '\r' => None,
            c if c.is_control() || c == '\u{fffe}' || c == '\u{ffff}' => Some(format!("a control character (U+{:04X}) outside YAML's printable set: some YAML readers refuse it, others read it", c as u32)),
            _ => None,
        };
        if let Some(what) = what {
            return Err(GuardError {
                line,
                column: col,
                path: String::new(),
                message: format!("{what}, so what is reviewed may not be what is read; write it as an escape in a double-quoted string (\"\\u{:04X}\") or remove it", c as u32),
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

/// Read every document of `text` with one parser whose every event the
/// guard judges before the tree is built from it: what the guard passed is,
/// by construction, what the model is deserialized from (there is no second
/// reader to disagree on a line break, a block scalar or a flow key). A
/// syntax error is an error here, with its position and field path.
pub(crate) fn read(text: &str, limits: &Limits) -> Result<Vec<Node>, GuardError> {
    if text.len() > limits.max_bytes {
        return Err(GuardError {
            line: 1,
            column: 1,
            path: String::new(),
            message: format!("the text is {} bytes, over the limit of {} bytes", text.len(), limits.max_bytes),
        });
    }
    // One reader inside, but a reviewer's screen and YAML 1.1 tools
    // (kubectl, PyYAML) still break lines at these: refused as before.
    check_chars(text)?;
    // A bidi control is reported once the parse has passed it, with the
    // field path of the node it sits in.
    let mut bidi = if limits.reviewed { check_bidi(text).err() } else { None };
    let mut parser = Parser::new_from_str(text);
    let mut guard = Guard::new(limits);
    let mut tree = Builder::default();
    loop {
        let (ev, mark) = parser.next_token().map_err(|e| {
            let (line, column) = pos(e.marker());
            bidi.clone().unwrap_or(GuardError {
                line,
                column,
                path: path_of(&guard.stack),
                message: format!("invalid YAML: {}", e.info()),
            })
        })?;
        if let Some(b) = bidi.as_mut() {
            if pos(&mark) > (b.line, b.column) || matches!(ev, Event::StreamEnd) {
                return Err(b.clone());
            }
            b.path = path_of(&guard.stack);
        }
        if matches!(ev, Event::StreamEnd) {
            return Ok(tree.docs);
        }
        guard.event(&ev, &mark)?;
        tree.event(ev, &mark).map_err(|message| {
            let (line, column) = pos(&mark);
            GuardError { line, column, path: path_of(&guard.stack), message }
        })?;
    }
}

/// The scalar values of `keys` at the top level of the first document,
/// read only as far as they are: the one parser, every event judged by the
/// guard as in [`read`], stopped once each key has been seen (`apiVersion`
/// and `kind` open a bundle, so a few events instead of the whole file: a
/// sharded audit sniffs every file of the tree). A key missing, or whose
/// value is not a scalar (or the first document is not a mapping), is
/// `None`. `None` as a whole: the text up to there is not YAML the guard
/// passes. The characters are not judged here: the loader does that.
pub(crate) fn top_level_scalars<const N: usize>(
    text: &str,
    limits: &Limits,
    keys: [&str; N],
) -> Option<[Option<String>; N]> {
    let mut parser = Parser::new_from_str(text);
    let mut guard = Guard::new(limits);
    let mut found: [Option<String>; N] = std::array::from_fn(|_| None);
    let mut seen = [false; N];
    // Depth 1: inside the first document's mapping; `key`: the top-level
    // key whose value comes next (None: a key comes next).
    let (mut depth, mut key, mut expect_value) = (0usize, None::<usize>, false);
    loop {
        let (ev, mark) = parser.next_token().ok()?;
        if matches!(ev, Event::StreamEnd) {
            return (depth == 0).then_some(found);
        }
        guard.event(&ev, &mark).ok()?;
        match &ev {
            Event::MappingStart(..) | Event::SequenceStart(..) => {
                if depth == 0 && !matches!(ev, Event::MappingStart(..)) {
                    return Some(found);
                }
                depth += 1;
                if depth == 1 {
                    continue;
                }
            }
            Event::MappingEnd | Event::SequenceEnd => {
                depth -= 1;
                if depth == 0 {
                    // The first document's mapping is read whole.
                    return Some(found);
                }
            }
            Event::Scalar(text, ..) if depth == 1 => {
                if expect_value {
                    if let Some(i) = key {
                        found[i] = Some(text.clone());
                    }
                } else {
                    let i = keys.iter().position(|k| k == text);
                    key = i.filter(|&i| !seen[i]);
                    if let Some(i) = key {
                        seen[i] = true;
                    }
                    expect_value = true;
                    continue;
                }
            }
            Event::Scalar(..) | Event::Alias(..) if depth == 0 => return Some(found),
            _ => {}
        }
        // A whole node ended at depth 1 (a scalar, an alias, a nested
        // collection closed): it was a key or a value.
        if depth == 1 && !matches!(ev, Event::MappingStart(..) | Event::SequenceStart(..)) {
            if expect_value {
                expect_value = false;
                key = None;
                if seen.iter().all(|s| *s) {
                    return Some(found);
                }
            } else {
                expect_value = true;
            }
        }
    }
}

/// Bidirectional formatting controls (U+202A–U+202E, U+2066–U+2069, and
/// the marks U+200E, U+200F, U+061C): a reviewer's screen reorders the text
/// around them, so the reviewed line is not the line read ("Trojan Source").
/// Escapes in a double-quoted string (`"\u202E"`) still work.
fn check_bidi(text: &str) -> Result<(), GuardError> {
    for (n, l) in text.split('\n').enumerate() {
        if let Some((col, c)) = l.chars().enumerate().find(|(_, c)| is_bidi_control(*c)) {
            return Err(GuardError {
                line: n + 1,
                column: col + 1,
                path: String::new(),
                message: format!("a bidirectional control (U+{:04X}) makes a reviewer see this line in another order than it is read; write it as an escape in a double-quoted string (\"\\u{:04X}\") or remove it", c as u32, c as u32),
            });
        }
    }
    Ok(())
}

/// The characters [`check_bidi`] refuses as written.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{61c}')
}

/// Characters a writer must escape in a double-quoted scalar: controls (C0,
/// DEL, C1), Unicode line and paragraph separators, the byte-order mark and
/// non-characters, which YAML does not allow as written or reads as a line
/// break, and the bidi controls a reviewed file refuses.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}') || is_bidi_control(c)
}

/// [`read`] for callers that only need the verdict.
#[cfg(test)]
pub(crate) fn check(text: &str, limits: &Limits) -> Result<(), GuardError> {
    read(text, limits).map(drop)
}

/// One node of a YAML document as the guard's parser read it, with the
/// position of its first event. An alias is a copy of what it names (the
/// guard bounded what aliases add before any copy is made).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub line: usize,
    pub column: usize,
    pub kind: NodeKind,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeKind {
    /// `plain`: written without quotes or block indicator; only such a
    /// scalar resolves to null, a boolean or a number. `tag`: `str`, `int`,
    /// `float`, `bool`, `null` for the core schema's, else as written.
    Scalar {
        text: String,
        plain: bool,
        tag: Option<String>,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

/// The core schema's name for a tag (`!!int`, `!<tag:yaml.org,2002:int>`,
/// a `%TAG` handle), or the tag as written. The parser resolves every
/// handle, `!!` included, to its prefix.
fn tag_name(tag: &Option<Tag>) -> Option<String> {
    let t = tag.as_ref()?;
    let full = format!("{}{}", t.handle, t.suffix);
    Some(full.strip_prefix("tag:yaml.org,2002:").map(str::to_string).unwrap_or(full))
}

/// Builds the documents from the events the guard has just judged.
#[derive(Default)]
struct Builder {
    /// Open collections: the node, its anchor, and a mapping's pending key.
    stack: Vec<(Node, usize, Option<Node>)>,
    anchors: HashMap<usize, Node>,
    docs: Vec<Node>,
}

impl Builder {
    fn finish(&mut self, n: Node, anchor: usize) {
        if anchor != 0 {
            self.anchors.insert(anchor, n.clone());
        }
        match self.stack.last_mut() {
            Some((Node { kind: NodeKind::Seq(items), .. }, _, _)) => items.push(n),
            Some((Node { kind: NodeKind::Map(entries), .. }, _, key)) => match key.take() {
                None => *key = Some(n),
                Some(k) => entries.push((k, n)),
            },
            _ => self.docs.push(n),
        }
    }

    fn open(
        &mut self,
        kind: NodeKind,
        anchor: usize,
        tag: &Option<Tag>,
        want: &str,
        (line, column): (usize, usize),
    ) -> Result<(), String> {
        if let Some(t) = tag_name(tag).filter(|t| t != want) {
            return Err(format!(
                "the tag `{t}` on a collection: bundlegate reads plain YAML (tags of the core schema only)"
            ));
        }
        self.stack.push((Node { line, column, kind }, anchor, None));
        Ok(())
    }

    fn event(&mut self, ev: Event, mark: &Marker) -> Result<(), String> {
        let (line, column) = pos(mark);
        match ev {
            Event::Scalar(text, style, anchor, tag) => {
                let kind = NodeKind::Scalar { text, plain: style == TScalarStyle::Plain, tag: tag_name(&tag) };
                self.finish(Node { line, column, kind }, anchor);
            }
            Event::SequenceStart(anchor, tag) => {
                self.open(NodeKind::Seq(Vec::new()), anchor, &tag, "seq", (line, column))?
            }
            Event::MappingStart(anchor, tag) => {
                self.open(NodeKind::Map(Vec::new()), anchor, &tag, "map", (line, column))?
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((n, anchor, _)) = self.stack.pop() {
                    self.finish(n, anchor);
                }
            }
            Event::Alias(id) => {
                let n = self.anchors.get(&id).cloned().ok_or("an alias to an anchor not defined before it")?;
                self.finish(n, 0);
            }
            _ => {}
        }
        Ok(())
    }
}

/// Deserialize `T` from a node [`read`] built, with the field path of an
/// error (`spec.serving.port`) and the position of the node it is about.
pub(crate) fn from_node<T: serde::de::DeserializeOwned>(n: &Node) -> Result<T, (String, DeError)> {
    serde_path_to_error::deserialize(NodeDe(n)).map_err(|e| {
        let p = e.path().to_string();
        let path = if p == "." || p == "?" { String::new() } else { p.trim_end_matches(".?").to_string() };
        (path, e.into_inner())
    })
}

/// [`read`] then [`from_node`] for a text that must hold exactly one
/// document: `file:line:column: field: message` on any failure.
pub(crate) fn from_str<T: serde::de::DeserializeOwned>(file: &str, text: &str, limits: &Limits) -> anyhow::Result<T> {
    from_str_with_tree(file, text, limits).map(|(t, _)| t)
}

/// [`from_str`], keeping the document's tree (its positions) for messages
/// about fields the model accepted but a later check refuses.
pub(crate) fn from_str_with_tree<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    limits: &Limits,
) -> anyhow::Result<(T, Node)> {
    let mut docs =
        read(text, limits).map_err(|g| anyhow::anyhow!("{file}:{}:{}: {}", g.line, g.column, g.at_path()))?;
    if docs.len() != 1 {
        anyhow::bail!("{file}: expected exactly one YAML document, found {}", docs.len());
    }
    let doc = docs.remove(0);
    let t = from_node(&doc).map_err(|(path, e)| {
        let (line, column) = e.at.unwrap_or((doc.line, doc.column));
        let field = if path.is_empty() { String::new() } else { format!("{path}: ") };
        anyhow::anyhow!("{file}:{line}:{column}: {field}{}", e.msg)
    })?;
    Ok((t, doc))
}

/// A deserialization error and where (line, column), when known.
#[derive(Debug)]
pub(crate) struct DeError {
    pub msg: String,
    pub at: Option<(usize, usize)>,
}

impl std::fmt::Display for DeError {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for DeError {}

impl serde::de::Error for DeError {
    fn custom<M: std::fmt::Display>(msg: M) -> Self {
        DeError { msg: msg.to_string(), at: None }
    }
}

/// Where an error from inside `n` happened, unless a deeper node said so.
fn located(n: &Node) -> impl FnOnce(DeError) -> DeError + '_ {
    move |mut e| {
        e.at.get_or_insert((n.line, n.column));
        e
    }
}

/// Integers as the core schema writes them (`-12`, `+7`, `0x1F`, `0o17`,
/// `0b101`); a leading zero before decimal digits is text (`0777`).
fn parse_int(s: &str) -> Option<i128> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = [("0x", 16), ("0o", 8), ("0b", 2)]
        .iter()
        .find_map(|(p, r)| rest.strip_prefix(p).map(|d| (*r, d)))
        .unwrap_or((10, rest));
    let leading_zero = radix == 10 && digits.len() > 1 && digits.starts_with('0');
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) || leading_zero {
        return None;
    }
    i128::from_str_radix(digits, radix).ok().map(|v| if neg { -v } else { v })
}

/// Floats: `.inf`/`.nan` in the core schema's spellings, else a finite
/// decimal number (non-finite ones are the guard's to refuse).
fn parse_float(s: &str) -> Option<f64> {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let neg = s.starts_with('-');
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return Some(if neg { f64::NEG_INFINITY } else { f64::INFINITY });
    }
    if matches!(s, ".nan" | ".NaN" | ".NAN") {
        return Some(f64::NAN);
    }
    // Rust's parser takes one sign, then digits or a point, or the words
    // inf/infinity/nan (not finite, so not taken here): a finite result is a
    // YAML number but for a leading zero, which the core schema leaves text.
    let leading_zero =
        unsigned.len() > 1 && unsigned.starts_with('0') && unsigned[1..].bytes().all(|b| b.is_ascii_digit());
    s.parse::<f64>().ok().filter(|f| !leading_zero && f.is_finite())
}

fn visit_int<'de, V: serde::de::Visitor<'de>>(v: V, i: i128) -> Result<V::Value, DeError> {
    if let Ok(u) = u64::try_from(i) {
        v.visit_u64(u)
    } else if let Ok(s) = i64::try_from(i) {
        v.visit_i64(s)
    } else {
        v.visit_i128(i)
    }
}

/// A scalar as data: plain text resolves like the core schema (null,
/// booleans, integers, floats, else a string); quoted and block text is a
/// string; a core tag forces its type.
fn visit_scalar<'de, V: serde::de::Visitor<'de>>(
    text: &str,
    plain: bool,
    tag: Option<&str>,
    v: V,
) -> Result<V::Value, DeError> {
    use serde::de::Error;
    let is_null = is_null_text(text);
    let boolean = match text {
        "true" | "True" | "TRUE" => Some(true),
        "false" | "False" | "FALSE" => Some(false),
        _ => None,
    };
    let wrong = |t: &str| DeError::custom(format!("`{text}` is not a valid `!!{t}`"));
    match tag {
        Some("str") => v.visit_str(text),
        Some("null") if is_null => v.visit_unit(),
        Some("bool") => v.visit_bool(boolean.ok_or_else(|| wrong("bool"))?),
        Some("int") => visit_int(v, parse_int(text).ok_or_else(|| wrong("int"))?),
        Some("float") => {
            v.visit_f64(parse_int(text).map(|i| i as f64).or_else(|| parse_float(text)).ok_or_else(|| wrong("float"))?)
        }
        Some(t) => {
            Err(DeError::custom(format!("the tag `{t}`: bundlegate reads plain YAML (tags of the core schema only)")))
        }
        None if !plain => v.visit_str(text),
        None if is_null => v.visit_unit(),
        None => match (boolean, parse_int(text), parse_float(text)) {
            (Some(b), _, _) => v.visit_bool(b),
            (_, Some(i), _) => visit_int(v, i),
            (_, _, Some(f)) => v.visit_f64(f),
            _ => v.visit_str(text),
        },
    }
}

/// The core schema's null as plain text.
fn is_null_text(text: &str) -> bool {
    text.is_empty() || matches!(text, "~" | "null" | "Null" | "NULL")
}

/// serde's view of a [`Node`]. A field that wants text takes any scalar's
/// text as written (`version: 1.10` is `"1.10"`, as with the YAML readers
/// bundlegate used before); anything else gets the resolved value.
pub(crate) struct NodeDe<'a>(pub &'a Node);

impl<'de> serde::Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        let n = self.0;
        match &n.kind {
            NodeKind::Scalar { text, plain, tag } => visit_scalar(text, *plain, tag.as_deref(), v),
            NodeKind::Seq(items) => v.visit_seq(serde::de::value::SeqDeserializer::new(items.iter().map(NodeDe))),
            NodeKind::Map(entries) => {
                v.visit_map(serde::de::value::MapDeserializer::new(entries.iter().map(|(k, x)| (NodeDe(k), NodeDe(x)))))
            }
        }
        .map_err(located(n))
    }

    fn deserialize_str<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            NodeKind::Scalar { text, tag, .. } if tag.as_deref().is_none_or(is_core) => {
                v.visit_str(text).map_err(located(self.0))
            }
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_string<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_identifier<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        self.deserialize_str(v)
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        match &self.0.kind {
            NodeKind::Scalar { text, plain: true, tag: None } if is_null_text(text) => v.visit_none(),
            NodeKind::Scalar { tag: Some(t), .. } if t == "null" => v.visit_none(),
            _ => v.visit_some(self),
        }
    }

    /// A struct is a mapping only (serde's derive would also take a list by
    /// position, which no bundlegate file means).
    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        match &self.0.kind {
            NodeKind::Seq(_) => {
                Err(serde::de::Error::invalid_type(serde::de::Unexpected::Seq, &v)).map_err(located(self.0))
            }
            _ => self.deserialize_any(v),
        }
    }

    fn deserialize_newtype_struct<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        v: V,
    ) -> Result<V::Value, DeError> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: serde::de::Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, DeError> {
        use serde::de::IntoDeserializer;
        let n = self.0;
        match &n.kind {
            NodeKind::Scalar { text, .. } => v.visit_enum(text.as_str().into_deserializer()),
            NodeKind::Map(entries) if entries.len() == 1 => v.visit_enum(serde::de::value::MapAccessDeserializer::new(
                serde::de::value::MapDeserializer::new(entries.iter().map(|(k, x)| (NodeDe(k), NodeDe(x)))),
            )),
            _ => {
                Err(serde::de::Error::custom("expected a variant name, or a mapping of one variant name to its value"))
            }
        }
        .map_err(located(n))
    }

    fn deserialize_ignored_any<V: serde::de::Visitor<'de>>(self, v: V) -> Result<V::Value, DeError> {
        v.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char bytes byte_buf unit unit_struct seq tuple tuple_struct map
    }
}

impl<'de> serde::de::IntoDeserializer<'de, DeError> for NodeDe<'_> {
    type Deserializer = Self;
    fn into_deserializer(self) -> Self {
        self
    }
}

fn is_core(tag: &str) -> bool {
    matches!(tag, "str" | "int" | "float" | "bool" | "null")
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
            Some((path, message)) => {
                Err(GuardError { line: e.line().max(1), column: e.column().max(1), path, message })
            }
            None => Ok(()),
        },
    }
}

/// The one reader of a JSON file: the text within `limits.max_bytes`, no
/// key given twice at any depth, and for text people review
/// (`limits.reviewed`) neither the characters [`check_chars`] refuses nor a
/// bidi control: JSON readers agree on them, a reviewer's screen does not.
/// Every failure is `file:line:column: message`.
pub(crate) fn json_from_str<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    limits: &Limits,
) -> anyhow::Result<T> {
    let at = |g: GuardError| anyhow::anyhow!("{file}:{}:{}: {}", g.line, g.column, g.at_path());
    if text.len() > limits.max_bytes {
        anyhow::bail!("{file}: the text is {} bytes, over the limit of {} bytes", text.len(), limits.max_bytes);
    }
    if limits.reviewed {
        check_chars(text).map_err(at)?;
        check_bidi(text).map_err(at)?;
    }
    check_json(text).map_err(at)?;
    crate::serde_strict::from_json_str(text).map_err(|e| anyhow::anyhow!("{file}:{}:{}: {e}", e.line(), e.column()))
}

/// [`json_from_str`] over bytes that must be UTF-8.
pub(crate) fn json_from_slice<T: serde::de::DeserializeOwned>(
    file: &str,
    bytes: &[u8],
    limits: &Limits,
) -> anyhow::Result<T> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| anyhow::anyhow!("{file}: not UTF-8 text (invalid byte at offset {})", e.valid_up_to()))?;
    json_from_str(file, text, limits)
}

/// [`check_chars`] and the bidi rule for reviewed text read line by line
/// by another parser (the golden set's JSON lines).
pub(crate) fn check_reviewed_chars(text: &str) -> Result<(), GuardError> {
    check_chars(text)?;
    check_bidi(text)
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
                let message =
                    format!("duplicate key `{k}` (JSON parsers keep one of the values, so the file is ambiguous)");
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

// ---- Writing text every reader reads back (the one writer in `manifests`, publish's editor) ----

/// `s` as a double-quoted scalar, which YAML and JSON read back alike
/// (the one writer's, and publish's editor's, quoting).
pub(crate) fn double_quoted(s: &str) -> String {
    escape_unsafe(serde_json::to_string(s).expect("string serializes"))
}

/// JSON text with the characters serde_json leaves raw but YAML readers or
/// a reviewer's screen take otherwise (DEL and C1 controls, line breaks YAML
/// 1.1 readers break at, a BOM, non-characters, bidirectional controls)
/// written as `\uXXXX`, which JSON and YAML double-quoted strings both read
/// back as the same character.
pub(crate) fn escape_unsafe(json: String) -> String {
    let unsafe_char = needs_escape;
    if !json.contains(unsafe_char) {
        return json;
    }
    json.chars().map(|c| if unsafe_char(c) { format!("\\u{:04X}", c as u32) } else { c.to_string() }).collect()
}

/// Whether `s` written plain reads back as this string under YAML 1.2 and
/// YAML 1.1 alike.
pub(crate) fn plain_reads_as_string(s: &str) -> bool {
    matches!(yaml_rust2::Yaml::from_str(s), yaml_rust2::Yaml::String(_)) && !yaml11_non_string(s)
}

/// Plain scalars a YAML 1.1 reader resolves to something other than a
/// string: the YAML 1.1 type repository's expressions for bool, null, int
/// (binary, octal, hex, sexagesimal), float, timestamp, merge and value as
/// PyYAML applies them, and go-yaml v2's own rules (under sigs.k8s.io/yaml:
/// Kubernetes clients): Go's base-0 integers (`0X1F`, `0O17`, `0B1`) after
/// dropping `_`, its float syntax, and dates with one-digit months and days
/// (`2001-1-2`). Over-matching only quotes more.
pub(crate) fn yaml11_non_string(s: &str) -> bool {
    static RES: std::sync::LazyLock<Vec<regex::Regex>> = std::sync::LazyLock::new(|| {
        [
            // YAML 1.1 (yaml.org/type), as PyYAML resolves them.
            r"^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$",
            r"^(~|null|Null|NULL|)$",
            r"^[-+]?(0b[0-1_]+|0[0-7_]+|(0|[1-9][0-9_]*)|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$",
            r"^([-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+]?[0-9]+)?|[-+]?[0-9][0-9_]*([eE][-+]?[0-9]+)|[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$",
            r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(([Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?)?$",
            r"^(<<|=)$",
        ]
        .iter()
        .map(|r| regex::Regex::new(r).expect("valid"))
        .collect()
    });
    static GO: std::sync::LazyLock<[regex::Regex; 2]> = std::sync::LazyLock::new(|| {
        [
            // strconv.ParseInt(s, 0, 64) and ParseUint, after go-yaml drops `_`.
            regex::Regex::new(r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$").expect("valid"),
            // go-yaml's yamlStyleFloat, and ParseFloat on a leading `.`.
            regex::Regex::new(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$").expect("valid"),
        ]
    });
    let go = s.replace('_', "");
    RES.iter().any(|r| r.is_match(s))
        || (s.starts_with(|c: char| c.is_ascii_digit() || "+-.".contains(c)) && GO.iter().any(|r| r.is_match(&go)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sniff reads the top-level keys as `read` would, stopping once
    /// both are seen: text past them (unclosed here) is never parsed; what
    /// `read` refuses before them is refused too.
    #[test]
    fn top_level_scalars_read_only_as_far_as_the_keys() {
        let keys = ["apiVersion", "kind"];
        let l = Limits::DEFAULT;
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            top_level_scalars("apiVersion: a/v1\nkind: K\nspec: [unclosed\n", &l, keys),
            Some([s("a/v1"), s("K")])
        );
        assert_eq!(top_level_scalars("metadata: {a: [1, {kind: X}]}\nkind: K\n", &l, keys), Some([None, s("K")]));
        assert_eq!(top_level_scalars("kind: [K]\napiVersion: v\n", &l, keys), Some([s("v"), None]));
        let complex = "? [a]\n: b\nkind: K\n";
        assert_eq!(
            top_level_scalars(complex, &l, keys).is_none(),
            read(complex, &l).is_err(),
            "as `read` judges a complex key"
        );
        assert_eq!(top_level_scalars("- kind: K\n", &l, keys), Some([None, None]));
        assert_eq!(top_level_scalars("", &l, keys), Some([None, None]));
        assert_eq!(top_level_scalars("kind: K\nkind: L\napiVersion: v\n", &l, keys), None, "a duplicate key");
        assert_eq!(top_level_scalars("kind: [unclosed\n", &l, keys), None);
        // The second document is never read.
        assert_eq!(top_level_scalars("kind: K\n---\nkind: [\n", &l, keys), Some([None, s("K")]));
    }

    /// The guard's reader (yaml-rust2) as plain JSON data, for comparing
    /// with what serde_yaml_ng builds the model from.
    pub(super) fn guard_reader_value(text: &str) -> Option<serde_json::Value> {
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
                            Yaml::Null => String::new(),
                            Yaml::Real(r) => r.clone(),
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

    /// Characters and fragments that YAML readers have read differently:
    /// line breaks outside ASCII, tabs, CR, escapes (`\N` is NEL), block
    /// scalar headers with an indentation indicator, flow indicators, `?`
    /// keys, document markers, directives, anchors, tags, merge keys,
    /// bidi controls.
    const READER_TRAPS: &[&str] = &[
        "\u{85}",
        "\u{2028}",
        "\u{2029}",
        "\u{feff}",
        "\t",
        " \t",
        "\r",
        "\r\n",
        "\u{0}",
        "\u{1b}",
        "\u{7f}",
        "\u{a0}",
        "\u{200b}",
        "\u{202e}",
        "\u{2066}",
        "\u{c}",
        "\u{b}",
        "\\",
        "\\\n",
        "\"",
        "'",
        "#",
        " #",
        ": ",
        ":",
        "- ",
        "? ",
        "|",
        ">",
        "|-\n",
        "|2\n",
        "---\n",
        "...\n",
        "&a ",
        "*a",
        "!!str ",
        "%YAML 1.1\n---\n",
        "\n ",
        "\n\t",
        "{",
        "}",
        "[",
        "]",
        ",",
        "\\N",
        "\\_",
        "\\L",
        "\\P",
        "\\x85",
        "\\/",
        "\\u2028",
        "\\e",
        "\\ ",
        "\\\t",
        "\n",
        "  ",
        "x",
        "!",
        "%",
        "@",
        "`",
        "<<: ",
        "\n\n",
        "\n  \n",
        "image: unreviewed\n",
        "\u{2028}image: unreviewed",
        "\u{85}  image: unreviewed",
    ];

    /// What bundlegate builds a model from: [`read`] then serde, as
    /// [`from_node`] does for every typed input.
    fn model_value(text: &str) -> Option<serde_json::Value> {
        let docs = read(text, &Limits::DEFAULT).ok()?;
        from_node(docs.first()?).ok()
    }

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(30_000))]

        /// One document, one meaning: whatever the guard passes, the model
        /// holds exactly what an independent loader over the guard's parser
        /// (yaml-rust2's YamlLoader) reads. With serde_yaml_ng (libyaml) as
        /// the model's reader this failed: U+2028 made a second key the
        /// guard never saw; `[?---\n "--a"]` and an empty `|2` block scalar
        /// were other values to libyaml than to the guard.
        #[test]
        fn what_the_guard_passes_both_readers_read_alike(
            traps in proptest::collection::vec((proptest::sample::select(READER_TRAPS), 0usize..240), 1..8),
        ) {
            let mut text = String::from("apiVersion: v1\nmetadata:\n  name: llm\nspec:\n  image: reviewed\n  args: [\"--a\", \"b c\"]\n  note: \"quoted text\"\n  s: 'single q'\n  lit: |\n    line one\n    line two\n  fold: >-\n    a\n    b\n  list:\n    - x\n    - y\n");
            for (trap, at) in traps {
                let mut at = at.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.insert_str(at, trap);
            }
            if let Some(model) = model_value(&text) {
                let guarded = guard_reader_value(&text);
                proptest::prop_assert_eq!(Some(&model), guarded.as_ref(), "the readers disagree on {:?}", text);
            }
        }
    }

    /// Value forms whose reading hinges on rules YAML readers implement
    /// differently: block scalar headers (indentation indicator, chomping)
    /// with blank and more-indented lines, `?` entries in flow collections.
    const FORMS: &[&str] = &[
        "|",
        "|-",
        "|+",
        "|2",
        "|2-",
        "|1+",
        ">",
        ">-",
        ">2",
        "[? a, b]",
        "[?x, y]",
        "[a: b]",
        "{? a}",
        "[a, ? b : c]",
        "[?---",
        "\"a",
        "'a",
        "x",
    ];
    const BODY: &[&str] = &["", " ", "  x", "   y", "    z", "\t", "  #c", "  - q", " \"b\"]", "  ]", "  c]", "'"];

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(20_000))]

        /// The same property over whole values built from [`FORMS`] and
        /// [`BODY`] lines (libyaml read `k: |2` with nothing after it as ""
        /// and the guard's parser as "\n").
        #[test]
        fn block_and_flow_forms_read_as_the_guard_read_them(
            entries in proptest::collection::vec((proptest::sample::select(FORMS), proptest::collection::vec(proptest::sample::select(BODY), 0..4)), 1..4),
        ) {
            let mut text = String::new();
            for (i, (form, body)) in entries.iter().enumerate() {
                text.push_str(&format!("k{i}: {form}\n"));
                for l in body {
                    text.push_str(l);
                    text.push('\n');
                }
            }
            if let Some(model) = model_value(&text) {
                let guarded = guard_reader_value(&text);
                proptest::prop_assert_eq!(Some(&model), guarded.as_ref(), "the readers disagree on {:?}", text);
            }
        }
    }

    fn chk(t: &str) -> Result<(), GuardError> {
        check(t, &Limits::DEFAULT)
    }

    /// A scalar as data: plain text resolves as the core schema says, quoted
    /// text stays text, a core tag forces its type (and refuses text that is
    /// not of it), any other tag is refused; a field that wants text takes
    /// the text as written; null words are none only when plain or tagged.
    #[test]
    fn scalars_resolve_by_schema_style_tag_and_the_field_asked() {
        let v = |t: &str| {
            from_str::<serde_json::Value>("t.yaml", &format!("v: {t}\n"), &Limits::DEFAULT).map(|v| v["v"].clone())
        };
        for (t, want) in [
            ("", serde_json::json!(null)),
            ("~", serde_json::json!(null)),
            ("null", serde_json::json!(null)),
            ("Null", serde_json::json!(null)),
            ("NULL", serde_json::json!(null)),
            ("nULL", serde_json::json!("nULL")),
            ("True", serde_json::json!(true)),
            ("FALSE", serde_json::json!(false)),
            ("tRUE", serde_json::json!("tRUE")),
            ("yes", serde_json::json!("yes")),
            ("-3", serde_json::json!(-3)),
            ("2.5", serde_json::json!(2.5)),
            ("'1'", serde_json::json!("1")),
            ("\"true\"", serde_json::json!("true")),
            ("'~'", serde_json::json!("~")),
            ("!!str 1", serde_json::json!("1")),
            ("!!null ~", serde_json::json!(null)),
            ("!!bool false", serde_json::json!(false)),
            ("!!int '0x10'", serde_json::json!(16)),
            ("!!float 3", serde_json::json!(3.0)),
            ("!!float '2.5'", serde_json::json!(2.5)),
            ("|-\n  null", serde_json::json!("null")),
            ("18446744073709551615", serde_json::json!(u64::MAX)),
            ("-9223372036854775808", serde_json::json!(i64::MIN)),
        ] {
            assert_eq!(v(t).unwrap(), want, "{t}");
        }
        for (t, why) in [
            ("!!bool yes", "`yes` is not a valid `!!bool`"),
            ("!!int 1.5", "`1.5` is not a valid `!!int`"),
            ("!!float x", "`x` is not a valid `!!float`"),
            ("!!null x", "the tag `null`"),
            ("!local x", "the tag `!local`"),
        ] {
            let e = v(t).unwrap_err().to_string();
            assert!(
                e.contains(why) && e.starts_with(&format!("t.yaml:1:{}: v: ", 4 + t.find(' ').map_or(0, |i| i + 1))),
                "{t}: {e}"
            );
        }
        // Beyond 64 bits the integer is offered as such, which JSON refuses.
        assert!(v("18446744073709551616").unwrap_err().to_string().contains("out of range"));
        #[derive(Debug, PartialEq, serde::Deserialize)]
        enum E {
            A,
            B(u8),
        }
        #[derive(Debug, PartialEq, serde::Deserialize)]
        struct S {
            s: String,
            o: Option<String>,
            e: Vec<E>,
        }
        let s = |t: &str| from_str::<S>("s.yaml", t, &Limits::DEFAULT);
        assert_eq!(
            s("s: 1.10\no: ~\ne: [A, {B: 2}]\n").unwrap(),
            S { s: "1.10".into(), o: None, e: vec![E::A, E::B(2)] }
        );
        assert_eq!(s("s: !!str true\no: '~'\ne: []\n").unwrap().o.as_deref(), Some("~"));
        assert_eq!(s("s: x\no: !!null null\ne: []\n").unwrap().o, None);
        assert_eq!(s("s: x\no: !!str null\ne: []\n").unwrap().o.as_deref(), Some("null"));
        assert_eq!(
            s("s: !!float 1.10\no: !!int 7\ne: []\n").unwrap(),
            S { s: "1.10".into(), o: Some("7".into()), e: vec![] }
        );
        assert_eq!(s("s: x\no: null\ne: []\n").unwrap().o, None);
        let e = s("s: !local x\no: x\ne: []\n").unwrap_err().to_string();
        assert!(e.contains("the tag `!local`"), "{e}");
        let e = s("s: x\no: x\ne: [{A: 1, B: 2}]\n").unwrap_err().to_string();
        assert!(e.contains("expected a variant name, or a mapping of one variant name to its value"), "{e}");
        let e = s("[x, y, []]\n").unwrap_err().to_string();
        assert!(e.contains("invalid type: sequence"), "{e}");
    }

    /// Plain numbers resolve as the core schema writes them: signs, the
    /// three prefixed bases (a zero after the prefix included), and a leading
    /// zero before decimal digits as text; floats in their spellings.
    #[test]
    fn core_schema_numbers_resolve_like_yaml_1_2() {
        let ints = [
            ("-12", Some(-12)),
            ("+7", Some(7)),
            ("0", Some(0)),
            ("-0", Some(0)),
            ("0x1F", Some(31)),
            ("0x0F", Some(15)),
            ("-0x10", Some(-16)),
            ("+0o17", Some(15)),
            ("0b101", Some(5)),
            ("0777", None),
            ("", None),
            ("+", None),
            ("-", None),
            ("0x", None),
            ("1_000", None),
            ("12a", None),
            ("0b102", None),
            ("--1", None),
        ];
        for (t, want) in ints {
            assert_eq!(parse_int(t), want, "{t}");
        }
        let floats = [
            ("1.5", Some(1.5)),
            ("-2e3", Some(-2000.0)),
            ("+.5", Some(0.5)),
            (".5", Some(0.5)),
            ("0.5", Some(0.5)),
            ("0", Some(0.0)),
            ("15", Some(15.0)),
            ("0123", None),
            ("inf", None),
            ("nan", None),
            ("+-1", None),
            ("1e999", None),
            ("x", None),
        ];
        for (t, want) in floats {
            assert_eq!(parse_float(t), want, "{t}");
        }
        assert_eq!(
            (parse_float(".inf"), parse_float("-.Inf"), parse_float("+.INF")),
            (Some(f64::INFINITY), Some(f64::NEG_INFINITY), Some(f64::INFINITY))
        );
        assert!(parse_float(".NaN").unwrap().is_nan() && parse_float("-.nan").is_none());
    }

    /// Reading into a type: an error names the file, the line and column of
    /// the node it is about and the field's path (none at the root, where
    /// the message follows the position directly); a collection's tag is
    /// read only when it is the core schema's own for that collection.
    #[test]
    fn typed_reads_name_file_position_and_field() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct S {
            a: std::collections::BTreeMap<String, u8>,
        }
        let e = from_str::<S>("f.yaml", "a:\n  x: 1\n  y: [2]\n", &Limits::DEFAULT).unwrap_err().to_string();
        assert!(e.starts_with("f.yaml:3:6: a.y: invalid type: sequence"), "{e}");
        let e = from_str::<u8>("f.yaml", "\n  {b: 1}\n", &Limits::DEFAULT).unwrap_err().to_string();
        assert!(e.starts_with("f.yaml:2:3: invalid type: map"), "{e}");
        let e = from_str::<u8>("f.yaml", "1\n---\n2\n", &Limits::DEFAULT).unwrap_err().to_string();
        assert_eq!(e, "f.yaml: expected exactly one YAML document, found 2");
        // The error as a value displays as its message alone.
        let (path, de) = from_node::<S>(&read("a: {x: -1}\n", &Limits::DEFAULT).unwrap()[0]).unwrap_err();
        assert_eq!((path.as_str(), de.at), ("a.x", Some((1, 8))));
        assert_eq!(de.to_string(), de.msg);
        assert!(de.msg.contains("invalid value: integer `-1`"), "{}", de.msg);
        let v = |t: &str| from_str::<serde_json::Value>("t.yaml", t, &Limits::DEFAULT);
        assert_eq!(v("a: !!map {x: 1}\nb: !!seq [1]\n").unwrap(), serde_json::json!({"a": {"x": 1}, "b": [1]}));
        for (t, tag) in [("a: !!seq {x: 1}\n", "seq"), ("a: !!map [1]\n", "map"), ("a: !local [1]\n", "!local")] {
            let e = v(t).unwrap_err().to_string();
            assert!(e.contains(&format!("the tag `{tag}` on a collection")), "{t}: {e}");
        }
    }

    /// Each character readers disagree on is refused where it is (line and
    /// column of the character, counted in characters), and named: the
    /// line-breaking ones as what they are, a BOM only after the start, the
    /// rest of the controls as controls. Tab, CR and LF are YAML's own.
    #[test]
    fn characters_readers_disagree_on_are_refused_where_they_are() {
        let named = [
            ('\u{85}', "NEXT LINE (U+0085)"),
            ('\u{2028}', "LINE SEPARATOR (U+2028)"),
            ('\u{2029}', "PARAGRAPH SEPARATOR (U+2029)"),
            ('\u{feff}', "a byte-order mark (U+FEFF) after the start"),
            ('\u{1}', "a control character (U+0001)"),
            ('\u{7f}', "a control character (U+007F)"),
            ('\u{9b}', "a control character (U+009B)"),
            ('\u{fffe}', "a control character (U+FFFE)"),
            ('\u{ffff}', "a control character (U+FFFF)"),
        ];
        for (c, what) in named {
            let e = check_chars(&format!("a: é\nb: x{c}y\n")).unwrap_err();
            assert_eq!((e.line, e.column), (2, 5), "{what}");
            assert!(e.message.starts_with(what), "{what}: {}", e.message);
            assert!(e.message.contains(&format!("\"\\u{:04X}\"", c as u32)), "{}", e.message);
        }
        assert!(check_chars("\u{feff}a: 1\r\n\tb: 2\n").is_ok());
        // Bidi controls: the line and column of the first, inside the node's path.
        let e = chk("a:\n  b: x\u{202e}y\n").unwrap_err();
        assert_eq!((e.line, e.column, e.path.as_str()), (2, 7, "a.b"), "{e:?}");
        assert!(e.message.contains("U+202E") && e.message.contains("another order"), "{}", e.message);
        assert!(chk("a: \"x\\u202Ey\"\n").is_ok(), "an escape is not the character");
    }

    /// Where a lone CR may sit in reviewed text, and what it hides there: a
    /// key after a comment, a key after a value, a line of a block scalar,
    /// the fold of a quoted scalar, the end of the file, before a CRLF.
    const CR_FORMS: &[&str] = &[
        "\r",
        "\rverifyOnStart: \"off\"",
        "# note\rhidden: 1",
        "\r  hidden: 1",
        "\r- hidden",
        "\r\r\n",
        "\r\n",
        " #\r",
    ];

    proptest::proptest! {
        #![proptest_config(crate::util::prop_config(5_000))]

        /// What the guard passes, the parser reads with the line breaks a
        /// reviewer sees: every event is on the line git and GitHub show it
        /// on (one more than the LFs before it). A lone CR broke that: the
        /// parser began a line there that the diff shows as part of a
        /// comment. Each refusal is at the CR itself; CRLF files still load,
        /// to the same model as their LF form.
        #[test]
        fn every_line_break_the_parser_reads_is_one_a_reviewer_sees(
            inserts in proptest::collection::vec((proptest::sample::select(CR_FORMS), 0usize..260), 1..5),
            crlf in proptest::bool::ANY,
        ) {
            let lf = "apiVersion: v1 # head\nmetadata:\n  name: llm # the name\nspec:\n  image: reviewed\n  note: \"quoted text\"\n  s: 'single q'\n  lit: |\n    line one\n    line two\n  list:\n    - x\n    - y\n";
            let mut text = if crlf { lf.replace('\n', "\r\n") } else { lf.to_string() };
            if crlf {
                proptest::prop_assert_eq!(model_value(&text), model_value(lf), "CRLF reads as LF");
            }
            for (form, at) in inserts {
                let mut at = at.min(text.len());
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                text.insert_str(at, form);
            }
            match read(&text, &Limits::DEFAULT) {
                Ok(_) => {
                    let chars: Vec<char> = text.chars().collect();
                    let mut p = Parser::new_from_str(&text);
                    loop {
                        let (ev, m) = p.next_token().expect("the guard parsed it");
                        let seen = 1 + chars[..m.index().min(chars.len())].iter().filter(|c| **c == '\n').count();
                        proptest::prop_assert_eq!(m.line(), seen, "{:?} at {:?} in {:?}", ev, m, text);
                        if matches!(ev, Event::StreamEnd) {
                            break;
                        }
                    }
                }
                Err(e) => {
                    let lone = text.char_indices().find(|(i, c)| *c == '\r' && !text[i + 1..].starts_with('\n'));
                    if let Some((i, _)) = lone {
                        let before = &text[..i];
                        let line = 1 + before.matches('\n').count();
                        let column = 1 + before.rsplit('\n').next().unwrap_or("").chars().count();
                        proptest::prop_assert_eq!((e.line, e.column), (line, column), "{} in {:?}", e.message, text);
                        proptest::prop_assert!(e.message.contains("lone CARRIAGE RETURN"), "{}", e.message);
                    }
                }
            }
        }
    }

    /// A key hidden after a comment, named at its line and column; CRLF and a
    /// CR written as an escape are not refused.
    #[test]
    fn a_lone_carriage_return_is_refused_where_it_is() {
        let e = chk("a: 1\n# note\rverifyOnStart: \"off\"\n").unwrap_err();
        assert_eq!((e.line, e.column), (2, 7), "{e:?}");
        assert!(e.message.contains("lone CARRIAGE RETURN") && e.message.contains("git and GitHub"), "{}", e.message);
        let e = chk("a: x\r").unwrap_err();
        assert_eq!((e.line, e.column), (1, 5), "at the end of the text too: {e:?}");
        assert!(chk("a: 1\r\n# note\r\nb: \"x\\ry\"\r\n").is_ok());
    }

    /// The JSON reader: a key twice is refused at its line wherever the
    /// JSON came from; a lone CR only where people review the text (JSON
    /// readers all take it for blank space).
    #[test]
    fn json_files_go_through_the_guard() {
        let e = json_from_str::<serde_json::Value>("r.json", "{\"a\": {\n\"b\": 1,\n\"b\": 2}}", &Limits::WRITTEN)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.json:3:") && e.contains("a.b"), "{e}");
        let cr = "{\"a\": 1,\r\"b\": 2}";
        assert!(json_from_str::<serde_json::Value>("r.json", cr, &Limits::WRITTEN).is_ok());
        let e = json_from_str::<serde_json::Value>("g.json", cr, &Limits::DEFAULT).unwrap_err().to_string();
        assert!(e.starts_with("g.json:1:9: ") && e.contains("lone CARRIAGE RETURN"), "{e}");
        let e = json_from_slice::<serde_json::Value>("b.json", b"{\"a\": \"\xff\"}", &Limits::WRITTEN).unwrap_err();
        assert!(e.to_string().contains("b.json: not UTF-8"), "{e}");
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
        let plain = [
            ".nan",
            ".NaN",
            ".inf",
            "-.inf",
            "+.INF",
            "1e999",
            "-1e400",
            "-.5e999",
            "+.1e400",
            "!!str .nan",
            "!custom .NaN",
        ];
        let tagged = [
            "!!float |-\n    .nan",
            "!!float '.inf'",
            "!!float \".nan\"",
            "!!float >-\n    -.inf",
            "!<tag:yaml.org,2002:float> .inf",
        ];
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
        // Words Rust's float parser reads but YAML does not: text, signed or not.
        assert!(chk("g: {a: +inf, b: -infinity, c: -nan, d: +NaN, e: .infinity}\n").is_ok());
        // A `!!` handle redefined away from the core schema is not a float.
        assert!(chk("%TAG !! tag:example.com,2000:\n---\ng: {max: !!float '.nan'}\n").is_ok());
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
        // Every kind of value passes through; paths through nested lists.
        assert!(check_json(r#"[true, -1, 2, 1.5, null, "s", [], {}]"#).is_ok());
        let e = check_json(r#"[{"a": 1}, {"b": [[0, {"x": 1, "x": 2}]]}]"#).unwrap_err();
        assert_eq!((e.path.as_str(), e.line, e.column), ("[1].b[0][1].x", 1, 34), "{e:?}");
        let e = check_json(r#"[[{"k": 1, "k": 1}]]"#).unwrap_err();
        assert_eq!(e.path, "[0][0].k");
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

    /// Every bound exactly: at the limit the text is read, one more is
    /// refused naming that limit (the bombs above are far past them).
    #[test]
    fn limits_hold_at_their_bounds_exactly() {
        let nested = |depth: usize| format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        for (limits, depth) in [(&Limits::DEFAULT, 64), (&Limits::SNAPSHOT, 128)] {
            assert!(check(&nested(depth), limits).is_ok(), "depth {depth}");
            let e = check(&nested(depth + 1), limits).unwrap_err();
            assert!(e.message.contains(&format!("nested deeper than {depth} levels")), "{}", e.message);
        }
        let aliases = |n: usize| format!("a: &a x\nb: [{}]\n", vec!["*a"; n].join(", "));
        for (limits, n) in [(&Limits::DEFAULT, 1_000), (&Limits::SNAPSHOT, 10_000)] {
            assert!(check(&aliases(n), limits).is_ok(), "{n} aliases");
            let e = check(&aliases(n + 1), limits).unwrap_err();
            assert!(e.message.contains(&format!("more than {n} aliases")), "{}", e.message);
        }
        // A list of n scalars is n + 1 nodes; snapshots have no node limit.
        let list = |n: usize| "- 1\n".repeat(n);
        assert!(check(&list(99_999), &Limits::DEFAULT).is_ok());
        let e = check(&list(100_000), &Limits::DEFAULT).unwrap_err();
        assert!(e.message.contains("more than 100000 nodes"), "{}", e.message);
        assert!(check(&list(100_000), &Limits::SNAPSHOT).is_ok());
        // Collections count when they start: a list of n empty lists is n + 1.
        let lists = |n: usize| "- []\n".repeat(n);
        assert!(check(&lists(99_999), &Limits::DEFAULT).is_ok());
        let e = check(&lists(100_000), &Limits::DEFAULT).unwrap_err();
        assert_eq!(e.message, "more than 100000 nodes");
        // What aliases add: a list of 999 scalars is 1,000 nodes per alias.
        let expand = |n: usize| format!("a: &a [{}]\nb: [{}]\n", vec!["1"; 999].join(", "), vec!["*a"; n].join(", "));
        assert!(check(&expand(200), &Limits::SNAPSHOT).is_ok());
        let e = check(&expand(201), &Limits::SNAPSHOT).unwrap_err();
        assert!(e.message.contains("aliases expand to more than 200000 nodes"), "{}", e.message);
        assert!(check(&expand(100), &Limits { max_nodes: u64::MAX, ..Limits::DEFAULT }).is_ok());
        let e = check(&expand(101), &Limits { max_nodes: u64::MAX, ..Limits::DEFAULT }).unwrap_err();
        assert!(e.message.contains("aliases expand to more than 100000 nodes"), "{}", e.message);
        // Bytes: a bundle of exactly 4 MiB is read, one byte more is not (the
        // readers and their messages say "4 MiB"). A snapshot is allowed far
        // more: 5 MiB is read, 512 MiB and one byte is not.
        let comment = |n: usize| format!("#{}", "x".repeat(n - 1));
        assert_eq!(MAX_BUNDLE_BYTES, 4 << 20);
        assert!(check(&comment(MAX_BUNDLE_BYTES), &Limits::DEFAULT).is_ok());
        let e = check(&comment(MAX_BUNDLE_BYTES + 1), &Limits::DEFAULT).unwrap_err();
        assert!(e.message.contains("4194305 bytes, over the limit of 4194304 bytes"), "{}", e.message);
        assert!(check(&comment(5 << 20), &Limits::SNAPSHOT).is_ok());
        let e = check(&comment((512 << 20) + 1), &Limits::SNAPSHOT).unwrap_err();
        assert!(e.message.contains("over the limit of 536870912 bytes"), "{}", e.message);
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
