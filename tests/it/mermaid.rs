//! The Markdown report's charts parsed by Mermaid's own parser: npm
//! `mermaid` 11 under Node with `jsdom` as its DOM (both pinned in
//! scripts/install-test-deps), through tests/fixtures/mermaid/parse.mjs,
//! which fails on the first block Mermaid rejects.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::pr::{commit_all, pr_repo, replace_in, run_pr};
use crate::support::*;

/// The npm prefix holding `mermaid` and `jsdom`; None only when it is
/// absent and BUNDLEGATE_SKIP_SERVERS is set (like the other tool tests).
pub(crate) fn mermaid_modules() -> Option<PathBuf> {
    match node_modules("mermaid").filter(|m| m.join("jsdom").is_dir()) {
        Some(m) => Some(m),
        None if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() => {
            eprintln!("skipping: npm mermaid/jsdom not installed and BUNDLEGATE_SKIP_SERVERS is set");
            None
        }
        None => panic!(
            "npm `mermaid` and `jsdom` are not installed: run scripts/install-test-deps (or set BUNDLEGATE_SKIP_SERVERS=1 to skip tool tests)"
        ),
    }
}

/// Every ```` ```mermaid ```` block of `markdown` through Mermaid's parser;
/// panics with the block and Mermaid's error on the first that fails.
/// Returns one `ok <n> <type>` line per block.
pub(crate) fn parse_all(modules: &Path, markdown: &str) -> Vec<String> {
    let mut child = Command::new("node")
        .arg(repo().join("tests/fixtures/mermaid/parse.mjs"))
        .env("NODE_PATH", modules)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node runs (scripts/install-test-deps installs Node.js)");
    child.stdin.take().unwrap().write_all(markdown.as_bytes()).unwrap();
    let o = child.wait_with_output().unwrap();
    let (out, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "Mermaid rejected a block ({:?}):\n{err}\n--- markdown ---\n{markdown}", o.status);
    out.lines().map(String::from).collect()
}

