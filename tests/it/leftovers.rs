//! Issue #29: no process a test starts outlives it. A server started through
//! `support::server` is stopped with its whole process group when it drops,
//! also when the test panics, and a wrapper's child goes with it (the `git
//! daemon` wrapper used to leave `git-daemon` serving).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::support::server;

/// Whether `pid` is a live (not zombie) process.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s[s.rfind(')').unwrap() + 2..].starts_with('Z'))
}

fn gone_soon(pid: u32) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(5) {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A wrapper that starts the real server as its child, as `git daemon` does;
/// the child's pid is written to `pidfile`.
fn wrapper(pidfile: &std::path::Path) -> server::Server {
    let s =
        server::spawn(Command::new("sh").arg("-c").arg(format!("sleep 300 & echo $! > {}; wait", pidfile.display())));
    let t = Instant::now();
    while std::fs::read_to_string(pidfile).map(|s| s.trim().is_empty()).unwrap_or(true) {
        assert!(t.elapsed() < Duration::from_secs(5), "the wrapper did not start its child");
        std::thread::sleep(Duration::from_millis(20));
    }
    s
}

fn pid_in(pidfile: &std::path::Path) -> u32 {
    std::fs::read_to_string(pidfile).unwrap().trim().parse().unwrap()
}

#[test]
fn a_wrappers_child_is_stopped_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    let s = wrapper(&pidfile);
    let (leader, child) = (s.id(), pid_in(&pidfile));
    assert!(alive(child));
    assert!(
        std::fs::read_to_string(server::registry().join(leader.to_string()))
            .unwrap()
            .starts_with(&format!("{leader} ")),
        "recorded in the run's registry"
    );
    drop(s);
    assert!(gone_soon(child), "the wrapper's child {child} outlived it");
    assert!(gone_soon(leader));
}

#[test]
fn a_server_is_stopped_when_its_test_panics() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("child.pid");
    let p = pidfile.clone();
    let r = std::panic::catch_unwind(move || {
        let _s = wrapper(&p);
        panic!("the test fails while its server runs");
    });
    assert!(r.is_err());
    assert!(gone_soon(pid_in(&pidfile)), "a panicking test left its server running");
}
