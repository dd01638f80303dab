//! `bundlegate canary` against a real Prometheus scraping an exporter this
//! test serves, plus a stand-in model endpoint for the golden set.
//! Codes covered: BG301 (regression), BG302 (too few samples), BG303 (no
//! data), BG304 (truncated golden answer).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::*;

// ---------------------------------------------------------------------------
// Exporter: candidate/baseline series whose counters grow with elapsed time.

const LE: [f64; 9] = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 2.0, 5.0];
/// Fraction of requests per latency bucket (last entry = above 5 s).
const FAST: [f64; 10] = [0.10, 0.30, 0.30, 0.15, 0.10, 0.04, 0.01, 0.0, 0.0, 0.0];
const SLOW: [f64; 10] = [0.0, 0.02, 0.08, 0.15, 0.25, 0.25, 0.15, 0.10, 0.0, 0.0];

#[derive(Clone, Copy)]
struct Phase {
    /// Seconds after exporter start when this phase begins.
    from: f64,
    rps: f64,
    errors: f64,
    latency: [f64; 10],
    gpu_mib: f64,
}

#[derive(Clone)]
struct Arm {
    version: &'static str,
    phases: Vec<Phase>,
}

impl Arm {
    fn steady(version: &'static str, rps: f64, errors: f64, latency: [f64; 10]) -> Arm {
        Arm { version, phases: vec![Phase { from: 0.0, rps, errors, latency, gpu_mib: 10_000.0 }] }
    }

    /// (requests, errors, per-bucket counts) accumulated up to `t`.
    fn totals(&self, t: f64) -> (f64, f64, [f64; 10]) {
        let (mut req, mut err, mut bins) = (0.0, 0.0, [0.0; 10]);
        for (i, p) in self.phases.iter().enumerate() {
            let end = self.phases.get(i + 1).map(|n| n.from).unwrap_or(f64::INFINITY).min(t);
            let dur = (end - p.from).max(0.0);
            let n = p.rps * dur;
            req += n;
            err += n * p.errors;
            for (b, f) in bins.iter_mut().zip(p.latency) {
                *b += n * f;
            }
        }
        (req, err, bins)
    }

    fn phase_at(&self, t: f64) -> (usize, Phase) {
        let i = self.phases.iter().rposition(|p| p.from <= t).unwrap_or(0);
        (i, self.phases[i])
    }

    fn metrics(&self, t: f64, out: &mut String) {
        use std::fmt::Write as _;
        let v = self.version;
        let (req, err, bins) = self.totals(t);
        let _ = writeln!(out, "bundlegate_requests_total{{version=\"{v}\",code=\"200\"}} {}", req - err);
        let _ = writeln!(out, "bundlegate_requests_total{{version=\"{v}\",code=\"500\"}} {err}");
        let mut cum = 0.0;
        for (le, b) in LE.iter().zip(bins) {
            cum += b;
            let _ = writeln!(out, "bundlegate_request_duration_seconds_bucket{{version=\"{v}\",le=\"{le}\"}} {cum}");
        }
        let _ = writeln!(out, "bundlegate_request_duration_seconds_bucket{{version=\"{v}\",le=\"+Inf\"}} {req}");
        let _ = writeln!(out, "bundlegate_request_duration_seconds_count{{version=\"{v}\"}} {req}");
        // A small sawtooth so the memory samples are not all tied.
        let (_, p) = self.phase_at(t);
        let _ = writeln!(out, "DCGM_FI_DEV_FB_USED{{version=\"{v}\",gpu=\"0\"}} {}", p.gpu_mib + (t as u64 % 3) as f64 * 50.0);
    }
}

struct Exporter {
    port: u16,
}

