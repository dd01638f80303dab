//! Files that are not files: a FIFO, socket, device or folder at an artifact
//! path is refused by `verify-files` at once, never waited on and never
//! opened (a FIFO's open blocks until a writer comes); and `--wait` says what
//! it waits for, on stderr and in the readiness probe's output, within
//! seconds. Each held by a generator.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::*;

fn sha(b: &[u8]) -> String {
    hex::encode(Sha256::digest(b))
}

/// The artifact list `verify-files` reads from its environment.
fn manifest(arts: &[(String, String, u64)]) -> String {
    let arts: Vec<Value> = arts.iter().map(|(p, s, n)| json!({"path": p, "sha256": s, "size": n})).collect();
    json!({"releaseDigest": "sha256:".to_string() + &"ab".repeat(32), "mode": "full", "artifacts": arts}).to_string()
}

fn verifier(dir: &Path, root: &Path, list: &str, wait: &str) -> Command {
    let mut c = Command::new(bin());
    c.args(["verify-files", "--format", "json", "--root"]).arg(root);
    c.args(["--wait", wait, "--marker"])
        .arg(dir.join("verified"))
        .arg("--termination-log")
        .arg(dir.join("termination-log"));
    c.env("BUNDLEGATE_ARTIFACTS", list).env_remove("RUST_LOG").env("NO_COLOR", "1");
    c
}

/// The readiness probe exactly as rendered: exit code and what it prints.
fn probe(dir: &Path, list: &str) -> (i32, String) {
    let o = Command::new(bin())
        .args(["verify-files", "--ready", "--marker"])
        .arg(dir.join("verified"))
        .env("BUNDLEGATE_ARTIFACTS", list)
        .env_remove("RUST_LOG")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr),
    )
}

// ---- 6. files that are not files ------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Good,
    WrongBytes,
    Fifo,
    Socket,
    Folder,
    Device,
    LinkToFifo,
    LinkToSocket,
}

fn not_a_file() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Fifo),
        Just(Kind::Socket),
        Just(Kind::Folder),
        Just(Kind::Device),
        Just(Kind::LinkToFifo),
        Just(Kind::LinkToSocket)
    ]
}

fn any_kind() -> impl Strategy<Value = Kind> {
    prop_oneof![Just(Kind::Good), Just(Kind::WrongBytes), not_a_file()]
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo {}", p.display());
}

/// A character device (1:3, what /dev/null is) at `p`; as root only. Where
/// mknod is not allowed, a FIFO stands in so the case still runs.
fn mkdev(p: &Path) -> bool {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o644, libc::makedev(1, 3)) } == 0 {
        return true;
    }
    mkfifo(p);
    false
}

/// Make `kind` at `root/name`; the listeners must live as long as the run.
fn make(
    root: &Path,
    name: &str,
    kind: Kind,
    bytes: &[u8],
    keep: &mut Vec<std::os::unix::net::UnixListener>,
) -> &'static str {
    let p = root.join(name);
    match kind {
        Kind::Good => std::fs::write(&p, bytes).unwrap(),
        Kind::WrongBytes => std::fs::write(&p, bytes.iter().map(|b| b ^ 1).collect::<Vec<_>>()).unwrap(),
        Kind::Fifo => mkfifo(&p),
        Kind::Socket => keep.push(std::os::unix::net::UnixListener::bind(&p).unwrap()),
        Kind::Folder => std::fs::create_dir(&p).unwrap(),
        Kind::Device => return if mkdev(&p) { "device" } else { "FIFO" },
        Kind::LinkToFifo | Kind::LinkToSocket => {
            let target = root.join(format!(".{name}.target"));
            if kind == Kind::LinkToFifo {
                mkfifo(&target);
            } else {
                keep.push(std::os::unix::net::UnixListener::bind(&target).unwrap());
            }
            std::os::unix::fs::symlink(&target, &p).unwrap();
        }
    }
    match kind {
        Kind::Good | Kind::WrongBytes => "",
        Kind::Fifo | Kind::LinkToFifo => "FIFO",
        Kind::Socket | Kind::LinkToSocket => "socket",
        Kind::Folder => "folder",
        Kind::Device => unreachable!(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any mix of artifacts where at least one path holds a FIFO, socket,
    /// device or folder (directly or through a symlink inside the model
    /// folder): `verify-files --wait 60s` ends within seconds with exit 1,
    /// each such path UNREADABLE naming what it is, the others judged as
    /// usual, and the pod never Ready.
    #[test]
    fn verify_files_refuses_files_that_are_not_files_at_once(first in not_a_file(), rest in prop::collection::vec(any_kind(), 0..4), size in 1u64..5000) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("models");
        std::fs::create_dir(&root).unwrap();
        let mut keep = Vec::new();
        let mut arts = Vec::new();
        let mut want = Vec::new();
        for (i, kind) in std::iter::once(first).chain(rest).enumerate() {
            let name = format!("f{i}.bin");
            let bytes: Vec<u8> = (0..size).map(|k| (k * 7 + i as u64) as u8).collect();
            let what = make(&root, &name, kind, &bytes, &mut keep);
            arts.push((name.clone(), sha(&bytes), size));
            want.push((name, kind, what));
        }
        let list = manifest(&arts);
        let t0 = Instant::now();
        let mut child = verifier(tmp.path(), &root, &list, "60s").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let code = wait_or_kill(&mut child, Duration::from_secs(10));
        let took = t0.elapsed();
        prop_assert!(code.is_some(), "verify-files still running after {took:?} with {want:?}: it waited on (or opened) a file that is not a file");
        prop_assert!(took < Duration::from_secs(5), "took {took:?}");
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        prop_assert_eq!(code, Some(1), "{}", stdout);
        let term = std::fs::read_to_string(tmp.path().join("termination-log")).unwrap_or_default();
        let report: Value = serde_json::from_str(&stdout).unwrap();
        let rows = report["steps"][0]["tables"][0]["rows"].as_array().unwrap().clone();
        for ((name, kind, what), row) in want.iter().zip(&rows) {
            let status = row[1].as_str().unwrap();
            match kind {
                Kind::Good => prop_assert_eq!(status, "OK"),
                Kind::WrongBytes => prop_assert_eq!(status, "DIGEST-MISMATCH"),
                _ => {
                    prop_assert_eq!(status, "UNREADABLE", "{}: {:?}", name, kind);
                    let line = term.lines().find(|l| l.starts_with(&format!("UNREADABLE {name}:"))).unwrap_or_default();
                    prop_assert!(line.contains(&format!("is a {what}")), "{:?} {}: termination log does not say what it is: {}", kind, name, term);
                }
            }
        }
        prop_assert_eq!(probe(tmp.path(), &list).0, 1);
    }
}

