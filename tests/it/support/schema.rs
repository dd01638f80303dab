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
    crd_errors("kserve/serving.kserve.io_inferenceservices.yaml", obj)
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
/// version named by the object's apiVersion), as the API server would find
/// them: strict (a field it would prune is an error), list-map keys unique
/// ([`list_map_errors`]), and the CRD's exclusivity rules ([`cel_errors`]).
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
    let raw = v["schema"]["openAPIV3Schema"].clone();
    let mut schema = raw.clone();
    close_objects(&mut schema);
    let v = jsonschema::validator_for(&schema).expect("CRD schema compiles");
    let mut errors: Vec<String> = v.iter_errors(obj).map(|e| format!("{e} at {}", e.instance_path)).collect();
    walk_structural(&raw, obj, "", &mut errors);
    errors
}

/// The schema of `key` under an object schema (its `properties`, else its
/// `additionalProperties`).
fn child<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema
        .pointer(&format!("/properties/{}", key.replace('~', "~0").replace('/', "~1")))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// Walk the object along its schema: each list the schema marks
/// `x-kubernetes-list-type: map` must hold each key tuple once (the API
/// server refuses a duplicate: `Duplicate value`), and each rule of the form
/// `!(has(self.a) && has(self.b))` must hold. Other CEL rules are not
/// evaluated here (this is no CEL interpreter); the rendered objects use
/// none of the fields they constrain.
fn walk_structural(schema: &Value, obj: &Value, at: &str, errors: &mut Vec<String>) {
    errors.extend(cel_errors(schema, obj, at));
    match obj {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(s) = child(schema, k) {
                    walk_structural(s, x, &format!("{at}/{k}"), errors);
                }
            }
        }
        Value::Array(items) => {
            errors.extend(list_map_errors(schema, items, at));
            if let Some(s) = schema.get("items") {
                for (i, x) in items.iter().enumerate() {
                    walk_structural(s, x, &format!("{at}/{i}"), errors);
                }
            }
        }
        _ => {}
    }
}

/// Duplicate keys in a list the schema merges by key.
pub fn list_map_errors(schema: &Value, items: &[Value], at: &str) -> Vec<String> {
    if schema.get("x-kubernetes-list-type").and_then(Value::as_str) != Some("map") {
        return Vec::new();
    }
    let keys: Vec<&str> =
        schema["x-kubernetes-list-map-keys"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for it in items {
        // A missing key takes the schema's default (e.g. a port's protocol TCP).
        let tuple: Vec<Value> = keys
            .iter()
            .map(|k| it.get(*k).cloned().unwrap_or_else(|| schema["items"]["properties"][*k]["default"].clone()))
            .collect();
        if !seen.insert(serde_json::to_string(&tuple).unwrap()) {
            out.push(format!("duplicate list-map key {keys:?} = {tuple:?} at {at}"));
        }
    }
    out
}

/// The CRD's `!(has(self.a) && has(self.b))` rules on this node.
pub fn cel_errors(schema: &Value, obj: &Value, at: &str) -> Vec<String> {
    let mut out = Vec::new();
    for rule in schema.get("x-kubernetes-validations").and_then(Value::as_array).into_iter().flatten() {
        let text = rule["rule"].as_str().unwrap_or_default();
        let Some(inner) = text.strip_prefix("!(has(self.").and_then(|r| r.strip_suffix("))")) else { continue };
        let Some((a, b)) = inner.split_once(") && has(self.") else { continue };
        if obj.get(a).is_some() && obj.get(b).is_some() {
            out.push(format!("{} ({text}) at {at}", rule["message"].as_str().unwrap_or_default()));
        }
    }
    out
}
