//! Reading an HTTP answer's body within a limit. A server is outside input:
//! a Prometheus, a model endpoint or a gateway that streams without end must
//! not fill memory, so no body is read whole without a bound.

use anyhow::{bail, Context, Result};

/// Bodies bundlegate reads, by what they are.
pub(crate) const PROMETHEUS_MAX: usize = 64 << 20;
/// A golden answer: generated text, far below this for any sane sample.
pub(crate) const GOLDEN_ANSWER_MAX: usize = 4 << 20;
/// The service's identity document.
pub(crate) const IDENTITY_MAX: usize = 1 << 20;
/// An error page quoted (shortened) in a message.
pub(crate) const ERROR_TEXT_MAX: usize = 64 << 10;

/// The body as text, or an error once it passes `max` bytes (`what` names
/// it). Invalid UTF-8 is replaced, as `Response::text` does.
pub(crate) async fn text_within(mut resp: reqwest::Response, max: usize, what: &str) -> Result<String> {
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = resp.chunk().await.with_context(|| format!("reading {what}"))? {
        if buf.len().saturating_add(chunk.len()) > max {
            bail!("{what} is larger than {} MiB: not read further", max >> 20);
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Up to `max` bytes of the body, for quoting an error answer: never an
/// error of its own (the status already is one).
pub(crate) async fn text_prefix(mut resp: reqwest::Response, max: usize) -> String {
    let mut buf: Vec<u8> = Vec::new();
    while let Ok(Some(chunk)) = resp.chunk().await {
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if buf.len() >= max {
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}