fn wait_or_kill(child: &mut Child, limit: Duration) -> Option<i32> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s.code().unwrap_or(-1));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    None
}

// ---- 7. say what you wait for ---------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Complete,
    Absent,
    /// `n` of the pinned bytes so far.
    Partial(u64),
    /// At its full size but rewritten in place every 100 ms (a downloader
    /// that preallocates, then fills in).
    Changing,
}

fn state(size: u64) -> impl Strategy<Value = State> {
    prop_oneof![Just(State::Complete), Just(State::Absent), (0..size).prop_map(State::Partial), Just(State::Changing)]
}

/// What the verifier must say about a file in `s` (None: not waited for).
fn reason(s: State, size: u64) -> Option<String> {
    match s {
        State::Complete => None,
        State::Absent => Some("absent".into()),
        State::Partial(n) => Some(format!("{n} of {size} bytes")),
        State::Changing => Some("still changing".into()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any mix of complete, absent, partial and still-changing files with at
    /// least one not ready: within 4 s of starting, the verifier's log (the
    /// pod's logs) and the readiness probe's output (`kubectl describe pod`)
    /// name every file it waits for with why, and no file it does not.
    #[test]
    fn verify_files_wait_names_what_it_waits_for(states in prop::collection::vec(state(4000), 1..5).prop_filter("one not ready", |s| s.iter().any(|x| *x != State::Complete))) {
        let size = 4000u64;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("models");
        std::fs::create_dir(&root).unwrap();
        let bytes: Vec<u8> = (0..size).map(|k| (k % 251) as u8).collect();
        let mut arts = Vec::new();
        for (i, s) in states.iter().enumerate() {
            let p = root.join(format!("part-{i}.safetensors"));
            match s {
                State::Complete | State::Changing => std::fs::write(&p, &bytes).unwrap(),
                State::Absent => {}
                State::Partial(n) => std::fs::write(&p, &bytes[..*n as usize]).unwrap(),
            }
            arts.push((format!("part-{i}.safetensors"), sha(&bytes), size));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = states.iter().enumerate().filter(|(_, s)| **s == State::Changing).map(|(i, _)| {
            let (p, stop, bytes) = (root.join(format!("part-{i}.safetensors")), stop.clone(), bytes.clone());
            std::thread::spawn(move || {
                let mut k = 0u8;
                while !stop.load(Ordering::Relaxed) {
                    use std::io::{Seek, Write};
                    let mut f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
                    f.seek(std::io::SeekFrom::Start(0)).unwrap();
                    f.write_all(&[k, bytes[1]]).unwrap();
                    k = k.wrapping_add(1);
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        }).collect();
        let list = manifest(&arts);
        let mut child = verifier(tmp.path(), &root, &list, "60s").stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let (lines, err) = (lines.clone(), child.stderr.take().unwrap());
            std::thread::spawn(move || {
                for l in BufReader::new(err).lines().map_while(Result::ok) {
                    lines.lock().unwrap().push(l);
                }
            })
        };
        let expect: Vec<(String, Option<String>)> = states.iter().enumerate().map(|(i, s)| (format!("part-{i}.safetensors"), reason(*s, size))).collect();
        // Every waited-for file named with its reason, no other file named.
        let says_it = |text: &str| expect.iter().all(|(name, why)| match why {
            Some(why) => text.contains(&format!("{name} ({why}")),
            None => !text.contains(name.as_str()),
        });
        let t0 = Instant::now();
        let (mut logged, mut probed) = (String::new(), String::new());
        while t0.elapsed() < Duration::from_secs(4) && !(says_it(&logged) && says_it(&probed)) {
            std::thread::sleep(Duration::from_millis(200));
            logged = lines.lock().unwrap().iter().rev().find(|l| l.contains("waiting for")).cloned().unwrap_or_default();
            let (code, out) = probe(tmp.path(), &list);
            assert_eq!(code, 1, "Ready while files are missing: {out}");
            probed = out;
        }
        stop.store(true, Ordering::Relaxed);
        let _ = child.kill();
        let _ = child.wait();
        let _ = reader.join();
        for w in writers {
            w.join().unwrap();
        }
        prop_assert!(says_it(&logged), "after {:?} the log's last wait line does not name exactly {expect:?}:\n{}", t0.elapsed(), lines.lock().unwrap().join("\n"));
        prop_assert!(says_it(&probed), "the readiness probe's output does not name exactly {expect:?}:\n{probed}");
    }
}
