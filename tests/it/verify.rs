//! verify / publish / audit against the local filesystem store (the embedded
//! default) and a real S3-protocol server (s3s-fs) on 127.0.0.1.

use std::path::Path;

use crate::support::*;

fn verify(ex: &Example, extra: &[&str]) -> Out {
    let mut args = vec!["verify", "--format", "json"];
    args.extend_from_slice(extra);
    let b = ex.v2();
    args.push(b.to_str().unwrap());
    ex.run(&args)
}

fn status_of(out: &Out, path: &str) -> String {
    let v = out.json();
    for a in v["steps"][0]["data"]["artifacts"].as_array().unwrap_or_else(|| panic!("no artifacts in {}", out.stdout)) {
        if a["path"] == path {
            return a["status"].as_str().unwrap().to_string();
        }
    }
    panic!("{path} not in report: {}", out.stdout)
}

#[test]
fn shipped_example_verifies() {
    let out = run(&[
        "verify",
        "--format",
        "json",
        "examples/llm-scratch/v2/release.yaml",
        "examples/llm-scratch/v1/release.yaml",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["verdict"], "pass");
    assert_eq!(out.json()["steps"][0]["data"]["objectsHashed"], 5);
}

#[test]
fn missing_non_model_file_fails() {
    // A release once crash-looped because its prefix lacked clean_corpus.txt,
    // a drift-monitor baseline, not a model file.
    let ex = Example::new();
    std::fs::remove_file(ex.store("v2").join("clean_corpus.txt")).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "MISSING");
    let d = out.diag("BG101");
    assert!(d["message"].as_str().unwrap().contains("clean_corpus.txt"));
    assert!(d["message"].as_str().unwrap().contains("DriftBaseline"));
    assert_eq!(status_of(&out, "ckpt.pt"), "OK");
}

#[test]
fn extra_object_warns_by_default_and_fails_by_policy() {
    let ex = Example::new();
    std::fs::write(ex.store("v2").join("notes.txt"), "scratch").unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.diag("BG104")["severity"], "warning");
    assert_eq!(status_of(&out, "notes.txt"), "EXTRA");
    let out = verify(&ex, &["--deny-extra"]);
    assert_eq!(out.code, 1);
    let out = verify(&ex, &["-D", "extra-object"]);
    assert_eq!(out.code, 1);
}

#[test]
fn one_byte_changed_same_size_is_a_digest_mismatch() {
    let ex = Example::new();
    let p = ex.store("v2").join("ckpt.pt");
    let mut b = std::fs::read(&p).unwrap();
    b[1000] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    assert!(out.diag("BG103")["evidence"][0].as_str().unwrap().contains("same size"));
}

#[test]
fn truncated_file_is_a_size_mismatch() {
    let ex = Example::new();
    let p = ex.store("v2").join("ckpt.pt");
    let b = std::fs::read(&p).unwrap();
    std::fs::write(&p, &b[..b.len() / 2]).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(status_of(&out, "ckpt.pt"), "SIZE-MISMATCH");
    out.diag("BG102");
}

#[test]
fn sibling_prefix_v10_is_not_v1() {
    let ex = Example::new();
    // A v10 sibling holding the file v1 lacks must not satisfy v1.
    let v10 = ex.path().join("store/llm-scratch/v10");
    std::fs::create_dir_all(&v10).unwrap();
    std::fs::copy(ex.store("v1").join("clean_corpus.txt"), v10.join("clean_corpus.txt")).unwrap();
    std::fs::remove_file(ex.store("v1").join("clean_corpus.txt")).unwrap();
    let out = ex.run(&["verify", "--format", "json", ex.v1().to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "MISSING");
    assert!(!out.stdout.contains("EXTRA"), "v10 objects leaked into v1: {}", out.stdout);
}

#[test]
fn empty_prefix_fails_every_artifact() {
    let ex = Example::new();
    for e in std::fs::read_dir(ex.store("v2")).unwrap() {
        std::fs::remove_file(e.unwrap().path()).unwrap();
    }
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes().iter().filter(|c| *c == "BG101").count(), 5);
}

#[test]
fn missing_store_folder_is_a_tool_error_not_a_pass() {
    let ex = Example::new();
    std::fs::remove_dir_all(ex.path().join("store")).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.json()["steps"][0]["verdict"], "error");
}

