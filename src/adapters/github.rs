//! GitHub adapter: the few REST calls PR mode and revert need, through octocrab.
//!
//! Why not octocrab's typed helpers: `issues().update_comment` sends POST
//! where GitHub documents PATCH, `list_comments` leaves pagination to the
//! caller (a peer tool saw only the first 30 comments), and octocrab's own
//! retry cannot tell a fork PR's read-only 403 from a secondary rate limit.
//! So requests go through octocrab's raw `_get`/`_post`/`_patch`/`_delete`
//! (auth, base URI, TLS, timeouts) and this module owns status handling,
//! retries and pagination.
//!
//! The token never leaves octocrab's `SecretString`: it is not stored here,
//! not part of any error message, and [`GithubClient`]'s `Debug` omits it.

use std::fmt;
use std::time::Duration;

use octocrab::service::middleware::retry::RetryConfig;
use octocrab::Octocrab;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::checks::revert::steps::PullState;

pub(crate) const DEFAULT_API_URL: &str = "https://api.github.com";

/// Why a GitHub call failed. `Forbidden` is separate because a read-only
/// token (fork PRs) is an expected situation, not a tool failure.
#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("GitHub refused {what} (HTTP {status}: {message}); the token is read-only or lacks permission (fork PRs get a read-only token; the workflow needs `permissions: pull-requests: write`)")]
    Forbidden { what: String, status: u16, message: String },
    #[error("GitHub rate limit on {what}: still limited after {attempts} attempt(s){}", retry_after.map(|s| format!(" (asked to wait {s}s)")).unwrap_or_default())]
    RateLimited { what: String, attempts: u32, retry_after: Option<u64> },
    #[error("GitHub server error on {what}: HTTP {status} after {attempts} attempt(s)")]
    Server { what: String, status: u16, attempts: u32 },
    #[error("GitHub answered HTTP {status} to {what}: {message}")]
    Http { what: String, status: u16, message: String },
    #[error("cannot reach GitHub for {what} after {attempts} attempt(s): {message}")]
    Transport { what: String, attempts: u32, message: String },
    #[error("unexpected response from GitHub to {what}: {message}")]
    Decode { what: String, message: String },
    #[error("GitHub client: {0}")]
    Config(String),
}

impl GithubError {
    pub fn is_forbidden(&self) -> bool {
        matches!(self, GithubError::Forbidden { .. })
    }
}

pub(crate) type Result<T> = std::result::Result<T, GithubError>;

/// How hard to try before giving up. Waits double from `base_backoff`.
#[derive(Debug, Clone)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    pub base_backoff: Duration,
    /// A `retry-after` longer than this is not waited for: a CI job should not
    /// sleep for an hour to post a comment.
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 4, base_backoff: Duration::from_millis(500), max_wait: Duration::from_secs(90) }
    }
}

/// An issue/PR comment, reduced to what the sticky comment needs: its
/// text, and who wrote it (the only comments bundlegate edits or deletes
/// are those written by the identity its token acts as).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
#[serde(from = "RawComment")]
pub(crate) struct Comment {
    pub id: u64,
    pub body: Option<String>,
    pub html_url: Option<String>,
    /// `user.login`.
    pub user: Option<String>,
    /// `user.type`: `User`, `Bot`, `Organization`.
    pub user_type: Option<String>,
    /// `performed_via_github_app` is set: a GitHub App (GitHub Actions'
    /// own token is one) wrote it.
    pub via_app: bool,
}

/// A comment as GitHub sends it (the fields [`Comment`] keeps).
#[derive(Deserialize)]
struct RawComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    user: Option<Value>,
    #[serde(default)]
    performed_via_github_app: Option<Value>,
}

impl From<RawComment> for Comment {
    fn from(r: RawComment) -> Comment {
        let field = |k: &str| r.user.as_ref().and_then(|u| u.get(k)).and_then(Value::as_str).map(String::from);
        Comment {
            id: r.id,
            user: field("login"),
            user_type: field("type"),
            via_app: r.performed_via_github_app.as_ref().is_some_and(|a| !a.is_null()),
            body: r.body,
            html_url: r.html_url,
        }
    }
}

