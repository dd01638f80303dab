//! A map from field paths (`spec.model.artifacts[2].sha256`) to positions in
//! the YAML source, so diagnostics can point at the user's line. serde drops
//! positions; the tree the guard's one reader built keeps each node's, so
//! the index is that tree walked once more (the text is not parsed again).

use std::collections::HashMap;

use crate::yaml_guard::{Node, NodeKind};

#[derive(Debug, Default, Clone)]
pub struct SpanIndex {
    /// path → (line 1-based, column 1-based). For a mapping entry the position
    /// is that of its key, which is where a reader looks.
    map: HashMap<String, (usize, usize)>,
}

impl SpanIndex {
    /// The positions of one document as [`crate::yaml_guard::read`] built
    /// it. An alias is the copy of what it names, so the fields under it
    /// point at the anchored text, where they are written.
    pub(crate) fn of(doc: &Node) -> SpanIndex {
        let mut idx = SpanIndex::default();
        walk(doc, String::new(), &mut idx.map);
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

/// Record `node` at `path` (unless its key was recorded there) and its children.
fn walk(node: &Node, path: String, out: &mut HashMap<String, (usize, usize)>) {
    out.entry(path.clone()).or_insert((node.line, node.column));
    match &node.kind {
        NodeKind::Map(entries) => {
            for (k, v) in entries {
                // The guard refuses a mapping or list as a key: every key is text.
                let NodeKind::Scalar { text: key, .. } = &k.kind else { continue };
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                out.insert(child.clone(), (k.line, k.column));
                walk(v, child, out);
            }
        }
        NodeKind::Seq(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, format!("{path}[{i}]"), out);
            }
        }
        NodeKind::Scalar { .. } => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml_guard::{read, Limits};

    fn index(text: &str) -> SpanIndex {
        SpanIndex::of(&read(text, &Limits::DEFAULT).unwrap()[0])
    }

    #[test]
    fn paths_map_to_key_positions() {
        let text = "a: 1\nb:\n  c:\n    - x: 1\n      y: 2\n    - x: 3\n";
        let idx = index(text);
        assert_eq!(idx.lookup("a"), Some((1, 1)));
        assert_eq!(idx.lookup("b"), Some((2, 1)));
        assert_eq!(idx.lookup("b.c"), Some((3, 3)));
        assert_eq!(idx.lookup("b.c[0]").map(|p| p.0), Some(4));
        assert_eq!(idx.lookup("b.c[0].y"), Some((5, 7)));
        assert_eq!(idx.lookup("b.c[1].x"), Some((6, 7)));
        // Unknown leaf falls back to the nearest ancestor, through an index.
        assert_eq!(idx.lookup("b.c[1].zzz"), Some((6, 8)), "the item, at its mapping");
        assert_eq!(idx.lookup("b.c[7].x"), Some((3, 3)));
        assert_eq!(idx.lookup("zzz"), None, "a top-level field not written has no position");
    }

    /// Flow collections, and an alias: its fields at the anchored text.
    #[test]
    fn flow_collections_and_aliases() {
        let text = "base: &b {x: 1, y: [a, b]}\nafter: *b\n";
        let idx = index(text);
        assert_eq!(idx.lookup("base.y[1]"), Some((1, 24)));
        assert_eq!(idx.lookup("after"), Some((2, 1)));
        assert_eq!(idx.lookup("after.x"), Some((1, 11)));
        assert_eq!(idx.map.len(), 11, "{:?}", idx.map);
    }
}
