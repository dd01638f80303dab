#![allow(clippy::disallowed_methods)] // a benchmark program reads its inputs itself

//! Writes the benchmark figures in docs/ from the results file
//! (bench/figures.rs says which blocks and how). bench/run calls it after a run.
//!
//!   cargo bench --bench report -- --write [RESULTS.json]   # rewrite the blocks
//!   cargo bench --bench report [-- RESULTS.json]           # check only: exit 1 when a block differs
//!
//! tests/it/bench_figures.rs makes the same check on the committed file.

#[path = "figures.rs"]
mod figures;

use std::path::Path;

fn main() {
    // `cargo bench` adds `--bench`.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let write = args.iter().any(|a| a == "--write");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let results = args.iter().find(|a| !a.starts_with("--")).map_or_else(|| root.join(figures::RESULTS), Into::into);
    let text = std::fs::read_to_string(&results).unwrap_or_else(|e| panic!("{}: {e}", results.display()));
    let parsed: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", results.display()));
    let mut stale = Vec::new();
    for (file, name, sections) in figures::BLOCKS {
        let path = root.join(file);
        let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        let new = figures::render(&doc, name, sections, &parsed).unwrap_or_else(|e| panic!("{file}: {e}"));
        if new == doc {
            continue;
        }
        if write {
            std::fs::write(&path, new).unwrap_or_else(|e| panic!("{file}: {e}"));
            println!("wrote the `{name}` block of {file}");
        } else {
            stale.push(format!("{file} (block `{name}`)"));
        }
    }
    if !stale.is_empty() {
        eprintln!(
            "not what {} gives: {}; run `cargo bench --bench report -- --write`",
            results.display(),
            stale.join(", ")
        );
        std::process::exit(1);
    }
}