#[test]
fn path_traversal_is_refused_not_read() {
    let ex = Example::new();
    // A secret next to the store that a malicious bundle tries to "verify".
    std::fs::write(ex.path().join("store/llm-scratch/secret.txt"), "top secret").unwrap();
    ex.edit_v2(|v| *at(v, "spec.model.artifacts.0.path") = "../secret.txt".into());
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(status_of(&out, "../secret.txt"), "REFUSED");
    out.diag("BG004");
}

#[test]
fn unpinned_artifact_is_never_ok() {
    let ex = Example::new();
    ex.edit_v2(|v| {
        at(v, "spec.model.artifacts.1").as_mapping_mut().unwrap().remove("sha256");
    });
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(status_of(&out, "tokenizer.json"), "UNPINNED");
}

#[cfg(unix)]
#[test]
fn unreadable_object_is_exit_2_naming_the_object() {
    use std::os::unix::fs::PermissionsExt;
    let ex = Example::new();
    let p = ex.store("v2").join("ckpt.pt");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads anything (CAP_DAC_OVERRIDE), and CI runs as root: there the
    // binary runs as `nobody` through setpriv (util-linux), so the object is
    // really unreadable to it. No early return: without either it fails.
    let out = if nix_is_root() {
        let mut dir = ex.path().to_path_buf();
        // nobody must be able to reach the example (tempdirs are 0700).
        while dir.parent().is_some() {
            let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode | 0o055)).unwrap();
            if dir == std::env::temp_dir() {
                break;
            }
            dir = dir.parent().unwrap().to_path_buf();
        }
        let b = ex.v2();
        let o = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_bundlegate"))
            .args(["verify", b.to_str().unwrap(), "--format", "json"])
            .current_dir(ex.path())
            .output()
            .expect("setpriv (util-linux) runs the binary as nobody");
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into(),
            stderr: String::from_utf8_lossy(&o.stderr).into(),
        }
    } else {
        verify(&ex, &[])
    };
    assert_eq!(out.code, 2);
    assert!(out.diag("BG106")["message"].as_str().unwrap().contains("ckpt.pt"));
}

fn nix_is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

