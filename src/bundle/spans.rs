//! A map from field paths (`spec.model.artifacts[2].sha256`) to positions in
//! the YAML source, so diagnostics can point at the user's line. serde drops
//! positions, so we read the same text once more with yaml-rust2's event
//! parser, which keeps a mark per event.

use std::collections::HashMap;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

#[derive(Debug, Default, Clone)]
pub struct SpanIndex {
    /// Number of YAML documents in the stream.
    pub documents: usize,
    /// The YAML syntax error, if the text is not well-formed: (message, line, column).
    pub syntax_error: Option<(String, usize, usize)>,
    /// path → (line 1-based, column 1-based). For a mapping entry the position
    /// is that of its key, which is where a reader looks.
    map: HashMap<String, (usize, usize)>,
}

impl SpanIndex {
    pub(crate) fn build(text: &str) -> SpanIndex {
        let mut rec = Recorder { events: Vec::new() };
        let mut parser = Parser::new_from_str(text);
        // A syntax error is reported by the serde pass with its own location;
        // the index keeps whatever was read before it.
        let mut idx = SpanIndex::default();
        if let Err(e) = parser.load(&mut rec, true) {
            let m = e.marker();
            idx.syntax_error = Some((e.info().to_string(), m.line().max(1), m.col() + 1));
        }
        idx.documents = rec.events.iter().filter(|(e, _)| matches!(e, Event::DocumentStart)).count();
        let mut pos = 0;
        // Skip to the first node of the first document.
        while pos < rec.events.len() && !is_node_start(&rec.events[pos].0) {
            pos += 1;
        }
        if pos < rec.events.len() {
            walk(&rec.events, &mut pos, String::new(), &mut idx.map);
        }
        idx
    }

    /// Position of `path`, or of its nearest recorded ancestor.
    pub(crate) fn lookup(&self, path: &str) -> Option<(usize, usize)> {
        let mut p = path.to_string();
        loop {
            if let Some(v) = self.map.get(&p) {
                return Some(*v);
            }
            let cut = p.rfind(['.', '['])?;
            p.truncate(cut);
        }
    }
}

struct Recorder {
    events: Vec<(Event, Marker)>,
}

impl MarkedEventReceiver for Recorder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        self.events.push((ev, mark));
    }
}

fn is_node_start(e: &Event) -> bool {
    matches!(e, Event::Scalar(..) | Event::MappingStart(..) | Event::SequenceStart(..) | Event::Alias(..))
}

fn pos_of(m: &Marker) -> (usize, usize) {
    // yaml-rust2 marks are 1-based lines and 0-based columns.
    (m.line().max(1), m.col() + 1)
}

/// Walk one node starting at `events[*pos]`, recording child positions.
fn walk(events: &[(Event, Marker)], pos: &mut usize, path: String, out: &mut HashMap<String, (usize, usize)>) {
    let Some((ev, mark)) = events.get(*pos) else { return };
    out.entry(path.clone()).or_insert_with(|| pos_of(mark));
    *pos += 1;
    match ev {
        Event::MappingStart(..) => loop {
            match events.get(*pos) {
                None => return,
                Some((Event::MappingEnd, _)) => {
                    *pos += 1;
                    return;
                }
                Some((Event::Scalar(key, ..), kmark)) => {
                    let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                    out.insert(child.clone(), pos_of(kmark));
                    *pos += 1;
                    walk(events, pos, child, out);
                }
                Some(_) => {
                    // Complex key: skip the key node and its value without recording.
                    let mut sink = HashMap::new();
                    walk(events, pos, String::new(), &mut sink);
                    walk(events, pos, String::new(), &mut sink);
                }
            }
        },
        Event::SequenceStart(..) => {
            let mut i = 0;
            loop {
                match events.get(*pos) {
                    None => return,
                    Some((Event::SequenceEnd, _)) => {
                        *pos += 1;
                        return;
                    }
                    Some(_) => {
                        walk(events, pos, format!("{path}[{i}]"), out);
                        i += 1;
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_map_to_key_positions() {
        let text = "a: 1\nb:\n  c:\n    - x: 1\n      y: 2\n    - x: 3\n";
        let idx = SpanIndex::build(text);
        assert_eq!(idx.lookup("a"), Some((1, 1)));
        assert_eq!(idx.lookup("b.c"), Some((3, 3)));
        assert_eq!(idx.lookup("b.c[0].y"), Some((5, 7)));
        assert_eq!(idx.lookup("b.c[1].x").map(|p| p.0), Some(6));
        // Unknown leaf falls back to the nearest ancestor.
        assert_eq!(idx.lookup("b.c[1].zzz").map(|p| p.0), Some(6));
    }
}
