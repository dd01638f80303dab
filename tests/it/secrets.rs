//! Credentials in the environment never reach stdout, stderr, reports, files
//! the tool writes, PR bodies or request bodies, at any verbosity, whatever
//! the command and whether it succeeds or fails.

use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::support::http::{Reply, Req, Server};
use crate::support::*;

pub const SECRETS: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "ghp_SECRETtokenVALUE0123456789abcdef"),
    ("AWS_SECRET_ACCESS_KEY", "awsSECRETkeyVALUE/0123456789+abcdef"),
    ("AWS_SESSION_TOKEN", "awsSESSIONtokenVALUE0123456789"),
    ("GOOGLE_SERVICE_ACCOUNT_KEY", "gcpSECRETkeyVALUE0123456789"),
    ("AZURE_STORAGE_ACCESS_KEY", "azureSECRETkeyVALUE0123456789"),
    ("BUNDLEGATE_OCI_PASSWORD", "ociSECRETpassVALUE0123456789"),
];

/// In the kubeconfig, not the environment.
pub const KUBE_TOKEN: &str = "kubeSECRETbearerVALUE0123456789";

/// The password inside `http://user:password@host` URLs the user supplies.
pub const URL_SECRET: &str = "urlSECRETpassVALUE0123456789";

/// Every secret value, for scanning any text.
pub fn all_secrets() -> Vec<&'static str> {
    SECRETS.iter().map(|(_, v)| *v).chain([KUBE_TOKEN, URL_SECRET]).collect()
}

/// `url` with userinfo carrying [`URL_SECRET`].
fn with_userinfo(url: &str) -> String {
    url.replacen("://", &format!("://robot:{URL_SECRET}@"), 1)
}

pub fn assert_clean(what: &str, text: &str) {
    for s in all_secrets() {
        assert!(!text.contains(s), "a secret leaked into {what}: {}", &s[..8]);
    }
}

/// A kubeconfig (with a bearer token) for a server nothing answers on.
fn dead_kubeconfig(dir: &Path) -> std::path::PathBuf {
    use crate::support::kube::{dead_port, write_kubeconfig};
    write_kubeconfig(&dir.join("kubeconfig.secret"), dead_port(), Some(KUBE_TOKEN), None)
}

fn check(ex: &Example, args: &[&str], extra: &[(&str, &str)]) {
    let kc = dead_kubeconfig(ex.path());
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.push(("KUBECONFIG", kc.to_str().unwrap()));
    env.push(("BUNDLEGATE_KUBE_TIMEOUT", "1s"));
    env.extend_from_slice(extra);
    // Every verbosity, and every format at the most verbose (the formats
    // share one report; logging is where verbosity changes what is printed).
    let combos = [
        ("human", None, "info"),
        ("human", Some("-v"), "debug"),
        ("human", Some("-vv"), "trace"),
        ("json", Some("-vv"), "trace"),
        ("markdown", Some("-vv"), "trace"),
    ];
    for (format, verbosity, log) in combos {
        {
            let mut a = args.to_vec();
            a.extend_from_slice(&["--format", format]);
            a.extend(verbosity);
            let mut e = env.clone();
            e.push(("RUST_LOG", log));
            let out = run_in(ex.path(), &a, &e);
            assert_clean(&format!("stdout of {a:?}"), &out.stdout);
            assert_clean(&format!("stderr of {a:?}"), &out.stderr);
        }
    }
}

/// Every file under `dir` the tool may have written (reports, summaries,
/// outputs, caches, rendered manifests, published bundles).
fn assert_files_clean(dir: &Path) {
    for e in walkdir::WalkDir::new(dir).into_iter().filter_map(Result::ok).filter(|e| e.file_type().is_file()) {
        if e.file_name() == "kubeconfig.secret" {
            continue; // the input that holds the kube token
        }
        if let Ok(text) = std::fs::read(e.path()) {
            assert_clean(&e.path().display().to_string(), &String::from_utf8_lossy(&text));
        }
    }
}

