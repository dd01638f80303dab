//! The pipeline called as a library function with a [`Ctx`] whose object
//! store is injected: `object_store`'s in-memory store stands in for the
//! `s3://` bucket the bundle names, so lint → render → verify run end to end
//! with no server, no binary and no process environment; then the store is
//! changed under the bundle and verify must say so.

use std::sync::Arc;

use bundlegate::adapters::env::EnvSnapshot;
use bundlegate::app::ctx::Ctx;
use bundlegate::diag::Overrides;
use bundlegate::options::RunOptions;
use bundlegate::pipeline::{run_file, Inputs};
use bundlegate::report::Verdict;
use object_store::memory::InMemory;
use object_store::{ObjectStoreExt, PutPayload};
use serde_json::Value;

use crate::support::{edit_yaml, Example};

const URI: &str = "s3://models/llm-scratch/v2/";

/// The example's v2 files, under the key prefix the in-memory store serves
/// `URI` from (`<bucket>/<prefix>`).
fn store_with_v2(ex: &Example) -> Arc<InMemory> {
    let mem = Arc::new(InMemory::new());
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    for e in std::fs::read_dir(ex.store("v2")).unwrap() {
        let p = e.unwrap().path();
        let key = format!("models/llm-scratch/v2/{}", p.file_name().unwrap().to_string_lossy());
        let bytes = std::fs::read(&p).unwrap();
        rt.block_on(mem.put(&key.into(), PutPayload::from(bytes))).unwrap();
    }
    mem
}

fn run(ex: &Example, mem: Arc<InMemory>) -> Value {
    let pipeline = ex.path().join("pr.yaml");
    std::fs::write(
        &pipeline,
        "apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata: {name: lib}\nspec:\n  bundles: {from: all}\n  steps:\n    - name: lint\n    - name: render\n    - name: verify\n      required: true\n",
    )
    .unwrap();
    let ctx = Ctx::new(EnvSnapshot::default()).with_store(mem);
    let inputs = Inputs {
        options: RunOptions { bundles: vec![ex.v2()], repo: ex.path().to_path_buf(), ..Default::default() },
        overrides: Overrides::default(),
        verifier_image: None,
        change_policy: Default::default(),
    };
    let r = run_file(&ctx, &pipeline, &inputs).unwrap();
    serde_json::to_value(r).unwrap()
}

fn verify_step(report: &Value) -> &Value {
    report["steps"].as_array().unwrap().iter().find(|s| s["step"] == "verify").expect("a verify step")
}

fn codes(step: &Value) -> Vec<String> {
    step["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap().to_string()).collect()
}

fn example_on_s3() -> Example {
    let ex = Example::new();
    edit_yaml(&ex.v2(), |v| v["spec"]["model"]["storageUri"] = URI.into());
    ex
}

#[test]
fn lib_pipeline_verifies_against_an_injected_store() {
    let ex = example_on_s3();
    let report = run(&ex, store_with_v2(&ex));
    let v = verify_step(&report);
    assert_eq!(v["verdict"], serde_json::to_value(Verdict::Pass).unwrap(), "{v}");
    assert!(v["summary"].as_str().unwrap().contains(URI), "{}", v["summary"]);
    let steps: Vec<&str> = report["steps"].as_array().unwrap().iter().map(|s| s["step"].as_str().unwrap()).collect();
    // The release diff compares with the rollback target (v1).
    assert_eq!(steps, vec!["release-diff", "lint", "render", "verify"]);
}

#[test]
fn lib_pipeline_sees_bytes_changed_under_the_same_path_and_a_missing_file() {
    let ex = example_on_s3();
    let mem = store_with_v2(&ex);
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    // Same size, other bytes: only the hash can tell.
    let key = "models/llm-scratch/v2/tokenizer.json";
    let len = std::fs::metadata(ex.store("v2").join("tokenizer.json")).unwrap().len() as usize;
    rt.block_on(mem.put(&key.into(), PutPayload::from(vec![b'x'; len]))).unwrap();
    rt.block_on(mem.delete(&"models/llm-scratch/v2/clean_corpus.txt".into())).unwrap();
    let report = run(&ex, mem);
    let v = verify_step(&report);
    assert_eq!(v["verdict"], serde_json::to_value(Verdict::Fail).unwrap(), "{v}");
    let mut c = codes(v);
    c.sort();
    // BG101 artifact missing, BG103 digest mismatch; nothing else.
    assert_eq!(c, vec!["BG101", "BG103"], "{v}");
    let messages: Vec<&str> =
        v["diagnostics"].as_array().unwrap().iter().map(|d| d["message"].as_str().unwrap()).collect();
    assert!(messages.iter().any(|m| m.contains("tokenizer.json") && m.contains("sha256")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("clean_corpus.txt") && m.contains("not in the store")), "{messages:?}");
}
