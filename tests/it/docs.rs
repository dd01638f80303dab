//! Documentation that names tests must name real ones, and a row that
//! names a diagnostic code must be proved by a test that looks for it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::support::repo;
use crate::support::syntax::test_functions;

/// The file a `module::…::test_name` lives in: tests/it/<module>.rs, or
/// for any other path (`adapters::`, `checks::` …) the module file in src/
/// (the longest prefix that names a file: `checks::watch::props::regressions::x`
/// is in src/checks/watch/props.rs).
fn file_of(parts: &[&str]) -> Option<PathBuf> {
    let it = repo().join("tests/it").join(format!("{}.rs", parts[0]));
    if !it.is_file() {
        (1..parts.len()).rev().find_map(|k| {
            let base = repo().join("src").join(parts[..k].join("/"));
            [base.with_extension("rs"), base.join("mod.rs")].into_iter().find(|p| p.is_file())
        })
    } else {
        Some(it)
    }
}

/// Test functions (`#[test]` or inside `proptest!`) per file, by name → body.
fn tests_in(cache: &mut BTreeMap<PathBuf, BTreeMap<String, String>>, file: &PathBuf) -> BTreeMap<String, String> {
    cache
        .entry(file.clone())
        .or_insert_with(|| {
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            test_functions(&syn::parse_file(&text).unwrap()).into_iter().collect()
        })
        .clone()
}

fn is_test_path(cell: &str) -> bool {
    let parts: Vec<&str> = cell.split("::").collect();
    parts.len() >= 2
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'))
}

/// Every `module::test_name` in docs/reliability.md is a test function
/// (`#[test]`, or a property in `proptest!`), not merely a function of
/// that name; and in a table row that names diagnostic codes (BGnnn), each
/// such code appears in at least one of the row's tests.
#[test]
fn reliability_matrix_names_only_real_tests() {
    let doc = std::fs::read_to_string(repo().join("docs/reliability.md")).unwrap();
    let mut cache = BTreeMap::new();
    let mut named = 0;
    let mut problems = Vec::new();
    for row in doc.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('`').skip(1).step_by(2).filter(|c| is_test_path(c)).collect();
        let mut bodies = Vec::new();
        for cell in &cells {
            let parts: Vec<&str> = cell.split("::").collect();
            let name = parts[parts.len() - 1];
            let Some(file) = file_of(&parts) else {
                problems.push(format!("`{cell}`: no source file for this path"));
                continue;
            };
            match tests_in(&mut cache, &file).get(name) {
                // Token text spaces paths out (`Code :: X`): compare without blanks.
                Some(body) => bodies.push(body.split_whitespace().collect::<String>()),
                None => problems.push(format!("`{cell}` is not a #[test] or proptest function in {}", file.display())),
            }
            named += 1;
        }
        // The codes a row's outcome names must be looked for by its tests.
        let outcome: String = row.split('|').nth(2).unwrap_or("").to_string();
        let codes: Vec<String> = outcome
            .match_indices("BG")
            .filter_map(|(i, _)| outcome.get(i..i + 5))
            .filter(|c| c[2..].chars().all(|d| d.is_ascii_digit()))
            .map(String::from)
            .collect();
        for code in codes {
            if !bodies.is_empty() && !bodies.iter().any(|b| b.contains(&code) || b.contains(&code_name(&code))) {
                problems.push(format!(
                    "row names {code} but none of its tests looks for it: {}",
                    row.chars().take(120).collect::<String>()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "docs/reliability.md:\n{}", problems.join("\n"));
    assert!(named > 60, "the matrix names {named} tests");
}

/// The Rust name of a code's enum variant as a test would write it
/// (`Code::RestartStorm`), from `bundlegate explain`'s registry.
fn code_name(code: &str) -> String {
    let diag = std::fs::read_to_string(repo().join("src/diag.rs")).unwrap();
    diag.lines()
        .find(|l| l.contains(&format!("(\"{code}\"")))
        .and_then(|l| l.split_whitespace().next())
        .map(|v| format!("Code::{v}"))
        .unwrap_or_else(|| format!("no variant for {code}"))
}

/// The check is not vacuous: a `fn` that is not a test is refused.
#[test]
fn a_helper_named_in_the_matrix_is_not_a_test() {
    let file = syn::parse_file("fn helper() {}\n#[test]\nfn real() { assert!(true) }\nproptest! { #[test] fn prop(x in 0..1u8) { prop_assert!(x < 1) } }").unwrap();
    let names: Vec<String> = test_functions(&file).into_iter().map(|t| t.0).collect();
    assert_eq!(names, ["real", "prop"]);
}