#[test]
fn publish_records_hashes_and_refuses_to_overwrite() {
    let ex = Example::new();
    let model = ex.path().join("model-v3");
    std::fs::create_dir_all(model.join("sub")).unwrap();
    std::fs::write(model.join("model.safetensors"), vec![7u8; 300_000]).unwrap();
    std::fs::write(model.join("tokenizer.json"), "{}").unwrap();
    std::fs::write(model.join("chat_template.jinja"), "{{ x }}").unwrap();
    std::fs::write(model.join("sub/clean_corpus.txt"), "a\nb\n").unwrap();
    let bundle = ex.path().join("llm-scratch/v3/release.yaml");
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    std::fs::copy(ex.v2(), &bundle).unwrap();
    edit_yaml(&bundle, |v| *at(v, "metadata.version") = "v3".into());
    let out = ex.run(&[
        "publish",
        "--format",
        "json",
        "model-v3",
        "--to",
        "file:../../store/llm-scratch/v3/",
        "--bundle",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(&bundle).unwrap();
    assert!(text.contains("storageUri: file:../../store/llm-scratch/v3/"), "{text}");
    assert!(text.contains("path: sub/clean_corpus.txt"));
    assert!(text.contains("role: drift-baseline"));
    assert!(text.contains("role: weights"));
    // The published bundle verifies.
    let v = ex.run(&["verify", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
    // A second publish to the same (now non-empty) prefix is refused.
    let again = ex.run(&[
        "publish",
        "model-v3",
        "--to",
        "file:../../store/llm-scratch/v3/",
        "--bundle",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("refusing to publish"), "{}", again.stderr);
}

#[test]
fn audit_incremental_uses_metadata_and_reports_drift() {
    let ex = Example::new();
    let cache = ex.path().join("audit-cache.json");
    let c = cache.to_str().unwrap();
    let first = ex.run(&["audit", "--format", "json", ".", "--cache", c]);
    assert_eq!(first.code, 0, "{}", first.stdout);
    assert_eq!(first.json()["steps"].as_array().unwrap().len(), 2);
    assert_eq!(first.json()["steps"][0]["data"]["objectsHashed"], 5);
    // Unchanged: nothing is read again.
    let second = ex.run(&["audit", "--format", "json", ".", "--cache", c]);
    assert_eq!(second.code, 0);
    for s in second.json()["steps"].as_array().unwrap() {
        assert_eq!(s["data"]["objectsHashed"], 0, "{s}");
        assert_eq!(s["data"]["bytesHashed"], 0);
    }
    // Rewrite bytes under the same path (same size): drift is reported, exit 1.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let p = ex.store("v1").join("clean_corpus.txt");
    let mut b = std::fs::read(&p).unwrap();
    b[0] = b'X';
    std::fs::write(&p, &b).unwrap();
    let third = ex.run(&["audit", "--format", "json", ".", "--cache", c]);
    assert_eq!(third.code, 1, "{}", third.stdout);
    assert!(third.codes().contains(&"BG107".to_string()));
    assert!(third.codes().contains(&"BG103".to_string()));
    // --deep re-hashes everything.
    let deep = ex.run(&["audit", "--format", "json", ".", "--cache", c, "--deep"]);
    let hashed: u64 =
        deep.json()["steps"].as_array().unwrap().iter().map(|s| s["data"]["objectsHashed"].as_u64().unwrap()).sum();
    assert_eq!(hashed, 10);
}

#[test]
fn audit_with_a_corrupt_cache_rebuilds_it_and_never_trusts_it() {
    let ex = Example::new();
    let cache = ex.path().join("audit-cache.json");
    let c = cache.to_str().unwrap();
    assert_eq!(ex.run(&["audit", "--format", "json", ".", "--cache", c]).code, 0);
    // A crash of some other tool, a full disk: half a JSON document.
    let text = std::fs::read_to_string(&cache).unwrap();
    std::fs::write(&cache, &text[..text.len() / 2]).unwrap();
    // Nothing in it is trusted: every object is re-hashed, the run says why.
    let out = ex.run(&["audit", "--format", "json", ".", "--cache", c]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let note = out.diag("BG601");
    let msg = note["message"].as_str().unwrap();
    assert!(msg.contains("audit-cache.json") && msg.contains("corrupt"), "{msg}");
    let hashed: u64 =
        out.json()["steps"].as_array().unwrap().iter().map(|s| s["data"]["objectsHashed"].as_u64().unwrap()).sum();
    assert_eq!(hashed, 10);
    let again = ex.run(&["audit", "--format", "json", ".", "--cache", c]);
    assert_eq!(again.code, 0, "the rebuilt cache is valid");
    assert!(!again.codes().contains(&"BG601".to_string()));
}

#[test]
fn audit_of_a_tree_without_bundles_is_not_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_in(dir.path(), &["audit", "--format", "json", ".", "--cache", "c.json"], &[]);
    assert_eq!(out.code, 2);
}

// ---- real S3 protocol server -----------------------------------------------

pub struct S3Server {
    /// Stopped with its process group when the server drops.
    child: crate::support::server::Server,
    pub port: u16,
    pub data: tempfile::TempDir,
}

pub const KEY: &str = "bgtestkey";
pub const SECRET: &str = "bgtestsecret-do-not-print";

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl S3Server {
    /// Start s3s-fs (BUNDLEGATE_S3S_FS); `.ci/run` builds it. Absent binary
    /// fails the test unless BUNDLEGATE_SKIP_SERVERS=1.
    pub fn start() -> Option<S3Server> {
        let bin = match std::env::var("BUNDLEGATE_S3S_FS") {
            Ok(b) => b,
            Err(_) if std::env::var("BUNDLEGATE_SKIP_SERVERS").is_ok() => return None,
            Err(_) => panic!("BUNDLEGATE_S3S_FS is not set; run tests through scripts/test or .ci/run (or set BUNDLEGATE_SKIP_SERVERS=1)"),
        };
        let data = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(data.path().join("models")).unwrap();
        let port = free_port();
        let child = crate::support::server::spawn(
            std::process::Command::new(bin)
                .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--access-key", KEY, "--secret-key", SECRET])
                .arg(data.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "s3s-fs did not listen on {port}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(S3Server { child, port, data })
    }

    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET.to_string()),
            ("AWS_DEFAULT_REGION", "us-east-1".to_string()),
            ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", self.port)),
            ("AWS_ALLOW_HTTP", "true".to_string()),
            ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false".to_string()),
        ]
    }

    pub fn run(&self, dir: &Path, args: &[&str], extra: &[(&str, &str)]) -> Out {
        let env = self.env();
        let mut e: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        e.extend_from_slice(extra);
        run_in(dir, args, &e)
    }
}

/// Publish the example's v2 folder to s3://models/llm-scratch/v2/ and point the bundle at it.
fn s3_example(s3: &S3Server) -> Example {
    let ex = Example::new();
    let out = s3.run(
        ex.path(),
        &[
            "publish",
            "--format",
            "json",
            "store/llm-scratch/v2",
            "--to",
            "s3://models/llm-scratch/v2/",
            "--bundle",
            ex.v2().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    assert!(text.contains("storeChecksum: x-amz-checksum-sha256:"), "{text}");
    ex
}

#[test]
fn s3_publish_then_verify_passes() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["steps"][0]["data"]["objectsHashed"], 5);
    // Publishing again to the same prefix is refused.
    let again = s3.run(
        ex.path(),
        &[
            "publish",
            "store/llm-scratch/v2",
            "--to",
            "s3://models/llm-scratch/v2/",
            "--bundle",
            ex.v2().to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(again.code, 2);
}

#[test]
fn s3_bytes_changed_under_the_same_path() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    // Someone rewrites the object behind the store's back, same size.
    let p = s3.data.path().join("models/llm-scratch/v2/ckpt.pt");
    let mut b = std::fs::read(&p).unwrap();
    b[10] ^= 0xff;
    std::fs::write(&p, &b).unwrap();
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(status_of(&out, "ckpt.pt"), "DIGEST-MISMATCH");
    // And a missing file.
    std::fs::remove_file(s3.data.path().join("models/llm-scratch/v2/clean_corpus.txt")).unwrap();
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "MISSING");
}

#[test]
fn s3_wrong_credentials_is_exit_2_and_secret_never_printed() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    let out = s3.run(
        ex.path(),
        &["verify", "--format", "json", "-vv", ex.v2().to_str().unwrap()],
        &[("AWS_SECRET_ACCESS_KEY", "wrong-secret-value-xyz")],
    );
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.json()["steps"][0]["verdict"], "error");
    for s in [&out.stdout, &out.stderr] {
        assert!(!s.contains("wrong-secret-value-xyz"));
        assert!(!s.contains(SECRET));
    }
}

#[test]
fn s3_server_stopped_is_exit_2() {
    let Some(mut s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    s3.child.stop();
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.json()["steps"][0]["summary"].as_str().unwrap().contains("unreachable"), "{}", out.stdout);
}

#[test]
fn s3_missing_bucket_is_exit_2_naming_the_bucket() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3://no-such-bucket/llm-scratch/v2/".into());
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = &out.json()["steps"][0];
    assert_eq!(s["verdict"], "error");
    assert!(s["summary"].as_str().unwrap().contains("no-such-bucket"), "{s}");
}

/// A TCP proxy in front of s3s-fs that kills the server (SIGKILL) when the
/// first object GET arrives: listing worked, then the store died mid-run.
/// After the kill the proxy stops listening too, so later connections are
/// refused like a dead endpoint's. `gets` counts object GETs that reached it.
fn kill_on_first_object_get(s3: &S3Server, prefix: &'static str) -> u16 {
    kill_on_first_object_get_counting(s3, prefix).0
}

fn kill_on_first_object_get_counting(
    s3: &S3Server,
    prefix: &'static str,
) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let upstream = s3.port;
    let pid = s3.child.id();
    let killed = std::sync::Arc::new(std::sync::Mutex::new(false));
    let gets = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let gets_out = gets.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            if *killed.lock().unwrap() {
                break; // drops the listener: from now on connections are refused
            }
            let Ok(mut client) = client else { continue };
            let Ok(mut up) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else { continue }; // dead: drop the client
            let (mut c2, mut u2) = (client.try_clone().unwrap(), up.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut u2, &mut c2);
                let _ = c2.shutdown(std::net::Shutdown::Both);
            });
            let killed = killed.clone();
            let gets = gets.clone();
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    let n = match client.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if String::from_utf8_lossy(&buf[..n]).contains(&format!("GET {prefix}")) {
                        gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        // Under the lock, so a concurrent GET cannot slip
                        // through while the kill is under way.
                        let mut k = killed.lock().unwrap();
                        if !*k {
                            let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
                            *k = true;
                        }
                        break; // the server is dead: this request goes nowhere
                    }
                    if up.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                let _ = up.shutdown(std::net::Shutdown::Both);
            });
        }
    });
    (port, gets_out)
}

