//! Outside input never panics (exit 101): huge or malformed durations and
//! job counts in flags and environment variables are refused at parse time
//! naming the flag (exit 2), stringly options are closed sets, and a reader
//! that closes the pipe early (`| head`) ends the command quietly.

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
