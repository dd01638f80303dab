//! `bundlegate canary` against a real Prometheus scraping an exporter this
//! test serves, plus a stand-in model endpoint for the golden set.
//! Codes covered: BG301 (regression), BG302 (too few samples), BG303 (no
//! data), BG304 (truncated golden answer).
//!
//! The golden set's file through `canary`: a request line with a key written
//! twice is refused naming the file and the line, and never quoted (the
//! parser's own property is `props::golden_line_with_a_duplicate_key_anywhere_is_refused_naming_its_line`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
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
        let _ = writeln!(
            out,
            "DCGM_FI_DEV_FB_USED{{version=\"{v}\",gpu=\"0\"}} {}",
            p.gpu_mib + (t as u64 % 3) as f64 * 50.0
        );
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
    /// Stopped with its process group when the server drops.
    _child: crate::support::server::Server,
    port: u16,
    _dir: tempfile::TempDir,
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
    start_prometheus_with(
        bin,
        &format!("  - job_name: canary\n    static_configs:\n      - targets: ['127.0.0.1:{}']\n", exporter.port),
    )
}

/// A Prometheus with these `scrape_configs` entries (1 s scrapes and rule
/// evaluations, so subqueries have one point per second).
fn start_prometheus_with(bin: PathBuf, scrape_configs: &str) -> Option<Prometheus> {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n{scrape_configs}"),
    )
    .unwrap();
    let port = free_port();
    let child = crate::support::server::spawn(
        Command::new(bin)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!("--storage.tsdb.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let p = Prometheus { _child: child, port, _dir: dir };
    p.wait_for(|| http_get(port, "/-/ready").map(|(code, _)| code == 200).unwrap_or(false), "Prometheus ready");
    Some(p)
}

fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    crate::support::http::get(port, path, "")
}

impl Prometheus {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// First value of an instant query, if any.
    fn value(&self, q: &str) -> Option<f64> {
        let path = format!(
            "/api/v1/query?{}",
            url::form_urlencoded::Serializer::new(String::new()).append_pair("query", q).finish()
        );
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
            || {
                self.value(&format!("count_over_time(bundlegate_test_phase[{secs}s])"))
                    .is_some_and(|n| n >= (secs - 1) as f64)
            },
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
    let mut args =
        vec!["canary", "--format", "json", v2.to_str().unwrap(), "--prometheus", url.as_str(), "--window", window];
    args.extend_from_slice(extra);
    ex.run(&args)
}

fn step(out: &Out) -> Value {
    out.json()["steps"][0].clone()
}

fn gate<'a>(s: &'a Value, metric: &str) -> &'a Value {
    s["data"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metric"] == metric)
        .unwrap_or_else(|| panic!("no gate {metric} in {s}"))
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
    let md = ex
        .run(&["canary", "--format", "markdown", ex.v2().to_str().unwrap(), "--prometheus", &p.url(), "--window", "8s"])
        .stdout;
    assert!(
        md.contains(
            "| metric | baseline | candidate | limit | p-value | samples (cand / base) | needed per side | verdict |"
        ),
        "{md}"
    );
    assert!(md.contains("**gate error_rate — FAIL"), "{md}");
    // Each gate's chart beside its table, and Mermaid parses every one.
    assert!(md.contains("title \"canary gate error_rate: candidate (bars) vs baseline (line)"), "{md}");
    if let Some(m) = crate::mermaid::mermaid_modules() {
        assert!(crate::mermaid::parse_all(&m, &md).len() >= 2, "{md}");
    }
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
    assert!(
        msg.contains("minSamples 200") && msg.contains("more samples per side") && msg.contains("more minutes"),
        "{msg}"
    );
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
    p.wait_for(
        || p.value("min_over_time(bundlegate_test_phase[6s])") == Some(2.0),
        "the load phase to fill the window",
    );
    let ex = example();
    ex.edit_v2(|v| {
        *at(v, "spec.canary.gates.1") =
            yaml("{metric: p95_latency_seconds, maxAbsolute: 0.5, maxRelativeIncrease: 0.2}")
    });
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

/// The paired gate (`--baseline-endpoint`): the golden set goes to both
/// arms and an exact McNemar test on the prompts one arm passes and the
/// other fails decides. Eight prompts the candidate truncates and the
/// baseline answers: worse (BG301, p = 1/256); within a margin of eight:
/// not worse; prompts both arms fail: not the candidate's (no BG304); one
/// discordant prompt: undecided (BG302), saying it takes at least five.
#[test]
fn paired_golden_gate_judges_the_candidate_against_the_baseline() {
    let ex = example();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    let line = |name: &str, prompt: &str| {
        serde_json::json!({"name": name, "api": "openai-chat",
            "request": {"messages": [{"role": "user", "content": prompt}], "max_tokens": 64},
            "expect": {"finishReason": "stop", "minChars": 1}})
        .to_string()
    };
    let write = |file: &str, json_prompts: usize| {
        let mut lines: Vec<String> =
            (0..json_prompts).map(|i| line(&format!("json-{i}"), "Return {\"ok\": true} as JSON.")).collect();
        lines.push(line("hi-1", "Say hi."));
        lines.push(line("hi-2", "Say hi again."));
        std::fs::write(dir.join(file), lines.join("\n") + "\n").unwrap();
    };
    write("paired.jsonl", 8);
    write("one.jsonl", 1);
    ex.edit_v2(|v| *at(v, "spec.canary.golden") = "paired.jsonl".into());
    let (bad, good) = (serve_model(true), serve_model(false));
    let run = |cand: &str, base: &str, extra: &[&str]| {
        let v2 = ex.v2();
        let mut args =
            vec!["canary", "--format", "json", v2.to_str().unwrap(), "--endpoint", cand, "--baseline-endpoint", base];
        args.extend_from_slice(extra);
        ex.run(&args)
    };

    let out = run(&bad, &good, &[]);
    let s = step(&out);
    assert_eq!((out.code, s["verdict"].as_str()), (1, Some("fail")), "{}", out.stdout);
    assert_eq!(out.codes(), vec!["BG301"], "{}", out.stdout);
    let msg = out.diag("BG301")["message"].as_str().unwrap().to_string();
    assert!(
        msg.contains("failed 8 golden prompt(s) the baseline passed and passed 0 the baseline failed, of 10"),
        "{msg}"
    );
    let paired = &s["data"]["golden"]["paired"];
    assert_eq!((paired["candidateOnly"].as_u64(), paired["verdict"].as_str()), (Some(8), Some("worse")), "{paired}");
    assert!((paired["pValue"].as_f64().unwrap() - 1.0 / 256.0).abs() < 1e-12, "{paired}");
    assert!(s["details"].as_array().unwrap().iter().any(|d| d["title"].as_str().unwrap().contains("json-3")));

    let out = run(&bad, &good, &["--golden-margin", "8"]);
    assert!(out.codes().is_empty(), "{}", out.stdout);
    assert_eq!(step(&out)["data"]["golden"]["paired"]["verdict"], "not-worse");

    let out = run(&bad, &bad, &[]);
    assert!(out.codes().is_empty(), "prompts both arms fail are not the candidate's: {}", out.stdout);

    ex.edit_v2(|v| *at(v, "spec.canary.golden") = "one.jsonl".into());
    let out = run(&bad, &good, &[]);
    let s = step(&out);
    assert_eq!((out.code, s["verdict"].as_str()), (1, Some("inconclusive")), "{}", out.stdout);
    let msg = out.diag("BG302")["message"].as_str().unwrap().to_string();
    assert!(msg.contains("it takes at least 5"), "{msg}");

    // A baseline that does not answer: the golden set could not run, ERROR.
    let out = run(&good, "http://127.0.0.1:9", &[]);
    assert_eq!((out.code, step(&out)["verdict"].as_str()), (2, Some("error")), "{}", out.stdout);
}

/// A model endpoint that answers a golden request with 6 MiB: read up to
/// its limit, then the golden set could not run (ERROR), never a FAIL of
/// the release on an answer that was not read, and never memory without end.
#[test]
fn oversized_golden_answer_is_an_error_not_a_verdict() {
    use crate::support::http::{Reply, Req, Server};
    let body = vec![b'a'; 6 << 20];
    let server = Server::start_replies(
        0,
        std::sync::Arc::new(move |_r: &Req| Reply::Raw {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.clone(),
        }),
    );
    let ex = example();
    let out = ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap(), "--endpoint", &server.url()]);
    let s = step(&out);
    assert_eq!(s["verdict"], "error", "{}", out.stdout);
    assert_eq!(out.code, 2);
    assert!(out.codes().is_empty(), "no finding on an answer that was not read: {:?}", out.codes());
    let summary = s["summary"].as_str().unwrap();
    assert!(summary.contains("larger than 4 MiB"), "{summary}");
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
        body: b"<html><body><h1>500 Internal Server Error</h1>upstream prometheus-k8s unavailable</body></html>"
            .to_vec(),
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

