//! A real Kubernetes control plane for the tests that need the real judge:
//! etcd, kube-apiserver, kube-controller-manager, kube-scheduler (all
//! Kubernetes v1.36, built from Go modules by `scripts/build-control-plane`)
//! and kwok for nodes and pod lifecycles without a kubelet.
//!
//! Started once per test process ([`cluster`]), on free 127.0.0.1 ports, in
//! a temporary folder: etcd's data, the API server's self-signed serving
//! certificate (`--cert-dir`), a service-account key pair made with openssl,
//! a token file whose one token is in `system:masters`, and the kubeconfig
//! every component, the tests and the bundlegate binary use. Each process
//! goes through `support::server` (its own process group, recorded in the
//! run's registry for `scripts/check-no-leftovers`). Statics are never
//! dropped, so two things stop them with the test process: they are started
//! from a thread that never ends with `PR_SET_PDEATHSIG` (killed when the
//! test process dies, even by SIGKILL), and an `atexit` hook kills their
//! groups, reaps them and removes the folder on a normal exit.
//!
//! Readiness is polled (`/health`, `/readyz`, `/healthz`), never slept for.
//! The binaries come from `BUNDLEGATE_CONTROL_PLANE` (a folder; exported by
//! `scripts/install-test-deps`): without it the tests fail, unless
//! `BUNDLEGATE_SKIP_SERVERS=1` skips them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::server::{self, Server};

/// The components, in the order they start.
const BINARIES: [&str; 5] = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"];

/// Nodes kwok plays the kubelet for carry this annotation.
pub const KWOK_ANNOTATION: (&str, &str) = ("kwok.x-k8s.io/node", "fake");

/// How long one component may take to become ready (a cold page cache on a
/// busy 2-core machine: the API server's first start takes seconds).
const READY_WITHIN: Duration = Duration::from_secs(90);

pub struct Cluster {
    /// Admin kubeconfig (token in `system:masters`, the API server's CA).
    pub kubeconfig: PathBuf,
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// What the API server reports at `/version` (`gitVersion`).
    pub version: String,
    dir: PathBuf,
}

/// The cluster, `None` when skipped, or why it did not start (every test
/// that asks fails with that message; the start is not retried).
static CLUSTER: OnceLock<Result<Option<Cluster>, String>> = OnceLock::new();
/// The running components' pids (process group leaders), for the exit hook.
static PIDS: Mutex<Vec<u32>> = Mutex::new(Vec::new());
/// The cluster's folder, removed by the exit hook.
static DIR: Mutex<Option<PathBuf>> = Mutex::new(None);
static NAMESPACES: AtomicUsize = AtomicUsize::new(0);

/// The process's control plane, started on first use; `None` only when its
/// binaries are absent and `BUNDLEGATE_SKIP_SERVERS` is set.
pub fn cluster() -> Option<&'static Cluster> {
    match CLUSTER.get_or_init(start) {
        Ok(c) => c.as_ref(),
        Err(e) => panic!("the control plane did not start: {e}"),
    }
}

/// Why the control plane did not start (at the first attempt or at both),
/// kept where scripts/test prints it after the run (`BUNDLEGATE_TEST_NOTES`):
/// a CI log shows only the end of the output.
fn note_failure(why: &str) {
    if let Some(dir) = std::env::var_os("BUNDLEGATE_TEST_NOTES") {
        let dir = PathBuf::from(dir);
        let _ = std::fs::create_dir_all(&dir);
        let _ = std::fs::write(dir.join("control-plane.txt"), format!("the control plane: {why}\n"));
    }
}

