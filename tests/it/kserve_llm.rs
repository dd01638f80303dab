//! `spec.serving.format: kserve-llm`: one KServe `LLMInferenceService`
//! (`serving.kserve.io/v1alpha2`), validated against the real v0.20 CRD as
//! the API server would (strict, list-map keys, the exclusivity rule), the
//! verifier in every pool, the read-back check on `spec.model.uri`, and
//! what the format cannot carry (BG027).

use crate::support::schema::crd_errors;
use crate::support::*;
use serde_json::Value;

const CRD: &str = "kserve/serving.kserve.io_llminferenceservices.yaml";

fn rendered(out: &Out) -> Vec<Value> {
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    serde_yaml_ng::Deserializer::from_str(&out.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn digest_of(ex: &Example) -> String {
    ex.run(&["digest", "--format", "json", ex.v2().to_str().unwrap()]).json()["steps"][0]["data"]["releaseDigest"]
        .as_str()
        .unwrap()
        .to_string()
}

fn llm_example(uri: &str) -> Example {
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.serving.format") = "kserve-llm".into();
        *at(v, "spec.model.storageUri") = uri.into();
    });
    ex
}

fn container<'a>(pod: &'a Value, list: &str, name: &str) -> &'a Value {
    pod[list].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap_or_else(|| panic!("no {list} {name}"))
}

fn assert_valid(o: &Value) {
    let errors = crd_errors(CRD, o);
    assert!(errors.is_empty(), "rendered LLMInferenceService violates the KServe v0.20 CRD:\n{}", errors.join("\n"));
}

#[test]
fn kserve_llm_renders_one_llminferenceservice_valid_against_the_crd() {
    for uri in ["file:../../store/llm-scratch/v2/", "s3://models/llm-scratch/v2/"] {
        let ex = llm_example(uri);
        let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
        assert_eq!(objs.len(), 1, "{objs:#?}");
        let o = &objs[0];
        assert_eq!(
            (o["apiVersion"].as_str(), o["kind"].as_str()),
            (Some("serving.kserve.io/v1alpha2"), Some("LLMInferenceService"))
        );
        assert_eq!(o["spec"]["model"]["uri"], uri, "the storage URI goes in unchanged");
        let digest = digest_of(&ex);
        assert_eq!(o["metadata"]["annotations"]["bundlegate.dev/release-digest"], digest.as_str());
        // The workload's pods carry it too, so any bundle change rolls them.
        assert_eq!(o["spec"]["annotations"]["bundlegate.dev/release-digest"], digest.as_str());
        assert_eq!(o["spec"]["replicas"], 1);
        let pod = &o["spec"]["template"];
        let main = container(pod, "containers", "main");
        assert!(main["image"].as_str().unwrap().contains("@sha256:"), "{main}");
        assert_eq!(main["resources"]["limits"]["nvidia.com/gpu"], "1");
        assert_eq!(main["startupProbe"]["failureThreshold"], 18);
        assert_eq!(main["readinessProbe"]["httpGet"]["path"], "/health/ready");
        assert_eq!(main["livenessProbe"]["httpGet"]["path"], "/health/live");
        let env = main["env"].as_array().unwrap();
        let var = |n: &str| env.iter().find(|e| e["name"] == n).map(|e| e["value"].clone());
        assert_eq!(var("GENERATION_MAX_OUTPUT_TOKENS"), Some("512".into()));
        assert_eq!(var("GENERATION_STOP_STRINGS"), Some("[\"</s>\"]".into()));
        assert_eq!(var("BUNDLEGATE_RELEASE_DIGEST"), Some(digest.clone().into()));
        // The verifier rides in the decode pool, reading KServe's model folder.
        let v = container(pod, "initContainers", "bundlegate-verify");
        assert_eq!(v["volumeMounts"][0]["mountPath"], "/mnt/models");
        assert!(pod["volumes"].as_array().unwrap().iter().any(|v| v["name"] == "kserve-provision-location"));
        assert_valid(o);
    }
}

