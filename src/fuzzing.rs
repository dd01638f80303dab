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