#[test]
fn no_command_prints_credentials() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    let snap = repo().join("examples/cluster/roomy.yaml");
    let out_dir = ex.path().join("rendered");
    check(&ex, &["lint", b], &[]);
    check(&ex, &["render", b], &[]);
    check(&ex, &["render", b, "--out", out_dir.to_str().unwrap()], &[]);
    check(&ex, &["digest", b], &[]);
    check(&ex, &["verify", b], &[]);
    check(&ex, &["audit", ".", "--cache", "c.json"], &[]);
    check(&ex, &["audit", ".", "--cache", "c.json", "--serving"], &[]);
    check(&ex, &["preflight", b, "--snapshot", snap.to_str().unwrap()], &[]);

    check(&ex, &["canary", b], &[]);
    check(&ex, &["canary", b, "--prometheus", "http://127.0.0.1:9"], &[]);
    check(&ex, &["codes"], &[]);
    check(&ex, &["explain", "BG101"], &[]);
    let cmp: &[(&str, &str)] = &[
        ("ARGOCD_APP_NAME", "llm-scratch"),
        ("ARGOCD_APP_PARAMETERS", r#"[{"name":"bundle","string":"llm-scratch/v2/release.yaml"}]"#),
    ];
    for sub in ["generate", "discover", "parameters"] {
        check(&ex, &["argocd", sub], cmp);
    }
    // Publish into a fresh prefix (writes objects and the bundle).
    check(&ex, &["publish", "store/llm-scratch/v2", "--to", "file:../../published/v2/", "--bundle", b], &[]);
    // An S3 store that refuses the connection.
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/v2/".into());
    check(
        &ex,
        &["verify", b],
        &[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ],
    );
    assert_files_clean(ex.path());
}

/// The commands that talk to a cluster or GitHub (both unreachable here).
#[test]
fn cluster_and_github_commands_print_no_credentials() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    check(&ex, &["preflight", b, "--live"], &[]);
    check(
        &ex,
        &[
            "watch",
            b,
            "--app",
            "llm-scratch",
            "--revision",
            "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c",
            "--timeout",
            "1s",
        ],
        &[("BUNDLEGATE_WATCH_POLL", "200ms")],
    );
    check(&ex, &["revert", b, "--repo", "."], &[("GITHUB_API_URL", "http://127.0.0.1:9")]);
    // GitHub configured but unreachable: the comment step fails, the token stays hidden.
    check(
        &ex,
        &["run", repo().join("pipelines/pull-request.yaml").to_str().unwrap(), "--bundle", b],
        &[("GITHUB_API_URL", "http://127.0.0.1:9"), ("GITHUB_REPOSITORY", "o/r"), ("BUNDLEGATE_PR_NUMBER", "1")],
    );
    // The shipped post-merge pipeline, with the watch bounded to 1s.
    let pm = std::fs::read_to_string(repo().join("pipelines/post-merge.yaml"))
        .unwrap()
        .replace("timeout: 15m", "timeout: 1s");
    assert!(pm.contains("timeout: 1s"));
    let pm_path = ex.path().join("post-merge.yaml");
    std::fs::write(&pm_path, pm).unwrap();
    check(
        &ex,
        &["run", pm_path.to_str().unwrap(), "--bundle", b],
        &[("GITHUB_API_URL", "http://127.0.0.1:9"), ("BUNDLEGATE_WATCH_POLL", "200ms")],
    );
    check(&ex, &["run", repo().join("pipelines/drift-audit.yaml").to_str().unwrap()], &[]);
    assert_files_clean(ex.path());
}

