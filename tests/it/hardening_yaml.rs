//! One reader, one writer, names the tool owns (the hardening issue's
//! classes 1–3), against the real binary. The generators live next to the
//! code: `yaml_guard::tests::what_the_guard_passes_both_readers_read_alike`,
//! `manifests::parse_back_tests::*`.

use crate::support::*;

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
