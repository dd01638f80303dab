//! The reports every command gives on a corpus of bundles and snapshots, held
//! equal to `tests/fixtures/corpus/reports.json` (issue #28: a restructuring
//! changes no behaviour). The corpus is the shipped examples, every cluster
//! snapshot the preflight tests use, and the hostile bundles the fuzz seeds
//! keep; each case records its exit code and its JSON report (or stdout and
//! the first stderr line where the command prints no report).
//!
//! The commands run in this process (`dispatch::execute`, what the binary
//! calls), so the test is a unit test: it takes about a second, and the
//! mutation runs, which run the unit tests only, count it.
//!
//! After an intended change of behaviour, write the new reports with
//! `BUNDLEGATE_BLESS=1 cargo nextest run --lib corpus` and review the diff.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use serde_json::{json, Value};

use clap::Parser;

use crate::cli::Cli;
use crate::dispatch::{execute, Outcome};

/// The repository root: the package root, where cargo runs unit tests.
fn repo() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// One command line, as the binary runs it (no color: the binary's tests
/// set NO_COLOR).
fn run_in(argv: &[&str]) -> Outcome {
    let cli = Cli::try_parse_from(std::iter::once("bundlegate").chain(argv.iter().copied()))
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let mut o = execute(cli, false);
    // A report written as it was made (audit, report merge): printed after stdout.
    if let Some(spool) = o.spooled.take() {
        let mut bytes = std::mem::take(&mut o.stdout).into_bytes();
        spool.copy_to(&mut bytes).expect("reading the spooled report");
        o.stdout = String::from_utf8(bytes).expect("a report is text");
    }
    o
}

const GOLDEN: &str = "tests/fixtures/corpus/reports.json";

/// The cases: a name and the arguments, run from the repository root.
fn cases(tmp: &Path) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut add = |name: String, args: &[&str]| out.push((name, args.iter().map(|s| s.to_string()).collect()));
    let bundles = [
        ("scratch-v1", "examples/llm-scratch/v1/release.yaml"),
        ("scratch-v2", "examples/llm-scratch/v2/release.yaml"),
        ("vllm-v2", "examples/llm-vllm/v2/release.yaml"),
        ("watch-fixture", "tests/fixtures/watch/release.yaml"),
    ];
    for (name, b) in bundles {
        for format in ["json", "markdown", "human"] {
            add(format!("lint/{name}/{format}"), &["--format", format, "lint", b]);
        }
        add(format!("render/{name}"), &["--format", "json", "render", b]);
        add(format!("digest/{name}"), &["--format", "json", "digest", b]);
        if !name.starts_with("watch") {
            // (Its store is an s3:// bucket: the answer would be this machine's network.)
            add(format!("verify/{name}"), &["--format", "json", "verify", "--progress", "never", b]);
        }
    }
    let mut seeds: Vec<_> = std::fs::read_dir(repo().join("fuzz/seeds/bundle_yaml"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    seeds.sort();
    for s in &seeds {
        let p = format!("fuzz/seeds/bundle_yaml/{s}");
        add(format!("lint/seed/{s}"), &["--format", "json", "lint", &p]);
        add(format!("render/seed/{s}"), &["--format", "json", "render", &p]);
    }
    let mut snapshots: Vec<String> = Vec::new();
    for dir in ["examples/cluster", "tests/fixtures/preflight"] {
        for e in std::fs::read_dir(repo().join(dir)).unwrap() {
            snapshots.push(format!("{dir}/{}", e.unwrap().file_name().to_string_lossy()));
        }
    }
    snapshots.sort();
    for s in &snapshots {
        for (name, b) in
            [("scratch-v2", "examples/llm-scratch/v2/release.yaml"), ("vllm-v2", "examples/llm-vllm/v2/release.yaml")]
        {
            add(format!("preflight/{name}/{s}"), &["--format", "json", "preflight", b, "--snapshot", s]);
        }
    }
    let cache = tmp.join("cache");
    let cache = cache.to_str().unwrap();
    let examples = examples_without_registry(tmp);
    let examples = examples.to_str().unwrap();
    add("audit/examples/first".into(), &["--format", "json", "audit", examples, "--cache", cache]);
    add("audit/examples/again".into(), &["--format", "json", "audit", examples, "--cache", cache]);
    add("audit/examples/deep".into(), &["--format", "json", "audit", examples, "--deep", "--cache", cache]);
    add(
        "run/pull-request".into(),
        &[
            "--format",
            "json",
            "run",
            "pipelines/pull-request.yaml",
            "--bundle",
            "examples/llm-scratch/v2/release.yaml",
            "--snapshot",
            "examples/cluster/roomy.yaml",
        ],
    );
    add("codes".into(), &["--format", "json", "codes"]);
    for code in ["BG021", "BG108", "BG508", "rollback-target-missing", "BG999"] {
        add(format!("explain/{code}"), &["--format", "json", "explain", code]);
    }
    add("argocd/parameters".into(), &["--format", "json", "argocd", "parameters"]);
    out
}

/// What a run leaves that is not behaviour: the folders it ran in and the
/// clock (RFC 3339 times, as the audit and its cache stamp them; how long
/// hashing took, in a summary and as `durationSeconds`).
fn normalize(text: &str, tmp: &Path) -> String {
    // Compiled once for the ~180 texts a run normalizes.
    static TIME: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)").unwrap());
    static TOOK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(hashed [^;]* in )\d+\.\d+s").unwrap());
    static SECS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#""durationSeconds": ?[0-9.e-]+"#).unwrap());
    let text = text.replace(tmp.to_str().unwrap(), "<tmp>").replace(repo().to_str().unwrap(), "<repo>");
    let text = TIME.replace_all(&text, "<time>");
    let text = TOOK.replace_all(&text, "${1}<secs>s");
    SECS.replace_all(&text, r#""durationSeconds": 0"#).into_owned()
}

/// A copy of `examples/` in a git work tree of its own (a `file:` store
/// resolves inside the bundle's work tree), without `llm-oci`: its model is
/// in an OCI registry, and the corpus runs none (tests/it/oci.rs does).
fn examples_without_registry(tmp: &Path) -> std::path::PathBuf {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let (src, dst) = (e.path(), to.join(e.file_name()));
            if e.file_name() == "llm-oci" {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                copy(&src, &dst);
            } else {
                std::fs::copy(&src, &dst).unwrap();
            }
        }
    }
    let tree = tmp.join("tree");
    copy(&repo().join("examples"), &tree.join("examples"));
    git2::Repository::init(&tree).unwrap();
    tree.join("examples")
}

