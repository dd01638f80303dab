//! Hardening, round four, against the real binary: a line break a
//! reviewer does not see, write errors, the evidence floor of every verdict,
//! coverage from content, one local reader, the sticky comment's author,
//! Kubernetes' resource rules. The generators that drive the code directly
//! live next to it (named in docs/reliability.md).

use crate::support::*;

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

/// Run the binary in `dir` with stdout (or stderr) bound to `to`.
fn run_into(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)], to: std::process::Stdio, stderr: bool) -> Out {
    let mut c = std::process::Command::new(bin());
    c.args(args).current_dir(dir).env_remove("RUST_LOG").env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    if stderr {
        c.stderr(to).stdout(std::process::Stdio::piped());
    } else {
        c.stdout(to).stderr(std::process::Stdio::piped());
    }
    let o = c.output().expect("run bundlegate");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn dev_full() -> std::process::Stdio {
    std::fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full (Linux)").into()
}

/// What the CMP server hands to `generate` for the example Application.
const ARGO_ENV: &[(&str, &str)] = &[
    ("ARGOCD_APP_NAME", "llm-scratch"),
    ("ARGOCD_APP_NAMESPACE", "argocd"),
    ("ARGOCD_APP_PROJECT_NAME", "default"),
    ("ARGOCD_APP_REVISION", "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c"),
    ("ARGOCD_APP_REVISION_SHORT", "4f1c2d3"),
    ("ARGOCD_APP_SOURCE_PATH", "llm-scratch/v2"),
    ("ARGOCD_APP_SOURCE_REPO_URL", "https://github.com/example/models.git"),
    ("ARGOCD_APP_SOURCE_TARGET_REVISION", "main"),
    ("KUBE_VERSION", "1.33"),
];

/// Every command that prints a report or manifests, with stdout on a full
/// disk: exit 2 and why on stderr, never 0 with nothing written (Argo CD
/// would apply an empty render).
#[test]
fn a_report_that_cannot_be_written_is_exit_2() {
    let ex = Example::new();
    let v2 = ex.v2();
    let v2 = v2.to_str().unwrap();
    let source = ex.path().join("llm-scratch/v2");
    type Case<'a> = (Vec<&'a str>, &'a std::path::Path, &'a [(&'a str, &'a str)]);
    let cases: Vec<Case> = vec![
        (vec!["render", v2], ex.path(), &[]),
        (vec!["lint", v2, "--format", "json"], ex.path(), &[]),
        (vec!["lint", v2, "--format", "markdown"], ex.path(), &[]),
        (vec!["digest", v2], ex.path(), &[]),
        (vec!["codes", "--format", "markdown"], ex.path(), &[]),
        (vec!["argocd", "generate"], &source, ARGO_ENV),
    ];
    for (args, dir, env) in cases {
        let ok = run_in(dir, &args, env);
        assert!(ok.code != 2 && !ok.stdout.is_empty(), "{args:?} runs: {}\n{}", ok.stdout, ok.stderr);
        let out = run_into(dir, &args, env, dev_full(), false);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("cannot write the report to standard output"), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("No space left on device"), "{args:?}: {}", out.stderr);
    }
}

/// A reader that went away (`| head`) ends the write quietly: the exit code
/// is the report's own, stderr says nothing of it.
#[test]
fn a_reader_that_went_away_ends_the_report_quietly() {
    let ex = Example::new();
    let v2 = ex.v2();
    let ok = ex.run(&["lint", v2.to_str().unwrap()]);
    let (read, write) = std::io::pipe().unwrap();
    drop(read);
    let out = run_into(ex.path(), &["lint", v2.to_str().unwrap()], &[], write.into(), false);
    assert_eq!(out.code, ok.code, "{}", out.stderr);
    assert!(!out.stderr.contains("cannot write"), "{}", out.stderr);
}

/// A failure's message on stderr that cannot be written is exit 2 too (it
/// was 2 already), and a failing stderr never turns a refusal into a pass.
#[test]
fn stderr_on_a_full_disk_never_turns_a_refusal_into_a_pass() {
    let ex = Example::new();
    let missing = ex.path().join("nothing-here/release.yaml");
    let out = run_into(ex.path(), &["lint", missing.to_str().unwrap()], &[], dev_full(), true);
    assert_eq!(out.code, 2, "{}", out.stdout);
}

/// The in-pod verifier's log is its record of the check: with stderr on a
/// full disk it exits 2 naming why (it panicked before, exit 101).
#[test]
fn the_pod_verifier_with_a_full_stderr_is_exit_2() {
    let ex = Example::new();
    let root = ex.store("v2");
    std::fs::remove_file(root.join("tokenizer.json")).unwrap();
    let m = crate::verify_files::manifest(&ex);
    let term = ex.path().join("termination-log");
    let marker = ex.path().join("verified");
    let args = [
        "verify-files",
        "--format",
        "json",
        "--root",
        root.to_str().unwrap(),
        "--termination-log",
        term.to_str().unwrap(),
        "--marker",
        marker.to_str().unwrap(),
    ];
    let out = run_into(ex.path(), &args, &[("BUNDLEGATE_ARTIFACTS", &m)], dev_full(), true);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stdout.contains("cannot write the verifier's log to standard error"), "{}", out.stdout);
    assert!(!marker.exists(), "a failed check leaves no marker");
}

