//! A stateful GitHub REST stand-in, checked against GitHub's official OpenAPI
//! description (trimmed copy in `tests/fixtures/reference/github/api.github.com.trimmed.json`).
//!
//! It keeps PR comments and check runs, paginates with `Link` headers like
//! GitHub (default `per_page` 30, max 100), can inject failures, records every
//! request, and validates each one: the method and path must match an
//! operation in the description, path and query parameters must match their
//! schemas, and a JSON body must validate against the operation's
//! `requestBody` schema. Its own answers are validated against the documented
//! response schema too, so the stand-in cannot drift into answering things
//! GitHub never would. Anything that does not match is recorded in
//! `violations()`, which tests assert is empty.
//!
//! A plain `std::net` HTTP/1.1 server (keep-alive, Content-Length and chunked
//! request bodies) so the test needs no server framework.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Map, Value};

// ---------------------------------------------------------------------------
// The OpenAPI description

pub fn spec_path() -> PathBuf {
    std::env::var_os("BUNDLEGATE_GITHUB_OPENAPI")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::support::repo().join("tests/fixtures/reference/github/api.github.com.trimmed.json"))
}

struct Spec {
    doc: Value,
    /// (template, segments)
    routes: Vec<(String, Vec<Seg>)>,
}

enum Seg {
    Lit(String),
    Param(String),
}

/// Parsed once per test process: the file is 13 MB.
fn spec() -> &'static Spec {
    static SPEC: OnceLock<Spec> = OnceLock::new();
    SPEC.get_or_init(|| {
        let p = spec_path();
        let text =
            std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("GitHub OpenAPI description {}: {e}", p.display()));
        let doc: Value = serde_json::from_str(&text).expect("OpenAPI description is JSON");
        let routes = doc["paths"]
            .as_object()
            .expect("paths")
            .keys()
            .map(|t| {
                let segs = t
                    .trim_start_matches('/')
                    .split('/')
                    .map(|s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                        Some(name) => Seg::Param(name.to_string()),
                        None => Seg::Lit(s.to_string()),
                    })
                    .collect();
                (t.clone(), segs)
            })
            .collect();
        Spec { doc, routes }
    })
}

/// Follow a local `$ref` (`#/components/...`) once.
fn deref<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling $ref {r}")),
        None => v,
    }
}

/// The path template that matches `path`, preferring the most literal one
/// (GitHub's router does the same for `/issues/comments/{id}` vs
/// `/issues/{issue_number}`).
fn match_path(path: &str) -> Option<(&'static str, BTreeMap<String, String>)> {
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Option<(usize, &'static str, BTreeMap<String, String>)> = None;
    for (t, tsegs) in &spec().routes {
        if tsegs.len() != segs.len() {
            continue;
        }
        let mut params = BTreeMap::new();
        let mut lits = 0;
        let ok = tsegs.iter().zip(&segs).all(|(ts, s)| match ts {
            Seg::Lit(l) => {
                lits += 1;
                l == s
            }
            Seg::Param(n) => {
                params.insert(n.clone(), s.to_string());
                !s.is_empty()
            }
        });
        if ok && best.as_ref().map(|b| lits > b.0).unwrap_or(true) {
            best = Some((lits, t.as_str(), params));
        }
    }
    best.map(|(_, t, p)| (t, p))
}

/// OpenAPI 3.0 schema → JSON Schema draft 4, with every reachable
/// `#/components/schemas/X` copied into `definitions` (so `$ref`s resolve
/// without handing the validator the whole 13 MB document) and `nullable`
/// turned into a `null` type.
fn to_json_schema(schema: &Value) -> Value {
    let doc = &spec().doc;
    let mut defs = Map::new();
    let mut pending: Vec<String> = Vec::new();
    let mut root = convert(schema, &mut pending);
    let mut done = HashSet::new();
    while let Some(name) = pending.pop() {
        if !done.insert(name.clone()) {
            continue;
        }
        let s = doc["components"]["schemas"].get(&name).unwrap_or_else(|| panic!("no schema {name}"));
        let c = convert(s, &mut pending);
        defs.insert(name, c);
    }
    if let Some(o) = root.as_object_mut() {
        o.insert("definitions".into(), Value::Object(defs));
    }
    root
}

fn convert(s: &Value, refs: &mut Vec<String>) -> Value {
    let Some(o) = s.as_object() else { return s.clone() };
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("unsupported $ref {r}"));
        refs.push(name.to_string());
        // OpenAPI 3.0 ignores siblings of `$ref`; so does draft 4.
        return json!({"$ref": format!("#/definitions/{}", name.replace('~', "~0").replace('/', "~1"))});
    }
    let mut out = Map::new();
    for (k, v) in o {
        let nv = match k.as_str() {
            "properties" | "patternProperties" => Value::Object(
                v.as_object()
                    .map(|m| m.iter().map(|(pk, pv)| (pk.clone(), convert(pv, refs))).collect())
                    .unwrap_or_default(),
            ),
            "items" | "additionalProperties" | "not" => convert(v, refs),
            "allOf" | "anyOf" | "oneOf" => {
                Value::Array(v.as_array().map(|a| a.iter().map(|x| convert(x, refs)).collect()).unwrap_or_default())
            }
            "nullable" | "example" | "examples" | "discriminator" | "readOnly" | "writeOnly" | "deprecated" | "xml"
            | "externalDocs" => continue,
            k if k.starts_with("x-") => continue,
            _ => v.clone(),
        };
        out.insert(k.clone(), nv);
    }
    if o.get("nullable") == Some(&Value::Bool(true)) {
        if let Some(Value::Array(e)) = out.get_mut("enum") {
            e.push(Value::Null);
        }
        match out.get("type").cloned() {
            Some(Value::String(t)) => {
                out.insert("type".into(), json!([t, "null"]));
            }
            _ => return json!({"anyOf": [{"type": "null"}, Value::Object(out)]}),
        }
    }
    Value::Object(out)
}

