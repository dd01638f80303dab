//! Credentials in the environment never reach stdout, stderr or reports, at
//! any verbosity, whatever the command and whether it succeeds or fails.

use crate::support::*;

const SECRETS: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "ghp_SECRETtokenVALUE0123456789abcdef"),
    ("AWS_SECRET_ACCESS_KEY", "awsSECRETkeyVALUE/0123456789+abcdef"),
    ("AWS_SESSION_TOKEN", "awsSESSIONtokenVALUE0123456789"),
    ("GOOGLE_SERVICE_ACCOUNT_KEY", "gcpSECRETkeyVALUE0123456789"),
    ("AZURE_STORAGE_ACCESS_KEY", "azureSECRETkeyVALUE0123456789"),
];

fn check(ex: &Example, args: &[&str], extra: &[(&str, &str)]) {
    let mut env: Vec<(&str, &str)> = SECRETS.to_vec();
    env.extend_from_slice(extra);
    env.push(("RUST_LOG", "trace"));
    for format in ["human", "json", "markdown"] {
        let mut a = args.to_vec();
        a.extend_from_slice(&["--format", format, "-vv"]);
        let out = run_in(ex.path(), &a, &env);
        for (name, value) in SECRETS {
            assert!(!out.stdout.contains(value), "{name} leaked on stdout of {args:?}");
            assert!(!out.stderr.contains(value), "{name} leaked on stderr of {args:?}");
        }
    }
}

#[test]
fn no_command_prints_credentials() {
    let ex = Example::new();
    let v2 = ex.v2();
    let b = v2.to_str().unwrap();
    let snap = repo().join("examples/cluster/roomy.yaml");
    check(&ex, &["lint", b], &[]);
    check(&ex, &["render", b], &[]);
    check(&ex, &["digest", b], &[]);
    check(&ex, &["verify", b], &[]);
    check(&ex, &["audit", ".", "--cache", "c.json"], &[]);
    check(&ex, &["preflight", b, "--snapshot", snap.to_str().unwrap()], &[]);
    check(&ex, &["canary", b], &[]);
    check(&ex, &["canary", b, "--prometheus", "http://127.0.0.1:9"], &[]);
    // GitHub configured but unreachable: the comment step fails, the token stays hidden.
    check(
        &ex,
        &["run", repo().join("pipelines/pull-request.yaml").to_str().unwrap(), "--bundle", b],
        &[("GITHUB_API_URL", "http://127.0.0.1:9"), ("GITHUB_REPOSITORY", "o/r"), ("BUNDLEGATE_PR_NUMBER", "1")],
    );
    // An S3 store that refuses the connection.
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3://models/llm-scratch/v2/".into());
    check(&ex, &["verify", b], &[("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE"), ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"), ("AWS_ALLOW_HTTP", "true"), ("AWS_DEFAULT_REGION", "us-east-1")]);
}
