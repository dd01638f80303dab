//! The Kubernetes API stand-in: Application, Deployment, ReplicaSet, Pod,
//! Event, EndpointSlice, InferenceService and Knative Revision /
//! Configuration / Service objects in their real shapes from a scripted
//! timeline, every request recorded (all must be GET). One stand-in, reached two ways: over
//! HTTP with a kubeconfig for the binary ([`Cluster`]), and in-process as the
//! `tower` service under a `kube::Client` for library tests
//! ([`StandIn::client`]).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Value};

pub use crate::support::http::{Handler, Req, Server};

/// The cluster as it is from `at_ms` after the first request on.
#[derive(Clone)]
pub struct Frame {
    pub at_ms: u64,
    pub app: Option<Value>,
    /// Deployments, ReplicaSets, Pods and Events (by `kind`).
    pub objects: Vec<Value>,
}

fn status_404(what: &str) -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": format!("{what} not found"), "reason": "NotFound", "code": 404})
}

fn labels_match(o: &Value, sel: Option<&str>) -> bool {
    let Some(sel) = sel else { return true };
    sel.split(',').all(|term| match term.split_once('=') {
        Some((k, v)) => o["metadata"]["labels"][k.trim()].as_str() == Some(v.trim()),
        None => false,
    })
}

/// The API's answers and the record of what was asked.
pub struct StandIn {
    frames: Vec<Frame>,
    first: Mutex<Option<Instant>>,
    requests: Mutex<Vec<(String, String)>>,
    unknown: Mutex<Vec<String>>,
}

impl StandIn {
    pub fn new(frames: Vec<Frame>) -> Arc<StandIn> {
        Arc::new(StandIn {
            frames,
            first: Mutex::new(None),
            requests: Mutex::new(Vec::new()),
            unknown: Mutex::new(Vec::new()),
        })
    }