type Validator = Arc<jsonschema::Validator>;

/// Compiled validators by JSON pointer of the schema in the description.
fn validator(pointer: &str, schema: &Value) -> Validator {
    static CACHE: OnceLock<Mutex<HashMap<String, Validator>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    if let Some(v) = cache.lock().unwrap().get(pointer) {
        return v.clone();
    }
    let js = to_json_schema(schema);
    let v = Arc::new(
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft4)
            .should_validate_formats(false)
            .build(&js)
            .unwrap_or_else(|e| panic!("schema at {pointer} does not compile: {e}")),
    );
    cache.lock().unwrap().insert(pointer.to_string(), v.clone());
    v
}

fn schema_errors(v: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    v.iter_errors(instance).map(|e| format!("{} at `{}`", e, e.instance_path)).collect()
}

/// A string parameter value checked against its (simple) schema.
fn param_ok(schema: &Value, value: &str) -> bool {
    let typ = schema.get("type").and_then(Value::as_str).unwrap_or("string");
    let typed = match typ {
        "integer" => match value.parse::<i64>() {
            Ok(n) => json!(n),
            Err(_) => return false,
        },
        "number" => match value.parse::<f64>() {
            Ok(n) => json!(n),
            Err(_) => return false,
        },
        "boolean" => match value {
            "true" => json!(true),
            "false" => json!(false),
            _ => return false,
        },
        _ => json!(value),
    };
    match schema.get("enum").and_then(Value::as_array) {
        Some(e) => e.contains(&typed),
        None => true,
    }
}

struct Checked {
    template: Option<&'static str>,
    /// `POST` standing in for `PATCH`: real GitHub accepts it, the description
    /// does not document it.
    alias_of_patch: bool,
    violations: Vec<String>,
    /// Answer 404 (unknown route) rather than 422 (bad input).
    not_found: bool,
}