/// A file's sha256, hex.
fn sha(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

/// issue #49's "done when": the PR pipeline in PR mode, Markdown, with a
/// head commit that changes v2's weights and chat template (a new store
/// prefix holding both): the weights line, the template's unified diff, the
/// change class and the preflight's chart, and every chart parses.
#[test]
fn pr_pipeline_markdown_shows_the_release_diff_and_charts_that_parse() {
    let Some(modules) = mermaid_modules() else { return };
    let ex = pr_repo();
    let (old_store, new_store) = (ex.store("v2"), ex.store("v2b"));
    copy_dir(&old_store, &new_store);
    let (ckpt, tpl) = (new_store.join("ckpt.pt"), new_store.join("chat_template.jinja"));
    let old_w = std::fs::read(&ckpt).unwrap();
    let mut new_w = old_w.clone();
    new_w.extend_from_slice(b"fine-tuned");
    std::fs::write(&ckpt, &new_w).unwrap();
    let old_t = std::fs::read_to_string(&tpl).unwrap();
    let new_t = format!("{old_t}{{# answer in one line #}}\n");
    std::fs::write(&tpl, &new_t).unwrap();
    replace_in(&ex.v2(), "store/llm-scratch/v2/", "store/llm-scratch/v2b/");
    for (old, new) in [(&old_w, &new_w), (&old_t.clone().into_bytes(), &new_t.clone().into_bytes())] {
        replace_in(&ex.v2(), &sha(old), &sha(new));
        replace_in(&ex.v2(), &format!("size: {}\n", old.len()), &format!("size: {}\n", new.len()));
    }
    commit_all(ex.path(), "v2: new weights and chat template");

    let snapshot = repo().join("examples/cluster/roomy.yaml");
    let o = run_pr(ex.path(), &["--snapshot", snapshot.to_str().unwrap(), "--format", "markdown"], &[]);
    let md = &o.stdout;
    assert!(md.starts_with("### bundlegate run"), "not Markdown: {md}\n{}", o.stderr);
    assert!(md.contains("change class: weights changed"), "{md}");
    let weights =
        format!("{} B → {} B, sha256 {} → {}", old_w.len(), new_w.len(), &sha(&old_w)[..12], &sha(&new_w)[..12]);
    assert!(md.contains("ckpt.pt") && md.contains(&weights), "no weights line `{weights}`:\n{md}");
    assert!(md.contains("--- base/chat_template.jinja\n+++ head/chat_template.jinja"), "{md}");
    // Old lines first; the template had no final line break, so its one line changed.
    let (minus, plus) = (md.find("\n-{% for m in messages %}"), md.find("\n+{% for m in messages %}"));
    assert!(minus.is_some() && minus < plus && md.contains("{# answer in one line #}\n```"), "{md}");
    // The preflight's capacity chart, beside its table (never instead).
    assert!(md.contains("**nodes considered"), "{md}");
    assert!(md.contains("title \"preflight: new pods that fit"), "{md}");
    let parsed = parse_all(&modules, md);
    assert!(!parsed.is_empty() && parsed.iter().all(|l| l.ends_with(" xychart")), "{parsed:?}");
    assert_eq!(parsed.len(), md.matches("```mermaid\n").count(), "every block parsed: {parsed:?}");

    // JSON and human output draw nothing.
    for format in ["json", "human"] {
        let o = run_pr(ex.path(), &["--snapshot", snapshot.to_str().unwrap(), "--format", format], &[]);
        assert!(o.stdout.contains("preflight") && !o.stdout.contains("xychart"), "{}", o.stdout);
    }
}

/// A node whose name is built to break the chart (a quote and bracket to
/// end the label, a directive, a fence, a bidirectional control, 10,000
/// characters): the preflight's chart still parses, and the name shows
/// escaped inside one label.
#[test]
fn a_hostile_node_name_stays_inside_its_label() {
    let Some(modules) = mermaid_modules() else { return };
    let ex = Example::new();
    let hostile = format!("gpu-b\"];%%{{init}}%%\n```\n\u{202e}`x`é;#&lt;{}", "z".repeat(10_000));
    let text = std::fs::read_to_string(repo().join("examples/cluster/roomy.yaml")).unwrap();
    let mut snap: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let mut renamed = 0;
    for item in snap["items"].as_sequence_mut().unwrap() {
        if item["kind"] == "Node" && item["metadata"]["name"] == "gpu-b" {
            item["metadata"]["name"] = hostile.clone().into();
            renamed += 1;
        }
        if item["kind"] == "Pod" && item["spec"]["nodeName"] == "gpu-b" {
            item["spec"]["nodeName"] = hostile.clone().into();
        }
    }
    assert_eq!(renamed, 1, "roomy.yaml has a node gpu-b");
    let path = ex.path().join("hostile.yaml");
    std::fs::write(&path, serde_yaml_ng::to_string(&snap).unwrap()).unwrap();
    let o =
        ex.run(&["preflight", "--format", "markdown", ex.v2().to_str().unwrap(), "--snapshot", path.to_str().unwrap()]);
    let md = &o.stdout;
    let chart = &md[md.find("```mermaid\n").unwrap_or_else(|| panic!("no chart:\n{md}\n{}", o.stderr))..];
    let chart = &chart[..chart.find("\n```\n").unwrap() + 5];
    let label = format!("\"gpu-b＂］；％％｛init｝％％ ｀｀｀ ｀x｀é；＃＆lt；{}…\"", "z".repeat(14));
    assert!(chart.contains(&label), "wanted {label} in:\n{chart}");
    assert_eq!(chart.matches("```").count(), 2, "{chart}");
    assert!(!chart.contains('\u{202e}') && !chart.contains(&"z".repeat(100)), "{chart}");
    let parsed = parse_all(&modules, md);
    assert_eq!(parsed, ["ok 1 xychart"], "{md}");
}

/// A saved JSON report shown again as Markdown (`report show`): the charts
/// come from the steps' data, so they are the same; returns the Markdown.
pub(crate) fn markdown_of(json_report: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("report.json");
    std::fs::write(&f, json_report).unwrap();
    run(&["report", "show", f.to_str().unwrap(), "--format", "markdown"]).stdout
}