fn serve_exporter(arms: Vec<Arm>) -> Exporter {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let start = Instant::now();
    let arms = Arc::new(arms);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let _ = read_request(&mut c);
            let t = start.elapsed().as_secs_f64();
            let mut body = String::new();
            // Phase of the first arm: the test waits on it to know which
            // windows Prometheus has filled.
            let phase = arms.first().map(|a| a.phase_at(t).0 + 1).unwrap_or(1);
            body.push_str(&format!("bundlegate_test_phase {phase}\n"));
            for a in arms.iter() {
                a.metrics(t, &mut body);
            }
            let _ =
                write!(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    Exporter { port }
}

/// Read one HTTP request; returns (request line, body).
fn read_request(c: &mut TcpStream) -> std::io::Result<(String, String)> {
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut r = BufReader::new(c.try_clone()?);
    let mut line = String::new();
    r.read_line(&mut line)?;
    let mut len = 0usize;
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 || h == "\r\n" || h == "\n" {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    Ok((line, String::from_utf8_lossy(&body).into_owned()))
}

// ---------------------------------------------------------------------------
// A real Prometheus, one per test (own port, own TSDB dir), killed on drop.

struct Prometheus {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn prometheus_binary() -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join("prometheus")).find(|p| p.is_file()))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// None only when the binary is absent and BUNDLEGATE_SKIP_SERVERS is set.
fn start_prometheus(exporter: &Exporter) -> Option<Prometheus> {
    let Some(bin) = prometheus_binary() else {
        if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() {
            eprintln!("skipping: `prometheus` not on PATH and BUNDLEGATE_SKIP_SERVERS is set");
            return None;
        }
        panic!("`prometheus` is not on PATH: install it (`apt-get install --no-install-recommends prometheus`) or set BUNDLEGATE_SKIP_SERVERS=1 to skip server tests");
    };
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: canary\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n",
            exporter.port
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start prometheus");
    let p = Prometheus { child, port, _dir: dir };
    p.wait_for(|| http_get(port, "/-/ready").map(|(code, _)| code == 200).unwrap_or(false), "Prometheus ready");
    Some(p)
}

fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut c = TcpStream::connect(("127.0.0.1", port))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut s = String::new();
    c.read_to_string(&mut s)?;
    let code = s.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = s.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((code, body))
}

impl Prometheus {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// First value of an instant query, if any.
    fn value(&self, q: &str) -> Option<f64> {
        let path = format!("/api/v1/query?{}", url::form_urlencoded::Serializer::new(String::new()).append_pair("query", q).finish());
        let (_, body) = http_get(self.port, &path).ok()?;
        let v: Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    }

    /// Poll (not sleep blindly) until `ok`, or fail after 60 s.
    fn wait_for(&self, mut ok: impl FnMut() -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !ok() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Until the last `secs` seconds hold at least `secs - 1` scrapes.
    fn wait_window(&self, secs: u64) {
        self.wait_for(
            || self.value(&format!("count_over_time(bundlegate_test_phase[{secs}s])")).is_some_and(|n| n >= (secs - 1) as f64),
            "samples to fill the window",
        );
    }
}

// ---------------------------------------------------------------------------
// Stand-in model endpoint (OpenAI-compatible chat completions).

fn serve_model(truncate_json: bool) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let Ok((line, body)) = read_request(&mut c) else { continue };
            let req: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
            let prompt = req["messages"][0]["content"].as_str().unwrap_or_default();
            let (content, finish) = if !line.contains("/v1/chat/completions") || req["model"] != "llm-scratch" {
                ("wrong path or no model".to_string(), "error")
            } else if prompt.contains("JSON") {
                if truncate_json {
                    ("{\"ok\": tr".to_string(), "length")
                } else {
                    ("{\"ok\": true}".to_string(), "stop")
                }
            } else {
                ("hi".to_string(), "stop")
            };
            let resp =
                serde_json::json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}]}).to_string();
            let _ = write!(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{resp}", resp.len());
        }
    });
    format!("http://127.0.0.1:{port}")
}

// ---------------------------------------------------------------------------