// ---- metric providers: each stack's real exposition, one Prometheus ---------
//
// One exporter serves one target per arm (`/arm/<i>`); Prometheus attaches
// `bundlegate_dev_release_version` as a target label, the way the usual
// Kubernetes service-discovery labelmap turns the pod label bundlegate renders
// into a series label. Every target exposes vLLM (V1 engine), Knative
// queue-proxy, Istio and DCGM metrics at once, with the names, label sets and
// histogram buckets of those stacks, so one scrape covers every provider.

/// vLLM V1 bucket bounds (vllm/v1/metrics/loggers.py).
const VLLM_TTFT_LE: [f64; 22] = [
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
    160.0, 640.0, 2560.0,
];

const VLLM_ITL_LE: [f64; 19] =
    [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];

const VLLM_REQUEST_LE: [f64; 21] = [
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0,
    1920.0, 7680.0,
];

/// Knative Serving ≤ 1.18 queue-proxy request latency distribution (ms).
const KNATIVE_LE: [f64; 26] = [
    5.0, 10.0, 20.0, 40.0, 60.0, 80.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0, 400.0, 450.0, 500.0, 600.0, 700.0,
    800.0, 900.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 50000.0, 100000.0,
];

/// Knative Serving 1.19+ queue-proxy `kn.serving.invocation.duration` bounds
/// (seconds; knative/serving pkg/queue/request_metric.go).
const KNATIVE_OTEL_LE: [f64; 14] = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0];

/// Istio's default request duration buckets (ms).
const ISTIO_LE: [f64; 19] = [
    0.5, 1.0, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 2500.0, 5000.0, 10000.0, 30000.0, 60000.0, 300000.0,
    600000.0, 1800000.0, 3600000.0,
];

/// Which Knative Serving queue-proxy the arm runs.
#[derive(Clone, Copy, PartialEq)]
enum Knative {
    /// ≤ 1.18 (OpenCensus): `revision_app_request_count`, `revision_app_request_latencies` in ms.
    OpenCensus,
    /// 1.19+ (OpenTelemetry, knative/serving#16290): `kn_serving_invocation_duration_seconds`.
    OpenTelemetry,
}

#[derive(Clone, Copy)]
struct Stack {
    rps: f64,
    /// Fraction of requests that fail: vLLM finishes them with
    /// `finished_reason="error"` (an engine error, HTTP 500); Knative and
    /// Istio see a 5xx.
    errors: f64,
    /// Every latency multiplied by this (1.3 = 30% worse).
    slower: f64,
    /// Generated tokens per second multiplied by this (0.7 = 30% lower).
    tokens: f64,
    gpu_mib: f64,
    /// Export `vllm:time_per_output_token_seconds` (older releases) instead
    /// of `vllm:inter_token_latency_seconds`.
    old_names: bool,
    knative: Knative,
}

const NORMAL: Stack = Stack {
    rps: 500.0,
    errors: 0.01,
    slower: 1.0,
    tokens: 1.0,
    gpu_mib: 20_000.0,
    old_names: false,
    knative: Knative::OpenCensus,
};

/// Cumulative count per bound for `n` observations spread evenly over
/// [0.9, 1.1] × `typical`.
fn cumulative(le: &[f64], n: f64, typical: f64) -> Vec<f64> {
    le.iter().map(|b| n * ((b / typical - 0.9) / 0.2).clamp(0.0, 1.0)).collect()
}

/// One classic histogram made of `parts`: (observations, typical value).
fn histogram_lines(out: &mut String, name: &str, labels: &str, le: &[f64], parts: &[(f64, f64)]) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "# TYPE {name} histogram");
    let mut cum = vec![0.0; le.len()];
    for (n, typical) in parts {
        for (c, x) in cum.iter_mut().zip(cumulative(le, *n, *typical)) {
            *c += x;
        }
    }
    let n: f64 = parts.iter().map(|p| p.0).sum();
    for (b, c) in le.iter().zip(cum) {
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{b}\"}} {c}");
    }
    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {n}");
    let _ = writeln!(out, "{name}_sum{{{labels}}} {}", parts.iter().map(|(n, t)| n * t).sum::<f64>());
    let _ = writeln!(out, "{name}_count{{{labels}}} {n}");
}

/// The requests each phase served up to `t`, and the current phase (1-based).
fn phased_exposition(version: &str, phases: &[(f64, f64, Stack)], t: f64) -> String {
    let parts: Vec<(f64, Stack)> = phases
        .iter()
        .enumerate()
        .map(|(i, (from, rps, s))| {
            let end = phases.get(i + 1).map(|n| n.0).unwrap_or(f64::INFINITY).min(t);
            (rps * (end - from).max(0.0), *s)
        })
        .collect();
    let now = phases.iter().rposition(|p| p.0 <= t).unwrap_or(0);
    exposition(&parts[..=now], version, t, now + 1)
}

