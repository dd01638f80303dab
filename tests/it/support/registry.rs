//! A real OCI registry (CNCF Distribution 2.8, Debian's `docker-registry`,
//! installed by scripts/install-test-deps) on 127.0.0.1, started like every
//! test server (its own process group, recorded for
//! scripts/check-no-leftovers), with bcrypt htpasswd auth or none; and
//! artifacts pushed to it with the field's tool (PyPI `oras`, the test
//! venv), as a ModelPack artifact of raw layers.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::server::{self, Server};

pub const USER: &str = "bgtest";
pub const PASSWORD: &str = "bgtest-registry-password-do-not-print";

pub struct Registry {
    server: Server,
    pub port: u16,
    pub data: tempfile::TempDir,
    pub auth: bool,
}

impl Registry {
    /// Start a registry (`auth`: htpasswd with [`USER`]/[`PASSWORD`]). No
    /// binary fails the test unless BUNDLEGATE_SKIP_SERVERS=1.
    pub fn start(auth: bool) -> Option<Registry> {
        let bin = match std::env::var("BUNDLEGATE_DOCKER_REGISTRY") {
            Ok(b) => b,
            Err(_) if std::env::var("BUNDLEGATE_SKIP_SERVERS").is_ok() => return None,
            Err(_) => panic!("BUNDLEGATE_DOCKER_REGISTRY is not set; run tests through scripts/test (or source scripts/install-test-deps), or set BUNDLEGATE_SKIP_SERVERS=1"),
        };
        let data = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\n  accesslog:\n    disabled: false\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{port}\n",
            data.path().join("storage").display()
        );
        // No blob descriptor cache: a blob deleted from the folder is gone
        // for the next HEAD, as the fault tests need.
        if auth {
            let out =
                Command::new("htpasswd").args(["-Bbn", USER, PASSWORD]).output().expect("htpasswd (apache2-utils)");
            assert!(out.status.success(), "htpasswd: {}", String::from_utf8_lossy(&out.stderr));
            std::fs::write(data.path().join("htpasswd"), &out.stdout).unwrap();
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: bundlegate-test\n    path: {}\n",
                data.path().join("htpasswd").display()
            ));
        }
        std::fs::write(data.path().join("config.yml"), config).unwrap();
        let log = std::fs::File::create(data.path().join("registry.log")).unwrap();
        let server = server::spawn(
            Command::new(bin)
                .arg("serve")
                .arg(data.path().join("config.yml"))
                .stdout(log.try_clone().unwrap())
                .stderr(log),
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "docker-registry did not listen on {port}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        Some(Registry { server, port, data, auth })
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn stop(&mut self) {
        self.server.stop();
    }

    /// The access log and the registry's own log, as far as written.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data.path().join("registry.log")).unwrap_or_default()
    }

    /// Where Distribution keeps a blob's bytes.
    pub fn blob_path(&self, digest: &str) -> PathBuf {
        let hex = digest.trim_start_matches("sha256:");
        self.data.path().join("storage/docker/registry/v2/blobs/sha256").join(&hex[..2]).join(hex).join("data")
    }

    /// Push `files` of `folder` as a ModelPack artifact to
    /// `repository:tag` with oras; the manifest digest.
    pub fn push(&self, repository_tag: &str, folder: &Path, files: &[&str]) -> String {
        let py = std::env::var("BUNDLEGATE_PY_TOOLS")
            .expect("BUNDLEGATE_PY_TOOLS (the test venv with oras) is not set; source scripts/install-test-deps");
        let mut c = Command::new(Path::new(&py).join("bin/python"));
        c.arg(super::repo().join("tests/fixtures/oci/push_modelpack.py"))
            .arg(self.host())
            .arg(repository_tag)
            .arg(folder)
            .args(files);
        if self.auth {
            c.env("ORAS_USER", USER).env("ORAS_PASS", PASSWORD);
        }
        let out = c.output().expect("run oras");
        assert!(
            out.status.success(),
            "oras push: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let digest = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_string();
        assert!(digest.starts_with("sha256:"), "oras push printed {digest:?}");
        digest
    }

    /// Pull `repository_tag` with oras into `outdir` (each layer under its
    /// title annotation, as KServe's `oci+fetch` does).
    pub fn pull(&self, repository_tag: &str, outdir: &Path) {
        let py = std::env::var("BUNDLEGATE_PY_TOOLS")
            .expect("BUNDLEGATE_PY_TOOLS (the test venv with oras) is not set; source scripts/install-test-deps");
        let mut c = Command::new(Path::new(&py).join("bin/python"));
        c.arg(super::repo().join("tests/fixtures/oci/pull.py")).arg(self.host()).arg(repository_tag).arg(outdir);
        if self.auth {
            c.env("ORAS_USER", USER).env("ORAS_PASS", PASSWORD);
        }
        let out = c.output().expect("run oras");
        assert!(
            out.status.success(),
            "oras pull: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// PUT `body` as a manifest of `media_type` under `reference` (a tag or
    /// its digest), through plain HTTP (what no tool here writes: an index,
    /// a Docker manifest); the digest of `body`.
    pub fn put_manifest(&self, repository: &str, reference: &str, media_type: &str, body: &[u8]) -> String {
        use sha2::Digest;
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let head = format!(
            "PUT /v2/{repository}/manifests/{reference} HTTP/1.1\r\nHost: {}\r\nContent-Type: {media_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.host(),
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut answer = String::new();
        s.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 201"), "PUT manifest: {answer}");
        format!("sha256:{}", hex::encode(sha2::Sha256::digest(body)))
    }

    /// Remove a manifest from the repository as the registry's storage
    /// holds it (its revision link): the registry answers 404 for it.
    pub fn forget_manifest(&self, repository: &str, digest: &str) {
        let hex = digest.trim_start_matches("sha256:");
        let link = self
            .data
            .path()
            .join("storage/docker/registry/v2/repositories")
            .join(repository)
            .join("_manifests/revisions/sha256")
            .join(hex);
        std::fs::remove_dir_all(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()));
    }

    /// The environment a run against this registry needs: plain HTTP to
    /// it, and (with auth) the credentials.
    pub fn env(&self, with_credentials: bool) -> Vec<(&'static str, String)> {
        let mut e = vec![("BUNDLEGATE_OCI_INSECURE_REGISTRIES", self.host())];
        if self.auth && with_credentials {
            e.push(("BUNDLEGATE_OCI_USERNAME", USER.to_string()));
            e.push(("BUNDLEGATE_OCI_PASSWORD", PASSWORD.to_string()));
        }
        e
    }
}
