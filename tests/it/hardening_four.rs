//! The hardening issue's round four against the real binary: a line break a
//! reviewer does not see, write errors, the evidence floor of every verdict,
//! coverage from content, one local reader, the sticky comment's author,
//! Kubernetes' resource rules. The generators that drive the code directly
//! live next to it (named in docs/reliability.md).

use crate::support::*;

/// `# comment<CR>verifyOnStart: "off"`: git and GitHub show one comment
/// line, YAML reads a key. Refused naming file, line and column by every
/// command that loads the bundle.
#[test]
fn a_lone_carriage_return_in_a_bundle_is_refused_naming_file_line_column() {
    let ex = Example::new();
    let p = ex.v2();
    let text = std::fs::read_to_string(&p).unwrap();
    let hostile = text.replacen("  serving:\n", "  serving:\n    # reviewed\r    verifyOnStart: \"off\"\n", 1);
    assert_ne!(text, hostile, "the example has a serving section");
    std::fs::write(&p, &hostile).unwrap();
    let line = line_of(&hostile, "# reviewed");
    for cmd in ["lint", "render", "digest"] {
        let out = ex.run(&[cmd, p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 2, "{cmd}: {}\n{}", out.stdout, out.stderr);
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(all.contains(&format!("release.yaml:{line}:15")), "{cmd}: {all}");
        assert!(all.contains("lone CARRIAGE RETURN"), "{cmd}: {all}");
    }
}

/// The same bundle saved with CRLF line endings loads and lints as its LF form.
#[test]
fn a_crlf_bundle_still_loads() {
    let ex = Example::new();
    let p = ex.v2();
    let lf = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, text.replace('\n', "\r\n")).unwrap();
    let crlf = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!((crlf.code, crlf.codes()), (lf.code, lf.codes()), "{}\n{}", crlf.stdout, crlf.stderr);
    assert_ne!(crlf.code, 2, "{}", crlf.stderr);
}

/// Every other reviewed text the tool reads: the pipeline and `--config`
/// (YAML, the one reader) and the golden set (JSON lines, read by another
/// parser but judged by the same character rule first).
#[test]
fn a_lone_carriage_return_is_refused_in_pipeline_config_and_golden_set() {
    let ex = Example::new();
    let v2 = ex.v2();
    let dir = ex.path();
    std::fs::write(dir.join("bg.yaml"), "# severities\rseverity: {}\n").unwrap();
    let out = ex.run(&["lint", v2.to_str().unwrap(), "--config", dir.join("bg.yaml").to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("bg.yaml:1:13") && all.contains("lone CARRIAGE RETURN"), "{all}");

    let pipeline = std::fs::read_to_string(repo().join("pipelines/pull-request.yaml")).unwrap();
    let hostile = pipeline.replacen('\n', "\n# note\r", 1);
    std::fs::write(dir.join("pr.yaml"), &hostile).unwrap();
    let out = ex.run(&["run", dir.join("pr.yaml").to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains("pr.yaml:2:7") && all.contains("lone CARRIAGE RETURN"), "{all}");

    let gdir = v2.parent().unwrap();
    let good = std::fs::read_to_string(gdir.join("golden.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    std::fs::write(gdir.join("cr.jsonl"), format!("{good}{}\r{first}\n", first.trim_end())).unwrap();
    ex.edit_v2(|v| *at(v, "spec.canary.golden") = "cr.jsonl".into());
    let out = run_within(
        dir,
        &["canary", "--format", "json", v2.to_str().unwrap(), "--endpoint", "http://127.0.0.1:1"],
        &[],
        60,
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let summary = out.json()["steps"][0]["summary"].as_str().unwrap_or_default().to_string();
    let line = good.lines().count() + 1;
    let col = first.trim_end().chars().count() + 1;
    assert!(
        summary.contains(&format!("cr.jsonl: line {line} column {col}")) && summary.contains("lone CARRIAGE RETURN"),
        "{summary}"
    );
}