/// The validator is not vacuous: each way the API server refuses or prunes
/// is caught (a field it would drop, a list-map key twice, the CEL rule).
#[test]
fn the_crd_check_catches_pruned_fields_duplicate_keys_and_the_cel_rule() {
    let ex = llm_example("s3://models/llm-scratch/v2/");
    let o = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()])).remove(0);
    assert_valid(&o);
    let mut pruned = o.clone();
    pruned["spec"]["template"]["containers"][0]["imagee"] = "x".into();
    assert!(crd_errors(CRD, &pruned).iter().any(|e| e.contains("imagee")), "{:?}", crd_errors(CRD, &pruned));
    let mut strategy = o.clone();
    strategy["spec"]["strategy"] = serde_json::json!({"type": "RollingUpdate"});
    assert!(!crd_errors(CRD, &strategy).is_empty(), "v0.20 has no strategy: the API server would prune it");
    let mut dup = o.clone();
    let env = dup["spec"]["template"]["containers"][0]["env"].as_array_mut().unwrap();
    env.push(env[0].clone());
    assert!(crd_errors(CRD, &dup).iter().any(|e| e.contains("duplicate list-map key")), "{:?}", crd_errors(CRD, &dup));
    let mut ports = o.clone();
    // Keyed by (containerPort, protocol): protocol defaults to TCP.
    ports["spec"]["template"]["containers"][0]["ports"] =
        serde_json::json!([{"containerPort": 8080}, {"containerPort": 8080, "protocol": "TCP"}]);
    assert!(crd_errors(CRD, &ports).iter().any(|e| e.contains("duplicate list-map key")));
    ports["spec"]["template"]["containers"][0]["ports"][1]["protocol"] = "UDP".into();
    assert!(crd_errors(CRD, &ports).is_empty(), "{:?}", crd_errors(CRD, &ports));
    let mut both = o.clone();
    both["spec"]["scaling"] = serde_json::json!({"minReplicas": 1, "maxReplicas": 2, "wva": {"hpa": {}}});
    assert!(
        crd_errors(CRD, &both).iter().any(|e| e.contains("replicas and scaling are mutually exclusive")),
        "{:?}",
        crd_errors(CRD, &both)
    );
    both["spec"].as_object_mut().unwrap().remove("replicas");
    assert!(!crd_errors(CRD, &both).iter().any(|e| e.contains("mutually exclusive")));
}

/// A template whose model URI is not the bundle's fails the read-back check,
/// naming the field; one with a prefill pool that lacks the verifier is
/// BG040 (the prefill pods would serve unchecked files).
#[test]
fn user_templates_are_held_to_the_uri_and_the_verifier_in_every_pool() {
    let builtin = std::fs::read_to_string(repo().join("templates/kserve-llm.yaml.hbs")).unwrap();
    let ex = llm_example("s3://models/llm-scratch/v2/");
    let tdir = ex.path().join("templates");
    std::fs::create_dir_all(&tdir).unwrap();
    let with = |text: &str| {
        std::fs::write(tdir.join("kserve-llm.yaml.hbs"), text).unwrap();
        ex.run(&["render", "--format", "json", "--templates", tdir.to_str().unwrap(), ex.v2().to_str().unwrap()])
    };
    let ok = with(&builtin);
    assert_eq!(ok.code, 0, "{}", ok.stdout);
    assert!(!ok.codes().contains(&"BG040".to_string()), "{}", ok.stdout);

    let moved = with(&builtin.replace("uri: {{storageUri}}", "uri: \"s3://models/llm-scratch/v1/\""));
    assert_eq!(moved.code, 2, "{}\n{}", moved.stdout, moved.stderr);
    assert!(
        moved.stdout.contains("spec.model.uri") || moved.stderr.contains("spec.model.uri"),
        "{}\n{}",
        moved.stdout,
        moved.stderr
    );

    let prefill = "  prefill:\n    replicas: 2\n    template:\n      containers:\n        - name: main\n          image: {{image}}\n";
    let unguarded = with(&builtin.replace("  template:\n", &format!("{prefill}  template:\n")));
    assert_ne!(unguarded.code, 2, "{}\n{}", unguarded.stdout, unguarded.stderr);
    assert!(unguarded.codes().contains(&"BG040".to_string()), "{}", unguarded.stdout);
    // The prefill pool's replicas are its own, not the bundle's.
    assert!(!unguarded.stdout.contains("reads back as"), "{}", unguarded.stdout);
}

