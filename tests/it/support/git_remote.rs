//! The revert tests' git remote: a bare repository served by `git-daemon`
//! on 127.0.0.1, and a clone of it holding the example bundles.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::server::{self, Server};
use super::{copy_dir, repo};
use crate::watch::git;

/// A bare repository served by `git daemon` (push enabled), and a clone of
/// it holding the example bundles (v1 → v2) and their local store.
pub struct GitRemote {
    dir: tempfile::TempDir,
    daemon: Server,
    url: String,
}

/// The `git-daemon` program itself: `git daemon` is a wrapper that starts
/// it as a child, so killing the wrapper left the daemon serving.
fn git_daemon() -> PathBuf {
    let o = Command::new("git").arg("--exec-path").output().expect("git --exec-path");
    assert!(o.status.success(), "git --exec-path: {}", String::from_utf8_lossy(&o.stderr));
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("git-daemon")
}

impl GitRemote {
    pub(crate) fn new() -> GitRemote {
        let dir = tempfile::tempdir().unwrap();
        let srv = dir.path().join("srv");
        std::fs::create_dir_all(&srv).unwrap();
        git(&srv, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
        let (daemon, port) = (0..5)
            .find_map(|_| {
                let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
                // Stopped with its whole process group when the remote drops
                // (`Server`), also when the test panics.
                let mut child = server::spawn(
                    Command::new(git_daemon())
                        .args(["--reuseaddr", "--export-all", "--enable=receive-pack", "--listen=127.0.0.1"])
                        .arg(format!("--base-path={}", srv.display()))
                        .arg(format!("--port={port}"))
                        .arg(&srv)
                        .stdout(Stdio::null())
                        .stderr(Stdio::null()),
                );
                let t = Instant::now();
                while t.elapsed() < Duration::from_secs(5) {
                    if let Ok(Some(_)) = child.try_wait() {
                        return None; // port taken meanwhile: try another
                    }
                    if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                        return Some((child, port));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                child.stop();
                None
            })
            .expect("git daemon did not start");
        let url = format!("git://127.0.0.1:{port}/remote.git");
        let work = dir.path().join("work");
        std::fs::create_dir_all(&work).unwrap();
        copy_dir(&repo().join("examples/llm-scratch"), &work.join("llm-scratch"));
        copy_dir(&repo().join("examples/store"), &work.join("store"));
        git(&work, &["init", "-q", "-b", "main"]);
        git(&work, &["add", "."]);
        git(&work, &["commit", "-q", "-m", "llm-scratch v1 and v2"]);
        git(&work, &["remote", "add", "origin", &url]);
        git(&work, &["push", "-q", "origin", "main"]);
        GitRemote { dir, daemon, url }
    }
    pub(crate) fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }
    pub(crate) fn bare(&self) -> PathBuf {
        self.dir.path().join("srv/remote.git")
    }
    /// A second, independent checkout (another CI job).
    pub(crate) fn clone_to(&self, name: &str) -> PathBuf {
        let to = self.dir.path().join(name);
        git(self.dir.path(), &["clone", "-q", &self.url, name]);
        to
    }
    /// The head of the remote branch named `branch`, or (a name ending in
    /// `-`) of the one branch whose name starts with it.
    pub(crate) fn remote_branch(&self, branch: &str) -> Option<String> {
        let pattern =
            if branch.ends_with('-') { format!("refs/heads/{branch}*") } else { format!("refs/heads/{branch}") };
        let o = Command::new("git")
            .arg("--git-dir")
            .arg(self.bare())
            .args(["for-each-ref", "--format=%(objectname)", &pattern])
            .output()
            .unwrap();
        let heads: Vec<String> = String::from_utf8_lossy(&o.stdout).lines().map(String::from).collect();
        assert!(heads.len() <= 1, "more than one branch matches {branch}: {heads:?}");
        heads.into_iter().next()
    }
    pub(crate) fn show(&self, rev: &str) -> String {
        let o = Command::new("git").arg("--git-dir").arg(self.bare()).args(["show", rev]).output().unwrap();
        assert!(o.status.success(), "git show {rev}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}