#[test]
fn s3_server_killed_mid_run_is_exit_2_and_nothing_passes() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    let port = kill_on_first_object_get(&s3, "/models/llm-scratch/v2/");
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = s3.run(
        ex.path(),
        &["verify", "--format", "json", ex.v2().to_str().unwrap()],
        &[("AWS_ENDPOINT_URL", &endpoint)],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    assert_eq!(v["steps"][0]["verdict"], "error", "{v:#}");
    for a in ["ckpt.pt", "tokenizer.json", "chat_template.jinja", "generation_config.json", "clean_corpus.txt"] {
        assert_eq!(status_of(&out, a), "UNREADABLE", "{a} was never read, so it is not OK: {v:#}");
    }
}

#[test]
fn s3_sibling_prefixes_are_distinct() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    // A v20 sibling next to v2 must not appear as EXTRA in v2.
    let v20 = s3.data.path().join("models/llm-scratch/v20");
    std::fs::create_dir_all(&v20).unwrap();
    std::fs::write(v20.join("other.bin"), "x").unwrap();
    let out = s3.run(ex.path(), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.stdout.contains("other.bin"));
}

// ---- library level: pinned reads on the in-memory store ----------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_replaced_between_list_and_read_is_reported_not_mixed() {
    use bundlegate::adapters::store::Store;
    use bundlegate::checks::verify::ReadFailure;
    use bundlegate::checks::verify::{evaluate, HashOutcome};
    use object_store::{memory::InMemory, ObjectStoreExt, PutPayload};
    use std::sync::Arc;

    let mem = Arc::new(InMemory::new());
    let store = Store::from_parts(mem.clone(), "models/llm/v2", "memory:///models/llm/v2/");
    mem.put(&store.object_path("ckpt.pt"), PutPayload::from(vec![1u8; 4096])).await.unwrap();
    let listing = store.list().await.unwrap();
    assert_eq!(listing.len(), 1);
    // Overwritten after listing, before reading (same size, other bytes).
    mem.put(&store.object_path("ckpt.pt"), PutPayload::from(vec![2u8; 4096])).await.unwrap();
    let res = store.hash(&listing[0], Arc::new(|_| {})).await;
    assert!(matches!(res, Err(ReadFailure::Changed(_))), "{res:?}");

    // And the check turns it into BG105, never OK.
    let ex = Example::new();
    let text = std::fs::read_to_string(ex.v2()).unwrap();
    let l = bundlegate::bundle::parse("release.yaml", &ex.v2(), text).unwrap();
    let listing = vec![bundlegate::checks::verify::Listed {
        key: "ckpt.pt".into(),
        size: 6144,
        e_tag: Some("1".into()),
        version: None,
        last_modified: "2026-12-01T00:00:00Z".into(),
    }];
    let mut hashes = std::collections::BTreeMap::new();
    hashes.insert(
        "ckpt.pt".to_string(),
        HashOutcome::Failed { failure: ReadFailure::Changed("etag".into()), retries: vec![] },
    );
    let out = evaluate(&l, &listing, &hashes, false);
    assert!(out.diagnostics.iter().any(|d| d.code == "BG105"));
    assert!(out.rows.iter().any(|r| r.path == "ckpt.pt" && r.status.as_str() == "CHANGED"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_store_hashes_and_lists_by_segment() {
    use bundlegate::adapters::store::Store;
    use object_store::{memory::InMemory, ObjectStoreExt, PutPayload};
    use std::sync::Arc;
    let mem = Arc::new(InMemory::new());
    let v1 = Store::from_parts(mem.clone(), "m/v1", "memory:///m/v1/");
    let v10 = Store::from_parts(mem.clone(), "m/v10", "memory:///m/v10/");
    mem.put(&v1.object_path("a.bin"), PutPayload::from_static(b"abc")).await.unwrap();
    mem.put(&v10.object_path("b.bin"), PutPayload::from_static(b"xyz")).await.unwrap();
    let l = v1.list().await.unwrap();
    assert_eq!(l.iter().map(|o| o.key.as_str()).collect::<Vec<_>>(), vec!["a.bin"]);
    let h = v1.hash(&l[0], Arc::new(|_| {})).await.unwrap();
    assert_eq!(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// ---- a misbehaving S3 endpoint: truncated bodies --------------------------------
// s3s-fs cannot be made to cut a response short, so this stand-in speaks just
// enough S3 (ListObjectsV2 + GET) to send a body shorter than its
// Content-Length, which is what a dropped connection looks like.

fn truncating_s3(key: &'static str, size: usize) -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let gets = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let g = gets.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                    break;
                }
            }
            let target = first.split_whitespace().nth(1).unwrap_or("/").to_string();
            if target.contains("list-type=2") {
                let body = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>models</Name><Prefix>llm/v2/</Prefix><KeyCount>1</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated><Contents><Key>llm/v2/{key}</Key><LastModified>2026-12-01T00:00:00.000Z</LastModified><ETag>&quot;e1&quot;</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents></ListBucketResult>"
                );
                let _ = write!(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
            } else {
                g.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nETag: \"e1\"\r\nLast-Modified: Tue, 01 Dec 2026 00:00:00 GMT\r\nConnection: close\r\n\r\n"
                );
                let _ = conn.write_all(&vec![0u8; size / 2]);
                // Drop the connection mid-body.
            }
        }
    });
    (port, gets)
}

