#![allow(clippy::disallowed_methods)] // tests read fixtures and run the binary

//! One integration-test binary that drives the real `bundlegate` executable
//! through temporary directories (like ripgrep's).

mod support;

mod action;
mod argocd;
mod audit_shard;
mod bench_figures;
mod canary;
mod cli_hardening;
mod docs;
mod github_standin;
mod golden_set;
mod harden_files;
mod hardening_four;
mod hardening_yaml;
mod health_lua;
mod kserve_llm;
mod layout;
mod leftovers;
mod lint;
mod mutants_summary;
mod nothing;
mod oci;
mod one_reader;
mod pipeline;
mod pipeline_lib;
mod pr;
mod preflight;
mod props;
mod real_cluster;
mod render;
mod schema;
mod secrets;
mod sign;
mod toolchain;
mod verify;
mod verify_files;
mod watch;
mod watch_later;
mod watch_lib;
mod watch_truth;