/// Every stack's series for requests served in `parts` (requests, how they
/// were served); gauges and naming follow the last part.
fn exposition(parts: &[(f64, Stack)], version: &str, t: f64, phase: usize) -> String {
    use std::fmt::Write as _;
    let mut o = format!("bundlegate_test_phase {phase}\n");
    let now = parts.last().map(|p| p.1).unwrap_or(NORMAL);
    let hist = |typical: f64, per_request: f64, ok_only: bool| -> Vec<(f64, f64)> {
        parts
            .iter()
            .map(|(n, s)| (n * per_request * if ok_only { 1.0 - s.errors } else { 1.0 }, typical * s.slower))
            .collect()
    };
    let sum = |f: &dyn Fn(&Stack) -> f64| parts.iter().map(|(n, s)| n * f(s)).sum::<f64>();
    // vLLM V1: labels engine and model_name on every series.
    let v = "engine=\"0\",model_name=\"llm-scratch\"";
    histogram_lines(&mut o, "vllm:time_to_first_token_seconds", v, &VLLM_TTFT_LE, &hist(0.06, 1.0, false));
    let itl = if now.old_names { "vllm:time_per_output_token_seconds" } else { "vllm:inter_token_latency_seconds" };
    histogram_lines(&mut o, itl, v, &VLLM_ITL_LE, &hist(0.05, 100.0, false));
    histogram_lines(&mut o, "vllm:e2e_request_latency_seconds", v, &VLLM_REQUEST_LE, &hist(0.2, 1.0, false));
    histogram_lines(&mut o, "vllm:request_queue_time_seconds", v, &VLLM_REQUEST_LE, &hist(0.01, 1.0, false));
    // vLLM declares one series per finish reason. `abort` stays 0: requests
    // the client aborts are never counted (vllm-project/vllm#31503).
    let _ = writeln!(o, "# TYPE vllm:request_success_total counter");
    for (reason, count) in [
        ("stop", sum(&|s| (1.0 - s.errors) * 0.9)),
        ("length", sum(&|s| (1.0 - s.errors) * 0.1)),
        ("abort", 0.0),
        ("error", sum(&|s| s.errors)),
    ] {
        let _ = writeln!(o, "vllm:request_success_total{{{v},finished_reason=\"{reason}\"}} {count}");
    }
    let _ = writeln!(
        o,
        "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{{{v}}} {}",
        sum(&|s| 100.0 * s.tokens)
    );
    let _ = writeln!(
        o,
        "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{{{v}}} {}",
        (t as u64 % 3) as f64
    );
    let _ = writeln!(o, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{{v}}} 0.4{}", t as u64 % 3);
    // Knative queue-proxy (KServe serverless), one generation per arm.
    match now.knative {
        Knative::OpenCensus => {
            let k = format!("configuration_name=\"llm-scratch-predictor\",container_name=\"queue-proxy\",namespace_name=\"ai-lab\",pod_name=\"llm-scratch-predictor-{version}-0\",revision_name=\"llm-scratch-predictor-{version}\",service_name=\"llm-scratch-predictor\"");
            let _ = writeln!(o, "# TYPE revision_app_request_count counter");
            let _ = writeln!(
                o,
                "revision_app_request_count{{{k},response_code=\"200\",response_code_class=\"2xx\"}} {}",
                sum(&|s| 1.0 - s.errors)
            );
            let _ = writeln!(
                o,
                "revision_app_request_count{{{k},response_code=\"503\",response_code_class=\"5xx\"}} {}",
                sum(&|s| s.errors)
            );
            histogram_lines(&mut o, "revision_app_request_latencies", &k, &KNATIVE_LE, &hist(200.0, 1.0, false));
        }
        Knative::OpenTelemetry => {
            // One histogram per status code; its `_count` is the request count.
            let k = "otel_scope_name=\"knative.dev/serving/pkg/queue\",otel_scope_version=\"\"";
            let ok: Vec<(f64, f64)> = hist(0.2, 1.0, true);
            let failed: Vec<(f64, f64)> = parts.iter().map(|(n, s)| (n * s.errors, 0.2 * s.slower)).collect();
            histogram_lines(
                &mut o,
                "kn_serving_invocation_duration_seconds",
                &format!("http_response_status_code=\"200\",{k}"),
                &KNATIVE_OTEL_LE,
                &ok,
            );
            let body = {
                let mut b = String::new();
                histogram_lines(
                    &mut b,
                    "kn_serving_invocation_duration_seconds",
                    &format!("http_response_status_code=\"503\",{k}"),
                    &KNATIVE_OTEL_LE,
                    &failed,
                );
                b
            };
            // One `# TYPE` line per metric family.
            o.push_str(body.split_once('\n').map(|x| x.1).unwrap_or_default());
        }
    }
    // Istio: both proxies report each request; the version label is the
    // workload's own.
    let _ = writeln!(o, "# TYPE istio_requests_total counter");
    for reporter in ["destination", "source"] {
        let i = format!("reporter=\"{reporter}\",source_workload=\"gateway\",destination_workload=\"llm-scratch-predictor\",destination_service=\"llm-scratch.ai-lab.svc.cluster.local\",destination_version=\"{version}\",request_protocol=\"http\",response_flags=\"-\"");
        let _ = writeln!(o, "istio_requests_total{{{i},response_code=\"200\"}} {}", sum(&|s| 1.0 - s.errors));
        let _ = writeln!(o, "istio_requests_total{{{i},response_code=\"503\"}} {}", sum(&|s| s.errors));
        let mut b = String::new();
        histogram_lines(&mut b, "istio_request_duration_milliseconds", &i, &ISTIO_LE, &hist(200.0, 1.0, false));
        o.push_str(if reporter == "destination" { &b } else { b.split_once('\n').map(|x| x.1).unwrap_or_default() });
    }
    // DCGM exporter with pod mapping: MiB and percent.
    let d = format!("gpu=\"0\",UUID=\"GPU-5a4c\",device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"gpu-node-1\",container=\"kserve-container\",namespace=\"ai-lab\",pod=\"llm-scratch-predictor-{version}-0\"");
    let _ = writeln!(
        o,
        "# TYPE DCGM_FI_DEV_FB_USED gauge\nDCGM_FI_DEV_FB_USED{{{d}}} {}",
        now.gpu_mib * now.slower + (t as u64 % 3) as f64 * 50.0
    );
    let _ = writeln!(
        o,
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{{{d}}} {}",
        60.0 * now.slower + (t as u64 % 3) as f64
    );
    o
}

