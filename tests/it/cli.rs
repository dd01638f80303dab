//! Outside input never panics (exit 101): huge or malformed durations and
//! job counts in flags and environment variables are refused at parse time
//! naming the flag (exit 2), stringly options are closed sets, and a reader
//! that closes the pipe early (`| head`) ends the command quietly.
//!
//! Also what every command does with its outlets: a report that cannot be
//! written, a reader gone away, a full stderr, files that are not files, and
//! hostile names shown as text.

use std::process::{Command, Stdio};

use crate::support::*;

fn assert_refused(out: &Out, flag: &str, what: &str) {
    assert_eq!(out.code, 2, "{what}: {}\n{}", out.stdout, out.stderr);
    assert!(!out.stderr.contains("panicked"), "{what} panicked:\n{}", out.stderr);
    assert!(out.stderr.contains(flag), "{what}: the error names {flag}:\n{}", out.stderr);
}

const HUGE: [&str; 7] = ["99999999999999999999999h", "1e400s", "184467440737095516160s", "inf", "NaN", "-5s", "8d"];

#[test]
fn huge_or_malformed_durations_are_refused_naming_the_flag() {
    let ex = Example::new();
    let b = ex.v2();
    let b = b.to_str().unwrap();
    for v in HUGE.iter().copied().chain(["0s", "0", ""]) {
        // `--flag=VALUE`, so `-5s` reaches the value parser.
        let f = |flag: &str| format!("{flag}={v}");
        let watch = |flag: &str| ex.run(&["watch", b, "--app", "x", "--revision", "abc", &f(flag)]);
        assert_refused(&watch("--timeout"), "--timeout", &format!("watch --timeout {v}"));
        assert_refused(&watch("--probe-interval"), "--probe-interval", &format!("watch --probe-interval {v}"));
        assert_refused(&ex.run(&["revert", b, &f("--max-age")]), "--max-age", &format!("revert --max-age {v}"));
        assert_refused(&ex.run(&["canary", b, &f("--window")]), "--window", &format!("canary --window {v}"));
    }
    assert_refused(&ex.run(&["revert", b, "--failed-at", "yesterday"]), "--failed-at", "revert --failed-at");
}

#[test]
fn jobs_out_of_range_are_refused() {
    let ex = Example::new();
    let b = ex.v2();
    let b = b.to_str().unwrap();
    // 0 would never start a read; above tokio's Semaphore::MAX_PERMITS it panicked.
    for v in ["0", "257", "2305843009213693952", "18446744073709551616", "-1", "four"] {
        let j = format!("--jobs={v}");
        assert_refused(&ex.run(&["verify", b, &j]), "--jobs", &format!("verify --jobs {v}"));
        assert_refused(&ex.run(&["audit", ".", &j]), "--jobs", &format!("audit --jobs {v}"));
        assert_refused(
            &ex.run(&["publish", "store/llm-scratch/v2", "--to", "file:../x/", "--bundle", b, &j]),
            "--jobs",
            &format!("publish --jobs {v}"),
        );
    }
    let out = ex.run(&["verify", b, "--jobs", "256", "--progress", "never"]);
    assert_eq!(out.code, 0, "the maximum is accepted: {}\n{}", out.stdout, out.stderr);
}

#[test]
fn closed_sets_reject_typos() {
    let ex = Example::new();
    let b = ex.v2();
    let b = b.to_str().unwrap();
    // A typo used to mean `auto` silently.
    let out = ex.run(&["verify", b, "--progress", "alwyas"]);
    assert_refused(&out, "--progress", "verify --progress alwyas");
    assert!(out.stderr.contains("always") && out.stderr.contains("never"), "lists the values:\n{}", out.stderr);
    assert_refused(&ex.run(&["canary", b, "--mode", "shdow"]), "--mode", "canary --mode shdow");
}

/// A kubeconfig for a cluster that is not there (a port nothing listens on).
fn dead_kubeconfig(ex: &Example) -> std::path::PathBuf {
    use crate::support::kube::{dead_port, write_kubeconfig};
    write_kubeconfig(&ex.path().join("kubeconfig"), dead_port(), None, None)
}

/// Duration environment variables fall back to their default instead of
/// panicking in `Duration::from_secs_f64`.
#[test]
fn huge_duration_environment_variables_do_not_panic() {
    let ex = Example::new();
    let b = ex.v2();
    let kc = dead_kubeconfig(&ex);
    for v in HUGE {
        let env = [("KUBECONFIG", kc.to_str().unwrap()), ("BUNDLEGATE_KUBE_TIMEOUT", v), ("BUNDLEGATE_WATCH_POLL", v)];
        let out = run_in(ex.path(), &["preflight", b.to_str().unwrap(), "--live"], &env);
        assert!(out.code != 101 && !out.stderr.contains("panicked"), "BUNDLEGATE_KUBE_TIMEOUT={v}:\n{}", out.stderr);
        assert_eq!(out.code, 2, "the dead cluster is an error: {}\n{}", out.stdout, out.stderr);
    }
}