/// The PR comment, check run, job summary and outputs: a GitHub stand-in
/// records every request body and URL (the Authorization header is where
/// the token belongs, and is checked to be there and nowhere else).
#[test]
fn no_secret_reaches_files_pr_bodies_or_requests() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let auth_ok = Arc::new(Mutex::new(0usize));
    let (rec, ok) = (seen.clone(), auth_ok.clone());
    let gh = Server::start_replies(
        0,
        Arc::new(move |r: &Req| {
            let q: Vec<String> = r.query.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let other_headers: Vec<String> = r
                .headers
                .iter()
                .filter(|(k, _)| !k.eq_ignore_ascii_case("authorization"))
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            rec.lock().unwrap().push(format!(
                "{} {}?{}\n{}\n{}",
                r.method,
                r.path,
                q.join("&"),
                other_headers.join("\n"),
                String::from_utf8_lossy(&r.body)
            ));
            if r.header("authorization").is_some_and(|a| a.contains(SECRETS[0].1)) {
                *ok.lock().unwrap() += 1;
            }
            match r.method.as_str() {
                "GET" => Reply::Json(200, json!([])),
                _ => Reply::Json(
                    201,
                    json!({"id": 1, "html_url": "https://github.com/o/r/pull/1#issuecomment-1", "body": "", "user": {"login": "github-actions[bot]"}}),
                ),
            }
        }),
    );
    let ex = Example::new();
    let summary = ex.path().join("summary.md");
    let outputs = ex.path().join("outputs.txt");
    let url = gh.url();
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.extend_from_slice(&[
        ("GITHUB_API_URL", url.as_str()),
        ("GITHUB_REPOSITORY", "o/r"),
        ("BUNDLEGATE_PR_NUMBER", "7"),
        ("GITHUB_SHA", "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c"),
        ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ("GITHUB_OUTPUT", outputs.to_str().unwrap()),
        ("RUST_LOG", "trace"),
    ]);
    let p = repo().join("pipelines/pull-request.yaml");
    let out = run_in(
        ex.path(),
        &["run", p.to_str().unwrap(), "--bundle", ex.v2().to_str().unwrap(), "--format", "json", "-vv"],
        &env,
    );
    assert_clean("stdout", &out.stdout);
    assert_clean("stderr", &out.stderr);
    let reqs = seen.lock().unwrap().clone();
    assert!(
        reqs.iter().any(|r| r.starts_with("POST /repos/o/r/issues/7/comments")),
        "the comment was posted: {reqs:#?}\n{}",
        out.stderr
    );
    for r in &reqs {
        assert_clean("a request to GitHub (URL, headers, body)", r);
    }
    assert!(*auth_ok.lock().unwrap() > 0, "the token was used where it belongs");
    assert!(std::fs::metadata(&summary).is_ok_and(|m| m.len() > 0), "job summary written");
    assert_files_clean(ex.path());
}

/// Credentials inside URLs (userinfo) in every env variable and flag that
/// takes a URL, at every verbosity and format, never appear in stdout,
/// stderr, `--help` or written files.
#[test]
fn credentials_inside_urls_are_never_printed() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    let dead = with_userinfo("http://127.0.0.1:9");
    let d = dead.as_str();
    check(&ex, &["canary", b, "--prometheus", d], &[]);
    check(&ex, &["canary", b], &[("BUNDLEGATE_PROMETHEUS_URL", d)]);
    check(&ex, &["canary", b, "--prometheus", d, "--endpoint", d], &[]);
    check(
        &ex,
        &[
            "watch",
            b,
            "--app",
            "llm-scratch",
            "--revision",
            "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c",
            "--timeout",
            "1s",
            "--service-url",
            d,
            "--prometheus",
            d,
        ],
        &[("BUNDLEGATE_WATCH_POLL", "200ms")],
    );
    check(&ex, &["revert", b, "--repo", "."], &[("GITHUB_API_URL", d)]);
    check(
        &ex,
        &["run", repo().join("pipelines/pull-request.yaml").to_str().unwrap(), "--bundle", b, "--prometheus", d],
        &[("GITHUB_API_URL", d), ("GITHUB_REPOSITORY", "o/r"), ("BUNDLEGATE_PR_NUMBER", "1")],
    );
    // `--help` shows which variable feeds a flag, never its value.
    for sub in ["canary", "run", "watch"] {
        check(&ex, &[sub, "--help"], &[("BUNDLEGATE_PROMETHEUS_URL", d), ("BUNDLEGATE_CONFIG", d), ("GITHUB_SHA", d)]);
    }
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/v2/".into());
    check(
        &ex,
        &["verify", b],
        &[
            ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
            ("AWS_ENDPOINT_URL", d),
            ("AWS_ALLOW_HTTP", "true"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ],
    );
    assert_files_clean(ex.path());
}