/// The example with its rollback digest filled in, so the rollback target
/// can verify.
fn example() -> Example {
    let ex = Example::new();
    let d = ex.run(&["digest", "--format", "json", ex.v1().to_str().unwrap()]).json();
    let digest = d["steps"][0]["data"]["releaseDigest"].as_str().unwrap().to_string();
    ex.edit_v2(|v| *at(v, "spec.rollback.releaseDigest") = digest.into());
    ex
}

fn canary(ex: &Example, p: &Prometheus, window: &str, extra: &[&str]) -> Out {
    let v2 = ex.v2();
    let url = p.url();
    let mut args = vec!["canary", "--format", "json", v2.to_str().unwrap(), "--prometheus", url.as_str(), "--window", window];
    args.extend_from_slice(extra);
    ex.run(&args)
}

fn step(out: &Out) -> Value {
    out.json()["steps"][0].clone()
}

fn gate<'a>(s: &'a Value, metric: &str) -> &'a Value {
    s["data"]["gates"].as_array().unwrap().iter().find(|g| g["metric"] == metric).unwrap_or_else(|| panic!("no gate {metric} in {s}"))
}

#[test]
fn clear_regression_fails_and_rolls_back_only_to_a_verified_target() {
    let exp = serve_exporter(vec![Arm::steady("v2", 500.0, 0.08, SLOW), Arm::steady("v1", 500.0, 0.01, FAST)]);
    let Some(p) = start_prometheus(&exp) else { return };
    p.wait_window(8);
    let ex = example();
    let out = canary(&ex, &p, "8s", &[]);
    let s = step(&out);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(s["verdict"], "fail", "{}", out.stdout);
    let d = out.diag("BG301");
    assert!(d["message"].as_str().unwrap().contains("gate `error_rate`: candidate exceeds"), "{d}");
    assert!(out.codes().iter().filter(|c| *c == "BG301").count() >= 2, "{:?}", out.codes());
    assert_eq!(gate(&s, "error_rate")["verdict"], "fail");
    assert_eq!(gate(&s, "p95_latency_seconds")["verdict"], "fail");
    assert!(gate(&s, "error_rate")["comparison"]["pValue"].as_f64().unwrap() < 1e-6);
    assert_eq!(gate(&s, "p95_latency_seconds")["comparison"]["method"], "Mann-Whitney U");
    assert_eq!(s["data"]["action"], "rollback", "{}", s["summary"]);
    assert_eq!(s["data"]["rollbackTarget"]["status"], "verified");
    assert!(s["data"]["precondition"].as_str().unwrap().contains("verified"));
    assert!(!s["data"]["watchNext"].as_str().unwrap().is_empty());
    assert!(s["summary"].as_str().unwrap().contains("Action: rollback"));

    // The same evidence with a broken previous release: degrade, not rollback.
    std::fs::remove_file(ex.store("v1").join("tokenizer.json")).unwrap();
    let out = canary(&ex, &p, "8s", &[]);
    let s = step(&out);
    assert_eq!(s["data"]["action"], "degrade", "{}", s["summary"]);
    assert!(s["data"]["precondition"].as_str().unwrap().contains("not usable"), "{}", s["data"]["precondition"]);

    // Markdown reads as a PR comment: one table per gate with the columns.
    let md = ex.run(&["canary", "--format", "markdown", ex.v2().to_str().unwrap(), "--prometheus", &p.url(), "--window", "8s"]).stdout;
    assert!(md.contains("| metric | baseline | candidate | limit | p-value | samples (cand / base) | needed per side | verdict |"), "{md}");
    assert!(md.contains("**gate error_rate — FAIL"), "{md}");
}

