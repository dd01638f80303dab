//! One integration-test binary that drives the real `bundlegate` executable
//! through temporary directories (like ripgrep's).

mod support;

mod argocd;
mod canary;
mod docs;
mod github_standin;
mod lint;
mod pipeline;
mod pr;
mod props;
mod pod_verify;
mod preflight;
mod render;
mod secrets;
mod verify;
mod watch;