/// Check one request against the description.
fn check_request(method: &str, path: &str, query: &[(String, String)], body: &[u8]) -> Checked {
    let doc = &spec().doc;
    let mut c = Checked { template: None, alias_of_patch: false, violations: Vec::new(), not_found: false };
    let Some((template, path_params)) = match_path(path) else {
        c.violations.push(format!("{method} {path}: no such path in the GitHub API description"));
        c.not_found = true;
        return c;
    };
    c.template = Some(template);
    let item = &doc["paths"][template];
    let m = method.to_ascii_lowercase();
    let op = match item.get(&m) {
        Some(op) => op,
        None if m == "post" && item.get("patch").is_some() => {
            c.alias_of_patch = true;
            c.violations.push(format!("POST {template}: not documented; the documented method is PATCH (octocrab's update_comment sends POST)"));
            &item["patch"]
        }
        None => {
            c.violations.push(format!(
                "{method} {template}: method not documented (documented: {:?})",
                item.as_object().map(|o| o.keys().collect::<Vec<_>>())
            ));
            c.not_found = true;
            return c;
        }
    };
    let op_id = op["operationId"].as_str().unwrap_or("?");

    let params: Vec<&Value> = item["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(op["parameters"].as_array().into_iter().flatten())
        .map(|p| deref(doc, p))
        .collect();
    for p in &params {
        let name = p["name"].as_str().unwrap_or("");
        match p["in"].as_str() {
            Some("path") => match path_params.get(name) {
                Some(v) if param_ok(&p["schema"], v) => {}
                Some(v) => {
                    c.violations.push(format!("{op_id}: path parameter {name}=`{v}` does not match {}", p["schema"]))
                }
                None => c.violations.push(format!("{op_id}: path parameter {name} missing")),
            },
            Some("query") => {
                let vals: Vec<&String> = query.iter().filter(|(k, _)| k == name).map(|(_, v)| v).collect();
                if vals.is_empty() && p["required"] == true {
                    c.violations.push(format!("{op_id}: required query parameter {name} missing"));
                }
                for v in vals {
                    if !param_ok(&p["schema"], v) {
                        c.violations
                            .push(format!("{op_id}: query parameter {name}=`{v}` does not match {}", p["schema"]));
                    }
                }
            }
            _ => {}
        }
    }
    for (k, _) in query {
        if !params.iter().any(|p| p["in"] == "query" && p["name"] == k.as_str()) {
            c.violations.push(format!("{op_id}: undocumented query parameter `{k}`"));
        }
    }

    let rb = op.get("requestBody").map(|r| deref(doc, r));
    let body_json: Option<Value> = if body.is_empty() {
        None
    } else {
        match serde_json::from_slice(body) {
            Ok(v) => Some(v),
            Err(e) => {
                c.violations.push(format!("{op_id}: body is not JSON: {e}"));
                return c;
            }
        }
    };
    match (rb, body_json) {
        (Some(rb), Some(b)) => {
            let Some(schema) = rb.pointer("/content/application~1json/schema") else {
                c.violations.push(format!("{op_id}: JSON body, but the operation takes no application/json body"));
                return c;
            };
            let pointer = format!(
                "/paths/{}/{}/requestBody",
                template.replace('~', "~0").replace('/', "~1"),
                if c.alias_of_patch { "patch" } else { m.as_str() }
            );
            let v = validator(&pointer, schema);
            for e in schema_errors(&v, &b) {
                c.violations.push(format!("{op_id}: request body: {e}"));
            }
        }
        (Some(rb), None) if rb["required"] == true => c.violations.push(format!("{op_id}: request body required")),
        (None, Some(b)) => c.violations.push(format!("{op_id}: operation takes no body, got {b}")),
        _ => {}
    }
    c
}

/// Check a stand-in answer against the documented response (when documented).
fn check_response(method: &str, template: &str, status: u16, body: &Value) -> Vec<String> {
    let doc = &spec().doc;
    let op = &doc["paths"][template][method.to_ascii_lowercase()];
    let Some(resp) = op["responses"].get(status.to_string()) else {
        return Vec::new();
    };
    let resp = deref(doc, resp);
    let Some(schema) = resp.pointer("/content/application~1json/schema") else {
        return if body.is_null() {
            Vec::new()
        } else {
            vec![format!("{method} {template} {status}: documented without a body, stand-in sent one")]
        };
    };
    let pointer = format!(
        "/paths/{}/{}/responses/{status}",
        template.replace('~', "~0").replace('/', "~1"),
        method.to_ascii_lowercase()
    );
    let v = validator(&pointer, schema);
    schema_errors(&v, body)
        .into_iter()
        .map(|e| format!("stand-in response to {method} {template} ({status}) invalid: {e}"))
        .collect()
}

// ---------------------------------------------------------------------------
// State

#[derive(Debug, Clone)]
pub struct StoredComment {
    pub id: u64,
    pub owner: String,
    pub repo: String,
    pub issue: u64,
    pub login: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Debug, Clone)]
pub enum Failure {
    Status(u16),
    /// 403 with `retry-after`, GitHub's secondary rate limit.
    SecondaryRateLimit {
        retry_after: u64,
    },
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path without the API prefix and query.
    pub path: String,
    pub query: Vec<(String, String)>,
    pub body: Option<Value>,
    pub status: u16,
    pub authorized: bool,
}

struct State {
    token: String,
    prefix: String,
    base_url: String,
    bot_login: String,
    comments: BTreeMap<u64, StoredComment>,
    next_id: u64,
    clock: u64,
    failures: VecDeque<Failure>,
    /// Issues whose comments the token may read but not write (fork PRs).
    read_only: HashSet<u64>,
    check_runs: Vec<Value>,
    requests: Vec<Recorded>,
    violations: Vec<String>,
    default_per_page: usize,
}

