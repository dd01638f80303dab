//! The pipeline runner: validation before anything runs, required steps,
//! onFailure: stop, and the shipped pipelines on the shipped example.

use crate::support::*;

#[test]
fn readme_main_job_passes_on_the_shipped_example() {
    let out = run(&[
        "run",
        "--format",
        "json",
        "pipelines/pull-request.yaml",
        "--bundle",
        "examples/llm-scratch/v2/release.yaml",
        "--snapshot",
        "examples/cluster/roomy.yaml",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let steps: Vec<(String, String)> =
        v["steps"].as_array().unwrap().iter().map(|s| (s["step"].as_str().unwrap().to_string(), s["verdict"].as_str().unwrap().to_string())).collect();
    let want = [("lint", "pass"), ("render", "pass"), ("verify", "pass"), ("preflight", "pass"), ("canary", "not-run"), ("comment", "not-run")];
    assert_eq!(steps, want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>());
}

#[test]
fn seed_002_cluster_fails_the_pipeline() {
    let out = run(&[
        "run",
        "--format",
        "json",
        "pipelines/pull-request.yaml",
        "--bundle",
        "examples/llm-scratch/v2/release.yaml",
        "--snapshot",
        "examples/cluster/single-gpu.yaml",
    ]);
    assert_eq!(out.code, 1);
    assert!(out.codes().contains(&"BG201".to_string()));
}

fn write_pipeline(ex: &Example, body: &str) -> String {
    let p = ex.path().join("p.yaml");
    std::fs::write(&p, format!("apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata:\n  name: t\nspec:\n{body}")).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn required_step_that_cannot_run_is_inconclusive() {
    let ex = Example::new();
    let p = write_pipeline(&ex, "  steps:\n    - name: lint\n    - name: preflight\n      required: true\n");
    let out = ex.run(&["run", "--format", "json", &p, "--bundle", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json()["verdict"], "inconclusive");
    assert!(out.json()["steps"][1]["summary"].as_str().unwrap().contains("required step did not run"));
}

#[test]
fn on_failure_stop_skips_the_rest_for_that_bundle() {
    let ex = Example::new();
    std::fs::remove_file(ex.store("v2").join("clean_corpus.txt")).unwrap();
    let p = write_pipeline(&ex, "  steps:\n    - name: verify\n      onFailure: stop\n    - name: render\n");
    let out = ex.run(&["run", "--format", "json", &p, "--bundle", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v["steps"][0]["verdict"], "fail");
    assert_eq!(v["steps"][1]["verdict"], "not-run");
    assert!(v["steps"][1]["summary"].as_str().unwrap().contains("verify failed"));
}

#[test]
fn malformed_pipeline_is_an_error_before_anything_runs() {
    let ex = Example::new();
    let cases = [
        ("  steps:\n    - name: lnit\n", "unknown variant `lnit`"),
        ("  steps:\n    - name: lint\n      onFailre: stop\n", "unknown field `onFailre`"),
        ("  steps: []\n", "proves nothing"),
    ];
    for (body, want) in cases {
        let p = write_pipeline(&ex, body);
        let out = ex.run(&["run", &p, "--bundle", ex.v2().to_str().unwrap()]);
        assert_eq!(out.code, 2, "{body}");
        assert!(out.stderr.contains(want), "want {want:?} in {}", out.stderr);
        assert!(out.stderr.contains("p.yaml:"), "{}", out.stderr);
        assert!(out.stdout.is_empty(), "nothing ran, nothing reported: {}", out.stdout);
    }
}

#[test]
fn drift_audit_pipeline_audits_every_bundle() {
    let ex = Example::new();
    let pipeline = repo().join("pipelines/drift-audit.yaml");
    let out = run_in(ex.path(), &["run", "--format", "json", pipeline.to_str().unwrap()], &[("XDG_CACHE_HOME", ex.path().join("cache").to_str().unwrap())]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let audits = out.json()["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "audit").count();
    assert_eq!(audits, 2);
}
