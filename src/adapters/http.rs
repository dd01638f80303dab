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

/// The one bounded body reader, for any HTTP body (reqwest's, or the one
/// octocrab hands back): the text of at most `max` bytes, with how the body
/// ended: `Ok(true)` when it was longer (not read further), `Ok(false)` when
/// read whole, or the error that broke it off (the text is what came
/// before). Invalid UTF-8 is replaced, as `Response::text` does.
pub(crate) async fn read_bounded<B>(mut body: B, max: usize) -> (String, std::result::Result<bool, B::Error>)
where
    B: http_body_util::BodyExt + Unpin,
    B::Data: bytes::Buf,
{
    use bytes::Buf;
    let mut buf: Vec<u8> = Vec::new();
    let end = loop {
        let Some(frame) = body.frame().await else { break Ok(false) };
        let mut data = match frame.map(|f| f.into_data()) {
            Err(e) => break Err(e),
            Ok(Err(_)) => continue, // trailers
            Ok(Ok(d)) => d,
        };
        let mut over = false;
        while data.has_remaining() {
            let chunk = data.chunk();
            let take = chunk.len().min(max.saturating_sub(buf.len()));
            buf.extend_from_slice(&chunk[..take]);
            if take < chunk.len() {
                over = true;
                break;
            }
            data.advance(take);
        }
        if over {
            break Ok(true);
        }
    };
    (String::from_utf8_lossy(&buf).into_owned(), end)
}

/// The body as text, or an error once it passes `max` bytes (`what` names
/// it).
pub(crate) async fn text_within(resp: reqwest::Response, max: usize, what: &str) -> Result<String> {
    let (text, end) = read_bounded(reqwest::Body::from(resp), max).await;
    if end.with_context(|| format!("reading {what}"))? {
        bail!("{what} is larger than {} MiB: not read further", max >> 20);
    }
    Ok(text)
}

/// Up to `max` bytes of the body, for quoting an error answer: never an
/// error of its own (the status already is one), so a body that breaks off
/// is quoted as far as it came.
pub(crate) async fn text_prefix(resp: reqwest::Response, max: usize) -> String {
    read_bounded(reqwest::Body::from(resp), max).await.0
}

/// A local HTTP/1.1 server answering every request with one fixed body,
/// for the adapters' bound tests: the answer goes through the real client,
/// connection and framing, not a stubbed body.
#[cfg(test)]
pub(crate) async fn serve_fixed(content_type: &'static str, body: std::sync::Arc<Vec<u8>>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                // Read the request head (these requests carry small bodies).
                let mut req = Vec::new();
                let mut buf = [0u8; 4096];
                while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => req.extend_from_slice(&buf[..n]),
                    }
                }
                let head = format!("HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n", body.len());
                let _ = sock.write_all(head.as_bytes()).await;
                let _ = sock.write_all(&body).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

/// `json` padded with trailing blanks (still the same JSON) to exactly `len` bytes.
#[cfg(test)]
pub(crate) fn json_of_len(json: &str, len: usize) -> std::sync::Arc<Vec<u8>> {
    let mut v = json.as_bytes().to_vec();
    assert!(v.len() <= len);
    v.resize(len, b' ');
    std::sync::Arc::new(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn answers_are_read_within_the_bound() {
        let body = |n: usize| http_body_util::Full::new(bytes::Bytes::from(vec![b'x'; n]));
        let (text, end) = read_bounded(body(10), 10).await;
        assert_eq!((text, end.unwrap()), ("x".repeat(10), false));
        let (text, end) = read_bounded(body(11), 10).await;
        assert!(end.unwrap() && text.len() <= 10);
    }
}