pub struct StandIn {
    /// Base URL to give as `GITHUB_API_URL` (includes the prefix).
    pub url: String,
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
}

impl StandIn {
    pub fn start(token: &str) -> StandIn {
        Self::start_with_prefix(token, "")
    }

    /// `prefix` like `/api/v3` emulates GitHub Enterprise Server.
    pub fn start_with_prefix(token: &str, prefix: &str) -> StandIn {
        let _ = spec();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let base_url = format!("http://{addr}{prefix}");
        let state = Arc::new(Mutex::new(State {
            token: token.to_string(),
            prefix: prefix.to_string(),
            base_url: base_url.clone(),
            bot_login: "github-actions[bot]".into(),
            comments: BTreeMap::new(),
            // Realistic, large ids: they must survive as u64/int64.
            next_id: 2_000_000_001,
            clock: 0,
            failures: VecDeque::new(),
            read_only: HashSet::new(),
            check_runs: Vec::new(),
            requests: Vec::new(),
            violations: Vec::new(),
            default_per_page: 30,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, sp) = (state.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if sp.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let st = st.clone();
                std::thread::spawn(move || serve_connection(conn, st));
            }
        });
        StandIn { url: base_url, addr, state, stop }
    }

    pub fn seed_comment(&self, owner: &str, repo: &str, issue: u64, login: &str, body: &str) -> u64 {
        let mut s = self.state.lock().unwrap();
        insert_comment(&mut s, owner, repo, issue, login, body)
    }

    /// Comments on `issue`, oldest first.
    pub fn comments(&self, issue: u64) -> Vec<StoredComment> {
        self.state.lock().unwrap().comments.values().filter(|c| c.issue == issue).cloned().collect()
    }

    /// Bodies of the comments that carry a bundlegate marker.
    pub fn bundlegate_comments(&self, issue: u64) -> Vec<StoredComment> {
        self.comments(issue).into_iter().filter(|c| c.body.starts_with("<!-- bundlegate:")).collect()
    }

    pub fn fail_next(&self, n: usize, status: u16) {
        let mut s = self.state.lock().unwrap();
        for _ in 0..n {
            s.failures.push_back(Failure::Status(status));
        }
    }

    pub fn secondary_rate_limit_next(&self, n: usize, retry_after: u64) {
        let mut s = self.state.lock().unwrap();
        for _ in 0..n {
            s.failures.push_back(Failure::SecondaryRateLimit { retry_after });
        }
    }

    /// The token can read but not write this PR's comments (fork PR).
    pub fn read_only(&self, issue: u64) {
        self.state.lock().unwrap().read_only.insert(issue);
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().unwrap().requests.clone()
    }

    /// `(method, path)` of every request, for asserting call sequences.
    pub fn calls(&self) -> Vec<(String, String)> {
        self.requests().into_iter().map(|r| (r.method, r.path)).collect()
    }

    pub fn violations(&self) -> Vec<String> {
        self.state.lock().unwrap().violations.clone()
    }

    pub fn assert_no_violations(&self) {
        let v = self.violations();
        assert!(v.is_empty(), "requests that do not match GitHub's API description:\n{}", v.join("\n"));
    }

    pub fn check_runs(&self) -> Vec<Value> {
        self.state.lock().unwrap().check_runs.clone()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(200));
    }
}

fn now(s: &mut State) -> String {
    s.clock += 1;
    let t = chrono::DateTime::from_timestamp(1_767_225_600 + s.clock as i64, 0).unwrap();
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn insert_comment(s: &mut State, owner: &str, repo: &str, issue: u64, login: &str, body: &str) -> u64 {
    let id = s.next_id;
    s.next_id += 1;
    let t = now(s);
    s.comments.insert(
        id,
        StoredComment {
            id,
            owner: owner.into(),
            repo: repo.into(),
            issue,
            login: login.into(),
            body: body.into(),
            created_at: t.clone(),
            updated_at: t,
        },
    );
    id
}

fn user_json(base: &str, login: &str) -> Value {
    let bot = login.ends_with("[bot]");
    let u = format!("{base}/users/{login}");
    json!({
        "login": login, "id": if bot { 41898282 } else { 583231 }, "node_id": "MDQ6VXNlcjE=",
        "avatar_url": "https://avatars.githubusercontent.com/u/1?v=4", "gravatar_id": "",
        "url": u, "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{u}/followers"), "following_url": format!("{u}/following{{/other_user}}"),
        "gists_url": format!("{u}/gists{{/gist_id}}"), "starred_url": format!("{u}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{u}/subscriptions"), "organizations_url": format!("{u}/orgs"),
        "repos_url": format!("{u}/repos"), "events_url": format!("{u}/events{{/privacy}}"),
        "received_events_url": format!("{u}/received_events"),
        "type": if bot { "Bot" } else { "User" }, "site_admin": false
    })
}