/// Serve every arm on `/arm/<i>`; returns the scrape configs for Prometheus.
fn serve_stacks(arms: Vec<(&'static str, Stack)>) -> String {
    serve_phased(arms.into_iter().map(|(v, s)| (v, vec![(0.0, s.rps, s)])).collect())
}

/// An arm's phases: from `.0` seconds after the first scrape, `.1` requests
/// per second served as `.2`.
type Phases = Vec<(f64, f64, Stack)>;

/// As `serve_stacks`, each arm going through its phases (timed from the
/// first scrape, so Prometheus sees every phase from its start).
fn serve_phased(arms: Vec<(&'static str, Phases)>) -> String {
    serve_labelled(arms, "bundlegate_dev_release_version")
}

/// As `serve_phased`, each arm's target labelled `label` = its name (the
/// series label a pod label becomes under the Kubernetes SD labelmap).
fn serve_labelled(arms: Vec<(&'static str, Phases)>, label: &str) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let start = std::sync::OnceLock::new();
    let mut cfg = String::new();
    for (i, (version, _)) in arms.iter().enumerate() {
        cfg.push_str(&format!(
            "  - job_name: arm{i}\n    metrics_path: /arm/{i}\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n        labels: {{{label}: '{version}'}}\n"
        ));
    }
    let arms = Arc::new(arms);
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let Ok((line, _)) = read_request(&mut c) else { continue };
            let i: Option<usize> =
                line.split_whitespace().nth(1).and_then(|p| p.strip_prefix("/arm/")).and_then(|i| i.parse().ok());
            let t = start.get_or_init(Instant::now).elapsed().as_secs_f64();
            let body =
                i.and_then(|i| arms.get(i)).map(|(v, phases)| phased_exposition(v, phases, t)).unwrap_or_default();
            let _ =
                write!(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        }
    });
    cfg
}

/// The example as a `provider` bundle with these gates, the candidate
/// version renamed so each case selects its own arm by the default label.
fn provider_bundle(ex: &Example, provider: &str, candidate: &str, gates: &str) {
    ex.edit_v2(|v| {
        *at(v, "metadata.version") = candidate.into();
        *at(v, "spec.canary.provider") = provider.into();
        *at(v, "spec.canary.gates") = yaml(gates);
        *at(v, "spec.canary.minSamples") = 200.into();
    });
}

fn verdicts(s: &Value) -> Vec<(String, String)> {
    s["data"]["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["metric"].as_str().unwrap().to_string(), g["verdict"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn providers_read_each_stacks_own_metrics_with_honest_verdicts() {
    let few = Stack { rps: 2.0, ..NORMAL };
    let scfg = serve_stacks(vec![
        ("v1", NORMAL),
        ("v2", NORMAL),
        ("v2-slow", Stack { slower: 1.3, gpu_mib: NORMAL.gpu_mib, ..NORMAL }),
        ("v2-fewer-tokens", Stack { tokens: 0.7, ..NORMAL }),
        ("v2-few", few),
        ("v2-idle", Stack { rps: 0.0, ..NORMAL }),
        ("v2-old-names", Stack { old_names: true, ..NORMAL }),
        ("v2-errors", Stack { errors: 0.08, ..NORMAL }),
        // Knative Serving 1.19+ queue-proxies (OpenTelemetry names, seconds).
        ("v1-otel", Stack { knative: Knative::OpenTelemetry, ..NORMAL }),
        ("v2-otel", Stack { knative: Knative::OpenTelemetry, ..NORMAL }),
        ("v2-otel-slow", Stack { knative: Knative::OpenTelemetry, slower: 1.3, ..NORMAL }),
        ("v2-otel-errors", Stack { knative: Knative::OpenTelemetry, errors: 0.08, ..NORMAL }),
        ("v2-otel-few", Stack { knative: Knative::OpenTelemetry, ..few }),
    ]);
    let Some(bin) = prometheus_binary() else {
        assert!(std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some(), "`prometheus` is not on PATH");
        return;
    };
    let p = start_prometheus_with(bin, &scfg).unwrap();
    p.wait_window(12);
    let ex = example();
    let run_vs = |provider: &str, candidate: &str, gates: &str, extra: &[&str]| {
        provider_bundle(&ex, provider, candidate, gates);
        let out = canary(&ex, &p, "12s", extra);
        let s = step(&out);
        (out, s)
    };
    let run = |provider: &str, candidate: &str, gates: &str| run_vs(provider, candidate, gates, &[]);

    // ---- vllm: TTFT, ITL (either naming generation), errors, throughput ----
    let vllm_gates = "[{metric: ttft_p95_seconds, maxRelativeIncrease: 0.10}, {metric: itl_p95_seconds, maxRelativeIncrease: 0.10}, \
                      {metric: error_rate, maxAbsolute: 0.05}, {metric: output_tokens_per_second, minRelativeDecrease: 0.20}]";
    let (out, s) = run("vllm", "v2", vllm_gates);
    assert_eq!(s["verdict"], "pass", "equal arms: {:?}\n{}", verdicts(&s), gate(&s, "output_tokens_per_second"));
    assert_eq!(out.code, 0);
    assert_eq!(s["data"]["selectors"]["candidate"], "bundlegate_dev_release_version=\"v2\"");
    let tps = gate(&s, "output_tokens_per_second");
    assert!(tps["candidateSamples"].as_u64().unwrap() >= 5, "{tps}");
    // The trend reads vLLM's own request counter.
    assert!(s["data"]["traffic"]["candidateRequests"].as_f64().unwrap() > 1000.0, "{}", s["data"]["traffic"]);

    let (out, s) = run("vllm", "v2-slow", vllm_gates);
    assert_eq!(s["verdict"], "fail", "{:?}", verdicts(&s));
    assert_eq!(gate(&s, "ttft_p95_seconds")["verdict"], "fail", "{}", gate(&s, "ttft_p95_seconds"));
    assert!(gate(&s, "ttft_p95_seconds")["comparison"]["pValue"].as_f64().unwrap() < 1e-6);
    assert_eq!(gate(&s, "output_tokens_per_second")["verdict"], "pass");
    assert!(out.diag("BG301")["message"].as_str().unwrap().contains("ttft_p95_seconds"));

    let (_, s) = run("vllm", "v2-fewer-tokens", vllm_gates);
    let g = gate(&s, "output_tokens_per_second");
    assert_eq!(g["verdict"], "fail", "{g}");
    assert!(g["comparison"]["pValue"].as_f64().unwrap() < 0.05, "{g}");
    let ratio = g["candidate"].as_f64().unwrap() / g["baseline"].as_f64().unwrap();
    assert!((ratio - 0.7).abs() < 0.05, "{ratio}");
    assert_eq!(gate(&s, "ttft_p95_seconds")["verdict"], "pass", "latency is the same");

    let (out, s) = run("vllm", "v2-few", vllm_gates);
    assert_eq!(s["verdict"], "inconclusive", "{:?}", verdicts(&s));
    assert_eq!(out.code, 1);
    for (m, v) in verdicts(&s) {
        assert_eq!(v, "inconclusive", "{m} with 16 requests");
    }
    assert!(
        gate(&s, "output_tokens_per_second")["message"].as_str().unwrap().contains("requests"),
        "{}",
        gate(&s, "output_tokens_per_second")
    );
    assert!(gate(&s, "ttft_p95_seconds")["moreMinutes"].as_f64().unwrap() > 0.0);

    // Idle arm: histogram_quantile answers NaN, never a pass.
    let (_, s) = run("vllm", "v2-idle", vllm_gates);
    assert_eq!(s["verdict"], "inconclusive");
    assert_eq!(gate(&s, "ttft_p95_seconds")["verdict"], "no-data");

    let (_, s) = run("vllm", "v2-absent", vllm_gates);
    assert_eq!(s["verdict"], "inconclusive");
    assert!(verdicts(&s).iter().all(|(_, v)| v == "no-data"), "{:?}", verdicts(&s));

    // Older vLLM naming (time_per_output_token) still answers itl_*.
    let (_, s) = run("vllm", "v2-old-names", "[{metric: itl_p95_seconds, maxRelativeIncrease: 0.10}]");
    assert_eq!(s["verdict"], "pass", "{}", s["data"]["gates"]);

    // Engine errors are what vLLM counts (finished_reason="error").
    let (_, s) = run("vllm", "v2-errors", vllm_gates);
    let e = gate(&s, "error_rate");
    assert_eq!(e["verdict"], "fail", "{e}");
    assert!((e["candidate"].as_f64().unwrap() - 0.08).abs() < 0.005, "{e}");

    // Aborts are not: vLLM declares finished_reason="abort" and leaves it at
    // 0 whatever the clients do, so an abort_rate gate would pass on
    // nothing. It is named NO DATA with the reason, never a pass.
    assert_eq!(
        p.value("sum(vllm:request_success_total{finished_reason=\"abort\",bundlegate_dev_release_version=\"v2\"})"),
        Some(0.0)
    );
    let (out, s) = run("vllm", "v2", "[{metric: abort_rate, maxAbsolute: 0.05}]");
    assert_eq!(s["verdict"], "inconclusive", "{}", s["data"]["gates"]);
    let a = gate(&s, "abort_rate");
    assert_eq!(a["verdict"], "no-data", "{a}");
    assert!(a["message"].as_str().unwrap().contains("vllm-project/vllm#31503"), "{a}");
    assert!(out.diag("BG303")["message"].as_str().unwrap().contains("does not increment it"), "{}", out.stdout);

    // ---- kserve (Knative queue-proxy: ≤ 1.18 in ms, 1.19+ in s) and istio (ms) ----
    let otel_baseline = ["--baseline-selector", "bundlegate_dev_release_version=\"v1-otel\""];
    for (provider, prefix, extra) in
        [("kserve", "v2", &[][..]), ("kserve", "v2-otel", &otel_baseline[..]), ("istio", "v2", &[][..])]
    {
        let case = format!("{provider} {prefix}");
        let gates =
            "[{metric: error_rate, maxAbsolute: 0.05}, {metric: p95_latency_seconds, maxRelativeIncrease: 0.10}]";
        let (_, s) = run_vs(provider, prefix, gates, extra);
        assert_eq!(s["verdict"], "pass", "{case}: {}", s["data"]["gates"]);
        // Milliseconds (or OpenTelemetry seconds) reported as seconds.
        let v = gate(&s, "p95_latency_seconds")["candidate"].as_f64().unwrap();
        assert!((0.18..0.3).contains(&v), "{case}: {v}");
        let e = gate(&s, "error_rate");
        assert!(
            (e["candidate"].as_f64().unwrap() - 0.01).abs() < 0.002 && e["candidateSamples"].as_u64().unwrap() > 1000,
            "{case}: {e}"
        );
        let (_, s) = run_vs(provider, &format!("{prefix}-slow"), gates, extra);
        assert_eq!(gate(&s, "p95_latency_seconds")["verdict"], "fail", "{case}: {}", gate(&s, "p95_latency_seconds"));
        assert!(gate(&s, "p95_latency_seconds")["comparison"]["pValue"].as_f64().unwrap() < 1e-6, "{case}");
        assert_eq!(gate(&s, "error_rate")["verdict"], "pass", "{case}");
        let (_, s) = run_vs(provider, &format!("{prefix}-errors"), gates, extra);
        assert_eq!(gate(&s, "error_rate")["verdict"], "fail", "{case}: {}", gate(&s, "error_rate"));
        let (_, s) = run_vs(provider, &format!("{prefix}-few"), gates, extra);
        assert_eq!(s["verdict"], "inconclusive", "{case}");
        let (_, s) = run_vs(provider, &format!("{prefix}-absent"), gates, extra);
        assert!(verdicts(&s).iter().all(|(_, v)| v == "no-data"), "{case}: {:?}", verdicts(&s));
    }

    // Istio reads the workload's own version label.
    let (_, s) = run("istio", "v2", "[{metric: error_rate, maxAbsolute: 0.05}]");
    assert_eq!(s["data"]["selectors"]["candidate"], "destination_version=\"v2\"");

    // ---- dcgm: GPU memory in MiB → bytes ----
    let gates = "[{metric: gpu_memory_bytes, maxRelativeIncrease: 0.10}]";
    let (_, s) = run("dcgm", "v2", gates);
    assert_eq!(s["verdict"], "pass", "{}", s["data"]["gates"]);
    assert!(gate(&s, "gpu_memory_bytes")["candidate"].as_f64().unwrap() >= 20_000.0 * 1_048_576.0);
    let (_, s) = run("dcgm", "v2-slow", gates);
    assert_eq!(gate(&s, "gpu_memory_bytes")["verdict"], "fail", "{}", gate(&s, "gpu_memory_bytes"));
    let (_, s) = run("dcgm", "v2-absent", gates);
    assert_eq!(gate(&s, "gpu_memory_bytes")["verdict"], "no-data");
}

// ---- traffic steps: where the arms held each split ---------------------------

/// Seconds each step of a test ramp is held.
const STEP_SECS: f64 = 12.0;

const SHARES: [f64; 3] = [0.10, 0.50, 1.0];

/// A canary ramp of `total` requests per second over [10, 50, 100]: the
/// candidate's phases (served as `candidate[i]` at step i) and the
/// baseline's, which serves the rest. The split is visible only as the
/// arms' request rates, as with KServe's `canaryTrafficPercent`.
fn ramp(total: f64, candidate: [Stack; 3]) -> (Phases, Phases) {
    let at = |i: usize| i as f64 * STEP_SECS;
    let c = (0..3).map(|i| (at(i), total * SHARES[i], candidate[i])).collect();
    let b = (0..3).map(|i| (at(i), total * (1.0 - SHARES[i]), NORMAL)).collect();
    (c, b)
}

fn step_verdicts(s: &Value) -> Vec<(u64, String)> {
    s["data"]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {s}"))
        .iter()
        .map(|x| (x["percent"].as_u64().unwrap(), x["verdict"].as_str().unwrap().to_string()))
        .collect()
}

#[test]
fn every_traffic_step_is_judged_where_the_arms_held_it() {
    let slow = Stack { slower: 1.3, ..NORMAL };
    let (ok, ok_base) = ramp(1000.0, [NORMAL; 3]);
    let (slow50, slow50_base) = ramp(1000.0, [NORMAL, slow, slow]);
    let (thin, thin_base) = ramp(20.0, [NORMAL; 3]);
    let scfg = serve_phased(vec![
        ("ok", ok),
        ("ok-base", ok_base),
        ("slow50", slow50),
        ("slow50-base", slow50_base),
        ("thin", thin),
        ("thin-base", thin_base),
    ]);
    let Some(bin) = prometheus_binary() else {
        assert!(std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some(), "`prometheus` is not on PATH");
        return;
    };
    let p = start_prometheus_with(bin, &scfg).unwrap();
    // The 100% step held for 10 s.
    p.wait_for(|| p.value("min_over_time(bundlegate_test_phase[10s])") == Some(3.0), "the 100% step to be held");
    let ex = example();
    // The issue's own plan: vLLM metrics, steps [10, 50, 100]. TTFT and
    // errors have absolute limits (judged at 100% too); ITL is relative only.
    provider_bundle(
        &ex,
        "vllm",
        "v2",
        "[{metric: ttft_p95_seconds, maxAbsolute: 1.0, maxRelativeIncrease: 0.10}, {metric: error_rate, maxAbsolute: 0.05}, \
          {metric: itl_p95_seconds, maxRelativeIncrease: 0.10}]",
    );
    ex.edit_v2(|v| *at(v, "spec.canary.steps") = yaml("[10, 50, 100]"));
    let steps = |arm: &str| {
        let (c, b) = (
            format!("bundlegate_dev_release_version=\"{arm}\""),
            format!("bundlegate_dev_release_version=\"{arm}-base\""),
        );
        let out = canary(&ex, &p, "20s", &["--steps", "--candidate-selector", &c, "--baseline-selector", &b]);
        let s = step(&out);
        (out, s)
    };

    // Healthy arms: every step passes, one row each, in order.
    let (out, s) = steps("ok");
    assert_eq!(
        step_verdicts(&s),
        vec![(10, "pass".into()), (50, "pass".into()), (100, "pass".into())],
        "{}",
        s["summary"]
    );
    assert_eq!((out.code, s["verdict"].as_str()), (0, Some("pass")), "{}", out.stdout);
    assert_eq!(s["tables"][0]["title"], "traffic steps");
    assert_eq!(s["tables"][0]["rows"].as_array().unwrap().len(), 3);
    let summary = s["summary"].as_str().unwrap();
    assert!(summary.contains("10% PASS, 50% PASS, 100% PASS") && summary.contains("request shares"), "{summary}");
    // Each step over its own stretch: in order, within the time it was held.
    let st = s["data"]["steps"].as_array().unwrap();
    for (i, x) in st.iter().enumerate() {
        let (w, held) = (&x["window"], &x["held"]);
        assert!(w["seconds"].as_f64().unwrap() >= 6.0, "{x}");
        assert!(w["end"].as_f64().unwrap() <= held["to"].as_f64().unwrap() + 1e-6, "{x}");
        assert!(
            w["end"].as_f64().unwrap() - w["seconds"].as_f64().unwrap() >= held["from"].as_f64().unwrap() - 1e-6,
            "{x}"
        );
        if i > 0 {
            assert!(st[i - 1]["held"]["to"].as_f64().unwrap() < held["from"].as_f64().unwrap() + 2.0, "{st:?}");
        }
    }
    // The deciding step is the 100% one: the candidate alone, absolute limits only.
    assert_eq!(s["data"]["candidateAlone"], true, "{}", s["data"]);
    assert_eq!(s["data"]["notChecked"], json!(["itl_p95_seconds"]));
    assert_eq!(
        verdicts(&s),
        vec![("ttft_p95_seconds".to_string(), "pass".to_string()), ("error_rate".to_string(), "pass".to_string())]
    );
    assert!(gate(&s, "ttft_p95_seconds")["baseline"].is_null());

    // 30% slower TTFT from step 50 on: step 10 passes (its window holds no
    // step-50 traffic), step 50 fails and names itself, 100% is not judged.
    let (out, s) = steps("slow50");
    assert_eq!(
        step_verdicts(&s),
        vec![(10, "pass".into()), (50, "fail".into()), (100, "not-judged".into())],
        "{}",
        s["summary"]
    );
    assert_eq!((out.code, s["verdict"].as_str()), (1, Some("fail")), "{}", out.stdout);
    let d = out.diag("BG301");
    assert!(d["message"].as_str().unwrap().starts_with("step 50%: gate `ttft_p95_seconds`"), "{d}");
    assert!(s["summary"].as_str().unwrap().contains("50% FAIL, 100% NOT JUDGED"), "{}", s["summary"]);
    // The deciding report is step 50's: candidate vs baseline, version-tied.
    assert_eq!(s["data"]["candidateAlone"], false);
    assert!(gate(&s, "ttft_p95_seconds")["comparison"]["pValue"].as_f64().unwrap() < 1e-6);
    assert_eq!(s["data"]["action"], "rollback", "{}", s["summary"]);
    // Each judged step's gate numbers, and the chart drawn from them: the
    // 10% and 50% steps (100% was not judged), parsed by Mermaid.
    let ttft = &s["data"]["steps"][1]["gates"][0];
    assert_eq!(ttft["metric"], "ttft_p95_seconds", "{}", s["data"]["steps"]);
    assert!(ttft["candidate"].as_f64().unwrap() > ttft["baseline"].as_f64().unwrap() * 1.1, "{ttft}");
    assert_eq!(s["data"]["steps"][2]["gates"], json!([]));
    let md = crate::mermaid::markdown_of(&out.stdout);
    assert!(md.contains("title \"canary gate ttft_p95_seconds: candidate (bars) vs baseline (line), limit"), "{md}");
    assert!(md.contains("    x-axis [\"step 10％\", \"step 50％\"]\n"), "{md}");
    if let Some(m) = crate::mermaid::mermaid_modules() {
        crate::mermaid::parse_all(&m, &md);
    }

    // 20 requests a second: 2 a second reach the candidate at 10%, far
    // below minSamples. INCONCLUSIVE there, never a pass, never a failure.
    let (out, s) = steps("thin");
    assert_eq!(step_verdicts(&s)[0], (10, "inconclusive".into()), "{}", s["summary"]);
    assert_eq!((out.code, s["verdict"].as_str()), (1, Some("inconclusive")), "{}", out.stdout);
    assert!(!out.codes().contains(&"BG301".to_string()), "{:?}", out.codes());
    let thin = out.json()["steps"][0]["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["message"].as_str().unwrap().starts_with("step 10%:"))
        .cloned();
    assert!(
        thin.is_some_and(|d| d["code"] == "BG302" && d["message"].as_str().unwrap().contains("minSamples")),
        "{}",
        out.stdout
    );

    // A candidate that never got traffic: no step held, nothing passes.
    let (out, s) = steps("never");
    assert_eq!(
        step_verdicts(&s),
        vec![(10, "pending".into()), (50, "pending".into()), (100, "pending".into())],
        "{}",
        s["summary"]
    );
    assert_eq!((out.code, s["verdict"].as_str()), (1, Some("inconclusive")));
}

#[test]
fn the_shipped_vllm_example_lints_and_names_gates_a_provider_cannot_compute() {
    let example = repo().join("examples/llm-vllm/v2/release.yaml");
    let out = run(&["lint", "--format", "json", example.to_str().unwrap()]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let ex = Example::new();
    ex.edit_v2(|v| {
        *at(v, "spec.canary.provider") = "istio".into();
        *at(v, "spec.canary.gates") =
            yaml("[{metric: ttft_p95_seconds, maxAbsolute: 1.0}, {metric: output_tokens_per_second, maxRelativeIncrease: 0.1, provider: vllm}]");
    });
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let d = out.diag("BG305");
    assert!(d["message"].as_str().unwrap().contains("`vllm` has it"), "{d}");
    assert_eq!(d["field"], "spec.canary.gates[0].metric");
    assert!(out.diag("BG306")["message"].as_str().unwrap().contains("higher-is-better"));
    // Canary itself reports such a gate as NO DATA with the reason.
    let out = ex.run(&["canary", "--format", "json", ex.v2().to_str().unwrap(), "--prometheus", "http://127.0.0.1:1"]);
    assert_eq!(out.code, 2, "Prometheus is unreachable: {}", out.stdout);

    // vLLM's abort counter exists but never counts client aborts: BG305 with the reason.
    ex.edit_v2(|v| {
        *at(v, "spec.canary.provider") = "vllm".into();
        *at(v, "spec.canary.gates") = yaml("[{metric: abort_rate, maxAbsolute: 0.02}]");
    });
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    let d = out.diag("BG305");
    assert!(
        d["message"].as_str().unwrap().contains("vllm-project/vllm#31503")
            && d["message"].as_str().unwrap().contains("error_rate"),
        "{d}"
    );

    // Steps ending at 100% with relative limits only: that step cannot be
    // checked, said at lint time as a warning.
    ex.edit_v2(|v| *at(v, "spec.canary.gates") = yaml("[{metric: ttft_p95_seconds, maxRelativeIncrease: 0.1}]"));
    let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
    let d = out.diag("BG307");
    assert_eq!((d["severity"].as_str(), d["field"].as_str()), (Some("warning"), Some("spec.canary.steps")), "{d}");
    assert!(d["message"].as_str().unwrap().contains("NOT CHECKED"), "{d}");
    ex.edit_v2(|v| {
        *at(v, "spec.canary.gates") = yaml("[{metric: ttft_p95_seconds, maxRelativeIncrease: 0.1, maxAbsolute: 2.0}]")
    });
    assert!(!ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]).codes().contains(&"BG307".to_string()));
}

#[test]
fn steps_must_be_strictly_increasing_percentages_at_parse_time() {
    for steps in ["[10, 10, 100]", "[0, 100]", "[50, 101]", "[]", "[100, 50]"] {
        let ex = Example::new();
        ex.edit_v2(|v| *at(v, "spec.canary.steps") = yaml(steps));
        let out = ex.run(&["lint", "--format", "json", ex.v2().to_str().unwrap()]);
        assert_eq!(out.code, 2, "{steps}: {}", out.stdout);
        assert!(
            out.stdout.contains("strictly increasing") || out.stderr.contains("strictly increasing"),
            "{steps}: {}\n{}",
            out.stdout,
            out.stderr
        );
    }
}

#[test]
fn prometheus_nan_and_inf_values_are_no_data_not_a_pass() {
    for v in ["NaN", "+Inf", "-Inf"] {
        let out = canary_against(crate::support::http::Reply::Json(
            200,
            json!({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"le": "+Inf"}, "value": [1767261600, v]}]}}),
        ));
        assert_eq!(out.code, 1, "{v}: {}\n{}", out.stdout, out.stderr);
        let s = step(&out);
        assert_eq!(s["verdict"], "inconclusive", "{v}");
        assert!(verdicts(&s).iter().all(|(_, g)| g == "no-data"), "{v}: {:?}", verdicts(&s));
    }
}

