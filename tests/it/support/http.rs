//! A tiny HTTP/1.1 server for stand-ins (one request per connection,
//! `connection: close`, so stopping the listener really stops the service).
//! Handlers answer JSON (`Handler`) or, for fault injection, any `Reply`:
//! extra headers, a raw or truncated body, a delay, or a dropped connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub struct Req {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Req {
    pub fn header(&self, n: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(n)).map(|(_, v)| v.as_str())
    }
    pub fn q(&self, n: &str) -> Option<&str> {
        self.query.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str())
    }
}

/// What to send back.
#[derive(Clone, Debug)]
pub enum Reply {
    Json(u16, Value),
    /// Status, extra headers, body bytes sent as they are.
    Raw {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// Announce `content-length` of `claimed` bytes, send `body`, close.
    Truncated {
        claimed: usize,
        body: Vec<u8>,
    },
    /// Close the connection without a word (a server that died).
    Drop,
    /// Hold the connection open this long, then close it (a hung server).
    Hang(Duration),
}

pub type Handler = Arc<dyn Fn(&Req) -> (u16, Value) + Send + Sync>;
pub type ReplyHandler = Arc<dyn Fn(&Req) -> Reply + Send + Sync>;

pub struct Server {
    pub port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    /// Port 0 picks a free one.
    pub fn start(port: u16, h: Handler) -> Server {
        Server::start_replies(
            port,
            Arc::new(move |r: &Req| {
                let (s, v) = h(r);
                Reply::Json(s, v)
            }),
        )
    }

    pub fn start_replies(port: u16, h: ReplyHandler) -> Server {
        let l = TcpListener::bind(("127.0.0.1", port)).expect("bind");
        let port = l.local_addr().unwrap().port();
        // Non-blocking accept so `stop` can close the listener: a stopped
        // service must refuse connections, like a dead pod.
        l.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            while !flag.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((s, _)) => {
                        let h = h.clone();
                        std::thread::spawn(move || serve(s, h));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Server { port, stop, thread: Some(thread) }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A plain HTTP/1.0 GET of a real server on 127.0.0.1 (Prometheus, the
/// Pushgateway), `headers` as `Name: value\r\n` lines → (status, body).
pub fn get(port: u16, path: &str, headers: &str) -> std::io::Result<(u16, String)> {
    let mut c = TcpStream::connect(("127.0.0.1", port))?;
    c.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n{headers}\r\n")?;
    let mut s = String::new();
    c.read_to_string(&mut s)?;
    let code = s.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = s.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default();
    Ok((code, body))
}

fn read_request(s: TcpStream) -> Option<Req> {
    let mut r = BufReader::new(s);
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?, parts.next()?);
    let mut headers = Vec::new();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 {
            return None;
        }
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let n = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; n];
    r.read_exact(&mut body).ok()?;
    let (path, q) = target.split_once('?').unwrap_or((target, ""));
    let query = url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    Some(Req { method: method.to_string(), path: path.to_string(), query, headers, body })
}

fn serve(s: TcpStream, h: ReplyHandler) {
    s.set_nonblocking(false).ok();
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut w = s.try_clone().unwrap();
    let Some(req) = read_request(s) else { return };
    let head = |status: u16, headers: &[(String, String)], len: usize| {
        let mut h = format!("HTTP/1.1 {status} X\r\ncontent-length: {len}\r\nconnection: close\r\n");
        for (k, v) in headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h + "\r\n"
    };
    let (head, body) = match h(&req) {
        Reply::Json(status, v) => {
            let b = serde_json::to_vec(&v).unwrap();
            (head(status, &[("content-type".into(), "application/json".into())], b.len()), b)
        }
        Reply::Raw { status, headers, body } => (head(status, &headers, body.len()), body),
        Reply::Truncated { claimed, body } => (head(200, &[], claimed), body),
        Reply::Drop => return,
        Reply::Hang(d) => {
            std::thread::sleep(d);
            return;
        }
    };
    let _ = w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).and_then(|_| w.flush());
}
