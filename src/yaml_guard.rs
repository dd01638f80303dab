//! One guard for every YAML file bundlegate reads, run on the event stream
//! *before* serde sees the text: serde_yaml_ng keeps the last of two equal
//! keys, expands aliases without a budget, and turns `.nan`/`.inf` into
//! floats that every comparison then silently passes. The guard streams
//! events (aliases are never expanded here) and stops at the first problem,
//! so a hostile file costs at most one pass over its bytes.
//!
//! Shared on purpose: the pipeline and snapshot parsers can call [`check`]
//! with their own [`Limits`] (or [`Limits::DEFAULT`]).

use std::collections::HashMap;

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

/// Resource limits for one YAML document. A release bundle is a few
/// kilobytes, about 300 nodes and 7 levels deep; the limits leave two orders
/// of magnitude of room and still stop amplification within milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Size of the text in bytes (the file reader enforces the same bound).
    pub max_bytes: usize,
    /// Nesting of mappings and sequences.
    pub max_depth: usize,
    /// Nodes after alias expansion (what serde would build).
    pub max_nodes: u64,
    /// `*alias` references.
    pub max_aliases: usize,
    /// Refuse plain scalars that are YAML's non-finite floats (`.nan`,
    /// `.inf`, `-.inf`) or numbers that overflow to infinity (`1e999`).
    pub refuse_non_finite: bool,
}

/// 4 MiB: a release bundle is text that a human reviews in a pull request.
pub const MAX_BUNDLE_BYTES: usize = 4 * 1024 * 1024;

impl Limits {
    pub const DEFAULT: Limits =
        Limits { max_bytes: MAX_BUNDLE_BYTES, max_depth: 64, max_nodes: 100_000, max_aliases: 1_000, refuse_non_finite: true };
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

struct Frame {
    is_map: bool,
    path: String,
    /// Expanded node count of this collection so far (itself included).
    size: u64,
    anchor: usize,
    /// Mapping: the next node is a key.
    at_key: bool,
    cur_key: Option<String>,
    keys: HashMap<String, (usize, usize)>,
    idx: usize,
}

impl Frame {
    fn child_path(&self) -> String {
        if self.is_map {
            let k = if self.at_key { "?" } else { self.cur_key.as_deref().unwrap_or("?") };
            if self.path.is_empty() { k.to_string() } else { format!("{}.{k}", self.path) }
        } else {
            format!("{}[{}]", self.path, self.idx)
        }
    }
}

fn pos(m: &Marker) -> (usize, usize) {
    (m.line().max(1), m.col() + 1)
}

/// YAML 1.2 core schema's non-finite floats, and plain numbers that
/// overflow an f64 (`1e999`), which serde would read as infinity.
pub fn is_non_finite_scalar(s: &str) -> bool {
    let l = s.to_ascii_lowercase();
    if matches!(l.as_str(), ".nan" | ".inf" | "+.inf" | "-.inf") {
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

/// Check `text` against `limits`. A YAML syntax error is *not* reported here:
/// the caller's parser reports it with its own message and position.
pub fn check(text: &str, limits: &Limits) -> Result<(), GuardError> {
    if text.len() > limits.max_bytes {
        return Err(GuardError {
            line: 1,
            column: 1,
            path: String::new(),
            message: format!("the text is {} bytes, over the limit of {} bytes", text.len(), limits.max_bytes),
        });
    }
    let mut parser = Parser::new_from_str(text);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, u64> = HashMap::new();
    let (mut total, mut aliases) = (0u64, 0usize);
    let err = |m: &Marker, path: String, message: String| {
        let (line, column) = pos(m);
        Err(GuardError { line, column, path, message })
    };
    loop {
        let Ok((ev, mark)) = parser.next_token() else { return Ok(()) };
        let path = stack.last().map(Frame::child_path).unwrap_or_default();
        // Expanded size of a node that completes with this event.
        let done: Option<(u64, usize)> = match &ev {
            Event::StreamEnd => return Ok(()),
            Event::DocumentStart => {
                stack.clear();
                None
            }
            Event::Scalar(s, style, anchor, _) => {
                if let Some(f) = stack.last_mut().filter(|f| f.is_map && f.at_key) {
                    if let Some((l, c)) = f.keys.get(s) {
                        let (l2, _) = pos(&mark);
                        let at = if f.path.is_empty() { s.clone() } else { format!("{}.{s}", f.path) };
                        return err(&mark, at, format!("duplicate key `{s}`: first at line {l} column {c}, again at line {l2} (YAML 1.2 requires unique keys)"));
                    }
                    f.keys.insert(s.clone(), pos(&mark));
                    f.cur_key = Some(s.clone());
                } else if limits.refuse_non_finite && *style == TScalarStyle::Plain && is_non_finite_scalar(s) {
                    return err(&mark, path, format!("`{s}` is not a finite number (quote it if it is meant as text)"));
                }
                Some((1, *anchor))
            }
            Event::Alias(id) => {
                aliases += 1;
                if aliases > limits.max_aliases {
                    return err(&mark, path, format!("more than {} aliases (`*name`): refusing alias amplification", limits.max_aliases));
                }
                if let Some(f) = stack.last_mut().filter(|f| f.is_map && f.at_key) {
                    f.cur_key = None;
                }
                Some((anchors.get(id).copied().unwrap_or(1), 0))
            }
            Event::MappingStart(anchor, _) | Event::SequenceStart(anchor, _) => {
                if stack.len() >= limits.max_depth {
                    return err(&mark, path, format!("nested deeper than {} levels", limits.max_depth));
                }
                if let Some(f) = stack.last_mut().filter(|f| f.is_map && f.at_key) {
                    f.cur_key = None;
                }
                let is_map = matches!(ev, Event::MappingStart(..));
                stack.push(Frame { is_map, path: path.clone(), size: 1, anchor: *anchor, at_key: is_map, cur_key: None, keys: HashMap::new(), idx: 0 });
                total = total.saturating_add(1);
                None
            }
            Event::MappingEnd | Event::SequenceEnd => stack.pop().map(|f| (f.size, f.anchor)),
            _ => None,
        };
        let Some((size, anchor)) = done else {
            if total > limits.max_nodes {
                return err(&mark, path, format!("more than {} nodes", limits.max_nodes));
            }
            continue;
        };
        if anchor != 0 {
            anchors.insert(anchor, size);
        }
        // A collection counted itself when it started; a scalar or alias counts here.
        if !matches!(ev, Event::MappingEnd | Event::SequenceEnd) {
            total = total.saturating_add(size);
        }
        if total > limits.max_nodes {
            return err(&mark, path, format!("expands to more than {} nodes (aliases included): refusing alias amplification", limits.max_nodes));
        }
        if let Some(f) = stack.last_mut() {
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn non_finite_numbers_are_refused_but_quoted_text_is_not() {
        for s in [".nan", ".NaN", ".inf", "-.inf", "+.INF", "1e999", "-1e400"] {
            let e = chk(&format!("g:\n  max: {s}\n")).unwrap_err();
            assert_eq!((e.line, e.column, e.path.as_str()), (2, 8, "g.max"), "{s}");
        }
        assert!(chk("g: {max: '.nan', n: nan, i: inf, v: 1e300}\n").is_ok());
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