fn start() -> Result<Option<Cluster>, String> {
    let bin = match std::env::var_os("BUNDLEGATE_CONTROL_PLANE") {
        Some(d) => PathBuf::from(d),
        None if std::env::var_os("BUNDLEGATE_SKIP_SERVERS").is_some() => {
            eprintln!("skipping: BUNDLEGATE_CONTROL_PLANE is not set and BUNDLEGATE_SKIP_SERVERS is set");
            return Ok(None);
        }
        None => return Err(
            "BUNDLEGATE_CONTROL_PLANE is not set: run the tests through scripts/test (or `source scripts/build-control-plane` first, a cold build takes minutes) or set BUNDLEGATE_SKIP_SERVERS=1 to skip the real-cluster tests"
            .into()),
    };
    for b in BINARIES {
        if !bin.join(b).is_file() {
            return Err(format!(
                "{} is missing: run scripts/build-control-plane (BUNDLEGATE_CONTROL_PLANE={})",
                bin.join(b).display(),
                bin.display()
            ));
        }
    }
    // Started from a thread that lives as long as the process: the
    // components' parent-death signal fires when that thread ends. One
    // more attempt, in a fresh folder on fresh ports, when the first fails:
    // a port another test's server took between `free_port` and the bind,
    // or a component slow on a loaded machine, is not the code under test.
    // Every failed attempt is noted for the end of the log.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("control-plane".into())
        .spawn(move || {
            let mut failures = Vec::new();
            for attempt in 1..=2 {
                match std::panic::catch_unwind(|| boot(&bin)) {
                    Ok(c) => {
                        if !failures.is_empty() {
                            note_failure(&format!("{} (attempt {attempt} started)", failures.join("\n")));
                        }
                        let _ = tx.send(Ok(c));
                        loop {
                            std::thread::park();
                        }
                    }
                    Err(e) => {
                        // The components started so far were stopped as boot unwound.
                        PIDS.lock().unwrap_or_else(|e| e.into_inner()).clear();
                        if let Some(d) = DIR.lock().unwrap_or_else(|e| e.into_inner()).take() {
                            let _ = std::fs::remove_dir_all(d);
                        }
                        let why = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "a panic without a message".into());
                        failures.push(format!("attempt {attempt}: {why}"));
                    }
                }
            }
            let why = failures.join("\n");
            note_failure(&why);
            let _ = tx.send(Err(why));
        })
        .unwrap();
    rx.recv().unwrap().map(Some)
}

/// Kill every component's group, reap it, remove the folder: at exit.
extern "C" fn stop_all() {
    let pids = std::mem::take(&mut *PIDS.lock().unwrap_or_else(|e| e.into_inner()));
    for pid in pids.iter().rev() {
        // SAFETY: plain syscalls on pids this process started and has not reaped.
        unsafe {
            libc::kill(-(*pid as i32), libc::SIGKILL);
            libc::waitpid(*pid as i32, std::ptr::null_mut(), 0);
        }
    }
    if let Some(d) = DIR.lock().unwrap_or_else(|e| e.into_inner()).take() {
        let _ = std::fs::remove_dir_all(d);
    }
}

const FOLDER_PREFIX: &str = "bundlegate-cluster-";

