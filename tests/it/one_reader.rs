//! The hardening issue's classes 1–3, round three, against the real binary:
//! every YAML input through the one reader, every output through the one
//! writer (`argocd generate` too), names the tool owns. The generators that
//! drive the code directly live next to it: `yaml_guard::tests::*`,
//! `manifests::parse_back_tests::*`.

use std::process::Command;

use proptest::prelude::*;
use serde_json::Value;

use crate::support::*;

/// Namespaces Argo CD may pass as a parameter that are valid DNS labels and
/// yet something other than a string to a YAML 1.1 reader unquoted.
const LOOKALIKE_NAMESPACES: &[&str] = &[
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "true",
    "false",
    "null",
    "2001-1-2",
    "2001-12-14",
    "0x1f",
    "0o17",
    "0b1",
    "1e3",
    "123",
    "0777",
];

/// The plain scalars of `yaml` a YAML 1.1 reader (a Kubernetes client, Argo
/// CD) would read as other than the text written.
fn misread_plain(yaml: &str) -> Vec<String> {
    bundlegate::manifests::yaml11_misreads(yaml).expect("written YAML parses").into_iter().map(|(_, v)| v).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// `argocd generate` rewrites the objects when it annotates the Git
    /// revision (plain Deployments): that text goes through the one writer
    /// and is read back too. With serde_yaml_ng as a second writer,
    /// `namespace: 2001-1-2` and `namespace: yes` were written bare.
    #[test]
    fn argocd_generate_writes_lookalike_namespaces_as_strings(ns in prop::sample::select(LOOKALIKE_NAMESPACES)) {
        let ex = Example::new();
        ex.edit_v2(|v| {
            *at(v, "spec.serving.format") = "deployment".into();
            *at(v, "spec.serving.verifyOnStart") = yaml("\"off\"");
        });
        let params = format!(r#"[{{"name":"namespace","string":"{ns}"}},{{"name":"lint","string":"false"}}]"#);
        let o = Command::new(bin())
            .args(["argocd", "generate"])
            .current_dir(ex.path().join("llm-scratch/v2"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ARGOCD_APP_NAME", "llm-scratch")
            .env("ARGOCD_APP_REVISION", "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c")
            .env("ARGOCD_APP_SOURCE_PATH", "llm-scratch/v2")
            .env("ARGOCD_APP_PARAMETERS", &params)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&o.stdout);
        prop_assert!(o.status.success(), "{}\n{}", stdout, String::from_utf8_lossy(&o.stderr));
        prop_assert!(misread_plain(&stdout).is_empty(), "{:?} written plain:\n{}", misread_plain(&stdout), stdout);
        for d in serde_yaml_ng::Deserializer::from_str(&stdout) {
            let v: Value = serde::Deserialize::deserialize(d).unwrap();
            prop_assert_eq!(&v["metadata"]["namespace"], &Value::String(ns.to_string()));
        }
    }
}

/// A bidirectional control makes the reviewed line read in another order:
/// refused at its line, naming the field, in a comment or a value alike.
#[test]
fn a_bidi_control_is_refused_naming_line_and_field() {
    let ex = Example::new();
    let p = ex.v2();
    let text = std::fs::read_to_string(&p).unwrap();
    let line = text.lines().position(|l| l.trim_start().starts_with("version: ")).unwrap() + 1;
    let hostile = text.replacen("  version: ", "  version: \u{202e}", 1);
    std::fs::write(&p, hostile).unwrap();
    let out = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains(&format!("release.yaml:{line}:")) && all.contains("U+202E") && all.contains("metadata.version"),
        "{all}"
    );
}

/// A control character libyaml refuses and yaml-rust2 reads (here NUL in
/// a comment) is refused with its line, whichever reader would have run.
#[test]
fn a_control_character_is_refused_naming_the_line() {
    let ex = Example::new();
    let p = ex.v2();
    let text = std::fs::read_to_string(&p).unwrap();
    std::fs::write(&p, format!("{text}# \u{0}\n")).unwrap();
    let out = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(all.contains(&format!("release.yaml:{}:", text.lines().count() + 1)) && all.contains("U+0000"), "{all}");
}
