//! The golden set's file through `canary`: a request line with a key written
//! twice is refused naming the file and the line, and never quoted (the
//! parser's own property is `props::golden_line_with_a_duplicate_key_anywhere_is_refused_naming_its_line`).

use crate::support::*;

#[test]
fn golden_request_with_a_duplicate_key_is_refused_naming_the_file_and_line() {
    let ex = Example::new();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    let good = std::fs::read_to_string(dir.join("golden.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    // serde_json alone would keep the second `content` and send that.
    let dup = first.replacen("\"content\": ", "\"content\": \"hidden-first-value\", \"content\": ", 1);
    assert_ne!(dup, first);
    std::fs::write(dir.join("dup.jsonl"), format!("// two good lines, then the bad one\n{good}{dup}\n")).unwrap();
    ex.edit_v2(|v| *at(v, "spec.canary.golden") = "dup.jsonl".into());
    let v2 = ex.v2();
    let out = run_within(
        ex.path(),
        &["canary", "--format", "json", v2.to_str().unwrap(), "--endpoint", "http://127.0.0.1:1"],
        &[],
        60,
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let summary = v["steps"][0]["summary"].as_str().unwrap_or_default();
    let line = good.lines().count() + 2;
    assert!(
        summary.contains("golden set: could not run")
            && summary.contains(&format!("dup.jsonl: line {line} column "))
            && summary.contains("not a golden request (duplicate key"),
        "{summary}"
    );
    assert!(!out.stdout.contains("hidden-first-value") && !out.stderr.contains("hidden-first-value"), "{}", out.stdout);
}
