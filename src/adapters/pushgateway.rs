//! Push metrics to a Prometheus Pushgateway (`PUT /metrics/job/<job>`), the
//! way batch jobs report to Prometheus. Credentials in the URL are sent as
//! basic auth and never printed.

use anyhow::{anyhow, bail, Context, Result};

pub async fn push(base: &str, job: &str, body: String) -> Result<()> {
    let mut url = url::Url::parse(base).with_context(|| "--pushgateway is not a URL")?;
    let user = url.username().to_string();
    let pass = url.password().map(str::to_string);
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let shown = url.to_string();
    let target = format!("{}/metrics/job/{job}", shown.trim_end_matches('/'));
    let mut req = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(30))
        .build()?
        .put(&target)
        .header("Content-Type", "text/plain; version=0.0.4")
        .body(body);
    if !user.is_empty() {
        req = req.basic_auth(user, pass);
    }
    let resp = req.send().await.map_err(|e| anyhow!("pushing metrics to {shown}: {}", e.without_url()))?;
    if !resp.status().is_success() {
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        bail!("pushing metrics to {shown}: HTTP {status}: {}", text.chars().take(300).collect::<String>());
    }
    Ok(())
}