/// `BUNDLEGATE_WATCH_POLL=0` made watch read the cluster in a tight loop
/// (a `Duration` of zero between GETs). Zero is refused, as is anything over
/// the 7-day cap or not a duration: exit 2 naming the variable, before any
/// request.
#[test]
fn zero_or_invalid_watch_poll_is_refused_naming_the_variable() {
    let ex = Example::new();
    let b = ex.v2();
    let kc = dead_kubeconfig(&ex);
    for v in ["0", "0s", "0ms", "8d", "soon"] {
        let env = [("KUBECONFIG", kc.to_str().unwrap()), ("BUNDLEGATE_WATCH_POLL", v)];
        let out = run_within(
            ex.path(),
            &["watch", b.to_str().unwrap(), "--app", "x", "--revision", "abc", "--timeout", "30s"],
            &env,
            20,
        );
        assert_refused(&out, "BUNDLEGATE_WATCH_POLL", &format!("BUNDLEGATE_WATCH_POLL={v}"));
    }
}

/// Run with stdout a pipe whose reader is already gone: the write fails with
/// EPIPE (Rust ignores SIGPIPE), which must end the command quietly.
// std::io::pipe is newer than the crate's MSRV; tests run on the CI toolchain.
#[allow(clippy::incompatible_msrv)]
fn closed_stdout(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let out = Command::new(crate::support::bin())
        .args(args)
        .current_dir(dir)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    let cmds: Vec<Vec<&str>> = vec![
        vec!["codes"],
        vec!["explain", "BG001"],
        vec!["lint", b],
        vec!["render", b],
        vec!["digest", b],
        vec!["verify", b],
        vec!["lint", "no-such-file.yaml"],
    ];
    for cmd in &cmds {
        for format in ["human", "json", "markdown"] {
            let mut a = cmd.clone();
            a.extend(["--format", format]);
            let (code, stderr) = closed_stdout(ex.path(), &a);
            assert!(
                code != Some(101) && !stderr.contains("panicked"),
                "{a:?} with a closed stdout: {code:?}\n{stderr}"
            );
            assert!(stderr.is_empty() || !stderr.contains("Broken pipe"), "{a:?} complains about the pipe:\n{stderr}");
        }
    }
    // The verdict still sets the exit code.
    assert_eq!(closed_stdout(ex.path(), &["codes"]).0, Some(0));
}

/// Every tool failure is a report in the chosen `--format` (issue #28): each
/// command, given a bundle or file that is not there, prints a parseable
/// JSON report and a non-empty Markdown one, ERROR, and exits 2. (The Argo
/// CD plugin is the exception by contract: its stdout is what Argo CD
/// parses, so a failure leaves it empty, see `argocd.rs`.)
#[test]
fn every_command_reports_a_missing_input_in_every_format() {
    let ex = Example::new();
    let gone = "no-such-bundle.yaml";
    let cmds: Vec<Vec<&str>> = vec![
        vec!["lint", gone],
        vec!["render", gone],
        vec!["digest", gone],
        vec!["verify", "--progress", "never", gone],
        vec!["publish", "no-such-folder", "--to", "file:../x/", "--bundle", gone],
        vec!["audit", "no-such-tree", "--cache", "cache"],
        vec!["report", "merge", "no-such-report.json"],
        vec!["preflight", gone, "--snapshot", "no-such-snapshot.yaml"],
        vec!["canary", gone],
        vec!["run", "no-such-pipeline.yaml", "--bundle", gone],
        vec!["watch", gone, "--app", "x", "--revision", "abc"],
        vec!["revert", gone],
        vec!["verify-files", "--manifest-env", "BUNDLEGATE_TEST_NO_SUCH_VAR", "--root", "no-such-folder"],
        vec!["explain", "BG999"],
        vec!["--config", "no-such-config.yaml", "codes"],
    ];
    for cmd in &cmds {
        let mut json = vec!["--format", "json"];
        json.extend(cmd);
        let out = ex.run(&json);
        assert_eq!(out.code, 2, "{cmd:?}: {}\n{}", out.stdout, out.stderr);
        assert!(!out.stderr.contains("panicked"), "{cmd:?}:\n{}", out.stderr);
        let r: serde_json::Value = serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("{cmd:?}: no JSON report ({e}):\n{}", out.stdout));
        assert_eq!(r["verdict"], "error", "{cmd:?}: {r:#}");
        assert!(r["steps"].as_array().is_some_and(|s| !s.is_empty()), "{cmd:?}: {r:#}");
        let mut md = vec!["--format", "markdown"];
        md.extend(cmd);
        let out = ex.run(&md);
        assert_eq!(out.code, 2, "{cmd:?} markdown: {}\n{}", out.stdout, out.stderr);
        assert!(out.stdout.contains("ERROR"), "{cmd:?}: no Markdown report:\n{}", out.stdout);
    }
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