fn comment_json(base: &str, c: &StoredComment) -> Value {
    json!({
        "id": c.id,
        "node_id": format!("IC_kwDO{}", c.id),
        "url": format!("{base}/repos/{}/{}/issues/comments/{}", c.owner, c.repo, c.id),
        "html_url": format!("https://github.com/{}/{}/pull/{}#issuecomment-{}", c.owner, c.repo, c.issue, c.id),
        "body": c.body,
        "user": user_json(base, &c.login),
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "issue_url": format!("{base}/repos/{}/{}/issues/{}", c.owner, c.repo, c.issue),
        "author_association": if c.login.ends_with("[bot]") { "NONE" } else { "CONTRIBUTOR" },
        "performed_via_github_app": app_json(base, &c.login)
    })
}

/// The GitHub App a bot's comment was written through, as github.com
/// reports it (`github-actions[bot]` writes through the `github-actions`
/// app); `null` for a user's comment.
fn app_json(base: &str, login: &str) -> Value {
    let Some(slug) = login.strip_suffix("[bot]") else { return Value::Null };
    let actions = slug == "github-actions";
    json!({
        "id": if actions { 15368 } else { 2740 },
        "slug": slug,
        "node_id": if actions { "MDM6QXBwMTUzNjg=" } else { "MDM6QXBwMjc0MA==" },
        "owner": user_json(base, "github"),
        "name": if actions { "GitHub Actions".to_string() } else { slug.to_string() },
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": format!("https://github.com/apps/{slug}"),
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2019-12-10T19:04:12Z",
        "permissions": {"actions": "write", "issues": "write", "metadata": "read", "pull_requests": "write"},
        "events": ["check_run", "pull_request", "push"]
    })
}

// ---------------------------------------------------------------------------
// HTTP

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Option<Value>,
}

impl Response {
    fn json(status: u16, body: Value) -> Response {
        Response { status, headers: Vec::new(), body: Some(body) }
    }
    fn error(status: u16, message: &str) -> Response {
        Response::json(
            status,
            json!({"message": message, "documentation_url": "https://docs.github.com/rest", "status": status.to_string()}),
        )
    }
}

fn read_request(r: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else { return Ok(None) };
    let (method, target) = (method.to_string(), target.to_string());
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        if r.read_line(&mut h)? == 0 {
            return Ok(None);
        }
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let mut req = Request { method, target, headers, body: Vec::new() };
    if req.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            r.read_line(&mut size)?;
            let n = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk)?;
            if n == 0 {
                break;
            }
            req.body.extend_from_slice(&chunk[..n]);
        }
    } else if let Some(n) = req.header("content-length").and_then(|v| v.parse::<usize>().ok()) {
        req.body = vec![0; n];
        r.read_exact(&mut req.body)?;
    }
    Ok(Some(req))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

fn serve_connection(stream: TcpStream, state: Arc<Mutex<State>>) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut w = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut r = BufReader::new(stream);
    while let Ok(Some(req)) = read_request(&mut r) {
        let close = req.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
        let resp = handle(&state, &req);
        let body = match &resp.body {
            Some(b) => serde_json::to_vec(b).unwrap(),
            None => Vec::new(),
        };
        let mut head =
            format!("HTTP/1.1 {} {}\r\ncontent-length: {}\r\n", resp.status, reason(resp.status), body.len());
        if resp.body.is_some() {
            head.push_str("content-type: application/json; charset=utf-8\r\n");
        }
        head.push_str("x-github-api-version-selected: 2022-11-28\r\n");
        for (k, v) in &resp.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(if close { "connection: close\r\n\r\n" } else { "connection: keep-alive\r\n\r\n" });
        if w.write_all(head.as_bytes()).and_then(|_| w.write_all(&body)).and_then(|_| w.flush()).is_err() || close {
            break;
        }
    }
}

