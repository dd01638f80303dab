//! Entry points shared by the cargo-fuzz targets (`fuzz/`) and the proptest
//! harness (`tests/it/props.rs`): one definition of "feed outside input to
//! a parser and everything downstream of it". Each returns normally for any
//! input, `Ok` or `Err`; a panic anywhere below is the bug being hunted.

use crate::bundle;
use crate::checks::{lint, preflight};
use crate::manifests::{Renderer, TemplateSource};
use crate::parse::cmp::{CmpEnv, Params};
use crate::parse::snapshot;
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
    let _ = lint::lint(&l, &crate::checks::rollback::RollbackStatus::NotDeclared);
    let _ = bundle::release_digest(&l.bundle);
    let _ = bundle::resolve_storage_uri(&l);
    if let Ok(r) = renderer().render(&l) {
        // Rendered output is read again by Argo CD and kubectl: it must parse
        // back to exactly the objects rendered. A panic is what cargo-fuzz
        // and proptest report, so the result is asserted, not dropped.
        let back = crate::manifests::parse_stream(&r.yaml)
            .unwrap_or_else(|e| panic!("rendered YAML does not parse back: {e:#}\n{}", r.yaml));
        assert_eq!(back, r.objects, "rendered YAML reads back as other objects:\n{}", r.yaml);
    }
    true
}

/// Snapshot text → cluster state → preflight of the example bundle.
pub fn cluster_snapshot(text: &str) -> bool {
    let Ok(st) = snapshot::parse_snapshot("fuzz/snapshot.yaml", text) else { return false };
    static L: OnceLock<bundle::Loaded> = OnceLock::new();
    let l = L.get_or_init(|| {
        bundle::parse("example/release.yaml", Path::new("example/release.yaml"), EXAMPLE_BUNDLE.to_string())
            .expect("the example bundle parses")
    });
    let _ = preflight::preflight(l, &st);
    true
}

/// A Prometheus answer (any HTTP status) → series → every reading the
/// canary makes of them: one number, histogram buckets (bounds scaled, the
/// per-series factor label, `+Inf`) and the histogram they build, gauge
/// samples, the arms' request split and the traffic steps it places.
/// Returns whether the answer parsed.
pub fn prom_response(status: u16, body: &str) -> bool {
    use crate::checks::canary::{histogram::Histogram, ramp};
    use crate::parse::prom;
    let Ok(series) = prom::parse_response(status, body, "fuzz_query") else { return false };
    let _ = prom::scalar(&series);
    if let Ok(buckets) = prom::histogram_buckets(&series, "fuzz_query", 0.001) {
        let h = Histogram::from_buckets(buckets);
        let _ = (h.total(), h.bin_counts());
    }
    let _ = prom::gauge_samples(&series, 1.0);
    let points = prom::split_points(&series, &series[series.len() / 2..]);
    let segments = ramp::segments(&points, &[5, 25, 50, 100]);
    let _ = ramp::place(&segments, &[5, 25, 50, 100], 15.0, 60.0);
    true
}

/// NUL-separated `KEY=VALUE` pairs as the CMP environment → parameters.
pub fn cmp_params(text: &str) -> bool {
    let env = CmpEnv::from_pairs(text.split('\0').filter_map(|kv| kv.split_once('=')));
    Params::from_env(&env).is_ok()
}

/// The golden set's two outside texts: the JSONL file (the first line
/// decides), then the candidate's answer to each sample's API, judged
/// against its expectation. Returns whether the file parsed.
pub fn golden(text: &str) -> bool {
    let (file, answer) = text.split_once('\0').unwrap_or((text, ""));
    let Ok(samples) = crate::parse::golden::parse_golden(file) else { return false };
    for s in &samples {
        let a = crate::parse::golden::answer(s.api, 200, 1, answer);
        let problems = crate::checks::canary::golden::golden_problems(s, &a);
        // An answer with no generated text is never a passing sample.
        assert!(a.content.is_some() || !problems.is_empty(), "an answer without text passed: {answer:?}");
    }
    true
}

