//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the proptest
//! harness (`tests/it/props.rs`): one definition of "feed outside input to
//! a parser and everything downstream of it". Each returns normally for any
//! input, `Ok` or `Err`; a panic anywhere below is the bug being hunted.

use crate::adapters::cluster;
use crate::app::argocd::{CmpEnv, Params};
use crate::bundle;
use crate::checks::{lint, preflight};
use crate::render::{Renderer, TemplateSource};
use std::path::Path;
use std::sync::OnceLock;

/// A valid bundle for the snapshot target to preflight against.
const EXAMPLE_BUNDLE: &str = include_str!("../examples/llm-scratch/v2/release.yaml");

fn renderer() -> &'static Renderer {
    static R: OnceLock<Renderer> = OnceLock::new();
    R.get_or_init(|| Renderer::new(&TemplateSource::Builtin).expect("built-in templates compile"))
}

/// Bundle text → parse → lint → render. Returns whether it parsed.
pub fn bundle_yaml(path: &Path, text: &str) -> bool {
    let Ok(l) = bundle::parse(&path.display().to_string(), path, text.to_string()) else { return false };
    let _ = lint::lint(&l, &lint::RollbackStatus::NotDeclared);
    let _ = bundle::release_digest(&l.bundle);
    let _ = bundle::resolve_storage_uri(&l);
    if let Ok(r) = renderer().render(&l) {
        // Rendered output is re-read by `render --check` and Argo: it must parse.
        let _ = crate::render::parse_stream(&r.yaml);
    }
    true
}

/// Snapshot text → cluster state → preflight of the example bundle.
pub fn cluster_snapshot(text: &str) -> bool {
    let Ok(st) = cluster::parse_snapshot("fuzz/snapshot.yaml", text) else { return false };
    static L: OnceLock<bundle::Loaded> = OnceLock::new();
    let l = L.get_or_init(|| bundle::parse("example/release.yaml", Path::new("example/release.yaml"), EXAMPLE_BUNDLE.to_string()).expect("the example bundle parses"));
    let _ = preflight::preflight(l, &st);
    true
}

/// NUL-separated `KEY=VALUE` pairs as the CMP environment → parameters.
pub fn cmp_params(text: &str) -> bool {
    let env = CmpEnv::from_pairs(text.split('\0').filter_map(|kv| kv.split_once('=')));
    Params::from_env(&env).is_ok()
}

// ---- hostile inputs, shared by the property tests and the fuzz seeds ----------
// Each builds text of one class that once got through the bundle parser.

/// `levels` anchors, each a list of `width` aliases of the previous one:
/// `width^levels` nodes once expanded (the "billion laughs").
pub fn alias_bomb(levels: usize, width: usize) -> String {
    let mut t = format!("l0: &l0 [{}]\n", vec!["lol"; width].join(", "));
    for i in 1..levels {
        t.push_str(&format!("l{i}: &l{i} [{}]\n", vec![format!("*l{}", i - 1); width].join(", ")));
    }
    t
}

/// The example bundle with `depth` nested block mappings under `metadata.labels`.
pub fn deeply_nested(depth: usize) -> String {
    let mut inner = String::new();
    for i in 0..depth {
        inner.push_str(&format!("{}n{i}:\n", " ".repeat(4 + 2 * i)));
    }
    EXAMPLE_BUNDLE.replacen("  version: v2\n", &format!("  version: v2\n  labels:\n{inner}"), 1)
}

/// The example bundle with its `line`-th line (0-based) repeated right
/// after itself, when that line is a `key: …` entry of a mapping: the same
/// key twice at that line's depth. `None` for lines that are not one.
pub fn duplicate_key_line(line: usize) -> Option<String> {
    let lines: Vec<&str> = EXAMPLE_BUNDLE.lines().collect();
    let l = lines.get(line)?;
    let t = l.trim_start();
    if t.is_empty() || t.starts_with('#') || t.starts_with('-') || !t.contains(':') {
        return None;
    }
    let mut out: Vec<&str> = lines[..=line].to_vec();
    out.push(l);
    out.extend_from_slice(&lines[line + 1..]);
    Some(out.join("\n") + "\n")
}

/// The example bundle with the value of the first `key: value` line whose
/// key is `key` replaced by `value` (written as is, so it may be any YAML).
pub fn with_value(key: &str, value: &str) -> Option<String> {
    let needle = format!("{key}: ");
    let (i, line) = EXAMPLE_BUNDLE.lines().enumerate().find(|(_, l)| l.trim_start().starts_with(&needle))?;
    let indent = line.len() - line.trim_start().len();
    let mut lines: Vec<String> = EXAMPLE_BUNDLE.lines().map(String::from).collect();
    lines[i] = format!("{}{needle}{value}", " ".repeat(indent));
    Some(lines.join("\n") + "\n")
}