#[test]
fn clear_pass_with_enough_samples_and_golden_set() {
    // ~200k requests per side in 8 s: above the 128,470 needed to see +10% on 1%.
    let exp = serve_exporter(vec![Arm::steady("v2", 25_000.0, 0.01, FAST), Arm::steady("v1", 25_000.0, 0.01, FAST)]);
    let Some(p) = start_prometheus(&exp) else { return };
    p.wait_window(8);
    let ex = example();
    let endpoint = serve_model(false);
    let out = canary(&ex, &p, "8s", &["--endpoint", &endpoint]);
    let s = step(&out);
    assert_eq!(s["verdict"], "pass", "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.code, 0);
    assert!(s["diagnostics"].as_array().unwrap().is_empty());
    let e = gate(&s, "error_rate");
    assert_eq!(e["needed"], 128_470);
    assert!(e["candidateSamples"].as_u64().unwrap() >= 128_470);
    assert_eq!(s["data"]["golden"]["passed"], 2);
    assert_eq!(s["data"]["action"], "promote");
    assert!(s["summary"].as_str().unwrap().contains("golden set: 2/2 passed"));
}

#[test]
fn too_few_samples_is_inconclusive_with_time_needed() {
    let exp = serve_exporter(vec![Arm::steady("v2", 1.0, 0.0, FAST), Arm::steady("v1", 1.0, 0.0, FAST)]);
    let Some(p) = start_prometheus(&exp) else { return };
    p.wait_window(5);
    let ex = example();
    let out = canary(&ex, &p, "5s", &[]);
    let s = step(&out);
    assert_eq!(s["verdict"], "inconclusive", "{}", out.stdout);
    assert_eq!(out.code, 1);
    let d = out.diag("BG302");
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("minSamples 200") && msg.contains("more samples per side") && msg.contains("more minutes"), "{msg}");
    assert!(!out.codes().contains(&"BG301".to_string()));
    let g = gate(&s, "error_rate");
    assert!(g["moreSamples"].as_u64().unwrap() > 150, "{g}");
    assert!(g["moreMinutes"].as_f64().unwrap() > 1.0, "{g}");
    assert_eq!(s["data"]["action"], "hold");
    assert!(s["data"]["precondition"].as_str().unwrap().contains("more samples"));
}

#[test]
fn no_data_for_the_candidate_is_never_pass() {
    let exp = serve_exporter(vec![Arm::steady("v1", 500.0, 0.01, FAST)]);
    let Some(p) = start_prometheus(&exp) else { return };
    p.wait_window(5);
    let ex = example();
    let out = canary(&ex, &p, "5s", &[]);
    let s = step(&out);
    assert_eq!(s["verdict"], "inconclusive", "{}", out.stdout);
    assert_eq!(out.code, 1);
    let codes = out.codes();
    assert_eq!(codes.iter().filter(|c| *c == "BG303").count(), 3, "{codes:?}");
    assert!(out.diag("BG303")["message"].as_str().unwrap().contains("no samples for candidate"));
    assert_eq!(s["data"]["action"], "hold");
}

#[test]
fn load_driven_slowdown_on_both_throttles_instead_of_rolling_back() {
    // Both versions: 200 rps fast, then from t=8 s 800 rps slow.
    let load = |v| Arm {
        version: v,
        phases: vec![
            Phase { from: 0.0, rps: 200.0, errors: 0.01, latency: FAST, gpu_mib: 10_000.0 },
            Phase { from: 8.0, rps: 800.0, errors: 0.01, latency: SLOW, gpu_mib: 10_000.0 },
        ],
    };
    let exp = serve_exporter(vec![load("v2"), load("v1")]);
    let Some(p) = start_prometheus(&exp) else { return };
    // The current window all under load, the one before mostly not.
    p.wait_for(|| p.value("min_over_time(bundlegate_test_phase[6s])") == Some(2.0), "the load phase to fill the window");
    let ex = example();
    ex.edit_v2(|v| *at(v, "spec.canary.gates.1") = yaml("{metric: p95_latency_seconds, maxAbsolute: 0.5, maxRelativeIncrease: 0.2}"));
    let out = canary(&ex, &p, "6s", &[]);
    let s = step(&out);
    assert_eq!(s["verdict"], "fail", "{}", out.stdout);
    let g = gate(&s, "p95_latency_seconds");
    assert_eq!(g["verdict"], "fail", "{g}");
    // Same slowdown on the baseline: no version difference.
    assert!(g["comparison"]["pValue"].as_f64().unwrap() > 0.05, "{g}");
    assert!(s["data"]["trend"]["baselineRate"].as_f64().unwrap() >= 1.5, "{}", s["data"]["trend"]);
    assert_eq!(s["data"]["action"], "throttle", "{}", s["summary"]);
    assert_eq!(s["data"]["rollbackTarget"]["status"], "not-checked");
    assert!(s["data"]["precondition"].as_str().unwrap().contains("adds no capacity"));
}

