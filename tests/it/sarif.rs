//! `--format sarif`: the report as SARIF 2.1.0 for GitHub code scanning,
//! validated against the OASIS schema (Errata 01, `tests/fixtures/reference/sarif/`)
//! with format checks on; the exit code is the command's, whatever the format.

use serde_json::Value;

use crate::support::*;

fn errors(doc: &Value) -> Vec<String> {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/reference/sarif/sarif-schema-2.1.0.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    let v = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft4)
        .should_validate_formats(true)
        .build(&schema)
        .expect("the SARIF schema compiles");
    v.iter_errors(doc).map(|e| format!("{} at {}", e, e.instance_path)).collect()
}

fn validate(doc: &Value) {
    let errors = errors(doc);
    assert!(errors.is_empty(), "SARIF invalid:\n{}", errors.join("\n"));
}

fn sarif_of(args: &[&str], dir: &std::path::Path) -> (i32, Value) {
    let o = std::process::Command::new(bin()).args(args).args(["--format", "sarif"]).current_dir(dir).output().unwrap();
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}\n{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
    });
    (o.status.code().unwrap_or(-1), doc)
}

#[test]
fn sarif_of_a_clean_lint_is_valid_with_every_rule_and_no_result() {
    let ex = Example::new();
    let (code, doc) = sarif_of(&["lint", "llm-scratch/v2/release.yaml"], ex.path());
    assert_eq!(code, 0);
    validate(&doc);
    let run = &doc["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "bundlegate");
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let bg001 = rules.iter().find(|r| r["id"] == "BG001").unwrap();
    assert_eq!(bg001["name"], "image-not-pinned");
    assert_eq!(bg001["defaultConfiguration"]["level"], "error");
    assert!(
        bg001["helpUri"].as_str().unwrap().ends_with("/docs/diagnostics.md#bg001-image-not-pinned-error"),
        "{bg001}"
    );
    let docs = std::fs::read_to_string(repo().join("docs/diagnostics.md")).unwrap();
    assert!(docs.contains("### BG001 `image-not-pinned` (error)"));
    assert_eq!(run["results"].as_array().unwrap().len(), 0);
    // The schema check can fail: a level SARIF does not know, a bad URI.
    let mut bad = doc.clone();
    bad["runs"][0]["results"] = serde_json::json!([{"ruleId": "BG001", "level": "fatal", "message": {"text": "x"}}]);
    assert!(!errors(&bad).is_empty());
    let mut bad = doc.clone();
    bad["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] = "not a uri".into();
    assert!(!errors(&bad).is_empty());
}

#[test]
fn sarif_of_a_failing_lint_points_at_the_line_and_exits_1() {
    let ex = Example::new();
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    let pinned = text.lines().find(|l| l.trim_start().starts_with("image:")).unwrap().to_string();
    let line = text.lines().position(|l| l == pinned).unwrap() + 1;
    std::fs::write(ex.v2(), text.replacen(&pinned, "    image: registry.example.com/ai-lab/llm-serve:latest", 1))
        .unwrap();
    let (code, doc) = sarif_of(&["lint", "llm-scratch/v2/release.yaml"], ex.path());
    assert_eq!(code, 1);
    validate(&doc);
    let results = doc["runs"][0]["results"].as_array().unwrap();
    let r = results.iter().find(|r| r["ruleId"] == "BG001").unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(r["level"], "error");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "llm-scratch/v2/release.yaml");
    assert_eq!(loc["region"]["startLine"], line as u64);
    assert!(loc["region"]["startColumn"].as_u64().unwrap() >= 1);
    let rules = doc["runs"][0]["tool"]["driver"]["rules"].as_array().unwrap();
    assert_eq!(rules[r["ruleIndex"].as_u64().unwrap() as usize]["id"], "BG001");

    // `-W` applies: the same finding as a warning, and lint passes.
    let (code, doc) = sarif_of(&["lint", "llm-scratch/v2/release.yaml", "-W", "BG001"], ex.path());
    assert_eq!(code, 0);
    validate(&doc);
    let r = doc["runs"][0]["results"].as_array().unwrap().iter().find(|r| r["ruleId"] == "BG001").cloned().unwrap();
    assert_eq!(r["level"], "warning");
}

#[test]
fn sarif_of_a_tool_error_is_valid_and_exits_2() {
    let ex = Example::new();
    let (code, doc) = sarif_of(&["lint", "no/such/release.yaml"], ex.path());
    assert_eq!(code, 2);
    validate(&doc);
    assert_eq!(doc["runs"][0]["invocations"][0]["executionSuccessful"], false);
}
