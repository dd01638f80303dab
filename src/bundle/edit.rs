//! Span-based editing of a release bundle: publish changes only the values it
//! must (storageUri, each artifact's sha256/size/storeChecksum, the artifact
//! list's items) and leaves every other byte as the author wrote it — comments,
//! flow lists, quoting, CRLF. `release.yaml` is reviewed in pull requests, so a
//! wholesale re-serialisation would bury the real change in noise.
//!
//! Positions come from yaml-rust2's event marks (char indices of each node's
//! start); a scalar's end is found by scanning its source in its own style.
//! Anything this editor cannot splice safely (block scalars, multi-line plain
//! scalars, anchors) is an error: the caller then refuses to guess.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// One artifact as publish records it.
#[derive(Debug, Clone)]
pub(crate) struct NewArtifact {
    pub path: String,
    pub sha256: String,
    pub size: u64,
    /// kebab-case role name, written only for new list items.
    pub role: String,
    pub store_checksum: Option<String>,
}

#[derive(Debug)]
enum Node {
    Scalar { value: String, style: TScalarStyle, start: usize, end: usize },
    Map { start: usize, close: usize, flow: bool, entries: Vec<(String, usize, Node)> },
    Seq { start: usize, close: usize, flow: bool, items: Vec<Node> },
    Alias { start: usize },
}

impl Node {
    fn start(&self) -> usize {
        match self {
            Node::Scalar { start, .. } | Node::Map { start, .. } | Node::Seq { start, .. } | Node::Alias { start } => {
                *start
            }
        }
    }
    /// Byte just after the node's last character.
    fn end(&self) -> usize {
        match self {
            Node::Scalar { end, .. } => *end,
            Node::Alias { start } => *start,
            Node::Map { close, flow: true, .. } | Node::Seq { close, flow: true, .. } => close + 1,
            Node::Map { entries, start, .. } => entries.iter().map(|(_, _, v)| v.end()).max().unwrap_or(*start),
            Node::Seq { items, start, .. } => items.iter().map(Node::end).max().unwrap_or(*start),
        }
    }
    fn get(&self, key: &str) -> Option<&Node> {
        match self {
            Node::Map { entries, .. } => entries.iter().find(|(k, _, _)| k == key).map(|(_, _, v)| v),
            _ => None,
        }
    }
}

struct Rec(Vec<(Event, Marker)>);
impl MarkedEventReceiver for Rec {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        self.0.push((ev, mark));
    }
}

struct Builder<'a> {
    text: &'a str,
    /// char index → byte offset.
    bytes: Vec<usize>,
    events: Vec<(Event, Marker)>,
    pos: usize,
}

impl Builder<'_> {
    fn off(&self, m: &Marker) -> usize {
        self.bytes.get(m.index()).copied().unwrap_or(self.text.len())
    }
    fn node(&mut self) -> Result<Node, String> {
        let (ev, m) = self.events.get(self.pos).cloned().ok_or("unexpected end of document")?;
        self.pos += 1;
        let start = self.off(&m);
        match ev {
            Event::Scalar(value, style, anchor, _) => {
                if anchor != 0 {
                    return Err("anchored scalars are not edited".into());
                }
                let end = scalar_end(self.text, start, &value, style)?;
                Ok(Node::Scalar { value, style, start, end })
            }
            Event::Alias(_) => Ok(Node::Alias { start }),
            Event::MappingStart(..) => {
                let flow = self.text[start..].starts_with('{');
                let mut entries = Vec::new();
                loop {
                    match self.events.get(self.pos).cloned() {
                        Some((Event::MappingEnd, m)) => {
                            self.pos += 1;
                            return Ok(Node::Map { start, close: self.off(&m), flow, entries });
                        }
                        Some(_) => {
                            let k = self.node()?;
                            let Node::Scalar { value, start: ks, .. } = k else {
                                return Err("complex mapping keys are not edited".into());
                            };
                            let v = self.node()?;
                            entries.push((value, ks, v));
                        }
                        None => return Err("unterminated mapping".into()),
                    }
                }
            }
            Event::SequenceStart(..) => {
                let flow = self.text[start..].starts_with('[');
                let mut items = Vec::new();
                loop {
                    match self.events.get(self.pos).cloned() {
                        Some((Event::SequenceEnd, m)) => {
                            self.pos += 1;
                            return Ok(Node::Seq { start, close: self.off(&m), flow, items });
                        }
                        Some(_) => items.push(self.node()?),
                        None => return Err("unterminated sequence".into()),
                    }
                }
            }
            other => Err(format!("unexpected YAML event {other:?}")),
        }
    }
}