/// The bundle's rollout strategy cannot be carried by the v0.20
/// LLMInferenceService: a lint finding (BG027), and render still renders.
#[test]
fn a_rollout_the_format_cannot_carry_is_bg027() {
    let ex = llm_example("s3://models/llm-scratch/v2/");
    let clean = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(!clean.codes().contains(&"BG027".to_string()), "{}", clean.stdout);
    ex.edit_v2(|v| {
        *at(v, "spec.serving.rollout") = yaml("{maxSurge: 0, maxUnavailable: 1, progressDeadlineSeconds: 600}")
    });
    let lint = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    let d = lint.diag("BG027");
    assert_eq!(d["severity"], "warning", "{d}");
    assert!(d["message"].as_str().unwrap().contains("maxSurge 0"), "{d}");
    assert_eq!(d["span"]["line"].as_u64().map(|l| l > 0), Some(true), "{d}");
    let objs = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()]));
    assert_eq!(objs[0]["kind"], "LLMInferenceService");
    assert!(objs[0]["spec"].get("strategy").is_none());
    // The same strategy is the bundle's own in the other formats: no finding.
    ex.edit_v2(|v| *at(v, "spec.serving.format") = "kserve-custom".into());
    let other = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(!other.codes().contains(&"BG027".to_string()), "{}", other.stdout);
}

/// The shipped example renders an LLMInferenceService valid against the
/// CRD, and `examples/llm-vllm/v2` renders with `kserve-llm` switched in.
#[test]
fn the_shipped_llm_examples_render_as_llminferenceservice() {
    let tmp = tempfile::tempdir().unwrap();
    for d in ["llm-kserve-llm", "llm-vllm", "llm-scratch", "store"] {
        copy_dir(&repo().join("examples").join(d), &tmp.path().join(d));
    }
    edit_yaml(&tmp.path().join("llm-vllm/v2/release.yaml"), |v| *at(v, "spec.serving.format") = "kserve-llm".into());
    for b in ["llm-kserve-llm/v2/release.yaml", "llm-vllm/v2/release.yaml"] {
        let out = run_in(tmp.path(), &["render", b], &[]);
        let objs = rendered(&out);
        assert_eq!(objs.len(), 1);
        assert_eq!(objs[0]["kind"], "LLMInferenceService");
        assert_valid(&objs[0]);
    }
}

