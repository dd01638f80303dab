//! The code's layout rules, checked on the source so they cannot rot: all
//! I/O in `src/adapters/`, pure checks, commands that never see clap, no
//! cycle between top-level modules, functions short (clippy's too_many_lines), and a
//! README layout section that matches the tree. The source is read as
//! syntax (`support::syntax`): test items are exempt wherever they sit (a
//! test may build its own files), and every production item is scanned,
//! also one written after a test module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::support::syntax::{self, functions, src};

/// Every production source file, relative to `src/`, with test items and
/// line comments blanked (line numbers kept).
fn sources(_dir: &Path) -> Vec<(String, String)> {
    syntax::sources().into_iter().map(|s| (s.rel, s.code)).collect()
}

/// Calls that read or write the disk, the environment or other processes.
const IO: &[&str] = &[
    "std::fs",
    "tokio::fs",
    "File::open",
    "File::create",
    "OpenOptions",
    "read_dir(",
    "symlink_metadata",
    ".canonicalize(",
    ".is_file()",
    ".is_dir()",
    ".exists()",
    "std::env::var",
    "env::vars",
    "env::current_dir",
    "walkdir::",
    "git2::",
    "process::Command",
    "tokio::process",
];

#[test]
fn io_happens_only_in_adapters() {
    let mut found = Vec::new();
    for (rel, code) in sources(&src()) {
        // main.rs only asks whether stdout is a terminal and NO_COLOR is set.
        if rel.starts_with("adapters/") || rel == "main.rs" {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            for pat in IO {
                if line.contains(pat) {
                    found.push(format!("src/{rel}:{}: `{pat}` in `{}`", n + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "I/O outside src/adapters/ (move it into an adapter):\n{}", found.join("\n"));
}

/// Commands gather, call one pure function, and emit: the verdict and the
/// write-up of a step come from `checks/` (or `report/`), never from
/// `app/`, so they are unit-tested and in the mutation runs.
#[test]
fn commands_assign_no_verdict_and_write_no_summary() {
    let writes_up = |line: &str| {
        let l = line.trim();
        l.contains(".verdict =")
            || l.contains(".summary") && (l.contains(" = ") || l.contains("push_str"))
            || l.contains("summary: format!")
    };
    let mut found = Vec::new();
    for (rel, code) in sources(&src()) {
        if !rel.starts_with("app/") {
            continue;
        }
        found.extend(
            code.lines()
                .enumerate()
                .filter(|(_, l)| writes_up(l))
                .map(|(n, l)| format!("src/{rel}:{}: `{}`", n + 1, l.trim())),
        );
    }
    assert!(
        found.is_empty(),
        "a verdict or summary written in app/ (move the write-up into checks/<family>/):\n{}",
        found.join("\n")
    );
}

/// The top-level modules `code` names through `crate::`, including those in
/// a grouped `use crate::{a, b::c}`.
fn crate_refs(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect::<String>();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            // Nested groups are not used at the top level of these imports.
            for part in group[..end].split(',') {
                let m = ident(part.trim());
                if !m.is_empty() {
                    out.insert(m);
                }
            }
        } else {
            let m = ident(rest);
            if !m.is_empty() {
                out.insert(m);
            }
        }
    }
    out
}

fn module_of(rel: &str) -> String {
    let first = rel.split('/').next().unwrap();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

#[test]
fn checks_and_bundle_are_pure_and_commands_never_see_clap() {
    let mut found = Vec::new();
    for (rel, code) in sources(&src()) {
        let refs = crate_refs(&code);
        let module = module_of(&rel);
        let forbidden: &[&str] = match module.as_str() {
            "checks" | "bundle" | "parse" | "diag" | "report" => {
                &["adapters", "app", "cli", "dispatch", "pipeline", "config"]
            }
            "app" | "options" | "manifests" => &["cli", "dispatch", "pipeline"],
            _ => &[],
        };
        for f in forbidden {
            if refs.contains(*f) {
                found.push(format!("src/{rel} uses crate::{f}"));
            }
        }
        if matches!(module.as_str(), "app" | "checks" | "bundle" | "parse") && code.contains("clap::") {
            found.push(format!("src/{rel} uses clap"));
        }
        // The options types are what the command line derives from (issue
        // #28: each flag's help written once): clap appears there only in
        // attributes behind the `cli` feature, and in the hand-written
        // `ValueEnum` for the bundle's `CanaryMode`, gated the same way.
        if module == "options" {
            for (n, line) in code.lines().enumerate() {
                let t = line.trim();
                let gated = t.starts_with("#[cfg_attr(feature = \"cli\"")
                    || t.starts_with("impl clap::ValueEnum for")
                    || t.starts_with("fn to_possible_value(&self) -> Option<clap::builder::PossibleValue>")
                    || t.contains("=> clap::builder::PossibleValue::new(");
                if t.contains("clap") && !gated {
                    found.push(format!("src/{rel}:{}: clap outside a `cli`-gated attribute: `{t}`", n + 1));
                }
            }
            assert!(
                code.contains("#[cfg(feature = \"cli\")]\nimpl clap::ValueEnum for CanaryMode"),
                "the ValueEnum for CanaryMode is behind the cli feature"
            );
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// A policy finding's code is chosen where the judgment is made: in
/// `checks/` (diag.rs defines the codes; `codes` lists them all).
#[test]
fn diagnostic_codes_are_chosen_in_checks() {
    let mut found = Vec::new();
    for (rel, code) in sources(&src()) {
        if rel.starts_with("checks/") || rel == "diag.rs" {
            continue;
        }
        for (n, line) in code.lines().enumerate() {
            let mut rest = line;
            while let Some(i) = rest.find("Code::") {
                rest = &rest[i + "Code::".len()..];
                let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                // Listing or looking up the registry is not a finding.
                if !matches!(name.as_str(), "ALL" | "from_str_any") {
                    found.push(format!("src/{rel}:{}: Code::{name}", n + 1));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "diagnostics built outside src/checks/ (add a function there that returns the Diagnostic):\n{}",
        found.join("\n")
    );
}

#[test]
fn top_level_modules_form_no_cycle() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let files = sources(&src());
    let modules: BTreeSet<String> =
        files.iter().map(|(rel, _)| module_of(rel)).filter(|m| m != "main" && m != "lib").collect();
    for (rel, code) in &files {
        let from = module_of(rel);
        if !modules.contains(&from) {
            continue;
        }
        let edges = graph.entry(from.clone()).or_default();
        for to in crate_refs(code) {
            if to != from && modules.contains(&to) {
                edges.insert(to);
            }
        }
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, &graph, &mut state, &mut Vec::new()) {
            panic!("module cycle: {}", c.join(" -> "));
        }
    }
    // The scan itself sees the imports it must (a parser that found no
    // edge would pass vacuously).
    assert!(
        graph["dispatch"].contains("app") && graph["app"].contains("checks") && graph["checks"].contains("diag"),
        "{graph:?}"
    );
}

/// Sibling files of one module form no circle either (`ownership.rs` ↔
/// `rollout.rs` did: the shared state types now live in `state.rs`): a file
/// names a sibling through `super::x` or its full `crate::…::x` path.
#[test]
fn sibling_files_form_no_cycle() {
    let files = sources(&src());
    let mut by_dir: BTreeMap<String, Vec<(String, &String)>> = BTreeMap::new();
    for (rel, code) in &files {
        let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel.as_str()));
        let stem = file.strip_suffix(".rs").unwrap_or(file).to_string();
        if stem != "mod" && stem != "lib" && stem != "main" {
            by_dir.entry(dir.to_string()).or_default().push((stem, code));
        }
    }
    let mut edges_seen = 0;
    for (dir, members) in &by_dir {
        let names: BTreeSet<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
        let full = format!("crate::{}::", dir.replace('/', "::"));
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, code) in members {
            let edges = graph.entry(from.clone()).or_default();
            for prefix in ["super::", full.as_str()] {
                let mut rest = code.as_str();
                while let Some(i) = rest.find(prefix) {
                    rest = &rest[i + prefix.len()..];
                    let to: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                    if to != *from && names.contains(to.as_str()) {
                        edges.insert(to);
                        edges_seen += 1;
                    }
                }
            }
        }
        let mut state = BTreeMap::new();
        for n in graph.keys() {
            if let Some(c) = visit(n, &graph, &mut state, &mut Vec::new()) {
                panic!("file cycle in src/{dir}: {}", c.join(" -> "));
            }
        }
    }
    assert!(edges_seen > 10, "the scan sees sibling imports ({edges_seen})");
}

/// Depth-first search; a grey node met again closes a cycle.
fn visit(
    n: &str,
    g: &BTreeMap<String, BTreeSet<String>>,
    state: &mut BTreeMap<String, u8>,
    path: &mut Vec<String>,
) -> Option<Vec<String>> {
    match state.get(n) {
        Some(1) => {
            let start = path.iter().position(|p| p == n).unwrap();
            let mut cycle = path[start..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        Some(2) => return None,
        _ => {}
    }
    state.insert(n.to_string(), 1);
    path.push(n.to_string());
    for m in g.get(n).into_iter().flatten() {
        if let Some(c) = visit(m, g, state, path) {
            return Some(c);
        }
    }
    path.pop();
    state.insert(n.to_string(), 2);
    None
}

/// A function a reader can hold in their head: clippy's `too_many_lines`
/// (code lines, without blanks and comments) is on in both crate roots with
/// the threshold in clippy.toml, and the test command runs clippy with
/// `-D warnings`. An exception says why, as an `expect` that warns once the
/// function is split.
#[test]
fn functions_are_held_short_by_clippy() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |p: &str| std::fs::read_to_string(format!("{root}/{p}")).unwrap();
    let conf = read("clippy.toml");
    let threshold: u32 = conf
        .lines()
        .find_map(|l| l.strip_prefix("too-many-lines-threshold"))
        .and_then(|v| v.trim().trim_start_matches('=').trim().parse().ok())
        .expect("clippy.toml sets too-many-lines-threshold");
    assert!(threshold <= 120, "threshold {threshold}");
    for root_file in ["src/lib.rs", "src/main.rs"] {
        assert!(read(root_file).contains("#![warn(clippy::too_many_lines)]"), "{root_file} enables the lint");
    }
    assert!(read("scripts/test").contains("--all-targets -- -D warnings"), "the test command denies warnings");
    let mut counted = 0;
    for s in syntax::sources() {
        counted += functions(&s).len();
        for (i, line) in s.code.lines().enumerate() {
            if line.contains("clippy::too_many_lines")
                && (line.contains("allow(") || line.contains("expect("))
                && !line.contains("reason")
            {
                panic!("src/{}:{}: an exception to the length rule says why", s.rel, i + 1);
            }
        }
    }
    assert!(counted > 500, "the scan saw {counted} functions");
}

/// The scan reads syntax, not the first `#[cfg(test)]` line: production
/// code written after a test module is still held to the rules, and a file
/// declared as a test module is exempt as a whole.
#[test]
fn the_scan_sees_production_code_after_a_test_module() {
    let text = "fn a() {}\n#[cfg(test)]\nmod tests {\n    fn t() { std::fs::read(\"x\").unwrap(); }\n}\nfn late() { std::fs::read(\"y\").unwrap(); }\n";
    let file = syn::parse_file(text).unwrap();
    let fns: Vec<String> =
        functions(&syntax::Source { rel: "x.rs".into(), file, code: String::new() }).into_iter().map(|f| f.0).collect();
    assert_eq!(fns, ["a", "late"], "test fns are exempt, later production fns are not");
    let all = syntax::sources();
    assert!(all.iter().all(|s| s.rel != "checks/watch/props.rs"), "a `#[cfg(test)] mod props;` file is test code");
    let watch = all.iter().find(|s| s.rel == "checks/watch/rollout.rs").expect("rollout.rs is scanned");
    assert!(!watch.code.contains("fn old_pod_phase_readiness_terminating_table"), "its test module is blanked");
    assert!(watch.code.contains("fn serving_diagnostics"), "its production code is kept");
}

#[test]
fn contributing_layout_matches_the_tree() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("CONTRIBUTING.md")).unwrap();
    let section = readme.split("## How the code is laid out").nth(1).expect("CONTRIBUTING.md has a layout section");
    let block = section.split("```").nth(1).expect("the layout section starts with a code block");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every path the block names exists (indented names are inside the
    // folder above them).
    let mut folder = PathBuf::new();
    let mut named = BTreeSet::new();
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        let name = line.split_whitespace().next().unwrap();
        let p = if line.starts_with(' ') { folder.join(name) } else { PathBuf::from(name) };
        assert!(root.join(&p).exists(), "CONTRIBUTING.md layout names {}, which does not exist", p.display());
        if !line.starts_with(' ') && name.ends_with('/') {
            folder = p.clone();
        }
        named.insert(p.to_string_lossy().trim_end_matches('/').to_string());
    }
    // Every top-level entry of src/ is named.
    for e in std::fs::read_dir(src()).unwrap() {
        let name = format!("src/{}", e.unwrap().file_name().to_string_lossy());
        assert!(named.contains(&name), "CONTRIBUTING.md layout does not mention {name}");
    }
}

/// One concept, one home: an item is named by the module that defines it.
/// A `pub use` may only lift a module's own submodule into its face (e.g.
/// `bundle`'s model); re-exporting another module's items hid where they
/// live (16 such shims were removed). The one exception is the git
/// adapter's handle type, which commands hold without seeing git2.
#[test]
fn re_exports_only_lift_a_modules_own_submodules() {
    let allowed = ["adapters/git.rs: pub use git2::Repository;"];
    let mut found = Vec::new();
    for s in syntax::sources() {
        let own: Vec<String> = s
            .code
            .lines()
            .filter_map(|l| l.trim().strip_prefix("mod ").or_else(|| l.trim().strip_prefix("pub mod ")))
            .map(|m| m.trim_end_matches(';').to_string())
            .collect();
        for (i, line) in s.code.lines().enumerate() {
            let t = line.trim();
            let Some(path) = t.strip_prefix("pub use ").or_else(|| t.strip_prefix("pub(crate) use ")) else { continue };
            let first = path.split("::").next().unwrap_or("");
            if own.iter().any(|m| m == first) || allowed.contains(&format!("{}: {t}", s.rel).as_str()) {
                continue;
            }
            found.push(format!("src/{}:{}: {t}", s.rel, i + 1));
        }
    }
    assert!(found.is_empty(), "import these from where they are defined instead:\n{}", found.join("\n"));
}

/// A failing property writes its seed into `proptest-regressions/` next to
/// the source by default: a mutation run or a red test would leave files in
/// the tree (the suite cleans up after itself). Every `proptest!` block sets
/// `failure_persistence: None` (the failing case is printed instead), directly
/// or through the one shared config helper.
#[test]
fn property_tests_write_nothing_into_the_source_tree() {
    let mut bad = Vec::new();
    let mut seen = 0;
    for (path, file) in syntax::all_files(&["src", "tests"]) {
        for (line, tokens) in syntax::proptest_blocks(&file) {
            seen += 1;
            let quiet = tokens.contains("failure_persistence : None")
                || tokens.contains("proptest_config (few ())")
                || tokens.contains("proptest_config (crate :: util :: prop_config (");
            if !quiet {
                bad.push(format!("{}:{line}", path.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display()));
            }
        }
    }
    assert!(seen >= 20, "the scan found only {seen} proptest! blocks");
    // The library's one helper is quiet itself.
    let util = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/util.rs")).unwrap();
    let helper = &util[util.find("fn prop_config").expect("src/util.rs has prop_config")..];
    assert!(
        helper[..helper.find("\n}").unwrap()].contains("failure_persistence: None"),
        "prop_config persists failures"
    );
    assert!(bad.is_empty(), "proptest! blocks that persist failures into the source tree: {bad:#?}");
}