/// canary loaded `spec.rollback.bundle` and `spec.canary.golden` without
/// the confinement lint applies: an absolute path to a `.env` printed its
/// content in the "no baseline" error, and `golden: /dev/zero` was read
/// without bound (2 GB). One confined, bounded loader serves both.
#[test]
fn canary_rollback_and_golden_set_are_confined_and_bounded() {
    let ex = Example::new();
    let v2 = ex.v2().to_str().unwrap().to_string();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    let outside = tempfile::tempdir().unwrap();
    let env = outside.path().join("outside.env");
    std::fs::write(&env, "API_TOKEN=s3cr3t-token-value\nDB_PASSWORD=\"hunter2hunter2\"\n").unwrap();
    std::fs::copy(&env, dir.join("inside.env")).unwrap();
    // Set `field`, run canary with `args`: exit 2, the summary says `says` and `want`, and no secret.
    let refused = |field: &str, value: &str, args: &[&str], says: &str, want: &str| {
        ex.edit_v2(|v| *at(v, field) = value.into());
        let mut a = vec!["canary", "--format", "json", v2.as_str()];
        a.extend_from_slice(args);
        let out = run_within(ex.path(), &a, &[], 60);
        assert_eq!(out.code, 2, "{value}: {}\n{}", out.stdout, out.stderr);
        let s = step(&out)["summary"].as_str().unwrap().to_string();
        assert!(s.contains(says) && s.contains(want), "{value}: {s}");
        for secret in ["s3cr3t", "hunter2", "API_TOKEN", "DB_PASSWORD"] {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "{value} leaks {secret}:\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
    };
    let prom = ["--prometheus", "http://127.0.0.1:1"];
    for (target, want) in [
        (env.to_str().unwrap(), "refused, not read"),
        ("../../../../../../../../../etc/hostname", "refused, not read"),
        ("inside.env", "the file is not a release bundle"),
    ] {
        refused("spec.rollback.bundle", target, &prom, "no baseline: the rollback target does not load", want);
    }
    ex.edit_v2(|v| *at(v, "spec.rollback.bundle") = "../v1/release.yaml".into());
    std::os::unix::fs::symlink("/dev/zero", dir.join("zero.jsonl")).unwrap();
    assert!(Command::new("mkfifo").arg(dir.join("golden.fifo")).status().unwrap().success());
    let endpoint = ["--endpoint", "http://127.0.0.1:1"];
    for (golden, want) in [
        ("/dev/zero", "refused, not read"),
        ("zero.jsonl", "refused, not read"),
        ("golden.fifo", "not a regular file"),
        ("inside.env", "line 1 column 1: not a golden request (not JSON"),
    ] {
        refused("spec.canary.golden", golden, &endpoint, "golden set: could not run", want);
    }
}

#[test]
fn golden_request_with_a_duplicate_key_is_refused_naming_the_file_and_line() {
    let ex = Example::new();
    let dir = ex.v2().parent().unwrap().to_path_buf();
    let good = std::fs::read_to_string(dir.join("golden.jsonl")).unwrap();
    let first = good.lines().next().unwrap();
    // serde_json alone would keep the second `content` and send that.
    let dup = first.replacen("\"content\": ", "\"content\": \"hidden-first-value\", \"content\": ", 1);
    assert_ne!(dup, first);
    std::fs::write(dir.join("dup.jsonl"), format!("// two good lines, then the bad one\n{good}{dup}\n")).unwrap();
    ex.edit_v2(|v| *at(v, "spec.canary.golden") = "dup.jsonl".into());
    let v2 = ex.v2();
    let out = run_within(
        ex.path(),
        &["canary", "--format", "json", v2.to_str().unwrap(), "--endpoint", "http://127.0.0.1:1"],
        &[],
        60,
    );
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let v = out.json();
    let summary = v["steps"][0]["summary"].as_str().unwrap_or_default();
    let line = good.lines().count() + 2;
    assert!(
        summary.contains("golden set: could not run")
            && summary.contains(&format!("dup.jsonl: line {line} column "))
            && summary.contains("not a golden request (duplicate key"),
        "{summary}"
    );
    assert!(!out.stdout.contains("hidden-first-value") && !out.stderr.contains("hidden-first-value"), "{}", out.stdout);
}

// ---------------------------------------------------------------------------
// promote (issue #47): KServe's own split through git, judged by the gates.
//
// The revert tests' git remote (llm-scratch v1 → v2 and the store) with the
// release as LLMInferenceServices: the split file beside v2 holds v1 (the
// baseline, the route group) and v2 (the candidate) weighted 90/10. One
// Prometheus scrapes every arm, each target labelled the way KServe labels
// the workload's pods (`app.kubernetes.io/name` = the object's name) under
// the usual labelmap; each case names its own pair of objects.

use crate::watch::{gh_env, git, pulls, GitRemote};

/// The split's arms: (baseline, candidate) object names per case, and how
/// each serves (vLLM-shaped series).
const PROMOTE_ARMS: [(&str, f64, &str, Stack); 3] = [
    ("base-ok", 1800.0, "cand-ok", NORMAL),
    ("base-slow", 1800.0, "cand-slow", Stack { slower: 1.3, ..NORMAL }),
    ("base-few", 9.0, "cand-few", NORMAL),
];

/// A gateway ignoring the weights: 30% of the requests reach the candidate
/// where the split file declares 10%.
const SKEWED: (&str, f64, &str, f64) = ("base-skew", 1400.0, "cand-skew", 600.0);

fn promote_prometheus() -> Option<Prometheus> {
    let mut arms: Vec<(&'static str, Phases)> = Vec::new();
    for (b, rps, c, stack) in PROMOTE_ARMS {
        arms.push((b, vec![(0.0, rps, Stack { rps, ..NORMAL })]));
        arms.push((c, vec![(0.0, rps / 9.0, Stack { rps: rps / 9.0, ..stack })]));
    }
    let (b, b_rps, c, c_rps) = SKEWED;
    arms.push((b, vec![(0.0, b_rps, Stack { rps: b_rps, ..NORMAL })]));
    arms.push((c, vec![(0.0, c_rps, Stack { rps: c_rps, ..NORMAL })]));
    let cfg = serve_labelled(arms, "app_kubernetes_io_name");
    let Some(bin) = prometheus_binary() else {
        assert!(std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some(), "`prometheus` is not on PATH");
        return None;
    };
    let p = start_prometheus_with(bin, &cfg).unwrap();
    p.wait_window(12);
    Some(p)
}

fn rendered_object(dir: &std::path::Path, bundle: &str) -> Value {
    let out = run_in(dir, &["render", bundle], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let first = serde_yaml_ng::Deserializer::from_str(&out.stdout)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .find(|v: &Value| !v.is_null());
    first.unwrap()
}

/// The remote with v1 and v2 as LLMInferenceServices, v2's plan on vLLM
/// gates (steps 10, 50, 100) and the split file at 10% on `candidate`
/// beside `baseline`, committed and pushed on `main`.
fn progressive_remote(baseline: &str, candidate: &str) -> GitRemote {
    let g = GitRemote::new();
    let w = g.work();
    let (v1, v2) = (w.join("llm-scratch/v1/release.yaml"), w.join("llm-scratch/v2/release.yaml"));
    edit_yaml(&v1, |v| *at(v, "spec.serving.format") = "kserve-llm".into());
    let d = run_in(&w, &["digest", "--format", "json", "llm-scratch/v1/release.yaml"], &[]).json();
    let v1_digest = d["steps"][0]["data"]["releaseDigest"].as_str().unwrap().to_string();
    edit_yaml(&v2, |v| {
        *at(v, "spec.serving.format") = "kserve-llm".into();
        *at(v, "spec.rollback.releaseDigest") = v1_digest.into();
        *at(v, "spec.canary") = yaml(
            "{mode: canary, steps: [10, 50, 100], window: 12s, minSamples: 200, provider: vllm, gates: [\
              {metric: ttft_p95_seconds, maxAbsolute: 2.0, maxRelativeIncrease: 0.10}, \
              {metric: error_rate, maxAbsolute: 0.05}]}",
        );
    });
    let mut b = rendered_object(&w, "llm-scratch/v1/release.yaml");
    let mut c = rendered_object(&w, "llm-scratch/v2/release.yaml");
    b["metadata"]["name"] = baseline.into();
    c["metadata"]["name"] = candidate.into();
    let objs = bundlegate::checks::canary::split::render_split(&b, &c, 10).unwrap();
    let text: String = objs.iter().map(|o| format!("---\n{o}\n")).collect();
    std::fs::write(w.join("llm-scratch/v2/kserve-split.yaml"), text).unwrap();
    git(&w, &["add", "-A"]);
    git(&w, &["commit", "-q", "-m", "llm-scratch v2 at 10% on KServe's split"]);
    git(&w, &["push", "-q", "origin", "main"]);
    g
}

fn promote(g: &GitRemote, gh: &pulls::Pulls, p: &Prometheus) -> Out {
    let url = p.url();
    let args = ["promote", "llm-scratch/v2/release.yaml", "--repo", ".", "--format", "json", "--prometheus", &url];
    let env = gh_env(gh);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    run_in(&g.work(), &args, &env)
}

/// The route weights of the split file at `rev` on the remote, by object.
fn weights_at(g: &GitRemote, rev: &str) -> Vec<(String, u64)> {
    let text = g.show(&format!("{rev}:llm-scratch/v2/kserve-split.yaml"));
    serde_yaml_ng::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .filter(|v: &Value| !v.is_null())
        .map(|o: Value| {
            (
                o["metadata"]["name"].as_str().unwrap().to_string(),
                o["spec"]["router"]["route"]["weight"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// PASS at 10% → the next-step PR to 50% (through the shipped pipeline);
/// FAIL → the revert PR and no next step; INCONCLUSIVE (too few requests,
/// or 30% observed where 10% is declared) → no PR at all, saying what is
/// missing. Each against the real git remote and the GitHub
/// stand-in checked against GitHub's REST description.
#[test]
fn promote_opens_the_next_step_on_pass_the_revert_on_fail_and_nothing_on_inconclusive() {
    let Some(p) = promote_prometheus() else { return };

    // ---- PASS: the shipped pipeline opens the 50% PR ----
    let g = progressive_remote("base-ok", "cand-ok");
    let gh = pulls::Pulls::start(crate::watch::TOKEN);
    let pipeline = repo().join("pipelines/progressive.yaml");
    let url = p.url();
    let env = gh_env(&gh);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let out = run_in(
        &g.work(),
        &[
            "run",
            pipeline.to_str().unwrap(),
            "--bundle",
            "llm-scratch/v2/release.yaml",
            "--prometheus",
            &url,
            "--format",
            "json",
        ],
        &env,
    );
    let v = out.json();
    let c = crate::support::step(&v, "canary");
    assert_eq!(c["verdict"], "pass", "{c:#}");
    assert_eq!(c["data"]["selectors"]["candidate"], "app_kubernetes_io_name=\"cand-ok\"", "KServe's pod label");
    assert_eq!(c["data"]["selectors"]["baseline"], "app_kubernetes_io_name=\"base-ok\"");
    let split = &c["data"]["split"];
    assert_eq!((split["verdict"].as_str(), split["declared"]["percent"].as_f64()), (Some("holds"), Some(10.0)));
    let observed = split["observedPercent"].as_f64().unwrap();
    assert!((observed - 10.0).abs() < 1.0, "{split}");
    let pr_step = crate::support::step(&v, "promote");
    assert_eq!(pr_step["verdict"], "pass", "{pr_step:#}");
    assert_eq!(pr_step["data"]["pr"]["created"], true);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let sha = g.remote_branch("bundlegate/promote-llm-scratch-v2-50-").expect("the next step's branch");
    assert_eq!(weights_at(&g, &sha), [("base-ok".to_string(), 50), ("cand-ok".to_string(), 50)]);
    assert_eq!(weights_at(&g, "main"), [("base-ok".to_string(), 90), ("cand-ok".to_string(), 10)], "main untouched");
    assert!(g.show(&sha).contains("bundlegate-promote-of: sha256:"));
    let prs = gh.pulls();
    assert_eq!(prs.len(), 1, "{prs:#?}");
    assert!(prs[0]["head"]["ref"].as_str().unwrap().starts_with("bundlegate/promote-llm-scratch-v2-50-"));
    assert_eq!(prs[0]["base"]["ref"], "main");
    assert_eq!(prs[0]["title"], "Promote llm-scratch v2 from 10% to 50% (bundlegate)");
    let body = prs[0]["body"].as_str().unwrap();
    for want in [
        "| LLMInferenceService/base-ok spec.router.route.weight | 90 | 50 |",
        "| LLMInferenceService/cand-ok spec.router.route.weight | 10 | 50 |",
        "| declared | 10.0% |",
        "| observed |",
        "ttft_p95_seconds",
        "error_rate",
    ] {
        assert!(body.contains(want), "PR body lacks {want}:\n{body}");
    }
    // Run again (another CI job, a retry): the same branch and commit, the open PR found, no second one.
    let again = promote(&g, &gh, &p);
    let s = crate::support::step(&again.json(), "promote").clone();
    assert_eq!((s["verdict"].as_str(), s["data"]["branchExisted"].as_bool()), (Some("pass"), Some(true)), "{s:#}");
    assert!(s["summary"].as_str().unwrap().starts_with("already promoting"), "{s:#}");
    assert_eq!(g.remote_branch("bundlegate/promote-llm-scratch-v2-50-"), Some(sha));
    assert_eq!(gh.pulls().len(), 1);
    gh.assert_no_violations();

    // ---- FAIL: the revert PR, no next step ----
    let g = progressive_remote("base-slow", "cand-slow");
    let gh = pulls::Pulls::start(crate::watch::TOKEN);
    let out = promote(&g, &gh, &p);
    let v = out.json();
    assert_eq!(crate::support::step(&v, "canary")["verdict"], "fail", "{:#}", crate::support::step(&v, "canary"));
    assert_eq!(crate::support::step(&v, "promote")["verdict"], "fail");
    assert_eq!(crate::support::step(&v, "revert")["verdict"], "pass", "{:#}", crate::support::step(&v, "revert"));
    assert_eq!(out.code, 1);
    assert!(g.remote_branch("bundlegate/promote-").is_none(), "no next step on a failed canary");
    let prs = gh.pulls();
    assert_eq!(prs.len(), 1);
    assert!(prs[0]["head"]["ref"].as_str().unwrap().starts_with("bundlegate/revert-llm-scratch-v2-"));
    let body = prs[0]["body"].as_str().unwrap();
    assert!(body.contains("BG301") && body.contains("ttft_p95_seconds"), "{body}");
    let sha = g.remote_branch("bundlegate/revert-llm-scratch-v2-").unwrap();
    assert_eq!(
        g.show(&format!("{sha}:llm-scratch/v2/release.yaml")),
        std::fs::read_to_string(g.work().join("llm-scratch/v1/release.yaml")).unwrap()
    );
    gh.assert_no_violations();

    // ---- INCONCLUSIVE: too few requests; nothing opened, what is missing said ----
    let g = progressive_remote("base-few", "cand-few");
    let gh = pulls::Pulls::start(crate::watch::TOKEN);
    let out = promote(&g, &gh, &p);
    let v = out.json();
    assert_eq!(
        crate::support::step(&v, "canary")["verdict"],
        "inconclusive",
        "{:#}",
        crate::support::step(&v, "canary")
    );
    assert_eq!(crate::support::step(&v, "canary")["data"]["split"]["verdict"], "unproven");
    let s = crate::support::step(&v, "promote");
    assert_eq!(s["verdict"], "inconclusive");
    let why = s["summary"].as_str().unwrap();
    assert!(why.starts_with("no PR opened") && why.contains("BG302") && why.contains("BG311"), "{why}");
    assert_eq!(out.code, 1);
    assert!(gh.pulls().is_empty() && gh.requests().is_empty(), "GitHub not even asked");
    assert!(g.remote_branch("bundlegate/promote-").is_none() && g.remote_branch("bundlegate/revert-").is_none());

    // ---- the split does not hold: the gates passed on another split; nothing opened ----
    let g = progressive_remote(SKEWED.0, SKEWED.2);
    let gh = pulls::Pulls::start(crate::watch::TOKEN);
    let out = promote(&g, &gh, &p);
    let v = out.json();
    let c = crate::support::step(&v, "canary");
    assert_eq!(c["verdict"], "inconclusive", "{c:#}");
    assert_eq!(c["data"]["split"]["verdict"], "mismatch");
    assert!((c["data"]["split"]["observedPercent"].as_f64().unwrap() - 30.0).abs() < 1.0, "{}", c["data"]["split"]);
    assert!(out.diag("BG310")["message"].as_str().unwrap().contains("10.0% was declared"));
    let why = crate::support::step(&v, "promote")["summary"].as_str().unwrap().to_string();
    assert!(why.starts_with("no PR opened") && why.contains("BG310"), "{why}");
    assert!(gh.pulls().is_empty() && g.remote_branch("bundlegate/promote-").is_none());
}
