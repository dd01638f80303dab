//! One integration-test binary that drives the real `bundlegate` executable
//! through temporary directories (like ripgrep's).

mod support;

mod action;
mod argocd;
mod audit_shard;
mod canary;
mod cli_hardening;
mod docs;
mod github_standin;
mod hardening_yaml;
mod one_reader;
mod harden_files;
mod health_lua;
mod layout;
mod leftovers;
mod lint;
mod nothing;
mod pipeline;
mod pipeline_lib;
mod pr;
mod props;
mod pod_verify;
mod preflight;
mod render;
mod secrets;
mod verify;
mod watch;
mod watch_lib;
mod watch_truth;
