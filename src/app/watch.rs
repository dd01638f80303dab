//! watch / revert (issue #7). OWNED BY THE WATCH WORK: replace this stub.
use std::path::Path;

use anyhow::Result;

use crate::cli::{RevertArgs, WatchArgs};
use crate::report::Report;

pub fn watch(_bundle: &Path, _args: &WatchArgs) -> Result<Report> {
    anyhow::bail!("watch is not implemented yet; nothing was checked")
}

pub fn revert(_bundle: &Path, _args: &RevertArgs) -> Result<Report> {
    anyhow::bail!("revert is not implemented yet")
}