fn parse_query(q: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

fn handle(state: &Arc<Mutex<State>>, req: &Request) -> Response {
    let mut s = state.lock().unwrap();
    let (raw_path, raw_query) = req.target.split_once('?').unwrap_or((req.target.as_str(), ""));
    let query = parse_query(raw_query);
    let expected = [format!("Bearer {}", s.token), format!("token {}", s.token)];
    let authorized = req.header("authorization").is_some_and(|a| expected.iter().any(|e| e == a));
    let body_json = if req.body.is_empty() { None } else { serde_json::from_slice(&req.body).ok() };

    let Some(path) = raw_path.strip_prefix(s.prefix.as_str()).filter(|p| p.starts_with('/')) else {
        let v = format!("{} {raw_path}: outside the API base {}", req.method, s.prefix);
        s.violations.push(v);
        s.requests.push(Recorded {
            method: req.method.clone(),
            path: raw_path.into(),
            query,
            body: body_json,
            status: 404,
            authorized,
        });
        return Response::error(404, "Not Found");
    };
    let path = path.to_string();
    let record = |s: &mut State, status: u16| {
        s.requests.push(Recorded {
            method: req.method.clone(),
            path: path.clone(),
            query: query.clone(),
            body: body_json.clone(),
            status,
            authorized,
        });
    };

    let checked = check_request(&req.method, &path, &query, &req.body);
    s.violations.extend(checked.violations.iter().cloned());
    if !authorized {
        s.violations.push(format!("{} {path}: missing or wrong Authorization header", req.method));
        record(&mut s, 401);
        return Response::error(401, "Requires authentication");
    }
    if let Some(f) = s.failures.pop_front() {
        let resp = match f {
            Failure::Status(code) => Response::error(code, "Server Error"),
            Failure::SecondaryRateLimit { retry_after } => {
                let mut r = Response::error(
                    403,
                    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                );
                r.headers.push(("retry-after".into(), retry_after.to_string()));
                r
            }
        };
        record(&mut s, resp.status);
        return resp;
    }
    let Some(template) = checked.template.filter(|_| !checked.not_found) else {
        record(&mut s, 404);
        return Response::error(404, "Not Found");
    };
    // Bad input is 422 like GitHub, except the POST-for-PATCH alias GitHub serves.
    if checked.violations.len() > usize::from(checked.alias_of_patch) {
        record(&mut s, 422);
        return Response::error(422, "Validation Failed");
    }
    let method = if checked.alias_of_patch { "PATCH" } else { req.method.as_str() };
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let resp = route(&mut s, method, template, &segs, &query, body_json.as_ref());
    if checked.alias_of_patch || resp.status < 400 || resp.status == 404 || resp.status == 403 {
        let v = check_response(method, template, resp.status, resp.body.as_ref().unwrap_or(&Value::Null));
        s.violations.extend(v);
    }
    record(&mut s, resp.status);
    resp
}

fn route(
    s: &mut State,
    method: &str,
    template: &str,
    segs: &[&str],
    query: &[(String, String)],
    body: Option<&Value>,
) -> Response {
    let (owner, repo) = (segs[1].to_string(), segs[2].to_string());
    let base = s.base_url.clone();
    match (method, template) {
        ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments") => {
            let issue: u64 = segs[4].parse().unwrap();
            let q = |k: &str| query.iter().find(|(qk, _)| qk == k).and_then(|(_, v)| v.parse::<usize>().ok());
            let per_page = q("per_page").unwrap_or(s.default_per_page).clamp(1, 100);
            let page = q("page").unwrap_or(1).max(1);
            let all: Vec<&StoredComment> =
                s.comments.values().filter(|c| c.issue == issue && c.owner == owner && c.repo == repo).collect();
            let last = all.len().div_ceil(per_page).max(1);
            let items: Vec<Value> =
                all.iter().skip((page - 1) * per_page).take(per_page).map(|c| comment_json(&base, c)).collect();
            let link_to = |p: usize| {
                format!("<{base}/repos/{owner}/{repo}/issues/{issue}/comments?per_page={per_page}&page={p}>")
            };
            let mut links = Vec::new();
            if page < last {
                links.push(format!("{}; rel=\"next\"", link_to(page + 1)));
                links.push(format!("{}; rel=\"last\"", link_to(last)));
            }
            if page > 1 {
                links.push(format!("{}; rel=\"first\"", link_to(1)));
                links.push(format!("{}; rel=\"prev\"", link_to(page - 1)));
            }
            let mut r = Response::json(200, Value::Array(items));
            if !links.is_empty() {
                r.headers.push(("link".into(), links.join(", ")));
            }
            r
        }
        ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments") => {
            let issue: u64 = segs[4].parse().unwrap();
            if s.read_only.contains(&issue) {
                return Response::error(403, "Resource not accessible by integration");
            }
            let text = body.and_then(|b| b["body"].as_str()).unwrap_or_default().to_string();
            if text.chars().count() > 65_536 {
                return Response::error(422, "Validation Failed: body is too long (maximum is 65536 characters)");
            }
            let login = s.bot_login.clone();
            let id = insert_comment(s, &owner, &repo, issue, &login, &text);
            Response::json(201, comment_json(&base, &s.comments[&id]))
        }
        (m @ ("GET" | "PATCH" | "DELETE"), "/repos/{owner}/{repo}/issues/comments/{comment_id}") => {
            let id: u64 = segs[5].parse().unwrap();
            let Some(c) = s.comments.get(&id).filter(|c| c.owner == owner && c.repo == repo).cloned() else {
                return Response::error(404, "Not Found");
            };
            if m != "GET" && s.read_only.contains(&c.issue) {
                return Response::error(403, "Resource not accessible by integration");
            }
            match m {
                "GET" => Response::json(200, comment_json(&base, &c)),
                "PATCH" => {
                    let text = body.and_then(|b| b["body"].as_str()).unwrap_or_default().to_string();
                    if text.chars().count() > 65_536 {
                        return Response::error(
                            422,
                            "Validation Failed: body is too long (maximum is 65536 characters)",
                        );
                    }
                    let t = now(s);
                    let c = s.comments.get_mut(&id).unwrap();
                    c.body = text;
                    c.updated_at = t;
                    let c = c.clone();
                    Response::json(200, comment_json(&base, &c))
                }
                _ => {
                    s.comments.remove(&id);
                    Response { status: 204, headers: Vec::new(), body: None }
                }
            }
        }
        ("POST", "/repos/{owner}/{repo}/check-runs") => {
            let req = body.cloned().unwrap_or_default();
            let id = s.next_id;
            s.next_id += 1;
            let t = now(s);
            let completed = req["conclusion"].is_string() || req["status"] == "completed";
            let run = json!({
                "id": id,
                "node_id": format!("CR_kwDO{id}"),
                "head_sha": req["head_sha"],
                "name": req["name"],
                "url": format!("{base}/repos/{owner}/{repo}/check-runs/{id}"),
                "html_url": format!("https://github.com/{owner}/{repo}/runs/{id}"),
                "details_url": req.get("details_url").cloned().unwrap_or(Value::Null),
                "status": if completed { "completed" } else { req["status"].as_str().unwrap_or("queued") },
                "conclusion": req.get("conclusion").cloned().unwrap_or(Value::Null),
                "started_at": t,
                "completed_at": if completed { json!(t) } else { Value::Null },
                "external_id": req.get("external_id").cloned().unwrap_or(Value::Null),
                "check_suite": {"id": id + 1},
                "output": {
                    "title": req["output"]["title"],
                    "summary": req["output"]["summary"],
                    "text": req["output"].get("text").cloned().unwrap_or(Value::Null),
                    "annotations_count": 0,
                    "annotations_url": format!("{base}/repos/{owner}/{repo}/check-runs/{id}/annotations")
                },
                "app": null,
                "pull_requests": []
            });
            s.check_runs.push(run.clone());
            Response::json(201, run)
        }
        _ => {
            s.violations.push(format!("{method} {template}: documented, but the stand-in does not implement it"));
            Response::error(404, "Not Found")
        }
    }
}