/// KServe's own split between two real renders: the baseline (llm-scratch
/// v1) and the candidate (v2) as LLMInferenceServices in one route group,
/// each object valid against the CRD, the declared share read back, and
/// the observed split judged against it.
#[test]
fn a_traffic_step_renders_valid_weighted_objects_and_the_observed_split_is_judged() {
    use bundlegate::checks::canary::split::{declared_share, judge_split, render_split, SplitVerdict};
    let ex = llm_example("s3://models/llm-scratch/v2/");
    edit_yaml(&ex.v1(), |v| *at(v, "spec.serving.format") = "kserve-llm".into());
    let baseline = rendered(&ex.run(&["render", ex.v1().to_str().unwrap()])).remove(0);
    let mut candidate = rendered(&ex.run(&["render", ex.v2().to_str().unwrap()])).remove(0);
    candidate["metadata"]["name"] = "llm-scratch-v2".into();
    let objs = render_split(&baseline, &candidate, 10).unwrap();
    assert_eq!(objs.len(), 2);
    for o in &objs {
        assert_valid(o);
    }
    assert_eq!(objs[0]["spec"]["model"]["uri"], baseline["spec"]["model"]["uri"]);
    assert_eq!(objs[1]["spec"]["model"]["uri"], "s3://models/llm-scratch/v2/");
    assert_eq!(declared_share(&objs, "llm-scratch-v2").unwrap(), 10.0);
    let (v, d) = judge_split(declared_share(&objs, "llm-scratch-v2").unwrap(), 2_500, 10_000);
    assert_eq!(v, SplitVerdict::Mismatch);
    assert_eq!(d.unwrap().code.to_string(), "BG310");
    assert_eq!(judge_split(10.0, 30, 300).1.unwrap().code.to_string(), "BG311");
    assert_eq!(judge_split(10.0, 1_000, 10_000).0, SplitVerdict::Holds);
    // The same for an InferenceService in Standard mode: spec.canary[].
    let isvc = |p: &std::path::Path| {
        edit_yaml(p, |v| *at(v, "spec.serving.format") = "kserve-custom".into());
        rendered(&ex.run(&["render", p.to_str().unwrap()])).remove(0)
    };
    let (b, c) = (isvc(&ex.v1()), isvc(&ex.v2()));
    let step = render_split(&b, &c, 50).unwrap();
    crate::render::assert_valid_isvc(&step[0]);
    assert_eq!(declared_share(&step, "llm-scratch").unwrap(), 50.0);
    // Objects that state no split are said so (BG312), never judged as held.
    let why = declared_share(&[serde_json::json!({"kind": "ConfigMap"})], "llm-scratch").unwrap_err();
    let d = bundlegate::checks::canary::split::split_unreadable(&why);
    assert_eq!(d.code.to_string(), "BG312");
    assert!(d.message.contains(&why), "{}", d.message);
}

/// The shipped example's split file (what `promote` rewrites step by step)
/// is what the renders give: llm-scratch v1 as an LLMInferenceService (the
/// baseline, the route group), the example's v2 as `llm-scratch-v2`, at
/// the plan's first step, each object valid against the CRD.
/// `BUNDLEGATE_BLESS=1` rewrites it.
#[test]
fn the_shipped_split_file_is_the_two_renders_at_the_first_step() {
    use bundlegate::checks::canary::split::{declared_share, render_split};
    let tmp = tempfile::tempdir().unwrap();
    for d in ["llm-kserve-llm", "llm-scratch", "store"] {
        copy_dir(&repo().join("examples").join(d), &tmp.path().join(d));
    }
    edit_yaml(&tmp.path().join("llm-scratch/v1/release.yaml"), |v| *at(v, "spec.serving.format") = "kserve-llm".into());
    let baseline = rendered(&run_in(tmp.path(), &["render", "llm-scratch/v1/release.yaml"], &[])).remove(0);
    let mut candidate = rendered(&run_in(tmp.path(), &["render", "llm-kserve-llm/v2/release.yaml"], &[])).remove(0);
    candidate["metadata"]["name"] = "llm-scratch-v2".into();
    let objs = render_split(&baseline, &candidate, 10).unwrap();
    for o in &objs {
        assert_valid(o);
    }
    let shipped = repo().join("examples/llm-kserve-llm/v2/kserve-split.yaml");
    if std::env::var_os("BUNDLEGATE_BLESS").is_some() {
        let mut text = String::from(
            "# KServe's own traffic split for llm-scratch v2 at the plan's first step (10%): v1 is the\n\
             # baseline and the route group, v2 the candidate. `bundlegate promote` rewrites this file\n\
             # step by step (docs/kserve-llm.md#progressive-delivery-through-git).\n",
        );
        for o in &objs {
            text.push_str("---\n");
            text.push_str(&serde_yaml_ng::to_string(o).unwrap());
        }
        std::fs::write(&shipped, text).unwrap();
    }
    let text = std::fs::read_to_string(&shipped).unwrap();
    let read: Vec<Value> = serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .collect();
    assert_eq!(read, objs, "{} is not the renders at 10%: BUNDLEGATE_BLESS=1 rewrites it", shipped.display());
    assert_eq!(declared_share(&read, "llm-scratch-v2").unwrap(), 10.0);
}
