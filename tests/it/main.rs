#![allow(clippy::disallowed_methods)] // tests read fixtures and run the binary

//! One integration-test binary that drives the real `bundlegate` executable
//! through temporary directories (like ripgrep's).

mod support;

mod action;
mod argocd;
mod audit_shard;
mod bench_figures;
mod canary;
mod cli;
mod docs;
mod evidence_floor;
mod github_standin;
mod health_lua;
mod kserve_llm;
mod layout;
mod leftovers;
mod lint;
mod mermaid;
mod mutants_summary;
mod oci;
mod pipeline;
mod pr;
mod preflight;
mod props;
mod publish;
mod real_cluster;
mod render;
mod sarif;
mod schema;
mod secrets;
mod signing;
mod tasks;
mod toolchain;
mod verify;
mod verify_files;
mod watch;
mod yaml_io;