/// A snapshot whose running pod is listed without its containers: its
/// requests are unknown (BG207). `-A` or `-W` quiets the finding to a
/// warning, but the step stays INCONCLUSIVE (exit 1): it passed before.
#[test]
fn preflight_never_passes_an_incomplete_snapshot_allowed_away() {
    let ex = Example::new();
    let text = std::fs::read_to_string(repo().join("examples/cluster/roomy.yaml")).unwrap();
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text).unwrap();
    let items = v["items"].as_sequence_mut().unwrap();
    let pod = items.iter_mut().find(|i| i["kind"] == "Pod").expect("the example lists a pod");
    pod["spec"].as_mapping_mut().unwrap().remove("containers");
    let snap = ex.path().join("incomplete.yaml");
    std::fs::write(&snap, serde_yaml_ng::to_string(&v).unwrap()).unwrap();
    let v2 = ex.v2();
    let base = ["preflight", "--format", "json", v2.to_str().unwrap(), "--snapshot", snap.to_str().unwrap()];
    let out = ex.run(&base);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.codes().contains(&"BG207".to_string()), "{}", out.stdout);
    for flag in ["-A", "-W"] {
        let mut args = base.to_vec();
        args.extend([flag, "BG207"]);
        let out = ex.run(&args);
        assert_eq!(out.code, 1, "{flag}: {}\n{}", out.stdout, out.stderr);
        let r = out.json();
        assert_eq!(r["steps"][0]["verdict"], "inconclusive", "{flag}: {}", out.stdout);
        assert_eq!(out.diag("BG207")["severity"], "warning", "{flag}: kept, as a warning");
    }
}

fn mkfifo(p: &std::path::Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", p.display());
}

/// A FIFO where `report merge` reads a shard report, named or in a folder:
/// exit 2 at once naming it (object_store's local reader waited for a
/// writer forever).
#[test]
fn report_merge_refuses_a_fifo_at_once_naming_it() {
    let ex = Example::new();
    let dir = ex.path().join("reports");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = dir.join("shard-0.json");
    mkfifo(&fifo);
    for input in [fifo.to_str().unwrap(), dir.to_str().unwrap()] {
        let t0 = std::time::Instant::now();
        let out = run_within(ex.path(), &["report", "merge", "--format", "json", input], &[], 30);
        assert_eq!(out.code, 2, "{input}: {}\n{}", out.stdout, out.stderr);
        assert!(out.stderr.contains("shard-0.json") && out.stderr.contains("FIFO"), "{input}: {}", out.stderr);
        assert!(t0.elapsed() < std::time::Duration::from_secs(20), "{input}: took {:?}", t0.elapsed());
    }
}

/// A FIFO in the shared cache folder (in place of a bundle's cache object)
/// or as the single cache file: `audit --cache` exits 2 at once naming it,
/// neither waiting on it nor re-hashing around a file it did not write.
#[test]
fn audit_cache_refuses_a_fifo_at_once_naming_it() {
    let ex = Example::new();
    let cache = ex.path().join("cache");
    let audit = |cache: &std::path::Path| {
        run_within(
            ex.path(),
            &["audit", "--format", "json", "--progress", "never", ".", "--cache", cache.to_str().unwrap()],
            &[],
            60,
        )
    };
    let first = audit(&cache);
    assert_ne!(first.code, 2, "{}\n{}", first.stdout, first.stderr);
    let objects: Vec<std::path::PathBuf> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert!(!objects.is_empty(), "the audit wrote its cache objects");
    for o in &objects {
        std::fs::remove_file(o).unwrap();
        mkfifo(o);
    }
    let out = audit(&cache);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("FIFO") && out.stderr.contains(".json"), "{}", out.stderr);
    let file = ex.path().join("cache.json");
    mkfifo(&file);
    let out = audit(&file);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("cache.json") && out.stderr.contains("FIFO"), "{}", out.stderr);
}