    /// The answer to one request, as the API server would give it.
    pub fn answer(&self, method: &str, path: &str, query: &[(String, String)]) -> (u16, Value) {
        let t0 = *self.first.lock().unwrap().get_or_insert_with(Instant::now);
        let ms = t0.elapsed().as_millis() as u64;
        let frame = self.frames.iter().rev().find(|f| f.at_ms <= ms).unwrap_or(&self.frames[0]);
        let full = if query.is_empty() {
            path.to_string()
        } else {
            format!("{path}?{}", url::form_urlencoded::Serializer::new(String::new()).extend_pairs(query).finish())
        };
        self.requests.lock().unwrap().push((method.to_string(), full));
        if method != "GET" {
            self.unknown.lock().unwrap().push(format!("{method} {path}"));
            return (
                405,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 405, "reason": "MethodNotAllowed"}),
            );
        }
        let selector = query.iter().find(|(k, _)| k == "labelSelector").map(|(_, v)| v.as_str());
        let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let list = |kind: &str, api_version: &str, ns: &str| {
            let items: Vec<Value> = frame
                .objects
                .iter()
                .filter(|o| o["kind"] == kind && o["metadata"]["namespace"] == ns && labels_match(o, selector))
                .cloned()
                .collect();
            (
                200,
                json!({"apiVersion": api_version, "kind": format!("{kind}List"), "metadata": {"resourceVersion": "48211"}, "items": items}),
            )
        };
        match segs.as_slice() {
            ["apis", "argoproj.io", "v1alpha1", "namespaces", ns, "applications", name] => match &frame.app {
                Some(a) if a["metadata"]["name"] == *name && a["metadata"]["namespace"] == *ns => (200, a.clone()),
                _ => (404, status_404(&format!("applications.argoproj.io \"{name}\""))),
            },
            ["apis", "apps", "v1", "namespaces", ns, "deployments"] => list("Deployment", "apps/v1", ns),
            ["apis", "apps", "v1", "namespaces", ns, "replicasets"] => list("ReplicaSet", "apps/v1", ns),
            ["api", "v1", "namespaces", ns, "pods"] => list("Pod", "v1", ns),
            ["api", "v1", "namespaces", ns, "events"] => list("Event", "v1", ns),
            ["apis", "discovery.k8s.io", "v1", "namespaces", ns, "endpointslices"] => {
                list("EndpointSlice", "discovery.k8s.io/v1", ns)
            }
            ["apis", "serving.kserve.io", "v1beta1", "namespaces", ns, "inferenceservices"] => {
                list("InferenceService", "serving.kserve.io/v1beta1", ns)
            }
            ["apis", "serving.kserve.io", "v1alpha2", "namespaces", ns, "llminferenceservices"] => {
                list("LLMInferenceService", "serving.kserve.io/v1alpha2", ns)
            }
            // Knative's kinds, by API group: its `Service` is not core/v1's.
            ["apis", "serving.knative.dev", "v1", "namespaces", ns, plural] => match *plural {
                "revisions" => list("Revision", "serving.knative.dev/v1", ns),
                "configurations" => list("Configuration", "serving.knative.dev/v1", ns),
                "services" => {
                    let items: Vec<Value> = frame
                        .objects
                        .iter()
                        .filter(|o| {
                            o["apiVersion"] == "serving.knative.dev/v1"
                                && o["kind"] == "Service"
                                && o["metadata"]["namespace"] == *ns
                        })
                        .cloned()
                        .collect();
                    (
                        200,
                        json!({"apiVersion": "serving.knative.dev/v1", "kind": "ServiceList", "metadata": {"resourceVersion": "48211"}, "items": items}),
                    )
                }
                _ => {
                    self.unknown.lock().unwrap().push(format!("GET {path}"));
                    (404, status_404(path))
                }
            },
            _ => {
                self.unknown.lock().unwrap().push(format!("GET {path}"));
                (404, status_404(path))
            }
        }
    }

    pub fn requests(&self) -> Vec<(String, String)> {
        self.requests.lock().unwrap().clone()
    }

    /// Read-only: every request was a GET on a path the stand-in knows.
    pub fn assert_read_only(&self) {
        let r = self.requests();
        assert!(!r.is_empty(), "the cluster was never asked");
        assert!(r.iter().all(|(m, _)| m == "GET"), "non-GET requests: {r:?}");
        let u = self.unknown.lock().unwrap().clone();
        assert!(u.is_empty(), "requests the stand-in does not serve: {u:?}");
    }

    /// A `kube::Client` whose requests this stand-in answers in-process
    /// (`kube::Client::new` over a `tower` service), default namespace
    /// `ai-lab`. Must be called inside a Tokio runtime (the client spawns
    /// its buffer task).
    pub fn client(self: &Arc<Self>) -> kube::Client {
        let me = self.clone();
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let me = me.clone();
            async move {
                let query: Vec<(String, String)> =
                    url::form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes()).into_owned().collect();
                let (status, body) = me.answer(req.method().as_str(), req.uri().path(), &query);
                let body = kube::client::Body::from(serde_json::to_vec(&body).expect("JSON"));
                http::Response::builder().status(status).header("content-type", "application/json").body(body)
            }
        });
        kube::Client::new(svc, "ai-lab")
    }
}

/// The stand-in over HTTP, with a kubeconfig naming it, for the binary.
pub struct Cluster {
    /// Held so the server lives as long as the test's cluster.
    _server: Server,
    pub standin: Arc<StandIn>,
    pub kubeconfig: PathBuf,
}

/// The one kubeconfig writer of the tests: a cluster at 127.0.0.1:`port`
/// (plain HTTP), with a bearer `token` or none, and a default `namespace`.
pub fn write_kubeconfig(path: &Path, port: u16, token: Option<&str>, namespace: Option<&str>) -> PathBuf {
    let user = match token {
        Some(t) => format!("\n    token: {t}"),
        None => " {}".to_string(),
    };
    let ns = namespace.map(|n| format!("\n    namespace: {n}")).unwrap_or_default();
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:{user}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u{ns}\ncurrent-context: c\n"
    );
    std::fs::write(path, text).unwrap();
    path.to_path_buf()
}

/// A port nothing listens on (bound, then released).
pub fn dead_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl Cluster {
    pub fn start(frames: Vec<Frame>, dir: &Path) -> Cluster {
        let standin = StandIn::new(frames);
        let s = standin.clone();
        let h: Handler = Arc::new(move |req: &Req| s.answer(&req.method, &req.path, &req.query));
        let server = Server::start(0, h);
        let kubeconfig =
            write_kubeconfig(&dir.join("kubeconfig.yaml"), server.port, Some("read-only-test-token"), Some("ai-lab"));
        Cluster { _server: server, standin, kubeconfig }
    }

    pub fn requests(&self) -> Vec<(String, String)> {
        self.standin.requests()
    }

    pub fn assert_read_only(&self) {
        self.standin.assert_read_only()
    }
}
