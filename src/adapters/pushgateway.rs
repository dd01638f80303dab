//! Push metrics to a Prometheus Pushgateway (`PUT /metrics/job/<job>`), the
//! way batch jobs report to Prometheus. Credentials in the URL are sent as
//! basic auth and never printed.

use anyhow::{anyhow, bail, Result};

/// A Pushgateway base URL, its credentials held apart so they are never shown.
pub(crate) struct Gateway {
    url: url::Url,
    user: String,
    pass: Option<String>,
}

impl Gateway {
    /// Parse `--pushgateway`; the error never repeats the URL (it may hold a password).
    pub(crate) fn parse(base: &str) -> Result<Gateway> {
        let mut url = url::Url::parse(base).map_err(|e| anyhow!("--pushgateway is not a URL ({e})"))?;
        if !matches!(url.scheme(), "http" | "https") {
            bail!("--pushgateway must be an http:// or https:// URL, not {}:", url.scheme());
        }
        let user = url.username().to_string();
        let pass = url.password().map(str::to_string);
        let _ = url.set_username("");
        let _ = url.set_password(None);
        Ok(Gateway { url, user, pass })
    }

    /// The URL without credentials, for messages.
    pub(crate) fn shown(&self) -> String {
        self.url.to_string()
    }

    /// Replace the metrics of group `job` with `body` (text format 0.0.4),
    /// within 30 s.
    pub(crate) async fn push(&self, http: &reqwest::Client, job: &str, body: String) -> Result<()> {
        let shown = self.shown();
        let target = format!("{}/metrics/job/{job}", shown.trim_end_matches('/'));
        let mut req = http
            .put(&target)
            .timeout(std::time::Duration::from_secs(30))
            .header("Content-Type", "text/plain; version=0.0.4")
            .body(body);
        if !self.user.is_empty() {
            req = req.basic_auth(&self.user, self.pass.as_ref());
        }
        let resp = req.send().await.map_err(|e| anyhow!("pushing metrics to {shown}: {}", e.without_url()))?;
        if !resp.status().is_success() {
            let status = resp.status();
            let text = super::http::text_prefix(resp, super::http::ERROR_TEXT_MAX).await;
            bail!("pushing metrics to {shown}: HTTP {status}: {}", text.chars().take(300).collect::<String>());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_held_apart_and_never_shown() {
        let g = Gateway::parse("http://pusher:pw@127.0.0.1:9091/").unwrap();
        assert_eq!(g.shown(), "http://127.0.0.1:9091/");
        assert_eq!((g.user.as_str(), g.pass.as_deref()), ("pusher", Some("pw")));
        let e = Gateway::parse("ftp://u:secret@h/").err().unwrap().to_string();
        assert!(e.contains("http") && !e.contains("secret"), "{e}");
        assert!(!Gateway::parse("u:secret@h").err().unwrap().to_string().contains("secret"));
    }
}