fn parse(text: &str) -> Result<Node, String> {
    let mut rec = Rec(Vec::new());
    Parser::new_from_str(text).load(&mut rec, false).map_err(|e| e.to_string())?;
    let mut bytes: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    bytes.push(text.len());
    let mut b = Builder { text, bytes, events: rec.0, pos: 0 };
    while b.pos < b.events.len()
        && !matches!(b.events[b.pos].0, Event::MappingStart(..) | Event::SequenceStart(..) | Event::Scalar(..))
    {
        b.pos += 1;
    }
    b.node()
}

/// End of a scalar's source text, found in its own style.
fn scalar_end(text: &str, start: usize, value: &str, style: TScalarStyle) -> Result<usize, String> {
    let src = &text[start..];
    match style {
        TScalarStyle::Plain => {
            if src.starts_with(value) {
                Ok(start + value.len())
            } else {
                Err(format!("plain scalar `{value}` spans lines; not edited"))
            }
        }
        TScalarStyle::SingleQuoted => {
            // `''` is a quote inside; the first lone `'` after the opening one closes.
            let mut it = src.char_indices().skip(1).peekable();
            while let Some((i, c)) = it.next() {
                if c == '\'' && it.next_if(|&(_, n)| n == '\'').is_none() {
                    return Ok(start + i + 1);
                }
            }
            Err("unterminated single-quoted scalar".into())
        }
        TScalarStyle::DoubleQuoted => {
            // A backslash escapes the character after it.
            let mut it = src.char_indices().skip(1);
            while let Some((i, c)) = it.next() {
                match c {
                    '\\' => drop(it.next()),
                    '"' => return Ok(start + i + 1),
                    _ => {}
                }
            }
            Err("unterminated double-quoted scalar".into())
        }
        _ => Err("block scalars are not edited".into()),
    }
}

/// `value` written in `style`: plain only when every YAML reader reads it
/// back as this string (the one writer's rule) and nothing in it means
/// something in a block or flow mapping; else double-quoted with the one
/// writer's escapes.
fn render(value: &str, style: TScalarStyle) -> String {
    let escapes = value.chars().any(crate::yaml_guard::needs_escape);
    let plain_safe = !escapes
        && crate::yaml_guard::plain_reads_as_string(value)
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        && !value.contains(['{', '}', '[', ']', ','])
        && !value.ends_with(' ');
    match style {
        TScalarStyle::SingleQuoted if !escapes => format!("'{}'", value.replace('\'', "''")),
        TScalarStyle::Plain if plain_safe => value.to_string(),
        _ => crate::yaml_guard::double_quoted(value),
    }
}

struct Splice {
    start: usize,
    end: usize,
    text: String,
}

fn apply(text: &str, mut edits: Vec<Splice>) -> Result<String, String> {
    edits.sort_by_key(|e| (e.start, e.end));
    for w in edits.windows(2) {
        if w[1].start < w[0].end {
            return Err("overlapping edits".into());
        }
    }
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for e in edits {
        out.push_str(&text[at..e.start]);
        out.push_str(&e.text);
        at = e.end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

fn line_start(text: &str, at: usize) -> usize {
    text[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
}

/// Just after the newline ending the line holding `at` (or the text's end).
fn next_line(text: &str, at: usize) -> usize {
    text[at..].find('\n').map(|i| at + i + 1).unwrap_or(text.len())
}

fn eol(text: &str) -> &'static str {
    if text.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    }
}

/// Style of `key`'s value in the first list item that has it (new items copy it).
fn style_of(items: &[Node], key: &str) -> TScalarStyle {
    items
        .iter()
        .find_map(|i| match i.get(key) {
            Some(Node::Scalar { style, .. }) => Some(*style),
            _ => None,
        })
        .unwrap_or(TScalarStyle::Plain)
}

/// A value publish writes: text (quoted as the style needs) or a number
/// (always plain: quoted, it would read back as text).
#[derive(Clone, Copy)]
enum Val<'a> {
    Text(&'a str),
    Int(u64),
}

impl Val<'_> {
    fn written(self, style: TScalarStyle) -> String {
        match self {
            Val::Text(v) => render(v, style),
            Val::Int(n) => n.to_string(),
        }
    }
    /// Whether the value already written (`old`) is this one. A quoted
    /// number never reaches here: the bundle's reader refuses text where a
    /// number belongs.
    fn is(self, old: &str) -> bool {
        match self {
            Val::Text(v) => v == old,
            Val::Int(n) => old == n.to_string(),
        }
    }
}