/// An S3 XML error body is shown as the server sent it: the redaction that
/// cuts credentials leaves `<?xml …?><Error>…` readable.
#[test]
fn s3_xml_error_bodies_stay_readable() {
    let xml = r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>R1</RequestId></Error>"#;
    let body = xml.as_bytes().to_vec();
    let s3 = Server::start_replies(
        0,
        Arc::new(move |_r: &Req| Reply::Raw {
            status: 403,
            headers: vec![("content-type".into(), "application/xml".into())],
            body: body.clone(),
        }),
    );
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/v2/".into());
    let endpoint = with_userinfo(&s3.url());
    let env = [
        ("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"),
        ("AWS_SECRET_ACCESS_KEY", SECRETS[1].1),
        ("AWS_ENDPOINT_URL", endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_DEFAULT_REGION", "us-east-1"),
    ];
    let out = run_in(ex.path(), &["verify", ex.v2().to_str().unwrap(), "--format", "json"], &env);
    assert_clean("stdout", &out.stdout);
    assert_clean("stderr", &out.stderr);
    let all = format!("{}{}", out.stdout, out.stderr);
    assert!(
        all.contains("<Code>AccessDenied</Code>") && all.contains("<?xml version"),
        "the XML error is readable:\n{all}"
    );
    assert!(!all.contains('\u{2026}') && !all.contains('\u{2039}'), "nothing garbled:\n{all}");
}

/// The credentials reach the code that handles them, and still stay out of
/// every output: GCS and Azure stores configured from the environment (a
/// key object_store cannot use, so its builder or first request fails and
/// the error is printed), and a kubeconfig bearer token sent to an API that
/// answers 401 (the denial is quoted).
#[test]
fn store_and_cluster_credentials_are_used_and_never_printed() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    // GCS: a service-account key that is not a valid key, and an endpoint nothing answers.
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "gs://models/llm-scratch/v2/".into());
    let gcs: &[(&str, &str)] = &[(
        "GOOGLE_SERVICE_ACCOUNT_KEY",
        r#"{"type":"service_account","private_key":"gcpSECRETkeyVALUE0123456789","client_email":"x@y"}"#,
    )];
    let out = run_in(ex.path(), &["verify", b, "--format", "json", "-vv"], &[SECRETS, gcs].concat());
    assert_eq!(out.code, 2, "the GCS key was used and refused: {}\n{}", out.stdout, out.stderr);
    assert_clean("gcs stdout", &out.stdout);
    assert_clean("gcs stderr", &out.stderr);
    assert!(
        !out.stdout.contains("client_email\":\"x@y") && !out.stderr.contains("private_key"),
        "the key document is not echoed"
    );
    // Azure: an account key object_store decodes (base64) and signs with, against a dead endpoint.
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "az://models/llm-scratch/v2/".into());
    let key = "YXp1cmVTRUNSRVRrZXlWQUxVRTAxMjM0NTY3ODk="; // base64 of the Azure secret
    let az: &[(&str, &str)] = &[
        ("AZURE_STORAGE_ACCOUNT_NAME", "acct"),
        ("AZURE_STORAGE_ACCESS_KEY", key),
        ("AZURE_STORAGE_ENDPOINT", "http://127.0.0.1:9"),
        ("AZURE_ALLOW_HTTP", "true"),
    ];
    let out = run_in(ex.path(), &["verify", b, "--format", "json", "-vv"], az);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    for text in [&out.stdout, &out.stderr] {
        assert!(!text.contains(key) && !text.contains("azureSECRETkeyVALUE0123456789"), "the Azure key leaked: {text}");
    }
    // Kubernetes: the bearer token is sent (the server sees it) and refused with 401.
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let s2 = seen.clone();
    let server = Server::start_replies(
        0,
        Arc::new(move |r: &Req| {
            s2.lock().unwrap().push(r.header("authorization").unwrap_or_default().to_string());
            Reply::Json(
                401,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized", "reason": "Unauthorized", "code": 401}),
            )
        }),
    );
    let kc = crate::support::kube::write_kubeconfig(
        &ex.path().join("kubeconfig.secret"),
        server.port,
        Some(KUBE_TOKEN),
        None,
    );
    let snap_args = ["preflight", b, "--live", "--format", "json", "-vv"];
    let out = run_in(ex.path(), &snap_args, &[("KUBECONFIG", kc.to_str().unwrap()), ("RUST_LOG", "trace")]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        seen.lock().unwrap().iter().any(|a| a == &format!("Bearer {KUBE_TOKEN}")),
        "the token reached the API server"
    );
    assert_clean("kube stdout", &out.stdout);
    assert_clean("kube stderr", &out.stderr);
    assert!(
        out.stdout.contains("Unauthorized") || out.stderr.contains("Unauthorized"),
        "the denial is quoted: {}",
        out.stdout
    );
}
