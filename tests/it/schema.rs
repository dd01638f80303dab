//! The published JSON Schemas (`schemas/`) are `bundlegate schema`'s output,
//! and they agree with the strict parsers: every bundle the bundle parser
//! accepts (examples, fixtures) and every shipped pipeline validates, and a
//! key the parser refuses as unknown the schema refuses too.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::*;

const KINDS: [(&str, &str); 2] = [("bundle", "release-bundle.schema.json"), ("pipeline", "pipeline.schema.json")];

fn validator(file: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("schemas").join(file)).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("schemas/{file} compiles: {e}"))
}

/// YAML as the JSON value a schema validator (and an editor) sees.
fn as_json(text: &str) -> Value {
    serde_yaml_ng::from_str(text).unwrap()
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc).map(|e| format!("{}: {e}", e.instance_path)).collect()
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "yaml" || x == "yml") {
            out.push(p);
        }
    }
}

#[test]
fn committed_schemas_are_what_the_command_prints() {
    for (kind, file) in KINDS {
        let out = run(&["schema", kind]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let committed = std::fs::read_to_string(repo().join("schemas").join(file)).unwrap_or_default();
        assert!(
            committed == out.stdout,
            "schemas/{file} is not what `bundlegate schema {kind}` prints; regenerate it:\n  \
             cargo run -- schema {kind} > schemas/{file}"
        );
        let json = run(&["--format", "json", "schema", kind]).json();
        assert_eq!(json["steps"][0]["data"], serde_json::from_str::<Value>(&out.stdout).unwrap());
        let md = run(&["--format", "markdown", "schema", kind]);
        assert!(md.code == 0 && md.stdout.contains(file), "{}", md.stdout);
    }
}

/// Every file the strict parser reads as a bundle validates: the examples,
/// and the fixtures that are bundles (a fixture the parser refuses is
/// another kind of file, or a bad bundle on purpose).
#[test]
fn every_parsed_bundle_validates_against_the_schema() {
    let v = validator("release-bundle.schema.json");
    let mut files = Vec::new();
    yaml_files(&repo().join("examples"), &mut files);
    yaml_files(&repo().join("tests/fixtures"), &mut files);
    let mut bundles = 0;
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        if bundlegate::bundle::parse(&f.display().to_string(), &f, text.clone()).is_err() {
            continue;
        }
        bundles += 1;
        if f.starts_with(repo().join("examples")) {
            let modeline = "# yaml-language-server: $schema=../../../schemas/release-bundle.schema.json\n";
            assert!(text.starts_with(modeline), "{} starts with {modeline}", f.display());
        }
        let errs = errors(&v, &as_json(&text));
        assert!(errs.is_empty(), "{} does not validate:\n{}", f.display(), errs.join("\n"));
    }
    assert!(bundles >= 3, "the examples' bundles were found ({bundles})");
}

#[test]
fn every_shipped_pipeline_validates_against_the_schema() {
    let v = validator("pipeline.schema.json");
    let mut files = Vec::new();
    yaml_files(&repo().join("pipelines"), &mut files);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        bundlegate::pipeline::parse(&f, &text).unwrap();
        let errs = errors(&v, &as_json(&text));
        assert!(errs.is_empty(), "{} does not validate:\n{}", f.display(), errs.join("\n"));
        assert!(
            text.starts_with("# yaml-language-server: $schema=../schemas/pipeline.schema.json\n"),
            "{}",
            f.display()
        );
    }
}

type Edit = fn(&mut serde_yaml_ng::Value);

/// Where serde denies unknown fields the schema has additionalProperties
/// false: a key the parser refuses, the schema refuses.
#[test]
fn unknown_keys_the_parsers_refuse_the_schemas_refuse() {
    let path = repo().join("examples/llm-scratch/v2/release.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("# yaml-language-server: $schema=../../../schemas/release-bundle.schema.json\n"));
    let v = validator("release-bundle.schema.json");
    let cases: [(&str, Edit); 3] = [
        ("top level", |b| b["extra"] = 1.into()),
        ("spec.serving", |b| b["spec"]["serving"]["replica"] = 2.into()),
        ("an artifact", |b| b["spec"]["model"]["artifacts"][0]["sha"] = "x".into()),
    ];
    for (place, edit) in cases {
        let mut b: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
        edit(&mut b);
        let edited = serde_yaml_ng::to_string(&b).unwrap();
        let refused = bundlegate::bundle::parse("b.yaml", &path, edited.clone());
        assert!(refused.is_err(), "the parser accepts an unknown key at {place}");
        assert!(!v.is_valid(&as_json(&edited)), "the schema accepts an unknown key at {place}");
    }
    let v = validator("pipeline.schema.json");
    for step in [
        "{name: lint, with: {deep: true}}",
        "{name: canary, with: {prometheus: 'http://x'}}",
        "{name: lint, colour: red}",
    ] {
        let p = format!(
            "apiVersion: bundlegate.dev/v1\nkind: Pipeline\nmetadata: {{name: t}}\nspec:\n  steps:\n    - {step}\n"
        );
        assert!(bundlegate::pipeline::parse(Path::new("p.yaml"), &p).is_err(), "{step}");
        assert!(!v.is_valid(&as_json(&p)), "the schema accepts {step}");
    }
}