#[test]
fn truncated_golden_json_is_bg304_with_the_sample_kept() {
    let ex = example();
    let endpoint = serve_model(true);
    let out = ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap(), "--endpoint", &endpoint]);
    let s = step(&out);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert_eq!(s["verdict"], "fail");
    let d = out.diag("BG304");
    let msg = d["message"].as_str().unwrap();
    assert!(msg.contains("json-answer") && msg.contains("not valid JSON") && msg.contains("`length`"), "{msg}");
    assert!(d["evidence"][0].as_str().unwrap().contains("{\"ok\": tr"), "{d}");
    assert_eq!(out.codes(), vec!["BG304"], "the well-formed sample passes");
    let detail = &s["details"][0];
    assert!(detail["title"].as_str().unwrap().contains("json-answer"));
    assert!(detail["body"].as_str().unwrap().contains("\"finishReason\": \"length\""), "{detail}");
    assert!(s["summary"].as_str().unwrap().contains("no --prometheus"));
}

#[test]
fn without_prometheus_nothing_is_claimed() {
    let ex = example();
    let out = ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap()]);
    let s = step(&out);
    assert_eq!(s["verdict"], "not-run");
    assert_eq!(out.json()["verdict"], "inconclusive");
    assert_eq!(out.code, 1);
    let summary = s["summary"].as_str().unwrap();
    assert!(summary.contains("no --prometheus") && summary.contains("not run: no --endpoint"), "{summary}");
}

#[test]
fn unreachable_prometheus_is_an_error_not_a_pass() {
    let ex = example();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let out = ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap(), "--prometheus", &url]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    let s = step(&out);
    assert_eq!(s["verdict"], "error");
    assert!(s["summary"].as_str().unwrap().contains("unreachable"));
}

// ---- Prometheus faults (docs/reliability.md) --------------------------------

fn canary_against(reply: crate::support::http::Reply) -> Out {
    use crate::support::http::{Req, Server};
    let server = Server::start_replies(0, std::sync::Arc::new(move |_r: &Req| reply.clone()));
    let ex = example();
    let url = server.url();
    ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap(), "--prometheus", &url, "--window", "5m"])
}

#[test]
fn prometheus_500_with_an_html_page_is_an_error_not_data() {
    let out = canary_against(crate::support::http::Reply::Raw {
        status: 500,
        headers: vec![("content-type".into(), "text/html".into())],
        body: b"<html><body><h1>500 Internal Server Error</h1>upstream prometheus-k8s unavailable</body></html>".to_vec(),
    });
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["verdict"], "error");
    let summary = s["summary"].as_str().unwrap();
    assert!(summary.contains("HTTP 500"), "{summary}");
    assert_ne!(s["data"]["action"], "promote");
}

#[test]
fn prometheus_truncated_json_is_an_error_not_data() {
    let out = canary_against(crate::support::http::Reply::Truncated {
        claimed: 2048,
        body: br#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{"version":"v2"},"value":[1767261600,"0.0"#.to_vec(),
    });
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(step(&out)["verdict"], "error");
}

#[test]
fn prometheus_rejecting_the_query_is_an_error_quoting_it() {
    let out = canary_against(crate::support::http::Reply::Json(
        400,
        json!({"status": "error", "errorType": "bad_data", "error": "invalid parameter \"query\": 1:14: parse error: unexpected identifier"}),
    ));
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let s = step(&out);
    assert_eq!(s["verdict"], "error");
    assert!(s["summary"].as_str().unwrap().contains("bad_data"), "{s}");
}
