//! What `sign` wrote, written up; the names of the signature files.

use serde_json::{json, Value};

use crate::bundle::Loaded;
use crate::report::{StepReport, Verdict};

/// The model-signing signature over the bundle's files.
pub const MODEL_SIG: &str = "model.sig";
/// bundlegate's signature over the release digest.
pub const RELEASE_SIG: &str = "release.sig";

/// The model's name in the statement: the last component of the store
/// prefix, as `model_signing` names a model by its folder.
pub fn model_name(l: &Loaded) -> String {
    let uri = l.bundle.spec.model.storage_uri.trim_end_matches('/');
    uri.rsplit(['/', ':']).next().filter(|s| !s.is_empty()).unwrap_or(&l.bundle.metadata.name).to_string()
}

/// The step: which files were written, over how many files and which
/// release, with which key (its hint, the sha256 of its public key PEM).
pub fn signed(l: &Loaded, model: &Value, files: &[String], key_hint: &str) -> StepReport {
    let resources = model["predicate"]["resources"].as_array().map_or(0, Vec::len);
    let mut s = StepReport::new("sign", &l.display);
    s.verdict = Verdict::Pass;
    s.summary = format!(
        "signed {resources} file(s) and release {} with key {}: {}",
        l.digest,
        key_hint.get(..12).unwrap_or(key_hint),
        files.join(", ")
    );
    s.data = json!({
        "releaseDigest": l.digest,
        "files": resources,
        "keyHint": key_hint,
        "modelSubject": model["subject"][0],
        "written": files,
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_named_by_its_store_folder() {
        let mut l = crate::bundle::example();
        l.bundle.spec.model.storage_uri = "s3://bucket/models/llm/v2/".into();
        assert_eq!(model_name(&l), "v2");
        l.bundle.spec.model.storage_uri = "file:v3".into();
        assert_eq!(model_name(&l), "v3");
        l.bundle.spec.model.storage_uri = "/".into();
        assert_eq!(model_name(&l), l.bundle.metadata.name);
    }

    #[test]
    fn the_step_names_the_files_the_release_and_the_key() {
        let l = crate::bundle::example();
        let model = json!({"predicate": {"resources": [1, 2, 3]}, "subject": [{"name": "v2"}]});
        let s = signed(&l, &model, &["a/model.sig".into(), "a/release.sig".into()], "0123456789abcdef");
        assert_eq!(s.verdict, Verdict::Pass);
        assert_eq!(
            s.summary,
            format!("signed 3 file(s) and release {} with key 0123456789ab: a/model.sig, a/release.sig", l.digest)
        );
        assert_eq!(s.data["files"], 3);
        assert_eq!(s.data["keyHint"], "0123456789abcdef");
    }
}
