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
            let b = src.as_bytes();
            let mut i = 1;
            while i < b.len() {
                if b[i] == b'\'' {
                    if b.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Ok(start + i + 1);
                }
                i += 1;
            }
            Err("unterminated single-quoted scalar".into())
        }
        TScalarStyle::DoubleQuoted => {
            let b = src.as_bytes();
            let mut i = 1;
            while i < b.len() {
                match b[i] {
                    b'\\' => i += 2,
                    b'"' => return Ok(start + i + 1),
                    _ => i += 1,
                }
            }
            Err("unterminated double-quoted scalar".into())
        }
        _ => Err("block scalars are not edited".into()),
    }
}

/// `value` written in `style`; plain only when YAML would read it back as the same string.
fn render(value: &str, style: TScalarStyle) -> String {
    let plain_safe = !value.is_empty()
        && !value.contains(": ")
        && !value.contains(" #")
        && !value.ends_with(':')
        && !value.starts_with(|c: char| "-?:,[]{}#&*!|>'\"%@` ".contains(c))
        && !value.contains(['\n', '\r', '\t', '{', '}', '[', ']', ','])
        && !value.ends_with(' ');
    match style {
        TScalarStyle::SingleQuoted => format!("'{}'", value.replace('\'', "''")),
        TScalarStyle::Plain if plain_safe => value.to_string(),
        _ => format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\"")),
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

/// Set `key` of `map` to `value` (splice, insert, or remove when None).
fn set_key(
    text: &str,
    map: &Node,
    key: &str,
    value: Option<&str>,
    style: TScalarStyle,
    out: &mut Vec<Splice>,
) -> Result<(), String> {
    let Node::Map { entries, flow, close, .. } = map else { return Err("artifact is not a mapping".into()) };
    let nl = eol(text);
    let found = entries.iter().position(|(k, _, _)| k == key);
    match (found, value) {
        (Some(i), Some(v)) => match &entries[i].2 {
            Node::Scalar { value: old, style, start, end } => {
                if old != v {
                    out.push(Splice { start: *start, end: *end, text: render(v, *style) });
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
                if !text[line_start(text, *ks)..*ks].trim().is_empty() {
                    return Err(format!("`{key}` shares its line with another entry"));
                }
                out.push(Splice { start: line_start(text, *ks), end: next_line(text, v.end()), text: String::new() });
            }
        }
        (None, Some(v)) => {
            if *flow {
                let at = text[..*close].trim_end().len();
                out.push(Splice { start: at, end: at, text: format!(", {key}: {}", render(v, style)) });
            } else {
                let Some((_, first_key, _)) = entries.first() else { return Err("empty artifact mapping".into()) };
                let indent = first_key - line_start(text, *first_key);
                let last_end = map.end();
                let at = next_line(text, last_end);
                let prefix = if at == text.len() && !text.ends_with('\n') { nl } else { "" };
                out.push(Splice {
                    start: at,
                    end: at,
                    text: format!("{prefix}{}{key}: {}{nl}", " ".repeat(indent), render(v, style)),
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
            set_key(text, item, "sha256", Some(&a.sha256), st("sha256"), &mut out)?;
            set_key(text, item, "size", Some(&a.size.to_string()), TScalarStyle::Plain, &mut out)?;
            set_key(text, item, "storeChecksum", a.store_checksum.as_deref(), st("storeChecksum"), &mut out)?;
            continue;
        }
        // Not published: remove the item.
        if *flow {
            let (s, e) = if i > 0 {
                (items[i - 1].end(), item.end())
            } else {
                (item.start(), items.get(1).map(Node::start).unwrap_or(item.end()))
            };
            out.push(Splice { start: s, end: e, text: String::new() });
        } else {
            let s = line_start(text, item.start());
            let e = match items.get(i + 1) {
                Some(next) => line_start(text, next.start()),
                None => next_line(text, item.end()),
            };
            out.push(Splice { start: s, end: e, text: String::new() });
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
            let sep = if items.is_empty() { "" } else { ", " };
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
            if at == text.len() && !text.ends_with('\n') {
                add.push_str(nl);
            }
            for a in new {
                for (j, (k, v)) in fields(a).iter().enumerate() {
                    add.push_str(if j == 0 { lead } else { &cont });
                    add.push_str(&format!("{k}: {v}{nl}"));
                }
            }
            out.push(Splice { start: at, end: at, text: add });
        }
    }
    apply(text, out)
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

    #[test]
    fn values_needing_quotes_are_quoted() {
        assert_eq!(render("a: b", TScalarStyle::Plain), "\"a: b\"");
        assert_eq!(render("it's", TScalarStyle::SingleQuoted), "'it''s'");
        assert_eq!(render("s3://b/m/v2/", TScalarStyle::Plain), "s3://b/m/v2/");
    }
}
