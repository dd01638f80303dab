//! Audits past one machine: `audit --shard K/N`, `report merge`, a cache
//! shared by shards (folder or real S3 prefix), and the alert metrics.

use std::collections::BTreeSet;
use std::path::Path;

use crate::support::{copy_dir, edit_yaml, run_in, yaml, Example, Out};

/// The example plus `extra` more bundles, each with its own store folder.
fn tree(extra: usize) -> Example {
    let ex = Example::new();
    for i in 0..extra {
        let v = format!("v1-copy{i}");
        copy_dir(&ex.path().join("llm-scratch/v1"), &ex.path().join("llm-scratch").join(&v));
        copy_dir(&ex.store("v1"), &ex.store(&v));
        edit_yaml(&ex.path().join("llm-scratch").join(&v).join("release.yaml"), |b| {
            b["spec"]["model"]["storageUri"] = yaml(&format!("file:../../store/llm-scratch/{v}/"));
        });
    }
    ex
}

fn audit(ex: &Example, extra: &[&str]) -> Out {
    let mut a = vec!["audit", "--format", "json", "--progress", "never", "."];
    a.extend_from_slice(extra);
    run_in(ex.path(), &a, &[])
}

/// (bundle, verdict, sorted codes) of every audited bundle.
fn findings(o: &Out) -> BTreeSet<(String, String, Vec<String>)> {
    o.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "audit")
        .map(|s| {
            let mut codes: Vec<String> = s["diagnostics"]
                .as_array()
                .map(|d| d.iter().map(|x| x["code"].as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            codes.sort();
            (s["target"].as_str().unwrap().to_string(), s["verdict"].as_str().unwrap().to_string(), codes)
        })
        .collect()
}

fn run_shards(ex: &Example, n: u32, cache: &str, reports: &Path) -> Vec<Out> {
    std::fs::create_dir_all(reports).unwrap();
    (0..n)
        .map(|k| {
            let shard = format!("{k}/{n}");
            let rep = reports.join(format!("shard-{k}.json"));
            audit(ex, &["--shard", &shard, "--cache", cache, "--write-report", rep.to_str().unwrap()])
        })
        .collect()
}

#[test]
fn four_shards_merged_equal_one_audit_and_a_drift_is_reported_once_by_its_owner() {
    let ex = tree(6);
    let single = audit(&ex, &["--cache", ex.path().join("cache-single").to_str().unwrap()]);
    assert_eq!(single.code, 0, "{}\n{}", single.stdout, single.stderr);
    assert_eq!(findings(&single).len(), 8);

    let cache = ex.path().join("cache-shared");
    let reports = ex.path().join("reports");
    let shards = run_shards(&ex, 4, cache.to_str().unwrap(), &reports);
    let mut owned = Vec::new();
    for (k, s) in shards.iter().enumerate() {
        assert_eq!(s.code, 0, "shard {k}: {}\n{}", s.stdout, s.stderr);
        let j = s.json();
        assert_eq!(j["shard"]["index"], k as u64);
        assert_eq!(j["shard"]["count"], 4);
        assert_eq!(j["shard"]["bundlesTotal"], 8);
        owned.extend(j["shard"]["owned"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()));
    }
    owned.sort();
    let n = owned.len();
    owned.dedup();
    assert_eq!((n, owned.len()), (8, 8), "every bundle in exactly one shard: {owned:?}");
    let merged = run_in(ex.path(), &["report", "merge", "--format", "json", "reports/"], &[]);
    assert_eq!(merged.code, 0, "{}\n{}", merged.stdout, merged.stderr);
    assert_eq!(merged.json()["verdict"], "pass");
    assert_eq!(findings(&merged), findings(&single), "sharded and single audits must agree");

    // The shared cache makes the second run read nothing.
    let again = run_shards(&ex, 4, cache.to_str().unwrap(), &reports);
    for s in &again {
        for st in s.json()["steps"].as_array().unwrap().iter().filter(|s| s["data"].is_object()) {
            assert_eq!(st["data"]["bytesHashed"], 0, "{st}");
        }
    }

    // One byte changes in one store: one bundle drifts, in one shard's report.
    std::thread::sleep(std::time::Duration::from_millis(20));
    let p = ex.store("v1-copy3").join("clean_corpus.txt");
    let mut b = std::fs::read(&p).unwrap();
    b[0] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let drifted = run_shards(&ex, 4, cache.to_str().unwrap(), &reports);
    let reporting: Vec<usize> =
        drifted.iter().enumerate().filter(|(_, s)| s.codes().contains(&"BG107".to_string())).map(|(k, _)| k).collect();
    assert_eq!(reporting.len(), 1, "exactly one shard reports the drift: {reporting:?}");
    assert_eq!(drifted[reporting[0]].code, 1);
    let metrics = ex.path().join("audit.prom");
    let merged = run_in(
        ex.path(),
        &["report", "merge", "--format", "json", "reports/", "--metrics-file", metrics.to_str().unwrap()],
        &[],
    );
    assert_eq!(merged.code, 1);
    let fails: Vec<_> = findings(&merged).into_iter().filter(|f| f.1 == "fail").collect();
    assert_eq!(fails.len(), 1, "{fails:?}");
    assert!(fails[0].0.contains("v1-copy3"), "{fails:?}");
    let m = std::fs::read_to_string(&metrics).unwrap();
    assert!(
        m.contains("bundlegate_audit_bundle_drifted{bundle=\"./llm-scratch/v1-copy3/release.yaml\"} 1")
            || m.lines().any(|l| l.starts_with("bundlegate_audit_bundle_drifted{")
                && l.contains("v1-copy3")
                && l.ends_with(" 1")),
        "{m}"
    );
    assert!(m.contains("bundlegate_audit_verdict{verdict=\"fail\"} 1"), "{m}");
    assert_eq!(
        m.lines().filter(|l| l.starts_with("bundlegate_audit_bundle_drifted{") && l.ends_with(" 1")).count(),
        1,
        "{m}"
    );
}

#[test]
fn merge_of_a_missing_duplicate_or_foreign_shard_is_inconclusive() {
    let ex = tree(3);
    let reports = ex.path().join("reports");
    run_shards(&ex, 3, ex.path().join("c").to_str().unwrap(), &reports);
    let r = |f: &str| reports.join(f).to_str().unwrap().to_string();
    let missing =
        run_in(ex.path(), &["report", "merge", "--format", "json", &r("shard-0.json"), &r("shard-1.json")], &[]);
    assert_eq!(missing.code, 1, "{}", missing.stdout);
    assert_eq!(missing.json()["verdict"], "inconclusive");
    assert!(missing.diag("BG602")["message"].as_str().unwrap().contains("missing shard"), "{}", missing.stdout);
    let dup = run_in(
        ex.path(),
        &[
            "report",
            "merge",
            "--format",
            "json",
            &r("shard-0.json"),
            &r("shard-0.json"),
            &r("shard-1.json"),
            &r("shard-2.json"),
        ],
        &[],
    );
    assert_eq!(dup.code, 1);
    assert!(dup.stdout.contains("appears 2 times"), "{}", dup.stdout);
    // Another tree state: a bundle is added, one shard re-runs.
    let ex2 = tree(4);
    let other = ex2.path().join("other.json");
    audit(
        &ex2,
        &[
            "--shard",
            "2/3",
            "--cache",
            ex2.path().join("c").to_str().unwrap(),
            "--write-report",
            other.to_str().unwrap(),
        ],
    );
    let foreign = run_in(
        ex.path(),
        &["report", "merge", "--format", "json", &r("shard-0.json"), &r("shard-1.json"), other.to_str().unwrap()],
        &[],
    );
    assert_eq!(foreign.code, 1);
    assert!(foreign.stdout.contains("different trees"), "{}", foreign.stdout);
    // Not a report at all: exit 2 naming the file.
    std::fs::write(ex.path().join("junk.json"), "{\"schema\": 1").unwrap();
    let junk = run_in(ex.path(), &["report", "merge", "junk.json"], &[]);
    assert_eq!(junk.code, 2);
    assert!(junk.stderr.contains("junk.json"), "{}", junk.stderr);
}

#[test]
fn shard_auto_takes_the_indexed_job_completion_index() {
    let ex = tree(1);
    let c = ex.path().join("c");
    let out = run_in(
        ex.path(),
        &["audit", "--format", "json", ".", "--shard", "auto/2", "--cache", c.to_str().unwrap()],
        &[("JOB_COMPLETION_INDEX", "1")],
    );
    assert!(out.code <= 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["shard"]["index"], 1);
    let bad = run_in(ex.path(), &["audit", ".", "--shard", "auto/2"], &[("JOB_COMPLETION_INDEX", "2")]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("out of range"), "{}", bad.stderr);
    let bad = run_in(ex.path(), &["audit", ".", "--shard", "3/2"], &[]);
    assert_eq!(bad.code, 2);
    // A single cache file cannot be shared by shards.
    let bad = run_in(ex.path(), &["audit", ".", "--shard", "0/2", "--cache", "c.json"], &[]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("cannot be shared"), "{}", bad.stderr);
}

#[test]
fn a_corrupt_or_foreign_cache_object_is_rebuilt_never_trusted() {
    let ex = tree(0);
    let c = ex.path().join("c");
    assert_eq!(audit(&ex, &["--cache", c.to_str().unwrap()]).code, 0);
    let objs: Vec<_> = std::fs::read_dir(&c).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(objs.len(), 2, "one cache object per bundle: {objs:?}");
    std::fs::write(&objs[0], b"{\"schema\": \"bundlegate.dev/audit-cache/v2\", \"bund").unwrap();
    // The other object claims to be a different bundle's (copied by hand).
    let text = std::fs::read_to_string(&objs[1]).unwrap();
    std::fs::write(&objs[1], text.replace("\"bundle\":\"", "\"bundle\":\"elsewhere/")).unwrap();
    let out = audit(&ex, &["--cache", c.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.codes().iter().filter(|c| *c == "BG601").count(), 2, "{}", out.stdout);
    let hashed: u64 =
        out.json()["steps"].as_array().unwrap().iter().map(|s| s["data"]["objectsHashed"].as_u64().unwrap()).sum();
    assert_eq!(hashed, 10, "nothing from the broken cache was trusted");
    let third = audit(&ex, &["--cache", c.to_str().unwrap()]);
    let hashed: u64 =
        third.json()["steps"].as_array().unwrap().iter().map(|s| s["data"]["objectsHashed"].as_u64().unwrap()).sum();
    assert_eq!(hashed, 0, "the rebuilt cache is used");
}

#[test]
fn shards_share_a_cache_in_a_real_s3_bucket() {
    let Some(s3) = crate::verify::S3Server::start() else { return };
    let ex = tree(2);
    let env: Vec<(&str, String)> = s3.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    std::fs::create_dir_all(s3.data.path().join("audit")).unwrap();
    let cache = "s3://audit/cache/";
    let run = |k: u32| {
        let shard = format!("{k}/2");
        run_in(
            ex.path(),
            &[
                "audit",
                "--format",
                "json",
                "--progress",
                "never",
                ".",
                "--shard",
                &shard,
                "--cache",
                cache,
                "--write-report",
                &format!("s3://audit/reports/shard-{k}.json"),
            ],
            &env,
        )
    };
    for k in 0..2 {
        let o = run(k);
        assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    }
    let merged = run_in(ex.path(), &["report", "merge", "--format", "json", "s3://audit/reports/"], &env);
    assert_eq!(merged.code, 0, "{}\n{}", merged.stdout, merged.stderr);
    assert_eq!(findings(&merged).len(), 4);
    for k in 0..2 {
        let o = run(k);
        for st in o.json()["steps"].as_array().unwrap().iter().filter(|s| s["data"].is_object()) {
            assert_eq!(st["data"]["bytesHashed"], 0, "second run reads nothing: {st}");
        }
    }
}

/// A real Prometheus Pushgateway (`prometheus-pushgateway`, Debian; scripts/
/// install-test-deps installs it) behind basic auth, killed on drop.
struct Pushgateway {
    /// Stopped with its process group when the server drops.
    _child: crate::support::server::Server,
    port: u16,
    _dir: tempfile::TempDir,
}

const PUSH_USER: &str = "pusher";
const PUSH_PASSWORD: &str = "s3cr3t-pw";

impl Pushgateway {
    fn start() -> Option<Pushgateway> {
        let bin = std::env::var_os("PATH")
            .and_then(|p| std::env::split_paths(&p).map(|d| d.join("prometheus-pushgateway")).find(|p| p.is_file()));
        let Some(bin) = bin else {
            if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() {
                eprintln!("skipping: `prometheus-pushgateway` not on PATH and BUNDLEGATE_SKIP_SERVERS is set");
                return None;
            }
            panic!("`prometheus-pushgateway` is not on PATH: run scripts/install-test-deps (Debian package) or set BUNDLEGATE_SKIP_SERVERS=1 to skip server tests");
        };
        let dir = tempfile::tempdir().unwrap();
        // bcrypt of PUSH_PASSWORD (cost 4: a test, not a vault).
        let web = dir.path().join("web.yml");
        std::fs::write(
            &web,
            "basic_auth_users:\n  pusher: $2b$04$IMy3AhlViB5YtKwKEQkseuF8yi6D3dUzfkMcF00M/jSGF5omicYta\n",
        )
        .unwrap();
        let port = crate::verify::free_port();
        let child = crate::support::server::spawn(
            std::process::Command::new(bin)
                .arg(format!("--web.listen-address=127.0.0.1:{port}"))
                .arg(format!("--web.config.file={}", web.display()))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        let p = Pushgateway { _child: child, port, _dir: dir };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while p.get("/-/ready", true).map(|(c, _)| c != 200).unwrap_or(true) {
            assert!(std::time::Instant::now() < deadline, "the Pushgateway did not get ready on {port}");
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Some(p)
    }

    /// GET `path`, with or without the credentials → (status, body).
    fn get(&self, path: &str, auth: bool) -> std::io::Result<(u16, String)> {
        use base64::Engine;
        let header = if auth {
            format!(
                "Authorization: Basic {}\r\n",
                base64::engine::general_purpose::STANDARD.encode(format!("{PUSH_USER}:{PUSH_PASSWORD}"))
            )
        } else {
            String::new()
        };
        crate::support::http::get(self.port, path, &header)
    }
}

#[test]
fn metrics_pushed_with_basic_auth_are_served_by_a_real_pushgateway_and_no_secret_is_printed() {
    let Some(pg) = Pushgateway::start() else { return };
    let ex = tree(0);
    let url = format!("http://{PUSH_USER}:{PUSH_PASSWORD}@127.0.0.1:{}/", pg.port);
    let out = audit(&ex, &["--cache", ex.path().join("c").to_str().unwrap(), "--pushgateway", &url]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(!out.stdout.contains(PUSH_PASSWORD) && !out.stderr.contains(PUSH_PASSWORD));
    assert_eq!(pg.get("/metrics", false).unwrap().0, 401, "the gateway demands the credentials we sent");
    // The gateway parsed our text format (it refuses a malformed push) and
    // serves every series under the job's grouping key.
    let (code, m) = pg.get("/metrics", true).unwrap();
    assert_eq!(code, 200);
    assert!(m.contains("bundlegate_audit_verdict{instance=\"\",job=\"bundlegate_audit\",verdict=\"pass\"} 1"), "{m}");
    let drifted: Vec<&str> = m.lines().filter(|l| l.starts_with("bundlegate_audit_bundle_drifted{")).collect();
    assert_eq!(drifted.len(), 2, "one series per bundle: {m}");
    assert!(drifted.iter().all(|l| l.contains("job=\"bundlegate_audit\"") && l.ends_with(" 0")), "{drifted:?}");
    assert!(m.lines().any(|l| l.starts_with("bundlegate_audit_bundles{") && l.ends_with(" 2")), "{m}");
    // A wrong password is refused by the gateway: the audit is still printed.
    let bad = format!("http://{PUSH_USER}:wrong@127.0.0.1:{}/", pg.port);
    let out = audit(&ex, &["--cache", ex.path().join("c").to_str().unwrap(), "--pushgateway", &bad]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let step = out.json()["steps"].as_array().unwrap().iter().find(|s| s["step"] == "pushgateway").cloned().unwrap();
    assert_eq!(step["verdict"], "error");
    assert!(step["summary"].as_str().unwrap().contains("401"), "{step}");
    assert_eq!(findings(&out).len(), 2);
}

#[test]
fn a_failed_push_still_prints_the_findings_writes_the_metrics_file_and_never_passes() {
    use crate::support::http::{Reply, Server};
    let down = Server::start_replies(
        0,
        std::sync::Arc::new(|_r: &crate::support::http::Req| Reply::Raw {
            status: 503,
            headers: vec![],
            body: b"maintenance".to_vec(),
        }),
    );
    let ex = tree(1);
    let c = ex.path().join("c");
    let clean = audit(&ex, &["--cache", c.to_str().unwrap()]);
    assert_eq!(clean.code, 0, "{}\n{}", clean.stdout, clean.stderr);
    // One byte drifts: FAIL, and the push fails too.
    let p = ex.store("v1-copy0").join("clean_corpus.txt");
    let mut b = std::fs::read(&p).unwrap();
    b[0] ^= 1;
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&p, &b).unwrap();
    let prom = ex.path().join("audit.prom");
    let out = audit(
        &ex,
        &["--cache", c.to_str().unwrap(), "--metrics-file", prom.to_str().unwrap(), "--pushgateway", &down.url()],
    );
    assert_eq!(out.code, 2, "the push failed: exit 2, never 0\n{}\n{}", out.stdout, out.stderr);
    let j = out.json();
    assert_eq!(j["verdict"], "error");
    let f = findings(&out);
    assert_eq!(f.len(), 3, "every bundle's finding is printed: {f:?}");
    assert!(
        f.iter().any(|(t, v, codes)| t.contains("v1-copy0") && v == "fail" && codes.contains(&"BG107".to_string())),
        "{f:?}"
    );
    let step = j["steps"].as_array().unwrap().iter().find(|s| s["step"] == "pushgateway").cloned().unwrap();
    assert_eq!(step["verdict"], "error");
    assert!(step["summary"].as_str().unwrap().contains("503"), "{step}");
    let m = std::fs::read_to_string(&prom).unwrap();
    assert!(
        m.lines()
            .any(|l| l.starts_with("bundlegate_audit_bundle_drifted{") && l.contains("v1-copy0") && l.ends_with(" 1")),
        "{m}"
    );
    assert!(m.contains("bundlegate_audit_verdict{verdict=\"fail\"} 1"), "the metrics say what the audit found: {m}");
    // The merge of shard reports behaves the same.
    let reports = ex.path().join("reports");
    run_shards(&ex, 2, c.to_str().unwrap(), &reports);
    let merged =
        run_in(ex.path(), &["report", "merge", "--format", "json", "reports/", "--pushgateway", &down.url()], &[]);
    assert_eq!(merged.code, 2, "{}\n{}", merged.stdout, merged.stderr);
    let verdicts =
        |f: BTreeSet<(String, String, Vec<String>)>| f.into_iter().map(|(t, v, _)| (t, v)).collect::<Vec<_>>();
    assert_eq!(verdicts(findings(&merged)), verdicts(f), "the merged findings are printed");
    // A destination that cannot work is refused before any hashing.
    let bad = audit(&ex, &["--cache", c.to_str().unwrap(), "--pushgateway", "ftp://h/"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    // Its report (in the chosen format, issue #28) is that one ERROR: nothing was audited.
    let r: serde_json::Value = serde_json::from_str(&bad.stdout).unwrap();
    let steps = r["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 1, "{r:#}");
    assert_eq!((steps[0]["step"].as_str(), steps[0]["verdict"].as_str()), (Some("audit"), Some("error")), "{r:#}");
    assert!(steps[0]["summary"].as_str().unwrap().contains("--pushgateway"), "{r:#}");
}

#[test]
fn file_uris_name_the_same_place_as_paths_for_cache_reports_and_metrics() {
    let ex = tree(1);
    let abs = ex.path().display().to_string();
    // The single-file cache, the report and the metrics as `file:/abs` URIs.
    let out = audit(
        &ex,
        &[
            "--cache",
            &format!("file:{abs}/cache.json"),
            "--write-report",
            &format!("file:{abs}/one/r.json"),
            "--metrics-file",
            &format!("file://{abs}/m.prom"),
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(ex.path().join("cache.json").is_file(), "the cache is at the path the URI names");
    assert!(ex.path().join("one/r.json").is_file());
    assert!(std::fs::read_to_string(ex.path().join("m.prom")).unwrap().contains("bundlegate_audit_verdict"));
    // Folder caches, relative `file:` reports, and merge inputs likewise.
    let reports = ex.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    for k in 0..2 {
        let o = audit(
            &ex,
            &[
                "--shard",
                &format!("{k}/2"),
                "--cache",
                &format!("file://{abs}/shared/"),
                "--write-report",
                &format!("file:reports/shard-{k}.json"),
            ],
        );
        assert_eq!(o.code, 0, "{}\n{}", o.stdout, o.stderr);
    }
    assert!(reports.join("shard-0.json").is_file() && reports.join("shard-1.json").is_file());
    assert!(std::fs::read_dir(ex.path().join("shared")).unwrap().count() >= 3, "one cache object per bundle");
    for inputs in [
        vec![format!("file:{abs}/reports")],
        vec![format!("file:{abs}/reports/shard-0.json"), "file:reports/shard-1.json".to_string()],
    ] {
        let mut a = vec!["report", "merge", "--format", "json"];
        a.extend(inputs.iter().map(String::as_str));
        let m = run_in(ex.path(), &a, &[]);
        assert_eq!(m.code, 0, "{inputs:?}: {}\n{}", m.stdout, m.stderr);
        assert_eq!(findings(&m).len(), 3);
    }
    let stray: Vec<_> = std::fs::read_dir(ex.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("file"))
        .collect();
    assert!(stray.is_empty(), "no folder named after the URI: {stray:?}");
    // A malformed URI is refused before the audit, not taken for a path.
    for (flag, bad) in [
        ("--cache", "s3:/bucket/c/"),
        ("--write-report", "file://host/r.json"),
        ("--write-report", "reports/"),
        ("--metrics-file", "gs://"),
    ] {
        let o = audit(&ex, &[flag, bad]);
        assert_eq!(o.code, 2, "{flag} {bad}: {}", o.stdout);
        assert!(o.stderr.contains(flag) || o.stderr.contains(bad), "{flag} {bad}: {}", o.stderr);
    }
}

/// Coverage is read from the audit steps each report holds: a report whose
/// steps were removed, or that holds another shard's, keeps its `owned`
/// list intact and still does not merge as "audited exactly once".
#[test]
fn merge_reads_coverage_from_the_steps_not_the_owned_list() {
    let ex = tree(3);
    let reports = ex.path().join("reports");
    run_shards(&ex, 2, ex.path().join("c").to_str().unwrap(), &reports);
    let path = |f: &str| reports.join(f).to_str().unwrap().to_string();
    let merge = |a: &str, b: &str| run_in(ex.path(), &["report", "merge", "--format", "json", a, b], &[]);
    let whole = merge(&path("shard-0.json"), &path("shard-1.json"));
    assert_eq!(whole.code, 0, "{}\n{}", whole.stdout, whole.stderr);
    let read = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(reports.join(f)).unwrap()).unwrap()
    };
    let is_audit = |s: &serde_json::Value| s["step"] == "audit";
    // Shard 0 with its audit steps removed.
    let mut emptied = read("shard-0.json");
    let owned = emptied["shard"]["owned"].as_array().unwrap().clone();
    assert!(!owned.is_empty(), "shard 0 owns bundles");
    emptied["steps"].as_array_mut().unwrap().retain(|s| !is_audit(s));
    std::fs::write(reports.join("emptied.json"), emptied.to_string()).unwrap();
    let out = merge(&path("emptied.json"), &path("shard-1.json"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(out.json()["verdict"], "inconclusive");
    let msg = out.diag("BG602")["message"].as_str().unwrap().to_string();
    assert!(msg.contains("holds no audit of") && msg.contains(owned[0].as_str().unwrap()), "{msg}");
    // Shard 1 holding shard 0's steps, shard 0 holding none.
    let mut holder = read("shard-1.json");
    let moved: Vec<serde_json::Value> =
        read("shard-0.json")["steps"].as_array().unwrap().iter().filter(|s| is_audit(s)).cloned().collect();
    holder["steps"].as_array_mut().unwrap().extend(moved);
    std::fs::write(reports.join("holder.json"), holder.to_string()).unwrap();
    let out = merge(&path("emptied.json"), &path("holder.json"));
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(out.stdout.contains("which shard 1/2 does not own"), "{}", out.stdout);
}

/// The example plus one copy of v1 per folder name given as bytes, each
/// with its own store folder (`copy0`, `copy1`, …).
fn tree_in_folders(names: &[&[u8]]) -> Example {
    use std::os::unix::ffi::OsStrExt;
    let ex = Example::new();
    for (i, name) in names.iter().enumerate() {
        let folder = ex.path().join("llm-scratch").join(std::ffi::OsStr::from_bytes(name));
        let store = format!("copy{i}");
        copy_dir(&ex.path().join("llm-scratch/v1"), &folder);
        copy_dir(&ex.store("v1"), &ex.store(&store));
        edit_yaml(&folder.join("release.yaml"), |b| {
            b["spec"]["model"]["storageUri"] = yaml(&format!("file:../../store/llm-scratch/{store}/"));
        });
    }
    ex
}

/// Every sample line's series (`name{labels}`), each once.
fn series_once(m: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for l in m.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
        let (series, _) = l.rsplit_once(' ').unwrap();
        assert!(seen.insert(series.to_string()), "series {series} twice:\n{m}");
    }
    seen
}

/// `promtool check metrics` (Prometheus' own reader and linter) on the file;
/// skipped, saying why, only where promtool is not installed.
fn promtool_accepts(file: &Path) {
    let Ok(f) = std::fs::File::open(file) else { panic!("no metrics file {}", file.display()) };
    match std::process::Command::new("promtool").args(["check", "metrics"]).stdin(f).output() {
        Ok(o) => assert!(
            o.status.success(),
            "promtool check metrics refused {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            eprintln!("SKIPPED promtool check metrics: promtool is not installed (Debian: apt-get install prometheus)")
        }
        Err(e) => panic!("running promtool: {e}"),
    }
}

/// Two bundles in folders whose names differ only in bytes that are not
/// UTF-8 (Linux paths are bytes): a lossy name made them one metrics label
/// (and one audit id), and of the two series Prometheus keeps the first, so
/// one's drift could hide behind the other's health. Now two ids, two
/// targets, two series: the drifted one says 1, and promtool reads the file.
#[test]
fn bundles_whose_folder_names_differ_only_in_bytes_that_are_not_utf8_are_two_series() {
    let ex = tree_in_folders(&[b"v1-\xfe", b"v1-\xff"]);
    let p = ex.store("copy1").join("clean_corpus.txt");
    let mut b = std::fs::read(&p).unwrap();
    b[0] ^= 1;
    std::fs::write(&p, &b).unwrap();
    let metrics = ex.path().join("audit.prom");
    let reports = ex.path().join("reports");
    let out =
        audit(&ex, &["--cache", ex.path().join("c").to_str().unwrap(), "--metrics-file", metrics.to_str().unwrap()]);
    assert_eq!(out.code, 1, "the drift is found: {}\n{}", out.stdout, out.stderr);
    let audited: Vec<(String, String, String)> = out.json()["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "audit")
        .map(|s| {
            let f = |k: &str| s[k].as_str().unwrap_or_default().to_string();
            (f("target"), s["data"]["bundle"].as_str().unwrap().to_string(), f("verdict"))
        })
        .collect();
    assert!(
        audited.contains(&(
            "./llm-scratch/v1-\\xff/release.yaml".into(),
            "llm-scratch/v1-\\xff/release.yaml".into(),
            "fail".into()
        )) && audited.contains(&(
            "./llm-scratch/v1-\\xfe/release.yaml".into(),
            "llm-scratch/v1-\\xfe/release.yaml".into(),
            "pass".into()
        )),
        "{audited:?}"
    );
    let m = std::fs::read_to_string(&metrics).unwrap();
    let series = series_once(&m);
    assert_eq!(series.iter().filter(|s| s.starts_with("bundlegate_audit_bundle_drifted{")).count(), 4, "{m}");
    assert!(m.contains("bundlegate_audit_bundle_drifted{bundle=\"./llm-scratch/v1-\\\\xff/release.yaml\"} 1"), "{m}");
    assert!(m.contains("bundlegate_audit_bundle_drifted{bundle=\"./llm-scratch/v1-\\\\xfe/release.yaml\"} 0"), "{m}");
    promtool_accepts(&metrics);
    // Sharded: two ids, each owned by exactly one shard, merged as one tree.
    run_shards(&ex, 2, ex.path().join("c2").to_str().unwrap(), &reports);
    let merged_metrics = ex.path().join("merged.prom");
    let merged = run_in(
        ex.path(),
        &["report", "merge", "--format", "json", "reports/", "--metrics-file", merged_metrics.to_str().unwrap()],
        &[],
    );
    assert_eq!(merged.code, 1, "{}\n{}", merged.stdout, merged.stderr);
    assert!(merged.stdout.contains("all 4 bundles audited exactly once"), "{}", merged.stdout);
    assert_eq!(series_once(&std::fs::read_to_string(&merged_metrics).unwrap()), series);
    promtool_accepts(&merged_metrics);
}

/// Two audit steps of one bundle in a merge (a shard report given twice
/// under two names): the metrics would hold its series twice. Nothing is
/// written and the run is exit 2, naming both sources.
#[test]
fn metrics_that_would_hold_a_series_twice_are_refused_naming_both_sources() {
    let ex = tree(1);
    let reports = ex.path().join("reports");
    run_shards(&ex, 2, ex.path().join("c").to_str().unwrap(), &reports);
    let copy = ex.path().join("shard-0-again.json");
    std::fs::copy(reports.join("shard-0.json"), &copy).unwrap();
    let metrics = ex.path().join("audit.prom");
    let out = run_in(
        ex.path(),
        &[
            "report",
            "merge",
            "--format",
            "json",
            "reports/",
            copy.to_str().unwrap(),
            "--metrics-file",
            metrics.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(!metrics.exists(), "nothing written");
    let step = out.json()["steps"].as_array().unwrap().iter().find(|s| s["step"] == "metrics-file").cloned().unwrap();
    let why = step["summary"].as_str().unwrap();
    assert_eq!(step["verdict"], "error");
    assert!(why.contains("twice") && why.contains("shard-0.json") && why.contains("shard-0-again.json"), "{why}");
}

/// Which shard owns each bundle, from the shard reports of `n` shards.
fn owners(ex: &Example, n: u32) -> std::collections::BTreeMap<String, u64> {
    let reports = ex.path().join("owners");
    let mut out = std::collections::BTreeMap::new();
    for s in run_shards(ex, n, ex.path().join("c").to_str().unwrap(), &reports) {
        assert!(s.code <= 1, "{}\n{}", s.stdout, s.stderr);
        let j = s.json();
        for b in j["shard"]["owned"].as_array().unwrap() {
            assert!(out.insert(b.as_str().unwrap().to_string(), j["shard"]["index"].as_u64().unwrap()).is_none());
        }
    }
    out
}

/// The assignment is read from the tree alone and each bundle keeps its
/// shard when others come and go: one bundle added or removed moves at
/// most a couple of the others (rendezvous ranking; a fixed order would
/// move about half), for 2 and for 4 shards; and every bundle is owned by
/// exactly one shard each time (`owners` refuses a bundle owned twice).
#[test]
fn a_bundle_added_or_removed_moves_few_others() {
    for n in [2, 4] {
        let ex = tree(18);
        let before = owners(&ex, n);
        assert_eq!(before.len(), 20);
        copy_dir(&ex.path().join("llm-scratch/v1"), &ex.path().join("llm-scratch/v1-new"));
        let after = owners(&ex, n);
        assert_eq!(after.len(), 21, "{n} shards: every bundle owned once");
        let moved: Vec<&String> = before.iter().filter(|(b, k)| after[*b] != **k).map(|(b, _)| b).collect();
        assert!(moved.len() <= 2, "{n} shards: adding one bundle moved {moved:?}");
        std::fs::remove_dir_all(ex.path().join("llm-scratch/v1-new")).unwrap();
        std::fs::remove_dir_all(ex.path().join("llm-scratch/v1-copy4")).unwrap();
        let fewer = owners(&ex, n);
        assert_eq!(fewer.len(), 19, "{n} shards: every bundle owned once");
        let moved: Vec<&String> = fewer.iter().filter(|(b, k)| before[*b] != **k).map(|(b, _)| b).collect();
        assert!(moved.len() <= 2, "{n} shards: removing one bundle moved {moved:?}");
    }
}

/// Each shard parses only the bundles it owns: a malformed bundle is in
/// its owner's report alone (an error there), every other shard's report
/// is whole and never names it, and the merge shows it once.
#[test]
fn a_malformed_bundle_is_reported_by_its_owner_alone() {
    let ex = tree(4);
    let id = "llm-scratch/v1-copy1/release.yaml";
    std::fs::write(ex.path().join(id), "apiVersion: [unclosed\nkind: ReleaseBundle\n").unwrap();
    let reports = ex.path().join("reports");
    let shards = run_shards(&ex, 3, ex.path().join("c").to_str().unwrap(), &reports);
    let owns = |s: &Out| s.json()["shard"]["owned"].as_array().unwrap().iter().any(|b| b == id);
    let owner: Vec<usize> = (0..3).filter(|&k| owns(&shards[k])).collect();
    assert_eq!(owner.len(), 1, "one owner");
    for (k, s) in shards.iter().enumerate() {
        assert_eq!(s.json()["shard"]["bundlesTotal"], 6);
        if k == owner[0] {
            let step = s.json()["steps"].as_array().unwrap().iter().find(|st| st["data"]["bundle"] == id).cloned();
            let step = step.unwrap_or_else(|| panic!("no step of {id}: {}", s.stdout));
            assert_eq!((step["step"].as_str(), step["verdict"].as_str()), (Some("audit"), Some("error")), "{step}");
            assert_eq!(s.code, 2, "{}", s.stdout);
        } else {
            assert!(!s.stdout.contains("v1-copy1") && s.stderr.is_empty(), "shard {k}: {}\n{}", s.stdout, s.stderr);
            assert_eq!(s.code, 0, "shard {k}: {}", s.stdout);
        }
    }
    let merged = run_in(ex.path(), &["report", "merge", "--format", "json", "reports/"], &[]);
    let j = merged.json();
    let steps = j["steps"].as_array().unwrap();
    assert_eq!(steps.iter().filter(|s| s["data"]["bundle"] == id).count(), 1, "{}", merged.stdout);
    assert_eq!(steps.iter().find(|s| s["step"] == "merge").unwrap()["verdict"], "pass", "coverage is complete");
    assert_eq!(merged.code, 2);
}

/// The tree's identity is read from the bundle files' bytes: one bundle
/// edited in place (same length) after two shards ran makes the third
/// shard's report another tree's, and the merge refuses it.
#[test]
fn a_bundle_edited_in_place_between_shards_is_another_tree() {
    let ex = tree(2);
    let reports = ex.path().join("reports");
    run_shards(&ex, 3, ex.path().join("c").to_str().unwrap(), &reports);
    let p = ex.path().join("llm-scratch/v1-copy0/release.yaml");
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("namespace: ai-lab"));
    std::fs::write(&p, text.replacen("namespace: ai-lab", "namespace: ai-lbb", 1)).unwrap();
    let third = reports.join("shard-2.json");
    let out = audit(&ex, &["--shard", "2/3", "--cache", "c", "--write-report", third.to_str().unwrap()]);
    assert!(out.code <= 1, "{}\n{}", out.stdout, out.stderr);
    let merged = run_in(ex.path(), &["report", "merge", "--format", "json", "reports/"], &[]);
    assert_eq!(merged.code, 1, "{}", merged.stdout);
    assert!(merged.diag("BG602")["message"].as_str().unwrap().contains("different trees"), "{}", merged.stdout);
}

/// `report merge` reads the shard reports as streams and prints what it
/// always printed, in each format: the human and Markdown forms name every
/// bundle once and end (or start) with the verdict; stale and missing
/// shards are still refused.
#[test]
fn the_streamed_merge_prints_every_format_and_refuses_stale_shards() {
    let ex = tree(3);
    let reports = ex.path().join("reports");
    run_shards(&ex, 2, ex.path().join("c").to_str().unwrap(), &reports);
    let json = run_in(ex.path(), &["report", "merge", "--format", "json", "reports/"], &[]);
    assert_eq!(json.code, 0, "{}\n{}", json.stdout, json.stderr);
    let j = json.json();
    let targets: Vec<&str> = j["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "audit")
        .map(|s| s["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets.len(), 5);
    assert!(targets.windows(2).all(|w| w[0] <= w[1]), "ordered by target: {targets:?}");
    let human = run_in(ex.path(), &["report", "merge", "--format", "human", "reports/"], &[]);
    assert_eq!(human.code, 0);
    assert!(human.stdout.ends_with("audit: PASS\n"), "{}", human.stdout);
    for t in &targets {
        assert_eq!(human.stdout.matches(&format!(" {t} ")).count(), 1, "{t}: {}", human.stdout);
    }
    let md = run_in(ex.path(), &["report", "merge", "--format", "markdown", "reports/"], &[]);
    assert!(md.stdout.starts_with("### bundlegate audit: ✅ PASS\n\n"), "{}", md.stdout);
    let sarif = run_in(ex.path(), &["report", "merge", "--format", "sarif", "reports/"], &[]);
    let s: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    assert_eq!(s["version"], "2.1.0");
    // Stale: the shards finished just now, so a max age of a second is
    // passed only once they are older than that.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let stale = run_in(ex.path(), &["report", "merge", "--format", "json", "--max-age", "1s", "reports/"], &[]);
    assert_eq!(stale.code, 1, "{}", stale.stdout);
    assert!(stale.diag("BG602")["message"].as_str().unwrap().contains("longer ago than --max-age"), "{}", stale.stdout);
    let fresh = run_in(ex.path(), &["report", "merge", "--format", "json", "--max-age", "1h", "reports/"], &[]);
    assert_eq!(fresh.code, 0, "{}", fresh.stdout);
}