// ---------------------------------------------------------------------------
// Tests of the stand-in itself

// ---------------------------------------------------------------------------
// Validation for stand-ins defined in other test modules (the watch tests'
// pull-request stand-in). Appended for issue #7; nothing above changes.

/// Check one request against the description: the matched path template
/// (None for an unknown path or method) and every violation found.
pub fn validate_request(
    method: &str,
    path: &str,
    query: &[(String, String)],
    body: &[u8],
) -> (Option<&'static str>, Vec<String>) {
    let c = check_request(method, path, query, body);
    (c.template.filter(|_| !c.not_found), c.violations)
}

/// Check a stand-in's answer against the documented response schema.
pub fn validate_response(method: &str, template: &str, status: u16, body: &Value) -> Vec<String> {
    check_response(method, template, status, body)
}

/// GitHub's own documented example `#/components/examples/<name>` (its `value`).
pub fn documented_example(name: &str) -> Value {
    spec().doc["components"]["examples"][name]["value"].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(s: &StandIn, method: &str, path_and_query: &str, body: Option<&str>, token: &str) -> (u16, String, String) {
        let mut conn = TcpStream::connect(s.addr).unwrap();
        let body = body.unwrap_or("");
        let req = format!(
            "{method} {}{path_and_query} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            s.state.lock().unwrap().prefix,
            body.len()
        );
        conn.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        conn.read_to_string(&mut out).unwrap();
        let status = out[9..12].parse().unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        (status, head.to_string(), body.to_string())
    }

    #[test]
    fn github_standin_validates_paths_methods_params_and_bodies() {
        let s = StandIn::start("t0k");
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t0k").0, 200);
        s.assert_no_violations();

        assert_eq!(raw(&s, "GET", "/repos/o/r/no-such-thing/7", None, "t0k").0, 404);
        assert_eq!(raw(&s, "PUT", "/repos/o/r/issues/7/comments", Some("{}"), "t0k").0, 404);
        assert_eq!(raw(&s, "POST", "/repos/o/r/issues/7/comments", Some(r#"{"text":"x"}"#), "t0k").0, 422);
        assert_eq!(raw(&s, "POST", "/repos/o/r/issues/7/comments", Some(r#"{"body":5}"#), "t0k").0, 422);
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments?per_page=lots", None, "t0k").0, 422);
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments?bogus=1", None, "t0k").0, 422);
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/seven/comments", None, "t0k").0, 422);
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "wrong").0, 401);
        let v = s.violations();
        assert_eq!(v.len(), 8, "{v:#?}");
        assert!(v.iter().any(|m| m.contains("no such path")));
        assert!(v.iter().any(|m| m.contains("method not documented")));
        assert!(v.iter().any(|m| m.contains("\"body\" is a required property")), "{v:#?}");
        assert!(v.iter().any(|m| m.contains("undocumented query parameter `bogus`")));
        assert!(v.iter().any(|m| m.contains("issue_number=`seven`")));
        assert!(v.iter().any(|m| m.contains("Authorization")));
    }

    #[test]
    fn github_standin_paginates_like_github() {
        let s = StandIn::start("t");
        for i in 0..65 {
            s.seed_comment("o", "r", 7, "someone", &format!("comment {i}"));
        }
        s.seed_comment("o", "r", 8, "someone", "other PR");
        let (st, head, body) = raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t");
        assert_eq!(st, 200);
        let page: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(page.len(), 30, "default per_page is 30");
        assert!(head.contains("per_page=30&page=2>; rel=\"next\"") && head.contains("page=3>; rel=\"last\""), "{head}");
        let (_, head, body) = raw(&s, "GET", "/repos/o/r/issues/7/comments?per_page=100&page=1", None, "t");
        assert_eq!(serde_json::from_str::<Vec<Value>>(&body).unwrap().len(), 65);
        assert!(!head.to_ascii_lowercase().contains("link:"), "{head}");
        let (_, _, body) = raw(&s, "GET", "/repos/o/r/issues/7/comments?page=3", None, "t");
        assert_eq!(serde_json::from_str::<Vec<Value>>(&body).unwrap().len(), 5);
        s.assert_no_violations();
    }

    #[test]
    fn github_standin_accepts_octocrab_post_for_patch_but_flags_it() {
        let s = StandIn::start("t");
        let id = s.seed_comment("o", "r", 7, "github-actions[bot]", "old");
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let crab = octocrab::Octocrab::builder()
                .base_uri(s.url.as_str())
                .unwrap()
                .personal_token("t".to_string())
                .build()
                .unwrap();
            // octocrab's helper: what it really sends must still work...
            crab.issues("o", "r").update_comment(id.into(), "new").await.unwrap();
        });
        assert_eq!(s.comments(7)[0].body, "new");
        assert_eq!(s.calls(), vec![("POST".to_string(), format!("/repos/o/r/issues/comments/{id}"))]);
        // ...but it is not what GitHub documents, so it is flagged.
        let v = s.violations();
        assert_eq!(v.len(), 1, "{v:#?}");
        assert!(v[0].contains("documented method is PATCH"), "{v:#?}");
    }

    #[test]
    fn github_standin_injects_failures_in_order() {
        let s = StandIn::start("t");
        s.fail_next(1, 502);
        s.secondary_rate_limit_next(1, 7);
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t").0, 502);
        let (st, head, _) = raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t");
        assert_eq!(st, 403);
        assert!(head.contains("retry-after: 7"));
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t").0, 200);
        s.read_only(7);
        assert_eq!(raw(&s, "POST", "/repos/o/r/issues/7/comments", Some(r#"{"body":"x"}"#), "t").0, 403);
        s.assert_no_violations();
    }

    #[test]
    fn github_standin_serves_under_a_ghes_prefix() {
        let s = StandIn::start_with_prefix("t", "/api/v3");
        assert!(s.url.ends_with("/api/v3"));
        assert_eq!(raw(&s, "GET", "/repos/o/r/issues/7/comments", None, "t").0, 200);
        s.assert_no_violations();
    }
}
