//! Pipelines (`pipelines/*.yaml`): placeholder until the pipeline runner lands.
use std::path::Path;

use anyhow::Result;

use crate::diag::Overrides;
use crate::report::Report;

pub fn run_file(_pipeline: &Path, _bundles: &[std::path::PathBuf], _snapshot: Option<&Path>, _ov: &Overrides) -> Result<Report> {
    anyhow::bail!("pipelines are not implemented yet")
}