/// Set `key` of `map` to `value` (splice, insert, or remove when None).
fn set_key(
    text: &str,
    map: &Node,
    key: &str,
    value: Option<Val<'_>>,
    style: TScalarStyle,
    out: &mut Vec<Splice>,
) -> Result<(), String> {
    let Node::Map { entries, flow, close, .. } = map else { return Err("artifact is not a mapping".into()) };
    let nl = eol(text);
    let found = entries.iter().position(|(k, _, _)| k == key);
    match (found, value) {
        (Some(i), Some(v)) => match &entries[i].2 {
            Node::Scalar { value: old, style, start, end } => {
                if !v.is(old) {
                    out.push(Splice { start: *start, end: *end, text: v.written(*style) });
                }
            }
            _ => return Err(format!("`{key}` is not a scalar")),
        },
        (Some(i), None) => {
            let (_, ks, v) = &entries[i];
            if *flow {
                // Remove `, key: value` (or `key: value, ` when first).
                let (s, e) = if i > 0 {
                    (entries[i - 1].2.end(), v.end())
                } else {
                    (*ks, entries.get(1).map(|n| n.1).unwrap_or(v.end()))
                };
                out.push(Splice { start: s, end: e, text: String::new() });
            } else {
                let lead = text[line_start(text, *ks)..*ks].trim();
                if lead.is_empty() {
                    out.push(Splice {
                        start: line_start(text, *ks),
                        end: next_line(text, v.end()),
                        text: String::new(),
                    });
                } else if let (true, Some((_, next, _))) = (lead == "-", entries.get(i + 1)) {
                    // First key on the item's dash line: the next key moves up
                    // after the dash.
                    out.push(Splice { start: *ks, end: *next, text: String::new() });
                } else {
                    return Err(format!("`{key}` shares its line with another entry"));
                }
            }
        }
        (None, Some(v)) => {
            if *flow {
                let at = text[..*close].trim_end().len();
                out.push(Splice { start: at, end: at, text: format!(", {key}: {}", v.written(style)) });
            } else {
                let Some((_, first_key, _)) = entries.first() else { return Err("empty artifact mapping".into()) };
                let indent = first_key - line_start(text, *first_key);
                let last_end = map.end();
                let at = next_line(text, last_end);
                out.push(Splice {
                    start: at,
                    end: at,
                    text: format!("{}{key}: {}{nl}", " ".repeat(indent), v.written(style)),
                });
            }
        }
        (None, None) => {}
    }
    Ok(())
}

