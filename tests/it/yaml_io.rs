//! The hardening issue's classes 1–3, round three, against the real binary:
//! every YAML input through the one reader, every output through the one
//! writer (`argocd generate` too), names the tool owns. The generators that
//! drive the code directly live next to it: `yaml_guard::tests::*`,
//! `manifests::parse_back_tests::*`.
//!
//! One reader, one writer, names the tool owns (the hardening issue's
//! classes 1–3), against the real binary. The generators live next to the
//! code: `yaml_guard::tests::what_the_guard_passes_both_readers_read_alike`,
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

/// A bundle whose line holds a LINE SEPARATOR: the guard's reader saw one
/// scalar, libyaml a second key that overrode the reviewed image.
#[test]
fn a_unicode_line_break_is_refused_naming_the_line() {
    let ex = Example::new();
    let p = ex.v2();
    let text = std::fs::read_to_string(&p).unwrap();
    let hostile = text.replacen("  name: llm-scratch\n", "  name: llm-scratch\u{2028}  namespace: kube-system\n", 1);
    assert_ne!(text, hostile, "the example has the name line");
    std::fs::write(&p, hostile).unwrap();
    for cmd in ["lint", "render"] {
        let out = ex.run(&[cmd, p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 2, "{cmd}: {}\n{}", out.stdout, out.stderr);
        let all = format!("{}{}", out.stdout, out.stderr);
        assert!(all.contains("LINE SEPARATOR (U+2028)") && all.contains("release.yaml"), "{all}");
    }
}

/// A bundle that sets a name bundlegate owns: lint BG021 at that field,
/// render refuses to write the pod with it twice.
#[test]
fn a_reserved_env_name_is_bg021_and_never_rendered_twice() {
    let ex = Example::new();
    let p = ex.edit_v2(|v| {
        at(v, "spec.runtime")["env"]["STORAGE_URI"] = "s3://elsewhere/unreviewed/".into();
    });
    let out = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG021");
    assert!(d["message"].as_str().unwrap().contains("STORAGE_URI"), "{d}");
    assert!(
        d["span"]["line"].as_u64().unwrap_or(0) > 0 || d["file"].is_string() || d.to_string().contains("release.yaml"),
        "located: {d}"
    );
    let out = ex.run(&["render", p.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("appears twice") || out.stdout.contains("appears twice"),
        "{}{}",
        out.stdout,
        out.stderr
    );
}

/// Values a YAML 1.1 reader would misread bare are written quoted.
#[test]
fn yaml11_lookalike_values_render_quoted() {
    let ex = Example::new();
    let p = ex.edit_v2(|v| {
        let env = &mut at(v, "spec.runtime")["env"];
        env["HF_A"] = "yes".into();
        env["HF_B"] = "12:30".into();
        env["HF_C"] = "1_000".into();
    });
    let out = ex.run(&["render", p.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    for v in ["\"yes\"", "\"12:30\"", "\"1_000\""] {
        assert!(out.stdout.contains(&format!("value: {v}")), "{v} not quoted:\n{}", out.stdout);
    }
}

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