fn observe(tmp: &Path) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (name, args) in cases(tmp) {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = run_in(&argv);
        let stdout = normalize(&o.stdout, tmp);
        let report = match serde_json::from_str::<Value>(&stdout) {
            Ok(v) => json!({ "exit": o.code, "report": v }),
            Err(_) => json!({
                "exit": o.code,
                "stdout": stdout,
                "stderr": normalize(o.stderr.lines().next().unwrap_or(""), tmp),
            }),
        };
        assert!(out.insert(name.clone(), report).is_none(), "case {name} twice");
    }
    out
}

#[test]
fn every_commands_report_on_the_corpus_is_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let seen = observe(tmp.path());
    assert!(seen.len() > 60, "{} cases", seen.len());
    let path = repo().join(GOLDEN);
    if std::env::var_os("BUNDLEGATE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, serde_json::to_string_pretty(&seen).unwrap() + "\n").unwrap();
        return;
    }
    let want: BTreeMap<String, Value> =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the corpus reports are kept")).unwrap();
    let mut differ = Vec::new();
    for name in want.keys().chain(seen.keys()).collect::<std::collections::BTreeSet<_>>() {
        match (want.get(name), seen.get(name)) {
            (Some(a), Some(b)) if a == b => {}
            (a, b) => differ.push(format!(
                "{name}:\n  kept: {}\n  now:  {}",
                a.map_or("(none)".into(), |v| v.to_string()),
                b.map_or("(none)".into(), |v| v.to_string())
            )),
        }
    }
    assert!(
        differ.is_empty(),
        "{} of {} reports changed (BUNDLEGATE_BLESS=1 rewrites {GOLDEN} after an intended change):\n{}",
        differ.len(),
        seen.len(),
        differ.join("\n")
    );
}