/// Record a publish: `spec.model.storageUri` = `uri`, and the artifact list
/// holds exactly `arts` (existing items updated in place and in their order,
/// items no longer published removed, new ones appended in the list's style).
pub(crate) fn publish_edit(text: &str, uri: &str, arts: &[NewArtifact]) -> Result<String, String> {
    // A file without a final line break is edited as if it had one, so a
    // line added at the end starts on its own line; the break is dropped
    // again when the edit left the end as it was.
    let unterminated = !text.ends_with('\n');
    let terminated = format!("{text}{}", eol(text));
    let text = if unterminated { terminated.as_str() } else { text };
    let root = parse(text)?;
    let model = root.get("spec").and_then(|s| s.get("model")).ok_or("bundle has no spec.model")?;
    let mut out = Vec::new();
    match model.get("storageUri") {
        Some(Node::Scalar { value, style, start, end }) => {
            if value != uri {
                out.push(Splice { start: *start, end: *end, text: render(uri, *style) });
            }
        }
        _ => return Err("spec.model.storageUri is not a scalar".into()),
    }
    let Some(Node::Seq { items, flow, close, start: seq_start }) = model.get("artifacts") else {
        return Err("spec.model.artifacts is not a list".into());
    };
    let nl = eol(text);
    let path_of = |n: &Node| match n.get("path") {
        Some(Node::Scalar { value, .. }) => Some(value.clone()),
        _ => None,
    };
    let styles: Vec<(&str, TScalarStyle)> =
        ["path", "sha256", "size", "role", "storeChecksum"].iter().map(|k| (*k, style_of(items, k))).collect();
    let st = |k: &str| styles.iter().find(|(n, _)| *n == k).map(|(_, s)| *s).unwrap_or(TScalarStyle::Plain);
    let mut kept = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let p = path_of(item).ok_or("an artifact has no path")?;
        if let Some(a) = arts.iter().find(|a| a.path == p) {
            kept.push(p);
            set_key(text, item, "sha256", Some(Val::Text(&a.sha256)), st("sha256"), &mut out)?;
            set_key(text, item, "size", Some(Val::Int(a.size)), TScalarStyle::Plain, &mut out)?;
            let checksum = a.store_checksum.as_deref().map(Val::Text);
            set_key(text, item, "storeChecksum", checksum, st("storeChecksum"), &mut out)?;
            continue;
        }
        // Not published: remove the item.
        if *flow {
            // After a kept item, the separator before this one goes with it;
            // in the run of removed items at the front, the one after it.
            // Either way no two removals overlap.
            let (s, e) = if kept.is_empty() {
                (item.start(), items.get(i + 1).map(Node::start).unwrap_or(item.end()))
            } else {
                (items[i - 1].end(), item.end())
            };
            out.push(Splice { start: s, end: e, text: String::new() });
        } else {
            // The item's lines, and the comment lines just above it: they
            // head this item, so they go with it and the next item keeps its own.
            let s = line_start(text, item.start());
            let heading: usize = text[..s]
                .split_inclusive('\n')
                .rev()
                .take_while(|l| l.trim_start().starts_with('#'))
                .map(str::len)
                .sum();
            out.push(Splice { start: s - heading, end: next_line(text, item.end()), text: String::new() });
        }
    }
    let new: Vec<&NewArtifact> = arts.iter().filter(|a| !kept.contains(&a.path)).collect();
    if !new.is_empty() {
        let fields = |a: &NewArtifact| {
            let mut f = vec![
                ("path", render(&a.path, st("path"))),
                ("sha256", render(&a.sha256, st("sha256"))),
                ("size", a.size.to_string()),
                ("role", render(&a.role, st("role"))),
            ];
            if let Some(c) = &a.store_checksum {
                f.push(("storeChecksum", render(c, st("storeChecksum"))));
            }
            f
        };
        if *flow {
            let body: Vec<String> = new
                .iter()
                .map(|a| {
                    format!("{{{}}}", fields(a).iter().map(|(k, v)| format!("{k}: {v}")).collect::<Vec<_>>().join(", "))
                })
                .collect();
            let at = text[..*close].trim_end().len();
            let sep = if kept.is_empty() { "" } else { ", " };
            out.push(Splice { start: at, end: at, text: format!("{sep}{}", body.join(", ")) });
        } else {
            let Some(first) = items.first() else {
                return Err("an empty block list cannot be extended in place".into());
            };
            // The first item's line up to its first key: `  - ` (dash and indent).
            // Block mappings are marked at their first key or at the dash,
            // depending on the parser; the first key is where the text starts.
            let Node::Map { entries, .. } = first else { return Err("artifact is not a mapping".into()) };
            let key_at = entries.first().map(|e| e.1).ok_or("empty artifact mapping")?;
            let ls = line_start(text, key_at);
            let lead = &text[ls..key_at];
            if !lead.trim_start().starts_with('-') || lead.trim_start().trim_start_matches('-').trim() != "" {
                return Err("unusual list layout".into());
            }
            let cont = " ".repeat(lead.len());
            let last = items.last().map(Node::end).unwrap_or(*seq_start);
            let at = next_line(text, last);
            let mut add = String::new();
            for a in new {
                for (j, (k, v)) in fields(a).iter().enumerate() {
                    add.push_str(if j == 0 { lead } else { &cont });
                    add.push_str(&format!("{k}: {v}{nl}"));
                }
            }
            out.push(Splice { start: at, end: at, text: add });
        }
    }
    let touches_end = out.iter().any(|e| e.end == text.len());
    let mut edited = apply(text, out)?;
    if unterminated && !touches_end {
        edited.truncate(edited.len() - eol(text).len());
    }
    Ok(edited)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn art(p: &str, sha: &str, size: u64) -> NewArtifact {
        NewArtifact { path: p.into(), sha256: sha.into(), size, role: "weights".into(), store_checksum: None }
    }

    #[test]
    fn block_list_keeps_comments_and_quotes() {
        let text = "# top\nspec:\n  model:\n    storageUri: \"file:../old/v1/\"  # where\n    artifacts:\n      # weights first\n      - path: a.bin\n        sha256: 'aaa'\n        size: 1\n        role: weights\n      - path: gone.txt\n        sha256: 'ggg'\n        size: 2\n        role: other\n  other: [1, 2]\n";
        let got = publish_edit(text, "s3://b/m/v2/", &[art("a.bin", "bbb", 3), art("new.bin", "ccc", 4)]).unwrap();
        assert_eq!(
            got,
            "# top\nspec:\n  model:\n    storageUri: \"s3://b/m/v2/\"  # where\n    artifacts:\n      # weights first\n      - path: a.bin\n        sha256: 'bbb'\n        size: 3\n        role: weights\n      - path: new.bin\n        sha256: 'ccc'\n        size: 4\n        role: weights\n  other: [1, 2]\n"
        );
    }

    #[test]
    fn flow_list_and_crlf() {
        let text = "spec:\r\n  model:\r\n    storageUri: file:x/v1/\r\n    artifacts: [{path: a, sha256: x, size: 1, role: weights}, {path: b, sha256: y, size: 2, role: other}]\r\n";
        let got = publish_edit(text, "file:x/v2/", &[art("b", "z", 5), art("c", "w", 6)]).unwrap();
        assert_eq!(got, "spec:\r\n  model:\r\n    storageUri: file:x/v2/\r\n    artifacts: [{path: b, sha256: z, size: 5, role: other}, {path: c, sha256: w, size: 6, role: weights}]\r\n");
    }

    #[test]
    fn store_checksum_added_and_removed() {
        let text = "spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts:\n    - path: a\n      sha256: x\n      size: 1\n      role: weights\n      storeChecksum: old\n    - path: b\n      sha256: y\n      size: 1\n      role: weights\n";
        let mut a = art("a", "x", 1);
        let mut b = art("b", "y", 1);
        b.store_checksum = Some("new".into());
        a.store_checksum = None;
        let got = publish_edit(text, "s3://b/v1/", &[a, b]).unwrap();
        assert_eq!(got, "spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts:\n    - path: a\n      sha256: x\n      size: 1\n      role: weights\n    - path: b\n      sha256: y\n      size: 1\n      role: weights\n      storeChecksum: new\n");
    }

    mod round_trip {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::{json, Map, Value};

        /// Names as folders hold them, and the strings YAML reads as
        /// something else (or not at all) when written plain.
        fn value() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => "[a-z0-9][a-z0-9._/-]{0,10}",
                1 => prop::collection::vec(any::<char>(), 1..6).prop_map(String::from_iter),
                1 => prop::collection::vec(prop::sample::select(vec!['\t', '\n', '\r', '\0', '\u{7f}', '\u{85}', '\u{a0}', '\u{2028}', '\u{feff}', '\u{fffe}', '\u{202e}', '\u{61c}', 'a', ' ', '#', ':', '\\', '"', '\'']), 1..6).prop_map(String::from_iter),
                2 => prop::sample::select(vec![
                    "true", "False", "null", "NULL", "~", "123", "-1", "+1", "1.5", "0x1F", "0o17", "1e3", ".inf", "-.INF",
                    ".nan", "yes", "No", "on", "OFF", "y", "a: b", "x #y", "it's", "say \"hi\"", "back\\slash", "é/ü.bin",
                    "-lead", "tail:", "a,b", "[x]", "{y}", " sp", "sp ", "#c", "%p", "@a", "`b", "!t", "&a", "*b", "|p",
                    ">f", "?q", "=", "+/AA==", "0", "2024-01-01", "1_000", "1:20", "0123", "00", "3f2a",
                ])
                .prop_map(String::from),
            ]
        }

        /// How the author wrote a scalar, independent of the editor's own
        /// quoting: plain only for names no YAML reader takes for anything
        /// else, double quotes as JSON writes them, single quotes doubled.
        fn write(v: &str, style: u8) -> String {
            let plain_ok = v.starts_with(|c: char| c.is_ascii_lowercase())
                && v.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._/-".contains(c))
                && !["true", "false", "null", "yes", "no", "on", "off", "y", "n"].contains(&v);
            let escape = |c: char| {
                c < ' '
                    || ('\u{7f}'..='\u{9f}').contains(&c)
                    || "\u{2028}\u{2029}\u{feff}\u{fffe}\u{ffff}\u{200e}\u{200f}\u{61c}".contains(c)
                    || ('\u{202a}'..='\u{202e}').contains(&c)
                    || ('\u{2066}'..='\u{2069}').contains(&c)
            };
            match style {
                0 if plain_ok => v.to_string(),
                1 if !v.chars().any(escape) => format!("'{}'", v.replace('\'', "''")),
                _ => {
                    let body: String = v
                        .chars()
                        .map(|c| match c {
                            '"' | '\\' => format!("\\{c}"),
                            c if escape(c) => format!("\\u{:04x}", u32::from(c)),
                            c => c.to_string(),
                        })
                        .collect();
                    format!("\"{body}\"")
                }
            }
        }

        #[derive(Debug, Clone)]
        struct Item {
            path: String,
            sha: String,
            size: u64,
            role: String,
            checksum: Option<String>,
            /// Keys in the author's order.
            order: Vec<&'static str>,
        }

        fn item(path: String) -> impl Strategy<Value = Item> {
            let keys = Just(vec!["path", "sha256", "size", "role", "storeChecksum", "note"]).prop_shuffle();
            (value(), any::<u64>(), value(), prop::option::of(value()), keys).prop_map(
                move |(sha, size, role, checksum, order)| Item { path: path.clone(), sha, size, role, checksum, order },
            )
        }

        #[derive(Debug, Clone)]
        struct Case {
            flow: bool,
            crlf: bool,
            /// The artifact list ends the file, which has a final line break or not.
            at_end: bool,
            final_break: bool,
            /// Block lists: the dash at the key's indent or two further.
            deeper: bool,
            /// Quoting per key: path, sha256, role, storeChecksum, storageUri.
            styles: [u8; 5],
            items: Vec<Item>,
            /// Per item: published again (new sha256, size, checksum) or not.
            republished: Vec<Option<(String, u64, Option<String>)>>,
            new: Vec<(String, String, u64, String, Option<String>)>,
            uri: String,
        }

        fn case() -> impl Strategy<Value = Case> {
            (prop::collection::btree_set(value(), 1..7), 1usize..7, any::<bool>()).prop_flat_map(
                |(paths, n_old, flow)| {
                    let paths: Vec<String> = paths.into_iter().collect();
                    let n_old = n_old.min(paths.len());
                    let n_old = if flow { n_old } else { n_old.max(1) };
                    let old = paths[..n_old].to_vec();
                    let fresh = paths[n_old..].to_vec();
                    let items: Vec<_> = old.into_iter().map(item).collect();
                    let republish = prop::collection::vec(
                        prop::option::weighted(0.7, (value(), any::<u64>(), prop::option::of(value()))),
                        n_old,
                    );
                    let new: Vec<_> = fresh
                        .into_iter()
                        .map(|p| (Just(p), value(), any::<u64>(), value(), prop::option::of(value())))
                        .collect();
                    (
                        Just(flow),
                        any::<bool>(),
                        (any::<bool>(), any::<bool>()),
                        any::<bool>(),
                        prop::array::uniform5(0u8..3),
                        items,
                        republish,
                        new,
                        value(),
                    )
                        .prop_map(
                            |(flow, crlf, (at_end, final_break), deeper, styles, items, republished, new, uri)| Case {
                                flow,
                                crlf,
                                at_end,
                                final_break,
                                deeper,
                                styles,
                                items,
                                republished,
                                new,
                                uri,
                            },
                        )
                },
            )
        }

        fn entries(it: &Item, styles: &[u8; 5], k: usize) -> Vec<String> {
            it.order
                .iter()
                .filter_map(|key| {
                    let v = match *key {
                        "path" => write(&it.path, styles[0]),
                        "sha256" => write(&it.sha, styles[1]),
                        "size" => it.size.to_string(),
                        "role" => write(&it.role, styles[2]),
                        "storeChecksum" => write(it.checksum.as_ref()?, styles[3]),
                        _ => format!("kept-{k}"),
                    };
                    Some(format!("{key}: {v}"))
                })
                .collect()
        }

        fn text(c: &Case) -> String {
            let list = if c.flow {
                let items: Vec<String> = c
                    .items
                    .iter()
                    .enumerate()
                    .map(|(k, it)| format!("{{{}}}", entries(it, &c.styles, k).join(", ")))
                    .collect();
                format!(" [{}]\n", items.join(", "))
            } else {
                let dash = if c.deeper { "      - " } else { "    - " };
                let mut s = "\n".to_string();
                for (k, it) in c.items.iter().enumerate() {
                    s.push_str(&format!("{}# über item {k}\n", &dash[..dash.len() - 2]));
                    for (j, e) in entries(it, &c.styles, k).iter().enumerate() {
                        let lead = if j == 0 { dash.to_string() } else { " ".repeat(dash.len()) };
                        s.push_str(&format!("{lead}{e}  # c{k}.{j}\n"));
                    }
                }
                s
            };
            let (before, after) =
                if c.at_end { ("  other: keep  # tail\n", "") } else { ("", "  other: keep  # tail\n") };
            let mut t = format!(
                "# modèle: ünïcode before every offset\napiVersion: x\nspec:\n{before}  model:\n    storageUri: {}  # where\n    artifacts:{list}{after}",
                write("file:../old/v1/", c.styles[4])
            );
            if c.at_end && !c.final_break {
                t.pop();
            }
            if c.crlf {
                t.replace('\n', "\r\n")
            } else {
                t
            }
        }

        fn published(c: &Case) -> Vec<NewArtifact> {
            let mut arts: Vec<NewArtifact> = c
                .items
                .iter()
                .zip(&c.republished)
                .filter_map(|(it, r)| {
                    let (sha, size, checksum) = r.clone()?;
                    Some(NewArtifact {
                        path: it.path.clone(),
                        sha256: sha,
                        size,
                        role: "ignored".into(),
                        store_checksum: checksum,
                    })
                })
                .collect();
            arts.extend(c.new.iter().map(|(path, sha, size, role, checksum)| NewArtifact {
                path: path.clone(),
                sha256: sha.clone(),
                size: *size,
                role: role.clone(),
                store_checksum: checksum.clone(),
            }));
            arts
        }

        /// What the edited bundle must read as: the artifacts kept in their
        /// order with their new values and every other key untouched, then
        /// the new ones in publish's order.
        fn expected(c: &Case) -> Value {
            let mut list = Vec::new();
            for (k, (it, r)) in c.items.iter().zip(&c.republished).enumerate() {
                let Some((sha, size, checksum)) = r else { continue };
                let mut m = Map::new();
                m.insert("path".into(), json!(it.path));
                m.insert("sha256".into(), json!(sha));
                m.insert("size".into(), json!(size));
                m.insert("role".into(), json!(it.role));
                if let Some(cs) = checksum {
                    m.insert("storeChecksum".into(), json!(cs));
                }
                m.insert("note".into(), json!(format!("kept-{k}")));
                list.push(Value::Object(m));
            }
            for (path, sha, size, role, checksum) in &c.new {
                let mut m = Map::new();
                m.insert("path".into(), json!(path));
                m.insert("sha256".into(), json!(sha));
                m.insert("size".into(), json!(size));
                m.insert("role".into(), json!(role));
                if let Some(cs) = checksum {
                    m.insert("storeChecksum".into(), json!(cs));
                }
                list.push(Value::Object(m));
            }
            json!({"apiVersion": "x", "spec": {"model": {"storageUri": c.uri, "artifacts": list}, "other": "keep"}})
        }

        fn read(t: &str) -> Value {
            crate::yaml_guard::from_str("release.yaml", t, &crate::yaml_guard::Limits::DEFAULT).unwrap()
        }

        proptest! {
            #![proptest_config(crate::util::prop_config(512))]
            /// Publish's edit reads back as exactly what was published, in
            /// every layout an author writes (block or flow, CRLF, quoting,
            /// key order, non-ASCII before the offsets), with every comment of
            /// a kept line still there and the removed items' comments gone.
            #[test]
            fn the_edit_reads_back_as_what_was_published(c in case()) {
                let original = text(&c);
                let arts = published(&c);
                let before = read(&original);
                prop_assert_eq!(&before["spec"]["model"]["artifacts"].as_array().unwrap().len(), &c.items.len());
                let edited = match publish_edit(&original, &c.uri, &arts) {
                    Ok(t) => t,
                    // The one layout the editor refuses: a block list left
                    // empty cannot be written in place (publish rewrites it).
                    Err(e) => {
                        prop_assert!(!c.flow && arts.is_empty(), "refused {:?}: {}", original, e);
                        return Ok(());
                    }
                };
                let mut want = expected(&c);
                if !c.flow && arts.is_empty() {
                    want["spec"]["model"]["artifacts"] = Value::Null;
                }
                prop_assert_eq!(read(&edited), want, "{}\n=>\n{}", original, edited);
                // No blank line appears, and a file without a final line
                // break gets one only where the edit itself ends it.
                prop_assert!(!edited.replace("\r\n", "\n").contains("\n\n"), "a blank line in {:?}", edited);
                for line in ["# modèle: ünïcode before every offset", "  # where", "  other: keep  # tail"] {
                    prop_assert!(edited.contains(line), "{} lost from {}", line, edited);
                }
                if !c.flow {
                    for (k, r) in c.republished.iter().enumerate() {
                        prop_assert_eq!(edited.contains(&format!("# über item {k}\n")) || edited.contains(&format!("# über item {k}\r\n")), r.is_some(), "{}", edited);
                    }
                }
                prop_assert_eq!(edited.contains('\n') && !edited.replace("\r\n", "").contains('\n'), c.crlf, "line ends: {:?}", edited);
            }
        }
    }

    /// Quoted scalars end where their closing quote is, past `''` and `\"`
    /// inside them, whatever comes after on the line.
    #[test]
    fn quoted_values_are_replaced_whole() {
        let text = |sha: &str| {
            format!("spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts:\n    - path: a\n      sha256: {sha}  # 'c' \"d\"\n      size: 1\n      role: w\n")
        };
        for old in [r#"'it''s'"#, r#"''''"#, r#"'a''''b'"#, r#"'é''x'"#, r#""q\"t""#, r#""\\""#, r#""é\"""#] {
            let got = publish_edit(&text(old), "s3://b/v1/", &[art("a", "new", 1)]).unwrap();
            let quote = &old[..1];
            assert_eq!(got, text(&format!("{quote}new{quote}")), "{old}");
        }
    }

    /// New items copy the first item's dash line; a layout without one
    /// (the dash alone on its line, or something before it) is refused, and
    /// publish then writes the bundle whole.
    #[test]
    fn a_list_without_a_dash_line_to_copy_is_refused() {
        for list in [
            "    -\n      path: a\n      sha256: x\n      size: 1\n",
            "    - - path: a\n        sha256: x\n        size: 1\n",
        ] {
            let text = format!("spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts:\n{list}");
            let got = publish_edit(&text, "s3://b/v1/", &[art("a", "x", 1), art("n", "y", 2)]);
            assert!(got.is_err(), "{list:?}: {got:?}");
        }
    }

    /// A file without a final line break keeps it that way where the edit
    /// leaves the end alone; lines the edit adds at the end are whole lines.
    #[test]
    fn the_final_line_break_follows_the_edit() {
        let flow =
            "spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts: [{path: a, sha256: x, size: 1, role: w}]";
        let got = publish_edit(flow, "s3://b/v1/", &[art("a", "yz", 1), art("b", "z", 2)]).unwrap();
        assert!(got.ends_with("{path: b, sha256: z, size: 2, role: weights}]"), "{got:?}");
        let block = "spec:\n  model:\n    storageUri: s3://b/v1/\n    artifacts:\n    - path: a\n      sha256: x\n      size: 1";
        let got = publish_edit(block, "s3://b/v1/", &[art("a", "yz", 1)]).unwrap();
        assert_eq!(got, block.replace("sha256: x", "sha256: yz"));
        let got = publish_edit(block, "s3://b/v1/", &[art("a", "x", 1), art("b", "z", 2)]).unwrap();
        assert_eq!(got, format!("{block}\n    - path: b\n      sha256: z\n      size: 2\n      role: weights\n"));
    }

    /// A text with no node to edit is refused, never indexed past its end.
    #[test]
    fn a_text_without_a_document_is_refused() {
        for text in ["", "# only a comment\n", "---\n...\n"] {
            assert!(publish_edit(text, "file:x/", &[]).is_err(), "{text:?}");
        }
    }

    #[test]
    fn values_needing_quotes_are_quoted() {
        assert_eq!(render("a: b", TScalarStyle::Plain), "\"a: b\"");
        assert_eq!(render("it's", TScalarStyle::SingleQuoted), "'it''s'");
        assert_eq!(render("s3://b/m/v2/", TScalarStyle::Plain), "s3://b/m/v2/");
    }
}
