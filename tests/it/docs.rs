//! Documentation that names tests must name real ones.

use crate::support::repo;

/// Every `module::test_name` in docs/reliability.md is a test function in
/// tests/it/<module>.rs (or, for `adapters::…::tests::name`, in src/).
#[test]
fn reliability_matrix_names_only_real_tests() {
    let doc = std::fs::read_to_string(repo().join("docs/reliability.md")).unwrap();
    let mut named = 0;
    for cell in doc.split('`').skip(1).step_by(2) {
        let parts: Vec<&str> = cell.split("::").collect();
        if parts.len() < 2 || !parts.iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')) {
            continue;
        }
        let name = parts[parts.len() - 1];
        let file = if parts[0] == "adapters" || parts[0] == "checks" || parts[0] == "app" {
            repo().join("src").join(parts[..parts.len() - 2].join("/") + ".rs")
        } else {
            repo().join("tests/it").join(format!("{}.rs", parts[0]))
        };
        let src = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{cell}: {}: {e}", file.display()));
        assert!(src.contains(&format!("fn {name}(")), "docs/reliability.md names `{cell}`, which is not a test in {}", file.display());
        named += 1;
    }
    assert!(named > 60, "the matrix names {named} tests");
}
