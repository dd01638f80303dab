//! The toolchain the crate declares is the one it is tested with (issue #28):
//! `rust-version` in Cargo.toml is never below what a locked dependency needs
//! (the declaration said 1.85 while kube 5 needs 1.89) and names the compiler
//! running these tests, since no other toolchain can be fetched here to test an
//! older one. (No rust-toolchain.toml: on an offline machine whose one
//! toolchain is named `stable`, a pinned channel makes rustup try to download
//! it before the README's first command can run.)

use std::process::Command;

use serde_json::Value;

use crate::support::repo;

fn version(s: &str) -> (u64, u64) {
    let mut it = s.trim().split('.').map(|p| p.parse::<u64>().unwrap_or_else(|_| panic!("version {s:?}")));
    (it.next().unwrap(), it.next().unwrap_or(0))
}

#[test]
fn the_declared_rust_version_is_the_tested_one_and_covers_every_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .current_dir(repo())
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let meta: Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let ours = packages.iter().find(|p| p["name"] == "bundlegate").unwrap();
    let declared = version(ours["rust_version"].as_str().expect("Cargo.toml declares rust-version"));
    let needs: Vec<((u64, u64), String)> = packages
        .iter()
        .filter(|p| p["name"] != "bundlegate")
        .filter_map(|p| Some((version(p["rust_version"].as_str()?), p["name"].as_str()?.to_string())))
        .collect();
    assert!(needs.len() > 20, "cargo metadata named {} rust-versions", needs.len());
    for (v, name) in &needs {
        assert!(*v <= declared, "{name} needs Rust {}.{}, Cargo.toml declares {}.{}", v.0, v.1, declared.0, declared.1);
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("--version").current_dir(repo()).output().expect("rustc --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let running = version(text.split_whitespace().nth(1).expect("rustc X.Y.Z").split('-').next().unwrap());
    assert_eq!(
        declared, running,
        "Cargo.toml's rust-version is {declared:?} but the tests build with {text}: declare the toolchain that is tested"
    );
}