#[test]
fn truncated_stream_is_retried_then_exit_2_naming_the_object() {
    let (port, gets) = truncating_s3("ckpt.pt", 6144);
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.model.storageUri") = "s3://models/llm/v2/".into();
        let arts = at(v, "spec.model.artifacts").as_sequence_mut().unwrap();
        arts.truncate(1);
    });
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = run_in(
        ex.path(),
        &["verify", "--format", "json", ex.v2().to_str().unwrap()],
        &[
            ("AWS_ACCESS_KEY_ID", "k"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ENDPOINT_URL", &endpoint),
            ("AWS_ALLOW_HTTP", "true"),
        ],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let d = out.diag("BG106");
    assert!(d["message"].as_str().unwrap().contains("ckpt.pt"), "{d}");
    assert_eq!(d["evidence"].as_array().unwrap().len(), 3, "three retries are reported: {d}");
    assert_eq!(status_of(&out, "ckpt.pt"), "UNREADABLE");
    assert!(gets.load(std::sync::atomic::Ordering::SeqCst) >= 4);
}

#[test]
fn s3_store_gone_mid_run_fails_fast_without_retrying_each_object() {
    let Some(s3) = S3Server::start() else { return };
    let ex = s3_example(&s3);
    let (port, gets) = kill_on_first_object_get_counting(&s3, "/models/llm-scratch/v2/");
    let endpoint = format!("http://127.0.0.1:{port}");
    let out = s3.run(
        ex.path(),
        &["verify", "--format", "json", "--jobs", "1", ex.v2().to_str().unwrap()],
        &[("AWS_ENDPOINT_URL", &endpoint)],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    for a in ["ckpt.pt", "tokenizer.json", "chat_template.jinja", "generation_config.json", "clean_corpus.txt"] {
        assert_eq!(status_of(&out, a), "UNREADABLE", "{a}: {v:#}");
    }
    // One object GET reached the store; the refused connections that
    // followed stopped the run: no object was retried by verify itself and
    // the four others were never requested, each NOT CHECKED with one reason.
    assert_eq!(gets.load(std::sync::atomic::Ordering::SeqCst), 1, "{v:#}");
    let diags = v["steps"][0]["diagnostics"].as_array().unwrap();
    assert!(!v.to_string().contains("retried after"), "{v:#}");
    let not_checked = diags.iter().filter(|d| d["message"].as_str().unwrap_or("").contains("NOT CHECKED")).count();
    assert_eq!(not_checked, 4, "{v:#}");
    assert!(diags.iter().all(|d| d["code"] == "BG109"), "{v:#}");
}

#[test]
fn symlink_in_file_store_leading_outside_is_refused_and_not_listed() {
    let ex = Example::new();
    let outside = tempfile::tempdir().unwrap();
    let store = ex.store("v2");
    // An artifact replaced by a symlink to identical bytes outside the tree:
    // the bytes match, but they are not in the release prefix.
    std::fs::copy(store.join("ckpt.pt"), outside.path().join("ckpt.pt")).unwrap();
    std::fs::remove_file(store.join("ckpt.pt")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("ckpt.pt"), store.join("ckpt.pt")).unwrap();
    // And an extra symlink to a host file.
    std::os::unix::fs::symlink("/etc/passwd", store.join("passwd")).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(status_of(&out, "ckpt.pt"), "REFUSED");
    assert_eq!(status_of(&out, "passwd"), "REFUSED");
    assert!(out.codes().contains(&"BG108".to_string()), "{}", out.stdout);
    let host_size = std::fs::metadata("/etc/passwd").unwrap().len();
    let v = out.json();
    for a in v["steps"][0]["data"]["artifacts"].as_array().unwrap() {
        if a["path"] == "passwd" {
            assert!(
                a["actualSize"].is_null() && a["actual_size"].is_null(),
                "host file size listed: {a} ({host_size})"
            );
        }
    }
    // A symlink that stays inside the prefix is fine.
    let ok = Example::new();
    let st = ok.store("v2");
    std::fs::rename(st.join("clean_corpus.txt"), st.join("real_corpus.txt")).unwrap();
    std::os::unix::fs::symlink("real_corpus.txt", st.join("clean_corpus.txt")).unwrap();
    let out = verify(&ok, &[]);
    assert_eq!(status_of(&out, "clean_corpus.txt"), "OK", "{}", out.stdout);
}

#[test]
fn file_uri_outside_the_store_root_is_refused_and_nothing_listed() {
    for uri in ["file:/etc/", "file:///etc/", "file:../../../../../../../../etc/"] {
        let ex = Example::new();
        ex.edit_v2(|v| *at(v, "spec.model.storageUri") = uri.into());
        let out = verify(&ex, &[]);
        assert_eq!(out.code, 1, "{uri}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.codes(), vec!["BG110".to_string()], "{uri}: {}", out.stdout);
        assert_eq!(out.json()["verdict"], "fail");
        for s in [&out.stdout, &out.stderr] {
            assert!(!s.contains("passwd") && !s.contains("hostname"), "{uri}: host folder listed: {s}");
        }
    }
    // A symlinked store folder leading out is refused the same way.
    let ex = Example::new();
    let outside = tempfile::tempdir().unwrap();
    copy_dir(&ex.store("v2"), &outside.path().join("v2"));
    std::fs::remove_dir_all(ex.store("v2")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("v2"), ex.store("v2")).unwrap();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.codes(), vec!["BG110".to_string()], "{}", out.stdout);
    // Publish refuses to write outside the root too.
    let model = ex.path().join("m");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("a.bin"), "x").unwrap();
    let p = ex.run(&[
        "publish",
        "m",
        "--to",
        "file:/tmp/bundlegate-escape-test/v9/",
        "--bundle",
        ex.v2().to_str().unwrap(),
    ]);
    assert_eq!(p.code, 2, "{}\n{}", p.stdout, p.stderr);
    assert!(p.stderr.contains("outside the store root"), "{}", p.stderr);
    assert!(!Path::new("/tmp/bundlegate-escape-test/v9").exists());
}

/// With no `.git` around the bundle, the `file:` store root fell back to the
/// current folder: `cd / && bundlegate verify /tmp/x/release.yaml` with
/// `storageUri: file:/etc/` listed host files. The root is the bundle's git
/// work tree, else the bundle's own folder, never the current folder.
#[test]
fn file_store_root_is_the_bundles_repository_never_the_current_folder() {
    let ex = Example::without_repository();
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "file:/etc/".into());
    let out = run_in(Path::new("/"), &["verify", "--format", "json", ex.v2().to_str().unwrap()], &[]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.codes(), vec!["BG110".to_string()], "{}", out.stdout);
    for s in [&out.stdout, &out.stderr] {
        assert!(!s.contains("passwd") && !s.contains("hostname"), "host folder listed: {s}");
    }
    // Without a repository the bundle's folder is the root, wherever the
    // command runs: the example's `../../store/` is outside it.
    let ex = Example::without_repository();
    let out = verify(&ex, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG110".to_string()], "{}", out.stdout);
    let root = std::fs::canonicalize(ex.v2().parent().unwrap()).unwrap();
    assert!(out.stdout.contains(&format!("outside the store root {}", root.display())), "{}", out.stdout);
    // BUNDLEGATE_STORE_ROOT chooses another root; in a git work tree the tree is the root.
    let out = run_in(
        ex.path(),
        &["verify", "--format", "json", ex.v2().to_str().unwrap()],
        &[("BUNDLEGATE_STORE_ROOT", ex.path().to_str().unwrap())],
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(verify(&Example::new(), &[]).code, 0);
}

#[test]
fn s3a_is_refused_by_lint_and_verify_alike() {
    let ex = Example::new();
    ex.edit_v2(|v| *at(v, "spec.model.storageUri") = "s3a://models/llm-scratch/v2/".into());
    let lint = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert!(lint.codes().contains(&"BG019".to_string()), "{}", lint.stdout);
    let v = verify(&ex, &[]);
    assert_eq!(v.code, 2, "{}", v.stdout);
    assert!(v.stdout.contains("no supported scheme"), "{}", v.stdout);
}

#[test]
fn publish_changes_only_the_values_it_must() {
    let ex = Example::new();
    let model = ex.path().join("model-v3");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("model.safetensors"), vec![7u8; 3000]).unwrap();
    std::fs::write(model.join("tokenizer.json"), "{}").unwrap();
    let bundle = ex.path().join("llm-scratch/v3/release.yaml");
    std::fs::create_dir_all(bundle.parent().unwrap()).unwrap();
    let orig = std::fs::read_to_string(ex.v2()).unwrap();
    // Comments, a quoted string and a flow list the author wrote; CRLF line ends.
    let orig = orig
        .replacen(
            "storageUri: file:../../store/llm-scratch/v2/",
            "storageUri: \"file:../../store/llm-scratch/v2/\"  # reviewed",
            1,
        )
        .replace('\n', "\r\n");
    assert!(orig.contains("# reviewed"));
    std::fs::write(&bundle, &orig).unwrap();
    let out = ex.run(&[
        "publish",
        "--format",
        "json",
        "model-v3",
        "--to",
        "file:../../store/llm-scratch/v3/",
        "--bundle",
        bundle.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains("rewritten as a whole"), "{}", out.stdout);
    let new = std::fs::read_to_string(&bundle).unwrap();
    assert!(new.contains("storageUri: \"file:../../store/llm-scratch/v3/\"  # reviewed\r\n"), "{new}");
    assert!(!new.replace("\r\n", "").contains('\n'), "line ends kept: {new}");
    let diff = similar::TextDiff::from_lines(&orig, &new);
    for change in diff.iter_all_changes().filter(|c| c.tag() != similar::ChangeTag::Equal) {
        let line = change.value().trim();
        let ok = ["- path:", "path:", "sha256:", "size:", "role:", "storeChecksum:", "storageUri:"]
            .iter()
            .any(|k| line.starts_with(k));
        assert!(ok, "publish changed a line it did not need to: {change:?}\n{new}");
    }
    assert!(new.contains("path: model.safetensors") && !new.contains("path: ckpt.pt"), "{new}");
    // Everything before spec.model.artifacts except storageUri, and everything
    // after the list, is byte-identical.
    let tail = |t: &str| t[t.find("\r\n  generation:").expect("generation after artifacts")..].to_string();
    assert_eq!(tail(&orig), tail(&new));
    let v = ex.run(&["verify", "--format", "json", bundle.to_str().unwrap()]);
    assert_eq!(v.code, 0, "{}", v.stdout);
}
