//! Argo CD CMP v2 (issue #8). OWNED BY THE ARGOCD WORK: replace this stub.
use anyhow::Result;

use crate::cli::ArgocdCmd;
use crate::report::Report;

pub fn run(_cmd: ArgocdCmd) -> Result<Report> {
    anyhow::bail!("the Argo CD plugin is not implemented yet")
}
