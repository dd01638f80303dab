//! The pipeline runner: validation before anything runs, required steps,
//! onFailure: stop, and the shipped pipelines on the shipped example.

use crate::support::*;

/// The README's main job as JSON, global flags (`--config`) in `before`.
fn readme_run(before: &[&str]) -> Out {
    let job = [
        "run",
        "--format",
        "json",
        "pipelines/pull-request.yaml",
        "--bundle",
        "examples/llm-scratch/v2/release.yaml",
        "--snapshot",
        "examples/cluster/roomy.yaml",
    ];
    run(&[before, &job[..]].concat())
}

#[test]
fn readme_main_job_passes_on_the_shipped_example() {
    let out = readme_run(&[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let steps: Vec<(String, String)> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap().to_string(), s["verdict"].as_str().unwrap().to_string()))
        .collect();
    let want = [
        ("release-diff", "pass"),
        ("lint", "pass"),
        ("render", "pass"),
        ("verify", "pass"),
        ("preflight", "pass"),
        ("canary", "not-run"),
        ("comment", "not-run"),
    ];
    assert_eq!(steps, want.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>());
}

#[test]
fn single_gpu_cluster_without_room_to_surge_fails_the_pipeline() {
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
    std::fs::write(&p, format!("apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata:\n  name: t\nspec:\n{body}"))
        .unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn required_step_that_cannot_run_is_inconclusive() {
    let ex = Example::new();
    let p = write_pipeline(&ex, "  steps:\n    - name: lint\n    - name: preflight\n      required: true\n");
    let out = ex.run(&["run", "--format", "json", &p, "--bundle", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json()["verdict"], "inconclusive");
    let v = out.json();
    let pf = step(&v, "preflight");
    assert!(pf["summary"].as_str().unwrap().contains("required step did not run"), "{pf}");
}

#[test]
fn on_failure_stop_skips_the_rest_for_that_bundle() {
    let ex = Example::new();
    std::fs::remove_file(ex.store("v2").join("clean_corpus.txt")).unwrap();
    let p = write_pipeline(&ex, "  steps:\n    - name: verify\n      onFailure: stop\n    - name: render\n");
    let out = ex.run(&["run", "--format", "json", &p, "--bundle", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(step(&v, "verify")["verdict"], "fail");
    assert_eq!(step(&v, "render")["verdict"], "not-run");
    assert!(step(&v, "render")["summary"].as_str().unwrap().contains("verify failed"));
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
        let out = ex.run(&["--format", "json", "run", &p, "--bundle", ex.v2().to_str().unwrap()]);
        assert_eq!(out.code, 2, "{body}");
        assert!(out.stderr.contains(want), "want {want:?} in {}", out.stderr);
        assert!(out.stderr.contains("p.yaml:"), "{}", out.stderr);
        assert_nothing_ran(&out.stdout, want);
    }
}

#[test]
fn drift_audit_pipeline_audits_every_bundle() {
    let ex = Example::new();
    let pipeline = repo().join("pipelines/drift-audit.yaml");
    let out = run_in(
        ex.path(),
        &["run", "--format", "json", pipeline.to_str().unwrap()],
        &[("XDG_CACHE_HOME", ex.path().join("cache").to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let audits = out.json()["steps"].as_array().unwrap().iter().filter(|s| s["step"] == "audit").count();
    assert_eq!(audits, 2);
}

/// Every option of every step is checked when the file is loaded, before
/// anything runs: unknown options for that step, numbers out of range and
/// durations that are not finite, positive and at most 7d, each with
/// file:line:col and the field.
#[test]
fn step_options_are_validated_at_load_with_positions() {
    let ex = Example::new();
    let b = ex.v2();
    let cases = [
        (
            "  steps:\n    - name: lint\n      with:\n        deep: true\n",
            "spec.steps[0].with.deep",
            4,
            "not an option of the lint step",
        ),
        (
            "  steps:\n    - name: lint\n    - name: verify\n      with:\n        jobs: 0\n",
            "spec.steps[1].with.jobs",
            5,
            "out of range",
        ),
        (
            "  steps:\n    - name: verify\n      with:\n        jobs: 100000000\n",
            "spec.steps[0].with.jobs",
            4,
            "out of range",
        ),
        (
            "  steps:\n    - name: watch\n      with:\n        timeout: 99999999999999999999h\n",
            "spec.steps[0].with.timeout",
            4,
            "maximum of 7d",
        ),
        (
            "  steps:\n    - name: watch\n      with:\n        probeInterval: NaN\n",
            "spec.steps[0].with.probeInterval",
            4,
            "not a duration",
        ),
        (
            "  steps:\n    - name: canary\n      with:\n        window: 0s\n",
            "spec.steps[0].with.window",
            4,
            "greater than zero",
        ),
        (
            "  steps:\n    - name: revert\n      with:\n        maxAge: 1e400s\n",
            "spec.steps[0].with.maxAge",
            4,
            "not a duration",
        ),
        (
            "  steps:\n    - name: render\n      with:\n        window: 5m\n",
            "spec.steps[0].with.window",
            4,
            "its options are diff, templates",
        ),
    ];
    for (body, field, line, why) in cases {
        let p = write_pipeline(&ex, body);
        let out = ex.run(&["--format", "json", "run", &p, "--bundle", b.to_str().unwrap()]);
        assert_eq!(out.code, 2, "{body}\n{}\n{}", out.stdout, out.stderr);
        let want = format!("{p}:{}:", line + 5); // 5 header lines before `spec:`'s body
        assert!(
            out.stderr.contains(&want) && out.stderr.contains(field) && out.stderr.contains(why),
            "want {want} {field} {why}:\n{}",
            out.stderr
        );
        assert_nothing_ran(&out.stdout, why);
    }
}

/// A pipeline refused before anything runs: the report (in the chosen
/// format, issue #28) is that one ERROR and no step of the pipeline.
fn assert_nothing_ran(stdout: &str, why: &str) {
    let r: serde_json::Value = serde_json::from_str(stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    assert_eq!(r["verdict"], "error", "{r:#}");
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "nothing ran: {r:#}");
    assert_eq!(steps[0]["step"], "run", "{r:#}");
    assert!(steps[0]["summary"].as_str().unwrap().contains(why), "{r:#}");
}

/// `required: false` then `required: true` in one step was silently
/// last-wins, and pipeline files were read whole with no size bound.
#[test]
fn pipeline_duplicate_keys_and_unbounded_files_are_refused() {
    let ex = Example::new();
    let p = ex.path().join("p1.yaml");
    std::fs::write(&p, "apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata: {name: x}\nspec:\n  steps:\n    - name: lint\n      required: false\n      required: true\n").unwrap();
    let out = ex.run(&["run", p.to_str().unwrap(), "--bundle", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("p1.yaml:8:7: spec.steps[0].required: duplicate key `required`"), "{}", out.stderr);
    let fifo = ex.path().join("p.fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let big = ex.path().join("big.yaml");
    std::fs::write(
        &big,
        format!(
            "{}#{}\n",
            std::fs::read_to_string(repo().join("pipelines/pull-request.yaml")).unwrap(),
            "x".repeat(2 << 20)
        ),
    )
    .unwrap();
    for (f, want) in
        [(&fifo, "not a regular file"), (&big, "over the limit of 1048576 bytes (1 MiB) for a pipeline file")]
    {
        let out = run_within(ex.path(), &["run", f.to_str().unwrap(), "--bundle", ex.v2().to_str().unwrap()], &[], 20);
        assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(want), "{}", out.stderr);
    }
}

mod library;

/// `changeClass` in `--config`: per class of release change, the steps that
/// must run. v2 changes the weights of its rollback target v1, so a policy
/// requiring the canary for new weights makes the canary that could not run
/// (no Prometheus) INCONCLUSIVE, and the release diff says which policy
/// applied; a policy for another class changes nothing; a step made
/// optional for the class may go unrun although the pipeline requires it.
#[test]
fn change_class_policy_requires_steps_per_class() {
    let dir = tempfile::tempdir().unwrap();
    let run_with = |policy: &str| {
        let cfg = dir.path().join("policy.yaml");
        std::fs::write(&cfg, policy).unwrap();
        readme_run(&["--config", cfg.to_str().unwrap()])
    };
    let step = |out: &Out, name: &str| step(&out.json(), name).clone();
    let out = run_with("changeClass:\n  weights:\n    require: [canary]\n");
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["verdict"], "inconclusive");
    let canary = step(&out, "canary");
    assert_eq!(canary["verdict"], "inconclusive", "{canary}");
    assert!(canary["summary"].as_str().unwrap().starts_with("required step did not run"), "{canary}");
    let diff = step(&out, "release-diff");
    assert!(diff["summary"].as_str().unwrap().ends_with("; --config changeClass weights: requires canary"), "{diff}");

    let out = run_with("changeClass:\n  serving-only:\n    require: [canary]\n");
    assert_eq!(out.code, 0, "{}", out.stdout);

    // A pipeline requiring preflight, run without cluster state: its NOT RUN
    // is INCONCLUSIVE, unless the policy lets it go unrun for new weights.
    let ex = Example::new();
    let p = write_pipeline(&ex, "  steps:\n    - name: lint\n    - name: preflight\n      required: true\n");
    let cfg = ex.path().join("optional.yaml");
    let with_cfg = |text: &str| {
        std::fs::write(&cfg, text).unwrap();
        ex.run(&[
            "--config",
            cfg.to_str().unwrap(),
            "run",
            "--format",
            "json",
            &p,
            "--bundle",
            ex.v2().to_str().unwrap(),
        ])
    };
    assert_eq!(with_cfg("changeClass: {}\n").code, 1);
    let out = with_cfg("changeClass:\n  weights:\n    optional: [preflight]\n");
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(step(&out, "preflight")["verdict"], "not-run");
    assert_eq!(with_cfg("changeClass:\n  config-only:\n    optional: [preflight]\n").code, 1);

    for (bad, says) in [
        ("changeClass:\n  wieghts:\n    require: [canary]\n", "unknown variant `wieghts`"),
        ("changeClass:\n  weights:\n    require: [canery]\n", "unknown variant `canery`"),
        ("changeClass:\n  weights:\n    requires: [canary]\n", "unknown field `requires`"),
        (
            "changeClass:\n  weights:\n    require: [canary]\n    optional: [canary]\n",
            "both in `require` and in `optional`",
        ),
    ] {
        let out = run_with(bad);
        assert_eq!(out.code, 2, "{bad}: {}", out.stdout);
        assert!(out.stderr.contains(says) && out.stderr.contains("policy.yaml"), "{bad}: {}", out.stderr);
    }
}