/// `POST /repos/{owner}/{repo}/check-runs` body (the fields we set).
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckRun {
    pub name: String,
    pub head_sha: String,
    pub status: String,
    /// success | failure | neutral | action_required | ...
    pub conclusion: String,
    pub output: CheckRunOutput,
}

#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckRunOutput {
    pub title: String,
    pub summary: String,
}

#[derive(Clone, Copy)]
enum Method {
    Get,
    Post,
    Patch,
    Delete,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PullRef {
    pub number: u64,
    pub html_url: String,
}

impl PullRef {
    fn from_json(v: &Value) -> Option<PullRef> {
        Some(PullRef {
            number: v.get("number")?.as_u64()?,
            html_url: v.get("html_url").and_then(Value::as_str).unwrap_or("").to_string(),
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PullOutcome {
    Created(PullRef),
    /// GitHub refused a second PR for the same head branch; the open one.
    Exists(Option<PullRef>),
}

/// A pull request to open: `head` is the branch.
pub(crate) struct NewPull<'a> {
    pub title: &'a str,
    pub head: &'a str,
    pub base: &'a str,
    pub body: &'a str,
}

struct RawResponse {
    status: u16,
    retry_after: Option<u64>,
    ratelimit_remaining: Option<u64>,
    ratelimit_reset: Option<i64>,
    link: Option<String>,
    body: String,
    /// The body passed [`MAX_ANSWER`] and was not read further.
    too_large: bool,
}

/// One GitHub answer: a page of 100 comments of 65,536 characters is about
/// 7 MB, so this bounds a proxy or server that never stops, not GitHub.
const MAX_ANSWER: usize = 32 << 20;

pub struct GithubClient {
    crab: Octocrab,
    api_url: url::Url,
    policy: RetryPolicy,
}

impl fmt::Debug for GithubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Deliberately no token, not even its length.
        f.debug_struct("GithubClient")
            .field("api_url", &self.api_url.as_str())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl GithubClient {
    /// A client for `api_url` (e.g. `https://api.github.com` or a GHES
    /// `https://ghe.example.com/api/v3`). Must be called inside a Tokio runtime.
    pub(crate) fn new(api_url: &str, token: &str) -> Result<Self> {
        Self::with_policy(api_url, token, RetryPolicy::default())
    }

    pub fn with_policy(api_url: &str, token: &str, policy: RetryPolicy) -> Result<Self> {
        let trimmed = api_url.trim().trim_end_matches('/');
        let api_url = url::Url::parse(trimmed)
            .map_err(|e| GithubError::Config(format!("GITHUB_API_URL `{trimmed}` is not a URL: {e}")))?;
        if !matches!(api_url.scheme(), "http" | "https") {
            return Err(GithubError::Config(format!("GITHUB_API_URL `{trimmed}` must be http(s)")));
        }
        if token.trim().is_empty() {
            return Err(GithubError::Config("empty GitHub token".into()));
        }
        let crab = Octocrab::builder()
            // Retries are ours (see module docs); octocrab's default would
            // retry 5xx three times immediately, multiplying our attempts.
            .add_retry_config(RetryConfig::None)
            .set_connect_timeout(Some(Duration::from_secs(10)))
            .set_read_timeout(Some(Duration::from_secs(30)))
            .base_uri(trimmed)
            .map_err(|e| GithubError::Config(format!("GITHUB_API_URL `{trimmed}`: {e}")))?
            .personal_token(token.trim().to_string())
            .build()
            .map_err(|e| GithubError::Config(format!("building the HTTP client: {e}")))?;
        Ok(GithubClient { crab, api_url, policy })
    }

    /// Every comment on an issue or PR, following `Link: rel="next"` to the end.
    pub(crate) async fn list_comments(&self, owner: &str, repo: &str, issue: u64) -> Result<Vec<Comment>> {
        let mut route = format!("{}/issues/{issue}/comments?per_page=100", repo_path(owner, repo)?);
        let mut out = Vec::new();
        // A runaway `next` chain (a broken proxy) must not loop forever:
        // 500 pages is 50,000 comments.
        for _ in 0..500 {
            let resp = self.request(Method::Get, &route, None).await?;
            let what = format!("GET {}", strip_query(&route));
            let page: Vec<Comment> = crate::serde_strict::from_json_str(&resp.body)
                .map_err(|e| GithubError::Decode { what, message: e.to_string() })?;
            out.extend(page);
            match resp.link.as_deref().and_then(|l| link_rel(l, "next")) {
                Some(next) => route = self.same_origin_route(&next)?,
                None => return Ok(out),
            }
        }
        Err(GithubError::Decode {
            what: format!("GET {}/issues/{issue}/comments", repo_path(owner, repo)?),
            message: "more than 500 pages".into(),
        })
    }

    pub(crate) async fn create_comment(&self, owner: &str, repo: &str, issue: u64, body: &str) -> Result<Comment> {
        let route = format!("{}/issues/{issue}/comments", repo_path(owner, repo)?);
        let resp = self.request(Method::Post, &route, Some(&serde_json::json!({ "body": body }))).await?;
        decode(&format!("POST {route}"), &resp.body)
    }

    /// `PATCH`, the documented method (octocrab's helper sends POST).
    pub(crate) async fn update_comment(&self, owner: &str, repo: &str, comment_id: u64, body: &str) -> Result<Comment> {
        let route = format!("{}/issues/comments/{comment_id}", repo_path(owner, repo)?);
        let resp = self.request(Method::Patch, &route, Some(&serde_json::json!({ "body": body }))).await?;
        decode(&format!("PATCH {route}"), &resp.body)
    }

    pub(crate) async fn delete_comment(&self, owner: &str, repo: &str, comment_id: u64) -> Result<()> {
        let route = format!("{}/issues/comments/{comment_id}", repo_path(owner, repo)?);
        self.request(Method::Delete, &route, None).await.map(drop)
    }

    /// Create a completed check run; returns its id. Needs `checks: write`.
    pub(crate) async fn create_check_run(&self, owner: &str, repo: &str, run: &CheckRun) -> Result<u64> {
        let route = format!("{}/check-runs", repo_path(owner, repo)?);
        let body = serde_json::to_value(run).map_err(|e| GithubError::Config(e.to_string()))?;
        let resp = self.request(Method::Post, &route, Some(&body)).await?;
        let v: Value = decode(&format!("POST {route}"), &resp.body)?;
        v.get("id").and_then(Value::as_u64).ok_or_else(|| GithubError::Decode {
            what: format!("POST {route}"),
            message: "no `id` in the check run".into(),
        })
    }

    /// The open pull request whose head is `owner:branch`, if any.
    pub(crate) async fn find_open_pull(&self, owner: &str, repo: &str, branch: &str) -> Result<Option<PullRef>> {
        let q: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("head", &format!("{owner}:{branch}"))
            .append_pair("state", "open")
            .finish();
        let route = format!("{}/pulls?{q}", repo_path(owner, repo)?);
        let resp = self.request(Method::Get, &route, None).await?;
        let v: Value = decode(&format!("GET {}", strip_query(&route)), &resp.body)?;
        Ok(v.as_array().and_then(|a| a.first()).and_then(PullRef::from_json))
    }

    /// Open a pull request. GitHub refuses a second open PR for the same head
    /// (422 "already exists"), which is how concurrent reverts — and a POST
    /// retried after GitHub created the PR but failed to answer — end up
    /// with one PR: that case is `Exists`, with the open PR looked up.
    pub(crate) async fn create_pull(
        &self,
        owner: &str,
        repo: &str,
        title: &str,
        head: &str,
        base: &str,
        body: &str,
    ) -> Result<PullOutcome> {
        let route = format!("{}/pulls", repo_path(owner, repo)?);
        let req = serde_json::json!({"title": title, "head": head, "base": base, "body": body, "maintainer_can_modify": false});
        match self.request(Method::Post, &route, Some(&req)).await {
            Ok(resp) => {
                let v: Value = decode(&format!("POST {route}"), &resp.body)?;
                PullRef::from_json(&v).map(PullOutcome::Created).ok_or_else(|| GithubError::Decode {
                    what: format!("POST {route}"),
                    message: "no `number` in the pull request".into(),
                })
            }
            Err(GithubError::Http { status: 422, message, .. }) if message.contains("already exists") => {
                Ok(PullOutcome::Exists(self.find_open_pull(owner, repo, head).await?))
            }
            Err(e) => Err(e),
        }
    }

    /// A revert branch's pull request: the open one when the branch was
    /// already on the remote (another run pushed it), else a new one. `Err`
    /// names the branch, so the step says what is left to do by hand.
    pub(crate) async fn revert_pull(
        &self,
        owner: &str,
        repo: &str,
        existed: bool,
        pr: &NewPull<'_>,
    ) -> anyhow::Result<PullState> {
        let branch = pr.head;
        if existed {
            match self.find_open_pull(owner, repo, branch).await {
                Ok(Some(found)) => return Ok(PullState::AlreadyOpen { number: found.number, url: found.html_url }),
                Ok(None) => {} // the other run died before its PR: open it (GitHub refuses a duplicate)
                Err(e) => {
                    return Err(
                        anyhow::Error::new(e).context(format!("branch {branch} is on the remote; looking up its PR"))
                    )
                }
            }
        }
        match self.create_pull(owner, repo, pr.title, branch, pr.base, pr.body).await {
            Ok(PullOutcome::Created(p)) => Ok(PullState::Opened { number: p.number, url: p.html_url }),
            Ok(PullOutcome::Exists(p)) => Ok(PullState::Exists(p.map(|p| p.number))),
            Err(e) => Err(anyhow::Error::new(e)
                .context(format!("branch {branch} is on the remote; opening its PR (open it by hand or re-run)"))),
        }
    }

    /// A `next` link must point at the API we were configured with: octocrab
    /// attaches the token to every request, so following a link to another
    /// host would hand it the token.
    fn same_origin_route(&self, link: &str) -> Result<String> {
        let u = url::Url::parse(link)
            .map_err(|e| GithubError::Decode { what: "pagination link".into(), message: format!("{e}") })?;
        if u.origin() != self.api_url.origin() {
            return Err(GithubError::Decode {
                what: "pagination link".into(),
                message: format!("points to another origin ({}), not following it", u.origin().ascii_serialization()),
            });
        }
        Ok(match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        })
    }

    async fn once(
        &self,
        method: Method,
        route: &str,
        body: Option<&Value>,
    ) -> std::result::Result<RawResponse, octocrab::Error> {
        let uri = route.to_string();
        let resp = match method {
            Method::Get => self.crab._get(uri).await?,
            Method::Post => self.crab._post(uri, body).await?,
            Method::Patch => self.crab._patch(uri, body).await?,
            Method::Delete => self.crab._delete(uri, None::<&()>).await?,
        };
        let h = resp.headers();
        let header = |n: &str| h.get(n).and_then(|v| v.to_str().ok()).map(|s| s.trim().to_string());
        let status = resp.status().as_u16();
        let retry_after = header("retry-after").and_then(|s| s.parse().ok());
        let ratelimit_remaining = header("x-ratelimit-remaining").and_then(|s| s.parse().ok());
        let ratelimit_reset = header("x-ratelimit-reset").and_then(|s| s.parse().ok());
        let link = header("link");
        let (body, end) = super::http::read_bounded(resp.into_body(), MAX_ANSWER).await;
        let too_large = end?;
        Ok(RawResponse { status, retry_after, ratelimit_remaining, ratelimit_reset, link, body, too_large })
    }

    /// One logical request with retries: 5xx and transport errors back off
    /// exponentially; 429 and secondary-rate-limit 403s wait as told
    /// (`retry-after`, or until `x-ratelimit-reset`); a plain 403 is final.
    ///
    /// A retried POST may create a duplicate comment if GitHub created it and
    /// then failed to answer; `publish_comment` deletes such duplicates on the
    /// next run because they carry the same marker.
    async fn request(&self, method: Method, route: &str, body: Option<&Value>) -> Result<RawResponse> {
        let what = format!("{method} {}", strip_query(route));
        let attempts = self.policy.max_retries + 1;
        let mut last_retry_after = None;
        for attempt in 1..=attempts {
            let last = attempt == attempts;
            let backoff = self.policy.base_backoff.saturating_mul(1 << (attempt - 1).min(10));
            let resp = match self.once(method, route, body).await {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(%what, attempt, "transport error: {e}");
                    if last {
                        return Err(GithubError::Transport { what, attempts, message: e.to_string() });
                    }
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            };
            let s = resp.status;
            if resp.too_large {
                return Err(GithubError::Decode {
                    what,
                    message: format!("HTTP {s}: the answer is larger than {} MiB; not read further", MAX_ANSWER >> 20),
                });
            }
            if (200..300).contains(&s) {
                return Ok(resp);
            }
            let message = error_message(&resp.body);
            if s >= 500 {
                tracing::debug!(%what, attempt, status = s, "server error");
                if last {
                    return Err(GithubError::Server { what, status: s, attempts });
                }
                tokio::time::sleep(backoff).await;
                continue;
            }
            let secondary = s == 429
                || (s == 403
                    && (resp.retry_after.is_some()
                        || resp.ratelimit_remaining == Some(0)
                        || message.to_ascii_lowercase().contains("rate limit")));
            if secondary {
                let wait = match (resp.retry_after, resp.ratelimit_remaining, resp.ratelimit_reset) {
                    (Some(secs), _, _) => Duration::from_secs(secs),
                    (None, Some(0), Some(reset)) => {
                        Duration::from_secs((reset - chrono::Utc::now().timestamp()).max(1) as u64)
                    }
                    _ => backoff.max(Duration::from_secs(1)),
                };
                last_retry_after = resp.retry_after;
                if last || wait > self.policy.max_wait {
                    return Err(GithubError::RateLimited { what, attempts: attempt, retry_after: last_retry_after });
                }
                tracing::debug!(%what, attempt, wait_s = wait.as_secs_f64(), "rate limited");
                tokio::time::sleep(wait).await;
                continue;
            }
            if s == 403 {
                return Err(GithubError::Forbidden { what, status: s, message });
            }
            return Err(GithubError::Http { what, status: s, message });
        }
        Err(GithubError::RateLimited { what, attempts, retry_after: last_retry_after })
    }
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, body: &str) -> Result<T> {
    crate::serde_strict::from_json_str(body)
        .map_err(|e| GithubError::Decode { what: what.to_string(), message: e.to_string() })
}

/// GitHub error bodies are `{"message": ..., "errors": [{"message": ...}],
/// "documentation_url": ...}`; a 422's reason is only in `errors`.
fn error_message(body: &str) -> String {
    let v = serde_json::from_str::<Value>(body).ok();
    let Some(m) = v.as_ref().and_then(|v| v.get("message")).and_then(Value::as_str) else {
        return body.chars().take(200).collect();
    };
    let details: Vec<&str> = v
        .as_ref()
        .and_then(|v| v.get("errors"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| e.get("message").and_then(Value::as_str))
        .collect();
    if details.is_empty() {
        m.to_string()
    } else {
        format!("{m}: {}", details.join("; "))
    }
}

fn strip_query(route: &str) -> &str {
    route.split('?').next().unwrap_or(route)
}

/// `/repos/{owner}/{repo}`, refusing names that could change the path.
fn repo_path(owner: &str, repo: &str) -> Result<String> {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !ok(owner) || !ok(repo) {
        return Err(GithubError::Config(format!("`{owner}/{repo}` is not a valid owner/repository")));
    }
    Ok(format!("/repos/{owner}/{repo}"))
}

/// The URL for `rel` in an RFC 8288 `Link` header.
pub(crate) fn link_rel(header: &str, rel: &str) -> Option<String> {
    for part in header.split(',') {
        let mut segs = part.split(';');
        let url = segs.next()?.trim();
        let url = url.strip_prefix('<')?.strip_suffix('>')?;
        for p in segs {
            let p = p.trim();
            if let Some(v) = p.strip_prefix("rel=") {
                if v.trim_matches('"').split_whitespace().any(|r| r == rel) {
                    return Some(url.to_string());
                }
            }
        }
    }
    None
}

/// The size of a GitHub Actions runner file (`$GITHUB_STEP_SUMMARY`), 0
/// when it does not exist yet: the job-summary limit counts what earlier
/// steps wrote.
pub(crate) fn runner_file_len(path: &std::path::Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Append to a runner file (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`),
/// creating it: other steps of the job write there too.
pub(crate) fn append_runner_file(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Not blocking on open: a FIFO there without a reader would wait forever.
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    crate::adapters::bundle_files::ensure_regular(&f.metadata()?)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_header_parsing() {
        let h = r#"<https://api.github.com/repositories/1/issues/7/comments?per_page=100&page=2>; rel="next", <https://api.github.com/repositories/1/issues/7/comments?per_page=100&page=5>; rel="last""#;
        assert_eq!(
            link_rel(h, "next").unwrap(),
            "https://api.github.com/repositories/1/issues/7/comments?per_page=100&page=2"
        );
        assert!(link_rel(h, "last").unwrap().ends_with("page=5"));
        assert_eq!(link_rel(h, "prev"), None);
    }

    #[test]
    fn repo_names_cannot_change_the_path() {
        assert!(repo_path("o", "r").is_ok());
        assert!(repo_path("o", "../x").is_err());
        assert!(repo_path("o/x", "r").is_err());
        assert!(repo_path("o", "r?x=1").is_err());
    }

    /// At the bound a GitHub answer is read; one byte over, it is a decode
    /// error naming the request (octocrab alone reads bodies unbounded).
    #[tokio::test]
    async fn github_answer_is_read_up_to_its_bound_and_not_one_byte_more() {
        use crate::adapters::http::{json_of_len, serve_fixed};
        let at = serve_fixed("application/json", json_of_len("[]", MAX_ANSWER)).await;
        let c = GithubClient {
            policy: RetryPolicy { max_retries: 0, ..RetryPolicy::default() },
            ..GithubClient::new(&at, "t").unwrap()
        };
        assert!(c.list_comments("o", "r", 1).await.unwrap().is_empty());
        let over = serve_fixed("application/json", json_of_len("[]", MAX_ANSWER + 1)).await;
        let c = GithubClient {
            policy: RetryPolicy { max_retries: 0, ..RetryPolicy::default() },
            ..GithubClient::new(&over, "t").unwrap()
        };
        let e = c.list_comments("o", "r", 1).await.unwrap_err().to_string();
        assert!(e.contains("larger than 32 MiB") && e.contains("GET /repos/o/r/issues/1/comments"), "{e}");
    }

    #[tokio::test]
    async fn debug_never_shows_the_token() {
        let c = GithubClient::new("http://127.0.0.1:9", "ghp_supersecret123").unwrap();
        let d = format!("{c:?}");
        assert!(!d.contains("supersecret"), "{d}");
    }

    #[tokio::test]
    async fn next_links_to_other_hosts_are_refused() {
        let c = GithubClient::new("https://ghe.example.com/api/v3", "t").unwrap();
        assert_eq!(
            c.same_origin_route("https://ghe.example.com/api/v3/repos/o/r/issues/1/comments?page=2").unwrap(),
            "/api/v3/repos/o/r/issues/1/comments?page=2"
        );
        assert!(c.same_origin_route("https://evil.example.com/api/v3/repos/o/r/issues/1/comments?page=2").is_err());
    }
}
