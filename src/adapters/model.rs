//! The model endpoint: the service's identity document and its health probe
//! (`watch`), and the samplers that ask them while the watch waits. Bodies are read within a bound (`adapters::http`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::checks::watch::rollout::{IdentitySample, ProbeSample};

/// `base` + `path` without doubling or dropping the slash.
pub(crate) fn join_url(base: &str, path: &str) -> String {
    format!("{}/{}", base.trim_end_matches('/'), path.trim_start_matches('/'))
}

/// GET a JSON document (the identity endpoint) within `timeout`.
pub(crate) async fn get_json(http: &reqwest::Client, url: &str, timeout: Duration) -> Result<Value> {
    let resp = http
        .get(url)
        .timeout(timeout)
        .header("accept", "application/json")
        .send()
        .await
        .with_context(|| format!("GET {url}"))?;
    let status = resp.status();
    if !status.is_success() {
        let text = super::http::text_prefix(resp, super::http::ERROR_TEXT_MAX).await;
        bail!("GET {url}: HTTP {status}: {}", text.chars().take(200).collect::<String>());
    }
    let text = super::http::text_within(resp, super::http::IDENTITY_MAX, &format!("the answer of GET {url}")).await?;
    crate::serde_strict::from_json_str(&text)
        .with_context(|| format!("GET {url}: the answer is not JSON: {}", text.chars().take(200).collect::<String>()))
}

/// One health probe: a 2xx answer within `timeout`.
pub(crate) async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> bool {
    matches!(http.get(url).timeout(timeout).send().await, Ok(r) if r.status().is_success())
}

/// The health probe running in the background while the watch waits.
pub(crate) struct Prober {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<(Vec<ProbeSample>, f64)>,
    pub(crate) url: String,
}

impl Prober {
    /// Probe `url` every `every` until stopped, like the in-cluster
    /// `curl -m 2` loop that once measured a rollout's downtime: a 2xx within
    /// 2 s is ok, anything else a failure.
    pub(crate) fn start(http: reqwest::Client, url: String, every: Duration) -> Prober {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let u = url.clone();
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            while !flag.load(Ordering::SeqCst) {
                tick.tick().await;
                let ok = probe(&http, &u, Duration::from_secs(2)).await;
                samples.push(ProbeSample { at_s: start.elapsed().as_secs_f64(), ok });
            }
            (samples, start.elapsed().as_secs_f64())
        });
        Prober { stop, task, url }
    }

    /// Stop probing; the samples and the seconds probed.
    pub(crate) async fn finish(self) -> (Vec<ProbeSample>, f64) {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap_or_default()
    }
}

/// At most this many identity requests per window: enough to see a Service
/// that alternates between two releases, bounded for a long window.
const IDENTITY_SAMPLES: u32 = 8;

/// Asks the identity endpoint at most [`IDENTITY_SAMPLES`] times, spread
/// over the stability window, until stopped.
pub(crate) struct IdentitySampler {
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<Vec<IdentitySample>>,
}

impl IdentitySampler {
    pub(crate) fn start(http: reqwest::Client, url: String, window: Duration, started: Instant) -> IdentitySampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        // Spread over the window, at least a second apart.
        let every = (window / IDENTITY_SAMPLES).max(Duration::from_secs(1));
        let task = tokio::spawn(async move {
            let mut samples = Vec::new();
            while !flag.load(Ordering::SeqCst) && samples.len() < IDENTITY_SAMPLES as usize {
                let answer = get_json(&http, &url, Duration::from_secs(10)).await.map_err(|e| format!("{e:#}"));
                samples.push(IdentitySample { at_s: started.elapsed().as_secs_f64(), answer });
                let until = Instant::now() + every;
                while Instant::now() < until && !flag.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(50).min(every)).await;
                }
            }
            samples
        });
        IdentitySampler { stop, task }
    }

    /// Stop asking; the answers taken so far.
    pub(crate) async fn finish(self) -> Vec<IdentitySample> {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap_or_default()
    }
}

/// The identity endpoint asked after the wait, when no answer was taken
/// during a window: up to three tries a second apart (a refused connection
/// right after the last pod swap is common; a wrong answer is final).
pub(crate) async fn ask_identity(http: &reqwest::Client, url: &str, started: Instant) -> Vec<IdentitySample> {
    let mut out = Vec::new();
    for attempt in 0..3 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let answer = get_json(http, url, Duration::from_secs(10)).await.map_err(|e| format!("{e:#}"));
        let ok = answer.is_ok();
        out.push(IdentitySample { at_s: started.elapsed().as_secs_f64(), answer });
        if ok {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::http::{json_of_len, serve_fixed, IDENTITY_MAX};

    /// At the bound the identity document is read; one byte over, it is an
    /// error naming the answer, not memory without end.
    #[tokio::test]
    async fn identity_answer_is_read_up_to_its_bound_and_not_one_byte_more() {
        let http = reqwest::Client::new();
        let at = serve_fixed("application/json", json_of_len(r#"{"release":"sha256:ab"}"#, IDENTITY_MAX)).await;
        let v = get_json(&http, &format!("{at}/model"), Duration::from_secs(10)).await.unwrap();
        assert_eq!(v["release"], "sha256:ab");
        let over = serve_fixed("application/json", json_of_len(r#"{"release":"sha256:ab"}"#, IDENTITY_MAX + 1)).await;
        let e = format!("{:#}", get_json(&http, &format!("{over}/model"), Duration::from_secs(10)).await.unwrap_err());
        assert!(e.contains("larger than 1 MiB"), "{e}");
    }
}
