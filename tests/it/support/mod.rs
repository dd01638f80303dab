#![allow(dead_code)]

pub mod cluster;
pub mod git_remote;
pub mod http;
pub mod kube;
pub mod registry;
pub mod schema;
pub mod server;
pub mod syntax;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `node_modules` of scripts/install-test-deps' npm prefix that holds
/// `package`: `$BUNDLEGATE_NODE_TOOLS`, else the newest such prefix in its
/// cache (when a test runs outside scripts/test).
pub fn node_modules(package: &str) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("BUNDLEGATE_NODE_TOOLS") {
        let m = PathBuf::from(d).join("node_modules");
        return m.join(package).is_dir().then_some(m);
    }
    let cache = std::env::var_os("BUNDLEGATE_CI_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/bundlegate-ci"));
    let modules = std::fs::read_dir(&cache).into_iter().flatten().flatten().map(|e| e.path()).filter(|p| {
        p.file_name().unwrap().to_string_lossy().starts_with("node-tools-")
            && p.join("node_modules").join(package).is_dir()
    });
    modules.max_by_key(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok()).map(|p| p.join("node_modules"))
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}\nstderr:\n{}", self.stdout, self.stderr))
    }
    /// Every diagnostic code in a JSON report.
    pub fn codes(&self) -> Vec<String> {
        let v = self.json();
        let mut out = Vec::new();
        for s in v["steps"].as_array().expect("steps") {
            for d in s["diagnostics"].as_array().expect("diagnostics") {
                out.push(d["code"].as_str().unwrap().to_string());
            }
        }
        out
    }
    pub fn diag(&self, code: &str) -> Value {
        let v = self.json();
        for s in v["steps"].as_array().expect("steps") {
            for d in s["diagnostics"].as_array().expect("diagnostics") {
                if d["code"] == code {
                    return d.clone();
                }
            }
        }
        panic!("no diagnostic {code} in:\n{}", self.stdout)
    }
}

/// The first step of a JSON report named `name` (panics naming the report
/// when there is none).
pub fn step<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["step"] == name)
        .unwrap_or_else(|| panic!("no step {name} in {report:#}"))
}

/// The binary under test: nextest names it at run time (so a test archive,
/// or a target folder other builds share, runs the binary built with these
/// tests); `cargo test` bakes it in.
pub fn bin() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_bundlegate")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_bundlegate")))
}

pub fn run_in(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir).env_remove("RUST_LOG").env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().expect("run bundlegate");
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// [`run_in`] with a deadline: the classes of input that used to hang or
/// exhaust memory must fail the test rather than wait forever.
pub fn run_within(dir: &Path, args: &[&str], env: &[(&str, &str)], secs: u64) -> Out {
    let mut c = Command::new(bin());
    c.args(args).current_dir(dir).env_remove("RUST_LOG").env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = c.spawn().unwrap();
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > std::time::Duration::from_secs(secs) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("bundlegate {args:?} still running after {secs}s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let o = child.wait_with_output().unwrap();
    Out {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

pub fn run(args: &[&str]) -> Out {
    run_in(&repo(), args, &[])
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

/// A private copy of the shipped example (bundles + local store), in a git
/// work tree as bundles are: the `file:` store (`../../store/…`) must be
/// inside the bundle's repository, never merely under the current folder.
pub struct Example {
    pub dir: tempfile::TempDir,
}

impl Example {
    pub fn new() -> Example {
        let ex = Example::without_repository();
        let mut opts = git2::RepositoryInitOptions::new();
        opts.initial_head("main");
        git2::Repository::init_opts(ex.path(), &opts).unwrap();
        ex
    }
    /// The copy without a git work tree around it (confinement falls back
    /// to the bundle's folder, or the folder above it for rollback targets).
    pub fn without_repository() -> Example {
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&repo().join("examples/llm-scratch"), &dir.path().join("llm-scratch"));
        copy_dir(&repo().join("examples/store"), &dir.path().join("store"));
        Example { dir }
    }
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn v1(&self) -> PathBuf {
        self.path().join("llm-scratch/v1/release.yaml")
    }
    pub fn v2(&self) -> PathBuf {
        self.path().join("llm-scratch/v2/release.yaml")
    }
    pub fn store(&self, version: &str) -> PathBuf {
        self.path().join("store/llm-scratch").join(version)
    }
    /// Edit the v2 bundle as YAML.
    pub fn edit_v2(&self, f: impl FnOnce(&mut serde_yaml_ng::Value)) -> PathBuf {
        edit_yaml(&self.v2(), f);
        self.v2()
    }
    pub fn run(&self, args: &[&str]) -> Out {
        run_in(self.path(), args, &[])
    }
}

pub fn edit_yaml(p: &Path, f: impl FnOnce(&mut serde_yaml_ng::Value)) {
    let mut v: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(p, serde_yaml_ng::to_string(&v).unwrap()).unwrap();
}

/// `v["a"]["b"]` for a dotted path, creating nothing.
pub fn at<'a>(v: &'a mut serde_yaml_ng::Value, path: &str) -> &'a mut serde_yaml_ng::Value {
    let mut cur = v;
    for seg in path.split('.') {
        cur = match seg.parse::<usize>() {
            Ok(i) => &mut cur[i],
            Err(_) => &mut cur[seg],
        };
    }
    cur
}

pub fn yaml(s: &str) -> serde_yaml_ng::Value {
    serde_yaml_ng::from_str(s).unwrap()
}

/// Line (1-based) of the first line of `text` containing `needle`.
pub fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).map(|i| i + 1).unwrap_or_else(|| panic!("`{needle}` not in text"))
}