/// A test process killed outright (SIGKILL: a timeout) runs no exit hook:
/// its components die with it, its folder stays. Remove the folders whose
/// owner (pid and start time) is no longer running.
fn remove_stale_folders() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for e in entries.flatten() {
        if !e.file_name().to_string_lossy().starts_with(FOLDER_PREFIX) {
            continue;
        }
        let owner = std::fs::read_to_string(e.path().join("owner")).unwrap_or_default();
        let mut f = owner.split_whitespace().map(|x| x.parse::<u64>().ok());
        if let (Some(Some(pid)), Some(Some(start))) = (f.next(), f.next()) {
            if server::start_time(pid as u32) != Some(start) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One component: its log file, its process (killed with the test process).
fn launch(dir: &Path, name: &str, cmd: &mut Command) -> Server {
    use std::os::unix::process::CommandExt;
    let log = std::fs::File::create(dir.join(format!("{name}.log"))).unwrap();
    cmd.stdin(Stdio::null()).stdout(log.try_clone().unwrap()).stderr(log);
    // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let s = server::spawn(cmd);
    PIDS.lock().unwrap().push(s.id());
    s
}

/// The last lines of a component's log, for a failure message.
fn log_tail(dir: &Path, name: &str) -> String {
    let text = std::fs::read_to_string(dir.join(format!("{name}.log"))).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Poll `ready` until it holds; fail naming the component (with its log)
/// when it exits or does not become ready in time.
fn wait_ready(dir: &Path, name: &str, s: &mut Server, mut ready: impl FnMut() -> bool) {
    let t = Instant::now();
    loop {
        if ready() {
            eprintln!("control plane: {name} ready in {:.1}s", t.elapsed().as_secs_f64());
            return;
        }
        if let Ok(Some(status)) = s.try_wait() {
            panic!("{name} exited ({status}) before it was ready:\n{}", log_tail(dir, name));
        }
        assert!(t.elapsed() < READY_WITHIN, "{name} not ready after {READY_WITHIN:?}:\n{}", log_tail(dir, name));
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// GET over plain HTTP (etcd's client port): the status and body.
fn http_get(port: u16, path: &str) -> Option<(u16, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    Some((status, text.split("\r\n\r\n").nth(1).unwrap_or("").to_string()))
}

/// GET over HTTPS: `ca` trusts the API server's certificate; without it
/// (a component's own self-signed health endpoint) any certificate is taken.
fn https_get(rt: &tokio::runtime::Runtime, url: &str, token: Option<&str>, ca: Option<&[u8]>) -> Option<(u16, String)> {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let mut b = reqwest::Client::builder().timeout(Duration::from_secs(3));
    b = match ca {
        Some(pem) => b.tls_certs_only([reqwest::Certificate::from_pem(pem).ok()?]),
        None => b.tls_danger_accept_invalid_certs(true),
    };
    let client = b.build().ok()?;
    rt.block_on(async {
        let mut req = client.get(url);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        let r = req.send().await.ok()?;
        let status = r.status().as_u16();
        Some((status, r.text().await.ok()?))
    })
}

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl").args(args).current_dir(dir).output().expect("running openssl");
    assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn random_token() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    std::fs::File::open("/dev/urandom").unwrap().read_exact(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The CA certificate of the API server's self-signed pair: `--cert-dir`
/// writes the serving certificate followed by the CA that signed it.
fn ca_of(bundle: &str) -> String {
    let certs: Vec<&str> = bundle.split_inclusive("-----END CERTIFICATE-----\n").collect();
    assert!(
        certs.len() >= 2,
        "apiserver.crt holds {} certificate(s), expected the serving one and its CA",
        certs.len()
    );
    certs.last().unwrap().to_string()
}

fn kubeconfig_text(server: &str, ca: &Path, token: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {token}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: admin\ncurrent-context: test\n",
        ca.display()
    )
}

fn boot(bin: &Path) -> Cluster {
    static HOOK: std::sync::Once = std::sync::Once::new();
    // SAFETY: registers a plain extern "C" function, once (boot may run twice).
    HOOK.call_once(|| unsafe {
        libc::atexit(stop_all);
    });
    remove_stale_folders();
    let dir = tempfile::Builder::new().prefix(FOLDER_PREFIX).tempdir().unwrap().keep();
    *DIR.lock().unwrap() = Some(dir.clone());
    let me = std::process::id();
    std::fs::write(dir.join("owner"), format!("{me} {}\n", server::start_time(me).unwrap_or(0))).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let t0 = Instant::now();

    // etcd, data in the folder; fsync off (a test cluster, rebuilt each run).
    let (client_port, peer_port) = (free_port(), free_port());
    let client_url = format!("http://127.0.0.1:{client_port}");
    let peer_url = format!("http://127.0.0.1:{peer_port}");
    let mut etcd = launch(
        &dir,
        "etcd",
        Command::new(bin.join("etcd")).args([
            "--name=test",
            &format!("--data-dir={}", dir.join("etcd").display()),
            &format!("--listen-client-urls={client_url}"),
            &format!("--advertise-client-urls={client_url}"),
            &format!("--listen-peer-urls={peer_url}"),
            &format!("--initial-advertise-peer-urls={peer_url}"),
            &format!("--initial-cluster=test={peer_url}"),
            "--unsafe-no-fsync",
            "--log-level=warn",
        ]),
    );
    wait_ready(&dir, "etcd", &mut etcd, || {
        http_get(client_port, "/health").is_some_and(|(s, b)| s == 200 && b.contains("\"health\":\"true\""))
    });

    // The API server: its own serving certificate, service-account keys
    // from openssl, one admin token, Node and RBAC authorization.
    openssl(&dir, &["genrsa", "-out", "sa.key", "2048"]);
    openssl(&dir, &["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
    let token = random_token();
    std::fs::write(dir.join("tokens.csv"), format!("{token},admin,admin,system:masters\n")).unwrap();
    let port = free_port();
    let server_url = format!("https://127.0.0.1:{port}");
    let mut apiserver = launch(
        &dir,
        "kube-apiserver",
        Command::new(bin.join("kube-apiserver")).args([
            &format!("--etcd-servers={client_url}"),
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            &format!("--secure-port={port}"),
            &format!("--cert-dir={}", dir.join("certs").display()),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            &format!("--service-account-key-file={}", dir.join("sa.pub").display()),
            &format!("--service-account-signing-key-file={}", dir.join("sa.key").display()),
            "--authorization-mode=Node,RBAC",
            &format!("--token-auth-file={}", dir.join("tokens.csv").display()),
            "--service-cluster-ip-range=10.96.0.0/16",
            "--profiling=false",
        ]),
    );
    let crt = dir.join("certs/apiserver.crt");
    wait_ready(&dir, "kube-apiserver (certificate)", &mut apiserver, || {
        std::fs::read_to_string(&crt).is_ok_and(|t| t.matches("END CERTIFICATE").count() >= 2)
    });
    let ca = dir.join("ca.crt");
    std::fs::write(&ca, ca_of(&std::fs::read_to_string(&crt).unwrap())).unwrap();
    let ca_pem = std::fs::read(&ca).unwrap();
    wait_ready(&dir, "kube-apiserver", &mut apiserver, || {
        https_get(&rt, &format!("{server_url}/readyz"), Some(&token), Some(&ca_pem)).is_some_and(|(s, _)| s == 200)
    });
    let kubeconfig = dir.join("admin.kubeconfig");
    std::fs::write(&kubeconfig, kubeconfig_text(&server_url, &ca, &token)).unwrap();
    let kc = kubeconfig.display().to_string();

    // Controllers and scheduler: the admin identity, no leader election.
    let cm_port = free_port();
    let mut cm = launch(
        &dir,
        "kube-controller-manager",
        Command::new(bin.join("kube-controller-manager")).args([
            &format!("--kubeconfig={kc}"),
            &format!("--authentication-kubeconfig={kc}"),
            &format!("--authorization-kubeconfig={kc}"),
            "--bind-address=127.0.0.1",
            &format!("--secure-port={cm_port}"),
            &format!("--cert-dir={}", dir.join("certs-cm").display()),
            "--leader-elect=false",
            "--controllers=*",
            "--use-service-account-credentials=false",
            &format!("--service-account-private-key-file={}", dir.join("sa.key").display()),
            &format!("--root-ca-file={}", ca.display()),
            "--profiling=false",
        ]),
    );
    let sched_port = free_port();
    let mut sched = launch(
        &dir,
        "kube-scheduler",
        Command::new(bin.join("kube-scheduler")).args([
            &format!("--kubeconfig={kc}"),
            &format!("--authentication-kubeconfig={kc}"),
            &format!("--authorization-kubeconfig={kc}"),
            "--bind-address=127.0.0.1",
            &format!("--secure-port={sched_port}"),
            &format!("--cert-dir={}", dir.join("certs-sched").display()),
            "--leader-elect=false",
            "--profiling=false",
        ]),
    );
    // kwok: the kubelet of annotated nodes (Lease heartbeats), its stages
    // copied from kwok's defaults into the fixtures, and the pod fates the
    // tests choose by label (crash loops, slow loads, evictions).
    let kwok_port = free_port();
    let stages = super::repo().join("tests/fixtures/cluster/kwok-stages.yaml");
    let fates = super::repo().join("tests/fixtures/cluster/kwok-fates.yaml");
    let mut kwok = launch(
        &dir,
        "kwok",
        Command::new(bin.join("kwok")).args([
            &format!("--kubeconfig={kc}"),
            &format!("--config={}", stages.display()),
            &format!("--config={}", fates.display()),
            "--manage-all-nodes=false",
            &format!("--manage-nodes-with-annotation-selector={}={}", KWOK_ANNOTATION.0, KWOK_ANNOTATION.1),
            "--node-lease-duration-seconds=40",
            "--cidr=10.244.0.1/16",
            "--node-ip=10.0.0.1",
            &format!("--server-address=127.0.0.1:{kwok_port}"),
        ]),
    );
    wait_ready(&dir, "kube-controller-manager", &mut cm, || {
        https_get(&rt, &format!("https://127.0.0.1:{cm_port}/healthz"), None, None).is_some_and(|(s, _)| s == 200)
    });
    wait_ready(&dir, "kube-scheduler", &mut sched, || {
        https_get(&rt, &format!("https://127.0.0.1:{sched_port}/readyz"), None, None).is_some_and(|(s, _)| s == 200)
    });
    wait_ready(&dir, "kwok", &mut kwok, || http_get(kwok_port, "/healthz").is_some_and(|(s, _)| s == 200));

    let version = https_get(&rt, &format!("{server_url}/version"), Some(&token), Some(&ca_pem))
        .and_then(|(_, b)| serde_json::from_str::<Value>(&b).ok())
        .and_then(|v| v["gitVersion"].as_str().map(String::from))
        .unwrap_or_default();
    let c = Cluster { kubeconfig, server: server_url, version, dir: dir.clone() };
    rt.block_on(async {
        let client = c.client().await;
        for crd in CRDS {
            install_crd(&client, &super::repo().join(crd)).await;
        }
    });
    eprintln!("control plane: {} up in {:.1}s ({})", c.version, t0.elapsed().as_secs_f64(), dir.display());
    // Held by the exit hook (through PIDS), never dropped here.
    std::mem::forget((etcd, apiserver, cm, sched, kwok));
    c
}

/// The CRDs the tests' manifests need, whole, from the reference fixtures.
const CRDS: [&str; 2] = [
    "tests/fixtures/reference/kserve/serving.kserve.io_inferenceservices.yaml",
    "tests/fixtures/reference/argocd/application-crd.yaml",
];

async fn install_crd(client: &kube::Client, path: &Path) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let name = crd.metadata.name.clone().unwrap();
    let api = kube::Api::<CustomResourceDefinition>::all(client.clone());
    let pp = kube::api::PatchParams::apply("bundlegate-tests").force();
    api.patch(&name, &pp, &kube::api::Patch::Apply(&crd)).await.unwrap_or_else(|e| panic!("installing {name}: {e}"));
    let established = |c: &CustomResourceDefinition| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"))
    };
    poll(&format!("CRD {name} Established"), Duration::from_secs(30), || async {
        api.get(&name).await.ok().filter(established).map(|_| ())
    })
    .await;
}

impl Cluster {
    /// A client from the kubeconfig file, as the bundlegate binary reads it.
    pub async fn client(&self) -> kube::Client {
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let kc = kube::config::Kubeconfig::read_from(&self.kubeconfig).unwrap();
        let config =
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default()).await.unwrap();
        kube::Client::try_from(config).unwrap()
    }

    /// The environment that points the bundlegate binary at this cluster.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        self.env_as(&self.kubeconfig)
    }

    /// The same, acting as the identity of another kubeconfig.
    pub fn env_as(&self, kubeconfig: &Path) -> Vec<(&'static str, String)> {
        vec![("KUBECONFIG", kubeconfig.display().to_string()), ("KUBERNETES_SERVICE_HOST", String::new())]
    }

    /// The folder of the cluster's files and component logs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// A fresh namespace for one test (`bg-<prefix>-<n>`), once its `default`
/// ServiceAccount exists (the ServiceAccount admission plugin refuses pods
/// before the controller made it).
pub async fn namespace(client: &kube::Client, prefix: &str) -> String {
    use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
    let name = format!("bg-{prefix}-{}", NAMESPACES.fetch_add(1, Ordering::SeqCst));
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    kube::Api::<Namespace>::all(client.clone()).create(&Default::default(), &ns).await.unwrap();
    let sa = kube::Api::<ServiceAccount>::namespaced(client.clone(), &name);
    poll(&format!("ServiceAccount default in {name}"), Duration::from_secs(30), || async {
        sa.get_opt("default").await.ok().flatten().map(|_| ())
    })
    .await;
    name
}

/// Poll `f` every 100 ms until it answers, or fail naming `what`.
pub async fn poll<T, F, Fut>(what: &str, within: Duration, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let t = Instant::now();
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(t.elapsed() < within, "{what}: not after {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Run `f` on a runtime of its own (one per test: a client lives on the
/// runtime that made it).
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

static NODES: Mutex<()> = Mutex::new(());

/// Held by a test that adds nodes and reads what the scheduler says about
/// all of them: no other test's nodes come and go meanwhile.
pub fn nodes_lock() -> std::sync::MutexGuard<'static, ()> {
    NODES.lock().unwrap_or_else(|e| e.into_inner())
}