/// Requests and limits Kubernetes' API server refuses: a fractional GPU, a
/// GPU requested without a limit, a GPU request other than its limit, a
/// cpu request above its limit. lint and preflight both fail them at the
/// field (both passed, and the pod was never created).
#[test]
fn lint_and_preflight_refuse_what_kubernetes_refuses_in_resources() {
    type Edit = fn(&mut serde_yaml_ng::Value);
    let cases: [(Edit, &str, &str); 4] = [
        (
            |v| {
                at(v, "spec.serving.resources.requests")["nvidia.com/gpu"] = yaml("500m");
                at(v, "spec.serving.resources.limits")["nvidia.com/gpu"] = yaml("500m");
            },
            "BG023",
            "spec.serving.resources.requests.nvidia.com/gpu",
        ),
        (
            |v| {
                at(v, "spec.serving.resources.limits").as_mapping_mut().unwrap().remove("nvidia.com/gpu");
            },
            "BG024",
            "spec.serving.resources.limits.nvidia.com/gpu",
        ),
        (
            |v| at(v, "spec.serving.resources.limits")["nvidia.com/gpu"] = yaml("2"),
            "BG025",
            "spec.serving.resources.requests.nvidia.com/gpu",
        ),
        (|v| at(v, "spec.serving.resources.limits")["cpu"] = yaml("1"), "BG025", "spec.serving.resources.requests.cpu"),
    ];
    let snapshot = repo().join("examples/cluster/roomy.yaml");
    for (edit, code, field) in cases {
        let ex = Example::new();
        let p = ex.edit_v2(edit);
        let out = ex.run(&["lint", p.to_str().unwrap(), "--format", "json"]);
        assert_eq!(out.code, 1, "{code}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.diag(code)["field"], field, "{code}: {}", out.stdout);
        let out =
            ex.run(&["preflight", "--format", "json", p.to_str().unwrap(), "--snapshot", snapshot.to_str().unwrap()]);
        assert_eq!(out.code, 1, "{code}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.json()["steps"][0]["verdict"], "fail", "{code}: {}", out.stdout);
        assert_eq!(out.diag(code)["field"], field, "{code}: {}", out.stdout);
    }
}

/// A name the outlets must show as text: ESC, BEL, a lone CR, a forged
/// workflow command on its own line, GitHub's escape, a mention, a link,
/// the sticky comment's marker, U+202E.
const HOSTILE_NAME: &str =
    "m\x1b[31m\x07\r\n::error::injected%0A@team[x](http://e)<!-- bundlegate:report part 1/1 -->\u{202e}";

/// No control character but the layout's line feeds, and no line the
/// Actions runner would read as a workflow command.
fn only_text(what: &str, text: &str) {
    let bad = |c: char| matches!(c, '\0'..='\x09' | '\x0b'..='\x1f' | '\x7f'..='\u{9f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    assert!(!text.chars().any(bad), "{what}: a control character reaches it:\n{text:?}");
    assert!(!text.lines().any(|l| l.trim_start().starts_with("::")), "{what}: a forged workflow command:\n{text}");
}

/// The in-pod verifier names the bundle's artifact paths on stderr, in the
/// status file the readiness probe prints and in the termination log
/// `kubectl describe pod` shows: each as text, one line per entry.
#[test]
fn the_pod_verifier_shows_a_hostile_artifact_path_as_text_everywhere_it_writes() {
    let ex = Example::new();
    let root = ex.store("v2");
    let mut m: serde_json::Value = serde_json::from_str(&crate::verify_files::manifest(&ex)).unwrap();
    m["artifacts"][0]["path"] = HOSTILE_NAME.into();
    let (term, marker) = (ex.path().join("termination-log"), ex.path().join("verified"));
    let args = [
        "verify-files",
        "--root",
        root.to_str().unwrap(),
        "--termination-log",
        term.to_str().unwrap(),
        "--marker",
        marker.to_str().unwrap(),
    ];
    let out = run_in(ex.path(), &args, &[("BUNDLEGATE_ARTIFACTS", &m.to_string())]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("::error::injected"), "the path is named: {}", out.stderr);
    only_text("stderr", &out.stderr);
    only_text("stdout", &out.stdout);
    let term = std::fs::read_to_string(&term).unwrap();
    assert!(term.starts_with("MISSING m\\u{1b}[31m\\u{7}\\r\\n::error::injected"), "{term}");
    only_text("termination log", &term);
    let status = std::fs::read_to_string(ex.path().join("verified.status")).unwrap();
    assert_eq!(status.lines().count(), 1, "{status}");
    only_text("status file", &status);
    let probe = run_in(
        ex.path(),
        &["verify-files", "--ready", "--marker", marker.to_str().unwrap()],
        &[("BUNDLEGATE_ARTIFACTS", &m.to_string())],
    );
    assert_eq!(probe.code, 1);
    only_text("readiness probe", &format!("{}{}", probe.stdout, probe.stderr));
}

/// A tool failure on stderr and a log line (`-v`) naming a value the
/// environment set (Argo CD's Application name): one line each, as text.
#[test]
fn a_failure_and_a_log_line_on_stderr_show_a_hostile_name_as_text() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(
        dir.path(),
        &["-v", "argocd", "generate"],
        &[("ARGOCD_APP_NAME", HOSTILE_NAME), ("ARGOCD_APP_NAMESPACE", "argocd")],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let lines: Vec<&str> = out.stderr.lines().filter(|l| l.contains("::error::injected")).collect();
    assert_eq!(lines.len(), 2, "the log line and the error, one line each:\n{}", out.stderr);
    assert!(
        lines.iter().any(|l| l.starts_with("error: ")) && lines.iter().any(|l| l.contains("INFO")),
        "{}",
        out.stderr
    );
    only_text("stderr", &out.stderr);
}