/// A signature file → envelope → statement → resources; the same payload
/// read as a statement directly too (the envelope's base64 is one more
/// layer a mutation rarely gets through). Returns whether resources parsed.
pub fn sigstore_bundle(text: &str) -> bool {
    use crate::parse::sigstore;
    let payload = match sigstore::parse_bundle(text) {
        Ok(env) => env.payload,
        Err(_) => text.as_bytes().to_vec(),
    };
    let Ok(statement) = sigstore::parse_statement(&payload) else { return false };
    match sigstore::model_resources(&statement) {
        Ok(rs) => {
            // What the parser promises downstream: sorted, unique, confined names.
            assert!(rs.windows(2).all(|w| w[0].name < w[1].name), "resources not sorted and unique");
            assert!(rs.iter().all(|r| !r.name.starts_with('/') && !r.name.split('/').any(|p| p == "..")));
            true
        }
        Err(_) => false,
    }
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

/// Every way serde_yaml_ng reads a scalar as a float, for the non-finite
/// `word` (`.nan`, `-.inf`…), as the value of a key indented by `indent`:
/// plain, and `!!float`-tagged in each style (single and double quoted,
/// literal and folded block, the verbatim tag). Used to say that the guard
/// refuses all of them, not only the plain one.
pub const NON_FINITE_STYLES: usize = 6;

pub fn non_finite_value(style: usize, word: &str, indent: usize) -> String {
    let block = " ".repeat(indent + 2);
    match style % NON_FINITE_STYLES {
        0 => word.to_string(),
        1 => format!("!!float '{word}'"),
        2 => format!("!!float \"{word}\""),
        3 => format!("!!float |-\n{block}{word}"),
        4 => format!("!!float >-\n{block}{word}"),
        _ => format!("!<tag:yaml.org,2002:float> {word}"),
    }
}

/// The example bundle with the value of the first `key:` line replaced by
/// `value(indent)`, where `indent` is that line's indentation; a key the
/// example does not set (`minAbsolute`, `minRelativeDecrease`) is added to
/// its last gate (`spec.canary.gates[2]`).
pub fn with_value_at(key: &str, value: impl Fn(usize) -> String) -> Option<String> {
    if let Some(t) = with_value(key, "\u{0}") {
        let line = t.lines().find(|l| l.ends_with(": \u{0}"))?;
        let indent = line.len() - line.trim_start().len();
        return Some(t.replacen("\u{0}", &value(indent), 1));
    }
    let gate = "      - metric: gpu_memory_bytes\n        maxRelativeIncrease: 0.15\n";
    EXAMPLE_BUNDLE
        .contains(gate)
        .then(|| EXAMPLE_BUNDLE.replacen(gate, &format!("{gate}        {key}: {}\n", value(8)), 1))
}

/// The example bundle with its `line`-th line (0-based), when it is a
/// `key: value` entry, anchored and its key repeated through an alias:
/// `&k key: v` then `*k : v`. Same key twice, written so that only an
/// alias-resolving check sees it. `None` for other lines.
pub fn alias_key_line(line: usize) -> Option<String> {
    let lines: Vec<&str> = EXAMPLE_BUNDLE.lines().collect();
    let l = lines.get(line)?;
    let t = l.trim_start();
    let (key, value) = t.split_once(": ")?;
    if t.starts_with('#')
        || t.starts_with('-')
        || key.is_empty()
        || key.contains(['"', '\'', '{', '[', '&', '*', '#'])
        || value.trim().is_empty()
    {
        return None;
    }
    let indent = &l[..l.len() - t.len()];
    let mut out: Vec<String> = lines[..line].iter().map(|s| s.to_string()).collect();
    out.push(format!("{indent}&k {t}"));
    out.push(format!("{indent}*k : {value}"));
    out.extend(lines[line + 1..].iter().map(|s| s.to_string()));
    Some(out.join("\n") + "\n")
}

/// A snapshot `text` (YAML) with the `nth` scalar mapping entry written
/// twice: as JSON (`"k": v, "k": v`) when `json`, else as YAML with the
/// second key an alias of the first. `None` when there is no such entry.
pub fn snapshot_with_duplicate_key(text: &str, nth: usize, json: bool) -> Option<String> {
    if json {
        let v: serde_json::Value = serde_yaml_ng::from_str(text).ok()?;
        let pretty = serde_json::to_string_pretty(&v).ok()?;
        let entries: Vec<(usize, &str)> = pretty
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                l.trim_start().starts_with('"') && l.contains("\": ") && !l.trim_end().ends_with(['{', '['])
            })
            .collect();
        let (i, l) = *entries.get(nth % entries.len().max(1))?;
        let entry = l.trim().trim_end_matches(',');
        let mut lines: Vec<String> = pretty.lines().map(String::from).collect();
        lines[i] = format!("{}{entry}, {}", &l[..l.len() - l.trim_start().len()], l.trim_start());
        return Some(lines.join("\n"));
    }
    let lines: Vec<&str> = text.lines().collect();
    let entries: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let t = lines[i].trim_start().trim_start_matches("- ");
            t.split_once(": ").is_some_and(|(k, v)| {
                !k.is_empty()
                    && !k.contains(['"', '\'', '{', '[', '#', '&', '*'])
                    && !v.trim().is_empty()
                    && !v.contains('#')
                    && !v.trim_start().starts_with(['|', '>'])
            })
        })
        .collect();
    let i = *entries.get(nth % entries.len().max(1))?;
    let l = lines[i];
    let t = l.trim_start();
    let (lead, t) = match t.strip_prefix("- ") {
        Some(rest) => (format!("{}- ", &l[..l.len() - t.len()]), rest),
        None => (l[..l.len() - t.len()].to_string(), t),
    };
    let indent = " ".repeat(lead.len());
    let (_, value) = t.split_once(": ")?;
    let mut out: Vec<String> = lines[..i].iter().map(|s| s.to_string()).collect();
    out.push(format!("{lead}&dup {t}"));
    out.push(format!("{indent}*dup : {value}"));
    out.extend(lines[i + 1..].iter().map(|s| s.to_string()));
    Some(out.join("\n") + "\n")
}

/// A snapshot of `aliases` copies of one anchored pod (`- *p`), after one
/// node and the pod itself: the shape that took 57 s and 6 GB.
pub fn snapshot_alias_bomb(aliases: usize) -> String {
    let node = r#"{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}"#;
    let pod = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "ml", "labels": {"app": "x", "tier": "y"}}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}}]}, "status": {"phase": "Running"}}"#;
    format!("apiVersion: v1\nkind: List\nitems:\n- {node}\n- &p {pod}\n{}", "- *p\n".repeat(aliases))
}
