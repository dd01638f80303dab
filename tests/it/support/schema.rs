//! Strict schema checks, as the API server would apply them: an unknown
//! field is an error (a CRD's structural schema prunes it silently, which is
//! worse), so a rendered field that would vanish fails the test.

use serde_json::{json, Value};

use super::repo;

/// Every object schema with `properties` gets `additionalProperties: false`
/// unless it says `x-kubernetes-preserve-unknown-fields`.
fn close_objects(v: &mut Value) {
    match v {
        Value::Object(m) => {
            // Swagger writes IntOrString as a string with this format; the
            // API server takes either.
            if m.get("format").and_then(Value::as_str) == Some("int-or-string") {
                m.insert("type".into(), json!(["string", "integer"]));
            }
            let preserve = m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool).unwrap_or(false);
            if m.contains_key("properties") && !m.contains_key("additionalProperties") && !preserve {
                m.insert("additionalProperties".into(), json!(false));
            }
            for (_, x) in m.iter_mut() {
                close_objects(x);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// Errors of `obj` against the KServe InferenceService CRD, strict.
pub fn isvc_errors(obj: &Value) -> Vec<String> {
    let p = repo().join("tests/fixtures/reference/kserve/serving.kserve.io_inferenceservices.yaml");
    let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let mut schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"].clone();
    close_objects(&mut schema);
    let v = jsonschema::validator_for(&schema).expect("CRD schema compiles");
    v.iter_errors(obj).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

/// Errors of `obj` against the Kubernetes definitions (trimmed swagger), strict.
pub fn k8s_errors(obj: &Value) -> Vec<String> {
    let p = repo().join("tests/fixtures/reference/kubernetes/definitions.trimmed.json");
    let mut doc: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let (api_version, kind) = (obj["apiVersion"].as_str().unwrap(), obj["kind"].as_str().unwrap());
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let name = doc["definitions"]
        .as_object()
        .unwrap()
        .iter()
        .find(|(_, d)| {
            d["x-kubernetes-group-version-kind"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|g| g["group"] == group && g["version"] == version && g["kind"] == kind)
        })
        .map(|(n, _)| n.clone())
        .unwrap_or_else(|| panic!("no definition for {api_version} {kind} in {}", p.display()));
    close_objects(&mut doc["definitions"]);
    let schema = json!({"$ref": format!("#/definitions/{name}"), "definitions": doc["definitions"]});
    let v = jsonschema::options().with_draft(jsonschema::Draft::Draft4).build(&schema).expect("schema compiles");
    v.iter_errors(obj).map(|e| format!("{e} at {}", e.instance_path)).collect()
}

/// Errors of `obj` against a CRD kept under tests/fixtures/reference (the
/// version named by the object's apiVersion), strict.
pub fn crd_errors(rel: &str, obj: &Value) -> Vec<String> {
    let p = repo().join("tests/fixtures/reference").join(rel);
    let crd: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
    let version = obj["apiVersion"].as_str().and_then(|a| a.rsplit('/').next()).unwrap_or_default().to_string();
    let v = crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == version.as_str())
        .unwrap_or_else(|| panic!("{rel} has no version {version}"));
    let mut schema = v["schema"]["openAPIV3Schema"].clone();
    close_objects(&mut schema);
    let v = jsonschema::validator_for(&schema).expect("CRD schema compiles");
    v.iter_errors(obj).map(|e| format!("{e} at {}", e.instance_path)).collect()
}
