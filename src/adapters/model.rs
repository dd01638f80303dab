//! The model endpoint: the service's identity document and its health probe
//! (`watch`). Bodies are read within a bound (`adapters::http`).

use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde_json::Value;

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
    serde_json::from_str(&text)
        .with_context(|| format!("GET {url}: the answer is not JSON: {}", text.chars().take(200).collect::<String>()))
}

/// One health probe: a 2xx answer within `timeout`.
pub(crate) async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> bool {
    matches!(http.get(url).timeout(timeout).send().await, Ok(r) if r.status().is_success())
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
